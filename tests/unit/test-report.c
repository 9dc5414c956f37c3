/* SPDX-License-Identifier: GPL-2.0-or-later */
/* report (status, list, explain as JSON; the metrics text) and lib/jv, on a
 * manager view built by hand (manager.h: the records, ledger and counters, each as its
 * module keeps it) with a fake /proc and cgroup tree in a temporary directory.
 *
 *   test-report                   the checks
 *   test-report --metrics FILE    writes the metrics of the same state to FILE (for
 *                                 test-metrics.py, which parses them strictly) */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <sys/inotify.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include "cleanup.h"
#include "config.h"
#include "control.h"
#include "histogram.h"
#include "json.h"
#include "jv.h"
#include "manager.h"
#include "metrics.h"
#include "move-check.h"
#include "report.h"
#include "control-request.h"
#include "test.h"
#include "tmptree.h"

static char tmpdir[] = "/tmp/test-report-XXXXXX";
/* The state every case reports on, made by intro(), and the view of it. */
static struct {
        struct nb_config cfg;
        struct manager_opts opts;
        char *proc_root;
        struct topology *topo;
        struct proc_records procs;
        struct cg_records cgs;
        struct cost_ledger cost;
        struct counters counters;
        struct service_pins service;
} state;
static struct manager_view mgr;

/* The stored fixture tests/data/proc/FIXTURE as dir/name. */
static void copy_fixture(const char *dir, const char *name, const char *fixture) {
        char from[4096], to[4096 + 64];

        snprintf(from, sizeof(from), "%s/proc/%s", TEST_DATA_DIR, fixture);
        snprintf(to, sizeof(to), "%s/%s", dir, name);
        tmptree_copy(from, to);
}

/* A fake process under <tmp>/proc/PID with the fixture's stat/status and a cgroup file. */
static void fake_proc(int pid, const char *fixture, const char *cgroup_line) {
        char dir[4096], stat_name[64], status_name[64];
        snprintf(dir, sizeof(dir), "%s/proc/%d", tmpdir, pid);
        mkdir(dir, 0755);
        snprintf(stat_name, sizeof(stat_name), "%s.stat", fixture);
        snprintf(status_name, sizeof(status_name), "%s.status", fixture);
        copy_fixture(dir, "stat", stat_name);
        copy_fixture(dir, "status", status_name);
        if (cgroup_line)
                tmptree_write_at(dir, "cgroup", cgroup_line);
}

/* The user the cases ask as: uid 1000 when the test runs as root (it can give files
 * to anyone), else the runner itself (the fake /proc files are its own). */
static uid_t user;

/* Process pid of the fake /proc gets the ids uids and gids ("Uid:" and "Gid:" values)
 * and its stat file belongs to owner (root: not dumpable). false when only root could
 * do that. */
static bool fake_ids(int pid, const char *uids, const char *gids, uid_t owner) {
        char path[4096], *text = NULL, *u, *g;
        size_t len = 0;
        FILE *f;

        snprintf(path, sizeof(path), "%s/proc/%d/status", tmpdir, pid);
        f = fopen(path, "r");
        if (!f || getdelim(&text, &len, 0, f) < 0 || !(u = strstr(text, "Uid:")) || !(g = strstr(text, "Gid:")))
                abort();
        fclose(f);
        *u = *g = 0;
        f = fopen(path, "w");
        fprintf(f, "%sUid:\t%s\nGid:\t%s\n%s", text, uids, gids, strchr(g + 1, '\n') + 1);
        fclose(f);
        free(text);
        snprintf(path, sizeof(path), "%s/proc/%d/stat", tmpdir, pid);
        return owner == geteuid() || chown(path, owner, owner) == 0;
}

/* All four ids, "U\tU\tU\tU". */
static const char *ids4(uid_t u) {
        static char b[4][64];
        static unsigned k;
        char *s = b[k++ % 4];
        snprintf(s, 64, "%u\t%u\t%u\t%u", u, u, u, u);
        return s;
}

static uint64_t mono_ms(void) {
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        return (uint64_t) ts.tv_sec * 1000 + (uint64_t) ts.tv_nsec / 1000000;
}

static struct cg_rec cg_a = { .path = "/a.slice", .mode = CG_MODE_BALANCE, .source = CG_FROM_TRUSTED, .owner = 0,
                              .n_procs = 2, .pages = { 100, 5, 3, 2, 1 },
                              .cost_ns = { [STAGE_READ] = 1500000000, [STAGE_DECIDE] = 2000, [STAGE_MIGRATE] = 3000,
                                           [STAGE_WALK] = 400, [STAGE_BOOKKEEPING] = 500, [STAGE_REPORT] = 600 },
                              .seen = true };
/* A delegated cgroup with a hostile name: a quote, a backslash, a newline. */
static struct cg_rec cg_b = { .path = "/user.slice/x\"y\\z\nw", .mode = CG_MODE_ADVISE, .source = CG_FROM_USER,
                              .owner = 1000, .n_procs = 1, .pages = { 7 }, .cost_ns = { 20 }, .seen = true };
static struct cg_rec cg_old = { .path = "/gone.slice", .mode = CG_MODE_BALANCE, .source = CG_FROM_CONFIG,
                                .pages = { 7 }, .cost_ns = { [STAGE_READ] = 10 }, .seen = false };
/* Walked, not opted in. */
static struct subtree_rec st_user = { .path = "/user.slice", .walk_ns = 7000 };
static uint64_t nb1[2] = { 1000, 3000 }, nb2[2] = { 4096, 0 }, nb3[2] = { 0, 8192 };
static struct proc_rec p1 = { .pid = 100, .comm = "db\x01\xff", .uid = 0, .cg = &cg_a, .reason = REASON_NONE,
                              .hot_node = 1, .target_node = 1, .moved.pages = { 100, 5, 3, 2, 1 },
                              .cost_ns = { 1000, 2000, 3000 }, .total_bytes = 4000, .local_bytes = 3000,
                              .node_bytes = nb1, .scans = 4, .sched.interval_ms = 500 };
static struct proc_rec p2 = { .pid = 200, .comm = "user-app", .uid = 1000, .cg = &cg_b, .reason = REASON_SHARED,
                              .hot_node = 0, .target_node = -1, .total_bytes = 4096, .local_bytes = 4096,
                              .node_bytes = nb2, .scans = 1 };
/* uid 1000's process in root's cgroup. */
static struct proc_rec p3 = { .pid = 300, .comm = "user-in-root", .uid = 1000, .cg = &cg_a, .reason = _REASON_MAX,
                              .hot_node = -1, .target_node = -1, .node_bytes = nb3 };
/* In uid 1000's cgroup, with its real uid: sudo (euid 0), and one that is not dumpable
 * (root only, not made otherwise). */
static struct proc_rec p4 = { .pid = 500, .comm = "sudo", .uid = 1000, .cg = &cg_b, .reason = _REASON_MAX,
                              .hot_node = -1, .target_node = -1 };
static struct proc_rec p5 = { .pid = 501, .comm = "agent", .uid = 1000, .cg = &cg_b, .reason = _REASON_MAX,
                              .hot_node = -1, .target_node = -1 };

/* The watched processes' /proc: all of the "normal" fixture (start time 1667), with the
 * ids each has. */
