/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The executor: one job on the calling thread (executor.h). In order: the process
 * identity checks, the job's state, a move batch (guard, call, resolve, classify, log,
 * charge), the page-by-page pass, the huge-page-first pass, and the job itself.
 * docs/KERNEL.md (move_pages, pid reuse) has the kernel behaviour every step here is
 * shaped by. */
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <numaif.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "cleanup.h"
#include "clock.h"
#include "executor.h"
#include "log.h"
#include "move-budget.h"
#include "nodemask.h"
#include "pagesize.h"
#include "proc.h"

#ifndef SYS_pidfd_open
#define SYS_pidfd_open 434
#endif

/* The kernel never writes this into a status slot (node ids are >= 0, errors are small
 * negatives): a slot still holding it after a call was not written by that call. */
#define STATUS_UNWRITTEN INT_MIN

static const char *const class_names[_MIG_CLASS_MAX] = {
        [MIG_MOVED] = "moved",
        [MIG_ALREADY] = "already",
        [MIG_BUSY] = "busy",
        [MIG_GONE] = "gone",
        [MIG_REFUSED] = "refused",
};

const char *executor_class_name(enum migrate_class c) {
        if ((int) c < 0 || c >= _MIG_CLASS_MAX)
                return NULL;
        return class_names[c];
}

enum migrate_class executor_classify(int status, int target_node, bool was_on_target) {
        if (status == target_node)
                return was_on_target ? MIG_ALREADY : MIG_MOVED;
        if (status >= 0)
                /* On another node after the call: it did not move (raced with something
                 * else moving it); worth another try later. */
                return MIG_BUSY;
        switch (status) {
        case -EBUSY:
        case -EAGAIN:
        case -ENOMEM:
        case STATUS_UNWRITTEN:      /* the call stopped before this slot: state unknown, not moved */
                return MIG_BUSY;
        case -ENOENT:
        case -EFAULT:
                return MIG_GONE;
        default:                    /* -EACCES, -EPERM, -EINVAL, -ENODEV, anything new */
                return MIG_REFUSED;
        }
}

uint64_t executor_pmd_size(void) {
        uint64_t ps = page_size();

        return ps * (ps / sizeof(uint64_t));
}

/* --- process identity -------------------------------------------------------- */

static int read_starttime(pid_t pid, uint64_t *ret) {
        struct proc_stat st;
        int r = proc_read_stat("/proc", pid, &st);
        if (r < 0)
                return r == -ENOENT ? -ESRCH : r;
        *ret = st.starttime;
        return 0;
}

static int pidfd_open_pid(pid_t pid) {
        int fd = (int) syscall(SYS_pidfd_open, pid, 0);
        return fd < 0 ? -errno : fd;
}

/* A pidfd becomes readable when the process has exited (a zombie counts: its pid cannot
 * be reused before it is reaped, but its memory is gone). */
static bool pidfd_exited(int pidfd) {
        struct pollfd p = { .fd = pidfd, .events = POLLIN };
        int r;

        do
                r = poll(&p, 1, 0);
        while (r < 0 && errno == EINTR);
        /* A poll error on our own fd: treat as gone rather than risk touching a reused pid. */
        return r != 0;
}

static long sys_move_pages(pid_t pid, unsigned long n, void **pages, const int *nodes, int *status,
                           int flags) {
        return syscall(SYS_move_pages, pid, n, pages, nodes, status, flags);
}

/* The error of a failed move_pages(2) call, as -errno. A process without an mm fails
 * with EINVAL (the kernel takes it for a kernel thread): one that is exiting drops its
 * mm (exit_mm) before its pidfd turns readable. Flags and ranges are checked before
 * any call, so EINVAL means the process is going: gone, like ESRCH (seen in the VM
 * test that kills the target mid-job). */
static int move_pages_error(void) {
        return errno == EINVAL || errno == ENOENT ? -ESRCH : -errno;
}

/* A move call that takes longer than this in the kernel is worth a warning. */
#define SLOW_CALL_NS (5ULL * 1000000000ULL)

/* --- the state of one job ------------------------------------------------------ */

struct job_run {
        struct migrate_job *job;
        int pidfd;
        uint64_t batch_max;        /* base pages one move call may pass (weights, not addresses) */
        int flags;
        volatile int *cancel;
        migrate_throttle_t throttle;
        void *throttle_ctx;
        uint64_t busy_since;       /* CLOCK_MONOTONIC ns: when the work being charged began */
        bool defer_charge;         /* flush_batch adds to deferred instead of charging: */
        uint64_t deferred;         /* a huge-page round charges its pages at once */
        uint64_t passed;            /* base pages passed to move calls so far */
        uint64_t call_ns;           /* how long the last move call took in the kernel */
        uint64_t kbatch;            /* base pages per kernel batch in the last move call */
        bool stop;

        /* The pending batch: addresses not on the target, their node and weight. */
        void **addrs;
        int *status, *from;
        uint32_t *weight;           /* base pages per address */
        size_t n;
        uint64_t n_base;

        /* The move call as passed: the batch with its kernel-batch breaks (lay_out_call). */
        void **caddrs;
        int *cnodes, *cstatus;

        /* Query scratch. */
        void **qaddrs;
        int *qstatus;
        size_t *qidx;
};

