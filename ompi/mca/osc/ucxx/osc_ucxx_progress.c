/*
 * Copyright (c) 2026 The osc/ucxx authors. All rights reserved.
 * $COPYRIGHT$
 *
 * Progress: the function opal_progress calls, the wait for one UCX request,
 * and the optional progress thread.
 *
 * Peers connect to one worker per process, the main worker, which
 * opal_progress drives, so a target serves emulated operations and active
 * messages whenever it is anywhere in MPI; the progress thread serves them
 * while the application computes outside MPI.  It runs by default where a
 * peer's operations need this process's CPU: when some process of the job
 * is on another node (nothing of ours is mapped there, so UCX carries
 * every operation to us as a message); then it sleeps on the main worker's
 * event fd while nothing arrives.  Work that UCX callbacks may
 * not do themselves (send, wait, run a handler) is deferred to the message
 * layer's queue (osc_ucxx_am.c), which progress drains outside every
 * callback through the hook that layer gives (ompi_osc_ucxx_progress_drain).
 *
 * Many threads, few cores: a worker that several threads progress (the main
 * worker, a worker with request-based operations in flight) is progressed by
 * one of them at a time, the others skip it (UCX's worker spinlock otherwise
 * burns whole time slices), and wait loops yield the core after
 * osc_ucxx_yield_after empty polls (ompi_osc_ucxx_backoff in the header).
 */

#include "ompi_config.h"

#include <sched.h>
#include <signal.h>
#include <time.h>
#include <unistd.h>
#include <poll.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>

#include "ompi/proc/proc.h"   /* ompi_process_info (the runtime's header: 4.1 and 5.0) */

#include "osc_ucxx_worker.h"

/* after ours: 5.0's opal_progress.h reaches mutex.h, which needs the
 * opal_object_t that osc_ucxx_compat.h includes first */
#include "opal/runtime/opal_progress.h"

/* Deferred work: how much is queued, and the message layer's drain. */
volatile int32_t ompi_osc_ucxx_deferred = 0;
int (*ompi_osc_ucxx_drain_hook)(void) = NULL;

void ompi_osc_ucxx_progress_drain(int (*drain)(void))
{
    ompi_osc_ucxx_drain_hook = drain;
}

/* ------------------------------------------------------------------------- */
/* The progress thread */

/* While the application is inside MPI the thread naps between looks at
 * app_polls, from NAP_MIN_NS doubling up to NAP_MAX_NS: how late at most it
 * takes over when the application leaves MPI. */
#define NAP_MIN_NS 200000L
#define NAP_MAX_NS 1600000L

/* Parking (ompi_osc_ucxx_progress_hold): an application thread asks (RUN
 * -> ASK), the thread parks where it holds nothing of the component (ASK ->
 * PARKED) and stays there until the asker lets it go (-> RUN). */
enum { HOLD_RUN = 0, HOLD_ASK, HOLD_PARKED };

static void park_if_asked(void)
{
    struct timespec pause = {0, 20000L};

    if (OPAL_LIKELY(HOLD_RUN == OSC_UCXX.progress_hold)) return;
    while (HOLD_RUN != OSC_UCXX.progress_hold) {
        if (HOLD_ASK == OSC_UCXX.progress_hold) {
            opal_atomic_mb();
            OSC_UCXX.progress_hold = HOLD_PARKED;
        }
        nanosleep(&pause, NULL);
        opal_atomic_rmb();
    }
    opal_atomic_mb();   /* what the asker changed, seen from here on */
}

static bool on_progress_thread(void)
{
    return OSC_UCXX.progress_running && pthread_equal(pthread_self(), OSC_UCXX.progress_tid);
}

