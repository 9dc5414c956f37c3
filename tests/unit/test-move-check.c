/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The check before each move call (daemon/move-check.h) on its own, without a tick and
 * without root: a job planned for the stored process 3001 (tests/data/manager) in a
 * fake /proc, a fake cgroup tree and a copy of the stored topology sys/2n2c, all under
 * a temporary directory, and one change at a time since its scan: each is seen, and
 * says why (its move_stop_* reason's name). The cases on user.* xattrs are skipped
 * where the temporary directory's file system refuses them. */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <sys/xattr.h>
#include <unistd.h>
#include "config.h"
#include "move-check.h"
#include "pagesize.h"
#include "proc.h"
#include "proc-records.h"
#include "test.h"
#include "tmptree.h"
#include "topology.h"

#define MIB (UINT64_C(1) << 20)

static char tmpdir[] = "/tmp/test-move-check-XXXXXX";
static char proc_root[256], cgroup_root[256], sys_root[256];
static struct topology *topo;
static char no_xattrs[256];     /* why the user.* cases are skipped, "" if they run */

/* A fresh copy of the process as it was scanned, in /app.slice, each thread's
 * numa_maps the main one's; and a fresh copy of the topology (node 0 with room). */
static void fresh_process(void) {
        char dir[512], from[600], to[1024];
        struct dirent *de;
        DIR *d;

        snprintf(dir, sizeof(dir), "%s/3001", proc_root);
        tmptree_remove(dir);
        tmptree_copy(TEST_DATA_DIR "/manager/proc/3001", dir);
        tmptree_write_at(dir, "cgroup", "0::/app.slice\n");
        snprintf(from, sizeof(from), "%s/numa_maps", dir);
        snprintf(to, sizeof(to), "%s/task", dir);
        d = opendir(to);
        while (d && (de = readdir(d)))
                if (de->d_name[0] != '.') {
                        snprintf(to, sizeof(to), "%s/task/%s/numa_maps", dir, de->d_name);
                        tmptree_copy(from, to);
                }
        if (d)
                closedir(d);
        tmptree_remove(sys_root);
        tmptree_copy(TEST_DATA_DIR "/sys/2n2c", sys_root);
}

/* Replaces the first what in <proc_root>/3001/<name> with with. */
static void edit(const char *name, const char *what, const char *with) {
        char path[512], *text = NULL, *at, out[65536];
        size_t len = 0;
        FILE *f;

        snprintf(path, sizeof(path), "%s/3001/%s", proc_root, name);
        f = fopen(path, "r");
        if (!f || getdelim(&text, &len, 0, f) < 0 || !(at = strstr(text, what)))
                abort();
        fclose(f);
        *at = 0;
        snprintf(out, sizeof(out), "%s%s%s", text, with, at + strlen(what));
        f = fopen(path, "w");
        fputs(out, f);
        fclose(f);
        free(text);
}

/* Node 0's MemFree in the copy of the topology, its MemTotal 1000 MiB (whose 5% is
 * 51200 kB to the byte). */
static void node0_free_kb(unsigned long kb) {
        char path[512], line[128];
        FILE *f;

        snprintf(path, sizeof(path), "%s/devices/system/node/node0/meminfo", sys_root);
        f = fopen(path, "w");
        if (!f)
                abort();
        snprintf(line, sizeof(line), "Node 0 MemTotal:        1024000 kB\nNode 0 MemFree:        %8lu kB\n", kb);
        fputs(line, f);
        fclose(f);
}

/* user.numabalanced on <cgroup_root><rel>; NULL: removed. */
static void set_user_xattr(const char *rel, const char *value) {
        char path[512];

        snprintf(path, sizeof(path), "%s%s", cgroup_root, rel);
        if (value ? setxattr(path, "user.numabalanced", value, strlen(value), 0)
                  : removexattr(path, "user.numabalanced"))
                TEST_FAIL("%s user.numabalanced on %s: %m", value ? "setxattr" : "removexattr", path);
}

/* No user.numabalanced on /app.slice (whether it had one or not). */
static void clear_xattr(void) {
        char path[512];

        snprintf(path, sizeof(path), "%s/app.slice", cgroup_root);
        if (!no_xattrs[0])
                (void) removexattr(path, "user.numabalanced");
}

/* The process's ids all uid's (status), and dumpable: its /proc/PID/stat owned by it
 * (chown needs root; without it the files are the runner's, which is uid here). */
static void ids_of(uid_t uid) {
        char path[512], ids[64];

        snprintf(ids, sizeof(ids), "Uid:\t%u\t%u\t%u\t%u", (unsigned) uid, (unsigned) uid, (unsigned) uid,
                 (unsigned) uid);
        edit("status", "Uid:\t1000\t1000\t1000\t1000", ids);
        snprintf(path, sizeof(path), "%s/3001/stat", proc_root);
        if (geteuid() == 0 && chown(path, uid, uid) < 0)
                TEST_FAIL("chown %s: %m", path);
}

/* The user that may own a delegated cgroup here: 1000 as root (chown), the runner
 * otherwise. */
static uid_t tenant(void) {
        return geteuid() == 0 ? 1000 : geteuid();
}

/* How the job is set up. */
struct setup {
        bool by_xattr;            /* no config rule: /app.slice's user.numabalanced says balance */
        enum cg_mode rule_mode;   /* the config rule's for /app.slice (0: balance) */
        bool thread_policy;       /* some range without a VMA policy */
        uint64_t page_size;       /* the range's, 0: the base page size */
        int free_floor_pct;       /* -1: the default (5) */
        bool exchanged;           /* promotions into the room the exchange made */
        void (*before)(void);     /* after the fresh copy, before the scan's facts are taken */
        void (*change)(void);     /* after move_check_prepare: what changed since the scan */
};

/* Runs the check of one job (the 32 MiB VMA at 0x7f3a00000000 to node 0); its verdict:
 * "move", or the stop's name. */
static const char *verdict_of(const struct setup *s) {
        struct nb_config cfg;
        struct move_check_env env;
        struct proc_stat st;
        char proc_root_copy[sizeof(proc_root)];
        struct proc_rec p = { .pid = 3001 };
        struct migrate_range range = { 0x7f3a00000000, 0x7f3a02000000, s->page_size ? s->page_size : page_size() };
        struct migrate_job job = { .pid = 3001, .target_node = 0, .ranges = &range, .n_ranges = 1, .max_pages = 8192,
                                   .userdata = &p, .thread_policy = s->thread_policy, .exchanged = s->exchanged };
        const struct migrate_stop *stop = NULL;
        struct move_check *c = NULL;
        int r;

        fresh_process();
        if (s->by_xattr)
                set_user_xattr("/app.slice", "balance");
        if (s->before)
                s->before();
        if (proc_read_stat(proc_root, 3001, &st) < 0)
                abort();
        p.starttime = job.starttime = st.starttime;
        p.layout = st.layout;
        config_defaults(&cfg);
        free(cfg.cgroup_root);
        cfg.cgroup_root = strdup(cgroup_root);
        if (s->free_floor_pct >= 0)
                cfg.free_floor_pct = (unsigned) s->free_floor_pct;
        if (!s->by_xattr) {
                cfg.cgroups = calloc(1, sizeof(*cfg.cgroups));
                cfg.cgroups[0] = (struct cgroup_rule) { strdup("/app.slice"),
                                                        s->rule_mode ? s->rule_mode : CG_MODE_BALANCE, false, false, 0 };
                cfg.n_cgroups = 1;
        }
        /* The roots and the config are copied: the ones given may go once prepared. */
        snprintf(proc_root_copy, sizeof(proc_root_copy), "%s", proc_root);
        env = (struct move_check_env) { .cfg = &cfg, .topo = topo, .proc_root = proc_root_copy, .sys_root = sys_root };
        CHECK_INT(move_check_prepare(&env, &job, 1, &c), 0);
        config_done(&cfg);
        memset(proc_root_copy, 'x', sizeof(proc_root_copy) - 1);
        CHECK(job.may_move == move_check_job && job.may_move_ctx);
        if (s->change)
                s->change();
        r = job.may_move(job.may_move_ctx, &job, &stop);
        move_check_free(c);
        clear_xattr();
        if (r == 0)
                return stop ? "move, but a stop was set" : "move";
        if (r != -ESTALE)
                return "an error other than -ESTALE";
        return stop ? stop->name : "?";
}

static const char *verdict(void (*change)(void)) {
        return verdict_of(&(struct setup) { .free_floor_pct = -1, .change = change });
}

#define NEED_XATTRS() do {                                                      \
        if (no_xattrs[0])                                                       \
                TEST_SKIP("%s", no_xattrs);                                     \
        } while (0)

