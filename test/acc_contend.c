/* acc_contend: accumulates under contention.
 *
 * 1. counter: every rank does MPI_Fetch_and_op(+1, MPI_INT64_T) on one
 *    counter at rank 0, ITERS times, flushing each. Final value must be
 *    exactly nprocs*ITERS, each rank's fetched values must increase, and all
 *    fetched values together must be exactly 0 .. nprocs*ITERS-1 (each once).
 * 2. mix: on a 1000-element MPI_INT64_T array at the last rank, every rank
 *    issues MIX_ITERS operations alternating between
 *      MPI_Fetch_and_op(MPI_SUM) on one element,
 *      MPI_Accumulate(MPI_SUM) of count 1000 (contiguous), and
 *      MPI_Accumulate(MPI_SUM) of 500 elements through a vector target
 *      datatype (every other element, even or odd),
 *    all covering the same locations at the same time; the final array must
 *    equal the sum of all contributions, computed locally.
 *
 * 3. spans: on elements 24..39 of a 40-element MPI_INT64_T array at the
 *    last rank, with mpi_accumulate_granularity 8 (every element its own
 *    exclusion block), every rank alternates MPI_Fetch_and_op on one
 *    element and MPI_Accumulate of 2..8 contiguous elements, each flushed:
 *    a short range must exclude every element it covers, not only its
 *    first, or updates of both kinds to its other elements are lost (the
 *    final array is compared with the sum of all contributions).  Blocks
 *    24..31 take stripes 24..31 and blocks 32..39 stripes 1, 0, 3, 2, ...,
 *    so ranges across block 32 take stripes that are neither consecutive
 *    nor ascending in block order (two of them: the unrolled pair).
 *
 * Environment: ACC_ITERS (default 10000; 2000 when UCX_TLS selects tcp, where
 * every atomic is emulated), ACC_MIX_ITERS (default 200), ACC_SPAN_ITERS
 * (default 50000; 5000 over tcp).
 *
 * Argument --no-direct: run with osc/ucxx's internal setting direct=0 (tu_tune) (the UCX RMA/AMO path).
 */
#include "testutil.h"
#include <stdint.h>

#define M 1000

static int cmp_i64(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return x < y ? -1 : x > y;
}

static void counter_test(int flavor, int me, int nprocs, int iters)
{
    tu_win_t w;
    int64_t *fetched = malloc(sizeof(int64_t) * (size_t)iters), one = 1;
    int64_t *all = NULL;
    int i, mono = 1;
    double t0;

    tu_win_create(flavor, sizeof(int64_t), sizeof(int64_t), MPI_INFO_NULL, MPI_COMM_WORLD, &w);
    t0 = MPI_Wtime();
    TU_MPI(MPI_Win_lock_all(0, w.win));
    for (i = 0; i < iters; i++) {
        TU_MPI(MPI_Fetch_and_op(&one, &fetched[i], MPI_INT64_T, 0, tu_disp(&w, 0, 0), MPI_SUM, w.win));
        TU_MPI(MPI_Win_flush(0, w.win));
        if (i && fetched[i] <= fetched[i - 1]) mono = 0;
    }
    TU_MPI(MPI_Win_unlock_all(w.win));
    MPI_Barrier(MPI_COMM_WORLD);
    TU_CHECK(mono, "counter on %s: fetched values of one origin do not increase", tu_flavor_names[flavor]);

    if (0 == me) {
        int64_t final;
        TU_MPI(MPI_Win_lock(MPI_LOCK_SHARED, 0, 0, w.win));
        final = *(int64_t *)w.base;
        TU_MPI(MPI_Win_unlock(0, w.win));
        TU_CHECK(final == (int64_t)nprocs * iters, "counter on %s: final %lld, expected %lld",
                 tu_flavor_names[flavor], (long long)final, (long long)nprocs * iters);
        all = malloc(sizeof(int64_t) * (size_t)iters * nprocs);
    }
    MPI_Gather(fetched, iters, MPI_INT64_T, all, iters, MPI_INT64_T, 0, MPI_COMM_WORLD);
    if (0 == me) {
        int64_t n = (int64_t)iters * nprocs, k;
        qsort(all, (size_t)n, sizeof(int64_t), cmp_i64);
        for (k = 0; k < n; k++)
            if (all[k] != k) break;
        TU_CHECK(k == n, "counter on %s: fetched values are not 0..%lld each once (sorted[%lld] = %lld)",
                 tu_flavor_names[flavor], (long long)n - 1, (long long)k, (long long)(k < n ? all[k] : -1));
        printf("  %-8s counter: %d x %d fetch_and_op in %.2fs\n", tu_flavor_names[flavor], nprocs, iters,
               MPI_Wtime() - t0);
        free(all);
    }
    free(fetched);
    tu_win_free(&w);
}

