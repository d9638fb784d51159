/*
 * Copyright (c) 2026 The osc/ucxx authors. All rights reserved.
 * $COPYRIGHT$
 *
 * osc/ucxx: MPI one-sided communication over UCX with per-thread workers.
 *
 * Object model (who owns what):
 *   component  - one UCP context per process, the list of workers, the table of
 *                peer worker addresses (exchanged once per peer, not per window)
 *                and the table of windows by communicator id (for active messages).
 *   worker     - a UCP worker used by one thread at a time; endpoints to peers are
 *                created lazily and kept for the life of the process.
 *   module     - one window: its memory, a small state segment (lock word and
 *                counters), what every peer published at creation (addresses and
 *                packed rkeys), a per-worker table of links, and the epoch state.
 *   link       - (worker, window, peer): endpoint + unpacked rkeys, created lazily
 *                on first use, so nothing is O(P) until the peers are really used.
 *
 * Where UCX can map a peer's memory into our address space (ucp_rkey_ptr: shared
 * memory on one node), operations use plain loads, stores and CPU atomics on the
 * mapping; everything else goes through UCP RMA/AMO calls.
 */

#ifndef OMPI_OSC_UCXX_H
#define OMPI_OSC_UCXX_H

#include "ompi_config.h"

#include <pthread.h>
#include <ucp/api/ucp.h>

#include "opal/class/opal_free_list.h"
#include "opal/class/opal_hash_table.h"
#include "opal/threads/mutex.h"
#include "opal/runtime/opal_progress.h"
#include "opal/util/output.h"
#include "opal/util/show_help.h"

#include "ompi/communicator/communicator.h"
#include "ompi/datatype/ompi_datatype.h"
#include "ompi/group/group.h"
#include "ompi/mca/osc/base/base.h"
#include "ompi/mca/osc/osc.h"
#include "ompi/request/request.h"
#include "ompi/win/win.h"

#include "osc_ucxx_ext.h"

BEGIN_C_DECLS

/* ------------------------------------------------------------------------- */
/* Component                                                                 */

struct ompi_osc_ucxx_worker_t;
struct ompi_osc_ucxx_module_t;

typedef struct ompi_osc_ucxx_component_t {
    ompi_osc_base_component_t super;

    /* MCA parameters */
    int priority;
    int verbose;
    bool use_direct;          /* load/store/CPU atomics through ucp_rkey_ptr */
    bool per_thread_workers;  /* one worker per thread under MPI_THREAD_MULTIPLE */
    int post_poll_interval;   /* wait loops: ucp progress calls per opal_progress */
    int max_rails;            /* UCX_MAX_RNDV_RAILS for our context (0: UCX's default) */
    bool progress_thread;     /* serve peers from a thread of our own */
    int progress_interval_us; /* its sleep when there was nothing to do */
    bool share_user;          /* move attached user memory onto shared memory */
    unsigned long share_max;  /* ... up to this many bytes per attachment */
    pthread_t progress_tid;
    volatile bool progress_stop;
    bool progress_running;

    int output;               /* opal_output stream for verbose diagnostics */
    bool enable_mpi_threads;
    ucs_thread_mode_t thread_mode;

    /* Created on the first window, destroyed at finalize */
    ucp_context_h context;
    opal_mutex_t lock;        /* workers, peer addresses, window table */
    struct ompi_osc_ucxx_worker_t *main_worker;  /* the worker peers connect to */
    struct ompi_osc_ucxx_worker_t **volatile workers;  /* every worker, by index */
    volatile int num_workers;
    int workers_cap;
    pthread_key_t tls_key;    /* returns a dead thread's worker to the pool */
    bool tls_key_created;
    opal_hash_table_t peer_addrs;  /* proc name -> ompi_osc_ucxx_addr_t */
    opal_hash_table_t windows;     /* communicator id -> module */
    struct ompi_osc_ucxx_module_t *zombies;  /* kept until finalize (see core_release) */
    opal_free_list_t requests;
    bool progress_registered;
    int num_modules;
} ompi_osc_ucxx_component_t;

OMPI_DECLSPEC extern ompi_osc_ucxx_component_t mca_osc_ucxx_component;
#define OSC_UCXX (mca_osc_ucxx_component)

/* Checked here first: the fast paths must not pay a call when quiet. */
#define OSC_UCXX_VERBOSE(level, ...)                                          \
    do {                                                                      \
        if (OPAL_UNLIKELY(mca_osc_ucxx_component.verbose >= (level))) {       \
            opal_output_verbose(level, mca_osc_ucxx_component.output,         \
                                "osc/ucxx: " __VA_ARGS__);                    \
        }                                                                     \
    } while (0)

/* A peer's published worker address. */
typedef struct {
    size_t len;
    char addr[];
} ompi_osc_ucxx_addr_t;

/* ------------------------------------------------------------------------- */
/* Workers                                                                   */

