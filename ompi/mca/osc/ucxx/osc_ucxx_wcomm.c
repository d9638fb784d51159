/*
 * Copyright (c) 2026 The osc/ucxx authors. All rights reserved.
 * $COPYRIGHT$
 *
 * The window's communicator: shared by the windows over one communicator,
 * or kept from one window to the next; and the window's id, by which
 * messages and memory handles name it (ompi_osc_ucxx_window_lookup).
 *
 * A window runs its collectives (creation exchange, fence barriers, the
 * closing barrier) on a communicator of its own: they must not meet the
 * application's on `comm`, which may also be freed while the window lives.
 * Duplicating `comm` for each window cost a third of an MPI_Win_create
 * at 2 ranks with 100 windows alive, more at 4 ranks
 * (context-id agreement, an allreduce or more; activation: every coll
 * component asked about the new communicator, another allreduce).
 *
 * Below MPI_THREAD_MULTIPLE the windows over `comm` share one duplicate of
 * it.  Their collectives cannot meet on it: creations over `comm` are
 * collective over it, a window's fences and free collective over its group
 * (the same), and each of these may synchronize, so a program that does not
 * deadlock makes them in the same order on every process; with one thread
 * in MPI at a time no two of them run at once.  The same order also numbers
 * the windows alike everywhere: a window's id on the wire (active messages,
 * memory handles) is the shared communicator's context id with the
 * window's number on it, 0x80000000 | n << 16 | cid (the first window: the
 * context id alone).  Numbers are never reused, so a window freed on one
 * process and still alive on another (a duplicate handle's zombie) keeps
 * its id; after OSC_UCXX_SHARED_WINDOWS windows the entry duplicates `comm`
 * anew (the old duplicate goes with its last window).  A context id above
 * 16 bits does not fit: such a window gets a duplicate of its own.
 *
 * Under MPI_THREAD_MULTIPLE two threads may fence two windows at once, so
 * each window has a communicator of its own; a window that goes at its
 * collective MPI_Win_free leaves it to the next window over `comm` (OSU: one
 * per message size; runtimes: one per allocation or per phase).  Every
 * process must choose alike, or one would run the window's collectives on a
 * kept communicator while another duplicates `comm` (a hang):
 *   - a free keeps its communicator only where every process of the window
 *     can: its closing barrier is an allreduce of "the core goes with this
 *     free, nothing is kept or being kept here, `comm` is alive";
 *   - a free in one thread may pass a creation in another in a different
 *     order on each process: a creation first agrees on what is kept (an
 *     allreduce over `comm`, which a window creation, a collective over it,
 *     may use) and duplicates where the processes differ.
 * Such a window's id is its communicator's context id: a window over a
 * kept communicator has the id of the window that left it, as Open MPI
 * gives a new communicator the lowest free id, which is the freed window's.
 *
 * Where: one entry per application communicator, an attribute of it (a
 * keyval of ours, copied by nobody's MPI_Comm_dup, deleted with `comm`),
 * holding the shared duplicate or at most one kept communicator.
 *
 * Freeing a communicator inside the attribute callback would re-enter the
 * attribute code (some versions hold its lock around callbacks): a kept or
 * shared communicator whose `comm` goes with no window on it is freed at the
 * next window creation.  At MPI_Finalize what is left is Open MPI's, like a
 * zombie window's communicator (ompi_comm_finalize releases what a program
 * left: after the osc components finalize in 4.1, before in 5.0), so the
 * callback then only forgets it; in 4.1 our finalize deletes our attributes
 * first, so that no callback of ours runs after the component is unloaded.
 */

#include "ompi_config.h"

#include <pthread.h>

#include "ompi/attribute/attribute.h"
#include "ompi/runtime/mpiruntime.h"
#include "ompi/op/op.h"

#include "osc_ucxx.h"

/* A duplicate shared by the windows over one communicator. */
struct ompi_osc_ucxx_shared_comm_t {
    ompi_communicator_t *comm;
    int refs;                    /* its windows, + 1 while its entry's */
    uint32_t windows;            /* windows made on it: the next one's number */
};

