/*
 * Copyright (c) 2026 The osc/ucxx authors. All rights reserved.
 * $COPYRIGHT$
 *
 * The atomics audit (docs/atomics.md): a run mode for tests, on where the
 * environment says OSC_UCXX_AUDIT_ATOMICS=1 (a test hook, not an MCA
 * parameter: no user chooses it).
 *
 * Every process records, per word of a window it changes atomically, the
 * kinds it used (osc_ucxx_audit.h): the state words of the policy (lock,
 * complete, fence, dyn_gen) and those that must stay CPU-only (serve,
 * posts, barrier), and the window memory words of single-element
 * accumulate-family operations (lock-free CPU atomic, stripe-locked
 * read-modify-write, or UCX atomic; a target applying an accumulate message
 * records its own stripe-locked write).  MPI_Win_free of the original
 * handle gathers every process's records and policy at rank 0, which
 * checks that
 *   - every process agreed on the policy (state_cpu, single_kind,
 *     fence_by_state, lock_kind);
 *   - no state word saw both CPU and UCX atomics;
 *   - no window word saw two kinds of single-element operation (bulk
 *     accumulates always take the stripe locks; mixing them with single
 *     elements of another kind is what acc_single_intrinsic allows).
 * A failure prints each word with the ranks of each kind on stderr and
 * aborts the job (exit status not 0).  The records of one word are one
 * entry: a process that touches few words keeps few.
 */

#include "ompi_config.h"

#include <stdio.h>
#include <stdlib.h>

#include "ompi/runtime/mpiruntime.h"

#include "osc_ucxx_audit.h"

bool ompi_osc_ucxx_audit_on = false;

typedef struct {
    uint64_t offset;
    int32_t owner;
    uint8_t space;
    uint8_t kinds;
    uint16_t rank;           /* (at rank 0: the process that sent it) */
} audit_entry_t;

/* Open addressing on (owner, space, offset), grown at half full. */
struct ompi_osc_ucxx_audit_t {
    pthread_mutex_t lock;    /* (handlers on the progress thread record too) */
    audit_entry_t *slots;
    size_t cap, count;
};

/* What each process sends first: its policy and how many records follow. */
typedef struct {
    int32_t state_cpu, single_kind, fence_by_state, lock_kind, count;
} audit_head_t;

void ompi_osc_ucxx_audit_init(void)
{
    const char *v = getenv("OSC_UCXX_AUDIT_ATOMICS");
    ompi_osc_ucxx_audit_on = NULL != v && '\0' != v[0] && '0' != v[0];
}

static size_t slot_of(const ompi_osc_ucxx_audit_t *a, int owner, int space, uint64_t offset)
{
    uint64_t h = (offset * 0x9e3779b97f4a7c15ULL) ^ ((uint64_t) owner << 1) ^ (uint64_t) space;
    size_t i = (size_t) (h ^ (h >> 29)) & (a->cap - 1);

    while (0 != a->slots[i].kinds && (a->slots[i].owner != owner ||
                                      a->slots[i].space != space ||
                                      a->slots[i].offset != offset)) {
        i = (i + 1) & (a->cap - 1);
    }
    return i;
}

static bool grow(ompi_osc_ucxx_audit_t *a)
{
    ompi_osc_ucxx_audit_t bigger = {.cap = 0 == a->cap ? 256 : 2 * a->cap, .count = a->count};

    bigger.slots = calloc(bigger.cap, sizeof(audit_entry_t));
    if (NULL == bigger.slots) return false;
    for (size_t i = 0; i < a->cap; ++i) {
        if (0 != a->slots[i].kinds) {
            const audit_entry_t *e = &a->slots[i];
            bigger.slots[slot_of(&bigger, e->owner, e->space, e->offset)] = *e;
        }
    }
    free(a->slots);
    a->slots = bigger.slots;
    a->cap = bigger.cap;
    return true;
}

void ompi_osc_ucxx_audit_record(ompi_osc_ucxx_module_t *module, int owner, int space,
                                uint64_t offset, unsigned kind)
{
    ompi_osc_ucxx_audit_t *a = module->audit;
    audit_entry_t *e;

    if (NULL == a) {
        /* (made by the first record; creation is collective, records are
         * not: a window's first record may race with another thread's) */
        ompi_osc_ucxx_audit_t *made = calloc(1, sizeof(*made));
        if (NULL == made) return;
        pthread_mutex_init(&made->lock, NULL);
        if (!__atomic_compare_exchange_n(&module->audit, &a, made, false, __ATOMIC_ACQ_REL,
                                         __ATOMIC_ACQUIRE)) {
            pthread_mutex_destroy(&made->lock);
            free(made);
        } else {
            a = made;
        }
    }
    pthread_mutex_lock(&a->lock);
    if (2 * (a->count + 1) > a->cap && !grow(a)) {
        pthread_mutex_unlock(&a->lock);
        return;
    }
    e = &a->slots[slot_of(a, owner, space, offset)];
    if (0 == e->kinds) {
        e->owner = owner;
        e->space = (uint8_t) space;
        e->offset = offset;
        a->count++;
    }
    e->kinds |= (uint8_t) kind;
    pthread_mutex_unlock(&a->lock);
}