bool ompi_osc_ucxx_progress_hold(void)
{
    int32_t run = HOLD_RUN;

    if (!OSC_UCXX.progress_running) return true;
    if (on_progress_thread() ||
        !opal_atomic_compare_exchange_strong_32(&OSC_UCXX.progress_hold, &run, HOLD_ASK)) {
        return false;   /* (another thread holds it: under MPI_THREAD_MULTIPLE) */
    }
    opal_atomic_mb();
    ompi_osc_ucxx_progress_wake();
    while (HOLD_PARKED != OSC_UCXX.progress_hold) {
        sched_yield();   /* (the thread may need this core to get there) */
        opal_atomic_rmb();
    }
    opal_atomic_mb();
    return true;
}

void ompi_osc_ucxx_progress_unhold(void)
{
    if (!OSC_UCXX.progress_running || on_progress_thread()) return;
    opal_atomic_mb();
    OSC_UCXX.progress_hold = HOLD_RUN;
}

/* Work the progress thread leaves to the application's threads: below
 * MPI_THREAD_MULTIPLE Open MPI changes reference counts, and a request's
 * completion state and a wait's count, without atomics, so the thread doing
 * either would race with the application's own retains and waits (a
 * request completed under MPI_Waitany was lost to it).  The next
 * application thread that progresses runs the items. */
static ompi_osc_ucxx_later_t *later_list = NULL;   /* pushed by the thread, taken whole */

bool ompi_osc_ucxx_objects_ours(void)
{
    return opal_using_threads() || !on_progress_thread();
}

void ompi_osc_ucxx_later(ompi_osc_ucxx_later_t *l)
{
    l->next = __atomic_load_n(&later_list, __ATOMIC_RELAXED);
    while (!__atomic_compare_exchange_n(&later_list, &l->next, l, true, __ATOMIC_RELEASE,
                                        __ATOMIC_RELAXED)) {
    }
}

/* Runs what was left; how many items. */
static int later_run(void)
{
    ompi_osc_ucxx_later_t *l = __atomic_exchange_n(&later_list, NULL, __ATOMIC_ACQUIRE);
    int n = 0;

    while (NULL != l) {
        ompi_osc_ucxx_later_t *next = l->next;
        l->run(l);
        l = next;
        ++n;
    }
    return n;
}

typedef struct obj_later {
    ompi_osc_ucxx_later_t super;
    opal_object_t *obj;
} obj_later_t;

static void obj_later_run(ompi_osc_ucxx_later_t *later)
{
    obj_later_t *l = (obj_later_t *) later;
    opal_object_t *obj = l->obj;

    OBJ_RELEASE(obj);
    free(l);
}

void ompi_osc_ucxx_obj_release(opal_object_t *obj)
{
    obj_later_t *l;

    if (ompi_osc_ucxx_objects_ours()) {
        OBJ_RELEASE(obj);
        return;
    }
    if (NULL == (l = malloc(sizeof(*l)))) return;   /* (a reference kept, never a race) */
    l->obj = obj;
    l->super.run = obj_later_run;
    ompi_osc_ucxx_later(&l->super);
}

/* Waking for nothing: UCX's event fd may stay readable while progress
 * finds nothing to do (a TCP endpoint waiting for its peer's connection
 * ack asks to write, and its writable socket reports so at once, every
 * time), and a thread that went back to the fd at once spun on a core that
 * the peer it waits for may need.  After wakes that found nothing the
 * thread sleeps on its own eventfd alone, BACKOFF_MIN_NS doubling up to
 * NAP_MAX_NS (the bound on how late it serves a peer, as for its naps),
 * before it looks at UCX's fd again; a wake that finds work ends it. */
#define BACKOFF_MIN_NS 20000L

/* Sleep until someone wakes the thread (deferred work, a stop or a hold:
 * ompi_osc_ucxx_progress_wake) and, with `ucx`, until the main worker
 * (armed) has an event or the safety timeout passes; without, until
 * `pause` passes.
 * True if an event on the epoll set woke it. */
