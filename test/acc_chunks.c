/* acc_chunks: every predefined reduction op x every predefined datatype it
 * is defined on (the tables of acc_types.h, shared with acc_ops), through
 * MPI_Accumulate and MPI_Get_accumulate (and MPI_Raccumulate /
 * MPI_Rget_accumulate for a representative type subset), at element counts
 * around the sizes where an implementation cuts an operation into pieces:
 * the bulk accumulate of osc/ucxx locks ranges in blocks (stripes,
 * osc_ucxx_acc_granularity), holds a lock for at most so many bytes
 * (osc_ucxx_acc_hold) and sends unmapped targets one active message per
 * chunk (osc_ucxx_acc_am_chunk).  So the byte counts are
 *   1 element; 63, 64, 65 bytes (all types);
 *   2 KiB and 4 KiB +- one element (every C representation and type group:
 *   MPI_INT stands for MPI_INT32_T, MPI_INTEGER for MPI_INTEGER4, ...);
 *   64 KiB +- one element and 128 KiB + one element (one type per op each,
 *   rotating over the representative ones);
 *   with --full, all of them for every type (slow),
 * and every target range starts inside a 64-byte block (an odd multiple of
 * the element size behind it); the big ones start 3 elements before a
 * 4 KiB boundary of the window.
 * Derived datatypes (a few ops and types, crossing 4 KiB and 64 KiB): an
 * indexed target type (blocks of 3, 1, 5, 2 elements, gaps of 1, 2, 1, 3)
 * and a struct-with-gaps target type (elements 0, 1, 3 of 5), contiguous
 * origin; get_accumulate into a vector (stride 2) result type.
 *
 * Phases, on every window flavor (create, allocate, dynamic; allocate_shared
 * too with --shared: its path is the one of allocate):
 *   acc    MPI_Accumulate, fence epoch, every rank into the case's target
 *          (case index mod nprocs)
 *   gacc   MPI_Get_accumulate, lock_all + flush, ring (rank r -> r+1)
 *   racc   MPI_Raccumulate, lock_all + waitall, ring (representative types,
 *          up to 4 KiB + 1 element)
 *   rgacc  MPI_Rget_accumulate, lock_all + waitall, ring (the same subset)
 * Values come from acc_ops' generators (small, every result exact).  Each
 * target element is checked against C arithmetic on the C type, or where
 * Open MPI's own MPI_Reduce_local differs from C (listed as notes) against
 * the library's result; fetched values against the target's initial
 * contents.  MPI_REPLACE into one target from several origins: one origin's
 * value.  Gaps of derived layouts, bytes before the range and a guard
 * element behind every target cell and result buffer must stay untouched.
 *
 * Usage: acc_chunks [--full] [--shared] [--phases acc,gacc,racc,rgacc] [--no-direct]
 *   --full: the big sizes for every type (slow); TU_FLAVORS selects flavors.
 */
#include "acc_types.h"

enum { P_ACC = 1, P_GACC = 2, P_RACC = 4, P_RGACC = 8 };
#define NPHASES 4
static const char *phase_name[NPHASES] = { "acc", "gacc", "racc", "rgacc" };

enum { L_CONTIG, L_INDEXED, L_STRUCT };
static const char *layout_name[] = { "", " indexed", " struct" };

typedef struct {
    int op, type, count, layout, rvec, phases;
    size_t off;          /* cell: bytes [off, off + span) of every window */
    size_t skew;         /* the range starts at off + skew */
    size_t span;         /* skew + target extent + guard element */
    size_t ooff;         /* origin values */
    size_t roff, rspan;  /* result buffer: extent + guard element */
    MPI_Datatype tdt, rdt;
    int tcount, rcount;
    int64_t *tpos, *rpos; /* byte offset of element j from the range start / result start */
} ccase_t;

static ccase_t *cases;
static int ncases, maxcases;
static size_t win_bytes, orig_bytes, res_bytes;

