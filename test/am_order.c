/* am_order (design T6; S13, S14, S17, S21/S22): AM ordering.  Every rank
 * sends to every other rank, in one epoch: first a large AM (8 segments of
 * 10000 bytes: seg_need 10112 > the 8 KiB internal buffer, so it needs the
 * target's attached user buffer, or origin computation), then K small AMs
 * (one 8-byte segment each) alternating between two ops A and B, numbered
 * seq = 0 (large, op A), 1..K.  Both ops' handler appends one entry
 * {origin, op, seq, segment} per segment to a log in the target's window
 * (the persistent region of every AM: the whole log, so regions overlap;
 * slot index by __atomic fetch-add) and returns the slot index as output.
 * For each window flavor, each am_ordering value (set with MPI_Win_set_info,
 * checked with MPI_Win_get_info; allocate windows are created with
 * am_ordering=none in the creation info, then set back to the default) and each epoch kind (lock_all, fence,
 * exclusive locks), the target checks its log:
 *   - complete: every (origin, seq, segment) exactly once (all settings);
 *   - sameop: an AM and a later one with the same op: all of the first's
 *     entries come before any of the second's; diffop: likewise for
 *     different ops; sameam: an AM's segments appear in increasing order
 *     (default "sameop,diffop,sameam": each origin's entries increasing);
 * and each origin reads the target's log with MPI_Get after the epoch and
 * checks that the slot its AM returned holds its entry (S17). */
#include "mpix_ucxx.h"
#include "testutil.h"

#define K 40                  /* small AMs per origin and target */
#define LSEG 8                /* segments of the large AM */
#define LSZ 10000             /* bytes per large segment */
#define SSZ 8                 /* bytes per small segment */
#define CAP 1024              /* log entries */
#define LOGN (4 + 4 * CAP)    /* ints: count, 3 spare, entries */
#define NSET 4
#define NEPK 3

static const char *settings[NSET] = { "sameop,diffop,sameam", "sameop", "none", "diffop" };
static const int masks[NSET] = { 7, 1, 0, 2 };   /* 1 sameop, 2 diffop, 4 sameam */
static const int epkinds[NEPK] = { TU_EP_LOCK_ALL, TU_EP_FENCE, TU_EP_LOCK_EXCL };
static const int op_ids[2] = { 0, 1 };
static int rank, nprocs;

static unsigned char padbyte(int origin, int seq, int j)
{
    return (unsigned char) (j * 13 + origin * 7 + seq);
}

static int log_fn(const void *input_addr, int input_segment_count,
                  MPI_Datatype input_segment_datatype, void *persistent_addr,
                  int persistent_count, MPI_Datatype persistent_datatype, void *output_addr,
                  int output_segment_count, MPI_Datatype output_segment_datatype,
                  int num_segments, int segment_offset, void *extra_state)
{
    const unsigned char *in = input_addr;
    int *lg = persistent_addr, *out = output_addr;
    int op = *(const int *) extra_state, S = input_segment_count;
    (void) input_segment_datatype; (void) persistent_datatype; (void) output_segment_datatype;
    if (S < 8 || 1 != output_segment_count || LOGN != persistent_count) return MPI_ERR_ARG;
    for (int k = 0; k < num_segments; k++) {
        int hdr[2], idx;
        const unsigned char *seg = in + (size_t) k * S;
        memcpy(hdr, seg, 8);
        for (int j = 8; j < S; j++) {
            if (seg[j] != padbyte(hdr[0], hdr[1], j)) return MPI_ERR_ARG;
        }
        idx = __atomic_fetch_add(&lg[0], 1, __ATOMIC_SEQ_CST);
        if (idx >= CAP) return MPI_ERR_OTHER;
        lg[4 + 4 * idx + 0] = hdr[0];
        lg[4 + 4 * idx + 1] = op;
        lg[4 + 4 * idx + 2] = hdr[1];
        lg[4 + 4 * idx + 3] = segment_offset + k;
        out[k] = idx;
    }
    return MPI_SUCCESS;
}

static int am_op_of(int seq) { return 0 == seq ? 0 : (seq - 1) % 2; }
static int am_nseg(int seq) { return 0 == seq ? LSEG : 1; }

