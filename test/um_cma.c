/* um_cma: RMA on user memory of peers on the node (MPI_Win_create memory,
 * regions of dynamic windows, memory handles), which osc/ucxx reaches by
 * cross-memory attach (process_vm_readv/writev) where the kernel allows it,
 * and by UCX otherwise (--refuse: the component's test hook
 * OSC_UCXX_TEST_CMA_REFUSE=1 makes it take that path, as where ptrace
 * permission is missing).  Per window kind, on the next rank's memory:
 *   1. put and get of 64 int64, contiguous;
 *   2. derived types: a vector at the target (gaps left alone), a vector of
 *      another stride at the origin, put and get;
 *   3. accumulate SUM (contiguous and through a vector), get_accumulate,
 *      fetch_and_op, compare_and_swap: values and old values;
 *   4. every rank (the owner too) adds 1 to counters of rank 0 many times
 *      (fetch_and_op, accumulate, compare-and-swap loops), also on a window
 *      with acc_single_intrinsic=true: no increment lost, fetched values a
 *      permutation;
 *   5. accesses past the window or handle, to never-attached memory, to a
 *      region detached and unmapped, and (where every operation goes by CMA:
 *      shared memory, state segments mapped) to a region unmapped while
 *      still attached, an application error: MPI_ERR_RMA_RANGE (from the
 *      call, or the flush after it), no crash;
 *   6. (on one node, shared memory, CMA allowed) rank 1 computes outside MPI
 *      while rank 0 puts, fetches-and-adds, accumulates, compares-and-swaps
 *      and gets on its window memory: all of it completes without rank 1's
 *      CPU.
 */
#define _GNU_SOURCE
#include "testutil.h"
#include "mpix_ucxx.h"
#include <sys/mman.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

#define N 1024              /* int64 per rank */
#define SENT 0x5e5e5e5e5e5e5e5eLL

enum { K_CREATE, K_DYNAMIC, K_MEMHANDLE, K_COUNT };
static const char *kind_names[K_COUNT] = {"create", "dynamic", "memhandle"};

typedef struct {
    int kind;
    MPI_Win win, parent;    /* parent: the dynamic window of a memory handle */
    int64_t *mem;
    MPI_Aint *at;           /* displacement of element 0 at each rank */
    char handle[MPIX_MAX_MEMHANDLE_SIZE];
} cw_t;

static int me, nprocs, next, prev, refuse, iters;
static volatile int64_t ident = 0x636d612d74657374LL;

static MPI_Aint D(const cw_t *w, int r, int i) { return w->at[r] + (MPI_Aint) i * (K_DYNAMIC == w->kind ? 8 : 1); }

static void cw_create(cw_t *w, int kind, MPI_Info info)
{
    MPI_Aint addr;
    memset(w, 0, sizeof(*w));
    w->kind = kind;
    w->mem = malloc(N * sizeof(int64_t));
    for (int i = 0; i < N; i++) w->mem[i] = SENT;
    w->at = calloc(nprocs, sizeof(MPI_Aint));
    MPI_Get_address(w->mem, &addr);
    if (K_CREATE == kind) {
        TU_MPI(MPI_Win_create(w->mem, N * 8, 8, info, MPI_COMM_WORLD, &w->win));
    } else {
        TU_MPI(MPI_Win_create_dynamic(info, MPI_COMM_WORLD, K_DYNAMIC == kind ? &w->win : &w->parent));
    }
    if (K_DYNAMIC == kind) {
        TU_MPI(MPI_Win_attach(w->win, w->mem, N * 8));
        MPI_Allgather(&addr, 1, MPI_AINT, w->at, 1, MPI_AINT, MPI_COMM_WORLD);
    } else if (K_MEMHANDLE == kind) {
        char peer[MPIX_MAX_MEMHANDLE_SIZE];
        int len;
        TU_MPI(MPIX_Memhandle_create(w->mem, N * 8, MPI_INFO_NULL, w->parent, w->handle, &len));
        MPI_Sendrecv(w->handle, MPIX_MAX_MEMHANDLE_SIZE, MPI_BYTE, prev, 0, peer,
                     MPIX_MAX_MEMHANDLE_SIZE, MPI_BYTE, next, 0, MPI_COMM_WORLD,
                     MPI_STATUS_IGNORE);
        TU_MPI(MPIX_Win_from_memhandle(peer, N * 8, 8, MPI_INFO_NULL, next, w->parent, &w->win));
        MPI_Win_set_errhandler(w->parent, MPI_ERRORS_RETURN);
    }
    MPI_Win_set_errhandler(w->win, MPI_ERRORS_RETURN);
    MPI_Barrier(MPI_COMM_WORLD);
}

