/*
 * Copyright (c) 2026 The osc/ucxx authors. All rights reserved.
 * $COPYRIGHT$
 *
 * osc/ucxx, fourth layer: what this process knows about each peer of a
 * window, and how an operation reaches the peer's memory.
 *
 *   peer    - what the peer published at window creation, its memory and
 *             state mapped into ours where UCX can (ucp_rkey_ptr: shared
 *             memory on a node), and the epoch state for that target.
 *   link    - (worker, window, peer): endpoint + unpacked rkeys + flush
 *             counters, created lazily on first use, so nothing is O(P)
 *             until the peers are really used.
 *   path    - how one access reaches the target bytes: a mapping (loads,
 *             stores and CPU atomics at remote address + delta), cross-memory
 *             attach (user memory on the node: osc_ucxx_cma.c), or a link.
 *   target  - all of the above for one operation: (view, rank) resolved once
 *             at the top of every operation (osc_ucxx_op.h), after which
 *             only the target object travels.
 * Lazy setup (links, mappings) is in osc_ucxx_target.c.
 */

#ifndef OMPI_OSC_UCXX_TARGET_H
#define OMPI_OSC_UCXX_TARGET_H

#include "osc_ucxx_window.h"

BEGIN_C_DECLS

struct ompi_osc_ucxx_peer_t {
    /* Published at creation */
    uint64_t base;           /* remote virtual address of the window memory */
    uint64_t size;           /* window size in bytes */
    uint64_t state;          /* remote address of the state segment */
    int32_t disp_unit;
    uint32_t blob;           /* offset of this peer's packed rkeys in module->blobs */
    uint32_t data_rkey_len;
    uint32_t state_rkey_len;
    uint32_t am_sysbuf;      /* staging bytes it keeps for each origin's active messages */
    uint32_t acc_shift;      /* log2 of its accumulate stripe block (osc_ucxx_state.c) */
    uint32_t data_serial, state_serial;  /* its allocations' numbers (rkey_take) */
    int32_t cma_pid;         /* its pid and identity word (osc_ucxx_cma.c) */
    uint64_t cma_ident;
    volatile bool resolved;  /* the direct mappings below are made (first use of the peer) */
    bool loads_fault;        /* direct_data faults page by page on loads too (a UCX sysv
                              * segment: no fault-around), so large gets prefault */
    bool whole;              /* ... and map all of its window memory and its state: a
                              * peer other than us on an allocate or create window
                              * (what the short accumulates check first) */
    /* Epoch state for this target (osc_ucxx_epoch.c), in the line of what
     * every operation reads with it */
    volatile int32_t access;       /* OSC_UCXX_TGT_* */
    /* ... a lock held or being requested by messages (OSC_UCXX_TGT_MSGLOCK:
     * its record, osc_ucxx_lazy.c) */
    ompi_osc_ucxx_lazy_t *lazy;
    /* Direct mappings; NULL where UCX cannot map (user memory, no
     * shared-memory transport).  direct_data covers [direct_lo, direct_hi)
     * (everything, where mapped at all). */
    uint64_t direct_lo, direct_hi;
    char *direct_data;
    /* Its user memory (create and dynamic windows, not mapped) reached by
     * cross-memory attach: its pid, or 0 (UCX). */
    int32_t cma;
    ompi_osc_ucxx_state_t *direct_state;
    ucp_rkey_h direct_rkeys[2];
    volatile uint64_t fence_seen;  /* the peer has called this many fences */
    uint64_t posts_taken;          /* PSCW: its slot posts we have consumed */
    /* 2 MiB chunks of direct_data whose pages this process has populated
     * (a bit each, made at the first large copy: ompi_osc_ucxx_prefault) */
    uint64_t *volatile prefaulted;
};

struct ompi_osc_ucxx_link_t {
    ucp_ep_h ep;
    ucp_rkey_h data_rkey;
    ucp_rkey_h state_rkey;
    /* UCX operations issued on the link, and how many of them a completed
     * flush covered: a flush may skip the link only when they are equal
     * (another thread's flush in progress does not count). */
    volatile int64_t issued;
    volatile int64_t flushed;
    ompi_osc_ucxx_worker_t *worker;   /* set in a row's summary entry */
    ompi_osc_ucxx_dyncache_t *dyn;    /* dynamic windows: the target's regions */
    bool asked_service;     /* we counted ourselves in the target's serve word */
    bool acc_fence;         /* UCX atomics issued since the last ordering flush
                             * (osc_ucxx_fence_by_flush; osc_ucxx_accumulate.c) */
};

