/* Accumulate ordering (the default accumulate_ordering=rar,raw,war,waw) for
 * accumulates the target applies itself (multi-element MPI_SHORT: no atomic
 * for the type, so wherever the target memory is not mapped into the origin,
 * e.g. under UCX_TLS=tcp,self, they travel as messages), while the target's
 * stripes are contended and the target has two threads inside MPI.
 *
 * Rank 0 is the target.  A helper thread of rank 0 keeps accumulating
 * (MPI_SUM of 1, N shorts) to its own window, region SELF, while rank 0's
 * main thread waits in MPI_Barrier.  Rank 1 issues batches of K operations
 * to region ORDER at rank 0, all N shorts, no flush inside a batch:
 *   even i: MPI_Accumulate(MPI_REPLACE) of the value seq(i);
 *   odd i:  MPI_Get_accumulate(MPI_REPLACE) of seq(i), which must fetch
 *           seq(i-1) in every element (the previous write, in order);
 * then MPI_Win_flush and a check of the fetched values; the final contents
 * of ORDER must be the last value written.  Ranks >= 2 contend on the same
 * stripes: MPI_Accumulate(MPI_SUM of 1, N shorts) to their own region.
 * At the end every region is checked exactly (SELF and the contenders'
 * regions: the number of additions, modulo 2^16).
 *
 * Usage: acc_am_order [-b batches] [-k ops per batch] (default 80 x 16;
 * needs MPI_THREAD_MULTIPLE, skipped otherwise).  Watchdog 120 s.
 * Flavors: create, allocate, dynamic. */
#include "testutil.h"
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <unistd.h>

#define N 1024                 /* shorts per operation: 2 KiB covers all 32 stripes */
#define REGION 4096            /* bytes per region in the window */
#define R_ORDER 0
#define R_SELF REGION
#define R_CONT(r) ((MPI_Aint) (2 + (r)) * REGION)

static int rank, nprocs;
static tu_win_t w;
static volatile int stop_helper;
static long helper_ops;

static void *helper(void *arg)
{
    (void) arg;
    short ones[N];
    for (int i = 0; i < N; i++) ones[i] = 1;
    helper_ops = 0;
    while (!stop_helper) {
        TU_MPI(MPI_Accumulate(ones, N, MPI_SHORT, 0, tu_disp(&w, 0, R_SELF), N, MPI_SHORT,
                              MPI_SUM, w.win));
        helper_ops++;
        if (0 == helper_ops % 8) TU_MPI(MPI_Win_flush(0, w.win));
    }
    TU_MPI(MPI_Win_flush(0, w.win));
    return NULL;
}

static inline short seqval(int b, int k, int i) { return (short) (b * k + i + 1); }

