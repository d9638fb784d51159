/*
 * Copyright (c) 2026 The osc/ucxx authors. All rights reserved.
 * $COPYRIGHT$
 *
 * User active messages: MPIX_Am, MPIX_Amv, MPIX_Ram, MPIX_Ramv (mpix_ucxx.h),
 * after X. Zhao's MPI-interoperable active messages (thesis, 2016, ch. 6-8;
 * docs/active-messages.md has the design and the semantics S1-S30).
 *
 * An AM runs a registered handler on a target's persistent region for
 * num_segments input segments, producing as many output segments.  It runs
 * as one or more invocations ("chunks") of whole consecutive segments.
 *
 * Where it runs (osc_ucxx_uam_origin.c issues it).
 *   - At the origin ("origin-side execution"), when the target's whole
 *     persistent region and its state segment are mapped into the origin
 *     (same node) and osc_ucxx_am_origin_compute is on, or always for AMs to
 *     self.  Not while an earlier message AM to that target is incomplete and
 *     ordering is on (it would overtake it).
 *   - Otherwise at the target, carried by messages (the "message path"):
 *     osc_ucxx_uam_origin.c sends chunks where the origin has staging room
 *     at the target, osc_ucxx_uam_recv.c receives, osc_ucxx_uam_target.c
 *     runs them and answers, osc_ucxx_uam_pool.c keeps the target's user
 *     buffers and grants ranges of them.
 * Handlers run, on either side, through osc_ucxx_uam_exec.c.
 *
 * This file: the window's AM state, made on first use and dropped by
 * MPI_Win_free, the collective registration and the epoch assertion.
 * osc_ucxx_uam_internal.h has the wire formats, the state and the staging
 * allocator.
 *
 * Completion: every message AM counts in module->am_outstanding, which
 * every flush, unlock, fence and complete already waits for; errors go to
 * module->am_error (returned by that call) or to the MPIX_Ram* request.
 * Handlers never run inside a UCX callback, and never inside another
 * handler (the drain has one thread at a time, and MPIX/osc calls from a
 * handler return MPI_ERR_OTHER).
 */

#include "ompi_config.h"

#include "ompi/op/op.h"
#include "ompi/win/win.h"

#include "osc_ucxx_uam_internal.h"

/* ------------------------------------------------------------------------- */
/* State */

ompi_osc_ucxx_uam_t *ompi_osc_ucxx_uam_get(ompi_osc_ucxx_module_t *module)
{
    ompi_osc_ucxx_uam_t *uam = module->uam;
    if (OPAL_LIKELY(NULL != uam)) return uam;
    OSC_UCXX_LOCK(&module->setup_lock);
    if (NULL == module->uam) {
        uam = calloc(1, sizeof(*uam));
        if (NULL != uam) {
            OBJ_CONSTRUCT(&uam->lock, opal_mutex_t);
            OBJ_CONSTRUCT(&uam->by_index, opal_hash_table_t);
            OBJ_CONSTRUCT(&uam->by_id, opal_hash_table_t);
            opal_hash_table_init(&uam->by_index, 16);
            opal_hash_table_init(&uam->by_id, 16);
            uam->tgts = calloc(module->size, sizeof(*uam->tgts));
            uam->orgs = calloc(module->size, sizeof(*uam->orgs));
            uam->next_grant = 1;
            opal_atomic_wmb();
            module->uam = uam;
        }
    }
    OSC_UCXX_UNLOCK(&module->setup_lock);
    return module->uam;
}

uam_org_t *ompi_osc_ucxx_uam_org(ompi_osc_ucxx_module_t *module, ompi_osc_ucxx_uam_t *uam,
                                 int from)
{
    uam_org_t *org = uam->orgs[from];
    if (OPAL_LIKELY(NULL != org)) return org;
    OSC_UCXX_LOCK(&uam->lock);
    if (NULL == uam->orgs[from] && NULL != (org = calloc(1, sizeof(*org)))) {
        org->hint_buf = -1;
        opal_atomic_wmb();
        uam->orgs[from] = org;
    }
    OSC_UCXX_UNLOCK(&uam->lock);
    return uam->orgs[from];
}

/* ------------------------------------------------------------------------- */
/* Registration (S28): collective, checked for agreement in one allreduce */

#define OP_ID_NULL    0ULL            /* NULL op (MPI_ERR_ARG) */
#define OP_ID_INVALID UINT64_MAX      /* freed or not an op (MPI_ERR_OP) */