#define SENTINEL 0xA5
#define RSENTINEL 0x5A
#define ALIGN64(x) (((x) + 63) & ~(size_t)63)
#define ALIGN4K(x) (((x) + 4095) & ~(size_t)4095)

static int64_t *layout_positions(int layout, int count, size_t ext, int64_t *extent, int vec2)
{
    int64_t *pos = malloc(sizeof(int64_t) * (size_t)count);
    static const int blen[4] = { 3, 1, 5, 2 }, gap[4] = { 1, 2, 1, 3 };
    int64_t e = 0;
    int j = 0, b = 0;
    if (vec2) {
        for (j = 0; j < count; j++) pos[j] = 2 * (int64_t)j * ext;
        *extent = (2 * (int64_t)count - 1) * ext;
        return pos;
    }
    switch (layout) {
    case L_CONTIG:
        for (j = 0; j < count; j++) pos[j] = (int64_t)j * ext;
        break;
    case L_INDEXED:
        while (j < count) {
            for (int k = 0; k < blen[b % 4] && j < count; k++) pos[j++] = (e++) * ext;
            e += gap[b % 4];
            b++;
        }
        break;
    case L_STRUCT: /* count is a multiple of 3: elements 0, 1, 3 of every 5 */
        for (j = 0; j < count; j++) pos[j] = ((j / 3) * 5 + (j % 3 == 2 ? 3 : j % 3)) * (int64_t)ext;
        break;
    }
    *extent = pos[count - 1] + ext;
    return pos;
}

static MPI_Datatype layout_type(int layout, int count, MPI_Datatype dt, size_t ext, int *tcount)
{
    MPI_Datatype t = dt, tmp;
    static const int blen[4] = { 3, 1, 5, 2 }, gap[4] = { 1, 2, 1, 3 };
    *tcount = count;
    if (L_INDEXED == layout) {
        int nb = 0, j = 0, e = 0;
        int *bl = malloc(sizeof(int) * (size_t)count), *dp = malloc(sizeof(int) * (size_t)count);
        while (j < count) {
            int l = blen[nb % 4] < count - j ? blen[nb % 4] : count - j;
            bl[nb] = l; dp[nb] = e;
            j += l; e += l + gap[nb % 4];
            nb++;
        }
        TU_MPI(MPI_Type_indexed(nb, bl, dp, dt, &t));
        TU_MPI(MPI_Type_commit(&t));
        free(bl); free(dp);
        *tcount = 1;
    } else if (L_STRUCT == layout) {
        int bl[2] = { 2, 1 };
        MPI_Aint dp[2] = { 0, 3 * (MPI_Aint)ext };
        MPI_Datatype ts[2] = { dt, dt };
        TU_MPI(MPI_Type_create_struct(2, bl, dp, ts, &tmp));
        TU_MPI(MPI_Type_create_resized(tmp, 0, 5 * (MPI_Aint)ext, &t));
        TU_MPI(MPI_Type_commit(&t));
        MPI_Type_free(&tmp);
        *tcount = count / 3;
    }
    return t;
}

static void add_case(int op, int type, int count, int layout, int rvec, int phases, int big)
{
    ccase_t *c;
    size_t ext = kind_size[types[type].kind];
    int64_t textent, rextent;
    if (count < 1) return;
    if (L_STRUCT == layout) count = count < 3 ? 3 : count - count % 3;
    if (ncases == maxcases) {
        maxcases = maxcases ? 2 * maxcases : 1024;
        cases = realloc(cases, sizeof(ccase_t) * (size_t)maxcases);
    }
    c = &cases[ncases];
    memset(c, 0, sizeof(*c));
    c->op = op; c->type = type; c->count = count; c->layout = layout; c->rvec = rvec;
    c->phases = phases;
    c->tpos = layout_positions(layout, count, ext, &textent, 0);
    c->rpos = layout_positions(L_CONTIG, count, ext, &rextent, rvec);
    c->tdt = layout_type(layout, count, types[type].dt, ext, &c->tcount);
    c->rcount = count;
    c->rdt = types[type].dt;
    if (rvec) {
        TU_MPI(MPI_Type_vector(count, 1, 2, types[type].dt, &c->rdt));
        TU_MPI(MPI_Type_commit(&c->rdt));
        c->rcount = 1;
    }
    /* the range starts inside a block: an odd multiple of ext behind the
     * cell (never a multiple of 64 for ext <= 32); big ones 3 elements
     * before a 4 KiB boundary */
    if (big) {
        c->off = ALIGN4K(win_bytes);
        c->skew = 4096 - 3 * ext;
    } else {
        c->off = ALIGN64(win_bytes);
        c->skew = ext * (size_t)(1 + 2 * (ncases % 3));
    }
    c->span = c->skew + (size_t)textent + ext;
    win_bytes = c->off + c->span;
    c->ooff = orig_bytes;
    orig_bytes = ALIGN64(orig_bytes + (size_t)count * ext);
    c->roff = res_bytes;
    c->rspan = (size_t)rextent + ext;
    res_bytes = ALIGN64(res_bytes + c->rspan);
    ncases++;
}