int main(int argc, char **argv)
{
    int provided;
    MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &nprocs);
    int batches = (int) tu_opt_long(argc, argv, "-b", 80);
    int k = (int) tu_opt_long(argc, argv, "-k", 16);
    if (provided < MPI_THREAD_MULTIPLE || nprocs < 2) {
        if (0 == rank) printf("acc_am_order: needs MPI_THREAD_MULTIPLE and 2 ranks, skipped\n");
        int rc = tu_finish("acc_am_order");
        MPI_Finalize();
        return rc;
    }
    tu_watchdog("acc_am_order", 120);

    short *src = malloc(N * sizeof(short)), *res = malloc((size_t) k * N * sizeof(short));
    int cont_ops = batches * k;   /* each contender's additions */

    for (int flavor = 0; flavor < TU_NFLAVORS; flavor++) {
        if (!tu_flavor_enabled(flavor)) continue;
        const char *fl = tu_flavor_names[flavor];
        tu_win_create(flavor, (MPI_Aint) (2 + nprocs) * REGION, 1, MPI_INFO_NULL, MPI_COMM_WORLD, &w);
        TU_MPI(MPI_Win_lock_all(0, w.win));
        pthread_t th;
        if (0 == rank) {
            stop_helper = 0;
            pthread_create(&th, NULL, helper, NULL);
        } else if (1 == rank) {
            int bad_ops = 0;
            for (int b = 0; b < batches; b++) {
                for (int i = 0; i < k; i++) {
                    for (int j = 0; j < N; j++) src[j] = seqval(b, k, i);
                    if (i & 1) {
                        TU_MPI(MPI_Get_accumulate(src, N, MPI_SHORT, res + (size_t) i * N, N,
                                                  MPI_SHORT, 0, tu_disp(&w, 0, R_ORDER), N,
                                                  MPI_SHORT, MPI_REPLACE, w.win));
                    } else {
                        TU_MPI(MPI_Accumulate(src, N, MPI_SHORT, 0, tu_disp(&w, 0, R_ORDER), N,
                                              MPI_SHORT, MPI_REPLACE, w.win));
                    }
                }
                TU_MPI(MPI_Win_flush(0, w.win));
                for (int i = 1; i < k; i += 2) {
                    short exp = seqval(b, k, i - 1);
                    int bad = 0;
                    for (int j = 0; j < N; j++) bad += res[(size_t) i * N + j] != exp;
                    if (bad) {
                        if (bad_ops < 5)
                            TU_CHECK(0 == bad, "%s: batch %d op %d: get_accumulate(REPLACE) fetched "
                                     "%d (first element) in %d of %d elements, expected %d: an "
                                     "earlier accumulate was applied after a later one",
                                     fl, b, i, res[(size_t) i * N], bad, N, exp);
                        else
                            tu_errors++;
                        bad_ops++;
                    }
                }
            }
            if (bad_ops)
                fprintf(stderr, "[rank 1] %s: %d of %d get_accumulates saw an out-of-order value\n",
                        fl, bad_ops, batches * (k / 2));
        } else {
            short ones[N];
            for (int j = 0; j < N; j++) ones[j] = 1;
            for (int i = 0; i < cont_ops; i++) {
                TU_MPI(MPI_Accumulate(ones, N, MPI_SHORT, 0, tu_disp(&w, 0, R_CONT(rank)), N,
                                      MPI_SHORT, MPI_SUM, w.win));
                if (3 == i % 4) TU_MPI(MPI_Win_flush(0, w.win));
            }
        }
        if (0 != rank) TU_MPI(MPI_Win_unlock_all(w.win));
        MPI_Barrier(MPI_COMM_WORLD);    /* rank 0's main thread waits here */
        if (0 == rank) {
            stop_helper = 1;
            pthread_join(th, NULL);
            TU_MPI(MPI_Win_unlock_all(w.win));
            TU_MPI(MPI_Win_lock(MPI_LOCK_EXCLUSIVE, 0, 0, w.win));
            const short *base = w.base;
            short last = seqval(batches - 1, k, k - 1);
            int bad = 0;
            for (int j = 0; j < N; j++) bad += base[R_ORDER / 2 + j] != last;
            TU_CHECK(0 == bad, "%s: ORDER region holds %d (first element) in %d of %d elements, "
                     "expected the last value written, %d", fl, base[R_ORDER / 2], bad, N, last);
            bad = 0;
            for (int j = 0; j < N; j++) bad += base[R_SELF / 2 + j] != (short) helper_ops;
            TU_CHECK(0 == bad, "%s: SELF region: %d wrong elements (%d, expected %d)", fl, bad,
                     base[R_SELF / 2], (short) helper_ops);
            for (int r = 2; r < nprocs; r++) {
                bad = 0;
                for (int j = 0; j < N; j++) bad += base[R_CONT(r) / 2 + j] != (short) cont_ops;
                TU_CHECK(0 == bad, "%s: region of contender %d: %d wrong elements (%d, expected %d)",
                         fl, r, bad, base[R_CONT(r) / 2], (short) cont_ops);
            }
            TU_MPI(MPI_Win_unlock(0, w.win));
            printf("acc_am_order: %s: target helper thread did %ld accumulates\n", fl, helper_ops);
        }
        MPI_Barrier(MPI_COMM_WORLD);
        tu_win_free(&w);
    }
    free(src);
    free(res);
    alarm(0);
    int rc = tu_finish("acc_am_order");
    MPI_Finalize();
    return rc;
}