static int allreduce_max(ompi_osc_ucxx_module_t *module, int *v, int n)
{
    ompi_communicator_t *comm = module->comm;
    return comm->c_coll->coll_allreduce(MPI_IN_PLACE, v, n, &ompi_mpi_int.dt,
                                        &ompi_mpi_op_max.op, comm,
                                        comm->c_coll->coll_allreduce_module);
}

int ompi_osc_ucxx_uam_register(struct ompi_win_t *win, uint64_t op_id, int kind, void *fn,
                               void *extra, int index)
{
    ompi_osc_ucxx_view_t *view = OSC_UCXX_VIEW(win);
    ompi_osc_ucxx_module_t *module = view->core;
    ompi_osc_ucxx_uam_t *uam;
    int err = MPI_SUCCESS, v[5], rc;
    uam_reg_t *reg = NULL;

    if (ompi_osc_ucxx_in_handler) return MPI_ERR_OTHER;
    if (view->memhandle) return OMPI_ERR_WIN;   /* (local windows: nobody to agree with) */
    uam = ompi_osc_ucxx_uam_get(module);
    if (NULL == uam) {
        err = MPI_ERR_NO_MEM;
    } else if (OP_ID_INVALID == op_id) {
        err = MPI_ERR_OP;
    } else if (OP_ID_NULL == op_id || NULL == fn || index < 0 || index >= 65536) {
        err = MPI_ERR_ARG;
    } else if (NULL != ompi_osc_ucxx_uam_reg_by_id(uam, op_id) ||
               NULL != ompi_osc_ucxx_uam_reg_by_index(uam, index)) {
        err = MPI_ERR_ARG;   /* op or index already registered */
    }
    v[0] = index;
    v[1] = -index;
    v[2] = kind;
    v[3] = -kind;
    v[4] = err;
    /* In the tables before the agreement: a peer that leaves the allreduce
     * first may send us an AM at once (S28); taken out again on failure. */
    if (MPI_SUCCESS == err) {
        reg = calloc(1, sizeof(*reg));
        if (NULL == reg) {
            err = v[4] = MPI_ERR_NO_MEM;
        } else {
            *reg = (uam_reg_t){.id = op_id, .kind = kind, .fn = fn, .extra = extra,
                               .index = index};
            OSC_UCXX_LOCK(&uam->lock);
            opal_hash_table_set_value_uint64(&uam->by_id, op_id, reg);
            opal_hash_table_set_value_uint32(&uam->by_index, (uint32_t) index, reg);
            OSC_UCXX_UNLOCK(&uam->lock);
        }
    }
    rc = allreduce_max(module, v, 5);
    if (OMPI_SUCCESS == rc && MPI_SUCCESS == err &&
        (0 != v[4] || v[0] != -v[1] || v[2] != -v[3])) {
        rc = MPI_ERR_ARG;   /* another rank failed, or the ranks disagree */
    }
    if (OMPI_SUCCESS != rc && NULL != reg) {
        OSC_UCXX_LOCK(&uam->lock);
        opal_hash_table_remove_value_uint64(&uam->by_id, op_id);
        opal_hash_table_remove_value_uint32(&uam->by_index, (uint32_t) index);
        OSC_UCXX_UNLOCK(&uam->lock);
        free(reg);
    }
    return MPI_SUCCESS != err ? err : rc;
}

int ompi_osc_ucxx_uam_deregister(struct ompi_win_t *win, uint64_t op_id)
{
    ompi_osc_ucxx_view_t *view = OSC_UCXX_VIEW(win);
    ompi_osc_ucxx_module_t *module = view->core;
    uam_reg_t *reg = ompi_osc_ucxx_uam_reg_by_id(module->uam, op_id);
    int v[1], rc;

    if (ompi_osc_ucxx_in_handler) return MPI_ERR_OTHER;
    if (view->memhandle) return OMPI_ERR_WIN;
    v[0] = NULL == reg ? MPI_ERR_OP : (reg->pending > 0 ? MPI_ERR_RMA_SYNC : MPI_SUCCESS);
    rc = allreduce_max(module, v, 1);   /* everybody agrees, or nobody removes it */
    if (OMPI_SUCCESS != rc) return rc;
    if (NULL == reg) return MPI_ERR_OP;
    if (0 != v[0]) return reg->pending > 0 ? MPI_ERR_RMA_SYNC : v[0];
    OSC_UCXX_LOCK(&module->uam->lock);
    opal_hash_table_remove_value_uint64(&module->uam->by_id, op_id);
    opal_hash_table_remove_value_uint32(&module->uam->by_index, (uint32_t) reg->index);
    OSC_UCXX_UNLOCK(&module->uam->lock);
    free(reg);
    return MPI_SUCCESS;
}

