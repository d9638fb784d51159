/* Passive-target epochs complete while the target computes outside MPI, with
 * the default settings (no MCA parameter, no environment).
 *
 * Rank 0, the target, computes for BUSY seconds (a loop without any MPI
 * call) after a barrier; every rank on another node than rank 0 is an
 * origin: it waits a little (the target is computing by then), then runs
 * each passive pattern against rank 0 and times them all:
 *   lock exclusive + put + unlock; lock shared + get + unlock;
 *   lock shared + accumulate(SUM) + unlock;
 *   lock shared + get_accumulate(SUM) + unlock;
 *   lock_all + fetch_and_op(SUM) + flush + compare_and_swap + unlock_all.
 * Off the node UCX emulates RMA with messages that the target's CPU serves,
 * so they can only complete during the loop if something serves them
 * without the application (the component's progress thread): the origin
 * requires all of them to end within a third of the loop.  Values are
 * checked after the loop (the target's window, the origins' results).
 * Every window flavor.  On one node (no origin off rank 0's node) rank 1
 * runs the same epochs and only the values are checked: the target's own
 * memory is mapped there, or nothing serves it by default.
 *
 * Usage: busy_target [-s SECONDS]   (the target's loop, default 1.5) */
#include "testutil.h"
#include <time.h>
#include <unistd.h>

#define SLOTS 8          /* int64 words per origin */
#define ACC_ADD 5
#define FOP_ADD 7

static double busy_s = 1.5;

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + 1e-9 * ts.tv_nsec;
}

/* The target's work: floating-point arithmetic for `s` seconds, no MPI. */
static double compute(double s)
{
    volatile double x = 1.0;
    double t0 = now();
    while (now() - t0 < s) {
        for (int j = 0; j < 10000; j++) x = x * 1.0000001 + 1e-9;
    }
    return x;
}

/* Word w of origin o's slots at the target. */
static MPI_Aint slot(const tu_win_t *w, int o, int word)
{
    return tu_disp(w, 0, (MPI_Aint) o * SLOTS + word);
}

/* What the target put in origin o's slots before the loop. */
static int64_t initial(int o, int word)
{
    return 100 * (o + 1) + 10 * word + (4 == word ? 0 : 3);
}

/* The origin's epochs; the seconds they took. */
static double epochs(const tu_win_t *w, int me, int64_t *got, int64_t *fetched, int64_t *cas)
{
    int64_t put = 1000 + me, acc = ACC_ADD, fop = FOP_ADD, cmp = initial(me, 5), swap = 50 + me;
    double t0 = now();

    TU_MPI(MPI_Win_lock(MPI_LOCK_EXCLUSIVE, 0, 0, w->win));
    TU_MPI(MPI_Put(&put, 1, MPI_INT64_T, 0, slot(w, me, 0), 1, MPI_INT64_T, w->win));
    TU_MPI(MPI_Win_unlock(0, w->win));

    TU_MPI(MPI_Win_lock(MPI_LOCK_SHARED, 0, 0, w->win));
    TU_MPI(MPI_Get(got, 1, MPI_INT64_T, 0, slot(w, me, 1), 1, MPI_INT64_T, w->win));
    TU_MPI(MPI_Win_unlock(0, w->win));

    TU_MPI(MPI_Win_lock(MPI_LOCK_SHARED, 0, 0, w->win));
    TU_MPI(MPI_Accumulate(&acc, 1, MPI_INT64_T, 0, slot(w, me, 2), 1, MPI_INT64_T, MPI_SUM,
                          w->win));
    TU_MPI(MPI_Win_unlock(0, w->win));

    TU_MPI(MPI_Win_lock(MPI_LOCK_SHARED, 0, 0, w->win));
    TU_MPI(MPI_Get_accumulate(&acc, 1, MPI_INT64_T, &got[1], 1, MPI_INT64_T, 0,
                              slot(w, me, 3), 1, MPI_INT64_T, MPI_SUM, w->win));
    TU_MPI(MPI_Win_unlock(0, w->win));

    TU_MPI(MPI_Win_lock_all(0, w->win));
    TU_MPI(MPI_Fetch_and_op(&fop, fetched, MPI_INT64_T, 0, slot(w, me, 4), MPI_SUM, w->win));
    TU_MPI(MPI_Win_flush(0, w->win));
    TU_MPI(MPI_Compare_and_swap(&swap, &cmp, cas, MPI_INT64_T, 0, slot(w, me, 5), w->win));
    TU_MPI(MPI_Win_unlock_all(w->win));
    return now() - t0;
}