/* One worker's links to every peer of a window, an OPAL object whose
 * destructor drops their rkeys and region caches.  links[size] summarizes
 * the row: its counters cover the whole row, and it names the worker. */
typedef struct {
    opal_object_t super;
    int size;
    ompi_osc_ucxx_link_t links[];
} ompi_osc_ucxx_lrow_t;
OBJ_CLASS_DECLARATION(ompi_osc_ucxx_lrow_t);

/* Link rows of one window, indexed by worker index.  Grows by replacement
 * (readers never take a lock); old tables are kept until free. */
struct ompi_osc_ucxx_ltab_t {
    ompi_osc_ucxx_ltab_t *retired;
    int cap;
    volatile int used;       /* rows [used, cap) are all NULL */
    ompi_osc_ucxx_lrow_t *rows[];
};

/* Dynamic windows: an origin's cache of a target's regions, valid for one
 * generation of the target (osc_ucxx_dynamic.c). */
struct ompi_osc_ucxx_dyncache_t {
    uint64_t gen;
    /* The region used last, [hot_lo, hot_hi), checked before anything else
     * while the target's generation (*gen_word, its state segment mapped
     * here) still equals gen; empty when hot_lo > hot_hi. */
    uint64_t hot_lo, hot_hi;
    ucp_rkey_h hot_rkey;
    const volatile uint64_t *gen_word;
    int count, cap;
    uint64_t max_len;        /* the longest entry (cache_covers starts from it) */
    struct ompi_osc_ucxx_dynentry_t {
        uint64_t base, len;
        ucp_rkey_h rkey;
    } *entries;
};

/* How one operation reaches its target bytes. */
typedef struct {
    bool mapped;
    /* Mapped, but only part of the target's window or region is: link and
     * rkey are set too, and the accumulates take them, so that every atomic
     * on an element goes the same way whatever range the operation covers. */
    bool partial;
    /* Dynamic windows: the bytes span regions attached back to back, each
     * registered on its own; put and get go region by region
     * (ompi_osc_ucxx_dyn_piece), accumulates by message.  Never mapped. */
    bool split;
    /* Not mapped, but reached by cross-memory attach at the remote address
     * itself: the target's pid (0: not); link and rkey are set too. */
    int32_t cma;
    intptr_t delta;
    ompi_osc_ucxx_link_t *link;
    ucp_rkey_h rkey;
} ompi_osc_ucxx_path_t;

/* One operation's target, resolved once (osc_ucxx_op.h). */
struct ompi_osc_ucxx_target_t {
    ompi_osc_ucxx_module_t *module;
    ompi_osc_ucxx_view_t *view;
    ompi_osc_ucxx_worker_t *worker;
    ompi_osc_ucxx_peer_t *peer;
    int rank;
    uint64_t remote;         /* remote address of the target displacement */
    uint64_t lo, hi;         /* the remote bytes the access touches */
    ompi_osc_ucxx_path_t path;
};

/* Lazy setup (osc_ucxx_target.c) */
ompi_osc_ucxx_link_t *ompi_osc_ucxx_link_resolve(ompi_osc_ucxx_module_t *module,
                                                 ompi_osc_ucxx_worker_t *worker, int target);
void ompi_osc_ucxx_peer_resolve_direct(ompi_osc_ucxx_module_t *module, int target);
void ompi_osc_ucxx_links_release(ompi_osc_ucxx_module_t *module);
/* Dynamic windows: the path to [lo, hi) at the target (osc_ucxx_dynamic.c) */
int ompi_osc_ucxx_dyn_resolve(ompi_osc_ucxx_module_t *module, ompi_osc_ucxx_worker_t *worker,
                              int target, uint64_t lo, uint64_t hi, ompi_osc_ucxx_path_t *path);
/* Our own regions through our link to ourselves (their rkeys), where single
 * elements take UCX atomics (osc_ucxx_accumulate.c) */
int ompi_osc_ucxx_dyn_resolve_self(ompi_osc_ucxx_module_t *module,
                                   ompi_osc_ucxx_worker_t *worker, uint64_t lo, uint64_t hi,
                                   ompi_osc_ucxx_path_t *path);
/* A split access (path->split): the path to the bytes at lo, and where the
 * region holding them ends (*end, at most hi). */
int ompi_osc_ucxx_dyn_piece(ompi_osc_ucxx_module_t *module, ompi_osc_ucxx_worker_t *worker,
                            int target, uint64_t lo, uint64_t hi, ompi_osc_ucxx_path_t *path,
                            uint64_t *end);

