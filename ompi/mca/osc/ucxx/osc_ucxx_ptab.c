/*
 * Copyright (c) 2026 The osc/ucxx authors. All rights reserved.
 * $COPYRIGHT$
 *
 * The peer table: what this process holds per peer process, whatever the
 * windows, with a bound on how many peers hold anything.
 *
 * An entry per peer process met: how to map its shared memory (its
 * identity, from the modex, where the early start published it, or from a
 * window's creation exchange), the ranges of it mapped here (shared by
 * every window whose memory or state lies in them; osc_ucxx_seg.c), and
 * the windows that use the peer (back references: the window and the
 * peer's rank in it).  An entry is active while it holds something: a
 * mapping, a window's use, or an endpoint of some worker (osc_ucxx_peers.c
 * tells us when it makes one).
 *
 * The bound (ScalaRMA's target-state pools): at most OSC_UCXX.peer_cap
 * active entries.  When one more becomes active, the least recently met
 * idle ones go: an entry is idle where none of its windows has the peer in
 * an epoch (its access word) or a message of the window's in flight, and
 * nothing waits on an endpoint.  Going means: each window drops what it
 * holds of the peer (the window's hook: its mappings, its links, their
 * rkeys and region caches), the ranges are unmapped, the rkeys kept for
 * the peer are destroyed, and each worker's endpoint to a peer on the node
 * is flushed and closed (endpoints to other nodes stay: on_node).  A
 * window meets the peer again as on its first access.  The progress thread may be
 * serving the peer meanwhile (replying on its endpoint, progressing the
 * worker): it is parked while entries go (ompi_osc_ucxx_progress_hold), so
 * the bound holds with it too.  Under MPI_THREAD_MULTIPLE another
 * application thread may be in an epoch with what would go, so only
 * mappings no window uses go there: the bound is then on those alone.
 *
 * Mappings no window uses any more stay for the next window in the same
 * ranges (a peer's arenas hold many windows), up to as many bytes as idle
 * rkeys may map (osc_ucxx_rkey.c), oldest unmapped first.
 *
 * The bound is OSC_UCXX.peer_cap; tests set it small (OSC_UCXX_TEST_TUNE
 * peer_cap=N, osc_ucxx_component.c) so that every epoch evicts.
 */

#include "ompi_config.h"

#include <stdlib.h>

#include "ompi/proc/proc.h"

#include "osc_ucxx_worker.h"

#define MODEX_SEG "osc_ucxx.seg"

struct ompi_osc_ucxx_pmap_t {
    ompi_osc_ucxx_pent_t *ent;
    uint64_t off;                 /* [off, off + len) of the peer's file */
    size_t len;
    char *addr;
    int refs;                     /* windows' uses */
    bool unused;                  /* on the list of unused ones */
    ompi_osc_ucxx_pmap_t *next;   /* the entry's */
    ompi_osc_ucxx_pmap_t *iprev, *inext;  /* unused ones, oldest first */
};

typedef struct {
    void *module;
    int target;
} user_t;

struct ompi_osc_ucxx_pent_t {
    uint64_t key;
    ompi_osc_ucxx_segid_t id;     /* pid 0: not known yet */
    bool checked;                 /* a first mapping checked the file's owner */
    bool active;
    bool evicting;
    ompi_osc_ucxx_pmap_t *maps;
    user_t *users;
    int nusers, ucap;
    ompi_osc_ucxx_pent_t *prev, *next;  /* active entries, least recently met first */
};

static struct {
    bool ready;
    opal_hash_table_t table;      /* proc key -> entry */
    ompi_osc_ucxx_pent_t *first, *last;
    int active, cap;
    ompi_osc_ucxx_pmap_t *idle_first, *idle_last;
    size_t idle_bytes;
    uint64_t self;
    bool (*busy)(void *module, int target);
    void (*release)(void *module, int target);
} ptab;

void ompi_osc_ucxx_ptab_hooks(bool (*busy)(void *module, int target),
                              void (*release)(void *module, int target))
{
    ptab.busy = busy;
    ptab.release = release;
}

