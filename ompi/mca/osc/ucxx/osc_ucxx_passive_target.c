/*
 * Copyright (c) 2026 The osc/ucxx authors. All rights reserved.
 * $COPYRIGHT$
 *
 * Passive target: lock/unlock, lock_all/unlock_all, flushes and sync.
 *
 * Each window's state segment holds one 64-bit lock word per process: readers
 * in the low 32 bits, writers in the high 32 (see lock_acquire).  Every step
 * is an atomic add, release included, never a swap, so a release can never
 * wipe out a concurrent increment.
 *
 * lock_all takes nothing up front: the shared lock on a target is taken the
 * first time the epoch touches it, so lock_all costs O(targets used), not O(P).
 */

#include "ompi_config.h"

#include "osc_ucxx.h"

/* ------------------------------------------------------------------------- */
/* Lock word */

static int lock_fetch_add(ompi_osc_ucxx_module_t *module, int target, uint64_t delta,
                          uint64_t *old)
{
    return ompi_osc_ucxx_state_atomic(module, target, OSC_UCXX_STATE_LOCK, UCP_ATOMIC_OP_ADD,
                                      delta, 0, old);
}

/* Wait until no writer holds or claims the lock word. */
static int lock_wait_no_writer(ompi_osc_ucxx_module_t *module, int target)
{
    uint64_t word;
    int rc;
    do {
        opal_progress();  /* whoever holds it may need us to serve them */
        rc = lock_fetch_add(module, target, 0, &word);
    } while (OMPI_SUCCESS == rc && (word >> 32) != 0);
    return rc;
}

/* Writers count in the high half: a writer adds EXCL, and owns the lock if
 * no other writer was there; it then waits for the readers inside to leave,
 * while new readers see it and back out.  So a stream of readers cannot
 * starve a writer. */
static int lock_acquire(ompi_osc_ucxx_module_t *module, int target, int type)
{
    uint64_t mine = (MPI_LOCK_EXCLUSIVE == type) ? OSC_UCXX_LOCK_EXCL : 1;
    uint64_t old;
    int rc;

    for (;;) {
        rc = lock_fetch_add(module, target, mine, &old);
        if (OMPI_SUCCESS != rc) return rc;
        if (0 == (old >> 32)) {
            break;
        }
        rc = lock_fetch_add(module, target, -mine, NULL);
        if (OMPI_SUCCESS == rc) rc = lock_wait_no_writer(module, target);
        if (OMPI_SUCCESS != rc) return rc;
    }
    while (MPI_LOCK_EXCLUSIVE == type && 0 != (old & OSC_UCXX_LOCK_READERS)) {
        opal_progress();
        rc = lock_fetch_add(module, target, 0, &old);
        if (OMPI_SUCCESS != rc) return rc;
    }
    return OMPI_SUCCESS;
}

static int lock_release(ompi_osc_ucxx_module_t *module, int target, int type)
{
    uint64_t delta = (MPI_LOCK_EXCLUSIVE == type) ? (uint64_t) -OSC_UCXX_LOCK_EXCL
                                                  : (uint64_t) -1;
    return ompi_osc_ucxx_state_atomic(module, target, OSC_UCXX_STATE_LOCK, UCP_ATOMIC_OP_ADD,
                                      delta, 0, NULL);
}

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

/* Complete this process's operations on the window (to `target`, or to all
 * when target < 0): the endpoints each worker used for this window and not
 * yet covered by a completed flush, and only those.  (Endpoint flushes, not
 * worker flushes: UCX 1.13's worker flush was seen returning before emulated
 * gets had landed.) */
int ompi_osc_ucxx_flush_module(ompi_osc_ucxx_module_t *module, int target,
                               ompi_osc_ucxx_worker_t *only)
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
        ompi_osc_ucxx_link_t *links = tab->links[w];
        if (NULL != only && w != only->index) continue;
        if (NULL == links) continue;
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
    while (module->am_outstanding > 0) {
        opal_progress();
    }
    /* Stores through direct mappings are complete once they are visible. */
    opal_atomic_mb();
    return set.rc;
}

/* Complete the UCX operations on one link (not the active messages). */
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

/* A flush is valid only inside a passive-target epoch on that target. */
static int check_passive(ompi_osc_ucxx_module_t *module, int target)
{
    if (module->epoch & OSC_UCXX_EPOCH_LOCK_ALL) {
        return OMPI_SUCCESS;
    }
    for (int i = 0; i < module->num_locks; ++i) {
        if (target < 0 || module->locks[i].target == target) {
            return OMPI_SUCCESS;
        }
    }
    return OMPI_ERR_RMA_SYNC;
}

