/*
 * Copyright (c) 2026 The osc/ucxx authors. All rights reserved.
 * $COPYRIGHT$
 *
 * Accumulate, get_accumulate, fetch_and_op, compare_and_swap and their
 * request-based forms.
 *
 * Element-wise atomicity is decided by the element type and the element's
 * own address alone, never by the rest of the operation, so every origin and
 * every path agrees on how an element is protected:
 *   - 4- and 8-byte elements without gaps, at an address aligned to their
 *     size, are changed with one atomic read-modify-write each: a CPU atomic
 *     where the target memory is mapped into this process, else a UCX atomic
 *     (ADD, AND, OR, XOR, SWAP on integers; a compare-and-swap loop for every
 *     other op and for floating point).  No lock anywhere.
 *   - every other element (1- and 2-byte types, 16-byte types, pair types
 *     with gaps, misaligned elements) is changed under the target's stripe
 *     locks (osc_ucxx_state.c), by a process that maps the target memory:
 *     the origin itself, or the target applying a message from an origin
 *     that does not map it.
 * Where the target is not mapped, multi-element accumulates and locked
 * elements go to the target as active messages; it applies them with the
 * same rules and acknowledges each (with an error where it refuses one, so
 * the origin's flush reports it).
 * Ordering (accumulate_ordering other than "none"): UCX operations of one
 * accumulate are fenced (ucp_worker_fence) after the previous one's, and
 * messages apply in the order they were sent (osc_ucxx_am.c).
 */

#include "ompi_config.h"

#include "ompi/errhandler/errcode-internal.h"
#include "ompi/op/op.h"

#include "osc_ucxx_op.h"
#include "osc_ucxx_request.h"
#include "osc_ucxx_am.h"
#include "osc_ucxx_dynamic.h"
#include "osc_ucxx_acc_fast.h"
#include "osc_ucxx_dt.h"
#include "osc_ucxx.h"

/* One accumulate-family operation, as the helpers below see it. */
typedef struct {
    ompi_osc_ucxx_target_t *t;       /* module, worker, rank, path */
    ompi_op_t *op;
    ompi_datatype_t *elem;           /* the predefined element type */
    size_t width;                    /* bytes an element's value occupies (true extent) */
    bool hw;                         /* the type takes one atomic per aligned element */
    bool fetch;                      /* get_accumulate family: old values wanted */
    ompi_osc_ucxx_request_t *req;
} acc_t;

static bool is_replace(ompi_op_t *op) { return op == &ompi_mpi_op_replace.op; }
static bool is_no_op(ompi_op_t *op) { return op == &ompi_mpi_op_no_op.op; }

/* The predefined type a (possibly derived) datatype is built from. */
static ompi_datatype_t *element_type(ompi_datatype_t *dt)
{
    if (ompi_datatype_is_predefined(dt)) {
        return dt;
    }
    return ompi_datatype_get_single_predefined_type_from_args(dt);
}

static bool op_defined_on(ompi_op_t *op, ompi_datatype_t *elem)
{
    if (is_replace(op) || is_no_op(op)) {
        return true;
    }
    if (!ompi_op_is_intrinsic(op) || -1 == ompi_op_ddt_map[elem->id]) {
        return false;
    }
    return NULL != op->o_func.intrinsic.fns[ompi_op_ddt_map[elem->id]];
}

static bool is_integer(ompi_datatype_t *elem)
{
    return OMPI_DATATYPE_FLAG_DATA_INT == (elem->super.flags & OMPI_DATATYPE_FLAG_DATA_TYPE);
}

/* The UCX atomic that is this op on this element, if there is one.
 * Fetching AND/OR/XOR are left to the compare-and-swap loop: UCX 1.13's
 * shared-memory transports were seen to return the old value without
 * changing the target (the posted forms and TCP's emulation are right). */
static bool ucx_native(ompi_op_t *op, ompi_datatype_t *elem, bool fetch, ucp_atomic_op_t *uop)
{
    if (is_replace(op)) { *uop = UCP_ATOMIC_OP_SWAP; return true; }
    if (is_no_op(op)) { *uop = UCP_ATOMIC_OP_ADD; return true; }   /* add 0 */
    if (!is_integer(elem)) return false;
    switch (op->op_type) {
    case OMPI_OP_SUM:  *uop = UCP_ATOMIC_OP_ADD; return true;
    case OMPI_OP_BAND: *uop = UCP_ATOMIC_OP_AND; return !fetch;
    case OMPI_OP_BOR:  *uop = UCP_ATOMIC_OP_OR;  return !fetch;
    case OMPI_OP_BXOR: *uop = UCP_ATOMIC_OP_XOR; return !fetch;
    default: return false;
    }
}

/* new = origin (op) old, for one element. */
static void combine(acc_t *a, const void *origin, const void *old, void *out)
{
    if (is_replace(a->op)) {
        memcpy(out, origin, a->width);
    } else if (is_no_op(a->op)) {
        memcpy(out, old, a->width);
    } else {
        memcpy(out, old, a->width);
        ompi_op_reduce(a->op, (void *) origin, out, 1, a->elem);
    }
}

/* ------------------------------------------------------------------------- */
/* Hardware path: one atomic per element */

