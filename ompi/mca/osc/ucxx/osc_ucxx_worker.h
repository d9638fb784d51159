/*
 * Copyright (c) 2026 The osc/ucxx authors. All rights reserved.
 * $COPYRIGHT$
 *
 * osc/ucxx, second layer: the UCP context (osc_ucxx_context.c) and its
 * early start (osc_ucxx_early.c), per-thread workers (osc_ucxx_worker.c),
 * peers' addresses and endpoints (osc_ucxx_peers.c), peers' rkeys kept
 * across windows (osc_ucxx_rkey.c), progress and waiting
 * (osc_ucxx_progress.c), the teardown (osc_ucxx_quiesce.c).  Nothing here
 * knows the layers above: the message layer gives its part as hooks (its
 * UCX handlers on each new worker, the drain of what its callbacks
 * deferred), and the component orders the teardown.
 */

#ifndef OMPI_OSC_UCXX_WORKER_H
#define OMPI_OSC_UCXX_WORKER_H

#include <sched.h>

#include "osc_ucxx_types.h"
#include "osc_ucxx_seg.h"

BEGIN_C_DECLS

/* A UCP worker used by one thread at a time; endpoints to peers are created
 * lazily and kept for the life of the process (an OPAL object: released at
 * finalize, its destructor closes the endpoints). */
struct ompi_osc_ucxx_worker_t {
    opal_object_t super;
    ucp_worker_h ucp;
    int index;                 /* position in OSC_UCXX.workers and in link tables */
    bool owned;                /* a live thread uses it */
    opal_mutex_t lock;         /* the endpoint and rkey tables */
    opal_hash_table_t eps;     /* proc name -> ucp_ep_h */
    opal_hash_table_t rkeys;   /* (proc name, serial) -> ompi_osc_ucxx_rkey_t* */
    ompi_osc_ucxx_rkey_t *idle_first, *idle_last;  /* rkeys no window uses, oldest first */
    int idle;
    size_t idle_bytes;         /* ... and the bytes they map (about) */
    volatile int32_t pending;  /* request-based operations not yet complete */
    bool acc_fence;            /* accumulates issued UCX atomics since the last
                                * ucp_worker_fence (osc_ucxx_accumulate.c; under
                                * osc_ucxx_fence_by_flush: ever, links say where) */
    volatile int32_t progressing;  /* a thread is inside ucp_worker_progress on it
                                    * (ompi_osc_ucxx_worker_progress_shared) */
};
OBJ_CLASS_DECLARATION(ompi_osc_ucxx_worker_t);

/* The calling thread's: its worker, and how many polls in a row its
 * opal_progress found nothing of ours (ompi_osc_ucxx_progress).  One
 * variable: in a dlopen()ed component each __thread variable read is a
 * __tls_get_addr call. */
typedef struct {
    ompi_osc_ucxx_worker_t *worker;
    int idle;
} ompi_osc_ucxx_tls_t;
extern __thread ompi_osc_ucxx_tls_t ompi_osc_ucxx_tls;

/* The UCP context (osc_ucxx_context.c): made by the first window or the
 * early start, which hands over what it made (adopt); ucp_create makes one
 * context; the UCX worker thread mode MPI's thread level asks for. */
int ompi_osc_ucxx_context_init(void);
void ompi_osc_ucxx_context_fini(void);
void ompi_osc_ucxx_context_adopt(ucp_context_h context, ucp_worker_h worker);
int ompi_osc_ucxx_ucp_create(ucp_context_h *context);
ucs_thread_mode_t ompi_osc_ucxx_thread_mode(void);
/* The early start (osc_ucxx_early.c) */
void ompi_osc_ucxx_context_start(void);  /* component_open, in MPI_Init */
bool ompi_osc_ucxx_context_warm(void);   /* component_init: true if started */
/* The workers (osc_ucxx_worker.c): the pool and the main worker (around the
 * early start's UCP worker, if any), their teardown; `setup`: the message
 * layer's setup of each new worker. */
int ompi_osc_ucxx_workers_init(ucp_worker_h made);
void ompi_osc_ucxx_workers_fini(void);
void ompi_osc_ucxx_worker_setup(int (*setup)(ompi_osc_ucxx_worker_t *worker));
/* Teardown (osc_ucxx_quiesce.c): no endpoint mid-wireup when MPI_Finalize's
 * fence ends (register: with the first window; quiesce_ep: one endpoint,
 * now); close a worker's endpoints before it is destroyed. */
