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
 * whole pages inside it onto POSIX shared memory: a copy into pages of our
 * pool (below), then one mmap(MAP_FIXED) that puts those pages at the same
 * addresses.  The application sees the same addresses and contents; peers on
 * the node map the pool and use loads, stores and CPU atomics, as on
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
 * without a copy.  Pages no window or attachment uses any more may be moved
 * again, with their neighbours, when a later one covers them and private
 * memory together (the OSU pattern: a window per size over whatever malloc
 * returns).  A fork()ed child gets private copies (fork_child).  MCA
 * parameter osc_ucxx_share_user_memory=0 turns all of this off.
 *
 * The pool: one sparse file per process (another when it is full),
 * /dev/shm/osc_ucxx.<jobid>.<vpid>/p<n>, made in MPI_Init where the early
 * start runs (share_warm) or by the first move, which we remove at finalize and
 * whose directory is registered with the PMIx server for removal when the
 * process ends any other way (killed, aborted), as btl/vader does with its
 * segment.  Each move takes offsets never used before (pool_carve); pages
 * moved again are punched out of the file (their memory goes back), and
 * their offsets stay unused, so a peer that races a detach touches memory
 * that still exists and is nobody else's.  A move costs no file of its own
 * (creating, sizing, closing and at last removing one took ~15 of a ~90 us
 * MPI_Win_create with 100 alive), and a peer maps the pool a chunk at a time
 * (osc_ucxx_share_pool_chunk, 64 MiB), once for all the windows in it,
 * instead of opening and mapping a file per window (~10 us each).  Peers
 * keep their mappings until finalize.
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
#include "opal/util/sys_limits.h"

#include "osc_ucxx_share.h"
#include "osc_ucxx_wprotect.h"

#define SHM_PREFIX "/dev/shm"

typedef struct {
    char *addr;
    size_t size;
    uint64_t *populated;  /* its 2 MiB chunks populated here (share_prefault) */
} share_mapping_t;

/* Peers' pools, mapped a span of chunks at a time (share_map):
 * "<name>@<first chunk>+<chunks>" -> share_mapping_t*; and the same by
 * address, for the large copies' prefault (a few per peer: a scan). */
static opal_hash_table_t mappings;
static bool mappings_ready;
static share_mapping_t **maps_by_addr;
static int maps_count, maps_cap;

/* Our pools: sparse files that moved pages are carved from, at offsets
 * that are never used twice (pool_carve).  A new one is made when the last
 * is full. */
#define POOL_BYTES (1ULL << 40)
#define POOL_MAX 16
typedef struct {
    char name[40];           /* "/osc_ucxx.<jobid>.<vpid>/p<n>" under SHM_PREFIX */
    int fd;
    uint64_t next;           /* the first offset never carved */
} pool_t;
static pool_t pools[POOL_MAX];
static int pool_count;

/* Pages we moved: where, onto which pool offsets, and how many windows and
 * attachments use them. */
typedef struct {
    uint64_t lo, hi, off;
    int pool;
    int users;
} own_move_t;
static own_move_t *own;
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

/* Peers map pools in whole chunks of this many bytes, and small moves stay
 * in one (osc_ucxx_share_pool_chunk, a power of two of at least a page). */
static uint64_t pool_chunk(void)
{
    uint64_t c = (uint64_t) sysconf(_SC_PAGESIZE);
    while (c < OSC_UCXX.share_chunk && c < POOL_BYTES) c <<= 1;
    return c;
}

/* pools[] index of the pool at `path` (under SHM_PREFIX), or -1. */
static int pool_by_path(const char *path)
{
    if (0 != strncmp(path, SHM_PREFIX, strlen(SHM_PREFIX))) return -1;
    for (int i = 0; i < pool_count; ++i) {
        if (0 == strcmp(path + strlen(SHM_PREFIX), pools[i].name)) return i;
    }
    return -1;
}