/* operation k of origin r in the mix: kind 0 = fop, 1 = contiguous acc, 2 = vector acc */
static int mix_kind(int k) { return (k % 2 == 0) ? 0 : (k % 4 == 1 ? 1 : 2); }
static int mix_elem(int k, int r) { return (k * 37 + r * 11) % M; }
static int64_t mix_val(int k, int r, int j) { return ((j + k) % 5) + r + 1; }

/* add origin r's contributions to expected[] */
static void mix_expect(int64_t *expected, int r, int iters)
{
    int k, j;
    for (k = 0; k < iters; k++) {
        switch (mix_kind(k)) {
        case 0: expected[mix_elem(k, r)] += mix_val(k, r, 0); break;
        case 1: for (j = 0; j < M; j++) expected[j] += mix_val(k, r, j); break;
        case 2: for (j = 0; j < M / 2; j++) expected[2 * j + (k / 2) % 2] += mix_val(k, r, j); break;
        }
    }
}

#define MIXBATCH 16

static void mix_test(int flavor, int me, int nprocs, int iters)
{
    tu_win_t w;
    int t = nprocs - 1, k, j, r;
    int64_t *bufs = malloc(sizeof(int64_t) * M * MIXBATCH), res[MIXBATCH];
    MPI_Datatype vec;
    double t0;

    TU_MPI(MPI_Type_vector(M / 2, 1, 2, MPI_INT64_T, &vec));
    TU_MPI(MPI_Type_commit(&vec));
    tu_win_create(flavor, M * sizeof(int64_t), sizeof(int64_t), MPI_INFO_NULL, MPI_COMM_WORLD, &w);
    t0 = MPI_Wtime();
    TU_MPI(MPI_Win_lock_all(0, w.win));
    for (k = 0; k < iters; k++) {
        int64_t *b = bufs + (size_t)(k % MIXBATCH) * M;
        switch (mix_kind(k)) {
        case 0:
            b[0] = mix_val(k, me, 0);
            TU_MPI(MPI_Fetch_and_op(b, &res[k % MIXBATCH], MPI_INT64_T, t, tu_disp(&w, t, mix_elem(k, me)),
                                    MPI_SUM, w.win));
            break;
        case 1:
            for (j = 0; j < M; j++) b[j] = mix_val(k, me, j);
            TU_MPI(MPI_Accumulate(b, M, MPI_INT64_T, t, tu_disp(&w, t, 0), M, MPI_INT64_T, MPI_SUM, w.win));
            break;
        case 2:
            for (j = 0; j < M / 2; j++) b[j] = mix_val(k, me, j);
            TU_MPI(MPI_Accumulate(b, M / 2, MPI_INT64_T, t, tu_disp(&w, t, (k / 2) % 2), 1, vec, MPI_SUM,
                                  w.win));
            break;
        }
        if (k % MIXBATCH == MIXBATCH - 1) TU_MPI(MPI_Win_flush(t, w.win));
    }
    TU_MPI(MPI_Win_unlock_all(w.win));
    MPI_Barrier(MPI_COMM_WORLD);

    if (me == t) {
        int64_t *expected = calloc(M, sizeof(int64_t)), *got = w.base;
        int bad = 0;
        for (r = 0; r < nprocs; r++) mix_expect(expected, r, iters);
        TU_MPI(MPI_Win_lock(MPI_LOCK_SHARED, me, 0, w.win));
        for (j = 0; j < M && bad < 5; j++) {
            if (got[j] != expected[j]) {
                TU_CHECK(0, "mix on %s: element %d = %lld, expected %lld", tu_flavor_names[flavor], j,
                         (long long)got[j], (long long)expected[j]);
                bad++;
            }
        }
        TU_MPI(MPI_Win_unlock(me, w.win));
        printf("  %-8s mix: %d x %d mixed ops in %.2fs\n", tu_flavor_names[flavor], nprocs, iters,
               MPI_Wtime() - t0);
        free(expected);
    }
    MPI_Barrier(MPI_COMM_WORLD);
    tu_win_free(&w);
    MPI_Type_free(&vec);
    free(bufs);
}

