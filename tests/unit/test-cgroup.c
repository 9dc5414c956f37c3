/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The select stage: the per-directory rule, a walk over a real directory tree with
 * user.* xattrs (what cgroupfs offers, on the test machine's own file system), and
 * cgroup.procs parsing. The walk part needs a file system with user xattrs: without
 * one the test is skipped (exit 77) and says so. */
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <sys/xattr.h>
#include <unistd.h>
#include "cgroup.h"
#include "test.h"

/* ------------------------------------------------------------------ the pure rule */

struct val {
        const char *s;      /* NULL: absent */
        size_t len;
        enum cg_mode mode;  /* what it means when it counts; UNSET: invalid */
};

static char big[1000];

static const struct val vals[] = {
        { NULL, 0, CG_MODE_UNSET },
        { "balance", 7, CG_MODE_BALANCE },
        { "advise", 6, CG_MODE_ADVISE },
        { "off", 3, CG_MODE_OFF },
        { "balance\n", 8, CG_MODE_BALANCE },      /* what "echo balance | ..." leaves */
        { "off\n", 4, CG_MODE_OFF },
        { "", 0, CG_MODE_UNSET },
        { "Balance", 7, CG_MODE_UNSET },
        { "balance\n\n", 9, CG_MODE_UNSET },
        { "balance ", 8, CG_MODE_UNSET },
        { " balance", 8, CG_MODE_UNSET },
        { "\nbalance", 8, CG_MODE_UNSET },
        { "bal\0ance", 8, CG_MODE_UNSET },
        { "balance\0", 8, CG_MODE_UNSET },
        { "\x01\xff\x80", 3, CG_MODE_UNSET },
        { "balanced", 8, CG_MODE_UNSET },
        { "1", 1, CG_MODE_UNSET },
        { big, sizeof(big), CG_MODE_UNSET },
};

static void test_rule(void) {
        static const enum cg_mode cfgs[] = { CG_MODE_UNSET, CG_MODE_OFF, CG_MODE_ADVISE, CG_MODE_BALANCE };
        unsigned n = 0;

        memset(big, 'a', sizeof(big));
        memcpy(big, "balance", 7);

        /* Every combination against the rule written the plain way: config, else a
         * valid trusted.*, else a valid user.* that counts, else unset. */
        for (size_t c = 0; c < ELEMENTSOF(cfgs); c++)
                for (size_t t = 0; t < ELEMENTSOF(vals); t++)
                        for (size_t u = 0; u < ELEMENTSOF(vals); u++)
                                for (int counts = 0; counts < 2; counts++) {
                                        enum cg_mode exp_m;
                                        enum cg_source exp_s, src = (enum cg_source) 99;
                                        enum cg_mode m;

                                        if (cfgs[c] != CG_MODE_UNSET) {
                                                exp_m = cfgs[c];
                                                exp_s = CG_FROM_CONFIG;
                                        } else if (vals[t].mode != CG_MODE_UNSET) {
                                                exp_m = vals[t].mode;
                                                exp_s = CG_FROM_TRUSTED;
                                        } else if (counts && vals[u].mode != CG_MODE_UNSET) {
                                                exp_m = vals[u].mode;
                                                exp_s = CG_FROM_USER;
                                        } else {
                                                exp_m = CG_MODE_UNSET;
                                                exp_s = CG_FROM_NONE;
                                        }
                                        m = cgroup_dir_setting(cfgs[c], vals[t].s, vals[t].len,
                                                               vals[u].s, vals[u].len, counts, &src);
                                        if (m != exp_m || src != exp_s) {
                                                fprintf(stderr, "rule: config=%d trusted=#%zu user=#%zu counts=%d: "
                                                        "got mode %d source %d, expected %d %d\n",
                                                        (int) cfgs[c], t, u, counts, (int) m, (int) src,
                                                        (int) exp_m, (int) exp_s);
                                                test_failures++;
                                        }
                                        n++;
                                }
        CHECK_INT(n, 4 * ELEMENTSOF(vals) * ELEMENTSOF(vals) * 2);

        /* A few spelled out, as an operator would ask them. */
        CHECK_INT(cgroup_dir_setting(CG_MODE_OFF, "balance", 7, "balance", 7, true, NULL), CG_MODE_OFF);
        CHECK_INT(cgroup_dir_setting(CG_MODE_UNSET, "advise", 6, "balance", 7, true, NULL), CG_MODE_ADVISE);
        CHECK_INT(cgroup_dir_setting(CG_MODE_UNSET, "Balance", 7, "advise", 6, true, NULL), CG_MODE_ADVISE);
        CHECK_INT(cgroup_dir_setting(CG_MODE_UNSET, NULL, 0, "balance", 7, false, NULL), CG_MODE_UNSET);
}

/* ------------------------------------------------------------------ the walk */

static char root[4096];
static bool is_root;

static int rm_one(const char *p, const struct stat *st, int flag, struct FTW *f) {
        return remove(p) < 0 ? -1 : 0;
}

static void rm_tree(void) {
        if (root[0])
                nftw(root, rm_one, 16, FTW_DEPTH | FTW_PHYS);
}

static void mk(const char *rel) {
        char p[8192];
        snprintf(p, sizeof(p), "%s%s", root, rel);
        if (mkdir(p, 0755) < 0) {
                fprintf(stderr, "mkdir %s: %m\n", p);
                test_failures++;
        }
}

static void setx(const char *rel, const char *name, const char *v, size_t len) {
        char p[8192];
        snprintf(p, sizeof(p), "%s%s", root, rel);
        if (setxattr(p, name, v, len, 0) < 0) {
                fprintf(stderr, "setxattr %s %s: %m\n", p, name);
                test_failures++;
        }
}

static void own(const char *rel, uid_t uid) {
        char p[8192];
        snprintf(p, sizeof(p), "%s%s", root, rel);
        if (chown(p, uid, uid) < 0) {
                fprintf(stderr, "chown %s: %m\n", p);
                test_failures++;
        }
}

static void put_file(const char *rel, const char *content) {
        char p[8192];
        FILE *f;
        snprintf(p, sizeof(p), "%s%s", root, rel);
        f = fopen(p, "we");
        if (!f) {
                fprintf(stderr, "fopen %s: %m\n", p);
                test_failures++;
                return;
        }
        fputs(content, f);
        fclose(f);
}

static const struct cgroup_entry *entry(const struct cgroup_selection *s, const char *path) {
        for (size_t i = 0; i < s->n_entries; i++)
                if (strcmp(s->entries[i].path, path) == 0)
                        return &s->entries[i];
        return NULL;
}

static const struct cgroup_invalid *invalid(const struct cgroup_selection *s, const char *path,
                                            const char *xattr) {
        for (size_t i = 0; i < s->n_invalid; i++)
                if (strcmp(s->invalid[i].path, path) == 0 && strcmp(s->invalid[i].xattr, xattr) == 0)
                        return &s->invalid[i];
        return NULL;
}

#define EXPECT(s, p, m, src, by) do {                                           \
        const struct cgroup_entry *_e = entry(s, p);                            \
        CHECK(_e != NULL);                                                      \
        if (_e) {                                                               \
                CHECK_INT(_e->mode, m);                                         \
                CHECK_INT(_e->source, src);                                     \
                CHECK_STR(_e->decided_by, by);                                  \
        } else                                                                  \
                fprintf(stderr, "  (missing entry %s)\n", p);                   \
        } while (0)

