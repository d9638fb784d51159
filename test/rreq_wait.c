/* Request-based gets that the progress thread completes while the
 * application waits for them with MPI_Waitany, MPI_Waitsome and MPI_Waitall.
 * Below MPI_THREAD_MULTIPLE Open MPI marks a request complete, and counts
 * what a wait still waits for, without atomics, so a request completed by
 * another thread than the waiting one could be lost to the wait: it hung
 * with every request complete.
 *
 * Per flavor, inside lock_all, ROUNDS rounds of K MPI_Rget of one uint64 each
 * from the previous rank (shuffled offsets), completed by the round's wait
 * (Waitany one by one, Waitsome, Waitall, in turn).  Between issuing and
 * waiting the rank computes outside MPI for 0 to 200 us (varied by round),
 * so that the thread is serving at any point of the wait.  Each value is
 * checked when its request comes back (completion means the data is there),
 * and every request must be MPI_REQUEST_NULL afterwards.
 *
 * Usage: rreq_wait [-k K] [-r ROUNDS] [--progress-wait] [--no-direct]
 * (defaults 2000 and 60).  --progress-wait: the progress thread on, as it
 * runs by default across nodes; --no-direct: UCX gets on one node too (they
 * otherwise complete at once, by loads).  Watchdog 150 s: a hang fails. */
#include "testutil.h"
#include <stdint.h>
#include <time.h>

enum { W_ANY, W_SOME, W_ALL, W_KINDS };
static const char *wait_names[] = {"MPI_Waitany", "MPI_Waitsome", "MPI_Waitall"};

static inline uint64_t val(uint64_t seed, uint64_t i)
{
    uint64_t x = seed * 0x9E3779B97F4A7C15ull + i * 0xBF58476D1CE4E5B9ull;
    return x ^ (x >> 29);
}

static void compute_us(int us)
{
    struct timespec t0, t;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    do {
        clock_gettime(CLOCK_MONOTONIC, &t);
    } while ((t.tv_sec - t0.tv_sec) * 1000000L + (t.tv_nsec - t0.tv_nsec) / 1000 < us);
}

/* Complete the K requests of a round with `kind`; returns the values wrong
 * at the moment their requests came back. */
static int wait_round(int kind, int K, MPI_Request *req, int *idx, const uint64_t *dst,
                      const int *perm, uint64_t seed)
{
    int bad = 0, n;

    switch (kind) {
    case W_ANY:
        for (int done = 0; done < K; done++) {
            TU_MPI(MPI_Waitany(K, req, &n, MPI_STATUS_IGNORE));
            TU_CHECK(MPI_UNDEFINED != n, "MPI_Waitany: none active after %d of %d", done, K);
            if (MPI_UNDEFINED == n) return bad + 1;
            bad += dst[perm[n]] != val(seed, perm[n]);
        }
        break;
    case W_SOME:
        for (int done = 0; done < K; done += n) {
            TU_MPI(MPI_Waitsome(K, req, &n, idx, MPI_STATUSES_IGNORE));
            TU_CHECK(MPI_UNDEFINED != n && n > 0, "MPI_Waitsome: %d after %d of %d", n, done, K);
            if (MPI_UNDEFINED == n || n <= 0) return bad + 1;
            for (int j = 0; j < n; j++) bad += dst[perm[idx[j]]] != val(seed, perm[idx[j]]);
        }
        break;
    default:
        TU_MPI(MPI_Waitall(K, req, MPI_STATUSES_IGNORE));
        for (int i = 0; i < K; i++) bad += dst[i] != val(seed, i);
    }
    return bad;
}

int main(int argc, char **argv)
{
    int rank, nprocs, next, prev;
    int K = (int) tu_opt_long(argc, argv, "-k", 2000);
    int rounds = (int) tu_opt_long(argc, argv, "-r", 60);
    char where[160];

    for (int i = 1; i < argc; i++) {
        if (0 == strcmp(argv[i], "--progress-wait")) {
            setenv("OMPI_MCA_osc_ucxx_progress_thread", "1", 1);
        } else if (0 == strcmp(argv[i], "--no-direct")) {
            tu_tune("direct=0");
        }
    }
    tu_init_ring(&argc, &argv, &rank, &nprocs, &next, &prev);
    tu_watchdog("rreq_wait", 150);

    uint64_t *dst = malloc(K * sizeof(uint64_t));
    MPI_Request *req = malloc(K * sizeof(MPI_Request));
    int *idx = malloc(K * sizeof(int)), *perm = malloc(K * sizeof(int));
    tu_permutation(perm, K);

    for (int flavor = 0; flavor < TU_NFLAVORS; flavor++) {
        if (!tu_flavor_enabled(flavor)) continue;
        tu_win_t w;
        uint64_t *win;
        tu_win_create(flavor, K * sizeof(uint64_t), sizeof(uint64_t), MPI_INFO_NULL,
                      MPI_COMM_WORLD, &w);
        win = w.base;
        uint64_t seed = 1000 * (flavor + 1);
        TU_MPI(MPI_Win_lock(MPI_LOCK_EXCLUSIVE, rank, 0, w.win));
        for (int i = 0; i < K; i++) win[i] = val(seed + rank, i);
        TU_MPI(MPI_Win_unlock(rank, w.win));
        MPI_Barrier(MPI_COMM_WORLD);

        TU_MPI(MPI_Win_lock_all(0, w.win));
        for (int r = 0; r < rounds; r++) {
            int kind = r % W_KINDS, bad = 0;
            snprintf(where, sizeof(where), "%s, round %d: %s of %d MPI_Rget",
                     tu_flavor_names[flavor], r, wait_names[kind], K);
            tu_where = where;
            for (int i = 0; i < K; i++) dst[i] = 0;
            for (int i = 0; i < K; i++) {
                int k = perm[i];
                TU_MPI(MPI_Rget(&dst[k], 1, MPI_UINT64_T, prev, tu_disp(&w, prev, k), 1,
                                MPI_UINT64_T, w.win, &req[i]));
            }
            compute_us((r / W_KINDS) * 200 / (rounds / W_KINDS + 1));
            bad = wait_round(kind, K, req, idx, dst, perm, seed + prev);
            TU_CHECK(0 == bad, "%s: %d values wrong when their requests came back", where, bad);
            bad = 0;
            for (int i = 0; i < K; i++) bad += MPI_REQUEST_NULL != req[i];
            TU_CHECK(0 == bad, "%s: %d requests not MPI_REQUEST_NULL", where, bad);
        }
        tu_where = "unlock_all";
        TU_MPI(MPI_Win_unlock_all(w.win));
        MPI_Barrier(MPI_COMM_WORLD);
        tu_win_free(&w);
    }
    alarm(0);
    free(dst); free(req); free(idx); free(perm);
    int rc = tu_finish("rreq_wait");
    MPI_Finalize();
    return rc;
}
