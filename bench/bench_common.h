/*
 * bench_common.h - helpers shared by the osc/ucxx benchmark programs.
 *
 * Every program in bench/ is an MPI program that measures one thing for one
 * combination of window flavor and synchronization mode, and prints its
 * results in a small, uniform text format that bench/run parses:
 *
 *   # bench=<name> key=value ...        description lines (start with '#')
 *   # columns: <x-name> <metric> ...    names of the data columns
 *   <x> <value> <value> ...             one data row per message size / thread
 *                                       count / rank count / operation
 *   # n/a: <reason>                     this combination is not supported
 *   # note: <text>                      a remark the driver shows under the
 *                                       tables (e.g. why a column is n/a)
 *   A data row may hold "n/a" in a column its component cannot measure.
 *
 * Exit status: 0 = measured, BENCH_EXIT_NA (77) = combination not applicable
 * (e.g. the component cannot create this window flavor), other = failure.
 * Timings never gate anything: a benchmark "fails" only when MPI fails.
 */
#ifndef OSC_UCXX_BENCH_COMMON_H
#define OSC_UCXX_BENCH_COMMON_H

#include <mpi.h>
#include <stddef.h>
#include <stdint.h>

#define BENCH_EXIT_NA 77

/* ---- window flavors and synchronization modes ---------------------------- */

typedef enum {
    FLAVOR_CREATE,      /* MPI_Win_create over malloc'ed memory */
    FLAVOR_ALLOCATE,    /* MPI_Win_allocate */
    FLAVOR_DYNAMIC,     /* MPI_Win_create_dynamic + MPI_Win_attach */
    FLAVOR_MEMHANDLE,   /* osc/ucxx extension (mpix_ucxx.h): a dynamic parent
                         * window, MPIX_Memhandle_create on each rank's
                         * memory, handles passed to the neighbour with
                         * MPI_Sendrecv, MPIX_Win_from_memhandle; the window
                         * reaches one target, rank+1 (mod size), and is
                         * locked through the parent (bench_lock_win) */
    FLAVOR_COUNT
} bench_flavor_t;

typedef enum {
    SYNC_LOCK,          /* per op: MPI_Win_lock(EXCLUSIVE) ... MPI_Win_unlock */
    SYNC_FLUSH,         /* lock once (SHARED); per op: MPI_Win_flush */
    SYNC_FLUSH_LOCAL,   /* lock once (SHARED); per op: MPI_Win_flush_local */
    SYNC_LOCK_ALL,      /* per op: MPI_Win_lock_all ... MPI_Win_unlock_all */
    SYNC_FENCE,         /* per op: MPI_Win_fence on both ranks */
    SYNC_PSCW,          /* per op: start/complete (origin), post/wait (target) */
    SYNC_COUNT
} bench_sync_t;

extern const char *bench_flavor_names[FLAVOR_COUNT];
extern const char *bench_sync_names[SYNC_COUNT];

/* ---- options ------------------------------------------------------------- */

typedef struct {
    const char *prog;         /* program name, for messages */
    char op[32];              /* -o: operation, meaning depends on the program */
    bench_flavor_t flavor;    /* -w */
    bench_sync_t sync;        /* -s */
    size_t min_size;          /* -m: first message size in bytes */
    size_t max_size;          /* -M: last message size in bytes (always measured) */
    unsigned step;            /* -f: size multiplier between rows (2 = powers of two) */
    int iters;                /* -i: timed iterations per row */
    int iters_large;          /* -I: timed iterations for sizes > 64 KiB */
    int warmup;               /* -x: untimed iterations before each row */
    int window;               /* -W: operations per epoch (bandwidth programs) */
    char threads[64];         /* -t: thread counts, comma separated (rma_mt, rma_scope) */
    char nps[64];             /* -p: rank counts, comma separated (rma_sync) */
    int nwins;                /* -n: number of windows (win_cost) */
    double sleep_s;           /* -S: target sleep in seconds (rma_progress) */
    double row_s;             /* -T: time budget per row in seconds (0 = none) */
    int verbose;              /* -v */
} bench_opts_t;

