/* Memory-handle windows: bad handles, bad parents, attributes.
 * The parent (MPI_Win_create_dynamic) and every window made from a handle
 * have MPI_ERRORS_RETURN; MPI_COMM_WORLD too, unless "--win-only" is given
 * (then an error reported anywhere but through the window's handler aborts).
 * Every rank creates handles on its memory and passes them to the next rank
 * (MPI_Sendrecv), i.e. each rank uses the handles of the previous rank.
 * A bad handle is "refused" when MPIX_Win_from_memhandle returns an error, or
 * when it returns a window and the first operation (lock of the parent, put,
 * flush, get, flush) returns an error; accepting it fails the test.  Cases:
 *   all-zero bytes; pseudo-random bytes; the first half of a valid handle
 *   followed by zeros / by random bytes; a window size 8 bytes larger than
 *   the handle's memory (probed at the end of the window); size -8;
 *   disp_unit 0; target rank nprocs; a handle the creator released before
 *   the window was made.
 * Wrong parents: an MPI_Win_allocate window, an MPI_Win_create window and a
 * memory-handle window as parent of MPIX_Win_from_memhandle,
 * MPIX_Memhandle_create and MPIX_Memhandle_release -> an error class; with
 * MPI_COMM_WORLD returning errors also MPI_WIN_NULL as parent.
 * MPIX_Memhandle_create of size -8, a second release of a released handle and
 * the release of random bytes -> an error class.
 * A handle released while the peer still has a window on it: the peer's next
 * put + flush must return MPI_SUCCESS or MPI_ERR_RMA_RANGE (the header
 * leaves detection to "where osc/ucxx can tell"; rank 0 prints which) and
 * freeing that window must work.
 * A valid window (size: the handle's 64 int64 minus 2, disp_unit 8):
 * MPI_WIN_BASE is present, MPI_WIN_SIZE and MPI_WIN_DISP_UNIT are the values
 * given, the window is MPI_WIN_FLAVOR_CREATE with the parent's group and
 * error handler (tu_check_local_window), MPI_Win_set_name / MPI_Win_get_name
 * round-trip; a put at element 62
 * (inside the handle's memory but past the window) -> MPI_ERR_RMA_RANGE and
 * the creator's memory there is unchanged; put/get at element 61 work.
 * Afterwards a fresh window on a valid handle and the parent itself (attach,
 * put, get) still work, and the creator sees every value it should (and no
 * write from the refused cases in its buffers).
 * "--foreign" (or MH_FOREIGN=1), to run with a stock component, e.g.
 * "--mca osc rdma": every MPIX function must return MPI_ERR_WIN on that
 * component's dynamic and allocated windows, and the windows keep working. */
#include "testutil.h"
#include "mpix_ucxx.h"
#include <stdint.h>

#define NM 64
#define SENT ((int64_t) 0x5e5e5e5e5e5e5e5eLL)

static int rank, nprocs, next, prev;
static MPI_Win parent;

