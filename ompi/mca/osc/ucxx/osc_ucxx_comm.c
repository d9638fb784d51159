/*
 * Copyright (c) 2026 The osc/ucxx authors. All rights reserved.
 * $COPYRIGHT$
 *
 * Put and get, plain and request-based, any datatypes on both sides.
 *
 * A put in steady state: ompi_osc_ucxx_put -> put_get: the prologue
 * (osc_ucxx_op.h: epoch check, range, worker, path) -> xfer: a memcpy into
 * the mapped target memory, or ucp_put_nbx on the link, counted for the next
 * flush.  User memory of a peer on the node (not mapped) goes by
 * cross-memory attach (osc_ucxx_cma.c), complete when the call returns: one
 * process_vm_writev / process_vm_readv per contiguous transfer, one per up to
 * IOV_MAX pieces of derived layouts.  Request-based operations complete per
 * operation (ucp completion of each piece), never through a worker flush.
 */

#include "ompi_config.h"

#include "osc_ucxx_op.h"
#include "osc_ucxx_request.h"
#include "osc_ucxx_dt.h"
#include "osc_ucxx_acc.h"
#include "osc_ucxx_cma.h"
#include "osc_ucxx_lockq.h"
#include "osc_ucxx_dynamic.h"
#include "osc_ucxx.h"

static int xfer_across(ompi_osc_ucxx_target_t *t, bool is_put, char *local, uint64_t remote,
                       size_t len, ompi_osc_ucxx_request_t *req);

/* A copy to or from mapped memory.  What glibc's memcpy does with a large
 * one depends on the machine, and twice it was the slow choice:
 *   - past a threshold computed from the cache size it switches to
 *     non-temporal stores, which go to DRAM, so that one call is slower than
 *     the same copy in 256 KiB pieces;
 *   - in pieces of 256 KiB it copies with `rep movsb`, which on some CPUs
 *     runs at half speed where source and destination share their page
 *     offset, as page-aligned window memory and page-aligned buffers do.
 * So larger copies go through a loop of 32-byte loads and aligned stores
 * where the CPU has AVX2 (at or below the better of the two at every page
 * offset and in both directions), and in 256 KiB pieces elsewhere.  Smaller
 * copies stay one call. */
#define OSC_UCXX_COPY_PIECE (256 * 1024)

#if defined(__GNUC__) && !defined(__clang__) && defined(__x86_64__)
#include <immintrin.h>

__attribute__((target("avx2"))) static void copy_vec32(char *dst, const char *src, size_t len)
{
    size_t head = (32 - ((uintptr_t) dst & 31)) & 31;  /* (len > 256 KiB: head < len) */
    memcpy(dst, src, head);
    dst += head, src += head, len -= head;
    for (; len >= 128; dst += 128, src += 128, len -= 128) {
        __m256i a = _mm256_loadu_si256((const __m256i *) src);
        __m256i b = _mm256_loadu_si256((const __m256i *) (src + 32));
        __m256i c = _mm256_loadu_si256((const __m256i *) (src + 64));
        __m256i d = _mm256_loadu_si256((const __m256i *) (src + 96));
        _mm256_store_si256((__m256i *) dst, a);
        _mm256_store_si256((__m256i *) (dst + 32), b);
        _mm256_store_si256((__m256i *) (dst + 64), c);
        _mm256_store_si256((__m256i *) (dst + 96), d);
    }
    memcpy(dst, src, len);
}
#endif

static __opal_attribute_noinline__ void copy_large(char *dst, const char *src, size_t len)
{
#if defined(__GNUC__) && !defined(__clang__) && defined(__x86_64__)
    if (ompi_osc_ucxx_cpu_vector() >= 32) {  /* (a few loads: copies of over 256 KiB) */
        copy_vec32(dst, src, len);
        return;
    }
#endif
    for (size_t done = 0; done < len; done += OSC_UCXX_COPY_PIECE) {
        size_t n = len - done < OSC_UCXX_COPY_PIECE ? len - done : OSC_UCXX_COPY_PIECE;
        memcpy(dst + done, src + done, n);
    }
}

