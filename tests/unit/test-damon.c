/* SPDX-License-Identifier: GPL-2.0-or-later */
/* DAMON (daemon/damon.h) on a fake sysfs tree in a temporary directory: chosen only
 * where fvaddr is offered and nr_kdamonds is 0; the files written for a process; its
 * tried regions read, hostile ones skipped and counted; a kdamond turned off when its
 * process is no longer wanted; the crash state file turning off only ours; the reads
 * fed to the records as page evidence (damon_feed). And the pure half
 * (lib/damon-pages.h): target regions merged to a bound, pages fed, capped. */
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include "clock.h"
#include "damon.h"
#include "counters.h"
#include "damon-pages.h"
#include "page-agg.h"
#include "pagesize.h"
#include "proc-records.h"
#include "topology.h"
#include "parse.h"
#include "test.h"
#include "tmptree.h"

static char root[256], kd[512], state[512];

/* val as kd/rel (the directories above made, from root on). */
static void put(const char *rel, const char *val) {
        char p[1024];

        snprintf(p, sizeof(p), "%s/%s", kd + strlen(root) + 1, rel);
        tmptree_write_at(root, p, val);
}

static char *get(const char *rel) {
        static char buf[256];
        char p[1024];
        FILE *f;
        size_t n;

        snprintf(p, sizeof(p), "%s/%s", kd, rel);
        f = fopen(p, "r");
        if (!f)
                return strcpy(buf, "(none)");
        n = fread(buf, 1, sizeof(buf) - 1, f);
        buf[n] = 0;
        fclose(f);
        return buf;
}

/* The processes' start time (/proc/PID/stat field 22) in a fake /proc. */
#define START 8888
static char procdir[600];

static void fake_stat(pid_t pid, unsigned long long starttime) {
        char p[700];
        FILE *f;

        snprintf(p, sizeof(p), "%s/%d", procdir, (int) pid);
        (void) mkdir(procdir, 0755);
        (void) mkdir(p, 0755);
        snprintf(p, sizeof(p), "%s/%d/stat", procdir, (int) pid);
        f = fopen(p, "w");
        if (!f)
                abort();
        fprintf(f, "%d (app) S 1 1 1 0 -1 4194560 0 0 0 0 10 5 0 0 20 0 1 0 %llu 1000000 100 "
                   "0 0 0 0 0 0 0 0 0 0 0 0 0 0 17 1 0 0 0 0 0 0 0 0 0 0 0 0 0\n", (int) pid, starttime);
        fclose(f);
}

/* A 6.12-like tree with DAMON_PROCS_MAX kdamonds' directories made already (the
 * kernel makes them when nr_kdamonds is written). */
static const char *const ctx_files[] = {
        "nr_contexts", "0/operations", "0/monitoring_attrs/intervals/sample_us",
        "0/monitoring_attrs/intervals/aggr_us", "0/monitoring_attrs/intervals/update_us",
        "0/monitoring_attrs/nr_regions/min", "0/monitoring_attrs/nr_regions/max", "0/targets/nr_targets",
        "0/targets/0/pid_target", "0/targets/0/regions/nr_regions", "0/schemes/nr_schemes",
        "0/schemes/0/action", "0/schemes/0/access_pattern/sz/min", "0/schemes/0/access_pattern/sz/max",
        "0/schemes/0/access_pattern/nr_accesses/min", "0/schemes/0/access_pattern/nr_accesses/max",
        "0/schemes/0/access_pattern/age/min", "0/schemes/0/access_pattern/age/max",
        "0/targets/0/regions/0/start", "0/targets/0/regions/0/end",
        "0/targets/0/regions/1/start", "0/targets/0/regions/1/end",
};

static void make_kdamonds(const char *ops) {
        char rel[128];

        for (unsigned i = 0; i < DAMON_PROCS_MAX; i++) {
                snprintf(rel, sizeof(rel), "%u/state", i);
                put(rel, "off\n");
                snprintf(rel, sizeof(rel), "%u/pid", i);
                put(rel, "-1\n");
                snprintf(rel, sizeof(rel), "%u/contexts/0/avail_operations", i);
                put(rel, ops);
                for (size_t k = 0; k < sizeof(ctx_files) / sizeof(ctx_files[0]); k++) {
                        snprintf(rel, sizeof(rel), "%u/contexts/%s", i, ctx_files[k]);
                        put(rel, "");
                }
        }
}

static void tree(const char *nr, const char *ops) {
        snprintf(root, sizeof(root), "/tmp/test-damon.XXXXXX");
        if (!mkdtemp(root))
                abort();
        snprintf(kd, sizeof(kd), "%s/kernel/mm/damon/admin/kdamonds", root);
        snprintf(state, sizeof(state), "%s/state-damon", root);
        snprintf(procdir, sizeof(procdir), "%s/proc", root);
        fake_stat(4242, START);
        put("nr_kdamonds", nr);
        make_kdamonds(ops);
}

/* Another tool writing nr_kdamonds: the kernel drops the kdamonds' directories and
 * makes new ones. The old ones are kept aside, so that their inode numbers cannot
 * come back. */
static void remake_kdamonds(const char *nr) {
        char from[600], to[600];

        for (unsigned i = 0; i < DAMON_PROCS_MAX; i++) {
                snprintf(from, sizeof(from), "%s/%u", kd, i);
                snprintf(to, sizeof(to), "%s/dropped-%u", kd, i);
                if (rename(from, to) < 0)
                        abort();
        }
        put("nr_kdamonds", nr);
        make_kdamonds("vaddr fvaddr\n");
}

/* The state file's first line as the daemon writes it for the kdamonds' directories
 * there now: "kdamonds 4 INO INO INO INO". */
static const char *kdamonds_line(void) {
        static char line[256];
        size_t o = (size_t) snprintf(line, sizeof(line), "kdamonds %u", DAMON_PROCS_MAX);

        for (unsigned i = 0; i < DAMON_PROCS_MAX; i++) {
                char p[600];
                struct stat st;

                snprintf(p, sizeof(p), "%s/%u", kd, i);
                if (stat(p, &st) < 0)
                        abort();
                o += (size_t) snprintf(line + o, sizeof(line) - o, " %llu", (unsigned long long) st.st_ino);
        }
        snprintf(line + o, sizeof(line) - o, "\n");
        return line;
}

/* The daemon's DAMON state file written as text (a previous run's, or another
 * version's); false, counted as a failed check, when it cannot be. */
static bool write_state(const char *text) {
        FILE *f = fopen(state, "w");

        CHECK(f != NULL);
        if (!f)
                return false;
        fputs(text, f);
        fclose(f);
        return true;
}

/* The DAMON thread's clock: a round each second, as it runs. */
static uint64_t now_ms = 10000;

static uint64_t next_ms(void) {
        return now_ms += 1000;
}

static void untree(void) {
        tmptree_remove(root);
}

/* What the kernel does between rounds: a kdamond asked for tried regions is on again,
 * one turned on gets a pid. */
