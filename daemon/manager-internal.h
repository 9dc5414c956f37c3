/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The manager's state, shared by the modules that report on it (control socket,
 * metrics). Only the tick changes it (manager.c, and for it scan.c and jobs.c); the
 * others read it on the event-loop thread, between ticks. */
#pragma once
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>
#include <systemd/sd-event.h>
#include <time.h>
#include "cgroup.h"
#include "clock.h"
#include "config.h"
#include "interleave.h"
#include "log.h"
#include "manager.h"
#include "migrate.h"
#include "pagesample.h"
#include "placement.h"
#include "plan.h"
#include "siphash.h"
#include "proc.h"
#include "topology.h"

/* A process whose layout did not change is scanned half as often each time, down to
 * scan_max_ms; any move or change brings it back to scan_min_ms. */
#define BACKOFF_FACTOR 2
/* A change of this many percent of its resident bytes, or of the local share,
 * counts as "changing" for the backoff. */
#define CHANGE_PCT 5
/* A settled process's resident size is read (statm) when it may have grown: when its
 * cgroup's memory.current grew by min_misplaced since the cgroup's last look (one read
 * per cgroup per tick), or, in a cgroup without the memory controller, every
 * GROW_CHECK_TICKS ticks, one process in that many per tick, while anything in the
 * cgroup ran in the last GROW_CHECK_TICKS ticks (cpu.stat: idle processes do not grow). When it grew by
 * min_misplaced and by 1/GROW_SHARE of itself since its last scan, it is scanned now,
 * so that new memory placed on the wrong node is not left there for its backed-off
 * interval (scan_max_ms). The share keeps a steadily growing process (a cache filling
 * up) from being rescanned at every check: at most GROW_SHARE scans per doubling. */
#define GROW_CHECK_TICKS 2
#define GROW_SHARE 32
/* At most this many VMAs of huge_vma or more are tracked per process for sampled
 * scans (scan.c, vma-sample.h); a process with more is read in full. */
#define HUGE_VMAS_MAX 16
/* Each process moves at most this many batches' worth per tick, so that a tick (and
 * a SIGTERM waiting for it) stays bounded; the next tick continues. */
#define BATCHES_PER_PROCESS_PER_TICK 4
/* A tick's migration run ends after this long (the batches in flight finish, their
 * counts exact) and the next tick continues: the bytes per process are bounded, not
 * the processes (30 misplaced 1 GiB processes after a failover), nor the time (one at
 * rate_limit_mb_s = 10 takes 100 s). Below half of the unit's WatchdogSec=30s, so the
 * event loop's own pings come in time even without the ones sent during the run. */
#define MIGRATE_RUN_BUDGET_MS 10000
/* While a run lasts at most this long (its budget, then as long again for the batches
 * in flight to finish), the watchdog is pinged from it; a run stuck past it (a
 * move_pages(2) that never returns) stops the pings, and systemd sees a stuck daemon. */
#define MIGRATE_RUN_KEEPALIVE_MS (2 * MIGRATE_RUN_BUDGET_MS)
/* A migration job is split among the workers in parts of at least this many bytes:
 * below it, a second CPU saves less than it costs to set up. */
#define SPLIT_MIN_BYTES (UINT64_C(64) << 20)
/* Ping-pong history kept per process. */
#define HISTORY_MAX 256
/* malloc_trim(0) once every this many ticks. */
#define TRIM_EVERY_TICKS 16
/* Until the walker's first walk is done, the timer looks this often (on_timer). */
#define FIRST_WALK_POLL_MS 10
/* A tick reads each owner's cgroups for this long at most (tick_cgroups). */
#define OWNER_TURN_NS (200 * UINT64_C(1000000))
/* A tick runs the jobs planned so far once it has read for this long (run_jobs_early). */
#define JOBS_EARLY_NS (100 * UINT64_C(1000000))
/* How often a long tick serves the control socket (serve_meanwhile). */
#define SERVE_EVERY_NS (100 * UINT64_C(1000000))
/* Descriptors a process's pidfd may not take: the cgroup walk (one per level, 64),
 * the control connections (at most 64), the BPF maps and the rest of the daemon. */
#define PIDFD_RESERVE 256
/* New invalid cgroup settings logged one by one per minute, at most. */
#define INVALID_LOG_BURST 10

/* Where the daemon's CPU time goes, per cgroup and process (cost.h). */
enum stage { STAGE_READ, STAGE_DECIDE, STAGE_MIGRATE, STAGE_WALK, STAGE_BOOKKEEPING, STAGE_REPORT, _STAGE_MAX };

/* A top-level cgroup (or the root) walked but not opted in: the walk's CPU time on
 * its directories (cost.h). Kept while the walk finds it. */
