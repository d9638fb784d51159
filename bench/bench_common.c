/*
 * bench_common.c - option parsing, window creation per flavor, epochs,
 * timing statistics for the osc/ucxx benchmark programs.
 * See bench_common.h for the output format and conventions.
 */
#include "bench_common.h"

#include <errno.h>
#include <getopt.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#ifdef BENCH_HAVE_MPIX_UCXX
#include <mpix_ucxx.h>
#endif

const char *bench_flavor_names[FLAVOR_COUNT] = {
    [FLAVOR_CREATE] = "create",
    [FLAVOR_ALLOCATE] = "allocate",
    [FLAVOR_DYNAMIC] = "dynamic",
    [FLAVOR_MEMHANDLE] = "memhandle",
};

const char *bench_sync_names[SYNC_COUNT] = {
    [SYNC_LOCK] = "lock",
    [SYNC_FLUSH] = "flush",
    [SYNC_FLUSH_LOCAL] = "flush_local",
    [SYNC_LOCK_ALL] = "lock_all",
    [SYNC_FENCE] = "fence",
    [SYNC_PSCW] = "pscw",
};

static int my_rank(void)
{
    int rank = 0;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    return rank;
}

/* ---- options ------------------------------------------------------------- */

void bench_opts_defaults(bench_opts_t *o, const char *prog)
{
    memset(o, 0, sizeof(*o));
    o->prog = prog;
    strcpy(o->op, "put");
    o->flavor = FLAVOR_ALLOCATE;
    o->sync = SYNC_FLUSH;
    o->min_size = 8;
    o->max_size = 4u << 20;
    o->step = 2;
    o->iters = 1000;
    o->iters_large = 100;
    o->warmup = 10;
    o->window = 64;
    strcpy(o->threads, "1,2,4,8");
    strcpy(o->nps, "2,4");
    o->nwins = 100;
    o->sleep_s = 1.0;
}

int bench_parse_size(const char *s, size_t *out)
{
    char *end;
    errno = 0;
    unsigned long long v = strtoull(s, &end, 10);
    if (errno || end == s) return -1;
    switch (*end) {
    case 'g': case 'G': v <<= 10; /* fall through */
    case 'm': case 'M': v <<= 10; /* fall through */
    case 'k': case 'K': v <<= 10; end++; break;
    case '\0': break;
    default: return -1;
    }
    if (*end == 'B' || *end == 'b' || *end == 'i') end++;   /* "4KiB", "4KB" */
    if (*end == 'B') end++;
    if (*end != '\0') return -1;
    *out = (size_t) v;
    return 0;
}

static int parse_int(const char *s, int *out)
{
    char *end;
    errno = 0;
    long v = strtol(s, &end, 10);
    if (errno || end == s || *end || v < 0 || v > 1000000000L) return -1;
    *out = (int) v;
    return 0;
}

int bench_name_index(const char *s, const char *const *names, int n)
{
    for (int i = 0; i < n; i++) {
        if (0 == strcasecmp(s, names[i])) return i;
    }
    return -1;
}

static void usage(const bench_opts_t *o, const char *allowed, const char *help)
{
    static const struct { char c; const char *text; } all[] = {
        {'o', "-o OP       operation (see below)"},
        {'w', "-w FLAVOR   window flavor: create, allocate, dynamic, memhandle"},
        {'s', "-s SYNC     synchronization: lock, flush, flush_local, lock_all, fence, pscw"},
        {'m', "-m SIZE     smallest message size (bytes; K/M suffixes allowed)"},
        {'M', "-M SIZE     largest message size"},
        {'f', "-f FACTOR   size multiplier between rows (default 2)"},
        {'i', "-i N        timed iterations per row"},
        {'I', "-I N        timed iterations per row above 64 KiB"},
        {'x', "-x N        warm-up iterations per row"},
        {'W', "-W N        operations per epoch (bandwidth)"},
        {'t', "-t LIST     thread counts, comma separated (e.g. 1,2,4,8)"},
        {'p', "-p LIST     rank counts, comma separated (e.g. 2,4; at most the ranks started)"},
        {'n', "-n N        number of windows"},
        {'S', "-S SECONDS  how long the target sleeps outside MPI"},
        {'T', "-T SECONDS  time budget per row: fewer iterations when slow"},
        {'v', "-v          verbose"},
    };
    if (my_rank() != 0) return;
    printf("usage: mpirun -np N %s [options]\n", o->prog);
    for (size_t i = 0; i < sizeof(all) / sizeof(all[0]); i++) {
        if (strchr(allowed, all[i].c)) printf("  %s\n", all[i].text);
    }
    printf("  -h          this help\n");
    if (help) printf("%s\n", help);
}