/* The workers a flush through this view covers: all that touched the window
 * (process scope), or only the calling thread's (mpi_win_scope=thread). */
static ompi_osc_ucxx_worker_t *flush_scope(ompi_osc_ucxx_view_t *view)
{
    return view->scope_thread ? ompi_osc_ucxx_worker_self() : NULL;
}

int ompi_osc_ucxx_flush(int target, struct ompi_win_t *win)
{
    ompi_osc_ucxx_view_t *view = OSC_UCXX_VIEW(win);
    int rc = check_passive(view->core, target);
    return OMPI_SUCCESS == rc ? ompi_osc_ucxx_flush_module(view->core, target, flush_scope(view))
                              : rc;
}

int ompi_osc_ucxx_flush_all(struct ompi_win_t *win)
{
    ompi_osc_ucxx_view_t *view = OSC_UCXX_VIEW(win);
    int rc = check_passive(view->core, -1);
    return OMPI_SUCCESS == rc ? ompi_osc_ucxx_flush_module(view->core, -1, flush_scope(view))
                              : rc;
}

/* UCX reports no local completion apart from remote completion for
 * operations without a request, so the local flushes are full flushes. */
int ompi_osc_ucxx_flush_local(int target, struct ompi_win_t *win)
{
    return ompi_osc_ucxx_flush(target, win);
}

