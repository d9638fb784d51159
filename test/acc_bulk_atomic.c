/* acc_bulk_atomic: element-wise atomicity of accumulates when bulk and
 * single-element operations of several origins hit overlapping ranges of
 * the same targets at the same time.
 *
 * How it fails without exclusion: every origin's operations add (or MAXLOC)
 * into elements other origins are changing at the same moment.  If an
 * implementation reads an element, combines and writes it back without
 * excluding the others (no atomic, no lock, or a lock that does not cover
 * the whole range another origin holds), an update that lands between its
 * read and its write is overwritten: the final totals come out short
 * ("target elem ... = X, expected Y"), and a get_accumulate / fetch_and_op
 * sees an intermediate value that lacks one of the fetching origin's own
 * completed additions, or one no sequence of whole updates produces
 * ("fetched ... is no possible intermediate").  The ranks start each round
 * together after a barrier with a full-range accumulate, then mix bulk
 * ranges (1 .. N elements, log-uniform, one in eight the whole window; one
 * in four 2 .. 8 elements across a hot element), contiguous and vector
 * (stride 2) on origin and target, with single-element MPI_Fetch_and_op /
 * MPI_Accumulate on a few hot elements inside them.
 * (Under UCX_TLS=tcp the targets apply everything themselves, one message
 * at a time, so only the shared-memory runs can catch missing exclusion.)
 *
 * Cases (element type, op): signed char, short, int, long long, float,
 * double, long double, MPI_C_DOUBLE_COMPLEX with MPI_SUM; MPI_2INT with
 * MPI_MAXLOC; MPI_INT with MPI_SUM through MPI_Type_vector(n, 1, 2) origin
 * and/or target types mixed with contiguous ones.
 * Epochs: lock_all + flush with every operation to one target, lock_all +
 * flush with each operation to a random target (itself included), and
 * MPI_Win_lock(MPI_LOCK_SHARED) on one target.  Flavors: create, allocate,
 * dynamic, allocate_shared (n/a where the component makes no shared window).
 *
 * Values: origin r adds small whole numbers (1..3; in long long, double,
 * long double and complex shifted into r's own 12-bit digit, so a fetched
 * value tells exactly how much each origin had added).  Each rank generates
 * every rank's operations from the same seeds, so it knows the exact final
 * contents of every element (init + all additions, or the MAXLOC winner
 * among distinct (value, index) pairs).  Checks:
 *   - after the epoch, a barrier and a lock of its own window, every target
 *     compares all N elements (and guard elements behind) with the exact
 *     expected values;
 *   - every get_accumulate / fetch_and_op result (the origin flushes its
 *     earlier operations to that target first): between init + what this
 *     origin added before and the final value minus what it adds from now
 *     on; with digits, this origin's digit is exactly its own earlier total
 *     and every other digit at most that origin's final total; for MAXLOC the
 *     fetched pair is the initial value or one some origin contributed to
 *     that element, not below this origin's own earlier maximum and not above
 *     the final one.
 *
 * Usage: acc_bulk_atomic [-n N] [-i OPS] [--all-modes] [--no-direct]
 *   N elements per window (default 100000), OPS operations per rank and
 *   round (default 48; 24 under UCX_TLS=tcp), --all-modes: every epoch
 *   mode for every case and flavor (default: the modes rotate over cases
 *   and flavors, each (case, mode) pair still runs).
 * Environment: TU_FLAVORS (run-tests.sh: all four).
 */
#include "acc_types.h"
#include <math.h>

/* ---- cases ----------------------------------------------------------- */
typedef struct {
    const char *name;
    MPI_Datatype dt;
    int kind, op;
    int vec;      /* MPI_INT through vector origin/target types */
    int digits;   /* per-origin 12-bit digits (when nprocs * 12 bits fit) */
} bcase_t;

#define NCASES 10
static bcase_t cases[NCASES];