typedef struct ompi_osc_ucxx_worker_t {
    ucp_worker_h ucp;
    int index;                 /* position in OSC_UCXX.workers and in link tables */
    bool owned;                /* a live thread uses it */
    opal_mutex_t lock;         /* the endpoint table */
    opal_hash_table_t eps;     /* proc name -> ucp_ep_h */
    volatile int32_t pending;  /* request-based operations not yet complete */
} ompi_osc_ucxx_worker_t;

extern __thread ompi_osc_ucxx_worker_t *ompi_osc_ucxx_tls_worker;

int ompi_osc_ucxx_context_init(void);
void ompi_osc_ucxx_context_fini(void);
ompi_osc_ucxx_worker_t *ompi_osc_ucxx_worker_acquire(void);
int ompi_osc_ucxx_worker_get_ep(ompi_osc_ucxx_worker_t *worker, ompi_proc_t *proc,
                                ucp_ep_h *ep);
int ompi_osc_ucxx_progress(void);
int ompi_osc_ucxx_am_drain(void);
int ompi_osc_ucxx_wait_request(ompi_osc_ucxx_worker_t *worker, void *req);
bool ompi_osc_ucxx_peer_addr_known(ompi_proc_t *proc);
int ompi_osc_ucxx_peer_addr_store(ompi_proc_t *proc, const void *addr, size_t len);

/* The calling thread's worker (created or taken from the pool on first use). */
static inline ompi_osc_ucxx_worker_t *ompi_osc_ucxx_worker_self(void)
{
    ompi_osc_ucxx_worker_t *w = ompi_osc_ucxx_tls_worker;
    if (OPAL_LIKELY(NULL != w)) {
        return w;
    }
    return ompi_osc_ucxx_worker_acquire();
}

static inline uint64_t ompi_osc_ucxx_proc_key(ompi_proc_t *proc)
{
    uint64_t key;
    memcpy(&key, &proc->super.proc_name, sizeof(key));
    return key;
}

/* ------------------------------------------------------------------------- */
/* Windows                                                                   */

/* The state segment every window exposes (UCX-allocated, so one-sided on a
 * node).  Each word sits on its own cache line: they are hit by different
 * processes for different reasons. */
#define OSC_UCXX_STATE_LOCK      0    /* passive-target lock word */
#define OSC_UCXX_STATE_COMPLETE  64   /* PSCW: completed access epochs */
#define OSC_UCXX_STATE_ACC_LOCKS 128  /* 32 accumulate stripe locks, 64 bytes apart */
#define OSC_UCXX_STATE_DYN_GEN   2304 /* dynamic windows: detaches so far */
#define OSC_UCXX_STATE_FENCE     2368 /* fences this process has called */
#define OSC_UCXX_STATE_SERVE     2432 /* peers on the node that need our CPU (see serve) */
#define OSC_UCXX_STATE_SIZE      4096 /* the fixed part; post slots follow */
/* PSCW: slot i counts the posts rank i has made to us, where rank i can
 * reach our state by loads and stores (one node).  Ranks beyond the slots,
 * or without a mapping, post by active message. */
#define OSC_UCXX_STATE_POSTS     OSC_UCXX_STATE_SIZE
#define OSC_UCXX_POST_SLOTS      1024

/* Lock word: readers count in the low 32 bits, a writer sets bit 32. */
#define OSC_UCXX_LOCK_EXCL       (1ULL << 32)
#define OSC_UCXX_LOCK_READERS    0xffffffffULL

/* What every peer published at window creation. */
typedef struct ompi_osc_ucxx_peer_t {
    uint64_t base;           /* remote virtual address of the window memory */
    uint64_t size;           /* window size in bytes */
    uint64_t state;          /* remote address of the state segment */
    int32_t disp_unit;
    uint32_t blob;           /* offset of this peer's packed rkeys in module->blobs */
    uint32_t data_rkey_len;
    uint32_t state_rkey_len;
    /* Direct mappings (ucp_rkey_ptr), resolved on first use of the peer; NULL
     * where UCX cannot map (user memory, no shared-memory transport). */
    volatile bool resolved;
    bool shared;             /* its user memory was shared on its node (osc_ucxx_share.c) */
    /* direct_data covers [direct_lo, direct_hi) (everything unless shared) */
    uint64_t direct_lo, direct_hi;
    volatile uint64_t fence_seen;  /* the peer has called this many fences */
    uint64_t posts_taken;          /* PSCW: its slot posts we have consumed */
    char *direct_data;
    char *direct_state;
    ucp_rkey_h direct_rkeys[2];
} ompi_osc_ucxx_peer_t;

