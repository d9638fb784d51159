/*
 * Copyright (c) 2026 The osc/ucxx authors. All rights reserved.
 * $COPYRIGHT$
 *
 * The state segment (layout: ompi_osc_ucxx_state_t in osc_ucxx_types.h):
 * every read-modify-write of one of its words, ours or a peer's, is here.
 *
 * Atomics policy (osc_ucxx_policy.c, docs/atomics.md).  A CPU atomic and a
 * UCX atomic on the same word are not atomic with respect to each other
 * where UCX uses device atomics (the default on InfiniBand/RoCE): a NIC's
 * fetch-and-add can overwrite a CPU store made between its read and its
 * write.  So each word is changed by one kind only, the same on every
 * process (agreed at creation):
 *   - fence, dyn_gen: CPU atomics where every process of the
 *     window maps every other's state segment (module->state_cpu); UCX
 *     atomics for everybody otherwise, the owner included (through its link
 *     to itself).  Never one kind for some targets and the other for the
 *     rest.  Plain loads of a word are fine either way; a peer's word that
 *     is not mapped here is read with a UCX get, never with a fetching add
 *     of 0 (a read-modify-write), and wait loops read.
 *   - lock: as those where the window's locks are one-sided
 *     (module->lock_kind: CPU or UCX atomics); where the target manages
 *     them (OSC_UCXX_LOCKS_TARGET), CPU atomics only: the owner's, for
 *     itself and for the origins that ask it by message, and those of the
 *     peers that map the word.
 *   - acc_all, acc_locks: CPU only.  Only processes that map the window
 *     memory take them (the origin of an accumulate on mapped memory, or the
 *     target applying an accumulate message); others send their accumulates
 *     to the target (osc_ucxx_acc_am.c).
 *   - serve, post slot i (module->posts): CPU only.  Only peers that map
 *     our state write them (slot i has one writer, rank i), and we only
 *     read them.
 *   - complete: CPU only.  Peers that map our state add to it; the others'
 *     PSCW notices are added by us, applying them (osc_ucxx_notice.c).
 *   - barrier[k]: CPU only, one writer (the process 2^k ranks before the
 *     owner), and only where every process maps every other's state.
 *   - am_exec: CPU only.  The owner takes it to run a user active message's
 *     handler, and so do origins that map the target (origin-side
 *     execution); others send their AMs to the owner.
 * With the atomics audit on (osc_ucxx_audit.c), every change of a word is
 * recorded with its kind.
 *
 * Lock word protocol: readers count in the low 32 bits, writers in the high
 * 32.  Every step is an atomic add, release included, never a swap, so a
 * release never wipes out a concurrent increment.  A writer adds EXCL and
 * owns the lock if no other writer was there; it then waits for the readers
 * inside to leave, while new readers see it and back out, so a stream of
 * readers cannot starve a writer.
 */

#include "ompi_config.h"

#include <sched.h>
#include <unistd.h>

#include "opal/util/proc.h"

#include "osc_ucxx_state.h"

/* ------------------------------------------------------------------------- */
/* Words under the policy */

static uint64_t cpu_amo(volatile uint64_t *word, ucp_atomic_op_t op, uint64_t value,
                        uint64_t compare)
{
    uint64_t reply = compare;
    switch (op) {
    case UCP_ATOMIC_OP_ADD:
        return __atomic_fetch_add(word, value, __ATOMIC_ACQ_REL);
    case UCP_ATOMIC_OP_SWAP:
        return __atomic_exchange_n(word, value, __ATOMIC_ACQ_REL);
    default: /* UCP_ATOMIC_OP_CSWAP */
        __atomic_compare_exchange_n(word, &reply, value, false, __ATOMIC_ACQ_REL,
                                    __ATOMIC_ACQUIRE);
        return reply;
    }
}

