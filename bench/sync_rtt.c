/*
 * sync_rtt.c - one-sided synchronization patterns counted in round trips
 * (issue 51's table) and the exclusive-lock contention pattern.
 *
 *   mpirun -np 2 sync_rtt [-w FLAVOR] [-o PATTERNS] [-i 50] [-x 5]
 *                         [-b PATTERNS] [-S SECONDS] [-n IFACE] [-q MS]
 *   mpirun -np N sync_rtt -o contend [-w FLAVOR] [-K 1000] [-n IFACE]
 *
 * Meant for ranks on different hosts joined by a wire with latency
 * (test/hosts.sh --delay; bench/run --hosts 2 --delay 250us --only sync_rtt):
 * then round trips dominate every time and the machine's noise does not.
 * Each pattern runs -x warm-up and -i timed iterations (each timed on its
 * own, MPI_Wtime, at rank 0); its row gives the median in microseconds and
 * in ROUND TRIPS (rt): divided by the same run's MPI ping-pong round trip
 * (8 B MPI_Send/MPI_Recv, measured first and last, the median of both
 * sets); rt_lo: the 10th percentiles divided likewise (load on the machine
 * moves it least); rt_p90: the 90th percentile over the ping-pong's median.
 * One 4 KiB window of flavor -w; rank 0 is the origin, rank 1 the target,
 * which waits in MPI_Barrier during the passive patterns:
 *
 *   pingpong     MPI_Send + MPI_Recv of 8 B (the unit: 1 round trip)
 *   lock_put     MPI_Win_lock(EXCLUSIVE) + 8 B MPI_Put + MPI_Win_unlock
 *   lock_get     MPI_Win_lock(SHARED) + 8 B MPI_Get + MPI_Win_unlock
 *   lock_acc     MPI_Win_lock(SHARED) + MPI_Accumulate(SUM) of one int64 + unlock
 *   flush_put    inside MPI_Win_lock_all: 8 B MPI_Put + MPI_Win_flush
 *   flush_fop    inside MPI_Win_lock_all: MPI_Fetch_and_op(SUM, int64) + MPI_Win_flush
 *   fence_put    MPI_Win_fence + 8 B MPI_Put + MPI_Win_fence (target: two fences)
 *   pscw_put     MPI_Win_start + 8 B MPI_Put + MPI_Win_complete (target:
 *                MPI_Win_post + MPI_Win_wait); one iteration is a whole cycle
 *   lock_put10   MPI_Win_lock(EXCLUSIVE) + 10 MPI_Puts of 8 B + MPI_Win_unlock
 *   lock_epN     (N = 1, 10, 100, 1000) MPI_Win_lock(EXCLUSIVE) + N MPI_Puts of
 *                8 B to distinct words + MPI_Win_unlock: short and long epochs
 *   lock_64k, lock_1m  MPI_Win_lock(EXCLUSIVE) + one MPI_Put of 64 KiB
 *                (1 MiB) + MPI_Win_unlock
 *   nest_put     nested locks: MPI_Win_lock(EXCLUSIVE) on rank 1, then on
 *                rank 0 itself (a lock held at once on the node), 8 B
 *                MPI_Put to each, unlock 0, unlock 1: the cost of taking
 *                the locks in the program's order (docs/synchronization.md)
 *   nest_all     MPI_Win_lock_all on a second window, then MPI_Win_lock
 *                (EXCLUSIVE) on rank 0 itself in the main one, 8 B MPI_Put
 *                to rank 1 through the second window, unlock 0, unlock_all
 *   create_free  window creation + MPI_Win_free of a 4 KiB window of the
 *                flavor, both ranks (dynamic: create_dynamic, attach,
 *                detach, free)
 *   busy_<p>     passive pattern p (-b, default lock_put) while the target
 *                computes -S seconds (default 1) outside MPI: the origin
 *                repeats p for 90 % of that time; the row gives the median
 *                epoch (1 epoch of ~S when nothing progresses without the
 *                target), n the epochs done, speed the target's compute
 *                rate against a compute phase without RMA (1.00: no loss;
 *                wall-clock, so other load on the machine moves it), xcpu
 *                the CPU seconds per second the target's other threads (a
 *                progress thread) used meanwhile (0: none; noise-free)
 *
 * Messages: with -n IFACE (hosts.sh: eth0) rank 0 reads its host's frame
 * counters (/sys/class/net/IFACE/statistics/{tx,rx}_packets) around the
 * timed iterations, after -q milliseconds of quiet (default 50: delayed
 * TCP acknowledgements), and the frames column gives frames per iteration
 * on that host's link, both directions (TCP segments, acknowledgements
 * included: every frame between rank 0's and rank 1's hosts passes there).
 * Without -n the column is n/a.
 *
 * -o contend: every rank, K times (-K): MPI_Win_lock(EXCLUSIVE, 0), get a
 * counter, flush, put counter + 1, MPI_Win_unlock(0).  Checks that every
 * increment is kept (exit 1 with WRONG otherwise) and prints a row: np,
 * time per acquisition (slowest rank's time / (np K), us and round trips),
 * spread of the ranks' completion times ((max - min) / max; rspread: the
 * same over the ranks on other hosts than rank 0, whose lock is local to
 * its host's ranks), the fastest and slowest rank's seconds, and frames per
 * acquisition (sum over hosts of each host's transmitted frames, one rank
 * per host reading).
 *
 * Values are checked: the accumulates and fetch-and-ops sum to what the
 * origin did, the last put is in place (exit 1 with WRONG otherwise).
 * Builds with any MPI (no osc/ucxx extension): bench/run runs it under
 * MPICH too.
 */
