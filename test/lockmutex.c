/* Mutual exclusion of passive-target locks.  Usage: lockmutex [N] (default 40).
 * 1. Counter: every rank does N times {lock EXCLUSIVE on the host, get
 *    counter, flush, put counter+1, unlock}.  The final value must be exactly
 *    nprocs*N and the values read, over all ranks, must be 0..nprocs*N-1 each
 *    exactly once (a broken lock loses or duplicates updates).  Run with the
 *    counter on rank 0 and on the last rank.
 * 2. Readers/writer: the last rank writes a 1024-word record N times under an
 *    exclusive lock on rank 0, in two halves separated by a flush; every other
 *    rank (rank 0 reads itself) repeatedly reads it under a shared lock
 *    (alternating with lock_all), also in two halves separated by a flush.
 *    Every record read must be consistent (all words derived from word 0) and
 *    versions must never go backwards; readers stop after seeing the last
 *    version.  Readers pause between reads without holding the lock (MPI
 *    does not promise that a writer is not starved by a stream of readers),
 *    calling MPI_Iprobe meanwhile for implementations that need target progress. */
#include "testutil.h"
#include <stdint.h>
#include <unistd.h>

#define RECW 1024

static int rank, nprocs;

static inline uint64_t word(uint64_t version, int j)
{
    uint64_t x = (version + 1) * 0x9E3779B97F4A7C15ull + (uint64_t) j * 0xD1B54A32D192ED03ull;
    return x ^ (x >> 31);
}

static int cmp_int(const void *a, const void *b)
{
    return *(const int *) a - *(const int *) b;
}

static void counter(tu_win_t *w, int host, int N)
{
    int *seen = malloc(N * sizeof(int)), *all = NULL;
    uint64_t *win = w->base;
    if (rank == host) {
        TU_MPI(MPI_Win_lock(MPI_LOCK_EXCLUSIVE, rank, 0, w->win));
        win[0] = 0;
        TU_MPI(MPI_Win_unlock(rank, w->win));
    }
    MPI_Barrier(MPI_COMM_WORLD);
    for (int i = 0; i < N; i++) {
        uint64_t c = UINT64_MAX, c1;
        TU_MPI(MPI_Win_lock(MPI_LOCK_EXCLUSIVE, host, 0, w->win));
        TU_MPI(MPI_Get(&c, 1, MPI_UINT64_T, host, tu_disp(w, host, 0), 1, MPI_UINT64_T, w->win));
        TU_MPI(MPI_Win_flush(host, w->win));
        c1 = c + 1;
        TU_MPI(MPI_Put(&c1, 1, MPI_UINT64_T, host, tu_disp(w, host, 0), 1, MPI_UINT64_T, w->win));
        TU_MPI(MPI_Win_unlock(host, w->win));
        seen[i] = (int) c;
    }
    MPI_Barrier(MPI_COMM_WORLD);
    if (rank == host) {
        TU_MPI(MPI_Win_lock(MPI_LOCK_SHARED, rank, 0, w->win));
        TU_CHECK(win[0] == (uint64_t) nprocs * N, "counter on %d (%s): final %llu, expected %d",
                 host, tu_flavor_names[w->flavor], (unsigned long long) win[0], nprocs * N);
        TU_MPI(MPI_Win_unlock(rank, w->win));
    }
    /* my own reads must increase */
    for (int i = 1; i < N; i++)
        if (seen[i] <= seen[i - 1]) {
            TU_CHECK(seen[i] > seen[i - 1], "counter on %d: read %d after %d", host, seen[i], seen[i - 1]);
            break;
        }
    if (0 == rank) all = malloc(nprocs * N * sizeof(int));
    MPI_Gather(seen, N, MPI_INT, all, N, MPI_INT, 0, MPI_COMM_WORLD);
    if (0 == rank) {
        qsort(all, nprocs * N, sizeof(int), cmp_int);
        int bad = 0;
        for (int i = 0; i < nprocs * N; i++) if (all[i] != i) bad++;
        TU_CHECK(0 == bad, "counter on %d (%s): %d of the values read are not a permutation of 0..%d",
                 host, tu_flavor_names[w->flavor], bad, nprocs * N - 1);
        free(all);
    }
    free(seen);
    MPI_Barrier(MPI_COMM_WORLD);
}

/* Wait `secs` without holding any lock, polling MPI for progress. */
static void pause_progress(double secs)
{
    double end = MPI_Wtime() + secs;
    int flag;
    while (MPI_Wtime() < end) {
        MPI_Iprobe(MPI_ANY_SOURCE, 4242, MPI_COMM_WORLD, &flag, MPI_STATUS_IGNORE);
        usleep(20);
    }
}