static void cpu_element(acc_t *a, char *tgt, const char *origin, char *result)
{
    uint64_t old = 0, val = 0, nv = 0;
    size_t w = a->width;

    if (is_no_op(a->op)) {
        if (8 == w) old = __atomic_load_n((uint64_t *) tgt, __ATOMIC_ACQUIRE);
        else old = __atomic_load_n((uint32_t *) tgt, __ATOMIC_ACQUIRE);
    } else if (is_replace(a->op)) {
        memcpy(&val, origin, w);
        if (8 == w) old = __atomic_exchange_n((uint64_t *) tgt, val, __ATOMIC_ACQ_REL);
        else old = __atomic_exchange_n((uint32_t *) tgt, (uint32_t) val, __ATOMIC_ACQ_REL);
    } else {
        /* compare-and-swap loop: correct for every op and type of this width */
        if (8 == w) old = __atomic_load_n((uint64_t *) tgt, __ATOMIC_ACQUIRE);
        else old = __atomic_load_n((uint32_t *) tgt, __ATOMIC_ACQUIRE);
        for (;;) {
            combine(a, origin, &old, &nv);
            if (8 == w) {
                if (__atomic_compare_exchange_n((uint64_t *) tgt, &old, nv, false,
                                                __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE)) break;
            } else {
                uint32_t o32 = (uint32_t) old;
                if (__atomic_compare_exchange_n((uint32_t *) tgt, &o32, (uint32_t) nv, false,
                                                __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE)) break;
                old = o32;
            }
        }
    }
    if (NULL != result) memcpy(result, &old, w);
}

static int ucx_atomic(acc_t *a, ucp_atomic_op_t uop, const void *operand, uint64_t remote,
                      void *reply, bool wait)
{
    ompi_osc_ucxx_target_t *t = a->t;
    ucp_request_param_t param;
    ucs_status_ptr_t sp;

    param.op_attr_mask = UCP_OP_ATTR_FIELD_DATATYPE;
    param.datatype = ucp_dt_make_contig(a->width);
    if (NULL != reply) {
        param.op_attr_mask |= UCP_OP_ATTR_FIELD_REPLY_BUFFER;
        param.reply_buffer = reply;
    }
    if (!wait && NULL != a->req) {
        param.op_attr_mask |= UCP_OP_ATTR_FIELD_CALLBACK | UCP_OP_ATTR_FIELD_USER_DATA;
        param.cb.send = ompi_osc_ucxx_request_ucx_cb;
        param.user_data = a->req;
        ompi_osc_ucxx_request_more(a->req);
    }
    sp = ucp_atomic_op_nbx(t->path.link->ep, uop, operand, 1, remote, t->path.rkey, &param);
    ompi_osc_ucxx_link_dirty(t->module, t->path.link, t->rank);  /* counted once posted */
    if (wait) {
        return ompi_osc_ucxx_wait_request(t->worker, sp);
    }
    if (UCS_PTR_IS_ERR(sp)) {
        if (NULL != a->req) ompi_osc_ucxx_request_op_done(a->req);
        return OMPI_ERROR;
    }
    if (NULL == sp) {
        if (NULL != a->req) ompi_osc_ucxx_request_op_done(a->req);
    } else if (NULL == a->req) {
        ucp_request_free(sp);  /* completed by the next flush */
    }
    return OMPI_SUCCESS;
}

static int ucx_element(acc_t *a, uint64_t remote, const char *origin, char *result)
{
    ucp_atomic_op_t uop;
    uint64_t zero = 0, old = 0, nv, cmp;
    int rc;

    if (ucx_native(a->op, a->elem, NULL != result, &uop)) {
        const void *operand = is_no_op(a->op) ? (const void *) &zero : (const void *) origin;
        if (NULL == result && UCP_ATOMIC_OP_SWAP == uop) {
            /* UCX has no posted swap: fetch into scratch and wait */
            return ucx_atomic(a, uop, operand, remote, &old, true);
        }
        /* Without a result the atomic is posted; a flush completes it. */
        return ucx_atomic(a, uop, operand, remote, result, NULL != result);
    }
    /* Read, combine, compare-and-swap until nobody changed it meanwhile. */
    rc = ucx_atomic(a, UCP_ATOMIC_OP_ADD, &zero, remote, &old, true);
    while (OMPI_SUCCESS == rc) {
        nv = 0;
        combine(a, origin, &old, &nv);
        cmp = old;
        rc = ucx_atomic(a, UCP_ATOMIC_OP_CSWAP, &cmp, remote, &nv, true);
        if (OMPI_SUCCESS != rc || 0 == memcmp(&nv, &old, a->width)) break;
        memcpy(&old, &nv, a->width);  /* the value that was there instead */
    }
    if (OMPI_SUCCESS == rc && NULL != result) memcpy(result, &old, a->width);
    return rc;
}

/* ------------------------------------------------------------------------- */
/* Lock path: a plain read-modify-write of mapped memory, under the stripe
 * locks the caller holds */

static void locked_element(acc_t *a, char *tgt, const char *origin, char *result)
{
    char old[64], nv[64];

    memcpy(old, tgt, a->width);
    if (NULL != result) memcpy(result, old, a->width);
    if (is_no_op(a->op)) return;
    combine(a, origin, old, nv);
    memcpy(tgt, nv, a->width);
}

/* Does this element take one atomic (else the stripe locks)? */
static bool atomic_element(const acc_t *a, uint64_t addr)
{
    return a->hw && 0 == addr % a->width;
}

/* One element of mapped memory (tgt: its address here; stripe-lock offsets
 * count from `base`, the target window's base address here). */
