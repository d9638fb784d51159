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
 * Longer epochs switch to issuing as soon as the lock is granted (Zhao
 * 2016, ScalaRMA chapter 4: delayed or eager by the operations and bytes
 * queued): the operation that does not fit (or cannot be carried: request
 * operations, derived layouts, user active messages), or a flush, sends the
 * request with what it carries and waits for the grant, which brings that
 * part's results; from then on operations issue as in any epoch, and
 * MPI_Win_unlock sends the release behind them on the same endpoint (a
 * ucp_worker_fence orders RMA before it; where the fence is a flush, where
 * other threads' workers issued some, or where user active messages must
 * complete first, a flush does) and waits for its one answer: the target
 * handles it after everything sent before it on that endpoint, so the
 * answer says all of it is done there.  Lock + operations + unlock: one
 * round trip short, two long.
 *
 * Under MPI_THREAD_MULTIPLE threads may share an epoch: the request goes
 * in MPI_Win_lock itself (one round trip) and operations issue at once.
 *
 * Errors: an operation's error that the origin can see (range, type, op)
 * is returned by its own call as in any epoch; one the target finds (a
 * dynamic window's range) comes in the answer: MPI_Win_unlock returns it
 * for the epoch it carried, the next flush or unlock for a request sent
 * mid-epoch (module->am_error, as accumulate messages' errors).  The lock
 * is released whatever happened.
 */

#include "ompi_config.h"

#include "osc_ucxx_lockq.h"
#include "osc_ucxx_uam.h"
#include "osc_ucxx_dynamic.h"

/* The epoch a lock request carries stays within these; past them the
 * request goes and operations issue once it is granted.  Carried, an
 * operation costs a copy of its values here and at the target; issued, the
 * lock request's round trip is waited for mid-epoch.  Within these a
 * request is one eager fragment of UCX's TCP transport (UCX_TCP_SEG_SIZE,
 * 8 KiB by default) and a queued request's copy at the target stays small;
 * large transfers go zero-copy when issued. */
#define OSC_UCXX_CARRY_OPS 64
#define OSC_UCXX_CARRY_BYTES 4096

struct ompi_osc_ucxx_lazy_t {
    ompi_osc_ucxx_lazy_t *next;    /* module->lazy_open (or the spare) */
    ompi_osc_ucxx_module_t *module;
    int target;
    int type;                      /* MPI_LOCK_SHARED / EXCLUSIVE */
    char *msg;                     /* the request being built: header, operations */
    size_t len, cap;
    uint32_t nops;
    size_t bytes;                  /* values and results carried */
    struct {
        char *dst;
        size_t len;
    } *res;                        /* where the carried operations' results go, in order */
    int nres, res_cap;
    size_t rlen;                   /* bytes of results the answer brings */
    volatile int32_t answered;
    int32_t status;                /* the answer's */
    uint64_t gen;                  /* ... and its detach generation (dynamic windows) */
    uint64_t syncs;                /* module->dyn_syncs when the request left */
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
    rec->nres = 0;
    rec->answered = 0;
    rec->status = OMPI_SUCCESS;
    return rec;
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
    free(rec->msg);
    free(rec->res);
    free(rec);
}

void ompi_osc_ucxx_lazy_release(ompi_osc_ucxx_module_t *module)
{
    ompi_osc_ucxx_lazy_t *rec = module->lazy_spare;
    if (NULL != rec) {
        free(rec->msg);
        free(rec->res);
        free(rec);
        module->lazy_spare = NULL;
    }
}

static void open_add(ompi_osc_ucxx_lazy_t *rec)
{
    rec->next = rec->module->lazy_open;
    rec->module->lazy_open = rec;
}

static void open_remove(ompi_osc_ucxx_lazy_t *rec)
{
    ompi_osc_ucxx_lazy_t **p = &rec->module->lazy_open;
    while (NULL != *p && *p != rec) p = &(*p)->next;
    if (NULL != *p) *p = rec->next;
    rec->next = NULL;
}

/* ------------------------------------------------------------------------- */
/* Building a request */

static bool room(ompi_osc_ucxx_lazy_t *rec, size_t vals, size_t results)
{
    return rec->nops < OSC_UCXX_CARRY_OPS && vals + results <= OSC_UCXX_CARRY_BYTES &&
           rec->bytes + vals + results <= OSC_UCXX_CARRY_BYTES;
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
    if (results > 0 && rec->nres == rec->res_cap) {
        int cap = rec->res_cap ? 2 * rec->res_cap : 8;
        void *grown = realloc(rec->res, cap * sizeof(*rec->res));
        if (NULL == grown) return NULL;
        rec->res = grown;
        rec->res_cap = cap;
    }
    at = rec->msg + rec->len;
    memcpy(at, op, sizeof(*op));
    at += sizeof(*op);
    if (vals < ompi_osc_ucxx_lq_pad(vals)) {
        memset(at + vals, 0, ompi_osc_ucxx_lq_pad(vals) - vals);
    }
    if (results > 0) {
        rec->res[rec->nres].dst = result;
        rec->res[rec->nres++].len = results;
        rec->rlen += ompi_osc_ucxx_lq_pad(results);
    }
    rec->len += need;
    rec->nops++;
    rec->bytes += vals + results;
    return at;
}

/* After the answer: nothing carried any more. */
static void carried_reset(ompi_osc_ucxx_lazy_t *rec)
{
    rec->len = 0;
    rec->nops = 0;
    rec->bytes = 0;
    rec->nres = 0;
    rec->rlen = 0;
}

/* ------------------------------------------------------------------------- */
/* Messages */

static uint32_t type_flag(int type)
{
    return MPI_LOCK_EXCLUSIVE == type ? OSC_UCXX_LQ_EXCL : 0;
}

/* Send what the record carries (maybe nothing) with `flags`, on `worker`'s
 * endpoint (the one this thread's operations took); the message buffer is
 * UCX's from now on. */
static int send_on(ompi_osc_ucxx_lazy_t *rec, ompi_osc_ucxx_worker_t *worker, uint32_t flags)
{
    ompi_osc_ucxx_module_t *module = rec->module;
    ompi_osc_ucxx_lq_hdr_t *hdr;
    char *msg = rec->msg;
    size_t len = rec->len ? rec->len : sizeof(*hdr);
    int rc;

    if (NULL == worker) return OMPI_ERR_OUT_OF_RESOURCE;
    if (NULL == msg && NULL == (msg = malloc(len))) return OMPI_ERR_OUT_OF_RESOURCE;
    rec->msg = NULL;
    rec->cap = 0;
    hdr = (ompi_osc_ucxx_lq_hdr_t *) msg;
    memset(hdr, 0, sizeof(*hdr));
    hdr->base.cid = module->cid;
    hdr->base.from = module->rank;
    hdr->token = (uint64_t) (uintptr_t) rec;
    hdr->flags = flags | type_flag(rec->type);
    hdr->nops = rec->nops;
    hdr->rlen = (uint32_t) rec->rlen;
    rec->answered = 0;
    rec->status = OMPI_SUCCESS;
    rec->syncs = __atomic_load_n(&module->dyn_syncs, __ATOMIC_ACQUIRE);
    opal_atomic_wmb();
    rc = ompi_osc_ucxx_am_send(module, worker, rec->target, OSC_UCXX_AM_LOCK, msg, sizeof(*hdr),
                               len);
    if (OMPI_SUCCESS != rc) rec->answered = 1;   /* (nothing to wait for) */
    return rc;
}

static int send_request(ompi_osc_ucxx_lazy_t *rec, uint32_t flags)
{
    return send_on(rec, ompi_osc_ucxx_worker_self(), flags);
}

/* Until the answer is in: its status. */
static int wait_answer(ompi_osc_ucxx_lazy_t *rec)
{
    while (!rec->answered) {
        opal_progress();
    }
    opal_atomic_rmb();
    return rec->status;
}

/* The answer (a UCX callback): results to their places, then the flag. */
static int reply_handler(ompi_osc_ucxx_module_t *module, int from, void *buf, size_t len,
                         bool deferred)
{
    const ompi_osc_ucxx_lq_hdr_t *hdr = (const ompi_osc_ucxx_lq_hdr_t *) buf;
    ompi_osc_ucxx_lazy_t *rec;
    const char *p;
    size_t left;

    if (len < sizeof(*hdr) || 0 == hdr->token) return OMPI_SUCCESS;
    rec = (ompi_osc_ucxx_lazy_t *) (uintptr_t) hdr->token;
    p = (const char *) (hdr + 1);
    left = len - sizeof(*hdr);
    for (int i = 0; i < rec->nres && ompi_osc_ucxx_lq_pad(rec->res[i].len) <= left; ++i) {
        memcpy(rec->res[i].dst, p, rec->res[i].len);
        p += ompi_osc_ucxx_lq_pad(rec->res[i].len);
        left -= ompi_osc_ucxx_lq_pad(rec->res[i].len);
    }
    rec->status = hdr->status;
    rec->gen = hdr->gen;
    opal_atomic_wmb();
    rec->answered = 1;
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

/* The request is answered and granted: operations issue from now on (on
 * a dynamic window without reading the target's detach generation: the
 * grant brought it). */
static void granted(ompi_osc_ucxx_lazy_t *rec)
{
    note_error(rec->module, rec->status);
    ompi_osc_ucxx_dyn_gen_seen(rec->module, ompi_osc_ucxx_worker_self(), rec->target, rec->gen,
                               rec->syncs);
    carried_reset(rec);
    open_remove(rec);
    ompi_osc_ucxx_tgt_clear(&rec->module->peers[rec->target], OSC_UCXX_TGT_LAZY);
}

/* Send the request with what it carries, wait for the grant. */
static int go(ompi_osc_ucxx_lazy_t *rec)
{
    int rc = send_request(rec, OSC_UCXX_LQ_LOCK);
    if (OMPI_SUCCESS != rc) return rc;
    (void) wait_answer(rec);
    granted(rec);
    return OMPI_SUCCESS;
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
    int rc;

    memset(&rec, 0, sizeof(rec));
    rec.module = module;
    rec.target = target;
    rec.type = type;
    rc = send_request(&rec, OSC_UCXX_LQ_LOCK);
    if (OMPI_SUCCESS != rc) return rc;
    return wait_answer(&rec);
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
        rc = send_request(rec, OSC_UCXX_LQ_LOCK);
        if (OMPI_SUCCESS == rc) rc = wait_answer(rec);
        if (OMPI_SUCCESS != rc) {
            record_free(rec);
            return rc;
        }
        carried_reset(rec);
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
    if (NULL == ompi_osc_ucxx_direct_state(module, target)) {
        return lock_by_message(module, target, type);
    }
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

/* The request goes, carrying what it has; the caller issues. */
static int issue(ompi_osc_ucxx_lazy_t *rec)
{
    int rc = go(rec);
    return OMPI_SUCCESS == rc ? OSC_UCXX_ISSUE : rc;
}

int ompi_osc_ucxx_lazy_put_get(ompi_osc_ucxx_target_t *t, bool is_put, void *origin_addr,
                               int origin_count, ompi_datatype_t *origin_dt, int target_count,
                               ompi_datatype_t *target_dt, ompi_osc_ucxx_request_t *req)
{
    ompi_osc_ucxx_lazy_t *rec = t->peer->lazy;
    size_t size = origin_dt->super.size * (size_t) origin_count;
    char *local = (char *) origin_addr + origin_dt->super.true_lb, *vals;
    ompi_osc_ucxx_lq_op_t op;

    if (NULL != req || t->view->memhandle || size > UINT32_MAX ||
        !contiguous(origin_dt, origin_count) || !contiguous(target_dt, target_count) ||
        !room(rec, is_put ? size : 0, is_put ? 0 : size)) {
        return issue(rec);
    }
    memset(&op, 0, sizeof(op));
    op.kind = is_put ? OSC_UCXX_LQ_PUT : OSC_UCXX_LQ_GET;
    op.nvals = is_put ? 1 : 0;
    op.len = (uint32_t) size;
    op.offset = t->remote + target_dt->super.true_lb -
                ompi_osc_ucxx_peer_base(t->module, t->rank);
    vals = append(rec, &op, is_put ? size : 0, is_put ? NULL : local, is_put ? 0 : size);
    if (NULL == vals) return issue(rec);
    if (is_put) memcpy(vals, local, size);
    return OMPI_SUCCESS;
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

    /* (single elements of acc_single_intrinsic handles take another kind
     * of atomic than the stripes the target would apply them under) */
    if (NULL != a->req || t->view->memhandle ||
        OSC_UCXX_SINGLE_STRIPES != t->view->single_kind ||
        a->gaps || size > UINT32_MAX || !contiguous(target_dt, target_count) ||
        (values && NULL == origin) || (a->fetch && NULL == result) ||
        !room(rec, nvals * size, a->fetch ? size : 0)) {
        return issue(rec);
    }
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
    return OMPI_SUCCESS;
}

int ompi_osc_ucxx_lazy_grant(ompi_osc_ucxx_module_t *module, int target)
{
    return go(module->peers[target].lazy);
}

/* ------------------------------------------------------------------------- */
/* Flushes */

int ompi_osc_ucxx_lazy_flush(ompi_osc_ucxx_module_t *module, int target)
{
    ompi_osc_ucxx_lazy_t *rec, *next;
    int rc = OMPI_SUCCESS;

    if (target >= 0) {
        rec = module->peers[target].lazy;
        if (!(module->peers[target].access & OSC_UCXX_TGT_LAZY) || 0 == rec->nops) {
            return OMPI_SUCCESS;   /* nothing carried: nothing to complete */
        }
        return go(rec);
    }
    /* every request at once, then every answer */
    for (rec = module->lazy_open; NULL != rec; rec = rec->next) {
        int r;
        if (0 == rec->nops) continue;
        r = send_request(rec, OSC_UCXX_LQ_LOCK);
        if (OMPI_SUCCESS != r) rc = r;
    }
    for (rec = module->lazy_open; NULL != rec; rec = next) {
        next = rec->next;
        if (0 == rec->nops) continue;
        (void) wait_answer(rec);
        granted(rec);
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

/* Release the lock on `target` (this process holds it by message): with
 * the epoch if it was never requested (nothing to do if it carries
 * nothing), else behind the operations issued; then this process's own
 * completion of them (gets' data, requests: the answer came after the
 * target did everything, so this waits for little). */
static int release(ompi_osc_ucxx_module_t *module, int target, int type)
{
    ompi_osc_ucxx_peer_t *peer = &module->peers[target];
    ompi_osc_ucxx_lazy_t *rec = peer->lazy;
    ompi_osc_ucxx_worker_t *worker = ompi_osc_ucxx_worker_self();
    int rc = OMPI_SUCCESS, r2;

    if (peer->access & OSC_UCXX_TGT_LAZY) {
        open_remove(rec);
        if (rec->nops > 0) {
            rc = send_on(rec, worker, OSC_UCXX_LQ_LOCK | OSC_UCXX_LQ_RELEASE);
            if (OMPI_SUCCESS == rc) rc = wait_answer(rec);
        }
    } else {
        rc = order_release(module, worker, target);
        r2 = send_on(rec, worker, OSC_UCXX_LQ_RELEASE);
        if (OMPI_SUCCESS == r2) (void) wait_answer(rec);
        r2 = OMPI_SUCCESS != r2 ? r2 : ompi_osc_ucxx_flush_links(module, target, NULL);
        if (OMPI_SUCCESS == rc) rc = r2;
    }
    peer->lazy = NULL;
    carried_reset(rec);
    record_free(rec);
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
        ompi_osc_ucxx_lazy_t *rec = peer->lazy;
        if (!(peer->access & OSC_UCXX_TGT_MSGLOCK)) continue;
        rec->answered = 1;   /* (unless a message goes) */
        rec->status = OMPI_SUCCESS;
        if (peer->access & OSC_UCXX_TGT_LAZY) {
            open_remove(rec);
            if (0 == rec->nops) continue;
            r = send_on(rec, worker, OSC_UCXX_LQ_LOCK | OSC_UCXX_LQ_RELEASE);
        } else {
            if (!ordered) {
                r = order_release(module, worker, -1);
                if (OMPI_SUCCESS != r) rc = r;
                ordered = true;
            }
            r = send_on(rec, worker, OSC_UCXX_LQ_RELEASE);
        }
        if (OMPI_SUCCESS != r) rc = r;
    }
    for (int i = 0; i < e->count; ++i) {
        ompi_osc_ucxx_peer_t *peer = &module->peers[e->targets[i]];
        ompi_osc_ucxx_lazy_t *rec = peer->lazy;
        if (!(peer->access & OSC_UCXX_TGT_MSGLOCK)) continue;
        r = wait_answer(rec);
        if (OMPI_SUCCESS != r && OMPI_SUCCESS == rc) rc = r;
        peer->lazy = NULL;
        carried_reset(rec);
        record_free(rec);
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
}
