/*
 * Copyright (c) 2026 The osc/ucxx authors. All rights reserved.
 * $COPYRIGHT$
 *
 * User active messages, origin side: issuing an AM (its shapes checked,
 * S3, S6, S25), where it runs, and the message path's origin side.
 *
 * An AM runs here when the target's whole persistent region and its state
 * segment are mapped into this process (same node) and
 * osc_ucxx_am_origin_compute is on, or always for AMs to self
 * (origin-side execution, S26): the origin takes the target's execution
 * word (osc_ucxx_state.c) around each invocation, so the target CPU is not
 * needed at all.  Not while an earlier message AM to that target is
 * incomplete and ordering is on (it would overtake it).  Otherwise it goes
 * by messages.
 *
 * The message path, per target (uam_tgt_t): AMs queue in issue order; the
 * pump cuts the head AM into chunks of at most am_pipeline_unit segments,
 * each needing a64(te(kN, tin)) + a64(te(kM, tout)) bytes of staging at the
 * target, and sends each chunk to a place the origin itself allocates there,
 * in this order of preference:
 *     HINT   the portion am_user_buf_<t> promised (no handshake)
 *     SYS    this origin's internal slot at t (osc_ucxx_am_sysbuf, published
 *            at window creation; no handshake)
 *     GRANT  a range of t's attached user buffers that t granted us
 * If no place fits even one segment, the origin sends one RESV and waits for
 * t's GRANT (osc_ucxx_uam_pool.c serves it).  Credit comes back with each
 * chunk's OUT message (after the output was produced), so the origin never
 * overwrites staging in use.  With any ordering type on, no AM passes the
 * head one (with the FIFO grant service this cannot deadlock); with
 * am_ordering=none any AM that fits may go.  Chunk payloads up to
 * osc_ucxx_am_eager go eager, larger ones rendezvous.
 *
 * Completion: every message AM counts in module->am_outstanding, which
 * every flush, unlock, fence and complete already waits for; errors go to
 * module->am_error (returned by that call) or to the MPIX_Ram* request.
 */

#include "ompi_config.h"

#include "ompi/win/win.h"

#include "osc_ucxx_uam_internal.h"
#include "osc_ucxx_dynamic.h"
#include "osc_ucxx_lockq.h"
#include "osc_ucxx.h"

static OBJ_CLASS_INSTANCE(uam_am_t, opal_list_item_t, NULL, NULL);

static void am_finish(uam_am_t *am);

/* An error found after the call (S30): for the request, or for the next
 * completion call on the window (first error wins). */
static void late_fail(ompi_osc_ucxx_module_t *module, ompi_osc_ucxx_request_t *req, int error)
{
    int32_t none = OMPI_SUCCESS;
    if (NULL != req) {
        ompi_osc_ucxx_request_fail(req, error);
    } else {
        (void) opal_atomic_compare_exchange_strong_32(&module->am_error, &none, error);
    }
}

/* Give the grant back (tg->lock held; it must be idle). */
void ompi_osc_ucxx_uam_grant_release(ompi_osc_ucxx_module_t *module, uam_tgt_t *tg, int target)
{
    ompi_osc_ucxx_uam_send_ctrl(module, target,
                                (uam_ctrl_t){.type = C_RELEASE, .grant = tg->grant_id});
    tg->has_grant = tg->grant_excl = false;
    ompi_osc_ucxx_space_fini(&tg->grant);
}

static int send_chunk(ompi_osc_ucxx_module_t *module, uam_tgt_t *tg, uam_am_t *am, int k,
                      uint8_t where, uint64_t off, bool skip);

/* Give up on the rest of an AM (tg->lock held).  The target still hears of
 * the segments (a skip chunk), or AMs ordered after this one would wait
 * for it forever. */
static void am_abort(ompi_osc_ucxx_module_t *module, uam_tgt_t *tg, uam_am_t *am, int error)
{
    int rest = am->a.num_segments - am->next_seg;
    if (MPI_SUCCESS == am->error) am->error = error;
    if (rest > 0) (void) send_chunk(module, tg, am, rest, W_NONE, 0, true);
    am->segs_done += rest;
    am->next_seg = am->a.num_segments;
}

