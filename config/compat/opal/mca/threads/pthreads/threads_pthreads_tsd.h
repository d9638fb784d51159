/* Stand-in for the Open MPI 5.0 pthreads thread-specific-data header that
 * opal/mca/threads/tsd.h includes (not installed by 5.0.x): keys are pthread
 * keys, as libopen-pal's opal_tsd_key_create makes them. */
#ifndef OSC_UCXX_COMPAT_THREADS_PTHREADS_TSD_H
#define OSC_UCXX_COMPAT_THREADS_PTHREADS_TSD_H
#include <pthread.h>
#include "opal/constants.h"

typedef pthread_key_t opal_tsd_key_t;

static inline int opal_tsd_key_delete(opal_tsd_key_t key)
{
    return 0 == pthread_key_delete(key) ? OPAL_SUCCESS : OPAL_ERROR;
}

static inline int opal_tsd_set(opal_tsd_key_t key, void *value)
{
    return 0 == pthread_setspecific(key, value) ? OPAL_SUCCESS : OPAL_ERROR;
}

static inline int opal_tsd_get(opal_tsd_key_t key, void **valuep)
{
    *valuep = pthread_getspecific(key);
    return OPAL_SUCCESS;
}
#endif
