/* at_errors: wrong synchronization sequences with MPI_ERRORS_RETURN must
 * return error class MPI_ERR_RMA_SYNC and leave the window usable.
 *
 *  1. MPI_Win_complete without MPI_Win_start
 *  2. MPI_Put (and MPI_Get, MPI_Accumulate) outside any epoch: on a fresh
 *     window, after lock/unlock and after a closing fence (MPI_MODE_NOSUCCEED);
 *     the target must be unchanged
 *  3. MPI_Win_fence inside a lock epoch (after MPI_Win_lock, before unlock);
 *     the lock epoch must still work and unlock
 *  4. MPI_Win_wait without MPI_Win_post
 *  5. MPI_Win_unlock without MPI_Win_lock
 * After each sequence the window must still work for a fence epoch, a
 * lock_all epoch and a post/start/complete/wait epoch (values checked).
 */
#include "testutil.h"
#include <stdint.h>

static int me, nprocs, right, left;
static int64_t stamp = 1000;
static MPI_Group nbr_group;

enum { SLOT_FENCE, SLOT_LOCK, SLOT_PSCW, SLOT_STRAY, NSLOT };

static void expect_sync_err(int rc, const char *what, const char *where)
{
    int cls = MPI_SUCCESS;
    if (MPI_SUCCESS != rc) MPI_Error_class(rc, &cls);
    TU_CHECK(MPI_ERR_RMA_SYNC == cls, "%s on %s: error class %d, expected MPI_ERR_RMA_SYNC (%d)%s", what, where,
             cls, MPI_ERR_RMA_SYNC, MPI_SUCCESS == rc ? ": the call succeeded" : "");
}

static int64_t local_read(tu_win_t *w, int slot)
{
    int64_t v;
    TU_MPI(MPI_Win_lock(MPI_LOCK_SHARED, me, 0, w->win));
    v = ((int64_t *)w->base)[slot];
    TU_MPI(MPI_Win_unlock(me, w->win));
    return v;
}

/* the window still works: fence, lock_all and PSCW epochs move the right values */
static void still_usable(tu_win_t *w, const char *after)
{
    int64_t v = stamp * 10 + me, got = -1;
    int rc;
    stamp++;
    MPI_Barrier(MPI_COMM_WORLD);

    rc = MPI_Win_fence(0, w->win);
    TU_CHECK(MPI_SUCCESS == rc, "after %s: opening fence failed (%d)", after, rc);
    rc = MPI_Put(&v, 1, MPI_INT64_T, right, tu_disp(w, right, SLOT_FENCE), 1, MPI_INT64_T, w->win);
    TU_CHECK(MPI_SUCCESS == rc, "after %s: put in a fence epoch failed (%d)", after, rc);
    rc = MPI_Win_fence(MPI_MODE_NOSUCCEED, w->win);
    TU_CHECK(MPI_SUCCESS == rc, "after %s: closing fence failed (%d)", after, rc);
    got = ((int64_t *)w->base)[SLOT_FENCE];
    TU_CHECK(got == (stamp - 1) * 10 + left, "after %s: fence epoch put %lld, expected %lld", after, (long long)got,
             (long long)((stamp - 1) * 10 + left));
    MPI_Barrier(MPI_COMM_WORLD);

    rc = MPI_Win_lock_all(0, w->win);
    TU_CHECK(MPI_SUCCESS == rc, "after %s: MPI_Win_lock_all failed (%d)", after, rc);
    if (MPI_SUCCESS == rc) {
        TU_MPI(MPI_Accumulate(&v, 1, MPI_INT64_T, right, tu_disp(w, right, SLOT_LOCK), 1, MPI_INT64_T, MPI_REPLACE,
                              w->win));
        TU_MPI(MPI_Win_flush(right, w->win));
        TU_MPI(MPI_Get(&got, 1, MPI_INT64_T, right, tu_disp(w, right, SLOT_LOCK), 1, MPI_INT64_T, w->win));
        TU_MPI(MPI_Win_unlock_all(w->win));
        TU_CHECK(got == v, "after %s: lock_all epoch read back %lld, expected %lld", after, (long long)got,
                 (long long)v);
    }
    MPI_Barrier(MPI_COMM_WORLD);

    rc = MPI_Win_post(nbr_group, 0, w->win);
    TU_CHECK(MPI_SUCCESS == rc, "after %s: MPI_Win_post failed (%d)", after, rc);
    rc = MPI_Win_start(nbr_group, 0, w->win);
    TU_CHECK(MPI_SUCCESS == rc, "after %s: MPI_Win_start failed (%d)", after, rc);
    rc = MPI_Put(&v, 1, MPI_INT64_T, right, tu_disp(w, right, SLOT_PSCW), 1, MPI_INT64_T, w->win);
    TU_CHECK(MPI_SUCCESS == rc, "after %s: put in a PSCW epoch failed (%d)", after, rc);
    rc = MPI_Win_complete(w->win);
    TU_CHECK(MPI_SUCCESS == rc, "after %s: MPI_Win_complete failed (%d)", after, rc);
    rc = MPI_Win_wait(w->win);
    TU_CHECK(MPI_SUCCESS == rc, "after %s: MPI_Win_wait failed (%d)", after, rc);
    got = ((int64_t *)w->base)[SLOT_PSCW];
    TU_CHECK(got == (stamp - 1) * 10 + left, "after %s: PSCW epoch put %lld, expected %lld", after, (long long)got,
             (long long)((stamp - 1) * 10 + left));
    MPI_Barrier(MPI_COMM_WORLD);
}

