/* acc_lock: an MPI_Compare_and_swap spin lock guarding a non-atomic
 * critical section.
 *
 * The lock word lives at rank 0, the shared counter and an "owner" slot at
 * the last rank. Each rank, ITERS times:
 *   acquire  MPI_Compare_and_swap(0 -> me+1) + flush until it fetches 0
 *   critical MPI_Put(owner = me+1), flush; MPI_Get(counter), flush;
 *            MPI_Put(counter + 1), flush; MPI_Get(owner), flush -> must still be me+1
 *   release  MPI_Fetch_and_op(MPI_REPLACE, 0) + flush -> must fetch me+1
 * All in one MPI_Win_lock_all epoch. The counter must end at exactly
 * nprocs*ITERS (any lost update means two ranks were inside at once, or a
 * flushed put/get was not complete).
 *
 * Environment: ACC_LOCK_ITERS (default 300).
 *
 * Argument --no-direct: run with osc/ucxx's internal setting direct=0 (tu_tune) (the UCX RMA/AMO path).
 */
#include "testutil.h"
#include <sched.h>
#include <stdint.h>

enum { LOCKW, COUNTER, OWNER, NSLOT };


int main(int argc, char **argv)
{
    int me, nprocs, flavor, rc, i;
    int iters;
    tu_parse_args(argc, argv);
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &me);
    MPI_Comm_size(MPI_COMM_WORLD, &nprocs);
    iters = tu_env_int("ACC_LOCK_ITERS", 300);

    for (flavor = 0; flavor < TU_NFLAVORS; flavor++) {
        tu_win_t w;
        const int L = 0, C = nprocs - 1;
        const int64_t zero = 0, mine = me + 1;
        long spins = 0;
        int owner_bad = 0, release_bad = 0;
        double t0;
        if (!tu_flavor_enabled(flavor)) continue;
        tu_win_create(flavor, NSLOT * sizeof(int64_t), sizeof(int64_t), MPI_INFO_NULL, MPI_COMM_WORLD, &w);
        t0 = MPI_Wtime();
        TU_MPI(MPI_Win_lock_all(0, w.win));
        for (i = 0; i < iters; i++) {
            int64_t got, val, owner, old;
            /* acquire */
            for (;;) {
                TU_MPI(MPI_Compare_and_swap(&mine, &zero, &got, MPI_INT64_T, L, tu_disp(&w, L, LOCKW), w.win));
                TU_MPI(MPI_Win_flush(L, w.win));
                if (0 == got) break;
                TU_CHECK(got >= 1 && got <= nprocs, "on %s: lock word holds %lld", tu_flavor_names[flavor],
                         (long long)got);
                if (got == mine) {
                    TU_CHECK(0, "on %s: lock word already holds my id", tu_flavor_names[flavor]);
                    break;
                }
                spins++;
                sched_yield();
            }
            /* critical section: plain puts and gets */
            TU_MPI(MPI_Put(&mine, 1, MPI_INT64_T, C, tu_disp(&w, C, OWNER), 1, MPI_INT64_T, w.win));
            TU_MPI(MPI_Win_flush(C, w.win));
            TU_MPI(MPI_Get(&val, 1, MPI_INT64_T, C, tu_disp(&w, C, COUNTER), 1, MPI_INT64_T, w.win));
            TU_MPI(MPI_Win_flush(C, w.win));
            val++;
            TU_MPI(MPI_Put(&val, 1, MPI_INT64_T, C, tu_disp(&w, C, COUNTER), 1, MPI_INT64_T, w.win));
            TU_MPI(MPI_Win_flush(C, w.win));
            TU_MPI(MPI_Get(&owner, 1, MPI_INT64_T, C, tu_disp(&w, C, OWNER), 1, MPI_INT64_T, w.win));
            TU_MPI(MPI_Win_flush(C, w.win));
            if (owner != mine) owner_bad++;
            /* release */
            TU_MPI(MPI_Fetch_and_op(&zero, &old, MPI_INT64_T, L, tu_disp(&w, L, LOCKW), MPI_REPLACE, w.win));
            TU_MPI(MPI_Win_flush(L, w.win));
            if (old != mine) release_bad++;
        }
        TU_MPI(MPI_Win_unlock_all(w.win));
        TU_CHECK(0 == owner_bad, "on %s: %d times another rank wrote the owner slot inside my critical section",
                 tu_flavor_names[flavor], owner_bad);
        TU_CHECK(0 == release_bad, "on %s: %d times the lock word did not hold my id at release",
                 tu_flavor_names[flavor], release_bad);
        MPI_Barrier(MPI_COMM_WORLD);
        if (me == C) {
            int64_t final;
            TU_MPI(MPI_Win_lock(MPI_LOCK_SHARED, C, 0, w.win));
            final = ((int64_t *)w.base)[COUNTER];
            TU_MPI(MPI_Win_unlock(C, w.win));
            TU_CHECK(final == (int64_t)nprocs * iters, "on %s: counter %lld, expected %lld",
                     tu_flavor_names[flavor], (long long)final, (long long)nprocs * iters);
        }
        if (me == L) {
            int64_t lockw;
            TU_MPI(MPI_Win_lock(MPI_LOCK_SHARED, L, 0, w.win));
            lockw = ((int64_t *)w.base)[LOCKW];
            TU_MPI(MPI_Win_unlock(L, w.win));
            TU_CHECK(0 == lockw, "on %s: lock word %lld after all releases", tu_flavor_names[flavor],
                     (long long)lockw);
        }
        {
            long total = 0;
            MPI_Reduce(&spins, &total, 1, MPI_LONG, MPI_SUM, 0, MPI_COMM_WORLD);
            if (0 == me)
                printf("  %-8s %d x %d critical sections, %ld failed acquires, %.2fs\n", tu_flavor_names[flavor],
                       nprocs, iters, total, MPI_Wtime() - t0);
        }
        MPI_Barrier(MPI_COMM_WORLD);
        tu_win_free(&w);
    }
    rc = tu_finish("acc_lock");
    MPI_Finalize();
    return rc;
}
