/* Large transfers (issue 17 item 5) at test sizes, every value checked, on
 * every window flavor: the workloads of bench/big_xfer.c (which runs them at
 * full size and times them).
 *   ddt:      in one lock_all epoch every rank puts a derived-datatype buffer
 *             to every other rank (its own slot there), then gets one back
 *             from each in another; the same type on both sides:
 *               indexed: -n ints in blocks of 1-3 ints with 1-2 int gaps;
 *               struct:  -n elements {4 MPI_INT at 0, 8 MPI_DOUBLE at 24},
 *                        extent 96 (gaps inside and after).
 *             Every other target takes MPI_Rput / MPI_Rget, checked when the
 *             request completes.  Targets check their slots (bytes outside
 *             the type map keep the sentinel), origins their get buffers.
 *   fence:    each rank puts -N ints to the next rank in one fence epoch,
 *             then gets them back in another; also an origin vector (every
 *             other int) into a contiguous target and back.
 *   contig:   rank 0 runs -i iterations of put / get / accumulate (MPI_INT,
 *             SUM) of sizes 8 B .. 256 KiB in turn, on every rank in turn,
 *             each in an exclusive lock epoch, then -i more with flushes in
 *             one lock_all epoch; every get is compared with a model of the
 *             target's window, and the windows at the end.
 *   accflush: -l loops of: window creation, lock_all, every rank but 0
 *             accumulates (MPI_INT, SUM) 64 KiB, 128 KiB and 256 KiB into
 *             rank 0 three times each, each completed by
 *             MPI_Win_flush_local, then MPI_Win_flush; unlock_all; rank 0
 *             checks the sums.
 * -w WORKLOADS (comma list) runs only some. */
#include "testutil.h"
#include <stdint.h>

#include "big_xfer_layout.h"

static int rank, nprocs;

static void run_ddt(int flavor, const layout_t *l)
{
    size_t span = l->span, first;
    char *obuf = malloc(span), *gbuf = malloc(span * nprocs);
    const char *fn = tu_flavor_names[flavor];
    tu_win_t w;

    tu_win_create(flavor, span * nprocs, 1, MPI_INFO_NULL, MPI_COMM_WORLD, &w);
    if (MPI_WIN_NULL == w.win) { free(obuf); free(gbuf); return; }
    char *base = w.base;

    TU_MPI(MPI_Win_lock(MPI_LOCK_EXCLUSIVE, rank, 0, w.win));
    memset(base, SENT, span * nprocs);
    TU_MPI(MPI_Win_unlock(rank, w.win));
    memset(obuf, SENT, span);
    layout_fill(l, obuf, 1000 + rank);
    MPI_Barrier(MPI_COMM_WORLD);
    TU_MPI(MPI_Win_lock_all(0, w.win));
    for (int i = 1; i < nprocs; i++) {
        int t = (rank + i) % nprocs;
        if (i % 2) {
            TU_MPI(MPI_Put(obuf, l->count, l->type, t, tu_disp(&w, t, (MPI_Aint) (rank * span)),
                           l->count, l->type, w.win));
        } else {   /* request-based: complete by the request, then flush */
            MPI_Request req;
            TU_MPI(MPI_Rput(obuf, l->count, l->type, t, tu_disp(&w, t, (MPI_Aint) (rank * span)),
                            l->count, l->type, w.win, &req));
            TU_MPI(MPI_Wait(&req, MPI_STATUS_IGNORE));
            TU_MPI(MPI_Win_flush(t, w.win));
        }
    }
    TU_MPI(MPI_Win_unlock_all(w.win));
    MPI_Barrier(MPI_COMM_WORLD);
    TU_MPI(MPI_Win_lock(MPI_LOCK_EXCLUSIVE, rank, 0, w.win));
    for (int s = 0; s < nprocs; s++) {
        size_t bad = s == rank ? 0 : layout_check(l, base + s * span, 1000 + s, &first);
        TU_CHECK(0 == bad, "ddt %s put (%s) from %d: %zu bad, first at byte %zu", l->name, fn,
                 s, bad, first);
    }
    /* get: slot r of rank t's window holds t's data for r */
    memset(base, SENT, span * nprocs);
    for (int s = 0; s < nprocs; s++) layout_fill(l, base + s * span, 2000 + 64 * rank + s);
    TU_MPI(MPI_Win_unlock(rank, w.win));
    memset(gbuf, SENT, span * nprocs);
    MPI_Barrier(MPI_COMM_WORLD);
    TU_MPI(MPI_Win_lock_all(0, w.win));
    for (int i = 1; i < nprocs; i++) {
        int t = (rank + i) % nprocs;
        if (i % 2) {
            TU_MPI(MPI_Get(gbuf + t * span, l->count, l->type, t,
                           tu_disp(&w, t, (MPI_Aint) (rank * span)), l->count, l->type, w.win));
        } else {   /* request-based: the data are there when the request completes */
            MPI_Request req;
            TU_MPI(MPI_Rget(gbuf + t * span, l->count, l->type, t,
                            tu_disp(&w, t, (MPI_Aint) (rank * span)), l->count, l->type, w.win,
                            &req));
            TU_MPI(MPI_Wait(&req, MPI_STATUS_IGNORE));
            size_t bad = layout_check(l, gbuf + t * span, 2000 + 64 * t + rank, &first);
            TU_CHECK(0 == bad, "ddt %s rget (%s) from %d: %zu bad, first at byte %zu", l->name,
                     fn, t, bad, first);
        }
    }
    TU_MPI(MPI_Win_unlock_all(w.win));
    for (int s = 0; s < nprocs; s++) {
        size_t bad = s == rank ? 0 : layout_check(l, gbuf + s * span, 2000 + 64 * s + rank, &first);
        TU_CHECK(0 == bad, "ddt %s get (%s) from %d: %zu bad, first at byte %zu", l->name, fn,
                 s, bad, first);
    }
    MPI_Barrier(MPI_COMM_WORLD);
    tu_win_free(&w);
    free(obuf);
    free(gbuf);
}

