/* Teardown after heavy traffic: many short-lived windows of every flavor,
 * each carrying puts, gets and accumulates of derived datatypes built from
 * MPI_INT and MPI_DOUBLE pieces (many layouts, 1 to `--max` elements) in
 * every kind of epoch (fence, PSCW, lock_all with flush / flush_all /
 * flush_local, contended exclusive locks), then MPI_Finalize.  Every value
 * is checked; the job must also exit 0: UCX workers torn down while a peer
 * is still wiring up with us abort in MPI_Finalize (UCX_TLS=tcp,self, 4
 * ranks), after this program's success line.
 *
 * Options: --rounds N (windows per flavor), --max N (largest element
 * count), --pair (only the first and the last rank move data, the others
 * only take part in what is collective: their endpoints made during
 * MPI_Init carry nothing, as in MPICH's datatype RMA tests). */
#include "testutil.h"

typedef struct {
    MPI_Datatype type;   /* one element of it covers `count` ints or doubles */
    int count;           /* base elements one instance carries */
    MPI_Aint extent;     /* bytes one instance spans at the target */
    int is_double;
} layout_t;

/* A layout with `n` base elements: a vector, an indexed type or a struct
 * mixing both kinds of piece, picked by `k`. */
static layout_t make_layout(int k, int n)
{
    layout_t l = {MPI_DATATYPE_NULL, n, 0, k & 1};
    MPI_Datatype base = l.is_double ? MPI_DOUBLE : MPI_INT;
    int esize = l.is_double ? 8 : 4;
    switch (k % 3) {
    case 0: {   /* blocks of 1-3 elements with a gap of one element */
        int block = 1 + k % 3, nblocks = (n + block - 1) / block;
        MPI_Type_vector(nblocks, block, block + 1, base, &l.type);
        l.count = nblocks * block;
        l.extent = ((MPI_Aint) (nblocks - 1) * (block + 1) + block) * esize;
        break;
    }
    case 1: {   /* every other element, in two runs of an indexed type */
        int half = n / 2 > 0 ? n / 2 : 1;
        int lens[2] = {half, n - half > 0 ? n - half : 1};
        int displs[2] = {0, 2 * half + 1};
        MPI_Type_indexed(2, lens, displs, base, &l.type);
        l.count = lens[0] + lens[1];
        l.extent = (MPI_Aint) (displs[1] + lens[1]) * esize;
        break;
    }
    default: {  /* contiguous run of the element, through a struct */
        int len = n;
        MPI_Aint disp = 0;
        MPI_Type_create_struct(1, &len, &disp, &base, &l.type);
        l.extent = (MPI_Aint) n * esize;
        break;
    }
    }
    MPI_Type_commit(&l.type);
    return l;
}

/* Value of element i written by `rank` in round `r`, exact in a double. */
static double value(int rank, int r, int i)
{
    return (double) ((rank + 1) * 1000003 + r * 7919 + i % 65521);
}

static void fill(char *buf, const layout_t *l, int rank, int r)
{
    for (int i = 0; i < l->count; i++) {
        if (l->is_double) ((double *) buf)[i] = value(rank, r, i);
        else ((int *) buf)[i] = (int) value(rank, r, i);
    }
}

static int check(const char *buf, const layout_t *l, int rank, int r, double scale)
{
    int bad = 0;
    for (int i = 0; i < l->count && bad < 3; i++) {
        double want = scale * value(rank, r, i);
        double got = l->is_double ? ((const double *) buf)[i] : ((const int *) buf)[i];
        if (l->is_double ? got != want : (int) got != (int) want) bad++;
    }
    return bad;
}

/* Through `l` at `t`: a put at offset 0 and two accumulates (SUM) into the
 * second half, with the flushes of `kind` 2-3 between them. */