static void mapped_element(acc_t *a, ompi_osc_ucxx_state_t *state, char *base, char *tgt,
                           const char *origin, char *result, bool locked)
{
    if (atomic_element(a, (uint64_t) (uintptr_t) tgt)) {
        cpu_element(a, tgt, origin, result);
    } else if (locked) {
        locked_element(a, tgt, origin, result);
    } else {
        uint32_t mask = ompi_osc_ucxx_stripe_mask(tgt - base, tgt - base + a->width);
        ompi_osc_ucxx_stripes_lock(state, mask);
        locked_element(a, tgt, origin, result);
        ompi_osc_ucxx_stripes_unlock(state, mask);
    }
}

/* ------------------------------------------------------------------------- */
/* The common driver, for mapped memory and for single atomic elements over
 * UCX */

/* Walk one element of `it` (elements may be split into pieces by gaps). */
static bool next_element(ompi_osc_ucxx_dt_iter_t *it, size_t size, char **addr)
{
    size_t got = 0;
    if (!ompi_osc_ucxx_dt_iter_fill(it)) return false;
    *addr = it->ptr;
    while (got < size && ompi_osc_ucxx_dt_iter_fill(it)) {
        size_t take = it->left < size - got ? it->left : size - got;
        it->ptr += take;
        it->left -= take;
        got += take;
    }
    return got == size;
}

/* Contiguous, atomic-per-element operations on mapped memory, inlined. */
static bool apply_fast(acc_t *a, void *origin_addr, int origin_count, ompi_datatype_t *origin_dt,
                       void *result_addr, int result_count, ompi_datatype_t *result_dt,
                       int target_count, ompi_datatype_t *target_dt, size_t esize)
{
    ompi_osc_ucxx_target_t *t = a->t;
    char *tp = (char *) (uintptr_t) (t->remote + target_dt->super.true_lb + t->path.delta);

    if (!a->hw || !t->path.mapped || is_replace(a->op) || is_no_op(a->op) ||
        NULL == origin_dt || 0 != (uintptr_t) tp % a->width ||
        !ompi_datatype_is_contiguous_memory_layout(target_dt, target_count) ||
        !ompi_datatype_is_contiguous_memory_layout(origin_dt, origin_count) ||
        (a->fetch && !ompi_datatype_is_contiguous_memory_layout(result_dt, result_count))) {
        return false;
    }
    return ompi_osc_ucxx_acc_fast(a->op->op_type, a->elem->super.id, tp,
                                  (char *) origin_addr + origin_dt->super.true_lb,
                                  a->fetch ? (char *) result_addr + result_dt->super.true_lb
                                           : NULL,
                                  (size_t) target_count * (target_dt->super.size / esize));
}

static int apply(acc_t *a, void *origin_addr, int origin_count, ompi_datatype_t *origin_dt,
                 void *result_addr, int result_count, ompi_datatype_t *result_dt,
                 int target_count, ompi_datatype_t *target_dt)
{
    ompi_osc_ucxx_target_t *t = a->t;
    ompi_osc_ucxx_state_t *state = NULL;
    ompi_osc_ucxx_dt_iter_t o, r, it;
    size_t esize;
    char *op_ptr = NULL, *res_ptr = NULL, *tgt, *base = NULL;
    uint32_t mask = 0;
    int rc = OMPI_SUCCESS;
    bool have_origin = !is_no_op(a->op) && NULL != origin_dt;

    ompi_datatype_type_size(a->elem, &esize);
    if (apply_fast(a, origin_addr, origin_count, origin_dt, result_addr, result_count, result_dt,
                   target_count, target_dt, esize)) {
        return OMPI_SUCCESS;
    }
    if (t->path.mapped) {
        /* stripes are named by window offsets, the same for every origin */
        state = ompi_osc_ucxx_direct_state(t->module, t->rank);
        base = (char *) (uintptr_t) (t->peer->base + t->path.delta);
        if (!a->hw) {
            mask = ompi_osc_ucxx_stripe_mask(t->lo - t->peer->base, t->hi - t->peer->base);
            ompi_osc_ucxx_stripes_lock(state, mask);
        }
    }
    ompi_osc_ucxx_dt_iter_init(&it, (void *) (uintptr_t) t->remote, target_count, target_dt);
    if (have_origin) ompi_osc_ucxx_dt_iter_init(&o, origin_addr, origin_count, origin_dt);
    if (a->fetch) ompi_osc_ucxx_dt_iter_init(&r, result_addr, result_count, result_dt);

    while (OMPI_SUCCESS == rc && next_element(&it, esize, &tgt)) {
        if (have_origin && !next_element(&o, esize, &op_ptr)) break;
        if (a->fetch && !next_element(&r, esize, &res_ptr)) break;
        uint64_t raddr = (uint64_t) (uintptr_t) tgt;
        if (t->path.mapped) {
            mapped_element(a, state, base, (char *) (uintptr_t) (raddr + t->path.delta), op_ptr,
                           a->fetch ? res_ptr : NULL, !a->hw);
        } else {
            rc = ucx_element(a, raddr, op_ptr, a->fetch ? res_ptr : NULL);
        }
    }

    ompi_osc_ucxx_dt_iter_fini(&it);
    if (have_origin) ompi_osc_ucxx_dt_iter_fini(&o);
    if (a->fetch) ompi_osc_ucxx_dt_iter_fini(&r);
    if (0 != mask) ompi_osc_ucxx_stripes_unlock(state, mask);
    return rc;
}

/* ------------------------------------------------------------------------- */
/* Active-message path: the whole operation is applied by the target's CPU,
 * element by element, with the same atomics and stripe locks as everyone
 * else.  One message per chunk of elements, one acknowledgement each, which
 * carries the target's verdict. */

#define ACC_AM_FETCH  0x1
#define ACC_AM_CAS    0x2
#define ACC_AM_CHUNK  (16 * 1024)  /* payload bytes per message */