#include "bench_common.h"

#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define WIN_BYTES 4096   /* create_free's window */
/* the patterns' window: the words below, then EP_BIG_AT.. for the large puts */
#define EP_BIG_AT (64 * 1024)
#define EP_BIG_MAX (1024 * 1024)
#define MAIN_WIN_BYTES (EP_BIG_AT + EP_BIG_MAX)
#define MAX_ITERS 100000
/* window words (uint64) */
#define W_PUT 0         /* lock_put / lock_put10 (words 0..9) / flush_put / fence / pscw */
#define W_ACC 16        /* lock_acc counter */
#define W_FOP 17        /* flush_fop counter */
#define W_CTR 24        /* contention counter */
#define W_SELF 32       /* nest_*: rank 0's own word */
#define W_EP 1024       /* lock_epN: words W_EP .. W_EP + EP_WORDS - 1 */
#define EP_WORDS 1024

typedef enum { K_PASSIVE, K_LOCKALL, K_ACTIVE, K_COLL } kind_t;

typedef struct {
    bench_win_t w;
    bench_win_t w2;                     /* nest_all's lock_all window */
    int rank, np;
    MPI_Group origin_grp, target_grp;   /* PSCW: {0}, {1} */
    uint64_t val[16], res;
    uint64_t acc_done, fop_done, last_put;
    uint64_t ep_val[EP_WORDS];          /* lock_epN's origin buffers (N <= EP_WORDS) */
    uint64_t last_put_ep, big_seq;      /* lock_epN's last value, lock_big's fill */
    int ep_n;                           /* lock_epN's last epoch's words */
    size_t big_len;                     /* lock_big's last length */
} ctx_t;

typedef struct {
    const char *name;
    kind_t kind;
    void (*origin)(ctx_t *);
    void (*target)(ctx_t *);            /* active and collective patterns */
} pattern_t;

static struct {
    bench_flavor_t flavor;
    int iters, warmup, contend, K, quiet_ms;
    double busy_s;
    char patterns[256], busy[256], iface[32];
} opt;

/* ---- the patterns --------------------------------------------------------- */

static MPI_Aint disp(ctx_t *c, int word)
{
    return bench_disp(&c->w, 1, (size_t) word * sizeof(uint64_t));
}

static void put8(ctx_t *c, int word)
{
    c->val[word % 16] = ++c->last_put;
    MPI_Put(&c->val[word % 16], 1, MPI_UINT64_T, 1, disp(c, word), 1, MPI_UINT64_T, c->w.win);
}

