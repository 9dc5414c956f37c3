/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The worker pool (a "migrator"): one thread per service CPU, pinned to it, running
 * the executor's jobs (executor.h) from one queue under one migration budget (move-budget.h).
 * The manager hands it a tick's jobs with migrator_run() and gets them back done.
 * Workers block every signal: signals are the main thread's business. */
#pragma once
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "executor.h"
#include "nodemask.h"
#include "service-cpus.h"

struct migrator;

/* Starts one worker per CPU of service_cpus (pinned to it before it runs; a CPU that
 * cannot take one is skipped with a warning). rate_limit_mb_s == 0: unlimited;
 * batch_pages: see executor_run_job(). -EINVAL when no worker could start. */
int migrator_new(const nb_cpumask *service_cpus, uint64_t rate_limit_mb_s, uint64_t batch_pages,
                 struct migrator **ret);
void migrator_set_limits(struct migrator *m, uint64_t rate_limit_mb_s, uint64_t batch_pages);
/* At most calls_per_s move_pages(2) calls that move pages, for all workers together
 * (a token bucket with a burst of 100 ms worth); 0, the start: unlimited. */
void migrator_set_call_rate(struct migrator *m, uint64_t calls_per_s);
/* Runs all jobs on the workers and returns when every one is done (the results are in
 * the jobs). Jobs of one process may run at the same time on several workers
 * (job_split): move_pages(2) takes the process's mmap lock for reading only,
 * per address. Not reentrant: -EBUSY while another run is under way. */
int migrator_run(struct migrator *m, struct migrate_job *jobs, size_t n_jobs);
/* While migrator_run() waits, it calls should_stop(ctx) every 100 ms on the caller's
 * thread; true cancels like migrator_cancel(). */
void migrator_set_should_stop(struct migrator *m, bool (*should_stop)(void *ctx), void *ctx);
/* Bounds each run in time: once a run has lasted budget_ns, its jobs stop at the next
 * batch boundary (a throttled worker at once), their counts exact, the jobs not
 * started yet with -ECANCELED, and migrator_run() returns when the batches in flight
 * are done. Unlike migrator_cancel() it is not sticky: the next run starts afresh
 * (after the budget debt of the cut run is slept off: the MB/s limit holds across
 * runs). 0: no bound (the default). */
void migrator_set_run_budget(struct migrator *m, uint64_t budget_ns);
/* How long the run under way has lasted (CLOCK_MONOTONIC), 0 when none is. From
 * the thread that called migrator_run() only (its should_stop callback). */
uint64_t migrator_run_elapsed_ns(const struct migrator *m);
/* The runs that their budget cut, since the start. */
uint64_t migrator_runs_cut(const struct migrator *m);
/* Asks running jobs to stop at the next batch boundary (SIGTERM); their counts stay
 * exact. Only an atomic store: callable from a signal handler. */
void migrator_cancel(struct migrator *m);
void migrator_free(struct migrator *m);
unsigned migrator_n_workers(const struct migrator *m);
/* Service CPUs went offline or came back (hotplug): each worker goes back to its own
 * CPU if that is in online, else to all of online (the kernel, when a CPU goes down,
 * lets the threads pinned to it run anywhere). online must not be empty. Returns the
 * number of workers whose own CPU is offline, or -errno. */
int migrator_repin(struct migrator *m, const nb_cpumask *online);
/* Whether every worker is pinned where migrator_repin(m, online) would pin it (exact),
 * or at least to some of online and nothing else (!exact). */
bool migrator_pinned(const struct migrator *m, const nb_cpumask *online, bool exact);
/* The workers as a pool for service_cpus_check(). */
struct service_pool migrator_service_pool(struct migrator *m);
