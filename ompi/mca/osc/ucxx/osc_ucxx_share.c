/*
 * Copyright (c) 2026 The osc/ucxx authors. All rights reserved.
 * $COPYRIGHT$
 *
 * Segments of every rank on the node, mapped by each process whole at
 * creation, so that no first access to a peer maps anything.
 *
 *   - MPI_Win_allocate_shared: one POSIX shared-memory object per window
 *     holds every rank's segment.  Rank 0 makes it, every rank maps it,
 *     and rank 0 unlinks it as soon as every rank has (or has given up):
 *     from then on nothing of it is in /dev/shm, and its memory goes with
 *     the last mapping, however the processes end.  (A process killed
 *     between the creation and the unlink, one collective later, leaves the
 *     file: the only window in which anything of the component is in
 *     /dev/shm.)
 *   - MPI_Win_allocate over ranks all on one node (share_node): one range
 *     of rank 0's own shared memory (its memfd, osc_ucxx_seg.c: nothing in
 *     any file system, its pages reserved) holds every rank's lock word,
 *     memory, state segment and PSCW post slots; the others open rank 0's
 *     file once, map the range (the states and post slots apart where they
 *     pass a few pages) and close it.  A lock_all epoch to every peer
 *     then pays page faults alone, where mapping each peer's file at its
 *     first access cost four system calls per peer (docs/scale.md).
 *     Memory stays proportional to what the ranks expose: the range is
 *     their windows' pages, a lock word, a state segment and post slots
 *     each, and only windows of the window arenas' sizes go there (larger
 *     ones keep their own allocations, mapped by peers in pieces).  Rank 0
 *     gives the range back once no rank maps it (a word in it counts
 *     them): a rank whose window outlives the collective free (a
 *     duplicate's core) keeps its memory.
 */

#include "ompi_config.h"

#include <errno.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include "ompi/proc/proc.h"

#include "opal/align.h"
#include "opal/util/sys_limits.h"

#include "osc_ucxx_share.h"
#include "osc_ucxx_seg.h"

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

/* ------------------------------------------------------------------------- */
/* MPI_Win_allocate on one node */

/* A rank's memory, at most: the window arenas' largest window
 * (osc_ucxx_memory.c); the range, at most. */
#define NODE_RANK_MAX ((uint64_t) 256 * 1024)
#define NODE_MAX ((uint64_t) 64 << 20)
/* Pages of states and post slots past which they take a mapping of their
 * own (from 15 ranks on) */
#define NODE_APART 4

/* What each rank asks; rank 0's also carries the range it took. */
typedef struct {
    uint64_t size;
    uint32_t ok, uid;
    ompi_osc_ucxx_segid_t id;
    uint64_t off, len;
} node_ask_t;

typedef struct {
    ompi_osc_ucxx_segid_t id;
    uint64_t off, len;
} node_give_t;

/* Rank 0's ranges that a peer still mapped when it freed its window. */
static ompi_osc_ucxx_shseg_t *node_kept;

static void seg_free(ompi_osc_ucxx_shseg_t *seg)
{
    free(seg->sizes);
    free(seg->offsets);
    free(seg);
}

/* Ranges no peer maps any more go back to our file. */
static void node_reclaim(bool all)
{
    ompi_osc_ucxx_shseg_t **at, *seg, *gone = NULL;

    OSC_UCXX_LOCK(&OSC_UCXX.lock);
    for (at = &node_kept; NULL != (seg = *at);) {
        if (all || 0 == __atomic_load_n(seg->users, __ATOMIC_ACQUIRE)) {
            *at = seg->next;
            seg->next = gone;
            gone = seg;
        } else {
            at = &seg->next;
        }
    }
    OSC_UCXX_UNLOCK(&OSC_UCXX.lock);
    for (; NULL != gone; gone = seg) {
        seg = gone->next;
        if (all) {
            munmap(gone->map, gone->len);  /* (peers may map it still: no hole punched) */
        } else {
            ompi_osc_ucxx_seg_give(gone->map, gone->off, gone->len);
        }
        seg_free(gone);
    }
}

void ompi_osc_ucxx_share_fini(void)
{
    node_reclaim(true);
}

