/*
 * Copyright (c) 2026 The osc/ucxx authors. All rights reserved.
 * $COPYRIGHT$
 *
 * The UCP context: made once per process, by the first window or by
 * MPI_Init's early start (osc_ucxx_early.c), with the features and the
 * thread mode MPI's thread level asks for; UCX's configuration also says
 * how strong ucp_worker_fence is (ompi_osc_ucxx_fence_link).
 *
 * context_init brings the worker layer up around it: the main worker,
 * requests, progress.  The component takes everything down at finalize, in
 * the order the layers above need (component_finalize), the context last.
 */

#include "ompi_config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ompi/runtime/mpiruntime.h"

#include "osc_ucxx_worker.h"
#include "osc_ucxx_request.h"

/* Once per process, from the first window creation (which any thread may
 * call).  Not under OSC_UCXX.lock: creating the main worker takes it. */
static opal_mutex_t init_lock = OPAL_MUTEX_STATIC_INIT;

/* What the early start made ahead: the context, and the main worker's UCP
 * worker if that was made too. */
static struct {
    ucp_context_h context;
    ucp_worker_h worker;
} ahead;

void ompi_osc_ucxx_context_adopt(ucp_context_h context, ucp_worker_h worker)
{
    ahead.context = context;
    ahead.worker = worker;
}

/* The value UCX's configuration printout gives NAME ("UCX_FENCE_MODE"), or
 * NULL; copied into buf. */
static const char *config_value(const char *text, const char *name, char *buf, size_t len)
{
    size_t n = strlen(name);

    for (const char *line = text; NULL != line && '\0' != *line; ) {
        if (0 == strncmp(line, name, n) && '=' == line[n]) {
            size_t vlen = strcspn(line + n + 1, "\n");
            snprintf(buf, len, "%.*s", (int) vlen, line + n + 1);
            return buf;
        }
        line = strchr(line, '\n');
        if (NULL != line) line++;
    }
    return NULL;
}

/* Whether ucp_worker_fence will be strong (a flush: ompi_osc_ucxx_fence_link
 * says why that matters), by UCX's own rule on the configuration it is given:
 * UCX_FENCE_MODE=strong, or auto with more than one RMA lane or the new
 * protocols (UCX_PROTO_ENABLE, the default from 1.16).  UCX 1.13 has no
 * fence modes: weak.  Unknown: strong, which is correct everywhere. */
static bool fence_is_strong(const ucp_config_t *config)
{
    char *text = NULL, mode[16], proto[16], lanes[16];
    size_t len = 0;
    bool strong = true;
    FILE *f = open_memstream(&text, &len);

    if (NULL == f) return true;
    ucp_config_print(config, f, NULL, UCS_CONFIG_PRINT_CONFIG | UCS_CONFIG_PRINT_HIDDEN);
    fclose(f);
    if (NULL == text) return true;
    if (NULL == config_value(text, "UCX_FENCE_MODE", mode, sizeof(mode))) {
        strong = false;
    } else if (0 == strcmp(mode, "weak")) {
        strong = false;
    } else if (0 == strcmp(mode, "auto")) {
        strong = (NULL != config_value(text, "UCX_PROTO_ENABLE", proto, sizeof(proto)) &&
                  ('y' == proto[0] || 'Y' == proto[0] || '1' == proto[0])) ||
                 (NULL != config_value(text, "UCX_MAX_RMA_LANES", lanes, sizeof(lanes)) &&
                  atoi(lanes) > 1);
    }
    free(text);
    OSC_UCXX_VERBOSE(10, "ucp_worker_fence is %s", strong ? "strong (a flush)" : "weak");
    return strong;
}

/* Would UCX apply this process's atomics with a device (a NIC), which is
 * not atomic with the CPU's?  By UCX 1.13's own rule (ucp_worker.c,
 * ucp_worker_init_atomic_tls): UCX_ATOMIC_MODE=cpu never; device, or guess
 * where some transport has device atomics, on the transports the worker
 * lists for atomics.  Those are UCX's shared-memory and self transports in
 * cpu mode, and in device mode the chosen device's: so any other name in
 * the list (rc_mlx5, dc_mlx5, ...) says device atomics.  An RDMA device
 * with PCIe atomics (CPU-coherent) counts as device too: a safe answer.
 * Unknown: device.  (docs/atomics.md) */
