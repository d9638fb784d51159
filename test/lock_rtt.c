/*
 * lock_rtt: a short passive-target epoch to another host costs one round
 * trip of the wire (issue 51; docs/synchronization.md, "Passive target").
 *
 * Rank 0 times, to every other rank and on every window flavor, 20 times
 * each:
 *   - MPI_Win_lock(EXCLUSIVE) + an 8-byte MPI_Put + MPI_Win_unlock;
 *   - MPI_Win_lock(SHARED) + an 8-byte MPI_Get + MPI_Win_unlock;
 *   - MPI_Win_lock(SHARED) + an 8-byte MPI_Accumulate(MPI_SUM) + unlock;
 *   - MPI_Win_lock(EXCLUSIVE) + 1000 8-byte MPI_Puts + MPI_Win_unlock (a
 *     long epoch: its batches follow the request, osc_ucxx_lazy.c);
 *   - MPI_Win_lock(EXCLUSIVE) + one 64 KiB MPI_Put + MPI_Win_unlock (a put
 *     larger than a batch, carried in one of its own);
 * while the target waits in MPI_Barrier.  The values are checked always:
 * the get returns what the target stored, the target finds the last put
 * and the sum of the accumulates.  With a wire with latency (run-tests.sh
 * sets TU_DELAY_US from test/hosts.sh --delay) and a target on another
 * host, the fastest epoch of each kind must take less than 1.5 times the
 * fastest MPI ping-pong to that rank (the lock request carries the epoch:
 * one round trip; the protocol before took three) on allocated and created
 * windows, and the long epoch and the 64 KiB put less than 2.5 times, 3.5
 * with more than 2 ranks (the bytes' time on the wire and both processes'
 * handling of many operations come on top of the round trip, and with more
 * ranks the target shares the cores with another; when a thousand puts
 * exceeded what went ahead of the grant, and the 64 KiB put issued after
 * the grant with a flush after the release's answer, they took 3-4); dynamic
 * windows resolve each operation's range first (their times are printed,
 * not bounded here).
 *
 * --onesided: the job runs with locks one-sided by UCX atomics, as on an
 * RDMA network with remote atomics (test hook: --tune device_atomics=1,
 * direct=0; osc_ucxx_policy.c).  Then the lock is one round trip and the
 * unlock another (the release goes behind the operation, fenced, and the
 * flush that completes the operation completes it): each epoch must take
 * less than 2.5 round trips (a release waited for after the flush made 3);
 * the long epoch's puts issue one by one there, the 64 KiB put after the
 * lock's round trip (their times are printed).
 */
#include "testutil.h"

#define REPS 20

#define NLONG 1000  /* the long epoch's puts: words LONG_SLOT.. */
#define NBIG 8192   /* the 64 KiB put's words: BIG_SLOT.. */
enum { PUT_SLOT, GET_SLOT, ACC_SLOT, LONG_SLOT, BIG_SLOT = LONG_SLOT + NLONG,
       NSLOTS = BIG_SLOT + NBIG };
enum { K_PUT, K_GET, K_ACC, K_LONG, K_BIG, NKINDS };
static double bound = 1.5;   /* round trips (--onesided: 2.5) */
/* ... more for the 1000 puts and the 64 KiB put, whose time also has the
 * two processes' CPU work in it: with more than 2 ranks, more still (2
 * cores: the target shares them with the other ranks of its host) */
static double long_slack = 1.0;
static const char *kind_names[NKINDS] = {"lock + put + unlock", "lock + get + unlock",
                                         "lock + accumulate + unlock",
                                         "lock + 1000 puts + unlock",
                                         "lock + 64 KiB put + unlock"};
static uint64_t big[NBIG];

/* The 64 KiB put's word k in epoch v. */
static uint64_t big_word(uint64_t v, int k)
{
    return v ^ ((uint64_t) k << 20);
}

static uint64_t stamp(const tu_win_t *w, int peer, int i)
{
    return ((uint64_t) (w->flavor + 1) << 48) | ((uint64_t) peer << 32) | (uint64_t) (i + 1);
}

