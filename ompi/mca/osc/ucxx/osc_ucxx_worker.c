/*
 * Copyright (c) 2026 The osc/ucxx authors. All rights reserved.
 * $COPYRIGHT$
 *
 * Workers: UCP workers, each used by one thread at a time, and the pool
 * they come from.
 *
 * Threads: under MPI_THREAD_MULTIPLE each thread that issues RMA gets its own
 * worker on first use (taken from a pool of workers whose threads have exited,
 * or created).  Peers connect to one worker per process, the main worker, which
 * opal_progress drives (osc_ucxx_progress.c).  Below MPI_THREAD_MULTIPLE there
 * is only the main worker.
 *
 * Every new worker is set up for the message layer above by the hook it
 * gives (ompi_osc_ucxx_worker_setup: its UCX active-message handlers), and
 * for the teardown pings (osc_ucxx_quiesce.c), before any thread can use it.
 */

#include "ompi_config.h"

#include "ompi/runtime/mpiruntime.h"

#include "osc_ucxx_worker.h"

__thread ompi_osc_ucxx_tls_t ompi_osc_ucxx_tls = {NULL, 0};

/* The message layer's setup of each new worker. */
static int (*worker_setup)(ompi_osc_ucxx_worker_t *worker) = NULL;

void ompi_osc_ucxx_worker_setup(int (*setup)(ompi_osc_ucxx_worker_t *worker))
{
    worker_setup = setup;
}

/* A thread that exits gives its worker back; the next new thread reuses it,
 * endpoints and all. */
static void tls_release(void *arg)
{
    ompi_osc_ucxx_worker_t *worker = (ompi_osc_ucxx_worker_t *) arg;
    OSC_UCXX_LOCK(&OSC_UCXX.lock);
    worker->owned = false;
    OSC_UCXX_UNLOCK(&OSC_UCXX.lock);
}

/* A worker object: its endpoint table from construction, its UCP worker
 * once created; the destructor closes the endpoints and destroys both. */
static void worker_construct(ompi_osc_ucxx_worker_t *worker)
{
    worker->ucp = NULL;
    worker->index = -1;
    worker->owned = false;
    worker->pending = 0;
    worker->acc_fence = false;
    worker->progressing = 0;   /* (OPAL objects are not zeroed: ASan fills them) */
    OBJ_CONSTRUCT(&worker->lock, opal_mutex_t);
    OBJ_CONSTRUCT(&worker->eps, opal_hash_table_t);
    opal_hash_table_init(&worker->eps, 64);
    OBJ_CONSTRUCT(&worker->rkeys, opal_hash_table_t);
    opal_hash_table_init(&worker->rkeys, 64);
    worker->idle_first = worker->idle_last = NULL;
    worker->idle = 0;
    worker->idle_bytes = 0;
}

static void worker_destruct(ompi_osc_ucxx_worker_t *worker)
{
    ompi_osc_ucxx_rkeys_destroy(worker);  /* (before the endpoints they were unpacked on) */
    ompi_osc_ucxx_eps_close(worker);  /* (workers_fini closed them already) */
    OBJ_DESTRUCT(&worker->eps);
    OBJ_DESTRUCT(&worker->rkeys);
    OBJ_DESTRUCT(&worker->lock);
    if (NULL != worker->ucp) {
        ucp_worker_destroy(worker->ucp);
    }
}

OBJ_CLASS_INSTANCE(ompi_osc_ucxx_worker_t, opal_object_t, worker_construct, worker_destruct);

/* Progress (any thread, no lock) walks OSC_UCXX.workers: it grows by
 * copying, is published before the count, and old copies live until
 * finalize. */
static int worker_publish(ompi_osc_ucxx_worker_t *worker)
{
    OSC_UCXX_LOCK(&OSC_UCXX.lock);
    if (OSC_UCXX.num_workers == OSC_UCXX.workers_cap) {
        int cap = OSC_UCXX.workers_cap ? 2 * OSC_UCXX.workers_cap : 8;
        ompi_osc_ucxx_worker_t **grown = calloc(cap + 1, sizeof(*grown));
        if (NULL == grown) {
            OSC_UCXX_UNLOCK(&OSC_UCXX.lock);
            return OMPI_ERR_OUT_OF_RESOURCE;
        }
        if (OSC_UCXX.num_workers > 0) {
            memcpy(grown, OSC_UCXX.workers, OSC_UCXX.num_workers * sizeof(*grown));
        }
        /* the extra slot chains the retired copies */
        grown[cap] = (ompi_osc_ucxx_worker_t *) OSC_UCXX.workers;
        opal_atomic_wmb();
        OSC_UCXX.workers = grown;
        OSC_UCXX.workers_cap = cap;
    }
    worker->index = OSC_UCXX.num_workers;
    OSC_UCXX.workers[OSC_UCXX.num_workers] = worker;
    opal_atomic_wmb();
    OSC_UCXX.num_workers++;
    OSC_UCXX_UNLOCK(&OSC_UCXX.lock);
    return OMPI_SUCCESS;
}

/* A worker object around `made` (a UCP worker the early start created), or
 * around a new UCP worker. */
