/* Memory-handle windows: one handle used by several peers at once.
 * Rank 0 creates two handles, on buffer X (one chunk of CH int64 per rank
 * plus nprocs sum counters) and on buffer Y (a shared counter and a chunk per
 * rank), and broadcasts the handle bytes.  Every other rank r makes one window
 * on each handle (target 0, disp_unit 8 on X, 1 on Y) and, ITERS times
 * ("-i N", default 300), all ranks concurrently, inside one lock on the
 * parent window (lock(shared, 0) and lock_all alternating):
 *   put of its chunk of X (values depend on r and the iteration), MPI_SUM
 *   accumulate of the iteration number into its counter in X, fetch_and_op(+1)
 *   on Y's shared counter, put of its chunk of Y, flush of both windows, get
 *   of both chunks back (checked), unlock.
 * Afterwards rank 0 checks X and Y: every chunk holds its rank's last
 * values, the sum counters are ITERS*(ITERS-1)/2, the shared counter is
 * (nprocs-1)*ITERS, and the fetched values of all peers together are exactly
 * 0 .. (nprocs-1)*ITERS-1.  The peers free their windows while rank 0 still
 * holds the handles, then rank 0 releases them. */
#include "testutil.h"
#include "mpix_ucxx.h"
#include <stdint.h>

#define CH 64

static int rank, nprocs;

static int64_t v_x(int r, int it, int j) { return ((int64_t) r << 40) + ((int64_t) it << 16) + j + 1; }
static int64_t v_y(int r, int it, int j) { return -v_x(r, it, j); }

static void bcast_handle(char *h, int *hsize)
{
    MPI_Bcast(hsize, 1, MPI_INT, 0, MPI_COMM_WORLD);
    MPI_Bcast(h, *hsize, MPI_BYTE, 0, MPI_COMM_WORLD);
}

