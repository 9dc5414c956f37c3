/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The executor. See migrate.h for the contract and KERNEL-FACTS.md (move_pages, pid
 * reuse) for the kernel behaviour every step here is shaped by. */
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <numaif.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "cleanup.h"
#include "clock.h"
#include "log.h"
#include "migrate-internal.h"
#include "service-cpus.h"
#include "migrate.h"
#include "proc.h"
#include "ratelimit.h"

#ifndef SYS_pidfd_open
#define SYS_pidfd_open 434
#endif

#define BASE_PAGE_SIZE UINT64_C(4096)
/* A PMD-mapped transparent huge page on x86-64 (and arm64 with 4K pages). */
#define PMD_SIZE (UINT64_C(2) << 20)

/* Addresses per move_pages() call when the caller passes 0 (the config's default too).
 * Every call pays lru_cache_disable() (an expedited RCU sync and an LRU drain on every
 * CPU), so calls must be large: in the 2-node TCG guest, 256 MiB took 2.2 s in one call
 * of 65536 pages, 3.4 s in 4 calls of 16384 and 17 s in 64 calls of 4096. */
#define MIGRATE_BATCH_DEFAULT UINT64_C(65536)
/* Upper bound so that a configuration typo cannot make a job allocate gigabytes of
 * address and status arrays (1M addresses: about 24 MiB of arrays). */
#define MIGRATE_BATCH_MAX (UINT64_C(1) << 20)
/* The kernel never writes this into a status slot (node ids are >= 0, errors are small
 * negatives): a slot still holding it after a call was not written by that call. */
#define STATUS_UNWRITTEN INT_MIN
/* A throttled worker sleeps in slices this long so that migrator_cancel() (SIGTERM)
 * is noticed quickly even under a very low budget. */
#define THROTTLE_SLEEP_SLICE_NS (50 * NSEC_PER_MSEC)
/* 1 MB of the budget, in bytes (the config's MB/s are MiB/s, like the page sizes). */
#define BYTES_PER_MB (UINT64_C(1) << 20)

static const char *const class_names[_MIG_CLASS_MAX] = {
        [MIG_MOVED] = "moved",
        [MIG_ALREADY] = "already",
        [MIG_BUSY] = "busy",
        [MIG_GONE] = "gone",
        [MIG_REFUSED] = "refused",
};

const char *migrate_class_name(enum migrate_class c) {
        if ((int) c < 0 || c >= _MIG_CLASS_MAX)
                return NULL;
        return class_names[c];
}

enum migrate_class migrate_classify(int status, int target_node, bool was_on_target) {
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

/* --- one job ----------------------------------------------------------------- */

struct job_run {
        struct migrate_job *job;
        int pidfd;
        uint64_t batch_max;
        int flags;
        volatile int *cancel;
        int (*throttle)(void *ctx, uint64_t bytes, uint64_t busy_since_ns);
        void *throttle_ctx;
        uint64_t busy_since;       /* CLOCK_MONOTONIC ns: when the work being charged began */
        bool defer_charge;         /* flush_batch adds to deferred instead of charging: */
        uint64_t deferred;         /* a huge-page round charges its pages at once */
        uint64_t passed;            /* base pages passed to move calls so far */
        bool stop;

        /* The pending batch: addresses not on the target, their node and weight. */
        void **addrs;
        int *nodes, *status, *from;
        uint32_t *weight;           /* base pages per address */
        size_t n;
        uint64_t n_base;