typedef struct {
    ompi_osc_ucxx_am_hdr_t base;
    uint64_t token;        /* the origin's acc_pending_t */
    uint32_t first;        /* index of this chunk's first element */
    uint32_t nelem;
    uint32_t nruns;
    int32_t op;            /* Fortran index of the op, or -1 for compare-and-swap */
    int32_t dt;            /* Fortran index of the element type */
    uint32_t flags;
    int32_t status;        /* reply: OMPI_SUCCESS, or why the target refused */
} acc_am_hdr_t;

typedef struct {
    uint64_t offset;       /* from the window base */
    uint32_t count;
    uint32_t stride;
} acc_am_run_t;

/* The origin's record of an operation in flight. */
typedef struct {
    ompi_osc_ucxx_module_t *module;
    void *result_addr;
    int result_count;
    ompi_datatype_t *result_dt;
    size_t width;
    volatile int32_t chunks;   /* unacknowledged chunks, +1 while still sending */
    ompi_osc_ucxx_request_t *req;
} acc_pending_t;

static void pending_chunk_done(acc_pending_t *p)
{
    if (0 != opal_atomic_add_fetch_32(&p->chunks, -1)) return;
    if (NULL != p->result_dt) OBJ_RELEASE(p->result_dt);
    if (NULL != p->req) ompi_osc_ucxx_request_op_done(p->req);
    ompi_osc_ucxx_add32(&p->module->am_outstanding, -1);
    free(p);
}

/* Store `n` values of `width` bytes as elements first.. of (addr, count, dt). */
static void scatter_result(acc_pending_t *p, uint32_t first, uint32_t n, const char *vals)
{
    ompi_osc_ucxx_dt_iter_t it;
    size_t esize;
    char *addr;

    ompi_datatype_type_size(element_type(p->result_dt), &esize);
    ompi_osc_ucxx_dt_iter_init(&it, p->result_addr, p->result_count, p->result_dt);
    for (uint32_t i = 0; i < first + n && next_element(&it, esize, &addr); ++i) {
        if (i >= first) memcpy(addr, vals + (size_t) (i - first) * p->width, p->width);
    }
    ompi_osc_ucxx_dt_iter_fini(&it);
}

static int acc_reply_handler(ompi_osc_ucxx_module_t *module, int from, void *buf, size_t len,
                             bool deferred)
{
    acc_am_hdr_t *hdr = (acc_am_hdr_t *) buf;
    acc_pending_t *p = (acc_pending_t *) (uintptr_t) hdr->token;

    if (OMPI_SUCCESS != hdr->status) {
        int32_t none = OMPI_SUCCESS;
        (void) opal_atomic_compare_exchange_strong_32(&module->am_error, &none, hdr->status);
        if (NULL != p->req) ompi_osc_ucxx_request_fail(p->req, ompi_errcode_get_mpi_code(hdr->status));
    } else if ((hdr->flags & ACC_AM_FETCH) && NULL != p->result_dt) {
        scatter_result(p, hdr->first, hdr->nelem, (char *) (hdr + 1));
    }
    pending_chunk_done(p);
    return OMPI_SUCCESS;
}

/* Where the message's runs lie, as offsets from the window base: [lo, hi)
 * must be in the window (or one attached region); and whether some element
 * takes the stripe locks. */
static int acc_check(ompi_osc_ucxx_module_t *module, acc_t *a, const acc_am_hdr_t *hdr,
                     const acc_am_run_t *runs, uint64_t *lo, uint64_t *hi, bool *locks)
{
    *lo = UINT64_MAX;
    *hi = 0;
    *locks = !a->hw || (hdr->flags & ACC_AM_CAS);
    for (uint32_t r = 0; r < hdr->nruns; ++r) {
        uint64_t end = runs[r].offset + (uint64_t) (runs[r].count - 1) * runs[r].stride + a->width;
        uint64_t addr = (uintptr_t) module->base + runs[r].offset;
        *locks = *locks || !atomic_element(a, addr) ||
                 (runs[r].count > 1 && 0 != runs[r].stride % a->width);
        if (runs[r].offset < *lo) *lo = runs[r].offset;
        if (end > *hi) *hi = end;
    }
    /* the origin checked; never trust blindly (a region may be gone since) */
    if (MPI_WIN_FLAVOR_DYNAMIC == module->flavor ? !ompi_osc_ucxx_dyn_contains(module, *lo, *hi)
                                                 : *hi > module->len) {
        return OMPI_ERR_RMA_RANGE;
    }
    return OMPI_SUCCESS;
}

/* Apply the message's elements; old values into `old` when fetching.  Runs
 * in a UCX callback, so it never waits: where some element takes the stripe
 * locks the handler holds them already (acc_check), and the others are one
 * atomic each. */
static void acc_apply(ompi_osc_ucxx_module_t *module, acc_t *a, const acc_am_hdr_t *hdr,
                      const acc_am_run_t *runs, const char *vals, char *old)
{
    bool cas = hdr->flags & ACC_AM_CAS, fetch = hdr->flags & ACC_AM_FETCH;
    uint32_t k = 0;

    for (uint32_t r = 0; r < hdr->nruns; ++r) {
        for (uint32_t i = 0; i < runs[r].count; ++i, ++k) {
            char *tgt = (char *) module->base + runs[r].offset + (uint64_t) i * runs[r].stride;
            const char *val = vals + (size_t) k * a->width * (cas ? 2 : 1);
            char *res = fetch ? old + (size_t) k * a->width : NULL;
            if (cas) {
                memcpy(res, tgt, a->width);
                if (0 == memcmp(tgt, val + a->width, a->width)) memcpy(tgt, val, a->width);
            } else if (atomic_element(a, (uint64_t) (uintptr_t) tgt)) {
                cpu_element(a, tgt, val, res);
            } else {
                locked_element(a, tgt, val, res);
            }
        }
    }
}

