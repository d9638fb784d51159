/*
 * Copyright (c) 2026 The osc/ucxx authors. All rights reserved.
 * $COPYRIGHT$
 *
 * Put and get (plain and request-based), epoch and range checks, datatype
 * walking, and atomics on peers' state segments.
 */

#include "ompi_config.h"

#include "opal/datatype/opal_convertor.h"
#include "ompi/datatype/ompi_datatype.h"

#include "osc_ucxx.h"
#include "osc_ucxx_dt.h"

/* ------------------------------------------------------------------------- */
/* Checks */

static bool target_locked(ompi_osc_ucxx_module_t *module, int target)
{
    bool found = false;
    OPAL_THREAD_LOCK(&module->sync_lock);
    for (int i = 0; i < module->num_locks && !found; ++i) {
        found = (module->locks[i].target == target);
    }
    OPAL_THREAD_UNLOCK(&module->sync_lock);
    return found;
}

/* May this process access `target` now?  The common cases (fence, lock_all,
 * PSCW) are answered from flags without a lock. */
int ompi_osc_ucxx_check_access(ompi_osc_ucxx_module_t *module, int target)
{
    int epoch = module->epoch;

    if (epoch & OSC_UCXX_EPOCH_LOCK_ALL) {
        if (OPAL_UNLIKELY(!module->lock_all_assert &&
                          !(module->lock_all_taken[target >> 3] & (1 << (target & 7))))) {
            return ompi_osc_ucxx_lock_all_acquire(module, target);
        }
        return OMPI_SUCCESS;
    }
    if (epoch & OSC_UCXX_EPOCH_FENCE) {
        if (OPAL_UNLIKELY(!(epoch & OSC_UCXX_EPOCH_FENCE_OPS))) {
            opal_atomic_fetch_or_32((volatile int32_t *) &module->epoch,
                                    OSC_UCXX_EPOCH_FENCE_OPS);
        }
        if (OPAL_UNLIKELY((epoch & OSC_UCXX_EPOCH_FENCE_SYNC) &&
                          module->peers[target].fence_seen < module->fence_count)) {
            return ompi_osc_ucxx_fence_sync(module, target);
        }
        return OMPI_SUCCESS;
    }
    if ((epoch & OSC_UCXX_EPOCH_START) && ompi_osc_ucxx_bit(module->start_map, target)) {
        if (OPAL_UNLIKELY(module->start_unposted_count > 0 &&
                          ompi_osc_ucxx_bit(module->start_unposted, target))) {
            return ompi_osc_ucxx_start_sync(module, target);
        }
        return OMPI_SUCCESS;
    }
    if (module->num_locks > 0 && target_locked(module, target)) {
        return OMPI_SUCCESS;
    }
    OSC_UCXX_VERBOSE(20, "window %u: access to %d outside an epoch", module->cid, target);
    return OMPI_ERR_RMA_SYNC;
}

/* Is [disp, disp + count elements of dt) inside the target's window?
 * Returns the remote address of displacement `disp` in *remote and the remote
 * bytes the access touches in [*lo, *hi).  Dynamic windows are checked
 * against the attached regions when the path is resolved. */
int ompi_osc_ucxx_check_range(ompi_osc_ucxx_module_t *module, int target, ptrdiff_t disp,
                              int count, struct ompi_datatype_t *dt, uint64_t *remote,
                              uint64_t *lo, uint64_t *hi)
{
    ompi_osc_ucxx_peer_t *peer = &module->peers[target];
    ptrdiff_t lb, extent, true_lb, true_extent, first, end, offset;

    offset = disp * (ptrdiff_t) peer->disp_unit;
    *remote = peer->base + offset;
    *lo = *hi = *remote;
    if (0 == count) {
        return OMPI_SUCCESS;
    }
    ompi_datatype_get_extent(dt, &lb, &extent);
    ompi_datatype_get_true_extent(dt, &true_lb, &true_extent);
    first = offset + true_lb + (extent < 0 ? (count - 1) * extent : 0);
    end = offset + true_lb + true_extent + (extent > 0 ? (count - 1) * extent : 0);
    *lo = peer->base + first;
    *hi = peer->base + end;
    if (MPI_WIN_FLAVOR_DYNAMIC == module->flavor) {
        return OMPI_SUCCESS;
    }
    if (OPAL_UNLIKELY(disp < 0 || first < 0 || end > (ptrdiff_t) peer->size)) {
        OSC_UCXX_VERBOSE(20, "window %u: access [%td, %td) outside rank %d's %" PRIu64
                         " bytes", module->cid, first, end, target, peer->size);
        return OMPI_ERR_RMA_RANGE;
    }
    return OMPI_SUCCESS;
}