/* (under OSC_UCXX.lock, as everything below) */
static bool table_ready(void)
{
    if (!ptab.ready) {
        OBJ_CONSTRUCT(&ptab.table, opal_hash_table_t);
        if (OPAL_SUCCESS != opal_hash_table_init(&ptab.table, 256)) {
            OBJ_DESTRUCT(&ptab.table);
            return false;
        }
        ptab.cap = OSC_UCXX.peer_cap > 0 ? OSC_UCXX.peer_cap : 1;
        ptab.self = ompi_osc_ucxx_name_key(OMPI_PROC_MY_NAME);
        ptab.ready = true;
    }
    return true;
}

static ompi_osc_ucxx_pent_t *entry_of(uint64_t key, bool make)
{
    ompi_osc_ucxx_pent_t *e = NULL;

    if (!table_ready()) return NULL;
    if (OPAL_SUCCESS == opal_hash_table_get_value_uint64(&ptab.table, key, (void **) &e) ||
        !make) {
        return e;
    }
    e = calloc(1, sizeof(*e));
    if (NULL == e) return NULL;
    e->key = key;
    if (OPAL_SUCCESS != opal_hash_table_set_value_uint64(&ptab.table, key, e)) {
        free(e);
        return NULL;
    }
    return e;
}

static void lru_unlink(ompi_osc_ucxx_pent_t *e)
{
    if (e->prev) e->prev->next = e->next; else ptab.first = e->next;
    if (e->next) e->next->prev = e->prev; else ptab.last = e->prev;
    e->prev = e->next = NULL;
}

/* Met now: active (counted in the bound) and the most recent. */
static void touch(ompi_osc_ucxx_pent_t *e)
{
    if (e->active) {
        lru_unlink(e);
    } else {
        e->active = true;
        ptab.active++;
    }
    e->prev = ptab.last;
    if (e->prev) e->prev->next = e; else ptab.first = e;
    ptab.last = e;
}

ompi_osc_ucxx_pent_t *ompi_osc_ucxx_ptab_get(ompi_proc_t *proc)
{
    ompi_osc_ucxx_pent_t *e;
    OSC_UCXX_LOCK(&OSC_UCXX.lock);
    e = entry_of(ompi_osc_ucxx_proc_key(proc), true);
    OSC_UCXX_UNLOCK(&OSC_UCXX.lock);
    return e;
}

void ompi_osc_ucxx_ptab_set_identity(ompi_proc_t *proc, const ompi_osc_ucxx_segid_t *id)
{
    ompi_osc_ucxx_pent_t *e;
    OSC_UCXX_LOCK(&OSC_UCXX.lock);
    e = entry_of(ompi_osc_ucxx_proc_key(proc), true);
    if (NULL != e && 0 == e->id.pid) e->id = *id;
    OSC_UCXX_UNLOCK(&OSC_UCXX.lock);
}

/* The peer's identity, from the modex the first time (it published it in
 * MPI_Init: osc_ucxx_early.c) where no window's exchange gave it. */
bool ompi_osc_ucxx_ptab_identity(ompi_osc_ucxx_pent_t *e, ompi_osc_ucxx_segid_t *id)
{
    if (0 == e->id.pid) {
        opal_process_name_t name;
        ompi_osc_ucxx_segid_t got;
        char *s;
        memcpy(&name, &e->key, sizeof(name));
        s = ompi_osc_ucxx_modex_get_optional(&name, MODEX_SEG);
        if (ompi_osc_ucxx_segid_parse(s, &got) && got.key == e->key) {
            OSC_UCXX_LOCK(&OSC_UCXX.lock);
            if (0 == e->id.pid) e->id = got;
            OSC_UCXX_UNLOCK(&OSC_UCXX.lock);
        }
        free(s);
    }
    *id = e->id;
    return 0 != id->pid;
}

/* Ours, for the modex (the early start, before Open MPI's fence). */
int ompi_osc_ucxx_ptab_publish(void)
{
    ompi_osc_ucxx_segid_t id;
    char buf[96];

    if (!ompi_osc_ucxx_seg_self(&id)) return OMPI_ERR_NOT_AVAILABLE;
    ompi_osc_ucxx_segid_format(&id, buf, sizeof(buf));
    return ompi_osc_ucxx_modex_put_local(MODEX_SEG, buf);
}

/* ------------------------------------------------------------------------- */
/* Mappings */

static size_t idle_bytes_max(void)
{
    return OSC_UCXX.alloc_cache > (4UL << 20) ? OSC_UCXX.alloc_cache : 4UL << 20;
}

