/* win_comm: windows over communicators whose freed windows' communicators
 * osc/ucxx keeps for the next window over the same one (osc_ucxx_wcomm.c).
 * Every process must then run a window's collectives on the same
 * communicator: a process on the kept one and another on a new duplicate
 * hang (the watchdog fails the run) or mix two windows' values.
 *
 * Each window is checked (check_window): every rank fills its memory with
 * (rank, tag); fence; a get of the whole of the next rank's window (checked)
 * and a put of the tag into the last element of the previous rank's; fence
 * (checked by the owner); an exclusive lock on the next rank with a
 * fetch_and_op(+1) on its first element; a barrier of the window's
 * communicator; the first element is pattern + 1.
 *
 *  A. ROUNDS (-r, default 40) windows in a row over MPI_COMM_WORLD, each
 *     enabled flavor: from the second on, over the kept communicator.
 *  B. Two windows alive at once over a duplicate C of MPI_COMM_WORLD, freed
 *     in creation order, then in the reverse order: one of them keeps.
 *  C. A window over C while the program frees C, then the window; then
 *     windows over a new duplicate (Open MPI may give it C's memory and
 *     context id: nothing of C may be found on it).
 *  D. Windows over MPI_COMM_SELF and over halves of MPI_COMM_WORLD (split by
 *     rank parity: other groups, each its own kept communicator).
 *  E. An MPIX_Win_dup_with_info handle still open when the window is freed
 *     (the core outlives the free, so nothing is kept), then windows over
 *     the same communicator.
 *  F. (--mt, MPI_THREAD_MULTIPLE) a free in one thread passes a creation in
 *     another in a different order on each rank: rank 0 frees W over C and
 *     then creates W2 over C; the other ranks start creating W2 in one
 *     thread and free W 100 ms later in another.  Rank 0 then finds W's
 *     communicator kept, the others do not: without the agreement that a
 *     creation makes under MPI_THREAD_MULTIPLE, a hang.  FROUNDS (-f,
 *     default 6) times.
 *  G. WINS (-w, default 24) windows alive at once over one communicator
 *     (below MPI_THREAD_MULTIPLE all on one shared duplicate of it, each
 *     named on the wire by its number there), of every flavor in turn, each
 *     with its own values: fences on all of them (a put each), exclusive
 *     locks with fetch_and_op, gets from every dynamic window (whose region
 *     lookups are active messages naming the window: one for a wrong window
 *     answers with its regions) and a window from a memory handle of each
 *     dynamic window (the handle names the parent window); then every third
 *     window freed, as many new ones made and everything checked again.
 *     The run line with osc_ucxx_comm_windows 3 makes a new shared
 *     duplicate every 3 windows while the older ones live on.
 * --mt0: rank 0 alone asks for MPI_THREAD_MULTIPLE.  Its windows cannot
 * share a communicator, so the others' must not either: the first window
 * over each communicator agrees on it (else the others run a window's
 * collectives on a shared duplicate while rank 0 runs them on its own: a
 * hang or mixed values).
 * The run lines also turn keeping off (osc_ucxx_keep_comm 0). */
#include "testutil.h"
#include "mpix_ucxx.h"
#include <pthread.h>
#include <stdint.h>
#include <unistd.h>

#define N 64   /* int64 elements per window */

static int me, nprocs, mt;

static int64_t pattern(int rank, int tag, int i)
{
    return ((int64_t) tag << 32) + rank * 1000 + i;
}

