/*
 * Copyright (c) 2026 The osc/ucxx authors. All rights reserved.
 * $COPYRIGHT$
 *
 * Shared memory this process owns: the state segments of its windows and
 * MPI_Win_allocate memory, which peers on the node reach by loads, stores
 * and CPU atomics.  Peers map it themselves, so that reaching a peer on
 * the node needs no UCX endpoint (whose making, lane selection and the
 * attaching of the peer's FIFOs, was most of a first access), and map only
 * the pieces they use.
 *
 *   - One file per process: a memfd (memfd_create), which has no name in
 *     any file system: nothing of it is ever in /dev/shm, and its memory
 *     goes with the last mapping however the processes end (kill -9
 *     included).  Ranges of it hold the arenas and the larger windows
 *     (osc_ucxx_memory.c); a range given back has its pages punched out and
 *     is taken again by a later range.
 *   - A range's pages are reserved when it is taken (fallocate), so a store
 *     into it never faults for want of memory: where the memory is not
 *     there the window's creation fails with MPI_ERR_NO_MEM instead.
 *   - A peer maps ranges by opening /proc/<pid>/fd/<fd> (as UCX's posix
 *     transport does; the kernel allows it to the same user, where the owner
 *     is dumpable), mapping them and closing it: the ranges a first access
 *     needs (a window's state and memory: one range where they are
 *     neighbours, osc_ucxx_memory.c) in one open.  The file's
 *     first word holds the owner's name, which the peer checks on its
 *     first mapping: a pid of another pid namespace or a reused one names
 *     another file.
 *   - The file is registered with UCX range by range for peers that reach
 *     it through UCX (other nodes; osc_ucxx_memory.c).
 */

#include "ompi_config.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <sys/mman.h>
#include <unistd.h>

#include "ompi/proc/proc.h"
#include "opal/util/sys_limits.h"

#include "osc_ucxx_seg.h"

#ifndef FALLOC_FL_KEEP_SIZE
#define FALLOC_FL_KEEP_SIZE 0x01
#endif
#ifndef FALLOC_FL_PUNCH_HOLE
#define FALLOC_FL_PUNCH_HOLE 0x02
#endif

/* Free ranges of the file below `end`, sorted, none adjacent. */
typedef struct {
    uint64_t off, len;
} range_t;

static struct {
    opal_mutex_t lock;
    int fd;                  /* -1: not made (yet), -2: cannot be */
    ompi_osc_ucxx_segid_t id;
    uint64_t end;            /* the file's size: ranges are taken below it or at it */
    range_t *free;
    int nfree, cap;
} seg = {OPAL_MUTEX_STATIC_INIT, -1, {0, 0, 0, 0}, OSC_UCXX_SEG_CHUNK, NULL, 0, 0};

/* Our name, in memory: what peers' cross-memory attach probes read
 * (osc_ucxx_cma.c), at the address our identity publishes. */
static volatile uint64_t name_word;

static int make_file(void)
{
    /* (the name, not ompi_proc_local(): the early start comes before the
     * procs exist) */
    uint64_t key = ompi_osc_ucxx_name_key(OMPI_PROC_MY_NAME);
    int fd = memfd_create("osc_ucxx", MFD_CLOEXEC);

    if (fd < 0) {
        OSC_UCXX_VERBOSE(1, "no shared memory of our own (memfd_create: %s): peers on this "
                         "node reach this process's windows through UCX", strerror(errno));
        return -2;
    }
    /* the first chunk holds our name */
    if (sizeof(key) != pwrite(fd, &key, sizeof(key), 0)) {
        close(fd);
        return -2;
    }
    name_word = key;
    seg.id.ident = (uint64_t) (uintptr_t) &name_word;
    seg.id.pid = (int32_t) getpid();
    seg.id.fd = fd;
    seg.id.key = key;
    return fd;
}