static void free_cases(void)
{
    for (int ci = 0; ci < ncases; ci++) {
        ccase_t *c = &cases[ci];
        if (c->tdt != types[c->type].dt) MPI_Type_free(&c->tdt);
        if (c->rdt != types[c->type].dt) MPI_Type_free(&c->rdt);
        free(c->tpos);
        free(c->rpos);
    }
    free(cases);
}

static int find_type(MPI_Datatype dt)
{
    for (int t = 0; t < ntypes; t++)
        if (types[t].dt == dt) return t;
    return -1;
}

/* The counts of one type: 1 element; 63, 64, 65 bytes; 2 KiB and 4 KiB +-
 * one element (small); 64 KiB +- one element, 128 KiB + 1 (big). */
static int small_counts(size_t ext, int *n)
{
    int k = 0, e = (int)ext;
    n[k++] = 1;
    n[k++] = 63 / e;
    n[k++] = (64 + e - 1) / e;
    n[k++] = 64 / e + 1;
    for (int b = 2048; b <= 4096; b *= 2) {
        n[k++] = b / e - 1;
        n[k++] = b / e;
        n[k++] = b / e + 1;
    }
    /* without repeats (1 and 63 / e coincide for 32-byte types) */
    int m = 0;
    for (int i = 0; i < k; i++) {
        int dup = n[i] < 1;
        for (int j = 0; j < m; j++) dup |= n[j] == n[i];
        if (!dup) n[m++] = n[i];
    }
    return m;
}

/* the first type of the table with this one's C representation and group
 * (MPI_INT for MPI_INT32_T, MPI_INTEGER for MPI_INTEGER4, ...)? */
static int first_of_kind(int t)
{
    for (int u = 0; u < t; u++)
        if (types[u].kind == types[t].kind && types[u].grp == types[t].grp) return 0;
    return 1;
}

