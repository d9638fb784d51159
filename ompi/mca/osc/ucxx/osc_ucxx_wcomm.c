/*
 * Copyright (c) 2026 The osc/ucxx authors. All rights reserved.
 * $COPYRIGHT$
 *
 * The window's communicator, kept from one window to the next.
 *
 * A window runs its collectives (creation exchange, fence barriers, the
 * closing barrier) on a communicator of its own: they must not meet the
 * application's on `comm`, which may also be freed while the window lives.
 * Duplicating `comm` for it cost 5.3 of the 14 us of MPI_Win_create_dynamic
 * at 2 ranks (context-id agreement, an allreduce or more; activation: every
 * coll component asked about the new communicator, another allreduce), and
 * freeing it 1.1 us of MPI_Win_free.  Programs create windows over the same
 * communicator again and again (OSU: one per message size; runtimes: one
 * per allocation or per phase), so a window that goes at its collective
 * MPI_Win_free leaves its communicator to the next window over `comm`.
 *
 * Where: one entry per application communicator, an attribute of it (a
 * keyval of ours, copied by nobody's MPI_Comm_dup, deleted with `comm`),
 * holding at most one kept communicator.
 *
 * Every process must choose alike, or one would run the window's
 * collectives on a kept communicator while another duplicates `comm` (a
 * hang):
 *   - a free keeps its communicator only where every process of the window
 *     can: its closing barrier is an allreduce of "the core goes with this
 *     free, nothing is kept or being kept here, `comm` is alive";
 *   - a creation takes what is kept.  Creations over `comm` are collective
 *     over it and frees collective over the window, and a program that does
 *     not deadlock calls them in the same order on every process (each
 *     synchronizes), so below MPI_THREAD_MULTIPLE every process finds the
 *     same thing kept.  Under MPI_THREAD_MULTIPLE a free in one thread may
 *     pass a creation in another in a different order on each process:
 *     there the creation first agrees on what is kept (an allreduce over
 *     `comm`, which a window creation, a collective over it, may use) and
 *     duplicates where the processes differ.
 *
 * A window's id on the wire is its communicator's context id, so a window
 * over a kept communicator has the id of the window that left it: no
 * change, since Open MPI gives a new communicator the lowest free id, which
 * is the freed window's.
 *
 * Freeing a communicator inside the attribute callback would re-enter the
 * attribute code (some versions hold its lock around callbacks): a kept
 * communicator whose `comm` goes is freed at the next window creation.  At
 * MPI_Finalize what is kept is Open MPI's, like a zombie window's
 * communicator (ompi_comm_finalize releases what a program left: after the
 * osc components finalize in 4.1, before in 5.0), so the callback then only
 * forgets it; in 4.1 our finalize deletes our attributes first, so that no
 * callback of ours runs after the component is unloaded.
 */

#include "ompi_config.h"

#include <pthread.h>

#include "ompi/attribute/attribute.h"
#include "ompi/runtime/mpiruntime.h"
#include "ompi/op/op.h"

#include "osc_ucxx.h"

typedef struct ompi_osc_ucxx_wcomm_t {
    ompi_communicator_t *user;   /* the application's (while `attached`) */
    ompi_communicator_t *kept;   /* a freed window's duplicate of it, or NULL */
    bool attached;               /* still an attribute of `user` */
    bool busy;                   /* a free is deciding whether to keep its own */
    int refs;                    /* the attribute + the windows made through it */
    struct ompi_osc_ucxx_wcomm_t *next;  /* every attached entry (finalize) */
} ompi_osc_ucxx_wcomm_t;

/* Communicators whose application communicator went: freed at the next
 * creation. */
typedef struct dead_comm_t {
    ompi_communicator_t *comm;
    struct dead_comm_t *next;
} dead_comm_t;

static int keyval = MPI_KEYVAL_INVALID;
static pthread_mutex_t keyval_lock = PTHREAD_MUTEX_INITIALIZER;
static ompi_osc_ucxx_wcomm_t *entries;  /* under OSC_UCXX.lock, as the rest */
static dead_comm_t *dead;

static bool finalizing(void)
{
    return ompi_mpi_state >= OMPI_MPI_STATE_FINALIZE_STARTED;
}

/* Under OSC_UCXX.lock: drop a reference, the entry with the last. */
static void entry_unref(ompi_osc_ucxx_wcomm_t *e)
{
    if (0 == --e->refs) free(e);
}

