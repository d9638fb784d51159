/* at_fence: puts, gets and accumulates under MPI_Win_fence, EPOCHS epochs
 * with data that changes every epoch, verified after every epoch.
 *
 * Per rank the window holds (MPI_INT64_T):
 *   RING_PUT[K]        written by the left neighbour (MPI_Put)
 *   A2A_PUT[n*K]       slot o written by rank o (MPI_Put, all-to-all incl. self)
 *   SRC[2*K]           two versions of data the others read (MPI_Get)
 *   RING_ACC[K]        left neighbour adds (MPI_Accumulate MPI_SUM), cumulative
 *   ACC[1]             every rank adds (MPI_Accumulate MPI_SUM), cumulative
 * Each epoch is a fence pair (open, RMA calls, close) followed by the
 * verification, so the checks never race with the next epoch's RMA calls.
 * Three epochs out of four are "full" epochs: ring + all-to-all puts, gets
 * (ring + all-to-all) and accumulates, and a local store of the next SRC
 * version (into the SRC half nobody reads in this epoch); every fourth epoch
 * only gets. Asserts, all valid for the access pattern:
 *   first opening fence MPI_MODE_NOPRECEDE, last closing fence MPI_MODE_NOSUCCEED;
 *   in epochs 0-3, 8-11, 16-19, ... additionally
 *     opening fence: NOPRECEDE | NOSTORE (not on epoch 0) | NOPUT (get-only epochs)
 *     closing fence: NOSUCCEED | NOSTORE (get-only epochs);
 *   the other epochs use no asserts, so both paths alternate.
 * After every closing fence all puts, the gotten data and the cumulative
 * sums are compared to locally computed values.
 *
 * Environment: AT_EPOCHS (default 1000).
 *
 * Argument --no-direct: run with osc/ucxx's internal setting direct=0 (tu_tune) (the UCX RMA/AMO path).
 */
#include "testutil.h"
#include <stdint.h>

#define K 4

static int me, nprocs;

static int full_epoch(int e) { return e % 4 != 3; }
/* epochs 0-3, 8-11, ... use every valid assert, the others none */
static int asserted_epoch(int e) { return e % 8 < 4; }

static int64_t put_val(int e, int o, int t, int j) { return (((int64_t)e * 8 + o) * 8 + t) * 8 + j + 1; }
static int64_t ring_val(int e, int o, int j) { return -((int64_t)e * 100 + o * 10 + j + 1); }
static int64_t src_val(int ver, int t, int j) { return (int64_t)ver * 1000 + t * 10 + j + 7; }
static int64_t racc_val(int e, int o, int j) { return e + o + j + 1; }
static int64_t acc_val(int e, int o) { return (int64_t)e * nprocs + o + 1; }