typedef struct ompi_osc_ucxx_wcomm_t {
    ompi_communicator_t *user;   /* the application's (while `attached`) */
    ompi_communicator_t *kept;   /* a freed window's duplicate of it, or NULL */
    ompi_osc_ucxx_shared_comm_t *shared;  /* the windows' (no MPI_THREAD_MULTIPLE) */
    bool share;                  /* every process shares (agreed on the first window) */
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

/* Under OSC_UCXX.lock: a dead communicator, freed at the next creation
 * (not inside an attribute callback; at finalize, Open MPI's). */
static void bury(ompi_communicator_t *comm)
{
    dead_comm_t *d;

    if (NULL == comm || finalizing()) return;
    d = malloc(sizeof(*d));
    if (NULL != d) {
        *d = (dead_comm_t){comm, dead};
        dead = d;
    }  /* (else it stays allocated: a leak, not a fault) */
}

/* Under OSC_UCXX.lock: drop a reference on a shared duplicate; the
 * communicator to free (outside the lock) with the last, or NULL. */
static ompi_communicator_t *shared_unref(ompi_osc_ucxx_shared_comm_t *s)
{
    ompi_communicator_t *comm = NULL;

    if (0 == --s->refs) {
        comm = s->comm;
        free(s);
    }
    return comm;
}

/* `comm` is being freed (or MPI_Finalize deletes its attributes). */
static int attr_deleted(MPI_Comm comm, int key, void *attr, void *extra)
{
    ompi_osc_ucxx_wcomm_t *e = attr;
    (void) comm; (void) key; (void) extra;

    OSC_UCXX_LOCK(&OSC_UCXX.lock);
    bury(e->kept);
    if (NULL != e->shared) bury(shared_unref(e->shared));
    e->kept = NULL;
    e->shared = NULL;
    e->attached = false;
    unlink_entry(e);
    entry_unref(e);
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

/* `comm`'s entry, made and attached on its first window (NULL: none;
 * *fresh: made now). */
static ompi_osc_ucxx_wcomm_t *entry_of(ompi_communicator_t *comm, bool *fresh)
{
    ompi_osc_ucxx_wcomm_t *e = NULL;
    void *value = NULL;
    int flag = 0;

    *fresh = false;
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
    *fresh = true;
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

/* Does every process hold the same kept communicator? */
static bool all_hold(ompi_communicator_t *comm, ompi_communicator_t *kept, int *rc)
{
    int mine = NULL != kept ? (int) ompi_osc_ucxx_comm_cid(kept) : -1;
    int v[2] = {mine, -mine};

    *rc = comm->c_coll->coll_allreduce(MPI_IN_PLACE, v, 2, &ompi_mpi_int.dt, &ompi_mpi_op_max.op,
                                       comm, comm->c_coll->coll_allreduce_module);
    return OMPI_SUCCESS == *rc && mine >= 0 && v[0] == mine && -v[1] == mine;
}

/* A window's id: its communicator's context id and its number on it. */
static uint32_t window_id(ompi_communicator_t *comm, uint32_t n)
{
    uint32_t cid = ompi_osc_ucxx_comm_cid(comm);
    return 0 == n ? cid : UINT32_C(0x80000000) | n << 16 | cid;
}

/* On the first window over `comm`: may its windows share a duplicate?  Only
 * if every process can (none under MPI_THREAD_MULTIPLE, whatever level the
 * others asked for), so it is agreed in an allreduce over `comm`. */
static int agree_share(ompi_osc_ucxx_wcomm_t *e, ompi_communicator_t *comm)
{
    int ok = !OSC_UCXX.enable_mpi_threads, rc;

    rc = comm->c_coll->coll_allreduce(MPI_IN_PLACE, &ok, 1, &ompi_mpi_int.dt, &ompi_mpi_op_min.op,
                                      comm, comm->c_coll->coll_allreduce_module);
    e->share = OMPI_SUCCESS == rc && ok;
    return rc;
}

/* A window of its own on a duplicate of `comm`. */
static int own_dup(ompi_osc_ucxx_module_t *module, ompi_communicator_t *comm)
{
    ompi_communicator_t *dup = NULL;
    int rc = ompi_comm_dup(comm, &dup);

    if (OMPI_SUCCESS == rc) {
        module->comm = dup;
        module->cid = window_id(dup, 0);
    }
    return rc;
}

/* The next window on the entry's shared duplicate: made on the first
 * window, and again once OSC_UCXX.comm_windows windows have had numbers on
 * it (the old one goes with its last window). */
static int shared_get(ompi_osc_ucxx_module_t *module, ompi_osc_ucxx_wcomm_t *e,
                      ompi_communicator_t *comm)
{
    ompi_osc_ucxx_shared_comm_t *s;
    ompi_communicator_t *spent = NULL;
    int rc;

    OSC_UCXX_LOCK(&OSC_UCXX.lock);
    s = e->shared;
    if (NULL != s && s->windows >= OSC_UCXX.comm_windows) {
        e->shared = NULL;
        spent = shared_unref(s);
        s = NULL;
    }
    OSC_UCXX_UNLOCK(&OSC_UCXX.lock);
    if (NULL != spent) ompi_comm_free(&spent);
    if (NULL == s) {
        s = calloc(1, sizeof(*s));
        if (NULL == s) return OMPI_ERR_OUT_OF_RESOURCE;
        rc = ompi_comm_dup(comm, &s->comm);
        if (OMPI_SUCCESS != rc || ompi_osc_ucxx_comm_cid(s->comm) > 0xffff) {
            /* (No room for numbers beside such an id: the window's own.) */
            if (OMPI_SUCCESS == rc) {
                module->comm = s->comm;
                module->cid = window_id(module->comm, 0);
            }
            free(s);
            return rc;
        }
        s->refs = 1;
        e->shared = s;   /* (one thread in MPI: nobody else looks) */
    }
    OSC_UCXX_LOCK(&OSC_UCXX.lock);
    s->refs++;
    module->cid = window_id(s->comm, s->windows++);
    OSC_UCXX_UNLOCK(&OSC_UCXX.lock);
    module->comm = s->comm;
    module->shared_comm = s;
    OSC_UCXX_VERBOSE(20, "window %#x on the shared communicator %u", module->cid,
                     ompi_osc_ucxx_comm_cid(s->comm));
    return OMPI_SUCCESS;
}

/* MPI_THREAD_MULTIPLE somewhere: a kept communicator where every process
 * holds the same one, else a duplicate. */
static int kept_get(ompi_osc_ucxx_module_t *module, ompi_osc_ucxx_wcomm_t *e,
                    ompi_communicator_t *comm)
{
    ompi_communicator_t *kept;
    int rc = OMPI_SUCCESS;

    OSC_UCXX_LOCK(&OSC_UCXX.lock);
    kept = e->kept;
    e->kept = NULL;
    OSC_UCXX_UNLOCK(&OSC_UCXX.lock);
    if (!all_hold(comm, kept, &rc)) {
        if (NULL != kept) ompi_comm_free(&kept);   /* (sets it to MPI_COMM_NULL) */
        if (OMPI_SUCCESS != rc) return rc;
        return own_dup(module, comm);
    }
    module->comm = kept;
    module->cid = window_id(kept, 0);
    OSC_UCXX_VERBOSE(20, "window over the kept communicator %u", module->cid);
    return OMPI_SUCCESS;
}

int ompi_osc_ucxx_wcomm_get(ompi_osc_ucxx_module_t *module, ompi_communicator_t *comm)
{
    ompi_osc_ucxx_wcomm_t *e = NULL;
    bool fresh = false;
    int rc = OMPI_SUCCESS;

    free_dead();
    if (!OSC_UCXX.keep_comm) return own_dup(module, comm);
    e = entry_of(comm, &fresh);
    if (fresh) {
        rc = agree_share(e, comm);
        if (OMPI_SUCCESS != rc) return rc;
    }
    if (NULL == e) return own_dup(module, comm);
    rc = e->share ? shared_get(module, e, comm) : kept_get(module, e, comm);
    if (OMPI_SUCCESS != rc) return rc;
    OSC_UCXX_LOCK(&OSC_UCXX.lock);
    e->refs++;
    OSC_UCXX_UNLOCK(&OSC_UCXX.lock);
    module->wcomm = e;
    return OMPI_SUCCESS;
}

int ompi_osc_ucxx_wcomm_close(ompi_osc_ucxx_module_t *module)
{
    ompi_osc_ucxx_wcomm_t *e = module->wcomm;
    ompi_communicator_t *comm = module->comm;
    bool offered = false;
    int can, rc;

    /* (Duplicate handles still open here keep the core past this free.) */
    if (NULL != e && !e->share && 1 == module->refcount) {
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
    ompi_osc_ucxx_shared_comm_t *s = module->shared_comm;
    ompi_communicator_t *comm = module->comm;

    module->comm = NULL;
    module->wcomm = NULL;
    module->shared_comm = NULL;
    if (NULL != e) {
        OSC_UCXX_LOCK(&OSC_UCXX.lock);
        if (NULL != s) {
            /* (No communicator: a zombie at finalize, whose shared one is
             * Open MPI's now and may be gone with its reference count.) */
            comm = NULL != comm ? shared_unref(s) : NULL;
        } else if (module->keep_comm) {
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

/* The window table (OSC_UCXX.windows: window.c adds and removes), keyed by
 * the window's id, for active messages and memory handles that name a
 * window. */
ompi_osc_ucxx_module_t *ompi_osc_ucxx_window_lookup(uint32_t cid)
{
    void *module = NULL;
    OSC_UCXX_LOCK(&OSC_UCXX.lock);
    (void) opal_hash_table_get_value_uint32(&OSC_UCXX.windows, cid, &module);
    OSC_UCXX_UNLOCK(&OSC_UCXX.lock);
    return (ompi_osc_ucxx_module_t *) module;
}
