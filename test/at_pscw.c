/* at_pscw: general active target synchronization (post/start/complete/wait).
 *
 * Every rank exposes its window to its two ring neighbours and accesses both
 * of them in the same epoch (overlapping groups; every process is origin and
 * target at once; with 2 ranks both neighbours are the same process). Per
 * epoch each rank
 *   - stores version e of its SRC data locally before posting,
 *   - MPI_Put to the right neighbour's FROM_LEFT and the left one's FROM_RIGHT,
 *   - MPI_Get of both neighbours' SRC (version e),
 *   - MPI_Accumulate(MPI_SUM) into both neighbours' ACC (cumulative),
 * and after complete + wait checks everything against locally computed
 * values. EPOCHS consecutive epochs cycle through three ways to end/start:
 *   e % 3 == 0: MPI_Win_post / MPI_Win_start / MPI_Win_complete / MPI_Win_wait
 *   e % 3 == 1: the same, but MPI_Win_test polling instead of MPI_Win_wait
 *   e % 3 == 2: MPI_MODE_NOCHECK on post and start, with an MPI_Barrier
 *               between them (every post is done before any start, as MPI
 *               requires for NOCHECK).
 *
 * Environment: AT_EPOCHS (default 1000).
 *
 * Argument --no-direct: run with osc/ucxx's internal setting direct=0 (tu_tune) (the UCX RMA/AMO path).
 */
#include "testutil.h"
#include <stdint.h>

#define K 4

static int me, nprocs;

static int64_t lput_val(int e, int o, int j) { return ((int64_t)e * 16 + o) * 8 + j + 1; }
static int64_t rput_val(int e, int o, int j) { return -(((int64_t)e * 16 + o) * 8 + j + 1); }
static int64_t src_val(int e, int t, int j) { return (int64_t)e * 1000 + t * 10 + j + 3; }
static int64_t acc_val(int e, int o, int j) { return (int64_t)(e % 7) * 10 + o + j + 1; }


