/* SPDX-License-Identifier: GPL-2.0-or-later */
/* /proc/<pid>/stat and status: captured files (tests/data/proc/, see
 * tests/data/README.md) with their expected values, hand-made hostile buffers, and
 * the readers against a stored proc root (tests/data/proc/root). */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include "numa_maps.h"
#include "parse.h"
#include "proc.h"
#include "test.h"

#define PROC_DIR TEST_DATA_DIR "/proc"

static char *load(const char *name, size_t *len) {
        char path[1024];
        char *buf = NULL;
        int r;

        snprintf(path, sizeof(path), "%s/%s", PROC_DIR, name);
        r = parse_read_file_at(AT_FDCWD, path, 1 << 20, &buf, len);
        if (r < 0) {
                TEST_FAIL("cannot read %s: %s", path, strerror(-r));
                return NULL;
        }
        return buf;
}

struct exp_stat {
        const char *file;
        pid_t pid;
        const char *comm;
        char state;
        unsigned long flags;
        uint64_t utime, stime, starttime, rss;
        int processor;
        bool kthread;
};

static const struct exp_stat stats[] = {
        /* The capture program in the 6.1 guest (tests/data/numa_maps/capture). */
        { "normal.stat", 263, "capture", 'S', 4194560, 7, 17, 1667, 1479, 1, false },
        /* kthreadd and a workqueue worker: PF_KTHREAD, no memory. */
        { "kthread.stat", 2, "kthreadd", 'S', 2129984, 0, 0, 24, 0, 1, true },
        { "kworker.stat", 10, "kworker/0:0H-kblockd", 'I', 69238880, 0, 2, 24, 0, 0, true },
        /* An exited, unreaped child. */
        { "zombie.stat", 2034, "zombie-child", 'Z', 4227148, 0, 0, 84109, 0, 0, false },
        /* prctl(PR_SET_NAME, "x) (y z) R 1 2"): only the last ')' ends comm. */
        { "comm-parens.stat", 2033, "x) (y z) R 1 2", 'S', 4194304, 0, 0, 84109, 364, 1, false },
};

static void check_stat(const struct exp_stat *e, const struct proc_stat *st) {
        int fails = test_failures;

        CHECK_INT(st->pid, e->pid);
        CHECK_STR(st->comm, e->comm);
        CHECK_INT(st->state, e->state);
        CHECK_INT(st->flags, e->flags);
        CHECK_INT(st->utime, e->utime);
        CHECK_INT(st->stime, e->stime);
        CHECK_INT(st->starttime, e->starttime);
        CHECK_INT(st->rss_pages, e->rss);
        CHECK_INT(st->processor, e->processor);
        CHECK_INT(!!(st->flags & PF_KTHREAD_FLAG), e->kthread);
        if (test_failures != fails)
                fprintf(stderr, "  ^ in %s\n", e->file);
}

struct exp_status {
        const char *file;
        const char *name;
        char state;
        pid_t tgid, pid, ppid;
        uid_t uid, euid;
        uint64_t rss_kb;
        const char *cpus, *mems;
};

static const struct exp_status statuses[] = {
        { "normal.status", "capture", 'S', 263, 263, 255, 0, 0, 5916, "0-1", "0-1" },
        { "kthread.status", "kthreadd", 'S', 2, 2, 0, 0, 0, 0, "0-1", "0" },
        { "kworker.status", "kworker/0:0H-kblockd", 'I', 10, 10, 2, 0, 0, 0, "0", "0" },
        { "zombie.status", "zombie-child", 'Z', 2034, 2034, 2033, 0, 0, 0, "0-1", "0" },
        { "comm-parens.status", "x) (y z) R 1 2", 'S', 2033, 2033, 2000, 0, 0, 1552, "0-1", "0" },
};

