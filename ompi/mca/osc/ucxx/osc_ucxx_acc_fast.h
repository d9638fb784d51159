/*
 * Copyright (c) 2026 The osc/ucxx authors. All rights reserved.
 * $COPYRIGHT$
 *
 * Accumulates on mapped memory for the common element types, inlined:
 * integer SUM/BAND/BOR/BXOR are one fetch-and-op instruction per element,
 * REPLACE an exchange, NO_OP a load, everything else a compare-and-swap
 * loop computing the new value in place (no call through the op table).
 * The same per-element atomicity as the generic path, several times faster.
 */

#ifndef OMPI_OSC_UCXX_ACC_FAST_H
#define OMPI_OSC_UCXX_ACC_FAST_H

#include "opal/datatype/opal_datatype_internal.h"
#include "ompi/op/op.h"

/* Apply new = f(old, v) to n elements of type T (unsigned twin UT). */
#define ACC_FAST_CAS(T, UT, EXPR)                                                    \
    for (size_t i = 0; i < n; ++i) {                                                 \
        UT *p = (UT *) tgt + i, ou = __atomic_load_n(p, __ATOMIC_ACQUIRE), nu;       \
        T o, nv, v;                                                                  \
        memcpy(&v, (const char *) src + i * sizeof(T), sizeof(T));                   \
        do {                                                                         \
            memcpy(&o, &ou, sizeof(T));                                              \
            nv = (EXPR);                                                             \
            memcpy(&nu, &nv, sizeof(T));                                             \
        } while (!__atomic_compare_exchange_n(p, &ou, nu, false, __ATOMIC_ACQ_REL,   \
                                              __ATOMIC_ACQUIRE));                    \
        if (res) memcpy((char *) res + i * sizeof(T), &o, sizeof(T));                \
    }

#define ACC_FAST_FETCH(UT, FN)                                                       \
    for (size_t i = 0; i < n; ++i) {                                                 \
        UT v, o;                                                                     \
        memcpy(&v, (const char *) src + i * sizeof(UT), sizeof(UT));                 \
        o = FN((UT *) tgt + i, v, __ATOMIC_ACQ_REL);                                 \
        if (res) memcpy((char *) res + i * sizeof(UT), &o, sizeof(UT));              \
    }

/* One element type: the switch over ops.  Integer types take the fetch
 * instructions; LAND/LOR/LXOR and the arithmetic ops go through CAS. */
#define ACC_FAST_TYPE(T, UT, INTEGER)                                                \
    switch (op) {                                                                    \
    case OMPI_OP_SUM:                                                                \
        if (INTEGER) { ACC_FAST_FETCH(UT, __atomic_fetch_add) }                      \
        else { ACC_FAST_CAS(T, UT, o + v) }                                          \
        return true;                                                                 \
    case OMPI_OP_PROD: ACC_FAST_CAS(T, UT, o * v) return true;                       \
    case OMPI_OP_MAX:  ACC_FAST_CAS(T, UT, o > v ? o : v) return true;               \
    case OMPI_OP_MIN:  ACC_FAST_CAS(T, UT, o < v ? o : v) return true;               \
    case OMPI_OP_LAND: if (!INTEGER) return false; ACC_FAST_CAS(T, UT, (T) (o && v)) return true; \
    case OMPI_OP_LOR:  if (!INTEGER) return false; ACC_FAST_CAS(T, UT, (T) (o || v)) return true; \
    case OMPI_OP_LXOR: if (!INTEGER) return false; ACC_FAST_CAS(T, UT, (T) (!o != !v)) return true; \
    case OMPI_OP_BAND: if (!INTEGER) return false; ACC_FAST_FETCH(UT, __atomic_fetch_and) return true; \
    case OMPI_OP_BOR:  if (!INTEGER) return false; ACC_FAST_FETCH(UT, __atomic_fetch_or) return true; \
    case OMPI_OP_BXOR: if (!INTEGER) return false; ACC_FAST_FETCH(UT, __atomic_fetch_xor) return true; \
    default: return false;                                                           \
    }

/* op is OMPI_OP_* (MAXLOC/MINLOC and others fall back); kind is the OPAL id. */
static inline bool ompi_osc_ucxx_acc_fast(int op, int kind, void *tgt, const void *src,
                                          void *res, size_t n)
{
    switch (kind) {
    case OPAL_DATATYPE_INT4:   ACC_FAST_TYPE(int32_t, uint32_t, 1)
    case OPAL_DATATYPE_UINT4:  ACC_FAST_TYPE(uint32_t, uint32_t, 1)
    case OPAL_DATATYPE_INT8:   ACC_FAST_TYPE(int64_t, uint64_t, 1)
    case OPAL_DATATYPE_UINT8:  ACC_FAST_TYPE(uint64_t, uint64_t, 1)
    case OPAL_DATATYPE_FLOAT4: ACC_FAST_TYPE(float, uint32_t, 0)
    case OPAL_DATATYPE_FLOAT8: ACC_FAST_TYPE(double, uint64_t, 0)
    default: return false;
    }
}

#endif
