/*
 * Copyright (c) 2026 The osc/ucxx authors. All rights reserved.
 * $COPYRIGHT$
 *
 * Epoch bookkeeping: every field that says which targets this process may
 * access now, in one place.
 *
 * State.  Each target (peer) has an access word of OSC_UCXX_TGT_* bits; an
 * operation checks it with one load (OSC_UCXX_TGT_READY: a lock holds the
 * target, or the access epoch in force opened it).  The window's one epoch
 * object (module->access) says which access epoch is in force (fence,
 * lock_all, start or none) and owns the list of targets it opened or names,
 * so closing it touches those targets only: O(targets used), never O(P).
 * MPI_Win_lock epochs are per target: the lock bits of its access word and
 * the count module->nlocks.  The exposure side of PSCW is module->exposed,
 * complete_expected and the posts that arrived.
 *
 * Threads (MPI_THREAD_MULTIPLE, or our progress thread):
 *   - Access words change by atomic read-modify-write (fetch-or,
 *     fetch-and, compare-and-swap): different threads lock and unlock
 *     different targets at once, and a lock claims its target with one
 *     compare-and-swap (TGT_BUSY), so two threads can never both lock it.
 *     In a lock_all epoch only the epoch lock's holder writes them, so
 *     there they change by plain stores under that lock (tgt_store).
 *   - A lock_all epoch opens the targets the previous one used in
 *     MPI_Win_lock_all itself where that waits for nobody
 *     (reopen_targets): its threads then only read their access words.
 *   - The epoch object's lock serializes opening targets (the first
 *     operation on a target, which may wait: for the target's fence, its
 *     shared lock, its post) and every change of kind, so that a lock and a
 *     lock_all, start or fence never both succeed.  It is never taken on the
 *     steady-state path, but on every epoch's way in and out, so it is a
 *     spin lock that yields (ompi_osc_ucxx_spin_t), not a mutex.  Nothing waits for the epoch lock inside a UCX
 *     callback: message handlers only touch the post list (post_lock).
 *   - A fence epoch opened by a barrier opens targets without the lock under
 *     MPI_THREAD_MULTIPLE (open_fence_free): nothing to wait for, a
 *     fetch-or claims the target and a fetch-add its slot in a list sized
 *     for the group.
 *   - nlocks is an atomic counter.  (Where one thread alone is in the
 *     component, OSC_UCXX.mt false, plain loads and stores do for all of it.)
 *     Under threads a lock where no access epoch is in force takes its
 *     target without the epoch lock: nlocks and the kind meet Dekker-style
 *     with begin_locked (ompi_osc_ucxx_epoch_lock_unlocked, inline in
 *     osc_ucxx_epoch.h with the other lock and unlock steps).
 *   - fence_open and fence_count change only in MPI_Win_fence, which MPI has
 *     one thread call; exposed and complete_expected only in post, wait and
 *     test, likewise.
 *   - MPI makes it erroneous to operate on a target while another thread
 *     closes the epoch that allows it; that is not detected.
 */

#include "ompi_config.h"

#include "osc_ucxx_epoch.h"
#include "osc_ucxx_am.h"

static void epoch_construct(ompi_osc_ucxx_epoch_t *e)
{
    e->lock.held = 0;
    e->kind = OSC_UCXX_EPOCH_NONE;
    e->assert = 0;
    e->ops = false;
    e->check_fence = false;
    e->open_free = false;
    e->targets = NULL;
    e->count = e->cap = 0;
    e->reopen = 0;
    e->unposted = 0;
    e->cpu_release = false;
    memset(&e->order, 0, sizeof(e->order));
}

static void epoch_destruct(ompi_osc_ucxx_epoch_t *e)
{
    if (e->order.linked) ompi_osc_ucxx_order_remove(&e->order);
    free(e->targets);
}

OBJ_CLASS_INSTANCE(ompi_osc_ucxx_epoch_t, opal_object_t, epoch_construct, epoch_destruct);

/* In a lock_all epoch only the epoch lock's holder writes access words: a
 * lock or unlock of one target fails before it touches the word (the epoch
 * kind, nlocks), and fence opens need a fence epoch.  So there, under the
 * lock, a plain store does (two locked instructions less per target and
 * epoch, of ~7 per lock_all + put + flush + unlock_all). */
static void tgt_store(ompi_osc_ucxx_peer_t *peer, int32_t access)
{
    peer->access = access;
}

