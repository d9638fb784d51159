/* shared_query: MPI_Win_shared_query on every window flavor (MPI-4.1 allows
 * it on windows of any flavor).
 *
 * Flavors: create, allocate, dynamic and allocate_shared (the latter
 * contiguous and with alloc_shared_noncontig=true); TU_FLAVORS narrows the
 * set (all four when it is unset).  Rank r exposes 8 * (nprocs + 2 + 3r)
 * bytes with disp_unit 1 << (r % 4), so the answer of a wrong rank shows.
 * Three layouts: every rank has memory; even ranks have 0 bytes ("holes",
 * so MPI_PROC_NULL names rank 1); nobody has memory.
 *
 * Every rank queries every rank and MPI_PROC_NULL.  Each query must return
 * MPI_SUCCESS, and the answer must be either
 *   "none":    size 0 and base NULL (the caller cannot load/store there), or
 *   "pointer": size == that rank's size, disp_unit == that rank's disp_unit,
 *              a non-NULL base through which loads and stores reach the
 *              target's window memory (checked with values, below).
 * A rank with 0 bytes must answer "none" (size 0, NULL base: MPI-4.1 and
 * issue 17 item 2, also with alloc_shared_noncontig).  Per flavor:
 *   create, allocate: the own rank (with memory) answers "pointer" with its
 *              own window base; peers may answer either;
 *   dynamic:   this test expects "none" for every rank and for MPI_PROC_NULL
 *              (a dynamic window has no segment to name);
 *   shared:    every rank with memory answers "pointer", the own rank with
 *              the base MPI_Win_allocate_shared returned.
 * A rank on another node (jobs across test/hosts.sh's hosts) answers "none".
 * MPI_PROC_NULL: the answer of the lowest rank with size > 0 (same size,
 * disp_unit and base); "none" when no rank has memory.
 * Values: inside a lock_all epoch every rank fills its own memory with a
 * pattern, MPI_Win_sync + barrier + MPI_Win_sync, then every rank loads all
 * of each "pointer" target's memory and compares, stores a mark in its own
 * word of it (word 1 + reader), sync + barrier + sync, and each owner checks
 * the marks of the readers that had a pointer and that the other words kept
 * the pattern.
 * Create windows also get a fourth layout, L_PAGES (below).
 * Rank 0 prints, per flavor and layout, how many queries of a peer with
 * memory were answered with a pointer.
 * Stock components (Open MPI 4.1.4): osc/ucx and osc/rdma fail the query on
 * create, allocate and dynamic windows with MPI_ERR_RMA_FLAVOR (and make no
 * shared windows); osc/sm (TU_FLAVORS=shared) reports page-rounded sizes
 * (4096) with alloc_shared_noncontig and a non-NULL base for ranks with 0
 * bytes. */
#include "testutil.h"
#include <stdint.h>

/* The ranks a window spans: all (comm = MPI_COMM_WORLD), but for shared
 * windows only those of this node (comm = node) when the job spans nodes
 * (test/hosts.sh).  me, nprocs: in comm. */
static MPI_Comm comm, node;
static int me, nprocs;

/* L_PAGES (create windows only): rank r exposes r + 1 whole pages at a
 * page-aligned base; that memory stays private to its process, so peers
 * must answer "none" (osc/ucxx never maps another process's user memory). */
enum { L_ALL, L_HOLES, L_NONE, L_PAGES, L_N };
static const char *layout_names[] = { "all ranks have memory", "even ranks 0 bytes",
                                      "no rank has memory", "whole pages" };
static int du_of(int r) { return 1 << (r % 4); }

static MPI_Aint size_of(int r, int layout)
{
    if (L_NONE == layout || (L_HOLES == layout && 0 == r % 2)) return 0;
    if (L_PAGES == layout) return (MPI_Aint) sysconf(_SC_PAGESIZE) * (r + 1);
    return 8 * (MPI_Aint) (nprocs + 2 + 3 * r);
}

/* A create window over page-aligned whole pages (tu_win_create callocs). */
static void pages_create(MPI_Aint size, tu_win_t *w)
{
    void *buf = NULL;
    memset(w, 0, sizeof(*w));
    TU_CHECK(0 == posix_memalign(&buf, (size_t) sysconf(_SC_PAGESIZE), (size_t) size),
             "posix_memalign");
    memset(buf, 0, (size_t) size);
    w->base = buf;
    w->size = size;
    w->disp_unit = du_of(me);
    w->flavor = TU_CREATE;
    TU_MPI(MPI_Win_create(buf, size, du_of(me), MPI_INFO_NULL, comm, &w->win));
    MPI_Win_set_errhandler(w->win, MPI_ERRORS_RETURN);
    MPI_Barrier(comm);
}
static int64_t pat(int r, int i) { return 0x1000000LL * (r + 1) + 7 * i + 3; }
static int64_t mark(int q, int r) { return -(100000LL * (q + 1) + r) - 1; }