/* The description the first chunk carries (S3's target types). */
static size_t desc_size(const uam_am_t *am)
{
    return sizeof(uam_desc_t) + ompi_datatype_pack_description_length(am->a.tin_dt) +
           ompi_datatype_pack_description_length(am->a.tout_dt) +
           ompi_datatype_pack_description_length(am->a.p_dt);
}

static void desc_write(const uam_am_t *am, char *p)
{
    ompi_datatype_t *types[3] = {am->a.tin_dt, am->a.tout_dt, am->a.p_dt};
    uam_desc_t d = {.paddr = am->paddr, .pcount = am->a.pcount, .n = am->n, .m = am->m};
    char *q = p + sizeof(d);
    for (int i = 0; i < 3; ++i) {
        const void *packed = NULL;
        d.len[i] = (uint32_t) ompi_datatype_pack_description_length(types[i]);
        (void) ompi_datatype_get_pack_description(types[i], &packed);
        memcpy(q, packed, d.len[i]);
        q += d.len[i];
    }
    memcpy(p, &d, sizeof(d));
}

/* A place at the target for a chunk of up to *k segments: the hinted
 * portion, our internal slot, or our grant; halves *k until one fits. */
static bool place_chunk(uam_tgt_t *tg, const uam_am_t *am, int *k, uint8_t *where,
                        uint64_t *off)
{
    uam_space_t *spaces[3] = {&tg->hint, &tg->sys, tg->has_grant ? &tg->grant : NULL};
    const uint8_t kinds[3] = {W_HINT, W_SYS, W_GRANT};
    if (0 == chunk_need(*k, am->n, am->a.tin_dt, am->m, am->a.tout_dt)) {
        *where = W_NONE;   /* nothing to stage */
        *off = 0;
        return true;
    }
    for (int kk = *k; kk >= 1; kk = kk > 1 ? kk / 2 : 0) {
        size_t need = chunk_need(kk, am->n, am->a.tin_dt, am->m, am->a.tout_dt), o;
        for (int i = 0; i < 3; ++i) {
            if (NULL != spaces[i] && spaces[i]->size >= need &&
                ompi_osc_ucxx_space_alloc(spaces[i], need, &o)) {
                *k = kk;
                *where = kinds[i];
                *off = o;
                return true;
            }
        }
    }
    return false;
}

/* Nothing fits one segment: wait for credit if some place could ever hold
 * it, else ask the target for user buffer (once), or fail the AM if it said
 * there is none (S21).  tg->lock held. */
static void need_buffer(ompi_osc_ucxx_module_t *module, uam_tgt_t *tg, uam_am_t *am)
{
    size_t one = chunk_need(1, am->n, am->a.tin_dt, am->m, am->a.tout_dt);
    size_t want = chunk_need(am->a.num_segments - am->next_seg < am->unit
                                 ? am->a.num_segments - am->next_seg : am->unit,
                             am->n, am->a.tin_dt, am->m, am->a.tout_dt);
    bool excl = OSC_UCXX.am_exclusive_detect &&
                (module->peers[am->target].access & OSC_UCXX_TGT_EXCL);

    if (one <= tg->hint.size || one <= tg->sys.size || tg->resv_out) {
        return;  /* credit comes back with the OUT of a chunk in flight */
    }
    if (tg->has_grant) {
        if (one <= tg->grant.size) return;
        if (!ompi_osc_ucxx_space_idle(&tg->grant)) return;
        ompi_osc_ucxx_uam_grant_release(module, tg, am->target);   /* too small for this AM */
    }
    tg->resv_out = true;
    ompi_osc_ucxx_uam_send_ctrl(module, am->target,
                                (uam_ctrl_t){.type = C_RESV, .want = want, .min = one,
                                             .all = excl});
}