static inline void copy_mapped(void *dst, const void *src, size_t len)
{
    /* the sizes of single elements: one load and one store, not a call */
    switch (len) {
    case 8: memcpy(dst, src, 8); return;
    case 4: memcpy(dst, src, 4); return;
    case 16: memcpy(dst, src, 16); return;
    case 1: memcpy(dst, src, 1); return;
    case 2: memcpy(dst, src, 2); return;
    default: break;
    }
    if (OPAL_LIKELY(len <= OSC_UCXX_COPY_PIECE)) {
        memcpy(dst, src, len);
    } else {
        copy_large(dst, src, len);
    }
}

/* One contiguous transfer through UCX: link + rkey. */
static int xfer_ucx(ompi_osc_ucxx_target_t *t, bool is_put, void *local, uint64_t remote,
                    size_t len, ompi_osc_ucxx_request_t *req)
{
    ompi_osc_ucxx_link_t *link = t->path.link;
    ucp_request_param_t param;
    ucs_status_ptr_t sp;

    if (OPAL_UNLIKELY(t->path.split)) {
        return xfer_across(t, is_put, local, remote, len, req);
    }
    param.op_attr_mask = 0;
    if (NULL != req) {
        param.op_attr_mask = UCP_OP_ATTR_FIELD_CALLBACK | UCP_OP_ATTR_FIELD_USER_DATA;
        param.cb.send = ompi_osc_ucxx_request_ucx_cb;
        param.user_data = req;
        ompi_osc_ucxx_request_more(req);
    }
    sp = is_put ? ucp_put_nbx(link->ep, local, len, remote, t->path.rkey, &param)
                : ucp_get_nbx(link->ep, local, len, remote, t->path.rkey, &param);
    ompi_osc_ucxx_link_dirty(t->module, link, t->rank);  /* counted once posted */
    ompi_osc_ucxx_link_held(link, sp);
    if (OPAL_LIKELY(NULL == sp)) {           /* done already */
        if (NULL != req) ompi_osc_ucxx_request_op_done(req);
    } else if (UCS_PTR_IS_ERR(sp)) {
        if (NULL != req) ompi_osc_ucxx_request_op_done(req);
        OSC_UCXX_VERBOSE(1, "%s failed: %s", is_put ? "ucp_put_nbx" : "ucp_get_nbx",
                         ucs_status_string(UCS_PTR_STATUS(sp)));
        return OMPI_ERROR;
    } else if (NULL == req) {
        ucp_request_free(sp);                /* a flush completes it */
    }
    return OMPI_SUCCESS;
}

/* The kernel refused cross-memory attach after all (the target changed its
 * credentials or became undumpable): the target is reached through UCX from
 * now on (a path by cross-memory attach has no link until then). */
static int cma_refused(ompi_osc_ucxx_target_t *t)
{
    t->peer->cma = 0;
    t->path.cma = 0;
    if (NULL != t->path.link) return OMPI_SUCCESS;  /* (dynamic windows: the region's) */
    if (MPI_WIN_FLAVOR_DYNAMIC == t->module->flavor) {
        /* (found in the target's region table, with no link: ask for it) */
        return ompi_osc_ucxx_dyn_resolve(t->module, t->worker, t->rank, t->lo, t->hi,
                                         &t->path);
    }
    return ompi_osc_ucxx_path_ucx(t->module, t->worker, t->rank, &t->path);
}

/* One contiguous transfer by cross-memory attach. */
static __opal_attribute_noinline__ int xfer_cma(ompi_osc_ucxx_target_t *t, bool is_put,
                                                void *local, uint64_t remote, size_t len,
                                                ompi_osc_ucxx_request_t *req)
{
    int rc = ompi_osc_ucxx_cma_copy(t->path.cma, is_put, local, remote, len);
    if (OPAL_UNLIKELY(OMPI_ERR_NOT_AVAILABLE == rc)) {
        rc = cma_refused(t);
        if (OMPI_SUCCESS != rc) return rc;
        return xfer_ucx(t, is_put, local, remote, len, req);
    }
    return rc;
}

