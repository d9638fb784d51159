/*
 * Copyright (c) 2026 The osc/ucxx authors. All rights reserved.
 * $COPYRIGHT$
 *
 * The accumulate family's general path: the decisions, and the paths that
 * run at the origin (the MPI entry points and the mapped path that they try
 * first are in osc_ucxx_acc_fast.c; one element's atomics are in
 * osc_ucxx_acc_element.h).
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
#include "osc_ucxx_lockq.h"
#include "osc_ucxx_dynamic.h"
#include "osc_ucxx_acc_element.h"
#include "osc_ucxx.h"

/* The predefined type a (possibly derived) datatype is built from. */
static ompi_datatype_t *element_type(ompi_datatype_t *dt)
{
    if (ompi_datatype_is_predefined(dt)) {
        return dt;
    }
    return ompi_datatype_get_single_predefined_type_from_args(dt);
}

/* ------------------------------------------------------------------------- */
/* acc_single_intrinsic: one atomic per single element, no exclusion */

/* new = origin (op) old, for one element of at most 8 bytes. */
static void combine(const ompi_osc_ucxx_acc_t *a, const void *origin, const void *old, void *out)
{
    memcpy(out, old, a->esize);
    ompi_osc_ucxx_acc_run(a, out, origin, NULL, 1);
}

