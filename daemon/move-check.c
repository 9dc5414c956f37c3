/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The check before moving (move-check.h): what it copies before the run, the checks
 * in the order they run, and the predicate the executor asks. */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include "cgroup.h"
#include "cleanup.h"
#include "clock.h"
#include "creds.h"
#include "log.h"
#include "thread-mems.h"
#include "maps.h"
#include "move-check.h"
#include "tenant-files.h"
#include "numa_maps.h"
#include "pagesize.h"
#include "policy.h"
#include "proc.h"
#include "smaps.h"
#include "thread-policy.h"
#include "topology.h"

const struct migrate_stop
        move_stop_exited = { "exited", "the process exited" },
        move_stop_exec = { "exec", "the process executed another program since its scan" },
        move_stop_cgroup = { "cgroup-changed",
                             "the process is no longer in a cgroup opted in to balance (it moved, or its "
                             "cgroup's setting changed)" },
        move_stop_not_covered = { "not-covered",
                                  "the process is no longer one its cgroup's user opt-in covers (its ids or "
                                  "dumpable state changed)" },
        move_stop_policy = { "policy-changed",
                             "a memory policy (mbind, or the cpuset) no longer allows the target node" },
        move_stop_thread_policy = { "thread-policy-changed",
                                    "a thread's own memory policy no longer allows the target node" },
        move_stop_unreadable = { "unreadable", "the process's /proc files could not be read" },
        move_stop_target_full = { "target-full",
                                  "the target node fell below its free-memory floor (free_floor_pct) since the "
                                  "scan" },
        move_stop_locked = { "locked", "the memory was locked (mlock) since the scan (move_mlocked = no)" };

/* What every job of the run shares: copied before the run, read-only while it runs. */
struct check_run {
        char *proc_root, *cgroup_root, *sys_root;
        struct cgroup_rule *rules;
        size_t n_rules;
        nb_nodemask with_memory;
        unsigned policy_rules;       /* policy_allowed_nodes()'s, as at the scan */
        unsigned free_floor_pct;
        bool move_mlocked;
        struct tenant_reader *reader;
};

/* One job's (one part's: parts run side by side): the scan's facts, and when its
 * policies were last read. */
struct check_job {
        const struct check_run *run;
        struct proc_mm_layout layout;     /* at the scan */
        uid_t owner;                      /* whose turn read it (tenant-reader.h) */
        unsigned deadline_ms;             /* for its reads, from its size at the scan */
        uint64_t policy_read_end_ns;      /* CLOCK_MONOTONIC; 0: not read in this job yet */
        uint64_t policy_cost_ns;
};

struct move_check {
        struct check_run run;
        struct check_job *jobs;
        size_t n_jobs;
};

/* What one round of checks has read so far. */
struct check_state {
        const struct migrate_job *job;
        struct proc_creds creds;          /* read by check_process, first */
};

typedef int (*check_fn)(struct check_job *cj, struct check_state *st, const struct migrate_stop **ret_stop);

/* --- the checks -------------------------------------------------------------------- */

/* The process that was scanned, not another one with its pid, and no exec since. */
static int check_process(struct check_job *cj, struct check_state *st, const struct migrate_stop **ret_stop) {
        int r = creds_read(cj->run->proc_root, st->job->pid, &st->creds);

        if (r < 0) {
                *ret_stop = r == -ESRCH ? &move_stop_exited : &move_stop_unreadable;
                return r == -ENOMEM ? r : -ESTALE;
        }
        if (st->creds.stat.starttime != st->job->starttime) {
                *ret_stop = &move_stop_exited;
                return -ESTALE;
        }
        if (!proc_mm_layout_equal(&st->creds.stat.layout, &cj->layout)) {
                *ret_stop = &move_stop_exec;
                return -ESTALE;
        }
        return 0;
}

/* Whether any range is of base pages: hugetlb pages move into the target's free huge
 * pages, which MemFree does not count (the plan checks those pools). */
static bool has_base_pages(const struct migrate_job *job) {
        for (size_t k = 0; k < job->n_ranges; k++)
                if (job->ranges[k].page_size == page_size())
                        return true;
        return false;
}

/* The target node still above its free-memory floor: the plan kept to it with the
 * free memory of the scan, and other tenants may have filled the node since. Below the
 * floor, each page the kernel allocates there for a move may have to reclaim first, on
 * the service CPU, while the pages already unmapped for that call (6.3 and later unmap
 * a call's pages as one batch before copying them) hold the workload's threads that
 * touch them. The check is before a call, so a call may take the node below the floor
 * by at most its own size. An unreadable meminfo does not stop the job: the plan's
 * check stands. A job with hugetlb ranges as well stops whole. */
