/* acc_ops: every predefined reduction op x every predefined datatype MPI-3.1
 * section 5.9.2 allows it for, through MPI_Accumulate, MPI_Raccumulate,
 * MPI_Get_accumulate, MPI_Rget_accumulate and MPI_Fetch_and_op, plus
 * MPI_Compare_and_swap for every type group it allows.
 *
 * Each (op, type) runs with count 1 and 7 (contiguous target and a vector
 * target datatype, stride 2), 21 (contiguous: the mapped path's short runs,
 * 16 bytes at a time and a tail), and count ACC_BIGCOUNT (default 1000) for a
 * representative subset of types (all types with ACC_FULL=1).
 * Values are small integers / halves so every result is exact; the expected
 * target contents and fetched values are computed locally with C arithmetic
 * on the same C type and compared element by element. Gaps of the vector
 * layout and one guard element behind every target cell and result buffer
 * must stay untouched.
 *
 * Phases (each on every window flavor):
 *   acc     MPI_Accumulate, fence epoch, every rank into one target per cell
 *   racc    MPI_Raccumulate, lock_all epoch, every rank into one target per cell
 *   gacc    MPI_Get_accumulate, lock_all + flush_all, ring (rank r -> r+1)
 *   rgacc   MPI_Rget_accumulate, lock_all + waitall, ring
 *   fop     MPI_Fetch_and_op, shared lock on the target, ring
 *   cas     MPI_Compare_and_swap (matching and non-matching compare), exclusive lock, ring
 * In the all-into-one phases MPI_REPLACE only checks that each element holds
 * one of the contributed values (the order between origins is undefined).
 *
 * Environment: ACC_BIGCOUNT (1000), ACC_FULL=1 (big count for every type),
 * ACC_PHASES (substring list, e.g. "acc,fop"; default all).
 *
 * Argument --no-direct: run with osc/ucxx's internal setting direct=0 (tu_tune) (the UCX RMA/AMO path).
 * Argument --single-intrinsic: windows with acc_single_intrinsic=true (single
 * 4/8-byte elements then take one atomic each, no exclusion; a cell is
 * accessed with one count only, as that key asks).
 */
#include "acc_types.h"

/* ---- test cases -------------------------------------------------------- */
typedef struct {
    int op, type, count, vec;
    size_t off;      /* byte offset of the target cell in every window */
    size_t span;     /* bytes of the cell incl. gaps and guard element */
    size_t ooff;     /* byte offset in the origin buffer */
    size_t roff;     /* byte offset in the result buffer */
    MPI_Datatype tdt; /* target datatype (vector or the predefined type) */
} tcase_t;

static tcase_t *cases;
static int ncases;
static size_t win_bytes, orig_bytes, res_bytes;

#define SENTINEL 0xA5
#define RSENTINEL 0x5A
#define ALIGN(x) (((x) + 63) & ~(size_t)63)

static void add_case(int op, int type, int count, int vec)
{
    tcase_t *c = &cases[ncases++];
    size_t ext = kind_size[types[type].kind];
    c->op = op; c->type = type; c->count = count; c->vec = vec;
    c->off = win_bytes;
    c->span = ((vec ? 2 * (size_t)count - 1 : (size_t)count) + 1) * ext;
    win_bytes = ALIGN(win_bytes + c->span);
    c->ooff = orig_bytes;
    orig_bytes = ALIGN(orig_bytes + (size_t)count * ext);
    c->roff = res_bytes;
    res_bytes = ALIGN(res_bytes + ((size_t)count + 1) * ext);
    if (vec) {
        TU_MPI(MPI_Type_vector(count, 1, 2, types[type].dt, &c->tdt));
        TU_MPI(MPI_Type_commit(&c->tdt));
    } else {
        c->tdt = types[type].dt;
    }
}

