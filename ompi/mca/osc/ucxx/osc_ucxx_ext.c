/*
 * Copyright (c) 2026 The osc/ucxx authors. All rights reserved.
 * $COPYRIGHT$
 *
 * The extensions behind libmpix_ucxx (mpix_ucxx.h): window duplication,
 * memory-handle windows, the intrinsic-accumulate query and
 * remote-completing requests.  Everything here is local to the caller.
 */

#include "ompi_config.h"

#include <ctype.h>

#include "ompi/communicator/communicator.h"
#include "ompi/errhandler/errhandler.h"
#include "ompi/group/group.h"
#include "ompi/op/op.h"
#include "opal/util/info.h"

#include "osc_ucxx.h"
#include "osc_ucxx_dynamic.h"
#include "osc_ucxx_uam.h"

/* ------------------------------------------------------------------------- */
/* What the library checks through us: MPI's own argument checks. */

static bool ext_owns(struct ompi_win_t *win)
{
    return !ompi_win_invalid(win) && ompi_osc_ucxx_is_ours(win);
}

static int ext_report(struct ompi_win_t *win, int rc, const char *func)
{
    if (ompi_win_invalid(win)) {
        return OMPI_ERRHANDLER_INVOKE(&ompi_mpi_comm_world.comm, rc, func);
    }
    return OMPI_ERRHANDLER_INVOKE(win, rc, func);
}

static bool ext_rank_ok(struct ompi_win_t *win, int rank)
{
    return !ompi_win_peer_invalid(win, rank);
}

static bool ext_type_committed(struct ompi_datatype_t *type)
{
    return ompi_datatype_is_committed(type);
}

static bool ext_op_predefined(struct ompi_op_t *op)
{
    return ompi_op_is_intrinsic(op);
}

/* Open MPI 4.1's window creation crashes on a value of these keys it
 * cannot parse (its failure path releases an info it never set), so the
 * library asks first, with the parser Open MPI uses. */
static bool ext_info_value_ok(const char *key, const char *value)
{
    mca_base_var_enum_t *e = NULL;
    int v;

    if (0 == strcmp(key, "accumulate_ops")) {
        e = ompi_win_accumulate_ops;
    } else if (0 == strcmp(key, "accumulate_ordering")) {
        e = &ompi_win_accumulate_order->super;
    }
    return NULL == e || OPAL_SUCCESS == e->value_from_string(e, value, &v);
}

/* ------------------------------------------------------------------------- */
/* Local windows (MPIX_Win_dup_with_info, MPIX_Win_from_memhandle): a view
 * on a parent's core, made here first (every argument check, with its
 * error class), kept under a token, then claimed by the MPI_Win the
 * library creates with the public call of the window's flavor over
 * MPI_COMM_SELF, which is local: the token travels in the creation info
 * (OSC_UCXX_VIEW_KEY), component_query gives that creation to us above
 * every other component, and component_select adopts the view instead of
 * making a window (ompi_osc_ucxx_ext_adopt). */

typedef struct pending_view {
    struct pending_view *next;
    uint64_t token;
    ompi_osc_ucxx_view_t *view;
    ompi_group_t *group;            /* the parent's (retained): ranks name its peers */
} pending_view_t;

static pending_view_t *pending;     /* few, and each for one creation call */
static uint64_t pending_next = 1;

static int pending_add(ompi_osc_ucxx_view_t *view, struct ompi_win_t *parent, uint64_t *token)
{
    pending_view_t *p = malloc(sizeof(*p));

    if (NULL == p) return OMPI_ERR_OUT_OF_RESOURCE;
    p->view = view;
    p->group = parent->w_group;
    OBJ_RETAIN(p->group);
    OSC_UCXX_LOCK(&OSC_UCXX.lock);
    p->token = *token = pending_next++;
    p->next = pending;
    pending = p;
    OSC_UCXX_UNLOCK(&OSC_UCXX.lock);
    return OMPI_SUCCESS;
}

/* The pending view `token` names, out of the list if `take`. */
static pending_view_t *pending_find(uint64_t token, bool take)
{
    pending_view_t **at, *p;

    OSC_UCXX_LOCK(&OSC_UCXX.lock);
    for (at = &pending; NULL != *at && (*at)->token != token; at = &(*at)->next) {
    }
    p = *at;
    if (NULL != p && take) *at = p->next;
    OSC_UCXX_UNLOCK(&OSC_UCXX.lock);
    return p;
}

