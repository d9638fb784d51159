/*
 * Copyright (c) 2026 The osc/ucxx authors. All rights reserved.
 * $COPYRIGHT$
 *
 * Active messages (UCP AM): the path for what RDMA cannot carry.
 *
 * Messages name their window by its id (osc_ucxx_wcomm.c).
 * Handlers run inside ucp_worker_progress, so they never issue UCX
 * operations, never progress, and never wait: what needs any of that (a reply,
 * work blocked on a busy stripe lock) goes on a queue that
 * am_drain works off from the component's progress function (the worker
 * layer calls it through the hook ompi_osc_ucxx_am_init gives it),
 * outside any callback.  All messages are sent eagerly (chunked by the
 * sender), so a handler always has the whole payload in hand.
 *
 * Kinds: each protocol defines its message kinds in its own file
 * (ompi_osc_ucxx_am_define, at component init): the handler, and what the
 * transport must do for the kind.  This file names none of them.
 *
 * Order: some kinds must be handled in the order their sender sent them
 * (accumulates: accumulate_ordering), OSC_UCXX_AM_IN_ORDER.  UCX delivers
 * them in order on an endpoint; so that the queue does not reorder them,
 * (1) once such a message for a window is queued, later ones for that
 * window queue behind it instead of running in the callback
 * (module->am_deferred counts them), (2) one thread at a time drains the
 * queue, front to back, and (3) when one is still blocked, the later ones
 * for the same window stay queued behind it.
 */

#include "ompi_config.h"

#include "opal/class/opal_list.h"

#include "osc_ucxx_am.h"
#include "osc_ucxx_state.h"

/* Deferred work: a copy of a message or a reply to send. */
typedef struct {
    opal_list_item_t super;
    int kind;          /* OSC_UCXX_AM_* */
    uint32_t cid;
    int peer;          /* rank in the window: sender of the message, or reply target */
    size_t len;
    char data[];
} am_work_t;
static OBJ_CLASS_INSTANCE(am_work_t, opal_list_item_t, NULL, NULL);

static opal_list_t am_queue;
static opal_mutex_t am_queue_lock;
static volatile int32_t am_draining = 0;
static struct {
    ompi_osc_ucxx_am_handler_fn_t handler;
    ucp_am_recv_callback_t recv;
    unsigned flags;
} am_kinds[OSC_UCXX_AM_KINDS];
static bool am_ready = false;   /* the queue is made */

static bool in_order(int kind)
{
    return am_kinds[kind].flags & OSC_UCXX_AM_IN_ORDER;
}

/* ------------------------------------------------------------------------- */
/* Queue */

int ompi_osc_ucxx_am_defer(int kind, ompi_osc_ucxx_module_t *module, int peer,
                           const void *data, size_t len)
{
    am_work_t *work = malloc(sizeof(*work) + len);
    if (NULL == work) {
        return OMPI_ERR_OUT_OF_RESOURCE;
    }
    OBJ_CONSTRUCT(work, am_work_t);
    work->kind = kind;
    work->cid = module->cid;
    work->peer = peer;
    work->len = len;
    memcpy(work->data, data, len);
    if (in_order(kind)) {
        ompi_osc_ucxx_add32(&module->am_deferred, 1);
    }
    OSC_UCXX_LOCK(&am_queue_lock);
    opal_list_append(&am_queue, &work->super);
    OSC_UCXX_UNLOCK(&am_queue_lock);
    ompi_osc_ucxx_add32(&ompi_osc_ucxx_deferred, 1);
    ompi_osc_ucxx_progress_wake();  /* a progress thread asleep in the kernel */
    return OMPI_SUCCESS;
}

static void send_done(void *request, ucs_status_t status, void *user_data)
{
    free(user_data);
    ucp_request_free(request);
}

int ompi_osc_ucxx_am_send(ompi_osc_ucxx_module_t *module, ompi_osc_ucxx_worker_t *worker,
                          int target, unsigned id, void *buf, size_t hlen, size_t len)
{
    return ompi_osc_ucxx_am_send_flags(module, worker, target, id, buf, hlen, len,
                                       UCP_AM_SEND_FLAG_EAGER);
}

int ompi_osc_ucxx_am_send_flags(ompi_osc_ucxx_module_t *module, ompi_osc_ucxx_worker_t *worker,
                                int target, unsigned id, void *buf, size_t hlen, size_t len,
                                uint32_t flags)
{
    ompi_osc_ucxx_link_t *link = ompi_osc_ucxx_link(module, worker, target);
    ucp_request_param_t param;
    ucs_status_ptr_t sp;

    if (NULL == link) {
        free(buf);
        return OMPI_ERR_UNREACH;
    }
    if (am_kinds[id].flags & OSC_UCXX_AM_SERVED) {
        ompi_osc_ucxx_link_ask(module, link, target);
    }
    if (in_order(id)) {
        ompi_osc_ucxx_add64(&link->sent, 1);  /* (a notice goes behind it) */
    }
    param.op_attr_mask = UCP_OP_ATTR_FIELD_FLAGS | UCP_OP_ATTR_FIELD_CALLBACK |
                         UCP_OP_ATTR_FIELD_USER_DATA;
    param.flags = flags;
    param.cb.send = send_done;
    param.user_data = buf;
    sp = ucp_am_send_nbx(link->ep, id, buf, hlen, (char *) buf + hlen, len - hlen, &param);
    if (NULL == sp) {
        free(buf);
    } else if (UCS_PTR_IS_ERR(sp)) {
        free(buf);
        OSC_UCXX_VERBOSE(1, "ucp_am_send_nbx failed: %s", ucs_status_string(UCS_PTR_STATUS(sp)));
        return OMPI_ERROR;
    }
    return OMPI_SUCCESS;
}

