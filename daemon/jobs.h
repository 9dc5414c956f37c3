/* SPDX-License-Identifier: GPL-2.0-or-later */
/* From plans to moves: one migration job per (process, target node) built from the
 * tick's scans, owners taking turns (largest first within each, each within its share
 * of the run's bytes), split among the workers, run, and the results
 * accounted (per process and cgroup, in the counters, the CPU time in the ledger, and
 * the ranges moved remembered for the cooldown). On the event-loop thread, after the
 * scans whose plans it runs. */
#pragma once
#include <stddef.h>
#include <stdint.h>
#include "cost.h"
#include "counters.h"
#include "migrate.h"
#include "move-budget.h"
#include "move-check.h"
#include "scan.h"
#include "share-groups.h"

/* A job is split among the workers in parts of at least this many bytes: below it,
 * a second CPU saves less than it costs to set up. */
#define JOBS_SPLIT_MIN_BYTES (UINT64_C(64) << 20)

/* What a run uses besides the scans. */
struct jobs_env {
        struct move_check_env check;   /* for the checks before each move (move-check.h) */
        bool dry_run;                  /* nothing runs */
        uint64_t run_bytes_max;        /* what a run may move in all, shared among the owners
                                        * of its jobs (move_budget_run_bytes()); 0: no share */
        struct migrator *migrator;
        struct cost_ledger *cost;      /* the run's CPU time is charged here */
        struct counters *counters;     /* pages moved, bytes in the last minute */
        struct move_budget_promote *promote;  /* settled with what promotions moved */
        const struct share_groups *shares;    /* the tick's groups, for shared moves' checks;
                                               * NULL: none move */
        /* Runs the jobs instead of migrator_run() (the tests: tick on stored inputs),
         * the results into the jobs; NULL: the migrator. */
        int (*run_jobs)(void *userdata, struct migrate_job *jobs, size_t n_jobs);
        void *run_jobs_userdata;
        /* The control socket served during the run: its time is not the run's. */
        const uint64_t *pump_ns;
};

/* The scans' plans were made from where the threads ran before the placer's round: a
 * process whose threads are placed (placer.h) has its memory follow them to their node
 * only, its moves to other nodes dropped (and said at debug level) before the run. A
 * plan toward another node, run, would leave its memory remote from its threads for a
 * cooldown (measured in perf bench numa's two-process case: both processes' memory
 * moved, 2.6% local at the end of one run of five). */
void jobs_keep_placed_targets(const struct topology *t, struct scan *scans, size_t n_scans);

/* Runs the moves the scans planned, for processes in balance mode (none with
 * dry_run). *ret_charged: the calling thread's CPU time it charged (the workers' is
 * charged too, but is not the caller's). Returns 0 (a failed run is logged; its jobs'
 * counts stay exact), or -ENOMEM when the jobs could not be built (nothing ran). */
int jobs_run(const struct jobs_env *env, const struct scan *scans, size_t n_scans, uint64_t now,
             uint64_t *ret_charged);
