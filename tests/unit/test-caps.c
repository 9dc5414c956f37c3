/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The capabilities check (daemon/caps.h): each one missing is named, in status too,
 * and none is fatal. Run in children whose effective sets are cut, so that the test
 * sees what the daemon sees under a smaller bounding set. */
#include <linux/capability.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>
#include "caps.h"
#include "config.h"
#include "log.h"
#include "test.h"

/* The calling process's effective set becomes effective & keep. */
static int keep_only(uint64_t keep) {
        struct __user_cap_header_struct h = { .version = _LINUX_CAPABILITY_VERSION_3, .pid = 0 };
        struct __user_cap_data_struct d[_LINUX_CAPABILITY_U32S_3] = {};

        if (syscall(SYS_capget, &h, d) < 0)
                return -errno;
        d[0].effective &= (uint32_t) keep;
        d[1].effective &= (uint32_t) (keep >> 32);
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
        CHECK_INT(check_with(0, missing, sizeof(missing)), 4);
        CHECK_STR(missing, "CAP_SYS_PTRACE CAP_BPF CAP_PERFMON CAP_SYS_ADMIN");
}

/* CAP_SYS_NICE is not asked for: the unit does not grant it, and nothing needs it. */
TEST(sys_nice_not_needed) {
        char missing[256];

        if (geteuid() != 0)
                TEST_SKIP("not root: the test's own effective set is not the daemon's");
        CHECK_INT(check_with(~BIT(CAP_SYS_NICE), missing, sizeof(missing)), 0);
        CHECK_STR(missing, "");
}

TEST(nothing_before_the_check) {
        CHECK_STR(caps_missing(), "");
}

DEFINE_TEST_MAIN()
