/*
 * Copyright (c) 2026 The osc/ucxx authors. All rights reserved.
 * $COPYRIGHT$
 *
 * The MCA component: parameters, which windows we take, init and the order
 * of finalize, the module table and the entry points that span the layers
 * (MPI_Win_free, MPI_Win_shared_query), and what the layers above the
 * window make and drop in it, in their order (osc_ucxx_window.c calls
 * through the table this file gives it).
 */

#include "ompi_config.h"

#include <limits.h>

#include "opal/mca/base/mca_base_var.h"
#include "ompi/runtime/mpiruntime.h"

#include "osc_ucxx.h"
#include "osc_ucxx_acc.h"
#include "osc_ucxx_cma.h"
#include "osc_ucxx_dynamic.h"
#include "osc_ucxx_ext.h"
#include "osc_ucxx_uam.h"
#include "osc_ucxx_notice.h"
#include "osc_ucxx_share.h"
#include "osc_ucxx_lockq.h"

static int component_register(void);
static int component_open(void);
static int component_init(bool enable_progress_threads, bool enable_mpi_threads);
static int component_finalize(void);
static int component_query(struct ompi_win_t *win, void **base, size_t size, int disp_unit,
                           struct ompi_communicator_t *comm, struct opal_info_t *info,
                           int flavor);
static int component_select(struct ompi_win_t *win, void **base, size_t size, int disp_unit,
                            struct ompi_communicator_t *comm, struct opal_info_t *info,
                            int flavor, int *model);

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
        .osc_select = component_select,
        .osc_finalize = component_finalize,
    },
    .priority = 0,
    .use_direct = true,
    .per_thread_workers = true,
    .post_poll_interval = 16,
    .yield_after = 256,
    .fence_by_flush = -1,
    .fence_barrier = true,
    .max_rails = 1,            /* (a UCX 1.13 connection-setup failure over several TCP devices) */
    .acc_hold = 64 * 1024,     /* what another origin's accumulate waits at most */
    .acc_am_chunk = 32 * 1024,
    .acc_am_inflight = 8,
    .am_chunk = 2048,
    .am_eager = 8000,
    .am_grant_max = 256 * 1024,
    .amv_pack_threshold = 80,
    .am_exclusive_detect = true,
    .prefault = true,
    .keep_comm = true,
    .comm_windows = 32768,
    .peer_cap = 1024,
    .progress_wait = true,
    .progress_interval_us = 20,
    .progress_efd = -1,
    .progress_wake_fd = -1,
    .progress_busy_fd = -1,
    .inline_keys = true,
    .node_posts = 256,
};

/* One MCA parameter: its default is what *storage holds already. */
static void param(const char *name, const char *help, mca_base_var_type_t type,
                  mca_base_var_info_lvl_t level, mca_base_var_scope_t scope, void *storage)
{
    (void) mca_base_component_var_register(&mca_osc_ucxx_component.super.osc_version, name,
                                           help, type, NULL, 0, 0, level, scope, storage);
}

/* Settings no user needs to choose, with their defaults in OSC_UCXX: tests
 * and benchmarks change them through the environment,
 * OSC_UCXX_TEST_TUNE="name=value,name=value" (read once, here), to reach
 * paths the defaults do not take on this machine (small chunks and holds,
 * no direct mappings, no kept allocations...).  Not MCA parameters: a
 * setting that only tuned one machine or only serves a test is no
 * parameter a user should have to read about. */
typedef struct {
    const char *name;
    char kind;   /* b bool, i int, u unsigned, l unsigned long */
    void *field;
} tunable_t;

