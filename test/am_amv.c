/* am_amv (T11): MPIX_Amv / MPIX_Ramv (S25).  Every rank searches the
 * database of next = rank+1: 78 records of 20 chars in the persistent
 * region, key char 'A'+c appearing c times (c = 1..12).  Each segment is a
 * 20-char query (key 'A'+c, c = 0..13); the handler writes the matching
 * records in database order, at most 10 (M records), and sets the segment's
 * count (0..10 matches; 11 and 12 are capped at 10; key '!' sets M+1, key
 * '?' sets -1).  Per window flavor (create, allocate, dynamic, shared), 4 AMs
 * of 16 segments per variant, under lock_all, completed by unlock_all
 * (MPIX_Amv) or MPI_Wait (MPIX_Ramv):
 *   V1 origin MPI_CHAR (20 in, 200 out) vs target contiguous(20, MPI_CHAR)
 *      (N = 1, M = 10): counts = 20 x matches (conversion)
 *   V2 contiguous(20) on both sides: counts = matches
 *   V3 MPI_CHAR on both sides (N = 20, M = 200): counts = 20 x matches
 *   V4 origin contiguous(2, MPI_CHAR) (100 out) vs target contiguous(20):
 *      counts = 10 x matches
 *   V5 MPIX_Ramv with V1's types
 * Checked: every count exactly, every produced prefix byte (segment s at
 * the fixed offset s * 200 bytes).  Errors: origin output contiguous(20) vs
 * target output MPI_CHAR (size rule) -> MPI_ERR_TYPE at the call; a count
 * > M and a count < 0 -> MPI_ERR_COUNT at the flush while the AMs issued just
 * before and after in the same epoch are right; afterwards a correct AMV.
 * Flags: tu_am_args, --pack N (osc/ucxx's amv_pack_threshold, tu_tune). */
#include "uamx_util.h"

#define RL 20          /* record / query length */
#define MAXM 10        /* records per segment */
#define NREC 78
#define SEGB (MAXM * RL)
#define NSEG 16
#define NAMS 4
#define WINB 2048

static int rank, nprocs, next;
static MPI_Datatype rec_t, two_t;
static MPIX_Am_op op;

static int key_of(int j)   /* record j's key: c in 1..12, c appears c times */
{
    int p = (j * 7) % NREC, c = 1;
    while (p >= c) { p -= c; c++; }
    return c;
}
static void rec(int t, int j, char *r)
{
    char tmp[32];
    memset(tmp, 0, sizeof(tmp));
    snprintf(tmp, sizeof(tmp), "%crec%02d.t%02d.%07d", 'A' + key_of(j), j, t, j * 7777 + t);
    memcpy(r, tmp, RL);
}

static int amv_fn(const void *in, int N, MPI_Datatype dti, void *pers, int pc, MPI_Datatype dtp, void *out,
                  int M, MPI_Datatype dto, int nseg, int off, int counts[], void *extra)
{
    const char *q = in, *db = pers;
    char *o = out;
    int unit;
    (void) N; (void) dti; (void) dtp; (void) dto; (void) off; (void) extra;
    if (MAXM == M) unit = RL;
    else if (SEGB == M) unit = 1;
    else return MPI_ERR_ARG;
    if (NREC != pc && NREC * RL != pc) return MPI_ERR_ARG;
    for (int k = 0; k < nseg; k++) {
        char key = q[k * RL];
        int n = 0;
        if ('!' == key) { counts[k] = M + 1; continue; }
        if ('?' == key) { counts[k] = -1; continue; }
        for (int j = 0; j < NREC && n < MAXM; j++)
            if (db[j * RL] == key) memcpy(o + (size_t) k * SEGB + (size_t) n++ * RL, db + j * RL, RL);
        counts[k] = n * RL / unit;
    }
    return MPI_SUCCESS;
}

static int matches(int c) { return c >= 1 && c <= 12 ? (c > MAXM ? MAXM : c) : 0; }

static void query(char *q, int am, int s, char special)
{
    int c = (s * 5 + am + rank) % 14;
    memset(q, '.', RL);
    q[0] = special ? special : (char) ('A' + c);
    snprintf(q + 1, RL - 1, "q%d.%d.%d", rank, am, s);
}

