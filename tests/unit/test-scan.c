/* SPDX-License-Identifier: GPL-2.0-or-later */
/* One process's scan (daemon/scan.h) on its own, without a tick: a stored process
 * (tests/data/manager/proc/3001: 32 + 8 MiB of private memory on node 1) in a fake
 * /proc, and a placement source that says where its threads ran. What the scan plans,
 * what it writes into the record, when it scans again, and that it charges nothing
 * itself (its CPU time is in the scan, for the tick to charge). */
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>
#include "config.h"
#include "proc-records.h"
#include "scan.h"
#include "test.h"
#include "topology.h"

#define MIB (UINT64_C(1) << 20)

static char tmpdir[] = "/tmp/test-scan-XXXXXX";
static char proc_root[256];
static struct topology *topo;
static uint64_t cpu_now[2];     /* what the source says the threads ran, per node index */

static int scripted_sample(const struct placement_source *s, const char *root, pid_t pid, const struct topology *t,
                           struct placement_state *st, uint64_t *ns_by_node) {
        char path[512];

        snprintf(path, sizeof(path), "%s/%d", root, (int) pid);
        if (access(path, F_OK) < 0)
                return -ESRCH;
        for (unsigned i = 0; i < t->n_nodes && i < 2; i++)
                ns_by_node[i] += cpu_now[i];
        return 1;
}

static const struct placement_source scripted = { .name = "test", .sample = scripted_sample };

struct fixture {
        struct nb_config cfg;
        struct scan_env env;
        struct cg_rec cg;
        struct proc_rec p;
};

static void fixture_start(struct fixture *f, pid_t pid) {
        config_defaults(&f->cfg);
        f->cfg.scan_min_ms = 1000;
        f->cfg.scan_max_ms = 60000;
        f->env = (struct scan_env) { .cfg = &f->cfg, .topo = topo, .proc_root = proc_root, .source = &scripted };
        f->cg = (struct cg_rec) { .path = "/app.slice", .mode = CG_MODE_BALANCE };
        f->p = (struct proc_rec) { .pid = pid, .starttime = 5000, .pidfd = -1, .cg = &f->cg, .reason = _REASON_MAX,
                                   .hot_node = -1, .target_node = -1, .full_target = -1 };
}

static void fixture_done(struct fixture *f) {
        free(f->p.node_bytes);
        free(f->p.hist);
        proc_records_drop_huge(&f->p);
        page_agg_free(f->p.seen);
        placement_state_done(&f->p.pl);
        config_done(&f->cfg);
}

/* Its threads on node 0, its memory on node 1: the plan moves the 40 MiB to node 0,
 * and the record says so; the scan comes again scan_min_ms later. */
TEST(misplaced_memory_is_planned) {
        struct fixture f;
        struct scan s = {};
        uint64_t reserved[8] = {};

        fixture_start(&f, 3001);
        s.rec = &f.p;
        cpu_now[0] = 500000000;
        cpu_now[1] = 0;
        CHECK_INT(scan_process(&f.env, &f.p, 100000, reserved, &s), 1);
        CHECK_INT(s.plan.n_moves, 2);
        CHECK_INT(s.plan.bytes, 40 * MIB);
        CHECK(s.plan.n_moves && s.plan.moves[0].target == 0);
        CHECK_INT(f.p.target_node, 0);
        CHECK_INT(f.p.planned_bytes, 40 * MIB);
        CHECK_INT(f.p.scans, 1);
        CHECK_INT(f.p.next_scan_ms, 100000 + 1000);
        CHECK_INT(f.p.last_scan_ms, 100000);
        CHECK_STR(f.p.comm, "db");
        CHECK(f.p.total_bytes >= 40 * MIB && f.p.local_bytes < f.p.total_bytes);
        CHECK(f.p.node_bytes && f.p.node_bytes[1] >= 40 * MIB);
        CHECK(s.cost_ns[STAGE_READ] > 0);
        /* The scan measures; it charges nothing (the ledger is cost.c's). */
        CHECK_INT(f.p.cost_ns[STAGE_READ], 0);
        CHECK_INT(f.cg.cost_ns[STAGE_READ], 0);
        scan_done(&s);
        fixture_done(&f);
}

