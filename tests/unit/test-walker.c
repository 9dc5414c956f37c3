/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The cgroup walker (daemon/walker.h) on a temporary tree: it publishes what
 * cgroup_select() finds, again after a change of the tree or of the rules, nothing
 * walked with rules that were replaced meanwhile, and nothing when it runs out of
 * descriptors (the last selection stays). Its thread runs at nice WALKER_NICE. Each
 * case has a tree of its own, /a and /b in it (fresh_tree()). */
#include <dirent.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include "walker.h"
#include "test.h"
#include "tmptree.h"

static char root[256];

static void mk(const char *rel) {
        char p[512];
        snprintf(p, sizeof(p), "%s%s", root, rel);
        if (mkdir(p, 0755) < 0)
                abort();
}

static bool has(const struct cgroup_selection *s, const char *path) {
        for (size_t i = 0; i < s->n_entries; i++)
                if (strcmp(s->entries[i].path, path) == 0)
                        return true;
        return false;
}

/* The next selection the walker publishes, within 10 s; false if none. */
static bool next_selection(struct walker *w, struct cgroup_selection *s) {
        for (int i = 0; i < 1000; i++) {
                if (walker_take(w, s) > 0)
                        return true;
                usleep(10000);
        }
        return false;
}

/* The nice value of the one thread of this process other than the main thread. */
static int walker_thread_nice(void) {
        DIR *d = opendir("/proc/self/task");
        struct dirent *de;
        int nice = -100;

        while (d && (de = readdir(d))) {
                char path[300];
                FILE *f;
                if (de->d_name[0] == '.' || atoi(de->d_name) == getpid())
                        continue;
                snprintf(path, sizeof(path), "/proc/self/task/%s/stat", de->d_name);
                f = fopen(path, "re");
                if (f) {
                        char buf[1024], *p;
                        if (fgets(buf, sizeof(buf), f) && (p = strrchr(buf, ')')))
                                /* Field 19 is nice; p is at the end of field 2. */
                                sscanf(p + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %*u %*u %*d %*d %*d %d",
                                       &nice);
                        fclose(f);
                }
        }
        if (d)
                closedir(d);
        return nice;
}

TEST(publishes_walks_and_follows_rules) {
        struct cgroup_rule a = { (char *) "/a", CG_MODE_BALANCE, false, false, 0 }, b = { (char *) "/b", CG_MODE_ADVISE, false, false, 0 };
        struct cgroup_selection s = {};
        struct walker *w = NULL;

        CHECK_INT(walker_new(root, &a, 1, 20, &w), 0);
        if (!w)
                return;
        CHECK(next_selection(w, &s) && has(&s, "/a") && !has(&s, "/b"));
        cgroup_selection_done(&s);
        CHECK_INT(walker_thread_nice(), WALKER_NICE);

        /* A new cgroup below /a: seen by a later walk. */
        mk("/a/x");
        for (int i = 0; i < 100 && !has(&s, "/a/x"); i++) {
                cgroup_selection_done(&s);
                CHECK(next_selection(w, &s));
        }
        CHECK(has(&s, "/a/x"));
        cgroup_selection_done(&s);

        /* New rules: what is taken from now on was walked with them. */
        CHECK_INT(walker_set_config(w, root, &b, 1, 20), 0);
        CHECK(next_selection(w, &s) && has(&s, "/b") && !has(&s, "/a"));
        cgroup_selection_done(&s);
        walker_free(w);
}

/* The selection carries the walk's CPU time, measured on the walker's thread (this
 * thread's clock does not move meanwhile), and the walker does not walk again before
 * the last selection was taken: a walk replacing one never taken would drop its time
 * unattributed. */
TEST(walk_time_handed_over_with_each_selection) {
        struct cgroup_rule a = { (char *) "/a", CG_MODE_BALANCE, false, false, 0 };
        struct cgroup_selection s = {};
        struct walker *w = NULL;
        uint64_t ns = 0, walks;

        for (int i = 0; i < 100; i++) {
                char p[32];
                snprintf(p, sizeof(p), "/o%d", i);
                mk(p);
        }
        CHECK_INT(walker_new(root, &a, 1, 20, &w), 0);
        if (!w)
                return;
        CHECK(next_selection(w, &s));
        for (size_t i = 0; i < s.n_entries; i++)
                ns += s.entries[i].walk_ns;
        for (size_t i = 0; i < s.n_others; i++)
                ns += s.others[i].walk_ns;
        CHECK_MSG(ns > 0 && s.n_others > 0, "walk time %" PRIu64 " ns in %zu others", ns, s.n_others);
        cgroup_selection_done(&s);
        /* Published, not taken: no walk for 300 ms (15 intervals). */
        for (int i = 0; i < 1000 && walker_walks(w) < 2; i++)
                usleep(10000);
        walks = walker_walks(w);
        usleep(300000);
        CHECK_INT(walker_walks(w), walks);
        /* Taken: the next walk follows. */
        CHECK(next_selection(w, &s));
        cgroup_selection_done(&s);
        CHECK(next_selection(w, &s));
        CHECK(walker_walks(w) >= walks + 1);
        cgroup_selection_done(&s);
        walker_free(w);
}

