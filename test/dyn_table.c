/* dyn_table: a dynamic window's region table (osc_ucxx_dyntab.c) as the
 * number and the shape of the target's regions change under it.  Peers on
 * the node find a target's regions in a table of at most 62 entries that
 * the target rewrites in every attach and detach; more regions than that
 * send them to the asking path, and fewer must bring the table back.
 * Window error handler MPI_ERRORS_RETURN; every rank targets the next one
 * on its node where it shares the node (so that across hosts the table is
 * read too, in a window whose ranks do not share one node), else the next
 * one.
 * Each rank's block holds NSLOT slots of SLOT int64, every other one a gap
 * that nothing attaches before step 3 (so no two regions touch).
 *  1. NREG ("-n N", default 70: more than the table holds) regions, the
 *     even slots, attached one by one; under lock_all the origin puts into
 *     every region of the next rank, flushes, gets each back (checked).
 *     With osc/ucxx and the next rank on the node, this first access maps
 *     one range of the next rank's file, its state and region table
 *     together (they share a page: 52693d1 mapped it twice).
 *  2. The target detaches all but KEEP regions (every region past 2*KEEP
 *     and every odd one below): fewer than the table holds again.  The
 *     origin's put / get / accumulate / get_accumulate / fetch_and_op /
 *     compare_and_swap on the kept ones work (checked at both sides); each
 *     detached one fails with MPI_ERR_RMA_RANGE (the call, or the unlock)
 *     and the target finds it unchanged.
 *  3. The target attaches NEW regions again where it had detached some
 *     (between kept ones, touching none): the origin's put / get there and
 *     on the kept ones work.
 *  4. A long region (LONGB bytes) attached and detached, then a short one
 *     inside where it was: accesses inside the short one work, accesses
 *     that reach past its end or start before it fail with
 *     MPI_ERR_RMA_RANGE and leave the target's bytes as they were.
 *  5. MPI_Win_detach of an address never attached, or detached already:
 *     MPI_ERR_BASE through the window's handler, and the window still
 *     works.  An attachment of no bytes: MPI_SUCCESS, an access there
 *     fails with MPI_ERR_RMA_RANGE, and MPI_Win_detach of its base (as MPI
 *     says: the base of a previous attach) succeeds, once.  (52693d1 kept
 *     no record of it: that detach failed with MPI_ERR_BASE, which under
 *     the default error handler ends the job.)
 *  6. Concurrently: each rank attaches a stable region last in its block's
 *     address order and SCR scratch regions before it, then, under
 *     lock_all, ITERS ("-i N") times attaches or detaches one scratch
 *     region (the count going back and forth across what the table holds,
 *     and the stable region's place in it moving) and puts into the next
 *     rank's stable region, flushes and gets it back: every call succeeds
 *     and every value read back is the one put (a reader that took a table
 *     torn by a rewrite would miss the stable region: MPI_ERR_RMA_RANGE).
 *  7. Accesses whose bytes wrap past the top of the address space (a
 *     displacement just below 0, or a type whose lower bound takes it
 *     there), to the next rank and to itself, with a region attached:
 *     put, get, accumulate, get_accumulate, fetch_and_op,
 *     compare_and_swap fail with MPI_ERR_RMA_RANGE (the call or the
 *     unlock), no crash, and the region is unchanged.  (52693d1: a
 *     process's own access wrote to 0xff..f8 and died of SIGSEGV: the
 *     region checks took the range's end, below its start, for covered.)
 *  8. The kernel refuses cross-memory attach after all: every rank makes
 *     itself undumpable (prctl), which as an unprivileged user (no
 *     CAP_SYS_PTRACE) makes the peers' process_vm_writev/readv fail with
 *     EPERM after their first accesses found the region in the table
 *     (osc_ucxx_comm.c's cma_refused: the region asked for, then UCX).
 *     Put, get, accumulate, get_accumulate, fetch_and_op and
 *     compare_and_swap on a region of the next rank work (checked at both
 *     sides).  (As root they stay by cross-memory attach.)
 * Every access is inside one region (dyn_adjacent tests the spans).
 * --single-intrinsic: the window has acc_single_intrinsic=true (single
 * elements take the one atomic kind the window agreed on: across hosts UCX
 * atomics, a table peer's asked for its region's rkey). */
