/*
 * Copyright (c) 2026 The osc/ucxx authors. All rights reserved.
 * $COPYRIGHT$
 *
 * The info keys a window honours: the MPI ones (no_locks, same_size,
 * same_disp_unit, accumulate_granularity, accumulate_ordering and _ops),
 * the extensions' per handle (mpix_ucxx.h: scope, order, single intrinsic)
 * and the active-message ones; each reported by MPI_Win_get_info as the
 * window applies it.  Only Open MPI's public subscriber is used
 * (opal_infosubscribe_subscribe), and only for the keys MPI_Win_set_info
 * changes something with: each subscription costs the window several
 * allocations, a formatted key and searches of its info, at creation and
 * again at MPI_Win_free.
 */

#include "ompi_config.h"

#include "opal/util/info_subscriber.h"

#include "osc_ucxx.h"
#include "osc_ucxx_uam.h"

/* Only a promise from the application, which changes nothing here (locks
 * still work if it breaks it): reported as given at creation. */
static OMPI_OSC_UCXX_INFO_CB(info_no_locks)
{
    return NULL != value && opal_str_to_bool(value) ? "true" : "false";
}

/* Keys fixed at creation: report the value the window was built with. */
static OMPI_OSC_UCXX_INFO_CB(info_same_size)
{
    return OSC_UCXX_MODULE((struct ompi_win_t *) obj)->same_size ? "true" : "false";
}

static OMPI_OSC_UCXX_INFO_CB(info_same_disp_unit)
{
    return OSC_UCXX_MODULE((struct ompi_win_t *) obj)->same_disp_unit ? "true" : "false";
}

/* mpi_accumulate_granularity (MPI 4.1): bytes of window one accumulate
 * lock covers, the same on every process; 0 or absent leaves it to us (the
 * osc_ucxx_acc_granularity parameter).  Rounded up to a power of two from 8
 * bytes to 1 GiB.  Fixed at creation. */
static uint32_t shift_for(unsigned long bytes)
{
    uint32_t shift = 3;

    while (shift < 30 && (1ul << shift) < bytes) shift++;
    return shift;
}

uint32_t ompi_osc_ucxx_granularity_shift(struct opal_info_t *info)
{
    unsigned long bytes = OSC_UCXX.acc_granularity;
    char buf[32];
    int flag = 0;

    if (NULL != info &&
        OPAL_SUCCESS == ompi_osc_ucxx_info_get(info, "mpi_accumulate_granularity", buf,
                                               sizeof(buf), &flag) &&
        flag && strtol(buf, NULL, 10) > 0) {
        bytes = (unsigned long) strtol(buf, NULL, 10);
    }
    return shift_for(bytes);
}

/* Hints a user sets are reported as given when they are what the window
 * does: a granularity that rounds to the block in use, an ordering the
 * window keeps (it keeps all four). */
static OMPI_OSC_UCXX_INFO_CB(info_granularity)
{
    /* the block most windows of a thread use, formatted once */
    static __thread char buf[24];
    static __thread uint32_t shown;
    uint32_t shift = OSC_UCXX_MODULE((struct ompi_win_t *) obj)->acc_shift;

    if (NULL != value && strtol(value, NULL, 10) > 0 &&
        shift_for((unsigned long) strtol(value, NULL, 10)) == shift) {
        return value;
    }
    if (shown != shift) {
        snprintf(buf, sizeof(buf), "%lu", 1ul << shift);
        shown = shift;
    }
    return buf;
}

/* A comma-separated list of rar, raw, war and waw. */
static bool ordering_list(const char *v)
{
    for (;;) {
        if (0 != strncmp(v, "rar", 3) && 0 != strncmp(v, "raw", 3) &&
            0 != strncmp(v, "war", 3) && 0 != strncmp(v, "waw", 3)) {
            return false;
        }
        if ('\0' == v[3]) return true;
        if (',' != v[3]) return false;
        v += 4;
    }
}

static OMPI_OSC_UCXX_INFO_CB(info_acc_ordering)
{
    ompi_osc_ucxx_view_t *view = OSC_UCXX_VIEW((struct ompi_win_t *) obj);
    view->acc_ordered = (NULL == value || 0 != strcmp(value, "none"));
    if (!view->acc_ordered) return "none";
    return (NULL != value && ordering_list(value)) ? value : "rar,raw,war,waw";
}

/* Accepted and reported; every op is correct whatever is promised. */
static OMPI_OSC_UCXX_INFO_CB(info_acc_ops)
{
    if (NULL != value && (0 == strcmp(value, "same_op") || 0 == strcmp(value, "same_op_no_op"))) {
        return value;
    }
    return "same_op_no_op";
}

