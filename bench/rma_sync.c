/*
 * rma_sync.c - latency of active-target synchronization: fence and PSCW,
 * empty and with one 8-byte put per rank, for several rank counts.
 *
 *   mpirun -np 4 rma_sync [-p 4] [-w FLAVOR] [-m 8] [-i N] [-x N] [-T S]
 *
 * For each rank count P of the -p list (default: all ranks started), the
 * first P ranks create a window (-w, default allocate) over a communicator of
 * their own; the other ranks wait in a barrier that sleeps between tests.
 * (Idle ranks still disturb the measured ones on a small node: bench/run
 * starts one mpirun per rank count, -np P -p P.)
 * The P ranks form a ring: rank r puts to r+1 and exposes its window to r-1
 * (with P = 2 both neighbours are the other rank).  One timed iteration, on
 * every one of the P ranks:
 *   fence      MPI_Win_fence                          (an empty epoch)
 *   fence_put  MPI_Put of SIZE (-m, 8) bytes to r+1; MPI_Win_fence
 *   pscw       post({r-1}); start({r+1}); complete; wait
 *   pscw_put   post({r-1}); start({r+1}); MPI_Put to r+1; complete; wait
 *   open       MPI_Win_fence(NOPRECEDE); MPI_Win_fence(NOSUCCEED)  (a whole
 *              fence sequence: what the seed papers optimize, nothing to do
 *              at the opening fence)
 *   open_put   MPI_Win_fence(NOPRECEDE); MPI_Put to r+1; MPI_Win_fence(NOSUCCEED)
 * For fence and fence_put the sequence is opened with a fence before the
 * timed loop and closed with MPI_MODE_NOSUCCEED after it.  Each rank takes the median of its
 * iterations; a row reports the largest of these medians (the slowest rank
 * sets the pace of a collective epoch), in microseconds.
 *
 * Row per rank count:  np fence_us fence_put_us pscw_us pscw_put_us open_us open_put_us
 */
#include "bench_common.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_NPS 16

enum { M_FENCE, M_FENCE_PUT, M_PSCW, M_PSCW_PUT, M_OPEN, M_OPEN_PUT, M_COUNT };

static void one_epoch(int m, bench_win_t *w, MPI_Group left, MPI_Group right, int next,
                      char *src, size_t size)
{
    switch (m) {
    case M_OPEN:
    case M_OPEN_PUT:
        MPI_Win_fence(MPI_MODE_NOPRECEDE, w->win);
        if (m == M_OPEN_PUT) {
            MPI_Put(src, (int) size, MPI_BYTE, next, bench_disp(w, next, 0), (int) size,
                    MPI_BYTE, w->win);
        }
        MPI_Win_fence(MPI_MODE_NOSUCCEED, w->win);
        break;
    case M_FENCE_PUT:
        MPI_Put(src, (int) size, MPI_BYTE, next, bench_disp(w, next, 0), (int) size, MPI_BYTE,
                w->win);
        /* fall through */
    case M_FENCE:
        MPI_Win_fence(0, w->win);
        break;
    default:
        MPI_Win_post(left, 0, w->win);
        MPI_Win_start(right, 0, w->win);
        if (m == M_PSCW_PUT) {
            MPI_Put(src, (int) size, MPI_BYTE, next, bench_disp(w, next, 0), (int) size,
                    MPI_BYTE, w->win);
        }
        MPI_Win_complete(w->win);
        MPI_Win_wait(w->win);
        break;
    }
}

/* Median iteration time of mode m on this rank (collective over comm). */
static double measure(const bench_opts_t *o, int m, bench_win_t *w, MPI_Comm comm,
                      MPI_Group left, MPI_Group right, int next, char *src, double *t)
{
    int n = o->iters;
    double start, warm;

    MPI_Barrier(comm);
    if (m == M_FENCE || m == M_FENCE_PUT) MPI_Win_fence(0, w->win);
    start = bench_now();
    for (int i = 0; i < o->warmup; i++) one_epoch(m, w, left, right, next, src, o->min_size);
    warm = o->warmup ? (bench_now() - start) / o->warmup : 0.0;
    n = bench_row_iters(o, n, warm, comm);
    for (int i = 0; i < n; i++) {
        double t0 = bench_now();
        one_epoch(m, w, left, right, next, src, o->min_size);
        t[i] = bench_now() - t0;
    }
    if (m == M_FENCE || m == M_FENCE_PUT) MPI_Win_fence(MPI_MODE_NOSUCCEED, w->win);
    return bench_median(t, n);
}

