/*
 * Copyright (c) 2026 The osc/ucxx authors. All rights reserved.
 * $COPYRIGHT$
 *
 * Window creation and destruction, and views (the info keys a window
 * honours are in osc_ucxx_wininfo.c; the parts the layers above keep in
 * it are made and dropped through the component's table,
 * ompi_osc_ucxx_window_above).  Creation is one collective exchange: each
 * process's window layout (where in its shared memory its window and state
 * segment lie), then, where some peer reaches memory through UCX, the packed rkeys,
 * and the worker addresses of peers some member cannot find otherwise (the
 * modex has those on the node); links and mappings are made later, on
 * first use (osc_ucxx_target.c).  What every process gave the same is kept
 * once, the rest per peer (module->pub).  It also says whether the process's setup failed
 * (its memory, typically): then every process fails the creation, since
 * each asks for its own size and one cannot leave the others waiting.
 * Nothing follows the exchange collectively: a peer's creation returns once
 * it has everyone's part, so the window is in the table before its part is
 * given, and active messages that reach it before it is ready wait in the
 * queue (osc_ucxx_am.c) instead of behind a closing barrier.
 */

#include "ompi_config.h"

#include <stdint.h>
#include <sys/prctl.h>
#include <sys/sysinfo.h>
#include <unistd.h>

#include "opal/align.h"
#include "opal/util/info_subscriber.h"
#include "opal/util/sys_limits.h"
#include "ompi/proc/proc.h"

#include "osc_ucxx_target.h"   /* (the peers' and links' tables it allocates) */
#include "osc_ucxx_audit.h"
#include "osc_ucxx_share.h"
#include "osc_ucxx_seg.h"

/* The parts of a window the layers above own (osc_ucxx_window.h). */
static const ompi_osc_ucxx_window_above_t *above;

void ompi_osc_ucxx_window_above(const ompi_osc_ucxx_window_above_t *hooks)
{
    above = hooks;
}

/* What each process contributes to the window-creation exchange. */
typedef struct {
    uint64_t base;
    uint64_t size;
    uint64_t state;
    uint64_t data_off, state_off;  /* where its window memory (MPI_Win_allocate's) and
                                    * state lie in its shared memory */
    ompi_osc_ucxx_segid_t id;      /* how to map it, and cross-memory attach's probe */
    int32_t disp_unit;
    uint32_t data_rkey_len;
    uint32_t state_rkey_len;
    uint32_t addr_len;
    uint32_t flags;       /* WIRE_* */
    uint32_t am_sysbuf;   /* active-message staging it keeps per origin */
    uint32_t acc_shift;   /* its accumulate stripe block, log2 */
    uint32_t ucx_modes;   /* how UCX applies its atomics (OSC_UCXX_MODES_*) */
    uint32_t data_serial, state_serial;  /* its allocations' numbers (rkeys kept by them) */
    uint32_t uid;         /* peers of another user may not map its memory */
    int32_t status;       /* its setup failed (an OMPI error code): everyone gives up */
} wire_info_t;

#define WIRE_NEED_FAR  0x01  /* the worker address of a peer on another node is new to it */
#define WIRE_NEED_NEAR 0x02  /* ... of a peer on its node */
#define WIRE_IN_MODEX  0x04  /* its worker address and identity are in the modex */
#define WIRE_MAPPABLE  0x08  /* peers on the node may map its shared memory, and it theirs */
#define WIRE_FENCE     0x10  /* osc_ucxx_fence_barrier: all must agree to use it */
#define WIRE_NODE_REFUSED 0x20  /* could not map the node's segment (osc_ucxx_share.c) */
#define WIRE_KEYS_INLINE 0x40  /* its rkeys travel in its record (below) */

/* A window that spans nodes needs the rkeys of every peer (UCX reaches the
 * far ones), and a second collective for them cost each creation there a
 * round trip more: its record carries them where they fit (a packed rkey
 * holds a few small keys per memory domain), and only where some do not
 * does the second exchange carry them all. */
#define WIRE_INLINE_KEYS 256

/* A new handle on `core` (which gains a reference). */
ompi_osc_ucxx_view_t *ompi_osc_ucxx_view_new(ompi_osc_ucxx_module_t *core, bool original)
{
    ompi_osc_ucxx_view_t *view = calloc(1, sizeof(*view));
    if (NULL == view) {
        return NULL;
    }
    above->view_init(view);
    view->core = core;
    view->original = original;
    view->acc_ordered = true;
    view->am_order = OSC_UCXX_AM_ORDER_ALL;
    ompi_osc_ucxx_add32(&core->refcount, 1);
    return view;
}

/* ------------------------------------------------------------------------- */
/* Memory (allocations, kept ones and state arenas: osc_ucxx_memory.c) */

static int pack_rkey(ucp_mem_h memh, void **buf, size_t *len)
{
    *buf = NULL;
    *len = 0;
    if (NULL == memh) {
        return OMPI_SUCCESS;
    }
    return UCS_OK == ucp_rkey_pack(OSC_UCXX.context, memh, buf, len) ? OMPI_SUCCESS
                                                                    : OMPI_ERROR;
}

/* ------------------------------------------------------------------------- */
/* The collective exchange: window layout, rkeys, and worker addresses of
 * peers some member has not met yet. */

