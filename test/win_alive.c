/* win_alive: many windows alive together, each with synchronization state of
 * its own.  osc/ucxx carves the state segments of windows (lock word, fence
 * barrier slots, accumulate stripe locks), their PSCW post slots and small
 * MPI_Win_allocate windows' memory out of shared arenas
 * (osc_ucxx_memory.c): two
 * windows alive must never share a word, and a freed window's units must be
 * reusable by the next.
 *
 * COUNT ("-n N", default 48: more than two arenas' worth) windows of each
 * enabled flavor (every flavor unless TU_FLAVORS narrows them) are created,
 * sizes varying, and kept alive; then, on every window:
 *   - fence, a put of (window, rank) into element 0 of the next rank's
 *     window, fence: checked by its owner (fence barriers through state
 *     segments hang or pass early where two windows share slots);
 *   - lock_all on window i, and inside it an exclusive lock on the next
 *     rank in window i + 1 with a fetch_and_op(+1) on element 1: a lock
 *     word shared by the two windows deadlocks (the watchdog fails the
 *     run); element 1 is checked after a barrier;
 * then every third window is freed and as many are created again (they
 * take the freed units), and on every window a PSCW epoch (each rank
 * exposes its window to the previous rank and accesses the next one's) with
 * an MPI_SUM accumulate of the window's number + 1 into element 2, checked
 * after the wait; last, the windows are freed in reverse order. */
#include "testutil.h"
#include <stdint.h>

static int me, nprocs, next, prev;

static int64_t tag(int win, int rank)
{
    return (int64_t) 0x5a00000000LL + win * 1000LL + rank;
}

static void make(int flavor, int i, tu_win_t *w)
{
    MPI_Aint n = 4 + (i % 5) * 61;  /* elements */
    tu_win_create(flavor, n * (MPI_Aint) sizeof(int64_t), sizeof(int64_t), MPI_INFO_NULL,
                  MPI_COMM_WORLD, w);
}

static void fence_put(tu_win_t *w, int i, const char *fl)
{
    int64_t *mine = w->base, val = tag(i, me);
    TU_MPI(MPI_Win_fence(0, w->win));
    TU_MPI(MPI_Put(&val, 1, MPI_INT64_T, next, tu_disp(w, next, 0), 1, MPI_INT64_T, w->win));
    TU_MPI(MPI_Win_fence(0, w->win));
    TU_CHECK(mine[0] == tag(i, prev), "%s window %d: element 0 %llx, expected %llx", fl, i,
             (long long) mine[0], (long long) tag(i, prev));
}

/* lock_all on a, and inside it an exclusive lock on the next rank in b. */
static void nested_locks(tu_win_t *a, tu_win_t *b)
{
    int64_t one = 1, old = -1;
    TU_MPI(MPI_Win_lock_all(0, a->win));
    TU_MPI(MPI_Win_lock(MPI_LOCK_EXCLUSIVE, next, 0, b->win));
    TU_MPI(MPI_Fetch_and_op(&one, &old, MPI_INT64_T, next, tu_disp(b, next, 1), MPI_SUM,
                            b->win));
    TU_MPI(MPI_Win_unlock(next, b->win));
    TU_MPI(MPI_Win_unlock_all(a->win));
}

static void pscw_acc(tu_win_t *w, int i, MPI_Group to_next, MPI_Group from_prev,
                     const char *fl)
{
    int64_t *mine = w->base, val = i + 1, before = mine[2];
    TU_MPI(MPI_Win_post(from_prev, 0, w->win));
    TU_MPI(MPI_Win_start(to_next, 0, w->win));
    TU_MPI(MPI_Accumulate(&val, 1, MPI_INT64_T, next, tu_disp(w, next, 2), 1, MPI_INT64_T,
                          MPI_SUM, w->win));
    TU_MPI(MPI_Win_complete(w->win));
    TU_MPI(MPI_Win_wait(w->win));
    TU_CHECK(mine[2] == before + i + 1, "%s window %d: element 2 %lld, expected %lld", fl, i,
             (long long) mine[2], (long long) (before + i + 1));
}

static void one_flavor(int flavor, int count)
{
    const char *fl = tu_flavor_names[flavor];
    tu_win_t *w = calloc(count, sizeof(*w));
    MPI_Group world, to_next, from_prev;

    MPI_Comm_group(MPI_COMM_WORLD, &world);
    MPI_Group_incl(world, 1, &next, &to_next);
    MPI_Group_incl(world, 1, &prev, &from_prev);
    for (int i = 0; i < count; i++) {
        make(flavor, i, &w[i]);
        if (MPI_WIN_NULL == w[i].win) goto out;  /* (a component without this flavor) */
    }
    for (int i = 0; i < count; i++) fence_put(&w[i], i, fl);
    for (int i = 0; i < count; i++) nested_locks(&w[i], &w[(i + 1) % count]);
    MPI_Barrier(MPI_COMM_WORLD);
    for (int i = 0; i < count; i++) {
        int64_t *mine = w[i].base;
        TU_MPI(MPI_Win_lock(MPI_LOCK_SHARED, me, 0, w[i].win));
        TU_CHECK(mine[1] == 1, "%s window %d: element 1 %lld, expected 1", fl, i,
                 (long long) mine[1]);
        TU_MPI(MPI_Win_unlock(me, w[i].win));
    }
    for (int i = 0; i < count; i += 3) tu_win_free(&w[i]);
    for (int i = 0; i < count; i += 3) {
        make(flavor, i + 1, &w[i]);
        fence_put(&w[i], i, fl);
    }
    for (int i = 0; i < count; i++) pscw_acc(&w[i], i, to_next, from_prev, fl);
out:
    for (int i = count - 1; i >= 0; i--) tu_win_free(&w[i]);
    MPI_Group_free(&to_next);
    MPI_Group_free(&from_prev);
    MPI_Group_free(&world);
    free(w);
}

int main(int argc, char **argv)
{
    tu_init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &me);
    MPI_Comm_size(MPI_COMM_WORLD, &nprocs);
    next = (me + 1) % nprocs;
    prev = (me + nprocs - 1) % nprocs;
    tu_watchdog("win_alive", 100);
    int count = (int) tu_opt_long(argc, argv, "-n", 48);
    for (int flavor = 0; flavor < TU_NFLAVORS_ALL; flavor++) {
        if (tu_flavor_or_all(flavor)) one_flavor(flavor, count);
    }
    int rc = tu_finish("win_alive");
    MPI_Finalize();
    return rc;
}