#define OSC_UCXX_AM_PING 62   /* (UCX active-message ids, after the AM layer's) */
#define OSC_UCXX_AM_PONG 63
extern volatile int32_t ompi_osc_ucxx_pongs_due;
int ompi_osc_ucxx_quiesce_register(void);
int ompi_osc_ucxx_quiesce_am_register(ompi_osc_ucxx_worker_t *worker);
void ompi_osc_ucxx_quiesce_serve(void);
void ompi_osc_ucxx_quiesce_ep(ucp_ep_h ep);
void ompi_osc_ucxx_quiesce_deregister(void);
void ompi_osc_ucxx_eps_close(ompi_osc_ucxx_worker_t *worker);
ompi_osc_ucxx_worker_t *ompi_osc_ucxx_worker_acquire(void);
/* Peers (osc_ucxx_peers.c): their worker addresses by process (or by
 * ompi_osc_ucxx_proc_key / name_key), a worker's endpoint to one. */
int ompi_osc_ucxx_worker_get_ep(ompi_osc_ucxx_worker_t *worker, ompi_proc_t *proc,
                                ucp_ep_h *ep);
int ompi_osc_ucxx_get_ep_key(ompi_osc_ucxx_worker_t *worker, uint64_t key, ucp_ep_h *ep);
bool ompi_osc_ucxx_peer_addr_known(ompi_proc_t *proc);
int ompi_osc_ucxx_peer_addr_store(ompi_proc_t *proc, const void *addr, size_t len);
int ompi_osc_ucxx_addr_store_key(uint64_t key, const void *addr, size_t len);
void ompi_osc_ucxx_peer_addrs_fini(void);
/* ... through the modex: ours published (the early start), a peer's on
 * this node learned (false: not there). */
bool ompi_osc_ucxx_addr_publish(ucp_worker_h worker);
bool ompi_osc_ucxx_addr_from_modex(uint64_t key);
/* The peer table lets a peer go: the worker's endpoint to it closed and
 * the rkeys it kept for it destroyed. */
void ompi_osc_ucxx_ep_evict(ompi_osc_ucxx_worker_t *worker, uint64_t key);
void ompi_osc_ucxx_rkeys_drop(ompi_osc_ucxx_worker_t *worker, uint64_t key);

/* The peer table (osc_ucxx_ptab.c): per peer process, how to map its
 * shared memory, the ranges of it mapped here, the windows that use it; a
 * bound on how many peers hold anything, the idle ones let go first.
 * get: the entry (made on first call); identity: how to map its memory
 * (the modex, or what set_identity recorded from a window's exchange);
 * map: each request's [off, off + len) of its file mapped here, rounded
 * out to `unit` (OSC_UCXX_SEG_MAP_*), in a mapping held or its own, those
 * made by one open of the file (req->addr: the address of off; unmap gives
 * req->map back; req->made: its mapping is new), all or none; user_add / user_remove: a window's use of the
 * peer (its rank there), which the hooks ask about (busy: in an epoch)
 * and end (release: the window drops its mappings and links of the peer)
 * when the peer goes; endpoint: a worker made an endpoint to it; trim: over
 * the bound, let idle peers go, not `keep`. */
ompi_osc_ucxx_pent_t *ompi_osc_ucxx_ptab_get(ompi_proc_t *proc);
void ompi_osc_ucxx_ptab_set_identity(ompi_proc_t *proc, const ompi_osc_ucxx_segid_t *id);
bool ompi_osc_ucxx_ptab_identity(ompi_osc_ucxx_pent_t *e, ompi_osc_ucxx_segid_t *id);
int ompi_osc_ucxx_ptab_publish(void);
#define OSC_UCXX_PTAB_MAP_MAX 3
typedef struct {
    uint64_t off, unit;
    size_t len;
    char *addr;
    ompi_osc_ucxx_pmap_t *map;
    bool made;          /* its mapping was made by this call */
} ompi_osc_ucxx_pmap_req_t;
bool ompi_osc_ucxx_ptab_map(ompi_osc_ucxx_pent_t *e, ompi_osc_ucxx_pmap_req_t *req, int n);
void ompi_osc_ucxx_ptab_unmap(ompi_osc_ucxx_pmap_t *map);
int ompi_osc_ucxx_ptab_user_add(ompi_osc_ucxx_pent_t *e, void *module, int target);
void ompi_osc_ucxx_ptab_user_remove(ompi_osc_ucxx_pent_t *e, void *module, int target);
void ompi_osc_ucxx_ptab_hooks(bool (*busy)(void *module, int target),
                              void (*release)(void *module, int target));
