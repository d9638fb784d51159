/* am_self (design T14; S8, S9, S17, S26): AMs to oneself.  Every rank sends
 * AMs to itself only, under each epoch kind (lock exclusive and shared on
 * itself, lock_all, fence, PSCW with the group {self}) and window flavor.
 * The handler is a fetch-and-add: p[s*8 + i] += in[s][i], out[s][i] = the
 * old value (int64).  Per epoch: 3 AMs of 50 segments, one MPIX_Ram of 50,
 * and one AM of 2000 segments (many invocations); the expected results follow
 * from applying them in issue order (S13/S14: same op, overlapping regions).
 * Checked:
 *   - S26: a self AM runs in the calling process, so its output and its
 *     persistent effect are there as soon as MPIX_Am / MPIX_Ram returns;
 *   - after the epoch (or MPI_Wait for the MPIX_Ram): outputs, window memory;
 *   - in lock epochs: after MPI_Win_flush, MPI_Get of the region sees the
 *     AMs' writes (S17). */
#include "mpix_ucxx.h"
#include "testutil.h"
#include <stdint.h>

#define SEGI 8
#define NSEG 50
#define BIGSEG 2000
#define PDISP 2
#define PN (BIGSEG * SEGI)           /* persistent int64s (the big AM covers it all) */
#define WINN (PDISP + PN + 2)
#define REPS 3

static int rank, nprocs;

static int fadd_fn(const void *input_addr, int input_segment_count,
                   MPI_Datatype input_segment_datatype, void *persistent_addr,
                   int persistent_count, MPI_Datatype persistent_datatype, void *output_addr,
                   int output_segment_count, MPI_Datatype output_segment_datatype,
                   int num_segments, int segment_offset, void *extra_state)
{
    const int64_t *in = input_addr;
    int64_t *p = persistent_addr, *out = output_addr;
    (void) input_segment_datatype; (void) persistent_datatype; (void) output_segment_datatype;
    (void) extra_state;
    if (SEGI != input_segment_count || SEGI != output_segment_count ||
        (segment_offset + num_segments) * SEGI > persistent_count) {
        return MPI_ERR_ARG;
    }
    for (int k = 0; k < num_segments; k++)
        for (int i = 0; i < SEGI; i++) {
            size_t j = (size_t) (segment_offset + k) * SEGI + i;
            out[k * SEGI + i] = p[j];
            p[j] += in[k * SEGI + i];
        }
    return MPI_SUCCESS;
}

static int64_t ival(int am, size_t j) { return (int64_t) (j * 3 + 1) * (am + 1) + rank * 1000003; }

/* Model: m[] = window model; apply AM `am` of nseg segments, expected output in exp[]. */
static void model_apply(int64_t *m, int am, int nseg, int64_t *exp)
{
    for (size_t j = 0; j < (size_t) nseg * SEGI; j++) {
        exp[j] = m[PDISP + j];
        m[PDISP + j] += ival(am, j);
    }
}

static int compare(const char *where, const char *what, const int64_t *got, const int64_t *want,
                   size_t n)
{
    for (size_t j = 0; j < n; j++) {
        if (got[j] != want[j]) {
            TU_CHECK(0, "%s: %s: element %zu is %lld, expected %lld", where, what, j,
                     (long long) got[j], (long long) want[j]);
            return 1;
        }
    }
    return 0;
}

