/*
 * rma_scope.c - thread scope and ordering of RMA completion: the osc/ucxx
 * window info keys mpi_win_scope and mpi_win_order (after "Quo Vadis MPI
 * RMA?", Schuchart et al., EuroMPI'21, Figures 8-11).
 *
 *   mpirun -np 2 rma_scope [-o scope,order] [-t 1,2,4,8] [-m 8] [-M 64K] [-f 8]
 *                          [-W 16] [-i N] [-x N] [-T S]
 *
 * MPI_THREAD_MULTIPLE.  Rank 0 is the origin; rank 1 the target, which only
 * waits in a barrier that sleeps between tests (leaving the CPUs to the
 * origin's threads).  Four MPI_Win_allocate windows, with info:
 *   proc   mpi_win_scope=process  a flush completes every thread's operations
 *                                 (what MPI specifies)
 *   thr    mpi_win_scope=thread   a flush completes the calling thread's only
 *   ord    mpi_win_order=true     operations to one target complete in order
 *   plain  no info
 * The keys are osc/ucxx's; other components ignore them (their proc and thr,
 * ord and plain windows behave the same).  A "# note:" line says so when
 * MPI_Win_get_info does not report the key back.  The origin holds a shared
 * lock on the target in every window throughout.
 *
 * scope: for each size and each thread count T of the -t list, T threads
 *   each do -i iterations of  MPI_Put of SIZE bytes to the thread's own slot;
 *   MPI_Win_flush  first on the proc window, then on the thr window.
 *   Columns p<T>_us / t<T>_us: median put+flush latency over all threads'
 *   iterations; p<T>_Mmsgps / t<T>_Mmsgps: all operations divided by the
 *   wall-clock span from the first thread's start to the last one's end
 *   (millions per second; a per-thread time would count only the time slices
 *   each thread ran in when threads outnumber cores).
 * order: the main thread alone; one iteration is W (-W) puts of SIZE bytes
 *   to W consecutive slots of the target:
 *     flush_us   MPI_Put + MPI_Win_flush each            (plain window)
 *     order_us   W x MPI_Put, one MPI_Win_flush at the end (ord window)
 *     batch_us   W x MPI_Put, one MPI_Win_flush at the end (plain window:
 *                no order promised, what pipelining alone gives)
 *   median iteration time divided by W: time per put.
 * With -T, a measurement stops after about that many seconds (at least 5
 * iterations per thread).
 *
 * Row per message size:
 *   size p<T>_us t<T>_us ... p<T>_Mmsgps t<T>_Mmsgps ... flush_us order_us batch_us
 * (the columns of a part not in -o are left out)
 */
#include "bench_common.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_THREADS 64

enum { W_PROC, W_THR, W_ORD, W_PLAIN, W_COUNT };
static const char *win_names[W_COUNT] = { "proc", "thr", "ord", "plain" };
static const char *info_key[W_COUNT] = { "mpi_win_scope", "mpi_win_scope", "mpi_win_order",
                                         NULL };
static const char *info_val[W_COUNT] = { "process", "thread", "true", NULL };

typedef struct {
    int tid, iters, warmup, done;
    size_t size;
    MPI_Win win;
    MPI_Aint disp;
    char *buf;
    double *lat, t_start, t_end, budget;
    pthread_barrier_t *start;
} targ_t;

static void *worker(void *p)
{
    targ_t *a = p;

    a->done = 0;
    for (int i = -a->warmup; i < a->iters; i++) {
        double t0, t1;
        if (i == 0) {
            /* all threads start the timed part together */
            pthread_barrier_wait(a->start);
            a->t_start = bench_now();
        }
        t0 = bench_now();
        MPI_Put(a->buf, (int) a->size, MPI_BYTE, 1, a->disp, (int) a->size, MPI_BYTE, a->win);
        MPI_Win_flush(1, a->win);
        t1 = bench_now();
        if (i >= 0) {
            a->lat[i] = t1 - t0;
            a->done = i + 1;
            if (a->budget > 0 && i >= 4 && t1 - a->t_start > a->budget) break;
        }
    }
    a->t_end = bench_now();
    return NULL;
}

