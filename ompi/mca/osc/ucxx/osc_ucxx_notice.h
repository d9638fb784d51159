/*
 * Copyright (c) 2026 The osc/ucxx authors. All rights reserved.
 * $COPYRIGHT$
 *
 * osc/ucxx, seventh layer, with completion: notices that follow an
 * epoch's operations to their target and tell it they are all there
 * (osc_ucxx_notice.c has the protocol).
 */

#ifndef OMPI_OSC_UCXX_NOTICE_H
#define OMPI_OSC_UCXX_NOTICE_H

#include "osc_ucxx_complete.h"

BEGIN_C_DECLS

/* MPI_Win_complete: each of the n targets learns that our access epoch on
 * it is over (its complete word grows by one once our operations on it are
 * applied); our operations are complete here when this returns. */
int ompi_osc_ucxx_notice_complete(ompi_osc_ucxx_module_t *module, const int *targets, int n);

/* A closing fence where the state segments do not synchronize: notices to
 * the n targets the epoch reached, then the window's count of notices each
 * process is owed (a collective: every process calls it, in the same
 * order), then until ours have arrived: every operation aimed at this
 * process in the epoch is applied, and every process has entered the
 * fence. */
int ompi_osc_ucxx_notice_fence(ompi_osc_ucxx_module_t *module, const int *targets, int n);

/* Its message kind (component init) */
void ompi_osc_ucxx_notice_am_init(void);

END_C_DECLS

#endif /* OMPI_OSC_UCXX_NOTICE_H */