/* Parse a comma-separated list of positive integers ("1,2,4,8") into out
 * (at most max entries, each in [1, limit]).  Returns the count, or -1 on a
 * bad entry. */
int bench_parse_list(const char *s, int *out, int max, int limit);

/* Fill *o with the defaults common to all programs (programs may then change
 * their own defaults before parsing). */
void bench_opts_defaults(bench_opts_t *o, const char *prog);

/* Parse the command line into *o.  `allowed` lists the short options the
 * program accepts (e.g. "owsmMfiIxWv"; all take an argument except -v);
 * `help` is printed under the usage line.
 * On error or -h every rank finalizes MPI and exits (status 2 or 0). */
void bench_parse_args(int argc, char **argv, bench_opts_t *o,
                      const char *allowed, const char *help);

/* Parse "8", "64K", "4M", "1G" (binary units).  Returns 0 on success. */
int bench_parse_size(const char *s, size_t *out);

/* Parse a comma-separated list of increasing message sizes ("8,64,4K,1M";
 * bench_parse_size units) into out (at most max entries).  Returns the
 * count, or -1 on a bad, zero or non-increasing entry. */
int bench_parse_sizes(const char *s, size_t *out, int max);

/* The sizes min, min*factor, ... up to max (max itself always last) into out
 * (at most max_n entries).  Returns the count. */
int bench_size_range(size_t min, size_t max, unsigned long factor, size_t *out, int max_n);

/* Parse a comma-separated list of names ("acc,gacc"): out[i] = 1 for every
 * names[i] listed, 0 for the others.  Returns 1, or 0 when an entry is not
 * one of the n names or the list is empty. */
int bench_parse_names(const char *s, const char *const *names, int n, int *out);
/* The size options of programs with their own parsers: -m MIN, -M MAX,
 * -f FACTOR (a range), -z LIST (sizes, which win), and -T SECONDS (a time
 * cap).  Set min, max, factor, sizes, cap (capacity) and cap_s first. */
typedef struct {
    size_t min, max;
    unsigned long factor;
    size_t *sizes;
    int cap, n, have_list;
    double cap_s;
} bench_size_opts_t;
/* -w FLAVOR: 0, or -1 for an unknown name. */
int bench_parse_flavor(const char *s, bench_flavor_t *out);
/* 1: option c taken, 0: not one of these, -1: bad value. */
int bench_size_opt(bench_size_opts_t *z, int c, const char *arg);
/* After the options: the number of sizes in z->sizes, or <= 0 when bad. */
int bench_size_opts_done(bench_size_opts_t *z);
/* Index of `s` in names[0..n) (case-insensitive), or -1. */
int bench_name_index(const char *s, const char *const *names, int n);
/* After bench_init: ends the process when the option parser returned 1 (-h)
 * or 2 (bad arguments), rank 0 printing usage(argv0) first. */
void bench_opts_checked(int prc, const char *prog, const char *argv0, void (*usage)(const char *));

/* Next message size after `s` for the row loop: s*step, clamped so that
 * max_size itself is always the last row.  Returns 0 past the end. */
size_t bench_next_size(const bench_opts_t *o, size_t s);

/* Iterations for a message size (iters, or iters_large above 64 KiB). */
int bench_iters_for(const bench_opts_t *o, size_t size);

/* Collective over comm (rank 0 decides, MPI_Bcast): the number of timed
 * iterations for a row, given the planned count n and rank 0's estimate of
 * one iteration's time (e.g. from the warm-up).  With -T, n is cut so that
 * the row takes about row_s seconds, but never below 5 iterations. */
int bench_row_iters(const bench_opts_t *o, int n, double est_s, MPI_Comm comm);

/* ---- startup / reporting ------------------------------------------------- */