static void init_cases(int nprocs, int iters)
{
    /* digits: nprocs of them fit the 48 bits every digit type holds
     * exactly, and one origin's total per element (at most 3 per
     * operation) fits its digit */
    int dig = nprocs <= 4 && 3 * (int64_t)iters < (1 << 12);
    bcase_t c[NCASES] = {
        { "signed char", MPI_SIGNED_CHAR, K_I8, OP_SUM, 0, 0 },
        { "short", MPI_SHORT, K_I16, OP_SUM, 0, 0 },
        { "int", MPI_INT, K_I32, OP_SUM, 0, 0 },
        { "long long", MPI_LONG_LONG, K_I64, OP_SUM, 0, dig },
        { "float", MPI_FLOAT, K_F, OP_SUM, 0, 0 },
        { "double", MPI_DOUBLE, K_D, OP_SUM, 0, dig },
        { "long double", MPI_LONG_DOUBLE, K_LD, OP_SUM, 0, dig },
        { "double complex", MPI_C_DOUBLE_COMPLEX, K_CD, OP_SUM, 0, dig },
        { "2int maxloc", MPI_2INT, K_2I, OP_MAXLOC, 0, 0 },
        { "int vector", MPI_INT, K_I32, OP_SUM, 1, 0 },
    };
    memcpy(cases, c, sizeof(c));
}

#define DBITS 12
#define DMASK ((1 << DBITS) - 1)

/* ---- operations -------------------------------------------------------- */
enum { O_FOP, O_ACC1, O_ACC, O_GACC };
static const char *oname[] = { "fetch_and_op", "accumulate(1)", "accumulate", "get_accumulate" };

typedef struct {
    int what, target, count;
    int tvec, ovec;     /* target / origin layout: vector, stride 2 */
    int64_t start;      /* first target element */
} bop_t;

enum { M_ONE, M_MANY, M_SHARED, NMODES };
static const char *mname[] = { "lock_all/one target", "lock_all/all targets", "lock(shared)" };

#define NHOT 8

static uint64_t rnd_next(uint64_t *s)
{
    uint64_t x = *s;
    x ^= x << 13; x ^= x >> 7; x ^= x << 17;
    return *s = x;
}

/* log-uniform in [1, max] */
static int rnd_count(uint64_t *s, int max)
{
    double u = (double)(rnd_next(s) % 1000000) / 1000000.0;
    int c = (int)exp(u * log((double)max + 1.0));
    return c < 1 ? 1 : c > max ? max : c;
}

/* The operations of origin r in round `seed`: every rank makes them all. */
static void make_ops(bop_t *ops, int iters, int r, uint64_t seed, const bcase_t *c, int mode, int t0,
                     int nprocs, int n)
{
    uint64_t s = seed * 0x9E3779B97F4A7C15ULL + (uint64_t)r * 0xC2B2AE3D27D4EB4FULL + 1;
    const int64_t hot[NHOT] = { 0, 1, 2, n / 2 - 1, n / 2, n / 2 + 1, n - 2, n - 1 };
    for (int k = 0; k < 4; k++) rnd_next(&s);
    for (int k = 0; k < iters; k++) {
        bop_t *o = &ops[k];
        uint64_t u = rnd_next(&s);
        memset(o, 0, sizeof(*o));
        o->target = M_MANY == mode ? (int)(rnd_next(&s) % (uint64_t)nprocs) : t0;
        if (0 == k) {                      /* everyone starts on the whole window */
            o->what = O_ACC;
            o->count = n;
            continue;
        }
        switch (u % 10) {
        case 0: case 1: case 2: o->what = O_FOP; break;
        case 3: case 4: o->what = O_ACC1; break;
        case 5: case 6: case 7: o->what = O_ACC; break;
        default: o->what = O_GACC; break;
        }
        if (O_FOP == o->what || O_ACC1 == o->what) {
            o->count = 1;
            o->start = hot[rnd_next(&s) % NHOT];
            continue;
        }
        if (c->vec) {
            o->tvec = (int)(rnd_next(&s) & 1);
            o->ovec = (int)(rnd_next(&s) & 1);
        }
        {
            int max = o->tvec ? (n + 1) / 2 : n;
            int64_t span, at;
            o->count = (0 == k % 8) ? max : rnd_count(&s, max);
            if (0 == rnd_next(&s) % 4) {
                /* a few elements across a hot one: small ranges take only
                 * the stripes they touch, not the whole window, so this is
                 * where single-element and bulk exclusion must agree */
                o->count = 2 + (int)(rnd_next(&s) % 7);
                if (o->count > max) o->count = max;
                span = o->tvec ? 2 * (int64_t)o->count - 1 : o->count;
                at = hot[rnd_next(&s) % NHOT] - (int64_t)(rnd_next(&s) % (uint64_t)span);
                o->start = at < 0 ? 0 : at > n - span ? n - span : at;
                continue;
            }
            span = o->tvec ? 2 * (int64_t)o->count - 1 : o->count;
            o->start = (int64_t)(rnd_next(&s) % (uint64_t)(n - span + 1));
        }
    }
}