#include "testutil.h"
#include <stdint.h>
#include <sys/prctl.h>

#define SLOT 64                    /* int64 per slot */
#define NSLOT 160
#define KEEP 8
#define NEW 5
#define LONGB (1 << 20)
#define SENT ((int64_t) 0x5e5e5e5e5e5e5e5eLL)

static int rank, nprocs, next, prev, nreg, next_on_node;
static MPI_Win win;
static int64_t *block;       /* NSLOT slots */
static MPI_Aint tblock;      /* the next rank's */

static MPI_Aint slot_addr(int s) { return tblock + (MPI_Aint) s * SLOT * 8; }
static int64_t *my_slot(int s) { return block + (size_t) s * SLOT; }
static int64_t val(int origin, int s, int step, int j)
{
    return ((int64_t) step << 40) + ((int64_t) origin << 24) + ((int64_t) s << 8) + j;
}

/* `call` fails with MPI_ERR_RMA_RANGE in its own epoch: itself, or the
 * unlock (where the operation went with the lock request). */
static void range_epoch(int target, int rc_call, const char *what)
{
    int cls = tu_err_class(rc_call);
    int ucls = tu_err_class(MPI_Win_unlock(target, win));
    if (MPI_SUCCESS == cls) cls = ucls;
    TU_CHECK(MPI_ERR_RMA_RANGE == cls, "%s: %s, expected MPI_ERR_RMA_RANGE", what,
             tu_err_class_name(cls));
}

#define RANGE_AT(target, call, what)                             \
    do {                                                         \
        TU_MPI(MPI_Win_lock(MPI_LOCK_SHARED, (target), 0, win)); \
        range_epoch((target), (call), what);                     \
    } while (0)
#define RANGE(call, what) RANGE_AT(next, call, what)

static void fill_slot(int s, int64_t v)
{
    for (int j = 0; j < SLOT; ++j) my_slot(s)[j] = v;
}

/* Origin: put into slot s of the next rank, get it back. */
static void put_get(int s, int step)
{
    int64_t buf[SLOT], res[SLOT];
    for (int j = 0; j < SLOT; ++j) buf[j] = val(rank, s, step, j);
    TU_MPI(MPI_Put(buf, SLOT, MPI_INT64_T, next, slot_addr(s), SLOT, MPI_INT64_T, win));
    TU_MPI(MPI_Win_flush(next, win));
    memset(res, 0, sizeof(res));
    TU_MPI(MPI_Get(res, SLOT, MPI_INT64_T, next, slot_addr(s), SLOT, MPI_INT64_T, win));
    TU_MPI(MPI_Win_flush(next, win));
    for (int j = 0; j < SLOT; ++j) {
        TU_CHECK(res[j] == buf[j], "step %d slot %d: got %lld at %d, put %lld", step, s,
                 (long long) res[j], j, (long long) buf[j]);
        if (res[j] != buf[j]) break;
    }
}

/* Target: slot s holds what the previous rank put at `step`. */
static void check_put(int s, int step)
{
    for (int j = 0; j < SLOT; ++j) {
        TU_CHECK(my_slot(s)[j] == val(prev, s, step, j), "step %d: my slot %d [%d] = %lld",
                 step, s, j, (long long) my_slot(s)[j]);
        if (my_slot(s)[j] != val(prev, s, step, j)) break;
    }
}

/* One lock_all epoch of put_get on slot s of the next rank, checked by it. */
static void epoch_put_get(int s, int step)
{
    MPI_Barrier(MPI_COMM_WORLD);
    TU_MPI(MPI_Win_lock_all(0, win));
    put_get(s, step);
    TU_MPI(MPI_Win_unlock_all(win));
    MPI_Barrier(MPI_COMM_WORLD);
    check_put(s, step);
}

