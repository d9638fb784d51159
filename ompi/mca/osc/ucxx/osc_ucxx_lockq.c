/*
 * Copyright (c) 2026 The osc/ucxx authors. All rights reserved.
 * $COPYRIGHT$
 *
 * Locks queued at the target: the target's side of target-managed locks
 * (module->lock_kind OSC_UCXX_LOCKS_TARGET, agreed at creation by
 * osc_ucxx_policy.c; the origin's side is osc_ucxx_lazy.c).
 *
 * Why.  Where some peer does not map our state segment and UCX applies
 * atomics with the CPU (TCP, memory UCX does not register for RDMA), each
 * UCX atomic on our lock word is a message our CPU serves anyway, waited
 * for by its origin, and an origin that finds the lock taken tries again
 * with more of them.  So the lock is ours to manage: an origin that does
 * not map the word asks by message, and we answer once, when the lock is
 * its, in the order origins asked (Thakur, Gropp and Toonen 2005, section
 * 4; Zhao 2016, ScalaRMA chapter 3).
 *
 * The word.  Still the state segment's lock word (readers in the low 32
 * bits, a writer in bit 32), changed by CPU atomics only
 * (osc_ucxx_state.c): ours, for ourselves and for the origins we grant,
 * and those of peers that map it, which take it one-sidedly while it is
 * free and nobody waits.  While the queue holds origins, bit 40
 * (OSC_UCXX_LOCK_QUEUED) says so, and only we take the word, for the
 * queue's head: the queue's order holds for everybody.  A peer that maps
 * the word and finds it taken or queued joins the queue by message like
 * any origin; one that releases it and finds the bit set tells us
 * (OSC_UCXX_LQ_KICK), as a release by message does.
 *
 * The queue.  One entry per waiting request (a process asks at most once
 * per target and thread at a time): first in, first granted; readers at
 * the head are granted together, and a writer at the head keeps later
 * readers out until it is through.  Nothing is sized by the number of
 * processes.
 *
 * Epochs carried in the request.  A request may carry a short epoch's
 * operations (puts with their values, gets, accumulates, compare-and-swap;
 * bounded by the origin) and the release.  Once it is granted we apply
 * them in order (accumulates under the stripes, as accumulate messages
 * are: osc_ucxx_acc_am.c), release the lock if asked, and answer once with
 * the results and the first error an operation met (a range the origin
 * cannot check: dynamic windows): lock + operations + unlock in one round
 * trip, the lock released whatever happened.  A longer epoch comes in
 * several messages: the request, then OSC_UCXX_LQ_MORE messages of the
 * same epoch, which the origin sends without waiting for the grant.  One
 * that finds its request still here (waiting, or its operations held up by
 * a stripe) follows it and is applied after it; one that finds none (the
 * lock is its origin's) goes to the queue's head, to be applied at once.
 * The origin bounds what it sends ahead of a grant (osc_ucxx_lazy.c), so
 * a waiting request holds a bounded number of them here.  A stripe taken
 * by a peer on the node holds the queue up until the deferred work's next
 * pass (OSC_UCXX_AM_LOCK_WORK): nobody holds a stripe across a wait.
 *
 * Where it runs.  Lock messages are handled from the deferred queue
 * (osc_ucxx_am.c), outside UCX callbacks, so that answers go at once, and
 * in order with the window's accumulate messages (OSC_UCXX_AM_IN_ORDER): a
 * release comes after what its origin sent before it.  A request that
 * cannot be granted waits here, not in that queue, where it would hold up
 * everything behind it.  The queue's lock is held over grants and sends,
 * never across a wait.
 */

#include "ompi_config.h"

#include "osc_ucxx_lockq.h"
#include "osc_ucxx_dynamic.h"

typedef struct lq_entry {
    struct lq_entry *next;
    struct lq_entry *follow, *follow_tail;   /* MORE messages of its epoch, in order */
    int from;                   /* the origin's rank */
    uint32_t flags;             /* OSC_UCXX_LQ_* */
    uint64_t token, epoch;
    volatile int32_t *granted;  /* we wait ourselves (on our stack): set when granted */
    char *msg;                  /* the request, if it carries operations */
    size_t len;
    bool holds;                 /* the lock is taken for it (MORE: by its request) */
    bool waited;                /* it found the lock taken */
    uint32_t done;              /* operations applied */
    size_t at;                  /* ... where the next one starts in msg */
    char *reply;                /* the answer being built */
    size_t rat, rcap;           /* ... where the next result goes, its room */
    int32_t status;
} lq_entry_t;

