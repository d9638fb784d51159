/* ext_scope: the mpi_win_scope info key (mpix/mpix_ucxx.h) under
 * MPI_THREAD_MULTIPLE.  Usage: ext_scope [iters] (default 100, 30 under
 * UCX_TLS=tcp).  Skipped (and passed) only without MPI_THREAD_MULTIPLE.
 * Every rank is the origin of rank+1; for each window flavor:
 * I. Info: a window created with mpi_win_scope=thread / =process reports that
 *    value through MPI_Win_get_info; a default window reports "process" if it
 *    reports the key at all; MPI_Win_set_info(thread) is reported back.
 * A. mpi_win_scope=thread, lock_all by the main thread, 4 threads: each puts a
 *    new block to its own region of the next rank, flushes (flush / flush_all)
 *    and reads it back (Get + flush_local / Rget + Wait / Get +
 *    flush_local_all), checking every value.
 * B. Same window: thread 0 has an 8 MiB MPI_Rput in flight (not waited for)
 *    while threads 1-3 run put/flush/get cycles that must return and verify;
 *    then thread 0 waits, flushes and reads the 8 MiB back.  A second round
 *    leaves thread 0's 8 MiB MPI_Put unflushed: the main thread's
 *    MPI_Win_unlock_all must complete it (the target checks after a barrier).
 *    The cycle and transfer times are printed (information only).
 * C. mpi_win_scope=process (explicit and default): thread A puts, then a
 *    pthread barrier, thread B flushes the target (flush / flush_all) and sends
 *    a message to it; the target's main thread receives it, calls
 *    MPI_Win_sync and must see A's data in its window memory at once. */
#include "testutil.h"
#include "mpix_ucxx.h"
#include <pthread.h>
#include <stdint.h>

#define NT 4
#define BLK 256                    /* uint32 per thread region */
#define LARGE ((MPI_Aint) 8 << 20) /* bytes */
#define OFF_LARGE ((MPI_Aint) NT * BLK * 4)
#define WINSIZE (OFF_LARGE + LARGE)
#define TAG_DATA 71
#define TAG_ACK 72

static int rank, nprocs, next, prev, iters = 100;
static tu_win_t W;
static pthread_barrier_t bar, bar4;
static uint32_t *big_src[2], *big_dst;
static double cycle_time[NT], big_time;

static inline uint32_t pat(uint32_t a, uint32_t b, uint32_t i)
{
    uint32_t x = a * 0x9E3779B1u ^ (b + 1) * 0x85EBCA77u ^ (i + 7) * 0xC2B2AE3Du;
    x ^= x >> 15; x *= 0x2C1B3C6Du; x ^= x >> 12; x *= 0x297A2D39u; x ^= x >> 15;
    return x;
}

/* one put/flush/get/verify cycle of thread t on region t of the next rank */
static void cycle(int t, int it, const char *what)
{
    uint32_t buf[BLK], res[BLK];
    MPI_Aint disp = tu_disp(&W, next, (MPI_Aint) t * BLK * 4);
    for (int i = 0; i < BLK; i++) buf[i] = pat(rank * 16 + t, it, i), res[i] = ~buf[i];
    TU_MPI(MPI_Put(buf, BLK, MPI_UINT32_T, next, disp, BLK, MPI_UINT32_T, W.win));
    if (it % 2) TU_MPI(MPI_Win_flush(next, W.win));
    else TU_MPI(MPI_Win_flush_all(W.win));
    switch (it % 3) {
    case 0:
        TU_MPI(MPI_Get(res, BLK, MPI_UINT32_T, next, disp, BLK, MPI_UINT32_T, W.win));
        TU_MPI(MPI_Win_flush_local(next, W.win));
        break;
    case 1: {
        MPI_Request r;
        TU_MPI(MPI_Rget(res, BLK, MPI_UINT32_T, next, disp, BLK, MPI_UINT32_T, W.win, &r));
        TU_MPI(MPI_Wait(&r, MPI_STATUS_IGNORE));
        break;
    }
    default:
        TU_MPI(MPI_Get(res, BLK, MPI_UINT32_T, next, disp, BLK, MPI_UINT32_T, W.win));
        TU_MPI(MPI_Win_flush_local_all(W.win));
        break;
    }
    int bad = 0, first = -1;
    for (int i = 0; i < BLK; i++)
        if (res[i] != buf[i]) { if (first < 0) first = i; bad++; }
    TU_CHECK(0 == bad, "%s (%s): thread %d iteration %d: %d of %d words read back wrong (first %d: "
             "%08x, expected %08x)", what, tu_flavor_names[W.flavor], t, it, bad, BLK, first,
             first < 0 ? 0 : res[first], first < 0 ? 0 : buf[first]);
}

