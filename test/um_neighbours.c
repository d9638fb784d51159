/* um_neighbours: user memory between two small heap objects that share its
 * first and last pages, as a window (MPI_Win_create) and attached to dynamic
 * windows: peers reach exactly its bytes, and it stays the target's own.
 *
 * Rank 0 is the target; every other rank is an origin.  The target's region
 * starts and ends inside a page.  Checks:
 *   1. attach keeps the region's contents and the neighbours' bytes;
 *   2. gets of the whole region, puts into each origin's own bytes at the
 *      head, in the middle and at the tail, and MPI_SUM accumulates on one
 *      counter in the middle and one at the head; the target sees every
 *      value, the neighbours are untouched;
 *   3. the target's local stores after attach are what origins read (one
 *      memory, not a copy);
 *   4. a second dynamic window attaching part of the same memory and the
 *      first window see the same bytes;
 *   5. detach, free, a new allocation, attach: origins read the new data;
 *   6. MPI_Win_create over an unaligned buffer: the same puts/gets/accumulates.
 */
#include "testutil.h"
#include <stdint.h>
#include <unistd.h>

#define ITERS 100

static int me, nprocs;
static long page;

static unsigned char pattern(size_t i, int gen) { return (unsigned char) (i * 7 + gen * 31 + 1); }

typedef struct {
    unsigned char *buf;   /* what the target allocated (neighbours around it) */
    unsigned char *reg;   /* the attached / window bytes */
    size_t len;
    char *left, *right;   /* small heap objects next to it */
} target_mem_t;

static void target_alloc(target_mem_t *t, int gen)
{
    t->left = malloc(40);
    t->len = 5 * page + 50;
    t->buf = malloc(t->len + 64);
    t->right = malloc(40);
    t->reg = t->buf + 13;
    memset(t->left, 'L', 40);
    memset(t->right, 'R', 40);
    for (size_t i = 0; i < t->len; ++i) t->reg[i] = pattern(i, gen);
}

static void target_free(target_mem_t *t)
{
    free(t->left);
    free(t->right);
    free(t->buf);
}

static void check_neighbours(const target_mem_t *t, const char *what)
{
    int bad = 0;
    for (int i = 0; i < 40; ++i) bad += (t->left[i] != 'L') + (t->right[i] != 'R');
    TU_CHECK(0 == bad, "%s: %d bytes of the neighbouring heap objects changed", what, bad);
}

/* Where each origin writes: 8 bytes at the head edge, in the pages, at the tail. */
static size_t slot_head(int o) { return 16 + 8 * o; }          /* below the first page */
static size_t slot_mid(uintptr_t reg, int o) { return (page - reg % page) + page + 8 * o; }
static size_t slot_tail(size_t len, int o) { return len - 8 - 8 * o; }

/* Offsets of the two int64 counters (head edge, pages). */
static size_t ctr_head(void) { return 8; }
static size_t ctr_mid(uintptr_t reg) { return (page - reg % page) + 2 * page; }

static void origin_reads(MPI_Win win, MPI_Aint disp0, uintptr_t reg, size_t len, int gen,
                         const char *what)
{
    unsigned char *all = malloc(len);
    int bad = 0;

    TU_MPI(MPI_Win_lock(MPI_LOCK_SHARED, 0, 0, win));
    TU_MPI(MPI_Get(all, (int) len, MPI_BYTE, 0, disp0, (int) len, MPI_BYTE, win));
    TU_MPI(MPI_Win_flush(0, win));
    for (size_t i = 0; i < len; ++i) {
        int counter = (i >= ctr_head() && i < ctr_head() + 8) ||
                      (i >= ctr_mid(reg) && i < ctr_mid(reg) + 8);
        bad += (all[i] != (counter ? 0 : pattern(i, gen)));
    }
    TU_CHECK(0 == bad, "%s: get of the whole region: %d bytes differ", what, bad);
    TU_MPI(MPI_Win_unlock(0, win));
    free(all);
}

