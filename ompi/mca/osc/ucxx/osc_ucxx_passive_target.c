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
 * The flushes are the completion primitives (osc_ucxx_complete.c) behind
 * the passive-target epoch checks.
 *
 * Where the target manages its lock (module->lock_kind
 * OSC_UCXX_LOCKS_TARGET), a target whose lock word is not mapped here is
 * locked, flushed and unlocked by messages (osc_ucxx_lazy.c: the request
 * waits for the first operation that cannot be carried in it, a flush, or
 * the unlock, which sends the release with it): its access word says
 * OSC_UCXX_TGT_MSGLOCK, and its unlock leaves the usual way early.
 */

#include "ompi_config.h"

#include "osc_ucxx.h"
#include "osc_ucxx_uam.h"
#include "osc_ucxx_lockq.h"

/* ------------------------------------------------------------------------- */
/* Flushes (the primitives are in osc_ucxx_complete.c) */

/* The workers a flush through this view covers: all that touched the window
 * (process scope), or only the calling thread's (mpi_win_scope=thread). */
static ompi_osc_ucxx_worker_t *flush_scope(ompi_osc_ucxx_view_t *view)
{
    return view->scope_thread ? ompi_osc_ucxx_worker_self() : NULL;
}

/* A flush with something to wait for: lock requests not sent yet go
 * first (osc_ucxx_lazy.c; only where the target manages locks), then the
 * primitive. */
static __opal_attribute_noinline__ int flush_busy(ompi_osc_ucxx_module_t *module, int target,
                                                  ompi_osc_ucxx_worker_t *only)
{
    int rc = OMPI_SUCCESS, r2;

    if (OPAL_UNLIKELY(NULL != module->lazy_open)) {
        rc = ompi_osc_ucxx_lazy_flush(module, target);
    }
    r2 = ompi_osc_ucxx_flush_links(module, target, only);
    return OMPI_SUCCESS != rc ? rc : r2;
}

/* A flush is valid only inside a passive-target epoch on that target
 * (target -1: every target).  Inline in the flushes, with the epoch check
 * and the quiet case: a put + flush loop spends its time here. */
static inline __opal_attribute_always_inline__ int
flush_targets(ompi_osc_ucxx_view_t *view, int target)
{
    ompi_osc_ucxx_worker_t *only = flush_scope(view);
    int rc = OMPI_SUCCESS;

    OSC_UCXX_NOT_IN_HANDLER();
    if (!ompi_osc_ucxx_epoch_passive(view->core, target)) {
        return OMPI_ERR_RMA_SYNC;
    }
    /* (operations carried in a lock request not sent yet are never quiet) */
    if (NULL == view->core->lazy_open && ompi_osc_ucxx_flush_quiet(view->core, target, only)) {
        opal_atomic_mb();  /* stores through mappings are complete once visible */
    } else {
        rc = flush_busy(view->core, target, only);
    }
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
    /* (locks by message keep the order where they wait: osc_ucxx_lazy.c) */
    if (!nocheck && OPAL_UNLIKELY(NULL != ompi_osc_ucxx_order_head) &&
        OSC_UCXX_LOCKS_TARGET != module->lock_kind) {
        rc = ompi_osc_ucxx_order_before(NULL);
    }
    if (!nocheck && OMPI_SUCCESS == rc) {
        rc = ompi_osc_ucxx_state_lock(module, target, lock_type);
    }
    ompi_osc_ucxx_epoch_lock_done(module, target, lock_type, nocheck, OMPI_SUCCESS == rc);
    OSC_UCXX_VERBOSE(50, "window %u: %s lock on %d%s", module->cid,
                     MPI_LOCK_EXCLUSIVE == lock_type ? "exclusive" : "shared", target,
                     nocheck ? " (nocheck)" : "");
    return rc;
}

/* MPI_Win_unlock without a lock word to release here: MPI_MODE_NOCHECK
 * (nothing to release), or a lock by messages (its release carries the
 * epoch or follows it: osc_ucxx_lazy.c). */
static __opal_attribute_noinline__ int unlock_unchecked(ompi_osc_ucxx_module_t *module,
                                                        int target)
{
    int rc;

    if (module->peers[target].access & OSC_UCXX_TGT_MSGLOCK) {
        rc = ompi_osc_ucxx_lazy_unlock(module, target);
    } else {
        rc = ompi_osc_ucxx_flush_before(module, target, NULL, false);
        ompi_osc_ucxx_uam_sync(module, target, true);
    }
    ompi_osc_ucxx_epoch_unlock_done(module, target);
    return rc;
}

/* MPI_Win_unlock of a one-sided lock by UCX atomics (lock_kind UCX: an
 * RDMA network with remote atomics).  The release goes behind the epoch's
 * operations on our link, a fence between them, and the flush that
 * completes them completes it too: one round trip, the release never
 * ahead of an operation at the target, and nothing of the epoch left when
 * we return.  What a fence cannot order (other threads' links, messages:
 * ompi_osc_ucxx_fence_covers; a fence that failed) is completed first and
 * the release posted behind it, not waited for (the link's next flush
 * completes it): one round trip too, where waiting for it took another. */
