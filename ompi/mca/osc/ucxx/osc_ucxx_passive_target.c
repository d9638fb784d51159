/*
 * Copyright (c) 2026 The osc/ucxx authors. All rights reserved.
 * $COPYRIGHT$
 *
 * Passive target: lock/unlock, lock_all/unlock_all, flushes and sync.
 *
 * The lock word protocol is in osc_ucxx_state.c, the epoch bookkeeping (which
 * targets are locked, by which thread's call) in osc_ucxx_epoch.c; this file
 * puts them together with the flushes.  lock_all takes nothing up front:
 * the shared lock on a target is taken the first time the epoch touches it
 * (osc_ucxx_epoch.c), so lock_all costs O(targets used), not O(P).
 *
 * Flushes cover only the endpoints each worker used for this window and not
 * yet covered by a completed flush (issued/flushed counters per link, so
 * threads flushing at once each wait for what they must), plus the
 * accumulates carried by active messages, which complete when acknowledged.
 */

#include "ompi_config.h"

#include "osc_ucxx.h"
#include "osc_ucxx_uam.h"

/* ------------------------------------------------------------------------- */
/* Flushes */

typedef struct {
    ompi_osc_ucxx_worker_t *worker;
    void *req;
    ompi_osc_ucxx_link_t *link;   /* what the flush covers ... */
    int64_t upto;                 /* ... up to this many operations */
} pending_flush_t;

typedef struct {
    pending_flush_t stack[16];
    pending_flush_t *items;
    int count, cap;
    int rc;
    bool defer;        /* a NULL request still waits for the others (row entries) */
} flush_set_t;

static void link_covered(ompi_osc_ucxx_link_t *link, int64_t upto)
{
    int64_t seen = link->flushed;
    while (seen < upto &&
           !opal_atomic_compare_exchange_strong_64((volatile int64_t *) &link->flushed, &seen,
                                                   upto)) {
    }
}

static void flush_set_add(flush_set_t *set, ompi_osc_ucxx_worker_t *worker,
                          ompi_osc_ucxx_link_t *link, int64_t upto, void *req)
{
    if (UCS_PTR_IS_ERR(req)) {
        set->rc = OMPI_ERROR;
        return;
    }
    if (NULL == req && link != NULL && upto >= 0 && !set->defer) {
        link_covered(link, upto);
        return;
    }
    if (set->count == set->cap) {
        pending_flush_t *grown = malloc(2 * set->cap * sizeof(*grown));
        if (NULL == grown) {  /* out of room: finish this one now */
            int r = ompi_osc_ucxx_wait_request(worker, req);
            if (OMPI_SUCCESS != r) set->rc = r;
            else if (!set->defer) link_covered(link, upto);
            return;
        }
        memcpy(grown, set->items, set->count * sizeof(*grown));
        if (set->items != set->stack) free(set->items);
        set->items = grown;
        set->cap *= 2;
    }
    set->items[set->count++] = (pending_flush_t){worker, req, link, upto};
}

/* Nothing to wait for on `target` (every target: -1): no UCX operation of
 * any worker (or of `only`) since its last flush, no accumulate message
 * unacknowledged, no error to report, nobody to serve, no AM grant to give
 * back.  Then the flush is the barrier alone, as on osc/sm: the common case
 * on a node, where puts and gets are loads and stores (8 B put + flush in a
 * loop: 28 ns with the whole flush_module, 17 ns so; osc/sm 13 ns).  For
 * every target a row's summary entry decides; it is marked flushed only by
 * a flush of every target, so after single-target flushes it may call a
 * quiet row busy (flush_all_links then finds nothing to do), never the
 * reverse. */
static inline bool flush_quiet(ompi_osc_ucxx_module_t *module, int target,
                               ompi_osc_ucxx_worker_t *only)
{
    ompi_osc_ucxx_ltab_t *tab = module->ltab;
    int rows = tab->used;
    int entry = target < 0 ? module->size : target;

    if (module->am_outstanding > 0 || OMPI_SUCCESS != module->am_error ||
        ompi_osc_ucxx_serve_wanted(module) || (NULL != module->uam && module->am_interleave)) {
        return false;
    }
    opal_atomic_rmb();  /* rows below `used` were stored before it */
    for (int w = 0; w < rows; ++w) {
        ompi_osc_ucxx_lrow_t *r = tab->rows[w];
        if (NULL == r || (NULL != only && w != only->index)) continue;
        if (r->links[entry].issued != r->links[entry].flushed) return false;
    }
    return true;
}

