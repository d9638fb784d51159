/*
 * Copyright (c) 2026 The osc/ucxx authors. All rights reserved.
 * $COPYRIGHT$
 *
 * Accumulates applied by the origin to a target's user memory that it
 * reaches by cross-memory attach (osc_ucxx_cma.c): the target's memory is
 * not mapped here, but its state segment is, so the origin takes the
 * target's stripes (osc_ucxx_state.c) with CPU atomics, as every other
 * accumulate on that memory does (origins that map it, the target applying
 * messages, the target on its own memory), reads the target bytes into a
 * buffer here, applies the operation to the buffer and writes it back, then
 * releases the stripes.  Element-wise atomicity so holds without the
 * target's CPU.  No lock-free atomic may touch such memory meanwhile: peers
 * do not map it, so a window whose ranks share a node agrees on the
 * stripes for acc_single_intrinsic singles too (single_kind,
 * osc_ucxx_policy.c).
 *
 * The target's layout is walked as runs of elements (osc_ucxx_acc.h) at
 * the target's addresses; a chunk of runs (at most OSC_UCXX_CMA_PIECES of
 * them, at most osc_ucxx_acc_hold bytes of target span, at most the buffer)
 * is one exclusion, one process_vm_readv and one process_vm_writev (none
 * for a REPLACE that fetches nothing, no write for NO_OP).  Element types
 * with gaps (pair types) are left to the target: their padding is not the
 * operation's to write back.
 */

#include "ompi_config.h"

#include "osc_ucxx_acc.h"
#include "osc_ucxx_cma.h"

#define OSC_UCXX_CMA_PIECES 64     /* target runs per chunk */
#define OSC_UCXX_CMA_BUFFER 4096   /* bytes of buffer on the stack */

typedef struct {
    ompi_osc_ucxx_acc_t *a;
    int32_t pid;
    ompi_osc_ucxx_state_t *state;  /* the target's, mapped here */
    unsigned shift;
    uint64_t sbase;                /* stripes count from here (a dynamic window's: 0) */
    char *buf;
    size_t cap;
    struct iovec local[OSC_UCXX_CMA_PIECES], remote[OSC_UCXX_CMA_PIECES];
    size_t n, used;                /* pieces and buffer bytes of this chunk */
    uint64_t lo, hi;               /* its target span */
} chunk_t;

/* The next chunk of target runs (false: none left). */
static bool chunk_gather(chunk_t *c, ompi_osc_ucxx_runs_t *rt)
{
    size_t ext = c->a->ext, hold = OSC_UCXX.acc_hold;
    char *tp;
    size_t k;

    c->n = c->used = 0;
    while (c->n < OSC_UCXX_CMA_PIECES && 0 != (k = ompi_osc_ucxx_runs_peek(rt, &tp))) {
        uint64_t at = (uint64_t) (uintptr_t) tp;
        size_t room = (c->cap - c->used) / ext;
        if (0 == c->n) {
            c->lo = c->hi = at;
        } else if (at < c->lo || at + ext > c->lo + hold) {
            break;   /* (outside this chunk's span: the next one's) */
        }
        if (room < k) k = room;
        if (0 == c->n && hold / ext < k) k = hold / ext > 0 ? hold / ext : 1;
        if (c->n > 0 && (c->lo + hold - at) / ext < k) k = (c->lo + hold - at) / ext;
        if (0 == k) break;
        c->local[c->n] = (struct iovec){c->buf + c->used, k * ext};
        c->remote[c->n] = (struct iovec){tp, k * ext};
        c->used += k * ext;
        if (at + k * ext > c->hi) c->hi = at + k * ext;
        c->n++;
        ompi_osc_ucxx_runs_skip(rt, k);
    }
    return c->n > 0;
}

/* Read (write) the chunk's target bytes (copies of the piece lists: the
 * copy advances them). */
