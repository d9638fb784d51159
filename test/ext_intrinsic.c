/* ext_intrinsic: MPIX_Win_op_intrinsic and the mpi_assert_accumulate_intrinsic
 * / acc_single_intrinsic info keys (mpix/mpix_ucxx.h).  Usage: ext_intrinsic
 * [N] (default 200, 50 under UCX_TLS=tcp: contended atomics per rank).
 * For each window flavor:
 * 1. A window created with mpi_assert_accumulate_intrinsic=true (reported
 *    back by MPI_Win_get_info).  For ~30 (op, type, count, call) combinations
 *    - every predefined op name, 1- to 8-byte integers, float, double,
 *    MPI_2INT maxloc, counts 1 and 1000, a vector datatype, through
 *    MPI_Accumulate, MPI_Get_accumulate, MPI_Fetch_and_op and
 *    MPI_Compare_and_swap - the origin asks MPIX_Win_op_intrinsic(op, count,
 *    type) and issues the operation on the next rank: where the answer is 1
 *    it must succeed, and after a flush the target memory (read back with
 *    MPI_Get) and any fetched values must be exactly right; where it is 0 it
 *    must return MPI_ERR_OP and the target memory must be unchanged.
 *    Consistency: the answer for "sum,replace,no_op" is the AND of the three;
 *    an answer of 1 for count 1000 implies 1 for count 1; over shared memory
 *    (default UCX transports) "sum" on one MPI_INT64_T of an allocated window
 *    is 1.  Unknown op names ("bogus", "sum,bogus") return MPI_ERR_ARG;
 *    MPI_WIN_NULL returns MPI_ERR_WIN.
 * 2. Contended single-element atomics: every rank does N MPI_Fetch_and_op
 *    (SUM 1) and N MPI_Accumulate (SUM 1) on two counters of rank 0, on a
 *    window with acc_single_intrinsic=true (reported back) and on the
 *    mpi_assert_accumulate_intrinsic window when "sum" is intrinsic there:
 *    final counters nprocs*N, fetched values a permutation of 0..nprocs*N-1. */
#include "testutil.h"
#include "mpix_ucxx.h"
#include <stdint.h>

enum { T_I8, T_I16, T_I32, T_I64, T_U32, T_U64, T_FLT, T_DBL, T_2INT, T_VEC, NTY };
static const char *tname[NTY] = { "MPI_INT8_T", "MPI_INT16_T", "MPI_INT32_T", "MPI_INT64_T",
                                  "MPI_UINT32_T", "MPI_UINT64_T", "MPI_FLOAT", "MPI_DOUBLE",
                                  "MPI_2INT", "vector(100,1,2,MPI_INT64_T)" };
static MPI_Datatype mtype[NTY];
enum { C_ACC, C_GACC, C_FOP, C_CAS };
static const char *cname[] = { "MPI_Accumulate", "MPI_Get_accumulate", "MPI_Fetch_and_op",
                               "MPI_Compare_and_swap" };
enum { O_SUM, O_PROD, O_MIN, O_MAX, O_BAND, O_BOR, O_BXOR, O_LAND, O_LOR, O_LXOR, O_REPLACE,
       O_NOOP, O_CAS, O_MAXLOC, O_MINLOC };
static const char *oname[] = { "sum", "prod", "min", "max", "band", "bor", "bxor", "land", "lor",
                               "lxor", "replace", "no_op", "cas", "maxloc", "minloc" };