int main(int argc, char **argv)
{
    MPI_Win parent, wx = MPI_WIN_NULL, wy = MPI_WIN_NULL;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &nprocs);
    const int iters = (int) tu_opt_long(argc, argv, "-i", 300);
    const size_t xn = (size_t) nprocs * CH + nprocs, yn = 1 + (size_t) nprocs * CH;

    TU_MPI(MPI_Win_create_dynamic(MPI_INFO_NULL, MPI_COMM_WORLD, &parent));
    MPI_Win_set_errhandler(parent, MPI_ERRORS_RETURN);
    int64_t *X = calloc(xn, sizeof(int64_t)), *Y = calloc(yn, sizeof(int64_t));
    char hx[MPIX_MAX_MEMHANDLE_SIZE], hy[MPIX_MAX_MEMHANDLE_SIZE];
    int hxs = 0, hys = 0, rc;
    if (0 == rank) {
        rc = MPIX_Memhandle_create(X, xn * sizeof(int64_t), MPI_INFO_NULL, parent, hx, &hxs);
        if (MPI_SUCCESS == rc) rc = MPIX_Memhandle_create(Y, yn * sizeof(int64_t), MPI_INFO_NULL, parent, hy, &hys);
        TU_CHECK(MPI_SUCCESS == rc, "MPIX_Memhandle_create returned %s", tu_err_class_name(tu_err_class(rc)));
        if (MPI_SUCCESS != rc) MPI_Abort(MPI_COMM_WORLD, 3);
    }
    bcast_handle(hx, &hxs);
    bcast_handle(hy, &hys);

    int64_t *fetched = calloc(iters + 1, sizeof(int64_t));
    double t0 = MPI_Wtime();
    if (rank) {
        rc = MPIX_Win_from_memhandle(hx, xn * sizeof(int64_t), 8, MPI_INFO_NULL, 0, parent, &wx);
        if (MPI_SUCCESS == rc) rc = MPIX_Win_from_memhandle(hy, yn * sizeof(int64_t), 1, MPI_INFO_NULL, 0, parent, &wy);
        TU_CHECK(MPI_SUCCESS == rc, "MPIX_Win_from_memhandle returned %s", tu_err_class_name(tu_err_class(rc)));
        if (MPI_SUCCESS != rc) MPI_Abort(MPI_COMM_WORLD, 3);
        MPI_Win_set_errhandler(wx, MPI_ERRORS_RETURN);
        MPI_Win_set_errhandler(wy, MPI_ERRORS_RETURN);
        int64_t px[CH], py[CH], bx[CH], by[CH], one = 1, it64;
        int bad = 0;
        for (int it = 0; it < iters; it++) {
            for (int j = 0; j < CH; j++) { px[j] = v_x(rank, it, j); py[j] = v_y(rank, it, j); bx[j] = by[j] = 0; }
            it64 = it;
            if (it % 2) TU_MPI(MPI_Win_lock_all(0, parent));
            else TU_MPI(MPI_Win_lock(MPI_LOCK_SHARED, 0, 0, parent));
            TU_MPI(MPI_Put(px, CH, MPI_INT64_T, 0, rank * CH, CH, MPI_INT64_T, wx));
            TU_MPI(MPI_Accumulate(&it64, 1, MPI_INT64_T, 0, nprocs * CH + rank, 1, MPI_INT64_T, MPI_SUM, wx));
            TU_MPI(MPI_Fetch_and_op(&one, &fetched[it], MPI_INT64_T, 0, 0, MPI_SUM, wy));
            TU_MPI(MPI_Put(py, CH, MPI_INT64_T, 0, (1 + rank * CH) * 8, CH, MPI_INT64_T, wy));
            TU_MPI(MPI_Win_flush(0, wx));
            TU_MPI(MPI_Win_flush(0, wy));
            TU_MPI(MPI_Get(bx, CH, MPI_INT64_T, 0, rank * CH, CH, MPI_INT64_T, wx));
            TU_MPI(MPI_Get(by, CH, MPI_INT64_T, 0, (1 + rank * CH) * 8, CH, MPI_INT64_T, wy));
            TU_MPI(MPI_Win_flush(0, wx));
            TU_MPI(MPI_Win_flush(0, wy));
            if (it % 2) TU_MPI(MPI_Win_unlock_all(parent));
            else TU_MPI(MPI_Win_unlock(0, parent));
            if (memcmp(px, bx, sizeof(px)) || memcmp(py, by, sizeof(py))) {
                if (!bad++) TU_CHECK(0, "iteration %d: get after put returned %lld / %lld, expected %lld / %lld", it,
                                     (long long) bx[0], (long long) by[0], (long long) px[0], (long long) py[0]);
            }
        }
        TU_CHECK(0 == bad, "%d of %d iterations read back wrong values", bad, iters);
    }
    double t = MPI_Wtime() - t0, tmax = 0;
    MPI_Reduce(&t, &tmax, 1, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
    int total = (nprocs - 1) * iters;
    int64_t *allf = 0 == rank ? malloc((size_t) nprocs * iters * sizeof(int64_t) + 8) : NULL;
    MPI_Gather(fetched, iters, MPI_INT64_T, allf, iters, MPI_INT64_T, 0, MPI_COMM_WORLD);
    MPI_Barrier(MPI_COMM_WORLD);
    if (0 == rank) {
        printf("mh_multi: %d peers x %d iterations on one handle pair, %.2f s\n", nprocs - 1, iters, tmax);
        TU_MPI(MPI_Win_lock(MPI_LOCK_EXCLUSIVE, 0, 0, parent));   /* a passive epoch on my own memory */
        int bad = 0;
        for (int r = 1; r < nprocs; r++)
            for (int j = 0; j < CH; j++) {
                if (X[r * CH + j] != v_x(r, iters - 1, j)) bad++;
                if (Y[1 + r * CH + j] != v_y(r, iters - 1, j)) bad++;
            }
        for (int j = 0; j < CH; j++) if (X[j] != 0 || Y[1 + j] != 0) bad++;   /* rank 0's own chunks */
        TU_CHECK(0 == bad || 0 == iters, "%d wrong values in the peers' chunks", bad);
        for (int r = 1; r < nprocs; r++)
            TU_CHECK(X[nprocs * CH + r] == (int64_t) iters * (iters - 1) / 2, "sum counter of rank %d is %lld, expected %lld",
                     r, (long long) X[nprocs * CH + r], (long long) iters * (iters - 1) / 2);
        TU_CHECK(Y[0] == total, "shared counter is %lld, expected %d", (long long) Y[0], total);
        TU_MPI(MPI_Win_unlock(0, parent));
        tu_check_fetched_permutation(allf, nprocs, iters, total);
    }
    if (rank) {
        TU_MPI(MPI_Win_free(&wx));
        TU_MPI(MPI_Win_free(&wy));
    }
    MPI_Barrier(MPI_COMM_WORLD);
    if (0 == rank) {
        rc = MPIX_Memhandle_release(hx, parent);
        TU_CHECK(MPI_SUCCESS == rc, "MPIX_Memhandle_release(X) returned %s", tu_err_class_name(tu_err_class(rc)));
        rc = MPIX_Memhandle_release(hy, parent);
        TU_CHECK(MPI_SUCCESS == rc, "MPIX_Memhandle_release(Y) returned %s", tu_err_class_name(tu_err_class(rc)));
    }
    TU_MPI(MPI_Win_free(&parent));
    free(X); free(Y); free(fetched); free(allf);
    int ret = tu_finish("mh_multi");
    MPI_Finalize();
    return ret;
}