static int attached(int s)   /* after step 2 */
{
    return 0 == s % 2 && s < 2 * nreg && (s < 2 * KEEP ? 0 == s % 4 : 0);
}

/* Step 2, origin: the accumulate family on slot s, kept: element 0 summed,
 * 1 by get_accumulate, 2 by fetch_and_op, 3 by compare_and_swap. */
static void atomics(int s)
{
    int64_t one = 1, old = -1, cmp = val(rank, s, 1, 3), swp = 77, got = -1;
    int64_t add[SLOT];
    for (int j = 0; j < SLOT; ++j) add[j] = j;
    TU_MPI(MPI_Accumulate(add, SLOT, MPI_INT64_T, next, slot_addr(s), SLOT, MPI_INT64_T,
                          MPI_SUM, win));
    TU_MPI(MPI_Win_flush(next, win));
    TU_MPI(MPI_Get_accumulate(&one, 1, MPI_INT64_T, &old, 1, MPI_INT64_T, next,
                              slot_addr(s) + 8, 1, MPI_INT64_T, MPI_SUM, win));
    TU_MPI(MPI_Win_flush(next, win));
    TU_CHECK(old == val(rank, s, 1, 1) + 1, "slot %d: get_accumulate fetched %lld", s,
             (long long) old);
    TU_MPI(MPI_Fetch_and_op(&one, &old, MPI_INT64_T, next, slot_addr(s) + 16, MPI_SUM, win));
    TU_MPI(MPI_Win_flush(next, win));
    TU_CHECK(old == val(rank, s, 1, 2) + 2, "slot %d: fetch_and_op fetched %lld", s,
             (long long) old);
    cmp += 3;
    TU_MPI(MPI_Compare_and_swap(&swp, &cmp, &got, MPI_INT64_T, next, slot_addr(s) + 24, win));
    TU_MPI(MPI_Win_flush(next, win));
    TU_CHECK(got == cmp, "slot %d: compare_and_swap found %lld, expected %lld", s,
             (long long) got, (long long) cmp);
}

static void check_atomics(int s)
{
    int64_t *p = my_slot(s);
    for (int j = 0; j < SLOT; ++j) {
        int64_t want = val(prev, s, 1, j) + j + (1 == j || 2 == j ? 1 : 0);
        if (3 == j) want = 77;
        TU_CHECK(p[j] == want, "slot %d [%d] = %lld after the atomics, expected %lld", s, j,
                 (long long) p[j], (long long) want);
        if (p[j] != want) break;
    }
}

/* Mappings of osc/ucxx's shared memory files (each process's memfd) here. */
static int memfd_maps(void)
{
    FILE *f = fopen("/proc/self/maps", "r");
    char line[512];
    int n = 0;
    while (f && fgets(line, sizeof(line), f)) n += NULL != strstr(line, "/memfd:osc_ucxx");
    if (f) fclose(f);
    return n;
}

static void step_many(void)
{
    const char *osc = getenv("OMPI_MCA_osc");
    int maps;

    MPI_Barrier(MPI_COMM_WORLD);
    maps = memfd_maps();
    TU_MPI(MPI_Win_lock_all(0, win));
    for (int k = 0; k < nreg; ++k) put_get(2 * k, 1);
    TU_MPI(MPI_Win_unlock_all(win));
    maps = memfd_maps() - maps;
    TU_CHECK(!next_on_node || NULL == osc || 0 != strcmp(osc, "ucxx") || maps <= 1,
             "the first access to rank %d made %d mappings of shared memory, not one", next,
             maps);
    MPI_Barrier(MPI_COMM_WORLD);
    for (int k = 0; k < nreg; ++k) check_put(2 * k, 1);
}

