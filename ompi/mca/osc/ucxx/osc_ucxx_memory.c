/*
 * Copyright (c) 2026 The osc/ucxx authors. All rights reserved.
 * $COPYRIGHT$
 *
 * Memory of windows: what this process allocates for them (state segments,
 * MPI_Win_allocate memory) and what it registers with UCX.
 *
 * What it allocates comes from its own shared memory (osc_ucxx_seg.c: one
 * memfd, in ranges), which peers on the node map themselves, by ranges, and
 * keep mapped for every window in them (osc_ucxx_ptab.c); each range is
 * registered with UCX (ucp_mem_map of the memory, no allocation) for peers
 * that reach it through UCX: other nodes, and processes that may not map
 * it.  Where the process has no such memory (no memfd), UCX allocates, and
 * peers reach it through UCX alone.  Peers keep the rkeys they unpacked by
 * the allocation's serial number (osc_ucxx_rkey.c), so that the next window
 * on the same allocation unpacks nothing new.  Two ways of not paying an
 * allocation per window follow:
 *
 *   - Arenas (below): windows alive together take their state segments
 *     (1 KiB), their PSCW post slots and small MPI_Win_allocate
 *     memory from shared allocations, so the tenth window alive costs no
 *     allocation here and nothing new at the peers, which have the range
 *     mapped (or its rkey) from an earlier window.
 *   - Kept allocations: what a freed window allocated of its own (larger
 *     ones) is kept for the next window it fits (a loop of create-use-free,
 *     OSU's pattern).
 */

#include "ompi_config.h"

#include "opal/align.h"
#include "opal/util/show_help.h"
#include "opal/util/sys_limits.h"

#include "osc_ucxx.h"
#include "osc_ucxx_seg.h"

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

/* Registered (`allocate` false: the memory at *addr) or allocated by UCX.
 * `serial`: a new allocation's number (osc_ucxx_rkey.c: peers keep their
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

/* `len` bytes of our shared memory, registered (*off: where in our file),
 * else (no shared memory of our own) allocated by UCX (*off
 * OSC_UCXX_SEG_NONE).  `serial` as for mem_map's allocations. */
static int shared_map(void **addr, size_t len, ucp_mem_h *memh, uint32_t *serial, uint64_t *off)
{
    uint32_t none;
    int rc = ompi_osc_ucxx_seg_take(len, addr, off);

    if (OMPI_ERR_NOT_AVAILABLE == rc) {
        *off = OSC_UCXX_SEG_NONE;
        return ompi_osc_ucxx_mem_map(addr, len, true, memh, serial);
    }
    if (OMPI_SUCCESS != rc) {
        opal_show_help("help-osc-ucxx.txt", "shared memory failed", true, len);
        return rc;
    }
    rc = ompi_osc_ucxx_mem_map(addr, len, false, memh, &none);
    if (OMPI_SUCCESS != rc) {
        ompi_osc_ucxx_seg_give(*addr, *off, len);
        return rc;
    }
    *serial = keepable(len) ? next_serial() : 0;
    return OMPI_SUCCESS;
}

static void shared_unmap(void *addr, size_t len, ucp_mem_h memh, uint64_t off)
{
    ucp_mem_unmap(OSC_UCXX.context, memh);
    if (OSC_UCXX_SEG_NONE != off) ompi_osc_ucxx_seg_give(addr, off, len);
}

/* ------------------------------------------------------------------------- */
/* Kept allocations
 *
 * An allocation costs a range of shared memory to make (its pages
 * reserved and zeroed, a mapping, a registration) and to free (unmapped,
 * its pages punched out).  Its pages cost a fault each where they are
 * first touched, by the owner and again by every peer that maps them, so
 * an accumulate into a peer's new large window paid for every page before
 * any work (big_xfer accflush, a new window per loop, took about twice
 * osc/sm's time until allocations were kept, up to a quarter of
 * osc_ucxx_alloc_cache each).  So what a freed window allocated of its
 * own (an MPI_Win_allocate window's memory, or post slots too many for
 * an arena) is kept, up to osc_ucxx_alloc_cache bytes in all, for the
 * next window it fits (at most twice the bytes needed).  Old
 * contents stay: MPI does not initialize MPI_Win_allocate's memory, and
 * post slots are zeroed again.  Peers may keep it mapped (their rkeys,
 * kept by its serial number), which is what the next window on it wants. */