/* The extension keys (mpix_ucxx.h), per handle. */
static OMPI_OSC_UCXX_INFO_CB(info_scope)
{
    ompi_osc_ucxx_view_t *view = OSC_UCXX_VIEW((struct ompi_win_t *) obj);
    view->scope_thread = (NULL != value && 0 == strcmp(value, "thread"));
    return view->scope_thread ? "thread" : "process";
}

static OMPI_OSC_UCXX_INFO_CB(info_order)
{
    ompi_osc_ucxx_view_t *view = OSC_UCXX_VIEW((struct ompi_win_t *) obj);
    view->ordered = (NULL != value && opal_str_to_bool(value));
    return view->ordered ? "true" : "false";
}

/* The promise changes something where the window's single elements do not
 * take the stripes anyway (its agreed kind, osc_ucxx_policy.c). */
static OMPI_OSC_UCXX_INFO_CB(info_single_intrinsic)
{
    ompi_osc_ucxx_view_t *view = OSC_UCXX_VIEW((struct ompi_win_t *) obj);
    bool promised = NULL != value && opal_str_to_bool(value);
    view->single_kind = promised ? view->core->single_kind : OSC_UCXX_SINGLE_STRIPES;
    return promised ? "true" : "false";
}

/* Active-message keys (osc_ucxx_uam.c): ordering and pipeline unit per
 * handle; the interleave promise is the core's, fixed at creation. */
static OMPI_OSC_UCXX_INFO_CB(info_am_ordering)
{
    ompi_osc_ucxx_view_t *view = OSC_UCXX_VIEW((struct ompi_win_t *) obj);
    static const struct { const char *name; uint8_t bit; } kinds[] = {
        {"sameop", OSC_UCXX_AM_ORDER_SAMEOP}, {"diffop", OSC_UCXX_AM_ORDER_DIFFOP},
        {"sameam", OSC_UCXX_AM_ORDER_SAMEAM}};
    /* each mask's name, its kinds in the order above */
    static const char *const shown[OSC_UCXX_AM_ORDER_ALL + 1] = {
        "none", "sameop", "diffop", "sameop,diffop", "sameam", "sameop,sameam",
        "diffop,sameam", "sameop,diffop,sameam"};
    uint8_t mask = 0;

    if (NULL == value) {
        mask = OSC_UCXX_AM_ORDER_ALL;
    } else if (0 != strcmp(value, "none")) {
        for (int i = 0; i < 3; ++i) {
            if (NULL != strstr(value, kinds[i].name)) mask |= kinds[i].bit;
        }
        if (0 == mask) mask = OSC_UCXX_AM_ORDER_ALL;   /* nothing we know: the default */
    }
    view->am_order = mask;
    return (ompi_osc_ucxx_info_str_t) shown[mask];
}

static OMPI_OSC_UCXX_INFO_CB(info_am_unit)
{
    ompi_osc_ucxx_view_t *view = OSC_UCXX_VIEW((struct ompi_win_t *) obj);
    static __thread char shown[24];
    long n = (NULL == value || 0 == strcmp(value, "auto")) ? 0 : strtol(value, NULL, 10);

    view->am_unit = n >= 1 && n <= INT32_MAX ? (int) n : 0;
    if (0 == view->am_unit) return "auto";
    snprintf(shown, sizeof(shown), "%d", view->am_unit);
    return shown;
}

static OMPI_OSC_UCXX_INFO_CB(info_am_interleave)
{
    return OSC_UCXX_MODULE((struct ompi_win_t *) obj)->am_interleave ? "true" : "false";
}

bool ompi_osc_ucxx_info_flag(struct opal_info_t *info, const char *key)
{
    bool value = false;
    int flag = 0;
    if (NULL != info && OPAL_SUCCESS == opal_info_get_bool(info, (char *) key, &value, &flag)
        && flag) {
        return value;
    }
    return false;
}

typedef struct {
    const char *key;
    const char *dflt;                   /* (subscribed keys) */
    opal_key_interest_callback_t *cb;   /* the value shown, given the one set or NULL */
} info_key_t;

/* Keys MPI_Win_set_info may change on every handle: subscribed, so that
 * set_info reaches their callback and MPI_Win_get_info reports what it
 * answered. */
static const info_key_t changeable[] = {
    {"accumulate_ordering", "rar,raw,war,waw", info_acc_ordering},
    {"mpi_win_scope", "process", info_scope},
    {"mpi_win_order", "false", info_order},
    {"acc_single_intrinsic", "false", info_single_intrinsic},
};

/* The active-message keys change only what MPIX_Am does: subscribed on a
 * handle once its window has AM ops (ompi_osc_ucxx_subscribe_am_info),
 * until then fixed at creation like the keys below. */
static const info_key_t am_keys[] = {
    {"am_ordering", "sameop,diffop,sameam", info_am_ordering},
    {"am_pipeline_unit", "auto", info_am_unit},
};