static void kernel_step(pid_t kpid) {
        char rel[64], pid[16];

        for (unsigned i = 0; i < DAMON_PROCS_MAX; i++) {
                snprintf(rel, sizeof(rel), "%u/state", i);
                if (strncmp(get(rel), "off", 3) != 0) {
                        put(rel, "on\n");
                        snprintf(rel, sizeof(rel), "%u/pid", i);
                        snprintf(pid, sizeof(pid), "%d\n", (int) kpid);
                        put(rel, pid);
                }
        }
}

static void region_aged(unsigned k, const char *start, const char *end, const char *acc, const char *age) {
        char rel[128];

        snprintf(rel, sizeof(rel), "0/contexts/0/schemes/0/tried_regions/%u/age", k);
        put(rel, age);

        snprintf(rel, sizeof(rel), "0/contexts/0/schemes/0/tried_regions/%u/start", k);
        put(rel, start);
        snprintf(rel, sizeof(rel), "0/contexts/0/schemes/0/tried_regions/%u/end", k);
        put(rel, end);
        snprintf(rel, sizeof(rel), "0/contexts/0/schemes/0/tried_regions/%u/nr_accesses", k);
        put(rel, acc);
}

/* A region of the last aggregation, 2 aggregations old. */
static void region(unsigned k, const char *start, const char *end, const char *acc) {
        region_aged(k, start, end, acc, "2\n");
}

TEST(refused_without_sysfs_or_fvaddr_or_when_taken) {
        struct damon *d;

        snprintf(root, sizeof(root), "/tmp/test-damon.XXXXXX");
        CHECK(mkdtemp(root) != NULL);
        CHECK_INT(damon_new(root, "/nonexistent/x", true, false, &d), 0);
        CHECK(!damon_in_use(d));
        CHECK(strstr(damon_why(d), "CONFIG_DAMON_SYSFS") != NULL);
        damon_free(d);
        untree();

        tree("0\n", "vaddr\npaddr\n");     /* vaddr alone: its regions would not stay the slow VMAs */
        CHECK_INT(damon_new(root, state, true, false, &d), 0);
        damon_set_proc_root(d, procdir);
        CHECK(!damon_in_use(d) && strstr(damon_why(d), "fvaddr") != NULL);
        CHECK_STR(get("nr_kdamonds"), "0");  /* the context made to read it is dropped */
        damon_free(d);
        untree();

        tree("2\n", "fvaddr\n");
        CHECK_INT(damon_new(root, state, true, false, &d), 0);
        damon_set_proc_root(d, procdir);
        CHECK(!damon_in_use(d) && strstr(damon_why(d), "another tool") != NULL);
        damon_free(d);
        CHECK_STR(get("nr_kdamonds"), "2\n");  /* never touched */
        untree();

        tree("0\n", "vaddr fvaddr\n");
        CHECK_INT(damon_new(root, state, false, false, &d), 0);
        CHECK(!damon_in_use(d) && strstr(damon_why(d), "off") != NULL);
        damon_free(d);
        CHECK_INT(damon_new(root, NULL, true, false, &d), 0);
        CHECK(!damon_in_use(d));
        damon_free(d);
        untree();
}

/* When DAMON's sysfs cannot be used, the reason says which file, how, and the error,
 * not only that it failed. */
TEST(why_names_the_file_and_the_error) {
        char p[600], want[1024];
        struct damon *d;

        tree("0\n", "vaddr fvaddr\n");
        snprintf(p, sizeof(p), "%s/0/contexts/0/avail_operations", kd);
        CHECK(unlink(p) == 0 && mkdir(p, 0755) == 0);
        CHECK_INT(damon_new(root, state, true, false, &d), 0);
        CHECK(!damon_in_use(d));
        snprintf(want, sizeof(want), "DAMON's operations cannot be read: reading %s: %s", p, strerror(EISDIR));
        CHECK_STR(damon_why(d), want);
        damon_free(d);
        CHECK_STR(get("nr_kdamonds"), "0");
        untree();

        tree("0\n", "vaddr fvaddr\n");
        snprintf(p, sizeof(p), "%s/nr_kdamonds", kd);
        CHECK(unlink(p) == 0 && mkdir(p, 0755) == 0);
        CHECK_INT(damon_new(root, state, true, false, &d), 0);
        snprintf(want, sizeof(want), "nr_kdamonds cannot be read: reading %s: %s", p, strerror(EISDIR));
        CHECK_STR(damon_why(d), want);
        damon_free(d);
        untree();
}

/* A read-only /sys, as systemd's ProtectKernelTunables=yes makes it (here the fake
 * tree bind-mounted read-only in a mount namespace of a child: needs root): the
 * reason names the file and EROFS, and says what the unit needs. */
TEST(why_on_a_read_only_sys_says_what_the_unit_needs) {
        char got[1024] = "", want[1024], p[600];
        int fds[2];
        pid_t pid;
        int status = 0;
        ssize_t n;

        tree("0\n", "vaddr fvaddr\n");
        CHECK(pipe(fds) == 0);
        pid = fork();
        if (pid == 0) {
                struct damon *d;
                const char *w;

                close(fds[0]);
                /* "none", not NULL: valgrind takes a NULL source or type for a bad pointer. */
                if (unshare(CLONE_NEWNS) < 0 || mount("none", "/", "none", MS_REC | MS_PRIVATE, NULL) < 0 ||
                    mount(root, root, "none", MS_BIND, NULL) < 0 ||
                    mount("none", root, "none", MS_BIND | MS_REMOUNT | MS_RDONLY, NULL) < 0)
                        _exit(77);
                if (damon_new(root, "/nonexistent/state-damon", true, false, &d) < 0)
                        _exit(1);
                w = damon_why(d);
                if (write(fds[1], w, strlen(w)) < 0)
                        _exit(1);
                damon_free(d);
                _exit(0);
        }
        close(fds[1]);
        n = read(fds[0], got, sizeof(got) - 1);
        got[n > 0 ? n : 0] = 0;
        close(fds[0]);
        CHECK(pid > 0 && waitpid(pid, &status, 0) == pid);
        untree();
        if (WIFEXITED(status) && WEXITSTATUS(status) == 77)
                TEST_SKIP("no mount namespace to make the tree read-only (not root?)\n");
        CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
        snprintf(p, sizeof(p), "%s/nr_kdamonds", kd);
        snprintf(want, sizeof(want), "DAMON's operations cannot be read: writing %s: %s", p, strerror(EROFS));
        CHECK_MSG(strncmp(got, want, strlen(want)) == 0, "got \"%s\"", got);
        CHECK_MSG(strstr(got, "ProtectKernelTunables=yes") != NULL &&
                  strstr(got, "ReadWritePaths=-/sys/kernel/mm/damon/admin") != NULL, "got \"%s\"", got);
}

