/*
 * Copyright (c) 2026 The osc/ucxx authors. All rights reserved.
 * $COPYRIGHT$
 *
 * osc/ucxx, sixth layer: epochs.  Which targets an operation may reach now,
 * and the bookkeeping every synchronization call does (osc_ucxx_epoch.c
 * owns it all and says who may change what, and when; the access-word
 * helpers and the steps of MPI_Win_lock and unlock are inline here, as
 * every lock and unlock takes them).
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
#define OSC_UCXX_TGT_MSGLOCK 0x80   /* ... the lock is the target's to manage: requested,
                                     * granted and released by messages (osc_ucxx_lazy.c) */
#define OSC_UCXX_TGT_LAZY    0x100  /* ... and not requested yet: operations are carried
                                     * in the request (the general paths check) */
#define OSC_UCXX_TGT_READY   (OSC_UCXX_TGT_LOCKED | OSC_UCXX_TGT_OPEN)

/* Lock order (docs/synchronization.md, "Lock order").  Locks held at once
 * are taken in the order the program opened them, over every window, so
 * that locks taken in one order everywhere cannot deadlock: an entry per
 * lock opened and not held yet (a lazy MPI_Win_lock request, a lock_all
 * epoch whose shared locks are not all taken), oldest first.  Before a
 * process holds a lock while it waits, the entries opened before it are
 * taken (`take`: hold the lock(s) now), oldest first.  Kept by the
 * application's thread below MPI_THREAD_MULTIPLE only (under threads no
 * MPI_Win_lock is lazy, and an order between threads' calls is none). */
typedef struct ompi_osc_ucxx_order_t ompi_osc_ucxx_order_t;
struct ompi_osc_ucxx_order_t {
    ompi_osc_ucxx_order_t *prev, *next;
    int (*take)(ompi_osc_ucxx_order_t *node);
    void *owner;              /* the module (lock_all), the lazy record */
    bool linked;
};
extern ompi_osc_ucxx_order_t *ompi_osc_ucxx_order_head;

void ompi_osc_ucxx_order_add(ompi_osc_ucxx_order_t *node);
void ompi_osc_ucxx_order_remove(ompi_osc_ucxx_order_t *node);
/* Take every entry opened before `node` (NULL: a lock opened now, so every
 * entry), oldest first. */
int ompi_osc_ucxx_order_before(ompi_osc_ucxx_order_t *node);
/* The lock layer's part of taking a lock_all epoch whole: a target's lazy
 * request goes and is granted (osc_ucxx_lazy.c). */
void ompi_osc_ucxx_order_granter(int (*grant)(ompi_osc_ucxx_module_t *module, int target));

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
    bool cpu_release;         /* lock_all: it holds a shared lock that a CPU
                               * atomic releases */
    int unposted;             /* start: members whose post is not consumed yet */
    ompi_osc_ucxx_order_t order;  /* lock_all: its place in the lock order */
};
OBJ_CLASS_DECLARATION(ompi_osc_ucxx_epoch_t);

/* First operation on a target in this epoch: open it (fence: check that
 * the target has fenced; lock_all: take its shared lock; start: consume its
 * post), or OMPI_ERR_RMA_SYNC. */
int ompi_osc_ucxx_epoch_open_target(ompi_osc_ucxx_module_t *module, int target);

/* Does opening a target take its lock word (lock_all without NOCHECK)? */
static inline bool ompi_osc_ucxx_epoch_locks_on_open(const ompi_osc_ucxx_module_t *module)
{
    return OSC_UCXX_EPOCH_LOCK_ALL == module->access->kind &&
           !(module->access->assert & MPI_MODE_NOCHECK);
}

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

/* Access words: the bits of a target (osc_ucxx_epoch.c has the rules). */
/* (one thread in the component: no need to pay for a locked instruction) */
static inline void ompi_osc_ucxx_tgt_set(ompi_osc_ucxx_peer_t *peer, int32_t bits)
{
    if (OSC_UCXX.mt) {
        opal_atomic_fetch_or_32(&peer->access, bits);
    } else {
        peer->access |= bits;
    }
}

static inline void ompi_osc_ucxx_tgt_clear(ompi_osc_ucxx_peer_t *peer, int32_t bits)
{
    if (OSC_UCXX.mt) {
        opal_atomic_fetch_and_32(&peer->access, ~bits);
    } else {
        peer->access &= ~bits;
    }
}

