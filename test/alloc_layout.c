/* alloc_layout: MPI_Win_allocate windows whose memory and synchronization
 * state lie side by side (osc/ucxx took the state segment from the pages
 * before the window memory, and now takes both from arenas of its shared
 * memory).  Neither may reach into the other:
 *   - every rank fills all of its window with a pattern through plain
 *     stores, first and last byte included, then the ranks synchronize with
 *     every kind of call that uses the state (exclusive and shared locks,
 *     lock_all, fence, PSCW) and move data with put, get, accumulate,
 *     fetch_and_op and compare_and_swap on the first and last elements of
 *     every peer's window;
 *   - afterwards every element holds what the operations left or the
 *     pattern, nothing else.
 * Window sizes that are not whole pages (1 element, a page and one element,
 * more), in two layouts: every rank with memory, and odd ranks with none
 * (their state is then a segment of its own, and peers reach both kinds in
 * one window); then the sizes again in decreasing order, so that windows
 * reuse the allocations of freed bigger ones (osc_ucxx_alloc_cache): the
 * state must start afresh there and the old contents must not matter.
 * The run lines also switch that reuse off.  Last, an MPI_Win_allocate that
 * cannot be mapped (1 GiB with the address space limited to 256 MiB more
 * than the process uses) must fail with an error on every rank and leave
 * nothing behind that breaks later windows.
 * Then many windows alive at once (their state segments share pages of
 * the window arena their memory comes from, next to other windows'
 * memory), some freed and others made in their place, each used with
 * every rank's fetch_and_ops, lock_all, fence and accumulates: every
 * window's elements hold what its own operations left, nothing of
 * another window's state.
 */
#include "testutil.h"
#include <stdint.h>
#include <sys/resource.h>
#include <unistd.h>

static int me, nprocs;

static int64_t pattern(int rank, MPI_Aint i) { return (int64_t) 0x5a5a000000000000LL + rank * 1000003LL + i; }

