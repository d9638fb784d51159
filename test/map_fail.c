/* map_fail: a first access whose mapping of the target fails gives an MPI
 * error class that says so, through the window's error handler, never
 * MPI_ERR_INTERN or a crash.  osc/ucxx maps a peer's MPI_Win_allocate
 * memory and state on the node at the first access where the window is too
 * large for the node's segment (1 MiB per rank here); every process is to
 * map every other's, so no UCX path is set up for it.  Rank 0 lowers its
 * descriptor limit to what it has open, so that opening the target's file
 * fails, then:
 *   - an exclusive lock on rank 1 (window 1): MPI_ERR_RMA_SHARED;
 *   - lock_all and a put to rank 1 (window 2; lock_all takes the target's
 *     lock at the first operation there): the put, MPI_ERR_RMA_SHARED;
 * and after its limit is back, both windows are freed and a new window
 * works.  Where rank 1 is on another node (test/hosts.sh) nothing is
 * mapped: n/a.  With UCX over TCP alone the window also has UCX paths to
 * the peers, which may serve the access instead: then the epoch must end
 * without error and the put must have landed at rank 1. */
#include "testutil.h"
#include <stdint.h>
#include <sys/resource.h>

static int me, nprocs;

static void want_shared_class(int rc, const char *what)
{
    int cls = MPI_SUCCESS;
    if (MPI_SUCCESS != rc) MPI_Error_class(rc, &cls);
    if (MPI_SUCCESS == cls && tu_tcp_only()) return;   /* (checked by its effect: main) */
    TU_CHECK(MPI_ERR_RMA_SHARED == cls, "%s with the target unmappable: class %s, want "
             "MPI_ERR_RMA_SHARED", what, tu_err_class_name(cls));
}

int main(int argc, char **argv)
{
    MPI_Aint size = 1 << 20;
    int64_t v = 42, *base[3];
    MPI_Win win[3];
    MPI_Comm node;
    int rc, near = 0, landed = 0;

    tu_parse_args(argc, argv);
    tu_init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &me);
    MPI_Comm_size(MPI_COMM_WORLD, &nprocs);
    node = tu_node_comm(MPI_COMM_WORLD, NULL);
    near = tu_on_my_node(MPI_COMM_WORLD, node, 1);
    MPI_Bcast(&near, 1, MPI_INT, 0, MPI_COMM_WORLD);
    for (int i = 0; i < 2; ++i) {
        TU_MPI(MPI_Win_allocate(size, 8, MPI_INFO_NULL, MPI_COMM_WORLD, &base[i], &win[i]));
        MPI_Win_set_errhandler(win[i], MPI_ERRORS_RETURN);
        base[i][0] = 0;
    }
    MPI_Barrier(MPI_COMM_WORLD);
    if (0 == me && near) {
        struct rlimit old, low;
        getrlimit(RLIMIT_NOFILE, &old);
        low = old;
        low.rlim_cur = (rlim_t) tu_open_fds();
        setrlimit(RLIMIT_NOFILE, &low);

        rc = MPI_Win_lock(MPI_LOCK_EXCLUSIVE, 1, 0, win[0]);
        want_shared_class(rc, "MPI_Win_lock");
        if (MPI_SUCCESS == rc) want_shared_class(MPI_Win_unlock(1, win[0]), "MPI_Win_unlock");

        TU_MPI(MPI_Win_lock_all(0, win[1]));
        rc = MPI_Put(&v, 1, MPI_INT64_T, 1, 0, 1, MPI_INT64_T, win[1]);
        want_shared_class(rc, "MPI_Put in lock_all");
        landed = MPI_SUCCESS == rc;
        rc = MPI_Win_unlock_all(win[1]);
        if (landed) want_shared_class(rc, "MPI_Win_unlock_all after the put");
        landed = landed && MPI_SUCCESS == rc;

        setrlimit(RLIMIT_NOFILE, &old);
    } else if (0 == me) {
        printf("map_fail: n/a (rank 1 on another node)\n");
    }
    /* a put that reported success is at rank 1 */
    MPI_Bcast(&landed, 1, MPI_INT, 0, MPI_COMM_WORLD);
    if (1 == me && landed) {
        TU_MPI(MPI_Win_lock(MPI_LOCK_SHARED, me, 0, win[1]));
        TU_CHECK(base[1][0] == v, "the put that succeeded: %lld at rank 1, want %lld",
                 (long long) base[1][0], (long long) v);
        TU_MPI(MPI_Win_unlock(me, win[1]));
    }
    MPI_Barrier(MPI_COMM_WORLD);
    for (int i = 0; i < 2; ++i) TU_MPI(MPI_Win_free(&win[i]));

    /* a new window works */
    TU_MPI(MPI_Win_allocate(size, 8, MPI_INFO_NULL, MPI_COMM_WORLD, &base[2], &win[2]));
    base[2][0] = 0;
    MPI_Barrier(MPI_COMM_WORLD);
    TU_MPI(MPI_Win_lock(MPI_LOCK_EXCLUSIVE, (me + 1) % nprocs, 0, win[2]));
    TU_MPI(MPI_Accumulate(&v, 1, MPI_INT64_T, (me + 1) % nprocs, 0, 1, MPI_INT64_T, MPI_SUM,
                          win[2]));
    TU_MPI(MPI_Win_unlock((me + 1) % nprocs, win[2]));
    MPI_Barrier(MPI_COMM_WORLD);
    TU_MPI(MPI_Win_lock(MPI_LOCK_SHARED, me, 0, win[2]));
    TU_CHECK(base[2][0] == v, "new window after the failure: %lld, want %lld",
             (long long) base[2][0], (long long) v);
    TU_MPI(MPI_Win_unlock(me, win[2]));
    TU_MPI(MPI_Win_free(&win[2]));
    MPI_Comm_free(&node);
    rc = tu_finish("map_fail");
    MPI_Finalize();
    return rc;
}
