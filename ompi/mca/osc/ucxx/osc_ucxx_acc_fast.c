/*
 * Copyright (c) 2026 The osc/ucxx authors. All rights reserved.
 * $COPYRIGHT$
 *
 * The accumulate family's MPI entry points (accumulate, get_accumulate,
 * fetch_and_op, compare_and_swap and the request-based forms, compiled per
 * vector width), and the mapped path they try first: elements of one
 * predefined type to a peer's memory mapped here whole, applied at once
 * under the target's exclusion.  Everything else goes to the general path
 * (osc_ucxx_accumulate.c, whose header says how atomicity is kept).
 */

#include "ompi_config.h"

#include "osc_ucxx_request.h"
#include "osc_ucxx_acc_element.h"
#include "osc_ucxx.h"

/* ------------------------------------------------------------------------- */
/* The mapped path: elements of one predefined type, the same type and count
 * on every side, to a peer's memory mapped here whole, in an epoch that
 * opened it (ompi_osc_ucxx_mapped_access): applied at once, as the general
 * path would apply them, without its prologue (epoch check, range, worker,
 * path, decisions), which costs more than the exclusion and the arithmetic
 * of a short accumulate together.  Everything else, and every error, takes
 * the general path. */

/* Would the general path apply it here at once, with nothing to wait for or
 * to report first?  (Ordered accumulates: no UCX atomic of this thread's
 * unfenced; the mapped access checks that no message of ours is on its
 * way.  An asserted-intrinsic window that needs serving reports
 * MPI_ERR_OP.) */
static inline bool fast_allowed(ompi_osc_ucxx_view_t *view, ompi_op_t *op, ompi_datatype_t *dt)
{
    ompi_osc_ucxx_worker_t *w;

    if (view->ordered || !ompi_datatype_is_predefined(dt) || !ompi_osc_ucxx_acc_op_defined(op, dt) ||
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
    ompi_osc_ucxx_acc_audit_single(view->core, target, offset,
                 lockfree ? OSC_UCXX_AUDIT_CPU : OSC_UCXX_AUDIT_STRIPE);
}

/* short_target's peer, where its checks are fewest: a peer whose window
 * memory and state are wholly mapped here (ompi_osc_ucxx_peer_t::whole,
 * known from its first use), in an epoch on it, with nothing of ours
 * between (mapped_access's conditions for such a peer).  NULL: not that
 * case, short_target checks it all.  (One peer pointer and no flavor,
 * edge or mapping tests: fewer instructions than through
 * ompi_osc_ucxx_mapped_access.) */
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

/* Runs up to this long take their stripes at once (cheaper than
 * ompi_osc_ucxx_acc_contig_held's moving span and a kernel call); longer ones hold a moving
 * span. */
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
 * of line: its descriptor on acc_short's stack slowed single elements). */
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
 * here (runs up to a few KiB are faster here than through acc_fast).
 * `vw`: the vector bytes of the calling entry point
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
 * loops and mask fold away, which the general count's cannot. */
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
        /* (the native instruction inline; ompi_osc_ucxx_acc_cpu_element, the general path's
         * entry, tries it first too) */
        if (!ompi_osc_ucxx_acc_cpu_native(&a, p, origin_addr, fetch ? result_addr : NULL)) {
            ompi_osc_ucxx_acc_cpu_element(&a, p, origin_addr, fetch ? result_addr : NULL);
        }
    } else if ((size_t) count * a.ext <= ompi_osc_ucxx_min(FEW_BYTES, OSC_UCXX.acc_hold)) {
        ompi_osc_ucxx_hold_elements(&h, &a, p, (size_t) count);
        ompi_osc_ucxx_acc_few(&a, p, no_op ? NULL : origin_addr, fetch ? result_addr : NULL,
                              (size_t) count);
        ompi_osc_ucxx_hold_release(&h);
    } else {
        ompi_osc_ucxx_acc_contig_held(&a, &h, p, no_op ? NULL : origin_addr, fetch ? result_addr : NULL,
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
    ompi_osc_ucxx_acc_cas_apply(&a, &h, p, lockfree, origin_addr, compare_addr, result_addr);
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
 * Open MPI's AVX op component adds them for osc/sm.  Everything they
 * inline that is not a sum compiles as in the baseline entry points. */
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
    rc = ompi_osc_ucxx_cas(view, origin_addr, compare_addr, result_addr, dt, target, target_disp);
    ompi_osc_ucxx_dyn_serial_leave(view->core, held);
    return rc;
}
