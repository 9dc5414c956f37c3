/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The executor: moves page ranges of one process to one node with move_pages(2),
 * on worker threads pinned one per service CPU, under a global MB/s budget.
 *
 * Per job: the pid is re-checked through its pidfd (the process we sampled, same
 * start time) before the call, and the result is discarded if the pidfd has become
 * readable (the process exited, its pid may be reused) by the end. Pages are first
 * located in query mode (nodes == NULL) so only pages not on the target are passed,
 * one address per huge page (hugetlb: by its page size); pages that report -EBUSY
 * are re-queried afterwards, because a base page of a transparent huge page can report
 * -EBUSY when the whole THP moved with its first address (6.1: the second address of
 * each THP does; the rest report the target node; see migrate.c). */
#pragma once
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>
#include "nodemask.h"

/* Per-page outcome classes (DESIGN.md habit 7). */
enum migrate_class {
        MIG_MOVED,          /* now on the target node, moved by this job */
        MIG_ALREADY,        /* was on the target already (not counted as moved) */
        MIG_BUSY,           /* -EBUSY, -EAGAIN, -ENOMEM: try again later */
        MIG_GONE,           /* -ENOENT (not present), -EFAULT (no VMA, zero page), process exited */
        MIG_REFUSED,        /* -EACCES (shared, no MOVE_ALL), -EPERM, -EINVAL, -ENODEV */
        _MIG_CLASS_MAX,
};

struct migrate_range {
        uint64_t start, end;       /* [start, end), page-aligned */
        uint64_t page_size;        /* bytes: 4096, or the hugetlb page size */
};

struct migrate_job {
        /* in */
        pid_t pid;
        int pidfd;                 /* owned by the caller; -1: the job opens and checks one */
        uint64_t starttime;        /* /proc/PID/stat field 22 when sampled */
        int target_node;
        bool move_all;             /* MPOL_MF_MOVE_ALL (needs CAP_SYS_NICE): shared pages too */
        struct migrate_range *ranges;
        size_t n_ranges;
        uint64_t max_pages;        /* stop after passing this many pages (0: no limit) */
        const char *cgroup;        /* for the log line of each batch */
        void *userdata;            /* for the caller (manager): the process / cgroup */
        /* out */
        uint64_t pages[_MIG_CLASS_MAX];   /* in base pages (4 KiB) */
        int error;                 /* 0, or -errno that stopped the whole job (ESRCH, EPERM, EACCES...) */
        uint64_t cpu_ns;           /* CPU time the worker spent on this job (CLOCK_THREAD_CPUTIME_ID) */
        uint64_t wall_ns;
};

/* Splits job into at most parts jobs over consecutive shares of its ranges, equal in
 * bytes, cut at boundaries aligned to 2 MiB (or the page size, if larger) so that no
 * huge page is cut; a share smaller than min_part_bytes is not made. Each part keeps
 * the job's pid, pidfd, starttime, target, flags, cgroup and userdata, and its own
 * ranges (free each part's ranges); max_pages is divided in proportion to bytes (and
 * kept at least 1 when the job had a limit). Returns the number of parts (1: a copy of
 * job) in *ret, or -errno. */
int migrate_job_split(const struct migrate_job *job, unsigned parts, uint64_t min_part_bytes,
                      struct migrate_job **ret, size_t *ret_n);

struct migrator;

/* Starts one worker per CPU of service_cpus (pinned to it). rate_limit_mb_s == 0: unlimited. */
int migrator_new(const nb_cpumask *service_cpus, uint64_t rate_limit_mb_s, uint64_t batch_pages,
                 struct migrator **ret);
void migrator_set_limits(struct migrator *m, uint64_t rate_limit_mb_s, uint64_t batch_pages);
/* Runs all jobs on the workers and returns when every one is done (the results are in
 * the jobs). Jobs of one process may run at the same time on several workers
 * (migrate_job_split): move_pages(2) takes the process's mmap lock for reading only,
 * per address. */
int migrator_run(struct migrator *m, struct migrate_job *jobs, size_t n_jobs);
/* While migrator_run() waits, it calls should_stop(ctx) every 100 ms on the caller's
 * thread; true cancels like migrator_cancel(). */
void migrator_set_should_stop(struct migrator *m, bool (*should_stop)(void *ctx), void *ctx);
/* Asks running jobs to stop at the next batch boundary (SIGTERM); their counts stay exact. */
void migrator_cancel(struct migrator *m);
void migrator_free(struct migrator *m);
unsigned migrator_n_workers(const struct migrator *m);
/* Service CPUs went offline or came back (hotplug): each worker goes back to its own
 * CPU if that is in online, else to all of online (the kernel, when a CPU goes down,
 * lets the threads pinned to it run anywhere). online must not be empty. Returns the
 * number of workers whose own CPU is offline, or -errno. */
int migrator_repin(struct migrator *m, const nb_cpumask *online);
const char *migrate_class_name(enum migrate_class c);

/* One job on the calling thread (used by the workers, and by tests and benchmarks). */
/* throttle(ctx, bytes, busy_since_ns) is called after each move batch with the bytes that moved and when
 * the work that moved them began (CLOCK_MONOTONIC), and may sleep (the budget). */
int migrate_job_execute(struct migrate_job *job, uint64_t batch_pages, volatile int *cancel,
                        int (*throttle)(void *ctx, uint64_t bytes, uint64_t busy_since_ns), void *throttle_ctx);
