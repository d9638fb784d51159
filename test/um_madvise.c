/* um_madvise: pages that were window memory are private anonymous memory
 * again once the window is freed (or the region detached), as with any
 * other component:
 *   - madvise(MADV_DONTNEED) on them drops their contents: they read zero;
 *   - madvise(MADV_FREE) on them succeeds (it fails with EINVAL on shared
 *     mappings);
 * for MPI_Win_create memory and for regions of a dynamic window, 1 MiB of
 * mmap()ed memory each, after puts from the previous rank.
 *
 * --jemalloc: the same promise as allocators rely on it.  The program runs
 * itself again under jemalloc (LD_PRELOAD of Debian's libjemalloc2, purging
 * at once), then 20 times: malloc 1 MiB, fill it, a window over it, free the
 * window, free the memory, and calloc 1 MiB, which must be zero (jemalloc
 * trusts that purged pages read zero).
 */
#include "testutil.h"
#include <dlfcn.h>
#include <errno.h>
#include <sys/mman.h>
#include <unistd.h>

#define M (1 << 20)

static int me, nprocs;

/* A window over buf (or buf attached to a dynamic window), a put of 4 KiB
 * into the next rank's, then the window freed (or buf detached). */
static void use_as_window(char *buf, size_t len, int dynamic)
{
    MPI_Win win;
    MPI_Aint addr, *all = malloc(nprocs * sizeof(MPI_Aint));
    char val[4096];
    int next = (me + 1) % nprocs;

    if (dynamic) {
        TU_MPI(MPI_Win_create_dynamic(MPI_INFO_NULL, MPI_COMM_WORLD, &win));
        TU_MPI(MPI_Win_attach(win, buf, len));
    } else {
        TU_MPI(MPI_Win_create(buf, len, 1, MPI_INFO_NULL, MPI_COMM_WORLD, &win));
    }
    MPI_Get_address(buf, &addr);
    MPI_Allgather(&addr, 1, MPI_AINT, all, 1, MPI_AINT, MPI_COMM_WORLD);
    memset(val, 0x77, sizeof(val));
    TU_MPI(MPI_Win_lock(MPI_LOCK_SHARED, next, 0, win));
    TU_MPI(MPI_Put(val, sizeof(val), MPI_BYTE, next, dynamic ? all[next] : 0, sizeof(val),
                   MPI_BYTE, win));
    TU_MPI(MPI_Win_unlock(next, win));
    MPI_Barrier(MPI_COMM_WORLD);
    if (dynamic) TU_MPI(MPI_Win_detach(win, buf));
    TU_MPI(MPI_Win_free(&win));
    free(all);
}

static void madvise_after(int dynamic)
{
    const char *mode = dynamic ? "dynamic" : "create";
    char *buf = mmap(NULL, M, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    int rc;

    TU_CHECK(MAP_FAILED != buf, "mmap failed");
    if (MAP_FAILED == buf) return;
    memset(buf, 0x5a, M);
    use_as_window(buf, M, dynamic);
    TU_CHECK(0x77 == (unsigned char) buf[0], "%s: the put did not arrive", mode);
    rc = madvise(buf, M, MADV_DONTNEED);
    TU_CHECK(0 == rc, "%s: MADV_DONTNEED failed: %s", mode, strerror(errno));
    TU_CHECK(0 == tu_count_not(buf, M, 0),
             "%s: after MADV_DONTNEED %ld bytes kept their data", mode,
             tu_count_not(buf, M, 0));
    memset(buf, 0x5a, M);
    rc = madvise(buf, M, MADV_FREE);
    TU_CHECK(0 == rc, "%s: MADV_FREE failed: %s", mode, strerror(errno));
    munmap(buf, M);
}

static int calloc_after(void)
{
    int dirty = 0;
    for (int i = 0; i < 20; i++) {
        char *p = malloc(M), *q;
        memset(p, 0xab, M);
        use_as_window(p, M, i % 2);
        free(p);
        q = calloc(1, M);
        dirty += 0 != tu_count_not(q, M, 0);
        free(q);
    }
    TU_CHECK(0 == dirty, "jemalloc: calloc returned non-zero memory in %d of 20 calls", dirty);
    return 0;
}

int main(int argc, char **argv)
{
    int jemalloc = tu_opt_flag(argc, argv, "--jemalloc");
    if (jemalloc && NULL == getenv("UM_JEMALLOC")) {
        /* once more, under jemalloc, purging freed pages at once */
        setenv("UM_JEMALLOC", "1", 1);
        setenv("LD_PRELOAD", "libjemalloc.so.2", 1);
        setenv("MALLOC_CONF", "dirty_decay_ms:0,muzzy_decay_ms:0", 1);
        execv("/proc/self/exe", argv);
        fprintf(stderr, "um_madvise: cannot run itself again: %s\n", strerror(errno));
        return 1;
    }
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &me);
    MPI_Comm_size(MPI_COMM_WORLD, &nprocs);
    tu_watchdog("um_madvise", 120);
    if (jemalloc) {
        /* (Debian: libjemalloc2; .ci/packages installs it) */
        TU_CHECK(NULL != dlsym(RTLD_DEFAULT, "mallctl"), "jemalloc is not loaded (libjemalloc2)");
        calloc_after();
    } else {
        madvise_after(0);
        madvise_after(1);
    }
    int rc = tu_finish(jemalloc ? "um_madvise --jemalloc" : "um_madvise");
    MPI_Finalize();
    return rc;
}
