/*
 * Copyright (c) 2026 The osc/ucxx authors. All rights reserved.
 * $COPYRIGHT$
 *
 * User memory made shareable on a node.
 *
 * UCX 1.13 maps a peer's memory into ours (ucp_rkey_ptr) only when UCX
 * allocated it, so memory the application brings (MPI_Win_attach, memory
 * handles) would be reached by emulation: an active message per operation,
 * served by the target's CPU.  Instead, when memory is attached we move the
 * whole pages inside it onto a POSIX shared-memory object: a copy into the
 * object, then one mmap(MAP_FIXED) that puts the object's pages at the same
 * addresses.  The application sees the same addresses and contents; peers on
 * the node map the object and use loads, stores and CPU atomics, as on
 * allocated windows.
 *
 * Only private anonymous memory (heap, anonymous mmap) is moved, and only the
 * pages the attachment covers entirely, so no neighbouring object shares a
 * moved page.  Pages moved once are recognised (by their mapping in
 * /proc/self/map_files or /proc/self/maps) and shared again without a copy.  Writes by another thread
 * to the attached pages during the attach itself would be lost, and after a
 * fork() the pages are shared with the child: MCA parameter
 * osc_ucxx_share_user_memory=0 turns this off.
 *
 * The objects are files in one directory per process,
 * /dev/shm/osc_ucxx.<jobid>.<vpid>/, which we remove at finalize and which
 * is registered with the PMIx server for removal when the process ends any
 * other way (killed, aborted), as btl/vader does with its segment.  Peers
 * keep their mappings until finalize, so a peer that races a detach touches
 * memory that still exists.
 */

#include "ompi_config.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "osc_ucxx_share.h"

#define SHM_PREFIX "/dev/shm"

typedef struct {
    char *addr;
    size_t size;
} share_mapping_t;

static opal_hash_table_t mappings;   /* object name -> share_mapping_t* (peers') */
static bool mappings_ready;
/* Objects we created (unlinked at finalize) and where we put them. */
typedef struct {
    char *name;
    uint64_t lo, hi;
} own_object_t;
static own_object_t *own;
static int own_count, own_cap;
static char own_dir[48];             /* "/osc_ucxx.<jobid>.<vpid>" under SHM_PREFIX, once made */
static unsigned own_serial;

/* One line of /proc/self/maps. */
typedef struct {
    uint64_t start, end, offset;
    char perms[8];
    char path[256];
} vma_t;

static bool vma_parse(const char *line, vma_t *vma)
{
    int path_at = 0;
    vma->path[0] = '\0';
    if (sscanf(line, "%" SCNx64 "-%" SCNx64 " %7s %" SCNx64 " %*s %*s %n", &vma->start,
               &vma->end, vma->perms, &vma->offset, &path_at) < 4) {
        return false;
    }
    if (path_at > 0) {
        snprintf(vma->path, sizeof(vma->path), "%s", line + path_at);
        vma->path[strcspn(vma->path, "\n")] = '\0';
    }
    return true;
}

/* How [lo, hi) is mapped: 1 = one mapping of one of our objects (filled in
 * `ours`), 2 = private anonymous read-write memory only, 0 = anything else. */
static int classify(uint64_t lo, uint64_t hi, vma_t *ours)
{
    FILE *maps = fopen("/proc/self/maps", "r");
    char line[512];
    uint64_t covered = lo;
    int kind = -1;
    vma_t vma;

    if (NULL == maps) return 0;
    while (kind != 0 && covered < hi && NULL != fgets(line, sizeof(line), maps)) {
        if (!vma_parse(line, &vma) || vma.end <= covered) continue;
        if (vma.start > covered) {
            kind = 0;  /* a hole */
        } else if (0 == strncmp(vma.path, SHM_PREFIX "/osc_ucxx.", 18) &&
                   0 == strcmp(vma.perms, "rw-s") && NULL == strstr(vma.path, "(deleted)")) {
            kind = (kind == -1 && vma.end >= hi) ? 1 : 0;
            *ours = vma;
        } else if (0 == strcmp(vma.perms, "rw-p") &&
                   ('\0' == vma.path[0] || 0 == strcmp(vma.path, "[heap]"))) {
            kind = (kind == -1 || kind == 2) ? 2 : 0;
        } else {
            kind = 0;
        }
        covered = vma.end;
    }
    fclose(maps);
    return (covered >= hi && kind > 0) ? kind : 0;
}

static void own_add(const char *name, uint64_t lo, uint64_t hi)
{
    if (own_count == own_cap) {
        int cap = own_cap ? 2 * own_cap : 16;
        void *tmp = realloc(own, cap * sizeof(*own));
        if (NULL == tmp) return;  /* the object then outlives us in /dev/shm */
        own = tmp;
        own_cap = cap;
    }
    own[own_count++] = (own_object_t){strdup(name), lo, hi};
}

