/*
 * rma_lat.c - latency of one RMA operation, completed by one
 * synchronization step, as a function of the message size.
 *
 *   mpirun -np 2 rma_lat -o put|get|acc|gacc|fop|cas -w FLAVOR -s SYNC
 *
 * Rank 0 is the origin, rank 1 the target.  One timed iteration is
 *     epoch begin; one operation; epoch end
 * (e.g. MPI_Put + MPI_Win_flush for -s flush, lock/put/unlock for -s lock,
 * put + fence on both ranks for -s fence, start/put/complete against
 * post/wait for -s pscw).  Every iteration is timed separately, or, where
 * the warm-up found iterations shorter than BATCH_S, runs of iterations
 * lasting about BATCH_S are, each giving its mean as one sample: the clock
 * steps by 10 ns on the machines we measure on, so the median of single
 * ~45 ns iterations could only be 40, 50 or 60 ns, and a 1 ns difference
 * between components showed as 25 %.  Each row prints the median, the mean
 * and the minimum of the samples in microseconds.
 *
 * Operations:
 *   put, get   MPI_Put / MPI_Get of SIZE bytes          (default 8 B .. 4 MiB)
 *   acc        MPI_Accumulate  SUM on SIZE/8 uint64     (default 8 B .. 64 KiB)
 *   gacc       MPI_Get_accumulate SUM on SIZE/8 uint64  (default 8 B .. 64 KiB)
 *   fop        MPI_Fetch_and_op SUM on one uint64       (8 B only)
 *   cas        MPI_Compare_and_swap on one uint64       (8 B only)
 */
#include "bench_common.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define BATCH_S 0.5e-6   /* shorter iterations are timed in runs this long */

typedef enum { OP_PUT, OP_GET, OP_ACC, OP_GACC, OP_FOP, OP_CAS, OP_COUNT } op_t;
static const char *op_names[OP_COUNT] = { "put", "get", "acc", "gacc", "fop", "cas" };

/* Issue one operation of `size` bytes to `target` at offset 0 of its window. */
static void do_op(op_t op, bench_win_t *w, int target, size_t size,
                  void *src, void *result, uint64_t *compare)
{
    MPI_Aint disp = bench_disp(w, target, 0);
    int count = (int) (size / sizeof(uint64_t));

    switch (op) {
    case OP_PUT:
        MPI_Put(src, (int) size, MPI_BYTE, target, disp, (int) size, MPI_BYTE, w->win);
        break;
    case OP_GET:
        MPI_Get(result, (int) size, MPI_BYTE, target, disp, (int) size, MPI_BYTE, w->win);
        break;
    case OP_ACC:
        MPI_Accumulate(src, count, MPI_UINT64_T, target, disp, count, MPI_UINT64_T,
                       MPI_SUM, w->win);
        break;
    case OP_GACC:
        MPI_Get_accumulate(src, count, MPI_UINT64_T, result, count, MPI_UINT64_T,
                           target, disp, count, MPI_UINT64_T, MPI_SUM, w->win);
        break;
    case OP_FOP:
        MPI_Fetch_and_op(src, result, MPI_UINT64_T, target, disp, MPI_SUM, w->win);
        break;
    case OP_CAS:
        MPI_Compare_and_swap(src, compare, result, MPI_UINT64_T, target, disp, w->win);
        break;
    default:
        break;
    }
}

