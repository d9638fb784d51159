/* MPI_Put / MPI_Get with derived datatypes, verified element by element.
 *
 * Every case pairs an origin datatype with a target datatype of the same
 * signature (n ints).  Each datatype is built twice: as an MPI datatype and,
 * independently, as the explicit list of int offsets its type map visits in
 * order; the expected data are computed from those lists only.  Cases:
 *   vector on origin / on target / on both, a vector with 4000 one-int blocks,
 *   indexed with decreasing displacements (type-map order != address order),
 *   hindexed starting at byte 20 (true_lb != 0) resized to a larger extent
 *   and used with count > 1, a resized type with negative lb,
 *   MPI_BOTTOM as origin address with an hindexed type of absolute addresses.
 * Put: the target checks that exactly the addressed ints changed.  Get: the
 * origin checks that exactly the addressed ints of its buffer changed.
 * Epochs rotate between lock, lock_all + flush and fence.
 * A second window has size 0 on every odd rank; nothing targets those ranks,
 * and vector puts/gets between the even ranks are checked. */
#include "testutil.h"
#include <stdint.h>

#define WIN_INTS 65536
#define SENT (-1)

typedef struct {
    MPI_Datatype type;   /* committed, or MPI_INT */
    int count;
    int n;               /* ints in count elements of type */
    int *off;            /* int offsets (from the buffer start) in type-map order */
} tmap_t;

static void tm_contig(tmap_t *t, int n)
{
    t->type = MPI_INT; t->count = n; t->n = n;
    t->off = malloc((n ? n : 1) * sizeof(int));
    for (int i = 0; i < n; i++) t->off[i] = i;
}

static void tm_vector(tmap_t *t, int count, int bl, int stride)
{
    MPI_Type_vector(count, bl, stride, MPI_INT, &t->type);
    MPI_Type_commit(&t->type);
    t->count = 1; t->n = count * bl;
    t->off = malloc(t->n * sizeof(int));
    for (int b = 0, k = 0; b < count; b++)
        for (int j = 0; j < bl; j++) t->off[k++] = b * stride + j;
}

/* Blocks at decreasing displacements: type-map order differs from address order. */
static void tm_indexed_reverse(tmap_t *t)
{
    int bl[4] = { 3, 1, 4, 2 }, disp[4] = { 60, 41, 20, 3 };
    MPI_Type_indexed(4, bl, disp, MPI_INT, &t->type);
    MPI_Type_commit(&t->type);
    t->count = 1; t->n = 10;
    t->off = malloc(t->n * sizeof(int));
    for (int b = 0, k = 0; b < 4; b++)
        for (int j = 0; j < bl[b]; j++) t->off[k++] = disp[b] + j;
}

/* hindexed {2 ints @ 20 B, 3 @ 40 B, 1 @ 100 B}: true_lb = 20; resized to
 * lb 0 / extent 112 B and used with count `count`. */
static void tm_hindexed_resized(tmap_t *t, int count)
{
    int bl[3] = { 2, 3, 1 };
    MPI_Aint disp[3] = { 20, 40, 100 }, lb, extent, tlb, textent;
    MPI_Datatype h;
    MPI_Type_create_hindexed(3, bl, disp, MPI_INT, &h);
    MPI_Type_create_resized(h, 0, 112, &t->type);
    MPI_Type_free(&h);
    MPI_Type_commit(&t->type);
    MPI_Type_get_extent(t->type, &lb, &extent);
    MPI_Type_get_true_extent(t->type, &tlb, &textent);
    TU_CHECK(0 == lb && 112 == extent && 20 == tlb && 84 == textent,
             "hindexed/resized: lb %ld extent %ld true_lb %ld true_extent %ld",
             (long) lb, (long) extent, (long) tlb, (long) textent);
    t->count = count; t->n = 6 * count;
    t->off = malloc(t->n * sizeof(int));
    for (int c = 0, k = 0; c < count; c++)
        for (int b = 0; b < 3; b++)
            for (int j = 0; j < bl[b]; j++) t->off[k++] = (c * 112 + (int) disp[b]) / 4 + j;
}

/* A contiguous pair of ints resized to lb -8 B and extent 20 B (negative lb),
 * count 7; used at a displacement of 4 ints so every byte stays inside the buffer. */
