/* at_barrier: the synchronization inside MPI_Win_fence, where osc/ucxx does
 * it through the processes' state segments (one node with shared memory: a
 * dissemination barrier, ceil(log2 n) rounds) and where it uses the
 * communicator's barrier (UCX_TLS=tcp,self, several hosts, --mixed).
 *
 * Every epoch one rank, a different one each time, arrives late: it spins
 * for LATE_US microseconds before it writes anything.  Every rank then puts
 * one value into its own slot at every rank (itself included) and, on the
 * shared flavor, also stores one with a plain store through the pointer
 * MPI_Win_shared_query gives.  After the closing fence every rank checks
 * every slot of its window: a fence that lets a process out before the late
 * rank's writes landed, or before they are visible to its loads, fails it.
 * The check sits between two fences, so the next epoch's writes cannot
 * race with it.  The fences vary: plain ones (a barrier each), and a closing
 * MPI_MODE_NOSUCCEED followed by an opening MPI_MODE_NOPRECEDE (neither
 * synchronizes, so the barrier count must stay in step across fences that
 * skip it, and the next puts must wait for their target's fence instead).
 * A second window is fenced in the same epochs, alternately before and
 * after the first, so each window's barriers count on their own.
 *
 * --mixed: odd ranks switch the state-segment barrier off (MCA
 * osc_ucxx_fence_barrier=0, set before MPI_Init).  The processes of a
 * window must agree on one barrier or the first fence hangs (the run times
 * out).  --mt: under MPI_THREAD_MULTIPLE.
 *
 * Environment: AT_EPOCHS (default 300, 40 over TCP), LATE_US (default 20).
 */
#include "testutil.h"
#include <stdint.h>

static int me, nprocs;

static int64_t put_val(int w, int e, int o, int t) { return (((int64_t)e * 64 + o) * 64 + t) * 4 + w + 1; }
static int64_t store_val(int e, int o, int t) { return -put_val(0, e, o, t); }

static void spin_us(double us)
{
    double end = MPI_Wtime() + us * 1e-6;
    while (MPI_Wtime() < end) { }
}

/* Epoch e's fence pair: which asserts close it and open the next one. */
static void fence_asserts(int e, int *closing, int *opening)
{
    int skip = (e % 4 == 3);   /* NOSUCCEED + NOPRECEDE: no barrier at all */
    *closing = skip ? MPI_MODE_NOSUCCEED : 0;
    *opening = skip ? MPI_MODE_NOPRECEDE : 0;
}

static void run_flavor(int flavor, int epochs, double late_us)
{
    tu_win_t w[2];
    int64_t **peer = calloc(nprocs, sizeof(int64_t *));
    int64_t *val = malloc(2 * nprocs * sizeof(int64_t));
    MPI_Aint slots = 2 * nprocs;   /* [0, n): puts; [n, 2n): stores (shared flavor) */
    int shared = (TU_ALLOC_SHARED == flavor), closing, opening;

    tu_win_create(flavor, slots * sizeof(int64_t), sizeof(int64_t), MPI_INFO_NULL,
                  MPI_COMM_WORLD, &w[0]);
    if (MPI_WIN_NULL == w[0].win) {   /* no shared window here */
        free(peer);
        free(val);
        return;
    }
    tu_win_create(TU_ALLOC_SHARED == flavor ? TU_ALLOCATE : flavor, slots * sizeof(int64_t),
                  sizeof(int64_t), MPI_INFO_NULL, MPI_COMM_WORLD, &w[1]);
    for (int t = 0; shared && t < nprocs; t++) {
        MPI_Aint size;
        int unit;
        TU_MPI(MPI_Win_shared_query(w[0].win, t, &size, &unit, &peer[t]));
    }

    for (int k = 0; k < 2; k++) TU_MPI(MPI_Win_fence(MPI_MODE_NOPRECEDE, w[k].win));
    for (int e = 0; e < epochs; e++) {
        if (me == e % nprocs) spin_us(late_us);
        for (int t = 0; t < nprocs; t++) {
            for (int k = 0; k < 2; k++) {
                val[k * nprocs + t] = put_val(k, e, me, t);
                TU_MPI(MPI_Put(&val[k * nprocs + t], 1, MPI_INT64_T, t, tu_disp(&w[k], t, me), 1,
                               MPI_INT64_T, w[k].win));
            }
            if (shared) {
                ((volatile int64_t *) peer[t])[nprocs + me] = store_val(e, me, t);
            }
        }
        fence_asserts(e, &closing, &opening);
        for (int i = 0; i < 2; i++) {
            int k = (e & 1) ? 1 - i : i;
            TU_MPI(MPI_Win_fence(closing, w[k].win));
        }
        for (int o = 0; o < nprocs; o++) {
            for (int k = 0; k < 2; k++) {
                int64_t got = ((volatile int64_t *) w[k].base)[o];
                TU_CHECK(got == put_val(k, e, o, me), "%s window %d epoch %d: slot of rank %d "
                         "holds %lld, want %lld (late rank %d)", tu_flavor_names[flavor], k, e,
                         o, (long long) got, (long long) put_val(k, e, o, me), e % nprocs);
            }
            if (shared) {
                int64_t got = ((volatile int64_t *) w[0].base)[nprocs + o];
                TU_CHECK(got == store_val(e, o, me), "shared epoch %d: store of rank %d reads "
                         "%lld, want %lld", e, o, (long long) got,
                         (long long) store_val(e, o, me));
            }
        }
        for (int i = 0; i < 2; i++) {
            int k = (e & 1) ? i : 1 - i;
            TU_MPI(MPI_Win_fence(opening, w[k].win));
        }
    }
    for (int k = 0; k < 2; k++) {
        TU_MPI(MPI_Win_fence(MPI_MODE_NOSUCCEED, w[k].win));
        tu_win_free(&w[k]);
    }
    free(peer);
    free(val);
}

int main(int argc, char **argv)
{
    int mixed = 0, epochs;
    double late_us;
    const char *wrank = getenv("OMPI_COMM_WORLD_RANK");

    for (int i = 1; i < argc; i++) {
        if (0 == strcmp(argv[i], "--mixed")) {
            mixed = 1;
            argv[i] = "";   /* (ours, not tu_parse_args') */
        }
    }
    if (mixed && NULL != wrank && atoi(wrank) % 2 == 1) {
        tu_tune("fence_barrier=0");
    }
    for (int i = 1; i < argc; i++) {
        if ('\0' != argv[i][0]) tu_parse_args(2, (char *[]) { argv[0], argv[i] });
    }
    tu_init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &me);
    MPI_Comm_size(MPI_COMM_WORLD, &nprocs);
    if (mixed && NULL == wrank) {
        TU_CHECK(0, "--mixed needs OMPI_COMM_WORLD_RANK (Open MPI's mpirun)");
    }
    epochs = tu_env_int("AT_EPOCHS", tu_slow_transport() ? 40 : 300);
    late_us = tu_env_int("LATE_US", 20);

    for (int flavor = 0; flavor < TU_NFLAVORS_ALL; flavor++) {
        if (tu_flavor_or_all(flavor)) run_flavor(flavor, epochs, late_us);
    }
    int rc = tu_finish("at_barrier");
    MPI_Finalize();
    return rc;
}