static int job_alloc(struct job_run *jr) {
        /* Every address weighs a base page at least; a huge-page round needs three
         * query slots for its one chunk even when batch_max is below that. */
        size_t n = jr->batch_max > 3 ? (size_t) jr->batch_max : 3;

        jr->addrs = calloc(n, sizeof(*jr->addrs));
        jr->status = calloc(n, sizeof(*jr->status));
        jr->from = calloc(n, sizeof(*jr->from));
        jr->weight = calloc(n, sizeof(*jr->weight));
        jr->qaddrs = calloc(n, sizeof(*jr->qaddrs));
        jr->qstatus = calloc(n, sizeof(*jr->qstatus));
        jr->qidx = calloc(n, sizeof(*jr->qidx));
        /* A break at most between every two addresses. */
        jr->caddrs = calloc(2 * n, sizeof(*jr->caddrs));
        jr->cnodes = calloc(2 * n, sizeof(*jr->cnodes));
        jr->cstatus = calloc(2 * n, sizeof(*jr->cstatus));
        if (!jr->addrs || !jr->status || !jr->from || !jr->weight || !jr->qaddrs || !jr->qstatus ||
            !jr->qidx || !jr->caddrs || !jr->cnodes || !jr->cstatus)
                return -ENOMEM;
        return 0;
}

static void job_run_free(struct job_run *jr) {
        free(jr->addrs);
        free(jr->status);
        free(jr->from);
        free(jr->weight);
        free(jr->qaddrs);
        free(jr->qstatus);
        free(jr->qidx);
        free(jr->caddrs);
        free(jr->cnodes);
        free(jr->cstatus);
}

static void job_stop(struct job_run *jr, int error) {
        jr->stop = true;
        if (error < 0 && jr->job->error == 0)
                jr->job->error = error;
}

static bool cancelled(const struct job_run *jr) {
        return jr->cancel && __atomic_load_n(jr->cancel, __ATOMIC_RELAXED);
}

/* The caller's predicate: false (and the job stopped, with why) when the job may no
 * longer move. */
static bool may_still_move(struct job_run *jr) {
        struct migrate_job *job = jr->job;
        const struct migrate_stop *why = NULL;
        int r;

        if (!job->may_move)
                return true;
        r = job->may_move(job->may_move_ctx, job, &why);
        if (r >= 0)
                return true;
        job->stop = why;
        job_stop(jr, r);
        return false;
}

/* Whether the next batch may start: the caller's check (may_still_move) runs before a
 * batch's first query, as well as before its move call. A plan that stopped holding
 * between batches (an exec, the cgroup switched off) is then seen even when the rest of
 * it finds nothing to move: after an exec, the new program's region was not touched
 * yet, its addresses absent; the job queried on to its end, and stopped without saying
 * why. Also the job's first check: it may have waited behind others for minutes. */
static bool batch_may_start(struct job_run *jr) {
        return jr->n > 0 || may_still_move(jr);
}

/* Charges moved base pages to the MB/s budget (it may sleep); a refusal stops the job. */
static void charge(struct job_run *jr, uint64_t pages) {
        int r;

        if (!jr->throttle || pages == 0)
                return;
        r = jr->throttle(jr->throttle_ctx, pages * page_size(), jr->busy_since);
        if (r < 0)
                job_stop(jr, r);
}

/* How many more addresses of weight base pages the pending batch takes: its base
 * pages stay within batch_max, but an empty batch takes one whatever its weight (a
 * hugetlb page of 1 GiB is passed whole or not at all). */
static uint64_t batch_room(const struct job_run *jr, uint64_t weight) {
        uint64_t left = jr->batch_max > jr->n_base ? jr->batch_max - jr->n_base : 0;

        if (jr->n == 0 && left < weight)
                return 1;
        return left / weight;
}

/* Adds one address to the pending batch. */
static void batch_add(struct job_run *jr, void *addr, int from, uint32_t weight) {
        jr->addrs[jr->n] = addr;
        jr->from[jr->n] = from;
        jr->weight[jr->n] = weight;
        jr->n++;
        jr->n_base += weight;
}

/* --- a move batch ---------------------------------------------------------------- */

static void format_from(const struct job_run *jr, char *buf, size_t size) {
        /* Few distinct nodes per batch: a short list of (node, pages) is enough. */
        struct { int node; uint64_t pages; } seen[16];
        size_t n_seen = 0, off = 0;
        uint64_t other = 0;

        for (size_t i = 0; i < jr->n; i++) {
                size_t k;
                for (k = 0; k < n_seen; k++)
                        if (seen[k].node == jr->from[i])
                                break;
                if (k == n_seen) {
                        if (n_seen == ELEMENTSOF(seen)) {
                                other += jr->weight[i];
                                continue;
                        }
                        seen[n_seen++] = (typeof(seen[0])) { jr->from[i], 0 };
                }
                seen[k].pages += jr->weight[i];
        }
        buf[0] = 0;
        for (size_t k = 0; k < n_seen && off < size; k++)
                off += (size_t) snprintf(buf + off, size - off, "%s%d:%" PRIu64, k ? "," : "",
                                         seen[k].node, seen[k].pages);
        if (other && off < size)
                snprintf(buf + off, size - off, ",other:%" PRIu64, other);
}