/* The link for (worker, module, target) if one was made, else NULL. */
static inline ompi_osc_ucxx_link_t *ompi_osc_ucxx_link_made(ompi_osc_ucxx_module_t *module,
                                                            ompi_osc_ucxx_worker_t *worker,
                                                            int target)
{
    ompi_osc_ucxx_ltab_t *tab = module->ltab;
    if (OPAL_LIKELY(worker->index < tab->cap && NULL != tab->rows[worker->index])) {
        ompi_osc_ucxx_link_t *link = &tab->rows[worker->index]->links[target];
        if (OPAL_LIKELY(NULL != link->ep)) {
            return link;
        }
    }
    return NULL;
}

/* The link for (worker, module, target); NULL if it cannot be made. */
static inline ompi_osc_ucxx_link_t *ompi_osc_ucxx_link(ompi_osc_ucxx_module_t *module,
                                                       ompi_osc_ucxx_worker_t *worker,
                                                       int target)
{
    ompi_osc_ucxx_link_t *link = ompi_osc_ucxx_link_made(module, worker, target);
    if (OPAL_LIKELY(NULL != link)) {
        return link;
    }
    return ompi_osc_ucxx_link_resolve(module, worker, target);
}

/* The peer's window memory mapped into ours, or NULL.  Resolved once per
 * (window, peer). */
static inline __opal_attribute_always_inline__ char *
ompi_osc_ucxx_direct(ompi_osc_ucxx_module_t *module, int target)
{
    ompi_osc_ucxx_peer_t *peer = &module->peers[target];
    if (OPAL_UNLIKELY(!peer->resolved)) {
        ompi_osc_ucxx_peer_resolve_direct(module, target);
    }
    return peer->direct_data;
}

/* The peer's state segment mapped into ours, or NULL. */
static inline __opal_attribute_always_inline__ ompi_osc_ucxx_state_t *
ompi_osc_ucxx_direct_state(ompi_osc_ucxx_module_t *module, int target)
{
    ompi_osc_ucxx_peer_t *peer = &module->peers[target];
    if (OPAL_UNLIKELY(!peer->resolved)) {
        ompi_osc_ucxx_peer_resolve_direct(module, target);
    }
    return peer->direct_state;
}

/* Is all of the peer's window memory mapped here? */
static inline bool ompi_osc_ucxx_fully_mapped(ompi_osc_ucxx_module_t *module, int target)
{
    return NULL != ompi_osc_ucxx_direct(module, target) &&
           UINT64_MAX == module->peers[target].direct_hi;
}

/* Dynamic windows whose links every thread shares (MPI_THREAD_MULTIPLE with
 * osc_ucxx_per_thread_workers=0): another thread's lookup may grow the
 * region cache an operation's path came from, move its hot range, or drop
 * it and destroy the rkeys the path names.  Each operation (put_get, acc,
 * compare_and_swap) then runs whole under the window's dyn_serial_lock, and
 * none takes the mapped path's unlocked look at the hot range.  (With a
 * worker per thread, each cache has one user: no lock.) */
static inline bool ompi_osc_ucxx_dyn_serial(const ompi_osc_ucxx_module_t *module)
{
    return OPAL_UNLIKELY(OSC_UCXX.links_shared) && MPI_WIN_FLAVOR_DYNAMIC == module->flavor;
}

/* Around one operation: takes the lock where ompi_osc_ucxx_dyn_serial;
 * pass what it returned to ..._leave. */
static inline bool ompi_osc_ucxx_dyn_serial_enter(ompi_osc_ucxx_module_t *module)
{
    if (!ompi_osc_ucxx_dyn_serial(module)) {
        return false;
    }
    opal_mutex_lock(&module->dyn_serial_lock);
    return true;
}

static inline void ompi_osc_ucxx_dyn_serial_leave(ompi_osc_ucxx_module_t *module, bool held)
{
    if (held) {
        opal_mutex_unlock(&module->dyn_serial_lock);
    }
}

/* Dynamic windows: are the target bytes [lo, hi) inside the mapped range
 * this cache used last, with nothing detached at the target since? */
static inline bool ompi_osc_ucxx_dyn_hot(const ompi_osc_ucxx_dyncache_t *c, uint64_t lo,
                                         uint64_t hi)
{
    return NULL != c && lo >= c->hot_lo && hi <= c->hot_hi &&
           *c->gen_word == c->gen;
}

