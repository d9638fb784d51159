/*
 * Copyright (c) 2026 The osc/ucxx authors. All rights reserved.
 * $COPYRIGHT$
 *
 * libmpix_ucxx: the MPIX_ functions of mpix_ucxx.h.  Argument checks, error
 * handlers and MPI_Win objects live here, with MPI's public API only; the
 * work, and the checks that need Open MPI's internals, are osc/ucxx's,
 * through the table it exports (osc_ucxx_ext.h).
 */

#define _GNU_SOURCE   /* dl_iterate_phdr */
#include <dlfcn.h>
#include <inttypes.h>
#include <link.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ompi/mca/osc/ucxx/osc_ucxx_ext.h"
#include "mpix_ucxx.h"

/* ------------------------------------------------------------------------- */
/* osc/ucxx's table: in the component Open MPI loaded (dlopen, privately),
 * by name.  Looked for until found: before MPI_Init, or where another
 * component drives the windows, it is not there. */

static const ompi_osc_ucxx_ext_t *ext_table;

static int find_component(struct dl_phdr_info *info, size_t size, void *path)
{
    const char *slash = strrchr(info->dlpi_name, '/');
    (void) size;
    if (0 != strcmp(NULL != slash ? slash + 1 : info->dlpi_name, OSC_UCXX_COMPONENT_FILE)) {
        return 0;
    }
    *(const char **) path = info->dlpi_name;
    return 1;
}

static const ompi_osc_ucxx_ext_t *ext_find(void)
{
    const ompi_osc_ucxx_ext_t *t = __atomic_load_n(&ext_table, __ATOMIC_ACQUIRE);
    const char *path = NULL;
    void *handle;

    if (NULL != t) return t;
    dl_iterate_phdr(find_component, &path);
    /* (no reference of ours: Open MPI's keeps it loaded until MPI_Finalize) */
    handle = NULL != path ? dlopen(path, RTLD_LAZY | RTLD_NOLOAD) : NULL;
    if (NULL == handle) return NULL;
    t = dlsym(handle, OSC_UCXX_EXT_SYMBOL);
    dlclose(handle);
    if (NULL == t || OSC_UCXX_EXT_VERSION != t->version) return NULL;
    __atomic_store_n(&ext_table, t, __ATOMIC_RELEASE);
    return t;
}

/* osc/ucxx's table for this window, or NULL if another component drives it. */
static const ompi_osc_ucxx_ext_t *ext_of(MPI_Win win)
{
    const ompi_osc_ucxx_ext_t *ext = ext_find();
    return NULL != ext && ext->owns(win) ? ext : NULL;
}

/* Report rc through win's error handler (MPI_COMM_WORLD's without a window). */
static __attribute__((noinline)) int report_error(MPI_Win win, int rc, const char *func)
{
    const ompi_osc_ucxx_ext_t *ext = ext_find();

    if (NULL != ext) return ext->report(win, rc, func);
    /* no osc/ucxx: every window is another component's (MPI_ERR_WIN) */
    if (NULL == win || MPI_WIN_NULL == win) {
        MPI_Comm_call_errhandler(MPI_COMM_WORLD, rc);
    } else {
        MPI_Win_call_errhandler(win, rc);
    }
    return rc;
}

static inline int report(MPI_Win win, int rc, const char *func)
{
    return MPI_SUCCESS == rc ? MPI_SUCCESS : report_error(win, rc, func);
}

#define CHECK_EXT(win, ext, func)                                                   \
    const ompi_osc_ucxx_ext_t *ext = ext_of(win);                                 \
    if (NULL == ext) {                                                            \
        return report(win, MPI_ERR_WIN, func);                                    \
    }

