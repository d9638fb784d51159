/* am_basic (design T1; S1-S5, S8, S9): the corrected Fig. 6.5 of Zhao 2016.
 * Every rank is the origin of rank+1 (ring).  An AM has 100 segments of 10
 * MPI_INT in (indices into the persistent region) and 10 MPI_DOUBLE out; the
 * persistent region is 2000 doubles at element 16 of the target's window
 * (disp_unit 8, so S5's disp * disp_unit is exercised), between guard words.
 * The handler (read-only on the region) writes
 *     out[s][i] = 2 * persistent[in[s][i]] + s        (s = segment index)
 * and checks its arguments (N = M = 10, persistent_count 2000, index range):
 * a mismatch makes it return MPI_ERR_ARG, which completion must report.
 * For each window flavor (create/allocate/dynamic as enabled, and always
 * MPI_Win_allocate_shared) and each epoch kind (lock exclusive, lock shared,
 * lock_all, fence, PSCW):
 *   - 3 AMs with different inputs in one epoch, checked after the epoch;
 *   - one MPIX_Ram whose output is checked right after MPI_Wait, and one
 *     completed by polling MPI_Test (no flush, still inside the epoch);
 *   - afterwards each rank checks its own window: region and guards unchanged.
 * Right after MPIX_Am_win_op_register returns (no barrier), an AM to the
 * target must work (S28).  Outside any epoch, an AM must fail with
 * MPI_ERR_RMA_SYNC, leaving its output untouched (S8).  Flags: tu_am_args (--no-origin-compute, --no-sysbuf,
 * --progress-thread, --progress-wait). */
#include "mpix_ucxx.h"
#include "testutil.h"

#define NSEG 100
#define NIN 10
#define NOUT 10
#define NPERS 2000
#define PDISP 16                         /* region start, in doubles */
#define WINN (PDISP + NPERS + 16)        /* window doubles: guard, region, guard */
#define REPS 3
#define TU_SHARED TU_NFLAVORS            /* MPI_Win_allocate_shared, local to this test */

static int rank, nprocs;

static double wval(int owner, int j)     /* window word j of `owner` (exact in double) */
{
    return owner * 100000.0 + j * 0.5 + 0.25;
}

static int basic_fn(const void *input_addr, int input_segment_count,
                    MPI_Datatype input_segment_datatype, void *persistent_addr,
                    int persistent_count, MPI_Datatype persistent_datatype, void *output_addr,
                    int output_segment_count, MPI_Datatype output_segment_datatype,
                    int num_segments, int segment_offset, void *extra_state)
{
    const int *in = input_addr;
    const double *p = persistent_addr;
    double *out = output_addr;
    (void) input_segment_datatype; (void) persistent_datatype; (void) output_segment_datatype;
    (void) extra_state;
    if (NIN != input_segment_count || NOUT != output_segment_count || NPERS != persistent_count ||
        num_segments < 1 || segment_offset < 0 || segment_offset + num_segments > NSEG) {
        return MPI_ERR_ARG;
    }
    for (int k = 0; k < num_segments; k++) {
        for (int i = 0; i < NIN; i++) {
            int idx = in[k * NIN + i];
            if (idx < 0 || idx >= NPERS) return MPI_ERR_ARG;
            out[k * NOUT + i] = 2.0 * p[idx] + (double) (segment_offset + k);
        }
    }
    return MPI_SUCCESS;
}

static int in_index(int origin, int rep, int s, int i)
{
    return (s * 37 + i * 191 + origin * 13 + rep * 101) % NPERS;
}

static void fill_input(int *in, int rep)
{
    for (int s = 0; s < NSEG; s++)
        for (int i = 0; i < NIN; i++) in[s * NIN + i] = in_index(rank, rep, s, i);
}

