/*
 * lock_mixed: short and long passive-target epochs from every rank to one
 * target (rank 0), mixed, on every window flavor (docs/synchronization.md,
 * "Lazy requests, carried epochs": a short epoch travels in its lock
 * request, a long one in batches that follow the request, with or without
 * waiting for the grant, and an operation that cannot be carried switches
 * the epoch to issuing).  Epochs of 1 to 1000 operations cross every limit
 * of that switch (one batch, the batches sent ahead of a grant); the
 * target's lock is contended, so batches wait at the target behind other
 * origins' epochs.  Checked:
 *   - exclusive epochs of fetch-and-op(SUM, 1) on one counter get
 *     consecutive values, also across a flush in the middle (mutual
 *     exclusion over the whole epoch, operations applied in order);
 *   - puts to the origin's own slots (and a strided put that issues in the
 *     middle of an epoch, and a 4800-byte put among an epoch's small ones)
 *     are read back by a later shared epoch of gets;
 *   - accumulates under shared locks and lock_all all count;
 *   - the target finds the counter and the sum of everybody's operations.
 * Run on one node, over TCP and across hosts with and without the delayed
 * wire (.ci/run).
 */
#include "testutil.h"

#define ROUNDS 30
#define MAXN 1000
#define W_CTR 0
#define W_SUM 1
#define SLOTS 8                           /* first origin slot word */
#define REGION (MAXN + 4)                 /* words per origin: MAXN, then the strided put's */
static const int sizes[] = {1, 3, 70, 1000, 2, 300, 240, 241, 513};
#define BIG_FROM 250                      /* epochs of 1000: one put of these words */
#define BIG_TO 850
#define NSIZES ((int) (sizeof(sizes) / sizeof(sizes[0])))

enum { K_FOP, K_PUT, K_GET_ACC, K_FOP_FLUSH, K_LOCKALL, NKINDS };

typedef struct {
    tu_win_t w;
    int me, np;
    uint64_t fops, accs;                  /* this rank's, for the final sums */
    uint64_t last[REGION];                /* what this rank last put to its slots at 0 */
    uint64_t res[MAXN], buf[MAXN];
} ctx_t;

static MPI_Aint slot(ctx_t *c, int word)
{
    return tu_disp(&c->w, 0, SLOTS + (MPI_Aint) c->me * REGION + word);
}

static uint64_t stamp(ctx_t *c, int round, int i)
{
    return ((uint64_t) (c->w.flavor + 1) << 56) | ((uint64_t) c->me << 40) |
           ((uint64_t) round << 20) | (uint64_t) (i + 1);
}

static void check_consecutive(ctx_t *c, int n, const char *what)
{
    int bad = 0;
    for (int i = 1; i < n; i++) bad += c->res[i] != c->res[0] + (uint64_t) i;
    TU_CHECK(0 == bad, "%s window, rank %d: %s of %d fetch-and-ops: %d results not "
             "consecutive (first %llu, last %llu)", tu_flavor_names[c->w.flavor], c->me, what,
             n, bad, (unsigned long long) c->res[0], (unsigned long long) c->res[n - 1]);
}

static void fops(ctx_t *c, int from, int to)
{
    static const uint64_t one = 1;
    for (int i = from; i < to; i++) {
        TU_MPI(MPI_Fetch_and_op(&one, &c->res[i], MPI_UINT64_T, 0,
                                tu_disp(&c->w, 0, W_CTR), MPI_SUM, c->w.win));
    }
    c->fops += (uint64_t) (to - from);
}

/* n puts to the slots; in a long epoch a strided put in the middle, which
 * cannot be carried; in an epoch of 1000 words BIG_FROM..BIG_TO in one put
 * larger than a batch, between small ones (carried in a batch of its own,
 * or issued where the lock was found taken). */
static void put_slots(ctx_t *c, int round, int n)
{
    MPI_Datatype strided;
    int mid = n >= MAXN ? BIG_TO + 10 : n / 2;

    for (int i = 0; i < n; i++) {
        if (n >= MAXN && BIG_FROM == i) {
            for (int k = i; k < BIG_TO; k++) c->buf[k] = c->last[k] = stamp(c, round, k);
            TU_MPI(MPI_Put(&c->buf[i], BIG_TO - i, MPI_UINT64_T, 0, slot(c, i), BIG_TO - i,
                           MPI_UINT64_T, c->w.win));
            i = BIG_TO - 1;
            continue;
        }
        c->buf[i] = c->last[i] = stamp(c, round, i);
        TU_MPI(MPI_Put(&c->buf[i], 1, MPI_UINT64_T, 0, slot(c, i), 1, MPI_UINT64_T,
                       c->w.win));
        if (n >= 64 && i == mid) {
            c->last[MAXN] = c->last[MAXN + 2] = stamp(c, round, MAXN);
            c->res[0] = c->res[1] = c->last[MAXN];
            TU_MPI(MPI_Type_vector(2, 1, 2, MPI_UINT64_T, &strided));
            TU_MPI(MPI_Type_commit(&strided));
            TU_MPI(MPI_Put(c->res, 2, MPI_UINT64_T, 0, slot(c, MAXN), 1, strided, c->w.win));
            TU_MPI(MPI_Type_free(&strided));
        }
    }
}

/* n gets of the slots (checked after the epoch) and n accumulates. */
static void gets_accs(ctx_t *c, int n)
{
    static const uint64_t one = 1;
    for (int i = 0; i < n; i++) {
        TU_MPI(MPI_Get(&c->buf[i], 1, MPI_UINT64_T, 0, slot(c, i), 1, MPI_UINT64_T, c->w.win));
        TU_MPI(MPI_Accumulate(&one, 1, MPI_UINT64_T, 0, tu_disp(&c->w, 0, W_SUM), 1,
                              MPI_UINT64_T, MPI_SUM, c->w.win));
    }
    c->accs += (uint64_t) n;
}