typedef struct { int op, ty, count, call; } combo_t;
static const combo_t combos[] = {
    { O_SUM, T_I64, 1, C_ACC },      { O_SUM, T_I64, 1, C_FOP },      { O_SUM, T_I64, 1000, C_ACC },
    { O_SUM, T_I64, 1000, C_GACC },  { O_SUM, T_I32, 1, C_ACC },      { O_SUM, T_I32, 1000, C_ACC },
    { O_SUM, T_I16, 1, C_ACC },      { O_SUM, T_I16, 1, C_FOP },      { O_SUM, T_I8, 1, C_ACC },
    { O_SUM, T_DBL, 1, C_ACC },      { O_SUM, T_FLT, 1, C_FOP },      { O_SUM, T_U64, 1, C_GACC },
    { O_PROD, T_I64, 1, C_ACC },     { O_MIN, T_I32, 1, C_ACC },      { O_MAX, T_U64, 1, C_FOP },
    { O_MAX, T_DBL, 4, C_ACC },      { O_BAND, T_U64, 1, C_ACC },     { O_BOR, T_U32, 1, C_FOP },
    { O_BXOR, T_U64, 1, C_ACC },     { O_LAND, T_I32, 1, C_ACC },     { O_LOR, T_I64, 1, C_GACC },
    { O_LXOR, T_I32, 2, C_ACC },     { O_REPLACE, T_I64, 1, C_ACC },  { O_REPLACE, T_I64, 1000, C_ACC },
    { O_REPLACE, T_U32, 1, C_FOP },  { O_NOOP, T_I64, 1, C_FOP },     { O_NOOP, T_I64, 1000, C_GACC },
    { O_CAS, T_I64, 1, C_CAS },      { O_CAS, T_I32, 1, C_CAS },      { O_CAS, T_I16, 1, C_CAS },
    { O_MAXLOC, T_2INT, 1, C_ACC },  { O_MINLOC, T_2INT, 1, C_GACC }, { O_SUM, T_VEC, 1, C_ACC },
    { O_REPLACE, T_VEC, 1, C_ACC },
};
#define NC ((int) (sizeof(combos) / sizeof(combos[0])))
#define SLOTB 16384   /* bytes per combination in the window */
#define VN 100        /* elements of the vector type */

static int rank, nprocs, next, prev;

static MPI_Op mpi_op(int o)
{
    switch (o) {
    case O_SUM: return MPI_SUM;
    case O_PROD: return MPI_PROD;
    case O_MIN: return MPI_MIN;
    case O_MAX: return MPI_MAX;
    case O_BAND: return MPI_BAND;
    case O_BOR: return MPI_BOR;
    case O_BXOR: return MPI_BXOR;
    case O_LAND: return MPI_LAND;
    case O_LOR: return MPI_LOR;
    case O_LXOR: return MPI_LXOR;
    case O_REPLACE: return MPI_REPLACE;
    case O_NOOP: return MPI_NO_OP;
    case O_MAXLOC: return MPI_MAXLOC;
    case O_MINLOC: return MPI_MINLOC;
    default: return MPI_OP_NULL;
    }
}

/* logical elements of a combination and their byte offsets in a slot */
static int nelem(const combo_t *c) { return T_VEC == c->ty ? VN * c->count : c->count; }
static size_t eoff(const combo_t *c, int i)
{
    static const size_t sz[NTY] = { 1, 2, 4, 8, 4, 8, 4, 8, 8, 8 };
    return T_VEC == c->ty ? (size_t) i * 16 : (size_t) i * sz[c->ty];
}

/* element values: integers as int64 (small, non-negative), 2INT as value+index */
typedef struct { int64_t v; int idx; } val_t;

static val_t get_elem(const combo_t *c, const void *slot, int i)
{
    const char *p = (const char *) slot + eoff(c, i);
    val_t x = { 0, 0 };
    switch (c->ty) {
    case T_I8: x.v = *(const int8_t *) p; break;
    case T_I16: x.v = *(const int16_t *) p; break;
    case T_I32: x.v = *(const int32_t *) p; break;
    case T_I64: case T_VEC: x.v = *(const int64_t *) p; break;
    case T_U32: x.v = *(const uint32_t *) p; break;
    case T_U64: x.v = (int64_t) *(const uint64_t *) p; break;
    case T_FLT: x.v = (int64_t) *(const float *) p; break;
    case T_DBL: x.v = (int64_t) *(const double *) p; break;
    case T_2INT: x.v = ((const int *) p)[0]; x.idx = ((const int *) p)[1]; break;
    }
    return x;
}

