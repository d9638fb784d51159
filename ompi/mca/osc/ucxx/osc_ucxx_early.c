/*
 * Copyright (c) 2026 The osc/ucxx authors. All rights reserved.
 * $COPYRIGHT$
 *
 * The early start (MPI_Init only, when windows will be ours; see
 * component_open).  UCX takes milliseconds to come up, and the first
 * endpoint to a peer on the node some hundreds of microseconds more (UCX's
 * first transport selection, attaching the peer's FIFO): done inside
 * MPI_Init, which takes far longer anyway, none of it is left to the first
 * window.
 *  1. component_open, before Open MPI's modex: the UCP context and the main
 *     worker, whose address goes into the modex for the processes on this
 *     node (ompi_osc_ucxx_context_start).
 *  2. component_init, after the modex: the rest of the setup (the main
 *     worker object, progress), an endpoint to the next rank on this node,
 *     which a window over MPI_COMM_WORLD probes first, and one rkey each of
 *     memory UCX allocated and of memory it registered, unpacked on that
 *     endpoint (ompi_osc_ucxx_context_warm: UCX's first unpack of an rkey
 *     of a kind costs much more than the next ones, most for registered
 *     memory, which the first MPI_Win_create paid mapping its neighbour's
 *     window); then the component's own first uses
 *     (component_init: the first state arena, the first move of user
 *     memory).
 * Both run on the thread in MPI_Init: only it may own the heap's break
 * (ompi_osc_ucxx_ucp_create), and a thread of ours would compete with
 * MPI_Init for the cores without shortening it.
 */

#include "ompi_config.h"

#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "ompi/proc/proc.h"
#include "opal/util/sys_limits.h"

#include "osc_ucxx_worker.h"

static bool started;   /* the main worker's UCP worker was made: warm up */

void ompi_osc_ucxx_context_start(void)
{
    ucp_worker_params_t params;
    ucp_context_h context;
    ucp_worker_h worker = NULL;

    if (OMPI_SUCCESS != ompi_osc_ucxx_ucp_create(&context)) {
        return;  /* the first window tries again */
    }
    memset(&params, 0, sizeof(params));
    params.field_mask = UCP_WORKER_PARAM_FIELD_THREAD_MODE;
    params.thread_mode = ompi_osc_ucxx_thread_mode();
    if (UCS_OK != ucp_worker_create(context, &params, &worker)) {
        worker = NULL;  /* worker_create() tries again and reports it */
    }
    ompi_osc_ucxx_context_adopt(context, worker);
    if (NULL == worker) {
        return;
    }
    started = true;
    /* peers on the node find our address and how to map our memory there,
     * not in the windows' exchanges */
    OSC_UCXX.modex_ok = ompi_osc_ucxx_addr_publish(worker) &&
                        OMPI_SUCCESS == ompi_osc_ucxx_ptab_publish();
    if (!OSC_UCXX.modex_ok) {
        OSC_UCXX_VERBOSE(10, "could not publish our address and shared memory in the modex");
    }
    OSC_UCXX_VERBOSE(10, "UCX context and main worker made during MPI_Init (thread mode %d)",
                     (int) params.thread_mode);
}

/* The next rank of our job on this node after ours (cyclically), into NAME;
 * false if we are alone here.  (Only names: an ompi_proc_t made before
 * MPI_Init's add_procs breaks the TCP BTL's address lookup in 4.1.) */
