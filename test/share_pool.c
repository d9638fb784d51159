/* share_pool: user memory moved onto shared memory comes from one pool file
 * per process (osc_ucxx_share.c): every move takes pool offsets never used
 * before, pages moved again are punched out of the pool, and peers map the
 * pool a chunk at a time (osc_ucxx_share_pool_chunk).
 *
 * Every rank, symmetrically (a ring):
 *   - LIVE windows over malloc'ed buffers stay alive throughout, filled with
 *     a pattern;
 *   - ITERS ("-i N", default 300) windows, one at a time, over a buffer
 *     malloc'ed for it (1-28 pages and a bit, growing, different on every
 *     rank: malloc hands the freed heap out again, so later windows cover
 *     pages earlier ones moved, the OSU pattern), every other one instead
 *     over the head of an mmap'ed region whose pages past the 8th are
 *     replaced by fresh ones after each such window (memory given back to
 *     the system and taken again: each window there covers moved pages and
 *     private ones, so it moves them all again): fence, a get of all of the next
 *     rank's window (checked), a put of a tag into the middle of it, fence,
 *     the tag the previous rank put checked, free;
 *   - every 50 windows, and at the end, each live window is checked locally
 *     and through a get of the next rank's (a punch of the wrong pool pages
 *     zeroes one);
 *   - with osc/ucxx sharing user memory over a shared-memory transport: some
 *     windows' pages really were on the pool (the feature is on), and after
 *     the churn the pool holds at most 4 MiB that is mapped nowhere here
 *     (the pages moved again were given back: without that ~15 MiB).
 * Run with a 64 KiB chunk too: windows then straddle chunks, and peers map
 * spans of several. */
#include "testutil.h"
#include <stdint.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#define LIVE 3

static int me, nprocs, next, prev;
static long page;

/* Growing page by page, 1 to 28 pages and again (under malloc's mmap
 * threshold): malloc hands the same heap out again, and each larger window
 * covers the pages the one before moved plus private ones, so they move
 * again, the old pool pages going back. */
static size_t churn_size(int i, int rank)
{
    return (size_t) page * (1 + (i + rank) % 28) + 1000 + 300 * rank;
}

static unsigned char pat(int rank, int i, size_t k)
{
    return (unsigned char) (rank * 37 + i * 11 + k * 7 + 3);
}

/* Does osc/ucxx move user memory onto its pool in this run? */
static int pool_expected(void)
{
    const char *osc = getenv("OMPI_MCA_osc"), *share = getenv("OMPI_MCA_osc_ucxx_share_user_memory");
    return NULL != osc && 0 == strcmp(osc, "ucxx") && !tu_slow_transport() &&
           (NULL == share || 0 != strcmp(share, "0"));
}

/* Is the page at `addr` mapped from one of this process's pool files?  Its
 * directory is /dev/shm/osc_ucxx.<jobid>.<vpid>, and the vpid is our rank. */
static int own_pool_path(const char *line)
{
    char tail[32];
    const char *p = strstr(line, "/dev/shm/osc_ucxx.");
    const char *slash = p ? strstr(p + 18, "/p") : NULL;
    if (NULL == slash) return 0;
    snprintf(tail, sizeof(tail), ".%d/p", me);
    return (size_t) (slash - p) >= strlen(tail) - 2 &&
           0 == strncmp(slash - (strlen(tail) - 2), tail, strlen(tail));
}

static int on_pool(uintptr_t addr)
{
    char line[512];
    return tu_mapping_line(addr, addr + 1, line, sizeof(line)) && own_pool_path(line);
}

/* Bytes this process's pool files hold (their allocated blocks) that are
 * mapped nowhere here: pages moved and then given up (replaced, unmapped),
 * which the pool should have let go.  (Pages still mapped are memory the
 * application still has: malloc keeps freed heap, AddressSanitizer's
 * allocator keeps it in quarantine.) */
static long long pool_unmapped_bytes(void)
{
    FILE *f = fopen("/proc/self/maps", "r");
    char line[512], seen[8][256];
    int nseen = 0;
    long long total = 0;
    while (f && fgets(line, sizeof(line), f)) {
        char *path = strstr(line, "/dev/shm/");
        struct stat st;
        unsigned long s, e;
        int dup = 0;
        if (NULL == path || !own_pool_path(line)) continue;
        if (2 == sscanf(line, "%lx-%lx", &s, &e)) total -= (long long) (e - s);
        path[strcspn(path, "\n")] = '\0';
        for (int i = 0; i < nseen; i++) dup |= 0 == strcmp(seen[i], path);
        if (dup || nseen == 8) continue;
        snprintf(seen[nseen++], sizeof(seen[0]), "%s", path);
        if (0 == stat(path, &st)) total += (long long) st.st_blocks * 512;
    }
    if (f) fclose(f);
    return total;
}

typedef struct {
    MPI_Win win;
    unsigned char *buf;
    size_t len;
} win_t;

#define REGION_PAGES 48
static unsigned char *region;

/* Window i's memory: malloc'ed, or (odd i) the head of `region`. */
static size_t churn_len(int i, int rank)
{
    return (i % 2) ? (size_t) page * (16 + i % 17) - 100 * (rank + 1) : churn_size(i, rank);
}

