/* acc_refs: accumulates whose answers arrive on the progress thread keep
 * their datatypes without racing with the application.
 *
 * Below MPI_THREAD_MULTIPLE Open MPI counts object references without
 * atomics.  An accumulate by message keeps its result datatype until the
 * target's answer is in; where that answer is handled by a UCX callback on
 * osc/ucxx's progress thread while the application issues more operations,
 * a count changed on both threads loses updates.  A predefined type's count
 * then drifted to zero and Open MPI freed the static object ("free():
 * invalid pointer" in acc_order and lock_mixed across hosts).
 *
 * Each rank is the only origin of the next rank's window: K operations
 * between flushes in a lock_all epoch (computing a little after each, so
 * that the progress thread takes the answers), R rounds, on every flavor:
 * MPI_Fetch_and_op(SUM), MPI_Get_accumulate(SUM) of two elements, and the
 * same with a derived result type freed right after the call, on
 * MPI_INT64_T.
 * Checks:
 *   - every fetched value (the counters go up by one per operation of their
 *     only origin, in order: default accumulate_ordering);
 *   - the target's final counters;
 *   - MPI_INT64_T's reference count is the same after as before (read from
 *     Open MPI's object header where its layout is the release build's;
 *     elsewhere only the values and the absence of a crash are checked).
 * acc.list runs it with osc_ucxx_progress_thread=1, where over TCP and
 * across hosts the answers come on the progress thread.
 *
 * Environment: ACC_REFS_ROUNDS (R, default 20).
 */
#include "testutil.h"

#define NE 16   /* counters */
#define K 400   /* operations between flushes */

/* Open MPI's object header (release builds): class, then the count. */
typedef struct {
    void *cls;
    volatile int32_t refs;
} obj_head_t;

/* MPI_INT64_T's reference count, or -1 where the header is not as above. */
static int32_t refs_of_int64(void)
{
#ifdef OPEN_MPI
    const obj_head_t *a = (const obj_head_t *) MPI_INT64_T, *b = (const obj_head_t *) MPI_INT;
    if (NULL != a->cls && a->cls == b->cls && a->refs > 0 && a->refs < (1 << 24)) {
        return a->refs;
    }
#endif
    return -1;
}

/* Computing outside MPI for about `us` microseconds: the progress thread
 * handles the answers meanwhile. */
static void compute(double us)
{
    double t0 = MPI_Wtime();
    while ((MPI_Wtime() - t0) * 1e6 < us) {
    }
}

static void rounds(tu_win_t *w, int next, int nrounds, int64_t *model)
{
    int64_t one[2] = {1, 1}, res[K][2];
    int64_t expect[K][2];
    int nres[K];
    MPI_Datatype pair;

    TU_MPI(MPI_Win_lock_all(0, w->win));
    for (int r = 0; r < nrounds; r++) {
        for (int k = 0; k < K; k++) {
            int j = (r * K + k) % (NE - 1);
            if (k % 3 == 0) {
                TU_MPI(MPI_Fetch_and_op(one, res[k], MPI_INT64_T, next, tu_disp(w, next, j),
                                        MPI_SUM, w->win));
                nres[k] = 1;
            } else if (k % 3 == 1) {
                TU_MPI(MPI_Get_accumulate(one, 2, MPI_INT64_T, res[k], 2, MPI_INT64_T, next,
                                          tu_disp(w, next, j), 2, MPI_INT64_T, MPI_SUM,
                                          w->win));
                nres[k] = 2;
            } else {
                TU_MPI(MPI_Type_contiguous(2, MPI_INT64_T, &pair));
                TU_MPI(MPI_Type_commit(&pair));
                TU_MPI(MPI_Get_accumulate(one, 2, MPI_INT64_T, res[k], 1, pair, next,
                                          tu_disp(w, next, j), 2, MPI_INT64_T, MPI_SUM,
                                          w->win));
                TU_MPI(MPI_Type_free(&pair));   /* (the operation keeps it) */
                nres[k] = 2;
            }
            for (int i = 0; i < nres[k]; i++) expect[k][i] = model[j + i]++;
            compute(2);
        }
        TU_MPI(MPI_Win_flush(next, w->win));
        for (int k = 0; k < K; k++) {
            for (int i = 0; i < nres[k]; i++) {
                TU_CHECK(res[k][i] == expect[k][i],
                         "%s window, round %d op %d: fetched %lld, expected %lld",
                         tu_flavor_names[w->flavor], r, k, (long long) res[k][i],
                         (long long) expect[k][i]);
            }
        }
    }
    TU_MPI(MPI_Win_unlock_all(w->win));
}

int main(int argc, char **argv)
{
    int me, nprocs, next, prev;
    int nrounds = getenv("ACC_REFS_ROUNDS") ? atoi(getenv("ACC_REFS_ROUNDS")) : 20;
    int32_t refs_before, refs_after;

    tu_init_ring(&argc, &argv, &me, &nprocs, &next, &prev);
    refs_before = refs_of_int64();
    for (int flavor = 0; flavor < TU_NFLAVORS; flavor++) {
        int64_t model[NE] = {0};
        tu_win_t w;
        tu_win_create(flavor, NE * sizeof(int64_t), sizeof(int64_t), MPI_INFO_NULL,
                      MPI_COMM_WORLD, &w);
        rounds(&w, next, nrounds, model);
        MPI_Barrier(MPI_COMM_WORLD);
        /* every rank's origin is its previous rank, which did the same */
        TU_MPI(MPI_Win_lock(MPI_LOCK_SHARED, me, 0, w.win));
        for (int j = 0; j < NE; j++) {
            TU_CHECK(((int64_t *) w.base)[j] == model[j], "%s window: counter %d is %lld, expected %lld",
                     tu_flavor_names[flavor], j, (long long) ((int64_t *) w.base)[j],
                     (long long) model[j]);
        }
        TU_MPI(MPI_Win_unlock(me, w.win));
        tu_win_free(&w);
    }
    refs_after = refs_of_int64();
    TU_CHECK(refs_before == refs_after, "MPI_INT64_T's reference count went from %d to %d",
             (int) refs_before, (int) refs_after);
    if (0 == me) {
        if (refs_before < 0) printf("acc_refs: reference count not readable here\n");
        else printf("acc_refs: MPI_INT64_T's reference count %d before, %d after\n", (int) refs_before, (int) refs_after);
    }
    (void) prev;
    int rc = tu_finish("acc_refs");
    MPI_Finalize();
    return rc;
}