TEST(one_process_written_read_and_given_back) {
        struct damon_want w = { .pid = 4242, .starttime = START, .owner = 1000, .n = 2,
                                .r = { { 0x10000, 0x20000 }, { 0x40000, 0x50000 } } };
        struct damon_result *res;
        struct damon_stats st;
        struct damon *d;
        size_t n;

        tree("0\n", "vaddr fvaddr paddr\n");
        CHECK_INT(damon_new(root, state, true, false, &d), 0);
        damon_set_proc_root(d, procdir);
        CHECK(damon_in_use(d));
        damon_round(d, next_ms());     /* nobody wants one: nothing made */
        CHECK_STR(get("nr_kdamonds"), "0");
        CHECK(access(state, F_OK) < 0);

        damon_sync(d, &w, 1, 1000);
        CHECK(damon_monitored(d, 4242));
        damon_round(d, next_ms());
        CHECK_STR(get("nr_kdamonds"), "4");
        CHECK_STR(get("0/contexts/0/operations"), "fvaddr");
        CHECK_STR(get("0/contexts/0/targets/0/pid_target"), "4242");
        CHECK_STR(get("0/contexts/0/targets/0/regions/nr_regions"), "2");
        CHECK_STR(get("0/contexts/0/targets/0/regions/1/start"), "262144");
        CHECK_STR(get("0/contexts/0/targets/0/regions/1/end"), "327680");
        CHECK_STR(get("0/contexts/0/schemes/0/action"), "stat");
        /* Every region: hot ones (accessed) and cold ones (by their age) from one read. */
        CHECK_STR(get("0/contexts/0/schemes/0/access_pattern/nr_accesses/min"), "0");
        CHECK_STR(get("0/contexts/0/monitoring_attrs/nr_regions/max"), "200");
        CHECK_STR(get("1/state"), "off\n");     /* one kdamond for one process */
        {       /* its kdamond's pid not known yet: recorded by its target's */
                char rec[128] = "";
                FILE *f = fopen(state, "r");

                CHECK(f != NULL);
                if (f) {
                        rec[fread(rec, 1, sizeof(rec) - 1, f)] = 0;
                        fclose(f);
                }
                CHECK(strstr(rec, "0 starting 4242\n") != NULL);
                /* Its kdamonds by their number and their directories. */
                CHECK_MSG(strncmp(rec, kdamonds_line(), strlen(kdamonds_line())) == 0, "recorded %s, made %s",
                          rec, kdamonds_line());
        }
        n = damon_take(d, &res);      /* its first read, at once: nothing hot yet */
        CHECK(n == 1 && res[0].n_hot == 0);
        damon_results_free(res, n);

        /* The kernel ran it; its tried regions: good ones (hot, not hot, cold, and one
         * accessed too rarely to name its pages), then hostile. */
        kernel_step(777);
        damon_set_cold_age(d, 3000);    /* 30 aggregations of 100 ms */
        region(0, "65536\n", "73728\n", "3\n");
        region(1, "73728\n", "81920\n", "0\n");
        region_aged(6, "86016\n", "90112\n", "0\n", "30\n");
        region_aged(7, "90112\n", "94208\n", "2\n", "300\n");
        /* Accessed, but less than half as often as the hottest (3): an edge, not hot. */
        region(8, "94208\n", "98304\n", "1\n");
        region(2, "99999999999999999999999\n", "1\n", "1\n");
        region(3, "90000\n", "80000\n", "5\n");
        region(4, "garbage\n", "x\n", "1\n");
        region(5, "81920\n", "86016\n", "-1\n");
        damon_round(d, next_ms());
        CHECK_STR(get("0/state"), "update_schemes_tried_regions");
        n = damon_take(d, &res);
        CHECK_INT(n, 1);
        if (n == 1) {
                CHECK_INT(res[0].pid, 4242);
                CHECK_INT(res[0].n_hot, 2);
                CHECK(res[0].n_hot == 2 && res[0].hot[0].start == 65536 && res[0].hot[0].end == 73728);
                /* Not accessed for 30 aggregations: cold; for 2: neither. */
                CHECK(res[0].n_cold == 1 && res[0].cold[0].start == 86016 && res[0].cold[0].end == 90112);
        }
        damon_results_free(res, n);
        damon_get_stats(d, &st);
        CHECK_INT(st.regions_bad, 4);
        CHECK_INT(st.running, 1);

        /* Its slow VMAs changed: the running kdamond takes them (commit), not restarted. */
        kernel_step(777);
        w.n = 1;
        w.r[0] = (struct damon_range) { 0x30000, 0x38000 };
        damon_sync(d, &w, 1, 1500);
        damon_round(d, next_ms());
        damon_get_stats(d, &st);
        CHECK_INT(st.commits, 1);
        CHECK_INT(st.running, 1);
        CHECK_STR(get("0/contexts/0/targets/0/regions/nr_regions"), "1");
        CHECK_STR(get("0/contexts/0/targets/0/regions/0/start"), "196608");
        CHECK_STR(get("0/pid"), "777\n");
        n = damon_take(d, &res);
        damon_results_free(res, n);

        /* No longer wanted: turned off, DAMON given back, the record gone. */
        kernel_step(777);
        damon_sync(d, NULL, 0, 2000);
        CHECK(!damon_monitored(d, 4242));
        damon_round(d, next_ms());
        CHECK_STR(get("0/state"), "off");
        CHECK_STR(get("nr_kdamonds"), "0");
        CHECK(access(state, F_OK) < 0);
        damon_free(d);
        untree();
}

/* Our kdamond stopped by itself, and another tool took DAMON meanwhile: its kdamond
 * is in the same directory now, and nothing of it is touched. */
TEST(another_tool_taking_over_is_left_alone) {
        struct damon_want w = { .pid = 4242, .starttime = START, .n = 1, .r = { { 0x10000, 0x20000 } } };
        struct damon_result *res;
        struct damon *d;
        size_t n;

        tree("0\n", "vaddr fvaddr\n");
        CHECK_INT(damon_new(root, state, true, false, &d), 0);
        damon_set_proc_root(d, procdir);
        damon_sync(d, &w, 1, 1000);
        damon_round(d, next_ms());
        CHECK_STR(get("nr_kdamonds"), "4");
        put("nr_kdamonds", "1\n");
        put("0/state", "on\n");
        put("0/pid", "999\n");
        put("0/contexts/0/targets/0/pid_target", "999\n");
        w.r[0].end = 0x30000;       /* new regions: would be committed if it were ours */
        w.n = 1;
        damon_sync(d, &w, 1, 2000);
        damon_round(d, next_ms());
        damon_round(d, next_ms());
        CHECK_STR(get("0/state"), "on\n");
        CHECK_STR(get("0/contexts/0/targets/0/pid_target"), "999\n");
        CHECK(access(state, F_OK) < 0);
        n = damon_take(d, &res);
        damon_results_free(res, n);
        damon_free(d);
        CHECK_STR(get("nr_kdamonds"), "1\n");
        CHECK_STR(get("0/state"), "on\n");
        untree();
}