/* check_range through a view: a memory-handle window names one target and
 * counts displacements from the handle's base, within the handle's size. */
int ompi_osc_ucxx_view_range(ompi_osc_ucxx_view_t *view, int target, ptrdiff_t disp, int count,
                             struct ompi_datatype_t *dt, uint64_t *remote, uint64_t *lo,
                             uint64_t *hi)
{
    int rc;
    if (OPAL_LIKELY(!view->memhandle)) {
        return ompi_osc_ucxx_check_range(view->core, target, disp, count, dt, remote, lo, hi);
    }
    if (target != view->mh_target) {
        return MPI_ERR_RANK;
    }
    if (disp < 0) {
        return OMPI_ERR_RMA_RANGE;
    }
    rc = ompi_osc_ucxx_check_range(view->core, target,
                                   (ptrdiff_t) view->mh_base + disp * view->mh_disp_unit, count,
                                   dt, remote, lo, hi);
    if (OMPI_SUCCESS == rc && count > 0 &&
        (*lo < view->mh_base || *hi > view->mh_base + view->mh_size)) {
        rc = OMPI_ERR_RMA_RANGE;
    }
    return rc;
}

/* ------------------------------------------------------------------------- */
/* One contiguous transfer */

static inline int xfer(ompi_osc_ucxx_module_t *module, ompi_osc_ucxx_path_t *path,
                       int target, bool is_put, void *local, uint64_t remote, size_t len,
                       ompi_osc_ucxx_request_t *req)
{
    ompi_osc_ucxx_link_t *link = path->link;
    ucp_request_param_t param;
    ucs_status_ptr_t sp;

    if (OPAL_LIKELY(path->mapped)) {
        char *p = (char *) (uintptr_t) (remote + path->delta);
        if (is_put) {
            memcpy(p, local, len);
        } else {
            memcpy(local, p, len);
        }
        return OMPI_SUCCESS;
    }

    param.op_attr_mask = 0;
    if (NULL != req) {
        param.op_attr_mask = UCP_OP_ATTR_FIELD_CALLBACK | UCP_OP_ATTR_FIELD_USER_DATA;
        param.cb.send = ompi_osc_ucxx_request_ucx_cb;
        param.user_data = req;
        OPAL_THREAD_ADD_FETCH32(&req->outstanding, 1);
    }
    sp = is_put ? ucp_put_nbx(link->ep, local, len, remote, path->rkey, &param)
                : ucp_get_nbx(link->ep, local, len, remote, path->rkey, &param);
    ompi_osc_ucxx_link_dirty(module, link, target);  /* counted once posted */
    if (OPAL_LIKELY(NULL == sp)) {           /* done already */
        if (NULL != req) ompi_osc_ucxx_request_op_done(req);
    } else if (UCS_PTR_IS_ERR(sp)) {
        if (NULL != req) ompi_osc_ucxx_request_op_done(req);
        OSC_UCXX_VERBOSE(1, "%s failed: %s", is_put ? "ucp_put_nbx" : "ucp_get_nbx",
                         ucs_status_string(UCS_PTR_STATUS(sp)));
        return OMPI_ERROR;
    } else if (NULL == req) {
        ucp_request_free(sp);                /* a flush completes it */
    }
    return OMPI_SUCCESS;
}

/* ------------------------------------------------------------------------- */
/* Put and get, any datatypes */

static int put_get_pieces(ompi_osc_ucxx_module_t *module, ompi_osc_ucxx_path_t *path,
                          int target, bool is_put, void *origin_addr, int origin_count,
                          struct ompi_datatype_t *origin_dt, uint64_t remote, int target_count,
                          struct ompi_datatype_t *target_dt, ompi_osc_ucxx_request_t *req);

int ompi_osc_ucxx_put_get(ompi_osc_ucxx_view_t *view, bool is_put, void *origin_addr,
                          int origin_count, struct ompi_datatype_t *origin_dt, int target,
                          ptrdiff_t target_disp, int target_count,
                          struct ompi_datatype_t *target_dt, ompi_osc_ucxx_request_t *req)
{
    ompi_osc_ucxx_module_t *module = view->core;
    ompi_osc_ucxx_worker_t *worker = ompi_osc_ucxx_view_worker(view);
    ompi_osc_ucxx_path_t path;
    size_t origin_size, target_size;
    uint64_t remote, lo, hi;
    int rc;