static void ops(tu_win_t *w, int kind, const layout_t *l, int t, char *origin)
{
    MPI_Datatype e = l->is_double ? MPI_DOUBLE : MPI_INT;
    MPI_Aint half = w->size / 2;
    TU_MPI(MPI_Put(origin, l->count, e, t, tu_disp(w, t, 0), 1, l->type, w->win));
    if (kind >= 2) TU_MPI(MPI_Win_flush_local(t, w->win));
    TU_MPI(MPI_Accumulate(origin, l->count, e, t, tu_disp(w, t, half), 1, l->type, MPI_SUM,
                          w->win));
    if (kind >= 2) TU_MPI(MPI_Win_flush(t, w->win));
    TU_MPI(MPI_Accumulate(origin, l->count, e, t, tu_disp(w, t, half), 1, l->type, MPI_SUM,
                          w->win));
    if (kind >= 2) TU_MPI(MPI_Win_flush_all(w->win));
}

static void get(tu_win_t *w, const layout_t *l, int t, char *result)
{
    TU_MPI(MPI_Get(result, l->count, l->is_double ? MPI_DOUBLE : MPI_INT, t, tu_disp(w, t, 0),
                   1, l->type, w->win));
}

/* [base, + its layout) packed, compared with what `rank` sent in round r. */
static int check_at(const char *base, const layout_t *l, int rank, int r, double scale)
{
    int pos = 0, psize = 0, bad;
    char *packed;
    MPI_Pack_size(1, l->type, MPI_COMM_SELF, &psize);
    packed = malloc((size_t) psize + 8);
    MPI_Pack(base, 1, l->type, packed, psize, &pos, MPI_COMM_SELF);
    bad = check(packed, l, rank, r, scale);
    free(packed);
    return bad;
}

/* One epoch of the kind `kind` on `w` (0 fence, 1 PSCW, 2 lock_all with
 * the three flushes, 3 contended exclusive locks): an active rank puts and
 * accumulates through the layout to `next`, then gets it back; then each
 * checks what `prev` left in its window.  Idle ranks only take part in what
 * is collective. */
static void epoch(tu_win_t *w, int kind, const layout_t *l, int r, int me, int next, int prev,
                  int active, char *origin, char *result, MPI_Group g_next, MPI_Group g_prev)
{
    fill(origin, l, me, r);
    memset(result, 0, (size_t) l->count * 8);
    switch (kind) {
    case 0:
        TU_MPI(MPI_Win_fence(0, w->win));
        if (active) ops(w, kind, l, next, origin);
        TU_MPI(MPI_Win_fence(0, w->win));
        if (active) get(w, l, next, result);
        TU_MPI(MPI_Win_fence(0, w->win));
        break;
    case 1:
        if (!active) break;
        TU_MPI(MPI_Win_post(g_prev, 0, w->win));
        TU_MPI(MPI_Win_start(g_next, 0, w->win));
        ops(w, kind, l, next, origin);
        TU_MPI(MPI_Win_complete(w->win));
        TU_MPI(MPI_Win_wait(w->win));
        TU_MPI(MPI_Win_post(g_prev, 0, w->win));
        TU_MPI(MPI_Win_start(g_next, 0, w->win));
        get(w, l, next, result);
        TU_MPI(MPI_Win_complete(w->win));
        TU_MPI(MPI_Win_wait(w->win));
        break;
    default:
        MPI_Barrier(MPI_COMM_WORLD);
        if (active) {
            if (2 == kind) TU_MPI(MPI_Win_lock_all(0, w->win));
            else TU_MPI(MPI_Win_lock(MPI_LOCK_EXCLUSIVE, next, 0, w->win));
            ops(w, kind, l, next, origin);
            get(w, l, next, result);
            if (2 == kind) TU_MPI(MPI_Win_unlock_all(w->win));
            else TU_MPI(MPI_Win_unlock(next, w->win));
        }
        break;
    }
    MPI_Barrier(MPI_COMM_WORLD);
    if (active) {
        TU_MPI(MPI_Win_lock(MPI_LOCK_SHARED, me, 0, w->win));   /* (public = private) */
        TU_MPI(MPI_Win_unlock(me, w->win));
        TU_CHECK(0 == check(result, l, me, r, 1.0), "%s epoch %d: get of %d elements",
                 tu_flavor_names[w->flavor], kind, l->count);
        TU_CHECK(0 == check_at(w->base, l, prev, r, 1.0), "%s epoch %d: put from rank %d",
                 tu_flavor_names[w->flavor], kind, prev);
        TU_CHECK(0 == check_at((char *) w->base + w->size / 2, l, prev, r, 2.0),
                 "%s epoch %d: accumulates from rank %d", tu_flavor_names[w->flavor], kind,
                 prev);
    }
    MPI_Barrier(MPI_COMM_WORLD);
    memset(w->base, 0, w->size);
    MPI_Barrier(MPI_COMM_WORLD);
}