static void make_win(win_t *w, size_t len, int tag, unsigned char *at)
{
    w->len = len;
    w->buf = at ? at : malloc(len);
    for (size_t k = 0; k < len; k++) w->buf[k] = pat(me, tag, k);
    TU_MPI(MPI_Win_create(w->buf, (MPI_Aint) len, 1, MPI_INFO_NULL, MPI_COMM_WORLD, &w->win));
    MPI_Win_set_errhandler(w->win, MPI_ERRORS_RETURN);
}

static void free_win(win_t *w)
{
    TU_MPI(MPI_Win_free(&w->win));
    if (w->buf == region) {
        void *fresh = mmap(region + 8 * page, (REGION_PAGES - 8) * page, PROT_READ | PROT_WRITE,
                           MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0);
        TU_CHECK(MAP_FAILED != fresh, "mmap over the region's tail failed");
    } else {
        free(w->buf);
    }
}

/* All of the next rank's window `w` (`len` bytes, made with `tag`) through
 * a get, inside a fence epoch. */
static void check_next(win_t *w, size_t len, int tag, const char *what)
{
    unsigned char *got = malloc(len);
    TU_MPI(MPI_Get(got, (int) len, MPI_BYTE, next, 0, (int) len, MPI_BYTE, w->win));
    TU_MPI(MPI_Win_fence(0, w->win));
    for (size_t k = 0; k < len; k++) {
        if (got[k] != pat(next, tag, k)) {
            TU_CHECK(0, "%s: byte %zu of rank %d's window is %d, expected %d", what, k, next,
                     got[k], pat(next, tag, k));
            break;
        }
    }
    free(got);
}

static void check_live(win_t *live, const size_t *live_len, const char *when)
{
    char what[64];
    for (int j = 0; j < LIVE; j++) {
        int bad = 0;
        for (size_t k = 0; k < live[j].len; k++) bad += live[j].buf[k] != pat(me, 1000 + j, k);
        TU_CHECK(0 == bad, "%s: %d bytes of live window %d changed here", when, bad, j);
        snprintf(what, sizeof(what), "%s, live window %d", when, j);
        TU_MPI(MPI_Win_fence(0, live[j].win));
        check_next(&live[j], live_len[j], 1000 + j, what);
    }
}

int main(int argc, char **argv)
{
    static const size_t live_sizes[LIVE] = {20000, 50000, 9000};
    win_t live[LIVE], w;
    size_t live_len[LIVE];
    int iters, moved = 0, expect;
    char what[64];

    tu_init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &me);
    MPI_Comm_size(MPI_COMM_WORLD, &nprocs);
    next = (me + 1) % nprocs;
    prev = (me + nprocs - 1) % nprocs;
    page = sysconf(_SC_PAGESIZE);
    tu_watchdog("share_pool", 120);
    iters = (int) tu_opt_long(argc, argv, "-i", 300);
    expect = pool_expected();

    for (int j = 0; j < LIVE; j++) {
        make_win(&live[j], live_sizes[j] + 100 * me, 1000 + j, NULL);
        live_len[j] = live_sizes[j] + 100 * next;
    }
    region = mmap(NULL, REGION_PAGES * page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS,
                  -1, 0);
    TU_CHECK(MAP_FAILED != region, "mmap failed");
    for (int i = 0; i < iters; i++) {
        size_t len = churn_len(i, me), nlen = churn_len(i, next), plen = churn_len(i, prev);
        uint64_t tag = 0x7000000000000000ULL + (uint64_t) i * 1000 + me, got;
        make_win(&w, len, i, (i % 2) ? region : NULL);
        if (expect) {
            uintptr_t inside = ((uintptr_t) w.buf + page - 1) & ~(uintptr_t) (page - 1);
            if (inside + page <= (uintptr_t) w.buf + len) moved += on_pool(inside);
        }
        TU_MPI(MPI_Win_fence(0, w.win));
        snprintf(what, sizeof(what), "window %d", i);
        check_next(&w, nlen, i, what);  /* (its fence ends the epoch) */
        TU_MPI(MPI_Put(&tag, 8, MPI_BYTE, next, (MPI_Aint) (nlen / 2), 8, MPI_BYTE, w.win));
        TU_MPI(MPI_Win_fence(0, w.win));
        memcpy(&got, w.buf + len / 2, 8);
        TU_CHECK(got == 0x7000000000000000ULL + (uint64_t) i * 1000 + prev,
                 "window %d: %llx where rank %d put its tag (%zu bytes from %d)", i,
                 (unsigned long long) got, prev, plen, prev);
        free_win(&w);
        if (i % 50 == 49) {
            snprintf(what, sizeof(what), "after window %d", i);
            check_live(live, live_len, what);
        }
    }
    check_live(live, live_len, "at the end");
    if (expect) {
        long long held = pool_unmapped_bytes();
        TU_CHECK(moved > iters / 4, "only %d of %d windows had their pages on this process's "
                 "pool", moved, iters);
        TU_CHECK(held <= 4LL << 20, "after %d windows over reused memory the pool holds "
                 "%lld KiB mapped nowhere", iters, held >> 10);
        if (0 == me) printf("share_pool: %d windows moved, pool holds %lld KiB mapped nowhere\n",
                            moved, held >> 10);
    }
    for (int j = 0; j < LIVE; j++) free_win(&live[j]);
    munmap(region, REGION_PAGES * page);
    int rc = tu_finish("share_pool");
    MPI_Finalize();
    return rc;
}