/* Finds out what happened to the slots the move call left unresolved: -EBUSY and
 * unwritten ones (the call stopped early). Only what the kernel now reports on the
 * target counts as moved.
 *
 * THP, seen on 6.1 (tests/vm/test-migrate.py, 64 MiB = 32 THPs passed as 16384 base
 * addresses in one call): 32 slots -EBUSY, 16352 on the target, THPs kept whole.
 * do_pages_move() queues the THP with its first address; the second address finds the
 * head already isolated (isolate_lru_page fails: -EBUSY), and any per-page error
 * flushes the queue, so the THP migrates right there; the remaining 510 addresses then
 * find it on the target and report the node. So exactly one -EBUSY per THP, which the
 * re-query turns into "moved". */
static void requery_unresolved(struct job_run *jr) {
        size_t nq = 0;
        long r;

        for (size_t i = 0; i < jr->n; i++)
                if (jr->status[i] == -EBUSY || jr->status[i] == STATUS_UNWRITTEN) {
                        jr->qidx[nq] = i;
                        jr->qaddrs[nq] = jr->addrs[i];
                        jr->qstatus[nq] = STATUS_UNWRITTEN;
                        nq++;
                }
        if (nq == 0)
                return;
        r = sys_move_pages(jr->job->pid, nq, jr->qaddrs, NULL, jr->qstatus, 0);
        if (r < 0) {
                log_debug_errno(errno, "pid=%d: re-query after move failed, counting %zu pages as busy: %m",
                                (int) jr->job->pid, nq);
                return;
        }
        for (size_t q = 0; q < nq; q++) {
                size_t i = jr->qidx[q];
                int s = jr->qstatus[q];

                if (s == jr->job->target_node)
                        jr->status[i] = s;
                else if (jr->status[i] == STATUS_UNWRITTEN && s < 0 && s != STATUS_UNWRITTEN)
                        jr->status[i] = s;     /* e.g. unmapped meanwhile: -ENOENT, gone */
                /* else: still elsewhere, stays busy */
        }
}

/* A move call that failed as a whole for a reason every later batch would share: the
 * batch is counted in one class and the job stops. Returns false for any other result. */
static bool batch_failed_whole(struct job_run *jr, int call_error, uint64_t res[_MIG_CLASS_MAX]) {
        switch (call_error) {
        case -ESRCH:
                res[MIG_GONE] += jr->n_base;
                break;
        case -EPERM:
        case -EACCES:
                /* No ptrace right, or the target node is
                 * outside the process's cpuset. */
        case -ENODEV:
                /* The target node has no memory. */
                res[MIG_REFUSED] += jr->n_base;
                break;
        default:
                return false;
        }
        job_stop(jr, call_error);
        return true;
}

static void log_slots(const struct job_run *jr, long rc) {
        size_t n_busy = 0, n_unwritten = 0, n_on = 0;

        for (size_t i = 0; i < jr->n; i++) {
                n_busy += jr->status[i] == -EBUSY;
                n_unwritten += jr->status[i] == STATUS_UNWRITTEN;
                n_on += jr->status[i] == jr->job->target_node;
        }
        log_debug("pid=%d: move_pages(%zu) in kernel batches of %" PRIu64 " base pages returned %ld: "
                  "%zu on target, %zu -EBUSY, %zu unwritten before re-query",
                  (int) jr->job->pid, jr->n, jr->kbatch, rc, n_on, n_busy, n_unwritten);
}

/* Success, a positive count of pages not migrated, or a failure part-way (ENOMEM,
 * EBUSY, EFAULT...): the written slots are exact, the others are resolved by asking
 * the kernel where those pages are now; then each slot is counted in its class. */
static void resolve_batch(struct job_run *jr, long rc, int call_error, uint64_t res[_MIG_CLASS_MAX]) {
        if (log_get_max_level() >= LOG_LVL_DEBUG)
                log_slots(jr, rc);
        requery_unresolved(jr);

        /* The process may have exited during the call and its pid been reused: then
         * these results (and the re-query) may describe someone else. Discard them. */
        if (pidfd_exited(jr->pidfd)) {
                res[MIG_GONE] += jr->n_base;
                return job_stop(jr, -ESRCH);
        }
        for (size_t i = 0; i < jr->n; i++)
                res[executor_classify(jr->status[i], jr->job->target_node, false)] += jr->weight[i];

        if (call_error != 0 && call_error != -ENOMEM && call_error != -EBUSY &&
            call_error != -EAGAIN && call_error != -EINTR)
                job_stop(jr, call_error);
}

/* --- kernel batches ------------------------------------------------------------
 *
 * do_pages_move() queues the pages of a call and migrates the queue whenever an
 * address is not queued (already on the node, absent, refused): one slot it refuses
 * ends a kernel batch without a second call, whose lru_cache_disable() would cost
 * more than the whole copy of a small batch (MOVE_BUDGET_CALL_PAGES_DEFAULT). */

void *executor_batch_break(void) {
        /* The top page of the address space: above every user mapping (TASK_SIZE), and
         * still there once the kernel strips an address tag (x86 LAM keeps bit 63, arm64
         * sign-extends bit 55). find_vma() finds nothing: -EFAULT in its slot. */
        return (void *) (uintptr_t) (UINTPTR_MAX - 4095);
}