/* Resolve the path to the target bytes [lo, hi) (remote addresses). */
static inline int ompi_osc_ucxx_resolve(ompi_osc_ucxx_module_t *module,
                                        ompi_osc_ucxx_worker_t *worker, int target,
                                        uint64_t lo, uint64_t hi, ompi_osc_ucxx_path_t *path)
{
    ompi_osc_ucxx_peer_t *peer = &module->peers[target];
    char *direct;

    if (MPI_WIN_FLAVOR_DYNAMIC == module->flavor) {
        /* (our own regions need no link: dyn_resolve checks them directly) */
        ompi_osc_ucxx_link_t *link =
            target == module->rank ? NULL : ompi_osc_ucxx_link(module, worker, target);
        ompi_osc_ucxx_dyncache_t *c = NULL == link ? NULL : link->dyn;
        if (OPAL_LIKELY(ompi_osc_ucxx_dyn_hot(c, lo, hi))) {
            /* the region used last, still attached: no lookup */
            path->mapped = path->split = path->partial = false;
            path->cma = peer->cma;
            path->link = link;
            path->rkey = c->hot_rkey;
            return OMPI_SUCCESS;
        }
        return ompi_osc_ucxx_dyn_resolve(module, worker, target, lo, hi, path);
    }
    direct = ompi_osc_ucxx_direct(module, target);
    path->partial = false;
    path->split = false;
    path->cma = 0;
    if (OPAL_LIKELY(NULL != direct && lo >= peer->direct_lo && hi <= peer->direct_hi)) {
        path->mapped = true;
        path->delta = (intptr_t) direct - (intptr_t) peer->base;
        if (OPAL_LIKELY(UINT64_MAX == peer->direct_hi)) {
            return OMPI_SUCCESS;
        }
        path->partial = true;
    } else {
        path->mapped = false;
        path->cma = peer->cma;
    }
    path->link = ompi_osc_ucxx_link(module, worker, target);
    if (OPAL_UNLIKELY(NULL == path->link)) {
        return OMPI_ERR_UNREACH;
    }
    path->rkey = path->link->data_rkey;
    return OMPI_SUCCESS;
}

/* Count ourselves in the target's serve word (where we map it) before we
 * need its CPU (osc_ucxx_state.c). */
void ompi_osc_ucxx_want_service(ompi_osc_ucxx_module_t *module, ompi_osc_ucxx_link_t *link,
                                int target);

/* Before (or right after) an operation the target's CPU may have to serve:
 * emulated RMA on user memory, an active message. */
static inline void ompi_osc_ucxx_link_ask(ompi_osc_ucxx_module_t *module,
                                          ompi_osc_ucxx_link_t *link, int target)
{
    if (OPAL_UNLIKELY(!link->asked_service)) {
        ompi_osc_ucxx_want_service(module, link, target);
    }
}

/* Count a UCX operation on a link for the next flush: after it is posted,
 * so a flush that sees the count also covers the operation.  The row's
 * summary entry ([size]) counts too. */
static inline void ompi_osc_ucxx_link_dirty(ompi_osc_ucxx_module_t *module,
                                            ompi_osc_ucxx_link_t *link, int target)
{
    ompi_osc_ucxx_add64(&link->issued, 1);
    ompi_osc_ucxx_add64(&link[module->size - target].issued, 1);
    ompi_osc_ucxx_link_ask(module, link, target);
}

END_C_DECLS

/* Copies of more than this to or from a peer's memory mapped here (window
 * memory, dynamic regions, memory handles) populate this process's page
 * tables first, once per 2 MiB chunk. */
#define OSC_UCXX_PREFAULT_MIN (256 * 1024)

void ompi_osc_ucxx_prefault_range(ompi_osc_ucxx_module_t *module, int target, char *p,
                                  size_t len, bool write);

/* Before copying `len` bytes at `p`, mapped memory of `target` (a store
 * when `write`): the large ones populate the chunks they touch first
 * (osc_ucxx_share.c says why; loads only where they fault page by page). */
static inline void ompi_osc_ucxx_prefault(ompi_osc_ucxx_module_t *module, int target, char *p,
                                          size_t len, bool write)
{
    if (OPAL_UNLIKELY(len > OSC_UCXX_PREFAULT_MIN) && OSC_UCXX.prefault) {
        ompi_osc_ucxx_prefault_range(module, target, p, len, write);
    }
}

#endif /* OMPI_OSC_UCXX_TARGET_H */