static void cw_free(cw_t *w)
{
    MPI_Barrier(MPI_COMM_WORLD);
    if (K_MEMHANDLE == w->kind) {
        TU_MPI(MPI_Win_free(&w->win));
        MPI_Barrier(MPI_COMM_WORLD);
        TU_MPI(MPIX_Memhandle_release(w->handle, w->parent));
        TU_MPI(MPI_Win_free(&w->parent));
    } else {
        if (K_DYNAMIC == w->kind) TU_MPI(MPI_Win_detach(w->win, w->mem));
        TU_MPI(MPI_Win_free(&w->win));
    }
    free(w->mem);
    free(w->at);
}

/* The window passive-target synchronization goes to. */
static MPI_Win sync_win(const cw_t *w) { return K_MEMHANDLE == w->kind ? w->parent : w->win; }

static int64_t val(int r, int i) { return (int64_t) r * 100000 + i + 1; }

/* 1-3: on the next rank's memory; the owner checks what arrived. */
static void data_ops(cw_t *w)
{
    const char *k = kind_names[w->kind];
    int64_t src[64], got[96], res[16], one, old = -1, cmp, swap;
    MPI_Datatype tvec, ovec;
    MPI_Win sw = sync_win(w);

    for (int i = 0; i < 64; i++) src[i] = val(me, i);
    TU_MPI(MPI_Win_lock(MPI_LOCK_SHARED, next, 0, sw));
    /* 1 */
    TU_MPI(MPI_Put(src, 64, MPI_INT64_T, next, D(w, next, 0), 64, MPI_INT64_T, w->win));
    TU_MPI(MPI_Win_flush(next, sw));
    memset(got, 0, sizeof(got));
    TU_MPI(MPI_Get(got, 64, MPI_INT64_T, next, D(w, next, 0), 64, MPI_INT64_T, w->win));
    TU_MPI(MPI_Win_flush(next, sw));
    for (int i = 0; i < 64; i++) TU_CHECK(got[i] == src[i], "%s: get[%d] %lld", k, i, (long long) got[i]);
    /* 2: 16 blocks of 2 every 4 elements at the target, from 32 contiguous;
     * back into blocks of 2 every 3 elements here */
    MPI_Type_vector(16, 2, 4, MPI_INT64_T, &tvec);
    MPI_Type_vector(16, 2, 3, MPI_INT64_T, &ovec);
    MPI_Type_commit(&tvec);
    MPI_Type_commit(&ovec);
    TU_MPI(MPI_Put(src, 32, MPI_INT64_T, next, D(w, next, 64), 1, tvec, w->win));
    TU_MPI(MPI_Win_flush(next, sw));
    for (int i = 0; i < 96; i++) got[i] = -7;
    TU_MPI(MPI_Get(got, 1, ovec, next, D(w, next, 64), 1, tvec, w->win));
    TU_MPI(MPI_Win_flush(next, sw));
    for (int b = 0; b < 16; b++) {
        TU_CHECK(got[3 * b] == src[2 * b] && got[3 * b + 1] == src[2 * b + 1] && got[3 * b + 2] == -7,
                 "%s: derived get, block %d: %lld %lld %lld", k, b, (long long) got[3 * b],
                 (long long) got[3 * b + 1], (long long) got[3 * b + 2]);
    }
    /* 3 */
    one = me + 1;
    TU_MPI(MPI_Accumulate(src, 16, MPI_INT64_T, next, D(w, next, 256), 16, MPI_INT64_T, MPI_SUM, w->win));
    MPI_Type_free(&ovec);
    MPI_Type_vector(4, 2, 4, MPI_INT64_T, &ovec);   /* (at the target this time) */
    MPI_Type_commit(&ovec);
    TU_MPI(MPI_Accumulate(src, 8, MPI_INT64_T, next, D(w, next, 300), 1, ovec, MPI_SUM, w->win));
    MPI_Type_free(&ovec);
    TU_MPI(MPI_Get_accumulate(src, 8, MPI_INT64_T, res, 8, MPI_INT64_T, next, D(w, next, 400), 8, MPI_INT64_T, MPI_SUM, w->win));
    TU_MPI(MPI_Win_flush(next, sw));
    for (int i = 0; i < 8; i++) TU_CHECK(res[i] == SENT, "%s: get_accumulate old[%d] %lld", k, i, (long long) res[i]);
    TU_MPI(MPI_Fetch_and_op(&one, &old, MPI_INT64_T, next, D(w, next, 500), MPI_SUM, w->win));
    TU_MPI(MPI_Win_flush(next, sw));
    TU_CHECK(old == SENT, "%s: fetch_and_op old %lld", k, (long long) old);
    cmp = SENT, swap = val(me, 501), old = -1;
    TU_MPI(MPI_Compare_and_swap(&swap, &cmp, &old, MPI_INT64_T, next, D(w, next, 501), w->win));
    TU_MPI(MPI_Win_flush(next, sw));
    TU_CHECK(old == SENT, "%s: compare_and_swap old %lld", k, (long long) old);
    cmp = 0, old = -1;   /* (does not match: no change) */
    TU_MPI(MPI_Compare_and_swap(&cmp, &cmp, &old, MPI_INT64_T, next, D(w, next, 501), w->win));
    TU_MPI(MPI_Win_unlock(next, sw));
    TU_CHECK(old == val(me, 501), "%s: second compare_and_swap old %lld", k, (long long) old);
    MPI_Type_free(&tvec);
    MPI_Barrier(MPI_COMM_WORLD);

    /* the owner: what prev did to its memory */
    for (int i = 0; i < 64; i++) TU_CHECK(w->mem[i] == val(prev, i), "%s: mem[%d] %lld", k, i, (long long) w->mem[i]);
    for (int b = 0; b < 16; b++) {
        TU_CHECK(w->mem[64 + 4 * b] == val(prev, 2 * b) && w->mem[65 + 4 * b] == val(prev, 2 * b + 1) &&
                 w->mem[66 + 4 * b] == SENT && w->mem[67 + 4 * b] == SENT,
                 "%s: derived put, block %d", k, b);
    }
    for (int i = 0; i < 16; i++) TU_CHECK(w->mem[256 + i] == SENT + val(prev, i), "%s: acc[%d]", k, i);
    for (int i = 0; i < 8; i++) {
        int e = 300 + 4 * (i / 2) + i % 2;
        TU_CHECK(w->mem[e] == SENT + val(prev, i), "%s: acc through a vector, element %d: %lld",
                 k, e, (long long) w->mem[e]);
        TU_CHECK(w->mem[e + 2] == SENT, "%s: acc through a vector touched gap %d", k, e + 2);
    }
    for (int i = 0; i < 8; i++) TU_CHECK(w->mem[400 + i] == SENT + val(prev, i), "%s: gacc[%d]", k, i);
    TU_CHECK(w->mem[500] == SENT + prev + 1, "%s: fetch_and_op result %lld", k, (long long) w->mem[500]);
    TU_CHECK(w->mem[501] == val(prev, 501), "%s: compare_and_swap result %lld", k, (long long) w->mem[501]);
    MPI_Barrier(MPI_COMM_WORLD);
}

