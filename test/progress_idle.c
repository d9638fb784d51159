/*
 * progress_idle: the component's progress thread sleeps while it has
 * nothing to do, also while UCX's event descriptor stays ready (issue 52).
 *
 * UCX's event fd may stay readable while progress finds nothing to do: a
 * TCP endpoint that waits for its peer's connection ack asks to write, and
 * its socket is writable at once, every time.  A thread that went back to
 * the fd at once spun as long as the peer took to answer, on the cores the
 * peer needed (the first epoch across hosts, when every endpoint is made).
 * The test hook busy_fd=1 (--tune busy_fd=1) adds a descriptor that is
 * always ready to the thread's wait, for good.
 *
 * Run with the thread on (--mca osc_ucxx_progress_thread 1: it runs by
 * default across nodes only).  Per window flavor:
 *   1. lock_all, an 8-byte put to every rank, unlock_all: every endpoint
 *      made; every rank's value checked at every rank;
 *   2. rank 0 stays outside MPI for IDLE ms while every other rank runs
 *      R exclusive lock + put + unlock epochs on it, which its thread
 *      serves; then the others stay outside MPI for IDLE ms; the last value
 *      of each origin checked at rank 0.
 * While outside MPI each rank reads the CPU time of its progress thread
 * (the thread named osc_ucxx_prog: /proc/self/task/TID/schedstat): it must
 * stay under a tenth of the time outside MPI.  A thread that sleeps uses a
 * small fraction of that, one that spins what the cores give it.
 *
 * Usage: progress_idle [-t IDLE_MS] [-r R]   (defaults 300, 10)
 */
#include "testutil.h"

#include <dirent.h>
#include <time.h>

static int me, np;
static long idle_ms, reps;

static uint64_t stamp(int flavor, int origin, int i)
{
    return ((uint64_t) (flavor + 1) << 48) | ((uint64_t) origin << 32) | (uint64_t) (i + 1);
}

/* The progress thread's id, or 0 where this process has none. */
static long progress_tid(void)
{
    DIR *d = opendir("/proc/self/task");
    struct dirent *e;
    long tid = 0;

    while (d && 0 == tid && NULL != (e = readdir(d))) {
        char path[300], comm[64] = "";
        FILE *f;
        snprintf(path, sizeof(path), "/proc/self/task/%s/comm", e->d_name);
        if (NULL == (f = fopen(path, "r"))) continue;
        if (fgets(comm, sizeof(comm), f) && 0 == strncmp(comm, "osc_ucxx_prog", 13)) {
            tid = atol(e->d_name);
        }
        fclose(f);
    }
    if (d) closedir(d);
    return tid;
}

/* CPU seconds the thread `tid` has run so far. */
static double thread_cpu(long tid)
{
    char path[64];
    unsigned long long ns = 0;
    FILE *f;

    snprintf(path, sizeof(path), "/proc/self/task/%ld/schedstat", tid);
    if (NULL != (f = fopen(path, "r"))) {
        if (1 != fscanf(f, "%llu", &ns)) ns = 0;
        fclose(f);
    }
    return 1e-9 * (double) ns;
}

/* Stay outside MPI for idle_ms; the progress thread's CPU time meanwhile
 * must stay under a tenth of it. */
static void idle_outside_mpi(long tid, const char *what)
{
    struct timespec ts = {idle_ms / 1000, (idle_ms % 1000) * 1000000L};
    double c0, c1;

    if (0 == tid) return;
    c0 = thread_cpu(tid);
    nanosleep(&ts, NULL);
    c1 = thread_cpu(tid);
    printf("rank %d, %s: progress thread ran %.2f ms in %ld ms outside MPI\n", me, what,
           1e3 * (c1 - c0), idle_ms);
    TU_CHECK(c1 - c0 < 1e-4 * (double) idle_ms,
             "rank %d, %s: the progress thread ran %.1f ms of %ld ms with nothing to do", me,
             what, 1e3 * (c1 - c0), idle_ms);
}

