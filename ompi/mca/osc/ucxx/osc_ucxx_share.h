/*
 * Copyright (c) 2026 The osc/ucxx authors. All rights reserved.
 * $COPYRIGHT$
 *
 * MPI_Win_allocate_shared segments (osc_ucxx_share.c).
 */

#ifndef OMPI_OSC_UCXX_SHARE_H
#define OMPI_OSC_UCXX_SHARE_H

#include "osc_ucxx_types.h"

BEGIN_C_DECLS

/* One object holds every rank's segment, in rank order; each process maps
 * all of it. */
struct ompi_osc_ucxx_shseg_t {
    char *map;
    size_t len;
    uint64_t *offsets;       /* rank r's segment: [offsets[r], offsets[r] + sizes[r]) */
    uint64_t *sizes;
};

/* Collective over `comm` (every rank on this node): every rank returns the
 * same verdict. */
int ompi_osc_ucxx_share_segment(struct ompi_communicator_t *comm, size_t size, bool noncontig,
                                ompi_osc_ucxx_shseg_t **seg);
void ompi_osc_ucxx_share_segment_free(ompi_osc_ucxx_shseg_t *seg);

END_C_DECLS

#endif /* OMPI_OSC_UCXX_SHARE_H */
