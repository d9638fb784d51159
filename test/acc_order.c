/* acc_order: accumulate ordering with the default accumulate_ordering
 * (rar,raw,war,waw).
 *
 * Each rank is the only origin targeting rank+1, a 1000-element MPI_INT64_T
 * array, and issues a sequence of accumulate operations inside ONE epoch
 * (no flush in between):
 *   "same":  200 x MPI_Accumulate(MPI_REPLACE) of count 1 on element 0,
 *            values 1..200 -> must end with 200;
 *   "mixed": 300 operations on random ranges of random size (1, 2, 8, 100,
 *            1000 elements): MPI_Accumulate(REPLACE) contiguous or through a
 *            vector target datatype, MPI_Get_accumulate(REPLACE / NO_OP),
 *            MPI_Fetch_and_op(REPLACE / NO_OP) and MPI_Compare_and_swap whose
 *            compare value is the value the element must hold at that point.
 * The origin models the target array in program order: every fetched value
 * must equal the model's value before that operation (raw/war ordering) and
 * the final target contents must equal the model (waw ordering).
 * Each sequence runs in a lock_all, an exclusive lock and a fence epoch.
 *
 * Environment: ACC_ORDER_STEPS (mixed sequence length, default 300).
 *
 * Argument --no-direct: run with osc/ucxx's internal setting direct=0 (tu_tune) (the UCX RMA/AMO path).
 */
#include "testutil.h"
#include <stdint.h>

#define M 1000
#define SAME_STEPS 200

enum { K_ACC, K_ACC_VEC, K_GACC, K_GACC_NOOP, K_FOP, K_FOP_NOOP, K_CAS, NK };
static const char *kname[NK] = { "Accumulate", "Accumulate(vector)", "Get_accumulate",
                                 "Get_accumulate(NO_OP)", "Fetch_and_op", "Fetch_and_op(NO_OP)",
                                 "Compare_and_swap" };
enum { E_LOCKALL, E_LOCK, E_FENCE, NE };
static const char *ename[NE] = { "lock_all", "lock", "fence" };

typedef struct {
    int kind, lo, len; /* range [lo, lo+len) (vector: every other element from lo) */
    size_t boff;       /* offset (elements) into origin/result buffers */
} step_t;

static uint64_t rng_state;
static uint32_t rng(void)
{
    rng_state = rng_state * 6364136223846793005ULL + 1442695040888963407ULL;
    return (uint32_t)(rng_state >> 33);
}

/* the sequence of origin `o` (same on every rank that computes it) */
static int make_steps(int same, int o, int nsteps, step_t *st)
{
    static const int sizes[] = { 1, 2, 8, 100, M };
    size_t boff = 0;
    int s;
    rng_state = 0x1234567ULL + (uint64_t)o * 7919;
    for (s = 0; s < nsteps; s++) {
        step_t *x = &st[s];
        if (same) {
            x->kind = K_ACC; x->lo = 0; x->len = 1;
        } else {
            x->kind = (int)(rng() % NK);
            if (K_FOP == x->kind || K_FOP_NOOP == x->kind || K_CAS == x->kind) x->len = 1;
            else x->len = sizes[rng() % 5];
            if (K_ACC_VEC == x->kind && x->len < 2) x->len = 2;
            x->lo = (int)(rng() % (uint32_t)(M - x->len + 1));
            /* bias towards element 0 so one location sees every kind */
            if (rng() % 4 == 0) x->lo = 0;
        }
        x->boff = boff;
        boff += (size_t)x->len;
    }
    return (int)boff;
}

static int64_t init_val(int t, int j) { return -(int64_t)(t * 100000 + j + 1); }
static int64_t step_val(int same, int s, int j) { return same ? s + 1 : (int64_t)(s + 1) * 1000000 + j; }

/* number of target elements a step touches, and the i-th one */
static int step_n(const step_t *x) { return K_ACC_VEC == x->kind ? (x->len + 1) / 2 : x->len; }
static int step_elem(const step_t *x, int i) { return x->lo + (K_ACC_VEC == x->kind ? 2 * i : i); }

/* replay: model[] starts as target t's initial array; fills the expected
 * fetched values (per step) into expf[] if non-NULL */
