/*
 * rma_mt.c - multi-threaded RMA message rate and latency (RMA-MT style).
 *
 *   mpirun -np 2 rma_mt -o put|get -t 1,2,4,8 [-s flush|flush_local] [-m 8]
 *
 * MPI_THREAD_MULTIPLE.  Rank 0 takes a shared lock on rank 1 once, then for
 * each thread count T starts T threads; each thread does -i iterations of
 *     MPI_Put (or MPI_Get) of SIZE bytes to its own slot of the target window
 *     MPI_Win_flush (or MPI_Win_flush_local) on the target
 * The flushes are process-scope: a flush from one thread also completes the
 * operations the other threads issued, as MPI specifies.
 * Rank 1 only exposes its window and waits in a barrier that sleeps between
 * tests, leaving the CPUs to the origin threads.
 *
 * Each row: T, the aggregate message rate (all threads' operations divided by
 * the wall-clock span from the first thread's start to the last thread's end,
 * millions per second; with more threads than cores, a per-thread time would
 * count only the time slices each thread ran in and report the scheduler) and the median latency of
 * one operation+flush over all threads' iterations (microseconds).
 */
#include "bench_common.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_THREADS 64

typedef struct {
    int tid, iters, warmup, is_get, flush_local;
    size_t size;
    bench_win_t *w;
    char *buf;                 /* this thread's origin buffer */
    double *lat;               /* iters per-operation times */
    double t_start, t_end;     /* when this thread's timed loop began and ended */
    pthread_barrier_t *start;
} thread_arg_t;

static void *worker(void *p)
{
    thread_arg_t *a = p;
    bench_win_t *w = a->w;
    MPI_Aint disp = bench_disp(w, 1, (size_t) a->tid * a->size);

    for (int i = -a->warmup; i < a->iters; i++) {
        double t0;
        if (i == 0) {
            /* all threads start the timed part together */
            pthread_barrier_wait(a->start);
            a->t_start = bench_now();
        }
        t0 = bench_now();
        if (a->is_get) {
            MPI_Get(a->buf, (int) a->size, MPI_BYTE, 1, disp, (int) a->size, MPI_BYTE, w->win);
        } else {
            MPI_Put(a->buf, (int) a->size, MPI_BYTE, 1, disp, (int) a->size, MPI_BYTE, w->win);
        }
        if (a->flush_local) {
            MPI_Win_flush_local(1, w->win);
        } else {
            MPI_Win_flush(1, w->win);
        }
        if (i >= 0) a->lat[i] = bench_now() - t0;
    }
    a->t_end = bench_now();
    return NULL;
}

int main(int argc, char **argv)
{
    bench_opts_t o;
    bench_win_t w;
    int rank, counts[MAX_THREADS], ncounts = 0, maxt = 1, is_get;
    char bench[48], *list, *tok, *save = NULL, *buf;

    bench_init(&argc, &argv, MPI_THREAD_MULTIPLE);
    bench_opts_defaults(&o, "rma_mt");
    o.min_size = 8;
    o.iters = 10000;
    o.warmup = 100;
    bench_parse_args(argc, argv, &o, "owsmtixv",
                     "operations (-o): put get; sync (-s): flush flush_local;\n"
                     "-m is the message size; -i the iterations per thread\n"
                     "prints: threads, message rate in Mmsg/s, median op+flush latency in us");
    if (strcmp(o.op, "put") && strcmp(o.op, "get")) {
        bench_bad_arg("rma_mt: unknown operation '%s' (put get)", o.op);
    }
    if (o.sync != SYNC_FLUSH && o.sync != SYNC_FLUSH_LOCAL) {
        bench_bad_arg("rma_mt: sync must be flush or flush_local");
    }
    is_get = !strcmp(o.op, "get");
    list = strdup(o.threads);
    for (tok = strtok_r(list, ",", &save); tok && ncounts < MAX_THREADS;
         tok = strtok_r(NULL, ",", &save)) {
        int t = atoi(tok);
        if (t < 1 || t > MAX_THREADS) bench_bad_arg("rma_mt: bad thread count '%s'", tok);
        counts[ncounts++] = t;
        if (t > maxt) maxt = t;
    }
    free(list);
    if (ncounts == 0) bench_bad_arg("rma_mt: empty thread list");
    bench_require_np(2, 1);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);

    /* one slot of SIZE bytes per thread */
    bench_win_create_or_na(&w, o.min_size * (size_t) maxt, o.flavor, MPI_COMM_WORLD);
    buf = bench_alloc(o.min_size * (size_t) maxt);
    memset(buf, 1, o.min_size * (size_t) maxt);

    snprintf(bench, sizeof(bench), "mt_%s", o.op);
    o.max_size = o.min_size;
    bench_print_header(&o, bench, "threads Mmsgps lat_us");

    if (rank == 0) MPI_Win_lock(MPI_LOCK_SHARED, 1, 0, bench_lock_win(&w));

    for (int c = 0; c < ncounts; c++) {
        int nt = counts[c];
        pthread_t tids[MAX_THREADS];
        thread_arg_t args[MAX_THREADS];
        pthread_barrier_t start;

        bench_sleepy_barrier(MPI_COMM_WORLD, 10);
        if (rank == 0) {
            double *all = calloc((size_t) nt * (size_t) o.iters, sizeof(double));
            double first = 0.0, last = 0.0;
            if (!all) bench_die("out of memory");
            pthread_barrier_init(&start, NULL, (unsigned) nt);
            for (int i = 0; i < nt; i++) {
                args[i] = (thread_arg_t) {
                    .tid = i, .iters = o.iters, .warmup = o.warmup, .is_get = is_get,
                    .flush_local = (o.sync == SYNC_FLUSH_LOCAL), .size = o.min_size,
                    .w = &w, .buf = buf + (size_t) i * o.min_size,
                    .lat = all + (size_t) i * (size_t) o.iters, .start = &start,
                };
                if (pthread_create(&tids[i], NULL, worker, &args[i])) {
                    bench_die("pthread_create failed");
                }
            }
            for (int i = 0; i < nt; i++) {
                pthread_join(tids[i], NULL);
                if (i == 0 || args[i].t_start < first) first = args[i].t_start;
                if (i == 0 || args[i].t_end > last) last = args[i].t_end;
            }
            pthread_barrier_destroy(&start);
            printf("%d %.4f %.3f\n", nt, (double) nt * o.iters / (last - first) / 1e6,
                   1e6 * bench_median(all, nt * o.iters));
            free(all);
        }
        bench_sleepy_barrier(MPI_COMM_WORLD, 10);
    }

    if (rank == 0) MPI_Win_unlock(1, bench_lock_win(&w));
    bench_win_free(&w);
    free(buf);
    MPI_Finalize();
    return 0;
}