/* 4: rank 0's counters [600..602] from every rank (create and dynamic
 * windows: memory handles reach one rank, the next). */
static void counters(cw_t *w)
{
    const char *k = kind_names[w->kind];
    int64_t one = 1, *fetched, *all = NULL;
    long total = (long) iters * nprocs;

    if (K_MEMHANDLE == w->kind) return;
    fetched = malloc(iters * sizeof(int64_t));
    if (0 == me) w->mem[600] = w->mem[601] = w->mem[602] = 0;
    MPI_Barrier(MPI_COMM_WORLD);
    TU_MPI(MPI_Win_lock_all(0, w->win));
    for (int i = 0; i < iters; i++) {
        int64_t cur = 0, seen;
        TU_MPI(MPI_Fetch_and_op(&one, &fetched[i], MPI_INT64_T, 0, D(w, 0, 600), MPI_SUM, w->win));
        TU_MPI(MPI_Accumulate(&one, 1, MPI_INT64_T, 0, D(w, 0, 601), 1, MPI_INT64_T, MPI_SUM, w->win));
        TU_MPI(MPI_Win_flush(0, w->win));
        for (;;) {   /* an increment by compare-and-swap */
            int64_t inc = cur + 1;
            TU_MPI(MPI_Compare_and_swap(&inc, &cur, &seen, MPI_INT64_T, 0, D(w, 0, 602), w->win));
            TU_MPI(MPI_Win_flush(0, w->win));
            if (seen == cur) break;
            cur = seen;
        }
    }
    TU_MPI(MPI_Win_unlock_all(w->win));
    MPI_Barrier(MPI_COMM_WORLD);
    if (0 == me) {
        all = malloc(total * sizeof(int64_t));
        TU_CHECK(w->mem[600] == total && w->mem[601] == total && w->mem[602] == total,
                 "%s: counters %lld %lld %lld, expected %ld", k, (long long) w->mem[600],
                 (long long) w->mem[601], (long long) w->mem[602], total);
    }
    MPI_Gather(fetched, iters, MPI_INT64_T, all, iters, MPI_INT64_T, 0, MPI_COMM_WORLD);
    if (0 == me) {
        char *seen = calloc(total, 1);
        long bad = 0;
        for (long i = 0; i < total; i++) bad += all[i] < 0 || all[i] >= total || seen[all[i]]++;
        TU_CHECK(0 == bad, "%s: %ld fetched values repeated or out of range", k, bad);
        free(seen);
        free(all);
    }
    free(fetched);
    MPI_Barrier(MPI_COMM_WORLD);
}