static void pingpong_o(ctx_t *c)
{
    MPI_Send(c->val, 1, MPI_UINT64_T, 1, 7, MPI_COMM_WORLD);
    MPI_Recv(c->val, 1, MPI_UINT64_T, 1, 7, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
}

static void pingpong_t(ctx_t *c)
{
    MPI_Recv(c->val, 1, MPI_UINT64_T, 0, 7, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    MPI_Send(c->val, 1, MPI_UINT64_T, 0, 7, MPI_COMM_WORLD);
}

static void lock_put(ctx_t *c)
{
    MPI_Win_lock(MPI_LOCK_EXCLUSIVE, 1, 0, c->w.win);
    put8(c, W_PUT);
    MPI_Win_unlock(1, c->w.win);
}

static void lock_get(ctx_t *c)
{
    MPI_Win_lock(MPI_LOCK_SHARED, 1, 0, c->w.win);
    MPI_Get(&c->res, 1, MPI_UINT64_T, 1, disp(c, W_PUT), 1, MPI_UINT64_T, c->w.win);
    MPI_Win_unlock(1, c->w.win);
}

static void lock_acc(ctx_t *c)
{
    static const uint64_t one = 1;
    MPI_Win_lock(MPI_LOCK_SHARED, 1, 0, c->w.win);
    MPI_Accumulate(&one, 1, MPI_UINT64_T, 1, disp(c, W_ACC), 1, MPI_UINT64_T, MPI_SUM,
                   c->w.win);
    MPI_Win_unlock(1, c->w.win);
    c->acc_done++;
}

static void flush_put(ctx_t *c)
{
    put8(c, W_PUT);
    MPI_Win_flush(1, c->w.win);
}

static void flush_fop(ctx_t *c)
{
    static const uint64_t one = 1;
    MPI_Fetch_and_op(&one, &c->res, MPI_UINT64_T, 1, disp(c, W_FOP), MPI_SUM, c->w.win);
    MPI_Win_flush(1, c->w.win);
    c->fop_done++;
}

static void fence_o(ctx_t *c)
{
    MPI_Win_fence(0, c->w.win);
    put8(c, W_PUT);
    MPI_Win_fence(0, c->w.win);
}

static void fence_t(ctx_t *c)
{
    MPI_Win_fence(0, c->w.win);
    MPI_Win_fence(0, c->w.win);
}

static void pscw_o(ctx_t *c)
{
    MPI_Win_start(c->target_grp, 0, c->w.win);
    put8(c, W_PUT);
    MPI_Win_complete(c->w.win);
}

static void pscw_t(ctx_t *c)
{
    MPI_Win_post(c->origin_grp, 0, c->w.win);
    MPI_Win_wait(c->w.win);
}

static void lock_put10(ctx_t *c)
{
    MPI_Win_lock(MPI_LOCK_EXCLUSIVE, 1, 0, c->w.win);
    for (int i = 0; i < 10; i++) put8(c, W_PUT + i);
    MPI_Win_unlock(1, c->w.win);
}

static void lock_epoch(ctx_t *c, int n)
{
    MPI_Win_lock(MPI_LOCK_EXCLUSIVE, 1, 0, c->w.win);
    for (int i = 0; i < n; i++) {
        c->ep_val[i] = ++c->last_put_ep;
        MPI_Put(&c->ep_val[i], 1, MPI_UINT64_T, 1, disp(c, W_EP + i), 1, MPI_UINT64_T,
                c->w.win);
    }
    MPI_Win_unlock(1, c->w.win);
    c->ep_n = n;
}

static void lock_ep1(ctx_t *c) { lock_epoch(c, 1); }
static void lock_ep10(ctx_t *c) { lock_epoch(c, 10); }
static void lock_ep100(ctx_t *c) { lock_epoch(c, 100); }
static void lock_ep1000(ctx_t *c) { lock_epoch(c, 1000); }

static void lock_big(ctx_t *c, size_t len)
{
    static unsigned char *src;
    if (!src && !(src = malloc(EP_BIG_MAX))) bench_die("out of memory");
    memset(src, (int) (++c->big_seq & 0xff), len);
    MPI_Win_lock(MPI_LOCK_EXCLUSIVE, 1, 0, c->w.win);
    MPI_Put(src, (int) len, MPI_BYTE, 1, bench_disp(&c->w, 1, EP_BIG_AT), (int) len, MPI_BYTE,
            c->w.win);
    MPI_Win_unlock(1, c->w.win);
    c->big_len = len;
}

static void lock_64k(ctx_t *c) { lock_big(c, 64 * 1024); }
static void lock_1m(ctx_t *c) { lock_big(c, EP_BIG_MAX); }

static void nest_put(ctx_t *c)
{
    MPI_Win_lock(MPI_LOCK_EXCLUSIVE, 1, 0, c->w.win);
    MPI_Win_lock(MPI_LOCK_EXCLUSIVE, 0, 0, c->w.win);
    put8(c, W_PUT);
    MPI_Put(&c->val[0], 1, MPI_UINT64_T, 0, bench_disp(&c->w, 0, W_SELF * sizeof(uint64_t)), 1,
            MPI_UINT64_T, c->w.win);
    MPI_Win_unlock(0, c->w.win);
    MPI_Win_unlock(1, c->w.win);
}

static void nest_all(ctx_t *c)
{
    MPI_Win_lock_all(0, c->w2.win);
    MPI_Win_lock(MPI_LOCK_EXCLUSIVE, 0, 0, c->w.win);
    c->val[1] = c->last_put + 1;   /* (not counted: the check reads the main window) */
    MPI_Put(&c->val[1], 1, MPI_UINT64_T, 1, bench_disp(&c->w2, 1, 0), 1, MPI_UINT64_T,
            c->w2.win);
    MPI_Win_unlock(0, c->w.win);
    MPI_Win_unlock_all(c->w2.win);
}

static void create_free(ctx_t *c)
{
    static char mem[WIN_BYTES];
    MPI_Win win;
    void *base;
    int rc;

    switch (c->w.flavor) {
    case FLAVOR_CREATE:
        rc = MPI_Win_create(mem, WIN_BYTES, 1, MPI_INFO_NULL, MPI_COMM_WORLD, &win);
        break;
    case FLAVOR_DYNAMIC:
        rc = MPI_Win_create_dynamic(MPI_INFO_NULL, MPI_COMM_WORLD, &win);
        if (rc == MPI_SUCCESS) rc = MPI_Win_attach(win, mem, WIN_BYTES);
        if (rc == MPI_SUCCESS) rc = MPI_Win_detach(win, mem);
        break;
    default:
        rc = MPI_Win_allocate(WIN_BYTES, 1, MPI_INFO_NULL, MPI_COMM_WORLD, &base, &win);
    }
    if (rc != MPI_SUCCESS) bench_die("window creation failed (%d)", rc);
    MPI_Win_free(&win);
}

static const pattern_t patterns[] = {
    { "pingpong", K_ACTIVE, pingpong_o, pingpong_t },
    { "lock_put", K_PASSIVE, lock_put, NULL },
    { "lock_get", K_PASSIVE, lock_get, NULL },
    { "lock_acc", K_PASSIVE, lock_acc, NULL },
    { "flush_put", K_LOCKALL, flush_put, NULL },
    { "flush_fop", K_LOCKALL, flush_fop, NULL },
    { "fence_put", K_ACTIVE, fence_o, fence_t },
    { "pscw_put", K_ACTIVE, pscw_o, pscw_t },
    { "lock_put10", K_PASSIVE, lock_put10, NULL },
    { "create_free", K_COLL, create_free, create_free },
    { "nest_put", K_PASSIVE, nest_put, NULL },
    { "nest_all", K_PASSIVE, nest_all, NULL },
    { "lock_ep1", K_PASSIVE, lock_ep1, NULL },
    { "lock_ep10", K_PASSIVE, lock_ep10, NULL },
    { "lock_ep100", K_PASSIVE, lock_ep100, NULL },
    { "lock_ep1000", K_PASSIVE, lock_ep1000, NULL },
    { "lock_64k", K_PASSIVE, lock_64k, NULL },
    { "lock_1m", K_PASSIVE, lock_1m, NULL },
};
#define NPATTERNS ((int) (sizeof(patterns) / sizeof(patterns[0])))

/* ---- measuring ------------------------------------------------------------ */

static double wall(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + 1e-9 * ts.tv_nsec;
}

/* Frames on this host's link (tx + rx, or tx only), -1 without -n. */
static long long frames(int tx_only)
{
    static const char *const names[2] = { "tx_packets", "rx_packets" };
    long long sum = 0;
    for (int i = 0; i < (tx_only ? 1 : 2); i++) {
        char path[128];
        long long v;
        FILE *f;
        if (!opt.iface[0]) return -1;
        snprintf(path, sizeof(path), "/sys/class/net/%s/statistics/%s", opt.iface, names[i]);
        if (!(f = fopen(path, "r"))) return -1;
        if (fscanf(f, "%lld", &v) != 1) v = -1;
        fclose(f);
        if (v < 0) return -1;
        sum += v;
    }
    return sum;
}

/* Frames counted once the link is quiet (no delayed acknowledgement still
 * to come): rank 0 only. */
static long long quiet_frames(void)
{
    if (!opt.iface[0]) return -1;
    usleep((useconds_t) opt.quiet_ms * 1000);
    return frames(0);
}

typedef struct {
    double med_s, p10_s, p90_s;         /* median, 10th and 90th percentile */
    double frames;                      /* per iteration, < 0: unknown */
    int n;
} meas_t;

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *) a, y = *(const double *) b;
    return (x > y) - (x < y);
}