static ompi_osc_ucxx_worker_t *worker_create(ucp_worker_h made)
{
    ucp_worker_params_t params;
    ompi_osc_ucxx_worker_t *worker = OBJ_NEW(ompi_osc_ucxx_worker_t);
    ucs_status_t status = UCS_OK;

    if (NULL == worker) {
        if (NULL != made) ucp_worker_destroy(made);
        return NULL;
    }
    memset(&params, 0, sizeof(params));
    params.field_mask = UCP_WORKER_PARAM_FIELD_THREAD_MODE;
    params.thread_mode = OSC_UCXX.thread_mode;
    worker->ucp = made;
    if (NULL == made) status = ucp_worker_create(OSC_UCXX.context, &params, &worker->ucp);
    if (UCS_OK != status) {
        opal_show_help("help-osc-ucxx.txt", "ucx init failed", true, "ucp_worker_create",
                       ucs_status_string(status));
        worker->ucp = NULL;
        OBJ_RELEASE(worker);
        return NULL;
    }
    if ((NULL != worker_setup && OMPI_SUCCESS != worker_setup(worker)) ||
        OMPI_SUCCESS != ompi_osc_ucxx_quiesce_am_register(worker) ||
        OMPI_SUCCESS != worker_publish(worker)) {
        OBJ_RELEASE(worker);
        return NULL;
    }
    OSC_UCXX_VERBOSE(10, "created worker %d", worker->index);
    return worker;
}

/* The calling thread has no worker yet. */
ompi_osc_ucxx_worker_t *ompi_osc_ucxx_worker_acquire(void)
{
    ompi_osc_ucxx_worker_t *worker = NULL;

    if (UCS_THREAD_MODE_MULTI != OSC_UCXX.thread_mode || !OSC_UCXX.per_thread_workers) {
        /* One thread in MPI at a time: it uses the main worker. */
        ompi_osc_ucxx_tls.worker = OSC_UCXX.main_worker;
        return OSC_UCXX.main_worker;
    }

    OSC_UCXX_LOCK(&OSC_UCXX.lock);
    for (int i = 0; i < OSC_UCXX.num_workers; ++i) {
        if (!OSC_UCXX.workers[i]->owned) {
            worker = OSC_UCXX.workers[i];
            worker->owned = true;
            break;
        }
    }
    OSC_UCXX_UNLOCK(&OSC_UCXX.lock);

    if (NULL == worker) {
        worker = worker_create(NULL);
        if (NULL == worker) {
            return NULL;
        }
        worker->owned = true;
    }
    ompi_osc_ucxx_tls.worker = worker;
    pthread_setspecific(OSC_UCXX.tls_key, worker);
    return worker;
}

/* The pool and the main worker (around `made`, the early start's UCP
 * worker, if it made one), from context_init. */
int ompi_osc_ucxx_workers_init(ucp_worker_h made)
{
    if (0 != pthread_key_create(&OSC_UCXX.tls_key, tls_release)) {
        return OMPI_ERR_OUT_OF_RESOURCE;
    }
    OSC_UCXX.tls_key_created = true;

    OSC_UCXX.main_worker = worker_create(made);
    if (NULL == OSC_UCXX.main_worker) {
        return OMPI_ERROR;
    }
    if (UCS_THREAD_MODE_MULTI != OSC_UCXX.thread_mode || !OSC_UCXX.per_thread_workers) {
        OSC_UCXX.only_worker = OSC_UCXX.main_worker;  /* = ompi_osc_ucxx_worker_acquire's */
        OSC_UCXX.links_shared = MPI_THREAD_MULTIPLE == ompi_mpi_thread_provided;
    }
    return OMPI_SUCCESS;
}

/* Finalize, once the windows are gone: every worker's endpoints closed while
 * every worker can still be progressed (osc_ucxx_quiesce.c), then the
 * workers destroyed, and the peers' addresses forgotten. */
void ompi_osc_ucxx_workers_fini(void)
{
    ompi_osc_ucxx_main_address_release();
    for (int i = 0; i < OSC_UCXX.num_workers; ++i) {
        ompi_osc_ucxx_rkeys_destroy(OSC_UCXX.workers[i]);
        ompi_osc_ucxx_eps_close(OSC_UCXX.workers[i]);
    }
    for (int i = 0; i < OSC_UCXX.num_workers; ++i) {
        OBJ_RELEASE(OSC_UCXX.workers[i]);
    }
    ompi_osc_ucxx_quiesce_deregister();
    while (NULL != OSC_UCXX.workers) {
        ompi_osc_ucxx_worker_t **retired =
            (ompi_osc_ucxx_worker_t **) OSC_UCXX.workers[OSC_UCXX.workers_cap];
        free(OSC_UCXX.workers);
        OSC_UCXX.workers = retired;
        OSC_UCXX.workers_cap /= 2;
    }
    OSC_UCXX.num_workers = 0;
    OSC_UCXX.main_worker = NULL;
    OSC_UCXX.only_worker = NULL;
    OSC_UCXX.links_shared = false;
    ompi_osc_ucxx_tls.worker = NULL;
    if (OSC_UCXX.tls_key_created) {
        pthread_key_delete(OSC_UCXX.tls_key);
        OSC_UCXX.tls_key_created = false;
    }
    ompi_osc_ucxx_peer_addrs_fini();
}