static void fake_watched(void) {
        static struct proc_rec *all[] = { &p1, &p2, &p3, &p4, &p5 };
        char sudo[64];
        bool made;

        for (size_t i = 0; i < ELEMENTSOF(all); i++) {
                fake_proc(all[i]->pid, "normal", "0::/a.slice\n");
                all[i]->starttime = 1667;
        }
        p2.uid = p3.uid = p4.uid = p5.uid = cg_b.owner = user;
        made = fake_ids(200, ids4(user), ids4(user), user) && fake_ids(300, ids4(user), ids4(user), user);
        if (!made) {
                fprintf(stderr, "cannot give the fake /proc files to uid %u\n", (unsigned) user);
                abort();
        }
        snprintf(sudo, sizeof(sudo), "%u\t0\t0\t0", (unsigned) user);
        (void) fake_ids(500, sudo, ids4(user), 0);
        (void) fake_ids(501, ids4(user), ids4(user), 0);
}

static void build(struct manager_view *v) {
        static struct cg_rec *cgs[] = { &cg_a, &cg_b, &cg_old };
        static struct proc_rec *procs[] = { &p1, &p2, &p3, &p4, &p5 };
        static struct subtree_rec *subtrees[] = { &st_user };
        char path[4096];
        int r;

        config_defaults(&state.cfg);
        snprintf(path, sizeof(path), "%s/cg", tmpdir);
        free(state.cfg.cgroup_root);
        state.cfg.cgroup_root = strdup(path);
        state.cfg.cooldown_ms = 30000;
        snprintf(path, sizeof(path), "%s/proc", tmpdir);
        state.proc_root = strdup(path);
        r = topology_read(TEST_DATA_DIR "/sys/2n2c", &state.topo);
        if (r < 0 || state.topo->n_nodes != 2) {
                fprintf(stderr, "cannot read the 2n2c topology\n");
                abort();
        }
        state.cgs.v = cgs;
        state.cgs.n = ELEMENTSOF(cgs);
        state.procs.v = procs;
        state.procs.n = ELEMENTSOF(procs);
        state.cost.subtrees = subtrees;
        state.cost.n_subtrees = ELEMENTSOF(subtrees);
        /* What was charged: the records' (a record that left would still count here),
         * and the subtree's walk. */
        for (size_t i = 0; i < ELEMENTSOF(cgs); i++)
                for (int s = 0; s < _STAGE_MAX; s++)
                        state.cost.total_ns[s] += cgs[i]->cost_ns[s];
        state.cost.total_ns[STAGE_WALK] += st_user.walk_ns;
        state.cost.subtree_walk_ns = st_user.walk_ns;
        state.cost.startup_cpu_ns = 2000000;
        state.cost.unattributed_ns = 5000000;
        state.counters.tick = 42;
        state.counters.last_tick_ns = 1234567;
        /* Ticks of 3 ms, 7 ms and 40 s (+Inf); one job's two move calls (1 ms each)
         * and another's of 200 us, summed as the event loop sums them. */
        histogram_observe(&state.counters.ticks, &histogram_tick_bounds, 3000000);
        histogram_observe(&state.counters.ticks, &histogram_tick_bounds, 7000000);
        histogram_observe(&state.counters.ticks, &histogram_tick_bounds, 40000000000ull);
        struct histogram job1 = {}, job2 = {};
        histogram_observe(&job1, &histogram_move_call_bounds, 1000000);
        histogram_observe(&job1, &histogram_move_call_bounds, 1000000);
        histogram_observe(&job2, &histogram_move_call_bounds, 200000);
        histogram_add(&state.counters.move_calls, &job1);
        histogram_add(&state.counters.move_calls, &job2);
        state.counters.total_pages[MIG_MOVED] = 100;
        state.counters.started_ms = mono_ms() - 5000;
        *v = (struct manager_view) {
                .cfg = &state.cfg,
                .opts = &state.opts,
                .proc_root = state.proc_root,
                .topo = state.topo,
                .source = &node_time_source_proc,
                .service = &state.service,
                .procs = &state.procs,
                .cgs = &state.cgs,
                .cost = &state.cost,
                .counters = &state.counters,
        };
        p1.skipped_bytes[REASON_SHARED] = 8192;
        static struct plan_history h1[1];
        h1[0] = (struct plan_history) { 0x1000, 1, mono_ms() - 1000 };
        p1.moved.hist = h1;
        p1.moved.n_hist = p1.moved.cap_hist = 1;
        p1.sched.next_scan_ms = mono_ms() + 400;
        p1.last_scan_ms = mono_ms() - 100;
        p1.moved.stop = &move_stop_policy;
        p1.moved.stop_ms = mono_ms() - 50;
        nodemask_parse("0-1", &p1.mems_allowed);
}

/* Runs a report into a buffer and parses it; NULL (and a failed check) if invalid. */
static struct jv *doc(int (*fn)(const struct manager_view *, uid_t, FILE *), const struct manager_view *m, uid_t uid) {
        char *buf = NULL;
        size_t len = 0, off = 0;
        FILE *f = open_memstream(&buf, &len);
        struct jv *v = NULL;
        int r;

        r = fn(m, uid, f);
        fclose(f);
        CHECK_INT(r, 0);
        CHECK(len > 0 && buf[len - 1] == '\n');
        r = jv_parse(buf, len, &v, &off);
        if (r < 0)
                fprintf(stderr, "invalid JSON at byte %zu: %s\n", off, buf);
        CHECK_INT(r, 0);
        free(buf);
        return v;
}

/* list from the start, unfiltered, as a client's first request. */
static int list_all(const struct manager_view *m, uid_t uid, FILE *f) {
        return report_list(m, uid, NULL, f);
}

static uid_t explain_uid;
static pid_t explain_pid;
static int explain_fn(const struct manager_view *m, uid_t uid, FILE *f) {
        return report_explain(m, explain_uid, explain_pid, f);
}

static struct jv *explain(const struct manager_view *m, uid_t uid, pid_t pid) {
        explain_uid = uid;
        explain_pid = pid;
        return doc(explain_fn, m, uid);
}

