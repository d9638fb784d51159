/*
 * Copyright (c) 2026 The osc/ucxx authors. All rights reserved.
 * $COPYRIGHT$
 *
 * Accumulate, get_accumulate, fetch_and_op, compare_and_swap and their
 * request-based forms.
 *
 * Element-wise atomicity is decided by the element type alone, so every
 * origin and every path agrees on how an element is protected:
 *   - 4- and 8-byte elements without gaps, naturally aligned, are changed
 *     with one atomic read-modify-write each: a CPU atomic where the target
 *     memory is mapped into this process, else a UCX atomic (ADD, AND, OR,
 *     XOR, SWAP on integers; a compare-and-swap loop for every other op and
 *     for floating point).  No lock anywhere.
 *   - every other element (1- and 2-byte types, 16-byte types, pair types
 *     with gaps, misaligned data) is changed under the target's stripe locks:
 *     32 lock words in its state segment, each covering every 32nd 64-byte
 *     block of the window, so unrelated accumulates do not serialize.
 * Ordering (accumulate_ordering other than "none"): UCX operations of one
 * accumulate are fenced (ucp_worker_fence) after the previous one's.
 */

#include "ompi_config.h"

#include "ompi/op/op.h"

#include "osc_ucxx.h"
#include "osc_ucxx_acc_fast.h"
#include "osc_ucxx_dt.h"

#define STRIPES        32
#define STRIPE_SHIFT   6      /* 64-byte blocks */