/* WIRE_NEED_*: whose worker addresses this process lacks. */
static uint32_t addr_needs(ompi_communicator_t *comm, int me)
{
    uint32_t need = 0;
    for (int i = 0; i < ompi_comm_size(comm) && need != (WIRE_NEED_FAR | WIRE_NEED_NEAR); ++i) {
        ompi_proc_t *proc = ompi_comm_peer_lookup(comm, i);
        if (i != me && !ompi_osc_ucxx_peer_addr_known(proc)) {
            need |= OPAL_PROC_ON_LOCAL_NODE(proc->super.proc_flags) ? WIRE_NEED_NEAR
                                                                      : WIRE_NEED_FAR;
        }
    }
    return need;
}

/* May peers on this node map our shared memory (and we theirs)? */
static bool mappable_here(ompi_osc_ucxx_segid_t *id)
{
    memset(id, 0, sizeof(*id));
    return OSC_UCXX.use_direct && ompi_osc_ucxx_seg_self(id) &&
           1 == prctl(PR_GET_DUMPABLE, 0, 0, 0, 0);  /* (/proc/<pid>/fd asks for it) */
}

static void wire_mine(ompi_osc_ucxx_module_t *module, int local_rc, wire_info_t *mine)
{
    memset(mine, 0, sizeof(*mine));
    mine->status = local_rc;
    mine->base = (uint64_t) (uintptr_t) module->base;
    mine->size = module->len;
    mine->state = (uint64_t) (uintptr_t) module->state;
    /* (a dynamic window has no memory of ours: there, where its region
     * table lies, which the peers on the node map with its state) */
    mine->data_off = MPI_WIN_FLAVOR_DYNAMIC == module->flavor ? module->dyntab.off
                                                             : module->data_off;
    mine->state_off = module->state_off;
    mine->disp_unit = module->disp_unit;
    mine->flags = addr_needs(module->comm, module->rank) |
                  (OSC_UCXX.modex_ok ? WIRE_IN_MODEX : 0) |
                  (mappable_here(&mine->id) ? WIRE_MAPPABLE : 0) |
                  (OSC_UCXX.fence_barrier ? WIRE_FENCE : 0) |
                  (module->node_refused ? WIRE_NODE_REFUSED : 0);
    mine->am_sysbuf = (uint32_t) OSC_UCXX.am_sysbuf;
    mine->acc_shift = module->acc_shift;
    mine->ucx_modes = OSC_UCXX.device_atomics ? OSC_UCXX_MODES_DEVICE : OSC_UCXX_MODES_CPU;
    mine->data_serial = module->data_serial;
    mine->state_serial = module->state_serial;
    mine->uid = (uint32_t) geteuid();
}

/* A field every process gave the same: once, in `*one`; else a copy per
 * peer in `*per` (elem bytes each). */
static int keep_field(const wire_info_t *all, int n, size_t offset, size_t elem, void *one,
                      void **per)
{
    const char *first = (const char *) &all[0] + offset;
    int i;

    for (i = 1; i < n && 0 == memcmp(first, (const char *) &all[i] + offset, elem); ++i) {
    }
    memcpy(one, first, elem);
    if (i == n) return OMPI_SUCCESS;
    *per = malloc(n * elem);
    if (NULL == *per) return OMPI_ERR_OUT_OF_RESOURCE;
    for (i = 0; i < n; ++i) memcpy((char *) *per + i * elem, (const char *) &all[i] + offset, elem);
    return OMPI_SUCCESS;
}

/* What peers published, kept once where uniform.  Window memory addresses
 * always: messages (active messages, accumulates by message) carry the
 * target's own addresses.  State segment addresses only where some peer
 * uses UCX atomics. */
static int keep_published(ompi_osc_ucxx_module_t *module, const wire_info_t *all)
{
    int n = module->size, rc = OMPI_SUCCESS;
    uint32_t acc_shift;

#define KEEP(field, one, per)                                                  \
    if (OMPI_SUCCESS == rc)                                                    \
        rc = keep_field(all, n, offsetof(wire_info_t, field), sizeof(all[0].field), one, \
                        (void **) per)
    KEEP(size, &module->pub.size, &module->pub_size);
    KEEP(disp_unit, &module->pub.disp_unit, &module->pub_disp);
    KEEP(am_sysbuf, &module->pub.am_sysbuf, &module->pub_am_sysbuf);
    KEEP(data_off, &module->pub.data_off, &module->pub_data_off);
    KEEP(state_off, &module->pub.state_off, &module->pub_state_off);
    KEEP(base, &module->pub.base, &module->pub_base);
    if (!module->maps_all) KEEP(state, &module->pub.state, &module->pub_state);
    KEEP(acc_shift, &acc_shift, &module->pub_acc_shift);
#undef KEEP
    module->pub.acc_shift = acc_shift;
    if (OMPI_SUCCESS == rc && NULL != module->pub_acc_shift) {
        uint32_t *wide = (uint32_t *) module->pub_acc_shift;   /* (kept a byte each) */
        module->pub_acc_shift = malloc(n);
        if (NULL == module->pub_acc_shift) rc = OMPI_ERR_OUT_OF_RESOURCE;
        for (int i = 0; OMPI_SUCCESS == rc && i < n; ++i) {
            module->pub_acc_shift[i] = (uint8_t) wide[i];
        }
        free(wide);
    }
    return rc;
}

/* Which peers we may not map (some process has no shared memory, or
 * belongs to another user), where not all may; and how to map the peers on
 * the node, from the exchange even where the modex has it too (a modex
 * lookup asks the local server: a round trip per peer at the first
 * access). */