static const tunable_t tunables[] = {
    {"direct", 'b', &OSC_UCXX.use_direct},
    {"poll_interval", 'i', &OSC_UCXX.post_poll_interval},
    {"yield_after", 'i', &OSC_UCXX.yield_after},
    {"fence_by_flush", 'i', &OSC_UCXX.fence_by_flush},
    {"fence_barrier", 'b', &OSC_UCXX.fence_barrier},
    {"max_rails", 'i', &OSC_UCXX.max_rails},
    {"acc_hold", 'l', &OSC_UCXX.acc_hold},
    {"acc_am_chunk", 'l', &OSC_UCXX.acc_am_chunk},
    {"acc_am_inflight", 'i', &OSC_UCXX.acc_am_inflight},
    {"acc_vector", 'u', &OSC_UCXX.acc_vector},
    {"am_chunk", 'l', &OSC_UCXX.am_chunk},
    {"am_eager", 'l', &OSC_UCXX.am_eager},
    {"am_grant_max", 'l', &OSC_UCXX.am_grant_max},
    {"amv_pack_threshold", 'i', &OSC_UCXX.amv_pack_threshold},
    {"am_exclusive_detect", 'b', &OSC_UCXX.am_exclusive_detect},
    {"prefault", 'b', &OSC_UCXX.prefault},
    {"keep_comm", 'b', &OSC_UCXX.keep_comm},
    {"comm_windows", 'u', &OSC_UCXX.comm_windows},
    {"peer_cap", 'i', &OSC_UCXX.peer_cap},
    {"progress_wait", 'b', &OSC_UCXX.progress_wait},       /* 0: the thread polls */
    {"progress_interval", 'i', &OSC_UCXX.progress_interval_us},  /* ... napping this long */
    {"busy_fd", 'b', &OSC_UCXX.test_busy_fd},  /* its wait also on an always-ready fd */
    {"device_atomics", 'b', &OSC_UCXX.test_device_atomics},  /* as if UCX had a device's */
    {"inline_keys", 'b', &OSC_UCXX.inline_keys},  /* 0: rkeys by the second exchange */
    {"node_posts", 'i', &OSC_UCXX.node_posts},  /* ranks whose post slots a node's segment holds */
};

static void tune_one(const char *name, size_t len, const char *value)
{
    for (size_t i = 0; i < sizeof(tunables) / sizeof(tunables[0]); ++i) {
        const tunable_t *t = &tunables[i];
        if (strlen(t->name) != len || 0 != strncmp(t->name, name, len)) continue;
        switch (t->kind) {
        case 'b': *(bool *) t->field = 0 != strtol(value, NULL, 0); break;
        case 'i': *(int *) t->field = (int) strtol(value, NULL, 0); break;
        case 'u': *(unsigned *) t->field = (unsigned) strtoul(value, NULL, 0); break;
        default: *(unsigned long *) t->field = strtoul(value, NULL, 0); break;
        }
        return;
    }
    opal_output(0, "osc/ucxx: OSC_UCXX_TEST_TUNE names no setting '%.*s'", (int) len, name);
}

static void tune_from_environment(void)
{
    const char *p = getenv("OSC_UCXX_TEST_TUNE");

    while (NULL != p && '\0' != *p) {
        const char *end = strchr(p, ','), *eq = strchr(p, '=');
        size_t len = NULL == end ? strlen(p) : (size_t) (end - p);
        if (NULL != eq && eq < p + len) tune_one(p, (size_t) (eq - p), eq + 1);
        p = NULL == end ? NULL : end + 1;
    }
}

/* osc_ucxx_progress_thread: auto, off or on (or -1, 0, 1). */
static void progress_thread_param(void)
{
    static const mca_base_var_enum_value_t values[] = {
        {-1, "auto"}, {0, "off"}, {1, "on"}, {0, NULL}};
    mca_base_var_enum_t *names = NULL;

    (void) mca_base_var_enum_create("osc_ucxx_progress_thread", values, &names);
    (void) mca_base_component_var_register(
        &mca_osc_ucxx_component.super.osc_version, "progress_thread",
        "A thread that serves peers while this process computes outside MPI, so that what "
        "this process's CPU must carry out (RMA, accumulates and active messages from "
        "processes on other nodes, which UCX sends as messages) completes without waiting "
        "for the application to call MPI. It sleeps until a peer's message arrives (on UCX's "
        "event descriptor; it polls only where UCX has none): no CPU while no peer targets "
        "this process. With it UCX runs thread-safe, at any MPI thread level. auto: on when "
        "some process of the job runs on another node; off; on",
        MCA_BASE_VAR_TYPE_INT, names, 0, 0, OPAL_INFO_LVL_4, MCA_BASE_VAR_SCOPE_READONLY,
        &OSC_UCXX.progress_thread);
    if (NULL != names) OBJ_RELEASE(names);
}

/* MPI_Win_shared_query (MPI 4.1: any flavor).  Answers with a pointer
 * wherever this process can load and store all of the rank's window memory:
 *   - MPI_Win_allocate_shared: the rank's segment in our mapping of the
 *     group's object (size 0: NULL);
 *   - MPI_Win_allocate and MPI_Win_create: our own memory; a peer's where
 *     UCX maps it here (allocated windows on the node, ucp_rkey_ptr);
 * and with size 0 and NULL everywhere else (peers' MPI_Win_create memory,
 * which stays private to them; peers on other nodes, osc_ucxx_direct=0,
 * every rank of a dynamic window, whose memory is attached later).
 * MPI_PROC_NULL names the lowest rank whose window is not empty.  Here, at
 * the top, because it may map a peer (osc_ucxx_target.c), as osc/rdma and
 * osc/ucx have it in their component file. */
