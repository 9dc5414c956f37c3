/* SPDX-License-Identifier: GPL-2.0-or-later */
/* From plans to moves (daemon/jobs.h) on their own, without a tick and without struct
 * manager: scans built by hand, the run replaced by a recorder (env.run_jobs) that
 * keeps what it was given and says what moved. One job per (process, target, kept nodes), only
 * for processes in balance mode and never in a dry run; largest first, owners taking
 * turns; the results land in the records, the counters and the ledger; a stopped job
 * says why. The checks before moving are prepared (env.check: the default config, the
 * stored topology sys/2n2c) but the recorder does not call them (test-move-check.c). */
#include <stdlib.h>
#include "config.h"
#include "jobs.h"
#include "share-groups.h"
#include "pagesize.h"
#include "placer.h"
#include "test.h"
#include "topology.h"

#define MIB (UINT64_C(1) << 20)
#define RAN_MAX 16

static struct topology *topo;

/* What the run was given, in order, and what it says happened. */
struct ran_job {
        pid_t pid;
        int target;
        size_t n_ranges;
        uint64_t first_start, max_pages, starttime;
        const char *cgroup;
        void *userdata;
        bool checked;             /* may_move is the check before moving, with a context of its own */
        void *ctx;
        bool thread_policy;
        nb_nodemask keep_nodes;
        bool promote, demote;
        int demote_from;
};

static struct {
        struct ran_job job[RAN_MAX];
        size_t n;
        unsigned calls;
        /* The script: per pid (5..8), the worker's CPU time per job, a stop, and which
         * share of each job's pages moved (the rest: MIG_ALREADY and MIG_BUSY). */
        uint64_t cpu_ns[16];
        const struct migrate_stop *stop[16];
        unsigned moved_pct;       /* 0: 100 */
        uint64_t promote_extra;   /* pages a promotion job moves beyond max_pages (whole THPs) */
        uint64_t hold_start;      /* a shared job whose first range starts here moves nothing:
                                   * its check held every page back (outside-group) */
        int ret;                  /* what the run returns */
} ran;

static void script_reset(void) {
        ran = (typeof(ran)) {};
        for (int i = 0; i < 16; i++)
                ran.cpu_ns[i] = 1000;
}

static int recorder(void *userdata, struct migrate_job *jobs, size_t n_jobs) {
        ran.calls++;
        ran.n = 0;
        for (size_t q = 0; q < n_jobs; q++) {
                struct migrate_job *j = &jobs[q];
                int i = j->pid & 15;

                if (ran.n < RAN_MAX)
                        ran.job[ran.n++] = (struct ran_job) {
                                .pid = j->pid, .target = j->target_node, .n_ranges = j->n_ranges,
                                .first_start = j->n_ranges ? j->ranges[0].start : 0, .max_pages = j->max_pages,
                                .starttime = j->starttime, .cgroup = j->cgroup, .userdata = j->userdata,
                                .checked = j->may_move == move_check_job && j->may_move_ctx, .ctx = j->may_move_ctx,
                                .thread_policy = j->thread_policy,
                                .keep_nodes = j->keep_nodes, .promote = j->promote,
                                .demote = j->demote, .demote_from = j->demote_from,
                        };
                j->cpu_ns = ran.cpu_ns[i];
                if (ran.stop[i]) {
                        j->stop = ran.stop[i];
                        j->error = -ESTALE;
                        continue;
                }
                if (j->shared && j->n_ranges && j->ranges[0].start == ran.hold_start) {
                        j->share_fails[SHARE_FAIL_OUTSIDE] = j->max_pages;
                        continue;
                }
                if (ran.moved_pct) {
                        uint64_t moved = j->max_pages * ran.moved_pct / 100;

                        j->pages[MIG_MOVED] = moved;
                        j->pages[MIG_ALREADY] = (j->max_pages - moved) / 2;
                        j->pages[MIG_BUSY] = j->max_pages - moved - j->pages[MIG_ALREADY];
                } else
                        j->pages[MIG_MOVED] = j->max_pages + (j->promote ? ran.promote_extra : 0);
        }
        return ran.ret;
}

