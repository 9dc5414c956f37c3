/* SPDX-License-Identifier: GPL-2.0-or-later */
/* From plans to moves (jobs.h). */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include "cleanup.h"
#include "interleave.h"
#include "jobs.h"
#include "histogram.h"
#include "log.h"
#include "move-check.h"
#include "proc-records.h"
#include "pagesize.h"
#include "placer.h"

/* Remembers that the range at start moved to target (the cooldown's history). */
static void history_note(struct proc_moves *mv, uint64_t start, int target, uint64_t when) {
        for (size_t i = 0; i < mv->n_hist; i++)
                if (mv->hist[i].start == start) {
                        mv->hist[i].target = target;
                        mv->hist[i].when_ms = when;
                        return;
                }
        if (mv->n_hist == mv->cap_hist && mv->cap_hist < PROC_HISTORY_MAX) {
                size_t nc = mv->cap_hist ? mv->cap_hist * 2 : 4;
                struct plan_history *n = realloc(mv->hist, (nc < PROC_HISTORY_MAX ? nc : PROC_HISTORY_MAX) * sizeof(*n));
                if (n) {
                        mv->hist = n;
                        mv->cap_hist = nc < PROC_HISTORY_MAX ? nc : PROC_HISTORY_MAX;
                }
        }
        if (mv->n_hist == mv->cap_hist) {
                if (mv->n_hist == 0)
                        return; /* out of memory: no cooldown for this range */
                /* Drop the oldest. */
                size_t old = 0;
                for (size_t i = 1; i < mv->n_hist; i++)
                        if (mv->hist[i].when_ms < mv->hist[old].when_ms)
                                old = i;
                mv->hist[old] = mv->hist[--mv->n_hist];
        }
        mv->hist[mv->n_hist++] = (struct plan_history) { start, target, when };
}

void jobs_keep_placed_targets(const struct topology *t, struct scan *scans, size_t n_scans) {
        for (size_t i = 0; i < n_scans; i++) {
                const struct proc_place *pp = scans[i].rec->place;
                int node;

                if (!pp || pp->placed < 0)
                        continue;
                node = (int) t->nodes[pp->placed].id;
                if (plan_keep_target(&scans[i].plan, node) + plan_keep_target(&scans[i].pages, node))
                        log_debug("pid=%d: moves to nodes other than node %d, where its threads are placed, dropped",
                                  (int) scans[i].rec->pid, node);
        }
}

/* More pages to move first; then by pid and target, so that the order is fixed. */
static int cmp_job_size(const void *a, const void *b) {
        const struct migrate_job *x = a, *y = b;

        if (x->max_pages != y->max_pages)
                return x->max_pages > y->max_pages ? -1 : 1;
        if (x->pid != y->pid)
                return x->pid < y->pid ? -1 : 1;
        return (x->target_node > y->target_node) - (x->target_node < y->target_node);
}

static void jobs_free(struct migrate_job *jobs, size_t n_jobs) {
        for (size_t q = 0; q < n_jobs; q++)
                free(jobs[q].ranges);
        free(jobs);
}

/* A group's shared object, in a job of its own: it goes page by page, each batch
 * checked against the group's mappings (share-check.h). False when the groups were
 * rebuilt without that mapping (the next scan plans it again). */
static bool shared_job(const struct jobs_env *env, const struct proc_rec *p, const struct plan_move *m,
                       struct migrate_job *j) {
        if (!env->shares || !share_groups_check(env->shares, p->cg->turn_uid, p->pid, m->start, &j->share))
                return false;
        j->shared = true;
        return true;
}

/* Adds pl's moves of scan i to the jobs, one job per (scan, target node), and one per
 * shared object. */