void ompi_osc_ucxx_ptab_endpoint(uint64_t key);
void ompi_osc_ucxx_ptab_trim(ompi_osc_ucxx_pent_t *keep);
void ompi_osc_ucxx_ptab_fini(void);
/* The main worker's address, packed on the first call, kept to finalize. */
int ompi_osc_ucxx_main_address(const void **addr, size_t *len);
void ompi_osc_ucxx_main_address_release(void);

/* A peer's rkey for its allocation numbered `serial` (the peer's count of
 * UCX allocations, published at window creation; 0: not cacheable, unpacked
 * and destroyed each time), unpacked on the worker's endpoint `ep` to the
 * peer, or the one kept from an earlier window (osc_ucxx_rkey.c: why).
 * `bytes`: about how much of the peer's memory it maps (what keeping it
 * idle may hold).  Every take is matched by a give (proc NULL: in
 * finalize, before the worker goes, which destroys what it kept). */
int ompi_osc_ucxx_rkey_take(ompi_osc_ucxx_worker_t *worker, ompi_proc_t *proc, ucp_ep_h ep,
                            uint32_t serial, size_t bytes, const void *packed,
                            ucp_rkey_h *rkey);
void ompi_osc_ucxx_rkey_give(ompi_osc_ucxx_worker_t *worker, ompi_proc_t *proc,
                             uint32_t serial, ucp_rkey_h rkey);
/* Every rkey the worker kept (finalize: the windows are gone). */
void ompi_osc_ucxx_rkeys_destroy(ompi_osc_ucxx_worker_t *worker);

/* Progress (osc_ucxx_progress.c): our main worker (peers' emulated
 * operations and messages), the calling thread's worker, workers with
 * requests in flight, and the deferred work.  Registered with opal_progress
 * by progress_start (with the progress thread, if asked), until
 * progress_stop. */
int ompi_osc_ucxx_progress(void);
int ompi_osc_ucxx_progress_start(void);
void ompi_osc_ucxx_progress_stop(void);
/* Does this process run the progress thread (osc_ucxx_progress_thread;
 * auto is decided once, from the job's layout)? */
bool ompi_osc_ucxx_progress_thread_wanted(void);
/* An application thread is about to hold UCX's worker lock for long (an
 * endpoint or an rkey made): the progress thread keeps off the worker for
 * a while, as while the application progresses it, rather than spin on
 * that lock should the application's thread lose its core inside. */
void ompi_osc_ucxx_progress_app_busy(void);
/* Wake the progress thread if it sleeps in the kernel (wait mode). */
void ompi_osc_ucxx_progress_wake(void);
/* The progress thread parked outside the component until progress_unhold,
 * so that the caller may take away what the thread may be serving (the
 * peer table's eviction); true at once where there is no thread, false on
 * the thread itself.  Never under a component lock: the thread finishes
 * the work it is in, which may take one. */
bool ompi_osc_ucxx_progress_hold(void);
void ompi_osc_ucxx_progress_unhold(void);
/* Work UCX callbacks deferred (they may not send, wait or run handlers):
 * the message layer counts what it queued in ompi_osc_ucxx_deferred and
 * gives the function that works it off (progress_drain), which progress,
 * the progress thread and every serving wait call outside callbacks. */
extern volatile int32_t ompi_osc_ucxx_deferred;
extern int (*ompi_osc_ucxx_drain_hook)(void);
void ompi_osc_ucxx_progress_drain(int (*drain)(void));
/* May the calling thread change Open MPI objects the application's threads
 * share (reference counts, datatypes, the f2c tables)?  Not our progress
 * thread below MPI_THREAD_MULTIPLE: Open MPI takes no lock and no atomic
 * for them there. */
bool ompi_osc_ucxx_objects_ours(void);
/* Work that only the application's threads may do (above), left by our
 * progress thread to the next of them that progresses: `run` is called
 * there once, and may reuse or free the item. */