static void tm_resized_neglb(tmap_t *t)
{
    MPI_Datatype c;
    MPI_Type_contiguous(2, MPI_INT, &c);
    MPI_Type_create_resized(c, -8, 20, &t->type);
    MPI_Type_free(&c);
    MPI_Type_commit(&t->type);
    t->count = 7; t->n = 14;
    t->off = malloc(t->n * sizeof(int));
    for (int i = 0, k = 0; i < 7; i++)
        for (int j = 0; j < 2; j++) t->off[k++] = i * 5 + j;   /* relative to the buffer address */
}

static void tm_free(tmap_t *t)
{
    if (MPI_INT != t->type) MPI_Type_free(&t->type);
    free(t->off);
}

static inline int val(int seed, int i) { return (int) ((seed * 1000003u + i * 2654435761u) >> 1); }

static int maxoff(const tmap_t *t, int base)
{
    int m = base;
    for (int i = 0; i < t->n; i++) if (base + t->off[i] > m) m = base + t->off[i];
    return m + 1;
}

enum { M_LOCK, M_LOCK_ALL_FLUSH, M_FENCE, M_N };
static const char *mode_names[] = { "lock", "lock_all+flush", "fence" };

/* One put and one get of case (o, t) on w.  `obase`: offset in ints of the
 * origin buffer address inside its allocation; `tdisp`: target displacement (ints). */
static void run_case(tu_win_t *w, const char *name, int mode, int seed,
                     const tmap_t *o, int obase, const tmap_t *t, int tdisp)
{
    int rank, nprocs;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &nprocs);
    int target = (rank + 1) % nprocs, source = (rank + nprocs - 1) % nprocs;
    int olen = maxoff(o, obase), *obuf = malloc(olen * sizeof(int));
    int *win = w->base;
    int *mark = calloc(WIN_INTS, sizeof(int));
    int *omark = calloc(olen, sizeof(int));

    TU_CHECK(o->n == t->n, "%s: signature mismatch in the test itself", name);
    TU_CHECK(maxoff(t, tdisp) <= WIN_INTS, "%s: case does not fit the window", name);

    for (int i = 0; i < t->n; i++) mark[tdisp + t->off[i]] = i + 1;
    for (int i = 0; i < o->n; i++) omark[obase + o->off[i]] = i + 1;

    /* ---- put ---- */
    TU_MPI(MPI_Win_lock(MPI_LOCK_EXCLUSIVE, rank, 0, w->win));
    for (int i = 0; i < WIN_INTS; i++) win[i] = SENT;
    TU_MPI(MPI_Win_unlock(rank, w->win));
    for (int i = 0; i < olen; i++) obuf[i] = val(seed + rank, i);
    MPI_Barrier(MPI_COMM_WORLD);

    switch (mode) {
    case M_LOCK:
        TU_MPI(MPI_Win_lock(MPI_LOCK_SHARED, target, 0, w->win));
        TU_MPI(MPI_Put(obuf + obase, o->count, o->type, target, tu_disp(w, target, tdisp),
                       t->count, t->type, w->win));
        TU_MPI(MPI_Win_unlock(target, w->win));
        break;
    case M_LOCK_ALL_FLUSH:
        TU_MPI(MPI_Win_lock_all(0, w->win));
        TU_MPI(MPI_Put(obuf + obase, o->count, o->type, target, tu_disp(w, target, tdisp),
                       t->count, t->type, w->win));
        TU_MPI(MPI_Win_flush(target, w->win));
        TU_MPI(MPI_Win_unlock_all(w->win));
        break;
    case M_FENCE:
        TU_MPI(MPI_Win_fence(0, w->win));
        TU_MPI(MPI_Put(obuf + obase, o->count, o->type, target, tu_disp(w, target, tdisp),
                       t->count, t->type, w->win));
        TU_MPI(MPI_Win_fence(0, w->win));
        break;
    }
    MPI_Barrier(MPI_COMM_WORLD);

    TU_MPI(MPI_Win_lock(MPI_LOCK_EXCLUSIVE, rank, 0, w->win));
    int bad = 0;
    for (int i = 0; i < WIN_INTS; i++) {
        int k = mark[i];
        int exp = k ? val(seed + source, obase + o->off[k - 1]) : SENT;
        if (win[i] != exp && bad++ < 3)
            TU_CHECK(win[i] == exp, "%s put (%s, %s) from %d: window int %d = %d, expected %d",
                     name, tu_flavor_names[w->flavor], mode_names[mode], source, i, win[i], exp);
    }
    TU_CHECK(bad == 0, "%s put: %d bad ints", name, bad);

    /* ---- get ---- */
    for (int i = 0; i < WIN_INTS; i++) win[i] = val(seed + 77 + rank, i);
    TU_MPI(MPI_Win_unlock(rank, w->win));
    for (int i = 0; i < olen; i++) obuf[i] = SENT;
    MPI_Barrier(MPI_COMM_WORLD);

    switch (mode) {
    case M_LOCK:
        TU_MPI(MPI_Win_lock(MPI_LOCK_SHARED, target, 0, w->win));
        TU_MPI(MPI_Get(obuf + obase, o->count, o->type, target, tu_disp(w, target, tdisp),
                       t->count, t->type, w->win));
        TU_MPI(MPI_Win_unlock(target, w->win));
        break;
    case M_LOCK_ALL_FLUSH:
        TU_MPI(MPI_Win_lock_all(0, w->win));
        TU_MPI(MPI_Get(obuf + obase, o->count, o->type, target, tu_disp(w, target, tdisp),
                       t->count, t->type, w->win));
        TU_MPI(MPI_Win_flush(target, w->win));
        bad = 0;   /* check before unlock_all: flush completes the get at the origin */
        for (int i = 0; i < olen; i++) {
            int k = omark[i];
            int exp = k ? val(seed + 77 + target, tdisp + t->off[k - 1]) : SENT;
            if (obuf[i] != exp) bad++;
        }
        TU_CHECK(bad == 0, "%s get (%s, %s): %d bad ints after flush", name,
                 tu_flavor_names[w->flavor], mode_names[mode], bad);
        TU_MPI(MPI_Win_unlock_all(w->win));
        break;
    case M_FENCE:
        TU_MPI(MPI_Win_fence(0, w->win));
        TU_MPI(MPI_Get(obuf + obase, o->count, o->type, target, tu_disp(w, target, tdisp),
                       t->count, t->type, w->win));
        TU_MPI(MPI_Win_fence(0, w->win));
        break;
    }
    bad = 0;
    for (int i = 0; i < olen; i++) {
        int k = omark[i];
        int exp = k ? val(seed + 77 + target, tdisp + t->off[k - 1]) : SENT;
        if (obuf[i] != exp && bad++ < 3)
            TU_CHECK(obuf[i] == exp, "%s get (%s, %s) from %d: origin int %d = %d, expected %d",
                     name, tu_flavor_names[w->flavor], mode_names[mode], target, i, obuf[i], exp);
    }
    TU_CHECK(bad == 0, "%s get: %d bad ints", name, bad);
    MPI_Barrier(MPI_COMM_WORLD);
    free(obuf); free(mark); free(omark);
}

