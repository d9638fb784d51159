/* Open MPI 5.0's opal_config.h names this pthreads implementation header of
 * opal/mca/threads/mutex.h, but no 5.0.x install ships it.  This stand-in
 * gives what mutex.h, condition.h and wait_sync.h use: the internal mutex
 * and condition types (plain pthread objects, as libopen-pal's pthreads
 * component has them: the layouts must match because opal_mutex_t embeds
 * them; osc_ucxx_compat.h checks sizeof(opal_mutex_t) against the
 * library's class) and the inline operations on them. */
#ifndef OSC_UCXX_COMPAT_THREADS_PTHREADS_MUTEX_H
#define OSC_UCXX_COMPAT_THREADS_PTHREADS_MUTEX_H

#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include "opal/constants.h"

typedef pthread_mutex_t opal_thread_internal_mutex_t;
typedef pthread_cond_t opal_thread_internal_cond_t;

#define OPAL_THREAD_INTERNAL_MUTEX_INITIALIZER PTHREAD_MUTEX_INITIALIZER
#if defined(PTHREAD_RECURSIVE_MUTEX_INITIALIZER_NP)
#define OPAL_THREAD_INTERNAL_RECURSIVE_MUTEX_INITIALIZER PTHREAD_RECURSIVE_MUTEX_INITIALIZER_NP
#endif
#define OPAL_THREAD_INTERNAL_COND_INITIALIZER PTHREAD_COND_INITIALIZER

static inline int opal_thread_internal_mutex_init(opal_thread_internal_mutex_t *m, bool recursive)
{
    pthread_mutexattr_t attr;
    int rc;

    if (!recursive) {
        return 0 == pthread_mutex_init(m, NULL) ? OPAL_SUCCESS : OPAL_ERROR;
    }
    if (0 != pthread_mutexattr_init(&attr)) {
        return OPAL_ERROR;
    }
    pthread_mutexattr_settype(&attr, PTHREAD_MUTEX_RECURSIVE);
    rc = pthread_mutex_init(m, &attr);
    pthread_mutexattr_destroy(&attr);
    return 0 == rc ? OPAL_SUCCESS : OPAL_ERROR;
}

static inline void opal_thread_internal_mutex_lock(opal_thread_internal_mutex_t *m)
{
    (void) pthread_mutex_lock(m);
}

/* 0 when taken, 1 when busy: what mutex.h's callers expect. */
static inline int opal_thread_internal_mutex_trylock(opal_thread_internal_mutex_t *m)
{
    return 0 == pthread_mutex_trylock(m) ? 0 : 1;
}

static inline void opal_thread_internal_mutex_unlock(opal_thread_internal_mutex_t *m)
{
    (void) pthread_mutex_unlock(m);
}

static inline void opal_thread_internal_mutex_destroy(opal_thread_internal_mutex_t *m)
{
    (void) pthread_mutex_destroy(m);
}

static inline int opal_thread_internal_cond_init(opal_thread_internal_cond_t *c)
{
    return 0 == pthread_cond_init(c, NULL) ? OPAL_SUCCESS : OPAL_ERROR;
}

static inline void opal_thread_internal_cond_wait(opal_thread_internal_cond_t *c,
                                                  opal_thread_internal_mutex_t *m)
{
    (void) pthread_cond_wait(c, m);
}

static inline void opal_thread_internal_cond_signal(opal_thread_internal_cond_t *c)
{
    (void) pthread_cond_signal(c);
}

static inline void opal_thread_internal_cond_broadcast(opal_thread_internal_cond_t *c)
{
    (void) pthread_cond_broadcast(c);
}

static inline void opal_thread_internal_cond_destroy(opal_thread_internal_cond_t *c)
{
    (void) pthread_cond_destroy(c);
}

#endif
