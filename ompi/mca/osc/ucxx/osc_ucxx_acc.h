/*
 * Copyright (c) 2026 The osc/ucxx authors. All rights reserved.
 * $COPYRIGHT$
 *
 * Accumulates as bulk work, shared by the origin's paths
 * (osc_ucxx_accumulate.c) and the target's message handler
 * (osc_ucxx_acc_am.c):
 *   - an operation's description (op, element type and its geometry);
 *   - a (buffer, count, datatype) walked as runs of consecutive elements,
 *     so that a contiguous layout is one run however long, and a derived
 *     one is as few runs as its layout allows;
 *   - one run applied at memory speed: our kernels or ompi_op_reduce over
 *     the whole run (REPLACE a copy, NO_OP nothing), old values copied out
 *     first; short runs of the common ops inline (short_kind, short_apply);
 *   - the target's exclusion held over a moving span of its bytes: taken
 *     once per span of at most osc_ucxx_acc_hold bytes, retaken only when a
 *     run leaves it (osc_ucxx_state.c has the stripe protocol).
 * MPI asks element-wise atomicity only, so the exclusion may be released
 * between any two elements: that is what bounds one accumulate's hold.
 */

#ifndef OMPI_OSC_UCXX_ACC_H
#define OMPI_OSC_UCXX_ACC_H

#include "ompi/op/op.h"

#include "opal/datatype/opal_datatype_internal.h"

#include "osc_ucxx_dt.h"
#include "osc_ucxx_state.h"

BEGIN_C_DECLS

static inline size_t ompi_osc_ucxx_min(size_t a, size_t b) { return a < b ? a : b; }

/* One accumulate-family operation. */
typedef struct {
    ompi_osc_ucxx_target_t *t;       /* origin side: module, worker, rank, path */
    ompi_op_t *op;
    ompi_datatype_t *elem;           /* the predefined element type */
    size_t esize;                    /* bytes of data in an element */
    size_t ext;                      /* from one element to the next in an array */
    size_t width;                    /* bytes an element's value spans (true extent) */
    bool gaps;                       /* pair types with padding: esize < ext */
    bool hw;                         /* a 4- or 8-byte element one atomic instruction changes */
    bool fetch;                      /* get_accumulate family: old values wanted */
    ompi_osc_ucxx_request_t *req;
} ompi_osc_ucxx_acc_t;

static inline bool ompi_osc_ucxx_is_replace(ompi_op_t *op)
{
    return op == &ompi_mpi_op_replace.op;
}

static inline bool ompi_osc_ucxx_is_no_op(ompi_op_t *op)
{
    return op == &ompi_mpi_op_no_op.op;
}

/* Fill in the element geometry of `a` from a->elem. */
static inline void ompi_osc_ucxx_acc_geometry(ompi_osc_ucxx_acc_t *a)
{
    ptrdiff_t lb, extent, true_lb, true_extent;
    ompi_datatype_type_size(a->elem, &a->esize);
    ompi_datatype_get_extent(a->elem, &lb, &extent);
    ompi_datatype_get_true_extent(a->elem, &true_lb, &true_extent);
    a->ext = (size_t) extent;
    a->width = (size_t) true_extent;
    a->gaps = a->esize != a->ext;
    a->hw = (4 == a->esize || 8 == a->esize) && !a->gaps;
}

/* n elements from src to dst, both laid out as arrays of the element. */
static inline void ompi_osc_ucxx_acc_copy(const ompi_osc_ucxx_acc_t *a, char *dst,
                                          const char *src, size_t n)
{
    if (OPAL_LIKELY(!a->gaps)) {
        memcpy(dst, src, n * a->ext);
    } else {
        /* only the element's own bytes: padding may be someone else's */
        ompi_datatype_copy_content_same_ddt(a->elem, (int32_t) n, dst, (char *) src);
    }
}

/* tgt[i] = tgt[i] (op) src[i] for n elements of OPAL kind `kind` and `size`
 * bytes, by our own loops (osc_ucxx_acc_kernels.c); false: not one of
 * them. */
