/*
 * acc_osu.c - accumulate latency in the pattern of the OSU micro-benchmarks'
 * osu_acc_latency / osu_get_acc_latency (written for this project; no OSU
 * code), plus MPI_Fetch_and_op / MPI_Compare_and_swap and the local
 * reduction floor.
 *
 *   mpirun -np 2 acc_osu [-o acc,gacc,fop,cas,reduce] [-w FLAVOR]
 *                        [-d char,int,double,int64] [-l shared|exclusive]
 *                        [-m MIN -M MAX -f FACTOR | -z LIST] [-i N] [-x N]
 *                        [-T SECONDS] [-c shm|tcp]              (acc_osu -h)
 *
 * Pattern (2 ranks), for every message size, operation and element type:
 *   both ranks create a fresh window of SIZE bytes of the flavor (-w; like
 *   OSU, a window per size) and meet in a barrier; rank 0 then does
 *       MPI_Win_lock(SHARED or EXCLUSIVE (-l), 1)
 *       warm-up iterations, then timed iterations, each
 *           MPI_Accumulate(SUM)        (acc)   of SIZE bytes  + MPI_Win_flush(1)
 *           MPI_Get_accumulate(SUM)    (gacc)  of SIZE bytes  + MPI_Win_flush(1)
 *           MPI_Fetch_and_op(SUM)      (fop)   of one int64   + MPI_Win_flush(1)
 *           MPI_Compare_and_swap       (cas)   of one int64   + MPI_Win_flush(1)
 *       MPI_Win_unlock(1)
 *   while rank 1 waits in MPI_Barrier; then both free the window.
 * Every timed iteration is timed on its own (MPI_Wtime); a cell is the
 * MEDIAN of those per-iteration times in microseconds (not a mean over a
 * batch as OSU prints: the median ignores the odd scheduler hiccup of a
 * 2-core machine).
 *
 * Iteration cap: at most -i timed iterations (default 200), but a size stops
 * as soon as its timed iterations have taken -T seconds (default 0.5; at
 * least one iteration always runs); the warm-up (-x, default 10) stops
 * after T/4 seconds.  A slow implementation (e.g. 1.6 s per 1 MiB
 * get_accumulate) thus costs about 2 iterations per size, not 200.
 * "# iters:" comment lines list the timed iterations per cell.
 *
 * reduce (the memory-bandwidth floor of a bulk accumulate, no window, rank 0
 * only, any number of ranks): MPI_Reduce_local(SUM) of SIZE bytes of the
 * type into a second buffer, the reduction Open MPI applies to accumulate
 * data (ompi_op_reduce).  Timed and capped like the others.
 *
 * Element types (-d): char = MPI_CHAR (OSU's default), int = MPI_INT,
 * double = MPI_DOUBLE, int64 = MPI_INT64_T.  SIZE counts bytes; sizes below
 * one element are skipped for that type (n/a in its column), others are
 * rounded down to whole elements.  fop and cas always use one MPI_INT64_T
 * and run only at size 8.
 *
 * Output: one row per size, a column <op>_<type>_us per operation and type
 * (fop_int64_us, cas_int64_us, reduce_<type>_us).  Window flavors the osc
 * component cannot create: "# n/a:" and exit status 77 (bench_common.h).
 *
 * -c tcp sets UCX_TLS=tcp,self and OMPI_MCA_btl=self,tcp before MPI_Init
 * (as am_kernels -c tcp does).
 */
#include "bench_common.h"

#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef enum { OP_ACC, OP_GACC, OP_FOP, OP_CAS, OP_REDUCE, OP_COUNT } op_t;
static const char *op_names[OP_COUNT] = { "acc", "gacc", "fop", "cas", "reduce" };

typedef enum { T_CHAR, T_INT, T_DOUBLE, T_INT64, T_COUNT } type_t;
static const char *type_names[T_COUNT] = { "char", "int", "double", "int64" };

#define MAX_SIZES 64

static struct {
    int ops[OP_COUNT];
    int types[T_COUNT];
    bench_flavor_t flavor;
    int exclusive;              /* -l exclusive */
    size_t sizes[MAX_SIZES];
    int nsizes;
    int iters, warmup;
    double cap_s;               /* -T */
    char tls[8];
} O;

static MPI_Datatype mpi_type(type_t t)
{
    switch (t) {
    case T_CHAR: return MPI_CHAR;
    case T_INT: return MPI_INT;
    case T_DOUBLE: return MPI_DOUBLE;
    default: return MPI_INT64_T;
    }
}