/* ---- fence ------------------------------------------------------------------- */

static void run_fence(int flavor, size_t n)
{
    int next = (rank + 1) % nprocs, prev = (rank + nprocs - 1) % nprocs;
    int *buf = malloc(2 * n * sizeof(int)), *win;
    const char *fn = tu_flavor_names[flavor];
    MPI_Datatype every2;
    size_t bad = 0;
    tu_win_t w;

    tu_win_create(flavor, n * sizeof(int), sizeof(int), MPI_INFO_NULL, MPI_COMM_WORLD, &w);
    if (MPI_WIN_NULL == w.win) { free(buf); return; }
    win = w.base;
    MPI_Type_vector((int) n, 1, 2, MPI_INT, &every2);
    MPI_Type_commit(&every2);

    /* contiguous put */
    for (size_t i = 0; i < n; i++) buf[i] = (int) mix(3000 + rank, i);
    TU_MPI(MPI_Win_fence(MPI_MODE_NOPRECEDE, w.win));
    TU_MPI(MPI_Put(buf, (int) n, MPI_INT, next, tu_disp(&w, next, 0), (int) n, MPI_INT, w.win));
    TU_MPI(MPI_Win_fence(0, w.win));
    for (size_t i = 0; i < n; i++) bad += win[i] != (int) mix(3000 + prev, i);
    TU_CHECK(0 == bad, "fence put (%s) from %d: %zu bad ints", fn, prev, bad);

    /* contiguous get */
    for (size_t i = 0; i < n; i++) win[i] = (int) mix(4000 + rank, i);
    memset(buf, SENT, n * sizeof(int));
    TU_MPI(MPI_Win_fence(0, w.win));
    TU_MPI(MPI_Get(buf, (int) n, MPI_INT, next, tu_disp(&w, next, 0), (int) n, MPI_INT, w.win));
    TU_MPI(MPI_Win_fence(0, w.win));
    bad = 0;
    for (size_t i = 0; i < n; i++) bad += buf[i] != (int) mix(4000 + next, i);
    TU_CHECK(0 == bad, "fence get (%s) from %d: %zu bad ints", fn, next, bad);

    /* every other int of the origin, contiguous at the target, and back */
    for (size_t i = 0; i < 2 * n; i++) buf[i] = (int) mix(5000 + rank, i);
    TU_MPI(MPI_Put(buf, 1, every2, next, tu_disp(&w, next, 0), (int) n, MPI_INT, w.win));
    TU_MPI(MPI_Win_fence(0, w.win));
    bad = 0;
    for (size_t i = 0; i < n; i++) bad += win[i] != (int) mix(5000 + prev, 2 * i);
    TU_CHECK(0 == bad, "fence vector put (%s) from %d: %zu bad ints", fn, prev, bad);
    for (size_t i = 0; i < n; i++) win[i] = (int) mix(6000 + rank, i);
    memset(buf, SENT, 2 * n * sizeof(int));
    TU_MPI(MPI_Win_fence(0, w.win));
    TU_MPI(MPI_Get(buf, 1, every2, next, tu_disp(&w, next, 0), (int) n, MPI_INT, w.win));
    TU_MPI(MPI_Win_fence(MPI_MODE_NOSUCCEED, w.win));
    bad = 0;
    for (size_t i = 0; i < 2 * n; i++) {
        int exp = i % 2 ? (int) 0xA5A5A5A5 : (int) mix(6000 + next, i / 2);
        bad += buf[i] != exp;
    }
    TU_CHECK(0 == bad, "fence vector get (%s) from %d: %zu bad ints", fn, next, bad);
    MPI_Type_free(&every2);
    tu_win_free(&w);
    free(buf);
}

