/* huge_pages: the component takes none of the huge pages the application
 * reserved (the hugetlb pool, /proc/sys/vm/nr_hugepages).  UCX 1.13 backs
 * its shared-memory allocations with pages of that pool where it can; the
 * component's UCX context is configured not to (osc_ucxx_worker.c).  Run by
 * huge_pages.sh, which reserves pages first (root only).
 * Each rank reads the hugetlb memory mapped into it (HugetlbPages of
 * /proc/self/status) before MPI_Init, after it, and after windows of every
 * flavor (MPI_Win_allocate of 8 MiB among them) carried puts, gets,
 * accumulates and atomics to every rank: it must stay 0.  The pool's free
 * count (HugePages_Free of /proc/meminfo) is printed, not checked: other
 * programs on the machine may take pages meanwhile. */
#include "testutil.h"

static long field(const char *file, const char *name)
{
    char line[256];
    long v = -1;
    FILE *f = fopen(file, "r");
    while (f && fgets(line, sizeof(line), f)) {
        if (0 == strncmp(line, name, strlen(name))) {
            v = atol(line + strlen(name));
            break;
        }
    }
    if (f) fclose(f);
    return v;
}

static long mine(void)
{
    return field("/proc/self/status", "HugetlbPages:");
}

#define BYTES (8 << 20)

static void traffic(tu_win_t *w, int me, int nprocs)
{
    int64_t v = me, old, one = 1, *buf = malloc(1 << 20);
    memset(buf, me, 1 << 20);
    TU_MPI(MPI_Win_lock_all(0, w->win));
    for (int t = 0; t < nprocs; ++t) {
        MPI_Aint d = tu_disp(w, t, 0);
        TU_MPI(MPI_Put(buf, 1 << 17, MPI_INT64_T, t, d, 1 << 17, MPI_INT64_T, w->win));
        TU_MPI(MPI_Get(buf, 1 << 17, MPI_INT64_T, t, d, 1 << 17, MPI_INT64_T, w->win));
        TU_MPI(MPI_Win_flush(t, w->win));
        TU_MPI(MPI_Accumulate(buf, 1 << 17, MPI_INT64_T, t, d, 1 << 17, MPI_INT64_T, MPI_SUM,
                              w->win));
        TU_MPI(MPI_Fetch_and_op(&one, &old, MPI_INT64_T, t, d, MPI_SUM, w->win));
        TU_MPI(MPI_Compare_and_swap(&v, &old, &old, MPI_INT64_T, t, d, w->win));
        TU_MPI(MPI_Win_flush(t, w->win));
    }
    TU_MPI(MPI_Win_unlock_all(w->win));
    free(buf);
}

int main(int argc, char **argv)
{
    long before = mine(), free0 = field("/proc/meminfo", "HugePages_Free:"), init, after;
    int me, nprocs;

    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &me);
    MPI_Comm_size(MPI_COMM_WORLD, &nprocs);
    init = mine();
    for (int f = 0; f < TU_NFLAVORS_ALL; ++f) {
        tu_win_t w;
        if (!tu_flavor_or_all(f)) continue;
        tu_win_create(f, BYTES, 1, MPI_INFO_NULL, MPI_COMM_WORLD, &w);
        if (MPI_WIN_NULL == w.win) continue;
        traffic(&w, me, nprocs);
        MPI_Barrier(MPI_COMM_WORLD);
        tu_win_free(&w);
    }
    after = mine();
    TU_CHECK(0 == before && 0 == init && 0 == after,
             "hugetlb memory mapped here: %ld kB before MPI_Init, %ld after it, %ld after the "
             "windows", before, init, after);
    if (0 == me) {
        printf("huge_pages: HugePages_Free %ld before MPI_Init, %ld after the windows "
               "(not checked: the machine's)\n", free0, field("/proc/meminfo", "HugePages_Free:"));
    }
    {
        int rc = tu_finish("huge_pages");
        MPI_Finalize();
        return rc;
    }
}
