/*
 * Copyright (c) 2026 The osc/ucxx authors. All rights reserved.
 * $COPYRIGHT$
 *
 * Active messages (UCP AM).  Messages name their window by the window
 * communicator's context id.  Handlers run inside ucp_worker_progress, so they
 * only record what arrived: they never issue UCX operations or progress.
 */

#include "ompi_config.h"

#include "osc_ucxx.h"

typedef struct {
    uint32_t cid;
    int32_t from;      /* sender's rank in the window */
} am_post_hdr_t;

static ucs_status_t am_post_handler(void *arg, const void *header, size_t header_length,
                                    void *data, size_t length,
                                    const ucp_am_recv_param_t *param)
{
    const am_post_hdr_t *hdr = (const am_post_hdr_t *) header;
    ompi_osc_ucxx_module_t *module;

    if (header_length < sizeof(*hdr)) {
        return UCS_OK;
    }
    module = ompi_osc_ucxx_window_lookup(hdr->cid);
    if (NULL == module) {
        OSC_UCXX_VERBOSE(1, "post for unknown window %u from %d dropped", hdr->cid, hdr->from);
        return UCS_OK;
    }
    ompi_osc_ucxx_post_arrived(module, hdr->from);
    return UCS_OK;
}

int ompi_osc_ucxx_am_register(ompi_osc_ucxx_worker_t *worker)
{
    ucp_am_handler_param_t param;

    memset(&param, 0, sizeof(param));
    param.field_mask = UCP_AM_HANDLER_PARAM_FIELD_ID | UCP_AM_HANDLER_PARAM_FIELD_CB |
                       UCP_AM_HANDLER_PARAM_FIELD_ARG;
    param.id = OSC_UCXX_AM_POST;
    param.cb = am_post_handler;
    param.arg = worker;
    return UCS_OK == ucp_worker_set_am_recv_handler(worker->ucp, &param) ? OMPI_SUCCESS
                                                                         : OMPI_ERROR;
}

/* Tell `target` that this process exposes the window to it (MPI_Win_post). */
int ompi_osc_ucxx_am_send_post(ompi_osc_ucxx_module_t *module, int target)
{
    ompi_osc_ucxx_worker_t *worker = ompi_osc_ucxx_worker_self();
    ompi_osc_ucxx_link_t *link;
    am_post_hdr_t hdr = {.cid = module->cid, .from = module->rank};
    ucp_request_param_t param;

    if (target == module->rank) {
        ompi_osc_ucxx_post_arrived(module, target);
        return OMPI_SUCCESS;
    }
    link = (NULL != worker) ? ompi_osc_ucxx_link(module, worker, target) : NULL;
    if (NULL == link) {
        return OMPI_ERR_UNREACH;
    }
    param.op_attr_mask = UCP_OP_ATTR_FIELD_FLAGS;
    param.flags = UCP_AM_SEND_FLAG_EAGER;
    /* The header lives on our stack: wait for local completion. */
    return ompi_osc_ucxx_wait_request(worker, ucp_am_send_nbx(link->ep, OSC_UCXX_AM_POST, &hdr,
                                                              sizeof(hdr), NULL, 0, &param));
}
