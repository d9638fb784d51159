/* at_unshare: fences between processes that the scheduler left on one core.
 *
 * Two processes that fence through their state segments hand the core to
 * each other on every barrier when they share it, and Linux does not move
 * either to an idle core (both ran within its 0.5 ms "cache hot" window):
 * ~2 us a fence instead of ~0.15, for as long as the job runs.  osc/ucxx's
 * fence barrier notices (each process publishes its core) and the odd rank
 * moves itself (osc_ucxx_fence_unshare).
 *
 * Here every rank first restricts itself to one core that all may use, so
 * all share it, fences 100 times, gets its whole affinity back and fences
 * 400 more times; each fence carries a put to the right neighbour, checked
 * (two slots, so the neighbour's next put cannot overwrite it first).  Of
 * the last 200 fences, fewer than three quarters may find every rank on one
 * core (the scheduler also separates them now and then, and may put them
 * back together; before the move, 2 runs of 3 stayed together).  Not checked
 * where a rank may use fewer cores than there are ranks, or over TCP (fences
 * use the communicator's barrier there); --no-unshare switches the move off
 * and the check with it (to watch the old behaviour).
 */
#define _GNU_SOURCE
#include "testutil.h"
#include <sched.h>

static int me, nprocs;

static void fences(MPI_Win win, int64_t *base, int n, int64_t *round, int *cpu)
{
    for (int i = 0; i < n; i++, (*round)++) {
        /* two slots: the neighbour's next put lands in the other one */
        int64_t v = *round * 1000 + me, slot = *round % 2;
        TU_MPI(MPI_Put(&v, 1, MPI_INT64_T, (me + 1) % nprocs, slot, 1, MPI_INT64_T, win));
        TU_MPI(MPI_Win_fence(0, win));
        int64_t want = *round * 1000 + (me + nprocs - 1) % nprocs;
        TU_CHECK(base[slot] == want, "fence %ld: holds %ld, want %ld", (long) *round,
                 (long) base[slot], (long) want);
        if (cpu) cpu[i] = sched_getcpu();
    }
}

int main(int argc, char **argv)
{
    int no_unshare = tu_opt_flag(argc, argv, "--no-unshare");
    cpu_set_t all, first;
    int64_t *base, round = 1;
    MPI_Win win;
    int ok = 1, all_ok;

    if (no_unshare) setenv("OMPI_MCA_osc_ucxx_fence_unshare", "0", 1);
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &me);
    MPI_Comm_size(MPI_COMM_WORLD, &nprocs);
    if (0 != sched_getaffinity(0, sizeof(all), &all) || CPU_COUNT(&all) < nprocs) ok = 0;
    MPI_Allreduce(&ok, &all_ok, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);

    TU_MPI(MPI_Win_allocate(2 * sizeof(int64_t), sizeof(int64_t), MPI_INFO_NULL,
                            MPI_COMM_WORLD, &base, &win));
    base[0] = base[1] = 0;
    TU_MPI(MPI_Win_fence(0, win));
    if (all_ok) {
        /* everyone on the lowest core we may all use: the lowest in our masks */
        int lowest = 0, low;
        while (lowest < CPU_SETSIZE && !CPU_ISSET(lowest, &all)) lowest++;
        MPI_Allreduce(&lowest, &low, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
        CPU_ZERO(&first);
        CPU_SET(low, &first);
        if (!CPU_ISSET(low, &all) || 0 != sched_setaffinity(0, sizeof(first), &first)) ok = 0;
    }
    fences(win, base, 100, &round, NULL);
    if (all_ok) TU_CHECK(0 == sched_setaffinity(0, sizeof(all), &all), "restoring affinity");
    /* then: on which core each rank left each of the next N fences */
    enum { N = 400, LAST = 200 };
    int *mine = malloc(N * sizeof(int)), *cpus = malloc((size_t) nprocs * N * sizeof(int));
    fences(win, base, N, &round, mine);
    MPI_Gather(mine, N, MPI_INT, cpus, N, MPI_INT, 0, MPI_COMM_WORLD);
    int shared = 0, check = all_ok && ok && !no_unshare && !tu_slow_transport();
    if (0 == me) {
        for (int i = N - LAST; i < N; i++) {   /* fences where every rank was on one core */
            int same = 1;
            for (int r = 1; r < nprocs; r++) same &= cpus[r * N + i] == cpus[i];
            shared += same;
        }
        printf("at_unshare: %s; of the last %d fences, %d with all ranks on one core\n",
               all_ok ? "shared a core first" : "could not share a core (too few cores)", LAST,
               shared);
        /* (over TCP fences use the communicator's barrier: nothing moves) */
        TU_CHECK(!check || 4 * shared < 3 * LAST, "%d of the last %d fences had all %d ranks "
                 "on one core: nobody moved off it", shared, LAST, nprocs);
    }
    free(mine);
    free(cpus);
    TU_MPI(MPI_Win_free(&win));
    int rc = tu_finish("at_unshare");
    MPI_Finalize();
    return rc;
}
