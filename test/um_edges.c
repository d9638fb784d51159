/* um_edges: window memory whose first or last page also holds other data
 * (a window smaller than a page, malloc'ed memory): osc/ucxx leaves all of
 * it where it is, so the other data, other threads' writes next to the
 * window and a fork()ed child's copy all behave as with any memory.
 *
 * Rank 0 is the target, every other rank an origin.
 *   1. Values, create and dynamic windows, sizes from 1 byte to 3 pages at a
 *      page-aligned base and 13 bytes past one, inside a heap arena whose
 *      other bytes (same pages) carry a canary: an origin's put of the whole
 *      window, the target's local stores read back by gets, MPI_SUM
 *      accumulates and fetch_and_op on an element; the canaries stay intact.
 *      On create windows MPI_Win_shared_query gives peers no pointer (the
 *      memory is the target's own), or one to the same bytes.
 *   2. Lost writes: on every rank (MPI_THREAD_MULTIPLE), a thread increments
 *      a counter on the page of a fresh window while the main thread creates
 *      (or attaches) it; every increment must be there afterwards.
 *   3. fork(): a child that writes to the target's window page (a canary
 *      outside the window and a window byte) changes nothing in the parent.
 */
#define _GNU_SOURCE
#include "testutil.h"
#include <pthread.h>
#include <stdint.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

static int me, nprocs, thread_multiple;
static long page;
static MPI_Comm node;

static unsigned char canary(size_t i) { return (unsigned char) (0xa5 ^ (i * 13)); }
static unsigned char pattern(size_t i, int gen) { return (unsigned char) (i * 7 + gen * 31 + 1); }

typedef struct {
    unsigned char *arena;   /* 4 pages, page-aligned, from the heap */
    unsigned char *win;     /* the window's bytes inside it */
    size_t len;
} layout_t;

static void check_canaries(const layout_t *l, const char *what)
{
    size_t off = (size_t) (l->win - l->arena), bad = 0;
    for (size_t i = 0; i < 4 * (size_t) page; ++i) {
        if ((i < off || i >= off + l->len) && l->arena[i] != canary(i)) bad++;
    }
    TU_CHECK(0 == bad, "%s: %zu canary bytes outside the window changed", what, bad);
}

static MPI_Win make_window(int dynamic, layout_t *l, MPI_Aint *remote)
{
    MPI_Win win;
    MPI_Aint addr = 0;
    if (!dynamic) {
        TU_MPI(MPI_Win_create(0 == me ? l->win : NULL, 0 == me ? (MPI_Aint) l->len : 0, 1,
                              MPI_INFO_NULL, MPI_COMM_WORLD, &win));
        *remote = 0;
        return win;
    }
    TU_MPI(MPI_Win_create_dynamic(MPI_INFO_NULL, MPI_COMM_WORLD, &win));
    if (0 == me) {
        TU_MPI(MPI_Win_attach(win, l->win, (MPI_Aint) l->len));
        MPI_Get_address(l->win, &addr);
    }
    MPI_Bcast(&addr, 1, MPI_AINT, 0, MPI_COMM_WORLD);
    *remote = addr;
    return win;
}