/* One contiguous transfer: a copy where the target's memory is mapped (inline:
 * the common case on a node), else by cross-memory attach or through UCX.
 * (GCC kept it out of line, a call and a frame per small put, visible in
 * the put's profile.) */
static inline __opal_attribute_always_inline__ int
xfer(ompi_osc_ucxx_target_t *t, bool is_put, void *local, uint64_t remote, size_t len,
     ompi_osc_ucxx_request_t *req)
{
    if (OPAL_LIKELY(t->path.mapped)) {
        char *p = (char *) (uintptr_t) (remote + t->path.delta);
        ompi_osc_ucxx_prefault(t->module, t->rank, p, len, is_put);
        if (is_put) {
            copy_mapped(p, local, len);
        } else {
            copy_mapped(local, p, len);
        }
        return OMPI_SUCCESS;
    }
    if (t->path.cma) {
        return xfer_cma(t, is_put, local, remote, len, req);
    }
    return xfer_ucx(t, is_put, local, remote, len, req);
}

/* Dynamic windows: a transfer over regions attached back to back, one
 * transfer per region (each has its own registration). */
static int xfer_across(ompi_osc_ucxx_target_t *t, bool is_put, char *local, uint64_t remote,
                       size_t len, ompi_osc_ucxx_request_t *req)
{
    ompi_osc_ucxx_target_t piece = *t;
    uint64_t end;
    int rc = OMPI_SUCCESS;

    while (OMPI_SUCCESS == rc && len > 0) {
        rc = ompi_osc_ucxx_dyn_piece(t->module, t->worker, t->rank, remote, remote + len,
                                     &piece.path, &end);
        if (OMPI_SUCCESS != rc) break;
        rc = xfer(&piece, is_put, local, remote, end - remote, req);
        local += end - remote;
        len -= end - remote;
        remote = end;
    }
    return rc;
}

/* Walk both layouts at once, one transfer per matching piece. */
static __opal_attribute_noinline__ int
xfer_pieces(ompi_osc_ucxx_target_t *t, bool is_put, void *origin_addr, int origin_count,
            struct ompi_datatype_t *origin_dt, int target_count, struct ompi_datatype_t *target_dt,
            ompi_osc_ucxx_request_t *req)
{
    ompi_osc_ucxx_dt_iter_t o, it;
    char *lp;
    uint64_t rp;
    size_t len;
    int rc = OMPI_SUCCESS;

    ompi_osc_ucxx_dt_iter_init(&o, origin_addr, origin_count, origin_dt);
    ompi_osc_ucxx_dt_iter_init(&it, (void *) (uintptr_t) t->remote, target_count, target_dt);
    while (OMPI_SUCCESS == rc && ompi_osc_ucxx_dt_iter_pair(&o, &it, &lp, &rp, &len)) {
        rc = xfer(t, is_put, lp, rp, len, req);
    }
    ompi_osc_ucxx_dt_iter_fini(&o);
    ompi_osc_ucxx_dt_iter_fini(&it);
    return rc;
}

/* Cross-memory attach: both layouts walked at once, their matching pieces
 * copied by batches of up to OSC_UCXX_CMA_BATCH in one system call each.
 * Refused after all: the pieces again through UCX (a put or get may be
 * repeated: nothing else touches those bytes meanwhile). */
#define OSC_UCXX_CMA_BATCH 256

static __opal_attribute_noinline__ int
xfer_cma_pieces(ompi_osc_ucxx_target_t *t, bool is_put, void *origin_addr, int origin_count,
                struct ompi_datatype_t *origin_dt, int target_count,
                struct ompi_datatype_t *target_dt, ompi_osc_ucxx_request_t *req)
{
    struct iovec local[OSC_UCXX_CMA_BATCH], remote[OSC_UCXX_CMA_BATCH];
    ompi_osc_ucxx_dt_iter_t o, it;
    size_t n = 0, len;
    uint64_t rp;
    char *lp;
    bool more = true;
    int rc = OMPI_SUCCESS;

