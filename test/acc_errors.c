/* acc_errors: invalid accumulate arguments with MPI_ERRORS_RETURN.
 *
 *  - MPI_BAND on MPI_DOUBLE through MPI_Accumulate, MPI_Get_accumulate,
 *    MPI_Fetch_and_op, MPI_Raccumulate, MPI_Rget_accumulate: error class
 *    MPI_ERR_OP, target unchanged;
 *  - MPI_MAXLOC on MPI_INT (not a pair type) through MPI_Accumulate: MPI_ERR_OP;
 *  - a user-defined op (MPI_Op_create) in MPI_Accumulate, MPI_Get_accumulate
 *    and MPI_Fetch_and_op: MPI_ERR_OP (MPI-3.1 11.3.4: only predefined ops);
 *  - afterwards the window is still usable: a valid MPI_Accumulate and
 *    MPI_Fetch_and_op in the same epoch and in a new one give the right values.
 * Each rank targets rank+1; run inside a lock_all epoch and a fence epoch.
 *  - once the target has been used (its mappings resolved, where osc/ucxx
 *    takes short accumulates without the full checks): MPI_Accumulate,
 *    MPI_Get_accumulate, MPI_Fetch_and_op and MPI_Compare_and_swap past the
 *    end of the window (and the two accumulates straddling it) give
 *    MPI_ERR_RMA_RANGE in lock_all and lock epochs; in range but after the
 *    epoch closed, MPI_ERR_RMA_SYNC; the target is unchanged by all of them.
 *    (Negative displacements: Open MPI's bindings answer MPI_ERR_DISP.)
 *
 * EXPECTED TO FAIL on the stock components of Open MPI 4.1.4: its
 * MPI_Fetch_and_op does not check the op, so osc/sm, osc/rdma and osc/ucx
 * return success for a user-defined op and crash for MPI_BAND on MPI_DOUBLE.
 * ACC_ERRORS_SKIP_FOP=1 leaves those two calls out (to check the rest on a
 * stock component).
 */
#include "testutil.h"

static int me, nprocs;

static void user_fn(void *in, void *inout, int *len, MPI_Datatype *dt)
{
    int i;
    for (i = 0; i < *len; i++) ((double *)inout)[i] += ((double *)in)[i];
    (void)dt;
}

static void expect_err(int rc, int cls_expected, const char *what, const char *where)
{
    int cls = MPI_SUCCESS;
    if (MPI_SUCCESS != rc) MPI_Error_class(rc, &cls);
    TU_CHECK(cls == cls_expected, "%s on %s: error class %d, expected %d (%s)", what, where, cls, cls_expected,
             MPI_SUCCESS == rc ? "call succeeded" : "wrong class");
}

/* The accumulate family on `t` at element `disp` (count elements for the
 * accumulates; fetch_and_op and compare_and_swap, one, only when count is
 * 1), each expected to fail with class `cls`. */
static void acc_family_fails(tu_win_t *w, int t, MPI_Aint disp, int count, int cls,
                             const char *what, const char *where)
{
    double vals[2] = { 100, 200 }, res[2] = { -1, -1 };
    int64_t cmp = 0, origin = 7, old = -1;
    char label[128];
    int rc;

    rc = MPI_Accumulate(vals, count, MPI_DOUBLE, t, disp, count, MPI_DOUBLE, MPI_SUM, w->win);
    snprintf(label, sizeof(label), "MPI_Accumulate %s", what);
    expect_err(rc, cls, label, where);
    rc = MPI_Get_accumulate(vals, count, MPI_DOUBLE, res, count, MPI_DOUBLE, t, disp, count,
                            MPI_DOUBLE, MPI_SUM, w->win);
    snprintf(label, sizeof(label), "MPI_Get_accumulate %s", what);
    expect_err(rc, cls, label, where);
    if (1 != count) return;
    rc = MPI_Fetch_and_op(vals, res, MPI_DOUBLE, t, disp, MPI_SUM, w->win);
    snprintf(label, sizeof(label), "MPI_Fetch_and_op %s", what);
    expect_err(rc, cls, label, where);
    rc = MPI_Compare_and_swap(&origin, &cmp, &old, MPI_INT64_T, t, disp, w->win);
    snprintf(label, sizeof(label), "MPI_Compare_and_swap %s", what);
    expect_err(rc, cls, label, where);
}

/* Range and epoch errors once the target is in use: a valid accumulate
 * first, then the bad ones, in a lock_all and a lock epoch; then in range
 * after the epoch closed. */
