/*
 * Copyright (c) 2026 The osc/ucxx authors. All rights reserved.
 * $COPYRIGHT$
 *
 * Lazy per-peer setup: a worker's link to a peer (its endpoint) on its
 * first operation there, the link's rkeys on their first need, and the
 * peer's memory and state segment mapped into ours (ranges of the peer's
 * shared memory, through the peer table: osc_ucxx_ptab.c; the group's
 * segment of a shared window), or its user memory reached by cross-memory
 * attach, on the first use of the peer.  A peer on the node is reached
 * without any endpoint: only a UCX operation or a message makes one.  The
 * rkeys come from the worker, which keeps them for later windows
 * (ompi_osc_ucxx_rkey_take); the window gives them back when it goes
 * (links_release).  Both are published with a write barrier before the
 * flag the inline fast paths in osc_ucxx_target.h test, and made under the
 * core's setup_lock, so racing threads make them once.  The peer table may
 * let a peer go between epochs (its bound): the window then drops what it
 * holds of the peer (peer_release) and meets it again as the first time.
 * Also the range check of one access, step 3 of the operation prologue
 * (osc_ucxx_op.h).
 *
 * Prefaulting: the first copy of over 256 KiB to or from a 2 MiB chunk of
 * a peer's mapped memory populates the page tables for the bytes it copies
 * (osc_ucxx_prefault.c says why and how); the chunk bits live with the
 * peer.
 */

#include "ompi_config.h"

#include "ompi/datatype/ompi_datatype.h"
#include "opal/align.h"
#include "opal/util/sys_limits.h"

#include "osc_ucxx_target.h"
#include "osc_ucxx_audit.h"
#include "osc_ucxx_share.h"
#include "osc_ucxx_prefault.h"
#include "osc_ucxx_cma.h"

/* A link's region cache goes with the link: freed by the dynamic-window
 * file, which fills it (osc_ucxx_dynamic.c, given at component init). */
static void (*dyn_cache_free)(ompi_osc_ucxx_dyncache_t *cache);

/* The peer's chunk bits, made on first use (a racing thread's are freed). */
static uint64_t *prefault_bits(ompi_osc_ucxx_module_t *module, int target)
{
    ompi_osc_ucxx_peer_t *peer = &module->peers[target];
    uint64_t *bits = peer->prefaulted;
    if (NULL != bits) return bits;
    bits = ompi_osc_ucxx_prefault_bits(ompi_osc_ucxx_peer_size(module, target));
    if (NULL == bits) return NULL;
    uint64_t *none = NULL;
    if (!__atomic_compare_exchange_n(&peer->prefaulted, &none, bits, false, __ATOMIC_ACQ_REL,
                                     __ATOMIC_ACQUIRE)) {
        free(bits);
        return none;
    }
    return bits;
}

/* Our own memory is left alone: it may be private, where a read populate
 * would map the zero page under the stores. */
void ompi_osc_ucxx_prefault_range(ompi_osc_ucxx_module_t *module, int target, char *p,
                                  size_t len, bool write)
{
    ompi_osc_ucxx_peer_t *peer = &module->peers[target];
    char *base = peer->direct_data;
    uint64_t size = ompi_osc_ucxx_peer_size(module, target);
    uint64_t *bits;

    if (target == module->rank || NULL == base || p < base || (uint64_t) (p - base) > size ||
        len > size - (uint64_t) (p - base)) {
        return;
    }
    if ((write || peer->loads_fault) && NULL != (bits = prefault_bits(module, target))) {
        ompi_osc_ucxx_prefault_chunks(base, bits, (uint64_t) (p - base), len);
    }
}

/* ------------------------------------------------------------------------- */
/* Links and rkeys */

/* A peer that published no state rkey of its own reaches its state with
 * its data rkey (none does now: every state segment is a state arena's). */
static inline bool state_in_data(const ompi_osc_ucxx_module_t *module, int target)
{
    return 0 == module->rkeys[target].state_len;
}

/* About how many bytes of the peer's a data or state rkey maps (what an
 * idle one holds; its allocation may be larger: an arena, a kept one). */
static size_t mapped_bytes(const ompi_osc_ucxx_module_t *module, int target, bool state)
{
    if (state) return module->state_size;
    return ompi_osc_ucxx_peer_size(module, target) +
           (state_in_data(module, target) ? module->state_size : 0);
}