/* Then (after every origin has read) each writes its own bytes and counts. */
static void origin_writes(MPI_Win win, MPI_Aint disp0, uintptr_t reg, size_t len, int gen)
{
    int64_t val[3], one = 1;

    TU_MPI(MPI_Win_lock(MPI_LOCK_SHARED, 0, 0, win));
    for (int k = 0; k < 3; ++k) val[k] = 1000 * gen + 100 * k + me;
    TU_MPI(MPI_Put(&val[0], 8, MPI_BYTE, 0, disp0 + slot_head(me), 8, MPI_BYTE, win));
    TU_MPI(MPI_Put(&val[1], 8, MPI_BYTE, 0, disp0 + slot_mid(reg, me), 8, MPI_BYTE, win));
    TU_MPI(MPI_Put(&val[2], 8, MPI_BYTE, 0, disp0 + slot_tail(len, me), 8, MPI_BYTE, win));
    for (int i = 0; i < ITERS; ++i) {
        TU_MPI(MPI_Accumulate(&one, 1, MPI_INT64_T, 0, disp0 + ctr_head(), 1, MPI_INT64_T,
                              MPI_SUM, win));
        TU_MPI(MPI_Accumulate(&one, 1, MPI_INT64_T, 0, disp0 + ctr_mid(reg), 1, MPI_INT64_T,
                              MPI_SUM, win));
    }
    TU_MPI(MPI_Win_unlock(0, win));
}

static void target_check(const target_mem_t *t, int gen, const char *what)
{
    uintptr_t reg = (uintptr_t) t->reg;
    int64_t h, m;
    for (int o = 1; o < nprocs; ++o) {
        int64_t v[3];
        memcpy(&v[0], t->reg + slot_head(o), 8);
        memcpy(&v[1], t->reg + slot_mid(reg, o), 8);
        memcpy(&v[2], t->reg + slot_tail(t->len, o), 8);
        for (int k = 0; k < 3; ++k) {
            TU_CHECK(v[k] == 1000 * gen + 100 * k + o, "%s: put %d of origin %d: %lld", what, k,
                     o, (long long) v[k]);
        }
    }
    memcpy(&h, t->reg + ctr_head(), 8);
    memcpy(&m, t->reg + ctr_mid(reg), 8);
    TU_CHECK(h == (int64_t) (nprocs - 1) * ITERS, "%s: head counter %lld", what, (long long) h);
    TU_CHECK(m == (int64_t) (nprocs - 1) * ITERS, "%s: page counter %lld", what, (long long) m);
    check_neighbours(t, what);
}

/* Before a round: the pattern (written locally; the counters then zeroed). */
static void target_reset(target_mem_t *t, int gen)
{
    for (size_t i = 0; i < t->len; ++i) t->reg[i] = pattern(i, gen);
}

/* One full round on `win`: origins work, target checks, then the target's
 * local stores must be what origins read. */
static void round_on(MPI_Win win, target_mem_t *t, MPI_Aint disp0, uintptr_t reg, size_t len,
                     int gen, const char *what)
{
    if (0 == me) {
        target_reset(t, gen);
        memset(t->reg + ctr_head(), 0, 8);
        memset(t->reg + ctr_mid(reg), 0, 8);
    }
    MPI_Barrier(MPI_COMM_WORLD);
    if (0 != me) origin_reads(win, disp0, reg, len, gen, what);
    MPI_Barrier(MPI_COMM_WORLD);
    if (0 != me) origin_writes(win, disp0, reg, len, gen);
    MPI_Barrier(MPI_COMM_WORLD);
    if (0 == me) target_check(t, gen, what);
    MPI_Barrier(MPI_COMM_WORLD);
}

