/* The component's progress thread (MCA osc_ucxx_progress_thread=1) with a
 * single-threaded application (plain MPI_Init, MPI_THREAD_SINGLE): the thread
 * serves peers' active messages and emulated operations concurrently with the
 * application's own MPI calls, so everything both touch must stay consistent
 * although the MPI library itself runs without thread support.
 *
 * Usage: progress_single [--progress-thread] [--spin] [--multiple] [-i iters]
 *                        [-c rounds] [--timeout s]
 *   --progress-thread  set OMPI_MCA_osc_ucxx_progress_thread=1 (before MPI_Init),
 *                      the thread polling (internal setting progress_wait=0)
 *   --spin             and never napping (progress_interval=0)
 *   --multiple         MPI_Init_thread(MPI_THREAD_MULTIPLE) instead of MPI_Init
 *                      (the application still uses one thread)
 *   -c                 rounds of C (default iters / 4 + 2)
 *   --timeout          seconds before the watchdog fails the run (default 120)
 *   -i                 iterations (default 400 / nprocs; 120 / nprocs under
 *                      UCX_TLS=tcp)
 * For each window flavor (create, allocate, dynamic):
 *   A. lock_all: every rank sends to every rank (itself included), per
 *      iteration: MPI_Accumulate(MPI_SUM) of NS shorts and of NI ints, then
 *      MPI_Get_accumulate(MPI_SUM) of the NI ints, which must fetch exactly the
 *      sum of the earlier iterations' and this iteration's additions
 *      (accumulates from one origin are ordered), and NSMALL accumulates of
 *      2 shorts each; MPI_Win_flush_all after each iteration.  Final
 *      contents checked exactly.
 *   B. PSCW ring: each epoch a rank exposes its window to its left neighbour
 *      and accesses its right neighbour (MPI_Win_post/start/complete/wait),
 *      accumulating NS shorts and NI ints; checked after each MPI_Win_wait
 *      and at the end.
 *   C. Window churn: a short-lived window is created, written by
 *      MPI_Accumulate of shorts and ints in a fence epoch, checked and freed,
 *      repeatedly, while the window of A/B is still alive and receiving
 *      accumulates in lock_all epochs.
 * A watchdog turns a hang into a failure.  With --multiple the locks are
 * real, and C checks that the thread serving a new window's first messages
 * and the application resolving its first accesses to the same window never
 * wait for each other. */
#include "testutil.h"
#include <signal.h>
#include <stdint.h>
#include <unistd.h>

#define NS 2000    /* shorts per accumulate (4000 bytes: all stripes) */
#define NI 1000    /* ints per accumulate */

static int rank, nprocs, iters, churn_rounds;

#define NSMALL 32  /* small accumulates (2 shorts) per target per iteration in A */

/* window layout, per origin o: NS shorts, NI ints, NSMALL pairs of shorts */
#define SLOT_BYTES (NS * 2 + NI * 4 + NSMALL * 4)
static inline MPI_Aint s_off(int o) { return (MPI_Aint) o * SLOT_BYTES; }
static inline MPI_Aint i_off(int o) { return (MPI_Aint) o * SLOT_BYTES + NS * 2; }
static inline MPI_Aint sm_off(int o) { return (MPI_Aint) o * SLOT_BYTES + NS * 2 + NI * 4; }

static int check_slot(const char *what, const char *fl, const char *base, int o, short sexp,
                      int iexp)
{
    const short *s = (const short *) (base + s_off(o));
    const int *v = (const int *) (base + i_off(o));
    int bs = 0, bi = 0;
    for (int j = 0; j < NS; j++) bs += s[j] != sexp;
    for (int j = 0; j < NI; j++) bi += v[j] != iexp;
    TU_CHECK(0 == bs && 0 == bi,
             "%s (%s): slot of origin %d at rank %d: %d wrong shorts (%d, expected %d), %d wrong "
             "ints (%d, expected %d)", what, fl, o, rank, bs, s[0], sexp, bi, v[0], iexp);
    return bs + bi;
}

