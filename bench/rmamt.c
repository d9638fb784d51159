/*
 * rmamt.c - multi-threaded put / get in the pattern of RMA-MT's rmamt_bw and
 * rmamt_lat (github.com/hpc/rma-mt; written for this project from a reading
 * of those programs, no RMA-MT code).
 *
 *   mpirun -np 2 rmamt [-o put|get] [-s lock_all,fence] [-t 1,2,4,8] [-m SIZE]
 *                      [-k bw,lat] [-w FLAVOR] [-i N] [-r N] [-n N] [-x N]
 *                      [-X N] [-T SECONDS]                    (rmamt -h)
 *
 * MPI_THREAD_MULTIPLE.  One window on both ranks (MPI_Win_allocate by
 * default, -w) of SIZE bytes per thread; rank 0 runs T threads (thread 0 is
 * its main thread), thread t always puts / gets SIZE bytes from its own
 * origin slot t to (from) slot t of rank 1's window (RMA-MT's unique
 * displacements, -u).  Rank 1 is the target; for each thread count T of -t,
 * each synchronization of -s and each kind of -k one row set is measured.
 * Threads meet in pthread barriers (RMA-MT spins; spinning threads on an
 * oversubscribed 2-core machine only measure the scheduler).
 *
 * bw (rmamt_bw): an epoch is
 *     lock_all: thread 0 MPI_Win_lock_all; barrier; every thread issues N
 *               (-i) operations, then MPI_Win_flush(1) (its own flush,
 *               RMA-MT's all_flush); barrier; thread 0 MPI_Win_unlock_all
 *     fence:    barrier; every thread issues N operations; barrier; thread 0
 *               MPI_Win_fence (rank 1: MPI_Win_fence per epoch)
 *   timed on thread 0 from before the opening call to after the closing one;
 *   -x warm-up epochs (default 2), then -r timed epochs (default 5); the
 *   row reports the median epoch: message rate T*N/time (Mmsg/s, all
 *   threads; RMA-MT sums per-thread rates) and bandwidth (MiB/s, as RMA-MT).
 * lat (rmamt_lat, one window): an iteration is
 *     lock_all: thread 0 MPI_Win_lock_all; barrier; every thread one
 *               operation + MPI_Win_flush(1); barrier; thread 0
 *               MPI_Win_unlock_all
 *     fence:    barrier; every thread one operation; barrier; thread 0
 *               MPI_Win_fence (rank 1 fences in step)
 *   latency of an iteration = time of the opening and closing calls (thread
 *   0) + the mean over the threads of their operation(+flush) times, as
 *   RMA-MT adds them (the thread barriers are not counted); -X warm-up
 *   iterations (default 32, RMA-MT's), -n timed ones (default 1000); the
 *   row gives the mean (RMA-MT's figure) and the median.
 * The target waits in an MPI_Ibarrier tested every 10 us (RMA-MT's -b busy
 * loop, "a non-MPI workload") during lock_all rows and calls MPI_Win_fence
 * in step during fence rows.
 *
 * -T SECONDS caps every (T, sync, kind) measurement: rank 0 estimates an
 * epoch / iteration from the warm-up and cuts the timed count to fit (at
 * least 1 epoch / 5 iterations; fence: told to rank 1 with MPI_Bcast).
 *
 * Values: put - after each row rank 1 checks slots 0..T-1 of its window
 * against rank 0's pattern (cleared before the row); get - rank 0 checks
 * what each thread fetched.  A mismatch aborts the run (MPI_Abort) with a
 * message on stderr.
 *
 * Output (bench_common.h): one row per thread count; per sync S of -s the
 * columns S_Mmsgps S_MiBps (bw) and S_us S_med_us (lat).
 */
#include "bench_common.h"

#include <getopt.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_THREADS 64

enum { S_LOCK_ALL, S_FENCE, S_COUNT };
static const char *const sync_names[S_COUNT] = { "lock_all", "fence" };
enum { K_BW, K_LAT, K_COUNT };
static const char *const kind_names[K_COUNT] = { "bw", "lat" };

