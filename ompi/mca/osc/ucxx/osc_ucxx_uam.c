/*
 * Copyright (c) 2026 The osc/ucxx authors. All rights reserved.
 * $COPYRIGHT$
 *
 * User active messages: MPIX_Am, MPIX_Amv, MPIX_Ram, MPIX_Ramv (mpix_ucxx.h),
 * after X. Zhao's MPI-interoperable active messages (thesis, 2016, ch. 6-8;
 * design and semantics S1-S30 in the project's design notes).
 *
 * An AM runs a registered handler on a target's persistent region for
 * num_segments input segments, producing as many output segments.  It runs
 * as one or more invocations ("chunks") of whole consecutive segments.
 *
 * Where it runs.
 *   - At the origin ("origin-side execution"), when the target's whole
 *     persistent region and its state segment are mapped into the origin
 *     (same node) and osc_ucxx_am_origin_compute is on, or always for AMs to
 *     self: the origin takes the target's execution word (osc_ucxx_state.c)
 *     around each invocation, so the target CPU is not needed at all.  Not
 *     while an earlier message AM to that target is incomplete and ordering
 *     is on (it would overtake it).
 *   - Otherwise at the target, carried by messages (the "message path").
 *
 * Message path, origin side (per target: uam_tgt_t).  AMs queue in issue
 * order; the pump cuts the head AM into chunks of at most am_pipeline_unit
 * segments, each needing a64(te(kN, tin)) + a64(te(kM, tout)) bytes of
 * staging at the target, and sends each chunk to a place the origin itself
 * allocates there, in this order of preference:
 *     HINT   the portion am_user_buf_<t> promised (no handshake)
 *     SYS    this origin's internal slot at t (osc_ucxx_am_sysbuf, published
 *            at window creation; no handshake)
 *     GRANT  a range of t's attached user buffers that t granted us
 * If no place fits even one segment, the origin sends one RESV and waits for
 * t's GRANT.  Credit comes back with each chunk's OUT message (after the
 * output was produced), so the origin never overwrites staging in use.
 * With any ordering type on, no AM passes the head one (with the FIFO grant
 * service below this cannot deadlock); with am_ordering=none any AM that
 * fits may go.  Chunk payloads up to osc_ucxx_am_eager go eager, larger ones
 * rendezvous.
 *
 * Message path, target side (per origin: uam_org_t).  The UCX callback only
 * copies: an eager chunk's input goes straight to the staging place its
 * header names, and a RUN item is queued; a rendezvous chunk queues a FETCH
 * that the drain turns into ucp_am_recv_data_nbx.  The drain (outside every
 * callback) runs a chunk when (1) its AM's description is in (the first
 * chunk carries the target types' pack descriptions), (2) every AM of that
 * origin it must follow (seq <= `after`, set by the origin from
 * am_ordering) has completed, (3) with sameam, the previous chunk of the AM
 * has run, and (4) the execution word try-locks (shared for AMs issued
 * under MPIX_MODE_CONCURRENT_AM, exclusive otherwise).  Then: full barrier,
 * handler, full barrier, unlock, and an OUT with the output (AMV: counts,
 * and only the produced elements when they are few) and the credit.
 * Blocked chunks stay queued (OMPI_ERR_WOULD_BLOCK) and are retried.
 *
 * User buffers (pool, per window at the target).  RESV requests are served
 * FIFO across origins: the largest free range >= one segment, capped by what
 * the origin wants and osc_ucxx_am_grant_max (uncapped for an origin holding
 * an exclusive lock, osc_ucxx_am_exclusive_detect).  A pool smaller than one
 * segment answers MPI_ERR_BUFFER.  An origin gives a grant back when it has
 * nothing more to send to that target (exclusive holders: at unlock, and at
 * each flush when am_buf_interleave_am_detach=true).  Detach waits until no
 * grant and no staged chunk lies in the buffer.
 *
 * Completion: every message AM counts in module->am_outstanding, which
 * every flush, unlock, fence and complete already waits for; errors go to
 * module->am_error (returned by that call) or to the MPIX_Ram* request.
 * Handlers never run inside a UCX callback, and never inside another
 * handler (the drain has one thread at a time, and MPIX/osc calls from a
 * handler return MPI_ERR_OTHER).
 */

#include "ompi_config.h"

#include "ompi/errhandler/errcode.h"
#include "ompi/mca/osc/base/osc_base_obj_convert.h"
#include "ompi/win/win.h"

#include "osc_ucxx_op.h"
#include "osc_ucxx_request.h"
#include "osc_ucxx_uam.h"
#include "osc_ucxx_dynamic.h"
#include "osc_ucxx_dt.h"
#include "osc_ucxx.h"

#include "mpi.h"

typedef int (*uam_am_fn_t)(const void *, int, MPI_Datatype, void *, int, MPI_Datatype, void *,
                           int, MPI_Datatype, int, int, void *);
typedef int (*uam_amv_fn_t)(const void *, int, MPI_Datatype, void *, int, MPI_Datatype, void *,
                            int, MPI_Datatype, int, int, int *, void *);

__thread int ompi_osc_ucxx_in_handler = 0;
volatile int32_t ompi_osc_ucxx_handlers = 0;
#define in_handler ompi_osc_ucxx_in_handler

/* ------------------------------------------------------------------------- */
/* Sizes (S7) */

static size_t a64(size_t n)
{
    return (n + 63) & ~(size_t) 63;
}

/* Bytes n elements of dt span: (n-1) extents plus one true extent. */
static size_t span(int64_t n, ompi_datatype_t *dt)
{
    ptrdiff_t lb, extent, tlb, textent;
    if (n <= 0) return 0;
    ompi_datatype_get_extent(dt, &lb, &extent);
    ompi_datatype_get_true_extent(dt, &tlb, &textent);
    return (size_t) ((n - 1) * extent + textent);
}

static ptrdiff_t true_lb(ompi_datatype_t *dt)
{
    ptrdiff_t tlb, textent;
    ompi_datatype_get_true_extent(dt, &tlb, &textent);
    return tlb;
}

static ptrdiff_t extent_of(ompi_datatype_t *dt)
{
    ptrdiff_t lb, extent;
    ompi_datatype_get_extent(dt, &lb, &extent);
    return extent;
}

