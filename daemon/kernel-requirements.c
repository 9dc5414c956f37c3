/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <errno.h>
#include <linux/magic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/statfs.h>
#include <sys/syscall.h>
#include <sys/utsname.h>
#include <sys/xattr.h>
#include <unistd.h>
#include "kernel-requirements.h"
#include "log.h"

#ifndef CGROUP2_SUPER_MAGIC
#define CGROUP2_SUPER_MAGIC 0x63677270
#endif

#define DEFAULT_CGROUP_ROOT "/sys/fs/cgroup"
#define UNIFIED_CGROUP_ROOT "/sys/fs/cgroup/unified"

static const char *release(void) {
        static struct utsname u;

        return uname(&u) == 0 ? u.release : "unknown";
}

int kernel_requirements_check(void) {
        long fd = syscall(SYS_pidfd_open, getpid(), 0);

        if (fd < 0 && errno == ENOSYS)
                return log_error_errno(-ENOSYS, "This kernel (%s) has no pidfd_open(2), which came with Linux 5.3: "
                                       "numabalanced checks every move against the process it was planned for "
                                       "through a pidfd, and will not run without one", release());
        if (fd >= 0)
                close((int) fd);
        return 0;
}

static bool is_cgroup2(const char *path) {
        struct statfs s;

        return statfs(path, &s) == 0 && s.f_type == CGROUP2_SUPER_MAGIC;
}

/* user.* on cgroupfs: absent, the kernel says EOPNOTSUPP; present, ENODATA (or a value). */
static int check_user_xattrs(const char *root) {
        char v[1];

        if (getxattr(root, "user.numabalanced", v, sizeof(v)) < 0 && errno == EOPNOTSUPP)
                return log_error_errno(-EOPNOTSUPP, "The cgroup file system of this kernel (%s) has no user.* extended "
                                       "attributes, which came with Linux 5.7: a delegated user could not opt a "
                                       "cgroup in or out. numabalanced needs Linux 5.7 or later", release());
        return 0;
}

/* The default root on a host in the v1 or hybrid layout: the unified hierarchy, if any. */
static int resolve_default(struct nb_config *cfg, bool say_once) {
        char *unified;

        if (!is_cgroup2(UNIFIED_CGROUP_ROOT))
                return log_error_errno(-EMEDIUMTYPE,
                                       "%s is not a cgroup2 file system and there is none at %s (a cgroup v1 layout): "
                                       "numabalanced selects cgroups in the unified hierarchy only. Boot with "
                                       "systemd.unified_cgroup_hierarchy=1, or mount cgroup2 somewhere and set "
                                       "[select] cgroup_root to it", DEFAULT_CGROUP_ROOT, UNIFIED_CGROUP_ROOT);
        unified = strdup(UNIFIED_CGROUP_ROOT);
        if (!unified)
                return log_error_errno(-ENOMEM, "Out of memory");
        if (say_once)
                log_notice("%s is the cgroup v1/hybrid layout: using the cgroup2 hierarchy at %s; only cgroups there "
                           "can be opted in (set [select] cgroup_root to it to silence this)",
                           DEFAULT_CGROUP_ROOT, UNIFIED_CGROUP_ROOT);
        free(cfg->cgroup_root);
        cfg->cgroup_root = unified;
        return 0;
}

int kernel_requirements_cgroup_root(struct nb_config *cfg, bool say_once) {
        int r;

        if (is_cgroup2(cfg->cgroup_root))
                return check_user_xattrs(cfg->cgroup_root);
        if (strcmp(cfg->cgroup_root, DEFAULT_CGROUP_ROOT) == 0) {
                r = resolve_default(cfg, say_once);
                return r < 0 ? r : check_user_xattrs(cfg->cgroup_root);
        }
        /* A root the operator named (or a test's tree of directories): said, not refused. */
        if (say_once)
                log_warning("[select] cgroup_root = %s is not a cgroup2 file system: nothing there is a cgroup the "
                            "kernel knows, and no process in it will be balanced", cfg->cgroup_root);
        return 0;
}
