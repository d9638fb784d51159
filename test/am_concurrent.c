/* am_concurrent (design T7; S11, S12, S26): handler exclusion.  All ranks
 * (rank 0 included: a self AM) send AMs to rank 0, pipeline unit 2 (many
 * invocations).  Counters live in rank 0's window, the persistent region of
 * every AM, updated with __atomic builtins (handlers may run in any process
 * that maps the window: origin computation):
 *   [0] invocations in flight   [1] unflagged invocations in flight
 *   [2] violations (default)    [3] violations (flagged vs unflagged)
 *   [4] segments executed       [5] most flagged invocations seen at once
 *   [6] rank 0's pid            [7] invocations run by rank 0's process
 *   [8] invocations in all
 * An unflagged handler (op U) counts itself in [0] and [1], spins a few
 * microseconds, and records a violation if any other invocation was in flight
 * when it started or ends (S11).  A flagged handler (op F, issued after
 * MPIX_Win_am_epoch_assert(MPIX_MODE_CONCURRENT_AM)) records a violation if
 * an unflagged one was in flight (S12) and the largest overlap of flagged ones
 * (printed, not gated: overlap is allowed, not promised).  Rounds, for each
 * window flavor, with the epoch kind rotating (lock shared, lock_all, fence,
 * PSCW):
 *   1. default: every rank uses op U;   2. mixed: odd ranks flagged (op F),
 *   even ranks not;   3. all flagged.
 * Rank 0 checks: violations 0, every segment executed exactly once (count),
 * nothing in flight at the end; with --no-origin-compute every invocation ran
 * in rank 0's process (S26), otherwise how many did is printed.  Run with
 * --progress-thread too (S10/S11: target-side execution on the thread while
 * origins compute). */
#include <unistd.h>
#include <stdint.h>
#include "mpix_ucxx.h"
#include "testutil.h"

#define NA 20            /* AMs per origin and round */
#define NS 16            /* segments per AM */
#define NCNT 10
#define PAGE 4096
#define WINB (3 * PAGE)  /* window bytes */
#define MAGIC 0x3c3c

static int rank, nprocs, no_origin_compute, coff;

static void count_where(int *c)
{
    __atomic_fetch_add(&c[8], 1, __ATOMIC_SEQ_CST);
    if ((int) getpid() == c[6]) __atomic_fetch_add(&c[7], 1, __ATOMIC_SEQ_CST);
}

static void spin(const int *c)
{
    for (int i = 0; i < 200; i++) (void) __atomic_load_n(c, __ATOMIC_RELAXED);
}

static int check_input(const int *in, int n, int off)
{
    for (int k = 0; k < n; k++) if (in[k] != ((off + k) ^ MAGIC)) return 0;
    return 1;
}

static int unflagged_fn(const void *input_addr, int input_segment_count,
                        MPI_Datatype input_segment_datatype, void *persistent_addr,
                        int persistent_count, MPI_Datatype persistent_datatype, void *output_addr,
                        int output_segment_count, MPI_Datatype output_segment_datatype,
                        int num_segments, int segment_offset, void *extra_state)
{
    int *c = persistent_addr;
    int all, unf;
    (void) input_segment_datatype; (void) persistent_datatype; (void) output_segment_datatype;
    (void) output_addr; (void) extra_state;
    if (1 != input_segment_count || 0 != output_segment_count || NCNT != persistent_count ||
        !check_input(input_addr, num_segments, segment_offset)) {
        return MPI_ERR_ARG;
    }
    all = __atomic_add_fetch(&c[0], 1, __ATOMIC_SEQ_CST);
    unf = __atomic_add_fetch(&c[1], 1, __ATOMIC_SEQ_CST);
    if (1 != all || 1 != unf) __atomic_fetch_add(&c[2], 1, __ATOMIC_SEQ_CST);
    count_where(c);
    spin(c);
    if (1 != __atomic_load_n(&c[0], __ATOMIC_SEQ_CST)) __atomic_fetch_add(&c[2], 1, __ATOMIC_SEQ_CST);
    __atomic_fetch_add(&c[4], num_segments, __ATOMIC_SEQ_CST);
    __atomic_fetch_sub(&c[1], 1, __ATOMIC_SEQ_CST);
    __atomic_fetch_sub(&c[0], 1, __ATOMIC_SEQ_CST);
    return MPI_SUCCESS;
}

static int flagged_fn(const void *input_addr, int input_segment_count,
                      MPI_Datatype input_segment_datatype, void *persistent_addr,
                      int persistent_count, MPI_Datatype persistent_datatype, void *output_addr,
                      int output_segment_count, MPI_Datatype output_segment_datatype,
                      int num_segments, int segment_offset, void *extra_state)
{
    int *c = persistent_addr;
    int all, mx;
    (void) input_segment_datatype; (void) persistent_datatype; (void) output_segment_datatype;
    (void) output_addr; (void) extra_state;
    if (1 != input_segment_count || 0 != output_segment_count || NCNT != persistent_count ||
        !check_input(input_addr, num_segments, segment_offset)) {
        return MPI_ERR_ARG;
    }
    all = __atomic_add_fetch(&c[0], 1, __ATOMIC_SEQ_CST);
    if (0 != __atomic_load_n(&c[1], __ATOMIC_SEQ_CST)) __atomic_fetch_add(&c[3], 1, __ATOMIC_SEQ_CST);
    count_where(c);
    mx = __atomic_load_n(&c[5], __ATOMIC_SEQ_CST);
    while (all > mx && !__atomic_compare_exchange_n(&c[5], &mx, all, 0, __ATOMIC_SEQ_CST,
                                                    __ATOMIC_SEQ_CST)) ;
    spin(c);
    if (0 != __atomic_load_n(&c[1], __ATOMIC_SEQ_CST)) __atomic_fetch_add(&c[3], 1, __ATOMIC_SEQ_CST);
    __atomic_fetch_add(&c[4], num_segments, __ATOMIC_SEQ_CST);
    __atomic_fetch_sub(&c[0], 1, __ATOMIC_SEQ_CST);
    return MPI_SUCCESS;
}