/* ------------------------------------------------------------------------- */
/* Local windows (duplicates, memory-handle windows).  osc/ucxx makes the
 * view on the parent's window and names it by a token; the MPI_Win comes
 * from the public creation call of the window's flavor over a private
 * duplicate of MPI_COMM_SELF (a collective of one process: local), whose
 * info carries the token, so that osc/ucxx takes that creation and attaches
 * the view to the new window (the parent's group, base and memory model).
 * Why a duplicate: its error handler returns, so that a failure is reported
 * through the parent window's handler and not MPI_COMM_SELF's; and the
 * application's own collectives on MPI_COMM_SELF, in another thread, never
 * meet ours (ours are one at a time, under self_lock). */

static pthread_mutex_t self_lock = PTHREAD_MUTEX_INITIALIZER;
static MPI_Comm self_comm = MPI_COMM_NULL;

/* MPI_Finalize deletes MPI_COMM_SELF's attributes first: ours frees the
 * duplicate while MPI still works. */
static int self_comm_free(MPI_Comm comm, int keyval, void *value, void *extra)
{
    (void) comm, (void) keyval, (void) value, (void) extra;
    return MPI_COMM_NULL == self_comm ? MPI_SUCCESS : MPI_Comm_free(&self_comm);
}

/* The duplicate, made at the first local window (under self_lock). */
static int self_comm_get(void)
{
    int keyval, rc;

    if (MPI_COMM_NULL != self_comm) return MPI_SUCCESS;
    rc = MPI_Comm_dup(MPI_COMM_SELF, &self_comm);
    if (MPI_SUCCESS == rc) rc = MPI_Comm_set_errhandler(self_comm, MPI_ERRORS_RETURN);
    if (MPI_SUCCESS == rc) {
        rc = MPI_Comm_create_keyval(MPI_COMM_NULL_COPY_FN, self_comm_free, &keyval, NULL);
    }
    if (MPI_SUCCESS == rc) rc = MPI_Comm_set_attr(MPI_COMM_SELF, keyval, NULL);
    return rc;
}

/* The parent's info with `overrides`' keys over it, and the view's token;
 * MPI_ERR_WIN (Open MPI 5.0's answer) for a value a creation would refuse. */
static int local_info(const ompi_osc_ucxx_ext_t *ext, MPI_Win parent, MPI_Info overrides,
                      uint64_t token, MPI_Info *info)
{
    int nkeys = 0, flag, rc = MPI_Win_get_info(parent, info);
    char key[MPI_MAX_INFO_KEY + 1], value[MPI_MAX_INFO_VAL + 1];

    if (MPI_SUCCESS != rc) return rc;
    if (MPI_INFO_NULL != overrides) rc = MPI_Info_get_nkeys(overrides, &nkeys);
    for (int i = 0; MPI_SUCCESS == rc && i < nkeys; ++i) {
        rc = MPI_Info_get_nthkey(overrides, i, key);
        if (MPI_SUCCESS == rc) rc = MPI_Info_get(overrides, key, MPI_MAX_INFO_VAL, value, &flag);
        if (MPI_SUCCESS == rc && flag && !ext->info_value_ok(key, value)) rc = MPI_ERR_WIN;
        if (MPI_SUCCESS == rc && flag) rc = MPI_Info_set(*info, key, value);
    }
    snprintf(value, sizeof(value), "%" PRIu64, token);
    if (MPI_SUCCESS == rc) rc = MPI_Info_set(*info, OSC_UCXX_VIEW_KEY, value);
    return rc;
}

/* The creation call of `flavor` (MPI_WIN_CREATE_FLAVOR's value). */
static int create_like(int flavor, void *base, MPI_Aint size, int disp_unit, MPI_Info info,
                       MPI_Win *win)
{
    void *ignored;

    switch (flavor) {
    case MPI_WIN_FLAVOR_ALLOCATE:
        return MPI_Win_allocate(size, disp_unit, info, self_comm, &ignored, win);
    case MPI_WIN_FLAVOR_SHARED:
        return MPI_Win_allocate_shared(size, disp_unit, info, self_comm, &ignored, win);
    case MPI_WIN_FLAVOR_DYNAMIC:
        return MPI_Win_create_dynamic(info, self_comm, win);
    default:
        return MPI_Win_create(base, size, disp_unit, info, self_comm, win);
    }
}