        /* Query scratch. */
        void **qaddrs;
        int *qstatus;
        size_t *qidx;
};

static void job_run_free(struct job_run *jr) {
        free(jr->addrs);
        free(jr->nodes);
        free(jr->status);
        free(jr->from);
        free(jr->weight);
        free(jr->qaddrs);
        free(jr->qstatus);
        free(jr->qidx);
}

static void job_stop(struct job_run *jr, int error) {
        jr->stop = true;
        if (error < 0 && jr->job->error == 0)
                jr->job->error = error;
}

static bool cancelled(const struct job_run *jr) {
        return jr->cancel && __atomic_load_n(jr->cancel, __ATOMIC_RELAXED);
}

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

/* The error of a failed move_pages(2) call, as -errno. A process without an mm fails
 * with EINVAL (the kernel takes it for a kernel thread): one that is exiting drops its
 * mm (exit_mm) before its pidfd turns readable. Flags and ranges are checked before
 * any call, so EINVAL means the process is going: gone, like ESRCH (seen in the VM
 * test that kills the target mid-job). */
static int move_pages_error(void) {
        return errno == EINVAL || errno == ENOENT ? -ESRCH : -errno;
}

/* Charges moved base pages to the MB/s budget (it may sleep); a refusal stops the job. */
static void charge(struct job_run *jr, uint64_t pages) {
        int r;

        if (!jr->throttle || pages == 0)
                return;
        r = jr->throttle(jr->throttle_ctx, pages * BASE_PAGE_SIZE, jr->busy_since);
        if (r < 0)
                job_stop(jr, r);
}

static void count_batch_as(struct job_run *jr, enum migrate_class c, uint64_t res[_MIG_CLASS_MAX]) {
        res[c] += jr->n_base;
}

/* Moves the pending batch: guard, call, resolve, classify, log, charge the budget. */
static void flush_batch(struct job_run *jr) {
        struct migrate_job *job = jr->job;
        uint64_t res[_MIG_CLASS_MAX] = {};
        char from[256];
        int call_error = 0;
        long rc;

        if (jr->n == 0)
                return;
        if (cancelled(jr)) {
                job_stop(jr, -ECANCELED);
                goto drop;
        }
        /* Right before the call: the process we verified is still alive, so the pid
         * still names it. The pages of this batch were not passed: not counted. */
        if (pidfd_exited(jr->pidfd)) {
                job_stop(jr, -ESRCH);
                goto drop;
        }

        for (size_t i = 0; i < jr->n; i++) {
                jr->status[i] = STATUS_UNWRITTEN;
                jr->nodes[i] = job->target_node;
        }
        jr->busy_since = now_ns(CLOCK_MONOTONIC);
        rc = sys_move_pages(job->pid, jr->n, jr->addrs, jr->nodes, jr->status, jr->flags);
        if (rc < 0)
                call_error = move_pages_error();
        jr->passed += jr->n_base;

        switch (call_error) {
        case -ESRCH:
                count_batch_as(jr, MIG_GONE, res);
                job_stop(jr, -ESRCH);
                goto log;
        case -EPERM:
        case -EACCES:
                /* No ptrace right, MOVE_ALL without CAP_SYS_NICE, or the target node is
                 * outside the process's cpuset: every batch would fail the same way. */
                count_batch_as(jr, MIG_REFUSED, res);
                job_stop(jr, call_error);
                goto log;
        case -ENODEV:
                /* The target node has no memory: refused, and so would the rest be. */
                count_batch_as(jr, MIG_REFUSED, res);
                job_stop(jr, call_error);
                goto log;
        default:
                break;
        }

        /* Success, a positive count of pages not migrated, or a failure part-way
         * (ENOMEM, EBUSY, EFAULT...): the written slots are exact, the others are
         * resolved by asking the kernel where those pages are now. */
        if (log_get_max_level() >= LOG_LVL_DEBUG) {
                size_t n_busy = 0, n_unwritten = 0, n_on = 0;
                for (size_t i = 0; i < jr->n; i++) {
                        n_busy += jr->status[i] == -EBUSY;
                        n_unwritten += jr->status[i] == STATUS_UNWRITTEN;
                        n_on += jr->status[i] == job->target_node;
                }
                log_debug("pid=%d: move_pages(%zu) returned %ld: %zu on target, %zu -EBUSY, %zu unwritten before re-query",
                          (int) job->pid, jr->n, rc, n_on, n_busy, n_unwritten);
        }
        requery_unresolved(jr);

        /* The process may have exited during the call and its pid been reused: then
         * these results (and the re-query) may describe someone else. Discard them. */
        if (pidfd_exited(jr->pidfd)) {
                count_batch_as(jr, MIG_GONE, res);
                job_stop(jr, -ESRCH);
                goto log;
        }
        for (size_t i = 0; i < jr->n; i++)
                res[migrate_classify(jr->status[i], job->target_node, false)] += jr->weight[i];

        if (call_error != 0 && call_error != -ENOMEM && call_error != -EBUSY &&
            call_error != -EAGAIN && call_error != -EINTR)
                job_stop(jr, call_error);

log:
        for (unsigned c = 0; c < _MIG_CLASS_MAX; c++)
                job->pages[c] += res[c];
        format_from(jr, from, sizeof(from));
#define BATCH_FMT "cgroup=%s pid=%d pages=%" PRIu64 " from=%s to=%d moved=%" PRIu64 " busy=%" PRIu64 \
                  " gone=%" PRIu64 " refused=%" PRIu64
#define BATCH_ARGS job->cgroup ? job->cgroup : "-", (int) job->pid, jr->n_base, from, job->target_node, \
                   res[MIG_MOVED], res[MIG_BUSY], res[MIG_GONE], res[MIG_REFUSED]
        {
                struct log_fields lf = {};
                log_fields_str(&lf, "NUMABALANCED_CGROUP", job->cgroup);
                log_fields_i64(&lf, "NUMABALANCED_PID", job->pid);
                log_fields_u64(&lf, "NUMABALANCED_PAGES", jr->n_base);
                log_fields_str(&lf, "NUMABALANCED_FROM", from);
                log_fields_i64(&lf, "NUMABALANCED_TO", job->target_node);
                log_fields_u64(&lf, "NUMABALANCED_MOVED", res[MIG_MOVED]);
                if (call_error)
                        (void) log_full_errno_fields(LOG_LVL_INFO, call_error, &lf, BATCH_FMT " error=%m", BATCH_ARGS);
                else
                        (void) log_full_errno_fields(LOG_LVL_INFO, 0, &lf, BATCH_FMT, BATCH_ARGS);
        }
#undef BATCH_FMT
#undef BATCH_ARGS
        /* The budget is charged after the call, with what really moved: the first
         * batch starts at once, and a debt makes the next one wait. */
        if (jr->defer_charge)
                jr->deferred += res[MIG_MOVED];
        else
                charge(jr, res[MIG_MOVED]);
drop:
        jr->n = 0;
        jr->n_base = 0;
}

/* Query-mode pass over n addresses starting at addr: pages already on the target are
 * counted, present pages elsewhere join the batch, absent ones are skipped (nothing to
 * move, and an untouched sparse heap is not news). */
static int query_chunk(struct job_run *jr, uint64_t addr, size_t n, uint64_t page_size) {
        struct migrate_job *job = jr->job;
        uint32_t weight = (uint32_t) (page_size / BASE_PAGE_SIZE);
        long r;

        for (size_t i = 0; i < n; i++) {
                jr->qaddrs[i] = (void *) (uintptr_t) (addr + i * page_size);
                jr->qstatus[i] = STATUS_UNWRITTEN;
        }
        r = sys_move_pages(job->pid, n, jr->qaddrs, NULL, jr->qstatus, 0);
        if (r < 0)
                return move_pages_error();
        for (size_t i = 0; i < n; i++) {
                int s = jr->qstatus[i];
                if (s == job->target_node)
                        job->pages[MIG_ALREADY] += weight;
                else if (s >= 0) {
                        jr->addrs[jr->n] = jr->qaddrs[i];
                        jr->from[jr->n] = s;
                        jr->weight[jr->n] = weight;
                        jr->n++;
                        jr->n_base += weight;
                }
        }
        return 0;
}

static int job_alloc(struct job_run *jr) {
        size_t n = (size_t) jr->batch_max;

        jr->addrs = calloc(n, sizeof(*jr->addrs));
        jr->nodes = calloc(n, sizeof(*jr->nodes));
        jr->status = calloc(n, sizeof(*jr->status));
        jr->from = calloc(n, sizeof(*jr->from));
        jr->weight = calloc(n, sizeof(*jr->weight));
        jr->qaddrs = calloc(n, sizeof(*jr->qaddrs));
        jr->qstatus = calloc(n, sizeof(*jr->qstatus));
        jr->qidx = calloc(n, sizeof(*jr->qidx));
        if (!jr->addrs || !jr->nodes || !jr->status || !jr->from || !jr->weight || !jr->qaddrs ||
            !jr->qstatus || !jr->qidx)
                return -ENOMEM;
        return 0;
}

static int check_ranges(const struct migrate_job *job) {
        if (job->target_node < 0 || job->target_node >= NB_NODES_MAX || job->pid <= 0)
                return -EINVAL;
        if (job->n_ranges > 0 && !job->ranges)
                return -EINVAL;
        for (size_t i = 0; i < job->n_ranges; i++) {
                const struct migrate_range *rg = &job->ranges[i];
                if (rg->page_size < BASE_PAGE_SIZE || rg->page_size % BASE_PAGE_SIZE ||
                    rg->page_size / BASE_PAGE_SIZE > UINT32_MAX || rg->start % rg->page_size ||
                    rg->end % rg->page_size || rg->end < rg->start)
                        return -EINVAL;
        }
        return 0;
}

/* Queries and moves [start, end) page by page (stride page_size), in batches. */
static void run_base(struct job_run *jr, uint64_t start, uint64_t end, uint64_t page_size) {
        struct migrate_job *job = jr->job;
        uint64_t weight = page_size / BASE_PAGE_SIZE;
        uint64_t addr = start;
        int r;

        while (addr < end && !jr->stop) {
                uint64_t left = (end - addr) / page_size;
                uint64_t space = jr->batch_max - jr->n;
                uint64_t n = left < space ? left : space;

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
                r = query_chunk(jr, addr, (size_t) n, page_size);
                if (r < 0) {
                        if (r == -ENOENT)
                                r = -ESRCH;
                        log_debug_errno(r, "pid=%d: move_pages query failed: %m", (int) job->pid);
                        return job_stop(jr, r);
                }
                addr += n * page_size;
                if (jr->n == jr->batch_max)
                        flush_batch(jr);
        }
}

/* Aligned 2 MiB chunks, huge page first. Passing every base address of a THP costs a
 * page-table lookup per address twice (query, then move) for what one address moves
 * whole; under TCG the 2 x 512 lookups took longer than the copy (tests/vm: 512 MiB of
 * THP in 4.8 s with base addresses). So, per chunk: query its first, second and last
 * base page; move the first one; query the second and last again. If both were
 * elsewhere (present, not on the target) and are now on the target, they moved with the
 * first page, and a folio holding the first and the last base page of an aligned 2 MiB
 * chunk is the whole chunk: 512 pages moved, counted exactly. Any other chunk (4 KiB
 * pages, partly local, partly absent) goes page by page, as before. */
static void run_huge_first(struct job_run *jr, uint64_t start, uint64_t end) {
        struct migrate_job *job = jr->job;
        const uint64_t per_chunk = PMD_SIZE / BASE_PAGE_SIZE;
        uint64_t chunk = start;

        while (chunk < end && !jr->stop) {
                /* Up to a third of a batch of chunks at a time: 3 query slots each. */
                uint64_t n = (end - chunk) / PMD_SIZE, max = jr->batch_max / 3;
                _cleanup_free_ int *before = NULL;
                _cleanup_free_ uint8_t *slow = NULL;
                size_t nq = 0;
                uint64_t thp = 0, round_start;
                long r;

                if (n > max)
                        n = max;
                if (job->max_pages) {
                        uint64_t used = jr->passed + jr->n_base;
                        uint64_t budget = job->max_pages > used ? (job->max_pages - used) / per_chunk : 0;
                        if (budget < n)
                                n = budget;
                        if (n == 0) {
                                /* Less than a huge page of budget left: page by page. */
                                run_base(jr, chunk, end, BASE_PAGE_SIZE);
                                return;
                        }
                }
                if (cancelled(jr))
                        return job_stop(jr, -ECANCELED);
                before = calloc(n * 3, sizeof(*before));
                slow = calloc(n, sizeof(*slow));
                if (!before || !slow)
                        return job_stop(jr, -ENOMEM);

                /* The pending batch must be empty: its slots are reused below. */
                flush_batch(jr);
                if (jr->stop)
                        return;
                round_start = now_ns(CLOCK_MONOTONIC);
                for (uint64_t c = 0; c < n; c++) {
                        uint64_t a = chunk + c * PMD_SIZE;
                        jr->qaddrs[nq] = (void *) (uintptr_t) a;
                        jr->qaddrs[nq + 1] = (void *) (uintptr_t) (a + BASE_PAGE_SIZE);
                        jr->qaddrs[nq + 2] = (void *) (uintptr_t) (a + PMD_SIZE - BASE_PAGE_SIZE);
                        nq += 3;
                }
                for (size_t i = 0; i < nq; i++)
                        jr->qstatus[i] = STATUS_UNWRITTEN;
                r = sys_move_pages(job->pid, nq, jr->qaddrs, NULL, jr->qstatus, 0);
                if (r < 0) {
                        int e = move_pages_error();
                        log_debug_errno(e, "pid=%d: move_pages query failed: %m", (int) job->pid);
                        return job_stop(jr, e);
                }
                memcpy(before, jr->qstatus, nq * sizeof(int));

                /* Move the first page of every chunk that has it elsewhere. Its cost
                 * is charged with the rest of the round below: charged alone, it
                 * would take the credit for the whole copy's time. */
                for (uint64_t c = 0; c < n; c++) {
                        int h = before[3 * c];
                        if (h >= 0 && h != job->target_node) {
                                jr->addrs[jr->n] = (void *) (uintptr_t) (chunk + c * PMD_SIZE);
                                jr->from[jr->n] = h;
                                jr->weight[jr->n] = 1;
                                jr->n++;
                                jr->n_base++;
                        }
                }
                jr->defer_charge = true;
                jr->deferred = 0;
                flush_batch(jr);
                jr->defer_charge = false;
                if (jr->stop) {
                        jr->busy_since = round_start;
                        charge(jr, jr->deferred);
                        return;
                }

                /* Which chunks moved whole? */
                nq = 0;
                for (uint64_t c = 0; c < n; c++) {
                        const int *b = &before[3 * c];
                        bool candidate = b[0] >= 0 && b[0] != job->target_node && b[1] >= 0 &&
                                         b[1] != job->target_node && b[2] >= 0 && b[2] != job->target_node;
                        slow[c] = !candidate;
                        if (candidate) {
                                jr->qaddrs[nq] = (void *) (uintptr_t) (chunk + c * PMD_SIZE + BASE_PAGE_SIZE);
                                jr->qaddrs[nq + 1] = (void *) (uintptr_t) (chunk + c * PMD_SIZE + PMD_SIZE - BASE_PAGE_SIZE);
                                jr->qidx[nq / 2] = c;
                                nq += 2;
                        }
                }
                if (nq) {
                        for (size_t i = 0; i < nq; i++)
                                jr->qstatus[i] = STATUS_UNWRITTEN;
                        r = sys_move_pages(job->pid, nq, jr->qaddrs, NULL, jr->qstatus, 0);
                        /* The pidfd check after the query: if the process went, its pid
                         * may name someone else's pages now; count nothing more. */
                        if (r < 0 || pidfd_exited(jr->pidfd)) {
                                int e = r < 0 ? move_pages_error() : -ESRCH;
                                jr->busy_since = round_start;
                                charge(jr, jr->deferred);
                                return job_stop(jr, e);
                        }
                        for (size_t k = 0; k < nq / 2; k++) {
                                if (jr->qstatus[2 * k] == job->target_node && jr->qstatus[2 * k + 1] == job->target_node)
                                        thp++;
                                else
                                        slow[jr->qidx[k]] = 1;
                        }
                }
                /* The first page of each whole chunk was counted by the move; the other
                 * 511 moved with it. */
                job->pages[MIG_MOVED] += thp * (per_chunk - 1);
                jr->passed += thp * (per_chunk - 1);
                /* The whole round's copying: from its first query to now. */
                jr->busy_since = round_start;
                charge(jr, jr->deferred + thp * (per_chunk - 1));
                if (thp)
                        log_debug("pid=%d: %" PRIu64 " huge page(s) moved whole to node %d", (int) job->pid, thp,
                                  job->target_node);

                /* A slow chunk's first page was passed (and counted) in the move above
                 * when it was elsewhere: the page-by-page pass starts after it, or it
                 * would be counted again as already there. */
                for (uint64_t c = 0; c < n && !jr->stop; c++) {
                        uint64_t a = chunk + c * PMD_SIZE;
                        int h = before[3 * c];
                        if (slow[c])
                                run_base(jr, h >= 0 && h != job->target_node ? a + BASE_PAGE_SIZE : a,
                                         a + PMD_SIZE, BASE_PAGE_SIZE);
                }
                chunk += n * PMD_SIZE;
        }
}

static void job_body(struct job_run *jr) {
        struct migrate_job *job = jr->job;
        _cleanup_close_ int own_pidfd = -1;
        uint64_t starttime;
        int r;

        r = check_ranges(job);
        if (r < 0)
                return job_stop(jr, r);

        if (job->pidfd >= 0)
                jr->pidfd = job->pidfd;
        else {
                own_pidfd = pidfd_open_pid(job->pid);
                if (own_pidfd < 0)
                        return job_stop(jr, own_pidfd == -ENOENT ? -ESRCH : own_pidfd);
                jr->pidfd = own_pidfd;
        }
        /* Read after the pidfd exists: if the starttime matches now, the pidfd names the
         * process that was sampled, and from here on the pidfd tells us if it goes. */
        r = read_starttime(job->pid, &starttime);
        if (r < 0 || starttime != job->starttime || pidfd_exited(jr->pidfd)) {
                log_debug("pid=%d: not the sampled process (starttime %" PRIu64 ", sampled %" PRIu64 "%s), skipping",
                          (int) job->pid, r < 0 ? 0 : starttime, job->starttime, r < 0 ? ", gone" : "");
                return job_stop(jr, -ESRCH);
        }

        r = job_alloc(jr);
        if (r < 0)
                return job_stop(jr, r);

        for (size_t ri = 0; ri < job->n_ranges && !jr->stop; ri++) {
                const struct migrate_range *rg = &job->ranges[ri];
                uint64_t cs = (rg->start + PMD_SIZE - 1) & ~(PMD_SIZE - 1), ce = rg->end & ~(PMD_SIZE - 1);

                /* Base pages that may be backed by transparent huge pages: the whole
                 * 2 MiB chunks go huge-page first, the ragged ends page by page. */
                if (rg->page_size == BASE_PAGE_SIZE && cs < ce && jr->batch_max >= 3) {
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

int migrate_job_execute(struct migrate_job *job, uint64_t batch_pages, volatile int *cancel,
                        int (*throttle)(void *ctx, uint64_t bytes, uint64_t busy_since_ns), void *throttle_ctx) {
        uint64_t wall0 = now_ns(CLOCK_MONOTONIC), cpu0 = now_ns(CLOCK_THREAD_CPUTIME_ID);
        struct job_run jr = {
                .job = job,
                .pidfd = -1,
                .batch_max = batch_pages == 0 ? MIGRATE_BATCH_DEFAULT
                           : batch_pages > MIGRATE_BATCH_MAX ? MIGRATE_BATCH_MAX : batch_pages,
                .flags = job->move_all ? MPOL_MF_MOVE_ALL : MPOL_MF_MOVE,
                .cancel = cancel,
                .throttle = throttle,
                .throttle_ctx = throttle_ctx,
        };

        memset(job->pages, 0, sizeof(job->pages));
        job->error = 0;
        job_body(&jr);
        job_run_free(&jr);
        job->cpu_ns = now_ns(CLOCK_THREAD_CPUTIME_ID) - cpu0;
        job->wall_ns = now_ns(CLOCK_MONOTONIC) - wall0;
        return job->error;
}

/* --- splitting a job among workers --------------------------------------------- */

int migrate_job_split(const struct migrate_job *job, unsigned parts, uint64_t min_part_bytes,
                      struct migrate_job **ret, size_t *ret_n) {
        _cleanup_free_ struct migrate_job *out = NULL;
        uint64_t total = 0, share, align = PMD_SIZE;
        size_t n = 0, ri = 0;
        uint64_t pos;

        for (size_t i = 0; i < job->n_ranges; i++) {
                total += job->ranges[i].end - job->ranges[i].start;
                if (job->ranges[i].page_size > align)
                        align = job->ranges[i].page_size;
        }
        if (parts == 0)
                parts = 1;
        if (min_part_bytes && total / min_part_bytes < parts)
                parts = (unsigned) (total / min_part_bytes) ? (unsigned) (total / min_part_bytes) : 1;
        share = (total + parts - 1) / parts;
        share = (share + align - 1) / align * align;

        out = calloc(parts, sizeof(*out));
        if (!out)
                return -ENOMEM;
        pos = job->n_ranges ? job->ranges[0].start : 0;
        while (n < parts) {
                struct migrate_job *j = &out[n];
                uint64_t left = share, bytes = 0;

                *j = *job;
                memset(j->pages, 0, sizeof(j->pages));
                j->error = 0;
                j->cpu_ns = j->wall_ns = 0;
                j->n_ranges = 0;
                j->ranges = calloc(job->n_ranges ? job->n_ranges : 1, sizeof(*j->ranges));
                if (!j->ranges)
                        goto oom;
                n++;
                /* The last part takes whatever is left. */
                while (ri < job->n_ranges && (left > 0 || n == parts)) {
                        const struct migrate_range *rg = &job->ranges[ri];
                        uint64_t end = rg->end;

                        if (n < parts && end - pos > left) {
                                /* Cut inside this range, on an aligned address past pos. */
                                uint64_t cut = (pos + left + align - 1) / align * align;
                                if (cut < end)
                                        end = cut;
                        }
                        j->ranges[j->n_ranges++] = (struct migrate_range) { pos, end, rg->page_size };
                        bytes += end - pos;
                        left = end - pos >= left ? 0 : left - (end - pos);
                        pos = end;
                        if (pos >= rg->end && ++ri < job->n_ranges)
                                pos = job->ranges[ri].start;
                }
                if (job->max_pages && total) {
                        j->max_pages = (uint64_t) ((unsigned __int128) job->max_pages * bytes / total);
                        if (j->max_pages == 0)
                                j->max_pages = 1;
                }
                if (ri >= job->n_ranges)
                        break;
        }
        *ret_n = n;
        *ret = TAKE_PTR(out);
        return (int) n;
oom:
        for (size_t i = 0; i < n; i++)
                free(out[i].ranges);
        return -ENOMEM;
}

/* --- the worker pool ---------------------------------------------------------- */

enum { JOB_PENDING, JOB_RUNNING, JOB_DONE };

struct worker {
        pthread_t thread;
        struct migrator *m;
        int cpu;
        pid_t running_pid;         /* 0: idle */
};

/* How often migrator_run() asks its should_stop callback. */
#define POLL_STOP_NS 100000000L

struct migrator {
        bool (*should_stop)(void *ctx);
        void *should_stop_ctx;
        pthread_mutex_t lock;
        pthread_cond_t work_cond;  /* workers: a job may be available, or shut down */
        pthread_cond_t done_cond;  /* migrator_run: a job finished */
        struct worker *workers;
        unsigned n_workers;
        bool shutdown;
        uint64_t batch_pages;

        /* The current run (migrator_run is not reentrant). */
        struct migrate_job *jobs;
        uint8_t *state;
        size_t n_jobs, n_done, first_pending;

        volatile int cancel;

        pthread_mutex_t tb_lock;   /* separate: throttling must not wait behind job picking */
        struct token_bucket tb;
};

/* Called with m->lock held. The first pending job. Jobs of one process may run side
 * by side: move_pages(2) takes the mmap lock for reading, one address at a time, so
 * the parts of a split job copy in parallel (migrate_job_split). */
static size_t pick_job(struct migrator *m) {
        while (m->first_pending < m->n_jobs && m->state[m->first_pending] != JOB_PENDING)
                m->first_pending++;
        return m->first_pending < m->n_jobs ? m->first_pending : SIZE_MAX;
}

static int migrator_throttle(void *ctx, uint64_t bytes, uint64_t busy_since) {
        struct migrator *m = ctx;
        uint64_t wait;

        pthread_mutex_lock(&m->tb_lock);
        wait = token_bucket_take_busy(&m->tb, bytes, busy_since, now_ns(CLOCK_MONOTONIC));
        pthread_mutex_unlock(&m->tb_lock);

        /* Sleep outside the lock, so the other workers can book their own wait. */
        while (wait > 0) {
                uint64_t slice = wait < THROTTLE_SLEEP_SLICE_NS ? wait : THROTTLE_SLEEP_SLICE_NS;
                struct timespec ts = { .tv_sec = (time_t) (slice / NSEC_PER_SEC),
                                       .tv_nsec = (long) (slice % NSEC_PER_SEC) };
                if (__atomic_load_n(&m->cancel, __ATOMIC_RELAXED))
                        return -ECANCELED;
                nanosleep(&ts, NULL);
                wait -= slice;
        }
        return 0;
}

static void *worker_main(void *arg) {
        struct worker *w = arg;
        struct migrator *m = w->m;

        pthread_mutex_lock(&m->lock);
        for (;;) {
                struct migrate_job *job;
                uint64_t batch;
                size_t i = SIZE_MAX;

                while (!m->shutdown && (i = pick_job(m)) == SIZE_MAX)
                        pthread_cond_wait(&m->work_cond, &m->lock);
                if (m->shutdown)
                        break;
                m->state[i] = JOB_RUNNING;
                job = &m->jobs[i];
                w->running_pid = job->pid;
                batch = m->batch_pages;
                pthread_mutex_unlock(&m->lock);

                (void) migrate_job_execute(job, batch, &m->cancel, migrator_throttle, m);

                pthread_mutex_lock(&m->lock);
                m->state[i] = JOB_DONE;
                w->running_pid = 0;
                m->n_done++;
                if (m->n_done == m->n_jobs)
                        pthread_cond_signal(&m->done_cond);
                /* A job held back because its pid was running may go now. */
                pthread_cond_broadcast(&m->work_cond);
        }
        pthread_mutex_unlock(&m->lock);
        return NULL;
}

static uint64_t rate_bytes(uint64_t rate_mb_s) {
        return rate_mb_s > UINT64_MAX / BYTES_PER_MB ? UINT64_MAX : rate_mb_s * BYTES_PER_MB;
}

int migrator_new(const nb_cpumask *service_cpus, uint64_t rate_limit_mb_s, uint64_t batch_pages,
                 struct migrator **ret) {
        struct migrator *m;
        sigset_t all, saved;
        unsigned n_cpus;

        if (!service_cpus || !ret)
                return -EINVAL;
        n_cpus = cpumask_weight(service_cpus);
        if (n_cpus == 0)
                return log_error_errno(-EINVAL, "No service CPUs for the migration workers");

        m = calloc(1, sizeof(*m));
        if (!m)
                return -ENOMEM;
        m->workers = calloc(n_cpus, sizeof(*m->workers));
        if (!m->workers) {
                free(m);
                return -ENOMEM;
        }
        pthread_mutex_init(&m->lock, NULL);
        pthread_mutex_init(&m->tb_lock, NULL);
        pthread_cond_init(&m->work_cond, NULL);
        pthread_cond_init(&m->done_cond, NULL);
        m->batch_pages = batch_pages;
        token_bucket_init(&m->tb, rate_bytes(rate_limit_mb_s), now_ns(CLOCK_MONOTONIC));

        /* Workers inherit this mask: signals are the main thread's business. */
        sigfillset(&all);
        pthread_sigmask(SIG_SETMASK, &all, &saved);

        CPUMASK_FOREACH(cpu, service_cpus) {
                struct worker *w = &m->workers[m->n_workers];
                nb_cpumask own = {};
                size_t setsize;
                cpu_set_t *set;
                pthread_attr_t attr;
                int r;

                cpumask_set(&own, (unsigned) cpu);
                set = cpu_set_new(&own, &setsize);
                if (!set) {
                        log_warning_errno(-ENOMEM, "Failed to start a migration worker for CPU %d, skipping: %m", cpu);
                        continue;
                }
                w->m = m;
                w->cpu = cpu;
                /* Pinned at creation (glibc applies the affinity before the thread runs
                 * any code): a worker never runs on a CPU that is not a service CPU.
                 * An offline or unknown CPU fails here with EINVAL. */
                pthread_attr_init(&attr);
                r = pthread_attr_setaffinity_np(&attr, setsize, set);
                if (r == 0)
                        r = pthread_create(&w->thread, &attr, worker_main, w);
                pthread_attr_destroy(&attr);
                CPU_FREE(set);
                if (r != 0) {
                        log_warning_errno(r, "Failed to start a migration worker pinned to CPU %d, skipping: %m", cpu);
                        continue;
                }
                m->n_workers++;
        }
        pthread_sigmask(SIG_SETMASK, &saved, NULL);

        if (m->n_workers == 0) {
                migrator_free(m);
                return log_error_errno(-EINVAL, "No migration worker could be pinned to any service CPU");
        }
        log_debug("Started %u migration worker(s)", m->n_workers);
        *ret = m;
        return 0;
}

void migrator_set_limits(struct migrator *m, uint64_t rate_limit_mb_s, uint64_t batch_pages) {
        pthread_mutex_lock(&m->lock);
        m->batch_pages = batch_pages;
        pthread_mutex_unlock(&m->lock);
        pthread_mutex_lock(&m->tb_lock);
        token_bucket_set_rate(&m->tb, rate_bytes(rate_limit_mb_s), now_ns(CLOCK_MONOTONIC));
        pthread_mutex_unlock(&m->tb_lock);
}

int migrator_run(struct migrator *m, struct migrate_job *jobs, size_t n_jobs) {
        _cleanup_free_ uint8_t *state = NULL;

        if (!m || (n_jobs > 0 && !jobs))
                return -EINVAL;
        if (n_jobs == 0)
                return 0;
        state = calloc(n_jobs, sizeof(*state));     /* all JOB_PENDING */
        if (!state)
                return -ENOMEM;

        pthread_mutex_lock(&m->lock);
        if (m->jobs) {
                pthread_mutex_unlock(&m->lock);
                return -EBUSY;
        }
        m->jobs = jobs;
        m->state = state;
        m->n_jobs = n_jobs;
        m->n_done = 0;
        m->first_pending = 0;
        pthread_cond_broadcast(&m->work_cond);
        while (m->n_done < m->n_jobs) {
                struct timespec ts;
                /* Wake up now and then to ask whether to stop: the caller's event loop
                 * cannot see a SIGTERM while it waits here. */
                clock_gettime(CLOCK_REALTIME, &ts);
                ts.tv_nsec += POLL_STOP_NS;
                if (ts.tv_nsec >= 1000000000L) {
                        ts.tv_sec++;
                        ts.tv_nsec -= 1000000000L;
                }
                pthread_cond_timedwait(&m->done_cond, &m->lock, &ts);
                if (m->should_stop) {
                        bool stop;
                        /* Unlocked: the callback may do real work (the daemon serves
                         * its control socket there), and the workers must not wait on
                         * the lock to report a finished job meanwhile. */
                        pthread_mutex_unlock(&m->lock);
                        stop = m->should_stop(m->should_stop_ctx);
                        pthread_mutex_lock(&m->lock);
                        if (stop)
                                __atomic_store_n(&m->cancel, 1, __ATOMIC_RELAXED);
                }
        }
        m->jobs = NULL;
        m->state = NULL;
        m->n_jobs = 0;
        pthread_mutex_unlock(&m->lock);
        return 0;
}

void migrator_set_should_stop(struct migrator *m, bool (*should_stop)(void *ctx), void *ctx) {
        pthread_mutex_lock(&m->lock);
        m->should_stop = should_stop;
        m->should_stop_ctx = ctx;
        pthread_mutex_unlock(&m->lock);
}

void migrator_cancel(struct migrator *m) {
        /* Only an atomic store: callable from a signal handler. Sticky: a migrator that
         * was told to stop does not start new batches any more. */
        if (m)
                __atomic_store_n(&m->cancel, 1, __ATOMIC_RELAXED);
}

void migrator_free(struct migrator *m) {
        if (!m)
                return;
        pthread_mutex_lock(&m->lock);
        m->shutdown = true;
        pthread_cond_broadcast(&m->work_cond);
        pthread_mutex_unlock(&m->lock);
        for (unsigned w = 0; w < m->n_workers; w++)
                pthread_join(m->workers[w].thread, NULL);
        pthread_cond_destroy(&m->work_cond);
        pthread_cond_destroy(&m->done_cond);
        pthread_mutex_destroy(&m->lock);
        pthread_mutex_destroy(&m->tb_lock);
        free(m->workers);
        free(m);
}

unsigned migrator_n_workers(const struct migrator *m) {
        return m ? m->n_workers : 0;
}

int migrator_repin(struct migrator *m, const nb_cpumask *online) {
        int away = 0;

        for (unsigned i = 0; i < m->n_workers; i++) {
                struct worker *w = &m->workers[i];
                nb_cpumask own = {};
                int r;

                /* Back on its own CPU when that is online; else anywhere among the
                 * online service CPUs. */
                cpumask_set(&own, (unsigned) w->cpu);
                if (!cpumask_test(online, (unsigned) w->cpu)) {
                        own = *online;
                        away++;
                }
                r = cpus_pin_thread(w->thread, &own);
                if (r < 0)
                        return r;
        }
        return away;
}