static void expect_range(int rc, const char *what)
{
    TU_CHECK(MPI_ERR_RMA_RANGE == tu_err_class(rc), "%s: %s, expected MPI_ERR_RMA_RANGE", what,
             tu_err_class_name(tu_err_class(rc)));
}

/* The call's error, or where it succeeded, the flush's after it: a dynamic
 * window's target may find the range itself (the operation went with the
 * lock request, or as a message), and MPI lets the error come at the
 * synchronization. */
static int or_flush(int rc, int t, MPI_Win sw)
{
    return MPI_SUCCESS == rc ? MPI_Win_flush(t, sw) : rc;
}

/* Every operation kind at `t`: 4 elements from `disp`, single ones at
 * `one` (none of which may succeed). */
static void all_range(const cw_t *w, int t, MPI_Aint disp, MPI_Aint one, const char *what)
{
    int64_t v[4] = {1, 2, 3, 4}, r = 0, c = 0;
    char msg[96];
    MPI_Win sw = sync_win(w);
    TU_MPI(MPI_Win_lock(MPI_LOCK_SHARED, t, 0, sw));
    snprintf(msg, sizeof(msg), "%s %s put", kind_names[w->kind], what);
    expect_range(or_flush(MPI_Put(v, 4, MPI_INT64_T, t, disp, 4, MPI_INT64_T, w->win), t, sw), msg);
    snprintf(msg, sizeof(msg), "%s %s get", kind_names[w->kind], what);
    expect_range(or_flush(MPI_Get(v, 4, MPI_INT64_T, t, disp, 4, MPI_INT64_T, w->win), t, sw), msg);
    snprintf(msg, sizeof(msg), "%s %s accumulate", kind_names[w->kind], what);
    expect_range(or_flush(MPI_Accumulate(v, 4, MPI_INT64_T, t, disp, 4, MPI_INT64_T, MPI_SUM, w->win), t,
                          sw), msg);
    snprintf(msg, sizeof(msg), "%s %s fetch_and_op", kind_names[w->kind], what);
    expect_range(or_flush(MPI_Fetch_and_op(v, &r, MPI_INT64_T, t, one, MPI_SUM, w->win), t, sw), msg);
    snprintf(msg, sizeof(msg), "%s %s compare_and_swap", kind_names[w->kind], what);
    expect_range(or_flush(MPI_Compare_and_swap(v, &c, &r, MPI_INT64_T, t, one, w->win), t, sw), msg);
    TU_MPI(MPI_Win_unlock(t, sw));
}