static int add_moves(const struct jobs_env *env, struct migrate_job *jobs, size_t *job_scan, size_t *n_jobs,
                     size_t i, const struct scan *sc, const struct plan *pl, size_t ranges_cap) {
        struct proc_rec *p = sc->rec;

        for (size_t k = 0; k < pl->n_moves; k++) {
                struct migrate_job *j = NULL;
                /* One job per target node, kept nodes and kind (and a demotion's fast
                         * node, which its room is credited to): a VMA's move keeps the
                         * slow nodes and a page's move none; merged, the VMA's range would
                         * take the slow node's cold pages too. */
                for (size_t q = 0; q < *n_jobs && !pl->moves[k].shared; q++)
                        if (job_scan[q] == i && jobs[q].target_node == pl->moves[k].target &&
                            nodemask_equal(&jobs[q].keep_nodes, &pl->moves[k].keep) &&
                            jobs[q].promote == pl->moves[k].promote && jobs[q].exchanged == pl->moves[k].exchanged &&
                            jobs[q].demote == pl->moves[k].demote && !jobs[q].shared &&
                            (!jobs[q].demote || jobs[q].demote_from == pl->moves[k].from))
                                j = &jobs[q];
                if (!j) {
                        j = &jobs[*n_jobs];
                        job_scan[(*n_jobs)++] = i;
                        *j = (struct migrate_job) {
                                .pid = p->pid,
                                .pidfd = p->pidfd,
                                .starttime = p->starttime,
                                .target_node = pl->moves[k].target,
                                .keep_nodes = pl->moves[k].keep,
                                .promote = pl->moves[k].promote,
                                .exchanged = pl->moves[k].exchanged,
                                .demote = pl->moves[k].demote,
                                .demote_from = pl->moves[k].demote ? pl->moves[k].from : -1,
                                .cgroup = p->cg->path,
                                .userdata = p,
                        };
                        if (pl->moves[k].shared && !shared_job(env, p, &pl->moves[k], j)) {
                                (*n_jobs)--;
                                continue;
                        }
                        j->ranges = calloc(ranges_cap, sizeof(*j->ranges));
                        if (!j->ranges)
                                return -ENOMEM;
                }
                j->ranges[j->n_ranges++] = (struct migrate_range) {
                        .start = pl->moves[k].start,
                        .end = pl->moves[k].end,
                        .page_size = pl->moves[k].page_size ? pl->moves[k].page_size : page_size(),
                };
                j->max_pages += pl->moves[k].bytes / page_size();
                j->thread_policy |= pl->moves[k].thread_policy;
        }
        return 0;
}

/* The owner whose turn a job takes (cg_rec.turn_uid). */
static uid_t job_owner(const struct migrate_job *j) {
        const struct proc_rec *p = j->userdata;

        return p && p->cg ? p->cg->turn_uid : 0;
}

/* The jobs of several owners take turns in the run's order, one of each owner's
 * (largest first within an owner) and then the next of each: the workers take jobs
 * in order and the run is cut at its time budget, so largest first across everyone
 * let one tenant's thousand processes take every run. Each owner also gets at most
 * its share of the run's bytes (env->run_bytes_max over the owners, at least one
 * job): the rest is planned again at its processes' next scans. Out of memory, the
 * order stays largest first. */
static void take_turns(const struct jobs_env *env, struct migrate_job *jobs, size_t *n_jobs) {
        _cleanup_free_ uid_t *owners = calloc(*n_jobs ? *n_jobs : 1, sizeof(*owners));
        _cleanup_free_ struct migrate_job *ordered = calloc(*n_jobs ? *n_jobs : 1, sizeof(*ordered));
        _cleanup_free_ uint64_t *taken = NULL;
        struct turns t = {};
        size_t n = 0;

        if (!owners || !ordered)
                return;
        for (size_t q = 0; q < *n_jobs; q++)
                owners[q] = job_owner(&jobs[q]);
        if (interleave_by_owner(owners, *n_jobs, NULL, 0, &t) < 0)
                return;
        taken = calloc(t.n_groups ? t.n_groups : 1, sizeof(*taken));
        if (!taken) {
                interleave_turns_done(&t);
                return;
        }
        for (size_t i = 0; i < t.n; i++) {
                struct migrate_job *j = &jobs[t.order[i]];
                uint64_t bytes = j->max_pages * page_size();

                if (move_budget_share_spent(env->run_bytes_max, t.n_groups, taken[t.group[i]], bytes)) {
                        free(j->ranges);       /* over its owner's share: not this run */
                        continue;
                }
                taken[t.group[i]] += bytes;
                ordered[n++] = *j;
        }
        memcpy(jobs, ordered, n * sizeof(*jobs));
        *n_jobs = n;
        interleave_turns_done(&t);
}

