/* MPI_Win_free of dynamic windows with memory still attached.
 * For REPS ("-r N", default 3) repetitions of the configurations
 *   nreg = 0, 1, 2, 3, 17, 60 regions per rank (60: below osc/rdma's default
 *   limit of 64), each config once with every region still attached at
 *   MPI_Win_free and once with the odd-numbered regions detached first,
 * every rank creates a dynamic window, attaches its regions (pairs carved
 * from one block, i.e. adjacent, alternate with separate mallocs) plus one
 * PERSISTENT region that is attached to every window of the run (the same
 * address in window after window), exchanges the addresses, and under
 * lock_all puts a window-specific pattern into every region of the next
 * rank, flushes and gets it back (checked).  Then MPI_Win_free with the
 * regions attached.  After the free each rank checks that its own memory
 * still holds what the previous rank put (freeing must not touch it) and
 * frees the memory, so the next windows' regions often reuse the addresses:
 * nothing cached from a freed window may be used.  Finally one more window
 * checks that the persistent region still works.
 * osc/rdma (4.1.4) passes; osc/ucx segfaults in MPI_Win_free with two or
 * more regions attached. */
#include "testutil.h"
#include <stdint.h>

#define RN 48   /* int64 per region */

static int rank, nprocs;
static int64_t persistent[RN];

static int64_t v_pat(int w, int o, int i, int j) { return ((int64_t) w << 40) + ((int64_t) o << 32) + i * 1000 + j + 1; }

/* One window: attach nreg regions + the persistent one, put/get to the
 * next rank, free (detaching the odd regions first if `partial`). */
static void one_window(int wid, int nreg, int partial)
{
    const int next = (rank + 1) % nprocs, prev = (rank + nprocs - 1) % nprocs;
    const int n = nreg + 1;   /* region nreg is the persistent one */
    int64_t **reg = malloc(n * sizeof(*reg));
    void **blocks = malloc(n * sizeof(*blocks));
    int nblocks = 0;
    for (int i = 0; i < nreg; i++) {
        if (i % 4 == 0 && i + 1 < nreg) {   /* an adjacent pair */
            int64_t *b = malloc(2 * RN * sizeof(int64_t));
            blocks[nblocks++] = b;
            reg[i] = b; reg[i + 1] = b + RN;
            i++;
        } else {
            reg[i] = blocks[nblocks++] = malloc(RN * sizeof(int64_t));
        }
    }
    reg[nreg] = persistent;
    for (int i = 0; i < n; i++) for (int j = 0; j < RN; j++) reg[i][j] = -1;

    MPI_Win win;
    TU_MPI(MPI_Win_create_dynamic(MPI_INFO_NULL, MPI_COMM_WORLD, &win));
    MPI_Win_set_errhandler(win, MPI_ERRORS_RETURN);
    for (int i = 0; i < n; i++) TU_MPI(MPI_Win_attach(win, reg[i], RN * sizeof(int64_t)));
    MPI_Aint *mine = malloc(n * sizeof(MPI_Aint)), *all = malloc((size_t) n * nprocs * sizeof(MPI_Aint));
    for (int i = 0; i < n; i++) MPI_Get_address(reg[i], &mine[i]);
    MPI_Allgather(mine, n, MPI_AINT, all, n, MPI_AINT, MPI_COMM_WORLD);
    const MPI_Aint *tgt = all + (size_t) next * n;

    int64_t *src = malloc((size_t) n * RN * sizeof(int64_t)), *res = malloc((size_t) n * RN * sizeof(int64_t));
    TU_MPI(MPI_Win_lock_all(0, win));
    for (int i = 0; i < n; i++) {
        for (int j = 0; j < RN; j++) src[i * RN + j] = v_pat(wid, rank, i, j);
        TU_MPI(MPI_Put(src + i * RN, RN, MPI_INT64_T, next, tgt[i], RN, MPI_INT64_T, win));
    }
    TU_MPI(MPI_Win_flush(next, win));
    memset(res, 0, (size_t) n * RN * sizeof(int64_t));
    for (int i = 0; i < n; i++)
        TU_MPI(MPI_Get(res + i * RN, RN, MPI_INT64_T, next, tgt[i], RN, MPI_INT64_T, win));
    TU_MPI(MPI_Win_unlock_all(win));
    TU_CHECK(0 == memcmp(src, res, (size_t) n * RN * sizeof(int64_t)),
             "window %d (%d regions): get after put differs", wid, nreg);
    MPI_Barrier(MPI_COMM_WORLD);

    if (partial)
        for (int i = 1; i < nreg; i += 2) TU_MPI(MPI_Win_detach(win, reg[i]));
    TU_MPI(MPI_Win_free(&win));
    TU_CHECK(MPI_WIN_NULL == win, "MPI_Win_free did not set the handle to MPI_WIN_NULL");

    int bad = 0;
    for (int i = 0; i < n; i++)
        for (int j = 0; j < RN; j++) if (reg[i][j] != v_pat(wid, prev, i, j)) bad++;
    TU_CHECK(0 == bad, "window %d (%d regions%s): %d wrong values in my memory after MPI_Win_free",
             wid, nreg, partial ? ", half detached" : "", bad);
    for (int b = 0; b < nblocks; b++) free(blocks[b]);
    free(reg); free(blocks); free(mine); free(all); free(src); free(res);
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &nprocs);
    const int reps = (int) tu_opt_long(argc, argv, "-r", 3);
    static const int configs[] = { 0, 1, 2, 3, 17, 60 };
    const int nconf = sizeof(configs) / sizeof(configs[0]);
    int wid = 0;
    double t0 = MPI_Wtime();
    for (int r = 0; r < reps; r++)
        for (int c = 0; c < nconf; c++)
            for (int partial = 0; partial < 2; partial++) one_window(++wid, configs[c], partial);
    one_window(++wid, 0, 0);
    if (0 == rank) printf("dyn_free: %d windows freed with regions attached (%.2f s)\n", wid, MPI_Wtime() - t0);
    int rc = tu_finish("dyn_free");
    MPI_Finalize();
    return rc;
}
