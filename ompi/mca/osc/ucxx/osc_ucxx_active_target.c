/*
 * Copyright (c) 2026 The osc/ucxx authors. All rights reserved.
 * $COPYRIGHT$
 *
 * Active target: fence and post/start/complete/wait/test.
 *
 * PSCW: a post is an active message to each origin, recorded in a growing
 * list, so there is no cap on outstanding posts; start does not wait: the
 * first operation on a target, or complete, consumes that target's post.  Complete flushes, then adds 1 to each target's completion counter
 * (one atomic, one-sided on a node); wait/test compare that counter with the
 * number of origins the exposure epochs so far have named.
 */

#include "ompi_config.h"

#include "osc_ucxx.h"

static int barrier(ompi_osc_ucxx_module_t *module)
{
    return module->comm->c_coll->coll_barrier(module->comm,
                                              module->comm->c_coll->coll_barrier_module);
}

static void epoch_set(ompi_osc_ucxx_module_t *module, int set, int clear)
{
    opal_atomic_fetch_and_32((volatile int32_t *) &module->epoch, ~clear);
    opal_atomic_fetch_or_32((volatile int32_t *) &module->epoch, set);
}

/* Fence protocol.
 *
 * A closing fence (one that ends a fence epoch in which operations may have
 * been issued) completes our operations, remotely (accumulates by active
 * message are acknowledged), then synchronizes once: a barrier, after which
 * everything aimed at any process has landed.  When the fence also opens the
 * next epoch, that same barrier is the opening synchronization.
 *
 * An opening fence that closes nothing (the first fence, one after
 * MPI_MODE_NOSUCCEED, or MPI_MODE_NOPRECEDE) does not synchronize at all: it
 * publishes how many fences this process has called, in its state segment.
 * MPI-3.1 11.5.1 lets an operation reach a target only after the target has
 * called its fence, so before its first operation on a target in such an
 * epoch an origin reads that count (a load on a node, one fetching atomic
 * otherwise) and waits if the target is behind.  Processes that only expose
 * memory, or touch few targets, never wait for the rest.
 *
 * No count of incoming origins is needed: origins complete their operations
 * before the closing barrier. */
int ompi_osc_ucxx_fence(int assert, struct ompi_win_t *win)
{
    ompi_osc_ucxx_module_t *module = OSC_UCXX_MODULE(win);
    bool closes = module->fence_open && !(assert & MPI_MODE_NOPRECEDE);
    bool opens = !(assert & MPI_MODE_NOSUCCEED);
    int rc = OMPI_SUCCESS;

    if (assert & ~(MPI_MODE_NOSTORE | MPI_MODE_NOPUT | MPI_MODE_NOPRECEDE |
                   MPI_MODE_NOSUCCEED)) {
        return MPI_ERR_ASSERT;  /* before anything: a collective that stays matched */
    }
    if (module->num_locks > 0 ||
        (module->epoch & (OSC_UCXX_EPOCH_LOCK_ALL | OSC_UCXX_EPOCH_START |
                          OSC_UCXX_EPOCH_POST))) {
        return OMPI_ERR_RMA_SYNC;
    }
    ompi_osc_ucxx_serve(module);
    if (closes) {
        rc = ompi_osc_ucxx_flush_module(module, -1, NULL);
        if (OMPI_SUCCESS == rc) rc = barrier(module);
    }
    module->fence_count++;
    module->fence_open = opens;
    /* Our stores before the fence are done before a peer can see the count. */
    __atomic_store_n((uint64_t *) (module->state + OSC_UCXX_STATE_FENCE), module->fence_count,
                     __ATOMIC_RELEASE);
    if (!opens) {
        epoch_set(module, 0, OSC_UCXX_EPOCH_FENCE | OSC_UCXX_EPOCH_FENCE_OPS |
                                 OSC_UCXX_EPOCH_FENCE_SYNC);
    } else if (closes) {
        epoch_set(module, OSC_UCXX_EPOCH_FENCE,
                  OSC_UCXX_EPOCH_FENCE_OPS | OSC_UCXX_EPOCH_FENCE_SYNC);
    } else {
        epoch_set(module, OSC_UCXX_EPOCH_FENCE | OSC_UCXX_EPOCH_FENCE_SYNC,
                  OSC_UCXX_EPOCH_FENCE_OPS);
    }
    return rc;
}

