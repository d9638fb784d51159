/*
 * Copyright (c) 2026 The osc/ucxx authors. All rights reserved.
 * $COPYRIGHT$
 *
 * A window's info keys, subscribed in one pass.
 *
 * Open MPI keeps a window's info in the window itself (win->super, an
 * opal_infosubscriber_t): s_info, the list MPI_Win_get_info reports from,
 * and s_subscriber_table, key -> the list of callbacks MPI_Win_set_info
 * calls.  opal_infosubscribe_subscribe fills both for one key.  For the 12
 * keys every window honours that was the largest part of creating a window
 * (callgrind, Open MPI 4.1.4): per key it allocates a 257-byte scratch
 * buffer and eight more objects, formats the saved key with snprintf and
 * searches s_info four times, a list that grows by two entries a key.  The
 * one pass below costs a fraction of that, most of it the mallocs the state
 * needs (per key an entry with its value, a list, an item and a key copy in
 * the table, and a saved copy where it differs).
 *
 * Here the same state is built directly.  For key K with default D and
 * callback cb, as the subscriber leaves it:
 *   - the table maps K to a list ending in an item {cb, copy of D} (here
 *     without the copy: only the subscriber's self-test reads it);
 *   - v is K's value in s_info (at most OPAL_MAX_INFO_VAL - 1 characters)
 *     where the info has K, else D; r = cb(window, K, v);
 *   - K = r in s_info: in place where the info has K, else appended; where
 *     r is NULL, K is removed;
 *   - _OMPI_IN_K = v (what Open MPI 4.1's MPI_Win_get_info reports), in
 *     place where s_info has it (a duplicate's info is its parent's, saved
 *     keys included), else appended.  The subscriber means to keep a saved
 *     value that is there, but its test for one (opal_info_get with no
 *     buffer) never finds it, so it always writes: what it does is what
 *     this mirrors (test/info_state compares the two).  Where r equals v
 *     (most keys of most windows) a new copy would report nothing K does
 *     not, and is left out: two allocations fewer per key.
 * Only the info as it came (creation keys, or a parent's) is searched, twice
 * per key; the new entries go to a list of their own, in the order the
 * subscriber would append them, which joins s_info at the end.
 *
 * The callback items are opal_callback_list_item_t, a class libopen-pal
 * exports but whose struct it keeps private.  The layout assumed here is
 * checked at component init against a real subscription on a scratch
 * object; where it differs, or on Open MPI 5.0 (whose info entries hold
 * reference-counted strings), or with osc_ucxx_info_direct=0, windows go
 * through opal_infosubscribe_subscribe key by key.
 */

#include "ompi_config.h"

#include <string.h>

#include "opal/class/opal_hash_table.h"
#include "opal/class/opal_list.h"

#include "osc_ucxx_window.h"

/* Subscriptions through Open MPI's subscriber, key by key. */
static void subscribe_each(opal_infosubscriber_t *obj, const ompi_osc_ucxx_info_sub_t *subs,
                           int n)
{
    for (int i = 0; i < n; ++i) {
        opal_infosubscribe_subscribe(obj, (char *) subs[i].key, (char *) subs[i].dflt,
                                     subs[i].cb);
    }
}

#if OMPI_OSC_UCXX_INFO_DIRECT

/* libopen-pal's element of a key's callback list (opal/util/info_subscriber.c) */
typedef struct {
    opal_list_item_t super;
    char *default_value;
    opal_key_interest_callback_t *callback;
} subscriber_item_t;
extern opal_class_t opal_callback_list_item_t_class;

static bool layout_ok;   /* the probe's verdict (component init) */

static opal_info_entry_t *entry_find(opal_list_t *entries, const char *key)
{
    opal_info_entry_t *e;

    OPAL_LIST_FOREACH (e, entries, opal_info_entry_t) {
        if (0 == strcmp(key, e->ie_key)) return e;
    }
    return NULL;
}

/* A new entry as opal_info_set makes it, or NULL. */
static opal_info_entry_t *entry_new(const char *key, const char *value)
{
    opal_info_entry_t *e = OBJ_NEW(opal_info_entry_t);

    if (NULL == e) return NULL;
    e->ie_value = strdup(value);
    if (NULL == e->ie_value) {
        OBJ_RELEASE(e);   /* (the destructor frees a non-NULL value) */
        return NULL;
    }
    strncpy(e->ie_key, key, OPAL_MAX_INFO_KEY);
    return e;
}

