/* Attach/detach churn on a dynamic window while other ranks use it.
 * Rank 0 carves one block into chunks of CH bytes: chunk 0 is a counter
 * region (2*nprocs int64), chunk 2r is the stable region of origin rank r
 * (512 int64); the odd chunks are scratch space lying between them in the
 * address order, so attaching them moves the stable regions around in any
 * sorted region table.
 * Phase 1 (concurrent): rank 0 repeatedly, until every other rank is done
 * (MPI_Ibarrier / MPI_Test) and at least 200 times: detaches the scratch
 * chunk attached in the previous step, attaches the next odd chunk with a
 * varying size, detaches it and re-attaches it AT THE SAME ADDRESS with
 * another size (it stays attached into the next step); every 8th step it also
 * attaches and detaches a freshly malloc'd region.  Meanwhile every other rank
 * r does ITERS ("-i N", default 300) iterations on its stable region, in
 * turn under lock_all, lock(shared) and lock(exclusive): a put of a varying
 * range, flush, get of that range (checked), a fetch_and_op(+1) on the shared
 * counter and an MPI_SUM accumulate on its own counter; every 16th iteration a
 * get of the whole stable region is compared with the origin's shadow copy.
 * At the end rank 0 checks the stable regions against the replayed sequence,
 * the counters, and that the fetched values of all origins are exactly
 * 0 .. (nprocs-1)*ITERS-1.
 * Phase 2 (coordinated re-attach at one address): KROUNDS ("-k N", default
 * 40) times rank 0 attaches chunk 1 with a different size (growing and
 * shrinking), fills it, barrier; every other rank gets the whole region
 * (checked, sized by the CURRENT attachment, i.e. a cached old registration
 * must not be used) and puts one value into its own slot near the end;
 * barrier; rank 0 checks those slots and detaches.
 * osc/rdma (4.1.4) passes; osc/ucx segfaults in MPI_Win_free. */
#include "testutil.h"
#include <stdint.h>

#define CH 4096
#define NE (CH / 8)   /* int64 per chunk */

static int rank, nprocs;

static int64_t v_stable(int r, int it, int j) { return (int64_t) r * 1000000000LL + it * 1000LL + j; }
static int rng_n(int it) { return 1 + (it * 7) % NE; }
static int rng_off(int it) { return (it * 13) % (NE - rng_n(it) + 1); }
static int64_t v_scratch(int k, int j) { return 0x7700000000LL + k * 100000LL + j; }

