/*
 * at_rtt: active-target epochs in round trips of a wire with latency.
 *
 * On every window flavor, rank 0 runs REPS (+ warm-ups) epochs with each
 * other rank p in turn (the rest wait in a barrier), each epoch timed at
 * rank 0:
 *   - PSCW: p posts to {0} and waits; rank 0 starts {p}, puts 8 bytes and
 *     completes.  The post needs no answer and the completion notice goes
 *     behind the put, so a cycle is the post's way to rank 0 and the
 *     notice's way back: one round trip;
 *   - fence: every rank fences, rank 0 puts 8 bytes to p, every rank
 *     fences: the notice behind the put and one exchange of counts, about
 *     one round trip (checked with 2 ranks, where the fence's collective
 *     is one exchange).
 *   - lock exclusive + 10 puts of 8 bytes + unlock, p waiting in a
 *     barrier: the epoch goes in the lock request, one round trip (2.1 at
 *     most: the bound for this pattern);
 *   - lock shared + get of 8 bytes + unlock: one round trip, the get's
 *     value checked;
 *   - in one lock_all epoch, put of 8 bytes + flush, again and again: one
 *     round trip each (each flush is a synchronization after which a
 *     dynamic window's target may have detached memory: its first access
 *     must not wait for a read of the target's detach generation).
 * After each epoch p checks the values rank 0 put (wait / the second fence
 * returned, or after the barrier: they must be there).
 *
 * Where run-tests.sh gives TU_DELAY_US (hosts.sh --delay) and p is on
 * another host, the fastest epoch must take less than 1.5 times (PSCW,
 * lock + get, put + flush), 1.6 times (fence) or 2.1 times (lock + 10
 * puts) the fastest 8-byte MPI ping-pong with p; a flush before the notice
 * (the old protocol) takes 2.  Dynamic windows are held to the same bounds:
 * they took a round trip more when each epoch's (or flush's) first access
 * read the target's detach generation and waited for it.  Without a delay
 * the same epochs run and every value is checked.
 */
#include "testutil.h"

#define REPS 20
#define WARM 3
#define W_PUT 0   /* the word rank 0 puts (PSCW, fence) */
#define NPUT 10   /* the lock epoch's puts: words 1..NPUT */

static uint64_t value(const tu_win_t *w, int peer, int i, int kind)
{
    return ((uint64_t) kind << 56) | ((uint64_t) w->flavor << 48) | ((uint64_t) peer << 32) |
           (uint64_t) (i + 1);
}

/* At the target after its epoch: rank 0's put is there. */
static void check_put(const tu_win_t *w, const char *what, int me, int i, uint64_t want)
{
    uint64_t got = ((volatile uint64_t *) w->base)[W_PUT];
    TU_CHECK(got == want, "%s, %s window, epoch %d: rank %d holds %llx, expected %llx", what,
             tu_flavor_names[w->flavor], i, me, (unsigned long long) got,
             (unsigned long long) want);
}

static double pscw(tu_win_t *w, int me, int peer, MPI_Group g0, MPI_Group gp)
{
    double best = 1e9;
    for (int i = 0; i < REPS + WARM; i++) {
        uint64_t put = value(w, peer, i, 1);
        if (me == peer) {
            TU_MPI(MPI_Win_post(g0, 0, w->win));
            TU_MPI(MPI_Win_wait(w->win));
            check_put(w, "PSCW", me, i, put);
        } else if (0 == me) {
            double t0 = MPI_Wtime();
            TU_MPI(MPI_Win_start(gp, 0, w->win));
            TU_MPI(MPI_Put(&put, 1, MPI_UINT64_T, peer, tu_disp(w, peer, W_PUT), 1,
                           MPI_UINT64_T, w->win));
            TU_MPI(MPI_Win_complete(w->win));
            double t = MPI_Wtime() - t0;
            if (i >= WARM && t < best) best = t;
        }
    }
    TU_MPI(MPI_Barrier(MPI_COMM_WORLD));
    return best;
}

