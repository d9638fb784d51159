/*
 * Copyright (c) 2026 The osc/ucxx authors. All rights reserved.
 * $COPYRIGHT$
 *
 * osc/ucxx, below the bottom layer: the few Open MPI internals that differ
 * between the 4.1 and 5.0 series, behind one name each, so that no other
 * file tests OMPI_MAJOR_VERSION.  The osc framework itself (component and
 * module structs, OMPI_OSC_BASE_VERSION_3_0_0) is the same in both.
 *
 *   what                       4.1                        5.0
 *   mutexes                    opal/threads/mutex.h       opal/mca/threads/mutex.h
 *   info subscriber callbacks  char * in and out          const char * in and out
 *   info entries               char key[], char *value    opal_cstring_t key and value
 *   opal_info_get / nthkey     copy into a buffer         an opal_cstring_t to release
 *   a communicator's id        ompi_comm_get_cid          ompi_comm_get_local_cid, global
 *                                                         only with a parent communicator
 *   modex put / optional get   opal_pmix.put, opal_value_t PMIx_Put, pmix_value_t
 *
 * 5.0.x installs lack the pthreads and timer implementation headers its
 * opal_config.h names; config/compat has our stand-ins, and the
 * _Static_asserts below check that the types they define have the sizes
 * libopen-pal was built with (configure reads those from the library).
 */

#ifndef OMPI_OSC_UCXX_COMPAT_H
#define OMPI_OSC_UCXX_COMPAT_H

#include "ompi_config.h"

#include <string.h>

/* first: 5.0's mutex.h, which the others include, uses it without including it */
#include "opal/class/opal_object.h"
#include "opal/util/info.h"
#include "opal/util/info_subscriber.h"
#include "ompi/communicator/communicator.h"

#if OMPI_MAJOR_VERSION >= 5
#include "opal/mca/threads/mutex.h"
#include "opal/mca/threads/threads.h"
#include "opal/mca/pmix/pmix-internal.h"
#else
#include "opal/threads/mutex.h"
#include "opal/threads/threads.h"
#include "opal/mca/pmix/pmix.h"
#endif

/* Sizes libopen-pal's classes have, found by configure (0: not known, as in
 * an in-tree build, where the headers are the library's own). */
#if defined(OSC_UCXX_LIB_SIZEOF_OPAL_MUTEX) && OSC_UCXX_LIB_SIZEOF_OPAL_MUTEX > 0
_Static_assert(sizeof(opal_mutex_t) == OSC_UCXX_LIB_SIZEOF_OPAL_MUTEX,
               "opal_mutex_t differs from libopen-pal's: check config/compat's mutex stand-in");
#endif
#if defined(OSC_UCXX_LIB_SIZEOF_OPAL_THREAD) && OSC_UCXX_LIB_SIZEOF_OPAL_THREAD > 0
_Static_assert(sizeof(opal_thread_t) == OSC_UCXX_LIB_SIZEOF_OPAL_THREAD,
               "opal_thread_t differs from libopen-pal's: check config/compat's threads stand-in");
#endif

/* The string type of info subscriber callbacks (key, value, and result). */
#if OMPI_MAJOR_VERSION >= 5
typedef const char *ompi_osc_ucxx_info_str_t;
#else
typedef char *ompi_osc_ucxx_info_str_t;
#endif
/* static OMPI_OSC_UCXX_INFO_CB(name) { ... }: a subscriber callback. */
#define OMPI_OSC_UCXX_INFO_CB(name)                                                              \
    ompi_osc_ucxx_info_str_t name(opal_infosubscriber_t *obj, ompi_osc_ucxx_info_str_t key,      \
                                  ompi_osc_ucxx_info_str_t value)

/* The value of info key KEY copied into BUF (LEN bytes, always terminated);
 * *flag tells whether the key is set. */
static inline int ompi_osc_ucxx_info_get(opal_info_t *info, const char *key, char *buf,
                                         int len, int *flag)
{
#if OMPI_MAJOR_VERSION >= 5
    opal_cstring_t *value = NULL;
    int rc = opal_info_get(info, key, &value, flag);

    if (OPAL_SUCCESS == rc && *flag && NULL != value) {
        snprintf(buf, (size_t) len, "%s", value->string);
    }
    if (NULL != value) OBJ_RELEASE(value);
    return rc;
#else
    int rc = opal_info_get(info, (char *) key, len - 1, buf, flag);
    buf[len - 1] = '\0';
    return rc;
#endif
}

