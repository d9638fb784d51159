/* am_tinybuf (T8): active messages through a user buffer of exactly one
 * segment, osc_ucxx_am_sysbuf=0 always (the program sets it; S20-S23).
 * Rank 0 is the target, every other rank an origin.  Per window flavor
 * (create, allocate, dynamic, shared):
 * A. The target attaches exactly seg_need bytes (S7: input 20 MPI_INT ->
 *    a64(80)=128, output 6 MPI_INT -> a64(24)=64: 192 B).  Every origin
 *    issues 200 AMs of 1..4 segments under a shared lock, unlock: every
 *    output segment exact (segment index, input sum, a persistent value,
 *    invocations of exactly 1 segment with --no-origin-compute); the target's
 *    per-origin segment counters (plain read-modify-write in the persistent
 *    region) equal the segments sent: FIFO streaming, exactly once.
 * B. One byte less (191 B): a one-segment AM fails with MPI_ERR_BUFFER at the
 *    flush, another at the unlock, nothing hangs, the AM is not executed
 *    (unless the origin computed it itself, S21/S26: then its output must be
 *    right and the executing pid the origin's); then the target attaches 192 B
 *    again and a correct AM works on the same window.
 * C. Fig. 7.2 (with ==): am_buf_interleave_am_detach=true, origin 1 holds an
 *    exclusive lock on 0: AM, flush, (message) target detaches its buffer and
 *    attaches another, (message) AM, flush, unlock: values right, no hang.
 *    Under =false: AM, flush, AM, unlock, then the detach.
 * Flags: tu_am_args (--no-origin-compute strictly requires MPI_ERR_BUFFER in
 * B and target execution everywhere); --skip-errors leaves B out (diagnosis
 * only); --timeout S (watchdog, default 60). */
#include "uamx_util.h"

#define TN 20           /* input MPI_INT per segment */
#define TM 6            /* output MPI_INT per segment */
#define TP 64           /* read-only persistent ints; then per-origin counters */
#define NAM 200
#define MAXSEG 4
#define WINB 4096
#define TAG 811

static int rank, nprocs, strict, skip_b;
static int one_seg_pool;   /* the target's pool is exactly one segment (parts A and B) */
static int *pids;
static MPIX_Am_op op;

static int tiny_fn(const void *in, int N, MPI_Datatype dti, void *pers, int pc, MPI_Datatype dtp,
                   void *out, int M, MPI_Datatype dto, int nseg, int off, void *extra)
{
    const int *a = in;
    int *p = pers, *o = out;
    (void) dti; (void) pc; (void) dtp; (void) dto; (void) extra;
    if (TN != N || TM != M) return MPI_ERR_ARG;
    for (int k = 0; k < nseg; k++) {
        const int *q = a + k * N;
        int *r = o + k * M, sum = 0;
        for (int i = 0; i < N; i++) sum += q[i];
        r[0] = off + k;
        r[1] = sum;
        r[2] = p[q[0] & (TP - 1)];
        r[3] = (int) getpid();
        r[4] = nseg;
        r[5] = 0x5a5a;
        p[TP + q[1]]++;
    }
    return MPI_SUCCESS;
}

static int inval(int o, int am, int s, int j)
{
    if (0 == j) return (o * 7 + am * 3 + s) & (TP - 1);
    if (1 == j) return o;
    return (o + 1) * 1000003 + am * 1009 + s * 31 + j;
}
static int persval(int idx) { return 1000 + idx * 13; }

static void fill_in(int *in, int o, int am, int nseg)
{
    for (int s = 0; s < nseg; s++)
        for (int j = 0; j < TN; j++) in[s * TN + j] = inval(o, am, s, j);
}