static bool kept_take(size_t *len, void **addr, ucp_mem_h *memh, uint32_t *serial,
                      uint64_t *off)
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
        *off = OSC_UCXX.kept[best].off;
        *addr = OSC_UCXX.kept[best].addr;
        OSC_UCXX.kept[best] = OSC_UCXX.kept[--OSC_UCXX.num_kept];
    }
    OSC_UCXX_UNLOCK(&OSC_UCXX.lock);
    if (best < 0) {
        return false;
    }
    OSC_UCXX_VERBOSE(10, "window memory: %zu bytes from a freed window", *len);
    return true;
}

static void kept_put(void *addr, ucp_mem_h memh, size_t len, uint32_t serial, uint64_t off)
{
    size_t total = len;
    OSC_UCXX_LOCK(&OSC_UCXX.lock);
    for (int i = 0; i < OSC_UCXX.num_kept; ++i) total += OSC_UCXX.kept[i].len;
    if (OSC_UCXX.num_kept < OSC_UCXX_KEPT_MAX && keepable(len) &&
        total <= OSC_UCXX.alloc_cache) {
        OSC_UCXX.kept[OSC_UCXX.num_kept].memh = memh;
        OSC_UCXX.kept[OSC_UCXX.num_kept].serial = serial;
        OSC_UCXX.kept[OSC_UCXX.num_kept].off = off;
        OSC_UCXX.kept[OSC_UCXX.num_kept].addr = addr;
        OSC_UCXX.kept[OSC_UCXX.num_kept++].len = len;
        memh = NULL;
    }
    OSC_UCXX_UNLOCK(&OSC_UCXX.lock);
    OSC_UCXX_VERBOSE(10, "window memory: %zu bytes %s", len, memh ? "released" : "kept");
    if (NULL != memh) shared_unmap(addr, len, memh, off);
}

/* ------------------------------------------------------------------------- */
/* Arenas
 *
 * An arena is one allocation carved into 256 units, a bit each; a
 * taker gets the first run of free units that holds it.  Three classes:
 *   - state segments: 64 KiB
 *     arenas of 256-byte units (a segment's words keep their cache lines:
 *     units are 64-byte aligned), so that the segments of windows alive
 *     together lie four to a page and a peer maps one page for four
 *     windows (osc_ucxx_ptab.c);
 *   - PSCW post slots (8 bytes per origin rank): 16 KiB arenas of 64-byte
 *     units, apart from the state segments so that these stay dense; only
 *     a peer that posts maps a page of them;
 *   - MPI_Win_allocate windows of up to 256 KiB:
 *     1 MiB arenas of page units, so window memory stays page-aligned.
 *     Such a window's state segment lies in its arena too, in a state
 *     page (four segments to a page) of the 16 KiB granule its memory
 *     starts in, or in the page just before its memory: a peer's first
 *     access maps the window's state and memory with one mapping
 *     (osc_ucxx_target.c), and the next windows of the granule (three of
 *     a page each) map nothing new.
 * An arena lives while a taker uses it, and the newest of a class stays
 * when empty: freeing it would cost the segment the next window pays
 * again, and peers that keep its rkey (ompi_osc_ucxx_rkey_give) would keep
 * it mapped anyway.  Larger takers get an allocation of their own, kept at
 * free as above. */

#define ARENA_UNITS 256

typedef struct arena_t {
    ucp_mem_h memh;
    char *base;
    uint64_t off;                          /* in our shared memory (osc_ucxx_seg.c) */
    uint32_t serial;
    int used;                              /* units taken */
    uint64_t taken[ARENA_UNITS / 64];      /* a bit a unit */
    uint8_t slots[ARENA_UNITS];            /* window arenas: a state page's segments
                                            * taken, a bit each (0: no state page) */
    struct arena_t *next;                  /* newest first */
} arena_t;

typedef struct {
    size_t unit;                           /* bytes (0: a page); an arena has ARENA_UNITS */
    const char *what;
    arena_t *list;                         /* under OSC_UCXX.lock */
} arena_class_t;

static arena_class_t state_arenas = {256, "state arena", NULL};
static arena_class_t post_arenas = {64, "post arena", NULL};
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

    if (NULL == a || OMPI_SUCCESS != shared_map(&base, ARENA_UNITS * class_unit(c), &a->memh,
                                                &unused, &a->off)) {
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
                      uint32_t *serial, size_t *len, uint64_t *off)
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
    *off = OSC_UCXX_SEG_NONE == a->off ? a->off : a->off + (size_t) first * unit;
    return OMPI_SUCCESS;
}

/* ------------------------------------------------------------------------- */
/* State segments in window arenas */

/* A window's state segment in its window arena: slots of this many bytes,
 * at most 7 to a state page (a bit each, the eighth says "state page"). */
#define STATE_SLOT 1024
#define SLOTS_PAGE 0x80

