/*
 * osu_rma.c - put / get latency and bandwidth in the pattern of the OSU
 * micro-benchmarks 7 one-sided tests osu_put_latency, osu_get_latency,
 * osu_put_bw, osu_get_bw and osu_put_bibw (written for this project from a
 * reading of those tests; no OSU code).
 *
 *   mpirun -np 2 osu_rma [-o put_lat,get_lat,put_bw,get_bw,put_bibw]
 *                        [-w create|allocate|dynamic|memhandle]
 *                        [-s lock|flush|flush_local|lock_all|fence|pscw]
 *                        [-m MIN -M MAX -f FACTOR | -z LIST] [-i N] [-I N]
 *                        [-x N] [-X N] [-W N] [-T SECONDS]        (osu_rma -h)
 *
 * What makes it OSU's pattern (and not rma_lat / rma_bw's):
 *  - a FRESH window for every message size (and operation), as OSU's
 *    allocate_memory_one_sided: create = MPI_Win_create over a buffer from
 *    posix_memalign(page size) of exactly the window's size, dynamic =
 *    MPI_Win_create_dynamic + MPI_Win_attach of such a buffer, allocate =
 *    MPI_Win_allocate of that size; the origin buffer is page-aligned memory
 *    of the same size (bench_win_create / bench_alloc).  Latency windows hold
 *    SIZE bytes, bandwidth windows SIZE * W (W = 64, -W);
 *  - OSU's iteration structure: `skip` untimed iterations, then `loop` timed
 *    ones, one timer around the loop: latency = loop time / loop (the mean,
 *    what OSU prints), for fence and PSCW (a ping-pong, one transfer each way
 *    per iteration) / 2.  Defaults as OSU: latency 100 skip + 10000 loop up
 *    to 8 KiB, 10 + 1000 above; bandwidth 10 + 100, 2 + 20 above;
 *  - OSU's synchronizations, per iteration:
 *      lock        MPI_Win_lock(SHARED) / ops / MPI_Win_unlock (OSU: shared)
 *      flush       (shared lock held) ops + MPI_Win_flush
 *      flush_local (shared lock held) ops + MPI_Win_flush_local
 *      lock_all    MPI_Win_lock_all / ops / MPI_Win_unlock_all
 *      fence       latency: rank 0 fence, op, fence, fence; rank 1 fence,
 *                  fence, op, fence; bandwidth: rank 0 fence, W ops, fence
 *                  against rank 1's fence, fence; bibw: both fence, W ops, fence
 *      pscw        latency: rank 0 start, op, complete, post, wait; rank 1
 *                  post, wait, start, op, complete; bandwidth: rank 0 start,
 *                  W ops, complete against rank 1's post, wait; bibw: both
 *                  post, start, W ops, complete, wait
 *    where "ops" is one MPI_Put / MPI_Get of SIZE bytes of MPI_CHAR
 *    (latency) or W of them to consecutive SIZE-byte slots (bandwidth);
 *    rank 1 waits in MPI_Barrier during passive-target loops.
 *    put_bibw exists for fence and pscw only (as osu_put_bibw).
 *
 * Beyond OSU:
 *  - every iteration is time-stamped (one MPI_Wtime per iteration, the same
 *    stamps as the loop timer): latency rows also give the MEDIAN of the
 *    per-iteration times (<op>_med_us; fence / pscw halved like the mean);
 *  - a time cap per cell (-T, default 0 = none): passive modes stop the timed
 *    loop after T seconds and the warm-up after T/4 (rank 0 alone decides,
 *    as acc_osu); active modes (both ranks iterate) run the whole skip, then
 *    rank 0 estimates an iteration from the second half of it and both ranks
 *    run min(loop, max(5, T / estimate)) iterations (bench_row_iters);
 *  - values are checked once per cell after the timed loop: put - the target
 *    window holds the origin's pattern; get - the origin's buffer holds the
 *    target window's pattern (both directions where both ranks are origins).
 *    A mismatch aborts the run (MPI_Abort) with a message on stderr: a broken
 *    component cannot report a fast time.
 *
 * Output (bench_common.h): one row per size; columns per operation:
 *   <op>_us (OSU's mean) and <op>_med_us for put_lat / get_lat,
 *   <op>_MBps (OSU's MB/s, 10^6 bytes; bibw: both directions) and
 *   <op>_Mmsgps (operations per second, millions) for the bandwidth tests.
 * "# iters:" lines give the timed iterations per cell.  A flavor the
 * component cannot create: "# n/a:" and exit 77.
 */
