/* SPDX-License-Identifier: GPL-2.0-or-later */
/* What the running kernel must have (daemon/kernel-requirements.h), asked of this
 * machine's kernel, and the cgroup root: a named tree that is no cgroup2 is said, not
 * refused; the default root must be cgroup2, or have the unified hierarchy below it. */
#include <linux/magic.h>
#include <stdlib.h>
#include <sys/statfs.h>
#include <sys/utsname.h>
#include "config.h"
#include "kernel-requirements.h"
#include "log.h"
#include "test.h"

static bool is_cgroup2(const char *path) {
        struct statfs s;

        return statfs(path, &s) == 0 && s.f_type == CGROUP2_SUPER_MAGIC;
}

/* Under valgrind 3.19 (Debian 12), which does not know pidfd_open(2) and answers
 * ENOSYS for it. */
static bool under_valgrind(void) {
        const char *p = getenv("LD_PRELOAD");
        return p && strstr(p, "vgpreload");
}

/* The test bed's kernels (5.10 and later) have pidfd_open and user.* on cgroupfs. */
TEST(this_kernel_has_what_is_needed) {
        struct utsname u;
        unsigned major = 0, minor = 0;

        if (under_valgrind())
                TEST_SKIP("valgrind answers ENOSYS for pidfd_open(2)");
        if (uname(&u) < 0 || sscanf(u.release, "%u.%u", &major, &minor) != 2)
                TEST_SKIP("cannot tell this kernel's version");
        if (major < 5 || (major == 5 && minor < 7))
                TEST_SKIP("a kernel older than 5.7");
        CHECK_INT(kernel_requirements_check(), 0);
}

TEST(a_named_tree_is_not_refused) {
        struct nb_config cfg;
        char dir[] = "/tmp/test-kernel-requirements-XXXXXX";

        config_defaults(&cfg);
        CHECK(mkdtemp(dir) != NULL);
        free(cfg.cgroup_root);
        cfg.cgroup_root = strdup(dir);
        CHECK_INT(cgroup_root_resolve(&cfg, false), 0);
        CHECK_STR(cfg.cgroup_root, dir);           /* left as it was named */
        config_done(&cfg);
        rmdir(dir);
}

/* The default root: used when cgroup2, the unified hierarchy below it on a hybrid
 * host, refused (with the reason) on a v1-only one. */
TEST(the_default_root_as_this_host_has_it) {
        struct nb_config cfg;
        int r;

        config_defaults(&cfg);
        CHECK_STR(cfg.cgroup_root, "/sys/fs/cgroup");
        r = cgroup_root_resolve(&cfg, false);
        if (is_cgroup2("/sys/fs/cgroup")) {
                CHECK_INT(r, 0);
                CHECK_STR(cfg.cgroup_root, "/sys/fs/cgroup");
        } else if (is_cgroup2("/sys/fs/cgroup/unified")) {
                CHECK_INT(r, 0);
                CHECK_STR(cfg.cgroup_root, "/sys/fs/cgroup/unified");
        } else {
                CHECK_INT(r, -EMEDIUMTYPE);
                CHECK_STR(cfg.cgroup_root, "/sys/fs/cgroup");
        }
        config_done(&cfg);
}

DEFINE_TEST_MAIN()
