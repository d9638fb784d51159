/*
 * progress_cost.c - what a progress thread costs a target that computes
 * outside MPI.
 *
 *   mpirun -np 2 progress_cost [-S 1.0] [-r 6] [-w FLAVOR] [-p osc_ucxx_prog]
 *
 * Rank 1, the target, computes -S seconds outside MPI (a floating-point loop
 * that touches no memory), -r rounds of two phases each, their order
 * alternating from round to round:
 *   idle  rank 0 sleeps outside MPI meanwhile: no RMA at all;
 *   busy  rank 0 runs MPI_Win_lock(EXCLUSIVE) + 8 B MPI_Put + MPI_Win_unlock
 *         epochs against rank 1 for 90 % of the phase (they complete only
 *         if something serves them while rank 1 computes).
 * Per phase the target reports its compute rate (work units per second of
 * wall clock), and the CPU time the progress thread used meanwhile, per
 * second (from the thread's own CPU clock: the kernel's count of the time
 * it ran, to the nanosecond, which load on the machine does not move), and
 * the CPU time of all its other threads (UCX's, the runtime's) per second.
 * The thread is found by its name (-p, /proc/self/task/TID/comm); without
 * one its columns are n/a.
 *
 * Rows: round phase rate crate tcpu ocpu epochs epoch_us (crate: work
 * units per second of the compute thread's own CPU time: what sharing its
 * caches costs it, not what losing its core does); then a summary: the
 * compute rates of busy phases over the idle phase of the same round
 * (median, min-max), and the thread's CPU per second in each kind of phase
 * and per epoch served.  The rate is wall clock: load on the machine moves
 * it; the CPU columns it does not.
 */
#include "bench_common.h"

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
#include <time.h>
#include <unistd.h>

#define MAX_ROUNDS 64

static struct {
    double s;
    int rounds;
    bench_flavor_t flavor;
    char thread[16];
} opt = {1.0, 6, FLAVOR_ALLOCATE, "osc_ucxx_prog"};

static double clock_s(clockid_t clock)
{
    struct timespec ts;
    if (0 != clock_gettime(clock, &ts)) return -1;
    return ts.tv_sec + 1e-9 * ts.tv_nsec;
}

static double wall(void) { return clock_s(CLOCK_MONOTONIC); }

/* The CPU clock of a thread of this process by its id (what glibc's
 * pthread_getcpuclockid makes from a pthread_t: Linux's encoding). */
static clockid_t tid_clock(pid_t tid)
{
    return (clockid_t) ((~(unsigned) tid << 3) | 6);
}

/* The id of our thread named `name`, or -1. */
static pid_t find_thread(const char *name)
{
    DIR *d = opendir("/proc/self/task");
    struct dirent *e;
    pid_t found = -1;

    if (NULL == d) return -1;
    while (found < 0 && NULL != (e = readdir(d))) {
        char path[300], comm[32] = "";
        FILE *f;
        if ('.' == e->d_name[0]) continue;
        snprintf(path, sizeof(path), "/proc/self/task/%s/comm", e->d_name);
        if (NULL == (f = fopen(path, "r"))) continue;
        if (NULL != fgets(comm, sizeof(comm), f)) {
            comm[strcspn(comm, "\n")] = '\0';
            if (0 == strcmp(comm, name)) found = (pid_t) atoi(e->d_name);
        }
        fclose(f);
    }
    closedir(d);
    return found;
}

typedef struct {
    double rate, crate;        /* units per second of wall clock, of our own CPU time */
    double tcpu, ocpu;         /* CPU s per s: the thread, the other threads */
} phase_t;