/* A plan of n moves of mib MiB each to target, the first at start. */
static struct plan plan_of(size_t n, uint64_t start, uint64_t mib, int target) {
        struct plan p = { .moves = calloc(n ? n : 1, sizeof(*p.moves)), .n_moves = n, .hot_node = target,
                          .full_target = -1 };

        for (size_t i = 0; i < n; i++) {
                uint64_t s = start + i * (mib * MIB + 0x100000);
                p.moves[i] = (struct plan_move) { .start = s, .end = s + mib * MIB, .target = target,
                                                  .bytes = mib * MIB, .page_size = page_size() };
                p.bytes += mib * MIB;
        }
        return p;
}

/* pid 5: root's, 8 MiB to node 1 (VMA-level) and 4 MiB to node 0 (page-level);
 * pid 6: an advise-mode cgroup's, 2 x 16 MiB to node 1;
 * pid 7: the tenant's (uid 1000), 2 x 32 MiB to node 1;
 * pid 8: the tenant's, 32 MiB to node 1. */
struct world {
        struct nb_config cfg;
        struct cost_ledger cost;
        struct counters counters;
        struct jobs_env env;
        struct cg_rec cgs[3];
        struct proc_rec procs[4];
        struct scan scans[4];
};

static void world_start(struct world *w) {
        *w = (struct world) {};
        script_reset();
        config_defaults(&w->cfg);
        w->env = (struct jobs_env) {
                .check = { .cfg = &w->cfg, .topo = topo, .proc_root = "/nonexistent",
                           .sys_root = TEST_DATA_DIR "/sys/2n2c" },
                .cost = &w->cost,
                .counters = &w->counters,
                .run_jobs = recorder,
        };
        w->cgs[0] = (struct cg_rec) { .path = "/root.slice", .mode = CG_MODE_BALANCE, .turn_uid = 0 };
        w->cgs[1] = (struct cg_rec) { .path = "/tenant.slice", .mode = CG_MODE_BALANCE, .turn_uid = 1000 };
        w->cgs[2] = (struct cg_rec) { .path = "/watch.slice", .mode = CG_MODE_ADVISE, .turn_uid = 0 };
        for (int i = 0; i < 4; i++)
                w->procs[i] = (struct proc_rec) { .pid = 5 + i, .starttime = 100 + i, .pidfd = -1, .full_target = -1,
                                                  .target_node = -1 };
        w->procs[0].cg = &w->cgs[0];
        w->procs[1].cg = &w->cgs[2];
        w->procs[2].cg = &w->cgs[1];
        w->procs[3].cg = &w->cgs[1];
        for (int i = 0; i < 4; i++)
                w->scans[i].rec = &w->procs[i];
        w->scans[0].plan = plan_of(1, 0x10000000, 8, 1);
        w->scans[0].pages = plan_of(1, 0x20000000, 4, 0);
        w->scans[1].plan = plan_of(2, 0x10000000, 16, 1);
        w->scans[2].plan = plan_of(2, 0x10000000, 32, 1);
        w->scans[3].plan = plan_of(1, 0x10000000, 32, 1);
}

static void world_done(struct world *w) {
        for (int i = 0; i < 4; i++) {
                scan_done(&w->scans[i]);
                free(w->procs[i].moved.hist);
                free(w->procs[i].moved.tier);
        }
        cost_ledger_done(&w->cost);
        config_done(&w->cfg);
}

static uint64_t mib_of(uint64_t pages) {
        return pages * page_size() / MIB;
}

