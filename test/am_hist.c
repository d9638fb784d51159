/* am_hist (design T4; S11, S12): distributed histogram.  Every rank bins NV
 * values into every other rank's histogram (NB int bins in the window) with
 * one AM per target of 1-int segments and no output (co = 0, M = 0).
 *   default mode: the handler does a plain read-modify-write (with a short
 *     delay between read and write, to widen any overlap): totals are exact
 *     only if invocations at one target never overlap (S11), wherever they
 *     run (target CPU or origin computation);
 *   MPIX_MODE_CONCURRENT_AM (asserted with MPIX_Win_am_epoch_assert right
 *     after the epoch opens): a second op whose handler uses __atomic
 *     fetch-add; totals again exact (S12).
 * For each window flavor and epoch kind (lock exclusive, lock shared on all
 * targets, lock_all, fence, PSCW), each target compares every bin with the
 * count it computes from the origins' value generator.  Also:
 * MPIX_Win_am_epoch_assert outside an epoch -> MPI_ERR_RMA_SYNC, with an
 * unknown bit inside one -> MPI_ERR_ASSERT (S12). */
#include "mpix_ucxx.h"
#include "testutil.h"

#define NB 8
#define PDISP 4            /* bins start at int 4 of the window */
#define WINN (PDISP + NB + 4)
#define GUARD 0x600df00d

static int rank, nprocs, nv;

static int value(int origin, int target, int round, int j)
{
    unsigned x = (unsigned) (j + 1) * 2654435761u ^ (unsigned) (origin * 7 + target * 131 + round * 1013) * 40503u;
    x ^= x >> 15;
    return (int) (x % NB);
}

static int hist_plain(const void *input_addr, int input_segment_count,
                      MPI_Datatype input_segment_datatype, void *persistent_addr,
                      int persistent_count, MPI_Datatype persistent_datatype, void *output_addr,
                      int output_segment_count, MPI_Datatype output_segment_datatype,
                      int num_segments, int segment_offset, void *extra_state)
{
    const int *in = input_addr;
    volatile int *h = persistent_addr;
    (void) input_segment_datatype; (void) persistent_datatype; (void) output_segment_datatype;
    (void) output_addr; (void) segment_offset; (void) extra_state;
    if (1 != input_segment_count || 0 != output_segment_count || NB != persistent_count) {
        return MPI_ERR_ARG;
    }
    for (int k = 0; k < num_segments; k++) {
        int b = in[k];
        if (b < 0 || b >= NB) return MPI_ERR_ARG;
        int v = h[b];
        for (volatile int d = 0; d < 20; d++) ;   /* widen the read-write window */
        h[b] = v + 1;
    }
    return MPI_SUCCESS;
}

static int hist_atomic(const void *input_addr, int input_segment_count,
                       MPI_Datatype input_segment_datatype, void *persistent_addr,
                       int persistent_count, MPI_Datatype persistent_datatype, void *output_addr,
                       int output_segment_count, MPI_Datatype output_segment_datatype,
                       int num_segments, int segment_offset, void *extra_state)
{
    const int *in = input_addr;
    int *h = persistent_addr;
    (void) input_segment_datatype; (void) persistent_datatype; (void) output_segment_datatype;
    (void) output_addr; (void) segment_offset; (void) extra_state;
    if (1 != input_segment_count || 0 != output_segment_count || NB != persistent_count) {
        return MPI_ERR_ARG;
    }
    for (int k = 0; k < num_segments; k++) {
        int b = in[k];
        if (b < 0 || b >= NB) return MPI_ERR_ARG;
        __atomic_fetch_add(&h[b], 1, __ATOMIC_RELAXED);
    }
    return MPI_SUCCESS;
}

