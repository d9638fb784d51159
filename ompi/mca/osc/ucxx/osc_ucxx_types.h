/*
 * Copyright (c) 2026 The osc/ucxx authors. All rights reserved.
 * $COPYRIGHT$
 *
 * osc/ucxx, bottom layer: the component, the names of every object, the
 * state segment's layout, and the conventions the other files follow.
 *
 * Headers build on each other in this order, and no header includes one
 * above it:
 *   osc_ucxx_compat.h   the Open MPI 4.1 / 5.0 differences
 *   osc_ucxx_types.h    this file
 *   osc_ucxx_worker.h   UCP context, per-thread workers, endpoints, progress
 *   osc_ucxx_window.h   the window core (memory, peers, epochs) and its views
 *   osc_ucxx_target.h   per-peer state, links, the path to target memory, and
 *                       the target object every operation resolves first
 *   osc_ucxx_state.h    every operation on a state-segment word (locks,
 *                       counters) and the CPU-vs-UCX atomics policy
 *   osc_ucxx_epoch.h    access epochs: which targets an operation may reach
 *   then the concerns that use them: osc_ucxx_request.h, osc_ucxx_am.h,
 *   osc_ucxx_complete.h, osc_ucxx_dynamic.h, osc_ucxx_share.h,
 *   osc_ucxx_prefault.h, osc_ucxx_cma.h, osc_ucxx_dt.h, and osc_ucxx.h (the
 *   osc entry points the module table names).  docs/architecture.md has the
 *   .c files' layers.
 *
 * Error codes: functions return OMPI_SUCCESS or an OMPI_ERR_* code where
 * Open MPI has one for the class (RMA_SYNC, RMA_RANGE, RMA_ATTACH,
 * RMA_SHARED, RMA_FLAVOR, WIN, OUT_OF_RESOURCE, UNREACH, ...), and the
 * MPI_ERR_* class itself for the classes it has none for (MPI_ERR_RANK,
 * MPI_ERR_TYPE, MPI_ERR_OP, MPI_ERR_ASSERT, MPI_ERR_GROUP, MPI_ERR_BASE,
 * MPI_ERR_ARG, MPI_ERR_SIZE, MPI_ERR_DISP).  Open MPI's bindings turn both
 * into the MPI class the window's error handler sees.
 *
 * Threads: more than one thread may run inside the component under
 * MPI_THREAD_MULTIPLE, and also at any thread level when our progress
 * thread runs (it handles active messages while the application is in MPI).
 * Open MPI's OPAL_THREAD_* macros do nothing below MPI_THREAD_MULTIPLE, so
 * the component uses its own, which follow OSC_UCXX.mt.  Its object
 * reference counts (OBJ_RETAIN, OBJ_RELEASE) are plain there too: the
 * progress thread leaves every count the application's threads may change
 * to them (ompi_osc_ucxx_obj_release).
 */

#ifndef OMPI_OSC_UCXX_TYPES_H
#define OMPI_OSC_UCXX_TYPES_H

#include "ompi_config.h"
#include "osc_ucxx_compat.h" /* the 4.1 / 5.0 differences */

#include <pthread.h>
#include <sched.h>
#include <stddef.h>
#include <ucp/api/ucp.h>

#include "opal/class/opal_free_list.h"
#include "opal/class/opal_hash_table.h"
#include "opal/class/opal_object.h"
#include "opal/util/output.h"
#include "opal/util/show_help.h"

#include "ompi/communicator/communicator.h"
#include "ompi/mca/osc/base/base.h"
#include "ompi/mca/osc/osc.h"

BEGIN_C_DECLS

/* A peer's state or memory that this process was to map (the window's
 * policy counts on every process mapping every other's) and could not at
 * its first access: descriptors or address space exhausted, the peer's
 * file refused.  No UCX path is set up for it then: the access fails with
 * the class of memory that cannot be shared. */