/* Output of one AM; returns 1 if every segment was computed by the origin. */
static int check_out(const int *out, int o, int am, int nseg, const char *what)
{
    /* with the target executing out of a one-segment pool, every invocation is one segment (S6) */
    int maxunit = strict && one_seg_pool ? 1 : nseg;
    int at_origin = 1, reported = 0;
    for (int s = 0; s < nseg; s++) {
        const int *r = out + s * TM;
        int sum = 0;
        for (int j = 0; j < TN; j++) sum += inval(o, am, s, j);
        int ok = r[0] == s && r[1] == sum && r[2] == persval(inval(o, am, s, 0)) &&
                 r[4] >= 1 && r[4] <= maxunit && r[5] == 0x5a5a &&
                 (r[3] == pids[0] || r[3] == pids[rank]);
        if (r[3] != pids[rank] || r[3] == pids[0]) at_origin = 0;
        if (strict && r[3] != pids[0]) ok = 0;
        if (!ok && reported++ < 3)
            TU_CHECK(ok, "%s: AM %d segment %d/%d: out {%d,%d,%d,pid %d,nseg %d,%#x}, expected "
                     "{%d,%d,%d,pid %d%s,<=%d,0x5a5a}", what, am, s, nseg, r[0], r[1], r[2], r[3],
                     r[4], r[5], s, sum, persval(inval(o, am, s, 0)), pids[0],
                     strict ? "" : " or the origin's", maxunit);
    }
    return at_origin;
}

static void am_issue(tu_win_t *w, const int *in, int *out, int nseg)
{
    MPI_Aint pdisp = ux_disp(w, 0, 0);
    int rc = MPIX_Am(in, TN, MPI_INT, out, TM, MPI_INT, nseg, 0, MPI_INT, pdisp, TP + nprocs,
                     MPI_INT, MPI_INT, op, w->win);
    UX_EXPECT(rc, MPI_SUCCESS, "MPIX_Am (%d segments)", nseg);
}

static void setup(int f, tu_win_t *w, MPI_Info info)
{
    ux_win_create(f, WINB, info, w);
    TU_MPI(ux_register(op, 3, w->win));
    if (0 == rank) {
        ux_lock_self(w);
        int *p = w->base;
        for (int i = 0; i < TP; i++) p[i] = persval(i);
        for (int i = 0; i < nprocs; i++) p[TP + i] = 0;
        ux_unlock_self(w);
    }
    MPI_Barrier(MPI_COMM_WORLD);
}

/* target: counters must equal expected[] (gathered from the origins) */
static void check_counters(tu_win_t *w, int mine, const char *what)
{
    int *exp = calloc(nprocs, sizeof(int));
    MPI_Gather(&mine, 1, MPI_INT, exp, 1, MPI_INT, 0, MPI_COMM_WORLD);
    if (0 == rank) {
        ux_lock_self(w);
        const int *p = w->base;
        for (int o = 1; o < nprocs; o++)
            TU_CHECK(p[TP + o] == exp[o], "%s (%s): origin %d: %d segments executed, expected %d",
                     what, ux_fname(w->flavor), o, p[TP + o], exp[o]);
        for (int i = 0; i < TP; i++)
            TU_CHECK(p[i] == persval(i), "%s: read-only persistent int %d changed", what, i);
        ux_unlock_self(w);
    }
    free(exp);
    MPI_Barrier(MPI_COMM_WORLD);
}

