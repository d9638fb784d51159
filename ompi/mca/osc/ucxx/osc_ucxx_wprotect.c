/*
 * Copyright (c) 2026 The osc/ucxx authors. All rights reserved.
 * $COPYRIGHT$
 *
 * Holding off other threads' writes while pages move onto shared memory.
 *
 * Moving a page (osc_ucxx_share.c) is a copy into a shared-memory object,
 * then an mmap(MAP_FIXED) that puts the object where the page was.  A write
 * another thread makes to the page between the two lands in the old page and
 * is lost.  For pages the window covers entirely that is the application's
 * own memory in a collective call; a page at a window's edge also holds
 * other data (malloc's, other threads'), which may be written at any moment.
 *
 * userfaultfd's write protection closes that gap without signals: with the
 * range registered (UFFDIO_REGISTER_MODE_WP) and write-protected, a thread
 * that writes to it sleeps in its page fault.  We copy, replace the mapping
 * (the new one is not registered), and wake the range (UFFDIO_WAKE): the
 * sleepers' faults are retried and find the shared pages, with our copy of
 * everything written before.  Reads are never held.  Nobody reads the
 * userfaultfd: no handler thread, the wake is the answer to every fault.
 * Where the move failed the range is unprotected and unregistered first;
 * should a wake fail, the descriptor is closed, which wakes every writer.
 *
 * One userfaultfd serves every move (moves are serialized by
 * OSC_UCXX.lock), and nothing stays registered between moves.  One per move
 * cost its close, which walks every mapping of the process to unregister
 * it: with 100 create windows alive, ~40 us of a window creation.  A
 * fork()ed child drops its copy of the descriptor (wp_fork_child).
 *
 * What it needs: Linux >= 5.7 (write protection of anonymous memory) and a
 * userfaultfd that may hold faults taken in the kernel too (a read() into
 * the page by another thread, say).  That is CAP_SYS_PTRACE (root), the
 * sysctl vm.unprivileged_userfaultfd=1, or access to /dev/userfaultfd
 * (Linux >= 6.1).  Otherwise an unprivileged process only gets
 * UFFD_USER_MODE_ONLY, where such a kernel write fails with EFAULT instead
 * of waiting; osc_ucxx_share_edge_pages=2 accepts that, the default does
 * not.  Kernels before 6.4 cannot protect pages that were never touched, so
 * there we read every page first, which maps it.
 *
 * While writes are held the caller writes nothing in the range and calls
 * nothing that might: not malloc, and not libc's mmap, which Open MPI's and
 * UCX's memory hooks intercept (they may allocate); the replacing mmap is a
 * raw system call, and the caller repeats it through libc afterwards so the
 * hooks see the change.
 */

#include "ompi_config.h"

#include <errno.h>
#include <fcntl.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>
#if defined(__linux__)
#include <linux/userfaultfd.h>
#endif

#include "osc_ucxx_wprotect.h"

#if defined(__NR_userfaultfd) && defined(UFFDIO_WRITEPROTECT)

#ifndef UFFD_USER_MODE_ONLY
#define UFFD_USER_MODE_ONLY 1
#endif
#ifndef USERFAULTFD_IOC_NEW
#define USERFAULTFD_IOC_NEW _IO(0xAA, 0x00)
#endif
#ifndef UFFD_FEATURE_WP_UNPOPULATED
#define UFFD_FEATURE_WP_UNPOPULATED (1 << 13)
#endif

static int usable = -1;     /* probed: 1 yes, 0 no */
static bool unpopulated;    /* the kernel protects untouched pages too */
static int uffd = -1;       /* the userfaultfd of every move, once made */

static int uffd_open(void)
{
    int flags = O_CLOEXEC | O_NONBLOCK;
    int fd = (int) syscall(__NR_userfaultfd, flags);

    if (fd < 0) {
        int dev = open("/dev/userfaultfd", O_RDWR | O_CLOEXEC);
        if (dev >= 0) {
            fd = ioctl(dev, USERFAULTFD_IOC_NEW, flags);
            close(dev);
        }
    }
    if (fd < 0 && OSC_UCXX.share_edges > 1) {
        fd = (int) syscall(__NR_userfaultfd, flags | UFFD_USER_MODE_ONLY);
    }
    return fd;
}

/* A userfaultfd past its API handshake, able to write-protect, or -1.  A
 * kernel that does not know a feature fails the handshake, and a failed
 * handshake cannot be repeated on the same descriptor. */
