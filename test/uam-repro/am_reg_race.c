/* S28: AMs may be issued as soon as MPIX_Am_win_op_register returns.
 * Rank 1 sends one AM to rank 0 right after registering; repeat on 50 windows.
 * mpirun -np 2 --mca osc ucxx ./am_reg_race  (expected: 0 failures) */
#include <mpi.h>
#include <stdio.h>
#include "mpix_ucxx.h"
static int fn(const void *in, int n, MPI_Datatype a, void *p, int pc, MPI_Datatype b, void *out,
              int m, MPI_Datatype c, int ns, int off, void *x)
{
    *(int *) p += *(const int *) in;
    return MPI_SUCCESS;
}
int main(int argc, char **argv)
{
    int rank, one = 1, bad = 0, all, *base;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    for (int it = 0; it < 50; it++) {
        MPI_Win win; MPIX_Am_op op; int rc;
        MPI_Win_allocate(sizeof(int), sizeof(int), MPI_INFO_NULL, MPI_COMM_WORLD, &base, &win);
        MPI_Win_set_errhandler(win, MPI_ERRORS_RETURN);
        MPIX_Am_op_create(fn, NULL, &op);
        MPIX_Am_win_op_register(op, 5, win);
        if (1 == rank) {
            MPI_Win_lock(MPI_LOCK_SHARED, 0, 0, win);
            MPIX_Am(&one, 1, MPI_INT, NULL, 0, MPI_INT, 1, 0, MPI_INT, 0, 1, MPI_INT, MPI_INT, op, win);
            rc = MPI_Win_unlock(0, win);
            if (MPI_SUCCESS != rc) {
                int cls; MPI_Error_class(rc, &cls);
                if (bad++ < 3) printf("iteration %d: MPI_Win_unlock returned class %d%s\n", it, cls,
                                      MPI_ERR_OP == cls ? " (MPI_ERR_OP)" : "");
            }
        }
        MPI_Barrier(MPI_COMM_WORLD);
        MPIX_Am_win_op_deregister(op, win); MPIX_Am_op_free(&op);
        MPI_Win_free(&win);
    }
    MPI_Reduce(&bad, &all, 1, MPI_INT, MPI_SUM, 0, MPI_COMM_WORLD);
    if (0 == rank) printf("%d of 50 AMs issued right after register failed\n", all);
    MPI_Finalize();
    return all != 0;
}