/* One accumulate-family operation, as the helpers below see it. */
typedef struct {
    ompi_osc_ucxx_module_t *module;
    ompi_osc_ucxx_worker_t *worker;
    ompi_osc_ucxx_path_t path;       /* mapped, or UCX link + rkey */
    int target;
    ompi_op_t *op;
    ompi_datatype_t *elem;           /* the predefined element type */
    size_t width;                    /* bytes an element's value occupies (true extent) */
    bool hw;                         /* one atomic per element (see above) */
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
        OPAL_THREAD_ADD_FETCH32(&a->req->outstanding, 1);
    }
    sp = ucp_atomic_op_nbx(a->path.link->ep, uop, operand, 1, remote, a->path.rkey, &param);
    ompi_osc_ucxx_link_dirty(a->module, a->path.link, a->target);  /* counted once posted */
    if (wait) {
        return ompi_osc_ucxx_wait_request(a->worker, sp);
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
/* Lock path: the target's stripe locks around a read-modify-write */

static uint32_t stripe_mask(uint64_t lo, uint64_t hi)
{
    uint64_t first = lo >> STRIPE_SHIFT, last = (hi - 1) >> STRIPE_SHIFT;
    uint32_t mask = 0;
    if (last - first >= STRIPES) return 0xffffffffu;
    for (uint64_t b = first; b <= last; ++b) mask |= 1u << (b % STRIPES);
    return mask;
}

static size_t stripe_offset(int s)
{
    return OSC_UCXX_STATE_ACC_LOCKS + (size_t) s * 64;
}

/* Stripes are taken in ascending order, so two accumulates never deadlock. */
static int stripes_lock(acc_t *a, uint32_t mask)
{
    for (int s = 0; s < STRIPES; ++s) {
        uint64_t old;
        int rc;
        if (!(mask & (1u << s))) continue;
        for (;;) {
            rc = ompi_osc_ucxx_state_atomic(a->module, a->target, stripe_offset(s),
                                            UCP_ATOMIC_OP_CSWAP, 1, 0, &old);
            if (OMPI_SUCCESS != rc) return rc;
            if (0 == old) break;
            opal_progress();
        }
    }
    return OMPI_SUCCESS;
}

static int stripes_unlock(acc_t *a, uint32_t mask)
{
    int rc = OMPI_SUCCESS;
    for (int s = 0; s < STRIPES; ++s) {
        if (!(mask & (1u << s))) continue;
        int r = ompi_osc_ucxx_state_atomic(a->module, a->target, stripe_offset(s),
                                           UCP_ATOMIC_OP_ADD, (uint64_t) -1, 0, NULL);
        if (OMPI_SUCCESS != r) rc = r;
    }
    return rc;
}

/* One attempt at each stripe, for active-message handlers that must not
 * wait: all of them or none. */
static bool stripes_trylock(acc_t *a, uint32_t mask)
{
    for (int s = 0; s < STRIPES; ++s) {
        uint64_t old = 1;
        if (!(mask & (1u << s))) continue;
        (void) ompi_osc_ucxx_state_atomic(a->module, a->target, stripe_offset(s),
                                          UCP_ATOMIC_OP_CSWAP, 1, 0, &old);
        if (0 != old) {
            (void) stripes_unlock(a, mask & ((1u << s) - 1));
            return false;
        }
    }
    return true;
}

/* Read or write `len` bytes of the target window (blocking). */
static int ucx_rw(acc_t *a, bool write, void *local, uint64_t remote, size_t len)
{
    ucp_request_param_t param = {.op_attr_mask = 0};
    ucs_status_ptr_t sp;
    int rc;

    ompi_osc_ucxx_link_ask(a->module, a->path.link, a->target);
    sp = write ? ucp_put_nbx(a->path.link->ep, local, len, remote, a->path.rkey, &param)
               : ucp_get_nbx(a->path.link->ep, local, len, remote, a->path.rkey, &param);
    rc = ompi_osc_ucxx_wait_request(a->worker, sp);
    if (OMPI_SUCCESS == rc && write) {
        rc = ompi_osc_ucxx_wait_request(a->worker, ucp_ep_flush_nbx(a->path.link->ep, &param));
    }
    return rc;
}

static int locked_element(acc_t *a, uint64_t remote, const char *origin, char *result)
{
    char old[64], nv[64];
    char *tgt = NULL;
    int rc = OMPI_SUCCESS;

    if (a->path.mapped) {
        tgt = (char *) (uintptr_t) (remote + a->path.delta);
        memcpy(old, tgt, a->width);
    } else {
        rc = ucx_rw(a, false, old, remote, a->width);
    }
    if (OMPI_SUCCESS != rc) return rc;
    if (NULL != result) memcpy(result, old, a->width);
    if (is_no_op(a->op)) return OMPI_SUCCESS;
    combine(a, origin, old, nv);
    if (NULL != tgt) {
        memcpy(tgt, nv, a->width);
        return OMPI_SUCCESS;
    }
    return ucx_rw(a, true, nv, remote, a->width);
}

/* ------------------------------------------------------------------------- */
/* The common driver */

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

static int apply(acc_t *a, void *origin_addr, int origin_count, ompi_datatype_t *origin_dt,
                 void *result_addr, int result_count, ompi_datatype_t *result_dt,
                 uint64_t remote, int target_count, ompi_datatype_t *target_dt, uint64_t lo,
                 uint64_t hi)
{
    ompi_osc_ucxx_dt_iter_t o, r, t;
    size_t esize;
    char *op_ptr = NULL, *res_ptr = NULL, *tgt;
    uint32_t mask = 0;
    int rc = OMPI_SUCCESS;
    bool have_origin = !is_no_op(a->op) && NULL != origin_dt;

    ompi_datatype_type_size(a->elem, &esize);
    if (a->hw && a->path.mapped && !is_replace(a->op) && !is_no_op(a->op) && have_origin &&
        ompi_datatype_is_contiguous_memory_layout(target_dt, target_count) &&
        ompi_datatype_is_contiguous_memory_layout(origin_dt, origin_count) &&
        (!a->fetch || ompi_datatype_is_contiguous_memory_layout(result_dt, result_count))) {
        size_t n = (size_t) target_count * (target_dt->super.size / esize);
        char *tp = (char *) (uintptr_t) (remote + target_dt->super.true_lb + a->path.delta);
        char *rp = a->fetch ? (char *) result_addr + result_dt->super.true_lb : NULL;
        if (ompi_osc_ucxx_acc_fast(a->op->op_type, a->elem->super.id, tp,
                                   (char *) origin_addr + origin_dt->super.true_lb, rp, n)) {
            return OMPI_SUCCESS;
        }
    }
    if (!a->hw) {
        mask = stripe_mask(lo, hi);
        rc = stripes_lock(a, mask);
        if (OMPI_SUCCESS != rc) return rc;
    }
    ompi_osc_ucxx_dt_iter_init(&t, (void *) (uintptr_t) remote, target_count, target_dt);
    if (have_origin) ompi_osc_ucxx_dt_iter_init(&o, origin_addr, origin_count, origin_dt);
    if (a->fetch) ompi_osc_ucxx_dt_iter_init(&r, result_addr, result_count, result_dt);

    while (OMPI_SUCCESS == rc && next_element(&t, esize, &tgt)) {
        if (have_origin && !next_element(&o, esize, &op_ptr)) break;
        if (a->fetch && !next_element(&r, esize, &res_ptr)) break;
        uint64_t raddr = (uint64_t) (uintptr_t) tgt;
        if (!a->hw) {
            rc = locked_element(a, raddr, op_ptr, a->fetch ? res_ptr : NULL);
        } else if (a->path.mapped) {
            cpu_element(a, (char *) (uintptr_t) (raddr + a->path.delta), op_ptr,
                        a->fetch ? res_ptr : NULL);
        } else {
            rc = ucx_element(a, raddr, op_ptr, a->fetch ? res_ptr : NULL);
        }
    }

    ompi_osc_ucxx_dt_iter_fini(&t);
    if (have_origin) ompi_osc_ucxx_dt_iter_fini(&o);
    if (a->fetch) ompi_osc_ucxx_dt_iter_fini(&r);
    if (!a->hw) {
        int r2 = stripes_unlock(a, mask);
        if (OMPI_SUCCESS == rc) rc = r2;
    }
    return rc;
}

/* ------------------------------------------------------------------------- */
/* Active-message path: the whole operation is applied by the target's CPU,
 * element by element, with the same atomics and stripe locks as everyone
 * else.  One message per chunk of elements, one acknowledgement each. */

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
    if (0 != OPAL_THREAD_ADD_FETCH32(&p->chunks, -1)) return;
    if (NULL != p->result_dt) OBJ_RELEASE(p->result_dt);
    if (NULL != p->req) ompi_osc_ucxx_request_op_done(p->req);
    OPAL_THREAD_ADD_FETCH32(&p->module->am_outstanding, -1);
    free(p);
}

