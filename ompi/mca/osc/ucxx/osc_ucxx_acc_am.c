/*
 * Copyright (c) 2026 The osc/ucxx authors. All rights reserved.
 * $COPYRIGHT$
 *
 * Accumulates carried by active messages: the path where the origin cannot
 * map the target memory (another node, UCX_TLS without shared memory, user
 * memory UCX only emulates).  The target applies them in bulk, under the
 * same exclusion as every other accumulate on its memory.
 *
 * Origin.  The operation is cut into chunks of at most osc_ucxx_acc_am_chunk
 * bytes of values.  A chunk is one message: a header, the target runs it
 * covers (window offset and element count; consecutive elements are one
 * run), then the origin's values laid out as an array of the element (for
 * compare-and-swap: new value, then compare value).  At most
 * osc_ucxx_acc_am_inflight chunks of one operation are unacknowledged at a
 * time, so neither end holds a copy proportional to the operation.
 *
 * Target.  The handler checks the runs against the window (or the attached
 * regions), takes the exclusion over the chunk's span without waiting (else
 * the message is queued and retried outside the callback, later
 * accumulates for the window queueing behind it: osc_ucxx_am.c), applies
 * each run with ompi_op_reduce, releases, and answers with the old values
 * when fetching, or with the reason it refused.
 *
 * Acknowledgement.  Each chunk is answered; the origin's record of the
 * operation completes (request, flush count) when the last answer is in.
 * Old values go back into the result layout in chunk order: directly where
 * that layout is one run, else by a walk that carries on from the previous
 * chunk (replies arrive in the order the chunks were applied).
 */

#include "ompi_config.h"

#include "ompi/errhandler/errcode-internal.h"

#include "osc_ucxx_request.h"
#include "osc_ucxx_am.h"
#include "osc_ucxx_dynamic.h"
#include "osc_ucxx_acc.h"
#include "osc_ucxx.h"

#define ACC_AM_FETCH  0x1
#define ACC_AM_CAS    0x2
#define ACC_AM_INLINE 1024   /* larger replies are built outside the UCX callback */

typedef struct {
    ompi_osc_ucxx_am_hdr_t base;
    uint64_t token;        /* the origin's acc_pending_t */
    uint64_t first;        /* index of this chunk's first element */
    uint32_t nelem;
    uint32_t nruns;
    int32_t op;            /* Fortran index of the op (unused for compare-and-swap) */
    int32_t dt;            /* Fortran index of the element type */
    uint32_t flags;
    int32_t status;        /* reply: OMPI_SUCCESS, or why the target refused */
} acc_am_hdr_t;

typedef struct {
    uint64_t offset;       /* from the window base */
    uint64_t count;        /* consecutive elements */
} acc_am_run_t;

/* The origin's record of an operation in flight. */
typedef struct {
    ompi_osc_ucxx_module_t *module;
    ompi_osc_ucxx_acc_t a;         /* element geometry (a.t is gone once issued) */
    void *result_addr;
    int result_count;
    ompi_datatype_t *result_dt;
    ompi_osc_ucxx_runs_t results;  /* where the next chunk's old values go */
    uint64_t next;                 /* ... the index of its first element */
    volatile int32_t chunks;       /* unacknowledged chunks, +1 while still sending */
    bool fetching;                 /* its answers carry values (module->am_fetching) */
    uint32_t era;                  /* module->am_era_left's slot */
    ompi_osc_ucxx_request_t *req;
} acc_pending_t;

/* ------------------------------------------------------------------------- */
/* Origin: answers */

static void pending_chunk_done(acc_pending_t *p)
{
    if (0 != opal_atomic_add_fetch_32(&p->chunks, -1)) return;
    if (NULL != p->result_dt) {
        ompi_osc_ucxx_runs_fini(&p->results);
        ompi_osc_ucxx_dt_release(p->result_dt);
    }
    if (NULL != p->req) ompi_osc_ucxx_request_op_done(p->req);
    if (p->fetching) ompi_osc_ucxx_add32(&p->module->am_fetching, -1);
    ompi_osc_ucxx_add32(&p->module->am_era_left[p->era], -1);
    ompi_osc_ucxx_add32(&p->module->am_outstanding, -1);
    free(p);
}

/* Store n old values (an array of the element) as elements first.. of the
 * result layout. */