static void *query_base(ompi_osc_ucxx_module_t *module, int rank)
{
    char *direct;

    if (0 == ompi_osc_ucxx_peer_size(module, rank) || MPI_WIN_FLAVOR_DYNAMIC == module->flavor) {
        return NULL;
    }
    if (NULL != module->shseg) {
        return module->shseg->map + module->shseg->offsets[rank];
    }
    if (rank == module->rank) {
        return module->base;
    }
    direct = ompi_osc_ucxx_direct(module, rank);
    if (NULL != direct) {
        /* the program holds it now: the peer table keeps it mapped */
        module->peers[rank].pinned = true;
    }
    return direct;     /* (direct_data stands for the peer's base) */
}

static int shared_query(struct ompi_win_t *win, int rank, size_t *size, int *disp_unit,
                        void *baseptr)
{
    ompi_osc_ucxx_module_t *module = OSC_UCXX_MODULE(win);
    void *base;

    if (MPI_PROC_NULL == rank) {
        for (rank = 0; rank < module->size - 1 && 0 == ompi_osc_ucxx_peer_size(module, rank);
             ++rank) {
        }
    } else if (rank < 0 || rank >= module->size) {
        return MPI_ERR_RANK;
    }
    base = query_base(module, rank);
    *size = NULL == base ? 0 : (size_t) ompi_osc_ucxx_peer_size(module, rank);
    *disp_unit = ompi_osc_ucxx_peer_disp(module, rank);
    *(void **) baseptr = base;
    return OMPI_SUCCESS;
}

/* MPI_Win_free: refused in an epoch (the collective handle's; a duplicate's
 * free is local), then this process's operations complete, then nobody
 * touches the window again (osc_ucxx_window.c). */
static int win_free(struct ompi_win_t *win)
{
    ompi_osc_ucxx_view_t *view = OSC_UCXX_VIEW(win);
    int rc;

    if (view->original && ompi_osc_ucxx_epoch_busy(view->core)) {
        return OMPI_ERR_RMA_SYNC;
    }
    rc = ompi_osc_ucxx_flush_module(view->core, -1, NULL);
    return OMPI_SUCCESS == rc ? ompi_osc_ucxx_window_free(win) : rc;
}

/* The osc module table every handle starts from (osc_ucxx.h declares the
 * entry points); each handle then takes the accumulate entry points for the
 * CPU's vector width. */
static const ompi_osc_base_module_t module_template = {
    .osc_win_shared_query = shared_query,
    .osc_win_attach = ompi_osc_ucxx_attach,
    .osc_win_detach = ompi_osc_ucxx_detach,
    .osc_free = win_free,

    .osc_put = ompi_osc_ucxx_put,
    .osc_get = ompi_osc_ucxx_get,
    .osc_accumulate = ompi_osc_ucxx_accumulate,
    .osc_compare_and_swap = ompi_osc_ucxx_compare_and_swap,
    .osc_fetch_and_op = ompi_osc_ucxx_fetch_and_op,
    .osc_get_accumulate = ompi_osc_ucxx_get_accumulate,

    .osc_rput = ompi_osc_ucxx_rput,
    .osc_rget = ompi_osc_ucxx_rget,
    .osc_raccumulate = ompi_osc_ucxx_raccumulate,
    .osc_rget_accumulate = ompi_osc_ucxx_rget_accumulate,

    .osc_fence = ompi_osc_ucxx_fence,
    .osc_start = ompi_osc_ucxx_start,
    .osc_complete = ompi_osc_ucxx_complete,
    .osc_post = ompi_osc_ucxx_post,
    .osc_wait = ompi_osc_ucxx_wait,
    .osc_test = ompi_osc_ucxx_test,

    .osc_lock = ompi_osc_ucxx_lock,
    .osc_unlock = ompi_osc_ucxx_unlock,
    .osc_lock_all = ompi_osc_ucxx_lock_all,
    .osc_unlock_all = ompi_osc_ucxx_unlock_all,

    .osc_sync = ompi_osc_ucxx_sync,
    .osc_flush = ompi_osc_ucxx_flush,
    .osc_flush_all = ompi_osc_ucxx_flush_all,
    .osc_flush_local = ompi_osc_ucxx_flush_local,
    .osc_flush_local_all = ompi_osc_ucxx_flush_local_all,
};