static bool node_neighbour(opal_process_name_t *out)
{
    opal_process_name_t name = *OMPI_PROC_MY_NAME;
    uint32_t mine = name.vpid, next = UINT32_MAX, first = UINT32_MAX;
    char *peers, *p;

    name.vpid = OPAL_VPID_WILDCARD;
    peers = ompi_osc_ucxx_modex_get_optional(&name, "pmix.lpeers");  /* PMIX_LOCAL_PEERS */
    if (NULL == peers) return false;
    for (p = peers; '\0' != *p;) {
        char *end;
        unsigned long v = strtoul(p, &end, 10);
        if (end == p) break;
        if (v != mine) {
            if (v < first) first = (uint32_t) v;
            if (v > mine && v < next) next = (uint32_t) v;
        }
        p = (',' == *end) ? end + 1 : end;
    }
    free(peers);
    name.vpid = UINT32_MAX != next ? next : first;
    *out = name;
    return UINT32_MAX != name.vpid;
}

/* Pack the rkey of `memh`, unpack it on `ep` (NULL: none) and map it as a
 * window's peer would, then let it all go. */
static void warm_rkey(ucp_ep_h ep, ucp_mem_h memh, void *addr)
{
    ucp_rkey_h rkey;
    size_t len;
    void *packed, *ptr;

    if (NULL == ep || UCS_OK != ucp_rkey_pack(OSC_UCXX.context, memh, &packed, &len)) return;
    if (UCS_OK == ucp_ep_rkey_unpack(ep, packed, &rkey)) {
        (void) ucp_rkey_ptr(rkey, (uint64_t) (uintptr_t) addr, &ptr);
        ucp_rkey_destroy(rkey);
    }
    ucp_rkey_buffer_release(packed);
}

/* A page UCX allocates (`address` NULL) or registers, through warm_rkey. */
static void warm_memory(ucp_ep_h ep, void *address)
{
    ucp_mem_map_params_t params;
    ucp_mem_attr_t attr = {.field_mask = UCP_MEM_ATTR_FIELD_ADDRESS};
    ucp_mem_h memh;

    memset(&params, 0, sizeof(params));
    params.field_mask = UCP_MEM_MAP_PARAM_FIELD_ADDRESS | UCP_MEM_MAP_PARAM_FIELD_LENGTH |
                        UCP_MEM_MAP_PARAM_FIELD_FLAGS;
    params.address = address;
    params.length = opal_getpagesize();
    params.flags = NULL == address ? UCP_MEM_MAP_ALLOCATE : 0;
    if (UCS_OK != ucp_mem_map(OSC_UCXX.context, &params, &memh)) return;
    if (UCS_OK == ucp_mem_query(memh, &attr)) warm_rkey(ep, memh, attr.address);
    ucp_mem_unmap(OSC_UCXX.context, memh);
}

bool ompi_osc_ucxx_context_warm(void)
{
    opal_process_name_t peer;
    ucp_ep_h ep = NULL;
    void *page;

    if (!started || OMPI_SUCCESS != ompi_osc_ucxx_context_init()) return false;
    if (!node_neighbour(&peer)) {
        OSC_UCXX_VERBOSE(10, "no other rank on this node known: no endpoint during MPI_Init");
    } else if (!ompi_osc_ucxx_addr_from_modex(ompi_osc_ucxx_name_key(&peer))) {
        OSC_UCXX_VERBOSE(10, "rank %u's address is not in the modex: no endpoint during MPI_Init",
                         (unsigned) peer.vpid);
    } else if (OMPI_SUCCESS ==
               ompi_osc_ucxx_get_ep_key(OSC_UCXX.main_worker, ompi_osc_ucxx_name_key(&peer),
                                        &ep)) {
        ompi_osc_ucxx_quiesce_ep(ep);  /* (its wireup done on both sides) */
        OSC_UCXX_VERBOSE(10, "endpoint to rank %u on this node made during MPI_Init",
                         (unsigned) peer.vpid);
    } else {
        ep = NULL;
    }
    warm_memory(ep, NULL);
    page = mmap(NULL, opal_getpagesize(), PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS,
                -1, 0);
    if (MAP_FAILED != page) {
        *(volatile char *) page = 0;  /* (memory a window would bring has pages) */
        warm_memory(ep, page);
        munmap(page, opal_getpagesize());
    }
    return true;
}
