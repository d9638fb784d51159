/*
 * Copyright (c) 2026 The osc/ucxx authors. All rights reserved.
 * $COPYRIGHT$
 *
 * osc/ucxx: MPI one-sided communication over UCX with per-thread workers.
 *
 * The top layer: the osc entry points the module table names (osc_ucxx_component.c),
 * grouped by the file that implements them, and the few calls one concern
 * makes into another.  The layers below are listed in osc_ucxx_types.h.
 *
 * Object model (who owns what):
 *   component  - one UCP context per process, the workers, the peer worker
 *                addresses (exchanged once per peer, not per window) and the
 *                table of windows by communicator id (for active messages).
 *   worker     - a UCP worker used by one thread at a time.
 *   core       - one window: memory, state segment, peers, links, epochs
 *                (ompi_osc_ucxx_module_t); views are its MPI_Win handles.
 *   peer, link - what we know of each peer, and (worker, window, peer)
 *                endpoint + rkeys, created lazily.
 *   epoch      - the access epoch in force and the targets it opened.
 *   target     - one operation's (view, rank) resolved once.
 */

#ifndef OMPI_OSC_UCXX_H
#define OMPI_OSC_UCXX_H

#include "osc_ucxx_epoch.h"
#include "osc_ucxx_complete.h"
#include "osc_ucxx_request.h"

BEGIN_C_DECLS

/* Put and get (osc_ucxx_comm.c) */
int ompi_osc_ucxx_put(const void *origin_addr, int origin_count,
                      struct ompi_datatype_t *origin_dt, int target, ptrdiff_t target_disp,
                      int target_count, struct ompi_datatype_t *target_dt,
                      struct ompi_win_t *win);
int ompi_osc_ucxx_get(void *origin_addr, int origin_count, struct ompi_datatype_t *origin_dt,
                      int target, ptrdiff_t target_disp, int target_count,
                      struct ompi_datatype_t *target_dt, struct ompi_win_t *win);
int ompi_osc_ucxx_rput(const void *origin_addr, int origin_count,
                       struct ompi_datatype_t *origin_dt, int target, ptrdiff_t target_disp,
                       int target_count, struct ompi_datatype_t *target_dt,
                       struct ompi_win_t *win, struct ompi_request_t **request);
int ompi_osc_ucxx_rget(void *origin_addr, int origin_count, struct ompi_datatype_t *origin_dt,
                       int target, ptrdiff_t target_disp, int target_count,
                       struct ompi_datatype_t *target_dt, struct ompi_win_t *win,
                       struct ompi_request_t **request);
/* The data path with a view's settings (R*, Rr* and the plain calls) */
int ompi_osc_ucxx_put_get(ompi_osc_ucxx_view_t *view, bool is_put, void *origin_addr,
                          int origin_count, struct ompi_datatype_t *origin_dt, int target,
                          ptrdiff_t target_disp, int target_count,
                          struct ompi_datatype_t *target_dt, ompi_osc_ucxx_request_t *req);

/* Accumulates (osc_ucxx_accumulate.c) */
int ompi_osc_ucxx_acc(ompi_osc_ucxx_view_t *view, const void *origin_addr, int origin_count,
                      struct ompi_datatype_t *origin_dt, void *result_addr, int result_count,
                      struct ompi_datatype_t *result_dt, int target, ptrdiff_t target_disp,
                      int target_count, struct ompi_datatype_t *target_dt,
                      struct ompi_op_t *op, bool fetch, ompi_osc_ucxx_request_t *req);
bool ompi_osc_ucxx_intrinsic(ompi_osc_ucxx_module_t *module);
/* MPI_Accumulate and MPI_Get_accumulate of a new handle: the entry points
 * compiled for OSC_UCXX.acc_vector_used-byte vectors. */
void ompi_osc_ucxx_acc_entries(ompi_osc_base_module_t *m);
int ompi_osc_ucxx_accumulate(const void *origin_addr, int origin_count,
                             struct ompi_datatype_t *origin_dt, int target,
                             ptrdiff_t target_disp, int target_count,
                             struct ompi_datatype_t *target_dt, struct ompi_op_t *op,
                             struct ompi_win_t *win);