int main(int argc, char **argv)
{
    target_mem_t t = { 0 };
    MPI_Win win, win2;
    MPI_Aint addr = 0;
    uintptr_t reg = 0;
    size_t len;

    tu_parse_args(argc, argv);
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &me);
    MPI_Comm_size(MPI_COMM_WORLD, &nprocs);
    page = sysconf(_SC_PAGESIZE);
    if (nprocs < 2 || nprocs > 8) {
        if (0 == me) printf("um_neighbours: needs 2..8 ranks\n");
        MPI_Finalize();
        return 0;
    }

    /* 1-3: a dynamic window */
    TU_MPI(MPI_Win_create_dynamic(MPI_INFO_NULL, MPI_COMM_WORLD, &win));
    MPI_Win_set_errhandler(win, MPI_ERRORS_RETURN);
    if (0 == me) {
        target_alloc(&t, 1);
        TU_MPI(MPI_Win_attach(win, t.reg, t.len));
        check_neighbours(&t, "after attach");
        for (size_t i = 0, bad = 0; i < t.len; ++i) {
            bad += (t.reg[i] != pattern(i, 1));
            if (i + 1 == t.len) TU_CHECK(0 == bad, "attach changed %zu bytes of the region", bad);
        }
        MPI_Get_address(t.reg, &addr);
        reg = (uintptr_t) t.reg;
    }
    MPI_Bcast(&addr, 1, MPI_AINT, 0, MPI_COMM_WORLD);
    MPI_Bcast(&reg, sizeof(reg), MPI_BYTE, 0, MPI_COMM_WORLD);
    len = 5 * page + 50;
    round_on(win, &t, addr, reg, len, 1, "dynamic");

    /* 3: local stores by the target are what origins read */
    if (0 == me) {
        for (size_t i = 0; i < len; ++i) t.reg[i] = pattern(i, 2);
    }
    MPI_Barrier(MPI_COMM_WORLD);
    if (0 != me) {
        unsigned char *all = malloc(len);
        int bad = 0;
        TU_MPI(MPI_Win_lock(MPI_LOCK_SHARED, 0, 0, win));
        TU_MPI(MPI_Get(all, (int) len, MPI_BYTE, 0, addr, (int) len, MPI_BYTE, win));
        TU_MPI(MPI_Win_unlock(0, win));
        for (size_t i = 0; i < len; ++i) bad += (all[i] != pattern(i, 2));
        TU_CHECK(0 == bad, "after local stores at the target: %d bytes differ", bad);
        free(all);
    }
    MPI_Barrier(MPI_COMM_WORLD);

    /* 4: a second window on part of the same pages */
    TU_MPI(MPI_Win_create_dynamic(MPI_INFO_NULL, MPI_COMM_WORLD, &win2));
    MPI_Win_set_errhandler(win2, MPI_ERRORS_RETURN);
    if (0 == me) TU_MPI(MPI_Win_attach(win2, t.reg + page, 2 * page));
    MPI_Barrier(MPI_COMM_WORLD);
    if (1 == me) {
        int64_t v = 4242, back = 0;
        TU_MPI(MPI_Win_lock(MPI_LOCK_EXCLUSIVE, 0, 0, win2));
        TU_MPI(MPI_Put(&v, 1, MPI_INT64_T, 0, addr + page + 64, 1, MPI_INT64_T, win2));
        TU_MPI(MPI_Win_unlock(0, win2));
        TU_MPI(MPI_Win_lock(MPI_LOCK_SHARED, 0, 0, win));
        TU_MPI(MPI_Get(&back, 1, MPI_INT64_T, 0, addr + page + 64, 1, MPI_INT64_T, win));
        TU_MPI(MPI_Win_unlock(0, win));
        TU_CHECK(back == 4242, "second window's put read back through the first: %lld",
                 (long long) back);
    }
    MPI_Barrier(MPI_COMM_WORLD);
    if (0 == me) TU_MPI(MPI_Win_detach(win2, t.reg + page));
    TU_MPI(MPI_Win_free(&win2));

    /* 5: detach, free, allocate again, attach */
    if (0 == me) {
        TU_MPI(MPI_Win_detach(win, t.reg));
        target_free(&t);
        target_alloc(&t, 3);
        TU_MPI(MPI_Win_attach(win, t.reg, t.len));
        MPI_Get_address(t.reg, &addr);
        reg = (uintptr_t) t.reg;
    }
    MPI_Bcast(&addr, 1, MPI_AINT, 0, MPI_COMM_WORLD);
    MPI_Bcast(&reg, sizeof(reg), MPI_BYTE, 0, MPI_COMM_WORLD);
    round_on(win, &t, addr, reg, len, 3, "dynamic, re-attached");
    if (0 == me) {
        TU_MPI(MPI_Win_detach(win, t.reg));
        target_free(&t);
    }
    TU_MPI(MPI_Win_free(&win));

    /* 6: MPI_Win_create over an unaligned buffer */
    if (0 == me) target_alloc(&t, 4);
    TU_MPI(MPI_Win_create(0 == me ? t.reg : NULL, 0 == me ? (MPI_Aint) t.len : 0, 1,
                          MPI_INFO_NULL, MPI_COMM_WORLD, &win));
    MPI_Win_set_errhandler(win, MPI_ERRORS_RETURN);
    if (0 == me) {
        check_neighbours(&t, "after MPI_Win_create");
        reg = (uintptr_t) t.reg;
    }
    MPI_Bcast(&reg, sizeof(reg), MPI_BYTE, 0, MPI_COMM_WORLD);
    round_on(win, &t, 0, reg, len, 4, "MPI_Win_create");
    TU_MPI(MPI_Win_free(&win));
    if (0 == me) target_free(&t);

    {
        int rc = tu_finish("um_neighbours");
        MPI_Finalize();
        return rc;
    }
}
