/* Request-based RMA freed right away: MPI_Rput / MPI_Rget / MPI_Raccumulate
 * followed at once by MPI_Request_free (MPI lets a program free an active
 * request; the operation still completes, and a flush completes it), from
 * several threads at once, so that operations complete (in whichever thread
 * progresses them) while their requests are being freed, and freed requests
 * are reused by other threads' new operations.
 *
 * NT threads per process (MPI_THREAD_MULTIPLE; one lock_all epoch opened by
 * the main thread), each thread on its own slots at target
 * (rank + 1 + t) % nprocs, per iteration:
 *   - MPI_Rput of a new block to put-slot it % DEPTH, then MPI_Request_free;
 *   - MPI_Raccumulate(MPI_SUM of 1) to its counters, then MPI_Request_free;
 *   - MPI_Rget of a fixed pattern block into buffer it % DEPTH, then
 *     MPI_Request_free;
 *   - every 4th iteration, MPI_Rget of the pattern + MPI_Wait, checked right
 *     after the wait (a request completed by somebody else's stale
 *     completion would show as data not there yet);
 *   - every DEPTH iterations MPI_Win_flush(target), then the freed MPI_Rget
 *     buffers must hold the pattern, and an MPI_Get (+ flush) of the put slots
 *     must return the blocks just put.
 * After the threads are joined every target checks the counters (exact) and
 * the put slots (last blocks).
 *
 * Usage: rreq_free [-i iters] [--no-direct] (default 400 per thread; 150
 * under UCX_TLS=tcp).  --no-direct: osc/ucxx's internal setting direct=0 (tu_tune) (under shared
 * memory requests otherwise complete at once, through loads and stores).
 * Watchdog 120 s.  Flavors: create, allocate, dynamic. */
#include "testutil.h"
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <unistd.h>

#define NT 4
#define BLK 16
#define DEPTH 8

static int rank, nprocs, iters;
static tu_win_t w;

/* window layout (ints): [pattern BLK] then per (origin, thread):
 * [DEPTH put slots of BLK] [BLK counters] */
#define PER_THREAD (DEPTH * BLK + BLK)
static inline MPI_Aint put_slot(int o, int t, int k)
{
    return BLK + ((MPI_Aint) o * NT + t) * PER_THREAD + (MPI_Aint) k * BLK;
}
static inline MPI_Aint ctr_slot(int o, int t) { return put_slot(o, t, DEPTH); }
static inline int pattern(int owner, int i) { return owner * 1000003 + i * 7 + 11; }
static inline int val(int o, int t, int it, int i)
{
    return (int) ((((uint32_t) o * 7919u + t * 104729u + it * 131u + i) * 2654435761u) >> 1);
}

static void *thread_main(void *arg)
{
    int t = (int) (intptr_t) arg, target = (rank + 1 + t) % nprocs;
    int put[DEPTH][BLK], got[DEPTH][BLK], chk[BLK], back[DEPTH][BLK], ones[BLK];
    int bad_get = 0, bad_wait = 0, bad_put = 0;
    for (int i = 0; i < BLK; i++) ones[i] = 1;
    for (int it = 0; it < iters; it++) {
        int k = it % DEPTH;
        MPI_Request r;
        for (int i = 0; i < BLK; i++) put[k][i] = val(rank, t, it, i);
        memset(got[k], 0, sizeof(got[k]));
        TU_MPI(MPI_Rput(put[k], BLK, MPI_INT, target, tu_disp(&w, target, put_slot(rank, t, k)),
                        BLK, MPI_INT, w.win, &r));
        TU_MPI(MPI_Request_free(&r));
        TU_MPI(MPI_Raccumulate(ones, BLK, MPI_INT, target, tu_disp(&w, target, ctr_slot(rank, t)),
                               BLK, MPI_INT, MPI_SUM, w.win, &r));
        TU_MPI(MPI_Request_free(&r));
        TU_MPI(MPI_Rget(got[k], BLK, MPI_INT, target, tu_disp(&w, target, 0), BLK, MPI_INT, w.win,
                        &r));
        TU_MPI(MPI_Request_free(&r));
        if (3 == it % 4) {
            memset(chk, 0, sizeof(chk));
            TU_MPI(MPI_Rget(chk, BLK, MPI_INT, target, tu_disp(&w, target, 0), BLK, MPI_INT, w.win,
                            &r));
            TU_MPI(MPI_Wait(&r, MPI_STATUS_IGNORE));
            for (int i = 0; i < BLK; i++)
                if (chk[i] != pattern(target, i)) { bad_wait++; break; }
        }
        if (DEPTH - 1 == k) {
            TU_MPI(MPI_Win_flush(target, w.win));
            for (int j = 0; j < DEPTH; j++)
                for (int i = 0; i < BLK; i++)
                    if (got[j][i] != pattern(target, i)) { bad_get++; break; }
            memset(back, 0, sizeof(back));
            TU_MPI(MPI_Get(back, DEPTH * BLK, MPI_INT, target,
                           tu_disp(&w, target, put_slot(rank, t, 0)), DEPTH * BLK, MPI_INT, w.win));
            TU_MPI(MPI_Win_flush(target, w.win));
            for (int j = 0; j < DEPTH; j++)
                for (int i = 0; i < BLK; i++)
                    if (back[j][i] != put[j][i]) { bad_put++; break; }
        }
    }
    TU_MPI(MPI_Win_flush(target, w.win));
    TU_CHECK(0 == bad_get, "%s: thread %d: %d freed MPI_Rget buffers wrong after the flush",
             tu_flavor_names[w.flavor], t, bad_get);
    TU_CHECK(0 == bad_wait, "%s: thread %d: %d MPI_Rget buffers wrong right after MPI_Wait",
             tu_flavor_names[w.flavor], t, bad_wait);
    TU_CHECK(0 == bad_put, "%s: thread %d: %d blocks put with a freed MPI_Rput read back wrong",
             tu_flavor_names[w.flavor], t, bad_put);
    return NULL;
}