/* [lo, hi) inside pages we moved, still mapped as we left them?  One
 * readlink of the mapping's /proc/self/map_files entry, which exists only
 * while a mapping has exactly those bounds, instead of reading all of
 * /proc/self/maps (tens of microseconds).  Re-attaching the same memory is
 * the common case. */
static bool own_find(uint64_t lo, uint64_t hi, vma_t *ours)
{
    char link[64];
    for (int i = own_count - 1; i >= 0; --i) {
        ssize_t n;
        if (NULL == own[i].name || lo < own[i].lo || hi > own[i].hi) continue;
        snprintf(link, sizeof(link), "/proc/self/map_files/%" PRIx64 "-%" PRIx64, own[i].lo,
                 own[i].hi);
        n = readlink(link, ours->path, sizeof(ours->path) - 1);
        if (n <= 0) return false;
        ours->path[n] = '\0';
        if (0 != strncmp(ours->path, SHM_PREFIX, strlen(SHM_PREFIX)) ||
            0 != strcmp(ours->path + strlen(SHM_PREFIX), own[i].name)) {
            return false;
        }
        ours->start = own[i].lo;
        ours->end = own[i].hi;
        ours->offset = 0;
        return true;
    }
    return false;
}

/* Move the pages [lo, hi) onto a new object `name`. */
static bool move_pages(uint64_t lo, uint64_t hi, const char *name)
{
    size_t len = hi - lo;
    void *tmp = MAP_FAILED;
    char path[sizeof(SHM_PREFIX) + 48];
    bool ok;
    int fd;

    snprintf(path, sizeof(path), SHM_PREFIX "%s", name);
    fd = open(path, O_RDWR | O_CREAT | O_EXCL, 0600);
    ok = (fd >= 0 && 0 == ftruncate(fd, (off_t) len));

    if (ok) {
        tmp = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
        ok = (MAP_FAILED != tmp);
    }
    if (ok) {
        memcpy(tmp, (void *) (uintptr_t) lo, len);
        /* MAP_FIXED replaces the old pages in one step: no moment without
         * memory there.  (Not mremap: Open MPI's and UCX's memory hooks
         * intercept it and drop its variadic new address.) */
        ok = (MAP_FAILED != mmap((void *) (uintptr_t) lo, len, PROT_READ | PROT_WRITE,
                                 MAP_SHARED | MAP_FIXED, fd, 0));
        munmap(tmp, len);
    }
    if (fd >= 0) close(fd);
    if (!ok && fd >= 0) unlink(path);
    return ok;
}

/* Our directory of objects, handed to the PMIx server to remove when we end.
 * That registration is a message nobody answers (PMIx's register_cleanup
 * sends it and returns; job control, which could wait for the
 * answer, aborts in some Open MPI 4.1 builds), so we make the directory as
 * early as we can: when a window that may share user memory is created. */
static bool own_dir_ready(void)
{
    char path[sizeof(SHM_PREFIX) + sizeof(own_dir)];
    ompi_proc_t *self;

    if ('\0' != own_dir[0]) return true;
    self = ompi_proc_local();
    snprintf(own_dir, sizeof(own_dir), "/osc_ucxx.%u.%u", (unsigned) self->super.proc_name.jobid,
             (unsigned) self->super.proc_name.vpid);
    snprintf(path, sizeof(path), SHM_PREFIX "%s", own_dir);
    if (0 != mkdir(path, 0700) && EEXIST != errno) {
        OSC_UCXX_VERBOSE(10, "cannot make %s: %s", path, strerror(errno));
        own_dir[0] = '\0';
        return false;
    }
    ompi_osc_ucxx_register_cleanup(path);
    return true;
}

void ompi_osc_ucxx_share_prepare(void)
{
    if (OSC_UCXX.share_user && OSC_UCXX.use_direct) {
        OSC_UCXX_LOCK(&OSC_UCXX.lock);
        (void) own_dir_ready();
        OSC_UCXX_UNLOCK(&OSC_UCXX.lock);
    }
}