static size_t type_size(type_t t)
{
    switch (t) {
    case T_CHAR: return sizeof(char);
    case T_INT: return sizeof(int);
    case T_DOUBLE: return sizeof(double);
    default: return sizeof(int64_t);
    }
}

/* Fill n elements of type t at p with 1. */
static void fill_ones(void *p, type_t t, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        switch (t) {
        case T_CHAR: ((char *) p)[i] = 1; break;
        case T_INT: ((int *) p)[i] = 1; break;
        case T_DOUBLE: ((double *) p)[i] = 1.0; break;
        default: ((int64_t *) p)[i] = 1; break;
        }
    }
}

static void usage(const char *prog)
{
    printf("usage: mpirun -np 2 %s [options]\n"
           "  -o LIST     operations: acc, gacc, fop, cas, reduce (default acc)\n"
           "  -w FLAVOR   window flavor: create, allocate, dynamic, memhandle (default allocate)\n"
           "  -d LIST     element types of acc/gacc/reduce: char, int, double, int64\n"
           "              (default char; fop and cas always use int64)\n"
           "  -l LOCK     shared (default) or exclusive lock around the iterations\n"
           "  -m SIZE     smallest message size in bytes (default 1; K/M suffixes)\n"
           "  -M SIZE     largest message size (default 1M; always measured)\n"
           "  -f FACTOR   size multiplier between rows (default 2)\n"
           "  -z LIST     explicit sizes instead of -m/-M/-f (e.g. 8,64,4K,64K,1M)\n"
           "  -i N        at most N timed iterations per size (default 200)\n"
           "  -x N        at most N warm-up iterations per size (default 10)\n"
           "  -T SECONDS  time cap per size: stop the timed iterations after SECONDS\n"
           "              (default 0.5; the warm-up stops after SECONDS/4; 0 = no cap)\n"
           "  -c shm|tcp  tcp: UCX_TLS=tcp,self and btl self,tcp (set before MPI_Init)\n"
           "prints: size_B and per operation and type the median latency in us\n"
           "(<op>_<type>_us); reduce_<type>_us is MPI_Reduce_local(SUM) of the same bytes\n",
           prog);
}

/* Before MPI_Init: options, and the environment they imply.  Returns 0, 1
 * for -h, 2 for bad arguments. */
static int parse_opts(int argc, char **argv)
{
    bench_size_opts_t z = {.min = 1, .max = 1u << 20, .factor = 2, .sizes = O.sizes,
                           .cap = MAX_SIZES, .cap_s = -1};
    int c, taken;

    memset(&O, 0, sizeof(O));
    O.ops[OP_ACC] = 1;
    O.types[T_CHAR] = 1;
    O.flavor = FLAVOR_ALLOCATE;
    O.iters = 200;
    O.warmup = 10;
    O.cap_s = 0.5;
    strcpy(O.tls, "shm");
    opterr = 0;
    while (-1 != (c = getopt(argc, argv, "o:w:d:l:m:M:f:z:i:x:T:c:h"))) {
        if (0 != (taken = bench_size_opt(&z, c, optarg))) {
            if (taken < 0) return 2;
            continue;
        }
        switch (c) {
        case 'o': if (!bench_parse_names(optarg, op_names, OP_COUNT, O.ops)) return 2; break;
        case 'd': if (!bench_parse_names(optarg, type_names, T_COUNT, O.types)) return 2; break;
        case 'w': if (bench_parse_flavor(optarg, &O.flavor)) return 2; break;
        case 'l':
            if (!strcmp(optarg, "exclusive")) O.exclusive = 1;
            else if (!strcmp(optarg, "shared")) O.exclusive = 0;
            else return 2;
            break;
        case 'i': O.iters = atoi(optarg); if (O.iters < 1) return 2; break;
        case 'x': O.warmup = atoi(optarg); if (O.warmup < 0) return 2; break;
        case 'c': snprintf(O.tls, sizeof(O.tls), "%s", optarg); break;
        case 'h': return 1;
        default: return 2;
        }
    }
    if (optind != argc || (O.nsizes = bench_size_opts_done(&z)) <= 0) return 2;
    if (z.cap_s >= 0) O.cap_s = z.cap_s;  /* -T given */
    if (strcmp(O.tls, "shm") && strcmp(O.tls, "tcp")) return 2;
    if (!strcmp(O.tls, "tcp")) {
        setenv("UCX_TLS", "tcp,self", 1);
        setenv("OMPI_MCA_btl", "self,tcp", 1);
    }
    return 0;
}