static bool progress_sleep(bool ucx, const struct timespec *pause)
{
    struct pollfd own = {.fd = OSC_UCXX.progress_wake_fd, .events = POLLIN};
    struct epoll_event ev[3];
    bool woke = false, own_ready = true;
    uint64_t junk;

    OSC_UCXX.progress_sleeping = 1;
    opal_atomic_mb();
    if (!ompi_osc_ucxx_deferred_pending() && !OSC_UCXX.progress_stop &&
        HOLD_RUN == OSC_UCXX.progress_hold) {
        if (ucx) {
            int n = epoll_wait(OSC_UCXX.progress_efd, ev, 3, 100);
            woke = n > 0;
            own_ready = false;   /* (a wake by UCX alone costs no read of ours) */
            for (int i = 0; i < n; ++i) {
                own_ready = own_ready || ev[i].data.fd == OSC_UCXX.progress_wake_fd;
            }
        } else {
            (void) ppoll(&own, 1, pause, NULL);
            own_ready = 0 != (own.revents & POLLIN);
        }
    }
    OSC_UCXX.progress_sleeping = 0;
    while (own_ready && read(OSC_UCXX.progress_wake_fd, &junk, sizeof(junk)) > 0) {
    }
    return woke;
}

/* The backoff after `idle` wakes in a row that found nothing. */
static void progress_backoff(int idle)
{
    struct timespec pause = {0, BACKOFF_MIN_NS};

    while (--idle > 0 && pause.tv_nsec < NAP_MAX_NS) pause.tv_nsec *= 2;
    if (pause.tv_nsec > NAP_MAX_NS) pause.tv_nsec = NAP_MAX_NS;
    (void) progress_sleep(false, &pause);
}

/* Wait mode: sleep in the kernel until the main worker has an event or
 * someone deferred work (ompi_osc_ucxx_progress_wake).  Work that stays
 * queued because it is blocked (an AM waiting for another origin's handler
 * to finish) is retried by polling: nothing would wake us for it.  The
 * timeout is a safety net for transports without wakeup support. */
static void progress_wait_loop(void)
{
    struct timespec pause = {0, 1000L * (OSC_UCXX.progress_interval_us > 0
                                             ? OSC_UCXX.progress_interval_us : 20)};
    struct timespec nap = {0, NAP_MIN_NS};
    uint32_t polls = OSC_UCXX.app_polls - 1;
    ompi_osc_ucxx_worker_t *main = OSC_UCXX.main_worker;
    int quiet = 0, idle = 0;   /* idle: wakes in a row that found nothing yet */
    bool found = false, backed_off = false;

    while (!OSC_UCXX.progress_stop) {
        park_if_asked();
        /* The application is inside MPI and progresses the worker itself:
         * stay out of its way (arming the worker while another thread
         * progresses it was seen to stall TCP transfers for seconds), and
         * look less often the longer it stays (a rank waiting in a long
         * receive or barrier keeps no core busy for us).  The worker is
         * progressed and armed in turn with the application's threads
         * (ompi_osc_ucxx_worker_take), never spinning on UCX's lock while
         * one of them is inside, and never while this thread drains or
         * sleeps. */
        if (polls != OSC_UCXX.app_polls || !ompi_osc_ucxx_worker_take(main)) {
            polls = OSC_UCXX.app_polls;
            quiet = 0;
            nanosleep(&nap, NULL);
            if (nap.tv_nsec < NAP_MAX_NS) nap.tv_nsec *= 2;
            continue;
        }
        nap.tv_nsec = NAP_MIN_NS;
        int n = ucp_worker_progress(main->ucp);
        ompi_osc_ucxx_worker_give(main);
        n += ompi_osc_ucxx_deferred_drain();
        found = found || 0 != n;
        if (0 != n || ompi_osc_ucxx_deferred_pending() || ++quiet < 5) {
            if (0 == n) nanosleep(&pause, NULL);
            continue;
        }
        if (found) idle = 0;
        found = false;
        if (idle > 0 && !backed_off) {
            backed_off = true;
            progress_backoff(idle);
            continue;
        }
        backed_off = false;
        if (!ompi_osc_ucxx_worker_take(main)) continue;
        ucs_status_t armed = ucp_worker_arm(main->ucp);
        ompi_osc_ucxx_worker_give(main);
        if (UCS_OK != armed) {
            idle += idle < 16;   /* UCS_ERR_BUSY: events arrived meanwhile */
            continue;
        }
        idle = progress_sleep(true, NULL) ? idle + (idle < 16) : 0;
    }
}

