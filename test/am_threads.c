/* am_threads (T15): 4 threads per process issue AMs under
 * MPI_THREAD_MULTIPLE.  Per window flavor (create, allocate, dynamic,
 * shared), inside one lock_all of the main thread, thread t of rank r sends
 * ITER AMs (ux_gen_fn, 1..5 segments of 5 MPI_INT) to the other ranks in
 * turn, counter slot r*4+t at the target, completing them in rotation by
 * MPI_Win_flush (own target), MPIX_Ram + MPI_Wait, MPI_Win_flush_local_all,
 * or a batch of 4 AMs and one flush; outputs checked after each completion.
 * A fifth thread of every rank meanwhile attaches and detaches a private AM
 * buffer (its own; a 64 KiB buffer stays attached for --no-sysbuf).  The
 * targets' counters (plain read-modify-write: S11 keeps them exact) must
 * equal what every origin thread sent.  The default window and one with
 * am_ordering=none.  Flags: tu_am_args, --iters N (default 60; 16 under
 * UCX_TLS=tcp). */
#include "uamx_util.h"
#include <pthread.h>

#define NT 4
#define N 5
#define M 4
#define MAXSEG 5

static int rank, nprocs, iters, *pids;
static MPIX_Am_op op;
static tu_win_t W;
static int *sent;                /* [target][NT] segments sent by this rank's threads */
static volatile int stop_churn;

static void *worker(void *arg)
{
    int t = (int) (intptr_t) arg, bad = 0;
    int in[4 * MAXSEG * N], out[4 * MAXSEG * M];
    char what[64];
    snprintf(what, sizeof(what), "thread %d (%s)", t, ux_fname(W.flavor));
    for (int i = 0; i < iters; i++) {
        int target = (rank + 1 + (i + t) % (nprocs - 1)) % nprocs, mode = (i / 4 + t) % 4;
        int nam = 3 == mode ? 4 : 1, nsegs[4];
        MPI_Request req = MPI_REQUEST_NULL;
        int *ip = in, *op_ = out;
        for (int a = 0; a < nam; a++) {
            int nseg = 1 + (i + a + t) % MAXSEG, rc;
            nsegs[a] = nseg;
            for (int s = 0; s < nseg; s++) {
                ip[s * N] = rank * NT + t;
                for (int j = 1; j < N; j++) ip[s * N + j] = rank * 100000 + t * 10000 + i * 10 + a + j * 3 + s;
            }
            for (int k = 0; k < nseg * M; k++) op_[k] = -1;
            if (1 == mode)
                rc = MPIX_Ram(ip, N, MPI_INT, op_, M, MPI_INT, nseg, target, MPI_INT, ux_disp(&W, target, 0),
                              nprocs * NT, MPI_INT, MPI_INT, op, W.win, &req);
            else
                rc = MPIX_Am(ip, N, MPI_INT, op_, M, MPI_INT, nseg, target, MPI_INT, ux_disp(&W, target, 0),
                             nprocs * NT, MPI_INT, MPI_INT, op, W.win);
            UX_EXPECT(rc, MPI_SUCCESS, "%s: AM %d", what, i);
            if (MPI_SUCCESS == rc) __atomic_add_fetch(&sent[target * NT + t], nseg, __ATOMIC_RELAXED);
            ip += nseg * N; op_ += nseg * M;
        }
        switch (mode) {
        case 0: case 3: UX_EXPECT(MPI_Win_flush(target, W.win), MPI_SUCCESS, "%s: flush", what); break;
        case 1: UX_EXPECT(MPI_Wait(&req, MPI_STATUS_IGNORE), MPI_SUCCESS, "%s: MPI_Wait", what); break;
        case 2: UX_EXPECT(MPI_Win_flush_local_all(W.win), MPI_SUCCESS, "%s: flush_local_all", what); break;
        }
        ip = in; op_ = out;
        for (int a = 0; a < nam && bad < 5; a++) {
            bad += ux_gen_check(ip, op_, N, M, nsegs[a], pids[target], pids[rank], what);
            ip += nsegs[a] * N; op_ += nsegs[a] * M;
        }
    }
    return NULL;
}

