/* MPI_THREAD_MULTIPLE: 4 pthreads per rank doing RMA at the same time.
 * Usage: threads [iters] (default 40).  Skipped (and passed) only if the
 * library cannot provide MPI_THREAD_MULTIPLE.
 * A. One window, lock_all opened by the main thread.  Thread t owns region t
 *    of every rank's slot: each iteration it puts a new block to the next
 *    rank, flushes, gets it back (alternating MPI_Get + flush and MPI_Rget +
 *    MPI_Wait) and checks it.  After the join every target checks the final
 *    blocks of all threads of the previous rank (and zeros elsewhere).
 * B. One window per thread (created beforehand by the main thread): each
 *    thread runs exclusive lock / put / unlock and shared lock / get / unlock
 *    epochs on its own window, checking each value read back, then every
 *    target checks the final contents of the 4 windows. */
#include "testutil.h"
#include <pthread.h>
#include <stdint.h>

#define NT 4
#define BLK 64   /* ints per thread block */

static int rank, nprocs, iters = 40;
static tu_win_t shared_win, own_win[NT];

static inline int val(int origin, int t, int it, int i)
{
    return (int) (((uint32_t) origin * 7919u + t * 104729u + it * 131u + i) * 2654435761u >> 1);
}

/* slot layout: [origin][thread][BLK] */
static inline MPI_Aint slot(int origin, int t) { return ((MPI_Aint) origin * NT + t) * BLK; }

static void *thread_a(void *arg)
{
    int t = (int) (intptr_t) arg, next = (rank + 1) % nprocs;
    int buf[BLK], res[BLK];
    tu_win_t *w = &shared_win;
    for (int it = 0; it < iters; it++) {
        for (int i = 0; i < BLK; i++) buf[i] = val(rank, t, it, i);
        memset(res, 0, sizeof(res));
        TU_MPI(MPI_Put(buf, BLK, MPI_INT, next, tu_disp(w, next, slot(rank, t)), BLK, MPI_INT, w->win));
        TU_MPI(MPI_Win_flush(next, w->win));
        if (it % 2) {
            MPI_Request r;
            TU_MPI(MPI_Rget(res, BLK, MPI_INT, next, tu_disp(w, next, slot(rank, t)), BLK, MPI_INT,
                            w->win, &r));
            TU_MPI(MPI_Wait(&r, MPI_STATUS_IGNORE));
        } else {
            TU_MPI(MPI_Get(res, BLK, MPI_INT, next, tu_disp(w, next, slot(rank, t)), BLK, MPI_INT,
                           w->win));
            TU_MPI(MPI_Win_flush(next, w->win));
        }
        int bad = 0;
        for (int i = 0; i < BLK; i++) if (res[i] != buf[i]) bad++;
        TU_CHECK(0 == bad, "A (%s): thread %d iteration %d: %d ints read back wrong",
                 tu_flavor_names[w->flavor], t, it, bad);
    }
    return NULL;
}

static void *thread_b(void *arg)
{
    int t = (int) (intptr_t) arg, next = (rank + 1) % nprocs;
    int buf[BLK], res[BLK];
    tu_win_t *w = &own_win[t];
    for (int it = 0; it < iters; it++) {
        for (int i = 0; i < BLK; i++) buf[i] = val(rank, t + NT, it, i);
        TU_MPI(MPI_Win_lock(MPI_LOCK_EXCLUSIVE, next, 0, w->win));
        TU_MPI(MPI_Put(buf, BLK, MPI_INT, next, tu_disp(w, next, slot(rank, 0)), BLK, MPI_INT, w->win));
        TU_MPI(MPI_Win_unlock(next, w->win));
        memset(res, 0, sizeof(res));
        TU_MPI(MPI_Win_lock(MPI_LOCK_SHARED, next, 0, w->win));
        TU_MPI(MPI_Get(res, BLK, MPI_INT, next, tu_disp(w, next, slot(rank, 0)), BLK, MPI_INT, w->win));
        TU_MPI(MPI_Win_unlock(next, w->win));
        int bad = 0;
        for (int i = 0; i < BLK; i++) if (res[i] != buf[i]) bad++;
        TU_CHECK(0 == bad, "B (%s): thread %d iteration %d: %d ints read back wrong",
                 tu_flavor_names[w->flavor], t, it, bad);
    }
    return NULL;
}

