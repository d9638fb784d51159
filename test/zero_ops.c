/* zero_ops: RMA operations that move nothing (issue 17 item 4).
 *
 * Part 1, zero-size operations.  On every window flavor (TU_FLAVORS; all
 * four when unset) and in every epoch kind (lock exclusive, lock shared,
 * lock_all, fence, post/start/complete/wait), each rank targets itself and
 * the next rank with
 *   put, get, accumulate (MPI_SUM, MPI_REPLACE, MPI_MAX), get_accumulate
 *   (MPI_SUM, MPI_REPLACE, MPI_NO_OP), rput, rget, raccumulate (MPI_SUM,
 *   MPI_REPLACE), rget_accumulate (MPI_SUM, MPI_NO_OP); requests are
 *   completed with MPI_Wait inside the epoch,
 * with NULL origin and result buffers and each of these (committed) types:
 *   MPI_INT with count 0; MPI_Type_contiguous(0, MPI_INT); a struct with 0
 *   blocks; MPI_Type_indexed with 0 blocks (count 2); an indexed type of 3
 *   blocks of length 0; MPI_Type_vector(0, ...); an hvector of 4 blocks of
 *   length 0; contiguous(0) resized to extent 64 (count 4); origin MPI_INT
 *   count 0 with target contiguous(0); and, for put / get / rput / rget
 *   only, origin contiguous(0) of MPI_DOUBLE with target MPI_INT count 0
 *   (for accumulates that pair is erroneous: different predefined types),
 * at displacement 0 and at a displacement far past the end of the target's
 * window (past the attached region on dynamic windows): MPI says nothing
 * moves, so range does not matter.  Every call (and MPI_Wait, and the epoch's
 * closing call) must return MPI_SUCCESS (the request-based calls in fence and
 * PSCW epochs may instead fail with MPI_ERR_RMA_SYNC: MPI allows them only in
 * passive target epochs; osc/ucxx accepts them), except where Open MPI 4.1's C
 * binding rejects the call before the component sees it: accumulate,
 * get_accumulate, raccumulate, rget_accumulate with an op other than
 * MPI_REPLACE / MPI_NO_OP and a type not built from one predefined type
 * (the struct with 0 blocks) return MPI_ERR_ARG (ompi/mpi/c/accumulate.c:
 * ompi_datatype_get_single_predefined_type_from_args gives NULL).  Every
 * rank's window memory must be unchanged after each epoch.
 *
 * Part 2, MPI_PROC_NULL (same flavors and epochs): put, get, accumulate,
 * get_accumulate, fetch_and_op, compare_and_swap, rput, rget, raccumulate,
 * rget_accumulate of 4 ints to MPI_PROC_NULL return MPI_SUCCESS, the result
 * buffers stay untouched and MPI_Wait completes the requests; in lock and
 * lock_all epochs MPI_Win_flush(MPI_PROC_NULL) and
 * MPI_Win_flush_local(MPI_PROC_NULL) return MPI_SUCCESS (the binding passes
 * them to the component: no rank check), and MPI_Win_flush(nprocs) returns
 * MPI_ERR_RANK.  Outside any epoch, as Open MPI
 * 4.1's bindings decide: MPI_Win_lock (both types) and MPI_Win_unlock with
 * MPI_PROC_NULL fail with MPI_ERR_RANK; a put to MPI_PROC_NULL returns
 * MPI_SUCCESS (the binding returns before the component checks the epoch);
 * afterwards the window still works (a put/get round trip).
 *
 * "--no-flush-null" leaves out the MPI_Win_flush / flush_local calls with
 * MPI_PROC_NULL (stock osc/ucx and osc/rdma of Open MPI 4.1.4 crash in them).
 * Rank 0 prints a summary of the failing (operation, type, displacement)
 * combinations with the error class seen.
 * Stock components (Open MPI 4.1.4): osc/ucx and osc/rdma crash (SIGSEGV) in
 * MPI_Win_flush(MPI_PROC_NULL); with --no-flush-null, osc/ucx passes (it
 * checks no ranges at all), osc/rdma fails zero-size derived types at the
 * out-of-range displacement with MPI_ERR_RMA_RANGE (every flavor) and
 * accumulate(REPLACE) with the struct of 0 blocks with MPI_ERR_TYPE;
 * osc/sm (TU_FLAVORS=shared) passes. */
