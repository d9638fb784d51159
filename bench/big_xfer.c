/*
 * big_xfer.c - large transfers, timed and checked value by value (issue 17
 * item 5).  Four workloads, each one row "workload seconds total_s":
 *
 *   ddt       every rank, in one lock_all epoch, puts a derived-datatype
 *             buffer to every other rank, then (another lock_all epoch)
 *             gets one back from each; the same type on both sides:
 *               ddt_indexed_put / _get: -n ints in an MPI_Type_indexed of
 *                 blocks of 1-3 ints with 1-2 int gaps (about n/2 pieces);
 *               ddt_struct_put / _get: -n elements of a struct of 4 MPI_INT
 *                 at byte 0 and 8 MPI_DOUBLE at byte 24, resized to 96 bytes
 *                 (gaps inside and after; 2 pieces per element).
 *             (default n = 262144; run it on 4 ranks)
 *   fence     each rank puts -W ints (default 16,000,000) to the next rank in
 *             one fence epoch (fence_put), then gets them from the next rank
 *             in another (fence_get).
 *   contig    rank 0 runs -i iterations (default 10,000) of contiguous
 *             operations with sizes 8 B, 16 B, ... -M (default 2 MiB) in turn,
 *             put / get / accumulate (MPI_INT, MPI_SUM) in turn, and targets
 *             all ranks (itself too) in turn; each operation in its own
 *             exclusive lock epoch (-s lock) or followed by MPI_Win_flush
 *             (-s flush, inside one lock_all epoch).  Every get is compared
 *             with a model of the target's window.
 *   accflush  -I loops (default 500) of: create a window of -M bytes (default
 *             2 MiB), lock_all; every rank but 0 accumulates (MPI_INT, SUM)
 *             10 times each of 256 KiB, 512 KiB, ... -M bytes into rank 0,
 *             every one completed with MPI_Win_flush_local, then
 *             MPI_Win_flush; unlock_all; rank 0 checks the sums; free.
 *
 * -o picks the workloads (comma list, default all four), -w the window flavor
 * (create, allocate, dynamic), -c tcp sets UCX_TLS=tcp,self and
 * OMPI_MCA_btl=self,tcp before MPI_Init (as acc_osu -c tcp).  seconds: the slowest rank's time in the
 * timed epochs (MPI calls only); total_s: the whole workload including
 * filling and checking buffers and window creation.  A wrong value aborts
 * (exit status != 0): these runs are measurements and tests at once.
 */
#include "bench_common.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define XFER_DIE(msg) bench_die(msg)
#include "../test/big_xfer_layout.h"

static int rank, nprocs;

/* ---- timing ------------------------------------------------------------------ */

