/*
 * Copyright (c) 2026 The osc/ucxx authors. All rights reserved.
 * $COPYRIGHT$
 *
 * Completion notices: a message that follows an epoch's operations to their
 * target on the same endpoint and tells it they are all there, where a
 * flush (a round trip) used to come before the message or atomic that said
 * so.
 *
 * Why that is enough.  MPI_Win_complete and a closing fence need our
 * operations complete here only (our buffers free, the data of our gets
 * here); the target's MPI_Win_wait and its fence need them applied there.
 * A notice follows them on the endpoint they took and is handled by the
 * target's CPU after them:
 *   - UCX operations: ucp_worker_fence between them and the notice orders
 *     them across UCX's lanes (ompi_osc_ucxx_fence_link: a flush of the
 *     link instead where UCX's fence is strong).  Those UCX did not
 *     complete in place (it returned a request: link->held) are flushed
 *     first, so that they are complete here when we return;
 *   - accumulates and other messages of kinds the target handles in
 *     arrival order (OSC_UCXX_AM_IN_ORDER): the notice is one of them, so
 *     it is handled after them even where one waits in the target's queue.
 *     Those whose answers carry values (fetching) are waited for, since
 *     their values must be here;
 *   - what else cannot be ordered this way is completed the old way first:
 *     links of other threads' workers (flushed), messages sent on several
 *     workers and user active messages (answered).
 * Stores through mappings and cross-memory attach are complete when made.
 * A target's refusal of a message (a range error) comes back with its
 * answer, after the closing that did not wait for it; the next closing
 * waits for the answers to the messages sent before this one
 * (ompi_osc_ucxx_wait_earlier_messages), so that it reports the error and
 * a later one never does.
 *
 * PSCW.  Each target of the start group gets one notice when the epoch
 * completes; the target adds 1 to its complete word for it (a CPU atomic:
 * the word is CPU-only, osc_ucxx_state.c).  An origin that maps the
 * target's state adds there itself, after a flush of that target (on a
 * node: a memory barrier unless UCX carried something).  The post needs no
 * answer (osc_ucxx_epoch.c), so an epoch costs the post's way there and
 * the notice's way back.
 *
 * Fence, where the state segments do not synchronize (fence_by_state
 * false).  A closing fence sends a notice to each target the epoch reached
 * through UCX or messages, and every process then learns how many notices
 * it is owed from one MPI_Reduce_scatter_block of the per-target 0/1
 * vector (what MPICH's fence reduces), and waits until they are in.
 * Returning from the collective means every process has entered the fence,
 * which opens the next epoch as the barrier did; the notices travel while
 * it runs.  Closings are counted (the same count everywhere) and notices
 * are counted by the closing's parity: an origin may already be closing the
 * next epoch while this process still waits in this one, never the one
 * after (it could not finish the next closing's collective without us).
 */

#include "ompi_config.h"

#include "ompi/datatype/ompi_datatype.h"
#include "ompi/op/op.h"

#include "osc_ucxx_notice.h"
#include "osc_ucxx_am.h"

#define NOTICE_PSCW  1
#define NOTICE_FENCE 2

typedef struct {
    ompi_osc_ucxx_am_hdr_t base;
    uint32_t kind;      /* NOTICE_* */
    uint32_t parity;    /* fence: the closing's parity */
} notice_t;

/* ------------------------------------------------------------------------- */
/* Target */

static int notice_handler(ompi_osc_ucxx_module_t *module, int from, void *buf, size_t len,
                          bool deferred)
{
    notice_t *n = (notice_t *) buf;

    if (len < sizeof(*n)) {
        return OMPI_SUCCESS;
    }
    if (NOTICE_PSCW == n->kind) {
        return ompi_osc_ucxx_state_complete_add(module, module->rank);
    }
    ompi_osc_ucxx_add64(&module->fence_notices[n->parity & 1], 1);
    return OMPI_SUCCESS;
}

/* Handled in arrival order with the accumulates ahead of it. */
void ompi_osc_ucxx_notice_am_init(void)
{
    ompi_osc_ucxx_am_define(OSC_UCXX_AM_NOTICE, notice_handler, NULL,
                            OSC_UCXX_AM_SERVED | OSC_UCXX_AM_IN_ORDER);
}

/* ------------------------------------------------------------------------- */
/* Origin */

/* Messages a notice cannot follow: those whose answers carry values, and
 * every message where several workers sent some or user active messages
 * are about (once per synchronization). */
static void settle_messages(ompi_osc_ucxx_module_t *module)
{
    if (module->am_fetching > 0 || NULL != module->uam || module->ltab->used > 1) {
        ompi_osc_ucxx_wait_messages(module);
    }
}

/* What must not stay behind a notice to `target` from `worker`: links of
 * other workers, and on ours what UCX has not completed in place, flushed.
 * *mine: our link, if it has one. */
static int settle_target(ompi_osc_ucxx_module_t *module, ompi_osc_ucxx_worker_t *worker,
                         int target, ompi_osc_ucxx_link_t **mine)
{
    ompi_osc_ucxx_ltab_t *tab = module->ltab;
    int rows = tab->used, rc = OMPI_SUCCESS;

    *mine = NULL;
    opal_atomic_rmb();  /* rows below `used` were stored before it */
    for (int w = 0; w < rows; ++w) {
        ompi_osc_ucxx_lrow_t *r = tab->rows[w];
        ompi_osc_ucxx_link_t *link = NULL == r ? NULL : ompi_osc_ucxx_row_link(r, target);
        if (NULL == link || NULL == link->ep) continue;
        if (w == worker->index) *mine = link;
        if (link->issued == link->flushed || (w == worker->index && link->held <= link->flushed)) {
            continue;
        }
        int r2 = ompi_osc_ucxx_flush_link(module, r->worker, link);
        if (OMPI_SUCCESS == rc) rc = r2;
    }
    return rc;
}

