/* Error reporting with MPI_ERRORS_RETURN on the window (set by tu_win_create):
 * each erroneous call must return an error of the right CLASS, and the window
 * must keep working afterwards (a put + get + remote check after every case).
 *   MPI_ERR_RMA_SYNC:  put / get / flush outside any epoch (also put after a
 *                      closing fence(MPI_MODE_NOSUCCEED)); unlock without
 *                      lock; unlock_all without lock_all; unlock of a target
 *                      other than the locked one (the real epoch then closes);
 *                      MPI_Win_free inside a lock or lock_all epoch.
 *   MPI_ERR_RMA_RANGE: put / get past the end of the target's window
 *                      (entirely past it, and straddling the end), at a
 *                      negative displacement and at one whose byte offset
 *                      wraps past 2^64 (to 0), inside lock and lock_all
 *                      epochs; the epoch then closes normally.
 *   MPI_ERR_RANK:      lock / put / get with target nprocs and -5.
 *   MPI_PROC_NULL as target is valid and moves nothing.
 * Stock components (4.1.4): osc/rdma passes on create and allocate windows;
 * on dynamic windows (TU_FLAVORS=...dynamic) it misses the range errors of
 * the lock_all section (get straddling the end of the attached region, put
 * past the end of the own region) and returns MPI_SUCCESS.  osc/ucx reports
 * no range errors at all.  osc/ucxx must detect every case, on every flavor
 * (for dynamic windows "the window" is the exactly attached byte range).
 * --mt: under MPI_THREAD_MULTIPLE (osc/ucxx's lock then meets lock_all and
 * start through nlocks and the epoch kind, without the epoch lock). */
#include "testutil.h"

#define SLOT 8   /* ints per rank in the checked area */

static int rank, nprocs, ncase;

static const char *class_name(int cls)
{
    switch (cls) {
    case MPI_SUCCESS: return "MPI_SUCCESS";
    case MPI_ERR_RMA_SYNC: return "MPI_ERR_RMA_SYNC";
    case MPI_ERR_RMA_RANGE: return "MPI_ERR_RMA_RANGE";
    case MPI_ERR_RANK: return "MPI_ERR_RANK";
    case MPI_ERR_DISP: return "MPI_ERR_DISP";
    case MPI_ERR_ARG: return "MPI_ERR_ARG";
    case MPI_ERR_WIN: return "MPI_ERR_WIN";
    case MPI_ERR_OTHER: return "MPI_ERR_OTHER";
    default: return "another class";
    }
}