size_t executor_lay_out_call(void *const *addrs, const uint32_t *weight, size_t n, uint64_t per_batch,
                             void **out) {
        uint64_t run = 0;
        size_t m = 0;

        for (size_t i = 0; i < n; i++) {
                if (run > 0 && run + weight[i] > per_batch) {
                        out[m++] = executor_batch_break();
                        run = 0;
                }
                out[m++] = addrs[i];
                run += weight[i];
        }
        return m;
}

uint64_t executor_kernel_batch_pages(uint64_t ns_per_page, uint64_t page_size) {
        uint64_t cap = page_size && EXECUTOR_KERNEL_BATCH_BYTES / page_size ? EXECUTOR_KERNEL_BATCH_BYTES / page_size : 1;
        uint64_t n;

        if (ns_per_page == 0)
                return cap;
        n = EXECUTOR_KERNEL_BATCH_NS / ns_per_page;
        return n == 0 ? 1 : n > cap ? cap : n;
}

/* This worker's last move call of base pages, in ns per base page: the machine's pace
 * (a CPU many times slower than usual, as under an overloaded emulator, shows in every
 * job's calls alike). 0: no call yet. */
static _Thread_local uint64_t last_ns_per_page;

/* The call's slots back into the batch's, the breaks' left out. */
static void take_call_status(struct job_run *jr, size_t m) {
        void *brk = executor_batch_break();
        size_t i = 0;

        for (size_t k = 0; k < m && i < jr->n; k++)
                if (jr->caddrs[k] != brk)
                        jr->status[i++] = jr->cstatus[k];
}

/* The move call for the pending batch, its slots counted by class into res. Returns
 * the call's error (-errno) or 0. */
static int move_batch(struct job_run *jr, uint64_t res[_MIG_CLASS_MAX]) {
        struct migrate_job *job = jr->job;
        int call_error = 0;
        size_t m;
        long rc;

        jr->kbatch = executor_kernel_batch_pages(last_ns_per_page, page_size());
        m = executor_lay_out_call(jr->addrs, jr->weight, jr->n, jr->kbatch, jr->caddrs);
        for (size_t k = 0; k < m; k++) {
                jr->cstatus[k] = STATUS_UNWRITTEN;
                jr->cnodes[k] = job->target_node;
        }
        jr->busy_since = clock_now_ns(CLOCK_MONOTONIC);
        rc = sys_move_pages(job->pid, m, jr->caddrs, jr->cnodes, jr->cstatus, jr->flags);
        if (rc < 0)
                call_error = move_pages_error();
        jr->call_ns = clock_now_ns(CLOCK_MONOTONIC) - jr->busy_since;
        take_call_status(jr, m);
        /* Not from a huge-page round's heads: each of those moves a whole huge page for
         * the one base page it weighs. */
        if (!jr->defer_charge && rc >= 0)
                last_ns_per_page = jr->call_ns / jr->n_base;
        histogram_observe(&job->move_calls, &histogram_move_call_bounds, jr->call_ns);
        jr->passed += jr->n_base;

        if (!batch_failed_whole(jr, call_error, res))
                resolve_batch(jr, rc, call_error, res);
        return call_error;
}

/* The batch's line in the journal (and its structured fields). */
static void log_batch(const struct job_run *jr, const uint64_t res[_MIG_CLASS_MAX], int call_error) {
        const struct migrate_job *job = jr->job;
        struct log_fields lf = {};
        char from[256];

        format_from(jr, from, sizeof(from));
#define BATCH_FMT "cgroup=%s pid=%d pages=%" PRIu64 " from=%s to=%d moved=%" PRIu64 " busy=%" PRIu64 \
                  " gone=%" PRIu64 " refused=%" PRIu64 " call_ms=%" PRIu64
#define BATCH_ARGS job->cgroup ? job->cgroup : "-", (int) job->pid, jr->n_base, from, job->target_node, \
                   res[MIG_MOVED], res[MIG_BUSY], res[MIG_GONE], res[MIG_REFUSED], jr->call_ns / 1000000
        log_fields_str(&lf, "NUMABALANCED_CGROUP", job->cgroup);
        log_fields_i64(&lf, "NUMABALANCED_PID", job->pid);
        log_fields_u64(&lf, "NUMABALANCED_PAGES", jr->n_base);
        log_fields_str(&lf, "NUMABALANCED_FROM", from);
        log_fields_i64(&lf, "NUMABALANCED_TO", job->target_node);
        log_fields_u64(&lf, "NUMABALANCED_MOVED", res[MIG_MOVED]);
        log_fields_u64(&lf, "NUMABALANCED_CALL_MS", jr->call_ns / 1000000);
        /* At debug: up to ~100 a second on a busy host; the minute's summary is at
         * info (counters_log_summary()), a failed call at info too. */
        if (call_error)
                (void) log_full_errno_fields(LOG_LVL_INFO, call_error, &lf, BATCH_FMT " error=%m", BATCH_ARGS);
        else
                (void) log_full_errno_fields(LOG_LVL_DEBUG, 0, &lf, BATCH_FMT, BATCH_ARGS);
#undef BATCH_FMT
#undef BATCH_ARGS
        /* The process's threads that touch a page of the call wait for its kernel batch
         * (the kernel unmaps a batch before copying it): a call this long is the
         * kernel's doing (a slow CPU, allocation on a full target, retries), and the
         * operator should hear of it once per call rather than find it in a latency
         * graph. The next call's batches are cut to its pace (executor_kernel_batch_pages). */
        if (jr->call_ns >= SLOW_CALL_NS)
                log_warning("pid=%d: one move_pages call of %zu address(es) to node %d took %.1f s in the kernel; "
                            "threads touching those pages waited for it, for a kernel batch of %" PRIu64
                            " base page(s) at most",
                            (int) job->pid, jr->n, job->target_node, (double) jr->call_ns / 1e9, jr->kbatch);
}

