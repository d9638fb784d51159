/*
 * Copyright (c) 2026 The osc/ucxx authors. All rights reserved.
 * $COPYRIGHT$
 *
 * Segments of every rank on the node: MPI_Win_allocate_shared's, and
 * MPI_Win_allocate's where all ranks share the node (osc_ucxx_share.c).
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
    /* MPI_Win_allocate's (share_node): the ranks' state segments too, and
     * the range of rank 0's file that holds it all */
    size_t state_stride;     /* rank r's state at map + state_at + r * state_stride; 0: none */
    uint64_t state_at;
    size_t posts_stride;     /* rank r's PSCW post slots at posts_map + r * posts_stride;
                              * 0: none (each rank's own) */
    char *posts_map;
    size_t posts_len;        /* their own mapping's length (0: inside `map`: rank 0's,
                              * and where they fit in a page).  Apart, because the
                              * kernel's fault-around stops at a mapping's end: a
                              * lock_all epoch's read faults (ompi_osc_ucxx_shseg_touch)
                              * map no post slots, which grow with the ranks squared
                              * and only PSCW touches. */
    bool node;               /* made by share_node */
    uint64_t off;            /* rank 0: where in its file; others OSC_UCXX_SEG_NONE */
    struct ompi_osc_ucxx_shseg_t *next;   /* rank 0: given back when no rank maps it */
};

/* Collective over `comm` (every rank on this node): every rank returns the
 * same verdict. */
int ompi_osc_ucxx_share_segment(struct ompi_communicator_t *comm, size_t size, bool noncontig,
                                ompi_osc_ucxx_shseg_t **seg);
void ompi_osc_ucxx_share_segment_free(ompi_osc_ucxx_shseg_t *seg);
/* MPI_Win_allocate over ranks all on this node: rank 0 takes one range of
 * its shared memory (osc_ucxx_seg.c) for every rank's `size` bytes,
 * `state_size` bytes of state and `posts_size` of PSCW post slots, every
 * rank maps it with one open (one mapping; post slots past a page in a
 * second).
 * Collective over `comm`; *seg NULL (and OMPI_SUCCESS) where it is not
 * made (some rank not `mappable` or of another user, a rank's memory
 * larger than the window arenas'): each rank then allocates its own, as
 * elsewhere.  `*refused`: it was made but this process could not map it;
 * the caller tells every process (the creation's exchange), and each then
 * frees its segment and allocates its own. */
int ompi_osc_ucxx_share_node(struct ompi_communicator_t *comm, size_t size, size_t state_size,
                             size_t posts_size, bool mappable, ompi_osc_ucxx_shseg_t **seg,
                             bool *refused);
/* Finalize: the ranges rank 0 kept for peers that still mapped them. */
void ompi_osc_ucxx_share_fini(void);

static inline void *ompi_osc_ucxx_shseg_state(const ompi_osc_ucxx_shseg_t *seg, int rank)
{
    return seg->map + seg->state_at + (size_t) rank * seg->state_stride;
}

/* A first access to `rank`'s part of the segment, at byte `at` of its
 * window (UINT64_MAX: not known): read before it writes.  A write fault
 * maps its own page alone; a read fault also maps the neighbouring pages
 * of the file already in memory (the kernel's fault-around: other ranks'
 * state segments and windows, writable in a shared mapping), so a lock_all
 * epoch to every rank takes a fault per fault-around window instead of one
 * per page touched. */
static inline void ompi_osc_ucxx_shseg_touch(const ompi_osc_ucxx_shseg_t *seg, int rank,
                                             uint64_t at)
{
    (void) *(volatile const char *) ompi_osc_ucxx_shseg_state(seg, rank);
    if (at < seg->sizes[rank]) (void) *(volatile const char *) (seg->map + seg->offsets[rank] + at);
}

static inline volatile uint64_t *ompi_osc_ucxx_shseg_posts(const ompi_osc_ucxx_shseg_t *seg,
                                                           int rank)
{
    return (volatile uint64_t *) (seg->posts_map + (size_t) rank * seg->posts_stride);
}

END_C_DECLS

#endif /* OMPI_OSC_UCXX_SHARE_H */