/* The Nth key of INFO copied into BUF (LEN bytes). */
static inline int ompi_osc_ucxx_info_nthkey(opal_info_t *info, int n, char *buf, int len)
{
#if OMPI_MAJOR_VERSION >= 5
    opal_cstring_t *key = NULL;
    int rc = opal_info_get_nthkey(info, n, &key);

    if (OPAL_SUCCESS == rc && NULL != key) snprintf(buf, (size_t) len, "%s", key->string);
    if (NULL != key) OBJ_RELEASE(key);
    return rc;
#else
    char full[MPI_MAX_INFO_KEY + 1];
    int rc = opal_info_get_nthkey(info, n, full);

    if (OPAL_SUCCESS == rc) snprintf(buf, (size_t) len, "%s", full);
    return rc;
#endif
}

/* Do communicators the program left outlive the osc components' finalize
 * (ompi_comm_finalize after ompi_osc_base_finalize: 4.1; before it: 5.0)? */
static inline bool ompi_osc_ucxx_comms_outlive_osc(void)
{
#if OMPI_MAJOR_VERSION >= 5
    return false;
#else
    return true;
#endif
}

/* Whether COMM's local id is the same on every process of it.  In 5.0 it is
 * not for communicators made without a parent (MPI_Comm_create_from_group,
 * the sessions model) nor for their duplicates; osc/ucxx names windows on the
 * wire by that id, so it declines such windows (the next component takes
 * them). */
static inline bool ompi_osc_ucxx_comm_cid_is_global(ompi_communicator_t *comm)
{
#if OMPI_MAJOR_VERSION >= 5
    return OMPI_COMM_IS_GLOBAL_INDEX(comm);
#else
    (void) comm;
    return true;
#endif
}

/* The communicator's id (global where ompi_osc_ucxx_comm_cid_is_global). */
static inline uint32_t ompi_osc_ucxx_comm_cid(ompi_communicator_t *comm)
{
#if OMPI_MAJOR_VERSION >= 5
    return ompi_comm_get_local_cid(comm);
#else
    return ompi_comm_get_cid(comm);
#endif
}

/* Publish string VALUE under KEY to the processes on this node, through the
 * modex (seen by peers only if put before MPI_Init's fence). */
static inline int ompi_osc_ucxx_modex_put_local(const char *key, const char *value)
{
#if OMPI_MAJOR_VERSION >= 5
    pmix_value_t v;
    pmix_status_t rc;

    PMIX_VALUE_LOAD(&v, value, PMIX_STRING);
    rc = PMIx_Put(PMIX_LOCAL, key, &v);
    PMIX_VALUE_DESTRUCT(&v);
    return PMIX_SUCCESS == rc ? OMPI_SUCCESS : OMPI_ERROR;
#else
    opal_value_t kv;
    int rc;

    if (NULL == opal_pmix.put) return OMPI_ERR_NOT_SUPPORTED;
    OBJ_CONSTRUCT(&kv, opal_value_t);
    kv.key = (char *) key;
    kv.type = OPAL_STRING;
    kv.data.string = (char *) value;
    rc = opal_pmix.put(OPAL_PMIX_LOCAL, &kv);
    kv.key = NULL;           /* ours, not the destructor's */
    kv.data.string = NULL;
    OBJ_DESTRUCT(&kv);
    return rc;
#endif
}

/* The string PROC published under KEY, if it is here already; NULL
 * otherwise (never waits for it).  The caller frees it.  4.1's modex
 * collects every process's data; 5.0's by default does not, and the local
 * PMIx server, which has what processes on this node posted, is asked
 * (PMIX_IMMEDIATE: no request to the host, no wait). */
static inline char *ompi_osc_ucxx_modex_get_optional(const opal_process_name_t *proc,
                                                     const char *key)
{
    char *value = NULL;
    int rc;
#if OMPI_MAJOR_VERSION >= 5
    pmix_proc_t p;
    pmix_value_t *v = NULL;
    pmix_info_t info;
    bool yes = true;

    OPAL_PMIX_CONVERT_NAME(&p, proc);
    PMIX_INFO_LOAD(&info, PMIX_IMMEDIATE, &yes, PMIX_BOOL);
    rc = PMIx_Get(&p, key, &info, 1, &v);
    PMIX_INFO_DESTRUCT(&info);
    if (PMIX_SUCCESS == rc && NULL != v && PMIX_STRING == v->type && NULL != v->data.string) {
        value = strdup(v->data.string);
    }
    if (NULL != v) PMIX_VALUE_RELEASE(v);
#else
    if (NULL == opal_pmix.get) return NULL;
    OPAL_MODEX_RECV_VALUE_OPTIONAL(rc, key, proc, &value, OPAL_STRING);
    if (OPAL_SUCCESS != rc) value = NULL;
#endif
    return value;
}

#endif /* OMPI_OSC_UCXX_COMPAT_H */