static int uffd_new(void)
{
    uint64_t want[2] = {UFFD_FEATURE_WP_UNPOPULATED, 0};

    for (int i = 0; i < 2; ++i) {
        struct uffdio_api api = {.api = UFFD_API, .features = want[i]};
        int fd = uffd_open();
        if (fd < 0) return -1;
        if (0 == ioctl(fd, UFFDIO_API, &api) && (api.features & UFFD_FEATURE_PAGEFAULT_FLAG_WP)) {
            unpopulated = (0 != want[i]);
            return fd;
        }
        close(fd);
    }
    return -1;
}

static int protect(int fd, uint64_t lo, uint64_t len, bool on)
{
    struct uffdio_writeprotect wp = {.range = {.start = lo, .len = len},
                                     .mode = on ? UFFDIO_WRITEPROTECT_MODE_WP : 0};
    return ioctl(fd, UFFDIO_WRITEPROTECT, &wp);
}

/* Nothing of [lo, lo + len) registered or held any more: unprotected and
 * unregistered where still ours (not where a new mapping replaced it: the
 * two calls would find nothing there, ~1.1 of a move's ~18 us), then every
 * writer held in it woken, to retry its fault.  Should the wake fail, the
 * descriptor is closed, which wakes every writer it holds (the next move
 * makes another). */
static void release(uint64_t lo, uint64_t len, bool replaced)
{
    struct uffdio_range range = {.start = lo, .len = len};

    if (!replaced) {
        (void) protect(uffd, lo, len, false);
        (void) ioctl(uffd, UFFDIO_UNREGISTER, &range);
    }
    if (0 != ioctl(uffd, UFFDIO_WAKE, &range)) {
        close(uffd);
        uffd = -1;
    }
}

int ompi_osc_ucxx_wp_begin(uint64_t lo, uint64_t len)
{
    struct uffdio_register reg = {.range = {.start = lo, .len = len},
                                  .mode = UFFDIO_REGISTER_MODE_WP};
    uint64_t page = (uint64_t) sysconf(_SC_PAGESIZE);

    if (uffd < 0 && (uffd = uffd_new()) < 0) return -1;
    if (!unpopulated) {
        for (uint64_t p = lo; p < lo + len; p += page) {
            (void) *(volatile char *) (uintptr_t) p;
        }
    }
    if (0 != ioctl(uffd, UFFDIO_REGISTER, &reg)) return -1;
    if (!(reg.ioctls & (1ULL << _UFFDIO_WRITEPROTECT)) || 0 != protect(uffd, lo, len, true)) {
        release(lo, len, false);  /* nothing was held yet */
        return -1;
    }
    return uffd;
}

void ompi_osc_ucxx_wp_end(int handle, uint64_t lo, uint64_t len, bool replaced)
{
    if (handle >= 0) release(lo, len, replaced);
}

/* A fork()ed child: the descriptor is the parent's (its registrations
 * were not inherited); a raw close, as the rest of the child's cleanup. */
void ompi_osc_ucxx_wp_fork_child(void)
{
    if (uffd >= 0) syscall(SYS_close, uffd);
    uffd = -1;
}

void ompi_osc_ucxx_wp_fini(void)
{
    if (uffd >= 0) close(uffd);
    uffd = -1;
}

/* Hold off writes to a page of our own and release them: the kernel, the
 * privileges and any seccomp filter allow it. */
bool ompi_osc_ucxx_wp_usable(void)
{
    if (OSC_UCXX.share_edges <= 0) return false;
    if (usable < 0) {
        uint64_t page = (uint64_t) sysconf(_SC_PAGESIZE);
        void *p = mmap(NULL, page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        int fd = MAP_FAILED == p ? -1 : ompi_osc_ucxx_wp_begin((uint64_t) (uintptr_t) p, page);
        usable = (fd >= 0);
        ompi_osc_ucxx_wp_end(fd, (uint64_t) (uintptr_t) p, page, false);
        if (MAP_FAILED != p) munmap(p, page);
        OSC_UCXX_VERBOSE(10, "userfaultfd write protection %s (%s)",
                         usable ? "usable" : "not usable", strerror(errno));
    }
    return usable > 0;
}

#else /* no userfaultfd write protection in this build */

bool ompi_osc_ucxx_wp_usable(void)
{
    return false;
}

int ompi_osc_ucxx_wp_begin(uint64_t lo, uint64_t len)
{
    (void) lo;
    (void) len;
    return -1;
}

void ompi_osc_ucxx_wp_end(int handle, uint64_t lo, uint64_t len, bool replaced)
{
    (void) handle;
    (void) lo;
    (void) len;
    (void) replaced;
}

void ompi_osc_ucxx_wp_fork_child(void)
{
}

void ompi_osc_ucxx_wp_fini(void)
{
}

#endif
