/*
 * Copyright (c) 2026 The osc/ucxx authors. All rights reserved.
 * $COPYRIGHT$
 *
 * Dynamic windows: MPI_Win_attach / MPI_Win_detach and finding a target's
 * region from an origin.
 *
 * The target keeps its regions in a sorted array (no cap) and a generation
 * counter in its state segment that every detach increments.  An origin
 * caches, per (worker, window, target), the regions it has used with their
 * unpacked rkeys, and the generation they belong to.  Where the target's
 * state segment is mapped each operation reads the generation (a load);
 * elsewhere (a UCX get, a round trip) it is read once after each
 * synchronization call that may follow a detach in MPI's order (an epoch
 * opened: fence, start, lock, lock_all; a flush or unlock:
 * module->dyn_syncs), and the operations of that stretch trust it.  That
 * read is not waited for by the first operations: small puts, gets and
 * accumulates go meanwhile as messages the target checks and applies
 * itself (ompi_osc_ucxx_dyn_unverified), and the read starts behind them
 * (dyn_read_ahead); a flush completes it with them.
 * When it changed the cache is dropped, so memory that was detached before
 * the epoch (or the flush) is never reached through a stale registration:
 * the lookup that follows fails with MPI_ERR_RMA_RANGE.  Where locks go by
 * message (osc_ucxx_lazy.c) a lock epoch's operations travel in the lock
 * request and the target resolves their addresses itself (its answer
 * brings their range error); the grant of a longer epoch brings the
 * target's generation (ompi_osc_ucxx_dyn_gen_seen), so that its operations
 * read nothing either.  (A detach while
 * the origin's epoch goes on, with no flush between it and the access, is
 * an access to detached memory MPI makes erroneous.)  A region the cache lacks is
 * asked for with one active message (never the whole table).  A cache has
 * one user, its worker's thread, except where threads share one worker
 * (osc_ucxx_per_thread_workers=0 under MPI_THREAD_MULTIPLE): there each
 * operation on a dynamic window runs under the window's dyn_serial_lock
 * (ompi_osc_ucxx_dyn_serial), since one thread's lookup may grow, refill or
 * drop the cache another's path came from (seen: puts through a torn hot
 * range to wild addresses, rkeys destroyed twice).  The cache lives, like
 * its link, until the window goes.
 * Memory-handle windows (MPIX_Win_from_memhandle) are views on a dynamic
 * window: their accesses, after their own range check, are dynamic ones.
 *
 * Regions attached back to back (or overlapping) are one piece of target
 * memory to MPI: an access may start in one and end in another.  Each keeps
 * its own registration (merging them would mean re-registering memory that
 * origins may be using), so such an access is split: the lookup answers
 * "attached, across regions" with the region holding the first byte, put
 * and get then go region by region (ompi_osc_ucxx_dyn_piece), and
 * accumulates go by message to the target, which applies them to its own
 * memory after the same check.
 *
 * Attached memory stays where it is, private to the target.  An origin on
 * the node reaches it by cross-memory attach where the kernel allows
 * (osc_ucxx_cma.c), at the addresses themselves; the generation check above
 * runs first, so an access never reaches memory detached before its epoch
 * (memory unmapped meanwhile gives EFAULT: MPI_ERR_RMA_RANGE).  There the
 * origin needs neither cache nor message: it reads the target's regions
 * from the table the target keeps in its shared memory (osc_ucxx_dyntab.c),
 * and none of the above runs but where that table cannot tell.
 */

#include "ompi_config.h"

#include "osc_ucxx_dynamic.h"
#include "osc_ucxx_state.h"
#include "osc_ucxx_am.h"

/* ------------------------------------------------------------------------- */
/* Target side */

/* In an array sorted by a uint64_t base that each element starts with
 * (regions, cache entries): the index of the last base <= key, or -1. */
static int last_base_at_or_below(const void *array, int count, size_t stride, uint64_t key)
{
    int left = 0, right = count - 1, last = -1;
    while (left <= right) {
        int mid = (left + right) / 2;
        uint64_t base;
        memcpy(&base, (const char *) array + (size_t) mid * stride, sizeof(base));
        if (base <= key) {
            last = mid;
            left = mid + 1;
        } else {
            right = mid - 1;
        }
    }
    return last;
}

_Static_assert(offsetof(ompi_osc_ucxx_region_t, base) == 0 &&
                   offsetof(ompi_osc_ucxx_region_t, len) == sizeof(uint64_t),
               "a region starts with its base and length (region_at)");

/* Region i of `array` (`stride` bytes apart, each starting with its
 * uint64_t base and length): its base and its end. */