/* The calling thread's worker and its link to `target` (NULL: none). */
static ompi_osc_ucxx_link_t *my_link(ompi_osc_ucxx_module_t *module, int target,
                                     ompi_osc_ucxx_worker_t **worker)
{
    *worker = ompi_osc_ucxx_worker_self();
    return NULL == *worker ? NULL : ompi_osc_ucxx_link(module, *worker, target);
}

/* A fetching UCX atomic on `target`'s state (ourselves too), waited for:
 * completion means done at the target. */
static int ucx_amo(ompi_osc_ucxx_module_t *module, int target, size_t offset,
                   ucp_atomic_op_t op, uint64_t value, uint64_t compare, uint64_t *result)
{
    ompi_osc_ucxx_worker_t *worker;
    ompi_osc_ucxx_link_t *link = my_link(module, target, &worker);
    ucp_request_param_t param;
    uint64_t reply = 0;
    int rc;

    if (NULL == link) {
        return OMPI_ERR_UNREACH;
    }
    /* CSWAP takes the compare value in `buffer` and the new one in the reply */
    param.op_attr_mask = UCP_OP_ATTR_FIELD_DATATYPE | UCP_OP_ATTR_FIELD_REPLY_BUFFER;
    param.datatype = ucp_dt_make_contig(sizeof(uint64_t));
    if (UCP_ATOMIC_OP_CSWAP == op) {
        reply = value;
        value = compare;
    }
    param.reply_buffer = &reply;
    rc = ompi_osc_ucxx_wait_request(worker,
                                    ucp_atomic_op_nbx(link->ep, op, &value, 1,
                                                      ompi_osc_ucxx_peer_state(module, target) +
                                                          offset,
                                                      ompi_osc_ucxx_link_state_rkey(module, link,
                                                                                    target),
                                                      &param));
    if (OMPI_SUCCESS == rc && NULL != result) *result = reply;
    return rc;
}

/* Word `offset` of `target`'s state segment `state`, mapped here (the lock
 * word where the node keeps it: ompi_osc_ucxx_lock_word). */
static volatile uint64_t *cpu_word(ompi_osc_ucxx_module_t *module, int target, char *state,
                                   size_t offset)
{
    return OSC_UCXX_STATE(lock) == offset ? ompi_osc_ucxx_lock_word(module, target, state)
                                          : (volatile uint64_t *) (state + offset);
}

/* The policy's kind for every target alike: with CPU state words every
 * process maps every other's segment (the agreement checked it). */
static int amo(ompi_osc_ucxx_module_t *module, int target, size_t offset, ucp_atomic_op_t op,
               uint64_t value, uint64_t compare, uint64_t *result)
{
    if (OPAL_LIKELY(module->state_cpu)) {
        char *state = (char *) ompi_osc_ucxx_direct_state(module, target);
        uint64_t reply;
        if (OPAL_UNLIKELY(NULL == state)) return OSC_UCXX_ERR_UNMAPPED;
        reply = cpu_amo(cpu_word(module, target, state, offset), op, value, compare);
        ompi_osc_ucxx_audit(module, target, OSC_UCXX_AUDIT_STATE, offset, OSC_UCXX_AUDIT_CPU);
        if (NULL != result) *result = reply;
        return OMPI_SUCCESS;
    }
    ompi_osc_ucxx_audit(module, target, OSC_UCXX_AUDIT_STATE, offset, OSC_UCXX_AUDIT_UCX);
    return ucx_amo(module, target, offset, op, value, compare, result);
}

/* A peer's word read through UCX: a get, which changes nothing (a fetching
 * add of 0 is a read-modify-write: done by a NIC, it can undo a CPU update
 * made between its read and its write). */