struct subtree_rec {
        char *path;
        uint64_t walk_ns;
        uint64_t seen_tick;
};

struct cg_rec {
        char *path;
        uint64_t hash;             /* of path (cg-records.c) */
        struct cg_rec *hnext;      /* in its hash bucket */
        enum cg_mode mode;
        enum cg_source source;
        uid_t owner;               /* owner of the cgroup directory */
        uid_t covers_uid;          /* whose processes its opt-in covers (cgroup_entry), this tick */
        unsigned n_procs;          /* at the last tick */
        uint64_t pages[_MIG_CLASS_MAX];
        uint64_t cost_ns[_STAGE_MAX];
        bool seen;                 /* selected at the last tick */
        uint64_t kept_tick;        /* a tick that did not read it (its owner's turn was over) */
        uint64_t seen_tick;        /* the tick that selected it last; during a tick: */
        unsigned tick_procs;       /* its processes so far (n_procs at the end) */
        uint64_t mem_seen;         /* memory.current when growth was last looked for */
        uint64_t cpu_seen_usec;    /* cpu.stat usage_usec at the last look, */
        uint64_t cpu_ran_tick;     /* and the last tick that found it advanced */
        enum { GROWTH_UNKNOWN, GROWTH_NONE, GROWTH_SOME } growth;  /* this tick (cg_growth) */
};

/* A VMA of huge_vma or more as the full read that left its process settled found it:
 * the baseline its samples are compared with. */
struct huge_vma {
        uint64_t start, end;
        uint64_t *pages;           /* base pages per node id (huge_n_ids entries) */
};

struct proc_rec {
        pid_t pid;
        uint64_t starttime;
        int pidfd;                 /* -1 unless it is being balanced (update_pidfd) */
        char comm[64];
        struct cg_rec *cg;         /* valid for the current tick */
        struct placement_state pl;
        uint64_t next_scan_ms, interval_ms;
        struct plan_history *hist; /* grown on demand (most processes never move), at most HISTORY_MAX */
        size_t n_hist, cap_hist;
        bool exited;               /* its pidfd said so at the start of this tick */
        uint64_t pages[_MIG_CLASS_MAX];
        uint64_t cost_ns[_STAGE_MAX];
        enum plan_reason reason;   /* of the last scan; _REASON_MAX before the first */
        uint64_t planned_bytes;
        int hot_node;              /* of the last scan, -1 if none */
        int target_node;           /* of the last plan's first move, -1 if none */
        int full_target;           /* the last plan's first move held back at that node's
                                    * free-memory floor, -1 if none: scanned again as soon
                                    * as the node has room (room_again) */
        uint64_t skipped_bytes[_REASON_MAX]; /* misplaced bytes left alone, last scan */
        uint64_t last_scan_ms;
        uint64_t rss_kb;           /* resident at its last scan (or growth seen since), 0: unknown */
        uint64_t scans;
        nb_nodemask mems_allowed;
        uid_t uid;                 /* real uid, for the control socket's filter */
        uid_t covered_for;         /* the cgroup's covers_uid its ids were last checked against */
        struct proc_mm_layout layout;  /* its exec layout at its last scan (move-check.h) */
        const struct migrate_stop *move_stop;  /* why its last stopped job stopped, NULL: none */
        uint64_t move_stop_ms;     /* when */
        uint64_t total_bytes, local_bytes;
        uint64_t *node_bytes;      /* bytes per topology node index, last scan; NULL before */
        uint64_t seen_tick;
        uint64_t react_due_ms;     /* a scan brought forward by a node-change event, 0: none */
        nb_nodemask busy_nodes;    /* nodes with keep_node_share_pct of its CPU time in the last
                                    * window that had any (scan.c, keep_before) */
        /* Page-level sampling (m->pages): counts gathered since the last scan. */
        struct page_agg *seen;
        size_t pages_seen, pages_shared;   /* distinct pages sampled, and of them from several nodes: last scan */
        uint64_t page_planned_bytes;       /* page-level moves planned, last scan */
        /* Sampled scans (scan.c): its huge VMAs, and the nodes with min_cpu_share_pct
         * of its CPU time, at the full read that left it settled; none: read in full. */
        struct huge_vma *huge;
        size_t n_huge;
        nb_nodemask huge_cpu_nodes;
        uint64_t huge_rss_kb;              /* its resident size at that read */
        uint64_t sampled_scans;            /* scans that did not read numa_maps */
};

