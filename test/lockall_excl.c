/* lock_all epochs back to back against exclusive locks: readers call
 * MPI_Win_lock_all over and over on the same target (osc/ucxx takes the
 * shared locks of the targets the previous lock_all used at once, where no
 * writer holds them; otherwise on first use) while a writer updates a record
 * there under MPI_LOCK_EXCLUSIVE.  Usage: lockall_excl [-n N] (versions,
 * default 60); every window flavor.
 * The last rank writes version 1..N of a RECW-word record on rank 0: lock
 * exclusive, first half, flush, a pause (readers must not get in now),
 * second half, unlock.  Every other rank (rank 0 too) reads the record in
 * lock_all epochs, in two halves separated by a flush, and checks that every
 * word belongs to one version and that versions never go backwards; a
 * reader stops once it saw version N.  Readers pause between epochs without
 * holding the lock (a writer is not promised a turn otherwise), calling
 * MPI_Iprobe meanwhile.  At the end rank 0 holds version N. */
#include "testutil.h"
#include <unistd.h>

#define RECW 256
#define HALF ((MPI_Aint) (RECW / 2 * sizeof(uint64_t)))  /* bytes */

static int rank, nprocs, versions = 60;

static uint64_t word(uint64_t version, int j)
{
    uint64_t x = (version + 1) * 0x9E3779B97F4A7C15ull + (uint64_t) j * 0xD1B54A32D192ED03ull;
    return x ^ (x >> 31);
}

/* the version a record holds, or -1 if its words disagree */
static long record_version(const uint64_t *rec)
{
    long v = -1;
    for (uint64_t c = 0; c <= (uint64_t) versions && v < 0; c++) {
        if (rec[0] == word(c, 0)) v = (long) c;
    }
    for (int j = 1; v >= 0 && j < RECW; j++) {
        if (rec[j] != word((uint64_t) v, j)) return -1;
    }
    return v;
}

static void writer(tu_win_t *w)
{
    uint64_t rec[RECW];
    MPI_Aint at = tu_disp(w, 0, 0);
    for (int v = 1; v <= versions; v++) {
        for (int j = 0; j < RECW; j++) rec[j] = word((uint64_t) v, j);
        TU_MPI(MPI_Win_lock(MPI_LOCK_EXCLUSIVE, 0, 0, w->win));
        TU_MPI(MPI_Put(rec, RECW / 2, MPI_UINT64_T, 0, at, RECW / 2, MPI_UINT64_T, w->win));
        TU_MPI(MPI_Win_flush(0, w->win));
        usleep(200);
        TU_MPI(MPI_Put(rec + RECW / 2, RECW / 2, MPI_UINT64_T, 0, at + HALF, RECW / 2,
                       MPI_UINT64_T, w->win));
        TU_MPI(MPI_Win_unlock(0, w->win));
        usleep(100);
    }
}

static void reader(tu_win_t *w, const char *flavor)
{
    uint64_t rec[RECW];
    MPI_Aint at = tu_disp(w, 0, 0);
    long last = 0, reads = 0, torn = 0, back = 0;
    while (last < versions) {
        TU_MPI(MPI_Win_lock_all(0, w->win));
        TU_MPI(MPI_Get(rec, RECW / 2, MPI_UINT64_T, 0, at, RECW / 2, MPI_UINT64_T, w->win));
        TU_MPI(MPI_Win_flush(0, w->win));
        TU_MPI(MPI_Get(rec + RECW / 2, RECW / 2, MPI_UINT64_T, 0, at + HALF, RECW / 2,
                       MPI_UINT64_T, w->win));
        TU_MPI(MPI_Win_unlock_all(w->win));
        long v = record_version(rec);
        reads++;
        if (v < 0) {
            torn++;
        } else {
            back += v < last;
            if (v > last) last = v;
        }
        if (torn > 20) break;
        for (int k = 0; k < 5; k++) {
            int flag;
            MPI_Iprobe(MPI_ANY_SOURCE, 999, MPI_COMM_WORLD, &flag, MPI_STATUS_IGNORE);
            usleep(10);
        }
    }
    TU_CHECK(0 == torn, "%s: %ld of %ld records read in lock_all epochs were torn (a writer "
             "held the exclusive lock)", flavor, torn, reads);
    TU_CHECK(0 == back, "%s: the version went backwards %ld times", flavor, back);
}

int main(int argc, char **argv)
{
    int rc;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &nprocs);
    versions = (int) tu_opt_long(argc, argv, "-n", 60);
    if (tu_slow_transport() && versions > 20) versions = 20;
    if (nprocs < 2) {
        if (0 == rank) printf("lockall_excl: needs 2 ranks, skipped\n");
        rc = tu_finish("lockall_excl");
        MPI_Finalize();
        return rc;
    }
    for (int flavor = 0; flavor < TU_NFLAVORS; flavor++) {
        tu_win_t w;
        if (!tu_flavor_enabled(flavor)) continue;
        tu_win_create(flavor, RECW * sizeof(uint64_t), 1, MPI_INFO_NULL, MPI_COMM_WORLD, &w);
        if (0 == rank) {
            TU_MPI(MPI_Win_lock(MPI_LOCK_EXCLUSIVE, 0, 0, w.win));
            for (int j = 0; j < RECW; j++) ((uint64_t *) w.base)[j] = word(0, j);
            TU_MPI(MPI_Win_unlock(0, w.win));
        }
        MPI_Barrier(MPI_COMM_WORLD);
        if (rank == nprocs - 1) {
            writer(&w);
        } else {
            reader(&w, tu_flavor_names[flavor]);
        }
        MPI_Barrier(MPI_COMM_WORLD);
        if (0 == rank) {
            TU_MPI(MPI_Win_lock(MPI_LOCK_SHARED, 0, 0, w.win));
            TU_CHECK(versions == record_version(w.base), "%s: rank 0 holds version %ld, not %d",
                     tu_flavor_names[flavor], record_version(w.base), versions);
            TU_MPI(MPI_Win_unlock(0, w.win));
        }
        tu_win_free(&w);
    }
    rc = tu_finish("lockall_excl");
    MPI_Finalize();
    return rc;
}