/* Median and spread of n > 0 times into *m. */
static void stats(meas_t *m, const double *t, int n)
{
    double *c = malloc(sizeof(double) * (size_t) n);
    if (!c) bench_die("out of memory");
    memcpy(c, t, sizeof(double) * (size_t) n);
    qsort(c, (size_t) n, sizeof(double), cmp_double);
    m->med_s = n % 2 ? c[n / 2] : 0.5 * (c[n / 2 - 1] + c[n / 2]);
    m->p10_s = c[(n - 1) / 10];
    m->p90_s = c[(n - 1) - (n - 1) / 10];
    free(c);
}

/* Run pattern p: warm-ups, then timed iterations (rank 0 times them). */
static meas_t run_pattern(ctx_t *c, const pattern_t *p, double *t)
{
    meas_t m = { 0, 0, 0, -1, opt.iters };
    int origin = c->rank == 0, target = c->rank == 1;
    int both = p->kind == K_ACTIVE || p->kind == K_COLL;
    long long f0 = -1, f1;

    if (p->kind == K_COLL) target = 1;          /* every rank takes part */
    if (p->kind == K_LOCKALL && origin) MPI_Win_lock_all(0, c->w.win);
    if (origin || (both && target)) {
        for (int i = 0; i < opt.warmup + opt.iters; i++) {
            if (origin && i == opt.warmup) f0 = quiet_frames();
            double t0 = bench_now();
            if (origin) p->origin(c);
            else p->target(c);
            if (origin && i >= opt.warmup) t[i - opt.warmup] = bench_now() - t0;
        }
    }
    if (origin) {
        f1 = f0 >= 0 ? quiet_frames() : -1;
        if (f0 >= 0 && f1 >= 0) m.frames = (double) (f1 - f0) / opt.iters;
        stats(&m, t, opt.iters);
    }
    if (p->kind == K_LOCKALL && origin) MPI_Win_unlock_all(c->w.win);
    MPI_Barrier(MPI_COMM_WORLD);
    return m;
}

