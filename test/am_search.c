/* am_search (design T2; S1, S3, S4): remote search.  Each rank's window
 * holds a database of NDB 20-char records (10-char key, 10-char value).  An
 * AM segment is a 20-char query (key + 10 filler chars); its 20-char answer
 * is the whole matching record, or 20 zero bytes when no key matches.  Half
 * the queries hit (a record chosen by origin, round and segment), half miss.
 * Every rank queries every other rank, in each window flavor and epoch kind,
 * with three datatype shapes (one op each; the handler learns the element
 * sizes from extra_state and checks the counts it gets):
 *   A: origin MPI_CHAR x20 -> target MPI_CHAR (N = M = 20), persistent MPI_CHAR
 *   B: origin MPI_CHAR x20 -> target contiguous(20, MPI_CHAR) (N = M = 1),
 *      persistent contiguous(20) x NDB
 *   C: origin contiguous(20) x1 -> target MPI_CHAR (N = 20), output target
 *      contiguous(20) (M = 1) from origin MPI_CHAR x20
 * Answers are checked byte for byte after the epoch; the database must stay
 * unchanged. */
#include "mpix_ucxx.h"
#include "testutil.h"

#define NDB 256
#define RL 20          /* record / query / answer length */
#define KL 10          /* key length */
#define NQ 64          /* queries (segments) per AM */
#define NSHAPE 3

typedef struct { int in_elem, out_elem, p_elem; } shape_t;
static const shape_t shapes[NSHAPE] = { { 1, 1, 1 }, { RL, RL, RL }, { 1, RL, 1 } };
static int rank, nprocs;
static MPI_Datatype c20;

static char hchar(unsigned a, unsigned b, unsigned c)
{
    unsigned x = a * 2654435761u ^ (b + 7) * 40503u ^ (c + 3) * 2246822519u;
    x ^= x >> 13; x *= 0x5bd1e995u; x ^= x >> 15;
    return (char) ('a' + x % 26);
}

/* Record j of the database of rank t; j >= NDB gives keys that are nowhere. */
static void record(int t, int j, char *r)
{
    r[0] = (char) ('A' + j / (26 * 26) % 26);
    r[1] = (char) ('A' + j / 26 % 26);
    r[2] = (char) ('A' + j % 26);
    for (int i = 3; i < KL; i++) r[i] = hchar(t, j, i);
    for (int i = KL; i < RL; i++) r[i] = hchar(t + 1000, j, i);
}

/* Query s of round `round` from this rank to t: record index, and whether it hits. */
static int query_index(int t, int round, int s, int *hit)
{
    unsigned x = (unsigned) (s * 7919 + round * 104729 + rank * 31 + t * 17);
    *hit = (s + round) % 2 == 0;
    return *hit ? (int) (x % NDB) : NDB + (int) (x % 100);
}

static void make_query(int t, int round, int s, char *q)
{
    int hit, j = query_index(t, round, s, &hit);
    char r[RL];
    record(t, j, r);
    memcpy(q, r, KL);
    for (int i = KL; i < RL; i++) q[i] = hchar(rank + 5000, s, i);   /* filler, ignored */
}

static void expected_answer(int t, int round, int s, char *a)
{
    int hit, j = query_index(t, round, s, &hit);
    if (hit) record(t, j, a);
    else memset(a, 0, RL);
}

static int search_fn(const void *input_addr, int input_segment_count,
                     MPI_Datatype input_segment_datatype, void *persistent_addr,
                     int persistent_count, MPI_Datatype persistent_datatype, void *output_addr,
                     int output_segment_count, MPI_Datatype output_segment_datatype,
                     int num_segments, int segment_offset, void *extra_state)
{
    const shape_t *sh = extra_state;
    const char *in = input_addr;
    const char *db = persistent_addr;
    char *out = output_addr;
    (void) input_segment_datatype; (void) persistent_datatype; (void) output_segment_datatype;
    (void) segment_offset;
    if (input_segment_count * sh->in_elem != RL || output_segment_count * sh->out_elem != RL ||
        persistent_count * sh->p_elem != NDB * RL || num_segments < 1) {
        return MPI_ERR_ARG;
    }
    for (int k = 0; k < num_segments; k++) {
        const char *q = in + (size_t) k * RL;
        char *a = out + (size_t) k * RL;
        int found = 0;
        for (int j = 0; j < NDB && !found; j++) {
            if (0 == memcmp(db + (size_t) j * RL, q, KL)) {
                memcpy(a, db + (size_t) j * RL, RL);
                found = 1;
            }
        }
        if (!found) memset(a, 0, RL);
    }
    return MPI_SUCCESS;
}

