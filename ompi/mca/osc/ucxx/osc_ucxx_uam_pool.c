/*
 * Copyright (c) 2026 The osc/ucxx authors. All rights reserved.
 * $COPYRIGHT$
 *
 * User active messages: the target's user buffers (MPIX_Am_buffer_attach,
 * S19, S20), where a chunk's staging lies at the target, and the grant
 * service.
 *
 * User buffers (pool, per window at the target).  RESV requests are served
 * FIFO across origins: the largest free range >= one segment, capped by what
 * the origin wants and osc_ucxx_am_grant_max (uncapped for an origin holding
 * an exclusive lock, osc_ucxx_am_exclusive_detect).  A pool smaller than one
 * segment answers MPI_ERR_BUFFER.  An origin gives a grant back when it has
 * nothing more to send to that target (exclusive holders: at unlock, and at
 * each flush when am_buf_interleave_am_detach=true).  Detach waits until no
 * grant and no staged chunk lies in the buffer.
 */

#include "ompi_config.h"

#include "osc_ucxx_uam_internal.h"
#include "osc_ucxx_dynamic.h"

void ompi_osc_ucxx_uam_send_ctrl(ompi_osc_ucxx_module_t *module, int to, uam_ctrl_t c)
{
    uam_ctrl_t *msg = malloc(sizeof(*msg));
    if (NULL == msg) return;
    c.h.cid = module->cid;
    c.h.from = module->rank;
    *msg = c;
    (void) ompi_osc_ucxx_am_send(module, OSC_UCXX.main_worker, to, OSC_UCXX_AM_UAM_CTRL, msg,
                                 sizeof(*msg), sizeof(*msg));
}

/* ------------------------------------------------------------------------- */
/* Staging places */

static int grant_find(ompi_osc_ucxx_uam_t *uam, uint32_t id, int origin)
{
    for (int i = 0; i < uam->ngrants; ++i) {
        if (uam->grants[i].id == id && uam->grants[i].origin == origin) return i;
    }
    return -1;
}

/* Carve an origin's hinted portion at first contact (uam->lock held, S24). */
static void hint_carve(ompi_osc_ucxx_uam_t *uam, uam_org_t *org, size_t bytes)
{
    size_t off = 0;
    org->hint_tried = true;
    for (int b = 0; b < uam->nbufs; ++b) {
        if (ompi_osc_ucxx_space_largest(&uam->bufs[b].space, &off) >= bytes) {
            ompi_osc_ucxx_space_take(&uam->bufs[b].space, off, bytes);
            org->hint = uam->bufs[b].base + off;
            org->hint_len = bytes;
            org->hint_buf = b;
            uam->bufs[b].users++;
            return;
        }
    }
}

/* Where a chunk's staging lies (input, then output at +a64(in_len)); pins
 * the user buffer it is in.  MPI_ERR_BUFFER if the place is not there. */
int ompi_osc_ucxx_uam_stage_place(ompi_osc_ucxx_module_t *module, ompi_osc_ucxx_uam_t *uam,
                                  int from, const uam_data_t *d, char **place, int *buf)
{
    uam_org_t *org = ompi_osc_ucxx_uam_org(module, uam, from);
    size_t need = a64(d->in_len) + d->out_len;
    int rc = MPI_ERR_BUFFER;

    *buf = -1;
    if (NULL == org) return MPI_ERR_NO_MEM;
    OSC_UCXX_LOCK(&uam->lock);
    if (W_NONE == d->where && 0 == need) {
        *place = NULL;
        rc = MPI_SUCCESS;
    } else if (W_SYS == d->where) {
        if (NULL == org->sys && OSC_UCXX.am_sysbuf > 0 &&
            0 != posix_memalign((void **) &org->sys, 64, OSC_UCXX.am_sysbuf)) {
            org->sys = NULL;
        }
        if (NULL != org->sys && d->offset + need <= OSC_UCXX.am_sysbuf) {
            *place = org->sys + d->offset;
            rc = MPI_SUCCESS;
        }
    } else if (W_HINT == d->where) {
        if (!org->hint_tried) hint_carve(uam, org, d->hint);
        if (NULL != org->hint && d->offset + need <= org->hint_len) {
            *place = org->hint + d->offset;
            *buf = org->hint_buf;
            rc = MPI_SUCCESS;
        }
    } else if (W_GRANT == d->where) {
        int g = grant_find(uam, d->grant, from);
        if (g >= 0 && d->offset + need <= uam->grants[g].len) {
            *buf = uam->grants[g].buf;
            *place = uam->bufs[*buf].base + uam->grants[g].off + d->offset;
            rc = MPI_SUCCESS;
        }
    }
    if (*buf >= 0) uam->bufs[*buf].users++;
    OSC_UCXX_UNLOCK(&uam->lock);
    return rc;
}

