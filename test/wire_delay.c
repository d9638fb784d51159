/*
 * wire_delay: the wire with latency of test/hosts.sh (--delay D).
 *
 * run-tests.sh sets TU_DELAY_US to the hosts' one-way delay when they have
 * one.  Rank 0 then exchanges with every other rank:
 *   - an 8-byte MPI ping-pong, 20 times: with a rank on another host the
 *     fastest round trip must take at least 2 D (every frame held D each
 *     way) and less than 2 D + max(D, 5 ms) (the wire holds frames for D,
 *     not much longer); with a rank on the same host less than 2 D (no
 *     wire between them: shared memory);
 *   - per window flavor, an 8-byte MPI_Put + MPI_Win_flush under a shared
 *     lock, 20 times: to another host it must take at least 2 D too (one-
 *     sided traffic crosses the wire as well: nothing of another host is
 *     mapped), and the value must arrive.
 * Without a delay the same exchanges run and their values are checked.
 */
#include "testutil.h"

#include <time.h>

#define REPS 20

static double fastest_put(tu_win_t *w, int me, int peer)
{
    double best = 1e9;
    uint64_t v = 0;
    MPI_Aint disp = w->remote ? w->remote[peer] : 0;

    if (0 == me) {
        TU_MPI(MPI_Win_lock(MPI_LOCK_SHARED, peer, 0, w->win));
        for (int i = 0; i < REPS; i++) {
            v = ((uint64_t) w->flavor << 48) | ((uint64_t) peer << 32) | (uint64_t) (i + 1);
            double t0 = MPI_Wtime();
            TU_MPI(MPI_Put(&v, 1, MPI_UINT64_T, peer, disp, 1, MPI_UINT64_T, w->win));
            TU_MPI(MPI_Win_flush(peer, w->win));
            double t = MPI_Wtime() - t0;
            if (t < best) best = t;
        }
        TU_MPI(MPI_Win_unlock(peer, w->win));
    }
    TU_MPI(MPI_Barrier(MPI_COMM_WORLD));
    if (me == peer) {
        uint64_t want = ((uint64_t) w->flavor << 48) | ((uint64_t) peer << 32) | REPS, got;
        TU_MPI(MPI_Win_lock(MPI_LOCK_SHARED, me, 0, w->win));
        got = *(volatile uint64_t *) w->base;
        TU_MPI(MPI_Win_unlock(me, w->win));
        TU_CHECK(got == want, "%s window: rank %d holds %llx after rank 0's puts, expected %llx",
                 tu_flavor_names[w->flavor], me, (unsigned long long) got,
                 (unsigned long long) want);
    }
    return best;
}

/* Rank 0: check a fastest time against the delay (us; 0: none). */
static void check_time(const char *what, int peer, int remote, double best, double delay_us)
{
    double lo = 2e-6 * delay_us, slack = 1e-6 * (delay_us > 5000 ? delay_us : 5000);
    if (delay_us <= 0) return;
    printf("%s with rank %d (%s host): fastest %.1f us, one-way delay %.0f us\n", what, peer,
           remote ? "another" : "the same", best * 1e6, delay_us);
    if (remote) {
        TU_CHECK(best >= lo, "%s with rank %d on another host took %.1f us < 2 x the delay "
                 "(%.0f us): the wire does not hold frames", what, peer, best * 1e6, delay_us);
        TU_CHECK(best < lo + slack, "%s with rank %d took %.1f us, far over 2 x the delay "
                 "(%.0f us)", what, peer, best * 1e6, delay_us);
    } else {
        TU_CHECK(best < lo, "%s with rank %d on the same host took %.1f us >= 2 x the delay "
                 "(%.0f us): it crossed the wire", what, peer, best * 1e6, delay_us);
    }
}

int main(int argc, char **argv)
{
    int me, np, spans;
    const char *env = getenv("TU_DELAY_US");
    double delay_us = env ? atof(env) : 0;
    MPI_Comm node;

    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &me);
    MPI_Comm_size(MPI_COMM_WORLD, &np);
    node = tu_node_comm(MPI_COMM_WORLD, &spans);
    if (0 == me && delay_us > 0 && !spans) {
        printf("wire_delay: TU_DELAY_US=%s but every rank is on one host: no wire to check\n",
               env);
    }
    for (int peer = 1; peer < np; peer++) {
        int remote = !tu_on_my_node(MPI_COMM_WORLD, node, peer);
        double best = tu_fastest_pingpong(me, peer, REPS);
        if (0 == me) check_time("ping-pong", peer, remote, best, delay_us);
        TU_MPI(MPI_Barrier(MPI_COMM_WORLD));
    }
    for (int f = 0; f < TU_NFLAVORS; f++) {
        tu_win_t w;
        if (!tu_flavor_enabled(f)) continue;
        tu_win_create(f, sizeof(uint64_t), 1, MPI_INFO_NULL, MPI_COMM_WORLD, &w);
        for (int peer = 1; peer < np; peer++) {
            int remote = !tu_on_my_node(MPI_COMM_WORLD, node, peer);
            double best = fastest_put(&w, me, peer);
            char what[64];
            snprintf(what, sizeof(what), "put + flush (%s window)", tu_flavor_names[f]);
            if (0 == me && remote) check_time(what, peer, remote, best, delay_us);
        }
        TU_MPI(MPI_Win_free(&w.win));
        if (TU_ALLOCATE != f) free(w.base);
        free(w.remote);
    }
    MPI_Comm_free(&node);
    int rc = tu_finish("wire_delay");
    MPI_Finalize();
    return rc;
}
