/* info_state: what MPI_Win_get_info reports.  For every flavor (and
 * MPI_Win_allocate_shared) and each creation info below:
 *   1. get_info right after creation,
 *   2. after MPI_Win_set_info with our keys changed, a key we do not know
 *      and a value to be rewritten,
 *   3. after an empty MPI_Win_set_info,
 *   4. of a duplicate (MPIX_Win_dup_with_info) with overrides, and of the
 *      duplicate after its own set_info,
 * each as the ordered list of key=value pairs.  Creation infos: none; our
 * keys with values to keep, to rewrite and to reject (an ordering list with
 * an unknown item, a granularity to round); the longest value
 * MPI_Info_set takes; keys we do not know and one that looks like a saved
 * key (_OMPI_IN_no_locks).  The defaults and what set_info changes are
 * checked against the values the window honours (mpi_win_order,
 * mpi_win_scope, accumulate_ordering, no_locks, am_pipeline_unit).
 * --dump FILE: rank 0 writes every list to FILE, so that info_state.sh can
 * compare the window's keys subscribed in one pass (osc_ucxx_info.c) with
 * Open MPI's subscriber (the test hook's info_direct=0) pair by pair. */
#include "testutil.h"
#include "mpix_ucxx.h"

#define DUMP_MAX 8192

static int rank, nprocs;
/* "k=v\n" for every key of the window's info, in order. */
static void dump(MPI_Win win, char *out)
{
    MPI_Info info;
    int nkeys = 0;
    size_t len = 0;

    out[0] = '\0';
    TU_MPI(MPI_Win_get_info(win, &info));
    TU_MPI(MPI_Info_get_nkeys(info, &nkeys));
    for (int k = 0; k < nkeys; k++) {
        char key[MPI_MAX_INFO_KEY + 1], value[MPI_MAX_INFO_VAL + 1];
        int flag = 0;

        TU_MPI(MPI_Info_get_nthkey(info, k, key));
        TU_MPI(MPI_Info_get(info, key, MPI_MAX_INFO_VAL, value, &flag));
        len += (size_t) snprintf(out + len, DUMP_MAX - len, "%s=%s\n", key, flag ? value : "?");
        if (len >= DUMP_MAX) break;
    }
    MPI_Info_free(&info);
}

/* The value dump `d` gives `key`, or NULL. */
static const char *value_of(const char *d, const char *key, char *buf)
{
    size_t klen = strlen(key);

    for (const char *p = d; *p; p = strchr(p, '\n') + 1) {
        if (0 == strncmp(p, key, klen) && '=' == p[klen]) {
            const char *end = strchr(p, '\n');
            memcpy(buf, p + klen + 1, (size_t) (end - p - klen - 1));
            buf[end - p - klen - 1] = '\0';
            return buf;
        }
    }
    return NULL;
}

static void expect(const char *d, const char *key, const char *want, const char *what)
{
    char buf[MPI_MAX_INFO_VAL + 1];
    const char *got = value_of(d, key, buf);

    TU_CHECK(NULL != got && 0 == strcmp(got, want), "%s: %s is %s, expected %s", what, key,
             got ? got : "missing", want);
}

enum { NCASES = 5, NSTEPS = 5 };
static const char *step_names[NSTEPS] = {"created", "after set_info", "after empty set_info",
                                         "duplicate", "duplicate after set_info"};