/* ------------------------------------------------------------------------- */
/* What the layers above the window keep in it (osc_ucxx_window.c calls
 * these through the table below). */

/* A new handle: its module table. */
static void view_init(ompi_osc_ucxx_view_t *view)
{
    view->super = module_template;
    ompi_osc_ucxx_acc_entries(&view->super);
}

/* Every handle of ours frees through win_free: how libmpix_ucxx's calls
 * tell our windows from other components' (osc_ucxx_ext.c). */
bool ompi_osc_ucxx_is_ours(struct ompi_win_t *win)
{
    return NULL != win->w_osc_module && win_free == win->w_osc_module->osc_free;
}

/* A new core's access epoch object (none in force yet); the rest of the
 * layers above set their parts up on first use. */
static int core_init(ompi_osc_ucxx_module_t *module)
{
    module->access = OBJ_NEW(ompi_osc_ucxx_epoch_t);
    return NULL == module->access ? OMPI_ERR_OUT_OF_RESOURCE : OMPI_SUCCESS;
}

/* A core goes (its last handle freed; or its creation failed, part made):
 * every epoch is closed and our operations are complete.  The protocols'
 * state first (the target's lock queue, the origin's deferred lock
 * requests, user active messages), while the links their messages went
 * on still exist; then the links (rkeys, endpoints' rows, peers'
 * mappings, region caches); then the regions still attached to a dynamic
 * window; the epoch object last.  The window's memory goes after
 * (osc_ucxx_window.c). */
static void core_fini(ompi_osc_ucxx_module_t *module)
{
    ompi_osc_ucxx_lockq_release(module);
    ompi_osc_ucxx_lazy_release(module);
    ompi_osc_ucxx_uam_release(module);
    ompi_osc_ucxx_dyn_settle(module);   /* (its reads use the links) */
    ompi_osc_ucxx_links_release(module);
    ompi_osc_ucxx_dyn_release(module);
    if (NULL != module->access) OBJ_RELEASE(module->access);
}

static const ompi_osc_ucxx_window_above_t window_above = {
    .view_init = view_init,
    .core_init = core_init,
    .core_fini = core_fini,
};

