/* Dynamic windows: MPI_Put / MPI_Get of one predefined type to a region an
 * origin thread has used before (its region cache's hot range, which skips
 * the lookup), across detach and re-attach.  Ranks in a ring: each is the target of the previous rank.
 * -t N threads per rank (default 3; MPI_THREAD_MULTIPLE, each thread its
 * own slot and its own region cache; -t 1: MPI_Init, one worker);
 * -r N rounds (default 6); -i N iterations per thread and round (default
 * 40).  Window error handler MPI_ERRORS_RETURN.  Round r:
 *  1. every rank attaches its region: in rounds r % 3 == 1 the memory of
 *     round r-1 again (detached, zeroed and attached at the same address),
 *     else fresh memory (page-aligned in even rounds); the addresses go
 *     around the ring.
 *  2. under lock_all each thread, per iteration, puts BLK ints (MPI_INT)
 *     and one double (MPI_DOUBLE) to its slot, flushes, gets both back,
 *     flushes and checks them.
 *  3. the target checks its region holds every thread's last values.
 *  4. the target detaches the region and writes a sentinel over it; under
 *     lock_all each thread puts to and gets from the old address again:
 *     each must return MPI_ERR_RMA_RANGE, or succeed and the flush after
 *     them return it (the operations went to the target with the lock
 *     request: it found the range); a thread that kept using its cached
 *     mapping would succeed throughout, and write into detached memory; the
 *     target finds its sentinel unchanged.
 * A round also fails when an access returns an error where none is due. */
#include "testutil.h"
#include <pthread.h>
#include <stddef.h>

#define BLK 32
#define MAXT 16

typedef struct {
    int ints[BLK];
    double d;
    char pad[64 - (BLK * sizeof(int) + sizeof(double)) % 64];
} slot_t;

static int rank, nprocs, next, prev, nt = 3, rounds = 6, iters = 40;
static int round_now;          /* the threads' round */
static MPI_Win win;
static MPI_Aint target_base;   /* the next rank's region this round */

/* What each thread saw (checked by the main thread: TU_CHECK counts
 * without atomics). */
static struct {
    int errs, bad;             /* step 2: failed calls, wrong read-backs */
    int cls[4];                /* step 4: error classes of put, double put, get, flush */
} seen[MAXT];

static int ival(int origin, int t, int r, int it, int i)
{
    return (int) (((uint32_t) origin * 7919u + t * 104729u + r * 1009u + it * 131u + i) *
                  2654435761u >> 1);
}

static double dval(int origin, int t, int r, int it)
{
    return origin * 1000.0 + t * 100.0 + r * 10.0 + it * 0.5 + 0.25;
}

/* Step 2: thread t's iterations. */
static void *accesses(void *arg)
{
    int t = (int) (intptr_t) arg, r = round_now;
    MPI_Aint disp = target_base + (MPI_Aint) t * sizeof(slot_t);
    slot_t out, in;

    seen[t].errs = seen[t].bad = 0;
    for (int it = 0; it < iters; it++) {
        int errs = 0;
        for (int i = 0; i < BLK; i++) out.ints[i] = ival(rank, t, r, it, i);
        out.d = dval(rank, t, r, it);
        memset(&in, 0, sizeof(in));
        errs += MPI_SUCCESS != MPI_Put(out.ints, BLK, MPI_INT, next, disp, BLK, MPI_INT, win);
        errs += MPI_SUCCESS != MPI_Put(&out.d, 1, MPI_DOUBLE, next,
                                       disp + offsetof(slot_t, d), 1, MPI_DOUBLE, win);
        errs += MPI_SUCCESS != MPI_Win_flush(next, win);
        errs += MPI_SUCCESS != MPI_Get(in.ints, BLK, MPI_INT, next, disp, BLK, MPI_INT, win);
        errs += MPI_SUCCESS != MPI_Get(&in.d, 1, MPI_DOUBLE, next,
                                       disp + offsetof(slot_t, d), 1, MPI_DOUBLE, win);
        errs += MPI_SUCCESS != MPI_Win_flush(next, win);
        seen[t].errs += errs;
        seen[t].bad += 0 != memcmp(in.ints, out.ints, sizeof(out.ints)) || in.d != out.d;
    }
    return NULL;
}

/* Step 4: thread t's accesses to the detached region. */
static void *stale(void *arg)
{
    int t = (int) (intptr_t) arg;
    MPI_Aint disp = target_base + (MPI_Aint) t * sizeof(slot_t);
    int buf[BLK];
    double d = -1.0;

    for (int i = 0; i < BLK; i++) buf[i] = -1;
    seen[t].cls[0] = tu_err_class(MPI_Put(buf, BLK, MPI_INT, next, disp, BLK, MPI_INT, win));
    seen[t].cls[1] = tu_err_class(MPI_Put(&d, 1, MPI_DOUBLE, next, disp + offsetof(slot_t, d),
                                          1, MPI_DOUBLE, win));
    seen[t].cls[2] = tu_err_class(MPI_Get(buf, BLK, MPI_INT, next, disp, BLK, MPI_INT, win));
    seen[t].cls[3] = tu_err_class(MPI_Win_flush(next, win));
    return NULL;
}