/* Unpin a user buffer a chunk was staged in. */
void ompi_osc_ucxx_uam_stage_unpin(ompi_osc_ucxx_uam_t *uam, int buf)
{
    if (buf < 0) return;
    OSC_UCXX_LOCK(&uam->lock);
    uam->bufs[buf].users--;
    OSC_UCXX_UNLOCK(&uam->lock);
}

/* ------------------------------------------------------------------------- */
/* The grant service: RESV served FIFO, GRANT, RELEASE */

/* Attached bytes minus hinted portions: what RESV may ever get (S21). */
static size_t pool_capacity(ompi_osc_ucxx_uam_t *uam)
{
    size_t cap = 0;
    for (int b = 0; b < uam->nbufs; ++b) cap += uam->bufs[b].space.size;
    return cap;
}

static size_t pool_hinted(ompi_osc_ucxx_module_t *module, ompi_osc_ucxx_uam_t *uam)
{
    size_t hinted = 0;
    for (int i = 0; i < module->size; ++i) {
        if (NULL != uam->orgs[i] && NULL != uam->orgs[i]->hint) hinted += uam->orgs[i]->hint_len;
    }
    return hinted;
}

static bool pool_next(ompi_osc_ucxx_module_t *module, ompi_osc_ucxx_uam_t *uam, uam_ctrl_t *out_r,
                      uam_ctrl_t *out_g);

/* Serve waiting reservations, oldest first; the head waits for frees or
 * attaches when nothing large enough is free. */
static void pool_serve(ompi_osc_ucxx_module_t *module, ompi_osc_ucxx_uam_t *uam)
{
    /* (answers are sent after the lock is dropped: callbacks take it, and a
     * send may wait for the UCX worker lock a callback holds) */
    for (;;) {
        uam_ctrl_t r, g;
        if (!pool_next(module, uam, &r, &g)) return;
        ompi_osc_ucxx_uam_send_ctrl(module, r.h.from, g);
    }
}

/* The answer to the oldest waiting reservation, if it can be given now. */
static bool pool_next(ompi_osc_ucxx_module_t *module, ompi_osc_ucxx_uam_t *uam, uam_ctrl_t *out_r,
                      uam_ctrl_t *out_g)
{
    bool answered = false;
    OSC_UCXX_LOCK(&uam->lock);
    while (uam->nfifo > 0) {
        uam_ctrl_t r = uam->fifo[0];
        uam_ctrl_t g = {.type = C_GRANT, .status = MPI_SUCCESS};
        size_t best = 0, off = 0, len;
        int bb = -1;

        if (pool_capacity(uam) - pool_hinted(module, uam) < r.min) {
            g.status = MPI_ERR_BUFFER;
        } else {
            for (int b = 0; b < uam->nbufs; ++b) {
                size_t o = 0, l = ompi_osc_ucxx_space_largest(&uam->bufs[b].space, &o);
                if (l > best) best = l, off = o, bb = b;
            }
            if (best < r.min) break;   /* wait */
            /* (ranges are multiples of 64 bytes, and so are want and min) */
            len = r.all ? best : (r.want > r.min ? r.want : r.min);
            if (!r.all && len > OSC_UCXX.am_grant_max) {
                len = OSC_UCXX.am_grant_max & ~(size_t) 63;
                if (len < r.min) len = r.min;
            }
            if (len > best) len = best;
            if (uam->ngrants == uam->capgrants) {
                int cap = uam->capgrants ? 2 * uam->capgrants : 8;
                void *grown = realloc(uam->grants, cap * sizeof(*uam->grants));
                if (NULL == grown) break;
                uam->grants = grown;
                uam->capgrants = cap;
            }
            ompi_osc_ucxx_space_take(&uam->bufs[bb].space, off, len);
            uam->bufs[bb].users++;
            g.grant = uam->next_grant++;
            g.len = len;
            uam->grants[uam->ngrants++] = (uam_grant_t){g.grant, r.h.from, bb, off, g.len};
        }
        memmove(&uam->fifo[0], &uam->fifo[1], --uam->nfifo * sizeof(*uam->fifo));
        *out_r = r;
        *out_g = g;
        answered = true;
        break;
    }
    OSC_UCXX_UNLOCK(&uam->lock);
    return answered;
}