/* One CPU atomic (a compare-and-swap loop where no instruction is the op). */
void ompi_osc_ucxx_acc_cpu_element(const ompi_osc_ucxx_acc_t *a, char *tgt, const char *origin,
                                   char *result)
{
    uint64_t old = 0, nv = 0;
    bool wide = 8 == a->esize;

    if (ompi_osc_ucxx_acc_cpu_native(a, tgt, origin, result)) return;

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
    ompi_osc_ucxx_link_held(t->path.link, sp);
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

    if (ompi_osc_ucxx_acc_native_atomic(a->op, a->elem, NULL != result, &uop)) {
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
    ompi_osc_ucxx_hold_init(h, ompi_osc_ucxx_direct_state(t->module, t->rank),
                            ompi_osc_ucxx_peer_acc_shift(t->module, t->rank),
                            (char *) (uintptr_t) (ompi_osc_ucxx_peer_base(t->module, t->rank) +
                                                  t->path.delta),
                            (char *) (uintptr_t) (t->hi + t->path.delta));
}

/* Predefined types on every side: one run each, no layout walk, under the
 * exclusion `h` (set up, nothing held yet). */
void ompi_osc_ucxx_acc_contig_held(ompi_osc_ucxx_acc_t *a, ompi_osc_ucxx_hold_t *h, char *tgt,
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
    ompi_osc_ucxx_acc_contig_held(a, &h, tgt, origin, result, n);
}

/* The element at `tgt` (mapped here): one CPU compare-and-swap where it
 * may be lock-free, else under the exclusion `h` (set up, nothing held). */
void ompi_osc_ucxx_acc_cas_apply(ompi_osc_ucxx_acc_t *a, ompi_osc_ucxx_hold_t *h, char *tgt,
                                 bool lockfree, const void *origin_addr,
                                 const void *compare_addr, void *result_addr)
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
         * it are completed first (nothing to do when none is outstanding,
         * or no link was made: a path by cross-memory attach; nor for a
         * lock release, which changes no window memory) */
        ompi_osc_ucxx_link_t *link = NULL != t->path.link
                                         ? t->path.link
                                         : ompi_osc_ucxx_link_made(t->module, t->worker, t->rank);
        return NULL == link || ompi_osc_ucxx_link_release_only(link)
                   ? OMPI_SUCCESS
                   : ompi_osc_ucxx_flush_link(t->module, t->worker, link);
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
    if (NULL == a->elem || !ompi_osc_ucxx_acc_op_defined(op, a->elem) ||
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
 * peers, but where the peer's region table answered).  *rc: no route, or
 * dynamic memory spread over regions attached back to back (*split: the
 * message path, as the peers take). */
static bool cpu_atomic(ompi_osc_ucxx_target_t *t, int *rc)
{
    ompi_osc_ucxx_module_t *module = t->module;

    *rc = OMPI_SUCCESS;
    if (OSC_UCXX_SINGLE_CPU == module->single_kind) {
        if (t->path.mapped) return true;
        *rc = OSC_UCXX_ERR_UNMAPPED;  /* (all map all, but this mapping failed) */
        return false;
    }
    if (MPI_WIN_FLAVOR_DYNAMIC == module->flavor) {
        if (t->rank == module->rank) {
            *rc = ompi_osc_ucxx_dyn_resolve_self(module, t->worker, t->lo, t->hi, &t->path);
        } else if (NULL == t->path.link) {
            /* (found in the peer's region table, osc_ucxx_dyntab.c: the
             * region's rkey, from the peer) */
            *rc = ompi_osc_ucxx_dyn_resolve(module, t->worker, t->rank, t->lo, t->hi, &t->path);
        }
    } else if (t->path.mapped || NULL == t->path.link) {
        /* (wholly mapped, or reached by cross-memory attach: no link resolved) */
        t->path.link = ompi_osc_ucxx_link(module, t->worker, t->rank);
        if (NULL == t->path.link) *rc = OMPI_ERR_UNREACH;
        else t->path.rkey = ompi_osc_ucxx_link_data_rkey(module, t->path.link, t->rank);
    }
    return false;
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
            ompi_osc_ucxx_acc_audit_single(t->module, t->rank, t->remote, OSC_UCXX_AUDIT_CPU);
            ompi_osc_ucxx_acc_cpu_element(a, tgt, origin, result);
            return OMPI_SUCCESS;
        }
        if (OMPI_SUCCESS != rc) return rc;
        if (!t->path.split) {
            ompi_osc_ucxx_acc_audit_single(t->module, t->rank, t->remote, OSC_UCXX_AUDIT_UCX);
            return ucx_element(a, t->remote, origin, result);
        }
        /* (our own element across two attached regions: under the stripes
         * here, as the peers' messages for it are applied) */
    }
    if (1 == n && t->path.mapped) {
        ompi_osc_ucxx_acc_audit_single(t->module, t->rank, t->remote, OSC_UCXX_AUDIT_STRIPE);
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

/* A dynamic window's target whose detach generation is not known since
 * the last synchronization: the access goes as a message (the path's
 * message route) that the target checks and applies under its stripes, as
 * every element of this window is changed, instead of waiting for that
 * generation; the caller then starts reading it (dyn_read_ahead). */
static bool at_target(ompi_osc_ucxx_target_t *t, size_t bytes)
{
    if (OSC_UCXX_SINGLE_STRIPES != t->view->single_kind ||
        !ompi_osc_ucxx_dyn_by_message(t, bytes)) {
        return false;
    }
    memset(&t->path, 0, sizeof(t->path));
    return true;
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
    if (OPAL_UNLIKELY(MPI_WIN_FLAVOR_DYNAMIC == t.module->flavor) && NULL == req &&
        at_target(&t, (size_t) target_count * target_dt->super.size)) {
        rc = acc_unmapped(&a, (void *) origin_addr, origin_count, origin_dt, NULL, result_addr,
                          result_count, result_dt, target_count, target_dt);
        ompi_osc_ucxx_dyn_read_ahead(t.module, t.worker, target);
        return rc;
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
/* Compare-and-swap: one atomic under acc_single_intrinsic, else under the
 * exclusion (or by the target), like every accumulate on the element. */

static void cas_mapped(ompi_osc_ucxx_acc_t *a, bool lockfree, const void *origin_addr,
                       const void *compare_addr, void *result_addr)
{
    ompi_osc_ucxx_target_t *t = a->t;
    ompi_osc_ucxx_hold_t h;

    mapped_hold(a, &h);
    ompi_osc_ucxx_acc_cas_apply(a, &h, (char *) (uintptr_t) (t->remote + t->path.delta), lockfree, origin_addr,
              compare_addr, result_addr);
}

int ompi_osc_ucxx_cas(ompi_osc_ucxx_view_t *view, const void *origin_addr,
                      const void *compare_addr, void *result_addr, struct ompi_datatype_t *dt,
                      int target, ptrdiff_t target_disp)
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
    if (OPAL_UNLIKELY(MPI_WIN_FLAVOR_DYNAMIC == t.module->flavor) &&
        at_target(&t, dt->super.size)) {
        rc = acc_unmapped(&a, (void *) origin_addr, 1, dt, compare_addr, result_addr, 1, dt, 1,
                          dt);
        ompi_osc_ucxx_dyn_read_ahead(t.module, t.worker, target);
        return rc;
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
            ompi_osc_ucxx_acc_audit_single(t.module, t.rank, t.remote, OSC_UCXX_AUDIT_UCX);
            if (OMPI_SUCCESS == rc) {
                rc = ucx_atomic(&a, UCP_ATOMIC_OP_CSWAP, compare_addr, t.remote, &reply, true);
            }
            if (OMPI_SUCCESS == rc) memcpy(result_addr, &reply, a.esize);
            return rc;
        }
    }
    if (t.path.mapped) {
        ompi_osc_ucxx_acc_audit_single(t.module, t.rank, t.remote, cpu ? OSC_UCXX_AUDIT_CPU : OSC_UCXX_AUDIT_STRIPE);
        rc = order_before(&a, false);
        if (OMPI_SUCCESS == rc) cas_mapped(&a, cpu, origin_addr, compare_addr, result_addr);
        return rc;
    }
    return acc_unmapped(&a, (void *) origin_addr, 1, dt, compare_addr, result_addr, 1, dt, 1,
                        dt);
}