static void check_target(const int64_t *mem, int o)
{
    const int64_t *s = mem + (size_t) o * SLOTS;
    TU_CHECK(1000 + o == s[0], "origin %d's put: %lld", o, (long long) s[0]);
    TU_CHECK(initial(o, 1) == s[1], "origin %d's get slot changed: %lld", o, (long long) s[1]);
    TU_CHECK(initial(o, 2) + ACC_ADD == s[2], "origin %d's accumulate: %lld", o,
             (long long) s[2]);
    TU_CHECK(initial(o, 3) + ACC_ADD == s[3], "origin %d's get_accumulate: %lld", o,
             (long long) s[3]);
    TU_CHECK(initial(o, 4) + FOP_ADD == s[4], "origin %d's fetch_and_op: %lld", o,
             (long long) s[4]);
    TU_CHECK(50 + o == s[5], "origin %d's compare_and_swap: %lld", o, (long long) s[5]);
}

static void one_flavor(int flavor, int me, int np, const int *origins, int timed)
{
    const char *fl = tu_flavor_names[flavor];
    tu_win_t w;
    int64_t got[2] = {-1, -1}, fetched = -1, cas = -1;
    int origin = origins[me];
    double took = 0;

    tu_win_create(flavor, (MPI_Aint) np * SLOTS * sizeof(int64_t), sizeof(int64_t),
                  MPI_INFO_NULL, MPI_COMM_WORLD, &w);
    if (MPI_WIN_NULL == w.win) return;   /* (a shared window this component cannot make) */
    if (0 == me) {
        int64_t *mem = w.base;
        TU_MPI(MPI_Win_lock(MPI_LOCK_EXCLUSIVE, 0, 0, w.win));
        for (int o = 0; o < np; o++) {
            for (int k = 0; k < SLOTS; k++) mem[(size_t) o * SLOTS + k] = initial(o, k);
        }
        TU_MPI(MPI_Win_unlock(0, w.win));
    }
    MPI_Barrier(MPI_COMM_WORLD);
    if (0 == me) {
        double t0 = now();
        compute(busy_s);
        took = now() - t0;
    } else if (origin) {
        usleep(100000);   /* the target computes by now */
        took = epochs(&w, me, got, &fetched, &cas);
    }
    MPI_Barrier(MPI_COMM_WORLD);
    if (origin) {
        TU_CHECK(initial(me, 1) == got[0], "%s: get: %lld", fl, (long long) got[0]);
        TU_CHECK(initial(me, 3) == got[1], "%s: get_accumulate fetched %lld", fl,
                 (long long) got[1]);
        TU_CHECK(initial(me, 4) == fetched, "%s: fetch_and_op fetched %lld", fl,
                 (long long) fetched);
        TU_CHECK(initial(me, 5) == cas, "%s: compare_and_swap fetched %lld", fl, (long long) cas);
        if (timed) {
            TU_CHECK(took < busy_s / 3,
                     "%s: the epochs took %.3f s while the target computed %.1f s outside MPI "
                     "(they waited for it)", fl, took, busy_s);
        }
        printf("busy_target: %s: rank %d's epochs took %.4f s%s\n", fl, me, took,
               timed ? "" : " (same node: not timed)");
    }
    if (0 == me) {
        TU_MPI(MPI_Win_lock(MPI_LOCK_EXCLUSIVE, 0, 0, w.win));
        for (int o = 1; o < np; o++) {
            if (origins[o]) check_target(w.base, o);
        }
        TU_MPI(MPI_Win_unlock(0, w.win));
    }
    tu_win_free(&w);
}

int main(int argc, char **argv)
{
    int me, np, spans, origin, timed, *origins, any = 0;
    MPI_Comm node;

    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &me);
    MPI_Comm_size(MPI_COMM_WORLD, &np);
    for (int i = 1; i + 1 < argc; i++) {
        if (0 == strcmp(argv[i], "-s")) busy_s = atof(argv[i + 1]);
    }
    if (np < 2) {
        if (0 == me) fprintf(stderr, "busy_target: needs 2 ranks or more\n");
        MPI_Finalize();
        return 1;
    }
    node = tu_node_comm(MPI_COMM_WORLD, &spans);
    /* origins: the ranks off rank 0's node; on one node, rank 1 (untimed) */
    timed = spans;
    origin = me != 0 && (spans ? !tu_on_my_node(MPI_COMM_WORLD, node, 0) : 1 == me);
    origins = calloc(np, sizeof(int));
    MPI_Allgather(&origin, 1, MPI_INT, origins, 1, MPI_INT, MPI_COMM_WORLD);
    for (int r = 0; r < np; r++) any += origins[r];
    TU_CHECK(any > 0, "no origin");
    tu_watchdog("busy_target", 120);
    for (int f = TU_CREATE; f < TU_NFLAVORS_ALL; f++) {
        if (tu_flavor_enabled(f)) one_flavor(f, me, np, origins, timed);
    }
    free(origins);
    MPI_Comm_free(&node);
    int rc = tu_finish("busy_target");
    MPI_Finalize();
    return rc;
}
