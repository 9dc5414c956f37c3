/* SPDX-License-Identifier: GPL-2.0-or-later */
/* What the running kernel must have (daemon/kernel-requirements.h), asked of this
 * machine's kernel, and the cgroup root: a named tree that is no cgroup2 is said, not
 * refused; the default root must be cgroup2, or have the unified hierarchy below it.
 * As root, the three layouts a host can have (unified, hybrid, v1 only) are made in a
 * mount namespace of a child's own, over /sys/fs/cgroup, whatever this host has. */
#include <linux/magic.h>
#include <sched.h>
#include <stdlib.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/utsname.h>
#include <sys/wait.h>
#include <unistd.h>
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
        CHECK_INT(kernel_requirements_cgroup_root(&cfg, false), 0);
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
        r = kernel_requirements_cgroup_root(&cfg, false);
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

/* The log lines since the last clear: what the operator reads at start. */
static char logged[4096];

static void capture(int level, int error, const struct log_fields *fields, const char *msg) {
        size_t n = strlen(logged);

        snprintf(logged + n, sizeof(logged) - n, "<%d>%s\n", level, msg);
}

/* A named tree that is no cgroup2: said once at start (say_once), quiet on a reload. */
TEST(a_named_tree_is_said_once) {
        struct nb_config cfg;
        char dir[] = "/tmp/test-kernel-requirements-XXXXXX", expect[512];

        config_defaults(&cfg);
        CHECK(mkdtemp(dir) != NULL);
        free(cfg.cgroup_root);
        cfg.cgroup_root = strdup(dir);
        log_set_sink(capture);
        log_set_max_level(LOG_LVL_DEBUG);
        logged[0] = 0;
        CHECK_INT(kernel_requirements_cgroup_root(&cfg, true), 0);
        snprintf(expect, sizeof(expect), "<4>[select] cgroup_root = %s is not a cgroup2 file system: nothing there is "
                 "a cgroup the kernel knows, and no process in it will be balanced\n", dir);
        CHECK_STR(logged, expect);
        logged[0] = 0;
        CHECK_INT(kernel_requirements_cgroup_root(&cfg, false), 0);
        CHECK_STR(logged, "");
        /* One that is not there at all: the same (the operator's word). */
        logged[0] = 0;
        free(cfg.cgroup_root);
        cfg.cgroup_root = strdup("/nonexistent/cgroup");
        CHECK_INT(kernel_requirements_cgroup_root(&cfg, false), 0);
        CHECK_STR(cfg.cgroup_root, "/nonexistent/cgroup");
        log_set_sink(NULL);
        log_set_max_level(LOG_LVL_INFO);
        config_done(&cfg);
        rmdir(dir);
}

/* kernel_requirements_cgroup_root() on cfg with cgroup_root = root: its return, and *ret_root. */
static int resolve(const char *root, bool say_once, char *ret_root, size_t size) {
        struct nb_config cfg;
        int r;

        config_defaults(&cfg);
        free(cfg.cgroup_root);
        cfg.cgroup_root = strdup(root);
        r = kernel_requirements_cgroup_root(&cfg, say_once);
        snprintf(ret_root, size, "%s", cfg.cgroup_root);
        config_done(&cfg);
        return r;
}

#define UNIFIED_NOTICE "<5>/sys/fs/cgroup is the cgroup v1/hybrid layout: using the cgroup2 hierarchy at " \
        "/sys/fs/cgroup/unified; only cgroups there can be opted in (set [select] cgroup_root to it to silence this)\n"
#define V1_ERROR "<3>/sys/fs/cgroup is not a cgroup2 file system and there is none at /sys/fs/cgroup/unified (a " \
        "cgroup v1 layout): numabalanced selects cgroups in the unified hierarchy only. Boot with " \
        "systemd.unified_cgroup_hierarchy=1, or mount cgroup2 somewhere and set [select] cgroup_root to it\n"

/* The child's part: each layout mounted over the last. Returns its exit status (77:
 * no mount namespace here). */
