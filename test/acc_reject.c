/* Accumulates to memory a dynamic window's target has detached: the origin
 * gets MPI_ERR_RMA_RANGE (from the accumulate call, or from the flush or
 * unlock that completes it) and never waits forever.  Accessing detached
 * memory is erroneous in MPI; osc/ucxx promises to report it as
 * MPI_ERR_RMA_RANGE, through the window's error handler (MPI_ERRORS_RETURN
 * here).  Rank 0 is the target, every other rank an origin with a region of
 * its own.  The accumulates are multi-element (MPI_SHORT x 1000, or MPI_INT
 * through a vector datatype), so where the origin cannot map the target's
 * memory (UCX_TLS=tcp,self, or --no-direct) the target applies them on
 * receipt and must answer even the ones it rejects.
 *
 * A. Detached before: the origin warms its region cache with a put and a
 *    flush, the target detaches (origin and target synchronize by messages),
 *    then the origin accumulates to the old address: MPI_ERR_RMA_RANGE from
 *    the accumulate, the flush or the unlock; no other error.
 * B. Detached meanwhile (`trials` times): the origin keeps accumulating to its
 *    region (flush every 4) while the target, serving it, detaches the region
 *    at a varying moment and then tells the origin.  Each accumulate, flush
 *    and unlock must return MPI_SUCCESS or MPI_ERR_RMA_RANGE, and after the
 *    origin has heard of the detach one more accumulate must be reported as
 *    MPI_ERR_RMA_RANGE (by the call or the following flush/unlock).  An
 *    accumulate the target rejected but never answered leaves the flush
 *    waiting: the watchdog (45 s, --timeout) turns that into a failure.
 *
 * Usage: acc_reject [-t trials] [--no-direct] [--timeout s] (default 30 trials). */
#include "testutil.h"
#include <signal.h>
#include <stdint.h>
#include <unistd.h>

#define RBYTES 8192
#define NSHORT 1000
enum { TAG_ADDR = 11, TAG_READY, TAG_DETACHED, TAG_DONE };

static int rank, nprocs;
static MPI_Datatype vec;   /* 500 ints, every other one */

/* where this rank is, for the watchdog's message */
static char where[200] = "acc_reject: watchdog: stuck in setup, failing\n";
static void at(int trial, const char *step)
{
    snprintf(where, sizeof(where), "acc_reject: watchdog: rank %d stuck in trial %d at: %s, "
             "failing\n", rank, trial, step);
}

static void watchdog(int sig)
{
    (void) sig;
    (void) !write(2, where, strlen(where));
    _exit(3);
}

static int acc_once(MPI_Win win, MPI_Aint addr, int variant)
{
    static short s[NSHORT];
    static int v[1000];
    for (int i = 0; i < NSHORT; i++) s[i] = 1;
    for (int i = 0; i < 1000; i++) v[i] = 1;
    if (variant & 1) return MPI_Accumulate(v, 500, MPI_INT, 0, addr, 1, vec, MPI_SUM, win);
    return MPI_Accumulate(s, NSHORT, MPI_SHORT, 0, addr, NSHORT, MPI_SHORT, MPI_SUM, win);
}

/* Allowed: success or MPI_ERR_RMA_RANGE.  Returns 1 for RANGE. */
static int expect_ok_or_range(int rc, const char *what, int trial)
{
    int cls = tu_err_class(rc);
    TU_CHECK(MPI_SUCCESS == cls || MPI_ERR_RMA_RANGE == cls, "trial %d: %s returned %s", trial,
             what, tu_err_class_name(cls));
    return MPI_ERR_RMA_RANGE == cls;
}