/* Whether a window's messages may run: one still being created is in the
 * window table before it is ready (osc_ucxx_window.c), and what arrives for
 * it waits in the queue. */
static bool window_ready(ompi_osc_ucxx_module_t *module)
{
    if (!module->ready) return false;
    opal_atomic_rmb();
    return true;
}

/* Run one queued item; true when it is done (not blocked). */
static bool drain_one(am_work_t *work)
{
    ompi_osc_ucxx_module_t *module = ompi_osc_ucxx_window_lookup(work->cid);
    int rc = OMPI_SUCCESS;

    if (NULL != module && !window_ready(module)) {
        return false;
    }
    if (NULL != module && NULL != am_kinds[work->kind].handler) {
        rc = am_kinds[work->kind].handler(module, work->peer, work->data, work->len, true);
    }
    if (OMPI_ERR_WOULD_BLOCK == rc) {
        return false;
    }
    if (NULL != module && in_order(work->kind)) {
        ompi_osc_ucxx_add32(&module->am_deferred, -1);
    }
    return true;
}

/* Work off the queue, outside any UCX callback, one thread at a time. */
static int am_drain(void)
{
    opal_list_t retry;
    am_work_t *work;
    uint32_t blocked[8];   /* windows with a blocked in-order message this pass */
    int nblocked = 0, done = 0;
    int32_t idle = 0;

    if (0 == ompi_osc_ucxx_deferred ||
        !opal_atomic_compare_exchange_strong_32(&am_draining, &idle, 1)) {
        return 0;
    }
    OBJ_CONSTRUCT(&retry, opal_list_t);
    for (;;) {
        bool behind = false;
        OSC_UCXX_LOCK(&am_queue_lock);
        work = (am_work_t *) opal_list_remove_first(&am_queue);
        OSC_UCXX_UNLOCK(&am_queue_lock);
        if (NULL == work) break;
        bool ordered = in_order(work->kind);
        for (int i = 0; ordered && i < nblocked; ++i) {
            behind |= (blocked[i] == work->cid);
        }
        if (behind || (ordered && nblocked == 8) || !drain_one(work)) {
            if (!behind && ordered && nblocked < 8) {
                blocked[nblocked++] = work->cid;
            }
            opal_list_append(&retry, &work->super);  /* in order, for next time */
            continue;
        }
        ompi_osc_ucxx_add32(&ompi_osc_ucxx_deferred, -1);
        OBJ_DESTRUCT(work);
        free(work);
        done++;
    }
    if (!opal_list_is_empty(&retry)) {
        OSC_UCXX_LOCK(&am_queue_lock);
        opal_list_join(&am_queue, opal_list_get_begin(&am_queue), &retry);
        OSC_UCXX_UNLOCK(&am_queue_lock);
    }
    OBJ_DESTRUCT(&retry);
    opal_atomic_wmb();
    am_draining = 0;
    return done;
}

/* ------------------------------------------------------------------------- */
/* Receive side */

/* The window and sender a message names; NULL if the window is gone. */
static ompi_osc_ucxx_module_t *am_window(const void *header, size_t header_length,
                                         int *from)
{
    const ompi_osc_ucxx_am_hdr_t *hdr = (const ompi_osc_ucxx_am_hdr_t *) header;
    ompi_osc_ucxx_module_t *module;

    if (header_length < sizeof(*hdr)) {
        return NULL;
    }
    module = ompi_osc_ucxx_window_lookup(hdr->cid);
    if (NULL == module || hdr->from < 0 || hdr->from >= module->size) {
        OSC_UCXX_VERBOSE(1, "active message for unknown window %u dropped", hdr->cid);
        return NULL;
    }
    *from = hdr->from;
    return module;
}

/* Every message kind arrives here: header and payload are handed to the
 * kind's handler as one buffer (header first). */
