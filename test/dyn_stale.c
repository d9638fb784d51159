/* Accesses to memory that is not (or no longer) attached to a dynamic window.
 * Window error handler MPI_ERRORS_RETURN.  Every rank targets the next rank.
 * Each rank's block: region A = bytes [0,256), gap [256,512) never attached,
 * region B = [512,768), region C = [1024,1280) (attached only in step 4);
 * everything outside A and B holds a sentinel pattern.
 *  1. A and B attached; under lock_all put + get to both (checked): the
 *     origin now knows the target's regions.
 *  2. CYCLES ("-c N", default 4) times: the target detaches A, then a
 *     barrier tells the origin.  Under lock(shared) the origin does put, get,
 *     accumulate(SUM), get_accumulate, fetch_and_op and compare_and_swap on
 *     A, each in an epoch of its own: each must fail with MPI_ERR_RMA_RANGE,
 *     either the call itself (unlock then MPI_SUCCESS) or, where the epoch
 *     went to the target in the lock request, the unlock (MPI lets the
 *     error come at the synchronization); under lock_all a put (the same)
 *     and an Rput (the call) to A.  After each failed epoch an exclusive
 *     lock on the target works (the failed epoch released its lock).  The window still
 *     works on B (put/get checked) and the target finds A unchanged (nothing
 *     written through the stale address).  Then the target re-attaches A at
 *     the same address and the origin's put/get on A work again (checked).
 *  3. Never-attached addresses: the gap between A and B, a never-attached
 *     malloc'd buffer (also an 8 KiB put to it), address 8 (near MPI_BOTTOM), straddling the end of B
 *     (last 8 bytes + 8 more), straddling the start of B: put / get /
 *     accumulate -> MPI_ERR_RMA_RANGE; the target's sentinels are unchanged.
 *  4. Shrink and grow at one address: B detached and re-attached with 128
 *     bytes: access to B+[128,256) -> MPI_ERR_RMA_RANGE, to B+[0,128) works;
 *     re-attached with 256 bytes: B+200 works again.  C attached after B was
 *     first accessed: a put/get to C works.
 * After every step the window is used on B and its values checked.
 * Stock components (4.1.4): osc/rdma fails this test.  It reports
 * MPI_ERR_RMA_RANGE only for addresses on pages with no attached region
 * (the never-attached buffer, address 8); it returns MPI_SUCCESS for every
 * access to a detached region (and writes into it: "detached region A was
 * modified"), for the gap between A and B, for accesses straddling either end
 * of B, and for accesses past the end of the shrunk B (it works at page
 * granularity and caches the region table; the re-attached A then reads back
 * those stale writes).  The other positive paths (still_works, shrunk and
 * re-grown B, late C) pass.  osc/ucx reports no range errors at all. */
#include "testutil.h"
#include <stdint.h>

#define BLK 2048
#define A_OFF 0
#define B_OFF 512
#define C_OFF 1024
#define RSZ 256
#define SENT ((int64_t) 0x5e5e5e5e5e5e5e5eLL)

static int rank, nprocs, next, prev;
static MPI_Win win;
#define NEVER 8192   /* the never-attached buffer's bytes */
static char *block, *never;
static MPI_Aint tblock, tnever;   /* the next rank's */
static int ncase;