    if (target == module->rank) {
        ompi_osc_ucxx_serve(module);  /* polling our own window serves peers */
    }
    rc = ompi_osc_ucxx_check_access(module, target);
    if (OPAL_UNLIKELY(OMPI_SUCCESS != rc)) {
        return rc;
    }
    rc = ompi_osc_ucxx_view_range(view, target, target_disp, target_count, target_dt, &remote,
                                  &lo, &hi);
    if (OPAL_UNLIKELY(OMPI_SUCCESS != rc)) {
        return rc;
    }
    ompi_datatype_type_size(origin_dt, &origin_size);
    ompi_datatype_type_size(target_dt, &target_size);
    origin_size *= origin_count;
    target_size *= target_count;
    if (OPAL_UNLIKELY(origin_size != target_size)) {
        return MPI_ERR_TYPE;  /* the type signatures cannot match */
    }
    if (0 == origin_size) {
        return OMPI_SUCCESS;
    }
    if (OPAL_UNLIKELY(NULL == worker)) {
        return OMPI_ERR_OUT_OF_RESOURCE;
    }
    rc = ompi_osc_ucxx_resolve(module, worker, target, lo, hi, &path);
    if (OPAL_UNLIKELY(OMPI_SUCCESS != rc)) {
        return rc;
    }
    if (OPAL_UNLIKELY(view->ordered && path.partial)) {
        /* one ordered stream per target: its private edges need UCX, so all
         * of it goes through UCX (as the accumulates on it do) */
        path.mapped = false;
    }

    if (OPAL_LIKELY(ompi_datatype_is_contiguous_memory_layout(origin_dt, origin_count) &&
                    ompi_datatype_is_contiguous_memory_layout(target_dt, target_count))) {
        rc = xfer(module, &path, target, is_put, (char *) origin_addr + origin_dt->super.true_lb,
                  remote + target_dt->super.true_lb, origin_size, req);
    } else {
        rc = put_get_pieces(module, &path, target, is_put, origin_addr, origin_count,
                            origin_dt, remote, target_count, target_dt, req);
    }
    if (OPAL_UNLIKELY(view->ordered) && !path.mapped) {
        /* mpi_win_order: later operations land after this one */
        ucp_worker_fence(worker->ucp);
    }
    return rc;
}

/* Walk both layouts at once, one transfer per matching piece. */
static int put_get_pieces(ompi_osc_ucxx_module_t *module, ompi_osc_ucxx_path_t *path,
                          int target, bool is_put, void *origin_addr, int origin_count,
                          struct ompi_datatype_t *origin_dt, uint64_t remote, int target_count,
                          struct ompi_datatype_t *target_dt, ompi_osc_ucxx_request_t *req)
{

    ompi_osc_ucxx_dt_iter_t o, t;
    char *lp;
    uint64_t rp;
    size_t len;
    int rc = OMPI_SUCCESS;

    ompi_osc_ucxx_dt_iter_init(&o, origin_addr, origin_count, origin_dt);
    ompi_osc_ucxx_dt_iter_init(&t, (void *) (uintptr_t) remote, target_count, target_dt);
    while (OMPI_SUCCESS == rc && ompi_osc_ucxx_dt_iter_pair(&o, &t, &lp, &rp, &len)) {
        rc = xfer(module, path, target, is_put, lp, rp, len, req);
    }
    ompi_osc_ucxx_dt_iter_fini(&o);
    ompi_osc_ucxx_dt_iter_fini(&t);
    return rc;
}

int ompi_osc_ucxx_put(const void *origin_addr, int origin_count,
                      struct ompi_datatype_t *origin_dt, int target, ptrdiff_t target_disp,
                      int target_count, struct ompi_datatype_t *target_dt,
                      struct ompi_win_t *win)
{
    return ompi_osc_ucxx_put_get(OSC_UCXX_VIEW(win), true, (void *) origin_addr, origin_count,
                                 origin_dt, target, target_disp, target_count, target_dt, NULL);
}

int ompi_osc_ucxx_get(void *origin_addr, int origin_count, struct ompi_datatype_t *origin_dt,
                      int target, ptrdiff_t target_disp, int target_count,
                      struct ompi_datatype_t *target_dt, struct ompi_win_t *win)
{
    return ompi_osc_ucxx_put_get(OSC_UCXX_VIEW(win), false, origin_addr, origin_count,
                                 origin_dt, target, target_disp, target_count, target_dt, NULL);
}

/* Request-based: the request completes when every piece is locally complete
 * (ucp completion of that operation), never through a worker flush. */
