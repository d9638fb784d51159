/*
 * Copyright (c) 2026 The osc/ucxx authors. All rights reserved.
 * $COPYRIGHT$
 *
 * The UCP context, the per-thread workers, endpoints, peer addresses,
 * peers' rkeys kept across windows, and progress.
 *
 * Threads: under MPI_THREAD_MULTIPLE each thread that issues RMA gets its own
 * worker on first use (taken from a pool of workers whose threads have exited,
 * or created).  Peers connect to one worker per process, the main worker, which
 * opal_progress drives, so a target serves emulated operations and active
 * messages whenever it is anywhere in MPI.  Below MPI_THREAD_MULTIPLE there is
 * only the main worker.
 *
 * Many threads, few cores: a worker that several threads progress (the main
 * worker, a worker with request-based operations in flight) is progressed by
 * one of them at a time, the others skip it (UCX's worker spinlock otherwise
 * burns whole time slices), and wait loops yield the core after
 * osc_ucxx_yield_after empty polls (ompi_osc_ucxx_backoff in the header).
 */

#include "ompi_config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/epoll.h>
#include <sys/mman.h>
#include <sys/eventfd.h>

#include "ompi/proc/proc.h"
#include "ompi/runtime/mpiruntime.h"
#include "opal/util/sys_limits.h"

#include "osc_ucxx_window.h"
#include "osc_ucxx_am.h"
#include "osc_ucxx_request.h"

__thread ompi_osc_ucxx_tls_t ompi_osc_ucxx_tls = {NULL, 0};

static ompi_osc_ucxx_worker_t *worker_create(ucp_worker_h made);
static int addr_store(uint64_t key, const void *addr, size_t len);
static int get_ep(ompi_osc_ucxx_worker_t *worker, uint64_t key, ucp_ep_h *ep);
static void rkeys_destroy(ompi_osc_ucxx_worker_t *worker);

/* Wait mode: sleep in the kernel until the main worker has an event or
 * someone deferred work (ompi_osc_ucxx_progress_wake).  Work that stays
 * queued because it is blocked (an AM waiting for another origin's handler
 * to finish) is retried by polling: nothing would wake us for it.  The
 * timeout is a safety net for transports without wakeup support. */
static void progress_wait_loop(void)
{
    struct timespec pause = {0, 1000L * (OSC_UCXX.progress_interval_us > 0
                                             ? OSC_UCXX.progress_interval_us : 20)};
    struct epoll_event ev;
    uint64_t junk;

    struct timespec nap = {0, 200000};
    uint32_t polls = OSC_UCXX.app_polls - 1;
    int quiet = 0;

    while (!OSC_UCXX.progress_stop) {
        /* The application is inside MPI and progresses the worker itself:
         * stay out of its way (arming the worker while another thread
         * progresses it was seen to stall TCP transfers for seconds). */
        if (polls != OSC_UCXX.app_polls) {
            polls = OSC_UCXX.app_polls;
            quiet = 0;
            nanosleep(&nap, NULL);
            continue;
        }
        int n = ucp_worker_progress(OSC_UCXX.main_worker->ucp);
        n += ompi_osc_ucxx_am_drain();
        if (0 != n || ompi_osc_ucxx_am_pending() || ++quiet < 5) {
            if (0 == n) nanosleep(&pause, NULL);
            continue;
        }
        if (UCS_OK != ucp_worker_arm(OSC_UCXX.main_worker->ucp)) {
            continue;  /* UCS_ERR_BUSY: events arrived meanwhile */
        }
        OSC_UCXX.progress_sleeping = 1;
        opal_atomic_mb();
        if (!ompi_osc_ucxx_am_pending() && !OSC_UCXX.progress_stop) {
            (void) epoll_wait(OSC_UCXX.progress_efd, &ev, 1, 100);
        }
        OSC_UCXX.progress_sleeping = 0;
        while (read(OSC_UCXX.progress_wake_fd, &junk, sizeof(junk)) > 0) {
        }
    }
}

void ompi_osc_ucxx_progress_wake(void)
{
    if (OPAL_UNLIKELY(OSC_UCXX.progress_sleeping)) {
        uint64_t one = 1;
        ssize_t w = write(OSC_UCXX.progress_wake_fd, &one, sizeof(one));
        (void) w;
    }
}

