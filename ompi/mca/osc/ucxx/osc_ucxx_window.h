/*
 * Copyright (c) 2026 The osc/ucxx authors. All rights reserved.
 * $COPYRIGHT$
 *
 * osc/ucxx, third layer: a window is a core (memory, state segment, what
 * peers published, links, epochs) shared by one or more views, each an
 * MPI_Win handle with the settings that may differ between handles (the
 * handle MPI_Win_create & co. made, duplicates from MPIX_Win_dup_with_info,
 * memory-handle windows).  Creation, destruction and info keys live in
 * osc_ucxx_window.c.
 */

#ifndef OMPI_OSC_UCXX_WINDOW_H
#define OMPI_OSC_UCXX_WINDOW_H

#include "osc_ucxx_worker.h"
#include "opal/runtime/opal_progress.h"
#include "osc_ucxx_ext.h"

BEGIN_C_DECLS

/* How single elements of acc_single_intrinsic handles change window memory:
 * one kind per window, agreed at creation (osc_ucxx_policy.c). */
enum {
    OSC_UCXX_SINGLE_STRIPES,  /* under the stripe locks, as every other accumulate */
    OSC_UCXX_SINGLE_CPU,      /* one lock-free CPU atomic (all map all memory) */
    OSC_UCXX_SINGLE_UCX       /* one UCX atomic, by every process, the owner too */
};

/* Who changes a window's passive-target lock words: one protocol per
 * window, agreed at creation (osc_ucxx_policy.c). */
enum {
    OSC_UCXX_LOCKS_CPU,       /* one-sided, CPU atomics (every process maps every state) */
    OSC_UCXX_LOCKS_UCX,       /* one-sided, UCX atomics (a device applies them everywhere) */
    OSC_UCXX_LOCKS_TARGET     /* the target's CPU, queued (messages; osc_ucxx_lockq.c), and
                               * the CPU atomics of peers that map the word */
};

/* The UCX atomics of the processes of a window (creation exchange):
 * applied by a device somewhere, by the CPU somewhere. */
#define OSC_UCXX_MODES_DEVICE 0x1
#define OSC_UCXX_MODES_CPU    0x2

/* The core, an OPAL object: its destructor takes down everything it holds
 * (ompi_osc_ucxx_module_release drops the last reference). */
struct ompi_osc_ucxx_module_t {
    opal_object_t super;
    volatile int32_t refcount;      /* views on this core */
    bool original_freed;            /* the collective handle is gone */
    volatile bool ready;            /* created: its active messages may run (am.c) */
    ompi_osc_ucxx_module_t *next_zombie;
    ompi_communicator_t *comm;      /* ours (osc_ucxx_wcomm.c) */
    struct ompi_osc_ucxx_wcomm_t *wcomm;  /* the application communicator's entry */
    ompi_osc_ucxx_shared_comm_t *shared_comm;  /* `comm`, if shared with other windows */
    bool keep_comm;                 /* every process leaves `comm` to the next window */
    uint32_t cid;                   /* the window's id on the wire (osc_ucxx_wcomm.c) */
    int rank;
    int size;
    int flavor;

    /* Local memory */
    void *base;
    size_t len;
    int disp_unit;
    ucp_mem_h data_memh;
    ucp_mem_h state_memh;           /* a state arena's (osc_ucxx_memory.c) */
    size_t state_len;               /* bytes of it the state holds */
    size_t data_len;                /* MPI_Win_allocate: bytes of data_memh, kept
                                     * for reuse at free */
    uint32_t data_serial, state_serial;  /* the allocations' serials (0: user memory
                                          * or not keepable; ompi_osc_ucxx_rkey_take) */
    uint64_t data_off, state_off;   /* ... where in our shared memory (osc_ucxx_seg.c;
                                     * MPI_Win_allocate's window memory), or
                                     * OSC_UCXX_SEG_NONE */
    ompi_osc_ucxx_state_t *state;   /* our state segment (osc_ucxx_state.c) */
    size_t state_size;
    struct {                        /* our PSCW post slots (osc_ucxx_state.c), a post
                                     * arena's (osc_ucxx_memory.c) */
        volatile uint64_t *slots;
        ucp_mem_h memh;
        size_t len;
        uint32_t serial;
        uint64_t off;
    } posts;
    ompi_osc_ucxx_shseg_t *shseg;   /* MPI_Win_allocate_shared: the group's segment;
                                     * MPI_Win_allocate on one node: the node's */
    /* The lock words where the node's segment holds them apart from the
     * states (shseg->locks) and CPU atomics change them; else NULL: each in
     * its state segment (ompi_osc_ucxx_lock_word) */
    ompi_osc_ucxx_word_t *lock_words;