/* A group's shared pages: only those that no process outside the group maps, and
 * whose every mapper allows the target, stay in the batch (share-check.h). Returns how
 * many did; *ret_held: the base pages held back, which the move budget is charged for
 * as if they moved (spend()): the check reads every member's page-table entry for
 * each, and pages an outsider keeps mapped would otherwise be checked again and again
 * at no cost to the tenant. */
static size_t share_filter(struct job_run *jr, uint64_t *ret_held) {
        struct migrate_job *job = jr->job;
        _cleanup_free_ bool *ok = calloc(jr->n, sizeof(*ok));
        uint64_t before = jr->n_base;
        size_t k = 0;

        *ret_held = before;
        if (!ok) {
                job->share_fails[SHARE_FAIL_FRAMES] += jr->n_base;
                jr->n = jr->n_base = 0;
                return 0;
        }
        (void) share_check_pages("/proc", &job->share, job->pid, job->target_node, jr->addrs, jr->n, ok,
                                 job->share_fails);
        jr->n_base = 0;
        for (size_t i = 0; i < jr->n; i++) {
                if (!ok[i])
                        continue;
                jr->addrs[k] = jr->addrs[i];
                jr->from[k] = jr->from[i];
                jr->weight[k] = jr->weight[i];
                jr->n_base += jr->weight[i];
                k++;
        }
        jr->n = k;
        *ret_held = before - jr->n_base;
        return k;
}

/* Charges the move budget for pages moved (or checked and held back): after the call,
 * the first batch starts at once and a debt makes the next one wait; a huge round
 * charges once for all its calls (charge_round()). */
static void spend(struct job_run *jr, uint64_t pages) {
        if (jr->defer_charge)
                jr->deferred += pages;
        else
                charge(jr, pages);
}

/* Moves the pending batch: guard, call, resolve, classify, log, charge the budget. */
static void flush_batch(struct job_run *jr) {
        uint64_t res[_MIG_CLASS_MAX] = {}, held = 0;
        int call_error;

        if (jr->n == 0)
                return;
        /* The calls-per-second bound may wait: before the checks that must be fresh. */
        if (jr->job->call_gate && (call_error = jr->job->call_gate(jr->job->call_gate_ctx)) < 0)
                job_stop(jr, call_error);
        else if (cancelled(jr))
                job_stop(jr, -ECANCELED);
        else if (pidfd_exited(jr->pidfd))
                /* Right before the call: the process we verified is still alive, so the
                 * pid still names it. The pages of this batch were not passed: not
                 * counted. */
                job_stop(jr, -ESRCH);
        else if (!may_still_move(jr))
                ;       /* the job stopped: the batch is not passed, not counted */
        else if (jr->job->shared && share_filter(jr, &held) == 0)
                spend(jr, held);        /* no page of it may move: counted in share_fails */
        else if (pidfd_exited(jr->pidfd))
                /* Again after the checks by pid (they read /proc/PID): the pid they read
                 * must still name the process the pidfd holds when the call goes. */
                job_stop(jr, -ESRCH);
        else {
                call_error = move_batch(jr, res);
                for (unsigned c = 0; c < _MIG_CLASS_MAX; c++)
                        jr->job->pages[c] += res[c];
                log_batch(jr, res, call_error);
                /* With what really moved, and what a share check held back. */
                spend(jr, res[MIG_MOVED] + held);
        }
        jr->n = 0;
        jr->n_base = 0;
}

/* A page this job moves: present, not on the target, and not on a node whose pages
 * stay (keep_nodes: the process's threads run there too). */
static bool elsewhere(const struct migrate_job *job, int status) {
        return status >= 0 && status != job->target_node && !nodemask_test(&job->keep_nodes, (unsigned) status);
}

/* --- page by page ------------------------------------------------------------------ */

/* Query-mode pass over n addresses starting at addr: pages already on the target are
 * counted, present pages elsewhere join the batch, absent ones are skipped (nothing to
 * move, and an untouched sparse heap is not news). */
static int query_chunk(struct job_run *jr, uint64_t addr, size_t n, uint64_t stride) {
        struct migrate_job *job = jr->job;
        uint32_t weight = (uint32_t) (stride / page_size());
        long r;

        for (size_t i = 0; i < n; i++) {
                jr->qaddrs[i] = (void *) (uintptr_t) (addr + i * stride);
                jr->qstatus[i] = STATUS_UNWRITTEN;
        }
        r = sys_move_pages(job->pid, n, jr->qaddrs, NULL, jr->qstatus, 0);
        if (r < 0)
                return move_pages_error();
        for (size_t i = 0; i < n; i++) {
                int s = jr->qstatus[i];
                if (s == job->target_node)
                        job->pages[MIG_ALREADY] += weight;
                else if (elsewhere(job, s))
                        batch_add(jr, jr->qaddrs[i], s, weight);
        }
        return 0;
}