#define EXPECT_ERR(call, what)                                                                   \
    do {                                                                                         \
        int rc_ = (call);                                                                        \
        TU_CHECK(MPI_SUCCESS != rc_, "%s: %s returned MPI_SUCCESS, expected an error", what, #call); \
    } while (0)

#define EXPECT_CLASS(call, cls, what)                                                             \
    do {                                                                                          \
        int c_ = tu_err_class(call);                                                              \
        TU_CHECK((cls) == c_, "%s: %s returned %s, expected %s", what, #call, tu_err_class_name(c_), \
                 tu_err_class_name(cls));                                                         \
    } while (0)

static void fill_random(unsigned char *p, int n, unsigned seed)
{
    for (int i = 0; i < n; i++) {
        seed = seed * 1103515245u + 12345u;
        p[i] = (unsigned char) (seed >> 16);
    }
}

/* A handle that must be refused at creation or at the first operation. */
static void expect_refused(const void *h, MPI_Aint size, int du, int target, MPI_Aint probe_disp,
                           const char *what)
{
    MPI_Win w = MPI_WIN_NULL;
    int rc = MPIX_Win_from_memhandle(h, size, du, MPI_INFO_NULL, target, parent, &w);
    if (MPI_SUCCESS != rc) {   /* refused at creation */
        if (0 == rank) printf("  %s: refused by MPIX_Win_from_memhandle (%s)\n", what, tu_err_class_name(tu_err_class(rc)));
        return;
    }
    TU_CHECK(MPI_WIN_NULL != w, "%s: MPIX_Win_from_memhandle succeeded but returned MPI_WIN_NULL", what);
    if (MPI_WIN_NULL == w) return;
    MPI_Win_set_errhandler(w, MPI_ERRORS_RETURN);
    int64_t v = 4711, r = 0;
    int refused = 0;
    int c[6] = { MPI_SUCCESS, MPI_SUCCESS, MPI_SUCCESS, MPI_SUCCESS, MPI_SUCCESS, MPI_SUCCESS };
    c[0] = tu_err_class(MPI_Win_lock(MPI_LOCK_SHARED, target, 0, parent));
    if (MPI_SUCCESS == c[0]) {
        c[1] = tu_err_class(MPI_Put(&v, 1, MPI_INT64_T, target, probe_disp, 1, MPI_INT64_T, w));
        c[2] = tu_err_class(MPI_Win_flush(target, w));
        c[3] = tu_err_class(MPI_Get(&r, 1, MPI_INT64_T, target, probe_disp, 1, MPI_INT64_T, w));
        c[4] = tu_err_class(MPI_Win_flush(target, w));
        c[5] = tu_err_class(MPI_Win_unlock(target, parent));
    }
    for (int i = 0; i < 6; i++) refused |= MPI_SUCCESS != c[i];
    if (0 == rank)
        printf("  %s: window created; lock %s, put %s, flush %s, get %s, flush %s, unlock %s\n", what,
               tu_err_class_name(c[0]), tu_err_class_name(c[1]), tu_err_class_name(c[2]), tu_err_class_name(c[3]),
               tu_err_class_name(c[4]), tu_err_class_name(c[5]));
    TU_CHECK(refused, "%s: accepted (window created, put/flush/get/flush returned MPI_SUCCESS)", what);
    int frc = MPI_Win_free(&w);
    TU_CHECK(MPI_SUCCESS == frc, "%s: MPI_Win_free of the window returned %s", what,
             tu_err_class_name(tu_err_class(frc)));
}

static int make_handle(void *base, MPI_Aint size, char *h)
{
    int hs = 0;
    TU_MPI(MPIX_Memhandle_create(base, size, MPI_INFO_NULL, parent, h, &hs));
    TU_CHECK(hs > 0 && hs <= MPIX_MAX_MEMHANDLE_SIZE, "MPIX_Memhandle_create wrote a handle of %d bytes", hs);
    return hs;
}

/* Send my handle to next, receive prev's. */
static int pass_handle(const char *mine, int ms, char *theirs)
{
    MPI_Status st;
    int n = 0;
    MPI_Sendrecv(mine, ms, MPI_BYTE, next, 7, theirs, MPIX_MAX_MEMHANDLE_SIZE, MPI_BYTE, prev, 7, MPI_COMM_WORLD, &st);
    MPI_Get_count(&st, MPI_BYTE, &n);
    return n;
}

static int sentinels_ok(const int64_t *p, int n)
{
    for (int j = 0; j < n; j++) if (p[j] != SENT) return 0;
    return 1;
}

/* Put v at element e of prev's handle memory through a fresh window; get it back. */
static void good_window_roundtrip(const char *h, int64_t v, int e, const char *what)
{
    MPI_Win w = MPI_WIN_NULL;
    int64_t r = 0;
    TU_MPI(MPIX_Win_from_memhandle(h, NM * 8, 8, MPI_INFO_NULL, prev, parent, &w));
    MPI_Win_set_errhandler(w, MPI_ERRORS_RETURN);
    TU_MPI(MPI_Win_lock(MPI_LOCK_SHARED, prev, 0, parent));
    TU_MPI(MPI_Put(&v, 1, MPI_INT64_T, prev, e, 1, MPI_INT64_T, w));
    TU_MPI(MPI_Win_flush(prev, w));
    TU_MPI(MPI_Get(&r, 1, MPI_INT64_T, prev, e, 1, MPI_INT64_T, w));
    TU_MPI(MPI_Win_flush(prev, w));
    TU_MPI(MPI_Win_unlock(prev, parent));
    TU_CHECK(r == v, "%s: read %lld, expected %lld", what, (long long) r, (long long) v);
    TU_MPI(MPI_Win_free(&w));
}

static int foreign(void)
{
    MPI_Win dyn, alloc;
    int64_t *abase, v = 99, r = 0;
    char h[MPIX_MAX_MEMHANDLE_SIZE];
    int hs = 0, flag = -1;
    MPI_Request rq;
    memset(h, 0, sizeof(h));
    TU_MPI(MPI_Win_create_dynamic(MPI_INFO_NULL, MPI_COMM_WORLD, &dyn));
    TU_MPI(MPI_Win_allocate(64, 8, MPI_INFO_NULL, MPI_COMM_WORLD, &abase, &alloc));
    MPI_Win_set_errhandler(dyn, MPI_ERRORS_RETURN);
    MPI_Win_set_errhandler(alloc, MPI_ERRORS_RETURN);
    MPI_Win w = MPI_WIN_NULL;
    EXPECT_CLASS(MPIX_Memhandle_create(h, 64, MPI_INFO_NULL, dyn, h, &hs), MPI_ERR_WIN, "foreign dynamic window");
    EXPECT_CLASS(MPIX_Win_from_memhandle(h, 64, 1, MPI_INFO_NULL, next, dyn, &w), MPI_ERR_WIN, "foreign dynamic window");
    EXPECT_CLASS(MPIX_Memhandle_release(h, dyn), MPI_ERR_WIN, "foreign dynamic window");
    EXPECT_CLASS(MPIX_Win_dup_with_info(alloc, MPI_INFO_NULL, &w), MPI_ERR_WIN, "foreign allocated window");
    EXPECT_CLASS(MPIX_Win_op_intrinsic("sum", 1, MPI_INT64_T, alloc, &flag), MPI_ERR_WIN, "foreign allocated window");
    TU_MPI(MPI_Win_lock_all(0, alloc));
    EXPECT_CLASS(MPIX_Rrput(&v, 1, MPI_INT64_T, next, 0, 1, MPI_INT64_T, alloc, &rq), MPI_ERR_WIN,
                 "foreign allocated window");
    EXPECT_CLASS(MPIX_Rraccumulate(&v, 1, MPI_INT64_T, next, 0, 1, MPI_INT64_T, MPI_SUM, alloc, &rq), MPI_ERR_WIN,
                 "foreign allocated window");
    EXPECT_CLASS(MPIX_Rrget_accumulate(&v, 1, MPI_INT64_T, &r, 1, MPI_INT64_T, next, 0, 1, MPI_INT64_T, MPI_SUM,
                                       alloc, &rq), MPI_ERR_WIN, "foreign allocated window");
    v = 1000 + rank;
    TU_MPI(MPI_Put(&v, 1, MPI_INT64_T, next, 1, 1, MPI_INT64_T, alloc));
    TU_MPI(MPI_Win_flush(next, alloc));
    TU_MPI(MPI_Get(&r, 1, MPI_INT64_T, next, 1, 1, MPI_INT64_T, alloc));
    TU_MPI(MPI_Win_unlock_all(alloc));
    TU_CHECK(r == 1000 + rank, "foreign allocated window: get after put returned %lld", (long long) r);
    TU_MPI(MPI_Win_free(&alloc));
    TU_MPI(MPI_Win_free(&dyn));
    return tu_finish("mh_errors --foreign");
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &nprocs);
    next = (rank + 1) % nprocs; prev = (rank + nprocs - 1) % nprocs;
    const int win_only = tu_opt_flag(argc, argv, "--win-only");
    const char *fenv = getenv("MH_FOREIGN");
    if (tu_opt_flag(argc, argv, "--foreign") || (fenv && atoi(fenv))) {
        int rc = foreign();
        MPI_Finalize();
        return rc;
    }
    if (!win_only) MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);

    TU_MPI(MPI_Win_create_dynamic(MPI_INFO_NULL, MPI_COMM_WORLD, &parent));
    MPI_Win_set_errhandler(parent, MPI_ERRORS_RETURN);

    /* my memory: m (valid handle), m2 (released early), m3 (released while in use) */
    int64_t *m = malloc(NM * 8), *m2 = malloc(NM * 8), *m3 = malloc(NM * 8);
    for (int j = 0; j < NM; j++) { m[j] = 100 * rank + j; m2[j] = m3[j] = SENT; }
    char h[MPIX_MAX_MEMHANDLE_SIZE], hp[MPIX_MAX_MEMHANDLE_SIZE], bad[MPIX_MAX_MEMHANDLE_SIZE];
    int hs = make_handle(m, NM * 8, h);
    int hps = pass_handle(h, hs, hp);
    TU_CHECK(hps == hs || nprocs == 1, "handle sizes differ: mine %d, previous rank's %d", hs, hps);
    MPI_Barrier(MPI_COMM_WORLD);

    /* ---- a valid window: attributes, name, window-size range check ---- */
    {
        MPI_Win w = MPI_WIN_NULL;
        const MPI_Aint wsize = (NM - 2) * 8;
        TU_MPI(MPIX_Win_from_memhandle(hp, wsize, 8, MPI_INFO_NULL, prev, parent, &w));
        MPI_Win_set_errhandler(w, MPI_ERRORS_RETURN);
        void *pbase = NULL;
        MPI_Aint *psize = NULL;
        int *pdu = NULL, f0 = 0, f1 = 0, f2 = 0, len = 0;
        TU_MPI(MPI_Win_get_attr(w, MPI_WIN_BASE, &pbase, &f0));
        TU_MPI(MPI_Win_get_attr(w, MPI_WIN_SIZE, &psize, &f1));
        TU_MPI(MPI_Win_get_attr(w, MPI_WIN_DISP_UNIT, &pdu, &f2));
        TU_CHECK(f0, "MPI_WIN_BASE missing on a memory-handle window");
        TU_CHECK(f1 && *psize == wsize, "MPI_WIN_SIZE is %ld, expected %ld", f1 ? (long) *psize : -1L, (long) wsize);
        TU_CHECK(f2 && *pdu == 8, "MPI_WIN_DISP_UNIT is %d, expected 8", f2 ? *pdu : -1);
        tu_check_local_window(w, parent, MPI_WIN_FLAVOR_CREATE, "memory-handle window");
        char name[MPI_MAX_OBJECT_NAME];
        snprintf(name, sizeof(name), "memhandle window of rank %d on rank %d", rank, prev);
        TU_MPI(MPI_Win_set_name(w, name));
        char got[MPI_MAX_OBJECT_NAME] = "";
        TU_MPI(MPI_Win_get_name(w, got, &len));
        TU_CHECK(0 == strcmp(got, name) && len == (int) strlen(name), "MPI_Win_get_name returned \"%s\" (%d)", got, len);
        int64_t v = -(1000 + rank), r = 0;
        TU_MPI(MPI_Win_lock(MPI_LOCK_SHARED, prev, 0, parent));
        EXPECT_CLASS(MPI_Put(&v, 1, MPI_INT64_T, prev, NM - 2, 1, MPI_INT64_T, w), MPI_ERR_RMA_RANGE,
                     "put just past the window size (inside the handle's memory)");
        EXPECT_CLASS(MPI_Get(&r, 2, MPI_INT64_T, prev, NM - 3, 2, MPI_INT64_T, w), MPI_ERR_RMA_RANGE,
                     "get straddling the window's end");
        /* 2^61 elements of 8 bytes: 2^64 bytes, which wraps to the handle's base */
        EXPECT_CLASS(MPI_Put(&v, 1, MPI_INT64_T, prev, (MPI_Aint) 1 << 61, 1, MPI_INT64_T, w),
                     MPI_ERR_RMA_RANGE, "put at a displacement whose byte offset wraps");
        TU_MPI(MPI_Put(&v, 1, MPI_INT64_T, prev, NM - 3, 1, MPI_INT64_T, w));
        TU_MPI(MPI_Win_flush(prev, w));
        TU_MPI(MPI_Get(&r, 1, MPI_INT64_T, prev, NM - 3, 1, MPI_INT64_T, w));
        TU_MPI(MPI_Win_flush(prev, w));
        /* the same probes right after accesses inside the window (where the
         * bytes are mapped, their region is now cached for the fast path):
         * still refused, and nothing written (the creator checks) */
        int64_t v2 = 424242, r2[2] = {0, 0};
        EXPECT_CLASS(MPI_Put(&v2, 1, MPI_INT64_T, prev, NM - 2, 1, MPI_INT64_T, w), MPI_ERR_RMA_RANGE,
                     "put just past the window size, after accesses inside it");
        EXPECT_CLASS(MPI_Accumulate(&v2, 1, MPI_INT64_T, prev, NM - 2, 1, MPI_INT64_T, MPI_SUM, w),
                     MPI_ERR_RMA_RANGE, "accumulate just past the window size, after accesses inside it");
        EXPECT_CLASS(MPI_Get(r2, 2, MPI_INT64_T, prev, NM - 3, 2, MPI_INT64_T, w), MPI_ERR_RMA_RANGE,
                     "get straddling the window's end, after accesses inside it");
        EXPECT_CLASS(MPI_Put(&v2, 1, MPI_INT64_T, prev, (MPI_Aint) 1 << 61, 1, MPI_INT64_T, w),
                     MPI_ERR_RMA_RANGE, "put at a wrapping displacement, after accesses inside it");
        TU_MPI(MPI_Win_flush(prev, w));
        TU_CHECK(MPI_SUCCESS == MPI_Win_unlock(prev, parent), "unlock after range errors failed");
        TU_CHECK(r == v, "last element of the window: read %lld, expected %lld", (long long) r, (long long) v);

        /* a memory-handle window is no parent */
        char h3[MPIX_MAX_MEMHANDLE_SIZE];
        int hs3 = 0;
        MPI_Win w2 = MPI_WIN_NULL;
        EXPECT_ERR(MPIX_Memhandle_create(m3, NM * 8, MPI_INFO_NULL, w, h3, &hs3), "memory-handle window as parent");
        EXPECT_ERR(MPIX_Win_from_memhandle(hp, NM * 8, 8, MPI_INFO_NULL, prev, w, &w2), "memory-handle window as parent");
        TU_MPI(MPI_Win_free(&w));
    }
    MPI_Barrier(MPI_COMM_WORLD);
    TU_CHECK(m[NM - 3] == -(1000 + next) && m[NM - 2] == 100 * rank + NM - 2,
             "creator: last window element %lld (expected %lld), element past the window %lld (expected %d)",
             (long long) m[NM - 3], (long long) -(1000 + next), (long long) m[NM - 2], 100 * rank + NM - 2);

    /* ---- bad handles ---- */
    memset(bad, 0, sizeof(bad));
    expect_refused(bad, NM * 8, 8, prev, 0, "all-zero handle");
    fill_random((unsigned char *) bad, hps, 12345 + rank);
    expect_refused(bad, NM * 8, 8, prev, 0, "random handle");
    memcpy(bad, hp, hps / 2);
    memset(bad + hps / 2, 0, sizeof(bad) - hps / 2);
    expect_refused(bad, NM * 8, 8, prev, 0, "first half of a handle, then zeros");
    fill_random((unsigned char *) bad + hps / 2, hps - hps / 2, 777 + rank);
    expect_refused(bad, NM * 8, 8, prev, 0, "first half of a handle, then random bytes");
    expect_refused(hp, NM * 8 + 8, 8, prev, NM, "window 8 bytes larger than the handle's memory");
    expect_refused(hp, -8, 8, prev, 0, "window size -8");
    expect_refused(hp, NM * 8, 0, prev, 0, "disp_unit 0");
    expect_refused(hp, NM * 8, 8, nprocs, 0, "target rank nprocs");
    MPI_Barrier(MPI_COMM_WORLD);

    /* ---- wrong parents ---- */
    {
        MPI_Win alloc, created, w = MPI_WIN_NULL;
        int64_t *abase, cbuf[8];
        char h4[MPIX_MAX_MEMHANDLE_SIZE];
        int hs4 = 0;
        TU_MPI(MPI_Win_allocate(64, 8, MPI_INFO_NULL, MPI_COMM_WORLD, &abase, &alloc));
        TU_MPI(MPI_Win_create(cbuf, sizeof(cbuf), 8, MPI_INFO_NULL, MPI_COMM_WORLD, &created));
        MPI_Win_set_errhandler(alloc, MPI_ERRORS_RETURN);
        MPI_Win_set_errhandler(created, MPI_ERRORS_RETURN);
        EXPECT_ERR(MPIX_Win_from_memhandle(hp, NM * 8, 8, MPI_INFO_NULL, prev, alloc, &w), "MPI_Win_allocate parent");
        EXPECT_ERR(MPIX_Memhandle_create(m3, NM * 8, MPI_INFO_NULL, alloc, h4, &hs4), "MPI_Win_allocate parent");
        EXPECT_ERR(MPIX_Memhandle_release(h, alloc), "MPI_Win_allocate parent");
        EXPECT_ERR(MPIX_Win_from_memhandle(hp, NM * 8, 8, MPI_INFO_NULL, prev, created, &w), "MPI_Win_create parent");
        EXPECT_ERR(MPIX_Memhandle_create(m3, NM * 8, MPI_INFO_NULL, created, h4, &hs4), "MPI_Win_create parent");
        EXPECT_ERR(MPIX_Memhandle_release(h, created), "MPI_Win_create parent");
        if (!win_only) {
            EXPECT_ERR(MPIX_Win_from_memhandle(hp, NM * 8, 8, MPI_INFO_NULL, prev, MPI_WIN_NULL, &w),
                       "MPI_WIN_NULL parent");
            EXPECT_ERR(MPIX_Memhandle_create(m3, NM * 8, MPI_INFO_NULL, MPI_WIN_NULL, h4, &hs4), "MPI_WIN_NULL parent");
            EXPECT_ERR(MPIX_Memhandle_release(h, MPI_WIN_NULL), "MPI_WIN_NULL parent");
        }
        /* those windows still work */
        int64_t v = 5000 + rank, r = 0;
        TU_MPI(MPI_Win_lock(MPI_LOCK_SHARED, next, 0, alloc));
        TU_MPI(MPI_Put(&v, 1, MPI_INT64_T, next, 3, 1, MPI_INT64_T, alloc));
        TU_MPI(MPI_Win_flush(next, alloc));
        TU_MPI(MPI_Get(&r, 1, MPI_INT64_T, next, 3, 1, MPI_INT64_T, alloc));
        TU_MPI(MPI_Win_unlock(next, alloc));
        TU_CHECK(r == v, "MPI_Win_allocate window after the MPIX errors: read %lld, expected %lld", (long long) r,
                 (long long) v);
        TU_MPI(MPI_Win_free(&alloc));
        TU_MPI(MPI_Win_free(&created));
    }
    /* the valid handle survived the refused release calls */
    MPI_Barrier(MPI_COMM_WORLD);
    good_window_roundtrip(hp, 6000 + rank, 5, "valid handle after wrong-parent calls");
    MPI_Barrier(MPI_COMM_WORLD);

    /* ---- other invalid arguments ---- */
    {
        char h5[MPIX_MAX_MEMHANDLE_SIZE];
        int hs5 = 0;
        EXPECT_ERR(MPIX_Memhandle_create(m3, -8, MPI_INFO_NULL, parent, h5, &hs5), "MPIX_Memhandle_create size -8");
        fill_random((unsigned char *) h5, sizeof(h5), 4242 + rank);
        EXPECT_ERR(MPIX_Memhandle_release(h5, parent), "release of random bytes");
    }

    /* ---- handle released before the peer makes its window ---- */
    {
        char h2[MPIX_MAX_MEMHANDLE_SIZE], h2p[MPIX_MAX_MEMHANDLE_SIZE];
        int hs2 = make_handle(m2, NM * 8, h2);
        pass_handle(h2, hs2, h2p);
        TU_MPI(MPIX_Memhandle_release(h2, parent));
        EXPECT_ERR(MPIX_Memhandle_release(h2, parent), "second release of a handle");
        MPI_Barrier(MPI_COMM_WORLD);   /* "released" */
        expect_refused(h2p, NM * 8, 8, prev, 0, "handle released before the window was made");
        MPI_Barrier(MPI_COMM_WORLD);
        TU_CHECK(sentinels_ok(m2 + 1, NM - 1) && (m2[0] == SENT || m2[0] == 4711),
                 "memory of a released handle was written");
    }

    /* ---- handle released while the peer has a window on it ---- */
    {
        char h3[MPIX_MAX_MEMHANDLE_SIZE], h3p[MPIX_MAX_MEMHANDLE_SIZE];
        int hs3 = make_handle(m3, NM * 8, h3);
        pass_handle(h3, hs3, h3p);
        MPI_Win w = MPI_WIN_NULL;
        int64_t v = 7000 + rank, r = 0;
        TU_MPI(MPIX_Win_from_memhandle(h3p, NM * 8, 8, MPI_INFO_NULL, prev, parent, &w));
        MPI_Win_set_errhandler(w, MPI_ERRORS_RETURN);
        TU_MPI(MPI_Win_lock(MPI_LOCK_SHARED, prev, 0, parent));
        TU_MPI(MPI_Put(&v, 1, MPI_INT64_T, prev, 1, 1, MPI_INT64_T, w));
        TU_MPI(MPI_Win_flush(prev, w));
        TU_MPI(MPI_Get(&r, 1, MPI_INT64_T, prev, 1, 1, MPI_INT64_T, w));
        TU_MPI(MPI_Win_unlock(prev, parent));
        TU_CHECK(r == v, "window on a live handle: read %lld, expected %lld", (long long) r, (long long) v);
        MPI_Barrier(MPI_COMM_WORLD);
        TU_CHECK(m3[1] == 7000 + next, "creator: element 1 is %lld, expected %d", (long long) m3[1], 7000 + next);
        TU_MPI(MPIX_Memhandle_release(h3, parent));
        MPI_Barrier(MPI_COMM_WORLD);   /* "released" */
        int c1 = MPI_SUCCESS, c2 = MPI_SUCCESS;
        v = 8000 + rank;
        TU_MPI(MPI_Win_lock(MPI_LOCK_SHARED, prev, 0, parent));
        c1 = tu_err_class(MPI_Put(&v, 1, MPI_INT64_T, prev, 2, 1, MPI_INT64_T, w));
        c2 = tu_err_class(MPI_Win_flush(prev, w));
        int c3 = tu_err_class(MPI_Win_unlock(prev, parent));
        TU_CHECK((MPI_SUCCESS == c1 || MPI_ERR_RMA_RANGE == c1) && (MPI_SUCCESS == c2 || MPI_ERR_RMA_RANGE == c2),
                 "access after the creator released the handle: put %s, flush %s (expected MPI_SUCCESS or "
                 "MPI_ERR_RMA_RANGE)", tu_err_class_name(c1), tu_err_class_name(c2));
        TU_CHECK(MPI_SUCCESS == c3 || MPI_ERR_RMA_RANGE == c3, "unlock after that: %s", tu_err_class_name(c3));
        int frc = MPI_Win_free(&w);
        TU_CHECK(MPI_SUCCESS == frc, "MPI_Win_free of a window whose handle was released: %s",
                 tu_err_class_name(tu_err_class(frc)));
        int detected = (MPI_SUCCESS != c1 || MPI_SUCCESS != c2), ndet = 0;
        MPI_Reduce(&detected, &ndet, 1, MPI_INT, MPI_SUM, 0, MPI_COMM_WORLD);
        if (0 == rank)
            printf("mh_errors: access after release while a window is open: detected on %d of %d ranks "
                   "(rank 0: put %s, flush %s)\n", ndet, nprocs, tu_err_class_name(c1), tu_err_class_name(c2));
        MPI_Barrier(MPI_COMM_WORLD);
    }

    /* ---- everything still works ---- */
    good_window_roundtrip(hp, 9000 + rank, 7, "fresh window on the valid handle at the end");
    {
        int64_t region[4] = { 0, 0, 0, 0 }, v = 9500 + rank, r = 0;
        MPI_Aint mine, *all = malloc(nprocs * sizeof(MPI_Aint));
        TU_MPI(MPI_Win_attach(parent, region, sizeof(region)));
        MPI_Get_address(region, &mine);
        MPI_Allgather(&mine, 1, MPI_AINT, all, 1, MPI_AINT, MPI_COMM_WORLD);
        TU_MPI(MPI_Win_lock_all(0, parent));
        TU_MPI(MPI_Put(&v, 1, MPI_INT64_T, next, all[next] + 8, 1, MPI_INT64_T, parent));
        TU_MPI(MPI_Win_flush(next, parent));
        TU_MPI(MPI_Get(&r, 1, MPI_INT64_T, next, all[next] + 8, 1, MPI_INT64_T, parent));
        TU_MPI(MPI_Win_unlock_all(parent));
        TU_CHECK(r == v, "parent window (attached region): read %lld, expected %lld", (long long) r, (long long) v);
        MPI_Barrier(MPI_COMM_WORLD);
        TU_CHECK(region[1] == 9500 + prev, "parent window: target sees %lld, expected %d", (long long) region[1],
                 9500 + prev);
        TU_MPI(MPI_Win_detach(parent, region));
        free(all);
    }
    MPI_Barrier(MPI_COMM_WORLD);
    {
        int bad = 0;
        for (int j = 0; j < NM; j++) {
            int64_t exp = 100 * rank + j;
            if (j == 0) continue;   /* probe target of the refused cases: checked below */
            if (j == 5) exp = 6000 + next;   /* next uses my handles */
            if (j == 7) exp = 9000 + next;
            if (j == NM - 3) exp = -(1000 + next);
            if (m[j] != exp) bad++;
        }
        TU_CHECK(0 == bad, "creator: %d wrong values in the valid handle's memory", bad);
        TU_CHECK(m[0] == 100 * rank || m[0] == 4711, "creator: element 0 is %lld", (long long) m[0]);
    }
    TU_MPI(MPIX_Memhandle_release(h, parent));
    TU_MPI(MPI_Win_free(&parent));
    free(m); free(m2); free(m3);
    int rc = tu_finish(win_only ? "mh_errors --win-only" : "mh_errors");
    MPI_Finalize();
    return rc;
}
