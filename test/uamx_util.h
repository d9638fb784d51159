/* uamx_util.h: helpers shared by the active-message tests of uamx.am
 * (am_tinybuf, am_hint, am_mix, am_amv, am_errors, am_progress, am_threads,
 * am_free).  tu_am_args() lives in testutil.h. */
#ifndef UAMX_UTIL_H
#define UAMX_UTIL_H

#include "testutil.h"
#include "mpix_ucxx.h"
#include <stdint.h>
#include <unistd.h>

/* Window flavors: testutil's three plus MPI_Win_allocate_shared. */
enum { UX_SHARED = TU_NFLAVORS, UX_NFLAVORS };

static inline const char *ux_fname(int f)
{
    return UX_SHARED == f ? "shared" : tu_flavor_names[f];
}

/* Shared windows go with the allocate flavor unless TU_FLAVORS names "shared". */
static inline int ux_flavor_enabled(int f)
{
    if (UX_SHARED == f) {
        const char *env = getenv("TU_FLAVORS");
        if (tu_multi_node()) return 0;   /* (no shared window across nodes) */
        return NULL == env || NULL != strstr(env, "shared") || NULL != strstr(env, "allocate");
    }
    return tu_flavor_enabled(f);
}

/* Window of `size` bytes, disp_unit 1, on MPI_COMM_WORLD, MPI_ERRORS_RETURN. */
static inline void ux_win_create(int f, MPI_Aint size, MPI_Info info, tu_win_t *w)
{
    if (UX_SHARED != f) {
        tu_win_create(f, size, 1, info, MPI_COMM_WORLD, w);
        return;
    }
    memset(w, 0, sizeof(*w));
    w->size = size; w->disp_unit = 1; w->flavor = UX_SHARED;
    TU_MPI(MPI_Win_allocate_shared(size, 1, info, MPI_COMM_WORLD, &w->base, &w->win));
    memset(w->base, 0, size);
    MPI_Win_set_errhandler(w->win, MPI_ERRORS_RETURN);
    MPI_Barrier(MPI_COMM_WORLD);
}

static inline void ux_win_free(tu_win_t *w)
{
    if (UX_SHARED == w->flavor) {
        TU_MPI(MPI_Win_free(&w->win));
        return;
    }
    tu_win_free(w);
}

/* Displacement of byte offset `off` of rank's window memory. */
static inline MPI_Aint ux_disp(const tu_win_t *w, int rank, MPI_Aint off)
{
    return TU_DYNAMIC == w->flavor ? w->remote[rank] + off : off;
}

/* Local access to one's own window memory after others wrote it. */
static inline void ux_lock_self(const tu_win_t *w)
{
    int me;
    MPI_Comm_rank(MPI_COMM_WORLD, &me);
    TU_MPI(MPI_Win_lock(MPI_LOCK_EXCLUSIVE, me, 0, w->win));
    TU_MPI(MPI_Win_sync(w->win));
}

static inline void ux_unlock_self(const tu_win_t *w)
{
    int me;
    MPI_Comm_rank(MPI_COMM_WORLD, &me);
    TU_MPI(MPI_Win_sync(w->win));
    TU_MPI(MPI_Win_unlock(me, w->win));
}

static inline int ux_origin_compute_on(void)
{
    const char *v = getenv("OMPI_MCA_osc_ucxx_am_origin_compute");
    return !(v && 0 == strcmp(v, "0"));
}

/* S7: a64(te(n, dt)) with te(n,dt) = n ? (n-1)*extent + true_extent : 0 */
static inline MPI_Aint ux_a64(MPI_Aint x) { return (x + 63) / 64 * 64; }
static inline MPI_Aint ux_te(int n, MPI_Datatype dt)
{
    MPI_Aint lb, ext, tlb, text;
    if (0 == n) return 0;
    MPI_Type_get_extent(dt, &lb, &ext);
    MPI_Type_get_true_extent(dt, &tlb, &text);
    return (MPI_Aint) (n - 1) * ext + text;
}
static inline MPI_Aint ux_seg_need(int N, MPI_Datatype tin, int M, MPI_Datatype tout)
{
    return ux_a64(ux_te(N, tin)) + ux_a64(ux_te(M, tout));
}

