/* dyn_adjacent: RMA across the boundary of regions attached back to back to
 * a dynamic window (issue 17 item 3).  Contiguous target memory that is
 * attached must be reachable in one operation, however it was attached.
 *
 * Every rank mallocs one buffer and attaches it to an MPI_Win_create_dynamic
 * window as adjacent regions, with separate MPI_Win_attach calls: 2 regions
 * of 64 KiB, or 3 regions of 32 KiB; in address order or in reverse address
 * order.  Each layout is run on a window created with no info and on one
 * created with info coll_attach=true (MPICH's hint, which users pass).  Each
 * rank then targets the next rank, in a lock(shared) epoch, with one
 * operation of 9,216 elements centred on the middle of the buffer (so it
 * starts in the first region and ends in the second, or crosses all three):
 *   put (int64), get (int64), accumulate MPI_SUM (int, double),
 *   get_accumulate MPI_SUM (int64, double), rput (int), rget (double),
 *   raccumulate MPI_SUM (int64), each request completed with MPI_Wait;
 *   a vector target type (2304 blocks of 3 elements, stride 4: spans 9,215
 *   elements) with put (double), accumulate MPI_SUM (int), get (int64) and
 *   get_accumulate MPI_SUM (int).
 * Checks: every call returns MPI_SUCCESS; after the epoch the target checks
 * every element of its whole buffer (the addressed ones hold the put or
 * summed values, all others their initial values); the origin checks the
 * fetched values of get / get_accumulate element by element.
 * Then every rank detaches one region (the second of 2, the middle of 3) and
 * the origin, with MPI_ERRORS_RETURN on the window, tries a put, a get and
 * an accumulate across the hole: each must fail with MPI_ERR_RMA_RANGE
 * (returned by the call or, at the latest, by the MPI_Win_flush after it).
 * The window stays usable: a put ending at the last byte of the first region
 * succeeds and reads back, the epoch closes with MPI_SUCCESS, and the target
 * finds its still-attached memory unchanged except for that put.
 * Stock components (Open MPI 4.1.4): osc/rdma fails every operation across
 * the boundary with MPI_ERR_RMA_RANGE; osc/ucx crashes in ucp_ep_rkey_unpack
 * (posix rkey) at the first put under UCX's shared-memory transports; under
 * UCX_TLS=tcp,self it passes the operations across the boundary, but the
 * accesses across the detached region succeed and write into the attached
 * memory, and it crashes in MPI_Win_free after the 3-region layout. */
#include "testutil.h"
#include <stdint.h>

#define NEL 9216          /* elements of one operation */
#define VBL 3             /* vector: block length */
#define VSTRIDE 4         /* vector: stride */
#define VCOUNT (NEL / VSTRIDE)

static int me, nprocs, next, prev;

enum { T_INT, T_LONG, T_DBL };
static const char *type_names[] = { "int", "int64", "double" };
static MPI_Datatype mpi_type(int t) { return T_INT == t ? MPI_INT : T_LONG == t ? MPI_INT64_T : MPI_DOUBLE; }
static size_t esize(int t) { return T_INT == t ? 4 : 8; }

static void set_el(void *buf, int t, size_t i, int64_t v)
{
    if (T_INT == t) ((int32_t *) buf)[i] = (int32_t) v;
    else if (T_LONG == t) ((int64_t *) buf)[i] = v;
    else ((double *) buf)[i] = (double) v;
}
static int64_t get_el(const void *buf, int t, size_t i)
{
    if (T_INT == t) return ((const int32_t *) buf)[i];
    if (T_LONG == t) return ((const int64_t *) buf)[i];
    return (int64_t) ((const double *) buf)[i];
}

/* Values (all exact in int32 and double). */
static int64_t v_init(int r, int ph, size_t i) { return 1 + r * 40000 + ph * 7 + (int64_t) i; }
static int64_t v_orig(int o, int ph, size_t j) { return -(1 + o * 40000 + ph * 11 + (int64_t) j); }