/* MPI_BOTTOM origin: two separate buffers described by absolute addresses. */
static void run_bottom(tu_win_t *w, int seed)
{
    int rank, nprocs;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &nprocs);
    int target = (rank + 1) % nprocs, source = (rank + nprocs - 1) % nprocs;
    int *a = malloc(16 * sizeof(int)), *b = malloc(40 * sizeof(int));
    int *win = w->base;
    /* type map: a[4..8], b[0..9], a[12..14] -> 18 ints, contiguous at target disp 100 */
    int *bufs[3] = { a + 4, b, a + 12 }, bl[3] = { 5, 10, 3 };
    MPI_Aint addr[3];
    MPI_Datatype ht;
    for (int i = 0; i < 3; i++) MPI_Get_address(bufs[i], &addr[i]);
    MPI_Type_create_hindexed(3, bl, addr, MPI_INT, &ht);
    MPI_Type_commit(&ht);
    int exp_seq[18], k;

    /* put */
    TU_MPI(MPI_Win_lock(MPI_LOCK_EXCLUSIVE, rank, 0, w->win));
    for (int i = 0; i < WIN_INTS; i++) win[i] = SENT;
    TU_MPI(MPI_Win_unlock(rank, w->win));
    for (int i = 0; i < 16; i++) a[i] = val(seed + rank, i);
    for (int i = 0; i < 40; i++) b[i] = val(seed + rank, 100 + i);
    MPI_Barrier(MPI_COMM_WORLD);
    TU_MPI(MPI_Win_lock(MPI_LOCK_EXCLUSIVE, target, 0, w->win));
    TU_MPI(MPI_Put(MPI_BOTTOM, 1, ht, target, tu_disp(w, target, 100), 18, MPI_INT, w->win));
    TU_MPI(MPI_Win_unlock(target, w->win));
    MPI_Barrier(MPI_COMM_WORLD);

    k = 0;
    for (int i = 4; i < 9; i++) exp_seq[k++] = val(seed + source, i);
    for (int i = 0; i < 10; i++) exp_seq[k++] = val(seed + source, 100 + i);
    for (int i = 12; i < 15; i++) exp_seq[k++] = val(seed + source, i);
    TU_MPI(MPI_Win_lock(MPI_LOCK_EXCLUSIVE, rank, 0, w->win));
    int bad = 0;
    for (int i = 0; i < WIN_INTS; i++) {
        int exp = (i >= 100 && i < 118) ? exp_seq[i - 100] : SENT;
        if (win[i] != exp && bad++ < 3)
            TU_CHECK(win[i] == exp, "MPI_BOTTOM put (%s): window int %d = %d, expected %d",
                     tu_flavor_names[w->flavor], i, win[i], exp);
    }
    TU_CHECK(0 == bad, "MPI_BOTTOM put: %d bad ints", bad);

    /* get back into MPI_BOTTOM from target ints 200..217 */
    for (int i = 0; i < WIN_INTS; i++) win[i] = val(seed + 55 + rank, i);
    TU_MPI(MPI_Win_unlock(rank, w->win));
    for (int i = 0; i < 16; i++) a[i] = SENT;
    for (int i = 0; i < 40; i++) b[i] = SENT;
    MPI_Barrier(MPI_COMM_WORLD);
    TU_MPI(MPI_Win_lock(MPI_LOCK_SHARED, target, 0, w->win));
    TU_MPI(MPI_Get(MPI_BOTTOM, 1, ht, target, tu_disp(w, target, 200), 18, MPI_INT, w->win));
    TU_MPI(MPI_Win_unlock(target, w->win));
    bad = 0;
    for (int i = 0; i < 16; i++) {
        int exp = (i >= 4 && i < 9) ? val(seed + 55 + target, 200 + i - 4)
                : (i >= 12 && i < 15) ? val(seed + 55 + target, 215 + i - 12) : SENT;
        if (a[i] != exp) bad++;
    }
    for (int i = 0; i < 40; i++) {
        int exp = i < 10 ? val(seed + 55 + target, 205 + i) : SENT;
        if (b[i] != exp) bad++;
    }
    TU_CHECK(0 == bad, "MPI_BOTTOM get (%s): %d bad ints", tu_flavor_names[w->flavor], bad);
    MPI_Barrier(MPI_COMM_WORLD);
    MPI_Type_free(&ht);
    free(a); free(b);
}

