/*
 * Copyright (c) 2026 The osc/ucxx authors. All rights reserved.
 * $COPYRIGHT$
 *
 * libmpix_ucxx: the MPIX_ functions of mpix_ucxx.h.  Argument checks, error
 * handlers and MPI_Win objects live here; the work is done by osc/ucxx
 * through the table its windows carry (osc_ucxx_ext.h).
 */

#include "ompi_config.h"

#include "ompi/attribute/attribute.h"
#include "ompi/communicator/communicator.h"
#include "ompi/datatype/ompi_datatype.h"
#include "ompi/errhandler/errhandler.h"
#include "ompi/info/info.h"
#include "ompi/op/op.h"
#include "ompi/win/win.h"
#include "opal/util/info.h"

#include "ompi/mca/osc/ucxx/osc_ucxx_ext.h"
#include "mpix_ucxx.h"

/* osc/ucxx's table for this window, or NULL if another component drives it. */
static const ompi_osc_ucxx_ext_t *ext_of(MPI_Win win)
{
    const ompi_osc_ucxx_module_prefix_t *prefix;

    if (NULL == win || MPI_WIN_NULL == win || ompi_win_invalid(win) ||
        NULL == win->w_osc_module) {
        return NULL;
    }
    prefix = (const ompi_osc_ucxx_module_prefix_t *) win->w_osc_module;
    if (OSC_UCXX_MAGIC != prefix->magic || NULL == prefix->ext ||
        OSC_UCXX_EXT_VERSION != prefix->ext->version) {
        return NULL;
    }
    return prefix->ext;
}

/* Report rc through win's error handler (MPI_COMM_WORLD's without a window). */
static int report(MPI_Win win, int rc, const char *func)
{
    if (MPI_SUCCESS == rc) {
        return MPI_SUCCESS;
    }
    if (NULL == win || MPI_WIN_NULL == win || ompi_win_invalid(win)) {
        return OMPI_ERRHANDLER_INVOKE(&ompi_mpi_comm_world.comm, rc, func);
    }
    return OMPI_ERRHANDLER_INVOKE(win, rc, func);
}

#define CHECK_EXT(win, ext, func)                                                   \
    const ompi_osc_ucxx_ext_t *ext = ext_of(win);                                 \
    if (NULL == ext) {                                                            \
        return report(win, MPI_ERR_WIN, func);                                    \
    }

/* ------------------------------------------------------------------------- */
/* Hand-built windows (duplicates, memory-handle windows) */

static void copy_info(MPI_Info from, opal_info_t *to)
{
    int nkeys = 0, flag;
    char key[MPI_MAX_INFO_KEY + 1], value[MPI_MAX_INFO_VAL + 1];

    if (MPI_INFO_NULL == from) return;
    MPI_Info_get_nkeys(from, &nkeys);
    for (int i = 0; i < nkeys; ++i) {
        MPI_Info_get_nthkey(from, i, key);
        MPI_Info_get(from, key, MPI_MAX_INFO_VAL, value, &flag);
        if (flag) opal_info_set(to, key, value);
    }
}

/* A window object like parent's (group, error handler, info with `info`'s
 * keys overriding), not yet attached to osc/ucxx. */
static int window_new(MPI_Win parent, MPI_Info info, ompi_win_t **out)
{
    ompi_win_t *win = OBJ_NEW(ompi_win_t);
    MPI_Info inherited;

    if (NULL == win) return MPI_ERR_NO_MEM;
    win->w_acc_ops = parent->w_acc_ops;
    win->w_acc_order = parent->w_acc_order;
    win->w_flavor = parent->w_flavor;
    win->w_group = parent->w_group;
    OBJ_RETAIN(win->w_group);
    OBJ_RELEASE(win->error_handler);
    win->error_handler = parent->error_handler;
    OBJ_RETAIN(win->error_handler);
    win->errhandler_type = parent->errhandler_type;
    win->w_f_to_c_index = -1;
    win->super.s_info = OBJ_NEW(opal_info_t);
    if (MPI_SUCCESS == MPI_Win_get_info(parent, &inherited)) {
        copy_info(inherited, win->super.s_info);
        MPI_Info_free(&inherited);
    }
    copy_info(info, win->super.s_info);
    *out = win;
    return MPI_SUCCESS;
}

static void window_discard(ompi_win_t *win)
{
    if (NULL != win->super.s_info) OBJ_RELEASE(win->super.s_info);
    OBJ_RELEASE(win);
}