static struct {
    int is_get;
    int syncs[S_COUNT];
    int kinds[K_COUNT];
    int threads[MAX_THREADS], nthreads, maxt;
    size_t size;
    bench_flavor_t flavor;
    int ops;                    /* -i: operations per thread per bw epoch */
    int epochs, warm_epochs;    /* -r, -x */
    int lat_iters, lat_warm;    /* -n, -X */
    double cap_s;               /* -T */
} O;

static void usage(const char *prog)
{
    printf("usage: mpirun -np 2 %s [options]\n"
           "  -o OP       put or get (default put)\n"
           "  -s LIST     synchronizations: lock_all, fence (default lock_all,fence)\n"
           "  -t LIST     thread counts of rank 0 (default 1,2,4,8)\n"
           "  -m SIZE     bytes per operation and thread (default 8)\n"
           "  -k LIST     bw (rmamt_bw), lat (rmamt_lat) (default bw,lat)\n"
           "  -w FLAVOR   window: create, allocate, dynamic (default allocate)\n"
           "  -i N        bw: operations per thread per epoch (default 1000, RMA-MT's -i)\n"
           "  -r N        bw: timed epochs, the row shows the median (default 5)\n"
           "  -x N        bw: warm-up epochs (default 2)\n"
           "  -n N        lat: timed iterations (default 1000)\n"
           "  -X N        lat: warm-up iterations (default 32)\n"
           "  -T SECONDS  time cap per thread count, sync and kind (default 0 = none)\n"
           "prints: threads, per sync S: S_Mmsgps S_MiBps (bw: median epoch, all threads)\n"
           "S_us S_med_us (lat: mean and median iteration latency)\n", prog);
}

static int parse_opts(int argc, char **argv)
{
    int c;
    char *end;
    const char *tlist = "1,2,4,8";

    memset(&O, 0, sizeof(O));
    O.syncs[S_LOCK_ALL] = O.syncs[S_FENCE] = 1;
    O.kinds[K_BW] = O.kinds[K_LAT] = 1;
    O.size = 8;
    O.flavor = FLAVOR_ALLOCATE;
    O.ops = 1000;
    O.epochs = 5;
    O.warm_epochs = 2;
    O.lat_iters = 1000;
    O.lat_warm = 32;
    opterr = 0;
    while (-1 != (c = getopt(argc, argv, "o:s:t:m:k:w:i:r:x:n:X:T:h"))) {
        switch (c) {
        case 'o':
            if (!strcmp(optarg, "put")) O.is_get = 0;
            else if (!strcmp(optarg, "get")) O.is_get = 1;
            else return 2;
            break;
        case 's': if (!bench_parse_names(optarg, sync_names, S_COUNT, O.syncs)) return 2; break;
        case 'k': if (!bench_parse_names(optarg, kind_names, K_COUNT, O.kinds)) return 2; break;
        case 't': tlist = optarg; break;
        case 'm': if (bench_parse_size(optarg, &O.size) || O.size == 0) return 2; break;
        case 'w':
            if (bench_parse_flavor(optarg, &O.flavor) || O.flavor == FLAVOR_MEMHANDLE) return 2;
            break;
        case 'i': O.ops = atoi(optarg); if (O.ops < 1) return 2; break;
        case 'r': O.epochs = atoi(optarg); if (O.epochs < 1) return 2; break;
        case 'x': O.warm_epochs = atoi(optarg); if (O.warm_epochs < 0) return 2; break;
        case 'n': O.lat_iters = atoi(optarg); if (O.lat_iters < 1) return 2; break;
        case 'X': O.lat_warm = atoi(optarg); if (O.lat_warm < 0) return 2; break;
        case 'T':
            O.cap_s = strtod(optarg, &end);
            if (*end || O.cap_s < 0) return 2;
            break;
        case 'h': return 1;
        default: return 2;
        }
    }
    if (optind != argc) return 2;
    O.nthreads = bench_parse_list(tlist, O.threads, MAX_THREADS, MAX_THREADS);
    if (O.nthreads <= 0) return 2;
    O.maxt = 1;
    for (int i = 0; i < O.nthreads; i++) if (O.threads[i] > O.maxt) O.maxt = O.threads[i];
    return 0;
}

/* ---- one measurement: T threads, one sync, one kind ---------------------- */

