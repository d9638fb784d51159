/* Dynamic windows under MPI_THREAD_MULTIPLE: threads that use different
 * regions of the same target at once.  Ranks in a ring: each attaches one
 * page-aligned region per thread (separate allocations, so separate
 * registrations and, on a node, separate mappings) and is the target of the
 * previous rank.  Under lock_all, thread t of the origin, per iteration,
 * puts one int to slot (iteration % SLOTS) of the target's region t,
 * flushes, gets it back, flushes and checks it, then adds 1 to the
 * region's counter (int SLOTS) with MPI_Fetch_and_op, which must return the
 * iteration number, and on even iterations also swaps the slot's value with
 * MPI_Compare_and_swap (same value: the slot keeps it); between the threads, every
 * operation names another region than the one before it on that target,
 * which is what a region cache kept per link sees when threads share links
 * (osc_ucxx_per_thread_workers=0: one worker, so one link per target, for
 * every thread).  At the end each target checks that every slot of every
 * region holds the value its own thread put there last: an operation that
 * took another thread's cached region (its mapping, its rkey) would put
 * into the wrong region or read back the wrong value.  Meanwhile one more
 * thread of each rank attaches and detaches a spare region in a loop: each
 * detach tells every origin to drop what it cached of this target, so the
 * threads drop and refill their caches all the time (with shared links: the
 * same cache, under each other's feet).
 * -t N threads (default 4), -i N iterations per thread (default 20000; 200 on
 * TCP). */
#include "testutil.h"
#include <pthread.h>
#include <sched.h>

#define MAXT 16
#define SLOTS 64
#define REGION 4096

static int rank, nprocs, next, prev, nt = 4, iters = 20000;
static MPI_Win win;
static MPI_Aint target_base[MAXT];   /* the next rank's regions */
static struct { int errs, bad; } seen[MAXT];
static volatile int done;            /* the accessing threads have finished */

static int val(int origin, int t, int it)
{
    return (int) (((uint32_t) origin * 7919u + (uint32_t) t * 104729u + (uint32_t) it) *
                  2654435761u >> 1);
}

static void *accesses(void *arg)
{
    int t = (int) (intptr_t) arg;

    for (int it = 0; it < iters; it++) {
        MPI_Aint disp = target_base[t] + (MPI_Aint) (it % SLOTS) * (MPI_Aint) sizeof(int);
        int out = val(rank, t, it), in = 0, errs = 0;
        errs += MPI_SUCCESS != MPI_Put(&out, 1, MPI_INT, next, disp, 1, MPI_INT, win);
        errs += MPI_SUCCESS != MPI_Win_flush(next, win);
        errs += MPI_SUCCESS != MPI_Get(&in, 1, MPI_INT, next, disp, 1, MPI_INT, win);
        errs += MPI_SUCCESS != MPI_Win_flush(next, win);
        seen[t].errs += errs;
        seen[t].bad += in != out;
        {
            MPI_Aint cdisp = target_base[t] + (MPI_Aint) SLOTS * (MPI_Aint) sizeof(int);
            int one = 1, before = -1, old = -1;
            errs = MPI_SUCCESS != MPI_Fetch_and_op(&one, &before, MPI_INT, next, cdisp, MPI_SUM,
                                                   win);
            if (0 == it % 2) {
                errs += MPI_SUCCESS != MPI_Compare_and_swap(&out, &out, &old, MPI_INT, next,
                                                            disp, win);
            }
            errs += MPI_SUCCESS != MPI_Win_flush(next, win);
            seen[t].errs += errs;
            seen[t].bad += before != it || (0 == it % 2 && old != out);
        }
    }
    return NULL;
}

/* Attach and detach a spare region until the accesses end. */
static void *churn(void *arg)
{
    static char spare[REGION] __attribute__((aligned(REGION)));
    (void) arg;
    do {  /* (at least once, however the threads were scheduled) */
        TU_MPI(MPI_Win_attach(win, spare, REGION));
        TU_MPI(MPI_Win_detach(win, spare));
        sched_yield();
    } while (!done);
    return NULL;
}

int main(int argc, char **argv)
{
    int provided, bad = 0;
    int *regions[MAXT];
    MPI_Aint mine[MAXT];
    pthread_t th[MAXT], churner;

    nt = (int) tu_opt_long(argc, argv, "-t", 4);
    iters = (int) tu_opt_long(argc, argv, "-i", 20000);
    if (nt < 1 || nt > MAXT) nt = 4;
    MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
    if (provided < MPI_THREAD_MULTIPLE) {
        fprintf(stderr, "dyn_regions_mt: MPI_THREAD_MULTIPLE not provided (%d)\n", provided);
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &nprocs);
    next = (rank + 1) % nprocs;
    prev = (rank + nprocs - 1) % nprocs;
    if (tu_slow_transport() && iters > 200) iters = 200;

    TU_MPI(MPI_Win_create_dynamic(MPI_INFO_NULL, MPI_COMM_WORLD, &win));
    TU_MPI(MPI_Win_set_errhandler(win, MPI_ERRORS_RETURN));
    for (int t = 0; t < nt; t++) {
        TU_CHECK(0 == posix_memalign((void **) &regions[t], REGION, REGION), "posix_memalign");
        memset(regions[t], 0, REGION);
        TU_MPI(MPI_Win_attach(win, regions[t], REGION));
        TU_MPI(MPI_Get_address(regions[t], &mine[t]));
    }
    MPI_Sendrecv(mine, nt, MPI_AINT, prev, 0, target_base, nt, MPI_AINT, next, 0,
                 MPI_COMM_WORLD, MPI_STATUS_IGNORE);

    TU_MPI(MPI_Win_lock_all(0, win));
    pthread_create(&churner, NULL, churn, NULL);
    for (int t = 1; t < nt; t++) pthread_create(&th[t], NULL, accesses, (void *) (intptr_t) t);
    accesses((void *) 0);
    for (int t = 1; t < nt; t++) pthread_join(th[t], NULL);
    TU_MPI(MPI_Win_unlock_all(win));
    MPI_Barrier(MPI_COMM_WORLD);  /* (everyone's accesses are done: stop churning) */
    done = 1;
    pthread_join(churner, NULL);

    for (int t = 0; t < nt; t++) {
        TU_CHECK(0 == seen[t].errs, "thread %d: %d calls failed", t, seen[t].errs);
        TU_CHECK(0 == seen[t].bad, "thread %d: %d of %d iterations read back another value",
                 t, seen[t].bad, iters);
    }
    /* the target's view: slot s of region t holds thread t's last value for s */
    for (int t = 0; t < nt; t++) {
        for (int s = 0; s < SLOTS; s++) {
            int last = iters - 1 < s ? -1 : s + SLOTS * ((iters - 1 - s) / SLOTS);
            int want = last >= 0 ? val(prev, t, last) : 0;
            bad += regions[t][s] != want;
        }
        bad += regions[t][SLOTS] != iters;  /* the counter */
        for (int s = SLOTS + 1; s < REGION / (int) sizeof(int); s++) bad += regions[t][s] != 0;
    }
    TU_CHECK(0 == bad, "rank %d: %d wrong ints in its regions", rank, bad);

    for (int t = 0; t < nt; t++) {
        TU_MPI(MPI_Win_detach(win, regions[t]));
    }
    TU_MPI(MPI_Win_free(&win));
    for (int t = 0; t < nt; t++) free(regions[t]);
    bad = tu_finish("dyn_regions_mt");
    MPI_Finalize();
    return bad;
}
