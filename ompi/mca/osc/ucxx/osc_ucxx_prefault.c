/*
 * Copyright (c) 2026 The osc/ucxx authors. All rights reserved.
 * $COPYRIGHT$
 *
 * Prefaulting peers' memory mapped here before large copies.
 *
 * A peer's memory mapped here (a UCX sysv segment: allocated windows) faults
 * page by page where this process first touches it, and a sysv segment maps
 * no neighbours (no fault-around).  So the first copy of over
 * OSC_UCXX_PREFAULT_MIN bytes to or from a 2 MiB chunk of such a mapping
 * populates the page tables for the bytes it copies in one madvise call, and
 * the chunk is marked, so that later copies pay nothing (populating pages
 * already mapped costs as much as copying them).  Pages of a marked chunk
 * that its first copy did not touch fault as before.
 *
 * MADV_POPULATE_READ for stores too: the mapping is shared memory, whose
 * dirtying the kernel does not track, so read faults map the pages writable
 * and the stores fault no more (the write kind dirties page by page, which
 * was slower).  Only peers' memory is populated: our own may be private,
 * where a read populate would map the zero page under the stores.
 *
 * The first access of a lock_all epoch to a peer whose memory it has just
 * mapped touches two pages of it, the target's lock word and the bytes
 * accessed, which the window arena puts next to each other
 * (osc_ucxx_memory.c): one call populates both, which costs less than two
 * faults.  The write kind there: a read populate also maps the pages
 * around (fault-around), which the program may never touch.
 */

#include "ompi_config.h"

#include <errno.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "opal/util/sys_limits.h"

#include "osc_ucxx_prefault.h"

#ifndef MADV_POPULATE_READ
#define MADV_POPULATE_READ 22  /* Linux 5.14 */
#endif
#ifndef MADV_POPULATE_WRITE
#define MADV_POPULATE_WRITE 23
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

uint64_t *ompi_osc_ucxx_prefault_bits(size_t bytes)
{
    if (prefault_refused) return NULL;
    return calloc(((bytes >> PREFAULT_SHIFT) + 1 + 63) / 64, sizeof(uint64_t));
}

void ompi_osc_ucxx_prefault_chunks(char *base, uint64_t *bits, uint64_t off, size_t len)
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

bool ompi_osc_ucxx_prefault_pair(const void *a, const void *b)
{
    uintptr_t page = (uintptr_t) opal_getpagesize();
    uintptr_t pa = (uintptr_t) a & ~(page - 1), pb = (uintptr_t) b & ~(page - 1);
    uintptr_t lo = pa < pb ? pa : pb, hi = (pa < pb ? pb : pa) + page;

    if (prefault_refused || hi - lo > 2 * page) return false;
    /* The system call itself: UCX's memory hooks intercept madvise() for
     * the advice that gives pages back, and populating gives none back.
     * (An error leaves the pages to fault as they would have: EINVAL, a
     * kernel without it; EFAULT, a page the owner punched out.) */
    return 0 == syscall(SYS_madvise, (void *) lo, hi - lo, MADV_POPULATE_WRITE);
}
