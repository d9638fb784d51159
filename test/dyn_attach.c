/* Many attachments on one dynamic window.
 * Every rank attaches NREG (default 1000, "-n N") regions of 2..64 int64
 * (every 97th one 4096 int64) to one MPI_Win_create_dynamic window: in each
 * group of 8 regions, groups 0, 3, 6, ... are carved out of one malloc'd block
 * as ADJACENT regions (region k+1 starts at the byte after region k ends), the
 * others are separate mallocs.  (Overlapping attachments are not tested: MPI
 * 4.1 section 12.2.4 allows only "multiple (but nonoverlapping)" regions.)
 * The region addresses are exchanged with MPI_Allgather.  Then, ROUNDS times
 * ("-r N", default 2; 1 when UCX_TLS is TCP-only), under one lock_all epoch per round, each rank on
 * every region of the next rank:
 *   1. MPI_Put of the first half, MPI_Accumulate(MPI_SUM, int64) of the
 *      second half, for all regions, then one flush;
 *   2. MPI_Get of every whole region, flush: first half = put values, second
 *      half = initial + added values;
 *   3. MPI_Accumulate(MPI_REPLACE) of element 0 and MPI_Fetch_and_op(MPI_SUM)
 *      of the last element, flush: fetched = initial + added;
 *   4. MPI_Get of element 0 and of the last element, flush: replaced value and
 *      initial + added + fetch_and_op operand.
 * After unlock_all + barrier every target checks all its regions locally
 * against the same formulas (origin = previous rank).  Regions are accessed
 * only inside one region (never across two adjacent ones).
 * A rank whose MPI_Win_attach fails counts as a failure; the run continues
 * with the number of regions every rank managed.
 * Stock components (4.1.4): osc/rdma's MPI_Win_attach fails with
 * MPI_ERR_RMA_ATTACH after about 580 regions (its osc_rdma_max_attach of 64
 * notwithstanding) and the run then hangs in the RMA phase until the suite's
 * timeout; with "-n 500" it passes (0.9 s for 2 and 4 ranks).  osc/ucx caps
 * at 32 attachments and even with "-n 32" fails MPI_Win_lock_all with
 * MPI_ERR_RMA_SYNC. */
#include "testutil.h"
#include <stdint.h>

static int rank, nprocs;

static int nelem(int r, int i) { return (i % 97 == 5) ? 4096 : 2 + (i * 37 + r * 11) % 63; }
static int64_t v_init(int r, int i, int j) { return ((int64_t) r << 40) + ((int64_t) i << 20) + j; }
static int64_t v_put(int o, int round, int i, int j)
{
    return -(((int64_t) o << 40) + ((int64_t) round << 34) + ((int64_t) i << 16) + j) - 1;
}
static int64_t v_add(int o, int round, int i, int j) { return (round + 1) * 1000003LL + o * 7 + i * 13 + j; }
static int64_t v_repl(int round, int i) { return 0x5A5A000000LL + round * 100000LL + i; }
static int64_t v_fop(int round, int i) { return 3 + i + round; }