    ompi_osc_ucxx_dt_iter_init(&o, origin_addr, origin_count, origin_dt);
    ompi_osc_ucxx_dt_iter_init(&it, (void *) (uintptr_t) t->remote, target_count, target_dt);
    while (OMPI_SUCCESS == rc && more) {
        more = ompi_osc_ucxx_dt_iter_pair(&o, &it, &lp, &rp, &len);
        if (more) {
            local[n] = (struct iovec){lp, len};
            remote[n++] = (struct iovec){(void *) (uintptr_t) rp, len};
        }
        if (n > 0 && (!more || OSC_UCXX_CMA_BATCH == n)) {
            rc = ompi_osc_ucxx_cma_copyv(t->path.cma, is_put, local, remote, n);
            n = 0;
        }
    }
    ompi_osc_ucxx_dt_iter_fini(&o);
    ompi_osc_ucxx_dt_iter_fini(&it);
    if (OPAL_UNLIKELY(OMPI_ERR_NOT_AVAILABLE == rc)) {
        rc = cma_refused(t);
        if (OMPI_SUCCESS != rc) return rc;
        return xfer_pieces(t, is_put, origin_addr, origin_count, origin_dt, target_count,
                           target_dt, req);
    }
    return rc;
}

/* ------------------------------------------------------------------------- */
/* Derived datatypes in large pieces (issue 17 item 5).  One UCX operation or
 * memcpy per contiguous piece is what xfer_pieces does; with many small
 * pieces that is the cost, not the bytes:
 *   - mapped memory: the convertor's block copy where both sides have one
 *     type, else one pack straight into (unpack straight from) a contiguous
 *     side, instead of our walk of both layouts (a convertor call per 32
 *     pieces and a memcpy per piece, several times slower than osc/sm and
 *     osc/rdma on large indexed and struct types);
 *   - memory we do not map, where every piece is a UCX operation the target
 *     emulates (one TCP send each with UCX_TLS=tcp), when the pieces are
 *     small: the accumulate messages (osc_ucxx_acc_am.c) with MPI_BYTE
 *     elements, REPLACE for a put and NO_OP fetching for a get, so up to
 *     osc_ucxx_acc_am_chunk bytes of values plus their (offset, length) runs
 *     travel in one message and the target copies them.  UCX 1.13 has no
 *     IOV for put/get (ucp.h: only ucp_dt_make_contig(1)), so packing is
 *     the way to large pieces.  Completion is the messages' (flushes wait
 *     for their answers; requests count them). */

/* Pieces looked at before choosing, and the mean piece length below which
 * messages carry a transfer to unmapped memory. */
#define OSC_UCXX_PROBE_PIECES 16
#define OSC_UCXX_SMALL_PIECE 2048

/* All of one contiguous side from / into a derived layout with one
 * convertor call (the convertor copies block by block). */
static void convertor_copy(bool pack, char *buf, int count, struct ompi_datatype_t *dt,
                           char *contig, size_t size)
{
    opal_convertor_t conv;
    size_t done = 0;
    bool complete = false;

    OBJ_CONSTRUCT(&conv, opal_convertor_t);
    if (pack) {
        opal_convertor_copy_and_prepare_for_send(ompi_mpi_local_convertor, &dt->super, count, buf,
                                                 0, &conv);
    } else {
        opal_convertor_copy_and_prepare_for_recv(ompi_mpi_local_convertor, &dt->super, count, buf,
                                                 0, &conv);
    }
    while (!complete && done < size) {
        struct iovec iov = {.iov_base = contig + done, .iov_len = size - done};
        uint32_t n = 1;
        size_t max = size - done;
        complete = pack ? opal_convertor_pack(&conv, &iov, &n, &max)
                        : opal_convertor_unpack(&conv, &iov, &n, &max);
        if (0 == max) break;
        done += max;
    }
    OBJ_DESTRUCT(&conv);
}