/* Compute opt.s seconds outside MPI. */
static phase_t compute(pid_t prog)
{
    volatile double x = 1.0;
    long units = 0;
    phase_t p;
    clockid_t tc = tid_clock(prog);
    double t0 = wall(), t, p0 = clock_s(CLOCK_PROCESS_CPUTIME_ID);
    double c0 = clock_s(CLOCK_THREAD_CPUTIME_ID), g0 = prog > 0 ? clock_s(tc) : -1, g1;

    do {
        for (int j = 0; j < 1000; j++) x = x * 1.0000001 + 1e-9;
        units++;
    } while ((t = wall()) - t0 < opt.s);
    g1 = prog > 0 ? clock_s(tc) : -1;
    p.rate = units / (t - t0);
    p.crate = units / (clock_s(CLOCK_THREAD_CPUTIME_ID) - c0);
    p.tcpu = g0 >= 0 && g1 >= 0 ? (g1 - g0) / (t - t0) : -1;
    p.ocpu = ((clock_s(CLOCK_PROCESS_CPUTIME_ID) - p0) - (clock_s(CLOCK_THREAD_CPUTIME_ID) - c0)) /
             (t - t0);
    if (p.tcpu >= 0) p.ocpu -= p.tcpu;
    if (p.ocpu < 0) p.ocpu = 0;   /* clock granularity */
    return p;
}

/* The origin's side of a busy phase: epochs for 90 % of it. */
static int epochs(bench_win_t *w, double *busy_s)
{
    uint64_t v = 0;
    int n = 0;
    double t0 = wall();

    usleep(20000);   /* the target is computing by now */
    while (wall() - t0 < 0.9 * opt.s) {
        ++v;
        MPI_Win_lock(MPI_LOCK_EXCLUSIVE, 1, 0, w->win);
        MPI_Put(&v, 1, MPI_UINT64_T, 1, bench_disp(w, 1, 0), 1, MPI_UINT64_T, w->win);
        MPI_Win_unlock(1, w->win);
        ++n;
    }
    *busy_s = wall() - t0 - 0.02;
    return n;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *) a, y = *(const double *) b;
    return x < y ? -1 : x > y;
}

/* median (min-max) of v[0..n) */
static void spread(const char *what, double *v, int n, double scale, const char *unit)
{
    if (n <= 0 || v[0] < 0) {
        printf("# %s: n/a\n", what);
        return;
    }
    qsort(v, n, sizeof(double), cmp_double);
    printf("# %s: %.4g %s (%.4g-%.4g, %d phases)\n", what, scale * bench_median(v, n), unit,
           scale * v[0], scale * v[n - 1], n);
}

static void usage(const char *prog)
{
    fprintf(stderr, "usage: mpirun -np 2 %s [-S seconds] [-r rounds] [-w FLAVOR] [-p THREAD]\n",
            prog);
}

static int parse_opts(int argc, char **argv)
{
    int c;
    while (-1 != (c = getopt(argc, argv, "S:r:w:p:h"))) {
        switch (c) {
        case 'S': opt.s = atof(optarg); break;
        case 'r': opt.rounds = atoi(optarg); break;
        case 'w':
            if (0 != bench_parse_flavor(optarg, &opt.flavor)) return 2;
            break;
        case 'p': snprintf(opt.thread, sizeof(opt.thread), "%s", optarg); break;
        default: return 1;
        }
    }
    return opt.s <= 0 || opt.s > 60 || opt.rounds < 1 || opt.rounds > MAX_ROUNDS ? 2 : 0;
}