/* The same, another tool setting as many kdamonds as the daemon's: the count is the
 * same, the directories (which the kernel makes anew at each write of nr_kdamonds)
 * are not. Nothing of its kdamonds is touched; DAMON is not given back (nr_kdamonds
 * is not the daemon's to write). */
TEST(another_tool_with_as_many_kdamonds_is_left_alone) {
        struct damon_want w = { .pid = 4242, .starttime = START, .n = 1, .r = { { 0x10000, 0x20000 } } };
        struct damon_result *res;
        struct damon *d;
        size_t n;

        tree("0\n", "vaddr fvaddr\n");
        CHECK_INT(damon_new(root, state, true, false, &d), 0);
        damon_set_proc_root(d, procdir);
        damon_sync(d, &w, 1, 1000);
        damon_round(d, next_ms());
        kernel_step(777);
        damon_round(d, next_ms());
        CHECK_STR(get("0/state"), "update_schemes_tried_regions");   /* ours, running */
        /* Ours stopped by itself; the other tool writes nr_kdamonds = 4 and starts its
         * kdamond 0. */
        remake_kdamonds("4\n");
        put("0/state", "on\n");
        put("0/pid", "999\n");
        put("0/contexts/0/targets/0/pid_target", "999\n");
        w.r[0].end = 0x30000;       /* new regions: would be committed if it were ours */
        damon_sync(d, &w, 1, 2000);
        damon_round(d, next_ms());
        damon_round(d, next_ms());
        CHECK_STR(get("0/state"), "on\n");
        CHECK_STR(get("0/contexts/0/targets/0/pid_target"), "999\n");
        CHECK_STR(get("0/contexts/0/targets/0/regions/nr_regions"), "");
        CHECK_STR(get("1/state"), "off\n");
        CHECK(access(state, F_OK) < 0);
        n = damon_take(d, &res);
        damon_results_free(res, n);
        damon_free(d);
        CHECK_STR(get("nr_kdamonds"), "4\n");
        CHECK_STR(get("0/state"), "on\n");
        untree();
}

/* Rounds closer than a second (the thread woken by a change) read no kdamond again:
 * two reads 100 ms apart would make a page hot "in two reads" within one aggregation. */
TEST(a_kdamond_is_read_once_a_second_at_most) {
        struct damon_want w = { .pid = 4242, .starttime = START, .n = 1, .r = { { 0x10000, 0x20000 } } };
        struct damon_result *res;
        struct damon_stats st;
        struct damon *d;
        uint64_t t = 50000;
        size_t n;

        tree("0\n", "fvaddr\n");
        CHECK_INT(damon_new(root, state, true, false, &d), 0);
        damon_set_proc_root(d, procdir);
        damon_sync(d, &w, 1, t);
        damon_round(d, t);                /* started, read at once */
        kernel_step(777);
        damon_round(d, t + 100);
        damon_round(d, t + 999);
        CHECK_STR(get("0/state"), "on\n");  /* not asked again */
        damon_get_stats(d, &st);
        CHECK_INT(st.reads, 1);
        damon_round(d, t + 1000);
        CHECK_STR(get("0/state"), "update_schemes_tried_regions");
        damon_get_stats(d, &st);
        CHECK_INT(st.reads, 2);
        n = damon_take(d, &res);
        CHECK_INT(n, 2);
        damon_results_free(res, n);
        damon_free(d);
        untree();
}

/* What sysfs cannot tell is no news: a failed read of nr_kdamonds skips the round and
 * forgets nothing; a failed read of a kdamond's state is not "off"; a kdamond whose
 * "off" fails stays recorded (the state file kept) until it is off. */
TEST(failed_reads_and_writes_forget_no_kdamond) {
        struct damon_want w = { .pid = 4242, .starttime = START, .n = 1, .r = { { 0x10000, 0x20000 } } };
        struct damon_result *res;
        char p[600];
        struct damon *d;
        size_t n;

        tree("0\n", "fvaddr\n");
        CHECK_INT(damon_new(root, state, true, false, &d), 0);
        damon_set_proc_root(d, procdir);
        damon_sync(d, &w, 1, 1000);
        damon_round(d, next_ms());
        kernel_step(777);
        put("nr_kdamonds", "4 and far too long a value for the daemon to read it\n");
        damon_round(d, next_ms());
        CHECK(access(state, F_OK) == 0);
        CHECK_STR(get("0/state"), "on\n");
        put("nr_kdamonds", "4\n");
        put("0/state", "on, but far too long a value for the daemon to read it\n");
        damon_round(d, next_ms());
        CHECK(access(state, F_OK) == 0);
        put("0/state", "on\n");
        damon_round(d, next_ms());
        CHECK_STR(get("0/state"), "update_schemes_tried_regions");   /* still ours, read */
        kernel_step(777);

        /* Its "off" fails (a directory where the file was): kept, then turned off. */
        snprintf(p, sizeof(p), "%s/0/state", kd);
        CHECK(unlink(p) == 0 && mkdir(p, 0755) == 0);
        damon_sync(d, NULL, 0, 2000);
        damon_round(d, next_ms());
        CHECK(access(state, F_OK) == 0);
        CHECK_STR(get("nr_kdamonds"), "4\n");
        CHECK(rmdir(p) == 0);
        put("0/state", "on\n");
        damon_round(d, next_ms());
        CHECK_STR(get("0/state"), "off");
        CHECK_STR(get("nr_kdamonds"), "0");
        CHECK(access(state, F_OK) < 0);
        n = damon_take(d, &res);
        damon_results_free(res, n);
        damon_free(d);
        untree();
}

/* A kdamond that stopped by itself (its process exited, or the kernel stopped it)
 * gives its slot up, counted: another process gets a turn, this one asks again. */
TEST(a_stopped_kdamond_frees_its_slot) {
        struct damon_want w = { .pid = 4242, .starttime = START, .n = 1, .r = { { 0x10000, 0x20000 } } };
        struct damon_result *res;
        struct damon_stats st;
        struct damon *d;
        size_t n;

        tree("0\n", "fvaddr\n");
        CHECK_INT(damon_new(root, state, true, false, &d), 0);
        damon_set_proc_root(d, procdir);
        damon_sync(d, &w, 1, 1000);
        damon_round(d, next_ms());
        kernel_step(777);
        put("0/state", "off\n");
        damon_round(d, next_ms());
        CHECK(!damon_monitored(d, 4242));
        damon_get_stats(d, &st);
        CHECK_INT(st.slots_freed, 1);
        CHECK_INT(st.running, 0);
        damon_sync(d, &w, 1, 3000);       /* asked again: retried */
        CHECK(damon_monitored(d, 4242));
        damon_round(d, next_ms());
        CHECK_STR(get("0/state"), "update_schemes_tried_regions");
        n = damon_take(d, &res);
        damon_results_free(res, n);
        damon_free(d);
        untree();
}

