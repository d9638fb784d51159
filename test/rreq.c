/* Request-based RMA: thousands of MPI_Rput / MPI_Rget outstanding at once
 * (the stock osc/ucx aborted at 255).  Usage: rreq [N] (default 5000).
 * For every flavor, inside lock_all:
 *   A: N Rputs of one uint64 each to distinct, shuffled offsets of the next
 *      rank; MPI_Waitall; MPI_Win_flush; the target checks all N values.
 *   B: N Rgets of one uint64 from the previous rank; MPI_Waitall; the values
 *      are checked right after Waitall (request completion must mean the data
 *      has arrived), before any flush or unlock.
 *   C: N Rputs of 8 bytes (MPI_BYTE) to self under an exclusive self-lock,
 *      then N/2 Rgets of those values from the next rank under a shared lock,
 *      each completed by MPI_Test polling and checked at completion.
 *   D: requests still pending at MPI_Win_unlock: unlock, then MPI_Waitall
 *      must succeed and the data be there.
 * Every request must complete with MPI_SUCCESS. */
#include "testutil.h"
#include <stdint.h>

static inline uint64_t val(uint64_t seed, uint64_t i)
{
    uint64_t x = seed * 0x9E3779B97F4A7C15ull + i * 0xBF58476D1CE4E5B9ull;
    return x ^ (x >> 29);
}

