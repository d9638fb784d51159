/* ext_dup: MPIX_Win_dup_with_info (mpix/mpix_ucxx.h).  Usage: ext_dup [N]
 * (default 20, 10 under UCX_TLS=tcp: increments per rank in the counter part).
 * For each window flavor (window "P", duplicate "D"):
 * 1. Info: P created with mpi_win_scope=thread, mpi_win_order=true,
 *    accumulate_ordering=none; D = dup(P, NULL) reports every key/value P
 *    reports; D2 = dup(P, {scope=process, order=false}) reports the overrides
 *    and P's other keys, and P still reports its own values.  D and P agree on
 *    MPI_WIN_BASE / MPI_WIN_SIZE / MPI_WIN_DISP_UNIT / MPI_WIN_CREATE_FLAVOR and
 *    the group.  A duplicate of a duplicate works too.
 * 2. Data: inside lock_all taken through P, data put+flushed through one
 *    handle is read back through the other; data put through D (not flushed)
 *    is complete at the target after P's unlock_all; fence epochs (fence
 *    through P, put through D) and PSCW (post/wait through P, start/put/
 *    complete through D) are shared; dynamic: memory attached through P after
 *    the dup is reachable through D.
 * 3. Locks (rank 1 the holder, rank 2 - or rank 0 itself with 2 ranks - the
 *    contender, rank 0 the target): the holder locks through one handle,
 *    writes marker 1, tells the contender (message) and then increments a
 *    counter K times (get/flush/put/flush, 1 ms apart) and writes marker 2
 *    before unlocking.  The contender, locking through the other handle after
 *    the message, must see marker 2 and counter K, and must get the lock
 *    after the holder's release time (CLOCK_MONOTONIC, one node).  Pairs:
 *    excl(D)/excl(P), excl(P)/shared(D), shared(D)/excl(P), lock_all(D)/excl(P).
 *    Then every rank increments a counter on rank 0 N times under exclusive
 *    locks, alternating P and D: the final value must be nprocs*N and the
 *    values read a permutation.
 * 4. Threads (MPI_THREAD_MULTIPLE): P (process scope, unordered) and D
 *    (thread scope, ordered) used at the same time by two threads, each
 *    verifying its own put/flush/get cycles; final contents checked.
 * 5. Free order: P freed first, then operations through D (lock/put/unlock,
 *    get) still work, on the same memory, then D freed; D freed first (rank 0
 *    at once, the others after using theirs, also on rank 0), then operations
 *    through P work, then P freed.
 * 6. MPIX_Win_dup_with_info(MPI_WIN_NULL) returns MPI_ERR_WIN (no crash).
 * 7. The object: D has P's flavor, model, group and error handler (a
 *    counting one: a bad call through D reaches it with D and the class),
 *    a Fortran handle of its own, no private info key; data put through D
 *    is read through P.  Open MPI 5: a dup whose creation Open MPI refuses
 *    (accumulate_ops=bogus) returns MPI_ERR_WIN through P's handler.
 * --other (run with --mca osc ucxx,sm or --mca osc sm, one node): a window
 * of another component (MPI_Win_allocate_shared: osc/sm) gets MPI_ERR_WIN
 * through its own error handler from MPIX_Win_dup_with_info,
 * MPIX_Win_op_intrinsic, MPIX_Rrput, MPIX_Memhandle_create and
 * MPIX_Win_from_memhandle, whether osc/ucxx is loaded or not. */
#include "testutil.h"
#include "mpix_ucxx.h"
#include <pthread.h>
#include <stdint.h>
#include <time.h>
#include <unistd.h>

#define BLK 128                       /* uint64 per region */
#define NREG 4
#define REG(r) (16 + (MPI_Aint) (r) * BLK)
#define NWORDS (16 + NREG * BLK)
#define K 20                          /* holder's increments */
#define TAG_GO 501
#define TAG_REL 502

static int rank, nprocs, next, prev, N, thread_multiple;
static tu_win_t P;                    /* parent (tu_win_t for tu_disp) */

static inline uint64_t pat(uint64_t a, uint64_t b, uint64_t i)
{
    uint64_t x = (a + 1) * 0x9E3779B97F4A7C15ull ^ (b + 3) * 0xBF58476D1CE4E5B9ull ^ (i + 5) * 0x94D049BB133111EBull;
    x ^= x >> 31; x *= 0xD6E8FEB86659FD93ull; x ^= x >> 32;
    return x;
}

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + 1e-9 * ts.tv_nsec;
}

static const char *fl(void) { return tu_flavor_names[P.flavor]; }

/* put a region through `pw`, flush, read back through `gw`, compare */
static void xfer_check(MPI_Win pw, MPI_Win gw, int region, uint64_t seed, const char *what)
{
    uint64_t buf[BLK], res[BLK];
    MPI_Aint d = tu_disp(&P, next, REG(region));
    for (int i = 0; i < BLK; i++) buf[i] = pat(rank, seed, i), res[i] = 0;
    TU_MPI(MPI_Put(buf, BLK, MPI_UINT64_T, next, d, BLK, MPI_UINT64_T, pw));
    TU_MPI(MPI_Win_flush(next, pw));
    TU_MPI(MPI_Get(res, BLK, MPI_UINT64_T, next, d, BLK, MPI_UINT64_T, gw));
    TU_MPI(MPI_Win_flush(next, gw));
    int bad = 0;
    for (int i = 0; i < BLK; i++) bad += res[i] != buf[i];
    TU_CHECK(0 == bad, "%s (%s): %d of %d words read back wrong", what, fl(), bad, BLK);
}