/* ---- one cell ------------------------------------------------------------ */

typedef struct {
    double us;                  /* median per-iteration time, < 0: n/a */
    int iters;                  /* timed iterations */
} cell_t;

static double *times;           /* per-iteration times of the current cell */
static char *src, *result, *win_ref;   /* origin, result, reduce-target buffers */

/* One operation of the timed loop (rank 0).  count elements of dt. */
static void do_op(op_t op, const bench_win_t *w, MPI_Datatype dt, int count)
{
    MPI_Aint disp = bench_disp(w, 1, 0);
    static int64_t compare = 0;

    switch (op) {
    case OP_ACC:
        MPI_Accumulate(src, count, dt, 1, disp, count, dt, MPI_SUM, w->win);
        break;
    case OP_GACC:
        MPI_Get_accumulate(src, count, dt, result, count, dt, 1, disp, count, dt, MPI_SUM,
                           w->win);
        break;
    case OP_FOP:
        MPI_Fetch_and_op(src, result, MPI_INT64_T, 1, disp, MPI_SUM, w->win);
        break;
    case OP_CAS:
        MPI_Compare_and_swap(src, &compare, result, MPI_INT64_T, 1, disp, w->win);
        break;
    default:
        break;
    }
    MPI_Win_flush(1, w->win);
}

/* Warm-up then timed iterations of fn until the iteration or time cap;
 * fills times[], returns the number of timed iterations. */
#define TIMED_LOOP(BODY, NOUT)                                                   \
    do {                                                                         \
        double start_ = bench_now();                                             \
        for (int i_ = 0; i_ < O.warmup; i_++) {                                  \
            BODY;                                                                \
            if (O.cap_s > 0 && bench_now() - start_ >= O.cap_s / 4) break;       \
        }                                                                        \
        start_ = bench_now();                                                    \
        (NOUT) = 0;                                                              \
        while ((NOUT) < O.iters) {                                               \
            double t0_ = bench_now();                                            \
            BODY;                                                                \
            double t1_ = bench_now();                                            \
            times[(NOUT)++] = t1_ - t0_;                                         \
            if (O.cap_s > 0 && t1_ - start_ >= O.cap_s) break;                   \
        }                                                                        \
    } while (0)

static int windows_made;        /* a first window creation failure is n/a */

/* Collective (both ranks): one window-based cell. */
static cell_t measure_rma(op_t op, type_t t, size_t size, int rank)
{
    cell_t c = { -1.0, 0 };
    bench_win_t w;
    size_t esz = (op == OP_FOP || op == OP_CAS) ? sizeof(int64_t) : type_size(t);
    MPI_Datatype dt = (op == OP_FOP || op == OP_CAS) ? MPI_INT64_T : mpi_type(t);
    int count = (int) (size / esz);
    size_t bytes = (size_t) count * esz;

    if (count < 1) return c;
    bench_win_create_fresh(&w, bytes, O.flavor, &windows_made);
    MPI_Barrier(MPI_COMM_WORLD);
    if (rank == 0) {
        MPI_Win_lock(O.exclusive ? MPI_LOCK_EXCLUSIVE : MPI_LOCK_SHARED, 1, 0,
                     bench_lock_win(&w));
        TIMED_LOOP(do_op(op, &w, dt, count), c.iters);
        MPI_Win_unlock(1, bench_lock_win(&w));
        c.us = 1e6 * bench_median(times, c.iters);
    }
    /* rank 1 (the passive target) waits here, inside MPI */
    MPI_Barrier(MPI_COMM_WORLD);
    bench_win_free(&w);
    return c;
}

/* Rank 0 only: the local reduction floor. */
static cell_t measure_reduce(type_t t, size_t size)
{
    cell_t c = { -1.0, 0 };
    int count = (int) (size / type_size(t));
    if (count < 1) return c;
    TIMED_LOOP(MPI_Reduce_local(src, win_ref, count, mpi_type(t), MPI_SUM), c.iters);
    c.us = 1e6 * bench_median(times, c.iters);
    return c;
}

