/*
 * Copyright (c) 2026 The osc/ucxx authors. All rights reserved.
 * $COPYRIGHT$
 *
 * User memory shared on the node, and MPI_Win_allocate_shared segments
 * (osc_ucxx_share.c; its file comment has the protocol).
 */

#ifndef OMPI_OSC_UCXX_SHARE_H
#define OMPI_OSC_UCXX_SHARE_H

#include "osc_ucxx_types.h"

BEGIN_C_DECLS

/* MPI_Win_allocate_shared: one object holds every rank's segment, in rank
 * order; each process maps all of it. */
struct ompi_osc_ucxx_shseg_t {
    char *map;
    size_t len;
    uint64_t *offsets;       /* rank r's segment: [offsets[r], offsets[r] + sizes[r]) */
    uint64_t *sizes;
};

int ompi_osc_ucxx_share_segment(struct ompi_communicator_t *comm, size_t size, bool noncontig,
                                ompi_osc_ucxx_shseg_t **seg, ompi_osc_ucxx_share_t *desc);
void ompi_osc_ucxx_share_segment_free(ompi_osc_ucxx_shseg_t *seg);
void ompi_osc_ucxx_share_prepare(void);
void ompi_osc_ucxx_share_warm(void);
int ompi_osc_ucxx_share_user(void *base, size_t len, ompi_osc_ucxx_share_t *desc);
void ompi_osc_ucxx_share_release(const ompi_osc_ucxx_share_t *desc);
char *ompi_osc_ucxx_share_map(ompi_proc_t *owner, const ompi_osc_ucxx_share_t *desc);
void ompi_osc_ucxx_share_fini(void);

/* Before a large copy to or from a peer's memory mapped here (osc_ucxx_share.c
 * says why): populate the 2 MiB chunks of [base + off, + len) whose bit in
 * `bits` is clear, and set them.  chunk_bits: zeroed bits for a mapping of
 * `bytes` (NULL where the kernel refuses, or out of memory). */
uint64_t *ompi_osc_ucxx_share_chunk_bits(size_t bytes);
void ompi_osc_ucxx_share_populate(char *base, uint64_t *bits, uint64_t off, size_t len);
/* ... [p, p + len) in a peer's pool mapped here (dynamic windows and memory
 * handles), if it is one; the pool mapping keeps the bits. */
void ompi_osc_ucxx_share_prefault(char *p, size_t len);

END_C_DECLS

#endif /* OMPI_OSC_UCXX_SHARE_H */
