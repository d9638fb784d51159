/*
 * Copyright (c) 2026 The osc/ucxx authors. All rights reserved.
 * $COPYRIGHT$
 *
 * Active target: fence and post/start/complete/wait/test.
 *
 * Fence protocol.  A closing fence (one that ends a fence epoch in which
 * operations may have been issued) synchronizes once, after which
 * everything aimed at any process has landed.  On one node with shared
 * memory (fence_by_state) it completes our operations (on a node: a memory
 * barrier, unless UCX carried some) and then runs a barrier through the
 * state segments.  Elsewhere each target we reached gets a notice behind
 * our operations and a reduce-scatter of the notices tells each process
 * how many to wait for (osc_ucxx_notice.c): no flush round trip.  When the
 * fence also opens the next epoch, that same synchronization opens it.
 *
 * An opening fence that closes nothing (the first fence, one after
 * MPI_MODE_NOSUCCEED, or MPI_MODE_NOPRECEDE) does not synchronize at all: it
 * publishes how many fences this process has called, in its state segment.
 * MPI-3.1 11.5.1 lets an operation reach a target only after the target has
 * called its fence, so before its first operation on a target in such an
 * epoch an origin reads that count (a load on a node, one fetching atomic
 * otherwise) and waits if the target is behind (osc_ucxx_epoch.c).
 * Processes that only expose memory, or touch few targets, never wait for
 * the rest.  No count of incoming origins is needed: origins complete their
 * operations before the closing barrier.  The decision to close depends
 * only on the sequence of fences and asserts, the same on every process.
 *
 * PSCW: a post goes to each origin through our slot in its state segment
 * (one CPU atomic on a node) or as an active message, recorded in a growing
 * list, so there is no cap on outstanding posts, and nobody answers it.
 * Start does not wait: the first operation on a target, or complete,
 * consumes that target's post.  Complete adds 1 to each target's
 * completion counter: itself where it maps the target's state, else by a
 * notice that follows its operations (osc_ucxx_notice.c); wait and test
 * compare that counter with the number of origins the exposure epochs so
 * far have named.
 */

#include "ompi_config.h"

#include "ompi/group/group.h"

#include "osc_ucxx.h"
#include "osc_ucxx_uam.h"
#include "osc_ucxx_am.h"
#include "osc_ucxx_notice.h"

/* Through the state segments where every process maps every other's
 * (osc_ucxx_state.c), else the communicator's barrier. */
static int barrier(ompi_osc_ucxx_module_t *module)
{
    if (module->fence_by_state) {
        return ompi_osc_ucxx_state_barrier(module);
    }
    return module->comm->c_coll->coll_barrier(module->comm,
                                              module->comm->c_coll->coll_barrier_module);
}

int ompi_osc_ucxx_fence(int assert, struct ompi_win_t *win)
{
    ompi_osc_ucxx_module_t *module = OSC_UCXX_MODULE(win);
    bool closes = module->fence_open && !(assert & MPI_MODE_NOPRECEDE);
    bool opens = !(assert & MPI_MODE_NOSUCCEED);
    int rc = OMPI_SUCCESS, r2;
    OSC_UCXX_NOT_IN_HANDLER();

    if (assert & ~(MPI_MODE_NOSTORE | MPI_MODE_NOPUT | MPI_MODE_NOPRECEDE |
                   MPI_MODE_NOSUCCEED)) {
        return MPI_ERR_ASSERT;  /* before anything: a collective that stays matched */
    }
    if (ompi_osc_ucxx_epoch_busy(module)) {
        return OMPI_ERR_RMA_SYNC;
    }
    ompi_osc_ucxx_serve(module);
    if (closes && !module->fence_by_state) {
        ompi_osc_ucxx_epoch_t *e = module->access;
        rc = ompi_osc_ucxx_notice_fence(module, e->targets, e->count);
    } else if (closes) {
        rc = ompi_osc_ucxx_flush_module(module, -1, NULL);
        r2 = barrier(module);
        if (OMPI_SUCCESS == rc) rc = r2;
    }
    ompi_osc_ucxx_uam_sync(module, -1, true);
    module->fence_count++;
    module->fence_open = opens;
    r2 = ompi_osc_ucxx_state_fence_publish(module, module->fence_count);
    if (OMPI_SUCCESS == rc) rc = r2;
    r2 = ompi_osc_ucxx_epoch_fence(module, opens, closes);
    if (OMPI_SUCCESS == rc) rc = r2;
    return rc;
}

