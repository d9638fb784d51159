/* Window info keys and attributes.
 * 1. A window created with no_locks, same_size and same_disp_unit set to
 *    "true": MPI_Win_get_info must report each of them with value "true".
 *    The window is then used with fence epochs (no locks allowed) and the
 *    data checked.  A window created with MPI_INFO_NULL must not report any
 *    of these keys as "true".
 * 2. Attributes of a window whose size and disp_unit differ per rank
 *    (size 40*(rank+1)+8 bytes, disp_unit 4 on odd and 8 on even ranks):
 *    MPI_WIN_BASE, MPI_WIN_SIZE, MPI_WIN_DISP_UNIT are this rank's values
 *    (dynamic: MPI_BOTTOM, 0, 1), MPI_WIN_CREATE_FLAVOR matches the flavor,
 *    MPI_WIN_MODEL is MPI_WIN_UNIFIED (what a UCX-based component provides).
 *    Data check: every rank puts at displacement 3 of the next rank, whose
 *    disp_unit the origin must apply (byte 12 or 24 of the target). */
#include "testutil.h"
#include <stdint.h>

static int rank, nprocs;

static void check_key(MPI_Info info, const char *key, const char *expect, const char *flavor)
{
    char value[MPI_MAX_INFO_VAL + 1];
    int flag = 0;
    MPI_Info_get(info, key, MPI_MAX_INFO_VAL, value, &flag);
    if (expect) {
        TU_CHECK(flag && 0 == strcmp(value, expect), "%s window: info key %s is %s%s%s, expected \"%s\"",
                 flavor, key, flag ? "\"" : "", flag ? value : "missing", flag ? "\"" : "", expect);
    } else {
        TU_CHECK(!flag || 0 != strcmp(value, "true"),
                 "%s window created without info reports %s = \"%s\"", flavor, key, value);
    }
}

static void info_keys(int flavor)
{
    const char *fname = tu_flavor_names[flavor];
    const char *keys[3] = { "no_locks", "same_size", "same_disp_unit" };
    MPI_Info info, got;
    tu_win_t w;
    const int n = 32;   /* uint64 per rank */

    MPI_Info_create(&info);
    for (int k = 0; k < 3; k++) MPI_Info_set(info, keys[k], "true");
    tu_win_create(flavor, n * sizeof(uint64_t), sizeof(uint64_t), info, MPI_COMM_WORLD, &w);
    MPI_Info_free(&info);
    TU_MPI(MPI_Win_get_info(w.win, &got));
    for (int k = 0; k < 3; k++) check_key(got, keys[k], "true", fname);
    MPI_Info_free(&got);

    /* use it: fence put to next, fence get from prev */
    int next = (rank + 1) % nprocs, prev = (rank + nprocs - 1) % nprocs;
    uint64_t buf[32], res[32], *win = w.base;
    for (int i = 0; i < n; i++) buf[i] = ((uint64_t) rank << 32) + i * 977 + 1;
    TU_MPI(MPI_Win_fence(0, w.win));
    TU_MPI(MPI_Put(buf, n, MPI_UINT64_T, next, tu_disp(&w, next, 0), n, MPI_UINT64_T, w.win));
    TU_MPI(MPI_Win_fence(0, w.win));
    int bad = 0;
    for (int i = 0; i < n; i++) if (win[i] != ((uint64_t) prev << 32) + i * 977 + 1) bad++;
    TU_CHECK(0 == bad, "%s no_locks window: %d wrong values after fence put", fname, bad);
    memset(res, 0, sizeof(res));
    TU_MPI(MPI_Get(res, n, MPI_UINT64_T, prev, tu_disp(&w, prev, 0), n, MPI_UINT64_T, w.win));
    TU_MPI(MPI_Win_fence(0, w.win));
    bad = 0;   /* prev's window holds what prev's prev put */
    int pp = (prev + nprocs - 1) % nprocs;
    for (int i = 0; i < n; i++) if (res[i] != ((uint64_t) pp << 32) + i * 977 + 1) bad++;
    TU_CHECK(0 == bad, "%s no_locks window: %d wrong values after fence get", fname, bad);
    TU_MPI(MPI_Win_fence(MPI_MODE_NOSUCCEED, w.win));
    /* tu_win_free detaches dynamic memory; no locks are involved */
    tu_win_free(&w);

    /* without info: none of the keys may claim "true" */
    tu_win_create(flavor, n * sizeof(uint64_t), sizeof(uint64_t), MPI_INFO_NULL, MPI_COMM_WORLD, &w);
    TU_MPI(MPI_Win_get_info(w.win, &got));
    for (int k = 0; k < 3; k++) check_key(got, keys[k], NULL, fname);
    MPI_Info_free(&got);
    tu_win_free(&w);
}

