/* MPI_THREAD_MULTIPLE: 8 threads per process lock, access and unlock
 * different targets of ONE window at the same time, while other threads of
 * the same process flush.  Usage: mt_locks [-i iters] [--timeout s]
 * (default 4000 iterations per thread, 400 under UCX_TLS=tcp; watchdog
 * 120 s).  Skipped (and passed) without MPI_THREAD_MULTIPLE.
 *
 * MPI lets the threads of a process hold locks on several targets of one
 * window at once, but a process may hold only one lock per target: each
 * process keeps a pthread mutex per target, and a thread takes it around its
 * MPI_Win_lock .. MPI_Win_unlock of that target.  Thread t, iteration it:
 *   target = (rank + t + it) % nprocs  (all threads of all processes cycle
 *   over all targets, so several processes share a target's lock and one
 *   process holds up to nprocs locks on the window at a time);
 *   - it % 4 != 3: MPI_LOCK_SHARED, put a block to the thread's own slot at
 *     the target, MPI_Win_flush or MPI_Win_flush_all or MPI_Win_flush_local,
 *     get it back, flush, compare (it % 4 == 1: MPI_Rput/MPI_Rget + MPI_Wait
 *     instead); then a burst of MPI_Win_flush / MPI_Win_flush_all calls (4,
 *     16 in threads 6 and 7) while the lock is held: the process's lock list
 *     is read while other threads add and remove entries;
 *   - it % 4 == 3: MPI_LOCK_EXCLUSIVE, read-modify-write of the target's
 *     counter (get, flush, put +1): no increment may be lost.
 * After the threads are joined every target checks its counter (the number
 * of exclusive epochs on it, over all processes) and the final block of
 * every (origin, thread) slot.  A watchdog turns a hang into a failure.
 * Flavors: create, allocate, dynamic. */
#include "testutil.h"
#include <pthread.h>
#include <stdint.h>
#include <signal.h>
#include <unistd.h>

#define NT 8
#define BLK 32               /* ints per (origin, thread) slot */

static int rank, nprocs, iters;
static tu_win_t w;
static pthread_mutex_t *tmutex;   /* one per target */
static int64_t *excl_done;        /* [thread][target]: exclusive epochs done (local) */

static inline int val(int origin, int t, int it, int i)
{
    return (int) ((((uint32_t) origin * 7919u + t * 104729u + it * 131u + i) * 2654435761u) >> 1);
}

/* layout of each rank's window: [0] counter (int64), then [origin][thread][BLK] ints */
#define HDR_INTS 4
static inline MPI_Aint slot(int origin, int t) { return HDR_INTS + ((MPI_Aint) origin * NT + t) * BLK; }

static void shared_epoch(int t, int it, int target)
{
    int buf[BLK], res[BLK];
    MPI_Aint d = tu_disp(&w, target, slot(rank, t));
    for (int i = 0; i < BLK; i++) buf[i] = val(rank, t, it, i);
    memset(res, 0, sizeof(res));
    TU_MPI(MPI_Win_lock(MPI_LOCK_SHARED, target, 0, w.win));
    if (1 == it % 4) {
        MPI_Request r;
        TU_MPI(MPI_Rput(buf, BLK, MPI_INT, target, d, BLK, MPI_INT, w.win, &r));
        TU_MPI(MPI_Wait(&r, MPI_STATUS_IGNORE));
        TU_MPI(MPI_Win_flush(target, w.win));
        TU_MPI(MPI_Rget(res, BLK, MPI_INT, target, d, BLK, MPI_INT, w.win, &r));
        TU_MPI(MPI_Wait(&r, MPI_STATUS_IGNORE));
    } else {
        TU_MPI(MPI_Put(buf, BLK, MPI_INT, target, d, BLK, MPI_INT, w.win));
        switch (it % 3) {
        case 0: TU_MPI(MPI_Win_flush(target, w.win)); break;
        case 1: TU_MPI(MPI_Win_flush_all(w.win)); break;
        default: TU_MPI(MPI_Win_flush_local(target, w.win));
                 TU_MPI(MPI_Win_flush(target, w.win)); break;
        }
        TU_MPI(MPI_Get(res, BLK, MPI_INT, target, d, BLK, MPI_INT, w.win));
        TU_MPI(MPI_Win_flush(target, w.win));
    }
    {
        /* a burst of flushes while the other threads lock and unlock */
        for (int k = 0; k < (t >= 6 ? 16 : 4); k++) {
            if (k & 1) TU_MPI(MPI_Win_flush_all(w.win));
            else TU_MPI(MPI_Win_flush(target, w.win));
        }
    }
    TU_MPI(MPI_Win_unlock(target, w.win));
    int bad = 0;
    for (int i = 0; i < BLK; i++) if (res[i] != buf[i]) bad++;
    TU_CHECK(0 == bad, "%s: thread %d iteration %d target %d: %d ints read back wrong",
             tu_flavor_names[w.flavor], t, it, target, bad);
}

