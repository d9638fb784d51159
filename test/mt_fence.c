/* mt_fence: fence epochs whose operations come from several threads at once
 * (MPI_THREAD_MULTIPLE; RMA-MT's fence pattern).  Usage: mt_fence [-t T]
 * [-e EPOCHS]  (T threads per process, default 4; EPOCHS default 200, 50
 * under UCX_TLS=tcp).
 *
 * For every window flavor, each epoch: the main thread fences, then the T
 * threads (the main thread is thread 0) each
 *   - put BLK words of this epoch's pattern into their slot of the next
 *     rank's window,
 *   - get BLK words from their slot of the previous rank's read-only area,
 *     which that rank rewrote (local stores) before the fence that opened
 *     this epoch,
 *   - accumulate 1 (MPI_SUM) into a counter on every rank, and
 *     fetch_and_op 1 into a second one on the next rank;
 * then the main thread fences again and every rank checks its slots, the
 * counters (cumulative: epochs * T * nprocs and epochs * T) and what each
 * thread got.  Between epochs the fence may be the same call that closes
 * one and opens the next (two in three epochs) or a closing fence with
 * MPI_MODE_NOSUCCEED followed by an opening one with MPI_MODE_NOPRECEDE.
 * After the last epoch (MPI_MODE_NOSUCCEED): a put from each thread returns
 * MPI_ERR_RMA_SYNC and changes nothing; MPI_Win_lock after a fence epoch
 * that was used is MPI_ERR_RMA_SYNC, after an unused one it works. */
#include "testutil.h"
#include <pthread.h>
#include <stdint.h>

#define BLK 16
#define MAXT 16

static int rank, nprocs, next, prev, T = 4, epochs;
static tu_win_t W;
static pthread_barrier_t bar;
static volatile int epoch, quit;
/* origin buffers: MPI may read or write them until the fence that closes
 * the epoch, after each thread's calls returned */
static int64_t got[MAXT][BLK], sent[MAXT][BLK], fetched[MAXT];
static const int64_t one = 1;
static int errs_sync[MAXT];

/* layout (int64): [0] acc counter, [1] fetch_and_op counter, then T put
 * slots, then T read-only slots */
#define CNT_ACC 0
#define CNT_FOP 1
#define PUT_SLOT(t) (2 + (MPI_Aint) (t) * BLK)
#define RO_SLOT(t) (2 + (MPI_Aint) (T + (t)) * BLK)

static int64_t pat(int r, int e, int t, int i)
{
    return ((int64_t) r << 40) ^ ((int64_t) e << 20) ^ ((int64_t) t << 10) ^ i;
}

static void thread_epoch(int t, int e)
{
    int64_t *buf = sent[t];
    for (int i = 0; i < BLK; i++) buf[i] = pat(rank, e, t, i);
    TU_MPI(MPI_Put(buf, BLK, MPI_INT64_T, next, tu_disp(&W, next, PUT_SLOT(t)), BLK, MPI_INT64_T,
                   W.win));
    TU_MPI(MPI_Get(got[t], BLK, MPI_INT64_T, prev, tu_disp(&W, prev, RO_SLOT(t)), BLK,
                   MPI_INT64_T, W.win));
    for (int r = 0; r < nprocs; r++) {
        TU_MPI(MPI_Accumulate(&one, 1, MPI_INT64_T, r, tu_disp(&W, r, CNT_ACC), 1, MPI_INT64_T,
                              MPI_SUM, W.win));
    }
    TU_MPI(MPI_Fetch_and_op(&one, &fetched[t], MPI_INT64_T, next, tu_disp(&W, next, CNT_FOP),
                            MPI_SUM, W.win));
}

