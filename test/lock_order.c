/*
 * lock_order: every rank holds locks on every other rank at once, taken in
 * ascending rank order (the order that keeps nested locks free of
 * deadlock), then works on them in the middle of the epoch in ways that
 * make the lock be taken there: request-based puts (never carried in a
 * lazy lock request) in ascending, descending and rotated target order
 * (each rank starting at the next rank up), flushes in
 * descending order after carried puts, one issued put after carried ones,
 * and exclusive and shared locks mixed.  Across hosts some targets are on
 * the node (locked by CPU atomic in MPI_Win_lock) and some off it (locked
 * lazily, by message, when an operation needs the grant): the component
 * must still take the locks in the order MPI_Win_lock asked for them, or
 * two ranks each hold a lock the other waits for (docs/synchronization.md;
 * found with am_search at 4 ranks on 2 hosts).
 * Checked: each origin's slot at every target holds what it put that round;
 * under exclusive locks a fetch-and-op on the target's owner count finds
 * nobody else there (0 on entry, 1 before the release).  A deadlock ends in
 * the watchdog (--timeout S, default 60).  --pattern N: that pattern only.
 *
 * Two windows (A, B), every rank including itself a target: lock_all on
 * one window with exclusive locks on the other, lock_all on both, and
 * exclusive locks on both, taken A first then B; half of the ranks (one
 * per host, alternating by round) take lock_all where the pattern has one,
 * the others exclusive locks.  Work goes to B first, then A, so that B's
 * locks are held before A's lazy ones are needed: taken in the order of
 * the calls (lock_all as all its shared locks at once) nothing can wait
 * for ever.  A lock_all holder reads each owner count it reaches (0: no
 * exclusive holder inside).
 */
#include "testutil.h"

#include <signal.h>

#define ROUNDS 6
enum { P_RPUT_UP, P_RPUT_DOWN, P_RPUT_ROTATED, P_FLUSH_DOWN, P_CARRIED_THEN_RPUT, P_MIXED,
       P_ALL_THEN_LOCKS, P_LOCKS_THEN_ALL, P_ALL_TWO, P_TWO_WINDOWS, NPAT };
static const char *pat_names[] = { "rput ascending", "rput descending",
                                   "rput from the next rank up, wrapping",
                                   "flush descending", "carried puts, then an rput",
                                   "exclusive and shared mixed",
                                   "lock_all on A, exclusive locks on B",
                                   "exclusive locks on A, lock_all on B",
                                   "lock_all on A and on B", "exclusive locks on A and B" };

/* Window words: [0] owner count, [1 + r] the slot of origin r. */
static int rank, nprocs;

static int lock_type(int pat, int t)
{
    return P_MIXED == pat && 0 == t % 2 ? MPI_LOCK_SHARED : MPI_LOCK_EXCLUSIVE;
}

static int value(int round, int pat, int origin)
{
    return 1 + round * 1000 + pat * 100 + origin;
}

static void put_slot(tu_win_t *w, int t, const int *v, int issued)
{
    MPI_Request req;
    MPI_Aint at = tu_disp(w, t, 1 + rank);
    if (issued) {
        TU_MPI(MPI_Rput(v, 1, MPI_INT, t, at, 1, MPI_INT, w->win, &req));
        TU_MPI(MPI_Wait(&req, MPI_STATUS_IGNORE));
    } else {
        TU_MPI(MPI_Put(v, 1, MPI_INT, t, at, 1, MPI_INT, w->win));
    }
}