/* RMA calls outside any epoch: all must fail and SLOT_STRAY must stay 0 */
static void stray_rma(tu_win_t *w, const char *where)
{
    int64_t v = 99, g = -5;
    char what[128];
    int rc;
    rc = MPI_Put(&v, 1, MPI_INT64_T, right, tu_disp(w, right, SLOT_STRAY), 1, MPI_INT64_T, w->win);
    snprintf(what, sizeof(what), "MPI_Put outside any epoch (%s)", where);
    expect_sync_err(rc, what, tu_flavor_names[w->flavor]);
    rc = MPI_Get(&g, 1, MPI_INT64_T, right, tu_disp(w, right, SLOT_STRAY), 1, MPI_INT64_T, w->win);
    snprintf(what, sizeof(what), "MPI_Get outside any epoch (%s)", where);
    expect_sync_err(rc, what, tu_flavor_names[w->flavor]);
    rc = MPI_Accumulate(&v, 1, MPI_INT64_T, right, tu_disp(w, right, SLOT_STRAY), 1, MPI_INT64_T, MPI_SUM, w->win);
    snprintf(what, sizeof(what), "MPI_Accumulate outside any epoch (%s)", where);
    expect_sync_err(rc, what, tu_flavor_names[w->flavor]);
    MPI_Barrier(MPI_COMM_WORLD);
    TU_CHECK(0 == local_read(w, SLOT_STRAY), "%s: a put/accumulate outside any epoch (%s) changed the target",
             tu_flavor_names[w->flavor], where);
    MPI_Barrier(MPI_COMM_WORLD);
}