/* --- what changes ------------------------------------------------------------------- */

static void gone(void) {
        char dir[512];

        snprintf(dir, sizeof(dir), "%s/3001", proc_root);
        tmptree_remove(dir);
}

static void reused(void) {
        /* Another process under the same pid: another start time. */
        edit("stat", " 5000 ", " 5001 ");
}

static void execs(void) {
        /* start_code (field 26): exec puts the program elsewhere. */
        edit("stat", " 93978048487424 ", " 93978048491520 ");
}

static void moves_to_another_cgroup(void) {
        tmptree_write_at(proc_root, "3001/cgroup", "0::/other.slice\n");
}

static void its_cgroup_goes(void) {
        tmptree_write_at(proc_root, "3001/cgroup", "0::/gone.slice\n");
}

static void binds_to_node_1(void) {
        edit("numa_maps", "7f3a00000000 default", "7f3a00000000 bind:1");
}

static void binds_part_of_it_to_node_1(void) {
        /* mbind() on the second half splits the VMA: the range touches both. */
        edit("numa_maps", "7f3a02000000 bind:1 anon=1024",
             "7f3a01000000 bind:1 anon=1 dirty=1 N1=1 kernelpagesize_kB=4\n7f3a02000000 bind:1 anon=1024");
}

static void binds_a_thread_to_node_1(void) {
        tmptree_write_at(proc_root, "3001/task/3003/numa_maps",
                         "55d0c0a00000 bind:1 heap anon=512 dirty=512 active=0 N0=512 kernelpagesize_kB=4\n");
}

