/*
 * Copyright (c) 2026 The osc/ucxx authors. All rights reserved.
 * $COPYRIGHT$
 *
 * Lazy per-peer setup: a worker's link to a peer (endpoint, unpacked rkeys)
 * on its first operation there, and the peer's memory and state segment
 * mapped into ours (ucp_rkey_ptr, or the group's segment of a shared
 * window), or its user memory reached by cross-memory attach, on the first
 * use of the peer.  The rkeys come from the worker, which keeps them
 * for later windows (ompi_osc_ucxx_rkey_take); the window gives them back
 * when it goes (links_release).  Both are published with a write barrier before the
 * flag the inline fast paths in osc_ucxx_target.h test, and made under the
 * core's setup_lock, so racing threads make them once.  Also the range
 * check of one access, step 3 of the operation prologue (osc_ucxx_op.h).
 *
 * Prefaulting: the first copy of over 256 KiB to or from a 2 MiB chunk of
 * a peer's mapped memory populates the page tables for the bytes it copies
 * (osc_ucxx_prefault.c says why and how); the chunk bits live with the
 * peer.
 */

#include "ompi_config.h"

#include "ompi/datatype/ompi_datatype.h"

#include "osc_ucxx_op.h"
#include "osc_ucxx_share.h"
#include "osc_ucxx_prefault.h"
#include "osc_ucxx_cma.h"
#include "osc_ucxx_dynamic.h"

/* The peer's chunk bits, made on first use (a racing thread's are freed). */
static uint64_t *prefault_bits(ompi_osc_ucxx_peer_t *peer)
{
    uint64_t *bits = peer->prefaulted;
    if (NULL != bits) return bits;
    bits = ompi_osc_ucxx_prefault_bits(peer->size);
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
    uint64_t *bits;

    if (target == module->rank || NULL == base || p < base ||
        (uint64_t) (p - base) > peer->size || len > peer->size - (uint64_t) (p - base)) {
        return;
    }
    if ((write || peer->loads_fault) && NULL != (bits = prefault_bits(peer))) {
        ompi_osc_ucxx_prefault_chunks(base, bits, (uint64_t) (p - base), len);
    }
}

/* A peer whose state segment heads its window's allocation (MPI_Win_allocate,
 * osc_ucxx_window.c) publishes one rkey for both: no state rkey of its own. */
static inline bool state_in_data(const ompi_osc_ucxx_peer_t *peer)
{
    return 0 == peer->state_rkey_len;
}

/* About how many bytes of the peer's a data or state rkey maps (what an
 * idle one holds; its allocation may be larger: an arena, a kept one). */
static size_t mapped_bytes(const ompi_osc_ucxx_module_t *module,
                           const ompi_osc_ucxx_peer_t *peer, bool state)
{
    if (state) return module->state_size;
    return peer->size + (state_in_data(peer) ? module->state_size : 0);
}

/* The peer's data or state rkey on the worker's endpoint `ep`, from the
 * worker's kept ones where it has it (ompi_osc_ucxx_rkey_take). */
static int unpack_rkey(ompi_osc_ucxx_module_t *module, ompi_osc_ucxx_worker_t *worker,
                       ucp_ep_h ep, int target, bool state, ucp_rkey_h *rkey)
{
    ompi_osc_ucxx_peer_t *peer = &module->peers[target];
    size_t len = state ? peer->state_rkey_len : peer->data_rkey_len;
    char *buf = module->blobs + peer->blob + (state ? peer->data_rkey_len : 0);

    *rkey = NULL;
    if (0 == len) {
        return OMPI_SUCCESS;  /* zero-size window: nothing to reach */
    }
    return ompi_osc_ucxx_rkey_take(worker, ompi_comm_peer_lookup(module->comm, target), ep,
                                   state ? peer->state_serial : peer->data_serial,
                                   mapped_bytes(module, peer, state), buf, rkey);
}

