/* SPDX-License-Identifier: GPL-2.0-or-later */
/* One process's scan (daemon/scan.h) on its own, without a tick and without struct
 * manager: stored processes (tests/data/manager/proc: 3001 "db", 32 + 8 MiB of private
 * memory on node 1; 3002 "web", 16 MiB on node 0) in a fake /proc, and a placement
 * source that says where their threads ran. What the scan plans, what it writes into
 * the record, when it scans again, that an idle process is not read again, and that it
 * charges nothing itself (its CPU time is in the scan, for the tick to charge). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "cg-records.h"
#include "config.h"
#include "move-budget.h"
#include "pagesize.h"
#include "proc-lines.h"
#include "proc-records.h"
#include "scan.h"
#include "test.h"
#include "tmptree.h"
#include "topology.h"

#define MIB (UINT64_C(1) << 20)

static char tmpdir[] = "/tmp/test-scan-XXXXXX";
static char proc_root[256];
static struct topology *topo;   /* tests/data/sys/2n2c: nodes 0 and 1, 1 GiB each */

/* The scripted source: what the threads ran per node index since the last sample. */
static uint64_t cpu_now[2];
static bool source_sees_gone;   /* false: says 1 even for a process whose directory went */
static unsigned source_samples; /* sample() calls */

static int scripted_sample(const struct node_time_source *s, const char *root, pid_t pid, const struct topology *t,
                           struct node_time_state *st, uint64_t *ns_by_node) {
        char path[512];

        source_samples++;
        snprintf(path, sizeof(path), "%s/%d", root, (int) pid);
        if (source_sees_gone && access(path, F_OK) < 0)
                return -ESRCH;
        for (unsigned i = 0; i < t->n_nodes && i < 2; i++)
                ns_by_node[i] += cpu_now[i];
        return 1;
}

static const struct node_time_source scripted = { .name = "test", .sample = scripted_sample };

struct fixture {
        struct nb_config cfg;
        struct scan_env env;
        struct cg_rec cg;
        struct proc_rec p;
        uint64_t *reserved;     /* plan_reserved_len() entries */
};

static void fixture_start(struct fixture *f, pid_t pid, uint64_t starttime) {
        config_defaults(&f->cfg);
        f->cfg.scan_min_ms = 1000;
        f->cfg.scan_max_ms = 60000;
        f->env = (struct scan_env) { .cfg = &f->cfg, .topo = topo, .proc_root = proc_root, .source = &scripted,
                                     .pages = NULL };
        f->cg = (struct cg_rec) { .path = "/app.slice", .mode = CG_MODE_BALANCE };
        f->p = (struct proc_rec) { .pid = pid, .starttime = starttime, .pidfd = -1, .cg = &f->cg,
                                   .reason = _REASON_MAX, .hot_node = -1, .target_node = -1, .full_target = -1 };
        f->reserved = calloc(plan_reserved_len(topo), sizeof(*f->reserved));
        if (!f->reserved)
                abort();
        source_sees_gone = true;
        source_samples = 0;
}

static void fixture_done(struct fixture *f) {
        free(f->reserved);
        free(f->p.node_bytes);
        free(f->p.stuck_away);
        free(f->p.moved.hist);
        free(f->p.moved.tier);
        free(f->p.shares);
        free(f->p.cold);
        free(f->p.slow);
        proc_records_drop_huge(&f->p);
        page_agg_free(f->p.seen);
        sampled_cold_free(f->p.sampled);
        free(f->p.mapped);
        node_time_state_done(&f->p.pl);
        config_done(&f->cfg);
}

/* <tmpdir>/cg/app.slice/<name> (the cgroup of the fixture) holding text; NULL: none. */
static void put_cgroup_file(const char *name, const char *text) {
        char path[512];

        snprintf(path, sizeof(path), "%s/cg/app.slice/%s", tmpdir, name);
        if (!text)
                unlink(path);
        else
                (void) tmptree_write(path, text);
}

/* Renames <proc_root>/<pid>/<name> to <name>.away (away) or back (!away). */
static void hide(pid_t pid, const char *name, bool away) {
        char a[512], b[600];

        snprintf(a, sizeof(a), "%s/%d/%s", proc_root, (int) pid, name);
        snprintf(b, sizeof(b), "%s.away", a);
        if (rename(away ? a : b, away ? b : a) < 0)
                TEST_FAIL("rename %s: %m", away ? a : b);
}

/* 3001: its threads on node 0, its memory on node 1: the plan moves the 40 MiB to
 * node 0, and the record says so; the scan comes again scan_min_ms later. */
