/* ucx_start: the two ways UCX comes up (osc_ucxx_early_start).
 *
 * With --mca osc ucxx and osc_ucxx_early_start=1 (the default), MPI_Init
 * makes the UCP context and the main worker (its address goes into Open
 * MPI's modex), then an endpoint to the next rank on the node, from the
 * address the modex carried; the first window takes them over.  With
 * osc_ucxx_early_start=0 the first window makes everything.  Either way,
 * under MPI_THREAD_MULTIPLE:
 *   - the first window is created from a thread other than the one that
 *     called MPI_Init, and every rank puts a pattern into its right
 *     neighbour's window and gets its left neighbour's back: the values are
 *     checked;
 *   - a second window on the main thread does the same;
 *   - so do windows over MPI_COMM_WORLD in reverse order and over the ranks
 *     of the same parity, whose neighbours are not the one MPI_Init
 *     connected to (the endpoint made from the modex address and those made
 *     from the addresses windows exchange must reach the same processes).
 *   - then the first windows over memory the program brings (MPI_Win_create
 *     over malloc'ed memory, a dynamic window with an attachment): the first
 *     moves of user memory onto shared memory, which the early start
 *     prepared with a move of its own (osc_ucxx_share.c, share_warm), the
 *     same ring of puts and gets, checked.
 * --no-window: no window at all; MPI_Finalize must still return
 * MPI_SUCCESS (the unused worker and context are released there), checked
 * after an allreduce whose value is checked too.
 * Either way, after MPI_Finalize the process's pool directory
 * (/dev/shm/osc_ucxx.<jobid>.<vpid>, which the early start makes) must be
 * gone: the component removes it at finalize, and the PMIx server when the
 * process leaves (either alone keeps this check passing; with neither it
 * fails).
 */
#include "testutil.h"
#include <pthread.h>
#include <sys/stat.h>

#define N 1024

static int me, nprocs;

static void ring_window(const char *where, MPI_Comm comm)
{
    int rank, size, right, left;
    int *mem, src[N], got[N], bad = 0;
    MPI_Win win;

    MPI_Comm_rank(comm, &rank);
    MPI_Comm_size(comm, &size);
    right = (rank + 1) % size;
    left = (rank + size - 1) % size;
    for (int i = 0; i < N; ++i) src[i] = rank * 100000 + i;
    TU_MPI(MPI_Win_allocate(N * sizeof(int), sizeof(int), MPI_INFO_NULL, comm, &mem, &win));
    TU_MPI(MPI_Win_fence(0, win));
    TU_MPI(MPI_Put(src, N, MPI_INT, right, 0, N, MPI_INT, win));
    TU_MPI(MPI_Win_fence(0, win));
    for (int i = 0; i < N; ++i) bad += mem[i] != left * 100000 + i;
    TU_CHECK(0 == bad, "%s: %d values from the left neighbour's put wrong", where, bad);
    TU_MPI(MPI_Win_lock(MPI_LOCK_SHARED, left, 0, win));
    TU_MPI(MPI_Get(got, N, MPI_INT, left, 0, N, MPI_INT, win));
    TU_MPI(MPI_Win_unlock(left, win));
    bad = 0;
    for (int i = 0; i < N; ++i) bad += got[i] != ((left + size - 1) % size) * 100000 + i;
    TU_CHECK(0 == bad, "%s: %d values of the get wrong", where, bad);
    TU_MPI(MPI_Win_free(&win));
}

/* The ring over memory we bring: MPI_Win_create over malloc'ed memory, or
 * a dynamic window with it attached (displacements are addresses). */
