/*
 * Copyright (c) 2026 The osc/ucxx authors. All rights reserved.
 * $COPYRIGHT$
 *
 * The MCA component: parameters, which windows we take, and the module table.
 */

#include "ompi_config.h"

#include "opal/mca/base/mca_base_var.h"
#include "ompi/runtime/mpiruntime.h"

#include "osc_ucxx.h"
#include "osc_ucxx_acc.h"
#include "osc_ucxx_cma.h"
#include "osc_ucxx_dynamic.h"
#include "osc_ucxx_uam.h"

static int component_register(void);
static int component_open(void);
static int component_init(bool enable_progress_threads, bool enable_mpi_threads);
static int component_finalize(void);
static int component_query(struct ompi_win_t *win, void **base, size_t size, int disp_unit,
                           struct ompi_communicator_t *comm, struct opal_info_t *info,
                           int flavor);

ompi_osc_ucxx_component_t mca_osc_ucxx_component = {
    .super = {
        .osc_version = {
            OMPI_OSC_BASE_VERSION_3_0_0,
            .mca_component_name = "ucxx",
            MCA_BASE_MAKE_VERSION(component, OMPI_MAJOR_VERSION, OMPI_MINOR_VERSION,
                                  OMPI_RELEASE_VERSION),
            .mca_open_component = component_open,
            .mca_register_component_params = component_register,
        },
        .osc_data = {
            MCA_BASE_METADATA_PARAM_NONE
        },
        .osc_init = component_init,
        .osc_query = component_query,
        .osc_select = ompi_osc_ucxx_window_create,
        .osc_finalize = component_finalize,
    },
    .priority = 0,
    .use_direct = true,
    .per_thread_workers = true,
    .post_poll_interval = 16,
    .yield_after = 256,
    .fence_by_flush = -1,
    .fence_barrier = true,
    .progress_efd = -1,
    .progress_wake_fd = -1,
};

/* One MCA parameter: its default is what *storage holds already. */
static void param(const char *name, const char *help, mca_base_var_type_t type,
                  mca_base_var_info_lvl_t level, mca_base_var_scope_t scope, void *storage)
{
    (void) mca_base_component_var_register(&mca_osc_ucxx_component.super.osc_version, name,
                                           help, type, NULL, 0, 0, level, scope, storage);
}

