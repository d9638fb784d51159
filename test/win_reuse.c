/* win_reuse: window after window, each reaching its peers' memory and
 * synchronization state correctly, while osc/ucxx keeps peers' rkeys from
 * one window to the next (osc_ucxx_worker.c, ompi_osc_ucxx_rkey_take): a
 * freed window's allocation (state segment, MPI_Win_allocate's memory) is
 * used again by the next window that fits, and the peers reach it through
 * the rkey they kept; a window that needs a new allocation must never be
 * reached through the rkey of an old one, though that one may still be
 * mapped (kept) and even sit at the same addresses.
 *
 * ROUNDS ("-r N", default 150) windows in each enabled flavor (every flavor
 * unless TU_FLAVORS narrows them), sizes cycling through small and large
 * ones (growing, so that some windows need a new allocation, and shrinking,
 * so that others reuse one) and every 7th window one size larger than ever
 * before.  In each window:
 *   - every rank fills its memory with a pattern of (rank, round);
 *   - fence, then a get of the whole of the next rank's window (checked) and
 *     a put of (rank, round) into the last element of the previous rank's,
 *     then fence: the last element is checked by its owner;
 *   - an exclusive lock on the next rank: fetch_and_op(+1) on its first
 *     element, then an accumulate (MPI_SUM) of 1 under lock_all: the first
 *     element ends at pattern + 2, checked after a barrier.
 * Fences synchronize through the peers' state segments where they can: a
 * stale mapping of one hangs (the run's timeout) or leaves wrong values.
 * "--mt": MPI_THREAD_MULTIPLE, and the locked part of each window runs in a
 * thread made for it, which takes a worker from the pool the previous
 * window's thread returned its worker to, with that worker's kept rkeys.
 * The run lines also keep no freed allocations (osc_ucxx_alloc_cache 0), so
 * that every window's memory is new.
 * Last, BIG ("-b N", default 12) MPI_Win_allocate windows larger than
 * can be kept for reuse (a quarter of osc_ucxx_alloc_cache, read through
 * MPI_T: 4 MiB by default), each reached by a put from the previous rank:
 * the UCX shared-memory segments this process has mapped (its own and its
 * peers', SYSV and POSIX ones in /proc/self/maps) must not grow with their
 * number, since an rkey kept for an allocation nobody keeps holds it in
 * memory.  Then KEPT ("-k N", default 24) windows of sizes that can be kept
 * but never reused (each larger than the last, from an eighth of the cache
 * up): their owners keep osc_ucxx_alloc_cache bytes of them and release the
 * rest, and the peers' idle rkeys, which would hold every one, must hold at
 * most that many bytes per worker either (with 64 of them and no bound on
 * bytes, 2 ranks grew by 75 MiB; 2-10 MiB so). */
#include "testutil.h"
#include <pthread.h>
#include <stdint.h>

static int me, nprocs, next, prev, mt;

static int64_t pattern(int rank, int round, MPI_Aint i)
{
    return (int64_t) 0x3c00000000000000LL + rank * 100000000LL + round * 100000LL + i;
}

static MPI_Aint round_elems(int round)
{
    static const MPI_Aint sizes[] = {1, 512, 3, 8192, 100, 40000, 2, 1024, 20000};
    if (round % 7 == 6) return 50000 + round * 64;  /* larger than any before */
    return sizes[round % (int) (sizeof(sizes) / sizeof(sizes[0]))];
}

/* An exclusive lock on the next rank: fetch_and_op(+1) on its first element;
 * then an accumulate of 1 there under lock_all. */