static void region_at(const void *array, size_t stride, int i, uint64_t *base, uint64_t *end)
{
    uint64_t bl[2];
    memcpy(bl, (const char *) array + (size_t) i * stride, sizeof(bl));
    *base = bl[0];
    *end = bl[0] + bl[1];
}

/* Index of a region of `array` (count regions, sorted by base, none longer
 * than max_len) containing [lo, hi), or -1.  (A range that wraps past the
 * top of the address space, hi < lo, is in none: its end would pass every
 * test below.) */
static int regions_find(const void *array, int count, size_t stride, uint64_t max_len,
                        uint64_t lo, uint64_t hi)
{
    int last = hi < lo ? -1 : last_base_at_or_below(array, count, stride, lo);

    /* that region, or an earlier one where regions overlap */
    for (int i = last; i >= 0; --i) {
        uint64_t base, end;
        region_at(array, stride, i, &base, &end);
        if (hi <= end) return i;
        if (base + max_len < lo) break;
    }
    return -1;
}

/* Do regions attached back to back or overlapping cover [lo, hi) (a range
 * that wraps: no)?  Regions are sorted by base, so the covered run from lo
 * ends at the first region that starts past it; none starting more than
 * the longest region's length before lo can reach lo. */
static bool regions_cover(const void *array, int count, size_t stride, uint64_t max_len,
                          uint64_t lo, uint64_t hi)
{
    uint64_t reach = lo, base, end;
    int i = last_base_at_or_below(array, count, stride, lo > max_len ? lo - max_len : 0);

    if (hi < lo) return false;
    for (i = i < 0 ? 0 : i; i < count && reach < hi; ++i) {
        region_at(array, stride, i, &base, &end);
        if (base > reach) break;
        if (end > reach) reach = end;
    }
    return reach >= hi;
}

int ompi_osc_ucxx_regions_lookup(const void *array, int count, size_t stride, uint64_t max_len,
                                 uint64_t lo, uint64_t hi)
{
    int i = regions_find(array, count, stride, max_len, lo, hi);
    if (i >= 0) return i;
    return regions_cover(array, count, stride, max_len, lo, hi) ? -2 : -1;
}

/* The same on our own regions.  Caller holds dyn_lock. */
static int region_find(ompi_osc_ucxx_module_t *module, uint64_t lo, uint64_t hi)
{
    return regions_find(module->regions, module->nregions, sizeof(module->regions[0]),
                        module->dyn_max_len, lo, hi);
}

static bool covered(ompi_osc_ucxx_module_t *module, uint64_t lo, uint64_t hi)
{
    return regions_cover(module->regions, module->nregions, sizeof(module->regions[0]),
                         module->dyn_max_len, lo, hi);
}

bool ompi_osc_ucxx_dyn_contains(ompi_osc_ucxx_module_t *module, uint64_t lo, uint64_t hi)
{
    bool found;
    OSC_UCXX_LOCK(&module->dyn_lock);
    found = covered(module, lo, hi);
    OSC_UCXX_UNLOCK(&module->dyn_lock);
    return found;
}

static void region_release(ompi_osc_ucxx_region_t *region)
{
    ucp_rkey_buffer_release(region->rkey);
    ucp_mem_unmap(OSC_UCXX.context, region->memh);
}

/* An attachment of no bytes: no region (nothing to reach, nothing to
 * register), only its base, for the MPI_Win_detach that names it. */
static int empty_attach(ompi_osc_ucxx_module_t *module, uint64_t base)
{
    int rc = OMPI_SUCCESS;

    OSC_UCXX_LOCK(&module->dyn_lock);
    if (module->nempties == module->empties_cap) {
        int cap = module->empties_cap ? 2 * module->empties_cap : 4;
        void *tmp = realloc(module->empties, cap * sizeof(*module->empties));
        if (NULL != tmp) {
            module->empties = tmp;
            module->empties_cap = cap;
        }
    }
    if (module->nempties < module->empties_cap) {
        module->empties[module->nempties++] = base;
    } else {
        rc = OMPI_ERR_OUT_OF_RESOURCE;
    }
    OSC_UCXX_UNLOCK(&module->dyn_lock);
    return rc;
}

/* Was there an attachment of no bytes at `base` (now gone)?  Caller holds
 * dyn_lock. */
static bool empty_detach(ompi_osc_ucxx_module_t *module, uint64_t base)
{
    for (int i = module->nempties - 1; i >= 0; --i) {
        if (module->empties[i] == base) {
            module->empties[i] = module->empties[--module->nempties];
            return true;
        }
    }
    return false;
}