static void epoch(tu_win_t *w, int round, int pat, int *enter, int *leave)
{
    static const int one = 1, minus = -1;
    int v = value(round, pat, rank);

    for (int t = 0; t < nprocs; t++) {
        if (t != rank) TU_MPI(MPI_Win_lock(lock_type(pat, t), t, 0, w->win));
    }
    for (int t = 0; t < nprocs; t++) {
        if (t != rank && MPI_LOCK_EXCLUSIVE == lock_type(pat, t)) {
            TU_MPI(MPI_Fetch_and_op(&one, &enter[t], MPI_INT, t, tu_disp(w, t, 0), MPI_SUM,
                                    w->win));
        }
    }
    switch (pat) {
    case P_RPUT_UP:
    case P_MIXED:
        for (int t = 0; t < nprocs; t++) if (t != rank) put_slot(w, t, &v, 1);
        break;
    case P_RPUT_DOWN:
        for (int t = nprocs - 1; t >= 0; t--) if (t != rank) put_slot(w, t, &v, 1);
        break;
    case P_RPUT_ROTATED:   /* (every rank in another order than its locks') */
        for (int i = 1; i < nprocs; i++) put_slot(w, (rank + i) % nprocs, &v, 1);
        break;
    case P_FLUSH_DOWN:
        for (int t = 0; t < nprocs; t++) if (t != rank) put_slot(w, t, &v, 0);
        for (int t = nprocs - 1; t >= 0; t--) if (t != rank) TU_MPI(MPI_Win_flush(t, w->win));
        break;
    case P_CARRIED_THEN_RPUT: {
        int last = rank == nprocs - 1 ? nprocs - 2 : nprocs - 1;
        for (int t = 0; t < nprocs; t++) if (t != rank && t != last) put_slot(w, t, &v, 0);
        put_slot(w, last, &v, 1);
        break;
    }
    }
    for (int t = 0; t < nprocs; t++) {
        if (t != rank && MPI_LOCK_EXCLUSIVE == lock_type(pat, t)) {
            TU_MPI(MPI_Fetch_and_op(&minus, &leave[t], MPI_INT, t, tu_disp(w, t, 0), MPI_SUM,
                                    w->win));
        }
    }
    for (int t = nprocs - 1; t >= 0; t--) {
        if (t != rank) TU_MPI(MPI_Win_unlock(t, w->win));
    }
}

/* ---- Two windows ---- */

/* Does this rank take lock_all on window `win` (0: A, 1: B) this round? */
static int uses_all(int pat, int win, int round)
{
    if ((rank + rank / 2 + round) % 2) return 0;
    return (P_ALL_THEN_LOCKS == pat && 0 == win) || (P_LOCKS_THEN_ALL == pat && 1 == win) ||
           P_ALL_TWO == pat;
}

static int value2(int round, int pat, int win, int origin)
{
    return win ? -value(round, pat, origin) : value(round, pat, origin);
}

/* Enter (+1) or leave (-1) every target's owner count under an exclusive
 * lock, or read it (`all`: a shared lock_all). */
static void owners(tu_win_t *w, int all, int delta, int *seen)
{
    static const int one = 1, minus = -1;
    for (int t = 0; t < nprocs; t++) {
        TU_MPI(MPI_Fetch_and_op(delta > 0 ? &one : &minus, &seen[t], MPI_INT, t,
                                tu_disp(w, t, 0), all ? MPI_NO_OP : MPI_SUM, w->win));
    }
}

static void check_owners(const char *where, const char *win, int all, int *seen, int want)
{
    for (int t = 0; t < nprocs; t++) {
        int w = all ? 0 : want;
        TU_CHECK(seen[t] == w, "%s: window %s, target %d: owner count %d %s (expected %d%s)",
                 where, win, t, seen[t], want ? "before the release" : "on entry", w,
                 all ? ": lock_all holds a shared lock" : ": exclusive");
    }
}

static void epoch2(tu_win_t *w, int round, int pat, const char *where)
{
    int all[2], *enter[2], *leave[2];

    for (int k = 0; k < 2; k++) {
        enter[k] = malloc(2 * nprocs * sizeof(int));
        leave[k] = enter[k] + nprocs;
        all[k] = uses_all(pat, k, round);
        if (all[k]) {
            TU_MPI(MPI_Win_lock_all(0, w[k].win));
        } else {
            for (int t = 0; t < nprocs; t++) {
                TU_MPI(MPI_Win_lock(MPI_LOCK_EXCLUSIVE, t, 0, w[k].win));
            }
        }
    }
    for (int k = 1; k >= 0; k--) {   /* B's locks are held before A's are needed */
        int v = value2(round, pat, k, rank);
        owners(&w[k], all[k], 1, enter[k]);
        for (int t = 0; t < nprocs; t++) put_slot(&w[k], t, &v, 1);
    }
    for (int k = 1; k >= 0; k--) owners(&w[k], all[k], -1, leave[k]);
    for (int k = 1; k >= 0; k--) {
        if (all[k]) {
            TU_MPI(MPI_Win_unlock_all(w[k].win));
        } else {
            for (int t = nprocs - 1; t >= 0; t--) TU_MPI(MPI_Win_unlock(t, w[k].win));
        }
    }
    for (int k = 0; k < 2; k++) {
        check_owners(where, k ? "B" : "A", all[k], enter[k], 0);
        check_owners(where, k ? "B" : "A", all[k], leave[k], 1);
        free(enter[k]);
    }
}

