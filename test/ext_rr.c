/* ext_rr: remote-completing requests MPIX_Rrput / MPIX_Rraccumulate /
 * MPIX_Rrget_accumulate (mpix/mpix_ucxx.h): when the request completes the
 * operation is complete at the target, with no flush.  Usage:
 * ext_rr [rounds [many]] (defaults 200 and 2000; 60 and 2000 under UCX_TLS=tcp).
 * Every rank is the origin of rank+1; for each window flavor, in lock_all:
 * A. Rounds: an MPIX_Rrput (8 B, 4 KiB, 64 KiB, 1 MiB, or a strided target
 *    datatype), an MPIX_Rraccumulate (SUM or REPLACE on 1, 16 or 1000
 *    MPI_INT64_T) or an MPIX_Rrget_accumulate (SUM, fetched values checked
 *    against the origin's model of the target) is completed with MPI_Wait (or
 *    MPI_Test polling), then the origin sends a message to the target, which
 *    receives it, calls MPI_Win_sync and must find the data in its window
 *    memory at once (compared with its own model); then it acknowledges.
 * B. Many outstanding, under a shared lock: `many` MPIX_Rrput of 8-64 bytes
 *    to distinct offsets, `many` MPIX_Rraccumulate(SUM 1) on one counter and
 *    `many` MPIX_Rrget_accumulate(SUM 1) on another (under UCX_TLS=tcp many/8
 *    accumulates, and many/4 Rrputs in the second round), all issued before
 *    any completes, completed by MPI_Waitall (first round) or MPI_Testsome
 *    (second), then a message: the target checks everything; the fetched
 *    counter values must be a permutation of 0..n-1.
 * C. Errors: outside any epoch MPI_ERR_RMA_SYNC (as MPI_Rput); MPI_WIN_NULL
 *    gives MPI_ERR_WIN. */
#include "testutil.h"
#include "mpix_ucxx.h"
#include <stdint.h>

#define PUTB ((MPI_Aint) 1 << 20)   /* put region, bytes */
#define ACCN 1000                   /* int64 in the accumulate region */
#define MANYB 64                    /* bytes per slot of part B */
#define OFF_PUT 0
#define OFF_ACC PUTB
#define OFF_CNT (OFF_ACC + ACCN * 8)
#define OFF_MANY (OFF_CNT + 64)
#define TAG_NOTE 601
#define TAG_ACK 602

static int rank, nprocs, next, prev, rounds, many;
static tu_win_t W;
static MPI_Datatype strided;   /* 64 x int64, stride 2 */

static inline uint64_t pat(uint64_t a, uint64_t b, uint64_t i)
{
    uint64_t x = (a + 1) * 0x9E3779B97F4A7C15ull ^ (b + 3) * 0xBF58476D1CE4E5B9ull ^ (i + 5) * 0x94D049BB133111EBull;
    x ^= x >> 31; x *= 0xD6E8FEB86659FD93ull; x ^= x >> 32;
    return x;
}

static const char *fl(void) { return tu_flavor_names[W.flavor]; }

/* what round k does, the same on origin and target */
enum { R_PUT, R_PUT_STRIDED, R_ACC_SUM, R_ACC_REPLACE, R_GACC };
static const char *rname[] = { "MPIX_Rrput", "MPIX_Rrput(strided target)", "MPIX_Rraccumulate(SUM)",
                               "MPIX_Rraccumulate(REPLACE)", "MPIX_Rrget_accumulate(SUM)" };