/* Send one chunk of am (tg->lock held). */
static int send_chunk(ompi_osc_ucxx_module_t *module, uam_tgt_t *tg, uam_am_t *am, int k,
                      uint8_t where, uint64_t off, bool skip)
{
    ompi_datatype_t *tin = am->a.tin_dt;
    size_t dlen = 0 == am->next_seg ? desc_size(am) : 0;
    size_t in_len = skip ? 0 : span((int64_t) k * am->n, tin);
    size_t len = sizeof(uam_data_t) + dlen + in_len;
    char *buf = malloc(len);
    uam_data_t *d = (uam_data_t *) buf;

    if (NULL == buf) return OMPI_ERR_OUT_OF_RESOURCE;
    *d = (uam_data_t){.h = {module->cid, module->rank}, .token = (uint64_t) (uintptr_t) am,
                      .seq = am->seq, .after = am->after, .offset = off,
                      .hint = tg->hint.size, .first = (uint32_t) am->next_seg,
                      .nseg = (uint32_t) k, .total = (uint32_t) am->a.num_segments,
                      .in_len = (uint32_t) in_len,
                      .out_len = skip ? 0 : (uint32_t) span((int64_t) k * am->m, am->a.tout_dt),
                      .desc_len = (uint32_t) dlen, .index = am->index,
                      .grant = tg->grant_id,
                      .flags = am->flags | (dlen ? F_DESC : 0) | (skip ? F_SKIP : 0),
                      .where = where};
    if (dlen) desc_write(am, buf + sizeof(*d));
    if (!skip) {
        ompi_osc_ucxx_uam_copy_layout(buf + sizeof(*d) + dlen - true_lb(tin), (int64_t) k * am->n,
                                      tin,
                                      seg_ptr(am->a.in_addr, am->next_seg, am->a.in_count,
                                              am->a.in_dt),
                                      (int64_t) k * am->a.in_count, am->a.in_dt);
    }
    am->next_seg += k;
    return ompi_osc_ucxx_am_send_flags(module, OSC_UCXX.main_worker, am->target,
                                       OSC_UCXX_AM_UAM_DATA, buf, sizeof(*d), len,
                                       dlen + in_len > OSC_UCXX.am_eager
                                           ? UCP_AM_SEND_FLAG_RNDV
                                           : UCP_AM_SEND_FLAG_EAGER);
}

/* Send what credit allows, in order (ordering on: nothing passes a blocked
 * AM; none: any AM that fits may go). */
static void pump(ompi_osc_ucxx_module_t *module, uam_tgt_t *tg, int target)
{
    uam_am_t *am, *next;

    OSC_UCXX_LOCK(&tg->lock);
    OPAL_LIST_FOREACH_SAFE (am, next, &tg->queue, uam_am_t) {
        while (am->next_seg < am->a.num_segments) {
            int k = am->a.num_segments - am->next_seg;
            uint8_t where;
            uint64_t off;
            if (k > am->unit) k = am->unit;
            if (!place_chunk(tg, am, &k, &where, &off)) {
                need_buffer(module, tg, am);
                break;
            }
            if (OMPI_SUCCESS != send_chunk(module, tg, am, k, where, off, false)) {
                am_abort(module, tg, am, MPI_ERR_OTHER);
            }
        }
        if (am->next_seg == am->a.num_segments) {
            opal_list_remove_item(&tg->queue, &am->super);
            if (am->segs_done == am->a.num_segments) am_finish(am);
        } else if (am->flags & F_ORDERED) {
            break;   /* ordered: nothing passes it */
        }
    }
    if (opal_list_is_empty(&tg->queue) && tg->has_grant && !tg->grant_excl &&
        ompi_osc_ucxx_space_idle(&tg->grant)) {
        ompi_osc_ucxx_uam_grant_release(module, tg, target);  /* others may be waiting for it */
    }
    OSC_UCXX_UNLOCK(&tg->lock);
}

/* The AM is complete (tg->lock held): report, and let flushes return. */
static void am_finish(uam_am_t *am)
{
    ompi_osc_ucxx_module_t *module = am->module;
    uam_reg_t *reg;

    am->tg->pending--;
    if (MPI_SUCCESS != am->error) late_fail(module, am->req, am->error);
    if (NULL != (reg = ompi_osc_ucxx_uam_reg_by_index(module->uam, am->index))) {
        ompi_osc_ucxx_add32(&reg->pending, -1);   /* (deregister checks it) */
    }
    ompi_osc_ucxx_dt_release(am->a.in_dt);
    ompi_osc_ucxx_dt_release(am->a.out_dt);
    ompi_osc_ucxx_dt_release(am->a.tin_dt);
    ompi_osc_ucxx_dt_release(am->a.tout_dt);
    ompi_osc_ucxx_dt_release(am->a.p_dt);
    opal_atomic_wmb();   /* outputs before the count flushes wait on */
    if (NULL != am->req) ompi_osc_ucxx_request_op_done(am->req);
    ompi_osc_ucxx_add32(&module->am_outstanding, -1);
    OBJ_RELEASE(am);
}