#include "testutil.h"
#include <stdint.h>

#define WIN_INTS 64
#define NPAT(r, i) (0x5000 + 100 * (r) + (i))

static int me, nprocs, next, prev, flush_null = 1;

/* ---- zero-size types ----
 * Each case: an origin type and count, and a target type and count (the
 * result buffer of get_accumulate uses the origin's). */
enum { Z_COUNT0, Z_CONTIG0, Z_STRUCT0, Z_INDEXED0, Z_INDEXED_EMPTY, Z_VECTOR0, Z_HVECTOR_EMPTY,
       Z_RESIZED, Z_MIX_SAME, Z_MIX_OTHER, Z_N };
static const char *z_names[] = { "MPI_INT count 0", "contiguous(0)", "struct of 0 blocks",
                                 "indexed of 0 blocks", "indexed of 3 empty blocks", "vector(0)",
                                 "hvector of 4 empty blocks", "contiguous(0) resized to 64 B",
                                 "MPI_INT count 0 -> contiguous(0) of MPI_INT",
                                 "contiguous(0) of MPI_DOUBLE -> MPI_INT count 0" };
static MPI_Datatype z_otype[Z_N], z_ttype[Z_N], z_made[Z_N];
static int z_ocount[Z_N], z_tcount[Z_N];

static int z_nmade;

static void z_set(int z, MPI_Datatype ot, int oc, MPI_Datatype tt, int tc)
{
    z_otype[z] = ot; z_ocount[z] = oc;
    z_ttype[z] = tt; z_tcount[z] = tc;
}

/* Commits a new type, checks it has size 0, keeps it for freeing. */
static MPI_Datatype made(MPI_Datatype t)
{
    int size = -1;
    TU_MPI(MPI_Type_commit(&t));
    MPI_Type_size(t, &size);
    TU_CHECK(0 == size, "zero-size type %d has size %d", z_nmade, size);
    z_made[z_nmade++] = t;
    return t;
}

static void make_types(void)
{
    int bl[3] = { 0, 0, 0 }, disp[3] = { 0, 5, 10 };
    MPI_Aint adisp[1] = { 0 };
    MPI_Datatype types[1] = { MPI_INT }, c0, t;
    z_set(Z_COUNT0, MPI_INT, 0, MPI_INT, 0);
    TU_MPI(MPI_Type_contiguous(0, MPI_INT, &t));
    t = made(t);
    z_set(Z_CONTIG0, t, 1, t, 1);
    z_set(Z_MIX_SAME, MPI_INT, 0, t, 1);
    TU_MPI(MPI_Type_create_struct(0, bl, adisp, types, &t));
    t = made(t);
    z_set(Z_STRUCT0, t, 1, t, 1);
    TU_MPI(MPI_Type_indexed(0, bl, disp, MPI_INT, &t));
    t = made(t);
    z_set(Z_INDEXED0, t, 2, t, 2);
    TU_MPI(MPI_Type_indexed(3, bl, disp, MPI_INT, &t));
    t = made(t);
    z_set(Z_INDEXED_EMPTY, t, 1, t, 1);
    TU_MPI(MPI_Type_vector(0, 1, 2, MPI_INT, &t));
    t = made(t);
    z_set(Z_VECTOR0, t, 1, t, 1);
    TU_MPI(MPI_Type_create_hvector(4, 0, 16, MPI_INT, &t));
    t = made(t);
    z_set(Z_HVECTOR_EMPTY, t, 1, t, 1);
    TU_MPI(MPI_Type_contiguous(0, MPI_INT, &c0));
    TU_MPI(MPI_Type_create_resized(c0, 0, 64, &t));
    MPI_Type_free(&c0);
    t = made(t);
    z_set(Z_RESIZED, t, 4, t, 4);
    TU_MPI(MPI_Type_contiguous(0, MPI_DOUBLE, &t));
    t = made(t);
    z_set(Z_MIX_OTHER, t, 1, MPI_INT, 0);
}