#define EXPECT_NONE(s, p) do {                                                  \
        if (entry(s, p)) {                                                      \
                fprintf(stderr, "%s:%d: %s selected, expected not\n", __FILE__, __LINE__, p); \
                test_failures++;                                                \
        } } while (0)

#define EXPECT_INVALID(s, p, x, val, reason) do {                               \
        const struct cgroup_invalid *_i = invalid(s, p, x);                     \
        CHECK(_i != NULL);                                                      \
        if (_i) {                                                               \
                CHECK_STR(_i->value, val);                                      \
                CHECK_STR(_i->why, reason);                                     \
        } else                                                                  \
                fprintf(stderr, "  (missing invalid %s %s)\n", p, x);           \
        } while (0)

static void test_walk(void) {
        struct cgroup_rule rules[] = {
                { (char *) "/b/b1", CG_MODE_BALANCE },
                { (char *) "/c", CG_MODE_OFF },
                { (char *) "/a/a4/", CG_MODE_OFF },   /* not the exact path: no effect */
        };
        struct cgroup_selection s = {}, s0 = {};
        char deep[4096] = "/deep";
        char longv[1000];
        size_t n_deep = 0;

        memset(longv, 'x', sizeof(longv));

        mk("/a");           setx("/a", "user.numabalanced", "balance", 7);
        mk("/a/a1");        /* inherits balance from /a */
        mk("/a/a1/a1x");
        mk("/a/a2");        setx("/a/a2", "user.numabalanced", "off\n", 4);
        mk("/a/a2/a2x");    /* inherits off */
        mk("/a/a2/a2y");    setx("/a/a2/a2y", "user.numabalanced", "advise", 6);
        mk("/a/a3");        setx("/a/a3", "user.numabalanced", "advise", 6);
        mk("/a/a4");
        mk("/b");
        mk("/b/b1");        /* the config names it */
        mk("/b/b1/b1x");
        mk("/b/b2");
        mk("/c");           setx("/c", "user.numabalanced", "balance", 7);  /* config off wins */
        mk("/c/c1");
        mk("/d");           setx("/d", "user.numabalanced", "Balance", 7);
        mk("/d/d1");
        mk("/e");           setx("/e", "user.numabalanced", "balance\n\n", 9);
        mk("/f");           setx("/f", "user.numabalanced", "\x01\xff\\x\n", 5);
        mk("/g");           setx("/g", "user.numabalanced", longv, sizeof(longv));
        mk("/h");           setx("/h", "user.numabalanced", "", 0);
        mk("/i");           setx("/i", "user.numabalanced", "balance\0", 8);   /* a C string's NUL */
        mk("/i/i1");
        mk("/h/h1");        setx("/h/h1", "user.numabalanced", "advise", 6);
        put_file("/cgroup.procs", "1\n");   /* files are not cgroups */
        put_file("/a/cgroup.procs", "1\n");
        {
                char t[8192], l[8192];
                snprintf(t, sizeof(t), "%s/a", root);
                snprintf(l, sizeof(l), "%s/zlink", root);
                if (symlink(t, l) < 0) {
                        fprintf(stderr, "symlink: %m\n");
                        test_failures++;
                }
        }
        /* 70 levels, balance at the top: the walk stops at CGROUP_WALK_MAX_DEPTH. */
        mk(deep);
        setx(deep, "user.numabalanced", "balance", 7);
        for (int i = 0; i < 69; i++) {
                strcat(deep, "/x");
                mk(deep);
        }

        if (is_root) {
                /* trusted.* (settable and readable only with CAP_SYS_ADMIN) wins over user.* */
                mk("/t");    setx("/t", "trusted.numabalanced", "advise", 6);
                             setx("/t", "user.numabalanced", "balance", 7);
                mk("/t2");   setx("/t2", "trusted.numabalanced", "bogus", 5);
                             setx("/t2", "user.numabalanced", "balance", 7);
                /* A subtree delegated to uid 1000. */
                mk("/o");    own("/o", 1000);  setx("/o", "user.numabalanced", "advise", 6);
                mk("/o/o1"); own("/o/o1", 1000);
                mk("/o/o2"); own("/o/o2", 1000); setx("/o/o2", "user.numabalanced", "balance", 7);
                /* Owned by someone else inside it: its user.* does not count. */
                mk("/o/o3"); own("/o/o3", 65534); setx("/o/o3", "user.numabalanced", "off", 3);
                mk("/o/o3/o3x"); own("/o/o3/o3x", 65534);
                setx("/o/o3/o3x", "user.numabalanced", "balance", 7);
                /* Root-owned again below it (only root can make that): counts. */
                mk("/o/o3/r");   setx("/o/o3/r", "user.numabalanced", "off", 3);
                mk("/o/o3/r/n"); own("/o/o3/r/n", 65534); setx("/o/o3/r/n", "user.numabalanced", "balance", 7);
                /* An unowned subtree of root with nobody's setting on a root-owned parent. */
                mk("/p");    own("/p", 65534); setx("/p", "user.numabalanced", "balance", 7);
        }

        CHECK_INT(cgroup_select(root, rules, ELEMENTSOF(rules), &s), 0);

        for (size_t i = 0; i < s.n_entries; i++)
                if (strncmp(s.entries[i].path, "/deep", 5) != 0)
                        printf("entry %s %d %d %s\n", s.entries[i].path, s.entries[i].mode,
                               s.entries[i].source, s.entries[i].decided_by);
        for (size_t i = 0; i < s.n_invalid; i++)
                printf("invalid %s %s \"%s\" %s\n", s.invalid[i].path, s.invalid[i].xattr,
                       s.invalid[i].value, s.invalid[i].why);

        EXPECT_NONE(&s, "/");
        EXPECT(&s, "/a", CG_MODE_BALANCE, CG_FROM_USER, "/a");
        EXPECT(&s, "/a/a1", CG_MODE_BALANCE, CG_FROM_USER, "/a");
        EXPECT(&s, "/a/a1/a1x", CG_MODE_BALANCE, CG_FROM_USER, "/a");
        EXPECT_NONE(&s, "/a/a2");
        EXPECT_NONE(&s, "/a/a2/a2x");
        EXPECT(&s, "/a/a2/a2y", CG_MODE_ADVISE, CG_FROM_USER, "/a/a2/a2y");
        EXPECT(&s, "/a/a3", CG_MODE_ADVISE, CG_FROM_USER, "/a/a3");
        EXPECT(&s, "/a/a4", CG_MODE_BALANCE, CG_FROM_USER, "/a");
        EXPECT_NONE(&s, "/b");
        EXPECT(&s, "/b/b1", CG_MODE_BALANCE, CG_FROM_CONFIG, "/b/b1");
        EXPECT(&s, "/b/b1/b1x", CG_MODE_BALANCE, CG_FROM_CONFIG, "/b/b1");
        EXPECT_NONE(&s, "/b/b2");
        EXPECT_NONE(&s, "/c");
        EXPECT_NONE(&s, "/c/c1");
        EXPECT_NONE(&s, "/d");
        EXPECT_NONE(&s, "/d/d1");
        EXPECT_NONE(&s, "/e");
        EXPECT_NONE(&s, "/f");
        EXPECT_NONE(&s, "/g");
        EXPECT_NONE(&s, "/h");
        EXPECT(&s, "/h/h1", CG_MODE_ADVISE, CG_FROM_USER, "/h/h1");
        EXPECT_NONE(&s, "/zlink");
        EXPECT_NONE(&s, "/cgroup.procs");

        EXPECT_INVALID(&s, "/d", "user.numabalanced", "Balance", "unknown value");
        EXPECT_INVALID(&s, "/e", "user.numabalanced", "balance\\n\\n", "unknown value");
        EXPECT_INVALID(&s, "/f", "user.numabalanced", "\\x01\\xff\\\\x\\n", "unknown value");
        EXPECT_INVALID(&s, "/g", "user.numabalanced",
                       "xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx...", "too long");
        EXPECT_INVALID(&s, "/h", "user.numabalanced", "", "unknown value");
        /* The NUL is part of the value: not "balance", and shown escaped. */
        EXPECT_NONE(&s, "/i");
        EXPECT_NONE(&s, "/i/i1");
        EXPECT_INVALID(&s, "/i", "user.numabalanced", "balance\\x00", "unknown value");
        for (size_t i = 0; i < s.n_invalid; i++)
                CHECK(strlen(s.invalid[i].value) <= CGROUP_XATTR_VALUE_MAX);

        /* The deep chain: /deep is at depth 1, so depths 1..64 are seen, not deeper. */
        for (size_t i = 0; i < s.n_entries; i++)
                if (strncmp(s.entries[i].path, "/deep", 5) == 0) {
                        n_deep++;
                        CHECK_STR(s.entries[i].decided_by, "/deep");
                }
        CHECK_INT(n_deep, CGROUP_WALK_MAX_DEPTH);
        CHECK(s.truncated);

        if (is_root) {
                EXPECT(&s, "/t", CG_MODE_ADVISE, CG_FROM_TRUSTED, "/t");
                EXPECT(&s, "/t2", CG_MODE_BALANCE, CG_FROM_USER, "/t2");
                EXPECT_INVALID(&s, "/t2", "trusted.numabalanced", "bogus", "unknown value");
                EXPECT(&s, "/o", CG_MODE_ADVISE, CG_FROM_USER, "/o");
                EXPECT(&s, "/o/o1", CG_MODE_ADVISE, CG_FROM_USER, "/o");
                EXPECT(&s, "/o/o2", CG_MODE_BALANCE, CG_FROM_USER, "/o/o2");
                /* o3's "off" does not count: it inherits advise from /o; o3x's balance
                 * does not count either. */
                EXPECT(&s, "/o/o3", CG_MODE_ADVISE, CG_FROM_USER, "/o");
                EXPECT(&s, "/o/o3/o3x", CG_MODE_ADVISE, CG_FROM_USER, "/o");
                EXPECT_INVALID(&s, "/o/o3", "user.numabalanced", "off", "not owned by the subtree's owner");
                EXPECT_INVALID(&s, "/o/o3/o3x", "user.numabalanced", "balance",
                               "not owned by the subtree's owner");
                EXPECT_NONE(&s, "/o/o3/r");
                EXPECT(&s, "/o/o3/r/n", CG_MODE_BALANCE, CG_FROM_USER, "/o/o3/r/n");
                EXPECT(&s, "/p", CG_MODE_BALANCE, CG_FROM_USER, "/p");
                CHECK(!invalid(&s, "/o/o2", "user.numabalanced"));
                CHECK(!invalid(&s, "/t", "user.numabalanced"));
        } else
                printf("not root: trusted.* and ownership cases skipped (they run in tests/vm/test-select)\n");
        cgroup_selection_done(&s);
        CHECK(s.entries == NULL && s.n_entries == 0 && s.invalid == NULL);

        /* The walk root is the root whoever owns it; a config rule on "/" applies. */
        {
                struct cgroup_rule r1[] = { { (char *) "/", CG_MODE_ADVISE } };
                CHECK_INT(cgroup_select(root, r1, 1, &s), 0);
                EXPECT(&s, "/", CG_MODE_ADVISE, CG_FROM_CONFIG, "/");
                EXPECT(&s, "/b/b2", CG_MODE_ADVISE, CG_FROM_CONFIG, "/");
                EXPECT(&s, "/a", CG_MODE_BALANCE, CG_FROM_USER, "/a");
                cgroup_selection_done(&s);
        }
        /* A walk below the top starts there. */
        {
                char sub[8192];
                snprintf(sub, sizeof(sub), "%s/a", root);
                CHECK_INT(cgroup_select(sub, NULL, 0, &s), 0);
                EXPECT(&s, "/", CG_MODE_BALANCE, CG_FROM_USER, "/");
                EXPECT(&s, "/a1", CG_MODE_BALANCE, CG_FROM_USER, "/");
                EXPECT_NONE(&s, "/a2");
                CHECK(!s.truncated);
                cgroup_selection_done(&s);
        }

        /* A root that cannot be opened: -errno, *ret untouched. */
        {
                char missing[8192];
                s0.n_entries = 12345;
                snprintf(missing, sizeof(missing), "%s/nonexistent", root);
                CHECK_INT(cgroup_select(missing, NULL, 0, &s0), -ENOENT);
                snprintf(missing, sizeof(missing), "%s/cgroup.procs", root);
                CHECK_INT(cgroup_select(missing, NULL, 0, &s0), -ENOTDIR);
                CHECK_INT(s0.n_entries, 12345);
        }
}

