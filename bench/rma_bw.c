/*
 * rma_bw.c - put / get bandwidth and put bi-directional bandwidth.
 *
 *   mpirun -np 2 rma_bw -o put|get|bibw -w FLAVOR -s SYNC [-W 64]
 *
 * One timed iteration is one epoch carrying W (-W, default 64) operations of
 * SIZE bytes, all to offset 0 of the target window:
 *     epoch begin; W x MPI_Put (or MPI_Get); epoch end
 * put/get: rank 0 is the origin and rank 1 the target.
 * bibw:    both ranks put to each other at the same time (each is origin and
 *          target); the bandwidth counts both directions.
 * Each row prints the bandwidth computed from the median epoch time, in MB/s
 * (10^6 bytes per second), and the matching message rate in millions of
 * operations per second.
 */
#include "bench_common.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int main(int argc, char **argv)
{
    bench_opts_t o;
    bench_win_t w;
    bench_epoch_t e;
    int rank, peer, is_get, bidir, origin;
    char bench[48], *buf;
    double *t;

    bench_init(&argc, &argv, MPI_THREAD_SINGLE);
    bench_opts_defaults(&o, "rma_bw");
    o.iters = 100;
    o.iters_large = 20;
    o.warmup = 2;
    bench_parse_args(argc, argv, &o, "owsmMfiIxWTv",
                     "operations (-o): put get bibw (bi-directional put)\n"
                     "prints: size, bandwidth in MB/s, message rate in Mmsg/s");
    if (strcmp(o.op, "put") && strcmp(o.op, "get") && strcmp(o.op, "bibw")) {
        bench_bad_arg("rma_bw: unknown operation '%s' (put get bibw)", o.op);
    }
    is_get = !strcmp(o.op, "get");
    bidir = !strcmp(o.op, "bibw");
    bench_require_np(2, 1);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    peer = 1 - rank;
    origin = bidir || rank == 0;

    bench_win_create_or_na(&w, o.max_size, o.flavor, MPI_COMM_WORLD);
    buf = bench_alloc(o.max_size);
    memset(buf, 1, o.max_size);
    t = calloc((size_t) (o.iters > o.iters_large ? o.iters : o.iters_large), sizeof(double));
    if (!t) bench_die("out of memory");

    snprintf(bench, sizeof(bench), bidir ? "put_bibw" : "%s_bw", o.op);
    bench_print_header(&o, bench, "size_B MBps Mmsgps");
    bench_epoch_setup(&e, &w, o.sync, peer, origin, bidir || rank == 1);

    for (size_t size = o.min_size; size; size = bench_next_size(&o, size)) {
        int n = bench_iters_for(&o, size);
        MPI_Aint disp = bench_disp(&w, peer, 0);
        double bytes = (double) size * o.window * (bidir ? 2 : 1);

        int loop = (origin || bench_sync_is_active(o.sync));

        MPI_Barrier(MPI_COMM_WORLD);
        bench_epoch_open(&e);
        /* pass 0: warm-up, also the estimate for the -T time budget;
         * pass 1: timed */
        for (int pass = 0; pass < 2; pass++) {
            int count = pass ? n : o.warmup;
            double start = bench_now();
            for (int i = 0; loop && i < count; i++) {
                double t0 = bench_now();
                bench_epoch_begin(&e);
                if (origin) {
                    for (int k = 0; k < o.window; k++) {
                        if (is_get) {
                            MPI_Get(buf, (int) size, MPI_BYTE, peer, disp, (int) size,
                                    MPI_BYTE, w.win);
                        } else {
                            MPI_Put(buf, (int) size, MPI_BYTE, peer, disp, (int) size,
                                    MPI_BYTE, w.win);
                        }
                    }
                }
                bench_epoch_end(&e);
                if (pass) t[i] = bench_now() - t0;
            }
            if (!pass) {
                double warm = o.warmup ? (bench_now() - start) / o.warmup : 0.0;
                n = bench_row_iters(&o, n, warm, MPI_COMM_WORLD);
            }
        }
        bench_epoch_close(&e);
        MPI_Barrier(MPI_COMM_WORLD);

        if (rank == 0) {
            double med = bench_median(t, n);
            printf("%zu %.2f %.4f\n", size, bytes / med / 1e6,
                   o.window * (bidir ? 2 : 1) / med / 1e6);
        }
    }

    bench_epoch_free(&e);
    bench_win_free(&w);
    free(buf);
    free(t);
    MPI_Finalize();
    return 0;
}
