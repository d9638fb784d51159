/* win_early: windows used the moment their creation returns.  A process
 * leaves MPI_Win_create (or _allocate, _allocate_shared) once it has every
 * peer's part of the creation exchange, so a peer may still be finishing its
 * own creation when the first passive-target accumulate or PSCW notice
 * reaches it.  osc/ucxx puts a window into its table before the exchange and
 * keeps the active messages for a window not yet ready in its queue until it
 * is (osc_ucxx_am.c), instead of ending every creation with a barrier: a
 * message dropped for an unknown window hangs its origin in the unlock (the
 * watchdog fails the run), one handled before the window is ready touches
 * what is not set up yet.
 *
 * ROUNDS ("-r N", default 150) times, over every enabled flavor that has
 * memory at creation (create, allocate, allocate_shared; a dynamic window
 * has none until an attach, which peers learn of only through the program):
 *   - create a window of N doubles (a create window's memory filled before
 *     the call: (rank, round) per element);
 *   - at once: an exclusive lock on the next rank, an MPI_Accumulate of
 *     (round + 1) into its elements [0, N/2) (REPLACE on windows whose
 *     memory is not defined before a synchronization, SUM on create
 *     windows), an MPI_Get_accumulate (NO_OP) of element N - 1, unlock;
 *   - at once: a PSCW epoch, each rank exposing its window to the previous
 *     rank and accumulating (REPLACE) -(round + 1) into element N/2 of the
 *     next rank's;
 *   - MPI_Barrier; each rank checks its own window; free.
 * Over TCP every accumulate is an active message for the target; over
 * shared memory, with --no-direct, those that no UCX atomic can do. */
#include "testutil.h"

#define N 64

static int me, nprocs, next, prev;

static double initial(int rank, int round, int i)
{
    return rank * 1000.0 + round + i * 0.5;
}

static void one_round(int flavor, int round)
{
    tu_win_t w;
    double val[N], got = -1.0, zero = 0.0;
    int half = N / 2, defined = (TU_CREATE == flavor);
    MPI_Group world, pg, ng;

    tu_where = tu_flavor_names[flavor];
    if (TU_CREATE == flavor) {
        /* (tu_win_create callocs a create window's buffer: fill a copy) */
        double *buf = malloc(N * sizeof(double));
        for (int i = 0; i < N; ++i) buf[i] = initial(me, round, i);
        memset(&w, 0, sizeof(w));
        w.size = N * sizeof(double);
        w.disp_unit = sizeof(double);
        w.flavor = TU_CREATE;
        w.base = buf;
        TU_MPI(MPI_Win_create(buf, w.size, sizeof(double), MPI_INFO_NULL, MPI_COMM_WORLD,
                              &w.win));
    } else {
        tu_win_create(flavor, N * sizeof(double), sizeof(double), MPI_INFO_NULL,
                      MPI_COMM_WORLD, &w);
        if (MPI_WIN_NULL == w.win) return;
    }
    for (int i = 0; i < half; ++i) val[i] = round + 1.0;

    TU_MPI(MPI_Win_lock(MPI_LOCK_EXCLUSIVE, next, 0, w.win));
    TU_MPI(MPI_Accumulate(val, half, MPI_DOUBLE, next, 0, half, MPI_DOUBLE,
                          defined ? MPI_SUM : MPI_REPLACE, w.win));
    TU_MPI(MPI_Get_accumulate(&zero, 0, MPI_DOUBLE, &got, 1, MPI_DOUBLE, next, N - 1, 1,
                              MPI_DOUBLE, MPI_NO_OP, w.win));
    TU_MPI(MPI_Win_unlock(next, w.win));
    if (defined) {
        TU_CHECK(got == initial(next, round, N - 1), "%s round %d: fetched %g from %d, "
                 "expected %g", tu_where, round, got, next, initial(next, round, N - 1));
    }

    MPI_Comm_group(MPI_COMM_WORLD, &world);
    MPI_Group_incl(world, 1, &prev, &pg);
    MPI_Group_incl(world, 1, &next, &ng);
    double mark = -(round + 1.0);
    TU_MPI(MPI_Win_post(pg, 0, w.win));
    TU_MPI(MPI_Win_start(ng, 0, w.win));
    TU_MPI(MPI_Accumulate(&mark, 1, MPI_DOUBLE, next, half, 1, MPI_DOUBLE, MPI_REPLACE, w.win));
    TU_MPI(MPI_Win_complete(w.win));
    TU_MPI(MPI_Win_wait(w.win));
    MPI_Group_free(&pg);
    MPI_Group_free(&ng);
    MPI_Group_free(&world);

    MPI_Barrier(MPI_COMM_WORLD);
    const double *mem = w.base;
    for (int i = 0; i < half; ++i) {
        double want = defined ? initial(me, round, i) + round + 1.0 : round + 1.0;
        TU_CHECK(mem[i] == want, "%s round %d: element %d = %g, expected %g", tu_where, round,
                 i, mem[i], want);
    }
    TU_CHECK(mem[half] == mark, "%s round %d: PSCW element %g, expected %g", tu_where, round,
             mem[half], mark);
    MPI_Barrier(MPI_COMM_WORLD);
    tu_win_free(&w);
}

int main(int argc, char **argv)
{
    int rounds = (int) tu_opt_long(argc, argv, "-r", 150);
    static const int flavors[] = {TU_CREATE, TU_ALLOCATE, TU_ALLOC_SHARED};

    tu_parse_args(argc, argv);
    tu_init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &me);
    MPI_Comm_size(MPI_COMM_WORLD, &nprocs);
    next = (me + 1) % nprocs;
    prev = (me + nprocs - 1) % nprocs;
    tu_watchdog("win_early", 120);

    for (int r = 0; r < rounds; ++r) {
        for (size_t f = 0; f < sizeof(flavors) / sizeof(flavors[0]); ++f) {
            if (tu_flavor_or_all(flavors[f])) one_round(flavors[f], r);
        }
    }
    alarm(0);
    int rc = tu_finish("win_early");
    MPI_Finalize();
    return rc;
}