void bench_parse_args(int argc, char **argv, bench_opts_t *o,
                      const char *allowed, const char *help)
{
    int c, bad = 0;
    char optstring[64];
    size_t n = 0;

    /* Build the getopt string from the allowed letters: all take an argument
     * except -v. */
    for (const char *p = allowed; *p && n + 3 < sizeof(optstring); p++) {
        optstring[n++] = *p;
        if (*p != 'v') optstring[n++] = ':';
    }
    optstring[n++] = 'h';
    optstring[n] = '\0';

    opterr = 0;
    while (!bad && -1 != (c = getopt(argc, argv, optstring))) {
        switch (c) {
        case 'o':
            snprintf(o->op, sizeof(o->op), "%s", optarg);
            break;
        case 'w': {
            int f = bench_name_index(optarg, bench_flavor_names, FLAVOR_COUNT);
            if (f < 0) bad = 1; else o->flavor = (bench_flavor_t) f;
            break;
        }
        case 's': {
            int s = bench_name_index(optarg, bench_sync_names, SYNC_COUNT);
            if (s < 0) bad = 1; else o->sync = (bench_sync_t) s;
            break;
        }
        case 'm': bad = bench_parse_size(optarg, &o->min_size) || o->min_size == 0; break;
        case 'M': bad = bench_parse_size(optarg, &o->max_size) || o->max_size == 0; break;
        case 'f': {
            int f;
            bad = parse_int(optarg, &f) || f < 2;
            if (!bad) o->step = (unsigned) f;
            break;
        }
        case 'i': bad = parse_int(optarg, &o->iters) || o->iters < 1; break;
        case 'I': bad = parse_int(optarg, &o->iters_large) || o->iters_large < 1; break;
        case 'x': bad = parse_int(optarg, &o->warmup); break;
        case 'W': bad = parse_int(optarg, &o->window) || o->window < 1; break;
        case 't': snprintf(o->threads, sizeof(o->threads), "%s", optarg); break;
        case 'p': snprintf(o->nps, sizeof(o->nps), "%s", optarg); break;
        case 'n': bad = parse_int(optarg, &o->nwins) || o->nwins < 1; break;
        case 'S': {
            char *end;
            o->sleep_s = strtod(optarg, &end);
            bad = (*end != '\0' || o->sleep_s <= 0);
            break;
        }
        case 'T': {
            char *end;
            o->row_s = strtod(optarg, &end);
            bad = (*end != '\0' || o->row_s < 0);
            break;
        }
        case 'v': o->verbose = 1; break;
        case 'h':
            usage(o, allowed, help);
            MPI_Finalize();
            exit(0);
        default:
            bad = 1;
        }
    }
    if (!bad && (optind != argc || (o->max_size && o->min_size > o->max_size))) bad = 1;
    if (bad) {
        if (my_rank() == 0) {
            fprintf(stderr, "%s: bad arguments\n", o->prog);
        }
        usage(o, allowed, help);
        MPI_Finalize();
        exit(2);
    }
}

