/* serve_poll: a target that only polls its own window is still served.
 *
 * Where UCX cannot map a target's memory (user memory of MPI_Win_create and
 * of dynamic windows, here small heap buffers that share their pages with
 * other data), operations on it are emulated by the target's CPU, and region
 * lookups and some accumulates are active messages it handles.  A target
 * that waits for a flag with nothing but MPI_Win_sync (or by fetching from
 * its own window) calls no general progress, so osc/ucxx must serve in those
 * calls, and, on a node, it does so only while a peer has said it needs that.
 * If either half is wrong, an origin's flush never returns: the watchdog
 * fails the run.
 *
 * Round r: origin o = r % nprocs; every other rank is a target, waiting for
 * its flag with nothing but MPI_Win_sync (even rounds) or MPI_Fetch_and_op
 * MPI_NO_OP on itself + MPI_Win_flush (odd rounds).  The origin, to each
 * target: puts a row, gets the target's read-only word, accumulates MPI_SUM,
 * fetch_and_op, compare_and_swap, an MPI_SUM accumulate with a strided
 * (derived) target type, an Rput completed with MPI_Wait, then flushes and
 * puts the flag (round number) with a flush.  The target then checks every
 * value; the origin checks what it fetched.  Window flavors create, allocate
 * and dynamic (allocate has nothing emulated: the control).  A fresh dynamic
 * region is attached before each round on a dynamic window, so the first
 * access of every round is a region lookup.
 * Open MPI 4.1.4's osc/rdma passes on create windows (it crashes in btl/vader
 * on the others); its osc/ucx hangs (the watchdog fires).
 */
#include "testutil.h"
#include <signal.h>
#include <stdint.h>
#include <unistd.h>

#define ROUNDS 6
#define ROW 8
/* int64 words of one target's memory */
enum { W_FLAG, W_RO, W_SUM, W_FOP, W_CAS, W_STRIDED, W_PUT = W_STRIDED + 2 * ROW,
       W_RPUT = W_PUT + ROW, W_WORDS = W_RPUT + ROW };

static int me, nprocs;

static void watchdog(int sig)
{
    static const char msg[] = "serve_poll: no progress in 60 s (a target was not served)\n";
    (void) sig;
    if (write(2, msg, sizeof(msg) - 1) < 0) _exit(3);
    _exit(3);
}

static int64_t v(int round, int i) { return (int64_t) round * 1000 + i + 1; }

/* The target: fresh values, then wait for the flag with window calls only. */
static void target_round(MPI_Win win, volatile int64_t *mem, MPI_Aint self_disp, int unit,
                         int round)
{
    int64_t flag = 0, none = 0;
    long spins = 0;
    do {
        if (0 == round % 2) {
            MPI_Win_sync(win);
            flag = mem[W_FLAG];
        } else {
            TU_MPI(MPI_Fetch_and_op(&none, &flag, MPI_INT64_T, me,
                                    self_disp + W_FLAG * unit, MPI_NO_OP, win));
            TU_MPI(MPI_Win_flush(me, win));
        }
        spins++;
    } while (flag != round + 1);
    MPI_Win_sync(win);
    for (int i = 0; i < ROW; i++) {
        TU_CHECK(mem[W_PUT + i] == v(round, i), "round %d put[%d] = %lld", round, i,
                 (long long) mem[W_PUT + i]);
        TU_CHECK(mem[W_RPUT + i] == -v(round, i), "round %d rput[%d] = %lld", round, i,
                 (long long) mem[W_RPUT + i]);
        TU_CHECK(mem[W_STRIDED + 2 * i] == 10 + v(round, i) && mem[W_STRIDED + 2 * i + 1] == 7,
                 "round %d strided accumulate [%d] = %lld, %lld", round, i,
                 (long long) mem[W_STRIDED + 2 * i], (long long) mem[W_STRIDED + 2 * i + 1]);
    }
    TU_CHECK(mem[W_SUM] == 100 + round, "round %d sum = %lld", round, (long long) mem[W_SUM]);
    TU_CHECK(mem[W_FOP] == 205, "round %d fetch_and_op word = %lld", round,
             (long long) mem[W_FOP]);
    TU_CHECK(mem[W_CAS] == round + 50, "round %d cas word = %lld", round, (long long) mem[W_CAS]);
}

/* The origin: everything to target t, each completed by a flush the target
 * must serve, then the flag. */