#define NKEYS(a) (sizeof(a) / sizeof((a)[0]))

/* Keys fixed at creation, which the window reads from the creation info
 * (osc_ucxx_window.c): only their reported value is set here, to what the
 * window does, where the info lacks the key (the defaults MPI_Win_get_info
 * must report) or says otherwise.  A later MPI_Win_set_info of one is
 * ignored: Open MPI then drops the key from what get_info reports. */
static const info_key_t fixed[] = {
    {"no_locks", NULL, info_no_locks},
    {"same_size", NULL, info_same_size},
    {"same_disp_unit", NULL, info_same_disp_unit},
    {"mpi_accumulate_granularity", NULL, info_granularity},
    {"accumulate_ops", NULL, info_acc_ops},
    {"am_buf_interleave_am_detach", NULL, info_am_interleave},
};

/* The value the window applies for `k`, set in `obj`'s info where that
 * lacks it or says otherwise (`created`: the info had keys of its own,
 * where `k` may be). */
static int report_fixed(opal_infosubscriber_t *obj, const info_key_t *k, bool created)
{
    char given[MPI_MAX_INFO_VAL + 1];
    int flag = 0;
    ompi_osc_ucxx_info_str_t shown;

    if (created) {
        (void) ompi_osc_ucxx_info_get(obj->s_info, k->key, given, sizeof(given), &flag);
    }
    shown = k->cb(obj, (char *) k->key, flag ? given : NULL);
    if (flag && 0 == strcmp(shown, given)) return OPAL_SUCCESS;
    return opal_info_set(obj->s_info, k->key, shown);
}

static int subscribe(opal_infosubscriber_t *obj, const info_key_t *keys, size_t n)
{
    int rc = OPAL_SUCCESS;

    for (size_t i = 0; i < n; ++i) {
        int r = opal_infosubscribe_subscribe(obj, (char *) keys[i].key, (char *) keys[i].dflt,
                                             keys[i].cb);
        if (OPAL_SUCCESS == rc) rc = r;
    }
    return rc;
}

static int report(opal_infosubscriber_t *obj, const info_key_t *keys, size_t n, bool created)
{
    int rc = OPAL_SUCCESS;

    for (size_t i = 0; OPAL_SUCCESS == rc && i < n; ++i) {
        rc = report_fixed(obj, &keys[i], created);
    }
    return rc;
}

/* The window's info keys: MPI_Win_get_info reports each of them, as the
 * window applies it (set at creation or with MPI_Win_set_info).  `win`'s
 * info holds the creation keys, or a duplicate's parent's plus overrides. */
void ompi_osc_ucxx_subscribe_info(struct ompi_win_t *win)
{
    opal_infosubscriber_t *obj = &win->super;
    ompi_osc_ucxx_view_t *view = OSC_UCXX_VIEW(win);
    int rc, created = 1;

    /* Most windows are made without info: then none of its keys is looked
     * for (a search of the window's info each). */
    if (NULL != obj->s_info) (void) opal_info_get_nkeys(obj->s_info, &created);
    /* Open MPI 4.1's subscriber breaks on keys over 27 characters: this one
     * is read from the window's info and kept as given. */
    view->assert_intrinsic =
        created > 0 && ompi_osc_ucxx_info_flag(obj->s_info, "mpi_assert_accumulate_intrinsic");
    rc = subscribe(obj, changeable, NKEYS(changeable));
    if (NULL == obj->s_info) rc = OPAL_ERR_OUT_OF_RESOURCE;   /* (the subscriber makes it) */
    if (OPAL_SUCCESS == rc) rc = report(obj, fixed, NKEYS(fixed), created > 0);
    if (OPAL_SUCCESS == rc) {
        /* (a duplicate made after its window's first AM op) */
        view->am_subscribed = NULL != view->core->uam;
        rc = view->am_subscribed ? subscribe(obj, am_keys, NKEYS(am_keys))
                                 : report(obj, am_keys, NKEYS(am_keys), created > 0);
    }
    if (OPAL_SUCCESS != rc) {
        OSC_UCXX_VERBOSE(1, "window info keys: out of memory (MPI_Win_get_info may miss some)");
    }
}

/* `win`'s window has AM ops: MPI_Win_set_info may change its AM keys from
 * now on.  Each starts from the value reported (the one applied). */
void ompi_osc_ucxx_subscribe_am_info(struct ompi_win_t *win)
{
    ompi_osc_ucxx_view_t *view = OSC_UCXX_VIEW(win);

    if (view->am_subscribed) return;
    view->am_subscribed = true;
    if (OPAL_SUCCESS != subscribe(&win->super, am_keys, NKEYS(am_keys))) {
        OSC_UCXX_VERBOSE(1, "window AM info keys: out of memory (MPI_Win_set_info may not "
                         "reach them)");
    }
}
