/*
 * Copyright (c) 2026 The osc/ucxx authors. All rights reserved.
 * $COPYRIGHT$
 *
 * User active messages: the message path, target side (per origin:
 * uam_org_t).
 *
 * The UCX callback only copies (osc_ucxx_uam_recv.c): an eager chunk's input
 * goes straight to the staging place its header names, and a RUN item is
 * queued; a rendezvous chunk queues a FETCH that the drain turns into
 * ucp_am_recv_data_nbx.  The drain (outside every callback) runs a chunk
 * when (1) its AM's description is in (the first chunk carries the target
 * types' pack descriptions), (2) every AM of that origin it must follow
 * (seq <= `after`, set by the origin from am_ordering) has completed, (3)
 * with sameam, the previous chunk of the AM has run, and (4) the execution
 * word try-locks (shared for AMs issued under MPIX_MODE_CONCURRENT_AM,
 * exclusive otherwise).  Then: full barrier, handler, full barrier, unlock,
 * and an OUT with the output (AMV: counts, and only the produced elements
 * when they are few) and the credit.  Blocked chunks stay queued
 * (OMPI_ERR_WOULD_BLOCK) and are retried.  The drain has one thread at a
 * time, so no handler runs inside another.
 */

#include "ompi_config.h"

#include "ompi/mca/osc/base/osc_base_obj_convert.h"

#include "osc_ucxx_uam_internal.h"
#include "osc_ucxx_dynamic.h"
#include "osc_ucxx_dt.h"

/* A chunk's bytes are here (callback or drain): stage the input, queue the
 * run with its header and description. */
void ompi_osc_ucxx_uam_chunk_arrived(ompi_osc_ucxx_module_t *module, int from, const uam_data_t *d,
                                     const char *payload, size_t len)
{
    size_t wlen = sizeof(uam_work_t) + d->desc_len + sizeof(int32_t);
    uam_work_t *w = malloc(wlen);
    char *place = NULL;
    int buf = -1;

    if (NULL == w) return;   /* (the origin would wait forever: nothing better to do) */
    memset(w, 0, sizeof(*w));
    w->kind = K_RUN;
    w->u.data = *d;
    if (NULL == module->uam || len < (size_t) d->desc_len + d->in_len) {
        w->status = NULL == module->uam ? MPI_ERR_OP : MPI_ERR_INTERN;
    } else {
        w->status = ompi_osc_ucxx_uam_stage_place(module, module->uam, from, d, &place, &buf);
    }
    if (MPI_SUCCESS == w->status && d->in_len > 0) {
        memcpy(place, payload + d->desc_len, d->in_len);
    }
    memcpy((char *) (w + 1), payload, len < d->desc_len ? len : d->desc_len);
    memcpy((char *) (w + 1) + d->desc_len, &buf, sizeof(int32_t));
    w->rdesc = place;
    ompi_osc_ucxx_am_defer(OSC_UCXX_AM_UAM_WORK, module, from, w, wlen);
    free(w);
}

/* The AM a chunk belongs to; made from the description the first chunk
 * carries (a failure is kept as the AM's status). */
static uam_exec_t *exec_find(uam_org_t *org, uint64_t token)
{
    for (uam_exec_t *ex = org->execs; NULL != ex; ex = ex->next) {
        if (ex->token == token) return ex;
    }
    return NULL;
}

static ompi_datatype_t *type_from(ompi_osc_ucxx_module_t *module, int from, const char **p,
                                  uint32_t len)
{
    void *q = (void *) *p;
    ompi_datatype_t *dt =
        ompi_osc_base_datatype_create(ompi_comm_peer_lookup(module->comm, from), &q);
    *p += len;
    return dt;
}

