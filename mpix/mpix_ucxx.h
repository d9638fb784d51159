/*
 * Copyright (c) 2026 The osc/ucxx authors. All rights reserved.
 * $COPYRIGHT$
 *
 * mpix_ucxx.h: extensions of osc/ucxx beyond the MPI standard, after
 * "Quo Vadis MPI RMA? Towards a More Efficient Use of MPI One-Sided
 * Communication" (Schuchart, Niethammer, Gracia, Bosilca, EuroMPI'21).
 *
 * Link with -lmpix_ucxx (pkg-config --cflags --libs mpix_ucxx).  Every
 * function returns MPI_SUCCESS or an MPI error class, reported through the
 * window's error handler; on a window that osc/ucxx does not drive they
 * return MPI_ERR_WIN (nothing crashes).
 *
 * Info keys osc/ucxx understands on any of its windows (also settable with
 * MPI_Win_set_info and reported by MPI_Win_get_info):
 *   mpi_win_scope = process | thread
 *       thread: a flush (flush, flush_all, flush_local, flush_local_all)
 *       completes only the operations the calling thread issued on the
 *       window, touching only that thread's UCX worker.
 *   mpi_win_order = false | true
 *       true: operations issued to the same target through this window
 *       complete at the target in issue order (ucp_worker_fence, no flush);
 *       per thread under mpi_win_scope=thread, per process otherwise.
 *   mpi_assert_accumulate_intrinsic = false | true
 *       true: the window uses only operations that run without the target
 *       CPU (see MPIX_Win_op_intrinsic); anything else returns MPI_ERR_OP.
 *   acc_single_intrinsic = false | true   (as in MPI 4.1 / MPICH)
 */

#ifndef MPIX_UCXX_H
#define MPIX_UCXX_H

#include <mpi.h>

