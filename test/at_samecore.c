/* at_samecore: fences between processes that share one core, and the
 * component leaves their CPU affinity alone.
 *
 * Two processes that fence through their state segments hand the core to
 * each other at every barrier when they share it.  The barrier's wait spins
 * briefly and then yields the core (sooner where the process it waits for
 * entered its last barrier on the same core), so fences stay correct and
 * fast enough; where the processes run is the application's and the
 * launcher's business, never changed from inside an MPI call.
 *
 * Here every rank first restricts itself to one core that all may use, so
 * all share it, and fences 200 times; then it gets its whole affinity back
 * and fences 400 more times (two processes left on one core by the
 * scheduler stay there: the old code moved one of them after 64 fences).
 * Each fence carries a put to the right neighbour, checked (two slots, so
 * the neighbour's next put cannot overwrite it first).  The program
 * defines sched_setaffinity (linked -rdynamic, so the library's calls come
 * here): during the fences no call may come from anyone but the test (the
 * old code narrowed and restored the mask: two calls), and after each phase
 * the affinity must be exactly what the test set.  Prints the time per
 * fence of each phase (never checked).
 */
#define _GNU_SOURCE
#include "testutil.h"
#include <sched.h>
#include <sys/syscall.h>
#include <unistd.h>

static int me, nprocs;
static int test_sets, foreign_sets;   /* calls by the test, and by anyone else */

/* Interposed: every sched_setaffinity of the process, the libraries' too. */
int sched_setaffinity(pid_t pid, size_t size, const cpu_set_t *set)
{
    if (test_sets > 0) test_sets--;
    else foreign_sets++;
    return (int) syscall(SYS_sched_setaffinity, pid, size, set);
}

static int set_affinity(const cpu_set_t *set)
{
    test_sets++;
    return sched_setaffinity(0, sizeof(*set), set);
}

static void fences(MPI_Win win, int64_t *base, int n, int64_t *round)
{
    for (int i = 0; i < n; i++, (*round)++) {
        /* two slots: the neighbour's next put lands in the other one */
        int64_t v = *round * 1000 + me, slot = *round % 2;
        TU_MPI(MPI_Put(&v, 1, MPI_INT64_T, (me + 1) % nprocs, slot, 1, MPI_INT64_T, win));
        TU_MPI(MPI_Win_fence(0, win));
        int64_t want = *round * 1000 + (me + nprocs - 1) % nprocs;
        TU_CHECK(base[slot] == want, "fence %ld: holds %ld, want %ld", (long) *round,
                 (long) base[slot], (long) want);
    }
}

/* n fences; the affinity afterwards must still be `set`; seconds each */
static double phase(MPI_Win win, int64_t *base, int n, int64_t *round, const cpu_set_t *set,
                    const char *name)
{
    cpu_set_t now;
    double t = MPI_Wtime();
    fences(win, base, n, round);
    t = (MPI_Wtime() - t) / n;
    TU_CHECK(0 == sched_getaffinity(0, sizeof(now), &now) && CPU_EQUAL(&now, set),
             "%s: the CPU affinity changed during the fences (%d cores, set %d)", name,
             CPU_COUNT(&now), CPU_COUNT(set));
    TU_CHECK(0 == foreign_sets, "%s: %d sched_setaffinity calls not made by the test", name,
             foreign_sets);
    return t;
}

int main(int argc, char **argv)
{
    cpu_set_t all, one;
    int64_t *base, round = 1;
    double shared_t, free_t;
    MPI_Win win;
    int ok = 1, all_ok, lowest = 0, low;

    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &me);
    MPI_Comm_size(MPI_COMM_WORLD, &nprocs);
    if (0 != sched_getaffinity(0, sizeof(all), &all) || CPU_COUNT(&all) < 2) ok = 0;
    MPI_Allreduce(&ok, &all_ok, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);

    TU_MPI(MPI_Win_allocate(2 * sizeof(int64_t), sizeof(int64_t), MPI_INFO_NULL,
                            MPI_COMM_WORLD, &base, &win));
    base[0] = base[1] = 0;
    TU_MPI(MPI_Win_fence(0, win));
    foreign_sets = 0;   /* (MPI_Init's hardware discovery binds threads itself) */
    /* everyone on the lowest core we may all use: the lowest in our masks */
    one = all;
    if (all_ok) {
        while (lowest < CPU_SETSIZE && !CPU_ISSET(lowest, &all)) lowest++;
        MPI_Allreduce(&lowest, &low, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
        CPU_ZERO(&one);
        CPU_SET(low, &one);
        if (!CPU_ISSET(low, &all) || 0 != set_affinity(&one)) {
            one = all;   /* (not on one core: still, nothing may change it) */
            ok = 0;
        }
    }
    shared_t = phase(win, base, 200, &round, &one, "on one core");
    TU_CHECK(0 == set_affinity(&all), "restoring the affinity");
    free_t = phase(win, base, 400, &round, &all, "on every core");
    if (0 == me) {
        printf("at_samecore: %s: %.2f us a fence on one core, %.2f us on all\n",
               all_ok && ok ? "shared a core" : "could not share a core", shared_t * 1e6,
               free_t * 1e6);
    }
    TU_MPI(MPI_Win_free(&win));
    int rc = tu_finish("at_samecore");
    MPI_Finalize();
    return rc;
}
