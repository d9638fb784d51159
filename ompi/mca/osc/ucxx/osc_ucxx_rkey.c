/*
 * Copyright (c) 2026 The osc/ucxx authors. All rights reserved.
 * $COPYRIGHT$
 *
 * Peers' rkeys kept across windows.
 *
 * Unpacking a peer's rkey for memory UCX allocated maps that memory here
 * (UCX's sysv transport: shmat) and destroying it unmaps it (shmdt, which
 * also flushes the TLBs of every core the process ran on).  Each window did
 * both for the peer's state segment, once for the direct mapping and once
 * per worker that reached the peer: a good part of a dynamic window's
 * create-attach-put-detach-free cycle on each side.  But the peer reuses its
 * freed windows' allocations (osc_ucxx_memory.c, kept allocations), and
 * windows alive together share state arenas, so the next window names the
 * same one again.  So a worker keeps its unpacked rkeys, keyed by the peer
 * and the allocation's serial number (the peer's count of UCX allocations; a
 * packed rkey's bytes do not identify an allocation: a freed object's name
 * is reused), and hands them out again: windows take and give them, and up
 * to OSC_UCXX_RKEYS_IDLE that no window uses stay, mapping about
 * idle_bytes_max() bytes at most (oldest evicted first).  An rkey kept for
 * an allocation its owner has since freed keeps that memory alive, never
 * reached again, until it is evicted; so only allocations small enough for
 * the owner to keep, and arenas, carry a serial (osc_ucxx_memory.c), and
 * what idle rkeys may hold so is bounded by bytes as the owner's kept
 * allocations are (64 idle rkeys of 4 MiB allocations would hold 256 MiB).
 * Serials count up (a 32-bit count: an old rkey would have to outlive 2^32
 * of its owner's allocations), so a new allocation is never reached through
 * an old rkey.
 */

#include "ompi_config.h"

#include "osc_ucxx_worker.h"

#define OSC_UCXX_RKEYS_IDLE 64

/* The bytes idle rkeys may map: as many as the owners keep of their freed
 * windows, and at least 4 MiB (four window arenas: with osc_ucxx_alloc_cache
 * 0 nothing is kept but the arenas, whose rkeys are still worth keeping). */
static size_t idle_bytes_max(void)
{
    return OSC_UCXX.alloc_cache > (4UL << 20) ? OSC_UCXX.alloc_cache : 4UL << 20;
}

struct ompi_osc_ucxx_rkey_t {
    struct {
        uint64_t proc;
        uint64_t serial;
    } key;
    ucp_rkey_h rkey;
    size_t bytes;                         /* about what it maps */
    int users;                            /* windows' links and mappings */
    ompi_osc_ucxx_rkey_t *prev, *next;    /* the worker's idle list */
};

static void idle_unlink(ompi_osc_ucxx_worker_t *worker, ompi_osc_ucxx_rkey_t *e)
{
    if (e->prev) e->prev->next = e->next; else worker->idle_first = e->next;
    if (e->next) e->next->prev = e->prev; else worker->idle_last = e->prev;
    e->prev = e->next = NULL;
    worker->idle--;
    worker->idle_bytes -= e->bytes;
}

int ompi_osc_ucxx_rkey_take(ompi_osc_ucxx_worker_t *worker, ompi_proc_t *proc, ucp_ep_h ep,
                            uint32_t serial, size_t bytes, const void *packed,
                            ucp_rkey_h *rkey)
{
    ompi_osc_ucxx_rkey_t *e = NULL;
    int rc = OMPI_SUCCESS;

    ompi_osc_ucxx_progress_app_busy();
    if (0 == serial) {
        return UCS_OK == ucp_ep_rkey_unpack(ep, packed, rkey) ? OMPI_SUCCESS : OMPI_ERROR;
    }
    uint64_t key[2] = {ompi_osc_ucxx_proc_key(proc), serial};
    OSC_UCXX_LOCK(&worker->lock);
    if (OPAL_SUCCESS == opal_hash_table_get_value_ptr(&worker->rkeys, key, sizeof(key),
                                                      (void **) &e)) {
        if (0 == e->users++) idle_unlink(worker, e);
        *rkey = e->rkey;
        goto out;
    }
    e = calloc(1, sizeof(*e));
    if (NULL == e || UCS_OK != ucp_ep_rkey_unpack(ep, packed, &e->rkey)) {
        free(e);
        rc = OMPI_ERROR;
        goto out;
    }
    e->key.proc = key[0];
    e->key.serial = key[1];
    e->bytes = bytes;
    e->users = 1;
    if (OPAL_SUCCESS != opal_hash_table_set_value_ptr(&worker->rkeys, &e->key, sizeof(e->key),
                                                      e)) {
        ucp_rkey_destroy(e->rkey);
        free(e);
        rc = OMPI_ERR_OUT_OF_RESOURCE;
        goto out;
    }
    *rkey = e->rkey;
out:
    OSC_UCXX_UNLOCK(&worker->lock);
    return rc;
}