static void used_target_errors(tu_win_t *w, const char *flavor)
{
    int t = (me + 1) % nprocs, k, kind;
    double *base = w->base, one = 1.0;
    char where[64];

    TU_MPI(MPI_Win_lock(MPI_LOCK_EXCLUSIVE, me, 0, w->win));
    for (k = 0; k < 8; k++) base[k] = 1.0 + k;
    TU_MPI(MPI_Win_unlock(me, w->win));
    MPI_Barrier(MPI_COMM_WORLD);
    for (kind = 0; kind < 2; kind++) {
        snprintf(where, sizeof(where), "%s/%s, target in use", flavor, kind ? "lock" : "lock_all");
        if (kind) TU_MPI(MPI_Win_lock(MPI_LOCK_SHARED, t, 0, w->win));
        else TU_MPI(MPI_Win_lock_all(0, w->win));
        /* (the valid one adds 0: the target's values stay what they were) */
        one = 0.0;
        TU_MPI(MPI_Accumulate(&one, 1, MPI_DOUBLE, t, tu_disp(w, t, 0), 1, MPI_DOUBLE, MPI_SUM,
                              w->win));
        TU_MPI(MPI_Win_flush(t, w->win));
        acc_family_fails(w, t, tu_disp(w, t, 8), 1, MPI_ERR_RMA_RANGE, "past the end", where);
        acc_family_fails(w, t, tu_disp(w, t, 1000), 1, MPI_ERR_RMA_RANGE, "far past the end",
                         where);
        acc_family_fails(w, t, tu_disp(w, t, 7), 2, MPI_ERR_RMA_RANGE, "straddling the end",
                         where);
        if (kind) TU_MPI(MPI_Win_unlock(t, w->win));
        else TU_MPI(MPI_Win_unlock_all(w->win));
        acc_family_fails(w, t, tu_disp(w, t, 0), 1, MPI_ERR_RMA_SYNC, "after the epoch closed",
                         where);
    }
    MPI_Barrier(MPI_COMM_WORLD);
    TU_MPI(MPI_Win_lock(MPI_LOCK_SHARED, me, 0, w->win));
    for (k = 0; k < 8; k++) {
        TU_CHECK(base[k] == 1.0 + k, "on %s: element %d is %g after the failed calls, expected %g",
                 flavor, k, base[k], 1.0 + k);
    }
    TU_MPI(MPI_Win_unlock(me, w->win));
    MPI_Barrier(MPI_COMM_WORLD);
}

