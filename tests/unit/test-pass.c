/* SPDX-License-Identifier: GPL-2.0-or-later */
/* A pass (daemon/pass.h) on its own, without a tick: the stored process 3001 ("db",
 * 32 + 8 MiB of private memory on node 1, tests/data/manager/proc) in a fake /proc,
 * a placement source that says its threads ran on node 0, and a recorder in place of
 * the migrator. A planned scan kept and charged to its process; one that cannot be
 * read backed off; a quarantined process not read; the jobs due once the pass has
 * read for PASS_JOBS_EARLY_NS, run, and the scans forgotten. A read that overruns or
 * waits on its owner needs the tenant reader's threads: test-manager.c has those. */
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>
#include "config.h"
#include "pass.h"
#include "placer.h"
#include "test.h"
#include "topology.h"

#define MIB (UINT64_C(1) << 20)

static char tmpdir[] = "/tmp/test-pass-XXXXXX";
static char proc_root[256];
static struct topology *topo;   /* tests/data/sys/2n2c */

/* Its threads ran on node 0 (index 0) only. */
static int on_node_0(const struct node_time_source *s, const char *root, pid_t pid, const struct topology *t,
                     struct node_time_state *st, uint64_t *ns_by_node) {
        (void) s, (void) root, (void) pid, (void) t, (void) st;
        ns_by_node[0] += 500000000;
        return 1;
}

static const struct node_time_source source = { .name = "test", .sample = on_node_0 };

static unsigned free_reads;     /* need_free_memory calls */
static void count_free_read(void *userdata) {
        (void) userdata;
        free_reads++;
}

/* What the recorder was given. */
static struct {
        unsigned calls;
        size_t n_jobs;
        pid_t pid;
        int target;
} ran;

static int recorder(void *userdata, struct migrate_job *jobs, size_t n_jobs) {
        (void) userdata;
        ran.calls++;
        ran.n_jobs = n_jobs;
        if (n_jobs) {
                ran.pid = jobs[0].pid;
                ran.target = jobs[0].target_node;
        }
        return 0;
}

struct world {
        struct nb_config cfg;
        struct cost_ledger cost;
        struct counters counters;
        struct pass_logs logs;
        struct scan_env env;
        struct cg_rec cg;
        struct proc_rec p;
        struct pass ps;
};

static void world_start(struct world *w, pid_t pid) {
        struct pass_env pe = { .topo = topo, .cost = &w->cost, .counters = &w->counters, .logs = &w->logs };

        *w = (struct world) {};
        config_defaults(&w->cfg);
        w->cfg.scan_min_ms = 1000;
        w->cfg.scan_max_ms = 60000;
        pass_logs_init(&w->logs);
        w->env = (struct scan_env) { .cfg = &w->cfg, .topo = topo, .proc_root = proc_root, .source = &source,
                                     .need_free_memory = count_free_read };
        w->cg = (struct cg_rec) { .path = "/app.slice", .mode = CG_MODE_BALANCE };
        w->p = (struct proc_rec) { .pid = pid, .starttime = 5000, .pidfd = -1, .cg = &w->cg,
                                   .reason = _REASON_MAX, .hot_node = -1, .target_node = -1, .full_target = -1 };
        free_reads = 0;
        ran = (typeof(ran)) {};
        CHECK_INT(pass_start(&w->ps, &pe, 100000, 1000), 0);
}

static void world_done(struct world *w) {
        pass_done(&w->ps);
        free(w->p.node_bytes);
        free(w->p.stuck_away);
        free(w->p.moved.hist);
        free(w->p.moved.tier);
        free(w->p.shares);
        free(w->p.cold);
        proc_records_drop_huge(&w->p);
        page_agg_free(w->p.seen);
        free(w->p.mapped);
        node_time_state_done(&w->p.pl);
        cost_ledger_done(&w->cost);
        config_done(&w->cfg);
}

static struct jobs_env jobs_env_of(struct world *w) {
        return (struct jobs_env) {
                .check = { .cfg = &w->cfg, .topo = topo, .proc_root = proc_root,
                           .sys_root = TEST_DATA_DIR "/sys/2n2c" },
                .cost = &w->cost,
                .counters = &w->counters,
                .run_jobs = recorder,
        };
}

/* A scan that plans is kept until its jobs run, its time charged to its process, and
 * free memory read first (the floor is the pass's). */
TEST(a_planned_scan_is_kept_and_charged) {
        struct world w;
        uint64_t charged;

        world_start(&w, 3001);
        charged = pass_scan(&w.ps, &w.env, &w.p);
        CHECK_INT(free_reads, 1);
        CHECK(w.ps.scans.n == 1 && w.ps.scans.moves);
        CHECK(w.ps.scans.n == 1 && w.ps.scans.v[0].rec == &w.p && w.ps.scans.v[0].plan.bytes == 40 * MIB);
        CHECK_INT(w.p.cost_ns[STAGE_READ] + w.p.cost_ns[STAGE_DECIDE], charged);
        CHECK_INT(w.cost.total_ns[STAGE_READ] + w.cost.total_ns[STAGE_DECIDE], charged);
        CHECK(w.ps.reserved[0] == 40 * MIB);
        world_done(&w);
}

/* A process that cannot be read is backed off like a settled one, nothing kept. */
TEST(an_unreadable_process_is_backed_off) {
        struct world w;

        world_start(&w, 4242);
        (void) pass_scan(&w.ps, &w.env, &w.p);
        CHECK_INT(w.ps.scans.n, 0);
        CHECK_INT(w.p.sched.next_scan_ms, 100000 + 1000);
        CHECK_INT(w.counters.quarantines + w.counters.reads_deferred, 0);
        world_done(&w);
}