static int keep_mapping(ompi_osc_ucxx_module_t *module, const wire_info_t *all, bool all_mappable)
{
    const wire_info_t *me = &all[module->rank];

    if (!all_mappable) {
        module->pub_unmappable = malloc(module->size * sizeof(bool));
        if (NULL == module->pub_unmappable) return OMPI_ERR_OUT_OF_RESOURCE;
        for (int i = 0; i < module->size; ++i) {
            module->pub_unmappable[i] = !(all[i].flags & WIRE_MAPPABLE) ||
                                        !(me->flags & WIRE_MAPPABLE) || all[i].uid != me->uid;
        }
    }
    for (int i = 0; i < module->size; ++i) {
        ompi_proc_t *proc;
        if (i == module->rank || 0 == all[i].id.pid) continue;
        proc = ompi_comm_peer_lookup(module->comm, i);
        if (OPAL_PROC_ON_LOCAL_NODE(proc->super.proc_flags)) {
            ompi_osc_ucxx_ptab_set_identity(proc, &all[i].id);
        }
    }
    return OMPI_SUCCESS;
}

/* module->rkeys and their blobs: peer i's packed data and state rkeys at
 * src + (displs ? displs[i] : i * stride). */
static int keep_rkeys(ompi_osc_ucxx_module_t *module, const wire_info_t *all, const char *src,
                      const int *displs, size_t stride)
{
    size_t total = 0;

    for (int i = 0; i < module->size; ++i) total += all[i].data_rkey_len + all[i].state_rkey_len;
    module->blobs = malloc(total + 1);
    module->rkeys = calloc((unsigned) module->size, sizeof(*module->rkeys));
    if (NULL == module->blobs || NULL == module->rkeys) return OMPI_ERR_OUT_OF_RESOURCE;
    total = 0;
    for (int i = 0; i < module->size; ++i) {
        size_t keys = all[i].data_rkey_len + all[i].state_rkey_len;
        module->rkeys[i].blob = (uint32_t) total;
        module->rkeys[i].data_len = (uint16_t) all[i].data_rkey_len;
        module->rkeys[i].state_len = (uint16_t) all[i].state_rkey_len;
        module->rkeys[i].data_serial = all[i].data_serial;
        module->rkeys[i].state_serial = all[i].state_serial;
        memcpy(module->blobs + total, src + (NULL != displs ? (size_t) displs[i] : i * stride),
               keys);
        total += keys;
    }
    return OMPI_SUCCESS;
}

/* The rkeys (where some peer may use them) and the worker addresses (where
 * some process lacks one the modex does not give it): an allgatherv. */
static int exchange_keys(ompi_osc_ucxx_module_t *module, const wire_info_t *all, bool rkeys,
                         bool addrs, const void *data_rkey, const void *state_rkey)
{
    ompi_communicator_t *comm = module->comm;
    const wire_info_t *me = &all[module->rank];
    int size = module->size, rc, *counts = malloc(size * sizeof(int)),
        *displs = malloc(size * sizeof(int));
    size_t data_rkey_len = rkeys ? me->data_rkey_len : 0;
    size_t state_rkey_len = rkeys ? me->state_rkey_len : 0, addr_len = 0, total = 0;
    size_t blob_total = 0;
    const void *addr = NULL;
    char *sendbuf = NULL, *recvbuf = NULL;

    rc = NULL == counts || NULL == displs ? OMPI_ERR_OUT_OF_RESOURCE : OMPI_SUCCESS;
    if (OMPI_SUCCESS == rc && addrs) rc = ompi_osc_ucxx_main_address(&addr, &addr_len);
    if (OMPI_SUCCESS != rc) goto out;  /* (cannot be: the address was packed before) */
    for (int i = 0; i < size; ++i) {
        size_t keys = rkeys ? all[i].data_rkey_len + all[i].state_rkey_len : 0;
        counts[i] = (int) (keys + (addrs ? all[i].addr_len : 0));
        displs[i] = (int) total;
        total += counts[i];
        blob_total += keys;
    }
    sendbuf = malloc(counts[module->rank] + 1);
    recvbuf = malloc(total + 1);
    if (NULL == sendbuf || NULL == recvbuf) {
        rc = OMPI_ERR_OUT_OF_RESOURCE;
        goto out;
    }
    memcpy(sendbuf, data_rkey, data_rkey_len);
    memcpy(sendbuf + data_rkey_len, state_rkey, state_rkey_len);
    if (addrs) memcpy(sendbuf + data_rkey_len + state_rkey_len, addr, addr_len);
    rc = comm->c_coll->coll_allgatherv(sendbuf, counts[module->rank], MPI_BYTE, recvbuf, counts,
                                       displs, MPI_BYTE, comm,
                                       comm->c_coll->coll_allgatherv_module);
    if (OMPI_SUCCESS == rc && rkeys) rc = keep_rkeys(module, all, recvbuf, displs, 0);
    for (int i = 0; OMPI_SUCCESS == rc && i < size; ++i) {
        size_t keys = rkeys ? all[i].data_rkey_len + all[i].state_rkey_len : 0;
        ompi_proc_t *proc;
        if (!addrs) continue;
        /* (the modex gives those on the node that published theirs; ours
         * is kept too where it does not: UCX atomics on our own state go
         * through an endpoint to ourselves) */
        proc = ompi_comm_peer_lookup(comm, i);
        if ((all[i].flags & WIRE_IN_MODEX) &&
            (i == module->rank || OPAL_PROC_ON_LOCAL_NODE(proc->super.proc_flags))) {
            continue;
        }
        rc = ompi_osc_ucxx_peer_addr_store(proc, recvbuf + displs[i] + keys, all[i].addr_len);
    }
    OSC_UCXX_VERBOSE(10, "window %u: exchanged %zu bytes of rkeys%s", module->cid, blob_total,
                     addrs ? " and worker addresses" : "");
out:
    free(counts);
    free(displs);
    free(sendbuf);
    free(recvbuf);
    return rc;
}

