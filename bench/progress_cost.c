/*
 * progress_cost.c - what a progress thread costs a target that computes
 * outside MPI.
 *
 *   mpirun -np N progress_cost [-S 1.0] [-r 6] [-w FLAVOR] [-o PATTERNS] [-p osc_ucxx_prog]
 *
 * The last rank, the target, computes -S seconds outside MPI (a dependent
 * floating-point loop that touches no memory, counted in units of 1000
 * iterations), -r rounds of two phases each per pattern, their order
 * alternating from round to round:
 *   idle  the other ranks sleep outside MPI meanwhile: no RMA at all;
 *   busy  every other rank (an origin) runs epochs of the pattern against
 *         the target for the whole phase, back to back (they complete only
 *         if something serves them while the target computes).
 * Patterns (-o, a comma list; default lock_put):
 *   lock_put     MPI_Win_lock(EXCLUSIVE) + 8 B MPI_Put + MPI_Win_unlock
 *   lock_get     MPI_Win_lock(SHARED) + 8 B MPI_Get + MPI_Win_unlock
 *   lock_acc     MPI_Win_lock(SHARED) + 8 B MPI_Accumulate(SUM) + MPI_Win_unlock
 *   lockall_put  8 B MPI_Put + MPI_Win_flush inside one MPI_Win_lock_all
 *                per phase
 * Per phase the target reports its compute rate (units per second of wall
 * clock: what losing its core costs it, moved by any load on the machine),
 * per second of the compute thread's own CPU time (what sharing caches
 * costs it), the CPU time of the progress thread per second (from the
 * thread's own CPU clock: the kernel's count of the time it ran, which load
 * does not move) and of all other threads (UCX's, the runtime's), and the
 * progress thread's context switches (voluntary: each sleep it woke from;
 * /proc/self/task/TID/status).  The thread is found by its name (-p,
 * /proc/self/task/TID/comm); without one its columns are n/a.
 *
 * Rows: pattern round phase rate crate tcpu ocpu epochs epoch_us vcsw ncsw;
 * then per pattern a summary: the loss 1 - busy / idle of the same round
 * (wall clock and per CPU second; median, min-max), and the thread's CPU
 * and wake-ups per second in each kind of phase and per epoch served.
 */
#include "bench_common.h"

#include <dirent.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
#include <time.h>
#include <unistd.h>

#define MAX_ROUNDS 64

enum { LOCK_PUT, LOCK_GET, LOCK_ACC, LOCKALL_PUT, NPATTERNS };
static const char *const pattern_names[NPATTERNS] = {"lock_put", "lock_get", "lock_acc",
                                                     "lockall_put"};

static struct {
    double s;
    int rounds;
    bench_flavor_t flavor;
    char thread[16];
    int patterns[NPATTERNS], npatterns;
} opt = {1.0, 6, FLAVOR_ALLOCATE, "osc_ucxx_prog", {LOCK_PUT}, 1};

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

/* The thread's voluntary and involuntary context switches so far. */
static void ctx_switches(pid_t tid, long *vol, long *invol)
{
    char path[64], line[128];
    FILE *f;

    *vol = *invol = -1;
    if (tid <= 0) return;
    snprintf(path, sizeof(path), "/proc/self/task/%d/status", (int) tid);
    if (NULL == (f = fopen(path, "r"))) return;
    while (NULL != fgets(line, sizeof(line), f)) {
        (void) sscanf(line, "voluntary_ctxt_switches: %ld", vol);
        (void) sscanf(line, "nonvoluntary_ctxt_switches: %ld", invol);
    }
    fclose(f);
}

typedef struct {
    double rate, crate;        /* units per second of wall clock, of our own CPU time */
    double tcpu, ocpu;         /* CPU s per s: the thread, the other threads */
    double vcsw, ncsw;         /* the thread's context switches in the phase */
} phase_t;