static int round_kind(int k)
{
    static const int seq[] = { R_PUT, R_ACC_SUM, R_GACC, R_PUT, R_ACC_REPLACE, R_PUT_STRIDED, R_GACC, R_ACC_SUM };
    return seq[k % 8];
}
static int round_n(int k)   /* put: uint64 words; accumulates: elements */
{
    static const int pn[] = { 1, 512, 8192, (int) (PUTB / 8) }, an[] = { 1, 16, ACCN };
    int h = (k * 7 + 3) % 12;
    switch (round_kind(k)) {
    case R_PUT: return pn[h % 4];
    case R_PUT_STRIDED: return 64;
    default: return an[h % 3];
    }
}
static inline int64_t aval(int o, int k, int i) { return (int64_t) ((pat(o, k, i) >> 20) % 1000) - 300; }

static void part_rounds(void)
{
    uint64_t *src = malloc(PUTB), *res = malloc(ACCN * 8);
    int64_t *omodel = calloc(ACCN, 8), *tmodel = calloc(ACCN, 8), *abuf = malloc(ACCN * 8);
    volatile uint64_t *mem = W.base;
    int reported = 0;
    TU_MPI(MPI_Win_lock_all(0, W.win));
    for (int k = 0; k < rounds; k++) {
        int kind = round_kind(k), n = round_n(k), note = -1, ack = -1;
        MPI_Request r;
        /* ---- origin ---- */
        switch (kind) {
        case R_PUT:
            for (int i = 0; i < n; i++) src[i] = pat(rank, k, i);
            TU_MPI(MPIX_Rrput(src, n, MPI_UINT64_T, next, tu_disp(&W, next, OFF_PUT), n, MPI_UINT64_T,
                              W.win, &r));
            break;
        case R_PUT_STRIDED:
            for (int i = 0; i < n; i++) src[i] = pat(rank, k, i);
            TU_MPI(MPIX_Rrput(src, n, MPI_UINT64_T, next, tu_disp(&W, next, OFF_PUT), 1, strided,
                              W.win, &r));
            break;
        case R_ACC_SUM: case R_ACC_REPLACE:
            for (int i = 0; i < n; i++) abuf[i] = aval(rank, k, i);
            TU_MPI(MPIX_Rraccumulate(abuf, n, MPI_INT64_T, next, tu_disp(&W, next, OFF_ACC), n,
                                     MPI_INT64_T, R_ACC_SUM == kind ? MPI_SUM : MPI_REPLACE, W.win, &r));
            break;
        case R_GACC:
            for (int i = 0; i < n; i++) abuf[i] = aval(rank, k, i), res[i] = 0x5a5a5a5a;
            TU_MPI(MPIX_Rrget_accumulate(abuf, n, MPI_INT64_T, res, n, MPI_INT64_T, next,
                                         tu_disp(&W, next, OFF_ACC), n, MPI_INT64_T, MPI_SUM, W.win, &r));
            break;
        }
        if (k % 2) {
            TU_MPI(MPI_Wait(&r, MPI_STATUS_IGNORE));
        } else {
            int done = 0;
            while (!done) TU_MPI(MPI_Test(&r, &done, MPI_STATUS_IGNORE));
        }
        TU_CHECK(MPI_REQUEST_NULL == r, "A (%s): round %d: request not freed by completion", fl(), k);
        TU_MPI(MPI_Send(&k, 1, MPI_INT, next, TAG_NOTE, MPI_COMM_WORLD));
        if (R_GACC == kind) {
            int bad = 0;
            for (int i = 0; i < n; i++) bad += (int64_t) res[i] != omodel[i];
            TU_CHECK(0 == bad, "A (%s): round %d %s of %d: %d fetched values wrong", fl(), k, rname[kind],
                     n, bad);
        }
        for (int i = 0; i < n && kind >= R_ACC_SUM; i++)
            omodel[i] = R_ACC_REPLACE == kind ? aval(rank, k, i) : omodel[i] + aval(rank, k, i);

        /* ---- target: prev's round k ---- */
        TU_MPI(MPI_Recv(&note, 1, MPI_INT, prev, TAG_NOTE, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
        TU_CHECK(note == k, "A: note %d in round %d", note, k);
        TU_MPI(MPI_Win_sync(W.win));
        int bad = 0, first = -1;
        switch (kind) {
        case R_PUT:
            for (int i = 0; i < n; i++)
                if (mem[OFF_PUT / 8 + i] != pat(prev, k, i)) { bad++; if (first < 0) first = i; }
            break;
        case R_PUT_STRIDED:
            for (int i = 0; i < n; i++)
                if (mem[OFF_PUT / 8 + 2 * i] != pat(prev, k, i)) { bad++; if (first < 0) first = i; }
            break;
        default:
            for (int i = 0; i < n; i++)
                tmodel[i] = R_ACC_REPLACE == kind ? aval(prev, k, i) : tmodel[i] + aval(prev, k, i);
            for (int i = 0; i < ACCN; i++)
                if ((int64_t) mem[OFF_ACC / 8 + i] != tmodel[i]) { bad++; if (first < 0) first = i; }
            break;
        }
        if (bad && reported++ < 10)
            TU_CHECK(0, "A (%s): round %d: %s of %d elements complete (request done) but %d of them are "
                     "not at the target when the origin's message arrives (first: %d)", fl(), k,
                     rname[kind], n, bad, first);
        else if (bad)
            tu_errors++;
        if (bad && kind >= R_ACC_SUM) /* resynchronise the model with what is there */
            for (int i = 0; i < ACCN; i++) tmodel[i] = (int64_t) mem[OFF_ACC / 8 + i];
        TU_MPI(MPI_Send(&k, 1, MPI_INT, prev, TAG_ACK, MPI_COMM_WORLD));
        TU_MPI(MPI_Recv(&ack, 1, MPI_INT, next, TAG_ACK, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
    }
    TU_MPI(MPI_Win_unlock_all(W.win));
    MPI_Barrier(MPI_COMM_WORLD);
    free(src); free(res); free(omodel); free(tmodel); free(abuf);
}

static int cmp_i64(const void *a, const void *b)
{
    int64_t x = *(const int64_t *) a, y = *(const int64_t *) b;
    return x < y ? -1 : x > y;
}

static void part_many(int variant, int nput, int nacc)
{
    int nreq = nput + 2 * nacc;
    MPI_Request *req = malloc((size_t) nreq * sizeof(MPI_Request));
    int *idx = malloc((size_t) nreq * sizeof(int));
    uint8_t *src = malloc((size_t) nput * MANYB);
    int64_t *fetched = malloc((size_t) nacc * 8);
    static const int64_t one = 1;
    volatile uint8_t *mem = W.base;
    int note;
    /* reset my counters (nobody accesses them now) */
    ((volatile int64_t *) mem)[OFF_CNT / 8] = 0;
    ((volatile int64_t *) mem)[OFF_CNT / 8 + 1] = 0;
    MPI_Barrier(MPI_COMM_WORLD);
    TU_MPI(MPI_Win_lock(MPI_LOCK_SHARED, next, 0, W.win));
    int nr = 0;
    for (int j = 0; j < nput || j < nacc; j++) {
        if (j < nput) {
            int len = 8 + (j * 13) % (MANYB - 7);
            for (int i = 0; i < len; i++) src[(size_t) j * MANYB + i] = (uint8_t) pat(rank, variant * 100000 + j, i);
            TU_MPI(MPIX_Rrput(src + (size_t) j * MANYB, len, MPI_BYTE, next,
                              tu_disp(&W, next, OFF_MANY + (MPI_Aint) j * MANYB), len, MPI_BYTE, W.win,
                              &req[nr++]));
        }
        if (j < nacc) {
            TU_MPI(MPIX_Rraccumulate(&one, 1, MPI_INT64_T, next, tu_disp(&W, next, OFF_CNT), 1, MPI_INT64_T,
                                     MPI_SUM, W.win, &req[nr++]));
            fetched[j] = -1;
            TU_MPI(MPIX_Rrget_accumulate(&one, 1, MPI_INT64_T, &fetched[j], 1, MPI_INT64_T, next,
                                         tu_disp(&W, next, OFF_CNT + 8), 1, MPI_INT64_T, MPI_SUM, W.win,
                                         &req[nr++]));
        }
    }
    if (0 == variant) {
        TU_MPI(MPI_Waitall(nreq, req, MPI_STATUSES_IGNORE));
    } else {
        int left = nreq, outc;
        while (left > 0) {
            TU_MPI(MPI_Testsome(nreq, req, &outc, idx, MPI_STATUSES_IGNORE));
            TU_CHECK(MPI_UNDEFINED != outc, "B (%s): MPI_Testsome found no active request with %d left",
                     fl(), left);
            if (MPI_UNDEFINED == outc) break;
            left -= outc;
        }
    }
    TU_MPI(MPI_Send(&variant, 1, MPI_INT, next, TAG_NOTE, MPI_COMM_WORLD));
    /* fetched values: a permutation of 0..nacc-1 */
    qsort(fetched, nacc, 8, cmp_i64);
    int badf = 0;
    for (int j = 0; j < nacc; j++) badf += fetched[j] != j;
    TU_CHECK(0 == badf, "B%d (%s): %d of %d MPIX_Rrget_accumulate results are not a permutation of 0..%d",
             variant, fl(), badf, nacc, nacc - 1);

    /* target */
    TU_MPI(MPI_Recv(&note, 1, MPI_INT, prev, TAG_NOTE, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
    TU_MPI(MPI_Win_sync(W.win));
    int bad = 0, first = -1;
    for (int j = 0; j < nput; j++) {
        int len = 8 + (j * 13) % (MANYB - 7);
        for (int i = 0; i < len; i++)
            if (mem[OFF_MANY + (size_t) j * MANYB + i] != (uint8_t) pat(prev, variant * 100000 + j, i)) {
                bad++;
                if (first < 0) first = j;
                break;
            }
    }
    TU_CHECK(0 == bad, "B%d (%s): %d of %d MPIX_Rrput pieces not at the target after Wait + message "
             "(first: %d)", variant, fl(), bad, nput, first);
    int64_t c0 = ((volatile int64_t *) mem)[OFF_CNT / 8], c1 = ((volatile int64_t *) mem)[OFF_CNT / 8 + 1];
    TU_CHECK(c0 == nacc && c1 == nacc, "B%d (%s): counters %lld (Rraccumulate) %lld (Rrget_accumulate) "
             "after Wait + message, expected %d", variant, fl(), (long long) c0, (long long) c1, nacc);
    MPI_Barrier(MPI_COMM_WORLD);
    TU_MPI(MPI_Win_unlock(next, W.win));
    MPI_Barrier(MPI_COMM_WORLD);
    free(req); free(idx); free(src); free(fetched);
}

static void part_errors(void)
{
    int64_t x = 1, y;
    MPI_Request r = MPI_REQUEST_NULL;
    int rc = MPIX_Rrput(&x, 1, MPI_INT64_T, next, tu_disp(&W, next, OFF_CNT), 1, MPI_INT64_T, W.win, &r);
    TU_CHECK(MPI_ERR_RMA_SYNC == tu_err_class(rc), "C (%s): MPIX_Rrput outside an epoch returned %s",
             fl(), tu_err_class_name(tu_err_class(rc)));
    if (MPI_SUCCESS == rc) MPI_Wait(&r, MPI_STATUS_IGNORE);
    rc = MPIX_Rraccumulate(&x, 1, MPI_INT64_T, next, tu_disp(&W, next, OFF_CNT), 1, MPI_INT64_T, MPI_SUM,
                           W.win, &r);
    TU_CHECK(MPI_ERR_RMA_SYNC == tu_err_class(rc), "C (%s): MPIX_Rraccumulate outside an epoch returned %s",
             fl(), tu_err_class_name(tu_err_class(rc)));
    if (MPI_SUCCESS == rc) MPI_Wait(&r, MPI_STATUS_IGNORE);
    rc = MPIX_Rrget_accumulate(&x, 1, MPI_INT64_T, &y, 1, MPI_INT64_T, next, tu_disp(&W, next, OFF_CNT), 1,
                               MPI_INT64_T, MPI_SUM, W.win, &r);
    TU_CHECK(MPI_ERR_RMA_SYNC == tu_err_class(rc), "C (%s): MPIX_Rrget_accumulate outside an epoch "
             "returned %s", fl(), tu_err_class_name(tu_err_class(rc)));
    if (MPI_SUCCESS == rc) MPI_Wait(&r, MPI_STATUS_IGNORE);
    MPI_Barrier(MPI_COMM_WORLD);
}

int main(int argc, char **argv)
{
    int rc;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &nprocs);
    rounds = tu_slow_transport() ? 60 : 200;
    many = 2000;
    if (argc > 1) rounds = atoi(argv[1]);
    if (argc > 2) many = atoi(argv[2]);
    next = (rank + 1) % nprocs;
    prev = (rank + nprocs - 1) % nprocs;
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    MPI_Comm_set_errhandler(MPI_COMM_SELF, MPI_ERRORS_RETURN);
    TU_MPI(MPI_Type_vector(64, 1, 2, MPI_UINT64_T, &strided));
    TU_MPI(MPI_Type_commit(&strided));
    {
        int64_t x = 1, y;
        MPI_Request r;
        int c1 = tu_err_class(MPIX_Rrput(&x, 1, MPI_INT64_T, 0, 0, 1, MPI_INT64_T, MPI_WIN_NULL, &r));
        int c2 = tu_err_class(MPIX_Rraccumulate(&x, 1, MPI_INT64_T, 0, 0, 1, MPI_INT64_T, MPI_SUM,
                                                MPI_WIN_NULL, &r));
        int c3 = tu_err_class(MPIX_Rrget_accumulate(&x, 1, MPI_INT64_T, &y, 1, MPI_INT64_T, 0, 0, 1,
                                                    MPI_INT64_T, MPI_SUM, MPI_WIN_NULL, &r));
        TU_CHECK(MPI_ERR_WIN == c1 && MPI_ERR_WIN == c2 && MPI_ERR_WIN == c3, "C: on MPI_WIN_NULL: "
                 "MPIX_Rrput %s, MPIX_Rraccumulate %s, MPIX_Rrget_accumulate %s, expected MPI_ERR_WIN",
                 tu_err_class_name(c1), tu_err_class_name(c2), tu_err_class_name(c3));
    }
    for (int flavor = 0; flavor < TU_NFLAVORS; flavor++) {
        if (!tu_flavor_enabled(flavor)) continue;
        tu_win_create(flavor, OFF_MANY + (MPI_Aint) many * MANYB, 1, MPI_INFO_NULL, MPI_COMM_WORLD, &W);
        double t0 = MPI_Wtime(), t1, t2;
        part_errors();
        part_rounds();
        t1 = MPI_Wtime();
        /* UCX_TLS=tcp: every operation is emulated (~0.3 ms here); keep the
         * 2000 Rrputs, fewer accumulates */
        int slow = tu_slow_transport(), nacc = slow ? many / 8 : many;
        part_many(0, many, nacc);
        part_many(1, slow ? many / 4 : many, nacc);
        t2 = MPI_Wtime();
        if (0 == rank)
            printf("%s: %d rounds %.2f s, outstanding requests (%d Rrput, 2 x %d accumulates) %.2f s\n", fl(),
                   rounds, t1 - t0, many, nacc, t2 - t1);
        tu_win_free(&W);
    }
    MPI_Type_free(&strided);
    rc = tu_finish("ext_rr");
    MPI_Finalize();
    return rc;
}
