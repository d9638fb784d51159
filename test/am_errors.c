/* am_errors (T12): the error classes of the active-message API (S29, S30).
 * Windows and MPI_COMM_WORLD use MPI_ERRORS_RETURN; every return code is
 * compared by MPI_Error_class.  Every rank is the origin of next = rank+1.
 * After each error a correct AM (ux_gen_fn, counter slot = origin rank) is
 * issued and checked, so the window must still be usable; the target finally
 * checks its counters (exactly the correct AMs' segments ran).
 * S29, at the call:
 *   MPI_ERR_WIN    MPI_WIN_NULL (AM, register, attach, epoch_assert); a
 *                  memory-handle window (AM, register, attach)
 *   MPI_ERR_OP     AM with MPIX_AM_OP_NULL, a freed op, an unregistered op,
 *                  an AM op to MPIX_Amv, an AMV op to MPIX_Am/MPIX_Ram;
 *                  deregister of an unregistered / NULL op; op_free twice
 *   MPI_ERR_ARG    op_create with a NULL fn / NULL op pointer; op_free(NULL);
 *                  register: index -1, MPIX_AM_MAX_INDEX, index already used,
 *                  op already registered, index differing across ranks, kind
 *                  differing across ranks (every rank gets it), NULL op;
 *                  MPIX_Amv counts NULL with segments; MPIX_Ram request NULL
 *   MPI_ERR_COUNT  negative input/output/persistent count, num_segments
 *   MPI_ERR_RANK   target nprocs, -3
 *   MPI_ERR_TYPE   MPI_DATATYPE_NULL in each of the five positions, an
 *                  uncommitted type, no integer N (3 MPI_CHAR vs MPI_INT), no
 *                  integer M, MPI_INT vs MPI_FLOAT, AMV size rule
 *   MPI_ERR_RMA_RANGE  persistent region past the end / before the start of
 *                  a create/allocate window
 *   MPI_ERR_RMA_SYNC   AM (also 0 segments) outside any epoch, to a target
 *                  not locked, after fence(NOSUCCEED), to a rank outside the
 *                  PSCW access group; epoch_assert outside an epoch;
 *                  deregister with own AMs incomplete (message path only)
 *   MPI_ERR_ASSERT unknown assert bit (CONCURRENT_AM itself is accepted)
 *   attach: size -1 MPI_ERR_SIZE; NULL with size MPI_ERR_BUFFER; overlap
 *                  with an attached buffer / the window memory MPI_ERR_ARG;
 *                  detach of a non-base / unknown / detached MPI_ERR_ARG
 *   MPI_ERR_OTHER  MPIX_Am, MPIX_Am_op_create, MPIX_Am_win_buffer_attach and
 *                  MPI_Win_flush_all called inside a handler (the handler
 *                  returns the classes in its output)
 * S30, at the completion: a handler returning MPI_ERR_ARG in segment 1 of the
 * middle one of three AMs (at the flush; at the unlock; at MPI_Wait of an
 * MPIX_Ram) while the first and third AM's outputs are right; a handler
 * returning 123456789 -> MPI_ERR_OTHER; a 12 KB segment with no user buffer
 * and the default 8 KB internal buffer -> MPI_ERR_BUFFER (unless computed at
 * the origin; every window keeps a 4 KB user buffer attached for the
 * correct AMs, as --no-sysbuf needs); an AM on a dynamic window at an
 * address the target never attached -> MPI_ERR_RMA_RANGE.
 * MPI_PROC_NULL (MPIX_Am, MPIX_Amv, MPIX_Ram) and num_segments 0: MPI_SUCCESS,
 * outputs and counters untouched.
 * Flags: tu_am_args; --timeout S (watchdog, default 60);
 * --skip-flush-in-handler, --skip-buffer-error (diagnosis only: leave out
 * MPI_Win_flush_all in the handler that calls MPI, and the MPI_ERR_BUFFER
 * case). */
#include "uamx_util.h"

#define N 4
#define M 4
#define PC 16          /* persistent ints (counters) */
#define WINB 1024
#define BIGN 3000      /* ints per segment of the MPI_ERR_BUFFER case (12 KB) */
#define KEEPB 4096     /* user buffer every window keeps attached (< one BIGN segment) */

static int rank, nprocs, next, strict;
static int *pids;
static MPIX_Am_op op_ok, op_err, op_inh, op_amv;
static int ok_count;   /* segments of correct AMs this rank sent to next (on the current window) */
static MPI_Win g_win = MPI_WIN_NULL;   /* for the handler that calls MPI */
static int skip_flush_in_handler;      /* --skip-flush-in-handler (diagnosis only) */
static int skip_buffer_error;          /* --skip-buffer-error (diagnosis only) */

/* as ux_gen_fn, but a segment whose q[1] is -777 returns MPI_ERR_ARG and -888 returns 123456789 */
static int err_fn(const void *in, int n, MPI_Datatype dti, void *pers, int pc, MPI_Datatype dtp, void *out,
                  int m, MPI_Datatype dto, int nseg, int off, void *extra)
{
    for (int k = 0; k < nseg; k++) {
        const int *q = (const int *) in + k * n;
        int rc;
        if (-777 == q[1]) return MPI_ERR_ARG;
        if (-888 == q[1]) return 123456789;
        rc = ux_gen_fn(q, n, dti, pers, pc, dtp, (int *) out + k * m, m, dto, 1, off + k, extra);
        if (rc) return rc;
    }
    return MPI_SUCCESS;
}