/* T threads doing put+flush on win: median latency (s) and rate (Mmsg/s). */
static void run_threads(const bench_opts_t *o, bench_win_t *w, int nt, size_t size, char *buf,
                        double *all, double *lat, double *rate)
{
    pthread_t tids[MAX_THREADS];
    targ_t args[MAX_THREADS];
    pthread_barrier_t start;
    double first = 0.0, last = 0.0;
    int total = 0;

    pthread_barrier_init(&start, NULL, (unsigned) nt);
    for (int i = 0; i < nt; i++) {
        args[i] = (targ_t) {
            .tid = i, .iters = o->iters, .warmup = o->warmup, .size = size, .win = w->win,
            .disp = bench_disp(w, 1, (size_t) i * o->max_size),
            .buf = buf + (size_t) i * o->max_size, .lat = all + (size_t) i * (size_t) o->iters,
            .budget = o->row_s, .start = &start,
        };
        if (pthread_create(&tids[i], NULL, worker, &args[i])) bench_die("pthread_create failed");
    }
    for (int i = 0; i < nt; i++) {
        pthread_join(tids[i], NULL);
        if (i == 0 || args[i].t_start < first) first = args[i].t_start;
        if (i == 0 || args[i].t_end > last) last = args[i].t_end;
    }
    pthread_barrier_destroy(&start);
    /* gather the recorded latencies of every thread in front */
    for (int i = 0; i < nt; i++) {
        memmove(all + total, args[i].lat, sizeof(double) * (size_t) args[i].done);
        total += args[i].done;
    }
    *lat = bench_median(all, total);
    *rate = last > first ? total / (last - first) / 1e6 : 0.0;
}

/* One ordering measurement on the main thread: median time per put (s). */
static double run_order(const bench_opts_t *o, bench_win_t *w, int flush_each, size_t size,
                        char *buf, double *t)
{
    int n = o->iters;
    double start, warm;

    for (int pass = 0; pass < 2; pass++) {
        int count = pass ? n : o->warmup;
        start = bench_now();
        for (int i = 0; i < count; i++) {
            double t0 = bench_now();
            for (int j = 0; j < o->window; j++) {
                MPI_Put(buf + (size_t) j * size, (int) size, MPI_BYTE, 1,
                        bench_disp(w, 1, (size_t) j * size), (int) size, MPI_BYTE, w->win);
                if (flush_each) MPI_Win_flush(1, w->win);
            }
            if (!flush_each) MPI_Win_flush(1, w->win);
            if (pass) t[i] = (bench_now() - t0) / o->window;
        }
        if (!pass) {
            /* the target sleeps in a barrier: no collective bench_row_iters */
            warm = o->warmup ? (bench_now() - start) / o->warmup : 0.0;
            if (o->row_s > 0 && warm > 0 && n * warm > o->row_s) {
                n = o->row_s / warm < 5 ? 5 : (int) (o->row_s / warm);
            }
        }
    }
    return bench_median(t, n);
}

static void append(char *cols, size_t len, const char *fmt, int v)
{
    size_t used = strlen(cols);
    snprintf(cols + used, len - used, fmt, v, v);
}