static void *thread_a(void *arg)
{
    int t = (int) (intptr_t) arg;
    for (int it = 0; it < iters; it++) cycle(t, it, "A thread scope");
    return NULL;
}

/* B: thread 0 has the large transfer in flight while 1..3 cycle */
static int b_round;
static void *thread_b(void *arg)
{
    int t = (int) (intptr_t) arg;
    int n = iters < 20 ? iters : 20;
    if (0 == t) {
        MPI_Request r = MPI_REQUEST_NULL;
        double t0 = MPI_Wtime();
        if (0 == b_round)
            TU_MPI(MPI_Rput(big_src[0], (int) (LARGE / 4), MPI_UINT32_T, next,
                            tu_disp(&W, next, OFF_LARGE), (int) (LARGE / 4), MPI_UINT32_T, W.win, &r));
        else
            TU_MPI(MPI_Put(big_src[1], (int) (LARGE / 4), MPI_UINT32_T, next,
                           tu_disp(&W, next, OFF_LARGE), (int) (LARGE / 4), MPI_UINT32_T, W.win));
        pthread_barrier_wait(&bar4);   /* the others start now */
        pthread_barrier_wait(&bar4);   /* ... and are done */
        if (0 == b_round) {
            TU_MPI(MPI_Wait(&r, MPI_STATUS_IGNORE));
            TU_MPI(MPI_Win_flush(next, W.win));
            big_time = MPI_Wtime() - t0;
            memset(big_dst, 0, LARGE);
            TU_MPI(MPI_Get(big_dst, (int) (LARGE / 4), MPI_UINT32_T, next,
                           tu_disp(&W, next, OFF_LARGE), (int) (LARGE / 4), MPI_UINT32_T, W.win));
            TU_MPI(MPI_Win_flush(next, W.win));
            long bad = 0, first = -1;
            for (long i = 0; i < LARGE / 4; i++)
                if (big_dst[i] != big_src[0][i]) { if (first < 0) first = i; bad++; }
            TU_CHECK(0 == bad, "B (%s): 8 MiB Rput read back: %ld words wrong (first at %ld)",
                     tu_flavor_names[W.flavor], bad, first);
        }
        /* round 1: the Put stays unflushed; unlock_all must complete it */
    } else {
        pthread_barrier_wait(&bar4);
        double t0 = MPI_Wtime();
        for (int it = 0; it < n; it++) cycle(t, 1000 + b_round * 100 + it, "B small beside large");
        cycle_time[t] = (MPI_Wtime() - t0) / n;
        pthread_barrier_wait(&bar4);
    }
    return NULL;
}

