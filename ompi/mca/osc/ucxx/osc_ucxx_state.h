/*
 * Copyright (c) 2026 The osc/ucxx authors. All rights reserved.
 * $COPYRIGHT$
 *
 * osc/ucxx, fifth layer: every operation on a state-segment word, ours or a
 * peer's (osc_ucxx_state.c has the protocol and the atomics policy).
 */

#ifndef OMPI_OSC_UCXX_STATE_H
#define OMPI_OSC_UCXX_STATE_H

#include "osc_ucxx_target.h"
#include "osc_ucxx_audit.h"

BEGIN_C_DECLS

/* `target`'s state segment where its words change by CPU atomics (the
 * policy says so, and then every process maps every other's), else NULL:
 * UCX atomics. */
static inline char *ompi_osc_ucxx_cpu_state(ompi_osc_ucxx_module_t *module, int target)
{
    return module->state_cpu ? (char *) ompi_osc_ucxx_direct_state(module, target) : NULL;
}

/* `target`'s lock word, where `state` (from ompi_osc_ucxx_cpu_state) is
 * its state segment mapped here: in it, or in the node's lock words. */
static inline volatile uint64_t *ompi_osc_ucxx_lock_word(const ompi_osc_ucxx_module_t *module,
                                                         int target, char *state)
{
    if (NULL != module->lock_words) return &module->lock_words[target].value;
    return (volatile uint64_t *) (state + OSC_UCXX_STATE(lock));
}

/* Passive-target lock word of `target` (type MPI_LOCK_SHARED/EXCLUSIVE):
 * the protocol and the waits (osc_ucxx_state.c); where the target manages
 * its lock (module->lock_kind), through the lock layer's functions. */
int ompi_osc_ucxx_state_lock_wait(ompi_osc_ucxx_module_t *module, int target, int type);
int ompi_osc_ucxx_state_unlock_slow(ompi_osc_ucxx_module_t *module, int target, int type);
/* The release of a one-sided lock by UCX atomics (lock_kind UCX) posted on
 * the calling thread's link to `target` behind what the caller ordered
 * before it, not waited for: the link's next flush completes it.  (The
 * slow path of ompi_osc_ucxx_state_unlock, for such locks.) */
int ompi_osc_ucxx_state_unlock_post(ompi_osc_ucxx_module_t *module, int target, int type);

/* Target-managed lock words (OSC_UCXX_LOCKS_TARGET): CPU atomics only, by
 * the owner (for itself, and for the origins its queue grants:
 * osc_ucxx_lockq.c) and by peers that map the word.  take: the lock if it
 * is free now and nobody waits in the owner's queue (`for_queue`: the owner
 * granting its queue's head, which may pass the waiters' bit); release:
 * true if origins wait in the queue (the owner must look again).  queued:
 * the owner's own word, while its queue holds origins. */
bool ompi_osc_ucxx_state_tm_take(ompi_osc_ucxx_module_t *module, int target, int type,
                                 bool for_queue);
bool ompi_osc_ucxx_state_tm_release(ompi_osc_ucxx_module_t *module, int target, int type);
void ompi_osc_ucxx_state_tm_queued(ompi_osc_ucxx_module_t *module, bool queued);
/* The lock and release of a target-managed lock, which the lock layer gives
 * at component init (osc_ucxx_lazy.c): the slow paths above call them. */
typedef int (*ompi_osc_ucxx_lock_fn_t)(ompi_osc_ucxx_module_t *module, int target, int type);
void ompi_osc_ucxx_state_managed(ompi_osc_ucxx_lock_fn_t lock, ompi_osc_ucxx_lock_fn_t unlock);

/* ... with the uncontended CPU case inline, one atomic each way as osc/sm's
 * (shared: an add that finds no writer; exclusive: 0 to the writer bit;
 * through the calls and the general add, lock + 8 B put + unlock took 35
 * ns against osc/sm's 24). */
