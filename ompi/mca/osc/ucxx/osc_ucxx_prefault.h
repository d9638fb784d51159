/*
 * Copyright (c) 2026 The osc/ucxx authors. All rights reserved.
 * $COPYRIGHT$
 *
 * Populating a peer's memory mapped here before a large copy
 * (osc_ucxx_prefault.c says why).
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

END_C_DECLS

#endif /* OMPI_OSC_UCXX_PREFAULT_H */
