/* at_notice: PSCW and fence epochs end by notices that follow the
 * operations (osc_ucxx_notice.c): every kind of operation must be applied
 * at the target when its MPI_Win_wait, MPI_Win_test or fence returns, and
 * complete at the origin when MPI_Win_complete or the fence returns.
 *
 * Rounds cycle through shapes of who accesses whom (each a different group
 * shape for PSCW):
 *   ring  (o -> o + 1), star (everybody -> 0: several origins to one
 *   target), all (o -> everybody, itself included), odd -> even, and
 *   fan-out (0 -> everybody else),
 * and through ways to synchronize: post/start/complete/wait, the same with
 * MPI_Win_test polling, post delayed by the target so that MPI_Win_start
 * and the first operations come before the post arrives, and fence pairs
 * (with NOPRECEDE / NOSUCCEED on some).  In each epoch every origin issues
 * to each of its targets: put, get of the target's fresh data, accumulate,
 * get_accumulate, fetch_and_op, compare_and_swap, rput and raccumulate
 * (their requests completed after the epoch), and every third round a
 * large put.  After the epoch the target checks every value it was given
 * and the origin every value it fetched; the running counts make a lost,
 * late or doubled operation visible.  Every window flavor.
 *
 * Environment: AT_ROUNDS (default 60; 30 over TCP or across hosts).
 */
#include "testutil.h"
#include <stdint.h>
#include <unistd.h>

enum { NPUT = 8, NSRC = 8, BIGN = 4096 };
/* Per origin, in each target's window: */
enum { S_PUT = 0, S_ACC = NPUT, S_GACC, S_FOP, S_CAS, S_RPUT, S_RACC = S_RPUT + NPUT, SLOT = 24 };
enum { SHAPES = 5, MODES = 4 };

static int me, nprocs;

/* Does origin o access target t in round r? */
static int accesses(int r, int o, int t)
{
    switch (r % SHAPES) {
    case 0: return t == (o + 1) % nprocs;
    case 1: return t == 0 && o != 0;
    case 2: return 1;
    case 3: return (o & 1) && !(t & 1);
    default: return o == 0 && t != 0;
    }
}

static int mode_of(int r) { return (r / SHAPES) % MODES; }  /* 0 wait, 1 test, 2 late post, 3 fence */

static int64_t put_val(int r, int o, int t, int j) { return (((int64_t) r * 64 + o) * 64 + t) * 16 + j + 1; }
static int64_t src_val(int r, int t, int j) { return -(((int64_t) r * 64 + t) * 16 + j + 7); }
static int64_t big_val(int r, int o, int j) { return ((int64_t) r << 32) + ((int64_t) o << 20) + j; }

/* Ranks accessing me (from = 1) or accessed by me in round r, as a group. */
static int peers(int r, int from, MPI_Group world, MPI_Group *g)
{
    int list[64], n = 0;
    for (int p = 0; p < nprocs; p++) {
        if (from ? accesses(r, p, me) : accesses(r, me, p)) list[n++] = p;
    }
    if (n > 0) MPI_Group_incl(world, n, list, g);
    return n;
}

typedef struct {
    tu_win_t w;
    int64_t *mem;            /* our window: nprocs slots, nprocs big areas, our source data */
    int64_t (*cnt)[64];      /* cnt[o][t]: rounds before this one in which o accessed t */
    int64_t (*accsum)[64];   /* ... the sum o accumulated into t */
} ctx_t;

static MPI_Aint slot_at(int o, int k) { return (MPI_Aint) o * SLOT + k; }
static MPI_Aint big_at(int o) { return (MPI_Aint) nprocs * SLOT + (MPI_Aint) o * BIGN; }
static MPI_Aint src_at(void) { return (MPI_Aint) nprocs * (SLOT + BIGN); }

typedef struct {
    int64_t get[64][NSRC], gacc[64], fop[64], cas[64];
    int64_t put[64][NPUT], rput[64][NPUT], one, two;
    int64_t *big;
    MPI_Request req[128];
    int nreq;
} origin_t;

