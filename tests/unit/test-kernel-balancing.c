/* SPDX-License-Identifier: GPL-2.0-or-later */
/* daemon/kernel-balancing: kernel.numa_balancing read, set to 0 and restored, against
 * a fake /proc in a temporary directory; the messages are caught by a log sink. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "kernel-balancing.h"
#include "log.h"
#include "test.h"

static char root[64];           /* the fake proc root of the running case */
static char sysctl[128];        /* <root>/sys/kernel/numa_balancing */
static char logged[8192];       /* every message of the running case, one a line */

static void sink(int level, int error, const struct log_fields *fields, const char *msg) {
        size_t n = strlen(logged);
        snprintf(logged + n, sizeof(logged) - n, "<%d>%s\n", level, msg);
}

static bool logged_has(int level, const char *text) {
        char needle[512];
        snprintf(needle, sizeof(needle), "<%d>%s", level, text);
        return strstr(logged, needle) != NULL;
}

/* A fresh fake /proc with sys/kernel/numa_balancing holding value (NULL: no file). */
static void setup(const char *value) {
        char dir[128];

        snprintf(root, sizeof(root), "/tmp/test-kernel-balancing-XXXXXX");
        if (!mkdtemp(root)) {
                perror("mkdtemp");
                abort();
        }
        snprintf(dir, sizeof(dir), "%s/sys", root);
        mkdir(dir, 0755);
        snprintf(dir, sizeof(dir), "%s/sys/kernel", root);
        mkdir(dir, 0755);
        snprintf(sysctl, sizeof(sysctl), "%s/sys/kernel/numa_balancing", root);
        if (value) {
                FILE *f = fopen(sysctl, "w");
                if (!f) {
                        perror(sysctl);
                        abort();
                }
                fputs(value, f);
                fclose(f);
        }
        logged[0] = 0;
        log_set_sink(sink);
        log_set_max_level(LOG_LVL_DEBUG);
}

static void set_value(const char *value) {
        FILE *f = fopen(sysctl, "w");
        if (!f) {
                perror(sysctl);
                abort();
        }
        fputs(value, f);
        fclose(f);
}

/* The file's text; "(none)" when it does not exist. */
static const char *value(void) {
        static char text[64];
        FILE *f = fopen(sysctl, "r");
        size_t n;

        if (!f)
                return "(none)";
        n = fread(text, 1, sizeof(text) - 1, f);
        text[n] = 0;
        fclose(f);
        return text;
}

static void teardown(void) {
        char dir[128];

        (void) unlink(sysctl);
        snprintf(dir, sizeof(dir), "%s/sys/kernel", root);
        (void) rmdir(dir);
        snprintf(dir, sizeof(dir), "%s/sys", root);
        (void) rmdir(dir);
        (void) rmdir(root);
        log_set_sink(NULL);
}

TEST(read_value) {
        uint64_t v = 99;

        setup("3\n");
        CHECK_INT(kernel_balancing_read(root, &v), 0);
        CHECK_INT(v, 3);
        set_value("1 \n");
        CHECK_INT(kernel_balancing_read(root, &v), 0);
        CHECK_INT(v, 1);
        teardown();
}

TEST(read_missing_is_enoent) {
        uint64_t v = 99;

        setup(NULL);
        CHECK_INT(kernel_balancing_read(root, &v), -ENOENT);
        CHECK_INT(v, 99);
        teardown();
}

TEST(read_junk_is_einval) {
        uint64_t v;

        setup("on\n");
        CHECK_INT(kernel_balancing_read(root, &v), -EINVAL);
        teardown();
}

TEST(kernel_without_it) {
        struct kernel_balancing k;

        setup(NULL);
        CHECK_INT(kernel_balancing_init(&k, root), 0);
        CHECK(!k.present);
        CHECK(strstr(logged, "numa_balancing does not exist: this kernel has no NUMA balancing of its own"));
        kernel_balancing_apply(&k, KNB_DISABLE, false);
        CHECK(!k.changed);
        CHECK_STR(value(), "(none)");
        kernel_balancing_done(&k);
        CHECK(!k.path);
        teardown();
}

TEST(unreadable_is_a_warning) {
        struct kernel_balancing k;

        setup("junk\n");
        CHECK_INT(kernel_balancing_init(&k, root), 0);
        CHECK(!k.present);
        CHECK(strstr(logged, "<4>Failed to read "));
        kernel_balancing_apply(&k, KNB_DISABLE, false);
        CHECK_STR(value(), "junk\n");
        kernel_balancing_done(&k);
        teardown();
}

