/* Every synchronization mode on a dynamic window.
 * Each rank attaches one region of nprocs rows of ROW int64; row o belongs to
 * origin o: [0,8) put area, [8] MPI_SUM accumulate, [9] fetch_and_op,
 * [10] compare_and_swap, [11,16) read-only data the target wrote.  Before each
 * (mode, round) the target re-initialises its region (under lock(self)).
 * In every mode each rank, on its row at the next rank (mode 5 also the
 * previous rank): puts 8 values, accumulates one value, fetch_and_ops,
 * compare_and_swaps and gets the read-only part; where the mode allows it,
 * it also gets the put area back after a flush/epoch.  Fetched, compared and
 * read values are checked at the origin; after the mode the target checks
 * every row written into it.  Modes:
 *   0 fence (NOPRECEDE ... 0 ... NOSUCCEED)  1 post/start/complete/wait
 *   2 lock exclusive + flush                 3 lock shared, get-back in a 2nd epoch
 *   4 lock_all + flush                       5 lock_all + flush_all, two targets
 *   6 lock_all + flush_local (origin buffer overwritten after it)
 *   7 lock_all + flush_local_all (likewise)  8 lock(shared, MPI_MODE_NOCHECK)
 *   9 lock_all + Rput/Raccumulate/Rget/Rget_accumulate + MPI_Waitall
 *  10 lock_all(MPI_MODE_NOCHECK) + MPI_Win_sync: the target updates its
 *     read-only data inside its own epoch, win_sync + barrier, the origin
 *     reads the new data
 * ROUNDS ("-r N", default 3) rounds of every mode.
 * osc/rdma (4.1.4) passes. */
#include "testutil.h"
#include <stdint.h>

#define ROW 16
#define PUTN 8
#define E_ACC 8
#define E_FOP 9
#define E_CAS 10
#define E_RO 11
#define RON 5
#define NMODES 11

static int rank, nprocs, next, prev;
static MPI_Win win;
static int64_t *region;
static MPI_Aint *addr;   /* every rank's region */
static const char *mode_names[NMODES] = { "fence", "pscw", "lock-excl+flush", "lock-shared", "lock_all+flush",
                                          "lock_all+flush_all", "lock_all+flush_local",
                                          "lock_all+flush_local_all", "lock-nocheck", "request-based",
                                          "lock_all-nocheck+win_sync" };

static int64_t v_put(int m, int k, int o, int j) { return ((int64_t) m << 40) + ((int64_t) k << 32) + o * 1000 + j + 1; }
static int64_t v_add(int m, int k, int o) { return 7 * m + 11 * k + o + 1; }
static int64_t v_ro(int t, int m, int k, int j) { return -(((int64_t) t << 36) + ((int64_t) m << 28) + k * 100 + j + 1); }
#define ACC0 1000
#define FOP0 2000
#define CAS0 3000
#define FOPV 5
static int64_t v_swap(int m, int k, int o) { return 9000 + m * 100 + k * 10 + o; }

static MPI_Aint at(int t, int o, int e) { return addr[t] + ((MPI_Aint) o * ROW + e) * 8; }

static void init_region(int m, int k)
{
    TU_MPI(MPI_Win_lock(MPI_LOCK_EXCLUSIVE, rank, 0, win));
    for (int o = 0; o < nprocs; o++) {
        int64_t *r = region + o * ROW;
        for (int j = 0; j < PUTN; j++) r[j] = 0;
        r[E_ACC] = ACC0; r[E_FOP] = FOP0; r[E_CAS] = CAS0;
        for (int j = 0; j < RON; j++) r[E_RO + j] = v_ro(rank, m, k, j);
    }
    TU_MPI(MPI_Win_unlock(rank, win));
}

typedef struct {
    int64_t put[PUTN], add, fop, fetched, cmp, swap, casres, ro[RON], back[PUTN];
} ops_t;

