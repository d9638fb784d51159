/* audit_mixed: processes that disagree on acc_single_intrinsic (rank 0 sets
 * it, the others do not) all fetch-and-add one counter of rank 0's on an
 * MPI_Win_allocate window.  Where every process maps every other's memory
 * (one node, shared memory), rank 0's own single elements then take a
 * lock-free CPU atomic and the others' the stripe locks: two kinds on one
 * word, which the atomics audit (OSC_UCXX_AUDIT_ATOMICS=1) must report at
 * MPI_Win_free, ending the job with a failing status.  Run by
 * audit_detect.sh.  Without the audit it runs to the end. */
#include "testutil.h"

int main(int argc, char **argv)
{
    int me, nprocs;
    int64_t *base, one = 1, old;
    MPI_Info info;
    MPI_Win win;

    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &me);
    MPI_Comm_size(MPI_COMM_WORLD, &nprocs);
    MPI_Info_create(&info);
    if (0 == me) MPI_Info_set(info, "acc_single_intrinsic", "true");
    TU_MPI(MPI_Win_allocate(sizeof(int64_t), sizeof(int64_t), info, MPI_COMM_WORLD, &base, &win));
    MPI_Info_free(&info);
    *base = 0;
    MPI_Barrier(MPI_COMM_WORLD);
    TU_MPI(MPI_Win_lock_all(0, win));
    for (int i = 0; i < 100; ++i) {
        TU_MPI(MPI_Fetch_and_op(&one, &old, MPI_INT64_T, 0, 0, MPI_SUM, win));
        TU_MPI(MPI_Win_flush(0, win));
    }
    TU_MPI(MPI_Win_unlock_all(win));
    MPI_Barrier(MPI_COMM_WORLD);
    printf("audit_mixed: rank %d reached MPI_Win_free\n", me);
    fflush(stdout);
    TU_MPI(MPI_Win_free(&win));
    {
        int rc = tu_finish("audit_mixed");
        MPI_Finalize();
        return rc;
    }
}