/* Take the epoch lock if it is free now (false: someone holds it; the
 * fast paths then take the general way, which waits). */
static inline bool spin_try(ompi_osc_ucxx_spin_t *s)
{
    int32_t free_ = 0;
    return !OSC_UCXX.mt || opal_atomic_compare_exchange_strong_acq_32(&s->held, &free_, 1);
}

/* ompi_osc_ucxx_cpu_state of a peer resolved already, else NULL (the fast
 * paths below then take the general way, which resolves it). */
static inline char *cpu_state_known(ompi_osc_ucxx_module_t *module, ompi_osc_ucxx_peer_t *peer)
{
    return module->state_cpu && peer->resolved ? (char *) peer->direct_state : NULL;
}

/* Room for `want` more targets in the epoch's list (caller holds its lock). */
static int reserve(ompi_osc_ucxx_epoch_t *e, int want)
{
    if (e->count + want > e->cap) {
        int cap = e->cap ? 2 * e->cap : 16;
        if (cap < e->count + want) cap = e->count + want;
        int *grown = realloc(e->targets, cap * sizeof(int));
        if (NULL == grown) return OMPI_ERR_OUT_OF_RESOURCE;
        e->targets = grown;
        e->cap = cap;
    }
    return OMPI_SUCCESS;
}

/* A fence epoch in which nothing was issued may be ended by another epoch. */
static bool unused_fence(ompi_osc_ucxx_epoch_t *e)
{
    return OSC_UCXX_EPOCH_FENCE == e->kind && !e->ops;
}

/* ------------------------------------------------------------------------- */
/* Posts (PSCW), as the origin sees them */

/* From the active-message handler: `from` posted to us.  Kept in arrival
 * order: a later post from `from` belongs to a later epoch. */
void ompi_osc_ucxx_post_arrived(ompi_osc_ucxx_module_t *module, int from)
{
    OSC_UCXX_LOCK(&module->post_lock);
    if (module->posts_seen_count == module->posts_seen_cap) {
        int cap = module->posts_seen_cap ? 2 * module->posts_seen_cap : 16;
        void *tmp = realloc(module->posts_seen, cap * sizeof(int));
        if (NULL == tmp) {
            OSC_UCXX_UNLOCK(&module->post_lock);
            OSC_UCXX_VERBOSE(1, "out of memory recording a post from %d", from);
            return;
        }
        module->posts_seen = tmp;
        module->posts_seen_cap = cap;
    }
    module->posts_seen[module->posts_seen_count++] = from;
    OSC_UCXX_UNLOCK(&module->post_lock);
}

/* The post message: MPI_Win_post to an origin that cannot store into our
 * state's post slots (osc_ucxx_active_target.c decides). */
static int post_handler(ompi_osc_ucxx_module_t *module, int from, void *buf, size_t len,
                        bool deferred)
{
    ompi_osc_ucxx_post_arrived(module, from);
    return OMPI_SUCCESS;
}

void ompi_osc_ucxx_post_am_init(void)
{
    ompi_osc_ucxx_am_define(OSC_UCXX_AM_POST, post_handler, NULL, OSC_UCXX_AM_SERVED);
}

/* Tell `target` that this process exposes the window to it. */
int ompi_osc_ucxx_post_send(ompi_osc_ucxx_module_t *module, int target)
{
    ompi_osc_ucxx_worker_t *worker = ompi_osc_ucxx_worker_self();
    ompi_osc_ucxx_am_hdr_t *hdr;

    if (target == module->rank) {
        ompi_osc_ucxx_post_arrived(module, target);
        return OMPI_SUCCESS;
    }
    if (NULL == worker || NULL == (hdr = malloc(sizeof(*hdr)))) {
        return OMPI_ERR_OUT_OF_RESOURCE;
    }
    hdr->cid = module->cid;
    hdr->from = module->rank;
    return ompi_osc_ucxx_am_send(module, worker, target, OSC_UCXX_AM_POST, hdr, sizeof(*hdr),
                                 sizeof(*hdr));
}

/* Take one post from `from`, if it has arrived: a slot count ahead of what
 * we consumed, or a recorded message.  A pair always uses the same one, but
 * only `from` knows which, so we look at both. */