int main(int argc, char **argv)
{
    static const int epk[4] = { TU_EP_LOCK_SHARED, TU_EP_LOCK_ALL, TU_EP_FENCE, TU_EP_PSCW };
    static const char *rname[3] = { "default", "mixed", "all flagged" };
    int in[NS], zero = 0, *all_ranks, nround = 0;
    char where[200];

    tu_am_start(&argc, &argv, "am_concurrent", 45, &rank, &nprocs);
    no_origin_compute = tu_opt_flag(argc, argv, "--no-origin-compute");
    for (int k = 0; k < NS; k++) in[k] = k ^ MAGIC;
    all_ranks = malloc(nprocs * sizeof(int));
    for (int r = 0; r < nprocs; r++) all_ranks[r] = r;

    for (int f = 0; f < TU_NFLAVORS; f++) {
        tu_win_t w;
        int *c;
        MPIX_Am_op opu, opf;
        MPI_Info info;
        void *ubuf;
        if (!tu_flavor_enabled(f)) continue;
        info = tu_info_new("am_pipeline_unit", "2", NULL);
        tu_win_create(f, WINB, sizeof(int), info, MPI_COMM_WORLD, &w);
        MPI_Info_free(&info);
        {
            char got[64];
            TU_CHECK(tu_win_info_get(w.win, "am_pipeline_unit", got, sizeof(got)) &&
                     0 == strcmp(got, "2"), "%s: am_pipeline_unit from the creation info reads "
                     "'%s', expected '2'", tu_flavor_names[f], got);
        }
        /* the counters sit on a whole page of rank 0's window */
        coff = (int) ((PAGE - (uintptr_t) w.base % PAGE) % PAGE / sizeof(int));
        MPI_Bcast(&coff, 1, MPI_INT, 0, MPI_COMM_WORLD);
        c = (int *) w.base + coff;
        opu = tu_am_op(unflagged_fn, NULL, 600, w.win);
        opf = tu_am_op(flagged_fn, NULL, 601, w.win);
        ubuf = tu_am_attach(w.win, 4096);
        for (int round = 0; round < 3; round++, nround++) {
            int ep = epk[nround % 4];
            int flagged = 2 == round || (1 == round && (rank & 1));
            snprintf(where, sizeof(where), "%s window, %s epoch, %s round", tu_flavor_names[f],
                     tu_epoch_names[ep], rname[round]);
            tu_where = where;
            if (0 == rank) {
                memset(c, 0, NCNT * sizeof(int));
                c[6] = (int) getpid();
            }
            MPI_Barrier(MPI_COMM_WORLD);
            TU_AM(tu_am_epoch_open(ep, w.win, &zero, 1, all_ranks, 0 == rank ? nprocs : 0));
            if (flagged) TU_AM(MPIX_Win_am_epoch_assert(MPIX_MODE_CONCURRENT_AM, w.win));
            for (int a = 0; a < NA; a++) {
                TU_AM(MPIX_Am(in, 1, MPI_INT, NULL, 0, MPI_INT, NS, 0, MPI_INT,
                              tu_disp(&w, 0, coff), NCNT, MPI_INT, MPI_INT, flagged ? opf : opu,
                              w.win));
            }
            TU_AM(tu_am_epoch_close(ep, w.win, &zero, 1, all_ranks, 0 == rank ? nprocs : 0));
            MPI_Barrier(MPI_COMM_WORLD);
            if (0 == rank) {
                int segs = __atomic_load_n(&c[4], __ATOMIC_SEQ_CST);
                TU_CHECK(0 == c[2], "%s: %d times an unflagged invocation overlapped another "
                         "(S11)", where, c[2]);
                TU_CHECK(0 == c[3], "%s: %d times a flagged invocation overlapped an "
                         "unflagged one (S12)", where, c[3]);
                TU_CHECK(segs == nprocs * NA * NS, "%s: %d segments executed, expected %d",
                         where, segs, nprocs * NA * NS);
                TU_CHECK(0 == c[0] && 0 == c[1], "%s: %d invocations (%d unflagged) still in "
                         "flight after the epoch", where, c[0], c[1]);
                if (no_origin_compute) {
                    TU_CHECK(c[7] == c[8], "%s: with origin computation off, %d of %d "
                             "invocations ran outside the target process (S26)", where,
                             c[8] - c[7], c[8]);
                }
                printf("am_concurrent: %s: %d of %d invocations ran in the target process\n",
                       where, c[7], c[8]);
                if (round > 0) printf("am_concurrent: %s: at most %d flagged invocations at once\n",
                                      where, c[5]);
            }
            MPI_Barrier(MPI_COMM_WORLD);
        }
        tu_where = "teardown";
        tu_am_op_done(&opu, w.win);
        tu_am_op_done(&opf, w.win);
        tu_win_free(&w);
        free(ubuf);
    }
    alarm(0);
    free(all_ranks);
    {
        int rc = tu_finish("am_concurrent");
        MPI_Finalize();
        return rc;
    }
}
