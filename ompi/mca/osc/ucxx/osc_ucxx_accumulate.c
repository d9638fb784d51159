/*
 * Copyright (c) 2026 The osc/ucxx authors. All rights reserved.
 * $COPYRIGHT$
 *
 * Accumulate, get_accumulate, fetch_and_op, compare_and_swap and their
 * request-based forms: the decisions, and the paths that run at the origin.
 *
 * Atomicity.  MPI makes accumulates to one location with one predefined
 * type element-wise atomic with respect to each other, whatever their sizes
 * and paths.  Here every accumulate-family operation changes target memory
 * under the target's exclusion (stripe locks, or the window-wide word for a
 * wide span: osc_ucxx_state.c), taken by whoever applies it:
 *   - the origin, where the target memory is mapped here (shared memory on
 *     the node): single elements take one stripe and are one read-modify-
 *     write; bulk ones take the exclusion once per span of at most
 *     osc_ucxx_acc_hold bytes and apply whole runs with ompi_op_reduce at
 *     memory speed (osc_ucxx_acc.h);
 *   - the origin, where the target is the owner of user memory on the node
 *     that it reaches by cross-memory attach: read, applied here and written
 *     back under the target's stripes (osc_ucxx_acc_cma.c);
 *   - the target, for everything from an origin that does not reach it so:
 *     one active message per chunk, applied the same way by the target
 *     (osc_ucxx_acc_am.c).
 * No lock-free element update exists by default, so a bulk accumulate's
 * plain read-modify-write can never interleave with a single-element
 * atomic.  With acc_single_intrinsic=true the application promises that
 * only single-element accumulates touch a location concurrently; those
 * then take the one kind the window agreed at creation
 * (module->single_kind, osc_ucxx_policy.c), the same on every process and
 * for every target, the owner's own memory included: one lock-free CPU
 * atomic where every process maps all of every other's memory, one UCX
 * atomic (native ops, a compare-and-swap loop for the others) where some
 * process is on another node, the exclusion like any other accumulate
 * otherwise.  Elements no atomic instruction covers (1, 2 or 16 bytes,
 * pairs) keep the exclusion.  User memory that peers on the node reach by
 * cross-memory attach is never mapped by them, so a window over it with
 * ranks sharing a node agrees on the exclusion (osc_ucxx_acc_cma.c).
 *
 * Paths: predefined types, the same type and count on every side, to
 * memory mapped here whole take a mapped path first (the checks of put and
 * get's, then the stripes and the operation): acc_short and cas_short for
 * types without gaps in runs of one exclusion (sums, replace and no-op of
 * up to 256 B inline, 4 KiB where MPI_Accumulate and MPI_Get_accumulate
 * run compiled for AVX2 or AVX-512, ompi_osc_ucxx_acc_entries; the rest
 * through the kernels), acc_fast and cas_fast
 * for what they leave (acc_single_intrinsic windows, pair types, longer
 * runs); everything else, and every error, the general one below them.
 *
 * Ordering (accumulate_ordering other than "none"): an accumulate applied
 * here waits for this process's accumulate messages still in flight and
 * fences UCX atomics issued before it; messages apply in the order they were
 * sent (osc_ucxx_am.c).
 */

#include "ompi_config.h"

#include "ompi/errhandler/errcode-internal.h"
#include "ompi/op/op.h"

