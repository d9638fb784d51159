/* node_seg: the first all-to-all epochs of fresh windows, every value
 * checked, on every flavor, with window sizes that differ between ranks.
 * osc/ucxx lays out an MPI_Win_allocate window of ranks all on one node in
 * one range of rank 0's shared memory (every rank's memory, state segment
 * and PSCW post slots: osc_ucxx_share.c), mapped whole by every rank at
 * creation; where a rank's memory is too large for it, every rank keeps its
 * own.  Each layout below is made, used and freed several times (rank 0
 * gives a range back only once no rank maps it, and takes it again for a
 * later window), and three windows of it are alive together:
 *   - "uniform": 8 bytes per rank in every rank's window;
 *   - "varied": rank r's window 8 bytes per rank plus r * 1000 + 8, so that
 *     neighbours' memory starts at odd places;
 *   - "one large": rank 1's window 300 KiB (too large for the node's
 *     segment: every rank keeps its own memory);
 *   - "descending": rank r's window 8 bytes per rank plus (P - r) * 1000
 *     + 8: rank 0's the largest (rank 0 takes its range before it knows
 *     the others' sizes, for all of them asking its own: here it holds
 *     them, laid out as they ask, where "varied" makes it take another);
 *   - "refused" (MPI_Win_allocate, every rank on one node): as "uniform",
 *     but the last rank cannot open any file while it creates the window
 *     (its descriptor limit lowered to what it has open), so it cannot map
 *     rank 0's range: every rank is to give the segment up and take its
 *     own memory (the creation's exchange says so), and the window works.
 * Per window: every rank fills its memory with a pattern by plain stores;
 * lock_all, a put of (me, layout, window, pass) into my slot at every rank,
 * unlock_all; post/start with every rank, a put of the value + 1,
 * complete/wait; fence, a get of my slot back from every rank, fence;
 * each step checked in every slot, and the rest of every window still
 * holds the pattern (a neighbour's memory or state next to it must not
 * reach into it).
 * First, with osc/ucxx on one node, what a lock_all epoch maps: an
 * allocate window of a page per rank, lock_all / a put to every rank /
 * unlock_all, then the pages of the node's segment resident in this
 * process (smaps' Rss of every mapping of the file that holds our window,
 * rank 0's, which maps all of its range).  They must be the ranks' window
 * pages, the page(s) of the lock words, and the few the process wrote at
 * creation (its state, its post slots, the count of the range's users):
 * not the other ranks' state segments, which the epoch needs none of. */
#include "testutil.h"
#include <stdint.h>
#include <sys/resource.h>

static int me, nprocs;
static MPI_Group world;

enum { UNIFORM, VARIED, ONE_LARGE, DESCENDING, REFUSED, NLAYOUTS };
static const char *layout_names[] = {"uniform", "varied", "one large", "descending", "refused"};
static int one_node;   /* every rank on this node */

static MPI_Aint window_size(int layout, int rank)
{
    MPI_Aint slots = (MPI_Aint) nprocs * 8;
    if (VARIED == layout) return slots + rank * 1000 + 8;
    if (DESCENDING == layout) return slots + (nprocs - rank) * 1000 + 8;
    if (ONE_LARGE == layout && 1 == rank) return 300 * 1024;
    return slots;
}

/* The window of `layout`; "refused": the last rank opens no file meanwhile. */
static void create(int flavor, int layout, tu_win_t *w)
{
    struct rlimit old, low;
    int refuse = REFUSED == layout && nprocs - 1 == me && nprocs > 1;

    if (refuse) {
        getrlimit(RLIMIT_NOFILE, &old);
        low = old;
        low.rlim_cur = (rlim_t) tu_open_fds();
        setrlimit(RLIMIT_NOFILE, &low);
    }
    tu_win_create(flavor, window_size(layout, me), 8, MPI_INFO_NULL, MPI_COMM_WORLD, w);
    if (refuse) setrlimit(RLIMIT_NOFILE, &old);
}

static int64_t value(int rank, int layout, int w, int pass)
{
    return (int64_t) 0x3c00000000000000LL + (int64_t) rank * 1000000LL + layout * 10000 +
           w * 100 + pass;
}