static void step_fewer(void)
{
    int64_t x[2] = {5, 6}, res[2];
    char what[96];

    for (int k = 0; k < nreg; ++k) {
        int s = 2 * k;
        if (attached(s)) continue;
        TU_MPI(MPI_Win_detach(win, my_slot(s)));
        fill_slot(s, SENT);
    }
    MPI_Barrier(MPI_COMM_WORLD);
    TU_MPI(MPI_Win_lock_all(0, win));
    for (int s = 0; s < 2 * nreg; s += 2) {
        if (attached(s)) atomics(s);
    }
    TU_MPI(MPI_Win_unlock_all(win));
    for (int s = 2; s < 2 * nreg; s += 4) {   /* detached: odd ones below 2*KEEP, all past it */
        if (s > 2 * KEEP + 8 && s < 2 * nreg - 4) continue;   /* (a few suffice) */
        snprintf(what, sizeof(what), "put to detached slot %d", s);
        RANGE(MPI_Put(x, 2, MPI_INT64_T, next, slot_addr(s), 2, MPI_INT64_T, win), what);
        snprintf(what, sizeof(what), "get from detached slot %d", s);
        RANGE(MPI_Get(res, 2, MPI_INT64_T, next, slot_addr(s), 2, MPI_INT64_T, win), what);
        snprintf(what, sizeof(what), "accumulate to detached slot %d", s);
        RANGE(MPI_Accumulate(x, 2, MPI_INT64_T, next, slot_addr(s), 2, MPI_INT64_T, MPI_SUM,
                             win), what);
        snprintf(what, sizeof(what), "fetch_and_op on detached slot %d", s);
        RANGE(MPI_Fetch_and_op(x, res, MPI_INT64_T, next, slot_addr(s), MPI_SUM, win), what);
    }
    MPI_Barrier(MPI_COMM_WORLD);
    for (int s = 0; s < 2 * nreg; s += 2) {
        if (attached(s)) {
            check_atomics(s);
            continue;
        }
        long bad = 0;
        for (int j = 0; j < SLOT; ++j) bad += my_slot(s)[j] != SENT;
        TU_CHECK(0 == bad, "detached slot %d: %ld values changed", s, bad);
    }
}

static void step_new(void)
{
    /* between kept regions: slots 2, 6, 10, ... detached in step 2 */
    for (int k = 0; k < NEW; ++k) TU_MPI(MPI_Win_attach(win, my_slot(4 * k + 2), SLOT * 8));
    MPI_Barrier(MPI_COMM_WORLD);
    TU_MPI(MPI_Win_lock_all(0, win));
    for (int k = 0; k < NEW; ++k) put_get(4 * k + 2, 3);
    for (int s = 0; s < 2 * KEEP; s += 4) put_get(s, 3);
    TU_MPI(MPI_Win_unlock_all(win));
    MPI_Barrier(MPI_COMM_WORLD);
    for (int k = 0; k < NEW; ++k) check_put(4 * k + 2, 3);
    for (int s = 0; s < 2 * KEEP; s += 4) check_put(s, 3);
    for (int k = 0; k < NEW; ++k) TU_MPI(MPI_Win_detach(win, my_slot(4 * k + 2)));
}