TEST(one_job_per_process_and_target_owners_taking_turns) {
        struct world w;
        uint64_t charged = 1;

        world_start(&w);
        CHECK_INT(jobs_run(&w.env, w.scans, 4, 1000, &charged), 0);
        CHECK_INT(ran.calls, 1);
        /* pid 6 (advise) has none; pid 5 two (two targets); the tenant's largest first,
         * root's in between: 7 (64 MiB), 5 (8 MiB), 8 (32 MiB), 5 (4 MiB). */
        CHECK_INT(ran.n, 4);
        if (ran.n == 4) {
                CHECK(ran.job[0].pid == 7 && ran.job[1].pid == 5 && ran.job[2].pid == 8 && ran.job[3].pid == 5);
                CHECK(ran.job[1].target == 1 && ran.job[3].target == 0);
                CHECK_INT(ran.job[0].n_ranges, 2);   /* both of pid 7's VMAs to node 1: one job */
                CHECK_INT(mib_of(ran.job[0].max_pages), 64);
                CHECK_INT(mib_of(ran.job[1].max_pages), 8);
                CHECK_INT(mib_of(ran.job[3].max_pages), 4);
                CHECK_INT(ran.job[3].first_start, 0x20000000);
                CHECK_STR(ran.job[0].cgroup, "/tenant.slice");
                CHECK_STR(ran.job[1].cgroup, "/root.slice");
                CHECK_INT(ran.job[0].starttime, 102);
                CHECK(ran.job[0].userdata == &w.procs[2] && ran.job[1].userdata == &w.procs[0]);
                /* Each checked before it moves, each with a context of its own. */
                for (size_t q = 0; q < 4; q++) {
                        CHECK(ran.job[q].checked);
                        for (size_t k = 0; k < q; k++)
                                CHECK(ran.job[q].ctx != ran.job[k].ctx);
                }
        }
        /* The results: records, cgroups, counters. */
        CHECK_INT(mib_of(w.procs[2].moved.pages[MIG_MOVED]), 64);
        CHECK_INT(mib_of(w.procs[3].moved.pages[MIG_MOVED]), 32);
        CHECK_INT(mib_of(w.procs[0].moved.pages[MIG_MOVED]), 12);
        CHECK_INT(mib_of(w.cgs[1].pages[MIG_MOVED]), 96);
        CHECK_INT(mib_of(w.cgs[0].pages[MIG_MOVED]), 12);
        CHECK_INT(w.procs[1].moved.pages[MIG_MOVED], 0);
        CHECK_INT(w.cgs[2].pages[MIG_MOVED], 0);
        CHECK_INT(mib_of(w.counters.total_pages[MIG_MOVED]), 108);
        CHECK_INT(counters_moved_last_minute(&w.counters), 108 * MIB);
        /* The VMA ranges are remembered for the cooldown, at now, with their target; the
         * page range (pid 5's 4 MiB to node 0) is not. */
        CHECK_INT(w.procs[2].moved.n_hist, 2);
        CHECK_INT(w.procs[3].moved.n_hist, 1);
        CHECK_INT(w.procs[0].moved.n_hist, 1);
        CHECK(w.procs[0].moved.n_hist == 1 && w.procs[0].moved.hist[0].start == 0x10000000 && w.procs[0].moved.hist[0].target == 1 &&
              w.procs[0].moved.hist[0].when_ms == 1000);
        CHECK_INT(w.procs[1].moved.n_hist, 0);
        /* Nothing stopped. */
        for (int i = 0; i < 4; i++)
                CHECK(w.procs[i].moved.stop == NULL && w.procs[i].full_target == -1);
        world_done(&w);
}

/* A process whose threads are placed has its memory follow them only: pid 5 placed on
 * node 0 keeps its page-level 4 MiB there and loses its 8 MiB to node 1; pid 7, placed
 * nowhere, and pid 8, with no placement, keep theirs. */