static double fence(tu_win_t *w, int me, int peer)
{
    double best = 1e9;
    for (int i = 0; i < REPS + WARM; i++) {
        uint64_t put = value(w, peer, i, 2);
        double t0 = MPI_Wtime();
        TU_MPI(MPI_Win_fence(0, w->win));
        if (0 == me) {
            TU_MPI(MPI_Put(&put, 1, MPI_UINT64_T, peer, tu_disp(w, peer, W_PUT), 1,
                           MPI_UINT64_T, w->win));
        }
        TU_MPI(MPI_Win_fence(0, w->win));
        double t = MPI_Wtime() - t0;
        if (0 == me && i >= WARM && t < best) best = t;
        if (me == peer) check_put(w, "fence", me, i, put);
        TU_MPI(MPI_Win_fence(MPI_MODE_NOSUCCEED, w->win));
    }
    return best;
}

static double lock_puts(tu_win_t *w, int me, int peer)
{
    double best = 1e9;
    for (int i = 0; i < REPS + WARM; i++) {
        uint64_t put[NPUT];
        for (int k = 0; k < NPUT; k++) put[k] = value(w, peer, i, 3 + k);
        if (0 == me) {
            double t0 = MPI_Wtime();
            TU_MPI(MPI_Win_lock(MPI_LOCK_EXCLUSIVE, peer, 0, w->win));
            for (int k = 0; k < NPUT; k++) {
                TU_MPI(MPI_Put(&put[k], 1, MPI_UINT64_T, peer, tu_disp(w, peer, 1 + k), 1,
                               MPI_UINT64_T, w->win));
            }
            TU_MPI(MPI_Win_unlock(peer, w->win));
            double t = MPI_Wtime() - t0;
            if (i >= WARM && t < best) best = t;
        }
        TU_MPI(MPI_Barrier(MPI_COMM_WORLD));
        if (me == peer) {
            TU_MPI(MPI_Win_lock(MPI_LOCK_SHARED, me, 0, w->win));
            for (int k = 0; k < NPUT; k++) {
                uint64_t got = ((volatile uint64_t *) w->base)[1 + k];
                TU_CHECK(got == put[k], "lock + puts, %s window, epoch %d: word %d holds %llx, "
                         "expected %llx", tu_flavor_names[w->flavor], i, 1 + k,
                         (unsigned long long) got, (unsigned long long) put[k]);
            }
            TU_MPI(MPI_Win_unlock(me, w->win));
        }
        TU_MPI(MPI_Barrier(MPI_COMM_WORLD));  /* (checked before the next epoch) */
    }
    return best;
}

static double lock_get(tu_win_t *w, int me, int peer)
{
    double best = 1e9;
    for (int i = 0; i < REPS + WARM; i++) {
        uint64_t want = value(w, peer, i, 4 + NPUT), got = 0;
        if (me == peer) {
            TU_MPI(MPI_Win_lock(MPI_LOCK_EXCLUSIVE, me, 0, w->win));
            ((volatile uint64_t *) w->base)[W_PUT] = want;
            TU_MPI(MPI_Win_unlock(me, w->win));
        }
        TU_MPI(MPI_Barrier(MPI_COMM_WORLD));
        if (0 == me) {
            double t0 = MPI_Wtime();
            TU_MPI(MPI_Win_lock(MPI_LOCK_SHARED, peer, 0, w->win));
            TU_MPI(MPI_Get(&got, 1, MPI_UINT64_T, peer, tu_disp(w, peer, W_PUT), 1, MPI_UINT64_T,
                           w->win));
            TU_MPI(MPI_Win_unlock(peer, w->win));
            double t = MPI_Wtime() - t0;
            if (i >= WARM && t < best) best = t;
            TU_CHECK(got == want, "lock + get, %s window, epoch %d: got %llx, expected %llx",
                     tu_flavor_names[w->flavor], i, (unsigned long long) got,
                     (unsigned long long) want);
        }
        TU_MPI(MPI_Barrier(MPI_COMM_WORLD));
    }
    return best;
}