/* 64-byte aligned buffer for MPIX_Am_win_buffer_attach. */
static inline void *ux_buf(MPI_Aint size)
{
    void *p = NULL;
    if (posix_memalign(&p, 64, size > 0 ? (size_t) size : 64)) {
        fprintf(stderr, "posix_memalign(%ld) failed\n", (long) size);
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    memset(p, 0, size > 0 ? (size_t) size : 64);
    return p;
}

/* Name of an error class (for messages). */
static inline const char *ux_cls(int cls)
{
    static char names[4][MPI_MAX_ERROR_STRING + 32];
    static int next = 0;
    char *b = names[next++ % 4];
    switch (cls) {
    case MPI_SUCCESS: return "MPI_SUCCESS";
    case MPI_ERR_BUFFER: return "MPI_ERR_BUFFER";
    case MPI_ERR_COUNT: return "MPI_ERR_COUNT";
    case MPI_ERR_TYPE: return "MPI_ERR_TYPE";
    case MPI_ERR_ARG: return "MPI_ERR_ARG";
    case MPI_ERR_OP: return "MPI_ERR_OP";
    case MPI_ERR_RANK: return "MPI_ERR_RANK";
    case MPI_ERR_WIN: return "MPI_ERR_WIN";
    case MPI_ERR_SIZE: return "MPI_ERR_SIZE";
    case MPI_ERR_ASSERT: return "MPI_ERR_ASSERT";
    case MPI_ERR_OTHER: return "MPI_ERR_OTHER";
    case MPI_ERR_RMA_SYNC: return "MPI_ERR_RMA_SYNC";
    case MPI_ERR_RMA_RANGE: return "MPI_ERR_RMA_RANGE";
    case MPI_ERR_INTERN: return "MPI_ERR_INTERN";
    default: {
        char s[MPI_MAX_ERROR_STRING];
        int len = 0;
        s[0] = 0;
        MPI_Error_string(cls, s, &len);
        snprintf(b, MPI_MAX_ERROR_STRING + 32, "class %d (%s)", cls, s);
        return b;
    }
    }
}

/* `rc` (an MPI return code) must be of error class `want`. */
#define UX_EXPECT(rc, want, ...)                                                   \
    do {                                                                           \
        int ux_c_ = tu_err_class(rc), ux_w_ = (want);                              \
        if (ux_c_ != ux_w_) {                                                      \
            char ux_m_[400];                                                       \
            snprintf(ux_m_, sizeof(ux_m_), __VA_ARGS__);                           \
            TU_CHECK(ux_c_ == ux_w_, "%s: returned %s, expected %s", ux_m_,        \
                     ux_cls(ux_c_), ux_cls(ux_w_));                                \
        }                                                                          \
    } while (0)

/* MPIX_Am_win_op_register for a test's setup.  UX_REG_BARRIER=1 in the
 * environment adds an MPI_Barrier after it: a diagnostic knob only (S28 says
 * AMs may be issued as soon as the register returns; the tests do not need
 * the barrier and run without it by default). */
static inline int ux_register(MPIX_Am_op op, int index, MPI_Win win)
{
    int rc = MPIX_Am_win_op_register(op, index, win);
    if (tu_env_int("UX_REG_BARRIER", 0)) MPI_Barrier(MPI_COMM_WORLD);
    return rc;
}

/* ---- A generic handler ----------------------------------------------------
 * MPI_INT in and out, N >= 1 input ints and M >= 4 output ints per segment.
 * Input segment q: q[0] = index of a counter in the persistent region (an
 * int array), q[1..N-1] data.  Output segment r: r[0] = segment index in the
 * AM, r[1] = sum of q[0..N-1], r[2] = pid of the executing process, r[3] =
 * segments of this invocation, r[j] (j >= 4) = q[j % N] ^ 0x55.  The counter
 * p[q[0]] is incremented (plain read-modify-write: S11 keeps it exact). */
static inline int ux_gen_fn(const void *in, int N, MPI_Datatype dti, void *pers, int pc,
                            MPI_Datatype dtp, void *out, int M, MPI_Datatype dto, int nseg,
                            int off, void *extra)
{
    const int *a = in;
    int *p = pers, *o = out;
    (void) dti; (void) dtp; (void) dto; (void) extra;
    if (N < 1 || M < 4) return MPI_ERR_ARG;
    for (int k = 0; k < nseg; k++) {
        const int *q = a + (size_t) k * N;
        int *r = o + (size_t) k * M, sum = 0;
        if (q[0] < 0 || q[0] >= pc) return MPI_ERR_ARG;
        for (int i = 0; i < N; i++) sum += q[i];
        r[0] = off + k;
        r[1] = sum;
        r[2] = (int) getpid();
        r[3] = nseg;
        for (int j = 4; j < M; j++) r[j] = q[j % N] ^ 0x55;
        p[q[0]]++;
    }
    return MPI_SUCCESS;
}

/* Number of wrong output segments of one ux_gen_fn AM (first few printed).
 * pid_a/pid_b: the acceptable executing processes (pass the same twice to
 * require one). */
static inline int ux_gen_check(const int *in, const int *out, int N, int M, int nseg, int pid_a,
                               int pid_b, const char *what)
{
    int bad = 0;
    for (int s = 0; s < nseg; s++) {
        const int *q = in + (size_t) s * N, *r = out + (size_t) s * M;
        int sum = 0, ok;
        for (int i = 0; i < N; i++) sum += q[i];
        ok = r[0] == s && r[1] == sum && (r[2] == pid_a || r[2] == pid_b) && r[3] >= 1 &&
             r[3] <= nseg;
        for (int j = 4; j < M && ok; j++) ok = r[j] == (q[j % N] ^ 0x55);
        if (!ok && bad++ < 3)
            TU_CHECK(ok, "%s: segment %d of %d: out {%d, %d, pid %d, %d}, expected {%d, %d, pid %d"
                     " or %d, 1..%d} and data", what, s, nseg, r[0], r[1], r[2], r[3], s, sum,
                     pid_a, pid_b, nseg);
    }
    return bad;
}

#endif
