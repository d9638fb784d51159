/* acc_info: accumulate-related info keys reported by MPI_Win_get_info.
 *
 *  - no info at creation: accumulate_ordering is "rar,raw,war,waw" and
 *    accumulate_ops is "same_op_no_op" (the MPI-3.1 defaults, 11.2.1);
 *  - accumulate_ordering=none at creation: reported as "none";
 *  - accumulate_ops=same_op at creation: reported as "same_op";
 *  - accumulate_ordering=waw (a subset) at creation: reported as "waw";
 *  - mpi_accumulate_granularity (MPI 4.1): without the key, the bytes one
 *    accumulate lock covers (256: osc_ucxx_acc_granularity); set, as given
 *    (Open MPI 4.1 reports the hints a user set as given, like
 *    accumulate_ordering=waw above), and the window still accumulates right
 *    with the rounded block (128 for 100, the 8-byte minimum for 1);
 *  - MPI_Win_set_info after creation: a valid ordering list ("rar,waw") is
 *    reported as given; a malformed one ("junk") reports what the window
 *    does (Open MPI 5.0, which reports what the component answers), or as
 *    given (4.1, which reports every hint as the user set it); the
 *    granularity is fixed at creation, so a new one is ignored and never
 *    reported as in use; the window still accumulates right;
 *  - on each window, accumulates still give the right values (with "none",
 *    after a flush): every rank adds to all ranks' counters with MPI_SUM.
 *
 * EXPECTED TO FAIL on the stock components of Open MPI 4.1.4: its
 * MPI_Win_get_info only returns keys the user set at creation, so the
 * default values are not reported.
 */
#include "testutil.h"
#include <stdint.h>

static int me, nprocs;

static void check_key(MPI_Win win, const char *key, const char *expected, const char *what)
{
    MPI_Info info;
    char value[MPI_MAX_INFO_VAL + 1];
    int flag = 0, rc;
    rc = MPI_Win_get_info(win, &info);
    TU_CHECK(MPI_SUCCESS == rc, "%s: MPI_Win_get_info failed", what);
    if (MPI_SUCCESS != rc) return;
    MPI_Info_get(info, key, MPI_MAX_INFO_VAL, value, &flag);
    TU_CHECK(flag, "%s: key %s not reported", what, key);
    if (flag) TU_CHECK(0 == strcmp(value, expected), "%s: %s = \"%s\", expected \"%s\"", what, key, value, expected);
    MPI_Info_free(&info);
}

/* `key` is not reported as `value` (absent, or another value) */
static void check_not(MPI_Win win, const char *key, const char *value, const char *what)
{
    MPI_Info info;
    char got[MPI_MAX_INFO_VAL + 1];
    int flag = 0;

    TU_MPI(MPI_Win_get_info(win, &info));
    MPI_Info_get(info, key, MPI_MAX_INFO_VAL, got, &flag);
    TU_CHECK(!flag || 0 != strcmp(got, value), "%s: %s reported as \"%s\"", what, key, value);
    MPI_Info_free(&info);
}

/* all ranks add (rank+1) to slot 0 and 1 of every rank, twice, flushing in between */
static void use_window(tu_win_t *w, const char *what)
{
    int t;
    int64_t v = me + 1, expected = 2 * (int64_t)nprocs * (nprocs + 1) / 2;
    int64_t *base = w->base;
    TU_MPI(MPI_Win_lock(MPI_LOCK_EXCLUSIVE, me, 0, w->win));
    base[0] = base[1] = 0;
    TU_MPI(MPI_Win_unlock(me, w->win));
    MPI_Barrier(MPI_COMM_WORLD);
    TU_MPI(MPI_Win_lock_all(0, w->win));
    for (t = 0; t < nprocs; t++) {
        TU_MPI(MPI_Accumulate(&v, 1, MPI_INT64_T, t, tu_disp(w, t, 0), 1, MPI_INT64_T, MPI_SUM, w->win));
        TU_MPI(MPI_Accumulate(&v, 1, MPI_INT64_T, t, tu_disp(w, t, 1), 1, MPI_INT64_T, MPI_SUM, w->win));
    }
    TU_MPI(MPI_Win_flush_all(w->win));
    for (t = 0; t < nprocs; t++) {
        int64_t r = -1;
        TU_MPI(MPI_Fetch_and_op(&v, &r, MPI_INT64_T, t, tu_disp(w, t, 0), MPI_SUM, w->win));
        TU_MPI(MPI_Accumulate(&v, 1, MPI_INT64_T, t, tu_disp(w, t, 1), 1, MPI_INT64_T, MPI_SUM, w->win));
        TU_MPI(MPI_Win_flush(t, w->win));
        TU_CHECK(r >= v * 1 && r <= expected - v, "%s: fetched %lld outside [%lld, %lld]", what, (long long)r,
                 (long long)v, (long long)(expected - v));
    }
    TU_MPI(MPI_Win_unlock_all(w->win));
    MPI_Barrier(MPI_COMM_WORLD);
    TU_MPI(MPI_Win_lock(MPI_LOCK_SHARED, me, 0, w->win));
    TU_CHECK(base[0] == expected && base[1] == expected, "%s: counters %lld %lld, expected %lld", what,
             (long long)base[0], (long long)base[1], (long long)expected);
    TU_MPI(MPI_Win_unlock(me, w->win));
    MPI_Barrier(MPI_COMM_WORLD);
}