static int check_target_room(struct check_job *cj, struct check_state *st, const struct migrate_stop **ret_stop) {
        const struct migrate_job *job = st->job;
        uint64_t total_kb, free_kb;

        if (cj->run->free_floor_pct == 0 || !has_base_pages(job) ||
            topology_read_node_mem(cj->run->sys_root, (unsigned) job->target_node, &total_kb, &free_kb) < 0)
                return 0;
        /* The plan's floor (plan.c), to the byte. Promotions into the room the exchange
         * made on a full node (rule 8) are below it by design: the room itself must be
         * there (another allocation may have taken it). */
        if ((unsigned __int128) free_kb * 1024 >= (unsigned __int128) total_kb * 1024 / 100 * cj->run->free_floor_pct)
                return 0;
        if (job->exchanged && free_kb * 1024 >= job->max_pages * page_size())
                return 0;
        log_debug("pid=%d: node %d has %" PRIu64 " of %" PRIu64 " kB free, under its %u%% floor", (int) job->pid,
                  job->target_node, free_kb, total_kb, cj->run->free_floor_pct);
        *ret_stop = &move_stop_target_full;
        return -ESTALE;
}

/* In a cgroup whose setting now is balance, and covered by it. */
static int check_cgroup(struct check_job *cj, struct check_state *st, const struct migrate_stop **ret_stop) {
        const struct check_run *run = cj->run;
        _cleanup_free_ char *path = NULL;
        struct cgroup_setting cs;
        int r;

        r = proc_read_cgroup(run->proc_root, st->job->pid, &path);
        if (r >= 0)
                r = cgroup_setting_of(run->cgroup_root, run->rules, run->n_rules, path, &cs);
        if (r == -ENOMEM)
                return r;
        if (r == -ESRCH)
                *ret_stop = &move_stop_exited;
        else if (r < 0 || !cg_mode_moves(cs.mode))
                *ret_stop = &move_stop_cgroup;
        else if (cs.covers_uid != CGROUP_COVERS_ALL && !creds_belong_to(&st->creds, cs.covers_uid))
                *ret_stop = &move_stop_not_covered;
        else {
                /* Its threads' own cpusets in a threaded subtree: the policy checks after
                 * this one allow only nodes every thread's cpuset allows
                 * (lib/thread-mems.h). */
                r = thread_mems_narrow(run->proc_root, run->cgroup_root, path, st->job->pid, &st->creds.status);
                if (r == 0 || (r > 0 && nodemask_test(&st->creds.status.mems_allowed, (unsigned) st->job->target_node)))
                        return 0;
                if (r > 0) {
                        log_debug("pid=%d: a thread's cpuset does not allow node %d", (int) st->job->pid,
                                  st->job->target_node);
                        *ret_stop = &move_stop_policy;
                        return -ESTALE;
                }
                if (r == -ENOMEM)
                        return r;
                *ret_stop = r == -ESRCH ? &move_stop_exited : &move_stop_unreadable;
        }
        log_debug("pid=%d: %s: %s", (int) st->job->pid, r < 0 ? "cannot read its cgroup" : path,
                  (*ret_stop)->name);
        return -ESTALE;
}

/* Index of the last VMA starting at or below addr, or 0 when none does. */
static size_t vma_at(const struct numa_maps *maps, uint64_t addr) {
        size_t lo = 0, hi = maps->n_vmas;

        while (hi - lo > 1) {
                size_t mid = lo + (hi - lo) / 2;
                if (maps->vmas[mid].start <= addr)
                        lo = mid;
                else
                        hi = mid;
        }
        return lo;
}

/* Whether every VMA that [start, end) touches (the one it starts in, and any starting
 * inside it: mbind() on part of a VMA splits it) allows target. A range no VMA holds
 * any more passes: move_pages finds nothing there. */
static bool range_allowed(const struct check_run *run, const struct numa_maps *maps, const nb_nodemask *mems,
                          uint64_t start, uint64_t end, int target) {
        for (size_t i = vma_at(maps, start); i < maps->n_vmas && maps->vmas[i].start < end; i++) {
                nb_nodemask allowed;

                if (policy_allowed_nodes(&maps->vmas[i].policy, mems, &run->with_memory, run->policy_rules,
                                         &allowed) != POLICY_MOVABLE ||
                    !nodemask_test(&allowed, (unsigned) target))
                        return false;
        }
        return true;
}