/* Rank 0 takes the range before the sizes are known, for every rank
 * asking what it asks (the usual case: the allgather then carries the
 * range, and no broadcast follows), and gives it back where that was
 * wrong.  Nothing after the mapping is collective: a process that could
 * not map says so in the creation's exchange (`*refused`). */
int ompi_osc_ucxx_share_node(ompi_communicator_t *comm, size_t size, size_t state_size,
                             size_t posts_size, bool mappable, ompi_osc_ucxx_shseg_t **out,
                             bool *refused)
{
    int n = ompi_comm_size(comm), me = ompi_comm_rank(comm), rc;
    uint64_t page = (uint64_t) opal_getpagesize(), stride = OPAL_ALIGN(state_size, 256, uint64_t);
    /* (post slots grow with the ranks squared: past OSC_UCXX.node_posts
     * ranks, each rank's own, mapped by the peers that post) */
    uint64_t pstride = n <= OSC_UCXX.node_posts ? OPAL_ALIGN(posts_size, 64, uint64_t) : 0;
    uint64_t locks = (uint64_t) n * sizeof(ompi_osc_ucxx_word_t);
    uint64_t users_at = n * stride + (uint64_t) n * pstride, apart = users_at + 64;
    /* (the states on a stride of their own: none across a page) */
    uint64_t locks_end = OPAL_ALIGN(locks, stride, uint64_t);
    /* (the states and post slots after the memory, in a mapping of their
     * own where they pass NODE_APART, see `apart` in osc_ucxx_share.h;
     * below, after the lock words: a mapping costs creation and free a
     * system call each, and its page at creation more than the first epoch
     * saves) */
    uint64_t apart_len = apart > NODE_APART * page ? OPAL_ALIGN(apart, page, uint64_t) : 0;
    uint64_t data0 = OPAL_ALIGN(locks_end + (0 != apart_len ? 0 : apart), page, uint64_t);
    uint64_t total = data0 + apart_len;
    uint64_t guess = total + (uint64_t) n * OPAL_ALIGN(size, page, uint64_t);
    node_ask_t *all = malloc(n * sizeof(*all));
    ompi_osc_ucxx_shseg_t *seg = calloc(1, sizeof(*seg));
    /* (what could fail here fails before rank 0 takes anything: once it
     * has, its part cannot fail, and its range outlives every mapping) */
    bool ok = NULL != seg && NULL != (seg->sizes = malloc(n * sizeof(uint64_t))) &&
              NULL != (seg->offsets = malloc((n + 1) * sizeof(uint64_t)));
    node_ask_t mine = {.size = size, .ok = ok && mappable && size <= NODE_RANK_MAX,
                       .uid = (uint32_t) geteuid(), .off = OSC_UCXX_SEG_NONE};
    node_give_t give;
    void *taken = NULL;
    bool use = true;

    *out = NULL;
    *refused = false;
    if (NULL == all) {
        ompi_osc_ucxx_share_segment_free(seg);
        return OMPI_ERR_OUT_OF_RESOURCE;
    }
    if (NULL != seg) {
        seg->node = true;
        seg->off = OSC_UCXX_SEG_NONE;
    }
    if (0 == me && mine.ok && guess <= NODE_MAX && ompi_osc_ucxx_seg_self(&mine.id)) {
        node_reclaim(false);
        if (OMPI_SUCCESS == ompi_osc_ucxx_seg_take(guess, &taken, &mine.off)) {
            mine.len = guess;
        } else {
            mine.off = OSC_UCXX_SEG_NONE;
        }
    }
    rc = comm->c_coll->coll_allgather(&mine, sizeof(mine), MPI_BYTE, all, sizeof(mine), MPI_BYTE,
                                      comm, comm->c_coll->coll_allgather_module);
    /* (every rank is past its previous window's free: what it mapped of
     * ours is counted off) */
    node_reclaim(false);
    for (int i = 0; OMPI_SUCCESS == rc && i < n; ++i) {
        use = use && all[i].ok && all[i].uid == all[0].uid;
        total += OPAL_ALIGN(all[i].size, page, uint64_t);
    }
    if (OMPI_SUCCESS != rc || !use || total > NODE_MAX) {
        if (NULL != taken) ompi_osc_ucxx_seg_give(taken, mine.off, (size_t) mine.len);
        goto out;
    }

    give.id = all[0].id;
    give.off = all[0].off;
    give.len = all[0].len;
    if (OSC_UCXX_SEG_NONE == give.off || total > give.len) {
        /* (the ranks ask different sizes: rank 0 takes what they ask) */
        if (NULL != taken) ompi_osc_ucxx_seg_give(taken, mine.off, (size_t) mine.len);
        taken = NULL;
        memset(&give, 0, sizeof(give));
        give.off = OSC_UCXX_SEG_NONE;
        if (0 == me && ompi_osc_ucxx_seg_self(&give.id) &&
            OMPI_SUCCESS == ompi_osc_ucxx_seg_take(total, &taken, &give.off)) {
            give.len = total;
        } else {
            give.off = OSC_UCXX_SEG_NONE;
        }
        rc = comm->c_coll->coll_bcast(&give, sizeof(give), MPI_BYTE, 0, comm,
                                      comm->c_coll->coll_bcast_module);
    }
    if (NULL != taken) {
        seg->map = taken;
        seg->apart = seg->map + (0 != apart_len ? total - apart_len : locks_end);
        seg->users = (uint64_t *) (seg->apart + users_at);
        seg->off = give.off;
        /* (an add, as the peers': they may have mapped it already; a range
         * taken reads zero, its pages new or punched out at its give) */
        __atomic_add_fetch(seg->users, 1, __ATOMIC_ACQ_REL);
    } else if (OMPI_SUCCESS == rc && OSC_UCXX_SEG_NONE != give.off) {
        ompi_osc_ucxx_seg_range_t r[2] = {
            {.off = give.off, .len = (size_t) (total - apart_len)},
            {.off = give.off + total - apart_len, .len = (size_t) apart_len}};
        if (ompi_osc_ucxx_seg_attach(&give.id, true, r, 0 != apart_len ? 2 : 1)) {
            seg->map = r[0].addr;
            seg->apart = 0 != apart_len ? r[1].addr : seg->map + locks_end;
            seg->apart_len = (size_t) apart_len;
            seg->users = (uint64_t *) (seg->apart + users_at);
            __atomic_add_fetch(seg->users, 1, __ATOMIC_ACQ_REL);
        }
    }
    /* (rank 0's mapping is the range it took, which may be longer) */
    seg->len = NULL != taken ? (size_t) give.len : (size_t) total;
    if (OMPI_SUCCESS != rc || NULL == seg->map) {
        /* (no range: every rank knows; a mapping that failed: this one) */
        *refused = OMPI_SUCCESS == rc && OSC_UCXX_SEG_NONE != give.off;
        OSC_UCXX_VERBOSE(10, "MPI_Win_allocate: no segment for the node%s",
                         *refused ? " mapped here: every rank takes its own memory" : "");
        goto out;
    }
    seg->locks = (ompi_osc_ucxx_word_t *) seg->map;
    seg->state_stride = (size_t) stride;
    seg->posts_stride = (size_t) pstride;
    seg->posts = seg->apart + n * stride;
    seg->offsets[0] = data0;
    for (int i = 0; i < n; ++i) {
        seg->sizes[i] = all[i].size;
        seg->offsets[i + 1] = seg->offsets[i] + OPAL_ALIGN(all[i].size, page, uint64_t);
    }
    *out = seg;
    seg = NULL;
out:
    ompi_osc_ucxx_share_segment_free(seg);
    free(all);
    return rc;
}

void ompi_osc_ucxx_share_segment_free(ompi_osc_ucxx_shseg_t *seg)
{
    if (NULL == seg) return;
    if (seg->node && NULL != seg->map) {
        uint64_t left = __atomic_sub_fetch(seg->users, 1, __ATOMIC_ACQ_REL);
        if (OSC_UCXX_SEG_NONE != seg->off) {   /* rank 0's: ours */
            if (0 != left) {
                OSC_UCXX_LOCK(&OSC_UCXX.lock);
                seg->next = node_kept;
                node_kept = seg;
                OSC_UCXX_UNLOCK(&OSC_UCXX.lock);
                return;
            }
            ompi_osc_ucxx_seg_give(seg->map, seg->off, seg->len);
            seg->map = NULL;
        }
    }
    if (NULL != seg->map) munmap(seg->map, seg->len - seg->apart_len);
    if (0 != seg->apart_len) munmap(seg->apart, seg->apart_len);
    seg_free(seg);
}