/* The target's checks of its log (see the header). */
static void check_log(const char *where, const int *lg, int mask)
{
    int n = lg[0], want = (nprocs - 1) * (LSEG + K);
    static int pos[K + 1][LSEG], minp[K + 1], maxp[K + 1];
    TU_CHECK(n == want, "%s: log has %d entries, expected %d", where, n, want);
    if (n > CAP) n = CAP;
    for (int o = 0; o < nprocs; o++) {
        int bad = 0;
        if (o == rank) continue;
        for (int q = 0; q <= K; q++) {
            minp[q] = 1 << 30; maxp[q] = -1;
            for (int s = 0; s < LSEG; s++) pos[q][s] = -1;
        }
        for (int i = 0; i < n; i++) {
            const int *e = lg + 4 + 4 * i;
            if (e[0] != o) continue;
            if (e[2] < 0 || e[2] > K || e[3] < 0 || e[3] >= am_nseg(e[2]) || e[1] != am_op_of(e[2])) {
                if (bad++ < 3) TU_CHECK(0, "%s: log entry %d is {%d,%d,%d,%d}: no such AM", where,
                                        i, e[0], e[1], e[2], e[3]);
                continue;
            }
            if (pos[e[2]][e[3]] >= 0) {
                if (bad++ < 3) TU_CHECK(0, "%s: origin %d seq %d segment %d logged twice "
                                        "(entries %d and %d)", where, o, e[2], e[3],
                                        pos[e[2]][e[3]], i);
                continue;
            }
            pos[e[2]][e[3]] = i;
            if (i < minp[e[2]]) minp[e[2]] = i;
            if (i > maxp[e[2]]) maxp[e[2]] = i;
        }
        for (int q = 0; q <= K; q++)
            for (int s = 0; s < am_nseg(q); s++) {
                if (pos[q][s] < 0 && bad++ < 3) {
                    TU_CHECK(0, "%s: origin %d seq %d segment %d missing from the log", where, o,
                             q, s);
                }
                if ((mask & 4) && s > 0 && pos[q][s] >= 0 && pos[q][s - 1] >= 0 &&
                    pos[q][s] < pos[q][s - 1] && bad++ < 3) {
                    TU_CHECK(0, "%s (sameam): origin %d seq %d: segment %d logged before "
                             "segment %d", where, o, q, s, s - 1);
                }
            }
        for (int a = 0; a <= K; a++)
            for (int b = a + 1; b <= K; b++) {
                int same = am_op_of(a) == am_op_of(b);
                int need = same ? (mask & 1) : (mask & 2);
                if (need && maxp[a] >= 0 && maxp[b] >= 0 && maxp[a] > minp[b] && bad++ < 3) {
                    TU_CHECK(0, "%s (%s): origin %d: AM seq %d (op %c) has an entry at %d "
                             "after AM seq %d (op %c) started at %d", where,
                             same ? "sameop" : "diffop", o, a, 'A' + am_op_of(a), maxp[a], b,
                             'A' + am_op_of(b), minp[b]);
                }
            }
        if (bad > 3) TU_CHECK(0, "%s: origin %d: %d log errors in all", where, o, bad);
    }
}