static void build_cases(int bigcount, int full)
{
    int t, op;
    cases = calloc((size_t)ntypes * NOPS * 6, sizeof(tcase_t));
    for (t = 0; t < ntypes; t++) {
        for (op = 0; op < NOPS; op++) {
            if (!(op_groups[op] & types[t].grp)) continue;
            add_case(op, t, 1, 0);
            if (op >= OP_CAS_MATCH) continue;
            add_case(op, t, 7, 0);
            add_case(op, t, 7, 1);
            add_case(op, t, 21, 0);
            if (full || types[t].big) {
                add_case(op, t, bigcount, 0);
                add_case(op, t, bigcount, 1);
            }
        }
    }
}

enum { F_ACC, F_RACC, F_GACC, F_RGACC, F_FOP, F_CAS, NPHASES };
static const char *phase_name[NPHASES] = { "acc", "racc", "gacc", "rgacc", "fop", "cas" };

static int case_in_phase(const tcase_t *c, int phase)
{
    int cas = c->op >= OP_CAS_MATCH;
    switch (phase) {
    case F_ACC:
    case F_RACC: return !cas && c->op != OP_NO_OP;
    case F_GACC:
    case F_RGACC: return !cas;
    case F_FOP: return !cas && 1 == c->count && !c->vec;
    case F_CAS: return cas;
    }
    return 0;
}

static int ring_phase(int phase) { return phase >= F_GACC; }

/* target of case `ci` for origin `r` */
static int case_target(int phase, int ci, int r, int nprocs)
{
    return ring_phase(phase) ? (r + 1) % nprocs : ci % nprocs;
}

static void init_cell(const tcase_t *c, char *base, int me)
{
    int kind = types[c->type].kind, j;
    size_t ext = kind_size[kind];
    int64_t a, b;
    memset(base + c->off, SENTINEL, c->span);
    for (j = 0; j < c->count; j++) {
        char *p = base + c->off + (c->vec ? 2 * (size_t)j : (size_t)j) * ext;
        if (c->op >= OP_CAS_MATCH) set_elem(kind, p, cas_init(kind, me), 0);
        else { gen(c->op, kind, 1, me, j, &a, &b); set_elem(kind, p, a, b); }
    }
}

#define DESC_FMT "%s %s %s count %d%s"
#define DESC_ARGS(phase, c, fl) phase_name[phase], op_name[(c)->op], types[(c)->type].name, \
    (c)->count, (c)->vec ? " vector" : "", tu_flavor_names[fl]


/* check the target side of case c at this rank */
static void check_target(int phase, int flavor, const tcase_t *c, const char *base, int me,
                         int nprocs, int *reported)
{
    int kind = types[c->type].kind, j, r;
    size_t ext = kind_size[kind];
    char exp[64], val[64], s1[96], s2[96];
    char *lib = NULL, *tmp = NULL;
    int64_t a, b;
    int bad = 0;
    for (j = 0; j < c->count && !bad; j++) {
        const char *p = base + c->off + (c->vec ? 2 * (size_t)j : (size_t)j) * ext;
        if (c->op >= OP_CAS_MATCH) {
            int o = (me - 1 + nprocs) % nprocs;
            set_elem(kind, exp, OP_CAS_MATCH == c->op ? cas_new(kind, me, o) : cas_init(kind, me), 0);
        } else if (OP_REPLACE == c->op && !ring_phase(phase)) {
            /* any one origin's value */
            int found = 0;
            for (r = 0; r < nprocs && !found; r++) {
                gen(c->op, kind, 0, r, j, &a, &b);
                set_elem(kind, exp, a, b);
                found = eq_elem(kind, p, exp);
            }
            if (!found) {
                TU_CHECK(0, DESC_FMT " on %s: elem %d = %s is no origin's value", DESC_ARGS(phase, c, flavor),
                         j, fmt_elem(kind, p, s1, sizeof(s1)));
                bad = 1;
            }
            continue;
        } else {
            acc_expected_elem(c->op, kind, ring_phase(phase), me, nprocs, j, exp, val);
        }
        if (!eq_elem(kind, p, exp) && c->op < OP_REPLACE) {
            if (NULL == lib) {
                lib = malloc((size_t)c->count * ext);
                tmp = malloc((size_t)c->count * ext);
                acc_expected_lib(c->op, kind, types[c->type].dt, c->count, ring_phase(phase), me, nprocs,
                                 lib, tmp);
            }
            if (eq_elem(kind, p, lib + (size_t)j * ext)) {
                lib_note(c->op, c->type, c->count);
                continue;
            }
        }
        if (!eq_elem(kind, p, exp)) {
            TU_CHECK(0, DESC_FMT " on %s: target elem %d = %s, expected %s", DESC_ARGS(phase, c, flavor), j,
                     fmt_elem(kind, p, s1, sizeof(s1)), fmt_elem(kind, exp, s2, sizeof(s2)));
            bad = 1;
        }
    }
    free(lib);
    free(tmp);
    if (c->vec) {
        for (j = 0; j + 1 < c->count && !bad; j++) {
            if (!sentinel_ok(base + c->off + (2 * (size_t)j + 1) * ext, ext, SENTINEL)) {
                TU_CHECK(0, DESC_FMT " on %s: vector gap after elem %d was written", DESC_ARGS(phase, c, flavor), j);
                bad = 1;
            }
        }
    }
    if (!bad && !sentinel_ok(base + c->off + c->span - ext, ext, SENTINEL)) {
        TU_CHECK(0, DESC_FMT " on %s: guard element behind the target cell was written",
                 DESC_ARGS(phase, c, flavor));
        bad = 1;
    }
    *reported += bad;
}