/* target side: my region `region` holds prev's data for `seed` */
static void local_check(void *base, int region, uint64_t seed, const char *what)
{
    volatile uint64_t *m = (volatile uint64_t *) base + REG(region);
    int bad = 0;
    for (int i = 0; i < BLK; i++) bad += m[i] != pat(prev, seed, i);
    TU_CHECK(0 == bad, "%s (%s): %d of %d words in my window wrong", what, fl(), bad, BLK);
}

/* ---- 1. info ---- */
static void compare_info(MPI_Win a, MPI_Win b, const char *skip1, const char *skip2, const char *what)
{
    MPI_Info ia;
    int nkeys;
    TU_MPI(MPI_Win_get_info(a, &ia));
    MPI_Info_get_nkeys(ia, &nkeys);
    for (int k = 0; k < nkeys; k++) {
        char key[MPI_MAX_INFO_KEY + 1], va[MPI_MAX_INFO_VAL + 1], vb[MPI_MAX_INFO_VAL + 1];
        int flag;
        MPI_Info_get_nthkey(ia, k, key);
        if ((skip1 && !strcmp(key, skip1)) || (skip2 && !strcmp(key, skip2))) continue;
        MPI_Info_get(ia, key, MPI_MAX_INFO_VAL, va, &flag);
        flag = tu_win_info_get(b, key, vb, sizeof(vb));
        TU_CHECK(flag && 0 == strcmp(va, vb), "%s (%s): key %s = '%s' in the parent, '%s' (set: %d) "
                 "in the duplicate", what, fl(), key, va, vb, flag);
    }
    MPI_Info_free(&ia);
}

static void expect_key(MPI_Win w, const char *key, const char *val, const char *what)
{
    char v[MPI_MAX_INFO_VAL + 1];
    int flag = tu_win_info_get(w, key, v, sizeof(v));
    TU_CHECK(flag && 0 == strcmp(v, val), "%s (%s): %s = '%s' (set: %d), expected '%s'", what, fl(),
             key, v, flag, val);
}

static void part_info(MPI_Win D)
{
    MPI_Win D2, DD;
    MPI_Info over = tu_info_new("mpi_win_scope", "process", "mpi_win_order", "false", NULL);
    expect_key(P.win, "mpi_win_scope", "thread", "1 parent");
    expect_key(P.win, "mpi_win_order", "true", "1 parent");
    compare_info(P.win, D, NULL, NULL, "1 dup(NULL)");
    expect_key(D, "mpi_win_scope", "thread", "1 dup(NULL)");
    expect_key(D, "mpi_win_order", "true", "1 dup(NULL)");
    TU_MPI(MPIX_Win_dup_with_info(P.win, over, &D2));
    MPI_Win_set_errhandler(D2, MPI_ERRORS_RETURN);
    expect_key(D2, "mpi_win_scope", "process", "1 dup(scope=process,order=false)");
    expect_key(D2, "mpi_win_order", "false", "1 dup(scope=process,order=false)");
    compare_info(P.win, D2, "mpi_win_scope", "mpi_win_order", "1 dup(scope=process,order=false)");
    expect_key(P.win, "mpi_win_scope", "thread", "1 parent after dup(scope=process)");
    expect_key(P.win, "mpi_win_order", "true", "1 parent after dup(order=false)");
    /* a duplicate of a duplicate: inherits D2's values */
    MPI_Info o2 = tu_info_new("mpi_win_order", "true", NULL);
    TU_MPI(MPIX_Win_dup_with_info(D2, o2, &DD));
    MPI_Win_set_errhandler(DD, MPI_ERRORS_RETURN);
    expect_key(DD, "mpi_win_scope", "process", "1 dup of dup");
    expect_key(DD, "mpi_win_order", "true", "1 dup of dup");
    MPI_Info_free(&o2);
    MPI_Info_free(&over);

    /* attributes and group */
    MPI_Win hs[3] = { D, D2, DD };
    for (int h = 0; h < 3; h++) {
        void *pb, *db;
        MPI_Aint *ps, *ds;
        int *pu, *du, *pf, *df, f1, f2;
        MPI_Win_get_attr(P.win, MPI_WIN_BASE, &pb, &f1);
        MPI_Win_get_attr(hs[h], MPI_WIN_BASE, &db, &f2);
        TU_CHECK(f1 && f2 && pb == db, "1 dup %d (%s): MPI_WIN_BASE %p, parent's %p", h, fl(),
                 f2 ? db : NULL, f1 ? pb : NULL);
        MPI_Win_get_attr(P.win, MPI_WIN_SIZE, &ps, &f1);
        MPI_Win_get_attr(hs[h], MPI_WIN_SIZE, &ds, &f2);
        TU_CHECK(f1 && f2 && *ps == *ds, "1 dup %d (%s): MPI_WIN_SIZE %ld, parent's %ld", h, fl(),
                 f2 ? (long) *ds : -1L, f1 ? (long) *ps : -1L);
        MPI_Win_get_attr(P.win, MPI_WIN_DISP_UNIT, &pu, &f1);
        MPI_Win_get_attr(hs[h], MPI_WIN_DISP_UNIT, &du, &f2);
        TU_CHECK(f1 && f2 && *pu == *du, "1 dup %d (%s): MPI_WIN_DISP_UNIT %d, parent's %d", h, fl(),
                 f2 ? *du : -1, f1 ? *pu : -1);
        MPI_Win_get_attr(P.win, MPI_WIN_CREATE_FLAVOR, &pf, &f1);
        MPI_Win_get_attr(hs[h], MPI_WIN_CREATE_FLAVOR, &df, &f2);
        TU_CHECK(f1 && f2 && *pf == *df, "1 dup %d (%s): MPI_WIN_CREATE_FLAVOR %d, parent's %d", h,
                 fl(), f2 ? *df : -1, f1 ? *pf : -1);
        MPI_Group gp, gd;
        int cmp = MPI_UNEQUAL;
        TU_MPI(MPI_Win_get_group(P.win, &gp));
        TU_MPI(MPI_Win_get_group(hs[h], &gd));
        MPI_Group_compare(gp, gd, &cmp);
        TU_CHECK(MPI_IDENT == cmp, "1 dup %d (%s): group compares %d to the parent's", h, fl(), cmp);
        MPI_Group_free(&gp);
        MPI_Group_free(&gd);
    }
    /* the dup of the dup moves data */
    TU_MPI(MPI_Win_lock_all(0, P.win));
    xfer_check(DD, P.win, 3, 900, "1 put through dup-of-dup, get through parent");
    xfer_check(P.win, DD, 3, 901, "1 put through parent, get through dup-of-dup");
    TU_MPI(MPI_Win_unlock_all(P.win));
    MPI_Barrier(MPI_COMM_WORLD);
    TU_MPI(MPI_Win_free(&DD));
    TU_MPI(MPI_Win_free(&D2));
    TU_CHECK(MPI_WIN_NULL == DD && MPI_WIN_NULL == D2, "1 (%s): MPI_Win_free left a duplicate "
             "handle set", fl());
}