struct ompi_osc_ucxx_lockq_t {
    opal_mutex_t lock;
    lq_entry_t *head, *tail;
    bool queued;                /* our word says origins wait */
    bool blocked;               /* the head waits for a stripe */
    bool retry;                 /* ... and a deferred pass will look again */
};

static ompi_osc_ucxx_lockq_t *lockq(ompi_osc_ucxx_module_t *module)
{
    ompi_osc_ucxx_lockq_t *q = module->lockq, *made;

    if (OPAL_LIKELY(NULL != q)) return q;
    if (NULL == (made = calloc(1, sizeof(*made)))) return NULL;
    OBJ_CONSTRUCT(&made->lock, opal_mutex_t);
    if (!__atomic_compare_exchange_n(&module->lockq, &q, made, false, __ATOMIC_ACQ_REL,
                                     __ATOMIC_ACQUIRE)) {
        OBJ_DESTRUCT(&made->lock);
        free(made);
        return q;   /* (another thread made it) */
    }
    return made;
}

static int entry_type(const lq_entry_t *e)
{
    return (e->flags & OSC_UCXX_LQ_EXCL) ? MPI_LOCK_EXCLUSIVE : MPI_LOCK_SHARED;
}

/* ------------------------------------------------------------------------- */
/* Carried operations */

static int in_window(ompi_osc_ucxx_module_t *module, uint64_t offset, uint64_t len)
{
    uint64_t end = offset + len;
    if (0 == len || end < offset) return OMPI_ERR_RMA_RANGE;
    if (MPI_WIN_FLAVOR_DYNAMIC == module->flavor) {
        return ompi_osc_ucxx_dyn_contains(module, offset, end) ? OMPI_SUCCESS
                                                               : OMPI_ERR_RMA_RANGE;
    }
    return end <= module->len ? OMPI_SUCCESS : OMPI_ERR_RMA_RANGE;
}

static int apply(ompi_osc_ucxx_module_t *module, const ompi_osc_ucxx_lq_op_t *op,
                 const char *vals, char *res)
{
    char *mem = (char *) module->base + op->offset;
    int rc;

    switch (op->kind) {
    case OSC_UCXX_LQ_PUT:
        if (OMPI_SUCCESS == (rc = in_window(module, op->offset, op->len))) {
            memcpy(mem, vals, op->len);
        }
        return rc;
    case OSC_UCXX_LQ_GET:
        if (OMPI_SUCCESS == (rc = in_window(module, op->offset, op->len))) {
            memcpy(res, mem, op->len);
        }
        return rc;
    case OSC_UCXX_LQ_ACC:
    case OSC_UCXX_LQ_GACC:
    case OSC_UCXX_LQ_CAS:
        return ompi_osc_ucxx_acc_am_apply(module, op->dt, op->op, OSC_UCXX_LQ_CAS == op->kind,
                                          op->offset, op->len, op->nvals ? vals : NULL, res);
    default:
        return MPI_ERR_INTERN;
    }
}

/* Apply the entry's operations from where it stopped; OMPI_ERR_WOULD_BLOCK:
 * a stripe is taken, the rest later.  An operation that fails is skipped
 * (its results stay zero), the first failure is the answer's status. */
static int run(ompi_osc_ucxx_module_t *module, lq_entry_t *e)
{
    const ompi_osc_ucxx_lq_hdr_t *hdr = (const ompi_osc_ucxx_lq_hdr_t *) e->msg;

    while (e->done < hdr->nops) {
        ompi_osc_ucxx_lq_op_t op;
        size_t vlen, rlen;
        int rc;

        if (e->at + sizeof(op) > e->len) break;
        memcpy(&op, e->msg + e->at, sizeof(op));
        vlen = (size_t) op.nvals * op.len;
        rlen = ompi_osc_ucxx_lq_results(&op);
        if (e->at + sizeof(op) + vlen > e->len || e->rat + rlen > e->rcap) break;
        rc = apply(module, &op, e->msg + e->at + sizeof(op),
                   rlen ? e->reply + sizeof(*hdr) + e->rat : NULL);
        if (OMPI_ERR_WOULD_BLOCK == rc) return rc;
        if (OMPI_SUCCESS != rc && OMPI_SUCCESS == e->status) e->status = rc;
        e->done++;
        e->at += sizeof(op) + ompi_osc_ucxx_lq_pad(vlen);
        e->rat += ompi_osc_ucxx_lq_pad(rlen);
    }
    if (e->done < hdr->nops && OMPI_SUCCESS == e->status) {
        e->status = MPI_ERR_INTERN;   /* (a request cut short: never from our origins) */
    }
    return OMPI_SUCCESS;
}