#include "bench_common.h"

#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef enum { OP_PUT_LAT, OP_GET_LAT, OP_PUT_BW, OP_GET_BW, OP_PUT_BIBW, OP_COUNT } op_t;
static const char *const op_names[OP_COUNT] = { "put_lat", "get_lat", "put_bw", "get_bw",
                                                "put_bibw" };

#define MAX_SIZES 64
#define LARGE_MESSAGE_SIZE 8192     /* OSU: sizes above use the "large" counts */

static struct {
    int ops[OP_COUNT];
    bench_flavor_t flavor;
    bench_sync_t sync;
    size_t sizes[MAX_SIZES];
    int nsizes;
    int iters, iters_large;     /* -i / -I; -1: OSU's default of the test kind */
    int skip, skip_large;       /* -x / -X */
    int window;                 /* -W */
    double cap_s;               /* -T */
} O;

static int is_bw(op_t op) { return op == OP_PUT_BW || op == OP_GET_BW || op == OP_PUT_BIBW; }
static int is_get(op_t op) { return op == OP_GET_LAT || op == OP_GET_BW; }

/* OSU 7 defaults (osu_util.h): LAT_LOOP_SMALL/LARGE, LAT_SKIP_SMALL/LARGE,
 * BW_LOOP_SMALL/LARGE, BW_SKIP_SMALL/LARGE */
static int loop_for(op_t op, size_t size)
{
    int large = size > LARGE_MESSAGE_SIZE;
    if (large && O.iters_large > 0) return O.iters_large;
    if (!large && O.iters > 0) return O.iters;
    return is_bw(op) ? (large ? 20 : 100) : (large ? 1000 : 10000);
}

static int skip_for(op_t op, size_t size)
{
    int large = size > LARGE_MESSAGE_SIZE;
    if (large && O.skip_large >= 0) return O.skip_large;
    if (!large && O.skip >= 0) return O.skip;
    return is_bw(op) ? (large ? 2 : 10) : (large ? 10 : 100);
}

/* put_bibw has fence and PSCW only (osu_put_bibw); memhandle windows have no
 * active-target epochs */
static const char *why_na(op_t op)
{
    if (op == OP_PUT_BIBW && !bench_sync_is_active(O.sync)) {
        return "put_bibw runs with fence or pscw only (as OSU's osu_put_bibw)";
    }
    if (O.flavor == FLAVOR_MEMHANDLE && bench_sync_is_active(O.sync)) {
        return "a memhandle window has no fence / pscw epochs (passive target only)";
    }
    return NULL;
}

static void usage(const char *prog)
{
    printf("usage: mpirun -np 2 %s [options]\n"
           "  -o LIST     tests: put_lat, get_lat, put_bw, get_bw, put_bibw (default put_lat)\n"
           "  -w FLAVOR   window: create, allocate, dynamic, memhandle (default allocate)\n"
           "  -s SYNC     lock, flush, flush_local, lock_all, fence, pscw (default flush;\n"
           "              put_bibw: fence, pscw)\n"
           "  -m SIZE     smallest message size (default 1; K/M suffixes)\n"
           "  -M SIZE     largest message size (default 4M; always measured)\n"
           "  -f FACTOR   size multiplier between rows (default 2)\n"
           "  -z LIST     explicit sizes instead of -m/-M/-f (e.g. 8,4K,64K,1M)\n"
           "  -i N        timed iterations up to 8 KiB (OSU: latency 10000, bandwidth 100)\n"
           "  -I N        timed iterations above 8 KiB (OSU: latency 1000, bandwidth 20)\n"
           "  -x N        untimed (skip) iterations up to 8 KiB (OSU: 100 / 10)\n"
           "  -X N        untimed iterations above 8 KiB (OSU: 10 / 2)\n"
           "  -W N        operations per epoch of the bandwidth tests (default 64)\n"
           "  -T SECONDS  time cap per cell (default 0 = none; see the source's comment)\n"
           "prints: size_B, per latency test <op>_us (mean over the timed loop, as OSU)\n"
           "and <op>_med_us (median iteration), per bandwidth test <op>_MBps (as OSU)\n"
           "and <op>_Mmsgps\n", prog);
}