/* One job per (process, target node) from the plans of the processes in balance
 * mode, largest first. Returns 0 with *ret (NULL when there is nothing to move). */
static int build_jobs(const struct jobs_env *env, const struct scan *scans, size_t n_scans, struct migrate_job **ret,
                      size_t *ret_n) {
        struct migrate_job *jobs;
        _cleanup_free_ size_t *job_scan = NULL;
        size_t n_jobs = 0, cap = 0;
        int r;

        *ret = NULL;
        *ret_n = 0;
        for (size_t i = 0; i < n_scans; i++)
                cap += scans[i].plan.n_moves + scans[i].pages.n_moves;
        if (cap == 0)
                return 0;
        jobs = calloc(cap, sizeof(*jobs));
        job_scan = calloc(cap, sizeof(*job_scan));
        if (!jobs || !job_scan) {
                free(jobs);
                return -ENOMEM;
        }
        for (size_t i = 0; i < n_scans; i++) {
                const struct proc_rec *p = scans[i].rec;
                size_t n = scans[i].plan.n_moves + scans[i].pages.n_moves;

                if (!n || !cg_mode_moves_now(p->cg->mode, env->dry_run))
                        continue;
                /* The executor moves with MPOL_MF_MOVE but for a group's shared objects:
                 * a page that became shared since the scan is refused by the kernel
                 * ("Shared pages" in the repository's docs/RULES.md). */
                r = add_moves(env, jobs, job_scan, &n_jobs, i, &scans[i], &scans[i].plan, n);
                if (r >= 0)
                        r = add_moves(env, jobs, job_scan, &n_jobs, i, &scans[i], &scans[i].pages, n);
                if (r < 0) {
                        jobs_free(jobs, n_jobs);
                        return r;
                }
        }
        /* Largest gain first within an owner: the workers take jobs in order and the
         * tick waits for all, so a long-lived process with much to move must not queue
         * behind small, often short-lived ones (bench churn); owners take turns. */
        qsort(jobs, n_jobs, sizeof(*jobs), cmp_job_size);
        take_turns(env, jobs, &n_jobs);
        *ret = jobs;
        *ret_n = n_jobs;
        return 0;
}

/* One large job would keep one service CPU busy while the others wait: each job is
 * split among the workers (parts of at least JOBS_SPLIT_MIN_BYTES), so that several service
 * CPUs copy one process's memory in parallel. Out of memory, the jobs run whole. */
static void split_jobs(const struct jobs_env *env, struct migrate_job **jobs, size_t *n_jobs) {
        unsigned workers = migrator_n_workers(env->migrator);
        struct migrate_job *all = NULL;
        size_t n_all = 0;
        int r = 0;

        if (workers <= 1)
                return;
        for (size_t q = 0; q < *n_jobs; q++) {
                _cleanup_free_ struct migrate_job *parts = NULL;
                struct migrate_job *na;
                size_t n_parts = 0;

                r = job_split(&(*jobs)[q], workers, JOBS_SPLIT_MIN_BYTES, &parts, &n_parts);
                if (r < 0)
                        break;
                na = realloc(all, (n_all + n_parts) * sizeof(*na));
                if (!na) {
                        for (size_t k = 0; k < n_parts; k++)
                                free(parts[k].ranges);
                        r = -ENOMEM;
                        break;
                }
                all = na;
                memcpy(all + n_all, parts, n_parts * sizeof(*parts));
                n_all += n_parts;
        }
        if (r < 0) {
                jobs_free(all, n_all);
                return;
        }
        jobs_free(*jobs, *n_jobs);
        *jobs = all;
        *n_jobs = n_all;
}