/* Wait until `target` has called the fence that opened our epoch. */
int ompi_osc_ucxx_fence_sync(ompi_osc_ucxx_module_t *module, int target)
{
    ompi_osc_ucxx_peer_t *peer = &module->peers[target];
    uint64_t want = module->fence_count, seen = peer->fence_seen;
    int rc = OMPI_SUCCESS;

    while (seen < want && OMPI_SUCCESS == rc) {
        char *direct = ompi_osc_ucxx_direct_state(module, target);
        if (NULL != direct) {
            seen = __atomic_load_n((uint64_t *) (direct + OSC_UCXX_STATE_FENCE),
                                   __ATOMIC_ACQUIRE);
        } else {
            rc = ompi_osc_ucxx_state_atomic(module, target, OSC_UCXX_STATE_FENCE,
                                            UCP_ATOMIC_OP_ADD, 0, 0, &seen);
        }
        if (seen < want) {
            opal_progress();
        }
    }
    if (OMPI_SUCCESS == rc && peer->fence_seen < seen) {
        peer->fence_seen = seen;  /* monotonic: a racing thread stores the same */
    }
    return rc;
}

/* Ranks of `group` in the window's communicator (malloc'ed), or -1. */
static int group_ranks(ompi_osc_ucxx_module_t *module, ompi_group_t *group, int **ranks)
{
    int n = ompi_group_size(group);
    int *in = calloc(n + 1, sizeof(int));
    int *out = calloc(n + 1, sizeof(int));
    bool ok = (NULL != in && NULL != out);

    for (int i = 0; ok && i < n; ++i) in[i] = i;
    ok = ok && OMPI_SUCCESS == ompi_group_translate_ranks(group, n, in,
                                                          module->comm->c_local_group, out);
    for (int i = 0; ok && i < n; ++i) ok = (MPI_UNDEFINED != out[i]);
    free(in);
    if (!ok) {
        free(out);
        return -1;
    }
    *ranks = out;
    return n;
}

void ompi_osc_ucxx_post_arrived(ompi_osc_ucxx_module_t *module, int from)
{
    OPAL_THREAD_LOCK(&module->post_lock);
    if (module->posts_seen_count == module->posts_seen_cap) {
        int cap = module->posts_seen_cap ? 2 * module->posts_seen_cap : 16;
        void *tmp = realloc(module->posts_seen, cap * sizeof(int));
        if (NULL == tmp) {
            OPAL_THREAD_UNLOCK(&module->post_lock);
            OSC_UCXX_VERBOSE(1, "out of memory recording a post from %d", from);
            return;
        }
        module->posts_seen = tmp;
        module->posts_seen_cap = cap;
    }
    module->posts_seen[module->posts_seen_count++] = from;
    OPAL_THREAD_UNLOCK(&module->post_lock);
}

/* Do we post to `origin` through our slot in its state segment? */
static bool post_by_slot(ompi_osc_ucxx_module_t *module, int origin)
{
    return module->rank < OSC_UCXX_POST_SLOTS && origin != module->rank &&
           NULL != ompi_osc_ucxx_direct_state(module, origin);
}

/* Take one post from `from`, if it has arrived: a slot count ahead of what
 * we consumed, or a recorded active message (in arrival order: later posts
 * from `from` belong to later epochs).  Only `from` knows whether it can map
 * our state, so we look at both; a pair always uses the same one. */