/* Store `n` values of `width` bytes as elements first.. of (addr, count, dt). */
static void scatter_result(acc_pending_t *p, uint32_t first, uint32_t n, const char *vals)
{
    ompi_osc_ucxx_dt_iter_t it;
    size_t esize;
    char *addr;

    ompi_datatype_type_size(p->result_dt, &esize);
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

    if ((hdr->flags & ACC_AM_FETCH) && NULL != p->result_dt) {
        scatter_result(p, hdr->first, hdr->nelem, (char *) (hdr + 1));
    }
    pending_chunk_done(p);
    return OMPI_SUCCESS;
}

static int acc_handler(ompi_osc_ucxx_module_t *module, int from, void *buf, size_t len,
                       bool deferred)
{
    acc_am_hdr_t *hdr = (acc_am_hdr_t *) buf;
    acc_am_run_t *runs = (acc_am_run_t *) (hdr + 1);
    char *vals = (char *) (runs + hdr->nruns);
    bool cas = hdr->flags & ACC_AM_CAS, fetch = hdr->flags & ACC_AM_FETCH;
    acc_t a = {.module = module, .target = module->rank, .fetch = fetch,
               .path = {.mapped = true, .delta = 0}};
    ptrdiff_t true_lb, true_extent;
    uint64_t lo = UINT64_MAX, hi = 0;
    uint32_t mask = 0, k = 0;
    size_t esize, rlen;
    acc_am_hdr_t *reply;
    int rc = OMPI_SUCCESS;

    a.elem = opal_pointer_array_get_item(&ompi_datatype_f_to_c_table, hdr->dt);
    a.op = cas ? &ompi_mpi_op_replace.op
               : opal_pointer_array_get_item(ompi_op_f_to_c_table, hdr->op);
    if (NULL == a.elem || NULL == a.op) return OMPI_SUCCESS;
    ompi_datatype_type_size(a.elem, &esize);
    ompi_datatype_get_true_extent(a.elem, &true_lb, &true_extent);
    a.width = true_extent;
    a.hw = (4 == a.width || 8 == a.width) && esize == a.width;
    for (uint32_t r = 0; r < hdr->nruns; ++r) {
        uint64_t end = runs[r].offset + (uint64_t) (runs[r].count - 1) * runs[r].stride + a.width;
        a.hw = a.hw && 0 == (((uintptr_t) module->base + runs[r].offset) % a.width) &&
               0 == runs[r].stride % a.width;
        if (runs[r].offset < lo) lo = runs[r].offset;
        if (end > hi) hi = end;
    }
    /* the origin checked; never trust blindly */
    if (MPI_WIN_FLAVOR_DYNAMIC == module->flavor ? !ompi_osc_ucxx_dyn_contains(module, lo, hi)
                                                 : hi > module->len) {
        OSC_UCXX_VERBOSE(1, "accumulate from %d outside the window dropped", from);
        return OMPI_SUCCESS;
    }
    if (!a.hw || cas) {
        mask = stripe_mask(lo, hi);
        if (!stripes_trylock(&a, mask)) return OMPI_ERR_WOULD_BLOCK;
    }

    rlen = sizeof(*hdr) + (fetch ? (size_t) hdr->nelem * a.width : 0);
    reply = malloc(rlen);
    if (NULL == reply) {
        if (mask) stripes_unlock(&a, mask);
        return OMPI_ERR_WOULD_BLOCK;
    }
    *reply = *hdr;
    reply->base.from = module->rank;
    char *old = (char *) (reply + 1);
    for (uint32_t r = 0; r < hdr->nruns; ++r) {
        for (uint32_t i = 0; i < runs[r].count; ++i, ++k) {
            char *tgt = (char *) module->base + runs[r].offset + (uint64_t) i * runs[r].stride;
            const char *val = vals + (size_t) k * a.width * (cas ? 2 : 1);
            char *res = fetch ? old + (size_t) k * a.width : NULL;
            if (cas) {
                memcpy(res, tgt, a.width);
                if (0 == memcmp(tgt, val + a.width, a.width)) memcpy(tgt, val, a.width);
            } else if (a.hw) {
                cpu_element(&a, tgt, val, res);
            } else {
                rc = locked_element(&a, (uint64_t) (uintptr_t) tgt, val, res);
            }
        }
    }
    opal_atomic_wmb();
    if (mask) stripes_unlock(&a, mask);

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
    m->hdr->base.cid = a->module->cid;
    m->hdr->base.from = a->module->rank;
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
    OPAL_THREAD_ADD_FETCH32(&p->chunks, 1);
    int rc = ompi_osc_ucxx_am_send(a->module, a->worker, a->target, OSC_UCXX_AM_ACC, m->hdr,
                                   sizeof(acc_am_hdr_t),
                                   sizeof(acc_am_hdr_t) + runs_len + vals_len);
    if (OMPI_SUCCESS != rc) OPAL_THREAD_ADD_FETCH32(&p->chunks, -1);
    m->hdr = NULL;
    return rc;
}