static int acc_handler(ompi_osc_ucxx_module_t *module, int from, void *buf, size_t len,
                       bool deferred)
{
    acc_am_hdr_t *hdr = (acc_am_hdr_t *) buf, *reply;
    acc_am_run_t *runs = (acc_am_run_t *) (hdr + 1);
    bool fetch = hdr->flags & ACC_AM_FETCH, locks = false;
    acc_t a = {.fetch = fetch};
    ptrdiff_t true_lb, true_extent;
    uint64_t lo, hi;
    uint32_t mask = 0;
    size_t esize, rlen;
    int status = OMPI_SUCCESS, rc;

    a.elem = opal_pointer_array_get_item(&ompi_datatype_f_to_c_table, hdr->dt);
    a.op = (hdr->flags & ACC_AM_CAS) ? &ompi_mpi_op_replace.op
                                      : opal_pointer_array_get_item(ompi_op_f_to_c_table, hdr->op);
    if (NULL == a.elem || NULL == a.op) {
        status = MPI_ERR_OP;
    } else {
        ompi_datatype_type_size(a.elem, &esize);
        ompi_datatype_get_true_extent(a.elem, &true_lb, &true_extent);
        a.width = true_extent;
        a.hw = (4 == a.width || 8 == a.width) && esize == a.width;
        status = acc_check(module, &a, hdr, runs, &lo, &hi, &locks);
    }
    if (OMPI_SUCCESS != status) {
        OSC_UCXX_VERBOSE(1, "accumulate from %d refused: %d", from, status);
        fetch = false;
    } else if (locks) {
        mask = ompi_osc_ucxx_stripe_mask(lo, hi);
        if (!ompi_osc_ucxx_stripes_trylock(module->state, mask)) return OMPI_ERR_WOULD_BLOCK;
    }

    rlen = sizeof(*hdr) + (fetch ? (size_t) hdr->nelem * a.width : 0);
    reply = malloc(rlen);
    if (NULL == reply) {
        if (mask) ompi_osc_ucxx_stripes_unlock(module->state, mask);
        return OMPI_ERR_WOULD_BLOCK;
    }
    *reply = *hdr;
    reply->base.from = module->rank;
    reply->status = status;
    reply->flags = fetch ? reply->flags : reply->flags & ~ACC_AM_FETCH;
    if (OMPI_SUCCESS == status) {
        acc_apply(module, &a, hdr, runs, (char *) (runs + hdr->nruns), (char *) (reply + 1));
        opal_atomic_wmb();
    }
    if (mask) ompi_osc_ucxx_stripes_unlock(module->state, mask);

    rc = ompi_osc_ucxx_am_reply(module, from, OSC_UCXX_AM_ACC_REPLY, reply, sizeof(*hdr), rlen,
                                deferred);
    free(reply);
    return rc;
}

void ompi_osc_ucxx_acc_am_init(void)
{
    ompi_osc_ucxx_am_set_handler(OSC_UCXX_AM_ACC, acc_handler);
    ompi_osc_ucxx_am_set_handler(OSC_UCXX_AM_ACC_REPLY, acc_reply_handler);
}

/* A message under construction. */
typedef struct {
    acc_am_hdr_t *hdr;
    acc_am_run_t *runs;
    char *vals;
    size_t cap_elems;
} acc_msg_t;

static int msg_new(acc_msg_t *m, acc_t *a, acc_pending_t *p, uint32_t first, uint32_t flags,
                   size_t per_elem)
{
    m->cap_elems = ACC_AM_CHUNK / (per_elem + sizeof(acc_am_run_t));
    if (0 == m->cap_elems) m->cap_elems = 1;
    m->hdr = calloc(1, sizeof(acc_am_hdr_t) +
                       m->cap_elems * (sizeof(acc_am_run_t) + per_elem));
    if (NULL == m->hdr) return OMPI_ERR_OUT_OF_RESOURCE;
    m->hdr->base.cid = a->t->module->cid;
    m->hdr->base.from = a->t->module->rank;
    m->hdr->token = (uint64_t) (uintptr_t) p;
    m->hdr->first = first;
    m->hdr->op = (flags & ACC_AM_CAS) ? -1 : a->op->o_f_to_c_index;
    m->hdr->dt = a->elem->d_f_to_c_index;
    m->hdr->flags = flags;
    m->runs = (acc_am_run_t *) (m->hdr + 1);
    return OMPI_SUCCESS;
}

/* Pack runs and values together (values go after the runs once complete). */
static int msg_send(acc_msg_t *m, acc_t *a, acc_pending_t *p, char *vals, size_t per_elem)
{
    size_t runs_len = m->hdr->nruns * sizeof(acc_am_run_t);
    size_t vals_len = m->hdr->nelem * per_elem;
    memmove((char *) m->runs + runs_len, vals, vals_len);
    opal_atomic_add_fetch_32(&p->chunks, 1);
    int rc = ompi_osc_ucxx_am_send(a->t->module, a->t->worker, a->t->rank, OSC_UCXX_AM_ACC,
                                   m->hdr, sizeof(acc_am_hdr_t),
                                   sizeof(acc_am_hdr_t) + runs_len + vals_len);
    if (OMPI_SUCCESS != rc) opal_atomic_add_fetch_32(&p->chunks, -1);
    m->hdr = NULL;
    return rc;
}