static void step_long(void)
{
    char *big = malloc(LONGB);
    int64_t *in = (int64_t *) (big + LONGB / 2);   /* the short region: SLOT int64 */
    int64_t x[4] = {1, 2, 3, 4}, res[4];
    MPI_Aint tin;

    TU_CHECK(NULL != big, "malloc");
    TU_MPI(MPI_Win_attach(win, big, LONGB));
    TU_MPI(MPI_Win_detach(win, big));
    for (int j = 0; j < SLOT + 16; ++j) in[j - 8] = SENT;
    TU_MPI(MPI_Win_attach(win, in, SLOT * 8));
    MPI_Aint mine = (MPI_Aint) (uintptr_t) in;
    MPI_Sendrecv(&mine, 1, MPI_AINT, prev, 0, &tin, 1, MPI_AINT, next, 0, MPI_COMM_WORLD,
                 MPI_STATUS_IGNORE);
    MPI_Barrier(MPI_COMM_WORLD);
    TU_MPI(MPI_Win_lock(MPI_LOCK_SHARED, next, 0, win));
    TU_MPI(MPI_Put(x, 4, MPI_INT64_T, next, tin + (SLOT - 4) * 8, 4, MPI_INT64_T, win));
    TU_MPI(MPI_Win_flush(next, win));
    TU_MPI(MPI_Get(res, 4, MPI_INT64_T, next, tin + (SLOT - 4) * 8, 4, MPI_INT64_T, win));
    TU_MPI(MPI_Win_unlock(next, win));
    TU_CHECK(0 == memcmp(x, res, sizeof(x)), "short region after a long one: got %lld",
             (long long) res[0]);
    RANGE(MPI_Put(x, 4, MPI_INT64_T, next, tin + (SLOT - 2) * 8, 4, MPI_INT64_T, win),
          "put past the end of a short region where a long one was");
    RANGE(MPI_Get(res, 4, MPI_INT64_T, next, tin - 16, 4, MPI_INT64_T, win),
          "get from before a short region inside a detached long one");
    RANGE(MPI_Put(x, 1, MPI_INT64_T, next, tin - 8 * 1024, 1, MPI_INT64_T, win),
          "put inside a detached long region");
    MPI_Barrier(MPI_COMM_WORLD);
    for (int j = -8; j < SLOT + 8; ++j) {
        int64_t want = j >= SLOT - 4 && j < SLOT ? x[j - (SLOT - 4)] : SENT;
        TU_CHECK(in[j] == want, "short region [%d] = %lld, expected %lld", j, (long long) in[j],
                 (long long) want);
    }
    TU_MPI(MPI_Win_detach(win, in));
    MPI_Barrier(MPI_COMM_WORLD);
    free(big);
}

static int handled, handled_class = MPI_SUCCESS;

static void count_error(MPI_Win *w, int *code, ...)
{
    (void) w;
    handled++;
    MPI_Error_class(*code, &handled_class);
}

static void step_bad_detach(void)
{
    int64_t never[4];
    MPI_Errhandler counting;
    int cls;

    /* through the window's handler: one call of a handler of our own */
    TU_MPI(MPI_Win_create_errhandler(count_error, &counting));
    TU_MPI(MPI_Win_set_errhandler(win, counting));
    cls = tu_err_class(MPI_Win_detach(win, never));
    TU_MPI(MPI_Win_set_errhandler(win, MPI_ERRORS_RETURN));
    TU_MPI(MPI_Errhandler_free(&counting));
    TU_CHECK(1 == handled && MPI_ERR_BASE == handled_class, "detach of memory never attached: "
             "the window's handler called %d times, with %s", handled,
             tu_err_class_name(handled_class));
    cls = tu_err_class(MPI_Win_detach(win, never));
    TU_CHECK(MPI_ERR_BASE == cls, "detach of memory never attached: %s, expected MPI_ERR_BASE",
             tu_err_class_name(cls));
    cls = tu_err_class(MPI_Win_detach(win, my_slot(2 * KEEP + 2)));   /* detached in step 2 */
    TU_CHECK(MPI_ERR_BASE == cls, "detach of detached memory: %s, expected MPI_ERR_BASE",
             tu_err_class_name(cls));
    /* attachments of no bytes: slot 20 (detached in step 2), a stack array */
    int64_t x = 5, empty[2];
    TU_MPI(MPI_Win_attach(win, my_slot(20), 0));
    TU_MPI(MPI_Win_attach(win, empty, 0));
    MPI_Barrier(MPI_COMM_WORLD);
    RANGE(MPI_Put(&x, 1, MPI_INT64_T, next, slot_addr(20), 1, MPI_INT64_T, win),
          "put to an attachment of no bytes");
    MPI_Barrier(MPI_COMM_WORLD);
    cls = tu_err_class(MPI_Win_detach(win, my_slot(20)));
    TU_CHECK(MPI_SUCCESS == cls, "detach of an attachment of no bytes: %s",
             tu_err_class_name(cls));
    cls = tu_err_class(MPI_Win_detach(win, my_slot(20)));
    TU_CHECK(MPI_ERR_BASE == cls, "second detach of an attachment of no bytes: %s, expected "
             "MPI_ERR_BASE", tu_err_class_name(cls));
    cls = tu_err_class(MPI_Win_detach(win, empty));
    TU_CHECK(MPI_SUCCESS == cls, "detach of an attachment of no bytes on the stack: %s",
             tu_err_class_name(cls));
    TU_CHECK(SENT == my_slot(20)[0], "slot 20 changed: %lld", (long long) my_slot(20)[0]);
    epoch_put_get(0, 5);
}