static double cpu_s(clockid_t clock)
{
    struct timespec ts;
    clock_gettime(clock, &ts);
    return ts.tv_sec + 1e-9 * ts.tv_nsec;
}

/* Compute for s seconds outside MPI: work units per second; *xcpu: the CPU
 * time the process's other threads (a progress thread) used meanwhile, per
 * second (0: none). */
static double compute(double s, double *xcpu)
{
    volatile double x = 1.0;
    long units = 0;
    double t0 = wall(), t, p0 = cpu_s(CLOCK_PROCESS_CPUTIME_ID);
    double c0 = cpu_s(CLOCK_THREAD_CPUTIME_ID);
    do {
        for (int j = 0; j < 1000; j++) x = x * 1.0000001 + 1e-9;
        units++;
    } while ((t = wall()) - t0 < s);
    *xcpu = ((cpu_s(CLOCK_PROCESS_CPUTIME_ID) - p0) - (cpu_s(CLOCK_THREAD_CPUTIME_ID) - c0)) /
            (t - t0);
    if (*xcpu < 0) *xcpu = 0;                   /* clock granularity */
    return units / (t - t0);
}

/* Pattern p (passive) while the target computes: the epochs' median, how
 * many ran, the target's speed relative to computing with no RMA. */
static meas_t run_busy(ctx_t *c, const pattern_t *p, double *t, double *speed, double *xcpu)
{
    meas_t m = { 0, 0, 0, -1, 0 };
    double rate[3] = { 0, 0, 0 }, x;
    long long f0 = -1, f1;

    for (int phase = 0; phase < 2; phase++) {
        if (c->rank == 0 && phase == 1) f0 = quiet_frames();
        MPI_Barrier(MPI_COMM_WORLD);
        if (c->rank == 1) {
            rate[phase] = compute(opt.busy_s, &x);
            if (phase == 1) rate[2] = x;
        } else if (c->rank == 0 && phase == 1) {
            double t0 = wall();
            usleep(20000);                       /* the target is computing by now */
            if (p->kind == K_LOCKALL) MPI_Win_lock_all(0, c->w.win);
            while (m.n < MAX_ITERS && wall() - t0 < 0.9 * opt.busy_s) {
                double s = bench_now();
                p->origin(c);
                t[m.n++] = bench_now() - s;
            }
            if (p->kind == K_LOCKALL) MPI_Win_unlock_all(c->w.win);
        }
        MPI_Barrier(MPI_COMM_WORLD);
    }
    if (c->rank == 0) {
        f1 = f0 >= 0 ? quiet_frames() : -1;
        if (f0 >= 0 && f1 >= 0 && m.n) m.frames = (double) (f1 - f0) / m.n;
        if (m.n) stats(&m, t, m.n);
    }
    MPI_Bcast(rate, 3, MPI_DOUBLE, 1, MPI_COMM_WORLD);
    *speed = rate[0] > 0 ? rate[1] / rate[0] : 0;
    *xcpu = rate[2];
    return m;
}

/* A row: round trips are times over the ping-pong's (`pp`): median over
 * median, 10th percentile over its 10th (rt_lo: what load on the machine
 * moves least), 90th percentile over the median. */
static void row(const char *name, const meas_t *m, const meas_t *pp, double speed, double xcpu)
{
    char fr[32], sp[32], xc[32];
    if (m->frames >= 0) snprintf(fr, sizeof(fr), "%.2f", m->frames);
    else snprintf(fr, sizeof(fr), "n/a");
    if (speed > 0) snprintf(sp, sizeof(sp), "%.3f", speed);
    else snprintf(sp, sizeof(sp), "n/a");
    if (speed > 0) snprintf(xc, sizeof(xc), "%.3f", xcpu);
    else snprintf(xc, sizeof(xc), "n/a");
    printf("%-16s %10.2f %8.2f %8.2f %12.*f %8s %6d %6s %6s\n", name, m->med_s / pp->med_s,
           m->p10_s / pp->p10_s, m->p90_s / pp->med_s, m->med_s < 1e-5 ? 3 : 1, m->med_s * 1e6,
           fr, m->n, sp, xc);
    fflush(stdout);
}