/* 5 */
static void ranges(cw_t *w, int all_cma)
{
    if (K_DYNAMIC != w->kind) {
        all_range(w, next, D(w, next, N - 2), D(w, next, N), "past the end");
        MPI_Barrier(MPI_COMM_WORLD);
        return;
    }
    /* never attached: an address in the middle of nowhere of ours */
    all_range(w, next, (MPI_Aint) 4096 * 3, (MPI_Aint) 4096 * 3, "never attached");
    /* detached and unmapped, then (CMA only) unmapped while attached */
    for (int still_attached = 0; still_attached < 1 + all_cma; still_attached++) {
        size_t len = 64 << 10;
        char *r = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        MPI_Aint mine, theirs;
        int64_t v = 5;
        TU_MPI(MPI_Win_attach(w->win, r, len));
        MPI_Get_address(r, &mine);
        MPI_Sendrecv(&mine, 1, MPI_AINT, prev, 1, &theirs, 1, MPI_AINT, next, 1, MPI_COMM_WORLD,
                     MPI_STATUS_IGNORE);
        TU_MPI(MPI_Win_lock(MPI_LOCK_SHARED, next, 0, w->win));   /* (caches the region) */
        TU_MPI(MPI_Put(&v, 1, MPI_INT64_T, next, theirs, 1, MPI_INT64_T, w->win));
        TU_MPI(MPI_Win_unlock(next, w->win));
        MPI_Barrier(MPI_COMM_WORLD);
        TU_CHECK(5 == *(int64_t *) r, "dynamic: put into a fresh region");
        if (!still_attached) TU_MPI(MPI_Win_detach(w->win, r));
        munmap(r, len);
        MPI_Barrier(MPI_COMM_WORLD);
        all_range(w, next, theirs + 8, theirs + 8, still_attached ? "unmapped while attached"
                                                      : "detached and unmapped");
        MPI_Barrier(MPI_COMM_WORLD);
        if (still_attached) TU_MPI(MPI_Win_detach(w->win, r));
    }
    MPI_Barrier(MPI_COMM_WORLD);
}

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + 1e-9 * ts.tv_nsec;
}

/* 6: rank 1 stays out of MPI until rank 0 sets its flag to 2 (30 s at most). */
static void target_computes(cw_t *w)
{
    const char *k = kind_names[w->kind];
    volatile int64_t *mem = w->mem;
    MPI_Win sw = sync_win(w);

    if (K_MEMHANDLE == w->kind) return;   /* (reaches the next rank only: 0 -> 1 holds) */
    if (1 == me) mem[700] = mem[701] = mem[702] = mem[703] = 0, mem[704] = 42;
    MPI_Barrier(MPI_COMM_WORLD);
    if (0 == me) {
        /* (a dynamic window's origin learns of a region from the target's
         * CPU once, and again after the target detaches anything: here,
         * while rank 1 waits in the barrier) */
        int64_t g;
        TU_MPI(MPI_Win_lock(MPI_LOCK_SHARED, 1, 0, sw));
        TU_MPI(MPI_Get(&g, 1, MPI_INT64_T, 1, D(w, 1, 704), 1, MPI_INT64_T, w->win));
        TU_MPI(MPI_Win_unlock(1, sw));
    }
    MPI_Barrier(MPI_COMM_WORLD);
    if (0 == me) {
        int64_t v = 1, r = -1, c = 0, s = 9, g = 0;
        TU_MPI(MPI_Win_lock(MPI_LOCK_SHARED, 1, 0, sw));
        TU_MPI(MPI_Put(&v, 1, MPI_INT64_T, 1, D(w, 1, 700), 1, MPI_INT64_T, w->win));
        TU_MPI(MPI_Win_flush(1, sw));
        v = 5;
        TU_MPI(MPI_Fetch_and_op(&v, &r, MPI_INT64_T, 1, D(w, 1, 701), MPI_SUM, w->win));
        v = 3;
        TU_MPI(MPI_Accumulate(&v, 1, MPI_INT64_T, 1, D(w, 1, 702), 1, MPI_INT64_T, MPI_SUM, w->win));
        TU_MPI(MPI_Compare_and_swap(&s, &c, &r, MPI_INT64_T, 1, D(w, 1, 703), w->win));
        TU_MPI(MPI_Get(&g, 1, MPI_INT64_T, 1, D(w, 1, 704), 1, MPI_INT64_T, w->win));
        TU_MPI(MPI_Win_flush(1, sw));
        TU_CHECK(42 == g, "%s: get from a computing target read %lld", k, (long long) g);
        v = 2;
        TU_MPI(MPI_Put(&v, 1, MPI_INT64_T, 1, D(w, 1, 700), 1, MPI_INT64_T, w->win));
        TU_MPI(MPI_Win_unlock(1, sw));
    } else if (1 == me) {
        double end = now() + 30;
        while (2 != mem[700] && now() < end) {
        }
        TU_CHECK(2 == mem[700], "%s: rank 0's operations needed this rank's CPU", k);
        TU_CHECK(5 == mem[701] && 3 == mem[702] && 9 == mem[703],
                 "%s: fop/acc/cas while computing: %lld %lld %lld", k, (long long) mem[701],
                 (long long) mem[702], (long long) mem[703]);
    }
    MPI_Barrier(MPI_COMM_WORLD);
}