static void prep(ops_t *x, int m, int k)
{
    for (int j = 0; j < PUTN; j++) x->put[j] = v_put(m, k, rank, j);
    x->add = v_add(m, k, rank);
    x->fop = FOPV; x->fetched = -1;
    x->cmp = CAS0; x->swap = v_swap(m, k, rank); x->casres = -1;
    for (int j = 0; j < RON; j++) x->ro[j] = 0;
    for (int j = 0; j < PUTN; j++) x->back[j] = 0;
}

/* The data operations of one mode, to target t. */
static void issue(ops_t *x, int t)
{
    TU_MPI(MPI_Put(x->put, PUTN, MPI_INT64_T, t, at(t, rank, 0), PUTN, MPI_INT64_T, win));
    TU_MPI(MPI_Accumulate(&x->add, 1, MPI_INT64_T, t, at(t, rank, E_ACC), 1, MPI_INT64_T, MPI_SUM, win));
    TU_MPI(MPI_Fetch_and_op(&x->fop, &x->fetched, MPI_INT64_T, t, at(t, rank, E_FOP), MPI_SUM, win));
    TU_MPI(MPI_Compare_and_swap(&x->swap, &x->cmp, &x->casres, MPI_INT64_T, t, at(t, rank, E_CAS), win));
    TU_MPI(MPI_Get(x->ro, RON, MPI_INT64_T, t, at(t, rank, E_RO), RON, MPI_INT64_T, win));
}

static void get_back(ops_t *x, int t)
{
    TU_MPI(MPI_Get(x->back, PUTN, MPI_INT64_T, t, at(t, rank, 0), PUTN, MPI_INT64_T, win));
}

/* Origin checks: results of the operations; `back` only if gotten back. */
static void check_origin(const ops_t *x, int t, int m, int k, int back, int ro_round)
{
    const char *mn = mode_names[m];
    int bad = 0;
    TU_CHECK(x->fetched == FOP0, "%s round %d: fetch_and_op from %d fetched %lld, expected %d", mn, k, t,
             (long long) x->fetched, FOP0);
    TU_CHECK(x->casres == CAS0, "%s round %d: compare_and_swap at %d returned %lld, expected %d", mn, k, t,
             (long long) x->casres, CAS0);
    for (int j = 0; j < RON; j++) if (x->ro[j] != v_ro(t, m, ro_round, j)) bad++;
    TU_CHECK(0 == bad, "%s round %d: get of read-only data at %d: %d wrong (first %lld, expected %lld)", mn, k, t,
             bad, (long long) x->ro[0], (long long) v_ro(t, m, ro_round, 0));
    if (back) {
        bad = 0;
        for (int j = 0; j < PUTN; j++) if (x->back[j] != v_put(m, k, rank, j)) bad++;
        TU_CHECK(0 == bad, "%s round %d: get after put at %d: %d wrong (first %lld, expected %lld)", mn, k, t, bad,
                 (long long) x->back[0], (long long) v_put(m, k, rank, 0));
    }
}

/* Target checks row o of its region. */
static void check_target(int o, int m, int k)
{
    const char *mn = mode_names[m];
    int64_t *r = region + o * ROW;
    int bad = 0;
    for (int j = 0; j < PUTN; j++) if (r[j] != v_put(m, k, o, j)) bad++;
    TU_CHECK(0 == bad, "%s round %d: %d wrong put values from %d (first %lld)", mn, k, bad, o, (long long) r[0]);
    TU_CHECK(r[E_ACC] == ACC0 + v_add(m, k, o), "%s round %d: accumulate from %d left %lld, expected %lld", mn, k,
             o, (long long) r[E_ACC], (long long) (ACC0 + v_add(m, k, o)));
    TU_CHECK(r[E_FOP] == FOP0 + FOPV, "%s round %d: fetch_and_op from %d left %lld", mn, k, o, (long long) r[E_FOP]);
    TU_CHECK(r[E_CAS] == v_swap(m, k, o), "%s round %d: compare_and_swap from %d left %lld, expected %lld", mn, k, o,
             (long long) r[E_CAS], (long long) v_swap(m, k, o));
}

