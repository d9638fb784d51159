/* Stand-in for the Open MPI 5.0 pthreads header that opal/mca/threads/threads.h
 * includes (not installed by 5.0.x).  threads.h defines opal_thread_t itself
 * around a pthread_t and declares opal_thread_yield, which the implementation
 * defines: libopen-pal's pthreads component exports the yield it chose
 * (sched_yield or nanosleep, MCA threads_pthreads_yield_strategy) as a
 * function pointer. */
#ifndef OSC_UCXX_COMPAT_THREADS_PTHREADS_THREADS_H
#define OSC_UCXX_COMPAT_THREADS_PTHREADS_THREADS_H
#include <pthread.h>
#include <signal.h>

OPAL_DECLSPEC extern void (*opal_threads_pthreads_yield_fn)(void);

static inline void opal_thread_yield(void)
{
    opal_threads_pthreads_yield_fn();
}
#endif
