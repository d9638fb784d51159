/*
 * win_scale.c - per-peer cost of windows: creation, the first all-to-all
 * epoch on a window and on a second one, warm epochs, memory (issue 52).
 *
 *   mpirun -np P win_scale -w FLAVOR [-n 10] [-m 4096] [-i 10] [-v]
 *
 * Every rank, in order (a barrier before each step, /proc/self/status read
 * around it):
 *   create  W windows of SIZE bytes (default 10 x 4 KiB), each timed alone
 *           (wall and the thread's CPU time: the first window, the median);
 *   first   on window 0: MPI_Win_lock_all, an 8-byte MPI_Put to every rank
 *           (itself included, starting at rank+1), MPI_Win_unlock_all;
 *   second  the same on window 1, the first epoch there (what a peer costs
 *           once the process has met it on another window);
 *   warm    -i more such epochs on window 0 (median);
 *   rest    the first epoch on each of windows 2..W-1 (median time), so that
 *           the memory at the end is that of W windows all accessed once;
 *   free    all W windows freed.
 * Rank r puts a value made of (r, epoch) at byte 8*r of every target; after
 * every epoch each rank checks all P values in its own window (a lock on
 * itself + MPI_Win_sync after a barrier): a missing or stale value aborts
 * the run with "WRONG VALUE", so the benchmark cannot measure nothing
 * (built with -DWIN_SCALE_BREAK, each rank skips its put to rank+1 in the
 * second window's epoch, and the run must abort so).
 *
 * One row, keyed by np; per-process figures are the median over the ranks
 * (_max: the largest), "_pp" ones are divided by P-1 (per peer).  Times in
 * microseconds (wall clock; _cpu: the calling thread's CPU time, which a
 * descheduled rank does not accumulate: on an oversubscribed node it is the
 * steadier figure; first_xcpu_us: the CPU time of the process's other
 * threads, a progress thread's, during the first epoch).  Memory from /proc/self/status: RSS (VmRSS) and virtual
 * size (VmSize) growth across the step, in KiB, or bytes per peer (_Bpp);
 * _pss: the proportional set size (smaps_rollup), where a page shared by n
 * processes counts 1/n in each: what the node pays;
 * _anon: RssAnon, _shm: RssShmem (the pages of shared memory this process
 * touched or mapped); _faults: minor page faults.  The bench's own
 * allocations are in it for every component alike (create / dynamic: SIZE
 * bytes of memory per window; 8 * P bytes of displacements).
 *
 * With -v every rank prints its own figures ("# rank r: ...") and the
 * RssAnon / RssShmem split and page faults of each step.  With
 * WIN_SCALE_SMAPS=DIR in the environment, rank WIN_SCALE_SMAPS_RANK
 * (default 0) copies its /proc/self/smaps into DIR before the first window
 * (0-init) and after each step (0-created, 1-first, 2-second, 3-rest,
 * 4-freed): which mappings a step adds.
 */
#include "bench_common.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>

/* /proc/self/status figures, KiB, the minor page faults so far, and the
 * proportional set size (/proc/self/smaps_rollup: each page divided by the
 * processes that map it, so that shared pages count once on the node, where
 * RSS counts them in every process; 0 where the kernel has no rollup) */
typedef struct {
    double vm, rss, anon, shmem, flt, pss;
} mem_t;

static double pss_now(void)
{
    char line[256];
    double pss = 0, v;
    FILE *f = fopen("/proc/self/smaps_rollup", "r");
    if (!f) return 0;
    while (fgets(line, sizeof(line), f)) {
        if (1 == sscanf(line, "Pss: %lf", &v)) pss = v;
    }
    fclose(f);
    return pss;
}

static mem_t mem_now(void)
{
    mem_t m = {0, 0, 0, 0, 0, pss_now()};
    char line[256];
    struct rusage ru;
    FILE *f;
    if (0 == getrusage(RUSAGE_SELF, &ru)) m.flt = (double) ru.ru_minflt;
    f = fopen("/proc/self/status", "r");
    if (!f) return m;
    while (fgets(line, sizeof(line), f)) {
        double v;
        if (1 == sscanf(line, "VmSize: %lf", &v)) m.vm = v;
        else if (1 == sscanf(line, "VmRSS: %lf", &v)) m.rss = v;
        else if (1 == sscanf(line, "RssAnon: %lf", &v)) m.anon = v;
        else if (1 == sscanf(line, "RssShmem: %lf", &v)) m.shmem = v;
    }
    fclose(f);
    return m;
}