TEST(status_counts) {
        struct jv *d = doc(report_status, &mgr, 0);
        CHECK_STR(jv_str(jv_get(d, "sampling_source"), NULL), "proc");
        CHECK_INT(jv_u64(jv_get(d, "ticks"), 0), 42);
        CHECK_INT(jv_u64(jv_get(d, "last_tick_ns"), 0), 1234567);
        CHECK_INT(jv_u64(jv_get(d, "cgroups_watched"), 0), 2);
        CHECK_INT(jv_u64(jv_get(d, "processes_watched"), 0), 5);
        CHECK_STR(jv_str(jv_get(d, "scope"), NULL), "all");
        CHECK_INT(jv_u64(jv_get(jv_get(d, "pages"), "moved"), 0), 100);
        CHECK(jv_u64(jv_get(d, "uptime_ms"), 0) >= 5000);
        /* All that was charged, the inactive cgroup and the subtree walked included. */
        CHECK_INT(jv_u64(jv_get(jv_get(jv_get(d, "cpu_ns"), "by_stage"), "read"), 0), 1500000030);
        CHECK_INT(jv_u64(jv_get(jv_get(jv_get(d, "cpu_ns"), "by_stage"), "walk"), 0), 7400);
        CHECK_INT(jv_u64(jv_get(jv_get(jv_get(d, "cpu_ns"), "by_stage"), "bookkeeping"), 0), 500);
        CHECK_INT(jv_u64(jv_get(jv_get(jv_get(d, "cpu_ns"), "by_stage"), "report"), 0), 600);
        CHECK_INT(jv_u64(jv_get(jv_get(jv_get(d, "cpu_ns"), "by_stage"), "total"), 0), 1500013530);
        CHECK_INT(jv_u64(jv_get(jv_get(d, "cpu_ns"), "walk_not_opted_in"), 0), 7000);
        CHECK_INT(jv_u64(jv_get(jv_get(d, "cpu_ns"), "startup"), 0), 2000000);
        /* At least what the last tick found (this process's own CPU time is less than
         * the 1.5 s charged by hand: the stored value it is). */
        CHECK(jv_u64(jv_get(jv_get(d, "cpu_ns"), "unattributed"), 0) >= 5000000);
        CHECK(jv_u64(jv_get(jv_get(d, "cpu_ns"), "process"), 0) > 0);
        jv_free(d);
}

/* memory_nodes: each node with memory, its kernel tier (null: none) and whether it is
 * slow; on 2n2c none is, on 2n1m-tiered node 2 (memory_tier8 below DRAM's 4) is. */
TEST(status_memory_nodes) {
        struct manager_view tiered = mgr;
        struct topology *t = NULL;
        const struct jv *nodes, *n2;
        struct jv *d = doc(report_status, &mgr, 0);

        nodes = jv_get(d, "memory_nodes");
        CHECK(nodes && nodes->type == JV_ARRAY && nodes->n == 2);
        for (size_t i = 0; nodes && i < nodes->n; i++) {
                CHECK_INT(jv_u64(jv_get(&nodes->items[i], "node"), 9), i);
                CHECK(jv_is_null(jv_get(&nodes->items[i], "tier")));
                CHECK(!jv_bool(jv_get(&nodes->items[i], "slow"), true));
        }
        jv_free(d);

        CHECK_INT(topology_read(TEST_DATA_DIR "/sys/2n1m-tiered", &t), 0);
        if (!t)
                return;
        tiered.topo = t;
        d = doc(report_status, &tiered, 0);
        nodes = jv_get(d, "memory_nodes");
        CHECK(nodes && nodes->n == 3);
        n2 = nodes && nodes->n == 3 ? &nodes->items[2] : NULL;
        CHECK_INT(jv_u64(jv_get(n2, "node"), 9), 2);
        CHECK_INT(jv_u64(jv_get(n2, "tier"), 0), 8);
        CHECK(jv_bool(jv_get(n2, "slow"), false));
        CHECK(!jv_bool(jv_get(n2, "has_cpus"), true));
        CHECK(!jv_bool(jv_get(nodes ? &nodes->items[0] : NULL, "slow"), true));
        CHECK_INT(jv_u64(jv_get(nodes ? &nodes->items[0] : NULL, "tier"), 0), 4);
        jv_free(d);
        topology_free(t);
}

/* null without sys/kernel/numa_balancing in the fake /proc; its value with it. */
TEST(status_kernel_numa_balancing) {
        char path[4096];
        struct jv *d = doc(report_status, &mgr, 0);

        CHECK(jv_is_null(jv_get(d, "kernel_numa_balancing")) && jv_get(d, "kernel_numa_balancing"));
        jv_free(d);

        tmptree_write_at(tmpdir, "proc/sys/kernel/numa_balancing", "3\n");
        d = doc(report_status, &mgr, 1000);
        CHECK_INT(jv_u64(jv_get(d, "kernel_numa_balancing"), 99), 3);
        jv_free(d);
        snprintf(path, sizeof(path), "%s/proc/sys/kernel/numa_balancing", tmpdir);
        unlink(path);
}

static bool has_pid(const struct jv *procs, int64_t pid) {
        for (size_t i = 0; procs && i < procs->n; i++)
                if (jv_i64(jv_get(&procs->items[i], "pid"), 0) == pid)
                        return true;
        return false;
}

/* As root: every cgroup (the inactive one too) and every process. */
TEST(list_as_root) {
        struct jv *d = doc(list_all, &mgr, 0);
        const struct jv *cgs = jv_get(d, "cgroups"), *procs = jv_get(d, "processes"), *c, *p;

        CHECK(cgs && cgs->n == 3);
        CHECK(procs && procs->n == 5);
        c = cgs ? &cgs->items[0] : NULL;
        CHECK_STR(jv_str(jv_get(c, "path"), NULL), "/a.slice");
        CHECK_STR(jv_str(jv_get(c, "mode"), NULL), "balance");
        CHECK_STR(jv_str(jv_get(c, "source"), NULL), "trusted.numabalanced");
        CHECK_INT(jv_u64(jv_get(c, "processes"), 0), 2);
        /* Locality of the cgroup: the sum of its processes (p1 + p3) per node. */
        CHECK_INT(jv_u64(jv_get(&jv_get(c, "nodes")->items[0], "bytes"), 0), 1000);
        CHECK_INT(jv_u64(jv_get(&jv_get(c, "nodes")->items[1], "bytes"), 0), 3000 + 8192);
        CHECK_INT(jv_u64(jv_get(jv_get(c, "pages"), "refused"), 0), 1);
        CHECK_INT(jv_u64(jv_get(jv_get(c, "cpu_ns"), "read"), 0), 1500000000);
        CHECK_INT(jv_u64(jv_get(jv_get(c, "cpu_ns"), "walk"), 0), 400);
        CHECK_INT(jv_u64(jv_get(jv_get(c, "cpu_ns"), "bookkeeping"), 0), 500);
        CHECK_INT(jv_u64(jv_get(jv_get(c, "cpu_ns"), "report"), 0), 600);
        CHECK_INT(jv_u64(jv_get(jv_get(c, "cpu_ns"), "total"), 0), 1500006500);
        /* The subtrees walked but not opted in, for root. */
        CHECK(jv_get(d, "subtrees_walked") && jv_get(d, "subtrees_walked")->n == 1);
        CHECK_STR(jv_str(jv_get(&jv_get(d, "subtrees_walked")->items[0], "path"), NULL), "/user.slice");
        CHECK_INT(jv_u64(jv_get(&jv_get(d, "subtrees_walked")->items[0], "walk_cpu_ns"), 0), 7000);
        /* By path; the hostile path comes back exactly. */
        CHECK_STR(jv_str(jv_get(&cgs->items[1], "path"), NULL), "/gone.slice");
        CHECK(!jv_bool(jv_get(&cgs->items[1], "active"), true));
        CHECK_STR(jv_str(jv_get(&cgs->items[2], "path"), NULL), "/user.slice/x\"y\\z\nw");
        /* All of it fits: no cursor. */
        CHECK(!jv_bool(jv_get(d, "truncated"), true));
        CHECK(!jv_get(d, "next"));
        p = procs ? &procs->items[0] : NULL;
        CHECK_INT(jv_i64(jv_get(p, "pid"), 0), 100);
        /* comm: the control byte is escaped and reads back as U+0001; the byte 0xff, no
         * UTF-8, as U+FFFD. */
        CHECK_STR(jv_str(jv_get(p, "comm"), NULL), "db\x01\xef\xbf\xbd");
        CHECK_INT((int) (jv_num(jv_get(p, "local_share"), 0) * 100), 75);
        CHECK_INT(jv_u64(jv_get(p, "pages_moved"), 0), 100);
        CHECK_STR(jv_str(jv_get(p, "reason"), NULL), "none");
        CHECK_INT(jv_i64(jv_get(p, "hot_node"), -1), 1);
        CHECK(jv_is_null(jv_get(&procs->items[2], "reason")));
        jv_free(d);
}