static unsigned n_invalid_lines, n_count_lines, n_truncated_lines, n_short_lines;

static void count_lines(int level, int error, const struct log_fields *fields, const char *msg) {
        n_invalid_lines += strstr(msg, "treating as unset") != NULL;
        n_count_lines += strstr(msg, "not logged one by one") != NULL;
        n_truncated_lines += strstr(msg, "were not looked at") != NULL;
        n_short_lines += strstr(msg, "keeping the processes and cgroups") != NULL;
}

/* What a selection found wrong, on the event loop (walker_log_selection), without a
 * walk: 12 invalid settings are logged 10 one by one and 2 in one count line; the same
 * again logs nothing; one fixed and broken again is news again (once the minute's
 * burst allows it); a walk that hit its bounds is said once until one does not, and
 * a tree that cannot be read for lack of resources once until it can. */
TEST(what_is_wrong_with_the_tree_logged_once) {
        struct cgroup_invalid inv[12];
        char paths[12][16];
        struct cgroup_selection sel = { .invalid = inv, .n_invalid = 12 };
        struct walker_log l;

        for (int i = 0; i < 12; i++) {
                snprintf(paths[i], sizeof(paths[i]), "/c%d", i);
                inv[i] = (struct cgroup_invalid) { paths[i], "user.numabalanced", "junk", "unknown value" };
        }
        walker_log_init(&l);
        log_set_sink(count_lines);
        walker_log_selection(&l, "/sys/fs/cgroup", &sel);
        walker_log_selection(&l, "/sys/fs/cgroup", &sel);
        CHECK_INT(n_invalid_lines, WALKER_INVALID_LOG_BURST);
        CHECK_INT(n_count_lines, 1);
        CHECK_INT(l.n_invalid_seen, 12);
        sel.n_invalid = 11;             /* /c11 fixed */
        walker_log_selection(&l, "/sys/fs/cgroup", &sel);
        sel.n_invalid = 12;             /* and broken again, a minute later */
        l.invalid_log = LOG_RATELIMIT(60000, WALKER_INVALID_LOG_BURST);
        walker_log_selection(&l, "/sys/fs/cgroup", &sel);
        CHECK_INT(n_invalid_lines, WALKER_INVALID_LOG_BURST + 1);
        sel = (struct cgroup_selection) { .truncated = true };
        walker_log_selection(&l, "/sys/fs/cgroup", &sel);
        walker_log_selection(&l, "/sys/fs/cgroup", &sel);
        CHECK_INT(l.n_invalid_seen, 0);
        sel.truncated = false;
        walker_log_selection(&l, "/sys/fs/cgroup", &sel);
        sel.truncated = true;
        walker_log_selection(&l, "/sys/fs/cgroup", &sel);
        CHECK_INT(n_truncated_lines, 2);
        /* Out of descriptors: said once until a read works. */
        walker_log_short(&l, "/sys/fs/cgroup", -EMFILE);
        walker_log_short(&l, "/sys/fs/cgroup", -EMFILE);
        walker_log_short(&l, "/sys/fs/cgroup", 0);
        walker_log_short(&l, "/sys/fs/cgroup", -ENFILE);
        CHECK_INT(n_short_lines, 2);
        log_set_sink(NULL);
        walker_log_done(&l);
}


/* Out of descriptors, a walk publishes nothing: the tick keeps what it has. */
TEST(nothing_published_without_descriptors) {
        struct cgroup_rule a = { (char *) "/a", CG_MODE_BALANCE, false, false, 0 };
        struct cgroup_selection s = {};
        struct walker *w = NULL;
        struct rlimit saved, low;
        int fds[512], n = 0, fd;
        uint64_t walks;

        CHECK_INT(walker_new(root, &a, 1, 20, &w), 0);
        if (!w)
                return;
        CHECK(next_selection(w, &s));
        cgroup_selection_done(&s);
        CHECK(getrlimit(RLIMIT_NOFILE, &saved) == 0);
        low = saved;
        if (low.rlim_cur > 256)
                low.rlim_cur = 256;
        CHECK(setrlimit(RLIMIT_NOFILE, &low) == 0);
        while (n < (int) ELEMENTSOF(fds) && (fd = dup(0)) >= 0)
                fds[n++] = fd;
        (void) walker_take(w, &s);   /* one that may have finished before the hogging */
        cgroup_selection_done(&s);
        walks = walker_walks(w);
        usleep(300000);
        CHECK(walker_take(w, &s) == 0);
        CHECK_INT(walker_walks(w), walks);
        while (n > 0)
                close(fds[--n]);
        CHECK(setrlimit(RLIMIT_NOFILE, &saved) == 0);
        CHECK(next_selection(w, &s) && has(&s, "/a"));
        cgroup_selection_done(&s);
        walker_free(w);
}

/* Before each case: a tree of its own with /a and /b; after it, gone. */
static void fresh_tree(void) {
        if (tmptree_new(root, sizeof(root), "test-walker") < 0)
                abort();
        mk("/a");
        mk("/b");
}

static void remove_tree(void) {
        tmptree_remove(root);
}

DEFINE_TEST_MAIN_EACH(NULL, NULL, fresh_tree, remove_tree)
