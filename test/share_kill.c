/* share_kill: the shared-memory objects that hold attached user memory
 * (osc_ucxx_share.c) do not outlive a process that is killed.
 *
 * Every rank attaches 64 KiB of page-aligned heap memory to a dynamic window
 * (its pages move onto an object in /dev/shm/osc_ucxx.<jobid>.<vpid>/), finds
 * that directory in /proc/self/maps and prints "shm-dir <path>".  Then the
 * last rank kills itself with SIGKILL and the others wait to be killed by
 * mpirun.  share_kill.sh runs this and checks that every printed directory is
 * gone afterwards.  (Never passes on its own: it is killed by design.)
 */
#include "testutil.h"
#include <signal.h>
#include <unistd.h>

int main(int argc, char **argv)
{
    int me, nprocs;
    char *buf, line[512], dir[256] = "";
    MPI_Win win;
    FILE *maps;

    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &me);
    MPI_Comm_size(MPI_COMM_WORLD, &nprocs);
    if (0 != posix_memalign((void **) &buf, 4096, 65536)) MPI_Abort(MPI_COMM_WORLD, 2);
    memset(buf, me, 65536);
    TU_MPI(MPI_Win_create_dynamic(MPI_INFO_NULL, MPI_COMM_WORLD, &win));
    TU_MPI(MPI_Win_attach(win, buf, 65536));
    maps = fopen("/proc/self/maps", "r");
    while (maps && '\0' == dir[0] && fgets(line, sizeof(line), maps)) {
        char *p = strstr(line, "/dev/shm/osc_ucxx.");
        if (NULL != p) {
            char *slash = strchr(p + strlen("/dev/shm/"), '/');
            if (NULL != slash) *slash = '\0';
            snprintf(dir, sizeof(dir), "%s", p);
        }
    }
    if (maps) fclose(maps);
    printf("shm-dir %s\n", dir[0] ? dir : "none");
    fflush(stdout);
    MPI_Barrier(MPI_COMM_WORLD);
    /* Half a second of "work" first: the directory's registration with the
     * PMIx server is a one-way message, which mpirun may not have read yet
     * when its ranks keep both cores busy (osc_ucxx_share.c). */
    if (me == nprocs - 1) {
        usleep(500000);
        kill(getpid(), SIGKILL);
    }
    sleep(60);  /* mpirun kills us first */
    MPI_Finalize();
    return 1;
}