static unsigned char fill(MPI_Aint i)
{
    return (unsigned char) (0xa5 ^ (i * 7));
}

static void check(tu_win_t *w, int layout, int wi, int pass, int plus, const char *what)
{
    const unsigned char *bytes = w->base;
    const int64_t *slots = w->base;

    TU_MPI(MPI_Win_lock(MPI_LOCK_SHARED, me, 0, w->win));
    for (int o = 0; o < nprocs; ++o) {
        int64_t want = value(o, layout, wi, pass) + plus;
        TU_CHECK(slots[o] == want, "%s, %s window %d pass %d, %s: slot of rank %d is %#llx, "
                 "want %#llx", tu_flavor_names[w->flavor], layout_names[layout], wi, pass, what,
                 o, (unsigned long long) slots[o], (unsigned long long) want);
    }
    for (MPI_Aint i = (MPI_Aint) nprocs * 8; i < w->size; ++i) {
        TU_CHECK(bytes[i] == fill(i), "%s, %s window %d pass %d, %s: byte %ld of %ld is %#x, "
                 "want %#x", tu_flavor_names[w->flavor], layout_names[layout], wi, pass, what,
                 (long) i, (long) w->size, bytes[i], fill(i));
        if (bytes[i] != fill(i)) break;
    }
    TU_MPI(MPI_Win_unlock(me, w->win));
}

static void use(tu_win_t *w, int layout, int wi, int pass)
{
    int64_t mine = value(me, layout, wi, pass), plus = mine + 1;
    int64_t *back = malloc(nprocs * sizeof(int64_t));

    TU_MPI(MPI_Win_lock(MPI_LOCK_EXCLUSIVE, me, 0, w->win));
    for (MPI_Aint i = 0; i < w->size; ++i) ((unsigned char *) w->base)[i] = fill(i);
    TU_MPI(MPI_Win_unlock(me, w->win));
    MPI_Barrier(MPI_COMM_WORLD);

    TU_MPI(MPI_Win_lock_all(0, w->win));
    for (int k = 1; k <= nprocs; ++k) {
        int t = (me + k) % nprocs;
        TU_MPI(MPI_Put(&mine, 1, MPI_INT64_T, t, tu_disp(w, t, me), 1, MPI_INT64_T, w->win));
    }
    TU_MPI(MPI_Win_unlock_all(w->win));
    MPI_Barrier(MPI_COMM_WORLD);
    check(w, layout, wi, pass, 0, "lock_all put");
    MPI_Barrier(MPI_COMM_WORLD);

    tu_pscw_put_all(w, world, &plus, me);
    MPI_Barrier(MPI_COMM_WORLD);
    check(w, layout, wi, pass, 1, "PSCW put");
    MPI_Barrier(MPI_COMM_WORLD);

    TU_MPI(MPI_Win_fence(0, w->win));
    for (int t = 0; t < nprocs; ++t) {
        TU_MPI(MPI_Get(&back[t], 1, MPI_INT64_T, t, tu_disp(w, t, me), 1, MPI_INT64_T, w->win));
    }
    TU_MPI(MPI_Win_fence(0, w->win));
    for (int t = 0; t < nprocs; ++t) {
        TU_CHECK(back[t] == plus, "%s, %s window %d pass %d: fence get from rank %d gave %#llx, "
                 "want %#llx", tu_flavor_names[w->flavor], layout_names[layout], wi, pass, t,
                 (unsigned long long) back[t], (unsigned long long) plus);
    }
    free(back);
    MPI_Barrier(MPI_COMM_WORLD);
}

/* KiB resident here of every mapping of the file mapped at `addr` (smaps'
 * Rss), or -1 where no mapping holds it. */