static void free_types(void)
{
    for (int i = 0; i < z_nmade; i++) MPI_Type_free(&z_made[i]);
}

/* ---- operations ---- */
enum { O_PUT, O_GET, O_ACC_SUM, O_ACC_REPLACE, O_ACC_MAX, O_GACC_SUM, O_GACC_REPLACE, O_GACC_NOOP,
       O_RPUT, O_RGET, O_RACC_SUM, O_RACC_REPLACE, O_RGACC_SUM, O_RGACC_NOOP, O_N };
static const char *o_names[] = { "put", "get", "accumulate(SUM)", "accumulate(REPLACE)",
                                 "accumulate(MAX)", "get_accumulate(SUM)", "get_accumulate(REPLACE)",
                                 "get_accumulate(NO_OP)", "rput", "rget", "raccumulate(SUM)",
                                 "raccumulate(REPLACE)", "rget_accumulate(SUM)",
                                 "rget_accumulate(NO_OP)" };
static MPI_Op o_op(int o)
{
    switch (o) {
    case O_ACC_REPLACE: case O_GACC_REPLACE: case O_RACC_REPLACE: return MPI_REPLACE;
    case O_ACC_MAX: return MPI_MAX;
    case O_GACC_NOOP: case O_RGACC_NOOP: return MPI_NO_OP;
    default: return MPI_SUM;
    }
}
/* Open MPI 4.1's binding: MPI_ERR_ARG for an accumulate-type call whose op
 * is not REPLACE / NO_OP unless origin and target types are built from the
 * same single predefined type (the struct of 0 blocks is built from none). */
static int expected_class(int o, int z)
{
    int acc = (o >= O_ACC_SUM && o <= O_GACC_NOOP) || o >= O_RACC_SUM;
    MPI_Op op = o_op(o);
    if (acc && Z_STRUCT0 == z && MPI_REPLACE != op && MPI_NO_OP != op)
        return MPI_ERR_ARG;
    return MPI_SUCCESS;
}

static int do_op(int o, int z, int target, MPI_Aint disp, MPI_Win win, MPI_Request *req)
{
    MPI_Datatype od = z_otype[z], td = z_ttype[z];
    int oc = z_ocount[z], tc = z_tcount[z];
    *req = MPI_REQUEST_NULL;
    switch (o) {
    case O_PUT: return MPI_Put(NULL, oc, od, target, disp, tc, td, win);
    case O_GET: return MPI_Get(NULL, oc, od, target, disp, tc, td, win);
    case O_ACC_SUM: case O_ACC_REPLACE: case O_ACC_MAX:
        return MPI_Accumulate(NULL, oc, od, target, disp, tc, td, o_op(o), win);
    case O_GACC_SUM: case O_GACC_REPLACE: case O_GACC_NOOP:
        return MPI_Get_accumulate(NULL, oc, od, NULL, oc, od, target, disp, tc, td, o_op(o), win);
    case O_RPUT: return MPI_Rput(NULL, oc, od, target, disp, tc, td, win, req);
    case O_RGET: return MPI_Rget(NULL, oc, od, target, disp, tc, td, win, req);
    case O_RACC_SUM: case O_RACC_REPLACE:
        return MPI_Raccumulate(NULL, oc, od, target, disp, tc, td, o_op(o), win, req);
    case O_RGACC_SUM: case O_RGACC_NOOP:
        return MPI_Rget_accumulate(NULL, oc, od, NULL, oc, od, target, disp, tc, td, o_op(o), win, req);
    }
    return MPI_ERR_INTERN;
}