/* Who the job's reads are for: the reader (tenant-files.h) bounds their wait. */
static struct tenant_proc tenant_proc_of(const struct check_job *cj, pid_t pid) {
        return (struct tenant_proc) {
                .proc_root = cj->run->proc_root, .pid = pid, .owner = cj->owner, .deadline_ms = cj->deadline_ms,
        };
}

/* Reads the process's policies (numa_maps) into *ret, and what that cost. */
static int read_policies(struct check_job *cj, pid_t pid, struct numa_maps **ret) {
        const struct tenant_proc tp = tenant_proc_of(cj, pid);
        uint64_t t0 = clock_now_ns(CLOCK_MONOTONIC);
        int r;

        /* A chunk at a time, no file names (lib/proc-lines.h: every worker may be
         * reading one at once), through the reader (tenant-files.h). */
        r = tenant_files_numa_maps(cj->run->reader, &tp, ret);
        if (r < 0)
                return r;
        cj->policy_read_end_ns = clock_now_ns(CLOCK_MONOTONIC);
        cj->policy_cost_ns = cj->policy_read_end_ns - t0;
        log_debug("pid=%d: policies read again: %zu VMA(s) in %" PRIu64 " us", (int) pid, (*ret)->n_vmas,
                  cj->policy_cost_ns / 1000);
        return 0;
}

/* Every VMA of the job's ranges still allows the target. Read before the job's first
 * move call; again only when MOVE_CHECK_POLICY_RATIO times the last read's cost has
 * passed (move-check.h: numa_maps walks the page tables). */
static int check_policy(struct check_job *cj, struct check_state *st, const struct migrate_stop **ret_stop) {
        const struct migrate_job *job = st->job;
        _cleanup_(numa_maps_freep) struct numa_maps *maps = NULL;
        const nb_nodemask *mems = st->creds.status.has_mems_allowed ? &st->creds.status.mems_allowed
                                                                     : &cj->run->with_memory;
        int r;

        if (cj->policy_read_end_ns &&
            clock_now_ns(CLOCK_MONOTONIC) - cj->policy_read_end_ns < MOVE_CHECK_POLICY_RATIO * cj->policy_cost_ns)
                return 0;
        r = read_policies(cj, job->pid, &maps);
        if (r < 0) {
                *ret_stop = r == -ESRCH ? &move_stop_exited : &move_stop_unreadable;
                return r == -ENOMEM ? r : -ESTALE;
        }
        for (size_t k = 0; k < job->n_ranges; k++)
                if (!range_allowed(cj->run, maps, mems, job->ranges[k].start, job->ranges[k].end,
                                   job->target_node)) {
                        log_debug("pid=%d: the range at 0x%" PRIx64 " may not go to node %d any more",
                                  (int) job->pid, job->ranges[k].start, job->target_node);
                        *ret_stop = &move_stop_policy;
                        return -ESTALE;
                }
        return 0;
}

/* Memory without a VMA policy of its own may go only where every thread's own policy
 * allows (lib/thread-policy): read again, one small read per thread, for the jobs
 * that hold such memory. */
static int check_thread_policy(struct check_job *cj, struct check_state *st, const struct migrate_stop **ret_stop) {
        const struct migrate_job *job = st->job;
        const nb_nodemask *mems = st->creds.status.has_mems_allowed ? &st->creds.status.mems_allowed
                                                                     : &cj->run->with_memory;
        int r;

        if (!job->thread_policy)
                return 0;
        r = thread_policy_allow(cj->run->proc_root, job->pid, mems, &cj->run->with_memory,
                                cj->run->policy_rules, (unsigned) job->target_node);
        if (r > 0)
                return 0;
        *ret_stop = r == -ESRCH ? &move_stop_exited : r < 0 ? &move_stop_unreadable : &move_stop_thread_policy;
        return r == -ENOMEM ? r : -ESTALE;
}

/* No range locked since the scan, unless move_mlocked: the scan left locked VMAs
 * alone, and a process may lock memory between its scan and the move. smaps (which
 * VMAs are locked) is read only when status shows locked memory, most processes never
 * lock any; their ends come from maps, which walks no page table. */