static void unlink_entry(ompi_osc_ucxx_wcomm_t *e)
{
    for (ompi_osc_ucxx_wcomm_t **p = &entries; NULL != *p; p = &(*p)->next) {
        if (*p == e) {
            *p = e->next;
            return;
        }
    }
}

/* `comm` is being freed (or MPI_Finalize deletes its attributes). */
static int attr_deleted(MPI_Comm comm, int key, void *attr, void *extra)
{
    ompi_osc_ucxx_wcomm_t *e = attr;
    ompi_communicator_t *kept;
    (void) comm; (void) key; (void) extra;

    OSC_UCXX_LOCK(&OSC_UCXX.lock);
    kept = e->kept;
    e->kept = NULL;
    e->attached = false;
    unlink_entry(e);
    entry_unref(e);
    if (NULL != kept && !finalizing()) {
        dead_comm_t *d = malloc(sizeof(*d));
        if (NULL != d) {
            *d = (dead_comm_t){kept, dead};
            dead = d;
        }  /* (else it stays allocated: a leak, not a fault) */
    }
    OSC_UCXX_UNLOCK(&OSC_UCXX.lock);
    return MPI_SUCCESS;
}

static int make_keyval(void)
{
    ompi_attribute_fn_ptr_union_t copy, del;
    int rc = OMPI_SUCCESS;

    pthread_mutex_lock(&keyval_lock);
    if (MPI_KEYVAL_INVALID == keyval) {
        copy.attr_communicator_copy_fn =
            (__typeof__(copy.attr_communicator_copy_fn)) OMPI_C_MPI_COMM_NULL_COPY_FN;
        del.attr_communicator_delete_fn = attr_deleted;
        rc = ompi_attr_create_keyval(COMM_ATTR, copy, del, &keyval, NULL, 0, NULL);
    }
    pthread_mutex_unlock(&keyval_lock);
    return rc;
}

/* `comm`'s entry, made and attached on its first window (NULL: none). */
static ompi_osc_ucxx_wcomm_t *entry_of(ompi_communicator_t *comm)
{
    ompi_osc_ucxx_wcomm_t *e = NULL;
    void *value = NULL;
    int flag = 0;

    if (OMPI_SUCCESS != make_keyval()) return NULL;
    if (NULL != comm->c_keyhash &&
        OMPI_SUCCESS == ompi_attr_get_c(comm->c_keyhash, keyval, &value, &flag) && flag) {
        return value;
    }
    e = calloc(1, sizeof(*e));
    if (NULL == e) return NULL;
    *e = (ompi_osc_ucxx_wcomm_t){.user = comm, .attached = true, .refs = 1};
    if (OMPI_SUCCESS != ompi_attr_set_c(COMM_ATTR, comm, &comm->c_keyhash, keyval, e, false)) {
        free(e);
        return NULL;
    }
    OSC_UCXX_LOCK(&OSC_UCXX.lock);
    e->next = entries;
    entries = e;
    OSC_UCXX_UNLOCK(&OSC_UCXX.lock);
    return e;
}

static void free_dead(void)
{
    dead_comm_t *list;

    OSC_UCXX_LOCK(&OSC_UCXX.lock);
    list = dead;
    dead = NULL;
    OSC_UCXX_UNLOCK(&OSC_UCXX.lock);
    while (NULL != list) {
        dead_comm_t *d = list;
        list = d->next;
        ompi_comm_free(&d->comm);
        free(d);
    }
}

/* MPI_THREAD_MULTIPLE: does every process hold the same kept communicator? */
static bool all_hold(ompi_communicator_t *comm, ompi_communicator_t *kept, int *rc)
{
    int mine = NULL != kept ? (int) ompi_osc_ucxx_comm_cid(kept) : -1;
    int v[2] = {mine, -mine};

    *rc = comm->c_coll->coll_allreduce(MPI_IN_PLACE, v, 2, &ompi_mpi_int.dt, &ompi_mpi_op_max.op,
                                       comm, comm->c_coll->coll_allreduce_module);
    return OMPI_SUCCESS == *rc && mine >= 0 && v[0] == mine && -v[1] == mine;
}

