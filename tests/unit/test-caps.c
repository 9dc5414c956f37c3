/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The capabilities check (daemon/caps.h): each one missing is named, in status too,
 * and none is fatal. Run in children whose effective sets are cut, so that the test
 * sees what the daemon sees under a smaller bounding set. */
#include <linux/capability.h>
#include <sched.h>
#include <fcntl.h>
#include <sys/prctl.h>
#include <signal.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>
#include "caps.h"
#include "config.h"
#include "log.h"
#include "test.h"

/* The calling process's effective set becomes permitted & keep. */
static int keep_only(uint64_t keep) {
        struct __user_cap_header_struct h = { .version = _LINUX_CAPABILITY_VERSION_3, .pid = 0 };
        struct __user_cap_data_struct d[_LINUX_CAPABILITY_U32S_3] = {};

        if (syscall(SYS_capget, &h, d) < 0)
                return -errno;
        /* From the permitted set: a later call may raise one an earlier one lowered. */
        d[0].effective = d[0].permitted & (uint32_t) keep;
        d[1].effective = d[1].permitted & (uint32_t) (keep >> 32);
        return syscall(SYS_capset, &h, d) < 0 ? -errno : 0;
}

/* caps_check() in a child with effective set cut to keep: its return and what status
 * would say, through a pipe. */
static int check_with(uint64_t keep, char *missing, size_t size) {
        struct nb_config cfg;
        int p[2], status;
        pid_t pid;
        ssize_t n;

        config_defaults(&cfg);
        if (pipe(p) < 0)
                return -errno;
        pid = fork();
        if (pid == 0) {
                int r;

                close(p[0]);
                log_set_max_level(LOG_LVL_ERR);
                r = keep_only(keep) < 0 ? 100 : caps_check(&cfg);
                config_done(&cfg);
                if (write(p[1], caps_missing(), strlen(caps_missing())) < 0)
                        _exit(101);
                _exit(r < 0 ? 102 : r);
        }
        close(p[1]);
        n = read(p[0], missing, size - 1);
        missing[n > 0 ? n : 0] = 0;
        close(p[0]);
        config_done(&cfg);
        if (waitpid(pid, &status, 0) < 0 || !WIFEXITED(status))
                return -ECHILD;
        return WEXITSTATUS(status);
}

#define BIT(c) (UINT64_C(1) << (c))

TEST(all_present_or_each_named) {
        char missing[256];

        if (geteuid() != 0)
                TEST_SKIP("not root: the test's own effective set is not the daemon's");
        CHECK_INT(check_with(~UINT64_C(0), missing, sizeof(missing)), 0);
        CHECK_STR(missing, "");
        CHECK_INT(check_with(~BIT(CAP_SYS_ADMIN), missing, sizeof(missing)), 1);
        CHECK_STR(missing, "CAP_SYS_ADMIN");
        CHECK_INT(check_with(~(BIT(CAP_SYS_PTRACE) | BIT(CAP_BPF)), missing, sizeof(missing)), 2);
        CHECK_STR(missing, "CAP_SYS_PTRACE CAP_BPF");
        CHECK_INT(check_with(0, missing, sizeof(missing)), 6);
        CHECK_STR(missing, "CAP_SYS_PTRACE CAP_BPF CAP_PERFMON CAP_SYS_ADMIN CAP_SYS_NICE CAP_DAC_READ_SEARCH");
}

TEST(nothing_before_the_check) {
        CHECK_STR(caps_missing(), "");
}

/* The log lines of one check, for the child to send. */
static char said[2048];

static void capture(int level, int error, const struct log_fields *fields, const char *msg) {
        size_t n = strlen(said);

        snprintf(said + n, sizeof(said) - n, "<%d>%s\n", level, msg);
}

/* What caps_check() logs (level and text) in a child whose effective set is cut to keep. */
static int said_with(uint64_t keep, char *out, size_t size) {
        struct nb_config cfg;
        int p[2], status;
        size_t got = 0;
        ssize_t n;
        pid_t pid;

        config_defaults(&cfg);
        if (pipe(p) < 0)
                return -errno;
        pid = fork();
        if (pid == 0) {
                close(p[0]);
                log_set_max_level(LOG_LVL_DEBUG);
                log_set_sink(capture);
                said[0] = 0;
                if (keep_only(keep) < 0)
                        _exit(100);
                (void) caps_check(&cfg);
                config_done(&cfg);
                _exit(write(p[1], said, strlen(said)) < 0 ? 101 : 0);
        }
        close(p[1]);
        while (got < size - 1 && (n = read(p[0], out + got, size - 1 - got)) > 0)
                got += (size_t) n;
        out[got] = 0;
        close(p[0]);
        config_done(&cfg);
        if (waitpid(pid, &status, 0) < 0 || !WIFEXITED(status))
                return -ECHILD;
        return WEXITSTATUS(status);
}

