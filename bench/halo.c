/*
 * halo.c - 2-D ghost-cell (halo) exchange with point-to-point and with the
 * three one-sided synchronization methods, after the benchmark of Thakur,
 * Gropp and Toonen, "Optimizing the Synchronization Operations in MPI
 * One-Sided Communication" (MPICH2, 2005).
 *
 *   mpirun -np 4 halo [-w FLAVOR] [-m 16] [-M 256K] [-f 4] [-i N] [-I N] [-x N] [-T S]
 *
 * The ranks form a periodic 2-D process grid (MPI_Dims_create,
 * MPI_Cart_create, no reordering).  In every iteration each rank sends SIZE
 * bytes to each of its four neighbours (-x, +x, -y, +y), into the ghost-cell
 * slot of that neighbour which faces it; a neighbour that is the rank itself
 * (a grid dimension of 1, e.g. 2 ranks = 2x1) gets a memcpy, as an
 * application would do.  Versions, each timed per iteration:
 *   p2p    4 x MPI_Irecv, 4 x MPI_Isend, MPI_Waitall
 *   fence  4 x MPI_Put; MPI_Win_fence     (the fence sequence is opened before
 *                                          the loop)
 *   pscw   MPI_Win_post(neighbours); MPI_Win_start(neighbours); 4 x MPI_Put;
 *          MPI_Win_complete; MPI_Win_wait
 *   lock   4 x MPI_Put; MPI_Win_flush_all; MPI_Barrier   (inside one
 *          MPI_Win_lock_all: the barrier tells the targets the data is there)
 * The window (-w, default allocate) holds the four ghost slots; the receives
 * of p2p land in the same memory.  For each size the four versions run one
 * after the other.  Each rank takes the median iteration time of a version;
 * the row reports the largest median over the ranks (us) and, per one-sided
 * version, its time divided by p2p's (< 1: one-sided is faster).
 *
 * Row per message size:
 *   size p2p_us fence_us pscw_us lock_us fence_rel pscw_rel lock_rel
 */
#include "bench_common.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { V_P2P, V_FENCE, V_PSCW, V_LOCK, V_COUNT };

typedef struct {
    bench_win_t w;
    MPI_Comm comm;
    int rank, nb[4];          /* neighbours: -x, +x, -y, +y */
    MPI_Group group;          /* the distinct neighbours other than self */
    char *sbuf;               /* 4 send slots of max_size bytes */
    size_t slot;              /* max_size */
} halo_t;

/* Data for direction d lands in the neighbour's slot d^1 (it comes from the
 * neighbour's opposite side); p2p uses that slot number as the tag. */
static void exchange(halo_t *h, int v, size_t size)
{
    MPI_Request req[8];
    int nreq = 0;
    MPI_Win win = h->w.win;

    if (v == V_PSCW) {
        MPI_Win_post(h->group, 0, win);
        MPI_Win_start(h->group, 0, win);
    }
    if (v == V_P2P) {
        for (int s = 0; s < 4; s++) {
            if (h->nb[s] != h->rank) {
                MPI_Irecv(h->w.base + (size_t) s * h->slot, (int) size, MPI_BYTE, h->nb[s], s,
                          h->comm, &req[nreq++]);
            }
        }
    }
    for (int d = 0; d < 4; d++) {
        char *src = h->sbuf + (size_t) d * h->slot;
        size_t off = (size_t) (d ^ 1) * h->slot;
        if (h->nb[d] == h->rank) {
            memcpy(h->w.base + off, src, size);
        } else if (v == V_P2P) {
            MPI_Isend(src, (int) size, MPI_BYTE, h->nb[d], d ^ 1, h->comm, &req[nreq++]);
        } else {
            MPI_Put(src, (int) size, MPI_BYTE, h->nb[d], bench_disp(&h->w, h->nb[d], off),
                    (int) size, MPI_BYTE, win);
        }
    }
    switch (v) {
    case V_P2P:
        MPI_Waitall(nreq, req, MPI_STATUSES_IGNORE);
        break;
    case V_FENCE:
        MPI_Win_fence(0, win);
        break;
    case V_PSCW:
        MPI_Win_complete(win);
        MPI_Win_wait(win);
        break;
    case V_LOCK:
        MPI_Win_flush_all(win);
        MPI_Barrier(h->comm);
        break;
    }
}