static int slots_per_page(void)
{
    int n = (int) (opal_getpagesize() / STATE_SLOT);
    return n < 7 ? n : 7;
}

static int granule_pages(void)
{
    size_t g = OSC_UCXX_SEG_MAP_GRANULE / opal_getpagesize();
    return g > 0 ? (int) g : 1;
}

/* A free slot of a state page among units [lo, hi) of `a`: its unit
 * (*slot its index), or -1. */
static int slot_find(const arena_t *a, int lo, int hi, int *slot)
{
    for (int u = lo; u < hi && u < ARENA_UNITS; ++u) {
        if (!(a->slots[u] & SLOTS_PAGE)) continue;
        for (int k = 0; k < slots_per_page(); ++k) {
            if (!(a->slots[u] & (1 << k))) {
                *slot = k;
                return u;
            }
        }
    }
    return -1;
}

/* `n` pages of `a` for a window and a slot for its state: a state page's
 * in the granules the window starts and ends in, else a new state page
 * just before the window.  False where `a` has no room for either.
 * (Under the lock.) */
static bool window_place(arena_t *a, int n, int *first, int *spage, int *slot)
{
    int g = granule_pages();

    *first = units_find(a, n);
    if (*first >= 0) {
        *spage = slot_find(a, *first / g * g, ((*first + n - 1) / g + 1) * g, slot);
        if (*spage >= 0) return true;
    }
    *spage = units_find(a, n + 1);
    if (*spage < 0) return false;
    *first = *spage + 1;
    *slot = 0;
    units_mark(a, *spage, 1, true);
    a->slots[*spage] = SLOTS_PAGE;
    return true;
}

/* Give back a state slot of `a`: its page too when its last. */
static void slot_give(arena_t *a, char *addr)
{
    size_t page = (size_t) opal_getpagesize();
    int u = (int) ((addr - a->base) / page);
    int k = (int) ((size_t) (addr - a->base) % page / STATE_SLOT);

    a->slots[u] &= (uint8_t) ~(1 << k);
    if (SLOTS_PAGE == a->slots[u]) {
        a->slots[u] = 0;
        units_mark(a, u, 1, false);
    }
}

/* Give back to an arena of class `c` what arena_take gave (or a state
 * slot, shorter than a unit); false: `memh` is none of the class's
 * arenas. */
static bool arena_give(arena_class_t *c, void *addr, ucp_mem_h memh, size_t len)
{
    size_t unit = class_unit(c);
    arena_t **at, *a, *gone = NULL;

    OSC_UCXX_LOCK(&OSC_UCXX.lock);
    for (at = &c->list; NULL != (a = *at) && a->memh != memh; at = &a->next) {
    }
    if (NULL != a) {
        if (len < unit) {
            slot_give(a, addr);
        } else {
            units_mark(a, (int) (((char *) addr - a->base) / unit), (int) (len / unit), false);
        }
        if (0 == a->used && a != c->list) {
            *at = a->next;
            gone = a;
        }
    }
    OSC_UCXX_UNLOCK(&OSC_UCXX.lock);
    if (NULL != gone) {
        shared_unmap(gone->base, ARENA_UNITS * unit, gone->memh, gone->off);
        free(gone);
    }
    return NULL != a;
}

/* `*len` bytes (or more: `*len` says) of its own, kept or new. */
static int own_take(size_t *len, void **addr, ucp_mem_h *memh, uint32_t *serial, uint64_t *off)
{
    if (kept_take(len, addr, memh, serial, off)) return OMPI_SUCCESS;
    *len = OPAL_ALIGN(*len, opal_getpagesize(), size_t);
    return shared_map(addr, *len, memh, serial, off);
}

/* `size` bytes, zeroed, from an arena of class `c`, or of their own. */
static int zeroed_take(arena_class_t *c, size_t size, void **addr, ucp_mem_h *memh,
                       uint32_t *serial, size_t *len, uint64_t *off)
{
    int rc;

    if (size > ARENA_UNITS * class_unit(c) / 4) {
        *len = size;
        rc = own_take(len, addr, memh, serial, off);
    } else {
        rc = arena_take(c, size, addr, memh, serial, len, off);
    }
    if (OMPI_SUCCESS == rc) memset(*addr, 0, size);
    return rc;
}

int ompi_osc_ucxx_state_take(size_t size, void **state, ucp_mem_h *memh, uint32_t *serial,
                             size_t *len, uint64_t *off)
{
    return zeroed_take(&state_arenas, size, state, memh, serial, len, off);
}

int ompi_osc_ucxx_posts_take(size_t size, void **posts, ucp_mem_h *memh, uint32_t *serial,
                             size_t *len, uint64_t *off)
{
    return zeroed_take(&post_arenas, size, posts, memh, serial, len, off);
}

