/*
 * Copyright (c) 2026 The osc/ucxx authors. All rights reserved.
 * $COPYRIGHT$
 *
 * User active messages (MPIX_Am & co., mpix_ucxx.h): the entry points the
 * extension table names, and the hooks the synchronization calls give them
 * (osc_ucxx_uam.c has the protocol).
 */

#ifndef OMPI_OSC_UCXX_UAM_H
#define OMPI_OSC_UCXX_UAM_H

#include "osc_ucxx_am.h"

BEGIN_C_DECLS

/* Extension entry points (osc_ucxx_ext.h) */
int ompi_osc_ucxx_uam_register(struct ompi_win_t *win, uint64_t op_id, int kind, void *fn,
                               void *extra, int index);
int ompi_osc_ucxx_uam_deregister(struct ompi_win_t *win, uint64_t op_id);
int ompi_osc_ucxx_uam_attach(struct ompi_win_t *win, void *buffer, size_t size);
int ompi_osc_ucxx_uam_detach(struct ompi_win_t *win, void *buffer);
int ompi_osc_ucxx_uam_epoch_assert(struct ompi_win_t *win, int assert);
int ompi_osc_ucxx_uam_issue(struct ompi_win_t *win, const ompi_osc_ucxx_am_args_t *args,
                            int *counts, struct ompi_request_t **req);
bool ompi_osc_ucxx_uam_in_handler(void);
/* Its message kinds (component init) */
void ompi_osc_ucxx_uam_am_init(void);

/* Completion calls: after our AMs to `target` (-1: all) completed; `end`:
 * the access epoch ends (unlock, unlock_all, fence, complete). */
void ompi_osc_ucxx_uam_sync_any(ompi_osc_ucxx_module_t *module, int target, bool end);
/* (inline: a window that never used active messages has nothing to do, and
 * every unlock and flush asks) */
static inline void ompi_osc_ucxx_uam_sync(ompi_osc_ucxx_module_t *module, int target, bool end)
{
    if (OPAL_UNLIKELY(NULL != module->uam)) ompi_osc_ucxx_uam_sync_any(module, target, end);
}
/* MPI_Win_free (the core's destructor) */
void ompi_osc_ucxx_uam_release(ompi_osc_ucxx_module_t *module);

END_C_DECLS

#endif /* OMPI_OSC_UCXX_UAM_H */