static void exclusive_epoch(int t, int target)
{
    int64_t c = -1;
    MPI_Aint d = tu_disp(&w, target, 0);
    TU_MPI(MPI_Win_lock(MPI_LOCK_EXCLUSIVE, target, 0, w.win));
    TU_MPI(MPI_Get(&c, 1, MPI_INT64_T, target, d, 1, MPI_INT64_T, w.win));
    TU_MPI(MPI_Win_flush(target, w.win));
    c++;
    TU_MPI(MPI_Put(&c, 1, MPI_INT64_T, target, d, 1, MPI_INT64_T, w.win));
    TU_MPI(MPI_Win_unlock(target, w.win));
    excl_done[t * nprocs + target]++;
}

static void *thread_main(void *arg)
{
    int t = (int) (intptr_t) arg;
    for (int it = 0; it < iters; it++) {
        int target = (rank + t + it) % nprocs;
        pthread_mutex_lock(&tmutex[target]);
        if (3 == it % 4) exclusive_epoch(t, target);
        else shared_epoch(t, it, target);
        pthread_mutex_unlock(&tmutex[target]);
    }
    return NULL;
}

int main(int argc, char **argv)
{
    int provided;
    MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &nprocs);
    iters = (int) tu_opt_long(argc, argv, "-i", tu_slow_transport() ? 400 : 4000);
    if (provided < MPI_THREAD_MULTIPLE) {
        if (0 == rank) printf("mt_locks: MPI_THREAD_MULTIPLE not provided (%d), skipped\n", provided);
        int rc = tu_finish("mt_locks");
        MPI_Finalize();
        return rc;
    }
    tu_watchdog("mt_locks", (unsigned) tu_opt_long(argc, argv, "--timeout", 120));

    tmutex = malloc(nprocs * sizeof(*tmutex));
    for (int i = 0; i < nprocs; i++) pthread_mutex_init(&tmutex[i], NULL);
    excl_done = calloc((size_t) NT * nprocs, sizeof(*excl_done));
    const MPI_Aint nints = slot(nprocs, 0);

    for (int flavor = 0; flavor < TU_NFLAVORS; flavor++) {
        if (!tu_flavor_enabled(flavor)) continue;
        memset(excl_done, 0, (size_t) NT * nprocs * sizeof(*excl_done));
        tu_win_create(flavor, nints * sizeof(int), sizeof(int), MPI_INFO_NULL, MPI_COMM_WORLD, &w);

        pthread_t th[NT];
        for (int t = 0; t < NT; t++) pthread_create(&th[t], NULL, thread_main, (void *) (intptr_t) t);
        for (int t = 0; t < NT; t++) pthread_join(th[t], NULL);
        MPI_Barrier(MPI_COMM_WORLD);

        /* expected exclusive increments per target, summed over processes */
        int64_t *mine = calloc(nprocs, sizeof(int64_t)), *all = calloc(nprocs, sizeof(int64_t));
        for (int t = 0; t < NT; t++)
            for (int r = 0; r < nprocs; r++) mine[r] += excl_done[t * nprocs + r];
        MPI_Allreduce(mine, all, nprocs, MPI_INT64_T, MPI_SUM, MPI_COMM_WORLD);

        TU_MPI(MPI_Win_lock(MPI_LOCK_EXCLUSIVE, rank, 0, w.win));
        int64_t counter;
        memcpy(&counter, w.base, sizeof(counter));
        TU_CHECK(counter == all[rank], "%s: rank %d counter %lld, expected %lld exclusive epochs",
                 tu_flavor_names[flavor], rank, (long long) counter, (long long) all[rank]);
        int bad = 0, *win = w.base;
        for (int o = 0; o < nprocs; o++)
            for (int t = 0; t < NT; t++) {
                /* last shared iteration of (o, t) on this rank */
                int last = -1;
                for (int it = 0; it < iters; it++)
                    if ((o + t + it) % nprocs == rank && 3 != it % 4) last = it;
                for (int i = 0; i < BLK; i++) {
                    int exp = last < 0 ? 0 : val(o, t, last, i);
                    if (win[slot(o, t) + i] != exp) bad++;
                }
            }
        TU_CHECK(0 == bad, "%s: %d wrong ints in the final window of rank %d",
                 tu_flavor_names[flavor], bad, rank);
        TU_MPI(MPI_Win_unlock(rank, w.win));
        MPI_Barrier(MPI_COMM_WORLD);
        tu_win_free(&w);
        free(mine);
        free(all);
        if (0 == rank) printf("mt_locks: %s done\n", tu_flavor_names[flavor]);
    }
    alarm(0);
    int rc = tu_finish("mt_locks");
    MPI_Finalize();
    return rc;
}