/* The MPI_Win for the view `token` names, with parent's error handler (a
 * new window's is MPI_ERRORS_ARE_FATAL).  The view is dropped if no window
 * took it. */
static int local_window(const ompi_osc_ucxx_ext_t *ext, MPI_Win parent, MPI_Info overrides,
                        uint64_t token, int flavor, void *base, MPI_Aint size, int disp_unit,
                        MPI_Win *win)
{
    MPI_Info info = MPI_INFO_NULL;
    MPI_Errhandler eh;
    int rc = local_info(ext, parent, overrides, token, &info);

    if (MPI_SUCCESS == rc) {
        pthread_mutex_lock(&self_lock);
        rc = self_comm_get();
        if (MPI_SUCCESS == rc) rc = create_like(flavor, base, size, disp_unit, info, win);
        pthread_mutex_unlock(&self_lock);
    }
    if (MPI_INFO_NULL != info) MPI_Info_free(&info);
    if (MPI_SUCCESS != rc) {
        ext->view_cancel(token);
        return rc;
    }
    rc = MPI_Win_get_errhandler(parent, &eh);
    if (MPI_SUCCESS == rc) {
        rc = MPI_Win_set_errhandler(*win, eh);
        MPI_Errhandler_free(&eh);
    }
    if (MPI_SUCCESS != rc) MPI_Win_free(win);
    return rc;
}

/* ------------------------------------------------------------------------- */

int MPIX_Win_dup_with_info(MPI_Win win, MPI_Info info, MPI_Win *newwin)
{
    static const char func[] = "MPIX_Win_dup_with_info";
    void *base = NULL;
    MPI_Aint *size = NULL;
    int *disp_unit = NULL, *flavor = NULL, flag, rc;
    uint64_t token;

    CHECK_EXT(win, ext, func);
    if (NULL == newwin) return report(win, MPI_ERR_ARG, func);
    MPI_Win_get_attr(win, MPI_WIN_BASE, &base, &flag);
    MPI_Win_get_attr(win, MPI_WIN_SIZE, &size, &flag);
    MPI_Win_get_attr(win, MPI_WIN_DISP_UNIT, &disp_unit, &flag);
    MPI_Win_get_attr(win, MPI_WIN_CREATE_FLAVOR, &flavor, &flag);

    rc = ext->dup(win, &token);
    if (MPI_SUCCESS == rc) {
        rc = local_window(ext, win, info, token, NULL != flavor ? *flavor : MPI_WIN_FLAVOR_CREATE,
                          base, NULL != size ? *size : 0, NULL != disp_unit ? *disp_unit : 1,
                          newwin);
    }
    return report(win, rc, func);
}

int MPIX_Win_op_intrinsic(const char *ops, MPI_Aint max_count, MPI_Datatype type, MPI_Win win,
                          int *flag)
{
    static const char func[] = "MPIX_Win_op_intrinsic";
    CHECK_EXT(win, ext, func);
    if (NULL == ops || NULL == flag || NULL == type || MPI_DATATYPE_NULL == type) {
        return report(win, MPI_ERR_ARG, func);
    }
    return report(win, ext->op_intrinsic(win, ops, max_count, type, flag), func);
}

/* ------------------------------------------------------------------------- */
/* Memory handles */

int MPIX_Memhandle_create(void *base, MPI_Aint size, MPI_Info info, MPI_Win parentwin,
                          void *memhandle, int *memhandle_size)
{
    static const char func[] = "MPIX_Memhandle_create";
    CHECK_EXT(parentwin, ext, func);
    if (size < 0 || NULL == memhandle || NULL == memhandle_size || (size > 0 && NULL == base)) {
        return report(parentwin, MPI_ERR_ARG, func);
    }
    return report(parentwin,
                  ext->memhandle_create(parentwin, base, (size_t) size, memhandle,
                                        memhandle_size),
                  func);
}