/* The token in a creation's info, 0 without one. */
static uint64_t pending_token(struct opal_info_t *info)
{
    char buf[32];
    int flag = 0;

    if (NULL == info ||
        OPAL_SUCCESS != ompi_osc_ucxx_info_get(info, OSC_UCXX_VIEW_KEY, buf, sizeof(buf), &flag) ||
        !flag) {
        return 0;
    }
    return strtoull(buf, NULL, 10);
}

static void view_drop(ompi_osc_ucxx_view_t *view)
{
    ompi_osc_ucxx_module_t *core = view->core;
    free(view);
    ompi_osc_ucxx_core_release(core, false);
}

/* A library's creation failed before our select adopted the view. */
static void ext_view_cancel(uint64_t token)
{
    pending_view_t *p = pending_find(token, true);

    if (NULL == p) return;
    view_drop(p->view);
    OBJ_RELEASE(p->group);
    free(p);
}

bool ompi_osc_ucxx_ext_claims(struct opal_info_t *info)
{
    uint64_t token = pending_token(info);
    return 0 != token && NULL != pending_find(token, false);
}

/* component_select for a creation we claimed: `win` (Open MPI's, made over
 * MPI_COMM_SELF) becomes a handle on the parent's core, with the parent's
 * group; the allocating flavors return the parent's memory.  The token
 * leaves the window's info. */
int ompi_osc_ucxx_ext_adopt(struct ompi_win_t *win, void **base, struct opal_info_t *info,
                            int flavor, int *model)
{
    pending_view_t *p = pending_find(pending_token(info), true);

    if (NULL == p) return OMPI_ERR_NOT_FOUND;
    win->w_osc_module = &p->view->super;
    if (NULL != win->w_group) OBJ_RELEASE(win->w_group);
    win->w_group = p->group;        /* (our reference goes to the window) */
    if (MPI_WIN_FLAVOR_ALLOCATE == flavor || MPI_WIN_FLAVOR_SHARED == flavor) {
        *base = p->view->core->base;
    }
    *model = MPI_WIN_UNIFIED;
    free(p);
    if (NULL != win->super.s_info) (void) opal_info_delete(win->super.s_info, OSC_UCXX_VIEW_KEY);
    /* settings come from the window's info: the parent's, with overrides */
    ompi_osc_ucxx_subscribe_info(win);
    return OMPI_SUCCESS;
}

/* MPIX_Win_dup_with_info: another view on the same core. */
static int ext_dup(struct ompi_win_t *win, uint64_t *token)
{
    ompi_osc_ucxx_view_t *parent = OSC_UCXX_VIEW(win);
    ompi_osc_ucxx_view_t *view = ompi_osc_ucxx_view_new(parent->core, false);
    int rc;

    if (NULL == view) {
        return OMPI_ERR_OUT_OF_RESOURCE;
    }
    /* a duplicate of a memory-handle window reaches the same memory */
    view->memhandle = parent->memhandle;
    view->mh_target = parent->mh_target;
    view->mh_base = parent->mh_base;
    view->mh_size = parent->mh_size;
    view->mh_disp_unit = parent->mh_disp_unit;
    rc = pending_add(view, win, token);
    if (OMPI_SUCCESS != rc) view_drop(view);
    return rc;
}

/* ------------------------------------------------------------------------- */
/* MPIX_Win_op_intrinsic */

static const struct {
    const char *name;
    ompi_op_t *op;
} op_names[] = {
    {"sum", &ompi_mpi_op_sum.op},   {"prod", &ompi_mpi_op_prod.op},
    {"min", &ompi_mpi_op_min.op},   {"max", &ompi_mpi_op_max.op},
    {"band", &ompi_mpi_op_band.op}, {"bor", &ompi_mpi_op_bor.op},
    {"bxor", &ompi_mpi_op_bxor.op}, {"land", &ompi_mpi_op_land.op},
    {"lor", &ompi_mpi_op_lor.op},   {"lxor", &ompi_mpi_op_lxor.op},
    {"replace", &ompi_mpi_op_replace.op}, {"no_op", &ompi_mpi_op_no_op.op},
    {"maxloc", &ompi_mpi_op_maxloc.op},   {"minloc", &ompi_mpi_op_minloc.op},
    {"cas", NULL},
};

