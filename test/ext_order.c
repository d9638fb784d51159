/* ext_order: the mpi_win_order info key (mpix/mpix_ucxx.h): operations to
 * the same target through an ordered window complete at the target in issue
 * order, with no flush.  Usage: ext_order [rounds], the number of rounds per
 * configuration (split over the origin threads).  Default 10000, under
 * UCX_TLS=tcp 300.  (Until wait loops backed off, accumulates sent as active
 * messages from 4 origin threads took 2-5 ms a round on 2 cores, and the sum
 * kind 1-3 ms: the rounds were cut to 200 there, and the suite still timed
 * out under mpirun --bind-to none; now about 15 us.)
 * Skipped (and passed) only without MPI_THREAD_MULTIPLE.
 *
 * Every rank is the origin of rank+1.  Round j (1, 2, ...) of an origin thread
 * puts len(j) bytes (8 B .. 32 KiB, varying) of round-j data into slot j%16 of
 * its stream at the target, then sets the stream's flag to j with no flush in
 * between, by one of
 *   replace:  MPI_Accumulate(j, MPI_REPLACE)   target polls with loads
 *   sum:      MPI_Accumulate(1, MPI_SUM)       target polls with
 *             MPI_Fetch_and_op(MPI_NO_OP) on itself + flush
 *   put:      MPI_Put(j)                       target polls with loads
 *   accdata:  the data itself by MPI_Accumulate(MPI_REPLACE) (at least 2
 *             elements: where the target is not mapped osc/ucxx sends it as
 *             an active message the target CPU applies later), the flag by
 *             MPI_Put(j); target polls with loads
 * (loads: MPI_Win_sync + volatile read of its own window memory, inside its
 * MPI_Win_lock_all).  The target's main thread polls the flags; when a flag
 * shows f it checks the data of every round up to f not checked yet (all must
 * be there: ordering) and returns credits by message, so an origin never
 * overwrites a slot that is not yet checked.
 * Configurations: mpi_win_scope process/thread x 1/4 origin threads x the 4
 * kinds, for each window flavor.  MPI_Win_get_info must report
 * mpi_win_order=true (and the scope).
 * Options to run one part: -s process|thread, -t 1|4, -k replace|sum|put|accdata. */
#include "testutil.h"
#include "mpix_ucxx.h"
#include <pthread.h>
#include <sched.h>
#include <stdint.h>

#define NT 4
#define S 16                          /* slots per stream */
#define SLOT 32768                    /* bytes */
#define STREAM (64 + (MPI_Aint) S * SLOT)
#define TAG_ACK 300

enum { K_REPLACE, K_SUM, K_PUT, K_ACCDATA, NK };
static const char *kname[NK] = { "replace(acc)+load-poll", "sum(acc)+fetch_and_op-poll",
                                 "put+load-poll", "accdata+put-flag+load-poll" };

static int rank, nprocs, next, prev, nthreads, kind, rounds_per_stream;

/* default rounds of a configuration (see the header) */
static int default_rounds(void)
{
    return tu_slow_transport() ? 300 : 10000;
}
static tu_win_t W;
static const char *cfg;   /* description of the configuration */

static inline uint64_t pat(uint64_t origin, uint64_t stream, uint64_t j, uint64_t i)
{
    uint64_t x = (origin * 131 + stream + 1) * 0x9E3779B97F4A7C15ull ^ j * 0xBF58476D1CE4E5B9ull ^
                 (i + 1) * 0x94D049BB133111EBull;
    x ^= x >> 31; x *= 0xD6E8FEB86659FD93ull; x ^= x >> 32;
    return x;
}

static inline int len_of(uint64_t j)   /* uint64 words */
{
    static const int sizes[] = { 1, 8, 128, 512, 1536, SLOT / 8 };
    uint64_t h = j * 0x9E3779B97F4A7C15ull;
    int n = sizes[(h >> 40) % 6];
    return K_ACCDATA == kind && n < 2 ? 2 : n;
}

static inline MPI_Aint flag_off(int t) { return (MPI_Aint) t * STREAM; }
static inline MPI_Aint slot_off(int t, uint64_t j) { return (MPI_Aint) t * STREAM + 64 + (MPI_Aint) (j % S) * SLOT; }