/* Queries and moves [start, end) page by page (one address per stride bytes: the page
 * size), in batches. */
static void run_base(struct job_run *jr, uint64_t start, uint64_t end, uint64_t stride) {
        struct migrate_job *job = jr->job;
        uint64_t weight = stride / page_size();
        uint64_t addr = start;
        int r;

        while (addr < end && !jr->stop) {
                uint64_t left = (end - addr) / stride;
                uint64_t space = batch_room(jr, weight);
                uint64_t n = left < space ? left : space;

                if (n == 0) {
                        /* Full for this weight (a range of larger pages after smaller ones). */
                        flush_batch(jr);
                        continue;
                }

                if (job->max_pages) {
                        uint64_t used = jr->passed + jr->n_base;
                        uint64_t budget = job->max_pages > used ? job->max_pages - used : 0;
                        /* Candidates found by this query may all join the batch:
                         * never query more than the page budget can take. */
                        if (budget / weight < n)
                                n = budget / weight;
                        if (n == 0) {
                                jr->stop = true;
                                break;
                        }
                }
                if (cancelled(jr))
                        return job_stop(jr, -ECANCELED);
                if (!batch_may_start(jr))
                        return;
                r = query_chunk(jr, addr, (size_t) n, stride);
                if (r < 0) {
                        if (r == -ENOENT)
                                r = -ESRCH;
                        log_debug_errno(r, "pid=%d: move_pages query failed: %m", (int) job->pid);
                        return job_stop(jr, r);
                }
                addr += n * stride;
                if (batch_room(jr, weight) == 0)
                        flush_batch(jr);
        }
}

/* --- huge page first ----------------------------------------------------------------
 *
 * Aligned chunks of a PMD-mapped huge page (executor_pmd_size(): 2 MiB with 4 KiB base
 * pages), huge page first. Passing every base address of a THP costs a
 * page-table lookup per address twice (query, then move) for what one address moves
 * whole; under TCG the 2 x 512 lookups took longer than the copy (tests/vm: 512 MiB of
 * THP in 4.8 s with base addresses). So, per chunk: query its first, second and last
 * base page; move the first one; query the second and last again. If both were
 * elsewhere (present, not on the target) and are now on the target, they moved with the
 * first page, and a folio holding the first and the last base page of an aligned 2 MiB
 * chunk is the whole chunk: 512 pages moved, counted exactly. Any other chunk (4 KiB
 * pages, partly local, partly absent) goes page by page, as before. Chunks go in
 * rounds of as many huge pages as batch_max base pages make (one at least): the heads'
 * move call moves whole huge pages, and batch_max bounds the bytes of a call here as
 * it does page by page (a round of a third of a batch in chunks was 21,845 huge pages,
 * 42 GiB in one call, with the default batch of 65,536). */

struct huge_round {
        uint64_t chunk;            /* the first chunk's address */
        uint64_t n;                /* chunks in this round */
        int *before;               /* per chunk: the node of its first, second and last base page */
        uint8_t *slow;             /* per chunk: 1 when it goes page by page */
        uint64_t start_ns;         /* the round's first query: its copying is charged from then */
};


/* The chunks of the next round from chunk: the huge pages batch_max base pages make
 * (one at least), and no more than the job's page budget takes whole (0: less than a
 * huge page of budget left). */
static uint64_t huge_round_chunks(const struct job_run *jr, uint64_t chunk, uint64_t end) {
        const struct migrate_job *job = jr->job;
        uint64_t per_chunk = executor_pmd_size() / page_size();
        uint64_t n = (end - chunk) / executor_pmd_size(), max = jr->batch_max / per_chunk;

        if (max == 0)
                max = 1;
        if (n > max)
                n = max;
        if (job->max_pages) {
                uint64_t used = jr->passed + jr->n_base;
                uint64_t budget = job->max_pages > used ? (job->max_pages - used) / per_chunk : 0;
                if (budget < n)
                        n = budget;
        }
        return n;
}

/* Where the first, second and last base page of each chunk are (into hr->before). */
static int query_round(struct job_run *jr, struct huge_round *hr) {
        uint64_t pmd = executor_pmd_size(), ps = page_size();
        size_t nq = 0;

        for (uint64_t c = 0; c < hr->n; c++) {
                uint64_t a = hr->chunk + c * pmd;
                jr->qaddrs[nq] = (void *) (uintptr_t) a;
                jr->qaddrs[nq + 1] = (void *) (uintptr_t) (a + ps);
                jr->qaddrs[nq + 2] = (void *) (uintptr_t) (a + pmd - ps);
                nq += 3;
        }
        for (size_t i = 0; i < nq; i++)
                jr->qstatus[i] = STATUS_UNWRITTEN;
        if (sys_move_pages(jr->job->pid, nq, jr->qaddrs, NULL, jr->qstatus, 0) < 0)
                return move_pages_error();
        memcpy(hr->before, jr->qstatus, nq * sizeof(int));
        return 0;
}