static bool op_on_type(ompi_op_t *op, ompi_datatype_t *type)
{
    if (op == &ompi_mpi_op_replace.op || op == &ompi_mpi_op_no_op.op) return true;
    if (-1 == ompi_op_ddt_map[type->id]) return false;
    return NULL != op->o_func.intrinsic.fns[ompi_op_ddt_map[type->id]];
}

static int ext_op_intrinsic(struct ompi_win_t *win, const char *ops, ptrdiff_t max_count,
                            struct ompi_datatype_t *type, int *flag)
{
    ompi_osc_ucxx_module_t *module = OSC_UCXX_MODULE(win);
    char name[32];
    bool all = true;

    if (NULL == ops || max_count < 0) {
        return MPI_ERR_ARG;
    }
    if (!ompi_datatype_is_predefined(type)) {
        /* a derived type answers for the predefined type it is built from */
        type = ompi_datatype_get_single_predefined_type_from_args(type);
        if (NULL == type) return MPI_ERR_TYPE;
    }
    for (const char *p = ops; *p;) {
        size_t n = strcspn(p, ",");
        size_t k;
        bool known = false;
        if (n == 0 || n >= sizeof(name)) return MPI_ERR_ARG;
        for (k = 0; k < n; ++k) name[k] = (char) tolower((unsigned char) p[k]);
        name[n] = '\0';
        for (k = 0; k < sizeof(op_names) / sizeof(op_names[0]); ++k) {
            if (0 == strcmp(name, op_names[k].name)) {
                known = true;
                /* an op not defined on the type never runs anywhere */
                if (NULL != op_names[k].op) all = all && op_on_type(op_names[k].op, type);
                break;
            }
        }
        if (!known) return MPI_ERR_ARG;
        p += n;
        if (',' == *p) ++p;
    }
    /* Whatever the op, type and count: all of it runs on the origin's CPU
     * where the target's memory is mapped, none of it where it is not. */
    *flag = all && ompi_osc_ucxx_intrinsic(module);
    return OMPI_SUCCESS;
}

/* ------------------------------------------------------------------------- */
/* Remote-completing requests: the operation, then a flush of that one
 * endpoint whose completion completes the request. */

static int rr_complete_remotely(ompi_osc_ucxx_view_t *view, int target,
                                ompi_osc_ucxx_request_t *req)
{
    ompi_osc_ucxx_module_t *module = view->core;
    ompi_osc_ucxx_link_t *link;
    ucp_request_param_t param;
    ucs_status_ptr_t sp;

    /* (not mapped: the endpoint's flush completes the UCX operations;
     * copies by cross-memory attach are complete already) */
    if ((MPI_WIN_FLAVOR_DYNAMIC == module->flavor)
            ? target == module->rank
            : ompi_osc_ucxx_fully_mapped(module, target)) {
        opal_atomic_mb();  /* mapped: done when visible */
        return OMPI_SUCCESS;
    }
    link = ompi_osc_ucxx_link_made(module, req->worker, target);
    if (NULL == link) {
        return OMPI_SUCCESS;  /* (no link: nothing issued through UCX) */
    }
    param.op_attr_mask = UCP_OP_ATTR_FIELD_CALLBACK | UCP_OP_ATTR_FIELD_USER_DATA;
    param.cb.send = ompi_osc_ucxx_request_ucx_cb;
    param.user_data = req;
    ompi_osc_ucxx_request_more(req);
    sp = ucp_ep_flush_nbx(link->ep, &param);
    if (UCS_PTR_IS_PTR(sp)) {
        return OMPI_SUCCESS;
    }
    ompi_osc_ucxx_request_op_done(req);
    return UCS_PTR_IS_ERR(sp) ? OMPI_ERROR : OMPI_SUCCESS;
}

static int rr_start(struct ompi_win_t *win, ompi_osc_ucxx_request_t **req)
{
    return ompi_osc_ucxx_request_alloc(win, ompi_osc_ucxx_view_worker(OSC_UCXX_VIEW(win)), req);
}