/* Check what the patterns left in the target's window (rank 1). */
static void check(ctx_t *c)
{
    uint64_t done[7] = { c->acc_done, c->fop_done, c->last_put, c->last_put_ep,
                         (uint64_t) c->ep_n, c->big_seq, c->big_len };
    MPI_Bcast(done, 7, MPI_UINT64_T, 0, MPI_COMM_WORLD);
    if (c->rank == 1) {
        uint64_t *m = (uint64_t *) c->w.base;
        MPI_Win_lock(MPI_LOCK_SHARED, 1, 0, c->w.win);   /* our own memory, synced */
        if (m[W_ACC] != done[0] || m[W_FOP] != done[1]) {
            fprintf(stderr, "sync_rtt: WRONG counters: accumulate %llu (expected %llu), "
                    "fetch_and_op %llu (expected %llu)\n", (unsigned long long) m[W_ACC],
                    (unsigned long long) done[0], (unsigned long long) m[W_FOP],
                    (unsigned long long) done[1]);
            MPI_Abort(MPI_COMM_WORLD, 1);
        }
        int last_ok = 0;
        for (int i = 0; i < 10; i++) last_ok |= m[W_PUT + i] == done[2];
        /* the last lock_epN epoch: its n puts counted up to last_put_ep */
        for (uint64_t i = 0; i < done[4]; i++) {
            if (m[W_EP + i] != done[3] - done[4] + 1 + i) last_ok = -1;
        }
        for (uint64_t i = 0; i < done[6]; i++) {
            if (((unsigned char *) c->w.base)[EP_BIG_AT + i] != (unsigned char) (done[5] & 0xff))
                last_ok = -1;
        }
        if (last_ok < 0) {
            fprintf(stderr, "sync_rtt: WRONG: the last lock_epN or lock_big epoch's values are "
                    "not in the window\n");
            MPI_Abort(MPI_COMM_WORLD, 1);
        }
        if (done[2] && !last_ok) {
            fprintf(stderr, "sync_rtt: WRONG: the last put (%llu) is not in the window\n",
                    (unsigned long long) done[2]);
            MPI_Abort(MPI_COMM_WORLD, 1);
        }
        MPI_Win_unlock(1, c->w.win);
    }
}

/* The ping-pong: its timed iterations join all[] (the round trip is the
 * median of the first and the last run together). */
static meas_t measure_rtt(ctx_t *c, double *t, double *all, int *nall)
{
    meas_t m = run_pattern(c, &patterns[0], t);
    if (c->rank == 0) {
        memcpy(all + *nall, t, sizeof(double) * (size_t) opt.iters);
        *nall += opt.iters;
    }
    return m;
}

static void sync_patterns(ctx_t *c, const int *want, const int *busy)
{
    double *t = calloc(MAX_ITERS, sizeof(double)), *pp = calloc(2 * (size_t) opt.iters,
                                                                sizeof(double));
    meas_t m[NPATTERNS], mb[NPATTERNS], first, last;
    double speed[NPATTERNS], xcpu[NPATTERNS];
    int npp = 0;

    if (!t || !pp) bench_die("out of memory");
    first = measure_rtt(c, t, pp, &npp);
    for (int i = 1; i < NPATTERNS; i++) {
        if (want[i]) m[i] = run_pattern(c, &patterns[i], t);
    }
    for (int i = 1; i < NPATTERNS; i++) {
        if (busy[i]) mb[i] = run_busy(c, &patterns[i], t, &speed[i], &xcpu[i]);
    }
    last = measure_rtt(c, t, pp, &npp);
    check(c);
    if (c->rank == 0) {
        char name[64];
        meas_t unit = first;             /* frames: the first ping-pong's */
        stats(&unit, pp, npp);
        unit.n = npp;
        printf("# rtt_us=%.1f (first %.1f, last %.1f): the unit of the rt columns\n",
               unit.med_s * 1e6, first.med_s * 1e6, last.med_s * 1e6);
        printf("# columns: pattern rt rt_lo rt_p90 us frames n speed xcpu\n");
        row("pingpong", &unit, &unit, 0, 0);
        for (int i = 1; i < NPATTERNS; i++) {
            if (want[i]) row(patterns[i].name, &m[i], &unit, 0, 0);
        }
        for (int i = 1; i < NPATTERNS; i++) {
            snprintf(name, sizeof(name), "busy_%s", patterns[i].name);
            if (busy[i]) row(name, &mb[i], &unit, speed[i], xcpu[i]);
        }
    }
    free(t);
    free(pp);
}