int ompi_osc_ucxx_attach(struct ompi_win_t *win, void *base, size_t len)
{
    ompi_osc_ucxx_module_t *module = OSC_UCXX_MODULE(win);
    ompi_osc_ucxx_region_t region = {.base = (uint64_t) (uintptr_t) base, .len = len};
    ucp_mem_map_params_t params;
    int pos;

    if (MPI_WIN_FLAVOR_DYNAMIC != module->flavor) {
        return OMPI_ERR_RMA_FLAVOR;
    }
    if (0 == len) {
        return empty_attach(module, region.base);
    }
    memset(&params, 0, sizeof(params));
    params.field_mask = UCP_MEM_MAP_PARAM_FIELD_ADDRESS | UCP_MEM_MAP_PARAM_FIELD_LENGTH;
    params.address = base;
    params.length = len;
    if (UCS_OK != ucp_mem_map(OSC_UCXX.context, &params, &region.memh)) {
        return OMPI_ERR_RMA_ATTACH;
    }
    if (UCS_OK != ucp_rkey_pack(OSC_UCXX.context, region.memh, &region.rkey,
                                &region.rkey_len)) {
        ucp_mem_unmap(OSC_UCXX.context, region.memh);
        return OMPI_ERR_RMA_ATTACH;
    }

    OSC_UCXX_LOCK(&module->dyn_lock);
    if (module->nregions == module->regions_cap) {
        int cap = module->regions_cap ? 2 * module->regions_cap : 16;
        void *tmp = realloc(module->regions, cap * sizeof(*module->regions));
        if (NULL == tmp) {
            OSC_UCXX_UNLOCK(&module->dyn_lock);
            region_release(&region);
            return OMPI_ERR_OUT_OF_RESOURCE;
        }
        module->regions = tmp;
        module->regions_cap = cap;
    }
    for (pos = module->nregions; pos > 0 && module->regions[pos - 1].base > region.base; --pos) {
    }
    memmove(&module->regions[pos + 1], &module->regions[pos],
            (module->nregions - pos) * sizeof(*module->regions));
    module->regions[pos] = region;
    module->nregions++;
    if (len > module->dyn_max_len) module->dyn_max_len = len;
    ompi_osc_ucxx_dyntab_publish(module);
    OSC_UCXX_UNLOCK(&module->dyn_lock);
    OSC_UCXX_VERBOSE(50, "window %u: attached %zu bytes at %p (%d regions)", module->cid, len,
                     base, module->nregions);
    return OMPI_SUCCESS;
}

int ompi_osc_ucxx_detach(struct ompi_win_t *win, const void *base)
{
    ompi_osc_ucxx_module_t *module = OSC_UCXX_MODULE(win);
    uint64_t addr = (uint64_t) (uintptr_t) base;
    ompi_osc_ucxx_region_t region;
    int i, rc;

    if (MPI_WIN_FLAVOR_DYNAMIC != module->flavor) {
        return OMPI_ERR_RMA_FLAVOR;
    }
    OSC_UCXX_LOCK(&module->dyn_lock);
    /* the most recent attachment of bytes at that address, else one of none */
    for (i = module->nregions - 1; i >= 0 && module->regions[i].base != addr; --i) {
    }
    if (i < 0) {
        bool empty = empty_detach(module, addr);
        OSC_UCXX_UNLOCK(&module->dyn_lock);
        return empty ? OMPI_SUCCESS : MPI_ERR_BASE;
    }
    region = module->regions[i];
    memmove(&module->regions[i], &module->regions[i + 1],
            (module->nregions - i - 1) * sizeof(*module->regions));
    module->nregions--;
    ompi_osc_ucxx_dyntab_publish(module);
    OSC_UCXX_UNLOCK(&module->dyn_lock);
    /* Origins see the new generation before the memory can be reused.  (Not
     * under dyn_lock: the bump may be a UCX atomic, whose wait runs the
     * region lookup handler, which takes dyn_lock.  A lookup between the
     * removal and the bump cannot find the region any more.) */
    rc = ompi_osc_ucxx_state_gen_bump(module);
    region_release(&region);
    return rc;
}

void ompi_osc_ucxx_dyn_release(ompi_osc_ucxx_module_t *module)
{
    for (int i = 0; i < module->nregions; ++i) {
        region_release(&module->regions[i]);
    }
    free(module->regions);
    module->regions = NULL;
    module->nregions = 0;
    free(module->empties);
    module->empties = NULL;
    module->nempties = module->empties_cap = 0;
}

/* ------------------------------------------------------------------------- */
/* Region lookup by active message */

typedef struct {
    ompi_osc_ucxx_am_hdr_t base;
    uint64_t token;
    uint64_t lo, hi;
} region_req_t;

typedef struct {
    ompi_osc_ucxx_am_hdr_t base;
    uint64_t token;
    uint64_t gen;
    uint64_t region_base, region_len;
    uint32_t found;
    uint32_t spans;          /* attached, but across regions: this one holds lo */
    uint32_t rkey_len;
} region_reply_t;