/* Moves the first page of every chunk that has it elsewhere. Its cost is charged with
 * the rest of the round (charge_round): charged alone, it would take the credit for
 * the whole copy's time. */
static void move_heads(struct job_run *jr, const struct huge_round *hr) {
        for (uint64_t c = 0; c < hr->n; c++) {
                int h = hr->before[3 * c];
                if (elsewhere(jr->job, h))
                        batch_add(jr, (void *) (uintptr_t) (hr->chunk + c * executor_pmd_size()), h, 1);
        }
        jr->defer_charge = true;
        jr->deferred = 0;
        flush_batch(jr);
        jr->defer_charge = false;
}

/* The chunks that moved whole with their first page: their second and last base page
 * were elsewhere before and are on the target now. Every other chunk is marked slow.
 * The count in *ret_thp, or -errno. */
static int count_whole(struct job_run *jr, struct huge_round *hr, uint64_t *ret_thp) {
        uint64_t pmd = executor_pmd_size(), ps = page_size();
        int target = jr->job->target_node;
        size_t nq = 0;
        long r;

        *ret_thp = 0;
        for (uint64_t c = 0; c < hr->n; c++) {
                const int *b = &hr->before[3 * c];
                bool candidate = elsewhere(jr->job, b[0]) && elsewhere(jr->job, b[1]) && elsewhere(jr->job, b[2]);

                hr->slow[c] = !candidate;
                if (candidate) {
                        jr->qaddrs[nq] = (void *) (uintptr_t) (hr->chunk + c * pmd + ps);
                        jr->qaddrs[nq + 1] = (void *) (uintptr_t) (hr->chunk + c * pmd + pmd - ps);
                        jr->qidx[nq / 2] = c;
                        nq += 2;
                }
        }
        if (nq == 0)
                return 0;
        for (size_t i = 0; i < nq; i++)
                jr->qstatus[i] = STATUS_UNWRITTEN;
        r = sys_move_pages(jr->job->pid, nq, jr->qaddrs, NULL, jr->qstatus, 0);
        /* The pidfd check after the query: if the process went, its pid may name
         * someone else's pages now; count nothing more. */
        if (r < 0)
                return move_pages_error();
        if (pidfd_exited(jr->pidfd))
                return -ESRCH;
        for (size_t k = 0; k < nq / 2; k++) {
                if (jr->qstatus[2 * k] == target && jr->qstatus[2 * k + 1] == target)
                        (*ret_thp)++;
                else
                        hr->slow[jr->qidx[k]] = 1;
        }
        return 0;
}

/* Charges the round's copying, from its first query to now: the deferred heads and
 * the pages that moved with them. */
static void charge_round(struct job_run *jr, const struct huge_round *hr, uint64_t pages) {
        jr->busy_since = hr->start_ns;
        charge(jr, jr->deferred + pages);
}

/* The slow chunks page by page. A slow chunk's first page was passed (and counted) by
 * move_heads when it was elsewhere: the pass starts after it, or it would be counted
 * again as already there. */
static void run_slow_chunks(struct job_run *jr, const struct huge_round *hr) {
        uint64_t pmd = executor_pmd_size(), ps = page_size();

        for (uint64_t c = 0; c < hr->n && !jr->stop; c++) {
                uint64_t a = hr->chunk + c * pmd;
                if (hr->slow[c])
                        run_base(jr, elsewhere(jr->job, hr->before[3 * c]) ? a + ps : a,
                                 a + pmd, ps);
        }
}

static void run_huge_round(struct job_run *jr, uint64_t chunk, uint64_t n) {
        struct migrate_job *job = jr->job;
        /* The base pages of a huge page besides its first (counted by the move). */
        uint64_t rest = executor_pmd_size() / page_size() - 1, thp;
        _cleanup_free_ int *before = calloc(n * 3, sizeof(*before));
        _cleanup_free_ uint8_t *slow = calloc(n, sizeof(*slow));
        struct huge_round hr = { .chunk = chunk, .n = n, .before = before, .slow = slow };
        int r;

        if (!before || !slow)
                return job_stop(jr, -ENOMEM);
        /* The pending batch must be empty: its slots are reused below. */
        flush_batch(jr);
        if (jr->stop || !batch_may_start(jr))
                return;
        hr.start_ns = clock_now_ns(CLOCK_MONOTONIC);
        r = query_round(jr, &hr);
        if (r < 0) {
                log_debug_errno(r, "pid=%d: move_pages query failed: %m", (int) job->pid);
                return job_stop(jr, r);
        }
        move_heads(jr, &hr);
        if (jr->stop)
                return charge_round(jr, &hr, 0);
        r = count_whole(jr, &hr, &thp);
        if (r < 0) {
                charge_round(jr, &hr, 0);
                return job_stop(jr, r);
        }
        job->pages[MIG_MOVED] += thp * rest;
        jr->passed += thp * rest;
        charge_round(jr, &hr, thp * rest);
        if (thp)
                log_debug("pid=%d: %" PRIu64 " huge page(s) moved whole to node %d", (int) job->pid, thp,
                          job->target_node);
        run_slow_chunks(jr, &hr);
}