/* A range moved whole is remembered for the cooldown; single pages are not (their
 * evidence is fresh samples, and they would crowd the VMAs out of the history). */
static bool is_page_range(const struct scan *scans, size_t n_scans, const struct proc_rec *p,
                          const struct migrate_range *r) {
        for (size_t i = 0; i < n_scans; i++)
                if (scans[i].rec == p)
                        for (size_t k = 0; k < scans[i].pages.n_moves; k++)
                                if (r->start >= scans[i].pages.moves[k].start && r->start < scans[i].pages.moves[k].end)
                                        return true;
        return false;
}

/* The check before moving stopped j (move-check.h): remembered for explain, and one
 * line in the journal with the reason as a field. */
static void note_stop(struct proc_rec *p, const struct migrate_job *j) {
        struct log_fields lf = {};

        p->moved.stop = j->stop;
        p->moved.stop_ms = clock_now_ms();
        /* Filled since the scan: planned again as soon as the node has room, as a plan
         * held back at the floor is (room_again). The plan's reason stays: the stop is
         * move_stopped's to say. */
        if (j->stop == &move_stop_target_full)
                p->full_target = j->target_node;
        log_fields_str(&lf, "NUMABALANCED_CGROUP", j->cgroup);
        log_fields_i64(&lf, "NUMABALANCED_PID", j->pid);
        log_fields_str(&lf, "NUMABALANCED_REASON", j->stop->name);
        (void) log_full_errno_fields(LOG_LVL_INFO, 0, &lf, "cgroup=%s pid=%d: migration stopped: %s (%s)",
                                     j->cgroup, (int) j->pid, j->stop->text, j->stop->name);
}

/* A promotion job's bytes moved are counted, and the budget settled with what moved:
 * what it moved beyond its plan (whole transparent huge pages for a sampled base page)
 * is charged, what it did not move (on the target already, gone) given back. */
static void account_promotion(const struct jobs_env *env, const struct migrate_job *j) {
        uint64_t moved = j->pages[MIG_MOVED] * page_size(), planned = j->max_pages * page_size();

        env->counters->promoted_bytes += moved;
        if (env->promote)
                move_budget_promote_settle(env->promote, planned, moved);
}

/* Ranges moved across tiers are noted in the process's record (proc_moves.tier), with
 * their direction (plan.h, rule 8). Expired ones go first; a range that touches a
 * noted one of the same direction widens it; when full, the two closest merge (down if
 * either was), which only widens what is left alone. */
static void tier_insert(struct proc_moves *mv, uint64_t start, uint64_t end, bool down, uint64_t now) {
        size_t at = 0, best = 0;

        for (size_t i = 0; i < mv->n_tier; i++)
                if (mv->tier[i].down == down && mv->tier[i].start <= end && start <= mv->tier[i].end) {
                        mv->tier[i].start = start < mv->tier[i].start ? start : mv->tier[i].start;
                        mv->tier[i].end = end > mv->tier[i].end ? end : mv->tier[i].end;
                        mv->tier[i].at_ms = now;
                        return;
                }
        if (mv->n_tier == PROC_TIER_MAX) {
                for (size_t i = 1; i + 1 < mv->n_tier; i++)
                        if (mv->tier[i + 1].start - mv->tier[i].end < mv->tier[best + 1].start - mv->tier[best].end)
                                best = i;
                mv->tier[best].end = mv->tier[best + 1].end;
                mv->tier[best].at_ms = now;
                mv->tier[best].down |= mv->tier[best + 1].down;     /* widens, never narrows */
                memmove(&mv->tier[best + 1], &mv->tier[best + 2], (mv->n_tier - best - 2) * sizeof(*mv->tier));
                mv->n_tier--;
        }
        while (at < mv->n_tier && mv->tier[at].start < start)
                at++;
        memmove(&mv->tier[at + 1], &mv->tier[at], (mv->n_tier - at) * sizeof(*mv->tier));
        mv->tier[at] = (struct tier_move) { start, end, now, down };
        mv->n_tier++;
}