/* Check that `rc` has error class `exp`. */
#define EXPECT(call, exp, what)                                                          \
    do {                                                                                 \
        int rc_ = (call), cls_ = -1;                                                     \
        MPI_Error_class(rc_, &cls_);                                                     \
        TU_CHECK(cls_ == (exp), "%s (%s): %s returned class %d (%s), expected %s",       \
                 what, tu_flavor_names[w->flavor], #call, cls_, class_name(cls_), #exp); \
    } while (0)

/* A range error: from the call, or on a dynamic window (whose target may
 * check the range itself: the operation went with the lock request, or as
 * a message) from the call that ends the epoch; *late counts those. */
#define EXPECT_RANGE(call, what, late)                                                   \
    do {                                                                                 \
        int rc_ = (call), cls_ = -1;                                                     \
        MPI_Error_class(rc_, &cls_);                                                     \
        if (TU_DYNAMIC == w->flavor && MPI_SUCCESS == cls_) {                            \
            (*(late))++;                                                                 \
        } else {                                                                         \
            TU_CHECK(MPI_ERR_RMA_RANGE == cls_, "%s (%s): %s returned class %d (%s), "   \
                     "expected MPI_ERR_RMA_RANGE", what, tu_flavor_names[w->flavor],     \
                     #call, cls_, class_name(cls_));                                     \
        }                                                                                \
    } while (0)

/* The window still works: put to next, get it back, the target checks it. */
static void still_works(tu_win_t *w, const char *after)
{
    int next = (rank + 1) % nprocs, prev = (rank + nprocs - 1) % nprocs;
    int buf[SLOT], res[SLOT];
    ncase++;
    for (int i = 0; i < SLOT; i++) buf[i] = ncase * 10000 + rank * 100 + i;
    memset(res, 0, sizeof(res));
    MPI_Barrier(MPI_COMM_WORLD);
    TU_MPI(MPI_Win_lock(MPI_LOCK_EXCLUSIVE, next, 0, w->win));
    TU_MPI(MPI_Put(buf, SLOT, MPI_INT, next, tu_disp(w, next, rank * SLOT), SLOT, MPI_INT, w->win));
    TU_MPI(MPI_Win_flush(next, w->win));
    TU_MPI(MPI_Get(res, SLOT, MPI_INT, next, tu_disp(w, next, rank * SLOT), SLOT, MPI_INT, w->win));
    TU_MPI(MPI_Win_unlock(next, w->win));
    TU_CHECK(0 == memcmp(buf, res, sizeof(buf)), "after %s (%s): get after put returned %d, expected %d",
             after, tu_flavor_names[w->flavor], res[0], buf[0]);
    MPI_Barrier(MPI_COMM_WORLD);
    TU_MPI(MPI_Win_lock(MPI_LOCK_SHARED, rank, 0, w->win));
    int *win = w->base, bad = 0;
    for (int i = 0; i < SLOT; i++) if (win[prev * SLOT + i] != ncase * 10000 + prev * 100 + i) bad++;
    TU_CHECK(0 == bad, "after %s (%s): target sees %d wrong values from %d", after,
             tu_flavor_names[w->flavor], bad, prev);
    TU_MPI(MPI_Win_unlock(rank, w->win));
    MPI_Barrier(MPI_COMM_WORLD);
}

static void run(int flavor)
{
    int next = (rank + 1) % nprocs;
    /* window: nints ints, disp_unit 4: a checked slot per rank, then a scratch
     * slot that the erroneous (but in-range) calls address */
    const int nints = (nprocs + 1) * SLOT, scratch = nprocs * SLOT;
    int buf[4] = { 1, 2, 3, 4 }, res[4];
    tu_win_t win, *w = &win;
    tu_win_create(flavor, nints * sizeof(int), sizeof(int), MPI_INFO_NULL, MPI_COMM_WORLD, w);
    still_works(w, "window creation");

    /* ---- MPI_ERR_RMA_SYNC ---- */
    EXPECT(MPI_Put(buf, 1, MPI_INT, next, tu_disp(w, next, scratch), 1, MPI_INT, w->win),
           MPI_ERR_RMA_SYNC, "put outside any epoch");
    still_works(w, "put outside epoch");
    EXPECT(MPI_Get(res, 1, MPI_INT, next, tu_disp(w, next, scratch), 1, MPI_INT, w->win),
           MPI_ERR_RMA_SYNC, "get outside any epoch");
    still_works(w, "get outside epoch");
    TU_MPI(MPI_Win_fence(0, w->win));
    TU_MPI(MPI_Win_fence(MPI_MODE_NOSUCCEED, w->win));
    EXPECT(MPI_Put(buf, 1, MPI_INT, next, tu_disp(w, next, scratch), 1, MPI_INT, w->win),
           MPI_ERR_RMA_SYNC, "put after fence(MPI_MODE_NOSUCCEED)");
    still_works(w, "put after the closing fence");
    EXPECT(MPI_Win_flush(next, w->win), MPI_ERR_RMA_SYNC, "flush outside any epoch");
    still_works(w, "flush outside epoch");
    EXPECT(MPI_Win_unlock(next, w->win), MPI_ERR_RMA_SYNC, "unlock without lock");
    still_works(w, "unlock without lock");
    EXPECT(MPI_Win_unlock_all(w->win), MPI_ERR_RMA_SYNC, "unlock_all without lock_all");
    still_works(w, "unlock_all without lock_all");
    TU_MPI(MPI_Win_lock(MPI_LOCK_SHARED, next, 0, w->win));
    EXPECT(MPI_Win_unlock((next + 1) % nprocs, w->win), MPI_ERR_RMA_SYNC,
           "unlock of a target that is not locked");
    TU_MPI(MPI_Win_unlock(next, w->win));
    still_works(w, "unlock of a target that is not locked");
    /* per-target lock state: a locked target cannot be locked again, other
     * targets are not covered by its lock, and lock and lock_all exclude
     * each other */
    TU_MPI(MPI_Win_lock(MPI_LOCK_SHARED, next, 0, w->win));
    EXPECT(MPI_Win_lock(MPI_LOCK_EXCLUSIVE, next, 0, w->win), MPI_ERR_RMA_SYNC,
           "second lock of a locked target");
    EXPECT(MPI_Win_flush((next + 1) % nprocs, w->win), MPI_ERR_RMA_SYNC,
           "flush of a target that is not locked");
    EXPECT(MPI_Put(buf, 1, MPI_INT, (next + 1) % nprocs,
                   tu_disp(w, (next + 1) % nprocs, scratch), 1, MPI_INT, w->win),
           MPI_ERR_RMA_SYNC, "put to a target that is not locked");
    EXPECT(MPI_Win_lock_all(0, w->win), MPI_ERR_RMA_SYNC, "lock_all while a lock is held");
    TU_MPI(MPI_Win_unlock(next, w->win));
    TU_MPI(MPI_Win_lock_all(0, w->win));
    EXPECT(MPI_Win_lock(MPI_LOCK_SHARED, next, 0, w->win), MPI_ERR_RMA_SYNC,
           "lock inside a lock_all epoch");
    TU_MPI(MPI_Win_unlock_all(w->win));
    still_works(w, "lock conflicts");
    /* MPI_Win_free inside an epoch is refused and leaves the window whole
     * (every rank calls it, as the collective free would be) */
    TU_MPI(MPI_Win_lock(MPI_LOCK_SHARED, next, 0, w->win));
    EXPECT(MPI_Win_free(&w->win), MPI_ERR_RMA_SYNC, "free inside a lock epoch");
    TU_MPI(MPI_Win_unlock(next, w->win));
    TU_MPI(MPI_Win_lock_all(0, w->win));
    EXPECT(MPI_Win_free(&w->win), MPI_ERR_RMA_SYNC, "free inside a lock_all epoch");
    TU_MPI(MPI_Win_unlock_all(w->win));
    still_works(w, "free inside an epoch");

    /* ---- MPI_ERR_RMA_RANGE ---- */
    int late = 0;
    TU_MPI(MPI_Win_lock(MPI_LOCK_SHARED, next, 0, w->win));
    EXPECT_RANGE(MPI_Put(buf, 1, MPI_INT, next, tu_disp(w, next, nints), 1, MPI_INT, w->win),
                 "put just past the end", &late);
    EXPECT_RANGE(MPI_Put(buf, 4, MPI_INT, next, tu_disp(w, next, nints - 2), 4, MPI_INT, w->win),
                 "put straddling the end", &late);
    EXPECT_RANGE(MPI_Get(res, 1, MPI_INT, next, tu_disp(w, next, nints + 1000), 1, MPI_INT,
                         w->win), "get far past the end", &late);
    if (TU_DYNAMIC != flavor) {   /* (dynamic: displacements are addresses) */
        /* 2^62 ints of 4 bytes: 2^64 bytes, which wraps to offset 0 */
        EXPECT(MPI_Put(buf, 1, MPI_INT, next, (MPI_Aint) 1 << 62, 1, MPI_INT, w->win),
               MPI_ERR_RMA_RANGE, "put at a displacement whose byte offset wraps");
        EXPECT(MPI_Get(res, 1, MPI_INT, next, ((MPI_Aint) 1 << 62) + 1, 1, MPI_INT, w->win),
               MPI_ERR_RMA_RANGE, "get at a displacement whose byte offset wraps");
        int cls = tu_err_class(MPI_Put(buf, 1, MPI_INT, next, -1, 1, MPI_INT, w->win));
        TU_CHECK(MPI_ERR_RMA_RANGE == cls || MPI_ERR_DISP == cls, "put at displacement -1 "
                 "(%s): class %d (%s), expected MPI_ERR_RMA_RANGE or MPI_ERR_DISP (Open MPI's "
                 "binding)", tu_flavor_names[w->flavor], cls, class_name(cls));
    }
    if (late) {
        EXPECT(MPI_Win_unlock(next, w->win), MPI_ERR_RMA_RANGE, "unlock after range errors "
               "the target found");
    } else {
        EXPECT(MPI_Win_unlock(next, w->win), MPI_SUCCESS, "unlock after range errors");
    }
    still_works(w, "range errors under lock");
    late = 0;
    TU_MPI(MPI_Win_lock_all(0, w->win));
    EXPECT_RANGE(MPI_Get(res, 2, MPI_INT, next, tu_disp(w, next, nints - 1), 2, MPI_INT, w->win),
                 "get straddling the end", &late);
    EXPECT(MPI_Put(buf, 1, MPI_INT, rank, tu_disp(w, rank, nints), 1, MPI_INT, w->win),
           MPI_ERR_RMA_RANGE, "put past the end of my own window");
    if (late) {
        EXPECT(MPI_Win_unlock_all(w->win), MPI_ERR_RMA_RANGE, "unlock_all after range errors "
               "the target found");
    } else {
        EXPECT(MPI_Win_unlock_all(w->win), MPI_SUCCESS, "unlock_all after range errors");
    }
    still_works(w, "range errors under lock_all");

    /* ---- MPI_ERR_RANK ---- */
    EXPECT(MPI_Win_lock(MPI_LOCK_SHARED, nprocs, 0, w->win), MPI_ERR_RANK, "lock rank nprocs");
    EXPECT(MPI_Win_lock(MPI_LOCK_EXCLUSIVE, -5, 0, w->win), MPI_ERR_RANK, "lock rank -5");
    still_works(w, "lock of a bad rank");   /* no epoch may have been left open */
    TU_MPI(MPI_Win_lock_all(0, w->win));
    EXPECT(MPI_Put(buf, 1, MPI_INT, nprocs, 0, 1, MPI_INT, w->win), MPI_ERR_RANK, "put to rank nprocs");
    EXPECT(MPI_Get(res, 1, MPI_INT, -5, 0, 1, MPI_INT, w->win), MPI_ERR_RANK, "get from rank -5");
    /* MPI_PROC_NULL: valid, nothing moves */
    res[0] = -77;
    EXPECT(MPI_Put(buf, 1, MPI_INT, MPI_PROC_NULL, 0, 1, MPI_INT, w->win), MPI_SUCCESS, "put to MPI_PROC_NULL");
    EXPECT(MPI_Get(res, 1, MPI_INT, MPI_PROC_NULL, 0, 1, MPI_INT, w->win), MPI_SUCCESS, "get from MPI_PROC_NULL");
    TU_MPI(MPI_Win_flush_all(w->win));
    TU_CHECK(-77 == res[0], "get from MPI_PROC_NULL changed the buffer to %d", res[0]);
    EXPECT(MPI_Win_unlock_all(w->win), MPI_SUCCESS, "unlock_all after rank errors");
    still_works(w, "rank errors");

    tu_win_free(w);
}

int main(int argc, char **argv)
{
    tu_parse_args(argc, argv);
    tu_init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &nprocs);
    for (int flavor = 0; flavor < TU_NFLAVORS; flavor++)
        if (tu_flavor_enabled(flavor)) run(flavor);
    int rc = tu_finish("errors");
    MPI_Finalize();
    return rc;
}
