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
 * ompi_osc_ucxx_am_drain works off from the component's progress function,
 * outside any callback.  All messages are sent eagerly (chunked by the
 * sender), so a handler always has the whole payload in hand.
 *
 * Order: accumulates from one origin must apply in the order they were sent
 * (accumulate_ordering).  UCX delivers them in order on an endpoint; so that
 * the queue does not reorder them, (1) once an accumulate for a window is
 * queued, later ones for that window queue behind it instead of running in
 * the callback (module->am_deferred counts them), (2) one thread at a time
 * drains the queue, front to back, and (3) when an accumulate is still
 * blocked, the later ones for the same window stay queued behind it.
 */

#include "ompi_config.h"

#include "opal/class/opal_list.h"

#include "osc_ucxx_am.h"
#include "osc_ucxx_epoch.h"
#include "osc_ucxx_uam.h"

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
volatile int32_t ompi_osc_ucxx_am_queued = 0;  /* (read inline by the progress function) */
static volatile int32_t am_draining = 0;
static ompi_osc_ucxx_am_handler_fn_t am_handlers[OSC_UCXX_AM_KINDS];

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
    if (OSC_UCXX_AM_ACC == kind) {
        ompi_osc_ucxx_add32(&module->am_deferred, 1);
    }
    OSC_UCXX_LOCK(&am_queue_lock);
    opal_list_append(&am_queue, &work->super);
    OSC_UCXX_UNLOCK(&am_queue_lock);
    ompi_osc_ucxx_add32(&ompi_osc_ucxx_am_queued, 1);
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
    if (OSC_UCXX_AM_ACC == id || OSC_UCXX_AM_POST == id || OSC_UCXX_AM_UAM_DATA == id ||
        OSC_UCXX_AM_UAM_CTRL == id) {
        ompi_osc_ucxx_link_ask(module, link, target);  /* (replies are waited for) */
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
    if (NULL != module && NULL != am_handlers[work->kind]) {
        rc = am_handlers[work->kind](module, work->peer, work->data, work->len, true);
    }
    if (OMPI_ERR_WOULD_BLOCK == rc) {
        return false;
    }
    if (NULL != module && OSC_UCXX_AM_ACC == work->kind) {
        ompi_osc_ucxx_add32(&module->am_deferred, -1);
    }
    return true;
}

/* Work off the queue, outside any UCX callback, one thread at a time. */
int ompi_osc_ucxx_am_drain(void)
{
    opal_list_t retry;
    am_work_t *work;
    uint32_t blocked[8];   /* windows with a blocked accumulate this pass */
    int nblocked = 0, done = 0;
    int32_t idle = 0;

    if (0 == ompi_osc_ucxx_am_queued ||
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
        for (int i = 0; OSC_UCXX_AM_ACC == work->kind && i < nblocked; ++i) {
            behind |= (blocked[i] == work->cid);
        }
        if (behind || (OSC_UCXX_AM_ACC == work->kind && nblocked == 8) || !drain_one(work)) {
            if (!behind && OSC_UCXX_AM_ACC == work->kind && nblocked < 8) {
                blocked[nblocked++] = work->cid;
            }
            opal_list_append(&retry, &work->super);  /* in order, for next time */
            continue;
        }
        ompi_osc_ucxx_add32(&ompi_osc_ucxx_am_queued, -1);
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

    if (NULL == module || NULL == am_handlers[kind]) {
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
    if (!window_ready(module) || (OSC_UCXX_AM_ACC == kind && module->am_deferred > 0)) {
        rc = OMPI_ERR_WOULD_BLOCK;  /* still being created, or behind the ones queued */
    } else {
        rc = am_handlers[kind](module, from, buf, header_length + length, false);
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

void ompi_osc_ucxx_am_set_handler(int kind, ompi_osc_ucxx_am_handler_fn_t fn)
{
    am_handlers[kind] = fn;
}

static int post_handler(ompi_osc_ucxx_module_t *module, int from, void *buf, size_t len,
                        bool deferred)
{
    ompi_osc_ucxx_post_arrived(module, from);
    return OMPI_SUCCESS;
}

int ompi_osc_ucxx_am_register(ompi_osc_ucxx_worker_t *worker)
{
    ucp_am_handler_param_t param;

    if (NULL == am_handlers[OSC_UCXX_AM_POST]) {
        OBJ_CONSTRUCT(&am_queue, opal_list_t);
        OBJ_CONSTRUCT(&am_queue_lock, opal_mutex_t);
        am_draining = 0;
        am_handlers[OSC_UCXX_AM_POST] = post_handler;
        am_handlers[OSC_UCXX_AM_SEND] = send_handler;
        ompi_osc_ucxx_acc_am_init();
        ompi_osc_ucxx_dyn_am_init();
        ompi_osc_ucxx_uam_am_init();
    }
    for (int kind = 1; kind < OSC_UCXX_AM_MAX; ++kind) {
        memset(&param, 0, sizeof(param));
        param.field_mask = UCP_AM_HANDLER_PARAM_FIELD_ID | UCP_AM_HANDLER_PARAM_FIELD_CB |
                           UCP_AM_HANDLER_PARAM_FIELD_ARG;
        param.id = kind;
        param.cb = kind >= OSC_UCXX_AM_UAM_DATA ? ompi_osc_ucxx_uam_recv : am_dispatch;
        param.arg = (void *) (uintptr_t) kind;
        if (UCS_OK != ucp_worker_set_am_recv_handler(worker->ucp, &param)) {
            return OMPI_ERROR;
        }
    }
    return OMPI_SUCCESS;
}

void ompi_osc_ucxx_am_fini(void)
{
    if (NULL != am_handlers[OSC_UCXX_AM_POST]) {
        OPAL_LIST_DESTRUCT(&am_queue);
        OBJ_DESTRUCT(&am_queue_lock);
        memset(am_handlers, 0, sizeof(am_handlers));
        ompi_osc_ucxx_am_queued = 0;
    }
}

/* Tell `target` that this process exposes the window to it (MPI_Win_post). */
int ompi_osc_ucxx_am_send_post(ompi_osc_ucxx_module_t *module, int target)
{
    ompi_osc_ucxx_worker_t *worker = ompi_osc_ucxx_worker_self();
    ompi_osc_ucxx_am_hdr_t *hdr;

    if (target == module->rank) {
        ompi_osc_ucxx_post_arrived(module, target);
        return OMPI_SUCCESS;
    }
    if (NULL == worker || NULL == (hdr = malloc(sizeof(*hdr)))) {
        return OMPI_ERR_OUT_OF_RESOURCE;
    }
    hdr->cid = module->cid;
    hdr->from = module->rank;
    return ompi_osc_ucxx_am_send(module, worker, target, OSC_UCXX_AM_POST, hdr, sizeof(*hdr),
                                 sizeof(*hdr));
}