enum { K_PUT, K_GET, K_ACC, K_GACC, K_RPUT, K_RGET, K_RACC };
typedef struct {
    const char *name;
    int kind, type, vector;
} phase_t;
static const phase_t phases[] = {
    { "put", K_PUT, T_LONG, 0 },
    { "get", K_GET, T_LONG, 0 },
    { "accumulate(MPI_SUM)", K_ACC, T_INT, 0 },
    { "accumulate(MPI_SUM)", K_ACC, T_DBL, 0 },
    { "get_accumulate(MPI_SUM)", K_GACC, T_LONG, 0 },
    { "get_accumulate(MPI_SUM)", K_GACC, T_DBL, 0 },
    { "rput", K_RPUT, T_INT, 0 },
    { "rget", K_RGET, T_DBL, 0 },
    { "raccumulate(MPI_SUM)", K_RACC, T_LONG, 0 },
    { "put, vector target", K_PUT, T_DBL, 1 },
    { "accumulate(MPI_SUM), vector target", K_ACC, T_INT, 1 },
    { "get, vector target", K_GET, T_LONG, 1 },
    { "get_accumulate(MPI_SUM), vector target", K_GACC, T_INT, 1 },
};
#define NPHASES ((int) (sizeof(phases) / sizeof(phases[0])))

typedef struct {
    MPI_Win win;
    int nreg, reverse, coll;
    size_t R, total;       /* region bytes, buffer bytes */
    char *mem, *base;      /* malloc'd, attached start */
    MPI_Aint *addr;        /* every rank's base address */
    char how[96];
} layout_t;

/* Elements of one operation: the j-th element of the operation lands on
 * target element idx(j) (counted from the start element). */
static size_t op_elems(const phase_t *p) { return p->vector ? (size_t) VCOUNT * VBL : NEL; }
static size_t op_idx(const phase_t *p, size_t j) { return p->vector ? (j / VBL) * VSTRIDE + j % VBL : j; }
/* First target element: the NEL-element span centred on the buffer's middle. */
static size_t op_start(const layout_t *L, int t) { return (L->total / 2 - NEL * esize(t) / 2) / esize(t); }

static void fill_own(layout_t *L, int t, int ph)
{
    TU_MPI(MPI_Win_lock(MPI_LOCK_EXCLUSIVE, me, 0, L->win));
    for (size_t i = 0; i < L->total / esize(t); i++) set_el(L->base, t, i, v_init(me, ph, i));
    TU_MPI(MPI_Win_unlock(me, L->win));
}

