/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The manager's state: seen by manager.c, which runs the tick, and by its test
 * (tests/unit/test-manager.c) only. Each piece has one owner module that writes it
 * (proc-records, cg-records, cost, counters, service-cpus, samplers); the steps of the
 * tick (scan, pass, jobs) get what they use, not the manager, and the reports read it
 * through struct manager_view (manager.h). */
#pragma once
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>
#include <systemd/sd-event.h>
#include "cg-records.h"
#include "clock.h"
#include "config.h"
#include "cost.h"
#include "counters.h"
#include "interleave.h"
#include "log.h"
#include "manager.h"
#include "migrate.h"
#include "move-budget.h"
#include "proc-records.h"
#include "share-groups.h"
#include "react.h"
#include "samplers.h"
#include "scan.h"
#include "service-cpus.h"
#include "page-sampler.h"
#include "pass.h"
#include "source.h"
#include "topology.h"
#include "walker.h"

/* While a run lasts at most this long (its budget, then as long again for the batches
 * in flight to finish), the watchdog is pinged from it; a run stuck past it (a
 * move_pages(2) that never returns) stops the pings, and systemd sees a stuck daemon. */
#define MANAGER_RUN_KEEPALIVE_MS (2 * MOVE_BUDGET_RUN_MS)
/* malloc_trim(0) once every this many ticks. */
#define TRIM_EVERY_TICKS 16
/* Until the walker's first walk is done, the timer looks this often (on_timer). */
#define FIRST_WALK_POLL_MS 10
/* A tick reads each owner's cgroups for this long at most (tick_cgroups). */
#define OWNER_TURN_NS (200 * UINT64_C(1000000))
/* A tick reads cgroups for this long at most, all owners together (the rest kept
 * for the next ticks, as an owner's turn is): with the jobs' run budget
 * (MOVE_BUDGET_RUN_MS), a tick stays well below the unit's WatchdogSec=30s however
 * many owners there are. */
#define TICK_READ_BUDGET_NS (2000 * UINT64_C(1000000))
/* How often a long tick serves the control socket (serve_meanwhile). */
#define SERVE_EVERY_NS (100 * UINT64_C(1000000))

/* What the manager calls out to: the reports after a tick, the control socket and the
 * watchdog during a long tick or run, and the jobs' seam. */
struct manager_hooks {
        void (*after_tick)(const struct manager_view *v, void *userdata);  /* reports (metrics) */
        void *after_tick_userdata;
        void (*while_moving)(void *userdata);  /* serves the control socket mid-run and mid-tick */
        void *while_moving_userdata;
        void (*keepalive)(void *userdata);     /* WATCHDOG=1 mid-run */
        void *keepalive_userdata;
        /* Where the jobs meet the kernel, replaced by tests/unit/test-manager.c (the
         * tick on stored inputs); NULL: migrator_run() (jobs.h). The pidfds' seam is
         * procs.open_pidfd. */
        int (*run_jobs)(void *userdata, struct migrate_job *jobs, size_t n_jobs);
        void *run_jobs_userdata;
};

struct manager {
        sd_event *event;
        sd_event_source *timer;
        struct manager_opts opts;
        char *proc_root, *sys_root;
        struct nb_config cfg;      /* a private copy of the config (config_copy) */

        struct topology *topo;
        struct samplers samplers;  /* where threads ran, which pages they touched (samplers.h) */
        struct damon *damon;         /* DAMON's hot regions (damon.h), NULL only in --once */
        struct migrator *migrator;
        struct tenant_reader *reader;  /* the reads a tenant can make wait, with a deadline */
        struct placer *placer;     /* thread placement (mode place); NULL: none */
        struct walker *walker;     /* the cgroup walk's thread; NULL: walked in the tick (tests, --once) */
        struct service_pins service;

        struct proc_records procs;
        struct cg_records cgs;
        struct cost_ledger cost;
        struct counters counters;
        struct manager_view view;  /* what the reports read: pointers into the above */
        struct react react;        /* node changes: react scans between ticks (react.h) */

        struct owner_cursor *cursors;  /* where each owner's turn starts at the next tick */
        size_t n_cursors;
        struct walker_log tree_log;  /* what is wrong with the tree, logged once (walker.h) */
        struct config_report config_report;  /* what the config's rules match (config-report.h) */
        struct pass_logs pass_logs;  /* what the passes' scans say, rate-limited (pass.h) */
        uint64_t free_read_tick;   /* the tick that last read free memory per node (need_free_memory) */
        struct move_budget_promote promote;  /* what promotions may still take (plan.h, rule 7) */
        struct share_groups shares;  /* processes that share memory, rebuilt each tick (share-groups.h) */

        uint64_t last_served_ns;
        uint64_t owner_turn_ns, read_budget_ns;  /* OWNER_TURN_NS, TICK_READ_BUDGET_NS (tests
                                                  * under valgrind give more) */
        struct manager_hooks hooks;
};