bool ompi_osc_ucxx_seg_self(ompi_osc_ucxx_segid_t *id)
{
    OSC_UCXX_LOCK(&seg.lock);
    if (-1 == seg.fd) seg.fd = make_file();
    if (NULL != id) *id = seg.id;
    OSC_UCXX_UNLOCK(&seg.lock);
    return seg.fd >= 0;
}

/* (under seg.lock) */
static int free_insert(uint64_t off, uint64_t len)
{
    int i = 0;

    while (i < seg.nfree && seg.free[i].off < off) ++i;
    if (i > 0 && seg.free[i - 1].off + seg.free[i - 1].len == off) {
        seg.free[i - 1].len += len;
        if (i < seg.nfree && seg.free[i - 1].off + seg.free[i - 1].len == seg.free[i].off) {
            seg.free[i - 1].len += seg.free[i].len;
            memmove(&seg.free[i], &seg.free[i + 1], (seg.nfree - i - 1) * sizeof(range_t));
            seg.nfree--;
        }
        return OMPI_SUCCESS;
    }
    if (i < seg.nfree && off + len == seg.free[i].off) {
        seg.free[i].off = off;
        seg.free[i].len += len;
        return OMPI_SUCCESS;
    }
    if (seg.nfree == seg.cap) {
        int cap = seg.cap ? 2 * seg.cap : 16;
        range_t *grown = realloc(seg.free, cap * sizeof(range_t));
        if (NULL == grown) return OMPI_ERR_OUT_OF_RESOURCE;  /* (the range is lost) */
        seg.free = grown;
        seg.cap = cap;
    }
    memmove(&seg.free[i + 1], &seg.free[i], (seg.nfree - i) * sizeof(range_t));
    seg.free[i].off = off;
    seg.free[i].len = len;
    seg.nfree++;
    return OMPI_SUCCESS;
}

/* An offset for `len` bytes (a multiple of the chunk): the first free range
 * that holds it, else the file's end. */
static uint64_t range_take(uint64_t len)
{
    for (int i = 0; i < seg.nfree; ++i) {
        if (seg.free[i].len >= len) {
            uint64_t off = seg.free[i].off;
            seg.free[i].off += len;
            seg.free[i].len -= len;
            if (0 == seg.free[i].len) {
                memmove(&seg.free[i], &seg.free[i + 1], (seg.nfree - i - 1) * sizeof(range_t));
                seg.nfree--;
            }
            return off;
        }
    }
    seg.end += len;
    return seg.end - len;
}

int ompi_osc_ucxx_seg_take(size_t len, void **addr, uint64_t *off)
{
    uint64_t span = (len + OSC_UCXX_SEG_CHUNK - 1) / OSC_UCXX_SEG_CHUNK * OSC_UCXX_SEG_CHUNK;
    void *p;

    if (!ompi_osc_ucxx_seg_self(NULL)) return OMPI_ERR_NOT_AVAILABLE;
    OSC_UCXX_LOCK(&seg.lock);
    *off = range_take(span);
    OSC_UCXX_UNLOCK(&seg.lock);
    /* the pages now: a store must never find them missing (SIGBUS) */
    if (0 != fallocate(seg.fd, 0, (off_t) *off, (off_t) span)) {
        OSC_UCXX_VERBOSE(10, "cannot reserve %" PRIu64 " bytes of shared memory: %s", span,
                         strerror(errno));
        ompi_osc_ucxx_seg_give(NULL, *off, span);
        return MPI_ERR_NO_MEM;
    }
    p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, seg.fd, (off_t) *off);
    if (MAP_FAILED == p) {
        OSC_UCXX_VERBOSE(10, "cannot map %zu bytes of shared memory: %s", len, strerror(errno));
        ompi_osc_ucxx_seg_give(NULL, *off, span);
        return MPI_ERR_NO_MEM;
    }
    *addr = p;
    return OMPI_SUCCESS;
}