static void run_phase(layout_t *L, int ph)
{
    const phase_t *p = &phases[ph];
    int t = p->type, rc = MPI_SUCCESS, rc2 = MPI_SUCCESS, prev_rc = MPI_SUCCESS;
    MPI_Datatype dt = mpi_type(t), tdt = dt;
    size_t n = op_elems(p), s = op_start(L, t), M = L->total / esize(t);
    void *src = malloc(n * esize(t)), *res = malloc(n * esize(t));
    MPI_Aint disp = L->addr[next] + (MPI_Aint) (s * esize(t));
    MPI_Request req = MPI_REQUEST_NULL;
    char what[200];

    snprintf(what, sizeof(what), "%s: %s %s of %zu elements", L->how, p->name, type_names[t], n);
    if (p->vector) {
        MPI_Type_vector(VCOUNT, VBL, VSTRIDE, dt, &tdt);
        MPI_Type_commit(&tdt);
    }
    int tcount = p->vector ? 1 : (int) n;
    for (size_t j = 0; j < n; j++) {
        set_el(src, t, j, K_GET == p->kind || K_RGET == p->kind ? 0 : v_orig(me, ph, j));
        set_el(res, t, j, 0);
    }
    fill_own(L, t, ph);
    MPI_Barrier(MPI_COMM_WORLD);

    TU_MPI(MPI_Win_lock(MPI_LOCK_SHARED, next, 0, L->win));
    switch (p->kind) {
    case K_PUT: rc = MPI_Put(src, (int) n, dt, next, disp, tcount, tdt, L->win); break;
    case K_GET: rc = MPI_Get(res, (int) n, dt, next, disp, tcount, tdt, L->win); break;
    case K_ACC: rc = MPI_Accumulate(src, (int) n, dt, next, disp, tcount, tdt, MPI_SUM, L->win); break;
    case K_GACC:
        rc = MPI_Get_accumulate(src, (int) n, dt, res, (int) n, dt, next, disp, tcount, tdt, MPI_SUM,
                                L->win);
        break;
    case K_RPUT: rc = MPI_Rput(src, (int) n, dt, next, disp, tcount, tdt, L->win, &req); break;
    case K_RGET: rc = MPI_Rget(res, (int) n, dt, next, disp, tcount, tdt, L->win, &req); break;
    case K_RACC:
        rc = MPI_Raccumulate(src, (int) n, dt, next, disp, tcount, tdt, MPI_SUM, L->win, &req);
        break;
    }
    if (MPI_SUCCESS == rc && MPI_REQUEST_NULL != req) rc2 = MPI_Wait(&req, MPI_STATUS_IGNORE);
    {
        int urc = MPI_Win_unlock(next, L->win);
        if (MPI_SUCCESS == rc2) rc2 = urc;
    }
    TU_CHECK(MPI_SUCCESS == rc, "%s: the call returned %s", what, tu_err_class_name(tu_err_class(rc)));
    TU_CHECK(MPI_SUCCESS == rc2, "%s: MPI_Wait / MPI_Win_unlock returned %s", what,
             tu_err_class_name(tu_err_class(rc2)));
    if (MPI_SUCCESS == rc && MPI_SUCCESS == rc2 &&
        (K_GET == p->kind || K_RGET == p->kind || K_GACC == p->kind)) {
        int bad = 0;
        size_t first = 0;
        for (size_t j = 0; j < n; j++) {
            if (get_el(res, t, j) != v_init(next, ph, s + op_idx(p, j)) && !bad++) first = j;
        }
        TU_CHECK(0 == bad, "%s: %d fetched values wrong (first: element %zu = %lld, expected %lld)",
                 what, bad, first, (long long) get_el(res, t, first),
                 (long long) v_init(next, ph, s + op_idx(p, first)));
    }
    /* the target checks its whole buffer, unless its origin's call failed */
    rc = (MPI_SUCCESS == rc) ? rc2 : rc;
    MPI_Sendrecv(&rc, 1, MPI_INT, next, 7, &prev_rc, 1, MPI_INT, prev, 7, MPI_COMM_WORLD,
                 MPI_STATUS_IGNORE);
    MPI_Barrier(MPI_COMM_WORLD);
    if (MPI_SUCCESS == prev_rc) {
        char *hit = calloc(M, 1);
        int bad = 0;
        size_t first = 0;
        int64_t exp_first = 0;
        for (size_t j = 0; j < n; j++) hit[s + op_idx(p, j)] = 1;
        TU_MPI(MPI_Win_lock(MPI_LOCK_EXCLUSIVE, me, 0, L->win));
        for (size_t i = 0, j = 0; i < M; i++) {
            int64_t exp = v_init(me, ph, i);
            if (hit[i]) {
                if (K_PUT == p->kind || K_RPUT == p->kind) exp = v_orig(prev, ph, j);
                else if (K_ACC == p->kind || K_GACC == p->kind || K_RACC == p->kind) exp += v_orig(prev, ph, j);
                j++;   /* hit[] is in op order: op_idx is increasing */
            }
            if (get_el(L->base, t, i) != exp && !bad++) { first = i; exp_first = exp; }
        }
        TU_MPI(MPI_Win_unlock(me, L->win));
        TU_CHECK(0 == bad, "%s from rank %d: the target has %d wrong elements (first: element %zu of "
                 "the buffer = %lld, expected %lld)", what, prev, bad, first,
                 (long long) get_el(L->base, t, first), (long long) exp_first);
        free(hit);
    }
    MPI_Barrier(MPI_COMM_WORLD);
    if (p->vector) MPI_Type_free(&tdt);
    free(src);
    free(res);
}

