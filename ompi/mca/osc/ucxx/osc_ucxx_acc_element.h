/*
 * Copyright (c) 2026 The osc/ucxx authors. All rights reserved.
 * $COPYRIGHT$
 *
 * osc/ucxx: one element of the accumulate family, as both of its paths
 * apply it (osc_ucxx_accumulate.c, the general path; osc_ucxx_acc_fast.c,
 * the entry points and the mapped path): whether an op is defined on a
 * type, the atomic instruction that is an op, and one element under the
 * exclusion or by a CPU atomic.  Inline where the mapped path needs them
 * inline.  Only those two files include it.
 */

#ifndef OMPI_OSC_UCXX_ACC_ELEMENT_H
#define OMPI_OSC_UCXX_ACC_ELEMENT_H

#include "ompi/op/op.h"

#include "osc_ucxx_op.h"
#include "osc_ucxx_audit.h"
#include "osc_ucxx_acc.h"

static inline bool ompi_osc_ucxx_acc_is_integer(ompi_datatype_t *elem)
{
    return OMPI_DATATYPE_FLAG_DATA_INT == (elem->super.flags & OMPI_DATATYPE_FLAG_DATA_TYPE);
}

static inline bool ompi_osc_ucxx_acc_op_defined(ompi_op_t *op, ompi_datatype_t *elem)
{
    if (ompi_osc_ucxx_is_replace(op) || ompi_osc_ucxx_is_no_op(op)) {
        return true;
    }
    if (!ompi_op_is_intrinsic(op) || -1 == ompi_op_ddt_map[elem->id]) {
        return false;
    }
    return NULL != op->o_func.intrinsic.fns[ompi_op_ddt_map[elem->id]];
}

/* The atomic that is this op on this element, if there is one: a UCX
 * atomic, or the CPU instruction of the same name (ompi_osc_ucxx_acc_cpu_native).  `fetch`
 * (UCX only): fetching AND/OR/XOR are left to the compare-and-swap loop,
 * as UCX 1.13's shared-memory transports were seen to return the old value
 * without changing the target (the posted forms and TCP's emulation are
 * right). */
static inline bool ompi_osc_ucxx_acc_native_atomic(ompi_op_t *op, ompi_datatype_t *elem, bool fetch,
                                 ucp_atomic_op_t *uop)
{
    if (ompi_osc_ucxx_is_replace(op)) { *uop = UCP_ATOMIC_OP_SWAP; return true; }
    if (ompi_osc_ucxx_is_no_op(op)) { *uop = UCP_ATOMIC_OP_ADD; return true; }   /* add 0 */
    if (!ompi_osc_ucxx_acc_is_integer(elem)) return false;
    switch (op->op_type) {
    case OMPI_OP_SUM:  *uop = UCP_ATOMIC_OP_ADD; return true;
    case OMPI_OP_BAND: *uop = UCP_ATOMIC_OP_AND; return !fetch;
    case OMPI_OP_BOR:  *uop = UCP_ATOMIC_OP_OR;  return !fetch;
    case OMPI_OP_BXOR: *uop = UCP_ATOMIC_OP_XOR; return !fetch;
    default: return false;
    }
}

/* The one CPU instruction that is this op on this element, where there is
 * one (ompi_osc_ucxx_acc_native_atomic: fetch-add, -and, -or, -xor on integers, exchange; a
 * load for no-op); false: a compare-and-swap loop does it (ompi_osc_ucxx_acc_cpu_element),
 * which costs more than the stripe's exclusion would. */
static inline __opal_attribute_always_inline__ bool
ompi_osc_ucxx_acc_cpu_native(const ompi_osc_ucxx_acc_t *a, char *tgt, const char *origin, char *result)
{
    bool load = ompi_osc_ucxx_is_no_op(a->op);
    ucp_atomic_op_t uop;
    uint64_t v = 0, old;

    if (!ompi_osc_ucxx_acc_native_atomic(a->op, a->elem, false, &uop)) return false;
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

/* The atomics audit: a single element's kind (osc_ucxx_audit.h). */
static inline void ompi_osc_ucxx_acc_audit_single(ompi_osc_ucxx_module_t *module, int target, uint64_t remote,
                                unsigned kind)
{
    ompi_osc_ucxx_audit(module, target, OSC_UCXX_AUDIT_DATA,
                        remote - module->peers[target].base, kind);
}

/* One CPU atomic (a compare-and-swap loop where no instruction is the op). */
void ompi_osc_ucxx_acc_cpu_element(const ompi_osc_ucxx_acc_t *a, char *tgt, const char *origin,
                                   char *result);

/* Predefined types on every side: one run each, under the exclusion `h`. */
void ompi_osc_ucxx_acc_contig_held(ompi_osc_ucxx_acc_t *a, ompi_osc_ucxx_hold_t *h, char *tgt,
                                   const char *origin, char *result, size_t n);

/* One compare-and-swap on mapped memory: a CPU atomic or under `h`. */
void ompi_osc_ucxx_acc_cas_apply(ompi_osc_ucxx_acc_t *a, ompi_osc_ucxx_hold_t *h, char *tgt,
                                 bool lockfree, const void *origin_addr,
                                 const void *compare_addr, void *result_addr);

/* MPI_Compare_and_swap's general path. */
int ompi_osc_ucxx_cas(ompi_osc_ucxx_view_t *view, const void *origin_addr,
                      const void *compare_addr, void *result_addr, struct ompi_datatype_t *dt,
                      int target, ptrdiff_t target_disp);

#endif /* OMPI_OSC_UCXX_ACC_ELEMENT_H */