static void check_status(const struct exp_status *e, const struct proc_status *st) {
        char buf[CPUMASK_STRMAX];
        int fails = test_failures;

        CHECK_STR(st->name, e->name);
        CHECK_INT(st->state, e->state);
        CHECK_INT(st->tgid, e->tgid);
        CHECK_INT(st->pid, e->pid);
        CHECK_INT(st->ppid, e->ppid);
        CHECK_INT(st->uid_real, e->uid);
        CHECK_INT(st->uid_effective, e->euid);
        CHECK_INT(st->vm_rss_kb, e->rss_kb);
        CHECK(st->has_cpus_allowed);
        CHECK(st->has_mems_allowed);
        cpumask_format(&st->cpus_allowed, buf, sizeof(buf));
        CHECK_STR(buf, e->cpus);
        nodemask_format(&st->mems_allowed, buf, sizeof(buf));
        CHECK_STR(buf, e->mems);
        if (test_failures != fails)
                fprintf(stderr, "  ^ in %s\n", e->file);
}

TEST(stat_captured_files) {
        for (size_t i = 0; i < ELEMENTSOF(stats); i++) {
                struct proc_stat st;
                size_t len;
                _cleanup_free_ char *buf = load(stats[i].file, &len);

                if (!buf)
                        continue;
                CHECK_INT(proc_stat_parse(buf, len, &st), 0);
                check_stat(&stats[i], &st);
        }
}

TEST(status_captured_files) {
        for (size_t i = 0; i < ELEMENTSOF(statuses); i++) {
                struct proc_status st;
                size_t len;
                _cleanup_free_ char *buf = load(statuses[i].file, &len);

                if (!buf)
                        continue;
                CHECK_INT(proc_status_parse(buf, len, &st), 0);
                check_status(&statuses[i], &st);
        }
}

/* The exec signature (fields 26-28, 45-51) of the captured process; a kernel thread
 * has none. */
TEST(stat_mm_layout) {
        struct proc_stat st;
        size_t len;
        _cleanup_free_ char *buf = load("normal.stat", &len), *kt = load("kthread.stat", &len);
        struct proc_mm_layout none = {};

        if (!buf || !kt)
                return;
        CHECK_INT(proc_stat_parse(buf, strlen(buf), &st), 0);
        CHECK_INT(st.layout.start_code, UINT64_C(93978048487424));
        CHECK_INT(st.layout.end_code, UINT64_C(93978048490509));
        CHECK_INT(st.layout.start_stack, UINT64_C(140724397472928));
        CHECK_INT(st.layout.start_data, UINT64_C(93978048499152));
        CHECK_INT(st.layout.end_data, UINT64_C(93978048499920));
        CHECK_INT(st.layout.start_brk, UINT64_C(93978998317056));
        CHECK_INT(st.layout.arg_start, UINT64_C(140724397477540));
        CHECK_INT(st.layout.env_end, UINT64_C(140724397477832));
        CHECK(!proc_mm_layout_equal(&st.layout, &none));
        CHECK_INT(proc_stat_parse(kt, strlen(kt), &st), 0);
        CHECK(proc_mm_layout_equal(&st.layout, &none));
}

/* Uid: and Gid: with their four ids; a short line leaves the rest unknown, not root. */
TEST(status_all_ids) {
        struct proc_status st;
        const char *s = "Tgid:\t5\nPid:\t5\nUid:\t1000\t0\t1001\t1002\nGid:\t100\t101\t102\t103\n";
        const char *two = "Tgid:\t5\nPid:\t5\nUid:\t1000\t1000\nGid:\t100\t100\n";

        CHECK_INT(proc_status_parse(s, strlen(s), &st), 0);
        CHECK_INT(st.uid_real, 1000);
        CHECK_INT(st.uid_effective, 0);
        CHECK_INT(st.uid_saved, 1001);
        CHECK_INT(st.uid_fs, 1002);
        CHECK_INT(st.gid_real, 100);
        CHECK_INT(st.gid_effective, 101);
        CHECK_INT(st.gid_saved, 102);
        CHECK_INT(st.gid_fs, 103);
        CHECK_INT(proc_status_parse(two, strlen(two), &st), 0);
        CHECK_INT(st.uid_saved, (uid_t) -1);
        CHECK_INT(st.uid_fs, (uid_t) -1);
        CHECK_INT(st.gid_saved, (gid_t) -1);
        CHECK_INT(st.gid_fs, (gid_t) -1);
}

