/*
 * Copyright (c) 2026 The osc/ucxx authors. All rights reserved.
 * $COPYRIGHT$
 *
 * Lazy lock requests: the origin's side of target-managed locks
 * (module->lock_kind OSC_UCXX_LOCKS_TARGET; the target's side, its queue,
 * is osc_ucxx_lockq.c, which says why the target manages them).
 *
 * A target whose lock word this process maps (itself, a peer on the node)
 * is locked one-sidedly with a CPU atomic while the lock is free and
 * nobody waits; otherwise it joins the target's queue by message and waits
 * for the grant, and it releases with a CPU atomic (telling the target if
 * origins wait).
 *
 * A target whose word is not mapped here is locked by messages, in the
 * fewest round trips (Thakur, Gropp and Toonen 2005, section 4):
 *   - MPI_Win_lock (and lock_all's first access to a target) sends nothing:
 *     the target's access word says OSC_UCXX_TGT_MSGLOCK | OSC_UCXX_TGT_LAZY
 *     and this record starts a request;
 *   - operations on it are carried in the request (puts with their values,
 *     gets, accumulates, compare-and-swap), while it stays short;
 *   - MPI_Win_unlock sends the request with the release: the target takes
 *     the lock (queued if busy), applies the epoch, releases, and answers
 *     once with the results and a status.  An epoch with no operation
 *     sends nothing at all.
 * Longer epochs (Zhao 2016, ScalaRMA chapter 4; docs/synchronization.md,
 * "Long epochs"): full batches go ahead of the grant (OSC_UCXX_LQ_MORE;
 * at most OSC_UCXX_AHEAD bytes, none where the last request to that target
 * waited), the request with the first operation where the previous epoch
 * was long, and MPI_Win_unlock sends the last batch with the release: one
 * round trip however many batches.  A larger put (OSC_UCXX_CARRY_PUT)
 * is carried alone.  An operation that cannot be carried (larger, request
 * operations, derived layouts, user active messages), or a flush, sends
 * what is queued and waits for the grant and every answer; from then on
 * operations issue, and MPI_Win_unlock sends the release behind them on
 * the same endpoint (order_release) and waits for its one answer, which
 * says all of it is done there.
 * Lock + operations + unlock: one round trip for carried operations, two
 * where an operation issues, or where a long epoch's batches wait for the
 * grant.
 *
 * Under MPI_THREAD_MULTIPLE threads may share an epoch: the request goes
 * in MPI_Win_lock itself (one round trip) and operations issue at once.
 *
 * Locks held at once, on any windows, are taken in the order the program
 * opened them (grant_earlier; the lock order of osc_ucxx_epoch.h).
 *
 * Errors: an operation's error that the origin can see (range, type, op)
 * is returned by its own call as in any epoch; one the target finds (a
 * dynamic window's range) comes in an answer: MPI_Win_unlock returns it
 * for the batches it waits for, the next flush or unlock for those a
 * flush or an issued operation waited for (module->am_error, as
 * accumulate messages' errors).  The lock is released whatever happened.
 */

#include "ompi_config.h"

#include "osc_ucxx_lockq.h"
#include "osc_ucxx_uam.h"
#include "osc_ucxx_dynamic.h"

/* A batch (the request, or a MORE message) stays within these.  Carried,
 * an operation costs a copy of its values here and at the target; issued,
 * the lock request's round trip is waited for mid-epoch.  Within these a
 * batch is one or two of UCX's 8 KiB TCP fragments and a waiting batch's
 * copy at the target stays small; each batch is a message the target
 * handles and answers, so small operations take as few as that allows. */
#define OSC_UCXX_CARRY_OPS 240
#define OSC_UCXX_CARRY_BYTES 4096
/* A larger put is carried alone up to this size: one round trip plus the
 * bytes' time, for copies at both ends and room at the target meanwhile. */
#define OSC_UCXX_CARRY_PUT (64 * 1024)
/* Bytes of batches sent ahead of the grant (a waiting request holds them
 * at the target; past them a long epoch waits for the grant); none to a
 * target where the lock was taken (peer->lq_hint). */
#define OSC_UCXX_AHEAD (64 * 1024)

/* What the previous epoch to a target looked like (peer->lq_hint) */
#define OSC_UCXX_HINT_LONG 0x1     /* more than one batch, or an operation issued */
#define OSC_UCXX_HINT_WAITED 0x2   /* its request found the lock taken */

/* A message of an epoch that went: where its results go, and its answer. */
typedef struct lazy_batch {
    struct lazy_batch *next;
    struct {
        char *dst;
        size_t len;
    } *res;                        /* the results' places, in order */
    int nres;
    uint32_t flags;                /* what it asked (OSC_UCXX_LQ_*) */
    volatile int32_t answered;
    int32_t status;                /* the answer's */
    uint32_t aflags;               /* ... its flags */
    uint64_t gen;                  /* ... and its detach generation (dynamic windows) */
    uint64_t syncs;                /* module->dyn_syncs when it left */
} lazy_batch_t;