static int ucx_read(ompi_osc_ucxx_module_t *module, int target, size_t offset, uint64_t *value)
{
    ompi_osc_ucxx_worker_t *worker;
    ompi_osc_ucxx_link_t *link = my_link(module, target, &worker);
    ucp_request_param_t param;
    int rc;

    if (NULL == link) {
        return OMPI_ERR_UNREACH;
    }
    param.op_attr_mask = 0;
    rc = ompi_osc_ucxx_wait_request(worker,
                                    ucp_get_nbx(link->ep, value, sizeof(*value),
                                                ompi_osc_ucxx_peer_state(module, target) +
                                                    offset,
                                                ompi_osc_ucxx_link_state_rkey(module, link,
                                                                              target),
                                                &param));
    opal_atomic_rmb();
    return rc;
}

/* A word of `target`'s (ours too): a load where it is mapped, else a get. */
static int word_read(ompi_osc_ucxx_module_t *module, int target, size_t offset, uint64_t *value)
{
    char *state = (char *) ompi_osc_ucxx_direct_state(module, target);
    if (NULL != state) {
        *value = __atomic_load_n(cpu_word(module, target, state, offset), __ATOMIC_ACQUIRE);
        return OMPI_SUCCESS;
    }
    return ucx_read(module, target, offset, value);
}

/* ------------------------------------------------------------------------- */
/* Lock word */

static int lock_add(ompi_osc_ucxx_module_t *module, int target, uint64_t delta, uint64_t *old)
{
    return amo(module, target, OSC_UCXX_STATE(lock), UCP_ATOMIC_OP_ADD, delta, 0, old);
}

/* Wait until no writer holds or claims the lock word (reading it: polls
 * that changed it would contend with the holder's release). */
static int lock_wait_no_writer(ompi_osc_ucxx_module_t *module, int target)
{
    uint64_t word;
    int rc;
    do {
        opal_progress();  /* whoever holds it may need us to serve them */
        rc = word_read(module, target, OSC_UCXX_STATE(lock), &word);
    } while (OMPI_SUCCESS == rc && (word >> 32) != 0);
    return rc;
}

static ompi_osc_ucxx_lock_fn_t managed_lock, managed_unlock;

void ompi_osc_ucxx_state_managed(ompi_osc_ucxx_lock_fn_t lock, ompi_osc_ucxx_lock_fn_t unlock)
{
    managed_lock = lock;
    managed_unlock = unlock;
}

int ompi_osc_ucxx_state_lock_wait(ompi_osc_ucxx_module_t *module, int target, int type)
{
    uint64_t mine = (MPI_LOCK_EXCLUSIVE == type) ? OSC_UCXX_LOCK_EXCL : 1;
    uint64_t old;
    int rc;

    if (OSC_UCXX_LOCKS_TARGET == module->lock_kind) {
        return managed_lock(module, target, type);
    }

    for (;;) {
        rc = lock_add(module, target, mine, &old);
        if (OMPI_SUCCESS != rc) return rc;
        if (0 == (old >> 32)) {
            break;
        }
        rc = lock_add(module, target, -mine, NULL);
        if (OMPI_SUCCESS == rc) rc = lock_wait_no_writer(module, target);
        if (OMPI_SUCCESS != rc) return rc;
    }
    while (MPI_LOCK_EXCLUSIVE == type && 0 != (old & OSC_UCXX_LOCK_READERS)) {
        opal_progress();
        rc = word_read(module, target, OSC_UCXX_STATE(lock), &old);
        if (OMPI_SUCCESS != rc) return rc;
    }
    return OMPI_SUCCESS;
}

/* A release by UCX atomics (lock_kind UCX), posted and not waited for: a
 * non-fetching add on our link to `target`, counted there, so that the
 * link's next flush completes it (the caller's, a later epoch's, the
 * window's free).  The caller has ordered it behind the epoch's operations
 * (completed them, or fenced them on this link).  Nobody waits for a
 * release: a waiting locker reads the word until it sees it. */
