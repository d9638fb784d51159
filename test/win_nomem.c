/* win_nomem: window creation that cannot get its memory.
 *
 * MPI_Win_allocate and MPI_Win_allocate_shared are collective, but each
 * process asks for its own size, so one process can fail where the others
 * succeed.  Every process must then return an error from the same call
 * (none may wait for a peer that gave up, none may keep a half-made window),
 * and later windows must work.  Cases, each with the failing process first
 * the last rank, then every rank:
 *   - 1 GiB with the address space limited (RLIMIT_AS) to 256 MiB more than
 *     the process uses: the mapping fails inside the library;
 *   - MPI_Win_allocate of more than the machine's memory and swap together:
 *     refused up front, quickly, without filling /dev/shm on the way (UCX's
 *     POSIX allocator writes a segment's whole length to test that the
 *     space exists: past the machine's memory that takes the OOM killer);
 *   - MPI_Win_allocate_shared whose segment is larger than the free space of
 *     /dev/shm: such a segment maps (the file is sparse) but the first store
 *     past the free space is a SIGBUS, so it must be refused.
 * After each failure, every flavor gets a window over which each rank puts
 * its rank into its right neighbour, checked after a fence.
 */
#include "testutil.h"
#include <stdint.h>
#include <sys/resource.h>
#include <sys/statvfs.h>
#include <sys/sysinfo.h>
#include <unistd.h>

static int me, nprocs;

static uint64_t shm_free(void)
{
    struct statvfs s;
    return 0 == statvfs("/dev/shm", &s) ? (uint64_t) s.f_bavail * s.f_frsize : 0;
}

static uint64_t machine_memory(void)
{
    struct sysinfo si;
    if (0 != sysinfo(&si)) return 0;
    return ((uint64_t) si.totalram + si.totalswap) * si.mem_unit;
}

/* A window of every flavor still works: ring put + fence, value checked. */
static void works(const char *after)
{
    for (int f = 0; f < TU_NFLAVORS_ALL; f++) {
        tu_win_t w;
        int64_t val = me;
        if (!tu_flavor_or_all(f)) continue;
        tu_win_create(f, sizeof(int64_t), sizeof(int64_t), MPI_INFO_NULL, MPI_COMM_WORLD, &w);
        if (MPI_WIN_NULL == w.win) continue;
        TU_MPI(MPI_Win_fence(0, w.win));
        TU_MPI(MPI_Put(&val, 1, MPI_INT64_T, (me + 1) % nprocs,
                       tu_disp(&w, (me + 1) % nprocs, 0), 1, MPI_INT64_T, w.win));
        TU_MPI(MPI_Win_fence(0, w.win));
        TU_CHECK(*(int64_t *) w.base == (me + nprocs - 1) % nprocs,
                 "%s window after %s: holds %ld, want %d", tu_flavor_names[f], after,
                 (long) *(int64_t *) w.base, (me + nprocs - 1) % nprocs);
        tu_win_free(&w);
    }
}

/* One creation in which the processes of `failing` (all or the last rank)
 * ask for `big` and the others for a page; every process must get an
 * error, within `max_s` seconds. */
static void expect_failure(int shared, MPI_Aint big, int all_fail, int limit_as, double max_s,
                           const char *what)
{
    int fails = all_fail || me == nprocs - 1, err, cls;
    MPI_Aint size = fails ? big : 4096;
    struct rlimit old, lim;
    MPI_Win win = MPI_WIN_NULL;
    void *base = NULL;
    double t;

    if (limit_as && fails) {
        unsigned long vm_pages = 0;
        FILE *f = fopen("/proc/self/statm", "r");
        int ok = NULL != f && 1 == fscanf(f, "%lu", &vm_pages) && 0 == getrlimit(RLIMIT_AS, &old);
        if (f) fclose(f);
        TU_CHECK(ok, "cannot read the address space size or limit");
        lim = old;
        lim.rlim_cur = vm_pages * (rlim_t) sysconf(_SC_PAGESIZE) + ((rlim_t) 256 << 20);
        TU_CHECK(0 == setrlimit(RLIMIT_AS, &lim), "setrlimit failed");
    }
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    t = MPI_Wtime();
    if (shared) {
        err = MPI_Win_allocate_shared(size, 1, MPI_INFO_NULL, MPI_COMM_WORLD, &base, &win);
    } else {
        err = MPI_Win_allocate(size, 1, MPI_INFO_NULL, MPI_COMM_WORLD, &base, &win);
    }
    t = MPI_Wtime() - t;
    if (limit_as && fails) setrlimit(RLIMIT_AS, &old);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_ARE_FATAL);
    cls = tu_err_class(err);
    /* (Open MPI 4.1's binding reports every failed creation as MPI_ERR_WIN) */
    TU_CHECK(MPI_ERR_NO_MEM == cls || MPI_ERR_WIN == cls,
             "%s (%s, %s): this rank asked %ld bytes, got error class %d, want MPI_ERR_NO_MEM "
             "(%d) or MPI_ERR_WIN (%d)", what, shared ? "allocate_shared" : "allocate",
             all_fail ? "every rank" : "last rank", (long) size, cls, MPI_ERR_NO_MEM,
             MPI_ERR_WIN);
    TU_CHECK(t < max_s, "%s: the failure took %.1f s (at most %.0f)", what, t, max_s);
    if (MPI_SUCCESS == err) MPI_Win_free(&win);
    works(what);
}

int main(int argc, char **argv)
{
    tu_parse_args(argc, argv);
    tu_init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &me);
    MPI_Comm_size(MPI_COMM_WORLD, &nprocs);

    uint64_t mem = machine_memory(), shm_before = shm_free();
    TU_CHECK(mem > 0 && shm_before > 0, "cannot read the machine's memory (%lu) or /dev/shm's "
             "free space (%lu)", (unsigned long) mem, (unsigned long) shm_before);
    works("nothing");
    for (int all = 0; all < 2; all++) {
        expect_failure(0, (MPI_Aint) 1 << 30, all, 1, 30.0, "1 GiB past RLIMIT_AS");
        /* more than memory + swap, but inside the 47-bit address space */
        expect_failure(0, (MPI_Aint) (mem + ((uint64_t) 1 << 30)), all, 0, 5.0,
                       "MPI_Win_allocate of more than memory + swap");
        if (!tu_multi_node()) {
            uint64_t over = shm_free() / (all ? nprocs : 1) + ((uint64_t) 1 << 30);
            expect_failure(1, (MPI_Aint) over, all, 0, 5.0,
                           "MPI_Win_allocate_shared of more than /dev/shm holds");
        }
    }
    /* nothing left behind: /dev/shm has what it had (give or take 64 MiB) */
    uint64_t shm_after = shm_free();
    TU_CHECK(shm_after + ((uint64_t) 64 << 20) >= shm_before,
             "/dev/shm had %lu MiB free, now %lu", (unsigned long) (shm_before >> 20),
             (unsigned long) (shm_after >> 20));
    int rc = tu_finish("win_nomem");
    MPI_Finalize();
    return rc;
}
