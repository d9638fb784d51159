/*
 * am_kernels.c - osc/ucxx active messages (MPIX_Am) against standard MPI:
 * design section 5, B9 (the headline), B1 (latency vs pipeline unit) and B4
 * (ordering).
 *
 *   mpirun -np N am_kernels [-o b9|unit|order] [-k hist,absval,search]
 *                           [-V am,lock,acc,p2p] [-A default|msg|thread|poll]
 *                           [-c shm|tcp] [-n SEGS] ...        (am_kernels -h)
 *
 * Kernels (one "AM" = S segments sent to one target; S = -n, default 100):
 *   hist    1-int segments binned into the target's histogram (B ints):
 *           hist[v]++; no output
 *   absval  100 ints in and out per segment, out = |in| + |persistent[seg*100+j]|
 *           on a slice of S*100 ints of the target's array (read only)
 *   search  20-byte query per segment against the target's database of D
 *           sorted 40-byte records {key[20], value[20]} (binary search);
 *           20-byte answer: the value, or zeros when the key is absent
 *
 * B9 variants (every rank is origin and target; rank r sends AM i to
 * (r + 1 + i mod (np-1)) mod np; each AM is complete before the next):
 *   am    MPIX_Am + MPI_Win_flush inside one MPI_Win_lock_all epoch
 *         (osc/ucxx only: n/a elsewhere).  -A picks how osc/ucxx runs it:
 *         default (origin computation where the target memory is mapped,
 *         i.e. on shared memory), msg (osc_ucxx_am_origin_compute=0: the
 *         message path), thread / poll (message path plus the progress
 *         thread in wait / poll mode).  The column is am_, amm_, amt_, amp_.
 *   lock  MPI_Win_lock(EXCLUSIVE) + MPI_Get of the persistent slice + flush +
 *         local compute (+ MPI_Put back for hist) + MPI_Win_unlock
 *   acc   inside MPI_Win_lock_all: hist = MPI_Accumulate(MPI_SUM) of the
 *         per-bin counts with an MPI_Type_create_indexed_block target type
 *         (made per AM), absval / search = MPI_Get_accumulate(MPI_NO_OP) of
 *         the slice / database + local compute; MPI_Win_flush
 *   p2p   two-sided request/reply: MPI_Isend of the request, MPI_Irecv of
 *         the reply, and while waiting (MPI_Waitany) serve incoming requests
 *         on the local memory (the SWAP / Kiki pattern); at the end serve
 *         until an MPI_Ibarrier completes
 * Time per AM = wall time of a round (barrier to barrier, every rank doing K
 * AMs) / K, median over the rounds; per segment = that / S.  Bytes per AM =
 * payload the variant moves (AM: input + output segments; lock: the slice
 * twice for hist, once otherwise; acc: counts / the fetched slice; p2p:
 * request + reply).  Every variant's results are checked once (a first,
 * untimed pass): a wrong answer prints "# note: WRONG RESULT ..." and makes
 * the program exit 3 after printing its table.
 *
 * B1 (-o unit, 2 ranks): rank 0 sends one AM of S (100) search / absval
 * segments to rank 1 and flushes; median latency per am_pipeline_unit
 * (MPI_Win_set_info; -u list, "auto" included) and the bare handler time of
 * the S segments (row "handler").
 *
 * B4 (-o order, 2 ranks): rank 0 sends P pairs of a large absval AM
 * (-L segments: streams through the attached user buffer) and a small one
 * (1 segment: fits the internal buffer) to rank 1 and flushes once; time
 * per pair with am_ordering=none and with the default (sameop,diffop,sameam).
 */
#include "bench_common.h"

#include <getopt.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifdef BENCH_HAVE_MPIX_UCXX
#include <mpix_ucxx.h>
#endif

/* ---- kernels ------------------------------------------------------------- */

enum { K_HIST, K_ABSVAL, K_SEARCH, K_COUNT };
static const char *kname[K_COUNT] = { "hist", "absval", "search" };
enum { V_AM, V_LOCK, V_ACC, V_P2P, V_COUNT };
static const char *vname[V_COUNT] = { "am", "lock", "acc", "p2p" };

#define ABS_N 100          /* ints per absval segment */
#define KEY_LEN 20         /* search query / answer bytes */
#define REC_LEN 40         /* database record: key + value */
#define NSET 4             /* precomputed input sets, used round robin */
#define TAG_REQ 4711
#define TAG_REP 4712

typedef int kernel_fn(const void *input_addr, int input_segment_count,
                      MPI_Datatype input_segment_datatype,
                      void *persistent_addr, int persistent_count,
                      MPI_Datatype persistent_datatype,
                      void *output_addr, int output_segment_count,
                      MPI_Datatype output_segment_datatype,
                      int num_segments, int segment_offset, void *extra_state);

/* hist: persistent = B ints, input 1 int per segment */
static int hist_fn(const void *in, int n, MPI_Datatype idt, void *p, int pc,
                   MPI_Datatype pdt, void *out, int m, MPI_Datatype odt, int nseg, int off,
                   void *extra)
{
    const int *v = in;
    int *h = p;
    (void) idt; (void) pdt; (void) out; (void) m; (void) odt; (void) off; (void) extra;
    for (int k = 0; k < nseg; k++) {
        int b = v[(size_t) k * n];
        if (b < 0 || b >= pc) return MPI_ERR_ARG;
        h[b]++;
    }
    return MPI_SUCCESS;
}

/* absval: persistent = S*100 ints (the AM's slice), segment k of the
 * invocation is segment off+k of the AM */
static int absval_fn(const void *in, int n, MPI_Datatype idt, void *p, int pc,
                     MPI_Datatype pdt, void *out, int m, MPI_Datatype odt, int nseg, int off,
                     void *extra)
{
    const int *v = in, *pp = (const int *) p + (size_t) off * n;
    int *o = out;
    (void) idt; (void) pdt; (void) odt; (void) extra;
    if ((size_t) (off + nseg) * n > (size_t) pc || m < n) return MPI_ERR_ARG;
    for (int k = 0; k < nseg; k++) {
        for (int j = 0; j < n; j++) {
            int a = v[(size_t) k * n + j], b = pp[(size_t) k * n + j];
            o[(size_t) k * m + j] = (a < 0 ? -a : a) + (b < 0 ? -b : b);
        }
    }
    return MPI_SUCCESS;
}