int main(int argc, char **argv)
{
    int flavor, rc, epochs;
    tu_parse_args(argc, argv);
    tu_init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &me);
    MPI_Comm_size(MPI_COMM_WORLD, &nprocs);
    epochs = tu_env_int("AT_EPOCHS", 1000);

    for (flavor = 0; flavor < TU_NFLAVORS; flavor++) {
        const int RING_PUT = 0, A2A_PUT = K, SRC = K + nprocs * K, RING_ACC = SRC + 2 * K, ACC = RING_ACC + K;
        const int nelem = ACC + 1;
        const int right = (me + 1) % nprocs, left = (me - 1 + nprocs) % nprocs;
        int64_t *base, *ringget = malloc(sizeof(int64_t) * K), *a2aget = malloc(sizeof(int64_t) * K * nprocs);
        int64_t *pbuf = malloc(sizeof(int64_t) * K * (nprocs + 1)), *abuf = malloc(sizeof(int64_t) * (K + 1));
        int64_t racc_exp[K] = { 0 }, acc_exp = 0;
        int e, j, t, ver = 0;
        tu_win_t w;
        double t0;
        if (!tu_flavor_enabled(flavor)) continue;

        tu_win_create(flavor, nelem * sizeof(int64_t), sizeof(int64_t), MPI_INFO_NULL, MPI_COMM_WORLD, &w);
        base = w.base;
        for (j = 0; j < nelem; j++) base[j] = 0;
        for (j = 0; j < K; j++) base[SRC + j] = src_val(0, me, j);
        t0 = MPI_Wtime();

        for (e = 0; e < epochs; e++) {
            int full = full_epoch(e), asserted = asserted_epoch(e);
            int open_assert = 0, close_assert = 0;
            if (asserted) {
                /* nothing was issued or stored since the previous closing fence */
                open_assert = MPI_MODE_NOPRECEDE | (e > 0 ? MPI_MODE_NOSTORE : 0) | (full ? 0 : MPI_MODE_NOPUT);
                close_assert = MPI_MODE_NOSUCCEED | (full ? 0 : MPI_MODE_NOSTORE);
            }
            if (0 == e) open_assert |= MPI_MODE_NOPRECEDE;
            if (epochs - 1 == e) close_assert |= MPI_MODE_NOSUCCEED;
            TU_MPI(MPI_Win_fence(open_assert, w.win));

            for (j = 0; j < K * nprocs; j++) a2aget[j] = -1;
            for (j = 0; j < K; j++) ringget[j] = -1;
            /* gets: version `ver` of SRC, ring and all-to-all */
            TU_MPI(MPI_Get(ringget, K, MPI_INT64_T, left, tu_disp(&w, left, SRC + (ver % 2) * K), K, MPI_INT64_T,
                           w.win));
            for (t = 0; t < nprocs; t++)
                TU_MPI(MPI_Get(a2aget + t * K, K, MPI_INT64_T, t, tu_disp(&w, t, SRC + (ver % 2) * K), K,
                               MPI_INT64_T, w.win));
            if (full) {
                for (j = 0; j < K; j++) pbuf[nprocs * K + j] = ring_val(e, me, j);
                TU_MPI(MPI_Put(pbuf + nprocs * K, K, MPI_INT64_T, right, tu_disp(&w, right, RING_PUT), K,
                               MPI_INT64_T, w.win));
                for (t = 0; t < nprocs; t++) {
                    for (j = 0; j < K; j++) pbuf[t * K + j] = put_val(e, me, t, j);
                    TU_MPI(MPI_Put(pbuf + t * K, K, MPI_INT64_T, t, tu_disp(&w, t, A2A_PUT + me * K), K,
                                   MPI_INT64_T, w.win));
                }
                for (j = 0; j < K; j++) abuf[j] = racc_val(e, me, j);
                TU_MPI(MPI_Accumulate(abuf, K, MPI_INT64_T, right, tu_disp(&w, right, RING_ACC), K, MPI_INT64_T,
                                      MPI_SUM, w.win));
                abuf[K] = acc_val(e, me);
                for (t = 0; t < nprocs; t++)
                    TU_MPI(MPI_Accumulate(abuf + K, 1, MPI_INT64_T, t, tu_disp(&w, t, ACC), 1, MPI_INT64_T,
                                          MPI_SUM, w.win));
                /* local store of the next version, into the half nobody reads now */
                for (j = 0; j < K; j++) base[SRC + ((ver + 1) % 2) * K + j] = src_val(ver + 1, me, j);
            }
            TU_MPI(MPI_Win_fence(close_assert, w.win));

            /* verify */
            for (j = 0; j < K; j++)
                TU_CHECK(ringget[j] == src_val(ver, left, j), "%s epoch %d: ring get elem %d = %lld, expected %lld",
                         tu_flavor_names[flavor], e, j, (long long)ringget[j], (long long)src_val(ver, left, j));
            for (t = 0; t < nprocs; t++)
                for (j = 0; j < K; j++)
                    TU_CHECK(a2aget[t * K + j] == src_val(ver, t, j),
                             "%s epoch %d: get from %d elem %d = %lld, expected %lld", tu_flavor_names[flavor], e, t,
                             j, (long long)a2aget[t * K + j], (long long)src_val(ver, t, j));
            if (full) {
                for (j = 0; j < K; j++) {
                    TU_CHECK(base[RING_PUT + j] == ring_val(e, left, j),
                             "%s epoch %d: ring put elem %d = %lld, expected %lld", tu_flavor_names[flavor], e, j,
                             (long long)base[RING_PUT + j], (long long)ring_val(e, left, j));
                    racc_exp[j] += racc_val(e, left, j);
                    TU_CHECK(base[RING_ACC + j] == racc_exp[j], "%s epoch %d: ring acc elem %d = %lld, expected %lld",
                             tu_flavor_names[flavor], e, j, (long long)base[RING_ACC + j], (long long)racc_exp[j]);
                }
                for (t = 0; t < nprocs; t++) {
                    acc_exp += acc_val(e, t);
                    for (j = 0; j < K; j++)
                        TU_CHECK(base[A2A_PUT + t * K + j] == put_val(e, t, me, j),
                                 "%s epoch %d: put from %d elem %d = %lld, expected %lld", tu_flavor_names[flavor], e,
                                 t, j, (long long)base[A2A_PUT + t * K + j], (long long)put_val(e, t, me, j));
                }
                TU_CHECK(base[ACC] == acc_exp, "%s epoch %d: all-to-all acc = %lld, expected %lld",
                         tu_flavor_names[flavor], e, (long long)base[ACC], (long long)acc_exp);
                ver++;
            }
        }
        if (0 == me)
            printf("  %-8s %d epochs in %.2fs\n", tu_flavor_names[flavor], e, MPI_Wtime() - t0);
        MPI_Barrier(MPI_COMM_WORLD);
        tu_win_free(&w);
        free(ringget); free(a2aget); free(pbuf); free(abuf);
    }
    rc = tu_finish("at_fence");
    MPI_Finalize();
    return rc;
}