/* The peer's data or state rkey on the worker's endpoint `ep`, from the
 * worker's kept ones where it has it (ompi_osc_ucxx_rkey_take); NULL where
 * it published none (nothing to reach, or every peer maps its memory). */
static int unpack_rkey(ompi_osc_ucxx_module_t *module, ompi_osc_ucxx_worker_t *worker,
                       ucp_ep_h ep, int target, bool state, ucp_rkey_h *rkey)
{
    const struct ompi_osc_ucxx_rkeys_t *rk;
    size_t len;

    *rkey = NULL;
    if (NULL == module->rkeys) return OMPI_SUCCESS;
    rk = &module->rkeys[target];
    len = state ? rk->state_len : rk->data_len;
    if (0 == len) return OMPI_SUCCESS;
    return ompi_osc_ucxx_rkey_take(worker, ompi_comm_peer_lookup(module->comm, target), ep,
                                   state ? rk->state_serial : rk->data_serial,
                                   mapped_bytes(module, target, state),
                                   module->blobs + rk->blob + (state ? rk->data_len : 0), rkey);
}

/* (A window released at finalize has lost its communicator: its kept rkeys
 * go with the workers, which finalize destroys next.) */
static void give_rkey(ompi_osc_ucxx_module_t *module, ompi_osc_ucxx_worker_t *worker,
                      int target, bool state, ucp_rkey_h rkey)
{
    const struct ompi_osc_ucxx_rkeys_t *rk;

    if (NULL == rkey || NULL == module->rkeys) return;
    rk = &module->rkeys[target];
    ompi_osc_ucxx_rkey_give(worker,
                            NULL != module->comm ? ompi_comm_peer_lookup(module->comm, target)
                                                 : NULL,
                            state ? rk->state_serial : rk->data_serial, rkey);
}

/* A link's rkeys back, its region cache gone: it is an empty slot again
 * (the endpoint stays the worker's). */
static void link_clear(ompi_osc_ucxx_module_t *module, ompi_osc_ucxx_link_t *link, int target)
{
    ompi_osc_ucxx_worker_t *worker = link->row->worker;

    give_rkey(module, worker, target, false, link->data_rkey);
    if (link->state_rkey != link->data_rkey) {
        give_rkey(module, worker, target, true, link->state_rkey);
    }
    dyn_cache_free(link->dyn);
    link->dyn = NULL;
    link->data_rkey = link->state_rkey = NULL;
    link->unpacked = 0;
    link->ep = NULL;
}

static void lrow_destruct(ompi_osc_ucxx_lrow_t *row)
{
    for (int c = 0; c < row->nchunks; ++c) {
        if (NULL == row->chunks[c]) continue;
        for (int i = 0; i < OSC_UCXX_LINK_CHUNK; ++i) {
            dyn_cache_free(row->chunks[c]->links[i].dyn);  /* (rkeys: links_release) */
        }
        free(row->chunks[c]);
    }
}

OBJ_CLASS_INSTANCE(ompi_osc_ucxx_lrow_t, opal_object_t, NULL, lrow_destruct);

/* A row for `size` peers, no chunk yet (OBJ_RELEASE frees it). */
static ompi_osc_ucxx_lrow_t *lrow_new(int size, ompi_osc_ucxx_worker_t *worker)
{
    int nchunks = (size + OSC_UCXX_LINK_CHUNK - 1) / OSC_UCXX_LINK_CHUNK;
    ompi_osc_ucxx_lrow_t *row = calloc(1, sizeof(*row) + nchunks * sizeof(row->chunks[0]));
    if (NULL == row) return NULL;
    OBJ_CONSTRUCT(row, ompi_osc_ucxx_lrow_t);
    row->nchunks = nchunks;
    row->worker = worker;  /* flushes find the worker here */
    row->sum.row = row;
    return row;
}