/* Median iteration time of version v on this rank (collective). */
static double measure(const bench_opts_t *o, halo_t *h, int v, size_t size, double *t)
{
    int n = bench_iters_for(o, size);
    double start, warm;

    MPI_Barrier(h->comm);
    if (v == V_FENCE) MPI_Win_fence(0, h->w.win);
    if (v == V_LOCK) MPI_Win_lock_all(0, h->w.win);
    start = bench_now();
    for (int i = 0; i < o->warmup; i++) exchange(h, v, size);
    warm = o->warmup ? (bench_now() - start) / o->warmup : 0.0;
    n = bench_row_iters(o, n, warm, h->comm);
    for (int i = 0; i < n; i++) {
        double t0 = bench_now();
        exchange(h, v, size);
        t[i] = bench_now() - t0;
    }
    if (v == V_FENCE) MPI_Win_fence(MPI_MODE_NOSUCCEED, h->w.win);
    if (v == V_LOCK) MPI_Win_unlock_all(h->w.win);
    return bench_median(t, n);
}

int main(int argc, char **argv)
{
    bench_opts_t o;
    halo_t h;
    int np, dims[2] = {0, 0}, periods[2] = {1, 1}, distinct[4], ndistinct = 0;
    MPI_Group g;
    double *t;

    bench_init(&argc, &argv, MPI_THREAD_SINGLE);
    bench_opts_defaults(&o, "halo");
    o.min_size = 16;
    o.max_size = 256u << 10;
    o.step = 4;
    o.iters = 500;
    o.iters_large = 100;
    bench_parse_args(argc, argv, &o, "wmMfiIxTv",
                     "-m/-M/-f: message sizes per neighbour (default 16 B .. 256 KiB, x4)\n"
                     "prints: size, median iteration time of p2p / fence / pscw / lock in us\n"
                     "(largest median over the ranks), then fence/p2p, pscw/p2p, lock/p2p");
    MPI_Comm_size(MPI_COMM_WORLD, &np);
    if (o.flavor == FLAVOR_MEMHANDLE) {
        bench_exit_na("a memhandle window reaches one target only (the halo needs four)");
    }
    strcpy(o.op, "halo");

    memset(&h, 0, sizeof(h));
    MPI_Dims_create(np, 2, dims);
    MPI_Cart_create(MPI_COMM_WORLD, 2, dims, periods, 0, &h.comm);
    MPI_Comm_rank(h.comm, &h.rank);
    MPI_Cart_shift(h.comm, 0, 1, &h.nb[0], &h.nb[1]);
    MPI_Cart_shift(h.comm, 1, 1, &h.nb[2], &h.nb[3]);
    h.slot = o.max_size;

    bench_win_create_or_na(&h.w, 4 * h.slot, o.flavor, h.comm);
    h.sbuf = bench_alloc(4 * h.slot);
    memset(h.sbuf, 1 + h.rank % 250, 4 * h.slot);
    t = calloc((size_t) (o.iters > o.iters_large ? o.iters : o.iters_large), sizeof(double));
    if (!t) bench_die("out of memory");

    for (int d = 0; d < 4; d++) {
        int seen = (h.nb[d] == h.rank);
        for (int k = 0; k < ndistinct; k++) seen |= (distinct[k] == h.nb[d]);
        if (!seen) distinct[ndistinct++] = h.nb[d];
    }
    MPI_Win_get_group(h.w.win, &g);
    MPI_Group_incl(g, ndistinct, distinct, &h.group);
    MPI_Group_free(&g);

    if (h.rank == 0) {
        printf("# grid %dx%d periodic, %d distinct neighbours of rank 0\n", dims[0], dims[1],
               ndistinct);
    }
    bench_print_header(&o, "halo",
                       "size_B p2p_us fence_us pscw_us lock_us fence_rel pscw_rel lock_rel");

    for (size_t size = o.min_size; size; size = bench_next_size(&o, size)) {
        double med[V_COUNT], worst[V_COUNT];
        for (int v = 0; v < V_COUNT; v++) med[v] = measure(&o, &h, v, size, t);
        MPI_Reduce(med, worst, V_COUNT, MPI_DOUBLE, MPI_MAX, 0, h.comm);
        if (h.rank == 0) {
            printf("%zu %.3f %.3f %.3f %.3f %.3f %.3f %.3f\n", size, 1e6 * worst[V_P2P],
                   1e6 * worst[V_FENCE], 1e6 * worst[V_PSCW], 1e6 * worst[V_LOCK],
                   worst[V_FENCE] / worst[V_P2P], worst[V_PSCW] / worst[V_P2P],
                   worst[V_LOCK] / worst[V_P2P]);
        }
    }

    MPI_Group_free(&h.group);
    bench_win_free(&h.w);
    MPI_Comm_free(&h.comm);
    free(h.sbuf);
    free(t);
    MPI_Finalize();
    return 0;
}