/* Last, without --pair: a first contact with every other rank (4 ranks and
 * more), large and non-contiguous, right before MPI_Finalize. */
static void last_contact(int me, int nprocs, int maxn, char *origin)
{
    layout_t l = make_layout(0, maxn);
    MPI_Aint slot;
    tu_win_t w;

    slot = l.extent + 64;
    tu_win_create(TU_ALLOCATE, (MPI_Aint) nprocs * slot, 1, MPI_INFO_NULL, MPI_COMM_WORLD, &w);
    fill(origin, &l, me, 0);
    TU_MPI(MPI_Win_lock_all(0, w.win));
    for (int k = 1; k < nprocs; k++) {
        TU_MPI(MPI_Put(origin, l.count, l.is_double ? MPI_DOUBLE : MPI_INT, (me + k) % nprocs,
                       (MPI_Aint) me * slot, 1, l.type, w.win));
    }
    TU_MPI(MPI_Win_unlock_all(w.win));
    MPI_Barrier(MPI_COMM_WORLD);
    for (int k = 1; k < nprocs; k++) {
        int from = (me + nprocs - k) % nprocs;
        TU_CHECK(0 == check_at((char *) w.base + from * slot, &l, from, 0, 1.0),
                 "last epoch: put from rank %d", from);
    }
    tu_win_free(&w);
    MPI_Type_free(&l.type);
}

int main(int argc, char **argv)
{
    int me, nprocs, next, prev, rounds, maxn, pair, active;
    MPI_Group world, g_next, g_prev;

    tu_init_ring(&argc, &argv, &me, &nprocs, &next, &prev);
    rounds = (int) tu_opt_long(argc, argv, "--rounds", 12);
    maxn = (int) tu_opt_long(argc, argv, "--max", 1 << 18);
    pair = tu_opt_flag(argc, argv, "--pair");
    active = !pair || 0 == me || nprocs - 1 == me;
    if (pair) next = prev = (0 == me) ? nprocs - 1 : 0;
    MPI_Comm_group(MPI_COMM_WORLD, &world);
    MPI_Group_incl(world, 1, &next, &g_next);
    MPI_Group_incl(world, 1, &prev, &g_prev);
    char *origin = malloc((size_t) maxn * 8 + 64);
    char *result = malloc((size_t) maxn * 8 + 64);

    for (int flavor = 0; flavor < TU_NFLAVORS; flavor++) {
        if (!tu_flavor_or_all(flavor)) continue;
        for (int r = 0; r < rounds; r++) {
            /* element counts 1, 10, 73, ... up to maxn, cycling */
            int n = 1;
            for (int s = 0; s < r % 8; s++) n = n * 7 + 3;
            if (n > maxn) n = maxn;
            layout_t l = make_layout(r + flavor, n);
            tu_win_t w;
            /* two halves, each spanning the layout's extent */
            tu_win_create(flavor, 2 * (l.extent + 64), 1, MPI_INFO_NULL, MPI_COMM_WORLD, &w);
            epoch(&w, r % 4, &l, r, me, next, prev, active, origin, result, g_next, g_prev);
            tu_win_free(&w);
            MPI_Type_free(&l.type);
        }
    }
    if (!pair) last_contact(me, nprocs, maxn, origin);
    free(origin);
    free(result);
    MPI_Group_free(&g_next);
    MPI_Group_free(&g_prev);
    MPI_Group_free(&world);
    int rc = tu_finish("fin_teardown");
    MPI_Finalize();
    return rc;
}