void ompi_osc_ucxx_audit_release(ompi_osc_ucxx_module_t *module)
{
    if (NULL == module->audit) return;
    pthread_mutex_destroy(&module->audit->lock);
    free(module->audit->slots);
    free(module->audit);
    module->audit = NULL;
}

/* ------------------------------------------------------------------------- */
/* The check (rank 0) */

static int entry_order(const void *x, const void *y)
{
    const audit_entry_t *a = x, *b = y;
    if (a->owner != b->owner) return a->owner < b->owner ? -1 : 1;
    if (a->space != b->space) return a->space < b->space ? -1 : 1;
    if (a->offset != b->offset) return a->offset < b->offset ? -1 : 1;
    return 0;
}

static void word_name(const audit_entry_t *e, char *buf, size_t len)
{
    static const struct { size_t offset; const char *name; } words[] = {
        {OSC_UCXX_STATE(lock), "lock word"},      {OSC_UCXX_STATE(complete), "complete word"},
        {OSC_UCXX_STATE(fence), "fence word"},    {OSC_UCXX_STATE(dyn_gen), "dyn_gen word"},
        {OSC_UCXX_STATE(serve), "serve word"},    {OSC_UCXX_STATE(am_exec), "am_exec word"}};

    if (OSC_UCXX_AUDIT_DATA == e->space) {
        snprintf(buf, len, "window memory at +%#" PRIx64, e->offset);
        return;
    }
    for (size_t i = 0; i < sizeof(words) / sizeof(words[0]); ++i) {
        if (words[i].offset == e->offset) {
            snprintf(buf, len, "%s", words[i].name);
            return;
        }
    }
    if (e->offset >= OSC_UCXX_STATE(barrier) && e->offset < OSC_UCXX_STATE(acc_locks)) {
        snprintf(buf, len, "barrier slot %u",
                 (unsigned) ((e->offset - OSC_UCXX_STATE(barrier)) / sizeof(uint64_t)));
    } else if (e->offset >= OSC_UCXX_STATE_POST(0)) {
        snprintf(buf, len, "post slot %u",
                 (unsigned) ((e->offset - OSC_UCXX_STATE_POST(0)) / sizeof(uint64_t)));
    } else {
        snprintf(buf, len, "state word at +%#" PRIx64, e->offset);
    }
}

/* Which kinds may not meet on one word. */
static bool forbidden(int space, unsigned kinds)
{
    if (OSC_UCXX_AUDIT_STATE == space) {
        return (kinds & OSC_UCXX_AUDIT_UCX) && (kinds & ~OSC_UCXX_AUDIT_UCX);
    }
    return 0 != (kinds & (kinds - 1));  /* more than one kind of single element */
}

/* The merged records [first, end) of one word: report it if it mixed. */
static int check_word(ompi_osc_ucxx_module_t *module, const audit_entry_t *first,
                      const audit_entry_t *end, int reported)
{
    static const char *names[] = {"CPU atomics", "stripe-locked writes", "UCX atomics"};
    int by[3] = {-1, -1, -1};
    unsigned kinds = 0;
    char word[64], who[160] = "";

    for (const audit_entry_t *e = first; e < end; ++e) {
        kinds |= e->kinds;
        for (int k = 0; k < 3; ++k) {
            if ((e->kinds & (1u << k)) && by[k] < 0) by[k] = e->rank;
        }
    }
    if (!forbidden(first->space, kinds)) return 0;
    if (reported < 20) {
        word_name(first, word, sizeof(word));
        for (int k = 0; k < 3; ++k) {
            if (by[k] < 0) continue;
            snprintf(who + strlen(who), sizeof(who) - strlen(who), "%s%s (rank %d)",
                     '\0' == who[0] ? "" : " and ", names[k], by[k]);
        }
        fprintf(stderr, "osc/ucxx atomics audit: window %u: rank %d's %s: %s\n", module->cid,
                first->owner, word, who);
    }
    return 1;
}