/* ------------------------------------------------------------------------- */
/* Answers */

static void answer(ompi_osc_ucxx_module_t *module, int to, uint64_t token, uint32_t flags,
                   int32_t status, char *reply, size_t rlen)
{
    ompi_osc_ucxx_lq_hdr_t *hdr = (ompi_osc_ucxx_lq_hdr_t *) reply;
    int rc;

    if (NULL == hdr && NULL == (hdr = malloc(sizeof(*hdr)))) {
        OSC_UCXX_VERBOSE(1, "window %u: no memory to answer rank %d's lock message", module->cid,
                         to);
        return;
    }
    memset(hdr, 0, sizeof(*hdr));
    hdr->base.cid = module->cid;
    hdr->base.from = module->rank;
    hdr->token = token;
    hdr->flags = flags;
    hdr->rlen = (uint32_t) rlen;
    hdr->status = status;
    if (MPI_WIN_FLAVOR_DYNAMIC == module->flavor) {
        /* what a detach-generation read would fetch, sparing the origin's
         * operations after the grant that round trip */
        hdr->gen = ompi_osc_ucxx_state_gen_local(module);
    }
    rc = ompi_osc_ucxx_am_send(module, OSC_UCXX.main_worker, to, OSC_UCXX_AM_LOCK_REPLY, hdr,
                               sizeof(*hdr), sizeof(*hdr) + rlen);
    if (OMPI_SUCCESS != rc) {
        OSC_UCXX_VERBOSE(1, "window %u: answering rank %d's lock message failed: %d",
                         module->cid, to, rc);
    }
}

/* The head is through: released if it asked, answered, gone. */
static void finish(ompi_osc_ucxx_module_t *module, lq_entry_t *e)
{
    bool ours = NULL != e->granted;

    if (e->flags & OSC_UCXX_LQ_RELEASE) {
        (void) ompi_osc_ucxx_state_tm_release(module, module->rank, entry_type(e));
    }
    if (ours) {
        opal_atomic_wmb();
        *e->granted = 1;   /* (the waiter's stack: not touched after this) */
        return;
    }
    answer(module, e->from, e->token, e->flags | (e->waited ? OSC_UCXX_LQ_WAITED : 0),
           e->status, e->reply, e->rat);
    free(e->msg);
    free(e);
}

/* The MORE messages that follow the head (it holds the lock and its own
 * operations are applied), in order; OMPI_ERR_WOULD_BLOCK: a stripe is
 * taken, the rest later. */
static int run_follow(ompi_osc_ucxx_module_t *module, lq_entry_t *e)
{
    lq_entry_t *f;

    while (NULL != (f = e->follow)) {
        if (NULL != f->msg && OMPI_ERR_WOULD_BLOCK == run(module, f)) {
            return OMPI_ERR_WOULD_BLOCK;
        }
        e->follow = f->next;
        finish(module, f);
    }
    e->follow_tail = NULL;
    return OMPI_SUCCESS;
}

/* ------------------------------------------------------------------------- */
/* Grants */

/* Grant the head, again and again, while the word allows (caller holds the
 * queue's lock). */
static void serve_locked(ompi_osc_ucxx_module_t *module, ompi_osc_ucxx_lockq_t *q)
{
    lq_entry_t *e;

    while (NULL != (e = q->head)) {
        if (!e->holds) {
            if (!ompi_osc_ucxx_state_tm_take(module, module->rank, entry_type(e), true)) {
                e->waited = true;
                if (q->queued) return;   /* the holder's release will tell us */
                ompi_osc_ucxx_state_tm_queued(module, true);
                q->queued = true;
                continue;   /* (it may have been released meanwhile) */
            }
            e->holds = true;
        }
        if ((NULL != e->msg && OMPI_ERR_WOULD_BLOCK == run(module, e)) ||
            OMPI_ERR_WOULD_BLOCK == run_follow(module, e)) {
            q->blocked = true;
            return;
        }
        q->head = e->next;
        if (NULL == q->head) q->tail = NULL;
        finish(module, e);
    }
    q->blocked = false;
    if (q->queued) {
        ompi_osc_ucxx_state_tm_queued(module, false);
        q->queued = false;
    }
}