int ompi_osc_ucxx_state_unlock_post(ompi_osc_ucxx_module_t *module, int target, int type)
{
    uint64_t delta = (MPI_LOCK_EXCLUSIVE == type) ? (uint64_t) -OSC_UCXX_LOCK_EXCL
                                                  : (uint64_t) -1;
    ompi_osc_ucxx_worker_t *worker;
    ompi_osc_ucxx_link_t *link = my_link(module, target, &worker);
    ucp_request_param_t param;
    ucs_status_ptr_t sp;

    if (NULL == link) {
        return OMPI_ERR_UNREACH;
    }
    ompi_osc_ucxx_audit(module, target, OSC_UCXX_AUDIT_STATE, OSC_UCXX_STATE(lock),
                        OSC_UCXX_AUDIT_UCX);
    param.op_attr_mask = UCP_OP_ATTR_FIELD_DATATYPE;
    param.datatype = ucp_dt_make_contig(sizeof(uint64_t));
    sp = ucp_atomic_op_nbx(link->ep, UCP_ATOMIC_OP_ADD, &delta, 1,
                           ompi_osc_ucxx_peer_state(module, target) + OSC_UCXX_STATE(lock),
                           ompi_osc_ucxx_link_state_rkey(module, link, target), &param);
    if (UCS_PTR_IS_ERR(sp)) {
        OSC_UCXX_VERBOSE(1, "lock release on %d: %s", target,
                         ucs_status_string(UCS_PTR_STATUS(sp)));
        return OMPI_ERROR;
    }
    ompi_osc_ucxx_link_dirty(module, link, target);  /* counted once posted */
    link->release_mark = link->issued;
    ompi_osc_ucxx_link_held(link, sp);
    if (NULL != sp) ucp_request_free(sp);  /* the next flush of the link completes it */
    return OMPI_SUCCESS;
}

int ompi_osc_ucxx_state_unlock_slow(ompi_osc_ucxx_module_t *module, int target, int type)
{
    if (OSC_UCXX_LOCKS_TARGET == module->lock_kind) {
        return managed_unlock(module, target, type);
    }
    return ompi_osc_ucxx_state_unlock_post(module, target, type);
}

/* ------------------------------------------------------------------------- */
/* Target-managed lock words: CPU atomics on a word mapped here.  While
 * origins wait in the owner's queue (OSC_UCXX_LOCK_QUEUED), nobody but the
 * owner granting them takes the lock, so the queue's order holds for every
 * origin: those that map the word join the queue too when they find it
 * taken or the bit set.  A compare-and-swap, never an add that is undone:
 * a reader backing out would make the owner's grant of a writer fail with
 * nobody left to tell it to look again. */

static volatile uint64_t *tm_word(ompi_osc_ucxx_module_t *module, int target)
{
    ompi_osc_ucxx_state_t *state = ompi_osc_ucxx_direct_state(module, target);
    ompi_osc_ucxx_audit(module, target, OSC_UCXX_AUDIT_STATE, OSC_UCXX_STATE(lock),
                        OSC_UCXX_AUDIT_CPU);
    return NULL == state ? NULL : ompi_osc_ucxx_lock_word(module, target, (char *) state);
}

bool ompi_osc_ucxx_state_tm_take(ompi_osc_ucxx_module_t *module, int target, int type,
                                 bool for_queue)
{
    volatile uint64_t *word = tm_word(module, target);
    bool excl = MPI_LOCK_EXCLUSIVE == type;
    uint64_t old;

    if (NULL == word) return false;
    old = __atomic_load_n(word, __ATOMIC_ACQUIRE);
    for (;;) {
        uint64_t busy = excl ? (old & ~OSC_UCXX_LOCK_QUEUED) : (old & OSC_UCXX_LOCK_EXCL);
        if (0 != busy || (!for_queue && 0 != (old & OSC_UCXX_LOCK_QUEUED))) {
            return false;
        }
        if (__atomic_compare_exchange_n(word, &old, old + (excl ? OSC_UCXX_LOCK_EXCL : 1), false,
                                        __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE)) {
            return true;
        }
    }
}