static void scatter_result(acc_pending_t *p, uint64_t first, uint64_t n, const char *vals)
{
    char *rp;
    size_t k;

    if (first != p->next) {
        /* out of order (never expected): walk again from the start */
        ompi_osc_ucxx_runs_fini(&p->results);
        ompi_osc_ucxx_runs_init(&p->results, &p->a, p->result_addr, p->result_count,
                                p->result_dt);
        for (p->next = 0; p->next < first; p->next += k) {
            if (0 == (k = ompi_osc_ucxx_runs_peek(&p->results, &rp))) return;
            k = ompi_osc_ucxx_min(k, first - p->next);
            ompi_osc_ucxx_runs_skip(&p->results, k);
        }
    }
    while (n > 0 && 0 != (k = ompi_osc_ucxx_runs_peek(&p->results, &rp))) {
        k = ompi_osc_ucxx_min(k, n);
        ompi_osc_ucxx_acc_copy(&p->a, rp, vals, k);
        ompi_osc_ucxx_runs_skip(&p->results, k);
        vals += k * p->a.ext;
        n -= k;
        p->next += k;
    }
}

static int acc_reply_handler(ompi_osc_ucxx_module_t *module, int from, void *buf, size_t len,
                             bool deferred)
{
    acc_am_hdr_t *hdr = (acc_am_hdr_t *) buf;
    acc_pending_t *p = (acc_pending_t *) (uintptr_t) hdr->token;

    if (OMPI_SUCCESS != hdr->status) {
        int32_t none = OMPI_SUCCESS;
        (void) opal_atomic_compare_exchange_strong_32(&module->am_error, &none, hdr->status);
        if (NULL != p->req) {
            ompi_osc_ucxx_request_fail(p->req, ompi_errcode_get_mpi_code(hdr->status));
        }
    } else if ((hdr->flags & ACC_AM_FETCH) && NULL != p->result_dt) {
        scatter_result(p, hdr->first, hdr->nelem, (char *) (hdr + 1));
    }
    pending_chunk_done(p);
    return OMPI_SUCCESS;
}

/* ------------------------------------------------------------------------- */
/* Target */

/* The element types and ops messages name (by Fortran index): predefined
 * ones only, as accumulates take no other, copied at init.  Handlers may
 * run on the progress thread, and below MPI_THREAD_MULTIPLE Open MPI's
 * tables are not locked while the application adds types or ops to them
 * (which may move the table). */
#define ACC_AM_TYPES 256
#define ACC_AM_OPS 64
static ompi_datatype_t *acc_types[ACC_AM_TYPES];
static ompi_op_t *acc_ops[ACC_AM_OPS];

static void acc_names_init(void)
{
    int n = opal_pointer_array_get_size(&ompi_datatype_f_to_c_table);
    for (int i = 0; i < n && i < ACC_AM_TYPES; ++i) {
        ompi_datatype_t *dt = opal_pointer_array_get_item(&ompi_datatype_f_to_c_table, i);
        acc_types[i] = NULL != dt && ompi_datatype_is_predefined(dt) ? dt : NULL;
    }
    n = opal_pointer_array_get_size(ompi_op_f_to_c_table);
    for (int i = 0; i < n && i < ACC_AM_OPS; ++i) {
        ompi_op_t *op = opal_pointer_array_get_item(ompi_op_f_to_c_table, i);
        acc_ops[i] = NULL != op && ompi_op_is_intrinsic(op) ? op : NULL;
    }
}

/* The element type and op a message names. */
static int acc_decode(const acc_am_hdr_t *hdr, ompi_osc_ucxx_acc_t *a)
{
    if (hdr->dt < 0 || hdr->dt >= ACC_AM_TYPES || NULL == (a->elem = acc_types[hdr->dt])) {
        return MPI_ERR_TYPE;
    }
    if (hdr->flags & ACC_AM_CAS) {
        a->op = &ompi_mpi_op_replace.op;
    } else if (hdr->op < 0 || hdr->op >= ACC_AM_OPS || NULL == (a->op = acc_ops[hdr->op])) {
        return MPI_ERR_OP;
    }
    ompi_osc_ucxx_acc_geometry(a);
    return OMPI_SUCCESS;
}

/* [lo, hi): the window bytes the message's runs touch, which must be in
 * the window (or attached regions).  The origin checked; never trust
 * blindly (a region may be gone since). */