static bool take_post(ompi_osc_ucxx_module_t *module, int from)
{
    bool found = false;

    if (ompi_osc_ucxx_state_posts_from(module, from) > module->peers[from].posts_taken) {
        module->peers[from].posts_taken++;
        return true;
    }
    OSC_UCXX_LOCK(&module->post_lock);
    for (int i = 0; i < module->posts_seen_count; ++i) {
        if (module->posts_seen[i] == from) {
            memmove(&module->posts_seen[i], &module->posts_seen[i + 1],
                    (module->posts_seen_count - i - 1) * sizeof(int));
            module->posts_seen_count--;
            found = true;
            break;
        }
    }
    OSC_UCXX_UNLOCK(&module->post_lock);
    return found;
}

/* Consume `target`'s post for this access epoch, waiting for it: until
 * then its memory may still be in use by its previous epoch. */
static void wait_post(ompi_osc_ucxx_module_t *module, ompi_osc_ucxx_epoch_t *e, int target)
{
    while (!take_post(module, target)) {
        opal_progress();
    }
    e->unposted--;
}

/* ------------------------------------------------------------------------- */
/* Lock order (osc_ucxx_epoch.h) */

ompi_osc_ucxx_order_t *ompi_osc_ucxx_order_head;
static ompi_osc_ucxx_order_t *order_tail;
static int (*order_grant)(ompi_osc_ucxx_module_t *module, int target);

void ompi_osc_ucxx_order_granter(int (*grant)(ompi_osc_ucxx_module_t *module, int target))
{
    order_grant = grant;
}

void ompi_osc_ucxx_order_add(ompi_osc_ucxx_order_t *node)
{
    node->next = NULL;
    node->prev = order_tail;
    if (NULL != order_tail) order_tail->next = node;
    else ompi_osc_ucxx_order_head = node;
    order_tail = node;
    node->linked = true;
}

void ompi_osc_ucxx_order_remove(ompi_osc_ucxx_order_t *node)
{
    if (!node->linked) return;
    if (NULL != node->prev) node->prev->next = node->next;
    else ompi_osc_ucxx_order_head = node->next;
    if (NULL != node->next) node->next->prev = node->prev;
    else order_tail = node->prev;
    node->prev = node->next = NULL;
    node->linked = false;
}

int ompi_osc_ucxx_order_before(ompi_osc_ucxx_order_t *node)
{
    int rc = OMPI_SUCCESS;

    while (NULL != ompi_osc_ucxx_order_head && node != ompi_osc_ucxx_order_head) {
        ompi_osc_ucxx_order_t *first = ompi_osc_ucxx_order_head;
        int r = first->take(first);
        ompi_osc_ucxx_order_remove(first);   /* (taken; failed: not tried again) */
        if (OMPI_SUCCESS == rc) rc = r;
    }
    return rc;
}

static int open_locked(ompi_osc_ucxx_module_t *module, ompi_osc_ucxx_epoch_t *e, int target);

/* A lock_all epoch opened before a lock that is to be held: every target's
 * shared lock, as an eager lock_all would have taken them in the call, one
 * after the other in ascending rank order (requests sent together could be
 * granted out of that order, and a process taking exclusive locks in it
 * could hold one of ours while waiting for another we hold). */
static int take_all(ompi_osc_ucxx_order_t *node)
{
    ompi_osc_ucxx_module_t *module = (ompi_osc_ucxx_module_t *) node->owner;
    ompi_osc_ucxx_epoch_t *e = module->access;
    int rc = OMPI_SUCCESS;

    for (int t = 0; t < module->size && OMPI_SUCCESS == rc; ++t) {
        OSC_UCXX_SPIN_LOCK(&e->lock);
        if (!(module->peers[t].access & OSC_UCXX_TGT_READY)) rc = open_locked(module, e, t);
        OSC_UCXX_SPIN_UNLOCK(&e->lock);
        if (OMPI_SUCCESS == rc && NULL != order_grant) rc = order_grant(module, t);
    }
    return rc;
}

/* ------------------------------------------------------------------------- */
/* Opening a target */

/* Wait until `target` has called the fence that opened our epoch. */
static int wait_fence(ompi_osc_ucxx_module_t *module, int target)
{
    ompi_osc_ucxx_peer_t *peer = &module->peers[target];
    uint64_t want = module->fence_count, seen = peer->fence_seen;
    int rc = OMPI_SUCCESS;

    while (seen < want && OMPI_SUCCESS == rc) {
        rc = ompi_osc_ucxx_state_fence_read(module, target, &seen);
        if (seen < want) {
            opal_progress();
        }
    }
    if (OMPI_SUCCESS == rc && peer->fence_seen < seen) {
        peer->fence_seen = seen;
    }
    return rc;
}

