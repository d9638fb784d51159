/* am_stream (design T5; S2, S6, S7, S9, S13/S14 sameop/sameam): streaming.
 * Every rank is the origin of rank+1.  An AM has num_segments segments of S
 * bytes in (MPI_BYTE) and 16 + S bytes out; its persistent region is one
 * int64 counter (the origin's slot in the target's window).  Each handler
 * invocation takes a sequence number from the counter (__atomic, so it works
 * wherever the handler runs) and writes into each of its output segments k:
 *     { segment_offset, num_segments, segment_offset + k, seq }  (4 int32)
 * followed by the segment's input bytes XOR 0xA5.  The origin checks:
 *   - every segment ran exactly once and unsplit: invocations partition
 *     [0, num_segments) into consecutive runs, each segment's header names
 *     its own index and its invocation's (offset, count);
 *   - 1 <= count <= am_pipeline_unit (for `auto`: max(1, floor(chunk /
 *     seg_need)), seg_need = a64(S) + a64(16 + S), S7);
 *   - seq increases by one per invocation in segment order (sameam) and
 *     continues across the AMs of an epoch in issue order (sameop: all AMs
 *     of the origin use the same op and overlapping regions);
 *   - the payload came through both ways; num_segments == 0 is a no-op
 *     (output untouched, no invocation);
 * and at the end each target checks its counters against the number of
 * invocations its origin saw.  Pipeline units: auto, 1, 7, 40, 100, 1000000
 * (MPI_Win_set_info am_pipeline_unit, checked with MPI_Win_get_info);
 * segment sizes 1 B, 20 B, 3000 B, 64 KiB; num_segments 0, 1 and many
 * (1000, 1000, 300, 24; under UCX_TLS=tcp 1000, 1000, 100, 8).  Epoch kinds
 * rotate over units and flavors; under locks each AM is completed by a flush
 * (flush, flush_all; flush_local or flush_local_all for lock_all) and
 * checked at once.
 * --am-chunk N sets osc/ucxx's am_chunk (default 2048; tu_tune), which `auto` uses. */
#include "mpix_ucxx.h"
#include "testutil.h"
#include <stdint.h>

#define NSIZE 4
#define NNS 3
#define NUNIT 6
#define HDR 16
static const int sizes[NSIZE] = { 1, 20, 3000, 65536 };
static const long units[NUNIT] = { 0 /* auto */, 1, 7, 40, 100, 1000000 };
static int rank, nprocs, target, origin;
static long chunk;

static int stream_fn(const void *input_addr, int input_segment_count,
                     MPI_Datatype input_segment_datatype, void *persistent_addr,
                     int persistent_count, MPI_Datatype persistent_datatype, void *output_addr,
                     int output_segment_count, MPI_Datatype output_segment_datatype,
                     int num_segments, int segment_offset, void *extra_state)
{
    const unsigned char *in = input_addr;
    unsigned char *out = output_addr;
    int S = input_segment_count;
    int32_t hdr[4];
    (void) input_segment_datatype; (void) persistent_datatype; (void) output_segment_datatype;
    (void) extra_state;
    if (output_segment_count != HDR + S || 1 != persistent_count || num_segments < 1) {
        return MPI_ERR_ARG;
    }
    hdr[0] = segment_offset;
    hdr[1] = num_segments;
    hdr[3] = (int32_t) __atomic_fetch_add((int64_t *) persistent_addr, 1, __ATOMIC_SEQ_CST);
    for (int k = 0; k < num_segments; k++) {
        unsigned char *o = out + (size_t) k * (HDR + S);
        const unsigned char *i = in + (size_t) k * S;
        hdr[2] = segment_offset + k;
        memcpy(o, hdr, HDR);
        for (int j = 0; j < S; j++) o[HDR + j] = i[j] ^ 0xA5;
    }
    return MPI_SUCCESS;
}

static unsigned char pbyte(int origin, int am, long s, int j)
{
    return (unsigned char) ((s * 131 + j * 7 + am * 29 + origin * 3) ^ (j >> 8));
}

static int many(int si)
{
    static const int m[NSIZE] = { 1000, 1000, 300, 24 }, mt[NSIZE] = { 1000, 1000, 100, 8 };
    return tu_slow_transport() ? mt[si] : m[si];
}

/* Checks the output of AM `am` (nseg segments of S bytes); *seq: next
 * expected sequence number (-1: take the first one seen), updated; returns
 * the number of invocations seen. */