/* (worker, window, peer) */
typedef struct ompi_osc_ucxx_link_t {
    ucp_ep_h ep;
    ucp_rkey_h data_rkey;
    ucp_rkey_h state_rkey;
    /* UCX operations issued on the link, and how many of them a completed
     * flush covered: a flush may skip the link only when they are equal
     * (another thread's flush in progress does not count). */
    volatile int64_t issued;
    volatile int64_t flushed;
    struct ompi_osc_ucxx_worker_t *worker;  /* set in a row's summary entry */
    struct ompi_osc_ucxx_dyncache_t *dyn;   /* dynamic windows: the target's regions */
    bool asked_service;     /* we counted ourselves in the target's STATE_SERVE */
} ompi_osc_ucxx_link_t;

/* Dynamic windows: a region attached here, and an origin's cache of a
 * target's regions (valid for one generation of the target). */
#define OSC_UCXX_MAX_RKEY 960
/* User memory shared on the node (osc_ucxx_share.c): target addresses
 * [lo, hi) are bytes [offset, offset + hi - lo) of POSIX shm object `name`. */
typedef struct {
    char name[48];           /* "" when not shared */
    uint64_t offset;
    uint64_t lo, hi;
} ompi_osc_ucxx_share_t;

/* MPI_Win_allocate_shared: one object holds every rank's segment, in rank
 * order; each process maps all of it. */
typedef struct ompi_osc_ucxx_shseg_t {
    char *map;
    size_t len;
    uint64_t *offsets;       /* rank r's segment: [offsets[r], offsets[r] + sizes[r]) */
    uint64_t *sizes;
} ompi_osc_ucxx_shseg_t;

int ompi_osc_ucxx_share_segment(struct ompi_communicator_t *comm, size_t size, bool noncontig,
                                ompi_osc_ucxx_shseg_t **seg, ompi_osc_ucxx_share_t *desc);
void ompi_osc_ucxx_share_segment_free(ompi_osc_ucxx_shseg_t *seg);
int ompi_osc_ucxx_shared_query(struct ompi_win_t *win, int rank, size_t *size, int *disp_unit,
                               void *baseptr);
void ompi_osc_ucxx_share_prepare(void);
int ompi_osc_ucxx_share_user(void *base, size_t len, ompi_osc_ucxx_share_t *desc);
char *ompi_osc_ucxx_share_map(ompi_proc_t *owner, const ompi_osc_ucxx_share_t *desc);
void ompi_osc_ucxx_share_fini(void);

typedef struct {
    uint64_t base;
    uint64_t len;
    ucp_mem_h memh;
    void *rkey;
    size_t rkey_len;
    ompi_osc_ucxx_share_t share;
} ompi_osc_ucxx_region_t;

typedef struct ompi_osc_ucxx_dyncache_t {
    uint64_t gen;
    /* The mapped range used last, [hot_lo, hot_hi), checked before anything
     * else while the target's generation (*gen_word, its state segment
     * mapped here) still equals gen; empty when hot_lo > hot_hi. */
    uint64_t hot_lo, hot_hi;
    intptr_t hot_delta;
    bool hot_partial;
    ucp_rkey_h hot_rkey;
    const volatile uint64_t *gen_word;
    int count, cap;
    struct ompi_osc_ucxx_dynentry_t {
        uint64_t base, len;
        ucp_rkey_h rkey;
        char *direct;        /* [dlo, dhi) mapped here (shared user memory), or NULL */
        uint64_t dlo, dhi;
    } *entries;
} ompi_osc_ucxx_dyncache_t;

/* Per-worker link arrays of one window, indexed by worker index.  Grows by
 * replacement (readers never take a lock); old tables are kept until free. */
typedef struct ompi_osc_ucxx_ltab_t {
    struct ompi_osc_ucxx_ltab_t *retired;
    int cap;
    volatile int used;       /* rows [used, cap) are all NULL */
    ompi_osc_ucxx_link_t *links[];
} ompi_osc_ucxx_ltab_t;

/* Epoch flags (module->epoch) */
#define OSC_UCXX_EPOCH_FENCE     0x1   /* after a fence without NOSUCCEED */
#define OSC_UCXX_EPOCH_START     0x2   /* PSCW access epoch */
#define OSC_UCXX_EPOCH_POST      0x4   /* PSCW exposure epoch */
#define OSC_UCXX_EPOCH_LOCK_ALL  0x8
#define OSC_UCXX_EPOCH_FENCE_OPS 0x10  /* an operation was issued in the fence epoch */
#define OSC_UCXX_EPOCH_FENCE_SYNC 0x20 /* opened without a barrier: check targets' fences */

typedef struct ompi_osc_ucxx_lock_t {
    int target;
    int type;                /* MPI_LOCK_SHARED / MPI_LOCK_EXCLUSIVE */
    bool taken;              /* false under MPI_MODE_NOCHECK */
} ompi_osc_ucxx_lock_t;

/* The shared core of a window: memory, peers, links and epochs.  Every
 * MPI_Win handle on it (the one MPI_Win_create & co. made, duplicates from
 * MPIX_Win_dup_with_info) is a view (below) holding a reference. */