/* MPI_Init(_thread) wrapper: sets MPI_ERRORS_RETURN on MPI_COMM_WORLD so that
 * an unsupported window flavor can be reported as "n/a" instead of aborting. */
void bench_init(int *argc, char ***argv, int thread_level);

/* Require exactly / at least `np` ranks; otherwise print a message and exit. */
void bench_require_np(int np, int exact);

/* Barrier that does not hog a core: MPI_Ibarrier, then MPI_Test every
 * `sleep_us` microseconds (the target side of the multi-threaded benchmark
 * uses it so that origin threads get the CPUs).  All ranks of comm must use
 * it at the same point (it is an MPI_Ibarrier for matching purposes). */
void bench_sleepy_barrier(MPI_Comm comm, unsigned sleep_us);

/* Rank 0: print the "# bench=..." description and "# columns: ..." lines. */
void bench_print_header(const bench_opts_t *o, const char *bench, const char *columns);

/* Every rank: finalize and exit with BENCH_EXIT_NA after rank 0 printed the
 * reason.  Must be called by all ranks (collectively). */
void bench_exit_na(const char *fmt, ...) __attribute__((noreturn, format(printf, 1, 2)));

/* Every rank: report a bad command-line argument, finalize, exit(2). */
void bench_bad_arg(const char *fmt, ...) __attribute__((noreturn, format(printf, 1, 2)));

/* Print "rank N: msg" to stderr and MPI_Abort (for real failures). */
void bench_die(const char *fmt, ...) __attribute__((noreturn, format(printf, 1, 2)));

/* ---- windows ------------------------------------------------------------- */

typedef struct {
    MPI_Win win;
    bench_flavor_t flavor;
    char *base;               /* local window memory (size bytes) */
    size_t size;
    MPI_Aint *disp0;          /* per rank: target displacement of its byte 0
                               * (0, or the absolute address for dynamic) */
    int nranks;
    void *attached;           /* dynamic: the attached buffer */
    void *owned;              /* create/dynamic/memhandle: memory we allocated */
    double create_s;          /* seconds spent in the MPI creation call(s) */
    /* memhandle flavor only (MPI_WIN_NULL / NULL otherwise): */
    MPI_Win parent;           /* the dynamic parent window: lock/unlock here */
    MPI_Comm comm;            /* the creating communicator (for the free) */
    int mh_target;            /* the only rank the window reaches (rank+1) */
    int mh_peer_size;         /* bytes of the neighbour's handle */
    void *mh_local;           /* our handle (MPIX_MAX_MEMHANDLE_SIZE bytes) */
    void *mh_peer;            /* the handle of mh_target's memory */
} bench_win_t;

/* 1 when this build has the osc/ucxx extension library (the memhandle
 * flavor can work), 0 when it was built without mpix_ucxx.h. */
int bench_have_mpix(void);

/* Collective over comm: create a window of `size` bytes of the given flavor,
 * zero-filled.  Returns MPI_SUCCESS, or the MPI error code when the osc
 * component in use cannot create this flavor (e.g. osc/sm and
 * MPI_Win_create) - callers usually turn that into bench_exit_na(). */
int bench_win_create(bench_win_t *w, size_t size, bench_flavor_t flavor, MPI_Comm comm);

/* Same, with an info object passed to the creation call (e.g. the osc/ucxx
 * keys mpi_win_scope and mpi_win_order; other components ignore them). */
int bench_win_create_info(bench_win_t *w, size_t size, bench_flavor_t flavor, MPI_Info info,
                          MPI_Comm comm);

/* Like bench_win_create but exits with "n/a" on failure. */
void bench_win_create_or_na(bench_win_t *w, size_t size, bench_flavor_t flavor, MPI_Comm comm);
/* A fresh window per size (the OSU pattern) on MPI_COMM_WORLD: when the
 * first one (*made still 0) cannot be made the flavor is n/a here (exit 77),
 * a later failure is fatal. */
