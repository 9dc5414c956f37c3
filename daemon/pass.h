/* SPDX-License-Identifier: GPL-2.0-or-later */
/* One tick's, or one react pass's (react.h), work in progress: the processes scanned so
 * far with their plans, until their jobs run; the bytes planned to each node so far,
 * which the free-memory floor holds across the pass's runs; the event-loop thread's CPU
 * time charged so far. The manager starts one per tick and per react pass and decides
 * which processes go into it; a pass scans them (scan.h), charges and counts each scan,
 * quarantines or backs off a process that could not be read, and runs the plans' jobs
 * (jobs.h). On the event-loop thread. */
#pragma once
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "cost.h"
#include "counters.h"
#include "jobs.h"
#include "log.h"
#include "scan.h"
#include "topology.h"

/* A pass runs the jobs planned so far once it has read for this long since it began or
 * since its last ones ran (pass_jobs_due). */
#define PASS_JOBS_EARLY_NS (100 * UINT64_C(1000000))

/* What a pass's scans say, rate-limited across passes (the manager keeps them). */
struct pass_logs {
        struct log_ratelimit oom;          /* a scan dropped for lack of memory */
        struct log_ratelimit quarantine;   /* a read that overran */
};

/* Where a pass charges, counts and says: the same for every pass. */
struct pass_env {
        const struct topology *topo;       /* the reservations' size */
        struct cost_ledger *cost;          /* each scan's CPU time, to its process */
        struct counters *counters;         /* sampled_scans, quarantines, reads_deferred */
        struct pass_logs *logs;
};

/* The pass's scans so far. */
struct pass_scans {
        struct scan *v;
        size_t n, cap;
        bool moves;                        /* some plan of these has moves */
};

struct pass {
        struct pass_env env;
        uint64_t now;              /* CLOCK_MONOTONIC ms, at its start */
        uint64_t *reserved;        /* bytes planned to each node so far (the free-memory floor) */
        struct pass_scans scans;   /* until their jobs run */
        uint64_t charged;          /* this thread's CPU time charged to someone so far */
        uint64_t started_ns;       /* CLOCK_MONOTONIC: its start (the tick's read budget counts from it) */
        uint64_t jobs_ran_ns;      /* its start, or when its last jobs ran (pass_jobs_due) */
};

void pass_logs_init(struct pass_logs *l);
/* A pass with nothing in it, begun at now (ms) and started_ns (ns, both
 * CLOCK_MONOTONIC). Returns 0, or -ENOMEM (pass_done() it all the same). */
int pass_start(struct pass *ps, const struct pass_env *env, uint64_t now, uint64_t started_ns);
/* Scans p (due) into the pass, its time charged to it; a process that cannot be read
 * is tried again later (gone: forgotten at the next tick), one whose read overran is
 * quarantined (scan_quarantine()), one out of the pass's memory is scanned at the next
 * tick. One in quarantine is not read. Returns the CPU time charged. */
uint64_t pass_scan(struct pass *ps, const struct scan_env *env, struct proc_rec *p);
/* Whether the jobs planned so far are to run now (now_ns, CLOCK_MONOTONIC): some plan
 * has moves, and the pass has read for PASS_JOBS_EARLY_NS since it began or since its
 * last jobs ran. */
bool pass_jobs_due(const struct pass *ps, uint64_t now_ns);
/* Runs the jobs of the scans so far (jobs_keep_placed_targets(), then jobs_run()), adds
 * what it charged on this thread to ps->charged, and forgets the scans. Returns what
 * jobs_run() returns (0 with no scan: nothing runs). */
int pass_run_jobs(struct pass *ps, const struct jobs_env *env);

/* The same for a run in the middle of a tick (pass_jobs_due): the scans of processes
 * whose cgroup places threads and that are not placed yet stay for the run after the
 * tick's placer round, which may place them beside memory these scans would move away
 * (and keep their moves to that node); the others run and are forgotten. */
int pass_run_jobs_early(struct pass *ps, const struct jobs_env *env);
void pass_done(struct pass *ps);
