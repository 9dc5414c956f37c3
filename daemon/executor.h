/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The executor: moves the page ranges of one process to one node with move_pages(2),
 * on the calling thread (the worker pool, migrator.h, runs it on pinned threads).
 *
 * Per job: the pid is re-checked through its pidfd (the process we sampled, same
 * start time) before the call, and the result is discarded if the pidfd has become
 * readable (the process exited, its pid may be reused) by the end. The caller's
 * may_move predicate (the daemon's is move-check.h) is asked before each batch's
 * queries and before each move call: a plan read seconds or minutes ago must still
 * hold, and a job whose plan stopped holding stops at its next batch whether or not
 * the rest of it finds anything to move. Pages are first located in query mode
 * (nodes == NULL) so only pages not on the target are passed, one address per huge
 * page (hugetlb: by its page size). Aligned 2 MiB chunks of base
 * pages go huge page first: one address moves a transparent huge page whole. Pages
 * that report -EBUSY are re-queried afterwards, because a base page of a transparent
 * huge page can report -EBUSY when the whole THP moved with its first address (6.1:
 * the second address of each THP does; the rest report the target node). See
 * docs/KERNEL.md (move_pages, pid reuse) for what the kernel does that shapes every step. */
#pragma once
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>
#include "histogram.h"
#include "nodemask.h"
#include "share-check.h"

/* Per-page outcome classes ("Moving: per-page outcome classes" in the repository's
 * docs/RULES.md). */
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
        uint64_t page_size;        /* bytes: the base page size, or the hugetlb page size */
};

/* Called before each move_pages(2) call that moves pages (with target nodes: every
 * one runs lru_cache_disable(), which interrupts every CPU); may sleep; -errno
 * (-ECANCELED) stops the job before the call. */
typedef int (*migrate_call_gate_t)(void *ctx);

/* Why a job stopped because it may no longer move (migrate_may_move_t): a short name
 * for logs, metrics and the control socket, and a sentence for a human. Static. */
struct migrate_stop {
        const char *name;
        const char *text;
};

struct migrate_job;

/* May the job still move? Asked once before the job starts and again before each move
 * call, on the worker's thread: it may read /proc, never the manager's state. Returns
 * 0, or -errno (the job's error) with *ret_stop saying why. ctx is the job's own: the
 * parts of a split job run side by side, each with its own. */
typedef int (*migrate_may_move_t)(void *ctx, const struct migrate_job *job, const struct migrate_stop **ret_stop);

struct migrate_job {
        /* in */
        pid_t pid;
        int pidfd;                 /* owned by the caller; -1: the job opens and checks one */
        uint64_t starttime;        /* /proc/PID/stat field 22 when sampled */
        int target_node;
        nb_nodemask keep_nodes;    /* pages on these nodes stay (plan: keep_node_share_pct) */
        bool thread_policy;        /* some range has no VMA policy: its threads' policies govern it */
        bool promote;              /* promotions off slow nodes only (plan.h, rule 7): what moves is
                                    * charged to the promotion budget */
        bool demote;               /* the exchange (plan.h, rule 8): cold pages off demote_from
                                    * (a node id) to a slow one, the room credited to
                                    * promotions there */
        int demote_from;
        bool exchanged;            /* promotions into the room the exchange made (plan_move):
                                    * held to that room being free, not to free_floor_pct */
        bool shared;               /* a group's shared object (share-groups.h): page by page, each
                                    * batch checked (share-check.h) and moved with MPOL_MF_MOVE_ALL */
        struct share_check share;  /* with shared: the mappings the check reads */
        struct migrate_range *ranges;
        size_t n_ranges;
        uint64_t max_pages;        /* stop after passing this many pages (0: no limit) */
        const char *cgroup;        /* for the log line of each batch */
        migrate_call_gate_t call_gate;  /* NULL: calls not bounded (the worker pool sets its own) */
        void *call_gate_ctx;
        void *userdata;            /* for the caller (manager): the process / cgroup */
        migrate_may_move_t may_move;  /* NULL: only the identity checks (pidfd, start time) */
        void *may_move_ctx;
        /* out */
        uint64_t pages[_MIG_CLASS_MAX];   /* in base pages (page_size()) */
        uint64_t share_fails[_SHARE_FAIL_MAX];  /* shared: base pages the check held back, by why */
        int error;                 /* 0, or -errno that stopped the whole job (ESRCH, EPERM, EACCES...) */
        const struct migrate_stop *stop;  /* when may_move stopped it: why; else NULL */
        uint64_t cpu_ns;           /* CPU time the worker spent on this job (CLOCK_THREAD_CPUTIME_ID) */
        uint64_t wall_ns;
        struct histogram move_calls;  /* each move call's wall time (histogram_move_call_bounds) */
};