static void set_elem(const combo_t *c, void *slot, int i, val_t x)
{
    char *p = (char *) slot + eoff(c, i);
    switch (c->ty) {
    case T_I8: *(int8_t *) p = (int8_t) x.v; break;
    case T_I16: *(int16_t *) p = (int16_t) x.v; break;
    case T_I32: *(int32_t *) p = (int32_t) x.v; break;
    case T_I64: case T_VEC: *(int64_t *) p = x.v; break;
    case T_U32: *(uint32_t *) p = (uint32_t) x.v; break;
    case T_U64: *(uint64_t *) p = (uint64_t) x.v; break;
    case T_FLT: *(float *) p = (float) x.v; break;
    case T_DBL: *(double *) p = (double) x.v; break;
    case T_2INT: ((int *) p)[0] = (int) x.v; ((int *) p)[1] = x.idx; break;
    }
}

/* target t's initial value, origin o's operand */
static val_t init_val(int t, int ci, int i) { val_t x = { (t * 7 + ci * 3 + i) % 5, 100 + i }; return x; }
static val_t orig_val(int o, int ci, int i) { val_t x = { (o + ci + i) % 4, 200 + i }; return x; }

static val_t apply(int op, val_t t, val_t o)
{
    val_t r = t;
    switch (op) {
    case O_SUM: r.v = t.v + o.v; break;
    case O_PROD: r.v = t.v * o.v; break;
    case O_MIN: r.v = t.v < o.v ? t.v : o.v; break;
    case O_MAX: r.v = t.v > o.v ? t.v : o.v; break;
    case O_BAND: r.v = t.v & o.v; break;
    case O_BOR: r.v = t.v | o.v; break;
    case O_BXOR: r.v = t.v ^ o.v; break;
    case O_LAND: r.v = t.v && o.v; break;
    case O_LOR: r.v = t.v || o.v; break;
    case O_LXOR: r.v = !t.v != !o.v; break;
    case O_REPLACE: case O_CAS: r = o; break;   /* CAS: compare = the initial value */
    case O_NOOP: break;
    case O_MAXLOC:
        if (o.v > t.v || (o.v == t.v && o.idx < t.idx)) r = o;
        break;
    case O_MINLOC:
        if (o.v < t.v || (o.v == t.v && o.idx < t.idx)) r = o;
        break;
    }
    return r;
}

static int query(const char *ops, MPI_Aint count, int ty, MPI_Win win, int *flag)
{
    *flag = -1;
    int rc = MPIX_Win_op_intrinsic(ops, count, mtype[ty], win, flag);
    /* the header speaks of elements of `type`; osc/ucxx answers MPI_ERR_ARG
     * for a derived type, which is accepted (the operation is then checked
     * either way: applied correctly, or MPI_ERR_OP and nothing applied) */
    if (T_VEC == ty && MPI_ERR_ARG == tu_err_class(rc)) return rc;
    TU_CHECK(MPI_SUCCESS == rc, "MPIX_Win_op_intrinsic(\"%s\", %ld, %s) returned %s", ops,
             (long) count, tname[ty], tu_err_class_name(tu_err_class(rc)));
    if (MPI_SUCCESS == rc)
        TU_CHECK(0 == *flag || 1 == *flag, "MPIX_Win_op_intrinsic(\"%s\", %ld, %s): flag %d", ops,
                 (long) count, tname[ty], *flag);
    return rc;
}