static int check_am(const char *where, const unsigned char *out, int am, int S, int nseg,
                    long bound, int64_t *seq)
{
    int ninv = 0, errs = 0;
    long next = 0;          /* first segment of the next invocation */
    int32_t cur[4] = { 0, 0, 0, 0 };
    size_t osz = HDR + S;
    if (0 == nseg) {
        for (size_t j = 0; j < osz; j++) {
            if (0xEE != out[j]) {
                TU_CHECK(0, "%s: AM %d with num_segments 0 wrote its output", where, am);
                break;
            }
        }
        return 0;
    }
    for (long s = 0; s < nseg && errs < 3; s++) {
        int32_t h[4];
        memcpy(h, out + s * osz, HDR);
        if (s == next) {   /* an invocation starts here */
            if (h[0] != s || h[1] < 1 || h[1] > bound || s + h[1] > nseg) {
                TU_CHECK(0, "%s: AM %d (S=%d, %d segments): segment %ld starts an invocation "
                         "(offset %d, count %d); expected offset %ld, 1 <= count <= min(%ld, %ld)",
                         where, am, S, nseg, s, h[0], h[1], s, bound, (long) nseg - s);
                errs++;
                *seq = -1;   /* resynchronize at the next AM */
                break;
            }
            if (*seq >= 0 && h[3] != *seq) {
                TU_CHECK(0, "%s: AM %d (S=%d, %d segments): invocation at segment %ld has "
                         "sequence number %d, expected %ld (invocations out of order or lost)",
                         where, am, S, nseg, s, h[3], (long) *seq);
                errs++;
            }
            *seq = h[3] + 1;
            memcpy(cur, h, HDR);
            next = s + h[1];
            ninv++;
        }
        if (h[0] != cur[0] || h[1] != cur[1] || h[2] != s || h[3] != cur[3]) {
            TU_CHECK(0, "%s: AM %d (S=%d, %d segments): segment %ld header {%d,%d,%d,%d}, "
                     "expected {%d,%d,%ld,%d} (split or repeated invocation)",
                     where, am, S, nseg, s, h[0], h[1], h[2], h[3], cur[0], cur[1], s, cur[3]);
            errs++;
        }
        for (int j = 0; j < S; j++) {
            if (out[s * osz + HDR + j] != (pbyte(rank, am, s, j) ^ 0xA5)) {
                TU_CHECK(0, "%s: AM %d (S=%d): segment %ld payload byte %d is %d, expected %d",
                         where, am, S, s, j, out[s * osz + HDR + j], pbyte(rank, am, s, j) ^ 0xA5);
                errs++;
                break;
            }
        }
    }
    return ninv;
}