    /* Peers (osc_ucxx_target.h): what we keep per peer, and the links each
     * worker made to them.  setup_lock serializes the lazy setup. */
    ompi_osc_ucxx_peer_t *peers;
    ompi_osc_ucxx_ltab_t *volatile ltab;
    opal_mutex_t setup_lock;
    /* What peers published at creation (osc_ucxx_window.c): each field once
     * where every peer gave the same value (pub), else per peer (the array,
     * NULL where not needed); read through ompi_osc_ucxx_peer_size & co. */
    struct {
        uint64_t size, base, state, data_off, state_off;
        int32_t disp_unit;
        uint32_t acc_shift, am_sysbuf;
    } pub;
    uint64_t *pub_size, *pub_base, *pub_state, *pub_data_off, *pub_state_off;
    int32_t *pub_disp;
    uint8_t *pub_acc_shift;
    uint32_t *pub_am_sysbuf;
    bool *pub_unmappable;           /* peers whose memory we may not map (some
                                     * process has no shared memory, another user) */
    /* ... their packed rkeys, where some peer may reach memory through UCX
     * (NULL: every peer maps every other's) */
    struct ompi_osc_ucxx_rkeys_t {
        uint32_t blob;              /* offset in blobs: the data rkey, then the state's */
        uint16_t data_len, state_len;
        uint32_t data_serial, state_serial;
    } *rkeys;
    char *blobs;
    bool on_node;                   /* all ranks on this node */
    bool node_refused, node_left;   /* creation: the node's segment not mapped here; given up */
    bool maps_all;                  /* ... and every process maps every other's shared
                                     * memory (the atomics policy's input) */

    /* Peers may reach this window through UCX emulation or active messages
     * (user memory, or no shared-memory mapping): our synchronization calls
     * serve them.  Always, if some peer cannot map our state segment; else
     * only while our state's serve word is not zero (ompi_osc_ucxx_serve). */
    bool serve;
    bool serve_always;
    /* Atomics policy (osc_ucxx_policy.c, docs/atomics.md), agreed by every
     * process at creation and the same on all: state words by CPU atomics
     * only where every process maps every other's state segment, else by
     * UCX atomics for everybody (the owner through its link to itself);
     * single elements of acc_single_intrinsic handles by the kind
     * single_kind names (OSC_UCXX_SINGLE_*). */
    bool state_cpu;
    uint8_t single_kind;
    uint8_t lock_kind;              /* OSC_UCXX_LOCKS_*: the lock words' protocol */
    uint8_t ucx_modes;              /* OSC_UCXX_MODES_* of the processes (exchange) */
    ompi_osc_ucxx_audit_t *audit;   /* the atomics audit's records, if on */

    /* Info keys */
    uint32_t acc_shift;      /* mpi_accumulate_granularity, as log2 of a stripe block */
    bool same_size;
    bool same_disp_unit;

    /* Accumulates sent as active messages (osc_ucxx_accumulate.c): not yet
     * acknowledged; the first error a target reported, for the next flush;
     * messages for this window waiting in the deferred queue (later ones
     * queue behind them, so they apply in arrival order). */
    volatile int32_t am_outstanding;
    volatile int32_t am_error;
    volatile int32_t am_deferred;
    volatile int32_t am_fetching;   /* ... of them, those whose answers carry values */
    /* ... of them, by the parity of the closings that do not wait for them
     * (complete and fence by notice, osc_ucxx_notice.c) they were sent
     * between; am_era counts those closings. */
    volatile int32_t am_era_left[2];
    volatile uint32_t am_era;