static ucs_status_t am_dispatch(void *arg, const void *header, size_t header_length,
                                void *data, size_t length, const ucp_am_recv_param_t *param)
{
    int kind = (int) (uintptr_t) arg, from, rc;
    ompi_osc_ucxx_module_t *module = am_window(header, header_length, &from);
    char stack[512], *buf = stack;

    if (NULL == module || NULL == am_kinds[kind].handler) {
        return UCS_OK;
    }
    if (param->recv_attr & UCP_AM_RECV_ATTR_FLAG_RNDV) {
        /* Never sent that way (we force eager); refuse rather than block. */
        OSC_UCXX_VERBOSE(1, "unexpected rendezvous active message dropped");
        return UCS_OK;
    }
    if (header_length + length > sizeof(stack)) {
        buf = malloc(header_length + length);
        if (NULL == buf) return UCS_OK;
    }
    memcpy(buf, header, header_length);
    memcpy(buf + header_length, data, length);
    if (!window_ready(module) || (in_order(kind) && module->am_deferred > 0)) {
        rc = OMPI_ERR_WOULD_BLOCK;  /* still being created, or behind the ones queued */
    } else {
        rc = am_kinds[kind].handler(module, from, buf, header_length + length, false);
    }
    if (OMPI_ERR_WOULD_BLOCK == rc) {
        ompi_osc_ucxx_am_defer(kind, module, from, buf, header_length + length);
    }
    if (buf != stack) free(buf);
    return UCS_OK;
}

/* Queue-only kind: a message prepared inside a callback, sent from the
 * queue: [uint32 id][uint32 header length][message]. */
static int send_handler(ompi_osc_ucxx_module_t *module, int peer, void *buf, size_t len,
                        bool deferred)
{
    uint32_t id, hlen;
    void *copy;

    memcpy(&id, buf, sizeof(id));
    memcpy(&hlen, (char *) buf + sizeof(id), sizeof(hlen));
    len -= 2 * sizeof(uint32_t);
    copy = malloc(len);
    if (NULL == copy) return OMPI_ERR_WOULD_BLOCK;
    memcpy(copy, (char *) buf + 2 * sizeof(uint32_t), len);
    return ompi_osc_ucxx_am_send(module, OSC_UCXX.main_worker, peer, id, copy, hlen, len);
}

int ompi_osc_ucxx_am_reply(ompi_osc_ucxx_module_t *module, int to, unsigned id,
                           const void *msg, size_t hlen, size_t len, bool deferred)
{
    if (deferred) {
        void *copy = malloc(len);
        if (NULL == copy) return OMPI_ERR_OUT_OF_RESOURCE;
        memcpy(copy, msg, len);
        return ompi_osc_ucxx_am_send(module, OSC_UCXX.main_worker, to, id, copy, hlen, len);
    } else {
        char *item = malloc(len + 2 * sizeof(uint32_t));
        uint32_t words[2] = {id, (uint32_t) hlen};
        int rc;
        if (NULL == item) return OMPI_ERR_OUT_OF_RESOURCE;
        memcpy(item, words, sizeof(words));
        memcpy(item + sizeof(words), msg, len);
        rc = ompi_osc_ucxx_am_defer(OSC_UCXX_AM_SEND, module, to, item, len + sizeof(words));
        free(item);
        return rc;
    }
}

void ompi_osc_ucxx_am_define(int kind, ompi_osc_ucxx_am_handler_fn_t handler,
                             ucp_am_recv_callback_t recv, unsigned flags)
{
    am_kinds[kind].handler = handler;
    am_kinds[kind].recv = recv;
    am_kinds[kind].flags = flags;
}

/* A new worker: every kind's UCX handler. */
static int am_worker_setup(ompi_osc_ucxx_worker_t *worker)
{
    ucp_am_handler_param_t param;

    for (int kind = 1; kind < OSC_UCXX_AM_MAX; ++kind) {
        memset(&param, 0, sizeof(param));
        param.field_mask = UCP_AM_HANDLER_PARAM_FIELD_ID | UCP_AM_HANDLER_PARAM_FIELD_CB |
                           UCP_AM_HANDLER_PARAM_FIELD_ARG;
        param.id = kind;
        param.cb = NULL != am_kinds[kind].recv ? am_kinds[kind].recv : am_dispatch;
        param.arg = (void *) (uintptr_t) kind;
        if (UCS_OK != ucp_worker_set_am_recv_handler(worker->ucp, &param)) {
            return OMPI_ERROR;
        }
    }
    return OMPI_SUCCESS;
}

void ompi_osc_ucxx_am_init(void)
{
    if (!am_ready) {
        OBJ_CONSTRUCT(&am_queue, opal_list_t);
        OBJ_CONSTRUCT(&am_queue_lock, opal_mutex_t);
        am_draining = 0;
        am_ready = true;
    }
    ompi_osc_ucxx_am_set_handler(OSC_UCXX_AM_SEND, send_handler);
    ompi_osc_ucxx_worker_setup(am_worker_setup);
    ompi_osc_ucxx_progress_drain(am_drain);
}

void ompi_osc_ucxx_am_fini(void)
{
    if (am_ready) {
        OPAL_LIST_DESTRUCT(&am_queue);
        OBJ_DESTRUCT(&am_queue_lock);
        memset(am_kinds, 0, sizeof(am_kinds));
        ompi_osc_ucxx_deferred = 0;
        am_ready = false;
    }
}