/* check the fetched values of case c (ring phases) */
static void check_result(int phase, int flavor, const tcase_t *c, const char *res, int me, int nprocs)
{
    int kind = types[c->type].kind, j, t = (me + 1) % nprocs;
    size_t ext = kind_size[kind];
    char exp[64], s1[96], s2[96];
    int64_t a, b;
    for (j = 0; j < c->count; j++) {
        const char *p = res + c->roff + (size_t)j * ext;
        if (c->op >= OP_CAS_MATCH) set_elem(kind, exp, cas_init(kind, t), 0);
        else { gen(c->op, kind, 1, t, j, &a, &b); set_elem(kind, exp, a, b); }
        if (!eq_elem(kind, p, exp)) {
            TU_CHECK(0, DESC_FMT " on %s: fetched elem %d = %s, expected %s", DESC_ARGS(phase, c, flavor), j,
                     fmt_elem(kind, p, s1, sizeof(s1)), fmt_elem(kind, exp, s2, sizeof(s2)));
            return;
        }
    }
    TU_CHECK(sentinel_ok(res + c->roff + (size_t)c->count * ext, ext, RSENTINEL),
             DESC_FMT " on %s: result buffer overrun", DESC_ARGS(phase, c, flavor));
}

static void rc_check(int rc, int phase, int flavor, const tcase_t *c, const char *what)
{
    if (MPI_SUCCESS != rc) {
        char msg[MPI_MAX_ERROR_STRING];
        int len;
        MPI_Error_string(rc, msg, &len);
        TU_CHECK(0, DESC_FMT " on %s: %s returned %s", DESC_ARGS(phase, c, flavor), what, msg);
    }
}

#define BATCH 64