static inline int ompi_osc_ucxx_state_lock(ompi_osc_ucxx_module_t *module, int target, int type)
{
    char *state = ompi_osc_ucxx_cpu_state(module, target);
    if (OPAL_LIKELY(NULL != state)) {
        volatile uint64_t *word = ompi_osc_ucxx_lock_word(module, target, state);
        uint64_t expected = 0;
        ompi_osc_ucxx_audit(module, target, OSC_UCXX_AUDIT_STATE, OSC_UCXX_STATE(lock),
                            OSC_UCXX_AUDIT_CPU);
        if (MPI_LOCK_EXCLUSIVE == type) {
            if (__atomic_compare_exchange_n(word, &expected, OSC_UCXX_LOCK_EXCL, false,
                                            __ATOMIC_ACQ_REL, __ATOMIC_RELAXED)) {
                return OMPI_SUCCESS;
            }
        } else if (0 == (__atomic_fetch_add(word, 1, __ATOMIC_ACQ_REL) >> 32)) {
            return OMPI_SUCCESS;
        } else {
            (void) __atomic_fetch_sub(word, 1, __ATOMIC_ACQ_REL);  /* a writer: wait */
        }
    }
    return ompi_osc_ucxx_state_lock_wait(module, target, type);
}

/* The release where `state` (from ompi_osc_ucxx_cpu_state) is mapped;
 * _word: the atomic alone on the lock word, for callers that found the
 * audit off. */
static inline void ompi_osc_ucxx_state_cpu_unlock_word(volatile uint64_t *word, int type)
{
    (void) __atomic_fetch_sub(word, MPI_LOCK_EXCLUSIVE == type ? OSC_UCXX_LOCK_EXCL : 1,
                              __ATOMIC_ACQ_REL);
}

static inline void ompi_osc_ucxx_state_cpu_unlock(ompi_osc_ucxx_module_t *module, int target,
                                                  char *state, int type)
{
    ompi_osc_ucxx_audit(module, target, OSC_UCXX_AUDIT_STATE, OSC_UCXX_STATE(lock),
                        OSC_UCXX_AUDIT_CPU);
    ompi_osc_ucxx_state_cpu_unlock_word(ompi_osc_ucxx_lock_word(module, target, state), type);
}

static inline int ompi_osc_ucxx_state_unlock(ompi_osc_ucxx_module_t *module, int target, int type)
{
    char *state = ompi_osc_ucxx_cpu_state(module, target);
    if (OPAL_LIKELY(NULL != state)) {
        ompi_osc_ucxx_state_cpu_unlock(module, target, state, type);
        return OMPI_SUCCESS;
    }
    return ompi_osc_ucxx_state_unlock_slow(module, target, type);
}

/* Is `target`'s lock word released by a CPU atomic (release order: our
 * loads and stores before it are done before anyone sees it)? */
static inline bool ompi_osc_ucxx_state_unlock_by_cpu(ompi_osc_ucxx_module_t *module, int target)
{
    return NULL != ompi_osc_ucxx_cpu_state(module, target);
}
/* A shared lock on `target`, whose state segment is `state` (from
 * ompi_osc_ucxx_cpu_state: its lock word changes by CPU atomics), if no
 * writer holds or claims it now: one atomic, undone if one does.  Inline:
 * every lock_all that opens its targets again takes it.  _word: the
 * atomics alone on the lock word, for callers that found the audit off. */
static inline bool ompi_osc_ucxx_state_try_shared_word(volatile uint64_t *word)
{
    if (OPAL_LIKELY(0 == (__atomic_fetch_add(word, 1, __ATOMIC_ACQ_REL) >> 32))) {
        return true;
    }
    (void) __atomic_fetch_sub(word, 1, __ATOMIC_ACQ_REL);  /* a writer has it */
    return false;
}