TEST(placed_processes_move_only_to_their_node) {
        struct proc_place on_node_0 = { .placed = 0 }, nowhere = { .placed = -1 };
        struct world w;
        uint64_t charged = 0;

        world_start(&w);
        w.procs[0].place = &on_node_0;
        w.procs[2].place = &nowhere;
        jobs_keep_placed_targets(topo, w.scans, 4);
        CHECK(w.scans[0].plan.n_moves == 0 && w.scans[0].pages.n_moves == 1);
        CHECK(w.scans[2].plan.n_moves == 2 && w.scans[3].plan.n_moves == 1);
        CHECK_INT(jobs_run(&w.env, w.scans, 4, 1000, &charged), 0);
        CHECK_INT(ran.n, 3);
        for (size_t q = 0; q < ran.n; q++)
                CHECK(ran.job[q].pid != 5 || ran.job[q].target == 0);
        world_done(&w);
}

/* One owner: largest first throughout (then by pid and target). */
TEST(largest_first_within_an_owner) {
        struct world w;
        uint64_t charged;

        world_start(&w);
        w.cgs[1].turn_uid = 0;
        CHECK_INT(jobs_run(&w.env, w.scans, 4, 1000, &charged), 0);
        CHECK_INT(ran.n, 4);
        if (ran.n == 4) {
                CHECK(ran.job[0].pid == 7 && ran.job[1].pid == 8 && ran.job[2].pid == 5 && ran.job[3].pid == 5);
                for (size_t q = 1; q < 4; q++)
                        CHECK(ran.job[q - 1].max_pages >= ran.job[q].max_pages);
        }
        world_done(&w);
}

/* A dry run, or only advise-mode cgroups: no job, the run not even called, nothing
 * accounted or charged. */
TEST(dry_run_and_advise_move_nothing) {
        for (int dry = 0; dry <= 1; dry++) {
                struct world w;
                uint64_t charged = 1;

                world_start(&w);
                if (dry)
                        w.env.dry_run = true;
                else
                        for (int i = 0; i < 2; i++)
                                w.cgs[i].mode = CG_MODE_ADVISE;
                CHECK_INT(jobs_run(&w.env, w.scans, 4, 1000, &charged), 0);
                CHECK_INT(ran.calls, 0);
                CHECK_INT(charged, 0);
                for (int i = 0; i < 4; i++)
                        CHECK(w.procs[i].moved.pages[MIG_MOVED] == 0 && w.procs[i].moved.n_hist == 0);
                CHECK_INT(w.counters.total_pages[MIG_MOVED], 0);
                CHECK_INT(counters_moved_last_minute(&w.counters), 0);
                CHECK_INT(w.cost.total_ns[STAGE_MIGRATE], 0);
                world_done(&w);
        }
}

/* No plan with a move: nothing to run. */
TEST(nothing_planned_nothing_run) {
        struct world w;
        uint64_t charged = 1;

        world_start(&w);
        CHECK_INT(jobs_run(&w.env, w.scans, 0, 1000, &charged), 0);
        CHECK_INT(ran.calls, 0);
        CHECK_INT(charged, 0);
        world_done(&w);
}

/* Each class of the results to the process, its cgroup and the totals; only the pages
 * moved count as bytes moved in the last minute. */