/* ---- contig ------------------------------------------------------------------ */

#define CONTIG_MAX (256 * 1024)

static void run_contig(int flavor, int iters)
{
    const int maxn = CONTIG_MAX / 4, nsizes = 16;   /* 8 B .. 256 KiB */
    int *src = malloc(CONTIG_MAX), *dst = malloc(CONTIG_MAX);
    int *model = calloc((size_t) maxn * nprocs, sizeof(int));
    const char *fn = tu_flavor_names[flavor];
    tu_win_t w;

    tu_win_create(flavor, CONTIG_MAX, 1, MPI_INFO_NULL, MPI_COMM_WORLD, &w);
    if (MPI_WIN_NULL == w.win) { free(src); free(dst); free(model); return; }
    if (0 == rank) {
        for (int pass = 0; pass < 2; pass++) {
            int flush = 1 == pass;
            if (flush) TU_MPI(MPI_Win_lock_all(0, w.win));
            for (int i = 0; i < iters; i++) {
                int n = (8 << (i % nsizes)) / 4, op = (i / nsizes) % 3;
                int t = (i / (3 * nsizes) + pass) % nprocs;
                int *m = model + (size_t) t * maxn, bad = 0;
                if (0 == op) {
                    for (int j = 0; j < n; j++) m[j] = src[j] = (int) mix(i + 7 * pass, j);
                } else if (2 == op) {
                    for (int j = 0; j < n; j++) { src[j] = (i + j) % 7 - 3; m[j] += src[j]; }
                }
                if (!flush) TU_MPI(MPI_Win_lock(MPI_LOCK_EXCLUSIVE, t, 0, w.win));
                if (0 == op) {
                    TU_MPI(MPI_Put(src, n, MPI_INT, t, tu_disp(&w, t, 0), n, MPI_INT, w.win));
                } else if (1 == op) {
                    TU_MPI(MPI_Get(dst, n, MPI_INT, t, tu_disp(&w, t, 0), n, MPI_INT, w.win));
                } else {
                    TU_MPI(MPI_Accumulate(src, n, MPI_INT, t, tu_disp(&w, t, 0), n, MPI_INT,
                                          MPI_SUM, w.win));
                }
                if (flush) TU_MPI(MPI_Win_flush(t, w.win));
                else TU_MPI(MPI_Win_unlock(t, w.win));
                if (1 == op) {
                    for (int j = 0; j < n; j++) bad += dst[j] != m[j];
                    TU_CHECK(0 == bad, "contig (%s, %s) iteration %d: get of %d ints from %d: "
                             "%d differ", fn, flush ? "flush" : "lock", i, n, t, bad);
                }
            }
            if (flush) TU_MPI(MPI_Win_unlock_all(w.win));
        }
    }
    MPI_Bcast(model, maxn * nprocs, MPI_INT, 0, MPI_COMM_WORLD);
    TU_MPI(MPI_Win_lock(MPI_LOCK_EXCLUSIVE, rank, 0, w.win));
    {
        const int *win = w.base, *m = model + (size_t) rank * maxn;
        int bad = 0;
        for (int j = 0; j < maxn; j++) bad += win[j] != m[j];
        TU_CHECK(0 == bad, "contig (%s): window of rank %d differs from the model in %d ints",
                 fn, rank, bad);
    }
    TU_MPI(MPI_Win_unlock(rank, w.win));
    MPI_Barrier(MPI_COMM_WORLD);
    tu_win_free(&w);
    free(src);
    free(dst);
    free(model);
}