/* `*again`: some process could not map the node's segment; nothing is
 * kept, every process is to take its own memory and exchange again. */
static int exchange(ompi_osc_ucxx_module_t *module, int local_rc, bool *again)
{
    ompi_communicator_t *comm = module->comm;
    int size = module->size, rc;
    wire_info_t mine, *all = NULL;
    char *recs = NULL;   /* the records with their inline rkeys */
    uint32_t any = 0, every = ~0u, uid_lo = UINT32_MAX, uid_hi = 0;
    void *data_rkey = NULL, *state_rkey = NULL;
    size_t data_rkey_len = 0, state_rkey_len = 0, addr_len = 0;
    const void *addr;
    bool rkeys, addrs, spans = !ompi_osc_ucxx_all_on_node(module);  /* (alike everywhere) */
    size_t rec = sizeof(wire_info_t) + (spans ? WIRE_INLINE_KEYS : 0);

    *again = false;
    if (OMPI_SUCCESS == local_rc) {
        local_rc = pack_rkey(module->data_memh, &data_rkey, &data_rkey_len);
    }
    if (OMPI_SUCCESS == local_rc) {
        /* (none where the state lies in the window's memory's allocation:
         * peers reach it with the data rkey) */
        local_rc = module->state_memh == module->data_memh
                       ? OMPI_SUCCESS
                       : pack_rkey(module->state_memh, &state_rkey, &state_rkey_len);
    }
    if (OMPI_SUCCESS == local_rc) {
        local_rc = ompi_osc_ucxx_main_address(&addr, &addr_len);
    }
    wire_mine(module, local_rc, &mine);
    mine.data_rkey_len = (uint32_t) data_rkey_len;
    mine.state_rkey_len = (uint32_t) state_rkey_len;
    mine.addr_len = (uint32_t) addr_len;
    if (spans && OSC_UCXX.inline_keys && data_rkey_len + state_rkey_len <= WIRE_INLINE_KEYS) {
        mine.flags |= WIRE_KEYS_INLINE;
    }
    all = malloc(size * sizeof(*all));
    recs = malloc((size + 1) * rec);
    module->peers = calloc(size, sizeof(*module->peers));
    if (NULL == all || NULL == recs || NULL == module->peers) {
        rc = OMPI_ERR_OUT_OF_RESOURCE;
        goto out;
    }
    memcpy(recs + size * rec, &mine, sizeof(mine));   /* (the last record: what is sent) */
    memset(recs + size * rec + sizeof(mine), 0, rec - sizeof(mine));
    if (mine.flags & WIRE_KEYS_INLINE) {
        memcpy(recs + size * rec + sizeof(mine), data_rkey, data_rkey_len);
        memcpy(recs + size * rec + sizeof(mine) + data_rkey_len, state_rkey, state_rkey_len);
    }
    rc = comm->c_coll->coll_allgather(recs + size * rec, (int) rec, MPI_BYTE, recs, (int) rec,
                                      MPI_BYTE, comm, comm->c_coll->coll_allgather_module);
    if (OMPI_SUCCESS != rc) {
        goto out;
    }
    for (int i = 0; i < size; ++i) memcpy(&all[i], recs + i * rec, sizeof(*all));
    module->ucx_modes = 0;
    for (int i = 0; i < size; ++i) {
        any |= all[i].flags;
        every &= all[i].flags;
        if (all[i].uid < uid_lo) uid_lo = all[i].uid;
        if (all[i].uid > uid_hi) uid_hi = all[i].uid;
        module->ucx_modes |= (uint8_t) all[i].ucx_modes;
        if (OMPI_SUCCESS == rc && OMPI_SUCCESS != all[i].status) {
            rc = i == module->rank ? local_rc : all[i].status;
            OSC_UCXX_VERBOSE(10, "window creation: rank %d failed (%d), so does this one", i,
                             all[i].status);
        }
    }
    *again = OMPI_SUCCESS == rc && (any & WIRE_NODE_REFUSED);
    if (OMPI_SUCCESS != rc || *again) {
        goto out;
    }
    /* Everyone sees the same flags, so everyone agrees on what follows. */
    module->fence_by_state = 0 != (every & WIRE_FENCE);
    module->on_node = ompi_osc_ucxx_all_on_node(module);
    module->maps_all = module->on_node && (every & WIRE_MAPPABLE) && uid_lo == uid_hi;
    rc = keep_published(module, all);
    if (OMPI_SUCCESS == rc) {
        rc = keep_mapping(module, all, (every & WIRE_MAPPABLE) && uid_lo == uid_hi);
    }
    if (OMPI_SUCCESS != rc) goto out;
    /* rkeys where some peer may reach memory through UCX: not where every
     * peer maps every other's window memory and state */
    rkeys = !(module->maps_all && (MPI_WIN_FLAVOR_ALLOCATE == module->flavor ||
                                   MPI_WIN_FLAVOR_SHARED == module->flavor ||
                                   MPI_WIN_FLAVOR_DYNAMIC == module->flavor));
    addrs = (any & WIRE_NEED_FAR) || ((any & WIRE_NEED_NEAR) && !(every & WIRE_IN_MODEX));
    if (rkeys && (every & WIRE_KEYS_INLINE)) {
        rc = keep_rkeys(module, all, recs + sizeof(wire_info_t), NULL, rec);
        rkeys = false;   /* (kept) */
    }
    if (OMPI_SUCCESS == rc && (rkeys || addrs)) {
        rc = exchange_keys(module, all, rkeys, addrs, data_rkey, state_rkey);
    }

out:
    if (*again) {
        free(module->peers);
        module->peers = NULL;
    }
    if (NULL != data_rkey) ucp_rkey_buffer_release(data_rkey);
    if (NULL != state_rkey) ucp_rkey_buffer_release(state_rkey);
    free(recs);
    free(all);
    return rc;
}