static inline bool ompi_osc_ucxx_state_try_shared(ompi_osc_ucxx_module_t *module, int target,
                                                  char *state)
{
    ompi_osc_ucxx_audit(module, target, OSC_UCXX_AUDIT_STATE, OSC_UCXX_STATE(lock),
                        OSC_UCXX_AUDIT_CPU);
    return ompi_osc_ucxx_state_try_shared_word(ompi_osc_ucxx_lock_word(module, target, state));
}

/* Accumulate exclusion on a state segment mapped here (ours or a peer's),
 * for window bytes [lo, hi) as offsets from the window's base; `shift`:
 * log2 of the owner's stripe block (peer->acc_shift).  A mask covers one to
 * a few stripes, or is OSC_UCXX_STRIPES_ALL (the whole window). */
bool ompi_osc_ucxx_stripes_trylock(ompi_osc_ucxx_state_t *state, uint32_t mask);
void ompi_osc_ucxx_stripes_lock_wait(ompi_osc_ucxx_state_t *state, uint32_t mask);
void ompi_osc_ucxx_stripes_unlock_all(ompi_osc_ucxx_state_t *state);

/* Bytes touching more than this many blocks take acc_all instead. */
#define OSC_UCXX_STRIPES_FEW 4

/* Block b's stripe: the XOR of b's three lowest 5-bit digits.  Blocks of
 * one aligned group of 32 take different stripes, as they did under b % 32,
 * and so do blocks 32 k and 1024 k apart (k < 32), which b % 32 put on one
 * stripe: every process accumulating into its own 8 KiB slice of a window
 * (any slice of a power of two of 32 blocks or more) took stripe 0, and
 * the origins serialized on it.  (Two shifts and two XORs: the single element pays for
 * nothing longer.) */
static inline __opal_attribute_always_inline__ uint32_t ompi_osc_ucxx_stripe_of(uint64_t b)
{
    return (uint32_t) ((b ^ (b >> 5) ^ (b >> 10)) % OSC_UCXX_STRIPES);
}

static inline __opal_attribute_always_inline__ uint32_t
ompi_osc_ucxx_stripe_mask(unsigned shift, uint64_t lo, uint64_t hi)
{
    uint64_t first = lo >> shift, last = (hi - 1) >> shift;
    uint32_t mask = 0;
    if (OPAL_LIKELY(first == last)) return 1u << ompi_osc_ucxx_stripe_of(first);
    if (last - first >= OSC_UCXX_STRIPES_FEW) return OSC_UCXX_STRIPES_ALL;
    for (uint64_t b = first; b <= last; ++b) mask |= 1u << ompi_osc_ucxx_stripe_of(b);
    return mask;
}

/* An exclusion word: 0 free, 1 held (sequentially consistent take: the
 * Dekker pairing of stripes and acc_all, osc_ucxx_state.c). */
static inline bool ompi_osc_ucxx_word_try(volatile uint64_t *word)
{
    uint64_t expected = 0;
    return __atomic_compare_exchange_n(word, &expected, 1, false, __ATOMIC_SEQ_CST,
                                       __ATOMIC_RELAXED);
}

static inline void ompi_osc_ucxx_word_release(volatile uint64_t *word)
{
    __atomic_store_n(word, 0, __ATOMIC_RELEASE);
}

static inline bool ompi_osc_ucxx_acc_all_taken(ompi_osc_ucxx_state_t *state)
{
    return 0 != __atomic_load_n(&state->acc_all.value, __ATOMIC_SEQ_CST);
}

static inline __opal_attribute_always_inline__ void
ompi_osc_ucxx_stripes_release(ompi_osc_ucxx_state_t *state, uint32_t mask)
{
    for (uint32_t m = mask; 0 != m; m &= m - 1) {
        ompi_osc_ucxx_word_release(&state->acc_locks[__builtin_ctz(m)].value);
    }
}

