/* Dynamic windows: a target detaches memory another rank has used, then the
 * origin accesses it again after synchronizing with the detach, under every
 * kind of synchronization: lock shared, lock exclusive, lock_all + flush,
 * PSCW and fence.  Ranks in a ring, each the target of the previous one.
 * Window error handler MPI_ERRORS_RETURN.  Per kind, ROUNDS rounds:
 *  1. the target attaches a fresh page P (mmap'd); the origin, in one epoch
 *     of that kind, puts a value there and gets it back (checked), so that
 *     it knows P's region;
 *  2. the target detaches P and fills it with a sentinel, then
 *     - in even rounds maps new memory at P's address (munmap + mmap
 *       MAP_FIXED: other pages at the same address) and attaches that;
 *     - in odd rounds leaves P detached and attaches another page Q;
 *     and a barrier tells the origin;
 *  3. the origin, in one epoch of that kind, puts a short epoch's value (one
 *     put) and, in another epoch, a long one's (LONG puts of 8 bytes, more
 *     than a lock request carries):
 *     - even rounds: to the new memory at P's address: every call succeeds
 *       and the target finds the values in the new memory (a put through the
 *       old registration would have reached the old pages);
 *     - odd rounds: to P: MPI_ERR_RMA_RANGE, from the call or from the call
 *       that closes the epoch (or the flush), and the target finds its
 *       sentinel unchanged; then to Q, which works.  (PSCW and fence: the
 *       target's answer may come after MPI_Win_complete or the fence, which
 *       wait for no answer; then the next closing call must report it, not
 *       a later one: an empty epoch of the same kind follows, on every
 *       rank, and the epoch to Q after it must succeed: across hosts, under
 *       load, the answer may come after the empty epoch's collective or
 *       post too.)
 * Epochs whose operation failed at the target must release their lock: the
 * next epoch of the same kind (and the exclusive lock of the next round)
 * would hang otherwise. */
#include "testutil.h"
#include <errno.h>
#include <sys/mman.h>
#include <unistd.h>

#define ROUNDS 4
#define LONG 80          /* puts in a long epoch (a lock request carries fewer) */
#define SENT 0x5e5e5e5e5e5e5e5eULL

enum { K_SHARED, K_EXCL, K_LOCKALL, K_PSCW, K_FENCE, NKINDS };
static const char *kind_names[] = { "lock shared", "lock exclusive", "lock_all + flush", "PSCW",
                                    "fence" };

static int rank, nprocs, next, prev;
static size_t page;
static MPI_Win win;
static MPI_Group gnext, gprev;

/* The origin's epoch of `kind` on `next` (rank `prev` exposes to us in the
 * same call); the closing call's result. */
static void open_epoch(int kind)
{
    switch (kind) {
    case K_SHARED: TU_MPI(MPI_Win_lock(MPI_LOCK_SHARED, next, 0, win)); break;
    case K_EXCL: TU_MPI(MPI_Win_lock(MPI_LOCK_EXCLUSIVE, next, 0, win)); break;
    case K_LOCKALL: TU_MPI(MPI_Win_lock_all(0, win)); break;
    case K_PSCW:
        TU_MPI(MPI_Win_post(gprev, 0, win));
        TU_MPI(MPI_Win_start(gnext, 0, win));
        break;
    case K_FENCE: TU_MPI(MPI_Win_fence(0, win)); break;
    }
}

static int close_epoch(int kind)
{
    int rc = MPI_SUCCESS, rc2;
    switch (kind) {
    case K_SHARED:
    case K_EXCL: return MPI_Win_unlock(next, win);
    case K_LOCKALL:
        rc = MPI_Win_flush(next, win);
        rc2 = MPI_Win_unlock_all(win);
        return MPI_SUCCESS != rc ? rc : rc2;
    case K_PSCW:
        rc = MPI_Win_complete(win);
        TU_MPI(MPI_Win_wait(win));
        return rc;
    case K_FENCE: return MPI_Win_fence(MPI_MODE_NOSUCCEED, win);
    }
    return rc;
}

static uint64_t *map_page(void *at)
{
    void *p = mmap(at, page, PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS | (at ? MAP_FIXED : 0), -1, 0);
    TU_CHECK(MAP_FAILED != p, "mmap: %s", strerror(errno));
    return MAP_FAILED == p ? NULL : p;
}

static void fill(uint64_t *p, uint64_t v)
{
    for (size_t i = 0; i < page / 8; i++) p[i] = v;
}

static MPI_Aint swap_address(void *mine)
{
    MPI_Aint a, theirs;
    MPI_Get_address(mine, &a);
    MPI_Sendrecv(&a, 1, MPI_AINT, prev, 0, &theirs, 1, MPI_AINT, next, 0, MPI_COMM_WORLD,
                 MPI_STATUS_IGNORE);
    return theirs;
}

/* The value origin `who` puts. */
static uint64_t val(int who, int kind, int round, int step, int i)
{
    return ((uint64_t) (who + 1) << 48) | ((uint64_t) kind << 40) | ((uint64_t) round << 32) |
           ((uint64_t) step << 24) | (uint64_t) i;
}

/* An epoch of `n` puts to `addr` (words 0..n-1): the first error class of
 * its calls, the closing one included. */