#define OSC_UCXX_ERR_UNMAPPED OMPI_ERR_RMA_SHARED

/* Every object, by name (defined in the layer that owns it). */
typedef struct ompi_osc_ucxx_worker_t ompi_osc_ucxx_worker_t;     /* worker.h */
typedef struct ompi_osc_ucxx_rkey_t ompi_osc_ucxx_rkey_t;         /* rkey.c */
typedef struct ompi_osc_ucxx_module_t ompi_osc_ucxx_module_t;     /* window.h: the core */
typedef struct ompi_osc_ucxx_view_t ompi_osc_ucxx_view_t;         /* window.h: a handle */
typedef struct ompi_osc_ucxx_peer_t ompi_osc_ucxx_peer_t;         /* target.h */
typedef struct ompi_osc_ucxx_link_t ompi_osc_ucxx_link_t;         /* target.h */
typedef struct ompi_osc_ucxx_ltab_t ompi_osc_ucxx_ltab_t;         /* target.h */
typedef struct ompi_osc_ucxx_lrow_t ompi_osc_ucxx_lrow_t;         /* target.h */
typedef struct ompi_osc_ucxx_dyncache_t ompi_osc_ucxx_dyncache_t; /* target.h */
typedef struct ompi_osc_ucxx_target_t ompi_osc_ucxx_target_t;     /* target.h */
typedef struct ompi_osc_ucxx_epoch_t ompi_osc_ucxx_epoch_t;       /* epoch.h */
typedef struct ompi_osc_ucxx_request_t ompi_osc_ucxx_request_t;   /* request.h */
typedef struct ompi_osc_ucxx_shseg_t ompi_osc_ucxx_shseg_t;       /* share.h */
typedef struct ompi_osc_ucxx_uam_t ompi_osc_ucxx_uam_t;           /* uam_internal.h */
typedef struct ompi_osc_ucxx_shared_comm_t ompi_osc_ucxx_shared_comm_t;  /* wcomm.c */
typedef struct ompi_osc_ucxx_audit_t ompi_osc_ucxx_audit_t;       /* audit.c */
typedef struct ompi_osc_ucxx_pent_t ompi_osc_ucxx_pent_t;         /* ptab.c */
typedef struct ompi_osc_ucxx_pmap_t ompi_osc_ucxx_pmap_t;         /* ptab.c */
typedef struct ompi_osc_ucxx_lockq_t ompi_osc_ucxx_lockq_t;       /* lockq.c */
typedef struct ompi_osc_ucxx_lazy_t ompi_osc_ucxx_lazy_t;         /* lazy.c */

/* ------------------------------------------------------------------------- */
/* Component                                                                 */

#define OSC_UCXX_KEPT_MAX 32    /* freed window allocations kept at most */

