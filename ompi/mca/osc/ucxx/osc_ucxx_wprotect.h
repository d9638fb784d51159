/*
 * Copyright (c) 2026 The osc/ucxx authors. All rights reserved.
 * $COPYRIGHT$
 *
 * Holding off other threads' writes to pages while they are moved onto
 * shared memory (osc_ucxx_wprotect.c; its file comment says how).
 */

#ifndef OMPI_OSC_UCXX_WPROTECT_H
#define OMPI_OSC_UCXX_WPROTECT_H

#include "osc_ucxx_types.h"

BEGIN_C_DECLS

/* Can writes be held off here (kernel, privileges, osc_ucxx_share_edge_pages)?
 * Probed once; call with OSC_UCXX.lock held. */
bool ompi_osc_ucxx_wp_usable(void);

/* Make every write by any other thread to [lo, lo + len) wait until
 * ompi_osc_ucxx_wp_end().  Returns a handle >= 0, or -1 (nothing held).
 * Between the two calls the caller must not write those pages itself, nor
 * call anything that might (malloc, Open MPI's or UCX's memory hooks). */
int ompi_osc_ucxx_wp_begin(uint64_t lo, uint64_t len);
/* `replaced`: a new mapping took the whole range meanwhile (it carries no
 * registration or protection of ours: only the held writers are woken). */
void ompi_osc_ucxx_wp_end(int handle, uint64_t lo, uint64_t len, bool replaced);

/* The userfaultfd all moves share: dropped by a fork()ed child (raw
 * system calls only), closed at finalize. */
void ompi_osc_ucxx_wp_fork_child(void);
void ompi_osc_ucxx_wp_fini(void);

END_C_DECLS

#endif /* OMPI_OSC_UCXX_WPROTECT_H */