/* Wait mode's epoll set: the main worker's event fd and our eventfd.
 * False (poll instead) where UCX cannot give the fd. */
static bool progress_wait_setup(void)
{
    struct epoll_event ev = {.events = EPOLLIN};
    int ucx_fd;

    OSC_UCXX.progress_efd = OSC_UCXX.progress_wake_fd = -1;
    if (UCS_OK != ucp_worker_get_efd(OSC_UCXX.main_worker->ucp, &ucx_fd)) {
        return false;
    }
    OSC_UCXX.progress_efd = epoll_create1(EPOLL_CLOEXEC);
    OSC_UCXX.progress_wake_fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    if (OSC_UCXX.progress_efd < 0 || OSC_UCXX.progress_wake_fd < 0 ||
        0 != epoll_ctl(OSC_UCXX.progress_efd, EPOLL_CTL_ADD, ucx_fd, &ev) ||
        0 != epoll_ctl(OSC_UCXX.progress_efd, EPOLL_CTL_ADD, OSC_UCXX.progress_wake_fd, &ev)) {
        if (OSC_UCXX.progress_efd >= 0) close(OSC_UCXX.progress_efd);
        if (OSC_UCXX.progress_wake_fd >= 0) close(OSC_UCXX.progress_wake_fd);
        OSC_UCXX.progress_efd = OSC_UCXX.progress_wake_fd = -1;
        return false;
    }
    return true;
}

/* The optional progress thread: serves peers (emulated RMA, active
 * messages) while the application computes outside MPI. */
static void *progress_thread_main(void *arg)
{
    struct timespec pause = {0, 1000L * OSC_UCXX.progress_interval_us};
    if (OSC_UCXX.progress_wait) {
        progress_wait_loop();
        return NULL;
    }
    while (!OSC_UCXX.progress_stop) {
        int n = ompi_osc_ucxx_worker_progress_shared(OSC_UCXX.main_worker);
        n += ompi_osc_ucxx_am_drain();
        if (0 == n && OSC_UCXX.progress_interval_us > 0) {
            nanosleep(&pause, NULL);
        }
    }
    return NULL;
}

/* A thread that exits gives its worker back; the next new thread reuses it,
 * endpoints and all. */
static void tls_release(void *arg)
{
    ompi_osc_ucxx_worker_t *worker = (ompi_osc_ucxx_worker_t *) arg;
    OSC_UCXX_LOCK(&OSC_UCXX.lock);
    worker->owned = false;
    OSC_UCXX_UNLOCK(&OSC_UCXX.lock);
}

/* Once per process, from the first window creation (which any thread may
 * call).  Not under OSC_UCXX.lock: creating the main worker takes it. */
static opal_mutex_t init_lock = OPAL_MUTEX_STATIC_INIT;