static int component_register(void)
{
    /* Below osc/ucx (60) unless asked for: `--mca osc ucxx` selects us whatever
     * the priority, and a site can raise it to make us the default. */
    OSC_UCXX.priority = 0;
    param("priority",
          "Priority of osc/ucxx among the osc components (the highest usable one is chosen; "
          "stock: rdma 101, sm 100, ucx 60). `--mca osc ucxx` selects it regardless",
          MCA_BASE_VAR_TYPE_INT, OPAL_INFO_LVL_3, MCA_BASE_VAR_SCOPE_READONLY,
          &OSC_UCXX.priority);

    OSC_UCXX.verbose = 0;
    param("verbose",
          "Verbosity of osc/ucxx diagnostics (0: none, 10: window setup, 20: paths chosen per "
          "peer, 50: every synchronization call, 60: every accumulate's path)",
          MCA_BASE_VAR_TYPE_INT, OPAL_INFO_LVL_5, MCA_BASE_VAR_SCOPE_LOCAL, &OSC_UCXX.verbose);

    OSC_UCXX.use_direct = true;
    param("direct",
          "Use loads, stores and CPU atomics on peer memory that UCX maps into this process "
          "(ucp_rkey_ptr, shared memory on one node) instead of UCX RMA calls",
          MCA_BASE_VAR_TYPE_BOOL, OPAL_INFO_LVL_5, MCA_BASE_VAR_SCOPE_READONLY,
          &OSC_UCXX.use_direct);

    OSC_UCXX.per_thread_workers = true;
    param("per_thread_workers",
          "Under MPI_THREAD_MULTIPLE give every thread that issues RMA its own UCX worker "
          "(false: all threads share one worker, and operations on a dynamic window run one "
          "at a time, since they share its region caches)",
          MCA_BASE_VAR_TYPE_BOOL, OPAL_INFO_LVL_5, MCA_BASE_VAR_SCOPE_READONLY,
          &OSC_UCXX.per_thread_workers);

    OSC_UCXX.post_poll_interval = 16;
    param("poll_interval",
          "Wait loops call ucp_worker_progress on the workers they wait on this many times "
          "between calls to opal_progress (which serves the rest of the library)",
          MCA_BASE_VAR_TYPE_INT, OPAL_INFO_LVL_9, MCA_BASE_VAR_SCOPE_LOCAL,
          &OSC_UCXX.post_poll_interval);

    OSC_UCXX.yield_after = 256;
    param("yield_after",
          "Wait loops that found nothing to progress this many times in a row call "
          "sched_yield between polls, so that the thread that can end the wait (a peer "
          "served on the same core, a thread holding a worker) gets the core; a fence "
          "barrier waiting for a process that may need its core (same core, more processes "
          "than cores) yields after a 16th of this; 0: never yield",
          MCA_BASE_VAR_TYPE_INT, OPAL_INFO_LVL_9, MCA_BASE_VAR_SCOPE_LOCAL,
          &OSC_UCXX.yield_after);

    OSC_UCXX.fence_by_flush = -1;
    param("fence_by_flush",
          "How mpi_win_order and accumulate ordering keep operations to a target in "
          "order over UCX: 1 (or more): flush that target's endpoint (a round trip); 0: "
          "ucp_worker_fence; negative: a flush where UCX's fence is strong (UCX_FENCE_MODE, "
          "UCX_PROTO_ENABLE: it flushes the whole worker inside UCX's lock), the "
          "fence where it is weak (UCX 1.13)",
          MCA_BASE_VAR_TYPE_INT, OPAL_INFO_LVL_9, MCA_BASE_VAR_SCOPE_LOCAL,
          &OSC_UCXX.fence_by_flush);

    OSC_UCXX.fence_barrier = true;
    param("fence_barrier",
          "A fence on a window whose processes all map each other's state segments (one "
          "node, a shared-memory transport) synchronizes through those segments: one store "
          "to a peer's segment and one wait per round of a dissemination barrier, instead "
          "of the communicator's barrier (false: always the communicator's barrier; one "
          "process of a window that says false makes all of them use it)",
          MCA_BASE_VAR_TYPE_BOOL, OPAL_INFO_LVL_9, MCA_BASE_VAR_SCOPE_LOCAL,
          &OSC_UCXX.fence_barrier);

    OSC_UCXX.max_rails = 1;
    param("max_rails",
          "Network devices one endpoint may spread over (UCX_MAX_RNDV_RAILS of the component's "
          "UCX context; 0 keeps UCX's default). 1 avoids a UCX 1.13 connection-setup failure "
          "over several TCP devices; an explicit UCX_MAX_RNDV_RAILS in the environment wins",
          MCA_BASE_VAR_TYPE_INT, OPAL_INFO_LVL_5, MCA_BASE_VAR_SCOPE_READONLY,
          &OSC_UCXX.max_rails);

    OSC_UCXX.progress_thread = false;
    param("progress_thread",
          "Start a thread that progresses the worker peers reach this process through, so "
          "operations UCX emulates (TCP, user memory) and accumulates sent as active messages "
          "complete while this process computes outside MPI (costs a share of a core)",
          MCA_BASE_VAR_TYPE_BOOL, OPAL_INFO_LVL_4, MCA_BASE_VAR_SCOPE_READONLY,
          &OSC_UCXX.progress_thread);

    OSC_UCXX.progress_interval_us = 20;
    param("progress_thread_interval",
          "Microseconds the progress thread sleeps after a pass that found nothing to do",
          MCA_BASE_VAR_TYPE_INT, OPAL_INFO_LVL_5, MCA_BASE_VAR_SCOPE_READONLY,
          &OSC_UCXX.progress_interval_us);

    OSC_UCXX.progress_wait = false;
    param("progress_thread_wait",
          "The progress thread blocks in the kernel (ucp_worker_wait) until a peer's message "
          "or emulated operation arrives, instead of polling: it then costs no CPU while "
          "idle, which matters when ranks share cores",
          MCA_BASE_VAR_TYPE_BOOL, OPAL_INFO_LVL_4, MCA_BASE_VAR_SCOPE_READONLY,
          &OSC_UCXX.progress_wait);

    /* Accumulates */
    /* 256: runs of up to 256 B take one stripe (a 256 B accumulate + flush
     * took 34.7 ns, against 41.4 over four 64 B blocks); a 4 KiB array
     * still spreads over 16 of the 32 stripes. */
    OSC_UCXX.acc_granularity = 256;
    param("acc_granularity",
          "Bytes of window one accumulate stripe lock covers (rounded up to a power of two, "
          "8 or more), unless the window's info key mpi_accumulate_granularity says: small "
          "blocks let accumulates on nearby elements run side by side, large ones cost "
          "accumulates of several elements fewer lock operations (those touching more than 4 "
          "blocks take one window-wide lock instead).  Must be the same on every process",
          MCA_BASE_VAR_TYPE_UNSIGNED_LONG, OPAL_INFO_LVL_5, MCA_BASE_VAR_SCOPE_READONLY,
          &OSC_UCXX.acc_granularity);
    OSC_UCXX.acc_hold = 64 * 1024;
    param("acc_hold",
          "Bytes of target memory one bulk accumulate applies per lock acquisition: longer "
          "ones release and retake the lock between pieces, so that other processes' "
          "accumulates to the same window wait at most this long",
          MCA_BASE_VAR_TYPE_UNSIGNED_LONG, OPAL_INFO_LVL_5, MCA_BASE_VAR_SCOPE_READONLY,
          &OSC_UCXX.acc_hold);
    OSC_UCXX.acc_am_chunk = 32 * 1024;
    param("acc_am_chunk",
          "Accumulates to memory this process cannot map travel as active messages the target "
          "applies in bulk: this many bytes of values per message",
          MCA_BASE_VAR_TYPE_UNSIGNED_LONG, OPAL_INFO_LVL_5, MCA_BASE_VAR_SCOPE_READONLY,
          &OSC_UCXX.acc_am_chunk);
    OSC_UCXX.acc_am_inflight = 8;
    param("acc_am_inflight",
          "Messages of one such accumulate in flight at most (bounds the memory a large "
          "accumulate takes at both ends: acc_am_chunk times this)",
          MCA_BASE_VAR_TYPE_INT, OPAL_INFO_LVL_5, MCA_BASE_VAR_SCOPE_READONLY,
          &OSC_UCXX.acc_am_inflight);
    OSC_UCXX.acc_vector = 0;
    param("acc_vector",
          "Vector bytes of the sums that accumulates to mapped memory apply inline (runs of "
          "up to 4 KiB with vectors wider than 16 bytes, else 256 B): 0 (the default) the "
          "widest the CPU adds in one instruction (64 with AVX-512, 32 with AVX2); other "
          "values are rounded down to 16, 32 or 64 and capped at that",
          MCA_BASE_VAR_TYPE_UNSIGNED_INT, OPAL_INFO_LVL_6, MCA_BASE_VAR_SCOPE_READONLY,
          &OSC_UCXX.acc_vector);

    /* User active messages (MPIX_Am, osc_ucxx_uam.c) */
    OSC_UCXX.am_sysbuf = 8192;
    param("am_sysbuf",
          "Bytes of internal staging each process keeps, per window, for each origin's active "
          "messages (used before any user buffer, without a handshake; 0: none, every AM goes "
          "through the buffers the target attached)",
          MCA_BASE_VAR_TYPE_UNSIGNED_LONG, OPAL_INFO_LVL_4, MCA_BASE_VAR_SCOPE_READONLY,
          &OSC_UCXX.am_sysbuf);
    OSC_UCXX.am_chunk = 2048;
    param("am_chunk",
          "Staging bytes one handler invocation aims at when am_pipeline_unit is auto (the unit "
          "is then max(1, am_chunk / bytes per segment))",
          MCA_BASE_VAR_TYPE_UNSIGNED_LONG, OPAL_INFO_LVL_5, MCA_BASE_VAR_SCOPE_READONLY,
          &OSC_UCXX.am_chunk);
    OSC_UCXX.am_eager = 8000;
    param("am_eager",
          "Active-message chunks and outputs up to this many bytes are sent eagerly (copied "
          "through UCX's buffers); larger ones use UCX rendezvous (zero copy)",
          MCA_BASE_VAR_TYPE_UNSIGNED_LONG, OPAL_INFO_LVL_5, MCA_BASE_VAR_SCOPE_READONLY,
          &OSC_UCXX.am_eager);
    OSC_UCXX.am_grant_max = 256 * 1024;
    param("am_grant_max",
          "Largest part of its attached AM buffers a target grants one origin at a time (an "
          "origin holding an exclusive lock gets the largest free range, uncapped)",
          MCA_BASE_VAR_TYPE_UNSIGNED_LONG, OPAL_INFO_LVL_5, MCA_BASE_VAR_SCOPE_READONLY,
          &OSC_UCXX.am_grant_max);
    OSC_UCXX.amv_pack_threshold = 80;
    param("amv_pack_threshold",
          "MPIX_Amv: send only the produced output elements when they fill at most this "
          "percentage of the maximum (else the whole output region, without packing)",
          MCA_BASE_VAR_TYPE_INT, OPAL_INFO_LVL_5, MCA_BASE_VAR_SCOPE_READONLY,
          &OSC_UCXX.amv_pack_threshold);
    OSC_UCXX.am_origin_compute = true;
    param("am_origin_compute",
          "Run an active message's handler in the origin process when the target's persistent "
          "region is mapped there (same node, shared memory): no message, no target CPU",
          MCA_BASE_VAR_TYPE_BOOL, OPAL_INFO_LVL_4, MCA_BASE_VAR_SCOPE_READONLY,
          &OSC_UCXX.am_origin_compute);
    OSC_UCXX.am_exclusive_detect = true;
    param("am_exclusive_detect",
          "An origin holding MPI_LOCK_EXCLUSIVE on a target reserves all of the target's free "
          "AM buffer with one handshake and keeps it until unlock (or flush, see "
          "am_buf_interleave_am_detach)",
          MCA_BASE_VAR_TYPE_BOOL, OPAL_INFO_LVL_5, MCA_BASE_VAR_SCOPE_READONLY,
          &OSC_UCXX.am_exclusive_detect);

    OSC_UCXX.early_start = true;
    param("early_start",
          "Bring UCX up during MPI_Init when osc/ucxx is selected explicitly (--mca osc ucxx) "
          "or by priority: the context, the main worker (its address goes into Open MPI's "
          "modex), an endpoint to the next rank on the node, an rkey each of allocated and "
          "registered memory unpacked on it and the first state arena, so that the first window "
          "pays none of the first-use costs "
          "(MPI_Init takes ~7 ms longer with UCX 1.13). 0: the first window does it (a "
          "program that never makes a window pays nothing)",
          MCA_BASE_VAR_TYPE_BOOL, OPAL_INFO_LVL_5, MCA_BASE_VAR_SCOPE_READONLY,
          &OSC_UCXX.early_start);

    OSC_UCXX.prefault = true;
    param("prefault",
          "Before the first copy of over 256 KiB to or from a 2 MiB chunk of a peer's "
          "memory mapped here, populate this process's page tables for the bytes it copies "
          "in one call (madvise MADV_POPULATE_READ, Linux 5.14 and later), for stores and, "
          "on UCX's sysv segments (allocated windows), which otherwise fault page by page "
          "with no fault-around, for loads too. 0: fault as touched",
          MCA_BASE_VAR_TYPE_BOOL, OPAL_INFO_LVL_9, MCA_BASE_VAR_SCOPE_READONLY,
          &OSC_UCXX.prefault);

    OSC_UCXX.alloc_cache = 16UL << 20;
    param("alloc_cache",
          "Bytes of what freed windows allocated of their own (MPI_Win_allocate memory "
          "over 256 KiB with its state pages, state segments over 16 KiB; smaller ones come "
          "from arenas shared by the windows alive) kept for the next window that needs at "
          "most that many bytes and at least half of them, at most 32 allocations, none "
          "larger than a quarter of this: creating and freeing a window then costs no "
          "shared-memory segment, and the peers that kept their mappings of it touch it "
          "without a page fault; also the most that the mappings of peers' allocations "
          "kept by a worker for later windows hold. 0: none kept. Released at MPI_Finalize",
          MCA_BASE_VAR_TYPE_UNSIGNED_LONG, OPAL_INFO_LVL_5, MCA_BASE_VAR_SCOPE_READONLY,
          &OSC_UCXX.alloc_cache);

    OSC_UCXX.info_direct = true;
    /* settable at run time (MPI_T): the info test compares both ways */
    (void) mca_base_component_var_register(
        &mca_osc_ucxx_component.super.osc_version, "info_direct",
        "Subscribe a window's info keys (what MPI_Win_get_info reports and MPI_Win_set_info "
        "changes) in one pass that builds Open MPI's subscriber state directly instead of "
        "through opal_infosubscribe_subscribe key by key (the window's 12 keys: ~20,500 "
        "instructions against ~65,000; MPI_Win_allocate with 100 windows alive ~18 us "
        "against ~29). Open MPI 4.1 only, and only where a probe subscription at init finds the "
        "state laid out as expected (elsewhere it reads 0 after MPI_Init); 0: Open MPI's way",
        MCA_BASE_VAR_TYPE_BOOL, NULL, 0, MCA_BASE_VAR_FLAG_SETTABLE, OPAL_INFO_LVL_9,
        MCA_BASE_VAR_SCOPE_LOCAL, &OSC_UCXX.info_direct);
    OSC_UCXX.keep_comm = true;
    param("keep_comm",
          "Spare window creation the duplication of its communicator (~15 us of 45 at 2 "
          "processes with 100 windows alive, more with more processes): the windows over "
          "one communicator share one duplicate of it, or under MPI_THREAD_MULTIPLE "
          "(where two threads may fence two windows at once) a window freed at its "
          "collective MPI_Win_free leaves its own to the next window, where every process "
          "can (a creation first agrees on it in one allreduce). 0: every window "
          "duplicates its communicator",
          MCA_BASE_VAR_TYPE_BOOL, OPAL_INFO_LVL_5, MCA_BASE_VAR_SCOPE_READONLY,
          &OSC_UCXX.keep_comm);
    OSC_UCXX.comm_windows = 32768;
    param("comm_windows",
          "Windows numbered on one shared communicator (osc_ucxx_keep_comm) before the next "
          "window duplicates the communicator anew; at most 32768 (a window's id carries "
          "its number in 15 bits). For tests",
          MCA_BASE_VAR_TYPE_UNSIGNED_INT, OPAL_INFO_LVL_9, MCA_BASE_VAR_SCOPE_READONLY,
          &OSC_UCXX.comm_windows);
    if (OSC_UCXX.comm_windows < 1 || OSC_UCXX.comm_windows > 32768) {
        OSC_UCXX.comm_windows = 32768;
    }

    if (OSC_UCXX.post_poll_interval < 1) {
        OSC_UCXX.post_poll_interval = 1;
    }
    return OMPI_SUCCESS;
}