/* Part 1 for one flavor and layout. */
static void values(int dynamic, size_t len, size_t off, int gen)
{
    const char *fl = dynamic ? "dynamic" : "create";
    layout_t l = {NULL, NULL, len};
    unsigned char *buf = malloc(len);
    MPI_Aint remote;
    MPI_Win win;

    if (0 == me) {
        TU_CHECK(0 == posix_memalign((void **) &l.arena, page, 4 * page), "posix_memalign");
        for (size_t i = 0; i < 4 * (size_t) page; ++i) l.arena[i] = canary(i);
        l.win = l.arena + off;
        memset(l.win, 0, len);
    }
    win = make_window(dynamic, &l, &remote);
    if (0 == me) {
        check_canaries(&l, "after creation");
    }

    /* an origin's put of the whole window */
    if (1 == me) {
        for (size_t i = 0; i < len; ++i) buf[i] = pattern(i, gen);
        TU_MPI(MPI_Win_lock(MPI_LOCK_EXCLUSIVE, 0, 0, win));
        TU_MPI(MPI_Put(buf, (int) len, MPI_BYTE, 0, remote, (int) len, MPI_BYTE, win));
        TU_MPI(MPI_Win_unlock(0, win));
    }
    MPI_Barrier(MPI_COMM_WORLD);
    if (0 == me) {
        size_t bad = 0;
        TU_MPI(MPI_Win_lock(MPI_LOCK_EXCLUSIVE, 0, 0, win));
        for (size_t i = 0; i < len; ++i) bad += l.win[i] != pattern(i, gen);
        TU_CHECK(0 == bad, "%s, %zu bytes at page+%zu: %zu bytes of the put wrong", fl, len, off,
                 bad);
        check_canaries(&l, "after a put");
        /* the target's own stores, read by every origin */
        for (size_t i = 0; i < len; ++i) l.win[i] = pattern(i, gen + 1);
        TU_MPI(MPI_Win_unlock(0, win));
    }
    MPI_Barrier(MPI_COMM_WORLD);
    if (0 != me) {
        size_t bad = 0;
        memset(buf, 0, len);
        TU_MPI(MPI_Win_lock(MPI_LOCK_SHARED, 0, 0, win));
        TU_MPI(MPI_Get(buf, (int) len, MPI_BYTE, 0, remote, (int) len, MPI_BYTE, win));
        TU_MPI(MPI_Win_unlock(0, win));
        for (size_t i = 0; i < len; ++i) bad += buf[i] != pattern(i, gen + 1);
        TU_CHECK(0 == bad, "%s, %zu bytes at page+%zu: %zu bytes of the get wrong", fl, len, off,
                 bad);
        if (!dynamic) {
            MPI_Aint qsize = -1;
            int du;
            unsigned char *q = NULL;
            TU_MPI(MPI_Win_shared_query(win, 0, &qsize, &du, &q));
            if (NULL != q && qsize == (MPI_Aint) len) {
                TU_CHECK(0 == memcmp(q, buf, len), "shared_query: other bytes than a get");
            }
        }
    }
    /* MPI_SUM accumulates and fetch_and_op on an aligned element */
    if (len >= 16) {
        size_t e = ((off + 7) & ~(size_t) 7) - off;   /* first 8-aligned byte */
        int64_t one = 1, old = 0, base = 0;
        int n = 20;
        MPI_Barrier(MPI_COMM_WORLD);  /* every get done */
        if (0 == me) {
            TU_MPI(MPI_Win_lock(MPI_LOCK_EXCLUSIVE, 0, 0, win));
            memset(l.win + e, 0, 8);
            TU_MPI(MPI_Win_unlock(0, win));
        }
        MPI_Barrier(MPI_COMM_WORLD);
        if (0 != me && e + 8 <= len) {
            TU_MPI(MPI_Win_lock(MPI_LOCK_SHARED, 0, 0, win));
            for (int i = 0; i < n; ++i) {
                TU_MPI(MPI_Accumulate(&one, 1, MPI_INT64_T, 0, remote + e, 1, MPI_INT64_T,
                                      MPI_SUM, win));
            }
            TU_MPI(MPI_Fetch_and_op(&one, &old, MPI_INT64_T, 0, remote + e, MPI_SUM, win));
            TU_MPI(MPI_Win_unlock(0, win));
            TU_CHECK(old >= n && old < (int64_t) (n + 1) * (nprocs - 1), "fetch_and_op: %ld",
                     (long) old);
        }
        MPI_Barrier(MPI_COMM_WORLD);
        if (0 == me && e + 8 <= len) {
            TU_MPI(MPI_Win_lock(MPI_LOCK_EXCLUSIVE, 0, 0, win));
            memcpy(&base, l.win + e, 8);
            TU_MPI(MPI_Win_unlock(0, win));
            TU_CHECK(base == (int64_t) (n + 1) * (nprocs - 1), "%s: accumulated %ld, not %ld",
                     fl, (long) base, (long) (n + 1) * (nprocs - 1));
            check_canaries(&l, "after accumulates");
        }
    }
    MPI_Barrier(MPI_COMM_WORLD);
    if (dynamic && 0 == me) TU_MPI(MPI_Win_detach(win, l.win));
    TU_MPI(MPI_Win_free(&win));
    if (0 == me) {
        check_canaries(&l, "after free");
        free(l.arena);
    }
    free(buf);
}

/* ---- Part 2: a thread writing next to the window during its creation ---- */

typedef struct {
    volatile uint64_t *counter;
    volatile int go, stop;
    uint64_t done;          /* increments the thread made */
} writer_t;

static void *writer(void *arg)
{
    writer_t *w = arg;
    uint64_t n = 0;
    while (!w->go) {
    }
    while (!w->stop || n < 1000) {
        __atomic_fetch_add(w->counter, 1, __ATOMIC_RELAXED);
        n++;
    }
    w->done = n;
    return NULL;
}