/* Mapped memory, a derived layout on at least one side: one type on both
 * sides is the convertor's block copy, one contiguous side one pack or
 * unpack; two different derived layouts keep the walk of both (false).
 * (Not ompi_datatype_sndrcv: in Open MPI 4.1.4 it copies only part of a
 * vector into a contiguous buffer.) */
static __opal_attribute_noinline__ bool
mapped_typed_copy(ompi_osc_ucxx_target_t *t, bool is_put, void *origin_addr, int origin_count,
                  struct ompi_datatype_t *origin_dt, int target_count,
                  struct ompi_datatype_t *target_dt, size_t size)
{
    char *tbuf = (char *) (uintptr_t) (t->remote + t->path.delta);
    char *src = is_put ? (char *) origin_addr : tbuf, *dst = is_put ? tbuf : (char *) origin_addr;
    int scount = is_put ? origin_count : target_count, dcount = is_put ? target_count : origin_count;
    struct ompi_datatype_t *sdt = is_put ? origin_dt : target_dt;
    struct ompi_datatype_t *ddt = is_put ? target_dt : origin_dt;

    if (sdt == ddt && scount == dcount) {
        ompi_datatype_copy_content_same_ddt(sdt, scount, dst, src);
    } else if (ompi_datatype_is_contiguous_memory_layout(ddt, dcount)) {
        convertor_copy(true, src, scount, sdt, dst + ddt->super.true_lb, size);
    } else if (ompi_datatype_is_contiguous_memory_layout(sdt, scount)) {
        convertor_copy(false, dst, dcount, ddt, src + sdt->super.true_lb, size);
    } else {
        return false;
    }
    return true;
}

/* Does the transfer start with at least OSC_UCXX_PROBE_PIECES pieces of
 * OSC_UCXX_SMALL_PIECE bytes or less on average?  (ordered views keep one
 * ordered stream of UCX operations: never by message; nor what a message
 * walk could not count in an int) */
static __opal_attribute_noinline__ bool
small_pieces(ompi_osc_ucxx_target_t *t, void *origin_addr, int origin_count,
             struct ompi_datatype_t *origin_dt, int target_count, struct ompi_datatype_t *target_dt,
             size_t size)
{
    ompi_osc_ucxx_dt_iter_t o, it;
    char *lp;
    uint64_t rp;
    size_t len, bytes = 0;
    int n = 0;

    if (t->view->ordered || size > INT_MAX) {
        return false;
    }
    ompi_osc_ucxx_dt_iter_init(&o, origin_addr, origin_count, origin_dt);
    ompi_osc_ucxx_dt_iter_init(&it, (void *) (uintptr_t) t->remote, target_count, target_dt);
    while (n < OSC_UCXX_PROBE_PIECES && ompi_osc_ucxx_dt_iter_pair(&o, &it, &lp, &rp, &len)) {
        bytes += len;
        n++;
    }
    ompi_osc_ucxx_dt_iter_fini(&o);
    ompi_osc_ucxx_dt_iter_fini(&it);
    return OSC_UCXX_PROBE_PIECES == n && bytes < OSC_UCXX_PROBE_PIECES * OSC_UCXX_SMALL_PIECE;
}

/* A contiguous side as `size` bytes (the message path walks layouts in
 * elements of MPI_BYTE; a predefined type would count as that many bytes). */
static void as_bytes(char **addr, int *count, struct ompi_datatype_t **dt, size_t size)
{
    if (ompi_datatype_is_contiguous_memory_layout(*dt, *count)) {
        *addr += (*dt)->super.true_lb;
        *count = (int) size;
        *dt = &ompi_mpi_byte.dt;
    }
}