/* failures per (op, type, disp): count, flavors and epochs seen, first class */
static int fail_n[O_N][Z_N][2], fail_cls[O_N][Z_N][2], fail_fl[O_N][Z_N][2], fail_ep[O_N][Z_N][2];
static int total_calls;

static const char *cls_str(int cls)
{
    return MPI_ERR_TYPE == cls ? "MPI_ERR_TYPE" : MPI_ERR_COUNT == cls ? "MPI_ERR_COUNT"
                                                                       : tu_err_class_name(cls);
}

static void set_pattern(tu_win_t *w)
{
    int *mem = w->base;
    TU_MPI(MPI_Win_lock(MPI_LOCK_EXCLUSIVE, me, 0, w->win));
    for (int i = 0; i < WIN_INTS; i++) mem[i] = NPAT(me, i);
    TU_MPI(MPI_Win_unlock(me, w->win));
}

static void check_pattern(tu_win_t *w, const char *what)
{
    int *mem = w->base, bad = 0, first = -1;
    MPI_Barrier(MPI_COMM_WORLD);
    TU_MPI(MPI_Win_lock(MPI_LOCK_EXCLUSIVE, me, 0, w->win));
    for (int i = 0; i < WIN_INTS; i++)
        if (mem[i] != NPAT(me, i) && !bad++) first = i;
    TU_MPI(MPI_Win_unlock(me, w->win));
    TU_CHECK(0 == bad, "%s (%s): %d window ints changed (first [%d] = %d)", what,
             tu_flavor_names[w->flavor], bad, first, first >= 0 ? mem[first] : 0);
    MPI_Barrier(MPI_COMM_WORLD);
}

/* Sorted distinct {a, b}; returns how many. */
static int pair(int a, int b, int *out)
{
    if (a == b) { out[0] = a; return 1; }
    out[0] = a < b ? a : b; out[1] = a < b ? b : a;
    return 2;
}

static void zero_size(tu_win_t *w, int ep)
{
    int targets[2], origins[2], nt = pair(me, next, targets), no = pair(me, prev, origins), rc;
    char what[160];

    snprintf(what, sizeof(what), "zero-size operations in %s", tu_epoch_names[ep]);
    set_pattern(w);
    MPI_Barrier(MPI_COMM_WORLD);
    rc = tu_am_epoch_open(ep, w->win, targets, nt, origins, no);
    TU_CHECK(MPI_SUCCESS == rc, "%s (%s): opening the epoch: %s", what, tu_flavor_names[w->flavor],
             tu_err_class_name(tu_err_class(rc)));
    for (int k = 0; k < nt; k++) {
        int t = targets[k];
        for (int z = 0; z < Z_N; z++)
            for (int d = 0; d < 2; d++) {
                MPI_Aint disp;
                if (0 == d) disp = tu_disp(w, t, 0);
                else if (TU_DYNAMIC == w->flavor) disp = tu_disp(w, t, 0) + (1 << 20);
                else disp = WIN_INTS * 4 + 1000;
                for (int o = 0; o < O_N; o++) {
                    MPI_Request req;
                    /* accumulate with origin and target types built from
                     * different predefined types is erroneous (MPI-4.1 12.3.4) */
                    if (Z_MIX_OTHER == z && !(O_PUT == o || O_GET == o || O_RPUT == o || O_RGET == o))
                        continue;
                    int exp = expected_class(o, z), cls;
                    rc = do_op(o, z, t, disp, w->win, &req);
                    cls = tu_err_class(rc);
                    if (MPI_SUCCESS == rc && MPI_REQUEST_NULL != req) {
                        rc = MPI_Wait(&req, MPI_STATUS_IGNORE);
                        cls = tu_err_class(rc);
                    }
                    total_calls++;
                    /* request-based operations need a passive target epoch
                     * (MPI-4.1 12.3.5): in fence / PSCW epochs the call may
                     * also fail with MPI_ERR_RMA_SYNC */
                    if (o >= O_RPUT && (TU_EP_FENCE == ep || TU_EP_PSCW == ep) &&
                        MPI_ERR_RMA_SYNC == cls && MPI_SUCCESS == exp)
                        cls = exp;
                    if (cls != exp) {
                        if (!fail_n[o][z][d]++) fail_cls[o][z][d] = cls;
                        fail_fl[o][z][d] |= 1 << w->flavor;
                        fail_ep[o][z][d] |= 1 << ep;
                        TU_CHECK(cls == exp, "%s (%s): %s, %s, displacement %s, target %s: %s, "
                                 "expected %s", what, tu_flavor_names[w->flavor], o_names[o],
                                 z_names[z], d ? "out of range" : "0", t == me ? "self" : "next",
                                 cls_str(cls), cls_str(exp));
                    }
                }
            }
    }
    rc = tu_am_epoch_close(ep, w->win, targets, nt, origins, no);
    TU_CHECK(MPI_SUCCESS == rc, "%s (%s): closing the epoch: %s", what, tu_flavor_names[w->flavor],
             tu_err_class_name(tu_err_class(rc)));
    check_pattern(w, what);
}