/* search: persistent = D*40 bytes, sorted by key */
static int search_fn(const void *in, int n, MPI_Datatype idt, void *p, int pc,
                     MPI_Datatype pdt, void *out, int m, MPI_Datatype odt, int nseg, int off,
                     void *extra)
{
    const char *q = in, *db = p;
    char *o = out;
    int nrec = pc / REC_LEN;
    (void) idt; (void) pdt; (void) odt; (void) off; (void) extra;
    if (n < KEY_LEN || m < KEY_LEN) return MPI_ERR_ARG;
    for (int k = 0; k < nseg; k++) {
        const char *key = q + (size_t) k * n;
        char *ans = o + (size_t) k * m;
        int lo = 0, hi = nrec, found = -1;
        while (lo < hi) {
            int mid = lo + (hi - lo) / 2;
            int c = memcmp(key, db + (size_t) mid * REC_LEN, KEY_LEN);
            if (c == 0) { found = mid; break; }
            if (c < 0) hi = mid; else lo = mid + 1;
        }
        if (found >= 0) memcpy(ans, db + (size_t) found * REC_LEN + KEY_LEN, KEY_LEN);
        else memset(ans, 0, KEY_LEN);
    }
    return MPI_SUCCESS;
}

static kernel_fn *kfn[K_COUNT] = { hist_fn, absval_fn, search_fn };

/* ---- deterministic data -------------------------------------------------- */

static uint64_t mix(uint64_t x)
{
    x += 0x9e3779b97f4a7c15ull;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
    return x ^ (x >> 31);
}

static uint64_t h3(uint64_t a, uint64_t b, uint64_t c)
{
    return mix(a * 1000003ull ^ mix(b * 7919ull ^ mix(c)));
}

static int pval(int t, size_t idx)       /* absval persistent value */
{
    return (int) (h3(1, (uint64_t) t, idx) % 2001) - 1000;
}

static void make_key(char *k, long v)
{
    char tmp[32];
    memset(k, '.', KEY_LEN);
    int len = snprintf(tmp, sizeof(tmp), "K%010ld", v);
    memcpy(k, tmp, (size_t) len);
}

static void make_value(char *val, long r, int t)
{
    char tmp[32];
    memset(val, '.', KEY_LEN);
    int len = snprintf(tmp, sizeof(tmp), "V%010ld-T%04d", r, t);
    memcpy(val, tmp, (size_t) len);
}

/* ---- options, layout ----------------------------------------------------- */

typedef struct {
    char what[16];            /* -o b9 | unit | order */
    int kernels[K_COUNT];     /* -k */
    int variants[V_COUNT];    /* -V */
    char amode[16];           /* -A default | msg | thread | poll */
    char tls[8];              /* -c shm | tcp */
    int S;                    /* -n segments per AM */
    int B;                    /* -B histogram bins */
    int D;                    /* -D database records */
    int rounds;               /* -r timed rounds */
    int maxk;                 /* -i max AMs per rank per round */
    int check;                /* -x AMs per rank in the checked warm-up pass (min) */
    double budget;            /* -T seconds per variant (all rounds) */
    long ubuf;                /* -b user buffer bytes attached per rank (AM) */
    char units[128];          /* -u pipeline units (unit mode) */
    int L;                    /* -L segments of the large AM (order mode) */
    int pairs;                /* -P pairs per epoch (order mode) */
    int verbose;
} opts_t;

typedef struct {
    size_t off_hist, off_abs, off_db, size;
    size_t absn;              /* ints of the absval array */
    int nsl;                  /* absval slices */
} layout_t;

static opts_t O;
static layout_t L;
static int rank, np;
static int wrong;             /* results found wrong (exit 3 at the end) */
static int cur_k, cur_v;      /* B9: the kernel and variant being checked */
static int wrongkv[K_COUNT][V_COUNT];
static bench_win_t W;

static const char *am_prefix(void)
{
    if (!strcmp(O.amode, "msg")) return "amm";
    if (!strcmp(O.amode, "thread")) return "amt";
    if (!strcmp(O.amode, "poll")) return "amp";
    return "am";
}

static void usage(const char *prog)
{
    printf("usage: mpirun -np N %s [options]\n"
           "  -o WHAT     b9 (default): kernels x variants; unit: B1 latency vs\n"
           "              am_pipeline_unit (2 ranks); order: B4 large/small AMs (2 ranks)\n"
           "  -k LIST     kernels: hist,absval,search (default all)\n"
           "  -V LIST     variants: am,lock,acc,p2p (default all)\n"
           "  -A MODE     osc/ucxx AM mode: default (origin computation on a node), msg\n"
           "              (osc_ucxx_am_origin_compute=0), thread / poll (msg + progress\n"
           "              thread, wait / poll mode); set before MPI_Init\n"
           "  -c shm|tcp  tcp: UCX_TLS=tcp,self and btl self,tcp (set before MPI_Init)\n"
           "  -n S        segments per AM (default 100)\n"
           "  -B BINS     histogram bins (default 1024)\n"
           "  -D RECS     search database records (default 1024)\n"
           "  -r R        timed rounds per variant (default 3; median)\n"
           "  -i K        at most K AMs per rank per round (default 2000)\n"
           "  -x N        at least N AMs per rank in the checked warm-up (default 4)\n"
           "  -T SECONDS  time budget per variant and kernel (default 0.5)\n"
           "  -b BYTES    user buffer attached per rank for AMs (default 262144; 0 none)\n"
           "  -u LIST     unit mode: pipeline units (default 1,2,5,10,20,25,40,50,100,auto)\n"
           "  -L SEGS     order mode: segments of the large AM (default 1000)\n"
           "  -P PAIRS    order mode: large/small pairs per flush (default 8)\n"
           "  -v          verbose\n", prog);
}

