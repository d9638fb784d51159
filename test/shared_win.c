/* shared_win: MPI_Win_allocate_shared and MPI_Win_shared_query.
 *
 * Rank r allocates 3 * (r + 1) + 1 int64 (disp_unit 8).  Checks, for the
 * default (contiguous) layout and again with alloc_shared_noncontig=true:
 *   1. shared_query of every rank gives its size and disp_unit; contiguous
 *      segments follow each other in rank order; MPI_PROC_NULL gives rank 0;
 *   2. loads and stores: every rank fills its segment, then reads every
 *      other rank's through the shared_query pointer (after MPI_Win_sync and
 *      a barrier);
 *   3. RMA on the same window: a put into the next rank's segment, MPI_SUM
 *      accumulates and fetch_and_op on a counter of rank 0, compare_and_swap,
 *      a get of the previous rank's last word (nobody writes it); checked with loads and fetched values;
 *   4. a window where rank 1 allocates nothing: its size is 0 and
 *      MPI_PROC_NULL still names rank 0;
 *   5. MPI_Win_shared_query on an MPI_Win_allocate window fails.
 * Open MPI 4.1.4's osc/sm passes the contiguous half; with
 * alloc_shared_noncontig it reports page-rounded sizes.
 */
#include "testutil.h"
#include <stdint.h>

static int me, nprocs;

static int64_t pat(int r, int i) { return 1000 * (r + 1) + i; }

static void one_window(int noncontig)
{
    MPI_Info info = noncontig ? tu_info_new("alloc_shared_noncontig", "true", NULL)
                              : MPI_INFO_NULL;
    MPI_Aint n = 3 * (me + 1) + 1, qsize;
    int64_t *mine, **seg = malloc(nprocs * sizeof(int64_t *)), one = 1, old = -1, cas_old = -1;
    int64_t mark = me + 7, got = -1;
    const char *how = noncontig ? "noncontig" : "contiguous";
    int qdisp, next = (me + 1) % nprocs, prev = (me + nprocs - 1) % nprocs;
    MPI_Win win;

    TU_MPI(MPI_Win_allocate_shared(n * 8, 8, info, MPI_COMM_WORLD, &mine, &win));
    MPI_Win_set_errhandler(win, MPI_ERRORS_RETURN);
    for (int r = 0; r < nprocs; r++) {
        TU_MPI(MPI_Win_shared_query(win, r, &qsize, &qdisp, &seg[r]));
        TU_CHECK(qsize == (3 * (r + 1) + 1) * 8 && qdisp == 8, "%s: rank %d: size %ld disp %d", how, r,
                 (long) qsize, qdisp);
        if (!noncontig && r > 0) {
            TU_CHECK((char *) seg[r] == (char *) seg[r - 1] + (3 * r + 1) * 8,
                     "%s: rank %d's segment does not follow rank %d's", how, r, r - 1);
        }
    }
    TU_CHECK(seg[me] == mine, "%s: my own segment is not where allocate put it", how);
    {
        int64_t *p0;
        TU_MPI(MPI_Win_shared_query(win, MPI_PROC_NULL, &qsize, &qdisp, &p0));
        TU_CHECK(p0 == seg[0] && qsize == 32, "%s: MPI_PROC_NULL query", how);
    }

    TU_MPI(MPI_Win_lock_all(0, win));
    for (int i = 0; i < n; i++) mine[i] = pat(me, i);
    TU_MPI(MPI_Win_sync(win));
    MPI_Barrier(MPI_COMM_WORLD);
    TU_MPI(MPI_Win_sync(win));
    for (int r = 0; r < nprocs; r++) {
        for (int i = 0; i < 3 * (r + 1) + 1; i++) {
            TU_CHECK(seg[r][i] == pat(r, i), "%s: load rank %d [%d] = %lld", how, r, i,
                     (long long) seg[r][i]);
        }
    }
    MPI_Barrier(MPI_COMM_WORLD);
    if (0 == me) seg[0][1] = 0;  /* the counter */
    if (0 == me) seg[0][2] = 5;  /* the compare-and-swap word */
    TU_MPI(MPI_Win_sync(win));
    MPI_Barrier(MPI_COMM_WORLD);

    TU_MPI(MPI_Put(&mark, 1, MPI_INT64_T, next, 0, 1, MPI_INT64_T, win));
    TU_MPI(MPI_Accumulate(&one, 1, MPI_INT64_T, 0, 1, 1, MPI_INT64_T, MPI_SUM, win));
    TU_MPI(MPI_Fetch_and_op(&one, &old, MPI_INT64_T, 0, 1, MPI_SUM, win));
    {
        int64_t cmp = 5, nv = 100 + me;
        TU_MPI(MPI_Compare_and_swap(&nv, &cmp, &cas_old, MPI_INT64_T, 0, 2, win));
    }
    TU_MPI(MPI_Get(&got, 1, MPI_INT64_T, prev, 3 * (prev + 1), 1, MPI_INT64_T, win));
    TU_MPI(MPI_Win_flush_all(win));
    TU_CHECK(got == pat(prev, 3 * (prev + 1)), "%s: get from %d = %lld", how, prev,
             (long long) got);
    TU_CHECK(old >= 0 && old < 2 * nprocs, "%s: fetch_and_op returned %lld", how,
             (long long) old);
    MPI_Barrier(MPI_COMM_WORLD);
    TU_MPI(MPI_Win_sync(win));
    TU_CHECK(mine[0] == prev + 7, "%s: put from %d: %lld", how, prev, (long long) mine[0]);
    if (0 == me) {
        TU_CHECK(seg[0][1] == 2 * nprocs, "%s: counter %lld, expected %d", how,
                 (long long) seg[0][1], 2 * nprocs);
        TU_CHECK(seg[0][2] >= 100 && seg[0][2] < 100 + nprocs, "%s: cas word %lld", how,
                 (long long) seg[0][2]);
    }
    {
        /* exactly one compare_and_swap saw 5 */
        int64_t won = (cas_old == 5), total = 0;
        MPI_Allreduce(&won, &total, 1, MPI_INT64_T, MPI_SUM, MPI_COMM_WORLD);
        TU_CHECK(total == 1, "%s: %lld compare_and_swaps won", how, (long long) total);
    }
    TU_MPI(MPI_Win_unlock_all(win));
    TU_MPI(MPI_Win_free(&win));
    if (MPI_INFO_NULL != info) MPI_Info_free(&info);
    free(seg);
}