static void run_huge_first(struct job_run *jr, uint64_t start, uint64_t end) {
        uint64_t chunk = start;

        while (chunk < end && !jr->stop) {
                uint64_t n = huge_round_chunks(jr, chunk, end);

                if (n == 0) {
                        /* Less than a huge page of budget left: page by page. */
                        run_base(jr, chunk, end, page_size());
                        return;
                }
                if (cancelled(jr))
                        return job_stop(jr, -ECANCELED);
                run_huge_round(jr, chunk, n);
                chunk += n * executor_pmd_size();
        }
}

/* --- the job ------------------------------------------------------------------------ */

static int check_ranges(const struct migrate_job *job) {
        uint64_t ps = page_size();

        if (job->target_node < 0 || job->target_node >= NB_NODES_MAX || job->pid <= 0)
                return -EINVAL;
        if (job->n_ranges > 0 && !job->ranges)
                return -EINVAL;
        for (size_t i = 0; i < job->n_ranges; i++) {
                const struct migrate_range *rg = &job->ranges[i];
                if (rg->page_size < ps || rg->page_size % ps || rg->page_size / ps > UINT32_MAX ||
                    rg->start % rg->page_size || rg->end % rg->page_size || rg->end < rg->start)
                        return -EINVAL;
        }
        return 0;
}

/* Makes jr->pidfd name the process that was sampled: the caller's pidfd, or one opened
 * here (into *own_pidfd, which the caller closes). */
static int attach_process(struct job_run *jr, int *own_pidfd) {
        struct migrate_job *job = jr->job;
        uint64_t starttime;
        int r;

        if (job->pidfd >= 0)
                jr->pidfd = job->pidfd;
        else {
                *own_pidfd = pidfd_open_pid(job->pid);
                if (*own_pidfd < 0)
                        return *own_pidfd == -ENOENT ? -ESRCH : *own_pidfd;
                jr->pidfd = *own_pidfd;
        }
        /* Read after the pidfd exists: if the starttime matches now, the pidfd names the
         * process that was sampled, and from here on the pidfd tells us if it goes. */
        r = read_starttime(job->pid, &starttime);
        if (r < 0 || starttime != job->starttime || pidfd_exited(jr->pidfd)) {
                log_debug("pid=%d: not the sampled process (starttime %" PRIu64 ", sampled %" PRIu64 "%s), skipping",
                          (int) job->pid, r < 0 ? 0 : starttime, job->starttime, r < 0 ? ", gone" : "");
                return -ESRCH;
        }
        return 0;
}

static void job_body(struct job_run *jr) {
        struct migrate_job *job = jr->job;
        _cleanup_close_ int own_pidfd = -1;
        uint64_t ps = page_size(), pmd = executor_pmd_size();
        int r;

        r = check_ranges(job);
        if (r >= 0)
                r = attach_process(jr, &own_pidfd);
        if (r >= 0)
                r = job_alloc(jr);
        if (r < 0)
                return job_stop(jr, r);

        for (size_t ri = 0; ri < job->n_ranges && !jr->stop; ri++) {
                const struct migrate_range *rg = &job->ranges[ri];
                uint64_t cs = (rg->start + pmd - 1) & ~(pmd - 1), ce = rg->end & ~(pmd - 1);

                /* Base pages that may be backed by transparent huge pages: the whole
                 * huge-page chunks go huge page first, the ragged ends page by page. */
                /* A group's shared object goes page by page: the check is per page, and
                 * a huge page never passes it. */
                if (rg->page_size == ps && cs < ce && jr->batch_max >= 3 && !job->shared) {
                        run_base(jr, rg->start, cs, rg->page_size);
                        run_huge_first(jr, cs, ce);
                        run_base(jr, ce, rg->end, rg->page_size);
                } else
                        run_base(jr, rg->start, rg->end, rg->page_size);
        }
        /* A max_pages stop still moves what was collected; an error stop does not. */
        if (job->error == 0)
                flush_batch(jr);
}

int executor_run_job(struct migrate_job *job, uint64_t batch_pages, volatile int *cancel,
                        migrate_throttle_t throttle, void *throttle_ctx) {
        uint64_t wall0 = clock_now_ns(CLOCK_MONOTONIC), cpu0 = clock_now_ns(CLOCK_THREAD_CPUTIME_ID);
        struct job_run jr = {
                .job = job,
                .pidfd = -1,
                .batch_max = move_budget_batch_pages(batch_pages),
                /* MOVE_ALL for a group's shared pages only, after share_filter(): with
                 * MOVE, a page another process maps is refused (-EACCES). */
                .flags = job->shared ? MPOL_MF_MOVE_ALL : MPOL_MF_MOVE,
                .cancel = cancel,
                .throttle = throttle,
                .throttle_ctx = throttle_ctx,
        };

        memset(job->pages, 0, sizeof(job->pages));
        memset(job->share_fails, 0, sizeof(job->share_fails));
        job->move_calls = (struct histogram) {};
        job->error = 0;
        job->stop = NULL;
        job_body(&jr);
        job_run_free(&jr);
        job->cpu_ns = clock_now_ns(CLOCK_THREAD_CPUTIME_ID) - cpu0;
        job->wall_ns = clock_now_ns(CLOCK_MONOTONIC) - wall0;
        return job->error;
}