static bool cpu_coherent_tl(const char *name, size_t len)
{
    static const char *const tls[] = {"self", "sysv", "posix", "xpmem", "cma", "knem"};
    for (size_t i = 0; i < sizeof(tls) / sizeof(tls[0]); ++i) {
        if (strlen(tls[i]) == len && 0 == strncmp(name, tls[i], len)) return true;
    }
    return false;
}

static bool atomic_mode_cpu(const ucp_config_t *config)
{
    char *text = NULL, mode[16];
    size_t len = 0;
    bool cpu = false;
    FILE *f = open_memstream(&text, &len);

    if (NULL == f) return false;
    ucp_config_print(config, f, NULL, UCS_CONFIG_PRINT_CONFIG);
    fclose(f);
    cpu = NULL != text && NULL != config_value(text, "UCX_ATOMIC_MODE", mode, sizeof(mode)) &&
          0 == strcmp(mode, "cpu");
    free(text);
    return cpu;
}

static bool worker_device_atomics(ucp_worker_h worker)
{
    char *text = NULL, *line;
    size_t len = 0;
    bool device = true;
    FILE *f = open_memstream(&text, &len);

    if (NULL == f) return true;
    ucp_worker_print_info(worker, f);
    fclose(f);
    line = NULL == text ? NULL : strstr(text, "atomics:");
    if (NULL != line) {
        /* "atomics: 0:self/memory0, 3:sysv/memory, 4:posix/memory": each
         * entry is index:transport/device */
        char *save = NULL, *entry;
        line[strcspn(line, "\n")] = '\0';
        device = false;
        for (entry = strtok_r(line + 8, ",", &save); NULL != entry;
             entry = strtok_r(NULL, ",", &save)) {
            char *tl = strchr(entry, ':');
            if (NULL != tl) device = device || !cpu_coherent_tl(tl + 1, strcspn(tl + 1, "/"));
        }
    }
    free(text);
    return device;
}

/* UCX_ATOMIC_MODE=cpu in the configuration our context was made with */
static bool config_atomics_cpu;

/* Was UCX configuration variable NAME (without "UCX_") set by the user, for
 * every UCX user or for MPI's (the "MPI" prefix our configuration reads)? */
static bool ucx_var_set(const char *name)
{
    char var[64];
    snprintf(var, sizeof(var), "UCX_%s", name);
    if (NULL != getenv(var)) return true;
    snprintf(var, sizeof(var), "UCX_MPI_%s", name);
    return NULL != getenv(var);
}

/* No hugetlb pages for our context: UCX 1.13 backs its shared-memory
 * allocations (ucp_mem_map with UCP_MEM_MAP_ALLOCATE: window memory, state
 * arenas, the first of them during MPI_Init) with pages of the hugetlb pool
 * where it can (UCX_SYSV_HUGETLB_MODE and UCX_POSIX_HUGETLB_MODE are "try",
 * and "huge" is one of UCX_ALLOC_PRIO's methods), which takes the huge
 * pages the application reserved for itself.  Regular pages instead
 * (transparent huge pages stay allowed: they come from no reserve); what
 * the user sets wins. */
static void no_huge_pages(ucp_config_t *config)
{
    char *text = NULL, prio[256], kept[256] = "";
    size_t len = 0;
    FILE *f;

    /* (one key for both memory domains: UCX applies it to each) */
    if (!ucx_var_set("SYSV_HUGETLB_MODE") && !ucx_var_set("POSIX_HUGETLB_MODE")) {
        (void) ucp_config_modify(config, "MM_HUGETLB_MODE", "n");
    }
    if (ucx_var_set("ALLOC_PRIO") || NULL == (f = open_memstream(&text, &len))) return;
    ucp_config_print(config, f, NULL, UCS_CONFIG_PRINT_CONFIG);
    fclose(f);
    if (NULL != text && NULL != config_value(text, "UCX_ALLOC_PRIO", prio, sizeof(prio))) {
        char *save = NULL;
        for (char *m = strtok_r(prio, ",", &save); NULL != m; m = strtok_r(NULL, ",", &save)) {
            if (0 == strcmp(m, "huge")) continue;
            if ('\0' != kept[0]) strncat(kept, ",", sizeof(kept) - strlen(kept) - 1);
            strncat(kept, m, sizeof(kept) - strlen(kept) - 1);
        }
        if ('\0' != kept[0]) (void) ucp_config_modify(config, "ALLOC_PRIO", kept);
    }
    free(text);
}