/* Ranks of `group` in the window's communicator (malloc'ed), or -1. */
static int group_ranks(ompi_osc_ucxx_module_t *module, ompi_group_t *group, int **ranks)
{
    int n = ompi_group_size(group);
    int *in = calloc(n + 1, sizeof(int));
    int *out = calloc(n + 1, sizeof(int));
    bool ok = (NULL != in && NULL != out);

    for (int i = 0; ok && i < n; ++i) in[i] = i;
    ok = ok && OMPI_SUCCESS == ompi_group_translate_ranks(group, n, in,
                                                          module->comm->c_local_group, out);
    for (int i = 0; ok && i < n; ++i) ok = (MPI_UNDEFINED != out[i]);
    free(in);
    if (!ok) {
        free(out);
        return -1;
    }
    *ranks = out;
    return n;
}

/* Tell `origin` we posted: our stores before the post are visible first. */
static int send_post(ompi_osc_ucxx_module_t *module, int origin)
{
    if (ompi_osc_ucxx_state_post_by_slot(module, origin)) {
        return ompi_osc_ucxx_state_post(module, origin);
    }
    return ompi_osc_ucxx_post_send(module, origin);
}

int ompi_osc_ucxx_start(struct ompi_group_t *group, int assert, struct ompi_win_t *win)
{
    ompi_osc_ucxx_module_t *module = OSC_UCXX_MODULE(win);
    int n, *ranks;
    OSC_UCXX_NOT_IN_HANDLER();

    ompi_osc_ucxx_serve(module);
    if (assert & ~MPI_MODE_NOCHECK) {
        return MPI_ERR_ASSERT;
    }
    n = group_ranks(module, group, &ranks);
    if (n < 0) {
        return MPI_ERR_GROUP;
    }
    return ompi_osc_ucxx_epoch_start(module, ranks, n, assert);  /* takes ranks */
}

int ompi_osc_ucxx_complete(struct ompi_win_t *win)
{
    ompi_osc_ucxx_module_t *module = OSC_UCXX_MODULE(win);
    ompi_osc_ucxx_epoch_t *e = module->access;
    int rc, r2;
    OSC_UCXX_NOT_IN_HANDLER();

    if (OSC_UCXX_EPOCH_START != ompi_osc_ucxx_epoch_kind(module)) {
        return OMPI_ERR_RMA_SYNC;
    }
    /* A target's completion counter counts over all its exposure epochs, so
     * we add to it only after consuming the post of the epoch we close. */
    rc = ompi_osc_ucxx_epoch_take_posts(module);
    /* Each target learns we are done behind our operations on it. */
    if (OMPI_SUCCESS == rc) rc = ompi_osc_ucxx_notice_complete(module, e->targets, e->count);
    ompi_osc_ucxx_uam_sync(module, -1, true);
    r2 = ompi_osc_ucxx_epoch_end(module);
    return OMPI_SUCCESS != rc ? rc : r2;
}

int ompi_osc_ucxx_post(struct ompi_group_t *group, int assert, struct ompi_win_t *win)
{
    ompi_osc_ucxx_module_t *module = OSC_UCXX_MODULE(win);
    int n, *ranks, rc;
    OSC_UCXX_NOT_IN_HANDLER();

    ompi_osc_ucxx_serve(module);
    if (assert & ~(MPI_MODE_NOCHECK | MPI_MODE_NOSTORE | MPI_MODE_NOPUT)) {
        return MPI_ERR_ASSERT;
    }
    n = group_ranks(module, group, &ranks);
    if (n < 0) {
        return MPI_ERR_GROUP;
    }
    rc = ompi_osc_ucxx_epoch_post(module, n);
    /* Our local stores must be visible before an origin may access. */
    opal_atomic_mb();
    for (int i = 0; OMPI_SUCCESS == rc && !(assert & MPI_MODE_NOCHECK) && i < n; ++i) {
        rc = send_post(module, ranks[i]);
    }
    free(ranks);
    return rc;
}

int ompi_osc_ucxx_wait(struct ompi_win_t *win)
{
    ompi_osc_ucxx_module_t *module = OSC_UCXX_MODULE(win);
    OSC_UCXX_NOT_IN_HANDLER();

    if (!module->exposed) {
        return OMPI_ERR_RMA_SYNC;
    }
    while (!ompi_osc_ucxx_epoch_exposure_done(module)) {
        opal_progress();
    }
    return OMPI_SUCCESS;
}

int ompi_osc_ucxx_test(struct ompi_win_t *win, int *flag)
{
    ompi_osc_ucxx_module_t *module = OSC_UCXX_MODULE(win);
    OSC_UCXX_NOT_IN_HANDLER();

    ompi_osc_ucxx_serve(module);
    if (!module->exposed) {
        return OMPI_ERR_RMA_SYNC;
    }
    *flag = ompi_osc_ucxx_epoch_exposure_done(module);
    if (!*flag) {
        opal_progress();
        *flag = ompi_osc_ucxx_epoch_exposure_done(module);
    }
    return OMPI_SUCCESS;
}