static bool take_post(ompi_osc_ucxx_module_t *module, int from)
{
    bool found = false;

    if (from < OSC_UCXX_POST_SLOTS) {
        uint64_t *slot = (uint64_t *) (module->state + OSC_UCXX_STATE_POSTS + 8 * from);
        if (__atomic_load_n(slot, __ATOMIC_ACQUIRE) > module->peers[from].posts_taken) {
            module->peers[from].posts_taken++;
            return true;
        }
    }
    OPAL_THREAD_LOCK(&module->post_lock);
    for (int i = 0; i < module->posts_seen_count; ++i) {
        if (module->posts_seen[i] == from) {
            memmove(&module->posts_seen[i], &module->posts_seen[i + 1],
                    (module->posts_seen_count - i - 1) * sizeof(int));
            module->posts_seen_count--;
            found = true;
            break;
        }
    }
    OPAL_THREAD_UNLOCK(&module->post_lock);
    return found;
}

/* Tell `origin` we posted: our stores before the post are visible first. */
static int send_post(ompi_osc_ucxx_module_t *module, int origin)
{
    if (post_by_slot(module, origin)) {
        return ompi_osc_ucxx_state_atomic(module, origin,
                                          OSC_UCXX_STATE_POSTS + 8 * module->rank,
                                          UCP_ATOMIC_OP_ADD, 1, 0, NULL);
    }
    return ompi_osc_ucxx_am_send_post(module, origin);
}

/* The bitmap of ranks[0..n) in the window's communicator (calloc'ed). */
static uint8_t *rank_map(ompi_osc_ucxx_module_t *module, const int *ranks, int n)
{
    uint8_t *map = calloc((module->size + 7) / 8, 1);
    for (int i = 0; NULL != map && i < n; ++i) map[ranks[i] >> 3] |= 1 << (ranks[i] & 7);
    return map;
}

/* Start does not wait for posts: the first operation on a target (or
 * complete, for targets never touched) consumes that target's post. */
int ompi_osc_ucxx_start(struct ompi_group_t *group, int assert, struct ompi_win_t *win)
{
    ompi_osc_ucxx_module_t *module = OSC_UCXX_MODULE(win);
    int epoch = module->epoch, n, *ranks;
    uint8_t *map, *unposted = NULL;
    ompi_osc_ucxx_serve(module);

    if (assert & ~MPI_MODE_NOCHECK) {
        return MPI_ERR_ASSERT;
    }
    if ((epoch & (OSC_UCXX_EPOCH_START | OSC_UCXX_EPOCH_LOCK_ALL | OSC_UCXX_EPOCH_FENCE_OPS)) ||
        module->num_locks > 0) {
        return OMPI_ERR_RMA_SYNC;
    }
    n = group_ranks(module, group, &ranks);
    if (n < 0) {
        return MPI_ERR_GROUP;
    }
    map = rank_map(module, ranks, n);
    if (!(assert & MPI_MODE_NOCHECK)) {
        unposted = rank_map(module, ranks, n);
    }
    if (NULL == map || (NULL == unposted && !(assert & MPI_MODE_NOCHECK))) {
        free(ranks);
        free(map);
        free(unposted);
        return OMPI_ERR_OUT_OF_RESOURCE;
    }
    free(module->start_ranks);
    free(module->start_map);
    free(module->start_unposted);
    module->start_ranks = ranks;
    module->start_count = n;
    module->start_map = map;
    module->start_unposted = unposted;
    module->start_unposted_count = (NULL != unposted) ? n : 0;
    opal_atomic_wmb();
    epoch_set(module, OSC_UCXX_EPOCH_START, OSC_UCXX_EPOCH_FENCE);
    return OMPI_SUCCESS;
}

/* Consume `target`'s post for this access epoch, waiting for it if needed:
 * until then its memory may still be in use by its previous epoch. */
int ompi_osc_ucxx_start_sync(ompi_osc_ucxx_module_t *module, int target)
{
    OPAL_THREAD_LOCK(&module->open_lock);
    if (ompi_osc_ucxx_bit(module->start_unposted, target)) {
        while (!take_post(module, target)) {
            opal_progress();
        }
        module->start_unposted[target >> 3] &= ~(1 << (target & 7));
        module->start_unposted_count--;
    }
    OPAL_THREAD_UNLOCK(&module->open_lock);
    return OMPI_SUCCESS;
}