static uam_exec_t *exec_new(ompi_osc_ucxx_module_t *module, uam_org_t *org, int from,
                            const uam_data_t *d, const char *desc)
{
    uam_exec_t *ex = calloc(1, sizeof(*ex));
    uam_reg_t *reg = ompi_osc_ucxx_uam_reg_by_index(module->uam, d->index);
    uam_desc_t dd;
    const char *p = desc + sizeof(dd);

    if (NULL == ex) return NULL;
    memcpy(&dd, desc, sizeof(dd));
    ex->token = d->token;
    ex->seq = d->seq;
    ex->total = d->total;
    ex->n = dd.n;
    ex->m = dd.m;
    ex->pcount = dd.pcount;
    ex->paddr = (void *) (uintptr_t) dd.paddr;
    ex->tin = type_from(module, from, &p, dd.len[0]);
    ex->tout = type_from(module, from, &p, dd.len[1]);
    ex->pdt = type_from(module, from, &p, dd.len[2]);
    if (NULL == reg || reg->kind != ((d->flags & F_AMV) ? OSC_UCXX_AM_OP_AMV : OSC_UCXX_AM_OP_AM)) {
        ex->status = MPI_ERR_OP;   /* S30: index unknown here */
    } else if (NULL == ex->tin || NULL == ex->tout || NULL == ex->pdt) {
        ex->status = MPI_ERR_TYPE;
    } else if (MPI_WIN_FLAVOR_DYNAMIC == module->flavor && dd.pcount > 0 &&
               !ompi_osc_ucxx_dyn_contains(module, dd.paddr,
                                           dd.paddr + true_lb(ex->pdt) +
                                               span(dd.pcount, ex->pdt))) {
        ex->status = MPI_ERR_RMA_RANGE;   /* S30: region not attached */
    } else {
        ex->reg = *reg;
    }
    ex->next = org->execs;
    org->execs = ex;
    return ex;
}

void ompi_osc_ucxx_uam_exec_free(uam_org_t *org, uam_exec_t *ex)
{
    uam_exec_t **pp = &org->execs;
    while (*pp != ex) pp = &(*pp)->next;
    *pp = ex->next;
    ompi_datatype_t *types[3] = {ex->tin, ex->tout, ex->pdt};
    for (int i = 0; i < 3; ++i) {
        if (NULL != types[i]) ompi_osc_ucxx_dt_release(types[i]);
    }
    free(ex);
}

/* Every AM of the origin up to seq has completed: advance the watermark. */
static void seq_done(uam_org_t *org, uint64_t seq)
{
    if (seq != org->watermark + 1) {
        if (org->ndone == org->capdone) {
            int cap = org->capdone ? 2 * org->capdone : 8;
            uint64_t *grown = realloc(org->done, cap * sizeof(*grown));
            if (NULL == grown) return;
            org->done = grown;
            org->capdone = cap;
        }
        org->done[org->ndone++] = seq;
        return;
    }
    org->watermark = seq;
    for (bool moved = true; moved;) {
        moved = false;
        for (int i = 0; i < org->ndone; ++i) {
            if (org->done[i] == org->watermark + 1) {
                org->watermark++;
                org->done[i] = org->done[--org->ndone];
                moved = true;
            }
        }
    }
}

/* Send a chunk's OUT (drain): status, credit echo, counts, output. */
static void send_out(ompi_osc_ucxx_module_t *module, int to, const uam_data_t *d, int status,
                     const char *outp, const uam_exec_t *ex, const int *counts)
{
    bool amv = d->flags & F_AMV;
    size_t clen = amv ? d->nseg * sizeof(int32_t) : 0, olen = 0, produced = 0;
    bool packed = false;
    uam_out_t *o;
    char *buf, *q;

    if (MPI_SUCCESS == status) {
        olen = d->out_len;
        if (amv) {
            size_t tsize = size_of(ex->tout);
            for (uint32_t s = 0; s < d->nseg; ++s) produced += (size_t) counts[s] * tsize;
            packed = 0 == true_lb(ex->tout) && (size_t) extent_of(ex->tout) == tsize &&
                     produced * 100 <= (size_t) OSC_UCXX.amv_pack_threshold * d->out_len;
            if (packed) olen = produced;
        }
    }
    buf = malloc(sizeof(*o) + clen + olen + 1);
    if (NULL == buf) return;
    o = (uam_out_t *) buf;
    *o = (uam_out_t){.h = {module->cid, module->rank}, .token = d->token, .offset = d->offset,
                     .first = d->first, .nseg = d->nseg, .out_len = (uint32_t) olen,
                     .grant = d->grant, .status = status, .in_len = d->in_len,
                     .stage_len = (uint32_t) (a64(d->in_len) + d->out_len), .where = d->where,
                     .packed = packed};
    q = buf + sizeof(*o);
    for (uint32_t s = 0; clen && s < d->nseg; ++s) {
        int32_t c = MPI_SUCCESS == status ? counts[s] : 0;
        memcpy(q + s * sizeof(c), &c, sizeof(c));
    }
    q += clen;
    if (packed) {
        size_t tsize = size_of(ex->tout);
        for (uint32_t s = 0; s < d->nseg; ++s) {
            memcpy(q, outp + (size_t) s * ex->m * tsize, (size_t) counts[s] * tsize);
            q += (size_t) counts[s] * tsize;
        }
    } else if (olen) {
        memcpy(q, outp, olen);
    }
    (void) ompi_osc_ucxx_am_send_flags(module, OSC_UCXX.main_worker, to, OSC_UCXX_AM_UAM_OUT,
                                       buf, sizeof(*o), sizeof(*o) + clen + olen,
                                       clen + olen > OSC_UCXX.am_eager ? UCP_AM_SEND_FLAG_RNDV
                                                                       : UCP_AM_SEND_FLAG_EAGER);
}