static int add_entry(opal_list_t *added, const char *key, const char *value)
{
    opal_info_entry_t *e = entry_new(key, value);

    if (NULL == e) return OPAL_ERR_OUT_OF_RESOURCE;
    opal_list_append(added, &e->super);
    return OPAL_SUCCESS;
}

/* KEY = VALUE: in place where `cur` (the entry of KEY) is given, else a
 * new entry in `added`. */
static int set_entry(opal_info_entry_t *cur, opal_list_t *added, const char *key,
                     const char *value)
{
    char *copy;

    if (NULL == cur) return add_entry(added, key, value);
    copy = strdup(value);
    if (NULL == copy) return OPAL_ERR_OUT_OF_RESOURCE;
    free(cur->ie_value);
    cur->ie_value = copy;
    return OPAL_SUCCESS;
}

/* K's callback at the end of its list in the table. */
static int table_add(opal_hash_table_t *table, bool fresh, const ompi_osc_ucxx_info_sub_t *sub)
{
    size_t len = strlen(sub->key);
    opal_list_t *list = NULL;
    subscriber_item_t *item;

    /* (into a table that was empty no other list for K can have come:
     * our keys are distinct) */
    if (!fresh) (void) opal_hash_table_get_value_ptr(table, sub->key, len, (void **) &list);
    if (NULL == list) {
        list = OBJ_NEW(opal_list_t);
        if (NULL == list) return OPAL_ERR_OUT_OF_RESOURCE;
        if (OPAL_SUCCESS != opal_hash_table_set_value_ptr(table, sub->key, len, list)) {
            OBJ_RELEASE(list);
            return OPAL_ERR_OUT_OF_RESOURCE;
        }
    }
    item = (subscriber_item_t *) opal_obj_new(&opal_callback_list_item_t_class);
    if (NULL == item) return OPAL_ERR_OUT_OF_RESOURCE;
    item->callback = sub->cb;
    item->default_value = NULL;   /* read only by the subscriber's self-test; freed if set */
    opal_list_append(list, &item->super);
    return OPAL_SUCCESS;
}

/* One key: the table, then K and _OMPI_IN_K in `given` (the info as it
 * came) or, new, in `added`. */
static int subscribe_one(opal_infosubscriber_t *obj, bool fresh, opal_list_t *given,
                         opal_list_t *added, const ompi_osc_ucxx_info_sub_t *sub)
{
    static const char prefix[] = OPAL_INFO_SAVE_PREFIX;
    char value[OPAL_MAX_INFO_VAL], saved[OPAL_MAX_INFO_KEY];
    size_t klen = strlen(sub->key);
    opal_info_entry_t *cur = entry_find(given, sub->key);
    char *v = (char *) sub->dflt, *r;
    int rc = table_add(&obj->s_subscriber_table, fresh, sub);

    if (OPAL_SUCCESS != rc) return rc;
    if (NULL != cur) {   /* as opal_info_get into a buffer of OPAL_MAX_INFO_VAL */
        size_t len = strlen(cur->ie_value);
        if (len > OPAL_MAX_INFO_VAL - 1) len = OPAL_MAX_INFO_VAL - 1;
        memcpy(value, cur->ie_value, len);
        value[len] = '\0';
        v = value;
    }

    r = sub->cb(obj, (char *) sub->key, v);
    if (NULL != r) {
        rc = set_entry(cur, added, sub->key, r);
    } else if (NULL != cur) {
        opal_list_remove_item(given, &cur->super);
        OBJ_RELEASE(cur);
    }
    if (OPAL_SUCCESS != rc || NULL == v) return rc;

    if (klen + sizeof(prefix) - 1 < OPAL_MAX_INFO_KEY) {
        memcpy(saved, prefix, sizeof(prefix) - 1);
        memcpy(saved + sizeof(prefix) - 1, sub->key, klen + 1);
        opal_info_entry_t *was = entry_find(given, saved);
        /* A saved copy equal to K's value reports nothing K does not
         * (MPI_Win_get_info reports the saved value where there is one,
         * else K's), and MPI_Win_set_info writes its own: only a copy that
         * differs, or one to overwrite, is needed. */
        if (NULL != was || NULL == r || 0 != strcmp(r, v)) rc = set_entry(was, added, saved, v);
    }
    return rc;
}