/* calls MPI from inside: output = the classes they returned */
static int inh_fn(const void *in, int n, MPI_Datatype dti, void *pers, int pc, MPI_Datatype dtp, void *out,
                  int m, MPI_Datatype dto, int nseg, int off, void *extra)
{
    int *o = out, x[N] = { 0, 0, 0, 0 }, y[M];
    MPIX_Am_op tmp = MPIX_AM_OP_NULL;
    char b[64];
    (void) in; (void) dti; (void) pers; (void) pc; (void) dtp; (void) dto; (void) off; (void) extra;
    if (n != N || m != M) return MPI_ERR_ARG;
    /* raw return codes (predefined classes); no MPI_Error_class in here */
    for (int k = 0; k < nseg; k++) {
        o[k * M + 0] = MPIX_Am(x, N, MPI_INT, y, M, MPI_INT, 1, 0, MPI_INT, 0, PC, MPI_INT, MPI_INT, op_ok, g_win);
        o[k * M + 1] = MPIX_Am_op_create(ux_gen_fn, NULL, &tmp);
        o[k * M + 2] = MPIX_Am_win_buffer_attach(b, sizeof(b), g_win);
        o[k * M + 3] = skip_flush_in_handler ? MPI_ERR_OTHER : MPI_Win_flush_all(g_win);
    }
    return MPI_SUCCESS;
}

static int amv_fn(const void *in, int n, MPI_Datatype dti, void *pers, int pc, MPI_Datatype dtp, void *out,
                  int m, MPI_Datatype dto, int nseg, int off, int counts[], void *extra)
{
    (void) counts;
    return ux_gen_fn(in, n, dti, pers, pc, dtp, out, m, dto, nseg, off, extra);
}

static void gen_in(int *in, int nseg, int tag)
{
    for (int s = 0; s < nseg; s++) {
        in[s * N] = rank;
        for (int j = 1; j < N; j++) in[s * N + j] = tag * 100 + s * 10 + j;
    }
}

/* one correct AM to next inside the current epoch, flushed and checked */
static void ok_am(tu_win_t *w, const char *after)
{
    int in[3 * N], out[3 * M];
    char what[160];
    snprintf(what, sizeof(what), "correct AM after %s (%s)", after, ux_fname(w->flavor));
    gen_in(in, 3, 42);
    memset(out, 0, sizeof(out));
    UX_EXPECT(MPIX_Am(in, N, MPI_INT, out, M, MPI_INT, 3, next, MPI_INT, ux_disp(w, next, 0), PC, MPI_INT,
                      MPI_INT, op_ok, w->win), MPI_SUCCESS, "%s: MPIX_Am", what);
    UX_EXPECT(MPI_Win_flush(next, w->win), MPI_SUCCESS, "%s: flush", what);
    ux_gen_check(in, out, N, M, 3, pids[next], strict ? pids[next] : pids[rank], what);
    ok_count += 3;
}

/* epoch-free variant: own lock */
static void ok_am_locked(tu_win_t *w, const char *after)
{
    TU_MPI(MPI_Win_lock(MPI_LOCK_SHARED, next, 0, w->win));
    ok_am(w, after);
    TU_MPI(MPI_Win_unlock(next, w->win));
}

