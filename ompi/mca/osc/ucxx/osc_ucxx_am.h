/*
 * Copyright (c) 2026 The osc/ucxx authors. All rights reserved.
 * $COPYRIGHT$
 *
 * Active messages (UCP AM): the path for what RDMA cannot carry
 * (osc_ucxx_am.c has the protocol).
 */

#ifndef OMPI_OSC_UCXX_AM_H
#define OMPI_OSC_UCXX_AM_H

#include "osc_ucxx_target.h"

BEGIN_C_DECLS

/* Every message starts with this. */
typedef struct {
    uint32_t cid;      /* the window's id (osc_ucxx_wcomm.c) */
    int32_t from;      /* sender's rank in the window */
} ompi_osc_ucxx_am_hdr_t;

#define OSC_UCXX_AM_POST       1   /* MPI_Win_post notification */
#define OSC_UCXX_AM_ACC        2   /* accumulate-family operation for the target */
#define OSC_UCXX_AM_ACC_REPLY  3   /* its acknowledgement, with old values if fetching */
#define OSC_UCXX_AM_REGION_REQ 4   /* dynamic windows: which region holds [lo, hi)? */
#define OSC_UCXX_AM_REGION_REPLY 5
#define OSC_UCXX_AM_UAM_DATA   6   /* user active messages (osc_ucxx_uam.c): a chunk */
#define OSC_UCXX_AM_UAM_OUT    7   /* ... its output and returned credit */
#define OSC_UCXX_AM_UAM_CTRL   8   /* ... buffer reservations, grants, releases */
#define OSC_UCXX_AM_NOTICE     9   /* behind an epoch's operations: they are all there
                                    * (osc_ucxx_notice.c) */
#define OSC_UCXX_AM_LOCK       10  /* target-managed locks (osc_ucxx_lockq.c): a request,
                                    * with the epoch it carries, or a release */
#define OSC_UCXX_AM_LOCK_REPLY 11  /* ... the grant or the release's answer, with results */
#define OSC_UCXX_AM_MAX       12   /* ids registered with UCX are below this */
#define OSC_UCXX_AM_SEND      12   /* queue only: a message to send outside a callback */
#define OSC_UCXX_AM_UAM_WORK  13   /* queue only: user active-message work */
#define OSC_UCXX_AM_LOCK_WORK 14   /* queue only: a lock queue waiting for a stripe */
#define OSC_UCXX_AM_KINDS     15

/* Handle a message (header first in buf).  `deferred`: running from the
 * queue, outside UCX callbacks.  OMPI_ERR_WOULD_BLOCK: queue it, retry later
 * (later messages of the same kind for the same window queue behind it). */
typedef int (*ompi_osc_ucxx_am_handler_fn_t)(ompi_osc_ucxx_module_t *module, int from,
                                             void *buf, size_t len, bool deferred);

/* What the transport knows of a message kind, said by the file that handles
 * it (at component init, before the first worker): the transport names no
 * protocol.  The ids above are the one list every protocol shares, as
 * UCX's own. */
#define OSC_UCXX_AM_SERVED   0x1   /* the target's CPU handles it: its sender asks
                                    * the target to serve (ompi_osc_ucxx_link_ask) */
#define OSC_UCXX_AM_IN_ORDER 0x2   /* per window, handled in the order they arrive:
                                    * queued behind the window's earlier ones */
/* `recv`: UCX's callback for the kind itself (its arg: the id), for kinds
 * whose data may come by rendezvous; NULL: the transport copies each
 * message and hands it to `handler`. */
void ompi_osc_ucxx_am_define(int kind, ompi_osc_ucxx_am_handler_fn_t handler,
                             ucp_am_recv_callback_t recv, unsigned flags);
static inline void ompi_osc_ucxx_am_set_handler(int kind, ompi_osc_ucxx_am_handler_fn_t fn)
{
    ompi_osc_ucxx_am_define(kind, fn, NULL, 0);
}
/* Component init, before the first worker: the queue, and the transport's
 * part in the workers (its UCX handlers on each new one, the drain of its
 * queue); finalize, once the workers are gone. */
void ompi_osc_ucxx_am_init(void);
void ompi_osc_ucxx_am_fini(void);
/* Send `buf` (len bytes, malloc'ed, freed once sent; the first hlen bytes
 * are the header) to `target` of the window on `worker`. */
int ompi_osc_ucxx_am_send(ompi_osc_ucxx_module_t *module, ompi_osc_ucxx_worker_t *worker,
                          int target, unsigned id, void *buf, size_t hlen, size_t len);
/* The same with UCP_AM_SEND_FLAG_* `flags` (eager or rendezvous). */
int ompi_osc_ucxx_am_send_flags(ompi_osc_ucxx_module_t *module, ompi_osc_ucxx_worker_t *worker,
                                int target, unsigned id, void *buf, size_t hlen, size_t len,
                                uint32_t flags);
/* Queue `len` bytes of `data` as work of `kind` for the drain (callbacks
 * defer what they may not do themselves). */
int ompi_osc_ucxx_am_defer(int kind, ompi_osc_ucxx_module_t *module, int peer, const void *data,
                           size_t len);
/* Answer `to`: directly where UCX operations may be issued, else queued. */
int ompi_osc_ucxx_am_reply(ompi_osc_ucxx_module_t *module, int to, unsigned id,
                           const void *msg, size_t hlen, size_t len, bool deferred);

END_C_DECLS

#endif /* OMPI_OSC_UCXX_AM_H */