/* The early start (component_init, in MPI_Init): the first state arena
 * and post arena, allocations that the first window would make otherwise.
 * Empty, each stays as the newest of its class. */
void ompi_osc_ucxx_state_warm(void)
{
    arena_class_t *classes[] = {&state_arenas, &post_arenas};
    void *addr;
    ucp_mem_h memh;
    uint32_t serial;
    size_t len;
    uint64_t off;

    for (size_t i = 0; i < sizeof(classes) / sizeof(classes[0]); ++i) {
        if (OMPI_SUCCESS == zeroed_take(classes[i], 1, &addr, &memh, &serial, &len, &off)) {
            ompi_osc_ucxx_mem_give(addr, memh, len, serial, off);
        }
    }
}

/* A window arena's pages for a window of `size` bytes and a slot for its
 * state (`st`), as arena_take. */
static int window_arena_take(size_t size, ompi_osc_ucxx_wstate_t *st, void **addr,
                             ucp_mem_h *memh, uint32_t *serial, size_t *len, uint64_t *off)
{
    size_t page = (size_t) opal_getpagesize();
    int n = (int) ((size + page - 1) / page), first = -1, spage = -1, slot = 0;
    arena_t *a;

    OSC_UCXX_LOCK(&OSC_UCXX.lock);
    for (a = window_arenas.list; NULL != a && !window_place(a, n, &first, &spage, &slot);
         a = a->next) {
    }
    if (NULL == a && NULL != (a = arena_new(&window_arenas))) {
        (void) window_place(a, n, &first, &spage, &slot);
    }
    if (NULL != a) {
        units_mark(a, first, n, true);
        a->slots[spage] |= (uint8_t) (1 << slot);
    }
    OSC_UCXX_UNLOCK(&OSC_UCXX.lock);
    if (NULL == a) return MPI_ERR_NO_MEM;  /* (mem_map said why) */
    *addr = a->base + (size_t) first * page;
    *memh = a->memh;
    *serial = a->serial;
    *len = (size_t) n * page;
    *off = OSC_UCXX_SEG_NONE == a->off ? a->off : a->off + (size_t) first * page;
    st->addr = a->base + (size_t) spage * page + (size_t) slot * STATE_SLOT;
    st->len = STATE_SLOT;
    st->off = OSC_UCXX_SEG_NONE == a->off
                  ? a->off
                  : a->off + (size_t) spage * page + (size_t) slot * STATE_SLOT;
    memset(st->addr, 0, STATE_SLOT);
    return OMPI_SUCCESS;
}

int ompi_osc_ucxx_window_take(size_t size, ompi_osc_ucxx_wstate_t *st, void **addr,
                              ucp_mem_h *memh, uint32_t *serial, size_t *len, uint64_t *off)
{
    st->addr = NULL;
    if (size > ARENA_UNITS * class_unit(&window_arenas) / 4) {
        *len = size;
        return own_take(len, addr, memh, serial, off);
    }
    if (st->size > 0 && st->size <= STATE_SLOT) {
        return window_arena_take(size, st, addr, memh, serial, len, off);
    }
    return arena_take(&window_arenas, size, addr, memh, serial, len, off);
}

void ompi_osc_ucxx_mem_give(void *addr, ucp_mem_h memh, size_t len, uint32_t serial,
                            uint64_t off)
{
    if (!arena_give(&state_arenas, addr, memh, len) &&
        !arena_give(&post_arenas, addr, memh, len) &&
        !arena_give(&window_arenas, addr, memh, len)) {
        kept_put(addr, memh, len, serial, off);  /* one of its own */
    }
}

/* Finalize: kept allocations and arenas go back to UCX. */
void ompi_osc_ucxx_kept_release(void)
{
    arena_class_t *classes[] = {&state_arenas, &post_arenas, &window_arenas};

    while (OSC_UCXX.num_kept > 0) {
        --OSC_UCXX.num_kept;
        shared_unmap(OSC_UCXX.kept[OSC_UCXX.num_kept].addr, OSC_UCXX.kept[OSC_UCXX.num_kept].len,
                     OSC_UCXX.kept[OSC_UCXX.num_kept].memh, OSC_UCXX.kept[OSC_UCXX.num_kept].off);
    }
    for (size_t i = 0; i < sizeof(classes) / sizeof(classes[0]); ++i) {
        while (NULL != classes[i]->list) {
            arena_t *a = classes[i]->list;
            classes[i]->list = a->next;
            shared_unmap(a->base, ARENA_UNITS * class_unit(classes[i]), a->memh, a->off);
            free(a);
        }
    }
}
