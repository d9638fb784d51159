/*
 * Copyright (c) 2026 The osc/ucxx authors. All rights reserved.
 * $COPYRIGHT$
 *
 * Peers: the worker address of each peer process, learned once (from the
 * modex for the processes on this node, where the early start published
 * it; from a window's creation exchange for the others), and each worker's
 * endpoints to them, made on first use and kept until the peer table lets
 * the peer go (osc_ucxx_ptab.c) or finalize; our main worker's own
 * address, packed once.
 */

#include "ompi_config.h"

#include "opal/util/proc.h"

#include "osc_ucxx_worker.h"

#define OSC_UCXX_MODEX_ADDR "osc_ucxx.addr"

/* Our main worker's address, hex-encoded, into the modex (the early start,
 * before Open MPI's fence): the processes on this node find it there. */
bool ompi_osc_ucxx_addr_publish(ucp_worker_h worker)
{
    static const char digits[] = "0123456789abcdef";
    ucp_address_t *addr;
    size_t len;
    char *hex;
    bool ok = false;

    if (UCS_OK != ucp_worker_get_address(worker, &addr, &len)) return false;
    hex = malloc(2 * len + 1);
    if (NULL != hex) {
        for (size_t i = 0; i < len; ++i) {
            hex[2 * i] = digits[((const uint8_t *) addr)[i] >> 4];
            hex[2 * i + 1] = digits[((const uint8_t *) addr)[i] & 15];
        }
        hex[2 * len] = '\0';
        ok = OMPI_SUCCESS == ompi_osc_ucxx_modex_put_local(OSC_UCXX_MODEX_ADDR, hex);
        free(hex);
    }
    ucp_worker_release_address(worker, addr);
    return ok;
}

static int hexval(char c)
{
    return c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
}

/* Learn the worker address of the process with key KEY from the modex;
 * false if it is not there. */
bool ompi_osc_ucxx_addr_from_modex(uint64_t key)
{
    opal_process_name_t name;
    char *hex;
    size_t len;
    uint8_t *addr;
    bool ok;

    memcpy(&name, &key, sizeof(name));
    hex = ompi_osc_ucxx_modex_get_optional(&name, OSC_UCXX_MODEX_ADDR);
    len = NULL == hex ? 0 : strlen(hex) / 2;
    addr = 0 == len ? NULL : malloc(len);
    ok = NULL != addr;
    for (size_t i = 0; ok && i < len; ++i) {
        int hi = hexval(hex[2 * i]), lo = hexval(hex[2 * i + 1]);
        ok = hi >= 0 && lo >= 0;
        if (ok) addr[i] = (uint8_t) (hi << 4 | lo);
    }
    ok = ok && OMPI_SUCCESS == ompi_osc_ucxx_addr_store_key(key, addr, len);
    free(addr);
    free(hex);
    return ok;
}

bool ompi_osc_ucxx_peer_addr_known(ompi_proc_t *proc)
{
    void *value;
    int rc;
    OSC_UCXX_LOCK(&OSC_UCXX.lock);
    rc = opal_hash_table_get_value_uint64(&OSC_UCXX.peer_addrs, ompi_osc_ucxx_proc_key(proc),
                                          &value);
    OSC_UCXX_UNLOCK(&OSC_UCXX.lock);
    return OPAL_SUCCESS == rc;
}

int ompi_osc_ucxx_peer_addr_store(ompi_proc_t *proc, const void *addr, size_t len)
{
    return ompi_osc_ucxx_addr_store_key(ompi_osc_ucxx_proc_key(proc), addr, len);
}

int ompi_osc_ucxx_addr_store_key(uint64_t key, const void *addr, size_t len)
{
    void *value;
    int rc = OMPI_SUCCESS;

    OSC_UCXX_LOCK(&OSC_UCXX.lock);
    if (OPAL_SUCCESS != opal_hash_table_get_value_uint64(&OSC_UCXX.peer_addrs, key, &value)) {
        ompi_osc_ucxx_addr_t *a = malloc(sizeof(*a) + len);
        if (NULL == a) {
            rc = OMPI_ERR_OUT_OF_RESOURCE;
        } else {
            a->len = len;
            memcpy(a->addr, addr, len);
            opal_hash_table_set_value_uint64(&OSC_UCXX.peer_addrs, key, a);
        }
    }
    OSC_UCXX_UNLOCK(&OSC_UCXX.lock);
    return rc;
}

int ompi_osc_ucxx_worker_get_ep(ompi_osc_ucxx_worker_t *worker, ompi_proc_t *proc,
                                ucp_ep_h *ep)
{
    return ompi_osc_ucxx_get_ep_key(worker, ompi_osc_ucxx_proc_key(proc), ep);
}

/* The worker's endpoint to the process with key KEY (ompi_osc_ucxx_proc_key),
 * made the first time from the address learned for it. */