typedef struct ompi_osc_ucxx_component_t {
    ompi_osc_base_component_t super;

    /* MCA parameters */
    int priority;
    int verbose;
    bool use_direct;          /* load/store/CPU atomics through ucp_rkey_ptr */
    bool per_thread_workers;  /* one worker per thread under MPI_THREAD_MULTIPLE */
    int post_poll_interval;   /* wait loops: ucp progress calls per opal_progress */
    int yield_after;          /* wait loops: empty polls before they start to yield */
    int fence_by_flush;       /* ordering by endpoint flush: 1, 0, -1 auto (fence_link) */
    bool fence_barrier;       /* fences synchronize through state segments where they can */
    int max_rails;            /* UCX_MAX_RNDV_RAILS for our context (0: UCX's default) */
    int progress_thread;      /* serve peers from a thread of our own: 1, 0, -1 auto
                               * (ompi_osc_ucxx_progress_thread_wanted) */
    int progress_interval_us; /* its sleep when there was nothing to do (a test hook) */
    bool early_start;         /* bring UCX up during MPI_Init (osc_ucxx_early.c) */
    bool prefault;            /* populate peers' mapped chunks before large copies (comm.c) */
    unsigned long alloc_cache;  /* bytes of freed windows' allocations kept (window.c) */
    bool keep_comm;           /* windows' communicators shared or kept (osc_ucxx_wcomm.c) */
    unsigned comm_windows;    /* ... window ids on one shared communicator */
    int peer_cap;             /* peers that may hold state here at once (osc_ucxx_ptab.c) */
    bool progress_wait;       /* ... sleeping on the worker's event fd when idle (false:
                               * polls, a test hook; also where UCX gives no fd) */
    /* Accumulates (osc_ucxx_accumulate.c, osc_ucxx_acc_am.c) */
    unsigned long acc_granularity;  /* stripe block bytes, unless the window's info says */
    unsigned long acc_hold;   /* bytes of target span one exclusion covers at most */
    unsigned long acc_am_chunk;     /* value bytes per accumulate message */
    int acc_am_inflight;      /* messages of one accumulate in flight at most */
    unsigned acc_vector;      /* vector bytes of the inline sums asked for (0: widest) */
    unsigned acc_vector_used; /* ... that the CPU has (ompi_osc_ucxx_acc_entries) */
    /* User active messages (osc_ucxx_uam.c) */
    unsigned long am_sysbuf;  /* internal staging bytes per origin per window */
    unsigned long am_chunk;   /* staging bytes am_pipeline_unit=auto aims at */
    unsigned long am_eager;   /* larger chunks and outputs go rendezvous */
    unsigned long am_grant_max;  /* largest user-buffer grant to one origin */
    int amv_pack_threshold;   /* AMV: pack outputs below this % of the maximum */
    bool am_origin_compute;   /* run handlers at the origin where the target is mapped */
    bool am_exclusive_detect; /* exclusive-lock holders reserve the whole user buffer */
    int progress_efd;         /* wait mode: the epoll set of the main worker and wake_fd */
    int progress_wake_fd;     /* eventfd: work was deferred for the waiting thread */
    int progress_busy_fd;     /* ... and one always ready (a test hook: test_busy_fd) */
    bool test_busy_fd;
    bool inline_keys;         /* rkeys in the creation records across nodes (a test hook) */
    int node_posts;           /* ranks up to which an MPI_Win_allocate segment of the node
                               * holds their post slots (osc_ucxx_share.c; a test hook) */
    volatile int32_t progress_sleeping;
    volatile int32_t progress_hold;  /* parked on request (osc_ucxx_progress.c) */
    volatile uint32_t app_polls;  /* progress calls by application threads */
    pthread_t progress_tid;
    volatile bool progress_stop;
    bool progress_running;

    int output;               /* opal_output stream for verbose diagnostics */
    bool enable_mpi_threads;
    bool mt;                  /* several threads may be inside the component */
    ucs_thread_mode_t thread_mode;
    bool order_by_flush;      /* order by endpoint flush, not ucp_worker_fence (fence_link) */
    bool device_atomics;      /* UCX may apply our atomics with a device, not the CPU
                               * (osc_ucxx_worker.c; the atomics policy, docs/atomics.md) */
    bool test_device_atomics; /* say so where no device is (OSC_UCXX_TEST_TUNE device_atomics=1:
                               * UCX-atomic locks over TCP, as on an RDMA network) */
    bool modex_ok;            /* our worker address and shared memory are in the modex
                               * for the processes on the node (osc_ucxx_early.c) */

    /* Created on the first window, destroyed at finalize */
    ucp_context_h context;
    opal_mutex_t lock;        /* workers, peer addresses, window table */
    ompi_osc_ucxx_worker_t *main_worker;     /* the worker peers connect to */
    ucp_address_t *main_addr;       /* its address, packed once (ompi_osc_ucxx_main_address) */
    size_t main_addr_len;
    ompi_osc_ucxx_worker_t *only_worker;     /* main_worker where it is every thread's
                                              * (below MPI_THREAD_MULTIPLE): no TLS
                                              * lookup per operation */
    bool links_shared;        /* ... and threads use it at once (MPI_THREAD_MULTIPLE,
                               * osc_ucxx_per_thread_workers=0): its links, and their
                               * dynamic-window caches, are every thread's */
    ompi_osc_ucxx_worker_t **volatile workers;  /* every worker, by index */
    volatile int num_workers;
    int workers_cap;
    pthread_key_t tls_key;    /* returns a dead thread's worker to the pool */
    bool tls_key_created;
    opal_hash_table_t peer_addrs;  /* proc name -> ompi_osc_ucxx_addr_t */
    opal_hash_table_t windows;     /* communicator id -> core */
    ompi_osc_ucxx_module_t *zombies;  /* kept until finalize (see core_release) */
    struct { ucp_mem_h memh; void *addr; size_t len; uint64_t off; uint32_t serial; }
        kept[OSC_UCXX_KEPT_MAX];
                                            /* freed window allocations for reuse (window.c) */
    int num_kept;
    uint32_t alloc_serial;          /* UCX allocations made (their serial numbers) */
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

/* Locks and counters shared between threads (see "Threads" above). */
#define OSC_UCXX_MT_ONLY(call)                                                \
    do {                                                                      \
        if (OSC_UCXX.mt) call;                                                \
    } while (0)
#define OSC_UCXX_LOCK(m) OSC_UCXX_MT_ONLY(opal_mutex_lock(m))
#define OSC_UCXX_UNLOCK(m) OSC_UCXX_MT_ONLY(opal_mutex_unlock(m))

/* A lock held for a few instructions on the paths that open and close
 * epochs: one compare-and-swap to take it and a plain store to give it back,
 * where a pthread mutex costs two locked instructions and two calls (in an
 * MPI_THREAD_MULTIPLE lock_all + put + flush + unlock_all loop, a third of
 * the time).  A waiter yields the core after 64 polls: threads outnumber
 * cores in oversubscribed jobs, and the holder may itself be waiting (for a
 * target's shared lock, a post), progressing as it does. */
typedef struct {
    volatile int32_t held;
} ompi_osc_ucxx_spin_t;

static inline void ompi_osc_ucxx_spin_lock(ompi_osc_ucxx_spin_t *s)
{
    int32_t free_ = 0;
    unsigned polls = 0;
    while (!opal_atomic_compare_exchange_strong_acq_32(&s->held, &free_, 1)) {
        do {  /* waiters read (the line stays shared) until it looks free */
            if (0 == ++polls % 64) sched_yield();
        } while (0 != s->held);
        free_ = 0;
    }
}

static inline void ompi_osc_ucxx_spin_unlock(ompi_osc_ucxx_spin_t *s)
{
    /* a release: the holder's loads and stores before it (a write barrier
     * alone orders only stores, on weakly ordered CPUs) */
    __atomic_store_n(&s->held, 0, __ATOMIC_RELEASE);
}

#define OSC_UCXX_SPIN_LOCK(s) OSC_UCXX_MT_ONLY(ompi_osc_ucxx_spin_lock(s))
#define OSC_UCXX_SPIN_UNLOCK(s) OSC_UCXX_MT_ONLY(ompi_osc_ucxx_spin_unlock(s))

static inline int32_t ompi_osc_ucxx_add32(volatile int32_t *p, int32_t v)
{
    if (OSC_UCXX.mt) return opal_atomic_add_fetch_32(p, v);
    return *p += v;
}

static inline int64_t ompi_osc_ucxx_add64(volatile int64_t *p, int64_t v)
{
    if (OSC_UCXX.mt) return opal_atomic_add_fetch_64(p, v);
    return *p += v;
}

/* Inside a user active-message handler (osc_ucxx_uam_exec.c): the component's
 * calls return MPI_ERR_OTHER there, and no handler runs inside another.
 * The process-wide count is tested first: a thread-local variable of a
 * dlopen()ed library costs a __tls_get_addr call, which every RMA operation
 * would otherwise pay. */
extern volatile int32_t ompi_osc_ucxx_handlers;
extern __thread int ompi_osc_ucxx_in_handler;
#define OSC_UCXX_IN_HANDLER()                                                 \
    (OPAL_UNLIKELY(0 != ompi_osc_ucxx_handlers) && ompi_osc_ucxx_in_handler)
#define OSC_UCXX_NOT_IN_HANDLER()                                             \
    do {                                                                      \
        if (OSC_UCXX_IN_HANDLER()) return MPI_ERR_OTHER;                      \
    } while (0)

/* A peer's published worker address. */
typedef struct {
    size_t len;
    char addr[];
} ompi_osc_ucxx_addr_t;

/* ------------------------------------------------------------------------- */
/* The state segment                                                         */

/* Every window exposes one: a lock word, counters, exclusion words, of the
 * same size whatever the number of processes, so that a process's state
 * segments lie densely in its state arenas (osc_ucxx_memory.c) and a peer
 * maps a page of them for four windows (an MPI_Win_allocate window's too:
 * not in its memory's pages).  Only osc_ucxx_state.c touches these words.
 *
 * Words that different processes change for different reasons, and every
 * word UCX may apply atomics to (lock, fence, dyn_gen), sit on a cache line
 * of their own (ompi_osc_ucxx_word_t).  The others are packed 8 bytes apart
 * (ompi_osc_ucxx_slot_t): the fence barrier's slots (one writer each), the
 * accumulate stripe locks (CPU atomics only, and the processes that take
 * them work on the window memory, whose lines they share anyway), and the
 * owner's core with the post array's place.  Packing never puts a word of
 * one kind of atomics next to one of the other on a line.
 *
 * PSCW post slots (one per origin rank, up to OSC_UCXX_POST_SLOTS) are not
 * here: they grow with the window's size, and only PSCW needs them, so they
 * are an allocation of their own (a post arena's), whose place in the
 * owner's shared memory `posts_at` gives; a peer maps the page of its slot
 * at its first post (ompi_osc_ucxx_peer_post_slot). */
#define OSC_UCXX_STRIPES 32          /* accumulate stripe locks */
#define OSC_UCXX_STRIPES_ALL 0xffffffffu  /* a mask that takes acc_all instead */
#define OSC_UCXX_POST_SLOTS 1024     /* PSCW post slots (origin ranks below) */
#define OSC_UCXX_BARRIER_ROUNDS 32   /* fence barrier: rounds for 2^32 processes */

typedef struct {
    volatile uint64_t value;
    char pad[56];
} ompi_osc_ucxx_word_t;

typedef struct {
    volatile uint64_t value;
} ompi_osc_ucxx_slot_t;

typedef struct ompi_osc_ucxx_state_t {
    ompi_osc_ucxx_word_t lock;       /* passive-target lock word */
    ompi_osc_ucxx_word_t complete;   /* PSCW: access epochs completed on us */
    ompi_osc_ucxx_word_t fence;      /* fences this process has called */
    ompi_osc_ucxx_word_t dyn_gen;    /* dynamic windows: detaches so far */
    ompi_osc_ucxx_word_t serve;      /* peers on the node that need our CPU */
    ompi_osc_ucxx_word_t am_exec;    /* user active messages: handlers running on our
                                      * memory (a reader/writer word like lock) */
    ompi_osc_ucxx_word_t acc_all;    /* accumulates: held by one bulk accumulate
                                      * that excludes every stripe at once */
    /* Written by the owner alone: the core it entered the last fence
     * barrier on, and (once, at creation) where its post slots lie in its
     * shared memory (OSC_UCXX_SEG_NONE: nowhere a peer maps). */
    ompi_osc_ucxx_slot_t cpu;
    ompi_osc_ucxx_slot_t posts_at;
    char pad[48];
    /* Fence barrier (osc_ucxx_state.c): slot k holds the last barrier that
     * the process 2^k ranks before us reached; one writer each. */
    volatile uint64_t barrier[OSC_UCXX_BARRIER_ROUNDS];
    ompi_osc_ucxx_slot_t acc_locks[OSC_UCXX_STRIPES];  /* stripe s covers the
                                      * window's blocks b (the target's block
                                      * size: peer->acc_shift) with
                                      * ompi_osc_ucxx_stripe_of(b) == s */
} ompi_osc_ucxx_state_t;

/* Byte offset of a word in the segment (what UCX atomics address). */
#define OSC_UCXX_STATE(field) offsetof(ompi_osc_ucxx_state_t, field)
/* Post slot i, named as if it followed the segment (the atomics audit). */
#define OSC_UCXX_STATE_POST(i) (sizeof(ompi_osc_ucxx_state_t) + (size_t) (i) * sizeof(uint64_t))

_Static_assert(sizeof(ompi_osc_ucxx_word_t) == 64, "one word per cache line");
_Static_assert(OSC_UCXX_STATE(lock) == 0, "the lock word leads the segment");
_Static_assert(OSC_UCXX_STATE(barrier) % 64 == 0 && OSC_UCXX_STATE(acc_locks) % 64 == 0,
               "the barrier slots and the stripe locks start on cache lines of their own");
_Static_assert(sizeof(ompi_osc_ucxx_state_t) == 1024, "four segments in 4 KiB");

/* Lock word: readers count in the low 32 bits, a writer sets bit 32.
 * Target-managed locks (osc_ucxx_lockq.c): the owner sets bit 40 while
 * origins wait in its queue. */
#define OSC_UCXX_LOCK_EXCL    (1ULL << 32)
#define OSC_UCXX_LOCK_READERS 0xffffffffULL
#define OSC_UCXX_LOCK_QUEUED  (1ULL << 40)

/* Dynamic windows: the regions attached here as the peers on the node read
 * them, with loads, without asking (osc_ucxx_dyntab.c): 1 KiB of our
 * shared memory, the size of a state segment and from its arenas (four to
 * a page, so that a peer maps a page for several windows), sorted by
 * base.  `seq` is odd while the owner changes the table (a reader that
 * saw it change reads again); `count` past
 * OSC_UCXX_DYNTAB_MAX says the regions do not fit (readers ask the owner,
 * as off the node).  `max_len`: the longest region ever attached (where a
 * region that may hold an address starts at the earliest). */
#define OSC_UCXX_DYNTAB_SIZE 1024
typedef struct {
    volatile uint64_t seq;
    volatile uint64_t count;
    volatile uint64_t max_len;
    uint64_t pad;
    struct {
        volatile uint64_t base, len;
    } regions[];
} ompi_osc_ucxx_dyntab_t;
#define OSC_UCXX_DYNTAB_MAX \
    ((OSC_UCXX_DYNTAB_SIZE - sizeof(ompi_osc_ucxx_dyntab_t)) / (2 * sizeof(uint64_t)))

/* Dynamic windows: a region attached here. */
#define OSC_UCXX_MAX_RKEY 960
typedef struct {
    uint64_t base;
    uint64_t len;
    ucp_mem_h memh;
    void *rkey;
    size_t rkey_len;
} ompi_osc_ucxx_region_t;

static inline uint64_t ompi_osc_ucxx_name_key(const opal_process_name_t *name)
{
    uint64_t key;
    memcpy(&key, name, sizeof(key));
    return key;
}

static inline uint64_t ompi_osc_ucxx_proc_key(ompi_proc_t *proc)
{
    return ompi_osc_ucxx_name_key(&proc->super.proc_name);
}

END_C_DECLS

#endif /* OMPI_OSC_UCXX_TYPES_H */