static size_t size_of(ompi_datatype_t *dt)
{
    size_t size;
    ompi_datatype_type_size(dt, &size);
    return size;
}

/* Copy count elements laid out by sdt at src into the layout of ddt at dst
 * (the same number of bytes of data). */
static void copy_layout(void *dst, int64_t dcount, ompi_datatype_t *ddt, const void *src,
                        int64_t scount, ompi_datatype_t *sdt)
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

/* ------------------------------------------------------------------------- */
/* Space: offsets in a staging area, first fit, 64-byte granules. */

typedef struct {
    size_t size;
    int n, cap;
    struct uam_range { size_t off, len; } *r;   /* free ranges, sorted */
} uam_space_t;

static void space_init(uam_space_t *s, size_t size)
{
    free(s->r);
    s->size = size;
    s->n = 0;
    s->cap = 4;
    s->r = malloc(s->cap * sizeof(*s->r));
    if (NULL != s->r && size > 0) {
        s->r[0] = (struct uam_range){0, size};
        s->n = 1;
    }
}

static void space_fini(uam_space_t *s)
{
    free(s->r);
    memset(s, 0, sizeof(*s));
}

static bool space_alloc(uam_space_t *s, size_t len, size_t *off)
{
    len = a64(len);
    for (int i = 0; i < s->n; ++i) {
        if (s->r[i].len >= len) {
            *off = s->r[i].off;
            s->r[i].off += len;
            s->r[i].len -= len;
            if (0 == s->r[i].len) {
                memmove(&s->r[i], &s->r[i + 1], (s->n - i - 1) * sizeof(*s->r));
                s->n--;
            }
            return true;
        }
    }
    return false;
}

static void space_free(uam_space_t *s, size_t off, size_t len)
{
    int i = 0;
    len = a64(len);
    if (0 == len) return;
    while (i < s->n && s->r[i].off < off) ++i;
    if (i > 0 && s->r[i - 1].off + s->r[i - 1].len == off) {        /* join left */
        s->r[i - 1].len += len;
        if (i < s->n && off + len == s->r[i].off) {                  /* and right */
            s->r[i - 1].len += s->r[i].len;
            memmove(&s->r[i], &s->r[i + 1], (s->n - i - 1) * sizeof(*s->r));
            s->n--;
        }
        return;
    }
    if (i < s->n && off + len == s->r[i].off) {
        s->r[i].off = off;
        s->r[i].len += len;
        return;
    }
    if (s->n == s->cap) {
        void *grown = realloc(s->r, 2 * s->cap * sizeof(*s->r));
        if (NULL == grown) return;   /* the range is lost, not corrupted */
        s->r = grown;
        s->cap *= 2;
    }
    memmove(&s->r[i + 1], &s->r[i], (s->n - i) * sizeof(*s->r));
    s->r[i] = (struct uam_range){off, len};
    s->n++;
}

static size_t space_largest(const uam_space_t *s, size_t *off)
{
    size_t best = 0;
    for (int i = 0; i < s->n; ++i) {
        if (s->r[i].len > best) {
            best = s->r[i].len;
            if (NULL != off) *off = s->r[i].off;
        }
    }
    return best;
}

static bool space_idle(const uam_space_t *s)
{
    return 0 == s->size || (1 == s->n && s->r[0].len == s->size);
}

/* Remove [off, off+len) from the free ranges (carving a known-free range). */
static void space_take(uam_space_t *s, size_t off, size_t len)
{
    len = a64(len);
    for (int i = 0; i < s->n; ++i) {
        struct uam_range r = s->r[i];
        if (off < r.off || off + len > r.off + r.len) continue;
        s->r[i].len = off - r.off;
        if (r.off + r.len > off + len) {
            space_free(s, off + len, r.off + r.len - off - len);
        }
        if (0 == s->r[i].len) {
            memmove(&s->r[i], &s->r[i + 1], (s->n - i - 1) * sizeof(*s->r));
            s->n--;
        }
        return;
    }
}

/* ------------------------------------------------------------------------- */
/* Wire formats */

#define F_DESC       0x01   /* first chunk: carries the AM's description */
#define F_AMV        0x02
#define F_CONCURRENT 0x04   /* MPIX_MODE_CONCURRENT_AM */
#define F_SAMEAM     0x08   /* chunks of the AM run in order */
#define F_SKIP       0x10   /* the origin gave up on these segments: count, don't run */
#define F_ORDERED    0x80   /* (origin only) no later AM may pass it */

#define W_NONE  0
#define W_SYS   1
#define W_HINT  2
#define W_GRANT 3

typedef struct {
    ompi_osc_ucxx_am_hdr_t h;
    uint64_t token;          /* the origin's record of the AM */
    uint64_t seq, after;     /* run once every AM of this origin up to `after` completed */
    uint64_t offset;         /* staging offset in `where` */
    uint64_t hint;           /* the origin's am_user_buf_<us> (first contact) */
    uint32_t first, nseg, total;
    uint32_t in_len, out_len;    /* staging: input bytes (sent), output bytes */
    uint32_t desc_len;
    int32_t index;
    uint32_t grant;
    uint8_t flags, where;
} uam_data_t;

/* The first chunk's description: the persistent region and target types. */
typedef struct {
    uint64_t paddr;          /* the region's address at the target */
    int32_t pcount, n, m;
    uint32_t len[3];         /* pack descriptions of tin, tout, persistent type */
} uam_desc_t;

typedef struct {
    ompi_osc_ucxx_am_hdr_t h;
    uint64_t token;
    uint64_t offset;         /* credit returned */
    uint32_t first, nseg;
    uint32_t out_len;        /* output bytes after the counts */
    uint32_t grant;
    int32_t status;
    uint32_t in_len, stage_len;
    uint8_t where, packed;
} uam_out_t;

#define C_RESV    1
#define C_GRANT   2
#define C_RELEASE 3
typedef struct {
    ompi_osc_ucxx_am_hdr_t h;
    uint32_t type;
    uint32_t grant;
    uint64_t want, min, len;
    int32_t status;
    int32_t all;             /* RESV: the origin holds an exclusive lock */
} uam_ctrl_t;

/* Work items (OSC_UCXX_AM_UAM_WORK): the first word says what. */
#define K_RUN      1   /* a staged chunk: uam_data_t + description */
#define K_FETCH    2   /* rendezvous chunk to receive: uam_data_t, desc pointer, length */
#define K_OUTFETCH 3   /* rendezvous output to receive */
#define K_CTRL     4
#define K_OUTDONE  5   /* origin: an OUT's bookkeeping (credit, completion) */