int bench_parse_list(const char *s, int *out, int max, int limit)
{
    int n = 0;
    char *copy = strdup(s), *tok, *save = NULL;
    if (!copy) bench_die("out of memory");
    for (tok = strtok_r(copy, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
        int v;
        if (n >= max || parse_int(tok, &v) || v < 1 || v > limit) {
            n = -1;
            break;
        }
        out[n++] = v;
    }
    free(copy);
    return n;
}

int bench_parse_sizes(const char *s, size_t *out, int max)
{
    char *copy = strdup(s), *tok, *save = NULL;
    int n = 0;
    if (!copy) bench_die("out of memory");
    for (tok = strtok_r(copy, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
        size_t v;
        if (n >= max || bench_parse_size(tok, &v) || v == 0 || (n && v <= out[n - 1])) {
            n = -1;
            break;
        }
        out[n++] = v;
    }
    free(copy);
    return n;
}

int bench_size_range(size_t min, size_t max, unsigned long factor, size_t *out, int max_n)
{
    int n = 0;
    if (factor < 2) factor = 2;
    for (size_t s = min; n < max_n; s *= factor) {
        if (s >= max) {
            out[n++] = max;
            break;
        }
        out[n++] = s;
    }
    return n;
}

void bench_win_create_fresh(bench_win_t *w, size_t bytes, bench_flavor_t flavor, int *made)
{
    int rc = bench_win_create(w, bytes, flavor, MPI_COMM_WORLD);
    if (rc != MPI_SUCCESS) {
        char msg[MPI_MAX_ERROR_STRING] = "";
        int len = 0;
        MPI_Error_string(rc, msg, &len);
        if (!*made) {
            bench_exit_na("cannot create a '%s' window with this osc component (%s)",
                          bench_flavor_names[flavor], msg);
        }
        bench_die("creating a '%s' window of %zu bytes failed: %s", bench_flavor_names[flavor],
                  bytes, msg);
    }
    *made = 1;
}

int bench_parse_flavor(const char *s, bench_flavor_t *out)
{
    int f = bench_name_index(s, bench_flavor_names, FLAVOR_COUNT);
    if (f < 0) return -1;
    *out = (bench_flavor_t) f;
    return 0;
}

int bench_size_opt(bench_size_opts_t *z, int c, const char *arg)
{
    char *end;
    switch (c) {
    case 'm': return (bench_parse_size(arg, &z->min) || z->min == 0) ? -1 : 1;
    case 'M': return (bench_parse_size(arg, &z->max) || z->max == 0) ? -1 : 1;
    case 'f':
        z->factor = strtoul(arg, &end, 10);
        return (*end || z->factor < 2) ? -1 : 1;
    case 'z':
        z->n = bench_parse_sizes(arg, z->sizes, z->cap);
        z->have_list = 1;
        return z->n <= 0 ? -1 : 1;
    case 'T':
        z->cap_s = strtod(arg, &end);
        return (*end || z->cap_s < 0) ? -1 : 1;
    default: return 0;
    }
}

int bench_size_opts_done(bench_size_opts_t *z)
{
    if (z->min > z->max) return -1;
    if (!z->have_list) z->n = bench_size_range(z->min, z->max, z->factor, z->sizes, z->cap);
    return z->n;
}

/* After MPI_Init: what a program's own option parser returned (0 fine,
 * 1 -h, 2 bad arguments); for 1 and 2 rank 0 prints the usage and the
 * process ends (status 0 or 2). */
void bench_opts_checked(int prc, const char *prog, const char *argv0, void (*usage)(const char *))
{
    int rank;
    if (!prc) return;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    if (rank == 0) {
        if (prc == 2) fprintf(stderr, "%s: bad arguments\n", prog);
        usage(argv0);
    }
    MPI_Finalize();
    exit(prc == 1 ? 0 : 2);
}

int bench_parse_names(const char *s, const char *const *names, int n, int *out)
{
    char *copy = strdup(s), *tok, *save = NULL;
    int ok = 1, any = 0;
    if (!copy) return 0;
    for (int i = 0; i < n; i++) out[i] = 0;
    for (tok = strtok_r(copy, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
        int found = 0;
        for (int i = 0; i < n; i++) {
            if (!strcmp(tok, names[i])) { out[i] = 1; found = 1; any = 1; }
        }
        if (!found) ok = 0;
    }
    free(copy);
    return ok && any;
}

size_t bench_next_size(const bench_opts_t *o, size_t s)
{
    if (s >= o->max_size) return 0;
    s *= o->step;
    return s > o->max_size ? o->max_size : s;
}

int bench_iters_for(const bench_opts_t *o, size_t size)
{
    return size > (64u << 10) ? o->iters_large : o->iters;
}

int bench_row_iters(const bench_opts_t *o, int n, double est_s, MPI_Comm comm)
{
    if (o->row_s > 0 && est_s > 0 && n * est_s > o->row_s) {
        double fit = o->row_s / est_s;
        n = fit < 5 ? 5 : (int) fit;
    }
    MPI_Bcast(&n, 1, MPI_INT, 0, comm);
    return n;
}

/* ---- startup / reporting ------------------------------------------------- */

void bench_init(int *argc, char ***argv, int thread_level)
{
    int provided;
    MPI_Init_thread(argc, argv, thread_level, &provided);
    if (provided < thread_level) {
        if (my_rank() == 0) {
            printf("# n/a: MPI library provides thread level %d < %d requested\n",
                   provided, thread_level);
        }
        MPI_Finalize();
        exit(BENCH_EXIT_NA);
    }
    /* Window creation errors are raised on the communicator: return them so
     * that "this component cannot do this flavor" becomes n/a, not a crash. */
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    /* Lines are parsed by bench/run: keep them whole and in order. */
    setvbuf(stdout, NULL, _IOLBF, 0);
}

void bench_require_np(int np, int exact)
{
    int size;
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if ((exact && size != np) || size < np) {
        if (my_rank() == 0) {
            fprintf(stderr, "this benchmark needs %s%d ranks (got %d)\n",
                    exact ? "exactly " : "at least ", np, size);
        }
        MPI_Finalize();
        exit(2);
    }
}

void bench_sleepy_barrier(MPI_Comm comm, unsigned sleep_us)
{
    MPI_Request req;
    int done = 0;
    MPI_Ibarrier(comm, &req);
    MPI_Test(&req, &done, MPI_STATUS_IGNORE);
    while (!done) {
        if (sleep_us) usleep(sleep_us);
        MPI_Test(&req, &done, MPI_STATUS_IGNORE);
    }
}

void bench_print_header(const bench_opts_t *o, const char *bench, const char *columns)
{
    int size;
    const char *osc = getenv("OMPI_MCA_osc");
    if (my_rank() != 0) return;
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    printf("# bench=%s op=%s flavor=%s sync=%s np=%d osc=%s\n", bench, o->op,
           bench_flavor_names[o->flavor], bench_sync_names[o->sync], size,
           osc ? osc : "default");
    printf("# columns: %s\n", columns);
}

void bench_exit_na(const char *fmt, ...)
{
    if (my_rank() == 0) {
        va_list ap;
        va_start(ap, fmt);
        printf("# n/a: ");
        vprintf(fmt, ap);
        printf("\n");
        va_end(ap);
    }
    fflush(stdout);
    MPI_Finalize();
    exit(BENCH_EXIT_NA);
}

void bench_bad_arg(const char *fmt, ...)
{
    if (my_rank() == 0) {
        va_list ap;
        va_start(ap, fmt);
        vfprintf(stderr, fmt, ap);
        fprintf(stderr, "\n");
        va_end(ap);
    }
    MPI_Finalize();
    exit(2);
}

void bench_die(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "rank %d: ", my_rank());
    vfprintf(stderr, fmt, ap);
    fprintf(stderr, "\n");
    va_end(ap);
    MPI_Abort(MPI_COMM_WORLD, 3);
    exit(3);
}

/* ---- windows ------------------------------------------------------------- */

void *bench_alloc(size_t size)
{
    void *p = NULL;
    long page = sysconf(_SC_PAGESIZE);
    if (size == 0) size = 1;
    if (posix_memalign(&p, page > 0 ? (size_t) page : 4096, size)) {
        bench_die("cannot allocate %zu bytes", size);
    }
    memset(p, 0, size);
    return p;
}

void bench_fill_pattern(void *buf, size_t n, unsigned seed)
{
    unsigned char *p = buf;
    for (size_t i = 0; i < n; i++) p[i] = bench_pattern_byte(i, seed);
}

size_t bench_check_pattern(const void *buf, size_t n, unsigned seed)
{
    const unsigned char *p = buf;
    for (size_t i = 0; i < n; i++) {
        if (p[i] != bench_pattern_byte(i, seed)) return i;
    }
    return (size_t) -1;
}

int bench_have_mpix(void)
{
#ifdef BENCH_HAVE_MPIX_UCXX
    return 1;
#else
    return 0;
#endif
}

/*
 * The "memhandle" flavor (osc/ucxx extension, mpix_ucxx.h; "Quo Vadis MPI
 * RMA?" section 4): every rank creates a dynamic parent window, registers its
 * memory with MPIX_Memhandle_create, sends the handle to rank-1 and receives
 * rank+1's with MPI_Sendrecv, and makes a window on rank+1's memory with
 * MPIX_Win_from_memhandle.  Displacements count from the handle's base (so
 * disp0 is 0); lock/unlock go to the parent (bench_lock_win).  On another
 * component MPIX_Memhandle_create returns MPI_ERR_WIN (or the dynamic parent
 * cannot be created at all): the caller reports n/a.  Built without the
 * extension library (no BENCH_HAVE_MPIX_UCXX) the flavor is always n/a.
 */
#ifdef BENCH_HAVE_MPIX_UCXX
static int all_ok(int rc, MPI_Comm comm)
{
    int ok = (rc == MPI_SUCCESS), all = 0;
    MPI_Allreduce(&ok, &all, 1, MPI_INT, MPI_MIN, comm);
    return all;
}
#endif

static int bench_win_create_memhandle(bench_win_t *w, size_t size, MPI_Info info, MPI_Comm comm)
{
#ifdef BENCH_HAVE_MPIX_UCXX
    int rank, np, rc, len = 0;
    MPI_Status st;

    MPI_Comm_rank(comm, &rank);
    MPI_Comm_size(comm, &np);
    rc = MPI_Win_create_dynamic(MPI_INFO_NULL, comm, &w->parent);
    if (rc != MPI_SUCCESS) w->parent = MPI_WIN_NULL;
    if (!all_ok(rc, comm)) {
        /* a parent some ranks did create is left alone (freeing is collective) */
        w->parent = MPI_WIN_NULL;
        return rc != MPI_SUCCESS ? rc : MPI_ERR_OTHER;
    }
    /* the MPIX calls report through the parent's error handler: return the
     * error (another component: MPI_ERR_WIN) instead of aborting */
    MPI_Win_set_errhandler(w->parent, MPI_ERRORS_RETURN);
    w->mh_local = calloc(1, MPIX_MAX_MEMHANDLE_SIZE);
    w->mh_peer = calloc(1, MPIX_MAX_MEMHANDLE_SIZE);
    if (!w->mh_local || !w->mh_peer) bench_die("out of memory");
    w->base = w->owned;
    rc = MPIX_Memhandle_create(w->base, (MPI_Aint) size, MPI_INFO_NULL, w->parent,
                               w->mh_local, &len);
    if (!all_ok(rc, comm)) {
        if (rc == MPI_SUCCESS) MPIX_Memhandle_release(w->mh_local, w->parent);
        MPI_Win_free(&w->parent);
        w->parent = MPI_WIN_NULL;
        return rc != MPI_SUCCESS ? rc : MPI_ERR_OTHER;
    }
    w->mh_target = (rank + 1) % np;
    MPI_Sendrecv(w->mh_local, len, MPI_BYTE, (rank + np - 1) % np, 77,
                 w->mh_peer, MPIX_MAX_MEMHANDLE_SIZE, MPI_BYTE, w->mh_target, 77, comm, &st);
    MPI_Get_count(&st, MPI_BYTE, &w->mh_peer_size);
    rc = MPIX_Win_from_memhandle(w->mh_peer, (MPI_Aint) size, 1, info, w->mh_target,
                                 w->parent, &w->win);
    if (rc != MPI_SUCCESS) w->win = MPI_WIN_NULL;
    MPI_Win_set_errhandler(w->parent, MPI_ERRORS_ARE_FATAL);
    return rc;
#else
    (void) w; (void) size; (void) info; (void) comm;
    return MPI_ERR_UNSUPPORTED_OPERATION;
#endif
}

int bench_memhandle_win(const bench_win_t *w, MPI_Info info, MPI_Win *newwin)
{
#ifdef BENCH_HAVE_MPIX_UCXX
    if (w->parent == MPI_WIN_NULL) return MPI_ERR_WIN;
    return MPIX_Win_from_memhandle(w->mh_peer, (MPI_Aint) w->size, 1, info, w->mh_target,
                                   w->parent, newwin);
#else
    (void) w; (void) info; (void) newwin;
    return MPI_ERR_UNSUPPORTED_OPERATION;
#endif
}

int bench_win_create(bench_win_t *w, size_t size, bench_flavor_t flavor, MPI_Comm comm)
{
    return bench_win_create_info(w, size, flavor, MPI_INFO_NULL, comm);
}

int bench_win_create_info(bench_win_t *w, size_t size, bench_flavor_t flavor, MPI_Info info,
                          MPI_Comm comm)
{
    int rc = MPI_SUCCESS, all_ok, ok;
    MPI_Aint my_disp = 0;

    memset(w, 0, sizeof(*w));
    w->win = MPI_WIN_NULL;
    w->parent = MPI_WIN_NULL;
    w->comm = comm;
    w->flavor = flavor;
    w->size = size;
    MPI_Comm_size(comm, &w->nranks);
    w->disp0 = calloc((size_t) w->nranks, sizeof(MPI_Aint));
    if (!w->disp0) bench_die("out of memory");

    /* Window memory is allocated and touched before the timer starts so that
     * create_s is the cost of the MPI call(s) alone. */
    if (flavor == FLAVOR_CREATE || flavor == FLAVOR_DYNAMIC || flavor == FLAVOR_MEMHANDLE) {
        w->owned = bench_alloc(size);
    }
    w->create_s = bench_now();
    switch (flavor) {
    case FLAVOR_CREATE:
        w->base = w->owned;
        rc = MPI_Win_create(w->base, (MPI_Aint) size, 1, info, comm, &w->win);
        if (rc != MPI_SUCCESS) w->win = MPI_WIN_NULL;
        break;
    case FLAVOR_ALLOCATE:
        rc = MPI_Win_allocate((MPI_Aint) size, 1, info, comm, &w->base, &w->win);
        if (rc != MPI_SUCCESS) w->win = MPI_WIN_NULL;
        break;
    case FLAVOR_DYNAMIC:
        rc = MPI_Win_create_dynamic(info, comm, &w->win);
        if (rc != MPI_SUCCESS) w->win = MPI_WIN_NULL;
        if (rc == MPI_SUCCESS) {
            w->attached = w->base = w->owned;
            rc = MPI_Win_attach(w->win, w->base, (MPI_Aint) size);
            MPI_Get_address(w->base, &my_disp);
        }
        break;
    case FLAVOR_MEMHANDLE:
        rc = bench_win_create_memhandle(w, size, info, comm);
        break;
    default:
        rc = MPI_ERR_ARG;
    }
    w->create_s = bench_now() - w->create_s;
    if (rc == MPI_SUCCESS && flavor == FLAVOR_ALLOCATE) memset(w->base, 0, size);

    /* All ranks must agree (creation is collective; a rank-local failure
     * would otherwise leave the others hanging later). */
    ok = (rc == MPI_SUCCESS);
    MPI_Allreduce(&ok, &all_ok, 1, MPI_INT, MPI_MIN, comm);
    if (!all_ok) {
        /* A window that some ranks did create is left alone: freeing it is
         * collective and could hang when other ranks have none.  The caller
         * reports n/a and finalizes. */
        if (w->win == MPI_WIN_NULL && w->parent == MPI_WIN_NULL) free(w->owned);
        free(w->disp0);
        free(w->mh_local);
        free(w->mh_peer);
        w->owned = w->base = NULL;
        w->disp0 = NULL;
        w->mh_local = w->mh_peer = NULL;
        return rc != MPI_SUCCESS ? rc : MPI_ERR_OTHER;
    }
    MPI_Allgather(&my_disp, 1, MPI_AINT, w->disp0, 1, MPI_AINT, comm);
    return MPI_SUCCESS;
}

void bench_win_create_or_na(bench_win_t *w, size_t size, bench_flavor_t flavor, MPI_Comm comm)
{
    int rc = bench_win_create(w, size, flavor, comm);
    if (rc != MPI_SUCCESS) {
        char msg[MPI_MAX_ERROR_STRING] = "";
        int len = 0;
        MPI_Error_string(rc, msg, &len);
        bench_exit_na("cannot create a '%s' window with this osc component (%s)",
                      bench_flavor_names[flavor], msg);
    }
}

double bench_win_free(bench_win_t *w)
{
    double t = bench_now();
    if (w->attached) MPI_Win_detach(w->win, w->attached);
    MPI_Win_free(&w->win);
#ifdef BENCH_HAVE_MPIX_UCXX
    if (w->parent != MPI_WIN_NULL) {
        /* the neighbour's window on our handle must be gone before release */
        MPI_Barrier(w->comm);
        MPIX_Memhandle_release(w->mh_local, w->parent);
        MPI_Win_free(&w->parent);
    }
#endif
    t = bench_now() - t;
    free(w->owned);
    free(w->disp0);
    free(w->mh_local);
    free(w->mh_peer);
    memset(w, 0, sizeof(*w));
    w->win = MPI_WIN_NULL;
    w->parent = MPI_WIN_NULL;
    return t;
}

/* ---- epochs -------------------------------------------------------------- */

void bench_epoch_setup(bench_epoch_t *e, bench_win_t *w, bench_sync_t sync,
                       int peer, int is_origin, int is_target)
{
    memset(e, 0, sizeof(*e));
    e->w = w;
    e->sync = sync;
    e->peer = peer;
    e->origin = is_origin;
    e->target = is_target;
    e->peer_group = MPI_GROUP_NULL;
    if (w->flavor == FLAVOR_MEMHANDLE && bench_sync_is_active(sync)) {
        bench_win_free(w);
        bench_exit_na("a memhandle window has no %s epochs (passive target only)",
                      bench_sync_names[sync]);
    }
    if (sync == SYNC_PSCW) {
        MPI_Group g;
        MPI_Win_get_group(w->win, &g);
        MPI_Group_incl(g, 1, &peer, &e->peer_group);
        MPI_Group_free(&g);
    }
}

void bench_epoch_open(bench_epoch_t *e)
{
    MPI_Win win = e->w->win;
    switch (e->sync) {
    case SYNC_FLUSH:
    case SYNC_FLUSH_LOCAL:
        if (e->origin) MPI_Win_lock(MPI_LOCK_SHARED, e->peer, 0, bench_lock_win(e->w));
        break;
    case SYNC_FENCE:
        MPI_Win_fence(0, win);
        break;
    default:
        break;
    }
}

void bench_epoch_begin(bench_epoch_t *e)
{
    MPI_Win win = e->w->win;
    switch (e->sync) {
    case SYNC_LOCK:
        if (e->origin) MPI_Win_lock(MPI_LOCK_EXCLUSIVE, e->peer, 0, bench_lock_win(e->w));
        break;
    case SYNC_LOCK_ALL:
        if (e->origin) MPI_Win_lock_all(0, bench_lock_win(e->w));
        break;
    case SYNC_PSCW:
        /* post before start: a rank that is both target and origin must
         * expose its window before waiting for the peer's exposure */
        if (e->target) MPI_Win_post(e->peer_group, 0, win);
        if (e->origin) MPI_Win_start(e->peer_group, 0, win);
        break;
    default:
        break;
    }
}

void bench_epoch_end(bench_epoch_t *e)
{
    MPI_Win win = e->w->win;
    switch (e->sync) {
    case SYNC_LOCK:
        if (e->origin) MPI_Win_unlock(e->peer, bench_lock_win(e->w));
        break;
    case SYNC_FLUSH:
        if (e->origin) MPI_Win_flush(e->peer, win);
        break;
    case SYNC_FLUSH_LOCAL:
        if (e->origin) MPI_Win_flush_local(e->peer, win);
        break;
    case SYNC_LOCK_ALL:
        if (e->origin) MPI_Win_unlock_all(bench_lock_win(e->w));
        break;
    case SYNC_FENCE:
        MPI_Win_fence(0, win);
        break;
    case SYNC_PSCW:
        if (e->origin) MPI_Win_complete(win);
        if (e->target) MPI_Win_wait(win);
        break;
    default:
        break;
    }
}

void bench_epoch_close(bench_epoch_t *e)
{
    switch (e->sync) {
    case SYNC_FLUSH:
    case SYNC_FLUSH_LOCAL:
        if (e->origin) MPI_Win_unlock(e->peer, bench_lock_win(e->w));
        break;
    default:
        break;
    }
}

void bench_epoch_free(bench_epoch_t *e)
{
    if (e->peer_group != MPI_GROUP_NULL) MPI_Group_free(&e->peer_group);
}

/* ---- statistics ---------------------------------------------------------- */

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *) a, y = *(const double *) b;
    return (x > y) - (x < y);
}