/* Each missing one in a line of its own, with what the daemon cannot do without it;
 * CAP_BPF and CAP_PERFMON missing while CAP_SYS_ADMIN is there lose nothing (BPF works
 * through CAP_SYS_ADMIN): a notice, not a warning. */
TEST(what_the_operator_reads) {
        char out[2048];

        if (geteuid() != 0)
                TEST_SKIP("not root: the test's own effective set is not the daemon's");
        CHECK_INT(said_with(~UINT64_C(0), out, sizeof(out)), 0);
        CHECK_STR(out, "<6>Capabilities: CAP_SYS_PTRACE CAP_BPF CAP_PERFMON CAP_SYS_ADMIN CAP_SYS_NICE CAP_DAC_READ_SEARCH, "
                       "all present\n");
        CHECK_INT(said_with(~BIT(CAP_BPF), out, sizeof(out)), 0);
        CHECK_STR(out, "<5>Missing capability CAP_BPF: BPF and perf work through CAP_SYS_ADMIN while it is there "
                       "(drop that one too and they fall back to /proc)\n");
        CHECK_INT(said_with(~(BIT(CAP_PERFMON) | BIT(CAP_SYS_ADMIN)), out, sizeof(out)), 0);
        CHECK_STR(out, "<4>Missing capability CAP_PERFMON: no BPF tracing or perf events: thread placement is "
                       "sampled from /proc and page-level sampling is off\n"
                       "<4>Missing capability CAP_SYS_ADMIN: trusted.numabalanced xattrs cannot be read (the kernel "
                       "hides trusted.* without it): cgroups opted in that way are not seen; user.numabalanced and "
                       "[select] cgroups still work; page frames cannot be read: no shared memory of a group is "
                       "moved\n");
        CHECK_INT(said_with(~BIT(CAP_SYS_PTRACE), out, sizeof(out)), 0);
        CHECK_STR(out, "<4>Missing capability CAP_SYS_PTRACE: processes of other users and non-dumpable ones cannot "
                       "be read or moved (ptrace access check): they are listed as unreadable and left alone\n");
}

/* The test's own effective set, whoever runs it (an unprivileged user has none of
 * them): the check counts and names exactly those /proc/self/status says are off. */
TEST(as_proc_status_says) {
        static const struct { int cap; const char *name; } four[] = {
                { CAP_SYS_PTRACE, "CAP_SYS_PTRACE" }, { CAP_BPF, "CAP_BPF" },
                { CAP_PERFMON, "CAP_PERFMON" }, { CAP_SYS_ADMIN, "CAP_SYS_ADMIN" },
                { CAP_SYS_NICE, "CAP_SYS_NICE" }, { CAP_DAC_READ_SEARCH, "CAP_DAC_READ_SEARCH" },
        };
        char line[256], expect[128] = "";
        unsigned long long eff = 0;
        bool found = false;
        struct nb_config cfg;
        int n = 0;
        FILE *f = fopen("/proc/self/status", "r");

        if (!f)
                TEST_SKIP("no /proc/self/status");
        while (fgets(line, sizeof(line), f))
                if (sscanf(line, "CapEff: %llx", &eff) == 1)
                        found = true;
        fclose(f);
        CHECK(found);
        for (size_t i = 0; i < sizeof(four) / sizeof(four[0]); i++)
                if (!(eff >> four[i].cap & 1)) {
                        snprintf(expect + strlen(expect), sizeof(expect) - strlen(expect), "%s%s", n ? " " : "",
                                 four[i].name);
                        n++;
                }
        config_defaults(&cfg);
        log_set_max_level(LOG_LVL_ERR);
        CHECK_INT(caps_check(&cfg), n);
        CHECK_STR(caps_missing(), expect);
        config_done(&cfg);
}

/* A process of uid 65534 that waits to be killed, dumpable as after an exec (its /proc
 * files are then its owner's: a changed uid alone makes them root's). Its pid once it
 * runs as that user, or -1. */