TEST(disable_sets_0_and_exit_restores) {
        struct kernel_balancing k;

        setup("1\n");
        CHECK_INT(kernel_balancing_init(&k, root), 0);
        CHECK(k.present);
        CHECK_INT(k.found, 1);
        kernel_balancing_apply(&k, KNB_DISABLE, false);
        CHECK_STR(value(), "0\n");
        CHECK(logged_has(LOG_LVL_NOTICE, "Set kernel.numa_balancing=0 (was 1); it is restored at exit"));
        /* A reload that keeps disable writes nothing again. */
        logged[0] = 0;
        kernel_balancing_apply(&k, KNB_DISABLE, false);
        CHECK_STR(logged, "");
        kernel_balancing_done(&k);
        CHECK_STR(value(), "1\n");
        CHECK(logged_has(LOG_LVL_NOTICE, "Restored kernel.numa_balancing=1"));
        teardown();
}

TEST(disable_dry_run_writes_nothing) {
        struct kernel_balancing k;

        setup("2\n");
        CHECK_INT(kernel_balancing_init(&k, root), 0);
        kernel_balancing_apply(&k, KNB_DISABLE, true);
        CHECK_STR(value(), "2\n");
        CHECK(!k.changed);
        CHECK(logged_has(LOG_LVL_NOTICE, "kernel.numa_balancing=2: dry run, not setting it to 0"));
        kernel_balancing_done(&k);
        CHECK_STR(value(), "2\n");
        teardown();
}

TEST(disable_when_already_off) {
        struct kernel_balancing k;

        setup("0\n");
        CHECK_INT(kernel_balancing_init(&k, root), 0);
        kernel_balancing_apply(&k, KNB_DISABLE, false);
        CHECK(!k.changed);
        /* Someone turns it on while we run: exit leaves it, it was not ours. */
        set_value("1\n");
        kernel_balancing_done(&k);
        CHECK_STR(value(), "1\n");
        CHECK(!strstr(logged, "Restored"));
        teardown();
}

TEST(changed_while_running_is_left) {
        struct kernel_balancing k;

        setup("1\n");
        CHECK_INT(kernel_balancing_init(&k, root), 0);
        kernel_balancing_apply(&k, KNB_DISABLE, false);
        set_value("2\n");
        kernel_balancing_done(&k);
        CHECK_STR(value(), "2\n");
        CHECK(logged_has(LOG_LVL_NOTICE, "kernel.numa_balancing was changed to 2 while we ran, leaving it"));
        teardown();
}

TEST(leave_warns_when_on) {
        struct kernel_balancing k;

        setup("1\n");
        CHECK_INT(kernel_balancing_init(&k, root), 0);
        kernel_balancing_apply(&k, KNB_LEAVE, false);
        CHECK_STR(value(), "1\n");
        CHECK(logged_has(LOG_LVL_WARNING, "kernel.numa_balancing=1: the kernel's own NUMA balancing is on"));
        kernel_balancing_done(&k);
        teardown();
}

TEST(leave_says_off) {
        struct kernel_balancing k;

        setup("0\n");
        CHECK_INT(kernel_balancing_init(&k, root), 0);
        kernel_balancing_apply(&k, KNB_LEAVE, false);
        CHECK(logged_has(LOG_LVL_INFO, "kernel.numa_balancing=0: the kernel's own NUMA balancing is off"));
        CHECK(!strstr(logged, "<4>"));
        kernel_balancing_done(&k);
        teardown();
}

/* A reload from disable to leave gives the value back at once, and exit then does not
 * write it a second time over what someone set since. */
TEST(reload_to_leave_restores) {
        struct kernel_balancing k;

        setup("1\n");
        CHECK_INT(kernel_balancing_init(&k, root), 0);
        kernel_balancing_apply(&k, KNB_DISABLE, false);
        CHECK_STR(value(), "0\n");
        kernel_balancing_apply(&k, KNB_LEAVE, false);
        CHECK_STR(value(), "1\n");
        CHECK(!k.changed);
        CHECK(logged_has(LOG_LVL_NOTICE, "Restored kernel.numa_balancing=1"));
        CHECK(logged_has(LOG_LVL_WARNING, "kernel.numa_balancing=1: the kernel's own NUMA balancing is on"));
        set_value("0\n");
        kernel_balancing_done(&k);
        CHECK_STR(value(), "0\n");
        teardown();
}

DEFINE_TEST_MAIN()
