/*
 * rma_mh.c - put / get latency on allocated, dynamic and memory-handle
 * windows side by side, with the window held and with the window's creation
 * and free inside every timed iteration (after "Quo Vadis MPI RMA?",
 * Schuchart et al., EuroMPI'21, Figure 12).
 *
 *   mpirun -np 2 rma_mh [-o put,get] [-m 8] [-M 64K] [-f 2] [-i N] [-I N] [-x N] [-T S]
 *
 * Rank 0 is the origin, rank 1 the target.  Window kinds:
 *   alloc  MPI_Win_allocate
 *   dyn    MPI_Win_create_dynamic + MPI_Win_attach (absolute displacements)
 *   mh     osc/ucxx memory-handle window (mpix_ucxx.h): a dynamic parent
 *          window on both ranks; the target registers its memory with
 *          MPIX_Memhandle_create and the handle reaches the origin with
 *          MPI_Sendrecv; the origin makes a window on it with
 *          MPIX_Win_from_memhandle; lock/unlock go to the parent window.
 *          On other components the MPIX calls fail: "n/a".
 * Per operation and message size, two measurements, each timed per
 * iteration on the origin (median over the iterations, microseconds):
 *   <op>_<kind>_us     window held and a shared lock held: op + MPI_Win_flush
 *   <op>_<kind>_cr_us  the window's creation and free inside the iteration:
 *     alloc  MPI_Win_allocate; lock; op; unlock; MPI_Win_free (collective
 *            create and free: the target takes part)
 *     dyn    MPI_Win_create_dynamic; target: MPI_Win_attach; MPI_Barrier
 *            (the memory must be attached before it is accessed; its address
 *            is exchanged once, up front); lock; op; unlock; MPI_Barrier
 *            (the access is over before the detach); target: MPI_Win_detach;
 *            MPI_Win_free
 *     mh     MPIX_Win_from_memhandle; lock(parent); op; unlock(parent);
 *            MPI_Win_free (the origin alone: local calls; the parent window
 *            and the handle are made once, up front)
 * and the ratios to the allocated window: <op>_dyn_rel = dyn/alloc,
 * <op>_mh_rel = mh/alloc, and the same for _cr.  A kind the component
 * cannot create prints "n/a" in its columns (and a "# note:" line).
 *
 * Row per message size: size, then for each op of the -o list
 *   <op>_alloc_us <op>_dyn_us <op>_mh_us <op>_alloc_cr_us <op>_dyn_cr_us
 *   <op>_mh_cr_us <op>_dyn_rel <op>_mh_rel <op>_dyn_cr_rel <op>_mh_cr_rel
 */
#include "bench_common.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { K_ALLOC, K_DYN, K_MH, K_COUNT };
static const char *kind_names[K_COUNT] = { "alloc", "dyn", "mh" };
static const bench_flavor_t kind_flavor[K_COUNT] = { FLAVOR_ALLOCATE, FLAVOR_DYNAMIC,
                                                     FLAVOR_MEMHANDLE };

typedef struct {
    int rank, is_get;
    size_t size;
    char *src, *dst;          /* origin buffers */
    char *tbuf;               /* dyn with creation: the target's attached memory */
    MPI_Aint tdisp;           /* its address, known to the origin */
} ctx_t;

static void do_op(const ctx_t *c, MPI_Win win, MPI_Aint disp)
{
    if (c->is_get) {
        MPI_Get(c->dst, (int) c->size, MPI_BYTE, 1, disp, (int) c->size, MPI_BYTE, win);
    } else {
        MPI_Put(c->src, (int) c->size, MPI_BYTE, 1, disp, (int) c->size, MPI_BYTE, win);
    }
}