/* uid 1000: its own cgroup (b) only; its processes p2 (in b) and p3 (its uid, in
 * root's cgroup); never root's p1 nor root's cgroups, nor the processes in its cgroup
 * that it may not ptrace: sudo (its real uid, euid 0) and, as root can make it, one
 * that is not dumpable. */
TEST(list_as_a_user) {
        struct jv *d = doc(list_all, &mgr, user);
        const struct jv *cgs, *procs;

        cgs = jv_get(d, "cgroups");
        procs = jv_get(d, "processes");
        CHECK(cgs && cgs->n == 1);
        CHECK_STR(jv_str(jv_get(&cgs->items[0], "path"), NULL), "/user.slice/x\"y\\z\nw");
        CHECK(procs && procs->n == (geteuid() == 0 ? 2 : 3));
        CHECK(!has_pid(procs, 100) && has_pid(procs, 200) && has_pid(procs, 300) && !has_pid(procs, 500));
        if (geteuid() == 0)
                CHECK(!has_pid(procs, 501));
        /* Root's top-level cgroups are not a user's to see. */
        CHECK(jv_get(d, "subtrees_walked") && jv_get(d, "subtrees_walked")->n == 0);
        jv_free(d);
}

/* A user's status counts what it may see: its one cgroup and two processes, its
 * cgroup's pages and CPU time; root's are the daemon's totals. */
TEST(status_as_a_user) {
        struct jv *d = doc(report_status, &mgr, user);

        CHECK_STR(jv_str(jv_get(d, "scope"), NULL), "own");
        CHECK_INT(jv_u64(jv_get(d, "cgroups_watched"), 99), 1);
        CHECK_INT(jv_u64(jv_get(d, "processes_watched"), 99), geteuid() == 0 ? 2 : 3);
        CHECK_INT(jv_u64(jv_get(jv_get(d, "pages"), "moved"), 99), 7);
        CHECK_INT(jv_u64(jv_get(jv_get(jv_get(d, "cpu_ns"), "by_stage"), "read"), 99), 20);
        jv_free(d);
        d = doc(report_status, &mgr, 2000);
        CHECK_INT(jv_u64(jv_get(d, "cgroups_watched"), 99), 0);
        CHECK_INT(jv_u64(jv_get(d, "processes_watched"), 99), 0);
        CHECK_INT(jv_u64(jv_get(jv_get(d, "pages"), "moved"), 99), 0);
        CHECK_INT(jv_u64(jv_get(jv_get(jv_get(d, "cpu_ns"), "by_stage"), "total"), 99), 0);
        jv_free(d);
}

/* The status files of the user's four processes opened since the last call, as
 * inotify saw them: each open is one read of that process's credentials. */
static int status_opens(int in) {
        char buf[4096] __attribute__((aligned(__alignof__(struct inotify_event))));
        int n = 0;
        ssize_t len;

        while ((len = read(in, buf, sizeof(buf))) > 0)
                for (char *at = buf; at < buf + len; at += sizeof(struct inotify_event) + ((struct inotify_event *) at)->len)
                        n += (((struct inotify_event *) at)->mask & IN_OPEN) != 0;
        return n;
}

static int list_fn(const struct manager_view *m, uid_t uid, FILE *f) {
        return report_list(m, uid, NULL, f);
}

/* A user's status and list read each of its processes' credentials once a tick, not
 * once a request: ten requests of each in one tick open each process's status once
 * (four, of the four processes whose real uid is the user's), and say the same as
 * the view that reads at each question; the next tick reads them again, once. */
TEST(visibility_read_once_a_tick) {
        static const int pids[] = { 200, 300, 500, 501 };
        struct manager_view v = mgr;
        char path[4096], *a = NULL, *b = NULL;
        size_t la = 0, lb = 0;
        int in = inotify_init1(IN_NONBLOCK | IN_CLOEXEC), opens;
        FILE *f;

        CHECK(in >= 0);
        for (size_t i = 0; i < ELEMENTSOF(pids); i++) {
                snprintf(path, sizeof(path), "%s/proc/%d/status", tmpdir, pids[i]);
                CHECK(inotify_add_watch(in, path, IN_OPEN) >= 0);
        }
        /* Without the memo: every request reads them all. */
        for (int i = 0; i < 10; i++) {
                jv_free(doc(report_status, &mgr, user));
                jv_free(doc(list_fn, &mgr, user));
        }
        opens = status_opens(in);
        printf("20 requests read at each question: %d opens of status\n", opens);
        CHECK_INT(opens, 20 * 4);

        v.seen = report_seen_new();
        CHECK(v.seen != NULL);
        for (int i = 0; i < 10; i++) {
                jv_free(doc(report_status, &v, user));
                jv_free(doc(list_fn, &v, user));
        }
        opens = status_opens(in);
        printf("20 requests in one tick with the memo: %d opens of status\n", opens);
        CHECK_INT(opens, 4);
        /* Root asks nothing of /proc; another user only about its own. */
        jv_free(doc(report_status, &v, 0));
        jv_free(doc(report_status, &v, 2000));
        CHECK_INT(status_opens(in), 0);
        /* The same answers. */
        f = open_memstream(&a, &la);
        CHECK_INT(report_list(&v, user, NULL, f), 0);
        fclose(f);
        f = open_memstream(&b, &lb);
        CHECK_INT(report_list(&mgr, user, NULL, f), 0);
        fclose(f);
        CHECK(a && b && la == lb && memcmp(a, b, la) == 0);
        free(a);
        free(b);
        (void) status_opens(in);

        /* The next tick: read again, once. */
        state.counters.tick++;
        for (int i = 0; i < 5; i++)
                jv_free(doc(report_status, &v, user));
        CHECK_INT(status_opens(in), 4);

        /* A process the tick admitted after the first request (a long tick serves the
         * socket): read when first asked about, the others not again. */
        {
                static struct proc_rec p6 = { .pid = 502, .comm = "late", .cg = &cg_b, .reason = _REASON_MAX,
                                              .hot_node = -1, .target_node = -1, .starttime = 1667 };
                static struct proc_rec *more[6];
                struct proc_records saved = state.procs;
                struct jv *d;

                p6.uid = user;
                fake_proc(502, "normal", "0::/a.slice\n");
                if (!fake_ids(502, ids4(user), ids4(user), user))
                        TEST_FAIL("cannot give pid 502's files to uid %u", (unsigned) user);
                snprintf(path, sizeof(path), "%s/proc/502/status", tmpdir);
                CHECK(inotify_add_watch(in, path, IN_OPEN) >= 0);
                memcpy(more, state.procs.v, 5 * sizeof(*more));
                more[5] = &p6;
                state.procs.v = more;
                state.procs.n = 6;
                d = doc(report_status, &v, user);
                CHECK_INT(jv_u64(jv_get(d, "processes_watched"), 99), geteuid() == 0 ? 3 : 4);
                jv_free(d);
                CHECK_INT(status_opens(in), 1);
                state.procs = saved;
        }
        state.counters.tick--;
        report_seen_free(v.seen);
        close(in);
}