/* 1: lock_all, a put to every rank, unlock_all; every value checked. */
static void all_to_all(tu_win_t *w)
{
    uint64_t v = stamp(w->flavor, me, 0), *mine = w->base;

    TU_MPI(MPI_Win_lock_all(0, w->win));
    for (int k = 1; k <= np; k++) {
        int t = (me + k) % np;
        TU_MPI(MPI_Put(&v, 1, MPI_UINT64_T, t, tu_disp(w, t, me), 1, MPI_UINT64_T, w->win));
    }
    TU_MPI(MPI_Win_unlock_all(w->win));
    TU_MPI(MPI_Barrier(MPI_COMM_WORLD));
    TU_MPI(MPI_Win_lock(MPI_LOCK_SHARED, me, 0, w->win));
    TU_MPI(MPI_Win_sync(w->win));
    for (int o = 0; o < np; o++) {
        TU_CHECK(mine[o] == stamp(w->flavor, o, 0), "%s window: rank %d holds %llx from %d",
                 tu_flavor_names[w->flavor], me, (unsigned long long) mine[o], o);
    }
    TU_MPI(MPI_Win_unlock(me, w->win));
}

/* 2: epochs on rank 0 while it is outside MPI, then the others idle. */
static void on_idle_target(tu_win_t *w, long tid)
{
    uint64_t *mine = w->base;

    TU_MPI(MPI_Barrier(MPI_COMM_WORLD));
    if (0 == me) {
        idle_outside_mpi(tid, "serving");
    } else {
        for (int i = 1; i <= reps; i++) {
            uint64_t v = stamp(w->flavor, me, i);
            TU_MPI(MPI_Win_lock(MPI_LOCK_EXCLUSIVE, 0, 0, w->win));
            TU_MPI(MPI_Put(&v, 1, MPI_UINT64_T, 0, tu_disp(w, 0, me), 1, MPI_UINT64_T, w->win));
            TU_MPI(MPI_Win_unlock(0, w->win));
        }
    }
    TU_MPI(MPI_Barrier(MPI_COMM_WORLD));
    if (0 != me) idle_outside_mpi(tid, "idle");
    TU_MPI(MPI_Barrier(MPI_COMM_WORLD));
    if (0 != me) return;
    TU_MPI(MPI_Win_lock(MPI_LOCK_SHARED, 0, 0, w->win));
    TU_MPI(MPI_Win_sync(w->win));
    for (int o = 1; o < np; o++) {
        TU_CHECK(mine[o] == stamp(w->flavor, o, (int) reps),
                 "%s window: rank 0 holds %llx from %d after its epochs",
                 tu_flavor_names[w->flavor], (unsigned long long) mine[o], o);
    }
    TU_MPI(MPI_Win_unlock(0, w->win));
}

int main(int argc, char **argv)
{
    const char *osc = getenv("OMPI_MCA_osc"), *pt = getenv("OMPI_MCA_osc_ucxx_progress_thread");
    long tid;
    int rc;

    idle_ms = tu_opt_long(argc, argv, "-t", 300);
    reps = tu_opt_long(argc, argv, "-r", 10);
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &me);
    MPI_Comm_size(MPI_COMM_WORLD, &np);
    tid = progress_tid();
    /* (osc/ucxx with its thread asked for: the thread must be there) */
    TU_CHECK(0 != tid || NULL == osc || 0 != strcmp(osc, "ucxx") || NULL == pt ||
                 0 != strcmp(pt, "1"),
             "rank %d: no progress thread (osc_ucxx_prog) with osc_ucxx_progress_thread=1", me);
    for (int f = 0; f < TU_NFLAVORS; f++) {
        tu_win_t w;
        if (!tu_flavor_enabled(f)) continue;
        tu_win_create(f, 8 * (MPI_Aint) np, 8, MPI_INFO_NULL, MPI_COMM_WORLD, &w);
        memset(w.base, 0, 8 * (size_t) np);
        TU_MPI(MPI_Barrier(MPI_COMM_WORLD));
        all_to_all(&w);
        on_idle_target(&w, tid);
        tu_win_free(&w);
    }
    rc = tu_finish("progress_idle");
    MPI_Finalize();
    return rc;
}
