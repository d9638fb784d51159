/* am_progress (T13): do AMs complete while the target sleeps outside MPI?
 * (S10).  Rank 1 is the target; every other rank issues 20 AMs (ux_gen_fn,
 * 2 segments each) under a shared lock right after a barrier, flushes, and
 * measures the time from the barrier to the flush's return, while rank 1
 * sleeps 1 s outside MPI.  With the progress thread (--progress-thread,
 * --progress-wait, and by default when the target is on another node) or
 * origin computation (allocate/shared windows on one node) the flush should
 * return during the sleep, else after it.  An
 * MPIX_Ram issued first is completed by MPI_Wait (time printed too).  The times
 * are PRINTED, never gated: the test fails only on wrong outputs, wrong
 * counters at the target, or a hang (watchdog).  Window flavors: create and
 * allocate (dynamic and shared too with --all-flavors).
 * Flags: tu_am_args, --sleep MS (default 1000), --all-flavors. */
#include "uamx_util.h"
#include <time.h>

#define N 6
#define M 4
#define NAM 20
#define NSEG 2
#define WINB 1024

static int rank, nprocs, *pids;
static MPIX_Am_op op;

static void run(int f, int sleep_ms)
{
    tu_win_t w;
    int in[NAM * NSEG * N], out[NAM * NSEG * M], rin[NSEG * N], rout[NSEG * M], sent = 0;
    double t0, t_flush = 0, t_wait = 0;
    int at_origin = 0;
    char what[64];

    snprintf(what, sizeof(what), "%s", ux_fname(f));
    tu_where = what;
    ux_win_create(f, WINB, MPI_INFO_NULL, &w);
    TU_MPI(ux_register(op, 4, w.win));
    for (int i = 0; i < NAM * NSEG; i++) {
        in[i * N] = rank;
        for (int j = 1; j < N; j++) in[i * N + j] = i * 10 + j + rank * 1000;
    }
    for (int i = 0; i < NSEG; i++) {
        rin[i * N] = rank;
        for (int j = 1; j < N; j++) rin[i * N + j] = -(i * 10 + j);
    }
    MPI_Barrier(MPI_COMM_WORLD);
    t0 = MPI_Wtime();
    if (1 == rank) {
        struct timespec ts = { sleep_ms / 1000, (long) (sleep_ms % 1000) * 1000000L };
        while (nanosleep(&ts, &ts)) {}
    } else {
        MPI_Request req;
        TU_MPI(MPI_Win_lock(MPI_LOCK_SHARED, 1, 0, w.win));
        UX_EXPECT(MPIX_Ram(rin, N, MPI_INT, rout, M, MPI_INT, NSEG, 1, MPI_INT, ux_disp(&w, 1, 0), nprocs,
                           MPI_INT, MPI_INT, op, w.win, &req), MPI_SUCCESS, "%s: MPIX_Ram", what);
        for (int a = 0; a < NAM; a++)
            UX_EXPECT(MPIX_Am(in + a * NSEG * N, N, MPI_INT, out + a * NSEG * M, M, MPI_INT, NSEG, 1, MPI_INT,
                              ux_disp(&w, 1, 0), nprocs, MPI_INT, MPI_INT, op, w.win), MPI_SUCCESS,
                      "%s: MPIX_Am", what);
        UX_EXPECT(MPI_Wait(&req, MPI_STATUS_IGNORE), MPI_SUCCESS, "%s: MPI_Wait", what);
        t_wait = MPI_Wtime() - t0;
        UX_EXPECT(MPI_Win_flush(1, w.win), MPI_SUCCESS, "%s: flush", what);
        t_flush = MPI_Wtime() - t0;
        UX_EXPECT(MPI_Win_unlock(1, w.win), MPI_SUCCESS, "%s: unlock", what);
        ux_gen_check(rin, rout, N, M, NSEG, pids[1], pids[rank], what);
        for (int a = 0; a < NAM; a++)
            ux_gen_check(in + a * NSEG * N, out + a * NSEG * M, N, M, NSEG, pids[1], pids[rank], what);
        at_origin = out[2] == pids[rank];
        sent += NAM * NSEG + NSEG;
    }
    if (1 != rank)
        printf("am_progress %s rank %d: MPIX_Ram done after %.3f s, %d AMs flushed after %.3f s (target slept "
               "%.3f s; %s)\n", what, rank, t_wait, NAM, t_flush, sleep_ms / 1000.0,
               at_origin ? "computed at the origin" : "executed at the target");
    fflush(stdout);
    {
        int *exp = calloc(nprocs, sizeof(int));
        MPI_Gather(&sent, 1, MPI_INT, exp, 1, MPI_INT, 1, MPI_COMM_WORLD);
        if (1 == rank) {
            ux_lock_self(&w);
            for (int o = 0; o < nprocs; o++)
                TU_CHECK(((int *) w.base)[o] == exp[o], "%s: origin %d: %d segments counted, expected %d", what, o,
                         ((int *) w.base)[o], exp[o]);
            ux_unlock_self(&w);
        }
        free(exp);
    }
    MPI_Barrier(MPI_COMM_WORLD);
    TU_MPI(MPIX_Am_win_op_deregister(op, w.win));
    ux_win_free(&w);
}

int main(int argc, char **argv)
{
    int pid, sleep_ms = (int) tu_opt_long(argc, argv, "--sleep", 1000),
        all = tu_opt_flag(argc, argv, "--all-flavors");
    tu_am_args(argc, argv);
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &nprocs);
    tu_watchdog("am_progress", (unsigned) tu_opt_long(argc, argv, "--timeout", 60));
    if (0 == rank) {
        const char *pt = getenv("OMPI_MCA_osc_ucxx_progress_thread"),
                   *tune = getenv("OSC_UCXX_TEST_TUNE");
        printf("am_progress: progress thread %s, origin computation %s\n",
               pt && !strcmp(pt, "1") ? (tune && strstr(tune, "progress_wait=0") ? "on (poll)"
                                                                             : "on (wait)")
                                      : "default (on when a peer is on another node)",
               ux_origin_compute_on() ? "on" : "off");
    }
    pids = malloc(nprocs * sizeof(int));
    pid = (int) getpid();
    MPI_Allgather(&pid, 1, MPI_INT, pids, 1, MPI_INT, MPI_COMM_WORLD);
    TU_MPI(MPIX_Am_op_create(ux_gen_fn, NULL, &op));
    for (int f = 0; f < UX_NFLAVORS; f++)
        if (ux_flavor_enabled(f) && (all || TU_CREATE == f || TU_ALLOCATE == f)) run(f, sleep_ms);
    TU_MPI(MPIX_Am_op_free(&op));
    free(pids);
    int rc = tu_finish("am_progress");
    MPI_Finalize();
    return rc;
}