#define S 16          /* elements the spans test uses ... */
#define SPAN_BASE 24  /* ... from this one on (across block 32) */

/* operation k of origin r in the spans test: element range [*first, +*count)
 * counted from SPAN_BASE */
static void span_op(int k, int r, int *first, int *count)
{
    if ((k + r) % 2 == 0) {
        *count = 1;
        *first = (k * 7 + r * 3) % S;
    } else {
        *count = 2 + k % 7;
        *first = (k * 5 + r) % (S - *count + 1);
    }
}

static int64_t span_val(int k, int r) { return 1 + (k + r) % 3; }

static void span_test(int flavor, int me, int nprocs, int iters)
{
    tu_win_t w;
    int t = nprocs - 1, k, j, r, first, count;
    int64_t vals[8], res;
    MPI_Info info;
    double t0;

    TU_MPI(MPI_Info_create(&info));
    TU_MPI(MPI_Info_set(info, "mpi_accumulate_granularity", "8"));
    tu_win_create(flavor, (SPAN_BASE + S) * sizeof(int64_t), sizeof(int64_t), info,
                  MPI_COMM_WORLD, &w);
    TU_MPI(MPI_Info_free(&info));
    t0 = MPI_Wtime();
    TU_MPI(MPI_Win_lock_all(0, w.win));
    for (k = 0; k < iters; k++) {
        span_op(k, me, &first, &count);
        for (j = 0; j < count; j++) vals[j] = span_val(k, me);
        if (1 == count) {
            TU_MPI(MPI_Fetch_and_op(vals, &res, MPI_INT64_T, t,
                                    tu_disp(&w, t, SPAN_BASE + first), MPI_SUM, w.win));
        } else {
            TU_MPI(MPI_Accumulate(vals, count, MPI_INT64_T, t, tu_disp(&w, t, SPAN_BASE + first),
                                  count, MPI_INT64_T, MPI_SUM, w.win));
        }
        TU_MPI(MPI_Win_flush(t, w.win));
    }
    TU_MPI(MPI_Win_unlock_all(w.win));
    MPI_Barrier(MPI_COMM_WORLD);

    if (me == t) {
        int64_t expected[SPAN_BASE + S] = {0}, *got = w.base;
        for (r = 0; r < nprocs; r++) {
            for (k = 0; k < iters; k++) {
                span_op(k, r, &first, &count);
                for (j = 0; j < count; j++) expected[SPAN_BASE + first + j] += span_val(k, r);
            }
        }
        TU_MPI(MPI_Win_lock(MPI_LOCK_SHARED, me, 0, w.win));
        for (j = 0; j < SPAN_BASE + S; j++) {
            TU_CHECK(got[j] == expected[j], "spans on %s: element %d = %lld, expected %lld",
                     tu_flavor_names[flavor], j, (long long)got[j], (long long)expected[j]);
        }
        TU_MPI(MPI_Win_unlock(me, w.win));
        printf("  %-8s spans: %d x %d ops in %.2fs\n", tu_flavor_names[flavor], nprocs, iters,
               MPI_Wtime() - t0);
    }
    MPI_Barrier(MPI_COMM_WORLD);
    tu_win_free(&w);
}

int main(int argc, char **argv)
{
    int me, nprocs, flavor, rc;
    int iters, mix_iters, span_iters;
    tu_parse_args(argc, argv);
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &me);
    MPI_Comm_size(MPI_COMM_WORLD, &nprocs);
    iters = tu_env_int("ACC_ITERS", tu_slow_transport() ? 2000 : 10000);
    mix_iters = tu_env_int("ACC_MIX_ITERS", 200);
    span_iters = tu_env_int("ACC_SPAN_ITERS", tu_slow_transport() ? 5000 : 50000);

    for (flavor = 0; flavor < TU_NFLAVORS; flavor++) {
        if (!tu_flavor_enabled(flavor)) continue;
        counter_test(flavor, me, nprocs, iters);
        mix_test(flavor, me, nprocs, mix_iters);
        span_test(flavor, me, nprocs, span_iters);
    }
    rc = tu_finish("acc_contend");
    MPI_Finalize();
    return rc;
}
