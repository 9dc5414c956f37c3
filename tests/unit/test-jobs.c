/* SPDX-License-Identifier: GPL-2.0-or-later */
/* From plans to moves (daemon/jobs.h) on their own, without a tick: scans built by
 * hand, the run replaced by a recorder. One job per (process, target), only for
 * processes in balance mode and never in a dry run; owners take turns; the results
 * land in the records, the counters and the ledger; a stopped job says why. */
#include <stdlib.h>
#include "config.h"
#include "jobs.h"
#include "pagesize.h"
#include "test.h"
#include "topology.h"

#define MIB (UINT64_C(1) << 20)

static struct topology *topo;

/* The run: what it was given, in order; each job moved all, or was stopped. */
static struct {
        pid_t pid[16];
        int target[16];
        size_t n_ranges[16];
        size_t n;
        const struct migrate_stop *stop_pid_7;   /* pid 7's job is stopped with it */
} ran;

static int recorder(void *userdata, struct migrate_job *jobs, size_t n_jobs) {
        ran.n = 0;
        for (size_t q = 0; q < n_jobs; q++) {
                if (ran.n < 16) {
                        ran.pid[ran.n] = jobs[q].pid;
                        ran.target[ran.n] = jobs[q].target_node;
                        ran.n_ranges[ran.n] = jobs[q].n_ranges;
                        ran.n++;
                }
                jobs[q].cpu_ns = 1000;
                if (jobs[q].pid == 7 && ran.stop_pid_7) {
                        jobs[q].stop = ran.stop_pid_7;
                        jobs[q].error = -ESTALE;
                        continue;
                }
                jobs[q].pages[MIG_MOVED] = jobs[q].max_pages;
        }
        return 0;
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
        config_defaults(&w->cfg);
        w->env = (struct jobs_env) {
                .check = { .cfg = &w->cfg, .topo = topo, .proc_root = "/nonexistent", .sys_root = "/nonexistent" },
                .cost = &w->cost,
                .counters = &w->counters,
                .run_jobs = recorder,
        };
        w->cgs[0] = (struct cg_rec) { .path = "/root.slice", .mode = CG_MODE_BALANCE, .turn_uid = 0 };
        w->cgs[1] = (struct cg_rec) { .path = "/tenant.slice", .mode = CG_MODE_BALANCE, .turn_uid = 1000 };
        w->cgs[2] = (struct cg_rec) { .path = "/watch.slice", .mode = CG_MODE_ADVISE, .turn_uid = 0 };
        for (int i = 0; i < 4; i++)
                w->procs[i] = (struct proc_rec) { .pid = 5 + i, .pidfd = -1, .full_target = -1 };
        w->procs[0].cg = &w->cgs[0];   /* pid 5: root's, 8 MiB to node 1 and 4 MiB to node 0 */
        w->procs[1].cg = &w->cgs[2];   /* pid 6: advise */
        w->procs[2].cg = &w->cgs[1];   /* pid 7: the tenant's, 64 MiB */
        w->procs[3].cg = &w->cgs[1];   /* pid 8: the tenant's, 32 MiB */
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
                free(w->procs[i].hist);
        }
        config_done(&w->cfg);
}

TEST(one_job_per_process_and_target_owners_taking_turns) {
        struct world w;
        uint64_t charged = 1;

        world_start(&w);
        CHECK_INT(jobs_run(&w.env, w.scans, 4, 1000, &charged), 0);
        /* pid 6 (advise) has none; pid 5 two (two targets); the tenant's largest first,
         * root's in between: 7 (64 MiB), 5 (8 MiB), 8 (32 MiB), 5 (4 MiB). */
        CHECK_INT(ran.n, 4);
        CHECK(ran.n == 4 && ran.pid[0] == 7 && ran.pid[1] == 5 && ran.pid[2] == 8 && ran.pid[3] == 5);
        CHECK(ran.n == 4 && ran.target[1] == 1 && ran.target[3] == 0);
        CHECK(ran.n == 4 && ran.n_ranges[0] == 2);
        /* The results: records, cgroups, counters. */
        CHECK_INT(w.procs[2].pages[MIG_MOVED] * page_size(), 64 * MIB);
        CHECK_INT(w.procs[0].pages[MIG_MOVED] * page_size(), 12 * MIB);
        CHECK_INT(w.cgs[1].pages[MIG_MOVED] * page_size(), 96 * MIB);
        CHECK_INT(w.procs[1].pages[MIG_MOVED], 0);
        CHECK_INT(w.counters.total_pages[MIG_MOVED] * page_size(), 108 * MIB);
        CHECK_INT(counters_moved_last_minute(&w.counters), 108 * MIB);
        /* The VMA ranges are remembered for the cooldown; the page range is not. */
        CHECK_INT(w.procs[2].n_hist, 2);
        CHECK_INT(w.procs[0].n_hist, 1);
        CHECK(w.procs[0].n_hist == 1 && w.procs[0].hist[0].start == 0x10000000 && w.procs[0].hist[0].target == 1);
        /* The workers' time to each process, through the ledger; totals are the sum. */
        CHECK_INT(w.procs[0].cost_ns[STAGE_MIGRATE] >= 2000, 1);
        CHECK_INT(w.cost.total_ns[STAGE_MIGRATE],
                  w.cgs[0].cost_ns[STAGE_MIGRATE] + w.cgs[1].cost_ns[STAGE_MIGRATE] + w.cgs[2].cost_ns[STAGE_MIGRATE]);
        CHECK_INT(w.cgs[2].cost_ns[STAGE_MIGRATE], 0);
        world_done(&w);
}

TEST(dry_run_moves_nothing) {
        struct world w;
        uint64_t charged;

        world_start(&w);
        w.env.dry_run = true;
        ran.n = 99;
        CHECK_INT(jobs_run(&w.env, w.scans, 4, 1000, &charged), 0);
        CHECK_INT(ran.n, 99);              /* never called */
        CHECK_INT(w.counters.total_pages[MIG_MOVED], 0);
        CHECK_INT(charged, 0);
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
        CHECK(ran.n == 3 && ran.pid[0] == 7 && ran.pid[1] == 5 && ran.pid[2] == 5);
        CHECK_INT(w.procs[3].pages[MIG_MOVED], 0);
        world_done(&w);
}

/* A job stopped by its check: the record says why, and a target that filled is
 * scanned again as soon as it has room. */
TEST(a_stopped_job_is_remembered) {
        struct world w;
        uint64_t charged;

        world_start(&w);
        ran.stop_pid_7 = &move_stop_target_full;
        CHECK_INT(jobs_run(&w.env, w.scans, 4, 1000, &charged), 0);
        ran.stop_pid_7 = NULL;
        CHECK(w.procs[2].move_stop == &move_stop_target_full);
        CHECK_INT(w.procs[2].full_target, 1);
        CHECK_INT(w.procs[2].pages[MIG_MOVED], 0);
        CHECK_INT(w.procs[2].n_hist, 0);
        CHECK(w.procs[0].move_stop == NULL);
        world_done(&w);
}

static int intro(void) {
        return topology_read(TEST_DATA_DIR "/sys/2n2c", &topo) < 0;
}

static void outro(void) {
        topology_free(topo);
}

DEFINE_TEST_MAIN_FULL(intro, outro)