/* (Endpoint flushes, not worker flushes: UCX 1.13's worker flush was seen
 * returning before emulated gets had landed.) */
static __opal_attribute_noinline__ int flush_all_links(ompi_osc_ucxx_module_t *module,
                                                       int target, ompi_osc_ucxx_worker_t *only)
{
    ompi_osc_ucxx_ltab_t *tab = module->ltab;
    ucp_request_param_t param = {.op_attr_mask = 0};
    flush_set_t set;  /* not zero-initialized: the stack array is big */
    int first = target < 0 ? 0 : target;
    int last = target < 0 ? module->size : target + 1;

    set.items = set.stack;
    set.count = 0;
    set.cap = 16;
    set.rc = OMPI_SUCCESS;
    set.defer = false;
    if (NULL == only) {
        ompi_osc_ucxx_serve(module);  /* thread scope touches nothing shared */
    }
    int rows = tab->used;
    opal_atomic_rmb();  /* rows below `used` were stored before it */
    for (int w = 0; w < rows; ++w) {
        ompi_osc_ucxx_lrow_t *r = tab->rows[w];
        if (NULL != only && w != only->index) continue;
        if (NULL == r) continue;
        ompi_osc_ucxx_link_t *links = r->links;
        ompi_osc_ucxx_link_t *row = &links[module->size];
        ompi_osc_ucxx_worker_t *worker = row->worker;
        int64_t row_upto = row->issued;
        if (row_upto == row->flushed) continue;
        for (int i = first; i < last; ++i) {
            int64_t upto = links[i].issued;
            if (upto == links[i].flushed) continue;
            flush_set_add(&set, worker, &links[i], upto, ucp_ep_flush_nbx(links[i].ep, &param));
        }
        if (target < 0) {
            /* The row's own count, marked once every link of it is flushed. */
            set.defer = true;
            flush_set_add(&set, worker, row, row_upto, NULL);
            set.defer = false;
        }
    }
    for (int i = 0; i < set.count; ++i) {
        int r = OMPI_SUCCESS;
        if (NULL != set.items[i].req) {
            r = ompi_osc_ucxx_wait_request(set.items[i].worker, set.items[i].req);
        }
        if (OMPI_SUCCESS != r) set.rc = r;
    }
    for (int i = 0; OMPI_SUCCESS == set.rc && i < set.count; ++i) {
        link_covered(set.items[i].link, set.items[i].upto);
    }
    if (set.items != set.stack) free(set.items);
    /* Accumulates carried by active messages are complete when acknowledged. */
    ompi_osc_ucxx_wait_messages(module);
    /* ... and report what a target refused (once). */
    if (OMPI_SUCCESS == set.rc && OMPI_SUCCESS != module->am_error) {
        set.rc = opal_atomic_swap_32(&module->am_error, OMPI_SUCCESS);
    }
    /* Stores through direct mappings are complete once they are visible. */
    opal_atomic_mb();
    return set.rc;
}

/* The quiet case first, outside flush_all_links's frame (a stack array of
 * flush requests: entering it cost 3 ns a flush), and inline in this file's
 * flush and unlock (another 1.4 ns).  `released`: the caller's next step is
 * a CPU atomic with release order on the target (its lock word), which
 * orders our loads and stores through mappings before anyone can see it,
 * as the barrier would (on x86 both are one locked instruction). */
static inline int flush_before(ompi_osc_ucxx_module_t *module, int target,
                               ompi_osc_ucxx_worker_t *only, bool released)
{
    if (flush_quiet(module, target, only)) {
        if (!released) {
            opal_atomic_mb();  /* stores through mappings are complete once visible */
        }
        return OMPI_SUCCESS;
    }
    return flush_all_links(module, target, only);
}

static inline int flush_module(ompi_osc_ucxx_module_t *module, int target,
                               ompi_osc_ucxx_worker_t *only)
{
    return flush_before(module, target, only, false);
}