static void numa_maps_unreadable(void) {
        char path[512];

        snprintf(path, sizeof(path), "%s/3001/numa_maps", proc_root);
        tmptree_remove(path);
        tmptree_mkdirs(path);
}

static void locks_it(void) {
        char path[512];
        FILE *f;

        edit("status", "VmLck:\t       0 kB", "VmLck:\t   32768 kB");
        snprintf(path, sizeof(path), "%s/3001/smaps", proc_root);
        f = fopen(path, "w");
        fputs("7f3a00000000-7f3a02000000 rw-p 00000000 00:00 0 \nSize: 32768 kB\nVmFlags: rd wr mr mw me lo ac \n", f);
        fclose(f);
}

static void locks_another_vma(void) {
        char path[512];
        FILE *f;

        edit("status", "VmLck:\t       0 kB", "VmLck:\t    8192 kB");
        snprintf(path, sizeof(path), "%s/3001/smaps", proc_root);
        f = fopen(path, "w");
        fputs("7f3a04000000-7f3a04800000 rw-p 00000000 00:00 0 \nSize: 8192 kB\nVmFlags: rd wr mr mw me lo ac \n", f);
        fclose(f);
}

static void fills_node_0(void) {
        node0_free_kb(51199);     /* 1 kB under 5% of 1024000 kB */
}

static void node_0_at_its_floor(void) {
        node0_free_kb(51200);     /* 5% of 1024000 kB, to the byte: not under it */
}

static void fills_node_0_and_exits(void) {
        fills_node_0();
        gone();
}

static void advised(void) {
        set_user_xattr("/app.slice", "advise");
}

static void opts_out(void) {
        set_user_xattr("/app.slice", NULL);
}

/* --- the cases ------------------------------------------------------------------------ */

TEST(unchanged_moves) {
        CHECK_STR(verdict(NULL), "move");
}

TEST(the_process_exited_or_was_replaced) {
        CHECK_STR(verdict(gone), "exited");
        CHECK_STR(verdict(reused), "exited");
}

TEST(an_exec_since_the_scan) {
        CHECK_STR(verdict(execs), "exec");
}

TEST(out_of_a_balanced_cgroup) {
        CHECK_STR(verdict(moves_to_another_cgroup), "cgroup-changed");
        CHECK_STR(verdict(its_cgroup_goes), "cgroup-changed");
        /* The config's rule for its cgroup is what the check applies (as prepared). */
        CHECK_STR(verdict_of(&(struct setup) { .rule_mode = CG_MODE_ADVISE, .free_floor_pct = -1 }), "cgroup-changed");
        CHECK_STR(verdict_of(&(struct setup) { .rule_mode = CG_MODE_OFF, .free_floor_pct = -1 }), "cgroup-changed");
}