int main(int argc, char **argv)
{
    int rank, nprocs, N = 5000;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &nprocs);
    if (argc > 1) N = atoi(argv[1]);
    int next = (rank + 1) % nprocs, prev = (rank + nprocs - 1) % nprocs;

    /* window: 2N uint64: [0, N) for puts, [N, 2N) for the self-put region */
    uint64_t *src = malloc(N * sizeof(uint64_t)), *dst = malloc(N * sizeof(uint64_t));
    MPI_Request *req = malloc(2 * N * sizeof(MPI_Request));
    MPI_Status *st = malloc(2 * N * sizeof(MPI_Status));
    int *perm = malloc(N * sizeof(int));
    tu_permutation(perm, N);

    for (int flavor = 0; flavor < TU_NFLAVORS; flavor++) {
        if (!tu_flavor_enabled(flavor)) continue;
        tu_win_t w;
        uint64_t *win;
        int bad;
        tu_win_create(flavor, 2 * N * sizeof(uint64_t), sizeof(uint64_t), MPI_INFO_NULL,
                      MPI_COMM_WORLD, &w);
        win = w.base;
        uint64_t seed = 1000 * (flavor + 1);

        /* ---- A: N Rputs to next ---- */
        for (int i = 0; i < N; i++) src[i] = val(seed + rank, i);
        MPI_Barrier(MPI_COMM_WORLD);
        TU_MPI(MPI_Win_lock_all(0, w.win));
        for (int i = 0; i < N; i++) {
            int k = perm[i];
            TU_MPI(MPI_Rput(&src[k], 1, MPI_UINT64_T, next, tu_disp(&w, next, k), 1, MPI_UINT64_T,
                            w.win, &req[i]));
        }
        TU_MPI(MPI_Waitall(N, req, MPI_STATUSES_IGNORE));
        TU_MPI(MPI_Win_flush(next, w.win));
        TU_MPI(MPI_Win_unlock_all(w.win));
        MPI_Barrier(MPI_COMM_WORLD);
        TU_MPI(MPI_Win_lock(MPI_LOCK_EXCLUSIVE, rank, 0, w.win));
        bad = 0;
        for (int i = 0; i < N; i++) if (win[i] != val(seed + prev, i)) bad++;
        TU_CHECK(0 == bad, "A (%s): %d of %d Rput values wrong at rank %d", tu_flavor_names[flavor],
                 bad, N, rank);
        /* prepare for B: my window [0,N) holds my own pattern */
        for (int i = 0; i < N; i++) win[i] = val(seed + 10 + rank, i);
        TU_MPI(MPI_Win_unlock(rank, w.win));
        MPI_Barrier(MPI_COMM_WORLD);

        /* ---- B: N Rgets from prev, checked right after Waitall ---- */
        for (int i = 0; i < N; i++) dst[i] = 0;
        TU_MPI(MPI_Win_lock_all(0, w.win));
        for (int i = 0; i < N; i++) {
            int k = perm[i];
            TU_MPI(MPI_Rget(&dst[k], 1, MPI_UINT64_T, prev, tu_disp(&w, prev, k), 1, MPI_UINT64_T,
                            w.win, &req[i]));
        }
        for (int i = 0; i < N; i++) st[i].MPI_ERROR = -1;
        int rc = MPI_Waitall(N, req, st);
        TU_CHECK(MPI_SUCCESS == rc, "B: Waitall returned %d", rc);
        bad = 0;
        for (int i = 0; i < N; i++) if (dst[i] != val(seed + 10 + prev, i)) bad++;
        TU_CHECK(0 == bad, "B (%s): %d of %d Rget values wrong after Waitall", tu_flavor_names[flavor],
                 bad, N);
        bad = 0;
        for (int i = 0; i < N; i++) if (req[i] != MPI_REQUEST_NULL) bad++;
        TU_CHECK(0 == bad, "B: %d requests not MPI_REQUEST_NULL after Waitall", bad);
        TU_MPI(MPI_Win_unlock_all(w.win));
        MPI_Barrier(MPI_COMM_WORLD);

        /* ---- C: N Rputs to my own [N,2N) under an exclusive lock on self, then
         * N/2 Rgets of next's [N,2N) under a shared lock, completed by MPI_Test ---- */
        for (int i = 0; i < N; i++) { src[i] = val(seed + 20 + rank, i); dst[i] = 0; }
        TU_MPI(MPI_Win_lock(MPI_LOCK_EXCLUSIVE, rank, 0, w.win));
        for (int i = 0; i < N; i++) {
            int k = perm[i];
            TU_MPI(MPI_Rput(&src[k], 8, MPI_BYTE, rank, tu_disp(&w, rank, N + k), 8, MPI_BYTE, w.win,
                            &req[i]));
        }
        TU_MPI(MPI_Waitall(N, req, MPI_STATUSES_IGNORE));
        TU_MPI(MPI_Win_unlock(rank, w.win));
        MPI_Barrier(MPI_COMM_WORLD);
        TU_MPI(MPI_Win_lock(MPI_LOCK_SHARED, next, 0, w.win));
        int ng = N / 2;
        for (int i = 0; i < ng; i++)
            TU_MPI(MPI_Rget(&dst[i], 1, MPI_UINT64_T, next, tu_disp(&w, next, N + i), 1,
                            MPI_UINT64_T, w.win, &req[i]));
        {
            int done = 0, flag;
            for (int i = 0; i < ng; i++) {
                do {
                    TU_MPI(MPI_Test(&req[i], &flag, MPI_STATUS_IGNORE));
                } while (!flag);
                /* the get is complete: its value must be in place now */
                if (dst[i] == val(seed + 20 + next, i)) done++;
            }
            TU_CHECK(done == ng, "C (%s): %d of %d Rget values right at MPI_Test completion",
                     tu_flavor_names[flavor], done, ng);
        }
        TU_MPI(MPI_Win_unlock(next, w.win));
        MPI_Barrier(MPI_COMM_WORLD);

        /* ---- D: requests pending at unlock ---- */
        for (int i = 0; i < N; i++) src[i] = val(seed + 30 + rank, i);
        TU_MPI(MPI_Win_lock(MPI_LOCK_EXCLUSIVE, next, 0, w.win));
        for (int i = 0; i < N; i++)
            TU_MPI(MPI_Rput(&src[i], 1, MPI_UINT64_T, next, tu_disp(&w, next, i), 1, MPI_UINT64_T,
                            w.win, &req[i]));
        for (int i = 0; i < N; i++)
            TU_MPI(MPI_Rget(&dst[i], 1, MPI_UINT64_T, next, tu_disp(&w, next, N + i), 1,
                            MPI_UINT64_T, w.win, &req[N + i]));
        TU_MPI(MPI_Win_unlock(next, w.win));
        for (int i = 0; i < 2 * N; i++) st[i].MPI_ERROR = -1;
        rc = MPI_Waitall(2 * N, req, st);
        TU_CHECK(MPI_SUCCESS == rc, "D: Waitall after unlock returned %d", rc);
        bad = 0;
        for (int i = 0; i < N; i++) if (dst[i] != val(seed + 20 + next, i)) bad++;
        TU_CHECK(0 == bad, "D (%s): %d Rget values wrong", tu_flavor_names[flavor], bad);
        MPI_Barrier(MPI_COMM_WORLD);
        TU_MPI(MPI_Win_lock(MPI_LOCK_EXCLUSIVE, rank, 0, w.win));
        bad = 0;
        for (int i = 0; i < N; i++) if (win[i] != val(seed + 30 + prev, i)) bad++;
        TU_CHECK(0 == bad, "D (%s): %d Rput values wrong at rank %d", tu_flavor_names[flavor], bad,
                 rank);
        TU_MPI(MPI_Win_unlock(rank, w.win));
        MPI_Barrier(MPI_COMM_WORLD);
        tu_win_free(&w);
    }
    free(src); free(dst); free(req); free(st); free(perm);
    int rc = tu_finish("rreq");
    MPI_Finalize();
    return rc;
}