bool ompi_osc_ucxx_acc_kernel(int op, int kind, size_t size, void *tgt, const void *src,
                              size_t n);

/* Apply n elements of origin values `src` to `tgt`, old values to `res`
 * first when wanted; the caller holds the exclusion over [tgt, tgt + n*ext). */
static inline void ompi_osc_ucxx_acc_run(const ompi_osc_ucxx_acc_t *a, char *tgt,
                                         const char *src, char *res, size_t n)
{
    if (NULL != res) {
        ompi_osc_ucxx_acc_copy(a, res, tgt, n);
    }
    if (ompi_osc_ucxx_is_replace(a->op)) {
        ompi_osc_ucxx_acc_copy(a, tgt, src, n);
    } else if (!ompi_osc_ucxx_is_no_op(a->op) &&
               !ompi_osc_ucxx_acc_kernel(a->op->op_type, a->elem->super.id, a->esize, tgt, src,
                                         n)) {
        ompi_op_reduce(a->op, (void *) src, tgt, (int) n, a->elem);
    }
}

/* ------------------------------------------------------------------------- */
/* Short runs inline (the mapped path's single elements and runs of at most
 * OSC_UCXX_SHORT_MAX bytes, or OSC_UCXX_SHORT_WIDE_MAX where the CPU has
 * wider vectors than 16 bytes): replace, no-op, and sums of integers of 1
 * to 8 bytes, floats and doubles.  Through acc_run's calls into the kernels
 * an 8 B accumulate spent as long in them as in everything else. */

#define OSC_UCXX_SHORT_MAX 256
/* (the entry points compiled for 32- and 64-byte vectors: past 4 KiB the
 * calls into the kernels cost nothing measurable) */
#define OSC_UCXX_SHORT_WIDE_MAX 4096

enum {
    OSC_UCXX_SHORT_NONE,     /* not inline: acc_run */
    OSC_UCXX_SHORT_COPY,     /* MPI_REPLACE */
    OSC_UCXX_SHORT_NOTHING,  /* MPI_NO_OP */
    OSC_UCXX_SHORT_U1, OSC_UCXX_SHORT_U2, OSC_UCXX_SHORT_U4, OSC_UCXX_SHORT_U8,
    OSC_UCXX_SHORT_F4, OSC_UCXX_SHORT_F8   /* MPI_SUM (integers: unsigned, they wrap) */
};

/* How `op` on predefined `elem` (no gaps) is applied inline, if it is. */
static inline int ompi_osc_ucxx_short_kind(ompi_op_t *op, ompi_datatype_t *elem)
{
    if (ompi_osc_ucxx_is_replace(op)) return OSC_UCXX_SHORT_COPY;
    if (ompi_osc_ucxx_is_no_op(op)) return OSC_UCXX_SHORT_NOTHING;
    if (OMPI_OP_SUM != op->op_type) return OSC_UCXX_SHORT_NONE;
    switch (elem->super.id) {
    case OPAL_DATATYPE_INT1: case OPAL_DATATYPE_UINT1: return OSC_UCXX_SHORT_U1;
    case OPAL_DATATYPE_INT2: case OPAL_DATATYPE_UINT2: return OSC_UCXX_SHORT_U2;
    case OPAL_DATATYPE_INT4: case OPAL_DATATYPE_UINT4: return OSC_UCXX_SHORT_U4;
    case OPAL_DATATYPE_INT8: case OPAL_DATATYPE_UINT8:
    case OPAL_DATATYPE_LONG: case OPAL_DATATYPE_UNSIGNED_LONG: return OSC_UCXX_SHORT_U8;
    case OPAL_DATATYPE_FLOAT4: return OSC_UCXX_SHORT_F4;
    case OPAL_DATATYPE_FLOAT8: return OSC_UCXX_SHORT_F8;
    default: return OSC_UCXX_SHORT_NONE;
    }
}

/* n elements of 4 or 8 bytes: loads and stores of that size (memcpy of a
 * length known only at run time is a call). */