static void origin_ops(MPI_Win win, int t, MPI_Aint d, int unit, int round,
                       MPI_Datatype strided)
{
    int64_t row[ROW], nrow[ROW], ro = 0, one = 1, old = 0, cas_new = round + 50, cas_cmp = 3;
    int64_t cas_old = 0, five = 5, flag = round + 1;
    MPI_Request req;

    for (int i = 0; i < ROW; i++) {
        row[i] = v(round, i);
        nrow[i] = -v(round, i);
    }
    TU_MPI(MPI_Put(row, ROW, MPI_INT64_T, t, d + W_PUT * unit, ROW, MPI_INT64_T, win));
    TU_MPI(MPI_Get(&ro, 1, MPI_INT64_T, t, d + W_RO * unit, 1, MPI_INT64_T, win));
    TU_MPI(MPI_Win_flush(t, win));
    TU_CHECK(ro == 1000 * t + round, "round %d read-only word of %d = %lld", round, t,
             (long long) ro);
    TU_MPI(MPI_Accumulate(&one, 1, MPI_INT64_T, t, d + W_SUM * unit, 1, MPI_INT64_T, MPI_SUM,
                          win));
    TU_MPI(MPI_Fetch_and_op(&five, &old, MPI_INT64_T, t, d + W_FOP * unit, MPI_SUM, win));
    TU_MPI(MPI_Compare_and_swap(&cas_new, &cas_cmp, &cas_old, MPI_INT64_T, t, d + W_CAS * unit,
                                win));
    TU_MPI(MPI_Accumulate(row, ROW, MPI_INT64_T, t, d + W_STRIDED * unit, 1, strided, MPI_SUM,
                          win));
    TU_MPI(MPI_Win_flush(t, win));
    TU_CHECK(old == 200, "round %d fetch_and_op returned %lld", round, (long long) old);
    TU_CHECK(cas_old == 3, "round %d compare_and_swap returned %lld", round, (long long) cas_old);
    TU_MPI(MPI_Rput(nrow, ROW, MPI_INT64_T, t, d + W_RPUT * unit, ROW, MPI_INT64_T, win, &req));
    TU_MPI(MPI_Wait(&req, MPI_STATUS_IGNORE));
    TU_MPI(MPI_Win_flush(t, win));
    TU_MPI(MPI_Put(&flag, 1, MPI_INT64_T, t, d + W_FLAG * unit, 1, MPI_INT64_T, win));
    TU_MPI(MPI_Win_flush(t, win));
}

static void fill(int64_t *mem, int round)
{
    memset(mem, 0, W_WORDS * sizeof(int64_t));
    mem[W_RO] = 1000 * me + round;
    mem[W_SUM] = 99 + round;
    mem[W_FOP] = 200;
    mem[W_CAS] = 3;
    for (int i = 0; i < ROW; i++) {
        mem[W_STRIDED + 2 * i] = 10;
        mem[W_STRIDED + 2 * i + 1] = 7;
    }
}

static void run_flavor(int flavor, MPI_Datatype strided)
{
    const MPI_Aint bytes = W_WORDS * sizeof(int64_t);
    int64_t *mem = NULL, *fresh;
    MPI_Aint *disps = malloc(nprocs * sizeof(MPI_Aint)), mine;
    tu_win_t w;

    /* dynamic windows count displacements in bytes from address 0 */
    int unit = TU_DYNAMIC == flavor ? (int) sizeof(int64_t) : 1;

    tu_win_create(flavor, TU_DYNAMIC == flavor ? 0 : bytes, sizeof(int64_t), MPI_INFO_NULL,
                  MPI_COMM_WORLD, &w);
    TU_MPI(MPI_Win_lock_all(0, w.win));
    for (int round = 0; round < ROUNDS; round++) {
        int origin = round % nprocs;
        /* this round's memory: the window's, or a new region (dynamic) */
        if (TU_DYNAMIC == flavor) {
            fresh = malloc(bytes + 24);  /* small heap object: its pages stay private */
            fill(fresh, round);
            TU_MPI(MPI_Win_attach(w.win, fresh, bytes));
            if (NULL != mem) TU_MPI(MPI_Win_detach(w.win, mem));
            free(mem);
            mem = fresh;
            MPI_Get_address(mem, &mine);
        } else {
            mem = w.base;
            fill(mem, round);
            mine = 0;
        }
        MPI_Win_sync(w.win);
        MPI_Allgather(&mine, 1, MPI_AINT, disps, 1, MPI_AINT, MPI_COMM_WORLD);
        MPI_Barrier(MPI_COMM_WORLD);
        if (me == origin) {
            for (int t = 0; t < nprocs; t++) {
                if (t != me) origin_ops(w.win, t, disps[t], unit, round, strided);
            }
        } else {
            target_round(w.win, mem, disps[me], unit, round);
        }
        MPI_Barrier(MPI_COMM_WORLD);
    }
    TU_MPI(MPI_Win_unlock_all(w.win));
    MPI_Barrier(MPI_COMM_WORLD);
    if (TU_DYNAMIC == flavor) {
        TU_MPI(MPI_Win_detach(w.win, mem));
        free(mem);
    }
    tu_win_free(&w);
    free(disps);
}

int main(int argc, char **argv)
{
    MPI_Datatype strided;

    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &me);
    MPI_Comm_size(MPI_COMM_WORLD, &nprocs);
    tu_parse_args(argc, argv);
    signal(SIGALRM, watchdog);
    alarm(60);
    MPI_Type_vector(ROW, 1, 2, MPI_INT64_T, &strided);
    MPI_Type_commit(&strided);
    for (int f = 0; f < TU_NFLAVORS; f++) {
        if (tu_flavor_enabled(f)) run_flavor(f, strided);
    }
    MPI_Type_free(&strided);
    alarm(0);
    int rc = tu_finish("serve_poll");
    MPI_Finalize();
    return rc;
}
