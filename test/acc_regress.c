/* acc_regress: regression checks for bugs of the stock osc/ucx component.
 *
 *  - MPI_Fetch_and_op(MPI_DOUBLE, MPI_SUM): 1.5 + 1.0 must give 2.5 (stock
 *    osc/ucx adds the bit patterns as integers), also MPI_FLOAT, MPI_PROD,
 *    MPI_MAX, MPI_MIN and MPI_REPLACE on floating point values.
 *  - MPI_Fetch_and_op and MPI_Accumulate on MPI_SHORT (and other 1/2 byte
 *    integers) must update the target (stock osc/ucx leaves it unchanged),
 *    without touching the neighbouring bytes.
 *
 * EXPECTED TO FAIL on the stock osc/ucx component (that is what it checks).
 * Every rank r updates rank r+1 (ring) under a shared lock; fetched value,
 * new target value and the neighbours are checked.
 *
 * Argument --no-direct: run with osc/ucxx's internal setting direct=0 (tu_tune) (the UCX RMA/AMO path).
 */
#include "testutil.h"
#include <stdint.h>

static int me, nprocs;

/* window layout (bytes): 16 slots of 32 bytes; the value sits at offset 8
 * of its slot, the bytes around it are sentinels */
#define SLOT 32
#define VOFF 8
#define NSLOTS 16
#define SENT 0x6B

typedef struct {
    const char *name;
    MPI_Datatype dt;
    MPI_Op op;
    const char *opname;
    int size;
    double init, arg, expect; /* as doubles; integer types use the integral values */
    int fop;                  /* 1: MPI_Fetch_and_op, 0: MPI_Accumulate */
} rcase_t;

static void store(MPI_Datatype dt, void *p, double v)
{
    if (MPI_DOUBLE == dt) *(double *)p = v;
    else if (MPI_FLOAT == dt) *(float *)p = (float)v;
    else if (MPI_SHORT == dt || MPI_INT16_T == dt) *(int16_t *)p = (int16_t)v;
    else if (MPI_UNSIGNED_SHORT == dt || MPI_UINT16_T == dt) *(uint16_t *)p = (uint16_t)v;
    else if (MPI_SIGNED_CHAR == dt || MPI_INT8_T == dt) *(int8_t *)p = (int8_t)v;
    else if (MPI_UNSIGNED_CHAR == dt || MPI_UINT8_T == dt) *(uint8_t *)p = (uint8_t)v;
}

static double load(MPI_Datatype dt, const void *p)
{
    if (MPI_DOUBLE == dt) return *(const double *)p;
    if (MPI_FLOAT == dt) return *(const float *)p;
    if (MPI_SHORT == dt || MPI_INT16_T == dt) return *(const int16_t *)p;
    if (MPI_UNSIGNED_SHORT == dt || MPI_UINT16_T == dt) return *(const uint16_t *)p;
    if (MPI_SIGNED_CHAR == dt || MPI_INT8_T == dt) return *(const int8_t *)p;
    if (MPI_UNSIGNED_CHAR == dt || MPI_UINT8_T == dt) return *(const uint8_t *)p;
    return -12345;
}

#define C(dt, op, size, init, arg, exp, fop) { #dt, dt, op, #op, size, init, arg, exp, fop }