static void build_cases(int full)
{
    int n[16];
    for (int t = 0; t < ntypes; t++) {
        size_t ext = kind_size[types[t].kind];
        int m = small_counts(ext, n);
        for (int op = 0; op <= OP_NO_OP; op++) {
            int ph;
            if (!(op_groups[op] & types[t].grp)) continue;
            ph = OP_NO_OP == op ? P_GACC : P_ACC | P_GACC;
            if (types[t].big) ph |= OP_NO_OP == op ? P_RGACC : P_RACC | P_RGACC;
            for (int i = 0; i < m; i++) {
                /* 2 and 4 KiB +- 1: every C representation (all types with --full) */
                if (n[i] * (int)ext > 128 && !full && !first_of_kind(t)) continue;
                add_case(op, t, n[i], L_CONTIG, 0, ph, 0);
            }
        }
    }
    /* big sizes: per op one representative type at 64 KiB +- 1 element and
     * another at 128 KiB + 1 (rotating over the op's representative types) */
    for (int op = 0; op <= OP_NO_OP; op++) {
        int elig[MAXTYPES], ne = 0, ph = OP_NO_OP == op ? P_GACC : P_ACC | P_GACC;
        for (int t = 0; t < ntypes; t++)
            if ((op_groups[op] & types[t].grp) && (full || types[t].big)) elig[ne++] = t;
        for (int i = 0; i < ne; i++) {
            int t = elig[i], e = (int)kind_size[types[t].kind];
            int first = full || i == op % ne, second = full || i == (op + 1) % ne;
            if (first) {
                add_case(op, t, 65536 / e - 1, L_CONTIG, 0, ph, 1);
                add_case(op, t, 65536 / e, L_CONTIG, 0, ph, 1);
                add_case(op, t, 65536 / e + 1, L_CONTIG, 0, ph, 1);
            }
            if (second) add_case(op, t, 131072 / e + 1, L_CONTIG, 0, ph, 1);
        }
    }
    /* derived target types (contiguous origin), derived result type */
    {
        struct { int op; MPI_Datatype dt; } d[] = {
            { OP_SUM, MPI_INT }, { OP_SUM, MPI_DOUBLE }, { OP_SUM, MPI_LONG_DOUBLE },
            { OP_PROD, MPI_C_DOUBLE_COMPLEX }, { OP_MAXLOC, MPI_2INT }, { OP_MINLOC, MPI_DOUBLE_INT },
            { OP_BXOR, MPI_UNSIGNED_CHAR }, { OP_MIN, MPI_FLOAT }, { OP_REPLACE, MPI_SHORT },
            { OP_LOR, MPI_C_BOOL }, { OP_NO_OP, MPI_INT64_T },
        };
        for (size_t i = 0; i < sizeof(d) / sizeof(d[0]); i++) {
            int t = find_type(d[i].dt), ph = OP_NO_OP == d[i].op ? P_GACC : P_ACC | P_GACC;
            int e;
            if (t < 0) continue;
            e = (int)kind_size[types[t].kind];
            for (int layout = L_INDEXED; layout <= L_STRUCT; layout++) {
                add_case(d[i].op, t, 7, layout, 1, ph, 0);
                add_case(d[i].op, t, 4096 / e + 1, layout, (int)(i % 2), ph, 0);
                /* 64 KiB: one layout each */
                if ((int)(i % 2) == layout - L_INDEXED)
                    add_case(d[i].op, t, 65536 / e + 1, layout, (int)((i + 1) % 2), ph, 1);
            }
        }
    }
}

/* ---- the phases ------------------------------------------------------- */
static int me, nprocs;

static int ring_phase(int phase) { return P_ACC != phase; }
static int pidx(int phase)
{
    int i = 0;
    while ((1 << i) != phase) i++;
    return i;
}
static int case_target(int phase, int ci, int r)
{
    return ring_phase(phase) ? (r + 1) % nprocs : ci % nprocs;
}
/* does origin r contribute to target me's cell in this phase? */

#define DESC_FMT "%s %s %s count %d%s%s on %s"
#define DESC_ARGS(phase, c, fl) phase_name[pidx(phase)], op_name[(c)->op], types[(c)->type].name, (c)->count, \
    layout_name[(c)->layout], (c)->rvec ? " (vector result)" : "", tu_flavor_names[fl]

static void init_cell(const ccase_t *c, char *base)
{
    int kind = types[c->type].kind;
    char *p0 = base + c->off + c->skew;
    int64_t a, b;
    memset(base + c->off, SENTINEL, c->span);
    for (int j = 0; j < c->count; j++) {
        gen(c->op, kind, 1, me, j, &a, &b);
        set_elem(kind, p0 + c->tpos[j], a, b);
    }
}

/* bytes outside the elements: from `from` up to `to` relative to p0 */
static int gaps_ok(const char *p0, const int64_t *pos, int count, size_t ext, int64_t lo, int64_t hi,
                   int val, int64_t *where)
{
    int64_t at = lo;
    for (int j = 0; j <= count; j++) {
        int64_t next = j < count ? pos[j] : hi;
        if (next > at && !sentinel_ok(p0 + at, (size_t)(next - at), val)) {
            for (int64_t k = at; k < next; k++)
                if ((unsigned char)p0[k] != val) { *where = k; break; }
            return 0;
        }
        at = next + (int64_t)ext;
    }
    return 1;
}