const char *executor_class_name(enum migrate_class c);

/* The class of one move_pages() status slot after a move call. status is the node id
 * or -errno; was_on_target: the query before the move already found it on the target. */
enum migrate_class executor_classify(int status, int target_node, bool was_on_target);

/* The size of a PMD-mapped transparent huge page: a page table of 8-byte entries
 * worth of base pages (2 MiB with 4 KiB pages; 32 MiB with 16 KiB, 512 MiB with
 * 64 KiB on arm64). */
uint64_t executor_pmd_size(void);

/* The time a kernel batch of base pages should take at most, and its size at most in
 * bytes. Since 6.3 move_pages(2) unmaps the pages of a call in batches (512 base pages
 * with 4 KiB pages, 8,192 with 64 KiB), allocating (with init_on_alloc, clearing) each
 * one's copy while the ones unmapped before it wait, and copies them only then: a
 * workload thread touching any page of a batch waits for all of it. A call's pages go
 * to the kernel in runs of executor_kernel_batch_pages(), each ended by
 * executor_batch_break() (docs/RULES.md, "How long a workload thread waits"). */
#define EXECUTOR_KERNEL_BATCH_NS (20ULL * 1000000ULL)
#define EXECUTOR_KERNEL_BATCH_BYTES (UINT64_C(2) << 20)

/* Base pages of page_size bytes in one kernel batch: as many as EXECUTOR_KERNEL_BATCH_NS
 * takes at ns_per_page (the last move call's time per base page; 0: not known yet),
 * within EXECUTOR_KERNEL_BATCH_BYTES, one at least. */
uint64_t executor_kernel_batch_pages(uint64_t ns_per_page, uint64_t page_size);

/* An address no process maps (in the kernel's half): the kernel refuses it in its slot
 * and moves the pages queued before it first. */
void *executor_batch_break(void);

/* Lays out a move call: the n addresses of weights weight[] (base pages) into out, an
 * executor_batch_break() before any address that would take the run since the last
 * one past per_batch base pages. out must hold 2 * n - 1 entries (n >= 1); returns how
 * many it holds. */
size_t executor_lay_out_call(void *const *addrs, const uint32_t *weight, size_t n, uint64_t per_batch,
                             void **out);

/* Charges bytes moved by work that began at busy_since_ns (CLOCK_MONOTONIC) to the
 * budget, and may sleep; -errno (-ECANCELED) stops the job. */
typedef int (*migrate_throttle_t)(void *ctx, uint64_t bytes, uint64_t busy_since_ns);

/* Runs one job on the calling thread, in move calls of at most batch_pages base pages
 * (0: the default, 65536), counted by weight: a 2 MiB page passes 512 of them, and so
 * does the head of a transparent huge page in a huge-page round (it moves whole); a
 * call passes one address at least, whatever its size. *cancel (may be NULL) becoming
 * non-zero stops the job at the next batch with -ECANCELED. throttle (may be NULL) is
 * called after each move batch with the bytes that moved. Fills the job's out fields;
 * returns job->error. */
int executor_run_job(struct migrate_job *job, uint64_t batch_pages, volatile int *cancel,
                        migrate_throttle_t throttle, void *throttle_ctx);