int main(int argc, char **argv)
{
    int *targets, ntg = 0, round = 0;
    int *in;
    char where[160];

    tu_am_start(&argc, &argv, "am_hist", 45, &rank, &nprocs);
    nv = tu_slow_transport() ? 1000 : 3000;
    targets = malloc(nprocs * sizeof(int));
    for (int t = 0; t < nprocs; t++) if (t != rank) targets[ntg++] = t;
    in = malloc((size_t) nprocs * nv * sizeof(int));

    for (int f = 0; f < TU_NFLAVORS; f++) {
        tu_win_t w;
        int *base;
        MPIX_Am_op plain, atomic;
        void *ubuf;
        if (!tu_flavor_enabled(f)) continue;
        tu_win_create(f, WINN * sizeof(int), sizeof(int), MPI_INFO_NULL, MPI_COMM_WORLD, &w);
        base = w.base;
        plain = tu_am_op(hist_plain, NULL, 300, w.win);
        atomic = tu_am_op(hist_atomic, NULL, 301, w.win);
        ubuf = tu_am_attach(w.win, 4096);   /* seg_need 64 */
        {
            int cls = tu_err_class(MPIX_Win_am_epoch_assert(MPIX_MODE_CONCURRENT_AM, w.win));
            TU_CHECK(MPI_ERR_RMA_SYNC == cls, "%s: MPIX_Win_am_epoch_assert outside an epoch "
                     "returned %s (%d)", tu_flavor_names[f], tu_err_class_name(cls), cls);
        }

        for (int conc = 0; conc < 2; conc++) {
            for (int ep = 0; ep < TU_NEPOCHS; ep++, round++) {
                snprintf(where, sizeof(where), "%s window, %s epoch, %s", tu_flavor_names[f],
                         tu_epoch_names[ep], conc ? "MPIX_MODE_CONCURRENT_AM" : "default mode");
                tu_where = where;
                for (int j = 0; j < WINN; j++) base[j] = GUARD;
                for (int b = 0; b < NB; b++) base[PDISP + b] = 0;
                for (int i = 0; i < ntg; i++)
                    for (int j = 0; j < nv; j++)
                        in[(size_t) i * nv + j] = value(rank, targets[i], round, j);
                MPI_Barrier(MPI_COMM_WORLD);
                TU_AM(tu_am_epoch_open(ep, w.win, targets, ntg, targets, ntg));
                if (conc) {
                    TU_AM(MPIX_Win_am_epoch_assert(MPIX_MODE_CONCURRENT_AM, w.win));
                    if (0 == ep) {
                        int cls = tu_err_class(MPIX_Win_am_epoch_assert(1 << 20, w.win));
                        TU_CHECK(MPI_ERR_ASSERT == cls, "%s: an unknown assert bit gave %s (%d)",
                                 where, tu_err_class_name(cls), cls);
                    }
                }
                for (int i = 0; i < ntg; i++) {
                    TU_AM(MPIX_Am(in + (size_t) i * nv, 1, MPI_INT, NULL, 0, MPI_INT, nv,
                                  targets[i], MPI_INT, tu_disp(&w, targets[i], PDISP), NB,
                                  MPI_INT, MPI_INT, conc ? atomic : plain, w.win));
                }
                TU_AM(tu_am_epoch_close(ep, w.win, targets, ntg, targets, ntg));
                MPI_Barrier(MPI_COMM_WORLD);
                {
                    int want[NB] = { 0 }, total = 0;
                    for (int o = 0; o < nprocs; o++) {
                        if (o == rank) continue;
                        for (int j = 0; j < nv; j++) want[value(o, rank, round, j)]++;
                    }
                    for (int b = 0; b < NB; b++) {
                        total += base[PDISP + b];
                        TU_CHECK(base[PDISP + b] == want[b], "%s: bin %d holds %d, expected %d",
                                 where, b, base[PDISP + b], want[b]);
                    }
                    TU_CHECK(total == (nprocs - 1) * nv, "%s: %d values binned, expected %d",
                             where, total, (nprocs - 1) * nv);
                    for (int j = 0; j < WINN; j++) {
                        if ((j < PDISP || j >= PDISP + NB) && base[j] != GUARD) {
                            TU_CHECK(0, "%s: guard int %d overwritten (%d)", where, j, base[j]);
                        }
                    }
                }
                MPI_Barrier(MPI_COMM_WORLD);
            }
        }
        tu_where = "teardown";
        tu_am_op_done(&plain, w.win);
        tu_am_op_done(&atomic, w.win);
        TU_AM(MPIX_Am_win_buffer_detach(ubuf, w.win));
        free(ubuf);
        tu_win_free(&w);
    }
    alarm(0);
    free(in); free(targets);
    {
        int rc = tu_finish("am_hist");
        MPI_Finalize();
        return rc;
    }
}