/* Every stripe of `mask` (not OSC_UCXX_STRIPES_ALL) or none; false also
 * when acc_all is taken. */
static inline __opal_attribute_always_inline__ bool
ompi_osc_ucxx_stripes_try(ompi_osc_ucxx_state_t *state, uint32_t mask)
{
    if (OPAL_LIKELY(0 != mask && 0 == (mask & (mask - 1)))) {  /* (one: no loop) */
        volatile uint64_t *word = &state->acc_locks[__builtin_ctz(mask)].value;
        if (OPAL_UNLIKELY(!ompi_osc_ucxx_word_try(word))) return false;
        if (OPAL_LIKELY(!ompi_osc_ucxx_acc_all_taken(state))) return true;
        ompi_osc_ucxx_word_release(word);
        return false;
    }
    uint32_t rest = mask & (mask - 1);
    if (0 != rest && 0 == (rest & (rest - 1))) {
        /* two, unrolled: runs over two stripes are common */
        volatile uint64_t *lo = &state->acc_locks[__builtin_ctz(mask)].value;
        volatile uint64_t *hi = &state->acc_locks[31 - __builtin_clz(mask)].value;
        if (OPAL_UNLIKELY(!ompi_osc_ucxx_word_try(lo))) return false;
        if (OPAL_LIKELY(ompi_osc_ucxx_word_try(hi))) {
            if (OPAL_LIKELY(!ompi_osc_ucxx_acc_all_taken(state))) return true;
            ompi_osc_ucxx_word_release(hi);
        }
        ompi_osc_ucxx_word_release(lo);
        return false;
    }
    for (uint32_t m = mask; 0 != m; m &= m - 1) {
        int s = __builtin_ctz(m);
        if (OPAL_UNLIKELY(!ompi_osc_ucxx_word_try(&state->acc_locks[s].value))) {
            ompi_osc_ucxx_stripes_release(state, mask & ((1u << s) - 1));
            return false;
        }
    }
    if (OPAL_UNLIKELY(ompi_osc_ucxx_acc_all_taken(state))) {
        ompi_osc_ucxx_stripes_release(state, mask);
        return false;
    }
    return true;
}

/* A few stripes, what single elements and short runs take, inline: a
 * compare-and-swap each and a load (an 8 B accumulate spent as long again
 * in the calls and loops that serve several; 16 elements of 8 B, two
 * stripes, as long in the calls as in the rest of the exclusion); the
 * waits and the whole window's exclusion are out of line. */
static inline __opal_attribute_always_inline__ void
ompi_osc_ucxx_stripes_lock(ompi_osc_ucxx_state_t *state, uint32_t mask)
{
    if (OPAL_LIKELY(OSC_UCXX_STRIPES_ALL != mask && ompi_osc_ucxx_stripes_try(state, mask))) {
        return;
    }
    ompi_osc_ucxx_stripes_lock_wait(state, mask);
}

static inline __opal_attribute_always_inline__ void
ompi_osc_ucxx_stripes_unlock(ompi_osc_ucxx_state_t *state, uint32_t mask)
{
    if (OPAL_LIKELY(OSC_UCXX_STRIPES_ALL != mask)) {
        ompi_osc_ucxx_stripes_release(state, mask);
        return;
    }
    ompi_osc_ucxx_stripes_unlock_all(state);
}

/* User active messages: the execution word of a state segment mapped here
 * (ours, or a target's for origin-side execution).  Handlers that asserted
 * concurrency share it; every other handler runs alone (osc_ucxx_uam.c). */
bool ompi_osc_ucxx_state_exec_trylock(ompi_osc_ucxx_state_t *state, bool shared);
void ompi_osc_ucxx_state_exec_unlock(ompi_osc_ucxx_state_t *state, bool shared);