/* A stat line with the given text after "(comm)": fields 3..52 of a normal process. */
#define TAIL " S 255 254 254 0 -1 4194560 284 0 6 0 7 17 0 0 20 0 1 0 1667 15958016 1479 " \
        "18446744073709551615 1 2 3 0 0 0 65536 6 0 1 0 0 17 1 0 0 0 0 0 4 5 6 7 8 8 9 0\n"

static void stat_bad(const char *s) {
        struct proc_stat st = { .pid = 4242 };
        int r = proc_stat_parse(s, strlen(s), &st);

        CHECK_INT(r, -EINVAL);
        if (r != -EINVAL)
                fprintf(stderr, "  ^ stat \"%.60s\"\n", s);
        CHECK_INT(st.pid, 4242); /* untouched */
}

/* Parentheses and spaces in comm, even a fake ") R 1 2 ..." inside it; or none. */
TEST(stat_comm_ends_at_the_last_paren) {
        struct proc_stat st;

        CHECK_INT(proc_stat_parse("7 ()) R 1 ((a)" TAIL, strlen("7 ()) R 1 ((a)" TAIL), &st), 0);
        CHECK_STR(st.comm, ")) R 1 ((a");
        CHECK_INT(st.state, 'S');
        CHECK_INT(st.starttime, 1667);
        CHECK_INT(st.processor, 1);
        CHECK_INT(proc_stat_parse("7 ()" TAIL, strlen("7 ()" TAIL), &st), 0);
        CHECK_STR(st.comm, "");
}

TEST(stat_without_final_newline) {
        struct proc_stat st;
        char b[512];

        snprintf(b, sizeof(b), "%s", "7 (x)" TAIL);
        b[strlen(b) - 1] = 0;
        CHECK_INT(proc_stat_parse(b, strlen(b), &st), 0);
        CHECK_INT(st.rss_pages, 1479);
}

/* A comm longer than the field is cut, not overrun. */
TEST(stat_long_comm_cut) {
        struct proc_stat st;
        char b[1024];

        snprintf(b, sizeof(b), "9 (%0200d)%s", 0, TAIL);
        CHECK_INT(proc_stat_parse(b, strlen(b), &st), 0);
        CHECK_INT(strlen(st.comm), sizeof(st.comm) - 1);
        CHECK_INT(st.pid, 9);
}

/* The length counts: a buffer cut before field 39 is short. */
TEST(stat_length_counts) {
        struct proc_stat st;
        const char *s = "7 (x)" TAIL;

        CHECK_INT(proc_stat_parse(s, strlen(s) - 40, &st), -EINVAL);
}

TEST(stat_malformed_rejected_untouched) {
        struct proc_stat st;

        stat_bad("");
        stat_bad("7");
        stat_bad("7 (x");
        stat_bad("7 x)" TAIL);
        stat_bad("(x)" TAIL);
        stat_bad("0 (x)" TAIL);
        stat_bad("-7 (x)" TAIL);
        stat_bad("7x (x)" TAIL);
        stat_bad("7  (x)" TAIL);
        stat_bad("99999999999 (x)" TAIL);
        stat_bad("7 (x)");
        stat_bad("7 (x) S 1 2 3");
        stat_bad("7 (x)  S 255 254");
        stat_bad("7 (x) SS 255 254 254 0 -1 4194560 284 0 6 0 7 17 0 0 20 0 1 0 1667 15958016 1479 "
                 "18446744073709551615 1 2 3 0 0 0 65536 6 0 1 0 0 17 1 0 0\n");
        /* starttime not a number. */
        stat_bad("7 (x) S 255 254 254 0 -1 4194560 284 0 6 0 7 17 0 0 20 0 1 0 16x7 15958016 1479 "
                 "18446744073709551615 1 2 3 0 0 0 65536 6 0 1 0 0 17 1 0 0\n");
        /* processor negative. */
        stat_bad("7 (x) S 255 254 254 0 -1 4194560 284 0 6 0 7 17 0 0 20 0 1 0 1667 15958016 1479 "
                 "18446744073709551615 1 2 3 0 0 0 65536 6 0 1 0 0 17 -1 0 0\n");
        /* flags beyond unsigned long. */
        stat_bad("7 (x) S 255 254 254 0 -1 418446744073709551616 284 0 6 0 7 17 0 0 20 0 1 0 1667 1 1 "
                 "18446744073709551615 1 2 3 0 0 0 65536 6 0 1 0 0 17 1 0 0\n");
        /* A space at the end of the line. */
        stat_bad("7 (x) S 255 254 254 0 -1 4194560 284 0 6 0 7 17 0 0 20 0 1 0 1667 15958016 1479 "
                 "18446744073709551615 1 2 3 0 0 0 65536 6 0 1 0 0 17 1 0 0 \n");
        CHECK_INT(proc_stat_parse(NULL, 0, &st), -EINVAL);
}