static void *locked_part(void *arg)
{
    tu_win_t *w = arg;
    int64_t one = 1, old = 0;
    TU_MPI(MPI_Win_lock(MPI_LOCK_EXCLUSIVE, next, 0, w->win));
    TU_MPI(MPI_Fetch_and_op(&one, &old, MPI_INT64_T, next, tu_disp(w, next, 0), MPI_SUM,
                            w->win));
    TU_MPI(MPI_Win_unlock(next, w->win));
    TU_MPI(MPI_Win_lock_all(0, w->win));
    TU_MPI(MPI_Accumulate(&one, 1, MPI_INT64_T, next, tu_disp(w, next, 0), 1, MPI_INT64_T,
                          MPI_SUM, w->win));
    TU_MPI(MPI_Win_unlock_all(w->win));
    return NULL;
}

static void one_window(int flavor, int round)
{
    MPI_Aint n = round_elems(round), nnext = round_elems(round);
    tu_win_t w;
    int64_t *mine, *got, val;

    tu_win_create(flavor, n * (MPI_Aint) sizeof(int64_t), sizeof(int64_t), MPI_INFO_NULL,
                  MPI_COMM_WORLD, &w);
    if (MPI_WIN_NULL == w.win) return;  /* (a component without this flavor) */
    mine = w.base;
    for (MPI_Aint i = 0; i < n; i++) mine[i] = pattern(me, round, i);
    got = malloc(nnext * sizeof(int64_t));

    TU_MPI(MPI_Win_fence(0, w.win));
    TU_MPI(MPI_Get(got, (int) nnext, MPI_INT64_T, next, tu_disp(&w, next, 0), (int) nnext,
                   MPI_INT64_T, w.win));
    val = -pattern(me, round, 0);
    TU_MPI(MPI_Put(&val, 1, MPI_INT64_T, prev, tu_disp(&w, prev, n - 1), 1, MPI_INT64_T,
                   w.win));
    TU_MPI(MPI_Win_fence(0, w.win));
    for (MPI_Aint i = 0; i < nnext - 1; i++) {
        if (got[i] != pattern(next, round, i)) {
            TU_CHECK(0, "%s window %d: got %lld at element %ld of rank %d's, expected %lld",
                     tu_flavor_names[flavor], round, (long long) got[i], (long) i, next,
                     (long long) pattern(next, round, i));
            break;
        }
    }
    if (n > 1 || 1 == nprocs) {
        TU_CHECK(mine[n - 1] == -pattern(next, round, 0),
                 "%s window %d: last element %lld, expected rank %d's put %lld",
                 tu_flavor_names[flavor], round, (long long) mine[n - 1], next,
                 (long long) -pattern(next, round, 0));
    }

    if (mt) {
        pthread_t thread;
        TU_CHECK(0 == pthread_create(&thread, NULL, locked_part, &w), "pthread_create");
        pthread_join(thread, NULL);
    } else {
        locked_part(&w);
    }
    MPI_Barrier(MPI_COMM_WORLD);
    int64_t first = n > 1 || 1 == nprocs ? pattern(me, round, 0) : -pattern(next, round, 0);
    TU_MPI(MPI_Win_lock(MPI_LOCK_SHARED, me, 0, w.win));
    TU_CHECK(mine[0] == first + 2, "%s window %d: first element %lld, expected %lld",
             tu_flavor_names[flavor], round, (long long) mine[0], (long long) (first + 2));
    TU_MPI(MPI_Win_unlock(me, w.win));

    free(got);
    tu_win_free(&w);
}

/* Bytes of UCX shared-memory segments mapped in this process. */
static long shm_mapped(void)
{
    FILE *maps = fopen("/proc/self/maps", "r");
    char line[512];
    unsigned long lo, hi;
    long total = 0;
    while (maps && fgets(line, sizeof(line), maps)) {
        if (strstr(line, " rw-s ") && (strstr(line, "/SYSV") || strstr(line, "ucx_shm_posix")) &&
            2 == sscanf(line, "%lx-%lx", &lo, &hi)) {
            total += (long) (hi - lo);
        }
    }
    if (maps) fclose(maps);
    return total;
}

