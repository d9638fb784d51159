/*
 * Copyright (c) 2026 The osc/ucxx authors. All rights reserved.
 * $COPYRIGHT$
 *
 * Taking the workers quiet before they are destroyed.
 *
 * UCX may destroy a worker only when none of its endpoints is still wiring
 * up: ucp_worker_destroy purges what is queued on them, and UCX 1.13 aborts
 * the process (an assertion) when that is a wireup reply.  A wireup stays in
 * flight until both processes progress, and nothing waits for it to end: an
 * endpoint made during MPI_Init (the early start's, to the node neighbour)
 * or in a job's last epoch may still be connecting when MPI_Finalize begins,
 * and so may the endpoint UCX made on the other side to answer it.  A flush
 * does not wait for that (it ends once our sends left), so:
 *  1. At the start of MPI_Finalize, while MPI is whole (the delete callback
 *     of our attribute on MPI_COMM_SELF, which MPI_Finalize runs first),
 *     every endpoint of ours carries a ping that asks for a reply; the peer
 *     answers on the endpoint UCX made for us (from its progress function,
 *     outside callbacks), behind its own wireup reply.  A pong back means
 *     the wireup between the two is done on both sides.
 *  2. Open MPI's finalize fence follows; during it opal_progress keeps us
 *     answering peers that are still pinging us.  When it ends, no process
 *     is mid-wireup with another.
 *  3. At component finalize (after that fence) each worker's endpoints are
 *     closed and the worker destroyed (worker_destruct).  The close is a
 *     forced one: nothing is in flight any more, and peers may be gone
 *     already, where a flushing close would time out with an error report.
 * The endpoint the early start makes in MPI_Init, before the attribute can
 * be set, gets its ping there (ompi_osc_ucxx_quiesce_ep): the neighbour is
 * in MPI_Init too and answers from its own wait.  The attribute is set
 * with the first window.  Every wait is bounded: a peer that died or never
 * progresses again costs time, never a hang.
 */

#include "ompi_config.h"

#include <time.h>

#include "ompi/attribute/attribute.h"
#include "ompi/communicator/communicator.h"

#include "osc_ucxx_worker.h"

/* How long the pings of MPI_Finalize and a close wait for peers; the early
 * start's ping waits less: MPI_Init's fence just before it brought every
 * process there (a peer late past it wires up in our later progress). */
#define OSC_UCXX_QUIESCE_SECONDS 10.0
#define OSC_UCXX_QUIESCE_INIT_SECONDS 1.0

static int self_keyval = MPI_KEYVAL_INVALID;

static double seconds_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double) ts.tv_sec + 1e-9 * (double) ts.tv_nsec;
}

/* Progress every worker of ours once, and what the component has queued
 * (a peer's flush may wait for a reply of ours). */
static void progress_all(void)
{
    int n = OSC_UCXX.num_workers;
    opal_atomic_rmb();
    (void) ompi_osc_ucxx_progress();
    for (int i = 0; i < n; ++i) {
        (void) ompi_osc_ucxx_worker_progress_shared(OSC_UCXX.workers[i]);
    }
}

/* Pings that arrived (UCX callback) and wait for their pong (progress). */
static opal_mutex_t pong_lock = OPAL_MUTEX_STATIC_INIT;
static ucp_ep_h *pong_eps;
static int pong_count, pong_cap;
volatile int32_t ompi_osc_ucxx_pongs_due = 0;
static volatile int32_t pongs_seen = 0;

static ucs_status_t ping_arrived(void *arg, const void *header, size_t header_length,
                                 void *data, size_t length, const ucp_am_recv_param_t *param)
{
    (void) arg, (void) header, (void) header_length, (void) data, (void) length;
    if (!(param->recv_attr & UCP_AM_RECV_ATTR_FIELD_REPLY_EP)) return UCS_OK;
    OPAL_THREAD_LOCK(&pong_lock);
    if (pong_count == pong_cap) {
        int cap = pong_cap ? 2 * pong_cap : 16;
        ucp_ep_h *grown = realloc(pong_eps, cap * sizeof(*grown));
        if (NULL == grown) {
            OPAL_THREAD_UNLOCK(&pong_lock);
            return UCS_OK;  /* (the peer's wait is bounded) */
        }
        pong_eps = grown;
        pong_cap = cap;
    }
    pong_eps[pong_count++] = param->reply_ep;
    OPAL_THREAD_UNLOCK(&pong_lock);
    opal_atomic_add_fetch_32(&ompi_osc_ucxx_pongs_due, 1);
    return UCS_OK;
}