typedef struct {
    uint32_t kind;
    int32_t status;          /* K_RUN: staging failed with this class */
    void *rdesc;             /* K_FETCH / K_OUTFETCH: UCX's data descriptor */
    size_t rlen;
    union {
        uam_data_t data;
        uam_out_t out;
        uam_ctrl_t ctrl;
    } u;
} uam_work_t;

/* ------------------------------------------------------------------------- */
/* State */

typedef struct {
    uint64_t id;
    int kind;
    void *fn;
    void *extra;
    int index;
    volatile int32_t pending;   /* this process's message AMs using it */
} uam_reg_t;

/* Origin side: one AM on the message path. */
typedef struct uam_am {
    opal_list_item_t super;
    ompi_osc_ucxx_module_t *module;
    struct uam_tgt *tg;
    int target;
    ompi_osc_ucxx_am_args_t a;
    int n, m;
    uint64_t seq, after;
    int index;
    uint8_t flags;
    int unit;
    int next_seg;            /* first segment not sent */
    int segs_done;           /* segments whose OUT arrived (under tg->lock) */
    int error;
    int *counts;
    ompi_osc_ucxx_request_t *req;
    uint64_t paddr;
} uam_am_t;
static OBJ_CLASS_INSTANCE(uam_am_t, opal_list_item_t, NULL, NULL);

/* Origin side: per target. */
typedef struct uam_tgt {
    opal_mutex_t lock;
    uint64_t next_seq;
    struct { uint64_t op; uint64_t seq; } last[8];   /* sameop: last AM per op */
    opal_list_t queue;        /* AMs with segments not sent, issue order */
    int32_t pending;          /* message AMs not complete */
    uam_space_t sys, hint, grant;
    uint32_t grant_id;
    bool has_grant, resv_out, grant_excl;
} uam_tgt_t;

/* Target side: one AM being executed for an origin. */
typedef struct uam_exec {
    struct uam_exec *next;
    uint64_t token, seq;
    uam_reg_t reg;
    int status;
    int n, m, pcount;
    void *paddr;
    ompi_datatype_t *tin, *tout, *pdt;
    uint32_t total, done, next_first;
} uam_exec_t;

/* Target side: per origin. */
typedef struct {
    char *sys;                /* internal slot (our osc_ucxx_am_sysbuf bytes) */
    char *hint;               /* its hinted portion of our pool, or NULL */
    size_t hint_len;
    int hint_buf;
    bool hint_tried;
    uint64_t watermark;       /* every seq <= this completed */
    uint64_t *done;           /* completed seqs above it */
    int ndone, capdone;
    uam_exec_t *execs;
} uam_org_t;

/* Target side: attached user buffers and what is granted from them. */
typedef struct {
    char *base;
    size_t size;
    uam_space_t space;
    int32_t users;            /* grants, hint portions and staged chunks in it */
} uam_buf_t;

typedef struct {
    uint32_t id;
    int origin, buf;
    size_t off, len;
} uam_grant_t;

struct ompi_osc_ucxx_uam_t {
    opal_mutex_t lock;        /* registrations, pool, the per-rank tables */
    opal_hash_table_t by_index, by_id;
    uam_tgt_t **tgts;         /* by target rank, made on first use */
    uam_org_t **orgs;         /* by origin rank, made on first contact */
    uam_buf_t *bufs;
    int nbufs, capbufs;
    uam_grant_t *grants;
    int ngrants, capgrants;
    uint32_t next_grant;
    uam_ctrl_t *fifo;         /* RESV requests waiting, oldest first */
    int nfifo, capfifo;
    volatile int32_t concurrent;   /* MPIX_MODE_CONCURRENT_AM asserted */
};

static ompi_osc_ucxx_uam_t *uam_get(ompi_osc_ucxx_module_t *module)
{
    ompi_osc_ucxx_uam_t *uam = module->uam;
    if (OPAL_LIKELY(NULL != uam)) return uam;
    OSC_UCXX_LOCK(&module->setup_lock);
    if (NULL == module->uam) {
        uam = calloc(1, sizeof(*uam));
        if (NULL != uam) {
            OBJ_CONSTRUCT(&uam->lock, opal_mutex_t);
            OBJ_CONSTRUCT(&uam->by_index, opal_hash_table_t);
            OBJ_CONSTRUCT(&uam->by_id, opal_hash_table_t);
            opal_hash_table_init(&uam->by_index, 16);
            opal_hash_table_init(&uam->by_id, 16);
            uam->tgts = calloc(module->size, sizeof(*uam->tgts));
            uam->orgs = calloc(module->size, sizeof(*uam->orgs));
            uam->next_grant = 1;
            opal_atomic_wmb();
            module->uam = uam;
        }
    }
    OSC_UCXX_UNLOCK(&module->setup_lock);
    return module->uam;
}

static uint64_t hint_for(ompi_osc_ucxx_module_t *module, int target)
{
    for (int i = 0; i < module->am_nhints; ++i) {
        if (module->am_hints[i].rank == target) return module->am_hints[i].bytes;
    }
    return 0;
}

static uam_tgt_t *tgt_get(ompi_osc_ucxx_module_t *module, ompi_osc_ucxx_uam_t *uam, int target)
{
    uam_tgt_t *tg = uam->tgts[target];
    if (OPAL_LIKELY(NULL != tg)) return tg;
    OSC_UCXX_LOCK(&uam->lock);
    if (NULL == uam->tgts[target] && NULL != (tg = calloc(1, sizeof(*tg)))) {
        OBJ_CONSTRUCT(&tg->lock, opal_mutex_t);
        OBJ_CONSTRUCT(&tg->queue, opal_list_t);
        tg->next_seq = 1;
        space_init(&tg->sys, module->peers[target].am_sysbuf);
        space_init(&tg->hint, hint_for(module, target));
        opal_atomic_wmb();
        uam->tgts[target] = tg;
    }
    OSC_UCXX_UNLOCK(&uam->lock);
    return uam->tgts[target];
}