static void tier_note(struct proc_moves *mv, const struct migrate_job *j, uint64_t cooldown_ms, uint64_t now) {
        size_t k = 0;

        if (!mv->tier && !(mv->tier = calloc(PROC_TIER_MAX, sizeof(*mv->tier))))
                return;         /* out of memory: no cooldown for these */
        for (size_t i = 0; i < mv->n_tier; i++)
                if (now < mv->tier[i].at_ms + cooldown_ms)
                        mv->tier[k++] = mv->tier[i];
        mv->n_tier = k;
        for (size_t r = 0; r < j->n_ranges; r++)
                tier_insert(mv, j->ranges[r].start, j->ranges[r].end, j->demote, now);
}

/* A demotion of the exchange: its bytes moved are counted and credited to promotions
 * onto the node it freed (move-budget.h). */
static void account_demotion(const struct jobs_env *env, const struct migrate_job *j, uint64_t now) {
        uint64_t moved = j->pages[MIG_MOVED] * page_size();
        int idx = topology_node_index(env->check.topo, (unsigned) j->demote_from);

        env->counters->demoted_bytes += moved;
        if (env->promote)
                move_budget_promote_credit(env->promote, idx, moved, now);
}

/* Whether a shared job of p among jobs moved anything. */
static bool shared_moved(const struct migrate_job *jobs, size_t n_jobs, const struct proc_rec *p) {
        for (size_t q = 0; q < n_jobs; q++)
                if (jobs[q].userdata == p && jobs[q].shared && jobs[q].pages[MIG_MOVED])
                        return true;
        return false;
}

/* A shared job's moves and what its check held back, for the reports; a page mapped
 * outside the group is said once a job, at debug level (every tick may find it). The
 * hold (proc_moves.shared_held_until_ms) covers all of p's shared memory, so it is
 * set only when none of p's shared jobs of the run moved anything: one object that an
 * outsider maps (a backend not yet a member sharing the postmaster's copy-on-write
 * heap) must not hold back the others (the shared buffers). */
static void account_shared(const struct jobs_env *env, struct proc_rec *p, const struct migrate_job *j,
                           const struct migrate_job *jobs, size_t n_jobs, uint64_t now) {
        uint64_t held = 0;

        env->counters->shared_moved_bytes += j->pages[MIG_MOVED] * page_size();
        p->cg->shared_moved_bytes += j->pages[MIG_MOVED] * page_size();
        for (unsigned f = 0; f < _SHARE_FAIL_MAX; f++) {
                env->counters->shared_held_bytes[f] += j->share_fails[f] * page_size();
                held += j->share_fails[f];
        }
        if (held && !shared_moved(jobs, n_jobs, p)) {
                p->moved.shared_held_until_ms = now + env->check.cfg->cooldown_ms;
                p->moved.shared_held_group = share_groups_signature(env->shares, p->cg->turn_uid, p->pid);
        }
        if (held)
                log_debug("cgroup=%s pid=%d: %" PRIu64 " shared page(s) not moved: %" PRIu64 " mapped outside its group, "
                          "%" PRIu64 " in a member's cpuset that does not allow node %d, %" PRIu64
                          " huge or KSM, %" PRIu64 " of unreadable frames",
                          j->cgroup, (int) j->pid, held, j->share_fails[SHARE_FAIL_OUTSIDE],
                          j->share_fails[SHARE_FAIL_MEMBER], j->target_node, j->share_fails[SHARE_FAIL_HUGE],
                          j->share_fails[SHARE_FAIL_FRAMES]);
}

/* The results: counts per process, per cgroup and in total; ranges moved into the
 * process's history. */
