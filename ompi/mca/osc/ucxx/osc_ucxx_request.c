/*
 * Copyright (c) 2026 The osc/ucxx authors. All rights reserved.
 * $COPYRIGHT$
 *
 * Requests of the R* calls.  Each request counts its UCX operations (plus one
 * while it is still being issued) and completes when the count reaches zero,
 * so thousands can be outstanding and none waits for a worker flush.
 */

#include "ompi_config.h"

#include "osc_ucxx.h"

static void request_return(ompi_osc_ucxx_request_t *req)
{
    OMPI_REQUEST_FINI(&req->super);
    opal_free_list_return(&OSC_UCXX.requests, (opal_free_list_item_t *) req);
}

static int request_free(struct ompi_request_t **ompi_req)
{
    ompi_osc_ucxx_request_t *req = (ompi_osc_ucxx_request_t *) *ompi_req;

    /* MPI lets the user free an active request: whoever finishes last returns it. */
    if (REQUEST_COMPLETE(&req->super) ||
        1 != OPAL_THREAD_ADD_FETCH32(&req->freed, 1)) {
        request_return(req);
    }
    *ompi_req = MPI_REQUEST_NULL;
    return OMPI_SUCCESS;
}

static int request_cancel(struct ompi_request_t *request, int complete)
{
    return MPI_SUCCESS;  /* RMA operations cannot be cancelled: nothing to do */
}

static void request_construct(ompi_osc_ucxx_request_t *req)
{
    req->super.req_type = OMPI_REQUEST_WIN;
    req->super.req_free = request_free;
    req->super.req_cancel = request_cancel;
}

OBJ_CLASS_INSTANCE(ompi_osc_ucxx_request_t, ompi_request_t, request_construct, NULL);

int ompi_osc_ucxx_request_alloc(struct ompi_win_t *win, ompi_osc_ucxx_worker_t *worker,
                                ompi_osc_ucxx_request_t **reqp)
{
    ompi_osc_ucxx_request_t *req;

    if (NULL == worker) {
        return OMPI_ERR_OUT_OF_RESOURCE;
    }
    req = (ompi_osc_ucxx_request_t *) opal_free_list_get(&OSC_UCXX.requests);
    if (NULL == req) {
        return OMPI_ERR_OUT_OF_RESOURCE;
    }
    OMPI_REQUEST_INIT(&req->super, false);
    req->super.req_mpi_object.win = win;
    req->super.req_status.MPI_ERROR = MPI_SUCCESS;
    req->super.req_status._cancelled = 0;
    req->super.req_state = OMPI_REQUEST_ACTIVE;
    req->outstanding = 1;
    req->freed = 0;
    req->worker = worker;
    OPAL_THREAD_ADD_FETCH32(&worker->pending, 1);
    *reqp = req;
    return OMPI_SUCCESS;
}

void ompi_osc_ucxx_request_op_done(ompi_osc_ucxx_request_t *req)
{
    if (0 != OPAL_THREAD_ADD_FETCH32(&req->outstanding, -1)) {
        return;
    }
    OPAL_THREAD_ADD_FETCH32(&req->worker->pending, -1);
    if (1 == OPAL_THREAD_ADD_FETCH32(&req->freed, 1)) {
        ompi_request_complete(&req->super, true);
    } else {
        request_return(req);  /* the user freed it already */
    }
}

/* An operation failed before anything was issued for it... or after some
 * pieces were: let those finish, then the request completes with an error. */
void ompi_osc_ucxx_request_abandon(ompi_osc_ucxx_request_t *req)
{
    req->super.req_status.MPI_ERROR = MPI_ERR_OTHER;
    OPAL_THREAD_ADD_FETCH32(&req->freed, 1);  /* nobody will see this request */
    ompi_osc_ucxx_request_op_done(req);
}

void ompi_osc_ucxx_request_ucx_cb(void *ucx_req, ucs_status_t status, void *user_data)
{
    ompi_osc_ucxx_request_t *req = (ompi_osc_ucxx_request_t *) user_data;

    if (UCS_OK != status) {
        req->super.req_status.MPI_ERROR = MPI_ERR_OTHER;
    }
    ucp_request_free(ucx_req);
    ompi_osc_ucxx_request_op_done(req);
}