static void user_ring(const char *where, int dynamic)
{
    int right = (me + 1) % nprocs, left = (me + nprocs - 1) % nprocs;
    int *mem = malloc(N * sizeof(int)), src[N], got[N], bad = 0;
    MPI_Aint at[3] = {0, 0, 0}, mine;
    MPI_Win win;

    for (int i = 0; i < N; ++i) {
        mem[i] = -1;
        src[i] = me * 100000 + i + 7;
    }
    if (dynamic) {
        TU_MPI(MPI_Win_create_dynamic(MPI_INFO_NULL, MPI_COMM_WORLD, &win));
        TU_MPI(MPI_Win_attach(win, mem, N * sizeof(int)));
        MPI_Get_address(mem, &mine);
    } else {
        TU_MPI(MPI_Win_create(mem, N * sizeof(int), sizeof(int), MPI_INFO_NULL, MPI_COMM_WORLD,
                              &win));
        mine = 0;
    }
    /* every rank's base: [0] right's, [1] left's */
    TU_MPI(MPI_Sendrecv(&mine, 1, MPI_AINT, left, 0, &at[0], 1, MPI_AINT, right, 0,
                        MPI_COMM_WORLD, MPI_STATUS_IGNORE));
    TU_MPI(MPI_Sendrecv(&mine, 1, MPI_AINT, right, 1, &at[1], 1, MPI_AINT, left, 1,
                        MPI_COMM_WORLD, MPI_STATUS_IGNORE));
    TU_MPI(MPI_Win_fence(0, win));
    TU_MPI(MPI_Put(src, N, MPI_INT, right, at[0], N, MPI_INT, win));
    TU_MPI(MPI_Win_fence(0, win));
    for (int i = 0; i < N; ++i) bad += mem[i] != left * 100000 + i + 7;
    TU_CHECK(0 == bad, "%s: %d values from the left neighbour's put wrong", where, bad);
    TU_MPI(MPI_Win_lock(MPI_LOCK_SHARED, left, 0, win));
    TU_MPI(MPI_Get(got, N, MPI_INT, left, at[1], N, MPI_INT, win));
    TU_MPI(MPI_Win_unlock(left, win));
    bad = 0;
    for (int i = 0; i < N; ++i) bad += got[i] != ((left + nprocs - 1) % nprocs) * 100000 + i + 7;
    TU_CHECK(0 == bad, "%s: %d values of the get wrong", where, bad);
    TU_MPI(MPI_Win_fence(0, win));
    if (dynamic) TU_MPI(MPI_Win_detach(win, mem));
    TU_MPI(MPI_Win_free(&win));
    free(mem);
}

/* After MPI_Finalize: is this process's pool directory gone?  (Named by
 * Open MPI's job id and rank, which mpirun passes in the environment.) */
static int pool_dir_left(void)
{
    const char *job = getenv("OMPI_MCA_ess_base_jobid"), *vpid = getenv("OMPI_MCA_ess_base_vpid");
    char path[128];
    struct stat st;

    if (NULL == job || NULL == vpid) return 0;
    snprintf(path, sizeof(path), "/dev/shm/osc_ucxx.%s.%s", job, vpid);
    if (0 != stat(path, &st)) return 0;
    fprintf(stderr, "[rank %d] %s is still there after MPI_Finalize\n", me, path);
    return 1;
}

static void *first_window(void *arg)
{
    (void) arg;
    ring_window("first window, from a second thread", MPI_COMM_WORLD);
    return NULL;
}

int main(int argc, char **argv)
{
    int provided, sum = 0, want, no_window = tu_opt_flag(argc, argv, "--no-window");
    pthread_t t;

    MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
    MPI_Comm_rank(MPI_COMM_WORLD, &me);
    MPI_Comm_size(MPI_COMM_WORLD, &nprocs);
    want = nprocs * (nprocs - 1) / 2;
    MPI_Allreduce(&me, &sum, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    TU_CHECK(sum == want, "allreduce: %d, not %d", sum, want);
    if (no_window) {
        int rc;
        if (0 == me) printf("ucx_start: ok (%d errors)\n", tu_errors);
        rc = MPI_Finalize();
        if (MPI_SUCCESS != rc) fprintf(stderr, "[rank %d] MPI_Finalize returned %d\n", me, rc);
        return (MPI_SUCCESS == rc && 0 == tu_errors && !pool_dir_left()) ? 0 : 1;
    }
    if (MPI_THREAD_MULTIPLE == provided) {
        pthread_create(&t, NULL, first_window, NULL);
        pthread_join(t, NULL);
    }
    ring_window("window on the main thread", MPI_COMM_WORLD);
    {
        MPI_Comm reverse, parity;
        TU_MPI(MPI_Comm_split(MPI_COMM_WORLD, 0, nprocs - me, &reverse));
        ring_window("window over MPI_COMM_WORLD in reverse order", reverse);
        TU_MPI(MPI_Comm_split(MPI_COMM_WORLD, me % 2, me, &parity));
        ring_window("window over the ranks of one parity", parity);
        MPI_Comm_free(&reverse);
        MPI_Comm_free(&parity);
    }
    user_ring("first MPI_Win_create over malloc'ed memory", 0);
    user_ring("first dynamic window with an attachment", 1);
    {
        int rc = tu_finish("ucx_start") | MPI_Finalize();
        return rc | pool_dir_left();
    }
}
