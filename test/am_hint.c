/* am_hint (T9): am_user_buf_<rank> hints (S24).  Rank 0 is the target, every
 * other rank an origin that creates the window with am_user_buf_0 = B_r;
 * the target attaches before any AM arrives (barrier).  Handler: ux_gen_fn
 * (8 MPI_INT in, 4 out per segment: seg_need 128 B), one counter per origin.
 * Per window flavor (create, allocate, dynamic, shared):
 * A. one buffer: B_r = 128 * (1 + r % 2); the target attaches the sum in one
 *    buffer; every origin issues 50 AMs of 1..6 segments (more than its
 *    portion: streaming through it) under a shared lock: outputs exact,
 *    counters exact.
 * B. several buffers: B_r = 256 for all, one buffer of 256 B per origin.
 * C. too little: B_r = 256, buffers of 256 B except the last, 255 B.  Each
 *    origin issues one 2-segment AM: exactly one origin gets MPI_ERR_BUFFER
 *    at the unlock, the others succeed with exact outputs (origins whose AM
 *    was computed at the origin itself, S26, do not take a portion; with
 *    --no-origin-compute every AM must run at the target).
 * Flags: tu_am_args (--no-sysbuf, --no-origin-compute matter here). */
#include "uamx_util.h"

#define N 8
#define M 4
#define NAM 50
#define MAXSEG 6
#define WINB 1024

static int rank, nprocs, strict;
static int *pids;
static MPIX_Am_op op;

static void fill(int *in, int am, int nseg)
{
    for (int s = 0; s < nseg; s++) {
        in[s * N] = rank;   /* counter slot */
        for (int j = 1; j < N; j++) in[s * N + j] = rank * 100000 + am * 100 + s * 10 + j;
    }
}

/* creation with this origin's hint; target counters zeroed */
static void setup(int f, tu_win_t *w, MPI_Aint hint)
{
    MPI_Info info = MPI_INFO_NULL;
    char v[32];
    if (0 != rank) {
        snprintf(v, sizeof(v), "%ld", (long) hint);
        info = tu_info_new("am_user_buf_0", v, NULL);
    }
    ux_win_create(f, WINB, info, w);
    if (MPI_INFO_NULL != info) MPI_Info_free(&info);
    TU_MPI(ux_register(op, 11, w->win));
}

static void check_counters(tu_win_t *w, int mine, const char *what)
{
    int *exp = calloc(nprocs, sizeof(int));
    MPI_Gather(&mine, 1, MPI_INT, exp, 1, MPI_INT, 0, MPI_COMM_WORLD);
    if (0 == rank) {
        ux_lock_self(w);
        const int *p = w->base;
        for (int o = 1; o < nprocs; o++)
            TU_CHECK(p[o] == exp[o], "%s: origin %d: %d segments executed, expected %d", what, o, p[o],
                     exp[o]);
        ux_unlock_self(w);
    }
    free(exp);
    MPI_Barrier(MPI_COMM_WORLD);
}