static int context_init_locked(void);

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
static ucs_thread_mode_t thread_mode(void)
{
    int provided = ompi_mpi_thread_provided;

    if (MPI_THREAD_MULTIPLE == provided || OSC_UCXX.progress_thread) {
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
static int ucx_context_create(ucp_context_h *context)
{
    ucp_params_t params;
    ucp_config_t *config;
    ucs_status_t status;
    bool progress_wait = OSC_UCXX.progress_wait && OSC_UCXX.progress_thread;

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
    params.mt_workers_shared = (UCS_THREAD_MODE_MULTI == thread_mode());
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

/* The early start (MPI_Init only, when windows will be ours; see
 * component_open).  UCX takes milliseconds to come up, and the first
 * endpoint to a peer on the node some hundreds of microseconds more (UCX's
 * first transport selection, attaching the peer's FIFO): done inside
 * MPI_Init, where ~200 ms go anyway, none of it is left to the first window.
 *  1. component_open, before Open MPI's modex: the UCP context and the main
 *     worker, whose address goes into the modex for the processes on this
 *     node (ompi_osc_ucxx_context_start).
 *  2. component_init, after the modex: the rest of the setup (the main
 *     worker object, progress), an endpoint to the next rank on this node,
 *     which a window over MPI_COMM_WORLD probes first, and one rkey each of
 *     memory UCX allocated and of memory it registered, unpacked on that
 *     endpoint (ompi_osc_ucxx_context_warm: UCX's first unpack of an rkey
 *     of a kind costs ~15 us for allocated memory and ~100 us for
 *     registered memory, which the first MPI_Win_create paid mapping its
 *     neighbour's window); then the component's own first uses
 *     (component_init: the first state arena, the first move of user
 *     memory).
 * Both run on the thread in MPI_Init: only it may own the heap's break
 * (ucx_context_create), and a thread of ours would compete with MPI_Init
 * for the cores without shortening it. */
#define OSC_UCXX_MODEX_ADDR "osc_ucxx.addr"

static struct {
    ucp_context_h context;
    ucp_worker_h worker;
} early;

/* Our main worker's address, hex-encoded, into the modex. */
static void publish_address(ucp_worker_h worker)
{
    static const char digits[] = "0123456789abcdef";
    ucp_address_t *addr;
    size_t len;
    char *hex;

    if (UCS_OK != ucp_worker_get_address(worker, &addr, &len)) return;
    hex = malloc(2 * len + 1);
    if (NULL != hex) {
        for (size_t i = 0; i < len; ++i) {
            hex[2 * i] = digits[((const uint8_t *) addr)[i] >> 4];
            hex[2 * i + 1] = digits[((const uint8_t *) addr)[i] & 15];
        }
        hex[2 * len] = '\0';
        if (OMPI_SUCCESS != ompi_osc_ucxx_modex_put_local(OSC_UCXX_MODEX_ADDR, hex)) {
            OSC_UCXX_VERBOSE(10, "could not publish the worker address in the modex");
        }
        free(hex);
    }
    ucp_worker_release_address(worker, addr);
}

void ompi_osc_ucxx_context_start(void)
{
    ucp_worker_params_t params;

    if (OMPI_SUCCESS != ucx_context_create(&early.context)) {
        early.context = NULL;
        return;  /* the first window tries again */
    }
    memset(&params, 0, sizeof(params));
    params.field_mask = UCP_WORKER_PARAM_FIELD_THREAD_MODE;
    params.thread_mode = thread_mode();
    if (UCS_OK != ucp_worker_create(early.context, &params, &early.worker)) {
        early.worker = NULL;  /* worker_create() tries again and reports it */
        return;
    }
    publish_address(early.worker);
    OSC_UCXX_VERBOSE(10, "UCX context and main worker made during MPI_Init (thread mode %d)",
                     (int) params.thread_mode);
}

static int hexval(char c)
{
    return c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
}

/* Learn the worker address of process NAME from the modex; false if it is
 * not there. */
static bool address_from_modex(const opal_process_name_t *name)
{
    char *hex = ompi_osc_ucxx_modex_get_optional(name, OSC_UCXX_MODEX_ADDR);
    size_t len = NULL == hex ? 0 : strlen(hex) / 2;
    uint8_t *addr = 0 == len ? NULL : malloc(len);
    bool ok = NULL != addr;

    for (size_t i = 0; ok && i < len; ++i) {
        int hi = hexval(hex[2 * i]), lo = hexval(hex[2 * i + 1]);
        ok = hi >= 0 && lo >= 0;
        if (ok) addr[i] = (uint8_t) (hi << 4 | lo);
    }
    ok = ok && OMPI_SUCCESS == addr_store(ompi_osc_ucxx_name_key(name), addr, len);
    free(addr);
    free(hex);
    return ok;
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

    if (NULL == early.worker || OMPI_SUCCESS != ompi_osc_ucxx_context_init()) return false;
    if (!node_neighbour(&peer)) {
        OSC_UCXX_VERBOSE(10, "no other rank on this node known: no endpoint during MPI_Init");
    } else if (!address_from_modex(&peer)) {
        OSC_UCXX_VERBOSE(10, "rank %u's address is not in the modex: no endpoint during MPI_Init",
                         (unsigned) peer.vpid);
    } else if (OMPI_SUCCESS == get_ep(OSC_UCXX.main_worker, ompi_osc_ucxx_name_key(&peer), &ep)) {
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

/* What the early start made: the context, and the main worker's UCP worker
 * if that was made too; NULLs if nothing. */
static void early_take(ucp_context_h *context, ucp_worker_h *worker)
{
    *context = early.context;
    *worker = early.worker;
    early.context = NULL;
    early.worker = NULL;
}

static int context_init_locked(void)
{
    ucp_worker_h made = NULL;

    OSC_UCXX.mt = OSC_UCXX.mt || opal_using_threads() || OSC_UCXX.progress_thread;
    OSC_UCXX.thread_mode = thread_mode();
    OSC_UCXX.progress_wait = OSC_UCXX.progress_wait && OSC_UCXX.progress_thread;
    early_take(&OSC_UCXX.context, &made);
    if (NULL == OSC_UCXX.context && OMPI_SUCCESS != ucx_context_create(&OSC_UCXX.context)) {
        OSC_UCXX.context = NULL;
        return OMPI_ERROR;
    }

    if (0 != pthread_key_create(&OSC_UCXX.tls_key, tls_release)) {
        return OMPI_ERR_OUT_OF_RESOURCE;
    }
    OSC_UCXX.tls_key_created = true;

    OSC_UCXX.main_worker = worker_create(made);
    if (NULL == OSC_UCXX.main_worker) {
        return OMPI_ERROR;
    }
    /* (OSC_UCXX_TEST_DEVICE_ATOMICS=1: a test hook where no RDMA device is,
     * test/atomic_modes.sh) */
    OSC_UCXX.device_atomics = (!config_atomics_cpu &&
                               worker_device_atomics(OSC_UCXX.main_worker->ucp)) ||
                              NULL != getenv("OSC_UCXX_TEST_DEVICE_ATOMICS");
    OSC_UCXX_VERBOSE(10, "UCX atomics: %s", OSC_UCXX.device_atomics ? "device (not CPU-coherent)"
                                                                  : "CPU-coherent");
    if (UCS_THREAD_MODE_MULTI != OSC_UCXX.thread_mode || !OSC_UCXX.per_thread_workers) {
        OSC_UCXX.only_worker = OSC_UCXX.main_worker;  /* = ompi_osc_ucxx_worker_acquire's */
        OSC_UCXX.links_shared = MPI_THREAD_MULTIPLE == ompi_mpi_thread_provided;
    }

    OBJ_CONSTRUCT(&OSC_UCXX.requests, opal_free_list_t);
    opal_free_list_init(&OSC_UCXX.requests, sizeof(ompi_osc_ucxx_request_t),
                        opal_cache_line_size, OBJ_CLASS(ompi_osc_ucxx_request_t), 0, 0,
                        64, -1, 64, NULL, 0, NULL, NULL, NULL);

    if (OPAL_SUCCESS != opal_progress_register(ompi_osc_ucxx_progress)) {
        return OMPI_ERROR;
    }
    OSC_UCXX.progress_registered = true;
    if (OSC_UCXX.progress_wait && !progress_wait_setup()) {
        OSC_UCXX_VERBOSE(1, "no UCX event fd: the progress thread polls");
        OSC_UCXX.progress_wait = false;
    }
    if (OSC_UCXX.progress_thread) {
        OSC_UCXX.progress_stop = false;
        if (0 == pthread_create(&OSC_UCXX.progress_tid, NULL, progress_thread_main, NULL)) {
            OSC_UCXX.progress_running = true;
            OSC_UCXX_VERBOSE(10, "progress thread started");
        } else {
            OSC_UCXX_VERBOSE(1, "could not start the progress thread; continuing without");
        }
    }
    OSC_UCXX_VERBOSE(10, "UCX context ready, worker thread mode %d", (int) OSC_UCXX.thread_mode);
    return OMPI_SUCCESS;
}

void ompi_osc_ucxx_context_fini(void)
{
    if (NULL != early.context) {  /* started, and nothing used it */
        ucp_context_h context;
        ucp_worker_h worker;
        early_take(&context, &worker);
        if (NULL != worker) ucp_worker_destroy(worker);
        ucp_cleanup(context);
    }
    if (NULL == OSC_UCXX.context) {
        return;
    }
    if (OSC_UCXX.progress_running) {
        OSC_UCXX.progress_stop = true;
        opal_atomic_mb();
        ompi_osc_ucxx_progress_wake();
        pthread_join(OSC_UCXX.progress_tid, NULL);
        OSC_UCXX.progress_running = false;
    }
    if (OSC_UCXX.progress_efd >= 0) {
        close(OSC_UCXX.progress_efd);
        close(OSC_UCXX.progress_wake_fd);
        OSC_UCXX.progress_efd = OSC_UCXX.progress_wake_fd = -1;
    }
    if (OSC_UCXX.progress_registered) {
        opal_progress_unregister(ompi_osc_ucxx_progress);
        OSC_UCXX.progress_registered = false;
    }
    while (NULL != OSC_UCXX.zombies) {
        ompi_osc_ucxx_module_t *module = OSC_UCXX.zombies;
        OSC_UCXX.zombies = module->next_zombie;
        /* Its communicator is Open MPI's now: MPI_Finalize releases the
         * communicators a program left (ompi_comm_finalize), before the
         * osc components finalize in 5.0 (after, in 4.1).  Freeing it here
         * too wrote into freed memory: heap corruption at exit in 5.0. */
        module->comm = NULL;
        opal_hash_table_remove_value_uint32(&OSC_UCXX.windows, module->cid);
        ompi_osc_ucxx_module_release(module);
    }
    if (NULL != OSC_UCXX.main_addr) {
        ucp_worker_release_address(OSC_UCXX.main_worker->ucp, OSC_UCXX.main_addr);
        OSC_UCXX.main_addr = NULL;
    }
    /* Every worker's endpoints closed while every worker can still be
     * progressed (osc_ucxx_quiesce.c), then the workers destroyed. */
    for (int i = 0; i < OSC_UCXX.num_workers; ++i) {
        rkeys_destroy(OSC_UCXX.workers[i]);
        ompi_osc_ucxx_eps_close(OSC_UCXX.workers[i]);
    }
    for (int i = 0; i < OSC_UCXX.num_workers; ++i) {
        OBJ_RELEASE(OSC_UCXX.workers[i]);
    }
    ompi_osc_ucxx_quiesce_deregister();
    while (NULL != OSC_UCXX.workers) {
        ompi_osc_ucxx_worker_t **retired =
            (ompi_osc_ucxx_worker_t **) OSC_UCXX.workers[OSC_UCXX.workers_cap];
        free(OSC_UCXX.workers);
        OSC_UCXX.workers = retired;
        OSC_UCXX.workers_cap /= 2;
    }
    OSC_UCXX.num_workers = 0;
    OSC_UCXX.main_worker = NULL;
    OSC_UCXX.only_worker = NULL;
    OSC_UCXX.links_shared = false;
    ompi_osc_ucxx_tls.worker = NULL;
    if (OSC_UCXX.tls_key_created) {
        pthread_key_delete(OSC_UCXX.tls_key);
        OSC_UCXX.tls_key_created = false;
    }

    /* Peer addresses */
    uint64_t key;
    void *value, *node = NULL;
    int rc = opal_hash_table_get_first_key_uint64(&OSC_UCXX.peer_addrs, &key, &value, &node);
    while (OPAL_SUCCESS == rc) {
        free(value);
        rc = opal_hash_table_get_next_key_uint64(&OSC_UCXX.peer_addrs, &key, &value, node,
                                                 &node);
    }
    opal_hash_table_remove_all(&OSC_UCXX.peer_addrs);

    ompi_osc_ucxx_am_fini();
    ompi_osc_ucxx_kept_release();
    ucp_cleanup(OSC_UCXX.context);
    OSC_UCXX.context = NULL;
}

/* A worker object: its endpoint table from construction, its UCP worker
 * once created; the destructor closes the endpoints and destroys both. */
static void worker_construct(ompi_osc_ucxx_worker_t *worker)
{
    worker->ucp = NULL;
    worker->index = -1;
    worker->owned = false;
    worker->pending = 0;
    worker->acc_fence = false;
    worker->progressing = 0;   /* (OPAL objects are not zeroed: ASan fills them) */
    OBJ_CONSTRUCT(&worker->lock, opal_mutex_t);
    OBJ_CONSTRUCT(&worker->eps, opal_hash_table_t);
    opal_hash_table_init(&worker->eps, 64);
    OBJ_CONSTRUCT(&worker->rkeys, opal_hash_table_t);
    opal_hash_table_init(&worker->rkeys, 64);
    worker->idle_first = worker->idle_last = NULL;
    worker->idle = 0;
    worker->idle_bytes = 0;
}

static void worker_destruct(ompi_osc_ucxx_worker_t *worker)
{
    rkeys_destroy(worker);  /* (before the endpoints they were unpacked on) */
    ompi_osc_ucxx_eps_close(worker);  /* (context_fini closed them already) */
    OBJ_DESTRUCT(&worker->eps);
    OBJ_DESTRUCT(&worker->rkeys);
    OBJ_DESTRUCT(&worker->lock);
    if (NULL != worker->ucp) {
        ucp_worker_destroy(worker->ucp);
    }
}

OBJ_CLASS_INSTANCE(ompi_osc_ucxx_worker_t, opal_object_t, worker_construct, worker_destruct);

/* Progress (any thread, no lock) walks OSC_UCXX.workers: it grows by
 * copying, is published before the count, and old copies live until
 * finalize. */
static int worker_publish(ompi_osc_ucxx_worker_t *worker)
{
    OSC_UCXX_LOCK(&OSC_UCXX.lock);
    if (OSC_UCXX.num_workers == OSC_UCXX.workers_cap) {
        int cap = OSC_UCXX.workers_cap ? 2 * OSC_UCXX.workers_cap : 8;
        ompi_osc_ucxx_worker_t **grown = calloc(cap + 1, sizeof(*grown));
        if (NULL == grown) {
            OSC_UCXX_UNLOCK(&OSC_UCXX.lock);
            return OMPI_ERR_OUT_OF_RESOURCE;
        }
        if (OSC_UCXX.num_workers > 0) {
            memcpy(grown, OSC_UCXX.workers, OSC_UCXX.num_workers * sizeof(*grown));
        }
        /* the extra slot chains the retired copies */
        grown[cap] = (ompi_osc_ucxx_worker_t *) OSC_UCXX.workers;
        opal_atomic_wmb();
        OSC_UCXX.workers = grown;
        OSC_UCXX.workers_cap = cap;
    }
    worker->index = OSC_UCXX.num_workers;
    OSC_UCXX.workers[OSC_UCXX.num_workers] = worker;
    opal_atomic_wmb();
    OSC_UCXX.num_workers++;
    OSC_UCXX_UNLOCK(&OSC_UCXX.lock);
    return OMPI_SUCCESS;
}

/* A worker object around `made` (a UCP worker the early start created), or
 * around a new UCP worker. */
static ompi_osc_ucxx_worker_t *worker_create(ucp_worker_h made)
{
    ucp_worker_params_t params;
    ompi_osc_ucxx_worker_t *worker = OBJ_NEW(ompi_osc_ucxx_worker_t);
    ucs_status_t status = UCS_OK;

    if (NULL == worker) {
        if (NULL != made) ucp_worker_destroy(made);
        return NULL;
    }
    memset(&params, 0, sizeof(params));
    params.field_mask = UCP_WORKER_PARAM_FIELD_THREAD_MODE;
    params.thread_mode = OSC_UCXX.thread_mode;
    worker->ucp = made;
    if (NULL == made) status = ucp_worker_create(OSC_UCXX.context, &params, &worker->ucp);
    if (UCS_OK != status) {
        opal_show_help("help-osc-ucxx.txt", "ucx init failed", true, "ucp_worker_create",
                       ucs_status_string(status));
        worker->ucp = NULL;
        OBJ_RELEASE(worker);
        return NULL;
    }
    if (OMPI_SUCCESS != ompi_osc_ucxx_am_register(worker) ||
        OMPI_SUCCESS != ompi_osc_ucxx_quiesce_am_register(worker) ||
        OMPI_SUCCESS != worker_publish(worker)) {
        OBJ_RELEASE(worker);
        return NULL;
    }
    OSC_UCXX_VERBOSE(10, "created worker %d", worker->index);
    return worker;
}

/* The calling thread has no worker yet. */
ompi_osc_ucxx_worker_t *ompi_osc_ucxx_worker_acquire(void)
{
    ompi_osc_ucxx_worker_t *worker = NULL;

    if (UCS_THREAD_MODE_MULTI != OSC_UCXX.thread_mode || !OSC_UCXX.per_thread_workers) {
        /* One thread in MPI at a time: it uses the main worker. */
        ompi_osc_ucxx_tls.worker = OSC_UCXX.main_worker;
        return OSC_UCXX.main_worker;
    }

    OSC_UCXX_LOCK(&OSC_UCXX.lock);
    for (int i = 0; i < OSC_UCXX.num_workers; ++i) {
        if (!OSC_UCXX.workers[i]->owned) {
            worker = OSC_UCXX.workers[i];
            worker->owned = true;
            break;
        }
    }
    OSC_UCXX_UNLOCK(&OSC_UCXX.lock);

    if (NULL == worker) {
        worker = worker_create(NULL);
        if (NULL == worker) {
            return NULL;
        }
        worker->owned = true;
    }
    ompi_osc_ucxx_tls.worker = worker;
    pthread_setspecific(OSC_UCXX.tls_key, worker);
    return worker;
}

/* ------------------------------------------------------------------------- */
/* Peer addresses: one per peer process, learned at the first window that
 * includes it. */

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
    return addr_store(ompi_osc_ucxx_proc_key(proc), addr, len);
}

static int addr_store(uint64_t key, const void *addr, size_t len)
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
    return get_ep(worker, ompi_osc_ucxx_proc_key(proc), ep);
}

/* Packed once: ucp_worker_get_address packs every transport's address on
 * each call, ~0.8 us of each window's creation (5 % of a dynamic window's
 * with 2 ranks, perf). */
int ompi_osc_ucxx_main_address(const void **addr, size_t *len)
{
    int rc = OMPI_SUCCESS;

    OSC_UCXX_LOCK(&OSC_UCXX.lock);
    if (NULL == OSC_UCXX.main_addr &&
        UCS_OK != ucp_worker_get_address(OSC_UCXX.main_worker->ucp, &OSC_UCXX.main_addr,
                                         &OSC_UCXX.main_addr_len)) {
        OSC_UCXX.main_addr = NULL;
        rc = OMPI_ERROR;
    }
    *addr = OSC_UCXX.main_addr;
    *len = OSC_UCXX.main_addr_len;
    OSC_UCXX_UNLOCK(&OSC_UCXX.lock);
    return rc;
}

/* ------------------------------------------------------------------------- */
/* Peers' rkeys kept across windows
 *
 * Unpacking a peer's rkey for memory UCX allocated maps that memory here
 * (UCX's sysv transport: shmat) and destroying it unmaps it (shmdt, which
 * also flushes the TLBs of every core the process ran on).  Each window
 * did both for the peer's state segment, once for the direct mapping and
 * once per worker that reached the peer: ~20 % of a dynamic window's
 * create-attach-put-detach-free cycle on each side (perf, bench/rma_mh
 * dyn_cr).  But the peer reuses its freed windows' allocations
 * (osc_ucxx_memory.c, kept allocations), and windows alive together
 * share state arenas, so the next window names the same one
 * again.  So a worker keeps its unpacked rkeys, keyed by the peer and the
 * allocation's serial number (the peer's count of UCX allocations; a
 * packed rkey's bytes do not identify an allocation: a freed object's
 * name is reused), and hands them out again: windows take and give
 * them, and up to OSC_UCXX_RKEYS_IDLE that no window uses stay, mapping
 * about idle_bytes_max() bytes at most (oldest evicted first).  An
 * rkey kept for an allocation its owner has since freed keeps that memory
 * alive, never reached again, until it is evicted; so only allocations
 * small enough for the owner to keep, and arenas, carry a serial
 * (osc_ucxx_memory.c), and what idle rkeys may hold so is bounded by bytes
 * as the owner's kept allocations are (64 idle rkeys of 4 MiB allocations
 * would hold 256 MiB).  Serials count up (a 32-bit count: an old rkey would have
 * to outlive 2^32 of its owner's allocations), so a new allocation is
 * never reached through an old rkey. */

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

/* Worker teardown (finalize): windows are gone, every kept rkey is idle. */
static void rkeys_destroy(ompi_osc_ucxx_worker_t *worker)
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

/* ------------------------------------------------------------------------- */

/* The worker's endpoint to the process with key KEY (ompi_osc_ucxx_proc_key),
 * made the first time from the address learned for it. */
static int get_ep(ompi_osc_ucxx_worker_t *worker, uint64_t key, ucp_ep_h *ep)
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
    if (NULL == addr) {
        rc = OMPI_ERR_UNREACH;
        goto out;
    }
    memset(&params, 0, sizeof(params));
    params.field_mask = UCP_EP_PARAM_FIELD_REMOTE_ADDRESS;
    params.address = (ucp_address_t *) addr->addr;
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
    return rc;
}

/* ------------------------------------------------------------------------- */
/* Progress */

/* Registered with opal_progress: the main worker serves peers; the calling
 * thread's worker and any worker with request-based operations in flight
 * complete our own operations (a request may be waited on by any thread). */
int ompi_osc_ucxx_progress(void)
{
    ompi_osc_ucxx_tls_t *tls = NULL;
    ompi_osc_ucxx_worker_t *self = OSC_UCXX.only_worker;  /* (no TLS read) */
    int count;

    if (NULL == OSC_UCXX.main_worker) {
        return 0;
    }
    if (OSC_UCXX.progress_running) {
        OSC_UCXX.app_polls++;   /* (racy on purpose: any change will do) */
    }
    count = ompi_osc_ucxx_worker_progress_shared(OSC_UCXX.main_worker);
    if (ompi_osc_ucxx_am_pending()) {
        count += ompi_osc_ucxx_am_drain();
    }
    if (OPAL_UNLIKELY(0 != ompi_osc_ucxx_pongs_due)) {
        ompi_osc_ucxx_quiesce_serve();
    }
    if (NULL == self) {
        tls = &ompi_osc_ucxx_tls;
        self = tls->worker;
    }
    if (NULL != self && self != OSC_UCXX.main_worker) {
        count += ucp_worker_progress(self->ucp);
    }
    int n = OSC_UCXX.num_workers;
    opal_atomic_rmb();  /* the array read next holds at least n workers */
    ompi_osc_ucxx_worker_t **workers = OSC_UCXX.workers;
    for (int i = 1; i < n; ++i) {
        ompi_osc_ucxx_worker_t *w = workers[i];
        if (w->pending > 0 && w != self) {
            count += ompi_osc_ucxx_worker_progress_shared(w);
        }
    }
    if (UCS_THREAD_MODE_MULTI == OSC_UCXX.thread_mode) {
        /* Threads may outnumber cores (processes are Open MPI's business:
         * mpi_yield_when_idle), so a long idle spin here gives the core
         * away, but once per osc_ucxx_yield_after idle polls, not in every
         * poll after them as our own wait loops do: this count spans every
         * wait of the thread, Open MPI's too, and yielding in each poll of
         * a short one (the barrier of a fence) made fences 3-10x slower
         * under MPI_THREAD_MULTIPLE. */
        if (NULL == tls) tls = &ompi_osc_ucxx_tls;
        if (count > 0) {
            tls->idle = 0;
        } else if (OSC_UCXX.yield_after > 0 && ++tls->idle >= OSC_UCXX.yield_after) {
            tls->idle = 0;
            sched_yield();
        }
    }
    return count;
}

/* Wait for a UCX request issued on `worker`, progressing it and the rest of
 * the library (a peer may need us to serve it before it can answer). */
int ompi_osc_ucxx_wait_request(ompi_osc_ucxx_worker_t *worker, void *req)
{
    ucs_status_t status;
    int spins = 0, idle = 0;

    if (!UCS_PTR_IS_PTR(req)) {
        return UCS_PTR_IS_ERR(req) ? OMPI_ERROR : OMPI_SUCCESS;
    }
    while (UCS_INPROGRESS == (status = ucp_request_check_status(req))) {
        int n = ucp_worker_progress(worker->ucp);
        if (++spins == OSC_UCXX.post_poll_interval) {
            spins = 0;
            opal_progress();
        }
        ompi_osc_ucxx_backoff(&idle, n);
    }
    ucp_request_free(req);
    if (UCS_OK != status) {
        OSC_UCXX_VERBOSE(1, "UCX operation failed: %s", ucs_status_string(status));
        return OMPI_ERROR;
    }
    return OMPI_SUCCESS;
}