static void idle_unlink(ompi_osc_ucxx_pmap_t *m)
{
    if (!m->unused) return;
    m->unused = false;
    if (m->iprev) m->iprev->inext = m->inext; else ptab.idle_first = m->inext;
    if (m->inext) m->inext->iprev = m->iprev; else ptab.idle_last = m->iprev;
    m->iprev = m->inext = NULL;
    ptab.idle_bytes -= m->len;
}

/* (under the lock) unlink from its entry and free; the caller unmaps. */
static void map_drop(ompi_osc_ucxx_pmap_t *m)
{
    ompi_osc_ucxx_pmap_t **at = &m->ent->maps;
    while (*at != m) at = &(*at)->next;
    *at = m->next;
}

/* (under the lock) A mapping of `e` that holds [lo, hi), referenced. */
static ompi_osc_ucxx_pmap_t *map_held(ompi_osc_ucxx_pent_t *e, uint64_t lo, uint64_t hi)
{
    ompi_osc_ucxx_pmap_t *m;
    for (m = e->maps; NULL != m && !(m->off <= lo && m->off + m->len >= hi); m = m->next) {
    }
    if (NULL != m && 0 == m->refs++) idle_unlink(m);
    return m;
}

/* Each request's range in a mapping held, or in one made now: those made,
 * all at once (one open of the peer's file).  Requests in the same or
 * neighbouring pages share one (a dynamic window's state and region table
 * lie in one page of a state arena: one mmap, where two mappings of the
 * page would also count it twice in the process's RSS). */
bool ompi_osc_ucxx_ptab_map(ompi_osc_ucxx_pent_t *e, ompi_osc_ucxx_pmap_req_t *req, int n)
{
    ompi_osc_ucxx_seg_range_t r[OSC_UCXX_PTAB_MAP_MAX];
    ompi_osc_ucxx_pmap_t *made[OSC_UCXX_PTAB_MAP_MAX] = {NULL};
    int of[OSC_UCXX_PTAB_MAP_MAX], nr = 0, i, k;   /* of[i]: request i's range in r, or -1 */
    ompi_osc_ucxx_segid_t id;
    bool check;

    for (i = 0; i < n; ++i) {
        req[i].map = NULL;
        req[i].made = false;
    }
    if (n > OSC_UCXX_PTAB_MAP_MAX || !ompi_osc_ucxx_ptab_identity(e, &id)) return false;
    OSC_UCXX_LOCK(&OSC_UCXX.lock);
    for (i = 0; i < n; ++i) {
        uint64_t lo = req[i].off / req[i].unit * req[i].unit;
        uint64_t hi = (req[i].off + req[i].len + req[i].unit - 1) / req[i].unit * req[i].unit;
        of[i] = -1;
        if (NULL != (req[i].map = map_held(e, lo, hi))) continue;
        for (k = 0; k < nr && (lo > r[k].off + r[k].len || hi < r[k].off); ++k) {
        }
        if (k == nr) {
            r[nr].off = lo;
            r[nr++].len = (size_t) (hi - lo);
        } else {
            uint64_t end = r[k].off + r[k].len > hi ? r[k].off + r[k].len : hi;
            r[k].off = r[k].off < lo ? r[k].off : lo;
            r[k].len = (size_t) (end - r[k].off);
        }
        of[i] = k;
    }
    touch(e);
    check = !e->checked;
    OSC_UCXX_UNLOCK(&OSC_UCXX.lock);
    for (k = 0; k < nr && NULL != (made[k] = calloc(1, sizeof(*made[k]))); ++k) {
    }
    if (nr > 0 && (k < nr || !ompi_osc_ucxx_seg_attach(&id, check, r, nr))) {
        for (k = 0; k < nr; ++k) free(made[k]);
        for (i = 0; i < n; ++i) ompi_osc_ucxx_ptab_unmap(req[i].map);
        for (i = 0; i < n; ++i) req[i].map = NULL;
        return false;
    }
    OSC_UCXX_LOCK(&OSC_UCXX.lock);
    for (k = 0; k < nr; ++k) {
        ompi_osc_ucxx_pmap_t *m = made[k];
        m->ent = e;
        m->off = r[k].off;
        m->len = r[k].len;
        m->addr = r[k].addr;
        m->next = e->maps;
        e->maps = m;
        OSC_UCXX_VERBOSE(20, "peer pid %d: [%#" PRIx64 ", %#" PRIx64 ") of its memory mapped "
                         "at %p", (int) id.pid, m->off, m->off + m->len, (void *) m->addr);
    }
    for (i = 0; i < n; ++i) {
        if (of[i] < 0) continue;
        req[i].map = made[of[i]];
        req[i].map->refs++;   /* (one per request: each gives it back) */
        req[i].made = true;
    }
    if (nr > 0) e->checked = true;
    OSC_UCXX_UNLOCK(&OSC_UCXX.lock);
    for (i = 0; i < n; ++i) {
        req[i].addr = req[i].map->addr + (req[i].off - req[i].map->off);
    }
    return true;
}