static MPI_Info creation_info(int c)
{
    static char longval[MPI_MAX_INFO_VAL + 1];
    MPI_Info info;

    if (0 == c) return MPI_INFO_NULL;
    MPI_Info_create(&info);
    switch (c) {
    case 1:   /* keys to keep or rewrite */
        MPI_Info_set(info, "no_locks", "true");
        MPI_Info_set(info, "mpi_win_order", "true");
        MPI_Info_set(info, "accumulate_ordering", "rar,war,bogus");
        MPI_Info_set(info, "unknown_key", "xyz");
        break;
    case 2:   /* every key of ours */
        MPI_Info_set(info, "mpi_accumulate_granularity", "100");
        MPI_Info_set(info, "accumulate_ops", "same_op");
        MPI_Info_set(info, "accumulate_ordering", "none");
        MPI_Info_set(info, "am_ordering", "sameop");
        MPI_Info_set(info, "am_pipeline_unit", "7");
        MPI_Info_set(info, "mpi_win_scope", "thread");
        MPI_Info_set(info, "acc_single_intrinsic", "true");
        MPI_Info_set(info, "mpi_assert_accumulate_intrinsic", "true");
        MPI_Info_set(info, "same_size", "true");
        MPI_Info_set(info, "am_buf_interleave_am_detach", "false");
        break;
    case 3:   /* a long value */
        memset(longval, 'r', MPI_MAX_INFO_VAL - 1);   /* the longest MPI_Info_set takes */
        longval[MPI_MAX_INFO_VAL - 1] = '\0';
        MPI_Info_set(info, "accumulate_ordering", longval);
        MPI_Info_set(info, "mpi_win_order", "false");
        break;
    case 4:   /* a key that looks saved, keys we do not know */
        MPI_Info_set(info, "_OMPI_IN_no_locks", "maybe");
        MPI_Info_set(info, "zz_last", "1");
        MPI_Info_set(info, "aa_first", "2");
        MPI_Info_set(info, "mpi_win_scope", "process");
        break;
    }
    return info;
}

/* Steps 1-5 of one window, with the subscription way set beforehand. */
static void run_case(int flavor, int c, char dumps[NSTEPS][DUMP_MAX])
{
    MPI_Info info = creation_info(c), change, empty, over;
    MPI_Win dup = MPI_WIN_NULL;
    tu_win_t w;

    tu_win_create(flavor, 64, 8, info, MPI_COMM_WORLD, &w);
    if (MPI_INFO_NULL != info) MPI_Info_free(&info);
    if (MPI_WIN_NULL == w.win) {   /* (allocate_shared across nodes) */
        for (int s = 0; s < NSTEPS; s++) strcpy(dumps[s], "no window\n");
        return;
    }
    dump(w.win, dumps[0]);

    MPI_Info_create(&change);
    MPI_Info_set(change, "mpi_win_order", "true");
    MPI_Info_set(change, "mpi_win_scope", "thread");
    MPI_Info_set(change, "accumulate_ordering", "none");
    MPI_Info_set(change, "am_pipeline_unit", "0");
    MPI_Info_set(change, "not_ours", "abc");
    TU_MPI(MPI_Win_set_info(w.win, change));
    MPI_Info_free(&change);
    dump(w.win, dumps[1]);

    MPI_Info_create(&empty);
    TU_MPI(MPI_Win_set_info(w.win, empty));
    MPI_Info_free(&empty);
    dump(w.win, dumps[2]);

    MPI_Info_create(&over);
    MPI_Info_set(over, "mpi_win_order", "false");
    MPI_Info_set(over, "am_ordering", "diffop,sameam");
    if (MPI_SUCCESS == MPIX_Win_dup_with_info(w.win, over, &dup)) {
        dump(dup, dumps[3]);
        MPI_Info_set(over, "mpi_win_scope", "process");
        MPI_Info_set(over, "accumulate_ordering", "rar");
        TU_MPI(MPI_Win_set_info(dup, over));
        dump(dup, dumps[4]);
        TU_MPI(MPI_Win_free(&dup));
    } else {
        strcpy(dumps[3], "no duplicate\n");
        strcpy(dumps[4], "no duplicate\n");
    }
    MPI_Info_free(&over);
    tu_win_free(&w);
}

/* What the window honours, whichever way it was subscribed: per creation
 * info (-1: every one), step, key and value. */
