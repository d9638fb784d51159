/*
 * Copyright (c) 2026 The osc/ucxx authors. All rights reserved.
 * $COPYRIGHT$
 *
 * Cross-memory attach (Linux 3.2 and later): process_vm_readv and
 * process_vm_writev copy between two processes' memory in one system call
 * of the calling process.  The other process's CPU takes no part, its
 * memory is left as it is (no mapping of it changes, nothing is pinned
 * after the call), and the copy is complete when the call returns.  This is
 * how peers on the node reach user memory (MPI_Win_create memory, attached
 * regions, memory handles), which UCX 1.13 maps only where it allocated it.
 *
 * The kernel allows it where the caller may ptrace the target with
 * PTRACE_MODE_ATTACH_REALCREDS: the same user (real, effective and saved
 * uid and gid) and a target that is dumpable (not setuid, no
 * prctl(PR_SET_DUMPABLE, 0)), or CAP_SYS_PTRACE; with the Yama module's
 * kernel.yama.ptrace_scope at 1 only an ancestor (or a process the target
 * named with prctl(PR_SET_PTRACER)) may, which MPI ranks, siblings, are
 * not; at 2 only CAP_SYS_PTRACE, at 3 nobody.  Seccomp filters (containers)
 * may refuse the calls too.  So each process asks the kernel once per peer
 * (cma_peer): it reads a word the peer published and checks that it holds
 * the peer's name, which also rules out a pid of another pid namespace.
 * Refused (EPERM, ENOSYS, another process), the peer is reached as before:
 * through UCX (emulated RMA on registered memory, accumulates by message),
 * which needs the peer's CPU.  This process never widens who may ptrace it
 * (no PR_SET_PTRACER): that stays the application's business.
 *
 * Test hook: the environment variable OSC_UCXX_TEST_CMA_REFUSE=1 makes
 * every probe of this process fail as EPERM does (the tests of the
 * fallback).
 */

#include "ompi_config.h"

#include <errno.h>
#include <limits.h>
#include <unistd.h>

#include "ompi/proc/proc.h"

#include "osc_ucxx_cma.h"

#ifndef IOV_MAX
#define IOV_MAX 1024
#endif

static volatile uint64_t ident_word;   /* our name, for peers' probes */

/* Peers asked so far: proc key -> their pid where allowed, else -1. */
static opal_hash_table_t verdicts;
static bool verdicts_ready;

void ompi_osc_ucxx_cma_self(int32_t *pid, uint64_t *ident)
{
    ident_word = ompi_osc_ucxx_proc_key(ompi_proc_local());
    *pid = (int32_t) getpid();
    *ident = (uint64_t) (uintptr_t) &ident_word;
}

/* (under OSC_UCXX.lock) */
static intptr_t probe(ompi_proc_t *proc, int32_t pid, uint64_t ident)
{
    static int refuse = -1;  /* the test hook, read once (getenv walks the environment) */
    uint64_t got = 0;
    struct iovec l = {&got, sizeof(got)}, r = {(void *) (uintptr_t) ident, sizeof(got)};
    ssize_t n;

    if (refuse < 0) {
        const char *hook = getenv("OSC_UCXX_TEST_CMA_REFUSE");
        refuse = NULL != hook && 0 == strcmp(hook, "1");
    }
    if (refuse) {
        n = -1;
        errno = EPERM;
    } else {
        n = process_vm_readv((pid_t) pid, &l, 1, &r, 1, 0);
    }
    if (sizeof(got) == n && got == ompi_osc_ucxx_proc_key(proc)) return pid;
    OSC_UCXX_VERBOSE(10, "no cross-memory attach to pid %d: %s", (int) pid,
                     n < 0 ? strerror(errno) : "another process");
    return -1;
}

/* (under OSC_UCXX.lock) */
static intptr_t verdict_get(uint64_t key)
{
    void *v = NULL;
    if (!verdicts_ready) {
        OBJ_CONSTRUCT(&verdicts, opal_hash_table_t);
        verdicts_ready = OPAL_SUCCESS == opal_hash_table_init(&verdicts, 64);
    }
    if (!verdicts_ready ||
        OPAL_SUCCESS != opal_hash_table_get_value_uint64(&verdicts, key, &v)) {
        return 0;
    }
    return (intptr_t) v;
}