/* ------------------------------------------------------------------ cgroup.procs */

static void test_procs(void) {
        pid_t *pids = NULL, *untouched = (pid_t *) &root;
        size_t n = 77;

        mk("/procs");
        put_file("/procs/cgroup.procs", "12\n5\nabc\n12\n-3\n\n 7\n7 \n0\n99999999999\n2147483647\n3\n0x10\n+4\n5");
        CHECK_INT(cgroup_read_procs(root, "/procs", &pids, &n), 0);
        CHECK_INT(n, 4);
        if (n == 4) {
                CHECK_INT(pids[0], 3);
                CHECK_INT(pids[1], 5);
                CHECK_INT(pids[2], 12);
                CHECK_INT(pids[3], 2147483647);
        }
        free(pids);

        put_file("/cgroup.procs", "1\n");
        CHECK_INT(cgroup_read_procs(root, "/", &pids, &n), 0);
        CHECK_INT(n, 1);
        if (n == 1)
                CHECK_INT(pids[0], 1);
        free(pids);

        mk("/procs/empty");
        put_file("/procs/empty/cgroup.procs", "");
        CHECK_INT(cgroup_read_procs(root, "/procs/empty", &pids, &n), 0);
        CHECK_INT(n, 0);
        CHECK(pids == NULL);

        put_file("/procs/empty/cgroup.procs", "junk\nmore junk\n");
        CHECK_INT(cgroup_read_procs(root, "/procs/empty", &pids, &n), 0);
        CHECK_INT(n, 0);

        /* A cgroup that is gone: -ENOENT and the outputs untouched. */
        pids = untouched;
        n = 77;
        CHECK_INT(cgroup_read_procs(root, "/procs/gone", &pids, &n), -ENOENT);
        CHECK(pids == untouched);
        CHECK_INT(n, 77);
        CHECK_INT(cgroup_read_procs(root, "relative", &pids, &n), -EINVAL);
}

int main(void) {
        const char *tmp = getenv("TMPDIR");

        test_rule();

        is_root = geteuid() == 0;
        snprintf(root, sizeof(root), "%s/test-cgroup.XXXXXX", tmp && *tmp ? tmp : "/tmp");
        if (!mkdtemp(root)) {
                fprintf(stderr, "mkdtemp %s: %m\n", root);
                return 1;
        }
        if (setxattr(root, "user.numabalanced.probe", "1", 1, 0) < 0) {
                int e = errno;
                rmdir(root);
                if (e == EOPNOTSUPP || e == EPERM) {
                        printf("SKIP walk and procs: the file system under %s refuses user.* xattrs (%s); "
                               "set TMPDIR to a directory on ext4/xfs/btrfs/tmpfs>=6.6\n",
                               root, strerror(e));
                        if (test_failures)
                                TEST_MAIN_END();
                        return 77;
                }
                fprintf(stderr, "setxattr probe on %s: %s\n", root, strerror(e));
                return 1;
        }
        removexattr(root, "user.numabalanced.probe");

        test_walk();
        test_procs();
        rm_tree();
        TEST_MAIN_END();
}
