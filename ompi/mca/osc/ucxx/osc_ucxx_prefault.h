/*
 * Copyright (c) 2026 The osc/ucxx authors. All rights reserved.
 * $COPYRIGHT$
 *
 * Populating a peer's memory mapped here before a large copy, and the two
 * pages a first access touches (osc_ucxx_prefault.c says why).
 */

#ifndef OMPI_OSC_UCXX_PREFAULT_H
#define OMPI_OSC_UCXX_PREFAULT_H

#include "osc_ucxx_types.h"

BEGIN_C_DECLS

/* Zeroed chunk bits for a mapping of `bytes` (NULL where the kernel refuses
 * populating, or out of memory). */
uint64_t *ompi_osc_ucxx_prefault_bits(size_t bytes);
/* Populate the 2 MiB chunks of [base + off, + len) whose bit in `bits` is
 * clear, and set them. */
void ompi_osc_ucxx_prefault_chunks(char *base, uint64_t *bits, uint64_t off, size_t len);
/* Populate for writing the pages of `a` and `b` (in a peer's shared memory
 * mapped here) in one call, where they are one page or neighbours: false
 * where nothing was done (they fault when touched). */
bool ompi_osc_ucxx_prefault_pair(const void *a, const void *b);

END_C_DECLS

#endif /* OMPI_OSC_UCXX_PREFAULT_H */
