/*
 * Copyright (c) 2026 The osc/ucxx authors. All rights reserved.
 * $COPYRIGHT$
 *
 * osc/ucxx, sixth layer: epochs.  Which targets an operation may reach now,
 * and the bookkeeping every synchronization call does (osc_ucxx_epoch.c
 * owns it all and says who may change what, and when).
 */

#ifndef OMPI_OSC_UCXX_EPOCH_H
#define OMPI_OSC_UCXX_EPOCH_H

#include "osc_ucxx_state.h"

BEGIN_C_DECLS

/* Access epoch kinds (at most one at a time; MPI_Win_lock epochs are per
 * target and live in the targets' access words) */
#define OSC_UCXX_EPOCH_NONE     0
#define OSC_UCXX_EPOCH_FENCE    1   /* after a fence without NOSUCCEED */
#define OSC_UCXX_EPOCH_LOCK_ALL 2
#define OSC_UCXX_EPOCH_START    3   /* PSCW access epoch */

/* A target's access word (ompi_osc_ucxx_peer_t::access) */
#define OSC_UCXX_TGT_LOCKED  0x01   /* MPI_Win_lock holds it */
#define OSC_UCXX_TGT_OPEN    0x02   /* the access epoch in force opened it */
#define OSC_UCXX_TGT_EXCL    0x04   /* ... the lock is exclusive */
#define OSC_UCXX_TGT_NOCHECK 0x08   /* ... MPI_MODE_NOCHECK: no lock word taken */
#define OSC_UCXX_TGT_BUSY    0x10   /* a lock or unlock of it is under way */
#define OSC_UCXX_TGT_HELD    0x20   /* lock_all took its shared lock */
#define OSC_UCXX_TGT_MEMBER  0x40   /* in the start group */
#define OSC_UCXX_TGT_READY   (OSC_UCXX_TGT_LOCKED | OSC_UCXX_TGT_OPEN)

/* The access epoch object of a window (one per core, reused). */
struct ompi_osc_ucxx_epoch_t {
    opal_object_t super;
    volatile int kind;        /* OSC_UCXX_EPOCH_* */
    int assert;
    volatile bool ops;        /* fence: an operation was issued in it */
    bool check_fence;         /* fence: opened without a barrier */
    bool open_free;           /* fence: targets open without the lock */
    ompi_osc_ucxx_spin_t lock;  /* opening a target; changing kind */
    int *targets;             /* what it opened (fence, lock_all) or names (start) */
    int count, cap;
    int reopen;               /* lock_all: how many of targets[] the last one
                               * opened (the next one opens them again) */
    int unposted;             /* start: members whose post is not consumed yet */
};
OBJ_CLASS_DECLARATION(ompi_osc_ucxx_epoch_t);

/* First operation on a target in this epoch: open it (fence: check that
 * the target has fenced; lock_all: take its shared lock; start: consume its
 * post), or OMPI_ERR_RMA_SYNC. */
int ompi_osc_ucxx_epoch_open_target(ompi_osc_ucxx_module_t *module, int target);

/* May this process access `target` now?  One load in steady state. */
static inline int ompi_osc_ucxx_epoch_check(ompi_osc_ucxx_module_t *module, int target)
{
    if (OPAL_LIKELY(module->peers[target].access & OSC_UCXX_TGT_READY)) {
        return OMPI_SUCCESS;
    }
    return ompi_osc_ucxx_epoch_open_target(module, target);
}

/* Is a flush of `target` (all: -1) valid: a passive-target epoch on it?
 * (Inline: every flush asks.) */
static inline bool ompi_osc_ucxx_epoch_passive(ompi_osc_ucxx_module_t *module, int target)
{
    /* the target's word first: operations on it just read that line, while
     * the epoch's changes at every lock_all and unlock_all (held: only
     * lock_all takes a target's shared lock) */
    if (target >= 0 &&
        0 != (module->peers[target].access & (OSC_UCXX_TGT_LOCKED | OSC_UCXX_TGT_HELD))) {
        return true;
    }
    if (OSC_UCXX_EPOCH_LOCK_ALL == module->access->kind) {
        return true;
    }
    if (target < 0) {
        return module->nlocks > 0;
    }
    return 0 != (module->peers[target].access & OSC_UCXX_TGT_LOCKED);
}

/* Is any epoch other than an exposure epoch or an unused fence epoch open
 * (fence, free)? */
bool ompi_osc_ucxx_epoch_busy(ompi_osc_ucxx_module_t *module);

/* MPI_Win_lock / unlock of one target: begin (claims it), then done. */
int ompi_osc_ucxx_epoch_lock_begin(ompi_osc_ucxx_module_t *module, int target);
void ompi_osc_ucxx_epoch_lock_done(ompi_osc_ucxx_module_t *module, int target, int type,
                                   bool nocheck, bool ok);
int ompi_osc_ucxx_epoch_unlock_begin(ompi_osc_ucxx_module_t *module, int target, int *type,
                                     bool *nocheck);
void ompi_osc_ucxx_epoch_unlock_done(ompi_osc_ucxx_module_t *module, int target);

/* lock_all, fence and start epochs.  A fence epoch opened without a
 * barrier (synced false) checks each target's fence count first. */
int ompi_osc_ucxx_epoch_begin(ompi_osc_ucxx_module_t *module, int kind, int assert);
int ompi_osc_ucxx_epoch_fence(ompi_osc_ucxx_module_t *module, bool opens, bool synced);
int ompi_osc_ucxx_epoch_start(ompi_osc_ucxx_module_t *module, int *ranks, int n, int assert);
/* Close the epoch in force: each target it opened is closed (lock_all's
 * shared locks released).  complete: consume remaining posts first. */
int ompi_osc_ucxx_epoch_end(ompi_osc_ucxx_module_t *module);
int ompi_osc_ucxx_epoch_take_posts(ompi_osc_ucxx_module_t *module);
static inline int ompi_osc_ucxx_epoch_kind(ompi_osc_ucxx_module_t *module)
{
    return module->access->kind;
}
/* Is any access epoch open (fence, lock_all, start, or a lock)? */
static inline bool ompi_osc_ucxx_epoch_any(ompi_osc_ucxx_module_t *module)
{
    return OSC_UCXX_EPOCH_NONE != module->access->kind || module->nlocks > 0;
}

/* PSCW exposure (target side) */
int ompi_osc_ucxx_epoch_post(ompi_osc_ucxx_module_t *module, int n);
bool ompi_osc_ucxx_epoch_exposure_done(ompi_osc_ucxx_module_t *module);
void ompi_osc_ucxx_post_arrived(ompi_osc_ucxx_module_t *module, int from);

END_C_DECLS

#endif /* OMPI_OSC_UCXX_EPOCH_H */
