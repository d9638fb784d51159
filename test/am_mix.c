/* am_mix (T10): active messages mixed with put/get/accumulate in one epoch
 * (S14-S17).  Every rank is the origin of next = rank+1 and the target of
 * prev.  Handler readadd: per segment, output[j] = persistent[j] (8 ints),
 * then persistent[j] += input[j]; the origin keeps a model of its target's
 * region.  Per window flavor (create, allocate, dynamic, shared), on a
 * default window and on one with mpi_win_order=true:
 * a. lock_all: put to region P, AM (3 segments) to region A, accumulate(SUM)
 *    to region C, a second AM (2 segments), unlock_all: AM outputs exact
 *    (the second AM sees the first, default ordering), the target finds P, C
 *    and A exact (disjoint bytes in one epoch are defined).
 * b. put to A, flush, AM: its output is what was put.
 * c. (mpi_win_order=true only) put to A[0..3] and accumulate(SUM) to A[4..7],
 *    AM with no flush between: the AM sees both.  Repeated with an
 *    MPIX_Ram completed by MPI_Wait.
 * e. (mpi_win_order=true only) AM, then a put over A with no flush between:
 *    the AM's output is A before either, and the put wins.
 * d. AM, flush, MPI_Get sees its writes; accumulate(SUM), flush,
 *    MPI_Get_accumulate(MPI_NO_OP) sees both.
 * Then the target checks A against the origin's model.
 * Flags: tu_am_args (--no-origin-compute: the message path). */
#include "uamx_util.h"

#define P8 8                  /* ints in the AM region and per segment */
#define OFF_A 0               /* bytes */
#define OFF_P 256
#define OFF_C 1024
#define NPC 64                /* ints put / accumulated */
#define WINB 4096

static int rank, nprocs, next, prev;
static MPIX_Am_op op;

static int readadd_fn(const void *in, int N, MPI_Datatype dti, void *pers, int pc, MPI_Datatype dtp,
                      void *out, int M, MPI_Datatype dto, int nseg, int off, void *extra)
{
    const int *a = in;
    int *p = pers, *o = out;
    (void) dti; (void) dtp; (void) dto; (void) off; (void) extra;
    if (P8 != N || P8 != M || P8 != pc) return MPI_ERR_ARG;
    for (int k = 0; k < nseg; k++)
        for (int j = 0; j < P8; j++) {
            o[k * P8 + j] = p[j];
            p[j] += a[k * P8 + j];
        }
    return MPI_SUCCESS;
}

static int model[P8];   /* next's region A */

static void am_in(int *in, int tag, int nseg)
{
    for (int i = 0; i < nseg * P8; i++) in[i] = rank * 1000 + tag * 37 + i;
}

/* check the outputs of an AM issued when next's A was `model`, and advance it */
static void am_check(const int *in, const int *out, int nseg, const char *what)
{
    int bad = 0;
    for (int k = 0; k < nseg; k++)
        for (int j = 0; j < P8; j++) {
            if (out[k * P8 + j] != model[j] && bad++ < 3)
                TU_CHECK(0, "%s: AM output segment %d int %d = %d, expected %d", what, k, j,
                         out[k * P8 + j], model[j]);
            model[j] += in[k * P8 + j];
        }
}

static int am(tu_win_t *w, const int *in, int *out, int nseg, MPI_Request *req)
{
    if (req)
        return MPIX_Ram(in, P8, MPI_INT, out, P8, MPI_INT, nseg, next, MPI_INT, ux_disp(w, next, OFF_A), P8,
                        MPI_INT, MPI_INT, op, w->win, req);
    return MPIX_Am(in, P8, MPI_INT, out, P8, MPI_INT, nseg, next, MPI_INT, ux_disp(w, next, OFF_A), P8,
                   MPI_INT, MPI_INT, op, w->win);
}

static int putv(int i) { return rank * 7919 + i * 3 + 1; }
static int accv(int i, int round) { return (rank + 1) * (i + 2) * (round + 1); }