/* One iteration with creation and free of a window of kind k. */
static void create_iter(const ctx_t *c, int k, bench_win_t *held)
{
    MPI_Win win = MPI_WIN_NULL;
    char *base;
    int origin = (c->rank == 0);

    switch (k) {
    case K_ALLOC:
        if (MPI_SUCCESS != MPI_Win_allocate((MPI_Aint) c->size, 1, MPI_INFO_NULL,
                                            MPI_COMM_WORLD, &base, &win)) {
            bench_die("MPI_Win_allocate failed");
        }
        if (origin) {
            MPI_Win_lock(MPI_LOCK_SHARED, 1, 0, win);
            do_op(c, win, 0);
            MPI_Win_unlock(1, win);
        }
        MPI_Win_free(&win);
        break;
    case K_DYN:
        if (MPI_SUCCESS != MPI_Win_create_dynamic(MPI_INFO_NULL, MPI_COMM_WORLD, &win)) {
            bench_die("MPI_Win_create_dynamic failed");
        }
        if (!origin) MPI_Win_attach(win, c->tbuf, (MPI_Aint) c->size);
        MPI_Barrier(MPI_COMM_WORLD);
        if (origin) {
            MPI_Win_lock(MPI_LOCK_SHARED, 1, 0, win);
            do_op(c, win, c->tdisp);
            MPI_Win_unlock(1, win);
        }
        MPI_Barrier(MPI_COMM_WORLD);
        if (!origin) MPI_Win_detach(win, c->tbuf);
        MPI_Win_free(&win);
        break;
    case K_MH:
        if (!origin) break;
        if (MPI_SUCCESS != bench_memhandle_win(held, MPI_INFO_NULL, &win)) {
            bench_die("MPIX_Win_from_memhandle failed");
        }
        MPI_Win_lock(MPI_LOCK_SHARED, 1, 0, held->parent);
        do_op(c, win, 0);
        MPI_Win_unlock(1, held->parent);
        MPI_Win_free(&win);
        break;
    }
}

/* Median iteration time on the origin (collective; 0 on the target). */
static double measure(const bench_opts_t *o, const ctx_t *c, int k, int with_create,
                      bench_win_t *w, double *t)
{
    int n = bench_iters_for(o, c->size), origin = (c->rank == 0);
    /* the memhandle window is the origin's business alone; everything else
     * (collective creation) needs both ranks in the loop */
    int loop = origin || (with_create && k != K_MH);
    MPI_Aint disp = bench_disp(w, 1, 0);
    double start, warm = 0.0, med = 0.0;

    MPI_Barrier(MPI_COMM_WORLD);
    if (!with_create && origin) MPI_Win_lock(MPI_LOCK_SHARED, 1, 0, bench_lock_win(w));
    for (int pass = 0; pass < 2; pass++) {
        int count = pass ? n : o->warmup;
        start = bench_now();
        for (int i = 0; loop && i < count; i++) {
            double t0 = bench_now();
            if (with_create) {
                create_iter(c, k, w);
            } else {
                do_op(c, w->win, disp);
                MPI_Win_flush(1, w->win);
            }
            if (pass) t[i] = bench_now() - t0;
        }
        if (!pass) {
            warm = o->warmup ? (bench_now() - start) / o->warmup : 0.0;
            n = bench_row_iters(o, n, warm, MPI_COMM_WORLD);
        }
    }
    if (!with_create && origin) MPI_Win_unlock(1, bench_lock_win(w));
    if (origin) med = bench_median(t, n);
    MPI_Barrier(MPI_COMM_WORLD);
    return med;
}

static void print_val(double v)
{
    if (v >= 0) printf(" %.3f", v);
    else printf(" n/a");
}