/* (A window released at finalize has lost its communicator: its kept rkeys
 * go with the workers, which finalize destroys next.) */
static void give_rkey(ompi_osc_ucxx_module_t *module, ompi_osc_ucxx_worker_t *worker,
                      int target, bool state, ucp_rkey_h rkey)
{
    ompi_osc_ucxx_peer_t *peer = &module->peers[target];
    ompi_osc_ucxx_rkey_give(worker,
                            NULL != module->comm ? ompi_comm_peer_lookup(module->comm, target)
                                                 : NULL,
                            state ? peer->state_serial : peer->data_serial, rkey);
}

static void lrow_destruct(ompi_osc_ucxx_lrow_t *row)
{
    for (int i = 0; i < row->size; ++i) {
        ompi_osc_ucxx_dyn_cache_free(row->links[i].dyn);  /* (rkeys: links_release) */
    }
}

OBJ_CLASS_INSTANCE(ompi_osc_ucxx_lrow_t, opal_object_t, NULL, lrow_destruct);

/* A row of size + 1 zeroed links (allocated with the object, so the fast
 * path reaches a link with one load; OBJ_RELEASE frees it). */
static ompi_osc_ucxx_lrow_t *lrow_new(int size, ompi_osc_ucxx_worker_t *worker)
{
    ompi_osc_ucxx_lrow_t *row = calloc(1, sizeof(*row) + (size + 1) * sizeof(row->links[0]));
    if (NULL == row) return NULL;
    OBJ_CONSTRUCT(row, ompi_osc_ucxx_lrow_t);
    row->size = size;
    row->links[size].worker = worker;  /* flushes find the worker here */
    return row;
}

/* The worker's row of links for this window, growing the table if needed. */
static ompi_osc_ucxx_link_t *links_for(ompi_osc_ucxx_module_t *module,
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
    return tab->rows[worker->index]->links;
}

ompi_osc_ucxx_link_t *ompi_osc_ucxx_link_resolve(ompi_osc_ucxx_module_t *module,
                                                 ompi_osc_ucxx_worker_t *worker, int target)
{
    ompi_osc_ucxx_link_t *links, *link = NULL;
    ucp_ep_h ep;

    OSC_UCXX_LOCK(&module->setup_lock);
    links = links_for(module, worker);
    if (NULL == links) {
        goto out;
    }
    if (NULL != links[target].ep) {
        link = &links[target];
        goto out;
    }
    if (OMPI_SUCCESS != ompi_osc_ucxx_worker_get_ep(worker,
                                                    ompi_comm_peer_lookup(module->comm, target),
                                                    &ep) ||
        OMPI_SUCCESS != unpack_rkey(module, worker, ep, target, false,
                                    &links[target].data_rkey)) {
        goto out;
    }
    if (state_in_data(&module->peers[target])) {
        links[target].state_rkey = links[target].data_rkey;
    } else if (OMPI_SUCCESS != unpack_rkey(module, worker, ep, target, true,
                                           &links[target].state_rkey)) {
        goto out;
    }
    opal_atomic_wmb();
    links[target].ep = ep;  /* published last: the fast path tests it */
    link = &links[target];
out:
    OSC_UCXX_UNLOCK(&module->setup_lock);
    return link;
}

/* Every link row and table, and the peers' mappings (window teardown). */
void ompi_osc_ucxx_links_release(ompi_osc_ucxx_module_t *module)
{
    ompi_osc_ucxx_ltab_t *tab = module->ltab, *next;

    for (int w = 0; NULL != tab && w < tab->cap; ++w) {
        ompi_osc_ucxx_lrow_t *row = tab->rows[w];
        if (NULL == row) continue;
        ompi_osc_ucxx_worker_t *worker = row->links[row->size].worker;
        for (int i = 0; i < row->size; ++i) {
            ompi_osc_ucxx_link_t *link = &row->links[i];
            give_rkey(module, worker, i, false, link->data_rkey);
            if (link->state_rkey != link->data_rkey) {
                give_rkey(module, worker, i, true, link->state_rkey);
            }
        }
        OBJ_RELEASE(row);
    }
    for (; NULL != tab; tab = next) {
        next = tab->retired;
        free(tab);
    }
    module->ltab = NULL;
    for (int i = 0; NULL != module->peers && i < module->size; ++i) {
        for (int k = 0; k < 2; ++k) {
            give_rkey(module, OSC_UCXX.main_worker, i, 1 == k, module->peers[i].direct_rkeys[k]);
        }
    }
}

