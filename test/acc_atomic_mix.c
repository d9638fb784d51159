/* Element-wise atomicity of accumulates does not depend on the datatype
 * that reaches an element.  MPI guarantees that accumulates to one element
 * of a predefined type are atomic with respect to each other whatever
 * derived datatypes the origins use, so every origin must protect an
 * element the same way.
 *
 * All ranks add 1 to counters (MPI_INT) at rank 0 inside one lock_all epoch,
 * without any other synchronization, `iters` operations each:
 *   - even ranks ("plain"): MPI_Accumulate(MPI_SUM) with target type MPI_INT,
 *     count 1 on counter 0, or count 4 on counters 0..3;
 *   - odd ranks ("derived"): the same ints through target types whose extent
 *     is not a multiple of 4: MPI_Type_create_resized(MPI_INT, 0, 6) count 1
 *     on counter 0, or a resized contiguous(4, MPI_INT) of extent 18, count 1
 *     on counters 0..3; the target displacements are exactly the plain ones
 *     (aligned ints).
 * MPI_Win_flush every 64 operations.  At the end rank 0's counters must equal
 * the exact number of increments: a lost update means the two kinds of
 * origins did not exclude each other on the same element.  A second round
 * repeats it with MPI_Get_accumulate(MPI_SUM) on the derived side.
 *
 * Usage: acc_atomic_mix [-i iters] [--no-direct] (default 300000 / nprocs per rank,
 * 2000 under UCX_TLS=tcp).  Flavors: create, allocate, dynamic. */
#include "testutil.h"
#include <signal.h>
#include <stdint.h>
#include <unistd.h>

#define NC 4
/* Window memory is whole pages (page-aligned), so that MPI_Win_create and
 * attached memory can be shared on the node as a whole, like allocated
 * windows; the counters sit in the middle page. */
#define WIN_BYTES (3 * 4096)
#define OFF ((4096 + 64) / 4)   /* counters start at this int */

static void win_create_paged(int flavor, tu_win_t *w)
{
    int nprocs;
    MPI_Comm_size(MPI_COMM_WORLD, &nprocs);
    memset(w, 0, sizeof(*w));
    w->size = WIN_BYTES;
    w->disp_unit = sizeof(int);
    w->flavor = flavor;
    if (TU_ALLOCATE == flavor) {
        TU_MPI(MPI_Win_allocate(WIN_BYTES, sizeof(int), MPI_INFO_NULL, MPI_COMM_WORLD, &w->base,
                                &w->win));
    } else {
        if (0 != posix_memalign(&w->base, 4096, WIN_BYTES)) MPI_Abort(MPI_COMM_WORLD, 2);
        if (TU_CREATE == flavor) {
            TU_MPI(MPI_Win_create(w->base, WIN_BYTES, sizeof(int), MPI_INFO_NULL,
                                  MPI_COMM_WORLD, &w->win));
        } else {
            MPI_Aint mine;
            TU_MPI(MPI_Win_create_dynamic(MPI_INFO_NULL, MPI_COMM_WORLD, &w->win));
            TU_MPI(MPI_Win_attach(w->win, w->base, WIN_BYTES));
            MPI_Get_address(w->base, &mine);
            w->remote = malloc(nprocs * sizeof(MPI_Aint));
            MPI_Allgather(&mine, 1, MPI_AINT, w->remote, 1, MPI_AINT, MPI_COMM_WORLD);
        }
    }
    memset(w->base, 0, WIN_BYTES);
    MPI_Win_set_errhandler(w->win, MPI_ERRORS_RETURN);
    MPI_Barrier(MPI_COMM_WORLD);
}

int main(int argc, char **argv)
{
    int rank, nprocs;
    int iters = -1;
    for (int i = 1; i < argc; i++)
        if (0 == strcmp(argv[i], "-i") && i + 1 < argc) iters = atoi(argv[++i]);
        else if (0 == strcmp(argv[i], "--no-direct")) tu_tune("direct=0");
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &nprocs);
    if (iters < 0) iters = tu_slow_transport() ? 2000 : 300000 / nprocs;
    tu_watchdog("acc_atomic_mix", 120);

    MPI_Datatype t6, c4, t18;
    MPI_Type_create_resized(MPI_INT, 0, 6, &t6);
    MPI_Type_commit(&t6);
    MPI_Type_contiguous(NC, MPI_INT, &c4);
    MPI_Type_create_resized(c4, 0, 18, &t18);
    MPI_Type_commit(&t18);

    const int derived = rank & 1;
    int ones[NC] = {1, 1, 1, 1}, res[NC];

    for (int flavor = 0; flavor < TU_NFLAVORS; flavor++) {
        if (!tu_flavor_enabled(flavor)) continue;
        for (int round = 0; round < 2; round++) {
            tu_win_t w;
            int64_t mine[NC] = {0}, expect[NC];
            win_create_paged(flavor, &w);
            MPI_Aint d = tu_disp(&w, 0, OFF);
            TU_MPI(MPI_Win_lock_all(0, w.win));
            for (int it = 0; it < iters; it++) {
                int all4 = it & 1;
                if (!derived) {
                    TU_MPI(MPI_Accumulate(ones, all4 ? NC : 1, MPI_INT, 0, d, all4 ? NC : 1, MPI_INT,
                                          MPI_SUM, w.win));
                } else if (0 == round) {
                    TU_MPI(MPI_Accumulate(ones, all4 ? NC : 1, MPI_INT, 0, d, 1, all4 ? t18 : t6,
                                          MPI_SUM, w.win));
                } else {
                    TU_MPI(MPI_Get_accumulate(ones, all4 ? NC : 1, MPI_INT, res, all4 ? NC : 1,
                                              MPI_INT, 0, d, 1, all4 ? t18 : t6, MPI_SUM, w.win));
                }
                for (int c = 0; c < (all4 ? NC : 1); c++) mine[c]++;
                if (63 == it % 64) TU_MPI(MPI_Win_flush(0, w.win));
            }
            TU_MPI(MPI_Win_unlock_all(w.win));
            MPI_Allreduce(mine, expect, NC, MPI_INT64_T, MPI_SUM, MPI_COMM_WORLD);
            if (0 == rank) {
                int *cnt = (int *) w.base + OFF;
                TU_MPI(MPI_Win_lock(MPI_LOCK_SHARED, 0, 0, w.win));
                for (int c = 0; c < NC; c++)
                    TU_CHECK(cnt[c] == expect[c],
                             "%s, %s: counter %d is %d, expected %lld (%lld updates lost)",
                             tu_flavor_names[flavor], round ? "get_accumulate" : "accumulate", c,
                             cnt[c], (long long) expect[c], (long long) (expect[c] - cnt[c]));
                TU_MPI(MPI_Win_unlock(0, w.win));
            }
            MPI_Barrier(MPI_COMM_WORLD);
            tu_win_free(&w);
        }
    }
    MPI_Type_free(&t6);
    MPI_Type_free(&t18);
    MPI_Type_free(&c4);
    alarm(0);
    int rc = tu_finish("acc_atomic_mix");
    MPI_Finalize();
    return rc;
}