static void phase_a(tu_win_t *w, const char *fl, short *sv, int *iv, int *res)
{
    const int add = rank + 1;
    for (int j = 0; j < NS; j++) sv[j] = (short) add;
    for (int j = 0; j < NI; j++) iv[j] = add;
    memset(w->base, 0, w->size);
    MPI_Barrier(MPI_COMM_WORLD);
    TU_MPI(MPI_Win_lock_all(0, w->win));
    int badfetch = 0;
    for (int it = 0; it < iters; it++) {
        for (int k = 0; k < nprocs; k++) {
            int t = (rank + k) % nprocs;
            TU_MPI(MPI_Accumulate(sv, NS, MPI_SHORT, t, tu_disp(w, t, s_off(rank)), NS, MPI_SHORT,
                                  MPI_SUM, w->win));
            TU_MPI(MPI_Accumulate(iv, NI, MPI_INT, t, tu_disp(w, t, i_off(rank)), NI, MPI_INT,
                                  MPI_SUM, w->win));
            TU_MPI(MPI_Get_accumulate(iv, NI, MPI_INT, res + (size_t) t * NI, NI, MPI_INT, t,
                                      tu_disp(w, t, i_off(rank)), NI, MPI_INT, MPI_SUM, w->win));
            /* and many small ones (one message each where they travel as messages) */
            for (int j = 0; j < NSMALL; j++)
                TU_MPI(MPI_Accumulate(sv, 2, MPI_SHORT, t, tu_disp(w, t, sm_off(rank) + 4 * j), 2,
                                      MPI_SHORT, MPI_SUM, w->win));
        }
        /* get_accumulate of iteration `it` saw 2 * it + 1 additions */
        TU_MPI(MPI_Win_flush_all(w->win));
        for (int t = 0; t < nprocs; t++)
            for (int j = 0; j < NI; j++)
                if (res[(size_t) t * NI + j] != (2 * it + 1) * add) {
                    if (badfetch++ < 3)
                        TU_CHECK(0, "A (%s): iteration %d, target %d: get_accumulate fetched %d "
                                 "in element %d, expected %d", fl, it, t,
                                 res[(size_t) t * NI + j], j, (2 * it + 1) * add);
                    else
                        tu_errors++;
                    break;
                }
    }
    TU_MPI(MPI_Win_unlock_all(w->win));
    MPI_Barrier(MPI_COMM_WORLD);
    TU_MPI(MPI_Win_lock(MPI_LOCK_SHARED, rank, 0, w->win));
    for (int o = 0; o < nprocs; o++) {
        check_slot("A", fl, w->base, o, (short) (iters * (o + 1)), 2 * iters * (o + 1));
        const short *sm = (const short *) ((char *) w->base + sm_off(o));
        int bad = 0;
        for (int j = 0; j < 2 * NSMALL; j++) bad += sm[j] != (short) (iters * (o + 1));
        TU_CHECK(0 == bad, "A (%s): small accumulates of %d at rank %d: %d wrong shorts (%d, "
                 "expected %d)", fl, o, rank, bad, sm[0], (short) (iters * (o + 1)));
    }
    TU_MPI(MPI_Win_unlock(rank, w->win));
    MPI_Barrier(MPI_COMM_WORLD);
}

static void phase_b(tu_win_t *w, const char *fl, short *sv, int *iv)
{
    int left = (rank + nprocs - 1) % nprocs, right = (rank + 1) % nprocs;
    MPI_Group world, lg, rg;
    MPI_Comm_group(MPI_COMM_WORLD, &world);
    MPI_Group_incl(world, 1, &left, &lg);
    MPI_Group_incl(world, 1, &right, &rg);
    for (int j = 0; j < NS; j++) sv[j] = (short) (rank + 1);
    for (int j = 0; j < NI; j++) iv[j] = rank + 1;
    memset(w->base, 0, w->size);
    MPI_Barrier(MPI_COMM_WORLD);
    int epochs = iters;
    for (int e = 0; e < epochs; e++) {
        TU_MPI(MPI_Win_post(lg, 0, w->win));
        TU_MPI(MPI_Win_start(rg, 0, w->win));
        TU_MPI(MPI_Accumulate(sv, NS, MPI_SHORT, right, tu_disp(w, right, s_off(rank)), NS,
                              MPI_SHORT, MPI_SUM, w->win));
        TU_MPI(MPI_Accumulate(iv, NI, MPI_INT, right, tu_disp(w, right, i_off(rank)), NI, MPI_INT,
                              MPI_SUM, w->win));
        TU_MPI(MPI_Win_complete(w->win));
        TU_MPI(MPI_Win_wait(w->win));
        /* after the wait the left neighbour's additions of this epoch are here */
        const short *s = (const short *) ((char *) w->base + s_off(left));
        const int *v = (const int *) ((char *) w->base + i_off(left));
        if (s[NS - 1] != (short) ((e + 1) * (left + 1)) || v[NI - 1] != (e + 1) * (left + 1)) {
            TU_CHECK(0, "B (%s): epoch %d: after MPI_Win_wait the slot of %d holds %d / %d, "
                     "expected %d", fl, e, left, s[NS - 1], v[NI - 1], (e + 1) * (left + 1));
            break;
        }
    }
    MPI_Barrier(MPI_COMM_WORLD);
    check_slot("B", fl, w->base, left, (short) (epochs * (left + 1)), epochs * (left + 1));
    MPI_Group_free(&lg);
    MPI_Group_free(&rg);
    MPI_Group_free(&world);
    MPI_Barrier(MPI_COMM_WORLD);
}