/* The worker's row of links for this window, growing the table if needed. */
static ompi_osc_ucxx_lrow_t *row_for(ompi_osc_ucxx_module_t *module,
                                     ompi_osc_ucxx_worker_t *worker)
{
    ompi_osc_ucxx_ltab_t *tab = module->ltab;

    if (worker->index >= tab->cap) {
        int cap = 2 * (worker->index + 1);
        ompi_osc_ucxx_ltab_t *grown = calloc(1, sizeof(*grown) + cap * sizeof(grown->rows[0]));
        if (NULL == grown) {
            return NULL;
        }
        grown->cap = cap;
        grown->used = tab->used;
        memcpy(grown->rows, tab->rows, tab->cap * sizeof(tab->rows[0]));
        grown->retired = tab;  /* readers may still hold the old table */
        opal_atomic_wmb();
        module->ltab = tab = grown;
    }
    if (NULL == tab->rows[worker->index]) {
        ompi_osc_ucxx_lrow_t *row = lrow_new(module->size, worker);
        if (NULL == row) return NULL;
        opal_atomic_wmb();
        tab->rows[worker->index] = row;
        if (worker->index >= tab->used) {
            opal_atomic_wmb();
            tab->used = worker->index + 1;
        }
    }
    return tab->rows[worker->index];
}

/* The slot of `target`'s link in the worker's row, its chunk made if needed. */
static ompi_osc_ucxx_link_t *link_slot(ompi_osc_ucxx_module_t *module,
                                       ompi_osc_ucxx_worker_t *worker, int target)
{
    ompi_osc_ucxx_lrow_t *row = row_for(module, worker);
    int c = target / OSC_UCXX_LINK_CHUNK;

    if (NULL == row) return NULL;
    if (NULL == row->chunks[c]) {
        ompi_osc_ucxx_lchunk_t *chunk = calloc(1, sizeof(*chunk));
        if (NULL == chunk) return NULL;
        for (int i = 0; i < OSC_UCXX_LINK_CHUNK; ++i) chunk->links[i].row = row;
        opal_atomic_wmb();
        row->chunks[c] = chunk;
    }
    return &row->chunks[c]->links[target % OSC_UCXX_LINK_CHUNK];
}

/* The peer table's entry of `target`, with this window counted as its
 * user (once: peer->ent). */
static ompi_osc_ucxx_pent_t *peer_ent(ompi_osc_ucxx_module_t *module, int target)
{
    ompi_osc_ucxx_peer_t *peer = &module->peers[target];
    ompi_osc_ucxx_pent_t *e;

    if (NULL != peer->ent || target == module->rank) return peer->ent;
    e = ompi_osc_ucxx_ptab_get(ompi_comm_peer_lookup(module->comm, target));
    if (NULL != e && OMPI_SUCCESS == ompi_osc_ucxx_ptab_user_add(e, module, target)) {
        peer->ent = e;
    }
    return peer->ent;
}

ompi_osc_ucxx_link_t *ompi_osc_ucxx_link_resolve(ompi_osc_ucxx_module_t *module,
                                                 ompi_osc_ucxx_worker_t *worker, int target)
{
    ompi_osc_ucxx_link_t *slot, *link = NULL;
    ompi_osc_ucxx_pent_t *e = NULL;
    ucp_ep_h ep;

    OSC_UCXX_LOCK(&module->setup_lock);
    slot = link_slot(module, worker, target);
    if (NULL == slot) {
        goto out;
    }
    if (NULL != slot->ep) {
        link = slot;
        goto out;
    }
    e = peer_ent(module, target);
    if (OMPI_SUCCESS != ompi_osc_ucxx_worker_get_ep(worker,
                                                    ompi_comm_peer_lookup(module->comm, target),
                                                    &ep)) {
        goto out;
    }
    opal_atomic_wmb();
    slot->ep = ep;  /* published last: the fast path tests it */
    link = slot;
out:
    OSC_UCXX_UNLOCK(&module->setup_lock);
    if (NULL != link) ompi_osc_ucxx_ptab_trim(e);  /* (not inside the lock: it may release) */
    return link;
}

/* The link's data (or state) rkey, unpacked now: UCX operations on the
 * peer's memory need it, messages do not. */