/* The pid wanted is another process by the time its kdamond would start (its start
 * time differs): no kdamond for it, the slot freed; a read carries the start time. */
TEST(a_reused_pid_gets_no_kdamond) {
        struct damon_want w = { .pid = 4242, .starttime = START, .n = 1, .r = { { 0x10000, 0x20000 } } };
        struct damon_result *res;
        struct damon_stats st;
        struct damon *d;
        size_t n;

        tree("0\n", "fvaddr\n");
        CHECK_INT(damon_new(root, state, true, false, &d), 0);
        damon_set_proc_root(d, procdir);
        fake_stat(4242, START + 1);
        damon_sync(d, &w, 1, 1000);
        damon_round(d, next_ms());
        CHECK_STR(get("0/state"), "off\n");
        CHECK_STR(get("0/contexts/0/targets/0/pid_target"), "");
        CHECK(!damon_monitored(d, 4242));
        damon_get_stats(d, &st);
        CHECK_INT(st.pid_reused, 1);
        /* The process the daemon now knows under that pid is watched, its start time read. */
        w.starttime = START + 1;
        damon_sync(d, &w, 1, 2000);
        damon_round(d, next_ms());
        CHECK_STR(get("0/contexts/0/targets/0/pid_target"), "4242");
        n = damon_take(d, &res);
        CHECK_INT(n, 1);
        if (n == 1)
                CHECK(res[0].starttime == START + 1);
        damon_results_free(res, n);
        damon_free(d);
        untree();
}

/* New regions for a running kdamond, and its pid reused between the decision and the
 * commit (a commit makes the kernel look pid_target up again): not committed, the
 * kdamond turned off, the reuse counted. */
TEST(a_pid_reused_before_a_commit_is_not_committed) {
        struct damon_want w = { .pid = 4242, .starttime = START, .n = 1, .r = { { 0x10000, 0x20000 } } };
        struct damon_result *res;
        struct damon_stats st;
        struct damon *d;
        size_t n;

        tree("0\n", "fvaddr\n");
        CHECK_INT(damon_new(root, state, true, false, &d), 0);
        damon_set_proc_root(d, procdir);
        damon_sync(d, &w, 1, 1000);
        damon_round(d, next_ms());
        kernel_step(777);
        w.r[0].end = 0x30000;
        damon_sync(d, &w, 1, 2000);
        fake_stat(4242, START + 1);       /* exited, its pid another process's now */
        damon_round(d, next_ms());
        damon_get_stats(d, &st);
        CHECK_INT(st.commits, 0);
        CHECK(st.pid_reused >= 1);
        CHECK_STR(get("0/state"), "off");
        CHECK(!damon_monitored(d, 4242));
        n = damon_take(d, &res);
        for (size_t i = 0; i < n; i++)
                CHECK(res[i].starttime == START);
        damon_results_free(res, n);
        damon_free(d);
        untree();
}

/* The daemon wants the kdamond for another process under the same pid (a new start
 * time): restarted, which checks the process, never committed; its reads carry the
 * new start time. */
TEST(a_new_process_under_the_same_pid_is_restarted_not_committed) {
        struct damon_want w = { .pid = 4242, .starttime = START, .n = 1, .r = { { 0x10000, 0x20000 } } };
        struct damon_result *res;
        struct damon_stats st;
        struct damon *d;
        size_t n;

        tree("0\n", "fvaddr\n");
        CHECK_INT(damon_new(root, state, true, false, &d), 0);
        damon_set_proc_root(d, procdir);
        damon_sync(d, &w, 1, 1000);
        damon_round(d, next_ms());
        kernel_step(777);
        n = damon_take(d, &res);
        damon_results_free(res, n);
        fake_stat(4242, START + 1);
        w.starttime = START + 1;
        damon_sync(d, &w, 1, 2000);
        damon_round(d, next_ms());
        damon_get_stats(d, &st);
        CHECK_INT(st.commits, 0);
        CHECK(strcmp(get("0/state"), "commit") != 0);
        CHECK(damon_monitored(d, 4242));
        kernel_step(777);
        damon_round(d, next_ms());
        CHECK_STR(get("0/state"), "update_schemes_tried_regions");
        n = damon_take(d, &res);
        CHECK(n >= 1);
        for (size_t i = 0; i < n; i++)
                CHECK_MSG(res[i].starttime == START + 1, "a read of the new process as the old one's");
        damon_results_free(res, n);
        damon_free(d);
        untree();
}

TEST(slots_bounded_and_shared_by_owners) {
        struct damon_want w[8] = {};
        unsigned a = 0, b = 0;
        struct damon *d;

        tree("0\n", "vaddr fvaddr\n");
        CHECK_INT(damon_new(root, state, true, false, &d), 0);
        damon_set_proc_root(d, procdir);
        for (unsigned i = 0; i < 8; i++)
                w[i] = (struct damon_want) { .pid = 100 + (pid_t) i, .owner = i < 6 ? 1000 : 2000, .n = 1,
                                             .r = { { 0x1000, 0x2000 } } };
        damon_sync(d, w, 8, 1000);
        for (unsigned i = 0; i < 8; i++) {
                a += i < 6 && damon_monitored(d, w[i].pid);
                b += i >= 6 && damon_monitored(d, w[i].pid);
        }
        CHECK_INT(a + b, DAMON_PROCS_MAX);
        CHECK_INT(b, 2);    /* the second owner gets its even share */
        damon_free(d);
        untree();
}

TEST(crash_cleanup_turns_off_only_ours) {
        char p[600];

        tree("4\n", "vaddr\n");
        put("0/state", "on\n");
        put("0/pid", "555\n");
        put("1/state", "on\n");
        put("1/pid", "666\n");     /* recorded as 600: someone else's now */
        if (!write_state("kdamonds 4\n0 555\n1 600\nbad line\n9 1\n"))
                return;
        CHECK_INT(damon_recover(root, state), 0);
        CHECK_STR(get("0/state"), "off");
        CHECK_STR(get("1/state"), "on\n");
        CHECK_STR(get("nr_kdamonds"), "4\n");  /* not every kdamond is off: left */
        CHECK(access(state, F_OK) < 0);
        untree();

        /* A crash while "on" was written: known by its target's pid. */
        tree("4\n", "fvaddr\n");
        put("2/state", "on\n");
        put("2/contexts/0/targets/0/pid_target", "4242\n");
        put("3/state", "on\n");
        put("3/contexts/0/targets/0/pid_target", "999\n");    /* another tool's since */
        if (!write_state("kdamonds 4\n2 starting 4242\n3 starting 5000\n"))
                return;
        CHECK_INT(damon_recover(root, state), 0);
        CHECK_STR(get("2/state"), "off");
        CHECK_STR(get("3/state"), "on\n");
        CHECK(access(state, F_OK) < 0);
        untree();

        /* Writing "off" fails: the file stays for the next start. */
        tree("4\n", "fvaddr\n");
        put("0/pid", "555\n");
        snprintf(p, sizeof(p), "%s/0/state", kd);
        CHECK(unlink(p) == 0 && mkdir(p, 0755) == 0);
        if (!write_state("kdamonds 4\n0 555\n"))
                return;
        CHECK(damon_recover(root, state) < 0);
        CHECK(access(state, F_OK) == 0);
        untree();
}

