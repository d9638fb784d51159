/*
 * Copyright (c) 2026 The osc/ucxx authors. All rights reserved.
 * $COPYRIGHT$
 *
 * Cross-memory attach: copies between this process and a peer's memory on
 * the node with process_vm_readv / process_vm_writev (osc_ucxx_cma.c says
 * when the kernel allows it and what happens where it does not).
 */

#ifndef OMPI_OSC_UCXX_CMA_H
#define OMPI_OSC_UCXX_CMA_H

#include <sys/uio.h>

#include "osc_ucxx_types.h"

BEGIN_C_DECLS

/* What peers need to reach this process: its pid and the address of a word
 * that identifies it (published at window creation). */
void ompi_osc_ucxx_cma_self(int32_t *pid, uint64_t *ident);

/* May this process reach `proc` (on this node), which published `pid` and
 * `ident`?  Asked of the kernel once per peer process: the pid to use, or
 * 0 (no such system call, no permission, not that process). */
int32_t ompi_osc_ucxx_cma_peer(ompi_proc_t *proc, int32_t pid, uint64_t ident);

/* Copy `len` bytes between `local` and the peer's address `remote` (into
 * the peer when `write`); complete when it returns.  OMPI_ERR_RMA_RANGE:
 * some of the peer's bytes are not mapped (nothing more was copied past
 * them); OMPI_ERR_NOT_AVAILABLE: the kernel refused before copying
 * anything (the peer is then given up: cma_peer answers 0 from now on). */
int ompi_osc_ucxx_cma_copy(int32_t pid, bool write, void *local, uint64_t remote, size_t len);

/* The same for `n` pieces, local[i] and remote[i] of the same length
 * (any n: in batches the kernel takes). */
int ompi_osc_ucxx_cma_copyv(int32_t pid, bool write, struct iovec *local, struct iovec *remote,
                            size_t n);

void ompi_osc_ucxx_cma_fini(void);

END_C_DECLS

#endif /* OMPI_OSC_UCXX_CMA_H */