typedef struct ompi_osc_ucxx_later {
    struct ompi_osc_ucxx_later *next;
    void (*run)(struct ompi_osc_ucxx_later *later);
} ompi_osc_ucxx_later_t;
void ompi_osc_ucxx_later(ompi_osc_ucxx_later_t *later);
/* OBJ_RELEASE from wherever a UCX callback may run: where the caller may
 * not (above), the release is left for later. */
void ompi_osc_ucxx_obj_release(opal_object_t *obj);
static inline bool ompi_osc_ucxx_deferred_pending(void)
{
    return 0 != ompi_osc_ucxx_deferred;
}
static inline int ompi_osc_ucxx_deferred_drain(void)
{
    return ompi_osc_ucxx_deferred_pending() ? ompi_osc_ucxx_drain_hook() : 0;
}
/* Wait for a UCX request issued on `worker`, progressing it and the rest of
 * the library (a peer may need us before it can answer). */
int ompi_osc_ucxx_wait_request(ompi_osc_ucxx_worker_t *worker, void *req);

/* Progress a worker that other threads progress too (the main worker, a
 * worker with request-based operations in flight): one thread at a time, and
 * a thread that finds it taken skips it, since the holder is progressing it.
 * Why: UCX guards a multi-threaded worker with a spinlock; with more threads
 * than cores every opal_progress spun on it for whole time slices while the
 * holder was descheduled (ext_order's sum case on two cores spent most of
 * its time in pthread_spin_lock).  take / give: the same turn around other
 * calls that must not overlap another thread's progress (ucp_worker_arm);
 * the holder never sleeps, waits or drains deferred work while it holds
 * the turn, so a waiter that skips keeps polling its request and gets the
 * turn as soon as the holder ends. */
static inline bool ompi_osc_ucxx_worker_take(ompi_osc_ucxx_worker_t *w)
{
    int32_t idle = 0;
    if (UCS_THREAD_MODE_MULTI != OSC_UCXX.thread_mode) {
        return true;
    }
    return !w->progressing && opal_atomic_compare_exchange_strong_32(&w->progressing, &idle, 1);
}
static inline void ompi_osc_ucxx_worker_give(ompi_osc_ucxx_worker_t *w)
{
    if (UCS_THREAD_MODE_MULTI == OSC_UCXX.thread_mode) {
        opal_atomic_wmb();
        w->progressing = 0;
    }
}
static inline int ompi_osc_ucxx_worker_progress_shared(ompi_osc_ucxx_worker_t *w)
{
    int n;
    if (!ompi_osc_ucxx_worker_take(w)) {
        return 0;
    }
    n = ucp_worker_progress(w->ucp);
    ompi_osc_ucxx_worker_give(w);
    return n;
}

/* Wait loops back off: after OSC_UCXX.yield_after polls in a row that found
 * nothing, the thread yields between polls.  With more runnable threads than
 * cores (threads of an MPI_THREAD_MULTIPLE job, oversubscribed nodes) a loop
 * that only spins keeps the core for a whole time slice from the thread or
 * peer that would end its wait; Open MPI's own mpi_yield_when_idle knows only
 * about processes.  `idle` is the loop's (or the thread's) counter. */
static inline void ompi_osc_ucxx_backoff(int *idle, int progressed)
{
    if (progressed) {
        *idle = 0;
    } else if (OSC_UCXX.yield_after > 0 && ++*idle >= OSC_UCXX.yield_after) {
        *idle = OSC_UCXX.yield_after;
        sched_yield();
    }
}

/* The calling thread's worker if it has one already, else NULL. */
static inline ompi_osc_ucxx_worker_t *ompi_osc_ucxx_worker_held(void)
{
    ompi_osc_ucxx_worker_t *w = OSC_UCXX.only_worker;
    if (OPAL_LIKELY(NULL != w)) {
        return w;   /* (a __thread read in a dlopen()ed component is a call) */
    }
    return ompi_osc_ucxx_tls.worker;
}

/* The calling thread's worker (created or taken from the pool on first use). */
static inline ompi_osc_ucxx_worker_t *ompi_osc_ucxx_worker_self(void)
{
    ompi_osc_ucxx_worker_t *w = ompi_osc_ucxx_worker_held();
    if (OPAL_LIKELY(NULL != w)) {
        return w;
    }
    return ompi_osc_ucxx_worker_acquire();
}

END_C_DECLS

#endif /* OMPI_OSC_UCXX_WORKER_H */