static int64_t op_pos(const bop_t *o, int64_t i) { return o->start + (o->tvec ? 2 * i : i); }

static int op_covers(const bop_t *o, int64_t pos)
{
    int64_t d = pos - o->start;
    if (d < 0) return 0;
    if (o->tvec) return d % 2 == 0 && d / 2 < o->count;
    return d < o->count;
}

/* ---- values ------------------------------------------------------------ */
/* initial value of element pos */
static void init_val(const bcase_t *c, int64_t pos, int64_t *a, int64_t *b)
{
    if (OP_MAXLOC == c->op) { *a = -1 - pos % 3; *b = -1; return; }
    *a = pos % 7;
    *b = K_CD == c->kind ? pos % 3 : 0;
}

/* MAXLOC value of origin r's k-th operation at pos: distinct over (r, k) */
static int64_t maxloc_val(int r, int k, int64_t pos, int nprocs)
{
    uint64_t x = (uint64_t)k * (uint64_t)nprocs + (uint64_t)r;
    return (int64_t)((x * 40503u + (uint64_t)pos * 2654435761u) & 0xFFFFFF);
}

/* what origin r's k-th operation contributes to its i-th element at pos */
static void contrib(const bcase_t *c, int r, int k, int64_t i, int64_t pos, int nprocs, int64_t *a,
                    int64_t *b)
{
    if (OP_MAXLOC == c->op) {
        *a = maxloc_val(r, k, pos, nprocs);
        *b = (int64_t)k * nprocs + r;
        return;
    }
    *a = 1 + (r + k + i) % 3;
    *b = K_CD == c->kind ? 1 + (r + 2 * k + i) % 2 : 0;
    if (c->digits) { *a <<= DBITS * r; *b <<= DBITS * r; }
}

/* MAXLOC order of (a, b) pairs: larger value, then smaller index */
static int pair_gt(int64_t a1, int64_t b1, int64_t a2, int64_t b2)
{
    return a1 > a2 || (a1 == a2 && b1 < b2);
}

/* Per-element bookkeeping of one target (a: value / real part, b: index /
 * imaginary part): tot = everything every origin adds (MAXLOC: the winner),
 * own = what this origin adds in the whole round, run = what it has added
 * so far (MAXLOC: own maximum so far, b = -2 for none). */
typedef struct {
    int64_t *tot_a, *tot_b, *own_a, *own_b, *run_a, *run_b;
} book_t;

static void book_add(const bcase_t *c, int64_t *xa, int64_t *xb, int64_t a, int64_t b, int64_t pos)
{
    if (OP_MAXLOC == c->op) {
        if (xb[pos] == -2 || pair_gt(a, b, xa[pos], xb[pos])) { xa[pos] = a; xb[pos] = b; }
    } else {
        xa[pos] += a;
        xb[pos] += b;
    }
}

static void book_apply(const bcase_t *c, const bop_t *o, int r, int k, int nprocs, int64_t *xa,
                       int64_t *xb)
{
    int64_t a, b;
    for (int64_t i = 0; i < o->count; i++) {
        int64_t pos = op_pos(o, i);
        contrib(c, r, k, i, pos, nprocs, &a, &b);
        book_add(c, xa, xb, a, b, pos);
    }
}