TEST(every_class_accounted) {
        struct world w;
        uint64_t charged, sum[_MIG_CLASS_MAX] = {};

        world_start(&w);
        ran.moved_pct = 50;
        CHECK_INT(jobs_run(&w.env, w.scans, 4, 1000, &charged), 0);
        /* pid 7: 64 MiB asked, half moved, the rest split between already and busy. */
        CHECK_INT(mib_of(w.procs[2].moved.pages[MIG_MOVED]), 32);
        CHECK_INT(mib_of(w.procs[2].moved.pages[MIG_ALREADY]), 16);
        CHECK_INT(mib_of(w.procs[2].moved.pages[MIG_BUSY]), 16);
        for (int c = 0; c < _MIG_CLASS_MAX; c++) {
                for (int i = 0; i < 4; i++)
                        sum[c] += w.procs[i].moved.pages[c];
                CHECK_INT(w.cgs[0].pages[c] + w.cgs[1].pages[c] + w.cgs[2].pages[c], sum[c]);
                CHECK_INT(w.counters.total_pages[c], sum[c]);
                CHECK_INT(w.cgs[1].pages[c], w.procs[2].moved.pages[c] + w.procs[3].moved.pages[c]);
        }
        CHECK_INT(mib_of(sum[MIG_MOVED]), 54);
        CHECK_INT(counters_moved_last_minute(&w.counters), sum[MIG_MOVED] * page_size());
        /* A range moved in part is remembered too (the cooldown). */
        CHECK_INT(w.procs[2].moved.n_hist, 2);
        world_done(&w);
}

/* A second run: the same ranges' history is updated (when, target), not duplicated;
 * the counts add up. */
TEST(history_updated_not_duplicated) {
        struct world w;
        uint64_t charged;

        world_start(&w);
        CHECK_INT(jobs_run(&w.env, w.scans, 4, 1000, &charged), 0);
        CHECK_INT(w.procs[2].moved.n_hist, 2);
        w.scans[2].plan.moves[0].target = 0;
        w.scans[2].plan.moves[1].target = 0;
        CHECK_INT(jobs_run(&w.env, w.scans, 4, 5000, &charged), 0);
        CHECK_INT(w.procs[2].moved.n_hist, 2);
        for (size_t i = 0; i < w.procs[2].moved.n_hist; i++)
                CHECK(w.procs[2].moved.hist[i].when_ms == 5000 && w.procs[2].moved.hist[i].target == 0);
        CHECK_INT(mib_of(w.procs[2].moved.pages[MIG_MOVED]), 128);
        CHECK_INT(mib_of(w.counters.total_pages[MIG_MOVED]), 216);
        world_done(&w);
}

/* The workers' time to each job's process through the ledger, and the event-loop
 * thread's part (ret_charged) shared in proportion: each process gets at least its
 * jobs' cpu_ns and at most that plus the shared part; the totals are the cgroups' sum,
 * which is the workers' time plus what was charged. */
TEST(cpu_time_charged_through_the_ledger) {
        struct world w;
        uint64_t charged = 0, procs = 0;
        const uint64_t g = 1000000000;

        world_start(&w);
        ran.cpu_ns[5] = 1 * g;   /* per job: two jobs */
        ran.cpu_ns[7] = 3 * g;
        ran.cpu_ns[8] = 2 * g;
        CHECK_INT(jobs_run(&w.env, w.scans, 4, 1000, &charged), 0);
        CHECK(w.procs[0].cost_ns[STAGE_MIGRATE] >= 2 * g && w.procs[0].cost_ns[STAGE_MIGRATE] <= 2 * g + charged);
        CHECK(w.procs[2].cost_ns[STAGE_MIGRATE] >= 3 * g && w.procs[2].cost_ns[STAGE_MIGRATE] <= 3 * g + charged);
        CHECK(w.procs[3].cost_ns[STAGE_MIGRATE] >= 2 * g && w.procs[3].cost_ns[STAGE_MIGRATE] <= 2 * g + charged);
        CHECK_INT(w.procs[1].cost_ns[STAGE_MIGRATE], 0);
        CHECK_INT(w.cgs[2].cost_ns[STAGE_MIGRATE], 0);
        for (int i = 0; i < 4; i++)
                procs += w.procs[i].cost_ns[STAGE_MIGRATE];
        CHECK_INT(w.cgs[0].cost_ns[STAGE_MIGRATE], w.procs[0].cost_ns[STAGE_MIGRATE]);
        CHECK_INT(w.cgs[1].cost_ns[STAGE_MIGRATE],
                  w.procs[2].cost_ns[STAGE_MIGRATE] + w.procs[3].cost_ns[STAGE_MIGRATE]);
        CHECK_INT(w.cost.total_ns[STAGE_MIGRATE],
                  w.cgs[0].cost_ns[STAGE_MIGRATE] + w.cgs[1].cost_ns[STAGE_MIGRATE] + w.cgs[2].cost_ns[STAGE_MIGRATE]);
        CHECK_INT(w.cost.total_ns[STAGE_MIGRATE], procs);
        CHECK_INT(w.cost.total_ns[STAGE_MIGRATE], 7 * g + charged);
        /* Only the migrate stage. */
        for (int s = 0; s < _STAGE_MAX; s++)
                if (s != STAGE_MIGRATE)
                        CHECK_INT(w.cost.total_ns[s], 0);
        world_done(&w);
}