int main(int argc, char **argv)
{
    int flavor, rc, epoch;
    MPI_Op user_op;
    const int skip_fop = getenv("ACC_ERRORS_SKIP_FOP") && atoi(getenv("ACC_ERRORS_SKIP_FOP"));
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &me);
    MPI_Comm_size(MPI_COMM_WORLD, &nprocs);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    TU_MPI(MPI_Op_create(user_fn, 1, &user_op));

    for (flavor = 0; flavor < TU_NFLAVORS; flavor++) {
        tu_win_t w;
        if (!tu_flavor_enabled(flavor)) continue;
        /* element 0..3: doubles, element 4..7: ints (as doubles' storage) */
        tu_win_create(flavor, 8 * sizeof(double), sizeof(double), MPI_INFO_NULL, MPI_COMM_WORLD, &w);
        for (epoch = 0; epoch < 2; epoch++) {
            const char *ep = epoch ? "fence" : "lock_all";
            char where[64];
            int t = (me + 1) % nprocs, k;
            double *base = w.base, one = 1.0, res[4] = { -1, -1, -1, -1 }, vals[4] = { 1, 2, 3, 4 };
            int ivals[2] = { 5, 6 };
            MPI_Request req;
            snprintf(where, sizeof(where), "%s/%s", tu_flavor_names[flavor], ep);

            TU_MPI(MPI_Win_lock(MPI_LOCK_EXCLUSIVE, me, 0, w.win));
            for (k = 0; k < 4; k++) base[k] = 10.5 + k;
            ((int *)(base + 4))[0] = 77;
            TU_MPI(MPI_Win_unlock(me, w.win));
            MPI_Barrier(MPI_COMM_WORLD);

            if (epoch) TU_MPI(MPI_Win_fence(0, w.win));
            else TU_MPI(MPI_Win_lock_all(0, w.win));

            rc = MPI_Accumulate(vals, 4, MPI_DOUBLE, t, tu_disp(&w, t, 0), 4, MPI_DOUBLE, MPI_BAND, w.win);
            expect_err(rc, MPI_ERR_OP, "MPI_Accumulate(MPI_BAND, MPI_DOUBLE)", where);
            rc = MPI_Get_accumulate(vals, 4, MPI_DOUBLE, res, 4, MPI_DOUBLE, t, tu_disp(&w, t, 0), 4, MPI_DOUBLE,
                                    MPI_BAND, w.win);
            expect_err(rc, MPI_ERR_OP, "MPI_Get_accumulate(MPI_BAND, MPI_DOUBLE)", where);
            if (!epoch) { /* request-based calls need a passive target epoch */
                rc = MPI_Raccumulate(vals, 4, MPI_DOUBLE, t, tu_disp(&w, t, 0), 4, MPI_DOUBLE, MPI_BAND, w.win,
                                     &req);
                expect_err(rc, MPI_ERR_OP, "MPI_Raccumulate(MPI_BAND, MPI_DOUBLE)", where);
                if (MPI_SUCCESS == rc) MPI_Wait(&req, MPI_STATUS_IGNORE);
                rc = MPI_Rget_accumulate(vals, 4, MPI_DOUBLE, res, 4, MPI_DOUBLE, t, tu_disp(&w, t, 0), 4,
                                         MPI_DOUBLE, MPI_BXOR, w.win, &req);
                expect_err(rc, MPI_ERR_OP, "MPI_Rget_accumulate(MPI_BXOR, MPI_DOUBLE)", where);
                if (MPI_SUCCESS == rc) MPI_Wait(&req, MPI_STATUS_IGNORE);
            }
            rc = MPI_Accumulate(ivals, 1, MPI_INT, t, tu_disp(&w, t, 4), 1, MPI_INT, MPI_MAXLOC, w.win);
            expect_err(rc, MPI_ERR_OP, "MPI_Accumulate(MPI_MAXLOC, MPI_INT)", where);
            rc = MPI_Accumulate(vals, 4, MPI_DOUBLE, t, tu_disp(&w, t, 0), 4, MPI_DOUBLE, user_op, w.win);
            expect_err(rc, MPI_ERR_OP, "MPI_Accumulate(user-defined op)", where);
            rc = MPI_Get_accumulate(vals, 4, MPI_DOUBLE, res, 4, MPI_DOUBLE, t, tu_disp(&w, t, 0), 4, MPI_DOUBLE,
                                    user_op, w.win);
            expect_err(rc, MPI_ERR_OP, "MPI_Get_accumulate(user-defined op)", where);
            /* Open MPI 4.1.4's MPI_Fetch_and_op binding does not validate the op:
             * the component has to. Stock osc/sm, rdma and ucx crash (NULL op
             * function) on the first call and return success on the second;
             * these come last so the checks above are reported first. */
            if (!skip_fop) {
                rc = MPI_Fetch_and_op(vals, res, MPI_DOUBLE, t, tu_disp(&w, t, 1), user_op, w.win);
                expect_err(rc, MPI_ERR_OP, "MPI_Fetch_and_op(user-defined op)", where);
                rc = MPI_Fetch_and_op(vals, res, MPI_DOUBLE, t, tu_disp(&w, t, 1), MPI_BAND, w.win);
                expect_err(rc, MPI_ERR_OP, "MPI_Fetch_and_op(MPI_BAND, MPI_DOUBLE)", where);
            }

            /* the window still works, in this epoch ... */
            rc = MPI_Accumulate(&one, 1, MPI_DOUBLE, t, tu_disp(&w, t, 2), 1, MPI_DOUBLE, MPI_SUM, w.win);
            TU_CHECK(MPI_SUCCESS == rc, "valid MPI_Accumulate after the errors on %s: rc %d", where, rc);
            if (epoch) TU_MPI(MPI_Win_fence(0, w.win));
            else TU_MPI(MPI_Win_unlock_all(w.win));
            MPI_Barrier(MPI_COMM_WORLD);

            /* ... and in the next one */
            if (epoch) TU_MPI(MPI_Win_fence(0, w.win));
            else TU_MPI(MPI_Win_lock_all(0, w.win));
            res[0] = -1;
            rc = MPI_Fetch_and_op(&one, res, MPI_DOUBLE, t, tu_disp(&w, t, 3), MPI_SUM, w.win);
            TU_CHECK(MPI_SUCCESS == rc, "valid MPI_Fetch_and_op after the errors on %s: rc %d", where, rc);
            if (epoch) TU_MPI(MPI_Win_fence(MPI_MODE_NOSUCCEED, w.win));
            else TU_MPI(MPI_Win_unlock_all(w.win));
            TU_CHECK(res[0] == 13.5, "MPI_Fetch_and_op after the errors on %s fetched %g, expected 13.5", where,
                     res[0]);
            MPI_Barrier(MPI_COMM_WORLD);

            TU_MPI(MPI_Win_lock(MPI_LOCK_SHARED, me, 0, w.win));
            TU_CHECK(base[0] == 10.5 && base[1] == 11.5, "on %s: target changed by a failed call: %g %g (expected "
                     "10.5 11.5)", where, base[0], base[1]);
            TU_CHECK(77 == ((int *)(base + 4))[0], "on %s: MPI_MAXLOC on MPI_INT changed the target to %d", where,
                     ((int *)(base + 4))[0]);
            TU_CHECK(base[2] == 13.5, "on %s: valid accumulate after the errors: %g, expected 13.5", where, base[2]);
            TU_CHECK(base[3] == 14.5, "on %s: valid fetch_and_op after the errors: %g, expected 14.5", where,
                     base[3]);
            TU_MPI(MPI_Win_unlock(me, w.win));
            MPI_Barrier(MPI_COMM_WORLD);
        }
        used_target_errors(&w, tu_flavor_names[flavor]);
        tu_win_free(&w);
    }
    MPI_Op_free(&user_op);
    rc = tu_finish("acc_errors");
    MPI_Finalize();
    return rc;
}