int ompi_osc_ucxx_wcomm_get(ompi_osc_ucxx_module_t *module, ompi_communicator_t *comm)
{
    ompi_osc_ucxx_wcomm_t *e = NULL;
    ompi_communicator_t *kept = NULL;
    int rc = OMPI_SUCCESS;

    free_dead();
    if (!OSC_UCXX.keep_comm) return ompi_comm_dup(comm, &module->comm);
    e = entry_of(comm);
    if (NULL != e) {
        OSC_UCXX_LOCK(&OSC_UCXX.lock);
        kept = e->kept;
        e->kept = NULL;
        OSC_UCXX_UNLOCK(&OSC_UCXX.lock);
    }
    if (OSC_UCXX.enable_mpi_threads && !all_hold(comm, kept, &rc)) {
        if (NULL != kept) ompi_comm_free(&kept);   /* (sets it to MPI_COMM_NULL) */
        kept = NULL;
        if (OMPI_SUCCESS != rc) return rc;
    }
    if (NULL != kept) {
        module->comm = kept;
        OSC_UCXX_VERBOSE(20, "window over the kept communicator %u",
                         ompi_osc_ucxx_comm_cid(kept));
    } else {
        rc = ompi_comm_dup(comm, &module->comm);
        if (OMPI_SUCCESS != rc) return rc;
    }
    if (NULL != e) {
        OSC_UCXX_LOCK(&OSC_UCXX.lock);
        e->refs++;
        OSC_UCXX_UNLOCK(&OSC_UCXX.lock);
        module->wcomm = e;
    }
    return OMPI_SUCCESS;
}

int ompi_osc_ucxx_wcomm_close(ompi_osc_ucxx_module_t *module)
{
    ompi_osc_ucxx_wcomm_t *e = module->wcomm;
    ompi_communicator_t *comm = module->comm;
    bool offered = false;
    int can, rc;

    /* (Duplicate handles still open here keep the core past this free.) */
    if (NULL != e && 1 == module->refcount) {
        OSC_UCXX_LOCK(&OSC_UCXX.lock);
        if (e->attached && NULL == e->kept && !e->busy) {
            e->busy = offered = true;
        }
        OSC_UCXX_UNLOCK(&OSC_UCXX.lock);
    }
    can = offered;
    rc = comm->c_coll->coll_allreduce(MPI_IN_PLACE, &can, 1, &ompi_mpi_int.dt, &ompi_mpi_op_min.op,
                                      comm, comm->c_coll->coll_allreduce_module);
    if (offered) {
        if (OMPI_SUCCESS == rc && can) {
            module->keep_comm = true;
        } else {
            OSC_UCXX_LOCK(&OSC_UCXX.lock);
            e->busy = false;
            OSC_UCXX_UNLOCK(&OSC_UCXX.lock);
        }
    }
    return rc;
}

void ompi_osc_ucxx_wcomm_put(ompi_osc_ucxx_module_t *module)
{
    ompi_osc_ucxx_wcomm_t *e = module->wcomm;
    ompi_communicator_t *comm = module->comm;

    module->comm = NULL;
    module->wcomm = NULL;
    if (NULL != e) {
        OSC_UCXX_LOCK(&OSC_UCXX.lock);
        if (module->keep_comm) {
            e->busy = false;
            if (e->attached && NULL != comm) {
                e->kept = comm;
                comm = NULL;
            }
        }
        entry_unref(e);
        OSC_UCXX_UNLOCK(&OSC_UCXX.lock);
    }
    if (NULL != comm) ompi_comm_free(&comm);
}

void ompi_osc_ucxx_wcomm_fini(void)
{
    dead_comm_t *d;

    if (ompi_osc_ucxx_comms_outlive_osc()) {
        /* (Each deletion calls attr_deleted, which unlinks the entry.) */
        while (NULL != entries) {
            ompi_communicator_t *user = entries->user;
            if (OMPI_SUCCESS != ompi_attr_delete(COMM_ATTR, user, user->c_keyhash, keyval,
                                                 false)) {
                break;
            }
        }
        if (MPI_KEYVAL_INVALID != keyval) {
            (void) ompi_attr_free_keyval(COMM_ATTR, &keyval, false);
            keyval = MPI_KEYVAL_INVALID;
        }
    }
    /* Open MPI's now (see above). */
    while (NULL != (d = dead)) {
        dead = d->next;
        free(d);
    }
}
