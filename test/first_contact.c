/*
 * first_contact: the first lock_all epoch to every rank, where none has an
 * endpoint yet (issue 52, across hosts).
 *
 * On every window flavor:
 *   - rank 0 alone: MPI_Win_lock_all, an 8-byte MPI_Put to every rank,
 *     MPI_Win_unlock_all, while the others wait without spinning (an
 *     MPI_Ibarrier tested between short sleeps: across hosts their
 *     progress thread serves the epoch, as for a target computing outside
 *     MPI);
 *   - then every rank at once: lock_all, a put to every rank, unlock_all
 *     (every pair meets for the first time on the first flavor, from both
 *     ends together);
 * every rank checks every value after each.
 *
 * The first flavor's epochs make the endpoints: to ranks on other hosts
 * over TCP, whose connections osc_ucxx_context.c has UCX make without
 * waiting for them (UCX_TCP_CONN_NB), so that the first operations wait in
 * UCX for connections still being made, to many peers at once, while those
 * peers connect to us.  With a wire with latency (run-tests.sh sets
 * TU_DELAY_US from test/hosts.sh --delay) rank 0 prints its epochs' time,
 * its CPU time and the rest in round trips (the fastest MPI ping-pong to a
 * rank on another host); they are not bounded here: where the ranks
 * outnumber the cores, the CPU time of their first contact is of the order
 * of the round trips saved (bench/SCALE.md has the figures).
 */
#include <time.h>

#include "testutil.h"

static uint64_t stamp(int flavor, int phase, int origin)
{
    return ((uint64_t) (flavor + 1) << 48) | ((uint64_t) (phase + 1) << 32) |
           (uint64_t) (origin + 1);
}

/* Wait for every rank without spinning on the CPU. */
static void idle_barrier(void)
{
    MPI_Request req;
    int done = 0;

    TU_MPI(MPI_Ibarrier(MPI_COMM_WORLD, &req));
    while (!done) {
        TU_MPI(MPI_Test(&req, &done, MPI_STATUS_IGNORE));
        if (!done) usleep(200);
    }
}

static double cpu_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return ts.tv_sec + 1e-9 * ts.tv_nsec;
}

/* lock_all, a put to every rank, unlock_all: its wall time, and in *cpu
 * the CPU time of the process (every thread) meanwhile. */
static double put_all(tu_win_t *w, int me, int np, uint64_t v, double *cpu)
{
    double t0 = MPI_Wtime(), c0 = cpu_now();

    TU_MPI(MPI_Win_lock_all(0, w->win));
    for (int k = 1; k <= np; k++) {
        int t = (me + k) % np;
        TU_MPI(MPI_Put(&v, 1, MPI_UINT64_T, t, tu_disp(w, t, me), 1, MPI_UINT64_T, w->win));
    }
    TU_MPI(MPI_Win_unlock_all(w->win));
    *cpu = cpu_now() - c0;
    return MPI_Wtime() - t0;
}

/* Slot `origin` of our window holds `want` (every origin when origin < 0). */
static void check(tu_win_t *w, int me, int np, int phase, int only)
{
    volatile uint64_t *mem = (volatile uint64_t *) w->base;

    TU_MPI(MPI_Win_lock(MPI_LOCK_SHARED, me, 0, w->win));
    TU_MPI(MPI_Win_sync(w->win));
    for (int r = 0; r < np; r++) {
        uint64_t want = stamp(w->flavor, phase, r);
        if (only >= 0 && r != only) continue;
        TU_CHECK(mem[r] == want, "%s window, %s: rank %d holds %llx from rank %d, expected %llx",
                 tu_flavor_names[w->flavor], phase ? "all to all" : "rank 0 to all", me,
                 (unsigned long long) mem[r], r, (unsigned long long) want);
    }
    TU_MPI(MPI_Win_unlock(me, w->win));
}

int main(int argc, char **argv)
{
    const char *env = getenv("TU_DELAY_US");
    double delay_us = env ? atof(env) : 0, rtt = 1e9;
    int me, np, spans, remote = 0, first = 1;
    MPI_Comm node;

    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &me);
    MPI_Comm_size(MPI_COMM_WORLD, &np);
    node = tu_node_comm(MPI_COMM_WORLD, &spans);
    for (int peer = 1; peer < np; peer++) {
        double t = tu_fastest_pingpong(me, peer, 10, 2);
        if (!tu_on_my_node(MPI_COMM_WORLD, node, peer)) {
            remote++;
            if (t < rtt) rtt = t;
        }
        TU_MPI(MPI_Barrier(MPI_COMM_WORLD));
    }
    for (int f = 0; f < TU_NFLAVORS; f++) {
        tu_win_t w;
        double t = 0, cpu = 0;

        if (!tu_flavor_or_all(f)) continue;
        tu_win_create(f, np * sizeof(uint64_t), sizeof(uint64_t), MPI_INFO_NULL, MPI_COMM_WORLD,
                      &w);
        if (MPI_WIN_NULL == w.win) continue;   /* (no shared window across hosts) */
        if (0 == me) t = put_all(&w, me, np, stamp(f, 0, me), &cpu);
        idle_barrier();
        check(&w, me, np, 0, 0);
        if (0 == me && spans && delay_us > 0) {
            double rt = (t - cpu) / rtt;
            printf("%s window, rank 0's %s lock_all + put to each of %d ranks + unlock_all: "
                   "%.1f us, %.1f us of it on the CPU, the rest %.1f round trips (ping-pong "
                   "%.1f us; %d ranks on other hosts)\n", tu_flavor_names[f],
                   first ? "first" : "next", np, t * 1e6, cpu * 1e6, rt, rtt * 1e6, remote);
        }
        first = 0;
        TU_MPI(MPI_Barrier(MPI_COMM_WORLD));
        put_all(&w, me, np, stamp(f, 1, me), &cpu);
        TU_MPI(MPI_Barrier(MPI_COMM_WORLD));
        check(&w, me, np, 1, -1);
        tu_win_free(&w);
    }
    MPI_Comm_free(&node);
    int rc = tu_finish("first_contact");
    MPI_Finalize();
    return rc;
}