/* check one AMV's results; cunit: origin output elements per record */
static void check(const char *in, const char *out, const int *counts, int nseg, int cunit, const char *what)
{
    int bad = 0;
    for (int s = 0; s < nseg; s++) {
        int c = in[s * RL] - 'A', m = matches(c), n = 0;
        if (counts[s] != m * cunit) {
            if (bad++ < 3)
                TU_CHECK(0, "%s: segment %d (key %c): count %d, expected %d", what, s, in[s * RL], counts[s],
                         m * cunit);
            continue;
        }
        for (int j = 0; j < NREC && n < m; j++) {
            char r[RL];
            if (key_of(j) != c) continue;
            rec(next, j, r);
            if (memcmp(out + (size_t) s * SEGB + (size_t) n * RL, r, RL) && bad++ < 3)
                TU_CHECK(0, "%s: segment %d match %d: '%.20s', expected '%.20s'", what, s, n,
                         out + (size_t) s * SEGB + (size_t) n * RL, r);
            n++;
        }
    }
}

static void run(int f)
{
    tu_win_t w;
    char *in = malloc(NAMS * NSEG * RL), *out = malloc(NAMS * NSEG * SEGB), what[64];
    int *counts = malloc(sizeof(int) * NAMS * NSEG);
    MPI_Aint pd;
    struct { const char *name; MPI_Datatype oin; int ci; MPI_Datatype oout; int co; MPI_Datatype tin;
             MPI_Datatype tout; int cunit; int req; } v[] = {
        { "V1 char vs contiguous(20)", MPI_CHAR, RL, MPI_CHAR, SEGB, rec_t, rec_t, RL, 0 },
        { "V2 contiguous(20)", rec_t, 1, rec_t, MAXM, rec_t, rec_t, 1, 0 },
        { "V3 char", MPI_CHAR, RL, MPI_CHAR, SEGB, MPI_CHAR, MPI_CHAR, RL, 0 },
        { "V4 contiguous(2) vs contiguous(20)", MPI_CHAR, RL, two_t, SEGB / 2, rec_t, rec_t, RL / 2, 0 },
        { "V5 MPIX_Ramv", MPI_CHAR, RL, MPI_CHAR, SEGB, rec_t, rec_t, RL, 1 },
    };

    ux_win_create(f, WINB, MPI_INFO_NULL, &w);
    pd = ux_disp(&w, next, 0);
    TU_MPI(ux_register(op, 100, w.win));
    ux_lock_self(&w);
    for (int j = 0; j < NREC; j++) rec(rank, j, (char *) w.base + j * RL);
    ux_unlock_self(&w);
    MPI_Barrier(MPI_COMM_WORLD);

    for (size_t vi = 0; vi < sizeof(v) / sizeof(v[0]); vi++) {
        MPI_Request reqs[NAMS];
        snprintf(what, sizeof(what), "%s (%s)", v[vi].name, ux_fname(f));
        tu_where = what;
        memset(out, 0, NAMS * NSEG * SEGB);
        for (int i = 0; i < NAMS * NSEG; i++) counts[i] = -99;
        TU_MPI(MPI_Win_lock_all(0, w.win));
        for (int am = 0; am < NAMS; am++) {
            char *qi = in + am * NSEG * RL;
            int rc;
            for (int s = 0; s < NSEG; s++) query(qi + s * RL, am + 10 * (int) vi, s, 0);
            if (v[vi].req)
                rc = MPIX_Ramv(qi, v[vi].ci, v[vi].oin, out + am * NSEG * SEGB, v[vi].co, v[vi].oout, NSEG, next,
                               v[vi].tin, pd, NREC, rec_t, v[vi].tout, op, w.win, counts + am * NSEG, &reqs[am]);
            else
                rc = MPIX_Amv(qi, v[vi].ci, v[vi].oin, out + am * NSEG * SEGB, v[vi].co, v[vi].oout, NSEG, next,
                              v[vi].tin, pd, NREC, rec_t, v[vi].tout, op, w.win, counts + am * NSEG);
            UX_EXPECT(rc, MPI_SUCCESS, "%s: AM %d", what, am);
        }
        if (v[vi].req) {
            for (int am = 0; am < NAMS; am++)
                UX_EXPECT(MPI_Wait(&reqs[am], MPI_STATUS_IGNORE), MPI_SUCCESS, "%s: MPI_Wait %d", what, am);
            for (int am = 0; am < NAMS; am++)   /* complete at MPI_Wait, before the unlock */
                check(in + am * NSEG * RL, out + am * NSEG * SEGB, counts + am * NSEG, NSEG, v[vi].cunit, what);
        }
        UX_EXPECT(MPI_Win_unlock_all(w.win), MPI_SUCCESS, "%s: unlock_all", what);
        for (int am = 0; am < NAMS; am++)
            check(in + am * NSEG * RL, out + am * NSEG * SEGB, counts + am * NSEG, NSEG, v[vi].cunit, what);
    }

    /* errors */
    snprintf(what, sizeof(what), "errors (%s)", ux_fname(f));
    tu_where = what;
    TU_MPI(MPI_Win_lock_all(0, w.win));
    query(in, 0, 0, 0);
    UX_EXPECT(MPIX_Amv(in, RL, MPI_CHAR, out, MAXM, rec_t, 1, next, rec_t, pd, NREC, rec_t, MPI_CHAR, op,
                       w.win, counts), MPI_ERR_TYPE,
              "%s: origin output contiguous(20) vs target MPI_CHAR (size rule)", what);
    for (int bad = 0; bad < 2; bad++) {
        /* AM 0 right, AM 1 with a bad count in segment 2 of 5, AM 2 right */
        char special = bad ? '?' : '!';
        for (int am = 0; am < 3; am++) {
            for (int s = 0; s < 5; s++) query(in + (am * 5 + s) * RL, 50 + am, s, 1 == am && 2 == s ? special : 0);
            for (int s = 0; s < 5; s++) counts[am * 5 + s] = -99;
            UX_EXPECT(MPIX_Amv(in + am * 5 * RL, RL, MPI_CHAR, out + am * 5 * SEGB, SEGB, MPI_CHAR, 5, next, rec_t,
                               pd, NREC, rec_t, rec_t, op, w.win, counts + am * 5), MPI_SUCCESS, "%s: AMV %d", what,
                      am);
        }
        UX_EXPECT(MPI_Win_flush(next, w.win), MPI_ERR_COUNT, "%s: handler count %s", what,
                  bad ? "-1" : "M+1");
        check(in, out, counts, 5, RL, what);
        check(in + 10 * RL, out + 10 * SEGB, counts + 10, 5, RL, what);
    }
    UX_EXPECT(MPI_Win_unlock_all(w.win), MPI_SUCCESS, "%s: unlock_all after the errors", what);
    TU_MPI(MPI_Win_lock_all(0, w.win));
    for (int s = 0; s < 8; s++) query(in + s * RL, 99, s, 0);
    UX_EXPECT(MPIX_Amv(in, RL, MPI_CHAR, out, SEGB, MPI_CHAR, 8, next, rec_t, pd, NREC, rec_t, rec_t, op, w.win,
                       counts), MPI_SUCCESS, "%s: AMV after the errors", what);
    UX_EXPECT(MPI_Win_unlock_all(w.win), MPI_SUCCESS, "%s: unlock_all", what);
    check(in, out, counts, 8, RL, what);

    MPI_Barrier(MPI_COMM_WORLD);
    TU_MPI(MPIX_Am_win_op_deregister(op, w.win));
    ux_win_free(&w);
    free(in); free(out); free(counts);
}

int main(int argc, char **argv)
{
    long pack = tu_opt_long(argc, argv, "--pack", -1);
    if (pack >= 0) {
        char v[64];
        snprintf(v, sizeof(v), "amv_pack_threshold=%ld", pack);
        tu_tune(v);
    }
    tu_am_args(argc, argv);
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &nprocs);
    next = (rank + 1) % nprocs;
    tu_watchdog("am_amv", (unsigned) tu_opt_long(argc, argv, "--timeout", 60));
    MPI_Type_contiguous(RL, MPI_CHAR, &rec_t);
    MPI_Type_commit(&rec_t);
    MPI_Type_contiguous(2, MPI_CHAR, &two_t);
    MPI_Type_commit(&two_t);
    TU_MPI(MPIX_Amv_op_create(amv_fn, NULL, &op));
    for (int f = 0; f < UX_NFLAVORS; f++)
        if (ux_flavor_enabled(f)) run(f);
    TU_MPI(MPIX_Am_op_free(&op));
    MPI_Type_free(&rec_t);
    MPI_Type_free(&two_t);
    int rc = tu_finish("am_amv");
    MPI_Finalize();
    return rc;
}
