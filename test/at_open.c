/* at_open: epochs that open without waiting, and operations that still wait.
 *
 * MPI-3.1 11.5 lets an opening MPI_Win_fence and MPI_Win_start return before
 * the other processes have called their fence or post, but an operation may
 * reach a target only after the target has done so.  In each round one "late"
 * rank (rotating) sleeps, then stores into its window (a marker in SRC, -1 in
 * every slot, a base in ACC) and only then calls the opening fence (or post).
 * Every other rank
 *   - checks that its opening fence / start returned before the late rank
 *     arrived (in the rounds where the late rank sleeps long),
 *   - puts into its slot, gets SRC, accumulates 1 into ACC at the late rank,
 * and after the closing synchronization everyone checks the values: a put
 * that landed early would have been overwritten by -1, an early get would
 * read the old marker, an early accumulate would be lost.
 *
 * Fence openings cycle through: the first fence after MPI_MODE_NOSUCCEED with
 * assert 0, MPI_MODE_NOPRECEDE, and MPI_MODE_NOPRECEDE | MPI_MODE_NOSTORE.
 * PSCW rounds alternate between an empty access epoch and one with operations
 * (complete must consume the post even when nothing was done).
 *
 * Environment: AT_ROUNDS (default 60).  Argument --no-direct: UCX RMA path.
 */
#include "testutil.h"
#include <stdint.h>
#include <unistd.h>

enum { SRC = 0, ACC = 1, SLOTS = 2 };  /* then one slot per rank */

static int me, nprocs;

static double long_sleep_s(void) { return tu_slow_transport() ? 0.4 : 0.2; }

/* The late rank of round r: sleep (long in the first rounds), then store. */
static void late_stores(int64_t *base, int r, int sleep_long)
{
    usleep(sleep_long ? (useconds_t) (long_sleep_s() * 1e6) : (r % 3) * 2000);
    base[SRC] = 1000 + r;
    base[ACC] = 100 * r;
    for (int i = 0; i < nprocs; ++i) base[SLOTS + i] = -1;
}

/* The origin buffers live until the epoch closes, as MPI requires. */
static int64_t put_val, one = 1;

static void origin_ops(tu_win_t *w, int late, int r, int64_t *got)
{
    put_val = 10 * r + me;
    TU_MPI(MPI_Put(&put_val, 1, MPI_INT64_T, late, tu_disp(w, late, SLOTS + me), 1, MPI_INT64_T,
                   w->win));
    TU_MPI(MPI_Get(got, 1, MPI_INT64_T, late, tu_disp(w, late, SRC), 1, MPI_INT64_T, w->win));
    TU_MPI(MPI_Accumulate(&one, 1, MPI_INT64_T, late, tu_disp(w, late, ACC), 1, MPI_INT64_T,
                          MPI_SUM, w->win));
}

static void check_round(tu_win_t *w, const char *what, int late, int r, int64_t got,
                        int did_ops)
{
    int64_t *base = w->base;
    if (me != late) {
        if (did_ops) {
            TU_CHECK(got == 1000 + r, "%s %s round %d: get from late rank %d read %lld, want %d",
                     tu_flavor_names[w->flavor], what, r, late, (long long) got, 1000 + r);
        }
        return;
    }
    for (int i = 0; i < nprocs; ++i) {
        int64_t want = (i == late || !did_ops) ? -1 : 10 * r + i;
        TU_CHECK(base[SLOTS + i] == want, "%s %s round %d: slot of %d is %lld, want %lld",
                 tu_flavor_names[w->flavor], what, r, i, (long long) base[SLOTS + i],
                 (long long) want);
    }
    TU_CHECK(base[ACC] == 100 * r + (did_ops ? nprocs - 1 : 0),
             "%s %s round %d: ACC is %lld, want %lld", tu_flavor_names[w->flavor], what, r,
             (long long) base[ACC], (long long) (100 * r + (did_ops ? nprocs - 1 : 0)));
}

static void fence_rounds(tu_win_t *w, int rounds)
{
    static const int opening[3] = { 0, MPI_MODE_NOPRECEDE, MPI_MODE_NOPRECEDE | MPI_MODE_NOSTORE };
    int64_t *base = w->base;

    for (int r = 0; r < rounds; ++r) {
        int late = r % nprocs, sleep_long = r < 2, assert = opening[r % 3];
        int64_t got = -7;
        double t;

        if (me == late) late_stores(base, r, sleep_long);
        t = MPI_Wtime();
        TU_MPI(MPI_Win_fence(assert, w->win));
        t = MPI_Wtime() - t;
        if (me != late && sleep_long) {
            TU_CHECK(t < long_sleep_s() / 2, "%s round %d: opening fence (assert %d) blocked "
                     "%.3f s waiting for the late rank", tu_flavor_names[w->flavor], r, assert, t);
        }
        if (me != late) origin_ops(w, late, r, &got);
        /* Every third round a middle fence (closing and opening at once) and a
         * second round of checks-free work; the others close with NOSUCCEED. */
        if (r % 3 == 2) TU_MPI(MPI_Win_fence(0, w->win));
        TU_MPI(MPI_Win_fence(MPI_MODE_NOSUCCEED, w->win));
        check_round(w, "fence", late, r, got, 1);
        MPI_Barrier(MPI_COMM_WORLD);  /* checks done before the next late stores */
    }
}

static void pscw_rounds(tu_win_t *w, int rounds)
{
    MPI_Group world, all_but, late_grp;
    int64_t *base = w->base;

    MPI_Comm_group(MPI_COMM_WORLD, &world);
    for (int r = 0; r < rounds; ++r) {
        int late = r % nprocs, sleep_long = r < 4, did_ops = r % 2;
        int64_t got = -7;
        double t;

        MPI_Group_excl(world, 1, &late, &all_but);
        MPI_Group_incl(world, 1, &late, &late_grp);
        if (me == late) {
            late_stores(base, r, sleep_long);
            TU_MPI(MPI_Win_post(all_but, 0, w->win));
            TU_MPI(MPI_Win_wait(w->win));
        } else {
            t = MPI_Wtime();
            TU_MPI(MPI_Win_start(late_grp, 0, w->win));
            t = MPI_Wtime() - t;
            if (sleep_long) {
                TU_CHECK(t < long_sleep_s() / 2, "%s PSCW round %d: start blocked %.3f s "
                         "waiting for the late rank's post", tu_flavor_names[w->flavor], r, t);
            }
            if (did_ops) origin_ops(w, late, r, &got);
            TU_MPI(MPI_Win_complete(w->win));
        }
        check_round(w, "PSCW", late, r, got, did_ops);
        MPI_Group_free(&all_but);
        MPI_Group_free(&late_grp);
        MPI_Barrier(MPI_COMM_WORLD);
    }
    MPI_Group_free(&world);
}

int main(int argc, char **argv)
{
    int rounds;

    tu_parse_args(argc, argv);
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &me);
    MPI_Comm_size(MPI_COMM_WORLD, &nprocs);
    rounds = tu_env_int("AT_ROUNDS", 60);

    for (int flavor = 0; flavor < TU_NFLAVORS; ++flavor) {
        tu_win_t w;
        if (!tu_flavor_enabled(flavor)) continue;
        tu_win_create(flavor, (SLOTS + nprocs) * sizeof(int64_t), sizeof(int64_t),
                      MPI_INFO_NULL, MPI_COMM_WORLD, &w);
        fence_rounds(&w, rounds);
        pscw_rounds(&w, rounds);
        tu_win_free(&w);
    }
    rounds = tu_finish("at_open");
    MPI_Finalize();
    return rounds;
}