static void run(MPI_Aint nelem_mine, const char *what)
{
    MPI_Aint *nelem = malloc(nprocs * sizeof(MPI_Aint));
    int64_t *base, one = 1, old = 0, cmp, got, val;
    MPI_Win win;
    MPI_Group world, others;
    int *ranks = malloc(nprocs * sizeof(int)), nothers = 0;

    MPI_Allgather(&nelem_mine, 1, MPI_AINT, nelem, 1, MPI_AINT, MPI_COMM_WORLD);
    TU_MPI(MPI_Win_allocate(nelem_mine * sizeof(int64_t), sizeof(int64_t), MPI_INFO_NULL,
                            MPI_COMM_WORLD, &base, &win));
    MPI_Win_set_errhandler(win, MPI_ERRORS_RETURN);
    for (MPI_Aint i = 0; i < nelem_mine; i++) base[i] = pattern(me, i);
    MPI_Barrier(MPI_COMM_WORLD);

    /* Passive target: an exclusive lock per peer (a put to the last
     * element), then shared locks (fetch_and_op on the first). */
    for (int t = 0; t < nprocs; t++) {
        if (0 == nelem[t]) continue;
        val = -1 - me;
        TU_MPI(MPI_Win_lock(MPI_LOCK_EXCLUSIVE, t, 0, win));
        if (me == 0) TU_MPI(MPI_Put(&val, 1, MPI_INT64_T, t, nelem[t] - 1, 1, MPI_INT64_T, win));
        TU_MPI(MPI_Win_unlock(t, win));
    }
    MPI_Barrier(MPI_COMM_WORLD);
    for (int t = 0; t < nprocs; t++) {
        if (0 == nelem[t]) continue;
        TU_MPI(MPI_Win_lock(MPI_LOCK_SHARED, t, 0, win));
        TU_MPI(MPI_Fetch_and_op(&one, &old, MPI_INT64_T, t, 0, MPI_SUM, win));
        TU_MPI(MPI_Win_unlock(t, win));
    }
    MPI_Barrier(MPI_COMM_WORLD);

    /* lock_all: compare_and_swap on the last element of every peer, by
     * rank 1 only (so the expected value is known), and a get of the first */
    TU_MPI(MPI_Win_lock_all(0, win));
    for (int t = 0; t < nprocs; t++) {
        if (0 == nelem[t]) continue;
        if (me == 1 % nprocs) {
            cmp = nelem[t] > 1 ? -1 : -1 + nprocs;   /* rank 0's put (+ the fetch_and_ops) */
            val = 4242;
            TU_MPI(MPI_Compare_and_swap(&val, &cmp, &got, MPI_INT64_T, t, nelem[t] - 1, win));
            TU_MPI(MPI_Win_flush(t, win));
            TU_CHECK(got == cmp, "%s: compare_and_swap on rank %d's last element read %lld",
                     what, t, (long long) got);
        }
    }
    TU_MPI(MPI_Win_unlock_all(win));
    MPI_Barrier(MPI_COMM_WORLD);

    /* Fence: every rank adds its rank + 1 to the first element of every peer */
    TU_MPI(MPI_Win_fence(0, win));
    for (int t = 0; t < nprocs; t++) {
        int64_t add = me + 1;
        if (nelem[t]) TU_MPI(MPI_Accumulate(&add, 1, MPI_INT64_T, t, 0, 1, MPI_INT64_T, MPI_SUM, win));
    }
    TU_MPI(MPI_Win_fence(0, win));

    /* PSCW with every other rank: a get of each peer's last element */
    MPI_Comm_group(MPI_COMM_WORLD, &world);
    for (int t = 0; t < nprocs; t++) if (t != me) ranks[nothers++] = t;
    MPI_Group_incl(world, nothers, ranks, &others);
    TU_MPI(MPI_Win_post(others, 0, win));
    TU_MPI(MPI_Win_start(others, 0, win));
    int64_t *last = calloc(nprocs, sizeof(int64_t));
    for (int t = 0; t < nprocs; t++) {
        if (t != me && nelem[t]) TU_MPI(MPI_Get(&last[t], 1, MPI_INT64_T, t, nelem[t] - 1, 1, MPI_INT64_T, win));
    }
    TU_MPI(MPI_Win_complete(win));
    TU_MPI(MPI_Win_wait(win));
    MPI_Barrier(MPI_COMM_WORLD);

    /* The first element: pattern + nprocs fetch_and_ops + the sum of
     * (rank + 1); the last: rank 0's put, then rank 1's swap to 4242 (one
     * element: the swap replaces the put and the fetch_and_ops, then the
     * accumulates add); everything in between: the pattern. */
    int64_t sum = (int64_t) nprocs * (nprocs + 1) / 2;
    for (int t = 0; t < nprocs; t++) {
        if (t != me && nelem[t]) {
            int64_t want = nelem[t] > 1 ? 4242 : 4242 + sum;  /* 1 element: first and last */
            TU_CHECK(last[t] == want, "%s: rank %d's last element read %lld, want %lld", what,
                     t, (long long) last[t], (long long) want);
        }
    }
    for (MPI_Aint i = 0; i < nelem_mine; i++) {
        int64_t want = pattern(me, i);
        if (i == nelem_mine - 1) want = 4242;
        if (i == 0) want = nelem_mine == 1 ? 4242 + sum : pattern(me, 0) + nprocs + sum;
        TU_CHECK(base[i] == want, "%s: element %ld of %ld holds %lld, want %lld", what, (long) i,
                 (long) nelem_mine, (long long) base[i], (long long) want);
        if (base[i] != want) break;
    }
    free(last);
    MPI_Group_free(&others);
    MPI_Group_free(&world);
    TU_MPI(MPI_Win_free(&win));
    free(nelem);
    free(ranks);
}

#define MANY 12

static int64_t mpattern(int rank, int w, MPI_Aint i)
{
    return (int64_t) 0x3c3c000000000000LL + rank * 1000003LL + w * 100003LL + i;
}

static void many_make(MPI_Win *win, int64_t **base, MPI_Aint *nelem, int w, MPI_Aint n)
{
    nelem[w] = n;
    TU_MPI(MPI_Win_allocate(n * sizeof(int64_t), sizeof(int64_t), MPI_INFO_NULL,
                            MPI_COMM_WORLD, &base[w], &win[w]));
    for (MPI_Aint i = 0; i < n; i++) base[w][i] = mpattern(me, w, i);
}

/* Every rank adds 1 to the first and last element of every peer's window
 * under lock_all, then me + 1 to the last under a fence. */
static void many_use(MPI_Win win, MPI_Aint n)
{
    int64_t one = 1, old, add = me + 1;

    TU_MPI(MPI_Win_lock_all(0, win));
    for (int t = 0; t < nprocs; t++) {
        TU_MPI(MPI_Fetch_and_op(&one, &old, MPI_INT64_T, t, 0, MPI_SUM, win));
        TU_MPI(MPI_Fetch_and_op(&one, &old, MPI_INT64_T, t, n - 1, MPI_SUM, win));
    }
    TU_MPI(MPI_Win_unlock_all(win));
    TU_MPI(MPI_Win_fence(0, win));
    for (int t = 0; t < nprocs; t++) {
        TU_MPI(MPI_Accumulate(&add, 1, MPI_INT64_T, t, n - 1, 1, MPI_INT64_T, MPI_SUM, win));
    }
    TU_MPI(MPI_Win_fence(0, win));
}