static inline __opal_attribute_always_inline__ void
ompi_osc_ucxx_copy_words(char *dst, const char *src, size_t n, size_t size)
{
    for (size_t i = 0; i < n; ++i) {
        if (8 == size) {
            memcpy(dst + 8 * i, src + 8 * i, 8);
        } else {
            memcpy(dst + 4 * i, src + 4 * i, 4);
        }
    }
}

/* n elements of `size` bytes: words up to 8 of them, else memcpy. */
static inline __opal_attribute_always_inline__ void
ompi_osc_ucxx_copy_short(char *dst, const char *src, size_t n, size_t size)
{
    if ((4 == size || 8 == size) && n <= 8) {
        ompi_osc_ucxx_copy_words(dst, src, n, size);
    } else {
        memcpy(dst, src, n * size);
    }
}

/* tgt[i] = tgt[i] + src[i] for n elements of type T one at a time. */
#define OSC_UCXX_SUM_EACH(T, from)                                            \
    for (size_t j_ = (from); j_ < n * sizeof(T); j_ += sizeof(T)) {           \
        T o_, v_;                                                             \
        memcpy(&o_, tgt + j_, sizeof(T));                                     \
        memcpy(&v_, src + j_, sizeof(T));                                     \
        o_ += v_;                                                             \
        memcpy(tgt + j_, &o_, sizeof(T));                                     \
    }

/* The widest vectors the CPU adds in one instruction, in bytes: 64
 * (AVX-512 with its byte and word forms), 32 (AVX2) or 16 (SSE2, NEON, and
 * every other machine and compiler).  (Inline: the kernels' load-time
 * resolver may call nothing outside its own object.) */
static inline unsigned ompi_osc_ucxx_cpu_vector(void)
{
#if defined(__GNUC__) && !defined(__clang__) && defined(__x86_64__)
    __builtin_cpu_init();
    if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
        __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512dq")) {
        return 64;
    }
    if (__builtin_cpu_supports("avx2")) return 32;
#endif
    return 16;
}

#if defined(__GNUC__)
/* W bytes of elements of type T, added in one instruction: 16 by every
 * x86-64 (SSE2) and aarch64 (NEON); 32 and 64 only in the code compiled for
 * AVX2 and AVX-512 (osc_ucxx_accumulate.c's entry points), elsewhere
 * unused. */
#define OSC_UCXX_VEC(T, W) T __attribute__((vector_size(W)))
#define OSC_UCXX_VECS(W)                                                      \
    typedef OSC_UCXX_VEC(uint8_t, W) ompi_osc_ucxx_v##W##_u1;                 \
    typedef OSC_UCXX_VEC(uint16_t, W) ompi_osc_ucxx_v##W##_u2;                \
    typedef OSC_UCXX_VEC(uint32_t, W) ompi_osc_ucxx_v##W##_u4;                \
    typedef OSC_UCXX_VEC(uint64_t, W) ompi_osc_ucxx_v##W##_u8;                \
    typedef OSC_UCXX_VEC(float, W) ompi_osc_ucxx_v##W##_f4;                   \
    typedef OSC_UCXX_VEC(double, W) ompi_osc_ucxx_v##W##_f8;
OSC_UCXX_VECS(16)
OSC_UCXX_VECS(32)
OSC_UCXX_VECS(64)
#undef OSC_UCXX_VECS
#undef OSC_UCXX_VEC

/* Sums of T, sizeof(V) bytes at a time from byte i_ while a whole vector
 * is left. */
#define OSC_UCXX_SUM_VEC(V, T)                                                \
    for (; i_ + sizeof(V) <= n * sizeof(T); i_ += sizeof(V)) {                \
        V o_, v_;                                                             \
        memcpy(&o_, tgt + i_, sizeof(V));                                     \
        memcpy(&v_, src + i_, sizeof(V));                                     \
        o_ += v_;                                                             \
        memcpy(tgt + i_, &o_, sizeof(V));                                     \
    }

/* The sum of a short run of elements of type T (vector types ..._K): up to
 * 8 elements of 4 or 8 B one at a time (unless they fill a `vw`-byte
 * vector, where `vw` is wider than 16), longer runs `vw` bytes at a time
 * (then at most one 32 and one 16-byte step) and the rest one T at a time.
 * Short runs are faster inline than through acc_run's calls into the
 * kernels, and wider vectors move the point where the kernels win. */