/* Shared by the processes' workers' time: with none (the jobs took no time), the
 * event-loop thread's part stays unattributed: nothing charged. */
TEST(no_worker_time_nothing_charged) {
        struct world w;
        uint64_t charged = 1;

        world_start(&w);
        for (int i = 0; i < 16; i++)
                ran.cpu_ns[i] = 0;
        CHECK_INT(jobs_run(&w.env, w.scans, 4, 1000, &charged), 0);
        CHECK_INT(ran.n, 4);
        CHECK_INT(charged, 0);
        CHECK_INT(w.cost.total_ns[STAGE_MIGRATE], 0);
        CHECK_INT(mib_of(w.counters.total_pages[MIG_MOVED]), 108);
        world_done(&w);
}

/* With a share of the run's bytes: 40 MiB over two owners, 20 MiB each, at least one
 * job: the tenant's 64 MiB job and root's two. */
TEST(each_owner_within_its_share) {
        struct world w;
        uint64_t charged;

        world_start(&w);
        w.env.run_bytes_max = 40 * MIB;
        CHECK_INT(jobs_run(&w.env, w.scans, 4, 1000, &charged), 0);
        CHECK_INT(ran.n, 3);
        CHECK(ran.n == 3 && ran.job[0].pid == 7 && ran.job[1].pid == 5 && ran.job[2].pid == 5);
        CHECK_INT(w.procs[3].moved.pages[MIG_MOVED], 0);
        CHECK_INT(w.procs[3].moved.n_hist, 0);
        world_done(&w);
}

/* A job stopped by its check: the record says why (and when); a target that filled
 * is scanned again as soon as it has room (full_target); nothing moved, nothing
 * remembered for the cooldown. Another stop leaves full_target alone. */
TEST(a_stopped_job_is_remembered) {
        struct world w;
        uint64_t charged;

        world_start(&w);
        ran.stop[7] = &move_stop_target_full;
        ran.stop[8] = &move_stop_exec;
        CHECK_INT(jobs_run(&w.env, w.scans, 4, 1000, &charged), 0);
        CHECK(w.procs[2].moved.stop == &move_stop_target_full);
        CHECK_INT(w.procs[2].full_target, 1);
        CHECK(w.procs[2].moved.stop_ms > 0);
        CHECK_INT(w.procs[2].moved.pages[MIG_MOVED], 0);
        CHECK_INT(w.procs[2].moved.n_hist, 0);
        CHECK(w.procs[3].moved.stop == &move_stop_exec);
        CHECK_INT(w.procs[3].full_target, -1);
        CHECK_INT(w.procs[3].moved.n_hist, 0);
        CHECK(w.procs[0].moved.stop == NULL);
        CHECK_INT(w.procs[0].full_target, -1);
        CHECK_INT(mib_of(w.counters.total_pages[MIG_MOVED]), 12);
        /* The time of a stopped job is charged all the same. */
        CHECK(w.procs[2].cost_ns[STAGE_MIGRATE] >= 1000);
        world_done(&w);
}

