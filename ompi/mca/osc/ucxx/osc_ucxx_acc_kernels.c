/*
 * Copyright (c) 2026 The osc/ucxx authors. All rights reserved.
 * $COPYRIGHT$
 *
 * The accumulate loops: tgt[i] = tgt[i] (op) src[i] over a run of one
 * element type, written so the compiler vectorizes them.
 *
 * Why not ompi_op_reduce everywhere: Open MPI 4.1.4's AVX op component
 * (Debian ships it, and it is picked on every AVX2 machine) adds 8- and
 * 16-bit integers with saturation (32767 + 1 stays 32767) and compares
 * 64-bit unsigned integers as signed, so MPI_SUM on MPI_SHORT or MPI_MAX on
 * MPI_UNSIGNED_LONG give wrong totals.  These loops are plain C semantics:
 * integers wrap (computed unsigned, so no undefined overflow), floating
 * point as the C operators.  MAXLOC/MINLOC, half floats and anything else
 * not here go to ompi_op_reduce (osc_ucxx_acc.h).
 *
 * Elements may sit at any address (MPI allows displacement units of 1):
 * a run whose buffers are not aligned to the element goes through aligned
 * bounce buffers, so the vector code may assume natural alignment.
 */

#include "ompi_config.h"

#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC optimize("O3")
#endif

#include <complex.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "osc_ucxx_acc.h"
#include "opal/datatype/opal_datatype_internal.h"

#define LOOP(T, EXPR)                                                         \
    do {                                                                      \
        T *t_ = (T *) tgt;                                                    \
        const T *s_ = (const T *) src;                                        \
        for (size_t i = 0; i < n; ++i) {                                      \
            T o = t_[i], v = s_[i];                                           \
            t_[i] = (EXPR);                                                   \
        }                                                                     \
        return true;                                                          \
    } while (0)

/* Integers: arithmetic on the unsigned twin UT (wraps, never undefined). */
#define INTEGER_OPS(T, UT)                                                    \
    switch (op) {                                                             \
    case OMPI_OP_SUM:  LOOP(T, (T) ((UT) o + (UT) v));                        \
    case OMPI_OP_PROD: LOOP(T, (T) ((UT) o * (UT) v));                        \
    case OMPI_OP_MAX:  LOOP(T, o > v ? o : v);                                \
    case OMPI_OP_MIN:  LOOP(T, o < v ? o : v);                                \
    case OMPI_OP_LAND: LOOP(T, (T) (o && v));                                 \
    case OMPI_OP_LOR:  LOOP(T, (T) (o || v));                                 \
    case OMPI_OP_LXOR: LOOP(T, (T) (!o != !v));                               \
    case OMPI_OP_BAND: LOOP(T, o & v);                                        \
    case OMPI_OP_BOR:  LOOP(T, o | v);                                        \
    case OMPI_OP_BXOR: LOOP(T, o ^ v);                                        \
    default: return false;                                                    \
    }

#define FLOAT_OPS(T)                                                          \
    switch (op) {                                                             \
    case OMPI_OP_SUM:  LOOP(T, o + v);                                        \
    case OMPI_OP_PROD: LOOP(T, o * v);                                        \
    case OMPI_OP_MAX:  LOOP(T, o > v ? o : v);                                \
    case OMPI_OP_MIN:  LOOP(T, o < v ? o : v);                                \
    default: return false;                                                    \
    }

#define COMPLEX_OPS(T)                                                        \
    switch (op) {                                                             \
    case OMPI_OP_SUM:  LOOP(T, o + v);                                        \
    case OMPI_OP_PROD: LOOP(T, o * v);                                        \
    default: return false;                                                    \
    }

#if SIZEOF_LONG_DOUBLE == 16
#define LONG_DOUBLE_OPS                                                       \
    if (OPAL_DATATYPE_FLOAT16 == kind) FLOAT_OPS(long double)                 \
    if (OPAL_DATATYPE_LONG_DOUBLE_COMPLEX == kind) COMPLEX_OPS(long double _Complex)
#else
#define LONG_DOUBLE_OPS
#endif

/* One copy per vector width, picked once at load time (an ifunc), so the
 * loops use AVX-512 (with its byte and word forms) or AVX2 where the CPU has
 * it, as Open MPI's own op component does.  (GCC's target_clones knows no
 * "avx512bw", and without it the byte and word loops stay 32 bytes wide.) */