/* origin thread t: stream t to the next rank */
static void *origin(void *arg)
{
    int t = (int) (intptr_t) arg;
    uint64_t *src = malloc((size_t) S * SLOT), flagsrc[S];
    static const int64_t one = 1;
    int64_t acked = 0, a;
    const int64_t R = rounds_per_stream;
    MPI_Request rr;
    TU_MPI(MPI_Irecv(&a, 1, MPI_INT64_T, next, TAG_ACK + t, MPI_COMM_WORLD, &rr));
    for (int64_t j = 1; j <= R; j++) {
        while (j > acked + S) {   /* out of credits */
            int done = 0;
            TU_MPI(MPI_Test(&rr, &done, MPI_STATUS_IGNORE));
            if (!done) { sched_yield(); continue; }
            TU_CHECK(a > acked && a <= R, "%s: stream %d: credit %lld after %lld", cfg, t,
                     (long long) a, (long long) acked);
            acked = a;
            TU_MPI(MPI_Irecv(&a, 1, MPI_INT64_T, next, TAG_ACK + t, MPI_COMM_WORLD, &rr));
        }
        /* slot j%S was last used by round j-S <= acked: checked at the target */
        uint64_t *d = src + (j % S) * (SLOT / 8);
        int n = len_of(j);
        for (int i = 0; i < n; i++) d[i] = pat(rank, t, j, i);
        if (K_ACCDATA == kind)
            TU_MPI(MPI_Accumulate(d, n, MPI_UINT64_T, next, tu_disp(&W, next, slot_off(t, j)), n,
                                  MPI_UINT64_T, MPI_REPLACE, W.win));
        else
            TU_MPI(MPI_Put(d, n, MPI_UINT64_T, next, tu_disp(&W, next, slot_off(t, j)), n, MPI_UINT64_T,
                           W.win));
        flagsrc[j % S] = j;
        switch (kind) {
        case K_REPLACE:
            TU_MPI(MPI_Accumulate(&flagsrc[j % S], 1, MPI_INT64_T, next, tu_disp(&W, next, flag_off(t)),
                                  1, MPI_INT64_T, MPI_REPLACE, W.win));
            break;
        case K_SUM:
            TU_MPI(MPI_Accumulate(&one, 1, MPI_INT64_T, next, tu_disp(&W, next, flag_off(t)), 1,
                                  MPI_INT64_T, MPI_SUM, W.win));
            break;
        case K_PUT: case K_ACCDATA:
            TU_MPI(MPI_Put(&flagsrc[j % S], 1, MPI_INT64_T, next, tu_disp(&W, next, flag_off(t)), 1,
                           MPI_INT64_T, W.win));
            break;
        }
    }
    while (acked < R) {   /* the last credit is always R */
        int done = 0;
        TU_MPI(MPI_Test(&rr, &done, MPI_STATUS_IGNORE));
        if (!done) { sched_yield(); continue; }
        TU_CHECK(a > acked && a <= R, "%s: stream %d: credit %lld after %lld", cfg, t, (long long) a,
                 (long long) acked);
        acked = a;
        if (acked < R) TU_MPI(MPI_Irecv(&a, 1, MPI_INT64_T, next, TAG_ACK + t, MPI_COMM_WORLD, &rr));
    }
    free(src);
    return NULL;
}

/* main thread: the target of prev's streams */
static void checker(void)
{
    int64_t checked[NT] = { 0 }, acked[NT] = { 0 };
    const int64_t R = rounds_per_stream;
    int remaining = nthreads, reported = 0;
    char *mem = W.base;
    double last_progress = MPI_Wtime();
    while (remaining) {
        int progressed = 0;
        for (int t = 0; t < nthreads; t++) {
            int64_t f;
            if (acked[t] == R) continue;
            if (K_SUM == kind) {
                TU_MPI(MPI_Fetch_and_op(NULL, &f, MPI_INT64_T, rank, tu_disp(&W, rank, flag_off(t)),
                                        MPI_NO_OP, W.win));
                TU_MPI(MPI_Win_flush(rank, W.win));
            } else {
                TU_MPI(MPI_Win_sync(W.win));
                f = *(volatile int64_t *) (mem + flag_off(t));
            }
            if (f == checked[t]) continue;
            if (f < checked[t] || f > R) {
                TU_CHECK(0, "%s: stream %d of rank %d: flag went from %lld to %lld (rounds %lld)",
                         cfg, t, prev, (long long) checked[t], (long long) f, (long long) R);
                if (f > R) f = R;
                if (f < checked[t]) continue;
            }
            TU_MPI(MPI_Win_sync(W.win));
            for (int64_t j = checked[t] + 1; j <= f; j++) {
                volatile uint64_t *d = (volatile uint64_t *) (mem + slot_off(t, j));
                int n = len_of(j), bad = 0, first = -1;
                for (int i = 0; i < n; i++)
                    if (d[i] != pat(prev, t, j, i)) { if (first < 0) first = i; bad++; }
                if (bad && reported < 10) {
                    int stale = 0;   /* words still holding round j-S's data */
                    for (int i = 0; i < n; i++) if (j > S && d[i] == pat(prev, t, j - S, i)) stale++;
                    TU_CHECK(0, "%s: stream %d of rank %d: flag shows %lld but round %lld's data "
                             "(%d bytes) is not complete: %d words wrong (%d of them from round %lld), "
                             "first at word %d", cfg, t, prev, (long long) f, (long long) j, n * 8,
                             bad, stale, (long long) (j - S), first);
                    reported++;
                } else if (bad) {
                    tu_errors++;
                }
            }
            checked[t] = f;
            progressed = 1;
            if (f - acked[t] >= S / 2 || f == R) {
                TU_MPI(MPI_Send(&f, 1, MPI_INT64_T, prev, TAG_ACK + t, MPI_COMM_WORLD));
                acked[t] = f;
                if (f == R) remaining--;
            }
        }
        if (progressed) {
            last_progress = MPI_Wtime();
        } else {
            sched_yield();
            if (MPI_Wtime() - last_progress > 60) {
                TU_CHECK(0, "%s: no progress for 60 s (streams of rank %d checked up to %lld %lld "
                         "%lld %lld)", cfg, prev, (long long) checked[0], (long long) checked[1],
                         (long long) checked[2], (long long) checked[3]);
                MPI_Abort(MPI_COMM_WORLD, 3);
            }
        }
    }
}