/* C: process scope, A puts, B flushes and notifies the target */
static void *thread_c(void *arg)
{
    int who = (int) (intptr_t) arg;
    uint32_t buf[BLK];
    MPI_Aint disp = tu_disp(&W, next, 0);
    for (int it = 0; it < iters; it++) {
        if (0 == who) {
            for (int i = 0; i < BLK; i++) buf[i] = pat(rank + 1000, it, i);
            /* several pieces so the data is more than one operation */
            for (int p = 0; p < 4; p++)
                TU_MPI(MPI_Put(buf + p * (BLK / 4), BLK / 4, MPI_UINT32_T, next,
                               disp + p * (BLK / 4) * 4, BLK / 4, MPI_UINT32_T, W.win));
            pthread_barrier_wait(&bar);
            pthread_barrier_wait(&bar);   /* B got the ack: next round may overwrite */
        } else {
            int ack = -1;
            pthread_barrier_wait(&bar);
            if (it % 2) TU_MPI(MPI_Win_flush(next, W.win));
            else TU_MPI(MPI_Win_flush_all(W.win));
            TU_MPI(MPI_Send(&it, 1, MPI_INT, next, TAG_DATA, MPI_COMM_WORLD));
            TU_MPI(MPI_Recv(&ack, 1, MPI_INT, next, TAG_ACK, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
            TU_CHECK(ack == it, "C: ack %d for round %d", ack, it);
            pthread_barrier_wait(&bar);
        }
    }
    return NULL;
}

/* C target side (main thread): check prev's data on each notification */
static void target_c(const char *what)
{
    volatile uint32_t *mem = W.base;
    for (int it = 0; it < iters; it++) {
        int r = -1, bad = 0, first = -1;
        TU_MPI(MPI_Recv(&r, 1, MPI_INT, prev, TAG_DATA, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
        TU_CHECK(r == it, "C: notification %d in round %d", r, it);
        TU_MPI(MPI_Win_sync(W.win));
        for (int i = 0; i < BLK; i++)
            if (mem[i] != pat(prev + 1000, it, i)) { if (first < 0) first = i; bad++; }
        TU_CHECK(0 == bad, "C %s (%s): round %d: after thread B's flush %d of %d words put by "
                 "thread A are not visible at the target (first %d: %08x, expected %08x)", what,
                 tu_flavor_names[W.flavor], it, bad, BLK, first, first < 0 ? 0 : mem[first],
                 first < 0 ? 0 : pat(prev + 1000, it, first));
        TU_MPI(MPI_Send(&it, 1, MPI_INT, prev, TAG_ACK, MPI_COMM_WORLD));
    }
}

static void run_threads(int n, void *(*fn)(void *))
{
    pthread_t th[NT];
    for (int t = 0; t < n; t++) pthread_create(&th[t], NULL, fn, (void *) (intptr_t) t);
    for (int t = 0; t < n; t++) pthread_join(th[t], NULL);
}

static void check_scope_info(MPI_Win win, const char *expect, const char *what)
{
    char v[MPI_MAX_INFO_VAL + 1];
    int flag = tu_win_info_get(win, "mpi_win_scope", v, sizeof(v));
    if (NULL == expect) {   /* default window: absent or "process" */
        TU_CHECK(!flag || 0 == strcmp(v, "process"), "%s: MPI_Win_get_info mpi_win_scope = '%s'",
                 what, v);
    } else {
        TU_CHECK(flag && 0 == strcmp(v, expect), "%s: MPI_Win_get_info mpi_win_scope = '%s' "
                 "(set: %d), expected '%s'", what, v, flag, expect);
    }
}

int main(int argc, char **argv)
{
    int provided, rc;
    MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &nprocs);
    iters = tu_slow_transport() ? 30 : 100;
    if (argc > 1) iters = atoi(argv[1]);
    if (provided < MPI_THREAD_MULTIPLE) {
        if (0 == rank) printf("ext_scope: MPI_THREAD_MULTIPLE not provided (%d), skipped\n", provided);
        rc = tu_finish("ext_scope");
        MPI_Finalize();
        return rc;
    }
    next = (rank + 1) % nprocs;
    prev = (rank + nprocs - 1) % nprocs;
    pthread_barrier_init(&bar, NULL, 2);
    pthread_barrier_init(&bar4, NULL, NT);
    for (int k = 0; k < 2; k++) {
        big_src[k] = malloc(LARGE);
        for (long i = 0; i < LARGE / 4; i++) big_src[k][i] = pat(rank + 77, k, (uint32_t) i);
    }
    big_dst = malloc(LARGE);
    MPI_Info thread_info = tu_info_new("mpi_win_scope", "thread", NULL);
    MPI_Info process_info = tu_info_new("mpi_win_scope", "process", NULL);

    for (int flavor = 0; flavor < TU_NFLAVORS; flavor++) {
        if (!tu_flavor_enabled(flavor)) continue;
        char what[64];

        /* ---- I: info reports ---- */
        tu_win_create(flavor, 64, 1, MPI_INFO_NULL, MPI_COMM_WORLD, &W);
        snprintf(what, sizeof(what), "I (%s) default window", tu_flavor_names[flavor]);
        check_scope_info(W.win, NULL, what);
        TU_MPI(MPI_Win_set_info(W.win, thread_info));
        snprintf(what, sizeof(what), "I (%s) after MPI_Win_set_info(thread)", tu_flavor_names[flavor]);
        check_scope_info(W.win, "thread", what);
        tu_win_free(&W);

        /* ---- A and B: thread scope ---- */
        tu_win_create(flavor, WINSIZE, 1, thread_info, MPI_COMM_WORLD, &W);
        snprintf(what, sizeof(what), "I (%s) created with thread", tu_flavor_names[flavor]);
        check_scope_info(W.win, "thread", what);
        TU_MPI(MPI_Win_lock_all(0, W.win));
        double ta = MPI_Wtime();
        run_threads(NT, thread_a);
        ta = MPI_Wtime() - ta;
        double tb = MPI_Wtime();
        for (b_round = 0; b_round < 2; b_round++) {
            memset(cycle_time, 0, sizeof(cycle_time));
            run_threads(NT, thread_b);
            if (0 == rank && 0 == b_round)
                printf("B (%s): small put/flush/get cycle %.1f/%.1f/%.1f us beside an 8 MiB Rput "
                       "completed in %.1f us\n", tu_flavor_names[flavor], cycle_time[1] * 1e6,
                       cycle_time[2] * 1e6, cycle_time[3] * 1e6, big_time * 1e6);
            if (1 == b_round) TU_MPI(MPI_Win_unlock_all(W.win));
        }
        MPI_Barrier(MPI_COMM_WORLD);
        {
            /* the final blocks of A/B and the unflushed 8 MiB put of round 1 */
            uint32_t *mem = W.base;
            long bad = 0, first = -1;
            TU_MPI(MPI_Win_lock(MPI_LOCK_SHARED, rank, 0, W.win));
            for (long i = 0; i < LARGE / 4; i++)
                if (mem[OFF_LARGE / 4 + i] != pat(prev + 77, 1, (uint32_t) i)) {
                    if (first < 0) first = i;
                    bad++;
                }
            TU_CHECK(0 == bad, "B (%s): thread 0's unflushed 8 MiB MPI_Put not complete at the "
                     "target after the main thread's MPI_Win_unlock_all: %ld words wrong (first %ld)",
                     tu_flavor_names[flavor], bad, first);
            int n = iters < 20 ? iters : 20;
            for (int t = 1; t < NT; t++) {
                int it = 1000 + 100 + n - 1;
                bad = 0;
                for (int i = 0; i < BLK; i++) if (mem[t * BLK + i] != pat(prev * 16 + t, it, i)) bad++;
                TU_CHECK(0 == bad, "B (%s): final block of thread %d: %ld words wrong",
                         tu_flavor_names[flavor], t, bad);
            }
            bad = 0;
            for (int i = 0; i < BLK; i++) if (mem[i] != pat(prev * 16, iters - 1, i)) bad++;
            TU_CHECK(0 == bad, "A (%s): final block of thread 0: %ld words wrong",
                     tu_flavor_names[flavor], bad);
            TU_MPI(MPI_Win_unlock(rank, W.win));
        }
        MPI_Barrier(MPI_COMM_WORLD);
        tu_win_free(&W);
        tb = MPI_Wtime() - tb;
        double tc = MPI_Wtime();

        /* ---- C: process scope, explicit and default ---- */
        for (int k = 0; k < 2; k++) {
            tu_win_create(flavor, BLK * 4, 1, k ? MPI_INFO_NULL : process_info, MPI_COMM_WORLD, &W);
            snprintf(what, sizeof(what), "C (%s) %s", tu_flavor_names[flavor],
                     k ? "default window" : "created with process");
            check_scope_info(W.win, k ? NULL : "process", what);
            TU_MPI(MPI_Win_lock_all(0, W.win));
            pthread_t th[2];
            for (int t = 0; t < 2; t++) pthread_create(&th[t], NULL, thread_c, (void *) (intptr_t) t);
            target_c(k ? "default" : "process");
            for (int t = 0; t < 2; t++) pthread_join(th[t], NULL);
            TU_MPI(MPI_Win_unlock_all(W.win));
            MPI_Barrier(MPI_COMM_WORLD);
            tu_win_free(&W);
        }
        tc = MPI_Wtime() - tc;
        if (0 == rank)
            printf("%s: A %d iterations x %d threads %.2f s, B %.2f s, C 2 x %d rounds %.2f s\n",
                   tu_flavor_names[flavor], iters, NT, ta, tb, iters, tc);
    }
    MPI_Info_free(&thread_info);
    MPI_Info_free(&process_info);
    for (int k = 0; k < 2; k++) free(big_src[k]);
    free(big_dst);
    pthread_barrier_destroy(&bar);
    pthread_barrier_destroy(&bar4);
    rc = tu_finish("ext_scope");
    MPI_Finalize();
    return rc;
}