/* A run that fails (logged) still has its jobs' counts accounted: they are exact. */
TEST(a_failed_run_is_accounted) {
        struct world w;
        uint64_t charged;

        world_start(&w);
        ran.ret = -EIO;
        CHECK_INT(jobs_run(&w.env, w.scans, 4, 1000, &charged), 0);
        CHECK_INT(mib_of(w.counters.total_pages[MIG_MOVED]), 108);
        CHECK_INT(w.procs[2].moved.n_hist, 2);
        world_done(&w);
}

static int intro(void) {
        return topology_read(TEST_DATA_DIR "/sys/2n2c", &topo) < 0;
}

static void outro(void) {
        topology_free(topo);
}

DEFINE_TEST_MAIN_FULL(intro, outro)

/* A VMA's move keeps the slow node 2 and a page's move (a promotion) keeps none: to the
 * same node they are two jobs, or the VMA's range would take node 2's cold pages too.
 * What the promotion moved is counted, and what it moved beyond its plan (a whole
 * transparent huge page for a sampled base page) is charged to the budget: 1 MiB from
 * what was left, 1 MiB as debt. */
/* The exchange (plan.h, rule 8): a demotion runs as a job of its own, what it moved
 * is counted and credited to promotions onto the node it freed, and its range and the
 * promotion's are noted as moved across tiers (neither way again within the cooldown;
 * expired notes go). */
TEST(demotions_credited_and_noted) {
        static struct move_budget_promote budget;
        struct world w;
        uint64_t charged;

        world_start(&w);
        budget = (struct move_budget_promote) { .left = 64 * MIB, .started = true };
        w.env.promote = &budget;
        plan_done(&w.scans[0].plan);
        plan_done(&w.scans[0].pages);
        w.scans[0].plan = plan_of(0, 0, 0, 0);
        w.scans[0].pages = plan_of(2, 0x20000000, 4, 1);
        /* Served for another process's wait: this one waits for nothing itself. */
        w.scans[0].pages.exchange_node = -1;
        w.scans[0].pages.moves[0].demote = true;
        w.scans[0].pages.moves[0].from = 0;
        nodemask_set(&w.scans[0].pages.moves[0].keep, 1);
        w.scans[0].pages.moves[1].target = 0;
        w.scans[0].pages.moves[1].promote = true;
        CHECK_INT(jobs_run(&w.env, &w.scans[0], 1, 100000, &charged), 0);
        CHECK_INT(ran.n, 2);
        for (size_t q = 0; q < ran.n && ran.n == 2; q++)
                if (ran.job[q].demote) {
                        CHECK_INT(ran.job[q].target, 1);
                        CHECK_INT(ran.job[q].demote_from, 0);
                        CHECK(nodemask_test(&ran.job[q].keep_nodes, 1));
                } else
                        CHECK(ran.job[q].promote);
        CHECK_INT(w.counters.demoted_bytes, 4 * MIB);
        CHECK_INT(budget.credit[topology_node_index(topo, 0)], 4 * MIB);
        CHECK_INT(w.procs[0].moved.n_tier, 2);
        if (w.procs[0].moved.n_tier == 2) {
                CHECK_INT(w.procs[0].moved.tier[0].start, 0x20000000);
                CHECK_INT(w.procs[0].moved.tier[0].at_ms, 100000);
        }
        /* A later run, past the cooldown: the old notes go, the new one stays. */
        plan_done(&w.scans[0].pages);
        w.scans[0].pages = plan_of(1, 0x40000000, 4, 0);
        w.scans[0].pages.moves[0].promote = true;
        CHECK_INT(jobs_run(&w.env, &w.scans[0], 1, 100000 + w.cfg.cooldown_ms, &charged), 0);
        CHECK_INT(w.procs[0].moved.n_tier, 1);
        if (w.procs[0].moved.n_tier == 1)
                CHECK_INT(w.procs[0].moved.tier[0].start, 0x40000000);
        world_done(&w);
}

