/* SPDX-License-Identifier: GPL-2.0-or-later */
/* daemon/kernel-balancing: kernel.numa_balancing read, set to 0 and restored, against
 * a fake /proc in a temporary directory, with the operator's value saved in a state
 * directory there (a daemon killed before its exit is one that never calls
 * kernel_balancing_done()); the messages are caught by a log sink. */
#include <errno.h>
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "kernel-balancing.h"
#include "log.h"
#include "test.h"
#include "tmptree.h"

static char root[64];           /* the fake proc root of the running case */
static char sysctl[128];        /* <root>/sys/kernel/numa_balancing */
static char state[128];         /* <root>/state: the state directory (made by the daemon) */
static char saved[160];         /* <state>/kernel.numa_balancing */
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
        snprintf(state, sizeof(state), "%s/state", root);
        snprintf(saved, sizeof(saved), "%s/%s", state, KERNEL_BALANCING_STATE_FILE);
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

/* The text of the saved value; "(none)" when there is no such file. */
static const char *saved_value(void) {
        static char text[64];
        FILE *f = fopen(saved, "r");
        size_t n;

        if (!f)
                return "(none)";
        n = fread(text, 1, sizeof(text) - 1, f);
        text[n] = 0;
        fclose(f);
        return text;
}

static void write_saved(const char *text) {
        mkdir(state, 0755);
        tmptree_write(saved, text);
}

/* Files left in the state directory besides the saved value (a temporary file). */
static int n_state_files(void) {
        char cmd[256];
        FILE *p;
        int n = 0;

        snprintf(cmd, sizeof(cmd), "ls -A %s 2>/dev/null", state);
        p = popen(cmd, "r");
        if (!p)
                return -1;
        for (int c; (c = fgetc(p)) != EOF;)
                n += c == '\n';
        pclose(p);
        return n;
}

/* A daemon killed before its exit: its memory and its lock go with it, nothing is
 * restored. */
static void killed(struct kernel_balancing *k) {
        if (k->lock_fd >= 0)
                close(k->lock_fd);
        free(k->path);
        free(k->state_dir);
        free(k->state_path);
        *k = (struct kernel_balancing) {};
}