static void out_later(ompi_osc_ucxx_module_t *module, const uam_out_t *o)
{
    uam_work_t w;
    memset(&w, 0, sizeof(w));
    w.kind = K_OUTDONE;
    w.u.out = *o;
    ompi_osc_ucxx_am_defer(OSC_UCXX_AM_UAM_WORK, module, o->h.from, &w, sizeof(w));
}

/* A chunk's output arrived (callback or drain): store it, memory work only. */
void ompi_osc_ucxx_uam_out_arrived(ompi_osc_ucxx_module_t *module, const uam_out_t *o,
                                   const char *payload, size_t len)
{
    uam_am_t *am = (uam_am_t *) (uintptr_t) o->token;
    int status = o->status;
    size_t clen = (am->flags & F_AMV) ? o->nseg * sizeof(int32_t) : 0;

    if (MPI_SUCCESS == status && MPI_SUCCESS == am->error) {
        const char *out = payload + clen;
        int32_t *tcounts = (int32_t *) malloc(clen + 1);
        if (len < clen + o->out_len || NULL == tcounts) {
            status = MPI_ERR_INTERN;
        } else if (o->packed) {
            /* AMV with a contiguous output type: only the produced elements */
            size_t tsize = size_of(am->a.tout_dt);
            memcpy(tcounts, payload, clen);
            for (uint32_t s = 0; s < o->nseg; ++s) {
                int ct = tcounts[s];
                ompi_osc_ucxx_uam_store_output(&am->a, am->m, out, o->first + s, 1, &ct,
                                               am->counts);
                out += (size_t) ct * tsize;
            }
        } else {
            if (clen) memcpy(tcounts, payload, clen);
            ompi_osc_ucxx_uam_store_output(&am->a, am->m, out - true_lb(am->a.tout_dt), o->first,
                                           o->nseg, clen ? (int *) tcounts : NULL, am->counts);
        }
        free(tcounts);
    }
    /* the drain records it, with the credit: no lock in a callback */
    uam_out_t done = *o;
    done.status = status;
    out_later(module, &done);
}

/* The drain's part of an OUT: credit back, count, finish, pump more.
 * (Callbacks run with UCX's worker lock held, and pump holds tg->lock while
 * it sends: taking tg->lock in a callback would invert the two.) */
void ompi_osc_ucxx_uam_out_done(ompi_osc_ucxx_module_t *module, const uam_out_t *o)
{
    uam_am_t *am = (uam_am_t *) (uintptr_t) o->token;
    uam_tgt_t *tg = am->tg;
    bool more;

    OSC_UCXX_LOCK(&tg->lock);
    if (W_SYS == o->where) {
        ompi_osc_ucxx_space_free(&tg->sys, o->offset, o->stage_len);
    } else if (W_HINT == o->where) {
        ompi_osc_ucxx_space_free(&tg->hint, o->offset, o->stage_len);
    } else if (W_GRANT == o->where && tg->has_grant && tg->grant_id == o->grant) {
        ompi_osc_ucxx_space_free(&tg->grant, o->offset, o->stage_len);
    }
    if (MPI_SUCCESS != o->status && MPI_SUCCESS == am->error) am->error = o->status;
    am->segs_done += o->nseg;
    /* all sent means it left the queue (pump does both under the lock) */
    if (am->segs_done == am->a.num_segments && am->next_seg == am->a.num_segments) {
        am_finish(am);
    }
    more = !opal_list_is_empty(&tg->queue) || (tg->has_grant && !tg->grant_excl);
    OSC_UCXX_UNLOCK(&tg->lock);
    if (more) pump(module, tg, o->h.from);
}

/* ------------------------------------------------------------------------- */
/* The message path: an AM joins its target's queue */

