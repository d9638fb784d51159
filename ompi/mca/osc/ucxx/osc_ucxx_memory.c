/*
 * Copyright (c) 2026 The osc/ucxx authors. All rights reserved.
 * $COPYRIGHT$
 *
 * Memory UCX allocates or registers for windows.
 *
 * Peers on the node reach what UCX allocated by loads and stores (UCX's
 * sysv transport: a shared-memory segment each), and a peer keeps the rkeys
 * it unpacked by the allocation's serial number, so that the next window on
 * the same allocation maps nothing new (osc_ucxx_worker.c,
 * ompi_osc_ucxx_rkey_take).  Two ways of not paying a segment per window
 * follow from that:
 *
 *   - Kept allocations: what a freed window allocated is kept for the next
 *     window it fits (a loop of create-use-free, OSU's pattern).
 *   - State arenas: every window but an MPI_Win_allocate one (whose state
 *     heads its own allocation) needs a state segment of ~3 KiB.  Windows
 *     alive together take them from shared 64 KiB arenas, so the tenth
 *     window alive costs no segment here (shmget + shmat + IPC_RMID: 15-19
 *     us of a 100 us MPI_Win_create at 2 ranks) and none at the peers (the
 *     arena's rkey is kept there from the first window: a shmat each).
 */

#include "ompi_config.h"

#include "opal/align.h"
#include "opal/util/show_help.h"
#include "opal/util/sys_limits.h"

#include "osc_ucxx.h"

/* ------------------------------------------------------------------------- */
/* Allocation and registration */

/* May a freed window's allocation of `len` bytes be kept for a later
 * window (ompi_osc_ucxx_kept_put)? */
static bool keepable(size_t len)
{
    return len <= OSC_UCXX.alloc_cache / 4;
}

static uint32_t next_serial(void)
{
    return (uint32_t) ompi_osc_ucxx_add32((int32_t *) &OSC_UCXX.alloc_serial, 1);
}

/* `serial`: a new allocation's number (osc_ucxx_worker.c: peers keep their
 * rkeys by it), where it is keepable; others have none, so that no peer
 * keeps one mapped after it is given back (a loop of 100 MiB windows would
 * have left peers up to 64 of them). */
int ompi_osc_ucxx_mem_map(void **addr, size_t len, bool allocate, ucp_mem_h *memh,
                          uint32_t *serial)
{
    ucp_mem_map_params_t params;
    ucp_mem_attr_t attr;
    ucs_status_t status;

    memset(&params, 0, sizeof(params));
    params.field_mask = UCP_MEM_MAP_PARAM_FIELD_ADDRESS | UCP_MEM_MAP_PARAM_FIELD_LENGTH |
                        UCP_MEM_MAP_PARAM_FIELD_FLAGS;
    params.address = allocate ? NULL : *addr;
    params.length = len;
    params.flags = allocate ? UCP_MEM_MAP_ALLOCATE : 0;
    status = ucp_mem_map(OSC_UCXX.context, &params, memh);
    if (UCS_OK != status) {
        opal_show_help("help-osc-ucxx.txt", "mem map failed", true, len,
                       ucs_status_string(status));
        return MPI_ERR_NO_MEM;  /* an MPI class passes through; OUT_OF_RESOURCE would be INTERN */
    }
    attr.field_mask = UCP_MEM_ATTR_FIELD_ADDRESS;
    if (UCS_OK != ucp_mem_query(*memh, &attr)) {
        ucp_mem_unmap(OSC_UCXX.context, *memh);
        return OMPI_ERROR;
    }
    *addr = attr.address;
    *serial = allocate && keepable(len) ? next_serial() : 0;
    return OMPI_SUCCESS;
}

/* ------------------------------------------------------------------------- */
/* Kept allocations
 *
 * A UCX allocation costs a shared-memory segment to make (shmget + shmat)
 * and to free (shmdt, which gives the pages back): ~5 and ~7 us with 2
 * ranks, most of a window's free.  So what a freed window allocated (an
 * MPI_Win_allocate window's state pages + memory, one memh; a state segment
 * too large for an arena) is kept, up to osc_ucxx_alloc_cache bytes in all,
 * for the next window it fits (at most twice the bytes needed).  Old
 * contents stay: MPI does not initialize MPI_Win_allocate's memory, and
 * state segments are zeroed again.  Peers may keep it mapped (their rkeys,
 * kept by its serial number), which is what the next window on it wants. */