static int subscribe_direct(opal_infosubscriber_t *obj, const ompi_osc_ucxx_info_sub_t *subs,
                            int n)
{
    bool fresh = 0 == opal_hash_table_get_size(&obj->s_subscriber_table);
    opal_list_t added;
    int rc = OPAL_SUCCESS;

    if (NULL == obj->s_info) {
        obj->s_info = OBJ_NEW(opal_info_t);
        if (NULL == obj->s_info) return OPAL_ERR_OUT_OF_RESOURCE;
    }
    /* The window is not the program's yet: nothing else reads its info
     * until the join, under the info's lock as opal_info_set would take it. */
    OBJ_CONSTRUCT(&added, opal_list_t);
    for (int i = 0; i < n && OPAL_SUCCESS == rc; ++i) {
        rc = subscribe_one(obj, fresh, &obj->s_info->super, &added, subs + i);
    }
    OPAL_THREAD_LOCK(obj->s_info->i_lock);
    opal_list_join(&obj->s_info->super, opal_list_get_end(&obj->s_info->super), &added);
    OPAL_THREAD_UNLOCK(obj->s_info->i_lock);
    OBJ_DESTRUCT(&added);
    return rc;
}

static OMPI_OSC_UCXX_INFO_CB(probe_cb)
{
    return "probed";
}

/* One real subscription on a scratch object: does it leave what
 * subscribe_direct makes? */
void ompi_osc_ucxx_info_probe(void)
{
    static const char key[] = "osc_ucxx_probe";
    opal_infosubscriber_t *obj = OBJ_NEW(opal_infosubscriber_t);
    opal_list_t *list = NULL;
    subscriber_item_t *item;
    opal_info_entry_t *first, *second;

    layout_ok = false;
    if (NULL == obj) return;
    obj->s_info = NULL;   /* (the class's constructor leaves it as malloc gave it) */
    opal_infosubscribe_subscribe(obj, (char *) key, "dflt", probe_cb);
    (void) opal_hash_table_get_value_ptr(&obj->s_subscriber_table, key, strlen(key),
                                         (void **) &list);
    if (NULL != list && OBJ_CLASS(opal_list_t) == list->super.obj_class &&
        1 == opal_list_get_size(list) && NULL != obj->s_info &&
        2 == opal_list_get_size(&obj->s_info->super)) {
        item = (subscriber_item_t *) opal_list_get_first(list);
        first = (opal_info_entry_t *) opal_list_get_first(&obj->s_info->super);
        second = (opal_info_entry_t *) opal_list_get_next(&first->super);
        layout_ok = &opal_callback_list_item_t_class == item->super.super.obj_class &&
                    sizeof(subscriber_item_t) == opal_callback_list_item_t_class.cls_sizeof &&
                    probe_cb == item->callback && NULL != item->default_value &&
                    0 == strcmp(item->default_value, "dflt") &&
                    0 == strcmp(first->ie_key, key) && 0 == strcmp(first->ie_value, "probed") &&
                    0 == strcmp(second->ie_key, OPAL_INFO_SAVE_PREFIX "osc_ucxx_probe") &&
                    0 == strcmp(second->ie_value, "dflt");
    }
    OBJ_RELEASE(obj);
    /* the parameter then tells (MPI_T, ompi_info at run time) that the
     * one pass is off; info_state fails on Open MPI 4.1 if it is */
    if (!layout_ok) OSC_UCXX.info_direct = false;
    OSC_UCXX_VERBOSE(10, "info keys subscribed %s", layout_ok ? "directly" :
                     "through opal_infosubscribe_subscribe (its state is not as expected)");
}

int ompi_osc_ucxx_info_subscribe(opal_infosubscriber_t *obj,
                                 const ompi_osc_ucxx_info_sub_t *subs, int n)
{
    if (layout_ok && OSC_UCXX.info_direct) return subscribe_direct(obj, subs, n);
    subscribe_each(obj, subs, n);
    return OPAL_SUCCESS;
}

#else /* Open MPI 5.0: its subscriber */

void ompi_osc_ucxx_info_probe(void)
{
    OSC_UCXX.info_direct = false;   /* (never the one pass here) */
}

int ompi_osc_ucxx_info_subscribe(opal_infosubscriber_t *obj,
                                 const ompi_osc_ucxx_info_sub_t *subs, int n)
{
    subscribe_each(obj, subs, n);
    return OPAL_SUCCESS;
}

#endif