static void part_ab(int f)
{
    tu_win_t w;
    MPI_Aint need = ux_seg_need(TN, MPI_INT, TM, MPI_INT);
    void *buf = NULL, *small = NULL;
    int *in = malloc(sizeof(int) * TN * MAXSEG * NAM), *out = malloc(sizeof(int) * TM * MAXSEG * NAM);
    int done = 0;
    char what[64];

    if (0 == rank && 192 != need) TU_CHECK(192 == need, "seg_need %ld, expected 192", (long) need);
    one_seg_pool = 1;
    setup(f, &w, MPI_INFO_NULL);
    snprintf(what, sizeof(what), "A (%s)", ux_fname(f));
    tu_where = what;
    if (0 == rank) {
        buf = ux_buf(need);
        UX_EXPECT(MPIX_Am_win_buffer_attach(buf, need, w.win), MPI_SUCCESS, "attach %ld B", (long) need);
    }
    MPI_Barrier(MPI_COMM_WORLD);
    if (0 != rank) {
        int *ip = in, *op_ = out;
        TU_MPI(MPI_Win_lock(MPI_LOCK_SHARED, 0, 0, w.win));
        for (int am = 0; am < NAM; am++) {
            int nseg = 1 + am % MAXSEG;
            fill_in(ip, rank, am, nseg);
            for (int i = 0; i < TM * nseg; i++) op_[i] = -7;
            am_issue(&w, ip, op_, nseg);
            ip += TN * nseg; op_ += TM * nseg;
            done += nseg;
        }
        UX_EXPECT(MPI_Win_unlock(0, w.win), MPI_SUCCESS, "%s: unlock after %d AMs", what, NAM);
        op_ = out;
        for (int am = 0; am < NAM; am++) {
            int nseg = 1 + am % MAXSEG;
            check_out(op_, rank, am, nseg, what);
            op_ += TM * nseg;
        }
    }
    check_counters(&w, done, what);
    if (skip_b) goto out;

    /* B: one byte less */
    snprintf(what, sizeof(what), "B (%s)", ux_fname(f));
    tu_where = what;
    if (0 == rank) {
        tu_where = "B: target detaching the exact buffer";
        small = ux_buf(need - 1);
        UX_EXPECT(MPIX_Am_win_buffer_detach(buf, w.win), MPI_SUCCESS, "detach");
        UX_EXPECT(MPIX_Am_win_buffer_attach(small, need - 1, w.win), MPI_SUCCESS, "attach %ld B",
                  (long) need - 1);
    }
    MPI_Barrier(MPI_COMM_WORLD);
    if (0 != rank) {
        for (int k = 0; k < 2; k++) {   /* k = 0: error at the flush; 1: at the unlock */
            int am = 1000 + k, rc;
            fill_in(in, rank, am, 1);
            for (int i = 0; i < TM; i++) out[i] = -7;
            TU_MPI(MPI_Win_lock(MPI_LOCK_SHARED, 0, 0, w.win));
            am_issue(&w, in, out, 1);
            tu_where = k ? "B: unlock of the AM that does not fit" : "B: flush of the AM that does not fit";
            rc = k ? MPI_Win_unlock(0, w.win) : MPI_Win_flush(0, w.win);
            tu_where = what;
            if (MPI_SUCCESS == rc && !strict && out[3] == pids[rank] && out[3] != pids[0]) {
                check_out(out, rank, am, 1, what);   /* computed at the origin: allowed */
                done += 1;
            } else {
                UX_EXPECT(rc, MPI_ERR_BUFFER, "%s: one-segment AM, %ld B attached, at the %s", what,
                          (long) need - 1, k ? "unlock" : "flush");
            }
            if (0 == k) {
                /* the window still works inside this epoch: an empty AM and a flush */
                UX_EXPECT(MPIX_Am(in, TN, MPI_INT, out, TM, MPI_INT, 0, 0, MPI_INT, ux_disp(&w, 0, 0),
                                  TP + nprocs, MPI_INT, MPI_INT, op, w.win), MPI_SUCCESS,
                          "%s: empty AM after the error", what);
                UX_EXPECT(MPI_Win_unlock(0, w.win), MPI_SUCCESS, "%s: unlock after the reported error", what);
            }
        }
    }
    tu_where = "B: barrier after the failing AMs";
    MPI_Barrier(MPI_COMM_WORLD);
    tu_where = "B: target swapping the buffers back";
    if (0 == rank) {
        UX_EXPECT(MPIX_Am_win_buffer_detach(small, w.win), MPI_SUCCESS, "detach of the small buffer");
        UX_EXPECT(MPIX_Am_win_buffer_attach(buf, need, w.win), MPI_SUCCESS, "re-attach");
    }
    MPI_Barrier(MPI_COMM_WORLD);
    tu_where = "B: correct AM after the errors";
    if (0 != rank) {
        int am = 2000;
        fill_in(in, rank, am, 3);
        TU_MPI(MPI_Win_lock(MPI_LOCK_SHARED, 0, 0, w.win));
        am_issue(&w, in, out, 3);
        UX_EXPECT(MPI_Win_unlock(0, w.win), MPI_SUCCESS, "%s: correct AM after the errors", what);
        check_out(out, rank, am, 3, what);
        done += 3;
    }
    check_counters(&w, done, what);
out:
    /* free with the buffer still attached (MPI_Win_free detaches it) */
    TU_MPI(MPIX_Am_win_op_deregister(op, w.win));
    ux_win_free(&w);
    free(buf); free(small); free(in); free(out);
}