typedef struct ompi_osc_ucxx_module_t {
    volatile int32_t refcount;      /* views on this core */
    bool original_freed;            /* the collective handle is gone */
    struct ompi_osc_ucxx_module_t *next_zombie;
    ompi_communicator_t *comm;
    uint32_t cid;
    int rank;
    int size;
    int flavor;

    /* Local memory */
    void *base;
    size_t len;
    int disp_unit;
    ucp_mem_h data_memh;
    ucp_mem_h state_memh;
    char *state;             /* local state segment */
    size_t state_size;
    ompi_osc_ucxx_share_t share;  /* MPI_Win_create memory shared on the node */
    struct ompi_osc_ucxx_shseg_t *shseg;  /* MPI_Win_allocate_shared: the group's segment */

    /* Published by peers */
    ompi_osc_ucxx_peer_t *peers;
    char *blobs;
    ompi_osc_ucxx_ltab_t *volatile ltab;

    /* Peers may reach this window through UCX emulation or active messages
     * (user memory, or no shared-memory mapping): our synchronization calls
     * serve them.  Always, if some peer cannot map our state segment; else
     * only while STATE_SERVE there is not zero (ompi_osc_ucxx_serve). */
    bool serve;
    bool serve_always;

    /* Info keys */
    bool no_locks;
    bool same_size;
    bool same_disp_unit;
    volatile int32_t am_outstanding;  /* accumulates sent as active messages, not acked */

    /* Epochs.  The flags are read without the lock on the fast path.
     * sync_lock guards short updates (lock list, links) and is never held
     * while waiting; acquire_lock serializes lock_all's lazy acquisitions;
     * post_lock guards what the active-message handler writes. */
    opal_mutex_t sync_lock;
    opal_mutex_t acquire_lock;
    opal_mutex_t post_lock;
    volatile int epoch;
    ompi_osc_ucxx_lock_t *locks;    /* MPI_Win_lock targets held */
    int num_locks, locks_cap;
    volatile int lock_all_assert;
    uint8_t *lock_all_taken;        /* bitmap: lock_all took the target's lock */
    int *lock_all_list, lock_all_count, lock_all_cap;
    ompi_group_t *start_group;
    int *start_ranks, start_count;
    uint8_t *start_map;             /* bitmap of start_ranks */
    ompi_group_t *post_group;
    uint64_t complete_expected;     /* PSCW: completions owed to our exposure epochs */
    int *posts_seen, posts_seen_count, posts_seen_cap;  /* from AM handler */
    /* Fences.  fence_open: the last fence had no NOSUCCEED; fence_count:
     * fences called.  Both change only at fences, so they agree on every
     * process.  An opening fence only publishes fence_count in our state
     * segment; peers check it before their first operation on us. */
    bool fence_open;
    uint64_t fence_count;
    opal_mutex_t open_lock;  /* held while waiting for a peer's fence or post */
    /* PSCW: start_map targets whose post we have not consumed yet */
    uint8_t *start_unposted;
    int start_unposted_count;

    /* Dynamic windows: attached regions, sorted by base */
    opal_mutex_t dyn_lock;
    ompi_osc_ucxx_region_t *regions;
    int nregions, regions_cap;
    uint64_t dyn_max_len;
} ompi_osc_ucxx_module_t;

/* One MPI_Win handle on a core, with the settings that may differ between
 * handles.  super must come first (Open MPI calls through it), then the
 * magic and extension table that libmpix_ucxx recognizes us by. */
typedef struct ompi_osc_ucxx_view_t {
    ompi_osc_base_module_t super;
    uint64_t magic;
    const struct ompi_osc_ucxx_ext_t *ext;
    ompi_osc_ucxx_module_t *core;
    bool original;           /* made collectively: its free is collective too */
    bool scope_thread;       /* mpi_win_scope=thread: flushes cover this thread only */
    bool ordered;            /* mpi_win_order=true */
    bool acc_ordered;        /* accumulate_ordering is not "none" */
    bool assert_intrinsic;   /* mpi_assert_accumulate_intrinsic=true */
    bool acc_single_intrinsic;
    /* Memory-handle windows: one target, displacements from the handle's base */
    bool memhandle;
    int mh_target;
    uint64_t mh_base, mh_size;
    int mh_disp_unit;
} ompi_osc_ucxx_view_t;

#define OSC_UCXX_VIEW(win) ((ompi_osc_ucxx_view_t *) (win)->w_osc_module)
#define OSC_UCXX_MODULE(win) (OSC_UCXX_VIEW(win)->core)

/* The worker an operation through this view goes on: under
 * mpi_win_order=true with process scope, every thread shares one ordered
 * stream (the main worker). */
static inline struct ompi_osc_ucxx_worker_t *ompi_osc_ucxx_view_worker(ompi_osc_ucxx_view_t *view);