/* Add the element at window offset `off` to the message's runs. */
static void msg_add_run(acc_msg_t *m, uint64_t off, size_t width)
{
    acc_am_run_t *run = m->hdr->nruns ? &m->runs[m->hdr->nruns - 1] : NULL;
    if (NULL != run && run->count > 1 &&
        run->offset + (uint64_t) run->count * run->stride == off) {
        run->count++;
    } else if (NULL != run && 1 == run->count && off > run->offset &&
               off - run->offset <= UINT32_MAX) {
        run->stride = off - run->offset;
        run->count++;
    } else {
        m->runs[m->hdr->nruns++] = (acc_am_run_t){.offset = off, .count = 1, .stride = width};
    }
}

static acc_pending_t *pending_new(acc_t *a, void *result_addr, int result_count,
                                  ompi_datatype_t *result_dt)
{
    acc_pending_t *p = calloc(1, sizeof(*p));
    if (NULL == p) return NULL;
    p->module = a->t->module;
    p->width = a->width;
    p->chunks = 1;
    if (a->fetch) {
        p->result_addr = result_addr;
        p->result_count = result_count;
        p->result_dt = result_dt;
        OBJ_RETAIN(result_dt);
    }
    if (NULL != a->req) {
        p->req = a->req;
        ompi_osc_ucxx_request_more(a->req);
    }
    ompi_osc_ucxx_add32(&p->module->am_outstanding, 1);
    return p;
}

static int acc_am(acc_t *a, void *origin_addr, int origin_count, ompi_datatype_t *origin_dt,
                  const void *compare_addr, void *result_addr, int result_count,
                  ompi_datatype_t *result_dt, int target_count, ompi_datatype_t *target_dt)
{
    bool cas = NULL != compare_addr;
    bool have_origin = !is_no_op(a->op) && NULL != origin_dt;
    uint32_t flags = (a->fetch ? ACC_AM_FETCH : 0) | (cas ? ACC_AM_CAS : 0);
    size_t per_elem = have_origin ? a->width * (cas ? 2 : 1) : 0;
    uint64_t base = a->t->peer->base;
    ompi_osc_ucxx_dt_iter_t o, t;
    acc_pending_t *p = pending_new(a, result_addr, result_count, result_dt);
    char *vals = NULL, *tgt, *src = NULL;
    acc_msg_t m = {.hdr = NULL};
    uint32_t index = 0;
    size_t esize;
    int rc = OMPI_SUCCESS;

    if (NULL == p) return OMPI_ERR_OUT_OF_RESOURCE;
    ompi_datatype_type_size(a->elem, &esize);
    vals = malloc(ACC_AM_CHUNK + per_elem);
    ompi_osc_ucxx_dt_iter_init(&t, (void *) (uintptr_t) a->t->remote, target_count, target_dt);
    if (have_origin) ompi_osc_ucxx_dt_iter_init(&o, origin_addr, origin_count, origin_dt);
    while (OMPI_SUCCESS == rc && NULL != vals && next_element(&t, esize, &tgt)) {
        if (have_origin && !next_element(&o, esize, &src)) break;
        if (NULL == m.hdr) {
            rc = msg_new(&m, a, p, index, flags, per_elem);
            if (OMPI_SUCCESS != rc) break;
        }
        msg_add_run(&m, (uint64_t) (uintptr_t) tgt - base, a->width);
        if (have_origin) {
            memcpy(vals + (size_t) m.hdr->nelem * per_elem, src, a->width);
            if (cas) memcpy(vals + (size_t) m.hdr->nelem * per_elem + a->width, compare_addr,
                            a->width);
        }
        m.hdr->nelem++;
        index++;
        if (m.hdr->nelem == m.cap_elems) {
            rc = msg_send(&m, a, p, vals, per_elem);
        }
    }
    if (OMPI_SUCCESS == rc && NULL != m.hdr && m.hdr->nelem > 0) {
        rc = msg_send(&m, a, p, vals, per_elem);
    }
    free(m.hdr);
    free(vals);
    ompi_osc_ucxx_dt_iter_fini(&t);
    if (have_origin) ompi_osc_ucxx_dt_iter_fini(&o);
    pending_chunk_done(p);  /* drop the sending reference */
    return NULL == vals ? OMPI_ERR_OUT_OF_RESOURCE : rc;
}

/* ------------------------------------------------------------------------- */
/* Decisions */

/* mpi_assert_accumulate_intrinsic: only what runs without the target CPU.
 * That is everything where the target's memory is mapped (origin-side CPU
 * atomics and stripe locks), nothing where UCX emulates or the target
 * applies active messages. */
bool ompi_osc_ucxx_intrinsic(ompi_osc_ucxx_module_t *module)
{
    return !module->serve;
}

static int check_intrinsic(ompi_osc_ucxx_view_t *view)
{
    static bool warned = false;
    if (!view->assert_intrinsic || ompi_osc_ucxx_intrinsic(view->core)) {
        return OMPI_SUCCESS;
    }
    if (!warned) {
        warned = true;
        opal_show_help("help-osc-ucxx.txt", "op not intrinsic", true);
    }
    return MPI_ERR_OP;
}

/* Operations before this one land first, whichever path they took. */
static int order_before(acc_t *a, bool by_message)
{
    ompi_osc_ucxx_target_t *t = a->t;
    if (!t->view->acc_ordered && !t->view->ordered) {
        return OMPI_SUCCESS;
    }
    if (by_message) {
        /* messages stay in order on the endpoint; earlier UCX atomics on it
         * are completed first */
        return ompi_osc_ucxx_flush_link(t->module, t->worker, t->path.link);
    }
    while (t->module->am_outstanding > 0) opal_progress();
    ucp_worker_fence(t->worker->ucp);
    return OMPI_SUCCESS;
}