static void app_slice_owned_by_tenant(void) {
        char path[512];

        snprintf(path, sizeof(path), "%s/app.slice", cgroup_root);
        if (geteuid() == 0 && chown(path, tenant(), tenant()) < 0)
                TEST_FAIL("chown %s: %m", path);
        ids_of(tenant());
}

static void app_slice_owned_by_root(void) {
        char path[512];

        snprintf(path, sizeof(path), "%s/app.slice", cgroup_root);
        if (geteuid() == 0 && chown(path, 0, 0) < 0)
                TEST_FAIL("chown %s: %m", path);
}

/* Opted in by user.numabalanced (the config has no rule): its value changed to advise,
 * or removed, since the scan. As root, /app.slice is root's and its setting covers
 * everyone; otherwise it is the runner's, whose processes it covers: the process is
 * made the runner's. */
TEST(its_xattr_changed) {
        void (*before)(void) = geteuid() == 0 ? app_slice_owned_by_root : app_slice_owned_by_tenant;

        NEED_XATTRS();
        CHECK_STR(verdict_of(&(struct setup) { .by_xattr = true, .free_floor_pct = -1, .before = before }), "move");
        CHECK_STR(verdict_of(&(struct setup) { .by_xattr = true, .free_floor_pct = -1, .before = before,
                                               .change = advised }), "cgroup-changed");
        CHECK_STR(verdict_of(&(struct setup) { .by_xattr = true, .free_floor_pct = -1, .before = before,
                                               .change = opts_out }), "cgroup-changed");
}

static void setuid_root(void) {
        char from[64], to[64];

        snprintf(from, sizeof(from), "Uid:\t%u\t%u", (unsigned) tenant(), (unsigned) tenant());
        snprintf(to, sizeof(to), "Uid:\t%u\t0", (unsigned) tenant());
        edit("status", from, to);
}

static void another_users(void) {
        char from[64];

        snprintf(from, sizeof(from), "Uid:\t%u\t%u\t%u\t%u", (unsigned) tenant(), (unsigned) tenant(),
                 (unsigned) tenant(), (unsigned) tenant());
        edit("status", from, "Uid:\t4242\t4242\t4242\t4242");
}

/* A user's opt-in (user.* on a cgroup delegated to them) covers their processes only:
 * one whose ids changed since its scan (a setuid exec, another user's) is not covered. */
TEST(no_longer_covered_by_a_users_opt_in) {
        NEED_XATTRS();
        CHECK_STR(verdict_of(&(struct setup) { .by_xattr = true, .free_floor_pct = -1,
                                               .before = app_slice_owned_by_tenant }), "move");
        CHECK_STR(verdict_of(&(struct setup) { .by_xattr = true, .free_floor_pct = -1,
                                               .before = app_slice_owned_by_tenant, .change = setuid_root }),
                  "not-covered");
        CHECK_STR(verdict_of(&(struct setup) { .by_xattr = true, .free_floor_pct = -1,
                                               .before = app_slice_owned_by_tenant, .change = another_users }),
                  "not-covered");
        if (geteuid() == 0)
                app_slice_owned_by_root();
}

TEST(a_policy_no_longer_allows_the_target) {
        CHECK_STR(verdict(binds_to_node_1), "policy-changed");
        CHECK_STR(verdict(binds_part_of_it_to_node_1), "policy-changed");
}

/* Memory without a VMA policy goes where every thread's policy allows: read again only
 * for the jobs that hold such memory. */
TEST(a_threads_policy_no_longer_allows_the_target) {
        CHECK_STR(verdict_of(&(struct setup) { .thread_policy = true, .free_floor_pct = -1 }), "move");
        CHECK_STR(verdict_of(&(struct setup) { .thread_policy = true, .free_floor_pct = -1,
                                               .change = binds_a_thread_to_node_1 }), "thread-policy-changed");
        CHECK_STR(verdict(binds_a_thread_to_node_1), "move");
}

/* /app.slice's cgroup.type, and each thread's status: the main one's, thread 3003's
 * Mems_allowed_list mems3003. */