static uint64_t hint_for(ompi_osc_ucxx_module_t *module, int target)
{
    for (int i = 0; i < module->am_nhints; ++i) {
        if (module->am_hints[i].rank == target) return module->am_hints[i].bytes;
    }
    return 0;
}

/* Per target: made on first use. */
static uam_tgt_t *tgt_get(ompi_osc_ucxx_module_t *module, ompi_osc_ucxx_uam_t *uam, int target)
{
    uam_tgt_t *tg = uam->tgts[target];
    if (OPAL_LIKELY(NULL != tg)) return tg;
    OSC_UCXX_LOCK(&uam->lock);
    if (NULL == uam->tgts[target] && NULL != (tg = calloc(1, sizeof(*tg)))) {
        OBJ_CONSTRUCT(&tg->lock, opal_mutex_t);
        OBJ_CONSTRUCT(&tg->queue, opal_list_t);
        tg->next_seq = 1;
        ompi_osc_ucxx_space_init(&tg->sys, ompi_osc_ucxx_peer_am_sysbuf(module, target));
        ompi_osc_ucxx_space_init(&tg->hint, hint_for(module, target));
        opal_atomic_wmb();
        uam->tgts[target] = tg;
    }
    OSC_UCXX_UNLOCK(&uam->lock);
    return uam->tgts[target];
}

/* The `after` of a new AM to tg: every earlier AM (diffop), the last one
 * with the same op (sameop only), or none.  tg->lock held. */
static uint64_t order_after(uam_tgt_t *tg, uint8_t order, uint64_t op, uint64_t seq)
{
    int slot = (int) (op % 8);
    uint64_t after = 0;

    if (order & OSC_UCXX_AM_ORDER_DIFFOP) {
        after = seq - 1;
    } else if ((order & OSC_UCXX_AM_ORDER_SAMEOP) && tg->last[slot].op == op) {
        after = tg->last[slot].seq;
    } else if (order & OSC_UCXX_AM_ORDER_SAMEOP) {
        after = seq - 1;   /* slot taken by another op: order after everything */
    }
    tg->last[slot].op = op;
    tg->last[slot].seq = seq;
    return after;
}

static int issue_message(ompi_osc_ucxx_view_t *view, ompi_osc_ucxx_uam_t *uam, uam_reg_t *reg,
                         const ompi_osc_ucxx_am_args_t *a, int n, int m, uint64_t paddr,
                         int unit, int *counts, ompi_osc_ucxx_request_t *req)
{
    ompi_osc_ucxx_module_t *module = view->core;
    uam_tgt_t *tg = tgt_get(module, uam, a->target);
    uam_am_t *am = OBJ_NEW(uam_am_t);
    bool derived = !ompi_datatype_is_predefined(a->tin_dt) ||
                   !ompi_datatype_is_predefined(a->tout_dt) ||
                   !ompi_datatype_is_predefined(a->p_dt);

    if (NULL == tg || NULL == am) {
        if (NULL != am) OBJ_RELEASE(am);
        return OMPI_ERR_OUT_OF_RESOURCE;
    }
    memset((char *) am + sizeof(am->super), 0, sizeof(*am) - sizeof(am->super));
    am->module = module;
    am->tg = tg;
    am->target = a->target;
    am->a = *a;
    ompi_osc_ucxx_dt_retain(a->in_dt);
    ompi_osc_ucxx_dt_retain(a->out_dt);
    ompi_osc_ucxx_dt_retain(a->tin_dt);
    ompi_osc_ucxx_dt_retain(a->tout_dt);
    ompi_osc_ucxx_dt_retain(a->p_dt);
    am->n = n;
    am->m = m;
    am->index = reg->index;
    am->unit = unit;
    am->counts = counts;
    am->req = req;
    am->paddr = paddr;
    am->error = MPI_SUCCESS;
    am->flags = (OSC_UCXX_AM_OP_AMV == reg->kind ? F_AMV : 0) |
                (uam->concurrent ? F_CONCURRENT : 0) |
                (view->am_order & OSC_UCXX_AM_ORDER_SAMEAM ? F_SAMEAM : 0) |
                (view->am_order ? F_ORDERED : 0) | (derived ? F_DERIVED : 0);
    if (NULL != req) ompi_osc_ucxx_request_more(req);
    ompi_osc_ucxx_add32(&reg->pending, 1);
    ompi_osc_ucxx_add32(&module->am_outstanding, 1);
    OSC_UCXX_LOCK(&tg->lock);
    am->seq = tg->next_seq++;
    am->after = order_after(tg, view->am_order, a->op_id, am->seq);
    tg->pending++;
    opal_list_append(&tg->queue, &am->super);
    OSC_UCXX_UNLOCK(&tg->lock);
    pump(module, tg, a->target);
    return OMPI_SUCCESS;
}

