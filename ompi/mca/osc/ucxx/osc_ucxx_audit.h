/*
 * Copyright (c) 2026 The osc/ucxx authors. All rights reserved.
 * $COPYRIGHT$
 *
 * osc/ucxx, beside the fourth layer: the atomics audit, a run mode for tests
 * (OSC_UCXX_AUDIT_ATOMICS=1 in the environment; osc_ucxx_audit.c and
 * docs/atomics.md).  Every process records which kind of atomic it used on
 * each word of a window, and MPI_Win_free checks across the processes that
 * no word saw two kinds.  Off, a record costs one load and a branch.
 */

#ifndef OMPI_OSC_UCXX_AUDIT_H
#define OMPI_OSC_UCXX_AUDIT_H

#include "osc_ucxx_window.h"

BEGIN_C_DECLS

/* Kinds */
#define OSC_UCXX_AUDIT_CPU    0x1   /* a CPU atomic (or a store by a word's one writer) */
#define OSC_UCXX_AUDIT_STRIPE 0x2   /* a read-modify-write under the stripe locks */
#define OSC_UCXX_AUDIT_UCX    0x4   /* a UCX atomic */

/* Where the word is: `owner`'s state segment (offset in it), or its window
 * memory (offset from its base; a dynamic window's: the address).  Window
 * memory records only single-element accumulate-family operations, those
 * the acc_single_intrinsic policy concerns. */
#define OSC_UCXX_AUDIT_STATE 0
#define OSC_UCXX_AUDIT_DATA  1

extern bool ompi_osc_ucxx_audit_on;

#if defined(__GNUC__)
__attribute__((cold))
#endif
void ompi_osc_ucxx_audit_record(ompi_osc_ucxx_module_t *module, int owner, int space,
                                uint64_t offset, unsigned kind);

static inline __opal_attribute_always_inline__ void
ompi_osc_ucxx_audit(ompi_osc_ucxx_module_t *module, int owner, int space, uint64_t offset,
                    unsigned kind)
{
    if (OPAL_UNLIKELY(ompi_osc_ucxx_audit_on)) {
        ompi_osc_ucxx_audit_record(module, owner, space, offset, kind);
    }
}

/* Read the environment (component open). */
void ompi_osc_ucxx_audit_init(void);
/* MPI_Win_free of the original handle, on every process (collective over
 * the window's communicator): every process's records meet at rank 0,
 * which reports each word that saw two kinds and ends the job with a
 * failing status. */
int ompi_osc_ucxx_audit_check(ompi_osc_ucxx_module_t *module);
void ompi_osc_ucxx_audit_release(ompi_osc_ucxx_module_t *module);

END_C_DECLS

#endif /* OMPI_OSC_UCXX_AUDIT_H */
