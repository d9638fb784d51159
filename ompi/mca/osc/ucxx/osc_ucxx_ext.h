/*
 * Copyright (c) 2026 The osc/ucxx authors. All rights reserved.
 * $COPYRIGHT$
 *
 * The contract between osc/ucxx and libmpix_ucxx.  The library cannot link
 * against the component (Open MPI loads it privately), so it looks this
 * table up by name (OSC_UCXX_EXT_SYMBOL) in the loaded component with
 * dlsym, and asks it (owns) whether a window is osc/ucxx's.  Everything
 * that needs Open MPI's internals (what a window, a rank of it, a datatype
 * or an op is; invoking an error handler with the function's name) is on
 * this side: the library uses MPI's public API only.
 */

#ifndef OMPI_OSC_UCXX_EXT_H
#define OMPI_OSC_UCXX_EXT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <mpi.h>

#define OSC_UCXX_EXT_SYMBOL "ompi_osc_ucxx_ext"  /* the table's name in the component */
#define OSC_UCXX_COMPONENT_FILE "mca_osc_ucxx.so"
#define OSC_UCXX_EXT_VERSION 3
#define OSC_UCXX_MEMHANDLE_MAX 1024            /* = MPIX_MAX_MEMHANDLE_SIZE */
#define OSC_UCXX_VIEW_KEY "osc_ucxx_view"      /* (see dup below) */

/* Active messages: AM_OP_AM / AM_OP_AMV handler kinds, and one MPIX_Am*
 * call's arguments (checked by the library for NULLs and signs). */
#define OSC_UCXX_AM_OP_AM  1
#define OSC_UCXX_AM_OP_AMV 2
typedef struct {
    const void *in_addr;
    int in_count;
    MPI_Datatype in_dt;
    void *out_addr;
    int out_count;
    MPI_Datatype out_dt;
    int num_segments;
    int target;
    MPI_Datatype tin_dt;
    ptrdiff_t pdisp;
    int pcount;
    MPI_Datatype p_dt;
    MPI_Datatype tout_dt;
    uint64_t op_id;
    int op_kind;
} ompi_osc_ucxx_am_args_t;

typedef struct ompi_osc_ucxx_ext_t {
    int version;

    /* Is win a live osc/ucxx window (MPI_WIN_NULL, a freed or another
     * component's window: false)? */
    bool (*owns)(MPI_Win win);
    /* rc through win's error handler (MPI_COMM_WORLD's for an invalid
     * window), naming func as MPI's own functions do; returns rc's class. */
    int (*report)(MPI_Win win, int rc, const char *func);
    /* The checks MPI's own functions make: a rank of win's group, a
     * committed datatype, a predefined op. */
    bool (*rank_ok)(MPI_Win win, int rank);
    bool (*type_committed)(MPI_Datatype type);
    bool (*op_predefined)(MPI_Op op);
    /* Would a window creation take this value of key (Open MPI parses
     * accumulate_ops and accumulate_ordering itself)? */
    bool (*info_value_ok)(const char *key, const char *value);

    /* MPIX_Win_dup_with_info and MPIX_Win_from_memhandle make a view on the
     * parent's window and name it by *token; the library then creates the
     * MPI_Win with the public call of the flavor over MPI_COMM_SELF (local),
     * with the token as the value of OSC_UCXX_VIEW_KEY in the info, and the
     * component's select attaches the view to it (group, base and memory
     * model the parent's).  view_cancel drops a view no creation took. */
    int (*dup)(MPI_Win win, uint64_t *token);

    int (*op_intrinsic)(MPI_Win win, const char *ops, ptrdiff_t max_count,
                        MPI_Datatype type, int *flag);

    /* Remote-completing request-based operations */
    int (*rrput)(const void *origin_addr, int origin_count, MPI_Datatype origin_dt,
                 int target, ptrdiff_t target_disp, int target_count,
                 MPI_Datatype target_dt, MPI_Win win,
                 MPI_Request *request);
    int (*rraccumulate)(const void *origin_addr, int origin_count,
                        MPI_Datatype origin_dt, void *result_addr, int result_count,
                        MPI_Datatype result_dt, int target, ptrdiff_t target_disp,
                        int target_count, MPI_Datatype target_dt,
                        MPI_Op op, bool fetch, MPI_Win win,
                        MPI_Request *request);

    /* Memory handles: parentwin is a dynamic osc/ucxx window */
    int (*memhandle_create)(MPI_Win parent, void *base, size_t size, void *handle,
                            int *handle_size);
    int (*memhandle_window)(MPI_Win parent, const void *handle, size_t size,
                            int disp_unit, int target, uint64_t *token);
    int (*memhandle_release)(MPI_Win parent, const void *handle);
    void (*view_cancel)(uint64_t token);

    /* Active messages (version 2; osc_ucxx_uam.c) */
    int (*am_register)(MPI_Win win, uint64_t op_id, int kind, void *fn, void *extra,
                       int index);
    int (*am_deregister)(MPI_Win win, uint64_t op_id);
    int (*am_attach)(MPI_Win win, void *buffer, size_t size);
    int (*am_detach)(MPI_Win win, void *buffer);
    int (*am_epoch_assert)(MPI_Win win, int assert);
    /* counts: MPIX_Amv's output counts (NULL for MPIX_Am); req: MPIX_Ram* */
    int (*am_issue)(MPI_Win win, const ompi_osc_ucxx_am_args_t *args, int *counts,
                    MPI_Request *req);
    /* Is the calling thread inside an AM handler? */
    bool (*am_in_handler)(void);
} ompi_osc_ucxx_ext_t;

#endif