static void check_window(MPI_Comm comm, int flavor, int tag, const char *part)
{
    int r, n, nx, pv;
    tu_win_t w;
    int64_t got[N], one = 1, old;

    MPI_Comm_rank(comm, &r);
    MPI_Comm_size(comm, &n);
    nx = (r + 1) % n;
    pv = (r + n - 1) % n;
    tu_where = part;
    tu_win_create(flavor, N * sizeof(int64_t), sizeof(int64_t), MPI_INFO_NULL, comm, &w);
    if (MPI_WIN_NULL == w.win) return;  /* (a shared window the component cannot make) */
    int64_t *mem = w.base;
    for (int i = 0; i < N; ++i) mem[i] = pattern(r, tag, i);
    TU_MPI(MPI_Win_fence(0, w.win));
    TU_MPI(MPI_Get(got, N, MPI_INT64_T, nx, tu_disp(&w, nx, 0), N, MPI_INT64_T, w.win));
    int64_t mark = -(int64_t) tag;
    TU_MPI(MPI_Put(&mark, 1, MPI_INT64_T, pv, tu_disp(&w, pv, N - 1), 1, MPI_INT64_T, w.win));
    TU_MPI(MPI_Win_fence(0, w.win));
    for (int i = 0; i < N - 1; ++i) {
        TU_CHECK(got[i] == pattern(nx, tag, i), "%s %s tag %d: got[%d] = %lld, expected %lld",
                 part, tu_flavor_names[flavor], tag, i, (long long) got[i],
                 (long long) pattern(nx, tag, i));
    }
    TU_CHECK(mem[N - 1] == mark, "%s %s tag %d: put %lld, expected %lld", part,
             tu_flavor_names[flavor], tag, (long long) mem[N - 1], (long long) mark);
    TU_MPI(MPI_Win_fence(MPI_MODE_NOSUCCEED, w.win));
    TU_MPI(MPI_Win_lock(MPI_LOCK_EXCLUSIVE, nx, 0, w.win));
    TU_MPI(MPI_Fetch_and_op(&one, &old, MPI_INT64_T, nx, tu_disp(&w, nx, 0), MPI_SUM, w.win));
    TU_MPI(MPI_Win_unlock(nx, w.win));
    TU_CHECK(old == pattern(nx, tag, 0), "%s %s tag %d: fetched %lld, expected %lld", part,
             tu_flavor_names[flavor], tag, (long long) old, (long long) pattern(nx, tag, 0));
    MPI_Barrier(comm);
    TU_CHECK(mem[0] == pattern(r, tag, 0) + 1, "%s %s tag %d: first element %lld, expected %lld",
             part, tu_flavor_names[flavor], tag, (long long) mem[0],
             (long long) pattern(r, tag, 0) + 1);
    tu_win_free(&w);
}

/* A window over `comm` with its memory filled, for the parts that keep
 * windows open across others. */
static void open_window(MPI_Comm comm, int tag, tu_win_t *w)
{
    int r;
    MPI_Comm_rank(comm, &r);
    tu_win_create(TU_ALLOCATE, N * sizeof(int64_t), sizeof(int64_t), MPI_INFO_NULL, comm, w);
    for (int i = 0; i < N; ++i) ((int64_t *) w->base)[i] = pattern(r, tag, i);
    MPI_Barrier(comm);
}

/* B: two windows at once, freed in both orders. */
static void two_at_once(MPI_Comm c, int tag)
{
    tu_win_t a, b;
    open_window(c, tag, &a);
    open_window(c, tag + 1, &b);
    tu_win_free(&a);
    tu_win_free(&b);
    check_window(c, TU_ALLOCATE, tag + 2, "B after in order");
    open_window(c, tag + 3, &a);
    open_window(c, tag + 4, &b);
    tu_win_free(&b);
    tu_win_free(&a);
    check_window(c, TU_CREATE, tag + 5, "B after reverse order");
    check_window(c, TU_ALLOCATE, tag + 6, "B after reverse order");
}

/* F: see the file comment. */
typedef struct { tu_win_t *w; MPI_Comm c; int tag; unsigned delay_us; } job_t;

static void *free_job(void *p)
{
    job_t *j = p;
    usleep(j->delay_us);
    tu_win_free(j->w);
    return NULL;
}

