/* ext_zombie: windows whose last handle goes with a local free, alive until
 * MPI_Finalize.  Usage: ext_zombie [Z]  (Z windows, default 16).
 *
 * A duplicate (MPIX_Win_dup_with_info) outliving its collectively freed
 * original is freed by one process alone: the window cannot be taken down
 * there (a peer may still use its own duplicate), so osc/ucxx keeps it
 * reachable until MPI_Finalize.  For each of Z windows, through the flavors:
 * 1. P made, D = dup(P), P freed (collective).
 * 2. Odd ranks free D at once.  Even ranks then, through their D, write the
 *    memory of the next rank (odd: it holds no handle any more): put of BLK
 *    doubles, an accumulate (MPI_PROD, a strided vector type: served by the
 *    target's software path), a fetch_and_op, then get it all back and check.
 *    The odd rank checks its memory too (create, dynamic: memory it owns).
 * 3. Every window is then kept on every rank, and MPI_Finalize must return
 *    cleanly: Open MPI 5.0 releases the communicators a program left before
 *    the osc components finalize, so a kept window must not free its own
 *    again (it did: heap corruption at exit, "corrupted double-linked list",
 *    once more than glibc's tcache of such blocks were left). */
#include "testutil.h"
#include "mpix_ucxx.h"
#include <stdint.h>

#define BLK 64                 /* doubles per window */

static int rank, nprocs, next;

static void one_window(int z, int flavor)
{
    tu_win_t P;
    MPI_Win D;
    MPI_Datatype vec;
    double buf[BLK], fac[BLK / 2], res[BLK];
    int64_t one = 1, old = -1;
    int bad = 0;

    tu_win_create(flavor, (BLK + 1) * sizeof(double), sizeof(double), MPI_INFO_NULL,
                  MPI_COMM_WORLD, &P);
    TU_MPI(MPIX_Win_dup_with_info(P.win, MPI_INFO_NULL, &D));
    MPI_Win_set_errhandler(D, MPI_ERRORS_RETURN);
    TU_MPI(MPI_Win_free(&P.win));           /* collective; D keeps the window */
    MPI_Barrier(MPI_COMM_WORLD);
    if (rank & 1) TU_MPI(MPI_Win_free(&D)); /* local: the window is kept here */
    MPI_Barrier(MPI_COMM_WORLD);

    if (0 == (rank & 1) && next != rank && (next & 1)) {
        MPI_Type_vector(BLK / 2, 1, 2, MPI_DOUBLE, &vec);
        MPI_Type_commit(&vec);
        for (int i = 0; i < BLK; i++) buf[i] = z + i;
        for (int i = 0; i < BLK / 2; i++) fac[i] = 1.5;
        TU_MPI(MPI_Win_lock(MPI_LOCK_EXCLUSIVE, next, 0, D));
        TU_MPI(MPI_Put(buf, BLK, MPI_DOUBLE, next, tu_disp(&P, next, 0), BLK, MPI_DOUBLE, D));
        TU_MPI(MPI_Win_flush(next, D));
        TU_MPI(MPI_Accumulate(fac, BLK / 2, MPI_DOUBLE, next, tu_disp(&P, next, 0), 1, vec,
                              MPI_PROD, D));
        TU_MPI(MPI_Fetch_and_op(&one, &old, MPI_INT64_T, next, tu_disp(&P, next, BLK),
                                MPI_SUM, D));
        TU_MPI(MPI_Win_unlock(next, D));
        TU_MPI(MPI_Win_lock(MPI_LOCK_SHARED, next, 0, D));
        TU_MPI(MPI_Get(res, BLK, MPI_DOUBLE, next, tu_disp(&P, next, 0), BLK, MPI_DOUBLE, D));
        TU_MPI(MPI_Win_unlock(next, D));
        for (int i = 0; i < BLK; i++) bad += res[i] != (i & 1 ? buf[i] : 1.5 * buf[i]);
        TU_CHECK(0 == bad && 0 == old, "window %d (%s): rank %d freed its handle, then through "
                 "the duplicate: %d of %d doubles wrong, fetch_and_op found %lld (expected 0)",
                 z, tu_flavor_names[flavor], next, bad, BLK, (long long) old);
        MPI_Type_free(&vec);
        TU_MPI(MPI_Win_free(&D));           /* local: kept here too */
    } else if (0 == (rank & 1)) {
        TU_MPI(MPI_Win_free(&D));
    }
    MPI_Barrier(MPI_COMM_WORLD);             /* the writes above are complete */

    if ((rank & 1) && TU_ALLOCATE != flavor) {
        const double *m = P.base;
        for (int i = 0; i < BLK; i++) bad += m[i] != (i & 1 ? z + i : 1.5 * (z + i));
        TU_CHECK(0 == bad, "window %d (%s): %d of my %d doubles wrong after my handle was freed",
                 z, tu_flavor_names[flavor], bad, BLK);
    }
    /* P.base (create, dynamic) stays: the window keeps it exposed until
     * MPI_Finalize. */
    free(P.remote);
}

int main(int argc, char **argv)
{
    int provided, rc, flavors[TU_NFLAVORS], nf = 0, z;
    int Z = argc > 1 ? atoi(argv[1]) : 16;

    MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &nprocs);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    next = (rank + 1) % nprocs;
    for (int f = 0; f < TU_NFLAVORS; f++) {
        if (tu_flavor_or_all(f)) flavors[nf++] = f;
    }
    for (z = 0; z < Z && nf > 0; z++) one_window(z, flavors[z % nf]);
    rc = tu_finish("ext_zombie");
    if (0 == rank) printf("ext_zombie: %d windows kept until MPI_Finalize\n", z);
    fflush(stdout);
    MPI_Finalize();
    return rc;
}