/* Run a staged chunk if ordering and exclusion allow (S11-S14). */
int ompi_osc_ucxx_uam_run_chunk(ompi_osc_ucxx_module_t *module, int from, uam_work_t *w)
{
    const uam_data_t *d = &w->u.data;
    const char *desc = (const char *) (w + 1);
    ompi_osc_ucxx_uam_t *uam = module->uam;
    uam_org_t *org = NULL == uam ? NULL : ompi_osc_ucxx_uam_org(module, uam, from);
    uam_exec_t *ex = NULL == org ? NULL : exec_find(org, d->token);
    int32_t buf;
    int status = w->status, counts_stack[64], *counts = counts_stack;
    char *place = (char *) w->rdesc;
    bool shared = d->flags & F_CONCURRENT;

    memcpy(&buf, desc + d->desc_len, sizeof(buf));
    if (NULL == org) {
        send_out(module, from, d, MPI_ERR_OP, NULL, NULL, NULL);
        return OMPI_SUCCESS;
    }
    if (NULL == ex) {
        if (!(d->flags & F_DESC)) return OMPI_ERR_WOULD_BLOCK;   /* first chunk not in yet */
        if ((d->flags & F_DERIVED) && !ompi_osc_ucxx_objects_ours()) {
            return OMPI_ERR_WOULD_BLOCK;   /* its types are built by the application's thread */
        }
        ex = exec_new(module, org, from, d, desc);
        if (NULL == ex) return OMPI_ERR_WOULD_BLOCK;
    }
    if (d->flags & F_SKIP) {
        if ((d->flags & F_SAMEAM) && d->first != ex->next_first) return OMPI_ERR_WOULD_BLOCK;
        goto counted;   /* the origin gave up on these segments: no OUT */
    }
    if (MPI_SUCCESS == status) status = ex->status;
    if (MPI_SUCCESS == status) {
        if (org->watermark < d->after ||
            ((d->flags & F_SAMEAM) && d->first != ex->next_first)) {
            return OMPI_ERR_WOULD_BLOCK;
        }
        if (d->nseg > 64 && NULL == (counts = malloc(d->nseg * sizeof(int)))) {
            return OMPI_ERR_WOULD_BLOCK;
        }
        if (!ompi_osc_ucxx_state_exec_trylock(module->state, shared)) {
            if (counts != counts_stack) free(counts);
            return OMPI_ERR_WOULD_BLOCK;
        }
        status = ompi_osc_ucxx_uam_invoke(&ex->reg, place - true_lb(ex->tin), ex->n, ex->tin,
                                          ex->paddr, ex->pcount, ex->pdt,
                                          place + a64(d->in_len) - true_lb(ex->tout), ex->m,
                                          ex->tout, (int) d->nseg, (int) d->first, counts);
        ompi_osc_ucxx_state_exec_unlock(module->state, shared);
        if (MPI_SUCCESS != status) ex->status = status;   /* S30: skip the rest */
    }
    send_out(module, from, d, status, place + a64(d->in_len), ex, counts);
    if (counts != counts_stack) free(counts);
counted:
    ompi_osc_ucxx_uam_stage_unpin(uam, buf);
    ex->done += d->nseg;
    if (d->first + d->nseg > ex->next_first) ex->next_first = d->first + d->nseg;
    if (ex->done == ex->total) {
        seq_done(org, ex->seq);
        ompi_osc_ucxx_uam_exec_free(org, ex);
    }
    return OMPI_SUCCESS;
}