/* Window of size 0 on odd ranks: even ranks exchange vectors, odd ranks only
 * take part in the synchronisation.  Rank r (any parity) targets the even
 * rank t(r) = ((r + 1) % n) & ~1 at region r. */
static void run_zero_size(int flavor, int seed)
{
    int rank, nprocs;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &nprocs);
    const int REG = 64, VC = 8, VB = 2, VS = 5;   /* vector(8, 2, 5): 16 ints in 38 */
    int target = ((rank + 1) % nprocs) & ~1;
    int mysize = (rank % 2) ? 0 : REG * nprocs;
    tu_win_t w;
    MPI_Datatype vec;
    int obuf[64], *win;

    tu_win_create(flavor, mysize * sizeof(int), sizeof(int), MPI_INFO_NULL, MPI_COMM_WORLD, &w);
    win = w.base;
    MPI_Type_vector(VC, VB, VS, MPI_INT, &vec);
    MPI_Type_commit(&vec);

    if (mysize) {
        TU_MPI(MPI_Win_lock(MPI_LOCK_EXCLUSIVE, rank, 0, w.win));
        for (int i = 0; i < mysize; i++) win[i] = SENT;
        TU_MPI(MPI_Win_unlock(rank, w.win));
    }
    for (int i = 0; i < 64; i++) obuf[i] = val(seed + rank, i);
    MPI_Barrier(MPI_COMM_WORLD);

    /* put: contiguous 16 ints -> vector at target region `rank` */
    TU_MPI(MPI_Win_fence(0, w.win));
    TU_MPI(MPI_Put(obuf, VC * VB, MPI_INT, target, tu_disp(&w, target, rank * REG), 1, vec, w.win));
    TU_MPI(MPI_Win_fence(0, w.win));

    if (mysize) {
        int bad = 0;
        for (int r = 0; r < nprocs; r++) {
            int from = (((r + 1) % nprocs) & ~1) == rank;
            for (int i = 0; i < REG; i++) {
                int exp = SENT;
                if (from && i < VC * VS && i % VS < VB) exp = val(seed + r, (i / VS) * VB + i % VS);
                if (win[r * REG + i] != exp) bad++;
            }
        }
        TU_CHECK(0 == bad, "zero-size window (%s) put: %d bad ints on rank %d",
                 tu_flavor_names[flavor], bad, rank);
    }

    /* get: vector at target region `rank` -> contiguous */
    for (int i = 0; i < 64; i++) obuf[i] = SENT;
    TU_MPI(MPI_Win_lock_all(0, w.win));
    TU_MPI(MPI_Get(obuf, VC * VB, MPI_INT, target, tu_disp(&w, target, rank * REG), 1, vec, w.win));
    TU_MPI(MPI_Win_unlock_all(w.win));
    int bad = 0;
    for (int i = 0; i < 64; i++) {
        int exp = i < VC * VB ? val(seed + rank, i) : SENT;
        if (obuf[i] != exp) bad++;
    }
    TU_CHECK(0 == bad, "zero-size window (%s) get: %d bad ints on rank %d",
             tu_flavor_names[flavor], bad, rank);
    MPI_Barrier(MPI_COMM_WORLD);
    MPI_Type_free(&vec);
    tu_win_free(&w);
}