/* The state file names the kdamonds' directories: when they are not those any more,
 * another tool wrote nr_kdamonds since (the kernel refuses it while one of ours is on)
 * and nothing there is ours, not even a kdamond whose pid is the one recorded. A file
 * of an older numabalanced (no directories) is trusted by its count, as before. */
TEST(crash_cleanup_knows_ours_by_their_directories) {
        FILE *f;

        tree("4\n", "fvaddr\n");
        put("0/state", "on\n");
        put("0/pid", "555\n");
        f = fopen(state, "w");
        CHECK(f != NULL);
        if (!f)
                return;
        fprintf(f, "%s0 555\n", kdamonds_line());
        fclose(f);
        remake_kdamonds("4\n");             /* another tool's, all off, one with pid 555 */
        put("0/state", "on\n");
        put("0/pid", "555\n");
        put("1/state", "on\n");
        CHECK_INT(damon_recover(root, state), 0);
        CHECK_STR(get("0/state"), "on\n");
        CHECK_STR(get("nr_kdamonds"), "4\n");
        CHECK(access(state, F_OK) < 0);
        /* Another tool's 4, every kdamond off: nr_kdamonds is not set back to 0. */
        put("0/state", "off\n");
        put("1/state", "off\n");
        if (!write_state("kdamonds 4 1 2 3 4\n"))
                return;
        CHECK_INT(damon_recover(root, state), 0);
        CHECK_STR(get("nr_kdamonds"), "4\n");
        CHECK(access(state, F_OK) < 0);
        /* Ours (the directories recorded), every one off: DAMON given back. */
        if (!write_state(kdamonds_line()))
                return;
        CHECK_INT(damon_recover(root, state), 0);
        CHECK_STR(get("nr_kdamonds"), "0");
        untree();

        /* An older numabalanced's file: by its count. */
        tree("4\n", "fvaddr\n");
        if (!write_state("kdamonds 4\n"))
                return;
        CHECK_INT(damon_recover(root, state), 0);
        CHECK_STR(get("nr_kdamonds"), "0");
        untree();

        /* At start, another tool's 4 is not taken for a previous run's to recover:
         * DAMON is not used, nothing written. */
        tree("4\n", "fvaddr\n");
        if (!write_state("kdamonds 4 1 2 3 4\n"))
                return;
        {
                struct damon *d;

                CHECK_INT(damon_new(root, state, true, true, &d), 0);
                CHECK(!damon_in_use(d) && strstr(damon_why(d), "another tool") != NULL);
                damon_free(d);
        }
        CHECK_STR(get("nr_kdamonds"), "4\n");
        untree();
}

static double now_s(void) {
        struct timespec t;

        clock_gettime(CLOCK_MONOTONIC, &t);
        return (double) t.tv_sec + (double) t.tv_nsec / 1e9;
}

/* With a thread, a previous run's kdamonds are turned off by the DAMON thread (its
 * "off" may wait on a kdamond stuck on a tenant's mmap lock), not by damon_new()'s
 * caller; nr_kdamonds, ours, is not taken for another tool's. */
TEST(recovery_runs_on_the_damon_thread) {
        char fifo[600], old[600];
        struct damon *d;
        double t;
        int fd;

        tree("4\n", "fvaddr\n");
        put("0/pid", "555\n");
        snprintf(fifo, sizeof(fifo), "%s/0/state", kd);
        snprintf(old, sizeof(old), "%s/0/state-stalled", kd);
        CHECK(unlink(fifo) == 0 && mkfifo(fifo, 0600) == 0);   /* its "off" waits */
        if (!write_state("kdamonds 4\n0 555\n"))
                return;
        t = now_s();
        CHECK_INT(damon_new(root, state, true, true, &d), 0);
        CHECK(now_s() - t < 0.5);
        CHECK(damon_in_use(d));
        usleep(200000);
        CHECK(rename(fifo, old) == 0);      /* the write returns: a reader comes */
        put("0/state", "off\n");
        fd = open(old, O_RDONLY | O_NONBLOCK);
        CHECK(fd >= 0);
        for (int i = 0; i < 100 && access(state, F_OK) == 0; i++)
                usleep(20000);
        {       /* what the thread wrote to the stalled state file */
                char w[16] = "";

                CHECK(fd >= 0 && read(fd, w, sizeof(w) - 1) == 3 && strcmp(w, "off") == 0);
        }
        CHECK_STR(get("nr_kdamonds"), "0");
        CHECK(access(state, F_OK) < 0);
        damon_free(d);
        if (fd >= 0)
                close(fd);
        untree();
}

/* A sysfs write that never returns (a kdamond stuck on a tenant's mmap lock), made
 * with a FIFO that nobody reads: the event loop's calls still return at once, and the
 * stop gives up after JOIN_WAIT_S (5 s); once the write returns, the thread finishes
 * on its own, turns off what it made and frees the module. */
TEST(stalled_thread_holds_nothing) {
        struct damon_want w = { .pid = 4242, .starttime = START, .owner = 0, .n = 1, .r = { { 0x10000, 0x20000 } } };
        struct damon_result *res;
        char fifo[600], old[600];
        struct damon *d;
        double t;
        int fd;

        tree("0\n", "vaddr fvaddr\n");
        snprintf(fifo, sizeof(fifo), "%s/0/state", kd);
        snprintf(old, sizeof(old), "%s/0/state-stalled", kd);
        CHECK(unlink(fifo) == 0 && mkfifo(fifo, 0600) == 0);
        CHECK_INT(damon_new(root, state, true, true, &d), 0);
        damon_set_proc_root(d, procdir);
        CHECK(damon_in_use(d));
        damon_sync(d, &w, 1, 1000);
        usleep(300000);                 /* the thread is in its write of "on" now */
        t = now_s();
        damon_sync(d, &w, 1, 2000);
        CHECK(damon_monitored(d, 4242));
        CHECK_INT(damon_take(d, &res), 0);
        CHECK(now_s() - t < 0.5);
        t = now_s();
        damon_free(d);
        t = now_s() - t;
        CHECK_MSG(t >= 4.5 && t < 8, "the stop took %.1f s", t);
        /* The write returns (a reader comes); the tree is a plain one again. */
        CHECK(rename(fifo, old) == 0);
        put("0/state", "on\n");
        fd = open(old, O_RDONLY | O_NONBLOCK);
        CHECK(fd >= 0);
        for (int i = 0; i < 100 && strcmp(get("nr_kdamonds"), "0") != 0; i++)
                usleep(50000);
        CHECK_STR(get("nr_kdamonds"), "0");
        CHECK_STR(get("0/state"), "off");
        usleep(200000);                 /* and it has freed the module (valgrind) */
        if (fd >= 0)
                close(fd);
        untree();
}