/* Every rank: K exclusive-lock increments of rank 0's counter. */
static void contend(ctx_t *c)
{
    double *t = calloc((size_t) opt.iters, sizeof(double)), mine[2], *done = NULL, rtt;
    long long f0, f1, fsum = 0, fmine = 0;
    MPI_Aint d = bench_disp(&c->w, 0, W_CTR * sizeof(uint64_t));
    MPI_Comm host;
    MPI_Group world_g, host_g;
    int hrank, zero = 0, zero_here;
    uint64_t v, total = 0;

    if (!t) bench_die("out of memory");
    rtt = run_pattern(c, &patterns[0], t).med_s;
    /* one rank per host reads its host's transmitted frames; the ranks on
     * rank 0's host (the lock's) are told apart in the fairness figures */
    MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &host);
    MPI_Comm_rank(host, &hrank);
    MPI_Comm_group(MPI_COMM_WORLD, &world_g);
    MPI_Comm_group(host, &host_g);
    MPI_Group_translate_ranks(world_g, 1, &zero, host_g, &zero_here);
    MPI_Group_free(&world_g);
    MPI_Group_free(&host_g);
    MPI_Comm_free(&host);
    f0 = hrank == 0 ? frames(1) : 0;
    MPI_Barrier(MPI_COMM_WORLD);
    double t0 = bench_now();
    for (int k = 0; k < opt.K; k++) {
        MPI_Win_lock(MPI_LOCK_EXCLUSIVE, 0, 0, c->w.win);
        MPI_Get(&v, 1, MPI_UINT64_T, 0, d, 1, MPI_UINT64_T, c->w.win);
        MPI_Win_flush(0, c->w.win);
        v++;
        MPI_Put(&v, 1, MPI_UINT64_T, 0, d, 1, MPI_UINT64_T, c->w.win);
        MPI_Win_unlock(0, c->w.win);
    }
    mine[0] = bench_now() - t0;
    mine[1] = zero_here == MPI_UNDEFINED;         /* on another host than the lock */
    MPI_Barrier(MPI_COMM_WORLD);
    if (hrank == 0 && f0 >= 0) {
        usleep((useconds_t) opt.quiet_ms * 1000);
        f1 = frames(1);
        fmine = f1 >= 0 ? f1 - f0 : -1;
    }
    if (c->rank == 0 && !(done = calloc(2 * (size_t) c->np, sizeof(double))))
        bench_die("out of memory");
    MPI_Gather(mine, 2, MPI_DOUBLE, done, 2, MPI_DOUBLE, 0, MPI_COMM_WORLD);
    if (fmine < 0) fmine = -(1LL << 40);          /* a host without counters: n/a */
    MPI_Reduce(&fmine, &fsum, 1, MPI_LONG_LONG, MPI_SUM, 0, MPI_COMM_WORLD);
    if (c->rank == 0) {
        MPI_Win_lock(MPI_LOCK_SHARED, 0, 0, c->w.win);        /* our own memory, synced */
        total = ((uint64_t *) c->w.base)[W_CTR];
        MPI_Win_unlock(0, c->w.win);
        if (total != (uint64_t) opt.K * (uint64_t) c->np) {
            fprintf(stderr, "sync_rtt: WRONG counter %llu after %d x %d exclusive increments\n",
                    (unsigned long long) total, c->np, opt.K);
            MPI_Abort(MPI_COMM_WORLD, 1);
        }
        double lo = 1e300, hi = 0, rlo = 1e300, rhi = 0;
        int nremote = 0;
        for (int r = 0; r < c->np; r++) {
            double x = done[2 * r];
            if (x < lo) lo = x;
            if (x > hi) hi = x;
            if (done[2 * r + 1] == 0) continue;
            nremote++;
            if (x < rlo) rlo = x;
            if (x > rhi) rhi = x;
        }
        double acq = hi / ((double) opt.K * c->np);
        char fr[32], rs[32];
        if (fsum >= 0 && opt.iface[0])
            snprintf(fr, sizeof(fr), "%.2f", (double) fsum / ((double) opt.K * c->np));
        else snprintf(fr, sizeof(fr), "n/a");
        if (nremote >= 2 && rhi > 0) snprintf(rs, sizeof(rs), "%.3f", (rhi - rlo) / rhi);
        else snprintf(rs, sizeof(rs), "n/a");
        printf("# rtt_us=%.1f (ranks 0 and 1): the unit of the acq_rt column; counter %llu "
               "= %d x %d: every increment kept\n", rtt * 1e6, (unsigned long long) total,
               c->np, opt.K);
        printf("# columns: np acq_us acq_rt spread rspread min_s max_s frames\n");
        printf("%d %.1f %.2f %.3f %s %.4g %.4g %s\n", c->np, acq * 1e6, acq / rtt,
               hi > 0 ? (hi - lo) / hi : 0, rs, lo, hi, fr);
    }
    free(done);
    free(t);
}

static void usage(const char *argv0)
{
    printf("usage: mpirun -np 2 %s [-w FLAVOR] [-o PATTERNS|all] [-i N] [-x N] [-b PATTERNS|none]\n"
           "                 [-S SECONDS] [-n IFACE] [-q MS]\n"
           "       mpirun -np N %s -o contend [-w FLAVOR] [-K N] [-n IFACE]\n"
           "  -w FLAVOR    create, allocate (default), dynamic\n"
           "  -o LIST      patterns, comma separated (default all):", argv0, argv0);
    for (int i = 1; i < NPATTERNS; i++) printf(" %s", patterns[i].name);
    printf("\n  -i N         timed iterations (default 50)\n"
           "  -x N         warm-up iterations (default 5)\n"
           "  -b LIST      passive patterns also timed while the target computes (default "
           "lock_put; none)\n"
           "  -S SECONDS   how long the target computes outside MPI (default 1)\n"
           "  -n IFACE     count frames on this interface of rank 0's host (hosts.sh: eth0)\n"
           "  -q MS        quiet time before reading the frame counters (default 50)\n"
           "  -K N         contention: exclusive-lock increments per rank (default 1000)\n"
           "See the comment at the top of sync_rtt.c for the patterns.\n");
}