static void run_phase(int phase, tu_win_t *w, char *obuf, char *rbuf, int me, int nprocs)
{
    int ci, nreq = 0, inflight = 0, reported = 0;
    MPI_Request *reqs = malloc(BATCH * sizeof(MPI_Request));
    char *base = w->base;
    double t0 = MPI_Wtime();

    /* origin values and result sentinels */
    memset(rbuf, RSENTINEL, res_bytes);
    for (ci = 0; ci < ncases; ci++) {
        const tcase_t *c = &cases[ci];
        int kind = types[c->type].kind, j;
        size_t ext = kind_size[kind];
        int64_t a, b;
        if (!case_in_phase(c, phase)) continue;
        for (j = 0; j < c->count; j++) {
            if (c->op >= OP_CAS_MATCH) {
                int t = (me + 1) % nprocs;
                /* origin buffer holds the new value, result area (before the
                 * call) is not used: compare value lives behind it in obuf */
                set_elem(kind, obuf + c->ooff, cas_new(kind, t, me), 0);
            } else {
                gen(c->op, kind, 0, me, j, &a, &b);
                set_elem(kind, obuf + c->ooff + (size_t)j * ext, a, b);
            }
        }
    }

    /* target cells */
    TU_MPI(MPI_Win_lock(MPI_LOCK_EXCLUSIVE, me, 0, w->win));
    for (ci = 0; ci < ncases; ci++)
        if (case_in_phase(&cases[ci], phase)) init_cell(&cases[ci], base, me);
    TU_MPI(MPI_Win_unlock(me, w->win));
    MPI_Barrier(MPI_COMM_WORLD);

    switch (phase) {
    case F_ACC: TU_MPI(MPI_Win_fence(MPI_MODE_NOPRECEDE, w->win)); break;
    case F_FOP: TU_MPI(MPI_Win_lock(MPI_LOCK_SHARED, (me + 1) % nprocs, 0, w->win)); break;
    case F_CAS: TU_MPI(MPI_Win_lock(MPI_LOCK_EXCLUSIVE, (me + 1) % nprocs, 0, w->win)); break;
    default: TU_MPI(MPI_Win_lock_all(0, w->win)); break;
    }

    for (ci = 0; ci < ncases; ci++) {
        const tcase_t *c = &cases[ci];
        MPI_Datatype dt = types[c->type].dt;
        int t = case_target(phase, ci, me, nprocs), rc = MPI_SUCCESS;
        int tcount = c->vec ? 1 : c->count;
        MPI_Aint disp = tu_disp(w, t, (MPI_Aint)c->off);
        char *o = obuf + c->ooff, *res = rbuf + c->roff;
        if (!case_in_phase(c, phase)) continue;
        switch (phase) {
        case F_ACC:
            rc = MPI_Accumulate(o, c->count, dt, t, disp, tcount, c->tdt, op_handle(c->op), w->win);
            rc_check(rc, phase, w->flavor, c, "MPI_Accumulate");
            break;
        case F_RACC:
            rc = MPI_Raccumulate(o, c->count, dt, t, disp, tcount, c->tdt, op_handle(c->op), w->win,
                                 &reqs[nreq]);
            rc_check(rc, phase, w->flavor, c, "MPI_Raccumulate");
            if (MPI_SUCCESS == rc) nreq++;
            break;
        case F_GACC:
            rc = MPI_Get_accumulate(o, c->count, dt, res, c->count, dt, t, disp, tcount, c->tdt,
                                    op_handle(c->op), w->win);
            rc_check(rc, phase, w->flavor, c, "MPI_Get_accumulate");
            break;
        case F_RGACC:
            rc = MPI_Rget_accumulate(o, c->count, dt, res, c->count, dt, t, disp, tcount, c->tdt,
                                     op_handle(c->op), w->win, &reqs[nreq]);
            rc_check(rc, phase, w->flavor, c, "MPI_Rget_accumulate");
            if (MPI_SUCCESS == rc) nreq++;
            break;
        case F_FOP:
            rc = MPI_Fetch_and_op(o, res, dt, t, disp, op_handle(c->op), w->win);
            rc_check(rc, phase, w->flavor, c, "MPI_Fetch_and_op");
            break;
        case F_CAS: {
            int kind = types[c->type].kind;
            char cmp[64];
            set_elem(kind, cmp, cas_cmp(kind, t, OP_CAS_MATCH == c->op), 0);
            rc = MPI_Compare_and_swap(o, cmp, res, dt, t, disp, w->win);
            rc_check(rc, phase, w->flavor, c, "MPI_Compare_and_swap");
            /* cmp is on the stack: complete before it goes away */
            TU_MPI(MPI_Win_flush(t, w->win));
            break;
        }
        }
        if (++inflight == BATCH) {
            inflight = 0;
            if (F_GACC == phase || F_FOP == phase) TU_MPI(MPI_Win_flush_all(w->win));
            if (nreq) TU_MPI(MPI_Waitall(nreq, reqs, MPI_STATUSES_IGNORE));
            nreq = 0;
        }
    }
    if (nreq) TU_MPI(MPI_Waitall(nreq, reqs, MPI_STATUSES_IGNORE));

    switch (phase) {
    case F_ACC: TU_MPI(MPI_Win_fence(MPI_MODE_NOSUCCEED, w->win)); break;
    case F_FOP:
    case F_CAS: TU_MPI(MPI_Win_unlock((me + 1) % nprocs, w->win)); break;
    default: TU_MPI(MPI_Win_unlock_all(w->win)); break;
    }
    MPI_Barrier(MPI_COMM_WORLD);

    TU_MPI(MPI_Win_lock(MPI_LOCK_SHARED, me, 0, w->win));
    for (ci = 0; ci < ncases; ci++) {
        const tcase_t *c = &cases[ci];
        if (!case_in_phase(c, phase)) continue;
        if (ring_phase(phase) || case_target(phase, ci, 0, nprocs) == me)
            check_target(phase, w->flavor, c, base, me, nprocs, &reported);
        if (ring_phase(phase)) check_result(phase, w->flavor, c, rbuf, me, nprocs);
    }
    TU_MPI(MPI_Win_unlock(me, w->win));
    MPI_Barrier(MPI_COMM_WORLD);
    if (0 == me) printf("  %-8s %-6s %.2fs\n", tu_flavor_names[w->flavor], phase_name[phase], MPI_Wtime() - t0);
    free(reqs);
}