/* ---- MPI_PROC_NULL ---- */
static void proc_null(tu_win_t *w, int ep)
{
    int targets[1] = { next }, origins[1] = { prev }, rc;
    int src[4] = { 1, 2, 3, 4 }, res[4], cmp = 1;
    MPI_Request req;
    char what[160];
    const char *fl = tu_flavor_names[w->flavor];
    MPI_Aint disp = tu_disp(w, next, 0);   /* any displacement: nothing is addressed */

    snprintf(what, sizeof(what), "MPI_PROC_NULL in %s", tu_epoch_names[ep]);
    set_pattern(w);
    MPI_Barrier(MPI_COMM_WORLD);
    rc = tu_am_epoch_open(ep, w->win, targets, 1, origins, 1);
    TU_CHECK(MPI_SUCCESS == rc, "%s (%s): opening the epoch: %s", what, fl,
             tu_err_class_name(tu_err_class(rc)));
    for (int i = 0; i < 4; i++) res[i] = -7;
#define PN(call, name)                                                                          \
    do {                                                                                        \
        int rc_ = (call);                                                                       \
        total_calls++;                                                                          \
        TU_CHECK(MPI_SUCCESS == rc_, "%s (%s): %s to MPI_PROC_NULL returned %s", what, fl, name, \
                 tu_err_class_name(tu_err_class(rc_)));                                         \
    } while (0)
#define PNR(call, name)                                                                         \
    do {                                                                                        \
        req = MPI_REQUEST_NULL;                                                                 \
        PN(call, name);                                                                         \
        if (MPI_REQUEST_NULL != req) {                                                          \
            int wrc_ = MPI_Wait(&req, MPI_STATUS_IGNORE);                                       \
            TU_CHECK(MPI_SUCCESS == wrc_ && MPI_REQUEST_NULL == req,                            \
                     "%s (%s): MPI_Wait on the %s request: %s", what, fl, name,                 \
                     tu_err_class_name(tu_err_class(wrc_)));                                    \
        }                                                                                       \
    } while (0)
    PN(MPI_Put(src, 4, MPI_INT, MPI_PROC_NULL, disp, 4, MPI_INT, w->win), "put");
    PN(MPI_Get(res, 4, MPI_INT, MPI_PROC_NULL, disp, 4, MPI_INT, w->win), "get");
    PN(MPI_Accumulate(src, 4, MPI_INT, MPI_PROC_NULL, disp, 4, MPI_INT, MPI_SUM, w->win), "accumulate");
    PN(MPI_Get_accumulate(src, 4, MPI_INT, res, 4, MPI_INT, MPI_PROC_NULL, disp, 4, MPI_INT, MPI_SUM,
                          w->win), "get_accumulate");
    PN(MPI_Fetch_and_op(src, res, MPI_INT, MPI_PROC_NULL, disp, MPI_SUM, w->win), "fetch_and_op");
    PN(MPI_Compare_and_swap(src, &cmp, res, MPI_INT, MPI_PROC_NULL, disp, w->win), "compare_and_swap");
    PNR(MPI_Rput(src, 4, MPI_INT, MPI_PROC_NULL, disp, 4, MPI_INT, w->win, &req), "rput");
    PNR(MPI_Rget(res, 4, MPI_INT, MPI_PROC_NULL, disp, 4, MPI_INT, w->win, &req), "rget");
    PNR(MPI_Raccumulate(src, 4, MPI_INT, MPI_PROC_NULL, disp, 4, MPI_INT, MPI_SUM, w->win, &req),
        "raccumulate");
    PNR(MPI_Rget_accumulate(src, 4, MPI_INT, res, 4, MPI_INT, MPI_PROC_NULL, disp, 4, MPI_INT, MPI_SUM,
                            w->win, &req), "rget_accumulate");
    if (flush_null && (TU_EP_LOCK_EXCL == ep || TU_EP_LOCK_SHARED == ep || TU_EP_LOCK_ALL == ep)) {
        PN(MPI_Win_flush(MPI_PROC_NULL, w->win), "MPI_Win_flush");
        PN(MPI_Win_flush_local(MPI_PROC_NULL, w->win), "MPI_Win_flush_local");
        /* the binding passes any rank: one outside the group is MPI_ERR_RANK */
        rc = MPI_Win_flush(nprocs, w->win);
        TU_CHECK(MPI_ERR_RANK == tu_err_class(rc), "%s (%s): MPI_Win_flush(%d) returned %s, "
                 "expected MPI_ERR_RANK", what, fl, nprocs, tu_err_class_name(tu_err_class(rc)));
    }
    rc = tu_am_epoch_close(ep, w->win, targets, 1, origins, 1);
    TU_CHECK(MPI_SUCCESS == rc, "%s (%s): closing the epoch: %s", what, fl,
             tu_err_class_name(tu_err_class(rc)));
    TU_CHECK(-7 == res[0] && -7 == res[1] && -7 == res[2] && -7 == res[3],
             "%s (%s): a result buffer was written: %d %d %d %d", what, fl, res[0], res[1], res[2],
             res[3]);
    check_pattern(w, what);
}