typedef struct {
    volatile bool done;
    region_reply_t reply;
    char rkey[OSC_UCXX_MAX_RKEY];
} region_wait_t;

static int region_req_handler(ompi_osc_ucxx_module_t *module, int from, void *buf, size_t len,
                              bool deferred)
{
    region_req_t *req = (region_req_t *) buf;
    char msg[sizeof(region_reply_t) + OSC_UCXX_MAX_RKEY];
    region_reply_t *reply = (region_reply_t *) msg;
    int i;

    memset(reply, 0, sizeof(*reply));
    reply->base.cid = module->cid;
    reply->base.from = module->rank;
    reply->token = req->token;
    OSC_UCXX_LOCK(&module->dyn_lock);
    reply->gen = ompi_osc_ucxx_state_gen_local(module);
    i = region_find(module, req->lo, req->hi);
    if (i < 0 && covered(module, req->lo, req->hi)) {
        i = region_find(module, req->lo, req->lo + 1);
        reply->spans = 1;
    }
    if (i >= 0 && module->regions[i].rkey_len <= OSC_UCXX_MAX_RKEY) {
        reply->found = 1;
        reply->region_base = module->regions[i].base;
        reply->region_len = module->regions[i].len;
        reply->rkey_len = module->regions[i].rkey_len;
        memcpy(reply + 1, module->regions[i].rkey, reply->rkey_len);
    }
    OSC_UCXX_UNLOCK(&module->dyn_lock);
    return ompi_osc_ucxx_am_reply(module, from, OSC_UCXX_AM_REGION_REPLY, reply, sizeof(*reply),
                                  sizeof(*reply) + reply->rkey_len, deferred);
}

static int region_reply_handler(ompi_osc_ucxx_module_t *module, int from, void *buf,
                                size_t len, bool deferred)
{
    region_reply_t *reply = (region_reply_t *) buf;
    region_wait_t *wait = (region_wait_t *) (uintptr_t) reply->token;

    wait->reply = *reply;
    memcpy(wait->rkey, reply + 1, reply->rkey_len);
    opal_atomic_wmb();
    wait->done = true;
    return OMPI_SUCCESS;
}

/* ------------------------------------------------------------------------- */
/* Origin side */

static void cache_clear(ompi_osc_ucxx_dyncache_t *cache, uint64_t gen)
{
    for (int i = 0; i < cache->count; ++i) {
        ucp_rkey_destroy(cache->entries[i].rkey);
    }
    cache->count = 0;
    cache->max_len = 0;
    cache->gen = gen;
    cache->hot_lo = UINT64_MAX;
    cache->hot_hi = 0;
}

/* What a read of the generation brought, for the synchronizations it
 * followed: the cache holds for them (dropped if the generation moved). */
static void gen_seen(ompi_osc_ucxx_dyncache_t *cache, uint64_t gen, uint64_t syncs)
{
    if (gen != cache->gen) {
        cache_clear(cache, gen);  /* something was detached: trust nothing cached */
    }
    cache->syncs = syncs;
}

/* The read in flight, waited for and used if it is still the latest news;
 * `wait` false: only if it is complete. */
static void read_finish(ompi_osc_ucxx_module_t *module, ompi_osc_ucxx_dyncache_t *cache,
                        bool wait)
{
    void *req = cache->read_req;

    if (NULL == req) return;
    if (!wait && UCS_INPROGRESS == ucp_request_check_status(req)) return;
    cache->read_req = NULL;
    if (OMPI_SUCCESS == ompi_osc_ucxx_wait_request(cache->read_worker, req) &&
        cache->read_syncs == __atomic_load_n(&module->dyn_syncs, __ATOMIC_ACQUIRE)) {
        opal_atomic_rmb();
        gen_seen(cache, cache->read_gen, cache->read_syncs);
    }
}

/* The cache's end (or its window's): a read in flight is waited for. */
static void read_settle(ompi_osc_ucxx_dyncache_t *cache)
{
    if (NULL != cache->read_req) {
        (void) ompi_osc_ucxx_wait_request(cache->read_worker, cache->read_req);
        cache->read_req = NULL;
    }
}

/* Start reading the generation, for the synchronizations counted so far
 * (`syncs`), without waiting: counted on the link, so that a flush of it
 * completes the read too. */