static void replay(int same, const step_t *st, int nsteps, int t, int64_t *model, int64_t *expf)
{
    int s, i, j;
    for (j = 0; j < M; j++) model[j] = init_val(t, j);
    for (s = 0; s < nsteps; s++) {
        const step_t *x = &st[s];
        for (i = 0; i < step_n(x); i++) {
            int e = step_elem(x, i);
            if (expf) expf[x->boff + i] = model[e];
            switch (x->kind) {
            case K_GACC_NOOP:
            case K_FOP_NOOP: break;
            default: model[e] = step_val(same, s, i); break;
            }
        }
    }
}

static void run(int flavor, int epoch, int same, int nsteps, int me, int nprocs, MPI_Datatype *vecs)
{
    tu_win_t w;
    int t = (me + 1) % nprocs, o = (me - 1 + nprocs) % nprocs, s, i, total, bad = 0;
    step_t *st = malloc(sizeof(step_t) * (size_t)nsteps);
    int64_t *obuf, *rbuf, *cbuf, *model = malloc(sizeof(int64_t) * M), *expf;
    const char *seq = same ? "same" : "mixed";

    total = make_steps(same, me, nsteps, st);
    obuf = malloc(sizeof(int64_t) * (size_t)total);
    rbuf = malloc(sizeof(int64_t) * (size_t)total);
    cbuf = malloc(sizeof(int64_t) * (size_t)total);
    expf = malloc(sizeof(int64_t) * (size_t)total);
    replay(same, st, nsteps, t, model, expf);
    for (s = 0; s < nsteps; s++)
        for (i = 0; i < step_n(&st[s]); i++) {
            obuf[st[s].boff + i] = step_val(same, s, i);
            cbuf[st[s].boff + i] = expf[st[s].boff + i]; /* CAS compare: the current value */
            rbuf[st[s].boff + i] = 0x7777777777777777LL;
        }

    tu_win_create(flavor, M * sizeof(int64_t), sizeof(int64_t), MPI_INFO_NULL, MPI_COMM_WORLD, &w);
    TU_MPI(MPI_Win_lock(MPI_LOCK_EXCLUSIVE, me, 0, w.win));
    for (i = 0; i < M; i++) ((int64_t *)w.base)[i] = init_val(me, i);
    TU_MPI(MPI_Win_unlock(me, w.win));
    MPI_Barrier(MPI_COMM_WORLD);

    switch (epoch) {
    case E_LOCKALL: TU_MPI(MPI_Win_lock_all(0, w.win)); break;
    case E_LOCK: TU_MPI(MPI_Win_lock(MPI_LOCK_EXCLUSIVE, t, 0, w.win)); break;
    case E_FENCE: TU_MPI(MPI_Win_fence(MPI_MODE_NOPRECEDE, w.win)); break;
    }
    for (s = 0; s < nsteps; s++) {
        const step_t *x = &st[s];
        MPI_Aint disp = tu_disp(&w, t, x->lo);
        int64_t *ob = obuf + x->boff, *rb = rbuf + x->boff;
        int rc = MPI_SUCCESS;
        switch (x->kind) {
        case K_ACC:
            rc = MPI_Accumulate(ob, x->len, MPI_INT64_T, t, disp, x->len, MPI_INT64_T, MPI_REPLACE, w.win);
            break;
        case K_ACC_VEC:
            rc = MPI_Accumulate(ob, step_n(x), MPI_INT64_T, t, disp, 1, vecs[step_n(x)], MPI_REPLACE, w.win);
            break;
        case K_GACC:
        case K_GACC_NOOP:
            rc = MPI_Get_accumulate(ob, x->len, MPI_INT64_T, rb, x->len, MPI_INT64_T, t, disp, x->len,
                                    MPI_INT64_T, K_GACC == x->kind ? MPI_REPLACE : MPI_NO_OP, w.win);
            break;
        case K_FOP:
        case K_FOP_NOOP:
            rc = MPI_Fetch_and_op(ob, rb, MPI_INT64_T, t, disp, K_FOP == x->kind ? MPI_REPLACE : MPI_NO_OP, w.win);
            break;
        case K_CAS:
            rc = MPI_Compare_and_swap(ob, cbuf + x->boff, rb, MPI_INT64_T, t, disp, w.win);
            break;
        }
        TU_CHECK(MPI_SUCCESS == rc, "%s %s on %s: step %d MPI_%s failed", seq, ename[epoch],
                 tu_flavor_names[flavor], s, kname[x->kind]);
    }
    switch (epoch) {
    case E_LOCKALL: TU_MPI(MPI_Win_unlock_all(w.win)); break;
    case E_LOCK: TU_MPI(MPI_Win_unlock(t, w.win)); break;
    case E_FENCE: TU_MPI(MPI_Win_fence(MPI_MODE_NOSUCCEED, w.win)); break;
    }

    /* fetched values, in program order */
    for (s = 0; s < nsteps && bad < 3; s++) {
        const step_t *x = &st[s];
        if (K_ACC == x->kind || K_ACC_VEC == x->kind) continue;
        for (i = 0; i < x->len; i++) {
            if (rbuf[x->boff + i] != expf[x->boff + i]) {
                TU_CHECK(0, "%s %s on %s: step %d MPI_%s [%d..%d) fetched elem %d = %lld, expected %lld", seq,
                         ename[epoch], tu_flavor_names[flavor], s, kname[x->kind], x->lo, x->lo + x->len,
                         x->lo + i, (long long)rbuf[x->boff + i], (long long)expf[x->boff + i]);
                bad++;
                break;
            }
        }
    }
    MPI_Barrier(MPI_COMM_WORLD);

    /* my window: the final state of my origin's sequence */
    make_steps(same, o, nsteps, st);
    replay(same, st, nsteps, me, model, NULL);
    TU_MPI(MPI_Win_lock(MPI_LOCK_SHARED, me, 0, w.win));
    for (i = 0, bad = 0; i < M && bad < 3; i++) {
        int64_t got = ((int64_t *)w.base)[i];
        if (got != model[i]) {
            TU_CHECK(0, "%s %s on %s: final elem %d = %lld, expected %lld (written by step %lld)", seq,
                     ename[epoch], tu_flavor_names[flavor], i, (long long)got, (long long)model[i],
                     model[i] > 0 ? (long long)(same ? model[i] - 1 : model[i] / 1000000 - 1) : -1LL);
            bad++;
        }
    }
    TU_MPI(MPI_Win_unlock(me, w.win));
    MPI_Barrier(MPI_COMM_WORLD);
    tu_win_free(&w);
    free(st); free(obuf); free(rbuf); free(cbuf); free(model); free(expf);
}