/* Can this process read the next rank's memory by CMA (what the component
 * needs: same user, ptrace permission)? */
static int cma_allowed(void)
{
    struct { int pid; MPI_Aint at; } mine = {getpid(), (MPI_Aint) (uintptr_t) &ident}, peer;
    int64_t got = 0;
    struct iovec l = {&got, 8}, r;
    int ok, all;

    MPI_Sendrecv(&mine, sizeof(mine), MPI_BYTE, prev, 2, &peer, sizeof(peer), MPI_BYTE, next, 2,
                 MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    r.iov_base = (void *) (uintptr_t) peer.at;
    r.iov_len = 8;
    ok = 8 == process_vm_readv(peer.pid, &l, 1, &r, 1, 0) && got == ident;
    MPI_Allreduce(&ok, &all, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
    return all;
}

int main(int argc, char **argv)
{
    int spans, cma_direct, quiet_target;
    MPI_Info single;
    MPI_Comm node;

    refuse = tu_opt_flag(argc, argv, "--refuse");
    if (refuse) setenv("OSC_UCXX_TEST_CMA_REFUSE", "1", 1);
    tu_init_ring(&argc, &argv, &me, &nprocs, &next, &prev);
    tu_watchdog("um_cma", 170);
    iters = tu_slow_transport() || refuse ? 100 : 1000;
    node = tu_node_comm(MPI_COMM_WORLD, &spans);
    MPI_Comm_free(&node);
    /* CMA to every neighbour (what the component will use): only on one node */
    cma_direct = !refuse && !spans && cma_allowed();
    quiet_target = cma_direct && !tu_tcp_only() && nprocs >= 2;
    if (0 == me) {
        printf("um_cma: %d ranks, CMA %s%s\n", nprocs, cma_direct ? "expected" : "not expected",
               quiet_target ? ", the target computes outside MPI in part 6" : "");
    }
    MPI_Info_create(&single);
    MPI_Info_set(single, "acc_single_intrinsic", "true");
    for (int k = 0; k < K_COUNT; k++) {
        for (int s = 0; s < 2; s++) {
            cw_t w;
            if (s && K_MEMHANDLE == k) continue;
            tu_where = kind_names[k];
            cw_create(&w, k, s ? single : MPI_INFO_NULL);
            data_ops(&w);
            counters(&w);
            if (!s) ranges(&w, quiet_target);
            if (quiet_target) target_computes(&w);
            cw_free(&w);
        }
    }
    MPI_Info_free(&single);
    int rc = tu_finish(refuse ? "um_cma --refuse" : "um_cma");
    MPI_Finalize();
    return rc;
}
