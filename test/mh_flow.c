/* Memory-handle windows: the flow of Figure 6 of "Quo Vadis MPI RMA?",
 * repeated ITERS times ("-i N"; default 10000, 1000 when UCX_TLS is TCP-only).
 * Ranks form pairs (0,1), (2,3), ...; in iteration i the even member is the
 * creator A when i is even, the odd member otherwise.  All ranks share one
 * dynamic parent window (MPI_Win_create_dynamic, MPI_ERRORS_RETURN).
 *   A: fills n int64 (n varies, 64..256, at a varying offset in its buffer,
 *      sentinels around) with data depending on i, MPIX_Memhandle_create on
 *      them, MPI_Send of the handle bytes to B;
 *   B: MPI_Recv, MPIX_Win_from_memhandle(handle, size, disp_unit, info,
 *      target=A, parent, &w) -- disp_unit alternates 8 and 1, size is the whole
 *      handle or 8 bytes less -- checks MPI_WIN_SIZE / MPI_WIN_DISP_UNIT, then
 *      MPI_Win_lock(shared, A, parent); MPI_Get of the first third;
 *      MPI_Put of the second third; MPI_Accumulate(MPI_SUM) into the last
 *      third; MPI_Fetch_and_op on the element after it; MPI_Win_flush(A, w);
 *      MPI_Get of the second and last thirds; MPI_Win_flush(A, w);
 *      MPI_Win_unlock(A, parent); checks everything it read; MPI_Win_free(&w);
 *      MPI_Send of a token to A;
 *   A: MPI_Recv of the token, checks its memory (initial third unchanged,
 *      put values, sums, fetch_and_op result, untouched tail and sentinels),
 *      MPIX_Memhandle_release.
 * Rank 0 prints the mean time per iteration.  With an odd number of ranks the
 * last one only takes part in the collectives. */
#include "testutil.h"
#include "mpix_ucxx.h"
#include <stdint.h>

#define MAXN 256
#define PAD 8
#define SENT ((int64_t) 0x5e5e5e5e5e5e5e5eLL)

static int rank, nprocs;

static int64_t v_data(int i, int j) { return (int64_t) i * 1000003LL + j * 7 + 1; }
static int64_t v_put(int i, int j) { return -((int64_t) i * 1000LL + j) - 1; }
static int64_t v_add(int i, int j) { return (i % 1000) * 3 + j + 1; }
#define FOPV 17