/* Toggle `bits` whose values the caller knows (one locked instruction
 * where a set and a clear would take two). */
static inline void ompi_osc_ucxx_tgt_flip(ompi_osc_ucxx_peer_t *peer, int32_t bits)
{
    if (OSC_UCXX.mt) {
        (void) __atomic_fetch_xor(&peer->access, bits, __ATOMIC_ACQ_REL);
    } else {
        peer->access ^= bits;
    }
}

/* Set BUSY in the target's access word, unless a bit of `refuse` is set
 * or a bit of `need` is not (then false): a lock or unlock of one target
 * claims it while it works on it; *was gets the word before.  A
 * compare-and-swap where threads may race for the word; a plain load and
 * store where one thread alone is in the component (two locked
 * instructions less per MPI_Win_lock + put + unlock). */
static inline bool ompi_osc_ucxx_tgt_claim(ompi_osc_ucxx_peer_t *peer, int32_t refuse,
                                           int32_t need, int32_t *was)
{
    int32_t old = peer->access;

    if (!OSC_UCXX.mt) {
        if ((old & refuse) || (old & need) != need) return false;
        peer->access = old | OSC_UCXX_TGT_BUSY;
        *was = old;
        return true;
    }
    do {
        if ((old & refuse) || (old & need) != need) return false;
    } while (!opal_atomic_compare_exchange_strong_32(&peer->access, &old,
                                                     old | OSC_UCXX_TGT_BUSY));
    *was = old;
    return true;
}

/* Under threads, a lock where no access epoch is in force (loops of lock,
 * operations, unlock), without the epoch lock: we count ourselves in nlocks
 * and then read the kind; a kind change other than fence stores the kind
 * and then reads nlocks (begin_locked, osc_ucxx_epoch.c); both sequentially
 * consistent, so at least one of the two sees the other and backs out (a
 * lock racing a lock_all or start in another thread is erroneous; one of
 * them fails).  False: the epoch lock's way decides.  (The epoch lock
 * itself made a lock + put + unlock cost nearly twice osc/sm's.) */
static inline bool ompi_osc_ucxx_epoch_lock_unlocked(ompi_osc_ucxx_module_t *module,
                                                     ompi_osc_ucxx_peer_t *peer, int *rc)
{
    int32_t old;

    __atomic_fetch_add(&module->nlocks, 1, __ATOMIC_SEQ_CST);
    if (OSC_UCXX_EPOCH_NONE != __atomic_load_n(&module->access->kind, __ATOMIC_SEQ_CST)) {
        __atomic_fetch_sub(&module->nlocks, 1, __ATOMIC_RELAXED);
        return false;
    }
    *rc = OMPI_SUCCESS;
    if (!ompi_osc_ucxx_tgt_claim(peer, OSC_UCXX_TGT_LOCKED | OSC_UCXX_TGT_BUSY, 0, &old)) {
        __atomic_fetch_sub(&module->nlocks, 1, __ATOMIC_RELAXED);
        *rc = OMPI_ERR_RMA_SYNC;  /* this process holds or is taking it */
    }
    return true;
}

int ompi_osc_ucxx_epoch_lock_locked(ompi_osc_ucxx_module_t *module, int target);

/* MPI_Win_lock / unlock of one target: begin (claims it), then done.
 * Inline, with the epoch lock's way out of line: where no access epoch is
 * in force one thread alone claims its target with plain loads and stores
 * (the epoch lock's way would end an unused fence epoch first; there is
 * none). */
static inline int ompi_osc_ucxx_epoch_lock_begin(ompi_osc_ucxx_module_t *module, int target)
{
    ompi_osc_ucxx_peer_t *peer = &module->peers[target];
    int32_t old;
    int rc = OMPI_SUCCESS;

    ompi_osc_ucxx_dyn_synced(module);
    if (OSC_UCXX.mt) {
        if (ompi_osc_ucxx_epoch_lock_unlocked(module, peer, &rc)) return rc;
    } else if (OSC_UCXX_EPOCH_NONE == module->access->kind) {
        if (!ompi_osc_ucxx_tgt_claim(peer, OSC_UCXX_TGT_LOCKED | OSC_UCXX_TGT_BUSY, 0, &old)) {
            return OMPI_ERR_RMA_SYNC;  /* this process holds or is taking it */
        }
        module->nlocks++;
        return OMPI_SUCCESS;
    }
    return ompi_osc_ucxx_epoch_lock_locked(module, target);
}