int ompi_osc_ucxx_flush_local_all(struct ompi_win_t *win)
{
    return ompi_osc_ucxx_flush_all(win);
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

static int find_lock(ompi_osc_ucxx_module_t *module, int target)
{
    for (int i = 0; i < module->num_locks; ++i) {
        if (module->locks[i].target == target) return i;
    }
    return -1;
}

int ompi_osc_ucxx_lock(int lock_type, int target, int assert, struct ompi_win_t *win)
{
    ompi_osc_ucxx_module_t *module = OSC_UCXX_MODULE(win);
    int epoch = module->epoch, rc;
    bool taken = !(assert & MPI_MODE_NOCHECK);

    ompi_osc_ucxx_serve(module);
    /* A fence epoch in which nothing was issued ends here; anything else
     * active on this window forbids a lock. */
    if ((epoch & ~(OSC_UCXX_EPOCH_FENCE | OSC_UCXX_EPOCH_FENCE_SYNC | OSC_UCXX_EPOCH_POST)) ||
        (epoch & OSC_UCXX_EPOCH_FENCE_OPS)) {
        return OMPI_ERR_RMA_SYNC;
    }
    OPAL_THREAD_LOCK(&module->sync_lock);
    rc = (find_lock(module, target) >= 0) ? OMPI_ERR_RMA_SYNC : OMPI_SUCCESS;
    if (OMPI_SUCCESS == rc && module->num_locks == module->locks_cap) {
        int cap = module->locks_cap ? 2 * module->locks_cap : 4;
        void *tmp = realloc(module->locks, cap * sizeof(*module->locks));
        if (NULL == tmp) {
            rc = OMPI_ERR_OUT_OF_RESOURCE;
        } else {
            module->locks = tmp;
            module->locks_cap = cap;
        }
    }
    OPAL_THREAD_UNLOCK(&module->sync_lock);
    if (OMPI_SUCCESS != rc) {
        return rc;
    }

    if (taken) {
        rc = lock_acquire(module, target, lock_type);
        if (OMPI_SUCCESS != rc) return rc;
    }
    opal_atomic_fetch_and_32((volatile int32_t *) &module->epoch, ~OSC_UCXX_EPOCH_FENCE);
    OPAL_THREAD_LOCK(&module->sync_lock);
    module->locks[module->num_locks++] = (ompi_osc_ucxx_lock_t){target, lock_type, taken};
    OPAL_THREAD_UNLOCK(&module->sync_lock);
    OSC_UCXX_VERBOSE(50, "window %u: %s lock on %d%s", module->cid,
                     MPI_LOCK_EXCLUSIVE == lock_type ? "exclusive" : "shared", target,
                     taken ? "" : " (nocheck)");
    return OMPI_SUCCESS;
}

int ompi_osc_ucxx_unlock(int target, struct ompi_win_t *win)
{
    ompi_osc_ucxx_module_t *module = OSC_UCXX_MODULE(win);
    ompi_osc_ucxx_lock_t lock;
    int idx, rc;

    ompi_osc_ucxx_serve(module);
    OPAL_THREAD_LOCK(&module->sync_lock);
    idx = find_lock(module, target);
    if (idx >= 0) lock = module->locks[idx];
    OPAL_THREAD_UNLOCK(&module->sync_lock);
    if (idx < 0) {
        return OMPI_ERR_RMA_SYNC;
    }

    rc = ompi_osc_ucxx_flush_module(module, target, NULL);
    if (OMPI_SUCCESS == rc && lock.taken) {
        rc = lock_release(module, target, lock.type);
    }
    OPAL_THREAD_LOCK(&module->sync_lock);
    idx = find_lock(module, target);
    module->locks[idx] = module->locks[--module->num_locks];
    OPAL_THREAD_UNLOCK(&module->sync_lock);
    return rc;
}

/* ------------------------------------------------------------------------- */
/* lock_all / unlock_all */

int ompi_osc_ucxx_lock_all(int assert, struct ompi_win_t *win)
{
    ompi_osc_ucxx_module_t *module = OSC_UCXX_MODULE(win);
    int epoch = module->epoch;
    size_t bytes = (module->size + 7) / 8;

    ompi_osc_ucxx_serve(module);
    if ((epoch & ~(OSC_UCXX_EPOCH_FENCE | OSC_UCXX_EPOCH_FENCE_SYNC | OSC_UCXX_EPOCH_POST)) ||
        (epoch & OSC_UCXX_EPOCH_FENCE_OPS) || module->num_locks > 0) {
        return OMPI_ERR_RMA_SYNC;
    }
    if (NULL == module->lock_all_taken) {
        module->lock_all_taken = calloc(bytes, 1);
        if (NULL == module->lock_all_taken) return OMPI_ERR_OUT_OF_RESOURCE;
    } else {
        memset(module->lock_all_taken, 0, bytes);
    }
    module->lock_all_count = 0;
    module->lock_all_assert = assert & MPI_MODE_NOCHECK;
    opal_atomic_wmb();
    opal_atomic_fetch_and_32((volatile int32_t *) &module->epoch, ~OSC_UCXX_EPOCH_FENCE);
    opal_atomic_fetch_or_32((volatile int32_t *) &module->epoch, OSC_UCXX_EPOCH_LOCK_ALL);
    return OMPI_SUCCESS;
}

/* First access to `target` in a lock_all epoch: take its shared lock. */
int ompi_osc_ucxx_lock_all_acquire(ompi_osc_ucxx_module_t *module, int target)
{
    uint8_t bit = 1 << (target & 7);
    int rc = OMPI_SUCCESS;

    OPAL_THREAD_LOCK(&module->acquire_lock);
    if (!(module->lock_all_taken[target >> 3] & bit)) {
        if (module->lock_all_count == module->lock_all_cap) {
            int cap = module->lock_all_cap ? 2 * module->lock_all_cap : 8;
            void *tmp = realloc(module->lock_all_list, cap * sizeof(int));
            if (NULL == tmp) {
                rc = OMPI_ERR_OUT_OF_RESOURCE;
                goto out;
            }
            module->lock_all_list = tmp;
            module->lock_all_cap = cap;
        }
        rc = lock_acquire(module, target, MPI_LOCK_SHARED);
        if (OMPI_SUCCESS == rc) {
            module->lock_all_list[module->lock_all_count++] = target;
            opal_atomic_wmb();
            module->lock_all_taken[target >> 3] |= bit;
        }
    }
out:
    OPAL_THREAD_UNLOCK(&module->acquire_lock);
    return rc;
}

int ompi_osc_ucxx_unlock_all(struct ompi_win_t *win)
{
    ompi_osc_ucxx_module_t *module = OSC_UCXX_MODULE(win);
    int rc;

    ompi_osc_ucxx_serve(module);
    if (!(module->epoch & OSC_UCXX_EPOCH_LOCK_ALL)) {
        return OMPI_ERR_RMA_SYNC;
    }
    rc = ompi_osc_ucxx_flush_module(module, -1, NULL);
    OPAL_THREAD_LOCK(&module->acquire_lock);
    for (int i = 0; i < module->lock_all_count; ++i) {
        int r = lock_release(module, module->lock_all_list[i], MPI_LOCK_SHARED);
        if (OMPI_SUCCESS != r) rc = r;
    }
    module->lock_all_count = 0;
    OPAL_THREAD_UNLOCK(&module->acquire_lock);
    opal_atomic_fetch_and_32((volatile int32_t *) &module->epoch, ~OSC_UCXX_EPOCH_LOCK_ALL);
    return rc;
}
