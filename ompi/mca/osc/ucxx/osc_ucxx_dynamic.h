/*
 * Copyright (c) 2026 The osc/ucxx authors. All rights reserved.
 * $COPYRIGHT$
 *
 * Dynamic windows: attach/detach and the target's region table
 * (osc_ucxx_dynamic.c; the origin's path lookup is declared with the other
 * path code in osc_ucxx_target.h).
 */

#ifndef OMPI_OSC_UCXX_DYNAMIC_H
#define OMPI_OSC_UCXX_DYNAMIC_H

#include "osc_ucxx_target.h"

BEGIN_C_DECLS

int ompi_osc_ucxx_attach(struct ompi_win_t *win, void *base, size_t len);
int ompi_osc_ucxx_detach(struct ompi_win_t *win, const void *base);
/* Is [lo, hi) attached here (in one region, or regions back to back)? */
bool ompi_osc_ucxx_dyn_contains(ompi_osc_ucxx_module_t *module, uint64_t lo, uint64_t hi);
void ompi_osc_ucxx_dyn_release(ompi_osc_ucxx_module_t *module);
/* Regions sorted by base (`count` of them at `array`, `stride` bytes
 * apart, each starting with its uint64_t base and length, none longer than
 * max_len): the index of one that holds [lo, hi), -2 where regions back to
 * back hold it, -1 where none does. */
int ompi_osc_ucxx_regions_lookup(const void *array, int count, size_t stride, uint64_t max_len,
                                 uint64_t lo, uint64_t hi);
/* The owner: its regions into the table the peers on the node read
 * (osc_ucxx_dyntab.c); the caller holds dyn_lock. */
void ompi_osc_ucxx_dyntab_publish(ompi_osc_ucxx_module_t *module);
/* At free, before the links go: wait for the generation reads in flight. */
void ompi_osc_ucxx_dyn_settle(ompi_osc_ucxx_module_t *module);
/* Origins: `target`'s detach generation, read there after a message that
 * left here when the window had counted `syncs` synchronizations
 * (module->dyn_syncs): the operations after it need not read it again
 * until the next synchronization. */
void ompi_osc_ucxx_dyn_gen_seen(ompi_osc_ucxx_module_t *module, ompi_osc_ucxx_worker_t *worker,
                                int target, uint64_t gen, uint64_t syncs);
void ompi_osc_ucxx_dyn_cache_free(ompi_osc_ucxx_dyncache_t *cache);
/* Puts, gets and accumulates of at most this many bytes on a target whose
 * detach generation is not known since the last synchronization go as
 * messages the target checks (ompi_osc_ucxx_dyn_unverified). */
#define OSC_UCXX_DYN_AT_TARGET 4096
/* Origins: is `target`'s detach generation unknown since the window's last
 * synchronization (and not in yet), for an access of `bytes` that may go as
 * a message the target checks instead of waiting for it?  If so, once that
 * message is sent, ..._read_ahead starts reading the generation without
 * waiting: the accesses after it use the cache once it is in. */
bool ompi_osc_ucxx_dyn_unverified(ompi_osc_ucxx_module_t *module, ompi_osc_ucxx_worker_t *worker,
                                  int target, size_t bytes);
/* ... for an operation's target on a dynamic window (not a memory-handle
 * view): sets t->worker. */
bool ompi_osc_ucxx_dyn_by_message(ompi_osc_ucxx_target_t *t, size_t bytes);
void ompi_osc_ucxx_dyn_read_ahead(ompi_osc_ucxx_module_t *module, ompi_osc_ucxx_worker_t *worker,
                                  int target);
/* Its message kinds (component init) */
void ompi_osc_ucxx_dyn_am_init(void);

END_C_DECLS

#endif /* OMPI_OSC_UCXX_DYNAMIC_H */