struct ompi_osc_ucxx_lazy_t {
    ompi_osc_ucxx_lazy_t *next;    /* module->lazy_open (or the spare) */
    ompi_osc_ucxx_order_t order;   /* an MPI_Win_lock's place in the lock order */
    ompi_osc_ucxx_module_t *module;
    int target;
    int type;                      /* MPI_LOCK_SHARED / EXCLUSIVE */
    char *msg;                     /* the batch being built: header, operations */
    size_t len, cap;
    uint32_t nops;
    size_t bytes;                  /* values and results carried */
    lazy_batch_t *res;             /* where its results go (res, nres), or NULL */
    int res_cap;
    size_t rlen;                   /* bytes of results the answer brings */
    bool requested;                /* the lock request went (batches follow it) */
    bool long_epoch;               /* a full batch went, or an operation issued */
    bool grant_in;                 /* ... and its answer is in */
    size_t ahead;                  /* bytes of batches that went after it before that */
    lazy_batch_t *sent, *sent_tail;   /* batches whose answers are not taken yet */
    int32_t err;                   /* the first error of the answers taken */
};

/* ------------------------------------------------------------------------- */
/* Records */

static ompi_osc_ucxx_lazy_t *record_new(ompi_osc_ucxx_module_t *module, int target, int type)
{
    ompi_osc_ucxx_lazy_t *rec = OSC_UCXX.enable_mpi_threads ? NULL : module->lazy_spare;

    if (NULL != rec) {
        module->lazy_spare = NULL;
    } else if (NULL == (rec = calloc(1, sizeof(*rec)))) {
        return NULL;
    }
    rec->next = NULL;
    rec->module = module;
    rec->target = target;
    rec->type = type;
    rec->len = rec->nops = rec->bytes = rec->rlen = 0;
    rec->requested = rec->grant_in = rec->long_epoch = false;
    if (NULL != rec->res) rec->res->nres = 0;
    rec->ahead = 0;
    rec->sent = rec->sent_tail = NULL;
    rec->err = OMPI_SUCCESS;   /* (rec->order: unlinked, by calloc or open_remove) */
    return rec;
}

static void record_destroy(ompi_osc_ucxx_lazy_t *rec)
{
    free(rec->msg);
    if (NULL != rec->res) free(rec->res->res);
    free(rec->res);
    free(rec);
}

/* Kept for the next epoch (one per window, where threads cannot race for
 * it); its buffers stay with it. */
static void record_free(ompi_osc_ucxx_lazy_t *rec)
{
    ompi_osc_ucxx_module_t *module = rec->module;
    if (!OSC_UCXX.enable_mpi_threads && NULL == module->lazy_spare) {
        module->lazy_spare = rec;
        return;
    }
    record_destroy(rec);
}

void ompi_osc_ucxx_lazy_release(ompi_osc_ucxx_module_t *module)
{
    if (NULL != module->lazy_spare) {
        record_destroy(module->lazy_spare);
        module->lazy_spare = NULL;
    }
}

static int order_take(ompi_osc_ucxx_order_t *node);

/* (a lock_all's targets have the epoch's place in the order) */
static void open_add(ompi_osc_ucxx_lazy_t *rec)
{
    rec->next = rec->module->lazy_open;
    rec->module->lazy_open = rec;
    if (OSC_UCXX_EPOCH_LOCK_ALL != rec->module->access->kind) {
        rec->order.take = order_take;
        rec->order.owner = rec;
        ompi_osc_ucxx_order_add(&rec->order);
    }
}

static void open_remove(ompi_osc_ucxx_lazy_t *rec)
{
    ompi_osc_ucxx_lazy_t **p = &rec->module->lazy_open;
    while (NULL != *p && *p != rec) p = &(*p)->next;
    if (NULL != *p) *p = rec->next;
    rec->next = NULL;
    ompi_osc_ucxx_order_remove(&rec->order);
}

/* ------------------------------------------------------------------------- */
/* Building a batch */

static bool room(ompi_osc_ucxx_lazy_t *rec, size_t vals, size_t results)
{
    return 0 == rec->nops ||   /* (it took fits_a_batch) */
           (rec->nops < OSC_UCXX_CARRY_OPS && rec->bytes + vals + results <= OSC_UCXX_CARRY_BYTES);
}

/* An operation that fits no batch issues; a larger put fills one alone,
 * but where requests wait (each would hold its put at the target). */
static bool fits_a_batch(ompi_osc_ucxx_lazy_t *rec, size_t vals, size_t results, bool put)
{
    return vals + results <= OSC_UCXX_CARRY_BYTES ||
           (put && vals <= OSC_UCXX_CARRY_PUT &&
            !(rec->module->peers[rec->target].lq_hint & OSC_UCXX_HINT_WAITED));
}

/* Room for one more result place in the batch being built. */
static bool res_room(ompi_osc_ucxx_lazy_t *rec)
{
    lazy_batch_t *b = rec->res;

    if (NULL == b && NULL == (b = rec->res = calloc(1, sizeof(*b)))) return false;
    if (b->nres == rec->res_cap) {
        int cap = rec->res_cap ? 2 * rec->res_cap : 8;
        void *grown = realloc(b->res, cap * sizeof(*b->res));
        if (NULL == grown) return false;
        b->res = grown;
        rec->res_cap = cap;
    }
    return true;
}

