/*
 * Copyright (c) 2026 The osc/ucxx authors. All rights reserved.
 * $COPYRIGHT$
 *
 * Shared memory this process owns, which peers on the node map by ranges
 * (osc_ucxx_seg.c says how).
 */

#ifndef OMPI_OSC_UCXX_SEG_H
#define OMPI_OSC_UCXX_SEG_H

#include "opal/util/sys_limits.h"

#include "osc_ucxx_types.h"

BEGIN_C_DECLS

/* Ranges of our file are taken aligned to this many bytes. */
#define OSC_UCXX_SEG_CHUNK (16 * 1024)
/* Peers map it in pieces (a range is rounded out to them, and a mapping is
 * shared by every window whose range it holds): state segments and post
 * slots by pages, four segments to a page (osc_ucxx_memory.c), so that no
 * peer maps a page of state it does not use; window memory in 16 KiB
 * granules, which hold several small windows of a window arena and their
 * state segments, so that a first access maps one granule and the next
 * window's maps nothing new (a mapping is most of a first access's cost).
 * A mapping cannot grow in place: the addresses next to it are the next
 * peer's mapping. */
#define OSC_UCXX_SEG_MAP_PAGE ((uint64_t) opal_getpagesize())
#define OSC_UCXX_SEG_MAP_GRANULE ((uint64_t) 16 * 1024)
/* Not in our file (user memory, an MPI_Win_allocate_shared segment, none). */
#define OSC_UCXX_SEG_NONE UINT64_MAX

/* What a peer needs to map our file: our pid, the file's descriptor here,
 * and our name (ompi_osc_ucxx_proc_key), which the file's first word holds.
 * The same word's address is what cross-memory attach probes read
 * (osc_ucxx_cma.c).  pid 0: unknown. */
typedef struct {
    int32_t pid;
    int32_t fd;
    uint64_t key;
    uint64_t ident;    /* the address of our name word (cross-memory attach) */
} ompi_osc_ucxx_segid_t;

/* Our file, made on the first call; false where it cannot be made. */
bool ompi_osc_ucxx_seg_self(ompi_osc_ucxx_segid_t *id);
/* `len` bytes (a multiple of the page) of our file, their pages reserved,
 * mapped here: the address and the offset.  MPI_ERR_NO_MEM where the
 * pages cannot be reserved. */
int ompi_osc_ucxx_seg_take(size_t len, void **addr, uint64_t *off);
/* Give back what seg_take gave (its pages go back to the system). */
void ompi_osc_ucxx_seg_give(void *addr, uint64_t off, size_t len);
/* A range of a peer's file to map: [off, off + len), and where it went. */
typedef struct {
    uint64_t off;
    size_t len;
    void *addr;
} ompi_osc_ucxx_seg_range_t;
/* The `n` ranges of a peer's file mapped here, its file opened once (an
 * open is as costly as a mapping): true where every one is mapped, false
 * (none mapped) otherwise.  `check`: read the owner's name first (the pid
 * may name another process).  The file is closed again before this
 * returns: a descriptor held per peer would eat the program's. */
bool ompi_osc_ucxx_seg_attach(const ompi_osc_ucxx_segid_t *id, bool check,
                              ompi_osc_ucxx_seg_range_t *r, int n);
void ompi_osc_ucxx_seg_detach(void *addr, size_t len);
/* Our identity as a string (the modex) and back. */
void ompi_osc_ucxx_segid_format(const ompi_osc_ucxx_segid_t *id, char *buf, size_t len);
bool ompi_osc_ucxx_segid_parse(const char *s, ompi_osc_ucxx_segid_t *id);
void ompi_osc_ucxx_seg_fini(void);

END_C_DECLS

#endif /* OMPI_OSC_UCXX_SEG_H */