/* ------------------------------------------------------------------------- */
/* Epochs (S12, S23) */

int ompi_osc_ucxx_uam_epoch_assert(struct ompi_win_t *win, int assert)
{
    ompi_osc_ucxx_view_t *view = OSC_UCXX_VIEW(win);
    ompi_osc_ucxx_module_t *module = view->core;
    ompi_osc_ucxx_uam_t *uam;

    if (ompi_osc_ucxx_in_handler) return MPI_ERR_OTHER;
    if (view->memhandle) return OMPI_ERR_WIN;
    if (0 != (assert & ~4096)) return MPI_ERR_ASSERT;   /* MPIX_MODE_CONCURRENT_AM only */
    if (!ompi_osc_ucxx_epoch_any(module)) return OMPI_ERR_RMA_SYNC;
    if (0 == assert) return MPI_SUCCESS;
    if (NULL == (uam = ompi_osc_ucxx_uam_get(module))) return MPI_ERR_NO_MEM;
    uam->concurrent = 1;
    return MPI_SUCCESS;
}

/* After a completion call covering `target` (-1: all) completed our AMs:
 * give grants back that are held past their use (exclusive holders: at the
 * epoch's end, and at each flush under am_buf_interleave_am_detach), and
 * drop the concurrency assertion at the epoch's end. */
void ompi_osc_ucxx_uam_sync_any(ompi_osc_ucxx_module_t *module, int target, bool end)
{
    ompi_osc_ucxx_uam_t *uam = module->uam;
    int first = target < 0 ? 0 : target, last = target < 0 ? module->size : target + 1;

    if (end) uam->concurrent = 0;
    if (!end && !module->am_interleave) return;
    for (int i = first; i < last; ++i) {
        uam_tgt_t *tg = uam->tgts[i];
        if (NULL == tg || !tg->has_grant) continue;
        OSC_UCXX_LOCK(&tg->lock);
        if (tg->has_grant && ompi_osc_ucxx_space_idle(&tg->grant) &&
            opal_list_is_empty(&tg->queue)) {
            ompi_osc_ucxx_uam_grant_release(module, tg, i);
        }
        OSC_UCXX_UNLOCK(&tg->lock);
    }
}

/* MPI_Win_free: our AMs are complete (the free flushed), nobody sends us
 * more (it synchronized); drop everything. */
void ompi_osc_ucxx_uam_release(ompi_osc_ucxx_module_t *module)
{
    ompi_osc_ucxx_uam_t *uam = module->uam;
    uint64_t key;
    void *value, *node = NULL;

    if (NULL == uam) return;
    for (int i = 0; i < module->size; ++i) {
        uam_tgt_t *tg = uam->tgts[i];
        uam_org_t *org = uam->orgs[i];
        if (NULL != tg) {
            OPAL_LIST_DESTRUCT(&tg->queue);
            OBJ_DESTRUCT(&tg->lock);
            ompi_osc_ucxx_space_fini(&tg->sys);
            ompi_osc_ucxx_space_fini(&tg->hint);
            ompi_osc_ucxx_space_fini(&tg->grant);
            free(tg);
        }
        if (NULL != org) {
            while (NULL != org->execs) ompi_osc_ucxx_uam_exec_free(org, org->execs);
            free(org->sys);
            free(org->done);
            free(org);
        }
    }
    if (OPAL_SUCCESS == opal_hash_table_get_first_key_uint64(&uam->by_id, &key, &value, &node)) {
        do {
            free(value);
        } while (OPAL_SUCCESS == opal_hash_table_get_next_key_uint64(&uam->by_id, &key, &value,
                                                                      node, &node));
    }
    for (int b = 0; b < uam->nbufs; ++b) ompi_osc_ucxx_space_fini(&uam->bufs[b].space);
    free(uam->bufs);
    free(uam->grants);
    free(uam->fifo);
    free(uam->tgts);
    free(uam->orgs);
    OBJ_DESTRUCT(&uam->by_index);
    OBJ_DESTRUCT(&uam->by_id);
    OBJ_DESTRUCT(&uam->lock);
    free(uam);
    module->uam = NULL;
}