/* Before MPI_Init.  Returns 0, 1 for -h, 2 for bad arguments. */
static int parse_opts(int argc, char **argv)
{
    bench_size_opts_t z = {.min = 1, .max = 4u << 20, .factor = 2, .sizes = O.sizes,
                           .cap = MAX_SIZES, .cap_s = -1};
    int c, taken;

    memset(&O, 0, sizeof(O));
    O.ops[OP_PUT_LAT] = 1;
    O.flavor = FLAVOR_ALLOCATE;
    O.sync = SYNC_FLUSH;
    O.iters = O.iters_large = -1;
    O.skip = O.skip_large = -1;
    O.window = 64;
    opterr = 0;
    while (-1 != (c = getopt(argc, argv, "o:w:s:m:M:f:z:i:I:x:X:W:T:h"))) {
        if (0 != (taken = bench_size_opt(&z, c, optarg))) {
            if (taken < 0) return 2;
            continue;
        }
        switch (c) {
        case 'o': if (!bench_parse_names(optarg, op_names, OP_COUNT, O.ops)) return 2; break;
        case 'w': if (bench_parse_flavor(optarg, &O.flavor)) return 2; break;
        case 's': {
            int s = bench_name_index(optarg, bench_sync_names, SYNC_COUNT);
            if (s < 0) return 2;
            O.sync = (bench_sync_t) s;
            break;
        }
        case 'i': O.iters = atoi(optarg); if (O.iters < 1) return 2; break;
        case 'I': O.iters_large = atoi(optarg); if (O.iters_large < 1) return 2; break;
        case 'x': O.skip = atoi(optarg); if (O.skip < 0) return 2; break;
        case 'X': O.skip_large = atoi(optarg); if (O.skip_large < 0) return 2; break;
        case 'W': O.window = atoi(optarg); if (O.window < 1) return 2; break;
        case 'h': return 1;
        default: return 2;
        }
    }
    if (optind != argc || (O.nsizes = bench_size_opts_done(&z)) <= 0) return 2;
    if (z.cap_s >= 0) O.cap_s = z.cap_s;  /* -T given */
    return 0;
}

/* ---- one cell ------------------------------------------------------------ */

typedef struct {
    op_t op;
    bench_win_t *w;
    int rank, peer;
    size_t size;                /* bytes per operation */
    int nops;                   /* operations per iteration: 1 or W */
    char *buf;                  /* origin buffer (put source / get destination) */
    MPI_Group peer_group;       /* PSCW */
} cell_ctx_t;

typedef struct {
    double mean_us, med_us;     /* latency tests */
    double MBps, Mmsgps;        /* bandwidth tests */
    int iters;                  /* timed iterations; 0: not measured */
} cell_t;

static double *times;           /* per-iteration times of the current cell */
static int times_cap;
static int windows_made;        /* a first window creation failure is n/a */

/* Pattern seeds: what rank r puts (or exposes for a get) in a cell. */
static unsigned seed_of(const cell_ctx_t *c, int rank)
{
    return (unsigned) (1 + 7 * rank + 3 * (int) c->op + (int) (c->size % 89));
}

/* The ops of one iteration to `target`: nops transfers of SIZE bytes to
 * consecutive slots (OSU: sbuf + j*size -> disp + j*size). */
static void issue(const cell_ctx_t *c, int target)
{
    for (int j = 0; j < c->nops; j++) {
        size_t off = (size_t) j * c->size;
        MPI_Aint disp = bench_disp(c->w, target, off);
        if (is_get(c->op)) {
            MPI_Get(c->buf + off, (int) c->size, MPI_CHAR, target, disp, (int) c->size,
                    MPI_CHAR, c->w->win);
        } else {
            MPI_Put(c->buf + off, (int) c->size, MPI_CHAR, target, disp, (int) c->size,
                    MPI_CHAR, c->w->win);
        }
    }
}