/* Fences: publish how many we have called; read a target's count. */
int ompi_osc_ucxx_state_fence_publish(ompi_osc_ucxx_module_t *module, uint64_t count);
int ompi_osc_ucxx_state_fence_read(ompi_osc_ucxx_module_t *module, int target, uint64_t *count);
/* The closing fence's barrier where module->fence_by_state (all processes
 * call it in the same order). */
int ompi_osc_ucxx_state_barrier(ompi_osc_ucxx_module_t *module);

/* PSCW: posts through per-origin slots where the origin maps our state;
 * completions counted in the target's complete word. */
bool ompi_osc_ucxx_state_post_by_slot(ompi_osc_ucxx_module_t *module, int origin);
int ompi_osc_ucxx_state_post(ompi_osc_ucxx_module_t *module, int origin);
uint64_t ompi_osc_ucxx_state_posts_from(ompi_osc_ucxx_module_t *module, int from);
int ompi_osc_ucxx_state_complete_add(ompi_osc_ucxx_module_t *module, int target);
uint64_t ompi_osc_ucxx_state_completed(ompi_osc_ucxx_module_t *module);

/* Dynamic windows: detaches so far (ours: bump, local read; a peer's). */
int ompi_osc_ucxx_state_gen_bump(ompi_osc_ucxx_module_t *module);
uint64_t ompi_osc_ucxx_state_gen_local(ompi_osc_ucxx_module_t *module);
int ompi_osc_ucxx_state_gen_read(ompi_osc_ucxx_module_t *module, int target, uint64_t *gen);
const volatile uint64_t *ompi_osc_ucxx_state_gen_word(ompi_osc_ucxx_module_t *module,
                                                      int target);

/* Service: +1 (for good) or +1 then -1 around a request, in the target's
 * serve word, before we need its CPU. */
void ompi_osc_ucxx_need_service(ompi_osc_ucxx_module_t *module, int target, int64_t delta);

/* Count ourselves in the target's serve word (where we map it) before we
 * need its CPU (osc_ucxx_state.c). */
void ompi_osc_ucxx_want_service(ompi_osc_ucxx_module_t *module, ompi_osc_ucxx_link_t *link,
                                int target);

/* Before (or right after) an operation the target's CPU may have to serve:
 * emulated RMA on user memory, an active message. */
static inline void ompi_osc_ucxx_link_ask(ompi_osc_ucxx_module_t *module,
                                          ompi_osc_ucxx_link_t *link, int target)
{
    if (OPAL_UNLIKELY(!link->asked_service)) {
        ompi_osc_ucxx_want_service(module, link, target);
    }
}

/* Count a UCX operation on a link for the next flush: after it is posted,
 * so a flush that sees the count also covers the operation.  The row's
 * summary (sum) counts too. */
static inline void ompi_osc_ucxx_link_dirty(ompi_osc_ucxx_module_t *module,
                                            ompi_osc_ucxx_link_t *link, int target)
{
    ompi_osc_ucxx_add64(&link->issued, 1);
    ompi_osc_ucxx_add64(&link->row->sum.issued, 1);
    ompi_osc_ucxx_link_ask(module, link, target);
}

/* Called by every synchronization call: where peers' operations on this
 * window are emulated by UCX or carried by active messages (both handled on
 * our main worker), a process that only synchronizes locally must still
 * serve them.  Peers that map our state segment say when they need that
 * (the serve word), so that windows nobody emulates on skip the polling. */
static inline bool ompi_osc_ucxx_serve_wanted(ompi_osc_ucxx_module_t *module)
{
    return module->serve && (module->serve_always || 0 != module->state->serve.value);
}

static inline void ompi_osc_ucxx_serve(ompi_osc_ucxx_module_t *module)
{
    if (ompi_osc_ucxx_serve_wanted(module)) {
        ompi_osc_ucxx_worker_progress_shared(OSC_UCXX.main_worker);
        ompi_osc_ucxx_deferred_drain();
    }
}

END_C_DECLS

#endif /* OMPI_OSC_UCXX_STATE_H */