int main(int argc, char **argv)
{
    bench_opts_t o;
    bench_win_t w;
    bench_epoch_t e;
    int rank, op = -1;
    char bench[48], *src, *result;
    uint64_t compare = 0;
    double *t;

    bench_init(&argc, &argv, MPI_THREAD_SINGLE);
    bench_opts_defaults(&o, "rma_lat");
    o.max_size = 0;                     /* 0: the operation's default */
    bench_parse_args(argc, argv, &o, "owsmMfiIxTv",
                     "operations (-o): put get acc gacc fop cas\n"
                     "prints: size, median / mean / min latency in microseconds");
    for (int i = 0; i < OP_COUNT; i++) {
        if (0 == strcmp(o.op, op_names[i])) op = i;
    }
    if (op < 0) {
        bench_bad_arg("rma_lat: unknown operation '%s' (put get acc gacc fop cas)", o.op);
    }
    bench_require_np(2, 1);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);

    /* Size range per operation: accumulates are element-wise on uint64. */
    if (op == OP_FOP || op == OP_CAS) {
        o.min_size = o.max_size = sizeof(uint64_t);
    } else if (o.max_size == 0) {
        o.max_size = (op == OP_ACC || op == OP_GACC) ? (64u << 10) : (4u << 20);
    }
    if (op == OP_ACC || op == OP_GACC) {
        if (o.min_size < sizeof(uint64_t)) o.min_size = sizeof(uint64_t);
        if (o.max_size < o.min_size) o.max_size = o.min_size;
    }

    bench_win_create_or_na(&w, o.max_size, o.flavor, MPI_COMM_WORLD);
    src = bench_alloc(o.max_size);
    result = bench_alloc(o.max_size);
    memset(src, 1, o.max_size);
    t = calloc((size_t) (o.iters > o.iters_large ? o.iters : o.iters_large), sizeof(double));
    if (!t) bench_die("out of memory");

    snprintf(bench, sizeof(bench), "%s_lat", op_names[op]);
    bench_print_header(&o, bench, "size_B lat_us mean_us min_us");

    /* rank 0: origin; rank 1: target (needed inside the loop only for
     * fence and PSCW) */
    bench_epoch_setup(&e, &w, o.sync, 1 - rank, rank == 0, rank == 1);

    for (size_t size = o.min_size; size; size = bench_next_size(&o, size)) {
        size_t sz = size;
        int n = bench_iters_for(&o, size);
        if (op == OP_ACC || op == OP_GACC) sz -= sz % sizeof(uint64_t);

        int loop = (rank == 0 || bench_sync_is_active(o.sync));
        double warm = 0.0;

        MPI_Barrier(MPI_COMM_WORLD);
        bench_epoch_open(&e);
        /* warm-up (untimed), which also estimates the cost of an iteration
         * for the -T time budget; then the timed iterations */
        int batch = 1;
        for (int pass = 0; pass < 2; pass++) {
            int count = pass ? n : o.warmup;
            double start = bench_now(), t0 = start;
            for (int i = 0; loop && i < count; i++) {
                if (!pass && i == count / 2) start = bench_now();  /* (past first uses) */
                bench_epoch_begin(&e);
                if (rank == 0) do_op((op_t) op, &w, 1, sz, src, result, &compare);
                bench_epoch_end(&e);
                if (pass && 0 == (i + 1) % batch) {
                    double t1 = bench_now();
                    t[i / batch] = (t1 - t0) / batch;
                    t0 = t1;
                }
            }
            if (!pass) {
                warm = o.warmup ? (bench_now() - start) / (o.warmup - o.warmup / 2) : 0.0;
                n = bench_row_iters(&o, n, warm, MPI_COMM_WORLD);
                if (warm > 0.0 && warm < BATCH_S) batch = (int) ceil(BATCH_S / warm);
                if (batch > n / 5) batch = n / 5 > 1 ? n / 5 : 1;  /* 5 samples at least */
            }
        }
        n /= batch;
        bench_epoch_close(&e);
        MPI_Barrier(MPI_COMM_WORLD);     /* the passive target progresses here */

        if (rank == 0) {
            printf("%zu %.3f %.3f %.3f\n", sz, 1e6 * bench_median(t, n),
                   1e6 * bench_mean(t, n), 1e6 * bench_min(t, n));
        }
    }

    bench_epoch_free(&e);
    bench_win_free(&w);
    free(src);
    free(result);
    free(t);
    MPI_Finalize();
    return 0;
}
