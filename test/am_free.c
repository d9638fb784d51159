/* am_free (T16): MPI_Win_free with attached AM buffers and registered ops,
 * ops freed before (or instead of) their deregistration.  Every rank is the
 * origin of next.  Handler tag_fn: per segment {segment index, sum of the
 * input + 1000 x tag, pid}, tag = *(int *) extra_state, counter p[q[0]]++.
 * Per window flavor (create, allocate, dynamic, shared), CYCLES times:
 *  1. ops A (tag 1) at index 0 and B (tag 2) at index 7 registered on window
 *     W1, A also at index 0 of W2; two buffers attached to W1 and one to W2.
 *  2. lock_all on W1: an AM with A, then A is freed with the AM in flight
 *     (MPIX_Am_op_free is local and immediate), an AM with B, unlock_all: both
 *     outputs carry their op's tag.  Issuing with the freed handle:
 *     MPI_ERR_OP; deregister through a saved copy of it: MPI_ERR_OP; index 0
 *     stays taken (registering C there: MPI_ERR_ARG).
 *  3. on W2, where freed A stays registered at index 0, op C registered at
 *     index 3 works (tag 3).
 *  4. MPI_Win_free(W1) with B registered and two buffers attached, then
 *     MPI_Win_free(W2) (order alternates between cycles); the buffers are the
 *     user's again: reattached to a new window W3 (no "overlap"), where op C
 *     registered at index 0 (A's old index) must run C, not A.
 *  5. B and C are freed after the windows that held them.
 * The target's counters are checked before each free.  Flags: tu_am_args,
 * --cycles N (default 4). */
#include "uamx_util.h"

#define N 4
#define M 3
#define PC 8
#define WINB 1024

static int rank, nprocs, next, prev, *pids;
static int tags[4] = { 0, 1, 2, 3 };

static int tag_fn(const void *in, int n, MPI_Datatype dti, void *pers, int pc, MPI_Datatype dtp, void *out, int m,
                  MPI_Datatype dto, int nseg, int off, void *extra)
{
    const int *a = in;
    int *p = pers, *o = out, tag = *(const int *) extra;
    (void) dti; (void) dtp; (void) dto;
    if (N != n || M != m) return MPI_ERR_ARG;
    for (int k = 0; k < nseg; k++) {
        const int *q = a + k * N;
        int sum = 0;
        if (q[0] < 0 || q[0] >= pc) return MPI_ERR_ARG;
        for (int i = 0; i < N; i++) sum += q[i];
        o[k * M + 0] = off + k;
        o[k * M + 1] = sum + 1000 * tag;
        o[k * M + 2] = (int) getpid();
        p[q[0]]++;
    }
    return MPI_SUCCESS;
}

static int counted;   /* segments this rank ran at next in the current window */

static int am(tu_win_t *w, MPIX_Am_op op, int *in, int *out, int nseg, int salt)
{
    for (int s = 0; s < nseg; s++) {
        in[s * N] = rank % PC;
        for (int j = 1; j < N; j++) in[s * N + j] = salt * 100 + s * 10 + j;
    }
    for (int i = 0; i < nseg * M; i++) out[i] = -1;
    return MPIX_Am(in, N, MPI_INT, out, M, MPI_INT, nseg, next, MPI_INT, ux_disp(w, next, 0), PC, MPI_INT, MPI_INT,
                   op, w->win);
}

static void check(const int *in, const int *out, int nseg, int tag, const char *what)
{
    for (int s = 0; s < nseg; s++) {
        int sum = 0;
        for (int j = 0; j < N; j++) sum += in[s * N + j];
        TU_CHECK(out[s * M] == s && out[s * M + 1] == sum + 1000 * tag &&
                 (out[s * M + 2] == pids[next] || out[s * M + 2] == pids[rank]),
                 "%s: segment %d: {%d, %d, pid %d}, expected {%d, %d (tag %d), pid %d or %d}", what, s, out[s * M],
                 out[s * M + 1], out[s * M + 2], s, sum + 1000 * tag, tag, pids[next], pids[rank]);
    }
}