static int status_parse_s(const char *s, struct proc_status *st) {
        return proc_status_parse(s, strlen(s), st);
}

static void status_bad(const char *s) {
        struct proc_status st = { .pid = 4242 };
        int r = status_parse_s(s, &st);

        CHECK_INT(r, -EINVAL);
        if (r != -EINVAL)
                fprintf(stderr, "  ^ status \"%.60s\"\n", s);
        CHECK_INT(st.pid, 4242);
}

/* The minimum: Tgid and Pid. No lists: has_* false; no Uid: not root. */
TEST(status_minimum) {
        struct proc_status st;

        CHECK_INT(status_parse_s("Tgid:\t5\nPid:\t6\n", &st), 0);
        CHECK_INT(st.tgid, 5);
        CHECK_INT(st.pid, 6);
        CHECK(!st.has_cpus_allowed);
        CHECK(!st.has_mems_allowed);
        CHECK_INT(st.uid_real, (uid_t) -1);
        CHECK_INT(st.uid_effective, (uid_t) -1);
        CHECK_INT(st.vm_rss_kb, 0);
        CHECK_STR(st.name, "");
}

/* No final newline; unknown lines and lines without ':' are skipped. */
TEST(status_unknown_lines_skipped) {
        struct proc_status st;

        CHECK_INT(status_parse_s("Name:\ta\\nb\nwhatever\nSpeculation_Store_Bypass:\tthread vulnerable\n"
                                 "Tgid:\t5\nPid:\t5\nUid:\t1000\t1001\t1000\t1000\nMems_allowed_list:\t",
                                 &st), 0);
        CHECK_STR(st.name, "a\\nb");
        CHECK_INT(st.uid_real, 1000);
        CHECK_INT(st.uid_effective, 1001);
        CHECK(st.has_mems_allowed);
        CHECK(nodemask_empty(&st.mems_allowed));
}

TEST(status_long_name_cut) {
        struct proc_status st;
        char b[512];

        snprintf(b, sizeof(b), "Name:\t%0300d\nTgid:\t1\nPid:\t1\n", 0);
        CHECK_INT(status_parse_s(b, &st), 0);
        CHECK_INT(strlen(st.name), sizeof(st.name) - 1);
}

/* Threads: and VmLck: (thread policies are read only for several threads; mlocked
 * memory is looked for only when VmLck is not 0). */
TEST(status_threads_and_locked) {
        struct proc_status st;
        size_t len;
        _cleanup_free_ char *one = load("normal.status", &len);
        _cleanup_free_ char *three = NULL;

        if (one) {
                CHECK_INT(proc_status_parse(one, len, &st), 0);
                CHECK_INT(st.threads, 1);
                CHECK_INT(st.vm_lck_kb, 0);
        }
        CHECK_INT(parse_read_file_at(AT_FDCWD, TEST_DATA_DIR "/threads/qemu-6.1-2node/worker-bind/100/status", 1 << 20,
                                     &three, &len), 0);
        CHECK_INT(proc_status_parse(three, len, &st), 0);
        CHECK_INT(st.threads, 3);
        CHECK_INT(status_parse_s("Tgid:\t5\nPid:\t5\nVmLck:\t    2048 kB\nThreads:\t12\n", &st), 0);
        CHECK_INT(st.vm_lck_kb, 2048);
        CHECK_INT(st.threads, 12);
        CHECK_INT(status_parse_s("Tgid:\t5\nPid:\t5\n", &st), 0);
        CHECK_INT(st.threads, 0);   /* absent: not known */
}