static void lost_writes(int dynamic, int iters)
{
    uint64_t lost_total = 0;
    int lost_iters = 0;
    for (int it = 0; it < iters; ++it) {
        /* fresh private pages each time */
        unsigned char *pg = mmap(NULL, 2 * page, PROT_READ | PROT_WRITE,
                                 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        writer_t w = {(volatile uint64_t *) pg, 0, 0, 0};
        unsigned char *mem = pg + 64;
        size_t len = (size_t) page;   /* edges on both pages */
        pthread_t t;
        MPI_Win win;

        *w.counter = 0;
        pthread_create(&t, NULL, writer, &w);
        w.go = 1;
        while (0 == *w.counter) {
        }
        if (dynamic) {
            TU_MPI(MPI_Win_create_dynamic(MPI_INFO_NULL, MPI_COMM_WORLD, &win));
            TU_MPI(MPI_Win_attach(win, mem, (MPI_Aint) len));
        } else {
            TU_MPI(MPI_Win_create(mem, (MPI_Aint) len, 1, MPI_INFO_NULL, MPI_COMM_WORLD, &win));
        }
        w.stop = 1;
        pthread_join(t, NULL);
        if (*w.counter != w.done) {
            lost_iters++;
            lost_total += w.done - *w.counter;
        }
        if (dynamic) TU_MPI(MPI_Win_detach(win, mem));
        TU_MPI(MPI_Win_free(&win));
        munmap(pg, 2 * page);
    }
    TU_CHECK(0 == lost_iters, "%s: %lu increments of another thread lost in %d of %d creations",
             dynamic ? "attach" : "create", (unsigned long) lost_total, lost_iters, iters);
}

/* ---- Part 3: fork() ---- */
static void forked_child(void)
{
    layout_t l = {NULL, NULL, 100};
    MPI_Aint remote;
    MPI_Win win;

    if (0 == me) {
        TU_CHECK(0 == posix_memalign((void **) &l.arena, page, 4 * page), "posix_memalign");
        for (size_t i = 0; i < 4 * (size_t) page; ++i) l.arena[i] = canary(i);
        l.win = l.arena + 200;
        memset(l.win, 7, l.len);
    }
    win = make_window(0, &l, &remote);
    if (0 == me) {
        pid_t pid = fork();
        int status = -1;
        if (0 == pid) {
            /* the child sees the parent's bytes, then writes into them */
            int ok = l.arena[0] == canary(0) && l.win[0] == 7;
            l.arena[0] ^= 0xff;
            l.win[0] = 99;
            _exit(ok ? 0 : 3);
        }
        TU_CHECK(pid > 0, "fork failed");
        waitpid(pid, &status, 0);
        TU_CHECK(WIFEXITED(status) && 0 == WEXITSTATUS(status),
                 "the child did not see the parent's bytes (status %d)", status);
        TU_CHECK(l.win[0] == 7, "a fork()ed child's write reached the parent's window");
        check_canaries(&l, "after a child wrote");
    }
    TU_MPI(MPI_Win_free(&win));
    if (0 == me) free(l.arena);
}

int main(int argc, char **argv)
{
    static const size_t lens[] = {1, 8, 100, 4095, 4096 + 17, 3 * 4096 - 5};
    int provided, spans, gen = 0;

    MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
    MPI_Comm_rank(MPI_COMM_WORLD, &me);
    MPI_Comm_size(MPI_COMM_WORLD, &nprocs);
    page = sysconf(_SC_PAGESIZE);
    node = tu_node_comm(MPI_COMM_WORLD, &spans);
    thread_multiple = provided == MPI_THREAD_MULTIPLE;

    for (int dynamic = 0; dynamic < 2; ++dynamic) {
        for (size_t i = 0; i < sizeof(lens) / sizeof(lens[0]); ++i) {
            size_t len = lens[i] > (size_t) 3 * page ? (size_t) 3 * page : lens[i];
            values(dynamic, len, 0, gen++);
            values(dynamic, len, 13, gen++);
        }
    }
    if (thread_multiple) {
        int iters = tu_slow_transport() ? 20 : 100;
        lost_writes(0, iters);
        lost_writes(1, iters);
    }
    forked_child();
    MPI_Comm_free(&node);
    return tu_finish("um_edges") | MPI_Finalize();
}