/* Append `op` with room for `vals` bytes of values (returned, to be filled)
 * and its results' place; NULL: no memory (nothing appended). */
static char *append(ompi_osc_ucxx_lazy_t *rec, const ompi_osc_ucxx_lq_op_t *op, size_t vals,
                    char *result, size_t results)
{
    size_t need = sizeof(*op) + ompi_osc_ucxx_lq_pad(vals);
    char *at;

    if (0 == rec->len) rec->len = sizeof(ompi_osc_ucxx_lq_hdr_t);
    if (rec->len + need > rec->cap) {
        size_t cap = 2 * (rec->len + need);
        char *grown = realloc(rec->msg, cap);
        if (NULL == grown) return NULL;
        rec->msg = grown;
        rec->cap = cap;
    }
    if (results > 0 && !res_room(rec)) return NULL;
    at = rec->msg + rec->len;
    memcpy(at, op, sizeof(*op));
    at += sizeof(*op);
    if (vals < ompi_osc_ucxx_lq_pad(vals)) {
        memset(at + vals, 0, ompi_osc_ucxx_lq_pad(vals) - vals);
    }
    if (results > 0) {
        rec->res->res[rec->res->nres].dst = result;
        rec->res->res[rec->res->nres++].len = results;
        rec->rlen += ompi_osc_ucxx_lq_pad(results);
    }
    rec->len += need;
    rec->nops++;
    rec->bytes += vals + results;
    return at;
}

/* ------------------------------------------------------------------------- */
/* Messages */

static uint32_t type_flag(int type)
{
    return MPI_LOCK_EXCLUSIVE == type ? OSC_UCXX_LQ_EXCL : 0;
}

/* Send the batch being built (maybe nothing) with `flags`, on `worker`'s
 * endpoint (the one this thread's operations took), to be answered into
 * a record of its own (*out; NULL: none, and no memory: sent nothing).
 * The message buffer is UCX's from now on, the batch empty. */
static int send_on(ompi_osc_ucxx_lazy_t *rec, ompi_osc_ucxx_worker_t *worker, uint32_t flags,
                   lazy_batch_t **out)
{
    ompi_osc_ucxx_module_t *module = rec->module;
    ompi_osc_ucxx_lq_hdr_t *hdr;
    lazy_batch_t *b = rec->res;
    char *msg = rec->msg;
    size_t len = rec->len ? rec->len : sizeof(*hdr);
    int rc;

    *out = NULL;
    if (NULL == worker) return OMPI_ERR_OUT_OF_RESOURCE;
    if (NULL == b && NULL == (b = calloc(1, sizeof(*b)))) return OMPI_ERR_OUT_OF_RESOURCE;
    rec->res = b;   /* (kept with the batch until it goes) */
    if (NULL == msg && NULL == (msg = malloc(len))) return OMPI_ERR_OUT_OF_RESOURCE;
    hdr = (ompi_osc_ucxx_lq_hdr_t *) msg;
    memset(hdr, 0, sizeof(*hdr));
    hdr->base.cid = module->cid;
    hdr->base.from = module->rank;
    hdr->token = (uint64_t) (uintptr_t) b;
    hdr->epoch = (uint64_t) (uintptr_t) rec;
    hdr->flags = flags | type_flag(rec->type);
    hdr->nops = rec->nops;
    hdr->rlen = (uint32_t) rec->rlen;
    b->next = NULL;
    b->flags = flags;
    b->answered = 0;
    b->status = OMPI_SUCCESS;
    b->syncs = __atomic_load_n(&module->dyn_syncs, __ATOMIC_ACQUIRE);
    rec->msg = NULL;
    rec->cap = 0;
    rec->res = NULL;
    rec->res_cap = 0;
    rec->len = rec->nops = rec->bytes = rec->rlen = 0;
    *out = b;
    opal_atomic_wmb();
    rc = ompi_osc_ucxx_am_send(module, worker, rec->target, OSC_UCXX_AM_LOCK, msg, sizeof(*hdr),
                               len);
    if (OMPI_SUCCESS != rc) {
        b->status = rc;
        b->answered = 1;   /* (nothing to wait for) */
    }
    return rc;
}

/* Until the answer is in: its status. */
static int wait_answer(lazy_batch_t *b)
{
    while (!b->answered) {
        opal_progress();
    }
    opal_atomic_rmb();
    return b->status;
}

static void batch_free(lazy_batch_t *b)
{
    free(b->res);
    free(b);
}

/* Send and wait for the answer, one message on its own (a lock request
 * without operations, a release after issued operations). */
static int send_wait(ompi_osc_ucxx_lazy_t *rec, ompi_osc_ucxx_worker_t *worker, uint32_t flags)
{
    lazy_batch_t *b;
    int rc = send_on(rec, worker, flags, &b);

    if (NULL != b) {
        int st = wait_answer(b);
        if (OMPI_SUCCESS == rc) rc = st;
        batch_free(b);
    }
    return rc;
}