#define SCR 60                 /* scratch regions: the table holds 62 */
#define STABLE (NSLOT - 2)

static void step_race(int iters)
{
    int nscr = 0, up = 1;
    int64_t buf[8], res[8];

    fill_slot(STABLE, SENT);
    TU_MPI(MPI_Win_attach(win, my_slot(STABLE), SLOT * 8));
    for (; nscr < SCR; ++nscr) TU_MPI(MPI_Win_attach(win, my_slot(2 * nscr), SLOT * 8));
    MPI_Barrier(MPI_COMM_WORLD);
    TU_MPI(MPI_Win_lock_all(0, win));
    for (int it = 0; it < iters; ++it) {
        /* 60 .. 64 scratch regions and back: 61 .. 65 in all */
        if (up) TU_MPI(MPI_Win_attach(win, my_slot(2 * nscr++), SLOT * 8));
        else TU_MPI(MPI_Win_detach(win, my_slot(2 * --nscr)));
        if (nscr == SCR + 4 || nscr == SCR) up = !up;
        for (int j = 0; j < 8; ++j) buf[j] = val(rank, STABLE, it, j);
        int off = (it % (SLOT / 8)) * 8;
        TU_MPI(MPI_Put(buf, 8, MPI_INT64_T, next, slot_addr(STABLE) + off * 8, 8, MPI_INT64_T,
                       win));
        TU_MPI(MPI_Win_flush(next, win));
        memset(res, 0, sizeof(res));
        TU_MPI(MPI_Get(res, 8, MPI_INT64_T, next, slot_addr(STABLE) + off * 8, 8, MPI_INT64_T,
                       win));
        TU_MPI(MPI_Win_flush(next, win));
        TU_CHECK(0 == memcmp(buf, res, sizeof(buf)), "race %d: got %lld, put %lld", it,
                 (long long) res[0], (long long) buf[0]);
    }
    TU_MPI(MPI_Win_unlock_all(win));
    MPI_Barrier(MPI_COMM_WORLD);
    for (int it = iters - SLOT / 8 > 0 ? iters - SLOT / 8 : 0; it < iters; ++it) {
        int off = (it % (SLOT / 8)) * 8;
        for (int j = 0; j < 8; ++j) {
            TU_CHECK(my_slot(STABLE)[off + j] == val(prev, STABLE, it, j),
                     "stable [%d] = %lld", off + j, (long long) my_slot(STABLE)[off + j]);
        }
    }
    while (nscr > 0) TU_MPI(MPI_Win_detach(win, my_slot(2 * --nscr)));
    TU_MPI(MPI_Win_detach(win, my_slot(STABLE)));
}