int ompi_osc_ucxx_share_user(void *base, size_t len, ompi_osc_ucxx_share_t *desc)
{
    uint64_t page = (uint64_t) sysconf(_SC_PAGESIZE);
    uint64_t lo = ((uint64_t) (uintptr_t) base + page - 1) & ~(page - 1);
    uint64_t hi = ((uint64_t) (uintptr_t) base + len) & ~(page - 1);
    vma_t ours;
    int kind;

    memset(desc, 0, sizeof(*desc));
    if (!OSC_UCXX.share_user || !OSC_UCXX.use_direct || hi <= lo ||
        hi - lo > (uint64_t) OSC_UCXX.share_max) {
        return OMPI_SUCCESS;
    }
    OSC_UCXX_LOCK(&OSC_UCXX.lock);
    kind = own_find(lo, hi, &ours) ? 1 : classify(lo, hi, &ours);
    if (1 == kind && strlen(ours.path + strlen(SHM_PREFIX)) < sizeof(desc->name)) {
        memcpy(desc->name, ours.path + strlen(SHM_PREFIX),
               strlen(ours.path + strlen(SHM_PREFIX)) + 1);
        desc->offset = lo - ours.start + ours.offset;
    } else if (2 == kind && own_dir_ready()) {
        /* "/osc_ucxx.<10 digits>.<10 digits>/<10 digits>" fits desc->name */
        snprintf(desc->name, sizeof(desc->name), "%.36s/%u", own_dir, own_serial++);
        if (move_pages(lo, hi, desc->name)) {
            own_add(desc->name, lo, hi);
        } else {
            OSC_UCXX_VERBOSE(10, "could not move [%#" PRIx64 ", %#" PRIx64 ") to shared memory",
                             lo, hi);
            desc->name[0] = '\0';
        }
    }
    OSC_UCXX_UNLOCK(&OSC_UCXX.lock);
    if ('\0' != desc->name[0]) {
        desc->lo = lo;
        desc->hi = hi;
        OSC_UCXX_VERBOSE(50, "[%#" PRIx64 ", %#" PRIx64 ") shared as %s+%" PRIu64, lo, hi,
                         desc->name, desc->offset);
    }
    return OMPI_SUCCESS;
}