int ompi_osc_ucxx_get_ep_key(ompi_osc_ucxx_worker_t *worker, uint64_t key, ucp_ep_h *ep)
{
    ompi_osc_ucxx_addr_t *addr = NULL;
    ucp_ep_params_t params;
    ucs_status_t status;
    void *value;
    int rc = OMPI_SUCCESS;

    OSC_UCXX_LOCK(&worker->lock);
    if (OPAL_SUCCESS == opal_hash_table_get_value_uint64(&worker->eps, key, &value)) {
        *ep = (ucp_ep_h) value;
        OSC_UCXX_UNLOCK(&worker->lock);
        return OMPI_SUCCESS;
    }
    OSC_UCXX_LOCK(&OSC_UCXX.lock);
    (void) opal_hash_table_get_value_uint64(&OSC_UCXX.peer_addrs, key, (void **) &addr);
    OSC_UCXX_UNLOCK(&OSC_UCXX.lock);
    if (NULL == addr && ompi_osc_ucxx_addr_from_modex(key)) {
        OSC_UCXX_LOCK(&OSC_UCXX.lock);
        (void) opal_hash_table_get_value_uint64(&OSC_UCXX.peer_addrs, key, (void **) &addr);
        OSC_UCXX_UNLOCK(&OSC_UCXX.lock);
    }
    if (NULL == addr) {
        rc = OMPI_ERR_UNREACH;
        goto out;
    }
    memset(&params, 0, sizeof(params));
    params.field_mask = UCP_EP_PARAM_FIELD_REMOTE_ADDRESS;
    params.address = (ucp_address_t *) addr->addr;
    ompi_osc_ucxx_progress_app_busy();
    status = ucp_ep_create(worker->ucp, &params, ep);
    if (UCS_OK != status) {
        opal_show_help("help-osc-ucxx.txt", "ucx init failed", true, "ucp_ep_create",
                       ucs_status_string(status));
        rc = OMPI_ERR_UNREACH;
        goto out;
    }
    opal_hash_table_set_value_uint64(&worker->eps, key, *ep);
out:
    OSC_UCXX_UNLOCK(&worker->lock);
    if (OMPI_SUCCESS == rc) ompi_osc_ucxx_ptab_endpoint(key);  /* (it holds one now) */
    return rc;
}

/* The peer table lets the peer with key KEY go (osc_ucxx_ptab.c): the
 * rkeys the worker kept for it, then its endpoint, flushed.  The wait
 * progresses this worker alone: UCX callbacks run, but no deferred work,
 * which could make a link on this endpoint again. */
void ompi_osc_ucxx_ep_evict(ompi_osc_ucxx_worker_t *worker, uint64_t key)
{
    ucp_request_param_t param = {.op_attr_mask = 0};
    void *value = NULL, *req;

    OSC_UCXX_LOCK(&worker->lock);
    if (OPAL_SUCCESS != opal_hash_table_get_value_uint64(&worker->eps, key, &value)) {
        OSC_UCXX_UNLOCK(&worker->lock);
        return;
    }
    opal_hash_table_remove_value_uint64(&worker->eps, key);
    OSC_UCXX_UNLOCK(&worker->lock);
    ompi_osc_ucxx_rkeys_drop(worker, key);
    req = ucp_ep_close_nbx((ucp_ep_h) value, &param);
    if (UCS_PTR_IS_PTR(req)) {
        while (UCS_INPROGRESS == ucp_request_check_status(req)) {
            (void) ompi_osc_ucxx_worker_progress_shared(worker);
        }
        ucp_request_free(req);
    }
}

/* The address windows' creation exchanges, packed once: ucp_worker_get_address
 * packs every transport's address on each call, a visible part of each
 * window's creation.  Where the modex holds our full address (the processes
 * on this node take it from there, osc_ucxx_window.c), the exchanged one
 * serves peers on other nodes alone and holds the network devices only:
 * with the shared-memory and loopback transports in it too, choosing an
 * endpoint's lanes in ucp_ep_create weighed each of ours against each of
 * them, most of a first access to a peer on another node. */
int ompi_osc_ucxx_main_address(const void **addr, size_t *len)
{
    int rc = OMPI_SUCCESS;

    OSC_UCXX_LOCK(&OSC_UCXX.lock);
    if (NULL == OSC_UCXX.main_addr) {
        ucp_worker_attr_t attr;
        attr.field_mask = UCP_WORKER_ATTR_FIELD_ADDRESS | UCP_WORKER_ATTR_FIELD_ADDRESS_FLAGS;
        attr.address_flags = OSC_UCXX.modex_ok ? UCP_WORKER_ADDRESS_FLAG_NET_ONLY : 0;
        if (UCS_OK == ucp_worker_query(OSC_UCXX.main_worker->ucp, &attr)) {
            OSC_UCXX.main_addr = attr.address;
            OSC_UCXX.main_addr_len = attr.address_length;
        } else {
            rc = OMPI_ERROR;
        }
    }
    *addr = OSC_UCXX.main_addr;
    *len = OSC_UCXX.main_addr_len;
    OSC_UCXX_UNLOCK(&OSC_UCXX.lock);
    return rc;
}

/* Finalize, before the main worker goes. */
void ompi_osc_ucxx_main_address_release(void)
{
    if (NULL != OSC_UCXX.main_addr) {
        ucp_worker_release_address(OSC_UCXX.main_worker->ucp, OSC_UCXX.main_addr);
        OSC_UCXX.main_addr = NULL;
    }
}

/* Finalize, after the workers: every peer's address. */
void ompi_osc_ucxx_peer_addrs_fini(void)
{
    uint64_t key;
    void *value, *node = NULL;
    int rc = opal_hash_table_get_first_key_uint64(&OSC_UCXX.peer_addrs, &key, &value, &node);
    while (OPAL_SUCCESS == rc) {
        free(value);
        rc = opal_hash_table_get_next_key_uint64(&OSC_UCXX.peer_addrs, &key, &value, node,
                                                 &node);
    }
    opal_hash_table_remove_all(&OSC_UCXX.peer_addrs);
}