static int rput_rget(struct ompi_win_t *win, bool is_put, void *origin_addr, int origin_count,
                     struct ompi_datatype_t *origin_dt, int target, ptrdiff_t target_disp,
                     int target_count, struct ompi_datatype_t *target_dt,
                     struct ompi_request_t **request)
{
    ompi_osc_ucxx_view_t *view = OSC_UCXX_VIEW(win);
    ompi_osc_ucxx_request_t *req;
    int rc;

    rc = ompi_osc_ucxx_request_alloc(win, ompi_osc_ucxx_view_worker(view), &req);
    if (OMPI_SUCCESS != rc) {
        return rc;
    }
    rc = ompi_osc_ucxx_put_get(view, is_put, origin_addr, origin_count, origin_dt, target, target_disp,
                 target_count, target_dt, req);
    if (OMPI_SUCCESS != rc) {
        ompi_osc_ucxx_request_abandon(req);
        return rc;
    }
    ompi_osc_ucxx_request_op_done(req);  /* drop the issuing reference */
    *request = &req->super;
    return OMPI_SUCCESS;
}

int ompi_osc_ucxx_rput(const void *origin_addr, int origin_count,
                       struct ompi_datatype_t *origin_dt, int target, ptrdiff_t target_disp,
                       int target_count, struct ompi_datatype_t *target_dt,
                       struct ompi_win_t *win, struct ompi_request_t **request)
{
    return rput_rget(win, true, (void *) origin_addr, origin_count, origin_dt, target,
                     target_disp, target_count, target_dt, request);
}

int ompi_osc_ucxx_rget(void *origin_addr, int origin_count, struct ompi_datatype_t *origin_dt,
                       int target, ptrdiff_t target_disp, int target_count,
                       struct ompi_datatype_t *target_dt, struct ompi_win_t *win,
                       struct ompi_request_t **request)
{
    return rput_rget(win, false, origin_addr, origin_count, origin_dt, target, target_disp,
                     target_count, target_dt, request);
}

/* ------------------------------------------------------------------------- */
/* 64-bit atomics on a peer's state segment (locks, counters).  On a mapped
 * segment they are CPU atomics; UCX's shared-memory atomics are CPU atomics
 * too, and its software atomics run on the target's CPU, so both agree. */

int ompi_osc_ucxx_state_atomic(ompi_osc_ucxx_module_t *module, int target, size_t offset,
                               ucp_atomic_op_t op, uint64_t value, uint64_t compare,
                               uint64_t *result)
{
    char *direct = ompi_osc_ucxx_direct_state(module, target);
    ompi_osc_ucxx_worker_t *worker;
    ompi_osc_ucxx_link_t *link;
    ucp_request_param_t param;
    uint64_t reply = compare;
    ucs_status_ptr_t sp;
    int rc;

    if (NULL != direct) {
        uint64_t *word = (uint64_t *) (direct + offset);
        switch (op) {
        case UCP_ATOMIC_OP_ADD:
            reply = __atomic_fetch_add(word, value, __ATOMIC_ACQ_REL);
            break;
        case UCP_ATOMIC_OP_SWAP:
            reply = __atomic_exchange_n(word, value, __ATOMIC_ACQ_REL);
            break;
        case UCP_ATOMIC_OP_CSWAP:
            __atomic_compare_exchange_n(word, &reply, value, false, __ATOMIC_ACQ_REL,
                                        __ATOMIC_ACQUIRE);
            break;
        default:
            return OMPI_ERR_NOT_SUPPORTED;
        }
        if (NULL != result) *result = reply;
        return OMPI_SUCCESS;
    }

    worker = ompi_osc_ucxx_worker_self();
    link = (NULL != worker) ? ompi_osc_ucxx_link(module, worker, target) : NULL;
    if (NULL == link) {
        return OMPI_ERR_UNREACH;
    }
    /* Always fetching, so completion means done at the target.  CSWAP takes
     * the compare value in `buffer` and the new value in the reply buffer. */
    param.op_attr_mask = UCP_OP_ATTR_FIELD_DATATYPE | UCP_OP_ATTR_FIELD_REPLY_BUFFER;
    param.datatype = ucp_dt_make_contig(sizeof(uint64_t));
    if (UCP_ATOMIC_OP_CSWAP == op) {
        reply = value;
        value = compare;
    }
    param.reply_buffer = &reply;
    sp = ucp_atomic_op_nbx(link->ep, op, &value, 1, module->peers[target].state + offset,
                           link->state_rkey, &param);
    rc = ompi_osc_ucxx_wait_request(worker, sp);
    if (OMPI_SUCCESS != rc) {
        return rc;
    }
    if (NULL != result) *result = reply;
    return OMPI_SUCCESS;
}