/* Is anything on our link that the last notice did not follow? */
static bool unnoticed(const ompi_osc_ucxx_link_t *link)
{
    int64_t upto = link->noticed_issued > link->flushed ? link->noticed_issued : link->flushed;
    return link->issued > upto || link->sent != link->noticed_sent;
}

/* The notice, behind everything on our link to `target`. */
static int send_notice(ompi_osc_ucxx_module_t *module, ompi_osc_ucxx_worker_t *worker,
                       ompi_osc_ucxx_link_t *link, int target, uint32_t kind, uint32_t parity)
{
    notice_t *n;
    int rc = OMPI_SUCCESS;

    if (link->issued != link->flushed) {
        rc = ompi_osc_ucxx_fence_link(module, worker, link);
        if (OMPI_SUCCESS != rc) return rc;
    }
    link->noticed_issued = link->issued;
    n = malloc(sizeof(*n));
    if (NULL == n) return OMPI_ERR_OUT_OF_RESOURCE;
    n->base.cid = module->cid;
    n->base.from = module->rank;
    n->kind = kind;
    n->parity = parity;
    rc = ompi_osc_ucxx_am_send(module, worker, target, OSC_UCXX_AM_NOTICE, n, sizeof(*n),
                               sizeof(*n));
    link->noticed_sent = link->sent;
    return rc;
}

/* An error a target reported for our messages, once (as a flush does). */
static int reported(ompi_osc_ucxx_module_t *module, int rc)
{
    if (OMPI_SUCCESS == rc && OMPI_SUCCESS != module->am_error) {
        rc = opal_atomic_swap_32(&module->am_error, OMPI_SUCCESS);
    }
    return rc;
}

int ompi_osc_ucxx_notice_complete(ompi_osc_ucxx_module_t *module, const int *targets, int n)
{
    ompi_osc_ucxx_worker_t *worker = ompi_osc_ucxx_worker_self();
    ompi_osc_ucxx_link_t *link;
    int rc = OMPI_SUCCESS, r2;

    if (NULL == worker) return OMPI_ERR_OUT_OF_RESOURCE;
    ompi_osc_ucxx_serve(module);
    settle_messages(module);
    for (int i = 0; i < n; ++i) {
        int t = targets[i];
        if (t == module->rank || NULL != ompi_osc_ucxx_direct_state(module, t)) {
            r2 = ompi_osc_ucxx_flush_module(module, t, NULL);
            if (OMPI_SUCCESS == r2) r2 = ompi_osc_ucxx_state_complete_add(module, t);
        } else {
            r2 = settle_target(module, worker, t, &link);
            if (NULL == link) link = ompi_osc_ucxx_link(module, worker, t);
            if (NULL == link) r2 = OMPI_ERR_UNREACH;
            if (OMPI_SUCCESS == r2) r2 = send_notice(module, worker, link, t, NOTICE_PSCW, 0);
        }
        if (OMPI_SUCCESS == rc) rc = r2;
    }
    opal_atomic_mb();  /* stores through mappings are complete once visible */
    ompi_osc_ucxx_wait_earlier_messages(module);
    return reported(module, rc);
}

/* The notices of one closing fence: counts[t] = 1 for each target sent one. */
static int fence_send(ompi_osc_ucxx_module_t *module, const int *targets, int n,
                      uint32_t parity)
{
    ompi_osc_ucxx_worker_t *worker = ompi_osc_ucxx_worker_self();
    ompi_osc_ucxx_link_t *link;
    int rc = OMPI_SUCCESS, r2;

    if (NULL == worker) return OMPI_ERR_OUT_OF_RESOURCE;
    settle_messages(module);
    for (int i = 0; i < n; ++i) {
        int t = targets[i];
        r2 = settle_target(module, worker, t, &link);
        if (OMPI_SUCCESS == r2 && NULL != link && unnoticed(link)) {
            if (t == module->rank) {
                r2 = ompi_osc_ucxx_flush_link(module, worker, link);  /* (ourselves) */
            } else {
                r2 = send_notice(module, worker, link, t, NOTICE_FENCE, parity);
                module->fence_sent[t] = 1;
            }
        }
        if (OMPI_SUCCESS == rc) rc = r2;
    }
    return rc;
}

int ompi_osc_ucxx_notice_fence(ompi_osc_ucxx_module_t *module, const int *targets, int n)
{
    ompi_communicator_t *comm = module->comm;
    uint32_t parity = (uint32_t) (++module->fence_closes & 1);
    int32_t owed = 0;
    int rc, r2;

    if (NULL == module->fence_sent) {
        module->fence_sent = calloc(module->size, sizeof(int32_t));
        if (NULL == module->fence_sent) return OMPI_ERR_OUT_OF_RESOURCE;
    }
    rc = fence_send(module, targets, n, parity);
    opal_atomic_mb();  /* stores through mappings are visible before we say we are done */
    r2 = comm->c_coll->coll_reduce_scatter_block(module->fence_sent, &owed, 1, &ompi_mpi_int32_t.dt,
                                                 &ompi_mpi_op_sum.op, comm,
                                                 comm->c_coll->coll_reduce_scatter_block_module);
    for (int i = 0; i < n; ++i) {
        module->fence_sent[targets[i]] = 0;
    }
    if (OMPI_SUCCESS != r2) return r2;
    module->fence_owed[parity] += owed;
    while (module->fence_notices[parity] < module->fence_owed[parity]) {
        opal_progress();
    }
    opal_atomic_rmb();
    ompi_osc_ucxx_wait_earlier_messages(module);
    return reported(module, rc);
}
