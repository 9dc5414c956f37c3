/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The daemon's CPU time, charged to whoever causes it. The daemon exists to take the
 * cost of NUMA balancing off the workloads' CPUs; that cost must then be seen, per
 * cgroup, or a tenant who opts in a thousand idle processes (or makes a million
 * cgroups) spends the service CPUs of everyone unseen.
 *
 * This module is the ledger's one owner: every ns charged to a process, a cgroup, a
 * subtree or the totals goes through a cost_* function here, and nothing else writes
 * a cost_ns field. The totals are the sum of the charges, never rebuilt.
 *
 * Stages (enum stage), each measured with the thread's CPU clock
 * (CLOCK_THREAD_CPUTIME_ID) on the thread that does the work:
 *   walk         the cgroup tree walk: each opted-in cgroup its own directory, the
 *                directories not opted in the top-level cgroup they lie in (a
 *                "subtree" record: not opted in, but walked); measured on the walker
 *                thread (walker.h), or the tick's when it walks itself, and carried
 *                in the selection to the tick that takes it;
 *   bookkeeping  finding the cgroup's record, reading its cgroup.procs, admitting its
 *                processes (stat, pidfd); and the tick's per-process work that is not
 *                measured one process at a time (the poll over every pidfd, page
 *                samples, forgetting those that left, the heap trim), shared among
 *                the cgroups of the tick in proportion to their processes;
 *   read, decide a process's scan (scan.c measures them, the tick charges them);
 *   migrate      the workers' time per job, and the event-loop thread's part of the
 *                run (building, splitting, accounting the jobs) shared in proportion
 *                to the workers' time (cost_charge_run);
 *   report       writing the metrics file, shared evenly among the cgroups in it.
 * What is left is the daemon's own: its start (startup_cpu_ns), the control socket,
 * STATUS=, and ticks with nothing opted in. It is shown as unattributed.
 *
 * Everything here runs on the event-loop thread: the other threads' time reaches it
 * in what they hand over (a walk's selection, a job's cpu_ns). */
#pragma once
#include <stddef.h>
#include <stdint.h>
#include "cgroup.h"
#include "clock.h"
#include "stage.h"

struct cg_rec;
struct cg_records;
struct proc_rec;
struct migrate_job;

/* A top-level cgroup (or the root) walked but not opted in: the walk's CPU time on
 * its directories. Kept while the walk finds it. */
struct subtree_rec {
        char *path;
        uint64_t walk_ns;
        uint64_t seen_tick;
};

struct cost_ledger {
        uint64_t total_ns[_STAGE_MAX];     /* everything charged, by stage */
        uint64_t departed_ns[_STAGE_MAX];  /* of the cgroup records freed (in total_ns too) */
        uint64_t subtree_walk_ns;          /* of the walk, the part on subtrees not opted in */
        struct subtree_rec **subtrees;     /* sorted by path */
        size_t n_subtrees;
        uint64_t startup_cpu_ns;           /* the process's CPU time when the ticks began */
        uint64_t unattributed_ns;          /* the rest, as of the last tick (never down) */
        uint64_t pump_ns;                  /* serving the control socket during runs and long
                                            * ticks: unattributed */
};

static inline uint64_t cost_thread_ns(void) {
        return clock_now_ns(CLOCK_THREAD_CPUTIME_ID);
}

/* ns of stage to cg (NULL: to nobody, unattributed) and to the totals. */
void cost_charge(struct cost_ledger *l, struct cg_rec *cg, enum stage s, uint64_t ns);
/* The same for a process: to it, its cgroup and the totals. */
void cost_charge_proc(struct cost_ledger *l, struct proc_rec *p, enum stage s, uint64_t ns);

/* The control socket served meanwhile: nobody's (kept to be left out of the tick's
 * own time). */
void cost_pumped(struct cost_ledger *l, uint64_t ns);

/* Shares ns of stage among the cgroups seen in the last tick in proportion to their
 * processes (cost_share_by_procs) or evenly among every record (cost_share_even).
 * Returns the part it could not give (no such cgroup), to be left unattributed. */
uint64_t cost_share_by_procs(struct cost_ledger *l, const struct cg_records *cgs, enum stage s, uint64_t ns);
uint64_t cost_share_even(struct cost_ledger *l, const struct cg_records *cgs, enum stage s, uint64_t ns);

/* The walk's time on the directories that are not opted in (sel->others): to the
 * record of that cgroup if there is one, else to its subtree record (made, or found,
 * by path). Subtrees not walked at this tick are forgotten. Returns the ns charged. */
uint64_t cost_walk_others(struct cost_ledger *l, const struct cg_records *cgs, const struct cgroup_selection *sel,
                          uint64_t tick);

/* A migration run's jobs (their userdata a struct proc_rec): each job's cpu_ns (the
 * workers' time) to its process, and main_ns (the event-loop thread's part of the run)
 * shared in proportion to it. Returns the part of main_ns not given (no worker time). */
uint64_t cost_charge_run(struct cost_ledger *l, const struct migrate_job *jobs, size_t n_jobs, uint64_t main_ns);

/* A cgroup record about to be freed: its time stays in the totals, as departed (the
 * manager hands it to cg_records_set_depart()). */
void cost_depart(struct cost_ledger *l, const struct cg_rec *cg);

/* The unattributed time so far (the process's CPU time less its start and what was
 * charged), kept from going down: a counter in the metrics. Updated after each tick. */
void cost_update_unattributed(struct cost_ledger *l);
/* The same figure, computed now for a reply (never below the last update). */
uint64_t cost_unattributed_now(const struct cost_ledger *l);

void cost_ledger_done(struct cost_ledger *l);
