/*
 * Copyright (c) 2026 The osc/ucxx authors. All rights reserved.
 * $COPYRIGHT$
 *
 * User active messages: receiving.  The UCX callback of the user-AM kinds
 * (data chunks, outputs, buffer control) only copies and queues: an eager
 * chunk's input goes straight to its staging place, an eager output to the
 * origin's buffer; rendezvous data and everything that sends, waits or runs
 * a handler becomes a work item for the drain (OSC_UCXX_AM_UAM_WORK, never
 * inside a callback), which fetches rendezvous data into a temporary
 * (ucp_am_recv_data_nbx) and hands each item to the origin's or the
 * target's side.  The kinds are defined here, at component init.
 */

#include "ompi_config.h"

#include "osc_ucxx_uam_internal.h"

static ucs_status_t uam_recv(void *arg, const void *header, size_t header_length, void *data,
                             size_t length, const ucp_am_recv_param_t *param)
{
    int kind = (int) (uintptr_t) arg;
    ompi_osc_ucxx_am_hdr_t h;
    ompi_osc_ucxx_module_t *module;
    uam_work_t w;
    bool rndv = param->recv_attr & UCP_AM_RECV_ATTR_FLAG_RNDV;

    if (header_length < sizeof(h)) return UCS_OK;
    memcpy(&h, header, sizeof(h));
    module = ompi_osc_ucxx_window_lookup(h.cid);
    if (NULL == module || h.from < 0 || h.from >= module->size) {
        OSC_UCXX_VERBOSE(1, "active message for unknown window %u dropped", h.cid);
        return UCS_OK;
    }
    memset(&w, 0, sizeof(w));
    if (OSC_UCXX_AM_UAM_CTRL == kind) {
        if (header_length < sizeof(uam_ctrl_t)) return UCS_OK;
        w.kind = K_CTRL;
        memcpy(&w.u.ctrl, header, sizeof(uam_ctrl_t));
    } else if (OSC_UCXX_AM_UAM_DATA == kind) {
        uam_data_t d;   /* (copied: UCX's header need not be aligned) */
        if (header_length < sizeof(d)) return UCS_OK;
        memcpy(&d, header, sizeof(d));
        if (!rndv) {
            ompi_osc_ucxx_uam_chunk_arrived(module, h.from, &d, data, length);
            return UCS_OK;
        }
        w.kind = K_FETCH;
        w.u.data = d;
    } else {
        uam_out_t o;
        if (header_length < sizeof(o)) return UCS_OK;
        memcpy(&o, header, sizeof(o));
        if (!rndv) {
            ompi_osc_ucxx_uam_out_arrived(module, &o, data, length);
            return UCS_OK;
        }
        w.kind = K_OUTFETCH;
        w.u.out = o;
    }
    if (rndv) {
        w.rdesc = data;
        w.rlen = length;
    }
    ompi_osc_ucxx_am_defer(OSC_UCXX_AM_UAM_WORK, module, h.from, &w, sizeof(w));
    return rndv ? UCS_INPROGRESS : UCS_OK;
}

/* ------------------------------------------------------------------------- */
/* The drain's work items */

/* Rendezvous data received into a temporary (drain's fetch). */
typedef struct {
    ompi_osc_ucxx_module_t *module;
    int from;
    uam_work_t w;
    char data[];
} uam_fetch_t;

static void fetch_complete(uam_fetch_t *f)
{
    if (K_FETCH == f->w.kind) {
        ompi_osc_ucxx_uam_chunk_arrived(f->module, f->from, &f->w.u.data, f->data, f->w.rlen);
    } else {
        ompi_osc_ucxx_uam_out_arrived(f->module, &f->w.u.out, f->data, f->w.rlen);
    }
    free(f);
}

static void fetch_done(void *request, ucs_status_t status, size_t length, void *user_data)
{
    uam_fetch_t *f = (uam_fetch_t *) user_data;
    if (UCS_OK != status) {
        OSC_UCXX_VERBOSE(1, "active-message data lost: %s", ucs_status_string(status));
        f->w.rlen = 0;   /* chunk_arrived / out_arrived see too few bytes */
    }
    fetch_complete(f);
    ucp_request_free(request);
}

static int fetch(ompi_osc_ucxx_module_t *module, int from, uam_work_t *w)
{
    uam_fetch_t *f = malloc(sizeof(*f) + w->rlen + 1);
    ucp_request_param_t param;
    ucs_status_ptr_t sp;

    if (NULL == f) return OMPI_ERR_WOULD_BLOCK;
    f->module = module;
    f->from = from;
    f->w = *w;
    memset(&param, 0, sizeof(param));
    param.op_attr_mask = UCP_OP_ATTR_FIELD_CALLBACK | UCP_OP_ATTR_FIELD_USER_DATA;
    param.cb.recv_am = fetch_done;
    param.user_data = f;
    sp = ucp_am_recv_data_nbx(OSC_UCXX.main_worker->ucp, w->rdesc, f->data, w->rlen, &param);
    if (NULL == sp) {
        fetch_complete(f);
    } else if (UCS_PTR_IS_ERR(sp)) {
        OSC_UCXX_VERBOSE(1, "ucp_am_recv_data_nbx: %s", ucs_status_string(UCS_PTR_STATUS(sp)));
        f->w.rlen = 0;
        fetch_complete(f);
    }
    return OMPI_SUCCESS;
}

/* A work item, in the drain (never inside a callback). */
static int uam_work(ompi_osc_ucxx_module_t *module, int peer, void *buf, size_t len,
                    bool deferred)
{
    uam_work_t *w = (uam_work_t *) buf;
    ompi_osc_ucxx_uam_t *uam = module->uam;

    switch (w->kind) {
    case K_RUN:
        return ompi_osc_ucxx_uam_run_chunk(module, peer, w);
    case K_FETCH:
    case K_OUTFETCH:
        return fetch(module, peer, w);
    case K_OUTDONE:
        ompi_osc_ucxx_uam_out_done(module, &w->u.out);
        return OMPI_SUCCESS;
    case K_CTRL:
        if (NULL == uam) {
            if (C_RESV == w->u.ctrl.type) {
                ompi_osc_ucxx_uam_send_ctrl(module, peer, (uam_ctrl_t){.type = C_GRANT,
                                                                       .status = MPI_ERR_BUFFER});
            }
            return OMPI_SUCCESS;
        }
        if (C_RESV == w->u.ctrl.type) {
            ompi_osc_ucxx_uam_pool_request(module, uam, &w->u.ctrl);
        } else if (C_RELEASE == w->u.ctrl.type) {
            ompi_osc_ucxx_uam_pool_release(module, uam, peer, w->u.ctrl.grant);
        } else {
            ompi_osc_ucxx_uam_grant_arrived(module, uam, peer, &w->u.ctrl);
        }
        return OMPI_SUCCESS;
    }
    return OMPI_SUCCESS;
}

/* Chunks and outputs may come by rendezvous: UCX's callback is ours.  Data
 * and buffer requests wait for the target's CPU. */
void ompi_osc_ucxx_uam_am_init(void)
{
    ompi_osc_ucxx_am_define(OSC_UCXX_AM_UAM_DATA, NULL, uam_recv, OSC_UCXX_AM_SERVED);
    ompi_osc_ucxx_am_define(OSC_UCXX_AM_UAM_OUT, NULL, uam_recv, 0);
    ompi_osc_ucxx_am_define(OSC_UCXX_AM_UAM_CTRL, NULL, uam_recv, OSC_UCXX_AM_SERVED);
    ompi_osc_ucxx_am_set_handler(OSC_UCXX_AM_UAM_WORK, uam_work);
}