static mem_t mem_diff(mem_t a, mem_t b)
{
    mem_t d = {b.vm - a.vm, b.rss - a.rss, b.anon - a.anon, b.shmem - a.shmem, b.flt - a.flt,
               b.pss - a.pss};
    return d;
}

static double clock_cpu(clockid_t id)
{
    struct timespec ts;
    clock_gettime(id, &ts);
    return ts.tv_sec + 1e-9 * ts.tv_nsec;
}

static double thread_cpu(void)
{
    return clock_cpu(CLOCK_THREAD_CPUTIME_ID);
}

/* CPU seconds of the process's other threads (a progress thread, UCX's
 * async thread) during the last epoch() */
static double epoch_xcpu;

static int rank, np;

/* WIN_SCALE_SMAPS=DIR: rank WIN_SCALE_SMAPS_RANK (default 0) copies its
 * /proc/self/smaps to DIR/<step>.smaps before the first window and after
 * each step (for the profile: which mappings grow). */
static void smaps_dump(const char *step)
{
    const char *dir = getenv("WIN_SCALE_SMAPS"), *who = getenv("WIN_SCALE_SMAPS_RANK");
    char path[4096], buf[65536];
    FILE *in, *out;
    size_t n;
    if (NULL == dir || rank != (who ? atoi(who) : 0)) return;
    snprintf(path, sizeof(path), "%s/%s.smaps", dir, step);
    in = fopen("/proc/self/smaps", "r");
    out = fopen(path, "w");
    while (in && out && (n = fread(buf, 1, sizeof(buf), in)) > 0) fwrite(buf, 1, n, out);
    if (in) fclose(in);
    if (out) fclose(out);
}

static uint64_t value_of(int origin, int epoch)
{
    return ((uint64_t) (epoch + 1) << 32) | (uint64_t) (origin + 1);
}

/* One lock_all / put to every rank / unlock_all epoch; wall and CPU seconds. */
static void epoch(bench_win_t *w, int id, uint64_t *src, double *wall, double *cpu)
{
    double t0, c0, p0;
    *src = value_of(rank, id);
    p0 = clock_cpu(CLOCK_PROCESS_CPUTIME_ID);
    c0 = thread_cpu();
    t0 = bench_now();
    if (MPI_SUCCESS != MPI_Win_lock_all(0, w->win)) bench_die("MPI_Win_lock_all failed");
    for (int k = 1; k <= np; k++) {
        int t = (rank + k) % np;
#ifdef WIN_SCALE_BREAK
        if (1 == id && 1 == k) continue;  /* (the check must see this: -DWIN_SCALE_BREAK) */
#endif
        if (MPI_SUCCESS != MPI_Put(src, 1, MPI_UINT64_T, t,
                                   bench_disp(w, t, 8 * (size_t) rank), 1, MPI_UINT64_T,
                                   w->win)) {
            bench_die("MPI_Put to %d failed", t);
        }
    }
    if (MPI_SUCCESS != MPI_Win_unlock_all(w->win)) bench_die("MPI_Win_unlock_all failed");
    *wall = bench_now() - t0;
    *cpu = thread_cpu() - c0;
    epoch_xcpu = clock_cpu(CLOCK_PROCESS_CPUTIME_ID) - p0 - *cpu;
}

/* Every origin's value of epoch `id` is in our window. */
static void check(bench_win_t *w, int id, const char *what)
{
    int bad = 0, first = -1;
    MPI_Barrier(MPI_COMM_WORLD);
    MPI_Win_lock(MPI_LOCK_SHARED, rank, 0, w->win);
    MPI_Win_sync(w->win);
    for (int r = 0; r < np; r++) {
        uint64_t v;
        memcpy(&v, w->base + 8 * (size_t) r, sizeof(v));
        if (v != value_of(r, id)) {
            if (first < 0) first = r;
            bad++;
        }
    }
    MPI_Win_unlock(rank, w->win);
    if (bad) {
        uint64_t v;
        memcpy(&v, w->base + 8 * (size_t) first, sizeof(v));
        fprintf(stderr, "rank %d: WRONG VALUE after the %s epoch: %d of %d origins' values "
                "missing, first from rank %d (0x%llx, expected 0x%llx)\n", rank, what, bad, np,
                first, (unsigned long long) v, (unsigned long long) value_of(first, id));
        MPI_Abort(MPI_COMM_WORLD, 3);
    }
}