int MPIX_Win_from_memhandle(const void *memhandle, MPI_Aint size, int disp_unit, MPI_Info info,
                            int target, MPI_Win parentwin, MPI_Win *newwin)
{
    static const char func[] = "MPIX_Win_from_memhandle";
    uint64_t token;
    int rc;

    CHECK_EXT(parentwin, ext, func);
    if (NULL == memhandle || NULL == newwin || size < 0) {
        return report(parentwin, MPI_ERR_ARG, func);
    }
    rc = ext->memhandle_window(parentwin, memhandle, (size_t) size, disp_unit, target, &token);
    /* a window over memory of a fixed size: MPI_Win_create's flavor */
    if (MPI_SUCCESS == rc) {
        rc = local_window(ext, parentwin, info, token, MPI_WIN_FLAVOR_CREATE, NULL, size,
                          disp_unit, newwin);
    }
    return report(parentwin, rc, func);
}

int MPIX_Memhandle_release(void *memhandle, MPI_Win parentwin)
{
    static const char func[] = "MPIX_Memhandle_release";
    CHECK_EXT(parentwin, ext, func);
    if (NULL == memhandle) return report(parentwin, MPI_ERR_ARG, func);
    return report(parentwin, ext->memhandle_release(parentwin, memhandle), func);
}

/* ------------------------------------------------------------------------- */
/* Remote-completing requests */

static int check_rma(const ompi_osc_ucxx_ext_t *ext, MPI_Win win, int origin_count, MPI_Datatype origin_dt, int target,
                     int target_count, MPI_Datatype target_dt, MPI_Request *request)
{
    if (NULL == request || origin_count < 0 || target_count < 0) return MPI_ERR_ARG;
    if (MPI_PROC_NULL != target && !ext->rank_ok(win, target)) return MPI_ERR_RANK;
    if ((origin_count > 0 && (NULL == origin_dt || MPI_DATATYPE_NULL == origin_dt)) ||
        NULL == target_dt || MPI_DATATYPE_NULL == target_dt) {
        return MPI_ERR_TYPE;
    }
    return MPI_SUCCESS;
}

static int check_op(const ompi_osc_ucxx_ext_t *ext, MPI_Op op, bool no_op_ok)
{
    if (NULL == op || MPI_OP_NULL == op || !ext->op_predefined(op)) return MPI_ERR_OP;
    if (!no_op_ok && MPI_NO_OP == op) return MPI_ERR_OP;
    return MPI_SUCCESS;
}

int MPIX_Rrput(const void *origin_addr, int origin_count, MPI_Datatype origin_datatype,
               int target_rank, MPI_Aint target_disp, int target_count,
               MPI_Datatype target_datatype, MPI_Win win, MPI_Request *request)
{
    static const char func[] = "MPIX_Rrput";
    int rc;
    CHECK_EXT(win, ext, func);
    rc = check_rma(ext, win, origin_count, origin_datatype, target_rank, target_count,
                   target_datatype, request);
    if (MPI_SUCCESS == rc) {
        rc = ext->rrput(origin_addr, origin_count, origin_datatype, target_rank, target_disp,
                        target_count, target_datatype, win, request);
    }
    return report(win, rc, func);
}

int MPIX_Rraccumulate(const void *origin_addr, int origin_count, MPI_Datatype origin_datatype,
                      int target_rank, MPI_Aint target_disp, int target_count,
                      MPI_Datatype target_datatype, MPI_Op op, MPI_Win win,
                      MPI_Request *request)
{
    static const char func[] = "MPIX_Rraccumulate";
    int rc;
    CHECK_EXT(win, ext, func);
    rc = check_rma(ext, win, origin_count, origin_datatype, target_rank, target_count,
                   target_datatype, request);
    if (MPI_SUCCESS == rc) rc = check_op(ext, op, false);
    if (MPI_SUCCESS == rc) {
        rc = ext->rraccumulate(origin_addr, origin_count, origin_datatype, NULL, 0, NULL,
                               target_rank, target_disp, target_count, target_datatype, op,
                               false, win, request);
    }
    return report(win, rc, func);
}