static void part_assert(int flavor)
{
    tu_win_t w;
    MPI_Info info = tu_info_new("mpi_assert_accumulate_intrinsic", "true", NULL);
    const char *fn = tu_flavor_names[flavor];
    char v[MPI_MAX_INFO_VAL + 1];
    tu_win_create(flavor, (MPI_Aint) NC * SLOTB, 1, info, MPI_COMM_WORLD, &w);
    MPI_Info_free(&info);
    int set = tu_win_info_get(w.win, "mpi_assert_accumulate_intrinsic", v, sizeof(v));
    TU_CHECK(set && 0 == strcmp(v, "true"), "%s: MPI_Win_get_info mpi_assert_accumulate_intrinsic = "
             "'%s' (set: %d), expected 'true'", fn, v, set);

    /* my memory as a target */
    TU_MPI(MPI_Win_lock(MPI_LOCK_EXCLUSIVE, rank, 0, w.win));
    for (int ci = 0; ci < NC; ci++)
        for (int i = 0; i < nelem(&combos[ci]); i++)
            set_elem(&combos[ci], (char *) w.base + (size_t) ci * SLOTB, i, init_val(rank, ci, i));
    TU_MPI(MPI_Win_unlock(rank, w.win));
    MPI_Barrier(MPI_COMM_WORLD);

    /* answers */
    int flags[NC], f1, f2, f3, fall, nyes = 0;
    for (int ci = 0; ci < NC; ci++) {
        const combo_t *c = &combos[ci];
        if (MPI_SUCCESS != query(oname[c->op], c->count, c->ty, w.win, &flags[ci])) flags[ci] = -1;
        nyes += 1 == flags[ci];
    }
    if (MPI_SUCCESS == query("sum", 1, T_I64, w.win, &f1) &&
        MPI_SUCCESS == query("replace", 1, T_I64, w.win, &f2) &&
        MPI_SUCCESS == query("no_op", 1, T_I64, w.win, &f3) &&
        MPI_SUCCESS == query("sum,replace,no_op", 1, T_I64, w.win, &fall))
        TU_CHECK(fall == (f1 && f2 && f3), "%s: \"sum,replace,no_op\" answers %d, the single ops %d %d %d",
                 fn, fall, f1, f2, f3);
    if (MPI_SUCCESS == query("sum", 1000, T_I64, w.win, &f2) && MPI_SUCCESS == query("sum", 1, T_I64, w.win, &f1))
        TU_CHECK(!f2 || f1, "%s: \"sum\" on 1000 MPI_INT64_T answers 1 but on 1 answers 0", fn);
    if (TU_ALLOCATE == flavor && !tu_slow_transport() && MPI_SUCCESS == query("sum", 1, T_I64, w.win, &f1))
        TU_CHECK(1 == f1, "allocate (shared memory): \"sum\" on one MPI_INT64_T answers %d, expected 1", f1);
    {
        int fl = 7, r = MPIX_Win_op_intrinsic("bogus", 1, MPI_INT64_T, w.win, &fl);
        TU_CHECK(MPI_ERR_ARG == tu_err_class(r), "%s: op \"bogus\" returned %s, expected MPI_ERR_ARG", fn,
                 tu_err_class_name(tu_err_class(r)));
        r = MPIX_Win_op_intrinsic("sum,bogus", 1, MPI_INT64_T, w.win, &fl);
        TU_CHECK(MPI_ERR_ARG == tu_err_class(r), "%s: op \"sum,bogus\" returned %s, expected MPI_ERR_ARG",
                 fn, tu_err_class_name(tu_err_class(r)));
    }
    if (0 == rank) {
        char line[4 * NC + 64];
        int n = snprintf(line, sizeof(line), "%s: intrinsic answers:", fn);
        for (int ci = 0; ci < NC; ci++) n += snprintf(line + n, sizeof(line) - n, " %d", flags[ci]);
        printf("%s (%d of %d are 1)\n", line, nyes, NC);
    }

    /* operations */
    char *obuf = calloc(1, SLOTB), *cbuf = calloc(1, SLOTB), *rbuf = malloc(SLOTB), *back = malloc(SLOTB);
    TU_MPI(MPI_Win_lock_all(0, w.win));
    for (int ci = 0; ci < NC; ci++) {
        const combo_t *c = &combos[ci];
        MPI_Datatype mt = mtype[c->ty];
        MPI_Aint disp = tu_disp(&w, next, (MPI_Aint) ci * SLOTB);
        int ne = nelem(c), rc = MPI_SUCCESS, fetch = C_ACC != c->call;
        int unknown = flags[ci] < 0;   /* no answer (derived type): either outcome, checked */
        for (int i = 0; i < ne; i++) {
            set_elem(c, obuf, i, orig_val(rank, ci, i));
            set_elem(c, cbuf, i, init_val(next, ci, i));
        }
        memset(rbuf, 0x5a, SLOTB);
        switch (c->call) {
        case C_ACC:
            rc = MPI_Accumulate(obuf, c->count, mt, next, disp, c->count, mt, mpi_op(c->op), w.win);
            break;
        case C_GACC:
            rc = MPI_Get_accumulate(obuf, c->count, mt, rbuf, c->count, mt, next, disp, c->count, mt,
                                    mpi_op(c->op), w.win);
            break;
        case C_FOP:
            rc = MPI_Fetch_and_op(obuf, rbuf, mt, next, disp, mpi_op(c->op), w.win);
            break;
        case C_CAS:
            rc = MPI_Compare_and_swap(obuf, cbuf, rbuf, mt, next, disp, w.win);
            break;
        }
        TU_MPI(MPI_Win_flush(next, w.win));
        if (unknown) {
            TU_CHECK(MPI_SUCCESS == rc || MPI_ERR_OP == tu_err_class(rc), "%s: %s(%s, %d x %s) returned %s",
                     fn, cname[c->call], oname[c->op], c->count, tname[c->ty], tu_err_class_name(tu_err_class(rc)));
        } else if (flags[ci]) {
            TU_CHECK(MPI_SUCCESS == rc, "%s: %s(%s, %d x %s) intrinsic (1) but returned %s", fn,
                     cname[c->call], oname[c->op], c->count, tname[c->ty], tu_err_class_name(tu_err_class(rc)));
        } else {
            TU_CHECK(MPI_ERR_OP == tu_err_class(rc), "%s: %s(%s, %d x %s) not intrinsic (0) on an "
                     "mpi_assert_accumulate_intrinsic window but returned %s, expected MPI_ERR_OP", fn,
                     cname[c->call], oname[c->op], c->count, tname[c->ty], tu_err_class_name(tu_err_class(rc)));
        }
        /* the target memory, read back as bytes */
        memset(back, 0x5a, SLOTB);
        size_t bytes = eoff(c, ne - 1) + 8;
        TU_MPI(MPI_Get(back, (int) bytes, MPI_BYTE, next, disp, (int) bytes, MPI_BYTE, w.win));
        TU_MPI(MPI_Win_flush(next, w.win));
        int applied = flags[ci] != 0 && MPI_SUCCESS == rc, bad = 0, badf = 0, first = -1;
        for (int i = 0; i < ne; i++) {
            val_t t0 = init_val(next, ci, i), e = applied ? apply(c->op, t0, orig_val(rank, ci, i)) : t0;
            val_t g = get_elem(c, back, i);
            if (g.v != e.v || (T_2INT == c->ty && g.idx != e.idx)) { bad++; if (first < 0) first = i; }
            if (applied && fetch) {
                val_t r = get_elem(c, rbuf, i);
                badf += r.v != t0.v || (T_2INT == c->ty && r.idx != t0.idx);
            }
        }
        if (bad) {
            val_t t0 = init_val(next, ci, first);
            val_t e = applied ? apply(c->op, t0, orig_val(rank, ci, first)) : t0;
            TU_CHECK(0, "%s: %s(%s, %d x %s) (intrinsic %d, rc %s): %d of %d target elements wrong, "
                     "first %d = %lld, expected %lld (%s)", fn, cname[c->call], oname[c->op], c->count,
                     tname[c->ty], flags[ci], tu_err_class_name(tu_err_class(rc)), bad, ne, first,
                     (long long) get_elem(c, back, first).v, (long long) e.v,
                     applied ? "applied" : "must be unchanged");
        }
        TU_CHECK(0 == badf, "%s: %s(%s, %d x %s): %d fetched values wrong", fn, cname[c->call],
                 oname[c->op], c->count, tname[c->ty], badf);
    }
    TU_MPI(MPI_Win_unlock_all(w.win));
    MPI_Barrier(MPI_COMM_WORLD);
    free(obuf); free(cbuf); free(rbuf); free(back);
    tu_win_free(&w);
}