/* ---- 7. the MPI_Win object ---- */
static int eh_calls, eh_class;
static MPI_Win eh_win;
static void count_eh(MPI_Win *w, int *code, ...)
{
    eh_calls++;
    eh_win = *w;
    MPI_Error_class(*code, &eh_class);
}

static void part_object(void)
{
    MPI_Errhandler eh;
    MPI_Win D = MPI_WIN_NULL;
    int flag = 0, *pf = NULL, r;
    uint64_t v = 7, got = 0;

    MPI_Win_get_attr(P.win, MPI_WIN_CREATE_FLAVOR, &pf, &flag);
    TU_MPI(MPI_Win_create_errhandler(count_eh, &eh));
    TU_MPI(MPI_Win_set_errhandler(P.win, eh));
    TU_MPI(MPIX_Win_dup_with_info(P.win, MPI_INFO_NULL, &D));
    tu_check_local_window(D, P.win, *pf, "7 dup");
    eh_calls = 0;
    r = MPIX_Win_op_intrinsic("bogus", 1, MPI_INT, D, &flag);
    TU_CHECK(MPI_ERR_ARG == tu_err_class(r) && 1 == eh_calls && D == eh_win &&
             MPI_ERR_ARG == eh_class, "7 (%s): a bad MPIX call through the dup returned %d, "
             "handler calls %d (class %d, on the dup: %d)", fl(), r, eh_calls, eh_class, D == eh_win);
    eh_calls = 0;
    r = MPI_Put(&v, 1, MPI_UINT64_T, nprocs, 0, 1, MPI_UINT64_T, D);
    TU_CHECK(MPI_ERR_RANK == tu_err_class(r) && 1 == eh_calls && D == eh_win,
             "7 (%s): MPI_Put to rank %d through the dup returned %d, handler calls %d", fl(),
             nprocs, r, eh_calls);
    /* a value Open MPI's creation refuses, after osc/ucxx made the view:
     * the view is dropped.  (Open MPI 4.1's creation itself crashes on a bad
     * accumulate_ops once a window object was freed before: the library
     * must refuse the value before it creates.) */
    MPI_Info bogus = tu_info_new("accumulate_ops", "bogus", NULL);
    MPI_Win bad = MPI_WIN_NULL;
    eh_calls = 0;
    r = MPIX_Win_dup_with_info(P.win, bogus, &bad);
    TU_CHECK(MPI_ERR_WIN == tu_err_class(r) && 1 == eh_calls && P.win == eh_win &&
             MPI_WIN_NULL == bad, "7 (%s): a dup with accumulate_ops=bogus returned %d, handler "
             "calls %d", fl(), r, eh_calls);
    MPI_Info_free(&bogus);
    TU_MPI(MPI_Win_set_errhandler(P.win, MPI_ERRORS_RETURN));
    TU_MPI(MPI_Errhandler_free(&eh));
    TU_MPI(MPI_Win_lock(MPI_LOCK_EXCLUSIVE, next, 0, D));
    TU_MPI(MPI_Put(&v, 1, MPI_UINT64_T, next, tu_disp(&P, next, 8), 1, MPI_UINT64_T, D));
    TU_MPI(MPI_Win_flush(next, D));
    TU_MPI(MPI_Get(&got, 1, MPI_UINT64_T, next, tu_disp(&P, next, 8), 1, MPI_UINT64_T, P.win));
    TU_MPI(MPI_Win_unlock(next, D));
    TU_CHECK(7 == got, "7 (%s): read %lu through P after a put through the dup", fl(),
             (unsigned long) got);
    MPI_Barrier(MPI_COMM_WORLD);
    TU_MPI(MPI_Win_free(&D));
}