static int check_locked(struct check_job *cj, struct check_state *st, const struct migrate_stop **ret_stop) {
        const struct migrate_job *job = st->job;
        const struct tenant_proc tp = tenant_proc_of(cj, job->pid);
        _cleanup_free_ uint64_t *starts = NULL;
        _cleanup_free_ struct vma_range *ranges = NULL;
        size_t n = 0, n_ranges = 0;
        int r;

        if (cj->run->move_mlocked || st->creds.status.vm_lck_kb == 0)
                return 0;
        r = tenant_files_smaps_locked(cj->run->reader, &tp, &starts, &n);
        if (r >= 0 && n)
                r = tenant_files_maps(cj->run->reader, &tp, &ranges, &n_ranges);
        if (r < 0) {
                *ret_stop = r == -ESRCH ? &move_stop_exited : &move_stop_unreadable;
                return r == -ENOMEM ? r : -ESTALE;
        }
        for (size_t i = 0; i < n; i++) {
                uint64_t end = maps_end_of(ranges, n_ranges, starts[i]);

                for (size_t k = 0; k < job->n_ranges; k++)
                        if (starts[i] < job->ranges[k].end && (end ? end : starts[i] + 1) > job->ranges[k].start) {
                                *ret_stop = &move_stop_locked;
                                return -ESTALE;
                        }
        }
        return 0;
}

/* In this order: each may use what the ones before it read (check_state). */
static const check_fn checks[] = {
        check_process,
        check_cgroup,
        check_policy,
        check_thread_policy,
        check_locked,
        check_target_room,   /* last: a process that may not move says so, not "full" */
};

int move_check_job(void *ctx, const struct migrate_job *job, const struct migrate_stop **ret_stop) {
        struct check_job *cj = ctx;
        struct check_state st = { .job = job };
        const struct migrate_stop *stop = &move_stop_unreadable;
        int r = 0;

        for (size_t i = 0; i < ELEMENTSOF(checks) && r >= 0; i++)
                r = checks[i](cj, &st, &stop);
        if (r < 0)
                *ret_stop = stop;
        return r;
}

/* --- before the run ------------------------------------------------------------------ */

static void run_done(struct check_run *run) {
        free(run->proc_root);
        free(run->cgroup_root);
        free(run->sys_root);
        for (size_t i = 0; i < run->n_rules; i++)
                free(run->rules[i].path);
        free(run->rules);
}

static int run_copy(const struct move_check_env *env, struct check_run *run) {
        *run = (struct check_run) {
                .proc_root = strdup(env->proc_root),
                .cgroup_root = strdup(env->cfg->cgroup_root),
                .sys_root = strdup(env->sys_root),
                .rules = calloc(env->cfg->n_cgroups ? env->cfg->n_cgroups : 1, sizeof(*run->rules)),
                .with_memory = env->topo->with_memory,
                .policy_rules = (env->cfg->move_preferred ? POLICY_MOVE_PREFERRED : 0) |
                                (env->kernel_balances ? POLICY_KERNEL_BALANCES : 0),
                .free_floor_pct = env->cfg->free_floor_pct,
                .move_mlocked = env->cfg->move_mlocked,
                .reader = env->reader,
        };
        if (!run->proc_root || !run->cgroup_root || !run->sys_root || !run->rules)
                return -ENOMEM;
        for (; run->n_rules < env->cfg->n_cgroups; run->n_rules++) {
                if (config_rule_copy(&run->rules[run->n_rules], &env->cfg->cgroups[run->n_rules]) < 0)
                        return -ENOMEM;
        }
        return 0;
}

int move_check_prepare(const struct move_check_env *env, struct migrate_job *jobs, size_t n_jobs, struct move_check **ret) {
        struct move_check *c = calloc(1, sizeof(*c));
        int r;

        if (!c)
                return -ENOMEM;
        r = run_copy(env, &c->run);
        c->jobs = calloc(n_jobs ? n_jobs : 1, sizeof(*c->jobs));
        if (r < 0 || !c->jobs) {
                move_check_free(c);
                return -ENOMEM;
        }
        c->n_jobs = n_jobs;
        for (size_t q = 0; q < n_jobs; q++) {
                const struct proc_rec *p = jobs[q].userdata;

                c->jobs[q] = (struct check_job) {
                        .run = &c->run,
                        .layout = p->layout,
                        .owner = p->cg ? p->cg->turn_uid : 0,
                        .deadline_ms = tenant_reader_deadline_ms(p->rss_kb * UINT64_C(1024)),
                };
                jobs[q].may_move = move_check_job;
                jobs[q].may_move_ctx = &c->jobs[q];
        }
        *ret = c;
        return 0;
}

void move_check_free(struct move_check *c) {
        if (!c)
                return;
        run_done(&c->run);
        free(c->jobs);
        free(c);
}