/* Worker thread mode follows the MPI thread level (and our own progress
 * thread, which shares the main worker with the application). */
ucs_thread_mode_t ompi_osc_ucxx_thread_mode(void)
{
    int provided = ompi_mpi_thread_provided;

    if (MPI_THREAD_MULTIPLE == provided || ompi_osc_ucxx_progress_thread_wanted()) {
        return UCS_THREAD_MODE_MULTI;
    }
    return MPI_THREAD_SERIALIZED == provided ? UCS_THREAD_MODE_SERIALIZED
                                             : UCS_THREAD_MODE_SINGLE;
}

/* The UCP context.  Only on a thread that may own the heap's break: UCX's
 * memory hooks test themselves with sbrk(+page), sbrk(-page) the first time
 * (ucm_fire_mmap_events), which corrupts malloc's main arena when another
 * thread moves the break meanwhile ("break adjusted to free malloc space",
 * seen once in CI while this ran in a thread of ours). */
int ompi_osc_ucxx_ucp_create(ucp_context_h *context)
{
    ucp_params_t params;
    ucp_config_t *config;
    ucs_status_t status;
    bool progress_wait = OSC_UCXX.progress_wait && ompi_osc_ucxx_progress_thread_wanted();

    status = ucp_config_read("MPI", NULL, &config);
    if (UCS_OK != status) {
        opal_show_help("help-osc-ucxx.txt", "ucx init failed", true, "ucp_config_read",
                       ucs_status_string(status));
        return OMPI_ERROR;
    }
    /* UCX 1.13 spreading one endpoint over several TCP devices (lo + eth0)
     * was seen to fail connection setup ("Connection refused") and crash in
     * uct_tcp_iface_progress; RMA emulated over TCP gains nothing from it.
     * The user's own UCX_MAX_RNDV_RAILS wins. */
    if (OSC_UCXX.max_rails > 0 && NULL == getenv("UCX_MAX_RNDV_RAILS")) {
        char rails[16];
        snprintf(rails, sizeof(rails), "%d", OSC_UCXX.max_rails);
        (void) ucp_config_modify(config, "MAX_RNDV_RAILS", rails);
    }
    OSC_UCXX.order_by_flush = OSC_UCXX.fence_by_flush < 0 ? fence_is_strong(config)
                                                         : 0 != OSC_UCXX.fence_by_flush;
    /* UCX 1.13's TCP transport connects a new endpoint inside ucp_ep_create
     * and waits there for the peer's answer (UCX_TCP_CONN_NB=n): a first
     * epoch to peers on other nodes made its endpoints one wire round trip
     * after another, while UCX's async thread spun on the connections it
     * could not take meanwhile.  Non-blocking, they are made together.
     * The user's own UCX_TCP_CONN_NB wins.  (UCX applies the key to each
     * transport's configuration by the name of its field, which is CONN_NB
     * in TCP's.) */
    if (!ucx_var_set("TCP_CONN_NB")) {
        (void) ucp_config_modify(config, "CONN_NB", "y");
    }
    no_huge_pages(config);
    config_atomics_cpu = atomic_mode_cpu(config);
    memset(&params, 0, sizeof(params));
    params.field_mask = UCP_PARAM_FIELD_FEATURES | UCP_PARAM_FIELD_MT_WORKERS_SHARED |
                        UCP_PARAM_FIELD_NAME;
    params.features = UCP_FEATURE_RMA | UCP_FEATURE_AMO32 | UCP_FEATURE_AMO64 |
                      UCP_FEATURE_AM;
    if (progress_wait) {
        params.features |= UCP_FEATURE_WAKEUP;
    }
    params.mt_workers_shared = (UCS_THREAD_MODE_MULTI == ompi_osc_ucxx_thread_mode());
    params.name = "osc_ucxx";
    status = ucp_init(&params, config, context);
    ucp_config_release(config);
    if (UCS_OK != status) {
        opal_show_help("help-osc-ucxx.txt", "ucx init failed", true, "ucp_init",
                       ucs_status_string(status));
        return OMPI_ERROR;
    }
    return OMPI_SUCCESS;
}