int MPIX_Rrget_accumulate(const void *origin_addr, int origin_count,
                          MPI_Datatype origin_datatype, void *result_addr, int result_count,
                          MPI_Datatype result_datatype, int target_rank, MPI_Aint target_disp,
                          int target_count, MPI_Datatype target_datatype, MPI_Op op,
                          MPI_Win win, MPI_Request *request)
{
    static const char func[] = "MPIX_Rrget_accumulate";
    int rc;
    CHECK_EXT(win, ext, func);
    rc = check_rma(ext, win, result_count, result_datatype, target_rank, target_count,
                   target_datatype, request);
    if (MPI_SUCCESS == rc) rc = check_op(ext, op, true);
    if (MPI_SUCCESS == rc) {
        rc = ext->rraccumulate(origin_addr, origin_count, origin_datatype, result_addr,
                               result_count, result_datatype, target_rank, target_disp,
                               target_count, target_datatype, op, true, win, request);
    }
    return report(win, rc, func);
}

/* ------------------------------------------------------------------------- */
/* Active messages.  Op objects live here; osc/ucxx keeps its own copy of
 * what a registration needs, keyed by the op's id (a freed op's address may
 * be reused, its id never is).  A freed op keeps its (small) shell, marked
 * dead, so that using it afterwards is MPI_ERR_OP and not a crash. */

#define AM_OP_MAGIC 0x616d6f70756378ULL   /* "amopucx" */
#define AM_OP_DEAD  0x646561646f7021ULL

struct mpix_am_op_s {
    uint64_t magic;
    uint64_t id;
    int kind;                 /* OSC_UCXX_AM_OP_AM / _AMV */
    void *fn;
    void *extra;
};

static uint64_t am_op_next_id = 1;
/* Inside a handler (osc/ucxx runs them): op create/free and every AM call
 * are refused there. */
static bool am_in_handler(void)
{
    const ompi_osc_ucxx_ext_t *ext = ext_find();
    return NULL != ext && ext->am_in_handler();
}

static bool am_op_valid(MPIX_Am_op op)
{
    return NULL != op && AM_OP_MAGIC == op->magic;
}

static int am_op_create(int kind, void *fn, void *extra, MPIX_Am_op *op)
{
    static const char func[] = "MPIX_Am_op_create";
    struct mpix_am_op_s *o;

    if (am_in_handler()) return report(NULL, MPI_ERR_OTHER, func);
    if (NULL == fn || NULL == op) return report(NULL, MPI_ERR_ARG, func);
    o = calloc(1, sizeof(*o));
    if (NULL == o) return report(NULL, MPI_ERR_NO_MEM, func);
    o->magic = AM_OP_MAGIC;
    o->id = __atomic_fetch_add(&am_op_next_id, 1, __ATOMIC_RELAXED);
    o->kind = kind;
    o->fn = fn;
    o->extra = extra;
    *op = o;
    return MPI_SUCCESS;
}

int MPIX_Am_op_create(MPIX_Am_user_function *user_fn, void *extra_state, MPIX_Am_op *op)
{
    return am_op_create(OSC_UCXX_AM_OP_AM, (void *) user_fn, extra_state, op);
}

int MPIX_Amv_op_create(MPIX_Amv_user_function *user_fn, void *extra_state, MPIX_Am_op *op)
{
    return am_op_create(OSC_UCXX_AM_OP_AMV, (void *) user_fn, extra_state, op);
}

int MPIX_Am_op_free(MPIX_Am_op *op)
{
    static const char func[] = "MPIX_Am_op_free";
    if (am_in_handler()) return report(NULL, MPI_ERR_OTHER, func);
    if (NULL == op) return report(NULL, MPI_ERR_ARG, func);
    if (!am_op_valid(*op)) return report(NULL, MPI_ERR_OP, func);
    (*op)->magic = AM_OP_DEAD;  /* the shell stays: see above */
    (*op)->fn = NULL;
    *op = MPIX_AM_OP_NULL;
    return MPI_SUCCESS;
}

