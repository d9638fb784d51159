/* um_realloc: memory that was a window's (MPI_Win_create, or attached to a
 * dynamic window and detached) is the application's again afterwards, as
 * with any other component: realloc() grows it in place or copies it, keeps
 * its data, and its grown part aliases neither a live neighbour buffer nor
 * the memory of a later window.
 *
 * Per mode (create, dynamic): p = malloc(1 MiB) (its own mapping: the mmap
 * threshold is fixed at 128 KiB), a window over it, a put from the previous
 * rank, the window freed (create) or p detached (dynamic); then a live
 * neighbour q, p = realloc(p, 4 MiB), a window over a fresh r, puts into r,
 * and writes to p's grown part and to r.  Checks: p's old bytes kept (the
 * put included), q and r untouched by writes to p, p untouched by writes to
 * r, and free(q) does not abort.  Fails on a component that leaves window
 * pages as MAP_SHARED file pages (mremap then grows p over file offsets a
 * later window gets).  Runs with 1 rank too.
 */
#include "testutil.h"
#include <malloc.h>

#define M (1 << 20)

static int me, nprocs;

/* A window over buf (create), or buf attached to dyn; every rank puts 64
 * bytes of its rank + 1 at offset 0 of the next rank's buf. */
static MPI_Win expose(int dynamic, MPI_Win dyn, char *buf)
{
    MPI_Win win = dyn;
    MPI_Aint addr, *all = malloc(nprocs * sizeof(MPI_Aint));
    char val[64];
    int next = (me + 1) % nprocs;

    if (dynamic) {
        TU_MPI(MPI_Win_attach(dyn, buf, M));
    } else {
        TU_MPI(MPI_Win_create(buf, M, 1, MPI_INFO_NULL, MPI_COMM_WORLD, &win));
    }
    MPI_Get_address(buf, &addr);
    MPI_Allgather(&addr, 1, MPI_AINT, all, 1, MPI_AINT, MPI_COMM_WORLD);
    memset(val, me + 1, sizeof(val));
    TU_MPI(MPI_Win_lock(MPI_LOCK_SHARED, next, 0, win));
    TU_MPI(MPI_Put(val, 64, MPI_BYTE, next, dynamic ? all[next] : 0, 64, MPI_BYTE, win));
    TU_MPI(MPI_Win_unlock(next, win));
    MPI_Barrier(MPI_COMM_WORLD);
    free(all);
    return win;
}

static void unexpose(int dynamic, MPI_Win *win, char *buf)
{
    MPI_Barrier(MPI_COMM_WORLD);
    if (dynamic) {
        TU_MPI(MPI_Win_detach(*win, buf));
    } else {
        TU_MPI(MPI_Win_free(win));
    }
}

static void run(int dynamic)
{
    const char *mode = dynamic ? "dynamic" : "create";
    unsigned char prev_val = (unsigned char) ((me + nprocs - 1) % nprocs + 1);
    MPI_Win dyn = MPI_WIN_NULL, win;
    char *p, *q, *r;

    if (dynamic) TU_MPI(MPI_Win_create_dynamic(MPI_INFO_NULL, MPI_COMM_WORLD, &dyn));
    p = malloc(M);
    memset(p, 0x11, M);
    win = expose(dynamic, dyn, p);
    unexpose(dynamic, &win, p);

    q = malloc(M);                       /* a live neighbour */
    memset(q, 0x22, M);
    p = realloc(p, 4 * M);
    TU_CHECK(NULL != p, "%s: realloc failed", mode);
    TU_CHECK(0 == tu_count_not(p, 64, prev_val), "%s: the put's bytes were lost",
             mode);
    TU_CHECK(0 == tu_count_not(p + 64, M - 64, 0x11),
             "%s: %ld old bytes changed by realloc", mode,
             tu_count_not(p + 64, M - 64, 0x11));
    memset(p + M, 0x33, 3 * M);
    TU_CHECK(0 == tu_count_not(q, M, 0x22),
             "%s: writing p's grown part changed %ld bytes of a live neighbour", mode,
             tu_count_not(q, M, 0x22));

    r = malloc(M);                       /* a later window's memory */
    memset(r, 0x44, M);
    win = expose(dynamic, dyn, r);
    memset(r + 64, 0x55, M - 64);
    TU_CHECK(0 == tu_count_not(p + M, 3 * M, 0x33),
             "%s: %ld bytes of p's grown part changed by a later window's memory", mode,
             tu_count_not(p + M, 3 * M, 0x33));
    memset(p + M, 0x66, 3 * M);
    TU_CHECK(0 == tu_count_not(r + 64, M - 64, 0x55),
             "%s: writing p's grown part changed %ld bytes of a later window", mode,
             tu_count_not(r + 64, M - 64, 0x55));
    TU_CHECK(0 == tu_count_not(r, 64, prev_val), "%s: put into r lost", mode);
    TU_CHECK(0 == tu_count_not(q, M, 0x22), "%s: neighbour changed", mode);
    unexpose(dynamic, &win, r);
    if (dynamic) TU_MPI(MPI_Win_free(&dyn));
    free(r);
    free(q);                             /* (aborts if its header was overwritten) */
    free(p);
}

int main(int argc, char **argv)
{
    mallopt(M_MMAP_THRESHOLD, 128 * 1024);  /* 1 MiB blocks: mappings of their own */
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &me);
    MPI_Comm_size(MPI_COMM_WORLD, &nprocs);
    tu_watchdog("um_realloc", 120);
    run(0);
    run(1);
    int rc = tu_finish("um_realloc");
    MPI_Finalize();
    return rc;
}
