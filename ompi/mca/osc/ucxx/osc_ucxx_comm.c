/*
 * Copyright (c) 2026 The osc/ucxx authors. All rights reserved.
 * $COPYRIGHT$
 *
 * Put and get, plain and request-based, any datatypes on both sides.
 *
 * A put in steady state: ompi_osc_ucxx_put -> put_get: the prologue
 * (osc_ucxx_op.h: epoch check, range, worker, path) -> xfer: a memcpy into
 * the mapped target memory, or ucp_put_nbx on the link, counted for the next
 * flush.  Request-based operations complete per operation (ucp completion of
 * each piece), never through a worker flush.
 */

#include "ompi_config.h"

#include "osc_ucxx_op.h"
#include "osc_ucxx_request.h"
#include "osc_ucxx_dt.h"
#include "osc_ucxx.h"

/* One contiguous transfer. */
static inline int xfer(ompi_osc_ucxx_target_t *t, bool is_put, void *local, uint64_t remote,
                       size_t len, ompi_osc_ucxx_request_t *req)
{
    ompi_osc_ucxx_link_t *link = t->path.link;
    ucp_request_param_t param;
    ucs_status_ptr_t sp;

    if (OPAL_LIKELY(t->path.mapped)) {
        char *p = (char *) (uintptr_t) (remote + t->path.delta);
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
        ompi_osc_ucxx_request_more(req);
    }
    sp = is_put ? ucp_put_nbx(link->ep, local, len, remote, t->path.rkey, &param)
                : ucp_get_nbx(link->ep, local, len, remote, t->path.rkey, &param);
    ompi_osc_ucxx_link_dirty(t->module, link, t->rank);  /* counted once posted */
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

/* Walk both layouts at once, one transfer per matching piece. */
static int xfer_pieces(ompi_osc_ucxx_target_t *t, bool is_put, void *origin_addr,
                       int origin_count, struct ompi_datatype_t *origin_dt, int target_count,
                       struct ompi_datatype_t *target_dt, ompi_osc_ucxx_request_t *req)
{
    ompi_osc_ucxx_dt_iter_t o, it;
    char *lp;
    uint64_t rp;
    size_t len;
    int rc = OMPI_SUCCESS;

    ompi_osc_ucxx_dt_iter_init(&o, origin_addr, origin_count, origin_dt);
    ompi_osc_ucxx_dt_iter_init(&it, (void *) (uintptr_t) t->remote, target_count, target_dt);
    while (OMPI_SUCCESS == rc && ompi_osc_ucxx_dt_iter_pair(&o, &it, &lp, &rp, &len)) {
        rc = xfer(t, is_put, lp, rp, len, req);
    }
    ompi_osc_ucxx_dt_iter_fini(&o);
    ompi_osc_ucxx_dt_iter_fini(&it);
    return rc;
}

int ompi_osc_ucxx_put_get(ompi_osc_ucxx_view_t *view, bool is_put, void *origin_addr,
                          int origin_count, struct ompi_datatype_t *origin_dt, int target,
                          ptrdiff_t target_disp, int target_count,
                          struct ompi_datatype_t *target_dt, ompi_osc_ucxx_request_t *req)
{
    ompi_osc_ucxx_target_t t;
    size_t size = origin_dt->super.size * (size_t) origin_count;
    int rc;

    rc = ompi_osc_ucxx_op_begin(view, target, target_disp, target_count, target_dt, &t);
    if (OPAL_UNLIKELY(OMPI_SUCCESS != rc)) {
        return rc;
    }
    if (OPAL_UNLIKELY(size != target_dt->super.size * (size_t) target_count)) {
        return MPI_ERR_TYPE;  /* the type signatures cannot match */
    }
    if (OPAL_UNLIKELY(0 == size)) {
        return OMPI_SUCCESS;
    }
    rc = ompi_osc_ucxx_op_resolve(&t, false);
    if (OPAL_UNLIKELY(OMPI_SUCCESS != rc)) {
        return rc;
    }
    if (OPAL_LIKELY(ompi_datatype_is_contiguous_memory_layout(origin_dt, origin_count) &&
                    ompi_datatype_is_contiguous_memory_layout(target_dt, target_count))) {
        rc = xfer(&t, is_put, (char *) origin_addr + origin_dt->super.true_lb,
                  t.remote + target_dt->super.true_lb, size, req);
    } else {
        rc = xfer_pieces(&t, is_put, origin_addr, origin_count, origin_dt, target_count,
                         target_dt, req);
    }
    if (OPAL_UNLIKELY(view->ordered) && !t.path.mapped) {
        /* mpi_win_order: later operations land after this one */
        ucp_worker_fence(t.worker->ucp);
    }
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

/* Request-based: the request completes when every piece is locally complete. */
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
    rc = ompi_osc_ucxx_put_get(view, is_put, origin_addr, origin_count, origin_dt, target,
                               target_disp, target_count, target_dt, req);
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