/* Outside any epoch, where Open MPI's bindings decide. */
static void proc_null_bindings(tu_win_t *w)
{
    const char *fl = tu_flavor_names[w->flavor];
    int src = 5, rc, got = -1;
    rc = MPI_Win_lock(MPI_LOCK_EXCLUSIVE, MPI_PROC_NULL, 0, w->win);
    TU_CHECK(MPI_ERR_RANK == tu_err_class(rc), "(%s) MPI_Win_lock(EXCLUSIVE, MPI_PROC_NULL): %s, "
             "expected MPI_ERR_RANK (Open MPI's binding)", fl, tu_err_class_name(tu_err_class(rc)));
    rc = MPI_Win_lock(MPI_LOCK_SHARED, MPI_PROC_NULL, 0, w->win);
    TU_CHECK(MPI_ERR_RANK == tu_err_class(rc), "(%s) MPI_Win_lock(SHARED, MPI_PROC_NULL): %s, "
             "expected MPI_ERR_RANK (Open MPI's binding)", fl, tu_err_class_name(tu_err_class(rc)));
    rc = MPI_Win_unlock(MPI_PROC_NULL, w->win);
    TU_CHECK(MPI_ERR_RANK == tu_err_class(rc), "(%s) MPI_Win_unlock(MPI_PROC_NULL): %s, "
             "expected MPI_ERR_RANK (Open MPI's binding)", fl, tu_err_class_name(tu_err_class(rc)));
    rc = MPI_Put(&src, 1, MPI_INT, MPI_PROC_NULL, 0, 1, MPI_INT, w->win);
    TU_CHECK(MPI_SUCCESS == rc, "(%s) MPI_Put to MPI_PROC_NULL outside any epoch: %s, expected "
             "MPI_SUCCESS (Open MPI's binding)", fl, tu_err_class_name(tu_err_class(rc)));
    total_calls += 4;
    /* still usable: put to next, get it back */
    MPI_Barrier(MPI_COMM_WORLD);
    src = 1000 + me;
    TU_MPI(MPI_Win_lock(MPI_LOCK_EXCLUSIVE, next, 0, w->win));
    TU_MPI(MPI_Put(&src, 1, MPI_INT, next, tu_disp(w, next, me), 1, MPI_INT, w->win));
    TU_MPI(MPI_Win_flush(next, w->win));
    TU_MPI(MPI_Get(&got, 1, MPI_INT, next, tu_disp(w, next, me), 1, MPI_INT, w->win));
    TU_MPI(MPI_Win_unlock(next, w->win));
    TU_CHECK(got == src, "(%s) after the MPI_PROC_NULL calls: put/get round trip gave %d", fl, got);
    MPI_Barrier(MPI_COMM_WORLD);
}