static int check_all(ompi_osc_ucxx_module_t *module, const audit_head_t *heads,
                     audit_entry_t *all, size_t n)
{
    int bad = 0;

    for (int r = 1; r < module->size; ++r) {
        if (heads[r].state_cpu != heads[0].state_cpu ||
            heads[r].single_kind != heads[0].single_kind ||
            heads[r].fence_by_state != heads[0].fence_by_state ||
            heads[r].lock_kind != heads[0].lock_kind) {
            fprintf(stderr, "osc/ucxx atomics audit: window %u: rank %d's policy (state_cpu %d, "
                    "single_kind %d, fence_by_state %d, lock_kind %d) is not rank 0's (%d, %d, "
                    "%d, %d)\n", module->cid, r, heads[r].state_cpu, heads[r].single_kind,
                    heads[r].fence_by_state, heads[r].lock_kind, heads[0].state_cpu,
                    heads[0].single_kind, heads[0].fence_by_state, heads[0].lock_kind);
            bad++;
        }
    }
    qsort(all, n, sizeof(*all), entry_order);
    for (size_t i = 0, j; i < n; i = j) {
        for (j = i + 1; j < n && 0 == entry_order(&all[i], &all[j]); ++j) {
        }
        bad += check_word(module, &all[i], &all[j], bad);
    }
    return bad;
}

/* The records, packed (ours: their rank is ours). */
static audit_entry_t *packed(ompi_osc_ucxx_module_t *module, int *count)
{
    ompi_osc_ucxx_audit_t *a = module->audit;
    audit_entry_t *out;
    int n = 0;

    *count = 0;
    if (NULL == a || 0 == a->count) return NULL;
    out = malloc(a->count * sizeof(*out));
    if (NULL == out) return NULL;
    for (size_t i = 0; i < a->cap; ++i) {
        if (0 == a->slots[i].kinds) continue;
        out[n] = a->slots[i];
        out[n++].rank = (uint16_t) module->rank;
    }
    *count = n;
    return out;
}

int ompi_osc_ucxx_audit_check(ompi_osc_ucxx_module_t *module)
{
    ompi_communicator_t *comm = module->comm;
    audit_head_t mine, *heads = NULL;
    audit_entry_t *sent, *all = NULL;
    int *counts = NULL, *displs = NULL, total = 0, rc, bad = 0;
    bool root = 0 == module->rank;

    if (!ompi_osc_ucxx_audit_on) return OMPI_SUCCESS;
    /* every operation on the window is done, and recorded by whoever
     * applied it (a target applies accumulate messages as it progresses) */
    rc = comm->c_coll->coll_barrier(comm, comm->c_coll->coll_barrier_module);
    if (OMPI_SUCCESS != rc) return rc;
    sent = packed(module, &mine.count);
    mine.state_cpu = module->state_cpu;
    mine.single_kind = module->single_kind;
    mine.fence_by_state = module->fence_by_state;
    mine.lock_kind = module->lock_kind;
    if (root) {
        heads = malloc(module->size * sizeof(*heads));
        counts = malloc(module->size * sizeof(int));
        displs = malloc(module->size * sizeof(int));
        if (NULL == heads || NULL == counts || NULL == displs) abort();  /* (a test mode) */
    }
    rc = comm->c_coll->coll_gather(&mine, sizeof(mine), MPI_BYTE, heads, sizeof(mine), MPI_BYTE,
                                   0, comm, comm->c_coll->coll_gather_module);
    if (OMPI_SUCCESS == rc && root) {
        for (int r = 0; r < module->size; ++r) {
            counts[r] = heads[r].count * (int) sizeof(audit_entry_t);
            displs[r] = total;
            total += counts[r];
        }
        all = malloc(total + 1);
        if (NULL == all) abort();
    }
    if (OMPI_SUCCESS == rc) {
        rc = comm->c_coll->coll_gatherv(sent, mine.count * (int) sizeof(audit_entry_t), MPI_BYTE,
                                        all, counts, displs, MPI_BYTE, 0, comm,
                                        comm->c_coll->coll_gatherv_module);
    }
    if (OMPI_SUCCESS == rc && root) {
        bad = check_all(module, heads, all, (size_t) total / sizeof(audit_entry_t));
    }
    free(sent);
    free(heads);
    free(counts);
    free(displs);
    free(all);
    if (bad > 0) {
        fprintf(stderr, "osc/ucxx atomics audit: FAILED: window %u: %d words or policies "
                "mixed kinds of atomics\n", module->cid, bad);
        fflush(stderr);
        ompi_mpi_abort(&ompi_mpi_comm_world.comm, 1);
    }
    OSC_UCXX_VERBOSE(10, "window %u: atomics audit %s", module->cid,
                     OMPI_SUCCESS == rc ? "passed" : "could not gather the records");
    return rc;
}