int ompi_osc_ucxx_flush_module(ompi_osc_ucxx_module_t *module, int target,
                               ompi_osc_ucxx_worker_t *only)
{
    return flush_module(module, target, only);
}

int ompi_osc_ucxx_flush_link(ompi_osc_ucxx_module_t *module, ompi_osc_ucxx_worker_t *worker,
                             ompi_osc_ucxx_link_t *link)
{
    ucp_request_param_t param = {.op_attr_mask = 0};
    int64_t upto = link->issued;
    int rc;

    if (upto == link->flushed) {
        return OMPI_SUCCESS;
    }
    rc = ompi_osc_ucxx_wait_request(worker, ucp_ep_flush_nbx(link->ep, &param));
    if (OMPI_SUCCESS == rc) {
        link_covered(link, upto);
    }
    return rc;
}

/* Operations issued on WORKER to LINK's target after this call land after
 * those issued before it (mpi_win_order, accumulate_ordering).  Where UCX's
 * fence is weak (UCX 1.13) ucp_worker_fence orders them at no cost.  Where
 * it is strong (UCX 1.18: always, with its new protocols) ucp_worker_fence
 * flushes every endpoint of the worker and progresses it inside UCX's
 * worker lock until done, so threads that progress that worker spin on the
 * lock for the round trip, and two processes fencing at once over TCP were
 * seen to wait on each other for good (ext_order: 2-16 ms a round, then a
 * hang); flushing the one endpoint through our wait loop costs the same
 * round trip and lets the others run.  (No link: the worker fence.) */
int ompi_osc_ucxx_fence_link(ompi_osc_ucxx_module_t *module, ompi_osc_ucxx_worker_t *worker,
                             ompi_osc_ucxx_link_t *link)
{
    if (!OSC_UCXX.order_by_flush || NULL == link) {
        ucp_worker_fence(worker->ucp);
        return OMPI_SUCCESS;
    }
    return ompi_osc_ucxx_flush_link(module, worker, link);
}

/* The workers a flush through this view covers: all that touched the window
 * (process scope), or only the calling thread's (mpi_win_scope=thread). */
static ompi_osc_ucxx_worker_t *flush_scope(ompi_osc_ucxx_view_t *view)
{
    return view->scope_thread ? ompi_osc_ucxx_worker_self() : NULL;
}

/* A flush is valid only inside a passive-target epoch on that target
 * (target -1: every target).  Inline in the flushes, with the epoch check:
 * 8 B put + flush in a loop, 15.7 ns against 16.4 with both calls. */
static inline __opal_attribute_always_inline__ int
flush_targets(ompi_osc_ucxx_view_t *view, int target)
{
    OSC_UCXX_NOT_IN_HANDLER();
    if (!ompi_osc_ucxx_epoch_passive(view->core, target)) {
        return OMPI_ERR_RMA_SYNC;
    }
    int rc = flush_module(view->core, target, flush_scope(view));
    ompi_osc_ucxx_uam_sync(view->core, target, false);
    return rc;
}

/* Open MPI 4.1's MPI_Win_flush(_local) passes any rank through unchecked:
 * MPI_PROC_NULL is a no-op in a passive-target epoch, other ranks outside
 * the group are MPI_ERR_RANK. */
int ompi_osc_ucxx_flush(int target, struct ompi_win_t *win)
{
    ompi_osc_ucxx_view_t *view = OSC_UCXX_VIEW(win);

    if (OPAL_UNLIKELY(target < 0 || target >= view->core->size)) {
        if (MPI_PROC_NULL != target) return MPI_ERR_RANK;
        OSC_UCXX_NOT_IN_HANDLER();
        return ompi_osc_ucxx_epoch_passive(view->core, -1) ? OMPI_SUCCESS : OMPI_ERR_RMA_SYNC;
    }
    return flush_targets(view, target);
}

int ompi_osc_ucxx_flush_all(struct ompi_win_t *win)
{
    return flush_targets(OSC_UCXX_VIEW(win), -1);
}

/* UCX reports no local completion apart from remote completion for
 * operations without a request, so the local flushes are full flushes. */
int ompi_osc_ucxx_flush_local(int target, struct ompi_win_t *win)
{
    return ompi_osc_ucxx_flush(target, win);
}