static void check_target(int phase, int flavor, const ccase_t *c, const char *base)
{
    int kind = types[c->type].kind;
    size_t ext = kind_size[kind];
    const char *p0 = base + c->off + c->skew;
    char exp[64], val[64], s1[96], s2[96];
    char *lib = NULL, *tmp = NULL;
    int64_t a, b, where;
    for (int j = 0; j < c->count; j++) {
        const char *p = p0 + c->tpos[j];
        if (OP_REPLACE == c->op && !ring_phase(phase)) {
            int found = 0;
            for (int r = 0; r < nprocs && !found; r++) {
                gen(c->op, kind, 0, r, j, &a, &b);
                set_elem(kind, exp, a, b);
                found = eq_elem(kind, p, exp);
            }
            if (!found) {
                TU_CHECK(0, DESC_FMT ": target elem %d = %s is no origin's value", DESC_ARGS(phase, c, flavor), j,
                         fmt_elem(kind, p, s1, sizeof(s1)));
                break;
            }
            continue;
        }
        acc_expected_elem(c->op, kind, ring_phase(phase), me, nprocs, j, exp, val);
        if (!eq_elem(kind, p, exp) && c->op < OP_REPLACE) {
            if (NULL == lib) {
                lib = malloc((size_t)c->count * ext);
                tmp = malloc((size_t)c->count * ext);
                acc_expected_lib(c->op, kind, types[c->type].dt, c->count, ring_phase(phase), me, nprocs,
                                 lib, tmp);
            }
            if (eq_elem(kind, p, lib + (size_t)j * ext)) {
                lib_note(c->op, c->type, -1);
                continue;
            }
        }
        if (!eq_elem(kind, p, exp)) {
            TU_CHECK(0, DESC_FMT ": target elem %d (byte %lld of the range) = %s, expected %s",
                     DESC_ARGS(phase, c, flavor), j, (long long)c->tpos[j], fmt_elem(kind, p, s1, sizeof(s1)),
                     fmt_elem(kind, exp, s2, sizeof(s2)));
            break;
        }
    }
    free(lib);
    free(tmp);
    TU_CHECK(gaps_ok(p0, c->tpos, c->count, ext, -(int64_t)c->skew, (int64_t)(c->span - c->skew), SENTINEL,
                     &where),
             DESC_FMT ": byte %lld of the range (outside its elements) was written", DESC_ARGS(phase, c, flavor),
             (long long)where);
}

static void check_result(int phase, int flavor, const ccase_t *c, const char *rbuf)
{
    int kind = types[c->type].kind, t = (me + 1) % nprocs;
    size_t ext = kind_size[kind];
    const char *r0 = rbuf + c->roff;
    char exp[64], s1[96], s2[96];
    int64_t a, b, where;
    for (int j = 0; j < c->count; j++) {
        const char *p = r0 + c->rpos[j];
        gen(c->op, kind, 1, t, j, &a, &b);
        set_elem(kind, exp, a, b);
        if (!eq_elem(kind, p, exp)) {
            TU_CHECK(0, DESC_FMT ": fetched elem %d = %s, expected %s", DESC_ARGS(phase, c, flavor), j,
                     fmt_elem(kind, p, s1, sizeof(s1)), fmt_elem(kind, exp, s2, sizeof(s2)));
            break;
        }
    }
    TU_CHECK(gaps_ok(r0, c->rpos, c->count, ext, 0, (int64_t)c->rspan, RSENTINEL, &where),
             DESC_FMT ": result buffer byte %lld (outside its elements) was written", DESC_ARGS(phase, c, flavor),
             (long long)where);
}