/* One OSU iteration of this rank (see the header comment). */
static void one_iter(const cell_ctx_t *c)
{
    MPI_Win win = c->w->win, lwin = bench_lock_win(c->w);
    int r0 = (c->rank == 0), lat = !is_bw(c->op), bibw = (c->op == OP_PUT_BIBW);

    switch (O.sync) {
    case SYNC_LOCK:
        MPI_Win_lock(MPI_LOCK_SHARED, 1, 0, lwin);
        issue(c, 1);
        MPI_Win_unlock(1, lwin);
        break;
    case SYNC_FLUSH:
        issue(c, 1);
        MPI_Win_flush(1, win);
        break;
    case SYNC_FLUSH_LOCAL:
        issue(c, 1);
        MPI_Win_flush_local(1, win);
        break;
    case SYNC_LOCK_ALL:
        MPI_Win_lock_all(0, lwin);
        issue(c, 1);
        MPI_Win_unlock_all(lwin);
        break;
    case SYNC_FENCE:
        if (lat) {
            MPI_Win_fence(0, win);
            if (r0) issue(c, 1);
            MPI_Win_fence(0, win);
            if (!r0) issue(c, 0);
            MPI_Win_fence(0, win);
        } else {
            MPI_Win_fence(0, win);
            if (r0 || bibw) issue(c, c->peer);
            MPI_Win_fence(0, win);
        }
        break;
    case SYNC_PSCW:
        if (lat) {
            if (r0) {
                MPI_Win_start(c->peer_group, 0, win);
                issue(c, 1);
                MPI_Win_complete(win);
                MPI_Win_post(c->peer_group, 0, win);
                MPI_Win_wait(win);
            } else {
                MPI_Win_post(c->peer_group, 0, win);
                MPI_Win_wait(win);
                MPI_Win_start(c->peer_group, 0, win);
                issue(c, 0);
                MPI_Win_complete(win);
            }
        } else if (bibw) {
            MPI_Win_post(c->peer_group, 0, win);
            MPI_Win_start(c->peer_group, 0, win);
            issue(c, c->peer);
            MPI_Win_complete(win);
            MPI_Win_wait(win);
        } else if (r0) {
            MPI_Win_start(c->peer_group, 0, win);
            issue(c, 1);
            MPI_Win_complete(win);
        } else {
            MPI_Win_post(c->peer_group, 0, win);
            MPI_Win_wait(win);
        }
        break;
    default:
        break;
    }
}

/* Passive target: rank 0 alone, capped by -T on its own clock.  Returns the
 * timed iterations (times[] filled). */
static int loop_passive(const cell_ctx_t *c, int skip, int loop)
{
    int n = 0;
    double start, prev;

    if (O.sync == SYNC_FLUSH || O.sync == SYNC_FLUSH_LOCAL) {
        MPI_Win_lock(MPI_LOCK_SHARED, 1, 0, bench_lock_win(c->w));
    }
    start = bench_now();
    for (int i = 0; i < skip; i++) {
        one_iter(c);
        if (O.cap_s > 0 && bench_now() - start >= O.cap_s / 4) break;
    }
    start = prev = bench_now();
    while (n < loop) {
        double t;
        one_iter(c);
        t = bench_now();
        times[n++] = t - prev;
        prev = t;
        if (O.cap_s > 0 && t - start >= O.cap_s) break;
    }
    if (O.sync == SYNC_FLUSH || O.sync == SYNC_FLUSH_LOCAL) {
        MPI_Win_unlock(1, bench_lock_win(c->w));
    }
    return n;
}

/* Active target: both ranks iterate the same number of times; the timed
 * count is cut by -T from rank 0's estimate of the second half of the skip
 * (bench_row_iters: collective, at least 5). */
static int loop_active(const cell_ctx_t *c, int skip, int loop)
{
    bench_opts_t bo;
    double half = 0.0, prev;
    int n;

    for (int i = 0; i < skip; i++) {
        if (i == skip / 2) half = bench_now();
        one_iter(c);
    }
    memset(&bo, 0, sizeof(bo));
    bo.row_s = O.cap_s;
    n = bench_row_iters(&bo, loop, skip >= 2 ? (bench_now() - half) / (skip - skip / 2) : 0.0,
                        MPI_COMM_WORLD);
    if (n > loop) n = loop;             /* bench_row_iters keeps at least 5 */
    prev = bench_now();
    for (int i = 0; i < n; i++) {
        double t;
        one_iter(c);
        t = bench_now();
        times[i] = t - prev;
        prev = t;
    }
    return n;
}

