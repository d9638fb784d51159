/* um_writers: another thread of the application keeps writing to memory
 * while the main thread makes a window over it (MPI_Win_create, then
 * MPI_Win_attach to a dynamic window): none of its writes is lost.  The
 * writer sweeps a 64 MiB buffer again and again, one byte every 64 B (the
 * sweep number), and never calls MPI (MPI_THREAD_FUNNELED); once the
 * window exists it stops and says where: every byte it wrote must read what
 * it wrote.  Fails on a component that copies the pages somewhere else
 * while the writer runs (unless it can hold the writer off, which needs
 * userfaultfd: root or a sysctl, so run it as an unprivileged user too).
 */
#include "testutil.h"
#include <pthread.h>

#define LEN (64u << 20)
#define STEP 64

static char *buf;
static volatile int stop;
static volatile unsigned sweeps;   /* sweeps begun */
static volatile size_t where;      /* the slot the last sweep stopped before */

static void *writer(void *arg)
{
    (void) arg;
    for (unsigned s = 1;; ++s) {
        sweeps = s;
        for (size_t i = 0; i < LEN; i += STEP) {
            ((volatile char *) buf)[i] = (char) s;
            if (stop) {
                where = i + STEP;
                return NULL;
            }
        }
    }
}

static void run(int dynamic)
{
    const char *mode = dynamic ? "dynamic" : "create";
    pthread_t tid;
    MPI_Win win;
    long lost = 0;

    memset(buf, 0, LEN);
    stop = 0;
    sweeps = 0;
    pthread_create(&tid, NULL, writer, NULL);
    while (sweeps < 1) {
    }
    if (dynamic) {
        TU_MPI(MPI_Win_create_dynamic(MPI_INFO_NULL, MPI_COMM_WORLD, &win));
        TU_MPI(MPI_Win_attach(win, buf, LEN));
    } else {
        TU_MPI(MPI_Win_create(buf, LEN, 1, MPI_INFO_NULL, MPI_COMM_WORLD, &win));
    }
    stop = 1;
    pthread_join(tid, NULL);
    for (size_t i = 0; i < LEN; i += STEP) {
        char want = (char) (i < where ? sweeps : sweeps - 1);
        lost += buf[i] != want;
    }
    TU_CHECK(0 == lost, "%s: %ld of %u writes of the other thread lost (%u sweeps)", mode, lost,
             LEN / STEP, sweeps);
    MPI_Barrier(MPI_COMM_WORLD);
    if (dynamic) TU_MPI(MPI_Win_detach(win, buf));
    TU_MPI(MPI_Win_free(&win));
}

int main(int argc, char **argv)
{
    int provided;
    MPI_Init_thread(&argc, &argv, MPI_THREAD_FUNNELED, &provided);
    tu_watchdog("um_writers", 150);
    buf = malloc(LEN);
    run(0);
    run(1);
    free(buf);
    int rc = tu_finish("um_writers");
    MPI_Finalize();
    return rc;
}
