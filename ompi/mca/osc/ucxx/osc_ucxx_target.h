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

#include "ompi/datatype/ompi_datatype.h"

#include "osc_ucxx_window.h"

BEGIN_C_DECLS

/* What this process keeps per window and peer: what every operation reads
 * (the access word, the mappings), the epochs' counters, and what the
 * mappings hold.  Everything else the peer published is kept once per
 * window where it is the same for every peer (the module's `pub`), else in
 * the module's arrays (osc_ucxx_window.c), read through the accessors
 * below. */
struct ompi_osc_ucxx_peer_t {
    /* Epoch state for this target (osc_ucxx_epoch.c), in the line of what
     * every operation reads with it */
    volatile int32_t access;       /* OSC_UCXX_TGT_* */
    /* ... a lock held or being requested by messages (OSC_UCXX_TGT_MSGLOCK:
     * its record, osc_ucxx_lazy.c) */
    ompi_osc_ucxx_lazy_t *lazy;
    /* Its user memory (create and dynamic windows, not mapped) reached by
     * cross-memory attach: its pid, or 0 (UCX). */
    int32_t cma;
    /* Its window memory and state segment mapped into ours; NULL where
     * neither mapping nor UCX can (user memory, another node). */
    char *direct_data;
    ompi_osc_ucxx_state_t *direct_state;
    volatile bool resolved;  /* the mappings above are made (first use of the peer) */
    bool loads_fault;        /* large gets from direct_data populate it first */
    bool whole;              /* ... and map all of its window memory and its state: a
                              * peer other than us on an allocate or create window
                              * (what the short accumulates check first) */
    bool pinned;             /* MPI_Win_shared_query gave its memory to the program:
                              * kept mapped while the window lives */
    uint8_t lq_hint;         /* the previous lock epoch by messages to it
                              * (osc_ucxx_lazy.c: OSC_UCXX_HINT_*) */
    volatile uint64_t fence_seen;  /* the peer has called this many fences */
    uint64_t posts_taken;          /* PSCW: its slot posts we have consumed */
    /* 2 MiB chunks of direct_data whose pages this process has populated
     * (a bit each, made at the first large copy: ompi_osc_ucxx_prefault) */
    uint64_t *volatile prefaulted;
    /* Our PSCW post slot in its post slots, mapped at our first post to it
     * (ompi_osc_ucxx_peer_post_slot) */
    volatile uint64_t *post_slot;
    /* A dynamic window's region table there, mapped with its state
     * (osc_ucxx_dyntab.c), or NULL */
    const ompi_osc_ucxx_dyntab_t *dyn_table;
    /* The peer table's entry while this window uses the peer, and the
     * ranges of its memory mapped for this window (osc_ucxx_ptab.c): the
     * window memory (MPI_Win_allocate) or region table (dynamic), the
     * state, the post slot. */
    ompi_osc_ucxx_pent_t *ent;
    ompi_osc_ucxx_pmap_t *maps[3];
};

struct ompi_osc_ucxx_link_t {
    ucp_ep_h ep;
    ucp_rkey_h data_rkey;    /* unpacked on first need (ompi_osc_ucxx_link_rkey) */
    ucp_rkey_h state_rkey;
    /* UCX operations issued on the link, and how many of them a completed
     * flush covered: a flush may skip the link only when they are equal
     * (another thread's flush in progress does not count). */
    volatile int64_t issued;
    volatile int64_t flushed;
    /* The last of them UCX did not complete in place (it returned a
     * request: the origin's buffer is still UCX's, or a get's data not yet
     * here): a notice (osc_ucxx_notice.c) may go behind operations only
     * once none is left above `flushed`. */
    volatile int64_t held;
    /* `issued` right after a lock release was posted on the link, not waited
     * for (osc_ucxx_state.c): while it is all that is outstanding, what
     * orders operations on window memory need not flush for it. */
    int64_t release_mark;
    /* Messages of kinds the target handles in order (accumulates) sent on
     * the link; and what the last notice covered of them and of `issued`. */
    volatile int64_t sent;
    int64_t noticed_issued, noticed_sent;
    ompi_osc_ucxx_lrow_t *row;        /* the row it is in (its summary counters) */
    ompi_osc_ucxx_dyncache_t *dyn;    /* dynamic windows: the target's regions */
    bool asked_service;     /* we counted ourselves in the target's serve word */
    bool acc_fence;         /* UCX atomics issued since the last ordering flush
                             * (osc_ucxx_fence_by_flush; osc_ucxx_accumulate.c) */
    uint8_t unpacked;       /* OSC_UCXX_LINK_DATA | OSC_UCXX_LINK_STATE: tried */
};
#define OSC_UCXX_LINK_DATA 1
#define OSC_UCXX_LINK_STATE 2