static int layouts_child(const char *tmp) {
        char root[256], named[512];

        if (unshare(CLONE_NEWNS) < 0 || mount("none", "/", "none", MS_REC | MS_PRIVATE, NULL) < 0)
                return 77;
        log_set_sink(capture);
        log_set_max_level(LOG_LVL_DEBUG);

        /* Unified: /sys/fs/cgroup is cgroup2, kept, nothing said. */
        if (mount("cgroup2", "/sys/fs/cgroup", "cgroup2", 0, NULL) < 0)
                return 77;
        logged[0] = 0;
        CHECK_INT(resolve("/sys/fs/cgroup", true, root, sizeof(root)), 0);
        CHECK_STR(root, "/sys/fs/cgroup");
        CHECK_STR(logged, "");

        /* Hybrid: a tmpfs of v1 controllers, the unified hierarchy below: that one, said
         * once at start; a reload (quiet) comes to the same; the resolved root itself is
         * cgroup2 and stays. */
        if (mount("tmpfs", "/sys/fs/cgroup", "tmpfs", 0, "mode=0755") < 0 || mkdir("/sys/fs/cgroup/unified", 0755) < 0 ||
            mount("cgroup2", "/sys/fs/cgroup/unified", "cgroup2", 0, NULL) < 0) {
                TEST_FAIL("the hybrid layout: %m");
                return 1;
        }
        logged[0] = 0;
        CHECK_INT(resolve("/sys/fs/cgroup", true, root, sizeof(root)), 0);
        CHECK_STR(root, "/sys/fs/cgroup/unified");
        CHECK_STR(logged, UNIFIED_NOTICE);
        logged[0] = 0;
        CHECK_INT(resolve("/sys/fs/cgroup", false, root, sizeof(root)), 0);
        CHECK_STR(root, "/sys/fs/cgroup/unified");
        CHECK_INT(resolve("/sys/fs/cgroup/unified", true, root, sizeof(root)), 0);
        CHECK_STR(root, "/sys/fs/cgroup/unified");
        CHECK_STR(logged, "");

        /* A cgroup2 the operator mounted elsewhere and named: used as it is. */
        snprintf(named, sizeof(named), "%s/cg2", tmp);
        if (mkdir(named, 0755) < 0 || mount("cgroup2", named, "cgroup2", 0, NULL) < 0) {
                TEST_FAIL("cgroup2 on %s: %m", named);
                return 1;
        }
        CHECK_INT(resolve(named, true, root, sizeof(root)), 0);
        CHECK_STR(root, named);
        CHECK_STR(logged, "");
        umount(named);

        /* v1 only: no cgroup2 anywhere under /sys/fs/cgroup: refused, start or reload,
         * saying what to do; the root left as it was. */
        if (mount("tmpfs", "/sys/fs/cgroup", "tmpfs", 0, "mode=0755") < 0) {
                TEST_FAIL("the v1 layout: %m");
                return 1;
        }
        CHECK_INT(resolve("/sys/fs/cgroup", true, root, sizeof(root)), -EMEDIUMTYPE);
        CHECK_STR(root, "/sys/fs/cgroup");
        CHECK_STR(logged, V1_ERROR);
        logged[0] = 0;
        CHECK_INT(resolve("/sys/fs/cgroup", false, root, sizeof(root)), -EMEDIUMTYPE);
        CHECK_STR(logged, V1_ERROR);
        log_set_sink(NULL);
        return test_failures ? 1 : 0;
}

TEST(the_default_root_in_each_layout) {
        char tmp[] = "/tmp/test-kernel-requirements-XXXXXX", cg2[sizeof(tmp) + 8];
        int status = 0;
        pid_t pid;

        if (geteuid() != 0)
                TEST_SKIP("not root: no mount namespace to make the layouts in");
        if (!mkdtemp(tmp)) {
                TEST_FAIL("mkdtemp: %m");
                return;
        }
        fflush(stdout);
        fflush(stderr);
        pid = fork();
        if (pid == 0)
                _exit(layouts_child(tmp));
        CHECK(pid > 0 && waitpid(pid, &status, 0) == pid && WIFEXITED(status));
        snprintf(cg2, sizeof(cg2), "%s/cg2", tmp);
        rmdir(cg2);
        rmdir(tmp);
        if (WIFEXITED(status) && WEXITSTATUS(status) == 77)
                TEST_SKIP("no mount namespace or cgroup2 mount here");
        CHECK_INT(WEXITSTATUS(status), 0);
}

DEFINE_TEST_MAIN()