#define KERNEL(NAME, ATTR)                                                    \
    ATTR static bool NAME(int op, int kind, void *tgt, const void *src,       \
                          size_t n)                                           \
{                                                                             \
    switch (kind) {                                                           \
    case OPAL_DATATYPE_INT1:  INTEGER_OPS(int8_t, uint8_t)                    \
    case OPAL_DATATYPE_INT2:  INTEGER_OPS(int16_t, uint16_t)                  \
    case OPAL_DATATYPE_INT4:  INTEGER_OPS(int32_t, uint32_t)                  \
    case OPAL_DATATYPE_INT8:  INTEGER_OPS(int64_t, uint64_t)                  \
    case OPAL_DATATYPE_UINT1: INTEGER_OPS(uint8_t, uint8_t)                   \
    case OPAL_DATATYPE_UINT2: INTEGER_OPS(uint16_t, uint16_t)                 \
    case OPAL_DATATYPE_UINT4: INTEGER_OPS(uint32_t, uint32_t)                 \
    case OPAL_DATATYPE_UINT8: INTEGER_OPS(uint64_t, uint64_t)                 \
    case OPAL_DATATYPE_LONG:  INTEGER_OPS(long, unsigned long)                \
    case OPAL_DATATYPE_UNSIGNED_LONG: INTEGER_OPS(unsigned long, unsigned long) \
    case OPAL_DATATYPE_FLOAT4: FLOAT_OPS(float)                               \
    case OPAL_DATATYPE_FLOAT8: FLOAT_OPS(double)                              \
    case OPAL_DATATYPE_FLOAT_COMPLEX:  COMPLEX_OPS(float _Complex)            \
    case OPAL_DATATYPE_DOUBLE_COMPLEX: COMPLEX_OPS(double _Complex)           \
    case OPAL_DATATYPE_BOOL:                                                  \
        switch (op) {                                                         \
        case OMPI_OP_LAND: LOOP(bool, o && v);                                \
        case OMPI_OP_LOR:  LOOP(bool, o || v);                                \
        case OMPI_OP_LXOR: LOOP(bool, o != v);                                \
        default: return false;                                                \
        }                                                                     \
    default:                                                                  \
        LONG_DOUBLE_OPS                                                       \
        return false;                                                         \
    }                                                                         \
}

#if defined(__GNUC__) && !defined(__clang__) && defined(__x86_64__) && defined(__ELF__)
KERNEL(kernel_default, )
KERNEL(kernel_avx2, __attribute__((target("avx2"))))
KERNEL(kernel_avx512, __attribute__((target("avx512f,avx512bw,avx512vl,avx512dq"))))

typedef bool (*kernel_fn_t)(int, int, void *, const void *, size_t);

static kernel_fn_t kernel_resolve(void)
{
    switch (ompi_osc_ucxx_cpu_vector()) {
    case 64: return kernel_avx512;
    case 32: return kernel_avx2;
    default: return kernel_default;
    }
}

static bool kernel(int op, int kind, void *tgt, const void *src, size_t n)
    __attribute__((ifunc("kernel_resolve")));
#else
KERNEL(kernel, )
#endif

/* Elements of `size` bytes at misaligned addresses: through aligned copies. */
#define BOUNCE 4096

static bool bounced(int op, int kind, char *tgt, const char *src, size_t n, size_t size)
{
    _Alignas(64) char bt[BOUNCE], bs[BOUNCE];
    size_t per = BOUNCE / size;

    while (n > 0) {
        size_t k = n < per ? n : per;
        memcpy(bt, tgt, k * size);
        memcpy(bs, src, k * size);
        if (!kernel(op, kind, bt, bs, k)) return false;
        memcpy(tgt, bt, k * size);
        tgt += k * size;
        src += k * size;
        n -= k;
    }
    return true;
}

bool ompi_osc_ucxx_acc_kernel(int op, int kind, size_t size, void *tgt, const void *src,
                              size_t n)
{
    size_t align = size >= 16 ? 16 : size;
    if (OPAL_LIKELY(0 == (((uintptr_t) tgt | (uintptr_t) src) & (align - 1)))) {
        return kernel(op, kind, tgt, src, n);
    }
    if (size > BOUNCE) return false;
    return bounced(op, kind, tgt, src, n, size);
}