TEST(misplaced_memory_is_planned) {
        struct fixture f;
        struct scan s = {};

        fixture_start(&f, 3001, 5000);
        s.rec = &f.p;
        cpu_now[0] = 500000000;
        cpu_now[1] = 0;
        CHECK_INT(scan_process(&f.env, &f.p, 100000, f.reserved, &s), 1);
        CHECK_INT(s.plan.n_moves, 2);
        CHECK_INT(s.plan.bytes, 40 * MIB);
        CHECK(s.plan.n_moves && s.plan.moves[0].target == 0);
        CHECK_INT(f.p.target_node, 0);
        CHECK_INT(f.p.planned_bytes, 40 * MIB);
        CHECK_INT(f.p.scans, 1);
        CHECK_INT(f.p.sched.next_scan_ms, 100000 + 1000);
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

/* 3001 again, its main thread allowed nodes 0-1 and in a threaded cgroup whose
 * thread 3003 has a cpuset of node 1 only: node 0 is not allowed to every thread, so
 * nothing moves there (though its threads run there); in a domain cgroup (no thread
 * in a cgroup of its own) its 40 MiB go to node 0. */
TEST(a_threads_cpuset_is_obeyed) {
        char cgroup_root[300], cmd[4096];
        struct fixture f;
        struct scan s = {};

        snprintf(cgroup_root, sizeof(cgroup_root), "%s/cgroup", tmpdir);
        snprintf(cmd, sizeof(cmd),
                 "mkdir -p '%s/app.slice' && echo threaded > '%s/app.slice/cgroup.type' && "
                 "cp '%s/3001/status' '%s/3001/task/3001/status' && "
                 "sed 's/^Mems_allowed_list:.*/Mems_allowed_list:\t1/' '%s/3001/status' > '%s/3001/task/3003/status'",
                 cgroup_root, cgroup_root, proc_root, proc_root, proc_root, proc_root);
        if (system(cmd) != 0)
                TEST_FAIL("cannot make the fake cgroup tree");
        for (int threaded = 1; threaded >= 0; threaded--) {
                size_t to0 = 0;

                fixture_start(&f, 3001, 5000);
                free(f.cfg.cgroup_root);
                f.cfg.cgroup_root = strdup(cgroup_root);
                s = (struct scan) { .rec = &f.p };
                cpu_now[0] = 500000000;
                cpu_now[1] = 0;
                CHECK_INT(scan_process(&f.env, &f.p, 100000, f.reserved, &s), 1);
                printf("%s: %zu move(s), mems_allowed %s\n", threaded ? "threaded" : "domain", s.plan.n_moves,
                       nodemask_test(&f.p.mems_allowed, 0) ? "0-1" : "1");
                for (size_t k = 0; k < s.plan.n_moves; k++)
                        to0 += s.plan.moves[k].target == 0;
                CHECK_INT(to0, threaded ? 0 : 2);
                CHECK(nodemask_test(&f.p.mems_allowed, 0) == !threaded);
                scan_done(&s);
                fixture_done(&f);
                tmptree_write_at(cgroup_root, "app.slice/cgroup.type", "domain\n");
        }
        tmptree_remove(cgroup_root);
        snprintf(cmd, sizeof(cmd), "%s/3001/task/3001/status", proc_root);
        tmptree_remove(cmd);
        snprintf(cmd, sizeof(cmd), "%s/3001/task/3003/status", proc_root);
        tmptree_remove(cmd);
}

/* 3002: memory on node 0 (16 MiB private, 4156 pages with libc's), its threads on
 * node 1: one move of the private VMA to node 1, and every field of the record the
 * reports read. */
TEST(misplaced_to_node_1_record_updated) {
        struct fixture f;
        struct scan s = {};
        const uint64_t ps = 4096;   /* numa_maps' kernelpagesize_kB=4 */

        fixture_start(&f, 3002, 5100);
        s.rec = &f.p;
        cpu_now[0] = 0;
        cpu_now[1] = 800000000;
        CHECK_INT(scan_process(&f.env, &f.p, 200000, f.reserved, &s), 1);
        CHECK_INT(s.plan.n_moves, 1);
        if (s.plan.n_moves == 1) {
                CHECK_INT(s.plan.moves[0].start, 0x7f5000000000);
                CHECK_INT(s.plan.moves[0].target, 1);
                CHECK_INT(s.plan.moves[0].bytes, 16 * MIB);
        }
        CHECK_INT(s.plan.bytes, 16 * MIB);
        CHECK_INT(s.pages.n_moves, 0);     /* no page-level sampling: env.pages is NULL */
        CHECK(!s.sampled);
        CHECK_INT(f.p.reason, REASON_NONE);
        CHECK_INT(f.p.planned_bytes, 16 * MIB);
        CHECK_INT(f.p.target_node, 1);
        CHECK_INT(f.p.hot_node, 1);
        CHECK_INT(f.p.full_target, -1);
        CHECK_INT(f.p.rss_kb, 17840);
        CHECK_INT(f.p.uid, 1000);
        CHECK_STR(f.p.comm, "web");
        /* Every page of its numa_maps, and those on node 1 (where its threads ran). */
        CHECK_INT(f.p.total_bytes, (4096 + 60 + 256 + 40 + 8) * ps);
        CHECK_INT(f.p.local_bytes, (256 + 40 + 8) * ps);
        CHECK(f.p.node_bytes != NULL);
        if (f.p.node_bytes) {
                CHECK_INT(f.p.node_bytes[0], (4096 + 60) * ps);
                CHECK_INT(f.p.node_bytes[1], (256 + 40 + 8) * ps);
        }
        CHECK_INT(f.p.last_scan_ms, 200000);
        CHECK_INT(f.p.sched.interval_ms, 1000);
        CHECK_INT(f.p.sched.next_scan_ms, 200000 + f.cfg.scan_min_ms);
        CHECK_INT(f.p.scans, 1);
        /* The node's room is shared by the tick's scans: this plan's bytes are reserved. */
        CHECK_INT(f.reserved[0], 0);
        CHECK_INT(f.reserved[1], 16 * MIB);
        /* Its exec layout at the scan, for the check before moving (move-check.h). */
        CHECK_INT(f.p.layout.start_code, UINT64_C(93978048487424));
        CHECK(s.cost_ns[STAGE_READ] > 0);
        CHECK_INT(f.p.cost_ns[STAGE_READ] + f.p.cost_ns[STAGE_DECIDE], 0);
        scan_done(&s);
        fixture_done(&f);
}

/* Advise mode and a dry run plan all the same (the log says "would move"; the jobs
 * leave them out, test-jobs.c). */
TEST(advise_and_dry_run_still_plan) {
        for (int dry = 0; dry <= 1; dry++) {
                struct fixture f;
                struct scan s = {};

                fixture_start(&f, 3002, 5100);
                if (dry)
                        f.env.dry_run = true;
                else
                        f.cg.mode = CG_MODE_ADVISE;
                s.rec = &f.p;
                cpu_now[0] = 0;
                cpu_now[1] = 800000000;
                CHECK_INT(scan_process(&f.env, &f.p, 1000, f.reserved, &s), 1);
                CHECK_INT(s.plan.n_moves, 1);
                CHECK_INT(s.plan.bytes, 16 * MIB);
                CHECK_INT(f.p.planned_bytes, 16 * MIB);
                CHECK_INT(f.p.target_node, 1);
                CHECK_INT(f.p.sched.next_scan_ms, 1000 + 1000);
                scan_done(&s);
                fixture_done(&f);
        }
}

/* Idle since the last scan: decided without reading its files again (numa_maps, maps
 * and status are away, and the scan does not fail), and backed off: twice the
 * interval each time, up to scan_max_ms. */
TEST(idle_is_not_read_again_and_backs_off) {
        struct fixture f;
        struct scan s = {};
        uint64_t want = 1000;

        fixture_start(&f, 3001, 5000);
        cpu_now[0] = 500000000;
        cpu_now[1] = 0;
        s.rec = &f.p;
        CHECK_INT(scan_process(&f.env, &f.p, 0, f.reserved, &s), 1);
        CHECK_INT(f.p.sched.interval_ms, 1000);
        scan_done(&s);
        cpu_now[0] = 0;
        hide(3001, "numa_maps", true);
        hide(3001, "maps", true);
        hide(3001, "status", true);
        for (int i = 1; i <= 8; i++) {
                uint64_t now = (uint64_t) i * 100000;

                want = want * 2 > 60000 ? 60000 : want * 2;
                s = (struct scan) { .rec = &f.p };
                CHECK_INT(scan_process(&f.env, &f.p, now, f.reserved, &s), 0);
                CHECK_INT(f.p.reason, REASON_NO_CPU_TIME);
                CHECK_INT(f.p.planned_bytes, 0);
                CHECK_INT(f.p.last_scan_ms, now);
                CHECK_INT(s.plan.n_moves, 0);
                CHECK_MSG(f.p.sched.interval_ms == want && f.p.sched.next_scan_ms == now + want,
                          "scan %d: interval %" PRIu64 " next %" PRIu64 ", expected %" PRIu64, i, f.p.sched.interval_ms,
                          f.p.sched.next_scan_ms, want);
                scan_done(&s);
        }
        hide(3001, "numa_maps", false);
        hide(3001, "maps", false);
        hide(3001, "status", false);
        CHECK_INT(f.p.scans, 9);
        CHECK_INT(f.p.sched.interval_ms, 60000);      /* 1 s doubled, capped at scan_max_ms */
        CHECK_INT(source_samples, 9);           /* sampled every time: one sample per idle scan */
        /* Busy again: read, planned, and back to scan_min_ms at once. */
        cpu_now[0] = 500000000;
        s = (struct scan) { .rec = &f.p };
        CHECK_INT(scan_process(&f.env, &f.p, 900000, f.reserved, &s), 1);
        CHECK_INT(s.plan.n_moves, 2);
        CHECK_INT(f.p.sched.interval_ms, 1000);
        CHECK_INT(f.p.sched.next_scan_ms, 900000 + 1000);
        scan_done(&s);
        fixture_done(&f);
}

TEST(too_small_waits_scan_max) {
        struct fixture f;
        struct scan s = {};

        fixture_start(&f, 3001, 5000);
        f.cfg.min_rss_kb = 1024 * 1024;    /* 1 GiB: the process has 52 MiB */
        cpu_now[0] = 500000000;
        cpu_now[1] = 0;
        s.rec = &f.p;
        CHECK_INT(scan_process(&f.env, &f.p, 5000, f.reserved, &s), 0);
        CHECK_INT(f.p.reason, REASON_TOO_SMALL);
        CHECK_INT(f.p.sched.interval_ms, 60000);
        CHECK_INT(f.p.sched.next_scan_ms, 5000 + 60000);
        CHECK_INT(f.p.rss_kb, 53680);
        CHECK_INT(s.plan.n_moves, 0);
        CHECK_INT(f.p.planned_bytes, 0);
        CHECK_INT(f.reserved[0] + f.reserved[1], 0);
        scan_done(&s);
        /* Just at min_rss: scanned as any other. */
        f.cfg.min_rss_kb = 53680;
        s = (struct scan) { .rec = &f.p };
        CHECK_INT(scan_process(&f.env, &f.p, 6000, f.reserved, &s), 1);
        CHECK_INT(f.p.reason, REASON_NONE);
        CHECK_INT(f.p.sched.next_scan_ms, 6000 + 1000);
        scan_done(&s);
        fixture_done(&f);
}

/* Gone: from the source (no /proc/PID at all), or between the sample and the read
 * (the source said where it ran, its files are gone): -ESRCH or -ENOENT, and its
 * record is left as it was. */
TEST(gone_is_an_error) {
        struct fixture f;
        struct scan s = {};
        int r;

        fixture_start(&f, 4242, 1);
        s.rec = &f.p;
        cpu_now[0] = 500000000;
        r = scan_process(&f.env, &f.p, 0, f.reserved, &s);
        CHECK_MSG(r == -ESRCH || r == -ENOENT, "scan_process: %d", r);
        CHECK_INT(f.p.scans, 0);
        CHECK_INT(f.p.reason, _REASON_MAX);
        scan_done(&s);
        /* Its directory went after the sample. */
        source_sees_gone = false;
        s = (struct scan) { .rec = &f.p };
        r = scan_process(&f.env, &f.p, 0, f.reserved, &s);
        CHECK_MSG(r == -ESRCH || r == -ENOENT, "scan_process: %d", r);
        CHECK_INT(f.p.scans, 0);
        CHECK_INT(f.p.sched.next_scan_ms, 0);
        scan_done(&s);
        fixture_done(&f);
}

/* 3003 (a copy of 3001) with one mapping more than the cap (lib/proc-lines.h): its
 * scan fails with -E2BIG, its record untouched, and 3001 is scanned as before. */
TEST(too_many_mappings_is_an_error) {
        struct fixture f;
        struct scan s = {};
        char path[512];
        FILE *nm;

        snprintf(path, sizeof(path), "%s/3003/numa_maps", proc_root);
        nm = fopen(path, "w");
        if (!nm) {
                TEST_FAIL("cannot write %s: %m", path);
                return;
        }
        for (unsigned i = 0; i <= PROC_VMAS_MAX; i++)
                fprintf(nm, "%llx default anon=1 dirty=1 N1=1 kernelpagesize_kB=4\n", 0x7f0000000000ull + i * 0x2000ull);
        fclose(nm);
        fixture_start(&f, 3003, 5000);
        s.rec = &f.p;
        cpu_now[0] = 500000000;
        cpu_now[1] = 0;
        CHECK_INT(scan_process(&f.env, &f.p, 100000, f.reserved, &s), -E2BIG);
        CHECK_INT(f.p.scans, 0);
        CHECK_INT(f.p.reason, _REASON_MAX);
        scan_done(&s);
        fixture_done(&f);

        fixture_start(&f, 3001, 5000);
        s = (struct scan) { .rec = &f.p };
        CHECK_INT(scan_process(&f.env, &f.p, 100000, f.reserved, &s), 1);
        CHECK_INT(s.plan.n_moves, 2);
        scan_done(&s);
        fixture_done(&f);
}

/* The real /proc placement source on a pid that no process has: -ESRCH or -ENOENT. */
TEST(gone_with_the_proc_source) {
        struct fixture f;
        struct scan s = {};
        int r;

        fixture_start(&f, 4242, 1);
        f.env.source = &node_time_source_proc;
        s.rec = &f.p;
        r = scan_process(&f.env, &f.p, 0, f.reserved, &s);
        CHECK_MSG(r == -ESRCH || r == -ENOENT, "scan_process: %d", r);
        CHECK_INT(f.p.scans, 0);
        scan_done(&s);
        fixture_done(&f);
}

/* A failed scan is backed off like a settled process: half as often each time, up to
 * scan_max_ms; a first backoff starts at scan_min_ms. */
TEST(backoff_doubles_up_to_scan_max) {
        struct fixture f;

        fixture_start(&f, 4242, 1);
        scan_backoff(&f.env, &f.p, 0);
        CHECK_INT(f.p.sched.interval_ms, 1000);
        CHECK_INT(f.p.sched.next_scan_ms, 1000);
        scan_backoff(&f.env, &f.p, 10);
        CHECK_INT(f.p.sched.interval_ms, 2000);
        CHECK_INT(f.p.sched.next_scan_ms, 2010);
        for (int i = 0; i < 10; i++)
                scan_backoff(&f.env, &f.p, 500);
        CHECK_INT(f.p.sched.interval_ms, 60000);
        CHECK_INT(f.p.sched.next_scan_ms, 60500);
        /* A smaller scan_max_ms (a reload) caps what was already longer. */
        f.cfg.scan_max_ms = 5000;
        scan_backoff(&f.env, &f.p, 0);
        CHECK_INT(f.p.sched.interval_ms, 5000);
        fixture_done(&f);
}

/* The schedule's other writers, all here (proc-records.h: scan.c alone writes it):
 * brought forward never pushes a scan back; a react scan restarts the back-off and is
 * dropped; a reload brings every scan within scan_min_ms; a quarantine holds the next
 * scan for SCAN_QUARANTINE_MS and says why. */
TEST(the_schedule_is_changed_here_only) {
        struct fixture f;

        fixture_start(&f, 4242, 1);
        scan_backoff(&f.env, &f.p, 0);
        scan_backoff(&f.env, &f.p, 0);
        CHECK_INT(f.p.sched.next_scan_ms, 2000);
        scan_bring_forward(&f.p, 5000);
        CHECK_INT(f.p.sched.next_scan_ms, 2000);
        scan_bring_forward(&f.p, 1500);
        CHECK_INT(f.p.sched.next_scan_ms, 1500);
        scan_react_at(&f.p, 1200);
        CHECK(f.p.sched.react_due_ms == 1200 && f.p.sched.next_scan_ms == 1200 && f.p.sched.interval_ms == 0);
        scan_backoff(&f.env, &f.p, 1200);
        CHECK_INT(f.p.sched.interval_ms, 1000);  /* scan_min_ms after a react scan */
        scan_react_drop(&f.p);
        CHECK_INT(f.p.sched.react_due_ms, 0);
        for (int i = 0; i < 10; i++)
                scan_backoff(&f.env, &f.p, 0);
        scan_restart_interval(&f.p, 1000, 7000);
        CHECK(f.p.sched.interval_ms == 1000 && f.p.sched.next_scan_ms == 8000);
        f.p.planned_bytes = f.p.page_planned_bytes = 1;
        scan_quarantine(&f.p, 9000);
        CHECK(f.p.sched.quarantined_until_ms == 9000 + SCAN_QUARANTINE_MS &&
              f.p.sched.next_scan_ms == f.p.sched.quarantined_until_ms);
        CHECK(f.p.reason == REASON_QUARANTINED && f.p.planned_bytes == 0 && f.p.page_planned_bytes == 0);
        fixture_done(&f);
}

/* While a fast node's promotions wait for room, the processes with fresh cold
 * regions (the donors) are scanned now, or scan_min_ms after their last scan; stale
 * regions, no regions, no demand, or a cgroup at its share leave the schedule alone. */
TEST(serve_demand_brings_donors_forward) {
        struct fixture f;
        struct cg_rec shared = { .path = "/db", .fast_share_pct = 100, .share_by = "/nope" };
        struct proc_rec a = { .sched.next_scan_ms = 30000 }, b = a, c = a, d = a, e = a;
        struct proc_rec *v[] = { &a, &b, &c, &d, &e };
        struct proc_records procs = { .v = v, .n = 5 };
        struct damon_range r = { 0x1000, 0x2000 };
        uint64_t demand[NB_NODES_MAX] = { 0 };
        struct cg_records cgs;

        fixture_start(&f, 3001, 5000);
        cg_records_init(&cgs);
        f.env.exchange_demand = demand;
        f.env.cgs = &cgs;
        a.cg = b.cg = c.cg = d.cg = &f.cg;
        e.cg = &shared;   /* a share whose holder is no record: it gives nothing */
        a.cold = b.cold = d.cold = e.cold = &r;
        a.n_cold = b.n_cold = d.n_cold = e.n_cold = 1;
        a.cold_ms = d.cold_ms = e.cold_ms = 9000;
        b.cold_ms = 1000;   /* older than COLD_FRESH_MS at 10000 */
        d.last_scan_ms = 9500;
        scan_serve_demand(&f.env, &procs, 10000);
        CHECK_INT(a.sched.next_scan_ms, 30000);
        demand[1] = 4096;
        scan_serve_demand(&f.env, &procs, 10000);
        CHECK_INT(a.sched.next_scan_ms, 10000);
        CHECK_INT(b.sched.next_scan_ms, 30000);
        CHECK_INT(c.sched.next_scan_ms, 30000);
        CHECK_INT(d.sched.next_scan_ms, 10500);   /* scan_min_ms after its last scan */
        CHECK_INT(e.sched.next_scan_ms, 30000);
        cg_records_done(&cgs);
        fixture_done(&f);
}

/* A donor (damon.h: watched for cold regions only) has no page samples, and its scan
 * still gives its cold memory for another process's promotions waiting at node 0:
 * 3002's 16 MiB on node 0, cold to DAMON, 4 MiB of it wanted, node 1 slow. */
/* 3002 (16 MiB on node 0) with node 1 slow, and the exchange's demand per node. */
static void fixture_start_tiered(struct fixture *f, uint64_t *demand) {
        nb_nodemask slow = {};

        fixture_start(f, 3002, 5000);
        nodemask_set(&slow, 1);
        topology_set_slow(topo, &slow);
        f->env.exchange_demand = demand;
}

static void fixture_done_tiered(struct fixture *f) {
        nb_nodemask none = {};

        topology_set_slow(topo, &none);
        fixture_done(f);
}

TEST(a_donor_without_samples_gives_cold_memory) {
        struct fixture f;
        struct scan s = {};
        uint64_t demand[NB_NODES_MAX] = { 0 };

        fixture_start_tiered(&f, demand);
        f.p.cold = malloc(sizeof(*f.p.cold));
        if (!f.p.cold)
                abort();
        f.p.cold[0] = (struct damon_range) { 0x7f5000000000, 0x7f5001000000 };
        f.p.n_cold = 1;
        f.p.cold_ms = 100000;
        demand[0] = 4 * MIB;
        s.rec = &f.p;
        cpu_now[0] = 500000000;
        cpu_now[1] = 0;
        CHECK(f.p.seen == NULL);
        CHECK_INT(scan_process(&f.env, &f.p, 100000, f.reserved, &s), 1);
        CHECK_INT(s.pages.demote_bytes, 4 * MIB);
        CHECK(s.pages.n_moves && s.pages.moves[0].demote && s.pages.moves[0].target == 1 &&
              s.pages.moves[0].start >= 0x7f5000000000 && s.pages.moves[0].end <= 0x7f5001000000);
        CHECK_INT(demand[0], 0);
        scan_done(&s);
        fixture_done_tiered(&f);
}

/* Without DAMON, its memory no sample named over the cold age is its cold memory once
 * the samples cover its accesses (lib/sampled-cold.h: 2 MiB blocks): of 3002's
 * anonymous 16 MiB on node 0, the first MiB sampled again and again for two windows,
 * the other 15 MiB never; 4 MiB wanted at node 0, node 1 slow. Nothing of the first
 * block goes. With sparse samples (128 new blocks a second, each named once) nothing
 * is cold, and nothing goes. */
static struct sampled_cold_pool pool;

static void sample_pages(struct proc_rec *p, bool dense) {
        for (uint64_t t = 80000, k = 0; t <= 100000; t += 1000, k++)
                for (uint64_t i = 0; i < (dense ? 256 : 128); i++)
                        sampled_cold_add(p->sampled, 0x7f5000000000 + (dense ? i * page_size() : (k * 128 + i) << 21),
                                         2 - !dense, t, 10000);
}

TEST(unsampled_pages_are_cold_without_damon) {
        for (int dense = 0; dense <= 1; dense++) {
                struct fixture f;
                struct scan s = {};
                uint64_t demand[NB_NODES_MAX] = { 0 };

                fixture_start_tiered(&f, demand);
                if (sampled_cold_new(&pool, &f.p.sampled) < 0)
                        abort();
                sample_pages(&f.p, dense);
                demand[0] = 4 * MIB;
                s.rec = &f.p;
                cpu_now[0] = 500000000;
                cpu_now[1] = 0;
                CHECK_INT(scan_process(&f.env, &f.p, 100000, f.reserved, &s), 1);
                if (!dense) {
                        CHECK_INT(s.pages.demote_bytes, 0);
                        CHECK_INT(demand[0], 4 * MIB);
                } else {
                        CHECK_INT(s.pages.demote_bytes, 4 * MIB);
                        CHECK_INT(demand[0], 0);
                }
                for (size_t i = 0; dense && i < s.pages.n_moves; i++)
                        CHECK(s.pages.moves[i].demote && s.pages.moves[i].target == 1 &&
                              s.pages.moves[i].start >= 0x7f5000200000 && s.pages.moves[i].end <= 0x7f5001000000);
                scan_done(&s);
                fixture_done_tiered(&f);
        }
}

/* A process whose promotions waited at a fast node is scanned soon once the exchange
 * has made room there (credit), not at its settled interval; one waiting elsewhere,
 * or at a node with no room made, keeps its schedule. */
TEST(serve_demand_brings_takers_forward) {
        struct fixture f;
        struct proc_rec a = { .sched.next_scan_ms = 30000 }, b = a, c = a;
        struct proc_rec *v[] = { &a, &b, &c };
        struct proc_records procs = { .v = v, .n = 3 };
        uint64_t demand[NB_NODES_MAX] = { 0 }, credit[NB_NODES_MAX] = { 0 };

        fixture_start(&f, 3001, 5000);
        f.env.exchange_demand = demand;
        f.env.exchange_credit = credit;
        a.cg = b.cg = c.cg = &f.cg;
        a.exchange_wait = 1;       /* topology index 0 */
        b.exchange_wait = 2;       /* index 1 */
        a.last_scan_ms = 9500;
        scan_serve_demand(&f.env, &procs, 10000);
        CHECK_INT(a.sched.next_scan_ms, 30000);
        credit[0] = 1 << 20;
        scan_serve_demand(&f.env, &procs, 10000);
        CHECK_INT(a.sched.next_scan_ms, 10500);   /* scan_min_ms after its last scan */
        CHECK_INT(b.sched.next_scan_ms, 30000);
        CHECK_INT(c.sched.next_scan_ms, 30000);
        fixture_done(&f);
}

/* The plan parameters come from the config and the environment. */
TEST(plan_params_from_the_config) {
        struct fixture f;
        struct plan_params pp;

        fixture_start(&f, 3001, 5000);
        f.cfg.free_floor_pct = 7;
        f.cfg.min_cpu_share_pct = 70;
        f.cfg.keep_node_share_pct = 25;
        f.cfg.cooldown_ms = 12345;
        f.cfg.move_shared = true;
        f.cfg.batch_pages = 1000;
        f.env.kernel_balances = true;
        pp = scan_plan_params(&f.env);
        CHECK_INT(pp.free_floor_pct, 7);
        CHECK_INT(pp.min_cpu_share_pct, 70);
        CHECK_INT(pp.keep_node_share_pct, 25);
        CHECK_INT(pp.cooldown_ms, 12345);
        CHECK(pp.move_shared);
        CHECK(pp.kernel_balances);
        CHECK_INT(pp.min_misplaced_kb, f.cfg.min_misplaced_kb);
        CHECK_INT(pp.max_bytes, 1000 * page_size() * MOVE_BUDGET_SCAN_CALLS);
        f.env.kernel_balances = false;
        CHECK(!scan_plan_params(&f.env).kernel_balances);
        fixture_done(&f);
}

/* The free-memory reads asked of the tick (scan_env.need_free_memory). */
static unsigned free_reads;
static void count_free_read(void *userdata) {
        (void) userdata;
        free_reads++;
}

/* Why a process is scanned now: its schedule; room again at the node its last plan
 * was held back from (free memory read for that only); growth, looked for only where
 * its cgroup may have grown and its next scan is further than a check away. */
TEST(due_by_schedule_room_or_growth) {
        struct fixture f;

        fixture_start(&f, 4242, 1);   /* no /proc directory: its statm cannot be read */
        f.env.need_free_memory = count_free_read;
        free_reads = 0;
        scan_backoff(&f.env, &f.p, 4000);
        CHECK_INT(f.p.sched.next_scan_ms, 5000);
        CHECK_INT(scan_due_now(&f.env, &f.p, 5000), SCAN_DUE);
        CHECK_INT(scan_due_now(&f.env, &f.p, 1000), SCAN_NOT_DUE);
        CHECK_INT(free_reads, 0);
        /* Held back at node 0, which has 966 MiB free (2n2c): room again. */
        f.p.full_target = 0;
        CHECK_INT(scan_due_now(&f.env, &f.p, 1000), SCAN_DUE_ROOM);
        CHECK_INT(free_reads, 1);
        f.p.full_target = -1;
        /* Its cgroup may have grown, but its statm is unreadable: its scan will say. */
        f.p.rss_kb = 1024;
        f.cg.growth = GROWTH_SOME;
        CHECK_INT(scan_due_now(&f.env, &f.p, 1000), SCAN_NOT_DUE);
        CHECK_INT(f.p.rss_kb, 1024);
        fixture_done(&f);
}

/* A cgroup's growth: from memory.current, by min_misplaced since the last look that
 * found some; without it, unknown while cpu.stat advanced in the last GROW_CHECK_TICKS
 * ticks, none after. */
TEST(cgroup_growth_from_memory_current_or_cpu_time) {
        char dir[300];
        struct fixture f;

        fixture_start(&f, 4242, 1);
        snprintf(dir, sizeof(dir), "%s/cg", tmpdir);
        free(f.cfg.cgroup_root);
        f.cfg.cgroup_root = strdup(dir);
        f.cfg.min_misplaced_kb = 1024;
        put_cgroup_file("memory.current", "1048575\n");
        scan_cg_growth(&f.env, &f.cg);
        CHECK(f.cg.growth == GROWTH_NONE && f.cg.mem_seen == 0);
        put_cgroup_file("memory.current", "1048576\n");
        scan_cg_growth(&f.env, &f.cg);
        CHECK(f.cg.growth == GROWTH_SOME && f.cg.mem_seen == 1048576);
        scan_cg_growth(&f.env, &f.cg);
        CHECK(f.cg.growth == GROWTH_NONE);

        put_cgroup_file("memory.current", NULL);
        put_cgroup_file("cpu.stat", "usage_usec 10\n");
        for (f.env.tick = 1; f.env.tick <= GROW_CHECK_TICKS; f.env.tick++) {
                scan_cg_growth(&f.env, &f.cg);
                CHECK(f.cg.growth == GROWTH_UNKNOWN);
        }
        scan_cg_growth(&f.env, &f.cg);
        CHECK(f.cg.growth == GROWTH_NONE);
        put_cgroup_file("cpu.stat", "usage_usec 11\n");
        scan_cg_growth(&f.env, &f.cg);
        CHECK(f.cg.growth == GROWTH_UNKNOWN);
        put_cgroup_file("cpu.stat", NULL);
        fixture_done(&f);
}

static int intro(void) {
        char cmd[4096];

        if (!mkdtemp(tmpdir))
                return 1;
        snprintf(proc_root, sizeof(proc_root), "%s/proc", tmpdir);
        /* Each thread's numa_maps: the main one's (no thread policy of its own). */
        snprintf(cmd, sizeof(cmd),
                 "mkdir -p '%s' && for p in 3001 3002; do cp -r '%s/manager/proc/'$p '%s/'$p && "
                 "for t in '%s'/$p/task/*; do cp '%s/'$p/numa_maps \"$t/numa_maps\" || exit 1; done || exit 1; done && "
                 "cp -r '%s/3001' '%s/3003' && mkdir -p '%s/cg/app.slice'",
                 proc_root, TEST_DATA_DIR, proc_root, proc_root, proc_root, proc_root, proc_root, tmpdir);
        if (system(cmd) != 0)
                return 1;
        if (topology_read(TEST_DATA_DIR "/sys/2n2c", &topo) < 0)
                return 1;
        return 0;
}

static void outro(void) {
        topology_free(topo);
        tmptree_remove(tmpdir);
}

DEFINE_TEST_MAIN_FULL(intro, outro)