/* out must hold the handler's results for AM `rep` of this rank to `target`. */
static void check_output(const double *out, int target, int rep, const char *what)
{
    int bad = 0;
    for (int s = 0; s < NSEG; s++)
        for (int i = 0; i < NOUT; i++) {
            double want = 2.0 * wval(target, PDISP + in_index(rank, rep, s, i)) + s;
            if (out[s * NOUT + i] != want) {
                if (bad++ < 3) {
                    TU_CHECK(0, "%s: output segment %d element %d is %.17g, expected %.17g",
                             what, s, i, out[s * NOUT + i], want);
                }
            }
        }
    if (bad > 3) TU_CHECK(0, "%s: %d wrong output elements in all", what, bad);
}

static const char *flavor_name(int f)
{
    return TU_SHARED == f ? "allocate_shared" : tu_flavor_names[f];
}

int main(int argc, char **argv)
{
    int target, origin;
    int in[REPS + 2][NSEG * NIN];
    static double out[REPS + 2][NSEG * NOUT];
    char where[160];

    tu_am_start(&argc, &argv, "am_basic", 45, &rank, &nprocs);
    target = (rank + 1) % nprocs;
    origin = (rank + nprocs - 1) % nprocs;
    for (int r = 0; r <= REPS + 1; r++) fill_input(in[r], r);

    for (int f = 0; f <= TU_SHARED; f++) {
        tu_win_t w;
        double *base;
        MPIX_Am_op op;
        void *ubuf;

        if (TU_SHARED != f && !tu_flavor_enabled(f)) continue;
        if (TU_SHARED == f && tu_multi_node()) continue;   /* (spans nodes) */
        if (TU_SHARED == f) {
            memset(&w, 0, sizeof(w));
            w.flavor = TU_CREATE;       /* tu_disp: plain displacements */
            w.disp_unit = sizeof(double);
            w.size = WINN * sizeof(double);
            TU_AM(MPI_Win_allocate_shared(w.size, w.disp_unit, MPI_INFO_NULL, MPI_COMM_WORLD,
                                          &w.base, &w.win));
            MPI_Win_set_errhandler(w.win, MPI_ERRORS_RETURN);
        } else {
            tu_win_create(f, WINN * sizeof(double), sizeof(double), MPI_INFO_NULL,
                          MPI_COMM_WORLD, &w);
        }
        base = w.base;
        for (int j = 0; j < WINN; j++) base[j] = wval(rank, j);
        /* seg_need = a64(40) + a64(80) = 192: plenty for --no-sysbuf */
        ubuf = tu_am_attach(w.win, 4096);
        op = tu_am_op(basic_fn, NULL, 7, w.win);

        /* S28: AMs may be issued as soon as the registration returns (no barrier) */
        {
            int rc, cls;
            snprintf(where, sizeof(where), "%s window, AM right after register",
                     flavor_name(f));
            tu_where = where;
            memset(out[0], 0, sizeof(out[0]));
            TU_AM(MPI_Win_lock(MPI_LOCK_SHARED, target, 0, w.win));
            TU_AM(MPIX_Am(in[0], NIN, MPI_INT, out[0], NOUT, MPI_DOUBLE, NSEG, target, MPI_INT,
                          tu_disp(&w, target, PDISP), NPERS, MPI_DOUBLE, MPI_DOUBLE, op, w.win));
            rc = MPI_Win_unlock(target, w.win);
            cls = tu_err_class(rc);
            TU_CHECK(MPI_SUCCESS == cls, "%s: MPI_Win_unlock returned %s (%d): the target did "
                     "not know the op yet (S28)", where, tu_err_class_name(cls), cls);
            if (MPI_SUCCESS == cls) check_output(out[0], target, 0, where);
        }
        MPI_Barrier(MPI_COMM_WORLD);

        /* S8: no epoch yet -> MPI_ERR_RMA_SYNC, nothing done */
        {
            int rc, cls;
            for (int j = 0; j < NSEG * NOUT; j++) out[0][j] = -1.0;
            rc = MPIX_Am(in[0], NIN, MPI_INT, out[0], NOUT, MPI_DOUBLE, NSEG, target, MPI_INT,
                         tu_disp(&w, target, PDISP), NPERS, MPI_DOUBLE, MPI_DOUBLE, op, w.win);
            cls = tu_err_class(rc);
            TU_CHECK(MPI_ERR_RMA_SYNC == cls, "%s: MPIX_Am outside an epoch returned %s (%d)",
                     flavor_name(f), tu_err_class_name(cls), cls);
            for (int j = 0; j < NSEG * NOUT; j++) {
                if (-1.0 != out[0][j]) {
                    TU_CHECK(0, "%s: MPIX_Am outside an epoch wrote its output (element %d)",
                             flavor_name(f), j);
                    break;
                }
            }
        }
        MPI_Barrier(MPI_COMM_WORLD);

        for (int ep = 0; ep < TU_NEPOCHS; ep++) {
            MPI_Request req;
            snprintf(where, sizeof(where), "%s window, %s epoch", flavor_name(f),
                     tu_epoch_names[ep]);
            tu_where = where;
            memset(out, 0, sizeof(out));
            TU_AM(tu_am_epoch_open(ep, w.win, &target, 1, &origin, 1));
            for (int r = 0; r < REPS; r++) {
                TU_AM(MPIX_Am(in[r], NIN, MPI_INT, out[r], NOUT, MPI_DOUBLE, NSEG, target,
                              MPI_INT, tu_disp(&w, target, PDISP), NPERS, MPI_DOUBLE,
                              MPI_DOUBLE, op, w.win));
            }
            /* request-based: the output is there at MPI_Wait, no flush */
            TU_AM(MPIX_Ram(in[REPS], NIN, MPI_INT, out[REPS], NOUT, MPI_DOUBLE, NSEG, target,
                           MPI_INT, tu_disp(&w, target, PDISP), NPERS, MPI_DOUBLE, MPI_DOUBLE,
                           op, w.win, &req));
            TU_AM(MPI_Wait(&req, MPI_STATUS_IGNORE));
            TU_CHECK(MPI_REQUEST_NULL == req, "%s: MPI_Wait left the request", where);
            {
                char what[200];
                snprintf(what, sizeof(what), "%s: MPIX_Ram after MPI_Wait", where);
                check_output(out[REPS], target, REPS, what);
            }
            /* and one completed by polling MPI_Test */
            TU_AM(MPIX_Ram(in[REPS + 1], NIN, MPI_INT, out[REPS + 1], NOUT, MPI_DOUBLE, NSEG,
                           target, MPI_INT, tu_disp(&w, target, PDISP), NPERS, MPI_DOUBLE,
                           MPI_DOUBLE, op, w.win, &req));
            {
                int flag = 0;
                char what[200];
                while (!flag) TU_AM(MPI_Test(&req, &flag, MPI_STATUS_IGNORE));
                TU_CHECK(MPI_REQUEST_NULL == req, "%s: MPI_Test left the request", where);
                snprintf(what, sizeof(what), "%s: MPIX_Ram after MPI_Test", where);
                check_output(out[REPS + 1], target, REPS + 1, what);
            }
            TU_AM(tu_am_epoch_close(ep, w.win, &target, 1, &origin, 1));
            for (int r = 0; r < REPS; r++) {
                char what[200];
                snprintf(what, sizeof(what), "%s: MPIX_Am %d after the epoch", where, r);
                check_output(out[r], target, r, what);
            }
            MPI_Barrier(MPI_COMM_WORLD);
            for (int j = 0; j < WINN; j++) {
                if (base[j] != wval(rank, j)) {
                    TU_CHECK(0, "%s: window word %d changed to %.17g (expected %.17g)", where, j,
                             base[j], wval(rank, j));
                    break;
                }
            }
            MPI_Barrier(MPI_COMM_WORLD);
        }
        tu_where = "teardown";
        TU_AM(MPIX_Am_win_buffer_detach(ubuf, w.win));
        free(ubuf);
        tu_am_op_done(&op, w.win);
        TU_CHECK(MPIX_AM_OP_NULL == op, "MPIX_Am_op_free did not reset the handle");
        if (TU_SHARED == f) {
            TU_AM(MPI_Win_free(&w.win));
        } else {
            tu_win_free(&w);
        }
    }
    alarm(0);
    {
        int rc = tu_finish("am_basic");
        MPI_Finalize();
        return rc;
    }
}
