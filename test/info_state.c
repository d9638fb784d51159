/* info_state: what MPI_Win_get_info reports, with the window's info keys
 * subscribed in one pass (osc_ucxx_info_direct=1, osc_ucxx_info.c) and
 * through Open MPI's subscriber (=0), switched between windows through the
 * MPI_T control variable.  For every flavor (and MPI_Win_allocate_shared)
 * and each creation info below:
 *   1. get_info right after creation,
 *   2. after MPI_Win_set_info with our keys changed, a key we do not know
 *      and a value to be rewritten,
 *   3. after an empty MPI_Win_set_info,
 *   4. of a duplicate (MPIX_Win_dup_with_info) with overrides, and of the
 *      duplicate after its own set_info,
 * each as the ordered list of key=value pairs: the two ways must agree
 * exactly, pair by pair and in order.  Creation infos: none; our keys with
 * values to keep, to rewrite and to reject (an ordering list with an
 * unknown item, a granularity to round); the longest value
 * MPI_Info_set takes; keys we do not know and one that
 * looks like a saved key (_OMPI_IN_no_locks).  Independently of the
 * comparison, the defaults and what set_info changes are checked against
 * the values the window honours (mpi_win_order, mpi_win_scope,
 * accumulate_ordering, no_locks, am_pipeline_unit), so that both ways
 * being wrong alike fails too.  On Open MPI 4.1 the variable must read 1
 * after MPI_Init (the component's probe found the one pass possible), so
 * the comparison is never Open MPI's subscriber against itself.  Without
 * the control variable (a build without it) only the value checks run. */
#include "testutil.h"
#include "mpix_ucxx.h"

#define DUMP_MAX 8192

static int rank, nprocs;
static MPI_T_cvar_handle direct_handle;
static int have_direct;

/* The MPI_T handle of osc_ucxx_info_direct, if there is one. */
static void find_direct(void)
{
    int n = 0, provided;

    TU_MPI(MPI_T_init_thread(MPI_THREAD_SINGLE, &provided));
    TU_MPI(MPI_T_cvar_get_num(&n));
    for (int i = 0; i < n; i++) {
        char name[256], desc[2048];
        int nlen = sizeof(name), dlen = sizeof(desc), verb, bind, scope, count;
        MPI_Datatype dt;
        MPI_T_enum en;

        if (MPI_SUCCESS != MPI_T_cvar_get_info(i, name, &nlen, &verb, &dt, &en, desc, &dlen,
                                               &bind, &scope)) {
            continue;
        }
        if (0 == strcmp(name, "osc_ucxx_info_direct")) {
            unsigned char initial[8] = {0};   /* a bool (little-endian: an int's low byte too) */

            TU_MPI(MPI_T_cvar_handle_alloc(i, NULL, &direct_handle, &count));
            have_direct = 1;
#if defined(OMPI_MAJOR_VERSION) && OMPI_MAJOR_VERSION < 5
            /* on 4.1 the probe at init must have found the one pass
             * possible (else both ways below are Open MPI's) */
            TU_MPI(MPI_T_cvar_read(direct_handle, initial));
            TU_CHECK(1 == initial[0], "osc_ucxx_info_direct reads %d after MPI_Init: the "
                     "one-pass subscription is off", initial[0]);
#else
            (void) initial;
#endif
            return;
        }
    }
}

static void set_direct(int on)
{
    int v = on;
    unsigned char back[8] = {0xff};   /* a bool (little-endian: an int's low byte too) */

    TU_MPI(MPI_T_cvar_write(direct_handle, &v));
    TU_MPI(MPI_T_cvar_read(direct_handle, back));
    TU_CHECK(back[0] == on, "osc_ucxx_info_direct reads %d after writing %d", back[0], on);
}

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
    static char ways[2][NSTEPS][DUMP_MAX];

    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &nprocs);
    find_direct();
    if (0 == rank && !have_direct) {
        printf("info_state: no osc_ucxx_info_direct control variable: values only\n");
    }

    for (int flavor = 0; flavor < TU_NFLAVORS_ALL; flavor++) {
        if (!tu_flavor_or_all(flavor)) continue;
        for (int c = 0; c < NCASES; c++) {
            char what[96];

            for (int way = have_direct ? 0 : 1; way < 2; way++) {
                if (have_direct) set_direct(way);
                run_case(flavor, c, ways[way]);
                snprintf(what, sizeof(what), "%s window, info case %d, %s", tu_flavor_names[flavor],
                         c, way ? "one pass" : "Open MPI's subscriber");
                check_values(c, ways[way], what);
            }
            for (int s = 0; have_direct && s < NSTEPS; s++) {
                TU_CHECK(0 == strcmp(ways[0][s], ways[1][s]),
                         "%s window, info case %d, %s: one pass reports\n%s-- Open MPI's "
                         "subscriber reports\n%s--", tu_flavor_names[flavor], c, step_names[s],
                         ways[1][s], ways[0][s]);
            }
        }
    }
    if (have_direct) {
        set_direct(1);
        MPI_T_cvar_handle_free(&direct_handle);
    }
    MPI_T_finalize();
    int rc = tu_finish("info_state");
    MPI_Finalize();
    return rc;
}