void ompi_osc_ucxx_progress_app_busy(void)
{
    if (OSC_UCXX.progress_running && !on_progress_thread()) {
        OSC_UCXX.app_polls++;   /* (racy on purpose: any change will do) */
    }
}

void ompi_osc_ucxx_progress_wake(void)
{
    if (OPAL_UNLIKELY(OSC_UCXX.progress_sleeping)) {
        uint64_t one = 1;
        ssize_t w = write(OSC_UCXX.progress_wake_fd, &one, sizeof(one));
        (void) w;
    }
}

/* Wait mode's epoll set: the main worker's event fd and our eventfd.
 * False (poll instead) where UCX cannot give the fd. */
static bool progress_wait_setup(void)
{
    struct epoll_event ev = {.events = EPOLLIN}, own = {.events = EPOLLIN};
    int ucx_fd;

    OSC_UCXX.progress_efd = OSC_UCXX.progress_wake_fd = -1;
    if (UCS_OK != ucp_worker_get_efd(OSC_UCXX.main_worker->ucp, &ucx_fd)) {
        return false;
    }
    OSC_UCXX.progress_efd = epoll_create1(EPOLL_CLOEXEC);
    OSC_UCXX.progress_wake_fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    ev.data.fd = ucx_fd;
    own.data.fd = OSC_UCXX.progress_wake_fd;
    if (OSC_UCXX.progress_efd < 0 || OSC_UCXX.progress_wake_fd < 0 ||
        0 != epoll_ctl(OSC_UCXX.progress_efd, EPOLL_CTL_ADD, ucx_fd, &ev) ||
        0 != epoll_ctl(OSC_UCXX.progress_efd, EPOLL_CTL_ADD, OSC_UCXX.progress_wake_fd, &own)) {
        if (OSC_UCXX.progress_efd >= 0) close(OSC_UCXX.progress_efd);
        if (OSC_UCXX.progress_wake_fd >= 0) close(OSC_UCXX.progress_wake_fd);
        OSC_UCXX.progress_efd = OSC_UCXX.progress_wake_fd = -1;
        return false;
    }
    if (OSC_UCXX.test_busy_fd) {
        /* (a test hook, OSC_UCXX_TEST_TUNE busy_fd=1: a descriptor that is
         * always ready, as UCX's is while a TCP endpoint waits for its
         * peer's ack; never read) */
        OSC_UCXX.progress_busy_fd = eventfd(1, EFD_NONBLOCK | EFD_CLOEXEC);
        if (OSC_UCXX.progress_busy_fd >= 0) {
            (void) epoll_ctl(OSC_UCXX.progress_efd, EPOLL_CTL_ADD, OSC_UCXX.progress_busy_fd, &ev);
        }
    }
    return true;
}

/* The progress thread: serves peers (emulated RMA, active messages) while
 * the application computes outside MPI.  Polling (progress_wait false) is
 * a test hook, and the fallback where UCX gives no event fd. */
static void *progress_thread_main(void *arg)
{
    struct timespec pause = {0, 1000L * OSC_UCXX.progress_interval_us};
    if (OSC_UCXX.progress_wait) {
        progress_wait_loop();
        return NULL;
    }
    while (!OSC_UCXX.progress_stop) {
        park_if_asked();
        int n = ompi_osc_ucxx_worker_progress_shared(OSC_UCXX.main_worker);
        n += ompi_osc_ucxx_deferred_drain();
        if (0 == n && OSC_UCXX.progress_interval_us > 0) {
            nanosleep(&pause, NULL);
        }
    }
    return NULL;
}

/* The thread, with the application's asynchronous signals blocked: they
 * stay the application's threads' (a timer's signal that should interrupt
 * its sleep, a handler that assumes its own thread); faults stay with the
 * thread that faults.  Its CPU affinity is the creating thread's. */