int main(int argc, char **argv)
{
    char where[200];
    int64_t my_invocations = 0;
    unsigned char *in[NSIZE * NNS], *out[NSIZE * NNS];
    int nsegs[NSIZE * NNS], ssz[NSIZE * NNS];

    tu_am_args(argc, argv);
    /* --am-chunk N: osc/ucxx's am_chunk (what `auto` aims at; tu_tune) */
    chunk = tu_opt_long(argc, argv, "--am-chunk", 0);
    if (chunk > 0) {
        char v[64];
        snprintf(v, sizeof(v), "am_chunk=%ld", chunk);
        tu_tune(v);
    } else {
        chunk = 2048;
    }
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &nprocs);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    tu_watchdog("am_stream", 45);
    target = (rank + 1) % nprocs;
    origin = (rank + nprocs - 1) % nprocs;

    for (int si = 0; si < NSIZE; si++)
        for (int ni = 0; ni < NNS; ni++) {
            int a = si * NNS + ni;
            ssz[a] = sizes[si];
            nsegs[a] = 0 == ni ? 0 : 1 == ni ? 1 : many(si);
            in[a] = malloc((size_t) (nsegs[a] ? nsegs[a] : 1) * ssz[a]);
            out[a] = malloc((size_t) (nsegs[a] ? nsegs[a] : 1) * (HDR + ssz[a]));
        }

    for (int f = 0; f < TU_NFLAVORS; f++) {
        tu_win_t w;
        MPIX_Am_op op;
        void *ubuf;
        int64_t seq = 0;
        if (!tu_flavor_enabled(f)) continue;
        tu_win_create(f, nprocs * sizeof(int64_t), sizeof(int64_t), MPI_INFO_NULL,
                      MPI_COMM_WORLD, &w);
        op = tu_am_op(stream_fn, NULL, 400, w.win);
        /* seg_need of 64 KiB segments: a64(65536) + a64(65552) = 131136 */
        ubuf = tu_am_attach(w.win, 256 * 1024);
        MPI_Barrier(MPI_COMM_WORLD);

        for (int ui = 0; ui < NUNIT; ui++) {
            int ep = (ui + f) % TU_NEPOCHS;
            char val[32], got[64];
            if (units[ui]) {
                MPI_Info info;
                snprintf(val, sizeof(val), "%ld", units[ui]);
                info = tu_info_new("am_pipeline_unit", val, NULL);
                TU_AM(MPI_Win_set_info(w.win, info));
                MPI_Info_free(&info);
            } else {
                snprintf(val, sizeof(val), "auto");
            }
            TU_CHECK(tu_win_info_get(w.win, "am_pipeline_unit", got, sizeof(got)) &&
                     0 == strcmp(got, val), "%s: MPI_Win_get_info am_pipeline_unit = '%s', "
                     "expected '%s'", tu_flavor_names[f], got, val);
            snprintf(where, sizeof(where), "%s window, %s epoch, am_pipeline_unit %s",
                     tu_flavor_names[f], tu_epoch_names[ep], val);
            tu_where = where;
            for (int a = 0; a < NSIZE * NNS; a++) {
                int am = ui * 100 + a;
                for (long s = 0; s < nsegs[a]; s++)
                    for (int j = 0; j < ssz[a]; j++)
                        in[a][s * ssz[a] + j] = pbyte(rank, am, s, j);
                memset(out[a], 0xEE, (size_t) (nsegs[a] ? nsegs[a] : 1) * (HDR + ssz[a]));
            }
            MPI_Barrier(MPI_COMM_WORLD);
            TU_AM(tu_am_epoch_open(ep, w.win, &target, 1, &origin, 1));
            for (int a = 0; a < NSIZE * NNS; a++) {
                int S = ssz[a];
                long bound = units[ui];
                if (0 == bound) {
                    long need = (long) (tu_am_a64(S) + tu_am_a64(HDR + S));
                    bound = chunk / need > 1 ? chunk / need : 1;
                }
                TU_AM(MPIX_Am(in[a], S, MPI_BYTE, out[a], HDR + S, MPI_BYTE, nsegs[a], target,
                              MPI_BYTE, tu_disp(&w, target, rank), 1, MPI_INT64_T, MPI_BYTE, op,
                              w.win));
                if (TU_EP_LOCK_EXCL == ep) TU_AM(MPI_Win_flush(target, w.win));
                if (TU_EP_LOCK_SHARED == ep) TU_AM(MPI_Win_flush_all(w.win));
                if (TU_EP_LOCK_ALL == ep) {
                    if (a % 2) TU_AM(MPI_Win_flush_local(target, w.win));
                    else TU_AM(MPI_Win_flush_local_all(w.win));
                }
                if (ep <= TU_EP_LOCK_ALL) {
                    my_invocations += check_am(where, out[a], ui * 100 + a, S, nsegs[a], bound, &seq);
                }
            }
            TU_AM(tu_am_epoch_close(ep, w.win, &target, 1, &origin, 1));
            if (ep > TU_EP_LOCK_ALL) {
                for (int a = 0; a < NSIZE * NNS; a++) {
                    int S = ssz[a];
                    long bound = units[ui];
                    if (0 == bound) {
                        long need = (long) (tu_am_a64(S) + tu_am_a64(HDR + S));
                        bound = chunk / need > 1 ? chunk / need : 1;
                    }
                    my_invocations += check_am(where, out[a], ui * 100 + a, S, nsegs[a], bound, &seq);
                }
            }
        }
        /* the counters: each origin's invocations, exactly */
        MPI_Barrier(MPI_COMM_WORLD);
        tu_where = "counter check";
        {
            int64_t *all = malloc(nprocs * sizeof(int64_t));
            const int64_t *cnt = w.base;
            MPI_Allgather(&seq, 1, MPI_INT64_T, all, 1, MPI_INT64_T, MPI_COMM_WORLD);
            TU_CHECK(cnt[origin] == all[origin], "%s window: the counter of origin %d is %lld, "
                     "its invocations numbered %lld", tu_flavor_names[f], origin,
                     (long long) cnt[origin], (long long) all[origin]);
            for (int o = 0; o < nprocs; o++) {
                if (o != origin) {
                    TU_CHECK(0 == cnt[o], "%s window: counter of non-origin %d is %lld",
                             tu_flavor_names[f], o, (long long) cnt[o]);
                }
            }
            free(all);
        }
        MPI_Barrier(MPI_COMM_WORLD);
        tu_where = "teardown";
        tu_am_op_done(&op, w.win);
        TU_AM(MPIX_Am_win_buffer_detach(ubuf, w.win));
        free(ubuf);
        tu_win_free(&w);
    }
    {
        int64_t total = 0;
        MPI_Allreduce(&my_invocations, &total, 1, MPI_INT64_T, MPI_SUM, MPI_COMM_WORLD);
        if (0 == rank) printf("am_stream: %lld handler invocations in all\n", (long long) total);
    }
    alarm(0);
    for (int a = 0; a < NSIZE * NNS; a++) { free(in[a]); free(out[a]); }
    {
        int rc = tu_finish("am_stream");
        MPI_Finalize();
        return rc;
    }
}