int main(int argc, char **argv)
{
    int provided, rc, rounds = 0;
    MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &nprocs);
    const char *only_scope = NULL, *only_kind = NULL;
    int only_threads = 0;
    for (int i = 1; i < argc; i++) {
        if (0 == strcmp(argv[i], "-s") && i + 1 < argc) only_scope = argv[++i];
        else if (0 == strcmp(argv[i], "-k") && i + 1 < argc) only_kind = argv[++i];
        else if (0 == strcmp(argv[i], "-t") && i + 1 < argc) only_threads = atoi(argv[++i]);
        else rounds = atoi(argv[i]);
    }
    if (provided < MPI_THREAD_MULTIPLE) {
        if (0 == rank) printf("ext_order: MPI_THREAD_MULTIPLE not provided (%d), skipped\n", provided);
        rc = tu_finish("ext_order");
        MPI_Finalize();
        return rc;
    }
    next = (rank + 1) % nprocs;
    prev = (rank + nprocs - 1) % nprocs;
    static const char *scopes[] = { "process", "thread" };
    static const int nths[] = { 1, NT };
    char desc[160];
    cfg = desc;

    for (int flavor = 0; flavor < TU_NFLAVORS; flavor++) {
        if (!tu_flavor_enabled(flavor)) continue;
        for (int sc = 0; sc < 2; sc++) {
            if (only_scope && strcmp(only_scope, scopes[sc])) continue;
            MPI_Info info = tu_info_new("mpi_win_order", "true", "mpi_win_scope", scopes[sc], NULL);
            tu_win_create(flavor, NT * STREAM, 1, info, MPI_COMM_WORLD, &W);
            MPI_Info_free(&info);
            char v[MPI_MAX_INFO_VAL + 1];
            int flag = tu_win_info_get(W.win, "mpi_win_order", v, sizeof(v));
            TU_CHECK(flag && 0 == strcmp(v, "true"), "%s scope=%s: MPI_Win_get_info mpi_win_order "
                     "= '%s' (set: %d), expected 'true'", tu_flavor_names[flavor], scopes[sc], v, flag);
            flag = tu_win_info_get(W.win, "mpi_win_scope", v, sizeof(v));
            TU_CHECK(flag && 0 == strcmp(v, scopes[sc]), "%s: MPI_Win_get_info mpi_win_scope = '%s' "
                     "(set: %d), expected '%s'", tu_flavor_names[flavor], v, flag, scopes[sc]);
            for (int nt = 0; nt < 2; nt++) {
                nthreads = nths[nt];
                if (only_threads && only_threads != nthreads) continue;
                int r;
                for (kind = 0; kind < NK; kind++) {
                    if (only_kind && strncmp(only_kind, kname[kind], strlen(only_kind))) continue;
                    r = rounds > 0 ? rounds : default_rounds();
                    rounds_per_stream = r / nthreads > 0 ? r / nthreads : 1;
                    double t0 = MPI_Wtime();
                    snprintf(desc, sizeof(desc), "%s window, scope=%s, %d origin thread%s, %s",
                             tu_flavor_names[flavor], scopes[sc], nthreads, nthreads > 1 ? "s" : "",
                             kname[kind]);
                    memset(W.base, 0, NT * STREAM);
                    MPI_Barrier(MPI_COMM_WORLD);
                    TU_MPI(MPI_Win_lock_all(0, W.win));
                    pthread_t th[NT];
                    for (int t = 0; t < nthreads; t++)
                        pthread_create(&th[t], NULL, origin, (void *) (intptr_t) t);
                    checker();
                    for (int t = 0; t < nthreads; t++) pthread_join(th[t], NULL);
                    TU_MPI(MPI_Win_unlock_all(W.win));
                    MPI_Barrier(MPI_COMM_WORLD);
                    if (0 == rank)
                        printf("%s: %d rounds in %.2f s\n", desc, rounds_per_stream * nthreads,
                               MPI_Wtime() - t0);
                }
            }
            tu_win_free(&W);
        }
    }
    rc = tu_finish("ext_order");
    MPI_Finalize();
    return rc;
}