void ompi_osc_ucxx_ptab_unmap(ompi_osc_ucxx_pmap_t *m)
{
    ompi_osc_ucxx_pmap_t *gone = NULL;

    if (NULL == m) return;
    OSC_UCXX_LOCK(&OSC_UCXX.lock);
    if (0 == --m->refs && !m->ent->evicting) {
        m->unused = true;
        m->iprev = ptab.idle_last;   /* newest last */
        if (m->iprev) m->iprev->inext = m; else ptab.idle_first = m;
        ptab.idle_last = m;
        ptab.idle_bytes += m->len;
        while (ptab.idle_bytes > idle_bytes_max() && NULL != ptab.idle_first) {
            ompi_osc_ucxx_pmap_t *old = ptab.idle_first;
            idle_unlink(old);
            map_drop(old);
            old->next = gone;   /* unmapped outside the lock */
            gone = old;
        }
    }
    OSC_UCXX_UNLOCK(&OSC_UCXX.lock);
    while (NULL != gone) {
        ompi_osc_ucxx_pmap_t *next = gone->next;
        ompi_osc_ucxx_seg_detach(gone->addr, gone->len);
        free(gone);
        gone = next;
    }
}

/* ------------------------------------------------------------------------- */
/* Windows' uses, and the bound */

int ompi_osc_ucxx_ptab_user_add(ompi_osc_ucxx_pent_t *e, void *module, int target)
{
    int rc = OMPI_SUCCESS;

    OSC_UCXX_LOCK(&OSC_UCXX.lock);
    if (e->nusers == e->ucap) {
        int cap = e->ucap ? 2 * e->ucap : 4;
        user_t *grown = realloc(e->users, cap * sizeof(*grown));
        if (NULL == grown) {
            rc = OMPI_ERR_OUT_OF_RESOURCE;
            goto out;
        }
        e->users = grown;
        e->ucap = cap;
    }
    e->users[e->nusers].module = module;
    e->users[e->nusers++].target = target;
    touch(e);
out:
    OSC_UCXX_UNLOCK(&OSC_UCXX.lock);
    return rc;
}

void ompi_osc_ucxx_ptab_user_remove(ompi_osc_ucxx_pent_t *e, void *module, int target)
{
    OSC_UCXX_LOCK(&OSC_UCXX.lock);
    for (int i = 0; i < e->nusers; ++i) {
        if (e->users[i].module == module && e->users[i].target == target) {
            e->users[i] = e->users[--e->nusers];
            break;
        }
    }
    OSC_UCXX_UNLOCK(&OSC_UCXX.lock);
}

/* A worker made an endpoint to `key` (osc_ucxx_peers.c). */
void ompi_osc_ucxx_ptab_endpoint(uint64_t key)
{
    ompi_osc_ucxx_pent_t *e;

    OSC_UCXX_LOCK(&OSC_UCXX.lock);
    e = key == ptab.self ? NULL : entry_of(key, true);
    if (NULL != e) touch(e);
    OSC_UCXX_UNLOCK(&OSC_UCXX.lock);
}

/* Application threads may be in the component at once (and in epochs the
 * table cannot see from here). */
static bool app_threads(void)
{
    return OSC_UCXX.enable_mpi_threads || opal_using_threads();
}

/* May everything of `e` go now?  (One application thread in the component,
 * the progress thread parked or held off by the lock: nobody else uses it
 * meanwhile.) */