/* A window of `flavor` made with info key=val (none when key is NULL): the
 * keys it reports (a NULL expectation is not checked), then the accumulates. */
static void info_case(int flavor, const char *key, const char *val, const char *ordering,
                      const char *ops, const char *granularity)
{
    MPI_Info info = key ? tu_info_new(key, val, NULL) : MPI_INFO_NULL;
    char what[96];
    tu_win_t w;

    if (key) snprintf(what, sizeof(what), "%s, %s=%s", tu_flavor_names[flavor], key, val);
    else snprintf(what, sizeof(what), "%s, no info", tu_flavor_names[flavor]);
    tu_win_create(flavor, 2 * sizeof(int64_t), sizeof(int64_t), info, MPI_COMM_WORLD, &w);
    if (MPI_INFO_NULL != info) MPI_Info_free(&info);
    if (ordering) check_key(w.win, "accumulate_ordering", ordering, what);
    if (ops) check_key(w.win, "accumulate_ops", ops, what);
    if (granularity) check_key(w.win, "mpi_accumulate_granularity", granularity, what);
    use_window(&w, what);
    tu_win_free(&w);
}

static void set_key(MPI_Win win, const char *key, const char *val)
{
    MPI_Info info = tu_info_new(key, val, NULL);
    TU_MPI(MPI_Win_set_info(win, info));
    MPI_Info_free(&info);
}

/* Hints changed after creation (see the header). */
static void set_info_case(int flavor)
{
    char what[96];
    tu_win_t w;
    int v5 = OMPI_MAJOR_VERSION >= 5;

    snprintf(what, sizeof(what), "%s, MPI_Win_set_info", tu_flavor_names[flavor]);
    tu_win_create(flavor, 2 * sizeof(int64_t), sizeof(int64_t), MPI_INFO_NULL, MPI_COMM_WORLD, &w);
    set_key(w.win, "accumulate_ordering", "rar,waw");
    check_key(w.win, "accumulate_ordering", "rar,waw", what);
    set_key(w.win, "accumulate_ordering", "junk");
    check_key(w.win, "accumulate_ordering", v5 ? "rar,raw,war,waw" : "junk", what);
    set_key(w.win, "mpi_accumulate_granularity", "1000");   /* fixed at creation: 256 */
    check_not(w.win, "mpi_accumulate_granularity", "1000", what);
    use_window(&w, what);
    tu_win_free(&w);
}

int main(int argc, char **argv)
{
    int flavor, rc;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &me);
    MPI_Comm_size(MPI_COMM_WORLD, &nprocs);

    for (flavor = 0; flavor < TU_NFLAVORS; flavor++) {
        if (!tu_flavor_enabled(flavor)) continue;
        info_case(flavor, NULL, NULL, "rar,raw,war,waw", "same_op_no_op", "256");
        info_case(flavor, "accumulate_ordering", "none", "none", "same_op_no_op", NULL);
        info_case(flavor, "accumulate_ops", "same_op", "rar,raw,war,waw", "same_op", NULL);
        info_case(flavor, "accumulate_ordering", "waw", "waw", NULL, NULL);
        info_case(flavor, "mpi_accumulate_granularity", "100", NULL, NULL, "100");
        info_case(flavor, "mpi_accumulate_granularity", "1", NULL, NULL, "1");
        set_info_case(flavor);
    }
    rc = tu_finish("acc_info");
    MPI_Finalize();
    return rc;
}