static int chunk_copy(chunk_t *c, bool write)
{
    struct iovec l[OSC_UCXX_CMA_PIECES], r[OSC_UCXX_CMA_PIECES];
    memcpy(l, c->local, c->n * sizeof(l[0]));
    memcpy(r, c->remote, c->n * sizeof(r[0]));
    return ompi_osc_ucxx_cma_copyv(c->pid, write, l, r, c->n);
}

/* The operation on the chunk's buffer: origin values and old values laid
 * out by their own runs. */
static void chunk_apply(chunk_t *c, ompi_osc_ucxx_runs_t *ro, ompi_osc_ucxx_runs_t *rr,
                        const void *compare)
{
    ompi_osc_ucxx_acc_t *a = c->a;
    size_t ext = a->ext;

    for (size_t off = 0; off < c->used;) {
        char *op = NULL, *rp = NULL;
        size_t k = (c->used - off) / ext;
        if (NULL != ro) k = ompi_osc_ucxx_min(k, ompi_osc_ucxx_runs_peek(ro, &op));
        if (NULL != rr) k = ompi_osc_ucxx_min(k, ompi_osc_ucxx_runs_peek(rr, &rp));
        if (0 == k) break;
        k = ompi_osc_ucxx_min(k, (size_t) INT_MAX);
        if (NULL != compare) {   /* compare-and-swap: one element */
            ompi_osc_ucxx_acc_copy(a, rp, c->buf + off, 1);
            if (0 == memcmp(c->buf + off, compare, a->esize)) {
                ompi_osc_ucxx_acc_copy(a, c->buf + off, op, 1);
            }
            return;
        }
        ompi_osc_ucxx_acc_run(a, c->buf + off, op, rp, k);
        off += k * ext;
        if (NULL != ro) ompi_osc_ucxx_runs_skip(ro, k);
        if (NULL != rr) ompi_osc_ucxx_runs_skip(rr, k);
    }
}

/* One chunk under the target's stripes. */
static int chunk_rmw(chunk_t *c, ompi_osc_ucxx_runs_t *ro, ompi_osc_ucxx_runs_t *rr,
                     const void *compare)
{
    ompi_osc_ucxx_acc_t *a = c->a;
    bool read = a->fetch || !ompi_osc_ucxx_is_replace(a->op) || NULL != compare;
    bool write = !ompi_osc_ucxx_is_no_op(a->op);
    uint32_t mask = ompi_osc_ucxx_stripe_mask(c->shift, c->lo - c->sbase, c->hi - c->sbase);
    int rc = OMPI_SUCCESS;

    ompi_osc_ucxx_stripes_lock(c->state, mask);
    if (read) rc = chunk_copy(c, false);
    if (OMPI_SUCCESS == rc) {
        chunk_apply(c, ro, rr, compare);
        if (write) rc = chunk_copy(c, true);
    }
    ompi_osc_ucxx_stripes_unlock(c->state, mask);
    return rc;
}

/* One element of a predefined type on every side (fetch_and_op,
 * compare_and_swap, single accumulates): no layout walk, one copy each way
 * of its bytes. */
static int single(chunk_t *c, uint64_t remote, const void *origin, const void *compare,
                  void *result)
{
    ompi_osc_ucxx_acc_t *a = c->a;
    bool read = a->fetch || !ompi_osc_ucxx_is_replace(a->op) || NULL != compare;
    bool write = !ompi_osc_ucxx_is_no_op(a->op);
    uint32_t mask = ompi_osc_ucxx_stripe_mask(c->shift, remote - c->sbase,
                                              remote - c->sbase + a->width);
    int rc = OMPI_SUCCESS;

    ompi_osc_ucxx_stripes_lock(c->state, mask);
    if (read) rc = ompi_osc_ucxx_cma_copy(c->pid, false, c->buf, remote, a->ext);
    if (OMPI_SUCCESS == rc) {
        if (NULL != compare) {
            ompi_osc_ucxx_acc_copy(a, result, c->buf, 1);
            write = 0 == memcmp(c->buf, compare, a->esize);
            if (write) ompi_osc_ucxx_acc_copy(a, c->buf, origin, 1);
        } else {
            ompi_osc_ucxx_acc_run(a, c->buf, origin, result, 1);
        }
        if (write) rc = ompi_osc_ucxx_cma_copy(c->pid, true, c->buf, remote, a->ext);
    }
    ompi_osc_ucxx_stripes_unlock(c->state, mask);
    return rc;
}

