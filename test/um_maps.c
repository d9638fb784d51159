/* um_maps: making windows over the application's memory leaves its
 * mappings as they were (any rank count, one included): the mapping that
 * holds each buffer has the same permissions, offset and backing
 * (anonymous or [heap], private) before, while and after it is window
 * memory, and no mapping of the process names /dev/shm/osc_ucxx.  Buffers:
 * 1 MiB of malloc (a mapping of its own), 100 B of heap, 64 KiB of
 * anonymous mmap; as MPI_Win_create memory and attached to a dynamic window,
 * with a put from the previous rank into each.
 */
#include "testutil.h"
#include <sys/mman.h>

typedef struct {
    char perms[8], path[256];
    unsigned long offset;
} map_t;

static int me, nprocs;

/* How [p, p + len) is mapped (one mapping must hold it). */
static int mapping_of(const void *p, size_t len, map_t *m)
{
    char line[512];
    int at = 0;
    if (!tu_mapping_line((uintptr_t) p, (uintptr_t) p + len, line, sizeof(line))) return 0;
    m->path[0] = '\0';
    if (sscanf(line, "%*s %7s %lx %*s %*s %n", m->perms, &m->offset, &at) < 2) return 0;
    if (at > 0) snprintf(m->path, sizeof(m->path), "%s", line + at);
    m->path[strcspn(m->path, "\n")] = '\0';
    return 1;
}

static int no_shm_mappings(void)
{
    char line[512];
    int found = 0;
    FILE *f = fopen("/proc/self/maps", "r");
    while (f && fgets(line, sizeof(line), f)) found += NULL != strstr(line, "/dev/shm/osc_ucxx");
    if (f) fclose(f);
    return 0 == found;
}

static void same(const char *what, const char *when, const map_t *before, const void *p,
                 size_t len)
{
    map_t now;
    TU_CHECK(mapping_of(p, len, &now), "%s %s: no single mapping holds it", what, when);
    TU_CHECK(0 == strcmp(now.perms, before->perms) && 0 == strcmp(now.path, before->path) &&
             now.offset == before->offset && 'p' == now.perms[3],
             "%s %s: mapped as '%s %lx %s', was '%s %lx %s'", what, when, now.perms, now.offset,
             now.path, before->perms, before->offset, before->path);
}

int main(int argc, char **argv)
{
    const size_t lens[3] = {1 << 20, 100, 64 << 10};
    const char *names[3] = {"1 MiB malloc", "100 B heap", "64 KiB mmap"};
    char *bufs[3];
    map_t before[3];
    MPI_Win wins[3], dyn;
    MPI_Aint addr[3], *all;
    char val[64];
    int prev, next;

    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &me);
    MPI_Comm_size(MPI_COMM_WORLD, &nprocs);
    tu_watchdog("um_maps", 120);
    next = (me + 1) % nprocs;
    prev = (me + nprocs - 1) % nprocs;
    bufs[0] = malloc(lens[0]);
    bufs[1] = malloc(lens[1]);
    bufs[2] = mmap(NULL, lens[2], PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    all = malloc(3 * nprocs * sizeof(MPI_Aint));
    for (int i = 0; i < 3; i++) {
        memset(bufs[i], i + 1, lens[i]);
        TU_CHECK(mapping_of(bufs[i], lens[i], &before[i]), "%s: no mapping", names[i]);
        MPI_Get_address(bufs[i], &addr[i]);
    }
    MPI_Allgather(addr, 3, MPI_AINT, all, 3, MPI_AINT, MPI_COMM_WORLD);
    memset(val, 0x70 + me, sizeof(val));

    TU_MPI(MPI_Win_create_dynamic(MPI_INFO_NULL, MPI_COMM_WORLD, &dyn));
    for (int i = 0; i < 3; i++) {
        TU_MPI(MPI_Win_create(bufs[i], lens[i], 1, MPI_INFO_NULL, MPI_COMM_WORLD, &wins[i]));
        TU_MPI(MPI_Win_attach(dyn, bufs[i], lens[i]));
    }
    MPI_Barrier(MPI_COMM_WORLD);
    TU_MPI(MPI_Win_lock_all(0, dyn));
    for (int i = 0; i < 3; i++) {
        TU_MPI(MPI_Win_lock(MPI_LOCK_SHARED, next, 0, wins[i]));
        TU_MPI(MPI_Put(val, 32, MPI_BYTE, next, 0, 32, MPI_BYTE, wins[i]));
        TU_MPI(MPI_Win_unlock(next, wins[i]));
        TU_MPI(MPI_Put(val, 32, MPI_BYTE, next, all[3 * next + i] + 32, 32, MPI_BYTE, dyn));
    }
    TU_MPI(MPI_Win_unlock_all(dyn));
    MPI_Barrier(MPI_COMM_WORLD);
    for (int i = 0; i < 3; i++) {
        TU_CHECK((char) (0x70 + prev) == bufs[i][0] && (char) (0x70 + prev) == bufs[i][63],
                 "%s: the puts did not arrive", names[i]);
        same(names[i], "as window memory", &before[i], bufs[i], lens[i]);
    }
    TU_CHECK(no_shm_mappings(), "a mapping names /dev/shm/osc_ucxx");
    for (int i = 0; i < 3; i++) {
        TU_MPI(MPI_Win_detach(dyn, bufs[i]));
        TU_MPI(MPI_Win_free(&wins[i]));
        same(names[i], "after the windows", &before[i], bufs[i], lens[i]);
    }
    TU_MPI(MPI_Win_free(&dyn));
    TU_CHECK(no_shm_mappings(), "a mapping names /dev/shm/osc_ucxx after the windows");
    int rc = tu_finish("um_maps");
    MPI_Finalize();
    return rc;
}