static void *worker(void *arg)
{
    int t = (int) (intptr_t) arg;
    for (;;) {
        pthread_barrier_wait(&bar);           /* the epoch is open (or quit) */
        if (quit) break;
        if (epoch >= 0) {
            thread_epoch(t, epoch);
        } else {                              /* after the last fence */
            int64_t v = -1;
            int rc = MPI_Put(&v, 1, MPI_INT64_T, next, tu_disp(&W, next, PUT_SLOT(t)), 1,
                             MPI_INT64_T, W.win);
            errs_sync[t] = MPI_ERR_RMA_SYNC == tu_err_class(rc) ? 0 : 1;
        }
        pthread_barrier_wait(&bar);           /* done: the main thread fences */
    }
    return NULL;
}

static void check_epoch(int e)
{
    int64_t *m = W.base;
    int bad = 0;
    for (int t = 0; t < T; t++) {
        for (int i = 0; i < BLK; i++) {
            bad += m[PUT_SLOT(t) + i] != pat(prev, e, t, i);
            bad += got[t][i] != pat(prev, e, T + t, i);
        }
    }
    TU_CHECK(0 == bad, "%s epoch %d: %d words wrong (put slots, gets)", tu_flavor_names[W.flavor],
             e, bad);
    /* the next rank's counter went up by exactly our T threads' adds this
     * epoch: they fetched T distinct values in [e*T, (e+1)*T) */
    uint64_t seen = 0;
    for (int t = 0; t < T; t++) {
        int64_t k = fetched[t] - (int64_t) e * T;
        if (k >= 0 && k < T) seen |= 1ull << k;
    }
    TU_CHECK(seen == (1ull << T) - 1, "%s epoch %d: fetch_and_op results "
             "not a permutation of %d..%d (first %lld)", tu_flavor_names[W.flavor], e, e * T,
             (e + 1) * T - 1, (long long) fetched[0]);
    TU_CHECK(m[CNT_ACC] == (int64_t) (e + 1) * T * nprocs && m[CNT_FOP] == (int64_t) (e + 1) * T,
             "%s epoch %d: counters %lld / %lld, expected %lld / %lld", tu_flavor_names[W.flavor],
             e, (long long) m[CNT_ACC], (long long) m[CNT_FOP], (long long) (e + 1) * T * nprocs,
             (long long) (e + 1) * T);
}

/* the read-only area for epoch e: local stores, made before the fence that
 * opens the epoch (the window's memory is ours between fences) */
static void write_ro(int e)
{
    int64_t *m = W.base;
    for (int t = 0; t < T; t++) {
        for (int i = 0; i < BLK; i++) m[RO_SLOT(t) + i] = pat(rank, e, T + t, i);
    }
}