static void run_threads(void *(*fn)(void *))
{
    pthread_t th[MAXT];
    for (int t = 1; t < nt; t++) pthread_create(&th[t], NULL, fn, (void *) (intptr_t) t);
    fn((void *) 0);
    for (int t = 1; t < nt; t++) pthread_join(th[t], NULL);
}

int main(int argc, char **argv)
{
    int total;
    size_t bytes;
    slot_t *region = NULL;

    nt = (int) tu_opt_long(argc, argv, "-t", 3);
    rounds = (int) tu_opt_long(argc, argv, "-r", 6);
    iters = (int) tu_opt_long(argc, argv, "-i", 40);
    if (nt < 1 || nt > MAXT) nt = 3;
    tu_mt = nt > 1;   /* (threads need MPI_THREAD_MULTIPLE; tu_init fails without it) */
    tu_init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &nprocs);
    next = (rank + 1) % nprocs;
    prev = (rank + nprocs - 1) % nprocs;
    if (tu_slow_transport() && iters > 10) iters = 10;
    bytes = (size_t) nt * sizeof(slot_t);

    TU_MPI(MPI_Win_create_dynamic(MPI_INFO_NULL, MPI_COMM_WORLD, &win));
    TU_MPI(MPI_Win_set_errhandler(win, MPI_ERRORS_RETURN));
    for (int r = 0; r < rounds; r++) {
        MPI_Aint mine;
        int bad = 0;

        /* 1. attach: the previous round's memory again, or fresh memory */
        if (r % 3 != 1 || NULL == region) {
            free(region);
            region = NULL;
            if (0 == r % 2) {
                TU_CHECK(0 == posix_memalign((void **) &region, 4096, bytes), "posix_memalign");
            } else {
                region = malloc(bytes);
            }
        }
        memset(region, 0, bytes);
        TU_MPI(MPI_Win_attach(win, region, (MPI_Aint) bytes));
        TU_MPI(MPI_Get_address(region, &mine));
        MPI_Sendrecv(&mine, 1, MPI_AINT, prev, 0, &target_base, 1, MPI_AINT, next, 0,
                     MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        round_now = r;

        /* 2. accesses from every thread */
        TU_MPI(MPI_Win_lock_all(0, win));
        run_threads(accesses);
        TU_MPI(MPI_Win_unlock_all(win));
        MPI_Barrier(MPI_COMM_WORLD);
        for (int t = 0; t < nt; t++) {
            TU_CHECK(0 == seen[t].errs, "thread %d, round %d: %d calls failed on an attached "
                     "region", t, r, seen[t].errs);
            TU_CHECK(0 == seen[t].bad, "thread %d, round %d: %d of %d iterations read back "
                     "other values", t, r, seen[t].bad, iters);
        }

        /* 3. the target's view */
        for (int t = 0; t < nt; t++) {
            for (int i = 0; i < BLK; i++) bad += region[t].ints[i] != ival(prev, t, r, iters - 1, i);
            bad += region[t].d != dval(prev, t, r, iters - 1);
        }
        TU_CHECK(0 == bad, "round %d: %d wrong values in rank %d's region", r, bad, rank);

        /* 4. detached: every thread's access fails, none lands */
        TU_MPI(MPI_Win_detach(win, region));
        memset(region, 0x5a, bytes);
        MPI_Barrier(MPI_COMM_WORLD);
        TU_MPI(MPI_Win_lock_all(0, win));
        run_threads(stale);
        TU_MPI(MPI_Win_unlock_all(win));
        MPI_Barrier(MPI_COMM_WORLD);
        for (int t = 0; t < nt; t++) {
            static const char *const what[3] = { "put", "double put", "get" };
            for (int k = 0; k < 3; k++) {
                TU_CHECK(MPI_ERR_RMA_RANGE == seen[t].cls[k] ||
                         (MPI_SUCCESS == seen[t].cls[k] && MPI_ERR_RMA_RANGE == seen[t].cls[3]),
                         "thread %d, round %d: %s on a detached region: %s (flush: %s)", t, r,
                         what[k], tu_err_class_name(seen[t].cls[k]),
                         tu_err_class_name(seen[t].cls[3]));
            }
        }
        bad = 0;
        for (size_t b = 0; b < bytes; b++) bad += ((unsigned char *) region)[b] != 0x5a;
        TU_CHECK(0 == bad, "round %d: %d bytes of rank %d's detached region were written", r,
                 bad, rank);
    }
    TU_MPI(MPI_Win_free(&win));
    free(region);
    total = tu_finish("dyn_hot");
    MPI_Finalize();
    return total;
}