/* Idle since the last scan: decided without reading its maps again, and backed off:
 * twice the interval each time, up to scan_max_ms. */
TEST(idle_backs_off) {
        struct fixture f;
        struct scan s = {};
        uint64_t reserved[8] = {}, interval = 0;

        fixture_start(&f, 3001);
        cpu_now[0] = 500000000;
        cpu_now[1] = 0;
        s.rec = &f.p;
        CHECK_INT(scan_process(&f.env, &f.p, 0, reserved, &s), 1);
        scan_done(&s);
        cpu_now[0] = 0;
        for (int i = 1; i <= 8; i++) {
                uint64_t now = (uint64_t) i * 100000;

                s = (struct scan) { .rec = &f.p };
                CHECK_INT(scan_process(&f.env, &f.p, now, reserved, &s), 0);
                CHECK_INT(f.p.reason, REASON_NO_CPU_TIME);
                CHECK_INT(s.plan.n_moves, 0);
                interval = f.p.next_scan_ms - now;
                scan_done(&s);
        }
        CHECK_INT(f.p.scans, 9);
        CHECK_INT(interval, 60000);       /* 1 s doubled, capped at scan_max_ms */
        fixture_done(&f);
}

TEST(too_small_waits_scan_max) {
        struct fixture f;
        struct scan s = {};
        uint64_t reserved[8] = {};

        fixture_start(&f, 3001);
        f.cfg.min_rss_kb = 1024 * 1024;    /* 1 GiB: the process has 52 MiB */
        cpu_now[0] = 500000000;
        s.rec = &f.p;
        CHECK_INT(scan_process(&f.env, &f.p, 5000, reserved, &s), 0);
        CHECK_INT(f.p.reason, REASON_TOO_SMALL);
        CHECK_INT(f.p.next_scan_ms, 5000 + 60000);
        CHECK_INT(f.p.rss_kb, 53680);
        scan_done(&s);
        fixture_done(&f);
}

TEST(gone_is_an_error) {
        struct fixture f;
        struct scan s = {};
        uint64_t reserved[8] = {};

        fixture_start(&f, 4242);
        s.rec = &f.p;
        CHECK(scan_process(&f.env, &f.p, 0, reserved, &s) < 0);
        scan_done(&s);
        /* Backed off like a settled process, not read again at every tick. */
        scan_backoff(&f.env, &f.p, 0);
        scan_backoff(&f.env, &f.p, 0);
        CHECK_INT(f.p.next_scan_ms, 2000);
        fixture_done(&f);
}

/* The plan parameters come from the config and the environment. */
TEST(plan_params_from_the_config) {
        struct fixture f;
        struct plan_params pp;

        fixture_start(&f, 3001);
        f.cfg.free_floor_pct = 7;
        f.env.kernel_balances = true;
        pp = scan_plan_params(&f.env);
        CHECK_INT(pp.free_floor_pct, 7);
        CHECK(pp.kernel_balances);
        CHECK_INT(pp.min_misplaced_kb, f.cfg.min_misplaced_kb);
        CHECK_INT(pp.max_bytes, f.cfg.batch_pages * 4096 * SCAN_BATCHES_PER_TICK);
        fixture_done(&f);
}

static int intro(void) {
        char cmd[4096];

        if (!mkdtemp(tmpdir))
                return 1;
        snprintf(proc_root, sizeof(proc_root), "%s/proc", tmpdir);
        snprintf(cmd, sizeof(cmd),
                 "mkdir -p '%s' && cp -r '%s/manager/proc/3001' '%s/3001' && "
                 "for t in '%s'/3001/task/*; do cp '%s/3001/numa_maps' \"$t/numa_maps\"; done",
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