static void *map_direct(ompi_osc_ucxx_module_t *module, ucp_ep_h ep, int target, bool state,
                        uint64_t addr)
{
    ompi_osc_ucxx_peer_t *peer = &module->peers[target];
    ucp_rkey_h rkey;
    void *ptr;

    if (OMPI_SUCCESS != unpack_rkey(module, OSC_UCXX.main_worker, ep, target, state, &rkey) ||
        NULL == rkey) {
        return NULL;
    }
    if (UCS_OK != ucp_rkey_ptr(rkey, addr, &ptr)) {
        give_rkey(module, OSC_UCXX.main_worker, target, state, rkey);
        return NULL;
    }
    peer->direct_rkeys[state ? 1 : 0] = rkey;  /* the mapping lives as long as the rkey */
    return ptr;
}

/* Peers' user memory (create and dynamic windows) stays in their private
 * pages: reached by cross-memory attach where the kernel lets us. */
static int32_t user_memory_cma(ompi_osc_ucxx_module_t *module, int target)
{
    ompi_osc_ucxx_peer_t *peer = &module->peers[target];
    if (MPI_WIN_FLAVOR_CREATE != module->flavor && MPI_WIN_FLAVOR_DYNAMIC != module->flavor) {
        return 0;
    }
    return ompi_osc_ucxx_cma_peer(ompi_comm_peer_lookup(module->comm, target), peer->cma_pid,
                                  peer->cma_ident);
}

void ompi_osc_ucxx_peer_resolve_direct(ompi_osc_ucxx_module_t *module, int target)
{
    ompi_osc_ucxx_peer_t *peer = &module->peers[target];
    ucp_ep_h ep;

    OSC_UCXX_LOCK(&module->setup_lock);
    if (peer->resolved) {
        goto out;
    }
    peer->direct_lo = 0;
    peer->direct_hi = UINT64_MAX;
    if (target == module->rank) {
        peer->direct_data = module->base;
        peer->direct_state = module->state;
    } else if (OSC_UCXX.use_direct &&
               OMPI_SUCCESS == ompi_osc_ucxx_worker_get_ep(
                                   OSC_UCXX.main_worker,
                                   ompi_comm_peer_lookup(module->comm, target), &ep)) {
        peer->direct_data = map_direct(module, ep, target, false, peer->base);
        peer->loads_fault = NULL != peer->direct_data;
        if (!state_in_data(peer)) {
            peer->direct_state = map_direct(module, ep, target, true, peer->state);
        } else if (NULL != peer->direct_data) {
            peer->direct_state = (ompi_osc_ucxx_state_t *) (peer->direct_data -
                                                            (peer->base - peer->state));
        }
        if (NULL == peer->direct_data && NULL != peer->direct_state && NULL != module->shseg) {
            /* MPI_Win_allocate_shared: all of the group's segment is mapped here */
            peer->direct_data = module->shseg->map + module->shseg->offsets[target];
        }
        if (NULL == peer->direct_data) {
            peer->cma = user_memory_cma(module, target);
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
                  NULL != peer->direct_data && NULL != peer->direct_state &&
                  0 == peer->direct_lo && UINT64_MAX == peer->direct_hi;
    opal_atomic_wmb();
    peer->resolved = true;
out:
    OSC_UCXX_UNLOCK(&module->setup_lock);
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