static void step_wrap(void)
{
    int64_t x[2] = {7, 8}, res[2] = {0, 0}, one = 1, cmp = 0;
    MPI_Datatype low;   /* one int64 at byte -8 of the displacement */
    char what[96];

    fill_slot(0, SENT);
    TU_MPI(MPI_Win_attach(win, my_slot(0), SLOT * 8));
    TU_MPI(MPI_Type_create_resized(MPI_INT64_T, -8, 8, &low));
    TU_MPI(MPI_Type_commit(&low));
    MPI_Barrier(MPI_COMM_WORLD);
    for (int k = 0; k < 2; ++k) {
        int t = k ? rank : next;
        const char *who = k ? "myself" : "the next rank";
#define WRAP(call, name)                                                     \
    do {                                                                     \
        snprintf(what, sizeof(what), "%s wrapping the address space at %s", name, who); \
        RANGE_AT(t, call, what);                                             \
    } while (0)
        WRAP(MPI_Put(x, 2, MPI_INT64_T, t, (MPI_Aint) -8, 2, MPI_INT64_T, win), "put");
        WRAP(MPI_Get(res, 2, MPI_INT64_T, t, (MPI_Aint) -8, 2, MPI_INT64_T, win), "get");
        WRAP(MPI_Accumulate(x, 2, MPI_INT64_T, t, (MPI_Aint) -8, 2, MPI_INT64_T, MPI_SUM, win),
             "accumulate");
        WRAP(MPI_Get_accumulate(x, 2, MPI_INT64_T, res, 2, MPI_INT64_T, t, (MPI_Aint) -8, 2,
                                MPI_INT64_T, MPI_SUM, win), "get_accumulate");
        WRAP(MPI_Fetch_and_op(&one, res, MPI_INT64_T, t, (MPI_Aint) -4, MPI_SUM, win),
             "fetch_and_op");
        WRAP(MPI_Compare_and_swap(&one, &cmp, res, MPI_INT64_T, t, (MPI_Aint) -4, win),
             "compare_and_swap");
        WRAP(MPI_Put(x, 1, MPI_INT64_T, t, (MPI_Aint) 4, 1, low, win), "put of a low type");
#undef WRAP
    }
    MPI_Barrier(MPI_COMM_WORLD);
    long bad = 0;
    for (int j = 0; j < SLOT; ++j) bad += my_slot(0)[j] != SENT;
    TU_CHECK(0 == bad, "after accesses that wrap: %ld values of the region changed", bad);
    TU_MPI(MPI_Type_free(&low));
    TU_MPI(MPI_Win_detach(win, my_slot(0)));
}

static void step_refuse(void)
{
    int64_t buf[SLOT], res[SLOT], one = 1, old = -1, cmp, swp = 99;
    int dumpable = prctl(PR_GET_DUMPABLE, 0, 0, 0, 0);

    fill_slot(0, SENT);
    TU_MPI(MPI_Win_attach(win, my_slot(0), SLOT * 8));
    epoch_put_get(0, 8);   /* the region found in the table, by cross-memory attach */
    TU_CHECK(0 == prctl(PR_SET_DUMPABLE, 0, 0, 0, 0), "prctl(PR_SET_DUMPABLE, 0)");
    MPI_Barrier(MPI_COMM_WORLD);
    TU_MPI(MPI_Win_lock_all(0, win));
    put_get(0, 9);
    for (int j = 0; j < SLOT; ++j) buf[j] = j;
    TU_MPI(MPI_Accumulate(buf, SLOT, MPI_INT64_T, next, slot_addr(0), SLOT, MPI_INT64_T,
                          MPI_SUM, win));
    TU_MPI(MPI_Win_flush(next, win));
    TU_MPI(MPI_Get_accumulate(&one, 1, MPI_INT64_T, &old, 1, MPI_INT64_T, next,
                              slot_addr(0) + 8, 1, MPI_INT64_T, MPI_SUM, win));
    TU_MPI(MPI_Win_flush(next, win));
    TU_CHECK(old == val(rank, 0, 9, 1) + 1, "undumpable: get_accumulate fetched %lld",
             (long long) old);
    TU_MPI(MPI_Fetch_and_op(&one, &old, MPI_INT64_T, next, slot_addr(0) + 16, MPI_SUM, win));
    TU_MPI(MPI_Win_flush(next, win));
    TU_CHECK(old == val(rank, 0, 9, 2) + 2, "undumpable: fetch_and_op fetched %lld",
             (long long) old);
    cmp = val(rank, 0, 9, 3) + 3;
    TU_MPI(MPI_Compare_and_swap(&swp, &cmp, &old, MPI_INT64_T, next, slot_addr(0) + 24, win));
    TU_MPI(MPI_Win_flush(next, win));
    TU_CHECK(old == cmp, "undumpable: compare_and_swap found %lld, expected %lld",
             (long long) old, (long long) cmp);
    TU_MPI(MPI_Get(res, SLOT, MPI_INT64_T, next, slot_addr(0), SLOT, MPI_INT64_T, win));
    TU_MPI(MPI_Win_unlock_all(win));
    for (int j = 4; j < SLOT; ++j) {
        TU_CHECK(res[j] == val(rank, 0, 9, j) + j, "undumpable: got [%d] = %lld", j,
                 (long long) res[j]);
        if (res[j] != val(rank, 0, 9, j) + j) break;
    }
    MPI_Barrier(MPI_COMM_WORLD);
    for (int j = 0; j < SLOT; ++j) {
        int64_t want = val(prev, 0, 9, j) + j + (1 == j || 2 == j ? 1 : 0);
        if (3 == j) want = 99;
        TU_CHECK(my_slot(0)[j] == want, "undumpable: my [%d] = %lld, expected %lld", j,
                 (long long) my_slot(0)[j], (long long) want);
        if (my_slot(0)[j] != want) break;
    }
    (void) prctl(PR_SET_DUMPABLE, dumpable, 0, 0, 0);
    TU_MPI(MPI_Win_detach(win, my_slot(0)));
}