int main(int argc, char **argv)
{
    MPI_Win parent;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &nprocs);
    const int iters = (int) tu_opt_long(argc, argv, "-i", tu_slow_transport() ? 1000 : 10000);
    const int partner = (rank % 2) ? rank - 1 : (rank + 1 < nprocs ? rank + 1 : -1);

    TU_MPI(MPI_Win_create_dynamic(MPI_INFO_NULL, MPI_COMM_WORLD, &parent));
    MPI_Win_set_errhandler(parent, MPI_ERRORS_RETURN);
    MPI_Barrier(MPI_COMM_WORLD);

    int64_t *mem = malloc((MAXN + 2 * PAD + 8) * sizeof(int64_t));
    char handle[MPIX_MAX_MEMHANDLE_SIZE];
    int errs_iter = -1;   /* first iteration with a failure */
    double t0 = MPI_Wtime();
    for (int i = 0; i < iters && partner >= 0; i++) {
        const int creator = (i % 2) == (rank % 2);
        const int n = 64 + (i * 29) % (MAXN - 63);             /* handle: n int64 */
        const int du = (i % 2) ? 1 : 8;
        const int nw = (i % 3 == 0) ? n - 1 : n;               /* window: nw int64 */
        const int g = (nw - 1) / 3;                            /* thirds; element 3g: fetch_and_op */
        const int before = errs_iter < 0 ? tu_errors : -1;
        if (creator) {
            int64_t *base = mem + PAD + (i % 5);
            for (int j = 0; j < MAXN + 2 * PAD + 8; j++) mem[j] = SENT;
            for (int j = 0; j < n; j++) base[j] = v_data(i, j);
            int hsize = -1;
            int rc = MPIX_Memhandle_create(base, (MPI_Aint) n * 8, MPI_INFO_NULL, parent, handle, &hsize);
            TU_CHECK(MPI_SUCCESS == rc, "iteration %d: MPIX_Memhandle_create returned %s", i,
                     tu_err_class_name(tu_err_class(rc)));
            if (MPI_SUCCESS != rc) MPI_Abort(MPI_COMM_WORLD, 3);
            TU_CHECK(hsize > 0 && hsize <= MPIX_MAX_MEMHANDLE_SIZE, "iteration %d: handle size %d", i, hsize);
            MPI_Send(handle, hsize, MPI_BYTE, partner, 1, MPI_COMM_WORLD);
            int token;
            MPI_Recv(&token, 1, MPI_INT, partner, 2, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            int bad = 0;
            for (int j = 0; j < n; j++) {
                int64_t exp = v_data(i, j);
                if (j >= g && j < 2 * g) exp = v_put(i, j);
                else if (j >= 2 * g && j < 3 * g) exp += v_add(i, j);
                else if (j == 3 * g) exp += FOPV;
                if (base[j] != exp) bad++;
            }
            for (int64_t *p = mem; p < base; p++) if (*p != SENT) bad++;
            for (int64_t *p = base + n; p < mem + MAXN + 2 * PAD + 8; p++) if (*p != SENT) bad++;
            TU_CHECK(0 == bad, "iteration %d (n %d, disp_unit %d): creator finds %d wrong values", i, n, du, bad);
            rc = MPIX_Memhandle_release(handle, parent);
            TU_CHECK(MPI_SUCCESS == rc, "iteration %d: MPIX_Memhandle_release returned %s", i,
                     tu_err_class_name(tu_err_class(rc)));
        } else {
            MPI_Status st;
            int hsize = 0;
            MPI_Recv(handle, sizeof(handle), MPI_BYTE, partner, 1, MPI_COMM_WORLD, &st);
            MPI_Get_count(&st, MPI_BYTE, &hsize);
            MPI_Win w = MPI_WIN_NULL;
            int rc = MPIX_Win_from_memhandle(handle, (MPI_Aint) nw * 8, du, MPI_INFO_NULL, partner, parent, &w);
            TU_CHECK(MPI_SUCCESS == rc && MPI_WIN_NULL != w, "iteration %d: MPIX_Win_from_memhandle returned %s",
                     i, tu_err_class_name(tu_err_class(rc)));
            if (MPI_SUCCESS != rc) MPI_Abort(MPI_COMM_WORLD, 3);
            MPI_Win_set_errhandler(w, MPI_ERRORS_RETURN);
            if (i < 4) {
                MPI_Aint *psize = NULL;
                int *pdu = NULL, f1 = 0, f2 = 0;
                MPI_Win_get_attr(w, MPI_WIN_SIZE, &psize, &f1);
                MPI_Win_get_attr(w, MPI_WIN_DISP_UNIT, &pdu, &f2);
                TU_CHECK(f1 && *psize == (MPI_Aint) nw * 8, "iteration %d: MPI_WIN_SIZE %ld, expected %ld", i,
                         f1 ? (long) *psize : -1L, (long) nw * 8);
                TU_CHECK(f2 && *pdu == du, "iteration %d: MPI_WIN_DISP_UNIT %d, expected %d", i, f2 ? *pdu : -1, du);
            }
            const MPI_Aint s = 8 / du;   /* displacement units per int64 */
            int64_t got[MAXN], put[MAXN], add[MAXN], back[MAXN], fop = FOPV, fetched = -1;
            for (int j = 0; j < g; j++) {
                put[j] = v_put(i, g + j);
                add[j] = v_add(i, 2 * g + j);
                got[j] = back[j] = back[g + j] = 0;
            }
            TU_MPI(MPI_Win_lock(MPI_LOCK_SHARED, partner, 0, parent));
            TU_MPI(MPI_Get(got, g, MPI_INT64_T, partner, 0, g, MPI_INT64_T, w));
            TU_MPI(MPI_Put(put, g, MPI_INT64_T, partner, g * s, g, MPI_INT64_T, w));
            TU_MPI(MPI_Accumulate(add, g, MPI_INT64_T, partner, 2 * g * s, g, MPI_INT64_T, MPI_SUM, w));
            TU_MPI(MPI_Fetch_and_op(&fop, &fetched, MPI_INT64_T, partner, 3 * g * s, MPI_SUM, w));
            TU_MPI(MPI_Win_flush(partner, w));
            TU_MPI(MPI_Get(back, 2 * g, MPI_INT64_T, partner, g * s, 2 * g, MPI_INT64_T, w));
            TU_MPI(MPI_Win_flush(partner, w));
            TU_MPI(MPI_Win_unlock(partner, parent));
            int bad = 0;
            for (int j = 0; j < g; j++) {
                if (got[j] != v_data(i, j)) bad++;
                if (back[j] != v_put(i, g + j)) bad++;
                if (back[g + j] != v_data(i, 2 * g + j) + v_add(i, 2 * g + j)) bad++;
            }
            TU_CHECK(0 == bad, "iteration %d (n %d, disp_unit %d): %d wrong values read through the window", i, n,
                     du, bad);
            TU_CHECK(fetched == v_data(i, 3 * g), "iteration %d: fetch_and_op fetched %lld, expected %lld", i,
                     (long long) fetched, (long long) v_data(i, 3 * g));
            TU_MPI(MPI_Win_free(&w));
            TU_CHECK(MPI_WIN_NULL == w, "iteration %d: MPI_Win_free left the handle set", i);
            int token = i;
            MPI_Send(&token, 1, MPI_INT, partner, 2, MPI_COMM_WORLD);
        }
        if (before >= 0 && tu_errors > before) errs_iter = i;
    }
    double t = MPI_Wtime() - t0;
    MPI_Barrier(MPI_COMM_WORLD);
    if (0 == rank)
        printf("mh_flow: %d iterations, %.1f us per iteration (create, send, window, 5 ops, free, release)\n",
               iters, 1e6 * t / (iters ? iters : 1));
    TU_CHECK(errs_iter < 0, "first failure in iteration %d", errs_iter);
    TU_MPI(MPI_Win_free(&parent));
    free(mem);
    int rc = tu_finish("mh_flow");
    MPI_Finalize();
    return rc;
}