static void *create_job(void *p)
{
    job_t *j = p;
    open_window(j->c, j->tag, j->w);
    return NULL;
}

static void passing(MPI_Comm c, int tag)
{
    tu_win_t w, w2;
    open_window(c, tag, &w);
    if (0 == me) {
        tu_win_free(&w);
        open_window(c, tag + 1, &w2);
    } else {
        pthread_t tf, tc;
        job_t jf = {&w, c, tag, 100000}, jc = {&w2, c, tag + 1, 0};
        pthread_create(&tc, NULL, create_job, &jc);
        pthread_create(&tf, NULL, free_job, &jf);
        pthread_join(tc, NULL);
        pthread_join(tf, NULL);
    }
    /* W2 works (its own values), then the next window over c too. */
    int64_t got = 0;
    int nx = (me + 1) % nprocs;
    TU_MPI(MPI_Win_lock(MPI_LOCK_SHARED, nx, 0, w2.win));
    TU_MPI(MPI_Get(&got, 1, MPI_INT64_T, nx, 3, 1, MPI_INT64_T, w2.win));
    TU_MPI(MPI_Win_unlock(nx, w2.win));
    TU_CHECK(got == pattern(nx, tag + 1, 3), "F tag %d: got %lld, expected %lld", tag,
             (long long) got, (long long) pattern(nx, tag + 1, 3));
    MPI_Barrier(c);
    tu_win_free(&w2);
    check_window(c, TU_ALLOCATE, tag + 2, "F after");
}

/* G: see the file comment. */
typedef struct {
    tu_win_t w;
    int tag;
} gwin_t;

static void g_open(MPI_Comm c, gwin_t *g, int flavor, int tag)
{
    int r;
    MPI_Comm_rank(c, &r);
    g->tag = tag;
    tu_win_create(flavor, N * sizeof(int64_t), sizeof(int64_t), MPI_INFO_NULL, c, &g->w);
    if (MPI_WIN_NULL == g->w.win) tu_win_create(TU_ALLOCATE, N * sizeof(int64_t),
                                                sizeof(int64_t), MPI_INFO_NULL, c, &g->w);
    for (int i = 0; i < N; ++i) ((int64_t *) g->w.base)[i] = pattern(r, tag, i);
}

/* Every live window: a fenced put into the previous rank's element 1, an
 * exclusive fetch_and_op(+1) on the next rank's element 2, a get of the
 * next rank's elements 3.. (and through a memory handle for dynamic ones);
 * then each checks its own.  `round` tells the checks apart. */