TEST(list_as_a_user_with_nothing) {
        struct jv *d = doc(list_all, &mgr, 2000);

        CHECK(jv_get(d, "cgroups") && jv_get(d, "cgroups")->n == 0);
        CHECK(jv_get(d, "processes") && jv_get(d, "processes")->n == 0);
        jv_free(d);
}

/* list with a request line (filters, a cursor), as the socket passes it; *ret_len:
 * the reply's size. */
static struct jv *list_req(const char *line, uid_t uid, size_t *ret_len) {
        struct control_request req;
        const char *err = NULL;
        char *buf = NULL;
        size_t len = 0, off = 0;
        FILE *f = open_memstream(&buf, &len);
        struct jv *v = NULL;

        CHECK_INT(control_request_parse(line, strlen(line), &req, &err), 0);
        CHECK_INT(report_list(&mgr, uid, &req, f), 0);
        fclose(f);
        CHECK_INT(jv_parse(buf, len, &v, &off), 0);
        free(buf);
        if (ret_len)
                *ret_len = len;
        return v;
}

/* A cgroup filter takes the cgroup and those below it, with their processes; a pid
 * filter its process and that process's cgroup; what a user may not see stays hidden
 * whatever it names. */
TEST(list_filtered) {
        struct jv *d = list_req("list /a.slice", 0, NULL);
        const struct jv *cgs = jv_get(d, "cgroups"), *procs = jv_get(d, "processes");

        CHECK(cgs && cgs->n == 1 && procs && procs->n == 2);
        CHECK_STR(jv_str(jv_get(&cgs->items[0], "path"), NULL), "/a.slice");
        CHECK(has_pid(procs, 100) && has_pid(procs, 300));
        CHECK(jv_get(d, "subtrees_walked")->n == 0);
        jv_free(d);
        /* "/user.slice" is the parent of cg_b: below it counts; "/a" is no prefix of "/a.slice". */
        d = list_req("list /user.slice /a", 0, NULL);
        cgs = jv_get(d, "cgroups");
        CHECK(cgs && cgs->n == 1);
        CHECK_STR(jv_str(jv_get(&cgs->items[0], "path"), NULL), "/user.slice/x\"y\\z\nw");
        jv_free(d);
        /* The hostile name, percent-encoded as numabalancectl sends it. */
        d = list_req("list /user.slice/x%22y%5Cz%0Aw", 0, NULL);
        CHECK(jv_get(d, "cgroups")->n == 1 && jv_get(d, "processes")->n == 3);
        jv_free(d);
        d = list_req("list 200", 0, NULL);
        cgs = jv_get(d, "cgroups");
        procs = jv_get(d, "processes");
        CHECK(cgs && cgs->n == 1 && procs && procs->n == 1 && has_pid(procs, 200));
        jv_free(d);
        /* uid 2000 names root's cgroup and process: nothing. */
        d = list_req("list /a.slice 100", 2000, NULL);
        CHECK(jv_get(d, "cgroups")->n == 0 && jv_get(d, "processes")->n == 0);
        jv_free(d);
}

TEST(explain_a_process_being_moved) {
        struct jv *d = explain(&mgr, 0, 100);
        const struct jv *sk;

        CHECK(jv_bool(jv_get(d, "watched"), false));
        CHECK_STR(jv_str(jv_get(d, "mode"), NULL), "balance");
        CHECK_STR(jv_str(jv_get(d, "mems_allowed"), NULL), "0-1");
        CHECK_INT(jv_i64(jv_get(d, "hot_node"), -1), 1);
        CHECK_INT(jv_i64(jv_get(d, "target_node"), -1), 1);
        CHECK_STR(jv_str(jv_get(d, "reason"), NULL), "none");
        CHECK(strstr(jv_str(jv_get(d, "explanation"), ""), "moving its misplaced memory to node 1"));
        /* The check before moving stopped its moves since the scan: why. */
        CHECK(strstr(jv_str(jv_get(d, "explanation"), ""), "; stopped before moving it all: a memory policy"));
        CHECK_STR(jv_str(jv_get(jv_get(d, "move_stopped"), "reason"), NULL), "policy-changed");
        CHECK(jv_u64(jv_get(jv_get(d, "move_stopped"), "ago_ms"), 0) >= 50);
        sk = jv_get(d, "skipped_bytes");
        CHECK(sk && sk->n == 1 && jv_u64(jv_get(sk, "shared"), 0) == 8192);
        CHECK_INT(jv_u64(jv_get(jv_get(d, "cooldown"), "ranges"), 0), 1);
        CHECK(jv_u64(jv_get(jv_get(d, "cooldown"), "remaining_ms"), 0) > 25000);
        CHECK(jv_u64(jv_get(d, "next_scan_in_ms"), 9999) <= 400);
        jv_free(d);
}

TEST(explain_why_not_moving) {
        struct jv *d = explain(&mgr, 0, 200);

        CHECK_STR(jv_str(jv_get(d, "reason_text"), NULL), plan_reason_text(REASON_SHARED));
        CHECK_STR(jv_str(jv_get(d, "explanation"), NULL),
                  "not moving: the misplaced pages are shared with other processes (move_shared=no)");
        CHECK(jv_is_null(jv_get(d, "move_stopped")) && jv_get(d, "move_stopped"));
        jv_free(d);
        d = explain(&mgr, 0, 300);
        CHECK_STR(jv_str(jv_get(d, "explanation"), NULL), "watched, not scanned yet");
        jv_free(d);
}

/* The explain document, with its pid taken out: what two answers have in common. */
static char *explain_text(uid_t uid, pid_t pid) {
        char *buf = NULL, key[32], *at;
        size_t len = 0;
        FILE *f = open_memstream(&buf, &len);

        CHECK_INT(report_explain(&mgr, uid, pid, f), 0);
        fclose(f);
        snprintf(key, sizeof(key), "\"pid\":%d", (int) pid);
        at = strstr(buf, key);
        CHECK(at != NULL);
        if (at)
                memmove(at, at + strlen(key), strlen(at + strlen(key)) + 1);
        return buf;
}

/* A user asks about a pid it may not see: root's watched process, root's process that
 * is not watched, sudo with its real uid in its own cgroup, one that is not dumpable
 * (root can make it): word for word the answer for a pid that does not exist. */