static int acc_check(ompi_osc_ucxx_module_t *module, const ompi_osc_ucxx_acc_t *a,
                     const acc_am_hdr_t *hdr, const acc_am_run_t *runs, uint64_t *lo,
                     uint64_t *hi)
{
    *lo = UINT64_MAX;
    *hi = 0;
    for (uint32_t r = 0; r < hdr->nruns; ++r) {
        uint64_t end;
        if (0 == runs[r].count) return OMPI_ERR_RMA_RANGE;
        end = runs[r].offset + (runs[r].count - 1) * a->ext + a->width;
        if (end < runs[r].offset) return OMPI_ERR_RMA_RANGE;
        if (runs[r].offset < *lo) *lo = runs[r].offset;
        if (end > *hi) *hi = end;
    }
    if (MPI_WIN_FLAVOR_DYNAMIC == module->flavor ? !ompi_osc_ucxx_dyn_contains(module, *lo, *hi)
                                                 : *hi > module->len) {
        return OMPI_ERR_RMA_RANGE;
    }
    return OMPI_SUCCESS;
}

/* Apply the message's runs (the caller holds the exclusion); old values
 * into `old` when fetching. */
static void acc_apply(ompi_osc_ucxx_module_t *module, const ompi_osc_ucxx_acc_t *a,
                      const acc_am_hdr_t *hdr, const acc_am_run_t *runs, const char *vals,
                      char *old)
{
    bool cas = hdr->flags & ACC_AM_CAS;
    bool have_vals = !ompi_osc_ucxx_is_no_op(a->op);

    for (uint32_t r = 0; r < hdr->nruns; ++r) {
        char *tgt = (char *) module->base + runs[r].offset;
        size_t n = runs[r].count;
        if (cas) {
            /* one element: new value, then the compare value */
            ompi_osc_ucxx_acc_copy(a, old, tgt, 1);
            if (0 == memcmp(tgt, vals + a->ext, a->esize)) ompi_osc_ucxx_acc_copy(a, tgt, vals, 1);
            return;
        }
        ompi_osc_ucxx_acc_run(a, tgt, have_vals ? vals : NULL, old, n);
        if (have_vals) vals += n * a->ext;
        if (NULL != old) old += n * a->ext;
    }
}

/* Values at an address the element's own code can load from: UCX places
 * the payload where its headers leave it. */
static const char *aligned_vals(const ompi_osc_ucxx_acc_t *a, const char *vals, size_t len,
                                char **copy)
{
    size_t align = a->ext >= 16 ? 16 : a->ext;
    *copy = NULL;
    if (0 == len || 0 == ((uintptr_t) vals & (align - 1))) return vals;
    if (0 != posix_memalign((void **) copy, 16, len)) return NULL;
    memcpy(*copy, vals, len);
    return *copy;
}