/* The answer (a UCX callback): results to their places, then the flag. */
static int reply_handler(ompi_osc_ucxx_module_t *module, int from, void *buf, size_t len,
                         bool deferred)
{
    const ompi_osc_ucxx_lq_hdr_t *hdr = (const ompi_osc_ucxx_lq_hdr_t *) buf;
    lazy_batch_t *b;
    const char *p;
    size_t left;

    if (len < sizeof(*hdr) || 0 == hdr->token) return OMPI_SUCCESS;
    b = (lazy_batch_t *) (uintptr_t) hdr->token;
    p = (const char *) (hdr + 1);
    left = len - sizeof(*hdr);
    for (int i = 0; i < b->nres && ompi_osc_ucxx_lq_pad(b->res[i].len) <= left; ++i) {
        memcpy(b->res[i].dst, p, b->res[i].len);
        p += ompi_osc_ucxx_lq_pad(b->res[i].len);
        left -= ompi_osc_ucxx_lq_pad(b->res[i].len);
    }
    b->status = hdr->status;
    b->aflags = hdr->flags;
    b->gen = hdr->gen;
    opal_atomic_wmb();
    b->answered = 1;
    return OMPI_SUCCESS;
}

/* An error the target found in operations sent mid-epoch: for the next
 * flush or unlock, once (as accumulate messages' errors). */
static void note_error(ompi_osc_ucxx_module_t *module, int status)
{
    int32_t none = OMPI_SUCCESS;
    if (OMPI_SUCCESS != status) {
        (void) opal_atomic_compare_exchange_strong_32(&module->am_error, &none, status);
    }
}

static void set_hint(ompi_osc_ucxx_lazy_t *rec, uint8_t bit, bool on)
{
    ompi_osc_ucxx_peer_t *peer = &rec->module->peers[rec->target];
    peer->lq_hint = on ? (peer->lq_hint | bit) : (peer->lq_hint & ~bit);
}

/* Take the answers of the batches that went, oldest first: every one
 * (`all`), else those in.  The first error is the epoch's (rec->err); the
 * grant brings the target's detach generation (dynamic windows: no read
 * of it for the operations issued after it) and says whether the lock was
 * taken. */
static void take_answers(ompi_osc_ucxx_lazy_t *rec, bool all)
{
    lazy_batch_t *b;

    while (NULL != (b = rec->sent) && (all || b->answered)) {
        int st = wait_answer(b);
        if (OMPI_SUCCESS != st && OMPI_SUCCESS == rec->err) rec->err = st;
        if (b->flags & OSC_UCXX_LQ_LOCK) {
            if (!(b->flags & OSC_UCXX_LQ_RELEASE)) {
                ompi_osc_ucxx_dyn_gen_seen(rec->module, ompi_osc_ucxx_worker_self(),
                                           rec->target, b->gen, b->syncs);
            }
            set_hint(rec, OSC_UCXX_HINT_WAITED, b->aflags & OSC_UCXX_LQ_WAITED);
            rec->grant_in = true;
        }
        rec->sent = b->next;
        if (NULL == rec->sent) rec->sent_tail = NULL;
        batch_free(b);
    }
}

/* Send the batch being built with `flags`; its answer is taken later. */
static int send_tracked(ompi_osc_ucxx_lazy_t *rec, ompi_osc_ucxx_worker_t *worker,
                        uint32_t flags)
{
    lazy_batch_t *b;
    int rc = send_on(rec, worker, flags, &b);

    if (NULL == b) return rc;
    if (NULL == rec->sent_tail) rec->sent = b;
    else rec->sent_tail->next = b;
    rec->sent_tail = b;
    return rc;
}

/* A lock this process will hold while it waits for others (a request
 * without its release, a word taken by CPU atomic or queued for) first
 * takes the locks opened before `rec`'s, or before the one being taken on
 * `module` now (osc_ucxx_epoch.h, lock order): else two processes locking
 * in one order could each hold what the other waits for.  A request that
 * carries its release holds nothing while it waits. */
static int grant_earlier(ompi_osc_ucxx_module_t *module, ompi_osc_ucxx_lazy_t *rec)
{
    ompi_osc_ucxx_epoch_t *e = module->access;

    if (NULL == ompi_osc_ucxx_order_head) return OMPI_SUCCESS;
    if (NULL != rec && rec->order.linked) return ompi_osc_ucxx_order_before(&rec->order);
    if (OSC_UCXX_EPOCH_LOCK_ALL == e->kind) {
        return e->order.linked ? ompi_osc_ucxx_order_before(&e->order) : OMPI_SUCCESS;
    }
    return ompi_osc_ucxx_order_before(NULL);
}

/* The batch being built goes: the first with the lock request, the others
 * behind it; its answer is taken later.  Sent ahead of the grant, it waits
 * at the target: past the limit for this target, the grant first. */
