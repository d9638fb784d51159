/* Large transfers (>= 4 MiB) with MPI_Put / MPI_Get, verified byte for byte
 * against a pattern that depends on the origin rank, the case and the index.
 * Cases (each on every flavor; the window is 12 MiB + 64 B on every rank):
 *   4 MiB put (MPI_BYTE) under an exclusive lock,
 *   6 MiB + 13 B put at an odd displacement under fence,
 *   two 4 MiB puts in one lock_all epoch, to the next and the previous rank,
 *   4 MiB get (MPI_INT) under a shared lock,
 *   6 MiB + 13 B get at an odd displacement with lock_all + flush,
 *   4 MiB of data spread over 8 MiB (vector of 2 KiB blocks) put and get;
 * then through a memory handle on each rank's 12 MiB + 64 B of malloc()ed
 * memory (MPIX_Win_from_memhandle: dynamic memory, prefaulted as a peer's
 * pool mapping), 6 MiB + 13 B put at displacement 3 and got back into an
 * odd address, in lock_all epochs of the parent window.
 * After a put the target checks its whole window (untouched bytes keep the
 * sentinel); after a get the origin checks its whole buffer. */
#include "testutil.h"
#include "mpix_ucxx.h"
#include <stdint.h>

#define MiB (1024 * 1024)
#define WIN_BYTES (12 * MiB + 64)
#define SENT 0x5A

static inline uint8_t pat(uint32_t seed, size_t i)
{
    uint32_t x = (uint32_t) (i >> 2) * 2654435761u + seed * 0x9E3779B1u;
    x ^= x >> 16;
    return (uint8_t) (x >> (8 * (i & 3)));
}

static int rank, nprocs;

typedef struct { size_t off, len; uint32_t seed; } span_t;

/* Check buf[0..total): bytes in spans carry pat(seed, i - off + poff), the rest SENT. */
static void check(const uint8_t *buf, size_t total, const span_t *sp, int nsp, const char *what)
{
    size_t bad = 0, first = (size_t) -1;
    for (size_t i = 0; i < total; i++) {
        uint8_t exp = SENT;
        for (int s = 0; s < nsp; s++)
            if (i >= sp[s].off && i < sp[s].off + sp[s].len) exp = pat(sp[s].seed, i - sp[s].off);
        if (buf[i] != exp) { if (!bad) first = i; bad++; }
    }
    TU_CHECK(0 == bad, "%s: %zu bad bytes, first at %zu (0x%02x)", what, bad, first,
             bad ? buf[first] : 0);
}

static void fill(uint8_t *buf, size_t len, uint32_t seed)
{
    for (size_t i = 0; i < len; i++) buf[i] = pat(seed, i);
}

static void local_reset(tu_win_t *w)
{
    TU_MPI(MPI_Win_lock(MPI_LOCK_EXCLUSIVE, rank, 0, w->win));
    memset(w->base, SENT, WIN_BYTES);
    TU_MPI(MPI_Win_unlock(rank, w->win));
}

static void local_fill(tu_win_t *w, uint32_t seed)
{
    TU_MPI(MPI_Win_lock(MPI_LOCK_EXCLUSIVE, rank, 0, w->win));
    fill(w->base, WIN_BYTES, seed);
    TU_MPI(MPI_Win_unlock(rank, w->win));
}

static void local_check(tu_win_t *w, const span_t *sp, int nsp, const char *what)
{
    char msg[160];
    snprintf(msg, sizeof(msg), "%s (%s) at rank %d", what, tu_flavor_names[w->flavor], rank);
    TU_MPI(MPI_Win_lock(MPI_LOCK_EXCLUSIVE, rank, 0, w->win));
    check(w->base, WIN_BYTES, sp, nsp, msg);
    TU_MPI(MPI_Win_unlock(rank, w->win));
}