void ompi_osc_ucxx_uam_pool_release(ompi_osc_ucxx_module_t *module, ompi_osc_ucxx_uam_t *uam,
                                    int from, uint32_t id)
{
    OSC_UCXX_LOCK(&uam->lock);
    int g = grant_find(uam, id, from);
    if (g >= 0) {
        uam_grant_t gr = uam->grants[g];
        ompi_osc_ucxx_space_free(&uam->bufs[gr.buf].space, gr.off, gr.len);
        uam->bufs[gr.buf].users--;
        uam->grants[g] = uam->grants[--uam->ngrants];
    }
    OSC_UCXX_UNLOCK(&uam->lock);
    pool_serve(module, uam);
}

void ompi_osc_ucxx_uam_pool_request(ompi_osc_ucxx_module_t *module, ompi_osc_ucxx_uam_t *uam,
                                    const uam_ctrl_t *c)
{
    OSC_UCXX_LOCK(&uam->lock);
    if (uam->nfifo == uam->capfifo) {
        int cap = uam->capfifo ? 2 * uam->capfifo : 8;
        void *grown = realloc(uam->fifo, cap * sizeof(*uam->fifo));
        if (NULL == grown) {
            OSC_UCXX_UNLOCK(&uam->lock);
            return;
        }
        uam->fifo = grown;
        uam->capfifo = cap;
    }
    uam->fifo[uam->nfifo++] = *c;
    uam->fifo[uam->nfifo - 1].all = c->all && OSC_UCXX.am_exclusive_detect;
    OSC_UCXX_UNLOCK(&uam->lock);
    pool_serve(module, uam);
}

/* ------------------------------------------------------------------------- */
/* Buffers (S19, S20) */

static bool overlaps(const char *a, size_t alen, const char *b, size_t blen)
{
    return alen > 0 && blen > 0 && a < b + blen && b < a + alen;
}

static int buf_find(ompi_osc_ucxx_uam_t *uam, void *buffer)
{
    for (int b = 0; b < uam->nbufs; ++b) {
        if (uam->bufs[b].base == buffer) return b;
    }
    return -1;
}