static void check_slots(tu_win_t *w, const char *where, int win, int round, int pat, int self)
{
    TU_MPI(MPI_Win_lock(MPI_LOCK_EXCLUSIVE, rank, 0, w->win));
    for (int o = 0; o < nprocs; o++) {
        int got = ((int *) w->base)[1 + o];
        int want = value2(round, pat, win, o);
        if (o == rank && !self) continue;   /* (the two-window patterns put there) */
        TU_CHECK(got == want, "%s: window %s, slot of origin %d: %d, expected %d", where,
                 win ? "B" : "A", o, got, want);
    }
    TU_CHECK(0 == ((int *) w->base)[0], "%s: owner count %d after the epochs", where,
             ((int *) w->base)[0]);
    TU_MPI(MPI_Win_unlock(rank, w->win));
}

int main(int argc, char **argv)
{
    char where[160];
    int *enter, *leave, only;

    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &nprocs);
    tu_watchdog("lock_order", (unsigned) tu_opt_long(argc, argv, "--timeout", 60));
    only = (int) tu_opt_long(argc, argv, "--pattern", -1);
    enter = malloc(nprocs * sizeof(int));
    leave = malloc(nprocs * sizeof(int));

    for (int f = 0; f < TU_NFLAVORS; f++) {
        tu_win_t ws[2], w;
        if (!tu_flavor_enabled(f)) continue;
        for (int k = 0; k < 2; k++) {
            tu_win_create(f, (1 + nprocs) * sizeof(int), sizeof(int), MPI_INFO_NULL,
                          MPI_COMM_WORLD, &ws[k]);
        }
        w = ws[0];
        for (int round = 0; round < ROUNDS; round++) {
            for (int pat = 0; pat < NPAT; pat++) {
                if (only >= 0 && pat != only) continue;
                snprintf(where, sizeof(where), "%s window, round %d, %s", tu_flavor_names[f],
                         round, pat_names[pat]);
                tu_where = where;
                if (pat >= P_ALL_THEN_LOCKS) {
                    epoch2(ws, round, pat, where);
                    MPI_Barrier(MPI_COMM_WORLD);
                    for (int k = 0; k < 2; k++) check_slots(&ws[k], where, k, round, pat, 1);
                    MPI_Barrier(MPI_COMM_WORLD);
                    continue;
                }
                for (int t = 0; t < nprocs; t++) enter[t] = leave[t] = -7;
                epoch(&w, round, pat, enter, leave);
                for (int t = 0; t < nprocs; t++) {
                    if (t == rank || MPI_LOCK_EXCLUSIVE != lock_type(pat, t)) continue;
                    TU_CHECK(0 == enter[t] && 1 == leave[t],
                             "%s: target %d: owner count %d on entry, %d before the release "
                             "(expected 0 and 1: exclusive)", where, t, enter[t], leave[t]);
                }
                MPI_Barrier(MPI_COMM_WORLD);
                check_slots(&w, where, 0, round, pat, 0);
                MPI_Barrier(MPI_COMM_WORLD);
            }
        }
        tu_where = "teardown";
        tu_win_free(&ws[0]);
        tu_win_free(&ws[1]);
    }
    alarm(0);
    free(enter);
    free(leave);
    {
        int rc = tu_finish("lock_order");
        MPI_Finalize();
        return rc;
    }
}