static int put_epoch(int kind, MPI_Aint addr, int n, uint64_t *vals)
{
    int cls = MPI_SUCCESS;
    open_epoch(kind);
    for (int i = 0; i < n; i++) {
        int c = tu_err_class(MPI_Put(&vals[i], 1, MPI_UINT64_T, next, addr + 8 * i, 1,
                                     MPI_UINT64_T, win));
        if (MPI_SUCCESS == cls) cls = c;
    }
    int c = tu_err_class(close_epoch(kind));
    return MPI_SUCCESS == cls ? c : cls;
}

static void round_of(int kind, int r)
{
    uint64_t vals[LONG], got = 0;
    const int same = 0 == r % 2;
    uint64_t *p = map_page(NULL), *q = NULL;
    MPI_Aint tp, tq = 0;

    fill(p, 0);
    TU_MPI(MPI_Win_attach(win, p, page));
    tp = swap_address(p);
    MPI_Barrier(MPI_COMM_WORLD);

    /* 1: used once */
    vals[0] = val(rank, kind, r, 1, 0);
    TU_CHECK(MPI_SUCCESS == put_epoch(kind, tp, 1, vals), "%s, round %d: put to attached memory",
             kind_names[kind], r);
    open_epoch(kind);
    TU_MPI(MPI_Get(&got, 1, MPI_UINT64_T, next, tp, 1, MPI_UINT64_T, win));
    TU_MPI(close_epoch(kind));
    TU_CHECK(got == vals[0], "%s, round %d: got %llx back, expected %llx", kind_names[kind], r,
             (unsigned long long) got, (unsigned long long) vals[0]);
    MPI_Barrier(MPI_COMM_WORLD);

    /* 2: detached; new memory at the same address, or elsewhere */
    TU_MPI(MPI_Win_detach(win, p));
    fill(p, SENT);
    if (same) {
        TU_CHECK(p == map_page(p), "mmap at the same address");
        fill(p, 0);
        TU_MPI(MPI_Win_attach(win, p, page));
    } else {
        q = map_page(NULL);
        fill(q, 0);
        TU_MPI(MPI_Win_attach(win, q, page));
    }
    tq = swap_address(q ? (void *) q : (void *) p);
    MPI_Barrier(MPI_COMM_WORLD);

    /* 3: a short epoch and a long one */
    for (int step = 2; step <= 3; step++) {
        int n = 2 == step ? 1 : LONG, base = 2 == step ? 0 : 1;
        for (int i = 0; i < n; i++) vals[i] = val(rank, kind, r, step, i);
        int cls = put_epoch(kind, tp + 8 * base, n, vals);
        if (same) {
            TU_CHECK(MPI_SUCCESS == cls, "%s, round %d: %d put(s) to new memory at the same "
                     "address: %s", kind_names[kind], r, n, tu_err_class_name(cls));
        } else {
            if (K_PSCW == kind || K_FENCE == kind) {   /* (every rank: collective) */
                open_epoch(kind);
                int c = tu_err_class(close_epoch(kind));
                if (MPI_SUCCESS == cls) cls = c;
            }
            TU_CHECK(MPI_ERR_RMA_RANGE == cls, "%s, round %d: %d put(s) to detached memory: %s, "
                     "expected MPI_ERR_RMA_RANGE", kind_names[kind], r, n,
                     tu_err_class_name(cls));
            cls = put_epoch(kind, tq + 8 * base, n, vals);
            TU_CHECK(MPI_SUCCESS == cls, "%s, round %d: %d put(s) to the other region: %s",
                     kind_names[kind], r, n, tu_err_class_name(cls));
        }
    }
    MPI_Barrier(MPI_COMM_WORLD);

    /* the target's view */
    {
        uint64_t *now = same ? p : q;
        int bad = 0, stale = 0;
        for (int step = 2; step <= 3; step++) {
            int n = 2 == step ? 1 : LONG, base = 2 == step ? 0 : 1;
            for (int i = 0; i < n; i++) bad += now[base + i] != val(prev, kind, r, step, i);
        }
        TU_CHECK(0 == bad, "%s, round %d: %d values missing in the %s", kind_names[kind], r, bad,
                 same ? "new memory at the detached region's address" : "other region");
        if (!same) {
            for (size_t i = 0; i < page / 8; i++) stale += p[i] != SENT;
            TU_CHECK(0 == stale, "%s, round %d: %d words of detached memory written",
                     kind_names[kind], r, stale);
        }
    }
    TU_MPI(MPI_Win_detach(win, same ? (void *) p : (void *) q));
    MPI_Barrier(MPI_COMM_WORLD);
    munmap(p, page);
    if (q) munmap(q, page);
}

int main(int argc, char **argv)
{
    MPI_Group world;

    tu_init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &nprocs);
    next = (rank + 1) % nprocs;
    prev = (rank + nprocs - 1) % nprocs;
    page = (size_t) sysconf(_SC_PAGESIZE);
    MPI_Comm_group(MPI_COMM_WORLD, &world);
    MPI_Group_incl(world, 1, &next, &gnext);
    MPI_Group_incl(world, 1, &prev, &gprev);
    TU_MPI(MPI_Win_create_dynamic(MPI_INFO_NULL, MPI_COMM_WORLD, &win));
    TU_MPI(MPI_Win_set_errhandler(win, MPI_ERRORS_RETURN));
    for (int kind = 0; kind < NKINDS; kind++) {
        for (int r = 0; r < ROUNDS; r++) round_of(kind, r);
    }
    TU_MPI(MPI_Win_free(&win));
    MPI_Group_free(&gnext);
    MPI_Group_free(&gprev);
    MPI_Group_free(&world);
    int rc = tu_finish("dyn_detach");
    MPI_Finalize();
    return rc;
}