/* ------------------------------------------------------------------------- */

static void module_construct(ompi_osc_ucxx_module_t *module)
{
    memset((char *) module + sizeof(module->super), 0, sizeof(*module) - sizeof(module->super));
    OBJ_CONSTRUCT(&module->setup_lock, opal_mutex_t);
    OBJ_CONSTRUCT(&module->post_lock, opal_mutex_t);
    OBJ_CONSTRUCT(&module->dyn_lock, opal_mutex_t);
    OBJ_CONSTRUCT(&module->dyn_serial_lock, opal_mutex_t);
    module->data_off = module->state_off = module->dyntab.off = OSC_UCXX_SEG_NONE;
}

static void module_destruct(ompi_osc_ucxx_module_t *module)
{
    above->core_fini(module);  /* (links, epochs, protocols' state: before the memory) */
    if (NULL != module->data_memh && 0 != module->data_len) {  /* MPI_Win_allocate's */
        ompi_osc_ucxx_mem_give(module->base, module->data_memh, module->data_len,
                               module->data_serial, module->data_off);
    } else if (NULL != module->data_memh) {
        ucp_mem_unmap(OSC_UCXX.context, module->data_memh);
    }
    ompi_osc_ucxx_share_segment_free(module->shseg);  /* after its registration */
    if (NULL != module->posts.memh) {
        ompi_osc_ucxx_mem_give((void *) module->posts.slots, module->posts.memh,
                               module->posts.len, module->posts.serial, module->posts.off);
    }
    if (NULL != module->dyntab.tab) {
        ompi_osc_ucxx_mem_give(module->dyntab.tab, module->dyntab.memh, module->dyntab.len,
                               module->dyntab.serial, module->dyntab.off);
    }
    if (NULL != module->state_memh) {
        ompi_osc_ucxx_mem_give(module->state, module->state_memh, module->state_len,
                               module->state_serial, module->state_off);
    }
    ompi_osc_ucxx_wcomm_put(module);
    ompi_osc_ucxx_audit_release(module);
    for (int i = 0; NULL != module->peers && i < module->size; ++i) {
        free(module->peers[i].prefaulted);
    }
    free(module->peers);
    free(module->blobs);
    free(module->rkeys);
    free(module->pub_size);
    free(module->pub_base);
    free(module->pub_state);
    free(module->pub_data_off);
    free(module->pub_state_off);
    free(module->pub_disp);
    free(module->pub_acc_shift);
    free(module->pub_am_sysbuf);
    free(module->pub_unmappable);
    free(module->posts_seen);
    free(module->fence_sent);
    free(module->am_hints);
    OBJ_DESTRUCT(&module->setup_lock);
    OBJ_DESTRUCT(&module->post_lock);
    OBJ_DESTRUCT(&module->dyn_lock);
    OBJ_DESTRUCT(&module->dyn_serial_lock);
}

OBJ_CLASS_INSTANCE(ompi_osc_ucxx_module_t, opal_object_t, module_construct, module_destruct);

void ompi_osc_ucxx_module_release(ompi_osc_ucxx_module_t *module)
{
    OBJ_RELEASE(module);
}

/* Are all ranks of the window on our node? */
bool ompi_osc_ucxx_all_on_node(ompi_osc_ucxx_module_t *module)
{
    if (module->size > opal_process_info.num_local_peers + 1) {
        return false;  /* (and no ompi_proc_t is made for far ranks) */
    }
    for (int i = 0; i < module->size; ++i) {
        ompi_proc_t *proc = ompi_comm_peer_lookup(module->comm, i);
        if (i != module->rank && !OPAL_PROC_ON_LOCAL_NODE(proc->super.proc_flags)) {
            return false;
        }
    }
    return true;
}

/* Creation-only active-message keys: am_buf_interleave_am_detach, and
 * am_user_buf_<rank> (one key per rank, so not subscribable: read here). */