static void g_check(MPI_Comm c, gwin_t *g, int n, int round)
{
    int r, np, nx, pv;
    MPI_Comm_rank(c, &r);
    MPI_Comm_size(c, &np);
    nx = (r + 1) % np;
    pv = (r + np - 1) % np;
    for (int k = 0; k < n; ++k) {
        tu_win_t *w = &g[k].w;
        int64_t mark = -(int64_t) (g[k].tag * 100 + round), one = 1, old = 0, got[4];
        TU_MPI(MPI_Win_fence(0, w->win));
        TU_MPI(MPI_Put(&mark, 1, MPI_INT64_T, pv, tu_disp(w, pv, 1), 1, MPI_INT64_T, w->win));
        TU_MPI(MPI_Win_fence(MPI_MODE_NOSUCCEED, w->win));
        TU_CHECK(((int64_t *) w->base)[1] == mark, "G round %d window %d (%s): put %lld, "
                 "expected %lld", round, k, tu_flavor_names[w->flavor],
                 (long long) ((int64_t *) w->base)[1], (long long) mark);
        TU_MPI(MPI_Win_lock(MPI_LOCK_EXCLUSIVE, nx, 0, w->win));
        TU_MPI(MPI_Fetch_and_op(&one, &old, MPI_INT64_T, nx, tu_disp(w, nx, 2), MPI_SUM, w->win));
        TU_MPI(MPI_Get(got, 4, MPI_INT64_T, nx, tu_disp(w, nx, 3), 4, MPI_INT64_T, w->win));
        TU_MPI(MPI_Win_unlock(nx, w->win));
        TU_CHECK(old == pattern(nx, g[k].tag, 2) + round, "G round %d window %d (%s): "
                 "fetched %lld, expected %lld", round, k, tu_flavor_names[w->flavor],
                 (long long) old, (long long) pattern(nx, g[k].tag, 2) + round);
        for (int i = 0; i < 4; ++i) {
            TU_CHECK(got[i] == pattern(nx, g[k].tag, 3 + i), "G round %d window %d (%s): "
                     "got[%d] = %lld, expected %lld", round, k, tu_flavor_names[w->flavor],
                     i, (long long) got[i], (long long) pattern(nx, g[k].tag, 3 + i));
        }
        if (TU_DYNAMIC == w->flavor) {
            char mine[MPIX_MAX_MEMHANDLE_SIZE], theirs[MPIX_MAX_MEMHANDLE_SIZE];
            int ms = 0;
            MPI_Win hw = MPI_WIN_NULL;
            MPI_Status st;
            int64_t v = 0;
            TU_MPI(MPIX_Memhandle_create(w->base, N * sizeof(int64_t), MPI_INFO_NULL, w->win,
                                         mine, &ms));
            MPI_Sendrecv(mine, ms, MPI_BYTE, pv, 9, theirs, sizeof(theirs), MPI_BYTE, nx, 9, c,
                         &st);
            TU_MPI(MPIX_Win_from_memhandle(theirs, N * sizeof(int64_t), sizeof(int64_t),
                                           MPI_INFO_NULL, nx, w->win, &hw));
            TU_MPI(MPI_Win_lock(MPI_LOCK_SHARED, nx, 0, w->win));
            TU_MPI(MPI_Get(&v, 1, MPI_INT64_T, nx, 5, 1, MPI_INT64_T, hw));
            TU_MPI(MPI_Win_unlock(nx, w->win));
            TU_CHECK(v == pattern(nx, g[k].tag, 5), "G round %d window %d: through a memory "
                     "handle %lld, expected %lld", round, k, (long long) v,
                     (long long) pattern(nx, g[k].tag, 5));
            TU_MPI(MPI_Win_free(&hw));
            MPI_Barrier(c);
            TU_MPI(MPIX_Memhandle_release(mine, w->win));
        }
    }
}

static void many_alive(MPI_Comm c, int wins, int *tag)
{
    gwin_t *g = calloc((size_t) wins, sizeof(*g));
    int f = 0;
    for (int k = 0; k < wins; ++k) {
        while (!tu_flavor_or_all(f % TU_NFLAVORS_ALL)) f++;
        g_open(c, &g[k], f++ % TU_NFLAVORS_ALL, ++*tag);
    }
    MPI_Barrier(c);
    g_check(c, g, wins, 0);
    for (int k = 0; k < wins; k += 3) {
        int flavor = g[k].w.flavor;
        tu_win_free(&g[k].w);
        g_open(c, &g[k], flavor, ++*tag);
    }
    MPI_Barrier(c);
    /* (round 1: the new windows were never fetched-and-added) */
    for (int k = 0; k < wins; k += 3) {
        int64_t *m = g[k].w.base;
        m[2] += 1;
    }
    MPI_Barrier(c);
    g_check(c, g, wins, 1);
    for (int k = wins - 1; k >= 0; --k) tu_win_free(&g[k].w);
    free(g);
}

