/*
 * Copyright (c) 2026 The osc/ucxx authors. All rights reserved.
 * $COPYRIGHT$
 *
 * Dynamic windows: the region table the peers on the node read.
 *
 * An origin on the node reaches a dynamic window's memory by cross-memory
 * attach, at the addresses themselves; what it needs from the target is
 * whether those bytes are attached.  Asking (osc_ucxx_dynamic.c: an active
 * message) needs a UCX endpoint to the peer, and an endpoint to a peer on
 * the node makes UCX map the peer's shared-memory FIFOs and pick its lanes:
 * most of a first epoch's cost per peer, which no other flavor pays any
 * more on a node.  So the owner keeps a copy of its regions (base and
 * length, sorted by base) in 1 KiB of its shared memory (a state arena's:
 * osc_ucxx_types.h), which a peer maps with the window's state at its
 * first access (one open of the owner's file), and looks the bytes up there
 * with loads.
 *
 * The owner changes the table only in MPI_Win_attach and MPI_Win_detach,
 * under dyn_lock, between two increments of `seq` (odd meanwhile); a reader
 * that finds `seq` odd, or changed by the end of its lookup, looks again.
 * What it finds is the owner's table at some moment of the lookup: memory
 * detached before the access's epoch (a detach that MPI orders before it)
 * is not there, and an access to it fails with MPI_ERR_RMA_RANGE.  More
 * regions than the table holds, and bytes that span regions attached back
 * to back, are left to the asking path.
 */

#include "ompi_config.h"

#include <sched.h>

#include "osc_ucxx_dynamic.h"

/* The owner: its regions into its table (the caller holds dyn_lock). */
void ompi_osc_ucxx_dyntab_publish(ompi_osc_ucxx_module_t *module)
{
    ompi_osc_ucxx_dyntab_t *tab = module->dyntab.tab;
    uint64_t seq, n = (uint64_t) module->nregions;

    if (NULL == tab) return;
    seq = tab->seq;
    __atomic_store_n(&tab->seq, seq + 1, __ATOMIC_RELAXED);
    __atomic_thread_fence(__ATOMIC_RELEASE);
    if (n <= OSC_UCXX_DYNTAB_MAX) {
        for (uint64_t i = 0; i < n; ++i) {
            tab->regions[i].base = module->regions[i].base;
            tab->regions[i].len = module->regions[i].len;
        }
    }
    tab->count = n;
    tab->max_len = module->dyn_max_len;
    __atomic_store_n(&tab->seq, seq + 2, __ATOMIC_RELEASE);
}

/* In `tab` (count regions): does one region hold [lo, hi) (1), do regions
 * back to back (2), or none (0)?  As region_find and covered_to do on the
 * owner's own array (osc_ucxx_dynamic.c). */
static int table_find(const ompi_osc_ucxx_dyntab_t *tab, uint64_t count, uint64_t lo,
                      uint64_t hi)
{
    uint64_t max_len = tab->max_len, reach = lo, from = lo > max_len ? lo - max_len : 0;
    int64_t left = 0, right = (int64_t) count - 1, last = -1, first;

    while (left <= right) {
        int64_t mid = (left + right) / 2;
        if (tab->regions[mid].base <= lo) {
            last = mid;
            left = mid + 1;
        } else {
            right = mid - 1;
        }
    }
    for (int64_t i = last; i >= 0 && tab->regions[i].base + max_len >= lo; --i) {
        if (hi <= tab->regions[i].base + tab->regions[i].len) return 1;
    }
    for (first = last; first >= 0 && tab->regions[first].base >= from; --first) {
    }
    for (int64_t i = first < 0 ? 0 : first; i < (int64_t) count &&
                                            tab->regions[i].base <= reach && reach < hi; ++i) {
        uint64_t end = tab->regions[i].base + tab->regions[i].len;
        if (end > reach) reach = end;
    }
    return reach >= hi ? 2 : 0;
}

int ompi_osc_ucxx_dyntab_resolve(ompi_osc_ucxx_module_t *module, int target, uint64_t lo,
                                 uint64_t hi, ompi_osc_ucxx_path_t *path)
{
    ompi_osc_ucxx_peer_t *peer = &module->peers[target];
    const ompi_osc_ucxx_dyntab_t *tab = peer->dyn_table;
    uint64_t seq, count;
    int found;

    for (;;) {
        seq = __atomic_load_n(&tab->seq, __ATOMIC_ACQUIRE);
        if (seq & 1) {
            sched_yield();   /* (the owner is inside an attach or a detach) */
            continue;
        }
        count = tab->count;
        found = count > OSC_UCXX_DYNTAB_MAX ? -1 : table_find(tab, count, lo, hi);
        __atomic_thread_fence(__ATOMIC_ACQUIRE);
        if (seq == __atomic_load_n(&tab->seq, __ATOMIC_RELAXED)) break;
    }
    if (1 != found) {
        if (0 == found) {
            OSC_UCXX_VERBOSE(20, "window %u: [%#" PRIx64 ", %#" PRIx64 ") not attached at %d",
                             module->cid, lo, hi, target);
            return OMPI_ERR_RMA_RANGE;
        }
        return OMPI_ERR_NOT_AVAILABLE;   /* (the asking path: too many regions, or spans) */
    }
    path->mapped = path->split = path->partial = false;
    path->cma = peer->cma;
    path->link = NULL;
    path->rkey = NULL;
    return OMPI_SUCCESS;
}