static __opal_attribute_noinline__ int
put_get_by_message(ompi_osc_ucxx_target_t *t, bool is_put, void *origin_addr, int origin_count,
                   struct ompi_datatype_t *origin_dt, int target_count,
                   struct ompi_datatype_t *target_dt, size_t size, ompi_osc_ucxx_request_t *req)
{
    ompi_osc_ucxx_acc_t a = {.t = t, .elem = &ompi_mpi_byte.dt, .fetch = !is_put, .req = req,
                             .op = is_put ? &ompi_mpi_op_replace.op : &ompi_mpi_op_no_op.op};
    char *oaddr = origin_addr, *taddr = (char *) (uintptr_t) t->remote;

    as_bytes(&oaddr, &origin_count, &origin_dt, size);
    as_bytes(&taddr, &target_count, &target_dt, size);
    t->remote = (uint64_t) (uintptr_t) taddr;
    ompi_osc_ucxx_acc_geometry(&a);
    if (is_put) {
        return ompi_osc_ucxx_acc_am(&a, oaddr, origin_count, origin_dt, NULL, NULL, 0, NULL,
                                    target_count, target_dt);
    }
    return ompi_osc_ucxx_acc_am(&a, NULL, 0, NULL, NULL, oaddr, origin_count, origin_dt,
                                target_count, target_dt);
}

static int put_get(ompi_osc_ucxx_view_t *view, bool is_put, void *origin_addr, int origin_count,
                   struct ompi_datatype_t *origin_dt, int target, ptrdiff_t target_disp,
                   int target_count, struct ompi_datatype_t *target_dt,
                   ompi_osc_ucxx_request_t *req)
{
    ompi_osc_ucxx_target_t t;
    size_t size = origin_dt->super.size * (size_t) origin_count;
    int rc;

    if (OPAL_UNLIKELY(MPI_PROC_NULL == target)) {
        return ompi_osc_ucxx_proc_null(view);
    }
    rc = ompi_osc_ucxx_op_begin(view, target, target_disp, target_count, target_dt, &t);
    if (OPAL_UNLIKELY(OMPI_SUCCESS != rc)) {
        return rc;
    }
    if (OPAL_UNLIKELY(size != target_dt->super.size * (size_t) target_count)) {
        return MPI_ERR_TYPE;  /* the type signatures cannot match */
    }
    if (OPAL_UNLIKELY(0 == size)) {
        return OMPI_SUCCESS;
    }
    if (OPAL_UNLIKELY(t.peer->access & OSC_UCXX_TGT_LAZY)) {
        /* carried in the lock request not sent yet, or issued once it is
         * granted (osc_ucxx_lazy.c) */
        rc = ompi_osc_ucxx_lazy_put_get(&t, is_put, origin_addr, origin_count, origin_dt,
                                        target_count, target_dt, req);
        if (OSC_UCXX_ISSUE != rc) return rc;
    }
    if (OPAL_UNLIKELY(MPI_WIN_FLAVOR_DYNAMIC == t.module->flavor) && NULL == req &&
        ompi_osc_ucxx_dyn_by_message(&t, size)) {
        /* the target checks the range: no wait for its detach generation */
        rc = put_get_by_message(&t, is_put, origin_addr, origin_count, origin_dt, target_count,
                                target_dt, size, req);
        ompi_osc_ucxx_dyn_read_ahead(t.module, t.worker, target);
        return rc;
    }
    rc = ompi_osc_ucxx_op_resolve(&t, false);
    if (OPAL_UNLIKELY(OMPI_SUCCESS != rc)) {
        return rc;
    }
    if (OPAL_UNLIKELY(view->ordered)) {
        /* mpi_win_order: after the messages sent before it are applied.  A
         * fence does not give that: the target applies a message when its
         * handler runs, and UCX (1.18: rendezvous for large messages, RMA on
         * other lanes) may deliver a later put first. */
        ompi_osc_ucxx_wait_messages(view->core);
    }
    if (OPAL_LIKELY(ompi_datatype_is_contiguous_memory_layout(origin_dt, origin_count) &&
                    ompi_datatype_is_contiguous_memory_layout(target_dt, target_count))) {
        rc = xfer(&t, is_put, (char *) origin_addr + origin_dt->super.true_lb,
                  t.remote + target_dt->super.true_lb, size, req);
    } else if (t.path.mapped && mapped_typed_copy(&t, is_put, origin_addr, origin_count,
                                                  origin_dt, target_count, target_dt, size)) {
        rc = OMPI_SUCCESS;
    } else if (t.path.cma) {
        rc = xfer_cma_pieces(&t, is_put, origin_addr, origin_count, origin_dt, target_count,
                             target_dt, req);
    } else if (!t.path.mapped &&
               small_pieces(&t, origin_addr, origin_count, origin_dt, target_count, target_dt,
                            size)) {
        rc = put_get_by_message(&t, is_put, origin_addr, origin_count, origin_dt, target_count,
                                target_dt, size, req);
    } else {
        rc = xfer_pieces(&t, is_put, origin_addr, origin_count, origin_dt, target_count,
                         target_dt, req);
    }
    if (OPAL_UNLIKELY(view->ordered) && !t.path.mapped && !t.path.cma && OMPI_SUCCESS == rc) {
        /* mpi_win_order: later operations land after this one */
        rc = ompi_osc_ucxx_fence_link(t.module, t.worker, t.path.link);
    }
    return rc;
}

