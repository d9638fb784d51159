/* MPI_Win_lock racing MPI_Win_lock_all in two threads of one process
 * (MPI_THREAD_MULTIPLE).  A program that does this is erroneous, but the
 * window must stay consistent: the two epochs never both open (one call
 * returns MPI_ERR_RMA_SYNC, never another class), nothing crashes or hangs,
 * and after the race every lock and lock_all works.  osc/ucxx's lock takes
 * its target without the epoch lock there, meeting lock_all through the
 * lock count and the epoch kind (Dekker-style): without lock_all's look at
 * the count after it stores the kind, both open.
 * Usage: lock_race [-n N] (rounds per thread, default 3000); every flavor.
 * (Which side gets its epochs is up to the scheduler: a lock thread that
 * relocks at once can refuse lock_all every time.)
 * Thread L: lock shared the next rank, put its round, unlock.  Thread A:
 * lock_all, get from the next rank, unlock_all.  Each marks its epoch open
 * (a sequentially consistent flag) after the call returned and clears it
 * before it closes, and then looks at the other's flag: both set means both
 * epochs are open.  Afterwards the next rank's slot holds L's last round. */
#include "testutil.h"
#include <pthread.h>

static int rank, nprocs, rounds = 3000;
static volatile int in_lock, in_lockall;

typedef struct {
    tu_win_t *w;
    long ok, refused, overlaps, wrong_class, last;
} side_t;

static void tally(side_t *s, int rc)
{
    int cls = MPI_SUCCESS;
    if (MPI_SUCCESS == rc) return;
    MPI_Error_class(rc, &cls);
    if (MPI_ERR_RMA_SYNC == cls) s->refused++;
    else s->wrong_class++;
}

static void *lock_side(void *p)
{
    side_t *s = p;
    int next = (rank + 1) % nprocs, rc;
    for (int i = 1; i <= rounds; i++) {
        rc = MPI_Win_lock(MPI_LOCK_SHARED, next, 0, s->w->win);
        tally(s, rc);
        if (MPI_SUCCESS != rc) continue;
        __atomic_store_n(&in_lock, 1, __ATOMIC_SEQ_CST);
        if (__atomic_load_n(&in_lockall, __ATOMIC_SEQ_CST)) s->overlaps++;
        TU_MPI(MPI_Put(&i, 1, MPI_INT, next, tu_disp(s->w, next, 0), 1, MPI_INT, s->w->win));
        s->last = i;
        __atomic_store_n(&in_lock, 0, __ATOMIC_SEQ_CST);
        TU_MPI(MPI_Win_unlock(next, s->w->win));
        s->ok++;
    }
    return NULL;
}

static void *lockall_side(void *p)
{
    side_t *s = p;
    int next = (rank + 1) % nprocs, v, rc;
    for (int i = 1; i <= rounds; i++) {
        rc = MPI_Win_lock_all(0, s->w->win);
        tally(s, rc);
        if (MPI_SUCCESS != rc) continue;
        __atomic_store_n(&in_lockall, 1, __ATOMIC_SEQ_CST);
        if (__atomic_load_n(&in_lock, __ATOMIC_SEQ_CST)) s->overlaps++;
        TU_MPI(MPI_Get(&v, 1, MPI_INT, next, tu_disp(s->w, next, 0), 1, MPI_INT, s->w->win));
        TU_MPI(MPI_Win_flush(next, s->w->win));
        __atomic_store_n(&in_lockall, 0, __ATOMIC_SEQ_CST);
        TU_MPI(MPI_Win_unlock_all(s->w->win));
        s->ok++;
    }
    return NULL;
}

static void race(int flavor)
{
    const char *name = tu_flavor_names[flavor];
    int prev = (rank + nprocs - 1) % nprocs, got = -1, want;
    side_t l = { 0 }, a = { 0 };
    pthread_t tl, ta;
    tu_win_t w;

    tu_win_create(flavor, 64, 1, MPI_INFO_NULL, MPI_COMM_WORLD, &w);
    l.w = a.w = &w;
    MPI_Barrier(MPI_COMM_WORLD);
    pthread_create(&tl, NULL, lock_side, &l);
    pthread_create(&ta, NULL, lockall_side, &a);
    pthread_join(tl, NULL);
    pthread_join(ta, NULL);
    TU_CHECK(0 == l.overlaps + a.overlaps,
             "%s: a lock and a lock_all epoch were open at once %ld times", name,
             l.overlaps + a.overlaps);
    TU_CHECK(0 == l.wrong_class + a.wrong_class,
             "%s: %ld refusals were not MPI_ERR_RMA_SYNC", name, l.wrong_class + a.wrong_class);
    TU_CHECK(rounds == l.ok + l.refused && rounds == a.ok + a.refused,
             "%s: lock %ld + %ld, lock_all %ld + %ld of %d rounds", name, l.ok, l.refused, a.ok,
             a.refused, rounds);

    /* the window works after the race: the previous rank's last round is ours */
    want = (int) l.last;
    MPI_Sendrecv_replace(&want, 1, MPI_INT, (rank + 1) % nprocs, 7, prev, 7, MPI_COMM_WORLD,
                         MPI_STATUS_IGNORE);
    MPI_Barrier(MPI_COMM_WORLD);
    TU_MPI(MPI_Win_lock(MPI_LOCK_SHARED, rank, 0, w.win));
    TU_MPI(MPI_Get(&got, 1, MPI_INT, rank, tu_disp(&w, rank, 0), 1, MPI_INT, w.win));
    TU_MPI(MPI_Win_unlock(rank, w.win));
    TU_CHECK(want == got, "%s: holds %d after the race, rank %d's last put was %d", name, got,
             prev, want);
    TU_MPI(MPI_Win_lock_all(0, w.win));
    TU_MPI(MPI_Win_unlock_all(w.win));
    MPI_Barrier(MPI_COMM_WORLD);
    tu_win_free(&w);
}

int main(int argc, char **argv)
{
    int provided, rc;
    MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &nprocs);
    rounds = (int) tu_opt_long(argc, argv, "-n", 3000);
    if (tu_slow_transport() && rounds > 500) rounds = 500;
    TU_CHECK(MPI_THREAD_MULTIPLE == provided, "MPI_THREAD_MULTIPLE not provided (%d)", provided);
    if (MPI_THREAD_MULTIPLE == provided) {
        for (int flavor = 0; flavor < TU_NFLAVORS; flavor++)
            if (tu_flavor_enabled(flavor)) race(flavor);
    }
    rc = tu_finish("lock_race");
    MPI_Finalize();
    return rc;
}