/* Compute opt.s seconds outside MPI. */
static phase_t compute(pid_t prog)
{
    volatile double x = 1.0;
    long units = 0, v0, n0, v1, n1;
    phase_t p;
    clockid_t tc = tid_clock(prog);
    double t0, t, p0, c0, g0, g1;

    ctx_switches(prog, &v0, &n0);
    t0 = wall();
    p0 = clock_s(CLOCK_PROCESS_CPUTIME_ID);
    c0 = clock_s(CLOCK_THREAD_CPUTIME_ID);
    g0 = prog > 0 ? clock_s(tc) : -1;
    do {
        for (int j = 0; j < 1000; j++) x = x * 1.0000001 + 1e-9;
        units++;
    } while ((t = wall()) - t0 < opt.s);
    g1 = prog > 0 ? clock_s(tc) : -1;
    p.rate = units / (t - t0);
    p.crate = units / (clock_s(CLOCK_THREAD_CPUTIME_ID) - c0);
    p.tcpu = g0 >= 0 && g1 >= 0 ? (g1 - g0) / (t - t0) : NAN;
    p.ocpu = ((clock_s(CLOCK_PROCESS_CPUTIME_ID) - p0) - (clock_s(CLOCK_THREAD_CPUTIME_ID) - c0)) /
             (t - t0);
    if (!isnan(p.tcpu)) p.ocpu -= p.tcpu;
    if (p.ocpu < 0) p.ocpu = 0;   /* clock granularity */
    ctx_switches(prog, &v1, &n1);
    p.vcsw = v0 >= 0 && v1 >= 0 ? (double) (v1 - v0) : NAN;
    p.ncsw = n0 >= 0 && n1 >= 0 ? (double) (n1 - n0) : NAN;
    return p;
}

/* One origin's side of a busy phase: epochs of the pattern against the
 * target until the target's phase is over (it computes opt.s from the
 * barrier on); the number that completed. */
static int epochs(bench_win_t *w, int rank, int pattern, int target, double *busy_s)
{
    uint64_t v = 0, got;
    MPI_Aint d = bench_disp(w, target, 8 * (size_t) rank);
    int n = 0;
    double t0 = wall();

    usleep(5000);   /* the target is computing by now */
    if (LOCKALL_PUT == pattern) MPI_Win_lock_all(0, w->win);
    while (wall() - t0 < opt.s) {
        ++v;
        switch (pattern) {
        case LOCK_PUT:
            MPI_Win_lock(MPI_LOCK_EXCLUSIVE, target, 0, w->win);
            MPI_Put(&v, 1, MPI_UINT64_T, target, d, 1, MPI_UINT64_T, w->win);
            MPI_Win_unlock(target, w->win);
            break;
        case LOCK_GET:
            MPI_Win_lock(MPI_LOCK_SHARED, target, 0, w->win);
            MPI_Get(&got, 1, MPI_UINT64_T, target, d, 1, MPI_UINT64_T, w->win);
            MPI_Win_unlock(target, w->win);
            break;
        case LOCK_ACC:
            MPI_Win_lock(MPI_LOCK_SHARED, target, 0, w->win);
            MPI_Accumulate(&v, 1, MPI_UINT64_T, target, d, 1, MPI_UINT64_T, MPI_SUM, w->win);
            MPI_Win_unlock(target, w->win);
            break;
        default:
            MPI_Put(&v, 1, MPI_UINT64_T, target, d, 1, MPI_UINT64_T, w->win);
            MPI_Win_flush(target, w->win);
            break;
        }
        ++n;
    }
    *busy_s = wall() - t0 - 0.005;
    if (LOCKALL_PUT == pattern) MPI_Win_unlock_all(w->win);
    return n;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *) a, y = *(const double *) b;
    return x < y ? -1 : x > y;
}

/* median (min-max) of v[0..n), NAN: not measured */
static void spread(const char *pat, const char *what, double *v, int n, double scale,
                   const char *unit)
{
    int k = 0;
    for (int i = 0; i < n; i++) {
        if (!isnan(v[i])) v[k++] = v[i];
    }
    if (0 == (n = k)) {
        printf("# %s: %s: n/a\n", pat, what);
        return;
    }
    qsort(v, n, sizeof(double), cmp_double);
    printf("# %s: %s: %.4g %s (%.4g-%.4g, %d)\n", pat, what, scale * bench_median(v, n), unit,
           scale * v[0], scale * v[n - 1], n);
}