static int acc_handler(ompi_osc_ucxx_module_t *module, int from, void *buf, size_t len,
                       bool deferred)
{
    acc_am_hdr_t *hdr = (acc_am_hdr_t *) buf, *reply;
    acc_am_run_t *runs = (acc_am_run_t *) (hdr + 1);
    const char *vals = (const char *) (runs + hdr->nruns);
    bool fetch = hdr->flags & ACC_AM_FETCH;
    ompi_osc_ucxx_acc_t a = {.fetch = fetch};
    char *copy = NULL;
    uint64_t lo = 0, hi = 0;
    uint32_t mask = 0;
    size_t rlen;
    int status, rc;

    status = acc_decode(hdr, &a);
    if (OMPI_SUCCESS == status) status = acc_check(module, &a, hdr, runs, &lo, &hi);
    if (OMPI_SUCCESS == status && fetch && !deferred && hdr->nelem * a.ext > ACC_AM_INLINE) {
        /* a reply this large is built where it can be sent as it is: one
         * copy of the message in, none of the reply out */
        return OMPI_ERR_WOULD_BLOCK;
    }
    if (OMPI_SUCCESS != status) {
        OSC_UCXX_VERBOSE(1, "accumulate from %d refused: %d", from, status);
        fetch = false;
    } else {
        mask = ompi_osc_ucxx_stripe_mask(module->acc_shift, lo, hi);
        if (!ompi_osc_ucxx_stripes_trylock(module->state, mask)) return OMPI_ERR_WOULD_BLOCK;
    }

    rlen = sizeof(*hdr) + (fetch ? (size_t) hdr->nelem * a.ext : 0);
    reply = malloc(rlen);
    vals = OMPI_SUCCESS == status ? aligned_vals(&a, vals, len - (size_t) (vals - (char *) buf),
                                                 &copy)
                                  : vals;
    if (NULL == reply || NULL == vals) {
        if (mask) ompi_osc_ucxx_stripes_unlock(module->state, mask);
        free(reply);
        return OMPI_ERR_WOULD_BLOCK;
    }
    *reply = *hdr;
    reply->base.from = module->rank;
    reply->status = status;
    reply->flags = fetch ? reply->flags : reply->flags & ~ACC_AM_FETCH;
    if (OMPI_SUCCESS == status) {
        acc_apply(module, &a, hdr, runs, vals, fetch ? (char *) (reply + 1) : NULL);
        opal_atomic_wmb();
        ompi_osc_ucxx_stripes_unlock(module->state, mask);
        if (0 == hdr->first && 1 == hdr->nelem) {   /* a single element's operation */
            ompi_osc_ucxx_audit(module, module->rank, OSC_UCXX_AUDIT_DATA, runs[0].offset,
                                OSC_UCXX_AUDIT_STRIPE);
        }
    }
    free(copy);

    if (deferred) {
        /* outside callbacks: the reply goes as it is (freed once sent) */
        return ompi_osc_ucxx_am_send(module, OSC_UCXX.main_worker, from, OSC_UCXX_AM_ACC_REPLY,
                                     reply, sizeof(*hdr), rlen);
    }
    rc = ompi_osc_ucxx_am_reply(module, from, OSC_UCXX_AM_ACC_REPLY, reply, sizeof(*hdr), rlen,
                                false);
    free(reply);
    return rc;
}

/* One accumulate-family operation another message carries (a lock
 * request's epoch, osc_ucxx_lockq.c), checked and applied as the chunks
 * above: `len` bytes of elements of type `dt` at window offset `offset`
 * (Fortran indices of the type and the op; `cas`: the values are the new
 * one, then the compare value), old values into `old` if not NULL.
 * OMPI_ERR_WOULD_BLOCK: a stripe is taken, try again later. */
int ompi_osc_ucxx_acc_am_apply(ompi_osc_ucxx_module_t *module, int32_t dt, int32_t op, bool cas,
                               uint64_t offset, size_t len, const char *vals, char *old)
{
    struct {
        acc_am_hdr_t hdr;
        acc_am_run_t run;
    } m;
    ompi_osc_ucxx_acc_t a = {.fetch = NULL != old};
    uint64_t lo, hi;
    uint32_t mask;
    char *copy = NULL;
    int status;

    memset(&m, 0, sizeof(m));
    m.hdr.dt = dt;
    m.hdr.op = op;
    m.hdr.flags = (cas ? ACC_AM_CAS : 0) | (NULL != old ? ACC_AM_FETCH : 0);
    m.hdr.nruns = 1;
    status = acc_decode(&m.hdr, &a);
    if (OMPI_SUCCESS != status) return status;
    if (0 == a.ext || 0 != len % a.ext || (cas && (len != a.ext || NULL == old))) {
        return MPI_ERR_TYPE;
    }
    m.run = (acc_am_run_t){.offset = offset, .count = len / a.ext};
    m.hdr.nelem = (uint32_t) m.run.count;
    status = acc_check(module, &a, &m.hdr, &m.run, &lo, &hi);
    if (OMPI_SUCCESS != status) return status;
    if (!ompi_osc_ucxx_is_no_op(a.op) &&
        NULL == (vals = aligned_vals(&a, vals, (cas ? 2 : 1) * len, &copy))) {
        return OMPI_ERR_WOULD_BLOCK;  /* (no memory for the copy now) */
    }
    mask = ompi_osc_ucxx_stripe_mask(module->acc_shift, lo, hi);
    if (!ompi_osc_ucxx_stripes_trylock(module->state, mask)) {
        free(copy);
        return OMPI_ERR_WOULD_BLOCK;
    }
    acc_apply(module, &a, &m.hdr, &m.run, vals, old);
    opal_atomic_wmb();
    ompi_osc_ucxx_stripes_unlock(module->state, mask);
    if (1 == m.run.count) {
        ompi_osc_ucxx_audit(module, module->rank, OSC_UCXX_AUDIT_DATA, offset,
                            OSC_UCXX_AUDIT_STRIPE);
    }
    free(copy);
    return OMPI_SUCCESS;
}

