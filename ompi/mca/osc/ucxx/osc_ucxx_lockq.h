/*
 * Copyright (c) 2026 The osc/ucxx authors. All rights reserved.
 * $COPYRIGHT$
 *
 * osc/ucxx, eighth layer: passive-target locks the target manages
 * (module->lock_kind OSC_UCXX_LOCKS_TARGET, agreed at creation:
 * osc_ucxx_policy.c).  The target's side, its queue of waiting origins and
 * the epochs it runs for them, is osc_ucxx_lockq.c; the origin's side, the
 * lock request deferred to the first operation that cannot wait and the
 * operations it carries, osc_ucxx_lazy.c.  Between them, one message kind
 * each way (OSC_UCXX_AM_LOCK, OSC_UCXX_AM_LOCK_REPLY) in the format below.
 */

#ifndef OMPI_OSC_UCXX_LOCKQ_H
#define OMPI_OSC_UCXX_LOCKQ_H

#include "osc_ucxx_op.h"
#include "osc_ucxx_complete.h"
#include "osc_ucxx_am.h"
#include "osc_ucxx_acc.h"

BEGIN_C_DECLS

/* What a lock message asks (flags) */
#define OSC_UCXX_LQ_LOCK    0x1   /* take the lock (shared; exclusive with EXCL) */
#define OSC_UCXX_LQ_EXCL    0x2
#define OSC_UCXX_LQ_RELEASE 0x4   /* release it, after the carried operations (with LOCK:
                                   * a whole epoch) or after everything the origin sent
                                   * before on this endpoint */
#define OSC_UCXX_LQ_KICK    0x8   /* nothing: a peer that maps the word released it with
                                   * origins queued; the owner looks at its queue again */
#define OSC_UCXX_LQ_MORE    0x10  /* more operations of the epoch whose request went
                                   * before (the same `epoch`): applied once it is granted,
                                   * then released if RELEASE */
#define OSC_UCXX_LQ_WAITED  0x20  /* answer: the request waited in the queue */

/* Every lock message and its answer start so; a request is followed by its
 * operations (ompi_osc_ucxx_lq_op_t, each followed by its values, padded to
 * 8 bytes), an answer by the results of the operations that have some, in
 * order, each padded to 8 bytes. */
typedef struct {
    ompi_osc_ucxx_am_hdr_t base;
    uint64_t token;        /* the origin's record of this message */
    uint64_t epoch;        /* request: the origin's epoch (the same in its MORE messages) */
    uint32_t flags;        /* OSC_UCXX_LQ_* */
    uint32_t nops;         /* operations carried */
    uint32_t rlen;         /* bytes of results the answer carries */
    int32_t status;        /* answer: OMPI_SUCCESS, or the first operation's error */
    uint64_t gen;          /* answer, dynamic windows: the target's detach generation,
                            * read after the request arrived */
} ompi_osc_ucxx_lq_hdr_t;

/* A carried operation */
enum {
    OSC_UCXX_LQ_PUT,
    OSC_UCXX_LQ_GET,       /* result: len bytes */
    OSC_UCXX_LQ_ACC,
    OSC_UCXX_LQ_GACC,      /* result: the old values */
    OSC_UCXX_LQ_CAS        /* result: the old value */
};

typedef struct {
    uint8_t kind;
    uint8_t nvals;         /* sets of len bytes of values that follow: put 1,
                            * accumulates 1 (MPI_NO_OP 0), compare-and-swap 2 */
    uint8_t pad[2];
    int32_t dt;            /* accumulates: the element type (Fortran index) */
    int32_t op;            /* ... the op (Fortran index) */
    uint32_t len;          /* bytes at the target */
    uint64_t offset;       /* from the window's base (a dynamic window's: the address) */
} ompi_osc_ucxx_lq_op_t;

static inline size_t ompi_osc_ucxx_lq_pad(size_t len)
{
    return (len + 7) & ~(size_t) 7;
}

/* Bytes of results an operation gets back. */
static inline size_t ompi_osc_ucxx_lq_results(const ompi_osc_ucxx_lq_op_t *op)
{
    return OSC_UCXX_LQ_GET == op->kind || OSC_UCXX_LQ_GACC == op->kind ||
                   OSC_UCXX_LQ_CAS == op->kind ? op->len : 0;
}

/* ------------------------------------------------------------------------- */
/* The target (osc_ucxx_lockq.c) */

/* Its message kinds (component init); the queue's part in freeing a
 * window (the component's core_fini). */
void ompi_osc_ucxx_lockq_am_init(void);
void ompi_osc_ucxx_lockq_release(ompi_osc_ucxx_module_t *module);
/* This process's own lock on its window, when taking it at once failed:
 * wait in the queue (progressing) until it is granted. */
int ompi_osc_ucxx_lockq_wait_self(ompi_osc_ucxx_module_t *module, int type);
/* Grant what can be granted now (after a release by CPU atomic that found
 * origins queued). */
void ompi_osc_ucxx_lockq_serve(ompi_osc_ucxx_module_t *module);

/* ------------------------------------------------------------------------- */
/* The origin (osc_ucxx_lazy.c) */

/* Its message kind and the lock word's functions for the state layer
 * (component init); its part in freeing a window (core_fini). */
void ompi_osc_ucxx_lazy_init(void);
void ompi_osc_ucxx_lazy_release(ompi_osc_ucxx_module_t *module);

/* An operation on a target whose lock request is not sent yet
 * (OSC_UCXX_TGT_LAZY): carried in the request (OMPI_SUCCESS), or the
 * request went and the lock is held now (OSC_UCXX_ISSUE: the caller issues
 * the operation as in any epoch), or an error. */
#define OSC_UCXX_ISSUE 1
int ompi_osc_ucxx_lazy_put_get(ompi_osc_ucxx_target_t *t, bool is_put, void *origin_addr,
                               int origin_count, ompi_datatype_t *origin_dt, int target_count,
                               ompi_datatype_t *target_dt, ompi_osc_ucxx_request_t *req);
int ompi_osc_ucxx_lazy_acc(ompi_osc_ucxx_acc_t *a, const void *origin_addr, int origin_count,
                           ompi_datatype_t *origin_dt, const void *compare_addr,
                           void *result_addr, int result_count, ompi_datatype_t *result_dt,
                           int target_count, ompi_datatype_t *target_dt);
/* ... any other operation: the lock first. */
int ompi_osc_ucxx_lazy_grant(ompi_osc_ucxx_module_t *module, int target);

/* Flushes: the requests not sent yet to `target` (-1: all) go, and their
 * answers are in (with an error their operations met, once). */
int ompi_osc_ucxx_lazy_flush(ompi_osc_ucxx_module_t *module, int target);
/* MPI_Win_unlock of a lock by messages: the release, with the epoch if it
 * was never requested, or ordered behind its operations; one answer. */
int ompi_osc_ucxx_lazy_unlock(ompi_osc_ucxx_module_t *module, int target);
/* MPI_Win_unlock_all: the same for every target the epoch locked so, all
 * answers awaited together. */
int ompi_osc_ucxx_lazy_unlock_all(ompi_osc_ucxx_module_t *module);

END_C_DECLS

#endif /* OMPI_OSC_UCXX_LOCKQ_H */