int main(int argc, char **argv)
{
    int me, nprocs, flavor, phase, ci, i;
    int bigcount = getenv("ACC_BIGCOUNT") ? atoi(getenv("ACC_BIGCOUNT")) : 1000;
    int full = getenv("ACC_FULL") && atoi(getenv("ACC_FULL"));
    const char *phases = getenv("ACC_PHASES");
    char *obuf, *rbuf;
    MPI_Info info = MPI_INFO_NULL;

    tu_parse_args(argc, argv);
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &me);
    MPI_Comm_size(MPI_COMM_WORLD, &nprocs);
    if (bigcount < 8) bigcount = 8;
    init_types();
    build_cases(bigcount, full);
    if (0 == me) {
        int per[NPHASES] = { 0 };
        for (ci = 0; ci < ncases; ci++)
            for (i = 0; i < NPHASES; i++) per[i] += case_in_phase(&cases[ci], i);
        printf("acc_ops: %d types, %d cases (", ntypes, ncases);
        for (i = 0; i < NPHASES; i++) printf("%s%s %d", i ? ", " : "", phase_name[i], per[i]);
        printf("), window %zu bytes\n", win_bytes);
    }
    obuf = malloc(orig_bytes);
    rbuf = malloc(res_bytes);

    if (tu_opt_flag(argc, argv, "--single-intrinsic")) {
        TU_MPI(MPI_Info_create(&info));
        TU_MPI(MPI_Info_set(info, "acc_single_intrinsic", "true"));
    }
    for (flavor = 0; flavor < TU_NFLAVORS; flavor++) {
        tu_win_t w;
        if (!tu_flavor_enabled(flavor)) continue;
        tu_win_create(flavor, (MPI_Aint)win_bytes, 1, info, MPI_COMM_WORLD, &w);
        for (phase = 0; phase < NPHASES; phase++) {
            if (!tu_in_list(phases, phase_name[phase])) continue;
            run_phase(phase, &w, obuf, rbuf, me, nprocs);
        }
        tu_win_free(&w);
    }

    if (MPI_INFO_NULL != info) MPI_Info_free(&info);
    for (ci = 0; ci < ncases; ci++)
        if (cases[ci].vec) MPI_Type_free(&cases[ci].tdt);
    free(cases);
    free(obuf);
    free(rbuf);
    lib_notes_print(me);
    i = tu_finish("acc_ops");
    MPI_Finalize();
    return i;
}