static void threads_in_cgroup_type(const char *type, const char *mems3003) {
        char path[512];
        FILE *f;

        snprintf(path, sizeof(path), "%s/app.slice/cgroup.type", cgroup_root);
        f = fopen(path, "w");
        if (!f)
                abort();
        fprintf(f, "%s\n", type);
        fclose(f);
        for (int tid = 3001; tid <= 3003; tid += 2) {
                char from[512], to[512];
                snprintf(from, sizeof(from), "%s/3001/status", proc_root);
                snprintf(to, sizeof(to), "%s/3001/task/%d/status", proc_root, tid);
                tmptree_copy(from, to);
        }
        snprintf(path, sizeof(path), "Mems_allowed_list:\t%s", mems3003);
        edit("task/3003/status", "Mems_allowed_list:\t0-1", path);
}

static void threaded_a_thread_on_node_1(void) { threads_in_cgroup_type("threaded", "1"); }
static void domain_threaded_a_thread_on_node_1(void) { threads_in_cgroup_type("domain threaded", "1"); }
static void threaded_all_allow_both(void) { threads_in_cgroup_type("threaded", "0-1"); }
static void domain_a_thread_on_node_1(void) { threads_in_cgroup_type("domain", "1"); }

/* In a threaded subtree each thread has a cpuset of its own: memory goes to node 0
 * only if every thread's allows it, whatever the main thread's says. In a domain
 * cgroup all threads share the main one's (the others' status is not read). */
TEST(a_threads_cpuset_does_not_allow_the_target) {
        char path[512];

        CHECK_STR(verdict(threaded_a_thread_on_node_1), "policy-changed");
        CHECK_STR(verdict(domain_threaded_a_thread_on_node_1), "policy-changed");
        CHECK_STR(verdict(threaded_all_allow_both), "move");
        CHECK_STR(verdict(domain_a_thread_on_node_1), "move");
        snprintf(path, sizeof(path), "%s/app.slice/cgroup.type", cgroup_root);
        unlink(path);
}

TEST(unreadable) {
        CHECK_STR(verdict(numa_maps_unreadable), "unreadable");
}

TEST(locked_since_the_scan) {
        CHECK_STR(verdict(locks_it), "locked");
        CHECK_STR(verdict(locks_another_vma), "move");
}

/* The target under its free-memory floor since the scan; at it, to the byte, is not
 * under it. Not checked with free_floor_pct = 0, nor for a job of hugetlb pages only
 * (they take the target's free huge pages). A process that may not move says so
 * first. */
TEST(the_target_filled) {
        CHECK_STR(verdict(fills_node_0), "target-full");
        CHECK_STR(verdict(node_0_at_its_floor), "move");
        CHECK_STR(verdict_of(&(struct setup) { .free_floor_pct = 0, .change = fills_node_0 }), "move");
        CHECK_STR(verdict_of(&(struct setup) { .page_size = 2 * MIB, .free_floor_pct = -1, .change = fills_node_0 }),
                  "move");
        CHECK_STR(verdict(fills_node_0_and_exits), "exited");
}

/* Promotions into the room the exchange made go below the floor, as long as the room
 * (the job's 32 MiB) is free; taken by something else, they stop. */
static void node_0_holds_the_job(void) {
        node0_free_kb(32 * 1024);
}

static void node_0_short_of_the_job(void) {
        node0_free_kb(32 * 1024 - 4);
}

TEST(exchanged_promotions_need_their_room) {
        CHECK_STR(verdict_of(&(struct setup) { .free_floor_pct = -1, .exchanged = true, .change = node_0_holds_the_job }),
                  "move");
        CHECK_STR(verdict_of(&(struct setup) { .free_floor_pct = -1, .exchanged = true,
                                               .change = node_0_short_of_the_job }), "target-full");
        CHECK_STR(verdict_of(&(struct setup) { .free_floor_pct = -1, .change = node_0_holds_the_job }), "target-full");
}

/* Several jobs: each gets its own check, with its own process's scan facts (here one
 * scanned before an exec: its layout differs). */
