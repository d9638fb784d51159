/*
 * Copyright (c) 2026 The osc/ucxx authors. All rights reserved.
 * $COPYRIGHT$
 *
 * Completion: flushes and fences, the primitives the operations (ordering,
 * request completion) and the synchronizations (flush, unlock, fence,
 * complete, free) all build on.
 *
 * A flush covers only the endpoints each worker used for this window and
 * not yet covered by a completed flush (issued/flushed counters per link, so
 * threads flushing at once each wait for what they must), plus the
 * accumulates and active messages this process sent, which complete when
 * their targets acknowledge them.  Stores through direct mappings are
 * complete once a full barrier made them visible.
 *
 * A fence orders: operations issued after it on a worker to a link's
 * target land after those issued before it (mpi_win_order,
 * accumulate_ordering).
 */

#include "ompi_config.h"

#include "osc_ucxx_complete.h"

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

/* (Endpoint flushes, not worker flushes: UCX 1.13's worker flush was seen
 * returning before emulated gets had landed.) */
__opal_attribute_noinline__ int ompi_osc_ucxx_flush_links(ompi_osc_ucxx_module_t *module,
                                                          int target,
                                                          ompi_osc_ucxx_worker_t *only)
{
    ompi_osc_ucxx_ltab_t *tab = module->ltab;
    ucp_request_param_t param = {.op_attr_mask = 0};
    flush_set_t set;  /* not zero-initialized: the stack array is big */

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
        ompi_osc_ucxx_worker_t *worker = r->worker;
        int64_t row_upto = r->sum.issued;
        if (row_upto == r->sum.flushed) continue;
        for (int c = target < 0 ? 0 : target / OSC_UCXX_LINK_CHUNK;
             c < (target < 0 ? r->nchunks : target / OSC_UCXX_LINK_CHUNK + 1); ++c) {
            ompi_osc_ucxx_lchunk_t *chunk = r->chunks[c];
            if (NULL == chunk) continue;
            for (int i = 0; i < OSC_UCXX_LINK_CHUNK; ++i) {
                ompi_osc_ucxx_link_t *link = &chunk->links[i];
                int64_t upto = link->issued;
                if (upto == link->flushed ||
                    (target >= 0 && c * OSC_UCXX_LINK_CHUNK + i != target)) {
                    continue;
                }
                flush_set_add(&set, worker, link, upto, ucp_ep_flush_nbx(link->ep, &param));
            }
        }
        if (target < 0) {
            /* The row's own count, marked once every link of it is flushed. */
            set.defer = true;
            flush_set_add(&set, worker, &r->sum, row_upto, NULL);
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

int ompi_osc_ucxx_flush_module(ompi_osc_ucxx_module_t *module, int target,
                               ompi_osc_ucxx_worker_t *only)
{
    return ompi_osc_ucxx_flush_before(module, target, only, false);
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

/* ------------------------------------------------------------------------- */
/* Fences */

/* Where UCX's fence is weak (UCX 1.13) ucp_worker_fence orders at no cost.
 * Where it is strong (UCX 1.18: always, with its new protocols)
 * ucp_worker_fence flushes every endpoint of the worker and progresses it
 * inside UCX's worker lock until done, so threads that progress that
 * worker spin on the lock for the round trip, and two processes fencing at
 * once over TCP were seen to wait on each other for good (ext_order);
 * flushing the one endpoint through our wait loop costs the same round trip
 * and lets the others run.  (No link: the worker fence.) */
int ompi_osc_ucxx_fence_link(ompi_osc_ucxx_module_t *module, ompi_osc_ucxx_worker_t *worker,
                             ompi_osc_ucxx_link_t *link)
{
    if (!OSC_UCXX.order_by_flush || NULL == link) {
        ucp_worker_fence(worker->ucp);
        return OMPI_SUCCESS;
    }
    return ompi_osc_ucxx_flush_link(module, worker, link);
}

/* Does a fence on `worker` order before what follows on its link to
 * `target` everything this process still has outstanding to it?  Only
 * where that is UCX operations on this link alone: no other worker's link
 * to it busy, no message unanswered (a message completes at the target's
 * CPU, which a device's atomic behind it may overtake), no user active
 * messages; and where the fence is weak (a strong one is a flush itself). */
bool ompi_osc_ucxx_fence_covers(ompi_osc_ucxx_module_t *module, ompi_osc_ucxx_worker_t *worker,
                                int target)
{
    ompi_osc_ucxx_ltab_t *tab = module->ltab;
    int rows = tab->used;

    if (OSC_UCXX.order_by_flush || module->am_outstanding > 0 || NULL != module->uam) {
        return false;
    }
    opal_atomic_rmb();  /* rows below `used` were stored before it */
    for (int w = 0; w < rows; ++w) {
        ompi_osc_ucxx_lrow_t *r = tab->rows[w];
        ompi_osc_ucxx_link_t *link = NULL == r ? NULL : ompi_osc_ucxx_row_link(r, target);
        if (w != worker->index && NULL != link && link->issued != link->flushed) return false;
    }
    return true;
}