static int open_locked(ompi_osc_ucxx_module_t *module, ompi_osc_ucxx_epoch_t *e, int target)
{
    ompi_osc_ucxx_peer_t *peer = &module->peers[target];
    int rc = OMPI_SUCCESS;

    switch (e->kind) {
    case OSC_UCXX_EPOCH_FENCE:
        e->ops = true;
        rc = reserve(e, 1);
        if (OMPI_SUCCESS == rc && e->check_fence) rc = wait_fence(module, target);
        break;
    case OSC_UCXX_EPOCH_LOCK_ALL: {
        int32_t held = 0;
        rc = reserve(e, 1);
        /* (locks by message keep the order where they wait: osc_ucxx_lazy.c) */
        if (OMPI_SUCCESS == rc && e->order.linked && OSC_UCXX_LOCKS_TARGET != module->lock_kind) {
            rc = ompi_osc_ucxx_order_before(&e->order);
        }
        if (OMPI_SUCCESS == rc && !(e->assert & MPI_MODE_NOCHECK)) {
            rc = ompi_osc_ucxx_state_lock(module, target, MPI_LOCK_SHARED);
            held = OSC_UCXX_TGT_HELD;
            if (OMPI_SUCCESS == rc && ompi_osc_ucxx_state_unlock_by_cpu(module, target)) {
                e->cpu_release = true;
            }
        }
        if (OMPI_SUCCESS == rc) {
            e->targets[e->count++] = target;
            opal_atomic_wmb();  /* the list before the bit that lets operations in */
            tgt_store(peer, peer->access | held | OSC_UCXX_TGT_OPEN);
        }
        return rc;
    }
    case OSC_UCXX_EPOCH_START:
        if (!(peer->access & OSC_UCXX_TGT_MEMBER)) return OMPI_ERR_RMA_SYNC;
        wait_post(module, e, target);
        ompi_osc_ucxx_tgt_set(peer, OSC_UCXX_TGT_OPEN);
        return OMPI_SUCCESS;  /* (the group is the list already) */
    default:
        return OMPI_ERR_RMA_SYNC;
    }
    if (OMPI_SUCCESS == rc) {
        e->targets[e->count++] = target;
        ompi_osc_ucxx_tgt_set(peer, OSC_UCXX_TGT_OPEN);
    }
    return rc;
}

/* A fence epoch that a barrier opened, under MPI_THREAD_MULTIPLE
 * (e->open_free): nothing to wait for, and the target list has room for the
 * whole group, so a target opens without the epoch lock: an atomic fetch-or
 * claims it, a fetch-add takes its slot in the list (the closing fence
 * clears what the list names), and later operations on it take the one-load
 * path.  (Passing every operation through here instead, with nothing to
 * open, cost a visible part of the message rate of many puts per fence
 * epoch.) */
static int open_fence_free(ompi_osc_ucxx_module_t *module, ompi_osc_ucxx_epoch_t *e,
                           int target)
{
    ompi_osc_ucxx_peer_t *peer = &module->peers[target];

    if (!e->ops) {
        e->ops = true;  /* (every thread stores the same value) */
    }
    if (!(opal_atomic_fetch_or_32(&peer->access, OSC_UCXX_TGT_OPEN) & OSC_UCXX_TGT_OPEN)) {
        e->targets[opal_atomic_fetch_add_32((volatile int32_t *) &e->count, 1)] = target;
    }
    return OMPI_SUCCESS;
}

int ompi_osc_ucxx_epoch_open_target(ompi_osc_ucxx_module_t *module, int target)
{
    ompi_osc_ucxx_epoch_t *e = module->access;
    int rc = OMPI_SUCCESS;

    if (e->open_free && OSC_UCXX_EPOCH_FENCE == e->kind) {
        return open_fence_free(module, e, target);
    }
    OSC_UCXX_SPIN_LOCK(&e->lock);
    if (!(module->peers[target].access & OSC_UCXX_TGT_READY)) {
        rc = open_locked(module, e, target);  /* (unless another thread just did) */
    }
    OSC_UCXX_SPIN_UNLOCK(&e->lock);
    if (OMPI_ERR_RMA_SYNC == rc) {
        OSC_UCXX_VERBOSE(20, "window %u: access to %d outside an epoch", module->cid, target);
    }
    return rc;
}

/* ------------------------------------------------------------------------- */
/* Checks for synchronization calls */