/* Windows and attachments using pages we moved in [lo, hi). */
static int own_users(uint64_t lo, uint64_t hi)
{
    int users = 0;
    for (int i = 0; i < own_count; ++i) {
        if (own[i].lo < hi && own[i].hi > lo) users += own[i].users;
    }
    return users;
}

/* One more (`by` 1) or one fewer (-1) window using the pages in [lo, hi):
 * each move they came from counts it. */
static void own_use(uint64_t lo, uint64_t hi, int by)
{
    for (int i = 0; i < own_count; ++i) {
        if (own[i].lo < hi && own[i].hi > lo && (by > 0 || own[i].users > 0)) {
            own[i].users += by;
        }
    }
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
 * longer than ours (so neither a pool of ours nor the heap: the range
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

/* How [lo, hi) is mapped: 1 = one mapping of a pool, ours or a peer's
 * (filled in `ours`), 2 = private anonymous read-write memory, or pages of
 * our pools no window uses any more (left by earlier windows over nearby
 * memory: moving them again is safe), 0 = anything else. */
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
            if (kind == -1 && vma.end >= hi) {
                kind = 1;
                *ours = vma;
            } else {
                bool unused = pool_by_path(vma.path) >= 0 &&
                              0 == own_users(covered, vma.end < hi ? vma.end : hi);
                kind = ((kind == -1 || kind == 2) && unused) ? 2 : 0;
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

/* Room for `n` more entries in own[]. */
static bool own_room(int n)
{
    if (own_count + n > own_cap) {
        int cap = own_cap ? 2 * own_cap : 16;
        void *tmp = realloc(own, cap * sizeof(*own));
        if (NULL == tmp) return false;
        own = tmp;
        own_cap = cap;
    }
    return true;
}

/* Room for one more (before a move: a move it could not count would look
 * unused to classify()). */
static bool own_reserve(void)
{
    return own_room(1);
}

/* (own_reserve made room) */
static void own_add(int pool, uint64_t lo, uint64_t hi, uint64_t off)
{
    own[own_count++] = (own_move_t){lo, hi, off, pool, 1};
}

/* Give the pages of pool `pool` at [off, off + len) back to the system.
 * Their offsets are never carved again, so a peer that still reaches them
 * (racing a detach) finds fresh zeroed pages nobody else uses. */
static void pool_punch(int pool, uint64_t off, uint64_t len)
{
    (void) fallocate(pools[pool].fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, (off_t) off,
                     (off_t) len);
}

/* After a move of [lo, hi): no record may describe pages there any more.
 * One that overlaps it keeps only what lies outside (split in two where it
 * reaches past both ends), and where no window uses it, its pool pages
 * inside go back.  (Cutting only the records wholly inside left one that
 * reached past the move: after memory given up and moved again in pieces,
 * the kernel merged the pieces' mappings into that record's bounds, and
 * own_find() handed out its old pool offsets, where peers read the first
 * move's data: share_stale.) */
static void own_cut(uint64_t lo, uint64_t hi)
{
    for (int i = 0; i < own_count; ++i) {
        own_move_t e = own[i];
        uint64_t from = e.lo > lo ? e.lo : lo, to = e.hi < hi ? e.hi : hi;
        bool left = e.lo < lo, right = e.hi > hi;

        if (e.hi <= lo || e.lo >= hi) continue;
        if (0 == e.users) pool_punch(e.pool, e.off + (from - e.lo), to - from);
        if (left && right && !own_room(2)) {  /* (one more, and own_add's) */
            right = false;  /* (the right part's pages stay on the pool, unrecorded) */
        }
        if (left) {
            own[i].hi = lo;
        }
        if (right) {
            own_move_t rest = {hi, e.hi, e.off + (hi - e.lo), e.pool, e.users};
            if (left) {  /* (in order: own_find looks newest first) */
                memmove(&own[i + 2], &own[i + 1], (size_t) (own_count - i - 1) * sizeof(*own));
                own[++i] = rest;
                own_count++;
            } else {
                own[i] = rest;
            }
        }
        if (!left && !right) {
            memmove(&own[i], &own[i + 1], (size_t) (own_count - i - 1) * sizeof(*own));
            own_count--;
            i--;
        }
    }
}

/* Is own[i] still mapped where we put it?  One readlink of its
 * /proc/self/map_files entry, which exists only while a mapping has exactly
 * those bounds (the path is left in `path`).  Relative to the directory,
 * opened once (under OSC_UCXX.lock; fork_child closes the parent's): the
 * lookup of /proc/self was 0.9 of the 3.1 us a readlink took, most of an
 * attach of memory attached before (bench/rma_mh dyn_cr).  (Where the
 * kernel merged it with the mapping of a neighbouring move, it has other
 * bounds: classify() finds it.) */
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
    return pool_by_path(path) == own[i].pool;
}

/* [lo, hi) inside pages we moved, still mapped as we left them?  Checked
 * with own_mapped() instead of reading all of /proc/self/maps (tens of
 * microseconds): re-attaching the same memory is the common case. */
static bool own_find(uint64_t lo, uint64_t hi, vma_t *ours)
{
    for (int i = own_count - 1; i >= 0; --i) {
        if (lo < own[i].lo || hi > own[i].hi) continue;
        if (!own_mapped(i, ours->path, sizeof(ours->path))) return false;
        ours->start = own[i].lo;
        ours->end = own[i].hi;
        ours->offset = own[i].off;
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

/* Copy [lo, lo + len) into offset `off` of pool file `fd` and put those
 * pages in its place.  MAP_FIXED replaces the old pages in one step: no
 * moment without memory there.  (Not mremap: Open MPI's and UCX's memory
 * hooks intercept it and drop its variadic new address.)  Those hooks must
 * learn that the old pages are gone (registration caches), and libc's mmap
 * tells them.  With `held`, other threads' writes wait meanwhile (see
 * osc_ucxx_wprotect.c): then the replacing mmap is a raw system call, since
 * the hooks may allocate, and they hear of it afterwards from libc's
 * madvise(MADV_DONTNEED), which they take as an unmapping too (on these
 * shared pages it only drops the page-table entries the mmap just dropped:
 * 0.8 us, where repeating the mmap took 2.6).  0: done; 1: the copy failed,
 * nothing mapped; 2: a mapping failed (what is there now is not known). */
static int replace_pages(uint64_t lo, size_t len, int fd, uint64_t off, int held)
{
    void *at = (void *) (uintptr_t) lo;
    bool copied = file_copy(fd, at, len, (off_t) off, true), ok = copied;

    if (held < 0) {
        ok = ok && MAP_FAILED != mmap(at, len, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_FIXED,
                                      fd, (off_t) off);
    } else {
        ok = ok && MAP_FAILED != (void *) syscall(SYS_mmap, at, len, PROT_READ | PROT_WRITE,
                                                  MAP_SHARED | MAP_FIXED, fd, (off_t) off);
        ompi_osc_ucxx_wp_end(held, lo, len, ok);
        if (ok) (void) madvise(at, len, MADV_DONTNEED);  /* (the hooks run first) */
    }
    return ok ? 0 : copied ? 2 : 1;
}

/* A new pool file, sparse: its pages exist once written. */
static int pool_new(void)
{
    char path[sizeof(SHM_PREFIX) + sizeof(pools[0].name)];
    pool_t *p;

    if (POOL_MAX == pool_count) return -1;
    p = &pools[pool_count];
    snprintf(p->name, sizeof(p->name), "%.36s/p%u", own_dir, own_serial++);
    snprintf(path, sizeof(path), SHM_PREFIX "%.39s", p->name);
    p->fd = open(path, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
    if (p->fd < 0 || 0 != ftruncate(p->fd, (off_t) POOL_BYTES)) {
        OSC_UCXX_VERBOSE(10, "cannot make %s: %s", path, strerror(errno));
        if (p->fd >= 0) {
            close(p->fd);
            unlink(path);
        }
        return -1;
    }
    p->next = 0;
    return pool_count++;
}

/* Offsets for `len` bytes (whole pages) in a pool: after every offset
 * carved before, and within one chunk where they fit in one (so a peer
 * maps one chunk for many windows), else from a chunk's start. */
static int pool_carve(uint64_t len, uint64_t *off)
{
    int p = pool_count - 1;
    uint64_t at = p >= 0 ? pools[p].next : 0, chunk = pool_chunk();

    if (len > chunk || at / chunk != (at + len - 1) / chunk) {
        at = (at + chunk - 1) & ~(chunk - 1);
    }
    if (p < 0 || at + len > POOL_BYTES) {
        if (len > POOL_BYTES || (p = pool_new()) < 0) return -1;
        at = 0;
    }
    pools[p].next = at + len;
    *off = at;
    return p;
}

/* Move the pages [lo, hi) onto pool pages (`*pool` at `*off`).  `must_hold`:
 * only if other threads' writes can be held off meanwhile (pages with
 * other data). */
static bool move_pages(uint64_t lo, uint64_t hi, bool must_hold, int *pool, uint64_t *off)
{
    size_t len = hi - lo;
    int held, rc = 1;

    *pool = pool_carve(len, off);
    if (*pool < 0) return false;
    held = ompi_osc_ucxx_wp_usable() ? ompi_osc_ucxx_wp_begin(lo, len) : -1;
    if (held >= 0 || !must_hold) {
        rc = replace_pages(lo, len, pools[*pool].fd, *off, held);  /* (ends `held`) */
    }
    if (1 == rc) pool_punch(*pool, *off, len);  /* (what the copy wrote) */
    return 0 == rc;
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

/* Our mapping `vma` of a pool becomes a private copy: read from the pool
 * itself (file_copy), then moved into place in one step. */
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
 * to `max` mappings of files whose path starts with `mine`. */
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
        /* ours: own_dir's pools, remnants of partly re-moved moves included;
         * a privatized mapping no longer matches, so passes end */
        snprintf(mine, sizeof(mine), SHM_PREFIX "%s/", own_dir);
        do {
            n = find_mine(mine, list, 32);
            for (int i = 0; i < n; ++i) privatize(&list[i]);
        } while (n == 32 && ++passes < 1000);
    }
    own_count = 0;  /* the pools are the parent's to remove */
    for (int i = 0; i < pool_count; ++i) proc_fd_drop(&pools[i].fd, true);
    pool_count = 0;
    proc_fd_drop(&map_files_fd, true);  /* the parent's mappings */
    proc_fd_drop(&maps_fd, true);
    ompi_osc_ucxx_wp_fork_child();
    OSC_UCXX_UNLOCK(&OSC_UCXX.lock);
}

/* Our directory of pools, handed to the PMIx server to remove when we end.
 * That registration is a message nobody answers (PMIx's register_cleanup
 * sends it and returns; job control, which could wait for the
 * answer, aborts in some Open MPI 4.1 builds), so we make the directory as
 * early as we can: in MPI_Init with the early start (share_warm), else when
 * a window that may share user memory is created. */
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

/* The early start (component_init, in MPI_Init): one move of a scratch
 * page, so that the first window's finds the directory (its registration
 * with the PMIx server), the pool, the userfaultfd and the /proc
 * descriptors made, and the first use of each system call paid: 150-400 us
 * of a first MPI_Win_create otherwise.  The page goes at once; its pool
 * page is given back when a later move reaches its addresses (own_cut),
 * else at finalize with the pool. */
void ompi_osc_ucxx_share_warm(void)
{
    size_t page = (size_t) sysconf(_SC_PAGESIZE);
    ompi_osc_ucxx_share_t desc;
    char *p;

    if (!OSC_UCXX.share_user || !OSC_UCXX.use_direct) return;
    p = mmap(NULL, page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (MAP_FAILED == p) return;
    p[0] = 1;
    (void) ompi_osc_ucxx_share_user(p, page, &desc);
    ompi_osc_ucxx_share_release(&desc);
    munmap(p, page);
}

/* Share [lo, hi) (whole pages): already on a pool (ours, or a peer's whose
 * memory the application passed on), or moved onto ours.  `edges`: the
 * range holds bytes outside the window. */
static bool share_pages(uint64_t lo, uint64_t hi, bool edges, ompi_osc_ucxx_share_t *desc)
{
    vma_t ours;
    int kind = own_find(lo, hi, &ours) ? 1 : classify(lo, hi, &ours), pool;
    uint64_t off;

    if (1 == kind && strlen(ours.path + strlen(SHM_PREFIX)) < sizeof(desc->name)) {
        memcpy(desc->name, ours.path + strlen(SHM_PREFIX),
               strlen(ours.path + strlen(SHM_PREFIX)) + 1);
        desc->offset = lo - ours.start + ours.offset;
        if (pool_by_path(ours.path) >= 0) own_use(lo, hi, 1);
    } else if (2 == kind && own_dir_ready() && own_reserve()) {
        if (move_pages(lo, hi, edges, &pool, &off)) {
            own_cut(lo, hi);
            own_add(pool, lo, hi, off);
            /* "/osc_ucxx.<10 digits>.<10 digits>/p<10 digits>" fits desc->name */
            snprintf(desc->name, sizeof(desc->name), "%s", pools[pool].name);
            desc->offset = off;
        } else {
            OSC_UCXX_VERBOSE(10, "could not move [%#" PRIx64 ", %#" PRIx64 ") to shared memory",
                             lo, hi);
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

/* A window or attachment that share_user() described is gone: its pages may
 * be moved again by a later one over nearby memory. */
void ompi_osc_ucxx_share_release(const ompi_osc_ucxx_share_t *desc)
{
    char path[sizeof(SHM_PREFIX) + sizeof(desc->name)];

    if ('\0' == desc->name[0]) return;
    snprintf(path, sizeof(path), SHM_PREFIX "%.*s", (int) sizeof(desc->name), desc->name);
    OSC_UCXX_LOCK(&OSC_UCXX.lock);
    if (pool_by_path(path) >= 0) own_use(desc->lo, desc->hi, -1);
    OSC_UCXX_UNLOCK(&OSC_UCXX.lock);
}

/* Caller holds OSC_UCXX.lock.  (Out of room: that mapping is not
 * prefaulted, nothing else changes.) */
static void by_addr_add(share_mapping_t *m)
{
    if (maps_count == maps_cap) {
        int cap = maps_cap ? 2 * maps_cap : 16;
        share_mapping_t **grown = realloc(maps_by_addr, cap * sizeof(*grown));
        if (NULL == grown) return;
        maps_by_addr = grown;
        maps_cap = cap;
    }
    maps_by_addr[maps_count++] = m;
}

/* A peer's pool pages, mapped here: the whole chunks [desc->offset,
 * desc->offset + its length) touches, once for every window on them (a
 * window per message size, or an attachment per allocation, costs no
 * open, mmap or page-table setup of its own).  Kept until finalize. */
char *ompi_osc_ucxx_share_map(ompi_proc_t *owner, const ompi_osc_ucxx_share_t *desc)
{
    share_mapping_t *m = NULL;
    size_t name_len = strnlen(desc->name, sizeof(desc->name));
    uint64_t len = desc->hi - desc->lo, chunk = pool_chunk(), first, span;
    char key[sizeof(desc->name) + 48], *addr = NULL;
    int key_len;

    if (0 == name_len || name_len == sizeof(desc->name) || !OSC_UCXX.use_direct ||
        !OPAL_PROC_ON_LOCAL_NODE(owner->super.proc_flags) || desc->hi <= desc->lo ||
        desc->offset > POOL_BYTES || len > POOL_BYTES - desc->offset) {
        return NULL;
    }
    first = desc->offset & ~(chunk - 1);
    span = ((desc->offset + len + chunk - 1) & ~(chunk - 1)) - first;
    key_len = snprintf(key, sizeof(key), "%s@%" PRIx64 "+%" PRIx64, desc->name, first, span);
    OSC_UCXX_LOCK(&OSC_UCXX.lock);
    if (!mappings_ready) {
        OBJ_CONSTRUCT(&mappings, opal_hash_table_t);
        mappings_ready = (OPAL_SUCCESS == opal_hash_table_init(&mappings, 64));
    }
    if (mappings_ready &&
        OPAL_SUCCESS != opal_hash_table_get_value_ptr(&mappings, key, key_len, (void **) &m)) {
        char path[sizeof(SHM_PREFIX) + sizeof(desc->name)];
        struct stat st;
        int fd;

        snprintf(path, sizeof(path), SHM_PREFIX "%s", desc->name);
        fd = open(path, O_RDWR);
        m = NULL;
        if (fd >= 0 && 0 == fstat(fd, &st) && (uint64_t) st.st_size >= first + span &&
            NULL != (m = malloc(sizeof(*m)))) {
            m->size = (size_t) span;
            m->populated = NULL;
            m->addr = mmap(NULL, m->size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, (off_t) first);
            if (MAP_FAILED == m->addr) {
                free(m);
                m = NULL;
            } else {
                opal_hash_table_set_value_ptr(&mappings, key, key_len, m);
                by_addr_add(m);
            }
        }
        if (fd >= 0) close(fd);
    }
    if (NULL != m) addr = m->addr + (desc->offset - first);
    OSC_UCXX_UNLOCK(&OSC_UCXX.lock);
    return addr;
}

/* ------------------------------------------------------------------------- */
/* Prefaulting peers' memory before large copies
 *
 * A peer's memory mapped here, a UCX sysv segment (allocated windows) or a
 * pool file of the peer's (moved user memory: create and dynamic windows,
 * memory handles), faults page by page where this process first touches
 * it: ~1.3-1.9 us a 4 KiB page in a VM, and a sysv segment maps no
 * neighbours (no fault-around).  So the first copy of over 256 KiB to or
 * from a 2 MiB chunk of such a mapping populates the page tables for the
 * bytes it copies in one madvise call, and the chunk is marked, so that
 * later copies pay nothing (populating pages already mapped costs ~0.15 us
 * a page, as much as copying them).  Pages of a marked chunk that its first
 * copy did not touch fault as before.
 *
 * MADV_POPULATE_READ for stores too: both kinds of mapping are shared
 * tmpfs memory, which the kernel tracks no dirtying of, so read faults map
 * the pages writable and the stores fault no more.  One process, a 16 MiB
 * memcpy into a second mapping of memory another mapping had written:
 *   pool file   no populate 6.8-9.6 ms, POPULATE_WRITE 5.1-7.1, _READ 2.6-3.8
 *   sysv        no populate 7.7-11.6 ms, POPULATE_WRITE 5.2-8.6, _READ 4.9-7.7
 * (the write kind dirties the file page by page).  A 16 MiB load from the
 * pool file: 2.6-4.6 ms, read-populated 2.3-3.4 (read faults get
 * fault-around there); from sysv 10.6-11.6 and 4.7-6.8. */

#ifndef MADV_POPULATE_READ
#define MADV_POPULATE_READ 22  /* Linux 5.14 */
#endif

#define PREFAULT_SHIFT 21      /* 2 MiB chunks */

static volatile bool prefault_refused;  /* the kernel has no MADV_POPULATE_READ */

/* Populate [lo, hi) of a shared mapping, whole pages. */
static void populate(char *lo, char *hi)
{
    uintptr_t page = (uintptr_t) opal_getpagesize();
    uintptr_t a = (uintptr_t) lo & ~(page - 1);
    uintptr_t b = ((uintptr_t) hi + page - 1) & ~(page - 1);
    if (0 != madvise((void *) a, b - a, MADV_POPULATE_READ) && EINVAL == errno) {
        prefault_refused = true;
        OSC_UCXX_VERBOSE(10, "madvise(MADV_POPULATE_READ) refused: peers' pages fault as touched");
    }
}

uint64_t *ompi_osc_ucxx_share_chunk_bits(size_t bytes)
{
    if (prefault_refused) return NULL;
    return calloc(((bytes >> PREFAULT_SHIFT) + 1 + 63) / 64, sizeof(uint64_t));
}

void ompi_osc_ucxx_share_populate(char *base, uint64_t *bits, uint64_t off, size_t len)
{
    uint64_t first = off >> PREFAULT_SHIFT, last = (off + len - 1) >> PREFAULT_SHIFT;

    for (uint64_t c = first; c <= last && !prefault_refused; ++c) {
        uint64_t run = c;  /* a run of unmarked chunks, populated in one call */
        /* (threads copying at once may both populate a chunk: harmless) */
        while (run <= last &&
               !(__atomic_load_n(&bits[run / 64], __ATOMIC_RELAXED) & (1ULL << (run % 64)))) {
            __atomic_fetch_or(&bits[run / 64], 1ULL << (run % 64), __ATOMIC_RELAXED);
            ++run;
        }
        if (run > c) {
            uint64_t lo = c << PREFAULT_SHIFT > off ? c << PREFAULT_SHIFT : off;
            uint64_t hi = run << PREFAULT_SHIFT < off + len ? run << PREFAULT_SHIFT : off + len;
            OSC_UCXX_VERBOSE(50, "populating %" PRIu64 " bytes at %p before a large copy", hi - lo,
                             (void *) (base + lo));
            populate(base + lo, base + hi);
            c = run;
        }
    }
}

void ompi_osc_ucxx_share_prefault(char *p, size_t len)
{
    share_mapping_t *m = NULL;

    if (prefault_refused) return;
    OSC_UCXX_LOCK(&OSC_UCXX.lock);
    for (int i = 0; i < maps_count; ++i) {
        share_mapping_t *c = maps_by_addr[i];
        if (p >= c->addr && (size_t) (p - c->addr) <= c->size &&
            len <= c->size - (size_t) (p - c->addr)) {
            m = c;
            break;
        }
    }
    if (NULL != m && NULL == m->populated) {
        m->populated = ompi_osc_ucxx_share_chunk_bits(m->size);
    }
    OSC_UCXX_UNLOCK(&OSC_UCXX.lock);
    /* (mappings and their bits live until finalize) */
    if (NULL != m && NULL != m->populated) {
        ompi_osc_ucxx_share_populate(m->addr, m->populated, (uint64_t) (p - m->addr), len);
    }
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
            free(m->populated);
            free(m);
            rc = opal_hash_table_get_next_key_ptr(&mappings, &key, &key_len, (void **) &m, node,
                                                  &node);
        }
        OBJ_DESTRUCT(&mappings);
        mappings_ready = false;
        free(maps_by_addr);
        maps_by_addr = NULL;
        maps_count = maps_cap = 0;
    }
    for (int i = 0; i < pool_count; ++i) {  /* (the pages we moved stay where they are) */
        char path[sizeof(SHM_PREFIX) + sizeof(pools[i].name)];
        snprintf(path, sizeof(path), SHM_PREFIX "%.39s", pools[i].name);
        unlink(path);
        proc_fd_drop(&pools[i].fd, false);
    }
    pool_count = 0;
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