static void check_counters(tu_win_t *w, const char *what)
{
    int exp = 0;
    MPI_Sendrecv(&ok_count, 1, MPI_INT, next, 9, &exp, 1, MPI_INT, (rank + nprocs - 1) % nprocs, 9,
                 MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    ux_lock_self(w);
    int got = ((int *) w->base)[(rank + nprocs - 1) % nprocs];
    TU_CHECK(got == exp, "%s (%s): %d segments counted at the target, the origin's correct AMs had %d", what,
             ux_fname(w->flavor), got, exp);
    ux_unlock_self(w);
    MPI_Barrier(MPI_COMM_WORLD);   /* no new AMs before every target read its counter */
}

static void ops_and_register(tu_win_t *w)
{
    MPIX_Am_op tmp = MPIX_AM_OP_NULL, dead, a2, b2;
    const char *what = "op create/free";
    tu_where = what;
    UX_EXPECT(MPIX_Am_op_create(NULL, NULL, &tmp), MPI_ERR_ARG, "MPIX_Am_op_create(NULL fn)");
    UX_EXPECT(MPIX_Amv_op_create(NULL, NULL, &tmp), MPI_ERR_ARG, "MPIX_Amv_op_create(NULL fn)");
    UX_EXPECT(MPIX_Am_op_create(ux_gen_fn, NULL, NULL), MPI_ERR_ARG, "MPIX_Am_op_create(NULL op pointer)");
    UX_EXPECT(MPIX_Am_op_free(NULL), MPI_ERR_ARG, "MPIX_Am_op_free(NULL)");
    TU_MPI(MPIX_Am_op_create(ux_gen_fn, NULL, &tmp));
    dead = tmp;
    TU_MPI(MPIX_Am_op_free(&tmp));
    TU_CHECK(MPIX_AM_OP_NULL == tmp, "MPIX_Am_op_free did not set the handle to MPIX_AM_OP_NULL");
    UX_EXPECT(MPIX_Am_op_free(&tmp), MPI_ERR_OP, "MPIX_Am_op_free(&MPIX_AM_OP_NULL)");
    UX_EXPECT(MPIX_Am_op_free(&dead), MPI_ERR_OP, "MPIX_Am_op_free of a freed op");

    what = "register";
    tu_where = what;
    UX_EXPECT(MPIX_Am_win_op_register(op_ok, 0, MPI_WIN_NULL), MPI_ERR_WIN, "register on MPI_WIN_NULL");
    UX_EXPECT(MPIX_Am_win_op_register(op_ok, -1, w->win), MPI_ERR_ARG, "register index -1");
    UX_EXPECT(MPIX_Am_win_op_register(op_ok, MPIX_AM_MAX_INDEX, w->win), MPI_ERR_ARG,
              "register index MPIX_AM_MAX_INDEX");
    UX_EXPECT(MPIX_Am_win_op_register(MPIX_AM_OP_NULL, 3, w->win), MPI_ERR_ARG, "register MPIX_AM_OP_NULL");
    TU_MPI(ux_register(op_ok, 5, w->win));
    TU_MPI(MPIX_Am_op_create(ux_gen_fn, NULL, &a2));
    UX_EXPECT(MPIX_Am_win_op_register(a2, 5, w->win), MPI_ERR_ARG, "register another op at a used index");
    UX_EXPECT(MPIX_Am_win_op_register(op_ok, 6, w->win), MPI_ERR_ARG, "register an op twice");
    UX_EXPECT(MPIX_Am_win_op_register(a2, 0 == rank ? 7 : 8, w->win), MPI_ERR_ARG,
              "register with index 7 on rank 0, 8 elsewhere");
    TU_MPI(MPIX_Amv_op_create(amv_fn, NULL, &b2));
    UX_EXPECT(MPIX_Am_win_op_register(0 == rank ? b2 : a2, 9, w->win), MPI_ERR_ARG,
              "register an AMV op on rank 0, an AM op elsewhere, same index");
    /* the failed registrations left nothing behind: a2 and b2 register now */
    UX_EXPECT(MPIX_Am_win_op_register(a2, 7, w->win), MPI_SUCCESS, "register after the failed ones");
    UX_EXPECT(MPIX_Am_win_op_register(b2, 9, w->win), MPI_SUCCESS, "register AMV op after the failed ones");
    UX_EXPECT(MPIX_Am_win_op_deregister(op_err, w->win), MPI_ERR_OP, "deregister an unregistered op");
    UX_EXPECT(MPIX_Am_win_op_deregister(MPIX_AM_OP_NULL, w->win), MPI_ERR_OP, "deregister MPIX_AM_OP_NULL");
    UX_EXPECT(MPIX_Am_win_op_deregister(a2, w->win), MPI_SUCCESS, "deregister");
    UX_EXPECT(MPIX_Am_win_op_deregister(a2, w->win), MPI_ERR_OP, "deregister twice");
    UX_EXPECT(MPIX_Am_win_op_deregister(b2, w->win), MPI_SUCCESS, "deregister AMV op");
    MPIX_Am_op_free(&a2);
    MPIX_Am_op_free(&b2);
    /* the real registrations of the rest of the test */
    TU_MPI(ux_register(op_err, 1, w->win));
    TU_MPI(ux_register(op_inh, 2, w->win));
    TU_MPI(ux_register(op_amv, 3, w->win));
    ok_am_locked(w, "the register errors");
}

static void call_errors(tu_win_t *w)
{
    int in[4 * N], out[4 * M], counts[4];
    MPI_Aint pd = ux_disp(w, next, 0);
    MPI_Datatype unc, dts[5];
    MPIX_Am_op unreg, dead;
    MPI_Request req;
    char what[64];
    gen_in(in, 4, 1);
    snprintf(what, sizeof(what), "call errors (%s)", ux_fname(w->flavor));
    tu_where = what;

    TU_MPI(MPIX_Am_op_create(ux_gen_fn, NULL, &unreg));
    TU_MPI(MPIX_Am_op_create(ux_gen_fn, NULL, &dead));
    {
        MPIX_Am_op d = dead;
        TU_MPI(MPIX_Am_op_free(&d));
    }
    TU_MPI(MPI_Win_lock_all(0, w->win));
#define E(call, cls, desc)                                                                                    \
    do {                                                                                                      \
        tu_where = desc;                                                                                      \
        UX_EXPECT(call, cls, "%s: %s", what, desc);                                                           \
        ok_am(w, desc);                                                                                       \
    } while (0)
    E(MPIX_Am(in, N, MPI_INT, out, M, MPI_INT, 1, next, MPI_INT, pd, PC, MPI_INT, MPI_INT, op_ok, MPI_WIN_NULL),
      MPI_ERR_WIN, "MPIX_Am on MPI_WIN_NULL");
    E(MPIX_Am_win_buffer_attach(out, 16, MPI_WIN_NULL), MPI_ERR_WIN, "attach on MPI_WIN_NULL");
    E(MPIX_Win_am_epoch_assert(0, MPI_WIN_NULL), MPI_ERR_WIN, "epoch_assert on MPI_WIN_NULL");
    /* MPI_ERR_OP */
    E(MPIX_Am(in, N, MPI_INT, out, M, MPI_INT, 1, next, MPI_INT, pd, PC, MPI_INT, MPI_INT, MPIX_AM_OP_NULL,
              w->win), MPI_ERR_OP, "MPIX_AM_OP_NULL");
    E(MPIX_Am(in, N, MPI_INT, out, M, MPI_INT, 1, next, MPI_INT, pd, PC, MPI_INT, MPI_INT, dead, w->win),
      MPI_ERR_OP, "a freed op");
    E(MPIX_Am(in, N, MPI_INT, out, M, MPI_INT, 1, next, MPI_INT, pd, PC, MPI_INT, MPI_INT, unreg, w->win),
      MPI_ERR_OP, "an op not registered on the window");
    E(MPIX_Amv(in, N, MPI_INT, out, M, MPI_INT, 1, next, MPI_INT, pd, PC, MPI_INT, MPI_INT, op_ok, w->win,
               counts), MPI_ERR_OP, "an AM op to MPIX_Amv");
    E(MPIX_Am(in, N, MPI_INT, out, M, MPI_INT, 1, next, MPI_INT, pd, PC, MPI_INT, MPI_INT, op_amv, w->win),
      MPI_ERR_OP, "an AMV op to MPIX_Am");
    E(MPIX_Ram(in, N, MPI_INT, out, M, MPI_INT, 1, next, MPI_INT, pd, PC, MPI_INT, MPI_INT, op_amv, w->win,
               &req), MPI_ERR_OP, "an AMV op to MPIX_Ram");
    /* MPI_ERR_ARG */
    E(MPIX_Amv(in, N, MPI_INT, out, M, MPI_INT, 1, next, MPI_INT, pd, PC, MPI_INT, MPI_INT, op_amv, w->win, NULL),
      MPI_ERR_ARG, "MPIX_Amv with NULL counts");
    E(MPIX_Ram(in, N, MPI_INT, out, M, MPI_INT, 1, next, MPI_INT, pd, PC, MPI_INT, MPI_INT, op_ok, w->win, NULL),
      MPI_ERR_ARG, "MPIX_Ram with NULL request");
    E(MPIX_Amv(in, N, MPI_INT, out, M, MPI_INT, 0, next, MPI_INT, pd, PC, MPI_INT, MPI_INT, op_amv, w->win, NULL),
      MPI_SUCCESS, "MPIX_Amv with NULL counts and 0 segments");
    /* MPI_ERR_COUNT */
    E(MPIX_Am(in, -1, MPI_INT, out, M, MPI_INT, 1, next, MPI_INT, pd, PC, MPI_INT, MPI_INT, op_ok, w->win),
      MPI_ERR_COUNT, "input count -1");
    E(MPIX_Am(in, N, MPI_INT, out, -1, MPI_INT, 1, next, MPI_INT, pd, PC, MPI_INT, MPI_INT, op_ok, w->win),
      MPI_ERR_COUNT, "output count -1");
    E(MPIX_Am(in, N, MPI_INT, out, M, MPI_INT, 1, next, MPI_INT, pd, -1, MPI_INT, MPI_INT, op_ok, w->win),
      MPI_ERR_COUNT, "persistent count -1");
    E(MPIX_Am(in, N, MPI_INT, out, M, MPI_INT, -2, next, MPI_INT, pd, PC, MPI_INT, MPI_INT, op_ok, w->win),
      MPI_ERR_COUNT, "num_segments -2");
    /* MPI_ERR_RANK */
    E(MPIX_Am(in, N, MPI_INT, out, M, MPI_INT, 1, nprocs, MPI_INT, pd, PC, MPI_INT, MPI_INT, op_ok, w->win),
      MPI_ERR_RANK, "target nprocs");
    E(MPIX_Am(in, N, MPI_INT, out, M, MPI_INT, 1, -3, MPI_INT, pd, PC, MPI_INT, MPI_INT, op_ok, w->win),
      MPI_ERR_RANK, "target -3");
    /* MPI_ERR_TYPE */
    MPI_Type_contiguous(4, MPI_INT, &unc);   /* never committed */
    for (int pos = 0; pos < 5; pos++) {
        static const char *pn[] = { "origin input", "origin output", "target input", "persistent",
                                    "target output" };
        char desc[80];
        for (int u = 0; u < 2; u++) {
            MPI_Datatype bad = u ? unc : MPI_DATATYPE_NULL;
            for (int i = 0; i < 5; i++) dts[i] = i == pos ? bad : MPI_INT;
            snprintf(desc, sizeof(desc), "%s datatype %s", pn[pos], u ? "uncommitted" : "MPI_DATATYPE_NULL");
            E(MPIX_Am(in, N, dts[0], out, M, dts[1], 1, next, dts[2], pd, PC, dts[3], dts[4], op_ok, w->win),
              MPI_ERR_TYPE, desc);
        }
    }
    MPI_Type_free(&unc);
    E(MPIX_Am(in, 3, MPI_CHAR, out, M, MPI_INT, 1, next, MPI_INT, pd, PC, MPI_INT, MPI_INT, op_ok, w->win),
      MPI_ERR_TYPE, "no integer N (3 MPI_CHAR vs MPI_INT)");
    E(MPIX_Am(in, N, MPI_INT, out, 5, MPI_SHORT, 1, next, MPI_INT, pd, PC, MPI_INT, MPI_INT, op_ok, w->win),
      MPI_ERR_TYPE, "no integer M (5 MPI_SHORT vs MPI_INT)");
    E(MPIX_Am(in, N, MPI_INT, out, M, MPI_INT, 1, next, MPI_FLOAT, pd, PC, MPI_INT, MPI_INT, op_ok, w->win),
      MPI_ERR_TYPE, "MPI_INT input vs MPI_FLOAT target input");
    {
        MPI_Datatype i2;
        MPI_Type_contiguous(2, MPI_INT, &i2);
        MPI_Type_commit(&i2);
        /* origin output 2-int elements, target output MPI_INT: 4 % 8 != 0 */
        E(MPIX_Amv(in, N, MPI_INT, out, 2, i2, 1, next, MPI_INT, pd, PC, MPI_INT, MPI_INT, op_amv, w->win, counts),
          MPI_ERR_TYPE, "AMV size rule");
        MPI_Type_free(&i2);
    }
    /* MPI_ERR_RMA_RANGE */
    if (TU_DYNAMIC != w->flavor) {
        E(MPIX_Am(in, N, MPI_INT, out, M, MPI_INT, 1, next, MPI_INT, WINB - 4, 2, MPI_INT, MPI_INT, op_ok, w->win),
          MPI_ERR_RMA_RANGE, "persistent region past the window's end");
        E(MPIX_Am(in, N, MPI_INT, out, M, MPI_INT, 1, next, MPI_INT, -4, PC, MPI_INT, MPI_INT, op_ok, w->win),
          MPI_ERR_RMA_RANGE, "persistent region before the window");
    }
    /* MPI_ERR_ASSERT and a valid assert */
    E(MPIX_Win_am_epoch_assert(1 << 20, w->win), MPI_ERR_ASSERT, "epoch_assert(1 << 20)");
    E(MPIX_Win_am_epoch_assert(MPIX_MODE_CONCURRENT_AM | 1, w->win), MPI_ERR_ASSERT,
      "epoch_assert(CONCURRENT_AM | 1)");
    E(MPIX_Win_am_epoch_assert(MPIX_MODE_CONCURRENT_AM, w->win), MPI_SUCCESS, "epoch_assert(CONCURRENT_AM)");
    /* MPI_ERR_OTHER from inside a handler */
    {
        int hin[N] = { 0, 0, 0, 0 }, hout[M] = { -1, -1, -1, -1 };
        static const char *cn[] = { "MPIX_Am", "MPIX_Am_op_create", "MPIX_Am_win_buffer_attach",
                                    "MPI_Win_flush_all" };
        tu_where = "AM whose handler calls MPIX_Am, MPIX_Am_op_create, attach, MPI_Win_flush_all";
        UX_EXPECT(MPIX_Am(hin, N, MPI_INT, hout, M, MPI_INT, 1, next, MPI_INT, pd, PC, MPI_INT, MPI_INT, op_inh,
                          w->win), MPI_SUCCESS, "%s: AM whose handler calls MPI", what);
        UX_EXPECT(MPI_Win_flush(next, w->win), MPI_SUCCESS, "%s: flush of the AM whose handler calls MPI", what);
        for (int i = 0; i < M; i++)
            TU_CHECK(-1 != hout[i] && MPI_ERR_OTHER == tu_err_class(hout[i]),
                     "%s: %s inside a handler returned %s, expected MPI_ERR_OTHER", what, cn[i],
                     -1 != hout[i] ? ux_cls(tu_err_class(hout[i])) : "nothing (handler not run)");
        ok_am(w, "the handler calling MPI");
    }
#undef E
    TU_MPI(MPI_Win_unlock_all(w->win));
    MPIX_Am_op_free(&unreg);
}

static void attach_errors(tu_win_t *w)
{
    char *buf = ux_buf(512), *other = ux_buf(128);
    char what[64];
    snprintf(what, sizeof(what), "attach/detach (%s)", ux_fname(w->flavor));
    tu_where = what;
    UX_EXPECT(MPIX_Am_win_buffer_attach(buf, -1, w->win), MPI_ERR_SIZE, "%s: size -1", what);
    UX_EXPECT(MPIX_Am_win_buffer_attach(NULL, 64, w->win), MPI_ERR_BUFFER, "%s: NULL, 64", what);
    UX_EXPECT(MPIX_Am_win_buffer_attach(buf, 256, w->win), MPI_SUCCESS, "%s: attach", what);
    UX_EXPECT(MPIX_Am_win_buffer_attach(buf + 64, 64, w->win), MPI_ERR_ARG, "%s: overlapping attach", what);
    UX_EXPECT(MPIX_Am_win_buffer_attach(buf + 128, 256, w->win), MPI_ERR_ARG, "%s: attach overlapping the end",
              what);
    UX_EXPECT(MPIX_Am_win_buffer_attach(buf, 256, w->win), MPI_ERR_ARG, "%s: the same attach twice", what);
    UX_EXPECT(MPIX_Am_win_buffer_attach(w->base, 64, w->win), MPI_ERR_ARG, "%s: attach of window memory", what);
    UX_EXPECT(MPIX_Am_win_buffer_attach(buf + 256, 256, w->win), MPI_SUCCESS, "%s: adjacent attach", what);
    UX_EXPECT(MPIX_Am_win_buffer_detach(buf + 64, w->win), MPI_ERR_ARG, "%s: detach of a non-base", what);
    UX_EXPECT(MPIX_Am_win_buffer_detach(other, w->win), MPI_ERR_ARG, "%s: detach of an unknown buffer", what);
    UX_EXPECT(MPIX_Am_win_buffer_detach(buf, w->win), MPI_SUCCESS, "%s: detach", what);
    UX_EXPECT(MPIX_Am_win_buffer_detach(buf, w->win), MPI_ERR_ARG, "%s: detach twice", what);
    UX_EXPECT(MPIX_Am_win_buffer_detach(buf + 256, w->win), MPI_SUCCESS, "%s: detach", what);
    MPI_Barrier(MPI_COMM_WORLD);
    ok_am_locked(w, "the attach errors");
    free(buf); free(other);
}

static void sync_errors(tu_win_t *w)
{
    int in[N], out[M];
    MPI_Aint pd = ux_disp(w, next, 0);
    char what[64];
    MPI_Group world, g;
    snprintf(what, sizeof(what), "sync errors (%s)", ux_fname(w->flavor));
    tu_where = what;
    gen_in(in, 1, 2);
    UX_EXPECT(MPIX_Am(in, N, MPI_INT, out, M, MPI_INT, 1, next, MPI_INT, pd, PC, MPI_INT, MPI_INT, op_ok, w->win),
              MPI_ERR_RMA_SYNC, "%s: AM outside any epoch", what);
    UX_EXPECT(MPIX_Am(in, N, MPI_INT, out, M, MPI_INT, 0, next, MPI_INT, pd, PC, MPI_INT, MPI_INT, op_ok, w->win),
              MPI_ERR_RMA_SYNC, "%s: 0-segment AM outside any epoch", what);
    UX_EXPECT(MPIX_Win_am_epoch_assert(MPIX_MODE_CONCURRENT_AM, w->win), MPI_ERR_RMA_SYNC,
              "%s: epoch_assert outside an epoch", what);
    ok_am_locked(w, "AMs outside an epoch");
    if (nprocs > 2) {
        int other = (next + 1) % nprocs;
        TU_MPI(MPI_Win_lock(MPI_LOCK_SHARED, next, 0, w->win));
        UX_EXPECT(MPIX_Am(in, N, MPI_INT, out, M, MPI_INT, 1, other, MPI_INT, ux_disp(w, other, 0), PC, MPI_INT,
                          MPI_INT, op_ok, w->win), MPI_ERR_RMA_SYNC, "%s: AM to a rank not locked", what);
        ok_am(w, "an AM to a rank not locked");
        TU_MPI(MPI_Win_unlock(next, w->win));
    }
    /* fence epochs */
    TU_MPI(MPI_Win_fence(0, w->win));
    {
        int fin[N], fout[M];
        gen_in(fin, 1, 3);
        UX_EXPECT(MPIX_Am(fin, N, MPI_INT, fout, M, MPI_INT, 1, next, MPI_INT, pd, PC, MPI_INT, MPI_INT, op_ok,
                          w->win), MPI_SUCCESS, "%s: AM in a fence epoch", what);
        UX_EXPECT(MPI_Win_fence(MPI_MODE_NOSUCCEED, w->win), MPI_SUCCESS, "%s: closing fence", what);
        ux_gen_check(fin, fout, N, M, 1, pids[next], strict ? pids[next] : pids[rank], "AM in a fence epoch");
        ok_count += 1;
    }
    UX_EXPECT(MPIX_Am(in, N, MPI_INT, out, M, MPI_INT, 1, next, MPI_INT, pd, PC, MPI_INT, MPI_INT, op_ok, w->win),
              MPI_ERR_RMA_SYNC, "%s: AM after fence(NOSUCCEED)", what);
    /* PSCW: access group {next}; exposure to prev */
    if (nprocs > 2) {
        int prev = (rank + nprocs - 1) % nprocs, other = (next + 1) % nprocs, pin[N], pout[M];
        MPI_Group gp;
        MPI_Comm_group(MPI_COMM_WORLD, &world);
        MPI_Group_incl(world, 1, &next, &g);
        MPI_Group_incl(world, 1, &prev, &gp);
        TU_MPI(MPI_Win_post(gp, 0, w->win));
        TU_MPI(MPI_Win_start(g, 0, w->win));
        UX_EXPECT(MPIX_Am(in, N, MPI_INT, out, M, MPI_INT, 1, other, MPI_INT, ux_disp(w, other, 0), PC, MPI_INT,
                          MPI_INT, op_ok, w->win), MPI_ERR_RMA_SYNC, "%s: AM outside the PSCW access group", what);
        gen_in(pin, 1, 4);
        UX_EXPECT(MPIX_Am(pin, N, MPI_INT, pout, M, MPI_INT, 1, next, MPI_INT, pd, PC, MPI_INT, MPI_INT, op_ok,
                          w->win), MPI_SUCCESS, "%s: AM in a PSCW epoch", what);
        UX_EXPECT(MPI_Win_complete(w->win), MPI_SUCCESS, "%s: complete", what);
        TU_MPI(MPI_Win_wait(w->win));
        ux_gen_check(pin, pout, N, M, 1, pids[next], strict ? pids[next] : pids[rank], "AM in a PSCW epoch");
        ok_count += 1;
        MPI_Group_free(&g); MPI_Group_free(&gp); MPI_Group_free(&world);
    }
    /* deregister with own AMs incomplete: only where the AM surely travels as messages */
    if (strict) {
        const int bn = 2048, ns = 32;   /* 8 KiB segments: many chunks, one AM cannot finish inside its call */
        int *bin = malloc(sizeof(int) * bn * ns), *bout = malloc(sizeof(int) * M * ns);
        void *ub = ux_buf(64 * 1024);
        TU_MPI(MPIX_Am_win_buffer_attach(ub, 64 * 1024, w->win));
        MPI_Barrier(MPI_COMM_WORLD);
        for (int s = 0; s < ns; s++) {
            bin[s * bn] = rank;
            for (int j = 1; j < bn; j++) bin[s * bn + j] = s + j;
        }
        TU_MPI(MPI_Win_lock_all(0, w->win));
        UX_EXPECT(MPIX_Am(bin, bn, MPI_INT, bout, M, MPI_INT, ns, next, MPI_INT, pd, PC, MPI_INT, MPI_INT, op_ok,
                          w->win), MPI_SUCCESS, "%s: large AM", what);
        UX_EXPECT(MPIX_Am_win_op_deregister(op_ok, w->win), MPI_ERR_RMA_SYNC,
                  "%s: deregister with an incomplete AM on the op", what);
        UX_EXPECT(MPI_Win_unlock_all(w->win), MPI_SUCCESS, "%s: unlock_all after the refused deregister", what);
        ux_gen_check(bin, bout, bn, M, ns, pids[next], pids[next], "large AM");
        ok_count += ns;
        MPI_Barrier(MPI_COMM_WORLD);
        TU_MPI(MPIX_Am_win_buffer_detach(ub, w->win));
        free(bin); free(bout); free(ub);
    }
    ok_am_locked(w, "the sync errors");
}

static void later_errors(tu_win_t *w)
{
    int in[3 * 3 * N], out[3 * 3 * M], cls;
    MPI_Aint pd = ux_disp(w, next, 0);
    char what[80];
    for (int mode = 0; mode < 4; mode++) {
        /* 0: MPI_ERR_ARG at the flush; 1: at the unlock; 2: MPIX_Ram + MPI_Wait; 3: 123456789 -> OTHER */
        MPI_Request req[3];
        static const char *mn[] = { "at the flush", "at the unlock", "MPIX_Ram/MPI_Wait", "invalid code" };
        snprintf(what, sizeof(what), "handler error %s (%s)", mn[mode], ux_fname(w->flavor));
        tu_where = what;
        for (int a = 0; a < 3; a++) gen_in(in + a * 3 * N, 3, 10 * mode + a);
        in[3 * N + N + 1] = 3 == mode ? -888 : -777;   /* AM 1, segment 1 */
        in[3 * N + N] = rank;
        for (int i = 0; i < 9 * M; i++) out[i] = -5;
        TU_MPI(MPI_Win_lock(MPI_LOCK_SHARED, next, 0, w->win));
        for (int a = 0; a < 3; a++) {
            if (2 == mode)
                UX_EXPECT(MPIX_Ram(in + a * 3 * N, N, MPI_INT, out + a * 3 * M, M, MPI_INT, 3, next, MPI_INT, pd,
                                   PC, MPI_INT, MPI_INT, op_err, w->win, &req[a]), MPI_SUCCESS, "%s: MPIX_Ram", what);
            else
                UX_EXPECT(MPIX_Am(in + a * 3 * N, N, MPI_INT, out + a * 3 * M, M, MPI_INT, 3, next, MPI_INT, pd, PC,
                                  MPI_INT, MPI_INT, op_err, w->win), MPI_SUCCESS, "%s: MPIX_Am", what);
        }
        if (0 == mode || 3 == mode) {
            UX_EXPECT(MPI_Win_flush(next, w->win), 3 == mode ? MPI_ERR_OTHER : MPI_ERR_ARG, "%s", what);
            UX_EXPECT(MPI_Win_unlock(next, w->win), MPI_SUCCESS, "%s: unlock after the reported error", what);
        } else if (1 == mode) {
            UX_EXPECT(MPI_Win_unlock(next, w->win), MPI_ERR_ARG, "%s", what);
        } else {
            UX_EXPECT(MPI_Wait(&req[0], MPI_STATUS_IGNORE), MPI_SUCCESS, "%s: AM 0", what);
            cls = tu_err_class(MPI_Wait(&req[1], MPI_STATUS_IGNORE));
            UX_EXPECT(cls, MPI_ERR_ARG, "%s: AM 1", what);
            UX_EXPECT(MPI_Wait(&req[2], MPI_STATUS_IGNORE), MPI_SUCCESS, "%s: AM 2", what);
            UX_EXPECT(MPI_Win_unlock(next, w->win), MPI_SUCCESS, "%s: unlock", what);
        }
        ux_gen_check(in, out, N, M, 3, pids[next], strict ? pids[next] : pids[rank], what);
        ux_gen_check(in + 6 * N, out + 6 * M, N, M, 3, pids[next], strict ? pids[next] : pids[rank], what);
        ok_count += 6;
        /* segment 0 of AM 1 ran before the failing one (its counter slot is this rank too) */
        ok_count += 1;
        ok_am_locked(w, what);
    }
    MPI_Barrier(MPI_COMM_WORLD);
    check_counters(w, "after the handler errors");

    /* MPI_ERR_BUFFER: one segment larger than the internal buffer, no user buffer */
    if (!skip_buffer_error) {
        int *bin = malloc(sizeof(int) * BIGN), bout[M];
        snprintf(what, sizeof(what), "12 KB segment without a user buffer (%s)", ux_fname(w->flavor));
        tu_where = what;
        bin[0] = PC - 1;   /* counter slot not used elsewhere */
        for (int j = 1; j < BIGN; j++) bin[j] = j;
        memset(bout, 0, sizeof(bout));
        TU_MPI(MPI_Win_lock(MPI_LOCK_SHARED, next, 0, w->win));
        UX_EXPECT(MPIX_Am(bin, BIGN, MPI_INT, bout, M, MPI_INT, 1, next, MPI_INT, pd, PC, MPI_INT, MPI_INT, op_ok,
                          w->win), MPI_SUCCESS, "%s: MPIX_Am", what);
        tu_where = "flush of the AM with a 12 KB segment";
        cls = tu_err_class(MPI_Win_flush(next, w->win));
        tu_where = "correct AM after the MPI_ERR_BUFFER";
        if (MPI_SUCCESS == cls && !strict && bout[2] == pids[rank]) {
            ux_gen_check(bin, bout, BIGN, M, 1, pids[rank], pids[rank], what);   /* origin computation */
            if (0 == rank) printf("%s: computed at the origin\n", what);
        } else {
            UX_EXPECT(cls, MPI_ERR_BUFFER, "%s: flush", what);
        }
        ok_am(w, what);
        TU_MPI(MPI_Win_unlock(next, w->win));
        free(bin);
    }
}

static void dynamic_range(void)
{
    tu_win_t d;
    int in[N], out[M];
    char what[] = "dynamic window, region not attached at the target";
    tu_where = what;
    void *keep = ux_buf(KEEPB);
    ok_count = 0;
    ux_win_create(TU_DYNAMIC, WINB, MPI_INFO_NULL, &d);
    TU_MPI(ux_register(op_ok, 0, d.win));
    TU_MPI(MPIX_Am_win_buffer_attach(keep, KEEPB, d.win));
    MPI_Barrier(MPI_COMM_WORLD);
    gen_in(in, 1, 5);
    TU_MPI(MPI_Win_lock_all(0, d.win));
    /* the target's base + 1 MiB: never attached there */
    UX_EXPECT(MPIX_Am(in, N, MPI_INT, out, M, MPI_INT, 1, next, MPI_INT, d.remote[next] + (1 << 20), PC, MPI_INT,
                      MPI_INT, op_ok, d.win), MPI_SUCCESS, "%s: MPIX_Am (checked later)", what);
    UX_EXPECT(MPI_Win_flush(next, d.win), MPI_ERR_RMA_RANGE, "%s: flush", what);
    ok_am(&d, what);
    TU_MPI(MPI_Win_unlock_all(d.win));
    MPI_Barrier(MPI_COMM_WORLD);
    check_counters(&d, what);

    /* memory-handle window: not an AM window */
    {
        char h[MPIX_MAX_MEMHANDLE_SIZE], ph[MPIX_MAX_MEMHANDLE_SIZE];
        int hs = 0, phs = 0, prev = (rank + nprocs - 1) % nprocs;
        MPI_Win mw = MPI_WIN_NULL;
        MPIX_Am_op t;
        tu_where = "memory-handle window";
        TU_MPI(MPIX_Memhandle_create(d.base, WINB, MPI_INFO_NULL, d.win, h, &hs));
        MPI_Sendrecv(&hs, 1, MPI_INT, next, 7, &phs, 1, MPI_INT, prev, 7, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        MPI_Sendrecv(h, hs, MPI_BYTE, next, 8, ph, phs, MPI_BYTE, prev, 8, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        TU_MPI(MPIX_Win_from_memhandle(ph, WINB, 1, MPI_INFO_NULL, prev, d.win, &mw));
        MPI_Win_set_errhandler(mw, MPI_ERRORS_RETURN);
        TU_MPI(MPIX_Am_op_create(ux_gen_fn, NULL, &t));
        UX_EXPECT(MPIX_Am_win_op_register(t, 1, mw), MPI_ERR_WIN, "register on a memory-handle window");
        UX_EXPECT(MPIX_Am_win_buffer_attach(out, sizeof(out), mw), MPI_ERR_WIN,
                  "attach on a memory-handle window");
        TU_MPI(MPI_Win_lock(MPI_LOCK_SHARED, prev, 0, d.win));
        UX_EXPECT(MPIX_Am(in, N, MPI_INT, out, M, MPI_INT, 1, prev, MPI_INT, 0, PC, MPI_INT, MPI_INT, op_ok, mw),
                  MPI_ERR_WIN, "MPIX_Am on a memory-handle window");
        TU_MPI(MPI_Win_unlock(prev, d.win));
        MPIX_Am_op_free(&t);
        TU_MPI(MPI_Win_free(&mw));
        MPI_Barrier(MPI_COMM_WORLD);
        TU_MPI(MPIX_Memhandle_release(h, d.win));
    }
    TU_MPI(MPIX_Am_win_op_deregister(op_ok, d.win));
    ux_win_free(&d);
    free(keep);
}

static void proc_null(tu_win_t *w)
{
    int in[2 * N], out[2 * M], counts[2] = { -9, -9 };
    MPI_Request req = MPI_REQUEST_NULL;
    char what[64];
    snprintf(what, sizeof(what), "MPI_PROC_NULL (%s)", ux_fname(w->flavor));
    tu_where = what;
    gen_in(in, 2, 6);
    in[0] = in[N] = PC - 2;   /* a counter no one else uses: must stay 0 */
    for (int i = 0; i < 2 * M; i++) out[i] = -3;
    TU_MPI(MPI_Win_lock_all(0, w->win));
    UX_EXPECT(MPIX_Am(in, N, MPI_INT, out, M, MPI_INT, 2, MPI_PROC_NULL, MPI_INT, 0, PC, MPI_INT, MPI_INT, op_ok,
                      w->win), MPI_SUCCESS, "%s: MPIX_Am", what);
    UX_EXPECT(MPIX_Amv(in, N, MPI_INT, out, M, MPI_INT, 2, MPI_PROC_NULL, MPI_INT, 0, PC, MPI_INT, MPI_INT, op_amv,
                       w->win, counts), MPI_SUCCESS, "%s: MPIX_Amv", what);
    UX_EXPECT(MPIX_Ram(in, N, MPI_INT, out, M, MPI_INT, 2, MPI_PROC_NULL, MPI_INT, 0, PC, MPI_INT, MPI_INT, op_ok,
                       w->win, &req), MPI_SUCCESS, "%s: MPIX_Ram", what);
    UX_EXPECT(MPI_Wait(&req, MPI_STATUS_IGNORE), MPI_SUCCESS, "%s: MPI_Wait", what);
    UX_EXPECT(MPIX_Am(in, N, MPI_INT, out, M, MPI_INT, 0, next, MPI_INT, ux_disp(w, next, 0), PC, MPI_INT, MPI_INT,
                      op_ok, w->win), MPI_SUCCESS, "%s: 0 segments to next", what);
    UX_EXPECT(MPI_Win_flush_all(w->win), MPI_SUCCESS, "%s: flush_all", what);
    for (int i = 0; i < 2 * M; i++)
        TU_CHECK(-3 == out[i], "%s: output int %d changed to %d", what, i, out[i]);
    TU_CHECK(-9 == counts[0] && -9 == counts[1], "%s: AMV counts changed to %d %d", what, counts[0], counts[1]);
    ok_am(w, what);
    TU_MPI(MPI_Win_unlock_all(w->win));
    MPI_Barrier(MPI_COMM_WORLD);
    ux_lock_self(w);
    TU_CHECK(0 == ((int *) w->base)[PC - 2], "%s: the no-op AMs ran (counter %d)", what, ((int *) w->base)[PC - 2]);
    ux_unlock_self(w);
}

int main(int argc, char **argv)
{
    int pid;
    tu_am_start(&argc, &argv, "am_errors", 60, &rank, &nprocs);
    strict = !ux_origin_compute_on();
    skip_flush_in_handler = tu_opt_flag(argc, argv, "--skip-flush-in-handler");
    skip_buffer_error = tu_opt_flag(argc, argv, "--skip-buffer-error");
    next = (rank + 1) % nprocs;
    pids = malloc(nprocs * sizeof(int));
    pid = (int) getpid();
    MPI_Allgather(&pid, 1, MPI_INT, pids, 1, MPI_INT, MPI_COMM_WORLD);
    TU_MPI(MPIX_Am_op_create(ux_gen_fn, NULL, &op_ok));
    TU_MPI(MPIX_Am_op_create(err_fn, NULL, &op_err));
    TU_MPI(MPIX_Am_op_create(inh_fn, NULL, &op_inh));
    TU_MPI(MPIX_Amv_op_create(amv_fn, NULL, &op_amv));
    for (int f = 0; f < UX_NFLAVORS; f++) {
        tu_win_t w;
        if (!ux_flavor_enabled(f) || TU_DYNAMIC == f) continue;
        void *keep = ux_buf(KEEPB);
        ok_count = 0;
        ux_win_create(f, WINB, MPI_INFO_NULL, &w);
        g_win = w.win;
        /* user buffer for the correct AMs (needed with --no-sysbuf); stays attached until the free */
        TU_MPI(MPIX_Am_win_buffer_attach(keep, KEEPB, w.win));
        ops_and_register(&w);
        call_errors(&w);
        attach_errors(&w);
        sync_errors(&w);
        MPI_Barrier(MPI_COMM_WORLD);
        check_counters(&w, "after the call errors");
        later_errors(&w);
        proc_null(&w);
        MPI_Barrier(MPI_COMM_WORLD);
        check_counters(&w, "at the end");
        ux_win_free(&w);   /* registrations and buffers dropped by the free */
        g_win = MPI_WIN_NULL;
        free(keep);
    }
    if (tu_flavor_enabled(TU_DYNAMIC)) dynamic_range();
    MPIX_Am_op_free(&op_ok);
    MPIX_Am_op_free(&op_err);
    MPIX_Am_op_free(&op_inh);
    MPIX_Am_op_free(&op_amv);
    free(pids);
    int rc = tu_finish("am_errors");
    MPI_Finalize();
    return rc;
}