bool ompi_osc_ucxx_kept_take(size_t *len, void **addr, ucp_mem_h *memh, uint32_t *serial)
{
    int best = -1;
    OSC_UCXX_LOCK(&OSC_UCXX.lock);
    for (int i = 0; i < OSC_UCXX.num_kept; ++i) {
        size_t have = OSC_UCXX.kept[i].len;
        if (have >= *len && have / 2 <= *len &&
            (best < 0 || have < OSC_UCXX.kept[best].len)) {
            best = i;
        }
    }
    if (best >= 0) {
        *memh = OSC_UCXX.kept[best].memh;
        *len = OSC_UCXX.kept[best].len;
        *serial = OSC_UCXX.kept[best].serial;
        OSC_UCXX.kept[best] = OSC_UCXX.kept[--OSC_UCXX.num_kept];
    }
    OSC_UCXX_UNLOCK(&OSC_UCXX.lock);
    if (best < 0) {
        return false;
    }
    OSC_UCXX_VERBOSE(10, "window memory: %zu bytes from a freed window", *len);
    ucp_mem_attr_t attr = {.field_mask = UCP_MEM_ATTR_FIELD_ADDRESS};
    (void) ucp_mem_query(*memh, &attr);  /* (it answered when it was made) */
    *addr = attr.address;
    return true;
}

void ompi_osc_ucxx_kept_put(ucp_mem_h memh, size_t len, uint32_t serial)
{
    size_t total = len;
    OSC_UCXX_LOCK(&OSC_UCXX.lock);
    for (int i = 0; i < OSC_UCXX.num_kept; ++i) total += OSC_UCXX.kept[i].len;
    if (OSC_UCXX.num_kept < OSC_UCXX_KEPT_MAX && keepable(len) &&
        total <= OSC_UCXX.alloc_cache) {
        OSC_UCXX.kept[OSC_UCXX.num_kept].memh = memh;
        OSC_UCXX.kept[OSC_UCXX.num_kept].serial = serial;
        OSC_UCXX.kept[OSC_UCXX.num_kept++].len = len;
        memh = NULL;
    }
    OSC_UCXX_UNLOCK(&OSC_UCXX.lock);
    OSC_UCXX_VERBOSE(10, "window memory: %zu bytes %s", len, memh ? "released" : "kept");
    if (NULL != memh) ucp_mem_unmap(OSC_UCXX.context, memh);
}

/* ------------------------------------------------------------------------- */
/* State arenas
 *
 * An arena is one UCX allocation carved into 256-byte units, a bit each;
 * a state segment takes the first run of free units that holds it (its
 * words keep their cache lines: units are 64-byte aligned).  An arena lives
 * while a segment uses it, and the newest one stays when empty: freeing it
 * would cost the segment the next window pays again, and peers that keep
 * its rkey (ompi_osc_ucxx_rkey_give) would keep it mapped anyway.  Segments
 * larger than a quarter of an arena (windows of thousands of processes)
 * take an allocation of their own, kept at free like a window's. */

#define ARENA_BYTES (64 * 1024)
#define ARENA_UNIT 256
#define ARENA_UNITS (ARENA_BYTES / ARENA_UNIT)

typedef struct arena_t {
    ucp_mem_h memh;
    char *base;
    uint32_t serial;
    int used;                              /* units taken */
    uint64_t taken[ARENA_UNITS / 64];      /* a bit a unit */
    struct arena_t *next;                  /* newest first */
} arena_t;

static arena_t *arenas;  /* under OSC_UCXX.lock */

static bool unit_taken(const arena_t *a, int u)
{
    return 0 != (a->taken[u / 64] & (1ULL << (u % 64)));
}

