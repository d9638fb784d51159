/* Stand-in for the Open MPI 5.0 linux timer header that opal_config.h names
 * (not installed by 5.0.x).  libopen-pal's linux timer component exports the
 * two readers as function pointers it sets at open time, and the frequency
 * as a function; osc/ucxx never reads them, this only declares them. */
#ifndef OSC_UCXX_COMPAT_TIMER_LINUX_H
#define OSC_UCXX_COMPAT_TIMER_LINUX_H
#include "opal/sys/timer.h"

OPAL_DECLSPEC extern opal_timer_t (*opal_timer_base_get_cycles)(void);
OPAL_DECLSPEC extern opal_timer_t (*opal_timer_base_get_usec)(void);
OPAL_DECLSPEC opal_timer_t opal_timer_base_get_freq(void);

#define OPAL_TIMER_CYCLE_NATIVE 0
#define OPAL_TIMER_CYCLE_SUPPORTED 1
#define OPAL_TIMER_USEC_NATIVE 0
#define OPAL_TIMER_USEC_SUPPORTED 1
#endif