/* ---- --other: another component's window ---- */
static void part_other(void)
{
    MPI_Errhandler eh;
    MPI_Win w, d = MPI_WIN_NULL;
    MPI_Request req;
    uint64_t *base, v = 1;
    char handle[MPIX_MAX_MEMHANDLE_SIZE];
    int flag, hsize, r[5];

    TU_MPI(MPI_Win_allocate_shared(64, 8, MPI_INFO_NULL, MPI_COMM_WORLD, &base, &w));
    TU_MPI(MPI_Win_create_errhandler(count_eh, &eh));
    TU_MPI(MPI_Win_set_errhandler(w, eh));
    memset(handle, 0, sizeof(handle));
    eh_calls = 0;
    r[0] = MPIX_Win_dup_with_info(w, MPI_INFO_NULL, &d);
    r[1] = MPIX_Win_op_intrinsic("sum", 1, MPI_INT, w, &flag);
    r[2] = MPIX_Rrput(&v, 1, MPI_UINT64_T, 0, 0, 1, MPI_UINT64_T, w, &req);
    r[3] = MPIX_Memhandle_create(base, 8, MPI_INFO_NULL, w, handle, &hsize);
    r[4] = MPIX_Win_from_memhandle(handle, 8, 8, MPI_INFO_NULL, 0, w, &d);
    for (int i = 0; i < 5; i++) {
        TU_CHECK(MPI_ERR_WIN == tu_err_class(r[i]), "other: call %d returned %s, expected "
                 "MPI_ERR_WIN", i, tu_err_class_name(tu_err_class(r[i])));
    }
    TU_CHECK(5 == eh_calls && w == eh_win && MPI_ERR_WIN == eh_class && MPI_WIN_NULL == d,
             "other: %d calls of the window's handler (class %d), expected 5", eh_calls, eh_class);
    TU_MPI(MPI_Win_set_errhandler(w, MPI_ERRORS_RETURN));
    TU_MPI(MPI_Errhandler_free(&eh));
    TU_MPI(MPI_Win_free(&w));
}

/* ---- 2. data and shared epochs ---- */
static void part_data(MPI_Win D)
{
    uint64_t buf[BLK];
    TU_MPI(MPI_Win_lock_all(0, P.win));
    xfer_check(P.win, D, 0, 10, "2 put through parent, get through dup");
    xfer_check(D, P.win, 1, 11, "2 put through dup, get through parent");
    for (int i = 0; i < BLK; i++) buf[i] = pat(rank, 12, i);
    TU_MPI(MPI_Put(buf, BLK, MPI_UINT64_T, next, tu_disp(&P, next, REG(2)), BLK, MPI_UINT64_T, D));
    TU_MPI(MPI_Win_unlock_all(P.win));   /* ends the epoch D's put was issued in */
    MPI_Barrier(MPI_COMM_WORLD);
    TU_MPI(MPI_Win_lock(MPI_LOCK_SHARED, rank, 0, P.win));
    local_check(P.base, 0, 10, "2 put through parent (target memory)");
    local_check(P.base, 1, 11, "2 put through dup (target memory)");
    local_check(P.base, 2, 12, "2 unflushed put through dup, after the parent's unlock_all");
    TU_MPI(MPI_Win_unlock(rank, P.win));
    MPI_Barrier(MPI_COMM_WORLD);

    /* fence epoch through P, put through D */
    TU_MPI(MPI_Win_fence(0, P.win));
    for (int i = 0; i < BLK; i++) buf[i] = pat(rank, 13, i);
    TU_MPI(MPI_Put(buf, BLK, MPI_UINT64_T, next, tu_disp(&P, next, REG(0)), BLK, MPI_UINT64_T, D));
    TU_MPI(MPI_Win_fence(0, P.win));
    local_check(P.base, 0, 13, "2 put through dup in a fence epoch of the parent");
    TU_MPI(MPI_Win_fence(MPI_MODE_NOSUCCEED, P.win));

    /* PSCW: exposure (post/wait) through P, access (start/complete) through D */
    MPI_Group world, gnext, gprev;
    MPI_Comm_group(MPI_COMM_WORLD, &world);
    MPI_Group_incl(world, 1, &next, &gnext);
    MPI_Group_incl(world, 1, &prev, &gprev);
    TU_MPI(MPI_Win_post(gprev, 0, P.win));
    TU_MPI(MPI_Win_start(gnext, 0, D));
    for (int i = 0; i < BLK; i++) buf[i] = pat(rank, 14, i);
    TU_MPI(MPI_Put(buf, BLK, MPI_UINT64_T, next, tu_disp(&P, next, REG(1)), BLK, MPI_UINT64_T, D));
    TU_MPI(MPI_Win_complete(D));
    TU_MPI(MPI_Win_wait(P.win));
    local_check(P.base, 1, 14, "2 put through dup in PSCW (start/complete on dup, post/wait on parent)");
    MPI_Group_free(&gnext);
    MPI_Group_free(&gprev);
    MPI_Group_free(&world);
    MPI_Barrier(MPI_COMM_WORLD);

    if (TU_DYNAMIC == P.flavor) {
        /* memory attached through P after the dup, reached through D */
        uint64_t *extra = calloc(BLK, sizeof(uint64_t));
        MPI_Aint mine, *all = malloc(nprocs * sizeof(MPI_Aint));
        TU_MPI(MPI_Win_attach(P.win, extra, BLK * sizeof(uint64_t)));
        MPI_Get_address(extra, &mine);
        MPI_Allgather(&mine, 1, MPI_AINT, all, 1, MPI_AINT, MPI_COMM_WORLD);
        TU_MPI(MPI_Win_lock_all(0, D));
        for (int i = 0; i < BLK; i++) buf[i] = pat(rank, 15, i);
        TU_MPI(MPI_Put(buf, BLK, MPI_UINT64_T, next, all[next], BLK, MPI_UINT64_T, D));
        TU_MPI(MPI_Win_unlock_all(D));
        MPI_Barrier(MPI_COMM_WORLD);
        int bad = 0;
        for (int i = 0; i < BLK; i++) bad += ((volatile uint64_t *) extra)[i] != pat(prev, 15, i);
        TU_CHECK(0 == bad, "2 (dynamic): put through dup into memory attached through the parent "
                 "after the dup: %d words wrong", bad);
        MPI_Barrier(MPI_COMM_WORLD);
        TU_MPI(MPI_Win_detach(P.win, extra));
        free(extra);
        free(all);
    }
}