/* Attributes and the Fortran handle, as MPI_Win_create gives them. */
static int window_finish(ompi_win_t *win, void *base, MPI_Aint size, int disp_unit)
{
    int rc = ompi_attr_set_c(WIN_ATTR, win, &win->w_keyhash, MPI_WIN_BASE, base, true);
    if (OMPI_SUCCESS == rc)
        rc = ompi_attr_set_aint(WIN_ATTR, win, &win->w_keyhash, MPI_WIN_SIZE, size, true);
    if (OMPI_SUCCESS == rc)
        rc = ompi_attr_set_int(WIN_ATTR, win, &win->w_keyhash, MPI_WIN_DISP_UNIT, disp_unit,
                               true);
    if (OMPI_SUCCESS == rc)
        rc = ompi_attr_set_int(WIN_ATTR, win, &win->w_keyhash, MPI_WIN_CREATE_FLAVOR,
                               win->w_flavor, true);
    if (OMPI_SUCCESS == rc)
        rc = ompi_attr_set_int(WIN_ATTR, win, &win->w_keyhash, MPI_WIN_MODEL, MPI_WIN_UNIFIED,
                               true);
    if (OMPI_SUCCESS != rc) return rc;
    /* without its own slot, MPI_Win_free would clear MPI_WIN_NULL's */
    win->w_f_to_c_index = opal_pointer_array_add(&ompi_mpi_windows, win);
    return (-1 == win->w_f_to_c_index) ? MPI_ERR_NO_MEM : MPI_SUCCESS;
}

/* ------------------------------------------------------------------------- */

int MPIX_Win_dup_with_info(MPI_Win win, MPI_Info info, MPI_Win *newwin)
{
    static const char func[] = "MPIX_Win_dup_with_info";
    void *base = NULL;
    MPI_Aint *size = NULL;
    int *disp_unit = NULL, flag, rc;
    ompi_win_t *nw;

    CHECK_EXT(win, ext, func);
    if (NULL == newwin) return report(win, MPI_ERR_ARG, func);
    MPI_Win_get_attr(win, MPI_WIN_BASE, &base, &flag);
    MPI_Win_get_attr(win, MPI_WIN_SIZE, &size, &flag);
    MPI_Win_get_attr(win, MPI_WIN_DISP_UNIT, &disp_unit, &flag);

    rc = window_new(win, info, &nw);
    if (MPI_SUCCESS != rc) return report(win, rc, func);
    rc = ext->dup(win, nw);
    if (OMPI_SUCCESS == rc) {
        rc = window_finish(nw, base, NULL != size ? *size : 0,
                           NULL != disp_unit ? *disp_unit : 1);
        if (OMPI_SUCCESS != rc) ompi_win_free(nw);
    } else {
        window_discard(nw);
    }
    if (OMPI_SUCCESS != rc) return report(win, rc, func);
    *newwin = nw;
    return MPI_SUCCESS;
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
    ompi_win_t *nw;
    int rc;

    CHECK_EXT(parentwin, ext, func);
    if (NULL == memhandle || NULL == newwin || size < 0) {
        return report(parentwin, MPI_ERR_ARG, func);
    }
    if (ompi_win_peer_invalid(parentwin, target)) {
        return report(parentwin, MPI_ERR_RANK, func);
    }
    rc = window_new(parentwin, info, &nw);
    if (MPI_SUCCESS != rc) return report(parentwin, rc, func);
    rc = ext->memhandle_window(parentwin, memhandle, (size_t) size, disp_unit, target, nw);
    if (OMPI_SUCCESS == rc) {
        rc = window_finish(nw, NULL, size, disp_unit);
        if (OMPI_SUCCESS != rc) ompi_win_free(nw);
    } else {
        window_discard(nw);
    }
    if (OMPI_SUCCESS != rc) return report(parentwin, rc, func);
    *newwin = nw;
    return MPI_SUCCESS;
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

static int check_rma(MPI_Win win, int origin_count, MPI_Datatype origin_dt, int target,
                     int target_count, MPI_Datatype target_dt, MPI_Request *request)
{
    if (NULL == request || origin_count < 0 || target_count < 0) return MPI_ERR_ARG;
    if (MPI_PROC_NULL != target && ompi_win_peer_invalid(win, target)) return MPI_ERR_RANK;
    if ((origin_count > 0 && (NULL == origin_dt || MPI_DATATYPE_NULL == origin_dt)) ||
        NULL == target_dt || MPI_DATATYPE_NULL == target_dt) {
        return MPI_ERR_TYPE;
    }
    return MPI_SUCCESS;
}

static int check_op(MPI_Op op, bool no_op_ok)
{
    if (NULL == op || MPI_OP_NULL == op || !ompi_op_is_intrinsic(op)) return MPI_ERR_OP;
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
    rc = check_rma(win, origin_count, origin_datatype, target_rank, target_count,
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
    rc = check_rma(win, origin_count, origin_datatype, target_rank, target_count,
                   target_datatype, request);
    if (MPI_SUCCESS == rc) rc = check_op(op, false);
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
    rc = check_rma(win, result_count, result_datatype, target_rank, target_count,
                   target_datatype, request);
    if (MPI_SUCCESS == rc) rc = check_op(op, true);
    if (MPI_SUCCESS == rc) {
        rc = ext->rraccumulate(origin_addr, origin_count, origin_datatype, result_addr,
                               result_count, result_datatype, target_rank, target_disp,
                               target_count, target_datatype, op, true, win, request);
    }
    return report(win, rc, func);
}