static int rr_finish(struct ompi_win_t *win, int target, ompi_osc_ucxx_request_t *req, int rc,
                     struct ompi_request_t **request)
{
    if (OMPI_SUCCESS == rc && MPI_PROC_NULL != target) {
        rc = rr_complete_remotely(OSC_UCXX_VIEW(win), target, req);
    }
    if (OMPI_SUCCESS != rc) {
        ompi_osc_ucxx_request_abandon(req);
        return rc;
    }
    ompi_osc_ucxx_request_op_done(req);  /* drop the issuing reference */
    *request = &req->super;
    return OMPI_SUCCESS;
}

static int ext_rrput(const void *origin_addr, int origin_count,
                     struct ompi_datatype_t *origin_dt, int target, ptrdiff_t target_disp,
                     int target_count, struct ompi_datatype_t *target_dt,
                     struct ompi_win_t *win, struct ompi_request_t **request)
{
    ompi_osc_ucxx_request_t *req;
    int rc = rr_start(win, &req);
    if (OMPI_SUCCESS != rc) return rc;
    if (MPI_PROC_NULL != target) {
        rc = ompi_osc_ucxx_put_get(OSC_UCXX_VIEW(win), true, (void *) origin_addr, origin_count,
                                   origin_dt, target, target_disp, target_count, target_dt, req);
    }
    return rr_finish(win, target, req, rc, request);
}

static int ext_rraccumulate(const void *origin_addr, int origin_count,
                            struct ompi_datatype_t *origin_dt, void *result_addr,
                            int result_count, struct ompi_datatype_t *result_dt, int target,
                            ptrdiff_t target_disp, int target_count,
                            struct ompi_datatype_t *target_dt, struct ompi_op_t *op, bool fetch,
                            struct ompi_win_t *win, struct ompi_request_t **request)
{
    ompi_osc_ucxx_request_t *req;
    int rc = rr_start(win, &req);
    if (OMPI_SUCCESS != rc) return rc;
    if (MPI_PROC_NULL != target) {
        rc = ompi_osc_ucxx_acc(OSC_UCXX_VIEW(win), origin_addr, origin_count, origin_dt,
                               result_addr, result_count, result_dt, target, target_disp,
                               target_count, target_dt, op, fetch, req);
    }
    return rr_finish(win, target, req, rc, request);
}

/* ------------------------------------------------------------------------- */
/* Memory handles: an attached region of the parent dynamic window, named by
 * the parent's id, the owner and the region. */

#define MEMHANDLE_MAGIC 0x6d68646cu   /* "mhdl" */

typedef struct {
    uint32_t magic;
    uint32_t version;
    uint32_t cid;        /* the parent window */
    int32_t owner;       /* rank in the parent window */
    uint64_t base;
    uint64_t size;
} memhandle_t;

static int memhandle_parent(struct ompi_win_t *parent, ompi_osc_ucxx_module_t **core)
{
    ompi_osc_ucxx_view_t *view = OSC_UCXX_VIEW(parent);
    if (view->memhandle || MPI_WIN_FLAVOR_DYNAMIC != view->core->flavor) {
        return OMPI_ERR_WIN;  /* the parent must be a dynamic window */
    }
    *core = view->core;
    return OMPI_SUCCESS;
}

/* The parent's core and a validated copy of the handle's bytes. */
static int memhandle_open(struct ompi_win_t *parent, const void *handle,
                          ompi_osc_ucxx_module_t **core, memhandle_t *mh)
{
    int rc = memhandle_parent(parent, core);
    if (OMPI_SUCCESS != rc) return rc;
    memcpy(mh, handle, sizeof(*mh));
    if (MEMHANDLE_MAGIC != mh->magic || OSC_UCXX_EXT_VERSION != mh->version ||
        mh->owner < 0 || mh->owner >= (*core)->size) {
        return MPI_ERR_ARG;
    }
    return (mh->cid == (*core)->cid) ? OMPI_SUCCESS : OMPI_ERR_WIN;
}