int ompi_osc_ucxx_flush_local_all(struct ompi_win_t *win)
{
    return flush_targets(OSC_UCXX_VIEW(win), -1);
}

/* Unified memory model: public and private copies are the same memory; a
 * full barrier orders our loads and stores with everyone else's. */
int ompi_osc_ucxx_sync(struct ompi_win_t *win)
{
    ompi_osc_ucxx_serve(OSC_UCXX_MODULE(win));
    opal_atomic_mb();
    return OMPI_SUCCESS;
}

/* ------------------------------------------------------------------------- */
/* lock / unlock */

int ompi_osc_ucxx_lock(int lock_type, int target, int assert, struct ompi_win_t *win)
{
    ompi_osc_ucxx_module_t *module = OSC_UCXX_MODULE(win);
    bool nocheck = assert & MPI_MODE_NOCHECK;
    int rc;
    OSC_UCXX_NOT_IN_HANDLER();

    ompi_osc_ucxx_serve(module);
    rc = ompi_osc_ucxx_epoch_lock_begin(module, target);
    if (OMPI_SUCCESS != rc) {
        return rc;
    }
    if (!nocheck) {
        rc = ompi_osc_ucxx_state_lock(module, target, lock_type);
    }
    ompi_osc_ucxx_epoch_lock_done(module, target, lock_type, nocheck, OMPI_SUCCESS == rc);
    OSC_UCXX_VERBOSE(50, "window %u: %s lock on %d%s", module->cid,
                     MPI_LOCK_EXCLUSIVE == lock_type ? "exclusive" : "shared", target,
                     nocheck ? " (nocheck)" : "");
    return rc;
}

int ompi_osc_ucxx_unlock(int target, struct ompi_win_t *win)
{
    ompi_osc_ucxx_module_t *module = OSC_UCXX_MODULE(win);
    bool nocheck;
    int type, rc, r2 = OMPI_SUCCESS;
    OSC_UCXX_NOT_IN_HANDLER();

    ompi_osc_ucxx_serve(module);
    rc = ompi_osc_ucxx_epoch_unlock_begin(module, target, &type, &nocheck);
    if (OMPI_SUCCESS != rc) {
        return rc;
    }
    /* Our operations land before anyone else can take the lock; the lock
     * is released even when one of them failed.  (Released by a CPU
     * atomic, the flush needs no barrier of its own: lock + 8 B put +
     * unlock, 28 ns against 32 with it.) */
    rc = flush_before(module, target, NULL,
                      !nocheck && ompi_osc_ucxx_state_unlock_by_cpu(module, target));
    ompi_osc_ucxx_uam_sync(module, target, true);
    if (!nocheck) {
        r2 = ompi_osc_ucxx_state_unlock(module, target, type);
    }
    ompi_osc_ucxx_epoch_unlock_done(module, target);
    return OMPI_SUCCESS != rc ? rc : r2;
}

/* ------------------------------------------------------------------------- */
/* lock_all / unlock_all */

int ompi_osc_ucxx_lock_all(int assert, struct ompi_win_t *win)
{
    ompi_osc_ucxx_module_t *module = OSC_UCXX_MODULE(win);
    OSC_UCXX_NOT_IN_HANDLER();
    ompi_osc_ucxx_serve(module);
    return ompi_osc_ucxx_epoch_begin(module, OSC_UCXX_EPOCH_LOCK_ALL, assert);
}

int ompi_osc_ucxx_unlock_all(struct ompi_win_t *win)
{
    ompi_osc_ucxx_module_t *module = OSC_UCXX_MODULE(win);
    int rc, r2;
    OSC_UCXX_NOT_IN_HANDLER();

    ompi_osc_ucxx_serve(module);
    if (OSC_UCXX_EPOCH_LOCK_ALL != ompi_osc_ucxx_epoch_kind(module)) {
        return OMPI_ERR_RMA_SYNC;
    }
    rc = flush_module(module, -1, NULL);
    ompi_osc_ucxx_uam_sync(module, -1, true);
    r2 = ompi_osc_ucxx_epoch_end(module);  /* releases the shared locks taken */
    return OMPI_SUCCESS != rc ? rc : r2;
}