int ompi_osc_ucxx_uam_attach(struct ompi_win_t *win, void *buffer, size_t size)
{
    ompi_osc_ucxx_view_t *view = OSC_UCXX_VIEW(win);
    ompi_osc_ucxx_module_t *module = view->core;
    ompi_osc_ucxx_uam_t *uam;
    int rc = MPI_SUCCESS;

    if (ompi_osc_ucxx_in_handler) return MPI_ERR_OTHER;
    if (view->memhandle) return OMPI_ERR_WIN;
    if (0 == size) return MPI_SUCCESS;
    if (NULL == (uam = ompi_osc_ucxx_uam_get(module))) return MPI_ERR_NO_MEM;
    if (overlaps(buffer, size, module->base, module->len) ||
        (MPI_WIN_FLAVOR_DYNAMIC == module->flavor &&
         (ompi_osc_ucxx_dyn_contains(module, (uint64_t) (uintptr_t) buffer,
                                     (uint64_t) (uintptr_t) buffer + 1) ||
          ompi_osc_ucxx_dyn_contains(module, (uint64_t) (uintptr_t) buffer + size - 1,
                                     (uint64_t) (uintptr_t) buffer + size)))) {
        return MPI_ERR_ARG;   /* the window's own memory */
    }
    OSC_UCXX_LOCK(&uam->lock);
    for (int b = 0; b < uam->nbufs; ++b) {
        if (overlaps(buffer, size, uam->bufs[b].base, uam->bufs[b].size)) rc = MPI_ERR_ARG;
    }
    int slot = buf_find(uam, NULL);   /* an emptied slot */
    if (MPI_SUCCESS == rc && slot < 0 && uam->nbufs == uam->capbufs) {
        int cap = uam->capbufs ? 2 * uam->capbufs : 4;
        void *grown = realloc(uam->bufs, cap * sizeof(*uam->bufs));
        if (NULL == grown) {
            rc = MPI_ERR_NO_MEM;
        } else {
            uam->bufs = grown;
            uam->capbufs = cap;
        }
    }
    if (MPI_SUCCESS == rc) {
        uam_buf_t *b = &uam->bufs[slot >= 0 ? slot : uam->nbufs++];
        memset(b, 0, sizeof(*b));
        b->base = buffer;
        b->size = size;
        ompi_osc_ucxx_space_init(&b->space,
                                 size & ~(size_t) 63);   /* staging takes 64-byte granules */
    }
    OSC_UCXX_UNLOCK(&uam->lock);
    if (MPI_SUCCESS == rc) pool_serve(module, uam);   /* reservations waiting for it */
    return rc;
}

/* Hinted portions in buffer b count one user each and are dropped by the
 * detach; grants and staged chunks are waited for. */
static int32_t buf_hints(ompi_osc_ucxx_module_t *module, ompi_osc_ucxx_uam_t *uam, int b)
{
    int32_t n = 0;
    for (int i = 0; i < module->size; ++i) {
        if (NULL != uam->orgs[i] && NULL != uam->orgs[i]->hint && uam->orgs[i]->hint_buf == b) {
            n++;
        }
    }
    return n;
}

int ompi_osc_ucxx_uam_detach(struct ompi_win_t *win, void *buffer)
{
    ompi_osc_ucxx_view_t *view = OSC_UCXX_VIEW(win);
    ompi_osc_ucxx_module_t *module = view->core;
    ompi_osc_ucxx_uam_t *uam = module->uam;
    int b;

    if (ompi_osc_ucxx_in_handler) return MPI_ERR_OTHER;
    if (view->memhandle) return OMPI_ERR_WIN;
    if (NULL == uam) return MPI_ERR_ARG;
    for (;;) {
        OSC_UCXX_LOCK(&uam->lock);
        b = buf_find(uam, buffer);
        if (b < 0) {
            OSC_UCXX_UNLOCK(&uam->lock);
            return MPI_ERR_ARG;   /* not an attached base */
        }
        if (uam->bufs[b].users == buf_hints(module, uam, b)) break;
        OSC_UCXX_UNLOCK(&uam->lock);
        opal_progress();   /* grants come back, staged chunks run */
    }
    for (int i = 0; i < module->size; ++i) {
        uam_org_t *org = uam->orgs[i];
        if (NULL != org && org->hint_buf == b) org->hint = NULL;   /* (S24 broken) */
    }
    /* the slot stays (empty): staged chunks name buffers by index */
    ompi_osc_ucxx_space_fini(&uam->bufs[b].space);
    memset(&uam->bufs[b], 0, sizeof(uam->bufs[b]));
    OSC_UCXX_UNLOCK(&uam->lock);
    return MPI_SUCCESS;
}