static void usage(const char *prog)
{
    fprintf(stderr,
            "usage: mpirun -np N %s [-S seconds] [-r rounds] [-w FLAVOR] [-o PATTERNS] "
            "[-p THREAD]\n  patterns: lock_put,lock_get,lock_acc,lockall_put\n",
            prog);
}

static int parse_opts(int argc, char **argv)
{
    int c;
    while (-1 != (c = getopt(argc, argv, "S:r:w:o:p:h"))) {
        switch (c) {
        case 'S': opt.s = atof(optarg); break;
        case 'r': opt.rounds = atoi(optarg); break;
        case 'w':
            if (0 != bench_parse_flavor(optarg, &opt.flavor)) return 2;
            break;
        case 'o':
        {
            int on[NPATTERNS];
            if (!bench_parse_names(optarg, pattern_names, NPATTERNS, on)) return 2;
            opt.npatterns = 0;
            for (int i = 0; i < NPATTERNS; i++) {
                if (on[i]) opt.patterns[opt.npatterns++] = i;
            }
            break;
        }
        case 'p': snprintf(opt.thread, sizeof(opt.thread), "%s", optarg); break;
        default: return 1;
        }
    }
    return opt.s <= 0 || opt.s > 60 || opt.rounds < 1 || opt.rounds > MAX_ROUNDS ? 2 : 0;
}

/* Per pattern, what rank 0 collects from the phases. */
typedef struct {
    double loss[MAX_ROUNDS], closs[MAX_ROUNDS];
    double tidle[MAX_ROUNDS], tbusy[MAX_ROUNDS], per_epoch[MAX_ROUNDS];
    double widle[MAX_ROUNDS], wbusy[MAX_ROUNDS], wper_epoch[MAX_ROUNDS];
    double oidle[MAX_ROUNDS], obusy[MAX_ROUNDS], eps[MAX_ROUNDS];
    int nb, ni;
} summary_t;

#define NOUT 7

/* One phase: the target computes, the origins run epochs or sleep; rank 0
 * prints the row and keeps what the summary needs. */