void bench_win_create_fresh(bench_win_t *w, size_t bytes, bench_flavor_t flavor, int *made);

/* Collective: free the window; returns the seconds spent in MPI (detach+free;
 * for memhandle: free, barrier, release, parent free). */
double bench_win_free(bench_win_t *w);

/* Memhandle flavor: one more window on the neighbour's handle (local, what
 * MPIX_Win_from_memhandle costs); free it with MPI_Win_free.  Returns the
 * MPI error code (MPI_ERR_UNSUPPORTED_OPERATION without the extension). */
int bench_memhandle_win(const bench_win_t *w, MPI_Info info, MPI_Win *newwin);

/* The window that passive-target lock/unlock/lock_all go to: the parent for
 * memhandle windows, the window itself otherwise.  Operations and flushes
 * always go to w->win. */
static inline MPI_Win bench_lock_win(const bench_win_t *w)
{
    return w->parent != MPI_WIN_NULL ? w->parent : w->win;
}

/* Target displacement of byte `off` of rank `target`'s window memory. */
static inline MPI_Aint bench_disp(const bench_win_t *w, int target, size_t off)
{
    return w->disp0[target] + (MPI_Aint) off;
}

/* ---- epochs: one synchronization pattern for every program --------------
 *
 * A measured iteration is   bench_epoch_begin(); <ops>; bench_epoch_end();
 * and completes the origin's operations.  Passive modes need only the origin
 * (the target sits in a barrier); active modes (fence, PSCW) need the target
 * to call begin/end in lockstep.  A rank can be both origin and target
 * (bi-directional bandwidth). */
typedef struct {
    bench_win_t *w;
    bench_sync_t sync;
    int peer;                 /* the rank we access and/or expose to */
    int origin, target;       /* roles of this rank */
    MPI_Group peer_group;     /* PSCW */
} bench_epoch_t;

/* setup is collective: fence / PSCW on a memhandle window (which has no
 * active-target epochs of its own) frees the window and exits with n/a. */
void bench_epoch_setup(bench_epoch_t *e, bench_win_t *w, bench_sync_t sync,
                       int peer, int is_origin, int is_target);
void bench_epoch_open(bench_epoch_t *e);   /* once, before the loop */
void bench_epoch_begin(bench_epoch_t *e);  /* per iteration */
void bench_epoch_end(bench_epoch_t *e);    /* per iteration */
void bench_epoch_close(bench_epoch_t *e);  /* once, after the loop */
void bench_epoch_free(bench_epoch_t *e);   /* release what setup made */

/* Active modes need the target inside the loop; passive ones do not. */
static inline int bench_sync_is_active(bench_sync_t s)
{
    return s == SYNC_FENCE || s == SYNC_PSCW;
}

/* ---- timing and statistics ----------------------------------------------- */

static inline double bench_now(void) { return MPI_Wtime(); }

/* Median / mean / min / max of n values (v is not modified). */
double bench_median(const double *v, int n);
double bench_mean(const double *v, int n);
double bench_min(const double *v, int n);
double bench_max(const double *v, int n);

/* Resident set size of this process in bytes, from /proc/self/statm. */
size_t bench_rss_bytes(void);

/* malloc that aborts on failure; memory is page aligned and zeroed. */
void *bench_alloc(size_t size);

/* Value checks of the OSU-style programs: fill n bytes with a pattern that
 * depends on `seed` and has no zero byte (a fresh, zeroed window that missed
 * a put is seen), and find the first byte that differs from it: its offset,
 * or (size_t) -1 when all n bytes match. */
void bench_fill_pattern(void *buf, size_t n, unsigned seed);
size_t bench_check_pattern(const void *buf, size_t n, unsigned seed);
static inline unsigned char bench_pattern_byte(size_t i, unsigned seed)
{
    return (unsigned char) (1 + (i * 31u + (i >> 8) + seed * 97u) % 251u);
}

#endif /* OSC_UCXX_BENCH_COMMON_H */
