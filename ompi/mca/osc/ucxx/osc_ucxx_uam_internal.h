/*
 * Copyright (c) 2026 The osc/ucxx authors. All rights reserved.
 * $COPYRIGHT$
 *
 * User active messages, inside: what the osc_ucxx_uam*.c files share (not
 * for the rest of the component).  The wire formats, the work items the
 * drain runs, the per-window state and the functions one file gives the
 * others; osc_ucxx_uam.c has the overview and points to each file.
 */

#ifndef OMPI_OSC_UCXX_UAM_INTERNAL_H
#define OMPI_OSC_UCXX_UAM_INTERNAL_H

#include "ompi/datatype/ompi_datatype.h"

#include "osc_ucxx_op.h"
#include "osc_ucxx_request.h"
#include "osc_ucxx_uam.h"

BEGIN_C_DECLS

/* ------------------------------------------------------------------------- */
/* Sizes (S7) */

static inline size_t a64(size_t n)
{
    return (n + 63) & ~(size_t) 63;
}

/* Bytes n elements of dt span: (n-1) extents plus one true extent. */
static inline size_t span(int64_t n, ompi_datatype_t *dt)
{
    ptrdiff_t lb, extent, tlb, textent;
    if (n <= 0) return 0;
    ompi_datatype_get_extent(dt, &lb, &extent);
    ompi_datatype_get_true_extent(dt, &tlb, &textent);
    return (size_t) ((n - 1) * extent + textent);
}

static inline ptrdiff_t true_lb(ompi_datatype_t *dt)
{
    ptrdiff_t tlb, textent;
    ompi_datatype_get_true_extent(dt, &tlb, &textent);
    return tlb;
}

static inline ptrdiff_t extent_of(ompi_datatype_t *dt)
{
    ptrdiff_t lb, extent;
    ompi_datatype_get_extent(dt, &lb, &extent);
    return extent;
}

static inline size_t size_of(ompi_datatype_t *dt)
{
    size_t size;
    ompi_datatype_type_size(dt, &size);
    return size;
}

/* ------------------------------------------------------------------------- */
/* Space: offsets in a staging area (an origin's internal slot at a target,
 * its hinted portion, a grant, a target's attached user buffer), first fit,
 * in 64-byte granules (S7), the free ranges kept sorted and joined.  Inline:
 * placing a chunk is on every AM's way out. */

typedef struct {
    size_t size;
    int n, cap;
    struct uam_range { size_t off, len; } *r;   /* free ranges, sorted */
} uam_space_t;

static inline void ompi_osc_ucxx_space_init(uam_space_t *s, size_t size)
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

static inline void ompi_osc_ucxx_space_fini(uam_space_t *s)
{
    free(s->r);
    memset(s, 0, sizeof(*s));
}

static inline bool ompi_osc_ucxx_space_alloc(uam_space_t *s, size_t len, size_t *off)
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

static inline void ompi_osc_ucxx_space_free(uam_space_t *s, size_t off, size_t len)
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

static inline size_t ompi_osc_ucxx_space_largest(const uam_space_t *s, size_t *off)
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

static inline bool ompi_osc_ucxx_space_idle(const uam_space_t *s)
{
    return 0 == s->size || (1 == s->n && s->r[0].len == s->size);
}