static void run_case(int f, char kase)
{
    MPI_Aint need = ux_seg_need(N, MPI_INT, M, MPI_INT), hint;
    MPI_Aint *hints = malloc(nprocs * sizeof(MPI_Aint)), sum = 0;
    void **bufs = calloc(nprocs, sizeof(void *));
    int nbufs = 0, done = 0;
    tu_win_t w;
    char what[64];
    double t0 = MPI_Wtime();

    snprintf(what, sizeof(what), "%c (%s)", kase, ux_fname(f));
    tu_where = what;
    if (0 == rank && 128 != need) TU_CHECK(128 == need, "seg_need %ld, expected 128", (long) need);
    hint = 'A' == kase ? need * (1 + rank % 2) : 2 * need;
    MPI_Allgather(&hint, 1, MPI_AINT, hints, 1, MPI_AINT, MPI_COMM_WORLD);
    for (int o = 1; o < nprocs; o++) sum += hints[o];
    setup(f, &w, hint);
    if (0 == rank) {
        if ('A' == kase) {
            bufs[nbufs] = ux_buf(sum);
            UX_EXPECT(MPIX_Am_win_buffer_attach(bufs[nbufs++], sum, w.win), MPI_SUCCESS, "%s: attach", what);
        } else {
            for (int o = 1; o < nprocs; o++) {
                MPI_Aint b = hints[o] - ('C' == kase && o == nprocs - 1);
                bufs[nbufs] = ux_buf(b);
                UX_EXPECT(MPIX_Am_win_buffer_attach(bufs[nbufs++], b, w.win), MPI_SUCCESS,
                          "%s: attach %ld B", what, (long) b);
            }
        }
    }
    MPI_Barrier(MPI_COMM_WORLD);
    if ('C' != kase) {
        if (0 != rank) {
            int *in = malloc(sizeof(int) * N * MAXSEG * NAM), *out = malloc(sizeof(int) * M * MAXSEG * NAM);
            int *ip = in, *op_ = out;
            TU_MPI(MPI_Win_lock(MPI_LOCK_SHARED, 0, 0, w.win));
            for (int am = 0; am < NAM; am++) {
                int nseg = 1 + am % MAXSEG;
                fill(ip, am, nseg);
                UX_EXPECT(MPIX_Am(ip, N, MPI_INT, op_, M, MPI_INT, nseg, 0, MPI_INT, ux_disp(&w, 0, 0),
                                  nprocs, MPI_INT, MPI_INT, op, w.win), MPI_SUCCESS, "%s: MPIX_Am", what);
                ip += N * nseg; op_ += M * nseg; done += nseg;
            }
            UX_EXPECT(MPI_Win_unlock(0, w.win), MPI_SUCCESS, "%s: unlock after %d AMs", what, NAM);
            ip = in; op_ = out;
            for (int am = 0; am < NAM; am++) {
                int nseg = 1 + am % MAXSEG;
                ux_gen_check(ip, op_, N, M, nseg, pids[0], strict ? pids[0] : pids[rank], what);
                ip += N * nseg; op_ += M * nseg;
            }
            free(in); free(out);
        }
    } else {
        /* result per origin: 0 success at the target, 1 success at the origin, 2 MPI_ERR_BUFFER, 3 other */
        int res = -1, *all = malloc(nprocs * sizeof(int));
        if (0 != rank) {
            int in[2 * N], out[2 * M], rc;
            fill(in, 0, 2);
            memset(out, 0, sizeof(out));
            TU_MPI(MPI_Win_lock(MPI_LOCK_SHARED, 0, 0, w.win));
            UX_EXPECT(MPIX_Am(in, N, MPI_INT, out, M, MPI_INT, 2, 0, MPI_INT, ux_disp(&w, 0, 0), nprocs,
                              MPI_INT, MPI_INT, op, w.win), MPI_SUCCESS, "%s: MPIX_Am", what);
            rc = tu_err_class(MPI_Win_unlock(0, w.win));
            if (MPI_SUCCESS == rc) {
                int at_origin = out[2] == pids[rank] && out[2] != pids[0];
                ux_gen_check(in, out, N, M, 2, pids[0], strict ? pids[0] : pids[rank], what);
                res = at_origin ? 1 : 0;
                done += 2;
            } else {
                res = MPI_ERR_BUFFER == rc ? 2 : 3;
                TU_CHECK(MPI_ERR_BUFFER == rc, "%s: unlock returned %s, expected MPI_SUCCESS or "
                         "MPI_ERR_BUFFER", what, ux_cls(rc));
            }
        }
        MPI_Gather(&res, 1, MPI_INT, all, 1, MPI_INT, 0, MPI_COMM_WORLD);
        if (0 == rank) {
            int n[4] = { 0, 0, 0, 0 };
            for (int o = 1; o < nprocs; o++) n[all[o]]++;
            printf("%s: %d at the target, %d computed at the origin, %d MPI_ERR_BUFFER\n", what, n[0], n[1],
                   n[2]);
            TU_CHECK(n[0] <= nprocs - 2, "%s: %d origins got a portion, only %d fit", what, n[0], nprocs - 2);
            if (0 == n[1])
                TU_CHECK(1 == n[2], "%s: %d origins got MPI_ERR_BUFFER, expected exactly 1", what, n[2]);
        }
        free(all);
    }
    check_counters(&w, done, what);
    TU_MPI(MPIX_Am_win_op_deregister(op, w.win));
    ux_win_free(&w);   /* buffers still attached: freeing the window detaches them */
    for (int i = 0; i < nbufs; i++) free(bufs[i]);
    free(bufs); free(hints);
    if (MPI_Wtime() - t0 > 2.0)   /* printed, not gated */
        printf("%s: rank %d: slow: %.1f s\n", what, rank, MPI_Wtime() - t0);
}

int main(int argc, char **argv)
{
    int pid;
    tu_am_start(&argc, &argv, "am_hint", 60, &rank, &nprocs);
    strict = !ux_origin_compute_on();
    pids = malloc(nprocs * sizeof(int));
    pid = (int) getpid();
    MPI_Allgather(&pid, 1, MPI_INT, pids, 1, MPI_INT, MPI_COMM_WORLD);
    TU_MPI(MPIX_Am_op_create(ux_gen_fn, NULL, &op));
    for (int f = 0; f < UX_NFLAVORS; f++) {
        if (!ux_flavor_enabled(f)) continue;
        run_case(f, 'A');
        run_case(f, 'B');
        run_case(f, 'C');
    }
    TU_MPI(MPIX_Am_op_free(&op));
    free(pids);
    int rc = tu_finish("am_hint");
    MPI_Finalize();
    return rc;
}