static void book_reset(const bcase_t *c, book_t *bk, int64_t n)
{
    if (OP_MAXLOC == c->op) {
        for (int64_t p = 0; p < n; p++) {
            int64_t a, b;
            init_val(c, p, &a, &b);
            bk->tot_a[p] = a; bk->tot_b[p] = b;   /* MAXLOC with the initial value */
            bk->own_a[p] = bk->run_a[p] = 0;
            bk->own_b[p] = bk->run_b[p] = -2;
        }
        return;
    }
    memset(bk->tot_a, 0, n * sizeof(int64_t)); memset(bk->tot_b, 0, n * sizeof(int64_t));
    memset(bk->own_a, 0, n * sizeof(int64_t)); memset(bk->own_b, 0, n * sizeof(int64_t));
    memset(bk->run_a, 0, n * sizeof(int64_t)); memset(bk->run_b, 0, n * sizeof(int64_t));
}

/* ---- the round ---------------------------------------------------------- */
static int me, nprocs;
static int64_t N;
static int iters;

#define NSLOT 4          /* origin buffers in flight between flushes */
#define GUARD 4          /* guard elements behind the N elements */
#define GUARD_BYTE 0xA5

typedef struct {
    int flavor, mode, t0;
    const bcase_t *c;
    bop_t *all;          /* every origin's operations, origin-major */
    char where[160];
    int bad;             /* failed checks reported in this round */
} round_t;

#define RFMT "%s, %s, %s"
#define RARGS(R) (R)->c->name, tu_flavor_names[(R)->flavor], mname[(R)->mode]

/* "d0/d1/..": the per-origin digits of v (real parts) */
static const char *fmt_digits(int64_t v, char *buf, size_t len)
{
    size_t used = 0;
    buf[0] = '\0';
    for (int r = 0; r < nprocs && used < len; r++)
        used += (size_t)snprintf(buf + used, len - used, "%s%lld", r ? "/" : "",
                                 (long long)((v >> (DBITS * r)) & DMASK));
    if (v < 0 || (v >> (DBITS * nprocs))) snprintf(buf, len, "(not digits: %lld)", (long long)v);
    return buf;
}

/* one fetched element (origin me, operation k at pos) */
static void check_fetched(round_t *R, const bop_t *o, int k, const book_t *bk, int64_t pos,
                          const char *p)
{
    const bcase_t *c = R->c;
    int64_t fa = 0, fb = 0, ia, ib;
    char s1[96];
    int ok;
    if (R->bad >= 8) return;
    init_val(c, pos, &ia, &ib);
    ok = get_elem(c->kind, p, &fa, &fb);
    if (ok && OP_MAXLOC == c->op) {
        if (-1 == fb) {
            ok = fa == ia && -2 == bk->run_b[pos];
        } else {
            int64_t x = fb, rr = x % nprocs, kk = x / nprocs;
            /* some origin's operation that covers pos, to this target */
            if (x < 0 || kk >= iters) ok = 0;
            else ok = fa == maxloc_val((int)rr, (int)kk, pos, nprocs) &&
                      R->all[rr * iters + kk].target == o->target && op_covers(&R->all[rr * iters + kk], pos);
            if (ok && -2 != bk->run_b[pos]) ok = !pair_gt(bk->run_a[pos], bk->run_b[pos], fa, fb);
            if (ok) ok = !pair_gt(fa, fb, bk->tot_a[pos], bk->tot_b[pos]);
        }
    } else if (ok && c->digits) {
        int64_t da = fa - ia, db = fb - ib, ta = bk->tot_a[pos], tb = bk->tot_b[pos];
        if (da < 0 || db < 0 || (da >> (DBITS * nprocs)) || (db >> (DBITS * nprocs))) ok = 0;
        for (int r = 0; r < nprocs && ok; r++) {
            int sh = DBITS * r;
            if (r == me) ok = ((da >> sh) & DMASK) == ((bk->run_a[pos] >> sh) & DMASK) &&
                              ((db >> sh) & DMASK) == ((bk->run_b[pos] >> sh) & DMASK);
            else ok = ((da >> sh) & DMASK) <= ((ta >> sh) & DMASK) && ((db >> sh) & DMASK) <= ((tb >> sh) & DMASK);
        }
    } else if (ok && K_I8 != c->kind && (K_I16 != c->kind || 3 * (int64_t)nprocs * iters + 7 < 32768)) {
        /* signed char (and short with very many operations) wraps: only
         * the final totals are checked */
        int64_t lo_a = ia + bk->run_a[pos], lo_b = ib + bk->run_b[pos];
        int64_t hi_a = ia + bk->tot_a[pos] - (bk->own_a[pos] - bk->run_a[pos]);
        int64_t hi_b = ib + bk->tot_b[pos] - (bk->own_b[pos] - bk->run_b[pos]);
        ok = fa >= lo_a && fa <= hi_a && fb >= lo_b && fb <= hi_b;
    }
    if (!ok && c->digits) {
        char d1[64], d2[64], d3[64];
        R->bad++;
        TU_CHECK(0, RFMT ": %s #%d to %d: fetched element %lld = %s is no possible intermediate: "
                 "per-origin digits of fetched - initial %s, own earlier additions %s, final %s",
                 RARGS(R), oname[o->what], k, o->target, (long long)pos, fmt_elem(c->kind, p, s1, sizeof(s1)),
                 fmt_digits(fa - ia, d1, sizeof(d1)), fmt_digits(bk->run_a[pos], d2, sizeof(d2)),
                 fmt_digits(bk->tot_a[pos], d3, sizeof(d3)));
    } else if (!ok) {
        R->bad++;
        TU_CHECK(0, RFMT ": %s #%d to %d: fetched element %lld = %s is no possible intermediate "
                 "(own earlier additions a=%lld b=%lld, final a=%lld b=%lld, initial a=%lld b=%lld)",
                 RARGS(R), oname[o->what], k, o->target, (long long)pos, fmt_elem(c->kind, p, s1, sizeof(s1)),
                 (long long)bk->run_a[pos], (long long)bk->run_b[pos], (long long)(bk->tot_a[pos]),
                 (long long)bk->tot_b[pos], (long long)ia, (long long)ib);
    }
}