    /* User active messages (osc_ucxx_uam.c): made by the first AM call;
     * creation-only keys: am_buf_interleave_am_detach, am_user_buf_<rank>. */
    ompi_osc_ucxx_uam_t *volatile uam;
    bool am_interleave;
    int am_nhints;
    struct { int rank; uint64_t bytes; } *am_hints;

    /* Target-managed locks (lock_kind OSC_UCXX_LOCKS_TARGET): the queue of
     * origins waiting for ours (osc_ucxx_lockq.c, made on first use), and
     * the epochs on targets whose lock request is still being built here
     * (osc_ucxx_lazy.c). */
    ompi_osc_ucxx_lockq_t *volatile lockq;
    ompi_osc_ucxx_lazy_t *lazy_open;   /* requests not sent yet */
    ompi_osc_ucxx_lazy_t *lazy_spare;  /* a record kept for the next epoch */

    /* Epochs (osc_ucxx_epoch.c owns every field here and in each peer's
     * epoch part; its file comment says who may change what when). */
    ompi_osc_ucxx_epoch_t *access;  /* fence, lock_all or start epoch object */
    volatile int32_t nlocks;        /* MPI_Win_lock targets held */
    bool fence_open;                /* the last fence had no NOSUCCEED */
    uint64_t fence_count;           /* fences called */
    bool fence_by_state;            /* fences synchronize through state segments:
                                     * state_cpu, and no process switched it off
                                     * (agreed at creation) */
    uint64_t barrier_seq;           /* fence barriers through state segments so far */
    /* ... else notices and counts (osc_ucxx_notice.c): closing fences so far
     * (the same count on every process); the notices that arrived for them
     * and those the counts said we are owed, by the closing's parity; a
     * notice sent to each rank this closing (0 or 1, reduced) */
    uint64_t fence_closes;
    volatile int64_t fence_notices[2];
    int64_t fence_owed[2];
    int32_t *fence_sent;
    bool crowded;                   /* more processes here than cores (osc_ucxx_policy.c) */
    volatile bool exposed;          /* PSCW: between post and wait/test */
    uint64_t complete_expected;     /* PSCW: completions owed to our exposure epochs */
    opal_mutex_t post_lock;         /* posts that arrived by active message: */
    int *posts_seen, posts_seen_count, posts_seen_cap;

    /* Dynamic windows: attached regions, sorted by base */
    opal_mutex_t dyn_lock;
    /* ... and, where threads share links (OSC_UCXX.links_shared), the one
     * operation at a time that may use or change their region caches
     * (ompi_osc_ucxx_dyn_serial) */
    opal_mutex_t dyn_serial_lock;
    ompi_osc_ucxx_region_t *regions;
    int nregions, regions_cap;
    uint64_t dyn_max_len;
    /* ... and the bases of attachments of no bytes, which no access
     * reaches but MPI_Win_detach names */
    uint64_t *empties;
    int nempties, empties_cap;
    struct {                        /* ... as the peers on the node read them
                                     * (osc_ucxx_dyntab.c), from a state arena;
                                     * NULL where peers cannot map it */
        ompi_osc_ucxx_dyntab_t *tab;
        ucp_mem_h memh;
        size_t len;
        uint32_t serial;
        uint64_t off;
    } dyntab;
    /* Synchronization calls that may follow a target's detach (epochs
     * opened, flushes) so far: an origin re-reads a target's detach
     * generation at its first access after one (osc_ucxx_dynamic.c) */
    volatile uint64_t dyn_syncs;
};
OBJ_CLASS_DECLARATION(ompi_osc_ucxx_module_t);

/* Count one of those synchronizations (dynamic windows only). */
static inline void ompi_osc_ucxx_dyn_synced(ompi_osc_ucxx_module_t *module)
{
    if (OPAL_UNLIKELY(MPI_WIN_FLAVOR_DYNAMIC == module->flavor)) {
        __atomic_fetch_add(&module->dyn_syncs, 1, __ATOMIC_RELEASE);
    }
}