/* 1 when buf holds the pattern; else says where it differs (stderr), 0 */
static int check(const cell_ctx_t *c, const void *buf, size_t n, unsigned seed,
                 const char *what)
{
    size_t bad = bench_check_pattern(buf, n, seed);
    if (bad == (size_t) -1) return 1;
    fprintf(stderr, "osu_rma: WRONG VALUE: %s %zu B, %s window, %s: %s differs at byte %zu "
            "of %zu (0x%02x, expected 0x%02x)\n", op_names[c->op], c->size,
            bench_flavor_names[O.flavor], bench_sync_names[O.sync], what, bad, n,
            ((const unsigned char *) buf)[bad], bench_pattern_byte(bad, seed));
    return 0;
}

/* Collective (both ranks): one cell on a fresh window. */
static cell_t measure(op_t op, size_t size, int rank)
{
    cell_t r = { 0, 0, 0, 0, 0 };
    cell_ctx_t c;
    bench_win_t w;
    int active = bench_sync_is_active(O.sync), n, ok;
    int skip = skip_for(op, size), loop = loop_for(op, size);
    /* both ranks are origins: the ping-pong latency tests under fence /
     * PSCW and bibw */
    int both = (active && !is_bw(op)) || op == OP_PUT_BIBW;
    size_t bytes;

    memset(&c, 0, sizeof(c));
    c.op = op;
    c.rank = rank;
    c.peer = 1 - rank;
    c.size = size;
    c.nops = is_bw(op) ? O.window : 1;
    c.peer_group = MPI_GROUP_NULL;
    bytes = size * (size_t) c.nops;

    bench_win_create_fresh(&w, bytes, O.flavor, &windows_made);
    c.w = &w;
    c.buf = bench_alloc(bytes);          /* page-aligned, exactly `bytes`, zeroed */
    if (is_get(op)) {
        bench_fill_pattern(w.base, bytes, seed_of(&c, rank));   /* what the peer gets */
    } else {
        bench_fill_pattern(c.buf, bytes, seed_of(&c, rank));    /* what we put */
    }
    if (O.sync == SYNC_PSCW) {
        MPI_Group g;
        MPI_Win_get_group(w.win, &g);
        MPI_Group_incl(g, 1, &c.peer, &c.peer_group);
        MPI_Group_free(&g);
    }
    if (loop > times_cap) {
        free(times);
        times_cap = loop;
        times = calloc((size_t) times_cap, sizeof(double));
        if (!times) bench_die("out of memory");
    }

    MPI_Barrier(MPI_COMM_WORLD);
    if (active) {
        n = loop_active(&c, skip, loop);
    } else if (rank == 0) {
        n = loop_passive(&c, skip, loop);
    } else {
        n = 0;                           /* the passive target waits, inside MPI */
    }
    MPI_Barrier(MPI_COMM_WORLD);

    /* values: the target's window (put) or the origin's buffer (get); both
     * ranks learn the verdict before rank 0 prints anything */
    ok = 1;
    if ((rank == 0 || both) && is_get(op)) {
        ok = check(&c, c.buf, bytes, seed_of(&c, c.peer), "the fetched data");
    }
    if ((rank == 1 || both) && !is_get(op)) {
        ok = check(&c, w.base, bytes, seed_of(&c, c.peer), "the target window");
    }
    MPI_Allreduce(MPI_IN_PLACE, &ok, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
    if (!ok) bench_die("wrong value after the timed loop (see the WRONG VALUE line)");

    if (rank == 0 && n > 0) {
        double total = 0.0, div = (active && !is_bw(op)) ? 2.0 : 1.0;
        for (int i = 0; i < n; i++) total += times[i];
        r.iters = n;
        if (is_bw(op)) {
            double dirs = (op == OP_PUT_BIBW) ? 2.0 : 1.0;
            r.MBps = dirs * (double) size * c.nops * n / 1e6 / total;
            r.Mmsgps = dirs * (double) c.nops * n / 1e6 / total;
        } else {
            r.mean_us = 1e6 * total / n / div;
            r.med_us = 1e6 * bench_median(times, n) / div;
        }
    }
    if (c.peer_group != MPI_GROUP_NULL) MPI_Group_free(&c.peer_group);
    bench_win_free(&w);
    free(c.buf);
    return r;
}

int main(int argc, char **argv)
{
    int prc = parse_opts(argc, argv), rank, np, nmeasured = 0;
    char line[4096], iters[4096];
    size_t n = 0;

    bench_init(&argc, &argv, MPI_THREAD_SINGLE);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &np);
    bench_opts_checked(prc, "osu_rma", argv[0], usage);
    if (np != 2) bench_bad_arg("osu_rma: needs exactly 2 ranks");

    for (int op = 0; op < OP_COUNT; op++) {
        if (O.ops[op] && !why_na((op_t) op)) nmeasured++;
    }
    if (nmeasured == 0) {
        for (int op = 0; op < OP_COUNT; op++) {
            if (O.ops[op]) bench_exit_na("%s", why_na((op_t) op));
        }
    }

    if (rank == 0) {
        const char *osc = getenv("OMPI_MCA_osc");
        printf("# bench=osu_rma flavor=%s sync=%s window=%d np=%d osc=%s\n",
               bench_flavor_names[O.flavor], bench_sync_names[O.sync], O.window, np,
               osc ? osc : "default");
        printf("# OSU 7 one-sided pattern: per size a fresh window of SIZE bytes (bandwidth: "
               "SIZE*%d) over page-aligned memory, skip + timed loop\n", O.window);
        printf("# <op>_us: mean over the timed loop (OSU's figure), <op>_med_us: median "
               "iteration%s; <op>_MBps: 10^6 B/s as OSU%s\n",
               bench_sync_is_active(O.sync) ? ", both halved (ping-pong)" : "",
               O.ops[OP_PUT_BIBW] ? " (bibw: both directions)" : "");
        if (O.cap_s > 0) printf("# time cap per cell: %.3g s\n", O.cap_s);
        for (int op = 0; op < OP_COUNT; op++) {
            if (O.ops[op] && why_na((op_t) op)) printf("# note: %s: %s\n", op_names[op],
                                                       why_na((op_t) op));
        }
        n += (size_t) snprintf(line + n, sizeof(line) - n, "# columns: size_B");
        for (int op = 0; op < OP_COUNT; op++) {
            if (!O.ops[op]) continue;
            if (is_bw((op_t) op)) {
                n += (size_t) snprintf(line + n, sizeof(line) - n, " %s_MBps %s_Mmsgps",
                                       op_names[op], op_names[op]);
            } else {
                n += (size_t) snprintf(line + n, sizeof(line) - n, " %s_us %s_med_us",
                                       op_names[op], op_names[op]);
            }
            if (n >= sizeof(line)) n = sizeof(line) - 1;
        }
        printf("%s\n", line);
    }

    /* size by size, as OSU: rows of a run that dies later are printed */
    for (int si = 0; si < O.nsizes; si++) {
        size_t size = O.sizes[si], m = 0;
        n = 0;
        n += (size_t) snprintf(line + n, sizeof(line) - n, "%zu", size);
        m += (size_t) snprintf(iters + m, sizeof(iters) - m, "# iters: %zu", size);
        for (int op = 0; op < OP_COUNT; op++) {
            cell_t c = { 0, 0, 0, 0, 0 };
            if (!O.ops[op]) continue;
            if (!why_na((op_t) op)) c = measure((op_t) op, size, rank);
            if (rank != 0) continue;
            if (c.iters == 0) {
                n += (size_t) snprintf(line + n, sizeof(line) - n, " n/a n/a");
            } else if (is_bw((op_t) op)) {
                n += (size_t) snprintf(line + n, sizeof(line) - n, " %.2f %.4f", c.MBps,
                                       c.Mmsgps);
            } else {
                n += (size_t) snprintf(line + n, sizeof(line) - n, " %.3f %.3f", c.mean_us,
                                       c.med_us);
            }
            m += (size_t) snprintf(iters + m, sizeof(iters) - m, " %d", c.iters);
            if (n >= sizeof(line)) n = sizeof(line) - 1;
            if (m >= sizeof(iters)) m = sizeof(iters) - 1;
        }
        if (rank == 0) {
            printf("%s\n", line);
            printf("%s\n", iters);
        }
    }

    free(times);
    MPI_Finalize();
    return 0;
}