bool ompi_osc_ucxx_epoch_busy(ompi_osc_ucxx_module_t *module)
{
    int kind = module->access->kind;
    return module->nlocks > 0 || module->exposed || OSC_UCXX_EPOCH_LOCK_ALL == kind ||
           OSC_UCXX_EPOCH_START == kind;
}

/* ------------------------------------------------------------------------- */
/* Closing */

/* The epoch object once its targets are closed; `reopen`: how many of
 * them the next lock_all opens again. */
static inline void end_reset(ompi_osc_ucxx_epoch_t *e, int reopen)
{
    e->reopen = reopen;
    ompi_osc_ucxx_order_remove(&e->order);
    e->count = 0;
    e->unposted = 0;
    e->ops = false;
    e->open_free = false;
    e->kind = OSC_UCXX_EPOCH_NONE;
}

/* Inline in ompi_osc_ucxx_epoch_end (every unlock_all and complete takes
 * it: the calls' frames were a visible part of a lock_all + put + flush +
 * unlock_all), out of line (end_locked) for the others. */
static inline __opal_attribute_always_inline__ int end_body(ompi_osc_ucxx_module_t *module,
                                                            ompi_osc_ucxx_epoch_t *e)
{
    int rc = OMPI_SUCCESS;

    for (int i = 0; i < e->count; ++i) {
        ompi_osc_ucxx_peer_t *peer = &module->peers[e->targets[i]];
        int32_t bits = OSC_UCXX_TGT_OPEN | OSC_UCXX_TGT_HELD | OSC_UCXX_TGT_MEMBER;
        if (peer->access & OSC_UCXX_TGT_HELD) {
            int r = ompi_osc_ucxx_state_unlock(module, e->targets[i], MPI_LOCK_SHARED);
            if (OMPI_SUCCESS != r) rc = r;
        }
        if (OSC_UCXX_EPOCH_LOCK_ALL == e->kind) {
            tgt_store(peer, peer->access & ~bits);
        } else {
            ompi_osc_ucxx_tgt_clear(peer, bits);
        }
    }
    end_reset(e, OSC_UCXX_EPOCH_LOCK_ALL == e->kind ? e->count : 0);
    return rc;
}

static __opal_attribute_noinline__ int end_locked(ompi_osc_ucxx_module_t *module,
                                                  ompi_osc_ucxx_epoch_t *e)
{
    return end_body(module, e);
}

int ompi_osc_ucxx_epoch_end(ompi_osc_ucxx_module_t *module)
{
    ompi_osc_ucxx_epoch_t *e = module->access;
    int rc;
    OSC_UCXX_SPIN_LOCK(&e->lock);
    rc = end_body(module, e);
    OSC_UCXX_SPIN_UNLOCK(&e->lock);
    return rc;
}

/* end_body for an epoch whose lock the caller holds (mt) */
static __opal_attribute_noinline__ int end_held(ompi_osc_ucxx_module_t *module,
                                                ompi_osc_ucxx_epoch_t *e)
{
    int rc = end_body(module, e);
    OSC_UCXX_SPIN_UNLOCK(&e->lock);
    return rc;
}

/* MPI_Win_unlock_all's end of the epoch: end_body, inline and without a
 * call frame where the epoch opened one target and a CPU atomic on its
 * mapped lock word releases what it holds, with the atomics audit off (the
 * counterpart of ompi_osc_ucxx_epoch_lock_all's common case). */
int ompi_osc_ucxx_epoch_end_all(ompi_osc_ucxx_module_t *module)
{
    ompi_osc_ucxx_epoch_t *e = module->access;
    ompi_osc_ucxx_peer_t *peer;
    char *state = NULL;
    int32_t access;
    bool mt = OSC_UCXX.mt;

    if (OPAL_UNLIKELY(!spin_try(&e->lock))) {
        return ompi_osc_ucxx_epoch_end(module);
    }
    if (1 != e->count || OSC_UCXX_EPOCH_LOCK_ALL != e->kind || ompi_osc_ucxx_audit_on) {
        return end_held(module, e);
    }
    peer = &module->peers[e->targets[0]];
    access = peer->access;
    if ((access & OSC_UCXX_TGT_HELD) && NULL == (state = cpu_state_known(module, peer))) {
        return end_held(module, e);
    }
    if (NULL != state) {
        ompi_osc_ucxx_state_cpu_unlock_word(ompi_osc_ucxx_lock_word(module, e->targets[0], state),
                                            MPI_LOCK_SHARED);
    }
    tgt_store(peer, access & ~(OSC_UCXX_TGT_OPEN | OSC_UCXX_TGT_HELD | OSC_UCXX_TGT_MEMBER));
    end_reset(e, 1);
    if (mt) ompi_osc_ucxx_spin_unlock(&e->lock);
    return OMPI_SUCCESS;
}