static ucs_status_t pong_arrived(void *arg, const void *header, size_t header_length,
                                 void *data, size_t length, const ucp_am_recv_param_t *param)
{
    (void) arg, (void) header, (void) header_length, (void) data, (void) length, (void) param;
    opal_atomic_add_fetch_32(&pongs_seen, 1);
    return UCS_OK;
}

int ompi_osc_ucxx_quiesce_am_register(ompi_osc_ucxx_worker_t *worker)
{
    ucp_am_handler_param_t param = {
        .field_mask = UCP_AM_HANDLER_PARAM_FIELD_ID | UCP_AM_HANDLER_PARAM_FIELD_CB,
        .id = OSC_UCXX_AM_PING, .cb = ping_arrived};

    if (UCS_OK != ucp_worker_set_am_recv_handler(worker->ucp, &param)) return OMPI_ERROR;
    param.id = OSC_UCXX_AM_PONG;
    param.cb = pong_arrived;
    return UCS_OK == ucp_worker_set_am_recv_handler(worker->ucp, &param) ? OMPI_SUCCESS
                                                                          : OMPI_ERROR;
}

/* An empty message on `ep`; UCX frees the request once it is sent. */
static bool send_empty(ucp_ep_h ep, unsigned id, uint32_t flags)
{
    ucp_request_param_t param = {.op_attr_mask = UCP_OP_ATTR_FIELD_FLAGS,
                                 .flags = flags | UCP_AM_SEND_FLAG_EAGER};
    ucs_status_ptr_t sp = ucp_am_send_nbx(ep, id, NULL, 0, NULL, 0, &param);

    if (UCS_PTR_IS_PTR(sp)) ucp_request_free(sp);
    return !UCS_PTR_IS_ERR(sp);
}

/* From the progress function: answer the pings that arrived. */
void ompi_osc_ucxx_quiesce_serve(void)
{
    ucp_ep_h *eps;
    int n;

    OPAL_THREAD_LOCK(&pong_lock);
    eps = pong_eps;
    n = pong_count;
    pong_eps = NULL;
    pong_count = pong_cap = 0;
    OPAL_THREAD_UNLOCK(&pong_lock);
    opal_atomic_add_fetch_32(&ompi_osc_ucxx_pongs_due, -n);
    for (int i = 0; i < n; ++i) (void) send_empty(eps[i], OSC_UCXX_AM_PONG, 0);
    free(eps);
}

/* Progress until `pongs_seen` reaches `expected` or `seconds` pass. */
static void wait_pongs(int32_t expected, double seconds)
{
    double deadline = seconds_now() + seconds;
    while (pongs_seen < expected && seconds_now() < deadline) {
        progress_all();
    }
}

void ompi_osc_ucxx_quiesce_ep(ucp_ep_h ep)
{
    int32_t expected = pongs_seen;
    expected += send_empty(ep, OSC_UCXX_AM_PING, UCP_AM_SEND_FLAG_REPLY);
    wait_pongs(expected, OSC_UCXX_QUIESCE_INIT_SECONDS);
}