static void check_gets(ctx_t *c, int n)
{
    int bad = 0, first = -1;
    for (int i = 0; i < n; i++) {
        if (c->buf[i] != c->last[i]) {
            bad++;
            if (first < 0) first = i;
        }
    }
    TU_CHECK(0 == bad, "%s window, rank %d: %d of %d gets returned what was not put (first "
             "word %d: %llx, expected %llx)", tu_flavor_names[c->w.flavor], c->me, bad, n,
             first, first < 0 ? 0ULL : (unsigned long long) c->buf[first],
             first < 0 ? 0ULL : (unsigned long long) c->last[first]);
}

static void epoch(ctx_t *c, int round)
{
    int kind = (round + c->me) % NKINDS, n = sizes[(round * 7 + c->me * 3) % NSIZES];
    MPI_Win win = c->w.win;

    switch (kind) {
    case K_FOP:
        TU_MPI(MPI_Win_lock(MPI_LOCK_EXCLUSIVE, 0, 0, win));
        fops(c, 0, n);
        TU_MPI(MPI_Win_unlock(0, win));
        check_consecutive(c, n, "an exclusive epoch");
        break;
    case K_PUT:
        TU_MPI(MPI_Win_lock(MPI_LOCK_EXCLUSIVE, 0, 0, win));
        put_slots(c, round, n);
        TU_MPI(MPI_Win_unlock(0, win));
        break;
    case K_GET_ACC:
        TU_MPI(MPI_Win_lock(MPI_LOCK_SHARED, 0, 0, win));
        gets_accs(c, n);
        TU_MPI(MPI_Win_unlock(0, win));
        check_gets(c, n);
        break;
    case K_FOP_FLUSH:
        TU_MPI(MPI_Win_lock(MPI_LOCK_EXCLUSIVE, 0, 0, win));
        fops(c, 0, (n + 1) / 2);
        TU_MPI(MPI_Win_flush(0, win));
        check_consecutive(c, (n + 1) / 2, "the first half (flushed) of an exclusive epoch");
        fops(c, (n + 1) / 2, n);
        TU_MPI(MPI_Win_unlock(0, win));
        check_consecutive(c, n, "an exclusive epoch with a flush");
        break;
    default:
        TU_MPI(MPI_Win_lock_all(0, win));
        gets_accs(c, n);
        TU_MPI(MPI_Win_unlock_all(win));
        check_gets(c, n);
        break;
    }
}

static void run_flavor(int f, int me, int np)
{
    ctx_t *c = calloc(1, sizeof(*c));
    uint64_t mine[2], all[2] = {0, 0};

    c->me = me;
    c->np = np;
    tu_win_create(f, me == 0 ? (MPI_Aint) (SLOTS + np * REGION) * 8 : 8, 8, MPI_INFO_NULL,
                  MPI_COMM_WORLD, &c->w);
    for (int round = 0; round < ROUNDS; round++) {
        /* together: every round's epochs contend for the lock (and a
         * request granted at once lets the next epoch send ahead) */
        TU_MPI(MPI_Barrier(MPI_COMM_WORLD));
        epoch(c, round);
    }
    /* every slot back, strided ones included */
    TU_MPI(MPI_Win_lock(MPI_LOCK_SHARED, 0, 0, c->w.win));
    TU_MPI(MPI_Get(c->buf, MAXN, MPI_UINT64_T, 0, slot(c, 0), MAXN, MPI_UINT64_T, c->w.win));
    TU_MPI(MPI_Get(c->res, 3, MPI_UINT64_T, 0, slot(c, MAXN), 3, MPI_UINT64_T, c->w.win));
    TU_MPI(MPI_Win_unlock(0, c->w.win));
    check_gets(c, MAXN);
    TU_CHECK(c->res[0] == c->last[MAXN] && c->res[2] == c->last[MAXN + 2],
             "%s window, rank %d: the strided put's words hold %llx, %llx, expected %llx",
             tu_flavor_names[f], me, (unsigned long long) c->res[0],
             (unsigned long long) c->res[2], (unsigned long long) c->last[MAXN]);
    mine[0] = c->fops;
    mine[1] = c->accs;
    MPI_Reduce(mine, all, 2, MPI_UINT64_T, MPI_SUM, 0, MPI_COMM_WORLD);
    if (0 == me) {
        volatile uint64_t *m = (volatile uint64_t *) c->w.base;
        TU_MPI(MPI_Win_lock(MPI_LOCK_SHARED, 0, 0, c->w.win));
        TU_CHECK(m[W_CTR] == all[0] && m[W_SUM] == all[1], "%s window: the target holds "
                 "counter %llu and sum %llu after %llu fetch-and-ops and %llu accumulates",
                 tu_flavor_names[f], (unsigned long long) m[W_CTR],
                 (unsigned long long) m[W_SUM], (unsigned long long) all[0],
                 (unsigned long long) all[1]);
        TU_MPI(MPI_Win_unlock(0, c->w.win));
    }
    TU_MPI(MPI_Barrier(MPI_COMM_WORLD));
    tu_win_free(&c->w);
    free(c);
}

int main(int argc, char **argv)
{
    int me, np;

    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &me);
    MPI_Comm_size(MPI_COMM_WORLD, &np);
    for (int f = 0; f < TU_NFLAVORS; f++) {
        if (tu_flavor_or_all(f)) run_flavor(f, me, np);
    }
    int rc = tu_finish("lock_mixed");
    MPI_Finalize();
    return rc;
}