typedef struct {
    int nt, sync, kind;
    bench_win_t *w;
    char *obuf;                 /* rank 0: SIZE bytes per thread */
    pthread_barrier_t bar;
    int go;                     /* thread 0 -> all: run this epoch / iteration */
    int warm, timed;            /* warm-up and timed epochs / iterations */
    double op_s[MAX_THREADS];   /* lat: this iteration's op(+flush) time per thread */
    double *res;                /* timed epoch times (bw) / iteration latencies (lat) */
    double warm_start;          /* thread 0: when the warm-up began */
} run_t;

static void issue(run_t *r, int tid)
{
    MPI_Aint disp = bench_disp(r->w, 1, (size_t) tid * O.size);
    char *buf = r->obuf + (size_t) tid * O.size;
    if (O.is_get) {
        MPI_Get(buf, (int) O.size, MPI_BYTE, 1, disp, (int) O.size, MPI_BYTE, r->w->win);
    } else {
        MPI_Put(buf, (int) O.size, MPI_BYTE, 1, disp, (int) O.size, MPI_BYTE, r->w->win);
    }
}

/* Thread 0, after the warm-up: how many timed epochs / iterations fit in
 * -T (fence: rank 1 learns it in the MPI_Bcast it waits in). */
static void decide(run_t *r, int done_warm)
{
    int planned = r->kind == K_BW ? O.epochs : O.lat_iters;
    int least = r->kind == K_BW ? 1 : 5;
    double est = done_warm ? (bench_now() - r->warm_start) / done_warm : 0.0;
    r->timed = planned;
    if (O.cap_s > 0 && est > 0 && planned * est > O.cap_s) {
        double fit = O.cap_s / est;
        r->timed = fit < least ? least : (int) fit;
    }
    if (r->sync == S_FENCE) MPI_Bcast(&r->timed, 1, MPI_INT, 0, MPI_COMM_WORLD);
}

typedef struct {
    run_t *r;
    int tid;
} targ_t;

static void *thread_main(void *p)
{
    targ_t *a = p;
    run_t *r = a->r;
    int tid = a->tid, lock_all = (r->sync == S_LOCK_ALL);
    MPI_Win win = r->w->win;

    for (int e = 0;; e++) {
        double t0 = 0.0, a0 = 0.0, a1 = 0.0;
        if (tid == 0) {
            if (e == 0) r->warm_start = bench_now();
            if (e == r->warm) decide(r, e);
            r->go = e < r->warm + r->timed;
            if (r->go) {
                t0 = a0 = bench_now();
                if (lock_all) MPI_Win_lock_all(0, win);
                a1 = bench_now();
            }
        }
        pthread_barrier_wait(&r->bar);
        if (!r->go) break;
        if (r->kind == K_BW) {
            for (int k = 0; k < O.ops; k++) issue(r, tid);
            if (lock_all) MPI_Win_flush(1, win);
        } else {
            double s = bench_now();
            issue(r, tid);
            if (lock_all) MPI_Win_flush(1, win);
            r->op_s[tid] = bench_now() - s;
        }
        pthread_barrier_wait(&r->bar);
        if (tid == 0) {
            double b0 = bench_now(), b1;
            if (lock_all) MPI_Win_unlock_all(win);
            else MPI_Win_fence(0, win);
            b1 = bench_now();
            if (e >= r->warm) {
                if (r->kind == K_BW) {
                    r->res[e - r->warm] = b1 - t0;
                } else {
                    double sum = 0.0;
                    for (int t = 0; t < r->nt; t++) sum += r->op_s[t];
                    r->res[e - r->warm] = (a1 - a0) + (b1 - b0) + sum / r->nt;
                }
            }
        }
    }
    return NULL;
}


/* Rank 1 during a fence measurement: rank 0's thread 0 opens with a fence
 * (before its threads start), closes each warm-up epoch / iteration with
 * one, tells the timed count (MPI_Bcast) and closes each timed one. */