static void phase(bench_win_t *w, int pattern, int r, int busy, pid_t prog, phase_t *ph,
                  summary_t *sm)
{
    int rank, np, target, n = 0, total = 0;
    double out[NOUT] = {0}, busy_s = 0, max_busy_s = 0;

    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &np);
    target = np - 1;
    MPI_Barrier(MPI_COMM_WORLD);
    if (target == rank) {
        *ph = compute(prog);
    } else if (busy) {
        n = epochs(w, rank, pattern, target, &busy_s);
    } else {
        usleep((useconds_t) (opt.s * 1e6));
    }
    MPI_Barrier(MPI_COMM_WORLD);
    MPI_Reduce(&n, &total, 1, MPI_INT, MPI_SUM, 0, MPI_COMM_WORLD);
    MPI_Reduce(&busy_s, &max_busy_s, 1, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
    if (target == rank) {
        double v[NOUT] = {ph->rate, ph->tcpu, ph->ocpu, ph->crate, ph->vcsw, ph->ncsw, 0};
        memcpy(out, v, sizeof(out));
        if (0 != rank) MPI_Send(out, NOUT, MPI_DOUBLE, 0, 5, MPI_COMM_WORLD);
    }
    if (0 != rank) return;
    if (0 != target) MPI_Recv(out, NOUT, MPI_DOUBLE, target, 5, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    ph->rate = out[0];
    ph->tcpu = out[1];
    ph->ocpu = out[2];
    ph->crate = out[3];
    printf("%s %d %s %.0f %.0f %.5f %.5f %d %.1f %.0f %.0f\n", pattern_names[pattern], r,
           busy ? "busy" : "idle", out[0], out[3], out[1], out[2], total,
           total > 0 ? 1e6 * max_busy_s * (np - 1) / total : 0.0, out[4], out[5]);
    fflush(stdout);
    if (busy) {
        sm->tbusy[sm->nb] = out[1];
        sm->obusy[sm->nb] = out[2];
        sm->wbusy[sm->nb] = out[4] / opt.s;
        sm->per_epoch[sm->nb] = total > 0 ? out[1] * opt.s / total : NAN;
        sm->wper_epoch[sm->nb] = total > 0 ? out[4] / total : NAN;
        sm->eps[sm->nb++] = total / opt.s;
    } else {
        sm->tidle[sm->ni] = out[1];
        sm->widle[sm->ni] = out[4] / opt.s;
        sm->oidle[sm->ni++] = out[2];
    }
}

static void summarize(const char *pat, summary_t *sm, int rounds)
{
    spread(pat, "compute loss, 1 - busy / idle rate of the round (wall clock)", sm->loss, rounds,
           100, "%");
    spread(pat, "compute loss per CPU second of the compute thread", sm->closs, rounds, 100, "%");
    spread(pat, "epochs per second (all origins)", sm->eps, sm->nb, 1, "");
    spread(pat, "progress thread CPU, idle phases", sm->tidle, sm->ni, 1e3, "ms per s");
    spread(pat, "progress thread CPU, busy phases", sm->tbusy, sm->nb, 1e3, "ms per s");
    spread(pat, "progress thread CPU per epoch served", sm->per_epoch, sm->nb, 1e6, "us");
    spread(pat, "progress thread wake-ups, idle phases", sm->widle, sm->ni, 1, "per s");
    spread(pat, "progress thread wake-ups, busy phases", sm->wbusy, sm->nb, 1, "per s");
    spread(pat, "progress thread wake-ups per epoch served", sm->wper_epoch, sm->nb, 1, "");
    spread(pat, "other threads' CPU, idle phases", sm->oidle, sm->ni, 1e3, "ms per s");
    spread(pat, "other threads' CPU, busy phases", sm->obusy, sm->nb, 1e3, "ms per s");
}

int main(int argc, char **argv)
{
    int prc = parse_opts(argc, argv), rank, np;
    bench_win_t w;
    pid_t prog = -1;
    summary_t sm;

    bench_init(&argc, &argv, MPI_THREAD_SINGLE);
    bench_opts_checked(prc, "progress_cost", argv[0], usage);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &np);
    if (np < 2) bench_exit_na("progress_cost needs 2 ranks or more");
    bench_win_create_or_na(&w, 8 * (size_t) np, opt.flavor, MPI_COMM_WORLD);
    /* one epoch first: the thread exists by now wherever the component
     * starts one (at its first window at the latest) */
    if (np - 1 != rank) {
        uint64_t v = 0;
        MPI_Win_lock(MPI_LOCK_EXCLUSIVE, np - 1, 0, w.win);
        MPI_Put(&v, 1, MPI_UINT64_T, np - 1, bench_disp(&w, np - 1, 8 * (size_t) rank), 1,
                MPI_UINT64_T, w.win);
        MPI_Win_unlock(np - 1, w.win);
    }
    MPI_Barrier(MPI_COMM_WORLD);
    if (np - 1 == rank) prog = find_thread(opt.thread);
    if (0 == rank) {
        const char *osc = getenv("OMPI_MCA_osc");
        printf("# bench=progress_cost flavor=%s S=%.2f rounds=%d origins=%d osc=%s\n",
               bench_flavor_names[opt.flavor], opt.s, opt.rounds, np - 1, osc ? osc : "default");
        printf("# columns: pattern round phase rate crate tcpu ocpu epochs epoch_us vcsw ncsw\n");
        fflush(stdout);
    }
    for (int p = 0; p < opt.npatterns; p++) {
        memset(&sm, 0, sizeof(sm));
        for (int r = 0; r < opt.rounds; r++) {
            phase_t ph[2];
            for (int k = 0; k < 2; k++) {
                int busy = (k + r) % 2;   /* idle-busy, then busy-idle, ... */
                phase(&w, opt.patterns[p], r, busy, prog, &ph[busy], &sm);
            }
            if (0 == rank) {
                sm.loss[r] = ph[0].rate > 0 ? 1 - ph[1].rate / ph[0].rate : 0;
                sm.closs[r] = ph[0].crate > 0 ? 1 - ph[1].crate / ph[0].crate : 0;
            }
        }
        if (0 == rank) summarize(pattern_names[opt.patterns[p]], &sm, opt.rounds);
    }
    bench_win_free(&w);
    MPI_Finalize();
    return 0;
}