/* Window creation and destruction (osc_ucxx_window.c) */
int ompi_osc_ucxx_window_create(struct ompi_win_t *win, void **base, size_t size,
                                int disp_unit, struct ompi_communicator_t *comm,
                                struct opal_info_t *info, int flavor, int *model);
int ompi_osc_ucxx_free(struct ompi_win_t *win);
ompi_osc_ucxx_link_t *ompi_osc_ucxx_link_resolve(ompi_osc_ucxx_module_t *module,
                                                 ompi_osc_ucxx_worker_t *worker, int target);
void ompi_osc_ucxx_peer_resolve_direct(ompi_osc_ucxx_module_t *module, int target);
ompi_osc_ucxx_module_t *ompi_osc_ucxx_window_lookup(uint32_t cid);

/* The link for (calling thread, module, target); NULL if it cannot be made. */
static inline ompi_osc_ucxx_link_t *ompi_osc_ucxx_link(ompi_osc_ucxx_module_t *module,
                                                       ompi_osc_ucxx_worker_t *worker,
                                                       int target)
{
    ompi_osc_ucxx_ltab_t *tab = module->ltab;
    if (OPAL_LIKELY(worker->index < tab->cap && NULL != tab->links[worker->index])) {
        ompi_osc_ucxx_link_t *link = &tab->links[worker->index][target];
        if (OPAL_LIKELY(NULL != link->ep)) {
            return link;
        }
    }
    return ompi_osc_ucxx_link_resolve(module, worker, target);
}

/* Count ourselves in the target's STATE_SERVE (where we map it) before we
 * need its CPU: +1 for good (want) or +1 then -1 around a request. */
void ompi_osc_ucxx_want_service(ompi_osc_ucxx_module_t *module, ompi_osc_ucxx_link_t *link,
                                int target);
void ompi_osc_ucxx_need_service(ompi_osc_ucxx_module_t *module, int target, int64_t delta);

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
 * so a flush that sees the count also covers the operation.  Each worker's row of
 * links has one extra entry at [size] that summarizes the row. */
static inline void ompi_osc_ucxx_link_dirty(ompi_osc_ucxx_module_t *module,
                                            ompi_osc_ucxx_link_t *link, int target)
{
    OPAL_THREAD_ADD_FETCH64(&link->issued, 1);
    OPAL_THREAD_ADD_FETCH64(&link[module->size - target].issued, 1);
    ompi_osc_ucxx_link_ask(module, link, target);
}

/* The peer's window memory mapped into ours, or NULL.  Resolved once per
 * (window, peer). */
static inline char *ompi_osc_ucxx_direct(ompi_osc_ucxx_module_t *module, int target)
{
    ompi_osc_ucxx_peer_t *peer = &module->peers[target];
    if (OPAL_UNLIKELY(!peer->resolved)) {
        ompi_osc_ucxx_peer_resolve_direct(module, target);
    }
    return peer->direct_data;
}

/* The peer's state segment mapped into ours, or NULL. */
static inline char *ompi_osc_ucxx_direct_state(ompi_osc_ucxx_module_t *module, int target)
{
    ompi_osc_ucxx_peer_t *peer = &module->peers[target];
    if (OPAL_UNLIKELY(!peer->resolved)) {
        ompi_osc_ucxx_peer_resolve_direct(module, target);
    }
    return peer->direct_state;
}

/* Called by every synchronization call: where peers' operations on this
 * window are emulated by UCX or carried by active messages (both handled on
 * our main worker), a process that only synchronizes locally must still
 * serve them.  Peers that map our state segment say when they need that
 * (STATE_SERVE), so that windows nobody emulates on skip the polling. */
static inline void ompi_osc_ucxx_serve(ompi_osc_ucxx_module_t *module)
{
    if (module->serve &&
        (module->serve_always ||
         0 != *(volatile int64_t *) (module->state + OSC_UCXX_STATE_SERVE))) {
        ucp_worker_progress(OSC_UCXX.main_worker->ucp);
        ompi_osc_ucxx_am_drain();
    }
}

/* How one operation reaches its target: through a mapping (loads, stores and
 * CPU atomics at remote address + delta) or through UCX (link + rkey). */
typedef struct {
    bool mapped;
    /* Mapped, but only part of the target's window or region is (shared user
     * memory keeps private edges): link and rkey are set too, and the
     * accumulates take them, so that every atomic on an element goes the
     * same way whatever range the operation covers. */
    bool partial;
    intptr_t delta;
    ompi_osc_ucxx_link_t *link;
    ucp_rkey_h rkey;
} ompi_osc_ucxx_path_t;

int ompi_osc_ucxx_dyn_resolve(ompi_osc_ucxx_module_t *module, ompi_osc_ucxx_worker_t *worker,
                              int target, uint64_t lo, uint64_t hi, ompi_osc_ucxx_path_t *path);