/* The measured first epoch on `w` (epoch number `id`), after a barrier:
 * its figures into out[0..6] in the order of F_FIRST_*; the memory step. */
static mem_t first_epoch(bench_win_t *w, int id, uint64_t *src, const char *what, double *out)
{
    double wall, cpu;
    mem_t a, b, d;
    MPI_Barrier(MPI_COMM_WORLD);
    a = mem_now();
    epoch(w, id, src, &wall, &cpu);
    b = mem_now();
    check(w, id, what);
    d = mem_diff(a, b);
    out[0] = 1e6 * wall;
    out[1] = 1e6 * cpu;
    out[2] = d.rss;
    out[3] = d.anon;
    out[4] = d.shmem;
    out[5] = d.vm;
    out[6] = d.flt;
    return d;
}

/* The per-rank figures, in the order of the columns. */
enum {
    F_CREATE_US, F_CREATE_FIRST_US, F_CREATE_CPU_US, F_CREATE_FIRST_CPU_US, F_CREATE_KIB,
    F_CREATE_VM_KIB,
    /* a first epoch's figures, in this order (first_epoch) */
    F_FIRST_US, F_FIRST_CPU_US, F_FIRST_KIB, F_FIRST_ANON_KIB, F_FIRST_SHM_KIB, F_FIRST_VM_KIB,
    F_FIRST_FLT,
    F_SECOND_US, F_SECOND_CPU_US, F_SECOND_KIB, F_SECOND_ANON_KIB, F_SECOND_SHM_KIB,
    F_SECOND_VM_KIB, F_SECOND_FLT,
    F_WARM_US, F_REST_US, F_REST_KIB, F_REST_ANON_KIB, F_REST_VM_KIB,
    F_VM_MIB, F_VM_GROWTH_MIB, F_RSS_GROWTH_MIB, F_KEPT_KIB, F_FIRST_XCPU_US,
    F_CREATE_PSS_KIB, F_FIRST_PSS_KIB, F_PSS_GROWTH_MIB,
    F_COUNT
};
static const char *names[F_COUNT] = {
    "create_us", "create_first_us", "create_cpu_us", "create_first_cpu_us", "create_KiB",
    "create_vm_KiB",
    "first_us", "first_cpu_us", "first_KiB", "first_anon_KiB", "first_shm_KiB", "first_vm_KiB",
    "first_faults",
    "second_us", "second_cpu_us", "second_KiB", "second_anon_KiB", "second_shm_KiB",
    "second_vm_KiB", "second_faults",
    "warm_us", "rest_us", "rest_KiB", "rest_anon_KiB", "rest_vm_KiB",
    "vm_MiB", "vm_growth_MiB", "rss_growth_MiB", "kept_KiB", "first_xcpu_us",
    "create_pss_KiB", "first_pss_KiB", "pss_growth_MiB",
};

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *) a, y = *(const double *) b;
    return x < y ? -1 : x > y;
}

static void verbose_step(const char *what, mem_t d)
{
    printf("# rank %d: %-7s RSS %+8.0f KiB (anon %+8.0f, shmem %+8.0f), VmSize %+10.0f KiB, "
           "%.0f minor faults\n", rank, what, d.rss, d.anon, d.shmem, d.vm, d.flt);
}