#define EXPECT_RANGE(call, what)                                                          \
    do {                                                                                  \
        int cls_ = tu_err_class(call);                                                    \
        TU_CHECK(MPI_ERR_RMA_RANGE == cls_, "%s: %s returned %s, expected MPI_ERR_RMA_RANGE", \
                 what, #call, tu_err_class_name(cls_));                                   \
    } while (0)

/* The operation `call` fails with MPI_ERR_RMA_RANGE in its own epoch: the
 * call itself (the unlock then succeeds) or the unlock (the operation went
 * with the lock request and the target found the range).  Then the lock is
 * free: an exclusive epoch on the target opens and closes. */
static int range_epoch_cls(int rc, int unlock_rc, const char *what)
{
    int cls = tu_err_class(rc), ucls = tu_err_class(unlock_rc);
    if (MPI_SUCCESS == cls) {
        TU_CHECK(MPI_ERR_RMA_RANGE == ucls, "%s: the call succeeded and unlock returned %s, "
                 "expected MPI_ERR_RMA_RANGE from one of them", what, tu_err_class_name(ucls));
    } else {
        TU_CHECK(MPI_ERR_RMA_RANGE == cls, "%s returned %s, expected MPI_ERR_RMA_RANGE", what,
                 tu_err_class_name(cls));
        TU_CHECK(MPI_SUCCESS == ucls, "%s: unlock after the failed call returned %s", what,
                 tu_err_class_name(ucls));
    }
    return cls;
}

#define RANGE_EPOCH(type, call, what)                                                     \
    do {                                                                                  \
        TU_MPI(MPI_Win_lock(type, next, 0, win));                                         \
        int rc_ = (call);                                                                 \
        range_epoch_cls(rc_, MPI_Win_unlock(next, win), what);                            \
        TU_MPI(MPI_Win_lock(MPI_LOCK_EXCLUSIVE, next, 0, win));                           \
        TU_MPI(MPI_Win_unlock(next, win));                                                \
    } while (0)

static void set_region(char *p, int64_t tag)
{
    int64_t *q = (int64_t *) p;
    for (int j = 0; j < RSZ / 8; j++) q[j] = tag + j;
}

/* The window works on region B of the next rank; the target sees it. */
static void still_works(const char *after)
{
    int64_t buf[RSZ / 8], res[RSZ / 8];
    ncase++;
    MPI_Barrier(MPI_COMM_WORLD);
    for (int j = 0; j < RSZ / 8; j++) buf[j] = ncase * 100000LL + rank * 1000 + j;
    memset(res, 0, sizeof(res));
    TU_MPI(MPI_Win_lock(MPI_LOCK_SHARED, next, 0, win));
    TU_MPI(MPI_Put(buf, RSZ / 8, MPI_INT64_T, next, tblock + B_OFF, RSZ / 8, MPI_INT64_T, win));
    TU_MPI(MPI_Win_flush(next, win));
    TU_MPI(MPI_Get(res, RSZ / 8, MPI_INT64_T, next, tblock + B_OFF, RSZ / 8, MPI_INT64_T, win));
    TU_MPI(MPI_Win_unlock(next, win));
    TU_CHECK(0 == memcmp(buf, res, sizeof(buf)), "after %s: get after put on B returned %lld, expected %lld",
             after, (long long) res[0], (long long) buf[0]);
    MPI_Barrier(MPI_COMM_WORLD);
    int64_t *b = (int64_t *) (block + B_OFF);
    int bad = 0;
    for (int j = 0; j < RSZ / 8; j++) if (b[j] != ncase * 100000LL + prev * 1000 + j) bad++;
    TU_CHECK(0 == bad, "after %s: %d wrong values in B at the target", after, bad);
    MPI_Barrier(MPI_COMM_WORLD);
}

/* Target side: count non-sentinel int64 in block[from, to). */
static int sentinel_damage(int from, int to)
{
    int bad = 0;
    for (int o = from; o < to; o += 8) if (*(int64_t *) (block + o) != SENT) bad++;
    return bad;
}

/* Origin: put/get/accumulate at a target address that is not attached. */
static void range_ops(MPI_Aint addr, int count, const char *what)
{
    int64_t buf[4] = { 11, 12, 13, 14 }, res[4];
    char msg[128];
    snprintf(msg, sizeof(msg), "put %s", what);
    RANGE_EPOCH(MPI_LOCK_SHARED, MPI_Put(buf, count, MPI_INT64_T, next, addr, count, MPI_INT64_T, win), msg);
    snprintf(msg, sizeof(msg), "get %s", what);
    RANGE_EPOCH(MPI_LOCK_EXCLUSIVE, MPI_Get(res, count, MPI_INT64_T, next, addr, count, MPI_INT64_T, win),
                msg);
    snprintf(msg, sizeof(msg), "accumulate %s", what);
    RANGE_EPOCH(MPI_LOCK_SHARED,
                MPI_Accumulate(buf, count, MPI_INT64_T, next, addr, count, MPI_INT64_T, MPI_SUM, win), msg);
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &nprocs);
    next = (rank + 1) % nprocs; prev = (rank + nprocs - 1) % nprocs;
    const int cycles = (int) tu_opt_long(argc, argv, "-c", 4);

    block = malloc(BLK);
    never = malloc(NEVER);
    for (int o = 0; o < BLK; o += 8) *(int64_t *) (block + o) = SENT;
    for (int o = 0; o < NEVER; o += 8) *(int64_t *) (never + o) = SENT;
    set_region(block + A_OFF, 1000);
    set_region(block + B_OFF, 2000);
    TU_MPI(MPI_Win_create_dynamic(MPI_INFO_NULL, MPI_COMM_WORLD, &win));
    MPI_Win_set_errhandler(win, MPI_ERRORS_RETURN);
    TU_MPI(MPI_Win_attach(win, block + A_OFF, RSZ));
    TU_MPI(MPI_Win_attach(win, block + B_OFF, RSZ));
    MPI_Aint addrs[2], *all = malloc(2 * nprocs * sizeof(MPI_Aint));
    MPI_Get_address(block, &addrs[0]);
    MPI_Get_address(never, &addrs[1]);
    MPI_Allgather(addrs, 2, MPI_AINT, all, 2, MPI_AINT, MPI_COMM_WORLD);
    tblock = all[2 * next]; tnever = all[2 * next + 1];
    MPI_Barrier(MPI_COMM_WORLD);

    /* 1: both regions in use */
    {
        int64_t res[RSZ / 8 * 2];
        TU_MPI(MPI_Win_lock_all(0, win));
        TU_MPI(MPI_Get(res, RSZ / 8, MPI_INT64_T, next, tblock + A_OFF, RSZ / 8, MPI_INT64_T, win));
        TU_MPI(MPI_Get(res + RSZ / 8, RSZ / 8, MPI_INT64_T, next, tblock + B_OFF, RSZ / 8, MPI_INT64_T, win));
        TU_MPI(MPI_Win_unlock_all(win));
        int bad = 0;
        for (int j = 0; j < RSZ / 8; j++) bad += (res[j] != 1000 + j) + (res[RSZ / 8 + j] != 2000 + j);
        TU_CHECK(0 == bad, "initial get of A and B: %d wrong values", bad);
    }
    still_works("setup");

    /* 2: detach A, access it, re-attach it */
    for (int c = 0; c < cycles; c++) {
        MPI_Barrier(MPI_COMM_WORLD);
        TU_MPI(MPI_Win_detach(win, block + A_OFF));
        set_region(block + A_OFF, 50000 + c * 1000);
        MPI_Barrier(MPI_COMM_WORLD);   /* "A is gone" */
        int64_t buf[4] = { -1, -2, -3, -4 }, res[4], one = 1, cmp = 50000 + c * 1000, fetched = 0;
        MPI_Aint a = tblock + A_OFF + 8;
        MPI_Request rq;
        RANGE_EPOCH(MPI_LOCK_SHARED, MPI_Put(buf, 4, MPI_INT64_T, next, a, 4, MPI_INT64_T, win),
                    "put to detached A");
        RANGE_EPOCH(MPI_LOCK_SHARED, MPI_Get(res, 4, MPI_INT64_T, next, a, 4, MPI_INT64_T, win),
                    "get from detached A");
        RANGE_EPOCH(MPI_LOCK_EXCLUSIVE,
                    MPI_Accumulate(buf, 4, MPI_INT64_T, next, a, 4, MPI_INT64_T, MPI_SUM, win),
                    "accumulate to detached A");
        RANGE_EPOCH(MPI_LOCK_SHARED,
                    MPI_Get_accumulate(buf, 2, MPI_INT64_T, res, 2, MPI_INT64_T, next, a, 2, MPI_INT64_T,
                                       MPI_SUM, win), "get_accumulate on detached A");
        RANGE_EPOCH(MPI_LOCK_EXCLUSIVE, MPI_Fetch_and_op(&one, &fetched, MPI_INT64_T, next, a, MPI_SUM, win),
                    "fetch_and_op on detached A");
        RANGE_EPOCH(MPI_LOCK_SHARED,
                    MPI_Compare_and_swap(&one, &cmp, &fetched, MPI_INT64_T, next, tblock + A_OFF, win),
                    "compare_and_swap on detached A");
        TU_MPI(MPI_Win_lock_all(0, win));
        int rc = MPI_Put(buf, 1, MPI_INT64_T, next, tblock + A_OFF, 1, MPI_INT64_T, win);
        int rc2 = MPI_Win_flush(next, win);
        range_epoch_cls(rc, rc2, "put to detached A (lock_all, flush)");
        rc = MPI_Rput(buf, 1, MPI_INT64_T, next, tblock + A_OFF + 128, 1, MPI_INT64_T, win, &rq);
        EXPECT_RANGE(rc, "rput to detached A (lock_all)");
        if (MPI_SUCCESS == rc) MPI_Wait(&rq, MPI_STATUS_IGNORE);
        TU_CHECK(MPI_SUCCESS == MPI_Win_unlock_all(win), "unlock_all after accesses to detached A failed");
        still_works("accesses to a detached region");
        int64_t *pa = (int64_t *) (block + A_OFF);
        int bad = 0;
        for (int j = 0; j < RSZ / 8; j++) if (pa[j] != 50000 + c * 1000 + j) bad++;
        TU_CHECK(0 == bad, "cycle %d: detached region A was modified (%d values) by accesses after the detach",
                 c, bad);
        /* re-attach A at the same address: usable again */
        TU_MPI(MPI_Win_attach(win, block + A_OFF, RSZ));
        MPI_Barrier(MPI_COMM_WORLD);
        int64_t v[2] = { 777000 + c * 10 + rank, 888000 + c * 10 + rank }, got[4] = { 0, 0, 0, 0 };
        TU_MPI(MPI_Win_lock_all(0, win));
        TU_MPI(MPI_Put(v, 2, MPI_INT64_T, next, tblock + A_OFF + RSZ - 16, 2, MPI_INT64_T, win));
        TU_MPI(MPI_Get(got, 2, MPI_INT64_T, next, tblock + A_OFF, 2, MPI_INT64_T, win));
        TU_MPI(MPI_Win_flush(next, win));
        TU_MPI(MPI_Get(got + 2, 2, MPI_INT64_T, next, tblock + A_OFF + RSZ - 16, 2, MPI_INT64_T, win));
        TU_MPI(MPI_Win_unlock_all(win));
        TU_CHECK(got[0] == 50000 + c * 1000 && got[1] == 50000 + c * 1000 + 1 && got[2] == v[0] && got[3] == v[1],
                 "cycle %d: re-attached A reads %lld %lld %lld %lld", c, (long long) got[0], (long long) got[1],
                 (long long) got[2], (long long) got[3]);
        MPI_Barrier(MPI_COMM_WORLD);
        TU_CHECK(pa[RSZ / 8 - 2] == 777000 + c * 10 + prev && pa[RSZ / 8 - 1] == 888000 + c * 10 + prev,
                 "cycle %d: target sees %lld %lld at the end of re-attached A", c, (long long) pa[RSZ / 8 - 2],
                 (long long) pa[RSZ / 8 - 1]);
    }

    /* 3: never-attached addresses */
    MPI_Barrier(MPI_COMM_WORLD);
    range_ops(tblock + A_OFF + RSZ + 64, 2, "in the gap between A and B");
    range_ops(tnever, 4, "to a never-attached buffer");
    {   /* larger than a lock request's batch: carried alone (osc_ucxx_lazy.c) */
        static int64_t big[NEVER / 8];
        for (int j = 0; j < NEVER / 8; j++) big[j] = j;
        RANGE_EPOCH(MPI_LOCK_EXCLUSIVE, MPI_Put(big, NEVER / 8, MPI_INT64_T, next, tnever,
                                                NEVER / 8, MPI_INT64_T, win),
                    "an 8 KiB put to a never-attached buffer");
    }
    range_ops(8, 1, "at address 8");
    range_ops(tblock + B_OFF + RSZ - 8, 2, "straddling the end of B");
    range_ops(tblock + B_OFF - 8, 2, "straddling the start of B");
    MPI_Barrier(MPI_COMM_WORLD);
    {
        int bad = sentinel_damage(A_OFF + RSZ, B_OFF) + sentinel_damage(B_OFF + RSZ, BLK), badn = 0;
        for (int o = 0; o < NEVER; o += 8) if (*(int64_t *) (never + o) != SENT) badn++;
        TU_CHECK(0 == bad, "%d int64 outside the attached regions were modified", bad);
        TU_CHECK(0 == badn, "%d int64 of the never-attached buffer were modified", badn);
    }
    still_works("accesses to never-attached memory");

    /* 4: shrink B, grow it again; attach C late */
    MPI_Barrier(MPI_COMM_WORLD);
    TU_MPI(MPI_Win_detach(win, block + B_OFF));
    TU_MPI(MPI_Win_attach(win, block + B_OFF, RSZ / 2));
    for (int o = B_OFF + RSZ / 2; o < B_OFF + RSZ; o += 8) *(int64_t *) (block + o) = SENT;
    set_region(block + C_OFF, 3000);
    TU_MPI(MPI_Win_attach(win, block + C_OFF, RSZ));
    MPI_Barrier(MPI_COMM_WORLD);
    range_ops(tblock + B_OFF + RSZ / 2, 1, "just past the end of the shrunk B");
    range_ops(tblock + B_OFF + RSZ / 2 + 64, 2, "inside the old extent of B");
    range_ops(tblock + B_OFF + RSZ / 2 - 8, 2, "straddling the end of the shrunk B");
    {
        int64_t v = 4242 + rank, got = 0, gc[2] = { 0, 0 }, vc = 5151 + rank;
        TU_MPI(MPI_Win_lock_all(0, win));
        TU_MPI(MPI_Put(&v, 1, MPI_INT64_T, next, tblock + B_OFF + RSZ / 2 - 8, 1, MPI_INT64_T, win));
        TU_MPI(MPI_Put(&vc, 1, MPI_INT64_T, next, tblock + C_OFF + 8, 1, MPI_INT64_T, win));
        TU_MPI(MPI_Win_flush(next, win));
        TU_MPI(MPI_Get(&got, 1, MPI_INT64_T, next, tblock + B_OFF + RSZ / 2 - 8, 1, MPI_INT64_T, win));
        TU_MPI(MPI_Get(gc, 2, MPI_INT64_T, next, tblock + C_OFF, 2, MPI_INT64_T, win));
        TU_MPI(MPI_Win_unlock_all(win));
        TU_CHECK(got == v, "shrunk B: read %lld, expected %lld", (long long) got, (long long) v);
        TU_CHECK(gc[0] == 3000 && gc[1] == vc, "late region C: read %lld %lld, expected 3000 %lld",
                 (long long) gc[0], (long long) gc[1], (long long) vc);
    }
    MPI_Barrier(MPI_COMM_WORLD);
    {
        int bad = sentinel_damage(B_OFF + RSZ / 2, B_OFF + RSZ);
        TU_CHECK(0 == bad, "%d int64 of B beyond its shrunk size were modified", bad);
        TU_CHECK(*(int64_t *) (block + B_OFF + RSZ / 2 - 8) == 4242 + prev, "shrunk B: target sees %lld",
                 (long long) *(int64_t *) (block + B_OFF + RSZ / 2 - 8));
        TU_CHECK(*(int64_t *) (block + C_OFF + 8) == 5151 + prev, "region C: target sees %lld",
                 (long long) *(int64_t *) (block + C_OFF + 8));
    }
    TU_MPI(MPI_Win_detach(win, block + B_OFF));
    TU_MPI(MPI_Win_attach(win, block + B_OFF, RSZ));
    MPI_Barrier(MPI_COMM_WORLD);
    {
        int64_t v = 6363 + rank, got = 0;
        TU_MPI(MPI_Win_lock(MPI_LOCK_EXCLUSIVE, next, 0, win));
        TU_MPI(MPI_Put(&v, 1, MPI_INT64_T, next, tblock + B_OFF + 200, 1, MPI_INT64_T, win));
        TU_MPI(MPI_Win_flush(next, win));
        TU_MPI(MPI_Get(&got, 1, MPI_INT64_T, next, tblock + B_OFF + 200, 1, MPI_INT64_T, win));
        TU_MPI(MPI_Win_unlock(next, win));
        TU_CHECK(got == v, "re-grown B: read %lld, expected %lld", (long long) got, (long long) v);
    }
    still_works("shrinking and growing B");

    TU_MPI(MPI_Win_detach(win, block + A_OFF));
    TU_MPI(MPI_Win_detach(win, block + B_OFF));
    TU_MPI(MPI_Win_detach(win, block + C_OFF));
    TU_MPI(MPI_Win_free(&win));
    free(block); free(never); free(all);
    int rc = tu_finish("dyn_stale");
    MPI_Finalize();
    return rc;
}
