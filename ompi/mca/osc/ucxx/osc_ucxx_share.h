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
    /* MPI_Win_allocate's (share_node): the ranks' lock words, state
     * segments and post slots too.  The lock words lead the range, a cache
     * line each, before the memory: the only words of a peer that a
     * lock_all epoch touches, so that its read faults (fault-around,
     * ompi_osc_ucxx_shseg_touch) map one page of them, not a page of
     * states per four peers.  The states and post slots follow the memory,
     * in a mapping of their own where they pass a few pages (`apart_len`):
     * the kernel's fault-around stops at a mapping's end. */
    ompi_osc_ucxx_word_t *locks;  /* rank r's lock word: locks[r]; NULL: in its state */
    char *apart;             /* the states, then the post slots, then `users` */
    size_t apart_len;        /* `apart`'s own mapping's length (0: inside `map`) */
    size_t state_stride;     /* rank r's state at apart + r * state_stride; 0: none */
    size_t posts_stride;     /* rank r's PSCW post slots at posts + r * posts_stride;
                              * 0: none (each rank's own) */
    char *posts;
    uint64_t *users;         /* how many processes map the range (CPU atomics only) */
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
 * `state_size` bytes of state and `posts_size` of PSCW post slots, and a
 * lock word each; every rank maps it with one open (the states and post
 * slots in a second mapping where they pass a few pages: see `apart`).
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
    return seg->apart + (size_t) rank * seg->state_stride;
}

/* A first access to `rank`'s part of the segment, at byte `at` of its
 * window (UINT64_MAX: not known): read before it writes.  A write fault
 * maps its own page alone; a read fault also maps the neighbouring pages
 * of the file already in memory (the kernel's fault-around: other ranks'
 * windows, writable in a shared mapping), so a lock_all epoch to every
 * rank takes a fault per fault-around window instead of one per page
 * touched. */
static inline void ompi_osc_ucxx_shseg_touch(const ompi_osc_ucxx_shseg_t *seg, int rank,
                                             uint64_t at)
{
    (void) seg->locks[rank].value;   /* (mapped at creation where ours shares its page) */
    if (at < seg->sizes[rank]) (void) *(volatile const char *) (seg->map + seg->offsets[rank] + at);
}

static inline volatile uint64_t *ompi_osc_ucxx_shseg_posts(const ompi_osc_ucxx_shseg_t *seg,
                                                           int rank)
{
    return (volatile uint64_t *) (seg->posts + (size_t) rank * seg->posts_stride);
}

END_C_DECLS

#endif /* OMPI_OSC_UCXX_SHARE_H */