static pid_t start_tenant(void) {
        int p[2];
        char go = 0;
        pid_t tenant;

        if (pipe(p) < 0)
                return -1;
        tenant = fork();
        if (tenant == 0) {
                close(p[0]);
                if (setresgid(65534, 65534, 65534) < 0 || setresuid(65534, 65534, 65534) < 0 ||
                    prctl(PR_SET_DUMPABLE, 1) < 0)
                        _exit(1);
                if (write(p[1], "x", 1) != 1)
                        _exit(2);
                pause();
                _exit(0);
        }
        close(p[1]);
        if (tenant > 0 && read(p[0], &go, 1) != 1) {
                kill(tenant, SIGKILL);
                waitpid(tenant, NULL, 0);
                tenant = -1;
        }
        close(p[0]);
        return tenant;
}

/* What the daemon really needs CAP_SYS_NICE for, checked on the kernel itself: the
 * affinity of a thread of another user's process cannot be changed without it (a
 * tenant in place mode who is not root), and can with it. */
TEST(sys_nice_places_other_users_threads) {
        cpu_set_t set;
        int status;
        pid_t tenant, daemon;

        if (geteuid() != 0)
                TEST_SKIP("not root: cannot start a process of another user");
        CHECK(sched_getaffinity(0, sizeof(set), &set) == 0);
        tenant = start_tenant();
        CHECK(tenant > 0);
        if (tenant <= 0)
                return;
        daemon = fork();
        if (daemon == 0) {
                /* With every capability the tenant's thread takes the mask it has;
                 * without CAP_SYS_NICE the kernel refuses the same call. */
                if (sched_setaffinity(tenant, sizeof(set), &set) < 0)
                        _exit(10);
                if (keep_only(~BIT(CAP_SYS_NICE)) < 0)
                        _exit(11);
                if (sched_setaffinity(tenant, sizeof(set), &set) == 0 || errno != EPERM)
                        _exit(12);
                _exit(0);
        }
        CHECK(waitpid(daemon, &status, 0) == daemon);
        CHECK(WIFEXITED(status));
        CHECK_INT(WEXITSTATUS(status), 0);
        kill(tenant, SIGKILL);
        waitpid(tenant, NULL, 0);
}

/* What the daemon really needs CAP_DAC_READ_SEARCH for, on the kernel itself: the
 * unit's other capabilities (CAP_SYS_PTRACE among them) do not open another user's
 * /proc/PID/pagemap (mode 0400), which the check before moving shared memory reads;
 * with it they do, page frame numbers and all (CAP_SYS_ADMIN). */
TEST(dac_read_search_opens_other_users_pagemap) {
        const uint64_t unit = BIT(CAP_SYS_PTRACE) | BIT(CAP_BPF) | BIT(CAP_PERFMON) | BIT(CAP_SYS_ADMIN) |
                              BIT(CAP_SYS_NICE);
        char path[64];
        int status;
        pid_t tenant, daemon;

        if (geteuid() != 0)
                TEST_SKIP("not root: cannot start a process of another user");
        tenant = start_tenant();
        CHECK(tenant > 0);
        if (tenant <= 0)
                return;
        snprintf(path, sizeof(path), "/proc/%d/pagemap", (int) tenant);
        daemon = fork();
        if (daemon == 0) {
                int fd;

                if (keep_only(unit) < 0)
                        _exit(11);
                fd = open(path, O_RDONLY | O_CLOEXEC);
                if (fd >= 0 || errno != EACCES)
                        _exit(12);
                if (keep_only(unit | BIT(CAP_DAC_READ_SEARCH)) < 0)
                        _exit(13);
                fd = open(path, O_RDONLY | O_CLOEXEC);
                _exit(fd >= 0 ? 0 : 14);
        }
        CHECK(waitpid(daemon, &status, 0) == daemon);
        CHECK(WIFEXITED(status));
        CHECK_INT(WEXITSTATUS(status), 0);
        kill(tenant, SIGKILL);
        waitpid(tenant, NULL, 0);
}

/* Without CAP_SYS_NICE, the check names it with what place mode loses. */
TEST(sys_nice_missing_is_named) {
        char missing[256], out[2048];

        if (geteuid() != 0)
                TEST_SKIP("not root: the test's own effective set is not the daemon's");
        CHECK_INT(check_with(~BIT(CAP_SYS_NICE), missing, sizeof(missing)), 1);
        CHECK_STR(missing, "CAP_SYS_NICE");
        CHECK_INT(said_with(~BIT(CAP_SYS_NICE), out, sizeof(out)), 0);
        CHECK_STR(out, "<4>Missing capability CAP_SYS_NICE: threads of other users' processes cannot be placed "
                       "(sched_setaffinity): place mode leaves them where they run, each such process retried "
                       "after a back-off (explain: not-permitted); no shared memory of a group is moved "
                       "(MPOL_MF_MOVE_ALL)\n");
}

DEFINE_TEST_MAIN()