/* The ring of the ranks on this node, where there are several. */
static void node_ring(void)
{
    MPI_Comm node = tu_node_comm(MPI_COMM_WORLD, NULL);
    MPI_Group g, gw;
    int nn, me, r[2], w[2];

    MPI_Comm_size(node, &nn);
    MPI_Comm_rank(node, &me);
    if (nn > 1) {
        r[0] = (me + 1) % nn;
        r[1] = (me + nn - 1) % nn;
        MPI_Comm_group(node, &g);
        MPI_Comm_group(MPI_COMM_WORLD, &gw);
        MPI_Group_translate_ranks(g, 2, r, gw, w);
        next = w[0];
        prev = w[1];
        next_on_node = 1;
        MPI_Group_free(&g);
        MPI_Group_free(&gw);
    }
    MPI_Comm_free(&node);
}

int main(int argc, char **argv)
{
    tu_parse_args(argc, argv);
    tu_init_ring(&argc, &argv, &rank, &nprocs, &next, &prev);
    node_ring();
    nreg = (int) tu_opt_long(argc, argv, "-n", 70);
    int iters = (int) tu_opt_long(argc, argv, "-i", tu_slow_transport() ? 300 : 3000);
    if (nreg > NSLOT / 2) nreg = NSLOT / 2;
    if (nreg < 2 * KEEP) nreg = 2 * KEEP;
    block = malloc((size_t) NSLOT * SLOT * 8);
    for (int s = 0; s < NSLOT; ++s) fill_slot(s, SENT);
    MPI_Info info = MPI_INFO_NULL;
    if (tu_opt_flag(argc, argv, "--single-intrinsic")) {
        TU_MPI(MPI_Info_create(&info));
        TU_MPI(MPI_Info_set(info, "acc_single_intrinsic", "true"));
    }
    TU_MPI(MPI_Win_create_dynamic(info, MPI_COMM_WORLD, &win));
    if (MPI_INFO_NULL != info) MPI_Info_free(&info);
    TU_MPI(MPI_Win_set_errhandler(win, MPI_ERRORS_RETURN));
    for (int k = 0; k < nreg; ++k) TU_MPI(MPI_Win_attach(win, my_slot(2 * k), SLOT * 8));
    MPI_Aint mine = (MPI_Aint) (uintptr_t) block;
    MPI_Sendrecv(&mine, 1, MPI_AINT, prev, 0, &tblock, 1, MPI_AINT, next, 0, MPI_COMM_WORLD,
                 MPI_STATUS_IGNORE);

    step_many();
    step_fewer();
    step_new();
    step_long();
    step_bad_detach();

    for (int s = 0; s < 2 * nreg; s += 2) {
        if (attached(s)) TU_MPI(MPI_Win_detach(win, my_slot(s)));
    }
    step_race(iters);
    step_wrap();
    step_refuse();
    TU_MPI(MPI_Win_free(&win));
    free(block);
    int rc = tu_finish("dyn_table");
    MPI_Finalize();
    return rc;
}