/* One worker's links to the peers of a window, an OPAL object whose
 * destructor drops their region caches: in chunks of OSC_UCXX_LINK_CHUNK
 * peers, each made at the first link into it, so that a window reaching
 * few peers by UCX keeps few links.  `sum` summarizes the row: its
 * counters cover every link of it. */
#define OSC_UCXX_LINK_CHUNK 64
typedef struct {
    ompi_osc_ucxx_link_t links[OSC_UCXX_LINK_CHUNK];
} ompi_osc_ucxx_lchunk_t;

struct ompi_osc_ucxx_lrow_t {
    opal_object_t super;
    ompi_osc_ucxx_link_t sum;
    ompi_osc_ucxx_worker_t *worker;
    int nchunks;
    ompi_osc_ucxx_lchunk_t *volatile chunks[];
};
OBJ_CLASS_DECLARATION(ompi_osc_ucxx_lrow_t);

/* The link slot of `target` in row `r`, if its chunk was made. */
static inline ompi_osc_ucxx_link_t *ompi_osc_ucxx_row_link(ompi_osc_ucxx_lrow_t *r, int target)
{
    ompi_osc_ucxx_lchunk_t *c = r->chunks[target / OSC_UCXX_LINK_CHUNK];
    return NULL == c ? NULL : &c->links[target % OSC_UCXX_LINK_CHUNK];
}

/* Link rows of one window, indexed by worker index.  Grows by replacement
 * (readers never take a lock); old tables are kept until free. */
struct ompi_osc_ucxx_ltab_t {
    ompi_osc_ucxx_ltab_t *retired;
    int cap;
    volatile int used;       /* rows [used, cap) are all NULL */
    ompi_osc_ucxx_lrow_t *rows[];
};

/* What peers published at creation, one field at a time: the value every
 * peer gave, or (where they differ) the peer's from the module's array. */
static inline uint64_t ompi_osc_ucxx_peer_size(const ompi_osc_ucxx_module_t *m, int target)
{
    return OPAL_LIKELY(NULL == m->pub_size) ? m->pub.size : m->pub_size[target];
}

static inline int32_t ompi_osc_ucxx_peer_disp(const ompi_osc_ucxx_module_t *m, int target)
{
    return OPAL_LIKELY(NULL == m->pub_disp) ? m->pub.disp_unit : m->pub_disp[target];
}

/* The remote address of its window memory: what UCX, cross-memory attach
 * and messages name. */
static inline uint64_t ompi_osc_ucxx_peer_base(const ompi_osc_ucxx_module_t *m, int target)
{
    return OPAL_LIKELY(NULL == m->pub_base) ? m->pub.base : m->pub_base[target];
}

static inline uint32_t ompi_osc_ucxx_peer_acc_shift(const ompi_osc_ucxx_module_t *m, int target)
{
    return OPAL_LIKELY(NULL == m->pub_acc_shift) ? m->pub.acc_shift : m->pub_acc_shift[target];
}

static inline uint32_t ompi_osc_ucxx_peer_am_sysbuf(const ompi_osc_ucxx_module_t *m, int target)
{
    return NULL == m->pub_am_sysbuf ? m->pub.am_sysbuf : m->pub_am_sysbuf[target];
}

/* The remote address of its state segment (UCX atomics). */
static inline uint64_t ompi_osc_ucxx_peer_state(const ompi_osc_ucxx_module_t *m, int target)
{
    return NULL == m->pub_state ? m->pub.state : m->pub_state[target];
}

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
    /* Where gen_word is NULL, gen was read after the window's dyn_syncs-th
     * synchronization and holds until the next one */
    uint64_t syncs;
    /* A read of the generation in flight (UCX's request, NULL: none), issued
     * after the read_syncs-th synchronization, into read_gen */
    void *read_req;
    uint64_t read_syncs, read_gen;
    ompi_osc_ucxx_worker_t *read_worker;
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