static void run_flavor(int flavor)
{
    pthread_t th[MAXT];
    int rc;

    tu_win_create(flavor, (2 + 2 * (MPI_Aint) T * BLK) * sizeof(int64_t), sizeof(int64_t),
                  MPI_INFO_NULL, MPI_COMM_WORLD, &W);
    quit = 0;
    for (int t = 1; t < T; t++) pthread_create(&th[t], NULL, worker, (void *) (intptr_t) t);
    write_ro(0);
    TU_MPI(MPI_Win_fence(MPI_MODE_NOPRECEDE, W.win));
    for (int e = 0; e < epochs; e++) {
        epoch = e;
        pthread_barrier_wait(&bar);
        thread_epoch(0, e);
        pthread_barrier_wait(&bar);
        int split = 2 == e % 3;
        TU_MPI(MPI_Win_fence(split ? MPI_MODE_NOSUCCEED : 0, W.win));
        check_epoch(e);
        write_ro(e + 1);
        MPI_Barrier(MPI_COMM_WORLD);          /* everyone checked before new writes */
        if (split) {
            TU_MPI(MPI_Win_fence(MPI_MODE_NOPRECEDE, W.win));
        } else {
            TU_MPI(MPI_Win_fence(0, W.win));  /* orders write_ro before the epoch */
        }
    }
    TU_MPI(MPI_Win_fence(MPI_MODE_NOSUCCEED, W.win));

    /* no epoch now: every thread's put fails, nothing changes */
    epoch = -1;
    memset(errs_sync, 0, sizeof(errs_sync));
    pthread_barrier_wait(&bar);
    {
        int64_t v = -1;
        rc = MPI_Put(&v, 1, MPI_INT64_T, next, tu_disp(&W, next, PUT_SLOT(0)), 1, MPI_INT64_T,
                     W.win);
        errs_sync[0] = MPI_ERR_RMA_SYNC == tu_err_class(rc) ? 0 : 1;
    }
    pthread_barrier_wait(&bar);
    MPI_Barrier(MPI_COMM_WORLD);
    {
        int nbad = 0, stray = 0;
        for (int t = 0; t < T; t++) {
            nbad += errs_sync[t];
            stray += ((int64_t *) W.base)[PUT_SLOT(t)] != pat(prev, epochs - 1, t, 0);
        }
        TU_CHECK(0 == nbad && 0 == stray, "%s: after MPI_MODE_NOSUCCEED: %d of %d threads' puts "
                 "did not return MPI_ERR_RMA_SYNC, %d slots changed", tu_flavor_names[W.flavor],
                 nbad, T, stray);
    }
    quit = 1;
    pthread_barrier_wait(&bar);
    for (int t = 1; t < T; t++) pthread_join(th[t], NULL);

    /* a used fence epoch does not give way to a lock; an unused one does
     * (the second fence synchronizes: the epoch a barrier opened) */
    TU_MPI(MPI_Win_fence(0, W.win));
    TU_MPI(MPI_Win_fence(0, W.win));
    TU_MPI(MPI_Get(got[0], 1, MPI_INT64_T, next, tu_disp(&W, next, CNT_ACC), 1, MPI_INT64_T,
                   W.win));
    rc = MPI_Win_lock(MPI_LOCK_SHARED, next, 0, W.win);
    TU_CHECK(MPI_ERR_RMA_SYNC == tu_err_class(rc), "%s: MPI_Win_lock inside a used fence epoch "
             "returned %s", tu_flavor_names[W.flavor], tu_err_class_name(tu_err_class(rc)));
    if (MPI_SUCCESS == rc) MPI_Win_unlock(next, W.win);
    TU_MPI(MPI_Win_fence(0, W.win));                  /* closes it, opens an unused one */
    rc = MPI_Win_lock(MPI_LOCK_SHARED, next, 0, W.win);
    TU_CHECK(MPI_SUCCESS == rc, "%s: MPI_Win_lock after an unused fence returned %s",
             tu_flavor_names[W.flavor], tu_err_class_name(tu_err_class(rc)));
    if (MPI_SUCCESS == rc) {
        int64_t v = 0;
        TU_MPI(MPI_Get(&v, 1, MPI_INT64_T, next, tu_disp(&W, next, CNT_ACC), 1, MPI_INT64_T,
                       W.win));
        TU_MPI(MPI_Win_unlock(next, W.win));
        TU_CHECK(v == (int64_t) epochs * T * nprocs, "%s: counter read under a lock: %lld, "
                 "expected %lld", tu_flavor_names[W.flavor], (long long) v,
                 (long long) epochs * T * nprocs);
    }
    MPI_Barrier(MPI_COMM_WORLD);
    tu_win_free(&W);
}

int main(int argc, char **argv)
{
    int provided, rc;

    MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &nprocs);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    if (provided < MPI_THREAD_MULTIPLE) {
        if (0 == rank) printf("mt_fence: no MPI_THREAD_MULTIPLE (%d)\n", provided);
        MPI_Finalize();
        return 1;
    }
    T = (int) tu_opt_long(argc, argv, "-t", 4);
    if (T < 1 || T > MAXT) T = 4;
    epochs = (int) tu_opt_long(argc, argv, "-e", tu_slow_transport() ? 50 : 200);
    next = (rank + 1) % nprocs;
    prev = (rank + nprocs - 1) % nprocs;
    pthread_barrier_init(&bar, NULL, T);
    for (int f = 0; f < TU_NFLAVORS; f++) {
        if (tu_flavor_or_all(f)) run_flavor(f);
    }
    pthread_barrier_destroy(&bar);
    rc = tu_finish("mt_fence");
    MPI_Finalize();
    return rc;
}