static __opal_attribute_noinline__ int unlock_ucx(ompi_osc_ucxx_module_t *module, int target,
                                                  int type)
{
    ompi_osc_ucxx_worker_t *worker = ompi_osc_ucxx_worker_self();
    int rc, r2;

    opal_atomic_mb();  /* stores through mappings are visible before the release */
    if (NULL != worker && ompi_osc_ucxx_fence_covers(module, worker, target) &&
        OMPI_SUCCESS == ompi_osc_ucxx_fence_link(module, worker, NULL)) {
        r2 = ompi_osc_ucxx_state_unlock_post(module, target, type);
        rc = ompi_osc_ucxx_flush_before(module, target, NULL, false);
    } else {
        rc = ompi_osc_ucxx_flush_before(module, target, NULL, false);
        ompi_osc_ucxx_uam_sync(module, target, true);
        r2 = ompi_osc_ucxx_state_unlock_post(module, target, type);
    }
    ompi_osc_ucxx_epoch_unlock_done(module, target);
    return OMPI_SUCCESS != rc ? rc : r2;
}

int ompi_osc_ucxx_unlock(int target, struct ompi_win_t *win)
{
    ompi_osc_ucxx_module_t *module = OSC_UCXX_MODULE(win);
    bool nocheck;
    int type, rc, r2;
    OSC_UCXX_NOT_IN_HANDLER();

    ompi_osc_ucxx_serve(module);
    rc = ompi_osc_ucxx_epoch_unlock_begin(module, target, &type, &nocheck);
    if (OMPI_SUCCESS != rc) {
        return rc;
    }
    if (OPAL_UNLIKELY(nocheck)) {
        return unlock_unchecked(module, target);
    }
    if (OPAL_UNLIKELY(OSC_UCXX_LOCKS_UCX == module->lock_kind) &&
        !ompi_osc_ucxx_state_unlock_by_cpu(module, target)) {
        return unlock_ucx(module, target, type);
    }
    /* Our operations land before anyone else can take the lock; the lock
     * is released even when one of them failed.  (Released by a CPU
     * atomic, the flush needs no barrier of its own.) */
    rc = ompi_osc_ucxx_flush_before(module, target, NULL,
                                    ompi_osc_ucxx_state_unlock_by_cpu(module, target));
    ompi_osc_ucxx_uam_sync(module, target, true);
    r2 = ompi_osc_ucxx_state_unlock(module, target, type);
    ompi_osc_ucxx_epoch_unlock_done(module, target);
    return OMPI_SUCCESS != rc ? rc : r2;
}

/* ------------------------------------------------------------------------- */
/* lock_all / unlock_all */

/* (serving first, out of line: the common case below needs no frame) */
static __opal_attribute_noinline__ int lock_all_served(ompi_osc_ucxx_module_t *module,
                                                       int assert)
{
    OSC_UCXX_NOT_IN_HANDLER();
    ompi_osc_ucxx_serve(module);
    return ompi_osc_ucxx_epoch_lock_all(module, assert);
}

int ompi_osc_ucxx_lock_all(int assert, struct ompi_win_t *win)
{
    ompi_osc_ucxx_module_t *module = OSC_UCXX_MODULE(win);

    if (OPAL_UNLIKELY(0 != ompi_osc_ucxx_handlers || ompi_osc_ucxx_serve_wanted(module))) {
        return lock_all_served(module, assert);
    }
    return ompi_osc_ucxx_epoch_lock_all(module, assert);
}

static __opal_attribute_noinline__ int unlock_all_general(ompi_osc_ucxx_module_t *module)
{
    int r0, rc, r2;
    OSC_UCXX_NOT_IN_HANDLER();

    ompi_osc_ucxx_serve(module);
    if (OSC_UCXX_EPOCH_LOCK_ALL != ompi_osc_ucxx_epoch_kind(module)) {
        return OMPI_ERR_RMA_SYNC;
    }
    /* (locks by messages: released together, each behind its epoch) */
    r0 = OPAL_UNLIKELY(OSC_UCXX_LOCKS_TARGET == module->lock_kind)
             ? ompi_osc_ucxx_lazy_unlock_all(module)
             : OMPI_SUCCESS;
    /* (as in unlock: a shared lock released by a CPU atomic after the
     * flush orders our stores through mappings; user active messages
     * synchronize in between, so with them the flush keeps its barrier) */
    rc = ompi_osc_ucxx_flush_before(module, -1, NULL,
                                    NULL == module->uam &&
                                        ompi_osc_ucxx_epoch_releases_by_cpu(module));
    ompi_osc_ucxx_uam_sync(module, -1, true);
    r2 = ompi_osc_ucxx_epoch_end(module);  /* releases the shared locks taken */
    return OMPI_SUCCESS != r0 ? r0 : OMPI_SUCCESS != rc ? rc : r2;
}

/* The common case without a frame: nothing outstanding (the quiet flush:
 * nobody to serve either), no lock by messages, no active messages, and
 * the locks released by CPU atomics, which order our stores through
 * mappings before them (unlock_all_general then skips the barrier too). */
int ompi_osc_ucxx_unlock_all(struct ompi_win_t *win)
{
    ompi_osc_ucxx_module_t *module = OSC_UCXX_MODULE(win);

    if (OPAL_LIKELY(0 == ompi_osc_ucxx_handlers &&
                    OSC_UCXX_EPOCH_LOCK_ALL == ompi_osc_ucxx_epoch_kind(module) &&
                    OSC_UCXX_LOCKS_TARGET != module->lock_kind && NULL == module->uam &&
                    ompi_osc_ucxx_epoch_releases_by_cpu(module) &&
                    ompi_osc_ucxx_flush_quiet(module, -1, NULL))) {
        ompi_osc_ucxx_dyn_synced(module);
        return ompi_osc_ucxx_epoch_end_all(module);
    }
    return unlock_all_general(module);
}