/* ---- 3. locks ---- */
static void lock_pair(MPI_Win hw, int htype, int hall, MPI_Win cw, int ctype, const char *what)
{
    const int target = 0, holder = 1, contender = nprocs > 2 ? 2 : 0;
    uint64_t *mem = P.base;
    if (rank == target) {
        TU_MPI(MPI_Win_lock(MPI_LOCK_EXCLUSIVE, rank, 0, P.win));
        mem[0] = 0; mem[1] = 0;
        TU_MPI(MPI_Win_unlock(rank, P.win));
    }
    MPI_Barrier(MPI_COMM_WORLD);
    MPI_Aint d0 = tu_disp(&P, target, 0), d1 = tu_disp(&P, target, 1);
    if (rank == holder) {
        uint64_t v = 1, c;
        double rel;
        if (hall) TU_MPI(MPI_Win_lock_all(0, hw));
        else TU_MPI(MPI_Win_lock(htype, target, 0, hw));
        TU_MPI(MPI_Put(&v, 1, MPI_UINT64_T, target, d0, 1, MPI_UINT64_T, hw));
        TU_MPI(MPI_Win_flush(target, hw));
        TU_MPI(MPI_Send(&v, 1, MPI_UINT64_T, contender, TAG_GO, MPI_COMM_WORLD));
        for (int k = 0; k < K; k++) {
            TU_MPI(MPI_Get(&c, 1, MPI_UINT64_T, target, d1, 1, MPI_UINT64_T, hw));
            TU_MPI(MPI_Win_flush(target, hw));
            c++;
            TU_MPI(MPI_Put(&c, 1, MPI_UINT64_T, target, d1, 1, MPI_UINT64_T, hw));
            TU_MPI(MPI_Win_flush(target, hw));
            usleep(1000);
        }
        v = 2;
        TU_MPI(MPI_Put(&v, 1, MPI_UINT64_T, target, d0, 1, MPI_UINT64_T, hw));
        TU_MPI(MPI_Win_flush(target, hw));
        rel = now();
        if (hall) TU_MPI(MPI_Win_unlock_all(hw));
        else TU_MPI(MPI_Win_unlock(target, hw));
        TU_MPI(MPI_Send(&rel, 1, MPI_DOUBLE, contender, TAG_REL, MPI_COMM_WORLD));
    }
    if (rank == contender) {
        uint64_t v, got[2] = { 99, 99 };
        double t0, t1, rel;
        TU_MPI(MPI_Recv(&v, 1, MPI_UINT64_T, holder, TAG_GO, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
        t0 = now();
        TU_MPI(MPI_Win_lock(ctype, target, 0, cw));
        t1 = now();
        TU_MPI(MPI_Get(got, 2, MPI_UINT64_T, target, d0, 2, MPI_UINT64_T, cw));
        TU_MPI(MPI_Win_unlock(target, cw));
        TU_MPI(MPI_Recv(&rel, 1, MPI_DOUBLE, holder, TAG_REL, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
        TU_CHECK(2 == got[0] && K == got[1], "3 %s (%s): the contender got the lock while the holder "
                 "held it: marker %llu (2 = released), counter %llu of %d", what, fl(),
                 (unsigned long long) got[0], (unsigned long long) got[1], K);
        TU_CHECK(t1 >= rel, "3 %s (%s): the contender got the lock %.3f ms before the holder released "
                 "it (waited %.3f ms)", what, fl(), (rel - t1) * 1e3, (t1 - t0) * 1e3);
    }
    MPI_Barrier(MPI_COMM_WORLD);
}

static int cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *) a, y = *(const uint64_t *) b;
    return x < y ? -1 : x > y;
}

static void part_locks(MPI_Win D)
{
    lock_pair(D, MPI_LOCK_EXCLUSIVE, 0, P.win, MPI_LOCK_EXCLUSIVE, "exclusive(dup) vs exclusive(parent)");
    lock_pair(P.win, MPI_LOCK_EXCLUSIVE, 0, D, MPI_LOCK_SHARED, "exclusive(parent) vs shared(dup)");
    lock_pair(D, MPI_LOCK_SHARED, 0, P.win, MPI_LOCK_EXCLUSIVE, "shared(dup) vs exclusive(parent)");
    lock_pair(D, 0, 1, P.win, MPI_LOCK_EXCLUSIVE, "lock_all(dup) vs exclusive(parent)");

    /* counter under exclusive locks, alternating handles */
    uint64_t *seen = malloc(N * sizeof(uint64_t)), *all = NULL;
    MPI_Aint d1 = tu_disp(&P, 0, 1);
    if (0 == rank) {
        TU_MPI(MPI_Win_lock(MPI_LOCK_EXCLUSIVE, 0, 0, P.win));
        ((uint64_t *) P.base)[1] = 0;
        TU_MPI(MPI_Win_unlock(0, P.win));
    }
    MPI_Barrier(MPI_COMM_WORLD);
    for (int i = 0; i < N; i++) {
        MPI_Win w = (rank + i) % 2 ? D : P.win;
        uint64_t c = UINT64_MAX, c1;
        TU_MPI(MPI_Win_lock(MPI_LOCK_EXCLUSIVE, 0, 0, w));
        TU_MPI(MPI_Get(&c, 1, MPI_UINT64_T, 0, d1, 1, MPI_UINT64_T, w));
        TU_MPI(MPI_Win_flush(0, w));
        c1 = c + 1;
        TU_MPI(MPI_Put(&c1, 1, MPI_UINT64_T, 0, d1, 1, MPI_UINT64_T, w));
        TU_MPI(MPI_Win_unlock(0, w));
        seen[i] = c;
    }
    MPI_Barrier(MPI_COMM_WORLD);
    if (0 == rank) {
        all = malloc((size_t) nprocs * N * sizeof(uint64_t));
        TU_MPI(MPI_Win_lock(MPI_LOCK_SHARED, 0, 0, D));
        uint64_t fin = ((volatile uint64_t *) P.base)[1];
        TU_MPI(MPI_Win_unlock(0, D));
        TU_CHECK(fin == (uint64_t) nprocs * N, "3 counter (%s): final %llu, expected %d (lost updates: "
                 "the locks through parent and dup do not exclude each other)", fl(),
                 (unsigned long long) fin, nprocs * N);
    }
    MPI_Gather(seen, N, MPI_UINT64_T, all, N, MPI_UINT64_T, 0, MPI_COMM_WORLD);
    if (0 == rank) {
        int bad = 0;
        qsort(all, (size_t) nprocs * N, sizeof(uint64_t), cmp_u64);
        for (int i = 0; i < nprocs * N; i++) bad += all[i] != (uint64_t) i;
        TU_CHECK(0 == bad, "3 counter (%s): %d of the values read are not a permutation of 0..%d", fl(),
                 bad, nprocs * N - 1);
        free(all);
    }
    free(seen);
    MPI_Barrier(MPI_COMM_WORLD);
}

/* ---- 4. two threads, two handles ---- */
static MPI_Win thr_win[2];
static void *thr(void *arg)
{
    int t = (int) (intptr_t) arg;
    MPI_Win w = thr_win[t];
    MPI_Aint dd = tu_disp(&P, next, REG(t)), df = tu_disp(&P, next, REG(2) + t);
    uint64_t buf[BLK], res[BLK], flag, fres;
    int iters = tu_slow_transport() ? 20 : 50;
    for (int it = 0; it < iters; it++) {
        for (int i = 0; i < BLK; i++) buf[i] = pat(rank * 2 + t, 100 + it, i), res[i] = 0;
        flag = it + 1;
        TU_MPI(MPI_Put(buf, BLK, MPI_UINT64_T, next, dd, BLK, MPI_UINT64_T, w));
        TU_MPI(MPI_Accumulate(&flag, 1, MPI_UINT64_T, next, df, 1, MPI_UINT64_T, MPI_REPLACE, w));
        TU_MPI(MPI_Win_flush(next, w));
        TU_MPI(MPI_Get(res, BLK, MPI_UINT64_T, next, dd, BLK, MPI_UINT64_T, w));
        TU_MPI(MPI_Fetch_and_op(NULL, &fres, MPI_UINT64_T, next, df, MPI_NO_OP, w));
        TU_MPI(MPI_Win_flush(next, w));
        int bad = 0;
        for (int i = 0; i < BLK; i++) bad += res[i] != buf[i];
        TU_CHECK(0 == bad && fres == flag, "4 (%s): thread %d on the %s, iteration %d: %d words wrong, "
                 "flag %llu (expected %llu)", fl(), t, t ? "duplicate" : "parent", it, bad,
                 (unsigned long long) fres, (unsigned long long) flag);
    }
    return NULL;
}

static void part_threads(void)
{
    MPI_Info pi = tu_info_new("mpi_win_scope", "process", "mpi_win_order", "false", NULL);
    MPI_Info di = tu_info_new("mpi_win_scope", "thread", "mpi_win_order", "true", NULL);
    tu_win_t save = P;
    tu_win_create(save.flavor, NWORDS * sizeof(uint64_t), sizeof(uint64_t), pi, MPI_COMM_WORLD, &P);
    MPI_Win D;
    TU_MPI(MPIX_Win_dup_with_info(P.win, di, &D));
    MPI_Win_set_errhandler(D, MPI_ERRORS_RETURN);
    thr_win[0] = P.win;
    thr_win[1] = D;
    TU_MPI(MPI_Win_lock_all(0, P.win));
    pthread_t th[2];
    for (int t = 0; t < 2; t++) pthread_create(&th[t], NULL, thr, (void *) (intptr_t) t);
    for (int t = 0; t < 2; t++) pthread_join(th[t], NULL);
    TU_MPI(MPI_Win_unlock_all(P.win));
    MPI_Barrier(MPI_COMM_WORLD);
    int iters = tu_slow_transport() ? 20 : 50;
    for (int t = 0; t < 2; t++) {
        volatile uint64_t *m = (volatile uint64_t *) P.base;
        int bad = 0;
        for (int i = 0; i < BLK; i++) bad += m[REG(t) + i] != pat(prev * 2 + t, 100 + iters - 1, i);
        TU_CHECK(0 == bad && m[REG(2) + t] == (uint64_t) iters, "4 (%s): final region of thread %d: "
                 "%d words wrong, flag %llu", fl(), t, bad, (unsigned long long) m[REG(2) + t]);
    }
    MPI_Barrier(MPI_COMM_WORLD);
    TU_MPI(MPI_Win_free(&D));
    tu_win_free(&P);
    P = save;
    MPI_Info_free(&pi);
    MPI_Info_free(&di);
}

/* ---- 5. free order ---- */
static void part_free(int flavor)
{
    uint64_t buf[BLK], res[BLK];
    MPI_Win D;
    int bad;

    /* parent first */
    tu_win_create(flavor, NWORDS * sizeof(uint64_t), sizeof(uint64_t), MPI_INFO_NULL, MPI_COMM_WORLD, &P);
    TU_MPI(MPIX_Win_dup_with_info(P.win, MPI_INFO_NULL, &D));
    MPI_Win_set_errhandler(D, MPI_ERRORS_RETURN);
    MPI_Barrier(MPI_COMM_WORLD);
    TU_MPI(MPI_Win_free(&P.win));      /* memory stays attached / allocated for D */
    for (int i = 0; i < BLK; i++) buf[i] = pat(rank, 20, i), res[i] = 0;
    TU_MPI(MPI_Win_lock(MPI_LOCK_EXCLUSIVE, next, 0, D));
    TU_MPI(MPI_Put(buf, BLK, MPI_UINT64_T, next, tu_disp(&P, next, REG(0)), BLK, MPI_UINT64_T, D));
    TU_MPI(MPI_Win_unlock(next, D));
    TU_MPI(MPI_Win_lock(MPI_LOCK_SHARED, next, 0, D));
    TU_MPI(MPI_Get(res, BLK, MPI_UINT64_T, next, tu_disp(&P, next, REG(0)), BLK, MPI_UINT64_T, D));
    TU_MPI(MPI_Win_unlock(next, D));
    bad = 0;
    for (int i = 0; i < BLK; i++) bad += res[i] != buf[i];
    TU_CHECK(0 == bad, "5 (%s): parent freed first: put/get through the duplicate: %d words wrong",
             tu_flavor_names[flavor], bad);
    MPI_Barrier(MPI_COMM_WORLD);
    TU_MPI(MPI_Win_lock(MPI_LOCK_SHARED, rank, 0, D));
    local_check(P.base, 0, 20, "5 parent freed first: the duplicate's put in my window memory");
    TU_MPI(MPI_Win_unlock(rank, D));
    MPI_Barrier(MPI_COMM_WORLD);
    TU_MPI(MPI_Win_free(&D));
    TU_CHECK(MPI_WIN_NULL == D, "5 (%s): MPI_Win_free(dup) did not set MPI_WIN_NULL", tu_flavor_names[flavor]);
    if (TU_ALLOCATE != flavor) free(P.base);
    free(P.remote);

    /* duplicate first: rank 0 frees its duplicate at once, the others use theirs first */
    tu_win_create(flavor, NWORDS * sizeof(uint64_t), sizeof(uint64_t), MPI_INFO_NULL, MPI_COMM_WORLD, &P);
    TU_MPI(MPIX_Win_dup_with_info(P.win, MPI_INFO_NULL, &D));
    MPI_Win_set_errhandler(D, MPI_ERRORS_RETURN);
    if (0 == rank) TU_MPI(MPI_Win_free(&D));
    MPI_Barrier(MPI_COMM_WORLD);
    if (0 != rank) {
        for (int i = 0; i < BLK; i++) buf[i] = pat(rank, 21, i);
        TU_MPI(MPI_Win_lock(MPI_LOCK_EXCLUSIVE, next, 0, D));
        TU_MPI(MPI_Put(buf, BLK, MPI_UINT64_T, next, tu_disp(&P, next, REG(1)), BLK, MPI_UINT64_T, D));
        TU_MPI(MPI_Win_unlock(next, D));
        TU_MPI(MPI_Win_free(&D));
    }
    MPI_Barrier(MPI_COMM_WORLD);
    if (0 != prev) {
        TU_MPI(MPI_Win_lock(MPI_LOCK_SHARED, rank, 0, P.win));
        local_check(P.base, 1, 21, "5 put through a duplicate while the target's duplicate was freed");
        TU_MPI(MPI_Win_unlock(rank, P.win));
    }
    for (int i = 0; i < BLK; i++) buf[i] = pat(rank, 22, i), res[i] = 0;
    TU_MPI(MPI_Win_lock_all(0, P.win));
    TU_MPI(MPI_Put(buf, BLK, MPI_UINT64_T, next, tu_disp(&P, next, REG(2)), BLK, MPI_UINT64_T, P.win));
    TU_MPI(MPI_Win_flush(next, P.win));
    TU_MPI(MPI_Get(res, BLK, MPI_UINT64_T, next, tu_disp(&P, next, REG(2)), BLK, MPI_UINT64_T, P.win));
    TU_MPI(MPI_Win_unlock_all(P.win));
    bad = 0;
    for (int i = 0; i < BLK; i++) bad += res[i] != buf[i];
    TU_CHECK(0 == bad, "5 (%s): duplicate freed first: put/get through the parent: %d words wrong",
             tu_flavor_names[flavor], bad);
    MPI_Barrier(MPI_COMM_WORLD);
    tu_win_free(&P);
}

int main(int argc, char **argv)
{
    int provided, rc;
    MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
    thread_multiple = provided >= MPI_THREAD_MULTIPLE;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &nprocs);
    N = tu_slow_transport() ? 10 : 20;
    if (argc > 1 && '-' != argv[1][0]) N = atoi(argv[1]);
    next = (rank + 1) % nprocs;
    prev = (rank + nprocs - 1) % nprocs;
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    MPI_Comm_set_errhandler(MPI_COMM_SELF, MPI_ERRORS_RETURN);

    if (tu_opt_flag(argc, argv, "--other")) {
        if (tu_multi_node()) {
            if (0 == rank) printf("ext_dup --other: osc/sm needs one node: skipped\n");
        } else {
            part_other();
        }
        rc = tu_finish("ext_dup");
        MPI_Finalize();
        return rc;
    }

    /* 6. MPI_WIN_NULL */
    {
        MPI_Win nw = MPI_WIN_NULL;
        int r = MPIX_Win_dup_with_info(MPI_WIN_NULL, MPI_INFO_NULL, &nw);
        TU_CHECK(MPI_ERR_WIN == tu_err_class(r), "6: MPIX_Win_dup_with_info(MPI_WIN_NULL) returned %s "
                 "(%d), expected MPI_ERR_WIN", tu_err_class_name(tu_err_class(r)), r);
    }

    for (int flavor = 0; flavor < TU_NFLAVORS; flavor++) {
        if (!tu_flavor_enabled(flavor)) continue;
        MPI_Info pinfo = tu_info_new("mpi_win_scope", "thread", "mpi_win_order", "true",
                                     "accumulate_ordering", "none", NULL);
        MPI_Win D;
        tu_win_create(flavor, NWORDS * sizeof(uint64_t), sizeof(uint64_t), pinfo, MPI_COMM_WORLD, &P);
        MPI_Info_free(&pinfo);
        TU_MPI(MPIX_Win_dup_with_info(P.win, MPI_INFO_NULL, &D));
        MPI_Win_set_errhandler(D, MPI_ERRORS_RETURN);
        part_info(D);
        TU_MPI(MPI_Win_free(&D));
        tu_win_free(&P);

        /* process scope, default order for the rest */
        tu_win_create(flavor, NWORDS * sizeof(uint64_t), sizeof(uint64_t), MPI_INFO_NULL, MPI_COMM_WORLD, &P);
        TU_MPI(MPIX_Win_dup_with_info(P.win, MPI_INFO_NULL, &D));
        MPI_Win_set_errhandler(D, MPI_ERRORS_RETURN);
        MPI_Barrier(MPI_COMM_WORLD);
        double t0 = MPI_Wtime(), t1, t2, t3;
        part_data(D);
        part_object();
        t1 = MPI_Wtime();
        part_locks(D);
        t2 = MPI_Wtime();
        if (thread_multiple) part_threads();
        MPI_Barrier(MPI_COMM_WORLD);
        t3 = MPI_Wtime();
        if (0 == rank)
            printf("%s: data %.2f s, locks %.2f s, threads %.2f s%s\n", fl(), t1 - t0, t2 - t1, t3 - t2,
                   thread_multiple ? "" : " (no MPI_THREAD_MULTIPLE: skipped)");
        TU_MPI(MPI_Win_free(&D));
        tu_win_free(&P);

        part_free(flavor);
    }
    rc = tu_finish("ext_dup");
    MPI_Finalize();
    return rc;
}