int main(int argc, char **argv)
{
    int flavor, rc, epochs;
    MPI_Group world_group, nbr_group;
    tu_parse_args(argc, argv);
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &me);
    MPI_Comm_size(MPI_COMM_WORLD, &nprocs);
    epochs = tu_env_int("AT_EPOCHS", 1000);
    {
        int nbrs[2] = { (me - 1 + nprocs) % nprocs, (me + 1) % nprocs };
        MPI_Comm_group(MPI_COMM_WORLD, &world_group);
        MPI_Group_incl(world_group, nbrs[0] == nbrs[1] ? 1 : 2, nbrs, &nbr_group);
    }

    for (flavor = 0; flavor < TU_NFLAVORS; flavor++) {
        enum { FROM_LEFT = 0, FROM_RIGHT = K, SRC = 2 * K, ACC = 4 * K, NELEM = 5 * K };
        const int right = (me + 1) % nprocs, left = (me - 1 + nprocs) % nprocs;
        int64_t *base, lget[K], rget[K], lbuf[K], rbuf[K], abuf[K], acc_exp[K] = { 0 };
        int e, j;
        long polls = 0;
        tu_win_t w;
        double t0;
        if (!tu_flavor_enabled(flavor)) continue;

        tu_win_create(flavor, NELEM * sizeof(int64_t), sizeof(int64_t), MPI_INFO_NULL, MPI_COMM_WORLD, &w);
        base = w.base;
        for (j = 0; j < NELEM; j++) base[j] = 0;
        MPI_Barrier(MPI_COMM_WORLD);
        t0 = MPI_Wtime();

        for (e = 0; e < epochs; e++) {
            int mode = e % 3;
            /* version e of SRC, stored while the window is not exposed (the
             * other half was read during epoch e-1) */
            for (j = 0; j < K; j++) base[SRC + (e % 2) * K + j] = src_val(e, me, j);
            if (2 == mode) {
                TU_MPI(MPI_Win_post(nbr_group, MPI_MODE_NOCHECK, w.win));
                MPI_Barrier(MPI_COMM_WORLD);
                TU_MPI(MPI_Win_start(nbr_group, MPI_MODE_NOCHECK, w.win));
            } else {
                TU_MPI(MPI_Win_post(nbr_group, 0, w.win));
                TU_MPI(MPI_Win_start(nbr_group, 0, w.win));
            }
            for (j = 0; j < K; j++) {
                lbuf[j] = lput_val(e, me, j);
                rbuf[j] = rput_val(e, me, j);
                abuf[j] = acc_val(e, me, j);
                lget[j] = rget[j] = -1;
            }
            TU_MPI(MPI_Put(lbuf, K, MPI_INT64_T, right, tu_disp(&w, right, FROM_LEFT), K, MPI_INT64_T, w.win));
            TU_MPI(MPI_Put(rbuf, K, MPI_INT64_T, left, tu_disp(&w, left, FROM_RIGHT), K, MPI_INT64_T, w.win));
            TU_MPI(MPI_Get(lget, K, MPI_INT64_T, left, tu_disp(&w, left, SRC + (e % 2) * K), K, MPI_INT64_T, w.win));
            TU_MPI(MPI_Get(rget, K, MPI_INT64_T, right, tu_disp(&w, right, SRC + (e % 2) * K), K, MPI_INT64_T,
                           w.win));
            TU_MPI(MPI_Accumulate(abuf, K, MPI_INT64_T, right, tu_disp(&w, right, ACC), K, MPI_INT64_T, MPI_SUM,
                                  w.win));
            TU_MPI(MPI_Accumulate(abuf, K, MPI_INT64_T, left, tu_disp(&w, left, ACC), K, MPI_INT64_T, MPI_SUM,
                                  w.win));
            TU_MPI(MPI_Win_complete(w.win));
            if (1 == mode) {
                int flag = 0;
                while (!flag) {
                    TU_MPI(MPI_Win_test(w.win, &flag));
                    polls++;
                }
            } else {
                TU_MPI(MPI_Win_wait(w.win));
            }

            for (j = 0; j < K; j++) {
                acc_exp[j] += acc_val(e, left, j) + acc_val(e, right, j);
                TU_CHECK(lget[j] == src_val(e, left, j), "%s epoch %d (mode %d): get from left elem %d = %lld, "
                         "expected %lld", tu_flavor_names[flavor], e, mode, j, (long long)lget[j],
                         (long long)src_val(e, left, j));
                TU_CHECK(rget[j] == src_val(e, right, j), "%s epoch %d (mode %d): get from right elem %d = %lld, "
                         "expected %lld", tu_flavor_names[flavor], e, mode, j, (long long)rget[j],
                         (long long)src_val(e, right, j));
                TU_CHECK(base[FROM_LEFT + j] == lput_val(e, left, j), "%s epoch %d (mode %d): put from left elem "
                         "%d = %lld, expected %lld", tu_flavor_names[flavor], e, mode, j,
                         (long long)base[FROM_LEFT + j], (long long)lput_val(e, left, j));
                TU_CHECK(base[FROM_RIGHT + j] == rput_val(e, right, j), "%s epoch %d (mode %d): put from right "
                         "elem %d = %lld, expected %lld", tu_flavor_names[flavor], e, mode, j,
                         (long long)base[FROM_RIGHT + j], (long long)rput_val(e, right, j));
                TU_CHECK(base[ACC + j] == acc_exp[j], "%s epoch %d (mode %d): acc elem %d = %lld, expected %lld",
                         tu_flavor_names[flavor], e, mode, j, (long long)base[ACC + j], (long long)acc_exp[j]);
            }
        }
        if (0 == me)
            printf("  %-8s %d epochs in %.2fs (%ld MPI_Win_test calls on rank 0)\n", tu_flavor_names[flavor], e,
                   MPI_Wtime() - t0, polls);
        MPI_Barrier(MPI_COMM_WORLD);
        tu_win_free(&w);
    }
    MPI_Group_free(&nbr_group);
    MPI_Group_free(&world_group);
    rc = tu_finish("at_pscw");
    MPI_Finalize();
    return rc;
}