#include "osc_ucxx_op.h"
#include "osc_ucxx_request.h"
#include "osc_ucxx_am.h"
#include "osc_ucxx_acc.h"
#include "osc_ucxx_lockq.h"
#include "osc_ucxx.h"

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
    if (ompi_osc_ucxx_is_replace(op) || ompi_osc_ucxx_is_no_op(op)) {
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

/* ------------------------------------------------------------------------- */
/* acc_single_intrinsic: one atomic per single element, no exclusion */

/* The atomic that is this op on this element, if there is one: a UCX
 * atomic, or the CPU instruction of the same name (cpu_native).  `fetch`
 * (UCX only): fetching AND/OR/XOR are left to the compare-and-swap loop,
 * as UCX 1.13's shared-memory transports were seen to return the old value
 * without changing the target (the posted forms and TCP's emulation are
 * right). */
static inline bool native_atomic(ompi_op_t *op, ompi_datatype_t *elem, bool fetch,
                                 ucp_atomic_op_t *uop)
{
    if (ompi_osc_ucxx_is_replace(op)) { *uop = UCP_ATOMIC_OP_SWAP; return true; }
    if (ompi_osc_ucxx_is_no_op(op)) { *uop = UCP_ATOMIC_OP_ADD; return true; }   /* add 0 */
    if (!is_integer(elem)) return false;
    switch (op->op_type) {
    case OMPI_OP_SUM:  *uop = UCP_ATOMIC_OP_ADD; return true;
    case OMPI_OP_BAND: *uop = UCP_ATOMIC_OP_AND; return !fetch;
    case OMPI_OP_BOR:  *uop = UCP_ATOMIC_OP_OR;  return !fetch;
    case OMPI_OP_BXOR: *uop = UCP_ATOMIC_OP_XOR; return !fetch;
    default: return false;
    }
}

/* new = origin (op) old, for one element of at most 8 bytes. */
static void combine(const ompi_osc_ucxx_acc_t *a, const void *origin, const void *old, void *out)
{
    memcpy(out, old, a->esize);
    ompi_osc_ucxx_acc_run(a, out, origin, NULL, 1);
}

/* The one CPU instruction that is this op on this element, where there is
 * one (native_atomic: fetch-add, -and, -or, -xor on integers, exchange; a
 * load for no-op); false: a compare-and-swap loop does it (cpu_element).
 * (Through the loop, an 8 B fetch_and_op + flush under acc_single_intrinsic
 * took 28.7 ns, more than under the stripe's exclusion.) */
static inline __opal_attribute_always_inline__ bool
cpu_native(const ompi_osc_ucxx_acc_t *a, char *tgt, const char *origin, char *result)
{
    bool load = ompi_osc_ucxx_is_no_op(a->op);
    ucp_atomic_op_t uop;
    uint64_t v = 0, old;

    if (!native_atomic(a->op, a->elem, false, &uop)) return false;
    if (!load) memcpy(&v, origin, a->esize);  /* (little-endian: the low bytes) */
#define OSC_UCXX_CPU_NATIVE(T)                                                \
    do {                                                                      \
        T *w_ = (T *) tgt, x_ = (T) v;                                        \
        if (load) {                                                           \
            old = __atomic_load_n(w_, __ATOMIC_ACQUIRE);                      \
        } else {                                                              \
            switch (uop) {                                                    \
            case UCP_ATOMIC_OP_ADD: old = __atomic_fetch_add(w_, x_, __ATOMIC_ACQ_REL); break; \
            case UCP_ATOMIC_OP_AND: old = __atomic_fetch_and(w_, x_, __ATOMIC_ACQ_REL); break; \
            case UCP_ATOMIC_OP_OR:  old = __atomic_fetch_or(w_, x_, __ATOMIC_ACQ_REL);  break; \
            case UCP_ATOMIC_OP_XOR: old = __atomic_fetch_xor(w_, x_, __ATOMIC_ACQ_REL); break; \
            default: old = __atomic_exchange_n(w_, x_, __ATOMIC_ACQ_REL); break;  \
            }                                                                 \
        }                                                                     \
        if (NULL != result) memcpy(result, &old, sizeof(T));                  \
    } while (0)
    if (8 == a->esize) {
        OSC_UCXX_CPU_NATIVE(uint64_t);
    } else {
        OSC_UCXX_CPU_NATIVE(uint32_t);
    }
#undef OSC_UCXX_CPU_NATIVE
    return true;
}

/* One CPU atomic (a compare-and-swap loop where no instruction is the op). */
static void cpu_element(const ompi_osc_ucxx_acc_t *a, char *tgt, const char *origin,
                        char *result)
{
    uint64_t old = 0, nv = 0;
    bool wide = 8 == a->esize;

    if (cpu_native(a, tgt, origin, result)) return;

    if (wide) old = __atomic_load_n((uint64_t *) tgt, __ATOMIC_ACQUIRE);
    else old = __atomic_load_n((uint32_t *) tgt, __ATOMIC_ACQUIRE);
    if (!ompi_osc_ucxx_is_no_op(a->op)) {
        for (;;) {
            combine(a, origin, &old, &nv);
            if (wide) {
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
    if (NULL != result) memcpy(result, &old, a->esize);
}

static int ucx_atomic(ompi_osc_ucxx_acc_t *a, ucp_atomic_op_t uop, const void *operand,
                      uint64_t remote, void *reply, bool wait)
{
    ompi_osc_ucxx_target_t *t = a->t;
    ucp_request_param_t param;
    ucs_status_ptr_t sp;

    param.op_attr_mask = UCP_OP_ATTR_FIELD_DATATYPE;
    param.datatype = ucp_dt_make_contig(a->esize);
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
    t->worker->acc_fence = true;
    t->path.link->acc_fence = true;
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

static int ucx_element(ompi_osc_ucxx_acc_t *a, uint64_t remote, const char *origin,
                       char *result)
{
    ucp_atomic_op_t uop;
    uint64_t zero = 0, old = 0, nv, cmp;
    int rc;

    if (native_atomic(a->op, a->elem, NULL != result, &uop)) {
        const void *operand = ompi_osc_ucxx_is_no_op(a->op) ? (const void *) &zero
                                                            : (const void *) origin;
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
        if (OMPI_SUCCESS != rc || 0 == memcmp(&nv, &old, a->esize)) break;
        memcpy(&old, &nv, a->esize);  /* the value that was there instead */
    }
    if (OMPI_SUCCESS == rc && NULL != result) memcpy(result, &old, a->esize);
    return rc;
}

/* ------------------------------------------------------------------------- */
/* Mapped memory: applied here, under the target's exclusion */

/* The target's state segment and window base here, for its stripes. */
static void mapped_hold(ompi_osc_ucxx_acc_t *a, ompi_osc_ucxx_hold_t *h)
{
    ompi_osc_ucxx_target_t *t = a->t;
    ompi_osc_ucxx_hold_init(h, ompi_osc_ucxx_direct_state(t->module, t->rank), t->peer->acc_shift,
                            (char *) (uintptr_t) (t->peer->base + t->path.delta),
                            (char *) (uintptr_t) (t->hi + t->path.delta));
}

/* Predefined types on every side: one run each, no layout walk, under the
 * exclusion `h` (set up, nothing held yet). */
static void contig_held(ompi_osc_ucxx_acc_t *a, ompi_osc_ucxx_hold_t *h, char *tgt,
                        const char *origin, char *result, size_t n)
{
    while (n > 0) {
        size_t k = ompi_osc_ucxx_min(ompi_osc_ucxx_hold_cover(h, a, tgt, n), INT_MAX);
        ompi_osc_ucxx_acc_run(a, tgt, origin, result, k);
        tgt += k * a->ext;
        if (NULL != origin) origin += k * a->ext;
        if (NULL != result) result += k * a->ext;
        n -= k;
    }
    ompi_osc_ucxx_hold_release(h);
}

static void mapped_contig(ompi_osc_ucxx_acc_t *a, char *tgt, const char *origin, char *result,
                          size_t n)
{
    ompi_osc_ucxx_hold_t h;
    mapped_hold(a, &h);
    contig_held(a, &h, tgt, origin, result, n);
}

/* The element at `tgt` (mapped here): one CPU compare-and-swap where it
 * may be lock-free, else under the exclusion `h` (set up, nothing held). */
static void cas_apply(ompi_osc_ucxx_acc_t *a, ompi_osc_ucxx_hold_t *h, char *tgt,
                      bool lockfree, const void *origin_addr, const void *compare_addr,
                      void *result_addr)
{
    uint64_t expected = 0, desired = 0;

    if (lockfree) {
        memcpy(&expected, compare_addr, a->esize);
        memcpy(&desired, origin_addr, a->esize);
        if (8 == a->esize) {
            __atomic_compare_exchange_n((uint64_t *) tgt, &expected, desired, false,
                                        __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE);
        } else {
            uint32_t e32 = (uint32_t) expected;
            __atomic_compare_exchange_n((uint32_t *) tgt, &e32, (uint32_t) desired, false,
                                        __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE);
            expected = e32;
        }
        memcpy(result_addr, &expected, a->esize);
        return;
    }
    /* (4- and 8-byte elements mostly take cas_short) */
    ompi_osc_ucxx_hold_elements(h, a, tgt, 1);
    ompi_osc_ucxx_acc_copy(a, result_addr, tgt, 1);
    if (0 == memcmp(tgt, compare_addr, a->esize)) {
        ompi_osc_ucxx_acc_copy(a, tgt, origin_addr, 1);
    }
    ompi_osc_ucxx_hold_release(h);
}

/* Walk target, origin and result runs together, applying the common part
 * of each under the exclusion. */
static void mapped_bulk(ompi_osc_ucxx_acc_t *a, void *origin_addr, int origin_count,
                        ompi_datatype_t *origin_dt, void *result_addr, int result_count,
                        ompi_datatype_t *result_dt, int target_count, ompi_datatype_t *target_dt)
{
    ompi_osc_ucxx_target_t *t = a->t;
    bool have_origin = !ompi_osc_ucxx_is_no_op(a->op) && NULL != origin_dt;
    ompi_osc_ucxx_runs_t rt, ro, rr;
    ompi_osc_ucxx_hold_t h;
    char *tp, *op = NULL, *rp = NULL;
    size_t n;

    mapped_hold(a, &h);
    ompi_osc_ucxx_runs_init(&rt, a, (void *) (uintptr_t) (t->remote + t->path.delta),
                            target_count, target_dt);
    if (have_origin) ompi_osc_ucxx_runs_init(&ro, a, origin_addr, origin_count, origin_dt);
    if (a->fetch) ompi_osc_ucxx_runs_init(&rr, a, result_addr, result_count, result_dt);

    while (0 != (n = ompi_osc_ucxx_runs_peek(&rt, &tp))) {
        n = ompi_osc_ucxx_hold_cover(&h, a, tp, n);
        if (have_origin) n = ompi_osc_ucxx_min(n, ompi_osc_ucxx_runs_peek(&ro, &op));
        if (a->fetch) n = ompi_osc_ucxx_min(n, ompi_osc_ucxx_runs_peek(&rr, &rp));
        if (0 == n) break;
        n = ompi_osc_ucxx_min(n, (size_t) INT_MAX);
        ompi_osc_ucxx_acc_run(a, tp, op, rp, n);
        ompi_osc_ucxx_runs_skip(&rt, n);
        if (have_origin) ompi_osc_ucxx_runs_skip(&ro, n);
        if (a->fetch) ompi_osc_ucxx_runs_skip(&rr, n);
    }
    ompi_osc_ucxx_hold_release(&h);
    ompi_osc_ucxx_runs_fini(&rt);
    if (have_origin) ompi_osc_ucxx_runs_fini(&ro);
    if (a->fetch) ompi_osc_ucxx_runs_fini(&rr);
}

/* ------------------------------------------------------------------------- */
/* Decisions */

/* mpi_assert_accumulate_intrinsic: only what runs without the target CPU.
 * That is everything where the target's memory is mapped (origin-side CPU
 * work under the exclusion), nothing where UCX emulates or the target
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
static int order_before(ompi_osc_ucxx_acc_t *a, bool by_message)
{
    ompi_osc_ucxx_target_t *t = a->t;
    if (!t->view->acc_ordered && !t->view->ordered) {
        return OMPI_SUCCESS;
    }
    if (by_message) {
        /* messages stay in order on the endpoint; earlier UCX operations on
         * it are completed first (nothing to do when none is outstanding) */
        return ompi_osc_ucxx_flush_link(t->module, t->worker, t->path.link);
    }
    ompi_osc_ucxx_wait_messages(t->module);
    if (OPAL_LIKELY(!t->worker->acc_fence)) {
        return OMPI_SUCCESS;
    }
    if (OPAL_UNLIKELY(OSC_UCXX.order_by_flush)) {
        /* the UCX atomics issued to this target, if any (the worker's flag
         * stays set: other targets' links may still have some) */
        ompi_osc_ucxx_link_t *link = ompi_osc_ucxx_link_made(t->module, t->worker, t->rank);
        if (NULL == link || !link->acc_fence) return OMPI_SUCCESS;
        link->acc_fence = false;
        return ompi_osc_ucxx_fence_link(t->module, t->worker, link);
    }
    t->worker->acc_fence = false;
    ucp_worker_fence(t->worker->ucp);
    return OMPI_SUCCESS;
}

/* The element type and its geometry. */
static int acc_setup(ompi_osc_ucxx_acc_t *a, ompi_op_t *op, ompi_datatype_t *origin_dt,
                     ompi_datatype_t *target_dt)
{
    a->op = op;
    a->elem = element_type(target_dt);
    if (NULL == a->elem || !op_defined_on(op, a->elem) ||
        (!ompi_osc_ucxx_is_no_op(op) && NULL != origin_dt &&
         element_type(origin_dt) != a->elem)) {
        return MPI_ERR_OP;
    }
    ompi_osc_ucxx_acc_geometry(a);
    return OMPI_SUCCESS;
}

/* acc_single_intrinsic: this single element takes one atomic, no exclusion. */
static bool lock_free(const ompi_osc_ucxx_acc_t *a, uint64_t remote)
{
    return OSC_UCXX_SINGLE_STRIPES != a->t->view->single_kind && a->hw &&
           0 == remote % a->esize;
}

/* Memory not mapped here: applied here by cross-memory attach where the
 * origin reaches the target so (under its stripes), else by the target. */
static int acc_unmapped(ompi_osc_ucxx_acc_t *a, void *origin_addr, int origin_count,
                        ompi_datatype_t *origin_dt, const void *compare_addr, void *result_addr,
                        int result_count, ompi_datatype_t *result_dt, int target_count,
                        ompi_datatype_t *target_dt)
{
    int rc;

    if (a->t->path.cma) {
        rc = order_before(a, false);
        if (OMPI_SUCCESS != rc) return rc;
        rc = ompi_osc_ucxx_acc_cma(a, origin_addr, origin_count, origin_dt, compare_addr,
                                   result_addr, result_count, result_dt, target_count,
                                   target_dt);
        if (OMPI_ERR_NOT_AVAILABLE != rc) return rc;
    }
    rc = order_before(a, true);
    if (OMPI_SUCCESS != rc) return rc;
    return ompi_osc_ucxx_acc_am(a, origin_addr, origin_count, origin_dt, compare_addr,
                                result_addr, result_count, result_dt, target_count, target_dt);
}

/* Which atomic a lock-free element takes: the window's kind, for every
 * target alike.  A CPU one: every process maps all of every other's memory
 * (the agreement checked it), so the path is mapped.  A UCX one: mapped
 * memory, ours included, needs the link and rkey too (resolve leaves them
 * unset on fully mapped memory; dynamic windows set them per region, for
 * peers).  *rc: no route, or our own dynamic memory spread over regions
 * attached back to back (*split: the message path, as the peers take). */
static bool cpu_atomic(ompi_osc_ucxx_target_t *t, int *rc)
{
    ompi_osc_ucxx_module_t *module = t->module;

    *rc = OMPI_SUCCESS;
    if (OSC_UCXX_SINGLE_CPU == module->single_kind) {
        if (t->path.mapped) return true;
        *rc = OMPI_ERR_UNREACH;  /* (cannot be: all map all) */
        return false;
    }
    if (MPI_WIN_FLAVOR_DYNAMIC == module->flavor) {
        if (t->rank == module->rank) {
            *rc = ompi_osc_ucxx_dyn_resolve_self(module, t->worker, t->lo, t->hi, &t->path);
        }
    } else if (t->path.mapped) {  /* (wholly mapped: no link resolved) */
        t->path.link = ompi_osc_ucxx_link(module, t->worker, t->rank);
        if (NULL == t->path.link) *rc = OMPI_ERR_UNREACH;
        else t->path.rkey = t->path.link->data_rkey;
    }
    return false;
}

/* The atomics audit: a single element's kind (osc_ucxx_audit.h). */
static inline void audit_single(ompi_osc_ucxx_module_t *module, int target, uint64_t remote,
                                unsigned kind)
{
    ompi_osc_ucxx_audit(module, target, OSC_UCXX_AUDIT_DATA,
                        remote - module->peers[target].base, kind);
}

/* n elements, predefined on every side: no layout walk. */
static int acc_contig(ompi_osc_ucxx_acc_t *a, const void *origin, void *result, int n)
{
    ompi_osc_ucxx_target_t *t = a->t;
    char *tgt = (char *) (uintptr_t) (t->remote + t->path.delta);
    int rc;

    if (1 == n && lock_free(a, t->remote)) {
        rc = order_before(a, false);
        if (OPAL_UNLIKELY(OMPI_SUCCESS != rc)) return rc;
        if (cpu_atomic(t, &rc)) {
            audit_single(t->module, t->rank, t->remote, OSC_UCXX_AUDIT_CPU);
            cpu_element(a, tgt, origin, result);
            return OMPI_SUCCESS;
        }
        if (OMPI_SUCCESS != rc) return rc;
        if (!t->path.split) {
            audit_single(t->module, t->rank, t->remote, OSC_UCXX_AUDIT_UCX);
            return ucx_element(a, t->remote, origin, result);
        }
        /* (our own element across two attached regions: under the stripes
         * here, as the peers' messages for it are applied) */
    }
    if (1 == n && t->path.mapped) {
        audit_single(t->module, t->rank, t->remote, OSC_UCXX_AUDIT_STRIPE);
    }
    if (t->path.mapped) {
        rc = order_before(a, false);
        if (OPAL_LIKELY(OMPI_SUCCESS == rc)) {
            mapped_contig(a, tgt, ompi_osc_ucxx_is_no_op(a->op) ? NULL : origin, result, n);
        }
        return rc;
    }
    return acc_unmapped(a, (void *) origin, n, a->elem, NULL, result, n, a->elem, n, a->elem);
}

static int acc(ompi_osc_ucxx_view_t *view, const void *origin_addr, int origin_count,
               ompi_datatype_t *origin_dt, void *result_addr, int result_count,
               ompi_datatype_t *result_dt, int target, ptrdiff_t target_disp, int target_count,
               ompi_datatype_t *target_dt, ompi_op_t *op, bool fetch,
               ompi_osc_ucxx_request_t *req)
{
    ompi_osc_ucxx_target_t t;
    ompi_osc_ucxx_acc_t a = {.t = &t, .fetch = fetch, .req = req};
    int rc;

    if (OPAL_UNLIKELY(MPI_PROC_NULL == target)) return ompi_osc_ucxx_proc_null(view);
    rc = ompi_osc_ucxx_op_begin(view, target, target_disp, target_count, target_dt, &t);
    if (OPAL_UNLIKELY(OMPI_SUCCESS != rc)) return rc;
    /* no bytes (count 0, or a type of size 0 with no element type): a no-op */
    if (0 == (size_t) target_count * target_dt->super.size) return OMPI_SUCCESS;
    rc = acc_setup(&a, op, origin_dt, target_dt);
    if (OPAL_LIKELY(OMPI_SUCCESS == rc)) rc = check_intrinsic(view);
    if (OPAL_UNLIKELY(OMPI_SUCCESS != rc)) return rc;
    if (OPAL_UNLIKELY(t.peer->access & OSC_UCXX_TGT_LAZY)) {
        /* carried in the lock request (osc_ucxx_lazy.c), or issued */
        rc = ompi_osc_ucxx_lazy_acc(&a, origin_addr, origin_count, origin_dt, NULL, result_addr,
                                    result_count, result_dt, target_count, target_dt);
        if (OSC_UCXX_ISSUE != rc) return rc;
    }
    rc = ompi_osc_ucxx_op_resolve(&t, true);
    if (OPAL_UNLIKELY(OMPI_SUCCESS != rc)) return rc;
    if (OPAL_UNLIKELY(t.path.split)) goto by_message;   /* across attached regions */

    OSC_UCXX_VERBOSE(60, "window %u: %s %s on %s x%d to %d, %s", t.module->cid,
                     fetch ? "get_accumulate" : "accumulate", op->o_name, a.elem->name,
                     target_count, target, t.path.mapped ? "mapped" : "by message");
    if (target_dt == a.elem &&
        (NULL == origin_dt || (origin_dt == a.elem && origin_count == target_count)) &&
        (!fetch || (result_dt == a.elem && result_count == target_count))) {
        return acc_contig(&a, origin_addr, result_addr, target_count);
    }
    if (t.path.mapped) {
        rc = order_before(&a, false);
        if (OMPI_SUCCESS == rc) {
            mapped_bulk(&a, (void *) origin_addr, origin_count, origin_dt, result_addr,
                        result_count, result_dt, target_count, target_dt);
        }
        return rc;
    }
by_message:
    return acc_unmapped(&a, (void *) origin_addr, origin_count, origin_dt, NULL, result_addr,
                        result_count, result_dt, target_count, target_dt);
}

int ompi_osc_ucxx_acc(ompi_osc_ucxx_view_t *view, const void *origin_addr,
                      int origin_count, ompi_datatype_t *origin_dt, void *result_addr,
                      int result_count, ompi_datatype_t *result_dt, int target,
                      ptrdiff_t target_disp, int target_count, ompi_datatype_t *target_dt,
                      ompi_op_t *op, bool fetch, ompi_osc_ucxx_request_t *req)
{
    bool held = ompi_osc_ucxx_dyn_serial_enter(view->core);
    int rc = acc(view, origin_addr, origin_count, origin_dt, result_addr, result_count,
                 result_dt, target, target_disp, target_count, target_dt, op, fetch, req);
    ompi_osc_ucxx_dyn_serial_leave(view->core, held);
    return rc;
}

/* ------------------------------------------------------------------------- */
/* The mapped path: elements of one predefined type, the same type and count
 * on every side, to a peer's memory mapped here whole, in an epoch that
 * opened it (ompi_osc_ucxx_mapped_access): applied at once, as the general
 * path would apply them, without its prologue (epoch check, range, worker,
 * path, decisions).  An 8 B MPI_Accumulate + flush took 52 ns through that
 * prologue, 32 through acc_fast, 30 through acc_short (osc/sm: 25); the
 * exclusion itself is ~3.  Everything else, and every error, takes the
 * general path. */

/* Would the general path apply it here at once, with nothing to wait for or
 * to report first?  (Ordered accumulates: no UCX atomic of this thread's
 * unfenced; the mapped access checks that no message of ours is on its
 * way.  An asserted-intrinsic window that needs serving reports
 * MPI_ERR_OP.) */
static inline bool fast_allowed(ompi_osc_ucxx_view_t *view, ompi_op_t *op, ompi_datatype_t *dt)
{
    ompi_osc_ucxx_worker_t *w;

    if (view->ordered || !ompi_datatype_is_predefined(dt) || !op_defined_on(op, dt) ||
        (view->assert_intrinsic && !ompi_osc_ucxx_intrinsic(view->core))) {
        return false;
    }
    w = view->acc_ordered ? ompi_osc_ucxx_worker_held() : NULL;
    return NULL == w || !w->acc_fence;
}

/* The mapped bytes of the access and their exclusion, or NULL; *lockfree:
 * a single element that takes one CPU atomic (acc_single_intrinsic, where
 * the window's kind for them is that; UCX atomics take the general path). */
static inline __opal_attribute_always_inline__ char *
fast_target(ompi_osc_ucxx_view_t *view, ompi_osc_ucxx_acc_t *a, ompi_op_t *op,
            ompi_datatype_t *dt, bool fetch, int target, ptrdiff_t disp, int count,
            ompi_osc_ucxx_hold_t *h, bool *lockfree)
{
    ompi_osc_ucxx_module_t *module = view->core;
    ompi_osc_ucxx_peer_t *peer;
    ompi_osc_ucxx_state_t *state;
    uint64_t offset;
    size_t size;
    char *p = ompi_osc_ucxx_mapped_access(view, true, target, disp, count, dt, count, dt, &size);

    if (NULL == p || NULL == (state = ompi_osc_ucxx_direct_state(module, target))) {
        return NULL;
    }
    peer = &module->peers[target];
    offset = (uint64_t) disp * peer->disp_unit;  /* (the access checked the product) */
    a->t = NULL;
    a->req = NULL;
    a->op = op;
    a->elem = dt;
    a->fetch = fetch;
    ompi_osc_ucxx_acc_geometry(a);
    ompi_osc_ucxx_prefault(module, target, p, (size_t) (count - 1) * a->ext + a->width, true);
    *lockfree = 1 == count && OSC_UCXX_SINGLE_STRIPES != view->single_kind && a->hw &&
                0 == (peer->base + offset) % a->esize;
    if (*lockfree && OSC_UCXX_SINGLE_CPU != view->single_kind) {
        return NULL;
    }
    /* stripes count from the window's base (a dynamic window's: address 0) */
    ompi_osc_ucxx_hold_init(h, state, peer->acc_shift, p - offset,
                            p + (size_t) (count - 1) * a->ext + a->width);
    return p;
}

/* The atomics audit: a single element of the fast paths, after the fact
 * (out of line: nothing of it stays live in the paths); a memory-handle
 * view counts from the handle's base. */
static __opal_attribute_noinline__ void audit_fast(ompi_osc_ucxx_view_t *view, int target,
                                                   ptrdiff_t disp, bool lockfree)
{
    ompi_osc_ucxx_peer_t *peer = &view->core->peers[target];
    uint64_t offset = view->memhandle ? view->mh_base + (uint64_t) disp * view->mh_disp_unit
                                      : peer->base + (uint64_t) disp * peer->disp_unit;
    audit_single(view->core, target, offset,
                 lockfree ? OSC_UCXX_AUDIT_CPU : OSC_UCXX_AUDIT_STRIPE);
}

/* short_target's peer, where its checks are fewest: a peer whose window
 * memory and state are wholly mapped here (ompi_osc_ucxx_peer_t::whole,
 * known from its first use), in an epoch on it, with nothing of ours
 * between (mapped_access's conditions for such a peer).  NULL: not that
 * case, short_target checks it all.  (One peer pointer and no flavor,
 * edge or mapping tests: an 8 B MPI_Accumulate + flush, 512 instructions
 * through ompi_osc_ucxx_mapped_access, 474 so; osc/sm 386.) */
static inline __opal_attribute_always_inline__ char *
short_whole(ompi_osc_ucxx_module_t *module, int target, ptrdiff_t disp, size_t size,
            ompi_osc_ucxx_state_t **state, uint32_t *mask)
{
    ompi_osc_ucxx_peer_t *peer;
    uint64_t off;

    if (OPAL_UNLIKELY((unsigned) target >= (unsigned) module->size || disp < 0 || 0 == size)) {
        return NULL;
    }
    peer = &module->peers[target];
    if (OPAL_UNLIKELY(!(peer->access & OSC_UCXX_TGT_READY) ||
                      !__atomic_load_n(&peer->whole, __ATOMIC_ACQUIRE) ||
                      module->am_outstanding > 0 || OSC_UCXX_IN_HANDLER() ||
                      __builtin_mul_overflow((uint64_t) disp, (uint64_t) peer->disp_unit,
                                             &off) ||
                      off > peer->size || size > peer->size - off)) {
        return NULL;
    }
    *state = peer->direct_state;
    *mask = ompi_osc_ucxx_stripe_mask(peer->acc_shift, off, off + size);
    return peer->direct_data + off;
}

/* Runs up to this long take their stripes at once (64 B with a flush: 36 ns,
 * against 42 through contig_held's moving span and a kernel call); longer
 * ones hold a moving span. */
#define FEW_BYTES 512

/* The commonest accumulates (MPI_Fetch_and_op, MPI_Compare_and_swap,
 * counters, OSU's latency tests) are runs of one predefined type without
 * gaps, the same type and count on every side, to memory mapped here: taken
 * under the stripes their blocks map to, without the run machinery
 * (geometry, the held span, acc_few's dispatch), for runs of at most
 * osc_ucxx_acc_hold bytes (one exclusion).  What these do not take,
 * acc_fast and cas_fast do.
 *
 * The mapped bytes of such a run of at most `max` bytes and its target's
 * stripes (*state, *mask); NULL: not here. */
static inline __opal_attribute_always_inline__ char *
short_target(ompi_osc_ucxx_view_t *view, ompi_op_t *op, ompi_datatype_t *dt, int target,
             ptrdiff_t disp, int count, size_t max, ompi_osc_ucxx_state_t **state,
             uint32_t *mask)
{
    ompi_osc_ucxx_module_t *module = view->core;
    size_t esize = dt->super.size, size;
    uint64_t off;
    char *p;

    if ((size_t) (dt->super.ub - dt->super.lb) != esize ||
        (size_t) count * esize > max || OSC_UCXX_SINGLE_STRIPES != view->single_kind ||
        !fast_allowed(view, op, dt)) {
        return NULL;
    }
    if (OPAL_LIKELY(ompi_datatype_is_contiguous_memory_layout(dt, count)) &&
        NULL != (p = short_whole(module, target, disp, (size_t) count * esize, state, mask))) {
        return p;  /* (never with the audit on: the path below records) */
    }
    if (NULL == (p = ompi_osc_ucxx_mapped_access(view, true, target, disp, count, dt, count, dt,
                                                 &size)) ||
        NULL == (*state = ompi_osc_ucxx_direct_state(module, target))) {
        return NULL;
    }
    /* stripes count from the window's base (a dynamic window's: address 0) */
    off = (uint64_t) disp * module->peers[target].disp_unit;
    *mask = ompi_osc_ucxx_stripe_mask(module->peers[target].acc_shift, off, off + size);
    if (OPAL_UNLIKELY(ompi_osc_ucxx_audit_on) && 1 == count) {
        audit_fast(view, target, disp, false);
    }
    return p;
}

/* acc_short's runs that short_apply does not take: acc_run's kernels (out
 * of line: its descriptor on acc_short's stack cost single elements 1 ns). */
static __opal_attribute_noinline__ void long_run(ompi_op_t *op, ompi_datatype_t *dt, char *tgt,
                                                 const void *origin, void *result, size_t n)
{
    size_t esize = dt->super.size;
    ompi_osc_ucxx_acc_t a = { .op = op, .elem = dt, .esize = esize, .ext = esize,
                              .width = esize };
    ompi_osc_ucxx_acc_run(&a, tgt, origin, result, n);
}

/* An accumulate-family run: inline where short_kind says so and it is
 * short (osc_ucxx_acc.h), else through acc_run (the kernels); false: not
 * here.  (Runs of 512 B to 2 KiB + flush took 3-5 ns less here than
 * through acc_fast.)  `vw`: the vector bytes of the calling entry point
 * (ompi_osc_ucxx_acc_entries): wider vectors take longer runs inline. */
static inline __opal_attribute_always_inline__ bool
acc_short(ompi_osc_ucxx_view_t *view, const void *origin, void *result, int target,
          ptrdiff_t disp, int count, ompi_datatype_t *dt, ompi_op_t *op, unsigned vw)
{
    ompi_osc_ucxx_state_t *state;
    uint32_t mask;
    int kind = ompi_osc_ucxx_short_kind(op, dt);
    size_t esize = dt->super.size;
    /* (a single element: no load of the parameter) */
    size_t max = __builtin_constant_p(count) ? OSC_UCXX_SHORT_MAX : OSC_UCXX.acc_hold;
    char *p = short_target(view, op, dt, target, disp, count, max, &state, &mask);

    if (NULL == p) return false;
    ompi_osc_ucxx_stripes_lock(state, mask);
    if (OPAL_LIKELY(OSC_UCXX_SHORT_NONE != kind &&
                    (size_t) count * esize <=
                        (16 == vw ? OSC_UCXX_SHORT_MAX : OSC_UCXX_SHORT_WIDE_MAX))) {
        ompi_osc_ucxx_short_apply_vw(kind, p, origin, result, (size_t) count, esize, vw);
    } else {
        long_run(op, dt, p, origin, result, (size_t) count);
    }
    ompi_osc_ucxx_stripes_unlock(state, mask);
    return true;
}

/* MPI_Compare_and_swap of a 4- or 8-byte element; false: not here.
 * (Equal as the general path's memcmp finds them: the same bytes.) */
static inline __opal_attribute_always_inline__ bool
cas_short(ompi_osc_ucxx_view_t *view, const void *origin, const void *compare, void *result,
          ompi_datatype_t *dt, int target, ptrdiff_t disp)
{
    ompi_osc_ucxx_state_t *state;
    uint32_t mask;
    char *p;

    if ((4 != dt->super.size && 8 != dt->super.size) ||
        NULL == (p = short_target(view, &ompi_mpi_op_replace.op, dt, target, disp, 1, 8, &state,
                                  &mask))) {
        return false;
    }
    ompi_osc_ucxx_stripes_lock(state, mask);
    if (8 == dt->super.size) {
        uint64_t cur, cmp;
        memcpy(&cur, p, 8);
        memcpy(&cmp, compare, 8);
        memcpy(result, &cur, 8);
        if (cur == cmp) memcpy(p, origin, 8);
    } else {
        uint32_t cur, cmp;
        memcpy(&cur, p, 4);
        memcpy(&cmp, compare, 4);
        memcpy(result, &cur, 4);
        if (cur == cmp) memcpy(p, origin, 4);
    }
    ompi_osc_ucxx_stripes_unlock(state, mask);
    return true;
}

/* acc_short with a single element apart: compiled for a count of 1, its
 * loops and mask fold away (an 8 B MPI_Accumulate + flush: 27.8 ns,
 * against 31.1 through the general count). */
static inline __opal_attribute_always_inline__ bool
acc_short_count(ompi_osc_ucxx_view_t *view, const void *origin, void *result, int target,
                ptrdiff_t disp, int count, ompi_datatype_t *dt, ompi_op_t *op, unsigned vw)
{
    if (1 == count) return acc_short(view, origin, result, target, disp, 1, dt, op, vw);
    return acc_short(view, origin, result, target, disp, count, dt, op, vw);
}

/* MPI_Accumulate, MPI_Get_accumulate, MPI_Fetch_and_op that acc_short
 * leaves (acc_single_intrinsic windows, pair types, runs longer than one
 * exclusion); false: not here. */
static inline __opal_attribute_always_inline__ bool
acc_fast(ompi_osc_ucxx_view_t *view, const void *origin_addr, int origin_count,
         ompi_datatype_t *origin_dt, void *result_addr, int result_count,
         ompi_datatype_t *result_dt, int target, ptrdiff_t disp, int count, ompi_datatype_t *dt,
         ompi_op_t *op, bool fetch)
{
    ompi_osc_ucxx_acc_t a;
    ompi_osc_ucxx_hold_t h;
    bool lockfree, no_op = ompi_osc_ucxx_is_no_op(op);
    char *p;

    if ((!no_op && (origin_dt != dt || origin_count != count)) ||
        (fetch && (result_dt != dt || result_count != count)) || !fast_allowed(view, op, dt) ||
        NULL == (p = fast_target(view, &a, op, dt, fetch, target, disp, count, &h, &lockfree))) {
        return false;
    }
    if (lockfree) {
        /* (the native instruction inline; cpu_element, the general path's
         * entry, tries it first too) */
        if (!cpu_native(&a, p, origin_addr, fetch ? result_addr : NULL)) {
            cpu_element(&a, p, origin_addr, fetch ? result_addr : NULL);
        }
    } else if ((size_t) count * a.ext <= ompi_osc_ucxx_min(FEW_BYTES, OSC_UCXX.acc_hold)) {
        ompi_osc_ucxx_hold_elements(&h, &a, p, (size_t) count);
        ompi_osc_ucxx_acc_few(&a, p, no_op ? NULL : origin_addr, fetch ? result_addr : NULL,
                              (size_t) count);
        ompi_osc_ucxx_hold_release(&h);
    } else {
        contig_held(&a, &h, p, no_op ? NULL : origin_addr, fetch ? result_addr : NULL,
                    (size_t) count);
    }
    if (OPAL_UNLIKELY(ompi_osc_ucxx_audit_on) && 1 == count) {
        audit_fast(view, target, disp, lockfree);
    }
    return true;
}

/* MPI_Compare_and_swap; false: not here. */
static inline __opal_attribute_always_inline__ bool
cas_fast(ompi_osc_ucxx_view_t *view, const void *origin_addr, const void *compare_addr,
         void *result_addr, ompi_datatype_t *dt, int target, ptrdiff_t disp)
{
    ompi_op_t *replace = &ompi_mpi_op_replace.op;
    ompi_osc_ucxx_acc_t a;
    ompi_osc_ucxx_hold_t h;
    bool lockfree;
    char *p;

    if (!fast_allowed(view, replace, dt) ||
        NULL == (p = fast_target(view, &a, replace, dt, true, target, disp, 1, &h, &lockfree))) {
        return false;
    }
    cas_apply(&a, &h, p, lockfree, origin_addr, compare_addr, result_addr);
    if (OPAL_UNLIKELY(ompi_osc_ucxx_audit_on)) audit_fast(view, target, disp, lockfree);
    return true;
}

/* ------------------------------------------------------------------------- */
/* Entry points */

/* What acc_short leaves: acc_fast, else the general path.  (Out of line:
 * the entry points, compiled for three vector widths, share one copy, 21 KB
 * of code less, and reach it by a jump.) */
static __opal_attribute_noinline__ int
accumulate_rest(const void *origin_addr, int origin_count, struct ompi_datatype_t *origin_dt,
                int target, ptrdiff_t target_disp, int target_count,
                struct ompi_datatype_t *target_dt, struct ompi_op_t *op, struct ompi_win_t *win)
{
    if (acc_fast(OSC_UCXX_VIEW(win), origin_addr, origin_count, origin_dt, NULL, 0, NULL, target,
                 target_disp, target_count, target_dt, op, false)) {
        return OMPI_SUCCESS;
    }
    return ompi_osc_ucxx_acc(OSC_UCXX_VIEW(win), origin_addr, origin_count, origin_dt, NULL, 0,
                             NULL, target, target_disp, target_count, target_dt, op, false, NULL);
}

static __opal_attribute_noinline__ int
get_accumulate_rest(const void *origin_addr, int origin_count, struct ompi_datatype_t *origin_dt,
                    void *result_addr, int result_count, struct ompi_datatype_t *result_dt,
                    int target, ptrdiff_t target_disp, int target_count,
                    struct ompi_datatype_t *target_dt, struct ompi_op_t *op,
                    struct ompi_win_t *win)
{
    if (acc_fast(OSC_UCXX_VIEW(win), origin_addr, origin_count, origin_dt, result_addr,
                 result_count, result_dt, target, target_disp, target_count, target_dt, op,
                 true)) {
        return OMPI_SUCCESS;
    }
    return ompi_osc_ucxx_acc(OSC_UCXX_VIEW(win), origin_addr, origin_count, origin_dt,
                             result_addr, result_count, result_dt, target, target_disp,
                             target_count, target_dt, op, true, NULL);
}

/* MPI_Accumulate and MPI_Get_accumulate, compiled for `vw`-byte vectors. */
static inline __opal_attribute_always_inline__ int
accumulate_vw(const void *origin_addr, int origin_count, struct ompi_datatype_t *origin_dt,
              int target, ptrdiff_t target_disp, int target_count,
              struct ompi_datatype_t *target_dt, struct ompi_op_t *op, struct ompi_win_t *win,
              unsigned vw)
{
    if (origin_count == target_count && origin_dt == target_dt &&
        acc_short_count(OSC_UCXX_VIEW(win), origin_addr, NULL, target, target_disp,
                        target_count, target_dt, op, vw)) {
        return OMPI_SUCCESS;
    }
    return accumulate_rest(origin_addr, origin_count, origin_dt, target, target_disp,
                           target_count, target_dt, op, win);
}

static inline __opal_attribute_always_inline__ int
get_accumulate_vw(const void *origin_addr, int origin_count, struct ompi_datatype_t *origin_dt,
                  void *result_addr, int result_count, struct ompi_datatype_t *result_dt,
                  int target, ptrdiff_t target_disp, int target_count,
                  struct ompi_datatype_t *target_dt, struct ompi_op_t *op,
                  struct ompi_win_t *win, unsigned vw)
{
    if (origin_count == target_count && result_count == target_count &&
        origin_dt == target_dt && result_dt == target_dt &&
        acc_short_count(OSC_UCXX_VIEW(win), origin_addr, result_addr, target, target_disp,
                        target_count, target_dt, op, vw)) {
        return OMPI_SUCCESS;
    }
    return get_accumulate_rest(origin_addr, origin_count, origin_dt, result_addr, result_count,
                               result_dt, target, target_disp, target_count, target_dt, op,
                               win);
}

int ompi_osc_ucxx_accumulate(const void *origin_addr, int origin_count,
                             struct ompi_datatype_t *origin_dt, int target,
                             ptrdiff_t target_disp, int target_count,
                             struct ompi_datatype_t *target_dt, struct ompi_op_t *op,
                             struct ompi_win_t *win)
{
    return accumulate_vw(origin_addr, origin_count, origin_dt, target, target_disp,
                         target_count, target_dt, op, win, 16);
}

int ompi_osc_ucxx_get_accumulate(const void *origin_addr, int origin_count,
                                 struct ompi_datatype_t *origin_dt, void *result_addr,
                                 int result_count, struct ompi_datatype_t *result_dt,
                                 int target, ptrdiff_t target_disp, int target_count,
                                 struct ompi_datatype_t *target_dt, struct ompi_op_t *op,
                                 struct ompi_win_t *win)
{
    return get_accumulate_vw(origin_addr, origin_count, origin_dt, result_addr, result_count,
                             result_dt, target, target_disp, target_count, target_dt, op, win,
                             16);
}

/* The same two compiled for AVX2 and for AVX-512: sums of up to
 * OSC_UCXX_SHORT_WIDE_MAX bytes inline, 32 or 64 bytes an instruction, as
 * Open MPI's AVX op component adds them for osc/sm (a 512 B uint64 sum +
 * flush on a Zen 5 core: 35.7 ns through the kernels, 32.0 inline; 256 B:
 * 27.4 with 16-byte vectors, 25.0).  Everything they inline that is not a
 * sum compiles as in the baseline entry points. */
#if defined(__GNUC__) && !defined(__clang__) && defined(__x86_64__)
#define OSC_UCXX_ACC_WIDE(VW, TARGET)                                                          \
    __attribute__((target(TARGET))) static int accumulate_##VW(                                \
        const void *origin_addr, int origin_count, struct ompi_datatype_t *origin_dt,          \
        int target, ptrdiff_t target_disp, int target_count, struct ompi_datatype_t *target_dt, \
        struct ompi_op_t *op, struct ompi_win_t *win)                                          \
    {                                                                                          \
        return accumulate_vw(origin_addr, origin_count, origin_dt, target, target_disp,        \
                             target_count, target_dt, op, win, VW);                            \
    }                                                                                          \
    __attribute__((target(TARGET))) static int get_accumulate_##VW(                            \
        const void *origin_addr, int origin_count, struct ompi_datatype_t *origin_dt,          \
        void *result_addr, int result_count, struct ompi_datatype_t *result_dt, int target,    \
        ptrdiff_t target_disp, int target_count, struct ompi_datatype_t *target_dt,            \
        struct ompi_op_t *op, struct ompi_win_t *win)                                          \
    {                                                                                          \
        return get_accumulate_vw(origin_addr, origin_count, origin_dt, result_addr,            \
                                 result_count, result_dt, target, target_disp, target_count,   \
                                 target_dt, op, win, VW);                                      \
    }
OSC_UCXX_ACC_WIDE(32, "avx2")
OSC_UCXX_ACC_WIDE(64, "avx512f,avx512bw,avx512vl,avx512dq")
#undef OSC_UCXX_ACC_WIDE
#define OSC_UCXX_HAVE_WIDE 1
#endif

void ompi_osc_ucxx_acc_entries(ompi_osc_base_module_t *m)
{
#ifdef OSC_UCXX_HAVE_WIDE
    switch (OSC_UCXX.acc_vector_used) {
    case 64:
        m->osc_accumulate = accumulate_64;
        m->osc_get_accumulate = get_accumulate_64;
        return;
    case 32:
        m->osc_accumulate = accumulate_32;
        m->osc_get_accumulate = get_accumulate_32;
        return;
    default:
        break;
    }
#endif
    m->osc_accumulate = ompi_osc_ucxx_accumulate;
    m->osc_get_accumulate = ompi_osc_ucxx_get_accumulate;
}

int ompi_osc_ucxx_fetch_and_op(const void *origin_addr, void *result_addr,
                               struct ompi_datatype_t *dt, int target, ptrdiff_t target_disp,
                               struct ompi_op_t *op, struct ompi_win_t *win)
{
    if (acc_short(OSC_UCXX_VIEW(win), origin_addr, result_addr, target, target_disp, 1, dt, op,
                  16) ||
        acc_fast(OSC_UCXX_VIEW(win), origin_addr, 1, dt, result_addr, 1, dt, target, target_disp,
                 1, dt, op, true)) {
        return OMPI_SUCCESS;
    }
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

/* ------------------------------------------------------------------------- */
/* Compare-and-swap: one atomic under acc_single_intrinsic, else under the
 * exclusion (or by the target), like every accumulate on the element. */

static void cas_mapped(ompi_osc_ucxx_acc_t *a, bool lockfree, const void *origin_addr,
                       const void *compare_addr, void *result_addr)
{
    ompi_osc_ucxx_target_t *t = a->t;
    ompi_osc_ucxx_hold_t h;

    mapped_hold(a, &h);
    cas_apply(a, &h, (char *) (uintptr_t) (t->remote + t->path.delta), lockfree, origin_addr,
              compare_addr, result_addr);
}

static int cas(ompi_osc_ucxx_view_t *view, const void *origin_addr, const void *compare_addr,
               void *result_addr, struct ompi_datatype_t *dt, int target, ptrdiff_t target_disp)
{
    ompi_osc_ucxx_target_t t;
    ompi_osc_ucxx_acc_t a = {.t = &t, .op = &ompi_mpi_op_replace.op, .elem = dt, .fetch = true};
    bool cpu = false;
    int rc;

    if (OPAL_UNLIKELY(MPI_PROC_NULL == target)) return ompi_osc_ucxx_proc_null(view);
    rc = ompi_osc_ucxx_op_begin(view, target, target_disp, 1, dt, &t);
    if (OMPI_SUCCESS != rc) return rc;
    if (!ompi_datatype_is_predefined(dt)) return MPI_ERR_TYPE;
    rc = check_intrinsic(view);
    if (OMPI_SUCCESS != rc) return rc;
    ompi_osc_ucxx_acc_geometry(&a);
    if (OPAL_UNLIKELY(t.peer->access & OSC_UCXX_TGT_LAZY)) {
        rc = ompi_osc_ucxx_lazy_acc(&a, origin_addr, 1, dt, compare_addr, result_addr, 1, dt, 1,
                                    dt);
        if (OSC_UCXX_ISSUE != rc) return rc;
    }
    rc = ompi_osc_ucxx_op_resolve(&t, true);
    if (OMPI_SUCCESS != rc) return rc;

    /* (an element across two attached regions: the target applies it) */
    if (lock_free(&a, t.remote) && !t.path.split) {
        uint64_t reply = 0;
        cpu = cpu_atomic(&t, &rc);
        if (OMPI_SUCCESS != rc) return rc;
        if (!cpu && !t.path.split) {
            rc = order_before(&a, false);
            memcpy(&reply, origin_addr, a.esize);
            audit_single(t.module, t.rank, t.remote, OSC_UCXX_AUDIT_UCX);
            if (OMPI_SUCCESS == rc) {
                rc = ucx_atomic(&a, UCP_ATOMIC_OP_CSWAP, compare_addr, t.remote, &reply, true);
            }
            if (OMPI_SUCCESS == rc) memcpy(result_addr, &reply, a.esize);
            return rc;
        }
    }
    if (t.path.mapped) {
        audit_single(t.module, t.rank, t.remote, cpu ? OSC_UCXX_AUDIT_CPU : OSC_UCXX_AUDIT_STRIPE);
        rc = order_before(&a, false);
        if (OMPI_SUCCESS == rc) cas_mapped(&a, cpu, origin_addr, compare_addr, result_addr);
        return rc;
    }
    return acc_unmapped(&a, (void *) origin_addr, 1, dt, compare_addr, result_addr, 1, dt, 1,
                        dt);
}

int ompi_osc_ucxx_compare_and_swap(const void *origin_addr, const void *compare_addr,
                                   void *result_addr, struct ompi_datatype_t *dt, int target,
                                   ptrdiff_t target_disp, struct ompi_win_t *win)
{
    ompi_osc_ucxx_view_t *view = OSC_UCXX_VIEW(win);
    bool held;
    int rc;

    if (cas_short(view, origin_addr, compare_addr, result_addr, dt, target, target_disp) ||
        cas_fast(view, origin_addr, compare_addr, result_addr, dt, target, target_disp)) {
        return OMPI_SUCCESS;
    }
    held = ompi_osc_ucxx_dyn_serial_enter(view->core);
    rc = cas(view, origin_addr, compare_addr, result_addr, dt, target, target_disp);
    ompi_osc_ucxx_dyn_serial_leave(view->core, held);
    return rc;
}