static int parse_list(const char *s, const char **names, int n, int *out)
{
    char *copy = strdup(s), *tok, *save = NULL;
    int ok = 1;
    for (int i = 0; i < n; i++) out[i] = 0;
    for (tok = strtok_r(copy, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
        int f = 0;
        for (int i = 0; i < n; i++) {
            if (!strcmp(tok, names[i])) { out[i] = 1; f = 1; }
        }
        if (!f) ok = 0;
    }
    free(copy);
    return ok;
}

/* Before MPI_Init: options, and the environment they imply. */
static int parse_opts(int argc, char **argv)
{
    int c;
    memset(&O, 0, sizeof(O));
    strcpy(O.what, "b9");
    for (int i = 0; i < K_COUNT; i++) O.kernels[i] = 1;
    for (int i = 0; i < V_COUNT; i++) O.variants[i] = 1;
    strcpy(O.amode, "default");
    strcpy(O.tls, "shm");
    O.S = 100; O.B = 1024; O.D = 1024; O.rounds = 3; O.maxk = 2000; O.check = 4;
    O.budget = 0.5; O.ubuf = 262144; O.L = 1000; O.pairs = 8;
    strcpy(O.units, "1,2,5,10,20,25,40,50,100,auto");
    while (-1 != (c = getopt(argc, argv, "o:k:V:A:c:n:B:D:r:i:x:T:b:u:L:P:vh"))) {
        switch (c) {
        case 'o': snprintf(O.what, sizeof(O.what), "%s", optarg); break;
        case 'k': if (!parse_list(optarg, kname, K_COUNT, O.kernels)) return 2; break;
        case 'V': if (!parse_list(optarg, vname, V_COUNT, O.variants)) return 2; break;
        case 'A': snprintf(O.amode, sizeof(O.amode), "%s", optarg); break;
        case 'c': snprintf(O.tls, sizeof(O.tls), "%s", optarg); break;
        case 'n': O.S = atoi(optarg); break;
        case 'B': O.B = atoi(optarg); break;
        case 'D': O.D = atoi(optarg); break;
        case 'r': O.rounds = atoi(optarg); break;
        case 'i': O.maxk = atoi(optarg); break;
        case 'x': O.check = atoi(optarg); break;
        case 'T': O.budget = atof(optarg); break;
        case 'b': O.ubuf = atol(optarg); break;
        case 'u': snprintf(O.units, sizeof(O.units), "%s", optarg); break;
        case 'L': O.L = atoi(optarg); break;
        case 'P': O.pairs = atoi(optarg); break;
        case 'v': O.verbose = 1; break;
        case 'h': return 1;
        default: return 2;
        }
    }
    if (optind != argc || O.S < 1 || O.B < 1 || O.D < 1 || O.rounds < 1 || O.maxk < 1 ||
        O.check < 1 || O.budget < 0 || O.ubuf < 0 || O.L < 1 || O.pairs < 1) return 2;
    if (strcmp(O.what, "b9") && strcmp(O.what, "unit") && strcmp(O.what, "order")) return 2;
    if (strcmp(O.amode, "default") && strcmp(O.amode, "msg") && strcmp(O.amode, "thread") &&
        strcmp(O.amode, "poll")) return 2;
    if (strcmp(O.tls, "shm") && strcmp(O.tls, "tcp")) return 2;
    if (strcmp(O.amode, "default")) {
        setenv("OMPI_MCA_osc_ucxx_am_origin_compute", "0", 1);
    }
    if (!strcmp(O.amode, "thread") || !strcmp(O.amode, "poll")) {
        setenv("OMPI_MCA_osc_ucxx_progress_thread", "1", 1);
        if (!strcmp(O.amode, "poll")) {   /* (osc/ucxx's internal setting: the thread polls) */
            const char *old = getenv("OSC_UCXX_TEST_TUNE");
            char tune[512];
            snprintf(tune, sizeof(tune), "%s%sprogress_wait=0", old ? old : "",
                     old && *old ? "," : "");
            setenv("OSC_UCXX_TEST_TUNE", tune, 1);
        }
    }
    if (!strcmp(O.tls, "tcp")) {
        setenv("UCX_TLS", "tcp,self", 1);
        setenv("OMPI_MCA_btl", "self,tcp", 1);
    }
    return 0;
}

/* ---- checking ------------------------------------------------------------ */

static void report_wrong(const char *variant, const char *kernel, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static void report_wrong(const char *variant, const char *kernel, const char *fmt, ...)
{
    char msg[256];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    fprintf(stderr, "rank %d: WRONG RESULT: %s %s: %s\n", rank, variant, kernel, msg);
    wrong++;
    wrongkv[cur_k][cur_v]++;
}

/* ---- the workload --------------------------------------------------------- */

typedef struct {
    int k;                    /* kernel */
    int N, M;                 /* elements per segment in / out (MPI_INT or MPI_CHAR) */
    MPI_Datatype dt;          /* element type of input, output, persistent */
    size_t esz;
    void *in[NSET];           /* NSET input sets of S segments */
    void *out;                /* output of one AM */
    void *exp;                /* expected output (check pass) */
    void *slice;              /* lock/acc: the fetched persistent slice */
    int *cnt, *uidx, *uval;   /* hist acc: per-bin counts, unique bins, values */
} work_t;

static size_t in_bytes(const work_t *w) { return (size_t) O.S * w->N * w->esz; }
static size_t out_bytes(const work_t *w) { return (size_t) O.S * w->M * w->esz; }

/* persistent region of AM i at target t: byte offset in the window, count */
static size_t pers_off(const work_t *w, long i)
{
    switch (w->k) {
    case K_HIST: return L.off_hist;
    case K_ABSVAL: return L.off_abs + (size_t) (i % L.nsl) * O.S * ABS_N * sizeof(int);
    default: return L.off_db;
    }
}

static int pers_count(const work_t *w)
{
    switch (w->k) {
    case K_HIST: return O.B;
    case K_ABSVAL: return O.S * ABS_N;
    default: return O.D * REC_LEN;
    }
}

static size_t pers_bytes(const work_t *w)
{
    return (size_t) pers_count(w) * w->esz;
}

static int target_of(long i)
{
    return (rank + 1 + (int) (i % (np - 1))) % np;
}

static void work_init(work_t *w, int k)
{
    memset(w, 0, sizeof(*w));
    w->k = k;
    switch (k) {
    case K_HIST: w->N = 1; w->M = 0; w->dt = MPI_INT; w->esz = sizeof(int); break;
    case K_ABSVAL: w->N = w->M = ABS_N; w->dt = MPI_INT; w->esz = sizeof(int); break;
    default: w->N = w->M = KEY_LEN; w->dt = MPI_CHAR; w->esz = 1; break;
    }
    for (int s = 0; s < NSET; s++) {
        w->in[s] = bench_alloc(in_bytes(w));
        for (int seg = 0; seg < O.S; seg++) {
            uint64_t hsh = h3((uint64_t) rank, (uint64_t) s, (uint64_t) seg);
            if (k == K_HIST) {
                ((int *) w->in[s])[seg] = (int) (hsh % (uint64_t) O.B);
            } else if (k == K_ABSVAL) {
                for (int j = 0; j < ABS_N; j++) {
                    ((int *) w->in[s])[seg * ABS_N + j] =
                        (int) (h3(hsh, (uint64_t) j, 2) % 2001) - 1000;
                }
            } else {
                make_key((char *) w->in[s] + (size_t) seg * KEY_LEN,
                         (long) (hsh % (uint64_t) (2 * O.D)));   /* even: a hit */
            }
        }
    }
    w->out = bench_alloc(out_bytes(w) + 1);
    w->exp = bench_alloc(out_bytes(w) + 1);
    w->slice = bench_alloc(pers_bytes(w));
    if (k == K_HIST) {
        w->cnt = calloc((size_t) O.B, sizeof(int));
        w->uidx = calloc((size_t) O.S, sizeof(int));
        w->uval = calloc((size_t) O.S, sizeof(int));
    }
}

static void work_free(work_t *w)
{
    for (int s = 0; s < NSET; s++) free(w->in[s]);
    free(w->out); free(w->exp); free(w->slice);
    free(w->cnt); free(w->uidx); free(w->uval);
}

/* Fill this rank's window memory (under an exclusive self lock). */
static void fill_window(void)
{
    char *base = W.base;
    MPI_Win_lock(MPI_LOCK_EXCLUSIVE, rank, 0, bench_lock_win(&W));
    memset(base + L.off_hist, 0, (size_t) O.B * sizeof(int));
    int *a = (int *) (base + L.off_abs);
    for (size_t i = 0; i < L.absn; i++) a[i] = pval(rank, i);
    for (int r = 0; r < O.D; r++) {
        make_key(base + L.off_db + (size_t) r * REC_LEN, 2L * r);
        make_value(base + L.off_db + (size_t) r * REC_LEN + KEY_LEN, r, rank);
    }
    MPI_Win_unlock(rank, bench_lock_win(&W));
}

static void zero_hist(void)
{
    MPI_Barrier(MPI_COMM_WORLD);
    MPI_Win_lock(MPI_LOCK_EXCLUSIVE, rank, 0, bench_lock_win(&W));
    memset(W.base + L.off_hist, 0, (size_t) O.B * sizeof(int));
    MPI_Win_unlock(rank, bench_lock_win(&W));
    MPI_Barrier(MPI_COMM_WORLD);
}

/* Expected output of AM i (input set i % NSET) at target t. */
static void expected(const work_t *w, long i, int t)
{
    const void *in = w->in[i % NSET];
    if (w->k == K_ABSVAL) {
        size_t base = (size_t) (i % L.nsl) * O.S * ABS_N;
        int *e = w->exp;
        const int *v = in;
        for (size_t x = 0; x < (size_t) O.S * ABS_N; x++) {
            int a = v[x], b = pval(t, base + x);
            e[x] = (a < 0 ? -a : a) + (b < 0 ? -b : b);
        }
    } else if (w->k == K_SEARCH) {
        char *e = w->exp;
        for (int seg = 0; seg < O.S; seg++) {
            long q = strtol((const char *) in + (size_t) seg * KEY_LEN + 1, NULL, 10);
            if (q % 2 == 0 && q / 2 < O.D) make_value(e + (size_t) seg * KEY_LEN, q / 2, t);
            else memset(e + (size_t) seg * KEY_LEN, 0, KEY_LEN);
        }
    }
}

static void check_output(const work_t *w, const char *variant, long i, int t)
{
    if (w->k == K_HIST) return;
    expected(w, i, t);
    if (memcmp(w->out, w->exp, out_bytes(w))) {
        size_t at = 0;
        while (((char *) w->out)[at] == ((char *) w->exp)[at]) at++;
        report_wrong(variant, kname[w->k], "AM %ld to rank %d: output differs at byte %zu "
                     "of %zu", i, t, at, out_bytes(w));
    }
}

/* hist: every origin counts what it sent to each target in the check pass;
 * the sums must be the targets' histograms. */
static void check_hist(const work_t *w, const char *variant, long nam)
{
    int *mine = calloc((size_t) np * O.B, sizeof(int)), *exp = calloc((size_t) O.B,
                                                                         sizeof(int));
    for (long i = 0; i < nam; i++) {
        const int *v = w->in[i % NSET];
        int t = target_of(i);
        for (int s = 0; s < O.S; s++) mine[(size_t) t * O.B + v[s]]++;
    }
    MPI_Reduce_scatter_block(mine, exp, O.B, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    MPI_Win_lock(MPI_LOCK_EXCLUSIVE, rank, 0, bench_lock_win(&W));
    const int *h = (const int *) (W.base + L.off_hist);
    for (int b = 0; b < O.B; b++) {
        if (h[b] != exp[b]) {
            report_wrong(variant, "hist", "bin %d is %d, expected %d (%ld AMs of %d "
                         "segments per rank)", b, h[b], exp[b], nam, O.S);
            break;
        }
    }
    MPI_Win_unlock(rank, bench_lock_win(&W));
    free(mine);
    free(exp);
}

/* ---- AMK_MOCK: a stand-in MPIX_Am for developing this program -----------------
 * Compile with -DAMK_MOCK to run the AM code paths before osc/ucxx has
 * active messages: the "AM" is get + handler + put inside the caller's epoch
 * (no atomicity: right only while each target has one origin, e.g. 2 ranks). */
#if defined(AMK_MOCK) && defined(BENCH_HAVE_MPIX_UCXX)
struct mpix_am_op_s { kernel_fn *fn; };
static int mock_op_create(MPIX_Am_user_function *fn, void *x, MPIX_Am_op *op)
{
    (void) x;
    *op = malloc(sizeof(**op));
    (*op)->fn = fn;
    return MPI_SUCCESS;
}
static int mock_op_free(MPIX_Am_op *op) { free(*op); *op = NULL; return MPI_SUCCESS; }
static int mock_reg(MPIX_Am_op op, int i, MPI_Win w) { (void) op; (void) i; (void) w; return 0; }
static int mock_dereg(MPIX_Am_op op, MPI_Win w) { (void) op; (void) w; return 0; }
static int mock_attach(void *b, MPI_Aint n, MPI_Win w) { (void) b; (void) n; (void) w; return 0; }
static int mock_am(const void *in, int ci, MPI_Datatype dti, void *out, int co, MPI_Datatype dto,
                   int nseg, int t, MPI_Datatype dtit, MPI_Aint disp, int pc, MPI_Datatype dtp,
                   MPI_Datatype dtot, MPIX_Am_op op, MPI_Win win)
{
    int sz;
    (void) dtit; (void) dtot;
    MPI_Type_size(dtp, &sz);
    void *buf = malloc((size_t) pc * sz);
    MPI_Get(buf, pc, dtp, t, disp, pc, dtp, win);
    MPI_Win_flush(t, win);
    int rc = op->fn(in, ci, dti, buf, pc, dtp, out, co, dto, nseg, 0, NULL);
    MPI_Put(buf, pc, dtp, t, disp, pc, dtp, win);
    MPI_Win_flush(t, win);
    free(buf);
    return rc;
}
#define MPIX_Am_op_create mock_op_create
#define MPIX_Am_op_free mock_op_free
#define MPIX_Am_win_op_register mock_reg
#define MPIX_Am_win_op_deregister mock_dereg
#define MPIX_Am_win_buffer_attach mock_attach
#define MPIX_Am mock_am
#endif

/* ---- variants: one AM ------------------------------------------------------ */

#ifdef BENCH_HAVE_MPIX_UCXX
static MPIX_Am_op am_op[K_COUNT];
#endif
static int am_ok;             /* MPIX_Am usable on this window */
static char am_why[256];

static void mpi_check(int rc, const char *what)
{
    if (rc != MPI_SUCCESS) {
        char msg[MPI_MAX_ERROR_STRING] = "";
        int len = 0, cls = 0;
        MPI_Error_class(rc, &cls);
        MPI_Error_string(rc, msg, &len);
        bench_die("%s failed: %s (class %d)", what, msg, cls);
    }
}

static void do_am(work_t *w, long i, int t)
{
#ifdef BENCH_HAVE_MPIX_UCXX
    int rc = MPIX_Am(w->in[i % NSET], w->N, w->dt, w->M ? w->out : NULL, w->M, w->dt, O.S, t,
                     w->dt, bench_disp(&W, t, pers_off(w, i)), pers_count(w), w->dt, w->dt,
                     am_op[w->k], W.win);
    mpi_check(rc, "MPIX_Am");
    mpi_check(MPI_Win_flush(t, W.win), "MPI_Win_flush after MPIX_Am");
#else
    (void) w; (void) i; (void) t;
#endif
}

static void do_lock(work_t *w, long i, int t)
{
    MPI_Aint disp = bench_disp(&W, t, pers_off(w, i));
    int cnt = pers_count(w);
    MPI_Win_lock(MPI_LOCK_EXCLUSIVE, t, 0, W.win);
    MPI_Get(w->slice, cnt, w->dt, t, disp, cnt, w->dt, W.win);
    MPI_Win_flush(t, W.win);
    kfn[w->k](w->in[i % NSET], w->N, w->dt, w->slice, cnt, w->dt, w->out, w->M, w->dt, O.S,
              0, NULL);
#ifdef AMK_BREAK
    if (w->k == K_HIST) ((int *) w->slice)[3]++; else ((char *) w->out)[5] ^= 1;
#endif
    if (w->k == K_HIST) MPI_Put(w->slice, cnt, w->dt, t, disp, cnt, w->dt, W.win);
    MPI_Win_unlock(t, W.win);
}

static long acc_bytes_sum, acc_bytes_n;    /* hist acc: counts moved */

static void do_acc(work_t *w, long i, int t)
{
    MPI_Aint disp = bench_disp(&W, t, pers_off(w, i));
    int cnt = pers_count(w);
    if (w->k == K_HIST) {
        const int *v = w->in[i % NSET];
        int nu = 0;
        MPI_Datatype dt;
        for (int s = 0; s < O.S; s++) {
            if (w->cnt[v[s]]++ == 0) w->uidx[nu++] = v[s];
        }
        for (int u = 0; u < nu; u++) {
            w->uval[u] = w->cnt[w->uidx[u]];
            w->cnt[w->uidx[u]] = 0;
        }
        MPI_Type_create_indexed_block(nu, 1, w->uidx, MPI_INT, &dt);
        MPI_Type_commit(&dt);
        MPI_Accumulate(w->uval, nu, MPI_INT, t, disp, 1, dt, MPI_SUM, W.win);
        MPI_Win_flush(t, W.win);
        MPI_Type_free(&dt);
        acc_bytes_sum += (long) nu * (long) sizeof(int);
        acc_bytes_n++;
    } else {
        /* the whole slice / database as ints (accumulates need one
         * predefined type; 40-byte records are 10 ints) */
        int nint = (int) (pers_bytes(w) / sizeof(int));
        MPI_Get_accumulate(NULL, 0, MPI_INT, w->slice, nint, MPI_INT, t, disp, nint, MPI_INT,
                           MPI_NO_OP, W.win);
        MPI_Win_flush(t, W.win);
        kfn[w->k](w->in[i % NSET], w->N, w->dt, w->slice, cnt, w->dt, w->out, w->M, w->dt,
                  O.S, 0, NULL);
    }
}

/* two-sided: request = {kernel, AM index} + input; reply = output (hist: empty) */
typedef struct {
    MPI_Request srv;          /* the posted request receive */
    char *rbuf, *reply, *sbuf;
    size_t rmax;
} p2p_t;

static p2p_t P2P;

static void p2p_post(void)
{
    MPI_Irecv(P2P.rbuf, (int) P2P.rmax, MPI_BYTE, MPI_ANY_SOURCE, TAG_REQ, MPI_COMM_WORLD,
              &P2P.srv);
}

static void p2p_serve(work_t *works, const MPI_Status *st)
{
    int hdr[2];
    memcpy(hdr, P2P.rbuf, sizeof(hdr));
    work_t *w = &works[hdr[0]];
    long i = hdr[1];
    char *pers = W.base + pers_off(w, i);
    kfn[w->k](P2P.rbuf + sizeof(hdr), w->N, w->dt, pers, pers_count(w), w->dt, P2P.reply,
              w->M, w->dt, O.S, 0, NULL);
    MPI_Send(P2P.reply, (int) out_bytes(w), MPI_BYTE, st->MPI_SOURCE, TAG_REP, MPI_COMM_WORLD);
    p2p_post();
}

static void do_p2p(work_t *works, work_t *w, long i, int t)
{
    MPI_Request rq[3];
    MPI_Status st;
    int hdr[2] = { w->k, (int) (i % (L.nsl * NSET)) }, idx, left = 2;
    memcpy(P2P.sbuf, hdr, sizeof(hdr));
    memcpy(P2P.sbuf + sizeof(hdr), w->in[i % NSET], in_bytes(w));
    MPI_Irecv(w->out, (int) out_bytes(w), MPI_BYTE, t, TAG_REP, MPI_COMM_WORLD, &rq[1]);
    MPI_Isend(P2P.sbuf, (int) (sizeof(hdr) + in_bytes(w)), MPI_BYTE, t, TAG_REQ,
              MPI_COMM_WORLD, &rq[2]);
    while (left > 0) {
        rq[0] = P2P.srv;
        MPI_Waitany(3, rq, &idx, &st);
        if (idx == 0) {
            P2P.srv = MPI_REQUEST_NULL;
            p2p_serve(works, &st);
        } else {
            left--;
        }
    }
}

/* Serve until every rank is done (MPI_Ibarrier). */
static void p2p_drain(work_t *works)
{
    MPI_Request rq[2];
    MPI_Status st;
    int idx;
    MPI_Ibarrier(MPI_COMM_WORLD, &rq[1]);
    for (;;) {
        rq[0] = P2P.srv;
        MPI_Waitany(2, rq, &idx, &st);
        if (idx == 0) {
            P2P.srv = MPI_REQUEST_NULL;
            p2p_serve(works, &st);
        } else {
            break;
        }
    }
}

/* ---- B9 ---------------------------------------------------------------------- */

/* Run K AMs of variant v; returns rank 0's wall time (broadcast). */
static double run_round(work_t *works, work_t *w, int v, long first, long K, int check)
{
    double t0, t;
    if (check && w->k == K_HIST) zero_hist();
    MPI_Barrier(MPI_COMM_WORLD);
    if (v == V_AM || v == V_ACC) MPI_Win_lock_all(0, W.win);
    if (v == V_P2P) p2p_post();
    MPI_Barrier(MPI_COMM_WORLD);
    t0 = bench_now();
    for (long i = first; i < first + K; i++) {
        int tg = target_of(i);
        switch (v) {
        case V_AM: do_am(w, i, tg); break;
        case V_LOCK: do_lock(w, i, tg); break;
        case V_ACC: do_acc(w, i, tg); break;
        default: do_p2p(works, w, i, tg); break;
        }
        if (check) check_output(w, vname[v], i, tg);
    }
    if (v == V_P2P) p2p_drain(works);
    else MPI_Barrier(MPI_COMM_WORLD);
    t = bench_now() - t0;
    if (v == V_P2P) {
        MPI_Cancel(&P2P.srv);
        MPI_Wait(&P2P.srv, MPI_STATUS_IGNORE);
    }
    if (v == V_AM || v == V_ACC) MPI_Win_unlock_all(W.win);
    MPI_Bcast(&t, 1, MPI_DOUBLE, 0, MPI_COMM_WORLD);
    if (check && w->k == K_HIST) check_hist(w, vname[v], K);
    return t;
}

static double bytes_per_am(const work_t *w, int v)
{
    switch (v) {
    case V_AM: return (double) (in_bytes(w) + out_bytes(w));
    case V_LOCK: return (double) pers_bytes(w) * (w->k == K_HIST ? 2 : 1);
    case V_ACC:
        if (w->k == K_HIST) return acc_bytes_n ? (double) acc_bytes_sum / acc_bytes_n : 0;
        return (double) pers_bytes(w);
    default: return (double) (2 * sizeof(int) + in_bytes(w) + out_bytes(w));
    }
}

#define NA (-1.0)

static void print_cell(double v)
{
    if (v < 0) printf(" n/a");
    else printf(" %.3f", v);
}

static void b9(void)
{
    work_t works[K_COUNT];
    double res[K_COUNT][V_COUNT], bytes[K_COUNT][V_COUNT];
    const int only_am = strcmp(O.amode, "default") != 0;

    for (int k = 0; k < K_COUNT; k++) {
        work_init(&works[k], k);
        for (int v = 0; v < V_COUNT; v++) res[k][v] = bytes[k][v] = NA;
    }
    {
        size_t rmax = 2 * sizeof(int);
        for (int k = 0; k < K_COUNT; k++) {
            size_t b = in_bytes(&works[k]) + 2 * sizeof(int);
            if (b > rmax) rmax = b;
        }
        P2P.rmax = rmax;
        P2P.rbuf = bench_alloc(rmax);
        P2P.sbuf = bench_alloc(rmax);
        P2P.reply = bench_alloc((size_t) O.S * ABS_N * sizeof(int));
        P2P.srv = MPI_REQUEST_NULL;
    }
    fill_window();
    MPI_Barrier(MPI_COMM_WORLD);

    for (int k = 0; k < K_COUNT; k++) {
        if (!O.kernels[k]) continue;
        for (int v = 0; v < V_COUNT; v++) {
            if (!O.variants[v] || (only_am && v != V_AM)) continue;
            if (v == V_AM && !am_ok) continue;
            work_t *w = &works[k];
            cur_k = k;
            cur_v = v;
            long K0 = O.check > 2 * (np - 1) ? O.check : 2 * (np - 1), K;
            double t, per[64];
            acc_bytes_sum = acc_bytes_n = 0;
            /* checked warm-up (first contact, registration, ...), then an
             * unchecked one: the estimate for the budget */
            t = run_round(works, w, v, 0, K0, 1) / K0;
            {
                /* the smaller of the two per-AM times: one scheduler time
                 * slice (ms) in a short pass would shrink the rounds */
                double t2 = run_round(works, w, v, K0, 2 * K0, 0) / (2 * K0);
                if (t2 < t) t = t2;
            }
            int R = O.rounds > 64 ? 64 : O.rounds;
            long first = 3 * K0;
            for (int r = 0; r < R; r++) {
                /* K from the latest per-AM time (rank 0's, broadcast):
                 * the first round at most 16 warm-ups long, then the
                 * previous round's rate, so that a loaded machine does
                 * not stretch the rounds far beyond the budget */
                K = O.maxk;
                if (O.budget > 0 && t > 0) {
                    double fit = O.budget / R / t;
                    if (fit < K) K = fit < 2 ? 2 : (long) fit;
                }
                if (r == 0 && K > 16 * K0) K = 16 * K0;
                MPI_Bcast(&K, 1, MPI_LONG, 0, MPI_COMM_WORLD);
                per[r] = t = run_round(works, w, v, first, K, 0) / K;
                first += K;
            }
            res[k][v] = bench_median(per, R);
            bytes[k][v] = bytes_per_am(w, v);
            if (O.verbose && rank == 0) {
                fprintf(stderr, "%s %s: K0=%ld, last round K=%ld, %d rounds: %.1f us/AM "
                        "(min %.1f, max %.1f)\n", kname[k], vname[v], K0, K, R,
                        1e6 * res[k][v], 1e6 * bench_min(per, R), 1e6 * bench_max(per, R));
            }
        }
    }

    int anywrong = 0, wkv[K_COUNT][V_COUNT];
    MPI_Allreduce(&wrong, &anywrong, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    MPI_Reduce(wrongkv, wkv, K_COUNT * V_COUNT, MPI_INT, MPI_SUM, 0, MPI_COMM_WORLD);
    if (rank == 0) {
        const char *ap = am_prefix();
        printf("# bench=am_kernels what=b9 np=%d tls=%s amode=%s S=%d B=%d D=%d osc=%s\n",
               np, O.tls, O.amode, O.S, O.B, O.D,
               getenv("OMPI_MCA_osc") ? getenv("OMPI_MCA_osc") : "default");
        /* one row: x = np; columns <kernel>_<variant>_us / _seg_us / _B */
        printf("# columns: np");
        for (int k = 0; k < K_COUNT; k++) {
            if (!O.kernels[k]) continue;
            for (int v = 0; v < V_COUNT; v++) {
                if (!O.variants[v] || (only_am && v != V_AM)) continue;
                const char *p = v == V_AM ? ap : vname[v];
                printf(" %s_%s_us %s_%s_seg_us %s_%s_B", kname[k], p, kname[k], p, kname[k], p);
            }
        }
        printf("\n%d", np);
        for (int k = 0; k < K_COUNT; k++) {
            if (!O.kernels[k]) continue;
            for (int v = 0; v < V_COUNT; v++) {
                if (!O.variants[v] || (only_am && v != V_AM)) continue;
                print_cell(res[k][v] < 0 ? NA : 1e6 * res[k][v]);
                print_cell(res[k][v] < 0 ? NA : 1e6 * res[k][v] / O.S);
                print_cell(res[k][v] < 0 ? NA : bytes[k][v]);
            }
        }
        printf("\n");
        if (O.variants[V_AM] && !am_ok) printf("# note: %s\n", am_why);
        if (anywrong) {
            printf("# note: WRONG RESULT in %d check(s) (stderr has each):", anywrong);
            for (int k = 0; k < K_COUNT; k++)
                for (int v = 0; v < V_COUNT; v++)
                    if (wkv[k][v]) printf(" %s/%s(%d)", kname[k],
                                          v == V_AM ? ap : vname[v], wkv[k][v]);
            printf("; their timings are not to be trusted\n");
        }
    }
    for (int k = 0; k < K_COUNT; k++) work_free(&works[k]);
    free(P2P.rbuf); free(P2P.sbuf); free(P2P.reply);
}

/* ---- B1: latency vs pipeline unit -------------------------------------------- */

static int cmp_int(const void *a, const void *b)
{
    return *(const int *) a - *(const int *) b;
}

static void unit_lat(void)
{
    work_t works[K_COUNT];
    const int ks[2] = { K_SEARCH, K_ABSVAL };
    char units[32][16];
    int nu = 0;
    double lat[32][2], bare[2];
    int iters = O.maxk < 1000 ? O.maxk : 1000;
    double *t = calloc((size_t) iters, sizeof(double));
    {
        char *copy = strdup(O.units), *tok, *save = NULL;
        for (tok = strtok_r(copy, ",", &save); tok && nu < 32; tok = strtok_r(NULL, ",", &save))
            snprintf(units[nu++], sizeof(units[0]), "%s", tok);
        free(copy);
    }
    (void) cmp_int;
    for (int k = 0; k < K_COUNT; k++) work_init(&works[k], k);
    fill_window();
    MPI_Barrier(MPI_COMM_WORLD);

    /* bare handler: the S segments in one call on local memory */
    for (int j = 0; j < 2; j++) {
        work_t *w = &works[ks[j]];
        char *pers = W.base + pers_off(w, 0);
        int n = 0;
        double t0 = bench_now(), el;
        do {
            double a = bench_now();
            kfn[w->k](w->in[0], w->N, w->dt, pers, pers_count(w), w->dt, w->out, w->M, w->dt,
                      O.S, 0, NULL);
            t[n++] = bench_now() - a;
            el = bench_now() - t0;
        } while (n < iters && el < 0.05);
        bare[j] = bench_median(t, n);
    }

    for (int u = 0; u < nu; u++) {
        MPI_Info info;
        MPI_Info_create(&info);
        MPI_Info_set(info, "am_pipeline_unit", units[u]);
        mpi_check(MPI_Win_set_info(W.win, info), "MPI_Win_set_info(am_pipeline_unit)");
        MPI_Info_free(&info);
        for (int j = 0; j < 2; j++) {
            work_t *w = &works[ks[j]];
            int n = iters;
            MPI_Barrier(MPI_COMM_WORLD);
            if (rank == 0) {
                MPI_Win_lock(MPI_LOCK_SHARED, 1, 0, W.win);
                double est = 0;
                for (int pass = 0; pass < 2; pass++) {
                    int cnt = pass ? n : 3;
                    double s0 = bench_now();
                    for (int i = 0; i < cnt; i++) {
                        double a = bench_now();
                        do_am(w, pass ? i : 0, 1);
                        if (pass) t[i] = bench_now() - a;
                        else check_output(w, "am", 0, 1);
                    }
                    if (!pass) {
                        est = (bench_now() - s0) / cnt;
                        if (O.budget > 0 && est * n > O.budget / nu / 2) {
                            n = (int) (O.budget / nu / 2 / est);
                            if (n < 5) n = 5;
                        }
                    }
                }
                MPI_Win_unlock(1, W.win);
                lat[u][j] = bench_median(t, n);
            }
            MPI_Barrier(MPI_COMM_WORLD);
        }
    }
    int anywrong = 0;
    MPI_Allreduce(&wrong, &anywrong, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    if (rank == 0) {
        const char *ap = am_prefix();
        int sn = ((KEY_LEN + 63) / 64) * 64 * 2, an = ((ABS_N * 4 + 63) / 64) * 64 * 2;
        printf("# bench=am_kernels what=unit np=%d tls=%s amode=%s S=%d osc=%s\n", np, O.tls,
               O.amode, O.S, getenv("OMPI_MCA_osc") ? getenv("OMPI_MCA_osc") : "default");
        printf("# note: %d-segment AM + MPI_Win_flush, rank 0 -> 1; auto = max(1, "
               "floor(osc_ucxx_am_chunk / seg_need)): search seg_need %d B (auto %d at the "
               "default chunk 2048), absval %d B (auto %d)\n", O.S, sn, 2048 / sn > 1 ?
               2048 / sn : 1, an, 2048 / an > 1 ? 2048 / an : 1);
        printf("# columns: unit search_%s_us absval_%s_us\n", ap, ap);
        for (int u = 0; u < nu; u++) {
            printf("%s %.3f %.3f\n", units[u], 1e6 * lat[u][0], 1e6 * lat[u][1]);
        }
        printf("handler %.3f %.3f\n", 1e6 * bare[0], 1e6 * bare[1]);
        if (anywrong) printf("# note: WRONG RESULT: see stderr\n");
    }
    for (int k = 0; k < K_COUNT; k++) work_free(&works[k]);
    free(t);
}

/* ---- B4: ordering, alternating large / small AMs ------------------------------ */

static void order_bench(void)
{
    /* absval; large AM: L segments on slice 0 of the big array, small AM:
     * 1 segment on its own region after it (disjoint) */
    work_t wl, ws;
    int iters = O.maxk < 200 ? O.maxk : 200;
    double *t = calloc((size_t) iters, sizeof(double)), res[2];
    const char *orders[2] = { "default", "none" };
    int saveS = O.S;

    O.S = O.L;
    work_init(&wl, K_ABSVAL);
    O.S = 1;
    work_init(&ws, K_ABSVAL);
    O.S = saveS;
    fill_window();
    MPI_Barrier(MPI_COMM_WORLD);
    for (int o = 0; o < 2; o++) {
        MPI_Info info;
        MPI_Info_create(&info);
        MPI_Info_set(info, "am_ordering", o ? "none" : "sameop,diffop,sameam");
        mpi_check(MPI_Win_set_info(W.win, info), "MPI_Win_set_info(am_ordering)");
        MPI_Info_free(&info);
        MPI_Barrier(MPI_COMM_WORLD);
        if (rank == 0) {
#ifdef BENCH_HAVE_MPIX_UCXX
            int n = iters;
            MPI_Win_lock(MPI_LOCK_SHARED, 1, 0, W.win);
            for (int pass = 0; pass < 2; pass++) {
                int cnt = pass ? n : 2;
                double s0 = bench_now();
                for (int i = 0; i < cnt; i++) {
                    double a = bench_now();
                    for (int p = 0; p < O.pairs; p++) {
                        mpi_check(MPIX_Am(wl.in[0], ABS_N, MPI_INT, wl.out, ABS_N, MPI_INT,
                                          O.L, 1, MPI_INT, bench_disp(&W, 1, L.off_abs),
                                          O.L * ABS_N, MPI_INT, MPI_INT, am_op[K_ABSVAL],
                                          W.win), "MPIX_Am (large)");
                        mpi_check(MPIX_Am(ws.in[0], ABS_N, MPI_INT, ws.out, ABS_N, MPI_INT,
                                          1, 1, MPI_INT, bench_disp(&W, 1, L.off_abs +
                                          (size_t) O.L * ABS_N * sizeof(int)), ABS_N,
                                          MPI_INT, MPI_INT, am_op[K_ABSVAL], W.win),
                                  "MPIX_Am (small)");
                    }
                    mpi_check(MPI_Win_flush(1, W.win), "MPI_Win_flush");
                    if (pass) t[i] = (bench_now() - a) / O.pairs;
                }
                if (!pass) {
                    /* check the last pair once: large on slice 0, small on the
                     * first segment after it */
                    int *e = calloc((size_t) O.L * ABS_N, sizeof(int));
                    const int *v = wl.in[0], *vs = ws.in[0];
                    for (size_t x = 0; x < (size_t) O.L * ABS_N; x++) {
                        int a = v[x], b = pval(1, x);
                        e[x] = (a < 0 ? -a : a) + (b < 0 ? -b : b);
                    }
                    if (memcmp(e, wl.out, (size_t) O.L * ABS_N * sizeof(int)))
                        report_wrong("am", "absval(large)", "output differs");
                    for (int x = 0; x < ABS_N; x++) {
                        int a = vs[x], b = pval(1, (size_t) O.L * ABS_N + x);
                        e[x] = (a < 0 ? -a : a) + (b < 0 ? -b : b);
                    }
                    if (memcmp(e, ws.out, ABS_N * sizeof(int)))
                        report_wrong("am", "absval(small)", "output differs");
                    free(e);
                    double est = (bench_now() - s0) / cnt;
                    if (O.budget > 0 && est * n > O.budget / 2) {
                        n = (int) (O.budget / 2 / est);
                        if (n < 5) n = 5;
                    }
                }
            }
            MPI_Win_unlock(1, W.win);
            res[o] = bench_median(t, n);
#endif
        }
        MPI_Barrier(MPI_COMM_WORLD);
    }
    int anywrong = 0;
    MPI_Allreduce(&wrong, &anywrong, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    if (rank == 0) {
        const char *ap = am_prefix();
        printf("# bench=am_kernels what=order np=%d tls=%s amode=%s L=%d pairs=%d osc=%s\n",
               np, O.tls, O.amode, O.L, O.pairs,
               getenv("OMPI_MCA_osc") ? getenv("OMPI_MCA_osc") : "default");
        printf("# note: per pair: a %d-segment absval AM (%d KiB in + out, streams through "
               "the %ld-byte user buffer) then a 1-segment one; %d pairs + one flush\n",
               O.L, (int) ((size_t) O.L * ABS_N * 8 / 1024), O.ubuf, O.pairs);
        printf("# columns: ordering pair_%s_us\n", ap);
        for (int o = 0; o < 2; o++) printf("%s %.3f\n", orders[o], 1e6 * res[o]);
        printf("rel %.3f\n", res[1] / res[0]);
        if (anywrong) printf("# note: WRONG RESULT: see stderr\n");
    }
    work_free(&wl);
    work_free(&ws);
    free(t);
}

/* ---- main ------------------------------------------------------------------- */

static void setup_am(void)
{
    am_ok = 0;
#ifdef BENCH_HAVE_MPIX_UCXX
    int rc = MPI_SUCCESS, all;
    MPI_Win_set_errhandler(W.win, MPI_ERRORS_RETURN);
    for (int k = 0; k < K_COUNT && rc == MPI_SUCCESS; k++) {
        rc = MPIX_Am_op_create(kfn[k], NULL, &am_op[k]);
        if (rc == MPI_SUCCESS) rc = MPIX_Am_win_op_register(am_op[k], k, W.win);
    }
    MPI_Allreduce(&rc, &all, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
    /* from here on an error (of an AM too) aborts with Open MPI's message */
    MPI_Win_set_errhandler(W.win, MPI_ERRORS_ARE_FATAL);
    if (all != MPI_SUCCESS) {
        char msg[MPI_MAX_ERROR_STRING] = "";
        int len = 0;
        MPI_Error_string(all, msg, &len);
        snprintf(am_why, sizeof(am_why), "MPIX_Am n/a on this component: "
                 "MPIX_Am_win_op_register: %s", msg);
        return;
    }
    if (O.ubuf > 0) {
        void *ub = bench_alloc((size_t) O.ubuf);
        rc = MPIX_Am_win_buffer_attach(ub, O.ubuf, W.win);
        if (rc != MPI_SUCCESS) mpi_check(rc, "MPIX_Am_win_buffer_attach");
        /* freed with the window (MPI_Win_free detaches); leaked on purpose */
    }
    am_ok = 1;
#else
    snprintf(am_why, sizeof(am_why), "built without mpix_ucxx.h: MPIX_Am n/a");
#endif
}

int main(int argc, char **argv)
{
    int prc = parse_opts(argc, argv);
    bench_init(&argc, &argv, MPI_THREAD_SINGLE);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &np);
    bench_opts_checked(prc, "am_kernels", argv[0], usage);
    if (np < 2) bench_bad_arg("am_kernels needs at least 2 ranks");
    if (strcmp(O.what, "b9") && np != 2) bench_bad_arg("-o %s needs exactly 2 ranks", O.what);

    /* window: [hist B ints][absval nsl slices of S*100 ints][db D records] */
    L.nsl = 4;
    size_t absn = (size_t) L.nsl * O.S * ABS_N;
    if (!strcmp(O.what, "order") && absn < (size_t) (O.L + 1) * ABS_N)
        absn = (size_t) (O.L + 1) * ABS_N;
    L.absn = absn;
    L.off_hist = 0;
    L.off_abs = ((size_t) O.B * sizeof(int) + 63) & ~(size_t) 63;
    L.off_db = (L.off_abs + absn * sizeof(int) + 63) & ~(size_t) 63;
    L.size = L.off_db + (size_t) O.D * REC_LEN;
    bench_win_create_or_na(&W, L.size, FLAVOR_ALLOCATE, MPI_COMM_WORLD);
    setup_am();
    if (strcmp(O.what, "b9") && !am_ok) {
        if (rank == 0) printf("# note: %s\n", am_why);
        bench_win_free(&W);
        bench_exit_na("%s", am_why);
    }
    if (strcmp(O.amode, "default") && !am_ok) {
        /* an AM-only run (-A msg/thread/poll) on a component without AMs */
        bench_win_free(&W);
        bench_exit_na("%s", am_why);
    }
    if (!strcmp(O.what, "b9")) b9();
    else if (!strcmp(O.what, "unit")) unit_lat();
    else order_bench();

#ifdef BENCH_HAVE_MPIX_UCXX
    if (am_ok) {
        for (int k = 0; k < K_COUNT; k++) {
            MPIX_Am_win_op_deregister(am_op[k], W.win);
            MPIX_Am_op_free(&am_op[k]);
        }
    }
#endif
    bench_win_free(&W);
    MPI_Finalize();
    return wrong ? 3 : 0;
}