static const struct {
    int c, step;
    const char *key, *want;
} honoured[] = {
    {0, 0, "no_locks", "false"},
    {0, 0, "same_size", "false"},
    {0, 0, "mpi_win_order", "false"},
    {0, 0, "mpi_win_scope", "process"},
    {0, 0, "accumulate_ordering", "rar,raw,war,waw"},
    {0, 0, "accumulate_ops", "same_op_no_op"},
    {0, 0, "am_pipeline_unit", "auto"},
    {0, 0, "acc_single_intrinsic", "false"},
    {1, 0, "no_locks", "true"},
    {1, 0, "mpi_win_order", "true"},
    {2, 0, "mpi_win_scope", "thread"},
    {2, 0, "accumulate_ordering", "none"},
    {2, 0, "am_pipeline_unit", "7"},
    {2, 0, "acc_single_intrinsic", "true"},
    /* set_info changes what the window does */
    {-1, 1, "mpi_win_order", "true"},
    {-1, 1, "mpi_win_scope", "thread"},
    {-1, 1, "accumulate_ordering", "none"},
    /* and so do a duplicate's overrides and set_info */
    {-1, 3, "mpi_win_order", "false"},
    {-1, 4, "mpi_win_scope", "process"},
};

static void check_values(int c, char dumps[NSTEPS][DUMP_MAX], const char *what)
{
    char buf[MPI_MAX_INFO_VAL + 1];
    const char *g;

    if (0 == strncmp(dumps[0], "no window", 9)) return;
    for (size_t i = 0; i < sizeof(honoured) / sizeof(honoured[0]); i++) {
        int step = honoured[i].step;

        if ((honoured[i].c >= 0 && honoured[i].c != c) ||
            0 == strncmp(dumps[step], "no duplicate", 12)) {
            continue;
        }
        expect(dumps[step], honoured[i].key, honoured[i].want, what);
    }
    if (0 == c) {
        g = value_of(dumps[0], "mpi_accumulate_granularity", buf);
        TU_CHECK(NULL != g && atol(g) >= 8 && 0 == (atol(g) & (atol(g) - 1)),
                 "%s: mpi_accumulate_granularity %s is not a power of two", what,
                 g ? g : "missing");
    }
    TU_CHECK(NULL == value_of(dumps[1], "not_ours", buf), "%s: a key nobody honours is reported",
             what);
    TU_CHECK(NULL == value_of(dumps[0], "_OMPI_IN_no_locks", buf) &&
                 NULL == value_of(dumps[0], "_OMPI_IN_mpi_win_order", buf),
             "%s: a saved key is reported", what);
}

int main(int argc, char **argv)
{
    static char dumps[NSTEPS][DUMP_MAX];
    const char *tune = getenv("OSC_UCXX_TEST_TUNE");
    const char *way = tune && strstr(tune, "info_direct=0") ? "Open MPI's subscriber"
                                                            : "one pass";
    const char *path = NULL;
    FILE *out = NULL;

    for (int i = 1; i + 1 < argc; i++) {
        if (0 == strcmp(argv[i], "--dump")) path = argv[i + 1];
    }
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &nprocs);
    if (0 == rank && NULL != path && NULL == (out = fopen(path, "w"))) {
        TU_CHECK(0, "cannot write %s", path);
    }
    for (int flavor = 0; flavor < TU_NFLAVORS_ALL; flavor++) {
        if (!tu_flavor_or_all(flavor)) continue;
        for (int c = 0; c < NCASES; c++) {
            char what[96];

            run_case(flavor, c, dumps);
            snprintf(what, sizeof(what), "%s window, info case %d, %s", tu_flavor_names[flavor],
                     c, way);
            check_values(c, dumps, what);
            for (int s = 0; NULL != out && s < NSTEPS; s++) {
                fprintf(out, "## %s window, info case %d, %s\n%s", tu_flavor_names[flavor], c,
                        step_names[s], dumps[s]);
            }
        }
    }
    if (NULL != out) fclose(out);
    int rc = tu_finish("info_state");
    MPI_Finalize();
    return rc;
}