/* Lazy setup (osc_ucxx_target.c): a link (its endpoint); a link's rkeys,
 * unpacked on first need (NULL: nothing to reach, or no rkey published);
 * the peer's mappings; the window's links and mappings at free; the peer
 * table's hooks and the free of a link's region cache, which the
 * dynamic-window file fills (target_init, at component init). */
ompi_osc_ucxx_link_t *ompi_osc_ucxx_link_resolve(ompi_osc_ucxx_module_t *module,
                                                 ompi_osc_ucxx_worker_t *worker, int target);
ucp_rkey_h ompi_osc_ucxx_link_rkey(ompi_osc_ucxx_module_t *module, ompi_osc_ucxx_link_t *link,
                                   int target, bool state);
void ompi_osc_ucxx_peer_resolve_direct(ompi_osc_ucxx_module_t *module, int target);
/* The same for a first access to byte `offset` of the peer's window;
 * `locks`: in an epoch that takes the target's lock word as it opens it
 * (lock_all), where that maps the peer's memory here now, both pages are
 * populated at once. */
void ompi_osc_ucxx_peer_resolve_at(ompi_osc_ucxx_module_t *module, int target, uint64_t offset,
                                   bool locks);
void ompi_osc_ucxx_links_release(ompi_osc_ucxx_module_t *module);
void ompi_osc_ucxx_target_init(void (*dyn_cache_free)(ompi_osc_ucxx_dyncache_t *cache));
/* Dynamic windows: the path to [lo, hi) at the target where it is on the
 * node, reached by cross-memory attach, and its region table is mapped
 * here (osc_ucxx_dyntab.c): found there, with no link;
 * OMPI_ERR_NOT_AVAILABLE where the table cannot tell (regions that do not
 * fit it, or back to back), then dyn_resolve asks. */
int ompi_osc_ucxx_dyntab_resolve(ompi_osc_ucxx_module_t *module, int target, uint64_t lo,
                                 uint64_t hi, ompi_osc_ucxx_path_t *path);
static inline bool ompi_osc_ucxx_dyntab_serves(ompi_osc_ucxx_module_t *module, int target)
{
    ompi_osc_ucxx_peer_t *peer = &module->peers[target];
    if (target == module->rank) return false;
    if (OPAL_UNLIKELY(!peer->resolved)) ompi_osc_ucxx_peer_resolve_direct(module, target);
    return NULL != peer->dyn_table && 0 != peer->cma;
}
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
        ompi_osc_ucxx_link_t *link = ompi_osc_ucxx_row_link(tab->rows[worker->index], target);
        if (OPAL_LIKELY(NULL != link && NULL != link->ep)) {
            return link;
        }
    }
    return NULL;
}

/* The link's rkey of the peer's window memory (or state segment). */
static inline ucp_rkey_h ompi_osc_ucxx_link_data_rkey(ompi_osc_ucxx_module_t *module,
                                                      ompi_osc_ucxx_link_t *link, int target)
{
    if (OPAL_LIKELY(NULL != link->data_rkey)) return link->data_rkey;
    return ompi_osc_ucxx_link_rkey(module, link, target, false);
}