/* ---- accflush ------------------------------------------------------------------ */

#define ACC_MIN (64 * 1024)
#define ACC_MAX (256 * 1024)
#define ACC_OPS 3

static void run_accflush(int flavor, int loops)
{
    const int maxn = ACC_MAX / 4;
    int *src = malloc(ACC_MAX), *expect = calloc(maxn, sizeof(int));
    const char *fn = tu_flavor_names[flavor];

    for (int j = 0; j < maxn; j++) src[j] = 1 + (j % 3) * rank;
    for (int s = ACC_MIN; s <= ACC_MAX; s *= 2)
        for (int j = 0; j < s / 4; j++)
            for (int r = 1; r < nprocs; r++) expect[j] += ACC_OPS * (1 + (j % 3) * r);
    for (int loop = 0; loop < loops; loop++) {
        tu_win_t w;
        tu_win_create(flavor, ACC_MAX, 1, MPI_INFO_NULL, MPI_COMM_WORLD, &w);
        if (MPI_WIN_NULL == w.win) break;
        TU_MPI(MPI_Win_lock_all(0, w.win));
        if (0 != rank) {
            for (int s = ACC_MIN; s <= ACC_MAX; s *= 2) {
                for (int i = 0; i < ACC_OPS; i++) {
                    TU_MPI(MPI_Accumulate(src, s / 4, MPI_INT, 0, tu_disp(&w, 0, 0), s / 4,
                                          MPI_INT, MPI_SUM, w.win));
                    TU_MPI(MPI_Win_flush_local(0, w.win));
                }
                TU_MPI(MPI_Win_flush(0, w.win));
            }
        }
        TU_MPI(MPI_Win_unlock_all(w.win));
        MPI_Barrier(MPI_COMM_WORLD);
        if (0 == rank) {
            const int *win = w.base;
            int bad = 0, first = 0;
            TU_MPI(MPI_Win_lock(MPI_LOCK_EXCLUSIVE, 0, 0, w.win));
            for (int j = 0; j < maxn; j++) if (win[j] != expect[j] && !bad++) first = j;
            TU_MPI(MPI_Win_unlock(0, w.win));
            TU_CHECK(0 == bad, "accflush (%s) loop %d: %d ints wrong, first %d: %d, expected %d",
                     fn, loop, bad, first, win[first], expect[first]);
        }
        MPI_Barrier(MPI_COMM_WORLD);
        tu_win_free(&w);
    }
    free(src);
    free(expect);
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &nprocs);
    size_t n_ddt = (size_t) tu_opt_long(argc, argv, "-n", 8192);
    size_t n_fence = (size_t) tu_opt_long(argc, argv, "-N", 1 << 20);
    int iters = (int) tu_opt_long(argc, argv, "-i", 288);
    int loops = (int) tu_opt_long(argc, argv, "-l", 3);
    const char *only = NULL;
    for (int i = 1; i + 1 < argc; i++) if (!strcmp(argv[i], "-w")) only = argv[i + 1];

    for (int flavor = 0; flavor < TU_NFLAVORS_ALL; flavor++) {
        if (!tu_flavor_enabled(flavor)) continue;
        if (tu_in_list(only, "ddt")) {
            layout_t l;
            layout_indexed(&l, n_ddt);
            run_ddt(flavor, &l);
            layout_free(&l);
            layout_struct(&l, n_ddt);
            run_ddt(flavor, &l);
            layout_free(&l);
        }
        if (tu_in_list(only, "fence")) run_fence(flavor, n_fence);
        if (tu_in_list(only, "contig")) run_contig(flavor, iters);
        if (tu_in_list(only, "accflush")) run_accflush(flavor, loops);
    }
    int rc = tu_finish("big_xfer");
    MPI_Finalize();
    return rc;
}