static int send_batch(ompi_osc_ucxx_lazy_t *rec, uint32_t flags)
{
    ompi_osc_ucxx_peer_t *peer = &rec->module->peers[rec->target];
    int rc;

    if (!rec->requested && !(flags & OSC_UCXX_LQ_RELEASE) &&
        OMPI_SUCCESS != (rc = grant_earlier(rec->module, rec))) {
        return rc;
    }
    if (rec->requested && !rec->grant_in) {
        size_t limit = (peer->lq_hint & OSC_UCXX_HINT_WAITED) ? 0 : OSC_UCXX_AHEAD;
        if (rec->ahead + rec->len > limit && NULL != rec->sent) {
            (void) wait_answer(rec->sent);   /* (the request: the first not taken) */
        } else {
            rec->ahead += rec->len;
        }
    }
    take_answers(rec, false);
    rc = send_tracked(rec, ompi_osc_ucxx_worker_self(),
                      flags | (rec->requested ? OSC_UCXX_LQ_MORE : OSC_UCXX_LQ_LOCK));
    if (OMPI_SUCCESS == rc) rec->requested = true;
    return rc;
}

/* Whatever is queued goes, and every answer is in: the lock is this
 * process's and operations issue from now on (on a dynamic window without
 * reading the target's detach generation: the grant brought it). */
static int go(ompi_osc_ucxx_lazy_t *rec)
{
    int rc = OMPI_SUCCESS;

    if (rec->nops > 0 || !rec->requested) rc = send_batch(rec, 0);
    take_answers(rec, true);
    note_error(rec->module, rec->err);
    rec->err = OMPI_SUCCESS;
    open_remove(rec);
    ompi_osc_ucxx_tgt_clear(&rec->module->peers[rec->target], OSC_UCXX_TGT_LAZY);
    return rc;
}

/* A lock's turn in the lock order: the request goes and is granted; later
 * operations are still carried (applied at once: the lock is ours), so the
 * unlock still costs one round trip, as an eager lock's. */
static int grant(ompi_osc_ucxx_lazy_t *rec)
{
    int rc = OMPI_SUCCESS;

    if (rec->nops > 0 || !rec->requested) rc = send_batch(rec, 0);
    take_answers(rec, true);
    ompi_osc_ucxx_order_remove(&rec->order);
    return rc;
}

static int order_take(ompi_osc_ucxx_order_t *node)
{
    return grant((ompi_osc_ucxx_lazy_t *) node->owner);
}

/* A target of a lock_all epoch taken whole (osc_ucxx_epoch.c). */
static int grant_target(ompi_osc_ucxx_module_t *module, int target)
{
    ompi_osc_ucxx_peer_t *peer = &module->peers[target];
    if (!(peer->access & OSC_UCXX_TGT_LAZY) || peer->lazy->grant_in) return OMPI_SUCCESS;
    return grant(peer->lazy);
}

/* ------------------------------------------------------------------------- */
/* Locking */

/* Tell the target that origins it queued may go now (we released its
 * word by CPU atomic). */
static void kick(ompi_osc_ucxx_module_t *module, int target)
{
    ompi_osc_ucxx_lq_hdr_t *hdr;

    if (target == module->rank) {
        ompi_osc_ucxx_lockq_serve(module);
        return;
    }
    if (NULL == (hdr = calloc(1, sizeof(*hdr)))) return;   /* (the next release tells) */
    hdr->base.cid = module->cid;
    hdr->base.from = module->rank;
    hdr->flags = OSC_UCXX_LQ_KICK;
    (void) ompi_osc_ucxx_am_send(module, ompi_osc_ucxx_worker_self(), target, OSC_UCXX_AM_LOCK,
                                 hdr, sizeof(*hdr), sizeof(*hdr));
}

/* A peer whose word we map, whose lock is taken or has waiters: into its
 * queue, by message; released by CPU atomic like a lock taken at once. */
static int queue_mapped(ompi_osc_ucxx_module_t *module, int target, int type)
{
    ompi_osc_ucxx_lazy_t rec;

    memset(&rec, 0, sizeof(rec));
    rec.module = module;
    rec.target = target;
    rec.type = type;
    return send_wait(&rec, ompi_osc_ucxx_worker_self(), OSC_UCXX_LQ_LOCK);
}

/* A target whose word we do not map: lazily, unless threads may share the
 * epoch or operations reach its memory without the general paths (mapped
 * data without a mapped word: not seen, but then the lock first). */
static int lock_by_message(ompi_osc_ucxx_module_t *module, int target, int type)
{
    ompi_osc_ucxx_peer_t *peer = &module->peers[target];
    ompi_osc_ucxx_lazy_t *rec = record_new(module, target, type);
    int rc;

    if (NULL == rec) return OMPI_ERR_OUT_OF_RESOURCE;
    if (OSC_UCXX.enable_mpi_threads || NULL != ompi_osc_ucxx_direct(module, target)) {
        rc = grant_earlier(module, NULL);
        if (OMPI_SUCCESS == rc) rc = send_wait(rec, ompi_osc_ucxx_worker_self(), OSC_UCXX_LQ_LOCK);
        if (OMPI_SUCCESS != rc) {
            record_free(rec);
            return rc;
        }
        peer->lazy = rec;
        ompi_osc_ucxx_tgt_set(peer, OSC_UCXX_TGT_MSGLOCK);
        return OMPI_SUCCESS;
    }
    peer->lazy = rec;
    open_add(rec);
    ompi_osc_ucxx_tgt_set(peer, OSC_UCXX_TGT_MSGLOCK | OSC_UCXX_TGT_LAZY);
    return OMPI_SUCCESS;
}