static void rc_check(int rc, int phase, int flavor, const ccase_t *c, const char *what)
{
    if (MPI_SUCCESS != rc) {
        char msg[MPI_MAX_ERROR_STRING];
        int len;
        MPI_Error_string(rc, msg, &len);
        TU_CHECK(0, DESC_FMT ": %s returned %s", DESC_ARGS(phase, c, flavor), what, msg);
    }
}

#define BATCH 64                  /* operations between flushes / waits */
#define BATCH_BYTES (1 << 20)     /* or this many bytes */

static void run_phase(int phase, tu_win_t *w, char *obuf, char *rbuf)
{
    int ci, nreq = 0, inflight = 0, errs = tu_errors, pi = pidx(phase);
    size_t bytes = 0;
    MPI_Request *reqs = malloc(BATCH * sizeof(MPI_Request));
    char *base = w->base;
    double ts = MPI_Wtime(), t0, t1;
    char where[128];

    snprintf(where, sizeof(where), "%s, phase %s", tu_flavor_names[w->flavor], phase_name[pi]);
    tu_where = where;
    memset(rbuf, RSENTINEL, res_bytes);
    for (ci = 0; ci < ncases; ci++) {
        const ccase_t *c = &cases[ci];
        int kind = types[c->type].kind;
        size_t ext = kind_size[kind];
        int64_t a, b;
        if (!(c->phases & phase)) continue;
        for (int j = 0; j < c->count; j++) {
            gen(c->op, kind, 0, me, j, &a, &b);
            set_elem(kind, obuf + c->ooff + (size_t)j * ext, a, b);
        }
    }
    TU_MPI(MPI_Win_lock(MPI_LOCK_EXCLUSIVE, me, 0, w->win));
    for (ci = 0; ci < ncases; ci++)
        if (cases[ci].phases & phase) init_cell(&cases[ci], base);
    TU_MPI(MPI_Win_unlock(me, w->win));
    MPI_Barrier(MPI_COMM_WORLD);

    t0 = MPI_Wtime();
    if (P_ACC == phase) TU_MPI(MPI_Win_fence(MPI_MODE_NOPRECEDE, w->win));
    else TU_MPI(MPI_Win_lock_all(0, w->win));

    for (ci = 0; ci < ncases; ci++) {
        const ccase_t *c = &cases[ci];
        MPI_Datatype dt = types[c->type].dt;
        MPI_Op op = op_handle(c->op);
        int t = case_target(phase, ci, me), rc = MPI_SUCCESS;
        MPI_Aint disp = tu_disp(w, t, (MPI_Aint)(c->off + c->skew));
        char *o = obuf + c->ooff, *res = rbuf + c->roff;
        if (!(c->phases & phase)) continue;
        switch (phase) {
        case P_ACC:
            rc = MPI_Accumulate(o, c->count, dt, t, disp, c->tcount, c->tdt, op, w->win);
            rc_check(rc, phase, w->flavor, c, "MPI_Accumulate");
            break;
        case P_GACC:
            rc = MPI_Get_accumulate(o, c->count, dt, res, c->rcount, c->rdt, t, disp, c->tcount, c->tdt, op,
                                    w->win);
            rc_check(rc, phase, w->flavor, c, "MPI_Get_accumulate");
            break;
        case P_RACC:
            rc = MPI_Raccumulate(o, c->count, dt, t, disp, c->tcount, c->tdt, op, w->win, &reqs[nreq]);
            rc_check(rc, phase, w->flavor, c, "MPI_Raccumulate");
            if (MPI_SUCCESS == rc) nreq++;
            break;
        case P_RGACC:
            rc = MPI_Rget_accumulate(o, c->count, dt, res, c->rcount, c->rdt, t, disp, c->tcount, c->tdt, op,
                                     w->win, &reqs[nreq]);
            rc_check(rc, phase, w->flavor, c, "MPI_Rget_accumulate");
            if (MPI_SUCCESS == rc) nreq++;
            break;
        }
        bytes += (size_t)c->count * kind_size[types[c->type].kind];
        if (++inflight == BATCH || bytes >= BATCH_BYTES) {
            inflight = 0;
            bytes = 0;
            if (P_GACC == phase) TU_MPI(MPI_Win_flush_all(w->win));
            if (nreq) TU_MPI(MPI_Waitall(nreq, reqs, MPI_STATUSES_IGNORE));
            nreq = 0;
        }
    }
    if (nreq) TU_MPI(MPI_Waitall(nreq, reqs, MPI_STATUSES_IGNORE));
    if (P_ACC == phase) TU_MPI(MPI_Win_fence(MPI_MODE_NOSUCCEED, w->win));
    else TU_MPI(MPI_Win_unlock_all(w->win));
    MPI_Barrier(MPI_COMM_WORLD);

    t1 = MPI_Wtime();
    TU_MPI(MPI_Win_lock(MPI_LOCK_EXCLUSIVE, me, 0, w->win));
    TU_MPI(MPI_Win_sync(w->win));
    for (ci = 0; ci < ncases; ci++) {
        const ccase_t *c = &cases[ci];
        if (!(c->phases & phase)) continue;
        if (ring_phase(phase) || case_target(phase, ci, 0) == me) check_target(phase, w->flavor, c, base);
        if (P_GACC == phase || P_RGACC == phase) check_result(phase, w->flavor, c, rbuf);
    }
    TU_MPI(MPI_Win_unlock(me, w->win));
    errs = tu_errors - errs;
    MPI_Allreduce(MPI_IN_PLACE, &errs, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    if (0 == me)
        printf("  %-8s %-6s %.2fs (setup %.2fs, operations %.2fs, checks %.2fs)%s\n", tu_flavor_names[w->flavor],
               phase_name[pi], MPI_Wtime() - ts, t0 - ts, t1 - t0, MPI_Wtime() - t1, errs ? "  FAILED" : "");
    free(reqs);
}


int main(int argc, char **argv)
{
    int full = tu_opt_flag(argc, argv, "--full"), shared = tu_opt_flag(argc, argv, "--shared"), rc;
    const char *phases = NULL;
    char *obuf, *rbuf;

    for (int i = 1; i < argc; i++) {
        if (0 == strcmp(argv[i], "--no-direct")) tu_tune("direct=0");
        if (0 == strcmp(argv[i], "--phases") && i + 1 < argc) phases = argv[i + 1];
    }
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &me);
    MPI_Comm_size(MPI_COMM_WORLD, &nprocs);
    tu_watchdog("acc_chunks", (unsigned)tu_opt_long(argc, argv, "--timeout", 170));
    init_types();
    build_cases(full);
    if (0 == me) {
        int per[NPHASES] = { 0 };
        for (int ci = 0; ci < ncases; ci++)
            for (int p = 0; p < NPHASES; p++) per[p] += !!(cases[ci].phases & (1 << p));
        printf("acc_chunks: %d types, %d cases (acc %d, gacc %d, racc %d, rgacc %d), window %zu bytes\n", ntypes,
               ncases, per[0], per[1], per[2], per[3], win_bytes);
    }
    obuf = malloc(orig_bytes);
    rbuf = malloc(res_bytes);

    for (int flavor = 0; flavor < TU_NFLAVORS_ALL; flavor++) {
        tu_win_t w;
        if (!tu_flavor_enabled(flavor) || (TU_ALLOC_SHARED == flavor && !shared)) continue;
        tu_win_create(flavor, (MPI_Aint)win_bytes, 1, MPI_INFO_NULL, MPI_COMM_WORLD, &w);
        if (MPI_WIN_NULL == w.win) {
            if (0 == me) printf("  %-8s n/a (no shared window)\n", tu_flavor_names[flavor]);
            continue;
        }
        for (int p = 0; p < NPHASES; p++)
            if (tu_in_list(phases, phase_name[p])) run_phase(1 << p, &w, obuf, rbuf);
        tu_win_free(&w);
    }

    free_cases();
    free(obuf);
    free(rbuf);
    lib_notes_print(me);
    alarm(0);
    rc = tu_finish("acc_chunks");
    MPI_Finalize();
    return rc;
}