static bool idle(ompi_osc_ucxx_pent_t *e)
{
    if (e->key == ptab.self || NULL == ptab.busy || 0 != ompi_osc_ucxx_pongs_due) {
        return false;
    }
    for (int w = 0; w < OSC_UCXX.num_workers; ++w) {
        if (OSC_UCXX.workers[w]->pending > 0) return false;  /* (requests in flight) */
    }
    for (int i = 0; i < e->nusers; ++i) {
        if (ptab.busy(e->users[i].module, e->users[i].target)) return false;
    }
    return true;
}

/* Endpoints to other nodes stay, as Open MPI's pml keeps them: without
 * UCX error handling, closing our side of a connection whose other side
 * keeps its endpoint lets that side's later messages name an endpoint id
 * here that a new endpoint may have taken (UCX then asserts, e.g. on an
 * emulated put's completion reaching an endpoint still wiring up).  On
 * the node UCX reaches peers through shared memory by default. */
static bool on_node(const ompi_osc_ucxx_pent_t *e)
{
    opal_process_name_t name;
    opal_proc_t *proc;

    memcpy(&name, &e->key, sizeof(name));
    proc = ompi_proc_lookup(name);
    return NULL != proc && OPAL_PROC_ON_LOCAL_NODE(proc->proc_flags);
}

static void evict(ompi_osc_ucxx_pent_t *e)
{
    e->evicting = true;
    /* the windows first: their links hold rkeys unpacked on the endpoints */
    while (e->nusers > 0) {
        user_t u = e->users[--e->nusers];
        ptab.release(u.module, u.target);
    }
    while (NULL != e->maps) {
        ompi_osc_ucxx_pmap_t *m = e->maps;
        e->maps = m->next;
        idle_unlink(m);
        ompi_osc_ucxx_seg_detach(m->addr, m->len);
        free(m);
    }
    bool close = on_node(e);
    for (int w = 0; w < OSC_UCXX.num_workers; ++w) {
        if (close) {
            ompi_osc_ucxx_ep_evict(OSC_UCXX.workers[w], e->key);
        } else {
            ompi_osc_ucxx_rkeys_drop(OSC_UCXX.workers[w], e->key);
        }
    }
    e->evicting = false;
    lru_unlink(e);
    e->active = false;
    ptab.active--;
    OSC_UCXX_VERBOSE(20, "peer pid %d: its mappings let go (%d peers held)",
                     (int) e->id.pid, ptab.active);
}

/* Over the bound: let the least recently met idle entries go (not `keep`,
 * which the caller is setting up). */
static bool over_with_idle(ompi_osc_ucxx_pent_t *keep)
{
    bool any = false;

    OSC_UCXX_LOCK(&OSC_UCXX.lock);   /* (the progress thread touches entries) */
    if (ptab.ready && ptab.active > ptab.cap) {
        for (ompi_osc_ucxx_pent_t *e = ptab.first; NULL != e && !any; e = e->next) {
            any = e != keep && idle(e);
        }
    }
    OSC_UCXX_UNLOCK(&OSC_UCXX.lock);
    return any;
}

void ompi_osc_ucxx_ptab_trim(ompi_osc_ucxx_pent_t *keep)
{
    ompi_osc_ucxx_pent_t *e, *next;

    if (!ptab.ready || ptab.active <= ptab.cap || app_threads() || !over_with_idle(keep) ||
        !ompi_osc_ucxx_progress_hold()) {
        return;
    }
    for (e = ptab.first; NULL != e && ptab.active > ptab.cap; e = next) {
        next = e->next;
        if (e != keep && idle(e)) evict(e);
    }
    ompi_osc_ucxx_progress_unhold();
}

/* Finalize, the windows gone: every mapping, every entry. */
void ompi_osc_ucxx_ptab_fini(void)
{
    uint64_t key;
    void *value, *node = NULL;
    int rc;

    if (!ptab.ready) return;
    rc = opal_hash_table_get_first_key_uint64(&ptab.table, &key, &value, &node);
    while (OPAL_SUCCESS == rc) {
        ompi_osc_ucxx_pent_t *e = value;
        while (NULL != e->maps) {
            ompi_osc_ucxx_pmap_t *m = e->maps;
            e->maps = m->next;
            ompi_osc_ucxx_seg_detach(m->addr, m->len);
            free(m);
        }
        free(e->users);
        free(e);
        rc = opal_hash_table_get_next_key_uint64(&ptab.table, &key, &value, node, &node);
    }
    OBJ_DESTRUCT(&ptab.table);
    memset(&ptab, 0, sizeof(ptab));
}