TEST(explain_tells_a_user_nothing_about_what_it_may_not_see) {
        static const pid_t hidden[] = { 100, 400, 500, 501 };
        _cleanup_free_ char *none = explain_text(user, 999);
        struct jv *d;

        for (size_t i = 0; i < ELEMENTSOF(hidden); i++) {
                _cleanup_free_ char *t = NULL;

                if (hidden[i] == 501 && geteuid() != 0)
                        continue;
                t = explain_text(user, hidden[i]);
                CHECK_MSG(strcmp(t, none) == 0, "pid %d: %s\nno such pid: %s", (int) hidden[i], t, none);
        }
        d = explain(&mgr, user, 999);
        CHECK(!jv_bool(jv_get(d, "watched"), true) && !jv_bool(jv_get(d, "visible"), true));
        CHECK_STR(jv_str(jv_get(d, "why"), NULL), "not-visible");
        CHECK(!jv_get(d, "comm") && !jv_get(d, "cgroup") && !jv_get(d, "uid"));
        jv_free(d);
        /* Its own watched process, in root's cgroup: told. */
        d = explain(&mgr, user, 300);
        CHECK(jv_bool(jv_get(d, "watched"), false));
        CHECK_STR(jv_str(jv_get(d, "comm"), NULL), "user-in-root");
        jv_free(d);
}

/* Not watched: the fake /proc says why. */
TEST(explain_why_not_watched) {
        struct jv *d = explain(&mgr, 0, 400);

        CHECK(!jv_bool(jv_get(d, "watched"), true));
        CHECK_STR(jv_str(jv_get(d, "why"), NULL), "not-opted-in");
        CHECK_STR(jv_str(jv_get(d, "cgroup"), NULL), "/other.slice/x.service");
        CHECK(strstr(jv_str(jv_get(d, "explanation"), ""), "its cgroup /other.slice/x.service is not opted in"));
        jv_free(d);
        d = explain(&mgr, 0, 401);
        CHECK_STR(jv_str(jv_get(d, "why"), NULL), "not-yet-seen");
        jv_free(d);
        d = explain(&mgr, 0, 402);
        CHECK_STR(jv_str(jv_get(d, "why"), NULL), "kernel-thread");
        jv_free(d);
        d = explain(&mgr, 0, 403);
        CHECK_STR(jv_str(jv_get(d, "why"), NULL), "zombie");
        jv_free(d);
        d = explain(&mgr, 0, 404);
        CHECK_STR(jv_str(jv_get(d, "why"), NULL), "no-cgroup");
        jv_free(d);
        d = explain(&mgr, 0, 999);
        CHECK_STR(jv_str(jv_get(d, "why"), NULL), "no-such-process");
        jv_free(d);
}

/* A root process in a cgroup the user owns is still not the user's; the user's own
 * unwatched process there is explained. */
TEST(explain_unwatched_in_the_users_cgroup) {
        struct jv *d = explain(&mgr, user, 405);

        CHECK_STR(jv_str(jv_get(d, "why"), NULL), "not-visible");
        CHECK(!jv_get(d, "cgroup") && !jv_get(d, "comm"));
        jv_free(d);
        d = explain(&mgr, user, 406);
        CHECK_STR(jv_str(jv_get(d, "why"), NULL), "not-opted-in");
        CHECK_STR(jv_str(jv_get(d, "cgroup"), NULL), "/mine");
        jv_free(d);
}

/* Root asks about a process that a user's opt-in does not cover (root's, in the
 * user's opted-in cgroup): it says so. */
TEST(explain_not_covered_by_a_users_opt_in) {
        struct jv *d;

        cg_a.covers_uid = user;
        d = explain(&mgr, 0, 401);
        cg_a.covers_uid = 0;
        CHECK_STR(jv_str(jv_get(d, "why"), NULL), "not-covered");
        CHECK(strstr(jv_str(jv_get(d, "explanation"), ""), "covers only the processes uid"));
        jv_free(d);
}

/* UTF-8 names go out as they are and come back the same (they were escaped byte by
 * byte and came back as other characters); controls, C1 included, are escaped;
 * bytes that are no UTF-8 become U+FFFD. */
TEST(json_strings_in_utf8) {
        static const struct { const char *in, *out, *back; } cases[] = {
                { "/caf\xc3\xa9.slice/\xe6\x97\xa5\xf0\x9f\x98\x80", "\"/caf\xc3\xa9.slice/\xe6\x97\xa5\xf0\x9f\x98\x80\"",
                  "/caf\xc3\xa9.slice/\xe6\x97\xa5\xf0\x9f\x98\x80" },
                { "a\xc2\x9b" "31m", "\"a\\u009b31m\"", "a\xc2\x9b" "31m" },
                { "a\x1b[2J\x7f", "\"a\\u001b[2J\\u007f\"", "a\x1b[2J\x7f" },
                { "\xff\xc0\xaf", "\"\\ufffd\\ufffd\\ufffd\"", "\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd" },
                { "\xe6\x97", "\"\\ufffd\\ufffd\"", "\xef\xbf\xbd\xef\xbf\xbd" },
        };

        for (size_t i = 0; i < ELEMENTSOF(cases); i++) {
                char *buf = NULL;
                size_t len = 0, off = 0;
                FILE *f = open_memstream(&buf, &len);
                struct json j;

                json_init(&j, f, false);
                struct jv *v = NULL;

                json_string(&j, cases[i].in);
                fclose(f);
                CHECK_STR(buf, cases[i].out);
                CHECK_INT(jv_parse(buf, len, &v, &off), 0);
                CHECK_STR(jv_str(v, NULL), cases[i].back);
                jv_free(v);
                free(buf);
        }
}

TEST(json_parse_strict) {
        static const char *const good[] = {
                "{}", "[]", " 0 ", "-0.5e+3", "\"\\u00e9\\ud83d\\ude00\"", "[1,[2,{\"a\":null}],true,false]",
                "{\"a\":1,\"a\":2}",
        };
        static const char *const bad[] = {
                "", " ", "{", "[1,]", "{\"a\":1,}", "01", "1.", ".5", "-", "1e", "\"\\x\"", "\"\\u12\"", "\"a\nb\"",
                "\"\\ud800\"", "\"\\udc00\"", "\"\\u0000\"", "nul", "[1] 2", "{a:1}", "{\"a\" 1}", "'a'", "\"abc",
                "\"\\", "tru", "[1 2]", "+1", "NaN",
        };
        struct jv *v;

        for (size_t i = 0; i < ELEMENTSOF(good); i++) {
                v = NULL;
                CHECK_MSG(jv_parse(good[i], strlen(good[i]), &v, NULL) == 0, "rejected valid JSON: %s", good[i]);
                jv_free(v);
        }
        for (size_t i = 0; i < ELEMENTSOF(bad); i++) {
                v = NULL;
                CHECK_MSG(jv_parse(bad[i], strlen(bad[i]), &v, NULL) == -EINVAL, "accepted invalid JSON: %s", bad[i]);
                jv_free(v);
        }
}

TEST(json_parse_values) {
        char deep[200];
        struct jv *v;

        CHECK_INT(jv_parse("\"\\u00e9\\ud83d\\ude00\"", 20, &v, NULL), 0);
        CHECK_STR(jv_str(v, NULL), "\xc3\xa9\xf0\x9f\x98\x80");
        jv_free(v);
        CHECK_INT(jv_parse("18446744073709551615", 20, &v, NULL), 0);
        CHECK(jv_u64(v, 0) == UINT64_MAX);
        jv_free(v);
        memset(deep, '[', sizeof(deep));
        CHECK_INT(jv_parse(deep, sizeof(deep), &v, NULL), -EINVAL);
}

