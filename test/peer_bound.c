/* peer_bound: all-to-all epochs on several windows of every flavor, values
 * checked, while osc/ucxx holds per-peer state for at most a bounded number
 * of peers (docs/scale.md, the peer table: osc_ucxx_ptab.c) and so lets
 * idle peers go and meets them again in later epochs.
 *
 * WINS ("-w N", default 3) windows of each enabled flavor alive together, a
 * slot of 8 bytes per rank in each; ROUNDS ("-r N", default 3) rounds, each
 * on every window:
 *   - lock_all, a put of (me, round, window) into my slot at every rank,
 *     unlock_all; a barrier; every slot of my memory checked;
 *   - fence, a get of my slot back from every rank, fence: checked;
 *   - fence, a put of the value + 1 into my slot at every rank, fence: every
 *     slot of my memory checked;
 * and on the first window in the first round, up to 32 ranks (CI time), also
 *   - post to and start with every rank, a put of the value + 2 into my slot
 *     at every rank, complete, wait: checked (the post slots: each rank
 *     posts into a page of every other's, mapped at its first post);
 *   - lock_all, every rank adds 1 to rank 0's slot at every rank (the
 *     accumulate stripe locks, all contending on one), unlock_all; a
 *     barrier: checked.
 * With the bound set small (run line: --tune peer_cap=N), every epoch meets
 * more peers than it may hold, so the peers of the previous epoch go (their
 * mappings unmapped, endpoints closed, the windows' links dropped) and come
 * back; a stale mapping or rkey leaves wrong values or crashes.
 * Last, whether the bound holds: after a round, a new window and an epoch
 * with the next rank alone (which asks the table for a peer, and so lets
 * the idle ones go): the peers' shared memory mapped here (other processes'
 * osc_ucxx memfds, UCX's SYSV and POSIX segments, distinct files in
 * /proc/self/maps) must have grown by at most the bound plus our own
 * (checked where peer_cap is given and the ranks outnumber it; osc/ucxx
 * before the bound mapped every peer's segments and UCX FIFOs, 40-45 files
 * at 16 ranks). */
#define _GNU_SOURCE   /* (process_vm_readv) */
#include "testutil.h"
#include <stdint.h>
#include <sys/uio.h>
#include <unistd.h>

static int me, nprocs, next, prev;
static MPI_Group world;   /* every rank: the PSCW epochs' group */

static int64_t value(int rank, int round, int w, int flavor)
{
    return (int64_t) 0x5a00000000000000LL + (int64_t) rank * 1000000LL + round * 1000 +
           w * 10 + flavor;
}

/* Distinct shared-memory files of other processes' or UCX's mapped here
 * (`kinds`: also how many of each kind, for the report). */
static int shared_files_of(int kinds[3])
{
    FILE *f = fopen("/proc/self/maps", "r");
    char line[512];
    unsigned long inodes[4096];
    int n = 0;

    if (NULL == f) return -1;
    while (fgets(line, sizeof(line), f)) {
        unsigned long inode = 0;
        int seen = 0;
        if (!strstr(line, "memfd:osc_ucxx") && !strstr(line, "SYSV") && !strstr(line, "ucx_shm")) {
            continue;
        }
        if (1 != sscanf(line, "%*s %*s %*s %*s %lu", &inode)) continue;
        for (int i = 0; i < n && !seen; ++i) seen = inodes[i] == inode;
        if (!seen && n < 4096) {
            inodes[n++] = inode;
            if (kinds) kinds[strstr(line, "memfd") ? 0 : strstr(line, "SYSV") ? 1 : 2]++;
        }
    }
    fclose(f);
    return n;
}


/* May every process read the next one's memory by cross-memory attach
 * (as osc/ucxx reaches create and dynamic windows' memory on the node)? */