/* ------------------------------------------------------------------------- */
/* Shapes (S3, S6, S25) */

/* The predefined type a datatype is built from, or NULL (mixed). */
static ompi_datatype_t *base_type(ompi_datatype_t *dt)
{
    if (ompi_datatype_is_predefined(dt)) return dt;
    return ompi_datatype_get_single_predefined_type_from_args(dt);
}

/* count elements of odt are n elements of tdt (S3), or MPI_ERR_TYPE. */
static int elements(int count, ompi_datatype_t *odt, ompi_datatype_t *tdt, int *n)
{
    size_t bytes = (size_t) count * size_of(odt), tsize = size_of(tdt);
    ompi_datatype_t *ob = base_type(odt), *tb = base_type(tdt);

    if (NULL != ob && NULL != tb && ob != tb && bytes > 0) return MPI_ERR_TYPE;
    if (0 == tsize) {
        *n = 0;
        return 0 == bytes ? MPI_SUCCESS : MPI_ERR_TYPE;
    }
    if (0 != bytes % tsize || bytes / tsize > INT32_MAX) return MPI_ERR_TYPE;
    *n = (int) (bytes / tsize);
    return MPI_SUCCESS;
}

/* Segments per invocation: am_pipeline_unit, or auto (S6). */
static int chunk_unit(ompi_osc_ucxx_view_t *view, int n, ompi_datatype_t *tin, int m,
                      ompi_datatype_t *tout)
{
    size_t need;
    if (view->am_unit > 0) return view->am_unit;
    need = chunk_need(1, n, tin, m, tout);
    if (0 == need) return INT32_MAX;   /* segments without data take no staging */
    if (need >= OSC_UCXX.am_chunk) return 1;
    return (int) (OSC_UCXX.am_chunk / need);
}

/* ------------------------------------------------------------------------- */
/* Origin-side execution (S26): the target's region and state are mapped. */

static int run_local(const uam_reg_t *reg, const ompi_osc_ucxx_am_args_t *a, int n, int m,
                     void *paddr, ompi_osc_ucxx_state_t *state, bool concurrent, int unit,
                     int *counts)
{
    ompi_datatype_t *tin = a->tin_dt, *tout = a->tout_dt;
    int k = unit < a->num_segments ? unit : a->num_segments;
    /* zero copy where the origin's layout is the target's */
    bool in_direct = a->in_dt == tin, out_direct = a->out_dt == tout && NULL == counts;
    char *in_tmp = NULL, *out_tmp = NULL;
    int *tcounts = NULL, rc = MPI_SUCCESS;

    if (!in_direct) in_tmp = malloc(span((int64_t) k * n, tin) + 1);
    if (!out_direct) out_tmp = malloc(span((int64_t) k * m, tout) + 1);
    if (NULL != counts) tcounts = malloc(k * sizeof(int));
    if ((!in_direct && NULL == in_tmp) || (!out_direct && NULL == out_tmp) ||
        (NULL != counts && NULL == tcounts)) {
        rc = MPI_ERR_NO_MEM;
    }
    for (int first = 0; MPI_SUCCESS == rc && first < a->num_segments; first += k) {
        const char *in;
        char *out;
        if (k > a->num_segments - first) k = a->num_segments - first;
        if (in_direct) {
            in = seg_ptr(a->in_addr, first, a->in_count, a->in_dt);
        } else {
            in = in_tmp - true_lb(tin);
            ompi_osc_ucxx_uam_copy_layout((char *) in, (int64_t) k * n, tin,
                                          seg_ptr(a->in_addr, first, a->in_count, a->in_dt),
                                          (int64_t) k * a->in_count, a->in_dt);
        }
        out = out_direct ? seg_ptr(a->out_addr, first, a->out_count, a->out_dt)
                         : out_tmp - true_lb(tout);
        while (!ompi_osc_ucxx_state_exec_trylock(state, concurrent)) {
            opal_progress();  /* (serves our own window's AMs meanwhile) */
        }
        rc = ompi_osc_ucxx_uam_invoke(reg, in, n, tin, paddr, a->pcount, a->p_dt, out, m, tout, k,
                                      first, tcounts);
        ompi_osc_ucxx_state_exec_unlock(state, concurrent);
        if (MPI_SUCCESS == rc && !out_direct) {
            ompi_osc_ucxx_uam_store_output(a, m, out, first, k, tcounts, counts);
        }
    }
    free(in_tmp);
    free(out_tmp);
    free(tcounts);
    return rc;
}