static void read_start(ompi_osc_ucxx_module_t *module, ompi_osc_ucxx_worker_t *worker,
                       ompi_osc_ucxx_link_t *link, int target, ompi_osc_ucxx_dyncache_t *cache,
                       uint64_t syncs)
{
    ucp_request_param_t param = {.op_attr_mask = 0};
    ucp_rkey_h rkey = ompi_osc_ucxx_link_state_rkey(module, link, target);
    void *req;

    read_finish(module, cache, true);
    if (NULL == rkey) return;
    req = ucp_get_nbx(link->ep, &cache->read_gen, sizeof(cache->read_gen),
                      ompi_osc_ucxx_peer_state(module, target) + OSC_UCXX_STATE(dyn_gen), rkey,
                      &param);
    if (UCS_PTR_IS_ERR(req)) return;
    ompi_osc_ucxx_link_dirty(module, link, target);
    if (NULL == req) {
        opal_atomic_rmb();
        gen_seen(cache, cache->read_gen, syncs);
        return;
    }
    cache->read_req = req;
    cache->read_syncs = syncs;
    cache->read_worker = worker;
}

void ompi_osc_ucxx_dyn_cache_free(ompi_osc_ucxx_dyncache_t *cache)
{
    if (NULL != cache) {
        read_settle(cache);   /* (its link was flushed: it is complete) */
        cache_clear(cache, 0);
        free(cache->entries);
        free(cache);
    }
}

typedef struct ompi_osc_ucxx_dynentry_t dynentry_t;

static dynentry_t *cache_find(ompi_osc_ucxx_dyncache_t *cache, uint64_t lo, uint64_t hi)
{
    int last = last_base_at_or_below(cache->entries, cache->count, sizeof(cache->entries[0]),
                                     lo);
    for (int i = last; i >= 0 && i > last - 8; --i) {
        if (hi <= cache->entries[i].base + cache->entries[i].len) return &cache->entries[i];
    }
    return NULL;
}

static dynentry_t *cache_add(ompi_osc_ucxx_dyncache_t *cache, const dynentry_t *entry)
{
    int pos;
    if (cache->count == cache->cap) {
        int cap = cache->cap ? 2 * cache->cap : 8;
        void *tmp = realloc(cache->entries, cap * sizeof(*cache->entries));
        if (NULL == tmp) return NULL;
        cache->entries = tmp;
        cache->cap = cap;
    }
    for (pos = cache->count; pos > 0 && cache->entries[pos - 1].base > entry->base; --pos) {
    }
    memmove(&cache->entries[pos + 1], &cache->entries[pos],
            (cache->count - pos) * sizeof(*cache->entries));
    cache->entries[pos] = *entry;
    cache->count++;
    if (entry->len > cache->max_len) cache->max_len = entry->len;
    return &cache->entries[pos];
}

/* Do cached regions attached back to back cover [lo, hi)?  (As covered,
 * on the cache.) */
static bool cache_covers(ompi_osc_ucxx_dyncache_t *cache, uint64_t lo, uint64_t hi)
{
    uint64_t reach = lo;
    int i = last_base_at_or_below(cache->entries, cache->count, sizeof(cache->entries[0]),
                                  lo > cache->max_len ? lo - cache->max_len : 0);

    for (i = i < 0 ? 0 : i; i < cache->count && cache->entries[i].base <= reach &&
                            reach < hi; ++i) {
        uint64_t end = cache->entries[i].base + cache->entries[i].len;
        if (end > reach) reach = end;
    }
    return reach >= hi;
}

static int region_lookup(ompi_osc_ucxx_module_t *module, ompi_osc_ucxx_worker_t *worker,
                         int target, uint64_t lo, uint64_t hi, region_wait_t *wait)
{
    region_req_t *req = malloc(sizeof(*req));
    int rc;

    if (NULL == req) return OMPI_ERR_OUT_OF_RESOURCE;
    req->base.cid = module->cid;
    req->base.from = module->rank;
    req->token = (uint64_t) (uintptr_t) wait;
    req->lo = lo;
    req->hi = hi;
    wait->done = false;
    ompi_osc_ucxx_need_service(module, target, 1);
    rc = ompi_osc_ucxx_am_send(module, worker, target, OSC_UCXX_AM_REGION_REQ, req,
                               sizeof(*req), sizeof(*req));
    while (OMPI_SUCCESS == rc && !wait->done) {
        (void) ompi_osc_ucxx_worker_progress_shared(worker);
        opal_progress();
    }
    ompi_osc_ucxx_need_service(module, target, -1);
    opal_atomic_rmb();
    return rc;
}

/* A cache entry for the region a lookup returned: its rkey. */
static int region_entry(ompi_osc_ucxx_link_t *link, const region_wait_t *wait, dynentry_t *entry)
{
    memset(entry, 0, sizeof(*entry));
    entry->base = wait->reply.region_base;
    entry->len = wait->reply.region_len;
    if (UCS_OK != ucp_ep_rkey_unpack(link->ep, wait->rkey, &entry->rkey)) {
        return OMPI_ERROR;
    }
    return OMPI_SUCCESS;
}