/* After a pass: a head waiting for a stripe is looked at again by the
 * deferred work (caller holds the queue's lock). */
static void retry_later(ompi_osc_ucxx_module_t *module, ompi_osc_ucxx_lockq_t *q)
{
    char nothing = 0;
    if (q->blocked && !q->retry &&
        OMPI_SUCCESS == ompi_osc_ucxx_am_defer(OSC_UCXX_AM_LOCK_WORK, module, module->rank,
                                               &nothing, sizeof(nothing))) {
        q->retry = true;
    }
}

static void serve(ompi_osc_ucxx_module_t *module, ompi_osc_ucxx_lockq_t *q)
{
    OSC_UCXX_LOCK(&q->lock);
    serve_locked(module, q);
    retry_later(module, q);
    OSC_UCXX_UNLOCK(&q->lock);
}

void ompi_osc_ucxx_lockq_serve(ompi_osc_ucxx_module_t *module)
{
    if (NULL != module->lockq) serve(module, module->lockq);
}

static void append(ompi_osc_ucxx_lockq_t *q, lq_entry_t *e)
{
    e->next = NULL;
    if (NULL == q->tail) q->head = e;
    else q->tail->next = e;
    q->tail = e;
}

int ompi_osc_ucxx_lockq_wait_self(ompi_osc_ucxx_module_t *module, int type)
{
    ompi_osc_ucxx_lockq_t *q = lockq(module);
    volatile int32_t granted = 0;
    lq_entry_t e;

    if (NULL == q) return OMPI_ERR_OUT_OF_RESOURCE;
    memset(&e, 0, sizeof(e));
    e.from = module->rank;
    e.flags = OSC_UCXX_LQ_LOCK | (MPI_LOCK_EXCLUSIVE == type ? OSC_UCXX_LQ_EXCL : 0);
    e.granted = &granted;
    OSC_UCXX_LOCK(&q->lock);
    append(q, &e);
    serve_locked(module, q);
    retry_later(module, q);
    OSC_UCXX_UNLOCK(&q->lock);
    while (!granted) {
        opal_progress();   /* the holder's release reaches us by message */
    }
    opal_atomic_rmb();
    return OMPI_SUCCESS;
}

/* ------------------------------------------------------------------------- */
/* Messages */

/* An entry for a lock message, with a copy of what it carries (the
 * deferred queue frees the message); NULL: no memory. */
static lq_entry_t *entry_new(int from, const char *buf, size_t len)
{
    const ompi_osc_ucxx_lq_hdr_t *hdr = (const ompi_osc_ucxx_lq_hdr_t *) buf;
    lq_entry_t *e = calloc(1, sizeof(*e));

    if (NULL == e) return NULL;
    e->from = from;
    e->flags = hdr->flags;
    e->token = hdr->token;
    e->epoch = hdr->epoch;
    if (hdr->nops > 0) {
        e->rcap = hdr->rlen;
        e->reply = calloc(1, sizeof(*hdr) + e->rcap);
        e->msg = malloc(len);
        if (NULL == e->reply || NULL == e->msg) {
            free(e->reply);
            free(e->msg);
            free(e);
            return NULL;
        }
        memcpy(e->msg, buf, len);
        e->len = len;
        e->at = sizeof(*hdr);
    }
    return e;
}

/* A request joins the queue, and the queue is served. */
static int request(ompi_osc_ucxx_module_t *module, ompi_osc_ucxx_lockq_t *q, int from,
                   const char *buf, size_t len)
{
    lq_entry_t *e = entry_new(from, buf, len);

    if (NULL == e) return OMPI_ERR_WOULD_BLOCK;   /* (tried again later) */
    append(q, e);
    serve_locked(module, q);
    return OMPI_SUCCESS;
}

/* More of an epoch whose request came before: behind that request while
 * it is here, else at the head (its origin holds the lock). */