bool ompi_osc_ucxx_state_tm_release(ompi_osc_ucxx_module_t *module, int target, int type)
{
    volatile uint64_t *word = tm_word(module, target);
    uint64_t old;

    if (NULL == word) return false;
    old = __atomic_fetch_sub(word, MPI_LOCK_EXCLUSIVE == type ? OSC_UCXX_LOCK_EXCL : 1,
                             __ATOMIC_ACQ_REL);
    return 0 != (old & OSC_UCXX_LOCK_QUEUED);
}

void ompi_osc_ucxx_state_tm_queued(ompi_osc_ucxx_module_t *module, bool queued)
{
    volatile uint64_t *word = tm_word(module, module->rank);
    if (queued) {
        (void) __atomic_fetch_or(word, OSC_UCXX_LOCK_QUEUED, __ATOMIC_ACQ_REL);
    } else {
        (void) __atomic_fetch_and(word, ~OSC_UCXX_LOCK_QUEUED, __ATOMIC_ACQ_REL);
    }
}

/* ------------------------------------------------------------------------- */
/* Accumulate exclusion: CPU atomics on a mapped segment.
 *
 * Block b of the window (bytes [b << shift, (b + 1) << shift), shift chosen
 * by the target and published) belongs to stripe ompi_osc_ucxx_stripe_of(b)
 * (the XOR of b's three lowest 5-bit digits: 32 consecutive blocks, and
 * blocks 32 or 1024 times k apart, on different stripes).  An accumulate
 * takes the stripes its bytes touch, in ascending stripe order, so two
 * never deadlock.  One whose bytes touch more than OSC_UCXX_STRIPES_FEW stripes
 * takes acc_all instead: one compare-and-swap for the whole window rather
 * than 32.  The two kinds meet Dekker-style: a stripe holder stores its
 * stripe and then loads acc_all; an acc_all holder stores acc_all and then
 * waits for every stripe to be free.  Both are sequentially consistent, so
 * at least one of them sees the other; a stripe holder that sees acc_all
 * taken backs out and waits for it, so a bulk accumulate is not starved by
 * a stream of small ones.  Holders never wait for anything while holding:
 * they apply the operation to memory they map and release. */

/* Every stripe read, without a branch per stripe: a bulk accumulate of 512 B
 * spent a fifth of its time here, in a loop that took a cycle per stripe
 * more where it straddled a 64 B code boundary. */
static bool stripes_busy(ompi_osc_ucxx_state_t *state)
{
    uint64_t any = 0;
    for (int s = 0; s < OSC_UCXX_STRIPES; s += 4) {
        any |= __atomic_load_n(&state->acc_locks[s].value, __ATOMIC_SEQ_CST) |
               __atomic_load_n(&state->acc_locks[s + 1].value, __ATOMIC_SEQ_CST) |
               __atomic_load_n(&state->acc_locks[s + 2].value, __ATOMIC_SEQ_CST) |
               __atomic_load_n(&state->acc_locks[s + 3].value, __ATOMIC_SEQ_CST);
    }
    return 0 != any;
}

/* The holder may need our progress (it never waits for a message while
 * holding, but a UCX flush of its own may need us). */
void ompi_osc_ucxx_stripes_lock_wait(ompi_osc_ucxx_state_t *state, uint32_t mask)
{
    if (OSC_UCXX_STRIPES_ALL == mask) {
        while (!ompi_osc_ucxx_word_try(&state->acc_all.value)) opal_progress();
        while (stripes_busy(state)) opal_progress();
        return;
    }
    while (!ompi_osc_ucxx_stripes_try(state, mask)) {
        opal_progress();
    }
}

void ompi_osc_ucxx_stripes_unlock_all(ompi_osc_ucxx_state_t *state)
{
    ompi_osc_ucxx_word_release(&state->acc_all.value);
}