static bool progress_thread_create(void)
{
    static const int faults[] = {SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGTRAP, SIGABRT, SIGSYS};
    sigset_t all, old;
    int rc;

    sigfillset(&all);
    for (size_t i = 0; i < sizeof(faults) / sizeof(faults[0]); ++i) {
        sigdelset(&all, faults[i]);
    }
    pthread_sigmask(SIG_BLOCK, &all, &old);
    rc = pthread_create(&OSC_UCXX.progress_tid, NULL, progress_thread_main, NULL);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    if (0 == rc) {
        (void) pthread_setname_np(OSC_UCXX.progress_tid, "osc_ucxx_prog");
    }
    return 0 == rc;
}

/* osc_ucxx_progress_thread auto (-1): on when some process of the job is
 * on another node, decided once, the first time anyone asks (MPI_Init:
 * the thread mode of the first worker and the component's locks depend on
 * it).  Peers on this node reach our memory mapped, or over shared memory
 * that MPI calls serve soon enough; a peer on another node reaches it only
 * through messages this process must serve.  Processes that a spawn or
 * connect adds later are not counted. */
bool ompi_osc_ucxx_progress_thread_wanted(void)
{
    if (OSC_UCXX.progress_thread < 0) {
        uint32_t job = (uint32_t) ompi_process_info.num_procs;
        uint32_t here = (uint32_t) opal_process_info.num_local_peers + 1;
        OSC_UCXX.progress_thread = here < job ? 1 : 0;
        OSC_UCXX_VERBOSE(10, "%u of the job's %u processes on this node: %s progress thread",
                         here, job, OSC_UCXX.progress_thread ? "a" : "no");
    }
    return OSC_UCXX.progress_thread > 0;
}

/* Progress joins opal_progress, and the progress thread starts if wanted
 * (the main worker exists). */
int ompi_osc_ucxx_progress_start(void)
{
    if (OPAL_SUCCESS != opal_progress_register(ompi_osc_ucxx_progress)) {
        return OMPI_ERROR;
    }
    OSC_UCXX.progress_registered = true;
    if (!ompi_osc_ucxx_progress_thread_wanted()) {
        return OMPI_SUCCESS;
    }
    if (OSC_UCXX.progress_wait && !progress_wait_setup()) {
        OSC_UCXX_VERBOSE(1, "no UCX event fd: the progress thread polls");
        OSC_UCXX.progress_wait = false;
    }
    OSC_UCXX.progress_stop = false;
    if (progress_thread_create()) {
        OSC_UCXX.progress_running = true;
        OSC_UCXX_VERBOSE(10, "progress thread started (%s)",
                         OSC_UCXX.progress_wait ? "sleeps on the worker's event fd" : "polls");
    } else {
        OSC_UCXX_VERBOSE(1, "could not start the progress thread; continuing without");
    }
    return OMPI_SUCCESS;
}

/* Finalize: no thread of ours progresses any more, opal_progress leaves us. */
void ompi_osc_ucxx_progress_stop(void)
{
    if (OSC_UCXX.progress_running) {
        OSC_UCXX.progress_stop = true;
        opal_atomic_mb();
        ompi_osc_ucxx_progress_wake();
        pthread_join(OSC_UCXX.progress_tid, NULL);
        OSC_UCXX.progress_running = false;
    }
    (void) later_run();
    if (OSC_UCXX.progress_efd >= 0) {
        close(OSC_UCXX.progress_efd);
        close(OSC_UCXX.progress_wake_fd);
        OSC_UCXX.progress_efd = OSC_UCXX.progress_wake_fd = -1;
    }
    if (OSC_UCXX.progress_busy_fd >= 0) {
        close(OSC_UCXX.progress_busy_fd);
        OSC_UCXX.progress_busy_fd = -1;
    }
    if (OSC_UCXX.progress_registered) {
        opal_progress_unregister(ompi_osc_ucxx_progress);
        OSC_UCXX.progress_registered = false;
    }
}