static int cma_everywhere(void)
{
    static int64_t probe = 0x5a5a;
    int64_t got = 0, mine[2] = {(int64_t) getpid(), (int64_t) (uintptr_t) &probe}, theirs[2];
    struct iovec local = {&got, sizeof(got)}, remote;
    int ok, all;

    MPI_Sendrecv(mine, 2, MPI_INT64_T, prev, 7, theirs, 2, MPI_INT64_T, next, 7, MPI_COMM_WORLD,
                 MPI_STATUS_IGNORE);
    remote.iov_base = (void *) (uintptr_t) theirs[1];
    remote.iov_len = sizeof(got);
    ok = sizeof(got) == process_vm_readv((pid_t) theirs[0], &local, 1, &remote, 1, 0) &&
         0x5a5a == got;
    MPI_Allreduce(&ok, &all, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
    return all;
}

/* The bound the run line set, or 0. */
static int peer_cap(void)
{
    const char *tune = getenv("OSC_UCXX_TEST_TUNE");
    const char *p = NULL == tune ? NULL : strstr(tune, "peer_cap=");
    return NULL == p ? 0 : atoi(p + strlen("peer_cap="));
}

static int64_t *slots(tu_win_t *w)
{
    return (int64_t *) w->base;
}

static void check_memory(tu_win_t *w, int round, int wi, int plus, const char *what)
{
    for (int o = 0; o < nprocs; ++o) {
        int64_t want = value(o, round, wi, w->flavor) + plus;
        TU_CHECK(slots(w)[o] == want, "%s window %d round %d %s: slot of rank %d is %#llx, "
                 "want %#llx", tu_flavor_names[w->flavor], wi, round, what, o,
                 (unsigned long long) slots(w)[o], (unsigned long long) want);
    }
}

static void one_round(tu_win_t *w, int round, int wi)
{
    int64_t mine = value(me, round, wi, w->flavor), plus = mine + 1, one = 1;
    int64_t *back = malloc(nprocs * sizeof(int64_t));

    /* passive target, all to all */
    TU_MPI(MPI_Win_lock_all(0, w->win));
    for (int t = 0; t < nprocs; ++t) {
        TU_MPI(MPI_Put(&mine, 1, MPI_INT64_T, t, tu_disp(w, t, me), 1, MPI_INT64_T, w->win));
    }
    TU_MPI(MPI_Win_unlock_all(w->win));
    MPI_Barrier(MPI_COMM_WORLD);
    TU_MPI(MPI_Win_lock(MPI_LOCK_SHARED, me, 0, w->win));
    check_memory(w, round, wi, 0, "lock_all put");
    TU_MPI(MPI_Win_unlock(me, w->win));

    /* fence: get back */
    TU_MPI(MPI_Win_fence(0, w->win));
    for (int t = 0; t < nprocs; ++t) {
        back[t] = -1;
        TU_MPI(MPI_Get(&back[t], 1, MPI_INT64_T, t, tu_disp(w, t, me), 1, MPI_INT64_T, w->win));
    }
    TU_MPI(MPI_Win_fence(0, w->win));
    for (int t = 0; t < nprocs; ++t) {
        TU_CHECK(back[t] == mine, "%s window %d round %d: got %#llx back from rank %d, want %#llx",
                 tu_flavor_names[w->flavor], wi, round, (unsigned long long) back[t], t,
                 (unsigned long long) mine);
    }

    /* fence: put to all */
    for (int t = 0; t < nprocs; ++t) {
        TU_MPI(MPI_Put(&plus, 1, MPI_INT64_T, t, tu_disp(w, t, me), 1, MPI_INT64_T, w->win));
    }
    TU_MPI(MPI_Win_fence(0, w->win));
    check_memory(w, round, wi, 1, "fence put");
    TU_MPI(MPI_Win_fence(MPI_MODE_NOSUCCEED, w->win));
    free(back);
    if (round > 0 || wi > 0 || nprocs > 32) return;   /* (the two below once: CI time) */

    /* PSCW, all to all */
    plus = mine + 2;
    tu_pscw_put_all(w, world, &plus, me);
    TU_MPI(MPI_Win_lock(MPI_LOCK_SHARED, me, 0, w->win));
    check_memory(w, round, wi, 2, "PSCW put");
    TU_MPI(MPI_Win_unlock(me, w->win));

    /* accumulates of every rank into one element of every rank */
    MPI_Barrier(MPI_COMM_WORLD);
    TU_MPI(MPI_Win_lock_all(0, w->win));
    for (int t = 0; t < nprocs; ++t) {
        TU_MPI(MPI_Accumulate(&one, 1, MPI_INT64_T, t, tu_disp(w, t, 0), 1, MPI_INT64_T, MPI_SUM,
                              w->win));
    }
    TU_MPI(MPI_Win_unlock_all(w->win));
    MPI_Barrier(MPI_COMM_WORLD);
    TU_MPI(MPI_Win_lock(MPI_LOCK_SHARED, me, 0, w->win));
    TU_CHECK(slots(w)[0] == value(0, round, wi, w->flavor) + 2 + nprocs,
             "%s window %d round %d: rank 0's slot is %#llx after %d accumulates of 1, want %#llx",
             tu_flavor_names[w->flavor], wi, round, (unsigned long long) slots(w)[0], nprocs,
             (unsigned long long) (value(0, round, wi, w->flavor) + 2 + nprocs));
    TU_MPI(MPI_Win_unlock(me, w->win));
}

/* A new window and an epoch with the next rank alone, then how many peers'
 * files are mapped here against the start: the peer table's (memfd) ones
 * at most the bound, and on windows of one node, which need no UCX
 * endpoint on the node, all of them.  (Dynamic windows' regions are read
 * from the owner's region table where cross-memory attach reaches it, and
 * asked for by active message where not; windows across nodes take UCX
 * atomics on the state words of every peer: UCX endpoints on the node,
 * whose peers' segments UCX keeps mapped after they are closed,
 * docs/scale.md.) */
static void check_bound(int flavor, const int base[3], int cma)
{
    int cap = peer_cap(), worst = 0, kinds[3] = {0, 0, 0}, ours, all;
    int64_t one = me;
    tu_win_t w;

    tu_win_create(flavor, nprocs * sizeof(int64_t), 8, MPI_INFO_NULL, MPI_COMM_WORLD, &w);
    if (MPI_WIN_NULL == w.win) return;
    TU_MPI(MPI_Win_lock(MPI_LOCK_SHARED, next, 0, w.win));
    TU_MPI(MPI_Put(&one, 1, MPI_INT64_T, next, tu_disp(&w, next, me), 1, MPI_INT64_T, w.win));
    TU_MPI(MPI_Win_unlock(next, w.win));
    (void) shared_files_of(kinds);
    ours = kinds[0] - base[0];
    all = kinds[0] + kinds[1] + kinds[2] - base[0] - base[1] - base[2];
    MPI_Allreduce(&all, &worst, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
    if (0 == me) {
        printf("%s: shared memory files mapped after the bounded epoch: at most %d "
               "(bound %d, %d ranks)\n", tu_flavor_names[flavor], worst, cap, nprocs);
    }
    /* (+ 2: our own file, the group's segment of a shared window) */
    if (cap > 0 && nprocs > cap + 3 && TU_ALLOC_SHARED != flavor) {
        TU_CHECK(ours <= cap + 2 && ((TU_DYNAMIC == flavor && !cma) || tu_multi_node() ||
                                     all <= cap + 2),
                 "%s: %d shared-memory files (%d peer table's) mapped beyond the start, bound "
                 "%d (now %d memfd, %d SYSV, %d UCX POSIX)", tu_flavor_names[flavor], all, ours,
                 cap, kinds[0], kinds[1], kinds[2]);
    }
    MPI_Barrier(MPI_COMM_WORLD);
    tu_win_free(&w);
}

int main(int argc, char **argv)
{
    int wins = 3, rounds = 3, base[3] = {0, 0, 0}, rc, cma;

    tu_init_ring(&argc, &argv, &me, &nprocs, &next, &prev);
    for (int i = 1; i < argc - 1; ++i) {
        if (!strcmp(argv[i], "-w")) wins = atoi(argv[++i]);
        else if (!strcmp(argv[i], "-r")) rounds = atoi(argv[++i]);
    }
    MPI_Comm_group(MPI_COMM_WORLD, &world);
    cma = cma_everywhere();
    MPI_Barrier(MPI_COMM_WORLD);
    (void) shared_files_of(base);
    for (int flavor = 0; flavor < TU_NFLAVORS_ALL; ++flavor) {
        tu_win_t *w = calloc(wins, sizeof(*w));
        int made = 1;
        if (!tu_flavor_or_all(flavor)) continue;
        for (int i = 0; i < wins && made; ++i) {
            tu_win_create(flavor, nprocs * sizeof(int64_t), 8, MPI_INFO_NULL, MPI_COMM_WORLD,
                          &w[i]);
            made = MPI_WIN_NULL != w[i].win;
        }
        if (!made) {
            if (0 == me) printf("%s: n/a\n", tu_flavor_names[flavor]);
            free(w);
            continue;
        }
        for (int r = 0; r < rounds; ++r) {
            for (int i = 0; i < wins; ++i) one_round(&w[i], r, i);
        }
        check_bound(flavor, base, cma);
        for (int i = 0; i < wins; ++i) tu_win_free(&w[i]);
        free(w);
    }
    MPI_Group_free(&world);
    rc = tu_finish("peer_bound");
    MPI_Finalize();
    return rc;
}