/* osc_ucxx_alloc_cache (MPI_T), or its default where it cannot be read. */
static long alloc_cache(void)
{
    int provided, index, count;
    unsigned long value = 16UL << 20;
    MPI_T_cvar_handle handle;
    if (MPI_SUCCESS != MPI_T_init_thread(MPI_THREAD_SINGLE, &provided)) return (long) value;
    if (MPI_SUCCESS == MPI_T_cvar_get_index("osc_ucxx_alloc_cache", &index) &&
        MPI_SUCCESS == MPI_T_cvar_handle_alloc(index, NULL, &handle, &count)) {
        (void) MPI_T_cvar_read(handle, &value);
        MPI_T_cvar_handle_free(&handle);
    }
    MPI_T_finalize();
    return (long) value;
}

/* A window of n int64 reached by a put from the previous rank, checked. */
static void put_window(MPI_Aint n, int k, const char *what)
{
    int64_t *base, val = pattern(me, k, 7);
    MPI_Win win;
    TU_MPI(MPI_Win_allocate(n * 8, 8, MPI_INFO_NULL, MPI_COMM_WORLD, &base, &win));
    base[n - 1] = 0;
    TU_MPI(MPI_Win_fence(0, win));
    TU_MPI(MPI_Put(&val, 1, MPI_INT64_T, next, n - 1, 1, MPI_INT64_T, win));
    TU_MPI(MPI_Win_fence(0, win));
    TU_CHECK(base[n - 1] == pattern(prev, k, 7), "%s window %d: %lld, expected %lld", what, k,
             (long long) base[n - 1], (long long) pattern(prev, k, 7));
    TU_MPI(MPI_Win_free(&win));
}

static void big_windows(int count, long cache)
{
    long after_first = 0;
    for (int k = 0; k < count; k++) {
        put_window((2L << 20) / 8 + cache / 4 / 8 + k * 1024, k, "big");
        if (0 == k) after_first = shm_mapped();
    }
    long grown = shm_mapped() - after_first;
    TU_CHECK(grown < 4L << 20, "%d big windows created and freed left %ld more bytes of "
             "shared-memory segments mapped than the first", count, grown);
}

/* Owners keep `cache` bytes; each worker's idle rkeys map at most as many
 * (or 4 MiB): with a worker for the links and one for the direct mappings
 * at most, growth stays under three times the cache and a margin. */
static void kept_windows(int count, long cache)
{
    long before = shm_mapped(), bound = 3 * (cache > (4L << 20) ? cache : 4L << 20) + (4L << 20);
    for (int k = 0; k < count && cache >= (1L << 20); k++) {
        put_window(cache / 8 / 8 + k * 8192, k, "kept");
    }
    long grown = shm_mapped() - before;
    TU_CHECK(grown < bound, "%d windows of keepable sizes created and freed left %ld more "
             "bytes of shared-memory segments mapped (at most %ld expected: %ld kept by "
             "their owners and as much in each worker's idle rkeys)", count, grown, bound,
             cache);
}

int main(int argc, char **argv)
{
    mt = tu_mt = tu_opt_flag(argc, argv, "--mt");
    tu_init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &me);
    MPI_Comm_size(MPI_COMM_WORLD, &nprocs);
    next = (me + 1) % nprocs;
    prev = (me + nprocs - 1) % nprocs;
    int rounds = (int) tu_opt_long(argc, argv, "-r", 150);
    for (int flavor = 0; flavor < TU_NFLAVORS; flavor++) {
        if (!tu_flavor_or_all(flavor)) continue;
        for (int round = 0; round < rounds; round++) one_window(flavor, round);
    }
    long cache = alloc_cache();
    big_windows((int) tu_opt_long(argc, argv, "-b", 12), cache);
    kept_windows((int) tu_opt_long(argc, argv, "-k", 24), cache);
    int rc = tu_finish("win_reuse");
    MPI_Finalize();
    return rc;
}