int main(int argc, char **argv)
{
    int seed = 1;
    MPI_Init(&argc, &argv);

    tmap_t contig192, contig4000, contig10, contig192b, vec_o, vec_t, vec_a, vec_b,
           many, revidx, hres, hres2, neglb, contig14;
    tm_contig(&contig192, 192);
    tm_contig(&contig192b, 192);
    tm_contig(&contig4000, 4000);
    tm_contig(&contig10, 10);
    tm_contig(&contig14, 14);
    tm_vector(&vec_o, 64, 3, 7);       /* 192 ints */
    tm_vector(&vec_t, 48, 4, 9);       /* 192 ints */
    tm_vector(&vec_a, 32, 6, 11);      /* 192 ints */
    tm_vector(&many, 4000, 1, 3);      /* 4000 one-int blocks */
    tm_indexed_reverse(&revidx);       /* 10 ints */
    tm_hindexed_resized(&hres, 5);     /* 30 ints */
    tm_hindexed_resized(&hres2, 5);
    tm_resized_neglb(&neglb);          /* 14 ints */
    tm_vector(&vec_b, 10, 3, 4);       /* 30 ints */

    struct { const char *name; tmap_t *o; int obase; tmap_t *t; int tdisp; } cases[] = {
        { "vector origin", &vec_o, 0, &contig192, 5 },
        { "vector target", &contig192, 0, &vec_t, 3 },
        { "vector both", &vec_o, 1, &vec_a, 7 },
        { "many blocks target", &contig4000, 0, &many, 1 },
        { "many blocks origin", &many, 0, &contig4000, 0 },
        { "indexed reverse order", &revidx, 2, &contig10, 9 },
        { "indexed reverse both", &revidx, 0, &revidx, 0 },
        { "hindexed true_lb!=0 target", &vec_b, 0, &hres, 11 },
        { "hindexed true_lb!=0 origin", &hres, 0, &contig192b, 0 },
        { "hindexed true_lb!=0 both", &hres, 3, &hres2, 1 },
        { "resized negative lb", &neglb, 4, &contig14, 2 },
        { "resized negative lb target", &contig14, 0, &neglb, 4 },
    };
    /* contig192b is used with a 30-int signature: make it match */
    contig192b.count = contig192b.n = 30;
    const int ncases = (int) (sizeof(cases) / sizeof(cases[0]));

    for (int flavor = 0; flavor < TU_NFLAVORS; flavor++) {
        if (!tu_flavor_enabled(flavor)) continue;
        tu_win_t w;
        tu_win_create(flavor, WIN_INTS * sizeof(int), sizeof(int), MPI_INFO_NULL,
                      MPI_COMM_WORLD, &w);
        for (int c = 0; c < ncases; c++)
            for (int mode = 0; mode < M_N; mode++)
                run_case(&w, cases[c].name, mode, seed++, cases[c].o, cases[c].obase,
                         cases[c].t, cases[c].tdisp);
        run_bottom(&w, seed++);
        tu_win_free(&w);
        run_zero_size(flavor, seed++);
    }

    tmap_t *all[] = { &contig192, &contig192b, &contig4000, &contig10, &contig14, &vec_o,
                      &vec_t, &vec_a, &many, &revidx, &hres, &hres2, &neglb, &vec_b };
    for (int i = 0; i < (int) (sizeof(all) / sizeof(all[0])); i++) tm_free(all[i]);

    int rc = tu_finish("putget_ddt");
    MPI_Finalize();
    return rc;
}