/* The state layer's lock of a target-managed word (MPI_Win_lock, and
 * lock_all's first access to a target). */
static int managed_lock(ompi_osc_ucxx_module_t *module, int target, int type)
{
    int rc;

    if (NULL == ompi_osc_ucxx_direct_state(module, target)) {
        return lock_by_message(module, target, type);
    }
    if (OMPI_SUCCESS != (rc = grant_earlier(module, NULL))) return rc;
    if (ompi_osc_ucxx_state_tm_take(module, target, type, false)) {
        return OMPI_SUCCESS;
    }
    if (target == module->rank) {
        return ompi_osc_ucxx_lockq_wait_self(module, type);
    }
    return queue_mapped(module, target, type);
}

static int release(ompi_osc_ucxx_module_t *module, int target, int type);

/* ... and its release (MPI_Win_unlock of a mapped word; lock_all's end). */
static int managed_unlock(ompi_osc_ucxx_module_t *module, int target, int type)
{
    ompi_osc_ucxx_peer_t *peer = &module->peers[target];
    int rc;

    if (peer->access & OSC_UCXX_TGT_MSGLOCK) {
        rc = release(module, target, type);
        ompi_osc_ucxx_tgt_clear(peer, OSC_UCXX_TGT_MSGLOCK | OSC_UCXX_TGT_LAZY);
        return rc;
    }
    if (ompi_osc_ucxx_state_tm_release(module, target, type)) {
        kick(module, target);
    }
    return OMPI_SUCCESS;
}

/* ------------------------------------------------------------------------- */
/* Operations */

static bool contiguous(ompi_datatype_t *dt, int count)
{
    return ompi_datatype_is_contiguous_memory_layout(dt, count);
}

/* What is queued goes, the lock is granted; the caller issues. */
static int issue(ompi_osc_ucxx_lazy_t *rec)
{
    int rc;

    rec->long_epoch = true;
    rc = go(rec);
    return OMPI_SUCCESS == rc ? OSC_UCXX_ISSUE : rc;
}

/* Room for an operation in the batch being built: a full batch goes. */
static int make_room(ompi_osc_ucxx_lazy_t *rec, size_t vals, size_t results)
{
    if (room(rec, vals, results)) return OMPI_SUCCESS;
    rec->long_epoch = true;
    return send_batch(rec, 0);
}

/* An operation was queued: where the previous epoch to this target was
 * long, the request goes with the first one, and its grant comes back
 * while the rest is queued. */
static int queued(ompi_osc_ucxx_lazy_t *rec)
{
    if (!rec->requested && (rec->module->peers[rec->target].lq_hint & OSC_UCXX_HINT_LONG)) {
        return send_batch(rec, 0);
    }
    return OMPI_SUCCESS;
}

int ompi_osc_ucxx_lazy_put_get(ompi_osc_ucxx_target_t *t, bool is_put, void *origin_addr,
                               int origin_count, ompi_datatype_t *origin_dt, int target_count,
                               ompi_datatype_t *target_dt, ompi_osc_ucxx_request_t *req)
{
    ompi_osc_ucxx_lazy_t *rec = t->peer->lazy;
    size_t size = origin_dt->super.size * (size_t) origin_count;
    char *local = (char *) origin_addr + origin_dt->super.true_lb, *vals;
    ompi_osc_ucxx_lq_op_t op;
    int rc;

    if (NULL != req || t->view->memhandle || size > UINT32_MAX ||
        !contiguous(origin_dt, origin_count) || !contiguous(target_dt, target_count) ||
        !fits_a_batch(rec, is_put ? size : 0, is_put ? 0 : size, is_put)) {
        return issue(rec);
    }
    if (OMPI_SUCCESS != (rc = make_room(rec, is_put ? size : 0, is_put ? 0 : size))) return rc;
    memset(&op, 0, sizeof(op));
    op.kind = is_put ? OSC_UCXX_LQ_PUT : OSC_UCXX_LQ_GET;
    op.nvals = is_put ? 1 : 0;
    op.len = (uint32_t) size;
    op.offset = t->remote + target_dt->super.true_lb -
                ompi_osc_ucxx_peer_base(t->module, t->rank);
    vals = append(rec, &op, is_put ? size : 0, is_put ? NULL : local, is_put ? 0 : size);
    if (NULL == vals) return issue(rec);
    if (is_put) memcpy(vals, local, size);
    return queued(rec);
}

/* A contiguous side of `size` bytes: its first byte, else NULL. */
static char *flat(const void *addr, int count, ompi_datatype_t *dt, size_t size)
{
    if (NULL == dt || !contiguous(dt, count) || dt->super.size * (size_t) count != size) {
        return NULL;
    }
    return (char *) addr + dt->super.true_lb;
}