static inline ucp_rkey_h ompi_osc_ucxx_link_state_rkey(ompi_osc_ucxx_module_t *module,
                                                       ompi_osc_ucxx_link_t *link, int target)
{
    if (OPAL_LIKELY(NULL != link->state_rkey)) return link->state_rkey;
    return ompi_osc_ucxx_link_rkey(module, link, target, true);
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

/* A path's link and rkey (an unmapped path, or one by cross-memory attach
 * that the kernel refused after all). */
static inline int ompi_osc_ucxx_path_ucx(ompi_osc_ucxx_module_t *module,
                                         ompi_osc_ucxx_worker_t *worker, int target,
                                         ompi_osc_ucxx_path_t *path)
{
    path->link = ompi_osc_ucxx_link(module, worker, target);
    if (OPAL_UNLIKELY(NULL == path->link)) {
        return OMPI_ERR_UNREACH;
    }
    path->rkey = ompi_osc_ucxx_link_data_rkey(module, path->link, target);
    return OMPI_SUCCESS;
}

/* The peer's window memory mapped into ours, or NULL.  Resolved once per
 * (window, peer), and again after the peer table let the peer go. */
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

/* Our post slot in the peer's post slots, mapped here on first use; NULL
 * where its state is not mapped here. */
volatile uint64_t *ompi_osc_ucxx_peer_post_slot(ompi_osc_ucxx_module_t *module, int target);

/* Is all of the peer's window memory mapped here? */
static inline bool ompi_osc_ucxx_fully_mapped(ompi_osc_ucxx_module_t *module, int target)
{
    return NULL != ompi_osc_ucxx_direct(module, target);
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

/* The range check, step 3 of the operation prologue (osc_ucxx_op.h): is
 * [disp, disp + count elements of dt) inside the target's window?  Sets the remote address of displacement `disp` (t->remote) and
 * the remote bytes the access touches, [t->lo, t->hi).  An access of no
 * bytes is in range wherever it points; dynamic windows are checked against
 * the attached regions when the path is resolved.  Inline: every operation
 * runs it. */
static inline int ompi_osc_ucxx_window_range(ompi_osc_ucxx_target_t *t, ptrdiff_t disp,
                                            int count, struct ompi_datatype_t *dt)
{
    ompi_osc_ucxx_module_t *module = t->module;
    uint64_t base = ompi_osc_ucxx_peer_base(module, t->rank);
    uint64_t size = ompi_osc_ucxx_peer_size(module, t->rank);
    ptrdiff_t lb, extent, true_lb, true_extent, first, end, offset;

    if (OPAL_UNLIKELY(__builtin_mul_overflow(
            disp, (ptrdiff_t) ompi_osc_ucxx_peer_disp(module, t->rank), &offset))) {
        return OMPI_ERR_RMA_RANGE;  /* (wrapped, it would land inside the window) */
    }
    t->remote = base + offset;
    t->lo = t->hi = t->remote;
    if (0 == count || 0 == dt->super.size) {
        return OMPI_SUCCESS;   /* moves nothing: MPI makes it a no-op */
    }
    ompi_datatype_get_extent(dt, &lb, &extent);
    ompi_datatype_get_true_extent(dt, &true_lb, &true_extent);
    first = offset + true_lb + (extent < 0 ? (count - 1) * extent : 0);
    end = offset + true_lb + true_extent + (extent > 0 ? (count - 1) * extent : 0);
    t->lo = base + first;
    t->hi = base + end;
    if (MPI_WIN_FLAVOR_DYNAMIC == module->flavor) {
        /* (addresses: bytes that wrap past the top of the address space are
         * attached nowhere, and would pass the region checks' end tests) */
        return OPAL_UNLIKELY(t->hi < t->lo) ? OMPI_ERR_RMA_RANGE : OMPI_SUCCESS;
    }
    if (OPAL_UNLIKELY(disp < 0 || first < 0 || end > (ptrdiff_t) size)) {
        OSC_UCXX_VERBOSE(20, "window %u: access [%td, %td) outside rank %d's %" PRIu64
                         " bytes", module->cid, first, end, t->rank, size);
        return OMPI_ERR_RMA_RANGE;
    }
    return OMPI_SUCCESS;
}

/* ... through a memory-handle view (osc_ucxx_target.c). */
int ompi_osc_ucxx_memhandle_range(ompi_osc_ucxx_target_t *t, ptrdiff_t disp, int count,
                                  struct ompi_datatype_t *dt);

/* Is a posted lock release all that the link has outstanding?  (It
 * changes no window memory.) */
static inline bool ompi_osc_ucxx_link_release_only(const ompi_osc_ucxx_link_t *link)
{
    int64_t issued = link->issued;
    return issued == link->release_mark && issued == link->flushed + 1;
}

/* An operation counted on a link (ompi_osc_ucxx_link_dirty) that UCX
 * answered with a request (`sp` a pointer): not complete here yet, so only
 * a flush settles it. */
static inline void ompi_osc_ucxx_link_held(ompi_osc_ucxx_link_t *link, void *sp)
{
    if (OPAL_UNLIKELY(UCS_PTR_IS_PTR(sp))) {
        link->held = link->issued;
    }
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