static uint64_t fed_sum;
static void add(void *u, uint64_t addr) {
        (void) u;
        fed_sum += addr;
}

TEST(pages_targets_and_feed) {
        struct damon_range in[40], out[DAMON_TARGET_REGIONS_MAX];
        struct damon_range hot[] = { { 0x0, 0x3000 }, { 0x5000, 0x4000 }, { 0x9000, 0x100000 } };
        struct damon_range slow[] = { { 0x1000, 0x2000 }, { 0xa000, 0xc000 } };
        uint64_t capped, fed;
        size_t n;

        for (unsigned i = 0; i < 40; i++)
                in[i] = (struct damon_range) { i * 0x10000, i * 0x10000 + 0x1000 };
        in[5].start = in[4].end + 1;   /* the smallest gap: merged first */
        in[5].end = in[5].start + 0x1000;
        n = damon_pages_targets(in, 40, out, DAMON_TARGET_REGIONS_MAX);
        CHECK_INT(n, DAMON_TARGET_REGIONS_MAX);
        CHECK(out[0].start == 0 && out[n - 1].end == 39 * 0x10000 + 0x1000);
        for (size_t i = 1; i < n; i++)
                CHECK(out[i].start > out[i - 1].end);
        CHECK(out[4].end == in[5].end);
        fed_sum = 0;
        fed = damon_pages_feed(hot, 3, slow, 2, 0x1000, 100, add, NULL, &capped);
        CHECK_INT(fed, 3);              /* 0x1000, 0xa000, 0xb000; the bad region skipped */
        CHECK_INT(fed_sum, 0x1000 + 0xa000 + 0xb000);
        CHECK_INT(capped, 0);
        fed = damon_pages_feed(hot, 3, slow, 2, 0x1000, 2, add, NULL, &capped);
        CHECK_INT(fed, 2);
        CHECK_INT(capped, 1);
        /* A region reaching the top of the address space ends. */
        hot[0] = (struct damon_range) { UINT64_MAX - 0x1fff, UINT64_MAX };
        slow[0] = hot[0];
        fed = damon_pages_feed(hot, 1, slow, 1, 0x1000, 100, add, NULL, &capped);
        CHECK_INT(fed, 2);
}

/* A read fed as page evidence (damon_feed_results): the pages of its hot regions within
 * the process's slow VMAs, counted for its hot node, those outside what its last full
 * read mapped dropped and not counted; a read of a reused pid (another start time) is
 * not its; a process whose hot node is slow (or unknown) gets none, counted. */
TEST(reads_fed_as_page_evidence) {
        uint64_t ps = page_size(), base = 256 * ps;
        struct topology *topo = NULL;
        struct damon_range mapped = { base, base + 3 * ps };
        struct damon_range slow = { base, base + 4 * ps }, hot = { base, base + 4 * ps };
        struct proc_rec a = { .pid = 10, .starttime = 5, .hot_node = 0, .mapped = &mapped, .n_mapped = 1,
                              .slow = &slow, .n_slow = 1 };
        struct proc_rec b = a;
        struct proc_rec *v[] = { &a, &b };
        struct proc_records procs = { .v = v, .n = 2 };
        struct damon_result res[] = {
                { .pid = 10, .starttime = 5, .hot = &hot, .n_hot = 1 },
                { .pid = 10, .starttime = 6, .hot = &hot, .n_hot = 1 },
                { .pid = 11, .starttime = 5, .hot = &hot, .n_hot = 1 },
        };
        struct counters c = {};
        nb_nodemask one = {};

        if (topology_read(TEST_DATA_DIR "/sys/2n2c", &topo) < 0)
                TEST_FAIL("no topology");
        nodemask_set(&one, 1);
        topology_set_slow(topo, &one);
        b.pid = 11;
        b.hot_node = 1;
        damon_feed_results(res, 3, &procs, topo, &c);
        CHECK_INT(c.damon_pages, 3);
        CHECK(a.seen && page_agg_pages(a.seen) == 3);
        CHECK_INT(c.damon_no_node, 1);
        CHECK(!b.seen);
        CHECK_INT(c.damon_full + c.damon_capped, 0);
        page_agg_free(a.seen);
        topology_free(topo);
}

/* A process whose page samples cover its accesses (lib/sampled-cold.h), or are coming
 * and not yet judged, gets no page evidence from DAMON's hot regions: its samples name
 * its hot pages one by one. One whose samples stopped gets DAMON's again. */
TEST(sampled_processes_take_no_hot_regions) {
        uint64_t ps = page_size(), base = 256 * ps, now = clock_now_ms();
        struct topology *topo = NULL;
        struct damon_range mapped = { base, base + 4 * ps }, slow = mapped, hot = mapped;
        struct sampled_cold_pool pool = {};
        struct proc_rec a = { .pid = 10, .starttime = 5, .hot_node = 0, .mapped = &mapped, .n_mapped = 1,
                              .slow = &slow, .n_slow = 1 };
        struct proc_rec *v[] = { &a };
        struct proc_records procs = { .v = v, .n = 1 };
        struct damon_result res[] = { { .pid = 10, .starttime = 5, .hot = &hot, .n_hot = 1 } };
        struct counters c = {};
        nb_nodemask one = {};

        if (topology_read(TEST_DATA_DIR "/sys/2n2c", &topo) < 0 || sampled_cold_new(&pool, &a.sampled) < 0)
                TEST_FAIL("no topology");
        nodemask_set(&one, 1);
        topology_set_slow(topo, &one);
        for (uint64_t t = now - 12000; t <= now; t += 1000)
                sampled_cold_add(a.sampled, base, 200, t, 10000);
        CHECK(sampled_cold_known(a.sampled, clock_now_ms(), NULL));
        damon_feed_results(res, 1, &procs, topo, &c);
        CHECK_INT(c.damon_pages, 0);
        CHECK(!a.seen);
        sampled_cold_free(a.sampled);
        CHECK_INT(sampled_cold_new(&pool, &a.sampled), 0);
        sampled_cold_add(a.sampled, base, 1, clock_now_ms(), 10000);        /* young */
        damon_feed_results(res, 1, &procs, topo, &c);
        CHECK_INT(c.damon_pages, 0);
        sampled_cold_free(a.sampled);
        CHECK_INT(sampled_cold_new(&pool, &a.sampled), 0);
        sampled_cold_add(a.sampled, base, 1, clock_now_ms() - 6000, 10000); /* stale */
        damon_feed_results(res, 1, &procs, topo, &c);
        CHECK_INT(c.damon_pages, 4);
        page_agg_free(a.seen);
        sampled_cold_free(a.sampled);
        free(a.cold);
        topology_free(topo);
}