static void *churn(void *arg)
{
    char *b = ux_buf(4096);
    int n = 0;
    (void) arg;
    while (!__atomic_load_n(&stop_churn, __ATOMIC_ACQUIRE)) {
        UX_EXPECT(MPIX_Am_win_buffer_attach(b, 1024 + 64 * (n % 48), W.win), MPI_SUCCESS, "churn: attach");
        UX_EXPECT(MPIX_Am_win_buffer_detach(b, W.win), MPI_SUCCESS, "churn: detach");
        n++;
        usleep(200);
    }
    free(b);
    return NULL;
}

static void run(int f, int unordered)
{
    pthread_t th[NT], ch;
    MPI_Info info = unordered ? tu_info_new("am_ordering", "none", NULL) : MPI_INFO_NULL;
    int *exp = malloc(sizeof(int) * nprocs * NT);
    void *keep = ux_buf(64 * 1024);
    char what[64];

    snprintf(what, sizeof(what), "%s%s", ux_fname(f), unordered ? ", am_ordering=none" : "");
    tu_where = what;
    ux_win_create(f, 4096, info, &W);
    if (MPI_INFO_NULL != info) MPI_Info_free(&info);
    TU_MPI(ux_register(op, 1, W.win));
    TU_MPI(MPIX_Am_win_buffer_attach(keep, 64 * 1024, W.win));
    memset(sent, 0, sizeof(int) * nprocs * NT);
    MPI_Barrier(MPI_COMM_WORLD);
    stop_churn = 0;
    TU_MPI(MPI_Win_lock_all(0, W.win));
    pthread_create(&ch, NULL, churn, NULL);
    for (int t = 0; t < NT; t++) pthread_create(&th[t], NULL, worker, (void *) (intptr_t) t);
    for (int t = 0; t < NT; t++) pthread_join(th[t], NULL);
    UX_EXPECT(MPI_Win_unlock_all(W.win), MPI_SUCCESS, "%s: unlock_all", what);
    __atomic_store_n(&stop_churn, 1, __ATOMIC_RELEASE);
    pthread_join(ch, NULL);
    MPI_Alltoall(sent, NT, MPI_INT, exp, NT, MPI_INT, MPI_COMM_WORLD);
    ux_lock_self(&W);
    for (int o = 0; o < nprocs; o++)
        for (int t = 0; t < NT; t++)
            TU_CHECK(((int *) W.base)[o * NT + t] == exp[o * NT + t],
                     "%s: origin %d thread %d: %d segments counted, %d sent", what, o, t,
                     ((int *) W.base)[o * NT + t], exp[o * NT + t]);
    ux_unlock_self(&W);
    MPI_Barrier(MPI_COMM_WORLD);
    TU_MPI(MPIX_Am_win_op_deregister(op, W.win));
    ux_win_free(&W);
    free(keep); free(exp);
}

int main(int argc, char **argv)
{
    int provided, pid;
    tu_am_args(argc, argv);
    iters = (int) tu_opt_long(argc, argv, "--iters", tu_slow_transport() ? 16 : 60);
    MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &nprocs);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    if (provided < MPI_THREAD_MULTIPLE) {
        if (0 == rank) fprintf(stderr, "am_threads: MPI_THREAD_MULTIPLE not provided (%d)\n", provided);
        MPI_Finalize();
        return 1;
    }
    if (nprocs < 2) {
        if (0 == rank) fprintf(stderr, "am_threads: needs 2 ranks or more\n");
        MPI_Finalize();
        return 1;
    }
    tu_watchdog("am_threads", (unsigned) tu_opt_long(argc, argv, "--timeout", 60));
    pids = malloc(nprocs * sizeof(int));
    pid = (int) getpid();
    MPI_Allgather(&pid, 1, MPI_INT, pids, 1, MPI_INT, MPI_COMM_WORLD);
    sent = calloc(nprocs * NT, sizeof(int));
    TU_MPI(MPIX_Am_op_create(ux_gen_fn, NULL, &op));
    for (int f = 0; f < UX_NFLAVORS; f++) {
        if (!ux_flavor_enabled(f)) continue;
        run(f, 0);
        run(f, 1);
    }
    TU_MPI(MPIX_Am_op_free(&op));
    free(pids); free(sent);
    int rc = tu_finish("am_threads");
    MPI_Finalize();
    return rc;
}