/* One epoch of `kind` from rank 0 to `peer`, timed. */
static double epoch(tu_win_t *w, int kind, int peer, int i)
{
    uint64_t v = stamp(w, peer, i), got = 0, one = 1, vals[NLONG];
    double t0 = MPI_Wtime(), t;

    switch (kind) {
    case K_PUT:
        TU_MPI(MPI_Win_lock(MPI_LOCK_EXCLUSIVE, peer, 0, w->win));
        TU_MPI(MPI_Put(&v, 1, MPI_UINT64_T, peer, tu_disp(w, peer, PUT_SLOT), 1, MPI_UINT64_T,
                       w->win));
        TU_MPI(MPI_Win_unlock(peer, w->win));
        break;
    case K_GET:
        TU_MPI(MPI_Win_lock(MPI_LOCK_SHARED, peer, 0, w->win));
        TU_MPI(MPI_Get(&got, 1, MPI_UINT64_T, peer, tu_disp(w, peer, GET_SLOT), 1, MPI_UINT64_T,
                       w->win));
        TU_MPI(MPI_Win_unlock(peer, w->win));
        break;
    case K_LONG:
        TU_MPI(MPI_Win_lock(MPI_LOCK_EXCLUSIVE, peer, 0, w->win));
        for (int k = 0; k < NLONG; k++) {
            vals[k] = v + ((uint64_t) k << 24);
            TU_MPI(MPI_Put(&vals[k], 1, MPI_UINT64_T, peer, tu_disp(w, peer, LONG_SLOT + k), 1,
                           MPI_UINT64_T, w->win));
        }
        TU_MPI(MPI_Win_unlock(peer, w->win));
        break;
    case K_BIG:
        for (int k = 0; k < NBIG; k++) big[k] = big_word(v, k);
        t0 = MPI_Wtime();
        TU_MPI(MPI_Win_lock(MPI_LOCK_EXCLUSIVE, peer, 0, w->win));
        TU_MPI(MPI_Put(big, NBIG, MPI_UINT64_T, peer, tu_disp(w, peer, BIG_SLOT), NBIG,
                       MPI_UINT64_T, w->win));
        TU_MPI(MPI_Win_unlock(peer, w->win));
        break;
    default:
        TU_MPI(MPI_Win_lock(MPI_LOCK_SHARED, peer, 0, w->win));
        TU_MPI(MPI_Accumulate(&one, 1, MPI_UINT64_T, peer, tu_disp(w, peer, ACC_SLOT), 1,
                              MPI_UINT64_T, MPI_SUM, w->win));
        TU_MPI(MPI_Win_unlock(peer, w->win));
        break;
    }
    t = MPI_Wtime() - t0;
    if (K_GET == kind) {
        TU_CHECK(got == stamp(w, peer, 1000), "%s window: get from rank %d returned %llx, "
                 "expected %llx", tu_flavor_names[w->flavor], peer, (unsigned long long) got,
                 (unsigned long long) stamp(w, peer, 1000));
    }
    return t;
}

/* The target's view after rank 0's epochs. */
static void check_target(tu_win_t *w, int me)
{
    uint64_t *mem = (uint64_t *) w->base, put, acc;

    TU_MPI(MPI_Win_lock(MPI_LOCK_SHARED, me, 0, w->win));
    put = ((volatile uint64_t *) mem)[PUT_SLOT];
    acc = ((volatile uint64_t *) mem)[ACC_SLOT];
    TU_MPI(MPI_Win_unlock(me, w->win));
    TU_CHECK(put == stamp(w, me, REPS - 1), "%s window: rank %d holds %llx after rank 0's "
             "puts, expected %llx", tu_flavor_names[w->flavor], me, (unsigned long long) put,
             (unsigned long long) stamp(w, me, REPS - 1));
    TU_CHECK(acc == REPS, "%s window: rank %d's sum is %llu after %d accumulates of 1",
             tu_flavor_names[w->flavor], me, (unsigned long long) acc, REPS);
    for (int k = 0; k < NLONG; k++) {
        uint64_t want = stamp(w, me, REPS - 1) + ((uint64_t) k << 24);
        TU_CHECK(((volatile uint64_t *) mem)[LONG_SLOT + k] == want, "%s window: rank %d holds %llx in word %d of the "
                 "long epoch, expected %llx", tu_flavor_names[w->flavor], me,
                 (unsigned long long) mem[LONG_SLOT + k], k, (unsigned long long) want);
    }
    for (int k = 0; k < NBIG; k++) {
        uint64_t want = big_word(stamp(w, me, REPS - 1), k);
        if (((volatile uint64_t *) mem)[BIG_SLOT + k] == want) continue;
        TU_CHECK(0, "%s window: rank %d holds %llx in word %d of the 64 KiB put, expected "
                 "%llx", tu_flavor_names[w->flavor], me, (unsigned long long) mem[BIG_SLOT + k],
                 k, (unsigned long long) want);
        break;
    }
}