static uam_reg_t *reg_by_id(ompi_osc_ucxx_uam_t *uam, uint64_t id)
{
    void *v = NULL;
    if (NULL == uam) return NULL;
    OSC_UCXX_LOCK(&uam->lock);
    (void) opal_hash_table_get_value_uint64(&uam->by_id, id, &v);
    OSC_UCXX_UNLOCK(&uam->lock);
    return v;
}

static uam_reg_t *reg_by_index(ompi_osc_ucxx_uam_t *uam, int index)
{
    void *v = NULL;
    if (NULL == uam) return NULL;
    OSC_UCXX_LOCK(&uam->lock);
    (void) opal_hash_table_get_value_uint32(&uam->by_index, (uint32_t) index, &v);
    OSC_UCXX_UNLOCK(&uam->lock);
    return v;
}

/* ------------------------------------------------------------------------- */
/* Running a handler (both sides) */

/* One invocation: in and out point at element 0 of the target types'
 * layouts.  counts (AMV): preset to m, checked after. */
static int invoke(const uam_reg_t *reg, const void *in, int n, ompi_datatype_t *tin,
                  void *paddr, int pcount, ompi_datatype_t *pdt, void *out, int m,
                  ompi_datatype_t *tout, int nseg, int first, int *counts)
{
    int rc;

    opal_atomic_mb();   /* S17: RMA completed before sees the handler, and back */
    ompi_osc_ucxx_add32(&ompi_osc_ucxx_handlers, 1);
    in_handler++;
    if (OSC_UCXX_AM_OP_AMV == reg->kind) {
        for (int k = 0; k < nseg; ++k) counts[k] = m;
        rc = ((uam_amv_fn_t) reg->fn)(in, n, tin, paddr, pcount, pdt, out, m, tout, nseg, first,
                                      counts, reg->extra);
    } else {
        rc = ((uam_am_fn_t) reg->fn)(in, n, tin, paddr, pcount, pdt, out, m, tout, nseg, first,
                                     reg->extra);
    }
    in_handler--;
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
    return in_handler > 0;
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

/* Staging bytes a chunk of k segments takes at the target (S7). */
static size_t chunk_need(int k, int n, ompi_datatype_t *tin, int m, ompi_datatype_t *tout)
{
    return a64(span((int64_t) k * n, tin)) + a64(span((int64_t) k * m, tout));
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

/* Element 0 of segment `seg` of an origin buffer. */
static char *seg_ptr(const void *base, int seg, int count, ompi_datatype_t *dt)
{
    return (char *) base + (ptrdiff_t) seg * count * extent_of(dt);
}

/* Output of segments [first, first+k), in the target type's layout at
 * `out` (element 0), into the origin buffer; AMV: counts[] per segment as
 * the handler set them, converted to origin elements in a->counts. */
static void store_output(const ompi_osc_ucxx_am_args_t *a, int m, const char *out, int first,
                         int k, const int *tcounts, int *ocounts)
{
    if (NULL == tcounts) {
        copy_layout(seg_ptr(a->out_addr, first, a->out_count, a->out_dt),
                    (int64_t) k * a->out_count, a->out_dt, out, (int64_t) k * m, a->tout_dt);
        return;
    }
    size_t osize = size_of(a->out_dt), tsize = size_of(a->tout_dt);
    for (int s = 0; s < k; ++s) {
        int co = 0 == osize ? 0 : (int) ((size_t) tcounts[s] * tsize / osize);
        copy_layout(seg_ptr(a->out_addr, first + s, a->out_count, a->out_dt), co, a->out_dt,
                    out + (ptrdiff_t) s * m * extent_of(a->tout_dt), tcounts[s], a->tout_dt);
        ocounts[first + s] = co;
    }
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
            copy_layout((char *) in, (int64_t) k * n, tin,
                        seg_ptr(a->in_addr, first, a->in_count, a->in_dt),
                        (int64_t) k * a->in_count, a->in_dt);
        }
        out = out_direct ? seg_ptr(a->out_addr, first, a->out_count, a->out_dt)
                         : out_tmp - true_lb(tout);
        while (!ompi_osc_ucxx_state_exec_trylock(state, concurrent)) {
            opal_progress();  /* (serves our own window's AMs meanwhile) */
        }
        rc = invoke(reg, in, n, tin, paddr, a->pcount, a->p_dt, out, m, tout, k, first, tcounts);
        ompi_osc_ucxx_state_exec_unlock(state, concurrent);
        if (MPI_SUCCESS == rc && !out_direct) {
            store_output(a, m, out, first, k, tcounts, counts);
        }
    }
    free(in_tmp);
    free(out_tmp);
    free(tcounts);
    return rc;
}

/* ------------------------------------------------------------------------- */
/* Message path, origin side */

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

static void send_ctrl(ompi_osc_ucxx_module_t *module, int to, uam_ctrl_t c)
{
    uam_ctrl_t *msg = malloc(sizeof(*msg));
    if (NULL == msg) return;
    c.h.cid = module->cid;
    c.h.from = module->rank;
    *msg = c;
    (void) ompi_osc_ucxx_am_send(module, OSC_UCXX.main_worker, to, OSC_UCXX_AM_UAM_CTRL, msg,
                                 sizeof(*msg), sizeof(*msg));
}