int main(int argc, char **argv)
{
    MPI_Win win;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &nprocs);
    const int nreg = (int) tu_opt_long(argc, argv, "-n", 1000);
    const int rounds = (int) tu_opt_long(argc, argv, "-r", tu_slow_transport() ? 1 : 2);
    const int next = (rank + 1) % nprocs, prev = (rank + nprocs - 1) % nprocs;

    int64_t **reg = calloc(nreg, sizeof(*reg));       /* my regions */
    void **blocks = calloc(nreg, sizeof(*blocks));    /* what to free() */
    int nblocks = 0;
    for (int i = 0; i < nreg; i += 8) {
        int end = i + 8 < nreg ? i + 8 : nreg;
        if ((i / 8) % 3 == 0) {   /* adjacent regions in one block */
            size_t total = 0;
            for (int k = i; k < end; k++) total += nelem(rank, k) * sizeof(int64_t);
            int64_t *b = malloc(total);
            blocks[nblocks++] = b;
            for (int k = i; k < end; k++) { reg[k] = b; b += nelem(rank, k); }
        } else {
            for (int k = i; k < end; k++) reg[k] = blocks[nblocks++] = malloc(nelem(rank, k) * sizeof(int64_t));
        }
    }
    for (int i = 0; i < nreg; i++)
        for (int j = 0; j < nelem(rank, i); j++) reg[i][j] = v_init(rank, i, j);

    TU_MPI(MPI_Win_create_dynamic(MPI_INFO_NULL, MPI_COMM_WORLD, &win));
    MPI_Win_set_errhandler(win, MPI_ERRORS_RETURN);
    int attached = 0, first_rc = MPI_SUCCESS;
    double t0 = MPI_Wtime();
    for (int i = 0; i < nreg; i++) {
        first_rc = MPI_Win_attach(win, reg[i], nelem(rank, i) * sizeof(int64_t));
        if (MPI_SUCCESS != first_rc) break;
        attached++;
    }
    double t_attach = MPI_Wtime() - t0;
    TU_CHECK(attached == nreg, "MPI_Win_attach of region %d (of %d) failed with %s", attached, nreg,
             tu_err_class_name(tu_err_class(first_rc)));
    int used;
    MPI_Allreduce(&attached, &used, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);

    MPI_Aint *mine = malloc(nreg * sizeof(MPI_Aint)), *all = malloc((size_t) nprocs * nreg * sizeof(MPI_Aint));
    for (int i = 0; i < nreg; i++) MPI_Get_address(reg[i], &mine[i]);
    MPI_Allgather(mine, nreg, MPI_AINT, all, nreg, MPI_AINT, MPI_COMM_WORLD);
    const MPI_Aint *tgt = all + (size_t) next * nreg;

    /* origin-side buffers, one slice per region */
    size_t total = 0;
    size_t *off = malloc(nreg * sizeof(size_t));
    for (int i = 0; i < nreg; i++) { off[i] = total; total += nelem(next, i); }
    int64_t *src = malloc(total * sizeof(int64_t)), *res = malloc(total * sizeof(int64_t));
    int64_t *fetched = malloc(nreg * sizeof(int64_t)), *first = malloc(nreg * sizeof(int64_t)),
            *last = malloc(nreg * sizeof(int64_t)), *repl = malloc(nreg * sizeof(int64_t)),
            *fop = malloc(nreg * sizeof(int64_t));

    double t_ops = 0;
    for (int round = 0; round < rounds && used > 0; round++) {
        MPI_Barrier(MPI_COMM_WORLD);
        t0 = MPI_Wtime();
        TU_MPI(MPI_Win_lock_all(0, win));
        for (int i = 0; i < used; i++) {          /* 1: put + accumulate */
            int n = nelem(next, i), h = n / 2;
            int64_t *s = src + off[i];
            for (int j = 0; j < h; j++) s[j] = v_put(rank, round, i, j);
            for (int j = h; j < n; j++) s[j] = v_add(rank, round, i, j);
            TU_MPI(MPI_Put(s, h, MPI_INT64_T, next, tgt[i], h, MPI_INT64_T, win));
            TU_MPI(MPI_Accumulate(s + h, n - h, MPI_INT64_T, next, tgt[i] + h * sizeof(int64_t), n - h,
                                  MPI_INT64_T, MPI_SUM, win));
        }
        TU_MPI(MPI_Win_flush(next, win));
        memset(res, 0, total * sizeof(int64_t));
        for (int i = 0; i < used; i++)            /* 2: get back */
            TU_MPI(MPI_Get(res + off[i], nelem(next, i), MPI_INT64_T, next, tgt[i], nelem(next, i),
                           MPI_INT64_T, win));
        TU_MPI(MPI_Win_flush(next, win));
        int bad = 0, firstbad = -1;
        for (int i = 0; i < used; i++) {
            int n = nelem(next, i), h = n / 2;
            for (int j = 0; j < n; j++) {
                int64_t exp = j < h ? v_put(rank, round, i, j) : v_init(next, i, j) + v_add(rank, round, i, j);
                if (res[off[i] + j] != exp) { if (!bad++) firstbad = i; }
            }
        }
        TU_CHECK(0 == bad, "round %d: get after put/accumulate: %d wrong values, first in region %d",
                 round, bad, firstbad);
        for (int i = 0; i < used; i++) {          /* 3: replace + fetch_and_op */
            int n = nelem(next, i);
            repl[i] = v_repl(round, i); fop[i] = v_fop(round, i); fetched[i] = -1;
            TU_MPI(MPI_Accumulate(&repl[i], 1, MPI_INT64_T, next, tgt[i], 1, MPI_INT64_T, MPI_REPLACE, win));
            TU_MPI(MPI_Fetch_and_op(&fop[i], &fetched[i], MPI_INT64_T, next,
                                    tgt[i] + (n - 1) * sizeof(int64_t), MPI_SUM, win));
        }
        TU_MPI(MPI_Win_flush(next, win));
        for (int i = 0; i < used; i++) {          /* 4: get the two elements */
            int n = nelem(next, i);
            first[i] = last[i] = -1;
            TU_MPI(MPI_Get(&first[i], 1, MPI_INT64_T, next, tgt[i], 1, MPI_INT64_T, win));
            TU_MPI(MPI_Get(&last[i], 1, MPI_INT64_T, next, tgt[i] + (n - 1) * sizeof(int64_t), 1,
                           MPI_INT64_T, win));
        }
        TU_MPI(MPI_Win_flush(next, win));
        TU_MPI(MPI_Win_unlock_all(win));
        t_ops += MPI_Wtime() - t0;
        int badf = 0, bad0 = 0, badl = 0, fi = -1;
        for (int i = 0; i < used; i++) {
            int n = nelem(next, i);
            int64_t before = v_init(next, i, n - 1) + v_add(rank, round, i, n - 1);
            if (fetched[i] != before) { if (!badf++) fi = i; }
            if (first[i] != v_repl(round, i)) bad0++;
            if (last[i] != before + v_fop(round, i)) badl++;
        }
        TU_CHECK(0 == badf, "round %d: fetch_and_op fetched %d wrong values (first: region %d got %lld)",
                 round, badf, fi, fi >= 0 ? (long long) fetched[fi] : 0LL);
        TU_CHECK(0 == bad0, "round %d: %d regions lack the MPI_REPLACE value", round, bad0);
        TU_CHECK(0 == badl, "round %d: %d regions have a wrong sum after fetch_and_op", round, badl);

        /* the target's view, then reset for the next round */
        MPI_Barrier(MPI_COMM_WORLD);
        TU_MPI(MPI_Win_lock(MPI_LOCK_EXCLUSIVE, rank, 0, win));
        bad = 0; firstbad = -1;
        for (int i = 0; i < used; i++) {
            int n = nelem(rank, i), h = n / 2;
            for (int j = 0; j < n; j++) {
                int64_t exp = j < h ? v_put(prev, round, i, j) : v_init(rank, i, j) + v_add(prev, round, i, j);
                if (j == 0) exp = v_repl(round, i);
                if (j == n - 1) exp += v_fop(round, i);
                if (reg[i][j] != exp) { if (!bad++) firstbad = i; }
                reg[i][j] = v_init(rank, i, j);
            }
        }
        TU_MPI(MPI_Win_unlock(rank, win));
        TU_CHECK(0 == bad, "round %d: target sees %d wrong values, first in region %d", round, bad, firstbad);
        MPI_Barrier(MPI_COMM_WORLD);
    }
    if (0 == rank)
        printf("dyn_attach: %d regions per rank, attach %.3f s, %d rounds of RMA %.3f s\n", used,
               t_attach, rounds, t_ops);

    for (int i = 0; i < attached; i++) TU_MPI(MPI_Win_detach(win, reg[i]));
    TU_MPI(MPI_Win_free(&win));
    for (int b = 0; b < nblocks; b++) free(blocks[b]);
    free(reg); free(blocks); free(mine); free(all); free(off); free(src); free(res);
    free(fetched); free(first); free(last); free(repl); free(fop);
    int rc = tu_finish("dyn_attach");
    MPI_Finalize();
    return rc;
}