/* 6 MiB + 13 B put into the next rank's memory handle, and got back. */
static void memhandle_case(uint8_t *obuf, size_t odd, uint32_t s)
{
    int next = (rank + 1) % nprocs, prev = (rank + nprocs - 1) % nprocs, hsize = 0;
    uint8_t *mem = malloc(WIN_BYTES);
    char *handles = calloc((size_t) nprocs, MPIX_MAX_MEMHANDLE_SIZE);
    char mine[MPIX_MAX_MEMHANDLE_SIZE] = {0};
    MPI_Win parent, w = MPI_WIN_NULL;

    memset(mem, SENT, WIN_BYTES);
    TU_MPI(MPI_Win_create_dynamic(MPI_INFO_NULL, MPI_COMM_WORLD, &parent));
    TU_MPI(MPIX_Memhandle_create(mem, WIN_BYTES, MPI_INFO_NULL, parent, mine, &hsize));
    MPI_Allgather(mine, MPIX_MAX_MEMHANDLE_SIZE, MPI_BYTE, handles, MPIX_MAX_MEMHANDLE_SIZE,
                  MPI_BYTE, MPI_COMM_WORLD);
    TU_MPI(MPIX_Win_from_memhandle(handles + (size_t) next * MPIX_MAX_MEMHANDLE_SIZE, WIN_BYTES, 1,
                                   MPI_INFO_NULL, next, parent, &w));
    fill(obuf, odd, s + rank);
    TU_MPI(MPI_Win_lock_all(0, parent));
    TU_MPI(MPI_Put(obuf, odd, MPI_BYTE, next, 3, odd, MPI_BYTE, w));
    TU_MPI(MPI_Win_flush(next, w));
    TU_MPI(MPI_Win_unlock_all(parent));
    MPI_Barrier(MPI_COMM_WORLD);
    { span_t sp = { 3, odd, s + prev }; check(mem, WIN_BYTES, &sp, 1, "6 MiB+13 put (memory handle)"); }

    memset(obuf, SENT, WIN_BYTES);
    TU_MPI(MPI_Win_lock_all(0, parent));
    TU_MPI(MPI_Get(obuf + 1, odd, MPI_BYTE, next, 3, odd, MPI_BYTE, w));
    TU_MPI(MPI_Win_flush(next, w));
    TU_MPI(MPI_Win_unlock_all(parent));
    { span_t sp = { 1, odd, s + rank }; check(obuf, WIN_BYTES, &sp, 1, "6 MiB+13 get (memory handle)"); }
    MPI_Barrier(MPI_COMM_WORLD);
    TU_MPI(MPI_Win_free(&w));
    MPI_Barrier(MPI_COMM_WORLD);  /* no window on our handle is left */
    TU_MPI(MPIX_Memhandle_release(mine, parent));
    TU_MPI(MPI_Win_free(&parent));
    free(handles);
    free(mem);
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &nprocs);
    int next = (rank + 1) % nprocs, prev = (rank + nprocs - 1) % nprocs;
    uint8_t *obuf = malloc(WIN_BYTES);
    const size_t odd = 6 * MiB + 13;
    uint32_t s = 100;

    for (int flavor = 0; flavor < TU_NFLAVORS; flavor++) {
        if (!tu_flavor_enabled(flavor)) continue;
        tu_win_t w;
        tu_win_create(flavor, WIN_BYTES, 1, MPI_INFO_NULL, MPI_COMM_WORLD, &w);

        /* 4 MiB put, exclusive lock */
        s += 10;
        local_reset(&w);
        fill(obuf, 4 * MiB, s + rank);
        MPI_Barrier(MPI_COMM_WORLD);
        TU_MPI(MPI_Win_lock(MPI_LOCK_EXCLUSIVE, next, 0, w.win));
        TU_MPI(MPI_Put(obuf, 4 * MiB, MPI_BYTE, next, tu_disp(&w, next, 0), 4 * MiB, MPI_BYTE, w.win));
        TU_MPI(MPI_Win_unlock(next, w.win));
        MPI_Barrier(MPI_COMM_WORLD);
        { span_t sp = { 0, 4 * MiB, s + prev }; local_check(&w, &sp, 1, "4 MiB put"); }

        /* 6 MiB + 13 put at displacement 5, fence */
        s += 10;
        local_reset(&w);
        fill(obuf, odd, s + rank);
        TU_MPI(MPI_Win_fence(0, w.win));
        TU_MPI(MPI_Put(obuf, odd, MPI_BYTE, next, tu_disp(&w, next, 5), odd, MPI_BYTE, w.win));
        TU_MPI(MPI_Win_fence(MPI_MODE_NOSUCCEED, w.win));
        { span_t sp = { 5, odd, s + prev }; local_check(&w, &sp, 1, "6 MiB+13 put"); }

        /* two 4 MiB puts in one lock_all epoch: to next at 0, to prev at 8 MiB + 3 */
        s += 10;
        local_reset(&w);
        fill(obuf, 4 * MiB, s + rank);
        fill(obuf + 4 * MiB, 4 * MiB, s + 50 + rank);
        MPI_Barrier(MPI_COMM_WORLD);
        TU_MPI(MPI_Win_lock_all(0, w.win));
        TU_MPI(MPI_Put(obuf, 4 * MiB, MPI_BYTE, next, tu_disp(&w, next, 0), 4 * MiB, MPI_BYTE, w.win));
        TU_MPI(MPI_Put(obuf + 4 * MiB, 4 * MiB, MPI_BYTE, prev, tu_disp(&w, prev, 8 * MiB + 3),
                       4 * MiB, MPI_BYTE, w.win));
        TU_MPI(MPI_Win_unlock_all(w.win));
        MPI_Barrier(MPI_COMM_WORLD);
        {
            span_t sp[2] = { { 0, 4 * MiB, s + prev }, { 8 * MiB + 3, 4 * MiB, s + 50 + next } };
            local_check(&w, sp, 2, "two 4 MiB puts");
        }

        /* 4 MiB get (1 Mi MPI_INT), shared lock */
        s += 10;
        local_fill(&w, s + rank);
        memset(obuf, SENT, WIN_BYTES);
        MPI_Barrier(MPI_COMM_WORLD);
        TU_MPI(MPI_Win_lock(MPI_LOCK_SHARED, prev, 0, w.win));
        TU_MPI(MPI_Get(obuf, MiB, MPI_INT, prev, tu_disp(&w, prev, 0), MiB, MPI_INT, w.win));
        TU_MPI(MPI_Win_unlock(prev, w.win));
        { span_t sp = { 0, 4 * MiB, s + prev }; check(obuf, WIN_BYTES, &sp, 1, "4 MiB get"); }

        /* 6 MiB + 13 get from displacement 7 into obuf + 1, lock_all + flush */
        memset(obuf, SENT, WIN_BYTES);
        TU_MPI(MPI_Win_lock_all(0, w.win));
        TU_MPI(MPI_Get(obuf + 1, odd, MPI_BYTE, next, tu_disp(&w, next, 7), odd, MPI_BYTE, w.win));
        TU_MPI(MPI_Win_flush(next, w.win));
        {
            /* target bytes 7.. are pat(seed, 7..): compare element-wise */
            size_t bad = 0;
            for (size_t i = 0; i < WIN_BYTES; i++) {
                uint8_t exp = (i >= 1 && i < 1 + odd) ? pat(s + next, i - 1 + 7) : SENT;
                if (obuf[i] != exp) bad++;
            }
            TU_CHECK(0 == bad, "6 MiB+13 get (%s): %zu bad bytes", tu_flavor_names[flavor], bad);
        }
        TU_MPI(MPI_Win_unlock_all(w.win));
        MPI_Barrier(MPI_COMM_WORLD);

        /* 4 MiB over 8 MiB: vector of 2048 blocks of 2 KiB, stride 4 KiB */
        {
            MPI_Datatype vec;
            MPI_Type_vector(2048, 2048, 4096, MPI_BYTE, &vec);
            MPI_Type_commit(&vec);
            s += 10;
            local_reset(&w);
            fill(obuf, 4 * MiB, s + rank);
            MPI_Barrier(MPI_COMM_WORLD);
            TU_MPI(MPI_Win_lock(MPI_LOCK_EXCLUSIVE, next, 0, w.win));
            TU_MPI(MPI_Put(obuf, 4 * MiB, MPI_BYTE, next, tu_disp(&w, next, 64), 1, vec, w.win));
            TU_MPI(MPI_Win_unlock(next, w.win));
            MPI_Barrier(MPI_COMM_WORLD);
            TU_MPI(MPI_Win_lock(MPI_LOCK_EXCLUSIVE, rank, 0, w.win));
            size_t bad = 0;
            const uint8_t *b = w.base;
            for (size_t i = 0; i < WIN_BYTES; i++) {
                uint8_t exp = SENT;
                if (i >= 64 && i < 64 + 8 * MiB && ((i - 64) % 4096) < 2048)
                    exp = pat(s + prev, ((i - 64) / 4096) * 2048 + (i - 64) % 4096);
                if (b[i] != exp) bad++;
            }
            TU_CHECK(0 == bad, "4 MiB vector put (%s): %zu bad bytes", tu_flavor_names[flavor], bad);
            /* get it back from prev's window as contiguous: prev holds data from prev-1 */
            TU_MPI(MPI_Win_unlock(rank, w.win));
            memset(obuf, SENT, WIN_BYTES);
            MPI_Barrier(MPI_COMM_WORLD);
            TU_MPI(MPI_Win_lock(MPI_LOCK_SHARED, prev, 0, w.win));
            TU_MPI(MPI_Get(obuf, 4 * MiB, MPI_BYTE, prev, tu_disp(&w, prev, 64), 1, vec, w.win));
            TU_MPI(MPI_Win_unlock(prev, w.win));
            int pprev = (prev + nprocs - 1) % nprocs;
            span_t sp = { 0, 4 * MiB, s + pprev };
            check(obuf, WIN_BYTES, &sp, 1, "4 MiB vector get");
            MPI_Type_free(&vec);
        }
        MPI_Barrier(MPI_COMM_WORLD);
        tu_win_free(&w);
    }
    if (tu_flavor_enabled(TU_DYNAMIC)) memhandle_case(obuf, odd, s + 10);
    free(obuf);
    int rc = tu_finish("large");
    MPI_Finalize();
    return rc;
}