static void units_mark(arena_t *a, int first, int n, bool take)
{
    for (int u = first; u < first + n; ++u) {
        if (take) {
            a->taken[u / 64] |= 1ULL << (u % 64);
        } else {
            a->taken[u / 64] &= ~(1ULL << (u % 64));
        }
    }
    a->used += take ? n : -n;
}

/* The first run of `n` free units in `a`, or -1. */
static int units_find(const arena_t *a, int n)
{
    int run = 0;
    if (ARENA_UNITS - a->used < n) return -1;
    for (int u = 0; u < ARENA_UNITS; ++u) {
        run = unit_taken(a, u) ? 0 : run + 1;
        if (run == n) return u - n + 1;
    }
    return -1;
}

static arena_t *arena_new(void)
{
    arena_t *a = calloc(1, sizeof(*a));
    void *base = NULL;
    uint32_t unused;

    if (NULL == a || OMPI_SUCCESS != ompi_osc_ucxx_mem_map(&base, ARENA_BYTES, true, &a->memh,
                                                           &unused)) {
        free(a);
        return NULL;
    }
    a->base = base;
    a->serial = next_serial();  /* always: it lives until empty, or finalize */
    a->next = arenas;
    arenas = a;
    OSC_UCXX_VERBOSE(20, "state arena %u at %p", a->serial, base);
    return a;
}

/* A zeroed state segment of `size` bytes: `*len` is what it holds. */
int ompi_osc_ucxx_state_take(size_t size, void **state, ucp_mem_h *memh, uint32_t *serial,
                             size_t *len)
{
    int n = (int) ((size + ARENA_UNIT - 1) / ARENA_UNIT), first = -1;
    arena_t *a;

    if (size > ARENA_BYTES / 4) {
        *len = OPAL_ALIGN(size, opal_getpagesize(), size_t);
        if (!ompi_osc_ucxx_kept_take(len, state, memh, serial)) {
            int rc = ompi_osc_ucxx_mem_map(state, *len, true, memh, serial);
            if (OMPI_SUCCESS != rc) return rc;
        }
    } else {
        OSC_UCXX_LOCK(&OSC_UCXX.lock);
        for (a = arenas; NULL != a && (first = units_find(a, n)) < 0; a = a->next) {
        }
        if (NULL == a && NULL != (a = arena_new())) first = 0;
        if (NULL != a) units_mark(a, first, n, true);
        OSC_UCXX_UNLOCK(&OSC_UCXX.lock);
        if (NULL == a) return MPI_ERR_NO_MEM;  /* (mem_map said why) */
        *state = a->base + (size_t) first * ARENA_UNIT;
        *memh = a->memh;
        *serial = a->serial;
        *len = (size_t) n * ARENA_UNIT;
    }
    memset(*state, 0, size);
    return OMPI_SUCCESS;
}

void ompi_osc_ucxx_state_give(void *state, ucp_mem_h memh, size_t len, uint32_t serial)
{
    arena_t **at, *a, *gone = NULL;

    OSC_UCXX_LOCK(&OSC_UCXX.lock);
    for (at = &arenas; NULL != (a = *at) && a->memh != memh; at = &a->next) {
    }
    if (NULL != a) {
        units_mark(a, (int) (((char *) state - a->base) / ARENA_UNIT), (int) (len / ARENA_UNIT),
                   false);
        if (0 == a->used && a != arenas) {
            *at = a->next;
            gone = a;
        }
    }
    OSC_UCXX_UNLOCK(&OSC_UCXX.lock);
    if (NULL == a) {
        ompi_osc_ucxx_kept_put(memh, len, serial);  /* one of its own */
    } else if (NULL != gone) {
        ucp_mem_unmap(OSC_UCXX.context, gone->memh);
        free(gone);
    }
}

/* Finalize: kept allocations and arenas go back to UCX. */
void ompi_osc_ucxx_kept_release(void)
{
    while (OSC_UCXX.num_kept > 0) {
        ucp_mem_unmap(OSC_UCXX.context, OSC_UCXX.kept[--OSC_UCXX.num_kept].memh);
    }
    while (NULL != arenas) {
        arena_t *a = arenas;
        arenas = a->next;
        ucp_mem_unmap(OSC_UCXX.context, a->memh);
        free(a);
    }
}