/* Remove [off, off+len) from the free ranges (carving a known-free range). */
static inline void ompi_osc_ucxx_space_take(uam_space_t *s, size_t off, size_t len)
{
    len = a64(len);
    for (int i = 0; i < s->n; ++i) {
        struct uam_range r = s->r[i];
        if (off < r.off || off + len > r.off + r.len) continue;
        s->r[i].len = off - r.off;
        if (r.off + r.len > off + len) {
            ompi_osc_ucxx_space_free(s, off + len, r.off + r.len - off - len);
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
#define F_DERIVED    0x20   /* a target type is derived: the target builds it only
                             * on a thread that may (ompi_osc_ucxx_objects_ours) */
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

/* The window's state, made on first use; an origin's record, made on
 * first contact (osc_ucxx_uam.c). */
ompi_osc_ucxx_uam_t *ompi_osc_ucxx_uam_get(ompi_osc_ucxx_module_t *module);
uam_org_t *ompi_osc_ucxx_uam_org(ompi_osc_ucxx_module_t *module, ompi_osc_ucxx_uam_t *uam,
                                 int from);

/* A registration by op id or by index (inline: every AM looks its op up). */
static inline uam_reg_t *ompi_osc_ucxx_uam_reg_by_id(ompi_osc_ucxx_uam_t *uam, uint64_t id)
{
    void *v = NULL;
    if (NULL == uam) return NULL;
    OSC_UCXX_LOCK(&uam->lock);
    (void) opal_hash_table_get_value_uint64(&uam->by_id, id, &v);
    OSC_UCXX_UNLOCK(&uam->lock);
    return v;
}

static inline uam_reg_t *ompi_osc_ucxx_uam_reg_by_index(ompi_osc_ucxx_uam_t *uam, int index)
{
    void *v = NULL;
    if (NULL == uam) return NULL;
    OSC_UCXX_LOCK(&uam->lock);
    (void) opal_hash_table_get_value_uint32(&uam->by_index, (uint32_t) index, &v);
    OSC_UCXX_UNLOCK(&uam->lock);
    return v;
}

/* ------------------------------------------------------------------------- */
/* Layouts and running handlers (osc_ucxx_uam_exec.c) */

/* Staging bytes a chunk of k segments takes at the target (S7). */
static inline size_t chunk_need(int k, int n, ompi_datatype_t *tin, int m, ompi_datatype_t *tout)
{
    return a64(span((int64_t) k * n, tin)) + a64(span((int64_t) k * m, tout));
}

/* Element 0 of segment `seg` of an origin buffer. */
static inline char *seg_ptr(const void *base, int seg, int count, ompi_datatype_t *dt)
{
    return (char *) base + (ptrdiff_t) seg * count * extent_of(dt);
}

void ompi_osc_ucxx_uam_copy_layout(void *dst, int64_t dcount, ompi_datatype_t *ddt,
                                   const void *src, int64_t scount, ompi_datatype_t *sdt);
void ompi_osc_ucxx_uam_store_output(const ompi_osc_ucxx_am_args_t *a, int m, const char *out,
                                    int first, int k, const int *tcounts, int *ocounts);
int ompi_osc_ucxx_uam_invoke(const uam_reg_t *reg, const void *in, int n, ompi_datatype_t *tin,
                             void *paddr, int pcount, ompi_datatype_t *pdt, void *out, int m,
                             ompi_datatype_t *tout, int nseg, int first, int *counts);

/* ------------------------------------------------------------------------- */
/* Issuing, and the message path's origin side (osc_ucxx_uam_origin.c) */

void ompi_osc_ucxx_uam_out_arrived(ompi_osc_ucxx_module_t *module, const uam_out_t *o,
                                   const char *payload, size_t len);
void ompi_osc_ucxx_uam_out_done(ompi_osc_ucxx_module_t *module, const uam_out_t *o);
void ompi_osc_ucxx_uam_grant_arrived(ompi_osc_ucxx_module_t *module, ompi_osc_ucxx_uam_t *uam,
                                     int from, const uam_ctrl_t *c);
void ompi_osc_ucxx_uam_grant_release(ompi_osc_ucxx_module_t *module, uam_tgt_t *tg, int target);

/* ------------------------------------------------------------------------- */
/* The message path, target side (osc_ucxx_uam_target.c) */

void ompi_osc_ucxx_uam_chunk_arrived(ompi_osc_ucxx_module_t *module, int from,
                                     const uam_data_t *d, const char *payload, size_t len);
int ompi_osc_ucxx_uam_run_chunk(ompi_osc_ucxx_module_t *module, int from, uam_work_t *w);
void ompi_osc_ucxx_uam_exec_free(uam_org_t *org, uam_exec_t *ex);

/* ------------------------------------------------------------------------- */
/* User buffers and the grant service, target side (osc_ucxx_uam_pool.c) */

void ompi_osc_ucxx_uam_send_ctrl(ompi_osc_ucxx_module_t *module, int to, uam_ctrl_t c);
int ompi_osc_ucxx_uam_stage_place(ompi_osc_ucxx_module_t *module, ompi_osc_ucxx_uam_t *uam,
                                  int from, const uam_data_t *d, char **place, int *buf);
void ompi_osc_ucxx_uam_stage_unpin(ompi_osc_ucxx_uam_t *uam, int buf);
void ompi_osc_ucxx_uam_pool_request(ompi_osc_ucxx_module_t *module, ompi_osc_ucxx_uam_t *uam,
                                    const uam_ctrl_t *c);
void ompi_osc_ucxx_uam_pool_release(ompi_osc_ucxx_module_t *module, ompi_osc_ucxx_uam_t *uam,
                                    int from, uint32_t id);

END_C_DECLS

#endif /* OMPI_OSC_UCXX_UAM_INTERNAL_H */
