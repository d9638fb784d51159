/* Passive-target synchronisation: every call is used so that its effect is checked.
 * The window holds one slot of SL ints per origin rank; a value carries
 * (section, origin, index) so stale or misplaced data is caught.
 *   lock EXCLUSIVE / unlock: put to next, unlock, barrier, target checks.
 *   lock SHARED held on all targets at once: put to every rank, unlock each.
 *   MPI_MODE_NOCHECK with lock and lock_all.
 *   flush: put, flush, barrier; the target (MPI_Win_sync) sees the value while
 *          the origin's epoch is still open; then get after flush returns it,
 *          and a second put+flush+get returns the second value.
 *   flush_all: put to every rank, flush_all, barrier, targets check.
 *   flush_local: put, flush_local, overwrite the origin buffer, flush: the
 *          target holds the value from before the overwrite; get + flush_local
 *          makes the result usable.
 *   flush_local_all: get from every rank, flush_local_all, check.
 *   sync: the target stores directly into its window memory, MPI_Win_sync,
 *          barrier; the origins' gets return the stored values.
 *   repeated exclusive epochs: 30 x {lock, get, flush, check == the value
 *          this rank put in the previous epoch, put next value, unlock},
 *          plus empty lock/unlock epochs. */
#include "testutil.h"

#define SL 16

static int rank, nprocs;

static inline int val(int sec, int origin, int i) { return sec * 1000000 + origin * 1000 + i + 1; }

/* Read my slot for `origin` directly from window memory (inside an epoch: MPI_Win_sync first). */
static int check_slot(tu_win_t *w, int origin, int sec, const char *what)
{
    volatile int *win = w->base;
    int bad = 0;
    for (int i = 0; i < SL; i++) {
        int v = win[origin * SL + i], exp = val(sec, origin, i);
        if (v != exp && bad++ < 2)
            TU_CHECK(v == exp, "%s (%s): rank %d slot of %d [%d] = %d, expected %d", what,
                     tu_flavor_names[w->flavor], rank, origin, i, v, exp);
    }
    return bad;
}

static void clear_local(tu_win_t *w)
{
    TU_MPI(MPI_Win_lock(MPI_LOCK_EXCLUSIVE, rank, 0, w->win));
    memset(w->base, 0, w->size);
    TU_MPI(MPI_Win_unlock(rank, w->win));
    MPI_Barrier(MPI_COMM_WORLD);
}

static void check_after_barrier(tu_win_t *w, int origin, int sec, const char *what)
{
    MPI_Barrier(MPI_COMM_WORLD);
    TU_MPI(MPI_Win_lock(MPI_LOCK_EXCLUSIVE, rank, 0, w->win));
    check_slot(w, origin, sec, what);
    TU_MPI(MPI_Win_unlock(rank, w->win));
    MPI_Barrier(MPI_COMM_WORLD);
}

static void fill(int *buf, int sec, int origin)
{
    for (int i = 0; i < SL; i++) buf[i] = val(sec, origin, i);
}

static void check_buf(tu_win_t *w, const int *buf, int sec, int origin, const char *what)
{
    int bad = 0;
    for (int i = 0; i < SL; i++) if (buf[i] != val(sec, origin, i)) bad++;
    TU_CHECK(0 == bad, "%s (%s): rank %d, %d wrong values from %d (first %d, expected %d)", what,
             tu_flavor_names[w->flavor], rank, bad, origin, buf[0], val(sec, origin, 0));
}