struct manager {
        sd_event *event;
        sd_event_source *timer;
        sd_event_source *events;   /* the source's node-change events, if it has them */
        uint64_t node_events;      /* received, for the debug log and the tests */
        uint64_t growth_scans;     /* scans brought forward by grew() (metrics) */
        uint64_t sampled_scans;    /* scans of settled processes that sampled instead of reading numa_maps */
        struct manager_opts opts;
        char *proc_root, *sys_root;
        bool kernel_balances;        /* kernel.numa_balancing on at this tick (policy.h) */

        /* A private copy of what the tick reads of the config. */
        struct nb_config cfg;

        struct topology *topo;
        const struct placement_source *source;
        struct page_sampler *pages;  /* page-level sampling, NULL: off */
        uint64_t page_samples;       /* sample counts drained, for status */
        struct migrator *migrator;
        nb_cpumask service;          /* the service CPUs the workers were started on */
        nb_cpumask service_online;   /* of those, the ones every thread is pinned to */
        uint64_t service_repin_logged_ms; /* when threads pinned by others were last logged */
        unsigned service_repin_failing; /* ticks in a row whose re-pinning did not hold */
        uint64_t service_repins;     /* re-pinnings of all threads: hotplug, cpuset, taskset, retries */

        struct proc_rec **procs;   /* sorted by pid */
        size_t n_procs;
        size_t n_pidfds;           /* held by the records (update_pidfd) */
        uint64_t fd_limit;         /* RLIMIT_NOFILE's soft limit at start */
        struct walker *walker;     /* the cgroup walk's thread; NULL: walked in the tick (tests, --once) */
        struct owner_cursor *cursors;  /* where each owner's turn starts at the next tick */
        size_t n_cursors;
        struct cg_rec **cgs;       /* selected in the last tick (cg-records.h) */
        size_t n_cgs, cap_cgs;
        struct cg_rec **cg_buckets;
        size_t n_cg_buckets;       /* a power of two, or 0 */
        uint8_t cg_key[SIPHASH_KEY_SIZE];  /* of the buckets */
        uint64_t departed_cost_ns[_STAGE_MAX];  /* of the cgroup records freed */

        bool walk_truncated_logged; /* the walk's bounds were hit: warned once until they are not */
        bool resources_short_logged; /* out of descriptors or memory: warned once until it passes (keep_all) */
        uint64_t *invalid_seen;    /* keyed hashes of the last walk's invalid settings, sorted */
        size_t n_invalid_seen;
        struct log_ratelimit invalid_log, invalid_count_log;
        uint64_t invalid_not_logged;  /* new invalid settings not logged one by one, not yet counted in the log */

        uint64_t tick;
        uint64_t free_read_tick;   /* the tick that last read free memory per node (need_free_memory) */
        uint64_t moved_ring[60];   /* bytes moved per second slot, for "last minute" */
        uint64_t ring_sec[60];
        uint64_t total_pages[_MIG_CLASS_MAX];
        uint64_t last_tick_ns;
        uint64_t started_ms;       /* CLOCK_MONOTONIC, for the uptime */
        void (*after_tick)(struct manager *m, void *userdata);  /* reports (metrics) */
        void *after_tick_userdata;
        void (*while_moving)(void *userdata);  /* serves the control socket mid-run and mid-tick */
        uint64_t last_served_ns;
        uint64_t jobs_ran_ns;      /* this tick's start, or its last early jobs (run_jobs_early) */
        void *while_moving_userdata;
        void (*keepalive)(void *userdata);     /* WATCHDOG=1 mid-run */
        void *keepalive_userdata;
        volatile int cancel;

        /* The daemon's CPU time (cost.h): what was charged, to cgroups and subtrees,
         * by stage; of the walk, the part on subtrees not opted in. */
        uint64_t cost_ns[_STAGE_MAX];
        uint64_t subtree_walk_ns;
        struct subtree_rec **subtrees;     /* sorted by path */
        size_t n_subtrees;
        uint64_t startup_cpu_ns;           /* the process's CPU time when the ticks began */
        uint64_t unattributed_ns;          /* the rest, as of the last tick (never down) */
        uint64_t pump_ns;                  /* serving the control socket during runs and long ticks:
                                            * unattributed */

        /* Where the tick meets the kernel, replaced by tests/unit/test-manager.c (the
         * tick on stored inputs); NULL: the real thing. open_pidfd: pidfd_open(2), a
         * descriptor that polls readable once pid has exited, or -errno. run_jobs:
         * migrator_run() (the results go into the jobs). */
        int (*open_pidfd)(pid_t pid);
        int (*run_jobs)(void *userdata, struct migrate_job *jobs, size_t n_jobs);
        void *run_jobs_userdata;
};

/* Bytes moved in the last 60 s. */
uint64_t manager_moved_last_minute(struct manager *m);