/* The element type, width and atomic class of an accumulate. */
static int acc_setup(acc_t *a, ompi_op_t *op, ompi_datatype_t *origin_dt,
                     ompi_datatype_t *target_dt)
{
    ptrdiff_t true_lb, true_extent;
    size_t esize;

    a->op = op;
    a->elem = element_type(target_dt);
    if (NULL == a->elem || !op_defined_on(op, a->elem) ||
        (!is_no_op(op) && NULL != origin_dt && element_type(origin_dt) != a->elem)) {
        return MPI_ERR_OP;
    }
    ompi_datatype_type_size(a->elem, &esize);
    ompi_datatype_get_true_extent(a->elem, &true_lb, &true_extent);
    a->width = true_extent;
    a->hw = (4 == a->width || 8 == a->width) && esize == a->width;
    return OMPI_SUCCESS;
}

int ompi_osc_ucxx_acc(ompi_osc_ucxx_view_t *view, const void *origin_addr,
                      int origin_count, ompi_datatype_t *origin_dt, void *result_addr,
                      int result_count, ompi_datatype_t *result_dt, int target,
                      ptrdiff_t target_disp, int target_count, ompi_datatype_t *target_dt,
                      ompi_op_t *op, bool fetch, ompi_osc_ucxx_request_t *req)
{
    ompi_osc_ucxx_target_t t;
    acc_t a = {.t = &t, .fetch = fetch, .req = req};
    size_t tsize, esize;
    int rc;

    rc = ompi_osc_ucxx_op_begin(view, target, target_disp, target_count, target_dt, &t);
    if (OMPI_SUCCESS != rc) return rc;
    rc = acc_setup(&a, op, origin_dt, target_dt);
    if (OMPI_SUCCESS == rc) rc = check_intrinsic(view);
    if (OMPI_SUCCESS != rc) return rc;
    ompi_datatype_type_size(target_dt, &tsize);
    if (0 == tsize * target_count) return OMPI_SUCCESS;
    rc = ompi_osc_ucxx_op_resolve(&t, true);
    if (OMPI_SUCCESS != rc) return rc;

    ompi_datatype_type_size(a.elem, &esize);
    if (!t.path.mapped) {
        /* Many elements, locked elements, or a replace UCX could only do as
         * a blocking swap: the target applies it, and the origin goes on. */
        bool single = tsize * target_count == esize &&
                      atomic_element(&a, t.remote + target_dt->super.true_lb);
        rc = order_before(&a, !single || (is_replace(op) && !fetch));
        if (OMPI_SUCCESS != rc) return rc;
        if (!single || (is_replace(op) && !fetch)) {
            return acc_am(&a, (void *) origin_addr, origin_count, origin_dt, NULL, result_addr,
                          result_count, result_dt, target_count, target_dt);
        }
    }
    OSC_UCXX_VERBOSE(60, "window %u: %s %s on %s x%d to %d: %s, %s", t.module->cid,
                     fetch ? "get_accumulate" : "accumulate", op->o_name, a.elem->name,
                     target_count, target, a.hw ? "atomic per element" : "stripe locks",
                     t.path.mapped ? "mapped" : "UCX");
    return apply(&a, (void *) origin_addr, origin_count, origin_dt, result_addr, result_count,
                 result_dt, target_count, target_dt);
}

/* ------------------------------------------------------------------------- */
/* Entry points */

int ompi_osc_ucxx_accumulate(const void *origin_addr, int origin_count,
                             struct ompi_datatype_t *origin_dt, int target,
                             ptrdiff_t target_disp, int target_count,
                             struct ompi_datatype_t *target_dt, struct ompi_op_t *op,
                             struct ompi_win_t *win)
{
    return ompi_osc_ucxx_acc(OSC_UCXX_VIEW(win), origin_addr, origin_count, origin_dt, NULL, 0,
                             NULL, target, target_disp, target_count, target_dt, op, false, NULL);
}

int ompi_osc_ucxx_get_accumulate(const void *origin_addr, int origin_count,
                                 struct ompi_datatype_t *origin_dt, void *result_addr,
                                 int result_count, struct ompi_datatype_t *result_dt,
                                 int target, ptrdiff_t target_disp, int target_count,
                                 struct ompi_datatype_t *target_dt, struct ompi_op_t *op,
                                 struct ompi_win_t *win)
{
    return ompi_osc_ucxx_acc(OSC_UCXX_VIEW(win), origin_addr, origin_count, origin_dt,
                             result_addr, result_count, result_dt, target, target_disp,
                             target_count, target_dt, op, true, NULL);
}

int ompi_osc_ucxx_fetch_and_op(const void *origin_addr, void *result_addr,
                               struct ompi_datatype_t *dt, int target, ptrdiff_t target_disp,
                               struct ompi_op_t *op, struct ompi_win_t *win)
{
    return ompi_osc_ucxx_acc(OSC_UCXX_VIEW(win), origin_addr, 1, dt, result_addr, 1, dt, target,
                             target_disp, 1, dt, op, true, NULL);
}