static void target_fences(run_t *r)
{
    int warm = r->kind == K_BW ? O.warm_epochs : O.lat_warm, timed = 0;
    MPI_Win_fence(0, r->w->win);
    for (int e = 0; e < warm; e++) MPI_Win_fence(0, r->w->win);
    MPI_Bcast(&timed, 1, MPI_INT, 0, MPI_COMM_WORLD);
    for (int e = 0; e < timed; e++) MPI_Win_fence(0, r->w->win);
}

#define SEED_PUT 11u            /* rank 0's origin data */
#define SEED_GET 23u            /* rank 1's window data */

/* 1 when buf holds the pattern; else says where it differs (stderr), 0 */
static int check(const void *buf, size_t n, unsigned seed, const run_t *r, const char *what)
{
    size_t bad = bench_check_pattern(buf, n, seed);
    if (bad != (size_t) -1) {
        fprintf(stderr, "rmamt: WRONG VALUE: %s %zu B x %d threads, %s window, %s (%s): %s "
                "differs at byte %zu of %zu (thread %zu's slot; 0x%02x, expected 0x%02x)\n",
                O.is_get ? "get" : "put", O.size, r->nt, bench_flavor_names[O.flavor],
                sync_names[r->sync], kind_names[r->kind], what, bad, n, bad / O.size,
                ((const unsigned char *) buf)[bad], bench_pattern_byte(bad, seed));
        return 0;
    }
    return 1;
}