static long file_rss_kib(const void *addr)
{
    FILE *f = fopen("/proc/self/smaps", "r");
    char line[512], dev[32] = "", cur_dev[32] = "";
    unsigned long ino = 0, cur_ino = 0, s, e, kib;
    long total = -1;
    int pass;

    for (pass = 0; f && pass < 2; ++pass) {   /* (find the file, then sum its mappings) */
        rewind(f);
        while (fgets(line, sizeof(line), f)) {
            char perms[8];
            unsigned long off;
            if (6 == sscanf(line, "%lx-%lx %7s %lx %31s %lu", &s, &e, perms, &off, cur_dev,
                            &cur_ino)) {
                if (0 == pass && (uintptr_t) addr >= s && (uintptr_t) addr < e) {
                    strcpy(dev, cur_dev);
                    ino = cur_ino;
                    total = 0;
                }
            } else if (1 == pass && 0 != ino && cur_ino == ino && 0 == strcmp(cur_dev, dev) &&
                       1 == sscanf(line, "Rss: %lu kB", &kib)) {
                total += (long) kib;
            }
        }
    }
    if (f) fclose(f);
    return total;
}

static void lock_all_maps(void)
{
    const char *osc = getenv("OMPI_MCA_osc");
    long page = sysconf(_SC_PAGESIZE), kib, most;
    int64_t mine = me;
    tu_win_t w;

    if (!one_node || nprocs < 16 || NULL == osc || 0 != strcmp(osc, "ucxx") ||
        !tu_flavor_or_all(TU_ALLOCATE)) {
        return;
    }
    tu_win_create(TU_ALLOCATE, page, 1, MPI_INFO_NULL, MPI_COMM_WORLD, &w);
    MPI_Barrier(MPI_COMM_WORLD);
    TU_MPI(MPI_Win_lock_all(0, w.win));
    for (int t = 0; t < nprocs; ++t) {
        TU_MPI(MPI_Put(&mine, 1, MPI_INT64_T, t, 0, 1, MPI_INT64_T, w.win));
    }
    TU_MPI(MPI_Win_unlock_all(w.win));
    kib = file_rss_kib(w.base);
    /* the window pages, the lock words' (a cache line each), 3 written at
     * creation (rank 0's mapping: all of the range) */
    most = (nprocs + (nprocs * 64 + page - 1) / page + 3) * (page / 1024);
    TU_CHECK(0 == me || kib <= most, "a lock_all epoch to every rank left %ld KiB of the node's segment "
             "mapped here, more than its %d window pages, lock words and 3 pages (%ld KiB)",
             kib, nprocs, most);
    MPI_Barrier(MPI_COMM_WORLD);
    tu_win_free(&w);
}

int main(int argc, char **argv)
{
    int passes = 3, rc;

    tu_parse_args(argc, argv);
    tu_init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &me);
    MPI_Comm_size(MPI_COMM_WORLD, &nprocs);
    MPI_Comm_group(MPI_COMM_WORLD, &world);
    {
        MPI_Comm node;
        int n;
        MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node);
        MPI_Comm_size(node, &n);
        one_node = n == nprocs;
        MPI_Comm_free(&node);
    }
    lock_all_maps();
    for (int flavor = 0; flavor < TU_NFLAVORS_ALL; ++flavor) {
        if (!tu_flavor_or_all(flavor)) continue;
        for (int layout = 0; layout < NLAYOUTS; ++layout) {
            tu_win_t w[3];
            if (REFUSED == layout && (TU_ALLOCATE != flavor || !one_node)) continue;
            /* made, used and freed: ranges given back and taken again */
            for (int pass = 0; pass < passes; ++pass) {
                create(flavor, layout, &w[0]);
                if (MPI_WIN_NULL == w[0].win) break;   /* (n/a: shared across hosts) */
                use(&w[0], layout, 0, pass);
                tu_win_free(&w[0]);
            }
            /* three alive together, each used */
            for (int i = 0; i < 3; ++i) {
                create(flavor, layout, &w[i]);
            }
            for (int i = 0; i < 3 && MPI_WIN_NULL != w[i].win; ++i) use(&w[i], layout, i, passes);
            for (int i = 0; i < 3; ++i) tu_win_free(&w[i]);
        }
    }
    MPI_Group_free(&world);
    rc = tu_finish("node_seg");
    MPI_Finalize();
    return rc;
}