/* One MPI_Win handle on a core.  super must come first (Open MPI calls
 * through it). */
struct ompi_osc_ucxx_view_t {
    ompi_osc_base_module_t super;
    ompi_osc_ucxx_module_t *core;
    bool original;           /* made collectively: its free is collective too */
    bool scope_thread;       /* mpi_win_scope=thread: flushes cover this thread only */
    bool ordered;            /* mpi_win_order=true */
    bool acc_ordered;        /* accumulate_ordering is not "none" */
    bool assert_intrinsic;   /* mpi_assert_accumulate_intrinsic=true */
    uint8_t single_kind;     /* how its single elements change memory: the window's
                              * kind (core->single_kind) where acc_single_intrinsic
                              * is true, else OSC_UCXX_SINGLE_STRIPES */
    uint8_t am_order;        /* am_ordering: OSC_UCXX_AM_ORDER_* bits */
    int am_unit;             /* am_pipeline_unit (0: auto) */
    bool am_subscribed;      /* MPI_Win_set_info reaches its AM keys */
    /* Memory-handle windows: one target, displacements from the handle's base */
    bool memhandle;
    int mh_target;
    uint64_t mh_base, mh_size;
    int mh_disp_unit;
};

#define OSC_UCXX_AM_ORDER_SAMEOP 1
#define OSC_UCXX_AM_ORDER_DIFFOP 2
#define OSC_UCXX_AM_ORDER_SAMEAM 4
#define OSC_UCXX_AM_ORDER_ALL    7

#define OSC_UCXX_VIEW(win) ((ompi_osc_ucxx_view_t *) (win)->w_osc_module)
#define OSC_UCXX_MODULE(win) (OSC_UCXX_VIEW(win)->core)

/* The worker an operation through this view goes on: under
 * mpi_win_order=true with process scope, every thread shares one ordered
 * stream (the main worker). */
static inline ompi_osc_ucxx_worker_t *ompi_osc_ucxx_view_worker(ompi_osc_ucxx_view_t *view)
{
    if (OPAL_UNLIKELY(view->ordered && !view->scope_thread)) {
        return OSC_UCXX.main_worker;
    }
    return ompi_osc_ucxx_worker_self();
}

/* Until every message this process sent on the window (accumulates and user
 * active messages) has been applied by its target and acknowledged. */
static inline void ompi_osc_ucxx_wait_messages(ompi_osc_ucxx_module_t *module)
{
    while (module->am_outstanding > 0) {
        opal_progress();
    }
}

/* At a closing that does not wait for its own epoch's messages: until those
 * sent before the previous such closing are answered, so that a target's
 * refusal of them is reported now at the latest (one synchronization after
 * their epoch, never two).  They have had a whole synchronization to come
 * back: this rarely waits. */
static inline void ompi_osc_ucxx_wait_earlier_messages(ompi_osc_ucxx_module_t *module)
{
    while (module->am_era_left[(module->am_era + 1) & 1] > 0) {
        opal_progress();
    }
    module->am_era++;
}

/* Creation and destruction (osc_ucxx_window.c) */
int ompi_osc_ucxx_window_create(struct ompi_win_t *win, void **base, size_t size,
                                int disp_unit, struct ompi_communicator_t *comm,
                                struct opal_info_t *info, int flavor, int *model);
/* A handle's free, once its operations completed (the osc entry point,
 * osc_ucxx_component.c, checks the epoch and flushes first). */
int ompi_osc_ucxx_window_free(struct ompi_win_t *win);
ompi_osc_ucxx_view_t *ompi_osc_ucxx_view_new(ompi_osc_ucxx_module_t *core, bool original);
void ompi_osc_ucxx_core_release(ompi_osc_ucxx_module_t *module, bool collective);
void ompi_osc_ucxx_module_release(ompi_osc_ucxx_module_t *module);
void ompi_osc_ucxx_subscribe_info(struct ompi_win_t *win);
void ompi_osc_ucxx_subscribe_am_info(struct ompi_win_t *win);