int main(int argc, char **argv)
{
    int rounds = (int) tu_opt_long(argc, argv, "-r", 40);
    int frounds = (int) tu_opt_long(argc, argv, "-f", 6);
    int wins = (int) tu_opt_long(argc, argv, "-w", 24);
    int tag = 1;

    mt = tu_mt = tu_opt_flag(argc, argv, "--mt");
    if (tu_opt_flag(argc, argv, "--mt0")) {   /* (rank 0 alone: no part F) */
        const char *r = getenv("OMPI_COMM_WORLD_RANK");
        tu_mt = NULL != r && 0 == atoi(r);
    }
    tu_init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &me);
    MPI_Comm_size(MPI_COMM_WORLD, &nprocs);
    tu_watchdog("win_comm", 150);

    /* A */
    for (int f = 0; f < TU_NFLAVORS_ALL; ++f) {
        if (!tu_flavor_or_all(f)) continue;
        for (int i = 0; i < rounds; ++i) check_window(MPI_COMM_WORLD, f, tag++, "A");
    }

    /* B */
    MPI_Comm c, c2;
    MPI_Comm_dup(MPI_COMM_WORLD, &c);
    two_at_once(c, tag);
    tag += 10;

    /* C */
    tu_win_t w;
    open_window(c, tag, &w);
    MPI_Comm_free(&c);   /* (the window lives on) */
    {
        int64_t got = 0;
        int nx = (me + 1) % nprocs;
        TU_MPI(MPI_Win_lock(MPI_LOCK_SHARED, nx, 0, w.win));
        TU_MPI(MPI_Get(&got, 1, MPI_INT64_T, nx, 5, 1, MPI_INT64_T, w.win));
        TU_MPI(MPI_Win_unlock(nx, w.win));
        TU_CHECK(got == pattern(nx, tag, 5), "C: got %lld after MPI_Comm_free", (long long) got);
    }
    TU_MPI(MPI_Win_fence(0, w.win));
    TU_MPI(MPI_Win_fence(0, w.win));
    tu_win_free(&w);
    MPI_Comm_dup(MPI_COMM_WORLD, &c2);
    for (int i = 0; i < 4; ++i) check_window(c2, i % 2 ? TU_CREATE : TU_ALLOCATE, ++tag, "C");
    MPI_Comm_free(&c2);
    check_window(MPI_COMM_WORLD, TU_ALLOCATE, ++tag, "C world");

    /* D */
    MPI_Comm half;
    MPI_Comm_split(MPI_COMM_WORLD, me % 2, me, &half);
    for (int i = 0; i < 3; ++i) {
        check_window(MPI_COMM_SELF, TU_ALLOCATE, ++tag, "D self");
        check_window(half, TU_ALLOCATE, ++tag, "D half");
        check_window(MPI_COMM_WORLD, TU_ALLOCATE, ++tag, "D world");
    }

    /* E */
    MPI_Win d;
    open_window(half, ++tag, &w);
    TU_MPI(MPIX_Win_dup_with_info(w.win, MPI_INFO_NULL, &d));
    tu_win_free(&w);
    check_window(half, TU_ALLOCATE, ++tag, "E (duplicate open)");
    TU_MPI(MPI_Win_free(&d));
    for (int i = 0; i < 3; ++i) check_window(half, TU_ALLOCATE, ++tag, "E");
    MPI_Comm_free(&half);

    /* F */
    if (mt) {
        MPI_Comm_dup(MPI_COMM_WORLD, &c);
        for (int i = 0; i < frounds; ++i) {
            passing(c, tag);
            tag += 3;
        }
        MPI_Comm_free(&c);
    }

    /* G */
    MPI_Comm_dup(MPI_COMM_WORLD, &c);
    many_alive(c, wins, &tag);
    many_alive(MPI_COMM_WORLD, wins / 2, &tag);
    MPI_Comm_free(&c);

    /* A communicator stays kept for MPI_COMM_WORLD: MPI_Finalize takes it. */
    check_window(MPI_COMM_WORLD, TU_ALLOCATE, ++tag, "last");
    alarm(0);
    int rc = tu_finish("win_comm");
    MPI_Finalize();
    return rc;
}