#ifdef __cplusplus
extern "C" {
#endif

#define MPIX_UCXX_VERSION 2

/* Largest handle MPIX_Memhandle_create writes, in bytes. */
#define MPIX_MAX_MEMHANDLE_SIZE 1024

/* ---- Memory-handle windows (paper section 4) ----------------------------
 * MPIX_Memhandle_create registers [base, base+size) of the calling process
 * and writes an opaque handle of *memhandle_size bytes (at most
 * MPIX_MAX_MEMHANDLE_SIZE) to memhandle.  parentwin must be an osc/ucxx
 * window created with MPI_Win_create_dynamic.  Local: no communication.
 *
 * A peer that received the handle bytes (by any means) creates a window on
 * that memory with MPIX_Win_from_memhandle.  `target` is the rank, in
 * parentwin's group, of the process that created the handle; size and
 * disp_unit describe the window the caller sees (size <= the handle's size).
 * The new window is a real MPI_Win (attributes, MPI_WIN_FLAVOR_CREATE with
 * size and disp_unit as given; name, error handler, MPI_Win_free), local to
 * the caller: operations name `target` as their
 * target rank and displacements count from the handle's base.  Put, get,
 * the accumulate family and the flushes work on it; lock/unlock (and
 * lock_all) are taken on parentwin, which the new window shares workers,
 * endpoints and synchronization with.
 *
 * MPIX_Memhandle_release unregisters the memory.  Releasing while a peer
 * still has a window on the handle is an application error; the peer's next
 * operation then fails with MPI_ERR_RMA_RANGE where osc/ucxx can tell. */
int MPIX_Memhandle_create(void *base, MPI_Aint size, MPI_Info info, MPI_Win parentwin,
                          void *memhandle, int *memhandle_size);
int MPIX_Win_from_memhandle(const void *memhandle, MPI_Aint size, int disp_unit,
                            MPI_Info info, int target, MPI_Win parentwin, MPI_Win *newwin);
int MPIX_Memhandle_release(void *memhandle, MPI_Win parentwin);

/* ---- Window duplication with info (section 3) ---------------------------
 * Local.  The new window shares memory, workers and synchronization state
 * with win (a lock held through one is held through the other; fence and
 * PSCW epochs are shared), inherits win's info with `info`'s keys overriding,
 * and may differ in mpi_win_scope, mpi_win_order and the accumulate keys.
 * Either may be freed first (MPI_Win_free on a duplicate is local). */
int MPIX_Win_dup_with_info(MPI_Win win, MPI_Info info, MPI_Win *newwin);

/* ---- Intrinsic accumulates (section 2.3) --------------------------------
 * *flag = 1 if every op in `ops` (comma-separated: "sum", "prod", "min",
 * "max", "band", "bor", "bxor", "land", "lor", "lxor", "replace", "no_op",
 * "cas", "maxloc", "minloc") on up to max_count elements of `type` runs
 * without the target CPU on this window (hardware or shared-memory
 * atomics), else 0.  A derived type answers for the predefined type it is
 * built from (MPI_ERR_TYPE if there is none).  Unknown op names: MPI_ERR_ARG. */
int MPIX_Win_op_intrinsic(const char *ops, MPI_Aint max_count, MPI_Datatype type, MPI_Win win,
                          int *flag);

/* ---- Remote-completing requests (section 5.2) ---------------------------
 * As MPI_Rput / MPI_Raccumulate / MPI_Rget_accumulate, but the request
 * completes only when the operation is complete at the target (no flush
 * needed to make it visible there). */
int MPIX_Rrput(const void *origin_addr, int origin_count, MPI_Datatype origin_datatype,
               int target_rank, MPI_Aint target_disp, int target_count,
               MPI_Datatype target_datatype, MPI_Win win, MPI_Request *request);
int MPIX_Rraccumulate(const void *origin_addr, int origin_count, MPI_Datatype origin_datatype,
                      int target_rank, MPI_Aint target_disp, int target_count,
                      MPI_Datatype target_datatype, MPI_Op op, MPI_Win win,
                      MPI_Request *request);
int MPIX_Rrget_accumulate(const void *origin_addr, int origin_count,
                          MPI_Datatype origin_datatype, void *result_addr, int result_count,
                          MPI_Datatype result_datatype, int target_rank, MPI_Aint target_disp,
                          int target_count, MPI_Datatype target_datatype, MPI_Op op,
                          MPI_Win win, MPI_Request *request);

/* ---- Active messages (Zhao 2016, ch. 6-8; README "Active messages") -----
 * Ship a computation to the data: a handler registered on the window runs on
 * a target's persistent region (target_persistent_disp, count, datatype),
 * reading num_segments input segments and writing as many output segments,
 * inside the window's access epochs, interoperable with put/get/accumulate.
 * An AM of any size streams as handler invocations of whole segments
 * through per-origin internal buffers and the target's attached user
 * buffers.  Completion: MPI_Win_flush(_all), flush_local(_all), unlock(_all),
 * the closing fence, MPI_Win_complete, or the request of MPIX_Ram*.
 *
 * Info keys (window creation, or MPI_Win_set_info once an op is registered
 * on the window; per handle unless noted):
 *   am_ordering = sameop,diffop,sameam (default) | any subset | none
 *   am_pipeline_unit = auto (default) | N >= 1   segments per invocation
 *   am_buf_interleave_am_detach = true (default) | false   (creation only)
 *   am_user_buf_<rank> = bytes   (creation only) the target promises them */
#define MPIX_AM_MAX_INDEX        65536   /* handler indices: 0 .. MPIX_AM_MAX_INDEX-1 */
#define MPIX_MODE_CONCURRENT_AM  4096    /* only via MPIX_Win_am_epoch_assert */

typedef struct mpix_am_op_s *MPIX_Am_op;            /* not an MPI_Op */
#define MPIX_AM_OP_NULL ((MPIX_Am_op) 0)

/* One invocation: segments [segment_offset, segment_offset + num_segments)
 * of one AM.  Input segment k is at element k * input_segment_count of
 * input_segment_datatype from input_addr (read-only), output segment k at
 * element k * output_segment_count of output_segment_datatype from
 * output_addr (undefined on entry).  persistent_addr is the target region in
 * the executing process's mapping.  Returns MPI_SUCCESS or an MPI error
 * class; must not call MPI. */
typedef int MPIX_Am_user_function(const void *input_addr, int input_segment_count,
                                  MPI_Datatype input_segment_datatype,
                                  void *persistent_addr, int persistent_count,
                                  MPI_Datatype persistent_datatype,
                                  void *output_addr, int output_segment_count,
                                  MPI_Datatype output_segment_datatype,
                                  int num_segments, int segment_offset, void *extra_state);
/* As above; output_segment_counts[k] is preset to output_segment_count and
 * the handler lowers it to what segment k produced. */
typedef int MPIX_Amv_user_function(const void *input_addr, int input_segment_count,
                                   MPI_Datatype input_segment_datatype,
                                   void *persistent_addr, int persistent_count,
                                   MPI_Datatype persistent_datatype,
                                   void *output_addr, int output_segment_count,
                                   MPI_Datatype output_segment_datatype,
                                   int num_segments, int segment_offset,
                                   int output_segment_counts[], void *extra_state);

int MPIX_Am_op_create(MPIX_Am_user_function *user_fn, void *extra_state, MPIX_Am_op *op);
int MPIX_Amv_op_create(MPIX_Amv_user_function *user_fn, void *extra_state, MPIX_Am_op *op);
int MPIX_Am_op_free(MPIX_Am_op *op);                                 /* local; *op = NULL */
int MPIX_Am_win_op_register(MPIX_Am_op op, int index, MPI_Win win);  /* collective */
int MPIX_Am_win_op_deregister(MPIX_Am_op op, MPI_Win win);          /* collective */
int MPIX_Am_win_buffer_attach(void *buffer, MPI_Aint size, MPI_Win win);   /* local */
int MPIX_Am_win_buffer_detach(void *buffer, MPI_Win win);      /* local, may wait */
int MPIX_Win_am_epoch_assert(int mpi_assert, MPI_Win win);

int MPIX_Am(const void *origin_input_addr, int origin_input_segment_count,
            MPI_Datatype origin_input_segment_datatype,
            void *origin_output_addr, int origin_output_segment_count,
            MPI_Datatype origin_output_segment_datatype,
            int num_segments, int target_rank, MPI_Datatype target_input_segment_datatype,
            MPI_Aint target_persistent_disp, int target_persistent_count,
            MPI_Datatype target_persistent_datatype,
            MPI_Datatype target_output_segment_datatype, MPIX_Am_op op, MPI_Win win);
int MPIX_Amv(const void *origin_input_addr, int origin_input_segment_count,
             MPI_Datatype origin_input_segment_datatype,
             void *origin_output_addr, int origin_output_segment_count,   /* max per segment */
             MPI_Datatype origin_output_segment_datatype,
             int num_segments, int target_rank, MPI_Datatype target_input_segment_datatype,
             MPI_Aint target_persistent_disp, int target_persistent_count,
             MPI_Datatype target_persistent_datatype,
             MPI_Datatype target_output_segment_datatype, MPIX_Am_op op, MPI_Win win,
             int output_segment_counts[]);                     /* OUT: num_segments ints */
/* Request-based: the request completes when the AM is complete. */
int MPIX_Ram(const void *origin_input_addr, int origin_input_segment_count,
             MPI_Datatype origin_input_segment_datatype,
             void *origin_output_addr, int origin_output_segment_count,
             MPI_Datatype origin_output_segment_datatype,
             int num_segments, int target_rank, MPI_Datatype target_input_segment_datatype,
             MPI_Aint target_persistent_disp, int target_persistent_count,
             MPI_Datatype target_persistent_datatype,
             MPI_Datatype target_output_segment_datatype, MPIX_Am_op op, MPI_Win win,
             MPI_Request *request);
int MPIX_Ramv(const void *origin_input_addr, int origin_input_segment_count,
              MPI_Datatype origin_input_segment_datatype,
              void *origin_output_addr, int origin_output_segment_count,
              MPI_Datatype origin_output_segment_datatype,
              int num_segments, int target_rank, MPI_Datatype target_input_segment_datatype,
              MPI_Aint target_persistent_disp, int target_persistent_count,
              MPI_Datatype target_persistent_datatype,
              MPI_Datatype target_output_segment_datatype, MPIX_Am_op op, MPI_Win win,
              int output_segment_counts[], MPI_Request *request);

#ifdef __cplusplus
}
#endif

#endif /* MPIX_UCXX_H */