static double put_flush(tu_win_t *w, int me, int peer)
{
    double best = 1e9;
    uint64_t put = 0;
    if (0 == me) {
        TU_MPI(MPI_Win_lock_all(0, w->win));
        for (int i = 0; i < REPS + WARM; i++) {
            put = value(w, peer, i, 5 + NPUT);
            double t0 = MPI_Wtime();
            TU_MPI(MPI_Put(&put, 1, MPI_UINT64_T, peer, tu_disp(w, peer, W_PUT), 1,
                           MPI_UINT64_T, w->win));
            TU_MPI(MPI_Win_flush(peer, w->win));
            double t = MPI_Wtime() - t0;
            if (i >= WARM && t < best) best = t;
        }
        TU_MPI(MPI_Win_unlock_all(w->win));
    }
    MPI_Bcast(&put, 1, MPI_UINT64_T, 0, MPI_COMM_WORLD);
    if (me == peer) {
        TU_MPI(MPI_Win_lock(MPI_LOCK_SHARED, me, 0, w->win));
        check_put(w, "lock_all, put + flush", me, REPS + WARM - 1, put);
        TU_MPI(MPI_Win_unlock(me, w->win));
    }
    TU_MPI(MPI_Barrier(MPI_COMM_WORLD));
    return best;
}

/* Rank 0: an epoch's fastest time against the fastest ping-pong. */
static void check_rtt(const char *what, const tu_win_t *w, int peer, double best, double pp,
                      double limit)
{
    printf("%s, %s window, rank %d on another host: fastest %.1f us = %.2f ping-pongs "
           "(limit %.1f)\n", what, tu_flavor_names[w->flavor], peer, best * 1e6, best / pp,
           limit);
    TU_CHECK(best < limit * pp, "%s, %s window: %.2f round trips (%.1f us, ping-pong %.1f us), "
             "limit %.1f", what, tu_flavor_names[w->flavor], best / pp, best * 1e6, pp * 1e6,
             limit);
}

int main(int argc, char **argv)
{
    int me, np, spans;
    const char *env = getenv("TU_DELAY_US");
    double delay_us = env ? atof(env) : 0;
    MPI_Comm node;
    MPI_Group world, g0;

    tu_parse_args(argc, argv);
    tu_init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &me);
    MPI_Comm_size(MPI_COMM_WORLD, &np);
    node = tu_node_comm(MPI_COMM_WORLD, &spans);
    MPI_Comm_group(MPI_COMM_WORLD, &world);
    int zero = 0;
    MPI_Group_incl(world, 1, &zero, &g0);
    for (int f = 0; f < TU_NFLAVORS_ALL; f++) {
        tu_win_t w;
        if (!tu_flavor_or_all(f)) continue;
        tu_win_create(f, (1 + NPUT) * sizeof(uint64_t), sizeof(uint64_t), MPI_INFO_NULL, MPI_COMM_WORLD, &w);
        if (MPI_WIN_NULL == w.win) continue;
        TU_MPI(MPI_Win_set_errhandler(w.win, MPI_ERRORS_RETURN));
        for (int peer = 1; peer < np; peer++) {
            int remote = !tu_on_my_node(MPI_COMM_WORLD, node, peer);
            int timed = 0 == me && remote && delay_us > 0;
            MPI_Group gp;
            MPI_Group_incl(world, 1, &peer, &gp);
            double pp = tu_fastest_pingpong(me, peer, REPS, WARM);
            double t = pscw(&w, me, peer, g0, gp);
            if (timed) check_rtt("PSCW epoch (start, put, complete)", &w, peer, t, pp, 1.5);
            t = fence(&w, me, peer);
            if (timed && 2 == np) check_rtt("fence, put, fence", &w, peer, t, pp, 1.6);
            t = lock_puts(&w, me, peer);
            if (timed) check_rtt("lock + 10 puts + unlock", &w, peer, t, pp, 2.1);
            t = lock_get(&w, me, peer);
            if (timed) check_rtt("lock shared + get + unlock", &w, peer, t, pp, 1.5);
            t = put_flush(&w, me, peer);
            if (timed) check_rtt("put + flush in lock_all", &w, peer, t, pp, 1.5);
            MPI_Group_free(&gp);
        }
        tu_win_free(&w);
    }
    MPI_Group_free(&g0);
    MPI_Group_free(&world);
    MPI_Comm_free(&node);
    int rc = tu_finish("at_rtt");
    MPI_Finalize();
    return rc;
}