ucp_rkey_h ompi_osc_ucxx_link_rkey(ompi_osc_ucxx_module_t *module, ompi_osc_ucxx_link_t *link,
                                   int target, bool state)
{
    int bit = state ? OSC_UCXX_LINK_STATE : OSC_UCXX_LINK_DATA;
    ucp_rkey_h rkey;

    OSC_UCXX_LOCK(&module->setup_lock);
    if (!(link->unpacked & bit)) {
        if (state && NULL != module->rkeys && state_in_data(module, target)) {
            if (!(link->unpacked & OSC_UCXX_LINK_DATA) &&
                OMPI_SUCCESS == unpack_rkey(module, link->row->worker, link->ep, target, false,
                                            &rkey)) {
                link->data_rkey = rkey;
                link->unpacked |= OSC_UCXX_LINK_DATA;
            }
            link->state_rkey = link->data_rkey;
        } else if (OMPI_SUCCESS ==
                   unpack_rkey(module, link->row->worker, link->ep, target, state, &rkey)) {
            if (state) link->state_rkey = rkey; else link->data_rkey = rkey;
        }
        opal_atomic_wmb();
        link->unpacked |= bit;
    }
    rkey = state ? link->state_rkey : link->data_rkey;
    OSC_UCXX_UNLOCK(&module->setup_lock);
    return rkey;
}

/* ------------------------------------------------------------------------- */
/* Mappings */

/* The peer's mappings and links dropped (its table entry let it go, or the
 * window goes): the next use of the peer finds them again.  Its links'
 * operations are complete (the peer is in no epoch here); what is left in
 * flight is flushed, progressing the worker alone (no deferred work, which
 * could make a link again). */
static void peer_drop(ompi_osc_ucxx_module_t *module, int target)
{
    ompi_osc_ucxx_peer_t *peer = &module->peers[target];
    ompi_osc_ucxx_ltab_t *tab = module->ltab;

    peer->resolved = false;
    opal_atomic_wmb();
    peer->whole = false;
    peer->direct_data = NULL;
    peer->direct_state = NULL;
    peer->post_slot = NULL;
    peer->dyn_table = NULL;
    free(peer->prefaulted);
    peer->prefaulted = NULL;
    for (int k = 0; k < 3; ++k) {
        ompi_osc_ucxx_ptab_unmap(peer->maps[k]);
        peer->maps[k] = NULL;
    }
    for (int w = 0; NULL != tab && w < tab->cap; ++w) {
        ompi_osc_ucxx_link_t *link = NULL == tab->rows[w] ? NULL
                                                          : ompi_osc_ucxx_row_link(tab->rows[w],
                                                                                   target);
        if (NULL == link) continue;
        if (NULL != link->ep && link->issued != link->flushed) {
            ucp_request_param_t param = {.op_attr_mask = 0};
            void *req = ucp_ep_flush_nbx(link->ep, &param);
            if (UCS_PTR_IS_PTR(req)) {
                while (UCS_INPROGRESS == ucp_request_check_status(req)) {
                    (void) ompi_osc_ucxx_worker_progress_shared(link->row->worker);
                }
                ucp_request_free(req);
            }
            link->flushed = link->issued;
        }
        link_clear(module, link, target);
    }
}

/* The peer table's questions (osc_ucxx_ptab.c): may the peer go now (in
 * no epoch of this window's, no message of ours in flight, not given to
 * the program); drop it. */
static bool peer_busy(void *m, int target)
{
    ompi_osc_ucxx_module_t *module = m;
    ompi_osc_ucxx_peer_t *peer = &module->peers[target];
    return 0 != peer->access || peer->pinned || module->am_outstanding > 0;
}

static void peer_release(void *m, int target)
{
    ompi_osc_ucxx_module_t *module = m;
    OSC_UCXX_VERBOSE(20, "window %u peer %d: let go", module->cid, target);
    peer_drop(module, target);
    module->peers[target].ent = NULL;
}

void ompi_osc_ucxx_target_init(void (*cache_free)(ompi_osc_ucxx_dyncache_t *cache))
{
    ompi_osc_ucxx_ptab_hooks(peer_busy, peer_release);
    dyn_cache_free = cache_free;
}