/* complete: every member's post is consumed before we add to its
 * completion counter, which counts over all its exposure epochs. */
int ompi_osc_ucxx_epoch_take_posts(ompi_osc_ucxx_module_t *module)
{
    ompi_osc_ucxx_epoch_t *e = module->access;

    OSC_UCXX_SPIN_LOCK(&e->lock);
    for (int i = 0; e->unposted > 0 && i < e->count; ++i) {
        ompi_osc_ucxx_peer_t *peer = &module->peers[e->targets[i]];
        if (!(peer->access & OSC_UCXX_TGT_OPEN)) {
            wait_post(module, e, e->targets[i]);
            ompi_osc_ucxx_tgt_set(peer, OSC_UCXX_TGT_OPEN);
        }
    }
    OSC_UCXX_SPIN_UNLOCK(&e->lock);
    return OMPI_SUCCESS;
}

/* ------------------------------------------------------------------------- */
/* Opening fence, lock_all and start epochs */

/* A lock_all epoch opens again, in the calling thread, the targets the last
 * one opened (most programs use the same ones each time) where that costs
 * one CPU atomic and waits for nobody: their state is mapped here and no
 * writer holds or claims their lock (MPI lets lock_all take its shared
 * locks at once or on first use), up to the first one a writer holds or
 * claims (taken on first use, it would come after those held: the order
 * of the last epoch's first uses is kept).  Opened on first use by
 * whichever thread got there first, the target's access word and the
 * epoch's list moved between cores twice per epoch, and the other threads
 * waited for the opener: lock_all's latency grew with the number of
 * threads. */
#define OSC_UCXX_REOPEN_MAX 8

static inline __opal_attribute_always_inline__ void
reopen_targets(ompi_osc_ucxx_module_t *module, ompi_osc_ucxx_epoch_t *e)
{
    int n = e->reopen < OSC_UCXX_REOPEN_MAX ? e->reopen : OSC_UCXX_REOPEN_MAX;

    e->reopen = 0;
    for (int i = 0; i < n; ++i) {
        int target = e->targets[i];  /* (read before this loop appends at count <= i) */
        ompi_osc_ucxx_peer_t *peer = &module->peers[target];
        int32_t held = 0;
        char *state;

        if ((peer->access & OSC_UCXX_TGT_READY) ||
            NULL == (state = ompi_osc_ucxx_cpu_state(module, target))) {
            continue;
        }
        if (!(e->assert & MPI_MODE_NOCHECK)) {
            /* (not past it: the later ones would be held before it) */
            if (!ompi_osc_ucxx_state_try_shared(module, target, state)) break;
            held = OSC_UCXX_TGT_HELD;
            e->cpu_release = true;
        }
        e->targets[e->count++] = target;  /* (room: it held them last time) */
        tgt_store(peer, peer->access | held | OSC_UCXX_TGT_OPEN);
    }
}

/* Caller holds e->lock.  An unused fence epoch gives way.  Inline in
 * ompi_osc_ucxx_epoch_lock_all (every lock_all), out of line (begin_locked)
 * for fence and start. */
static inline __opal_attribute_always_inline__ int
begin_body(ompi_osc_ucxx_module_t *module, ompi_osc_ucxx_epoch_t *e, int kind, int assert)
{
    if (unused_fence(e)) {
        (void) end_locked(module, e);
    }
    if (OSC_UCXX_EPOCH_NONE != e->kind) {
        return OMPI_ERR_RMA_SYNC;
    }
    if (OSC_UCXX_EPOCH_FENCE != kind) {
        /* (lock_begin_unlocked: the kind, then nlocks; it does the reverse) */
        __atomic_store_n(&e->kind, kind, __ATOMIC_SEQ_CST);
        if (__atomic_load_n(&module->nlocks, __ATOMIC_SEQ_CST) > 0) {
            e->kind = OSC_UCXX_EPOCH_NONE;
            return OMPI_ERR_RMA_SYNC;
        }
    }
    ompi_osc_ucxx_dyn_synced(module);
    e->kind = kind;
    e->assert = assert;
    e->ops = false;
    e->open_free = false;
    e->count = 0;
    e->unposted = 0;
    e->cpu_release = false;
    if (OSC_UCXX_EPOCH_LOCK_ALL == kind) {
        /* (holding them now would put them before earlier locks not taken yet) */
        if (NULL == ompi_osc_ucxx_order_head) reopen_targets(module, e);
        if (!(assert & MPI_MODE_NOCHECK) && !OSC_UCXX.enable_mpi_threads) {
            e->order.take = take_all;
            e->order.owner = module;
            ompi_osc_ucxx_order_add(&e->order);
        }
    }
    return OMPI_SUCCESS;
}

