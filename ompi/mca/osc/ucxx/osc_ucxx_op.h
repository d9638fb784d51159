/*
 * Copyright (c) 2026 The osc/ucxx authors. All rights reserved.
 * $COPYRIGHT$
 *
 * The prologue every RMA operation shares (put, get, the accumulate family,
 * compare-and-swap; their request-based forms): (view, rank) becomes a
 * target object once, and only that object travels further.
 *   1. a process polling its own window keeps serving peers that reach it
 *      through UCX emulation or messages;
 *   2. the epoch allows this target (one load in steady state);
 *   3. the access is inside the target's window (or memory handle);
 * then, unless the operation turns out to move nothing,
 *   4. the calling thread's worker (or the view's ordered one) and the path
 *      to the target bytes: mapped, or link + rkey.
 */

#ifndef OMPI_OSC_UCXX_OP_H
#define OMPI_OSC_UCXX_OP_H

#include "ompi/datatype/ompi_datatype.h"

#include "osc_ucxx_epoch.h"

BEGIN_C_DECLS

/* An operation naming MPI_PROC_NULL (Open MPI 4.1's bindings return before
 * the component for most): nothing to do, in any access epoch. */
static inline int ompi_osc_ucxx_proc_null(ompi_osc_ucxx_view_t *view)
{
    OSC_UCXX_NOT_IN_HANDLER();
    return ompi_osc_ucxx_epoch_any(view->core) ? OMPI_SUCCESS : OMPI_ERR_RMA_SYNC;
}

/* Step 3: is [disp, disp + count elements of dt) inside the target's
 * window?  Sets the remote address of displacement `disp` (t->remote) and
 * the remote bytes the access touches, [t->lo, t->hi).  An access of no
 * bytes is in range wherever it points; dynamic windows are checked against
 * the attached regions when the path is resolved.  Inline: every operation
 * runs it. */
static inline int ompi_osc_ucxx_window_range(ompi_osc_ucxx_target_t *t, ptrdiff_t disp,
                                            int count, struct ompi_datatype_t *dt)
{
    ompi_osc_ucxx_peer_t *peer = t->peer;
    ptrdiff_t lb, extent, true_lb, true_extent, first, end, offset;

    if (OPAL_UNLIKELY(__builtin_mul_overflow(disp, (ptrdiff_t) peer->disp_unit, &offset))) {
        return OMPI_ERR_RMA_RANGE;  /* (wrapped, it would land inside the window) */
    }
    t->remote = peer->base + offset;
    t->lo = t->hi = t->remote;
    if (0 == count || 0 == dt->super.size) {
        return OMPI_SUCCESS;   /* moves nothing: MPI makes it a no-op */
    }
    ompi_datatype_get_extent(dt, &lb, &extent);
    ompi_datatype_get_true_extent(dt, &true_lb, &true_extent);
    first = offset + true_lb + (extent < 0 ? (count - 1) * extent : 0);
    end = offset + true_lb + true_extent + (extent > 0 ? (count - 1) * extent : 0);
    t->lo = peer->base + first;
    t->hi = peer->base + end;
    if (MPI_WIN_FLAVOR_DYNAMIC == t->module->flavor) {
        return OMPI_SUCCESS;
    }
    if (OPAL_UNLIKELY(disp < 0 || first < 0 || end > (ptrdiff_t) peer->size)) {
        OSC_UCXX_VERBOSE(20, "window %u: access [%td, %td) outside rank %d's %" PRIu64
                         " bytes", t->module->cid, first, end, t->rank, peer->size);
        return OMPI_ERR_RMA_RANGE;
    }
    return OMPI_SUCCESS;
}

/* ... through a memory-handle view (osc_ucxx_target.c). */
int ompi_osc_ucxx_memhandle_range(ompi_osc_ucxx_target_t *t, ptrdiff_t disp, int count,
                                  struct ompi_datatype_t *dt);

static inline int ompi_osc_ucxx_op_begin(ompi_osc_ucxx_view_t *view, int rank, ptrdiff_t disp,
                                         int count, struct ompi_datatype_t *dt,
                                         ompi_osc_ucxx_target_t *t)
{
    ompi_osc_ucxx_module_t *module = view->core;
    int rc;

    OSC_UCXX_NOT_IN_HANDLER();
    if (rank == module->rank) {
        ompi_osc_ucxx_serve(module);
    }
    rc = ompi_osc_ucxx_epoch_check(module, rank);
    if (OPAL_UNLIKELY(OMPI_SUCCESS != rc)) {
        return rc;
    }
    t->module = module;
    t->view = view;
    t->rank = rank;
    t->peer = &module->peers[rank];
    if (OPAL_LIKELY(!view->memhandle)) {
        return ompi_osc_ucxx_window_range(t, disp, count, dt);
    }
    return ompi_osc_ucxx_memhandle_range(t, disp, count, dt);
}