int main(int argc, char **argv)
{
    bench_opts_t o;
    bench_win_t *wins;
    mem_t m0, m1, a, b, mfirst, msecond, mrest;
    double f[F_COUNT], *all = NULL, *tc, *tcc, *tw, *tr, cpu;
    uint64_t *src;
    size_t size;
    int nw, iters, id = 0;

    bench_init(&argc, &argv, MPI_THREAD_SINGLE);
    bench_opts_defaults(&o, "win_scale");
    o.min_size = 4096;
    o.nwins = 10;
    o.iters = 10;
    bench_parse_args(argc, argv, &o, "wmniv",
                     "-w flavor (create, allocate, dynamic); -n windows (>= 2); -m bytes per "
                     "window (at least 8 * np); -i warm epochs");
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &np);
    if (o.flavor == FLAVOR_MEMHANDLE) bench_exit_na("memhandle windows reach one target only");
    if (o.nwins < 2) bench_bad_arg("-n: at least 2 windows");
    nw = o.nwins;
    iters = o.iters;
    size = o.min_size < 8 * (size_t) np ? 8 * (size_t) np : o.min_size;
    o.max_size = size;
    strcpy(o.op, "lock_all_put_all");

    wins = calloc((size_t) nw, sizeof(*wins));
    tc = calloc((size_t) nw, sizeof(double));
    tcc = calloc((size_t) nw, sizeof(double));
    tw = calloc((size_t) iters, sizeof(double));
    tr = calloc((size_t) nw, sizeof(double));
    src = bench_alloc(sizeof(uint64_t));  /* (the put's origin buffer, kept to the end) */
    if (!wins || !tc || !tcc || !tw || !tr) bench_die("out of memory");

    /* create */
    MPI_Barrier(MPI_COMM_WORLD);
    smaps_dump("0-init");
    m0 = mem_now();
    for (int i = 0; i < nw; i++) {
        int rc;
        MPI_Barrier(MPI_COMM_WORLD);
        cpu = thread_cpu();
        rc = bench_win_create(&wins[i], size, o.flavor, MPI_COMM_WORLD);
        tcc[i] = thread_cpu() - cpu;
        if (rc != MPI_SUCCESS) {
            if (i == 0) {
                free(wins);
                bench_exit_na("cannot create a '%s' window with this osc component",
                              bench_flavor_names[o.flavor]);
            }
            bench_die("creating window %d failed", i);
        }
        tc[i] = wins[i].create_s;
    }
    MPI_Barrier(MPI_COMM_WORLD);
    a = mem_now();
    f[F_CREATE_FIRST_US] = 1e6 * tc[0];
    f[F_CREATE_US] = 1e6 * bench_median(tc, nw);
    f[F_CREATE_FIRST_CPU_US] = 1e6 * tcc[0];
    f[F_CREATE_CPU_US] = 1e6 * bench_median(tcc, nw);
    f[F_CREATE_KIB] = mem_diff(m0, a).rss / nw;
    f[F_CREATE_VM_KIB] = mem_diff(m0, a).vm / nw;
    f[F_CREATE_PSS_KIB] = mem_diff(m0, a).pss / nw;
    smaps_dump("0-created");

    /* first epoch on window 0, then on window 1 */
    mfirst = first_epoch(&wins[0], id++, src, "first", f + F_FIRST_US);
    f[F_FIRST_PSS_KIB] = mfirst.pss;
    f[F_FIRST_XCPU_US] = 1e6 * epoch_xcpu;
    smaps_dump("1-first");
    msecond = first_epoch(&wins[1], id++, src, "second", f + F_SECOND_US);
    smaps_dump("2-second");

    /* warm epochs on window 0 (each checked) */
    for (int i = 0; i < iters; i++) {
        MPI_Barrier(MPI_COMM_WORLD);
        epoch(&wins[0], id, src, &tw[i], &cpu);
        check(&wins[0], id++, "warm");
    }
    f[F_WARM_US] = 1e6 * bench_median(tw, iters);

    /* first epochs on the other windows */
    MPI_Barrier(MPI_COMM_WORLD);
    a = mem_now();
    for (int i = 2; i < nw; i++) {
        MPI_Barrier(MPI_COMM_WORLD);
        epoch(&wins[i], id, src, &tr[i - 2], &cpu);
        check(&wins[i], id++, "rest");
    }
    MPI_Barrier(MPI_COMM_WORLD);
    b = mem_now();
    mrest = mem_diff(a, b);
    f[F_REST_US] = nw > 2 ? 1e6 * bench_median(tr, nw - 2) : 0;
    f[F_REST_KIB] = nw > 2 ? mrest.rss / (nw - 2) : 0;
    f[F_REST_ANON_KIB] = nw > 2 ? mrest.anon / (nw - 2) : 0;
    f[F_REST_VM_KIB] = nw > 2 ? mrest.vm / (nw - 2) : 0;
    f[F_VM_MIB] = b.vm / 1024;
    f[F_VM_GROWTH_MIB] = mem_diff(m0, b).vm / 1024;
    f[F_RSS_GROWTH_MIB] = mem_diff(m0, b).rss / 1024;
    f[F_PSS_GROWTH_MIB] = mem_diff(m0, b).pss / 1024;
    smaps_dump("3-rest");

    /* free */
    for (int i = 0; i < nw; i++) {
        MPI_Barrier(MPI_COMM_WORLD);
        bench_win_free(&wins[i]);
    }
    MPI_Barrier(MPI_COMM_WORLD);
    m1 = mem_now();
    f[F_KEPT_KIB] = mem_diff(m0, m1).rss;
    smaps_dump("4-freed");

    if (o.verbose) {
        for (int r = 0; r < np; r++) {
            MPI_Barrier(MPI_COMM_WORLD);
            if (r != rank) continue;
            printf("# rank %d:", rank);
            for (int k = 0; k < F_COUNT; k++) printf(" %s=%.1f", names[k], f[k]);
            printf("\n");
            verbose_step("first", mfirst);
            verbose_step("second", msecond);
            verbose_step("rest", mrest);
            fflush(stdout);
        }
    }

    if (rank == 0) all = malloc(sizeof(double) * F_COUNT * (size_t) np);
    MPI_Gather(f, F_COUNT, MPI_DOUBLE, all, F_COUNT, MPI_DOUBLE, 0, MPI_COMM_WORLD);
    if (rank == 0) {
        double med[F_COUNT], max[F_COUNT], *col = malloc(sizeof(double) * (size_t) np);
        double peers = np > 1 ? np - 1 : 1;
        for (int k = 0; k < F_COUNT; k++) {
            for (int r = 0; r < np; r++) col[r] = all[r * F_COUNT + k];
            qsort(col, (size_t) np, sizeof(double), cmp_double);
            med[k] = np % 2 ? col[np / 2] : 0.5 * (col[np / 2 - 1] + col[np / 2]);
            max[k] = col[np - 1];
        }
        free(col);
        printf("# bench=win_scale flavor=%s np=%d windows=%d size=%zu warm=%d: lock_all, put "
               "8 B to every rank, unlock_all; per process, median over ranks (_max: largest); "
               "_pp: per peer (/(np-1)); KiB of RSS, vm: VmSize\n",
               bench_flavor_names[o.flavor], np, nw, size, iters);
        printf("# columns: np");
        for (int k = 0; k < F_COUNT; k++) printf(" %s", names[k]);
        printf(" first_max_us second_max_us first_us_pp first_cpu_us_pp first_Bpp "
               "first_anon_Bpp first_vm_KiBpp second_us_pp second_cpu_us_pp second_Bpp "
               "second_anon_Bpp second_vm_KiBpp rest_Bpp rest_anon_Bpp vm_growth_KiBpp "
               "first_faults_pp second_faults_pp\n");
        printf("%d", np);
        for (int k = 0; k < F_COUNT; k++) printf(" %.2f", med[k]);
        printf(" %.2f %.2f", max[F_FIRST_US], max[F_SECOND_US]);
        printf(" %.3f %.3f %.1f %.1f %.2f", med[F_FIRST_US] / peers,
               med[F_FIRST_CPU_US] / peers, 1024 * med[F_FIRST_KIB] / peers,
               1024 * med[F_FIRST_ANON_KIB] / peers, med[F_FIRST_VM_KIB] / peers);
        printf(" %.3f %.3f %.1f %.1f %.2f", med[F_SECOND_US] / peers,
               med[F_SECOND_CPU_US] / peers, 1024 * med[F_SECOND_KIB] / peers,
               1024 * med[F_SECOND_ANON_KIB] / peers, med[F_SECOND_VM_KIB] / peers);
        printf(" %.1f %.1f %.2f", 1024 * med[F_REST_KIB] / peers,
               1024 * med[F_REST_ANON_KIB] / peers, 1024 * med[F_VM_GROWTH_MIB] / peers);
        printf(" %.2f %.2f\n", med[F_FIRST_FLT] / peers, med[F_SECOND_FLT] / peers);
        free(all);
    }

    free(wins);
    free(tc);
    free(tcc);
    free(tw);
    free(tr);
    free(src);
    MPI_Finalize();
    return 0;
}