int ompi_osc_ucxx_put_get(ompi_osc_ucxx_view_t *view, bool is_put, void *origin_addr,
                          int origin_count, struct ompi_datatype_t *origin_dt, int target,
                          ptrdiff_t target_disp, int target_count,
                          struct ompi_datatype_t *target_dt, ompi_osc_ucxx_request_t *req)
{
    bool held = ompi_osc_ucxx_dyn_serial_enter(view->core);
    int rc = put_get(view, is_put, origin_addr, origin_count, origin_dt, target, target_disp,
                     target_count, target_dt, req);
    ompi_osc_ucxx_dyn_serial_leave(view->core, held);
    return rc;
}

/* The copy a mapped put or get makes. */
static inline void copy_access(char *p, bool is_put, void *origin_addr, size_t size)
{
    if (is_put) {
        copy_mapped(p, origin_addr, size);
    } else {
        copy_mapped(origin_addr, p, size);
    }
}

/* Any size, the target's pages populated first where it is large
 * (ompi_osc_ucxx_prefault; out of line: the common sizes' path in
 * put_or_get then needs no module). */
static __opal_attribute_noinline__ void copy_access_prefault(ompi_osc_ucxx_module_t *module,
                                                             int target, char *p, bool is_put,
                                                             void *origin_addr, size_t size)
{
    ompi_osc_ucxx_prefault(module, target, p, size, is_put);
    copy_access(p, is_put, origin_addr, size);
}

/* Where a plain window's mapped path said no: an ordered window's (out of
 * the plain windows' way), then the general path. */
static __opal_attribute_noinline__ int
put_get_else(ompi_osc_ucxx_view_t *view, bool is_put, void *origin_addr, int origin_count,
             struct ompi_datatype_t *origin_dt, int target, ptrdiff_t target_disp,
             int target_count, struct ompi_datatype_t *target_dt)
{
    size_t size;
    char *p;

    if (view->ordered &&
        NULL != (p = ompi_osc_ucxx_mapped_access(view, true, target, target_disp, target_count,
                                                 target_dt, origin_count, origin_dt, &size))) {
        copy_access_prefault(view->core, target, p, is_put, origin_addr, size);
        return OMPI_SUCCESS;
    }
    return ompi_osc_ucxx_put_get(view, is_put, origin_addr, origin_count, origin_dt, target,
                                 target_disp, target_count, target_dt, NULL);
}