TEST(status_malformed_rejected_untouched) {
        struct proc_status st;

        status_bad("");
        status_bad("Pid:\t6\n");
        status_bad("Tgid:\t6\n");
        status_bad("Tgid:\t5\nPid:\t6\nPid:\t7\n");
        status_bad("Tgid:\t5\nPid:\t0\n");
        status_bad("Tgid:\t5\nPid:\t-6\n");
        status_bad("Tgid:\t5\nPid:\t6x\n");
        status_bad("Tgid:\t5\nPid:\t99999999999\n");
        status_bad("Tgid:\t5\nPid:\t\n");
        status_bad("Tgid:\t5\nPid:\t6\nVmRSS:\t  12 MB\n");
        status_bad("Tgid:\t5\nPid:\t6\nVmRSS:\t  kB\n");
        status_bad("Tgid:\t5\nPid:\t6\nVmLck:\t  1 MB\n");
        status_bad("Tgid:\t5\nPid:\t6\nThreads:\t0\n");
        status_bad("Tgid:\t5\nPid:\t6\nThreads:\t1\nThreads:\t1\n");
        status_bad("Tgid:\t5\nPid:\t6\nUid:\t0\n");
        status_bad("Tgid:\t5\nPid:\t6\nUid:\tx\t0\t0\t0\n");
        status_bad("Tgid:\t5\nPid:\t6\nUid:\t4294967295\t0\t0\t0\n");
        status_bad("Tgid:\t5\nPid:\t6\nUid:\t0\t0\t0\t0\t0\n");
        status_bad("Tgid:\t5\nPid:\t6\nGid:\t0\n");
        status_bad("Tgid:\t5\nPid:\t6\nGid:\t0\t-1\n");
        status_bad("Tgid:\t5\nPid:\t6\nGid:\t0\t0\nGid:\t0\t0\n");
        status_bad("Tgid:\t5\nPid:\t6\nState:\t\n");
        status_bad("Tgid:\t5\nPid:\t6\nCpus_allowed_list:\t0-3,\n");
        status_bad("Tgid:\t5\nPid:\t6\nCpus_allowed_list:\t8192\n");
        status_bad("Tgid:\t5\nPid:\t6\nMems_allowed_list:\t1024\n");
        status_bad("Tgid:\t5\nPid:\t6\nMems_allowed_list:\t0\nMems_allowed_list:\t0\n");
        CHECK_INT(proc_status_parse(NULL, 0, &st), -EINVAL);
}

#define PROC_ROOT PROC_DIR "/root"

/* The stored proc root: a process and a kernel thread, as the captured files say. */
TEST(readers_stat_and_status) {
        struct proc_status status;
        struct proc_stat st;

        CHECK_INT(proc_read_status(PROC_ROOT, 263, &status), 0);
        check_status(&statuses[0], &status);
        CHECK_INT(proc_read_stat(PROC_ROOT, 263, &st), 0);
        check_stat(&stats[0], &st);
        CHECK_INT(proc_read_stat(PROC_ROOT, 2, &st), 0);
        check_stat(&stats[1], &st);
}

TEST(readers_tasks) {
        struct proc_stat st;
        pid_t *tids = NULL;
        size_t n = 0;

        CHECK_INT(proc_read_task_stat(PROC_ROOT, 263, 1000, &st), 0);
        CHECK_INT(st.pid, 1000);
        CHECK_STR(st.comm, "worker 2");
        CHECK_INT(st.state, 'R');

        CHECK_INT(proc_list_tasks(PROC_ROOT, 263, &tids, &n), 0);
        CHECK_INT(n, 3);
        if (n == 3) {
                CHECK_INT(tids[0], 263);
                CHECK_INT(tids[1], 264);
                CHECK_INT(tids[2], 1000);
        }
        free(tids);
}