/* Resolve the path to the target bytes [lo, hi) (remote addresses). */
static inline int ompi_osc_ucxx_resolve(ompi_osc_ucxx_module_t *module,
                                        ompi_osc_ucxx_worker_t *worker, int target,
                                        uint64_t lo, uint64_t hi, ompi_osc_ucxx_path_t *path)
{
    char *direct;
    if (MPI_WIN_FLAVOR_DYNAMIC == module->flavor) {
        /* (our own regions need no link: dyn_resolve checks them directly) */
        ompi_osc_ucxx_link_t *link =
            target == module->rank ? NULL : ompi_osc_ucxx_link(module, worker, target);
        ompi_osc_ucxx_dyncache_t *c = NULL == link ? NULL : link->dyn;
        if (OPAL_LIKELY(NULL != c && lo >= c->hot_lo && hi <= c->hot_hi &&
                        *c->gen_word == c->gen)) {
            /* the region used last, still attached: as fast as allocated */
            path->mapped = true;
            path->partial = c->hot_partial;
            path->delta = c->hot_delta;
            path->link = link;
            path->rkey = c->hot_rkey;
            return OMPI_SUCCESS;
        }
        return ompi_osc_ucxx_dyn_resolve(module, worker, target, lo, hi, path);
    }
    direct = ompi_osc_ucxx_direct(module, target);
    path->partial = false;
    if (OPAL_LIKELY(NULL != direct && lo >= module->peers[target].direct_lo &&
                    hi <= module->peers[target].direct_hi)) {
        path->mapped = true;
        path->delta = (intptr_t) direct - (intptr_t) module->peers[target].base;
        if (OPAL_LIKELY(UINT64_MAX == module->peers[target].direct_hi)) {
            return OMPI_SUCCESS;
        }
        path->partial = true;
    } else {
        path->mapped = false;
    }
    path->link = ompi_osc_ucxx_link(module, worker, target);
    if (OPAL_UNLIKELY(NULL == path->link)) {
        return OMPI_ERR_UNREACH;
    }
    path->rkey = path->link->data_rkey;
    return OMPI_SUCCESS;
}

static inline ompi_osc_ucxx_worker_t *ompi_osc_ucxx_view_worker(ompi_osc_ucxx_view_t *view)
{
    if (OPAL_UNLIKELY(view->ordered && !view->scope_thread)) {
        return OSC_UCXX.main_worker;
    }
    return ompi_osc_ucxx_worker_self();
}

/* Is `rank` set in a bitmap of ranks (start_map, start_unposted)? */
static inline bool ompi_osc_ucxx_bit(const uint8_t *map, int rank)
{
    return 0 != (map[rank >> 3] & (1 << (rank & 7)));
}

/* ------------------------------------------------------------------------- */
/* Requests                                                                  */

typedef struct ompi_osc_ucxx_request_t {
    ompi_request_t super;
    volatile int32_t outstanding;    /* UCX operations + 1 while still issuing */
    volatile int32_t freed;          /* completion and user free: the second returns it */
    ompi_osc_ucxx_worker_t *worker;
} ompi_osc_ucxx_request_t;
OBJ_CLASS_DECLARATION(ompi_osc_ucxx_request_t);

int ompi_osc_ucxx_request_alloc(struct ompi_win_t *win, ompi_osc_ucxx_worker_t *worker,
                                ompi_osc_ucxx_request_t **req);
void ompi_osc_ucxx_request_op_done(ompi_osc_ucxx_request_t *req);
void ompi_osc_ucxx_request_ucx_cb(void *ucx_req, ucs_status_t status, void *user_data);
void ompi_osc_ucxx_request_abandon(ompi_osc_ucxx_request_t *req);

/* ------------------------------------------------------------------------- */
/* Communication (osc_ucxx_comm.c)                                           */

int ompi_osc_ucxx_check_access(ompi_osc_ucxx_module_t *module, int target);
int ompi_osc_ucxx_check_range(ompi_osc_ucxx_module_t *module, int target, ptrdiff_t disp,
                              int count, struct ompi_datatype_t *dt, uint64_t *remote,
                              uint64_t *lo, uint64_t *hi);
int ompi_osc_ucxx_state_atomic(ompi_osc_ucxx_module_t *module, int target, size_t offset,
                               ucp_atomic_op_t op, uint64_t value, uint64_t compare,
                               uint64_t *result);
int ompi_osc_ucxx_put(const void *origin_addr, int origin_count,
                      struct ompi_datatype_t *origin_dt, int target, ptrdiff_t target_disp,
                      int target_count, struct ompi_datatype_t *target_dt,
                      struct ompi_win_t *win);
int ompi_osc_ucxx_get(void *origin_addr, int origin_count, struct ompi_datatype_t *origin_dt,
                      int target, ptrdiff_t target_disp, int target_count,
                      struct ompi_datatype_t *target_dt, struct ompi_win_t *win);
