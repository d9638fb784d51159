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
 *     window memory)?  Each process maps its peers and says; the AND of the
 *     answers (an allreduce, only where all ranks share a node: elsewhere
 *     the answer is no for everybody);
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
 */

#include "ompi_config.h"

#include "ompi/datatype/ompi_datatype.h"
#include "ompi/op/op.h"

#include "osc_ucxx_state.h"

#define MAPS_STATES 0x1   /* this process maps every other's state segment */
#define MAPS_MEMORY 0x2   /* ... and all of its window memory */

/* What this process maps of its peers (all on this node): each peer mapped
 * now, as its first use would.  Dynamic windows have no memory yet. */
static uint32_t local_maps(ompi_osc_ucxx_module_t *module)
{
    uint32_t bits = MAPS_STATES | MAPS_MEMORY;

    if (MPI_WIN_FLAVOR_DYNAMIC == module->flavor) bits &= ~MAPS_MEMORY;
    for (int i = 0; i < module->size && 0 != bits; ++i) {
        if (i == module->rank) continue;
        if (NULL == ompi_osc_ucxx_direct_state(module, i)) {
            bits = 0;
        } else if (module->peers[i].size > 0 && !ompi_osc_ucxx_fully_mapped(module, i)) {
            bits &= ~MAPS_MEMORY;
        }
    }
    return bits;
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

/* Where UCX atomics change state words and the processes' UCX apply them
 * differently, nothing keeps them atomic with each other: say so once.
 * (The lock words are the target's then: PSCW's completion counts.) */
static void warn_modes(ompi_osc_ucxx_module_t *module)
{
    static bool warned = false;

    if (module->state_cpu || !modes_differ(module)) return;
    OSC_UCXX_VERBOSE(1, "window %u: the processes' UCX apply atomics differently: "
                     "completions of PSCW epochs may be lost", module->cid);
    if (warned) return;
    warned = true;
    opal_show_help("help-osc-ucxx.txt", "atomic modes differ", true);
}

int ompi_osc_ucxx_policy_agree(ompi_osc_ucxx_module_t *module)
{
    static const char *kinds[] = {"the stripe locks", "CPU atomics", "UCX atomics"};
    static const char *locks[] = {"one-sided by CPU atomics", "one-sided by UCX atomics",
                                  "managed by the target"};
    ompi_communicator_t *comm = module->comm;
    bool on_node = ompi_osc_ucxx_all_on_node(module);
    uint32_t mine = 0, all = 0;
    int rc = OMPI_SUCCESS;

    if (on_node) {
        mine = OSC_UCXX.use_direct || 1 == module->size ? local_maps(module) : 0;
        all = mine;
        if (module->size > 1) {
            rc = comm->c_coll->coll_allreduce(&mine, &all, 1, &ompi_mpi_uint32_t.dt,
                                              &ompi_mpi_op_band.op, comm,
                                              comm->c_coll->coll_allreduce_module);
            if (OMPI_SUCCESS != rc) return rc;
        }
    }
    module->state_cpu = 0 != (all & MAPS_STATES);
    module->fence_by_state = module->fence_by_state && module->state_cpu;
    module->single_kind = single_kind(module, on_node, all);
    module->lock_kind = lock_kind(module);
    warn_modes(module);
    OSC_UCXX_VERBOSE(10, "window %u: state words by %s atomics, locks %s, acc_single_intrinsic "
                     "singles by %s (this process maps %s)", module->cid,
                     module->state_cpu ? "CPU" : "UCX", locks[module->lock_kind],
                     kinds[module->single_kind],
                     (mine & MAPS_MEMORY) ? "all of its peers" : (mine & MAPS_STATES)
                                                                     ? "its peers' states"
                                                                     : "not all peers' states");
    return OMPI_SUCCESS;
}
