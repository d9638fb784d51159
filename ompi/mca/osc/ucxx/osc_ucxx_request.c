/*
 * Copyright (c) 2026 The osc/ucxx authors. All rights reserved.
 * $COPYRIGHT$
 *
 * Requests of the R* calls.  Each request counts its UCX operations (plus one
 * while it is still being issued) and completes when the count reaches zero,
 * so thousands can be outstanding and none waits for a worker flush.
 *
 * Two events release a request: its completion, and the user's free (by
 * MPI_Request_free, or by the MPI_Wait/Test that saw it complete).  MPI lets
 * the user free an active request, so they come in any order, from any two
 * threads; whoever is second returns it to the free list.  Completion marks
 * itself released only after ompi_request_complete has finished with the
 * request, so a free can never return it under completion's feet.
 */

#include "ompi_config.h"

#include "osc_ucxx_request.h"

static void request_return(ompi_osc_ucxx_request_t *req)
{
    OMPI_REQUEST_FINI(&req->super);
    /* (the _mt forms: our progress thread completes requests at any level) */
    opal_free_list_return_mt(&OSC_UCXX.requests, (opal_free_list_item_t *) req);
}

static void request_release(ompi_osc_ucxx_request_t *req)
{
    if (2 == opal_atomic_add_fetch_32(&req->released, 1)) {
        request_return(req);
    }
}

static int request_free(struct ompi_request_t **ompi_req)
{
    ompi_osc_ucxx_request_t *req = (ompi_osc_ucxx_request_t *) *ompi_req;
    *ompi_req = MPI_REQUEST_NULL;
    request_release(req);
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
    req = (ompi_osc_ucxx_request_t *) opal_free_list_get_mt(&OSC_UCXX.requests);
    if (NULL == req) {
        return OMPI_ERR_OUT_OF_RESOURCE;
    }
    OMPI_REQUEST_INIT(&req->super, false);
    req->super.req_mpi_object.win = win;
    req->super.req_status.MPI_ERROR = MPI_SUCCESS;
    req->super.req_status._cancelled = 0;
    req->super.req_state = OMPI_REQUEST_ACTIVE;
    req->outstanding = 1;
    req->released = 0;
    req->worker = worker;
    ompi_osc_ucxx_add32(&worker->pending, 1);
    *reqp = req;
    return OMPI_SUCCESS;
}

static void request_complete(ompi_osc_ucxx_request_t *req)
{
    ompi_request_complete(&req->super, true);
    request_release(req);
}

static void request_complete_later(ompi_osc_ucxx_later_t *later)
{
    request_complete((ompi_osc_ucxx_request_t *) ((char *) later -
                                                  offsetof(ompi_osc_ucxx_request_t, later)));
}

/* The last operation done: complete the request, or have the application
 * complete it where this thread may not (our progress thread below
 * MPI_THREAD_MULTIPLE: Open MPI's waits change the request without atomics
 * there, ompi_osc_ucxx_objects_ours). */
void ompi_osc_ucxx_request_op_done(ompi_osc_ucxx_request_t *req)
{
    if (0 != opal_atomic_add_fetch_32(&req->outstanding, -1)) {
        return;
    }
    ompi_osc_ucxx_add32(&req->worker->pending, -1);
    if (OPAL_UNLIKELY(OSC_UCXX.progress_running && !ompi_osc_ucxx_objects_ours())) {
        req->later.run = request_complete_later;
        ompi_osc_ucxx_later(&req->later);
        return;
    }
    request_complete(req);
}

void ompi_osc_ucxx_request_fail(ompi_osc_ucxx_request_t *req, int error)
{
    int32_t none = MPI_SUCCESS;
    (void) opal_atomic_compare_exchange_strong_32((volatile int32_t *) &req->super.req_status
                                                      .MPI_ERROR,
                                                  &none, error);
}

/* An operation failed before anything was issued for it... or after some
 * pieces were: let those finish; nobody frees what nobody saw. */
void ompi_osc_ucxx_request_abandon(ompi_osc_ucxx_request_t *req)
{
    ompi_osc_ucxx_request_fail(req, MPI_ERR_OTHER);
    request_release(req);
    ompi_osc_ucxx_request_op_done(req);
}

void ompi_osc_ucxx_request_ucx_cb(void *ucx_req, ucs_status_t status, void *user_data)
{
    ompi_osc_ucxx_request_t *req = (ompi_osc_ucxx_request_t *) user_data;

    if (UCS_OK != status) {
        ompi_osc_ucxx_request_fail(req, MPI_ERR_OTHER);
    }
    ucp_request_free(ucx_req);
    ompi_osc_ucxx_request_op_done(req);
}