int main(int argc, char **argv)
{
    int me, nprocs, flavor, epoch, rc, n;
    int steps;
    MPI_Datatype vecs[M / 2 + 1];
    tu_parse_args(argc, argv);
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &me);
    MPI_Comm_size(MPI_COMM_WORLD, &nprocs);
    steps = tu_env_int("ACC_ORDER_STEPS", 300);

    /* vector target types: n blocks of one element, stride 2 */
    for (n = 0; n <= M / 2; n++) vecs[n] = MPI_DATATYPE_NULL;
    {
        static const int counts[] = { 1, 4, 50, M / 2 };
        int k;
        for (k = 0; k < 4; k++) {
            TU_MPI(MPI_Type_vector(counts[k], 1, 2, MPI_INT64_T, &vecs[counts[k]]));
            TU_MPI(MPI_Type_commit(&vecs[counts[k]]));
        }
    }

    for (flavor = 0; flavor < TU_NFLAVORS; flavor++) {
        if (!tu_flavor_enabled(flavor)) continue;
        for (epoch = 0; epoch < NE; epoch++) {
            run(flavor, epoch, 1, SAME_STEPS, me, nprocs, vecs);
            run(flavor, epoch, 0, steps, me, nprocs, vecs);
        }
    }
    for (n = 0; n <= M / 2; n++)
        if (MPI_DATATYPE_NULL != vecs[n]) MPI_Type_free(&vecs[n]);
    rc = tu_finish("acc_order");
    MPI_Finalize();
    return rc;
}