int ompi_osc_ucxx_lazy_acc(ompi_osc_ucxx_acc_t *a, const void *origin_addr, int origin_count,
                           ompi_datatype_t *origin_dt, const void *compare_addr,
                           void *result_addr, int result_count, ompi_datatype_t *result_dt,
                           int target_count, ompi_datatype_t *target_dt)
{
    ompi_osc_ucxx_target_t *t = a->t;
    ompi_osc_ucxx_lazy_t *rec = t->peer->lazy;
    size_t size = target_dt->super.size * (size_t) target_count;
    bool cas = NULL != compare_addr, values = cas || !ompi_osc_ucxx_is_no_op(a->op);
    char *origin = values ? flat(origin_addr, origin_count, origin_dt, size) : NULL;
    char *result = a->fetch ? flat(result_addr, result_count, result_dt, size) : NULL;
    size_t nvals = cas ? 2 : values ? 1 : 0;
    ompi_osc_ucxx_lq_op_t op;
    char *vals;
    int rc;

    /* (single elements of acc_single_intrinsic handles take another kind
     * of atomic than the stripes the target would apply them under) */
    if (NULL != a->req || t->view->memhandle ||
        OSC_UCXX_SINGLE_STRIPES != t->view->single_kind ||
        a->gaps || size > UINT32_MAX || !contiguous(target_dt, target_count) ||
        (values && NULL == origin) || (a->fetch && NULL == result) ||
        !fits_a_batch(rec, nvals * size, a->fetch ? size : 0, false)) {
        return issue(rec);
    }
    if (OMPI_SUCCESS != (rc = make_room(rec, nvals * size, a->fetch ? size : 0))) return rc;
    memset(&op, 0, sizeof(op));
    op.kind = cas ? OSC_UCXX_LQ_CAS : a->fetch ? OSC_UCXX_LQ_GACC : OSC_UCXX_LQ_ACC;
    op.nvals = (uint8_t) nvals;
    op.dt = a->elem->d_f_to_c_index;
    op.op = cas ? -1 : a->op->o_f_to_c_index;
    op.len = (uint32_t) size;
    op.offset = t->remote + target_dt->super.true_lb -
                ompi_osc_ucxx_peer_base(t->module, t->rank);
    vals = append(rec, &op, nvals * size, result, a->fetch ? size : 0);
    if (NULL == vals) return issue(rec);
    if (values) memcpy(vals, origin, size);
    if (cas) memcpy(vals + size, compare_addr, size);
    return queued(rec);
}

int ompi_osc_ucxx_lazy_grant(ompi_osc_ucxx_module_t *module, int target)
{
    int rc = issue(module->peers[target].lazy);
    return OSC_UCXX_ISSUE == rc ? OMPI_SUCCESS : rc;
}

/* ------------------------------------------------------------------------- */
/* Flushes */

int ompi_osc_ucxx_lazy_flush(ompi_osc_ucxx_module_t *module, int target)
{
    ompi_osc_ucxx_lazy_t *rec, *next;
    int rc = OMPI_SUCCESS;

    if (target >= 0) {
        rec = module->peers[target].lazy;
        if (!(module->peers[target].access & OSC_UCXX_TGT_LAZY) ||
            (0 == rec->nops && !rec->requested)) {
            return OMPI_SUCCESS;   /* nothing carried: nothing to complete */
        }
        return go(rec);
    }
    /* every batch at once, then every answer */
    for (rec = module->lazy_open; NULL != rec; rec = rec->next) {
        int r;
        if (0 == rec->nops) continue;
        r = send_batch(rec, 0);
        if (OMPI_SUCCESS != r) rc = r;
    }
    for (rec = module->lazy_open; NULL != rec; rec = next) {
        next = rec->next;
        if (rec->requested) (void) go(rec);
    }
    return rc;
}

/* ------------------------------------------------------------------------- */
/* Releases */

/* Everything this process issued to `target` (-1: every target) lands
 * before a release sent now on `worker`'s endpoint.  On one endpoint UCX
 * keeps messages in order, and ucp_worker_fence orders RMA before them;
 * a flush instead where the fence is one anyway (strong), where other
 * threads' workers may have issued some, or where user active messages
 * must be complete before their grants go back. */
static int order_release(ompi_osc_ucxx_module_t *module, ompi_osc_ucxx_worker_t *worker,
                         int target)
{
    ompi_osc_ucxx_ltab_t *tab = module->ltab;
    ompi_osc_ucxx_link_t *link;

    if (OSC_UCXX.enable_mpi_threads || OSC_UCXX.order_by_flush || NULL != module->uam) {
        int rc = ompi_osc_ucxx_flush_links(module, target, NULL);
        ompi_osc_ucxx_uam_sync(module, target, true);
        return rc;
    }
    if (NULL == worker || worker->index >= tab->cap || NULL == tab->rows[worker->index]) {
        return OMPI_SUCCESS;   /* nothing issued on this worker */
    }
    /* (every target: the row's count) */
    link = target < 0 ? &tab->rows[worker->index]->sum
                      : ompi_osc_ucxx_row_link(tab->rows[worker->index], target);
    if (NULL != link && link->issued != link->flushed) {
        ucp_worker_fence(worker->ucp);
    }
    return OMPI_SUCCESS;
}

