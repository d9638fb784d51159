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
 *   4. windows where ranks allocate nothing (rank 1 only; every odd rank),
 *      contiguous and with alloc_shared_noncontig=true: the query of such a
 *      rank gives size 0 and a NULL base (MPI-4.1: no memory to load/store),
 *      and MPI_PROC_NULL still names rank 0 (16 bytes, its base);
 *   5. MPI_Win_shared_query on MPI_Win_allocate and MPI_Win_create windows
 *      (MPI-4.1 allows it on every flavor) succeeds: the own rank gives its
 *      own base, size and disp_unit; every other rank either size 0 and NULL
 *      or its size and disp_unit and a base; MPI_PROC_NULL gives rank 0's
 *      answer (shared_query checks loads and stores through those pointers).
 *   6. a job that spans nodes (test/hosts.sh): checks 1-4 run on each node's
 *      ranks (MPI_COMM_TYPE_SHARED); MPI_Win_allocate_shared over all ranks
 *      fails with MPI_ERR_RMA_SHARED on every rank, and the communicator stays
 *      usable; in 5, ranks on other nodes answer size 0 and NULL.
 * Open MPI 4.1.4's osc/sm passes the contiguous half of 1-3; with
 * alloc_shared_noncontig it reports page-rounded sizes; in 4 it gives
 * ranks with 0 bytes a non-NULL base.
 */
#include "testutil.h"
#include <stdint.h>

/* The ranks on this node (all of them on one node): checks 1-4 run there. */
static MPI_Comm comm;
static int me, nprocs, spans, wme, wprocs;

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

    TU_MPI(MPI_Win_allocate_shared(n * 8, 8, info, comm, &mine, &win));
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
    MPI_Barrier(comm);
    TU_MPI(MPI_Win_sync(win));
    for (int r = 0; r < nprocs; r++) {
        for (int i = 0; i < 3 * (r + 1) + 1; i++) {
            TU_CHECK(seg[r][i] == pat(r, i), "%s: load rank %d [%d] = %lld", how, r, i,
                     (long long) seg[r][i]);
        }
    }
    MPI_Barrier(comm);
    if (0 == me) seg[0][1] = 0;  /* the counter */
    if (0 == me) seg[0][2] = 5;  /* the compare-and-swap word */
    TU_MPI(MPI_Win_sync(win));
    MPI_Barrier(comm);

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
    MPI_Barrier(comm);
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
        MPI_Allreduce(&won, &total, 1, MPI_INT64_T, MPI_SUM, comm);
        TU_CHECK(total == 1, "%s: %lld compare_and_swaps won", how, (long long) total);
    }
    TU_MPI(MPI_Win_unlock_all(win));
    TU_MPI(MPI_Win_free(&win));
    if (MPI_INFO_NULL != info) MPI_Info_free(&info);
    free(seg);
}

/* Ranks with 0 bytes: every odd rank (odd != 0) or rank 1 only. */
static void empty_ranks(int every_odd, int noncontig)
{
    MPI_Info info = noncontig ? tu_info_new("alloc_shared_noncontig", "true", NULL) : MPI_INFO_NULL;
    MPI_Aint qsize;
    int qdisp;
    int64_t *mine, *p, *p0 = NULL;
    MPI_Win win;
    char how[80];

    snprintf(how, sizeof(how), "%s, %s", every_odd ? "odd ranks 0 bytes" : "rank 1 0 bytes",
             noncontig ? "noncontig" : "contiguous");
    int empty = every_odd ? (me % 2) : (1 == me);
    TU_MPI(MPI_Win_allocate_shared(empty ? 0 : 16, 8, info, comm, &mine, &win));
    for (int r = 0; r < nprocs; r++) {
        int r_empty = every_odd ? (r % 2) : (1 == r);
        p = (int64_t *) 1;
        TU_MPI(MPI_Win_shared_query(win, r, &qsize, &qdisp, &p));
        if (r_empty) {
            TU_CHECK(0 == qsize && NULL == p, "%s: rank %d allocated nothing, query says %ld bytes at %p",
                     how, r, (long) qsize, (void *) p);
        } else {
            TU_CHECK(16 == qsize && NULL != p, "%s: rank %d: %ld bytes at %p", how, r, (long) qsize,
                     (void *) p);
        }
        if (0 == r) p0 = p;
    }
    TU_MPI(MPI_Win_shared_query(win, MPI_PROC_NULL, &qsize, &qdisp, &p));
    TU_CHECK(16 == qsize && p == p0, "%s: MPI_PROC_NULL query: %ld bytes at %p (rank 0: %p)", how,
             (long) qsize, (void *) p, (void *) p0);
    TU_MPI(MPI_Win_free(&win));
    if (MPI_INFO_NULL != info) MPI_Info_free(&info);
}

static const char *cls_name(int rc)
{
    int cls = tu_err_class(rc);
    return MPI_ERR_RMA_FLAVOR == cls ? "MPI_ERR_RMA_FLAVOR" : tu_err_class_name(cls);
}

