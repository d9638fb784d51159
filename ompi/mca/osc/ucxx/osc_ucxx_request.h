/*
 * Copyright (c) 2026 The osc/ucxx authors. All rights reserved.
 * $COPYRIGHT$
 *
 * Requests of the R* calls (osc_ucxx_request.c).
 */

#ifndef OMPI_OSC_UCXX_REQUEST_H
#define OMPI_OSC_UCXX_REQUEST_H

#include "ompi/request/request.h"

#include "osc_ucxx_worker.h"

BEGIN_C_DECLS

struct ompi_osc_ucxx_request_t {
    ompi_request_t super;
    volatile int32_t outstanding;    /* UCX operations + 1 while still issuing */
    volatile int32_t released;       /* completion and user free: the second returns it */
    ompi_osc_ucxx_worker_t *worker;
    ompi_osc_ucxx_later_t later;     /* completion left to the application (request.c) */
};
OBJ_CLASS_DECLARATION(ompi_osc_ucxx_request_t);

int ompi_osc_ucxx_request_alloc(struct ompi_win_t *win, ompi_osc_ucxx_worker_t *worker,
                                ompi_osc_ucxx_request_t **req);
/* One UCX operation (or the issuing reference) of the request is done. */
void ompi_osc_ucxx_request_op_done(ompi_osc_ucxx_request_t *req);
/* The request fails with `error` when it completes (first error wins). */
void ompi_osc_ucxx_request_fail(ompi_osc_ucxx_request_t *req, int error);
/* UCX send callback whose user data is the request. */
void ompi_osc_ucxx_request_ucx_cb(void *ucx_req, ucs_status_t status, void *user_data);
/* The operation failed to issue: nobody will see the request. */
void ompi_osc_ucxx_request_abandon(ompi_osc_ucxx_request_t *req);
/* An operation that completes with the request counts one more. */
static inline void ompi_osc_ucxx_request_more(ompi_osc_ucxx_request_t *req)
{
    ompi_osc_ucxx_add32(&req->outstanding, 1);
}

END_C_DECLS

#endif /* OMPI_OSC_UCXX_REQUEST_H */