/* The cache entry of a region holding [lo, hi), asking the target when the
 * cache has none.  *spans: [lo, hi) is attached, but across regions, and
 * the entry holds lo. */
static int entry_lookup(ompi_osc_ucxx_module_t *module, ompi_osc_ucxx_worker_t *worker,
                        int target, ompi_osc_ucxx_link_t *link, uint64_t lo, uint64_t hi,
                        dynentry_t **out, bool *spans)
{
    ompi_osc_ucxx_dyncache_t *cache = link->dyn;
    region_wait_t wait;
    dynentry_t fresh;
    int rc;

    *spans = false;
    *out = cache_find(cache, lo, hi);
    if (NULL != *out) return OMPI_SUCCESS;
    if (cache_covers(cache, lo, hi) && NULL != (*out = cache_find(cache, lo, lo + 1))) {
        *spans = true;
        return OMPI_SUCCESS;
    }
    rc = region_lookup(module, worker, target, lo, hi, &wait);
    if (OMPI_SUCCESS != rc) return rc;
    if (!wait.reply.found) {
        OSC_UCXX_VERBOSE(20, "window %u: [%#" PRIx64 ", %#" PRIx64 ") not attached at %d",
                         module->cid, lo, hi, target);
        return OMPI_ERR_RMA_RANGE;
    }
    if (wait.reply.gen != cache->gen) cache_clear(cache, wait.reply.gen);
    rc = region_entry(link, &wait, &fresh);
    if (OMPI_SUCCESS != rc) return rc;
    *out = cache_add(cache, &fresh);
    if (NULL == *out) {
        ucp_rkey_destroy(fresh.rkey);
        return OMPI_ERR_OUT_OF_RESOURCE;
    }
    *spans = 0 != wait.reply.spans;
    return OMPI_SUCCESS;
}

/* The path to [lo, hi) inside one cached region: cross-memory attach where
 * the target allows it, else its rkey; the region is remembered as the hot
 * range (where the generation can be read with a load). */
static void entry_path(ompi_osc_ucxx_module_t *module, int target,
                       ompi_osc_ucxx_dyncache_t *cache, const dynentry_t *entry,
                       ompi_osc_ucxx_path_t *path)
{
    path->rkey = entry->rkey;
    path->mapped = path->partial = path->split = false;
    path->cma = module->peers[target].cma;
    if (NULL != cache->gen_word) {
        cache->hot_lo = entry->base;
        cache->hot_hi = entry->base + entry->len;
        cache->hot_rkey = entry->rkey;
    }
}

/* The link's cache, made empty on first use. */
static ompi_osc_ucxx_dyncache_t *cache_of(ompi_osc_ucxx_module_t *module,
                                          ompi_osc_ucxx_link_t *link, int target)
{
    ompi_osc_ucxx_dyncache_t *cache = link->dyn;

    if (NULL == cache && NULL != (cache = calloc(1, sizeof(*cache)))) {
        cache_clear(cache, 0);
        cache->gen_word = ompi_osc_ucxx_state_gen_word(module, target);
        cache->syncs = UINT64_MAX;
        link->dyn = cache;
    }
    return cache;
}

/* A generation `target` sent in an answer (its lock grant), read there
 * after a request that left here once the window had counted `syncs`
 * synchronizations: as good as gen_check's own read, if none came since. */
void ompi_osc_ucxx_dyn_gen_seen(ompi_osc_ucxx_module_t *module, ompi_osc_ucxx_worker_t *worker,
                                int target, uint64_t gen, uint64_t syncs)
{
    ompi_osc_ucxx_link_t *link;
    ompi_osc_ucxx_dyncache_t *cache;

    if (MPI_WIN_FLAVOR_DYNAMIC != module->flavor || NULL == worker ||
        syncs != __atomic_load_n(&module->dyn_syncs, __ATOMIC_ACQUIRE) ||
        NULL == (link = ompi_osc_ucxx_link(module, worker, target)) ||
        NULL == (cache = cache_of(module, link, target)) || NULL != cache->gen_word) {
        return;
    }
    gen_seen(cache, gen, syncs);
}

/* Drop the cache if `target` detached something since it was filled: on
 * every access where its generation is a load; else at the first access
 * after each synchronization that may follow a detach (the window's count,
 * read before the generation, so that a synchronization meanwhile makes
 * the next access read it again). */