#define OSC_UCXX_SUM_SHORT(K, T)                                              \
    do {                                                                      \
        size_t i_ = 0;                                                        \
        if (sizeof(T) < 4 || n > 8 || (vw > 16 && n * sizeof(T) >= vw)) {    \
            if (64 == vw) OSC_UCXX_SUM_VEC(ompi_osc_ucxx_v64_##K, T)          \
            if (32 <= vw) OSC_UCXX_SUM_VEC(ompi_osc_ucxx_v32_##K, T)          \
            OSC_UCXX_SUM_VEC(ompi_osc_ucxx_v16_##K, T)                        \
        }                                                                     \
        OSC_UCXX_SUM_EACH(T, i_)                                              \
    } while (0)
#else
#define OSC_UCXX_SUM_SHORT(K, T) do { OSC_UCXX_SUM_EACH(T, 0) } while (0)
#endif

/* A short run of `kind` (not NONE): n elements of `size` bytes at tgt, the
 * origin's at src, old values to res (NULL: not wanted); `vw`, a constant:
 * the vector bytes the calling code is compiled for (16, 32 or 64). */
static inline __opal_attribute_always_inline__ void
ompi_osc_ucxx_short_apply_vw(int kind, char *tgt, const char *src, char *res, size_t n,
                             size_t size, unsigned vw)
{
    (void) vw;  /* (unused without GCC's vectors) */
    if (NULL != res) ompi_osc_ucxx_copy_short(res, tgt, n, size);
    switch (kind) {
    case OSC_UCXX_SHORT_COPY: ompi_osc_ucxx_copy_short(tgt, src, n, size); break;
    case OSC_UCXX_SHORT_U1: OSC_UCXX_SUM_SHORT(u1, uint8_t); break;
    case OSC_UCXX_SHORT_U2: OSC_UCXX_SUM_SHORT(u2, uint16_t); break;
    case OSC_UCXX_SHORT_U4: OSC_UCXX_SUM_SHORT(u4, uint32_t); break;
    case OSC_UCXX_SHORT_U8: OSC_UCXX_SUM_SHORT(u8, uint64_t); break;
    case OSC_UCXX_SHORT_F4: OSC_UCXX_SUM_SHORT(f4, float); break;
    case OSC_UCXX_SHORT_F8: OSC_UCXX_SUM_SHORT(f8, double); break;
    default: break;  /* OSC_UCXX_SHORT_NOTHING */
    }
}

/* ... in code compiled for the baseline (16-byte vectors). */
static inline __opal_attribute_always_inline__ void
ompi_osc_ucxx_short_apply(int kind, char *tgt, const char *src, char *res, size_t n,
                          size_t size)
{
    ompi_osc_ucxx_short_apply_vw(kind, tgt, src, res, n, size, 16);
}

#undef OSC_UCXX_SUM_SHORT
#undef OSC_UCXX_SUM_VEC
#undef OSC_UCXX_SUM_EACH

/* A run the mapped path holds (a single element, or a run of at most 512 B):
 * inline where short_kind says so and it is short, else acc_run. */
static inline __opal_attribute_always_inline__ void
ompi_osc_ucxx_acc_few(const ompi_osc_ucxx_acc_t *a, char *tgt, const char *src, char *res,
                      size_t n)
{
    int kind = ompi_osc_ucxx_short_kind(a->op, a->elem);
    if (OPAL_UNLIKELY(a->gaps || n * a->ext > OSC_UCXX_SHORT_MAX ||
                      OSC_UCXX_SHORT_NONE == kind)) {
        ompi_osc_ucxx_acc_run(a, tgt, src, res, n);
        return;
    }
    ompi_osc_ucxx_short_apply(kind, tgt, src, res, n, a->esize);
}

/* ------------------------------------------------------------------------- */
/* A layout as runs of consecutive elements */

typedef struct {
    bool whole;              /* one run, no convertor (predefined or contiguous) */
    bool gaps;
    size_t esize, ext;
    char *ptr;               /* the current run's next element */
    size_t n;                /* elements left in the current run */
    char *look;              /* gap types: the element after the run, read ahead */
    ompi_osc_ucxx_dt_iter_t it;
} ompi_osc_ucxx_runs_t;

/* Walk `esize` bytes of `it` (an element may be split by the layout's
 * gaps); *addr: where it starts.  False at the end. */
static inline bool ompi_osc_ucxx_next_element(ompi_osc_ucxx_dt_iter_t *it, size_t esize,
                                              char **addr)
{
    size_t got = 0;
    if (!ompi_osc_ucxx_dt_iter_fill(it)) return false;
    *addr = it->ptr;
    while (got < esize && ompi_osc_ucxx_dt_iter_fill(it)) {
        size_t take = it->left < esize - got ? it->left : esize - got;
        it->ptr += take;
        it->left -= take;
        got += take;
    }
    return got == esize;
}

static inline void ompi_osc_ucxx_runs_init(ompi_osc_ucxx_runs_t *r, const ompi_osc_ucxx_acc_t *a,
                                           void *buf, int count, ompi_datatype_t *dt)
{
    r->gaps = a->gaps;
    r->esize = a->esize;
    r->ext = a->ext;
    r->look = NULL;
    if (ompi_datatype_is_predefined(dt)) {
        r->whole = true;
        r->ptr = (char *) buf;
        r->n = (size_t) count;
    } else if (!a->gaps && ompi_datatype_is_contiguous_memory_layout(dt, count)) {
        r->whole = true;
        r->ptr = (char *) buf + dt->super.true_lb;
        r->n = (size_t) count * dt->super.size / a->esize;
    } else {
        r->whole = false;
        r->n = 0;
        ompi_osc_ucxx_dt_iter_init(&r->it, buf, count, dt);
    }
}

static inline void ompi_osc_ucxx_runs_fini(ompi_osc_ucxx_runs_t *r)
{
    if (!r->whole) ompi_osc_ucxx_dt_iter_fini(&r->it);
}

/* The next run of a convertor-walked layout. */
static inline void ompi_osc_ucxx_runs_refill(ompi_osc_ucxx_runs_t *r)
{
    char *next;
    if (!r->gaps) {
        /* gap-free elements: every contiguous piece is whole elements */
        if (ompi_osc_ucxx_dt_iter_fill(&r->it)) {
            r->ptr = r->it.ptr;
            r->n = r->it.left / r->esize;
            r->it.left = 0;
        }
        return;
    }
    if (NULL == r->look && !ompi_osc_ucxx_next_element(&r->it, r->esize, &r->look)) {
        return;
    }
    r->ptr = r->look;
    r->n = 1;
    r->look = NULL;
    while (ompi_osc_ucxx_next_element(&r->it, r->esize, &next)) {
        if (next != r->ptr + r->n * r->ext) {
            r->look = next;
            break;
        }
        r->n++;
    }
}

/* Elements available at *ptr in the current run (0: the layout is done). */
static inline size_t ompi_osc_ucxx_runs_peek(ompi_osc_ucxx_runs_t *r, char **ptr)
{
    if (0 == r->n && !r->whole) {
        ompi_osc_ucxx_runs_refill(r);
    }
    *ptr = r->ptr;
    return r->n;
}

static inline void ompi_osc_ucxx_runs_skip(ompi_osc_ucxx_runs_t *r, size_t n)
{
    r->ptr += n * r->ext;
    r->n -= n;
}

/* ------------------------------------------------------------------------- */
/* The target's exclusion over a moving span */

typedef struct {
    ompi_osc_ucxx_state_t *state;   /* the target's, mapped here */
    unsigned shift;                 /* its stripe block */
    char *base;                     /* its window base here: stripes count from it */
    char *end;                      /* the operation's bytes end here */
    char *lo, *hi;                  /* the span held now */
    uint32_t mask;                  /* 0: nothing held */
} ompi_osc_ucxx_hold_t;

static inline void ompi_osc_ucxx_hold_init(ompi_osc_ucxx_hold_t *h,
                                           ompi_osc_ucxx_state_t *state, unsigned shift,
                                           char *base, char *end)
{
    h->state = state;
    h->shift = shift;
    h->base = base;
    h->end = end;
    h->lo = h->hi = NULL;
    h->mask = 0;
}

static inline __opal_attribute_always_inline__ void
ompi_osc_ucxx_hold_release(ompi_osc_ucxx_hold_t *h)
{
    if (0 != h->mask) {
        ompi_osc_ucxx_stripes_unlock(h->state, h->mask);
        h->mask = 0;
        h->lo = h->hi = NULL;
    }
}

/* How many of the n elements at p the held span covers: at least one,
 * retaking the exclusion from p when p is outside it. */
static inline size_t ompi_osc_ucxx_hold_cover(ompi_osc_ucxx_hold_t *h,
                                              const ompi_osc_ucxx_acc_t *a, char *p, size_t n)
{
    size_t fit;
    if (OPAL_UNLIKELY(p < h->lo || p + a->width > h->hi)) {
        char *hi = p + OSC_UCXX.acc_hold;
        ompi_osc_ucxx_hold_release(h);
        if (hi > h->end) hi = h->end;
        if (hi < p + a->width) hi = p + a->width;
        h->lo = p;
        h->hi = hi;
        h->mask = ompi_osc_ucxx_stripe_mask(h->shift, (uint64_t) (p - h->base),
                                            (uint64_t) (hi - h->base));
        ompi_osc_ucxx_stripes_lock(h->state, h->mask);
    }
    fit = (size_t) (h->hi - p - a->width) / a->ext + 1;
    return fit < n ? fit : n;
}

/* n elements from p (a span of at most osc_ucxx_acc_hold bytes): the
 * stripes they touch, without hold_cover's moving span. */
static inline __opal_attribute_always_inline__ void
ompi_osc_ucxx_hold_elements(ompi_osc_ucxx_hold_t *h, const ompi_osc_ucxx_acc_t *a, char *p,
                            size_t n)
{
    uint64_t lo = (uint64_t) (p - h->base), last = lo + (n - 1) * a->ext + a->width - 1;

    h->lo = p;
    h->hi = p + (last + 1 - lo);
    h->mask = ompi_osc_ucxx_stripe_mask(h->shift, lo, last + 1);
    ompi_osc_ucxx_stripes_lock(h->state, h->mask);
}

/* Cross-memory attach (osc_ucxx_acc_cma.c): the origin applies the
 * operation under the target's stripes to its unmapped user memory
 * (t->path.cma).  OMPI_ERR_NOT_AVAILABLE: not here, nothing applied (no
 * mapped state, gap types, the kernel refused): the message path. */
int ompi_osc_ucxx_acc_cma(ompi_osc_ucxx_acc_t *a, void *origin_addr, int origin_count,
                          ompi_datatype_t *origin_dt, const void *compare_addr,
                          void *result_addr, int result_count, ompi_datatype_t *result_dt,
                          int target_count, ompi_datatype_t *target_dt);

/* The message path (osc_ucxx_acc_am.c): the target applies the operation;
 * also how put and get of many small pieces travel (osc_ucxx_comm.c). */
int ompi_osc_ucxx_acc_am(ompi_osc_ucxx_acc_t *a, void *origin_addr, int origin_count,
                         ompi_datatype_t *origin_dt, const void *compare_addr,
                         void *result_addr, int result_count, ompi_datatype_t *result_dt,
                         int target_count, ompi_datatype_t *target_dt);
/* Its message kinds (component init) */
void ompi_osc_ucxx_acc_am_init(void);
/* One operation another message carries, applied as a chunk is
 * (OMPI_ERR_WOULD_BLOCK: a stripe is taken, try again). */
int ompi_osc_ucxx_acc_am_apply(ompi_osc_ucxx_module_t *module, int32_t dt, int32_t op, bool cas,
                               uint64_t offset, size_t len, const char *vals, char *old);

END_C_DECLS

#endif /* OMPI_OSC_UCXX_ACC_H */