/* A process's shared memory is held for the cooldown only when none of its shared
 * jobs of the run moved anything: an object an outsider maps does not hold back the
 * process's other objects. */
TEST(shared_hold_only_when_nothing_moved) {
        struct share_peer peers[2] = { { 5, 100, 0x30000000, 0x30400000, 0x30000000 },
                                       { 5, 100, 0x50000000, 0x50400000, 0x50000000 } };
        struct share_obj objs[2] = { { .maps = &peers[0], .n_maps = 1, .target = 1 },
                                     { .maps = &peers[1], .n_maps = 1, .target = 1 } };
        struct share_groups g = { .topo = topo, .objs = objs, .n_objs = 2 };
        struct world w;
        uint64_t charged;

        world_start(&w);
        w.env.shares = &g;
        plan_done(&w.scans[0].plan);
        plan_done(&w.scans[0].pages);
        w.scans[0].pages = plan_of(0, 0, 0, 0);
        w.scans[0].plan = plan_of(2, 0x30000000, 4, 1);
        w.scans[0].plan.moves[1].start = 0x50000000;
        w.scans[0].plan.moves[1].end = 0x50400000;
        w.scans[0].plan.moves[0].shared = w.scans[0].plan.moves[1].shared = true;
        ran.hold_start = 0x30000000;
        CHECK_INT(jobs_run(&w.env, &w.scans[0], 1, 1000, &charged), 0);
        CHECK_INT(ran.n, 2);
        CHECK_INT(w.counters.shared_moved_bytes, 4 * MIB);
        CHECK_INT(w.procs[0].moved.shared_held_until_ms, 0);

        /* Only the object the outsider maps: held for the cooldown. */
        w.scans[0].plan.n_moves = 1;
        CHECK_INT(jobs_run(&w.env, &w.scans[0], 1, 2000, &charged), 0);
        CHECK_INT(w.procs[0].moved.shared_held_until_ms, 2000 + w.cfg.cooldown_ms);
        world_done(&w);
}

TEST(slow_node_kept_and_promotions_charged) {
        struct move_budget_promote budget = { .left = MIB, .started = true };
        struct world w;
        uint64_t charged;

        world_start(&w);
        w.env.promote = &budget;
        ran.promote_extra = 2 * MIB / page_size();
        nodemask_set(&w.scans[0].plan.moves[0].keep, 2);
        plan_done(&w.scans[0].pages);
        w.scans[0].pages = plan_of(1, 0x20000000, 4, 1);
        w.scans[0].pages.moves[0].promote = true;
        CHECK_INT(jobs_run(&w.env, &w.scans[0], 1, 1000, &charged), 0);
        CHECK_INT(ran.n, 2);
        for (size_t q = 0; q < ran.n && ran.n == 2; q++) {
                CHECK_INT(ran.job[q].target, 1);
                if (ran.job[q].promote) {
                        CHECK(nodemask_empty(&ran.job[q].keep_nodes));
                        CHECK_INT(mib_of(ran.job[q].max_pages), 4);
                } else {
                        CHECK(nodemask_test(&ran.job[q].keep_nodes, 2));
                        CHECK_INT(mib_of(ran.job[q].max_pages), 8);
                }
        }
        CHECK(ran.job[0].promote != ran.job[1].promote);
        CHECK_INT(w.counters.promoted_bytes, 6 * MIB);
        CHECK_INT(budget.left, 0);
        CHECK_INT(budget.debt, MIB);

        /* Again, half of each job moved (the rest was on the target already): the
         * promotion's unmoved 2 MiB is given back. */
        ran.moved_pct = 50;
        budget = (struct move_budget_promote) { .started = true };
        CHECK_INT(jobs_run(&w.env, &w.scans[0], 1, 2000, &charged), 0);
        CHECK_INT(w.counters.promoted_bytes, 8 * MIB);
        CHECK_INT(budget.left, 2 * MIB);
        world_done(&w);
}