/* Fig. 7.2 */
static void part_c(int f, int interleave)
{
    tu_win_t w;
    MPI_Info info = tu_info_new("am_buf_interleave_am_detach", interleave ? "true" : "false", NULL);
    MPI_Aint need = ux_seg_need(TN, MPI_INT, TM, MPI_INT);
    void *b1 = NULL, *b2 = NULL;
    int in[TN * 5], out[TM * 5], done = 0, msg = 0;
    char what[64];

    snprintf(what, sizeof(what), "C (%s, interleave %s)", ux_fname(f), interleave ? "true" : "false");
    one_seg_pool = 0;
    tu_where = what;
    setup(f, &w, info);
    MPI_Info_free(&info);
    if (0 == rank) {
        b1 = ux_buf(need);
        b2 = ux_buf(2 * need);
        UX_EXPECT(MPIX_Am_win_buffer_attach(b1, need, w.win), MPI_SUCCESS, "%s: attach", what);
    }
    MPI_Barrier(MPI_COMM_WORLD);
    if (1 == rank) {
        TU_MPI(MPI_Win_lock(MPI_LOCK_EXCLUSIVE, 0, 0, w.win));
        fill_in(in, rank, 3000, 5);
        am_issue(&w, in, out, 5);
        UX_EXPECT(MPI_Win_flush(0, w.win), MPI_SUCCESS, "%s: first flush", what);
        check_out(out, rank, 3000, 5, what);
        done += 5;
        if (interleave) {
            TU_MPI(MPI_Send(&msg, 1, MPI_INT, 0, TAG, MPI_COMM_WORLD));
            TU_MPI(MPI_Recv(&msg, 1, MPI_INT, 0, TAG, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
        }
        fill_in(in, rank, 3001, 5);
        am_issue(&w, in, out, 5);
        UX_EXPECT(MPI_Win_flush(0, w.win), MPI_SUCCESS, "%s: second flush", what);
        check_out(out, rank, 3001, 5, what);
        done += 5;
        UX_EXPECT(MPI_Win_unlock(0, w.win), MPI_SUCCESS, "%s: unlock", what);
    } else if (0 == rank && interleave) {
        TU_MPI(MPI_Recv(&msg, 1, MPI_INT, 1, TAG, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
        UX_EXPECT(MPIX_Am_win_buffer_detach(b1, w.win), MPI_SUCCESS, "%s: detach between flushes", what);
        UX_EXPECT(MPIX_Am_win_buffer_attach(b2, 2 * need, w.win), MPI_SUCCESS, "%s: attach between flushes",
                  what);
        TU_MPI(MPI_Send(&msg, 1, MPI_INT, 1, TAG, MPI_COMM_WORLD));
    }
    MPI_Barrier(MPI_COMM_WORLD);
    if (0 == rank) {
        UX_EXPECT(MPIX_Am_win_buffer_detach(interleave ? b2 : b1, w.win), MPI_SUCCESS,
                  "%s: detach after the epoch", what);
    }
    check_counters(&w, done, what);
    TU_MPI(MPIX_Am_win_op_deregister(op, w.win));
    ux_win_free(&w);
    free(b1); free(b2);
}

int main(int argc, char **argv)
{
    int pid;
    setenv("OMPI_MCA_osc_ucxx_am_sysbuf", "0", 1);
    tu_am_start(&argc, &argv, "am_tinybuf", 60, &rank, &nprocs);
    strict = !ux_origin_compute_on();
    skip_b = tu_opt_flag(argc, argv, "--skip-errors");
    pids = malloc(nprocs * sizeof(int));
    pid = (int) getpid();
    MPI_Allgather(&pid, 1, MPI_INT, pids, 1, MPI_INT, MPI_COMM_WORLD);
    TU_MPI(MPIX_Am_op_create(tiny_fn, NULL, &op));
    for (int f = 0; f < UX_NFLAVORS; f++) {
        if (!ux_flavor_enabled(f)) continue;
        part_ab(f);
        part_c(f, 1);
        part_c(f, 0);
    }
    TU_MPI(MPIX_Am_op_free(&op));
    free(pids);
    int rc = tu_finish("am_tinybuf");
    MPI_Finalize();
    return rc;
}