/* metrics_put_label_value(s) as a string. */
static const char *label(const char *s) {
        static char out[256];
        char *buf = NULL;
        size_t len = 0;
        FILE *f = open_memstream(&buf, &len);

        metrics_put_label_value(f, s);
        fclose(f);
        snprintf(out, sizeof(out), "%s", buf);
        free(buf);
        return out;
}

#define FFFD "\xef\xbf\xbd"

TEST(metrics_label_escape) {
        /* A tab, like every control but the newline, is the text \x09 (its backslash
         * escaped for the format). */
        CHECK_STR(label("a\\b\"c\nd\te"), "a\\\\b\\\"c\\nd\\\\x09e");
        /* C1 (U+009B CSI, U+0085 NEL) as the text \xNN per byte, ESC and DEL too; the
         * raw byte 0x9b is not UTF-8: U+FFFD. U+00DB (0xc3 0x9b) is text. */
        CHECK_STR(label("a\xc2\x9b" "31m\xc2\x85\x1b\x7f"),
                  "a\\\\xc2\\\\x9b31m\\\\xc2\\\\x85\\\\x1b\\\\x7f");
        CHECK_STR(label("\x9b\xc3\x9b"), FFFD "\xc3\x9b");
        /* Valid UTF-8 stays as it is: 2, 3 and 4 bytes, and the highest code point. */
        CHECK_STR(label("/caf\xc3\xa9/\xe2\x82\xac/\xf0\x9f\x98\x80/\xf4\x8f\xbf\xbf"),
                  "/caf\xc3\xa9/\xe2\x82\xac/\xf0\x9f\x98\x80/\xf4\x8f\xbf\xbf");
        /* Invalid: one U+FFFD per byte that starts no valid sequence. */
        CHECK_STR(label("a\xff" "b"), "a" FFFD "b");
        CHECK_STR(label("\xc0\xaf"), FFFD FFFD);                  /* overlong '/' */
        CHECK_STR(label("\xed\xa0\x80"), FFFD FFFD FFFD);         /* a surrogate */
        CHECK_STR(label("\xf4\x90\x80\x80"), FFFD FFFD FFFD FFFD); /* above U+10FFFF */
        CHECK_STR(label("x\xe2\x82"), "x" FFFD FFFD);               /* cut short */
        CHECK_STR(label("\x80\"\xc3"), FFFD "\\\"" FFFD);
        CHECK_STR(label(NULL), "");
}

/* The metrics file: written atomically, mode 0644 (node_exporter publishes it anyway),
 * or 0640 with the group asked for; no temporary file left; the error if the group
 * cannot be set. */
TEST(metrics_file_written_atomically) {
        struct stat st;
        char file[4096];
        int group_error = 1;

        snprintf(file, sizeof(file), "%s/m.prom", tmpdir);
        CHECK_INT(metrics_write_file(&mgr, file, (gid_t) -1, &group_error), 0);
        CHECK_INT(group_error, 0);
        CHECK(stat(file, &st) == 0 && (st.st_mode & 0777) == 0644);
        /* A group this process is a member of: no CAP_CHOWN needed. */
        CHECK_INT(metrics_write_file(&mgr, file, getegid(), &group_error), 0);
        CHECK_INT(group_error, 0);
        CHECK(stat(file, &st) == 0 && st.st_gid == getegid() && (st.st_mode & 0777) == 0640);
        if (geteuid() != 0) {
                /* Another group: refused, and the file is written all the same. */
                unlink(file);
                CHECK_INT(metrics_write_file(&mgr, file, 0, &group_error), 0);
                CHECK_INT(group_error, -EPERM);
                CHECK(stat(file, &st) == 0 && (st.st_mode & 0777) == 0640);
        }
        snprintf(file, sizeof(file), "%s/nodir/m.prom", tmpdir);
        CHECK_INT(metrics_write_file(&mgr, file, (gid_t) -1, NULL), -ENOENT);
}

/* Cgroups whose paths are not valid UTF-8: made valid, and where two become the same
 * label, the one that was valid already is kept (write_metrics() adds them for
 * test-metrics.py). */
static struct cg_rec cg_bad1 = { .path = "/user.slice/odd\xff", .mode = CG_MODE_ADVISE, .source = CG_FROM_USER,
                                 .owner = 1000, .pages = { 11 }, .seen = true };
static struct cg_rec cg_bad2 = { .path = "/user.slice/odd\xfe", .mode = CG_MODE_ADVISE, .source = CG_FROM_USER,
                                 .owner = 1000, .pages = { 22 }, .seen = true };
static struct cg_rec cg_fffd = { .path = "/user.slice/odd" FFFD, .mode = CG_MODE_ADVISE, .source = CG_FROM_USER,
                                 .owner = 1000, .pages = { 33 }, .seen = true };
static struct cg_rec cg_bad3 = { .path = "/user.slice/\xc0\xaf" "etc", .mode = CG_MODE_ADVISE,
                                 .source = CG_FROM_USER, .owner = 1000, .pages = { 44 }, .seen = true };
/* Control characters in a path: C1 CSI (U+009B), ESC, a tab. */
static struct cg_rec cg_ctl = { .path = "/user.slice/c1\xc2\x9b" "2J\x1b[0m\t", .mode = CG_MODE_ADVISE,
                                .source = CG_FROM_USER, .owner = 1000, .pages = { 55 }, .seen = true };

static struct cg_rec **with_odd_names(size_t *saved_n) {
        static struct cg_rec *cgs[8];
        struct cg_rec **saved = state.cgs.v;

        *saved_n = state.cgs.n;
        memcpy(cgs, state.cgs.v, state.cgs.n * sizeof(*cgs));
        cgs[state.cgs.n] = &cg_bad1;
        cgs[state.cgs.n + 1] = &cg_bad2;
        cgs[state.cgs.n + 2] = &cg_fffd;
        cgs[state.cgs.n + 3] = &cg_bad3;
        cgs[state.cgs.n + 4] = &cg_ctl;
        state.cgs.v = cgs;
        state.cgs.n += 5;
        return saved;
}

TEST(metrics_odd_cgroup_names) {
        size_t saved_n;
        struct cg_rec **saved = with_odd_names(&saved_n);
        char *buf = NULL;
        size_t len = 0;
        FILE *f = open_memstream(&buf, &len);

        CHECK_INT(metrics_write(&mgr, f), 0);
        fclose(f);
        state.cgs.v = saved;
        state.cgs.n = saved_n;
        CHECK(strstr(buf, "numabalanced_pages_total{cgroup=\"/user.slice/odd" FFFD "\",result=\"moved\"} 33\n"));
        CHECK(!strstr(buf, "} 11\n") && !strstr(buf, "} 22\n"));
        CHECK(strstr(buf, "numabalanced_pages_total{cgroup=\"/user.slice/" FFFD FFFD "etc\",result=\"moved\"} 44\n"));
        CHECK(strstr(buf, "\nnumabalanced_metrics_cgroups_hidden 2\n"));
        CHECK(!strstr(buf, "\xff") && !strstr(buf, "\xfe") && !strstr(buf, "\xc0"));
        CHECK(strstr(buf, "numabalanced_pages_total{cgroup=\"/user.slice/c1\\\\xc2\\\\x9b2J\\\\x1b[0m\\\\x09\","
                          "result=\"moved\"} 55\n"));
        CHECK(!strstr(buf, "\xc2\x9b") && !strchr(buf, '\x1b') && !strchr(buf, '\t'));
        free(buf);
}