static void check_time(const tu_win_t *w, int kind, int peer, double best, double rtt,
                       double delay_us)
{
    double rt = best / rtt;

    printf("%s window, %s to rank %d (another host): fastest %.1f us = %.2f round trips "
           "(ping-pong %.1f us, one-way delay %.0f us)\n", tu_flavor_names[w->flavor],
           kind_names[kind], peer, best * 1e6, rt, rtt * 1e6, delay_us);
    TU_CHECK(best >= 2e-6 * delay_us, "%s window: %s to rank %d took %.1f us < 2 x the delay: "
             "it did not cross the wire", tu_flavor_names[w->flavor], kind_names[kind], peer,
             best * 1e6);
    if (TU_DYNAMIC == w->flavor) return;
    if ((K_LONG == kind || K_BIG == kind) && bound > 1.5) return;   /* (one-sided: they issue) */
    double limit = K_LONG == kind || K_BIG == kind ? bound + long_slack : bound;
    TU_CHECK(rt < limit, "%s window: %s to rank %d took %.2f round trips (%.1f us, ping-pong "
             "%.1f us): limit %.1f", tu_flavor_names[w->flavor], kind_names[kind], peer, rt,
             best * 1e6, rtt * 1e6, limit);
}

static void run_flavor(int f, int me, int np, MPI_Comm node, const double *rtt, double delay_us)
{
    tu_win_t w;

    tu_win_create(f, NSLOTS * sizeof(uint64_t), sizeof(uint64_t), MPI_INFO_NULL,
                  MPI_COMM_WORLD, &w);
    TU_MPI(MPI_Win_lock(MPI_LOCK_EXCLUSIVE, me, 0, w.win));
    ((volatile uint64_t *) w.base)[GET_SLOT] = stamp(&w, me, 1000);
    TU_MPI(MPI_Win_unlock(me, w.win));
    TU_MPI(MPI_Barrier(MPI_COMM_WORLD));
    for (int peer = 1; peer < np; peer++) {
        int remote = !tu_on_my_node(MPI_COMM_WORLD, node, peer);
        for (int kind = 0; kind < NKINDS && 0 == me; kind++) {
            double best = 1e9;
            for (int i = 0; i < REPS; i++) {
                double t = epoch(&w, kind, peer, i);
                if (t < best) best = t;
            }
            if (remote && delay_us > 0) check_time(&w, kind, peer, best, rtt[peer], delay_us);
        }
        TU_MPI(MPI_Barrier(MPI_COMM_WORLD));
        if (me == peer) check_target(&w, me);
    }
    tu_win_free(&w);
}

int main(int argc, char **argv)
{
    int me, np, spans;
    const char *env = getenv("TU_DELAY_US");
    double delay_us = env ? atof(env) : 0, *rtt;
    MPI_Comm node;

    MPI_Init(&argc, &argv);
    for (int i = 1; i < argc; i++) {
        if (0 == strcmp(argv[i], "--onesided")) bound = 2.5;
    }
    MPI_Comm_rank(MPI_COMM_WORLD, &me);
    MPI_Comm_size(MPI_COMM_WORLD, &np);
    if (np > 2) long_slack = 2.0;
    node = tu_node_comm(MPI_COMM_WORLD, &spans);
    rtt = calloc(np, sizeof(*rtt));
    for (int peer = 1; peer < np; peer++) {
        rtt[peer] = tu_fastest_pingpong(me, peer, REPS, 0);
        TU_MPI(MPI_Barrier(MPI_COMM_WORLD));
    }
    for (int f = 0; f < TU_NFLAVORS; f++) {
        if (tu_flavor_or_all(f)) run_flavor(f, me, np, node, rtt, delay_us);
    }
    free(rtt);
    MPI_Comm_free(&node);
    int rc = tu_finish("lock_rtt");
    MPI_Finalize();
    return rc;
}