int main(int argc, char **argv)
{
    bench_opts_t o;
    int rank, size, nps[MAX_NPS], nnp;
    char *src;
    double *t;

    bench_init(&argc, &argv, MPI_THREAD_SINGLE);
    bench_opts_defaults(&o, "rma_sync");
    o.min_size = 8;
    o.iters = 1000;
    o.nps[0] = '\0';
    bench_parse_args(argc, argv, &o, "wpmixTv",
                     "-p lists the rank counts (the first P ranks take part, the rest sleep;\n"
                     "default: all ranks);\n"
                     "-m is the size of the put in the *_put epochs\n"
                     "prints: np, median fence / fence+put / PSCW / PSCW+put / opened+closed fence\n"
                     "sequence (empty, with a put) epoch time in us\n"
                     "(largest median over the ranks)");
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (!o.nps[0]) snprintf(o.nps, sizeof(o.nps), "%d", size);
    nnp = bench_parse_list(o.nps, nps, MAX_NPS, size);
    if (nnp <= 0) bench_bad_arg("rma_sync: bad -p list '%s' (rank counts 1..%d)", o.nps, size);
    if (o.flavor == FLAVOR_MEMHANDLE) {
        bench_exit_na("a memhandle window has no fence / PSCW epochs (passive target only)");
    }
    o.max_size = o.min_size;
    strcpy(o.op, "fence,pscw");
    src = bench_alloc(o.min_size);
    memset(src, 1, o.min_size);
    t = calloc((size_t) o.iters, sizeof(double));
    if (!t) bench_die("out of memory");

    bench_print_header(&o, "sync_lat",
                       "np fence_us fence_put_us pscw_us pscw_put_us open_us open_put_us");

    for (int k = 0; k < nnp; k++) {
        int p = nps[k], in = rank < p, ok = 1, all = 0;
        MPI_Comm comm = MPI_COMM_NULL;
        bench_win_t w;
        double med[M_COUNT], worst[M_COUNT];

        MPI_Comm_split(MPI_COMM_WORLD, in ? 0 : MPI_UNDEFINED, rank, &comm);
        if (in) ok = (MPI_SUCCESS == bench_win_create(&w, o.min_size, o.flavor, comm));
        MPI_Allreduce(&ok, &all, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
        if (!all) {
            bench_exit_na("cannot create a '%s' window with this osc component",
                          bench_flavor_names[o.flavor]);
        }
        if (in) {
            int next = (rank + 1) % p, prev = (rank + p - 1) % p;
            MPI_Group g, left, right;

            MPI_Win_get_group(w.win, &g);
            MPI_Group_incl(g, 1, &prev, &left);
            MPI_Group_incl(g, 1, &next, &right);
            MPI_Group_free(&g);
            for (int m = 0; m < M_COUNT; m++) {
                med[m] = measure(&o, m, &w, comm, left, right, next, src, t);
            }
            MPI_Reduce(med, worst, M_COUNT, MPI_DOUBLE, MPI_MAX, 0, comm);
            if (rank == 0) {
                printf("%d %.3f %.3f %.3f %.3f %.3f %.3f\n", p, 1e6 * worst[M_FENCE],
                       1e6 * worst[M_FENCE_PUT], 1e6 * worst[M_PSCW], 1e6 * worst[M_PSCW_PUT],
                       1e6 * worst[M_OPEN], 1e6 * worst[M_OPEN_PUT]);
            }
            MPI_Group_free(&left);
            MPI_Group_free(&right);
            bench_win_free(&w);
            MPI_Comm_free(&comm);
        }
        bench_sleepy_barrier(MPI_COMM_WORLD, in ? 100 : 5000);
    }

    free(src);
    free(t);
    MPI_Finalize();
    return 0;
}