void ompi_osc_ucxx_seg_give(void *addr, uint64_t off, size_t len)
{
    uint64_t span = (len + OSC_UCXX_SEG_CHUNK - 1) / OSC_UCXX_SEG_CHUNK * OSC_UCXX_SEG_CHUNK;

    if (NULL != addr) munmap(addr, len);
    /* (peers that still map it see the hole: they never reach it again) */
    (void) fallocate(seg.fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, (off_t) off,
                     (off_t) span);
    OSC_UCXX_LOCK(&seg.lock);
    if (off + span == seg.end) {
        seg.end = off;   /* (the file keeps its size: only offsets are reused) */
    } else {
        (void) free_insert(off, span);
    }
    while (seg.nfree > 0 && seg.free[seg.nfree - 1].off + seg.free[seg.nfree - 1].len ==
                                seg.end) {
        seg.end = seg.free[--seg.nfree].off;
    }
    OSC_UCXX_UNLOCK(&seg.lock);
}

/* The decimal digits of v at p; the end returned.  (snprintf would cost
 * more instructions than the rest of a first mapping does.) */
static char *put_decimal(char *p, uint32_t v)
{
    char digits[10];
    int n = 0;
    do {
        digits[n++] = (char) ('0' + v % 10);
        v /= 10;
    } while (v > 0);
    while (n > 0) *p++ = digits[--n];
    return p;
}

bool ompi_osc_ucxx_seg_attach(const ompi_osc_ucxx_segid_t *id, bool check,
                              ompi_osc_ucxx_seg_range_t *r, int n)
{
    char path[64], *end;
    uint64_t key = 0;
    int fd, i;

    if (id->pid <= 0 || id->fd < 0) return false;
    /* "/proc/<pid>/fd/<fd>" */
    memcpy(path, "/proc/", 6);
    end = put_decimal(path + 6, (uint32_t) id->pid);
    memcpy(end, "/fd/", 4);
    *put_decimal(end + 4, (uint32_t) id->fd) = '\0';
    fd = open(path, O_RDWR | O_CLOEXEC);
    if (fd < 0) {
        OSC_UCXX_VERBOSE(10, "cannot open %s: %s", path, strerror(errno));
        return false;
    }
    if (check && (sizeof(key) != pread(fd, &key, sizeof(key), 0) || key != id->key)) {
        OSC_UCXX_VERBOSE(10, "%s is not the file of the process we want", path);
        close(fd);
        return false;
    }
    for (i = 0; i < n; ++i) {
        r[i].addr = mmap(NULL, r[i].len, PROT_READ | PROT_WRITE, MAP_SHARED, fd,
                         (off_t) r[i].off);
        if (MAP_FAILED == r[i].addr) {
            OSC_UCXX_VERBOSE(10, "cannot map %zu bytes of %s: %s", r[i].len, path,
                             strerror(errno));
            break;
        }
    }
    close(fd);
    if (i < n) {
        while (i-- > 0) munmap(r[i].addr, r[i].len);
        return false;
    }
    return true;
}

void ompi_osc_ucxx_seg_detach(void *addr, size_t len)
{
    if (NULL != addr) munmap(addr, len);
}

void ompi_osc_ucxx_segid_format(const ompi_osc_ucxx_segid_t *id, char *buf, size_t len)
{
    snprintf(buf, len, "%d:%d:%" PRIx64 ":%" PRIx64, (int) id->pid, (int) id->fd, id->key,
             id->ident);
}

bool ompi_osc_ucxx_segid_parse(const char *s, ompi_osc_ucxx_segid_t *id)
{
    int pid, fd;
    uint64_t key, ident;

    if (NULL == s || 4 != sscanf(s, "%d:%d:%" SCNx64 ":%" SCNx64, &pid, &fd, &key, &ident)) {
        return false;
    }
    id->pid = pid;
    id->fd = fd;
    id->key = key;
    id->ident = ident;
    return pid > 0 && fd >= 0;
}

/* Finalize: every range was given back with its window or arena. */
void ompi_osc_ucxx_seg_fini(void)
{
    if (seg.fd >= 0) close(seg.fd);
    seg.fd = -1;
    free(seg.free);
    seg.free = NULL;
    seg.nfree = seg.cap = 0;
    seg.end = OSC_UCXX_SEG_CHUNK;
}