/* Every link row and table, and the peers' mappings (window teardown). */
void ompi_osc_ucxx_links_release(ompi_osc_ucxx_module_t *module)
{
    ompi_osc_ucxx_ltab_t *tab = module->ltab, *next;

    for (int i = 0; NULL != module->peers && i < module->size; ++i) {
        ompi_osc_ucxx_peer_t *peer = &module->peers[i];
        for (int k = 0; k < 3; ++k) ompi_osc_ucxx_ptab_unmap(peer->maps[k]);
        if (NULL != peer->ent) ompi_osc_ucxx_ptab_user_remove(peer->ent, module, i);
    }
    for (int w = 0; NULL != tab && w < tab->cap; ++w) {
        ompi_osc_ucxx_lrow_t *row = tab->rows[w];
        if (NULL == row) continue;
        for (int c = 0; c < row->nchunks; ++c) {
            if (NULL == row->chunks[c]) continue;
            for (int i = 0; i < OSC_UCXX_LINK_CHUNK; ++i) {
                ompi_osc_ucxx_link_t *link = &row->chunks[c]->links[i];
                int target = c * OSC_UCXX_LINK_CHUNK + i;
                give_rkey(module, row->worker, target, false, link->data_rkey);
                if (link->state_rkey != link->data_rkey) {
                    give_rkey(module, row->worker, target, true, link->state_rkey);
                }
            }
        }
        OBJ_RELEASE(row);
    }
    for (; NULL != tab; tab = next) {
        next = tab->retired;
        free(tab);
    }
    module->ltab = NULL;
}

/* Peers' user memory (create and dynamic windows) stays in their private
 * pages: reached by cross-memory attach where the kernel lets us. */
static int32_t user_memory_cma(ompi_osc_ucxx_module_t *module, int target,
                               ompi_osc_ucxx_pent_t *e)
{
    ompi_osc_ucxx_segid_t id;
    if ((MPI_WIN_FLAVOR_CREATE != module->flavor && MPI_WIN_FLAVOR_DYNAMIC != module->flavor) ||
        NULL == e || !ompi_osc_ucxx_ptab_identity(e, &id)) {
        return 0;
    }
    return ompi_osc_ucxx_cma_peer(ompi_comm_peer_lookup(module->comm, target), id.pid, id.ident);
}

static uint64_t peer_data_off(const ompi_osc_ucxx_module_t *module, int target)
{
    return NULL == module->pub_data_off ? module->pub.data_off : module->pub_data_off[target];
}

static uint64_t peer_state_off(const ompi_osc_ucxx_module_t *module, int target)
{
    return NULL == module->pub_state_off ? module->pub.state_off : module->pub_state_off[target];
}

/* May we map `target`'s shared memory (on this node, its and ours to map)? */
static bool mappable(ompi_osc_ucxx_module_t *module, int target)
{
    ompi_proc_t *proc = ompi_comm_peer_lookup(module->comm, target);
    return OSC_UCXX.use_direct && OPAL_PROC_ON_LOCAL_NODE(proc->super.proc_flags) &&
           (NULL == module->pub_unmappable || !module->pub_unmappable[target]);
}

/* Do an allocate window's state at `state` and memory [data, data + len)
 * lie in the same granules of the peer's file, or next to them (its window
 * arena puts them so: osc_ucxx_memory.c)? */
static bool state_by_data(uint64_t state, uint64_t data, size_t len)
{
    uint64_t g = OSC_UCXX_SEG_MAP_GRANULE;
    uint64_t lo = data / g * g, hi = (data + len + g - 1) / g * g;
    return state + g >= lo && state < hi + g;
}

/* The peer's memory and state, ranges of its shared memory mapped here
 * (or the group's segment of a shared window): an allocate window's both
 * at once, with one mapping where they are near (a state page of its
 * window arena), else with two (one open of the peer's file), or neither
 * (its memory by UCX, its state by loads, is no path). */
