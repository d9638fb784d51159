/*
 * Copyright (c) 2026 The osc/ucxx authors. All rights reserved.
 * $COPYRIGHT$
 *
 * The atomics policy of a window, agreed by every process at creation
 * (docs/atomics.md has the whole story).
 *
 * A CPU atomic and a UCX atomic on one word are not atomic with each other
 * where UCX applies its atomics with a device (InfiniBand, RoCE: the NIC
 * reads and writes the word, and a CPU update between its read and its
 * write is lost); neither are a lock-free CPU atomic and a read-modify-write
 * under the stripe locks.  So every word a window changes atomically has
 * one kind, the same on every process, decided here from facts all
 * processes share:
 *   - does every process map every other's state segment (and all of its
 *     window memory)?  Where all ranks share a node and every process may
 *     map every other's shared memory (osc_ucxx_seg.c: each said so in the
 *     creation exchange, which every process sees whole: no collective
 *     here); elsewhere the answer is no for everybody.  A mapping that fails
 *     later anyway (out of memory) makes the operation fail, never take
 *     another kind of atomic;
 *   - how UCX applies atomics in each process (OSC_UCXX.device_atomics, in
 *     the creation exchange).
 * From them, the same on every process:
 *   - state words (complete, fence, dyn_gen): CPU atomics where every
 *     process maps every other's state (no UCX atomic then ever touches
 *     them), else UCX atomics for everybody, the owner included through its
 *     link to itself (osc_ucxx_state.c);
 *   - the lock protocol (lock_kind): one-sided, with the state words' CPU
 *     atomics where every process maps every other's state, or with UCX
 *     atomics where every process's UCX applies them with a device (an
 *     RDMA network: the target's CPU stays out of it); managed by the
 *     target otherwise (osc_ucxx_lockq.c): where UCX applies atomics with
 *     the CPU and some peer does not map the word, UCX emulates each
 *     atomic with messages the target's CPU serves anyway, and a lock
 *     request that carries a short epoch does all of it in one round trip.
 *     Its word then takes CPU atomics only (the owner's and those of the
 *     peers that map it), which is also what keeps locks exclusive where
 *     the processes' UCX apply atomics differently;
 *   - the fence barrier through state segments only with CPU state words;
 *   - single elements of acc_single_intrinsic handles: one lock-free CPU
 *     atomic where every process maps all of every other's window memory;
 *     the stripe locks, like every other accumulate, where all share a node
 *     but some memory is not mapped; one UCX atomic by every process, the
 *     owner included, where some process is on another node (that is what
 *     keeps them one-sided across an RDMA network) and every process's UCX
 *     applies atomics the same way.  Where some processes' UCX applies
 *     them with a device and others' with the CPU (UCX_ATOMIC_MODE or
 *     transports differing between processes), UCX's atomics on one word
 *     are not atomic with each other: the stripe locks then, whose
 *     read-modify-writes the target's CPU or a mapping peer's applies.
 * Everything else stays as it was: the stripe locks, serve, posts, barrier
 * and am_exec words are changed by CPU atomics only, by the processes that
 * map them and the owner.
 * Also decided here, per process: whether its node is crowded (more
 * processes than cores), which makes the fence barrier's waits yield
 * sooner (osc_ucxx_state.c).  Window creation calls this right after its
 * exchange (osc_ucxx_window.c), below every user of the policy.
 */

#include "ompi_config.h"

#include <sched.h>
#include <unistd.h>

#include "opal/util/proc.h"
#include "ompi/datatype/ompi_datatype.h"
#include "ompi/op/op.h"

#include "osc_ucxx_window.h"

#define MAPS_STATES 0x1   /* this process maps every other's state segment */
#define MAPS_MEMORY 0x2   /* ... and all of its window memory */

/* What every process maps of every other (all on this node): from the
 * creation exchange.  Dynamic windows have no memory yet, create windows
 * user memory, which nobody maps. */
static uint32_t maps_of(ompi_osc_ucxx_module_t *module)
{
    if (!module->maps_all && module->size > 1) return 0;
    if (MPI_WIN_FLAVOR_ALLOCATE == module->flavor || MPI_WIN_FLAVOR_SHARED == module->flavor ||
        1 == module->size) {
        return MAPS_STATES | MAPS_MEMORY;
    }
    return MAPS_STATES;
}