int main(int argc, char **argv)
{
    int prc = parse_opts(argc, argv), rank, np, nb = 0, ni = 0;
    bench_win_t w;
    pid_t prog = -1;
    double ratio[MAX_ROUNDS], tidle[MAX_ROUNDS], tbusy[MAX_ROUNDS], per_epoch[MAX_ROUNDS];
    double oidle[MAX_ROUNDS], obusy[MAX_ROUNDS], cratio[MAX_ROUNDS];

    bench_init(&argc, &argv, MPI_THREAD_SINGLE);
    bench_opts_checked(prc, "progress_cost", argv[0], usage);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &np);
    bench_require_np(2, 1);
    bench_win_create_or_na(&w, 4096, opt.flavor, MPI_COMM_WORLD);
    /* one epoch first: the thread exists by now wherever the component
     * starts one (at its first window at the latest) */
    if (0 == rank) {
        uint64_t v = 0;
        MPI_Win_lock(MPI_LOCK_EXCLUSIVE, 1, 0, w.win);
        MPI_Put(&v, 1, MPI_UINT64_T, 1, bench_disp(&w, 1, 0), 1, MPI_UINT64_T, w.win);
        MPI_Win_unlock(1, w.win);
    }
    MPI_Barrier(MPI_COMM_WORLD);
    if (1 == rank) prog = find_thread(opt.thread);
    if (0 == rank) {
        const char *osc = getenv("OMPI_MCA_osc");
        printf("# bench=progress_cost flavor=%s S=%.2f rounds=%d osc=%s\n",
               bench_flavor_names[opt.flavor], opt.s, opt.rounds, osc ? osc : "default");
        printf("# columns: round phase rate crate tcpu ocpu epochs epoch_us\n");
        fflush(stdout);
    }
    for (int r = 0; r < opt.rounds; r++) {
        phase_t ph[2];
        for (int k = 0; k < 2; k++) {
            int busy = (k + r) % 2, n = 0;   /* idle-busy, then busy-idle, ... */
            double out[4], busy_s = 0;
            MPI_Barrier(MPI_COMM_WORLD);
            if (1 == rank) {
                ph[busy] = compute(prog);
            } else if (busy) {
                n = epochs(&w, &busy_s);
            } else {
                usleep((useconds_t) (opt.s * 1e6));
            }
            MPI_Barrier(MPI_COMM_WORLD);
            out[0] = 1 == rank ? ph[busy].rate : 0;
            out[1] = 1 == rank ? ph[busy].tcpu : 0;
            out[2] = 1 == rank ? ph[busy].ocpu : 0;
            out[3] = 1 == rank ? ph[busy].crate : 0;
            if (1 == rank) MPI_Send(out, 4, MPI_DOUBLE, 0, 5, MPI_COMM_WORLD);
            if (0 == rank) {
                MPI_Recv(out, 4, MPI_DOUBLE, 1, 5, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
                ph[busy].rate = out[0];
                ph[busy].tcpu = out[1];
                ph[busy].ocpu = out[2];
                ph[busy].crate = out[3];
                printf("%d %s %.0f %.0f %.5f %.5f %d %.1f\n", r, busy ? "busy" : "idle", out[0],
                       out[3], out[1], out[2], n, n > 0 ? 1e6 * busy_s / n : 0.0);
                fflush(stdout);
                if (busy) {
                    tbusy[nb] = out[1];
                    obusy[nb] = out[2];
                    per_epoch[nb++] = n > 0 && out[1] >= 0 ? out[1] * opt.s / n : -1;
                } else {
                    tidle[ni] = out[1];
                    oidle[ni++] = out[2];
                }
            }
        }
        if (0 == rank) {
            ratio[r] = ph[0].rate > 0 ? ph[1].rate / ph[0].rate : 0;
            cratio[r] = ph[0].crate > 0 ? ph[1].crate / ph[0].crate : 0;
        }
    }
    if (0 == rank) {
        spread("compute rate, busy phase / idle phase of the round", ratio, opt.rounds, 1, "");
        spread("compute rate per CPU second, busy / idle", cratio, opt.rounds, 1, "");
        spread("progress thread CPU, idle phases", tidle, ni, 1e3, "ms per s");
        spread("progress thread CPU, busy phases", tbusy, nb, 1e3, "ms per s");
        spread("progress thread CPU per epoch served", per_epoch, nb, 1e6, "us");
        spread("other threads' CPU, idle phases", oidle, ni, 1e3, "ms per s");
        spread("other threads' CPU, busy phases", obusy, nb, 1e3, "ms per s");
    }
    bench_win_free(&w);
    MPI_Finalize();
    return 0;
}