static void issue(ctx_t *c, origin_t *o, int r, int t)
{
    MPI_Win win = c->w.win;
    const tu_win_t *w = &c->w;
    int64_t n = c->cnt[me][t], next = n + 1;

    for (int j = 0; j < NPUT; j++) {
        o->put[t][j] = put_val(r, me, t, j);
        o->rput[t][j] = -put_val(r, me, t, j);
    }
    TU_MPI(MPI_Put(o->put[t], NPUT, MPI_INT64_T, t, tu_disp(w, t, slot_at(me, S_PUT)), NPUT,
                   MPI_INT64_T, win));
    TU_MPI(MPI_Get(o->get[t], NSRC, MPI_INT64_T, t, tu_disp(w, t, src_at()), NSRC, MPI_INT64_T,
                   win));
    o->one = 1;
    o->two = 2;
    int64_t add = r + 1;
    TU_MPI(MPI_Accumulate(&add, 1, MPI_INT64_T, t, tu_disp(w, t, slot_at(me, S_ACC)), 1,
                          MPI_INT64_T, MPI_SUM, win));
    TU_MPI(MPI_Get_accumulate(&o->one, 1, MPI_INT64_T, &o->gacc[t], 1, MPI_INT64_T, t,
                              tu_disp(w, t, slot_at(me, S_GACC)), 1, MPI_INT64_T, MPI_SUM, win));
    TU_MPI(MPI_Fetch_and_op(&o->one, &o->fop[t], MPI_INT64_T, t,
                            tu_disp(w, t, slot_at(me, S_FOP)), MPI_SUM, win));
    TU_MPI(MPI_Compare_and_swap(&next, &n, &o->cas[t], MPI_INT64_T, t,
                                tu_disp(w, t, slot_at(me, S_CAS)), win));
    TU_MPI(MPI_Rput(o->rput[t], NPUT, MPI_INT64_T, t, tu_disp(w, t, slot_at(me, S_RPUT)), NPUT,
                    MPI_INT64_T, win, &o->req[o->nreq++]));
    TU_MPI(MPI_Raccumulate(&o->two, 1, MPI_INT64_T, t, tu_disp(w, t, slot_at(me, S_RACC)), 1,
                           MPI_INT64_T, MPI_SUM, win, &o->req[o->nreq++]));
    if (0 == r % 3) {
        for (int j = 0; j < BIGN; j++) o->big[(size_t) t * BIGN + j] = big_val(r, me, j);
        TU_MPI(MPI_Put(o->big + (size_t) t * BIGN, BIGN, MPI_INT64_T, t,
                       tu_disp(w, t, big_at(me)), BIGN, MPI_INT64_T, win));
    }
}

/* Origin side, after the epoch: what came back. */
static void check_origin(ctx_t *c, origin_t *o, int r)
{
    for (int t = 0; t < nprocs; t++) {
        if (!accesses(r, me, t)) continue;
        int64_t n = c->cnt[me][t];
        for (int j = 0; j < NSRC; j++) {
            TU_CHECK(o->get[t][j] == src_val(r, t, j), "round %d: get from %d [%d] = %lld, want %lld",
                     r, t, j, (long long) o->get[t][j], (long long) src_val(r, t, j));
        }
        TU_CHECK(o->gacc[t] == n && o->fop[t] == n && o->cas[t] == n,
                 "round %d: fetched from %d: get_acc %lld fop %lld cas %lld, want %lld", r, t,
                 (long long) o->gacc[t], (long long) o->fop[t], (long long) o->cas[t],
                 (long long) n);
    }
}

/* Target side, after the epoch: what we were given. */
static void check_target(ctx_t *c, int r)
{
    int64_t *m = c->mem;
    for (int o = 0; o < nprocs; o++) {
        if (!accesses(r, o, me)) continue;
        int64_t n = c->cnt[o][me] + 1, *s = m + slot_at(o, 0);
        for (int j = 0; j < NPUT; j++) {
            TU_CHECK(s[S_PUT + j] == put_val(r, o, me, j) && s[S_RPUT + j] == -put_val(r, o, me, j),
                     "round %d mode %d: put from %d [%d] = %lld / rput %lld, want %lld", r,
                     mode_of(r), o, j, (long long) s[S_PUT + j], (long long) s[S_RPUT + j],
                     (long long) put_val(r, o, me, j));
        }
        TU_CHECK(s[S_ACC] == c->accsum[o][me] + r + 1 && s[S_GACC] == n && s[S_FOP] == n &&
                 s[S_CAS] == n && s[S_RACC] == 2 * n,
                 "round %d mode %d: from %d: acc %lld (want %lld) get_acc %lld fop %lld cas %lld "
                 "racc %lld (want %lld, racc %lld)", r, mode_of(r), o, (long long) s[S_ACC],
                 (long long) (c->accsum[o][me] + r + 1), (long long) s[S_GACC],
                 (long long) s[S_FOP], (long long) s[S_CAS], (long long) s[S_RACC],
                 (long long) n, (long long) (2 * n));
        if (0 == r % 3) {
            int64_t *b = m + big_at(o);
            long bad = 0;
            for (int j = 0; j < BIGN; j++) bad += b[j] != big_val(r, o, j);
            TU_CHECK(0 == bad, "round %d: large put from %d: %ld of %d elements wrong", r, o, bad,
                     BIGN);
        }
    }
}