static int parse_opts(int argc, char **argv)
{
    int c;
    opt.flavor = FLAVOR_ALLOCATE;
    opt.iters = 50;
    opt.warmup = 5;
    opt.K = 1000;
    opt.quiet_ms = 50;
    opt.busy_s = 1.0;
    strcpy(opt.patterns, "all");
    strcpy(opt.busy, "lock_put");
    opterr = 0;
    while (-1 != (c = getopt(argc, argv, "w:o:i:x:b:S:n:q:K:h"))) {
        switch (c) {
        case 'w':
            if (bench_parse_flavor(optarg, &opt.flavor) || opt.flavor == FLAVOR_MEMHANDLE) return 2;
            break;
        case 'o':
            if (!strcmp(optarg, "contend")) opt.contend = 1;
            else snprintf(opt.patterns, sizeof(opt.patterns), "%s", optarg);
            break;
        case 'i': opt.iters = atoi(optarg); break;
        case 'x': opt.warmup = atoi(optarg); break;
        case 'b': snprintf(opt.busy, sizeof(opt.busy), "%s", optarg); break;
        case 'S': opt.busy_s = atof(optarg); break;
        case 'n': snprintf(opt.iface, sizeof(opt.iface), "%s", optarg); break;
        case 'q': opt.quiet_ms = atoi(optarg); break;
        case 'K': opt.K = atoi(optarg); break;
        case 'h': return 1;
        default: return 2;
        }
    }
    if (optind != argc || opt.iters < 1 || opt.iters > MAX_ITERS || opt.warmup < 0 ||
        opt.K < 1 || opt.quiet_ms < 0 || opt.busy_s < 0 || opt.busy_s > 600 ||
        strchr(opt.iface, '/'))
        return 2;
    return 0;
}

int main(int argc, char **argv)
{
    ctx_t c;
    int prc = parse_opts(argc, argv), want[NPATTERNS], busy[NPATTERNS];
    const char *names[NPATTERNS];

    bench_init(&argc, &argv, MPI_THREAD_SINGLE);
    bench_opts_checked(prc, "sync_rtt", argv[0], usage);
    memset(&c, 0, sizeof(c));
    MPI_Comm_rank(MPI_COMM_WORLD, &c.rank);
    MPI_Comm_size(MPI_COMM_WORLD, &c.np);
    if (c.np < 2 || (!opt.contend && c.np != 2))
        bench_bad_arg("needs 2 ranks (-o contend: at least 2)");
    for (int i = 0; i < NPATTERNS; i++) {
        names[i] = patterns[i].name;
        want[i] = busy[i] = 0;
    }
    if (!strcmp(opt.patterns, "all")) {
        for (int i = 0; i < NPATTERNS; i++) want[i] = 1;
    } else if (!bench_parse_names(opt.patterns, names, NPATTERNS, want)) {
        bench_bad_arg("-o %s: unknown pattern", opt.patterns);
    }
    if (opt.busy_s > 0 && strcmp(opt.busy, "none") &&
        !bench_parse_names(opt.busy, names, NPATTERNS, busy))
        bench_bad_arg("-b %s: unknown pattern", opt.busy);
    for (int i = 0; i < NPATTERNS; i++) {
        if (busy[i] && patterns[i].kind != K_PASSIVE && patterns[i].kind != K_LOCKALL)
            bench_bad_arg("-b %s: not a passive pattern", patterns[i].name);
    }

    bench_win_create_or_na(&c.w, MAIN_WIN_BYTES, opt.flavor, MPI_COMM_WORLD);
    bench_win_create_or_na(&c.w2, WIN_BYTES, opt.flavor, MPI_COMM_WORLD);
    {
        MPI_Group world;
        int zero = 0, one = 1;
        MPI_Comm_group(MPI_COMM_WORLD, &world);
        MPI_Group_incl(world, 1, &zero, &c.origin_grp);
        MPI_Group_incl(world, 1, &one, &c.target_grp);
        MPI_Group_free(&world);
    }
    if (c.rank == 0) {
        const char *osc = getenv("OMPI_MCA_osc");
        printf("# bench=sync_rtt flavor=%s np=%d window=%d iters=%d warmup=%d osc=%s%s%s\n",
               bench_flavor_names[opt.flavor], c.np, MAIN_WIN_BYTES, opt.iters, opt.warmup,
               osc ? osc : "default", opt.iface[0] ? " frames_on=" : "", opt.iface);
        fflush(stdout);
    }
    if (opt.contend) contend(&c);
    else sync_patterns(&c, want, busy);
    MPI_Group_free(&c.origin_grp);
    MPI_Group_free(&c.target_grp);
    bench_win_free(&c.w2);
    bench_win_free(&c.w);
    MPI_Finalize();
    return 0;
}
