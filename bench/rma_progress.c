/*
 * rma_progress.c - does the origin make progress while the target computes
 * outside MPI?
 *
 *   mpirun -np 2 rma_progress [-o put,acc] [-S 1.0] [-w FLAVOR] [-m 8]
 *
 * For each operation in the -o list (put, get, acc, fop):
 *   1. baseline: rank 0 holds a shared lock on rank 1 and times -i
 *      iterations of  op + MPI_Win_flush  while rank 1 waits in MPI_Barrier
 *      (i.e. inside MPI, progressing);
 *   2. sleep phase: rank 1 spends -S seconds in a usleep() loop without any
 *      MPI call; meanwhile rank 0 keeps doing  op + MPI_Win_flush  for 90% of
 *      that time and times each one.
 * If the implementation needs the target to enter MPI to complete the
 * operation, the first op of phase 2 waits until the target wakes up.
 *
 * Row per operation: op, baseline median (us), sleep-phase median and max
 * (us), number of ops completed during the sleep, and blocked = 1 when some
 * op during the sleep took at least a quarter of the sleep time.
 */
#include "bench_common.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define MAX_SAMPLES (1 << 20)

/* Wall clock that is not an MPI call (the target must stay out of MPI). */
static double wall(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + 1e-9 * ts.tv_nsec;
}

static int op_code(const char *op)
{
    static const char *names[] = { "put", "get", "acc", "fop" };
    for (int i = 0; i < 4; i++) {
        if (!strcmp(op, names[i])) return i;
    }
    return -1;
}

static void do_op(int op, bench_win_t *w, size_t size, char *src, char *dst)
{
    MPI_Aint disp = bench_disp(w, 1, 0);
    int count = (int) (size / sizeof(uint64_t));
    switch (op) {
    case 0: MPI_Put(src, (int) size, MPI_BYTE, 1, disp, (int) size, MPI_BYTE, w->win); break;
    case 1: MPI_Get(dst, (int) size, MPI_BYTE, 1, disp, (int) size, MPI_BYTE, w->win); break;
    case 2: MPI_Accumulate(src, count > 0 ? count : 1, MPI_UINT64_T, 1, disp,
                           count > 0 ? count : 1, MPI_UINT64_T, MPI_SUM, w->win); break;
    case 3: MPI_Fetch_and_op(src, dst, MPI_UINT64_T, 1, disp, MPI_SUM, w->win); break;
    }
    MPI_Win_flush(1, w->win);
}

int main(int argc, char **argv)
{
    bench_opts_t o;
    bench_win_t w;
    int rank;
    char ops[sizeof(o.op)], *tok, *save = NULL, *src, *dst;
    double *t;

    bench_init(&argc, &argv, MPI_THREAD_SINGLE);
    bench_opts_defaults(&o, "rma_progress");
    strcpy(o.op, "put,acc");
    o.iters = 1000;
    bench_parse_args(argc, argv, &o, "owmSixv",
                     "operations (-o, comma separated): put get acc fop\n"
                     "prints: op, baseline / sleep-phase median and max latency (us), "
                     "ops during the sleep, blocked (0/1)");
    bench_require_np(2, 1);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    snprintf(ops, sizeof(ops), "%s", o.op);
    for (tok = strtok_r(ops, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
        if (op_code(tok) < 0) bench_bad_arg("rma_progress: unknown operation '%s'", tok);
    }
    if (o.min_size < sizeof(uint64_t)) o.min_size = sizeof(uint64_t);
    o.max_size = o.min_size;
    o.sync = SYNC_FLUSH;

    bench_win_create_or_na(&w, o.min_size, o.flavor, MPI_COMM_WORLD);
    src = bench_alloc(o.min_size);
    dst = bench_alloc(o.min_size);
    t = calloc(MAX_SAMPLES > o.iters ? MAX_SAMPLES : o.iters, sizeof(double));
    if (!t) bench_die("out of memory");
    bench_print_header(&o, "progress", "op base_us sleep_med_us sleep_max_us sleep_ops blocked");

    snprintf(ops, sizeof(ops), "%s", o.op);
    save = NULL;
    for (tok = strtok_r(ops, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
        int op = op_code(tok), n = 0;
        long done = 0;
        double base = 0.0, med, worst = 0.0, t0;

        /* 1. baseline, target inside MPI */
        MPI_Barrier(MPI_COMM_WORLD);
        if (rank == 0) {
            MPI_Win_lock(MPI_LOCK_SHARED, 1, 0, bench_lock_win(&w));
            for (int i = -o.warmup; i < o.iters; i++) {
                double s = bench_now();
                do_op(op, &w, o.min_size, src, dst);
                if (i >= 0) t[i] = bench_now() - s;
            }
            base = bench_median(t, o.iters);
        }
        MPI_Barrier(MPI_COMM_WORLD);

        /* 2. target sleeps outside MPI */
        t0 = wall();
        if (rank == 1) {
            while (wall() - t0 < o.sleep_s) usleep(1000);
        } else {
            while (wall() - t0 < 0.9 * o.sleep_s) {
                double s = wall(), d;
                do_op(op, &w, o.min_size, src, dst);
                d = wall() - s;
                if (n < MAX_SAMPLES) t[n++] = d;
                if (d > worst) worst = d;
                done++;
            }
        }
        MPI_Barrier(MPI_COMM_WORLD);

        if (rank == 0) {
            MPI_Win_unlock(1, bench_lock_win(&w));
            med = bench_median(t, n);
            printf("%s %.3f %.3f %.1f %ld %d\n", tok, 1e6 * base, 1e6 * med, 1e6 * worst,
                   done, worst >= 0.25 * o.sleep_s ? 1 : 0);
        }
    }

    bench_win_free(&w);
    free(src);
    free(dst);
    free(t);
    MPI_Finalize();
    return 0;
}