int main(int argc, char **argv)
{
    int flavor, k, round;
    tu_parse_args(argc, argv);
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &me);
    MPI_Comm_size(MPI_COMM_WORLD, &nprocs);

    rcase_t cs[] = {
        C(MPI_DOUBLE, MPI_SUM, 8, 1.5, 1.0, 2.5, 1),
        C(MPI_DOUBLE, MPI_SUM, 8, -0.75, 3.5, 2.75, 1),
        C(MPI_DOUBLE, MPI_PROD, 8, 1.5, 2.5, 3.75, 1),
        C(MPI_DOUBLE, MPI_MAX, 8, -1.5, -2.0, -1.5, 1),
        C(MPI_DOUBLE, MPI_MIN, 8, 0.25, 0.5, 0.25, 1),
        C(MPI_DOUBLE, MPI_REPLACE, 8, 1.5, -6.125, -6.125, 1),
        C(MPI_FLOAT, MPI_SUM, 4, 1.5, 1.0, 2.5, 1),
        C(MPI_FLOAT, MPI_MIN, 4, -1.5, 2.0, -1.5, 1),
        C(MPI_SHORT, MPI_SUM, 2, 1000, 234, 1234, 1),
        C(MPI_SHORT, MPI_SUM, 2, -7, -300, -307, 1),
        C(MPI_SHORT, MPI_REPLACE, 2, 11, -31000, -31000, 1),
        C(MPI_SHORT, MPI_MAX, 2, -5, 3, 3, 1),
        C(MPI_SHORT, MPI_BXOR, 2, 0x0f0f, 0x00ff, 0x0ff0, 1),
        C(MPI_UNSIGNED_SHORT, MPI_SUM, 2, 65000, 500, 65500, 1),
        C(MPI_INT16_T, MPI_PROD, 2, -3, 7, -21, 1),
        C(MPI_SIGNED_CHAR, MPI_SUM, 1, 100, -120, -20, 1),
        C(MPI_UINT8_T, MPI_BOR, 1, 0x81, 0x18, 0x99, 1),
        C(MPI_DOUBLE, MPI_SUM, 8, 1.5, 1.0, 2.5, 0),
        C(MPI_FLOAT, MPI_PROD, 4, 1.5, -2.0, -3.0, 0),
        C(MPI_SHORT, MPI_SUM, 2, 1000, 234, 1234, 0),
        C(MPI_SHORT, MPI_REPLACE, 2, 1, 2, 2, 0),
        C(MPI_SHORT, MPI_MIN, 2, 9, -9, -9, 0),
        C(MPI_UNSIGNED_SHORT, MPI_BAND, 2, 0xffff, 0x1234, 0x1234, 0),
        C(MPI_INT8_T, MPI_SUM, 1, -3, 5, 2, 0),
        C(MPI_UNSIGNED_CHAR, MPI_REPLACE, 1, 7, 200, 200, 0),
    };
    const int ncs = (int)(sizeof(cs) / sizeof(cs[0]));

    for (flavor = 0; flavor < TU_NFLAVORS; flavor++) {
        tu_win_t w;
        if (!tu_flavor_enabled(flavor)) continue;
        tu_win_create(flavor, SLOT * NSLOTS, 1, MPI_INFO_NULL, MPI_COMM_WORLD, &w);
        /* one case per slot; NSLOTS at a time */
        for (round = 0; round * NSLOTS < ncs; round++) {
            int first = round * NSLOTS, n = ncs - first < NSLOTS ? ncs - first : NSLOTS;
            int t = (me + 1) % nprocs;
            char res[NSLOTS][16], org[NSLOTS][16];
            unsigned char *base = w.base;

            TU_MPI(MPI_Win_lock(MPI_LOCK_EXCLUSIVE, me, 0, w.win));
            memset(base, SENT, SLOT * NSLOTS);
            for (k = 0; k < n; k++) store(cs[first + k].dt, base + k * SLOT + VOFF, cs[first + k].init);
            TU_MPI(MPI_Win_unlock(me, w.win));
            MPI_Barrier(MPI_COMM_WORLD);

            memset(res, SENT, sizeof(res));
            TU_MPI(MPI_Win_lock(MPI_LOCK_SHARED, t, 0, w.win));
            for (k = 0; k < n; k++) {
                rcase_t *c = &cs[first + k];
                MPI_Aint disp = tu_disp(&w, t, k * SLOT + VOFF);
                int rc;
                store(c->dt, org[k], c->arg);
                if (c->fop) rc = MPI_Fetch_and_op(org[k], res[k], c->dt, t, disp, c->op, w.win);
                else rc = MPI_Accumulate(org[k], 1, c->dt, t, disp, 1, c->dt, c->op, w.win);
                TU_CHECK(MPI_SUCCESS == rc, "%s %s %s on %s: rc %d", c->fop ? "MPI_Fetch_and_op" : "MPI_Accumulate",
                         c->name, c->opname, tu_flavor_names[flavor], rc);
            }
            TU_MPI(MPI_Win_unlock(t, w.win));
            for (k = 0; k < n; k++) {
                rcase_t *c = &cs[first + k];
                int j;
                if (!c->fop) continue;
                TU_CHECK(load(c->dt, res[k]) == c->init,
                         "MPI_Fetch_and_op %s %s on %s: fetched %g, expected %g", c->name, c->opname,
                         tu_flavor_names[flavor], load(c->dt, res[k]), c->init);
                for (j = c->size; j < 16; j++)
                    if ((unsigned char)res[k][j] != SENT) break;
                TU_CHECK(16 == j, "MPI_Fetch_and_op %s %s on %s: result buffer written past %d bytes",
                         c->name, c->opname, tu_flavor_names[flavor], c->size);
            }
            MPI_Barrier(MPI_COMM_WORLD);

            TU_MPI(MPI_Win_lock(MPI_LOCK_SHARED, me, 0, w.win));
            for (k = 0; k < n; k++) {
                rcase_t *c = &cs[first + k];
                int j, ok = 1;
                double got = load(c->dt, base + k * SLOT + VOFF);
                TU_CHECK(got == c->expect, "%s %s %s on %s: target %g -> %g, expected %g",
                         c->fop ? "MPI_Fetch_and_op" : "MPI_Accumulate", c->name, c->opname,
                         tu_flavor_names[flavor], c->init, got, c->expect);
                for (j = 0; j < SLOT; j++)
                    if ((j < VOFF || j >= VOFF + c->size) && base[k * SLOT + j] != SENT) ok = 0;
                TU_CHECK(ok, "%s %s %s on %s: bytes next to the target element changed",
                         c->fop ? "MPI_Fetch_and_op" : "MPI_Accumulate", c->name, c->opname,
                         tu_flavor_names[flavor]);
            }
            TU_MPI(MPI_Win_unlock(me, w.win));
            MPI_Barrier(MPI_COMM_WORLD);
        }
        tu_win_free(&w);
    }
    k = tu_finish("acc_regress");
    MPI_Finalize();
    return k;
}