int ompi_osc_ucxx_acc_cma(ompi_osc_ucxx_acc_t *a, void *origin_addr, int origin_count,
                          ompi_datatype_t *origin_dt, const void *compare_addr,
                          void *result_addr, int result_count, ompi_datatype_t *result_dt,
                          int target_count, ompi_datatype_t *target_dt)
{
    ompi_osc_ucxx_target_t *t = a->t;
    bool have_origin = !ompi_osc_ucxx_is_no_op(a->op) && NULL != origin_dt;
    char stack[OSC_UCXX_CMA_BUFFER];
    ompi_osc_ucxx_runs_t rt, ro, rr;
    size_t bytes = (size_t) target_count * target_dt->super.size;
    bool done_some = false;
    chunk_t c;
    int rc = OMPI_SUCCESS;

    c.state = ompi_osc_ucxx_direct_state(t->module, t->rank);
    if (NULL == c.state || a->gaps || 0 == t->path.cma) {
        return OMPI_ERR_NOT_AVAILABLE;   /* (the target applies it) */
    }
    c.a = a;
    c.pid = t->path.cma;
    c.shift = ompi_osc_ucxx_peer_acc_shift(t->module, t->rank);
    c.sbase = MPI_WIN_FLAVOR_DYNAMIC == t->module->flavor
                  ? 0 : ompi_osc_ucxx_peer_base(t->module, t->rank);
    c.buf = stack;
    c.cap = sizeof(stack);
    if (bytes > c.cap) {   /* a buffer for one span, or for all of it */
        size_t want = ompi_osc_ucxx_min(bytes, ompi_osc_ucxx_min(OSC_UCXX.acc_hold, 1 << 20));
        char *heap = want > c.cap ? malloc(want) : NULL;
        if (NULL != heap) {
            c.buf = heap;
            c.cap = want;
        }
    }
    if (c.cap < a->ext) return OMPI_ERR_NOT_AVAILABLE;
    if (1 == target_count && ompi_datatype_is_predefined(target_dt) &&
        (!have_origin || (1 == origin_count && ompi_datatype_is_predefined(origin_dt))) &&
        (!a->fetch || (1 == result_count && ompi_datatype_is_predefined(result_dt)))) {
        return single(&c, t->remote, have_origin ? origin_addr : NULL, compare_addr,
                      a->fetch ? result_addr : NULL);
    }
    ompi_osc_ucxx_runs_init(&rt, a, (void *) (uintptr_t) t->remote, target_count, target_dt);
    if (have_origin) ompi_osc_ucxx_runs_init(&ro, a, origin_addr, origin_count, origin_dt);
    if (a->fetch) ompi_osc_ucxx_runs_init(&rr, a, result_addr, result_count, result_dt);
    while (OMPI_SUCCESS == rc && chunk_gather(&c, &rt)) {
        rc = chunk_rmw(&c, have_origin ? &ro : NULL, a->fetch ? &rr : NULL, compare_addr);
        if (OMPI_ERR_NOT_AVAILABLE == rc && done_some) rc = OMPI_ERROR;  /* (half applied) */
        done_some = true;
    }
    ompi_osc_ucxx_runs_fini(&rt);
    if (have_origin) ompi_osc_ucxx_runs_fini(&ro);
    if (a->fetch) ompi_osc_ucxx_runs_fini(&rr);
    if (c.buf != stack) free(c.buf);
    return rc;
}