/* 1: a ping on every endpoint of every worker, then wait for the pongs. */
static void quiesce_workers(void)
{
    int n = OSC_UCXX.num_workers, sent = 0;
    int32_t before = pongs_seen;

    opal_atomic_rmb();
    for (int i = 0; i < n; ++i) {
        ompi_osc_ucxx_worker_t *worker = OSC_UCXX.workers[i];
        void *value, *node = NULL;
        uint64_t key;
        int rc = opal_hash_table_get_first_key_uint64(&worker->eps, &key, &value, &node);
        while (OPAL_SUCCESS == rc) {
            sent += send_empty((ucp_ep_h) value, OSC_UCXX_AM_PING, UCP_AM_SEND_FLAG_REPLY);
            rc = opal_hash_table_get_next_key_uint64(&worker->eps, &key, &value, node, &node);
        }
    }
    wait_pongs(before + sent, OSC_UCXX_QUIESCE_SECONDS);
    OSC_UCXX_VERBOSE(10, "%d of %d endpoints answered before MPI_Finalize's fence",
                     (int) (pongs_seen - before), sent);
}

/* MPI_COMM_SELF's attribute goes: MPI_Finalize has begun. */
static int self_deleted(MPI_Comm comm, int key, void *attr, void *extra)
{
    (void) comm, (void) key, (void) attr, (void) extra;
    if (NULL != OSC_UCXX.context) quiesce_workers();
    return MPI_SUCCESS;
}

/* Once, with the first window (attributes exist only late in MPI_Init). */
int ompi_osc_ucxx_quiesce_register(void)
{
    static opal_mutex_t lock = OPAL_MUTEX_STATIC_INIT;
    ompi_attribute_fn_ptr_union_t copy, del;
    ompi_communicator_t *self = &ompi_mpi_comm_self.comm;
    int rc = OMPI_SUCCESS;

    if (MPI_KEYVAL_INVALID != self_keyval) return OMPI_SUCCESS;
    OPAL_THREAD_LOCK(&lock);
    if (MPI_KEYVAL_INVALID == self_keyval) {
        copy.attr_communicator_copy_fn =
            (__typeof__(copy.attr_communicator_copy_fn)) OMPI_C_MPI_COMM_NULL_COPY_FN;
        del.attr_communicator_delete_fn = self_deleted;
        rc = ompi_attr_create_keyval(COMM_ATTR, copy, del, &self_keyval, NULL, 0, NULL);
        if (OMPI_SUCCESS == rc) {
            rc = ompi_attr_set_c(COMM_ATTR, self, &self->c_keyhash, self_keyval, NULL, false);
        }
        if (OMPI_SUCCESS != rc) {
            OSC_UCXX_VERBOSE(1, "no MPI_COMM_SELF attribute: workers are not quiesced "
                                "before MPI_Finalize's fence");
        }
    }
    OPAL_THREAD_UNLOCK(&lock);
    return rc;
}

void ompi_osc_ucxx_quiesce_deregister(void)
{
    if (MPI_KEYVAL_INVALID != self_keyval) {
        (void) ompi_attr_free_keyval(COMM_ATTR, &self_keyval, false);
        self_keyval = MPI_KEYVAL_INVALID;
    }
}

/* 3: close every endpoint of `worker` (quiet by now: see the top) and
 * forget them. */
void ompi_osc_ucxx_eps_close(ompi_osc_ucxx_worker_t *worker)
{
    ucp_request_param_t param = {.op_attr_mask = UCP_OP_ATTR_FIELD_FLAGS,
                                 .flags = UCP_EP_CLOSE_FLAG_FORCE};
    double deadline = seconds_now() + OSC_UCXX_QUIESCE_SECONDS;
    void *value, *node = NULL;
    uint64_t key;
    int rc = opal_hash_table_get_first_key_uint64(&worker->eps, &key, &value, &node);

    while (OPAL_SUCCESS == rc) {
        void *req = ucp_ep_close_nbx((ucp_ep_h) value, &param);
        if (UCS_PTR_IS_PTR(req)) {
            while (UCS_INPROGRESS == ucp_request_check_status(req) &&
                   seconds_now() < deadline) {
                (void) ompi_osc_ucxx_worker_progress_shared(worker);
            }
            ucp_request_free(req);
        }
        rc = opal_hash_table_get_next_key_uint64(&worker->eps, &key, &value, node, &node);
    }
    opal_hash_table_remove_all(&worker->eps);
}
