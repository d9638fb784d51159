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
 * that finds `seq` odd, or changed by the end of its lookup, looks again
 * (a bounded number of times; then it asks, as below).
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

/* Reads of a table its owner is changing, at most, before the asking
 * path takes over (its wait progresses what it waits for). */
#define DYNTAB_TRIES 1000

int ompi_osc_ucxx_dyntab_resolve(ompi_osc_ucxx_module_t *module, int target, uint64_t lo,
                                 uint64_t hi, ompi_osc_ucxx_path_t *path)
{
    ompi_osc_ucxx_peer_t *peer = &module->peers[target];
    const ompi_osc_ucxx_dyntab_t *tab = peer->dyn_table;
    uint64_t seq, count;
    int found, tries = 0;

    for (;;) {
        if (++tries > DYNTAB_TRIES) return OMPI_ERR_NOT_AVAILABLE;
        seq = __atomic_load_n(&tab->seq, __ATOMIC_ACQUIRE);
        if (seq & 1) {
            sched_yield();   /* (the owner is inside an attach or a detach) */
            continue;
        }
        count = tab->count;
        found = -2;
        if (count <= OSC_UCXX_DYNTAB_MAX) {
            found = ompi_osc_ucxx_regions_lookup((const void *) tab->regions, (int) count,
                                                 sizeof(tab->regions[0]), tab->max_len, lo, hi);
        }
        __atomic_thread_fence(__ATOMIC_ACQUIRE);
        if (seq == __atomic_load_n(&tab->seq, __ATOMIC_RELAXED)) break;
    }
    if (found < 0) {
        if (-1 == found) {
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