static void run_mode(int m, int k)
{
    ops_t x, y;
    int t2 = prev, two = (5 == m && prev != next);
    MPI_Request rq[5];
    MPI_Group world, gnext, gprev;

    init_region(m, k);
    MPI_Barrier(MPI_COMM_WORLD);
    prep(&x, m, k);
    prep(&y, m, k);
    int back = 1, ro_round = k;
    switch (m) {
    case 0:
        TU_MPI(MPI_Win_fence(MPI_MODE_NOPRECEDE, win));
        issue(&x, next);
        TU_MPI(MPI_Win_fence(0, win));
        get_back(&x, next);
        TU_MPI(MPI_Win_fence(MPI_MODE_NOSUCCEED, win));
        break;
    case 1:
        MPI_Comm_group(MPI_COMM_WORLD, &world);
        MPI_Group_incl(world, 1, &next, &gnext);
        MPI_Group_incl(world, 1, &prev, &gprev);
        TU_MPI(MPI_Win_post(gprev, 0, win));
        TU_MPI(MPI_Win_start(gnext, 0, win));
        issue(&x, next);
        TU_MPI(MPI_Win_complete(win));
        TU_MPI(MPI_Win_wait(win));
        TU_MPI(MPI_Win_post(gprev, MPI_MODE_NOPUT, win));
        TU_MPI(MPI_Win_start(gnext, 0, win));
        get_back(&x, next);
        TU_MPI(MPI_Win_complete(win));
        TU_MPI(MPI_Win_wait(win));
        MPI_Group_free(&gnext); MPI_Group_free(&gprev); MPI_Group_free(&world);
        break;
    case 2:
        TU_MPI(MPI_Win_lock(MPI_LOCK_EXCLUSIVE, next, 0, win));
        issue(&x, next);
        TU_MPI(MPI_Win_flush(next, win));
        get_back(&x, next);
        TU_MPI(MPI_Win_unlock(next, win));
        break;
    case 3:
        TU_MPI(MPI_Win_lock(MPI_LOCK_SHARED, next, 0, win));
        issue(&x, next);
        TU_MPI(MPI_Win_unlock(next, win));
        TU_MPI(MPI_Win_lock(MPI_LOCK_SHARED, next, 0, win));
        get_back(&x, next);
        TU_MPI(MPI_Win_unlock(next, win));
        break;
    case 4:
        TU_MPI(MPI_Win_lock_all(0, win));
        issue(&x, next);
        TU_MPI(MPI_Win_flush(next, win));
        check_origin(&x, next, m, k, 0, k);   /* results complete at flush */
        get_back(&x, next);
        TU_MPI(MPI_Win_flush(next, win));
        check_origin(&x, next, m, k, 1, k);
        TU_MPI(MPI_Win_unlock_all(win));
        break;
    case 5:
        TU_MPI(MPI_Win_lock_all(0, win));
        issue(&x, next);
        if (two) issue(&y, t2);
        TU_MPI(MPI_Win_flush_all(win));
        get_back(&x, next);
        if (two) get_back(&y, t2);
        TU_MPI(MPI_Win_flush_all(win));
        check_origin(&x, next, m, k, 1, k);
        if (two) check_origin(&y, t2, m, k, 1, k);
        TU_MPI(MPI_Win_unlock_all(win));
        break;
    case 6:
    case 7:
        TU_MPI(MPI_Win_lock_all(0, win));
        issue(&x, next);
        if (6 == m) TU_MPI(MPI_Win_flush_local(next, win));
        else TU_MPI(MPI_Win_flush_local_all(win));
        check_origin(&x, next, m, k, 0, k);   /* fetching results are local */
        for (int j = 0; j < PUTN; j++) x.put[j] = -12345;   /* buffer reusable */
        x.add = -999999;
        TU_MPI(MPI_Win_unlock_all(win));
        back = 0;
        break;
    case 8:
        TU_MPI(MPI_Win_lock(MPI_LOCK_SHARED, next, MPI_MODE_NOCHECK, win));
        issue(&x, next);
        TU_MPI(MPI_Win_flush(next, win));
        get_back(&x, next);
        TU_MPI(MPI_Win_unlock(next, win));
        break;
    case 9:
        TU_MPI(MPI_Win_lock_all(0, win));
        TU_MPI(MPI_Rput(x.put, PUTN, MPI_INT64_T, next, at(next, rank, 0), PUTN, MPI_INT64_T, win, &rq[0]));
        TU_MPI(MPI_Raccumulate(&x.add, 1, MPI_INT64_T, next, at(next, rank, E_ACC), 1, MPI_INT64_T, MPI_SUM, win,
                               &rq[1]));
        TU_MPI(MPI_Rget_accumulate(&x.fop, 1, MPI_INT64_T, &x.fetched, 1, MPI_INT64_T, next, at(next, rank, E_FOP),
                                   1, MPI_INT64_T, MPI_SUM, win, &rq[2]));
        TU_MPI(MPI_Rget(x.ro, RON, MPI_INT64_T, next, at(next, rank, E_RO), RON, MPI_INT64_T, win, &rq[3]));
        TU_MPI(MPI_Compare_and_swap(&x.swap, &x.cmp, &x.casres, MPI_INT64_T, next, at(next, rank, E_CAS), win));
        TU_MPI(MPI_Waitall(4, rq, MPI_STATUSES_IGNORE));
        TU_MPI(MPI_Win_flush(next, win));
        TU_MPI(MPI_Rget(x.back, PUTN, MPI_INT64_T, next, at(next, rank, 0), PUTN, MPI_INT64_T, win, &rq[4]));
        TU_MPI(MPI_Wait(&rq[4], MPI_STATUS_IGNORE));
        TU_MPI(MPI_Win_unlock_all(win));
        break;
    case 10:
        TU_MPI(MPI_Win_lock_all(MPI_MODE_NOCHECK, win));
        /* the target changes its read-only data inside its passive epoch */
        for (int o = 0; o < nprocs; o++)
            for (int j = 0; j < RON; j++) region[o * ROW + E_RO + j] = v_ro(rank, m, k + 100, j);
        TU_MPI(MPI_Win_sync(win));
        MPI_Barrier(MPI_COMM_WORLD);
        issue(&x, next);
        TU_MPI(MPI_Win_flush(next, win));
        get_back(&x, next);
        TU_MPI(MPI_Win_flush(next, win));
        TU_MPI(MPI_Win_unlock_all(win));
        ro_round = k + 100;
        break;
    }
    check_origin(&x, next, m, k, back, ro_round);
    MPI_Barrier(MPI_COMM_WORLD);
    TU_MPI(MPI_Win_lock(MPI_LOCK_SHARED, rank, 0, win));
    check_target(prev, m, k);
    if (two) check_target(next, m, k);
    TU_MPI(MPI_Win_unlock(rank, win));
    MPI_Barrier(MPI_COMM_WORLD);
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &nprocs);
    next = (rank + 1) % nprocs; prev = (rank + nprocs - 1) % nprocs;
    const int rounds = (int) tu_opt_long(argc, argv, "-r", 3);

    region = calloc((size_t) nprocs * ROW, sizeof(int64_t));
    addr = malloc(nprocs * sizeof(MPI_Aint));
    TU_MPI(MPI_Win_create_dynamic(MPI_INFO_NULL, MPI_COMM_WORLD, &win));
    MPI_Win_set_errhandler(win, MPI_ERRORS_RETURN);
    TU_MPI(MPI_Win_attach(win, region, (MPI_Aint) nprocs * ROW * sizeof(int64_t)));
    MPI_Aint mine;
    MPI_Get_address(region, &mine);
    MPI_Allgather(&mine, 1, MPI_AINT, addr, 1, MPI_AINT, MPI_COMM_WORLD);

    for (int k = 0; k < rounds; k++)
        for (int m = 0; m < NMODES; m++) run_mode(m, k);

    TU_MPI(MPI_Win_detach(win, region));
    TU_MPI(MPI_Win_free(&win));
    free(region); free(addr);
    int rc = tu_finish("dyn_sync");
    MPI_Finalize();
    return rc;
}