int main(int argc, char **argv)
{
    int provided;
    if (tu_opt_flag(argc, argv, "--no-direct")) tu_tune("direct=0");
    MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &nprocs);
    iters = (int) tu_opt_long(argc, argv, "-i", tu_slow_transport() ? 150 : 400);
    iters = (iters + DEPTH - 1) / DEPTH * DEPTH;
    if (provided < MPI_THREAD_MULTIPLE) {
        if (0 == rank) printf("rreq_free: MPI_THREAD_MULTIPLE not provided (%d), skipped\n", provided);
        int rc = tu_finish("rreq_free");
        MPI_Finalize();
        return rc;
    }
    tu_watchdog("rreq_free", 120);
    const MPI_Aint nints = put_slot(nprocs, 0, 0);

    for (int flavor = 0; flavor < TU_NFLAVORS; flavor++) {
        if (!tu_flavor_enabled(flavor)) continue;
        tu_win_create(flavor, nints * sizeof(int), sizeof(int), MPI_INFO_NULL, MPI_COMM_WORLD, &w);
        TU_MPI(MPI_Win_lock(MPI_LOCK_EXCLUSIVE, rank, 0, w.win));
        for (int i = 0; i < BLK; i++) ((int *) w.base)[i] = pattern(rank, i);
        TU_MPI(MPI_Win_unlock(rank, w.win));
        MPI_Barrier(MPI_COMM_WORLD);
        TU_MPI(MPI_Win_lock_all(0, w.win));
        pthread_t th[NT];
        for (int t = 0; t < NT; t++) pthread_create(&th[t], NULL, thread_main, (void *) (intptr_t) t);
        for (int t = 0; t < NT; t++) pthread_join(th[t], NULL);
        TU_MPI(MPI_Win_unlock_all(w.win));
        MPI_Barrier(MPI_COMM_WORLD);
        TU_MPI(MPI_Win_lock(MPI_LOCK_SHARED, rank, 0, w.win));
        const int *win = w.base;
        int bad_ctr = 0, bad_put = 0;
        for (int o = 0; o < nprocs; o++)
            for (int t = 0; t < NT; t++) {
                if ((o + 1 + t) % nprocs != rank) continue;  /* (o, t) targets us */
                for (int i = 0; i < BLK; i++) bad_ctr += win[ctr_slot(o, t) + i] != iters;
                for (int k = 0; k < DEPTH; k++) {
                    int last = iters - DEPTH + k;   /* iters is a multiple of DEPTH */
                    for (int i = 0; i < BLK; i++)
                        bad_put += win[put_slot(o, t, k) + i] != val(o, t, last, i);
                }
            }
        TU_CHECK(0 == bad_ctr, "%s: rank %d: %d counters wrong (MPI_Raccumulate + free)",
                 tu_flavor_names[flavor], rank, bad_ctr);
        TU_CHECK(0 == bad_put, "%s: rank %d: %d ints of the last MPI_Rput blocks wrong",
                 tu_flavor_names[flavor], rank, bad_put);
        TU_MPI(MPI_Win_unlock(rank, w.win));
        MPI_Barrier(MPI_COMM_WORLD);
        tu_win_free(&w);
    }
    alarm(0);
    int rc = tu_finish("rreq_free");
    MPI_Finalize();
    return rc;
}