static void teardown(void) {
        (void) chmod(state, 0755);
        tmptree_remove(root);
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

/* The tick's look: bit 0 is the kernel's balancing (bit 1, tiering only, is not); a
 * change is said once, at info; none or junk is -1, off. */
TEST(watch_says_each_change_once) {
        int64_t v = 0;
        bool on = false;

        setup("2\n");
        kernel_balancing_watch(root, &v, &on);
        CHECK(v == 2 && !on && logged[0] == 0);
        set_value("3\n");
        kernel_balancing_watch(root, &v, &on);
        CHECK(v == 3 && on);
        CHECK(logged_has(LOG_LVL_INFO, "kernel.numa_balancing is on: memory whose policy has the balancing flag "
                                       "(MPOL_F_NUMA_BALANCING) is left to the kernel"));
        logged[0] = 0;
        set_value("1\n");
        kernel_balancing_watch(root, &v, &on);
        CHECK(v == 1 && on && logged[0] == 0);
        set_value("junk\n");
        kernel_balancing_watch(root, &v, &on);
        CHECK(v == -1 && !on);
        CHECK(logged_has(LOG_LVL_INFO, "kernel.numa_balancing is off: memory whose policy has the balancing flag "
                                       "(MPOL_F_NUMA_BALANCING) is balanced by numabalanced within its policy"));
        unlink(sysctl);
        kernel_balancing_watch(root, &v, &on);
        CHECK(v == -1 && !on);
        teardown();
}

TEST(kernel_without_it) {
        struct kernel_balancing k;

        setup(NULL);
        CHECK_INT(kernel_balancing_init(&k, root, state), 0);
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
        CHECK_INT(kernel_balancing_init(&k, root, state), 0);
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
        CHECK_INT(kernel_balancing_init(&k, root, state), 0);
        CHECK(k.present);
        CHECK_INT(k.found, 1);
        kernel_balancing_apply(&k, KNB_DISABLE, false);
        CHECK_STR(value(), "0\n");
        CHECK(logged_has(LOG_LVL_NOTICE, "Set kernel.numa_balancing=0 (was 1); it is restored at exit"));
        /* The operator's value is saved (the state directory made for it), and no
         * temporary file is left beside it. */
        CHECK_STR(saved_value(), "1\n");
        CHECK_INT(n_state_files(), 1);
        /* A reload that keeps disable writes nothing again. */
        logged[0] = 0;
        kernel_balancing_apply(&k, KNB_DISABLE, false);
        CHECK_STR(logged, "");
        kernel_balancing_done(&k);
        CHECK_STR(value(), "1\n");
        CHECK(logged_has(LOG_LVL_NOTICE, "Restored kernel.numa_balancing=1"));
        /* Restored: nothing is kept for a next start. */
        CHECK_STR(saved_value(), "(none)");
        CHECK_INT(n_state_files(), 0);
        teardown();
}

TEST(disable_dry_run_writes_nothing) {
        struct kernel_balancing k;

        setup("2\n");
        CHECK_INT(kernel_balancing_init(&k, root, state), 0);
        kernel_balancing_apply(&k, KNB_DISABLE, true);
        CHECK_STR(value(), "2\n");
        CHECK_STR(saved_value(), "(none)");
        CHECK(!k.changed);
        CHECK(logged_has(LOG_LVL_NOTICE, "kernel.numa_balancing=2: dry run, not setting it to 0"));
        kernel_balancing_done(&k);
        CHECK_STR(value(), "2\n");
        teardown();
}

TEST(disable_when_already_off) {
        struct kernel_balancing k;

        setup("0\n");
        CHECK_INT(kernel_balancing_init(&k, root, state), 0);
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
        CHECK_INT(kernel_balancing_init(&k, root, state), 0);
        kernel_balancing_apply(&k, KNB_DISABLE, false);
        set_value("2\n");
        kernel_balancing_done(&k);
        CHECK_STR(value(), "2\n");
        CHECK(logged_has(LOG_LVL_NOTICE, "kernel.numa_balancing was changed to 2 while we ran, leaving it"));
        /* 2 is the operator's now: a next start must not restore the old 1. */
        CHECK_STR(saved_value(), "(none)");
        teardown();
}

TEST(leave_warns_when_on) {
        struct kernel_balancing k;

        setup("1\n");
        CHECK_INT(kernel_balancing_init(&k, root, state), 0);
        kernel_balancing_apply(&k, KNB_LEAVE, false);
        CHECK_STR(value(), "1\n");
        CHECK(logged_has(LOG_LVL_WARNING, "kernel.numa_balancing=1: the kernel's own NUMA balancing is on"));
        kernel_balancing_done(&k);
        teardown();
}

TEST(leave_says_off) {
        struct kernel_balancing k;

        setup("0\n");
        CHECK_INT(kernel_balancing_init(&k, root, state), 0);
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
        CHECK_INT(kernel_balancing_init(&k, root, state), 0);
        kernel_balancing_apply(&k, KNB_DISABLE, false);
        CHECK_STR(value(), "0\n");
        kernel_balancing_apply(&k, KNB_LEAVE, false);
        CHECK_STR(value(), "1\n");
        CHECK(!k.changed);
        CHECK_STR(saved_value(), "(none)");
        CHECK(logged_has(LOG_LVL_NOTICE, "Restored kernel.numa_balancing=1"));
        CHECK(logged_has(LOG_LVL_WARNING, "kernel.numa_balancing=1: the kernel's own NUMA balancing is on"));
        set_value("0\n");
        kernel_balancing_done(&k);
        CHECK_STR(value(), "0\n");
        teardown();
}

/* The daemon is killed (SIGKILL, the watchdog) while it holds the sysctl at 0: the
 * next start takes the saved value as the operator's, not the 0 it finds, and its
 * exit restores it. Before the saved value, the 0 was taken as the operator's and
 * kept for good. */
TEST(killed_then_restarted_restores_the_operators_value) {
        struct kernel_balancing k;

        setup("1\n");
        CHECK_INT(kernel_balancing_init(&k, root, state), 0);
        kernel_balancing_apply(&k, KNB_DISABLE, false);
        CHECK_STR(value(), "0\n");
        killed(&k);

        logged[0] = 0;
        CHECK_INT(kernel_balancing_init(&k, root, state), 0);
        CHECK(k.present);
        CHECK_INT(k.found, 1);
        CHECK(k.changed);
        CHECK(logged_has(LOG_LVL_NOTICE, "kernel.numa_balancing=0 was left by a numabalanced that did not exit "
                         "cleanly; the value it found, 1 (saved in "));
        kernel_balancing_apply(&k, KNB_DISABLE, false);
        CHECK_STR(value(), "0\n");
        CHECK_STR(saved_value(), "1\n");
        CHECK(!strstr(logged, "Set kernel.numa_balancing"));
        kernel_balancing_done(&k);
        CHECK_STR(value(), "1\n");
        CHECK_STR(saved_value(), "(none)");
        teardown();
}

/* Killed again after the restart: the saved value is still the first one. */
TEST(killed_twice_still_restores) {
        struct kernel_balancing k;

        setup("3\n");
        CHECK_INT(kernel_balancing_init(&k, root, state), 0);
        kernel_balancing_apply(&k, KNB_DISABLE, false);
        killed(&k);
        CHECK_INT(kernel_balancing_init(&k, root, state), 0);
        kernel_balancing_apply(&k, KNB_DISABLE, false);
        killed(&k);
        CHECK_STR(value(), "0\n");
        CHECK_STR(saved_value(), "3\n");
        CHECK_INT(kernel_balancing_init(&k, root, state), 0);
        CHECK_INT(k.found, 3);
        kernel_balancing_done(&k);
        CHECK_STR(value(), "3\n");
        teardown();
}

/* After the kill the operator set the sysctl themselves: theirs wins, the saved value
 * is dropped, and the new start saves and restores the new value. */
TEST(set_by_the_operator_after_a_kill_wins) {
        struct kernel_balancing k;

        setup("1\n");
        CHECK_INT(kernel_balancing_init(&k, root, state), 0);
        kernel_balancing_apply(&k, KNB_DISABLE, false);
        killed(&k);
        set_value("2\n");
        CHECK_INT(kernel_balancing_init(&k, root, state), 0);
        CHECK_INT(k.found, 2);
        CHECK(!k.changed);
        CHECK_STR(saved_value(), "(none)");
        CHECK(strstr(logged, "/state/kernel.numa_balancing says kernel.numa_balancing=1, but it was set to 2 since: "
                     "keeping 2"));
        kernel_balancing_apply(&k, KNB_DISABLE, false);
        CHECK_STR(value(), "0\n");
        CHECK_STR(saved_value(), "2\n");
        kernel_balancing_done(&k);
        CHECK_STR(value(), "2\n");
        teardown();
}

/* Restarted with kernel_numa_balancing = leave: the value is given back at once. */
TEST(killed_then_restarted_with_leave_restores_at_start) {
        struct kernel_balancing k;

        setup("1\n");
        CHECK_INT(kernel_balancing_init(&k, root, state), 0);
        kernel_balancing_apply(&k, KNB_DISABLE, false);
        killed(&k);
        CHECK_INT(kernel_balancing_init(&k, root, state), 0);
        kernel_balancing_apply(&k, KNB_LEAVE, false);
        CHECK_STR(value(), "1\n");
        CHECK_STR(saved_value(), "(none)");
        kernel_balancing_done(&k);
        CHECK_STR(value(), "1\n");
        teardown();
}

/* A saved file that does not hold a number is not trusted. */
TEST(junk_saved_value_is_ignored) {
        struct kernel_balancing k;

        setup("0\n");
        write_saved("on\n");
        CHECK_INT(kernel_balancing_init(&k, root, state), 0);
        CHECK_INT(k.found, 0);
        CHECK(!k.changed);
        CHECK(strstr(logged, "<4>Failed to read the saved kernel.numa_balancing from "));
        CHECK_STR(saved_value(), "(none)");
        kernel_balancing_done(&k);
        CHECK_STR(value(), "0\n");
        teardown();
}

/* Where the value cannot be saved, it is not changed: a daemon killed then would lose it. */
TEST(unsaveable_value_is_not_changed) {
        struct kernel_balancing k;
        FILE *f;

        setup("1\n");
        f = fopen(state, "w");          /* the state directory is a file: nothing can go in it */
        CHECK(f != NULL);
        if (f)
                fclose(f);
        CHECK_INT(kernel_balancing_init(&k, root, state), 0);
        kernel_balancing_apply(&k, KNB_DISABLE, false);
        CHECK_STR(value(), "1\n");
        CHECK(!k.changed);
        CHECK(strstr(logged, "<4>kernel.numa_balancing=1: not setting it to 0, because saving it to "));
        kernel_balancing_done(&k);
        CHECK_STR(value(), "1\n");
        teardown();
}

/* A second daemon beside the first (started by hand next to the service) neither takes
 * the saved value for its own nor restores anything when it exits. */
TEST(a_second_daemon_leaves_it_alone) {
        struct kernel_balancing k1, k2;

        setup("1\n");
        CHECK_INT(kernel_balancing_init(&k1, root, state), 0);
        kernel_balancing_apply(&k1, KNB_DISABLE, false);
        CHECK_INT(kernel_balancing_init(&k2, root, state), 0);
        CHECK(!k2.present && !k2.changed);
        CHECK(strstr(logged, "<4>Another numabalanced holds kernel.numa_balancing ("));
        kernel_balancing_apply(&k2, KNB_LEAVE, false);
        kernel_balancing_done(&k2);
        CHECK_STR(value(), "0\n");
        CHECK_STR(saved_value(), "1\n");
        kernel_balancing_done(&k1);
        CHECK_STR(value(), "1\n");
        teardown();
}

/* Under systemd the state directory is the unit's RuntimeDirectory= (the first one). */
TEST(state_dir_from_runtime_directory) {
        struct kernel_balancing k;
        char env[300];

        setup("1\n");
        snprintf(env, sizeof(env), "%s:/nonexistent/other", state);
        setenv("RUNTIME_DIRECTORY", env, 1);
        CHECK_INT(kernel_balancing_init(&k, root, NULL), 0);
        CHECK_STR(k.state_path, saved);
        unsetenv("RUNTIME_DIRECTORY");
        kernel_balancing_done(&k);
        CHECK_INT(kernel_balancing_init(&k, root, NULL), 0);
        CHECK_STR(k.state_dir, KERNEL_BALANCING_STATE_DIR);
        kernel_balancing_done(&k);
        teardown();
}

DEFINE_TEST_MAIN()