static void read_am_keys(ompi_osc_ucxx_module_t *module, struct opal_info_t *info)
{
    int nkeys = 0, flag;
    char key[MPI_MAX_INFO_KEY + 1];

    module->am_interleave = true;
    if (NULL == info) return;
    if (OPAL_SUCCESS == opal_info_get_bool(info, (char *) "am_buf_interleave_am_detach",
                                           &module->am_interleave, &flag) && !flag) {
        module->am_interleave = true;
    }
    (void) opal_info_get_nkeys(info, &nkeys);
    for (int i = 0; i < nkeys; ++i) {
        if (OPAL_SUCCESS != ompi_osc_ucxx_info_nthkey(info, i, key, sizeof(key)) ||
            0 != strncmp(key, "am_user_buf_", 12)) {
            continue;
        }
        char buf[64];
        if (OPAL_SUCCESS != ompi_osc_ucxx_info_get(info, key, buf, sizeof(buf), &flag) || !flag) {
            continue;
        }
        void *grown = realloc(module->am_hints, (module->am_nhints + 1) *
                                                    sizeof(*module->am_hints));
        if (NULL == grown) return;
        module->am_hints = grown;
        module->am_hints[module->am_nhints].rank = atoi(key + 12);
        module->am_hints[module->am_nhints].bytes = strtoull(buf, NULL, 10);
        module->am_nhints++;
    }
}

/* Can the machine back `len` bytes of shared memory at all?  Past its
 * memory and swap together, nothing can: refuse before UCX tries, because
 * its POSIX allocator writes the whole length into /dev/shm to test that the
 * space exists, which fills /dev/shm and takes the OOM killer first. */
static bool machine_can_hold(size_t len)
{
    /* The memory alone, read once: a length within it needs no sysinfo,
     * a system call that walks every block device under a kernel lock on
     * each window creation.  Threads racing here store the same value. */
    static size_t ram_cached;
    struct sysinfo si;

    if (len <= __atomic_load_n(&ram_cached, __ATOMIC_RELAXED)) return true;
    if (0 != sysinfo(&si)) return true;  /* cannot tell: let UCX decide */
    __atomic_store_n(&ram_cached, (size_t) si.totalram * si.mem_unit, __ATOMIC_RELAXED);
    return len / si.mem_unit <= (size_t) si.totalram + si.totalswap;
}

/* PSCW post slots: one per origin rank below OSC_UCXX_POST_SLOTS. */
static size_t posts_count(const ompi_osc_ucxx_module_t *module)
{
    return (size_t) (module->size < OSC_UCXX_POST_SLOTS ? module->size : OSC_UCXX_POST_SLOTS);
}

/* An MPI_Win_allocate window's memory and state in the node's segment
 * (osc_ucxx_share.c), which every rank maps; nothing registered: every
 * peer maps it. */
static int node_memory(ompi_osc_ucxx_module_t *module, void **base)
{
    if (module->len > 0) module->base = module->shseg->map + module->shseg->offsets[module->rank];
    module->state = ompi_osc_ucxx_shseg_state(module->shseg, module->rank);
    memset(module->state, 0, module->state_size);
    module->shseg->locks[module->rank].value = 0;
    *base = module->base;
    return OMPI_SUCCESS;
}

/* A dynamic window's region table for the peers on the node (zeroed: no
 * region), where they may map our memory; without it they ask us. */
static void dyntab_memory(ompi_osc_ucxx_module_t *module)
{
    ompi_osc_ucxx_segid_t id;
    void *tab = NULL;

    module->dyntab.off = OSC_UCXX_SEG_NONE;
    if (!mappable_here(&id) ||
        OMPI_SUCCESS != ompi_osc_ucxx_state_take(OSC_UCXX_DYNTAB_SIZE, &tab, &module->dyntab.memh,
                                                 &module->dyntab.serial, &module->dyntab.len,
                                                 &module->dyntab.off)) {
        module->dyntab.off = OSC_UCXX_SEG_NONE;
        return;
    }
    module->dyntab.tab = tab;
}

/* The window's memory: ours where we allocate it (osc_ucxx_memory.c), so
 * peers on the node map it; registered where the user owns it.  An
 * allocated window's state segment is not in its pages but next to them
 * in its window arena, where it is small (a peer maps both with one
 * mapping, and reaches the state through UCX with the data rkey), else in
 * a state arena (state_memory), as every other window's.  Failures are
 * this process's; the caller makes them everyone's. */
static int window_memory(ompi_osc_ucxx_module_t *module, void **base, size_t size, int flavor,
                         opal_info_t *info)
{
    int rc;

    if (MPI_WIN_FLAVOR_ALLOCATE == flavor) {
        module->base = NULL;
        *base = NULL;
        if (module->size > 1 && !module->node_left && ompi_osc_ucxx_all_on_node(module)) {
            ompi_osc_ucxx_segid_t id;
            rc = ompi_osc_ucxx_share_node(module->comm, size, module->state_size,
                                          posts_count(module) * sizeof(uint64_t),
                                          mappable_here(&id), &module->shseg,
                                          &module->node_refused);
            if (OMPI_SUCCESS != rc) return rc;
            if (NULL != module->shseg) return node_memory(module, base);
        }
        if (size > 0) {
            void *all = NULL;
            if (!machine_can_hold(size)) {
                opal_show_help("help-osc-ucxx.txt", "window too large", true, size,
                               "the machine's memory and swap together");
                return MPI_ERR_NO_MEM;
            }
            ompi_osc_ucxx_wstate_t st = {.size = module->state_size};
            rc = ompi_osc_ucxx_window_take(size, &st, &all, &module->data_memh,
                                           &module->data_serial, &module->data_len,
                                           &module->data_off);
            if (OMPI_SUCCESS != rc) return rc;
            module->base = all;
            if (NULL != st.addr) {
                module->state = st.addr;
                module->state_memh = module->data_memh;
                module->state_serial = module->data_serial;
                module->state_len = st.len;
                module->state_off = st.off;
            }
        }
        *base = module->base;
    } else if (MPI_WIN_FLAVOR_DYNAMIC == flavor) {
        module->base = NULL;   /* displacements are addresses; memory comes by attach */
        module->len = 0;
        dyntab_memory(module);
    } else if (MPI_WIN_FLAVOR_SHARED == flavor) {
        if (!ompi_osc_ucxx_all_on_node(module)) {
            OSC_UCXX_VERBOSE(10, "MPI_Win_allocate_shared over ranks on several nodes");
            return OMPI_ERR_RMA_SHARED;  /* the same verdict on every rank */
        }
        rc = ompi_osc_ucxx_share_segment(module->comm, size,
                                         ompi_osc_ucxx_info_flag(info, "alloc_shared_noncontig"),
                                         &module->shseg);
        if (OMPI_SUCCESS != rc) return rc;
        module->base = module->shseg->map + module->shseg->offsets[module->rank];
        *base = module->base;
        if (size > 0) {
            void *addr = module->base;  /* registered for peers that cannot map it */
            return ompi_osc_ucxx_mem_map(&addr, size, false, &module->data_memh,
                              &module->data_serial);
        }
    } else {
        module->base = *base;
        if (size > 0) {
            void *addr = *base;
            return ompi_osc_ucxx_mem_map(&addr, size, false, &module->data_memh,
                              &module->data_serial);
        }
    }
    return OMPI_SUCCESS;
}