char *ompi_osc_ucxx_share_map(ompi_proc_t *owner, const ompi_osc_ucxx_share_t *desc)
{
    share_mapping_t *m = NULL;
    size_t name_len = strnlen(desc->name, sizeof(desc->name));
    char *addr = NULL;

    if (0 == name_len || name_len == sizeof(desc->name) || !OSC_UCXX.use_direct ||
        !OPAL_PROC_ON_LOCAL_NODE(owner->super.proc_flags)) {
        return NULL;
    }
    OSC_UCXX_LOCK(&OSC_UCXX.lock);
    if (!mappings_ready) {
        OBJ_CONSTRUCT(&mappings, opal_hash_table_t);
        mappings_ready = (OPAL_SUCCESS == opal_hash_table_init(&mappings, 64));
    }
    if (mappings_ready &&
        OPAL_SUCCESS != opal_hash_table_get_value_ptr(&mappings, desc->name, name_len,
                                                      (void **) &m)) {
        char path[sizeof(SHM_PREFIX) + sizeof(desc->name)];
        struct stat st;
        int fd;

        snprintf(path, sizeof(path), SHM_PREFIX "%s", desc->name);
        fd = open(path, O_RDWR);
        m = NULL;
        if (fd >= 0 && 0 == fstat(fd, &st) && st.st_size > 0 && NULL != (m = malloc(sizeof(*m)))) {
            m->size = (size_t) st.st_size;
            m->addr = mmap(NULL, m->size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
            if (MAP_FAILED == m->addr) {
                free(m);
                m = NULL;
            } else {
                opal_hash_table_set_value_ptr(&mappings, desc->name, name_len, m);
            }
        }
        if (fd >= 0) close(fd);
    }
    if (NULL != m && desc->offset + (desc->hi - desc->lo) <= m->size) {
        addr = m->addr + desc->offset;
    }
    OSC_UCXX_UNLOCK(&OSC_UCXX.lock);
    return addr;
}

void ompi_osc_ucxx_share_fini(void)
{
    if (mappings_ready) {
        void *key, *node = NULL;
        size_t key_len;
        share_mapping_t *m;
        int rc = opal_hash_table_get_first_key_ptr(&mappings, &key, &key_len, (void **) &m,
                                                   &node);
        while (OPAL_SUCCESS == rc) {
            munmap(m->addr, m->size);
            free(m);
            rc = opal_hash_table_get_next_key_ptr(&mappings, &key, &key_len, (void **) &m, node,
                                                  &node);
        }
        OBJ_DESTRUCT(&mappings);
        mappings_ready = false;
    }
    for (int i = 0; i < own_count; ++i) {
        char path[sizeof(SHM_PREFIX) + 48];
        snprintf(path, sizeof(path), SHM_PREFIX "%s", own[i].name);
        unlink(path);
        free(own[i].name);
    }
    free(own);
    own = NULL;
    if ('\0' != own_dir[0]) {
        char path[sizeof(SHM_PREFIX) + sizeof(own_dir)];
        snprintf(path, sizeof(path), SHM_PREFIX "%s", own_dir);
        rmdir(path);
        own_dir[0] = '\0';
    }
    own_count = own_cap = 0;
}

/* ------------------------------------------------------------------------- */
/* MPI_Win_allocate_shared */

/* Rank 0 makes an object for the whole group (segments back to back in rank
 * order, or each on its own pages with alloc_shared_noncontig), everyone
 * maps it, and rank 0 unlinks it at once: nothing is left in /dev/shm, and
 * the memory goes when the last process unmaps it.  Collective; every rank
 * returns the same verdict. */
int ompi_osc_ucxx_share_segment(ompi_communicator_t *comm, size_t size, bool noncontig,
                                ompi_osc_ucxx_shseg_t **out, ompi_osc_ucxx_share_t *desc)
{
    uint64_t page = (uint64_t) sysconf(_SC_PAGESIZE), mine = size;
    int nprocs = ompi_comm_size(comm), me = ompi_comm_rank(comm), ok, all_ok = 0, rc;
    char name[sizeof(desc->name)] = "", path[sizeof(SHM_PREFIX) + sizeof(name)];
    ompi_osc_ucxx_shseg_t *seg = calloc(1, sizeof(*seg));

    memset(desc, 0, sizeof(*desc));
    ok = (NULL != seg && NULL != (seg->sizes = malloc(nprocs * sizeof(uint64_t))) &&
          NULL != (seg->offsets = malloc((nprocs + 1) * sizeof(uint64_t))));
    rc = comm->c_coll->coll_allreduce(MPI_IN_PLACE, &ok, 1, MPI_INT, MPI_MIN, comm,
                                      comm->c_coll->coll_allreduce_module);
    if (OMPI_SUCCESS != rc || !ok) goto fail;
    rc = comm->c_coll->coll_allgather(&mine, 1, MPI_UINT64_T, seg->sizes, 1, MPI_UINT64_T, comm,
                                      comm->c_coll->coll_allgather_module);
    if (OMPI_SUCCESS != rc) goto fail;
    seg->offsets[0] = 0;
    for (int i = 0; i < nprocs; ++i) {
        uint64_t len = noncontig ? (seg->sizes[i] + page - 1) & ~(page - 1) : seg->sizes[i];
        seg->offsets[i + 1] = seg->offsets[i] + len;
    }
    seg->len = (size_t) ((seg->offsets[nprocs] + page - 1) & ~(page - 1));
    if (0 == seg->len) seg->len = (size_t) page;

    if (0 == me) {
        int fd = -1;
        OSC_UCXX_LOCK(&OSC_UCXX.lock);
        if (own_dir_ready()) {
            snprintf(name, sizeof(name), "%.36s/w%u", own_dir, own_serial++);
            snprintf(path, sizeof(path), SHM_PREFIX "%s", name);
            fd = open(path, O_RDWR | O_CREAT | O_EXCL, 0600);
        }
        OSC_UCXX_UNLOCK(&OSC_UCXX.lock);
        if (fd < 0 || 0 != ftruncate(fd, (off_t) seg->len)) name[0] = '\0';
        if (fd >= 0) close(fd);
    }
    rc = comm->c_coll->coll_bcast(name, sizeof(name), MPI_CHAR, 0, comm,
                                  comm->c_coll->coll_bcast_module);
    if (OMPI_SUCCESS != rc) goto fail;
    ok = ('\0' != name[0]);
    if (ok) {
        int fd;
        snprintf(path, sizeof(path), SHM_PREFIX "%s", name);
        fd = open(path, O_RDWR);
        seg->map = fd < 0 ? MAP_FAILED
                          : mmap(NULL, seg->len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
        if (fd >= 0) close(fd);
        ok = (MAP_FAILED != seg->map);
        if (!ok) seg->map = NULL;
    }
    rc = comm->c_coll->coll_allreduce(&ok, &all_ok, 1, MPI_INT, MPI_MIN, comm,
                                      comm->c_coll->coll_allreduce_module);
    if (0 == me && '\0' != name[0]) unlink(path);  /* everyone has it mapped, or gives up */
    if (OMPI_SUCCESS != rc || !all_ok) goto fail;

    if (size > 0) {
        memcpy(desc->name, name, sizeof(desc->name));
        desc->offset = seg->offsets[me];
        desc->lo = (uint64_t) (uintptr_t) (seg->map + seg->offsets[me]);
        desc->hi = desc->lo + size;
    }
    *out = seg;
    return OMPI_SUCCESS;
fail:
    ompi_osc_ucxx_share_segment_free(seg);
    *out = NULL;
    return OMPI_SUCCESS != rc ? rc : OMPI_ERR_OUT_OF_RESOURCE;
}

void ompi_osc_ucxx_share_segment_free(ompi_osc_ucxx_shseg_t *seg)
{
    if (NULL != seg) {
        if (NULL != seg->map) munmap(seg->map, seg->len);
        free(seg->sizes);
        free(seg->offsets);
        free(seg);
    }
}