static void map_peer(ompi_osc_ucxx_module_t *module, int target, ompi_osc_ucxx_pent_t *e,
                     uint64_t touch)
{
    ompi_osc_ucxx_peer_t *peer = &module->peers[target];
    uint64_t data_off = peer_data_off(module, target);
    uint64_t state_off = peer_state_off(module, target);
    size_t len = ompi_osc_ucxx_peer_size(module, target);
    ompi_osc_ucxx_pmap_req_t req[2] = {
        {.off = state_off, .len = module->state_size, .unit = OSC_UCXX_SEG_MAP_PAGE},
        {.off = data_off, .len = len, .unit = OSC_UCXX_SEG_MAP_GRANULE}};
    int n = MPI_WIN_FLAVOR_ALLOCATE == module->flavor && OSC_UCXX_SEG_NONE != data_off ? 2 : 1;

    if (OSC_UCXX_SEG_NONE == state_off) return;
    if (MPI_WIN_FLAVOR_DYNAMIC == module->flavor && OSC_UCXX_SEG_NONE != data_off) {
        /* (its region table, with the same open) */
        req[1].len = OSC_UCXX_DYNTAB_SIZE;
        req[1].unit = OSC_UCXX_SEG_MAP_PAGE;
        if (!ompi_osc_ucxx_ptab_map(e, req, 2)) return;
        peer->direct_state = (ompi_osc_ucxx_state_t *) req[0].addr;
        peer->maps[1] = req[0].map;
        peer->dyn_table = (const ompi_osc_ucxx_dyntab_t *) req[1].addr;
        peer->maps[0] = req[1].map;
        return;
    }
    if (2 == n && state_by_data(state_off, data_off, len)) {
        uint64_t lo = state_off < data_off ? state_off : data_off;
        uint64_t hi = state_off + module->state_size > data_off + len
                          ? state_off + module->state_size
                          : data_off + len;
        ompi_osc_ucxx_pmap_req_t both = {.off = lo, .len = (size_t) (hi - lo),
                                         .unit = OSC_UCXX_SEG_MAP_GRANULE};
        if (!ompi_osc_ucxx_ptab_map(e, &both, 1)) return;
        peer->direct_state = (ompi_osc_ucxx_state_t *) (both.addr + (state_off - lo));
        peer->direct_data = both.addr + (data_off - lo);
        peer->maps[0] = both.map;
        if (both.made && touch < len) {
            (void) ompi_osc_ucxx_prefault_pair((void *) &peer->direct_state->lock,
                                               peer->direct_data + touch);
        }
        return;
    }
    if (!ompi_osc_ucxx_ptab_map(e, req, n)) return;
    peer->direct_state = (ompi_osc_ucxx_state_t *) req[0].addr;
    peer->maps[1] = req[0].map;
    if (2 == n) {
        peer->direct_data = req[1].addr;
        peer->maps[0] = req[1].map;
    } else if (NULL != module->shseg) {
        /* MPI_Win_allocate_shared: all of the group's segment is mapped here */
        peer->direct_data = module->shseg->map + module->shseg->offsets[target];
    }
}

/* `touch`: the offset in the peer's window of a first access (UINT64_MAX:
 * none known); `locks`: it takes the target's lock word too */
static void resolve(ompi_osc_ucxx_module_t *module, int target, uint64_t touch, bool locks)
{
    ompi_osc_ucxx_peer_t *peer = &module->peers[target];
    ompi_osc_ucxx_pent_t *e = NULL;

    OSC_UCXX_LOCK(&module->setup_lock);
    if (peer->resolved) {
        goto out;
    }
    if (target == module->rank) {
        peer->direct_data = module->base;
        peer->direct_state = module->state;
    } else if (NULL != module->shseg && 0 != module->shseg->state_stride) {
        /* MPI_Win_allocate on one node: the node's segment, mapped whole */
        peer->direct_data = module->shseg->map + module->shseg->offsets[target];
        peer->direct_state = ompi_osc_ucxx_shseg_state(module->shseg, target);
        peer->loads_fault = true;
        ompi_osc_ucxx_shseg_touch(module->shseg, target, touch);
    } else if (mappable(module, target) && NULL != (e = peer_ent(module, target))) {
        map_peer(module, target, e, locks ? touch : UINT64_MAX);
        peer->loads_fault = NULL != peer->direct_data;
        if (NULL == peer->direct_data) {
            peer->cma = user_memory_cma(module, target, e);
        }
    }
    OSC_UCXX_VERBOSE(20, "window %u peer %d: data %s, state %s", module->cid, target,
                     peer->direct_data ? "mapped" : peer->cma ? "by cross-memory attach"
                                                              : "through UCX",
                     peer->direct_state ? "mapped" : "through UCX");
    /* (the atomics audit records accumulates on the mapped path, not on the
     * shortcut `whole` opens: osc_ucxx_accumulate.c's short_target) */
    peer->whole = !ompi_osc_ucxx_audit_on && target != module->rank &&
                  MPI_WIN_FLAVOR_DYNAMIC != module->flavor &&
                  NULL != peer->direct_data && NULL != peer->direct_state;
    opal_atomic_wmb();
    peer->resolved = true;
out:
    OSC_UCXX_UNLOCK(&module->setup_lock);
    if (NULL != e) ompi_osc_ucxx_ptab_trim(e);
}