int main(int argc, char **argv)
{
    int *targets, ntg = 0;
    char *in, *out, *db;
    char where[160];
    MPI_Datatype tin[NSHAPE], tout[NSHAPE], tp[NSHAPE];
    int pcount[NSHAPE];

    tu_am_start(&argc, &argv, "am_search", 45, &rank, &nprocs);
    MPI_Type_contiguous(RL, MPI_CHAR, &c20);
    MPI_Type_commit(&c20);
    tin[0] = MPI_CHAR; tout[0] = MPI_CHAR; tp[0] = MPI_CHAR; pcount[0] = NDB * RL;
    tin[1] = c20;      tout[1] = c20;      tp[1] = c20;      pcount[1] = NDB;
    tin[2] = MPI_CHAR; tout[2] = c20;      tp[2] = MPI_CHAR; pcount[2] = NDB * RL;

    targets = malloc(nprocs * sizeof(int));
    for (int t = 0; t < nprocs; t++) if (t != rank) targets[ntg++] = t;
    in = malloc((size_t) nprocs * NSHAPE * NQ * RL);
    out = malloc((size_t) nprocs * NSHAPE * NQ * RL);
    db = malloc(NDB * RL);
    for (int j = 0; j < NDB; j++) record(rank, j, db + j * RL);

    for (int f = 0; f < TU_NFLAVORS; f++) {
        tu_win_t w;
        MPIX_Am_op op[NSHAPE];
        void *ubuf;
        if (!tu_flavor_enabled(f)) continue;
        tu_win_create(f, NDB * RL, 1, MPI_INFO_NULL, MPI_COMM_WORLD, &w);
        memcpy(w.base, db, NDB * RL);
        for (int v = 0; v < NSHAPE; v++) op[v] = tu_am_op(search_fn, (void *) &shapes[v], 100 + v, w.win);
        ubuf = tu_am_attach(w.win, 4096);   /* seg_need 128; MPI_Win_free detaches it */
        MPI_Barrier(MPI_COMM_WORLD);

        for (int ep = 0; ep < TU_NEPOCHS; ep++) {
            int round = f * TU_NEPOCHS + ep;
            snprintf(where, sizeof(where), "%s window, %s epoch", tu_flavor_names[f],
                     tu_epoch_names[ep]);
            tu_where = where;
            for (int i = 0; i < ntg; i++)
                for (int v = 0; v < NSHAPE; v++)
                    for (int s = 0; s < NQ; s++)
                        make_query(targets[i], round, s,
                                   in + (((size_t) i * NSHAPE + v) * NQ + s) * RL);
            memset(out, 0x55, (size_t) nprocs * NSHAPE * NQ * RL);
            TU_AM(tu_am_epoch_open(ep, w.win, targets, ntg, targets, ntg));
            for (int i = 0; i < ntg; i++) {
                for (int v = 0; v < NSHAPE; v++) {
                    char *ib = in + ((size_t) i * NSHAPE + v) * NQ * RL;
                    char *ob = out + ((size_t) i * NSHAPE + v) * NQ * RL;
                    if (2 == v) {
                        TU_AM(MPIX_Am(ib, 1, c20, ob, RL, MPI_CHAR, NQ, targets[i], tin[v],
                                      tu_disp(&w, targets[i], 0), pcount[v], tp[v], tout[v],
                                      op[v], w.win));
                    } else {
                        TU_AM(MPIX_Am(ib, RL, MPI_CHAR, ob, RL, MPI_CHAR, NQ, targets[i], tin[v],
                                      tu_disp(&w, targets[i], 0), pcount[v], tp[v], tout[v],
                                      op[v], w.win));
                    }
                }
            }
            TU_AM(tu_am_epoch_close(ep, w.win, targets, ntg, targets, ntg));
            for (int i = 0; i < ntg; i++)
                for (int v = 0; v < NSHAPE; v++) {
                    int bad = 0;
                    for (int s = 0; s < NQ; s++) {
                        char want[RL];
                        const char *got = out + (((size_t) i * NSHAPE + v) * NQ + s) * RL;
                        expected_answer(targets[i], round, s, want);
                        if (memcmp(want, got, RL) && bad++ < 2) {
                            TU_CHECK(0, "%s: shape %c, target %d, query %d: answer '%.20s' "
                                     "(first byte %d), expected '%.20s' (first byte %d)",
                                     where, 'A' + v, targets[i], s, got, got[0], want, want[0]);
                        }
                    }
                    if (bad > 2) TU_CHECK(0, "%s: shape %c, target %d: %d wrong answers", where,
                                          'A' + v, targets[i], bad);
                }
            MPI_Barrier(MPI_COMM_WORLD);
            TU_CHECK(0 == memcmp(w.base, db, NDB * RL), "%s: the database changed", where);
            MPI_Barrier(MPI_COMM_WORLD);
        }
        tu_where = "teardown";
        for (int v = 0; v < NSHAPE; v++) tu_am_op_done(&op[v], w.win);
        tu_win_free(&w);   /* detaches the user buffer (S19) */
        free(ubuf);
    }
    alarm(0);
    MPI_Type_free(&c20);
    free(in); free(out); free(db); free(targets);
    {
        int rc = tu_finish("am_search");
        MPI_Finalize();
        return rc;
    }
}