/* A process's numa_maps parses whole; a kernel thread's is empty. */
TEST(readers_numa_maps) {
        _cleanup_(numa_maps_freep) struct numa_maps *m = NULL;
        char *buf = NULL;
        size_t len = 0;

        CHECK_INT(proc_read_numa_maps(PROC_ROOT, 263, &buf, &len), 0);
        CHECK_INT(numa_maps_parse(buf, len, &m), 0);
        CHECK_INT(m->n_vmas, 42);
        CHECK_INT(m->n_bad_lines, 0);
        free(buf);
        buf = NULL;
        CHECK_INT(proc_read_numa_maps(PROC_ROOT, 2, &buf, &len), 0);
        CHECK_INT(len, 0);
        free(buf);
}

/* Gone: -ESRCH; a PID that cannot be: -EINVAL; the outputs untouched either way. */
TEST(readers_gone_or_invalid_pid) {
        struct proc_status status;
        struct proc_stat st = { .pid = 4242 };
        pid_t *tids = NULL;
        char *buf = NULL;
        size_t n = 0, len = 0;

        CHECK_INT(proc_read_stat(PROC_ROOT, 999, &st), -ESRCH);
        CHECK_INT(proc_read_status(PROC_ROOT, 999, &status), -ESRCH);
        CHECK_INT(proc_read_task_stat(PROC_ROOT, 263, 265, &st), -ESRCH);
        CHECK_INT(proc_list_tasks(PROC_ROOT, 999, &tids, &n), -ESRCH);
        CHECK_INT(proc_read_numa_maps(PROC_ROOT, 999, &buf, &len), -ESRCH);
        CHECK_INT(proc_read_stat(PROC_ROOT, 0, &st), -EINVAL);
        CHECK_INT(proc_read_stat(PROC_ROOT, -1, &st), -EINVAL);
        CHECK_INT(proc_read_task_stat(PROC_ROOT, 263, 0, &st), -EINVAL);
        CHECK_INT(proc_read_status(PROC_ROOT, 0, &status), -EINVAL);
        CHECK_INT(proc_list_tasks(PROC_ROOT, 0, &tids, &n), -EINVAL);
        CHECK_INT(proc_read_numa_maps(PROC_ROOT, 0, &buf, &len), -EINVAL);
        CHECK_INT(st.pid, 4242);
}

/* statm: its second field, and nothing from a line that is not one. */
TEST(statm_resident) {
        static const char *bad[] = { "", "12", "12 x 3", "12 34x 1", "12 99 1 1 0 1 0\n" /* resident > size */,
                                     "-1 2 3", "99999999999999999999999 1 1 1 0 1 0\n" };
        uint64_t pages = 7;

        CHECK_INT(proc_statm_parse("5765 3131 1045 1 0 1245 0\n", 27, &pages), 0);
        CHECK_INT(pages, 3131);
        for (size_t i = 0; i < sizeof(bad) / sizeof(*bad); i++) {
                pages = 7;
                CHECK_INT(proc_statm_parse(bad[i], strlen(bad[i]), &pages), -EINVAL);
                CHECK_INT(pages, 7);
        }
        CHECK_INT(proc_read_statm_resident("/proc", getpid(), &pages), 0);
        CHECK(pages > 0);
        CHECK_INT(proc_read_statm_resident("/proc", 0, &pages), -EINVAL);
}

/* The live /proc: ourselves. */
TEST(readers_live_proc_self) {
        struct proc_status status;
        struct proc_stat st;
        pid_t me = getpid(), *tids = NULL;
        size_t n = 0;

        CHECK_INT(proc_read_stat("/proc", me, &st), 0);
        CHECK_INT(st.pid, me);
        CHECK_INT(proc_read_status("/proc", me, &status), 0);
        CHECK_INT(status.tgid, me);
        CHECK(status.has_cpus_allowed);
        CHECK_INT(proc_list_tasks("/proc", me, &tids, &n), 0);
        CHECK_INT(n, 1);
        free(tids);
}

DEFINE_TEST_MAIN()