static int acc_am(acc_t *a, void *origin_addr, int origin_count, ompi_datatype_t *origin_dt,
                  const void *compare_addr, void *result_addr, int result_count,
                  ompi_datatype_t *result_dt, uint64_t remote, int target_count,
                  ompi_datatype_t *target_dt)
{
    bool cas = NULL != compare_addr;
    bool have_origin = !is_no_op(a->op) && NULL != origin_dt;
    uint32_t flags = (a->fetch ? ACC_AM_FETCH : 0) | (cas ? ACC_AM_CAS : 0);
    size_t per_elem = have_origin ? a->width * (cas ? 2 : 1) : 0;
    uint64_t base = a->module->peers[a->target].base;
    ompi_osc_ucxx_dt_iter_t o, t;
    acc_pending_t *p = calloc(1, sizeof(*p));
    char *vals = NULL, *tgt, *src = NULL;
    acc_msg_t m = {.hdr = NULL};
    uint32_t index = 0;
    size_t esize;
    int rc = OMPI_SUCCESS;

    if (NULL == p) return OMPI_ERR_OUT_OF_RESOURCE;
    p->module = a->module;
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
        OPAL_THREAD_ADD_FETCH32(&a->req->outstanding, 1);
    }
    OPAL_THREAD_ADD_FETCH32(&a->module->am_outstanding, 1);

    ompi_datatype_type_size(a->elem, &esize);
    vals = malloc(ACC_AM_CHUNK + per_elem);
    ompi_osc_ucxx_dt_iter_init(&t, (void *) (uintptr_t) remote, target_count, target_dt);
    if (have_origin) ompi_osc_ucxx_dt_iter_init(&o, origin_addr, origin_count, origin_dt);
    while (OMPI_SUCCESS == rc && NULL != vals && next_element(&t, esize, &tgt)) {
        if (have_origin && !next_element(&o, esize, &src)) break;
        if (NULL == m.hdr) {
            rc = msg_new(&m, a, p, index, flags, per_elem);
            if (OMPI_SUCCESS != rc) break;
        }
        uint64_t off = (uint64_t) (uintptr_t) tgt - base;
        acc_am_run_t *run = m.hdr->nruns ? &m.runs[m.hdr->nruns - 1] : NULL;
        if (NULL != run && run->offset + (uint64_t) run->count * run->stride == off &&
            (1 == run->count ? false : true)) {
            run->count++;
        } else if (NULL != run && 1 == run->count && off > run->offset &&
                   off - run->offset <= UINT32_MAX) {
            run->stride = off - run->offset;
            run->count++;
        } else {
            m.runs[m.hdr->nruns++] = (acc_am_run_t){.offset = off, .count = 1, .stride = a->width};
        }
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

int ompi_osc_ucxx_acc(ompi_osc_ucxx_view_t *view, const void *origin_addr,
                      int origin_count, ompi_datatype_t *origin_dt, void *result_addr,
                      int result_count, ompi_datatype_t *result_dt, int target,
                      ptrdiff_t target_disp, int target_count, ompi_datatype_t *target_dt,
                      ompi_op_t *op, bool fetch, ompi_osc_ucxx_request_t *req)
{
    ompi_osc_ucxx_module_t *module = view->core;
    acc_t a = {.module = module, .target = target, .op = op, .fetch = fetch, .req = req};
    ptrdiff_t lb, extent, true_lb, true_extent;
    uint64_t remote, lo, hi;
    size_t tsize, esize;
    int rc;

    if (target == module->rank) {
        /* a process polling its own window (a flag, a counter) keeps
         * serving the peers that write it through UCX emulation */
        ompi_osc_ucxx_serve(module);
    }

    rc = ompi_osc_ucxx_check_access(module, target);
    if (OMPI_SUCCESS != rc) return rc;

    a.elem = element_type(target_dt);
    if (NULL == a.elem || !op_defined_on(op, a.elem) ||
        (!is_no_op(op) && NULL != origin_dt && element_type(origin_dt) != a.elem)) {
        return MPI_ERR_OP;
    }
    rc = check_intrinsic(view);
    if (OMPI_SUCCESS != rc) return rc;
    rc = ompi_osc_ucxx_view_range(view, target, target_disp, target_count, target_dt, &remote,
                                  &lo, &hi);
    if (OMPI_SUCCESS != rc) return rc;
    ompi_datatype_type_size(target_dt, &tsize);
    if (0 == tsize * target_count) return OMPI_SUCCESS;

    ompi_datatype_type_size(a.elem, &esize);
    ompi_datatype_get_true_extent(a.elem, &true_lb, &true_extent);
    a.width = true_extent;
    ompi_datatype_get_extent(target_dt, &lb, &extent);
    ompi_datatype_get_true_extent(target_dt, &true_lb, &true_extent);
    a.hw = (4 == a.width || 8 == a.width) && esize == a.width &&
           0 == (remote + true_lb) % a.width && 0 == extent % a.width;

    a.worker = ompi_osc_ucxx_view_worker(view);
    if (NULL == a.worker) return OMPI_ERR_OUT_OF_RESOURCE;
    rc = ompi_osc_ucxx_resolve(module, a.worker, target, lo, hi, &a.path);
    if (OMPI_SUCCESS != rc) return rc;
    a.path.mapped &= !a.path.partial;
    if (!a.path.mapped) {
        size_t nelem = tsize * target_count / esize;
        if (!a.hw || nelem > 1 || (is_replace(op) && !fetch)) {
            /* Many elements, no atomic for the type, or a replace UCX could
             * only do as a blocking swap: the target applies it, and the
             * origin goes on.  Active messages stay in order on the endpoint;
             * earlier UCX atomics on it are completed first. */
            if (view->acc_ordered || view->ordered) {
                rc = ompi_osc_ucxx_flush_link(module, a.worker, a.path.link);
                if (OMPI_SUCCESS != rc) return rc;
            }
            return acc_am(&a, (void *) origin_addr, origin_count, origin_dt, NULL, result_addr,
                          result_count, result_dt, remote, target_count, target_dt);
        }
        if (view->acc_ordered || view->ordered) {
            /* after earlier accumulates, whichever path they took */
            while (module->am_outstanding > 0) opal_progress();
            ucp_worker_fence(a.worker->ucp);
        }
    }
    /* stripes are named by window offsets, the same for every origin */
    lo -= module->peers[target].base;
    hi -= module->peers[target].base;
    OSC_UCXX_VERBOSE(60, "window %u: %s %s on %s x%d to %d: %s, %s", module->cid,
                     fetch ? "get_accumulate" : "accumulate", op->o_name, a.elem->name,
                     target_count, target, a.hw ? "atomic per element" : "stripe locks",
                     a.path.mapped ? "mapped" : "UCX");
    return apply(&a, (void *) origin_addr, origin_count, origin_dt, result_addr, result_count,
                 result_dt, remote, target_count, target_dt, lo, hi);
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
                    result_count, result_dt, target, target_disp, target_count, target_dt, op,
                    fetch, req);
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

int ompi_osc_ucxx_compare_and_swap(const void *origin_addr, const void *compare_addr,
                                   void *result_addr, struct ompi_datatype_t *dt, int target,
                                   ptrdiff_t target_disp, struct ompi_win_t *win)
{
    ompi_osc_ucxx_view_t *view = OSC_UCXX_VIEW(win);
    ompi_osc_ucxx_module_t *module = view->core;
    acc_t a = {.module = module, .target = target, .op = &ompi_mpi_op_replace.op,
               .elem = dt, .fetch = true};
    uint64_t remote, lo, hi;
    size_t size;
    int rc;

    if (target == module->rank) {
        ompi_osc_ucxx_serve(module);  /* see ompi_osc_ucxx_acc */
    }

    rc = ompi_osc_ucxx_check_access(module, target);
    if (OMPI_SUCCESS != rc) return rc;
    if (!ompi_datatype_is_predefined(dt)) return MPI_ERR_TYPE;
    rc = check_intrinsic(view);
    if (OMPI_SUCCESS != rc) return rc;
    rc = ompi_osc_ucxx_view_range(view, target, target_disp, 1, dt, &remote, &lo, &hi);
    if (OMPI_SUCCESS != rc) return rc;
    ompi_datatype_type_size(dt, &size);
    a.width = size;
    a.hw = (4 == size || 8 == size) && 0 == remote % size;
    a.worker = ompi_osc_ucxx_view_worker(view);
    if (NULL == a.worker) return OMPI_ERR_OUT_OF_RESOURCE;
    rc = ompi_osc_ucxx_resolve(module, a.worker, target, lo, hi, &a.path);
    if (OMPI_SUCCESS != rc) return rc;
    a.path.mapped &= !a.path.partial;
    if (!a.path.mapped && (view->acc_ordered || view->ordered)) {
        while (module->am_outstanding > 0) opal_progress();
        ucp_worker_fence(a.worker->ucp);
    }

    if (a.hw && a.path.mapped) {
        char *tgt = (char *) (uintptr_t) (remote + a.path.delta);
        uint64_t expected = 0, desired = 0;
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
    if (a.hw) {
        uint64_t reply = 0;
        memcpy(&reply, origin_addr, size);
        rc = ucx_atomic(&a, UCP_ATOMIC_OP_CSWAP, compare_addr, remote, &reply, true);
        if (OMPI_SUCCESS == rc) memcpy(result_addr, &reply, size);
        return rc;
    }
    if (!a.path.mapped) {
        return acc_am(&a, (void *) origin_addr, 1, dt, compare_addr, result_addr, 1, dt, remote,
                      1, dt);
    }

    /* Other sizes: under the stripe locks, like every accumulate on them. */
    char old[64];
    acc_t peek = a;
    peek.op = &ompi_mpi_op_no_op.op;
    uint32_t mask = stripe_mask(lo - module->peers[target].base,
                                hi - module->peers[target].base);
    rc = stripes_lock(&a, mask);
    if (OMPI_SUCCESS != rc) return rc;
    rc = locked_element(&peek, remote, NULL, old);
    if (OMPI_SUCCESS == rc) {
        memcpy(result_addr, old, size);
        if (0 == memcmp(old, compare_addr, size)) {
            rc = locked_element(&a, remote, origin_addr, NULL);
        }
    }
    int r2 = stripes_unlock(&a, mask);
    return OMPI_SUCCESS == rc ? r2 : rc;
}