int main(int argc, char **argv)
{
    bench_opts_t o;
    bench_win_t w[K_COUNT];
    int rank, have[K_COUNT], ops[2], nops = 0;
    char cols[1024], list[32], *tok, *save = NULL;
    ctx_t c;
    double *t;

    bench_init(&argc, &argv, MPI_THREAD_SINGLE);
    bench_opts_defaults(&o, "rma_mh");
    strcpy(o.op, "put,get");
    o.max_size = 64u << 10;
    o.iters = 1000;
    o.iters_large = 100;
    bench_parse_args(argc, argv, &o, "omMfiIxTv",
                     "operations (-o): put, get or put,get; sizes 8 B .. 64 KiB by default\n"
                     "prints: size, then per op the latency on allocate / dynamic / memhandle\n"
                     "windows (us; window held, then with creation+free in every iteration)\n"
                     "and the dynamic/allocate and memhandle/allocate ratios");
    snprintf(list, sizeof(list), "%s", o.op);
    for (tok = strtok_r(list, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
        if (nops == 2 || (strcmp(tok, "put") && strcmp(tok, "get"))) {
            bench_bad_arg("rma_mh: -o takes put, get or put,get (got '%s')", o.op);
        }
        ops[nops++] = !strcmp(tok, "get");
    }
    if (nops == 0) bench_bad_arg("rma_mh: empty -o");
    bench_require_np(2, 1);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);

    cols[0] = '\0';
    strcat(cols, "size_B");
    for (int i = 0; i < nops; i++) {
        const char *op = ops[i] ? "get" : "put";
        static const char *sfx[] = { "alloc_us", "dyn_us", "mh_us", "alloc_cr_us", "dyn_cr_us",
                                     "mh_cr_us", "dyn_rel", "mh_rel", "dyn_cr_rel",
                                     "mh_cr_rel" };
        for (size_t j = 0; j < sizeof(sfx) / sizeof(sfx[0]); j++) {
            size_t len = strlen(cols);
            snprintf(cols + len, sizeof(cols) - len, " %s_%s", op, sfx[j]);
        }
    }
    bench_print_header(&o, "mh_lat", cols);

    /* the windows that are held; a kind that cannot be created is n/a */
    for (int k = 0; k < K_COUNT; k++) {
        int rc = bench_win_create(&w[k], o.max_size, kind_flavor[k], MPI_COMM_WORLD);
        have[k] = (rc == MPI_SUCCESS);
        if (!have[k] && rank == 0) {
            char msg[MPI_MAX_ERROR_STRING] = "";
            int len = 0;
            MPI_Error_string(rc, msg, &len);
            printf("# note: %s windows n/a: cannot create a '%s' window with this osc "
                   "component (%s)\n", kind_names[k], bench_flavor_names[kind_flavor[k]],
                   k == K_MH && !bench_have_mpix() ? "built without mpix_ucxx.h" : msg);
        }
    }
    if (!have[K_ALLOC]) bench_exit_na("cannot create an 'allocate' window");

    memset(&c, 0, sizeof(c));
    c.rank = rank;
    c.src = bench_alloc(o.max_size);
    c.dst = bench_alloc(o.max_size);
    c.tbuf = bench_alloc(o.max_size);
    memset(c.src, 1, o.max_size);
    {
        MPI_Aint a;
        MPI_Get_address(c.tbuf, &a);
        MPI_Bcast(&a, 1, MPI_AINT, 1, MPI_COMM_WORLD);
        c.tdisp = a;
    }
    t = calloc((size_t) (o.iters > o.iters_large ? o.iters : o.iters_large), sizeof(double));
    if (!t) bench_die("out of memory");

    for (size_t size = o.min_size; size; size = bench_next_size(&o, size)) {
        double v[2][2][K_COUNT];   /* op, with_create, kind */
        c.size = size;
        for (int i = 0; i < nops; i++) {
            c.is_get = ops[i];
            for (int cr = 0; cr < 2; cr++) {
                for (int k = 0; k < K_COUNT; k++) {
                    v[i][cr][k] = have[k] ? measure(&o, &c, k, cr, &w[k], t) : -1.0;
                }
            }
        }
        if (rank != 0) continue;
        printf("%zu", size);
        for (int i = 0; i < nops; i++) {
            for (int cr = 0; cr < 2; cr++) {
                for (int k = 0; k < K_COUNT; k++) {
                    print_val(v[i][cr][k] >= 0 ? 1e6 * v[i][cr][k] : -1.0);
                }
            }
            for (int cr = 0; cr < 2; cr++) {
                for (int k = K_DYN; k < K_COUNT; k++) {
                    print_val(v[i][cr][K_ALLOC] > 0 && v[i][cr][k] >= 0
                              ? v[i][cr][k] / v[i][cr][K_ALLOC] : -1.0);
                }
            }
        }
        printf("\n");
    }

    for (int k = K_COUNT - 1; k >= 0; k--) {
        if (have[k]) bench_win_free(&w[k]);
    }
    free(c.src);
    free(c.dst);
    free(c.tbuf);
    free(t);
    MPI_Finalize();
    return 0;
}