/* The checks every window-based AM call starts with. */
#define CHECK_AM_EXT(win, ext, func)                                              \
    CHECK_EXT(win, ext, func);                                                    \
    if (am_in_handler()) return report(win, MPI_ERR_OTHER, func);              \
    if (OSC_UCXX_EXT_VERSION > ext->version || NULL == ext->am_issue)             \
        return report(win, MPI_ERR_WIN, func);

int MPIX_Am_win_op_register(MPIX_Am_op op, int index, MPI_Win win)
{
    static const char func[] = "MPIX_Am_win_op_register";
    CHECK_AM_EXT(win, ext, func);
    /* bad arguments still take part in the collective agreement (every rank
     * learns that one of them failed): the component handles them */
    /* op ids: 0 for a NULL op (MPI_ERR_ARG), all ones for a freed one (MPI_ERR_OP) */
    return report(win,
                  ext->am_register(win, am_op_valid(op) ? op->id : NULL == op ? 0 : UINT64_MAX,
                                   am_op_valid(op) ? op->kind : 0,
                                   am_op_valid(op) ? op->fn : NULL,
                                   am_op_valid(op) ? op->extra : NULL, index),
                  func);
}

int MPIX_Am_win_op_deregister(MPIX_Am_op op, MPI_Win win)
{
    static const char func[] = "MPIX_Am_win_op_deregister";
    CHECK_AM_EXT(win, ext, func);
    if (!am_op_valid(op)) return report(win, MPI_ERR_OP, func);
    return report(win, ext->am_deregister(win, op->id), func);
}

int MPIX_Am_win_buffer_attach(void *buffer, MPI_Aint size, MPI_Win win)
{
    static const char func[] = "MPIX_Am_win_buffer_attach";
    CHECK_AM_EXT(win, ext, func);
    if (size < 0) return report(win, MPI_ERR_SIZE, func);
    if (NULL == buffer && size > 0) return report(win, MPI_ERR_BUFFER, func);
    return report(win, ext->am_attach(win, buffer, (size_t) size), func);
}

int MPIX_Am_win_buffer_detach(void *buffer, MPI_Win win)
{
    static const char func[] = "MPIX_Am_win_buffer_detach";
    CHECK_AM_EXT(win, ext, func);
    return report(win, ext->am_detach(win, buffer), func);
}

int MPIX_Win_am_epoch_assert(int mpi_assert, MPI_Win win)
{
    static const char func[] = "MPIX_Win_am_epoch_assert";
    CHECK_AM_EXT(win, ext, func);
    return report(win, ext->am_epoch_assert(win, mpi_assert), func);
}

static bool am_bad_type(const ompi_osc_ucxx_ext_t *ext, MPI_Datatype dt)
{
    return NULL == dt || MPI_DATATYPE_NULL == dt || !ext->type_committed(dt);
}

/* The S29 checks the library can make without the window's state. */
static int am_call(int kind, const void *in_addr, int in_count, MPI_Datatype in_dt,
                   void *out_addr, int out_count, MPI_Datatype out_dt, int num_segments,
                   int target, MPI_Datatype tin_dt, MPI_Aint pdisp, int pcount,
                   MPI_Datatype p_dt, MPI_Datatype tout_dt, MPIX_Am_op op, MPI_Win win,
                   int *counts, MPI_Request *request, bool want_request, const char *func)
{
    ompi_osc_ucxx_am_args_t a;
    CHECK_AM_EXT(win, ext, func);
    if (!am_op_valid(op) || op->kind != kind) return report(win, MPI_ERR_OP, func);
    if ((want_request && NULL == request) ||
        (OSC_UCXX_AM_OP_AMV == kind && NULL == counts && num_segments > 0)) {
        return report(win, MPI_ERR_ARG, func);
    }
    if (in_count < 0 || out_count < 0 || pcount < 0 || num_segments < 0) {
        return report(win, MPI_ERR_COUNT, func);
    }
    if (MPI_PROC_NULL != target && !ext->rank_ok(win, target)) {
        return report(win, MPI_ERR_RANK, func);
    }
    if (am_bad_type(ext, in_dt) || am_bad_type(ext, out_dt) || am_bad_type(ext, tin_dt) ||
        am_bad_type(ext, p_dt) || am_bad_type(ext, tout_dt)) {
        return report(win, MPI_ERR_TYPE, func);
    }
    a = (ompi_osc_ucxx_am_args_t){in_addr, in_count, in_dt, out_addr, out_count, out_dt,
                                  num_segments, target, tin_dt, pdisp, pcount, p_dt, tout_dt,
                                  op->id, kind};
    return report(win, ext->am_issue(win, &a, counts, want_request ? request : NULL), func);
}