int32_t ompi_osc_ucxx_cma_peer(ompi_proc_t *proc, int32_t pid, uint64_t ident)
{
    uint64_t key = ompi_osc_ucxx_proc_key(proc);
    intptr_t verdict;

    if (pid <= 0 || 0 == ident || !OPAL_PROC_ON_LOCAL_NODE(proc->super.proc_flags)) return 0;
    OSC_UCXX_LOCK(&OSC_UCXX.lock);
    verdict = verdict_get(key);
    if (0 == verdict) {
        verdict = probe(proc, pid, ident);
        if (verdicts_ready) {
            opal_hash_table_set_value_uint64(&verdicts, key, (void *) (intptr_t) verdict);
        }
    }
    OSC_UCXX_UNLOCK(&OSC_UCXX.lock);
    return verdict > 0 ? (int32_t) verdict : 0;
}

/* A peer that refused after all (it became undumpable, changed its
 * credentials): later windows go through UCX.  (Windows alive keep the pid
 * and get OMPI_ERR_NOT_AVAILABLE again: the caller falls back.) */
static void refused(int32_t pid)
{
    OSC_UCXX_VERBOSE(10, "cross-memory attach to pid %d refused", (int) pid);
    OSC_UCXX_LOCK(&OSC_UCXX.lock);
    if (verdicts_ready) {
        uint64_t key;
        void *v, *node = NULL;
        int rc = opal_hash_table_get_first_key_uint64(&verdicts, &key, &v, &node);
        while (OPAL_SUCCESS == rc) {
            if ((intptr_t) v == pid) {
                (void) opal_hash_table_set_value_uint64(&verdicts, key, (void *) (intptr_t) -1);
            }
            rc = opal_hash_table_get_next_key_uint64(&verdicts, &key, &v, node, &node);
        }
    }
    OSC_UCXX_UNLOCK(&OSC_UCXX.lock);
}

static int status_of(int32_t pid, int err, bool copied)
{
    switch (err) {
    case EFAULT:
        return OMPI_ERR_RMA_RANGE;
    case EPERM:
    case EACCES:
    case ENOSYS:
        if (copied) return OMPI_ERROR;
        refused(pid);
        return OMPI_ERR_NOT_AVAILABLE;
    case ESRCH:
        return OMPI_ERR_UNREACH;
    default:
        return OMPI_ERROR;
    }
}

/* Skip `done` bytes of the pieces *v (count *n). */
static void advance(struct iovec **v, size_t *n, size_t done)
{
    while (*n > 0 && done >= (*v)->iov_len) {
        done -= (*v)->iov_len;
        ++*v;
        --*n;
    }
    if (*n > 0 && done > 0) {
        (*v)->iov_base = (char *) (*v)->iov_base + done;
        (*v)->iov_len -= done;
    }
}

int ompi_osc_ucxx_cma_copyv(int32_t pid, bool write, struct iovec *local, struct iovec *remote,
                            size_t n)
{
    bool copied = false;

    while (n > 0) {
        size_t batch = n < IOV_MAX ? n : IOV_MAX, want = 0;
        ssize_t got;
        for (size_t i = 0; i < batch; ++i) want += local[i].iov_len;
        got = write ? process_vm_writev((pid_t) pid, local, batch, remote, batch, 0)
                    : process_vm_readv((pid_t) pid, local, batch, remote, batch, 0);
        if (got < 0) return status_of(pid, errno, copied);
        if (0 == got && want > 0) return OMPI_ERR_RMA_RANGE;  /* (a fault at the start) */
        copied = true;
        if ((size_t) got == want) {
            local += batch;
            remote += batch;
            n -= batch;
            continue;
        }
        /* a partial copy: the piece it stopped in faulted, or the kernel
         * copied less at once; the next call says which */
        {
            size_t nl = n, nr = n;
            advance(&local, &nl, (size_t) got);
            advance(&remote, &nr, (size_t) got);
            n = nl;
        }
    }
    return OMPI_SUCCESS;
}

int ompi_osc_ucxx_cma_copy(int32_t pid, bool write, void *local, uint64_t remote, size_t len)
{
    struct iovec l = {local, len}, r = {(void *) (uintptr_t) remote, len};
    ssize_t got = write ? process_vm_writev((pid_t) pid, &l, 1, &r, 1, 0)
                        : process_vm_readv((pid_t) pid, &l, 1, &r, 1, 0);

    if (OPAL_LIKELY((size_t) got == len)) return OMPI_SUCCESS;
    if (got < 0) return status_of(pid, errno, false);
    l.iov_base = (char *) local + got;     /* the rest, or its fault */
    r.iov_base = (char *) (uintptr_t) remote + got;
    l.iov_len = r.iov_len = len - (size_t) got;
    return 0 == got ? OMPI_ERR_RMA_RANGE : ompi_osc_ucxx_cma_copyv(pid, write, &l, &r, 1);
}

void ompi_osc_ucxx_cma_fini(void)
{
    if (verdicts_ready) {
        OBJ_DESTRUCT(&verdicts);
        verdicts_ready = false;
    }
}