int ompi_osc_ucxx_rput(const void *origin_addr, int origin_count,
                       struct ompi_datatype_t *origin_dt, int target, ptrdiff_t target_disp,
                       int target_count, struct ompi_datatype_t *target_dt,
                       struct ompi_win_t *win, struct ompi_request_t **request);
int ompi_osc_ucxx_rget(void *origin_addr, int origin_count, struct ompi_datatype_t *origin_dt,
                       int target, ptrdiff_t target_disp, int target_count,
                       struct ompi_datatype_t *target_dt, struct ompi_win_t *win,
                       struct ompi_request_t **request);

/* The data path with a view's settings (R*, Rr* and the plain calls) */
int ompi_osc_ucxx_put_get(ompi_osc_ucxx_view_t *view, bool is_put, void *origin_addr,
                          int origin_count, struct ompi_datatype_t *origin_dt, int target,
                          ptrdiff_t target_disp, int target_count,
                          struct ompi_datatype_t *target_dt, ompi_osc_ucxx_request_t *req);
int ompi_osc_ucxx_acc(ompi_osc_ucxx_view_t *view, const void *origin_addr, int origin_count,
                      struct ompi_datatype_t *origin_dt, void *result_addr, int result_count,
                      struct ompi_datatype_t *result_dt, int target, ptrdiff_t target_disp,
                      int target_count, struct ompi_datatype_t *target_dt,
                      struct ompi_op_t *op, bool fetch, ompi_osc_ucxx_request_t *req);
bool ompi_osc_ucxx_intrinsic(ompi_osc_ucxx_module_t *module);
int ompi_osc_ucxx_view_range(ompi_osc_ucxx_view_t *view, int target, ptrdiff_t disp, int count,
                             struct ompi_datatype_t *dt, uint64_t *remote, uint64_t *lo,
                             uint64_t *hi);

/* Views, the extension table (osc_ucxx_window.c, osc_ucxx_ext.c) */
ompi_osc_ucxx_view_t *ompi_osc_ucxx_view_new(ompi_osc_ucxx_module_t *core, bool original);
void ompi_osc_ucxx_core_release(ompi_osc_ucxx_module_t *module, bool collective);
void ompi_osc_ucxx_module_release(ompi_osc_ucxx_module_t *module);
void ompi_osc_ucxx_subscribe_info(struct ompi_win_t *win);
extern const struct ompi_osc_ucxx_ext_t ompi_osc_ucxx_ext;

/* Accumulates (osc_ucxx_accumulate.c) */
int ompi_osc_ucxx_accumulate(const void *origin_addr, int origin_count,
                             struct ompi_datatype_t *origin_dt, int target,
                             ptrdiff_t target_disp, int target_count,
                             struct ompi_datatype_t *target_dt, struct ompi_op_t *op,
                             struct ompi_win_t *win);
int ompi_osc_ucxx_compare_and_swap(const void *origin_addr, const void *compare_addr,
                                   void *result_addr, struct ompi_datatype_t *dt, int target,
                                   ptrdiff_t target_disp, struct ompi_win_t *win);
int ompi_osc_ucxx_fetch_and_op(const void *origin_addr, void *result_addr,
                               struct ompi_datatype_t *dt, int target, ptrdiff_t target_disp,
                               struct ompi_op_t *op, struct ompi_win_t *win);
int ompi_osc_ucxx_get_accumulate(const void *origin_addr, int origin_count,
                                 struct ompi_datatype_t *origin_dt, void *result_addr,
                                 int result_count, struct ompi_datatype_t *result_dt,
                                 int target, ptrdiff_t target_disp, int target_count,
                                 struct ompi_datatype_t *target_dt, struct ompi_op_t *op,
                                 struct ompi_win_t *win);
int ompi_osc_ucxx_raccumulate(const void *origin_addr, int origin_count,
                              struct ompi_datatype_t *origin_dt, int target,
                              ptrdiff_t target_disp, int target_count,
                              struct ompi_datatype_t *target_dt, struct ompi_op_t *op,
                              struct ompi_win_t *win, struct ompi_request_t **request);
int ompi_osc_ucxx_rget_accumulate(const void *origin_addr, int origin_count,
                                  struct ompi_datatype_t *origin_dt, void *result_addr,
                                  int result_count, struct ompi_datatype_t *result_dt,
                                  int target, ptrdiff_t target_disp, int target_count,
                                  struct ompi_datatype_t *target_dt, struct ompi_op_t *op,
                                  struct ompi_win_t *win, struct ompi_request_t **request);