/* Will windows come to us: the osc selection names us (and is not an
 * exclusion list), or our priority beats the stock components' (osc/rdma's
 * 101)? */
static bool windows_ours(void)
{
    int idx = mca_base_var_find("ompi", "osc", NULL, NULL);
    char **value = NULL;

    if (OSC_UCXX.priority > 101) return true;
    if (idx < 0 || OPAL_SUCCESS != mca_base_var_get_value(idx, &value, NULL, NULL) ||
        NULL == value || NULL == *value || '^' == (*value)[0]) {
        return false;
    }
    for (const char *p = *value; NULL != (p = strstr(p, "ucxx")); p += 4) {
        if ((p == *value || ',' == p[-1]) && (',' == p[4] || '\0' == p[4])) return true;
    }
    return false;
}

static int component_open(void)
{
    OSC_UCXX.output = opal_output_open(NULL);
    opal_output_set_verbosity(OSC_UCXX.output, OSC_UCXX.verbose);
    ompi_osc_ucxx_audit_init();
#ifdef OSC_UCXX_HELPDIR
    (void) opal_show_help_add_dir(OSC_UCXX_HELPDIR);
#endif
    /* UCX takes milliseconds to come up (UCX 1.18 without pml/ucx: 20+).
     * Where windows will be ours, it comes up inside MPI_Init, which opens
     * us before its modex: our worker address goes into it, and
     * component_init (after the modex) finishes the setup
     * (ompi_osc_ucxx_context_start, _warm).  Otherwise the first window
     * does it all: a program that never makes one, or whose windows go to
     * another component, or a tool that opens us, pays nothing. */
    if (OSC_UCXX.early_start && OMPI_MPI_STATE_INIT_STARTED == ompi_mpi_state &&
        windows_ours()) {
        ompi_osc_ucxx_context_start();
    }
    return OMPI_SUCCESS;
}