static void round_done(ctx_t *c, int r)
{
    for (int o = 0; o < nprocs; o++) {
        for (int t = 0; t < nprocs; t++) {
            if (!accesses(r, o, t)) continue;
            c->cnt[o][t]++;
            c->accsum[o][t] += r + 1;
        }
    }
}

static void one_round(ctx_t *c, origin_t *o, int r, MPI_Group world)
{
    MPI_Group from_g, to_g;
    int nfrom = peers(r, 1, world, &from_g), nto = peers(r, 0, world, &to_g);
    int mode = mode_of(r), flag = 0;

    for (int j = 0; j < NSRC; j++) c->mem[src_at() + j] = src_val(r, me, j);
    o->nreq = 0;
    if (3 == mode) {
        TU_MPI(MPI_Win_fence(r & 1 ? MPI_MODE_NOPRECEDE : 0, c->w.win));
        for (int t = 0; t < nprocs; t++) {
            if (accesses(r, me, t)) issue(c, o, r, t);
        }
        TU_MPI(MPI_Win_fence((r & 2) || 3 != mode_of(r + 1) ? MPI_MODE_NOSUCCEED : 0, c->w.win));
    } else {
        if (nfrom > 0 && 2 != mode) TU_MPI(MPI_Win_post(from_g, 0, c->w.win));
        if (nto > 0) {
            TU_MPI(MPI_Win_start(to_g, 0, c->w.win));
            if (nfrom > 0 && 2 == mode) {
                /* our own post comes late: every origin has started by now
                 * (a process in both roles would otherwise wait for itself) */
                usleep(20000);
                TU_MPI(MPI_Win_post(from_g, 0, c->w.win));
            }
            for (int t = 0; t < nprocs; t++) {
                if (accesses(r, me, t)) issue(c, o, r, t);
            }
            TU_MPI(MPI_Win_complete(c->w.win));
        } else if (nfrom > 0 && 2 == mode) {
            usleep(20000);   /* the origins started long ago */
            TU_MPI(MPI_Win_post(from_g, 0, c->w.win));
        }
        if (nfrom > 0 && 1 == mode) {
            while (!flag) TU_MPI(MPI_Win_test(c->w.win, &flag));
        } else if (nfrom > 0) {
            TU_MPI(MPI_Win_wait(c->w.win));
        }
    }
    /* what we fetched is here once the epoch closed, requests or not */
    check_origin(c, o, r);
    check_target(c, r);
    TU_MPI(MPI_Waitall(o->nreq, o->req, MPI_STATUSES_IGNORE));
    round_done(c, r);
    if (nfrom > 0) MPI_Group_free(&from_g);
    if (nto > 0) MPI_Group_free(&to_g);
    /* the next round's source data is stored only once everybody read ours */
    MPI_Barrier(MPI_COMM_WORLD);
}

int main(int argc, char **argv)
{
    MPI_Group world;
    int rounds;

    tu_parse_args(argc, argv);
    tu_init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &me);
    MPI_Comm_size(MPI_COMM_WORLD, &nprocs);
    if (nprocs > 64) {
        if (0 == me) fprintf(stderr, "at_notice: at most 64 ranks\n");
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    rounds = tu_env_int("AT_ROUNDS", tu_slow_transport() ? 30 : 60);
    MPI_Comm_group(MPI_COMM_WORLD, &world);
    for (int flavor = 0; flavor < TU_NFLAVORS_ALL; flavor++) {
        ctx_t c;
        origin_t *o = calloc(1, sizeof(*o));
        if (!tu_flavor_or_all(flavor)) continue;
        memset(&c, 0, sizeof(c));
        c.cnt = calloc(64, sizeof(*c.cnt));
        c.accsum = calloc(64, sizeof(*c.accsum));
        o->big = calloc((size_t) nprocs * BIGN, sizeof(int64_t));
        tu_win_create(flavor, (src_at() + NSRC) * sizeof(int64_t), sizeof(int64_t),
                      MPI_INFO_NULL, MPI_COMM_WORLD, &c.w);
        if (MPI_WIN_NULL != c.w.win) {
            c.mem = c.w.base;
            for (int r = 0; r < rounds; r++) one_round(&c, o, r, world);
            tu_win_free(&c.w);
        }
        free(o->big);
        free(o);
        free(c.cnt);
        free(c.accsum);
    }
    MPI_Group_free(&world);
    int rc = tu_finish("at_notice");
    MPI_Finalize();
    return rc;
}