/* Give the grant back (tg->lock held; it must be idle). */
static void grant_release(ompi_osc_ucxx_module_t *module, uam_tgt_t *tg, int target)
{
    send_ctrl(module, target, (uam_ctrl_t){.type = C_RELEASE, .grant = tg->grant_id});
    tg->has_grant = tg->grant_excl = false;
    space_fini(&tg->grant);
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
            if (NULL != spaces[i] && spaces[i]->size >= need && space_alloc(spaces[i], need, &o)) {
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
        if (!space_idle(&tg->grant)) return;
        grant_release(module, tg, am->target);   /* too small for this AM */
    }
    tg->resv_out = true;
    send_ctrl(module, am->target,
              (uam_ctrl_t){.type = C_RESV, .want = want, .min = one, .all = excl});
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
    if (!skip) copy_layout(buf + sizeof(*d) + dlen - true_lb(tin), (int64_t) k * am->n, tin,
                seg_ptr(am->a.in_addr, am->next_seg, am->a.in_count, am->a.in_dt),
                (int64_t) k * am->a.in_count, am->a.in_dt);
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
        space_idle(&tg->grant)) {
        grant_release(module, tg, target);  /* others may be waiting for it */
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
    if (NULL != (reg = reg_by_index(module->uam, am->index))) {
        ompi_osc_ucxx_add32(&reg->pending, -1);   /* (deregister checks it) */
    }
    OBJ_RELEASE(am->a.in_dt);
    OBJ_RELEASE(am->a.out_dt);
    OBJ_RELEASE(am->a.tin_dt);
    OBJ_RELEASE(am->a.tout_dt);
    OBJ_RELEASE(am->a.p_dt);
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
static void out_arrived(ompi_osc_ucxx_module_t *module, const uam_out_t *o, const char *payload,
                        size_t len)
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
                store_output(&am->a, am->m, out, o->first + s, 1, &ct, am->counts);
                out += (size_t) ct * tsize;
            }
        } else {
            if (clen) memcpy(tcounts, payload, clen);
            store_output(&am->a, am->m, out - true_lb(am->a.tout_dt), o->first, o->nseg,
                         clen ? (int *) tcounts : NULL, am->counts);
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
static void out_done(ompi_osc_ucxx_module_t *module, const uam_out_t *o)
{
    uam_am_t *am = (uam_am_t *) (uintptr_t) o->token;
    uam_tgt_t *tg = am->tg;
    bool more;

    OSC_UCXX_LOCK(&tg->lock);
    if (W_SYS == o->where) {
        space_free(&tg->sys, o->offset, o->stage_len);
    } else if (W_HINT == o->where) {
        space_free(&tg->hint, o->offset, o->stage_len);
    } else if (W_GRANT == o->where && tg->has_grant && tg->grant_id == o->grant) {
        space_free(&tg->grant, o->offset, o->stage_len);
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
/* MPIX_Am & co. */

/* S8 for MPI_PROC_NULL: some access epoch must be open. */

/* mpi_win_order=true: the AM must see this thread's earlier RMA to target. */
static int order_after_rma(ompi_osc_ucxx_view_t *view, int target)
{
    ompi_osc_ucxx_worker_t *worker = ompi_osc_ucxx_view_worker(view);
    ompi_osc_ucxx_link_t *link;

    opal_atomic_wmb();   /* stores through mappings */
    if (NULL == worker || NULL == (link = ompi_osc_ucxx_link(view->core, worker, target))) {
        return OMPI_SUCCESS;
    }
    return ompi_osc_ucxx_flush_link(view->core, worker, link);
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

static int issue_message(ompi_osc_ucxx_view_t *view, ompi_osc_ucxx_uam_t *uam,
                         uam_reg_t *reg, const ompi_osc_ucxx_am_args_t *a, int n, int m,
                         uint64_t paddr, int unit, int *counts, ompi_osc_ucxx_request_t *req)
{
    ompi_osc_ucxx_module_t *module = view->core;
    uam_tgt_t *tg = tgt_get(module, uam, a->target);
    uam_am_t *am = OBJ_NEW(uam_am_t);

    if (NULL == tg || NULL == am) {
        if (NULL != am) OBJ_RELEASE(am);
        return OMPI_ERR_OUT_OF_RESOURCE;
    }
    memset((char *) am + sizeof(am->super), 0, sizeof(*am) - sizeof(am->super));
    am->module = module;
    am->tg = tg;
    am->target = a->target;
    am->a = *a;
    OBJ_RETAIN(a->in_dt);
    OBJ_RETAIN(a->out_dt);
    OBJ_RETAIN(a->tin_dt);
    OBJ_RETAIN(a->tout_dt);
    OBJ_RETAIN(a->p_dt);
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
                (view->am_order ? F_ORDERED : 0);
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
    uam_reg_t *reg = reg_by_id(uam, a->op_id), regcopy;
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
    if (MPI_PROC_NULL == a->target) {
        return ompi_osc_ucxx_epoch_any(module) ? MPI_SUCCESS : OMPI_ERR_RMA_SYNC;
    }
    rc = ompi_osc_ucxx_op_begin(view, a->target, a->pdisp, a->pcount, a->p_dt, &t);
    if (OMPI_SUCCESS != rc || 0 == a->num_segments) {
        return rc;
    }
    if (MPI_WIN_FLAVOR_DYNAMIC == module->flavor && t.rank == module->rank && a->pcount > 0 &&
        !ompi_osc_ucxx_dyn_contains(module, t.lo, t.hi)) {
        late_fail(module, req, OMPI_ERR_RMA_RANGE);   /* S30: dynamic ranges are late */
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

    if (in_handler) return MPI_ERR_OTHER;
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
/* Message path, target side */

static uam_org_t *org_get(ompi_osc_ucxx_module_t *module, ompi_osc_ucxx_uam_t *uam, int from)
{
    uam_org_t *org = uam->orgs[from];
    if (OPAL_LIKELY(NULL != org)) return org;
    OSC_UCXX_LOCK(&uam->lock);
    if (NULL == uam->orgs[from] && NULL != (org = calloc(1, sizeof(*org)))) {
        org->hint_buf = -1;
        opal_atomic_wmb();
        uam->orgs[from] = org;
    }
    OSC_UCXX_UNLOCK(&uam->lock);
    return uam->orgs[from];
}

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
        if (space_largest(&uam->bufs[b].space, &off) >= bytes) {
            space_take(&uam->bufs[b].space, off, bytes);
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
static int stage_place(ompi_osc_ucxx_module_t *module, ompi_osc_ucxx_uam_t *uam, int from,
                       const uam_data_t *d, char **place, int *buf)
{
    uam_org_t *org = org_get(module, uam, from);
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

/* A chunk's bytes are here (callback or drain): stage the input, queue the
 * run with its header and description. */
static void chunk_arrived(ompi_osc_ucxx_module_t *module, int from, const uam_data_t *d,
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
        w->status = stage_place(module, module->uam, from, d, &place, &buf);
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

/* Rendezvous data received into a temporary (drain's fetch). */
typedef struct {
    ompi_osc_ucxx_module_t *module;
    int from;
    uam_work_t w;
    char data[];
} uam_fetch_t;

static void fetch_complete(uam_fetch_t *f)
{
    if (K_FETCH == f->w.kind) {
        chunk_arrived(f->module, f->from, &f->w.u.data, f->data, f->w.rlen);
    } else {
        out_arrived(f->module, &f->w.u.out, f->data, f->w.rlen);
    }
    free(f);
}

static void fetch_done(void *request, ucs_status_t status, size_t length, void *user_data)
{
    uam_fetch_t *f = (uam_fetch_t *) user_data;
    if (UCS_OK != status) {
        OSC_UCXX_VERBOSE(1, "active-message data lost: %s", ucs_status_string(status));
        f->w.rlen = 0;   /* chunk_arrived / out_arrived see too few bytes */
    }
    fetch_complete(f);
    ucp_request_free(request);
}

static int fetch(ompi_osc_ucxx_module_t *module, int from, uam_work_t *w)
{
    uam_fetch_t *f = malloc(sizeof(*f) + w->rlen + 1);
    ucp_request_param_t param;
    ucs_status_ptr_t sp;

    if (NULL == f) return OMPI_ERR_WOULD_BLOCK;
    f->module = module;
    f->from = from;
    f->w = *w;
    memset(&param, 0, sizeof(param));
    param.op_attr_mask = UCP_OP_ATTR_FIELD_CALLBACK | UCP_OP_ATTR_FIELD_USER_DATA;
    param.cb.recv_am = fetch_done;
    param.user_data = f;
    sp = ucp_am_recv_data_nbx(OSC_UCXX.main_worker->ucp, w->rdesc, f->data, w->rlen, &param);
    if (NULL == sp) {
        fetch_complete(f);
    } else if (UCS_PTR_IS_ERR(sp)) {
        OSC_UCXX_VERBOSE(1, "ucp_am_recv_data_nbx: %s", ucs_status_string(UCS_PTR_STATUS(sp)));
        f->w.rlen = 0;
        fetch_complete(f);
    }
    return OMPI_SUCCESS;
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
    uam_reg_t *reg = reg_by_index(module->uam, d->index);
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

static void exec_free(uam_org_t *org, uam_exec_t *ex)
{
    uam_exec_t **pp = &org->execs;
    while (*pp != ex) pp = &(*pp)->next;
    *pp = ex->next;
    ompi_datatype_t *types[3] = {ex->tin, ex->tout, ex->pdt};
    for (int i = 0; i < 3; ++i) {
        if (NULL != types[i] && !ompi_datatype_is_predefined(types[i])) {
            OBJ_RELEASE(types[i]);
        }
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

/* Unpin a user buffer a chunk was staged in. */
static void stage_unpin(ompi_osc_ucxx_uam_t *uam, int buf)
{
    if (buf < 0) return;
    OSC_UCXX_LOCK(&uam->lock);
    uam->bufs[buf].users--;
    OSC_UCXX_UNLOCK(&uam->lock);
}

/* Run a staged chunk if ordering and exclusion allow (S11-S14). */
static int run_chunk(ompi_osc_ucxx_module_t *module, int from, uam_work_t *w)
{
    const uam_data_t *d = &w->u.data;
    const char *desc = (const char *) (w + 1);
    ompi_osc_ucxx_uam_t *uam = module->uam;
    uam_org_t *org = NULL == uam ? NULL : org_get(module, uam, from);
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
        status = invoke(&ex->reg, place - true_lb(ex->tin), ex->n, ex->tin, ex->paddr,
                        ex->pcount, ex->pdt, place + a64(d->in_len) - true_lb(ex->tout), ex->m,
                        ex->tout, (int) d->nseg, (int) d->first, counts);
        ompi_osc_ucxx_state_exec_unlock(module->state, shared);
        if (MPI_SUCCESS != status) ex->status = status;   /* S30: skip the rest */
    }
    send_out(module, from, d, status, place + a64(d->in_len), ex, counts);
    if (counts != counts_stack) free(counts);
counted:
    stage_unpin(uam, buf);
    ex->done += d->nseg;
    if (d->first + d->nseg > ex->next_first) ex->next_first = d->first + d->nseg;
    if (ex->done == ex->total) {
        seq_done(org, ex->seq);
        exec_free(org, ex);
    }
    return OMPI_SUCCESS;
}

/* ------------------------------------------------------------------------- */
/* User buffer pool (target side): RESV served FIFO, GRANT, RELEASE */

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
        send_ctrl(module, r.h.from, g);
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
                size_t o = 0, l = space_largest(&uam->bufs[b].space, &o);
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
            space_take(&uam->bufs[bb].space, off, len);
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

static void pool_release(ompi_osc_ucxx_module_t *module, ompi_osc_ucxx_uam_t *uam, int from,
                         uint32_t id)
{
    OSC_UCXX_LOCK(&uam->lock);
    int g = grant_find(uam, id, from);
    if (g >= 0) {
        uam_grant_t gr = uam->grants[g];
        space_free(&uam->bufs[gr.buf].space, gr.off, gr.len);
        uam->bufs[gr.buf].users--;
        uam->grants[g] = uam->grants[--uam->ngrants];
    }
    OSC_UCXX_UNLOCK(&uam->lock);
    pool_serve(module, uam);
}

static void pool_request(ompi_osc_ucxx_module_t *module, ompi_osc_ucxx_uam_t *uam,
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

/* Origin: the target answered our reservation. */
static void grant_arrived(ompi_osc_ucxx_module_t *module, ompi_osc_ucxx_uam_t *uam, int from,
                          const uam_ctrl_t *c)
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
        space_init(&tg->grant, c->len);
    }
    OSC_UCXX_UNLOCK(&tg->lock);
    pump(module, tg, from);
}

/* ------------------------------------------------------------------------- */
/* Receiving (UCX callback) and the drain's work items */

static ucs_status_t uam_recv(void *arg, const void *header, size_t header_length, void *data,
                             size_t length, const ucp_am_recv_param_t *param)
{
    int kind = (int) (uintptr_t) arg;
    ompi_osc_ucxx_am_hdr_t h;
    ompi_osc_ucxx_module_t *module;
    uam_work_t w;
    bool rndv = param->recv_attr & UCP_AM_RECV_ATTR_FLAG_RNDV;

    if (header_length < sizeof(h)) return UCS_OK;
    memcpy(&h, header, sizeof(h));
    module = ompi_osc_ucxx_window_lookup(h.cid);
    if (NULL == module || h.from < 0 || h.from >= module->size) {
        OSC_UCXX_VERBOSE(1, "active message for unknown window %u dropped", h.cid);
        return UCS_OK;
    }
    memset(&w, 0, sizeof(w));
    if (OSC_UCXX_AM_UAM_CTRL == kind) {
        if (header_length < sizeof(uam_ctrl_t)) return UCS_OK;
        w.kind = K_CTRL;
        memcpy(&w.u.ctrl, header, sizeof(uam_ctrl_t));
    } else if (OSC_UCXX_AM_UAM_DATA == kind) {
        uam_data_t d;   /* (copied: UCX's header need not be aligned) */
        if (header_length < sizeof(d)) return UCS_OK;
        memcpy(&d, header, sizeof(d));
        if (!rndv) {
            chunk_arrived(module, h.from, &d, data, length);
            return UCS_OK;
        }
        w.kind = K_FETCH;
        w.u.data = d;
    } else {
        uam_out_t o;
        if (header_length < sizeof(o)) return UCS_OK;
        memcpy(&o, header, sizeof(o));
        if (!rndv) {
            out_arrived(module, &o, data, length);
            return UCS_OK;
        }
        w.kind = K_OUTFETCH;
        w.u.out = o;
    }
    if (rndv) {
        w.rdesc = data;
        w.rlen = length;
    }
    ompi_osc_ucxx_am_defer(OSC_UCXX_AM_UAM_WORK, module, h.from, &w, sizeof(w));
    return rndv ? UCS_INPROGRESS : UCS_OK;
}

/* A work item, in the drain (never inside a callback). */
static int uam_work(ompi_osc_ucxx_module_t *module, int peer, void *buf, size_t len,
                    bool deferred)
{
    uam_work_t *w = (uam_work_t *) buf;
    ompi_osc_ucxx_uam_t *uam = module->uam;

    switch (w->kind) {
    case K_RUN:
        return run_chunk(module, peer, w);
    case K_FETCH:
    case K_OUTFETCH:
        return fetch(module, peer, w);
    case K_OUTDONE:
        out_done(module, &w->u.out);
        return OMPI_SUCCESS;
    case K_CTRL:
        if (NULL == uam) {
            if (C_RESV == w->u.ctrl.type) {
                send_ctrl(module, peer, (uam_ctrl_t){.type = C_GRANT, .status = MPI_ERR_BUFFER});
            }
            return OMPI_SUCCESS;
        }
        if (C_RESV == w->u.ctrl.type) {
            pool_request(module, uam, &w->u.ctrl);
        } else if (C_RELEASE == w->u.ctrl.type) {
            pool_release(module, uam, peer, w->u.ctrl.grant);
        } else {
            grant_arrived(module, uam, peer, &w->u.ctrl);
        }
        return OMPI_SUCCESS;
    }
    return OMPI_SUCCESS;
}

/* Chunks and outputs may come by rendezvous: UCX's callback is ours.  Data
 * and buffer requests wait for the target's CPU. */
void ompi_osc_ucxx_uam_am_init(void)
{
    ompi_osc_ucxx_am_define(OSC_UCXX_AM_UAM_DATA, NULL, uam_recv, OSC_UCXX_AM_SERVED);
    ompi_osc_ucxx_am_define(OSC_UCXX_AM_UAM_OUT, NULL, uam_recv, 0);
    ompi_osc_ucxx_am_define(OSC_UCXX_AM_UAM_CTRL, NULL, uam_recv, OSC_UCXX_AM_SERVED);
    ompi_osc_ucxx_am_set_handler(OSC_UCXX_AM_UAM_WORK, uam_work);
}

/* ------------------------------------------------------------------------- */
/* Registration (S28): collective, checked for agreement in one allreduce */

#define OP_ID_NULL    0ULL            /* NULL op (MPI_ERR_ARG) */
#define OP_ID_INVALID UINT64_MAX      /* freed or not an op (MPI_ERR_OP) */

static int allreduce_max(ompi_osc_ucxx_module_t *module, int *v, int n)
{
    ompi_communicator_t *comm = module->comm;
    return comm->c_coll->coll_allreduce(MPI_IN_PLACE, v, n, &ompi_mpi_int.dt,
                                        &ompi_mpi_op_max.op, comm,
                                        comm->c_coll->coll_allreduce_module);
}

int ompi_osc_ucxx_uam_register(struct ompi_win_t *win, uint64_t op_id, int kind, void *fn,
                               void *extra, int index)
{
    ompi_osc_ucxx_view_t *view = OSC_UCXX_VIEW(win);
    ompi_osc_ucxx_module_t *module = view->core;
    ompi_osc_ucxx_uam_t *uam;
    int err = MPI_SUCCESS, v[5], rc;
    uam_reg_t *reg = NULL;

    if (in_handler) return MPI_ERR_OTHER;
    if (view->memhandle) return OMPI_ERR_WIN;   /* (local windows: nobody to agree with) */
    uam = uam_get(module);
    if (NULL == uam) {
        err = MPI_ERR_NO_MEM;
    } else if (OP_ID_INVALID == op_id) {
        err = MPI_ERR_OP;
    } else if (OP_ID_NULL == op_id || NULL == fn || index < 0 || index >= 65536) {
        err = MPI_ERR_ARG;
    } else if (NULL != reg_by_id(uam, op_id) || NULL != reg_by_index(uam, index)) {
        err = MPI_ERR_ARG;   /* op or index already registered */
    }
    v[0] = index;
    v[1] = -index;
    v[2] = kind;
    v[3] = -kind;
    v[4] = err;
    /* In the tables before the agreement: a peer that leaves the allreduce
     * first may send us an AM at once (S28); taken out again on failure. */
    if (MPI_SUCCESS == err) {
        reg = calloc(1, sizeof(*reg));
        if (NULL == reg) {
            err = v[4] = MPI_ERR_NO_MEM;
        } else {
            *reg = (uam_reg_t){.id = op_id, .kind = kind, .fn = fn, .extra = extra,
                               .index = index};
            OSC_UCXX_LOCK(&uam->lock);
            opal_hash_table_set_value_uint64(&uam->by_id, op_id, reg);
            opal_hash_table_set_value_uint32(&uam->by_index, (uint32_t) index, reg);
            OSC_UCXX_UNLOCK(&uam->lock);
        }
    }
    rc = allreduce_max(module, v, 5);
    if (OMPI_SUCCESS == rc && MPI_SUCCESS == err &&
        (0 != v[4] || v[0] != -v[1] || v[2] != -v[3])) {
        rc = MPI_ERR_ARG;   /* another rank failed, or the ranks disagree */
    }
    if (OMPI_SUCCESS != rc && NULL != reg) {
        OSC_UCXX_LOCK(&uam->lock);
        opal_hash_table_remove_value_uint64(&uam->by_id, op_id);
        opal_hash_table_remove_value_uint32(&uam->by_index, (uint32_t) index);
        OSC_UCXX_UNLOCK(&uam->lock);
        free(reg);
    }
    return MPI_SUCCESS != err ? err : rc;
}

int ompi_osc_ucxx_uam_deregister(struct ompi_win_t *win, uint64_t op_id)
{
    ompi_osc_ucxx_view_t *view = OSC_UCXX_VIEW(win);
    ompi_osc_ucxx_module_t *module = view->core;
    uam_reg_t *reg = reg_by_id(module->uam, op_id);
    int v[1], rc;

    if (in_handler) return MPI_ERR_OTHER;
    if (view->memhandle) return OMPI_ERR_WIN;
    v[0] = NULL == reg ? MPI_ERR_OP : (reg->pending > 0 ? MPI_ERR_RMA_SYNC : MPI_SUCCESS);
    rc = allreduce_max(module, v, 1);   /* everybody agrees, or nobody removes it */
    if (OMPI_SUCCESS != rc) return rc;
    if (NULL == reg) return MPI_ERR_OP;
    if (0 != v[0]) return reg->pending > 0 ? MPI_ERR_RMA_SYNC : v[0];
    OSC_UCXX_LOCK(&module->uam->lock);
    opal_hash_table_remove_value_uint64(&module->uam->by_id, op_id);
    opal_hash_table_remove_value_uint32(&module->uam->by_index, (uint32_t) reg->index);
    OSC_UCXX_UNLOCK(&module->uam->lock);
    free(reg);
    return MPI_SUCCESS;
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

    if (in_handler) return MPI_ERR_OTHER;
    if (view->memhandle) return OMPI_ERR_WIN;
    if (0 == size) return MPI_SUCCESS;
    if (NULL == (uam = uam_get(module))) return MPI_ERR_NO_MEM;
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
        space_init(&b->space, size & ~(size_t) 63);   /* staging takes 64-byte granules */
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

    if (in_handler) return MPI_ERR_OTHER;
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
    space_fini(&uam->bufs[b].space);
    memset(&uam->bufs[b], 0, sizeof(uam->bufs[b]));
    OSC_UCXX_UNLOCK(&uam->lock);
    return MPI_SUCCESS;
}

/* ------------------------------------------------------------------------- */
/* Epochs (S12, S23) */

int ompi_osc_ucxx_uam_epoch_assert(struct ompi_win_t *win, int assert)
{
    ompi_osc_ucxx_view_t *view = OSC_UCXX_VIEW(win);
    ompi_osc_ucxx_module_t *module = view->core;
    ompi_osc_ucxx_uam_t *uam;

    if (in_handler) return MPI_ERR_OTHER;
    if (view->memhandle) return OMPI_ERR_WIN;
    if (0 != (assert & ~4096)) return MPI_ERR_ASSERT;   /* MPIX_MODE_CONCURRENT_AM only */
    if (!ompi_osc_ucxx_epoch_any(module)) return OMPI_ERR_RMA_SYNC;
    if (0 == assert) return MPI_SUCCESS;
    if (NULL == (uam = uam_get(module))) return MPI_ERR_NO_MEM;
    uam->concurrent = 1;
    return MPI_SUCCESS;
}

/* After a completion call covering `target` (-1: all) completed our AMs:
 * give grants back that are held past their use (exclusive holders: at the
 * epoch's end, and at each flush under am_buf_interleave_am_detach), and
 * drop the concurrency assertion at the epoch's end. */
void ompi_osc_ucxx_uam_sync_any(ompi_osc_ucxx_module_t *module, int target, bool end)
{
    ompi_osc_ucxx_uam_t *uam = module->uam;
    int first = target < 0 ? 0 : target, last = target < 0 ? module->size : target + 1;

    if (end) uam->concurrent = 0;
    if (!end && !module->am_interleave) return;
    for (int i = first; i < last; ++i) {
        uam_tgt_t *tg = uam->tgts[i];
        if (NULL == tg || !tg->has_grant) continue;
        OSC_UCXX_LOCK(&tg->lock);
        if (tg->has_grant && space_idle(&tg->grant) && opal_list_is_empty(&tg->queue)) {
            grant_release(module, tg, i);
        }
        OSC_UCXX_UNLOCK(&tg->lock);
    }
}

/* MPI_Win_free: our AMs are complete (the free flushed), nobody sends us
 * more (it synchronized); drop everything. */
void ompi_osc_ucxx_uam_release(ompi_osc_ucxx_module_t *module)
{
    ompi_osc_ucxx_uam_t *uam = module->uam;
    uint64_t key;
    void *value, *node = NULL;

    if (NULL == uam) return;
    for (int i = 0; i < module->size; ++i) {
        uam_tgt_t *tg = uam->tgts[i];
        uam_org_t *org = uam->orgs[i];
        if (NULL != tg) {
            OPAL_LIST_DESTRUCT(&tg->queue);
            OBJ_DESTRUCT(&tg->lock);
            space_fini(&tg->sys);
            space_fini(&tg->hint);
            space_fini(&tg->grant);
            free(tg);
        }
        if (NULL != org) {
            while (NULL != org->execs) exec_free(org, org->execs);
            free(org->sys);
            free(org->done);
            free(org);
        }
    }
    if (OPAL_SUCCESS == opal_hash_table_get_first_key_uint64(&uam->by_id, &key, &value, &node)) {
        do {
            free(value);
        } while (OPAL_SUCCESS == opal_hash_table_get_next_key_uint64(&uam->by_id, &key, &value,
                                                                      node, &node));
    }
    for (int b = 0; b < uam->nbufs; ++b) space_fini(&uam->bufs[b].space);
    free(uam->bufs);
    free(uam->grants);
    free(uam->fifo);
    free(uam->tgts);
    free(uam->orgs);
    OBJ_DESTRUCT(&uam->by_index);
    OBJ_DESTRUCT(&uam->by_id);
    OBJ_DESTRUCT(&uam->lock);
    free(uam);
    module->uam = NULL;
}