/* What the layers above keep in a window, made and dropped through the
 * component layer (osc_ucxx_component.c), which gives these before any
 * window and calls each concern in its order.  view_init: a new handle's
 * osc module table and extension table; core_init: the core's parts
 * above this layer, before the creation exchange (a failure is carried by
 * it, so all fail together); core_fini: drops them (whatever core_init
 * made, and what the concerns added since), before the core's memory
 * goes. */
typedef struct {
    void (*view_init)(ompi_osc_ucxx_view_t *view);
    int (*core_init)(ompi_osc_ucxx_module_t *module);
    void (*core_fini)(ompi_osc_ucxx_module_t *module);
} ompi_osc_ucxx_window_above_t;
void ompi_osc_ucxx_window_above(const ompi_osc_ucxx_window_above_t *above);

/* The atomics policy (state_cpu, lock_kind, single_kind, fence_by_state),
 * the same on every process, from the creation exchange; and `crowded`
 * (osc_ucxx_policy.c). */
int ompi_osc_ucxx_policy_agree(ompi_osc_ucxx_module_t *module);

/* The accumulate stripe block (log2) `info` asks for, else the default. */
uint32_t ompi_osc_ucxx_granularity_shift(struct opal_info_t *info);

/* Is `key` in `info` and true? */
bool ompi_osc_ucxx_info_flag(struct opal_info_t *info, const char *key);
bool ompi_osc_ucxx_all_on_node(ompi_osc_ucxx_module_t *module);
/* The window's communicator and id (osc_ucxx_wcomm.c), shared with the
 * other windows over the same application communicator or kept for the
 * next one: get at creation, close as the closing barrier of the
 * collective free, put when the core goes. */
int ompi_osc_ucxx_wcomm_get(ompi_osc_ucxx_module_t *module, ompi_communicator_t *comm);
int ompi_osc_ucxx_wcomm_close(ompi_osc_ucxx_module_t *module);
void ompi_osc_ucxx_wcomm_put(ompi_osc_ucxx_module_t *module);
void ompi_osc_ucxx_wcomm_fini(void);
/* Window memory (osc_ucxx_memory.c): UCX registration of memory (or
 * allocation) (`serial`: the number peers keep its rkey by, 0 for none);
 * state segments and post slots (zeroed) and MPI_Win_allocate memory (not), in our shared
 * memory (`*off`: where in it, or OSC_UCXX_SEG_NONE), from arenas shared
 * by the windows alive where small, else of their own (a freed window's
 * where one fits); take sets `*len` to what it gives, mem_give gives it
 * back.  Finalize releases what is kept. */
int ompi_osc_ucxx_mem_map(void **addr, size_t len, bool allocate, ucp_mem_h *memh,
                          uint32_t *serial);
void ompi_osc_ucxx_state_warm(void);
int ompi_osc_ucxx_state_take(size_t size, void **state, ucp_mem_h *memh, uint32_t *serial,
                             size_t *len, uint64_t *off);
int ompi_osc_ucxx_posts_take(size_t size, void **posts, ucp_mem_h *memh, uint32_t *serial,
                             size_t *len, uint64_t *off);
/* An MPI_Win_allocate window's state segment of `size` bytes, taken with
 * its memory where it fits next to it (window_take: `addr` NULL where
 * not; it then comes from a state arena): zeroed, with the memory's memh
 * and serial, given back with mem_give. */
typedef struct {
    size_t size;
    void *addr;
    size_t len;
    uint64_t off;
} ompi_osc_ucxx_wstate_t;
int ompi_osc_ucxx_window_take(size_t size, ompi_osc_ucxx_wstate_t *st, void **addr,
                              ucp_mem_h *memh, uint32_t *serial, size_t *len, uint64_t *off);
void ompi_osc_ucxx_mem_give(void *addr, ucp_mem_h memh, size_t len, uint32_t serial,
                            uint64_t off);
void ompi_osc_ucxx_kept_release(void);
/* The core a window id names (osc_ucxx_wcomm.c), for active messages. */
ompi_osc_ucxx_module_t *ompi_osc_ucxx_window_lookup(uint32_t cid);

END_C_DECLS

#endif /* OMPI_OSC_UCXX_WINDOW_H */
