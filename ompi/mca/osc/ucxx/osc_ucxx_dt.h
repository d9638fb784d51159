/*
 * Copyright (c) 2026 The osc/ucxx authors. All rights reserved.
 * $COPYRIGHT$
 *
 * Walking a (buffer, count, datatype) as contiguous pieces, and walking an
 * origin and a target layout together so each matching piece is one
 * transfer.  The target side runs on remote addresses: the convertor only
 * computes addresses, it never touches the memory.
 */

#ifndef OMPI_OSC_UCXX_DT_H
#define OMPI_OSC_UCXX_DT_H

#include "opal/datatype/opal_convertor.h"
#include "ompi/datatype/ompi_datatype.h"

#include "osc_ucxx_worker.h"

/* An operation in flight keeps the datatypes it still needs (the
 * application may free them meanwhile).  Predefined ones are never freed:
 * not counted, so that the many operations on them cost no count, and the
 * count of an object every thread of the application shares is never
 * changed from a callback. */
static inline void ompi_osc_ucxx_dt_retain(ompi_datatype_t *dt)
{
    if (!ompi_datatype_is_predefined(dt)) OBJ_RETAIN(dt);
}

static inline void ompi_osc_ucxx_dt_release(ompi_datatype_t *dt)
{
    if (!ompi_datatype_is_predefined(dt)) ompi_osc_ucxx_obj_release(&dt->super.super);
}

#define OSC_UCXX_DT_IOV 32

typedef struct {
    opal_convertor_t conv;
    struct iovec iov[OSC_UCXX_DT_IOV];
    uint32_t n, next;
    bool exhausted;          /* the convertor has produced everything */
    char *ptr;               /* current piece */
    size_t left;
} ompi_osc_ucxx_dt_iter_t;

static inline void ompi_osc_ucxx_dt_iter_init(ompi_osc_ucxx_dt_iter_t *it, void *buf,
                                              int count, struct ompi_datatype_t *dt)
{
    OBJ_CONSTRUCT(&it->conv, opal_convertor_t);
    opal_convertor_copy_and_prepare_for_send(ompi_mpi_local_convertor, &dt->super, count, buf,
                                             0, &it->conv);
    it->n = it->next = 0;
    it->exhausted = false;
    it->left = 0;
}

static inline void ompi_osc_ucxx_dt_iter_fini(ompi_osc_ucxx_dt_iter_t *it)
{
    OBJ_DESTRUCT(&it->conv);
}

/* Make the current piece non-empty; false at the end. */
static inline bool ompi_osc_ucxx_dt_iter_fill(ompi_osc_ucxx_dt_iter_t *it)
{
    while (0 == it->left) {
        if (it->next == it->n) {
            size_t bytes;
            if (it->exhausted) {
                return false;
            }
            it->n = OSC_UCXX_DT_IOV;
            it->exhausted = opal_convertor_raw(&it->conv, it->iov, &it->n, &bytes);
            it->next = 0;
            if (0 == it->n) {
                if (it->exhausted) return false;
                continue;
            }
        }
        it->ptr = (char *) it->iov[it->next].iov_base;
        it->left = it->iov[it->next].iov_len;
        it->next++;
    }
    return true;
}

/* The next piece common to both walks: local pointer, remote address, length. */
static inline bool ompi_osc_ucxx_dt_iter_pair(ompi_osc_ucxx_dt_iter_t *o,
                                              ompi_osc_ucxx_dt_iter_t *t, char **local,
                                              uint64_t *remote, size_t *len)
{
    if (!ompi_osc_ucxx_dt_iter_fill(o) || !ompi_osc_ucxx_dt_iter_fill(t)) {
        return false;
    }
    *len = o->left < t->left ? o->left : t->left;
    *local = o->ptr;
    *remote = (uint64_t) (uintptr_t) t->ptr;
    o->ptr += *len;
    o->left -= *len;
    t->ptr += *len;
    t->left -= *len;
    return true;
}

#endif