/* MPI_Put / MPI_Get: the mapped path, else the general one. */
static inline __opal_attribute_always_inline__ int
put_or_get(struct ompi_win_t *win, bool is_put, void *origin_addr, int origin_count,
           struct ompi_datatype_t *origin_dt, int target, ptrdiff_t target_disp, int target_count,
           struct ompi_datatype_t *target_dt)
{
    size_t size;
    char *p = ompi_osc_ucxx_mapped_access(OSC_UCXX_VIEW(win), false, target, target_disp,
                                          target_count, target_dt, origin_count, origin_dt,
                                          &size);
    if (OPAL_LIKELY(NULL != p)) {
        if (OPAL_UNLIKELY(size > OSC_UCXX_PREFAULT_MIN)) {
            copy_access_prefault(OSC_UCXX_VIEW(win)->core, target, p, is_put, origin_addr,
                                 size);
        } else {
            copy_access(p, is_put, origin_addr, size);
        }
        return OMPI_SUCCESS;
    }
    return put_get_else(OSC_UCXX_VIEW(win), is_put, origin_addr, origin_count, origin_dt, target,
                        target_disp, target_count, target_dt);
}

int ompi_osc_ucxx_put(const void *origin_addr, int origin_count,
                      struct ompi_datatype_t *origin_dt, int target, ptrdiff_t target_disp,
                      int target_count, struct ompi_datatype_t *target_dt,
                      struct ompi_win_t *win)
{
    return put_or_get(win, true, (void *) origin_addr, origin_count, origin_dt, target,
                      target_disp, target_count, target_dt);
}

int ompi_osc_ucxx_get(void *origin_addr, int origin_count, struct ompi_datatype_t *origin_dt,
                      int target, ptrdiff_t target_disp, int target_count,
                      struct ompi_datatype_t *target_dt, struct ompi_win_t *win)
{
    return put_or_get(win, false, origin_addr, origin_count, origin_dt, target, target_disp,
                      target_count, target_dt);
}

/* Request-based: the request completes when every piece is locally complete. */
static int rput_rget(struct ompi_win_t *win, bool is_put, void *origin_addr, int origin_count,
                     struct ompi_datatype_t *origin_dt, int target, ptrdiff_t target_disp,
                     int target_count, struct ompi_datatype_t *target_dt,
                     struct ompi_request_t **request)
{
    ompi_osc_ucxx_view_t *view = OSC_UCXX_VIEW(win);
    ompi_osc_ucxx_request_t *req;
    int rc;

    rc = ompi_osc_ucxx_request_alloc(win, ompi_osc_ucxx_view_worker(view), &req);
    if (OMPI_SUCCESS != rc) {
        return rc;
    }
    rc = ompi_osc_ucxx_put_get(view, is_put, origin_addr, origin_count, origin_dt, target,
                               target_disp, target_count, target_dt, req);
    if (OMPI_SUCCESS != rc) {
        ompi_osc_ucxx_request_abandon(req);
        return rc;
    }
    ompi_osc_ucxx_request_op_done(req);  /* drop the issuing reference */
    *request = &req->super;
    return OMPI_SUCCESS;
}

int ompi_osc_ucxx_rput(const void *origin_addr, int origin_count,
                       struct ompi_datatype_t *origin_dt, int target, ptrdiff_t target_disp,
                       int target_count, struct ompi_datatype_t *target_dt,
                       struct ompi_win_t *win, struct ompi_request_t **request)
{
    return rput_rget(win, true, (void *) origin_addr, origin_count, origin_dt, target,
                     target_disp, target_count, target_dt, request);
}

int ompi_osc_ucxx_rget(void *origin_addr, int origin_count, struct ompi_datatype_t *origin_dt,
                       int target, ptrdiff_t target_disp, int target_count,
                       struct ompi_datatype_t *target_dt, struct ompi_win_t *win,
                       struct ompi_request_t **request)
{
    return rput_rget(win, false, origin_addr, origin_count, origin_dt, target, target_disp,
                     target_count, target_dt, request);
}
