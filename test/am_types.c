/* am_types: a target that makes and frees datatypes while active messages
 * with derived target types arrive.
 *
 * The target builds an AM's derived types from the description the origin
 * sends, and frees them when the AM is done.  Below MPI_THREAD_MULTIPLE
 * Open MPI takes no lock on its datatype tables, so osc/ucxx's progress
 * thread, which serves AMs while the application computes, must leave that
 * to the application's thread: built on the progress thread, two types
 * could get one Fortran handle, or the table moved under either thread.
 *
 * Rank 0 is the target of every other rank.  Each origin issues NAM AMs of
 * one segment in a shared lock epoch (flushed every 50): 10 ints in, target
 * input type vector(2, 5, 10, MPI_INT), 10 ints out, out[q] = in[q] + the
 * persistent int + q.  Meanwhile rank 0, outside MPI's progress, makes and
 * frees vector types for a second, 32 alive at a time, and checks that each
 * one's Fortran handle names it and its size.  Checks: every output; the
 * target's handles; below MPI_THREAD_MULTIPLE, that no AM ran while rank 0
 * was making types (its types cannot have been built then: a handler runs
 * after them).  Run with the progress thread (--progress-wait; the default
 * across hosts) and handlers at the target (--no-origin-compute).
 */
#include "mpix_ucxx.h"
#include "testutil.h"

#define NAM 2000
#define NIN 10
#define LIVE 32
#define PVAL 1000

static int tu_level;
static volatile int churning;     /* rank 0 is outside MPI's progress */
static volatile int ran_churning; /* handlers that ran meanwhile */

static int add_fn(const void *input_addr, int input_segment_count,
                  MPI_Datatype input_segment_datatype, void *persistent_addr,
                  int persistent_count, MPI_Datatype persistent_datatype, void *output_addr,
                  int output_segment_count, MPI_Datatype output_segment_datatype,
                  int num_segments, int segment_offset, void *extra_state)
{
    const int *in = input_addr, *p = persistent_addr;
    int *out = output_addr;
    (void) input_segment_datatype; (void) persistent_datatype; (void) output_segment_datatype;
    (void) extra_state; (void) segment_offset;
    if (1 != input_segment_count || NIN != output_segment_count || 1 != persistent_count ||
        1 != num_segments) {
        return MPI_ERR_ARG;
    }
    for (int q = 0; q < NIN; q++) out[q] = in[q / 5 * 10 + q % 5] + *p + q;
    if (churning) ran_churning++;
    return MPI_SUCCESS;
}

/* Rank 0: types made and freed outside MPI's progress for `seconds`. */
static void churn_types(double seconds)
{
    MPI_Datatype live[LIVE];
    int n = 0, made = 0;
    double t0 = MPI_Wtime();

    for (int i = 0; i < LIVE; i++) live[i] = MPI_DATATYPE_NULL;
    churning = 1;
    while (MPI_Wtime() - t0 < seconds) {
        int k = made % LIVE, blocks = 1 + made % 7, size;
        if (MPI_DATATYPE_NULL != live[k]) MPI_Type_free(&live[k]);
        TU_MPI(MPI_Type_vector(blocks, 3, 5, MPI_INT, &live[k]));
        TU_MPI(MPI_Type_commit(&live[k]));
        made++;
        for (int i = 0; i < LIVE; i++) {
            MPI_Fint f;
            if (MPI_DATATYPE_NULL == live[i]) continue;
            f = MPI_Type_c2f(live[i]);
            if (MPI_Type_f2c(f) != live[i] && n++ < 3) {
                TU_CHECK(0, "type %d (made %d): its Fortran handle %d names another type", i,
                         made, (int) f);
            }
        }
        MPI_Type_size(live[k], &size);
        TU_CHECK(size == blocks * 3 * (int) sizeof(int), "type made %d: size %d, expected %d",
                 made, size, blocks * 3 * (int) sizeof(int));
    }
    churning = 0;
    for (int i = 0; i < LIVE; i++) {
        if (MPI_DATATYPE_NULL != live[i]) MPI_Type_free(&live[i]);
    }
    printf("am_types: %d types made, %d AMs ran meanwhile\n", made, ran_churning);
    TU_CHECK(0 == ran_churning || tu_level >= MPI_THREAD_MULTIPLE,
             "%d AMs with derived target types ran while the application made types", ran_churning);
    TU_CHECK(0 == n, "%d handles named another type (%d types made)", n, made);
}

int main(int argc, char **argv)
{
    int rank, nprocs, target = 0;
    static int in[NAM][NIN], out[NAM][NIN];
    MPI_Datatype vec;

    tu_am_start(&argc, &argv, "am_types", 60, &rank, &nprocs);
    MPI_Query_thread(&tu_level);
    MPI_Type_vector(2, 5, 10, MPI_INT, &vec);
    MPI_Type_commit(&vec);
    for (int f = 0; f < TU_NFLAVORS; f++) {
        tu_win_t w;
        MPIX_Am_op op;
        void *ubuf;
        if (!tu_flavor_enabled(f)) continue;
        tu_win_create(f, 64, sizeof(int), MPI_INFO_NULL, MPI_COMM_WORLD, &w);
        ((int *) w.base)[0] = PVAL + rank;
        op = tu_am_op(add_fn, NULL, 7, w.win);
        ubuf = tu_am_attach(w.win, 8192);
        MPI_Barrier(MPI_COMM_WORLD);
        if (0 == rank) {
            churn_types(1.0);
        } else {
            for (int a = 0; a < NAM; a++) {
                for (int j = 0; j < NIN; j++) in[a][j] = a * 100 + j + rank * 1000000;
                memset(out[a], 0, sizeof(out[a]));
            }
            TU_MPI(MPI_Win_lock(MPI_LOCK_SHARED, target, 0, w.win));
            for (int a = 0; a < NAM; a++) {
                TU_AM(MPIX_Am(in[a], NIN, MPI_INT, out[a], NIN, MPI_INT, 1, target, vec,
                              tu_disp(&w, target, 0), 1, MPI_INT, MPI_INT, op, w.win));
                if (a % 50 == 49) TU_MPI(MPI_Win_flush(target, w.win));
            }
            TU_MPI(MPI_Win_unlock(target, w.win));
            for (int a = 0, bad = 0; a < NAM; a++) {
                for (int q = 0; q < NIN; q++) {
                    int want = in[a][q] + PVAL + q;
                    if (out[a][q] != want && bad++ < 3) {
                        TU_CHECK(0, "%s window: AM %d output %d is %d, expected %d",
                                 tu_flavor_names[f], a, q, out[a][q], want);
                    }
                }
            }
        }
        MPI_Barrier(MPI_COMM_WORLD);
        TU_AM(MPIX_Am_win_buffer_detach(ubuf, w.win));
        free(ubuf);
        tu_am_op_done(&op, w.win);
        tu_win_free(&w);
    }
    alarm(0);
    MPI_Type_free(&vec);
    {
        int rc = tu_finish("am_types");
        MPI_Finalize();
        return rc;
    }
}