static int cmp_i64(const void *a, const void *b)
{
    int64_t x = *(const int64_t *) a, y = *(const int64_t *) b;
    return x < y ? -1 : x > y;
}

static void contend(int flavor, const char *key, int N)
{
    tu_win_t w;
    MPI_Info info = tu_info_new(key, "true", NULL);
    const char *fn = tu_flavor_names[flavor];
    char v[MPI_MAX_INFO_VAL + 1];
    tu_win_create(flavor, 2 * sizeof(int64_t), sizeof(int64_t), info, MPI_COMM_WORLD, &w);
    MPI_Info_free(&info);
    int set = tu_win_info_get(w.win, key, v, sizeof(v));
    TU_CHECK(set && 0 == strcmp(v, "true"), "%s: MPI_Win_get_info %s = '%s' (set: %d), expected 'true'",
             fn, key, v, set);
    int f = 1;
    if (0 == strcmp(key, "mpi_assert_accumulate_intrinsic")) {
        if (MPI_SUCCESS != query("sum", 1, T_I64, w.win, &f)) f = 0;
        int fa;
        MPI_Allreduce(&f, &fa, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
        f = fa;
    }
    if (f) {
        const int64_t one = 1;
        int64_t *seen = malloc(N * sizeof(int64_t)), *all = NULL;
        TU_MPI(MPI_Win_lock_all(0, w.win));
        for (int i = 0; i < N; i++) {
            TU_MPI(MPI_Fetch_and_op(&one, &seen[i], MPI_INT64_T, 0, tu_disp(&w, 0, 0), MPI_SUM, w.win));
            TU_MPI(MPI_Accumulate(&one, 1, MPI_INT64_T, 0, tu_disp(&w, 0, 1), 1, MPI_INT64_T, MPI_SUM, w.win));
            TU_MPI(MPI_Win_flush(0, w.win));
        }
        TU_MPI(MPI_Win_unlock_all(w.win));
        MPI_Barrier(MPI_COMM_WORLD);
        if (0 == rank) {
            volatile int64_t *m = w.base;
            TU_MPI(MPI_Win_lock(MPI_LOCK_SHARED, 0, 0, w.win));
            TU_CHECK(m[0] == (int64_t) nprocs * N && m[1] == (int64_t) nprocs * N,
                     "%s %s: counters %lld %lld, expected %d", fn, key, (long long) m[0],
                     (long long) m[1], nprocs * N);
            TU_MPI(MPI_Win_unlock(0, w.win));
            all = malloc((size_t) nprocs * N * sizeof(int64_t));
        }
        MPI_Gather(seen, N, MPI_INT64_T, all, N, MPI_INT64_T, 0, MPI_COMM_WORLD);
        if (0 == rank) {
            int bad = 0;
            qsort(all, (size_t) nprocs * N, sizeof(int64_t), cmp_i64);
            for (int i = 0; i < nprocs * N; i++) bad += all[i] != i;
            TU_CHECK(0 == bad, "%s %s: %d fetched values are not a permutation of 0..%d", fn, key, bad,
                     nprocs * N - 1);
            free(all);
        }
        free(seen);
    }
    MPI_Barrier(MPI_COMM_WORLD);
    tu_win_free(&w);
}

int main(int argc, char **argv)
{
    int rc, N;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &nprocs);
    N = tu_slow_transport() ? 50 : 200;
    if (argc > 1) N = atoi(argv[1]);
    next = (rank + 1) % nprocs;
    prev = (rank + nprocs - 1) % nprocs;
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    MPI_Comm_set_errhandler(MPI_COMM_SELF, MPI_ERRORS_RETURN);
    MPI_Datatype base[NTY] = { MPI_INT8_T, MPI_INT16_T, MPI_INT32_T, MPI_INT64_T, MPI_UINT32_T,
                               MPI_UINT64_T, MPI_FLOAT, MPI_DOUBLE, MPI_2INT, MPI_DATATYPE_NULL };
    memcpy(mtype, base, sizeof(base));
    TU_MPI(MPI_Type_vector(VN, 1, 2, MPI_INT64_T, &mtype[T_VEC]));
    TU_MPI(MPI_Type_commit(&mtype[T_VEC]));
    {
        int fl = 7, r = MPIX_Win_op_intrinsic("sum", 1, MPI_INT64_T, MPI_WIN_NULL, &fl);
        TU_CHECK(MPI_ERR_WIN == tu_err_class(r), "MPIX_Win_op_intrinsic on MPI_WIN_NULL returned %s, "
                 "expected MPI_ERR_WIN", tu_err_class_name(tu_err_class(r)));
    }
    for (int flavor = 0; flavor < TU_NFLAVORS; flavor++) {
        if (!tu_flavor_enabled(flavor)) continue;
        part_assert(flavor);
        contend(flavor, "acc_single_intrinsic", N);
        contend(flavor, "mpi_assert_accumulate_intrinsic", N);
    }
    MPI_Type_free(&mtype[T_VEC]);
    rc = tu_finish("ext_intrinsic");
    MPI_Finalize();
    return rc;
}