int main(int argc, char **argv)
{
    int *targets, ntg = 0;
    unsigned char *large_in, *small_in;
    int *outs;                 /* [target index][seq][segment] slot indices */
    int *lg_copy;
    char where[200];

    tu_am_start(&argc, &argv, "am_order", 45, &rank, &nprocs);
    targets = malloc(nprocs * sizeof(int));
    for (int t = 0; t < nprocs; t++) if (t != rank) targets[ntg++] = t;
    large_in = malloc((size_t) LSEG * LSZ);
    small_in = malloc((size_t) (K + 1) * SSZ);
    outs = malloc((size_t) nprocs * (K + 1) * LSEG * sizeof(int));
    lg_copy = malloc(LOGN * sizeof(int));
    for (int s = 0; s < LSEG; s++) {
        int hdr[2] = { rank, 0 };
        memcpy(large_in + (size_t) s * LSZ, hdr, 8);
        for (int j = 8; j < LSZ; j++) large_in[(size_t) s * LSZ + j] = padbyte(rank, 0, j);
    }
    for (int q = 1; q <= K; q++) {
        int hdr[2] = { rank, q };
        memcpy(small_in + (size_t) q * SSZ, hdr, 8);
    }

    for (int f = 0; f < TU_NFLAVORS; f++) {
        tu_win_t w;
        int *lg;
        MPIX_Am_op op[2];
        void *ubuf;
        if (!tu_flavor_enabled(f)) continue;
        {   /* allocate windows start as am_ordering=none (creation info), the others default */
            MPI_Info info = TU_ALLOCATE == f ? tu_info_new("am_ordering", "none", NULL) : MPI_INFO_NULL;
            char got[64];
            tu_win_create(f, LOGN * sizeof(int), sizeof(int), info, MPI_COMM_WORLD, &w);
            if (MPI_INFO_NULL != info) MPI_Info_free(&info);
            TU_CHECK(tu_win_info_get(w.win, "am_ordering", got, sizeof(got)) &&
                     0 == strcmp(got, TU_ALLOCATE == f ? "none" : "sameop,diffop,sameam"),
                     "%s: after creation MPI_Win_get_info am_ordering = '%s'", tu_flavor_names[f],
                     got);
        }
        lg = w.base;
        op[0] = tu_am_op(log_fn, (void *) &op_ids[0], 500, w.win);
        op[1] = tu_am_op(log_fn, (void *) &op_ids[1], 501, w.win);
        ubuf = tu_am_attach(w.win, 64 * 1024);   /* >= one large segment's 10112 */
        MPI_Barrier(MPI_COMM_WORLD);

        for (int si = 0; si < NSET; si++) {
            char got[64];
            if (si > 0 || TU_ALLOCATE == f) {
                MPI_Info info = tu_info_new("am_ordering", settings[si], NULL);
                TU_AM(MPI_Win_set_info(w.win, info));
                MPI_Info_free(&info);
            }
            TU_CHECK(tu_win_info_get(w.win, "am_ordering", got, sizeof(got)) &&
                     0 == strcmp(got, settings[si]), "%s: MPI_Win_get_info am_ordering = '%s', "
                     "expected '%s'", tu_flavor_names[f], got, settings[si]);
            for (int ei = 0; ei < NEPK; ei++) {
                int ep = epkinds[ei];
                snprintf(where, sizeof(where), "%s window, am_ordering %s, %s epoch",
                         tu_flavor_names[f], settings[si], tu_epoch_names[ep]);
                tu_where = where;
                memset(lg, 0, LOGN * sizeof(int));
                for (size_t j = 0; j < (size_t) nprocs * (K + 1) * LSEG; j++) outs[j] = -1;
                MPI_Barrier(MPI_COMM_WORLD);
                TU_AM(tu_am_epoch_open(ep, w.win, targets, ntg, targets, ntg));
                for (int i = 0; i < ntg; i++) {
                    int *o = outs + (size_t) i * (K + 1) * LSEG;
                    MPI_Aint disp = tu_disp(&w, targets[i], 0);
                    TU_AM(MPIX_Am(large_in, LSZ, MPI_BYTE, o, 1, MPI_INT, LSEG, targets[i],
                                  MPI_BYTE, disp, LOGN, MPI_INT, MPI_INT, op[0], w.win));
                    for (int q = 1; q <= K; q++) {
                        TU_AM(MPIX_Am(small_in + (size_t) q * SSZ, SSZ, MPI_BYTE, o + q * LSEG,
                                      1, MPI_INT, 1, targets[i], MPI_BYTE, disp, LOGN, MPI_INT,
                                      MPI_INT, op[am_op_of(q)], w.win));
                    }
                }
                TU_AM(tu_am_epoch_close(ep, w.win, targets, ntg, targets, ntg));
                MPI_Barrier(MPI_COMM_WORLD);
                check_log(where, lg, masks[si]);
                /* each origin reads its targets' logs: its slots hold its entries */
                for (int i = 0; i < ntg; i++) {
                    int *o = outs + (size_t) i * (K + 1) * LSEG, bad = 0;
                    TU_AM(MPI_Win_lock(MPI_LOCK_SHARED, targets[i], 0, w.win));
                    TU_AM(MPI_Get(lg_copy, LOGN, MPI_INT, targets[i], tu_disp(&w, targets[i], 0),
                                  LOGN, MPI_INT, w.win));
                    TU_AM(MPI_Win_unlock(targets[i], w.win));
                    for (int q = 0; q <= K; q++)
                        for (int s = 0; s < am_nseg(q); s++) {
                            int idx = o[q * LSEG + s];
                            const int *e = lg_copy + 4 + 4 * idx;
                            if (idx < 0 || idx >= CAP || idx >= lg_copy[0]) {
                                if (bad++ < 3) TU_CHECK(0, "%s: target %d: seq %d segment %d "
                                                        "returned slot %d (log has %d)", where,
                                                        targets[i], q, s, idx, lg_copy[0]);
                            } else if (e[0] != rank || e[1] != am_op_of(q) || e[2] != q ||
                                       e[3] != s) {
                                if (bad++ < 3) TU_CHECK(0, "%s: target %d: slot %d holds "
                                                        "{%d,%d,%d,%d}, expected {%d,%d,%d,%d}",
                                                        where, targets[i], idx, e[0], e[1], e[2],
                                                        e[3], rank, am_op_of(q), q, s);
                            }
                        }
                }
                MPI_Barrier(MPI_COMM_WORLD);
            }
        }
        tu_where = "teardown";
        tu_am_op_done(&op[0], w.win);
        tu_am_op_done(&op[1], w.win);
        TU_AM(MPIX_Am_win_buffer_detach(ubuf, w.win));
        free(ubuf);
        tu_win_free(&w);
    }
    alarm(0);
    free(targets); free(large_in); free(small_in); free(outs); free(lg_copy);
    {
        int rc = tu_finish("am_order");
        MPI_Finalize();
        return rc;
    }
}