/* A host writes METRICS_CGROUPS_MAX cgroups at most (its series bounded whatever its
 * tenants create); the rest are counted as hidden. */
TEST(metrics_cgroups_capped) {
        enum { EXTRA = 5 };
        size_t n = METRICS_CGROUPS_MAX + EXTRA, saved_n = state.cgs.n, lines = 0;
        struct cg_rec *many = calloc(n, sizeof(*many)), **v = calloc(n, sizeof(*v)), **saved = state.cgs.v;
        char (*paths)[32] = calloc(n, sizeof(*paths)), *buf = NULL, want[96];
        size_t len = 0;
        FILE *f;

        if (!many || !v || !paths)
                abort();
        for (size_t i = 0; i < n; i++) {
                snprintf(paths[i], sizeof(paths[i]), "/cap.slice/c%05zu", i);
                many[i] = (struct cg_rec) { .path = paths[i], .mode = CG_MODE_ADVISE, .source = CG_FROM_CONFIG,
                                            .seen = true };
                v[i] = &many[i];
        }
        state.cgs.v = v;
        state.cgs.n = n;
        f = open_memstream(&buf, &len);
        CHECK_INT(metrics_write(&mgr, f), 0);
        fclose(f);
        state.cgs.v = saved;
        state.cgs.n = saved_n;
        for (const char *p = buf; (p = strstr(p, "\nnumabalanced_cgroup_info{")); p++)
                lines++;
        CHECK_INT(lines, METRICS_CGROUPS_MAX);
        snprintf(want, sizeof(want), "\nnumabalanced_metrics_cgroups_hidden %d\n", EXTRA);
        CHECK(strstr(buf, want) != NULL);
        free(buf);
        free(paths);
        free(v);
        free(many);
}

/* Many cgroups with long names: each page is at most CONTROL_REPLY_MAX bytes, the
 * cursor leads through all of them once, in order, and the last page says it is.
 * Last of the file: under valgrind it takes seconds, which the cooldown times that
 * the explain tests check would feel. */
TEST(list_paged) {
        enum { N = 3000 };
        struct cg_rec *many = calloc(N, sizeof(*many)), **v = calloc(N + 3, sizeof(*v));
        struct cg_rec **saved = state.cgs.v;
        size_t saved_n = state.cgs.n, seen = 0, pages = 0, biggest = 0;
        char line[CONTROL_REQUEST_MAX], last[512] = "";
        bool ordered = true, more = true;

        for (size_t i = 0; i < N; i++) {
                char path[512];
                snprintf(path, sizeof(path), "/tenant.slice/%04zu-%0300d", i, 0);
                many[i] = (struct cg_rec) { .path = strdup(path), .mode = CG_MODE_ADVISE, .source = CG_FROM_USER,
                                            .owner = i % 2 ? user : 0, .seen = true };
                v[i] = &many[i];
        }
        for (size_t i = 0; i < saved_n; i++)
                v[N + i] = saved[i];
        state.cgs.v = v;
        state.cgs.n = N + saved_n;
        snprintf(line, sizeof(line), "list");
        while (more && pages < 100) {
                size_t len = 0;
                struct jv *d = list_req(line, 0, &len);
                const struct jv *cgs = jv_get(d, "cgroups");

                pages++;
                biggest = len > biggest ? len : biggest;
                for (size_t i = 0; cgs && i < cgs->n; i++) {
                        const char *path = jv_str(jv_get(&cgs->items[i], "path"), "");
                        ordered = ordered && strcmp(path, last) > 0;
                        snprintf(last, sizeof(last), "%s", path);
                        seen++;
                }
                more = jv_bool(jv_get(d, "truncated"), false);
                if (more)
                        snprintf(line, sizeof(line), "list after=%s", jv_str(jv_get(d, "next"), ""));
                jv_free(d);
        }
        printf("list of %d cgroups: %zu pages, the largest %zu bytes\n", N + 3, pages, biggest);
        CHECK(pages > 2);
        CHECK(biggest <= CONTROL_REPLY_MAX);
        CHECK_INT(seen, N + 3);
        CHECK(ordered);
        /* A user's pages hold its own cgroups only, the half it owns (and cg_b). */
        snprintf(line, sizeof(line), "list");
        seen = 0;
        for (more = true, pages = 0; more && pages < 100; pages++) {
                struct jv *d = list_req(line, user, NULL);
                const struct jv *cgs = jv_get(d, "cgroups");
                for (size_t i = 0; cgs && i < cgs->n; i++)
                        seen++;
                more = jv_bool(jv_get(d, "truncated"), false);
                if (more)
                        snprintf(line, sizeof(line), "list after=%s", jv_str(jv_get(d, "next"), ""));
                jv_free(d);
        }
        CHECK_INT(seen, N / 2 + 1);
        state.cgs.v = saved;
        state.cgs.n = saved_n;
        for (size_t i = 0; i < N; i++)
                free(many[i].path);
        free(many);
        free(v);
}

/* The fake /proc (processes that are not watched, each for another reason) and the
 * cgroup tree in tmpdir, and the manager state. */
static int intro(void) {
        static const char *const dirs[] = { "proc", "proc/sys", "proc/sys/kernel", "cg", "cg/mine" };
        char path[4096];

        user = geteuid() == 0 ? 1000 : geteuid();
        if (!mkdtemp(tmpdir)) {
                perror("mkdtemp");
                return 1;
        }
        for (size_t i = 0; i < ELEMENTSOF(dirs); i++) {
                snprintf(path, sizeof(path), "%s/%s", tmpdir, dirs[i]);
                mkdir(path, 0755);
        }
        fake_proc(400, "normal", "0::/other.slice/x.service\n");
        fake_proc(401, "normal", "0::/a.slice\n");
        fake_proc(402, "kthread", "0::/\n");
        fake_proc(403, "zombie", "0::/a.slice\n");
        fake_proc(404, "normal", "1:name=systemd:/\n");
        fake_proc(405, "normal", "0::/mine\n");
        fake_proc(406, "normal", "0::/mine\n");
        fake_watched();
        if (!fake_ids(406, ids4(user), ids4(user), user))
                return 1;
        build(&mgr);
        return 0;
}

/* What build() allocated (the records themselves are static), and tmpdir. */
static void outro(void) {
        tmptree_remove(tmpdir);
        config_done(&state.cfg);
        free(state.proc_root);
        topology_free(state.topo);
}

static int write_metrics(const char *path) {
        size_t saved_n;
        struct cg_rec **saved = with_odd_names(&saved_n);
        int r = metrics_write_file(&mgr, path, (gid_t) -1, NULL);

        state.cgs.v = saved;
        state.cgs.n = saved_n;
        if (r < 0)
                fprintf(stderr, "metrics_write_file: %s\n", strerror(-r));
        return r < 0;
}

int main(int argc, char **argv) {
        int r = intro();

        if (r != 0)
                return r;
        if (argc == 3 && strcmp(argv[1], "--metrics") == 0)
                r = write_metrics(argv[2]);
        else
                r = test_run_all(argc, argv);
        outro();
        return r;
}