static double slowest(double t)
{
    double m;
    MPI_Allreduce(&t, &m, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
    return m;
}

static void row(const char *name, double secs, double total)
{
    secs = slowest(secs);
    total = slowest(total);
    if (rank == 0) printf("%s %.3f %.3f\n", name, secs, total);
}

static void lock_epoch_local(bench_win_t *w, int on)
{
    if (on) MPI_Win_lock(MPI_LOCK_EXCLUSIVE, rank, 0, w->win);
    else MPI_Win_unlock(rank, w->win);
}

/* ---- ddt ------------------------------------------------------------------------ */

static void run_ddt(const bench_opts_t *o, layout_t *l)
{
    bench_win_t w;
    size_t span = l->span, bad, first;
    char *obuf = bench_alloc(span), *gbuf = bench_alloc(span * nprocs);
    char name[64];
    double t0 = bench_now(), t, tput, tget;

    bench_win_create_or_na(&w, span * nprocs, o->flavor, MPI_COMM_WORLD);

    /* put: origin r's data lands in slot r of every other rank's window */
    lock_epoch_local(&w, 1);
    memset(w.base, SENT, span * nprocs);
    lock_epoch_local(&w, 0);
    memset(obuf, SENT, span);
    layout_fill(l, obuf, 1000 + rank);
    MPI_Barrier(MPI_COMM_WORLD);
    t = bench_now();
    MPI_Win_lock_all(0, w.win);
    for (int i = 1; i < nprocs; i++) {
        int tgt = (rank + i) % nprocs;
        MPI_Put(obuf, l->count, l->type, tgt, bench_disp(&w, tgt, (size_t) rank * span),
                l->count, l->type, w.win);
    }
    MPI_Win_unlock_all(w.win);
    tput = bench_now() - t;
    MPI_Barrier(MPI_COMM_WORLD);
    lock_epoch_local(&w, 1);
    for (int s = 0; s < nprocs; s++) {
        if (s == rank) continue;
        bad = layout_check(l, w.base + (size_t) s * span, 1000 + s, &first);
        if (bad) bench_die("ddt %s put from %d: %zu bad bytes/values, first at byte %zu",
                           l->name, s, bad, first);
    }
    lock_epoch_local(&w, 0);
    snprintf(name, sizeof(name), "ddt_%s_put", l->name);
    row(name, tput, bench_now() - t0);

    /* get: slot r of rank t's window holds t's data for r */
    t0 = bench_now();
    lock_epoch_local(&w, 1);
    memset(w.base, SENT, span * nprocs);
    for (int s = 0; s < nprocs; s++) layout_fill(l, w.base + (size_t) s * span, 2000 + 64 * rank + s);
    lock_epoch_local(&w, 0);
    memset(gbuf, SENT, span * nprocs);
    MPI_Barrier(MPI_COMM_WORLD);
    t = bench_now();
    MPI_Win_lock_all(0, w.win);
    for (int i = 1; i < nprocs; i++) {
        int tgt = (rank + i) % nprocs;
        MPI_Get(gbuf + (size_t) tgt * span, l->count, l->type, tgt,
                bench_disp(&w, tgt, (size_t) rank * span), l->count, l->type, w.win);
    }
    MPI_Win_unlock_all(w.win);
    tget = bench_now() - t;
    /* (others may still need us to serve their gets: check after all are done) */
    MPI_Barrier(MPI_COMM_WORLD);
    for (int s = 0; s < nprocs; s++) {
        if (s == rank) continue;
        bad = layout_check(l, gbuf + (size_t) s * span, 2000 + 64 * s + rank, &first);
        if (bad) bench_die("ddt %s get from %d: %zu bad bytes/values, first at byte %zu",
                           l->name, s, bad, first);
    }
    MPI_Barrier(MPI_COMM_WORLD);
    bench_win_free(&w);
    snprintf(name, sizeof(name), "ddt_%s_get", l->name);
    row(name, tget, bench_now() - t0);
    free(obuf);
    free(gbuf);
}

/* ---- fence ----------------------------------------------------------------------- */

static void run_fence(const bench_opts_t *o, size_t n)
{
    bench_win_t w;
    int next = (rank + 1) % nprocs, prev = (rank + nprocs - 1) % nprocs;
    int *buf = bench_alloc(n * sizeof(int)), *win;
    size_t bad = 0;
    double t0 = bench_now(), t, tput, tget;

    if (n > (size_t) 0x7fffffff) bench_bad_arg("-n %zu: too many ints for one call", n);
    bench_win_create_or_na(&w, n * sizeof(int), o->flavor, MPI_COMM_WORLD);
    win = (int *) w.base;
    for (size_t i = 0; i < n; i++) buf[i] = (int) mix(3000 + rank, i);

    MPI_Win_fence(MPI_MODE_NOPRECEDE, w.win);
    t = bench_now();
    MPI_Put(buf, (int) n, MPI_INT, next, bench_disp(&w, next, 0), (int) n, MPI_INT, w.win);
    MPI_Win_fence(0, w.win);
    tput = bench_now() - t;
    for (size_t i = 0; i < n; i++) bad += win[i] != (int) mix(3000 + prev, i);
    if (bad) bench_die("fence put from %d: %zu bad ints", prev, bad);
    row("fence_put", tput, bench_now() - t0);

    t0 = bench_now();
    for (size_t i = 0; i < n; i++) win[i] = (int) mix(4000 + rank, i);
    memset(buf, SENT, n * sizeof(int));
    MPI_Win_fence(0, w.win);
    t = bench_now();
    MPI_Get(buf, (int) n, MPI_INT, next, bench_disp(&w, next, 0), (int) n, MPI_INT, w.win);
    MPI_Win_fence(MPI_MODE_NOSUCCEED, w.win);
    tget = bench_now() - t;
    for (size_t i = 0; i < n; i++) bad += buf[i] != (int) mix(4000 + next, i);
    if (bad) bench_die("fence get from %d: %zu bad ints", next, bad);
    bench_win_free(&w);
    row("fence_get", tget, bench_now() - t0);
    free(buf);
}

/* ---- contig ------------------------------------------------------------------------ */

static void run_contig(const bench_opts_t *o)
{
    bench_win_t w;
    size_t max = o->max_size, nsizes = 0;
    int maxn = (int) (max / sizeof(int));
    int *src = bench_alloc(max), *dst = bench_alloc(max);
    int **model = calloc(nprocs, sizeof(int *));
    int flush = o->sync == SYNC_FLUSH;
    double t0 = bench_now(), busy = 0, t;

    for (size_t s = 8; s <= max; s *= 2) nsizes++;
    bench_win_create_or_na(&w, max, o->flavor, MPI_COMM_WORLD);
    for (int r = 0; r < nprocs; r++) model[r] = calloc(maxn, sizeof(int));   /* windows start 0 */
    MPI_Barrier(MPI_COMM_WORLD);
    if (rank == 0) {
        if (flush) MPI_Win_lock_all(0, w.win);
        for (int i = 0; i < o->iters; i++) {
            int n = (int) ((8u << (i % nsizes)) / sizeof(int));
            int op = (int) ((i / nsizes) % 3);
            int tgt = (int) ((i / (3 * nsizes)) % nprocs);
            int *m = model[tgt];
            if (n < 2) n = 2;
            if (n > maxn) n = maxn;
            if (0 == op) {
                for (int j = 0; j < n; j++) m[j] = src[j] = (int) mix(i, j);
            } else if (2 == op) {
                for (int j = 0; j < n; j++) { src[j] = (i + j) % 7 - 3; m[j] += src[j]; }
            }
            t = bench_now();
            if (!flush) MPI_Win_lock(MPI_LOCK_EXCLUSIVE, tgt, 0, w.win);
            switch (op) {
            case 0: MPI_Put(src, n, MPI_INT, tgt, bench_disp(&w, tgt, 0), n, MPI_INT, w.win); break;
            case 1: MPI_Get(dst, n, MPI_INT, tgt, bench_disp(&w, tgt, 0), n, MPI_INT, w.win); break;
            case 2: MPI_Accumulate(src, n, MPI_INT, tgt, bench_disp(&w, tgt, 0), n, MPI_INT,
                                   MPI_SUM, w.win); break;
            }
            if (flush) MPI_Win_flush(tgt, w.win);
            else MPI_Win_unlock(tgt, w.win);
            busy += bench_now() - t;
            if (1 == op) {
                size_t bad = 0;
                for (int j = 0; j < n; j++) bad += dst[j] != m[j];
                if (bad) bench_die("contig iteration %d: get of %d ints from %d: %zu differ "
                                   "from the model", i, n, tgt, bad);
            }
        }
        if (flush) MPI_Win_unlock_all(w.win);
    }
    MPI_Barrier(MPI_COMM_WORLD);
    /* the final contents as well */
    lock_epoch_local(&w, 1);
    memcpy(dst, w.base, max);
    lock_epoch_local(&w, 0);
    {
        int *m = rank == 0 ? NULL : calloc(maxn, sizeof(int));
        if (rank == 0) {
            for (int r = 1; r < nprocs; r++) MPI_Send(model[r], maxn, MPI_INT, r, 0, MPI_COMM_WORLD);
            m = model[0];
        } else {
            MPI_Recv(m, maxn, MPI_INT, 0, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        }
        size_t bad = 0;
        for (int j = 0; j < maxn; j++) bad += dst[j] != m[j];
        if (bad) bench_die("contig: window differs from the model in %zu ints", bad);
        if (rank != 0) free(m);
    }
    bench_win_free(&w);
    row("contig", rank == 0 ? busy : 0, bench_now() - t0);
    for (int r = 0; r < nprocs; r++) free(model[r]);
    free(model);
    free(src);
    free(dst);
}

/* ---- accflush ------------------------------------------------------------------------- */

#define ACC_OPS 10
#define ACC_MIN (256 * 1024)

static void run_accflush(const bench_opts_t *o)
{
    size_t max = o->max_size, maxn = max / sizeof(int);
    int *src = bench_alloc(max);
    int *expect = calloc(maxn, sizeof(int));
    double t0 = bench_now(), busy = 0, t;

    if (max < ACC_MIN) bench_bad_arg("accflush: -M must be at least %d", ACC_MIN);
    for (size_t j = 0; j < maxn; j++) src[j] = 1 + (int) (j % 3) * rank;
    /* expected per loop: every origin r adds 1 + (j%3)*r, ACC_OPS times per size */
    for (size_t s = ACC_MIN; s <= max; s *= 2) {
        for (size_t j = 0; j < s / sizeof(int); j++) {
            for (int r = 1; r < nprocs; r++) expect[j] += ACC_OPS * (1 + (int) (j % 3) * r);
        }
    }
    for (int loop = 0; loop < o->iters_large; loop++) {
        bench_win_t w;
        bench_win_create_or_na(&w, max, o->flavor, MPI_COMM_WORLD);
        t = bench_now();
        MPI_Win_lock_all(0, w.win);
        if (rank != 0) {
            for (size_t s = ACC_MIN; s <= max; s *= 2) {
                for (int i = 0; i < ACC_OPS; i++) {
                    MPI_Accumulate(src, (int) (s / sizeof(int)), MPI_INT, 0, bench_disp(&w, 0, 0),
                                   (int) (s / sizeof(int)), MPI_INT, MPI_SUM, w.win);
                    MPI_Win_flush_local(0, w.win);
                }
                MPI_Win_flush(0, w.win);
            }
        }
        MPI_Win_unlock_all(w.win);
        busy += bench_now() - t;
        MPI_Barrier(MPI_COMM_WORLD);
        if (rank == 0) {
            const int *win = (const int *) w.base;
            size_t bad = 0, first = 0;
            lock_epoch_local(&w, 1);
            for (size_t j = 0; j < maxn; j++) {
                if (win[j] != expect[j] && !bad++) first = j;
            }
            lock_epoch_local(&w, 0);
            if (bad) bench_die("accflush loop %d: %zu ints wrong, first %zu: %d, expected %d",
                               loop, bad, first, win[first], expect[first]);
        }
        bench_win_free(&w);
    }
    row("accflush", busy, bench_now() - t0);
    free(src);
    free(expect);
}

/* ---- main -------------------------------------------------------------------------------- */

int main(int argc, char **argv)
{
    bench_opts_t o;
    char ops[sizeof(o.op)], *tok, *save = NULL;
    size_t n_ddt = 262144, n_fence = 16000000;

    /* -c shm|tcp (before MPI_Init, as acc_osu and am_kernels do): tcp sets
     * UCX_TLS=tcp,self and OMPI_MCA_btl=self,tcp */
    for (int i = 1; i + 1 < argc; i++) {
        if (strcmp(argv[i], "-c")) continue;
        if (!strcmp(argv[i + 1], "tcp")) {
            setenv("UCX_TLS", "tcp,self", 1);
            setenv("OMPI_MCA_btl", "self,tcp", 1);
        } else if (strcmp(argv[i + 1], "shm")) {
            fprintf(stderr, "big_xfer: -c shm|tcp\n");
            return 2;
        }
        memmove(&argv[i], &argv[i + 2], (argc - i - 1) * sizeof(char *));  /* (with the NULL) */
        argc -= 2;
        break;
    }
    bench_init(&argc, &argv, MPI_THREAD_SINGLE);
    bench_opts_defaults(&o, "big_xfer");
    strcpy(o.op, "ddt,fence,contig,accflush");
    o.flavor = FLAVOR_CREATE;
    o.sync = SYNC_LOCK;
    o.max_size = 2 * 1024 * 1024;
    o.iters = 10000;
    o.iters_large = 500;
    o.nwins = 262144;
    o.window = 16000000;
    bench_parse_args(argc, argv, &o, "owsnWiIMv",
                     "workloads (-o, comma separated): ddt fence contig accflush\n"
                     "-n: ddt elements (262144); -W: fence ints (16000000); -i: contig "
                     "iterations (10000); -I: accflush loops (500);\n-M: largest contig size "
                     "and accflush window (2M); -s lock|flush: contig epochs\n"
                     "-c shm|tcp: tcp sets UCX_TLS=tcp,self and OMPI_MCA_btl=self,tcp before "
                     "MPI_Init\n"
                     "prints: workload, seconds in the timed epochs (slowest rank), total seconds");
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &nprocs);
    bench_require_np(2, 0);
    if (o.flavor != FLAVOR_CREATE && o.flavor != FLAVOR_ALLOCATE && o.flavor != FLAVOR_DYNAMIC) {
        bench_exit_na("big_xfer: flavor %s not supported", bench_flavor_names[o.flavor]);
    }
    if (o.sync != SYNC_LOCK && o.sync != SYNC_FLUSH) bench_bad_arg("-s: lock or flush");
    n_ddt = (size_t) o.nwins;
    n_fence = (size_t) o.window;
    bench_print_header(&o, "big_xfer", "workload seconds total_s");

    snprintf(ops, sizeof(ops), "%s", o.op);
    for (tok = strtok_r(ops, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
        if (!strcmp(tok, "ddt")) {
            layout_t l;
            layout_indexed(&l, n_ddt);
            run_ddt(&o, &l);
            layout_free(&l);
            layout_struct(&l, n_ddt);
            run_ddt(&o, &l);
            layout_free(&l);
        } else if (!strcmp(tok, "fence")) {
            run_fence(&o, n_fence);
        } else if (!strcmp(tok, "contig")) {
            run_contig(&o);
        } else if (!strcmp(tok, "accflush")) {
            run_accflush(&o);
        } else {
            bench_bad_arg("unknown workload '%s'", tok);
        }
    }
    MPI_Finalize();
    return 0;
}
