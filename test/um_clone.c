/* um_clone: a child made with a raw clone() system call (no fork(), so no
 * pthread_atfork handler runs) gets a private copy of the parent's window
 * memory, as of any memory: its writes never show in the parent, while the
 * window is alive and after it is freed.  Windows: MPI_Win_create over
 * 1 MiB of heap and a region of a dynamic window.
 */
#include "testutil.h"
#include <signal.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#define M (1 << 20)

/* A child by clone(SIGCHLD) writes all of buf and exits; the parent's buf
 * must still read `v`. */
static void child_writes(char *buf, unsigned char v, const char *when)
{
    long pid = syscall(SYS_clone, (unsigned long) SIGCHLD, NULL, NULL, NULL, NULL);
    int status = 0;

    if (0 == pid) {
        memset(buf, 0x99, M);
        syscall(SYS_exit_group, 0);
    }
    TU_CHECK(pid > 0, "clone failed");
    if (pid <= 0) return;
    waitpid((pid_t) pid, &status, 0);
    TU_CHECK(0 == tu_count_not(buf, M, v),
             "%s: %ld bytes written by a clone()d child show in the parent", when,
             tu_count_not(buf, M, v));
}

int main(int argc, char **argv)
{
    int me, nprocs;
    MPI_Win win;
    char *a = malloc(M), *b = malloc(M);

    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &me);
    MPI_Comm_size(MPI_COMM_WORLD, &nprocs);
    tu_watchdog("um_clone", 120);
    memset(a, 0x11, M);
    memset(b, 0x22, M);
    TU_MPI(MPI_Win_create(a, M, 1, MPI_INFO_NULL, MPI_COMM_WORLD, &win));
    child_writes(a, 0x11, "create window alive");
    MPI_Barrier(MPI_COMM_WORLD);
    TU_MPI(MPI_Win_free(&win));
    child_writes(a, 0x11, "create window freed");

    TU_MPI(MPI_Win_create_dynamic(MPI_INFO_NULL, MPI_COMM_WORLD, &win));
    TU_MPI(MPI_Win_attach(win, b, M));
    child_writes(b, 0x22, "region attached");
    TU_MPI(MPI_Win_detach(win, b));
    child_writes(b, 0x22, "region detached");
    MPI_Barrier(MPI_COMM_WORLD);
    TU_MPI(MPI_Win_free(&win));
    free(a);
    free(b);
    int rc = tu_finish("um_clone");
    MPI_Finalize();
    return rc;
}