/* One attempt, for message handlers that must not wait. */
bool ompi_osc_ucxx_stripes_trylock(ompi_osc_ucxx_state_t *state, uint32_t mask)
{
    if (OSC_UCXX_STRIPES_ALL != mask) {
        return ompi_osc_ucxx_stripes_try(state, mask);
    }
    if (!ompi_osc_ucxx_word_try(&state->acc_all.value)) return false;
    if (stripes_busy(state)) {
        ompi_osc_ucxx_word_release(&state->acc_all.value);
        return false;
    }
    return true;
}

/* ------------------------------------------------------------------------- */
/* Fences */

/* Our stores before the fence are done before a peer can see the count. */
int ompi_osc_ucxx_state_fence_publish(ompi_osc_ucxx_module_t *module, uint64_t count)
{
    if (module->state_cpu) {
        __atomic_store_n(&module->state->fence.value, count, __ATOMIC_RELEASE);
        ompi_osc_ucxx_audit(module, module->rank, OSC_UCXX_AUDIT_STATE, OSC_UCXX_STATE(fence),
                            OSC_UCXX_AUDIT_CPU);
        return OMPI_SUCCESS;
    }
    opal_atomic_wmb();
    return amo(module, module->rank, OSC_UCXX_STATE(fence), UCP_ATOMIC_OP_SWAP, count, 0, NULL);
}

int ompi_osc_ucxx_state_fence_read(ompi_osc_ucxx_module_t *module, int target, uint64_t *count)
{
    return word_read(module, target, OSC_UCXX_STATE(fence), count);
}

/* Did `writer` enter its last barrier on the core we entered this one on?
 * Each process publishes its core in its state segment at every barrier
 * (one line that changes only when its owner moves: a cache hit).  Only
 * to wait better: nothing changes where a process runs. */
static bool on_my_core(ompi_osc_ucxx_module_t *module, int writer, int cpu)
{
    ompi_osc_ucxx_state_t *from = ompi_osc_ucxx_direct_state(module, writer);
    return cpu >= 0 && NULL != from &&
           (uint64_t) cpu == __atomic_load_n(&from->cpu.value, __ATOMIC_RELAXED);
}

/* Polls before a barrier wait for `writer` starts to yield the core.  Soon
 * (a 16th of osc_ucxx_yield_after) where the writer may need our core: it
 * entered its last barrier on the core we are on (two processes the
 * scheduler left on one core hand it over at every barrier: the sooner the
 * waiter yields, the sooner the writer runs), or the node has more
 * processes than cores, or we cannot tell.  Else after the whole
 * osc_ucxx_yield_after: the writer runs on a core of its own and is merely
 * late, and a sched_yield (a system call that returns when the kernel is
 * done with it) only delays our noticing it. */
static int barrier_patience(ompi_osc_ucxx_module_t *module, int writer, int cpu)
{
    if (cpu < 0 || module->crowded || NULL == ompi_osc_ucxx_direct_state(module, writer) ||
        on_my_core(module, writer, cpu)) {
        return (OSC_UCXX.yield_after + 15) / 16;
    }
    return OSC_UCXX.yield_after;
}

/* Fence barrier (module->fence_by_state): a dissemination barrier through
 * the state segments, in place of the communicator's barrier, which costs
 * a message each way through the PML (under MPI_THREAD_MULTIPLE its locks
 * too).  Barrier number s (module->barrier_seq, the same count everywhere:
 * fences synchronize in the same order on every process) takes
 * ceil(log2 size) rounds; in round k we store s into slot k of the process
 * 2^k ranks after us and wait until our own slot k holds s or more.  A slot
 * has one writer and only grows, so nothing is reset between barriers: a
 * value above s means its writer has already left barrier s, which it can
 * only do once everyone has reached it.  The stores are releases and the
 * waits acquire, so everything a process did before it reached the barrier
 * (its operations, completed by the fence's flush, included) happens before
 * anything any process does after leaving it.  The wait progresses the
 * library: peers still completing operations on us may need our CPU.  It
 * gives the core away sooner than other waits where the process it waits
 * for may need our core (barrier_patience). */