int main(int argc, char **argv)
{
    static int64_t in[REPS + 2][PN], out[REPS + 2][PN], exp[REPS + 2][PN], model[WINN],
        got[PN];
    char where[200];

    tu_am_start(&argc, &argv, "am_self", 45, &rank, &nprocs);

    for (int f = 0; f < TU_NFLAVORS; f++) {
        tu_win_t w;
        int64_t *base;
        MPIX_Am_op op;
        void *ubuf;
        if (!tu_flavor_enabled(f)) continue;
        tu_win_create(f, WINN * sizeof(int64_t), sizeof(int64_t), MPI_INFO_NULL, MPI_COMM_WORLD,
                      &w);
        base = w.base;
        for (int j = 0; j < WINN; j++) model[j] = base[j] = (int64_t) j * 7 - rank;
        op = tu_am_op(fadd_fn, NULL, 1400, w.win);
        ubuf = tu_am_attach(w.win, 4096);
        MPI_Barrier(MPI_COMM_WORLD);

        for (int ep = 0; ep < TU_NEPOCHS; ep++) {
            MPI_Request req;
            MPI_Aint disp = tu_disp(&w, rank, PDISP);
            snprintf(where, sizeof(where), "%s window, %s epoch", tu_flavor_names[f],
                     tu_epoch_names[ep]);
            tu_where = where;
            for (int a = 0; a < REPS + 2; a++) {
                int n = REPS + 1 == a ? BIGSEG : NSEG;
                for (size_t j = 0; j < (size_t) n * SEGI; j++) {
                    in[a][j] = ival(ep * 10 + a, j);
                    out[a][j] = -7;
                }
            }
            TU_AM(tu_am_epoch_open(ep, w.win, &rank, 1, &rank, 1));
            for (int a = 0; a < REPS + 2; a++) {
                int n = REPS + 1 == a ? BIGSEG : NSEG;
                char what[80];
                model_apply(model, ep * 10 + a, n, exp[a]);
                if (REPS == a) {
                    TU_AM(MPIX_Ram(in[a], SEGI, MPI_INT64_T, out[a], SEGI, MPI_INT64_T, n, rank,
                                   MPI_INT64_T, disp, PN, MPI_INT64_T, MPI_INT64_T, op, w.win,
                                   &req));
                } else {
                    TU_AM(MPIX_Am(in[a], SEGI, MPI_INT64_T, out[a], SEGI, MPI_INT64_T, n, rank,
                                  MPI_INT64_T, disp, PN, MPI_INT64_T, MPI_INT64_T, op, w.win));
                }
                /* S26: ran in this process, inside the call */
                snprintf(what, sizeof(what), "AM %d output when the call returned (S26)", a);
                compare(where, what, out[a], exp[a], (size_t) n * SEGI);
                snprintf(what, sizeof(what), "window after AM %d's call returned (S26)", a);
                compare(where, what, base, model, WINN);
                if (REPS == a) {
                    TU_AM(MPI_Wait(&req, MPI_STATUS_IGNORE));
                    compare(where, "MPIX_Ram output after MPI_Wait", out[a], exp[a],
                            (size_t) n * SEGI);
                }
            }
            if (ep <= TU_EP_LOCK_ALL) {
                TU_AM(MPI_Win_flush(rank, w.win));
                TU_AM(MPI_Get(got, PN, MPI_INT64_T, rank, disp, PN, MPI_INT64_T, w.win));
                TU_AM(MPI_Win_flush(rank, w.win));
                compare(where, "MPI_Get of the region after the AMs and a flush (S17)", got,
                        model + PDISP, PN);
            }
            TU_AM(tu_am_epoch_close(ep, w.win, &rank, 1, &rank, 1));
            for (int a = 0; a < REPS + 2; a++) {
                char what[80];
                int n = REPS + 1 == a ? BIGSEG : NSEG;
                snprintf(what, sizeof(what), "AM %d output after the epoch", a);
                compare(where, what, out[a], exp[a], (size_t) n * SEGI);
            }
            compare(where, "window after the epoch", base, model, WINN);
            MPI_Barrier(MPI_COMM_WORLD);
        }
        tu_where = "teardown";
        tu_am_op_done(&op, w.win);
        TU_AM(MPIX_Am_win_buffer_detach(ubuf, w.win));
        free(ubuf);
        tu_win_free(&w);
    }
    alarm(0);
    {
        int rc = tu_finish("am_self");
        MPI_Finalize();
        return rc;
    }
}