static void attributes(int flavor)
{
    const char *fname = tu_flavor_names[flavor];
    MPI_Aint size = 40 * (rank + 1) + 8;
    int du = rank % 2 ? 4 : 8, flag;
    tu_win_t w;
    tu_win_create(flavor, size, du, MPI_INFO_NULL, MPI_COMM_WORLD, &w);

    void *base = (void *) 1;
    MPI_Aint *psize = NULL;
    int *pdu = NULL, *pflavor = NULL, *pmodel = NULL;

    flag = 0;
    TU_MPI(MPI_Win_get_attr(w.win, MPI_WIN_BASE, &base, &flag));
    TU_CHECK(flag, "%s: MPI_WIN_BASE not set", fname);
    if (flag) {
        void *exp = TU_DYNAMIC == flavor ? MPI_BOTTOM : w.base;
        TU_CHECK(base == exp, "%s: MPI_WIN_BASE %p, expected %p", fname, base, exp);
    }
    flag = 0;
    TU_MPI(MPI_Win_get_attr(w.win, MPI_WIN_SIZE, &psize, &flag));
    TU_CHECK(flag && psize, "%s: MPI_WIN_SIZE not set", fname);
    if (flag && psize) {
        MPI_Aint exp = TU_DYNAMIC == flavor ? 0 : size;
        TU_CHECK(*psize == exp, "%s: MPI_WIN_SIZE %ld, expected %ld", fname, (long) *psize, (long) exp);
    }
    flag = 0;
    TU_MPI(MPI_Win_get_attr(w.win, MPI_WIN_DISP_UNIT, &pdu, &flag));
    TU_CHECK(flag && pdu, "%s: MPI_WIN_DISP_UNIT not set", fname);
    if (flag && pdu) {
        int exp = TU_DYNAMIC == flavor ? 1 : du;
        TU_CHECK(*pdu == exp, "%s: MPI_WIN_DISP_UNIT %d, expected %d", fname, *pdu, exp);
    }
    flag = 0;
    TU_MPI(MPI_Win_get_attr(w.win, MPI_WIN_CREATE_FLAVOR, &pflavor, &flag));
    TU_CHECK(flag && pflavor, "%s: MPI_WIN_CREATE_FLAVOR not set", fname);
    if (flag && pflavor) {
        int exp = TU_CREATE == flavor ? MPI_WIN_FLAVOR_CREATE
                : TU_ALLOCATE == flavor ? MPI_WIN_FLAVOR_ALLOCATE : MPI_WIN_FLAVOR_DYNAMIC;
        TU_CHECK(*pflavor == exp, "%s: MPI_WIN_CREATE_FLAVOR %d, expected %d", fname, *pflavor, exp);
    }
    flag = 0;
    TU_MPI(MPI_Win_get_attr(w.win, MPI_WIN_MODEL, &pmodel, &flag));
    TU_CHECK(flag && pmodel, "%s: MPI_WIN_MODEL not set", fname);
    if (flag && pmodel)
        TU_CHECK(*pmodel == MPI_WIN_UNIFIED, "%s: MPI_WIN_MODEL %d, expected MPI_WIN_UNIFIED (%d)",
                 fname, *pmodel, MPI_WIN_UNIFIED);

    /* per-rank disp_unit applied by the origin: put 4 bytes at displacement 3 of next */
    int next = (rank + 1) % nprocs, prev = (rank + nprocs - 1) % nprocs;
    int tdu = next % 2 ? 4 : 8, mydu = du;
    uint32_t v = 0xC0DE0000u + rank;
    MPI_Aint tdisp = TU_DYNAMIC == flavor ? w.remote[next] + 3 * tdu : 3;
    TU_MPI(MPI_Win_lock(MPI_LOCK_EXCLUSIVE, next, 0, w.win));
    TU_MPI(MPI_Put(&v, 4, MPI_BYTE, next, tdisp, 4, MPI_BYTE, w.win));
    TU_MPI(MPI_Win_unlock(next, w.win));
    MPI_Barrier(MPI_COMM_WORLD);
    TU_MPI(MPI_Win_lock(MPI_LOCK_SHARED, rank, 0, w.win));
    {
        const uint8_t *b = w.base;
        uint32_t got;
        int bad = 0;
        memcpy(&got, b + 3 * mydu, 4);
        TU_CHECK(got == 0xC0DE0000u + prev, "%s: byte %d (disp 3 x disp_unit %d) holds 0x%x, expected 0x%x",
                 fname, 3 * mydu, mydu, got, 0xC0DE0000u + prev);
        for (MPI_Aint i = 0; i < size; i++)
            if ((i < 3 * mydu || i >= 3 * mydu + 4) && b[i]) bad++;
        TU_CHECK(0 == bad, "%s: %d bytes changed outside the put (disp_unit %d)", fname, bad, mydu);
    }
    TU_MPI(MPI_Win_unlock(rank, w.win));
    MPI_Barrier(MPI_COMM_WORLD);
    tu_win_free(&w);
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &nprocs);
    for (int flavor = 0; flavor < TU_NFLAVORS; flavor++) {
        if (!tu_flavor_enabled(flavor)) continue;
        info_keys(flavor);
        attributes(flavor);
    }
    int rc = tu_finish("info");
    MPI_Finalize();
    return rc;
}