/* The release of the lock on `target` (this process holds it by message)
 * goes: with the last batch of a carried epoch (nothing if nothing was
 * carried), else behind the operations issued (the caller ordered them,
 * order_release).  The answers are taken by release_done. */
static int release_send(ompi_osc_ucxx_lazy_t *rec, ompi_osc_ucxx_worker_t *worker)
{
    ompi_osc_ucxx_peer_t *peer = &rec->module->peers[rec->target];

    if (!(peer->access & OSC_UCXX_TGT_LAZY)) {
        return send_tracked(rec, worker, OSC_UCXX_LQ_RELEASE);
    }
    open_remove(rec);
    if (0 == rec->nops && !rec->requested) return OMPI_SUCCESS;
    return send_batch(rec, OSC_UCXX_LQ_RELEASE);
}

/* Every answer of the epoch is in: its first error; the record goes. */
static int release_done(ompi_osc_ucxx_lazy_t *rec)
{
    ompi_osc_ucxx_peer_t *peer = &rec->module->peers[rec->target];
    int rc;

    take_answers(rec, true);
    set_hint(rec, OSC_UCXX_HINT_LONG, rec->long_epoch);
    rc = rec->err;
    peer->lazy = NULL;
    record_free(rec);
    return rc;
}

/* Release the lock on `target`; after issued operations, also their completion here
 * (gets' data, requests), flushed while the release travels (over TCP a round trip). */
static int release(ompi_osc_ucxx_module_t *module, int target, int type)
{
    ompi_osc_ucxx_peer_t *peer = &module->peers[target];
    ompi_osc_ucxx_lazy_t *rec = peer->lazy;
    ompi_osc_ucxx_worker_t *worker = ompi_osc_ucxx_worker_self();
    bool issued = !(peer->access & OSC_UCXX_TGT_LAZY);
    int rc = OMPI_SUCCESS, r2;

    if (issued) rc = order_release(module, worker, target);
    r2 = release_send(rec, worker);
    if (OMPI_SUCCESS == rc) rc = r2;
    if (issued) {
        r2 = ompi_osc_ucxx_flush_links(module, target, NULL);
        if (OMPI_SUCCESS == rc) rc = r2;
    }
    r2 = release_done(rec);
    if (OMPI_SUCCESS == rc) rc = r2;
    return rc;
}

int ompi_osc_ucxx_lazy_unlock(ompi_osc_ucxx_module_t *module, int target)
{
    ompi_osc_ucxx_peer_t *peer = &module->peers[target];
    return release(module, target,
                   (peer->access & OSC_UCXX_TGT_EXCL) ? MPI_LOCK_EXCLUSIVE : MPI_LOCK_SHARED);
}

/* The lock_all epoch's targets locked by messages: every release goes,
 * then every answer is awaited; they leave the epoch's list of held
 * targets (epoch_end releases the others). */
int ompi_osc_ucxx_lazy_unlock_all(ompi_osc_ucxx_module_t *module)
{
    ompi_osc_ucxx_epoch_t *e = module->access;
    ompi_osc_ucxx_worker_t *worker = ompi_osc_ucxx_worker_self();
    int rc = OMPI_SUCCESS, r;
    bool ordered = false;

    for (int i = 0; i < e->count; ++i) {
        ompi_osc_ucxx_peer_t *peer = &module->peers[e->targets[i]];
        if (!(peer->access & OSC_UCXX_TGT_MSGLOCK)) continue;
        if (!(peer->access & OSC_UCXX_TGT_LAZY) && !ordered) {
            r = order_release(module, worker, -1);
            if (OMPI_SUCCESS != r) rc = r;
            ordered = true;
        }
        r = release_send(peer->lazy, worker);
        if (OMPI_SUCCESS != r) rc = r;
    }
    for (int i = 0; i < e->count; ++i) {
        ompi_osc_ucxx_peer_t *peer = &module->peers[e->targets[i]];
        if (!(peer->access & OSC_UCXX_TGT_MSGLOCK)) continue;
        r = release_done(peer->lazy);
        if (OMPI_SUCCESS != r && OMPI_SUCCESS == rc) rc = r;
        ompi_osc_ucxx_tgt_clear(peer, OSC_UCXX_TGT_MSGLOCK | OSC_UCXX_TGT_LAZY |
                                          OSC_UCXX_TGT_HELD);
    }
    return rc;
}

/* ------------------------------------------------------------------------- */

void ompi_osc_ucxx_lazy_init(void)
{
    ompi_osc_ucxx_am_set_handler(OSC_UCXX_AM_LOCK_REPLY, reply_handler);
    ompi_osc_ucxx_state_managed(managed_lock, managed_unlock);
    ompi_osc_ucxx_order_granter(grant_target);
}
