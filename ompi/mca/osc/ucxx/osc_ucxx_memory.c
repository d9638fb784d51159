/*
 * Copyright (c) 2026 The osc/ucxx authors. All rights reserved.
 * $COPYRIGHT$
 *
 * Memory UCX allocates or registers for windows.
 *
 * Peers on the node reach what UCX allocated by loads and stores (UCX's
 * sysv transport: a shared-memory segment each), and a peer keeps the rkeys
 * it unpacked by the allocation's serial number, so that the next window on
 * the same allocation maps nothing new (osc_ucxx_rkey.c,
 * ompi_osc_ucxx_rkey_take).  Two ways of not paying a segment per window
 * follow from that:
 *
 *   - Arenas (below): windows alive together take their state segments
 *     (~3 KiB, every window but an MPI_Win_allocate one, whose state heads
 *     its own memory) and small MPI_Win_allocate memory from shared
 *     allocations, so the tenth window alive costs no segment here
 *     (shmget + shmat + IPC_RMID: a large part of an MPI_Win_create) and
 *     none at the peers (the arena's rkey is kept there from its
 *     first window: a shmat each).
 *   - Kept allocations: what a freed window allocated of its own (larger
 *     ones) is kept for the next window it fits (a loop of create-use-free,
 *     OSU's pattern).
 */

#include "ompi_config.h"

#include "opal/align.h"
#include "opal/util/show_help.h"
#include "opal/util/sys_limits.h"

#include "osc_ucxx.h"

/* ------------------------------------------------------------------------- */
/* Allocation and registration */

/* May a freed window's allocation of `len` bytes be kept for a later
 * window (kept_put)? */
static bool keepable(size_t len)
{
    return len <= OSC_UCXX.alloc_cache / 4;
}

static uint32_t next_serial(void)
{
    return (uint32_t) ompi_osc_ucxx_add32((int32_t *) &OSC_UCXX.alloc_serial, 1);
}

/* `serial`: a new allocation's number (osc_ucxx_rkey.c: peers keep their
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
 * and to free (shmdt, which gives the pages back), most of a window's
 * free.  Its pages cost a fault each where they are first touched, by the
 * owner and again by every peer that maps them: UCX's sysv segments fault
 * page by page (no fault-around, which osc/sm's mmap()ed files get for
 * reads), so an accumulate into a peer's new large window paid for every
 * page before any work (big_xfer accflush, a new window per loop, took
 * about twice osc/sm's time until allocations were kept, up to a quarter
 * of osc_ucxx_alloc_cache each).  So what a freed window allocated of its
 * own (an MPI_Win_allocate window's state pages + memory, one memh, or a
 * state segment, where too large for an arena) is kept, up to
 * osc_ucxx_alloc_cache bytes in all,
 * for the next window it fits (at most twice the bytes needed).  Old
 * contents stay: MPI does not initialize MPI_Win_allocate's memory, and
 * state segments are zeroed again.  Peers may keep it mapped (their rkeys,
 * kept by its serial number), which is what the next window on it wants. */

static bool kept_take(size_t *len, void **addr, ucp_mem_h *memh, uint32_t *serial)
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

static void kept_put(ucp_mem_h memh, size_t len, uint32_t serial)
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
/* Arenas
 *
 * An arena is one UCX allocation carved into 256 units, a bit each; a
 * taker gets the first run of free units that holds it.  Two classes:
 *   - state segments (every window but an MPI_Win_allocate one): 64 KiB
 *     arenas of 256-byte units (a segment's words keep their cache lines:
 *     units are 64-byte aligned);
 *   - MPI_Win_allocate windows of up to 256 KiB with their state pages:
 *     1 MiB arenas of page units, so window memory stays page-aligned.
 * An arena lives while a taker uses it, and the newest of a class stays
 * when empty: freeing it would cost the segment the next window pays
 * again, and peers that keep its rkey (ompi_osc_ucxx_rkey_give) would keep
 * it mapped anyway.  Larger takers get an allocation of their own, kept at
 * free as above. */

#define ARENA_UNITS 256

typedef struct arena_t {
    ucp_mem_h memh;
    char *base;
    uint32_t serial;
    int used;                              /* units taken */
    uint64_t taken[ARENA_UNITS / 64];      /* a bit a unit */
    struct arena_t *next;                  /* newest first */
} arena_t;

typedef struct {
    size_t unit;                           /* bytes (0: a page); an arena has ARENA_UNITS */
    const char *what;
    arena_t *list;                         /* under OSC_UCXX.lock */
} arena_class_t;

static arena_class_t state_arenas = {256, "state arena", NULL};
static arena_class_t window_arenas = {0, "window arena", NULL};  /* (unit: a page) */

static size_t class_unit(const arena_class_t *c)
{
    return 0 != c->unit ? c->unit : (size_t) opal_getpagesize();
}

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

static arena_t *arena_new(arena_class_t *c)
{
    arena_t *a = calloc(1, sizeof(*a));
    void *base = NULL;
    uint32_t unused;

    if (NULL == a || OMPI_SUCCESS != ompi_osc_ucxx_mem_map(&base, ARENA_UNITS * class_unit(c),
                                                           true, &a->memh, &unused)) {
        free(a);
        return NULL;
    }
    a->base = base;
    a->serial = next_serial();  /* always: it lives until empty, or finalize */
    a->next = c->list;
    c->list = a;
    OSC_UCXX_VERBOSE(20, "%s %u at %p", c->what, a->serial, base);
    return a;
}