/* target side: slot of prev must equal what prev counted */
static void check_counter(tu_win_t *w, const char *what)
{
    int exp = 0;
    MPI_Sendrecv(&counted, 1, MPI_INT, next, 3, &exp, 1, MPI_INT, prev, 3, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    ux_lock_self(w);
    TU_CHECK(((int *) w->base)[prev % PC] == exp, "%s: %d segments counted from rank %d, expected %d", what,
             ((int *) w->base)[prev % PC], prev, exp);
    ux_unlock_self(w);
    counted = 0;
    MPI_Barrier(MPI_COMM_WORLD);
}

static void cycle(int f, int c)
{
    tu_win_t w1, w2, w3;
    MPIX_Am_op A, B, Cop, saved;
    void *b1 = ux_buf(4096), *b2 = ux_buf(2048), *b3 = ux_buf(4096);
    int in[6 * N], out[6 * M], in2[6 * N], out2[6 * M];
    char what[64];

    snprintf(what, sizeof(what), "%s cycle %d", ux_fname(f), c);
    tu_where = what;
    TU_MPI(MPIX_Am_op_create(tag_fn, &tags[1], &A));
    TU_MPI(MPIX_Am_op_create(tag_fn, &tags[2], &B));
    TU_MPI(MPIX_Am_op_create(tag_fn, &tags[3], &Cop));
    ux_win_create(f, WINB, MPI_INFO_NULL, &w1);
    ux_win_create(f, WINB, MPI_INFO_NULL, &w2);
    TU_MPI(ux_register(A, 0, w1.win));
    TU_MPI(ux_register(B, 7, w1.win));
    TU_MPI(ux_register(A, 0, w2.win));
    TU_MPI(MPIX_Am_win_buffer_attach(b1, 4096, w1.win));
    TU_MPI(MPIX_Am_win_buffer_attach(b2, 2048, w1.win));
    TU_MPI(MPIX_Am_win_buffer_attach(b3, 4096, w2.win));
    MPI_Barrier(MPI_COMM_WORLD);

    /* 2 */
    TU_MPI(MPI_Win_lock_all(0, w1.win));
    UX_EXPECT(am(&w1, A, in, out, 6, c), MPI_SUCCESS, "%s: AM with A", what);
    saved = A;
    UX_EXPECT(MPIX_Am_op_free(&A), MPI_SUCCESS, "%s: free A with its AM in flight", what);
    UX_EXPECT(am(&w1, B, in2, out2, 5, c + 50), MPI_SUCCESS, "%s: AM with B", what);
    UX_EXPECT(MPI_Win_unlock_all(w1.win), MPI_SUCCESS, "%s: unlock_all", what);
    check(in, out, 6, 1, what);
    check(in2, out2, 5, 2, what);
    counted += 11;
    TU_MPI(MPI_Win_lock_all(0, w1.win));
    UX_EXPECT(am(&w1, saved, in, out, 1, c), MPI_ERR_OP, "%s: AM with the freed op", what);
    TU_MPI(MPI_Win_unlock_all(w1.win));
    UX_EXPECT(MPIX_Am_win_op_deregister(saved, w1.win), MPI_ERR_OP, "%s: deregister of the freed op", what);
    UX_EXPECT(MPIX_Am_win_op_register(Cop, 0, w1.win), MPI_ERR_ARG, "%s: index 0 still holds freed A", what);
    MPI_Barrier(MPI_COMM_WORLD);
    check_counter(&w1, what);

    /* 3 */
    TU_MPI(ux_register(Cop, 3, w2.win));
    TU_MPI(MPI_Win_lock_all(0, w2.win));
    UX_EXPECT(am(&w2, Cop, in, out, 4, c + 70), MPI_SUCCESS, "%s: AM with C on W2", what);
    UX_EXPECT(MPI_Win_unlock_all(w2.win), MPI_SUCCESS, "%s: unlock_all W2", what);
    check(in, out, 4, 3, what);
    counted += 4;
    MPI_Barrier(MPI_COMM_WORLD);
    check_counter(&w2, what);

    /* 4: free with registrations and attached buffers */
    if (c % 2) {
        ux_win_free(&w1);
        ux_win_free(&w2);
    } else {
        ux_win_free(&w2);
        ux_win_free(&w1);
    }
    memset(b1, 0xa5, 4096);   /* ours again */
    memset(b3, 0x5a, 4096);
    ux_win_create(f, WINB, MPI_INFO_NULL, &w3);
    UX_EXPECT(MPIX_Am_win_buffer_attach(b1, 4096, w3.win), MPI_SUCCESS, "%s: reattach b1 to a new window", what);
    UX_EXPECT(MPIX_Am_win_buffer_attach(b3, 4096, w3.win), MPI_SUCCESS, "%s: reattach b3 to a new window", what);
    UX_EXPECT(MPIX_Am_win_op_register(Cop, 0, w3.win), MPI_SUCCESS, "%s: C at index 0 of a new window", what);
    MPI_Barrier(MPI_COMM_WORLD);
    TU_MPI(MPI_Win_lock_all(0, w3.win));
    UX_EXPECT(am(&w3, Cop, in, out, 3, c + 90), MPI_SUCCESS, "%s: AM with C on W3", what);
    UX_EXPECT(MPI_Win_unlock_all(w3.win), MPI_SUCCESS, "%s: unlock_all W3", what);
    check(in, out, 3, 3, what);
    counted += 3;
    MPI_Barrier(MPI_COMM_WORLD);
    check_counter(&w3, what);
    if (c % 2) {   /* deregister then free, or free with the registration */
        UX_EXPECT(MPIX_Am_win_op_deregister(Cop, w3.win), MPI_SUCCESS, "%s: deregister C", what);
        UX_EXPECT(MPIX_Am_win_buffer_detach(b1, w3.win), MPI_SUCCESS, "%s: detach b1", what);
    }
    ux_win_free(&w3);

    /* 5 */
    UX_EXPECT(MPIX_Am_op_free(&B), MPI_SUCCESS, "%s: free B", what);
    UX_EXPECT(MPIX_Am_op_free(&Cop), MPI_SUCCESS, "%s: free C", what);
    free(b1); free(b2); free(b3);
}

int main(int argc, char **argv)
{
    int pid, cycles = (int) tu_opt_long(argc, argv, "--cycles", 4);
    tu_am_start(&argc, &argv, "am_free", 60, &rank, &nprocs);
    next = (rank + 1) % nprocs;
    prev = (rank + nprocs - 1) % nprocs;
    pids = malloc(nprocs * sizeof(int));
    pid = (int) getpid();
    MPI_Allgather(&pid, 1, MPI_INT, pids, 1, MPI_INT, MPI_COMM_WORLD);
    for (int f = 0; f < UX_NFLAVORS; f++)
        if (ux_flavor_enabled(f))
            for (int c = 0; c < cycles; c++) cycle(f, c);
    free(pids);
    int rc = tu_finish("am_free");
    MPI_Finalize();
    return rc;
}