static int gen_check(ompi_osc_ucxx_module_t *module, int target,
                     ompi_osc_ucxx_dyncache_t *cache)
{
    uint64_t syncs = __atomic_load_n(&module->dyn_syncs, __ATOMIC_ACQUIRE), gen;
    int rc;

    if (NULL == cache->gen_word && syncs == cache->syncs) {
        return OMPI_SUCCESS;
    }
    if (NULL != cache->read_req) {
        read_finish(module, cache, true);   /* (a read started already) */
        if (syncs == cache->syncs) return OMPI_SUCCESS;
    }
    rc = ompi_osc_ucxx_state_gen_read(module, target, &gen);
    if (OMPI_SUCCESS != rc) return rc;
    gen_seen(cache, gen, syncs);
    return OMPI_SUCCESS;
}

/* The link's cache where the generation is read by UCX (not mapped here). */
static ompi_osc_ucxx_dyncache_t *remote_cache(ompi_osc_ucxx_module_t *module,
                                              ompi_osc_ucxx_worker_t *worker, int target,
                                              ompi_osc_ucxx_link_t **link)
{
    ompi_osc_ucxx_dyncache_t *cache;

    if (target == module->rank || NULL == (*link = ompi_osc_ucxx_link(module, worker, target)) ||
        NULL == (cache = cache_of(module, *link, target)) || NULL != cache->gen_word) {
        return NULL;
    }
    return cache;
}

bool ompi_osc_ucxx_dyn_unverified(ompi_osc_ucxx_module_t *module, ompi_osc_ucxx_worker_t *worker,
                                  int target, size_t bytes)
{
    ompi_osc_ucxx_link_t *link;
    ompi_osc_ucxx_dyncache_t *cache;
    uint64_t syncs;

    /* (threads: an error the target finds reaches the window's one error
     * slot, which whichever thread synchronizes next would report; there
     * the call reports it) */
    if (bytes > OSC_UCXX_DYN_AT_TARGET || OSC_UCXX.enable_mpi_threads ||
        ompi_osc_ucxx_dyntab_serves(module, target) ||
        NULL == (cache = remote_cache(module, worker, target, &link))) {
        return false;
    }
    syncs = __atomic_load_n(&module->dyn_syncs, __ATOMIC_ACQUIRE);
    if (syncs == cache->syncs) return false;
    read_finish(module, cache, false);
    return syncs != cache->syncs;
}

bool ompi_osc_ucxx_dyn_by_message(ompi_osc_ucxx_target_t *t, size_t bytes)
{
    return MPI_WIN_FLAVOR_DYNAMIC == t->module->flavor && !t->view->memhandle &&
           NULL != (t->worker = ompi_osc_ucxx_view_worker(t->view)) &&
           ompi_osc_ucxx_dyn_unverified(t->module, t->worker, t->rank, bytes);
}

void ompi_osc_ucxx_dyn_read_ahead(ompi_osc_ucxx_module_t *module, ompi_osc_ucxx_worker_t *worker,
                                  int target)
{
    ompi_osc_ucxx_link_t *link;
    ompi_osc_ucxx_dyncache_t *cache;
    uint64_t syncs = __atomic_load_n(&module->dyn_syncs, __ATOMIC_ACQUIRE);

    if (ompi_osc_ucxx_dyntab_serves(module, target)) return;   /* (nothing to read) */
    cache = remote_cache(module, worker, target, &link);
    if (NULL != cache && syncs != cache->syncs &&
        (NULL == cache->read_req || cache->read_syncs != syncs)) {
        read_start(module, worker, link, target, cache, syncs);
    }
}

int ompi_osc_ucxx_dyn_resolve(ompi_osc_ucxx_module_t *module, ompi_osc_ucxx_worker_t *worker,
                              int target, uint64_t lo, uint64_t hi, ompi_osc_ucxx_path_t *path)
{
    ompi_osc_ucxx_dyncache_t *cache;
    dynentry_t *entry;
    bool spans;
    int rc;

    path->partial = path->split = false;
    path->cma = 0;
    if (target == module->rank) {
        /* our own memory: check it is attached, then use it directly */
        if (!ompi_osc_ucxx_dyn_contains(module, lo, hi)) return OMPI_ERR_RMA_RANGE;
        path->mapped = true;
        path->delta = 0;
        return OMPI_SUCCESS;
    }
    path->mapped = false;
    path->link = ompi_osc_ucxx_link(module, worker, target);
    if (NULL == path->link) return OMPI_ERR_UNREACH;
    cache = cache_of(module, path->link, target);
    if (NULL == cache) return OMPI_ERR_OUT_OF_RESOURCE;
    rc = gen_check(module, target, cache);
    if (OMPI_SUCCESS != rc) return rc;
    rc = entry_lookup(module, worker, target, path->link, lo, hi, &entry, &spans);
    if (OMPI_SUCCESS != rc) return rc;
    if (spans) {
        path->split = true;
        path->rkey = NULL;
        return OMPI_SUCCESS;
    }
    entry_path(module, target, cache, entry, path);
    return OMPI_SUCCESS;
}

