/*
 * Copyright (c) 2026 The osc/ucxx authors. All rights reserved.
 * $COPYRIGHT$
 *
 * User active messages: running handlers, on either side, and the layouts
 * their data is copied between.
 *
 * An AM runs a registered handler on a target's persistent region for
 * num_segments input segments, producing as many output segments, as one
 * or more invocations ("chunks") of whole consecutive segments.  Outputs
 * convert from the target's types to the origin's (S25).
 *
 * Handlers never run inside a UCX callback, and never inside another
 * handler: MPIX and osc calls from a handler return MPI_ERR_OTHER
 * (ompi_osc_ucxx_in_handler, OSC_UCXX_IN_HANDLER).
 */

#include "ompi_config.h"

#include "ompi/errhandler/errcode.h"

#include "osc_ucxx_uam_internal.h"
#include "osc_ucxx_dt.h"

#include "mpi.h"

typedef int (*uam_am_fn_t)(const void *, int, MPI_Datatype, void *, int, MPI_Datatype, void *,
                           int, MPI_Datatype, int, int, void *);
typedef int (*uam_amv_fn_t)(const void *, int, MPI_Datatype, void *, int, MPI_Datatype, void *,
                            int, MPI_Datatype, int, int, int *, void *);

__thread int ompi_osc_ucxx_in_handler = 0;
volatile int32_t ompi_osc_ucxx_handlers = 0;

/* ------------------------------------------------------------------------- */
/* Running a handler (both sides) */

/* Copy count elements laid out by sdt at src into the layout of ddt at dst
 * (the same number of bytes of data). */
void ompi_osc_ucxx_uam_copy_layout(void *dst, int64_t dcount, ompi_datatype_t *ddt,
                                   const void *src, int64_t scount, ompi_datatype_t *sdt)
{
    ompi_osc_ucxx_dt_iter_t d, s;
    char *local;
    uint64_t remote;
    size_t len;

    if (0 == dcount || 0 == scount) return;
    if (ompi_datatype_is_contiguous_memory_layout(ddt, dcount) &&
        ompi_datatype_is_contiguous_memory_layout(sdt, scount)) {
        memcpy((char *) dst + true_lb(ddt), (const char *) src + true_lb(sdt),
               size_of(sdt) * scount);
        return;
    }
    ompi_osc_ucxx_dt_iter_init(&s, (void *) src, (int) scount, sdt);
    ompi_osc_ucxx_dt_iter_init(&d, dst, (int) dcount, ddt);
    while (ompi_osc_ucxx_dt_iter_pair(&s, &d, &local, &remote, &len)) {
        memcpy((void *) (uintptr_t) remote, local, len);
    }
    ompi_osc_ucxx_dt_iter_fini(&s);
    ompi_osc_ucxx_dt_iter_fini(&d);
}

/* A handler's result as an error class (codes are process-local). */
static int result_class(int rc)
{
    if (MPI_SUCCESS == rc) return MPI_SUCCESS;
    if (rc < 0 || ompi_mpi_errcode_is_invalid(rc)) return MPI_ERR_OTHER;
    return ompi_mpi_errcode_get_class(rc);
}

/* One invocation: in and out point at element 0 of the target types'
 * layouts.  counts (AMV): preset to m, checked after. */
int ompi_osc_ucxx_uam_invoke(const uam_reg_t *reg, const void *in, int n, ompi_datatype_t *tin,
                             void *paddr, int pcount, ompi_datatype_t *pdt, void *out, int m,
                             ompi_datatype_t *tout, int nseg, int first, int *counts)
{
    int rc;

    opal_atomic_mb();   /* S17: RMA completed before sees the handler, and back */
    ompi_osc_ucxx_add32(&ompi_osc_ucxx_handlers, 1);
    ompi_osc_ucxx_in_handler++;
    if (OSC_UCXX_AM_OP_AMV == reg->kind) {
        for (int k = 0; k < nseg; ++k) counts[k] = m;
        rc = ((uam_amv_fn_t) reg->fn)(in, n, tin, paddr, pcount, pdt, out, m, tout, nseg, first,
                                      counts, reg->extra);
    } else {
        rc = ((uam_am_fn_t) reg->fn)(in, n, tin, paddr, pcount, pdt, out, m, tout, nseg, first,
                                     reg->extra);
    }
    ompi_osc_ucxx_in_handler--;
    ompi_osc_ucxx_add32(&ompi_osc_ucxx_handlers, -1);
    opal_atomic_mb();
    rc = result_class(rc);
    for (int k = 0; MPI_SUCCESS == rc && OSC_UCXX_AM_OP_AMV == reg->kind && k < nseg; ++k) {
        if (counts[k] < 0 || counts[k] > m) rc = MPI_ERR_COUNT;
    }
    return rc;
}

bool ompi_osc_ucxx_uam_in_handler(void)
{
    return ompi_osc_ucxx_in_handler > 0;
}

/* ------------------------------------------------------------------------- */
/* Outputs (S25) */

/* Output of segments [first, first+k), in the target type's layout at
 * `out` (element 0), into the origin buffer; AMV: counts[] per segment as
 * the handler set them, converted to origin elements in a->counts. */
void ompi_osc_ucxx_uam_store_output(const ompi_osc_ucxx_am_args_t *a, int m, const char *out,
                                    int first, int k, const int *tcounts, int *ocounts)
{
    if (NULL == tcounts) {
        ompi_osc_ucxx_uam_copy_layout(seg_ptr(a->out_addr, first, a->out_count, a->out_dt),
                                      (int64_t) k * a->out_count, a->out_dt, out, (int64_t) k * m,
                                      a->tout_dt);
        return;
    }
    size_t osize = size_of(a->out_dt), tsize = size_of(a->tout_dt);
    for (int s = 0; s < k; ++s) {
        int co = 0 == osize ? 0 : (int) ((size_t) tcounts[s] * tsize / osize);
        ompi_osc_ucxx_uam_copy_layout(seg_ptr(a->out_addr, first + s, a->out_count, a->out_dt), co,
                                      a->out_dt, out + (ptrdiff_t) s * m * extent_of(a->tout_dt),
                                      tcounts[s], a->tout_dt);
        ocounts[first + s] = co;
    }
}