/* Class of the op's error, or of the flush after it if the op returned success. */
static int across_hole(layout_t *L, int kind, const char *name)
{
    size_t n = NEL, s = op_start(L, T_LONG);
    int64_t *buf = calloc(n, sizeof(int64_t));
    MPI_Aint disp = L->addr[next] + (MPI_Aint) (s * 8);
    int rc = MPI_SUCCESS, frc, where = 0;
    switch (kind) {
    case K_PUT: rc = MPI_Put(buf, (int) n, MPI_INT64_T, next, disp, (int) n, MPI_INT64_T, L->win); break;
    case K_GET: rc = MPI_Get(buf, (int) n, MPI_INT64_T, next, disp, (int) n, MPI_INT64_T, L->win); break;
    case K_ACC:
        rc = MPI_Accumulate(buf, (int) n, MPI_INT64_T, next, disp, (int) n, MPI_INT64_T, MPI_SUM, L->win);
        break;
    }
    frc = MPI_Win_flush(next, L->win);
    if (MPI_SUCCESS == rc) { rc = frc; where = 1; }
    TU_CHECK(MPI_ERR_RMA_RANGE == tu_err_class(rc),
             "%s: %s across the detached region: %s returned %s, expected MPI_ERR_RMA_RANGE", L->how,
             name, where ? "the MPI_Win_flush after it" : "the call",
             tu_err_class_name(tu_err_class(rc)));
    free(buf);
    return tu_err_class(rc);
}

static void hole(layout_t *L)
{
    const int ph = NPHASES;     /* values of this part */
    size_t hole_reg = 1, M = L->total / 8;
    int64_t v[100], back[100];
    size_t first_el = L->R / 8 - 100;   /* the last 100 int64 of region 0 */

    fill_own(L, T_LONG, ph);
    MPI_Barrier(MPI_COMM_WORLD);
    TU_MPI(MPI_Win_detach(L->win, L->base + hole_reg * L->R));
    MPI_Barrier(MPI_COMM_WORLD);

    TU_MPI(MPI_Win_lock(MPI_LOCK_SHARED, next, 0, L->win));
    across_hole(L, K_PUT, "put");
    across_hole(L, K_GET, "get");
    across_hole(L, K_ACC, "accumulate(MPI_SUM)");
    for (int j = 0; j < 100; j++) { v[j] = v_orig(me, ph, j); back[j] = 0; }
    int rc = MPI_Put(v, 100, MPI_INT64_T, next, L->addr[next] + (MPI_Aint) (first_el * 8), 100,
                     MPI_INT64_T, L->win);
    TU_CHECK(MPI_SUCCESS == rc, "%s: after the failed calls, a put to the end of region 0 returned %s",
             L->how, tu_err_class_name(tu_err_class(rc)));
    TU_CHECK(MPI_SUCCESS == (rc = MPI_Win_flush(next, L->win)), "%s: flush after the put: %s", L->how,
             tu_err_class_name(tu_err_class(rc)));
    rc = MPI_Get(back, 100, MPI_INT64_T, next, L->addr[next] + (MPI_Aint) (first_el * 8), 100,
                 MPI_INT64_T, L->win);
    TU_CHECK(MPI_SUCCESS == rc, "%s: get back: %s", L->how, tu_err_class_name(tu_err_class(rc)));
    rc = MPI_Win_unlock(next, L->win);
    TU_CHECK(MPI_SUCCESS == rc, "%s: MPI_Win_unlock after the failed calls returned %s", L->how,
             tu_err_class_name(tu_err_class(rc)));
    TU_CHECK(0 == memcmp(v, back, sizeof(v)), "%s: the put to the end of region 0 does not read back",
             L->how);
    MPI_Barrier(MPI_COMM_WORLD);

    int bad = 0;
    size_t first = 0;
    TU_MPI(MPI_Win_lock(MPI_LOCK_EXCLUSIVE, me, 0, L->win));
    for (size_t i = 0; i < M; i++) {
        if (i / (L->R / 8) == hole_reg) continue;   /* not attached: not checked */
        int64_t exp = (i >= first_el && i < first_el + 100) ? v_orig(prev, ph, i - first_el)
                                                            : v_init(me, ph, i);
        if (((int64_t *) L->base)[i] != exp && !bad++) first = i;
    }
    TU_MPI(MPI_Win_unlock(me, L->win));
    TU_CHECK(0 == bad, "%s: after the calls across the hole, %d attached elements are wrong (first: "
             "%zu = %lld)", L->how, bad, first, (long long) ((int64_t *) L->base)[first]);
    TU_MPI(MPI_Win_attach(L->win, L->base + hole_reg * L->R, L->R));   /* for the common cleanup */
    MPI_Barrier(MPI_COMM_WORLD);
}