/* Step 4.  `whole`: every element of the access takes one path, so memory
 * that is only partly mapped goes all through UCX (accumulates: one atomic
 * path per element; ordered views: one ordered stream per target). */
static inline int ompi_osc_ucxx_op_resolve(ompi_osc_ucxx_target_t *t, bool whole)
{
    int rc;

    t->worker = ompi_osc_ucxx_view_worker(t->view);
    if (OPAL_UNLIKELY(NULL == t->worker)) {
        return OMPI_ERR_OUT_OF_RESOURCE;
    }
    rc = ompi_osc_ucxx_resolve(t->module, t->worker, t->rank, t->lo, t->hi, &t->path);
    if (OPAL_UNLIKELY(OMPI_SUCCESS != rc)) {
        return rc;  /* (the path is not set) */
    }
    if (OPAL_UNLIKELY(t->path.partial && (whole || t->view->ordered))) {
        t->path.mapped = false;
    }
    return rc;
}

/* ------------------------------------------------------------------------- */
/* The mapped path: the few loads that replace steps 2-4 where the target
 * bytes are mapped here (put, get and the accumulate family) */

/* An operation on `count` elements of one predefined type, the same on both
 * sides (put, get, the accumulate family), to bytes of a peer's window that
 * are mapped here, in an epoch that already opened it: the mapped address of
 * the access, found with a few loads before the general path (which reports
 * every error, and takes everything else: our own window, derived types,
 * zero bytes, memory not mapped, dynamic windows).
 * These checks were what separated a small put or get (OSU put_bw /
 * get_bw) from osc/sm's, which checks none of this.
 *
 * `whole`: only where the target's memory is mapped whole (partly mapped
 * memory keeps all its operations on one path: one ordered UCX stream, one
 * kind of atomic per element) and no message of ours (accumulate, active
 * message) is still on its way.  Ordered windows (mpi_win_order) ask it,
 * where the general path would copy as well: a store or load here then
 * comes after every earlier one, as x86 keeps stores in order (through the
 * general path an ordered small put cost nearly twice a plain window's);
 * so do accumulates.  Plain windows' put and get do
 * not, and refuse ordered views.  `whole` is a constant in each caller:
 * plain puts run the code they ran before the others came here (checks
 * made at run time in one function slowed plain puts measurably, even
 * with view->ordered tested first). */
static inline __opal_attribute_always_inline__ char *
ompi_osc_ucxx_mapped_access(ompi_osc_ucxx_view_t *view, bool whole, int target, ptrdiff_t disp,
                            int count, struct ompi_datatype_t *dt, int origin_count,
                            struct ompi_datatype_t *origin_dt, size_t *size)
{
    ompi_osc_ucxx_module_t *module = view->core;
    ompi_osc_ucxx_peer_t *peer;
    uint64_t offset;

    if (dt != origin_dt || count != origin_count || count <= 0 || disp < 0 ||
        !ompi_datatype_is_predefined(dt) || !ompi_datatype_is_contiguous_memory_layout(dt, count) ||
        (unsigned) target >= (unsigned) module->size || target == module->rank ||
        MPI_WIN_FLAVOR_DYNAMIC == module->flavor ||   /* (peers' regions are never mapped) */
        (!whole && view->ordered) || OSC_UCXX_IN_HANDLER() ||
        (whole && module->am_outstanding > 0)) {
        return NULL;
    }
    peer = &module->peers[target];
    /* The target opens here too (first access in a lock_all or fence
     * epoch): through the general path, the opening thread would also take
     * a UCX worker, which a mapped copy never needs (creating one costs
     * milliseconds: RMA-MT's epochs each paid it once, in whichever thread
     * opened them, until every thread had one). */
    if (OPAL_UNLIKELY(!(peer->access & OSC_UCXX_TGT_READY)) &&
        OMPI_SUCCESS != ompi_osc_ucxx_epoch_open_target(module, target)) {
        return NULL;  /* (the general path reports it) */
    }
    *size = dt->super.size * (size_t) count;
    if (__builtin_mul_overflow((uint64_t) disp, (uint64_t) peer->disp_unit, &offset) ||
        0 == *size) {
        return NULL;
    }
    if (whole && UINT64_MAX != peer->direct_hi) {
        return NULL;  /* (partly mapped) */
    }
    if (NULL == ompi_osc_ucxx_direct(module, target) || offset > peer->size ||
        *size > peer->size - offset || peer->base + offset < peer->direct_lo ||
        peer->base + offset + *size > peer->direct_hi) {
        return NULL;  /* (not mapped, or only in part) */
    }
    return peer->direct_data + offset;
}

END_C_DECLS

#endif /* OMPI_OSC_UCXX_OP_H */