int ompi_osc_ucxx_state_barrier(ompi_osc_ucxx_module_t *module)
{
    uint64_t seq = ++module->barrier_seq;
    int size = module->size;
    int cpu = sched_getcpu();

    if (cpu >= 0 && (uint64_t) cpu != module->state->cpu.value) module->state->cpu.value = cpu;
    for (int k = 0, dist = 1; dist < size; ++k, dist <<= 1) {
        int peer = (module->rank + dist) % size, spins = 0, yield_after;
        ompi_osc_ucxx_state_t *to = ompi_osc_ucxx_direct_state(module, peer);
        if (OPAL_UNLIKELY(NULL == to)) {
            return OSC_UCXX_ERR_UNMAPPED;  /* (fence_by_state: every process maps every other) */
        }
        __atomic_store_n(&to->barrier[k], seq, __ATOMIC_RELEASE);
        ompi_osc_ucxx_audit(module, peer, OSC_UCXX_AUDIT_STATE, OSC_UCXX_STATE(barrier) + k * sizeof(uint64_t),
                            OSC_UCXX_AUDIT_CPU);
        yield_after = barrier_patience(module, (module->rank - dist + size) % size, cpu);
        while (__atomic_load_n(&module->state->barrier[k], __ATOMIC_ACQUIRE) < seq) {
            opal_progress();
            if (OSC_UCXX.yield_after > 0 && ++spins >= yield_after) sched_yield();
        }
    }
    return OMPI_SUCCESS;
}

/* ------------------------------------------------------------------------- */
/* PSCW */

/* Do we post to `origin` through our slot in its post slots (mapped here
 * with its state segment's place for them)?  Only `origin`'s own view
 * decides how it looks for our posts, and it looks at both the slot and
 * the message list, so either way arrives. */
bool ompi_osc_ucxx_state_post_by_slot(ompi_osc_ucxx_module_t *module, int origin)
{
    return module->rank < OSC_UCXX_POST_SLOTS && origin != module->rank &&
           NULL != ompi_osc_ucxx_peer_post_slot(module, origin);
}

int ompi_osc_ucxx_state_post(ompi_osc_ucxx_module_t *module, int origin)
{
    volatile uint64_t *slot = ompi_osc_ucxx_peer_post_slot(module, origin);
    __atomic_fetch_add(slot, 1, __ATOMIC_ACQ_REL);
    ompi_osc_ucxx_audit(module, origin, OSC_UCXX_AUDIT_STATE, OSC_UCXX_STATE_POST(module->rank),
                        OSC_UCXX_AUDIT_CPU);
    return OMPI_SUCCESS;
}

uint64_t ompi_osc_ucxx_state_posts_from(ompi_osc_ucxx_module_t *module, int from)
{
    if (from >= OSC_UCXX_POST_SLOTS) return 0;
    return __atomic_load_n(&module->posts.slots[from], __ATOMIC_ACQUIRE);
}

/* One CPU atomic, whatever the policy: the word is CPU-only.  Origins that
 * map `target`'s state add here, and the owner for the others, applying
 * their notices (osc_ucxx_notice.c). */
int ompi_osc_ucxx_state_complete_add(ompi_osc_ucxx_module_t *module, int target)
{
    ompi_osc_ucxx_state_t *state = target == module->rank
                                       ? module->state
                                       : ompi_osc_ucxx_direct_state(module, target);
    if (OPAL_UNLIKELY(NULL == state)) {
        return OSC_UCXX_ERR_UNMAPPED;
    }
    __atomic_fetch_add(&state->complete.value, 1, __ATOMIC_ACQ_REL);
    ompi_osc_ucxx_audit(module, target, OSC_UCXX_AUDIT_STATE, OSC_UCXX_STATE(complete),
                        OSC_UCXX_AUDIT_CPU);
    return OMPI_SUCCESS;
}

