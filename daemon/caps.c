// SPDX-License-Identifier: GPL-2.0-or-later
#include <errno.h>
#include <stdbool.h>
#include <linux/capability.h>
#include <stdio.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>
#include "caps.h"
#include "log.h"

/* capget(2) directly: no libcap for six bits. */
static int effective(uint64_t *ret) {
        struct __user_cap_header_struct h = { .version = _LINUX_CAPABILITY_VERSION_3, .pid = 0 };
        struct __user_cap_data_struct d[_LINUX_CAPABILITY_U32S_3] = {};

        if (syscall(SYS_capget, &h, d) < 0)
                return -errno;
        *ret = (uint64_t) d[0].effective | (uint64_t) d[1].effective << 32;
        return 0;
}

static const struct {
        int cap;
        const char *name;
        const char *without;   /* what the daemon cannot do without it */
} needed[] = {
        { CAP_SYS_PTRACE, "CAP_SYS_PTRACE",
          "processes of other users and non-dumpable ones cannot be read or moved (ptrace access check): "
          "they are listed as unreadable and left alone" },
        { CAP_BPF, "CAP_BPF",
          "no BPF: thread placement is sampled from /proc and page-level sampling is off" },
        { CAP_PERFMON, "CAP_PERFMON",
          "no BPF tracing or perf events: thread placement is sampled from /proc and page-level sampling is off" },
        { CAP_SYS_ADMIN, "CAP_SYS_ADMIN",
          "trusted.numabalanced xattrs cannot be read (the kernel hides trusted.* without it): cgroups opted in "
          "that way are not seen; user.numabalanced and [select] cgroups still work; page frames cannot be read: "
          "no shared memory of a group is moved" },
        { CAP_SYS_NICE, "CAP_SYS_NICE",
          "threads of other users' processes cannot be placed (sched_setaffinity): place mode leaves them where "
          "they run, each such process retried after a back-off (explain: not-permitted); no shared memory of a "
          "group is moved (MPOL_MF_MOVE_ALL)" },
        { CAP_DAC_READ_SEARCH, "CAP_DAC_READ_SEARCH",
          "other users' /proc/PID/pagemap cannot be opened (mode 0400): no shared memory of a group of another "
          "user's processes is moved" },
};

static char missing[128];

const char *caps_missing(void) { return missing; }

int caps_check(const struct nb_config *cfg) {
        uint64_t eff = 0;
        unsigned n = 0;
        int r = effective(&eff);

        missing[0] = 0;
        if (r < 0)
                return log_warning_errno(r, "Cannot read this process's capabilities (capget): %m");
        for (size_t i = 0; i < sizeof(needed) / sizeof(needed[0]); i++) {
                const char *without = needed[i].without;

                bool lost = true;   /* something does not work without it (else: notice) */

                if (eff >> needed[i].cap & 1)
                        continue;
                /* BPF needs CAP_BPF and CAP_PERFMON, or CAP_SYS_ADMIN in their stead. */
                if ((needed[i].cap == CAP_BPF || needed[i].cap == CAP_PERFMON) && (eff >> CAP_SYS_ADMIN & 1)) {
                        without = "BPF and perf work through CAP_SYS_ADMIN while it is there (drop that one too "
                                  "and they fall back to /proc)";
                        lost = false;
                }
                log_full_errno(lost ? LOG_LVL_WARNING : LOG_LVL_NOTICE, 0, "Missing capability %s: %s",
                               needed[i].name, without);
                snprintf(missing + strlen(missing), sizeof(missing) - strlen(missing), "%s%s",
                         n ? " " : "", needed[i].name);
                n++;
        }
        if (n == 0) {
                char all[sizeof(missing)] = "";

                for (size_t i = 0; i < sizeof(needed) / sizeof(needed[0]); i++)
                        snprintf(all + strlen(all), sizeof(all) - strlen(all), "%s%s", i ? " " : "", needed[i].name);
                log_info("Capabilities: %s, all present", all);
        }
        return (int) n;
}

int caps_drop_thread(void) {
        struct __user_cap_header_struct h = { .version = _LINUX_CAPABILITY_VERSION_3, .pid = 0 };
        struct __user_cap_data_struct d[_LINUX_CAPABILITY_U32S_3] = {};
        uint64_t left = 0;
        int r;

        /* capset(2) itself, not a libc wrapper that would broadcast it to every thread:
         * on Linux each thread has its own sets, and only the calling one's change. An
         * empty permitted set cannot be regained by this thread short of an exec,
         * which no_new_privs keeps from adding any. */
        if (syscall(SYS_capset, &h, d) < 0)
                return -errno;
        if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0)
                return -errno;
        r = effective(&left);
        if (r < 0)
                return r;
        return left ? -EPERM : 0;
}