/* Check 5: the query on the other flavors. */
static void other_flavor(int allocate)
{
    const char *how = allocate ? "MPI_Win_allocate window" : "MPI_Win_create window";
    MPI_Aint mysize = 64 + 8 * wme, qsize, s0 = -1;
    int qdisp, d0 = -1, rc;
    void *base, *p, *p0 = NULL, *mem = NULL;
    MPI_Win win;

    if (allocate) {
        TU_MPI(MPI_Win_allocate(mysize, 1 + wme % 2, MPI_INFO_NULL, MPI_COMM_WORLD, &base, &win));
    } else {
        base = mem = malloc(mysize);
        TU_MPI(MPI_Win_create(base, mysize, 1 + wme % 2, MPI_INFO_NULL, MPI_COMM_WORLD, &win));
    }
    MPI_Win_set_errhandler(win, MPI_ERRORS_RETURN);
    for (int r = 0; r < wprocs; r++) {
        qsize = -1; qdisp = -1; p = (void *) 1;
        rc = MPI_Win_shared_query(win, r, &qsize, &qdisp, &p);
        TU_CHECK(MPI_SUCCESS == rc, "MPI_Win_shared_query(rank %d) on an %s returned %s", r, how,
                 cls_name(rc));
        if (MPI_SUCCESS != rc) continue;
        if (r == wme) {
            TU_CHECK(p == base && qsize == mysize && qdisp == 1 + wme % 2,
                     "%s: query of my rank: %ld bytes, disp_unit %d, at %p; expected %ld, %d, %p", how,
                     (long) qsize, qdisp, p, (long) mysize, 1 + wme % 2, base);
        } else {
            TU_CHECK((0 == qsize && NULL == p) ||
                     (64 + 8 * r == qsize && 1 + r % 2 == qdisp && NULL != p),
                     "%s: query of rank %d: %ld bytes, disp_unit %d, at %p", how, r, (long) qsize, qdisp, p);
            TU_CHECK(NULL == p || tu_on_my_node(MPI_COMM_WORLD, comm, r),
                     "%s: rank %d is on another node, but its query gave a pointer", how, r);
        }
        if (0 == r) { p0 = p; s0 = qsize; d0 = qdisp; }
    }
    p = (void *) 1;
    rc = MPI_Win_shared_query(win, MPI_PROC_NULL, &qsize, &qdisp, &p);
    TU_CHECK(MPI_SUCCESS == rc, "MPI_Win_shared_query(MPI_PROC_NULL) on an %s returned %s", how,
             cls_name(rc));
    if (MPI_SUCCESS == rc)
        TU_CHECK(p == p0 && qsize == s0 && (0 == qsize || qdisp == d0),
                 "MPI_Win_shared_query(MPI_PROC_NULL) on an %s: %ld bytes at %p (rank 0: %ld at %p)",
                 how, (long) qsize, p, (long) s0, p0);
    TU_MPI(MPI_Win_free(&win));
    free(mem);
}

/* Check 6: no shared window over ranks of several nodes; the error comes
 * back on every rank (no rank may wait for the others), and the
 * communicator still works. */
static void spanning_refused(void)
{
    void *base = (void *) 1;
    MPI_Win win = MPI_WIN_NULL;
    int rc, ok, all = 0;
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    rc = MPI_Win_allocate_shared(64, 8, MPI_INFO_NULL, MPI_COMM_WORLD, &base, &win);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_ARE_FATAL);
    TU_CHECK(MPI_ERR_RMA_SHARED == tu_err_class(rc),
             "MPI_Win_allocate_shared over 2+ nodes returned %s, expected MPI_ERR_RMA_SHARED",
             cls_name(rc));
    if (MPI_SUCCESS == rc) MPI_Win_free(&win);
    else TU_CHECK(MPI_WIN_NULL == win, "a failed MPI_Win_allocate_shared left a window");
    ok = MPI_SUCCESS != rc;
    MPI_Allreduce(&ok, &all, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    TU_CHECK(all == wprocs, "MPI_Win_allocate_shared over 2+ nodes failed on %d of %d ranks", all,
             wprocs);
}

int main(int argc, char **argv)
{
    int rc;

    tu_parse_args(argc, argv);   /* (MCA settings: before MPI_Init) */
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &wme);
    MPI_Comm_size(MPI_COMM_WORLD, &wprocs);
    comm = tu_node_comm(MPI_COMM_WORLD, &spans);
    MPI_Comm_rank(comm, &me);
    MPI_Comm_size(comm, &nprocs);
    if (spans) spanning_refused();
    one_window(0);
    one_window(1);
    if (nprocs > 1) {
        for (int noncontig = 0; noncontig < 2; noncontig++) {
            empty_ranks(0, noncontig);
            empty_ranks(1, noncontig);
        }
    }
    other_flavor(1);
    other_flavor(0);

    MPI_Comm_free(&comm);
    rc = tu_finish("shared_win");
    MPI_Finalize();
    return rc;
}