/* The arguments every MPIX_Am* passes on, by their names in the prototypes. */
#define AM_ARGS                                                                       \
    origin_input_addr, origin_input_segment_count, origin_input_segment_datatype,     \
        origin_output_addr, origin_output_segment_count, origin_output_segment_datatype, \
        num_segments, target_rank, target_input_segment_datatype, target_persistent_disp, \
        target_persistent_count, target_persistent_datatype,                           \
        target_output_segment_datatype, op, win

int MPIX_Am(const void *origin_input_addr, int origin_input_segment_count,
            MPI_Datatype origin_input_segment_datatype, void *origin_output_addr,
            int origin_output_segment_count, MPI_Datatype origin_output_segment_datatype,
            int num_segments, int target_rank, MPI_Datatype target_input_segment_datatype,
            MPI_Aint target_persistent_disp, int target_persistent_count,
            MPI_Datatype target_persistent_datatype,
            MPI_Datatype target_output_segment_datatype, MPIX_Am_op op, MPI_Win win)
{
    return am_call(OSC_UCXX_AM_OP_AM, AM_ARGS, NULL, NULL, false, "MPIX_Am");
}

int MPIX_Amv(const void *origin_input_addr, int origin_input_segment_count,
             MPI_Datatype origin_input_segment_datatype, void *origin_output_addr,
             int origin_output_segment_count, MPI_Datatype origin_output_segment_datatype,
             int num_segments, int target_rank, MPI_Datatype target_input_segment_datatype,
             MPI_Aint target_persistent_disp, int target_persistent_count,
             MPI_Datatype target_persistent_datatype,
             MPI_Datatype target_output_segment_datatype, MPIX_Am_op op, MPI_Win win,
             int output_segment_counts[])
{
    return am_call(OSC_UCXX_AM_OP_AMV, AM_ARGS, output_segment_counts, NULL, false,
                   "MPIX_Amv");
}

int MPIX_Ram(const void *origin_input_addr, int origin_input_segment_count,
             MPI_Datatype origin_input_segment_datatype, void *origin_output_addr,
             int origin_output_segment_count, MPI_Datatype origin_output_segment_datatype,
             int num_segments, int target_rank, MPI_Datatype target_input_segment_datatype,
             MPI_Aint target_persistent_disp, int target_persistent_count,
             MPI_Datatype target_persistent_datatype,
             MPI_Datatype target_output_segment_datatype, MPIX_Am_op op, MPI_Win win,
             MPI_Request *request)
{
    return am_call(OSC_UCXX_AM_OP_AM, AM_ARGS, NULL, request, true, "MPIX_Ram");
}

int MPIX_Ramv(const void *origin_input_addr, int origin_input_segment_count,
              MPI_Datatype origin_input_segment_datatype, void *origin_output_addr,
              int origin_output_segment_count, MPI_Datatype origin_output_segment_datatype,
              int num_segments, int target_rank, MPI_Datatype target_input_segment_datatype,
              MPI_Aint target_persistent_disp, int target_persistent_count,
              MPI_Datatype target_persistent_datatype,
              MPI_Datatype target_output_segment_datatype, MPIX_Am_op op, MPI_Win win,
              int output_segment_counts[], MPI_Request *request)
{
    return am_call(OSC_UCXX_AM_OP_AMV, AM_ARGS, output_segment_counts, request,
                   true, "MPIX_Ramv");
}