TEST(each_job_its_own_check) {
        struct nb_config cfg;
        struct move_check_env env;
        struct proc_stat st;
        struct proc_rec p[2] = { { .pid = 3001 }, { .pid = 3001 } };
        struct migrate_range range = { 0x7f3a00000000, 0x7f3a02000000, page_size() };
        struct migrate_job jobs[2];
        const struct migrate_stop *stop = NULL;
        struct move_check *c = NULL;

        fresh_process();
        if (proc_read_stat(proc_root, 3001, &st) < 0)
                abort();
        for (int i = 0; i < 2; i++) {
                p[i].starttime = st.starttime;
                p[i].layout = st.layout;
                jobs[i] = (struct migrate_job) { .pid = 3001, .starttime = st.starttime, .target_node = 0,
                                                 .ranges = &range, .n_ranges = 1, .userdata = &p[i] };
        }
        p[1].layout.start_code++;
        config_defaults(&cfg);
        free(cfg.cgroup_root);
        cfg.cgroup_root = strdup(cgroup_root);
        cfg.cgroups = calloc(1, sizeof(*cfg.cgroups));
        cfg.cgroups[0] = (struct cgroup_rule) { strdup("/app.slice"), CG_MODE_BALANCE, false, false, 0 };
        cfg.n_cgroups = 1;
        env = (struct move_check_env) { .cfg = &cfg, .topo = topo, .proc_root = proc_root, .sys_root = sys_root };
        CHECK_INT(move_check_prepare(&env, jobs, 2, &c), 0);
        config_done(&cfg);
        CHECK(jobs[0].may_move == move_check_job && jobs[1].may_move == move_check_job);
        CHECK(jobs[0].may_move_ctx && jobs[1].may_move_ctx && jobs[0].may_move_ctx != jobs[1].may_move_ctx);
        CHECK_INT(move_check_job(jobs[0].may_move_ctx, &jobs[0], &stop), 0);
        CHECK(stop == NULL);
        CHECK_INT(move_check_job(jobs[1].may_move_ctx, &jobs[1], &stop), -ESTALE);
        CHECK(stop == &move_stop_exec);
        /* Asked again (before the next batch): the same answers. */
        stop = NULL;
        CHECK_INT(move_check_job(jobs[0].may_move_ctx, &jobs[0], &stop), 0);
        CHECK_INT(move_check_job(jobs[1].may_move_ctx, &jobs[1], &stop), -ESTALE);
        move_check_free(c);
        move_check_free(NULL);
}

/* No job: prepared all the same (a run with nothing to check). */
TEST(no_jobs) {
        struct nb_config cfg;
        struct move_check_env env;
        struct move_check *c = NULL;

        config_defaults(&cfg);
        env = (struct move_check_env) { .cfg = &cfg, .topo = topo, .proc_root = proc_root, .sys_root = sys_root };
        CHECK_INT(move_check_prepare(&env, NULL, 0, &c), 0);
        CHECK(c != NULL);
        move_check_free(c);
        config_done(&cfg);
}

/* Every reason has a name and a text; the names are distinct. */
TEST(the_reasons) {
        const struct migrate_stop *all[] = { &move_stop_exited, &move_stop_exec, &move_stop_cgroup,
                                             &move_stop_not_covered, &move_stop_policy, &move_stop_thread_policy,
                                             &move_stop_unreadable, &move_stop_target_full, &move_stop_locked };
        const size_t n = sizeof(all) / sizeof(all[0]);

        for (size_t i = 0; i < n; i++) {
                CHECK(all[i]->name && *all[i]->name && all[i]->text && *all[i]->text);
                for (size_t k = 0; k < i; k++)
                        CHECK(strcmp(all[i]->name, all[k]->name) != 0);
        }
}

static int intro(void) {
        if (!mkdtemp(tmpdir))
                return 1;
        snprintf(proc_root, sizeof(proc_root), "%s/proc", tmpdir);
        snprintf(cgroup_root, sizeof(cgroup_root), "%s/cg", tmpdir);
        snprintf(sys_root, sizeof(sys_root), "%s/sys", tmpdir);
        tmptree_mkdirs(proc_root);
        tmptree_mkdirs_at(cgroup_root, "app.slice");
        tmptree_mkdirs_at(cgroup_root, "other.slice");
        if (setxattr(cgroup_root, "user.numabalanced.probe", "1", 1, 0) < 0) {
                if (errno != EOPNOTSUPP && errno != EPERM)
                        return 1;
                snprintf(no_xattrs, sizeof(no_xattrs), "the file system under %s refuses user.* xattrs (%s)", tmpdir,
                         strerror(errno));
        } else
                removexattr(cgroup_root, "user.numabalanced.probe");
        return topology_read(TEST_DATA_DIR "/sys/2n2c", &topo) < 0;
}

static void outro(void) {
        topology_free(topo);
        tmptree_remove(tmpdir);
}

DEFINE_TEST_MAIN_FULL(intro, outro)