/* The PSCW post slots, zeroed, a slot per origin rank below
 * OSC_UCXX_POST_SLOTS, from a post arena (osc_ucxx_memory.c), the state
 * saying where they lie for the peers that map it; or in the node's
 * segment, where peers find them without it. */
static int posts_memory(ompi_osc_ucxx_module_t *module)
{
    void *slots = NULL;
    int rc;

    if (NULL != module->shseg && 0 != module->shseg->posts_stride) {
        /* (in the node's segment: peers find them there) */
        module->posts.slots = ompi_osc_ucxx_shseg_posts(module->shseg, module->rank);
        memset((void *) module->posts.slots, 0, posts_count(module) * sizeof(uint64_t));
        module->state->posts_at.value = OSC_UCXX_SEG_NONE;
        return OMPI_SUCCESS;
    }
    rc = ompi_osc_ucxx_posts_take(posts_count(module) * sizeof(uint64_t), &slots,
                                  &module->posts.memh, &module->posts.serial,
                                  &module->posts.len, &module->posts.off);
    if (OMPI_SUCCESS != rc) return rc;
    module->posts.slots = slots;
    module->state->posts_at.value = module->posts.off;
    return OMPI_SUCCESS;
}

/* The state segment, zeroed, from a state arena (osc_ucxx_memory.c) where
 * it did not come with the window's memory; and the post slots. */
static int state_memory(ompi_osc_ucxx_module_t *module)
{
    void *state = NULL;
    int rc;

    if (NULL == module->state) {
        rc = ompi_osc_ucxx_state_take(module->state_size, &state, &module->state_memh,
                                      &module->state_serial, &module->state_len,
                                      &module->state_off);
        if (OMPI_SUCCESS != rc) return rc;
        module->state = state;
    }
    return posts_memory(module);
}

/* Some process could not map the node's segment: every process gives it
 * up and takes its own memory, as where the segment is not made (those
 * that could not have theirs already). */
static int node_leave(ompi_osc_ucxx_module_t *module, void **base, size_t size,
                      opal_info_t *info)
{
    int rc;

    module->node_left = true;
    module->node_refused = false;
    if (NULL == module->shseg) return OMPI_SUCCESS;
    ompi_osc_ucxx_share_segment_free(module->shseg);
    module->shseg = NULL;
    module->state = NULL;
    module->posts.slots = NULL;
    rc = window_memory(module, base, size, MPI_WIN_FLAVOR_ALLOCATE, info);
    return OMPI_SUCCESS == rc ? state_memory(module) : rc;
}

int ompi_osc_ucxx_window_create(struct ompi_win_t *win, void **base, size_t size,
                                int disp_unit, struct ompi_communicator_t *comm,
                                struct opal_info_t *info, int flavor, int *model)
{
    ompi_osc_ucxx_module_t *module;
    ompi_osc_ucxx_view_t *view = NULL;
    bool again = false;
    int rc;

    rc = ompi_osc_ucxx_context_init();
    if (OMPI_SUCCESS != rc) {
        return rc;
    }
    (void) ompi_osc_ucxx_quiesce_register();  /* (MPI_Finalize: osc_ucxx_quiesce.c) */

    module = OBJ_NEW(ompi_osc_ucxx_module_t);
    if (NULL == module) {
        return OMPI_ERR_OUT_OF_RESOURCE;
    }
    module->flavor = flavor;
    module->disp_unit = disp_unit;
    module->len = size;
    module->same_size = ompi_osc_ucxx_info_flag(info, "same_size");
    module->same_disp_unit = ompi_osc_ucxx_info_flag(info, "same_disp_unit");
    module->acc_shift = ompi_osc_ucxx_granularity_shift(info);
    read_am_keys(module, info);

    rc = ompi_osc_ucxx_wcomm_get(module, comm);
    if (OMPI_SUCCESS != rc) {
        goto fail;
    }
    module->rank = ompi_comm_rank(module->comm);
    module->size = ompi_comm_size(module->comm);

    /* The state segment: lock word and counters (osc_ucxx_state.c). */
    module->state_size = sizeof(ompi_osc_ucxx_state_t);