int main(int argc, char **argv)
{
    MPI_Win win;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &nprocs);
    const int iters = (int) tu_opt_long(argc, argv, "-i", 300);
    const int krounds = (int) tu_opt_long(argc, argv, "-k", 40);
    const int nchunks = 2 * nprocs + 2, ngaps = nprocs + 1;

    char *block = NULL;
    MPI_Aint base = 0;
    TU_MPI(MPI_Win_create_dynamic(MPI_INFO_NULL, MPI_COMM_WORLD, &win));
    MPI_Win_set_errhandler(win, MPI_ERRORS_RETURN);
    if (0 == rank) {
        block = calloc(nchunks, CH);
        TU_MPI(MPI_Win_attach(win, block, 2 * nprocs * sizeof(int64_t)));
        for (int r = 1; r < nprocs; r++) TU_MPI(MPI_Win_attach(win, block + 2 * r * CH, CH));
        MPI_Get_address(block, &base);
    }
    MPI_Bcast(&base, 1, MPI_AINT, 0, MPI_COMM_WORLD);
    const MPI_Aint counter = base, mine = base + 2 * rank * CH;
    MPI_Barrier(MPI_COMM_WORLD);

    /* ---- phase 1 ---- */
    MPI_Request req;
    int64_t *fetched = calloc(iters + 1, sizeof(int64_t));
    double t0 = MPI_Wtime();
    if (0 == rank) {
        int done = 0, steps = 0, held = -1;
        MPI_Ibarrier(MPI_COMM_WORLD, &req);
        for (steps = 0; !done || steps < 200; steps++) {
            int g = 1 + 2 * (steps % ngaps);
            char *p = block + (size_t) g * CH;
            if (held >= 0) TU_MPI(MPI_Win_detach(win, block + (size_t) held * CH));
            TU_MPI(MPI_Win_attach(win, p, 8 * (1 + (steps * 31) % NE)));
            TU_MPI(MPI_Win_detach(win, p));
            TU_MPI(MPI_Win_attach(win, p, CH - 8 * (steps % 100)));
            held = g;
            if (steps % 8 == 7) {
                void *q = malloc(1000 + steps % 5000);
                TU_MPI(MPI_Win_attach(win, q, 1000 + steps % 5000));
                TU_MPI(MPI_Win_detach(win, q));
                free(q);
            }
            if (!done) MPI_Test(&req, &done, MPI_STATUS_IGNORE);
        }
        if (held >= 0) TU_MPI(MPI_Win_detach(win, block + (size_t) held * CH));
        printf("dyn_churn: rank 0 did %d attach/detach steps while the others worked (%.2f s)\n",
               steps, MPI_Wtime() - t0);
    } else {
        int64_t shadow[NE], buf[NE], res[NE], one = 1, mysum;
        for (int j = 0; j < NE; j++) shadow[j] = 0;
        int bad = 0, badfull = 0;
        for (int it = 0; it < iters; it++) {
            int n = rng_n(it), o = rng_off(it), mode = it % 3;
            for (int j = 0; j < n; j++) buf[j] = shadow[o + j] = v_stable(rank, it, o + j);
            if (0 == mode) TU_MPI(MPI_Win_lock_all(0, win));
            else TU_MPI(MPI_Win_lock(1 == mode ? MPI_LOCK_SHARED : MPI_LOCK_EXCLUSIVE, 0, 0, win));
            TU_MPI(MPI_Put(buf, n, MPI_INT64_T, 0, mine + o * 8, n, MPI_INT64_T, win));
            mysum = it + 1;
            TU_MPI(MPI_Accumulate(&mysum, 1, MPI_INT64_T, 0, counter + (nprocs + rank) * 8, 1, MPI_INT64_T,
                                  MPI_SUM, win));
            TU_MPI(MPI_Fetch_and_op(&one, &fetched[it], MPI_INT64_T, 0, counter, MPI_SUM, win));
            TU_MPI(MPI_Win_flush(0, win));
            memset(res, 0xff, sizeof(res));
            TU_MPI(MPI_Get(res, n, MPI_INT64_T, 0, mine + o * 8, n, MPI_INT64_T, win));
            TU_MPI(MPI_Win_flush(0, win));
            if (memcmp(res, buf, n * 8)) {
                if (!bad++) TU_CHECK(0, "iteration %d: get after put of [%d,%d) returned %lld at %d, expected %lld",
                                     it, o, o + n, (long long) res[0], o, (long long) buf[0]);
            }
            if (it % 16 == 15) {
                TU_MPI(MPI_Get(res, NE, MPI_INT64_T, 0, mine, NE, MPI_INT64_T, win));
                TU_MPI(MPI_Win_flush(0, win));
                if (memcmp(res, shadow, sizeof(res))) badfull++;
            }
            if (0 == mode) TU_MPI(MPI_Win_unlock_all(win));
            else TU_MPI(MPI_Win_unlock(0, win));
        }
        TU_CHECK(0 == bad, "%d of %d get-after-put checks failed", bad, iters);
        TU_CHECK(0 == badfull, "%d whole-region gets differ from the shadow copy", badfull);
        MPI_Ibarrier(MPI_COMM_WORLD, &req);
        MPI_Wait(&req, MPI_STATUS_IGNORE);
    }

    /* fetched values: together exactly 0 .. (nprocs-1)*iters-1 */
    int total = (nprocs - 1) * iters;
    int64_t *allf = 0 == rank ? malloc((size_t) nprocs * iters * sizeof(int64_t)) : NULL;
    MPI_Gather(fetched, iters, MPI_INT64_T, allf, iters, MPI_INT64_T, 0, MPI_COMM_WORLD);
    MPI_Barrier(MPI_COMM_WORLD);
    if (0 == rank) {
        tu_check_fetched_permutation(allf, nprocs, iters, total);
        free(allf);
        TU_MPI(MPI_Win_lock(MPI_LOCK_EXCLUSIVE, 0, 0, win));
        int64_t *cnt = (int64_t *) block;
        TU_CHECK(cnt[0] == total, "shared counter is %lld, expected %d", (long long) cnt[0], total);
        for (int r = 1; r < nprocs; r++) {
            int64_t exp[NE], *st = (int64_t *) (block + 2 * r * CH);
            memset(exp, 0, sizeof(exp));
            for (int it = 0; it < iters; it++)
                for (int j = 0; j < rng_n(it); j++) exp[rng_off(it) + j] = v_stable(r, it, rng_off(it) + j);
            int bad = 0;
            for (int j = 0; j < NE; j++) if (st[j] != exp[j]) bad++;
            TU_CHECK(0 == bad, "stable region of rank %d: %d wrong values at the end", r, bad);
            TU_CHECK(cnt[nprocs + r] == (int64_t) iters * (iters + 1) / 2, "sum counter of rank %d is %lld, expected %lld",
                     r, (long long) cnt[nprocs + r], (long long) iters * (iters + 1) / 2);
        }
        TU_MPI(MPI_Win_unlock(0, win));
    }

    /* ---- phase 2 ---- */
    int64_t *scratch = 0 == rank ? (int64_t *) (block + CH) : NULL;
    const MPI_Aint saddr = base + CH;
    for (int k = 0; k < krounds; k++) {
        int n = nprocs + (k * 211) % (NE - nprocs + 1);   /* elements attached this round */
        if (0 == rank) {
            for (int j = 0; j < NE; j++) scratch[j] = v_scratch(k, j);
            TU_MPI(MPI_Win_attach(win, scratch, n * 8));
        }
        MPI_Bcast(&n, 1, MPI_INT, 0, MPI_COMM_WORLD);
        if (rank) {
            int64_t res[NE], v = -v_scratch(k, rank);
            memset(res, 0, sizeof(res));
            TU_MPI(MPI_Win_lock_all(0, win));
            TU_MPI(MPI_Get(res, n - nprocs + 1, MPI_INT64_T, 0, saddr, n - nprocs + 1, MPI_INT64_T, win));
            TU_MPI(MPI_Put(&v, 1, MPI_INT64_T, 0, saddr + (n - rank) * 8, 1, MPI_INT64_T, win));
            TU_MPI(MPI_Win_unlock_all(win));
            int bad = 0;
            for (int j = 0; j < n - nprocs + 1; j++) if (res[j] != v_scratch(k, j)) bad++;
            TU_CHECK(0 == bad, "re-attach %d (%d elements): %d wrong values read", k, n, bad);
        }
        MPI_Barrier(MPI_COMM_WORLD);
        if (0 == rank) {
            int bad = 0;
            for (int r = 1; r < nprocs; r++) if (scratch[n - r] != -v_scratch(k, r)) bad++;
            for (int j = n; j < NE; j++) if (scratch[j] != v_scratch(k, j)) bad++;
            TU_CHECK(0 == bad, "re-attach %d (%d elements): %d wrong values at the target", k, n, bad);
            TU_MPI(MPI_Win_detach(win, scratch));
        }
        MPI_Barrier(MPI_COMM_WORLD);
    }

    if (0 == rank) {
        TU_MPI(MPI_Win_detach(win, block));
        for (int r = 1; r < nprocs; r++) TU_MPI(MPI_Win_detach(win, block + 2 * r * CH));
    }
    TU_MPI(MPI_Win_free(&win));
    free(block);
    free(fetched);
    int rc = tu_finish("dyn_churn");
    MPI_Finalize();
    return rc;
}