static void run_round(round_t *R, uint64_t seed, book_t *books, char **slots, char *res)
{
    const bcase_t *c = R->c;
    const size_t ext = kind_size[c->kind];
    const int n = (int)N;
    bop_t *ops;
    MPI_Aint wbytes = (MPI_Aint)((N + GUARD) * ext);
    tu_win_t w;
    int nt = M_MANY == R->mode ? nprocs : 1, since_flush = 0, errs = tu_errors;
    double t0 = MPI_Wtime();

    snprintf(R->where, sizeof(R->where), RFMT, RARGS(R));
    tu_where = R->where;
    tu_win_create(R->flavor, wbytes, (int)ext, MPI_INFO_NULL, MPI_COMM_WORLD, &w);
    if (MPI_WIN_NULL == w.win) {
        if (0 == me) printf("  %-14s %-8s %-22s n/a (no shared window)\n", c->name, tu_flavor_names[R->flavor],
                            mname[R->mode]);
        return;
    }

    /* expected contents: every origin's operations, generated here */
    R->all = malloc(sizeof(bop_t) * (size_t)iters * nprocs);
    for (int t = 0; t < nt; t++) book_reset(c, &books[t], N);
    for (int r = 0; r < nprocs; r++) {
        ops = R->all + (size_t)r * iters;
        make_ops(ops, iters, r, seed, c, R->mode, R->t0, nprocs, n);
        for (int k = 0; k < iters; k++) {
            book_t *bk = &books[M_MANY == R->mode ? ops[k].target : 0];
            book_apply(c, &ops[k], r, k, nprocs, bk->tot_a, bk->tot_b);
            if (r == me) book_apply(c, &ops[k], r, k, nprocs, bk->own_a, bk->own_b);
        }
    }
    ops = R->all + (size_t)me * iters;

    /* initial contents */
    TU_MPI(MPI_Win_lock(MPI_LOCK_EXCLUSIVE, me, 0, w.win));
    for (int64_t p = 0; p < N; p++) {
        int64_t a, b;
        init_val(c, p, &a, &b);
        set_elem(c->kind, (char *)w.base + p * ext, a, b);
    }
    memset((char *)w.base + N * ext, GUARD_BYTE, GUARD * ext);
    TU_MPI(MPI_Win_unlock(me, w.win));
    MPI_Barrier(MPI_COMM_WORLD);

    if (M_SHARED == R->mode) TU_MPI(MPI_Win_lock(MPI_LOCK_SHARED, R->t0, 0, w.win));
    else TU_MPI(MPI_Win_lock_all(0, w.win));

    for (int k = 0; k < iters; k++) {
        const bop_t *o = &ops[k];
        book_t *bk = &books[M_MANY == R->mode ? o->target : 0];
        char *ob = slots[k % NSLOT];
        MPI_Datatype odt = c->dt, tdt = c->dt, vt = MPI_DATATYPE_NULL, vo = MPI_DATATYPE_NULL;
        int ocount = o->count, tcount = o->count;
        MPI_Aint disp = tu_disp(&w, o->target, o->start);
        int64_t a, b;

        if (since_flush == NSLOT) {
            /* origin buffers are reused: complete what used them */
            if (M_SHARED == R->mode) TU_MPI(MPI_Win_flush(R->t0, w.win));
            else TU_MPI(MPI_Win_flush_all(w.win));
            since_flush = 0;
        }
        since_flush++;
        for (int64_t i = 0; i < o->count; i++) {
            contrib(c, me, k, i, op_pos(o, i), nprocs, &a, &b);
            set_elem(c->kind, ob + (o->ovec ? 2 * i : i) * ext, a, b);
            if (o->ovec && i + 1 < o->count)   /* a gap an origin must not read */
                set_elem(c->kind, ob + (2 * i + 1) * ext, 1000, 0);
        }
        if (o->tvec) {
            TU_MPI(MPI_Type_vector(o->count, 1, 2, c->dt, &vt));
            TU_MPI(MPI_Type_commit(&vt));
            tdt = vt; tcount = 1;
        }
        if (o->ovec) {
            TU_MPI(MPI_Type_vector(o->count, 1, 2, c->dt, &vo));
            TU_MPI(MPI_Type_commit(&vo));
            odt = vo; ocount = 1;
        }
        switch (o->what) {
        case O_ACC:
        case O_ACC1:
            TU_MPI(MPI_Accumulate(ob, ocount, odt, o->target, disp, tcount, tdt, op_handle(c->op), w.win));
            break;
        case O_FOP:
        case O_GACC:
            /* earlier operations to this target complete first: their
             * additions are in `run`, and must show in what is fetched */
            TU_MPI(MPI_Win_flush(o->target, w.win));
            if (O_FOP == o->what)
                TU_MPI(MPI_Fetch_and_op(ob, res, c->dt, o->target, disp, op_handle(c->op), w.win));
            else
                TU_MPI(MPI_Get_accumulate(ob, ocount, odt, res, o->count, c->dt, o->target, disp, tcount, tdt,
                                          op_handle(c->op), w.win));
            TU_MPI(MPI_Win_flush(o->target, w.win));
            for (int64_t i = 0; i < o->count; i++)
                check_fetched(R, o, k, bk, op_pos(o, i), res + i * ext);
            break;
        }
        if (MPI_DATATYPE_NULL != vt) MPI_Type_free(&vt);
        if (MPI_DATATYPE_NULL != vo) MPI_Type_free(&vo);
        /* counted as added now: only read after the next flush to the target */
        for (int64_t i = 0; i < o->count; i++) {
            contrib(c, me, k, i, op_pos(o, i), nprocs, &a, &b);
            book_add(c, bk->run_a, bk->run_b, a, b, op_pos(o, i));
        }
    }
    if (M_SHARED == R->mode) TU_MPI(MPI_Win_unlock(R->t0, w.win));
    else TU_MPI(MPI_Win_unlock_all(w.win));
    MPI_Barrier(MPI_COMM_WORLD);

    /* final contents of this rank's window */
    if (M_MANY == R->mode || me == R->t0) {
        book_t *bk = &books[M_MANY == R->mode ? me : 0];
        int wrong = 0;
        char exp[64], s1[96], s2[96];
        TU_MPI(MPI_Win_lock(MPI_LOCK_EXCLUSIVE, me, 0, w.win));
        TU_MPI(MPI_Win_sync(w.win));
        for (int64_t p = 0; p < N; p++) {
            const char *got = (const char *)w.base + p * ext;
            int64_t a, b;
            init_val(c, p, &a, &b);
            if (OP_MAXLOC == c->op) { a = bk->tot_a[p]; b = bk->tot_b[p]; }
            else { a += bk->tot_a[p]; b += bk->tot_b[p]; }
            set_elem(c->kind, exp, a, b);
            if (!eq_elem(c->kind, got, exp)) {
                if (wrong++ < 5)
                    TU_CHECK(0, RFMT ": target elem %lld = %s, expected %s", RARGS(R), (long long)p,
                             fmt_elem(c->kind, got, s1, sizeof(s1)), fmt_elem(c->kind, exp, s2, sizeof(s2)));
            }
        }
        TU_CHECK(0 == wrong, RFMT ": %d of %lld target elements wrong", RARGS(R), wrong, (long long)N);
        TU_CHECK(sentinel_ok((const char *)w.base + N * ext, GUARD * ext, GUARD_BYTE),
                 RFMT ": guard elements behind the window's N elements were written", RARGS(R));
        TU_MPI(MPI_Win_unlock(me, w.win));
    }
    errs = tu_errors - errs;
    MPI_Allreduce(MPI_IN_PLACE, &errs, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    tu_win_free(&w);
    if (0 == me) printf("  %-14s %-8s %-22s %.2fs%s\n", c->name, tu_flavor_names[R->flavor], mname[R->mode],
                        MPI_Wtime() - t0, errs ? "  FAILED" : "");
    free(R->all);
}

int main(int argc, char **argv)
{
    int all_modes = tu_opt_flag(argc, argv, "--all-modes"), rc;
    book_t *books;
    char *slots[NSLOT], *res;
    size_t maxext = sizeof(long double) > 16 ? sizeof(long double) : 16;

    for (int i = 1; i < argc; i++)
        if (0 == strcmp(argv[i], "--no-direct")) tu_tune("direct=0");
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &me);
    MPI_Comm_size(MPI_COMM_WORLD, &nprocs);
    N = tu_opt_long(argc, argv, "-n", 100000);
    iters = (int)tu_opt_long(argc, argv, "-i", tu_slow_transport() ? 24 : 48);
    if (N < 16) N = 16;
    if (iters < 2) iters = 2;
    tu_watchdog("acc_bulk_atomic", (unsigned)tu_opt_long(argc, argv, "--timeout", 150));
    init_cases(nprocs, iters);
    if (0 == me)
        printf("acc_bulk_atomic: %d ranks, %lld elements, %d operations per rank and round%s\n", nprocs,
               (long long)N, iters, cases[3].digits ? "" : " (no digit checks: more than 4 ranks or too many operations)");

    books = calloc((size_t)nprocs, sizeof(book_t));
    for (int t = 0; t < nprocs; t++) {
        int64_t **arr[6] = { &books[t].tot_a, &books[t].tot_b, &books[t].own_a, &books[t].own_b,
                             &books[t].run_a, &books[t].run_b };
        for (int j = 0; j < 6; j++) *arr[j] = malloc(sizeof(int64_t) * (size_t)N);
    }
    for (int s = 0; s < NSLOT; s++) slots[s] = malloc(2 * (size_t)N * maxext);
    res = malloc((size_t)N * maxext);

    uint64_t round_no = 0;
    for (int ci = 0; ci < NCASES; ci++) {
        for (int f = 0; f < TU_NFLAVORS_ALL; f++) {
            if (!tu_flavor_enabled(f)) continue;
            for (int m = 0; m < NMODES; m++) {
                round_t R;
                round_no++;
                /* rotating modes: every (case, flavor) one mode, every (case, mode) some flavor */
                if (!all_modes && m != (ci + f) % NMODES) continue;
                memset(&R, 0, sizeof(R));
                R.flavor = f; R.mode = m; R.c = &cases[ci];
                R.t0 = (int)(round_no % (uint64_t)nprocs);
                run_round(&R, round_no, books, slots, res);
            }
        }
    }

    for (int t = 0; t < nprocs; t++) {
        free(books[t].tot_a); free(books[t].tot_b); free(books[t].own_a);
        free(books[t].own_b); free(books[t].run_a); free(books[t].run_b);
    }
    free(books);
    for (int s = 0; s < NSLOT; s++) free(slots[s]);
    free(res);
    alarm(0);
    rc = tu_finish("acc_bulk_atomic");
    MPI_Finalize();
    return rc;
}