/* osc_ucxx_acc_vector as the CPU allows it. */
static unsigned acc_vector_bytes(unsigned asked)
{
    unsigned cpu = ompi_osc_ucxx_cpu_vector();
    unsigned want = 0 == asked ? cpu : asked >= 64 ? 64 : asked >= 32 ? 32 : 16;
    unsigned used = want < cpu ? want : cpu;

    OSC_UCXX_VERBOSE(10, "accumulate sums inline with %u-byte vectors (the CPU has %u)", used,
                     cpu);
    return used;
}

/* Each protocol says what its message kinds are (the transport names
 * none), before the first worker sets them up with UCX. */
static void messages_init(void)
{
    ompi_osc_ucxx_am_init();
    ompi_osc_ucxx_post_am_init();   /* PSCW posts (osc_ucxx_epoch.c) */
    ompi_osc_ucxx_acc_am_init();    /* accumulates applied by the target */
    ompi_osc_ucxx_dyn_am_init();    /* dynamic windows' region lookups */
    ompi_osc_ucxx_uam_am_init();    /* user active messages */
}

static int component_init(bool enable_progress_threads, bool enable_mpi_threads)
{
    OBJ_CONSTRUCT(&OSC_UCXX.lock, opal_mutex_t);
    OBJ_CONSTRUCT(&OSC_UCXX.peer_addrs, opal_hash_table_t);
    OBJ_CONSTRUCT(&OSC_UCXX.windows, opal_hash_table_t);
    OBJ_CONSTRUCT(&OSC_UCXX.requests, opal_free_list_t);
    opal_hash_table_init(&OSC_UCXX.peer_addrs, 256);
    opal_hash_table_init(&OSC_UCXX.windows, 64);
    OSC_UCXX.enable_mpi_threads = enable_mpi_threads;
    OSC_UCXX.mt = enable_mpi_threads || OSC_UCXX.progress_thread;
    ompi_osc_ucxx_info_probe();
    OSC_UCXX.acc_vector_used = acc_vector_bytes(OSC_UCXX.acc_vector);
    messages_init();
    if (ompi_osc_ucxx_context_warm()) {  /* if component_open started UCX */
        ompi_osc_ucxx_state_warm();
    }
    return OMPI_SUCCESS;
}