static void empty_rank(void)
{
    MPI_Aint qsize;
    int qdisp;
    int64_t *mine, *p;
    MPI_Win win;

    TU_MPI(MPI_Win_allocate_shared(1 == me ? 0 : 16, 8, MPI_INFO_NULL, MPI_COMM_WORLD, &mine,
                                   &win));
    TU_MPI(MPI_Win_shared_query(win, 1, &qsize, &qdisp, &p));
    TU_CHECK(0 == qsize, "rank 1 allocated nothing, query says %ld bytes", (long) qsize);
    TU_MPI(MPI_Win_shared_query(win, MPI_PROC_NULL, &qsize, &qdisp, &p));
    TU_CHECK(16 == qsize, "MPI_PROC_NULL query: %ld bytes", (long) qsize);
    TU_MPI(MPI_Win_free(&win));
}

int main(int argc, char **argv)
{
    MPI_Win win;
    void *base, *p;
    MPI_Aint qsize;
    int qdisp, rc;

    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &me);
    MPI_Comm_size(MPI_COMM_WORLD, &nprocs);
    tu_parse_args(argc, argv);
    one_window(0);
    one_window(1);
    if (nprocs > 1) empty_rank();

    TU_MPI(MPI_Win_allocate(64, 1, MPI_INFO_NULL, MPI_COMM_WORLD, &base, &win));
    MPI_Win_set_errhandler(win, MPI_ERRORS_RETURN);
    rc = MPI_Win_shared_query(win, 0, &qsize, &qdisp, &p);
    TU_CHECK(MPI_SUCCESS != rc, "MPI_Win_shared_query on an MPI_Win_allocate window succeeded");
    TU_MPI(MPI_Win_free(&win));

    rc = tu_finish("shared_win");
    MPI_Finalize();
    return rc;
}
