/* Contiguous MPI_Put / MPI_Get, verified byte for byte.
 *
 * For every window flavor, synchronisation mode (lock exclusive, lock shared,
 * lock_all, fence) and direction (next rank, previous rank, self), each rank
 * puts a set of regions of several sizes and datatypes (count 0 included,
 * odd byte offsets and lengths) into its target, and the target checks its
 * whole window: every region holds the origin's pattern and every gap
 * between regions (and the count-0 regions) still holds the sentinel.  Then
 * the reverse: the target fills its window with its own pattern and the
 * origin gets every region into a sentinel-filled buffer and checks it.
 * Every local access to window memory is done inside an exclusive lock on
 * self, separated from remote access by MPI_Barrier. */
#include "testutil.h"
#include <stdint.h>

#define SENTINEL 0xA5
#define GAP 5

typedef struct {
    MPI_Datatype type;
    int count;
    int align;           /* region offset alignment in bytes */
} region_t;

static region_t regions[] = {
    { MPI_BYTE, 0, 1 },   { MPI_BYTE, 1, 1 },      { MPI_BYTE, 7, 1 },
    { MPI_INT, 0, 8 },    { MPI_INT, 1, 8 },       { MPI_BYTE, 13, 1 },
    { MPI_INT, 33, 8 },   { MPI_DOUBLE, 1000, 8 }, { MPI_BYTE, 65539, 1 },
    { MPI_INT, 50000, 8 }, { MPI_CHAR, 3, 1 },
};
#define NREG ((int) (sizeof(regions) / sizeof(regions[0])))

static MPI_Aint reg_off[NREG], reg_len[NREG], win_bytes;

enum { M_LOCK_EXCL, M_LOCK_SHARED, M_LOCK_ALL, M_FENCE, M_N };
static const char *mode_names[] = { "lock-exclusive", "lock-shared", "lock_all", "fence" };

static inline uint8_t pat(uint32_t seed, MPI_Aint i)
{
    uint32_t x = seed * 2654435761u ^ ((uint32_t) i * 40503u + 0x9e3779b9u);
    x ^= x >> 15; x *= 0x2c1b3c6du; x ^= x >> 12;
    return (uint8_t) x;
}

static void layout(void)
{
    MPI_Aint off = 3;
    for (int r = 0; r < NREG; r++) {
        int sz;
        MPI_Type_size(regions[r].type, &sz);
        off = (off + regions[r].align - 1) / regions[r].align * regions[r].align;
        if (1 == regions[r].align && 0 == off % 2) off++;   /* odd offsets for bytes */
        reg_off[r] = off;
        reg_len[r] = (MPI_Aint) sz * regions[r].count;
        off += reg_len[r] + GAP;
    }
    win_bytes = off + GAP;
}

/* Fill buf as a window image: pattern `seed` in every region, sentinel elsewhere. */
static void fill_image(uint8_t *buf, uint32_t seed)
{
    memset(buf, SENTINEL, win_bytes);
    for (int r = 0; r < NREG; r++)
        for (MPI_Aint i = 0; i < reg_len[r]; i++)
            buf[reg_off[r] + i] = pat(seed + r * 131, i);
}

/* Compare buf with the image for `seed`; returns the number of bad bytes. */
static int check_image(const uint8_t *buf, uint32_t seed, const char *what)
{
    uint8_t *exp = malloc(win_bytes);
    int bad = 0;
    fill_image(exp, seed);
    for (MPI_Aint i = 0; i < win_bytes; i++) {
        if (buf[i] != exp[i]) {
            if (bad < 3) {
                int region = -1;
                for (int r = 0; r < NREG; r++)
                    if (i >= reg_off[r] && i < reg_off[r] + reg_len[r]) region = r;
                TU_CHECK(buf[i] == exp[i], "%s: byte %ld (region %d) is 0x%02x, expected 0x%02x",
                         what, (long) i, region, buf[i], exp[i]);
            }
            bad++;
        }
    }
    if (bad > 3) TU_CHECK(0 == bad, "%s: %d bad bytes in all", what, bad);
    free(exp);
    return bad;
}