static int racc_common(struct ompi_win_t *win, const void *origin_addr, int origin_count,
                       ompi_datatype_t *origin_dt, void *result_addr, int result_count,
                       ompi_datatype_t *result_dt, int target, ptrdiff_t target_disp,
                       int target_count, ompi_datatype_t *target_dt, ompi_op_t *op, bool fetch,
                       struct ompi_request_t **request)
{
    ompi_osc_ucxx_request_t *req;
    int rc = ompi_osc_ucxx_request_alloc(win, ompi_osc_ucxx_view_worker(OSC_UCXX_VIEW(win)),
                                         &req);
    if (OMPI_SUCCESS != rc) return rc;
    rc = ompi_osc_ucxx_acc(OSC_UCXX_VIEW(win), origin_addr, origin_count, origin_dt, result_addr,
                           result_count, result_dt, target, target_disp, target_count,
                           target_dt, op, fetch, req);
    if (OMPI_SUCCESS != rc) {
        ompi_osc_ucxx_request_abandon(req);
        return rc;
    }
    ompi_osc_ucxx_request_op_done(req);
    *request = &req->super;
    return OMPI_SUCCESS;
}

int ompi_osc_ucxx_raccumulate(const void *origin_addr, int origin_count,
                              struct ompi_datatype_t *origin_dt, int target,
                              ptrdiff_t target_disp, int target_count,
                              struct ompi_datatype_t *target_dt, struct ompi_op_t *op,
                              struct ompi_win_t *win, struct ompi_request_t **request)
{
    return racc_common(win, origin_addr, origin_count, origin_dt, NULL, 0, NULL, target,
                       target_disp, target_count, target_dt, op, false, request);
}

int ompi_osc_ucxx_rget_accumulate(const void *origin_addr, int origin_count,
                                  struct ompi_datatype_t *origin_dt, void *result_addr,
                                  int result_count, struct ompi_datatype_t *result_dt,
                                  int target, ptrdiff_t target_disp, int target_count,
                                  struct ompi_datatype_t *target_dt, struct ompi_op_t *op,
                                  struct ompi_win_t *win, struct ompi_request_t **request)
{
    return racc_common(win, origin_addr, origin_count, origin_dt, result_addr, result_count,
                       result_dt, target, target_disp, target_count, target_dt, op, true,
                       request);
}

/* One atomic compare-and-swap where the element takes one; under the stripe
 * locks (or by the target) otherwise, like every accumulate on it. */
static int cas_mapped(acc_t *a, const void *origin_addr, const void *compare_addr,
                      void *result_addr, size_t size)
{
    ompi_osc_ucxx_target_t *t = a->t;
    char *tgt = (char *) (uintptr_t) (t->remote + t->path.delta);
    ompi_osc_ucxx_state_t *state = ompi_osc_ucxx_direct_state(t->module, t->rank);
    uint64_t expected = 0, desired = 0;
    uint32_t mask;

    if (atomic_element(a, (uint64_t) (uintptr_t) tgt)) {
        memcpy(&expected, compare_addr, size);
        memcpy(&desired, origin_addr, size);
        if (8 == size) {
            __atomic_compare_exchange_n((uint64_t *) tgt, &expected, desired, false,
                                        __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE);
        } else {
            uint32_t e32 = (uint32_t) expected;
            __atomic_compare_exchange_n((uint32_t *) tgt, &e32, (uint32_t) desired, false,
                                        __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE);
            expected = e32;
        }
        memcpy(result_addr, &expected, size);
        return OMPI_SUCCESS;
    }
    mask = ompi_osc_ucxx_stripe_mask(t->lo - t->peer->base, t->hi - t->peer->base);
    ompi_osc_ucxx_stripes_lock(state, mask);
    memcpy(result_addr, tgt, size);
    if (0 == memcmp(tgt, compare_addr, size)) memcpy(tgt, origin_addr, size);
    ompi_osc_ucxx_stripes_unlock(state, mask);
    return OMPI_SUCCESS;
}

int ompi_osc_ucxx_compare_and_swap(const void *origin_addr, const void *compare_addr,
                                   void *result_addr, struct ompi_datatype_t *dt, int target,
                                   ptrdiff_t target_disp, struct ompi_win_t *win)
{
    ompi_osc_ucxx_view_t *view = OSC_UCXX_VIEW(win);
    ompi_osc_ucxx_target_t t;
    acc_t a = {.t = &t, .op = &ompi_mpi_op_replace.op, .elem = dt, .fetch = true};
    size_t size;
    int rc;

    rc = ompi_osc_ucxx_op_begin(view, target, target_disp, 1, dt, &t);
    if (OMPI_SUCCESS != rc) return rc;
    if (!ompi_datatype_is_predefined(dt)) return MPI_ERR_TYPE;
    rc = check_intrinsic(view);
    if (OMPI_SUCCESS == rc) rc = ompi_osc_ucxx_op_resolve(&t, true);
    if (OMPI_SUCCESS != rc) return rc;
    ompi_datatype_type_size(dt, &size);
    a.width = size;
    a.hw = 4 == size || 8 == size;

    if (t.path.mapped) {
        return cas_mapped(&a, origin_addr, compare_addr, result_addr, size);
    }
    rc = order_before(&a, !atomic_element(&a, t.remote));
    if (OMPI_SUCCESS != rc) return rc;
    if (atomic_element(&a, t.remote)) {
        uint64_t reply = 0;
        memcpy(&reply, origin_addr, size);
        rc = ucx_atomic(&a, UCP_ATOMIC_OP_CSWAP, compare_addr, t.remote, &reply, true);
        if (OMPI_SUCCESS == rc) memcpy(result_addr, &reply, size);
        return rc;
    }
    return acc_am(&a, (void *) origin_addr, 1, dt, compare_addr, result_addr, 1, dt, 1, dt);
}