static int context_init_locked(void)
{
    ucp_worker_h made = ahead.worker;
    int rc;

    OSC_UCXX.mt = OSC_UCXX.mt || opal_using_threads() ||
                  ompi_osc_ucxx_progress_thread_wanted();
    OSC_UCXX.thread_mode = ompi_osc_ucxx_thread_mode();
    OSC_UCXX.progress_wait = OSC_UCXX.progress_wait && ompi_osc_ucxx_progress_thread_wanted();
    OSC_UCXX.context = ahead.context;
    ahead.context = NULL;
    ahead.worker = NULL;
    if (NULL == OSC_UCXX.context && OMPI_SUCCESS != ompi_osc_ucxx_ucp_create(&OSC_UCXX.context)) {
        OSC_UCXX.context = NULL;
        return OMPI_ERROR;
    }
    rc = ompi_osc_ucxx_workers_init(made);
    if (OMPI_SUCCESS != rc) {
        return rc;
    }
    /* (OSC_UCXX_TEST_DEVICE_ATOMICS=1 or OSC_UCXX_TEST_TUNE=device_atomics=1:
     * test hooks where no RDMA device is, test/atomic_modes.sh, lock_rtt) */
    OSC_UCXX.device_atomics = (!config_atomics_cpu &&
                               worker_device_atomics(OSC_UCXX.main_worker->ucp)) ||
                              OSC_UCXX.test_device_atomics ||
                              NULL != getenv("OSC_UCXX_TEST_DEVICE_ATOMICS");
    OSC_UCXX_VERBOSE(10, "UCX atomics: %s", OSC_UCXX.device_atomics ? "device (not CPU-coherent)"
                                                                  : "CPU-coherent");

    OBJ_CONSTRUCT(&OSC_UCXX.requests, opal_free_list_t);
    opal_free_list_init(&OSC_UCXX.requests, sizeof(ompi_osc_ucxx_request_t),
                        opal_cache_line_size, OBJ_CLASS(ompi_osc_ucxx_request_t), 0, 0,
                        64, -1, 64, NULL, 0, NULL, NULL, NULL);
    if (OMPI_SUCCESS != ompi_osc_ucxx_progress_start()) {
        return OMPI_ERROR;
    }
    OSC_UCXX_VERBOSE(10, "UCX context ready, worker thread mode %d", (int) OSC_UCXX.thread_mode);
    return OMPI_SUCCESS;
}

int ompi_osc_ucxx_context_init(void)
{
    int rc = OMPI_SUCCESS;
    if (NULL != OSC_UCXX.main_worker) {
        return OMPI_SUCCESS;
    }
    OSC_UCXX_LOCK(&init_lock);
    if (NULL == OSC_UCXX.main_worker) {
        rc = context_init_locked();
    }
    OSC_UCXX_UNLOCK(&init_lock);
    return rc;
}

/* Finalize, after everything made on the context went (component_finalize):
 * the context, or what an early start made that nothing used. */
void ompi_osc_ucxx_context_fini(void)
{
    if (NULL != ahead.context) {  /* started, and nothing used it */
        if (NULL != ahead.worker) ucp_worker_destroy(ahead.worker);
        ucp_cleanup(ahead.context);
        ahead.context = NULL;
        ahead.worker = NULL;
    }
    if (NULL != OSC_UCXX.context) {
        ucp_cleanup(OSC_UCXX.context);
        OSC_UCXX.context = NULL;
    }
}