/* Some processes' UCX applies atomics with a device, others' with the CPU. */
static bool modes_differ(const ompi_osc_ucxx_module_t *module)
{
    return (OSC_UCXX_MODES_DEVICE | OSC_UCXX_MODES_CPU) == module->ucx_modes;
}

static uint8_t single_kind(ompi_osc_ucxx_module_t *module, bool on_node, uint32_t maps)
{
    if (maps & MAPS_MEMORY) return OSC_UCXX_SINGLE_CPU;
    if (on_node || modes_differ(module)) return OSC_UCXX_SINGLE_STRIPES;
    return OSC_UCXX_SINGLE_UCX;
}

/* Who changes the lock words (the comment at the top says why). */
static uint8_t lock_kind(const ompi_osc_ucxx_module_t *module)
{
    if (module->state_cpu) return OSC_UCXX_LOCKS_CPU;
    if (OSC_UCXX_MODES_DEVICE == module->ucx_modes) return OSC_UCXX_LOCKS_UCX;
    return OSC_UCXX_LOCKS_TARGET;
}

/* Processes whose UCX apply atomics differently keep no UCX atomic on one
 * word atomic with another: no word is shared by them then (locks by the
 * target, PSCW completions by notices, single elements by the stripes;
 * fence and detach counts have one writer).  Said for diagnostics. */
static void note_modes(ompi_osc_ucxx_module_t *module)
{
    if (module->state_cpu || !modes_differ(module)) return;
    OSC_UCXX_VERBOSE(1, "window %u: the processes' UCX apply atomics differently: locks "
                     "managed by the target, single elements by the stripes", module->cid);
}

/* More processes on this node than cores for them?  Then a process we
 * wait for may be waiting for a core itself.  The cores: the machine's, or
 * ours where we may run on several (a cpuset) and fewer than it has; a
 * process bound to one core says nothing of the others' (bound one to a
 * core each, they are not crowded: counting our one core, a fence barrier
 * yielded on every wait and OSU's fence latency pattern fell behind
 * osc/sm's). */
static bool crowded(void)
{
    /* The machine's count, read once: glibc reads it from sysfs on every
     * call (open, read, close), a good part of a dynamic window's
     * create-attach-put-detach-free cycle (bench/rma_mh dyn_cr).  Threads
     * racing here store the same value. */
    static long online_cached;
    int procs = (int) opal_process_info.num_local_peers + 1;
    long online = __atomic_load_n(&online_cached, __ATOMIC_RELAXED);
    cpu_set_t mine;

    if (0 == online) {
        online = sysconf(_SC_NPROCESSORS_ONLN);
        __atomic_store_n(&online_cached, online, __ATOMIC_RELAXED);
    }

    if (online > 0 && procs > online) return true;
    if (0 != sched_getaffinity(0, sizeof(mine), &mine)) return true;
    return CPU_COUNT(&mine) > 1 && procs > CPU_COUNT(&mine);
}

int ompi_osc_ucxx_policy_agree(ompi_osc_ucxx_module_t *module)
{
    static const char *kinds[] = {"the stripe locks", "CPU atomics", "UCX atomics"};
    static const char *locks[] = {"one-sided by CPU atomics", "one-sided by UCX atomics",
                                  "managed by the target"};
    bool on_node = module->on_node;
    uint32_t all = on_node ? maps_of(module) : 0;

    module->state_cpu = 0 != (all & MAPS_STATES);
    module->fence_by_state = module->fence_by_state && module->state_cpu;
    module->single_kind = single_kind(module, on_node, all);
    module->lock_kind = lock_kind(module);
    module->crowded = crowded();
    note_modes(module);
    OSC_UCXX_VERBOSE(10, "window %u: state words by %s atomics, locks %s, acc_single_intrinsic "
                     "singles by %s (every process maps %s)", module->cid,
                     module->state_cpu ? "CPU" : "UCX", locks[module->lock_kind],
                     kinds[module->single_kind],
                     (all & MAPS_MEMORY) ? "all of every other's" : (all & MAPS_STATES)
                                                                      ? "every other's state"
                                                                      : "not every other's state");
    return OMPI_SUCCESS;
}
