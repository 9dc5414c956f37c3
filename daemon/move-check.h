/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The check before moving: the plan of a job was read at the scan, and its moves run
 * seconds later, or minutes under a low rate_limit_mb_s. Before each batch of the job
 * (its queries, the job's first included) and before each of its move calls (the
 * executor's may_move, executor.h), on the worker's thread, the process must still be
 * one the daemon may move there:
 *
 *   - the process that was scanned: same start time, and no exec since (its exec
 *     layout, proc_mm_layout: randomized at every exec);
 *   - in a cgroup whose setting, computed now by the walk's rule
 *     (cgroup_setting_of), is balance; under a user's opt-in, a process of that user
 *     (lib/creds.h);
 *   - every VMA that the job's ranges touch still allows the target node (its policy
 *     read again from numa_maps, with the cpuset's Mems_allowed, lib/policy);
 *   - for memory without a VMA policy, every thread's own policy still allows the
 *     target (lib/thread-policy, read again: one 64-byte read per thread);
 *   - for a job with base pages, the target node still above its free-memory floor
 *     (free_floor_pct: its meminfo read again, 10-13 us).
 *
 * Costs, per check: /proc/PID/stat (with its owner) and status, 11 us; /proc/PID/cgroup,
 * 3 us; per level of the cgroup's path an openat, an fstat and two fgetxattr, 9 us for
 * five levels (measured on an x86-64 host, on ext4 rather than cgroupfs): about 25 us
 * in all, 37 us with the target's meminfo, against tens of milliseconds for a move call of a batch. numa_maps walks the
 * page tables (3.7 ms per GiB of 4 KiB pages there, 0.05 ms per GiB of THP): it is
 * read before the job's first move call, and again before a later one only when at
 * least MOVE_CHECK_POLICY_RATIO times its last cost has passed, so that it costs at
 * most a tenth of the job's time. A policy changed later than that is seen at the
 * next read. The checks' CPU time is the job's, charged to the process's cgroup.
 *
 * Nothing here touches the daemon's state once the jobs run: move_check_prepare() copies
 * what the checks need (the roots, the config's cgroup rules, the nodes with memory,
 * each process's exec layout at its scan) on the event-loop thread, before. */
#pragma once
#include <stddef.h>
#include "executor.h"
#include "config.h"
#include "proc-records.h"
#include "tenant-reader.h"
#include "topology.h"

/* A policy re-read between move calls waits at least this many times its own cost. */
#define MOVE_CHECK_POLICY_RATIO 10

/* Why a check stopped a job (migrate_job.stop). */
extern const struct migrate_stop move_stop_exited, move_stop_exec, move_stop_cgroup, move_stop_not_covered,
        move_stop_policy, move_stop_thread_policy, move_stop_unreadable, move_stop_target_full,
        move_stop_locked;

struct move_check;

/* What the checks read besides the job: copied by move_check_prepare (the workers run
 * them while the event loop may reload the config). */
struct move_check_env {
        const struct nb_config *cfg;
        const struct topology *topo;
        const char *proc_root, *sys_root;
        bool kernel_balances;
        struct tenant_reader *reader; /* maps, smaps and numa_maps read through it; NULL: here */
};

/* Gives each job (built from the process records: userdata is the proc_rec) its
 * check, for one run; the jobs must not be split or moved after. -ENOMEM: no job may
 * run (none is checked). */
int move_check_prepare(const struct move_check_env *env, struct migrate_job *jobs, size_t n_jobs, struct move_check **ret);
void move_check_free(struct move_check *c);

/* The executor's predicate (migrate_may_move_t), public for the tests. */
int move_check_job(void *ctx, const struct migrate_job *job, const struct migrate_stop **ret_stop);