static int more(ompi_osc_ucxx_module_t *module, ompi_osc_ucxx_lockq_t *q, int from,
                const char *buf, size_t len)
{
    lq_entry_t *e = entry_new(from, buf, len), *w;

    if (NULL == e) return OMPI_ERR_WOULD_BLOCK;
    e->holds = true;
    for (w = q->head; NULL != w; w = w->next) {
        if (NULL == w->granted && w->from == from && w->epoch == e->epoch) break;
    }
    if (NULL != w) {
        if (NULL == w->follow_tail) w->follow = e;
        else w->follow_tail->next = e;
        w->follow_tail = e;
    } else {
        e->next = q->head;
        q->head = e;
        if (NULL == q->tail) q->tail = e;
    }
    serve_locked(module, q);
    return OMPI_SUCCESS;
}

static int lock_handler(ompi_osc_ucxx_module_t *module, int from, void *buf, size_t len,
                        bool deferred)
{
    const ompi_osc_ucxx_lq_hdr_t *hdr = (const ompi_osc_ucxx_lq_hdr_t *) buf;
    ompi_osc_ucxx_lockq_t *q;
    int rc = OMPI_SUCCESS;

    if (!deferred) {
        return OMPI_ERR_WOULD_BLOCK;   /* (from the queue: answers go at once) */
    }
    if (len < sizeof(*hdr)) {
        return OMPI_SUCCESS;
    }
    if (NULL == (q = lockq(module))) {
        return OMPI_ERR_WOULD_BLOCK;
    }
    OSC_UCXX_LOCK(&q->lock);
    if (hdr->flags & OSC_UCXX_LQ_LOCK) {
        rc = request(module, q, from, buf, len);
    } else if (hdr->flags & OSC_UCXX_LQ_MORE) {
        rc = more(module, q, from, buf, len);
    } else if (hdr->flags & OSC_UCXX_LQ_RELEASE) {
        /* everything its origin sent before is done: the next one's turn,
         * then the answer */
        (void) ompi_osc_ucxx_state_tm_release(module, module->rank,
                                              (hdr->flags & OSC_UCXX_LQ_EXCL)
                                                  ? MPI_LOCK_EXCLUSIVE
                                                  : MPI_LOCK_SHARED);
        serve_locked(module, q);
        answer(module, from, hdr->token, hdr->flags, OMPI_SUCCESS, NULL, 0);
    } else {
        serve_locked(module, q);   /* a kick */
    }
    retry_later(module, q);
    OSC_UCXX_UNLOCK(&q->lock);
    return rc;
}

/* The deferred work's pass for a head that waits for a stripe: queued
 * again until the stripe is free. */
static int work_handler(ompi_osc_ucxx_module_t *module, int from, void *buf, size_t len,
                        bool deferred)
{
    ompi_osc_ucxx_lockq_t *q = module->lockq;
    int rc = OMPI_SUCCESS;

    if (NULL == q) return OMPI_SUCCESS;
    OSC_UCXX_LOCK(&q->lock);
    serve_locked(module, q);
    if (q->blocked) {
        rc = OMPI_ERR_WOULD_BLOCK;
    } else {
        q->retry = false;
    }
    OSC_UCXX_UNLOCK(&q->lock);
    return rc;
}

/* MPI_Win_free: nobody waits any more (every epoch is closed). */
void ompi_osc_ucxx_lockq_release(ompi_osc_ucxx_module_t *module)
{
    ompi_osc_ucxx_lockq_t *q = module->lockq;

    if (NULL == q) return;
    while (NULL != q->head) {
        lq_entry_t *e = q->head;
        q->head = e->next;
        while (NULL != e->follow) {
            lq_entry_t *f = e->follow;
            e->follow = f->next;
            free(f->msg);
            free(f->reply);
            free(f);
        }
        if (NULL == e->granted) {
            free(e->msg);
            free(e->reply);
            free(e);
        }
    }
    OBJ_DESTRUCT(&q->lock);
    free(q);
    module->lockq = NULL;
}

void ompi_osc_ucxx_lockq_am_init(void)
{
    ompi_osc_ucxx_am_define(OSC_UCXX_AM_LOCK, lock_handler, NULL,
                            OSC_UCXX_AM_SERVED | OSC_UCXX_AM_IN_ORDER);
    ompi_osc_ucxx_am_set_handler(OSC_UCXX_AM_LOCK_WORK, work_handler);
}
