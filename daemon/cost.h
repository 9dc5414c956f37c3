/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The daemon's CPU time, charged to whoever causes it. The daemon exists to take the
 * cost of NUMA balancing off the workloads' CPUs; that cost must then be seen, per
 * cgroup, or a tenant who opts in a thousand idle processes (or makes a million
 * cgroups) spends the service CPUs of everyone unseen.
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
 *   read, decide a process's scan (scan.c), whatever it did (a process below min_rss
 *                too), to the process and its cgroup;
 *   migrate      the workers' time per job (jobs.c), and the event-loop thread's part
 *                of the run (building, splitting, accounting the jobs) shared in
 *                proportion to the workers' time;
 *   report       writing the metrics file, shared evenly among the cgroups in it.
 * What is left is the daemon's own: its start (startup_cpu_ns), the control socket,
 * STATUS=, and ticks with nothing opted in. It is shown as unattributed.
 *
 * Everything here runs on the event-loop thread: the other threads' time reaches it
 * in what they hand over (a walk's selection, a job's cpu_ns). */
#pragma once
#include <stdint.h>
#include "cgroup.h"
#include "manager-internal.h"

static inline uint64_t cost_thread_ns(void) {
        return clock_now_ns(CLOCK_THREAD_CPUTIME_ID);
}

/* ns of stage to cg (NULL: to nobody, unattributed) and to the totals. */
void cost_charge(struct manager *m, struct cg_rec *cg, enum stage s, uint64_t ns);
/* The same for a process: to it, its cgroup and the totals. */
void cost_charge_proc(struct manager *m, struct proc_rec *p, enum stage s, uint64_t ns);

/* A process's scan, measured around scan_process() (which charges what it measures
 * itself, to p and p->cg): the totals get what it charged, and the rest of spent_ns
 * goes to read. before: p->cost_ns as it was before the scan. */
void cost_scanned(struct manager *m, struct proc_rec *p, const uint64_t before[_STAGE_MAX], uint64_t spent_ns);

/* Shares ns of stage among the cgroups seen in this tick in proportion to their
 * processes (cost_share_by_procs) or evenly among every record (cost_share_even).
 * Returns the part it could not give (no such cgroup), to be left unattributed. */
uint64_t cost_share_by_procs(struct manager *m, enum stage s, uint64_t ns);
uint64_t cost_share_even(struct manager *m, enum stage s, uint64_t ns);

/* The walk's time on the directories that are not opted in (sel->others): to the
 * record of that cgroup if there is one, else to its subtree record (made, or found,
 * by path). Subtrees not walked this time are forgotten. Returns the ns charged. */
uint64_t cost_walk_others(struct manager *m, const struct cgroup_selection *sel);

/* Around a migration run: each cgroup's migrate time before it (malloc'd, NULL when
 * out of memory), then, after it, the workers' time into the totals and main_ns (the
 * event-loop thread's part) shared in proportion to it. Returns the part of main_ns
 * not given (nothing ran). Frees before. */
uint64_t *cost_migrate_before(const struct manager *m);
uint64_t cost_migrate_after(struct manager *m, uint64_t *before, uint64_t main_ns);

/* The unattributed time so far (the process's CPU time less its start and what was
 * charged), kept from going down: a counter in the metrics. Updated after each tick. */
void cost_update_unattributed(struct manager *m);

void cost_subtrees_free(struct manager *m);
