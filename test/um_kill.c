/* um_kill: what osc/ucxx and UCX keep in /dev/shm and System V shared
 * memory does not outlive a job whose mpirun is killed with SIGKILL.
 *
 * Every rank makes one window of each flavor (create, allocate, dynamic
 * with a region attached, allocate_shared where all ranks share a node),
 * moves data through each, then prints its pid, every file under /dev/shm
 * it maps whose name is osc/ucxx's or UCX's ("shm-file PATH", still linked)
 * and every System V segment it maps ("sysv SHMID"), then "ready", and
 * waits to be killed.  um_kill.sh kills mpirun and checks that all of them
 * are gone once the ranks are.  (Never passes on its own: it is killed by
 * design.)
 */
#include "testutil.h"
#include <unistd.h>

int main(int argc, char **argv)
{
    int me, nprocs;
    tu_win_t w[TU_NFLAVORS_ALL];
    char line[512];
    FILE *maps;

    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &me);
    MPI_Comm_size(MPI_COMM_WORLD, &nprocs);
    for (int f = 0; f < TU_NFLAVORS_ALL; f++) {
        int64_t v = me, got = -1;
        int next = (me + 1) % nprocs;
        tu_win_create(f, 1 << 16, 1, MPI_INFO_NULL, MPI_COMM_WORLD, &w[f]);
        if (MPI_WIN_NULL == w[f].win) continue;
        TU_MPI(MPI_Win_lock(MPI_LOCK_SHARED, next, 0, w[f].win));
        TU_MPI(MPI_Put(&v, 1, MPI_INT64_T, next, tu_disp(&w[f], next, 0), 1, MPI_INT64_T,
                       w[f].win));
        TU_MPI(MPI_Win_flush(next, w[f].win));
        TU_MPI(MPI_Get(&got, 1, MPI_INT64_T, next, tu_disp(&w[f], next, 0), 1, MPI_INT64_T,
                       w[f].win));
        TU_MPI(MPI_Win_unlock(next, w[f].win));
        TU_CHECK(got == me, "flavor %d: read %lld back", f, (long long) got);
    }
    MPI_Barrier(MPI_COMM_WORLD);
    printf("pid %d\n", (int) getpid());
    maps = fopen("/proc/self/maps", "r");
    while (maps && fgets(line, sizeof(line), maps)) {
        char *path = strchr(line, '/');
        unsigned long inode = 0;
        if (NULL == path) continue;
        path[strcspn(path, "\n")] = '\0';
        if (0 == strncmp(path, "/SYSV", 5) &&
            1 == sscanf(line, "%*s %*s %*s %*s %lu", &inode)) {
            printf("sysv %lu\n", inode);  /* (the inode of a SysV mapping is its shmid) */
        } else if ((0 == strncmp(path, "/dev/shm/osc_ucxx", 17) ||
                    0 == strncmp(path, "/dev/shm/ucx", 12)) && NULL == strstr(path, "(deleted)")) {
            printf("shm-file %s\n", path);
        }
    }
    if (maps) fclose(maps);
    printf("ready\n");
    fflush(stdout);
    for (int i = 0; i < 120; i++) sleep(1);  /* mpirun's end ends us */
    MPI_Finalize();
    return 1;
}