static void readers_writer(tu_win_t *w, int N)
{
    const int host = 0, writer = nprocs - 1, half = RECW / 2;
    uint64_t *rec = malloc(RECW * sizeof(uint64_t)), *win = w->base;
    if (rank == host) {
        TU_MPI(MPI_Win_lock(MPI_LOCK_EXCLUSIVE, rank, 0, w->win));
        for (int j = 0; j < RECW; j++) win[j] = word(0, j);
        TU_MPI(MPI_Win_unlock(rank, w->win));
    }
    MPI_Barrier(MPI_COMM_WORLD);
    if (rank == writer) {
        for (uint64_t v = 1; v <= (uint64_t) N; v++) {
            for (int j = 0; j < RECW; j++) rec[j] = word(v, j);
            TU_MPI(MPI_Win_lock(MPI_LOCK_EXCLUSIVE, host, 0, w->win));
            TU_MPI(MPI_Put(rec + half, half, MPI_UINT64_T, host, tu_disp(w, host, half), half,
                           MPI_UINT64_T, w->win));
            TU_MPI(MPI_Win_flush(host, w->win));
            TU_MPI(MPI_Put(rec, half, MPI_UINT64_T, host, tu_disp(w, host, 0), half, MPI_UINT64_T,
                           w->win));
            TU_MPI(MPI_Win_unlock(host, w->win));
        }
    } else {
        uint64_t last = 0;
        long reads = 0, torn = 0, stale = 0;
        double t0 = MPI_Wtime();
        while (last < (uint64_t) N) {
            if (MPI_Wtime() - t0 > 60) {
                TU_CHECK(0, "rank %d: gave up after 60 s at version %llu of %d", rank,
                         (unsigned long long) last, N);
                break;
            }
            memset(rec, 0, RECW * sizeof(uint64_t));
            int use_all = reads % 2;
            if (use_all) TU_MPI(MPI_Win_lock_all(0, w->win));
            else TU_MPI(MPI_Win_lock(MPI_LOCK_SHARED, host, 0, w->win));
            TU_MPI(MPI_Get(rec, half, MPI_UINT64_T, host, tu_disp(w, host, 0), half, MPI_UINT64_T,
                           w->win));
            TU_MPI(MPI_Win_flush(host, w->win));
            TU_MPI(MPI_Get(rec + half, half, MPI_UINT64_T, host, tu_disp(w, host, half), half,
                           MPI_UINT64_T, w->win));
            if (use_all) TU_MPI(MPI_Win_unlock_all(w->win));
            else TU_MPI(MPI_Win_unlock(host, w->win));
            reads++;
            /* leave the writer gaps (MPI locks need not be fair to writers),
             * longer while the version does not move; keep calling MPI so that
             * implementations needing target-side progress (the host is a
             * reader too) still serve the writer's lock requests */
            pause_progress(0.0005 * (1 + (stale < 640 ? stale / 10 : 64)));
            /* version = the v with word(v, 0) == rec[0] */
            uint64_t v;
            for (v = 0; v <= (uint64_t) N; v++) if (word(v, 0) == rec[0]) break;
            int bad = v > (uint64_t) N;
            for (int j = 1; j < RECW && !bad; j++) if (rec[j] != word(v, j)) bad = 1;
            if (bad) {
                if (torn++ < 3)
                    TU_CHECK(!bad, "rank %d (%s): torn/inconsistent record on read %ld (word0 version %lld)",
                             rank, tu_flavor_names[w->flavor], reads,
                             v > (uint64_t) N ? -1LL : (long long) v);
                continue;
            }
            TU_CHECK(v >= last, "rank %d: version went back from %llu to %llu", rank,
                     (unsigned long long) last, (unsigned long long) v);
            stale = v == last ? stale + 1 : 0;
            last = v;
        }
        TU_CHECK(0 == torn, "rank %d (%s): %ld torn reads of %ld", rank, tu_flavor_names[w->flavor],
                 torn, reads);
    }
    MPI_Barrier(MPI_COMM_WORLD);
    free(rec);
}

int main(int argc, char **argv)
{
    int N = 40;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &nprocs);
    if (argc > 1) N = atoi(argv[1]);
    for (int flavor = 0; flavor < TU_NFLAVORS; flavor++) {
        if (!tu_flavor_enabled(flavor)) continue;
        tu_win_t w;
        tu_win_create(flavor, RECW * sizeof(uint64_t), sizeof(uint64_t), MPI_INFO_NULL,
                      MPI_COMM_WORLD, &w);
        counter(&w, 0, N);
        counter(&w, nprocs - 1, N);
        readers_writer(&w, N);
        tu_win_free(&w);
    }
    int rc = tu_finish("lockmutex");
    MPI_Finalize();
    return rc;
}