/* Collective: one measurement; rank 0 returns the values of its columns. */
static void measure(bench_win_t *w, char *obuf, int nt, int sync, int kind, int rank,
                    double *res, double out[2])
{
    run_t r;
    size_t bytes = (size_t) nt * O.size;
    int ok = 1;

    memset(&r, 0, sizeof(r));
    r.nt = nt;
    r.sync = sync;
    r.kind = kind;
    r.w = w;
    r.obuf = obuf;
    r.res = res;
    r.warm = kind == K_BW ? O.warm_epochs : O.lat_warm;
    r.timed = 0;

    bench_sleepy_barrier(MPI_COMM_WORLD, 10);
    if (rank == 1 && !O.is_get) memset(w->base, 0, (size_t) O.maxt * O.size);
    if (rank == 0 && O.is_get) memset(obuf, 0, (size_t) O.maxt * O.size);
    bench_sleepy_barrier(MPI_COMM_WORLD, 10);

    if (rank == 0) {
        pthread_t tids[MAX_THREADS];
        targ_t args[MAX_THREADS];
        pthread_barrier_init(&r.bar, NULL, (unsigned) nt);
        if (sync == S_FENCE) MPI_Win_fence(0, w->win);
        for (int t = 0; t < nt; t++) {
            args[t].r = &r;
            args[t].tid = t;
            if (t > 0 && pthread_create(&tids[t], NULL, thread_main, &args[t])) {
                bench_die("pthread_create failed");
            }
        }
        thread_main(&args[0]);
        for (int t = 1; t < nt; t++) pthread_join(tids[t], NULL);
        pthread_barrier_destroy(&r.bar);
    } else if (sync == S_FENCE) {
        target_fences(&r);
    }
    /* the passive target waits here (MPI_Ibarrier tested every 10 us) */
    bench_sleepy_barrier(MPI_COMM_WORLD, 10);

    /* values; both ranks learn the verdict before rank 0 prints the row */
    if (rank == 1 && !O.is_get) ok = check(w->base, bytes, SEED_PUT, &r, "the target window");
    if (rank == 0 && O.is_get) ok = check(obuf, bytes, SEED_GET, &r, "the fetched data");
    MPI_Allreduce(MPI_IN_PLACE, &ok, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
    if (!ok) bench_die("wrong value after the measurement (see the WRONG VALUE line)");

    if (rank == 0) {
        if (kind == K_BW) {
            double m = bench_median(res, r.timed);
            double msgs = (double) nt * O.ops;
            out[0] = msgs / m / 1e6;
            out[1] = msgs * (double) O.size / m / (1024.0 * 1024.0);
        } else {
            out[0] = 1e6 * bench_mean(res, r.timed);
            out[1] = 1e6 * bench_median(res, r.timed);
        }
        printf("# iters: threads=%d %s %s %d %s\n", nt, sync_names[sync], kind_names[kind],
               r.timed, kind == K_BW ? "epochs" : "iterations");
    }
}

int main(int argc, char **argv)
{
    int prc = parse_opts(argc, argv), rank, np, rc;
    bench_win_t w;
    char *obuf, line[2048];
    double *res;
    size_t n = 0;

    bench_init(&argc, &argv, MPI_THREAD_MULTIPLE);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &np);
    bench_opts_checked(prc, "rmamt", argv[0], usage);
    if (np != 2) bench_bad_arg("rmamt: needs exactly 2 ranks");

    rc = bench_win_create(&w, (size_t) O.maxt * O.size, O.flavor, MPI_COMM_WORLD);
    if (rc != MPI_SUCCESS) {
        char msg[MPI_MAX_ERROR_STRING] = "";
        int len = 0;
        MPI_Error_string(rc, msg, &len);
        bench_exit_na("cannot create a '%s' window with this osc component (%s)",
                      bench_flavor_names[O.flavor], msg);
    }
    obuf = bench_alloc((size_t) O.maxt * O.size);
    if (!O.is_get) bench_fill_pattern(obuf, (size_t) O.maxt * O.size, SEED_PUT);
    if (O.is_get && rank == 1) bench_fill_pattern(w.base, (size_t) O.maxt * O.size, SEED_GET);
    res = calloc((size_t) (O.epochs > O.lat_iters ? O.epochs : O.lat_iters), sizeof(double));
    if (!res) bench_die("out of memory");

    if (rank == 0) {
        const char *osc = getenv("OMPI_MCA_osc");
        printf("# bench=rmamt op=%s flavor=%s size=%zu np=%d osc=%s\n", O.is_get ? "get" : "put",
               bench_flavor_names[O.flavor], O.size, np, osc ? osc : "default");
        printf("# RMA-MT pattern: rank 0's threads each %s %zu B to (from) their own slot of "
               "rank 1's window\n", O.is_get ? "get" : "put", O.size);
        if (O.kinds[K_BW]) {
            printf("# bw: epochs of %d ops per thread (lock_all: + MPI_Win_flush per thread), "
                   "median of %d epochs; Mmsgps = all threads, MiBps = 2^20 B/s\n",
                   O.ops, O.epochs);
        }
        if (O.kinds[K_LAT]) {
            printf("# lat: per iteration one op per thread (lock_all: + MPI_Win_flush), "
                   "sync time + mean thread op time; _us = mean (RMA-MT), _med_us = median\n");
        }
        if (O.cap_s > 0) printf("# time cap per thread count, sync and kind: %.3g s\n", O.cap_s);
        n += (size_t) snprintf(line + n, sizeof(line) - n, "# columns: threads");
        for (int s = 0; s < S_COUNT; s++) {
            if (!O.syncs[s]) continue;
            if (O.kinds[K_BW]) {
                n += (size_t) snprintf(line + n, sizeof(line) - n, " %s_Mmsgps %s_MiBps",
                                       sync_names[s], sync_names[s]);
            }
            if (O.kinds[K_LAT]) {
                n += (size_t) snprintf(line + n, sizeof(line) - n, " %s_us %s_med_us",
                                       sync_names[s], sync_names[s]);
            }
            if (n >= sizeof(line)) n = sizeof(line) - 1;
        }
        printf("%s\n", line);
    }

    for (int ti = 0; ti < O.nthreads; ti++) {
        int nt = O.threads[ti];
        n = 0;
        n += (size_t) snprintf(line + n, sizeof(line) - n, "%d", nt);
        for (int s = 0; s < S_COUNT; s++) {
            if (!O.syncs[s]) continue;
            for (int k = 0; k < K_COUNT; k++) {
                double out[2] = { 0, 0 };
                if (!O.kinds[k]) continue;
                measure(&w, obuf, nt, s, k, rank, res, out);
                n += (size_t) snprintf(line + n, sizeof(line) - n,
                                       k == K_BW ? " %.4f %.2f" : " %.3f %.3f", out[0], out[1]);
                if (n >= sizeof(line)) n = sizeof(line) - 1;
            }
        }
        if (rank == 0) printf("%s\n", line);
    }

    bench_win_free(&w);
    free(obuf);
    free(res);
    MPI_Finalize();
    return 0;
}