/* Windows freed here but alive on a peer (zombies, osc_ucxx_window.c) go
 * at finalize, while their workers can still reach the peers. */
static void zombies_release(void)
{
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
}

/* UCX goes last, each layer's part in the order it needs: nothing
 * progresses any more; the zombie windows go while their workers still
 * work; then the workers (endpoints, rkeys); the message queue; the
 * allocations kept for later windows (unmapped on the context); the
 * context. */
static void ucx_fini(void)
{
    if (NULL != OSC_UCXX.context) {
        ompi_osc_ucxx_progress_stop();
        zombies_release();
        ompi_osc_ucxx_workers_fini();
        ompi_osc_ucxx_am_fini();
        ompi_osc_ucxx_kept_release();
    }
    ompi_osc_ucxx_context_fini();
}

static int component_finalize(void)
{
    ompi_osc_ucxx_cma_fini();
    ucx_fini();   /* (zombie windows drop their communicator entries) */
    ompi_osc_ucxx_wcomm_fini();
    OBJ_DESTRUCT(&OSC_UCXX.requests);
    OBJ_DESTRUCT(&OSC_UCXX.windows);
    OBJ_DESTRUCT(&OSC_UCXX.peer_addrs);
    OBJ_DESTRUCT(&OSC_UCXX.lock);
    if (OSC_UCXX.output > 0) {
        opal_output_close(OSC_UCXX.output);
    }
    return OMPI_SUCCESS;
}

static int component_query(struct ompi_win_t *win, void **base, size_t size, int disp_unit,
                           struct ompi_communicator_t *comm, struct opal_info_t *info,
                           int flavor)
{
    /* A flavor we do not know (a later MPI's) is declined, so that
     * `--mca osc ucxx,sm,rdma` hands it to the next component. */
    if (MPI_WIN_FLAVOR_CREATE != flavor && MPI_WIN_FLAVOR_ALLOCATE != flavor &&
        MPI_WIN_FLAVOR_DYNAMIC != flavor && MPI_WIN_FLAVOR_SHARED != flavor) {
        OSC_UCXX_VERBOSE(10, "declining window flavor %d", flavor);
        return -1;
    }
    if (!ompi_osc_ucxx_comm_cid_is_global(comm)) {
        OSC_UCXX_VERBOSE(10, "declining a window over a communicator without a global id");
        return -1;
    }
    return OSC_UCXX.priority;
}
