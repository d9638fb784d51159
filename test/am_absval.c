/* am_absval (design T3; S1, S3, S4): absolute values.  A segment is 100
 * ints in and 100 ints out, out[s][i] = |in[s][i]| + |persistent[s*100 + i]|
 * (s = the AM's segment index), persistent = NSEG*100 ints at element 8 of the
 * target's window (disp_unit 4).  Every rank is the origin of rank+1 (ring), in
 * each window flavor and epoch kind, with four datatype shapes; the handler
 * walks its buffers by the target type's layout (from extra_state: elements
 * of `size` ints, `blk`-int blocks `stride` ints apart, `ext` ints apart):
 *   V0: origin MPI_INT x100 -> target MPI_INT (N = M = 100)
 *   V1: target input vector(2, 5, 10, MPI_INT) (10 ints in an extent of 15:
 *       N = 10 != ci = 100), target output MPI_INT
 *   V2: V1's vector for the target input and output (M = 10)
 *   V3: origin input and output vector(4, 25, 50, MPI_INT) x1 (holes in the
 *       origin buffers, which must stay untouched), target MPI_INT
 * Output is checked after the epoch; the persistent region must not change. */
#include "mpix_ucxx.h"
#include "testutil.h"

#define NSEG 40
#define SEGI 100
#define PDISP 8
#define WINN (PDISP + NSEG * SEGI + 8)
#define NV 4
#define OEXT 175          /* extent (ints) of the origin vector(4, 25, 50) */
#define HOLE 0x7eadbeef

typedef struct { int size, blk, stride, ext; } lay_t;
typedef struct { lay_t in, out; } shape_t;
static const lay_t L_INT = { 1, 1, 1, 1 }, L_VEC = { 10, 5, 10, 15 };
static const shape_t shapes[NV] = { { L_INT, L_INT }, { L_VEC, L_INT }, { L_VEC, L_VEC },
                                    { L_INT, L_INT } };
static int rank, nprocs;

static inline size_t lay_off(const lay_t *l, int k, int cnt, int q)   /* int offset of value q of segment k */
{
    int e = q / l->size, p = q % l->size;
    return ((size_t) k * cnt + e) * l->ext + (size_t) (p / l->blk) * l->stride + p % l->blk;
}

static int pval(int owner, int j) { return ((j * 7919 + owner * 131) % 2000001) - 1000000; }
static int ival(int origin, int v, int s, int i)
{
    return ((s * 1009 + i * 7 + v * 313 + origin * 57) % 200001) - 100000;
}

static int absval_fn(const void *input_addr, int input_segment_count,
                     MPI_Datatype input_segment_datatype, void *persistent_addr,
                     int persistent_count, MPI_Datatype persistent_datatype, void *output_addr,
                     int output_segment_count, MPI_Datatype output_segment_datatype,
                     int num_segments, int segment_offset, void *extra_state)
{
    const shape_t *sh = extra_state;
    const int *in = input_addr, *p = persistent_addr;
    int *out = output_addr;
    (void) input_segment_datatype; (void) persistent_datatype; (void) output_segment_datatype;
    if (input_segment_count * sh->in.size != SEGI || output_segment_count * sh->out.size != SEGI ||
        persistent_count != NSEG * SEGI || segment_offset < 0 ||
        segment_offset + num_segments > NSEG) {
        return MPI_ERR_ARG;
    }
    for (int k = 0; k < num_segments; k++) {
        int s = segment_offset + k;
        for (int q = 0; q < SEGI; q++) {
            int a = in[lay_off(&sh->in, k, input_segment_count, q)];
            int b = p[s * SEGI + q];
            out[lay_off(&sh->out, k, output_segment_count, q)] = abs(a) + abs(b);
        }
    }
    return MPI_SUCCESS;
}