void ompi_osc_ucxx_rkey_give(ompi_osc_ucxx_worker_t *worker, ompi_proc_t *proc,
                             uint32_t serial, ucp_rkey_h rkey)
{
    ompi_osc_ucxx_rkey_t *e = NULL, *evict = NULL;

    if (NULL == rkey) {
        return;
    }
    if (0 == serial) {
        ucp_rkey_destroy(rkey);
        return;
    }
    if (NULL == proc) {
        return;  /* finalize: rkeys_destroy */
    }
    uint64_t key[2] = {ompi_osc_ucxx_proc_key(proc), serial};
    OSC_UCXX_LOCK(&worker->lock);
    if (OPAL_SUCCESS != opal_hash_table_get_value_ptr(&worker->rkeys, key, sizeof(key),
                                                      (void **) &e) ||
        0 != --e->users) {
        goto out;
    }
    e->prev = worker->idle_last;  /* newest last */
    if (e->prev) e->prev->next = e; else worker->idle_first = e;
    worker->idle_last = e;
    worker->idle++;
    worker->idle_bytes += e->bytes;
    while (worker->idle > OSC_UCXX_RKEYS_IDLE ||
           (worker->idle > 0 && worker->idle_bytes > idle_bytes_max())) {
        ompi_osc_ucxx_rkey_t *old = worker->idle_first;
        idle_unlink(worker, old);
        opal_hash_table_remove_value_ptr(&worker->rkeys, &old->key, sizeof(old->key));
        old->next = evict;  /* destroyed outside the lock */
        evict = old;
    }
out:
    OSC_UCXX_UNLOCK(&worker->lock);
    while (NULL != evict) {
        ompi_osc_ucxx_rkey_t *next = evict->next;
        ucp_rkey_destroy(evict->rkey);
        free(evict);
        evict = next;
    }
}

/* The peer table lets the peer with key KEY go (osc_ucxx_ptab.c), its
 * windows' links first: every rkey kept for it, before its endpoint. */
void ompi_osc_ucxx_rkeys_drop(ompi_osc_ucxx_worker_t *worker, uint64_t key)
{
    ompi_osc_ucxx_rkey_t *e, *next, *gone = NULL;

    OSC_UCXX_LOCK(&worker->lock);
    for (e = worker->idle_first; NULL != e; e = next) {
        next = e->next;
        if (e->key.proc != key) continue;
        idle_unlink(worker, e);
        opal_hash_table_remove_value_ptr(&worker->rkeys, &e->key, sizeof(e->key));
        e->next = gone;
        gone = e;
    }
    OSC_UCXX_UNLOCK(&worker->lock);
    while (NULL != gone) {
        next = gone->next;
        ucp_rkey_destroy(gone->rkey);
        free(gone);
        gone = next;
    }
}

/* Worker teardown (finalize): windows are gone, every kept rkey is idle. */
void ompi_osc_ucxx_rkeys_destroy(ompi_osc_ucxx_worker_t *worker)
{
    void *key, *value, *node = NULL;
    size_t key_size;
    int rc = opal_hash_table_get_first_key_ptr(&worker->rkeys, &key, &key_size, &value, &node);
    while (OPAL_SUCCESS == rc) {
        ucp_rkey_destroy(((ompi_osc_ucxx_rkey_t *) value)->rkey);
        free(value);
        rc = opal_hash_table_get_next_key_ptr(&worker->rkeys, &key, &key_size, &value, node,
                                              &node);
    }
    opal_hash_table_remove_all(&worker->rkeys);
    worker->idle_first = worker->idle_last = NULL;
    worker->idle = 0;
    worker->idle_bytes = 0;
}