/* Accumulates apply in the order their origin sent them
 * (accumulate_ordering), and the origin waits for the reply. */
void ompi_osc_ucxx_acc_am_init(void)
{
    acc_names_init();
    ompi_osc_ucxx_am_define(OSC_UCXX_AM_ACC, acc_handler, NULL,
                            OSC_UCXX_AM_SERVED | OSC_UCXX_AM_IN_ORDER);
    ompi_osc_ucxx_am_set_handler(OSC_UCXX_AM_ACC_REPLY, acc_reply_handler);
}

/* ------------------------------------------------------------------------- */
/* Origin: chunks */

typedef struct {
    acc_am_hdr_t *hdr;
    acc_am_run_t *runs;
    char *vals;              /* values, moved behind the runs when sent */
    size_t per_elem;         /* value bytes per element */
    size_t cap_elems, cap_runs;
} acc_msg_t;

static acc_pending_t *pending_new(ompi_osc_ucxx_acc_t *a, void *result_addr, int result_count,
                                  ompi_datatype_t *result_dt)
{
    acc_pending_t *p = calloc(1, sizeof(*p));
    if (NULL == p) return NULL;
    p->module = a->t->module;
    p->a = *a;
    p->a.t = NULL;
    p->chunks = 1;
    if (a->fetch) {
        p->result_addr = result_addr;
        p->result_count = result_count;
        p->result_dt = result_dt;
        ompi_osc_ucxx_dt_retain(result_dt);
        ompi_osc_ucxx_runs_init(&p->results, a, result_addr, result_count, result_dt);
    }
    if (NULL != a->req) {
        p->req = a->req;
        ompi_osc_ucxx_request_more(a->req);
    }
    p->fetching = a->fetch || NULL != result_addr;
    if (p->fetching) ompi_osc_ucxx_add32(&p->module->am_fetching, 1);
    p->era = p->module->am_era & 1;
    ompi_osc_ucxx_add32(&p->module->am_era_left[p->era], 1);
    ompi_osc_ucxx_add32(&p->module->am_outstanding, 1);
    return p;
}

/* A message for at most `left` more elements. */
static int msg_new(acc_msg_t *m, ompi_osc_ucxx_acc_t *a, acc_pending_t *p, uint64_t first,
                   uint32_t flags, uint64_t left)
{
    /* values out, or old values back (NO_OP sends none): a chunk either way */
    size_t unit = 0 == m->per_elem ? a->ext : m->per_elem;
    size_t chunk = OSC_UCXX.acc_am_chunk > unit ? OSC_UCXX.acc_am_chunk : unit;
    m->cap_elems = ompi_osc_ucxx_min(chunk / unit, left);
    m->cap_runs = ompi_osc_ucxx_min(chunk / sizeof(acc_am_run_t) + 1, m->cap_elems);
    m->hdr = malloc(sizeof(acc_am_hdr_t) + m->cap_runs * sizeof(acc_am_run_t) +
                    m->cap_elems * m->per_elem);
    if (NULL == m->hdr) return OMPI_ERR_OUT_OF_RESOURCE;
    memset(m->hdr, 0, sizeof(*m->hdr));
    m->hdr->base.cid = a->t->module->cid;
    m->hdr->base.from = a->t->module->rank;
    m->hdr->token = (uint64_t) (uintptr_t) p;
    m->hdr->first = first;
    m->hdr->op = (flags & ACC_AM_CAS) ? -1 : a->op->o_f_to_c_index;
    m->hdr->dt = a->elem->d_f_to_c_index;
    m->hdr->flags = flags;
    m->runs = (acc_am_run_t *) (m->hdr + 1);
    m->vals = (char *) (m->runs + m->cap_runs);
    return OMPI_SUCCESS;
}

/* Values go right behind the runs, then the message is sent (the buffer is
 * UCX's until sent). */
static int msg_send(acc_msg_t *m, ompi_osc_ucxx_acc_t *a, acc_pending_t *p)
{
    size_t runs_len = m->hdr->nruns * sizeof(acc_am_run_t);
    size_t vals_len = m->hdr->nelem * m->per_elem;
    int rc;

    memmove((char *) m->runs + runs_len, m->vals, vals_len);
    opal_atomic_add_fetch_32(&p->chunks, 1);
    rc = ompi_osc_ucxx_am_send(a->t->module, a->t->worker, a->t->rank, OSC_UCXX_AM_ACC, m->hdr,
                               sizeof(acc_am_hdr_t), sizeof(acc_am_hdr_t) + runs_len + vals_len);
    if (OMPI_SUCCESS != rc) opal_atomic_add_fetch_32(&p->chunks, -1);
    m->hdr = NULL;
    return rc;
}