static int component_register(void)
{
    /* Below osc/ucx (60) unless asked for: `--mca osc ucxx` selects us whatever
     * the priority, and a site can raise it to make us the default. */
    OSC_UCXX.priority = 0;
    param("priority",
          "Priority of osc/ucxx among the osc components (the highest usable one is chosen; "
          "stock: rdma 101, sm 100, ucx 60). --mca osc ucxx selects it regardless",
          MCA_BASE_VAR_TYPE_INT, OPAL_INFO_LVL_3, MCA_BASE_VAR_SCOPE_READONLY,
          &OSC_UCXX.priority);

    OSC_UCXX.verbose = 0;
    param("verbose",
          "Verbosity of osc/ucxx diagnostics (0: none, 10: window setup, 20: paths chosen per "
          "peer, 50: every synchronization call, 60: every accumulate's path)",
          MCA_BASE_VAR_TYPE_INT, OPAL_INFO_LVL_5, MCA_BASE_VAR_SCOPE_LOCAL, &OSC_UCXX.verbose);

    OSC_UCXX.per_thread_workers = true;
    param("per_thread_workers",
          "Under MPI_THREAD_MULTIPLE give every thread that issues RMA its own UCX worker, so "
          "that threads flush and progress independently (false: one worker for all threads)",
          MCA_BASE_VAR_TYPE_BOOL, OPAL_INFO_LVL_5, MCA_BASE_VAR_SCOPE_READONLY,
          &OSC_UCXX.per_thread_workers);

    OSC_UCXX.progress_thread = -1;
    progress_thread_param();

    /* 256: runs of up to 256 B take one stripe, and a 4 KiB array still
     * spreads over 16 of the 32 stripes. */
    OSC_UCXX.acc_granularity = 256;
    param("acc_granularity",
          "Bytes of window one accumulate lock covers (a power of two, 8 or more) unless a "
          "window's info key mpi_accumulate_granularity says: smaller blocks let accumulates "
          "on nearby elements run side by side, larger ones cost accumulates of many "
          "elements fewer lock operations. Must be the same on every process",
          MCA_BASE_VAR_TYPE_UNSIGNED_LONG, OPAL_INFO_LVL_5, MCA_BASE_VAR_SCOPE_ALL_EQ,
          &OSC_UCXX.acc_granularity);

    OSC_UCXX.am_sysbuf = 8192;
    param("am_sysbuf",
          "Bytes of internal staging each process keeps, per window, for each origin's active "
          "messages (MPIX_Am), used before any buffer the target attached and without a "
          "handshake; 0: none, every active message needs attached buffer",
          MCA_BASE_VAR_TYPE_UNSIGNED_LONG, OPAL_INFO_LVL_4, MCA_BASE_VAR_SCOPE_READONLY,
          &OSC_UCXX.am_sysbuf);
    OSC_UCXX.am_origin_compute = true;
    param("am_origin_compute",
          "Run an active message's handler in the origin process when the target's persistent "
          "region is mapped there (same node): no message and no target CPU. Handlers that "
          "depend on the target process's own state need false",
          MCA_BASE_VAR_TYPE_BOOL, OPAL_INFO_LVL_4, MCA_BASE_VAR_SCOPE_READONLY,
          &OSC_UCXX.am_origin_compute);

    OSC_UCXX.early_start = true;
    param("early_start",
          "Bring UCX up during MPI_Init when osc/ucxx is selected (--mca osc ucxx, or by "
          "priority), so that the first window pays none of UCX's first-use costs; false: "
          "the first window does it, and a program that makes no window pays nothing",
          MCA_BASE_VAR_TYPE_BOOL, OPAL_INFO_LVL_5, MCA_BASE_VAR_SCOPE_READONLY,
          &OSC_UCXX.early_start);

    OSC_UCXX.alloc_cache = 16UL << 20;
    param("alloc_cache",
          "Bytes of window memory and state that freed windows allocated kept for the next "
          "windows that fit, and most bytes of peers' kept mappings, so that creating and "
          "freeing windows in a loop allocates and maps nothing; 0: nothing kept. "
          "Released at MPI_Finalize",
          MCA_BASE_VAR_TYPE_UNSIGNED_LONG, OPAL_INFO_LVL_5, MCA_BASE_VAR_SCOPE_READONLY,
          &OSC_UCXX.alloc_cache);

    tune_from_environment();
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
    ompi_osc_ucxx_window_above(&window_above);
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
    ompi_osc_ucxx_notice_am_init(); /* completion notices (osc_ucxx_notice.c) */
    ompi_osc_ucxx_acc_am_init();    /* accumulates applied by the target */
    ompi_osc_ucxx_dyn_am_init();    /* dynamic windows' region lookups */
    ompi_osc_ucxx_uam_am_init();    /* user active messages */
    ompi_osc_ucxx_lockq_am_init();  /* target-managed locks: the target's queue */
    ompi_osc_ucxx_lazy_init();      /* ... and the origin's requests */
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
    OSC_UCXX.mt = enable_mpi_threads || ompi_osc_ucxx_progress_thread_wanted();
    OSC_UCXX.acc_vector_used = acc_vector_bytes(OSC_UCXX.acc_vector);
    messages_init();
    ompi_osc_ucxx_target_init(ompi_osc_ucxx_dyn_cache_free);  /* the peer table's hooks */
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
 * work; the peers' memory mapped here; then the workers (endpoints,
 * rkeys); the message queue; the allocations kept for later windows
 * (unregistered on the context); the context; our shared memory. */
static void ucx_fini(void)
{
    if (NULL != OSC_UCXX.context) {
        ompi_osc_ucxx_progress_stop();
        zombies_release();
        ompi_osc_ucxx_ptab_fini();
        ompi_osc_ucxx_workers_fini();
        ompi_osc_ucxx_am_fini();
        ompi_osc_ucxx_kept_release();
    }
    ompi_osc_ucxx_context_fini();
    ompi_osc_ucxx_share_fini();
    ompi_osc_ucxx_seg_fini();
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
    /* a handle libmpix_ucxx makes on one of our windows (osc_ucxx_ext.c):
     * ours whatever the other components say */
    if (ompi_osc_ucxx_ext_claims(info)) {
        return INT_MAX;
    }
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

static int component_select(struct ompi_win_t *win, void **base, size_t size, int disp_unit,
                            struct ompi_communicator_t *comm, struct opal_info_t *info,
                            int flavor, int *model)
{
    if (ompi_osc_ucxx_ext_claims(info)) {
        return ompi_osc_ucxx_ext_adopt(win, base, info, flavor, model);
    }
    return ompi_osc_ucxx_window_create(win, base, size, disp_unit, comm, info, flavor, model);
}