/* ------------------------------------------------------------------------- */
/* MPIX_Am & co.: where an AM runs, here (S26) or by the message path above */

/* mpi_win_order=true: the AM must see this thread's earlier RMA to target. */
static int order_after_rma(ompi_osc_ucxx_view_t *view, int target)
{
    ompi_osc_ucxx_worker_t *worker = ompi_osc_ucxx_view_worker(view);
    ompi_osc_ucxx_link_t *link;

    opal_atomic_wmb();   /* stores through mappings */
    if (NULL == worker || NULL == (link = ompi_osc_ucxx_link_made(view->core, worker, target))) {
        return OMPI_SUCCESS;  /* (no link: no UCX operation to complete) */
    }
    return ompi_osc_ucxx_flush_link(view->core, worker, link);
}

/* Where the AM's handler can run here: the region's address in our mapping
 * and the target's execution word, or false (send it). */
static bool local_place(ompi_osc_ucxx_view_t *view, uam_tgt_t *tg, ompi_osc_ucxx_target_t *t,
                        void **paddr, ompi_osc_ucxx_state_t **state)
{
    ompi_osc_ucxx_module_t *module = view->core;

    if (t->rank == module->rank) {
        *paddr = (void *) (uintptr_t) t->remote;
        *state = module->state;
        return true;
    }
    if (!OSC_UCXX.am_origin_compute || (view->am_order && NULL != tg && tg->pending > 0) ||
        ompi_osc_ucxx_dyn_serial(module)) {
        return false;  /* (shared region caches: the target looks the region up) */
    }
    *state = ompi_osc_ucxx_direct_state(module, t->rank);
    /* (the region mapped is enough: the rest of the window may be private) */
    if (NULL == *state || OMPI_SUCCESS != ompi_osc_ucxx_op_resolve(t, false) || !t->path.mapped) {
        return false;
    }
    *paddr = (void *) (uintptr_t) (t->remote + t->path.delta);
    return true;
}