static void target_check_a(tu_win_t *w, const char *what)
{
    int exp[P8];
    MPI_Sendrecv(model, P8, MPI_INT, next, 5, exp, P8, MPI_INT, prev, 5, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    ux_lock_self(w);
    const int *a = (const int *) ((char *) w->base + OFF_A);
    {
        int bad = 0;
        for (int j = 0; j < P8; j++) bad += a[j] != exp[j];
        TU_CHECK(0 == bad, "%s: target's A = {%d %d %d %d %d %d %d %d}, expected {%d %d %d %d %d %d %d %d}", what,
                 a[0], a[1], a[2], a[3], a[4], a[5], a[6], a[7], exp[0], exp[1], exp[2], exp[3], exp[4], exp[5],
                 exp[6], exp[7]);
    }
    ux_unlock_self(w);
    MPI_Barrier(MPI_COMM_WORLD);   /* nobody writes A again before every target read it */
}

static void run(int f, int ordered)
{
    tu_win_t w;
    MPI_Info info = ordered ? tu_info_new("mpi_win_order", "true", NULL) : MPI_INFO_NULL;
    int in[3 * P8], out[3 * P8], in2[2 * P8], out2[2 * P8], buf[NPC];
    char what[80];

    ux_win_create(f, WINB, info, &w);
    if (MPI_INFO_NULL != info) MPI_Info_free(&info);
    TU_MPI(ux_register(op, 0, w.win));
    memset(model, 0, sizeof(model));

    /* a */
    snprintf(what, sizeof(what), "a (%s%s)", ux_fname(f), ordered ? ", ordered" : "");
    tu_where = what;
    TU_MPI(MPI_Win_lock_all(0, w.win));
    for (int i = 0; i < NPC; i++) buf[i] = putv(i);
    UX_EXPECT(MPI_Put(buf, NPC, MPI_INT, next, ux_disp(&w, next, OFF_P), NPC, MPI_INT, w.win), MPI_SUCCESS,
              "%s: put", what);
    am_in(in, 1, 3);
    UX_EXPECT(am(&w, in, out, 3, NULL), MPI_SUCCESS, "%s: AM", what);
    {
        int acc[NPC];
        for (int i = 0; i < NPC; i++) acc[i] = accv(i, 0);
        UX_EXPECT(MPI_Accumulate(acc, NPC, MPI_INT, next, ux_disp(&w, next, OFF_C), NPC, MPI_INT, MPI_SUM,
                                 w.win), MPI_SUCCESS, "%s: accumulate", what);
        am_in(in2, 2, 2);
        UX_EXPECT(am(&w, in2, out2, 2, NULL), MPI_SUCCESS, "%s: second AM", what);
        for (int i = 0; i < NPC; i++) acc[i] = accv(i, 1);
        UX_EXPECT(MPI_Accumulate(acc, NPC, MPI_INT, next, ux_disp(&w, next, OFF_C), NPC, MPI_INT, MPI_SUM,
                                 w.win), MPI_SUCCESS, "%s: accumulate", what);
    }
    UX_EXPECT(MPI_Win_unlock_all(w.win), MPI_SUCCESS, "%s: unlock_all", what);
    am_check(in, out, 3, what);
    am_check(in2, out2, 2, what);
    MPI_Barrier(MPI_COMM_WORLD);
    ux_lock_self(&w);
    {
        const int *pp = (const int *) ((char *) w.base + OFF_P), *cc = (const int *) ((char *) w.base + OFF_C);
        int badp = 0, badc = 0, save = rank;
        rank = prev;   /* putv/accv of the origin */
        for (int i = 0; i < NPC; i++) {
            badp += pp[i] != putv(i);
            badc += cc[i] != accv(i, 0) + accv(i, 1);
        }
        rank = save;
        TU_CHECK(0 == badp && 0 == badc, "%s: target: %d put ints and %d accumulated ints wrong", what, badp,
                 badc);
    }
    ux_unlock_self(&w);
    target_check_a(&w, what);

    /* b */
    snprintf(what, sizeof(what), "b (%s%s)", ux_fname(f), ordered ? ", ordered" : "");
    tu_where = what;
    TU_MPI(MPI_Win_lock_all(0, w.win));
    for (int j = 0; j < P8; j++) model[j] = buf[j] = -(rank * 100 + j);
    UX_EXPECT(MPI_Put(buf, P8, MPI_INT, next, ux_disp(&w, next, OFF_A), P8, MPI_INT, w.win), MPI_SUCCESS,
              "%s: put", what);
    UX_EXPECT(MPI_Win_flush(next, w.win), MPI_SUCCESS, "%s: flush", what);
    am_in(in, 3, 1);
    UX_EXPECT(am(&w, in, out, 1, NULL), MPI_SUCCESS, "%s: AM", what);
    UX_EXPECT(MPI_Win_unlock_all(w.win), MPI_SUCCESS, "%s: unlock_all", what);
    am_check(in, out, 1, what);
    MPI_Barrier(MPI_COMM_WORLD);
    target_check_a(&w, what);

    /* c */
    if (ordered) {
        for (int rq = 0; rq < 2; rq++) {
            int acc[P8 / 2];
            MPI_Request req = MPI_REQUEST_NULL;
            snprintf(what, sizeof(what), "c (%s, %s)", ux_fname(f), rq ? "MPIX_Ram" : "MPIX_Am");
            tu_where = what;
            TU_MPI(MPI_Win_lock_all(0, w.win));
            for (int j = 0; j < P8 / 2; j++) model[j] = buf[j] = rank * 10 + j + 50 * rq;
            for (int j = 0; j < P8 / 2; j++) { acc[j] = j + 1 + rq; model[P8 / 2 + j] += acc[j]; }
            UX_EXPECT(MPI_Put(buf, P8 / 2, MPI_INT, next, ux_disp(&w, next, OFF_A), P8 / 2, MPI_INT, w.win),
                      MPI_SUCCESS, "%s: put", what);
            UX_EXPECT(MPI_Accumulate(acc, P8 / 2, MPI_INT, next, ux_disp(&w, next, OFF_A + 16), P8 / 2,
                                     MPI_INT, MPI_SUM, w.win), MPI_SUCCESS, "%s: accumulate", what);
            am_in(in, 4 + rq, 2);
            UX_EXPECT(am(&w, in, out, 2, rq ? &req : NULL), MPI_SUCCESS, "%s: AM after put, no flush", what);
            if (rq) UX_EXPECT(MPI_Wait(&req, MPI_STATUS_IGNORE), MPI_SUCCESS, "%s: MPI_Wait", what);
            else UX_EXPECT(MPI_Win_flush_local(next, w.win), MPI_SUCCESS, "%s: flush_local", what);
            am_check(in, out, 2, what);
            UX_EXPECT(MPI_Win_unlock_all(w.win), MPI_SUCCESS, "%s: unlock_all", what);
            MPI_Barrier(MPI_COMM_WORLD);
            target_check_a(&w, what);
        }
    }

    /* e: an AM, then a put over the same ints with no flush: the put lands
     * after the AM's writes (the AM may still travel as a message while
     * the put is a store into mapped memory) */
    if (ordered) {
        snprintf(what, sizeof(what), "e (%s, ordered)", ux_fname(f));
        tu_where = what;
        TU_MPI(MPI_Win_lock_all(0, w.win));
        am_in(in, 8, 1);
        UX_EXPECT(am(&w, in, out, 1, NULL), MPI_SUCCESS, "%s: AM", what);
        for (int j = 0; j < P8; j++) buf[j] = rank * 31 + j * 7 + 3;
        UX_EXPECT(MPI_Put(buf, P8, MPI_INT, next, ux_disp(&w, next, OFF_A), P8, MPI_INT, w.win),
                  MPI_SUCCESS, "%s: put after AM, no flush", what);
        UX_EXPECT(MPI_Win_unlock_all(w.win), MPI_SUCCESS, "%s: unlock_all", what);
        am_check(in, out, 1, what);
        for (int j = 0; j < P8; j++) model[j] = buf[j];
        MPI_Barrier(MPI_COMM_WORLD);
        target_check_a(&w, what);
    }

    /* d */
    snprintf(what, sizeof(what), "d (%s%s)", ux_fname(f), ordered ? ", ordered" : "");
    tu_where = what;
    TU_MPI(MPI_Win_lock(MPI_LOCK_SHARED, next, 0, w.win));
    am_in(in, 6, 3);
    UX_EXPECT(am(&w, in, out, 3, NULL), MPI_SUCCESS, "%s: AM", what);
    UX_EXPECT(MPI_Win_flush(next, w.win), MPI_SUCCESS, "%s: flush", what);
    am_check(in, out, 3, what);
    for (int j = 0; j < P8; j++) buf[j] = -1;
    UX_EXPECT(MPI_Get(buf, P8, MPI_INT, next, ux_disp(&w, next, OFF_A), P8, MPI_INT, w.win), MPI_SUCCESS,
              "%s: get", what);
    UX_EXPECT(MPI_Win_flush(next, w.win), MPI_SUCCESS, "%s: flush", what);
    for (int j = 0; j < P8; j++)
        TU_CHECK(buf[j] == model[j], "%s: MPI_Get after AM+flush: A[%d] = %d, expected %d", what, j, buf[j],
                 model[j]);
    {
        int acc[P8], res[P8];
        for (int j = 0; j < P8; j++) { acc[j] = 3 * j - 5; model[j] += acc[j]; res[j] = -1; }
        UX_EXPECT(MPI_Accumulate(acc, P8, MPI_INT, next, ux_disp(&w, next, OFF_A), P8, MPI_INT, MPI_SUM,
                                 w.win), MPI_SUCCESS, "%s: accumulate", what);
        UX_EXPECT(MPI_Win_flush(next, w.win), MPI_SUCCESS, "%s: flush", what);
        UX_EXPECT(MPI_Get_accumulate(NULL, 0, MPI_INT, res, P8, MPI_INT, next, ux_disp(&w, next, OFF_A), P8,
                                     MPI_INT, MPI_NO_OP, w.win), MPI_SUCCESS, "%s: get_accumulate", what);
        UX_EXPECT(MPI_Win_flush(next, w.win), MPI_SUCCESS, "%s: flush", what);
        for (int j = 0; j < P8; j++)
            TU_CHECK(res[j] == model[j], "%s: get_accumulate after AM+accumulate: A[%d] = %d, expected %d",
                     what, j, res[j], model[j]);
        /* and an AM sees the accumulate */
        am_in(in, 7, 1);
        UX_EXPECT(am(&w, in, out, 1, NULL), MPI_SUCCESS, "%s: AM after accumulate+flush", what);
    }
    UX_EXPECT(MPI_Win_unlock(next, w.win), MPI_SUCCESS, "%s: unlock", what);
    am_check(in, out, 1, what);
    MPI_Barrier(MPI_COMM_WORLD);
    target_check_a(&w, what);

    TU_MPI(MPIX_Am_win_op_deregister(op, w.win));
    ux_win_free(&w);
}

int main(int argc, char **argv)
{
    tu_am_args(argc, argv);
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &nprocs);
    next = (rank + 1) % nprocs;
    prev = (rank + nprocs - 1) % nprocs;
    tu_watchdog("am_mix", (unsigned) tu_opt_long(argc, argv, "--timeout", 60));
    TU_MPI(MPIX_Am_op_create(readadd_fn, NULL, &op));
    for (int f = 0; f < UX_NFLAVORS; f++) {
        if (!ux_flavor_enabled(f)) continue;
        run(f, 0);
        run(f, 1);
    }
    TU_MPI(MPIX_Am_op_free(&op));
    int rc = tu_finish("am_mix");
    MPI_Finalize();
    return rc;
}