    rc = window_memory(module, base, size, flavor, info);
    if (OMPI_SUCCESS == rc) rc = state_memory(module);
    if (OMPI_SUCCESS == rc) {
        module->ltab = calloc(1, sizeof(ompi_osc_ucxx_ltab_t) +
                                     OSC_UCXX.workers_cap * sizeof(ompi_osc_ucxx_lrow_t *));
        if (NULL == module->ltab) rc = OMPI_ERR_OUT_OF_RESOURCE;
        else module->ltab->cap = OSC_UCXX.workers_cap;
    }
    if (OMPI_SUCCESS == rc) rc = above->core_init(module);
    /* In the table before the exchange: a peer may send us active messages
     * as soon as its creation returns, which it can only do once we have
     * given our part of the exchange; they wait in the queue until this
     * window is ready (osc_ucxx_am.c), so no barrier ends the creation. */
    OSC_UCXX_LOCK(&OSC_UCXX.lock);
    opal_hash_table_set_value_uint32(&OSC_UCXX.windows, module->cid, module);  /* the core */
    OSC_UCXX.num_modules++;
    OSC_UCXX_UNLOCK(&OSC_UCXX.lock);

    /* A failure so far may be this process's alone (each asks for its own
     * size): the exchange carries it, so that every process fails together
     * and none waits in a collective for a peer that gave up. */
    rc = exchange(module, rc, &again);
    if (again) rc = exchange(module, node_leave(module, base, size, info), &again);
    /* The atomics policy, fence barrier included, agreed by all: the
     * exchange's last step (from what every process gave). */
    if (OMPI_SUCCESS == rc) rc = ompi_osc_ucxx_policy_agree(module);
    if (OMPI_SUCCESS != rc) goto fail_registered;
    if (module->state_cpu && NULL != module->shseg) module->lock_words = module->shseg->locks;

    view = ompi_osc_ucxx_view_new(module, true);
    if (NULL == view) {
        rc = OMPI_ERR_OUT_OF_RESOURCE;
        goto fail_registered;
    }
    win->w_osc_module = &view->super;
    *model = MPI_WIN_UNIFIED;
    ompi_osc_ucxx_subscribe_info(win);

    /* Where some process cannot map our state, our synchronization calls
     * always serve peers. */
    module->serve_always = !module->state_cpu;
    module->serve = module->serve_always || MPI_WIN_FLAVOR_DYNAMIC == flavor ||
                    ((MPI_WIN_FLAVOR_CREATE == flavor || MPI_WIN_FLAVOR_SHARED == flavor) &&
                     size > 0);

    opal_atomic_wmb();
    module->ready = true;
    OSC_UCXX_VERBOSE(10, "window %u created: flavor %d, %zu bytes, %d ranks, fences through "
                     "%s", module->cid, flavor, size, module->size,
                     module->fence_by_state ? "state segments" : "the communicator's barrier");
    return OMPI_SUCCESS;

fail_registered:
    OSC_UCXX_LOCK(&OSC_UCXX.lock);
    opal_hash_table_remove_value_uint32(&OSC_UCXX.windows, module->cid);
    OSC_UCXX.num_modules--;
    OSC_UCXX_UNLOCK(&OSC_UCXX.lock);
fail:
    win->w_osc_module = NULL;
    free(view);
    ompi_osc_ucxx_module_release(module);
    return rc;
}

/* Drop a view's reference; the last one takes the core down.  `collective`:
 * the caller just synchronized with every peer (the original handle's free),
 * so nobody can still reach this window.  A local free (a duplicate or
 * memory-handle window outliving the original) cannot know that, so the core
 * stays mapped and reachable until finalize. */
void ompi_osc_ucxx_core_release(ompi_osc_ucxx_module_t *module, bool collective)
{
    if (0 != ompi_osc_ucxx_add32(&module->refcount, -1)) {
        return;
    }
    if (!collective && module->original_freed) {
        OSC_UCXX_LOCK(&OSC_UCXX.lock);
        module->next_zombie = OSC_UCXX.zombies;
        OSC_UCXX.zombies = module;
        OSC_UCXX_UNLOCK(&OSC_UCXX.lock);
        return;
    }
    OSC_UCXX_LOCK(&OSC_UCXX.lock);
    opal_hash_table_remove_value_uint32(&OSC_UCXX.windows, module->cid);
    OSC_UCXX.num_modules--;
    OSC_UCXX_UNLOCK(&OSC_UCXX.lock);
    ompi_osc_ucxx_module_release(module);
}

/* A handle's free (osc_ucxx_component.c refused it in an epoch and
 * completed its operations).  Duplicates free locally; the core stays
 * while any handle is alive. */
int ompi_osc_ucxx_window_free(struct ompi_win_t *win)
{
    ompi_osc_ucxx_view_t *view = OSC_UCXX_VIEW(win);
    ompi_osc_ucxx_module_t *module = view->core;
    int rc = OMPI_SUCCESS;

    if (view->original) {
        rc = ompi_osc_ucxx_audit_check(module);   /* (a test mode: osc_ucxx_audit.c) */
        if (OMPI_SUCCESS != rc) return rc;
        rc = ompi_osc_ucxx_wcomm_close(module);  /* (the closing barrier) */
        module->original_freed = true;
    }
    bool collective = view->original;
    win->w_osc_module = NULL;
    free(view);
    ompi_osc_ucxx_core_release(module, collective);
    return rc;
}