int main(int argc, char **argv)
{
    bench_opts_t o;
    bench_win_t w[W_COUNT];
    int rank, counts[MAX_THREADS], ncounts, maxt = 1, do_scope = 0, do_order = 0;
    char cols[2048], list[32], *tok, *save = NULL, *buf;
    double *all, *t;

    bench_init(&argc, &argv, MPI_THREAD_MULTIPLE);
    bench_opts_defaults(&o, "rma_scope");
    strcpy(o.op, "scope,order");
    o.max_size = 64u << 10;
    o.step = 8;
    o.iters = 2000;
    o.warmup = 50;
    o.window = 16;
    bench_parse_args(argc, argv, &o, "otmMfiWxTv",
                     "parts (-o): scope, order or scope,order\n"
                     "-t thread counts (scope); -W puts per flush (order); -i iterations\n"
                     "prints: size, put+flush latency (us) and rate (Mmsg/s) per thread count\n"
                     "with mpi_win_scope=process (p<T>) and =thread (t<T>), then per-put time\n"
                     "(us) of put+flush, W ordered puts + 1 flush, W unordered puts + 1 flush");
    snprintf(list, sizeof(list), "%s", o.op);
    for (tok = strtok_r(list, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
        if (!strcmp(tok, "scope")) do_scope = 1;
        else if (!strcmp(tok, "order")) do_order = 1;
        else bench_bad_arg("rma_scope: unknown part '%s' (scope order)", tok);
    }
    ncounts = bench_parse_list(o.threads, counts, MAX_THREADS, MAX_THREADS);
    if (ncounts <= 0) bench_bad_arg("rma_scope: bad thread list '%s'", o.threads);
    for (int i = 0; i < ncounts; i++) {
        if (counts[i] > maxt) maxt = counts[i];
    }
    bench_require_np(2, 1);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);

    /* the windows, with their info; a slot of max_size per thread / put */
    for (int k = 0; k < W_COUNT; k++) {
        size_t slots = (size_t) (k == W_PROC || k == W_THR ? maxt : o.window);
        MPI_Info info = MPI_INFO_NULL;
        int rc;
        if (info_key[k]) {
            MPI_Info_create(&info);
            MPI_Info_set(info, info_key[k], info_val[k]);
        }
        rc = bench_win_create_info(&w[k], slots * o.max_size, FLAVOR_ALLOCATE, info,
                                   MPI_COMM_WORLD);
        if (info != MPI_INFO_NULL) MPI_Info_free(&info);
        if (rc != MPI_SUCCESS) bench_exit_na("cannot create an 'allocate' window");
        if (info_key[k] && rank == 0) {
            MPI_Info got;
            char val[64] = "";
            int flag = 0;
            MPI_Win_get_info(w[k].win, &got);
            MPI_Info_get(got, info_key[k], (int) sizeof(val) - 1, val, &flag);
            MPI_Info_free(&got);
            if (!flag || strcmp(val, info_val[k])) {
                printf("# note: %s=%s ignored (MPI_Win_get_info reports %s): the %s columns "
                       "measure a plain window\n", info_key[k], info_val[k],
                       flag ? val : "no such key", win_names[k]);
            }
        }
    }

    strcpy(cols, "size_B");
    if (do_scope) {
        for (int i = 0; i < ncounts; i++) append(cols, sizeof(cols), " p%d_us t%d_us", counts[i]);
        for (int i = 0; i < ncounts; i++) {
            append(cols, sizeof(cols), " p%d_Mmsgps t%d_Mmsgps", counts[i]);
        }
    }
    if (do_order) strcat(cols, " flush_us order_us batch_us");
    bench_print_header(&o, "scope", cols);

    buf = bench_alloc((size_t) (maxt > o.window ? maxt : o.window) * o.max_size);
    memset(buf, 1, (size_t) (maxt > o.window ? maxt : o.window) * o.max_size);
    all = calloc((size_t) maxt * (size_t) o.iters, sizeof(double));
    t = calloc((size_t) o.iters, sizeof(double));
    if (!all || !t) bench_die("out of memory");

    if (rank == 0) {
        for (int k = 0; k < W_COUNT; k++) MPI_Win_lock(MPI_LOCK_SHARED, 1, 0, w[k].win);
    }
    for (size_t size = o.min_size; size; size = bench_next_size(&o, size)) {
        double lat[2][MAX_THREADS], rate[2][MAX_THREADS], ord[3] = { 0.0, 0.0, 0.0 };

        bench_sleepy_barrier(MPI_COMM_WORLD, 10);
        if (rank == 0) {
            if (do_scope) {
                for (int i = 0; i < ncounts; i++) {
                    for (int s = 0; s < 2; s++) {
                        run_threads(&o, &w[s == 0 ? W_PROC : W_THR], counts[i], size, buf, all,
                                    &lat[s][i], &rate[s][i]);
                    }
                }
            }
            if (do_order) {
                ord[0] = run_order(&o, &w[W_PLAIN], 1, size, buf, t);
                ord[1] = run_order(&o, &w[W_ORD], 0, size, buf, t);
                ord[2] = run_order(&o, &w[W_PLAIN], 0, size, buf, t);
            }
            printf("%zu", size);
            if (do_scope) {
                for (int i = 0; i < ncounts; i++) {
                    printf(" %.3f %.3f", 1e6 * lat[0][i], 1e6 * lat[1][i]);
                }
                for (int i = 0; i < ncounts; i++) printf(" %.4f %.4f", rate[0][i], rate[1][i]);
            }
            if (do_order) printf(" %.3f %.3f %.3f", 1e6 * ord[0], 1e6 * ord[1], 1e6 * ord[2]);
            printf("\n");
        }
        bench_sleepy_barrier(MPI_COMM_WORLD, 10);
    }
    if (rank == 0) {
        for (int k = 0; k < W_COUNT; k++) MPI_Win_unlock(1, w[k].win);
    }

    for (int k = W_COUNT - 1; k >= 0; k--) bench_win_free(&w[k]);
    free(buf);
    free(all);
    free(t);
    MPI_Finalize();
    return 0;
}
