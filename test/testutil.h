/* Shared helpers for the osc/ucxx tests: checks that count failures and
 * a final verdict all ranks agree on. */
#ifndef OSC_UCXX_TESTUTIL_H
#define OSC_UCXX_TESTUTIL_H

#include <dirent.h>
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int tu_errors = 0;

/* Record a failure with its location; keep going so one run reports many. */
#define TU_CHECK(cond, ...)                                                  \
    do {                                                                     \
        if (!(cond)) {                                                       \
            int tu_rank_;                                                    \
            MPI_Comm_rank(MPI_COMM_WORLD, &tu_rank_);                        \
            if (tu_errors < 20) {                                            \
                fprintf(stderr, "[rank %d] %s:%d: check failed: %s: ",       \
                        tu_rank_, __FILE__, __LINE__, #cond);                \
                fprintf(stderr, __VA_ARGS__);                                \
                fprintf(stderr, "\n");                                       \
            }                                                                \
            tu_errors++;                                                     \
        }                                                                    \
    } while (0)

/* An MPI call that must succeed. */
#define TU_MPI(call)                                                         \
    do {                                                                     \
        int tu_rc_ = (call);                                                 \
        if (MPI_SUCCESS != tu_rc_) {                                         \
            char tu_msg_[MPI_MAX_ERROR_STRING];                              \
            int tu_len_;                                                     \
            MPI_Error_string(tu_rc_, tu_msg_, &tu_len_);                     \
            fprintf(stderr, "%s:%d: %s failed: %s\n", __FILE__, __LINE__,    \
                    #call, tu_msg_);                                         \
            MPI_Abort(MPI_COMM_WORLD, 2);                                    \
        }                                                                    \
    } while (0)

/* Collective verdict: returns the process exit code (0 only if every rank passed). */
static inline int tu_finish(const char *name)
{
    int total = 0, rank;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Allreduce(&tu_errors, &total, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    if (0 == rank) {
        printf("%s: %s (%d errors)\n", name, total ? "FAILED" : "ok", total);
    }
    return total ? 1 : 0;
}

/* ---- Window flavors --------------------------------------------------------
 * Tests loop over flavors with tu_win_create(); displacements go through
 * tu_disp() so the same code works on dynamic windows (absolute addresses). */
enum { TU_CREATE, TU_ALLOCATE, TU_DYNAMIC, TU_NFLAVORS };
static const char *tu_flavor_names[] = { "create", "allocate", "dynamic", "shared" };
/* A fourth flavor for the tests that loop up to TU_NFLAVORS_ALL:
 * MPI_Win_allocate_shared.  tu_win_create leaves w->win MPI_WIN_NULL where
 * the osc component cannot make one (a stock component that only does the
 * other flavors): the test reports it as n/a.  Enabled where TU_FLAVORS
 * names "shared" or "allocate" (or is unset). */
enum { TU_ALLOC_SHARED = TU_NFLAVORS, TU_NFLAVORS_ALL };

typedef struct {
    MPI_Win win;
    void *base;          /* local window memory */
    MPI_Aint size;       /* bytes */
    int disp_unit;
    int flavor;
    MPI_Aint *remote;    /* dynamic: each rank's base address; NULL otherwise */
} tu_win_t;

/* Flavors to test: TU_FLAVORS env ("create,allocate,dynamic") or create+allocate. */
/* Is `name` an element of the comma-separated list (NULL: every name)? */
static inline int tu_in_list(const char *list, const char *name)
{
    size_t n = strlen(name);
    const char *p = list;
    if (NULL == list) return 1;
    while (p && *p) {
        if (0 == strncmp(p, name, n) && (',' == p[n] || '\0' == p[n])) return 1;
        p = strchr(p, ',');
        if (p) p++;
    }
    return 0;
}

/* Does the job span the simulated hosts of test/hosts.sh (run-tests.sh sets
 * TU_HOSTS)?  Shared windows over MPI_COMM_WORLD are then impossible: the
 * shared flavor is left out (shared_win and shared_query test it per node). */
static inline int tu_multi_node(void)
{
    const char *hosts = getenv("TU_HOSTS");
    return hosts && atoi(hosts) > 1;
}

static inline int tu_flavor_enabled(int flavor)
{
    const char *env = getenv("TU_FLAVORS");
    if (TU_ALLOC_SHARED == flavor && tu_multi_node()) return 0;
    if (TU_ALLOC_SHARED == flavor) return NULL == env || strstr(env, "shared") || strstr(env, "allocate");
    if (NULL == env) return flavor != TU_DYNAMIC;
    return NULL != strstr(env, tu_flavor_names[flavor]);
}

/* Tests of every flavor, the shared one included: all four unless TU_FLAVORS
 * narrows them. */
static inline int tu_flavor_or_all(int flavor)
{
    return NULL == getenv("TU_FLAVORS") ? 1 : tu_flavor_enabled(flavor);
}

static inline void tu_win_create(int flavor, MPI_Aint size, int disp_unit, MPI_Info info,
                                 MPI_Comm comm, tu_win_t *w)
{
    int nprocs;
    MPI_Comm_size(comm, &nprocs);
    memset(w, 0, sizeof(*w));
    w->size = size; w->disp_unit = disp_unit; w->flavor = flavor;
    switch (flavor) {
    case TU_CREATE:
        w->base = calloc(1, size ? size : 1);
        TU_MPI(MPI_Win_create(size ? w->base : NULL, size, disp_unit, info, comm, &w->win));
        break;
    case TU_ALLOCATE:
        TU_MPI(MPI_Win_allocate(size, disp_unit, info, comm, &w->base, &w->win));
        memset(w->base, 0, size);
        break;
    case TU_DYNAMIC: {
        MPI_Aint mine;
        w->base = calloc(1, size ? size : 1);
        TU_MPI(MPI_Win_create_dynamic(info, comm, &w->win));
        if (size) TU_MPI(MPI_Win_attach(w->win, w->base, size));
        MPI_Get_address(w->base, &mine);
        w->remote = malloc(nprocs * sizeof(MPI_Aint));
        MPI_Allgather(&mine, 1, MPI_AINT, w->remote, 1, MPI_AINT, comm);
        break;
    }
    case TU_ALLOC_SHARED: {
        MPI_Errhandler eh;
        int rc;
        MPI_Comm_get_errhandler(comm, &eh);
        MPI_Comm_set_errhandler(comm, MPI_ERRORS_RETURN);
        rc = MPI_Win_allocate_shared(size, disp_unit, info, comm, &w->base, &w->win);
        MPI_Comm_set_errhandler(comm, eh);
        MPI_Errhandler_free(&eh);
        if (MPI_SUCCESS != rc) {
            w->win = MPI_WIN_NULL;
            w->base = NULL;
            MPI_Barrier(comm);
            return;
        }
        memset(w->base, 0, size);
        break;
    }
    }
    MPI_Win_set_errhandler(w->win, MPI_ERRORS_RETURN);
    MPI_Barrier(comm);
}

/* A window MPIX_Win_dup_with_info or MPIX_Win_from_memhandle made (local,
 * over MPI_COMM_SELF inside libmpix_ucxx) is an MPI_Win like its parent's:
 * `flavor` (MPI_WIN_CREATE_FLAVOR), the unified model, the parent's group
 * and error handler, a Fortran handle of its own, no private info key. */
static inline void tu_check_local_window(MPI_Win w, MPI_Win parent, int flavor, const char *what)
{
    int *pf = NULL, *pm = NULL, f1 = 0, f2 = 0, cmp = MPI_UNEQUAL, nkeys = 0;
    MPI_Group gp, gw;
    MPI_Errhandler ep, ew;
    MPI_Info info;
    MPI_Fint fw = MPI_Win_c2f(w);
    char key[MPI_MAX_INFO_KEY + 1];

    MPI_Win_get_attr(w, MPI_WIN_CREATE_FLAVOR, &pf, &f1);
    TU_CHECK(f1 && *pf == flavor, "%s: MPI_WIN_CREATE_FLAVOR %d, expected %d", what,
             f1 ? *pf : -1, flavor);
    MPI_Win_get_attr(w, MPI_WIN_MODEL, &pm, &f2);
    TU_CHECK(f2 && *pm == MPI_WIN_UNIFIED, "%s: MPI_WIN_MODEL %d, expected MPI_WIN_UNIFIED", what,
             f2 ? *pm : -1);
    TU_MPI(MPI_Win_get_group(parent, &gp));
    TU_MPI(MPI_Win_get_group(w, &gw));
    MPI_Group_compare(gp, gw, &cmp);
    TU_CHECK(MPI_IDENT == cmp, "%s: group compares %d to the parent's", what, cmp);
    MPI_Group_free(&gp);
    MPI_Group_free(&gw);
    TU_MPI(MPI_Win_get_errhandler(parent, &ep));
    TU_MPI(MPI_Win_get_errhandler(w, &ew));
    TU_CHECK(ep == ew, "%s: the error handler is not the parent's", what);
    MPI_Errhandler_free(&ep);
    MPI_Errhandler_free(&ew);
    TU_CHECK(fw != MPI_Win_c2f(parent) && MPI_Win_f2c(fw) == w,
             "%s: Fortran handle %d (parent's %d) does not convert back", what, (int) fw,
             (int) MPI_Win_c2f(parent));
    TU_MPI(MPI_Win_get_info(w, &info));
    MPI_Info_get_nkeys(info, &nkeys);
    for (int i = 0; i < nkeys; i++) {
        MPI_Info_get_nthkey(info, i, key);
        TU_CHECK(0 != strncmp(key, "osc_ucxx", 8), "%s: MPI_Win_get_info reports %s", what, key);
    }
    MPI_Info_free(&info);
}

/* MPI_Init, then this rank, the rank count and the ring neighbours. */
static inline void tu_init_ring(int *argc, char ***argv, int *me, int *nprocs, int *next, int *prev)
{
    MPI_Init(argc, argv);
    MPI_Comm_rank(MPI_COMM_WORLD, me);
    MPI_Comm_size(MPI_COMM_WORLD, nprocs);
    *next = (*me + 1) % *nprocs;
    *prev = (*me + *nprocs - 1) % *nprocs;
}

/* perm: a permutation of [0, n) that scatters neighbours, i -> i * p mod n
 * with p coprime to n (offsets in shuffled order). */
static inline void tu_permutation(int *perm, int n)
{
    int p = 7919;
    while (1) {
        int a = p, b = n, t;
        while (b) { t = a % b; a = b; b = t; }
        if (1 == a) break;
        p += 2;
    }
    for (int i = 0; i < n; i++) perm[i] = (int) (((long) i * p) % n);
}

/* ---- Nodes ------------------------------------------------------------------
 * Jobs may span nodes (test/hosts.sh simulates them).  tu_node_comm: the
 * ranks of `comm` that share memory with this one (MPI_COMM_TYPE_SHARED);
 * *spans (if given): does `comm` span more than one node (on every rank)?
 * tu_on_my_node: is rank r of `comm` on this node? */
static inline MPI_Comm tu_node_comm(MPI_Comm comm, int *spans)
{
    MPI_Comm node;
    int n, nn, all = 0;
    MPI_Comm_split_type(comm, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node);
    MPI_Comm_size(comm, &n);
    MPI_Comm_size(node, &nn);
    MPI_Allreduce(&nn, &all, 1, MPI_INT, MPI_MIN, comm);
    if (spans) *spans = all < n;
    return node;
}

static inline int tu_on_my_node(MPI_Comm comm, MPI_Comm node, int r)
{
    MPI_Group g, gn;
    int tr = MPI_UNDEFINED;
    MPI_Comm_group(comm, &g);
    MPI_Comm_group(node, &gn);
    MPI_Group_translate_ranks(g, 1, &r, gn, &tr);
    MPI_Group_free(&g);
    MPI_Group_free(&gn);
    return MPI_UNDEFINED != tr;
}

/* Rank 0 and `peer`: `reps` 8-byte MPI ping-pongs after `warm` untimed
 * ones, each value checked; rank 0 returns the fastest round trip (s), the
 * others 1e9: the wire tests' unit of a round trip (wire_delay, lock_rtt,
 * at_rtt). */
static inline double tu_fastest_pingpong(int me, int peer, int reps, int warm)
{
    double best = 1e9;
    for (int i = 0; i < warm + reps; i++) {
        uint64_t v = ((uint64_t) peer << 32) | (uint64_t) i, got = 0;
        if (0 == me) {
            double t0 = MPI_Wtime();
            TU_MPI(MPI_Send(&v, 1, MPI_UINT64_T, peer, i, MPI_COMM_WORLD));
            TU_MPI(MPI_Recv(&got, 1, MPI_UINT64_T, peer, i, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
            double t = MPI_Wtime() - t0;
            if (i >= warm && t < best) best = t;
            TU_CHECK(got == v + 1, "ping-pong with rank %d: got %llx, expected %llx", peer,
                     (unsigned long long) got, (unsigned long long) (v + 1));
        } else if (me == peer) {
            TU_MPI(MPI_Recv(&got, 1, MPI_UINT64_T, 0, i, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
            got++;
            TU_MPI(MPI_Send(&got, 1, MPI_UINT64_T, 0, i, MPI_COMM_WORLD));
        }
    }
    return best;
}

/* The /proc/self/maps line of the one mapping that holds all of [lo, hi),
 * into line[len]; 0 if none does (the shared-memory tests look at where
 * osc/ucxx moved window pages). */
static inline int tu_mapping_line(uintptr_t lo, uintptr_t hi, char *line, int len)
{
    FILE *f = fopen("/proc/self/maps", "r");
    int found = 0;
    while (f && !found && fgets(line, len, f)) {
        unsigned long s, e;
        found = 2 == sscanf(line, "%lx-%lx", &s, &e) && s <= lo && hi <= e;
    }
    if (f) fclose(f);
    return found;
}

/* Bytes of [p, p + n) that are not `v`. */
static inline long tu_count_not(const void *p, size_t n, unsigned char v)
{
    const unsigned char *b = (const unsigned char *) p;
    long bad = 0;
    for (size_t i = 0; i < n; i++) bad += b[i] != v;
    return bad;
}

/* Target displacement for element `disp` (in disp units) at `rank`. */
static inline MPI_Aint tu_disp(const tu_win_t *w, int rank, MPI_Aint disp)
{
    if (TU_DYNAMIC == w->flavor) return w->remote[rank] + disp * w->disp_unit;
    return disp;
}

/* A PSCW epoch with every rank of `group` (all of w's): post, start, an
 * int64 put of *v into slot `slot` at every rank, complete, wait. */
static inline void tu_pscw_put_all(tu_win_t *w, MPI_Group group, const int64_t *v, int slot)
{
    int n;
    MPI_Group_size(group, &n);
    TU_MPI(MPI_Win_post(group, 0, w->win));
    TU_MPI(MPI_Win_start(group, 0, w->win));
    for (int t = 0; t < n; ++t) {
        TU_MPI(MPI_Put(v, 1, MPI_INT64_T, t, tu_disp(w, t, slot), 1, MPI_INT64_T, w->win));
    }
    TU_MPI(MPI_Win_complete(w->win));
    TU_MPI(MPI_Win_wait(w->win));
}

static inline void tu_win_free(tu_win_t *w)
{
    if (MPI_WIN_NULL == w->win) return;   /* a shared window that could not be made */
    if (TU_DYNAMIC == w->flavor && w->size) MPI_Win_detach(w->win, w->base);
    TU_MPI(MPI_Win_free(&w->win));
    if (TU_ALLOCATE != w->flavor && TU_ALLOC_SHARED != w->flavor) free(w->base);
    free(w->remote);
}

/* ---- Helpers for the dynamic-window and memory-handle tests (dyn_*, mh_*) --- */

/* Integer from the environment (test sizes); dflt when unset or empty. */
static inline int tu_env_int(const char *name, int dflt)
{
    const char *v = getenv(name);
    return (v && *v) ? atoi(v) : dflt;
}

/* Integer option: "-i 100" (or "-i100"); dflt when absent. */
static inline long tu_opt_long(int argc, char **argv, const char *opt, long dflt)
{
    size_t len = strlen(opt);
    for (int i = 1; i < argc; i++) {
        if (0 == strcmp(argv[i], opt) && i + 1 < argc) return strtol(argv[i + 1], NULL, 0);
        if (0 == strncmp(argv[i], opt, len) && argv[i][len]) return strtol(argv[i] + len, NULL, 0);
    }
    return dflt;
}

/* True if the flag appears among the arguments. */
static inline int tu_opt_flag(int argc, char **argv, const char *flag)
{
    for (int i = 1; i < argc; i++) if (0 == strcmp(argv[i], flag)) return 1;
    return 0;
}

/* True when peers are reached over TCP: UCX restricted to TCP (UCX_TLS names
 * tcp but no shared-memory transport), or a job across the simulated hosts of
 * hosts.sh (run-tests.sh sets TU_HOSTS).  Every RMA operation is emulated
 * there, so tests scale down. */
static inline int tu_tcp_only(void)   /* UCX has no shared memory even on a node */
{
    const char *tls = getenv("UCX_TLS");
    return tls && strstr(tls, "tcp") && !strstr(tls, "sm") && !strstr(tls, "all");
}

static inline int tu_slow_transport(void)
{
    return tu_tcp_only() || tu_multi_node();
}

/* Descriptors this process has open (a limit lowered to it makes the next
 * open fail); -1 where /proc cannot tell. */
static inline int tu_open_fds(void)
{
    DIR *d = opendir("/proc/self/fd");
    int n = 0;
    if (NULL == d) return -1;
    while (readdir(d)) n++;
    closedir(d);
    return n - 3;   /* ".", "..", the directory's own descriptor */
}

/* Error class of a return code (MPI_SUCCESS stays MPI_SUCCESS). */
static inline int tu_err_class(int rc)
{
    int cls = rc;
    if (MPI_SUCCESS != rc) MPI_Error_class(rc, &cls);
    return cls;
}

static inline const char *tu_err_class_name(int cls)
{
    switch (cls) {
    case MPI_SUCCESS: return "MPI_SUCCESS";
    case MPI_ERR_RMA_SYNC: return "MPI_ERR_RMA_SYNC";
    case MPI_ERR_RMA_RANGE: return "MPI_ERR_RMA_RANGE";
    case MPI_ERR_RMA_ATTACH: return "MPI_ERR_RMA_ATTACH";
    case MPI_ERR_RMA_CONFLICT: return "MPI_ERR_RMA_CONFLICT";
    case MPI_ERR_RMA_SHARED: return "MPI_ERR_RMA_SHARED";
    case MPI_ERR_RANK: return "MPI_ERR_RANK";
    case MPI_ERR_DISP: return "MPI_ERR_DISP";
    case MPI_ERR_SIZE: return "MPI_ERR_SIZE";
    case MPI_ERR_ARG: return "MPI_ERR_ARG";
    case MPI_ERR_WIN: return "MPI_ERR_WIN";
    case MPI_ERR_OP: return "MPI_ERR_OP";
    case MPI_ERR_BASE: return "MPI_ERR_BASE";
    case MPI_ERR_OTHER: return "MPI_ERR_OTHER";
    case MPI_ERR_INTERN: return "MPI_ERR_INTERN";
    default: return "another class";
    }
}

/* ---- Helpers for the extension tests (ext_*, mpix/mpix_ucxx.h) ------------ */
#include <stdarg.h>

/* Value of info key `key` of window `win` into buf (len bytes); 1 if the key is set. */
static inline int tu_win_info_get(MPI_Win win, const char *key, char *buf, int len)
{
    MPI_Info info = MPI_INFO_NULL;
    int flag = 0;
    buf[0] = '\0';
    if (MPI_SUCCESS != MPI_Win_get_info(win, &info)) return 0;
    MPI_Info_get(info, (char *) key, len - 1, buf, &flag);
    MPI_Info_free(&info);
    if (!flag) buf[0] = '\0';
    return flag;
}

/* New MPI_Info from key/value string pairs, NULL-terminated:
 * tu_info_new("mpi_win_scope", "thread", NULL).  No pairs: an empty info. */
static inline MPI_Info tu_info_new(const char *key, ...)
{
    MPI_Info info;
    va_list ap;
    MPI_Info_create(&info);
    va_start(ap, key);
    while (key) {
        const char *value = va_arg(ap, const char *);
        MPI_Info_set(info, (char *) key, (char *) value);
        key = va_arg(ap, const char *);
    }
    va_end(ap);
    return info;
}

/* Change one of osc/ucxx's internal settings for this process ("name=value",
 * before MPI_Init): the component's test hook OSC_UCXX_TEST_TUNE, a list
 * of such pairs; other components ignore it. */
static inline void tu_tune(const char *setting)
{
    const char *old = getenv("OSC_UCXX_TEST_TUNE");
    char buf[512];
    snprintf(buf, sizeof(buf), "%s%s%s", old ? old : "", old && *old ? "," : "", setting);
    setenv("OSC_UCXX_TEST_TUNE", buf, 1);
}

/* Arguments every accumulate/active-target test takes.  "--no-direct":
 * make osc/ucxx use UCX RMA/AMO calls even where it could load/store peer
 * memory directly (osc/ucxx's internal setting direct=0 (tu_tune)); other components ignore it.
 * Call before MPI_Init. */
/* --mt: the test initializes with tu_init (MPI_THREAD_MULTIPLE then, so that
 * the component takes its multi-threaded paths even with one thread). */
static int tu_mt = 0;
static inline void tu_parse_args(int argc, char **argv)
{
    for (int i = 1; i < argc; i++) {
        if (0 == strcmp(argv[i], "--no-direct")) tu_tune("direct=0");
        else if (0 == strcmp(argv[i], "--mt")) tu_mt = 1;
        else if (0 == strcmp(argv[i], "--single-intrinsic")) continue;  /* (acc_ops reads it) */
        else fprintf(stderr, "ignoring unknown argument %s\n", argv[i]);
    }
}

/* MPI_Init, or MPI_Init_thread(MPI_THREAD_MULTIPLE) under --mt (tu_parse_args
 * first); a run under --mt that does not get the level fails. */
static inline void tu_init(int *argc, char ***argv)
{
    int provided;
    if (!tu_mt) {
        MPI_Init(argc, argv);
        return;
    }
    MPI_Init_thread(argc, argv, MPI_THREAD_MULTIPLE, &provided);
    if (provided < MPI_THREAD_MULTIPLE) {
        fprintf(stderr, "--mt: MPI_THREAD_MULTIPLE not provided (%d)\n", provided);
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
}

/* Fetched counter values from ranks 1..nprocs-1 (iters each, rank-major in
 * `all`) must be distinct values in [0, total): a lost or doubled atomic
 * update shows as a duplicate or a value out of range. */
static inline void tu_check_fetched_permutation(const int64_t *all, int nprocs, int iters,
                                                int64_t total)
{
    char *seen = calloc(total > 0 ? total : 1, 1);
    int dup = 0, out = 0;
    for (int r = 1; r < nprocs; r++)
        for (int it = 0; it < iters; it++) {
            int64_t v = all[(size_t) r * iters + it];
            if (v < 0 || v >= total) out++;
            else if (seen[v]++) dup++;
        }
    TU_CHECK(0 == dup && 0 == out, "fetch_and_op results: %d duplicates, %d out of range", dup, out);
    free(seen);
}


/* ---- Watchdog -------------------------------------------------------------
 * tu_watchdog(name, seconds): a hang becomes a failure (exit 3) after that
 * long, with tu_where (which the test may point at what it is doing) in the
 * message.  alarm(0) disarms it. */
#include <signal.h>
#include <unistd.h>

static const char *volatile tu_where = "";
static const char *tu_watch_name = "test";

static void tu_watchdog_fire(int sig)
{
    static const char msg[] = ": watchdog: no progress for too long, failing; at: ";
    (void) sig;
    (void) !write(2, tu_watch_name, strlen(tu_watch_name));
    (void) !write(2, msg, sizeof(msg) - 1);
    (void) !write(2, tu_where, strlen(tu_where));
    (void) !write(2, "\n", 1);
    _exit(3);
}

static inline void tu_watchdog(const char *name, unsigned seconds)
{
    tu_watch_name = name;
    signal(SIGALRM, tu_watchdog_fire);
    alarm(seconds);
}

/* ---- Active-message tests ----------------------------------------------------
 * (am_*, MPIX_Am of mpix/mpix_ucxx.h; kept in one block for easy merges)
 * tu_am_args(argc, argv), before MPI_Init: the flags every AM test accepts,
 * turned into MCA parameters through the environment:
 *   --no-origin-compute  osc_ucxx_am_origin_compute=0 (handlers run at the target)
 *   --no-sysbuf          osc_ucxx_am_sysbuf=0 (no internal buffers: user buffers only)
 *   --progress-thread    osc_ucxx_progress_thread=1, polling (the internal
 *                        setting progress_wait=0, tu_tune)
 *   --progress-wait      osc_ucxx_progress_thread=1 as it runs by default:
 *                        sleeping on the UCX worker's event fd
 * Other arguments are left to the test.
 * tu_am_epoch_open/close: one access epoch of a kind (TU_EP_*) to a set of
 * targets; fence is collective (opened by fence(0), closed by
 * fence(MPI_MODE_NOSUCCEED), so no epoch is open after it), PSCW also
 * exposes the window to `origins`. */
static inline void tu_am_args(int argc, char **argv)
{
    for (int i = 1; i < argc; i++) {
        if (0 == strcmp(argv[i], "--no-origin-compute")) {
            setenv("OMPI_MCA_osc_ucxx_am_origin_compute", "0", 1);
        } else if (0 == strcmp(argv[i], "--no-sysbuf")) {
            setenv("OMPI_MCA_osc_ucxx_am_sysbuf", "0", 1);
        } else if (0 == strcmp(argv[i], "--progress-thread")) {
            setenv("OMPI_MCA_osc_ucxx_progress_thread", "1", 1);
            tu_tune("progress_wait=0");
        } else if (0 == strcmp(argv[i], "--progress-wait")) {
            setenv("OMPI_MCA_osc_ucxx_progress_thread", "1", 1);
        }
    }
}

/* The start every AM test shares: its flags (tu_am_args), MPI_Init, rank and
 * size, errors returned on MPI_COMM_WORLD, and a watchdog of `seconds`
 * (--timeout S overrides). */
static inline void tu_am_start(int *argc, char ***argv, const char *name, unsigned seconds,
                               int *rank, int *nprocs)
{
    tu_am_args(*argc, *argv);
    MPI_Init(argc, argv);
    MPI_Comm_rank(MPI_COMM_WORLD, rank);
    MPI_Comm_size(MPI_COMM_WORLD, nprocs);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    tu_watchdog(name, (unsigned) tu_opt_long(*argc, *argv, "--timeout", seconds));
}

/* Checks an MPI/MPIX call made with MPI_ERRORS_RETURN: prints the class of
 * a failure and aborts (the program cannot go on sensibly after it). */
#define TU_AM(call)                                                          \
    do {                                                                     \
        int tu_rc_ = (call);                                                 \
        if (MPI_SUCCESS != tu_rc_) {                                         \
            char tu_msg_[MPI_MAX_ERROR_STRING];                              \
            int tu_len_, tu_rank_, tu_cls_ = tu_err_class(tu_rc_);           \
            MPI_Comm_rank(MPI_COMM_WORLD, &tu_rank_);                        \
            MPI_Error_string(tu_rc_, tu_msg_, &tu_len_);                     \
            fprintf(stderr, "[rank %d] %s:%d: %s failed: class %d (%s): %s (at: %s)\n", \
                    tu_rank_, __FILE__, __LINE__, #call, tu_cls_,            \
                    tu_err_class_name(tu_cls_), tu_msg_, tu_where);          \
            MPI_Abort(MPI_COMM_WORLD, 2);                                    \
        }                                                                    \
    } while (0)

enum { TU_EP_LOCK_EXCL, TU_EP_LOCK_SHARED, TU_EP_LOCK_ALL, TU_EP_FENCE, TU_EP_PSCW, TU_NEPOCHS };
__attribute__((unused)) static const char *const tu_epoch_names[] = { "lock(exclusive)", "lock(shared)", "lock_all", "fence",
                                        "PSCW" };

static inline MPI_Group tu_am_group(const int *ranks, int n)
{
    MPI_Group world, g;
    MPI_Comm_group(MPI_COMM_WORLD, &world);
    MPI_Group_incl(world, n, (int *) ranks, &g);
    MPI_Group_free(&world);
    return g;
}

/* Opens an access epoch of `kind` to targets[0..nt) (ascending, distinct:
 * locks are taken in rank order); PSCW also posts to origins[0..no).
 * Fence is collective over the window.  Returns an MPI error code. */
static inline int tu_am_epoch_open(int kind, MPI_Win win, const int *targets, int nt,
                                   const int *origins, int no)
{
    int rc = MPI_SUCCESS;
    switch (kind) {
    case TU_EP_LOCK_EXCL:
    case TU_EP_LOCK_SHARED:
        for (int i = 0; i < nt && MPI_SUCCESS == rc; i++) {
            rc = MPI_Win_lock(TU_EP_LOCK_EXCL == kind ? MPI_LOCK_EXCLUSIVE : MPI_LOCK_SHARED,
                              targets[i], 0, win);
        }
        break;
    case TU_EP_LOCK_ALL: rc = MPI_Win_lock_all(0, win); break;
    case TU_EP_FENCE: rc = MPI_Win_fence(0, win); break;
    case TU_EP_PSCW:
        if (no > 0) {
            MPI_Group g = tu_am_group(origins, no);
            rc = MPI_Win_post(g, 0, win);
            MPI_Group_free(&g);
        }
        if (nt > 0 && MPI_SUCCESS == rc) {
            MPI_Group g = tu_am_group(targets, nt);
            rc = MPI_Win_start(g, 0, win);
            MPI_Group_free(&g);
        }
        break;
    }
    return rc;
}

/* Closes what tu_am_epoch_open opened (same arguments); the first error
 * code is returned, every synchronization call is still made. */
static inline int tu_am_epoch_close(int kind, MPI_Win win, const int *targets, int nt,
                                    const int *origins, int no)
{
    int rc = MPI_SUCCESS, r;
    (void) origins;
    switch (kind) {
    case TU_EP_LOCK_EXCL:
    case TU_EP_LOCK_SHARED:
        for (int i = nt - 1; i >= 0; i--) {
            r = MPI_Win_unlock(targets[i], win);
            if (MPI_SUCCESS == rc) rc = r;
        }
        break;
    case TU_EP_LOCK_ALL: rc = MPI_Win_unlock_all(win); break;
    case TU_EP_FENCE: rc = MPI_Win_fence(MPI_MODE_NOSUCCEED, win); break;
    case TU_EP_PSCW:
        if (nt > 0) rc = MPI_Win_complete(win);
        if (no > 0) {
            r = MPI_Win_wait(win);
            if (MPI_SUCCESS == rc) rc = r;
        }
        break;
    }
    return rc;
}

#ifdef MPIX_UCXX_H   /* include mpix_ucxx.h before testutil.h for these */
/* Makes and registers an AM op at `index` (collective over the window). */
static inline MPIX_Am_op tu_am_op(MPIX_Am_user_function *fn, void *extra, int index, MPI_Win win)
{
    MPIX_Am_op op = MPIX_AM_OP_NULL;
    TU_AM(MPIX_Am_op_create(fn, extra, &op));
    TU_AM(MPIX_Am_win_op_register(op, index, win));
    return op;
}

/* Deregisters (collective) and frees an op made by tu_am_op. */
static inline void tu_am_op_done(MPIX_Am_op *op, MPI_Win win)
{
    TU_AM(MPIX_Am_win_op_deregister(*op, win));
    TU_AM(MPIX_Am_op_free(op));
}

/* A user buffer of `bytes` attached to the window (S21: a portable target
 * attaches at least the largest seg_need it receives); detach with
 * MPIX_Am_win_buffer_detach and free(), or let MPI_Win_free detach it. */
static inline void *tu_am_attach(MPI_Win win, size_t bytes)
{
    void *buf = malloc(bytes);
    if (NULL == buf) { fprintf(stderr, "tu_am_attach: out of memory\n"); MPI_Abort(MPI_COMM_WORLD, 2); }
    TU_AM(MPIX_Am_win_buffer_attach(buf, (MPI_Aint) bytes, win));
    return buf;
}
#endif

/* seg_need of S7 for contiguous byte layouts: a64(in) + a64(out). */
static inline size_t tu_am_a64(size_t n) { return (n + 63) & ~(size_t) 63; }

#endif