static void many(void)
{
    MPI_Aint sizes[] = { 1, 512, 513, 2, 1024, 3 * 512 + 5, 64, 512 * 5, 1, 511, 700, 8 };
    MPI_Aint later[] = { 512 * 2, 1, 513 };
    int gone[] = { 1, 4, 8 };
    MPI_Win win[MANY];
    int64_t *base[MANY];
    MPI_Aint nelem[MANY];
    int64_t sum = (int64_t) nprocs * (nprocs + 1) / 2;

    for (int w = 0; w < MANY; w++) many_make(win, base, nelem, w, sizes[w]);
    for (int k = 0; k < 3; k++) TU_MPI(MPI_Win_free(&win[gone[k]]));
    for (int k = 0; k < 3; k++) many_make(win, base, nelem, gone[k], later[k]);
    MPI_Barrier(MPI_COMM_WORLD);
    for (int w = 0; w < MANY; w++) many_use(win[w], nelem[w]);
    MPI_Barrier(MPI_COMM_WORLD);
    for (int w = 0; w < MANY; w++) {
        MPI_Aint n = nelem[w];
        for (MPI_Aint i = 0; i < n; i++) {
            int64_t want = mpattern(me, w, i);
            if (0 == i) want += nprocs;
            if (n - 1 == i) want += nprocs + sum;
            TU_CHECK(base[w][i] == want, "many windows: window %d, element %ld of %ld holds "
                     "%lld, want %lld", w, (long) i, (long) n, (long long) base[w][i],
                     (long long) want);
            if (base[w][i] != want) break;
        }
    }
    for (int w = MANY - 1; w >= 0; w--) TU_MPI(MPI_Win_free(&win[w]));
}

/* MPI_Win_allocate of 1 GiB that cannot be mapped (RLIMIT_AS). */
static void unmappable(void)
{
    struct rlimit old, lim;
    unsigned long vm_pages = 0;
    FILE *f = fopen("/proc/self/statm", "r");
    MPI_Win win;
    void *base = NULL;
    int err, cls = MPI_SUCCESS;

    if (NULL == f || 1 != fscanf(f, "%lu", &vm_pages) || 0 != getrlimit(RLIMIT_AS, &old)) {
        TU_CHECK(0, "cannot read the address space size or limit");
        if (f) fclose(f);
        return;
    }
    fclose(f);
    lim = old;
    lim.rlim_cur = vm_pages * (rlim_t) sysconf(_SC_PAGESIZE) + ((rlim_t) 256 << 20);
    MPI_Barrier(MPI_COMM_WORLD);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    TU_CHECK(0 == setrlimit(RLIMIT_AS, &lim), "setrlimit failed");
    err = MPI_Win_allocate((MPI_Aint) 1 << 30, 1, MPI_INFO_NULL, MPI_COMM_WORLD, &base, &win);
    setrlimit(RLIMIT_AS, &old);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_ARE_FATAL);
    if (MPI_SUCCESS != err) MPI_Error_class(err, &cls);
    /* (Open MPI 4.1's binding reports every failed creation as MPI_ERR_WIN) */
    TU_CHECK(MPI_ERR_NO_MEM == cls || MPI_ERR_WIN == cls, "MPI_Win_allocate of 1 GiB past "
             "RLIMIT_AS: error class %d, want MPI_ERR_NO_MEM (%d) or MPI_ERR_WIN (%d)", cls,
             MPI_ERR_NO_MEM, MPI_ERR_WIN);
    if (MPI_SUCCESS == err) MPI_Win_free(&win);
}

int main(int argc, char **argv)
{
    MPI_Aint sizes[] = { 1, 2, 512, 513, 4096 / 8 * 3 + 5 };
    char what[64];

    tu_parse_args(argc, argv);
    tu_init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &me);
    MPI_Comm_size(MPI_COMM_WORLD, &nprocs);
    int nsizes = (int) (sizeof(sizes) / sizeof(sizes[0]));
    for (int pass = 0; pass < 3; pass++) {   /* up, up with empty odd ranks, down */
        for (int k = 0; k < nsizes; k++) {
            MPI_Aint size = sizes[pass == 2 ? nsizes - 1 - k : k];
            MPI_Aint n = (pass == 1 && me % 2) ? 0 : size;
            snprintf(what, sizeof(what), "%ld elements%s", (long) size,
                     pass == 1 ? ", odd ranks none" : pass == 2 ? " (sizes down)" : "");
            run(n, what);
        }
    }
    unmappable();
    for (int k = 0; k < 2; k++) run(sizes[k], "after a failed MPI_Win_allocate");
    many();
    int rc = tu_finish("alloc_layout");
    MPI_Finalize();
    return rc;
}