static __opal_attribute_noinline__ int begin_locked(ompi_osc_ucxx_module_t *module,
                                                    ompi_osc_ucxx_epoch_t *e, int kind,
                                                    int assert)
{
    return begin_body(module, e, kind, assert);
}

/* lock_all's general way, the epoch lock held (mt). */
static __opal_attribute_noinline__ int lock_all_locked(ompi_osc_ucxx_module_t *module,
                                                       ompi_osc_ucxx_epoch_t *e, int assert)
{
    int rc = begin_body(module, e, OSC_UCXX_EPOCH_LOCK_ALL, assert);
    OSC_UCXX_SPIN_UNLOCK(&e->lock);
    return rc;
}

/* MPI_Win_lock_all.  The common case of RMA-MT's and similar loops, inline
 * and without a call frame: the last epoch used one target, whose lock word
 * is mapped here and changes by CPU atomics, the epoch checks its locks,
 * no lock waits in the order (the epoch takes its place there below
 * MPI_THREAD_MULTIPLE) and the atomics audit is off; then it is
 * begin_body with reopen_targets unrolled for that one target, each
 * condition tested once, before the kind changes.  Everything else takes
 * begin_body itself (lock_all_locked).  (The frames, the loop and the tests
 * made twice were most of the difference to osc/sm's lock_all.) */
int ompi_osc_ucxx_epoch_lock_all(ompi_osc_ucxx_module_t *module, int assert)
{
    ompi_osc_ucxx_epoch_t *e = module->access;
    ompi_osc_ucxx_peer_t *peer;
    char *state;
    bool mt = OSC_UCXX.mt, held;

    if (OPAL_UNLIKELY(!spin_try(&e->lock))) {
        OSC_UCXX_SPIN_LOCK(&e->lock);
        return lock_all_locked(module, e, assert);
    }
    if (OSC_UCXX_EPOCH_NONE != e->kind || 1 != e->reopen || (assert & MPI_MODE_NOCHECK) ||
        NULL != ompi_osc_ucxx_order_head || ompi_osc_ucxx_audit_on) {
        return lock_all_locked(module, e, assert);
    }
    peer = &module->peers[e->targets[0]];
    if ((peer->access & OSC_UCXX_TGT_READY) || NULL == (state = cpu_state_known(module, peer))) {
        return lock_all_locked(module, e, assert);
    }
    /* (lock_begin_unlocked: the kind, then nlocks; it does the reverse) */
    __atomic_store_n(&e->kind, OSC_UCXX_EPOCH_LOCK_ALL, __ATOMIC_SEQ_CST);
    if (OPAL_UNLIKELY(__atomic_load_n(&module->nlocks, __ATOMIC_SEQ_CST) > 0)) {
        e->kind = OSC_UCXX_EPOCH_NONE;
        return lock_all_locked(module, e, assert);
    }
    ompi_osc_ucxx_dyn_synced(module);
    held = ompi_osc_ucxx_state_try_shared_word(
        ompi_osc_ucxx_lock_word(module, e->targets[0], state));
    e->assert = assert;
    e->ops = false;
    e->open_free = false;
    e->unposted = 0;
    e->reopen = 0;
    e->count = held;  /* (targets[0] is the target already) */
    e->cpu_release = held;
    if (OPAL_LIKELY(held)) {
        tgt_store(peer, peer->access | OSC_UCXX_TGT_HELD | OSC_UCXX_TGT_OPEN);
    }
    if (!OSC_UCXX.enable_mpi_threads) {
        e->order.take = take_all;
        e->order.owner = module;
        ompi_osc_ucxx_order_add(&e->order);
    }
    if (mt) ompi_osc_ucxx_spin_unlock(&e->lock);
    return OMPI_SUCCESS;
}