/* A quarantined process is not read, nor free memory read for it. */
TEST(a_quarantined_process_is_not_read) {
        struct world w;

        world_start(&w, 3001);
        scan_quarantine(&w.p, 99000);
        CHECK_INT(pass_scan(&w.ps, &w.env, &w.p), 0);
        CHECK_INT(free_reads, 0);
        CHECK(w.ps.scans.n == 0 && w.p.scans == 0);
        world_done(&w);
}

/* The jobs run once the pass has read for PASS_JOBS_EARLY_NS with some move planned;
 * the scans are then forgotten, the reservations kept, and the next run counts from
 * then; with nothing planned, nothing runs. */
TEST(jobs_due_early_then_forgotten) {
        struct jobs_env je;
        struct world w;

        world_start(&w, 3001);
        je = jobs_env_of(&w);
        CHECK(!pass_jobs_due(&w.ps, 1000 + PASS_JOBS_EARLY_NS));
        (void) pass_scan(&w.ps, &w.env, &w.p);
        CHECK(!pass_jobs_due(&w.ps, 1000 + PASS_JOBS_EARLY_NS - 1));
        CHECK(pass_jobs_due(&w.ps, 1000 + PASS_JOBS_EARLY_NS));
        CHECK_INT(pass_run_jobs(&w.ps, &je), 0);
        CHECK(ran.calls == 1 && ran.n_jobs == 1 && ran.pid == 3001 && ran.target == 0);
        CHECK(w.ps.scans.n == 0 && !w.ps.scans.moves && w.ps.jobs_ran_ns > 1000);
        CHECK(w.ps.reserved[0] == 40 * MIB);
        CHECK(!pass_jobs_due(&w.ps, UINT64_MAX));
        CHECK_INT(pass_run_jobs(&w.ps, &je), 0);
        CHECK_INT(ran.calls, 1);
        world_done(&w);
}

/* A process whose cgroup places threads: its moves do not run early, before the tick's
 * placer round could place it beside the memory they would move away; the run after
 * that round takes them. */
TEST(place_moves_wait_for_the_placer_round) {
        struct jobs_env je;
        struct world w;

        world_start(&w, 3001);
        w.cg.mode = CG_MODE_PLACE;
        je = jobs_env_of(&w);
        (void) pass_scan(&w.ps, &w.env, &w.p);
        CHECK(pass_jobs_due(&w.ps, 1000 + PASS_JOBS_EARLY_NS));
        CHECK_INT(pass_run_jobs_early(&w.ps, &je), 0);
        CHECK_INT(ran.calls, 0);
        CHECK(w.ps.scans.n == 1 && w.ps.scans.moves);
        CHECK_INT(pass_run_jobs(&w.ps, &je), 0);
        CHECK(ran.calls == 1 && ran.n_jobs == 1 && ran.pid == 3001);
        CHECK(w.ps.scans.n == 0 && !w.ps.scans.moves);
        world_done(&w);
}

/* A placed process's moves are kept to its node: they need not wait. */
TEST(placed_moves_run_early) {
        struct proc_place pp = { .placed = 0 };
        struct jobs_env je;
        struct world w;

        world_start(&w, 3001);
        w.cg.mode = CG_MODE_PLACE;
        w.p.place = &pp;
        je = jobs_env_of(&w);
        (void) pass_scan(&w.ps, &w.env, &w.p);
        CHECK_INT(pass_run_jobs_early(&w.ps, &je), 0);
        CHECK(ran.calls == 1 && ran.pid == 3001);
        CHECK_INT(w.ps.scans.n, 0);
        w.p.place = NULL;
        world_done(&w);
}

/* In balance, the early run is the run. */
TEST(balance_moves_run_early) {
        struct jobs_env je;
        struct world w;

        world_start(&w, 3001);
        je = jobs_env_of(&w);
        (void) pass_scan(&w.ps, &w.env, &w.p);
        CHECK_INT(pass_run_jobs_early(&w.ps, &je), 0);
        CHECK(ran.calls == 1 && ran.pid == 3001);
        CHECK(w.ps.scans.n == 0 && !w.ps.scans.moves);
        world_done(&w);
}

static int intro(void) {
        char cmd[4096];

        if (!mkdtemp(tmpdir))
                return 1;
        snprintf(proc_root, sizeof(proc_root), "%s/proc", tmpdir);
        /* Each thread's numa_maps: the main one's (no thread policy of its own). */
        snprintf(cmd, sizeof(cmd),
                 "mkdir -p '%s' && cp -r '%s/manager/proc/3001' '%s/3001' && "
                 "for t in '%s'/3001/task/*; do cp '%s/3001/numa_maps' \"$t/numa_maps\" || exit 1; done",
                 proc_root, TEST_DATA_DIR, proc_root, proc_root, proc_root);
        if (system(cmd) != 0)
                return 1;
        if (topology_read(TEST_DATA_DIR "/sys/2n2c", &topo) < 0)
                return 1;
        return 0;
}

static void outro(void) {
        char cmd[512];

        topology_free(topo);
        snprintf(cmd, sizeof(cmd), "rm -rf '%s'", tmpdir);
        if (system(cmd) != 0)
                fprintf(stderr, "could not remove %s\n", tmpdir);
}

DEFINE_TEST_MAIN_FULL(intro, outro)