int main(int argc, char **argv)
{
    int flavor, rc;
    MPI_Group world_group;
    tu_parse_args(argc, argv);
    tu_init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &me);
    MPI_Comm_size(MPI_COMM_WORLD, &nprocs);
    right = (me + 1) % nprocs;
    left = (me - 1 + nprocs) % nprocs;
    {
        int nbrs[2] = { left, right };
        MPI_Comm_group(MPI_COMM_WORLD, &world_group);
        MPI_Group_incl(world_group, left == right ? 1 : 2, nbrs, &nbr_group);
    }

    for (flavor = 0; flavor < TU_NFLAVORS; flavor++) {
        tu_win_t w;
        const char *fl = tu_flavor_names[flavor];
        if (!tu_flavor_enabled(flavor)) continue;
        tu_win_create(flavor, NSLOT * sizeof(int64_t), sizeof(int64_t), MPI_INFO_NULL, MPI_COMM_WORLD, &w);

        /* 1 */
        rc = MPI_Win_complete(w.win);
        expect_sync_err(rc, "MPI_Win_complete without MPI_Win_start", fl);
        still_usable(&w, "MPI_Win_complete without start");

        /* 2 */
        {
            /* fresh-window case on a second window that has seen no epoch yet */
            tu_win_t w2;
            tu_win_create(flavor, NSLOT * sizeof(int64_t), sizeof(int64_t), MPI_INFO_NULL, MPI_COMM_WORLD, &w2);
            stray_rma(&w2, "fresh window");
            still_usable(&w2, "RMA on a fresh window");
            tu_win_free(&w2);
        }
        TU_MPI(MPI_Win_lock(MPI_LOCK_SHARED, right, 0, w.win));
        TU_MPI(MPI_Win_unlock(right, w.win));
        stray_rma(&w, "after lock/unlock");
        still_usable(&w, "RMA after lock/unlock");
        /* still_usable ends with PSCW; a closing fence ends a fence epoch */
        TU_MPI(MPI_Win_fence(0, w.win));
        TU_MPI(MPI_Win_fence(MPI_MODE_NOSUCCEED, w.win));
        stray_rma(&w, "after a NOSUCCEED fence");
        still_usable(&w, "RMA after a NOSUCCEED fence");

        /* 3 */
        {
            int64_t v = 7, got = -1;
            TU_MPI(MPI_Win_lock(MPI_LOCK_SHARED, right, 0, w.win));
            rc = MPI_Win_fence(0, w.win);
            expect_sync_err(rc, "MPI_Win_fence inside a lock epoch", fl);
            rc = MPI_Accumulate(&v, 1, MPI_INT64_T, right, tu_disp(&w, right, SLOT_LOCK), 1, MPI_INT64_T,
                                MPI_REPLACE, w.win);
            TU_CHECK(MPI_SUCCESS == rc, "on %s: accumulate in the lock epoch after the failed fence: %d", fl, rc);
            rc = MPI_Win_flush(right, w.win);
            TU_CHECK(MPI_SUCCESS == rc, "on %s: flush in the lock epoch after the failed fence: %d", fl, rc);
            rc = MPI_Get(&got, 1, MPI_INT64_T, right, tu_disp(&w, right, SLOT_LOCK), 1, MPI_INT64_T, w.win);
            TU_CHECK(MPI_SUCCESS == rc, "on %s: get in the lock epoch after the failed fence: %d", fl, rc);
            rc = MPI_Win_unlock(right, w.win);
            TU_CHECK(MPI_SUCCESS == rc, "on %s: MPI_Win_unlock after the failed fence: %d", fl, rc);
            TU_CHECK(7 == got, "on %s: lock epoch after the failed fence read %lld, expected 7", fl, (long long)got);
            still_usable(&w, "MPI_Win_fence inside a lock epoch");
        }

        /* 4 */
        rc = MPI_Win_wait(w.win);
        expect_sync_err(rc, "MPI_Win_wait without MPI_Win_post", fl);
        still_usable(&w, "MPI_Win_wait without post");

        /* 5 */
        rc = MPI_Win_unlock(right, w.win);
        expect_sync_err(rc, "MPI_Win_unlock without MPI_Win_lock", fl);
        still_usable(&w, "MPI_Win_unlock without lock");

        /* 6: assert bits MPI does not define */
        rc = MPI_Win_fence(0x40000000, w.win);
        TU_CHECK(MPI_ERR_ASSERT == tu_err_class(rc), "MPI_Win_fence with a bad assert on %s: "
                 "error class %d, expected MPI_ERR_ASSERT", fl, tu_err_class(rc));
        rc = MPI_Win_post(nbr_group, 0x40000000, w.win);
        TU_CHECK(MPI_ERR_ASSERT == tu_err_class(rc), "MPI_Win_post with a bad assert on %s: "
                 "error class %d, expected MPI_ERR_ASSERT", fl, tu_err_class(rc));
        rc = MPI_Win_start(nbr_group, MPI_MODE_NOPUT, w.win);
        TU_CHECK(MPI_ERR_ASSERT == tu_err_class(rc), "MPI_Win_start with MPI_MODE_NOPUT on %s: "
                 "error class %d, expected MPI_ERR_ASSERT", fl, tu_err_class(rc));
        still_usable(&w, "bad asserts");

        tu_win_free(&w);
    }
    MPI_Group_free(&nbr_group);
    MPI_Group_free(&world_group);
    rc = tu_finish("at_errors");
    MPI_Finalize();
    return rc;
}