/* After dyn_resolve said split: the generation was checked for the whole
 * access then, so each piece only finds its region. */
int ompi_osc_ucxx_dyn_piece(ompi_osc_ucxx_module_t *module, ompi_osc_ucxx_worker_t *worker,
                            int target, uint64_t lo, uint64_t hi, ompi_osc_ucxx_path_t *path,
                            uint64_t *end)
{
    dynentry_t *entry;
    bool spans;
    int rc;

    path->link = ompi_osc_ucxx_link(module, worker, target);
    if (NULL == path->link || NULL == path->link->dyn) return OMPI_ERR_UNREACH;
    rc = entry_lookup(module, worker, target, path->link, lo, hi, &entry, &spans);
    if (OMPI_SUCCESS != rc) return rc;
    *end = hi;
    if (spans && entry->base + entry->len < hi) *end = entry->base + entry->len;
    entry_path(module, target, path->link->dyn, entry, path);
    return OMPI_SUCCESS;
}

/* Our own regions through our link to ourselves, for the single elements
 * of windows that take UCX atomics (osc_ucxx_policy.c): ours take them too,
 * with the rkey of the region that holds them, cached with the link as a
 * peer's regions are; path->split where regions attached back to back hold
 * them (the peers send those as messages). */
int ompi_osc_ucxx_dyn_resolve_self(ompi_osc_ucxx_module_t *module,
                                   ompi_osc_ucxx_worker_t *worker, uint64_t lo, uint64_t hi,
                                   ompi_osc_ucxx_path_t *path)
{
    ompi_osc_ucxx_link_t *link = ompi_osc_ucxx_link(module, worker, module->rank);
    uint64_t gen = ompi_osc_ucxx_state_gen_local(module);
    dynentry_t *entry, fresh;
    int i, rc = OMPI_SUCCESS;

    if (NULL == link) return OMPI_ERR_UNREACH;
    path->link = link;
    path->split = false;
    if (NULL == link->dyn) {
        link->dyn = calloc(1, sizeof(*link->dyn));  /* (no hot range: gen_word NULL) */
        if (NULL == link->dyn) return OMPI_ERR_OUT_OF_RESOURCE;
        cache_clear(link->dyn, gen);
    }
    if (gen != link->dyn->gen) cache_clear(link->dyn, gen);
    entry = cache_find(link->dyn, lo, hi);
    if (NULL == entry) {
        memset(&fresh, 0, sizeof(fresh));
        OSC_UCXX_LOCK(&module->dyn_lock);
        i = region_find(module, lo, hi);
        if (i < 0) {
            path->split = covered(module, lo, hi);
            rc = path->split ? OMPI_SUCCESS : OMPI_ERR_RMA_RANGE;
        } else {
            fresh.base = module->regions[i].base;
            fresh.len = module->regions[i].len;
            if (UCS_OK != ucp_ep_rkey_unpack(link->ep, module->regions[i].rkey, &fresh.rkey)) {
                rc = OMPI_ERROR;
            }
        }
        OSC_UCXX_UNLOCK(&module->dyn_lock);
        if (OMPI_SUCCESS != rc || path->split) return rc;
        entry = cache_add(link->dyn, &fresh);
        if (NULL == entry) {
            ucp_rkey_destroy(fresh.rkey);
            return OMPI_ERR_OUT_OF_RESOURCE;
        }
    }
    path->rkey = entry->rkey;
    return OMPI_SUCCESS;
}

/* ------------------------------------------------------------------------- */

/* MPI_Win_free, before the links go: no read of ours in flight. */
void ompi_osc_ucxx_dyn_settle(ompi_osc_ucxx_module_t *module)
{
    ompi_osc_ucxx_ltab_t *tab = module->ltab;

    for (int w = 0; NULL != tab && MPI_WIN_FLAVOR_DYNAMIC == module->flavor && w < tab->cap;
         ++w) {
        ompi_osc_ucxx_lrow_t *row = tab->rows[w];
        for (int c = 0; NULL != row && c < row->nchunks; ++c) {
            for (int i = 0; NULL != row->chunks[c] && i < OSC_UCXX_LINK_CHUNK; ++i) {
                ompi_osc_ucxx_dyncache_t *cache = row->chunks[c]->links[i].dyn;
                if (NULL != cache) read_settle(cache);
            }
        }
    }
}

void ompi_osc_ucxx_dyn_am_init(void)
{
    ompi_osc_ucxx_am_set_handler(OSC_UCXX_AM_REGION_REQ, region_req_handler);
    ompi_osc_ucxx_am_set_handler(OSC_UCXX_AM_REGION_REPLY, region_reply_handler);
}