static void account_jobs(const struct jobs_env *env, const struct scan *scans, size_t n_scans,
                         const struct migrate_job *jobs, size_t n_jobs, uint64_t now) {
        for (size_t q = 0; q < n_jobs; q++) {
                const struct migrate_job *j = &jobs[q];
                struct proc_rec *p = j->userdata;

                for (int c = 0; c < _MIG_CLASS_MAX; c++) {
                        p->moved.pages[c] += j->pages[c];
                        p->cg->pages[c] += j->pages[c];
                        env->counters->total_pages[c] += j->pages[c];
                }
                counters_moved(env->counters, j->pages[MIG_MOVED] * page_size());
                if (j->promote)
                        account_promotion(env, j);
                if (j->demote)
                        account_demotion(env, j, now);
                if ((j->promote || j->demote) && j->pages[MIG_MOVED])
                        tier_note(&p->moved, j, env->check.cfg->cooldown_ms, now);
                if (j->shared)
                        account_shared(env, p, j, jobs, n_jobs, now);
                histogram_add(&env->counters->move_calls, &j->move_calls);
                if (j->stop)
                        note_stop(p, j);
                /* -ECANCELED: the run's time budget (the next tick continues) or
                 * SIGTERM, neither news about this process. */
                else if (j->error && j->error != -ECANCELED)
                        log_info_errno(j->error, "cgroup=%s pid=%d: migration stopped: %m", j->cgroup, (int) j->pid);
                if (j->pages[MIG_MOVED])
                        for (size_t k = 0; k < j->n_ranges; k++)
                                if (!is_page_range(scans, n_scans, p, &j->ranges[k]))
                                        history_note(&p->moved, j->ranges[k].start, j->target_node, now);
        }
}

/* The event-loop thread's part of the run since t0 (building, splitting, checking and
 * accounting the jobs), less the control requests served meanwhile. */
static uint64_t main_thread_ns(const struct jobs_env *env, uint64_t t0, uint64_t pump0) {
        uint64_t spent = cost_thread_ns() - t0, pumped = env->pump_ns ? *env->pump_ns - pump0 : 0;

        return spent > pumped ? spent - pumped : 0;
}

int jobs_run(const struct jobs_env *env, const struct scan *scans, size_t n_scans, uint64_t now,
             uint64_t *ret_charged) {
        uint64_t t0 = cost_thread_ns(), pump0 = env->pump_ns ? *env->pump_ns : 0, main_ns;
        struct move_check *check = NULL;
        struct migrate_job *jobs = NULL;
        size_t n_jobs = 0;
        int r;

        *ret_charged = 0;
        r = build_jobs(env, scans, n_scans, &jobs, &n_jobs);
        if (r < 0 || n_jobs == 0) {
                free(jobs);
                return r;
        }
        split_jobs(env, &jobs, &n_jobs);
        /* Each job (each part: parts run side by side) checks again, before each batch
         * and each move call, that its plan still holds (move-check.h). */
        r = move_check_prepare(&env->check, jobs, n_jobs, &check);
        if (r < 0) {
                log_error_errno(r, "Failed to prepare the checks before moving, moving nothing this tick: %m");
                jobs_free(jobs, n_jobs);
                return 0;
        }
        if (env->run_jobs)
                r = env->run_jobs(env->run_jobs_userdata, jobs, n_jobs);
        else
                r = migrator_run(env->migrator, jobs, n_jobs);
        if (r < 0)
                log_error_errno(r, "Failed to run migration jobs: %m");
        account_jobs(env, scans, n_scans, jobs, n_jobs, now);
        /* Whatever is left of the main thread's part (nothing ran: no worker time to
         * share it by) stays unattributed. */
        main_ns = main_thread_ns(env, t0, pump0);
        *ret_charged = main_ns - cost_charge_run(env->cost, jobs, n_jobs, main_ns);
        jobs_free(jobs, n_jobs);
        move_check_free(check);
        return 0;
}