static void target_trial(MPI_Win win, char **mem, int trial, int spin_us)
{
    at(trial, "target: serving");
    for (int r = 1; r < nprocs; r++) {
        if (0 != posix_memalign((void **) &mem[r], 4096, RBYTES)) MPI_Abort(MPI_COMM_WORLD, 2);
        memset(mem[r], 0, RBYTES);
        TU_MPI(MPI_Win_attach(win, mem[r], RBYTES));
        MPI_Aint a;
        MPI_Get_address(mem[r], &a);
        MPI_Send(&a, 1, MPI_AINT, r, TAG_ADDR, MPI_COMM_WORLD);
    }
    for (int r = 1; r < nprocs; r++)
        MPI_Recv(NULL, 0, MPI_BYTE, r, TAG_READY, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    /* serve the origins for a while, then pull their memory away */
    double until = MPI_Wtime() + spin_us * 1e-6;
    int flag;
    while (MPI_Wtime() < until)
        MPI_Iprobe(MPI_ANY_SOURCE, TAG_DONE, MPI_COMM_WORLD, &flag, MPI_STATUS_IGNORE);
    for (int r = 1; r < nprocs; r++) TU_MPI(MPI_Win_detach(win, mem[r]));
    for (int r = 1; r < nprocs; r++) MPI_Send(NULL, 0, MPI_BYTE, r, TAG_DETACHED, MPI_COMM_WORLD);
    for (int r = 1; r < nprocs; r++)
        MPI_Recv(NULL, 0, MPI_BYTE, r, TAG_DONE, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    /* the detached memory stays allocated until the end (see main) */
}

/* Phase A when racing == 0, else one trial of phase B. */
static void origin_trial(MPI_Win win, int trial, int racing)
{
    MPI_Aint addr;
    int one[4] = {1, 2, 3, 4}, range = 0, variant = trial;
    at(trial, "warming up");
    MPI_Recv(&addr, 1, MPI_AINT, 0, TAG_ADDR, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    TU_MPI(MPI_Win_lock(MPI_LOCK_SHARED, 0, 0, win));
    TU_MPI(MPI_Put(one, 4, MPI_INT, 0, addr, 4, MPI_INT, win));   /* warm the region cache */
    TU_MPI(MPI_Win_flush(0, win));
    MPI_Send(NULL, 0, MPI_BYTE, 0, TAG_READY, MPI_COMM_WORLD);
    if (racing) {
        int detached = 0, n = 0;
        while (!detached && n < 1000000) {
            MPI_Iprobe(0, TAG_DETACHED, MPI_COMM_WORLD, &detached, MPI_STATUS_IGNORE);
            if (detached) break;
            at(trial, "accumulating while the target detaches");
            int rc = acc_once(win, addr, variant + n);
            n++;
            at(trial, "MPI_Win_flush while the target detaches");
            if (expect_ok_or_range(rc, "MPI_Accumulate (before the detach was announced)", trial))
                break;   /* already seen as detached */
            if (0 == n % 4 &&
                expect_ok_or_range(MPI_Win_flush(0, win), "MPI_Win_flush", trial))
                break;
        }
    }
    at(trial, "waiting for the detach");
    MPI_Recv(NULL, 0, MPI_BYTE, 0, TAG_DETACHED, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    /* the region is gone now: this one must be reported */
    at(trial, "MPI_Accumulate after the detach");
    range |= expect_ok_or_range(acc_once(win, addr, variant), "MPI_Accumulate (after the detach)",
                                trial);
    at(trial, "MPI_Win_flush after the detach");
    range |= expect_ok_or_range(MPI_Win_flush(0, win), "MPI_Win_flush (after the detach)", trial);
    at(trial, "MPI_Win_unlock after the detach");
    range |= expect_ok_or_range(MPI_Win_unlock(0, win), "MPI_Win_unlock (after the detach)", trial);
    at(trial, "done");
    TU_CHECK(range, "trial %d (%s): an accumulate to detached memory was not reported as "
             "MPI_ERR_RMA_RANGE", trial, variant & 1 ? "MPI_INT vector" : "MPI_SHORT x1000");
    MPI_Send(NULL, 0, MPI_BYTE, 0, TAG_DONE, MPI_COMM_WORLD);
}

int main(int argc, char **argv)
{
    for (int i = 1; i < argc; i++)
        if (0 == strcmp(argv[i], "--no-direct")) tu_tune("direct=0");
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &nprocs);
    int trials = (int) tu_opt_long(argc, argv, "-t", 30);
    signal(SIGALRM, watchdog);
    alarm((unsigned) tu_opt_long(argc, argv, "--timeout", 45));

    MPI_Type_vector(500, 1, 2, MPI_INT, &vec);
    MPI_Type_commit(&vec);
    MPI_Win win;
    TU_MPI(MPI_Win_create_dynamic(MPI_INFO_NULL, MPI_COMM_WORLD, &win));
    MPI_Win_set_errhandler(win, MPI_ERRORS_RETURN);
    char **mem = calloc((size_t) nprocs * (trials + 2), sizeof(char *));

    /* A: detached before, both datatypes */
    for (int v = 0; v < 2; v++) {
        if (0 == rank) target_trial(win, mem + (size_t) v * nprocs, v, 0);
        else origin_trial(win, v, 0);
    }
    /* B: detached while the origins accumulate */
    for (int t = 0; t < trials; t++) {
        if (0 == rank) target_trial(win, mem + (size_t) (t + 2) * nprocs, t + 2, (t * 397) % 3000);
        else origin_trial(win, t + 2, 1);
    }
    MPI_Barrier(MPI_COMM_WORLD);
    TU_MPI(MPI_Win_free(&win));
    for (int i = 0; i < nprocs * (trials + 2); i++) free(mem[i]);
    free(mem);
    MPI_Type_free(&vec);
    alarm(0);
    int rc = tu_finish("acc_reject");
    MPI_Finalize();
    return rc;
}