/* n elements at window offset `off` join the message's last run or start one. */
static void msg_add_run(acc_msg_t *m, uint64_t off, size_t n, size_t ext)
{
    acc_am_run_t *run = m->hdr->nruns ? &m->runs[m->hdr->nruns - 1] : NULL;
    if (NULL != run && run->offset + run->count * ext == off) {
        run->count += n;
    } else {
        m->runs[m->hdr->nruns++] = (acc_am_run_t){.offset = off, .count = n};
    }
    m->hdr->nelem += (uint32_t) n;
}

/* Keep at most osc_ucxx_acc_am_inflight chunks of `p` unanswered. */
static void wait_inflight(acc_pending_t *p)
{
    while (p->chunks > OSC_UCXX.acc_am_inflight) {
        opal_progress();
    }
}

int ompi_osc_ucxx_acc_am(ompi_osc_ucxx_acc_t *a, void *origin_addr, int origin_count,
                         ompi_datatype_t *origin_dt, const void *compare_addr,
                         void *result_addr, int result_count, ompi_datatype_t *result_dt,
                         int target_count, ompi_datatype_t *target_dt)
{
    bool cas = NULL != compare_addr;
    bool have_origin = !ompi_osc_ucxx_is_no_op(a->op) && NULL != origin_dt;
    uint32_t flags = (a->fetch ? ACC_AM_FETCH : 0) | (cas ? ACC_AM_CAS : 0);
    uint64_t base = ompi_osc_ucxx_peer_base(a->t->module, a->t->rank), first = 0;
    uint64_t total = (uint64_t) target_count * target_dt->super.size / a->esize;
    acc_msg_t m = {.hdr = NULL, .per_elem = have_origin ? a->ext * (cas ? 2 : 1) : 0};
    acc_pending_t *p = pending_new(a, result_addr, result_count, result_dt);
    ompi_osc_ucxx_runs_t rt, ro;
    char *tp, *op = NULL;
    size_t n;
    int rc = OMPI_SUCCESS;

    if (NULL == p) return OMPI_ERR_OUT_OF_RESOURCE;
    ompi_osc_ucxx_runs_init(&rt, a, (void *) (uintptr_t) a->t->remote, target_count, target_dt);
    if (have_origin) ompi_osc_ucxx_runs_init(&ro, a, origin_addr, origin_count, origin_dt);
    while (OMPI_SUCCESS == rc && 0 != (n = ompi_osc_ucxx_runs_peek(&rt, &tp))) {
        if (have_origin && 0 == (n = ompi_osc_ucxx_min(n, ompi_osc_ucxx_runs_peek(&ro, &op)))) break;
        if (NULL == m.hdr) {
            wait_inflight(p);
            rc = msg_new(&m, a, p, first, flags, total - first);
            if (OMPI_SUCCESS != rc) break;
        }
        n = ompi_osc_ucxx_min(n, m.cap_elems - m.hdr->nelem);
        if (have_origin) {
            char *v = m.vals + (size_t) m.hdr->nelem * m.per_elem;
            ompi_osc_ucxx_acc_copy(a, v, op, n);
            if (cas) memcpy(v + a->ext, compare_addr, a->esize);
            ompi_osc_ucxx_runs_skip(&ro, n);
        }
        msg_add_run(&m, (uint64_t) (uintptr_t) tp - base, n, a->ext);
        ompi_osc_ucxx_runs_skip(&rt, n);
        first += n;
        if (m.hdr->nelem == m.cap_elems || m.hdr->nruns == m.cap_runs) {
            rc = msg_send(&m, a, p);
        }
    }
    if (OMPI_SUCCESS == rc && NULL != m.hdr && m.hdr->nelem > 0) {
        rc = msg_send(&m, a, p);
    }
    free(m.hdr);
    ompi_osc_ucxx_runs_fini(&rt);
    if (have_origin) ompi_osc_ucxx_runs_fini(&ro);
    pending_chunk_done(p);  /* drop the sending reference */
    return rc;
}