int ompi_osc_ucxx_compare_and_swap(const void *origin_addr, const void *compare_addr,
                                   void *result_addr, struct ompi_datatype_t *dt, int target,
                                   ptrdiff_t target_disp, struct ompi_win_t *win);
int ompi_osc_ucxx_fetch_and_op(const void *origin_addr, void *result_addr,
                               struct ompi_datatype_t *dt, int target, ptrdiff_t target_disp,
                               struct ompi_op_t *op, struct ompi_win_t *win);
int ompi_osc_ucxx_get_accumulate(const void *origin_addr, int origin_count,
                                 struct ompi_datatype_t *origin_dt, void *result_addr,
                                 int result_count, struct ompi_datatype_t *result_dt,
                                 int target, ptrdiff_t target_disp, int target_count,
                                 struct ompi_datatype_t *target_dt, struct ompi_op_t *op,
                                 struct ompi_win_t *win);
int ompi_osc_ucxx_raccumulate(const void *origin_addr, int origin_count,
                              struct ompi_datatype_t *origin_dt, int target,
                              ptrdiff_t target_disp, int target_count,
                              struct ompi_datatype_t *target_dt, struct ompi_op_t *op,
                              struct ompi_win_t *win, struct ompi_request_t **request);
int ompi_osc_ucxx_rget_accumulate(const void *origin_addr, int origin_count,
                                  struct ompi_datatype_t *origin_dt, void *result_addr,
                                  int result_count, struct ompi_datatype_t *result_dt,
                                  int target, ptrdiff_t target_disp, int target_count,
                                  struct ompi_datatype_t *target_dt, struct ompi_op_t *op,
                                  struct ompi_win_t *win, struct ompi_request_t **request);

/* Active target (osc_ucxx_active_target.c) */
int ompi_osc_ucxx_fence(int assert, struct ompi_win_t *win);
int ompi_osc_ucxx_start(struct ompi_group_t *group, int assert, struct ompi_win_t *win);
int ompi_osc_ucxx_complete(struct ompi_win_t *win);
int ompi_osc_ucxx_post(struct ompi_group_t *group, int assert, struct ompi_win_t *win);
int ompi_osc_ucxx_wait(struct ompi_win_t *win);
int ompi_osc_ucxx_test(struct ompi_win_t *win, int *flag);

/* Passive target (osc_ucxx_passive_target.c) */
int ompi_osc_ucxx_lock(int lock_type, int target, int assert, struct ompi_win_t *win);
int ompi_osc_ucxx_unlock(int target, struct ompi_win_t *win);
int ompi_osc_ucxx_lock_all(int assert, struct ompi_win_t *win);
int ompi_osc_ucxx_unlock_all(struct ompi_win_t *win);
int ompi_osc_ucxx_sync(struct ompi_win_t *win);
int ompi_osc_ucxx_flush(int target, struct ompi_win_t *win);
int ompi_osc_ucxx_flush_all(struct ompi_win_t *win);
int ompi_osc_ucxx_flush_local(int target, struct ompi_win_t *win);
int ompi_osc_ucxx_flush_local_all(struct ompi_win_t *win);

/* The extension table libmpix_ucxx calls (osc_ucxx_ext.c) */
OMPI_DECLSPEC extern const struct ompi_osc_ucxx_ext_t ompi_osc_ucxx_ext;
/* Is win's module one of ours (osc_ucxx_component.c)? */
bool ompi_osc_ucxx_is_ours(struct ompi_win_t *win);
/* Creations the library makes for a view it asked for (OSC_UCXX_VIEW_KEY):
 * claimed by component_query, adopted by component_select. */
bool ompi_osc_ucxx_ext_claims(struct opal_info_t *info);
int ompi_osc_ucxx_ext_adopt(struct ompi_win_t *win, void **base, struct opal_info_t *info,
                            int flavor, int *model);

END_C_DECLS

#endif /* OMPI_OSC_UCXX_H */
