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

/* Resolve the path to the target bytes [lo, hi) (remote addresses).  Here,
 * with the prologue, not with the links (osc_ucxx_target.h): a dynamic
 * window's path may need the region lookup (osc_ucxx_dynamic.c). */
static inline int ompi_osc_ucxx_resolve(ompi_osc_ucxx_module_t *module,
                                        ompi_osc_ucxx_worker_t *worker, int target,
                                        uint64_t lo, uint64_t hi, ompi_osc_ucxx_path_t *path)
{
    ompi_osc_ucxx_peer_t *peer = &module->peers[target];
    char *direct;

    if (MPI_WIN_FLAVOR_DYNAMIC == module->flavor) {
        ompi_osc_ucxx_link_t *link;
        ompi_osc_ucxx_dyncache_t *c;
        if (ompi_osc_ucxx_dyntab_serves(module, target)) {
            /* (a peer on the node: its region table, no link) */
            int rc = ompi_osc_ucxx_dyntab_resolve(module, target, lo, hi, path);
            if (OMPI_ERR_NOT_AVAILABLE != rc) return rc;
        }
        /* (our own regions need no link: dyn_resolve checks them directly) */
        link = target == module->rank ? NULL : ompi_osc_ucxx_link(module, worker, target);
        c = NULL == link ? NULL : link->dyn;
        if (OPAL_LIKELY(ompi_osc_ucxx_dyn_hot(c, lo, hi))) {
            /* the region used last, still attached: no lookup */
            path->mapped = path->split = path->partial = false;
            path->cma = peer->cma;
            path->link = link;
            path->rkey = c->hot_rkey;
            return OMPI_SUCCESS;
        }
        return ompi_osc_ucxx_dyn_resolve(module, worker, target, lo, hi, path);
    }
    direct = ompi_osc_ucxx_direct(module, target);
    path->partial = false;
    path->split = false;
    path->cma = 0;
    if (OPAL_LIKELY(NULL != direct)) {
        path->mapped = true;
        path->delta = (intptr_t) direct - (intptr_t) ompi_osc_ucxx_peer_base(module, target);
        return OMPI_SUCCESS;
    }
    path->mapped = false;
    path->link = NULL;
    path->rkey = NULL;
    path->cma = peer->cma;
    if (0 != path->cma) {
        return OMPI_SUCCESS;  /* (no link: ompi_osc_ucxx_path_ucx if the kernel refuses) */
    }
    return ompi_osc_ucxx_path_ucx(module, worker, target, path);
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
    uint64_t offset, peer_size;

    if (dt != origin_dt || count != origin_count || count <= 0 || disp < 0 ||
        !ompi_datatype_is_predefined(dt) || !ompi_datatype_is_contiguous_memory_layout(dt, count) ||
        (unsigned) target >= (unsigned) module->size || target == module->rank ||
        MPI_WIN_FLAVOR_DYNAMIC == module->flavor ||   /* (peers' regions are never mapped) */
        (!whole && view->ordered) || OSC_UCXX_IN_HANDLER() ||
        (whole && module->am_outstanding > 0)) {
        return NULL;
    }
    peer = &module->peers[target];
    *size = dt->super.size * (size_t) count;
    if (__builtin_mul_overflow((uint64_t) disp, (uint64_t) ompi_osc_ucxx_peer_disp(module, target),
                               &offset) ||
        0 == *size) {
        return NULL;  /* (the general path reports it) */
    }
    /* The target opens here too (first access in a lock_all or fence
     * epoch): through the general path, the opening thread would also take
     * a UCX worker, which a mapped copy never needs (creating one costs
     * milliseconds: RMA-MT's epochs each paid it once, in whichever thread
     * opened them, until every thread had one).  The first access to the
     * peer on this window maps it knowing which bytes it (and a lock_all's
     * lock) touches. */
    if (OPAL_UNLIKELY(!(peer->access & OSC_UCXX_TGT_READY))) {
        if (!peer->resolved) {
            ompi_osc_ucxx_peer_resolve_at(module, target, offset,
                                          ompi_osc_ucxx_epoch_locks_on_open(module));
        }
        if (OMPI_SUCCESS != ompi_osc_ucxx_epoch_open_target(module, target)) {
            return NULL;
        }
    }
    peer_size = ompi_osc_ucxx_peer_size(module, target);
    if (NULL == ompi_osc_ucxx_direct(module, target) || offset > peer_size ||
        *size > peer_size - offset) {
        return NULL;  /* (not mapped) */
    }
    return peer->direct_data + offset;
}

END_C_DECLS

#endif /* OMPI_OSC_UCXX_OP_H */