static int ext_memhandle_create(struct ompi_win_t *parent, void *base, size_t size,
                                void *handle, int *handle_size)
{
    ompi_osc_ucxx_module_t *core;
    memhandle_t mh;
    int rc = memhandle_parent(parent, &core);

    if (OMPI_SUCCESS != rc) return rc;
    /* (a handle of no bytes attaches nothing: its release detaches nothing) */
    rc = 0 == size ? OMPI_SUCCESS : ompi_osc_ucxx_attach(parent, base, size);
    if (OMPI_SUCCESS != rc) return rc;
    mh = (memhandle_t){.magic = MEMHANDLE_MAGIC, .version = OSC_UCXX_EXT_VERSION,
                       .cid = core->cid, .owner = core->rank,
                       .base = (uint64_t) (uintptr_t) base, .size = size};
    memcpy(handle, &mh, sizeof(mh));
    *handle_size = sizeof(mh);
    return OMPI_SUCCESS;
}

static int ext_memhandle_window(struct ompi_win_t *parent, const void *handle, size_t size,
                                int disp_unit, int target, uint64_t *token)
{
    ompi_osc_ucxx_module_t *core;
    ompi_osc_ucxx_view_t *view;
    memhandle_t mh;
    int rc;

    if (ompi_win_peer_invalid(parent, target)) return MPI_ERR_RANK;
    rc = memhandle_open(parent, handle, &core, &mh);
    if (OMPI_SUCCESS != rc) return rc;
    if (mh.owner != target) return MPI_ERR_RANK;
    if (size > mh.size) return MPI_ERR_SIZE;
    if (disp_unit <= 0) return MPI_ERR_DISP;

    view = ompi_osc_ucxx_view_new(core, false);
    if (NULL == view) return OMPI_ERR_OUT_OF_RESOURCE;
    view->memhandle = true;
    view->mh_target = target;
    view->mh_base = mh.base;
    view->mh_size = size;
    view->mh_disp_unit = disp_unit;
    rc = pending_add(view, parent, token);
    if (OMPI_SUCCESS != rc) view_drop(view);
    return rc;
}

static int ext_memhandle_release(struct ompi_win_t *parent, const void *handle)
{
    ompi_osc_ucxx_module_t *core;
    memhandle_t mh;
    int rc = memhandle_open(parent, handle, &core, &mh);

    if (OMPI_SUCCESS != rc) return rc;
    if (mh.owner != core->rank) return MPI_ERR_ARG;  /* only the creator releases */
    /* Detaching bumps the generation: peers' windows on it fail cleanly. */
    return 0 == mh.size ? OMPI_SUCCESS
                        : ompi_osc_ucxx_detach(parent, (void *) (uintptr_t) mh.base);
}

/* MPIX_Am_win_op_register: from the window's first op on, MPI_Win_set_info
 * reaches the handle's AM keys. */
static int ext_am_register(struct ompi_win_t *win, uint64_t op_id, int kind, void *fn,
                           void *extra, int index)
{
    int rc = ompi_osc_ucxx_uam_register(win, op_id, kind, fn, extra, index);

    if (MPI_SUCCESS == rc) ompi_osc_ucxx_subscribe_am_info(win);
    return rc;
}

const ompi_osc_ucxx_ext_t ompi_osc_ucxx_ext = {
    .version = OSC_UCXX_EXT_VERSION,
    .owns = ext_owns,
    .report = ext_report,
    .rank_ok = ext_rank_ok,
    .type_committed = ext_type_committed,
    .op_predefined = ext_op_predefined,
    .info_value_ok = ext_info_value_ok,
    .dup = ext_dup,
    .op_intrinsic = ext_op_intrinsic,
    .rrput = ext_rrput,
    .rraccumulate = ext_rraccumulate,
    .memhandle_create = ext_memhandle_create,
    .memhandle_window = ext_memhandle_window,
    .memhandle_release = ext_memhandle_release,
    .view_cancel = ext_view_cancel,
    .am_register = ext_am_register,
    .am_deregister = ompi_osc_ucxx_uam_deregister,
    .am_attach = ompi_osc_ucxx_uam_attach,
    .am_detach = ompi_osc_ucxx_uam_detach,
    .am_epoch_assert = ompi_osc_ucxx_uam_epoch_assert,
    .am_issue = ompi_osc_ucxx_uam_issue,
    .am_in_handler = ompi_osc_ucxx_uam_in_handler,
};