double bench_median(const double *v, int n)
{
    double *c, m;
    if (n <= 0) return 0.0;
    c = malloc(sizeof(double) * (size_t) n);
    if (!c) bench_die("out of memory");
    memcpy(c, v, sizeof(double) * (size_t) n);
    qsort(c, (size_t) n, sizeof(double), cmp_double);
    m = (n % 2) ? c[n / 2] : 0.5 * (c[n / 2 - 1] + c[n / 2]);
    free(c);
    return m;
}

double bench_mean(const double *v, int n)
{
    double s = 0.0;
    for (int i = 0; i < n; i++) s += v[i];
    return n > 0 ? s / n : 0.0;
}

double bench_min(const double *v, int n)
{
    double m = n > 0 ? v[0] : 0.0;
    for (int i = 1; i < n; i++) if (v[i] < m) m = v[i];
    return m;
}

double bench_max(const double *v, int n)
{
    double m = n > 0 ? v[0] : 0.0;
    for (int i = 1; i < n; i++) if (v[i] > m) m = v[i];
    return m;
}

size_t bench_rss_bytes(void)
{
    unsigned long total = 0, resident = 0;
    FILE *f = fopen("/proc/self/statm", "r");
    if (!f) return 0;
    if (2 != fscanf(f, "%lu %lu", &total, &resident)) resident = 0;
    fclose(f);
    return (size_t) resident * (size_t) sysconf(_SC_PAGESIZE);
}