int main(int argc, char **argv)
{
    tu_init_ring(&argc, &argv, &me, &nprocs, &next, &prev);
    flush_null = !tu_opt_flag(argc, argv, "--no-flush-null");
    tu_watchdog("zero_ops", 100);
    make_types();
    for (int flavor = 0; flavor < TU_NFLAVORS_ALL; flavor++) {
        tu_win_t w;
        if (!tu_flavor_or_all(flavor)) continue;
        tu_win_create(flavor, WIN_INTS * sizeof(int), sizeof(int), MPI_INFO_NULL, MPI_COMM_WORLD, &w);
        if (MPI_WIN_NULL == w.win) {
            if (0 == me) printf("zero_ops: %s: n/a\n", tu_flavor_names[flavor]);
            continue;
        }
        for (int ep = 0; ep < TU_NEPOCHS; ep++) {
            tu_where = tu_epoch_names[ep];
            zero_size(&w, ep);
            proc_null(&w, ep);
        }
        proc_null_bindings(&w);
        tu_win_free(&w);
    }
    /* summary, rank 0's view: per type and displacement, the failing operations */
    if (0 == me) {
        int nfail = 0;
        for (int z = 0; z < Z_N; z++)
            for (int d = 0; d < 2; d++) {
                char ops[1024] = "";
                int fl = 0, ep = 0, n = 0;
                for (int o = 0; o < O_N; o++) {
                    if (!fail_n[o][z][d]) continue;
                    snprintf(ops + strlen(ops), sizeof(ops) - strlen(ops), "%s%s (%s)", n ? ", " : "",
                             o_names[o], cls_str(fail_cls[o][z][d]));
                    fl |= fail_fl[o][z][d]; ep |= fail_ep[o][z][d]; n++;
                }
                if (!n) continue;
                printf("zero_ops: FAIL %s, displacement %s: %s; flavors:", z_names[z],
                       d ? "out of range" : "0", ops);
                for (int f = 0; f < TU_NFLAVORS_ALL; f++) if (fl & (1 << f)) printf(" %s", tu_flavor_names[f]);
                printf("; epochs:");
                for (int e = 0; e < TU_NEPOCHS; e++) if (ep & (1 << e)) printf(" %s", tu_epoch_names[e]);
                printf("\n");
                nfail += n;
            }
        printf("zero_ops: %d calls checked on rank 0, %d failing (operation, type, displacement) "
               "combinations\n", total_calls, nfail);
    }
    free_types();
    int rc = tu_finish("zero_ops");
    MPI_Finalize();
    return rc;
}
