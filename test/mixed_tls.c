/* mixed_tls: a window whose processes reach each other differently (run by
 * mixed_tls.sh: rank 0 with UCX_TLS=tcp,self, the others with UCX's
 * defaults, so rank 0 maps nobody's memory and nobody maps rank 0's, while
 * the others map each other's).  Every process must still use one kind of
 * atomics on every word of the window (docs/atomics.md).  Usage: mixed_tls
 * [-i N] (default 100 rounds).  For each window flavor:
 * 1. Exclusive-lock read-modify-write: every rank N times locks rank 0
 *    exclusively, reads a counter (MPI_Get + flush), writes it back plus one
 *    (MPI_Put) and unlocks; the counter must end at nprocs * N (a lost
 *    increment means two processes held the lock at once).  The same with
 *    MPI_Fetch_and_op on a second counter, on a window made with
 *    acc_single_intrinsic=true too: every fetched value distinct.
 * 2. Fence rounds: each round every rank puts (round, rank) into its right
 *    neighbour's slot between two fences and checks its own slot after.
 * 3. PSCW rounds: each rank exposes to its left neighbour and accesses its
 *    right one; values checked after MPI_Win_wait. */
#include "testutil.h"

#define SLOTS 4   /* counter, fetch-and-op counter, fence slot, pscw slot */

static int me, nprocs, next, prev, rounds;

static void lock_counter(tu_win_t *w, const char *tag)
{
    int64_t one = 1, old = 0, v = 0;
    MPI_Aint d0 = tu_disp(w, 0, 0), d1 = tu_disp(w, 0, 1);
    int64_t *fetched = malloc(rounds * sizeof(int64_t));

    for (int i = 0; i < rounds; ++i) {
        TU_MPI(MPI_Win_lock(MPI_LOCK_EXCLUSIVE, 0, 0, w->win));
        TU_MPI(MPI_Get(&v, 1, MPI_INT64_T, 0, d0, 1, MPI_INT64_T, w->win));
        TU_MPI(MPI_Win_flush(0, w->win));
        v++;
        TU_MPI(MPI_Put(&v, 1, MPI_INT64_T, 0, d0, 1, MPI_INT64_T, w->win));
        TU_MPI(MPI_Win_unlock(0, w->win));

        TU_MPI(MPI_Win_lock(MPI_LOCK_SHARED, 0, 0, w->win));
        TU_MPI(MPI_Fetch_and_op(&one, &old, MPI_INT64_T, 0, d1, MPI_SUM, w->win));
        TU_MPI(MPI_Win_unlock(0, w->win));
        fetched[i] = old;
    }
    MPI_Barrier(MPI_COMM_WORLD);
    if (0 == me) {
        int64_t got[2];
        TU_MPI(MPI_Win_lock(MPI_LOCK_SHARED, 0, 0, w->win));
        TU_MPI(MPI_Get(got, 2, MPI_INT64_T, 0, d0, 2, MPI_INT64_T, w->win));
        TU_MPI(MPI_Win_unlock(0, w->win));
        TU_CHECK(got[0] == (int64_t) nprocs * rounds,
                 "%s %s: exclusive-lock counter %lld, expected %lld", tu_flavor_names[w->flavor],
                 tag, (long long) got[0], (long long) nprocs * rounds);
        TU_CHECK(got[1] == (int64_t) nprocs * rounds,
                 "%s %s: fetch-and-op counter %lld, expected %lld", tu_flavor_names[w->flavor],
                 tag, (long long) got[1], (long long) nprocs * rounds);
    }
    /* every fetched value once: gather them at rank 0 and count */
    {
        int64_t *all = 0 == me ? malloc((size_t) nprocs * rounds * sizeof(int64_t)) : NULL;
        MPI_Gather(fetched, rounds, MPI_INT64_T, all, rounds, MPI_INT64_T, 0, MPI_COMM_WORLD);
        if (0 == me) {
            char *seen = calloc((size_t) nprocs * rounds, 1);
            int bad = 0;
            for (int i = 0; i < nprocs * rounds; ++i) {
                if (all[i] < 0 || all[i] >= (int64_t) nprocs * rounds || seen[all[i]]++) bad++;
            }
            TU_CHECK(0 == bad, "%s %s: %d fetched values repeated or out of range",
                     tu_flavor_names[w->flavor], tag, bad);
            free(seen);
            free(all);
        }
    }
    free(fetched);
}