static int issue(ompi_osc_ucxx_view_t *view, const ompi_osc_ucxx_am_args_t *a, int *counts,
                 ompi_osc_ucxx_request_t *req)
{
    ompi_osc_ucxx_module_t *module = view->core;
    ompi_osc_ucxx_uam_t *uam = module->uam;
    uam_reg_t *reg = ompi_osc_ucxx_uam_reg_by_id(uam, a->op_id), regcopy;
    ompi_osc_ucxx_target_t t;
    ompi_osc_ucxx_state_t *state;
    void *paddr;
    int n, m, rc, unit;

    if (NULL == reg || reg->kind != a->op_kind) return MPI_ERR_OP;
    regcopy = *reg;
    if (MPI_SUCCESS != (rc = elements(a->in_count, a->in_dt, a->tin_dt, &n)) ||
        MPI_SUCCESS != (rc = elements(a->out_count, a->out_dt, a->tout_dt, &m))) {
        return rc;
    }
    if (OSC_UCXX_AM_OP_AMV == a->op_kind && size_of(a->out_dt) > 0 &&
        0 != size_of(a->tout_dt) % size_of(a->out_dt)) {
        return MPI_ERR_TYPE;   /* S25: counts must convert exactly */
    }
    if (MPI_PROC_NULL == a->target) {   /* S8: some access epoch must be open */
        return ompi_osc_ucxx_epoch_any(module) ? MPI_SUCCESS : OMPI_ERR_RMA_SYNC;
    }
    rc = ompi_osc_ucxx_op_begin(view, a->target, a->pdisp, a->pcount, a->p_dt, &t);
    if (OMPI_SUCCESS != rc || 0 == a->num_segments) {
        return rc;
    }
    if (OPAL_UNLIKELY(t.peer->access & OSC_UCXX_TGT_LAZY) &&
        OMPI_SUCCESS != (rc = ompi_osc_ucxx_lazy_grant(module, t.rank))) {
        return rc;   /* (the lock first: the target runs the handler in the epoch) */
    }
    if (MPI_WIN_FLAVOR_DYNAMIC == module->flavor && t.rank == module->rank && a->pcount > 0 &&
        !ompi_osc_ucxx_dyn_contains(module, t.lo, t.hi)) {
        /* S30: dynamic ranges are late */
        late_fail(module, req, OMPI_ERR_RMA_RANGE);
        return OMPI_SUCCESS;
    }
    if (view->ordered && t.rank != module->rank &&
        OMPI_SUCCESS != (rc = order_after_rma(view, t.rank))) {
        return rc;
    }
    unit = chunk_unit(view, n, a->tin_dt, m, a->tout_dt);
    if (local_place(view, uam->tgts[t.rank], &t, &paddr, &state)) {
        rc = run_local(&regcopy, a, n, m, paddr, state, 0 != uam->concurrent, unit, counts);
        if (MPI_SUCCESS != rc) late_fail(module, req, rc);
        return OMPI_SUCCESS;
    }
    return issue_message(view, uam, reg, a, n, m, t.remote, unit, counts, req);
}

int ompi_osc_ucxx_uam_issue(struct ompi_win_t *win, const ompi_osc_ucxx_am_args_t *args,
                            int *counts, struct ompi_request_t **reqp)
{
    ompi_osc_ucxx_view_t *view = OSC_UCXX_VIEW(win);
    ompi_osc_ucxx_request_t *req = NULL;
    int rc;

    if (ompi_osc_ucxx_in_handler) return MPI_ERR_OTHER;
    if (view->memhandle) return OMPI_ERR_WIN;
    if (NULL != reqp) {
        rc = ompi_osc_ucxx_request_alloc(win, ompi_osc_ucxx_view_worker(view), &req);
        if (OMPI_SUCCESS != rc) return rc;
    }
    rc = issue(view, args, counts, req);
    if (NULL == req) {
        return rc;
    }
    if (OMPI_SUCCESS != rc) {
        ompi_osc_ucxx_request_abandon(req);
        return rc;
    }
    *reqp = &req->super;
    ompi_osc_ucxx_request_op_done(req);  /* drop the issuing reference */
    return OMPI_SUCCESS;
}

/* ------------------------------------------------------------------------- */
/* Grants (osc_ucxx_uam_pool.c has the target's side) */

/* Origin: the target answered our reservation. */
void ompi_osc_ucxx_uam_grant_arrived(ompi_osc_ucxx_module_t *module, ompi_osc_ucxx_uam_t *uam,
                                     int from, const uam_ctrl_t *c)
{
    uam_tgt_t *tg = uam->tgts[from];
    if (NULL == tg) return;
    OSC_UCXX_LOCK(&tg->lock);
    tg->resv_out = false;
    if (MPI_SUCCESS != c->status) {
        /* S21: the AM that asked (the first that fits nowhere) fails */
        uam_am_t *am;
        size_t room = tg->sys.size > tg->hint.size ? tg->sys.size : tg->hint.size;
        OPAL_LIST_FOREACH (am, &tg->queue, uam_am_t) {
            if (chunk_need(1, am->n, am->a.tin_dt, am->m, am->a.tout_dt) > room) {
                am_abort(module, tg, am, c->status);
                break;
            }
        }
    } else {
        tg->has_grant = true;
        tg->grant_id = c->grant;
        tg->grant_excl = c->all;
        ompi_osc_ucxx_space_init(&tg->grant, c->len);
    }
    OSC_UCXX_UNLOCK(&tg->lock);
    pump(module, tg, from);
}