static inline void ompi_osc_ucxx_epoch_lock_done(ompi_osc_ucxx_module_t *module, int target,
                                                 int type, bool nocheck, bool ok)
{
    ompi_osc_ucxx_peer_t *peer = &module->peers[target];
    if (ok) {
        /* BUSY is ours and the lock bits are clear (only unlock_done clears
         * them, all at once): one flip sets the ones and clears the other */
        ompi_osc_ucxx_tgt_flip(peer, OSC_UCXX_TGT_BUSY | OSC_UCXX_TGT_LOCKED |
                                         (MPI_LOCK_EXCLUSIVE == type ? OSC_UCXX_TGT_EXCL : 0) |
                                         (nocheck ? OSC_UCXX_TGT_NOCHECK : 0));
    } else {
        ompi_osc_ucxx_tgt_clear(peer, OSC_UCXX_TGT_BUSY);
        ompi_osc_ucxx_add32(&module->nlocks, -1);
    }
}

static inline int ompi_osc_ucxx_epoch_unlock_begin(ompi_osc_ucxx_module_t *module, int target,
                                                   int *type, bool *nocheck)
{
    int32_t old;

    if (!ompi_osc_ucxx_tgt_claim(&module->peers[target], OSC_UCXX_TGT_BUSY, OSC_UCXX_TGT_LOCKED,
                                 &old)) {
        return OMPI_ERR_RMA_SYNC;
    }
    *type = (old & OSC_UCXX_TGT_EXCL) ? MPI_LOCK_EXCLUSIVE : MPI_LOCK_SHARED;
    /* (a lock by messages is released another way, as is no lock: one test) */
    *nocheck = 0 != (old & (OSC_UCXX_TGT_NOCHECK | OSC_UCXX_TGT_MSGLOCK));
    return OMPI_SUCCESS;
}

static inline void ompi_osc_ucxx_epoch_unlock_done(ompi_osc_ucxx_module_t *module, int target)
{
    ompi_osc_ucxx_tgt_clear(&module->peers[target], OSC_UCXX_TGT_LOCKED | OSC_UCXX_TGT_EXCL |
                                                        OSC_UCXX_TGT_NOCHECK | OSC_UCXX_TGT_BUSY |
                                                        OSC_UCXX_TGT_MSGLOCK | OSC_UCXX_TGT_LAZY);
    ompi_osc_ucxx_add32(&module->nlocks, -1);
}

/* lock_all, fence and start epochs.  A fence epoch opened without a
 * barrier (synced false) checks each target's fence count first. */
int ompi_osc_ucxx_epoch_lock_all(ompi_osc_ucxx_module_t *module, int assert);
int ompi_osc_ucxx_epoch_fence(ompi_osc_ucxx_module_t *module, bool opens, bool synced);
int ompi_osc_ucxx_epoch_start(ompi_osc_ucxx_module_t *module, int *ranks, int n, int assert);
/* Will closing the lock_all epoch in force release a lock word by a CPU
 * atomic (a shared lock it took on a mapped word: release order, so our
 * loads and stores through mappings before it are done before anyone sees
 * it)?  A target in an epoch keeps its mappings (osc_ucxx_ptab.c). */
static inline bool ompi_osc_ucxx_epoch_releases_by_cpu(ompi_osc_ucxx_module_t *module)
{
    return module->access->cpu_release;
}
/* Close the epoch in force: each target it opened is closed (lock_all's
 * shared locks released).  complete: consume remaining posts first. */
int ompi_osc_ucxx_epoch_end(ompi_osc_ucxx_module_t *module);
/* ... the lock_all epoch in force, whose operations are complete and
 * ordered before the release of its locks by CPU atomics (unlock_all). */
int ompi_osc_ucxx_epoch_end_all(ompi_osc_ucxx_module_t *module);
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
/* The post message to `target` (its kind defined at component init). */
int ompi_osc_ucxx_post_send(ompi_osc_ucxx_module_t *module, int target);
void ompi_osc_ucxx_post_am_init(void);

END_C_DECLS

#endif /* OMPI_OSC_UCXX_EPOCH_H */