static void run_threads(void *(*fn)(void *))
{
    pthread_t th[NT];
    for (int t = 0; t < NT; t++) pthread_create(&th[t], NULL, fn, (void *) (intptr_t) t);
    for (int t = 0; t < NT; t++) pthread_join(th[t], NULL);
}

int main(int argc, char **argv)
{
    int provided;
    MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &nprocs);
    if (argc > 1) iters = atoi(argv[1]);
    if (provided < MPI_THREAD_MULTIPLE) {
        if (0 == rank) printf("threads: MPI_THREAD_MULTIPLE not provided (%d), skipped\n", provided);
        int rc = tu_finish("threads");
        MPI_Finalize();
        return rc;
    }
    int prev = (rank + nprocs - 1) % nprocs;
    const MPI_Aint nints = slot(nprocs, 0);

    for (int flavor = 0; flavor < TU_NFLAVORS; flavor++) {
        if (!tu_flavor_enabled(flavor)) continue;

        /* ---- A: one window, 4 threads ---- */
        tu_win_create(flavor, nints * sizeof(int), sizeof(int), MPI_INFO_NULL, MPI_COMM_WORLD,
                      &shared_win);
        TU_MPI(MPI_Win_lock_all(0, shared_win.win));
        run_threads(thread_a);
        TU_MPI(MPI_Win_unlock_all(shared_win.win));
        MPI_Barrier(MPI_COMM_WORLD);
        TU_MPI(MPI_Win_lock(MPI_LOCK_SHARED, rank, 0, shared_win.win));
        {
            int *win = shared_win.base, bad = 0;
            for (int o = 0; o < nprocs; o++)
                for (int t = 0; t < NT; t++)
                    for (int i = 0; i < BLK; i++) {
                        int exp = o == prev ? val(prev, t, iters - 1, i) : 0;
                        if (win[slot(o, t) + i] != exp) bad++;
                    }
            TU_CHECK(0 == bad, "A (%s): %d wrong ints in the final window of rank %d",
                     tu_flavor_names[flavor], bad, rank);
        }
        TU_MPI(MPI_Win_unlock(rank, shared_win.win));
        MPI_Barrier(MPI_COMM_WORLD);
        tu_win_free(&shared_win);

        /* ---- B: one window per thread ---- */
        for (int t = 0; t < NT; t++)
            tu_win_create(flavor, nints * sizeof(int), sizeof(int), MPI_INFO_NULL, MPI_COMM_WORLD,
                          &own_win[t]);
        run_threads(thread_b);
        MPI_Barrier(MPI_COMM_WORLD);
        for (int t = 0; t < NT; t++) {
            TU_MPI(MPI_Win_lock(MPI_LOCK_SHARED, rank, 0, own_win[t].win));
            int *win = own_win[t].base, bad = 0;
            for (int o = 0; o < nprocs; o++)
                for (int i = 0; i < BLK; i++) {
                    int exp = o == prev ? val(prev, t + NT, iters - 1, i) : 0;
                    if (win[slot(o, 0) + i] != exp) bad++;
                }
            TU_CHECK(0 == bad, "B (%s): %d wrong ints in the final window %d of rank %d",
                     tu_flavor_names[flavor], bad, t, rank);
            TU_MPI(MPI_Win_unlock(rank, own_win[t].win));
        }
        MPI_Barrier(MPI_COMM_WORLD);
        for (int t = 0; t < NT; t++) tu_win_free(&own_win[t]);
    }
    int rc = tu_finish("threads");
    MPI_Finalize();
    return rc;
}