static void phase_c(tu_win_t *w, int flavor, const char *fl, short *sv, int *iv)
{
    const int add = rank + 1;
    int rounds = churn_rounds > 0 ? churn_rounds : iters / 4 + 2;
    for (int j = 0; j < NS; j++) sv[j] = (short) add;
    for (int j = 0; j < NI; j++) iv[j] = add;
    memset(w->base, 0, w->size);
    MPI_Barrier(MPI_COMM_WORLD);
    TU_MPI(MPI_Win_lock_all(0, w->win));
    for (int r = 0; r < rounds; r++) {
        tu_win_t c;
        int right = (rank + 1) % nprocs;
        tu_win_create(flavor, (MPI_Aint) nprocs * SLOT_BYTES, 1, MPI_INFO_NULL, MPI_COMM_WORLD,
                      &c);
        TU_MPI(MPI_Win_fence(0, c.win));
        /* traffic on the long-lived window while the short-lived one exists */
        TU_MPI(MPI_Accumulate(sv, NS, MPI_SHORT, right, tu_disp(w, right, s_off(rank)), NS,
                              MPI_SHORT, MPI_SUM, w->win));
        for (int t = 0; t < nprocs; t++) {
            TU_MPI(MPI_Accumulate(sv, NS, MPI_SHORT, t, tu_disp(&c, t, s_off(rank)), NS, MPI_SHORT,
                                  MPI_SUM, c.win));
            TU_MPI(MPI_Accumulate(iv, NI, MPI_INT, t, tu_disp(&c, t, i_off(rank)), NI, MPI_INT,
                                  MPI_SUM, c.win));
        }
        TU_MPI(MPI_Win_fence(0, c.win));
        int bad = 0;
        for (int o = 0; o < nprocs; o++)
            bad += check_slot("C (short-lived window)", fl, c.base, o, (short) (o + 1), o + 1);
        TU_MPI(MPI_Win_fence(0, c.win));
        tu_win_free(&c);
        if (bad) break;
    }
    TU_MPI(MPI_Win_unlock_all(w->win));
    MPI_Barrier(MPI_COMM_WORLD);
    int left = (rank + nprocs - 1) % nprocs;
    const short *s = (const short *) ((char *) w->base + s_off(left));
    int bs = 0;
    for (int j = 0; j < NS; j++) bs += s[j] != (short) (rounds * (left + 1));
    TU_CHECK(0 == bs, "C (%s): long-lived window: %d wrong shorts from %d (%d, expected %d)", fl,
             bs, left, s[0], (short) (rounds * (left + 1)));
    MPI_Barrier(MPI_COMM_WORLD);
}

int main(int argc, char **argv)
{
    if (tu_opt_flag(argc, argv, "--progress-thread")) {
        setenv("OMPI_MCA_osc_ucxx_progress_thread", "1", 1);
        tu_tune("progress_wait=0");
    }
    if (tu_opt_flag(argc, argv, "--spin")) tu_tune("progress_interval=0");
    if (tu_opt_flag(argc, argv, "--multiple")) {
        int provided;
        MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
    } else {
        MPI_Init(&argc, &argv);
    }
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &nprocs);
    iters = (int) tu_opt_long(argc, argv, "-i", (tu_slow_transport() ? 120 : 400) / nprocs);
    churn_rounds = (int) tu_opt_long(argc, argv, "-c", 0);
    tu_where = "setup";
    tu_watchdog("progress_single", (unsigned) tu_opt_long(argc, argv, "--timeout", 120));

    short *sv = malloc(NS * sizeof(short));
    int *iv = malloc(NI * sizeof(int)), *res = malloc((size_t) nprocs * NI * sizeof(int));
    for (int flavor = 0; flavor < TU_NFLAVORS; flavor++) {
        if (!tu_flavor_enabled(flavor)) continue;
        const char *fl = tu_flavor_names[flavor];
        tu_win_t w;
        tu_win_create(flavor, (MPI_Aint) nprocs * SLOT_BYTES, 1, MPI_INFO_NULL, MPI_COMM_WORLD, &w);
        tu_where = "A (lock_all accumulates)";
        phase_a(&w, fl, sv, iv, res);
        tu_where = "B (PSCW)";
        phase_b(&w, fl, sv, iv);
        tu_where = "C (window churn)";
        phase_c(&w, flavor, fl, sv, iv);
        tu_where = "between flavors";
        tu_win_free(&w);
        if (0 == rank) printf("progress_single: %s done\n", fl);
    }
    free(sv);
    free(iv);
    free(res);
    alarm(0);
    int rc = tu_finish("progress_single");
    MPI_Finalize();
    return rc;
}