void ompi_osc_ucxx_peer_resolve_direct(ompi_osc_ucxx_module_t *module, int target)
{
    resolve(module, target, UINT64_MAX, false);
}

void ompi_osc_ucxx_peer_resolve_at(ompi_osc_ucxx_module_t *module, int target, uint64_t offset,
                                   bool locks)
{
    resolve(module, target, offset, locks);
}

/* The page of the peer's post slots that holds ours, where its state is
 * mapped (the state says where they lie in its shared memory). */
volatile uint64_t *ompi_osc_ucxx_peer_post_slot(ompi_osc_ucxx_module_t *module, int target)
{
    ompi_osc_ucxx_peer_t *peer = &module->peers[target];
    ompi_osc_ucxx_state_t *state = ompi_osc_ucxx_direct_state(module, target);
    uint64_t at;

    if (OPAL_LIKELY(NULL != peer->post_slot) || NULL == state || target == module->rank ||
        module->rank >= OSC_UCXX_POST_SLOTS) {
        return peer->post_slot;
    }
    if (NULL != module->shseg && 0 != module->shseg->posts_stride) {
        /* (MPI_Win_allocate on one node: in the node's segment) */
        peer->post_slot = ompi_osc_ucxx_shseg_posts(module->shseg, target) + module->rank;
        (void) *peer->post_slot;   /* (a read fault maps the neighbours: ompi_osc_ucxx_shseg_touch) */
        return peer->post_slot;
    }
    at = state->posts_at.value;
    OSC_UCXX_LOCK(&module->setup_lock);
    if (NULL != module->shseg && 0 != module->shseg->state_stride) {
        (void) peer_ent(module, target);   /* (the node's segment needed none before) */
    }
    if (NULL == peer->post_slot && NULL != peer->ent && OSC_UCXX_SEG_NONE != at) {
        ompi_osc_ucxx_pmap_req_t req = {.off = at + (uint64_t) module->rank * sizeof(uint64_t),
                                         .len = sizeof(uint64_t),
                                         .unit = OSC_UCXX_SEG_MAP_PAGE};
        if (ompi_osc_ucxx_ptab_map(peer->ent, &req, 1)) {
            peer->maps[2] = req.map;
            peer->post_slot = (volatile uint64_t *) req.addr;
        }
    }
    OSC_UCXX_UNLOCK(&module->setup_lock);
    return peer->post_slot;
}

/* ------------------------------------------------------------------------- */
/* Range of one access */

/* A memory-handle view names one target and counts displacements from the
 * handle's base, within the handle's size. */
int ompi_osc_ucxx_memhandle_range(ompi_osc_ucxx_target_t *t, ptrdiff_t disp, int count,
                                  struct ompi_datatype_t *dt)
{
    ompi_osc_ucxx_view_t *view = t->view;
    ptrdiff_t offset;
    int rc;

    if (t->rank != view->mh_target) {
        return MPI_ERR_RANK;
    }
    if (0 == count || 0 == dt->super.size) {
        return ompi_osc_ucxx_window_range(t, 0, 0, dt);
    }
    if (disp < 0 || __builtin_mul_overflow(disp, (ptrdiff_t) view->mh_disp_unit, &offset) ||
        __builtin_add_overflow(offset, (ptrdiff_t) view->mh_base, &offset)) {
        return OMPI_ERR_RMA_RANGE;  /* (wrapped, it could land inside the handle) */
    }
    rc = ompi_osc_ucxx_window_range(t, offset, count, dt);
    if (OMPI_SUCCESS == rc && count > 0 &&
        (t->lo < view->mh_base || t->hi > view->mh_base + view->mh_size)) {
        rc = OMPI_ERR_RMA_RANGE;
    }
    return rc;
}