/* `size` bytes (at most a quarter of an arena) from an arena of class `c`:
 * `*len` is what the taker holds. */
static int arena_take(arena_class_t *c, size_t size, void **addr, ucp_mem_h *memh,
                      uint32_t *serial, size_t *len)
{
    size_t unit = class_unit(c);
    int n = (int) ((size + unit - 1) / unit), first = -1;
    arena_t *a;

    OSC_UCXX_LOCK(&OSC_UCXX.lock);
    for (a = c->list; NULL != a && (first = units_find(a, n)) < 0; a = a->next) {
    }
    if (NULL == a && NULL != (a = arena_new(c))) first = 0;
    if (NULL != a) units_mark(a, first, n, true);
    OSC_UCXX_UNLOCK(&OSC_UCXX.lock);
    if (NULL == a) return MPI_ERR_NO_MEM;  /* (mem_map said why) */
    *addr = a->base + (size_t) first * unit;
    *memh = a->memh;
    *serial = a->serial;
    *len = (size_t) n * unit;
    return OMPI_SUCCESS;
}

/* Give back to an arena of class `c` what arena_take gave; false: `memh`
 * is none of the class's arenas. */
static bool arena_give(arena_class_t *c, void *addr, ucp_mem_h memh, size_t len)
{
    size_t unit = class_unit(c);
    arena_t **at, *a, *gone = NULL;

    OSC_UCXX_LOCK(&OSC_UCXX.lock);
    for (at = &c->list; NULL != (a = *at) && a->memh != memh; at = &a->next) {
    }
    if (NULL != a) {
        units_mark(a, (int) (((char *) addr - a->base) / unit), (int) (len / unit), false);
        if (0 == a->used && a != c->list) {
            *at = a->next;
            gone = a;
        }
    }
    OSC_UCXX_UNLOCK(&OSC_UCXX.lock);
    if (NULL != gone) {
        ucp_mem_unmap(OSC_UCXX.context, gone->memh);
        free(gone);
    }
    return NULL != a;
}

/* `*len` bytes (or more: `*len` says) of its own, kept or new. */
static int own_take(size_t *len, void **addr, ucp_mem_h *memh, uint32_t *serial)
{
    if (kept_take(len, addr, memh, serial)) return OMPI_SUCCESS;
    return ompi_osc_ucxx_mem_map(addr, *len, true, memh, serial);
}

int ompi_osc_ucxx_state_take(size_t size, void **state, ucp_mem_h *memh, uint32_t *serial,
                             size_t *len)
{
    int rc;

    if (size > ARENA_UNITS * class_unit(&state_arenas) / 4) {
        *len = OPAL_ALIGN(size, opal_getpagesize(), size_t);
        rc = own_take(len, state, memh, serial);
    } else {
        rc = arena_take(&state_arenas, size, state, memh, serial, len);
    }
    if (OMPI_SUCCESS == rc) memset(*state, 0, size);
    return rc;
}

/* The early start (component_init, in MPI_Init): the first state arena,
 * a UCX allocation that the first window would make otherwise (a large
 * part of a first MPI_Win_create).  Empty, it stays as the newest of its class. */
void ompi_osc_ucxx_state_warm(void)
{
    void *state;
    ucp_mem_h memh;
    uint32_t serial;
    size_t len;

    if (OMPI_SUCCESS == ompi_osc_ucxx_state_take(1, &state, &memh, &serial, &len)) {
        ompi_osc_ucxx_mem_give(state, memh, len, serial);
    }
}

int ompi_osc_ucxx_window_take(size_t size, void **addr, ucp_mem_h *memh, uint32_t *serial,
                              size_t *len)
{
    if (size > ARENA_UNITS * class_unit(&window_arenas) / 4) {
        *len = size;
        return own_take(len, addr, memh, serial);
    }
    return arena_take(&window_arenas, size, addr, memh, serial, len);
}

void ompi_osc_ucxx_mem_give(void *addr, ucp_mem_h memh, size_t len, uint32_t serial)
{
    if (!arena_give(&state_arenas, addr, memh, len) &&
        !arena_give(&window_arenas, addr, memh, len)) {
        kept_put(memh, len, serial);  /* one of its own */
    }
}

/* Finalize: kept allocations and arenas go back to UCX. */
void ompi_osc_ucxx_kept_release(void)
{
    arena_class_t *classes[] = {&state_arenas, &window_arenas};

    while (OSC_UCXX.num_kept > 0) {
        ucp_mem_unmap(OSC_UCXX.context, OSC_UCXX.kept[--OSC_UCXX.num_kept].memh);
    }
    for (int i = 0; i < 2; ++i) {
        while (NULL != classes[i]->list) {
            arena_t *a = classes[i]->list;
            classes[i]->list = a->next;
            ucp_mem_unmap(OSC_UCXX.context, a->memh);
            free(a);
        }
    }
}
