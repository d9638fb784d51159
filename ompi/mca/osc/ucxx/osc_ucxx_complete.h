/*
 * Copyright (c) 2026 The osc/ucxx authors. All rights reserved.
 * $COPYRIGHT$
 *
 * Completion: what every operation and synchronization waits for
 * (osc_ucxx_complete.c has the protocol).  Below the operations and the
 * synchronizations, which all use it.
 */

#ifndef OMPI_OSC_UCXX_COMPLETE_H
#define OMPI_OSC_UCXX_COMPLETE_H

#include "osc_ucxx_state.h"

BEGIN_C_DECLS

/* Complete this process's operations on the window (to `target`, or to all
 * when target < 0), from every worker or only `only`'s. */
int ompi_osc_ucxx_flush_module(ompi_osc_ucxx_module_t *module, int target,
                               ompi_osc_ucxx_worker_t *only);
/* Complete the UCX operations on one link (not the active messages). */
int ompi_osc_ucxx_flush_link(ompi_osc_ucxx_module_t *module, ompi_osc_ucxx_worker_t *worker,
                             ompi_osc_ucxx_link_t *link);
/* Later operations on WORKER to LINK's target land after earlier ones. */
int ompi_osc_ucxx_fence_link(ompi_osc_ucxx_module_t *module, ompi_osc_ucxx_worker_t *worker,
                             ompi_osc_ucxx_link_t *link);
/* Would a fence on `worker` order everything this process has outstanding
 * to `target` before what it sends there next (UCX operations on its link
 * only, and UCX's fence weak)? */
bool ompi_osc_ucxx_fence_covers(ompi_osc_ucxx_module_t *module, ompi_osc_ucxx_worker_t *worker,
                                int target);
/* flush_module's work when something is outstanding (not inline: its frame
 * holds an array of flush requests). */
int ompi_osc_ucxx_flush_links(ompi_osc_ucxx_module_t *module, int target,
                              ompi_osc_ucxx_worker_t *only);

/* Nothing to wait for on `target` (every target: -1): no UCX operation of
 * any worker (or of `only`) since its last flush, no accumulate message
 * unacknowledged, no error to report, nobody to serve, no AM grant to give
 * back.  Then the flush is the barrier alone, as on osc/sm: the common case
 * on a node, where puts and gets are loads and stores.  For every target a
 * row's summary entry decides; it is marked flushed only by a flush of
 * every target, so after single-target flushes it may call a quiet row busy
 * (ompi_osc_ucxx_flush_links then finds nothing to do), never the
 * reverse. */
static inline bool ompi_osc_ucxx_flush_quiet(ompi_osc_ucxx_module_t *module, int target,
                                             ompi_osc_ucxx_worker_t *only)
{
    ompi_osc_ucxx_ltab_t *tab = module->ltab;
    int rows = tab->used;

    if (module->am_outstanding > 0 || OMPI_SUCCESS != module->am_error ||
        ompi_osc_ucxx_serve_wanted(module) || (NULL != module->uam && module->am_interleave)) {
        return false;
    }
    opal_atomic_rmb();  /* rows below `used` were stored before it */
    for (int w = 0; w < rows; ++w) {
        ompi_osc_ucxx_lrow_t *r = tab->rows[w];
        ompi_osc_ucxx_link_t *link;
        if (NULL == r || (NULL != only && w != only->index)) continue;
        link = target < 0 ? &r->sum : ompi_osc_ucxx_row_link(r, target);
        if (NULL != link && link->issued != link->flushed) return false;
    }
    return true;
}

/* The quiet case first, inline in the callers that flush on every call
 * (flush, unlock), outside flush_links's frame.  `released`: the caller's
 * next step is a CPU atomic with release order on the target (its lock
 * word), which orders our loads and stores through mappings before anyone
 * can see it, as the barrier would (on x86 both are one locked
 * instruction). */
static inline int ompi_osc_ucxx_flush_before(ompi_osc_ucxx_module_t *module, int target,
                                             ompi_osc_ucxx_worker_t *only, bool released)
{
    ompi_osc_ucxx_dyn_synced(module);
    if (ompi_osc_ucxx_flush_quiet(module, target, only)) {
        if (!released) {
            opal_atomic_mb();  /* stores through mappings are complete once visible */
        }
        return OMPI_SUCCESS;
    }
    return ompi_osc_ucxx_flush_links(module, target, only);
}

END_C_DECLS

#endif /* OMPI_OSC_UCXX_COMPLETE_H */