int main(int argc, char **argv)
{
    int target, origin;
    static int in[NV][NSEG * OEXT], out[NV][NSEG * OEXT];
    MPI_Datatype vec, ovec;
    char where[160];

    tu_am_start(&argc, &argv, "am_absval", 45, &rank, &nprocs);
    target = (rank + 1) % nprocs;
    origin = (rank + nprocs - 1) % nprocs;
    MPI_Type_vector(2, 5, 10, MPI_INT, &vec);
    MPI_Type_commit(&vec);
    MPI_Type_vector(4, 25, 50, MPI_INT, &ovec);
    MPI_Type_commit(&ovec);

    for (int f = 0; f < TU_NFLAVORS; f++) {
        tu_win_t w;
        int *base;
        MPIX_Am_op op[NV];
        void *ubuf;
        if (!tu_flavor_enabled(f)) continue;
        tu_win_create(f, WINN * sizeof(int), sizeof(int), MPI_INFO_NULL, MPI_COMM_WORLD, &w);
        base = w.base;
        for (int j = 0; j < WINN; j++) base[j] = pval(rank, j);
        for (int v = 0; v < NV; v++) op[v] = tu_am_op(absval_fn, (void *) &shapes[v], 200 + v, w.win);
        ubuf = tu_am_attach(w.win, 8192);   /* seg_need <= a64(600) + a64(600) = 1280 (V2) */
        MPI_Barrier(MPI_COMM_WORLD);

        for (int ep = 0; ep < TU_NEPOCHS; ep++) {
            snprintf(where, sizeof(where), "%s window, %s epoch", tu_flavor_names[f],
                     tu_epoch_names[ep]);
            tu_where = where;
            for (int v = 0; v < NV; v++) {
                for (int j = 0; j < NSEG * OEXT; j++) { in[v][j] = HOLE; out[v][j] = HOLE; }
                for (int s = 0; s < NSEG; s++)
                    for (int i = 0; i < SEGI; i++) {
                        size_t o = 3 == v ? (size_t) s * OEXT + i / 25 * 50 + i % 25
                                          : (size_t) s * SEGI + i;
                        in[v][o] = ival(rank, v + ep, s, i);
                    }
            }
            TU_AM(tu_am_epoch_open(ep, w.win, &target, 1, &origin, 1));
            for (int v = 0; v < NV; v++) {
                MPI_Datatype tin = 0 == v || 3 == v ? MPI_INT : vec;
                MPI_Datatype tout = 2 == v ? vec : MPI_INT;
                if (3 == v) {
                    TU_AM(MPIX_Am(in[v], 1, ovec, out[v], 1, ovec, NSEG, target, tin,
                                  tu_disp(&w, target, PDISP), NSEG * SEGI, MPI_INT, tout, op[v],
                                  w.win));
                } else {
                    TU_AM(MPIX_Am(in[v], SEGI, MPI_INT, out[v], SEGI, MPI_INT, NSEG, target, tin,
                                  tu_disp(&w, target, PDISP), NSEG * SEGI, MPI_INT, tout, op[v],
                                  w.win));
                }
            }
            TU_AM(tu_am_epoch_close(ep, w.win, &target, 1, &origin, 1));
            for (int v = 0; v < NV; v++) {
                int bad = 0;
                for (int s = 0; s < NSEG; s++) {
                    for (int i = 0; i < SEGI; i++) {
                        size_t o = 3 == v ? (size_t) s * OEXT + i / 25 * 50 + i % 25
                                          : (size_t) s * SEGI + i;
                        int want = abs(ival(rank, v + ep, s, i)) +
                                   abs(pval(target, PDISP + s * SEGI + i));
                        if (out[v][o] != want && bad++ < 3) {
                            TU_CHECK(0, "%s: V%d segment %d value %d is %d, expected %d", where,
                                     v, s, i, out[v][o], want);
                        }
                    }
                    if (3 == v) {   /* the holes of the origin output type */
                        for (int h = 0; h < OEXT; h++) {
                            if (h % 50 < 25) continue;
                            if (out[v][(size_t) s * OEXT + h] != HOLE && bad++ < 3) {
                                TU_CHECK(0, "%s: V3 segment %d: hole int %d of the origin "
                                         "output was written (%d)", where, s, h,
                                         out[v][(size_t) s * OEXT + h]);
                            }
                        }
                    }
                }
                if (bad > 3) TU_CHECK(0, "%s: V%d: %d wrong values in all", where, v, bad);
            }
            MPI_Barrier(MPI_COMM_WORLD);
            for (int j = 0; j < WINN; j++) {
                if (base[j] != pval(rank, j)) {
                    TU_CHECK(0, "%s: window int %d changed to %d (expected %d)", where, j,
                             base[j], pval(rank, j));
                    break;
                }
            }
            MPI_Barrier(MPI_COMM_WORLD);
        }
        tu_where = "teardown";
        TU_AM(MPIX_Am_win_buffer_detach(ubuf, w.win));
        free(ubuf);
        for (int v = 0; v < NV; v++) tu_am_op_done(&op[v], w.win);
        tu_win_free(&w);
    }
    alarm(0);
    MPI_Type_free(&vec);
    MPI_Type_free(&ovec);
    {
        int rc = tu_finish("am_absval");
        MPI_Finalize();
        return rc;
    }
}