static void one_layout(int nreg, int reverse, int coll)
{
    layout_t L;
    MPI_Info info = coll ? tu_info_new("coll_attach", "true", NULL) : MPI_INFO_NULL;
    MPI_Aint mine;

    memset(&L, 0, sizeof(L));
    L.nreg = nreg; L.reverse = reverse; L.coll = coll;
    L.R = 2 == nreg ? 65536 : 32768;
    L.total = nreg * L.R;
    L.mem = malloc(L.total + 64);
    L.base = L.mem + 8;          /* region boundaries not page aligned */
    snprintf(L.how, sizeof(L.how), "%d regions attached %s, info %s", nreg,
             reverse ? "in reverse address order" : "in address order",
             coll ? "coll_attach=true" : "none");
    TU_MPI(MPI_Win_create_dynamic(info, MPI_COMM_WORLD, &L.win));
    if (MPI_INFO_NULL != info) MPI_Info_free(&info);
    MPI_Win_set_errhandler(L.win, MPI_ERRORS_RETURN);
    for (int k = 0; k < nreg; k++) {
        int reg = reverse ? nreg - 1 - k : k;
        TU_MPI(MPI_Win_attach(L.win, L.base + reg * L.R, L.R));
    }
    MPI_Get_address(L.base, &mine);
    L.addr = malloc(nprocs * sizeof(MPI_Aint));
    MPI_Allgather(&mine, 1, MPI_AINT, L.addr, 1, MPI_AINT, MPI_COMM_WORLD);
    MPI_Barrier(MPI_COMM_WORLD);

    for (int ph = 0; ph < NPHASES; ph++) {
        tu_where = phases[ph].name;
        run_phase(&L, ph);
    }
    tu_where = "detached region";
    hole(&L);

    for (int k = 0; k < nreg; k++) TU_MPI(MPI_Win_detach(L.win, L.base + k * L.R));
    TU_MPI(MPI_Win_free(&L.win));
    free(L.addr);
    free(L.mem);
}

int main(int argc, char **argv)
{
    tu_init_ring(&argc, &argv, &me, &nprocs, &next, &prev);
    tu_watchdog("dyn_adjacent", 100);
    for (int coll = 0; coll < 2; coll++)
        for (int nreg = 2; nreg <= 3; nreg++)
            for (int reverse = 0; reverse < 2; reverse++) one_layout(nreg, reverse, coll);
    int rc = tu_finish("dyn_adjacent");
    MPI_Finalize();
    return rc;
}