static void run(int flavor)
{
    int next = (rank + 1) % nprocs, prev = (rank + nprocs - 1) % nprocs;
    int buf[SL], res[SL], *all = malloc(nprocs * SL * sizeof(int));
    tu_win_t w;
    tu_win_create(flavor, nprocs * SL * sizeof(int), sizeof(int), MPI_INFO_NULL, MPI_COMM_WORLD, &w);

    /* 1: exclusive lock */
    clear_local(&w);
    fill(buf, 1, rank);
    TU_MPI(MPI_Win_lock(MPI_LOCK_EXCLUSIVE, next, 0, w.win));
    TU_MPI(MPI_Put(buf, SL, MPI_INT, next, tu_disp(&w, next, rank * SL), SL, MPI_INT, w.win));
    TU_MPI(MPI_Win_unlock(next, w.win));
    check_after_barrier(&w, prev, 1, "lock exclusive + unlock");

    /* 2: shared locks on every rank held at once */
    clear_local(&w);
    fill(buf, 2, rank);
    for (int t = 0; t < nprocs; t++) TU_MPI(MPI_Win_lock(MPI_LOCK_SHARED, t, 0, w.win));
    for (int t = 0; t < nprocs; t++)
        TU_MPI(MPI_Put(buf, SL, MPI_INT, t, tu_disp(&w, t, rank * SL), SL, MPI_INT, w.win));
    for (int t = nprocs - 1; t >= 0; t--) TU_MPI(MPI_Win_unlock(t, w.win));
    MPI_Barrier(MPI_COMM_WORLD);
    TU_MPI(MPI_Win_lock(MPI_LOCK_EXCLUSIVE, rank, 0, w.win));
    for (int o = 0; o < nprocs; o++) check_slot(&w, o, 2, "lock shared on all targets");
    TU_MPI(MPI_Win_unlock(rank, w.win));
    MPI_Barrier(MPI_COMM_WORLD);

    /* 3: MPI_MODE_NOCHECK (no conflicting locks: barriers separate all epochs) */
    clear_local(&w);
    fill(buf, 3, rank);
    TU_MPI(MPI_Win_lock(MPI_LOCK_SHARED, next, MPI_MODE_NOCHECK, w.win));
    TU_MPI(MPI_Put(buf, SL, MPI_INT, next, tu_disp(&w, next, rank * SL), SL, MPI_INT, w.win));
    TU_MPI(MPI_Win_unlock(next, w.win));
    check_after_barrier(&w, prev, 3, "lock MPI_MODE_NOCHECK");
    fill(buf, 4, rank);
    TU_MPI(MPI_Win_lock_all(MPI_MODE_NOCHECK, w.win));
    TU_MPI(MPI_Put(buf, SL, MPI_INT, prev, tu_disp(&w, prev, rank * SL), SL, MPI_INT, w.win));
    TU_MPI(MPI_Win_unlock_all(w.win));
    check_after_barrier(&w, next, 4, "lock_all MPI_MODE_NOCHECK");

    /* 4: flush: remote completion while the epoch stays open */
    clear_local(&w);
    fill(buf, 5, rank);
    TU_MPI(MPI_Win_lock_all(0, w.win));
    TU_MPI(MPI_Put(buf, SL, MPI_INT, next, tu_disp(&w, next, rank * SL), SL, MPI_INT, w.win));
    TU_MPI(MPI_Win_flush(next, w.win));
    MPI_Barrier(MPI_COMM_WORLD);
    TU_MPI(MPI_Win_sync(w.win));
    check_slot(&w, prev, 5, "put + flush, seen by target during the epoch");
    memset(res, 0, sizeof(res));
    TU_MPI(MPI_Get(res, SL, MPI_INT, next, tu_disp(&w, next, rank * SL), SL, MPI_INT, w.win));
    TU_MPI(MPI_Win_flush(next, w.win));
    check_buf(&w, res, 5, rank, "get after put + flush");
    MPI_Barrier(MPI_COMM_WORLD);   /* everyone done reading before the second put */
    fill(buf, 6, rank);
    TU_MPI(MPI_Put(buf, SL, MPI_INT, next, tu_disp(&w, next, rank * SL), SL, MPI_INT, w.win));
    TU_MPI(MPI_Win_flush(next, w.win));
    memset(res, 0, sizeof(res));
    TU_MPI(MPI_Get(res, SL, MPI_INT, next, tu_disp(&w, next, rank * SL), SL, MPI_INT, w.win));
    TU_MPI(MPI_Win_flush(next, w.win));
    check_buf(&w, res, 6, rank, "second put + flush, then get");
    TU_MPI(MPI_Win_unlock_all(w.win));
    MPI_Barrier(MPI_COMM_WORLD);

    /* 5: flush_all */
    clear_local(&w);
    fill(buf, 7, rank);
    TU_MPI(MPI_Win_lock_all(0, w.win));
    for (int t = 0; t < nprocs; t++)
        TU_MPI(MPI_Put(buf, SL, MPI_INT, t, tu_disp(&w, t, rank * SL), SL, MPI_INT, w.win));
    TU_MPI(MPI_Win_flush_all(w.win));
    MPI_Barrier(MPI_COMM_WORLD);
    TU_MPI(MPI_Win_sync(w.win));
    for (int o = 0; o < nprocs; o++) check_slot(&w, o, 7, "put to all + flush_all");
    MPI_Barrier(MPI_COMM_WORLD);
    TU_MPI(MPI_Win_unlock_all(w.win));

    /* 6: flush_local: origin buffer reusable; get result usable */
    clear_local(&w);
    fill(buf, 8, rank);
    TU_MPI(MPI_Win_lock_all(0, w.win));
    TU_MPI(MPI_Put(buf, SL, MPI_INT, next, tu_disp(&w, next, rank * SL), SL, MPI_INT, w.win));
    TU_MPI(MPI_Win_flush_local(next, w.win));
    fill(buf, 99, rank);   /* must not reach the target */
    TU_MPI(MPI_Win_flush(next, w.win));
    MPI_Barrier(MPI_COMM_WORLD);
    TU_MPI(MPI_Win_sync(w.win));
    check_slot(&w, prev, 8, "put + flush_local + overwrite origin buffer");
    MPI_Barrier(MPI_COMM_WORLD);
    memset(res, 0, sizeof(res));
    TU_MPI(MPI_Get(res, SL, MPI_INT, next, tu_disp(&w, next, rank * SL), SL, MPI_INT, w.win));
    TU_MPI(MPI_Win_flush_local(next, w.win));
    check_buf(&w, res, 8, rank, "get + flush_local");
    TU_MPI(MPI_Win_unlock_all(w.win));
    MPI_Barrier(MPI_COMM_WORLD);

    /* 7: flush_local_all: each rank's slot s of every window holds val(9, t, .) for window owner t */
    TU_MPI(MPI_Win_lock(MPI_LOCK_EXCLUSIVE, rank, 0, w.win));
    for (int s = 0; s < nprocs; s++) fill((int *) w.base + s * SL, 9, rank);
    TU_MPI(MPI_Win_unlock(rank, w.win));
    MPI_Barrier(MPI_COMM_WORLD);
    memset(all, 0, nprocs * SL * sizeof(int));
    TU_MPI(MPI_Win_lock_all(0, w.win));
    for (int t = 0; t < nprocs; t++)
        TU_MPI(MPI_Get(all + t * SL, SL, MPI_INT, t, tu_disp(&w, t, rank * SL), SL, MPI_INT, w.win));
    TU_MPI(MPI_Win_flush_local_all(w.win));
    for (int t = 0; t < nprocs; t++) check_buf(&w, all + t * SL, 9, t, "get from all + flush_local_all");
    TU_MPI(MPI_Win_unlock_all(w.win));
    MPI_Barrier(MPI_COMM_WORLD);

    /* 8: MPI_Win_sync after local stores inside an epoch */
    clear_local(&w);
    TU_MPI(MPI_Win_lock_all(0, w.win));
    {
        volatile int *win = w.base;
        for (int s = 0; s < nprocs; s++)
            for (int i = 0; i < SL; i++) win[s * SL + i] = val(10, rank, i);
    }
    TU_MPI(MPI_Win_sync(w.win));
    MPI_Barrier(MPI_COMM_WORLD);
    memset(res, 0, sizeof(res));
    TU_MPI(MPI_Get(res, SL, MPI_INT, prev, tu_disp(&w, prev, rank * SL), SL, MPI_INT, w.win));
    TU_MPI(MPI_Win_flush(prev, w.win));
    check_buf(&w, res, 10, prev, "local stores + MPI_Win_sync, remote get");
    TU_MPI(MPI_Win_unlock_all(w.win));
    MPI_Barrier(MPI_COMM_WORLD);

    /* 9: repeated exclusive epochs on next; my slot there carries my last value */
    clear_local(&w);
    for (int it = 0; it < 30; it++) {
        int cur = -1, newv = val(11, rank, it);
        TU_MPI(MPI_Win_lock(MPI_LOCK_EXCLUSIVE, next, 0, w.win));
        TU_MPI(MPI_Get(&cur, 1, MPI_INT, next, tu_disp(&w, next, rank * SL), 1, MPI_INT, w.win));
        TU_MPI(MPI_Win_flush(next, w.win));
        TU_CHECK(cur == (it ? val(11, rank, it - 1) : 0), "repeated epochs (%s): iteration %d read %d",
                 tu_flavor_names[flavor], it, cur);
        TU_MPI(MPI_Put(&newv, 1, MPI_INT, next, tu_disp(&w, next, rank * SL), 1, MPI_INT, w.win));
        TU_MPI(MPI_Win_unlock(next, w.win));
        /* empty epochs in between */
        TU_MPI(MPI_Win_lock(it % 2 ? MPI_LOCK_SHARED : MPI_LOCK_EXCLUSIVE, prev, 0, w.win));
        TU_MPI(MPI_Win_unlock(prev, w.win));
    }
    MPI_Barrier(MPI_COMM_WORLD);
    TU_MPI(MPI_Win_lock(MPI_LOCK_SHARED, rank, 0, w.win));
    TU_CHECK(((int *) w.base)[prev * SL] == val(11, prev, 29), "repeated epochs (%s): final %d",
             tu_flavor_names[flavor], ((int *) w.base)[prev * SL]);
    TU_MPI(MPI_Win_unlock(rank, w.win));
    MPI_Barrier(MPI_COMM_WORLD);

    tu_win_free(&w);
    free(all);
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &nprocs);
    for (int flavor = 0; flavor < TU_NFLAVORS; flavor++)
        if (tu_flavor_enabled(flavor)) run(flavor);
    int rc = tu_finish("passive");
    MPI_Finalize();
    return rc;
}
