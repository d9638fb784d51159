/* um_replaced: memory that was window memory, given up, replaced (munmap
 * and mmap at the same addresses, as free and malloc may) and exposed again
 * in pieces must be reached where its pages are now: peers read the new
 * contents and their puts land in the new pages, never in the old ones.
 *
 * Every rank, on pages of an anonymous mmap (page numbers below), in one of
 * two ways ("create": MPI_Win_create windows; "dynamic": a dynamic window
 * per step, the memory attached):
 *   1. pages 2-5 with pattern 1 exposed; then the window goes, and the pages
 *      are replaced by fresh private ones, pattern 2;
 *   2. pages 2-3, then pages 4-5, each its own window (kept); odd rounds
 *      instead pages 3-4 first, then 2 and 5;
 *   3. pages 2-5 again, a third window: its peers must read pattern 2 (a get
 *      of all of the previous rank's, checked), and a put from the next rank
 *      must reach the pages where we read them.
 * Steps 1-3 run ROUNDS ("-r N", default 8) times, on new pages each time.
 */
#include "testutil.h"
#include <sys/mman.h>
#include <unistd.h>

static int me, nprocs, next, prev, dynamic;
static size_t page;

typedef struct {
    MPI_Win win;
    unsigned char *at;
    size_t len;
    MPI_Aint base[2]; /* [0] the next rank's displacement origin, [1] the previous rank's */
} win_t;

static unsigned char pat(int rank, int which, size_t k)
{
    return (unsigned char) (rank * 31 + which * 101 + k * 7 + 1);
}

static void open_win(win_t *w, unsigned char *at, size_t len)
{
    MPI_Aint mine = 0;

    w->at = at;
    w->len = len;
    if (dynamic) {
        TU_MPI(MPI_Win_create_dynamic(MPI_INFO_NULL, MPI_COMM_WORLD, &w->win));
        TU_MPI(MPI_Win_attach(w->win, at, (MPI_Aint) len));
        MPI_Get_address(at, &mine);
    } else {
        TU_MPI(MPI_Win_create(at, (MPI_Aint) len, 1, MPI_INFO_NULL, MPI_COMM_WORLD, &w->win));
    }
    TU_MPI(MPI_Sendrecv(&mine, 1, MPI_AINT, prev, 0, &w->base[0], 1, MPI_AINT, next, 0,
                        MPI_COMM_WORLD, MPI_STATUS_IGNORE));
    TU_MPI(MPI_Sendrecv(&mine, 1, MPI_AINT, next, 1, &w->base[1], 1, MPI_AINT, prev, 1,
                        MPI_COMM_WORLD, MPI_STATUS_IGNORE));
}

static void close_win(win_t *w)
{
    if (dynamic) TU_MPI(MPI_Win_detach(w->win, w->at));
    TU_MPI(MPI_Win_free(&w->win));
}

/* A get of all of the previous rank's window (pattern `which` expected),
 * then a put of a tag into the middle of the next rank's, checked by its
 * owner. */
static void check_win(win_t *w, int which, const char *what)
{
    unsigned char *got = malloc(w->len), tag = (unsigned char) (0xa0 + me);
    size_t mid = w->len / 2;
    int bad = -1;

    TU_MPI(MPI_Win_fence(0, w->win));
    TU_MPI(MPI_Get(got, (int) w->len, MPI_BYTE, prev, w->base[1], (int) w->len, MPI_BYTE,
                   w->win));
    TU_MPI(MPI_Win_fence(0, w->win));
    TU_MPI(MPI_Put(&tag, 1, MPI_BYTE, next, w->base[0] + (MPI_Aint) mid, 1, MPI_BYTE, w->win));
    TU_MPI(MPI_Win_fence(0, w->win));
    for (size_t k = 0; k < w->len && bad < 0; k++) {
        if (got[k] != pat(prev, which, k)) bad = (int) k;
    }
    TU_CHECK(bad < 0, "%s: byte %d of rank %d's window is %d, expected %d (pattern %d)", what,
             bad, prev, bad < 0 ? 0 : got[bad], bad < 0 ? 0 : pat(prev, which, (size_t) bad),
             which);
    TU_CHECK(w->at[mid] == (unsigned char) (0xa0 + prev),
             "%s: rank %d's put reached byte %zu as %d, expected %d", what, prev, mid,
             w->at[mid], 0xa0 + prev);
    w->at[mid] = pat(me, which, mid);  /* (the pattern again, for later steps) */
    TU_MPI(MPI_Win_fence(0, w->win));
}

static void fill(unsigned char *at, size_t len, int which)
{
    for (size_t k = 0; k < len; k++) at[k] = pat(me, which, k);
}

static void one_round(int round)
{
    unsigned char *r = mmap(NULL, 8 * page, PROT_READ | PROT_WRITE,
                            MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    unsigned char *p2;
    win_t w1, piece[3], all;
    int pieces = round % 2 ? 3 : 2;
    /* [first page, pages) of each piece, counted from page 2 */
    static const int two[2][2] = {{0, 2}, {2, 2}}, three[3][2] = {{1, 2}, {0, 1}, {3, 1}};
    char what[96];

    TU_CHECK(MAP_FAILED != r, "mmap failed");
    if (MAP_FAILED == r) return;
    p2 = r + 2 * page;
    memset(r, 0x55, 8 * page);

    /* 1. exposed, given up, replaced */
    fill(p2, 4 * page, 1);
    open_win(&w1, p2, 4 * page);
    snprintf(what, sizeof(what), "round %d, first window", round);
    check_win(&w1, 1, what);
    close_win(&w1);
    TU_CHECK(MAP_FAILED != mmap(p2, 4 * page, PROT_READ | PROT_WRITE,
                                MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0),
             "mmap over the first window's pages failed");
    /* pattern 2, counted from page 2 as the last window will read it */
    for (size_t k = 0; k < 4 * page; k++) p2[k] = pat(me, 2, k);

    /* 2. exposed again in pieces (windows kept) */
    for (int i = 0; i < pieces; i++) {
        const int *at = 2 == pieces ? two[i] : three[i];
        open_win(&piece[i], p2 + at[0] * page, at[1] * page);
    }

    /* 3. all of it again */
    open_win(&all, p2, 4 * page);
    snprintf(what, sizeof(what), "round %d, window over both pieces", round);
    check_win(&all, 2, what);
    close_win(&all);
    for (int i = pieces - 1; i >= 0; i--) close_win(&piece[i]);
    munmap(r, 8 * page);
}

int main(int argc, char **argv)
{
    int rounds = (int) tu_opt_long(argc, argv, "-r", 8);

    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &me);
    MPI_Comm_size(MPI_COMM_WORLD, &nprocs);
    next = (me + 1) % nprocs;
    prev = (me + nprocs - 1) % nprocs;
    page = (size_t) sysconf(_SC_PAGESIZE);
    for (dynamic = 0; dynamic < 2; dynamic++) {
        for (int round = 0; round < rounds; round++) one_round(round);
        if (0 == me) printf("um_replaced: %s windows done\n", dynamic ? "dynamic" : "create");
    }
    return tu_finish("um_replaced") | MPI_Finalize();
}