/* Error class name of a return code, covering the classes a query may return. */
static const char *cls_name(int rc)
{
    int cls = tu_err_class(rc);
    return MPI_ERR_RMA_FLAVOR == cls ? "MPI_ERR_RMA_FLAVOR" : tu_err_class_name(cls);
}


static void one_window(int flavor, int layout, int noncontig)
{
    char how[160];
    MPI_Info info = noncontig ? tu_info_new("alloc_shared_noncontig", "true", NULL) : MPI_INFO_NULL;
    comm = TU_ALLOC_SHARED == flavor ? node : MPI_COMM_WORLD;
    MPI_Comm_rank(comm, &me);
    MPI_Comm_size(comm, &nprocs);
    MPI_Aint mysize = size_of(me, layout);
    tu_win_t w;
    int64_t **ptr = calloc(nprocs, sizeof(*ptr));
    int *had = calloc(nprocs, sizeof(int)), *all_had = calloc((size_t) nprocs * nprocs, sizeof(int));
    int npointer = 0, npeer = 0;

    snprintf(how, sizeof(how), "%s%s, %s", tu_flavor_names[flavor],
             noncontig ? " (noncontig)" : "", layout_names[layout]);
    if (L_PAGES == layout) pages_create(mysize, &w);
    else tu_win_create(flavor, mysize, du_of(me), info, comm, &w);
    if (MPI_INFO_NULL != info) MPI_Info_free(&info);
    if (MPI_WIN_NULL == w.win) {
        if (0 == me) printf("shared_query: %s: n/a (no MPI_Win_allocate_shared)\n", how);
        free(ptr); free(had); free(all_had);
        return;
    }

    /* ---- queries ---- */
    MPI_Aint qs[2] = { -1, -1 };
    int qd = -1, lowest = -1, nfail = 0, fail_rc = MPI_SUCCESS;
    void *qp = NULL;
    for (int r = 0; r < nprocs; r++) {
        MPI_Aint sz = -1;
        int du = -1, rc;
        void *p = (void *) 1;
        MPI_Aint want = size_of(r, layout);
        if (lowest < 0 && want > 0) lowest = r;
        rc = MPI_Win_shared_query(w.win, r, &sz, &du, &p);
        if (MPI_SUCCESS != rc) {   /* reported once per window, below */
            if (!nfail++) fail_rc = rc;
            continue;
        }
        int none = (0 == sz && NULL == p);
        int pointer = (want > 0 && sz == want && du == du_of(r) && NULL != p);
        if (0 == want) {
            TU_CHECK(none, "%s: query of rank %d (0 bytes): size %ld base %p, expected 0 and NULL",
                     how, r, (long) sz, p);
        } else if (!none && !pointer) {
            TU_CHECK(none || pointer,
                     "%s: query of rank %d: size %ld disp_unit %d base %p; expected size 0 and NULL, "
                     "or size %ld disp_unit %d and a base", how, r, (long) sz, du, p, (long) want,
                     du_of(r));
        } else if (!tu_on_my_node(comm, node, r)) {
            TU_CHECK(none, "%s: query of rank %d (another node): size %ld base %p, expected 0 and NULL",
                     how, r, (long) sz, p);
        } else if (TU_DYNAMIC == flavor) {
            TU_CHECK(none, "%s: query of rank %d: size %ld base %p, expected 0 and NULL", how, r,
                     (long) sz, p);
        } else if (r == me) {
            TU_CHECK(pointer && p == w.base,
                     "%s: query of my own rank: size %ld disp_unit %d base %p, expected %ld, %d, %p",
                     how, (long) sz, du, p, (long) want, du_of(r), w.base);
        } else if (TU_ALLOC_SHARED == flavor) {
            TU_CHECK(pointer, "%s: query of rank %d gave size 0 and NULL on a shared window", how, r);
        } else if (L_PAGES == layout) {
            TU_CHECK(none, "%s: query of rank %d: size %ld base %p, expected size 0 and NULL",
                     how, r, (long) sz, p);
        }
        if (r == lowest) { qs[0] = sz; qd = du; qp = p; }
        if (pointer && !(r == me && p != w.base)) {
            ptr[r] = p;
            had[r] = (r != me);
        }
        if (r != me && want > 0) { npeer++; npointer += pointer; }
    }
    {
        MPI_Aint sz = -1;
        int du = -1, rc;
        void *p = (void *) 1;
        rc = MPI_Win_shared_query(w.win, MPI_PROC_NULL, &sz, &du, &p);
        if (MPI_SUCCESS != rc && !nfail++) fail_rc = rc;
        TU_CHECK(0 == nfail, "%s: %d of %d MPI_Win_shared_query calls (every rank and "
                 "MPI_PROC_NULL) failed, the first with %s", how, nfail, nprocs + 1,
                 cls_name(fail_rc));
        if (MPI_SUCCESS == rc && lowest < 0) {
            TU_CHECK(0 == sz && NULL == p,
                     "%s: MPI_PROC_NULL with no memory anywhere: size %ld base %p, expected 0 and NULL",
                     how, (long) sz, p);
        } else if (MPI_SUCCESS == rc) {
            qs[1] = sz;
            TU_CHECK(sz == qs[0] && p == qp && (0 == sz || du == qd),
                     "%s: MPI_PROC_NULL: size %ld disp_unit %d base %p; rank %d (the lowest with "
                     "memory) answered %ld, %d, %p", how, (long) sz, du, p, lowest, (long) qs[0], qd, qp);
        }
    }

    /* ---- loads and stores through the pointers ---- */
    int64_t *mine = w.base;
    int n = (int) (mysize / 8);
    TU_MPI(MPI_Win_lock_all(MPI_MODE_NOCHECK, w.win));
    for (int i = 0; i < n; i++) mine[i] = pat(me, i);
    TU_MPI(MPI_Win_sync(w.win));
    MPI_Barrier(comm);
    TU_MPI(MPI_Win_sync(w.win));
    for (int r = 0; r < nprocs; r++) {
        if (NULL == ptr[r]) continue;
        int bad = 0, first = -1, nr = (int) (size_of(r, layout) / 8);
        for (int i = 0; i < nr; i++) {
            if (ptr[r][i] != pat(r, i) && !bad++) first = i;
        }
        TU_CHECK(0 == bad, "%s: loads through rank %d's pointer: %d of %d words wrong (first [%d] "
                 "= %lld, expected %lld)", how, r, bad, nr, first,
                 first >= 0 ? (long long) ptr[r][first] : 0LL,
                 first >= 0 ? (long long) pat(r, first) : 0LL);
    }
    TU_MPI(MPI_Win_sync(w.win));
    MPI_Barrier(comm);
    for (int r = 0; r < nprocs; r++) {
        if (had[r]) ptr[r][1 + me] = mark(me, r);
    }
    TU_MPI(MPI_Win_sync(w.win));
    MPI_Barrier(comm);
    TU_MPI(MPI_Win_sync(w.win));
    MPI_Allgather(had, nprocs, MPI_INT, all_had, nprocs, MPI_INT, comm);
    {
        int bad = 0, first = -1;
        for (int i = 0; i < n; i++) {
            int q = i - 1;
            int64_t exp = (q >= 0 && q < nprocs && all_had[q * nprocs + me]) ? mark(q, me) : pat(me, i);
            if (mine[i] != exp && !bad++) first = i;
        }
        TU_CHECK(0 == bad, "%s: my memory after the peers' stores: %d wrong words (first [%d] = %lld)",
                 how, bad, first, first >= 0 ? (long long) mine[first] : 0LL);
    }
    TU_MPI(MPI_Win_unlock_all(w.win));

    int counts[2] = { npointer, npeer }, total[2];
    MPI_Reduce(counts, total, 2, MPI_INT, MPI_SUM, 0, comm);
    if (0 == me)
        printf("shared_query: %s: %d of %d peer queries answered with a pointer\n", how, total[0],
               total[1]);
    tu_win_free(&w);
    free(ptr); free(had); free(all_had);
}

int main(int argc, char **argv)
{
    tu_parse_args(argc, argv);   /* (MCA settings: before MPI_Init) */
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &me);
    MPI_Comm_size(MPI_COMM_WORLD, &nprocs);
    node = tu_node_comm(MPI_COMM_WORLD, NULL);
    tu_watchdog("shared_query", 60);
    for (int flavor = 0; flavor < TU_NFLAVORS_ALL; flavor++) {
        /* (across nodes shared windows are made per node: always tested) */
        if (!tu_flavor_or_all(flavor) && !(TU_ALLOC_SHARED == flavor && tu_multi_node())) continue;
        for (int layout = 0; layout < L_N; layout++) {
            if (L_PAGES == layout && TU_CREATE != flavor) continue;
            one_window(flavor, layout, 0);
            if (TU_ALLOC_SHARED == flavor) one_window(flavor, layout, 1);
        }
    }
    MPI_Comm_free(&node);
    int rc = tu_finish("shared_query");
    MPI_Finalize();
    return rc;
}