/* ------------------------------------------------------------------------- */
/* Progress */

/* Registered with opal_progress: the main worker serves peers; the calling
 * thread's worker and any worker with request-based operations in flight
 * complete our own operations (a request may be waited on by any thread). */
int ompi_osc_ucxx_progress(void)
{
    ompi_osc_ucxx_tls_t *tls = NULL;
    ompi_osc_ucxx_worker_t *self = OSC_UCXX.only_worker;  /* (no TLS read) */
    int count;

    if (NULL == OSC_UCXX.main_worker) {
        return 0;
    }
    if (OSC_UCXX.progress_running) {
        OSC_UCXX.app_polls++;   /* (racy on purpose: any change will do) */
    }
    count = ompi_osc_ucxx_worker_progress_shared(OSC_UCXX.main_worker);
    if (ompi_osc_ucxx_deferred_pending()) {
        count += ompi_osc_ucxx_drain_hook();
    }
    if (OPAL_UNLIKELY(0 != ompi_osc_ucxx_pongs_due)) {
        ompi_osc_ucxx_quiesce_serve();
    }
    if (OPAL_UNLIKELY(NULL != later_list) && !on_progress_thread()) {
        count += later_run();   /* (counted: MPI_Test looks again after progress that did something) */
    }
    if (NULL == self) {
        tls = &ompi_osc_ucxx_tls;
        self = tls->worker;
    }
    if (NULL != self && self != OSC_UCXX.main_worker) {
        count += ompi_osc_ucxx_worker_progress_shared(self);
    }
    int n = OSC_UCXX.num_workers;
    opal_atomic_rmb();  /* the array read next holds at least n workers */
    ompi_osc_ucxx_worker_t **workers = OSC_UCXX.workers;
    for (int i = 1; i < n; ++i) {
        ompi_osc_ucxx_worker_t *w = workers[i];
        if (w->pending > 0 && w != self) {
            count += ompi_osc_ucxx_worker_progress_shared(w);
        }
    }
    if (UCS_THREAD_MODE_MULTI == OSC_UCXX.thread_mode) {
        /* Threads may outnumber cores (processes are Open MPI's business:
         * mpi_yield_when_idle), so a long idle spin here gives the core
         * away, but once per osc_ucxx_yield_after idle polls, not in every
         * poll after them as our own wait loops do: this count spans every
         * wait of the thread, Open MPI's too, and yielding in each poll of
         * a short one (the barrier of a fence) made fences several times
         * slower under MPI_THREAD_MULTIPLE. */
        if (NULL == tls) tls = &ompi_osc_ucxx_tls;
        if (count > 0) {
            tls->idle = 0;
        } else if (OSC_UCXX.yield_after > 0 && ++tls->idle >= OSC_UCXX.yield_after) {
            tls->idle = 0;
            sched_yield();
        }
    }
    return count;
}

/* Wait for a UCX request issued on `worker`, progressing it and the rest of
 * the library (a peer may need us to serve it before it can answer). */
int ompi_osc_ucxx_wait_request(ompi_osc_ucxx_worker_t *worker, void *req)
{
    ucs_status_t status;
    int spins = 0, idle = 0;

    if (!UCS_PTR_IS_PTR(req)) {
        return UCS_PTR_IS_ERR(req) ? OMPI_ERROR : OMPI_SUCCESS;
    }
    while (UCS_INPROGRESS == (status = ucp_request_check_status(req))) {
        int n = ompi_osc_ucxx_worker_progress_shared(worker);
        if (++spins == OSC_UCXX.post_poll_interval) {
            spins = 0;
            opal_progress();
        }
        ompi_osc_ucxx_backoff(&idle, n);
    }
    ucp_request_free(req);
    if (UCS_OK != status) {
        OSC_UCXX_VERBOSE(1, "UCX operation failed: %s", ucs_status_string(status));
        return OMPI_ERROR;
    }
    return OMPI_SUCCESS;
}