int ompi_osc_ucxx_complete(struct ompi_win_t *win)
{
    ompi_osc_ucxx_module_t *module = OSC_UCXX_MODULE(win);
    int rc;

    if (!(module->epoch & OSC_UCXX_EPOCH_START)) {
        return OMPI_ERR_RMA_SYNC;
    }
    /* A target's completion counter counts over all its exposure epochs, so
     * we add to it only after consuming the post of the epoch we close. */
    for (int i = 0; module->start_unposted_count > 0 && i < module->start_count; ++i) {
        ompi_osc_ucxx_start_sync(module, module->start_ranks[i]);
    }
    /* Our operations land first; then each target learns we are done. */
    rc = ompi_osc_ucxx_flush_module(module, -1, NULL);
    for (int i = 0; OMPI_SUCCESS == rc && i < module->start_count; ++i) {
        rc = ompi_osc_ucxx_state_atomic(module, module->start_ranks[i],
                                        OSC_UCXX_STATE_COMPLETE, UCP_ATOMIC_OP_ADD, 1, 0,
                                        NULL);
    }
    epoch_set(module, 0, OSC_UCXX_EPOCH_START);
    return rc;
}

int ompi_osc_ucxx_post(struct ompi_group_t *group, int assert, struct ompi_win_t *win)
{
    ompi_osc_ucxx_module_t *module = OSC_UCXX_MODULE(win);
    int n, *ranks, rc = OMPI_SUCCESS;
    ompi_osc_ucxx_serve(module);

    if (assert & ~(MPI_MODE_NOCHECK | MPI_MODE_NOSTORE | MPI_MODE_NOPUT)) {
        return MPI_ERR_ASSERT;
    }
    if (module->epoch & (OSC_UCXX_EPOCH_POST | OSC_UCXX_EPOCH_FENCE_OPS)) {
        return OMPI_ERR_RMA_SYNC;
    }
    n = group_ranks(module, group, &ranks);
    if (n < 0) {
        return MPI_ERR_GROUP;
    }
    module->complete_expected += n;
    /* Our local stores must be visible before an origin may access. */
    opal_atomic_mb();
    if (!(assert & MPI_MODE_NOCHECK)) {
        for (int i = 0; OMPI_SUCCESS == rc && i < n; ++i) {
            rc = send_post(module, ranks[i]);
        }
    }
    free(ranks);
    epoch_set(module, OSC_UCXX_EPOCH_POST, OSC_UCXX_EPOCH_FENCE);
    return rc;
}

static bool exposure_done(ompi_osc_ucxx_module_t *module)
{
    uint64_t done = __atomic_load_n((uint64_t *) (module->state + OSC_UCXX_STATE_COMPLETE),
                                    __ATOMIC_ACQUIRE);
    return done >= module->complete_expected;
}

int ompi_osc_ucxx_wait(struct ompi_win_t *win)
{
    ompi_osc_ucxx_module_t *module = OSC_UCXX_MODULE(win);

    if (!(module->epoch & OSC_UCXX_EPOCH_POST)) {
        return OMPI_ERR_RMA_SYNC;
    }
    while (!exposure_done(module)) {
        opal_progress();
    }
    epoch_set(module, 0, OSC_UCXX_EPOCH_POST);
    return OMPI_SUCCESS;
}

int ompi_osc_ucxx_test(struct ompi_win_t *win, int *flag)
{
    ompi_osc_ucxx_module_t *module = OSC_UCXX_MODULE(win);
    ompi_osc_ucxx_serve(module);

    if (!(module->epoch & OSC_UCXX_EPOCH_POST)) {
        return OMPI_ERR_RMA_SYNC;
    }
    *flag = exposure_done(module);
    if (!*flag) {
        opal_progress();
        *flag = exposure_done(module);
    }
    if (*flag) {
        epoch_set(module, 0, OSC_UCXX_EPOCH_POST);
    }
    return OMPI_SUCCESS;
}
