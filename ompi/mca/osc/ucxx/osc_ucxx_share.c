/*
 * Copyright (c) 2026 The osc/ucxx authors. All rights reserved.
 * $COPYRIGHT$
 *
 * MPI_Win_allocate_shared segments: one POSIX shared-memory object per
 * window holds every rank's segment.  Rank 0 makes it, every rank maps it,
 * and rank 0 unlinks it as soon as every rank has (or has given up): from
 * then on nothing of it is in /dev/shm, and its memory goes with the last
 * mapping, however the processes end.  (A process killed between the
 * creation and the unlink, one collective later, leaves the file: the only
 * window in which anything of the component is in /dev/shm.)
 */

#include "ompi_config.h"

#include <errno.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include "ompi/proc/proc.h"

#include "osc_ucxx_share.h"

#define SHM_PREFIX "/dev/shm"

static volatile int32_t serial;   /* segments made here (their names) */

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
                                ompi_osc_ucxx_shseg_t **out)
{
    uint64_t page = (uint64_t) sysconf(_SC_PAGESIZE), mine = size;
    int nprocs = ompi_comm_size(comm), me = ompi_comm_rank(comm), ok, all_ok = 0, rc;
    char name[64] = "", path[sizeof(SHM_PREFIX) + sizeof(name)];
    ompi_osc_ucxx_shseg_t *seg = calloc(1, sizeof(*seg));

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
        ompi_proc_t *self = ompi_proc_local();
        int fd;
        snprintf(name, sizeof(name), "/osc_ucxx.%u.%u.w%u", (unsigned) self->super.proc_name.jobid,
                 (unsigned) self->super.proc_name.vpid,
                 (unsigned) ompi_osc_ucxx_add32(&serial, 1));
        snprintf(path, sizeof(path), SHM_PREFIX "%s", name);
        fd = open(path, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
        if (fd < 0 || 0 != ftruncate(fd, (off_t) seg->len)) {
            OSC_UCXX_VERBOSE(10, "cannot make %s: %s", path, strerror(errno));
            if (fd >= 0) unlink(path);
            name[0] = '\0';
        }
        if (fd >= 0) close(fd);
    }
    rc = comm->c_coll->coll_bcast(name, sizeof(name), MPI_CHAR, 0, comm,
                                  comm->c_coll->coll_bcast_module);
    if (OMPI_SUCCESS != rc) goto fail;
    ok = ('\0' != name[0]);
    if (ok) {
        int fd;
        snprintf(path, sizeof(path), SHM_PREFIX "%s", name);
        fd = open(path, O_RDWR | O_CLOEXEC);
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
