/* osc/ucxx AM + progress thread deadlock reproducer.
 * mpirun -np 2 --mca osc ucxx -x OMPI_MCA_osc_ucxx_progress_thread=1 ./am_pt_deadlock */
#include <mpi.h>
#include <stdio.h>
#include "mpix_ucxx.h"
static int fn(const void *in, int n, MPI_Datatype a, void *p, int pc, MPI_Datatype b, void *out,
              int m, MPI_Datatype c, int ns, int off, void *x)
{
    for (int k = 0; k < ns * n; k++) ((long *) out)[k] = ((const long *) in)[k] + 1;
    return MPI_SUCCESS;
}
int main(int argc, char **argv)
{
    int rank, np, *base;
    long in[64], out[64];
    MPI_Win win; MPI_Info info; MPIX_Am_op op;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank); MPI_Comm_size(MPI_COMM_WORLD, &np);
    MPI_Info_create(&info); MPI_Info_set(info, "am_pipeline_unit", "1");
    MPI_Win_allocate(64, 1, info, MPI_COMM_WORLD, &base, &win);
    MPIX_Am_op_create(fn, NULL, &op); MPIX_Am_win_op_register(op, 0, win);
    for (int i = 0; i < 64; i++) in[i] = i;
    for (int it = 0; it < 2000; it++) {
        MPI_Win_lock_all(0, win);
        MPIX_Am(in, 1, MPI_LONG, out, 1, MPI_LONG, 64, (rank + 1) % np, MPI_LONG, 0, 1, MPI_INT,
                MPI_LONG, op, win);
        MPI_Win_unlock_all(win);
        if (out[63] != 64) { printf("bad output\n"); MPI_Abort(MPI_COMM_WORLD, 1); }
    }
    if (0 == rank) printf("done\n");
    MPIX_Am_win_op_deregister(op, win); MPIX_Am_op_free(&op);
    MPI_Win_free(&win); MPI_Finalize();
    return 0;
}