uint64_t ompi_osc_ucxx_state_completed(ompi_osc_ucxx_module_t *module)
{
    return __atomic_load_n(&module->state->complete.value, __ATOMIC_ACQUIRE);
}

/* ------------------------------------------------------------------------- */
/* Dynamic windows' detach generation */

int ompi_osc_ucxx_state_gen_bump(ompi_osc_ucxx_module_t *module)
{
    return amo(module, module->rank, OSC_UCXX_STATE(dyn_gen), UCP_ATOMIC_OP_ADD, 1, 0, NULL);
}

uint64_t ompi_osc_ucxx_state_gen_local(ompi_osc_ucxx_module_t *module)
{
    return __atomic_load_n(&module->state->dyn_gen.value, __ATOMIC_ACQUIRE);
}

int ompi_osc_ucxx_state_gen_read(ompi_osc_ucxx_module_t *module, int target, uint64_t *gen)
{
    return word_read(module, target, OSC_UCXX_STATE(dyn_gen), gen);
}

/* The word itself where it is mapped here (for plain loads), else NULL. */
const volatile uint64_t *ompi_osc_ucxx_state_gen_word(ompi_osc_ucxx_module_t *module,
                                                      int target)
{
    ompi_osc_ucxx_state_t *state = ompi_osc_ucxx_direct_state(module, target);
    return NULL == state ? NULL : &state->dyn_gen.value;
}

/* ------------------------------------------------------------------------- */
/* Asking a target to serve us */

/* A target on our node whose state segment we map polls its main worker
 * in its synchronization calls only while its serve word is not zero
 * (ompi_osc_ucxx_serve).  We add 1 there before the first operation or
 * message of ours that needs its CPU and leave it: any later one may too.
 * Where we cannot map the target's state, the target serves always. */
void ompi_osc_ucxx_want_service(ompi_osc_ucxx_module_t *module, ompi_osc_ucxx_link_t *link,
                                int target)
{
    link->asked_service = true;
    ompi_osc_ucxx_need_service(module, target, 1);
}

void ompi_osc_ucxx_need_service(ompi_osc_ucxx_module_t *module, int target, int64_t delta)
{
    ompi_osc_ucxx_state_t *state;
    if (target == module->rank) {
        return;  /* we serve ourselves while we wait */
    }
    state = ompi_osc_ucxx_direct_state(module, target);
    if (NULL != state) {
        __atomic_fetch_add(&state->serve.value, delta, __ATOMIC_ACQ_REL);
        ompi_osc_ucxx_audit(module, target, OSC_UCXX_AUDIT_STATE, OSC_UCXX_STATE(serve),
                            OSC_UCXX_AUDIT_CPU);
    }
}

/* ------------------------------------------------------------------------- */
/* Active-message execution word: CPU-only by construction, like the
 * stripes: only the owner and origins that map its state take it (an origin
 * that does not map it sends its AMs, which the owner executes). */

#define EXEC_WRITER (1ULL << 63)

bool ompi_osc_ucxx_state_exec_trylock(ompi_osc_ucxx_state_t *state, bool shared)
{
    volatile int64_t *word = (volatile int64_t *) &state->am_exec.value;
    int64_t cur = *word;

    if (!shared) {
        cur = 0;
        return opal_atomic_compare_exchange_strong_64(word, &cur, (int64_t) EXEC_WRITER);
    }
    while (0 == ((uint64_t) cur & EXEC_WRITER)) {
        if (opal_atomic_compare_exchange_strong_64(word, &cur, cur + 1)) {
            return true;
        }
    }
    return false;
}

void ompi_osc_ucxx_state_exec_unlock(ompi_osc_ucxx_state_t *state, bool shared)
{
    /* (release by atomic add: a reader's CAS may be racing) */
    opal_atomic_wmb();
    (void) opal_atomic_add_fetch_64((volatile int64_t *) &state->am_exec.value,
                                    shared ? -1 : (int64_t) EXEC_WRITER);   /* (wraps: clears bit 63) */
}