/* Active target (osc_ucxx_active_target.c) */
int ompi_osc_ucxx_fence(int assert, struct ompi_win_t *win);
int ompi_osc_ucxx_start(struct ompi_group_t *group, int assert, struct ompi_win_t *win);
int ompi_osc_ucxx_complete(struct ompi_win_t *win);
int ompi_osc_ucxx_post(struct ompi_group_t *group, int assert, struct ompi_win_t *win);
int ompi_osc_ucxx_wait(struct ompi_win_t *win);
int ompi_osc_ucxx_test(struct ompi_win_t *win, int *flag);
void ompi_osc_ucxx_post_arrived(ompi_osc_ucxx_module_t *module, int from);
int ompi_osc_ucxx_fence_sync(ompi_osc_ucxx_module_t *module, int target);
int ompi_osc_ucxx_start_sync(ompi_osc_ucxx_module_t *module, int target);

/* Passive target (osc_ucxx_passive_target.c) */
int ompi_osc_ucxx_lock(int lock_type, int target, int assert, struct ompi_win_t *win);
int ompi_osc_ucxx_unlock(int target, struct ompi_win_t *win);
int ompi_osc_ucxx_lock_all(int assert, struct ompi_win_t *win);
int ompi_osc_ucxx_unlock_all(struct ompi_win_t *win);
int ompi_osc_ucxx_sync(struct ompi_win_t *win);
int ompi_osc_ucxx_flush(int target, struct ompi_win_t *win);
int ompi_osc_ucxx_flush_all(struct ompi_win_t *win);
int ompi_osc_ucxx_flush_local(int target, struct ompi_win_t *win);
int ompi_osc_ucxx_flush_local_all(struct ompi_win_t *win);
int ompi_osc_ucxx_flush_module(ompi_osc_ucxx_module_t *module, int target,
                               ompi_osc_ucxx_worker_t *only);
int ompi_osc_ucxx_flush_link(ompi_osc_ucxx_module_t *module, ompi_osc_ucxx_worker_t *worker,
                             ompi_osc_ucxx_link_t *link);
int ompi_osc_ucxx_lock_all_acquire(ompi_osc_ucxx_module_t *module, int target);

/* Active messages (osc_ucxx_am.c) */
typedef struct {
    uint32_t cid;      /* window communicator's context id */
    int32_t from;      /* sender's rank in the window */
} ompi_osc_ucxx_am_hdr_t;

#define OSC_UCXX_AM_POST       1   /* MPI_Win_post notification */
#define OSC_UCXX_AM_ACC        2   /* accumulate-family operation for the target */
#define OSC_UCXX_AM_ACC_REPLY  3   /* its acknowledgement, with old values if fetching */
#define OSC_UCXX_AM_REGION_REQ 4   /* dynamic windows: which region holds [lo, hi)? */
#define OSC_UCXX_AM_REGION_REPLY 5
#define OSC_UCXX_AM_MAX        6   /* ids registered with UCX are below this */
#define OSC_UCXX_AM_SEND       6   /* queue only: a message to send outside a callback */
#define OSC_UCXX_AM_KINDS      7

/* Handle a message (header first in buf).  `deferred`: running from the
 * queue, outside UCX callbacks.  OMPI_ERR_WOULD_BLOCK: queue it, retry later. */
typedef int (*ompi_osc_ucxx_am_handler_fn_t)(ompi_osc_ucxx_module_t *module, int from,
                                             void *buf, size_t len, bool deferred);
int ompi_osc_ucxx_am_register(ompi_osc_ucxx_worker_t *worker);
void ompi_osc_ucxx_am_fini(void);
void ompi_osc_ucxx_am_set_handler(int kind, ompi_osc_ucxx_am_handler_fn_t fn);
int ompi_osc_ucxx_am_defer(int kind, ompi_osc_ucxx_module_t *module, int peer,
                           const void *data, size_t len);
int ompi_osc_ucxx_am_send(ompi_osc_ucxx_module_t *module, ompi_osc_ucxx_worker_t *worker,
                          int target, unsigned id, void *buf, size_t hlen, size_t len);
int ompi_osc_ucxx_am_drain(void);
int ompi_osc_ucxx_am_reply(ompi_osc_ucxx_module_t *module, int to, unsigned id,
                           const void *msg, size_t hlen, size_t len, bool deferred);
int ompi_osc_ucxx_am_send_post(ompi_osc_ucxx_module_t *module, int target);
void ompi_osc_ucxx_acc_am_init(void);

/* Dynamic windows (osc_ucxx_dynamic.c) */
int ompi_osc_ucxx_attach(struct ompi_win_t *win, void *base, size_t len);
int ompi_osc_ucxx_detach(struct ompi_win_t *win, const void *base);
bool ompi_osc_ucxx_dyn_contains(ompi_osc_ucxx_module_t *module, uint64_t lo, uint64_t hi);
void ompi_osc_ucxx_dyn_release(ompi_osc_ucxx_module_t *module);
void ompi_osc_ucxx_dyn_cache_free(ompi_osc_ucxx_dyncache_t *cache);
void ompi_osc_ucxx_dyn_am_init(void);

END_C_DECLS

#endif /* OMPI_OSC_UCXX_H */