static void epoch_open(int mode, MPI_Win win, int target)
{
    switch (mode) {
    case M_LOCK_EXCL: TU_MPI(MPI_Win_lock(MPI_LOCK_EXCLUSIVE, target, 0, win)); break;
    case M_LOCK_SHARED: TU_MPI(MPI_Win_lock(MPI_LOCK_SHARED, target, 0, win)); break;
    case M_LOCK_ALL: TU_MPI(MPI_Win_lock_all(0, win)); break;
    case M_FENCE: TU_MPI(MPI_Win_fence(MPI_MODE_NOPRECEDE, win)); break;
    }
}

static void epoch_close(int mode, MPI_Win win, int target)
{
    switch (mode) {
    case M_LOCK_EXCL:
    case M_LOCK_SHARED: TU_MPI(MPI_Win_unlock(target, win)); break;
    case M_LOCK_ALL: TU_MPI(MPI_Win_unlock_all(win)); break;
    case M_FENCE: TU_MPI(MPI_Win_fence(MPI_MODE_NOSUCCEED, win)); break;
    }
}

int main(int argc, char **argv)
{
    int rank, nprocs, step = 0;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &nprocs);
    layout();

    uint8_t *origin = malloc(win_bytes), *result = malloc(win_bytes);
    const int dirs[3] = { 1, nprocs - 1, 0 };

    for (int flavor = 0; flavor < TU_NFLAVORS; flavor++) {
        if (!tu_flavor_enabled(flavor)) continue;
        tu_win_t w;
        tu_win_create(flavor, win_bytes, 1, MPI_INFO_NULL, MPI_COMM_WORLD, &w);
        uint8_t *base = w.base;

        for (int mode = 0; mode < M_N; mode++) {
            for (int d = 0; d < 3; d++, step++) {
                int target = (rank + dirs[d]) % nprocs;
                int source = (rank - dirs[d] + nprocs) % nprocs;   /* who targets me */
                char what[128];

                /* ---- put: origin -> target ---- */
                TU_MPI(MPI_Win_lock(MPI_LOCK_EXCLUSIVE, rank, 0, w.win));
                memset(base, SENTINEL, win_bytes);
                TU_MPI(MPI_Win_unlock(rank, w.win));
                fill_image(origin, 1000003u * step + 7919u * rank + 17u * target);
                MPI_Barrier(MPI_COMM_WORLD);

                epoch_open(mode, w.win, target);
                for (int r = 0; r < NREG; r++)
                    TU_MPI(MPI_Put(origin + reg_off[r], regions[r].count, regions[r].type, target,
                                   tu_disp(&w, target, reg_off[r]), regions[r].count,
                                   regions[r].type, w.win));
                epoch_close(mode, w.win, target);
                MPI_Barrier(MPI_COMM_WORLD);

                snprintf(what, sizeof(what), "%s %s put from rank %d (dir +%d)",
                         tu_flavor_names[flavor], mode_names[mode], source, dirs[d]);
                TU_MPI(MPI_Win_lock(MPI_LOCK_EXCLUSIVE, rank, 0, w.win));
                check_image(base, 1000003u * step + 7919u * source + 17u * rank, what);
                /* ---- get: origin <- target; refill my window with my own pattern ---- */
                fill_image(base, 1000003u * step + 31u * rank + 5u);
                TU_MPI(MPI_Win_unlock(rank, w.win));
                memset(result, SENTINEL, win_bytes);
                MPI_Barrier(MPI_COMM_WORLD);

                epoch_open(mode, w.win, target);
                for (int r = 0; r < NREG; r++)
                    TU_MPI(MPI_Get(result + reg_off[r], regions[r].count, regions[r].type, target,
                                   tu_disp(&w, target, reg_off[r]), regions[r].count,
                                   regions[r].type, w.win));
                epoch_close(mode, w.win, target);

                snprintf(what, sizeof(what), "%s %s get from rank %d (dir +%d)",
                         tu_flavor_names[flavor], mode_names[mode], target, dirs[d]);
                check_image(result, 1000003u * step + 31u * target + 5u, what);
                MPI_Barrier(MPI_COMM_WORLD);
            }
        }
        tu_win_free(&w);
    }

    free(origin);
    free(result);
    int rc = tu_finish("putget");
    MPI_Finalize();
    return rc;
}