/* MPI_Win_fence: close the epoch in force, then open a fence epoch unless
 * `opens` is false, under one acquisition of the epoch lock.  After a
 * barrier (`synced`) every target may be accessed at once; under
 * MPI_THREAD_MULTIPLE targets then open without the lock (open_fence_free),
 * for which the list gets room for the group: 4 bytes a rank, kept with the
 * window, only where it is fenced under threads. */
int ompi_osc_ucxx_epoch_fence(ompi_osc_ucxx_module_t *module, bool opens, bool synced)
{
    ompi_osc_ucxx_epoch_t *e = module->access;
    int rc = OMPI_SUCCESS;

    OSC_UCXX_SPIN_LOCK(&e->lock);
    (void) end_locked(module, e);
    if (opens) {
        rc = begin_locked(module, e, OSC_UCXX_EPOCH_FENCE, 0);
        e->check_fence = !synced;
        e->open_free = OMPI_SUCCESS == rc && synced && OSC_UCXX.mt &&
                       OMPI_SUCCESS == reserve(e, module->size);
    }
    OSC_UCXX_SPIN_UNLOCK(&e->lock);
    return rc;
}

/* MPI_Win_start: the group (ranks, n; the epoch takes the array). */
int ompi_osc_ucxx_epoch_start(ompi_osc_ucxx_module_t *module, int *ranks, int n, int assert)
{
    ompi_osc_ucxx_epoch_t *e = module->access;
    int32_t bits = OSC_UCXX_TGT_MEMBER;
    int rc;

    OSC_UCXX_SPIN_LOCK(&e->lock);
    rc = begin_locked(module, e, OSC_UCXX_EPOCH_START, assert);
    if (OMPI_SUCCESS == rc) {
        free(e->targets);
        e->targets = ranks;
        e->count = e->cap = n;
        if (assert & MPI_MODE_NOCHECK) {
            bits |= OSC_UCXX_TGT_OPEN;  /* posted already, the user promises */
        } else {
            e->unposted = n;
        }
        for (int i = 0; i < n; ++i) ompi_osc_ucxx_tgt_set(&module->peers[ranks[i]], bits);
    } else {
        free(ranks);
    }
    OSC_UCXX_SPIN_UNLOCK(&e->lock);
    return rc;
}

/* ------------------------------------------------------------------------- */
/* MPI_Win_lock epochs */

/* MPI_Win_lock's way under the epoch lock (osc_ucxx_epoch.h): it ends an
 * unused fence epoch first. */
int ompi_osc_ucxx_epoch_lock_locked(ompi_osc_ucxx_module_t *module, int target)
{
    ompi_osc_ucxx_epoch_t *e = module->access;
    ompi_osc_ucxx_peer_t *peer = &module->peers[target];
    int32_t old;
    int rc = OMPI_SUCCESS;

    OSC_UCXX_SPIN_LOCK(&e->lock);
    if (unused_fence(e)) {
        (void) end_locked(module, e);
    }
    if (OSC_UCXX_EPOCH_NONE != e->kind) {
        rc = OMPI_ERR_RMA_SYNC;
    } else if (!ompi_osc_ucxx_tgt_claim(peer, OSC_UCXX_TGT_LOCKED | OSC_UCXX_TGT_BUSY, 0, &old)) {
        rc = OMPI_ERR_RMA_SYNC;  /* this process holds or is taking it */
    } else {
        ompi_osc_ucxx_add32(&module->nlocks, 1);
    }
    OSC_UCXX_SPIN_UNLOCK(&e->lock);
    return rc;
}

/* ------------------------------------------------------------------------- */
/* PSCW exposure */

int ompi_osc_ucxx_epoch_post(ompi_osc_ucxx_module_t *module, int n)
{
    ompi_osc_ucxx_epoch_t *e = module->access;
    int rc = OMPI_SUCCESS;

    OSC_UCXX_SPIN_LOCK(&e->lock);
    if (unused_fence(e)) {
        (void) end_locked(module, e);
    }
    if (module->exposed || OSC_UCXX_EPOCH_FENCE == e->kind) {
        rc = OMPI_ERR_RMA_SYNC;
    } else {
        module->complete_expected += n;
        module->exposed = true;
    }
    OSC_UCXX_SPIN_UNLOCK(&e->lock);
    return rc;
}

/* Have all origins of our exposure epochs so far completed?  Then the
 * exposure epoch ends. */
bool ompi_osc_ucxx_epoch_exposure_done(ompi_osc_ucxx_module_t *module)
{
    if (ompi_osc_ucxx_state_completed(module) < module->complete_expected) {
        return false;
    }
    module->exposed = false;
    return true;
}