/* A donor's read (no slow VMAs): its cold regions kept for the exchange, no page
 * evidence from its hot ones. */
TEST(a_donors_read_keeps_cold_only) {
        uint64_t ps = page_size(), base = 256 * ps;
        struct topology *topo = NULL;
        struct damon_range mapped = { base, base + 8 * ps };
        struct damon_range hot = { base, base + 4 * ps }, cold = { base + 4 * ps, base + 8 * ps };
        struct proc_rec a = { .pid = 10, .starttime = 5, .hot_node = 0, .mapped = &mapped, .n_mapped = 1 };
        struct proc_rec *v[] = { &a };
        struct proc_records procs = { .v = v, .n = 1 };
        struct damon_result res[] = { { .pid = 10, .starttime = 5, .hot = &hot, .n_hot = 1, .cold = &cold,
                                        .n_cold = 1 } };
        struct counters c = {};

        if (topology_read(TEST_DATA_DIR "/sys/2n2c", &topo) < 0)
                TEST_FAIL("no topology");
        damon_feed_results(res, 1, &procs, topo, &c);
        CHECK_INT(c.damon_pages, 0);
        CHECK(!a.seen);
        CHECK(a.n_cold == 1 && a.cold[0].start == cold.start && a.cold[0].end == cold.end);
        free(a.cold);
        topology_free(topo);
}

/* Which records want a kdamond (damon_sync_procs): seen at this tick, in a mode that
 * moves or advises, with pages on a slow node at their last full read, not exited. */
TEST(the_records_that_want_a_kdamond) {
        struct damon_range slow = { 0x10000, 0x20000 };
        struct cg_rec balance = { .path = "/a", .mode = CG_MODE_BALANCE, .turn_uid = 1000 };
        struct cg_rec advise = { .path = "/b", .mode = CG_MODE_ADVISE }, off = { .path = "/c", .mode = CG_MODE_OFF };
        struct proc_rec p[5];
        struct proc_rec *v[5];
        struct proc_records procs = { .v = v, .n = 5 };
        nb_cpumask cpus = {};
        struct damon *d;

        for (int i = 0; i < 5; i++) {
                p[i] = (struct proc_rec) { .pid = 100 + i, .starttime = START, .cg = &balance, .seen_tick = 3,
                                           .slow = &slow, .n_slow = 1 };
                v[i] = &p[i];
        }
        p[1].cg = &advise;
        p[2].cg = &off;                /* opted out since */
        p[3].seen_tick = 2;            /* not seen at this tick */
        p[4].exited = true;
        cpumask_set(&cpus, 0);
        tree("0\n", "vaddr fvaddr paddr\n");
        CHECK_INT(damon_new(root, state, true, false, &d), 0);
        damon_sync_procs(d, &procs, NULL, 3, &cpus, 1000);
        CHECK(damon_monitored(d, 100) && damon_monitored(d, 101));
        CHECK(!damon_monitored(d, 102) && !damon_monitored(d, 103) && !damon_monitored(d, 104));
        p[0].n_slow = 0;               /* its last read found none on a slow node */
        damon_sync_procs(d, &procs, NULL, 3, &cpus, 2000);
        CHECK(!damon_monitored(d, 100) && damon_monitored(d, 101));
        damon_free(d);
}

/* Donors (damon_sync_procs): with a slow node in the topology, the kdamonds the
 * processes with slow pages leave go to processes in a mode that moves with no slow
 * pages and DAMON_DONOR_MIN_KB resident, the largest first; a process with slow pages
 * takes a donor's kdamond; without a slow node there are none. */
TEST(donors_take_the_kdamonds_left) {
        struct damon_range slow = { 0x10000, 0x20000 };
        struct damon_range mapped = { 0x100000, 0x900000 };
        struct damon_range got[4];
        struct cg_rec balance = { .path = "/a", .mode = CG_MODE_BALANCE, .turn_uid = 1000 };
        struct cg_rec advise = { .path = "/b", .mode = CG_MODE_ADVISE };
        struct proc_rec p[7];
        struct proc_rec *v[7];
        struct proc_records procs = { .v = v, .n = 7 };
        struct topology *topo = NULL;
        nb_cpumask cpus = {};
        nb_nodemask one = {};
        struct damon *d;

        for (int i = 0; i < 7; i++) {
                p[i] = (struct proc_rec) { .pid = 200 + i, .starttime = START, .cg = &balance, .seen_tick = 3,
                                           .mapped = &mapped, .n_mapped = 1,
                                           .rss_kb = DAMON_DONOR_MIN_KB + (uint64_t) (i * 5 % 7) * 1024 };
                v[i] = &p[i];
        }
        p[0].slow = &slow;
        p[0].n_slow = 1;                 /* a taker */
        p[1].cg = &advise;               /* gives nothing: not a donor */
        p[2].rss_kb = DAMON_DONOR_MIN_KB - 1;  /* too small */
        /* Donors by size, not in the list's order: 4, 5, 6, 3. */
        if (topology_read(TEST_DATA_DIR "/sys/2n2c", &topo) < 0)
                TEST_FAIL("no topology");
        cpumask_set(&cpus, 0);
        tree("0\n", "vaddr fvaddr paddr\n");
        CHECK_INT(damon_new(root, state, true, false, &d), 0);
        damon_sync_procs(d, &procs, topo, 3, &cpus, 1000);
        CHECK(damon_monitored(d, 200));
        CHECK(!damon_monitored(d, 204) && !damon_monitored(d, 205));   /* no slow node */
        nodemask_set(&one, 1);
        topology_set_slow(topo, &one);
        damon_sync_procs(d, &procs, topo, 3, &cpus, 2000);
        CHECK(damon_monitored(d, 200) && damon_monitored(d, 204) && damon_monitored(d, 205) &&
              damon_monitored(d, 206));
        CHECK(!damon_monitored(d, 201) && !damon_monitored(d, 202) && !damon_monitored(d, 203));
        /* The taker may give too (it moves, and is large): watched over its mapped
         * ranges, its slow VMA among them; a small one over its slow VMA alone. */
        CHECK(damon_regions_of(d, 200, got, 4) == 1 && got[0].start == mapped.start && got[0].end == mapped.end);
        p[0].rss_kb = DAMON_DONOR_MIN_KB - 1;
        damon_sync_procs(d, &procs, topo, 3, &cpus, 2500);
        CHECK(damon_regions_of(d, 200, got, 4) == 1 && got[0].start == slow.start && got[0].end == slow.end);
        p[3].slow = &slow;               /* gains slow pages: takes the smallest donor's */
        p[3].n_slow = 1;
        damon_sync_procs(d, &procs, topo, 3, &cpus, 3000);
        CHECK(damon_monitored(d, 200) && damon_monitored(d, 203) && damon_monitored(d, 204) &&
              damon_monitored(d, 205));
        CHECK(!damon_monitored(d, 206));
        damon_free(d);
        topology_free(topo);
}

DEFINE_TEST_MAIN()
