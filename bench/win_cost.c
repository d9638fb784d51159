/*
 * win_cost.c - cost of creating and freeing windows, and memory per window.
 *
 *   mpirun -np N win_cost -w FLAVOR [-n 100] [-m 4096]
 *
 * All ranks take part.  One window is created and freed first (one-time
 * setup such as the transport context is not charged to the windows); then
 * N windows of SIZE bytes each are created one after the other and all kept,
 * then freed in order.  Each creation/free is preceded by a barrier and
 * timed on its own (the MPI call only; see bench_win_create).
 *
 * The single row, keyed by the number of ranks, reports:
 *   first_us        creation time of the very first window (max over ranks)
 *   create_us       median creation time (per rank median, max over ranks)
 *   free_us         median free time (same)
 *   KiB_per_win     resident memory growth per live window, from
 *                   /proc/self/statm, mean over ranks; includes the SIZE
 *                   bytes of window memory itself
 *   KiB_kept_per_win  growth still resident after all were freed, per window
 */
#include "bench_common.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int main(int argc, char **argv)
{
    bench_opts_t o;
    bench_win_t first, *wins;
    int rank, np, rc;
    double *tc, *tf, local[5], maxv[5], sumv[5];
    size_t rss0, rss1, rss2;

    bench_init(&argc, &argv, MPI_THREAD_SINGLE);
    bench_opts_defaults(&o, "win_cost");
    o.min_size = 4096;
    bench_parse_args(argc, argv, &o, "wmnv",
                     "-m is the size of each window; -n the number of windows\n"
                     "prints: np, first/median create and free time in us, KiB per window");
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &np);
    o.max_size = o.min_size;
    strcpy(o.op, "create_free");

    wins = calloc((size_t) o.nwins, sizeof(*wins));
    tc = calloc((size_t) o.nwins, sizeof(double));
    tf = calloc((size_t) o.nwins, sizeof(double));
    if (!wins || !tc || !tf) bench_die("out of memory");

    /* the first window, separately */
    MPI_Barrier(MPI_COMM_WORLD);
    bench_win_create_or_na(&first, o.min_size, o.flavor, MPI_COMM_WORLD);
    local[0] = first.create_s;
    MPI_Barrier(MPI_COMM_WORLD);
    bench_win_free(&first);

    bench_print_header(&o, "win_cost", "np first_us create_us free_us KiB_per_win KiB_kept_per_win");

    MPI_Barrier(MPI_COMM_WORLD);
    rss0 = bench_rss_bytes();
    for (int i = 0; i < o.nwins; i++) {
        MPI_Barrier(MPI_COMM_WORLD);
        rc = bench_win_create(&wins[i], o.min_size, o.flavor, MPI_COMM_WORLD);
        if (rc != MPI_SUCCESS) bench_die("creating window %d failed", i);
        tc[i] = wins[i].create_s;
    }
    rss1 = bench_rss_bytes();
    for (int i = 0; i < o.nwins; i++) {
        MPI_Barrier(MPI_COMM_WORLD);
        tf[i] = bench_win_free(&wins[i]);
    }
    MPI_Barrier(MPI_COMM_WORLD);
    rss2 = bench_rss_bytes();

    local[1] = bench_median(tc, o.nwins);
    local[2] = bench_median(tf, o.nwins);
    local[3] = ((double) rss1 - (double) rss0) / o.nwins / 1024.0;
    local[4] = ((double) rss2 - (double) rss0) / o.nwins / 1024.0;
    MPI_Reduce(local, maxv, 5, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
    MPI_Reduce(local, sumv, 5, MPI_DOUBLE, MPI_SUM, 0, MPI_COMM_WORLD);
    if (rank == 0) {
        printf("%d %.1f %.1f %.1f %.2f %.2f\n", np, 1e6 * maxv[0], 1e6 * maxv[1],
               1e6 * maxv[2], sumv[3] / np, sumv[4] / np);
    }

    free(wins);
    free(tc);
    free(tf);
    MPI_Finalize();
    return 0;
}