int main(int argc, char **argv)
{
    int prc = parse_opts(argc, argv), rank, np, rma = 0;
    size_t max = 0;
    char line[4096], iters[4096];

    bench_init(&argc, &argv, MPI_THREAD_SINGLE);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &np);
    bench_opts_checked(prc, "acc_osu", argv[0], usage);
    for (int op = 0; op < OP_REDUCE; op++) rma |= O.ops[op];
    if (rma && np != 2) bench_bad_arg("acc_osu: acc/gacc/fop/cas need exactly 2 ranks");

    for (int i = 0; i < O.nsizes; i++) if (O.sizes[i] > max) max = O.sizes[i];
    if (max < sizeof(int64_t)) max = sizeof(int64_t);
    src = bench_alloc(max);
    result = bench_alloc(max);
    win_ref = bench_alloc(max);
    times = calloc((size_t) O.iters, sizeof(double));
    if (!times) bench_die("out of memory");

    if (rank == 0) {
        const char *osc = getenv("OMPI_MCA_osc");
        size_t n = 0;
        printf("# bench=acc_osu flavor=%s lock=%s tls=%s np=%d osc=%s\n",
               bench_flavor_names[O.flavor], O.exclusive ? "exclusive" : "shared", O.tls, np,
               osc ? osc : "default");
        if (rma) {
            printf("# per size: fresh window; rank 0 locks rank 1, op + MPI_Win_flush per "
                   "iteration\n");
        }
        if (O.ops[OP_REDUCE]) {
            printf("# reduce: MPI_Reduce_local(SUM) of the size's bytes, rank 0 alone\n");
        }
        printf("# cells: median per-iteration time (us); at most %d iterations or %.3g s "
               "per size\n", O.iters, O.cap_s);
        n += (size_t) snprintf(line + n, sizeof(line) - n, "# columns: size_B");
        for (int op = 0; op < OP_COUNT; op++) {
            if (!O.ops[op]) continue;
            for (int t = 0; t < T_COUNT; t++) {
                if ((op == OP_FOP || op == OP_CAS) ? t != T_INT64 : !O.types[t]) continue;
                n += (size_t) snprintf(line + n, sizeof(line) - n, " %s_%s_us",
                                       op_names[op], type_names[t]);
                if (n >= sizeof(line)) n = sizeof(line) - 1;
            }
        }
        printf("%s\n", line);
    }

    /* size by size (as OSU), so that the rows of a run that dies later are
     * already printed */
    for (int si = 0; si < O.nsizes; si++) {
        size_t size = O.sizes[si];
        size_t n = 0, m = 0;
        int any = 0;
        n += (size_t) snprintf(line + n, sizeof(line) - n, "%zu", size);
        m += (size_t) snprintf(iters + m, sizeof(iters) - m, "# iters: %zu", size);
        for (int op = 0; op < OP_COUNT; op++) {
            if (!O.ops[op]) continue;
            for (int t = 0; t < T_COUNT; t++) {
                cell_t c = { -1.0, 0 };
                int atomic = (op == OP_FOP || op == OP_CAS);
                if (atomic ? t != T_INT64 : !O.types[t]) continue;
                if (atomic && size != sizeof(int64_t)) {
                    /* fop / cas: one int64, size 8 only */
                } else if (op == OP_REDUCE) {
                    if (rank == 0) {
                        fill_ones(src, (type_t) t, max / type_size((type_t) t));
                        c = measure_reduce((type_t) t, size);
                    }
                } else {
                    fill_ones(src, atomic ? T_INT64 : (type_t) t,
                              max / type_size(atomic ? T_INT64 : (type_t) t));
                    c = measure_rma((op_t) op, (type_t) t, size, rank);
                }
                if (rank != 0) continue;
                if (c.us >= 0) {
                    any = 1;
                    n += (size_t) snprintf(line + n, sizeof(line) - n, " %.3f", c.us);
                    m += (size_t) snprintf(iters + m, sizeof(iters) - m, " %d", c.iters);
                } else {
                    n += (size_t) snprintf(line + n, sizeof(line) - n, " -");
                    m += (size_t) snprintf(iters + m, sizeof(iters) - m, " -");
                }
                if (n >= sizeof(line)) n = sizeof(line) - 1;
                if (m >= sizeof(iters)) m = sizeof(iters) - 1;
            }
        }
        if (rank == 0 && any) {
            printf("%s\n", line);
            printf("%s\n", iters);
        }
    }

    free(src);
    free(result);
    free(win_ref);
    free(times);
    MPI_Finalize();
    return 0;
}
