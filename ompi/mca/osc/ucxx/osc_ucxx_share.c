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
 * Only private anonymous memory (heap, anonymous mmap) is moved.  The pages
 * at an attachment's edges also hold other data (malloc's, other threads'):
 * they are moved only while every other thread's writes to them are held off
 * (osc_ucxx_wprotect.c, osc_ucxx_share_edge_pages); where that cannot be
 * done, only the whole pages inside are moved and the edges stay private.
 * Where writes are held for whole pages too, none made during the move is
 * lost; otherwise writes by another thread to the pages during the call are.
 * Pages moved once are recognised (by their mapping in /proc/self/map_files,
 * or as the kernel lists the process's mappings: below) and shared again
 * without a copy.  An object no window
 * or attachment uses any more may be moved again, with its neighbours, when
 * a later one covers it and private memory together (the OSU pattern: a
 * window per size over whatever malloc returns).  A fork()ed child gets
 * private copies (fork_child).  MCA parameter osc_ucxx_share_user_memory=0
 * turns all of this off.
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
#include <pthread.h>
#include <stdio.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "opal/util/show_help.h"

#include "osc_ucxx_share.h"
#include "osc_ucxx_wprotect.h"

#define SHM_PREFIX "/dev/shm"

typedef struct {
    char *addr;
    size_t size;
} share_mapping_t;

static opal_hash_table_t mappings;   /* object name -> share_mapping_t* (peers') */
static bool mappings_ready;
/* Objects we created (unlinked at finalize) and where we put them. */
typedef struct {
    char *name;              /* NULL once removed */
    uint64_t lo, hi;
    int users;               /* windows and attachments using it */
} own_object_t;
static own_object_t *own;
static int own_count, own_cap;
static char own_dir[48];             /* "/osc_ucxx.<jobid>.<vpid>" under SHM_PREFIX, once made */
static unsigned own_serial;
static bool atfork_done;

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

/* own[] index of the object at `path` (under SHM_PREFIX), or -1. */
static int own_by_path(const char *path)
{
    if (0 != strncmp(path, SHM_PREFIX, strlen(SHM_PREFIX))) return -1;
    for (int i = own_count - 1; i >= 0; --i) {
        if (NULL != own[i].name && 0 == strcmp(path + strlen(SHM_PREFIX), own[i].name)) return i;
    }
    return -1;
}

/* A descriptor of a /proc/self file, opened once (under OSC_UCXX.lock);
 * proc_fd_drop closes it, with a raw system call in a fork()ed child,
 * where it names the parent's mappings. */
static bool proc_fd(int *fd, const char *path, int flags)
{
    if (*fd < 0) *fd = open(path, flags | O_CLOEXEC);
    return *fd >= 0;
}

static void proc_fd_drop(int *fd, bool raw)
{
    if (*fd >= 0) {
        if (raw) {
            syscall(SYS_close, *fd);
        } else {
            close(*fd);
        }
    }
    *fd = -1;
}

/* ------------------------------------------------------------------------- */
/* The process's mappings, walked upwards from an address.
 *
 * The kernel's PROCMAP_QUERY ioctl on /proc/self/maps (Linux 6.11 and
 * later) answers "the mapping at or above this address" in one system call.
 * Reading the text instead costs every line below the address: the kernel
 * prints each mapping and we parse it, and every window whose pages were
 * moved splits the heap, where the next window's memory is, into more of
 * them (peers' objects and state segments add more).  bench/win_cost, 100
 * create windows alive, 2 ranks: a creation spent ~300 us of its ~390 in
 * that text.  Kernels without the ioctl (Debian 12's 6.1), and
 * osc_ucxx_share_procmap_query=0, read the text. */

/* struct procmap_query of <linux/fs.h>, named ours: older headers lack it,
 * newer ones would clash with a copy under its own name */
typedef struct {
    uint64_t size, query_flags, query_addr;                  /* in (size: ours) */
    uint64_t vma_start, vma_end, vma_flags, vma_page_size;   /* out */
    uint64_t vma_offset, inode;
    uint32_t dev_major, dev_minor;
    uint32_t vma_name_size, build_id_size;                   /* in: room; out: used */
    uint64_t vma_name_addr, build_id_addr;
} pmq_t;
#define PMQ_IOCTL _IOWR('f', 17, pmq_t)
#define PMQ_READ 0x01
#define PMQ_WRITE 0x02
#define PMQ_EXEC 0x04
#define PMQ_SHARED 0x08
#define PMQ_COVERING_OR_NEXT 0x10

static int maps_fd = -1;         /* /proc/self/maps for the ioctl (proc_fd) */
static bool pmq_missing;         /* the kernel said it has no PROCMAP_QUERY */

typedef struct {
    FILE *text;                  /* NULL: by ioctl on maps_fd */
} vma_walk_t;

static bool vma_walk_open(vma_walk_t *w)
{
    w->text = NULL;
    if (OSC_UCXX.share_pmq && !pmq_missing) {
        if (proc_fd(&maps_fd, "/proc/self/maps", O_RDONLY)) return true;
    }
    w->text = fopen("/proc/self/maps", "r");
    return NULL != w->text;
}

static void vma_walk_close(vma_walk_t *w)
{
    if (NULL != w->text) fclose(w->text);
}

/* By ioctl: 1 found; 0 none at or above `from`, or one whose path is
 * longer than ours (so neither an object of ours nor the heap: the range
 * is not movable, as if it ended there); -1 no such ioctl here. */
static int vma_query(uint64_t from, vma_t *vma)
{
    pmq_t q;

    memset(&q, 0, sizeof(q));
    q.size = sizeof(q);
    q.query_flags = PMQ_COVERING_OR_NEXT;
    q.query_addr = from;
    q.vma_name_addr = (uint64_t) (uintptr_t) vma->path;
    q.vma_name_size = sizeof(vma->path);
    if (0 != ioctl(maps_fd, PMQ_IOCTL, &q)) {
        return (ENOENT == errno || ENAMETOOLONG == errno) ? 0 : -1;
    }
    if (0 == q.vma_name_size) {
        vma->path[0] = '\0';  /* anonymous */
    }
    vma->start = q.vma_start;
    vma->end = q.vma_end;
    vma->offset = q.vma_offset;
    snprintf(vma->perms, sizeof(vma->perms), "%c%c%c%c", (q.vma_flags & PMQ_READ) ? 'r' : '-',
             (q.vma_flags & PMQ_WRITE) ? 'w' : '-', (q.vma_flags & PMQ_EXEC) ? 'x' : '-',
             (q.vma_flags & PMQ_SHARED) ? 's' : 'p');
    return 1;
}

/* The first mapping that ends above `from` (as /proc/self/maps prints it);
 * false: none, or the text could not be read. */
static bool vma_next(vma_walk_t *w, uint64_t from, vma_t *vma)
{
    char line[512];

    if (NULL == w->text) {
        int rc = vma_query(from, vma);
        if (rc >= 0) return 1 == rc;
        pmq_missing = true;  /* (ENOTTY: before Linux 6.11) */
        if (!vma_walk_open(w)) return false;
    }
    while (NULL != fgets(line, sizeof(line), w->text)) {
        if (vma_parse(line, vma) && vma->end > from) return true;
    }
    return false;
}

/* How [lo, hi) is mapped: 1 = one mapping of one of our objects (filled in
 * `ours`), 2 = private anonymous read-write memory, or objects of ours no
 * window uses any more (left by earlier windows over nearby memory: moving
 * them again is safe), 0 = anything else. */
static int classify(uint64_t lo, uint64_t hi, vma_t *ours)
{
    vma_walk_t walk;
    uint64_t covered = lo;
    int kind = -1;
    vma_t vma;

    if (!vma_walk_open(&walk)) return 0;
    while (kind != 0 && covered < hi && vma_next(&walk, covered, &vma)) {
        if (vma.start > covered) {
            kind = 0;  /* a hole */
        } else if (0 == strncmp(vma.path, SHM_PREFIX "/osc_ucxx.", 18) &&
                   0 == strcmp(vma.perms, "rw-s") && NULL == strstr(vma.path, "(deleted)")) {
            int i = own_by_path(vma.path);
            if (kind == -1 && vma.end >= hi) {
                kind = 1;
                *ours = vma;
            } else {
                kind = ((kind == -1 || kind == 2) && i >= 0 && 0 == own[i].users) ? 2 : 0;
            }
        } else if (0 == strcmp(vma.perms, "rw-p") &&
                   ('\0' == vma.path[0] || 0 == strcmp(vma.path, "[heap]"))) {
            kind = (kind == -1 || kind == 2) ? 2 : 0;
        } else {
            kind = 0;
        }
        covered = vma.end;
    }
    vma_walk_close(&walk);
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
    own[own_count++] = (own_object_t){strdup(name), lo, hi, 1};
}

/* After a move of [lo, hi): objects wholly inside it are mapped nowhere
 * now (only peers may keep stale mappings, which unlink leaves alone). */
static void own_drop_inside(uint64_t lo, uint64_t hi)
{
    char path[sizeof(SHM_PREFIX) + 48];

    for (int i = 0; i < own_count; ++i) {
        if (NULL == own[i].name || 0 != own[i].users || own[i].lo < lo || own[i].hi > hi) {
            continue;
        }
        snprintf(path, sizeof(path), SHM_PREFIX "%s", own[i].name);
        unlink(path);
        free(own[i].name);
        own[i].name = NULL;
    }
}

/* Is own[i] still mapped where we put it?  One readlink of its
 * /proc/self/map_files entry, which exists only while a mapping has exactly
 * those bounds (the path is left in `path`).  Relative to the directory,
 * opened once (under OSC_UCXX.lock; fork_child closes the parent's): the
 * lookup of /proc/self was 0.9 of the 3.1 us a readlink took, most of an
 * attach of memory attached before (bench/rma_mh dyn_cr). */
static int map_files_fd = -1;

static bool own_mapped(int i, char *path, size_t size)
{
    char name[40];
    ssize_t n;

    if (!proc_fd(&map_files_fd, "/proc/self/map_files", O_RDONLY | O_DIRECTORY)) return false;
    snprintf(name, sizeof(name), "%" PRIx64 "-%" PRIx64, own[i].lo, own[i].hi);
    n = readlinkat(map_files_fd, name, path, size - 1);
    if (n <= 0) return false;
    path[n] = '\0';
    return 0 == strncmp(path, SHM_PREFIX, strlen(SHM_PREFIX)) &&
           0 == strcmp(path + strlen(SHM_PREFIX), own[i].name);
}

/* [lo, hi) inside pages we moved, still mapped as we left them?  Checked
 * with own_mapped() instead of reading all of /proc/self/maps (tens of
 * microseconds): re-attaching the same memory is the common case. */
static bool own_find(uint64_t lo, uint64_t hi, vma_t *ours)
{
    for (int i = own_count - 1; i >= 0; --i) {
        if (NULL == own[i].name || lo < own[i].lo || hi > own[i].hi) continue;
        if (!own_mapped(i, ours->path, sizeof(ours->path))) return false;
        ours->start = own[i].lo;
        ours->end = own[i].hi;
        ours->offset = 0;
        return true;
    }
    return false;
}

/* Copy `len` bytes between memory and offset `off` of file `fd`, by raw
 * system calls: the kernel copies, so nothing the process intercepts
 * (AddressSanitizer's checks, which would see freed heap chunks that share
 * the pages, or memory hooks) runs, and nothing is written to the memory
 * while writes are held. */
static bool file_copy(int fd, void *mem, size_t len, off_t off, bool to_file)
{
    for (size_t done = 0; done < len;) {
        long n = syscall(to_file ? SYS_pwrite64 : SYS_pread64, fd, (char *) mem + done, len - done,
                         off + (off_t) done);
        if (n <= 0) return false;
        done += (size_t) n;
    }
    return true;
}

/* Copy [lo, lo + len) into the object and put the object in its place.
 * With `held`, other threads' writes wait meanwhile (see
 * osc_ucxx_wprotect.c): then the replacing mmap is a raw system call, since
 * libc's is intercepted by memory hooks that may allocate, and libc's mmap
 * repeats it afterwards so that those hooks see the change.  MAP_FIXED
 * replaces the old pages in one step: no moment without memory there.  (Not
 * mremap: Open MPI's and UCX's memory hooks intercept it and drop its
 * variadic new address.) */
static bool replace_pages(uint64_t lo, size_t len, int fd, int held)
{
    void *at = (void *) (uintptr_t) lo;
    bool ok = file_copy(fd, at, len, 0, true);

    if (held >= 0) {
        ok = ok && MAP_FAILED != (void *) syscall(SYS_mmap, at, len, PROT_READ | PROT_WRITE,
                                                  MAP_SHARED | MAP_FIXED, fd, 0);
        ompi_osc_ucxx_wp_end(held, lo, len);
    }
    return ok && MAP_FAILED != mmap(at, len, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_FIXED, fd, 0);
}

/* Move the pages [lo, hi) onto a new object `name`.  `must_hold`: only if
 * other threads' writes can be held off meanwhile (pages with other data). */
static bool move_pages(uint64_t lo, uint64_t hi, const char *name, bool must_hold)
{
    size_t len = hi - lo;
    char path[sizeof(SHM_PREFIX) + 48];
    bool ok;
    int fd;

    snprintf(path, sizeof(path), SHM_PREFIX "%s", name);
    fd = open(path, O_RDWR | O_CREAT | O_EXCL, 0600);
    ok = (fd >= 0 && 0 == ftruncate(fd, (off_t) len));
    if (ok) {
        int held = ompi_osc_ucxx_wp_usable() ? ompi_osc_ucxx_wp_begin(lo, len) : -1;
        /* replace_pages ends `held` whatever happens */
        ok = (held >= 0 || !must_hold) && replace_pages(lo, len, fd, held);
    }
    if (fd >= 0) close(fd);
    if (!ok && fd >= 0) unlink(path);
    return ok;
}

/* A fork()ed child gets private copies of every page we moved, as it would
 * of any memory: shared ones would let it write into our heap (pages at a
 * window's edge, or window memory malloc hands out again after the window).
 * The child has one thread, so nothing writes meanwhile (but child handlers
 * registered before ours run first: here only UCX's logger's, which writes
 * its own globals, not the heap).  Until its pages
 * are private the child must not touch the heap (malloc, stdio), and it uses
 * raw system calls, since the memory hooks behind libc's mmap may take locks
 * held by threads the child does not have. */
static void fork_prepare(void)
{
    OSC_UCXX_LOCK(&OSC_UCXX.lock);
}

static void fork_parent(void)
{
    OSC_UCXX_UNLOCK(&OSC_UCXX.lock);
}

/* Our mapping `vma` of an object becomes a private copy: read from the
 * object itself (file_copy), then moved into place in one step. */
static void privatize(const vma_t *vma)
{
    size_t len = vma->end - vma->start;
    int fd = (int) syscall(SYS_openat, AT_FDCWD, vma->path, O_RDONLY | O_CLOEXEC);
    void *copy = (void *) syscall(SYS_mmap, NULL, len, PROT_READ | PROT_WRITE,
                                  MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

    if (fd >= 0 && MAP_FAILED != copy && file_copy(fd, copy, len, (off_t) vma->offset, false) &&
        MAP_FAILED != (void *) syscall(SYS_mremap, copy, len, len, MREMAP_MAYMOVE | MREMAP_FIXED,
                                       vma->start)) {
        copy = MAP_FAILED;  /* it is the mapping now */
    }
    if (MAP_FAILED != copy) syscall(SYS_munmap, copy, len);
    if (fd >= 0) syscall(SYS_close, fd);
}

/* One pass over /proc/self/maps, read into a buffer on the stack: collect up
 * to `max` mappings of objects whose path starts with `mine`. */
static int find_mine(const char *mine, vma_t *list, int max)
{
    char buf[4096];
    size_t have = 0;
    int fd = open("/proc/self/maps", O_RDONLY | O_CLOEXEC), n = 0;
    ssize_t got = 1;

    while (fd >= 0 && n < max && (got > 0 || have > 0)) {
        char *nl;
        got = read(fd, buf + have, sizeof(buf) - 1 - have);
        have += got > 0 ? (size_t) got : 0;
        buf[have] = '\0';
        while (n < max && NULL != (nl = strchr(buf, '\n'))) {
            *nl = '\0';
            if (vma_parse(buf, &list[n]) && 0 == strncmp(list[n].path, mine, strlen(mine))) n++;
            have -= (size_t) (nl + 1 - buf);
            memmove(buf, nl + 1, have + 1);
        }
        if (got <= 0 || have == sizeof(buf) - 1) have = 0;  /* end, or a line too long */
    }
    if (fd >= 0) close(fd);
    return n;
}

static void fork_child(void)
{
    char mine[sizeof(SHM_PREFIX) + sizeof(own_dir) + 1];
    vma_t list[32];
    int n, passes = 0;

    if ('\0' != own_dir[0]) {  /* something was moved, before finalize */
        /* ours: own_dir's objects, remnants of partly re-moved ones included;
         * a privatized mapping no longer matches, so passes end */
        snprintf(mine, sizeof(mine), SHM_PREFIX "%s/", own_dir);
        do {
            n = find_mine(mine, list, 32);
            for (int i = 0; i < n; ++i) privatize(&list[i]);
        } while (n == 32 && ++passes < 1000);
    }
    own_count = 0;  /* the objects are the parent's to remove */
    proc_fd_drop(&map_files_fd, true);  /* the parent's mappings */
    proc_fd_drop(&maps_fd, true);
    ompi_osc_ucxx_wp_fork_child();
    OSC_UCXX_UNLOCK(&OSC_UCXX.lock);
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
    if (!atfork_done) {
        /* glibc drops the handlers when the component is unloaded */
        atfork_done = (0 == pthread_atfork(fork_prepare, fork_parent, fork_child));
    }
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

/* Share [lo, hi) (whole pages): already on one of our objects, or moved onto
 * a new one.  `edges`: the range holds bytes outside the window. */
static bool share_pages(uint64_t lo, uint64_t hi, bool edges, ompi_osc_ucxx_share_t *desc)
{
    vma_t ours;
    int kind = own_find(lo, hi, &ours) ? 1 : classify(lo, hi, &ours);

    if (1 == kind && strlen(ours.path + strlen(SHM_PREFIX)) < sizeof(desc->name)) {
        int i = own_by_path(ours.path);
        memcpy(desc->name, ours.path + strlen(SHM_PREFIX),
               strlen(ours.path + strlen(SHM_PREFIX)) + 1);
        desc->offset = lo - ours.start + ours.offset;
        if (i >= 0) own[i].users++;
    } else if (2 == kind && own_dir_ready()) {
        /* "/osc_ucxx.<10 digits>.<10 digits>/<10 digits>" fits desc->name */
        snprintf(desc->name, sizeof(desc->name), "%.36s/%u", own_dir, own_serial++);
        if (move_pages(lo, hi, desc->name, edges)) {
            own_drop_inside(lo, hi);
            own_add(desc->name, lo, hi);
        } else {
            OSC_UCXX_VERBOSE(10, "could not move [%#" PRIx64 ", %#" PRIx64 ") to shared memory",
                             lo, hi);
            desc->name[0] = '\0';
        }
    }
    desc->lo = lo;
    desc->hi = hi;
    return '\0' != desc->name[0];
}

/* The pages to share for [b, e): every page it touches where writes to
 * them can be held off during a move (osc_ucxx_wprotect.c), else the whole
 * pages inside it; `desc` then describes exactly the window's bytes of them. */
int ompi_osc_ucxx_share_user(void *base, size_t len, ompi_osc_ucxx_share_t *desc)
{
    uint64_t page = (uint64_t) sysconf(_SC_PAGESIZE);
    uint64_t b = (uint64_t) (uintptr_t) base, e = b + len;
    uint64_t out_lo = b & ~(page - 1), out_hi = (e + page - 1) & ~(page - 1);
    uint64_t in_lo = (b + page - 1) & ~(page - 1), in_hi = e & ~(page - 1);
    bool found = false, tried_out = false;

    memset(desc, 0, sizeof(*desc));
    if (!OSC_UCXX.share_user || !OSC_UCXX.use_direct || 0 == len) {
        return OMPI_SUCCESS;
    }
    OSC_UCXX_LOCK(&OSC_UCXX.lock);
    if (out_hi - out_lo <= (uint64_t) OSC_UCXX.share_max && ompi_osc_ucxx_wp_usable()) {
        tried_out = true;
        found = share_pages(out_lo, out_hi, out_lo < b || out_hi > e, desc);
    }
    /* else (or if that failed) the whole pages inside, unless that is the
     * same range again */
    if (!found && in_hi > in_lo && in_hi - in_lo <= (uint64_t) OSC_UCXX.share_max &&
        !(tried_out && in_lo == out_lo && in_hi == out_hi)) {
        memset(desc, 0, sizeof(*desc));
        found = share_pages(in_lo, in_hi, false, desc);
    }
    OSC_UCXX_UNLOCK(&OSC_UCXX.lock);
    if (!found) {
        memset(desc, 0, sizeof(*desc));
        return OMPI_SUCCESS;
    }
    if (desc->lo < b) {
        desc->offset += b - desc->lo;
        desc->lo = b;
    }
    desc->hi = desc->hi > e ? e : desc->hi;
    OSC_UCXX_VERBOSE(50, "[%#" PRIx64 ", %#" PRIx64 ") shared as %s+%" PRIu64, desc->lo, desc->hi,
                     desc->name, desc->offset);
    return OMPI_SUCCESS;
}

/* A window or attachment that share_user() described is gone: its object may
 * be moved again by a later one over nearby memory. */
void ompi_osc_ucxx_share_release(const ompi_osc_ucxx_share_t *desc)
{
    char path[sizeof(SHM_PREFIX) + sizeof(desc->name)];
    int i;

    if ('\0' == desc->name[0]) return;
    snprintf(path, sizeof(path), SHM_PREFIX "%.*s", (int) sizeof(desc->name), desc->name);
    OSC_UCXX_LOCK(&OSC_UCXX.lock);
    i = own_by_path(path);
    if (i >= 0 && own[i].users > 0) own[i].users--;
    OSC_UCXX_UNLOCK(&OSC_UCXX.lock);
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
    proc_fd_drop(&map_files_fd, false);
    proc_fd_drop(&maps_fd, false);
    ompi_osc_ucxx_wp_fini();
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

/* Is there room in SHM_PREFIX for a segment of `len` bytes?  The file is
 * sparse, so it could be made and mapped anyway, but the first store past
 * the free space would be a SIGBUS in the application. */
static bool shm_can_hold(uint64_t len)
{
    struct statvfs fs;
    if (0 != statvfs(SHM_PREFIX, &fs)) return true;  /* cannot tell: try */
    return len / fs.f_frsize <= (uint64_t) fs.f_bavail;
}

/* Rank 0 makes an object for the whole group (segments back to back in rank
 * order, or each on its own pages with alloc_shared_noncontig), everyone
 * maps it, and rank 0 unlinks it at once: nothing is left in /dev/shm, and
 * the memory goes when the last process unmaps it.  Collective; every rank
 * returns the same verdict (a segment larger than /dev/shm's free space is
 * refused). */
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

    if (0 == me && !shm_can_hold(seg->len)) {
        opal_show_help("help-osc-ucxx.txt", "window too large", true, (size_t) seg->len,
                       "the free space of " SHM_PREFIX);
    } else if (0 == me) {
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
    return OMPI_SUCCESS != rc ? rc : MPI_ERR_NO_MEM;
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