static void fences(tu_win_t *w)
{
    int64_t *mine = w->base;
    MPI_Aint d = tu_disp(w, next, 2);

    TU_MPI(MPI_Win_fence(0, w->win));
    for (int r = 1; r <= rounds; ++r) {
        int64_t v = (int64_t) r * 1000 + me;
        TU_MPI(MPI_Put(&v, 1, MPI_INT64_T, next, d, 1, MPI_INT64_T, w->win));
        TU_MPI(MPI_Win_fence(0, w->win));
        TU_CHECK(mine[2] == (int64_t) r * 1000 + prev, "%s fence round %d: slot %lld, expected %lld",
                 tu_flavor_names[w->flavor], r, (long long) mine[2],
                 (long long) r * 1000 + prev);
        TU_MPI(MPI_Win_fence(0, w->win));
    }
    TU_MPI(MPI_Win_fence(MPI_MODE_NOSUCCEED, w->win));
}

static void pscw(tu_win_t *w)
{
    MPI_Group world, from, to;
    int64_t *mine = w->base;
    MPI_Aint d = tu_disp(w, next, 3);

    MPI_Comm_group(MPI_COMM_WORLD, &world);
    MPI_Group_incl(world, 1, &prev, &from);
    MPI_Group_incl(world, 1, &next, &to);
    for (int r = 1; r <= rounds; ++r) {
        int64_t v = (int64_t) r * 1000 + me;
        TU_MPI(MPI_Win_post(from, 0, w->win));
        TU_MPI(MPI_Win_start(to, 0, w->win));
        TU_MPI(MPI_Put(&v, 1, MPI_INT64_T, next, d, 1, MPI_INT64_T, w->win));
        TU_MPI(MPI_Win_complete(w->win));
        TU_MPI(MPI_Win_wait(w->win));
        TU_CHECK(mine[3] == (int64_t) r * 1000 + prev, "%s pscw round %d: slot %lld, expected %lld",
                 tu_flavor_names[w->flavor], r, (long long) mine[3],
                 (long long) r * 1000 + prev);
    }
    MPI_Group_free(&from);
    MPI_Group_free(&to);
    MPI_Group_free(&world);
}

int main(int argc, char **argv)
{
    tu_init_ring(&argc, &argv, &me, &nprocs, &next, &prev);
    rounds = (int) tu_opt_long(argc, argv, "-i", 100);

    for (int f = 0; f < TU_NFLAVORS_ALL; ++f) {
        for (int intrinsic = 0; intrinsic < 2; ++intrinsic) {
            MPI_Info info = MPI_INFO_NULL;
            tu_win_t w;
            if (!tu_flavor_or_all(f)) continue;
            if (intrinsic) {
                MPI_Info_create(&info);
                MPI_Info_set(info, "acc_single_intrinsic", "true");
            }
            tu_win_create(f, SLOTS * sizeof(int64_t), sizeof(int64_t), info, MPI_COMM_WORLD, &w);
            if (MPI_INFO_NULL != info) MPI_Info_free(&info);
            if (MPI_WIN_NULL == w.win) {
                if (0 == me && !intrinsic) printf("%s: n/a\n", tu_flavor_names[f]);
                continue;
            }
            lock_counter(&w, intrinsic ? "acc_single_intrinsic" : "default");
            fences(&w);
            pscw(&w);
            tu_win_free(&w);
            if (0 == me) {
                printf("%s%s: done\n", tu_flavor_names[f], intrinsic ? " (single intrinsic)" : "");
                fflush(stdout);
            }
        }
    }
    {
        int rc = tu_finish("mixed_tls");
        MPI_Finalize();
        return rc;
    }
}
