/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The select stage: the per-directory rule, a walk over a real directory tree with
 * user.* xattrs (what cgroupfs offers, on the test machine's own file system), and
 * cgroup.procs parsing. The walk cases need a file system with user xattrs: without
 * one they are skipped and say so; the trusted.* and ownership cases need root
 * (they run in tests/vm/test-select too). */
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <sys/xattr.h>
#include <time.h>
#include <unistd.h>
#include "cgroup.h"
#include "fast-share.h"
#include "test.h"
#include "tmptree.h"

/* ------------------------------------------------------------------ the pure rule */

static char big[1000];

struct val {
        const char *s;      /* NULL: absent */
        size_t len;
        enum cg_mode mode;  /* what it means when it counts; UNSET: invalid */
};

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

/* The rule written the plain way: config, else a valid trusted.*, else a valid
 * user.* that counts, else unset. */
static enum cg_mode expected_setting(enum cg_mode cfg, const struct val *t, const struct val *u, bool counts,
                                     enum cg_source *ret_source) {
        if (cfg != CG_MODE_UNSET) {
                *ret_source = CG_FROM_CONFIG;
                return cfg;
        }
        if (t->mode != CG_MODE_UNSET) {
                *ret_source = CG_FROM_TRUSTED;
                return t->mode;
        }
        if (counts && u->mode != CG_MODE_UNSET) {
                *ret_source = CG_FROM_USER;
                return u->mode;
        }
        *ret_source = CG_FROM_NONE;
        return CG_MODE_UNSET;
}

/* Every combination of config, trusted.* and user.* values against the rule. */
TEST(rule_every_combination) {
        static const enum cg_mode cfgs[] = { CG_MODE_UNSET, CG_MODE_OFF, CG_MODE_ADVISE, CG_MODE_BALANCE };
        unsigned n = 0;

        memset(big, 'a', sizeof(big));
        memcpy(big, "balance", 7);

        for (size_t c = 0; c < ELEMENTSOF(cfgs); c++)
                for (size_t t = 0; t < ELEMENTSOF(vals); t++)
                        for (size_t u = 0; u < ELEMENTSOF(vals); u++)
                                for (int counts = 0; counts < 2; counts++) {
                                        enum cg_source exp_s, src = (enum cg_source) 99;
                                        enum cg_mode exp_m = expected_setting(cfgs[c], &vals[t], &vals[u], counts,
                                                                              &exp_s);
                                        enum cg_mode m = cgroup_dir_setting(cfgs[c], vals[t].s, vals[t].len,
                                                                            vals[u].s, vals[u].len, counts, &src);

                                        CHECK_MSG(m == exp_m && src == exp_s,
                                                  "rule: config=%d trusted=#%zu user=#%zu counts=%d: "
                                                  "got mode %d source %d, expected %d %d",
                                                  (int) cfgs[c], t, u, counts, (int) m, (int) src,
                                                  (int) exp_m, (int) exp_s);
                                        n++;
                                }
        CHECK_INT(n, 4 * ELEMENTSOF(vals) * ELEMENTSOF(vals) * 2);
}

/* A few spelled out, as an operator would ask them. */
TEST(rule_examples) {
        CHECK_INT(cgroup_dir_setting(CG_MODE_OFF, "balance", 7, "balance", 7, true, NULL), CG_MODE_OFF);
        CHECK_INT(cgroup_dir_setting(CG_MODE_UNSET, "advise", 6, "balance", 7, true, NULL), CG_MODE_ADVISE);
        CHECK_INT(cgroup_dir_setting(CG_MODE_UNSET, "Balance", 7, "advise", 6, true, NULL), CG_MODE_ADVISE);
        CHECK_INT(cgroup_dir_setting(CG_MODE_UNSET, NULL, 0, "balance", 7, false, NULL), CG_MODE_UNSET);
}

/* ------------------------------------------------------------------ the walk */

/* The temporary cgroup-like tree all walk and procs cases share, made by intro(). */
static char root[4096];
static bool is_root;
static char no_xattrs[4096 + 256];     /* why the walk cases are skipped; "" when they run */

static void mk(const char *rel) {
        char p[8192];
        snprintf(p, sizeof(p), "%s%s", root, rel);
        if (mkdir(p, 0755) < 0)
                TEST_FAIL("mkdir %s: %m", p);
}

static void setx(const char *rel, const char *name, const char *v, size_t len) {
        char p[8192];
        snprintf(p, sizeof(p), "%s%s", root, rel);
        if (setxattr(p, name, v, len, 0) < 0)
                TEST_FAIL("setxattr %s %s: %m", p, name);
}

static void own(const char *rel, uid_t uid) {
        char p[8192];
        snprintf(p, sizeof(p), "%s%s", root, rel);
        if (chown(p, uid, uid) < 0)
                TEST_FAIL("chown %s: %m", p);
}

/* user.numabalanced values that count, that are invalid, and that inherit. */
static void make_user_tree(void) {
        char longv[1000];

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
        /* Shares of the fast tier (they count on directories root owns: when the test
         * runs as root). */
        mk("/s");           setx("/s", "user.numabalanced", "balance", 7);
                            setx("/s", "user.numabalanced.fast_share", "40%", 3);
        mk("/s/s1");        /* inherits /s's share */
        mk("/s/s2");        setx("/s/s2", "user.numabalanced", "place", 5);
                            setx("/s/s2", "user.numabalanced.fast_share", "10%", 3);
        mk("/s/s3");        setx("/s/s3", "user.numabalanced", "advise", 6);   /* /s's share */
        mk("/s/s4");        setx("/s/s4", "user.numabalanced", "balance", 7);
                            setx("/s/s4", "user.numabalanced.fast_share", "140%", 4);
        mk("/s/s5");        setx("/s/s5", "user.numabalanced.fast_share", "5%", 2);  /* no setting: unread */
        tmptree_write_at(root, "/cgroup.procs", "1\n");   /* files are not cgroups */
        tmptree_write_at(root, "/a/cgroup.procs", "1\n");
        {
                char t[8192], l[8192];
                snprintf(t, sizeof(t), "%s/a", root);
                snprintf(l, sizeof(l), "%s/zlink", root);
                if (symlink(t, l) < 0)
                        TEST_FAIL("symlink: %m");
        }
}

/* 70 levels, balance at the top: the walk stops at CGROUP_WALK_MAX_DEPTH. */
static void make_deep_chain(void) {
        char deep[4096] = "/deep";

        mk(deep);
        setx(deep, "user.numabalanced", "balance", 7);
        for (int i = 0; i < 69; i++) {
                strcat(deep, "/x");
                mk(deep);
        }
}

/* What only root can make: trusted.* values and directories of other owners. */
static void make_owner_tree(void) {
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

/* The tree in $TMPDIR (or /tmp), when its file system takes user.* xattrs; exit
 * status 1 when it cannot be made. */
static int intro(void) {
        const char *tmp = getenv("TMPDIR");

        is_root = geteuid() == 0;
        snprintf(root, sizeof(root), "%s/test-cgroup.XXXXXX", tmp && *tmp ? tmp : "/tmp");
        if (!mkdtemp(root)) {
                fprintf(stderr, "mkdtemp %s: %m\n", root);
                return 1;
        }
        if (setxattr(root, "user.numabalanced.probe", "1", 1, 0) < 0) {
                int e = errno;
                if (e != EOPNOTSUPP && e != EPERM) {
                        fprintf(stderr, "setxattr probe on %s: %s\n", root, strerror(e));
                        tmptree_remove(root);
                        return 1;
                }
                snprintf(no_xattrs, sizeof(no_xattrs),
                         "the file system under %s refuses user.* xattrs (%s); "
                         "set TMPDIR to a directory on ext4/xfs/btrfs/tmpfs>=6.6", root, strerror(e));
                return 0;
        }
        removexattr(root, "user.numabalanced.probe");
        make_user_tree();
        make_deep_chain();
        if (is_root)
                make_owner_tree();
        if (test_failures) {
                tmptree_remove(root);
                return 1;
        }
        return 0;
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

#define EXPECT_NONE(s, p) CHECK_MSG(!entry(s, p), "%s selected, expected not", p)

#define EXPECT_INVALID(s, p, x, val, reason) do {                               \
        const struct cgroup_invalid *_i = invalid(s, p, x);                     \
        CHECK(_i != NULL);                                                      \
        if (_i) {                                                               \
                CHECK_STR(_i->value, val);                                      \
                CHECK_STR(_i->why, reason);                                     \
        } else                                                                  \
                fprintf(stderr, "  (missing invalid %s %s)\n", p, x);           \
        } while (0)

static struct cgroup_selection walked;
static bool walk_done;
static const struct cgroup_rule the_rules[] = {
        { (char *) "/b/b1", CG_MODE_BALANCE, false, false, 0 },
        { (char *) "/c", CG_MODE_OFF, false, false, 0 },
        { (char *) "/a/a4/", CG_MODE_OFF, false, false, 0 },   /* not the exact path: no effect */
        { (char *) "/s/s2", CG_MODE_UNSET, false, true, 25 },  /* a share: wins over the xattr */
        { (char *) "/s/s5", CG_MODE_UNSET, false, true, 50 },  /* no setting of its own: unused */
};

/* The walk of the whole tree with three config rules, made once: the first case
 * that asks checks that it succeeded and prints what it found. */
static const struct cgroup_selection *walk(void) {
        const struct cgroup_selection *s = &walked;

        if (walk_done)
                return s;
        walk_done = true;
        CHECK_INT(cgroup_select(root, the_rules, ELEMENTSOF(the_rules), &walked), 0);
        for (size_t i = 0; i < s->n_entries; i++)
                if (strncmp(s->entries[i].path, "/deep", 5) != 0)
                        printf("entry %s %d %d %s\n", s->entries[i].path, s->entries[i].mode,
                               s->entries[i].source, s->entries[i].decided_by);
        for (size_t i = 0; i < s->n_invalid; i++)
                printf("invalid %s %s \"%s\" %s\n", s->invalid[i].path, s->invalid[i].xattr,
                       s->invalid[i].value, s->invalid[i].why);
        return s;
}

#define NEED_XATTRS() do {                                                      \
        if (no_xattrs[0])                                                       \
                TEST_SKIP("%s", no_xattrs);                                     \
        } while (0)

#define NEED_ROOT() do {                                                        \
        NEED_XATTRS();                                                          \
        if (!is_root)                                                           \
                TEST_SKIP("not root: trusted.* and ownership cases skipped (they run in tests/vm/test-select)"); \
        } while (0)

TEST(walk_user_setting_inherited) {
        NEED_XATTRS();
        const struct cgroup_selection *s = walk();

        EXPECT(s, "/a", CG_MODE_BALANCE, CG_FROM_USER, "/a");
        EXPECT(s, "/a/a1", CG_MODE_BALANCE, CG_FROM_USER, "/a");
        EXPECT(s, "/a/a1/a1x", CG_MODE_BALANCE, CG_FROM_USER, "/a");
}

/* off ends the inheritance; a setting below it starts again. */
TEST(walk_off_and_its_subtree_not_selected) {
        NEED_XATTRS();
        const struct cgroup_selection *s = walk();

        EXPECT_NONE(s, "/a/a2");
        EXPECT_NONE(s, "/a/a2/a2x");
        EXPECT(s, "/a/a2/a2y", CG_MODE_ADVISE, CG_FROM_USER, "/a/a2/a2y");
        EXPECT(s, "/a/a3", CG_MODE_ADVISE, CG_FROM_USER, "/a/a3");
}

/* A rule applies to its exact path and below: "/a/a4/" is not /a/a4. */
TEST(walk_config_rule_on_its_exact_path) {
        NEED_XATTRS();
        const struct cgroup_selection *s = walk();

        EXPECT(s, "/a/a4", CG_MODE_BALANCE, CG_FROM_USER, "/a");
        EXPECT_NONE(s, "/b");
        EXPECT(s, "/b/b1", CG_MODE_BALANCE, CG_FROM_CONFIG, "/b/b1");
        EXPECT(s, "/b/b1/b1x", CG_MODE_BALANCE, CG_FROM_CONFIG, "/b/b1");
        EXPECT_NONE(s, "/b/b2");
}

TEST(walk_config_off_wins_over_user_setting) {
        NEED_XATTRS();
        const struct cgroup_selection *s = walk();

        EXPECT_NONE(s, "/c");
        EXPECT_NONE(s, "/c/c1");
}

/* Invalid values select nothing, not even below them; a valid one below counts. */
TEST(walk_invalid_values_not_selected) {
        NEED_XATTRS();
        const struct cgroup_selection *s = walk();

        EXPECT_NONE(s, "/d");
        EXPECT_NONE(s, "/d/d1");
        EXPECT_NONE(s, "/e");
        EXPECT_NONE(s, "/f");
        EXPECT_NONE(s, "/g");
        EXPECT_NONE(s, "/h");
        EXPECT(s, "/h/h1", CG_MODE_ADVISE, CG_FROM_USER, "/h/h1");
}

/* ... and are reported, escaped and cut to CGROUP_XATTR_VALUE_MAX. */
TEST(walk_invalid_values_reported) {
        NEED_XATTRS();
        const struct cgroup_selection *s = walk();

        EXPECT_INVALID(s, "/d", "user.numabalanced", "Balance", "unknown value");
        EXPECT_INVALID(s, "/e", "user.numabalanced", "balance\\n\\n", "unknown value");
        EXPECT_INVALID(s, "/f", "user.numabalanced", "\\x01\\xff\\\\x\\n", "unknown value");
        EXPECT_INVALID(s, "/g", "user.numabalanced",
                       "xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx...", "too long");
        EXPECT_INVALID(s, "/h", "user.numabalanced", "", "unknown value");
        for (size_t i = 0; i < s->n_invalid; i++)
                CHECK(strlen(s->invalid[i].value) <= CGROUP_XATTR_VALUE_MAX);
}

/* The NUL is part of the value: not "balance", and shown escaped. */
TEST(walk_value_with_nul_invalid) {
        NEED_XATTRS();
        const struct cgroup_selection *s = walk();

        EXPECT_NONE(s, "/i");
        EXPECT_NONE(s, "/i/i1");
        EXPECT_INVALID(s, "/i", "user.numabalanced", "balance\\x00", "unknown value");
}

/* The root without a rule, files and symbolic links are not cgroups to select. */
TEST(walk_root_files_and_links_not_selected) {
        NEED_XATTRS();
        const struct cgroup_selection *s = walk();

        EXPECT_NONE(s, "/");
        EXPECT_NONE(s, "/zlink");
        EXPECT_NONE(s, "/cgroup.procs");
}

/* The deep chain: /deep is at depth 1, so depths 1..64 are seen, not deeper. */
TEST(walk_stops_at_max_depth) {
        NEED_XATTRS();
        const struct cgroup_selection *s = walk();
        size_t n_deep = 0;

        for (size_t i = 0; i < s->n_entries; i++)
                if (strncmp(s->entries[i].path, "/deep", 5) == 0) {
                        n_deep++;
                        CHECK_STR(s->entries[i].decided_by, "/deep");
                }
        CHECK_INT(n_deep, CGROUP_WALK_MAX_DEPTH);
        CHECK(s->truncated);
}

TEST(walk_trusted_wins_over_user) {
        NEED_ROOT();
        const struct cgroup_selection *s = walk();

        EXPECT(s, "/t", CG_MODE_ADVISE, CG_FROM_TRUSTED, "/t");
        EXPECT(s, "/t2", CG_MODE_BALANCE, CG_FROM_USER, "/t2");
        EXPECT_INVALID(s, "/t2", "trusted.numabalanced", "bogus", "unknown value");
        CHECK(!invalid(s, "/t", "user.numabalanced"));
}

/* In a subtree delegated to uid 1000, only directories it owns set anything. */
TEST(walk_user_setting_counts_for_the_subtree_owner) {
        NEED_ROOT();
        const struct cgroup_selection *s = walk();

        EXPECT(s, "/o", CG_MODE_ADVISE, CG_FROM_USER, "/o");
        EXPECT(s, "/o/o1", CG_MODE_ADVISE, CG_FROM_USER, "/o");
        EXPECT(s, "/o/o2", CG_MODE_BALANCE, CG_FROM_USER, "/o/o2");
        /* o3's "off" does not count: it inherits advise from /o; o3x's balance
         * does not count either. */
        EXPECT(s, "/o/o3", CG_MODE_ADVISE, CG_FROM_USER, "/o");
        EXPECT(s, "/o/o3/o3x", CG_MODE_ADVISE, CG_FROM_USER, "/o");
        EXPECT_INVALID(s, "/o/o3", "user.numabalanced", "off", "not owned by the subtree's owner");
        EXPECT_INVALID(s, "/o/o3/o3x", "user.numabalanced", "balance",
                       "not owned by the subtree's owner");
        EXPECT_NONE(s, "/o/o3/r");
        EXPECT(s, "/o/o3/r/n", CG_MODE_BALANCE, CG_FROM_USER, "/o/o3/r/n");
        EXPECT(s, "/p", CG_MODE_BALANCE, CG_FROM_USER, "/p");
        CHECK(!invalid(s, "/o/o2", "user.numabalanced"));
}

/* Whose processes a setting covers: a user.* in a delegated subtree, that subtree's
 * owner's; anything else (config, trusted.*, a root-owned directory's user.*), all. */
TEST(walk_user_setting_covers_the_owners_processes) {
        NEED_XATTRS();
        const struct cgroup_selection *s = walk();
        const struct cgroup_entry *e;

        /* /a is the test's own (the walk root counts as root-owned). */
        e = entry(s, "/a/a1");
        CHECK(e && e->covers_uid == (geteuid() == 0 ? CGROUP_COVERS_ALL : geteuid()));
        e = entry(s, "/b/b1");
        CHECK(e && e->covers_uid == CGROUP_COVERS_ALL);
        if (!is_root)
                return;
        e = entry(s, "/o/o3/o3x");
        CHECK(e && e->covers_uid == 1000);
        e = entry(s, "/o/o3/r/n");
        CHECK(e && e->covers_uid == 65534);
        e = entry(s, "/p");
        CHECK(e && e->covers_uid == 65534);
        e = entry(s, "/t");
        CHECK(e && e->covers_uid == CGROUP_COVERS_ALL);
}

/* The owner of the delegated subtree each cgroup lies in: the topmost directory on
 * its path that root does not own, never one below it (a directory given to another
 * uid inside a subtree, a root-owned one below it, a chain 64 levels deep). */
TEST(walk_subtree_uid_is_the_delegation_points_owner) {
        NEED_XATTRS();
        const struct cgroup_selection *s = walk();
        const struct cgroup_entry *e;
        uid_t me = geteuid() == 0 ? 0 : geteuid();

        /* The walk's root counts as root's; /a and /deep are the test's own. */
        e = entry(s, "/a/a1/a1x");
        CHECK(e && e->subtree_uid == me);
        e = entry(s, "/deep/x/x/x/x/x/x/x/x/x/x/x/x/x/x/x/x/x/x/x/x/x/x/x/x/x/x/x/x/x/x/x");
        CHECK(e && e->subtree_uid == me);
        e = entry(s, "/b/b1");
        CHECK(e && e->subtree_uid == me);
        if (!is_root)
                return;
        e = entry(s, "/t");
        CHECK(e && e->subtree_uid == 0);
        e = entry(s, "/o/o1");
        CHECK(e && e->subtree_uid == 1000);
        e = entry(s, "/o/o3/o3x");      /* 65534's, inside 1000's subtree */
        CHECK(e && e->subtree_uid == 1000);
        e = entry(s, "/o/o3/r/n");      /* below a root-owned directory inside it */
        CHECK(e && e->subtree_uid == 1000);
        e = entry(s, "/p");
        CHECK(e && e->subtree_uid == 65534);
}

#define EXPECT_SHARE(s, p, pct, by) do {                                        \
        const struct cgroup_entry *_e = entry(s, p);                            \
        CHECK(_e != NULL);                                                      \
        if (_e) {                                                               \
                CHECK_INT(_e->fast_share_pct, pct);                             \
                if (by)                                                         \
                        CHECK_STR(_e->share_by, (const char *) (by));           \
                else                                                            \
                        CHECK(_e->share_by == NULL);                            \
        }                                                                       \
        } while (0)

/* A share of the fast tier is read where a setting is, applies below it, and a nearer
 * one wins; an invalid one is reported and the one above applies. A user.* share
 * counts only on a directory root owns: a tenant does not give itself a share. */
TEST(walk_fast_shares) {
        NEED_XATTRS();
        const struct cgroup_selection *s = walk();

        EXPECT_SHARE(s, "/a/a1", FAST_SHARE_UNSET, NULL);
        CHECK(!invalid(s, "/s/s5", "user.numabalanced.fast_share"));
        /* The config's share rule wins, whoever owns the directory; one on a directory
         * without a setting of its own applies to nothing, and says so. */
        EXPECT_SHARE(s, "/s/s2", 25, "/s/s2");
        CHECK(!invalid(s, "/s/s2", "user.numabalanced.fast_share"));
        CHECK(s->rule_matched && s->rule_matched[3] && !s->rule_matched[4]);
        if (!is_root) {
                EXPECT_SHARE(s, "/s/s1", FAST_SHARE_UNSET, NULL);
                EXPECT_INVALID(s, "/s", "user.numabalanced.fast_share", "40%", "a share is set by root");
                return;
        }
        EXPECT_SHARE(s, "/s", 40, "/s");
        EXPECT_SHARE(s, "/s/s1", 40, "/s");
        EXPECT_SHARE(s, "/s/s3", 40, "/s");
        EXPECT_SHARE(s, "/s/s4", 40, "/s");
        EXPECT_SHARE(s, "/s/s5", 40, "/s");
        EXPECT_INVALID(s, "/s/s4", "user.numabalanced.fast_share", "140%", "not a percentage (0%..100%)");
}

static unsigned n_compared;

/* One directory of the tree: cgroup_setting_of says what the walk said. */
static int compare_one(const char *fpath, const struct stat *st, int flag, struct FTW *f) {
        const char *rel = fpath + strlen(root);
        const struct cgroup_entry *e;
        struct cgroup_setting cs;

        if (flag != FTW_D || !*rel)
                return 0;
        if (f->level > CGROUP_WALK_MAX_DEPTH + 1)
                return 0;
        CHECK_INT(cgroup_setting_of(root, the_rules, ELEMENTSOF(the_rules), rel, &cs), 0);
        e = entry(&walked, rel);
        if (e)
                CHECK_MSG(cs.mode == e->mode && cs.source == e->source && cs.covers_uid == e->covers_uid,
                          "%s: setting_of says %d %d %u, the walk %d %d %u", rel, cs.mode, cs.source,
                          (unsigned) cs.covers_uid, e->mode, e->source, (unsigned) e->covers_uid);
        else
                CHECK_MSG(cs.mode == CG_MODE_UNSET || cs.mode == CG_MODE_OFF, "%s: setting_of says %d, not selected",
                          rel, cs.mode);
        n_compared++;
        return 0;
}

/* Every directory of the tree, one at a time, as the walk saw it. */
TEST(setting_of_agrees_with_the_walk) {
        NEED_XATTRS();
        walk();
        n_compared = 0;
        CHECK_INT(nftw(root, compare_one, 16, FTW_PHYS), 0);
        /* The user tree, /deep and its 64 levels seen (and the one beyond). */
        CHECK(n_compared > 20 + CGROUP_WALK_MAX_DEPTH);
}

/* Paths that are no cgroup: refused, or gone. */
TEST(setting_of_bad_paths) {
        NEED_XATTRS();
        struct cgroup_setting cs = { .mode = 77 };

        CHECK_INT(cgroup_setting_of(root, NULL, 0, "a", &cs), -EINVAL);
        CHECK_INT(cgroup_setting_of(root, NULL, 0, "/a//a1", &cs), -EINVAL);
        CHECK_INT(cgroup_setting_of(root, NULL, 0, "/a/../b", &cs), -EINVAL);
        CHECK_INT(cgroup_setting_of(root, NULL, 0, "/a/./a1", &cs), -EINVAL);
        CHECK_INT(cgroup_setting_of(root, NULL, 0, "/a/", &cs), -EINVAL);
        CHECK_INT(cgroup_setting_of(root, NULL, 0, "/nonexistent", &cs), -ENOENT);
        CHECK_INT(cgroup_setting_of(root, NULL, 0, "/zlink", &cs), -ENOENT);
        CHECK_INT(cgroup_setting_of(root, NULL, 0, "/cgroup.procs", &cs), -ENOENT);
        CHECK_INT(cs.mode, 77);
        CHECK_INT(cgroup_setting_of(root, NULL, 0, "/", &cs), 0);
        CHECK_INT(cs.mode, CG_MODE_UNSET);
        CHECK_INT(cgroup_setting_of(root, NULL, 0, "/a/a1/a1x", &cs), 0);
        CHECK_INT(cs.mode, CG_MODE_BALANCE);
}

/* Last of the cases on the shared walk: it frees it. */
TEST(walk_selection_done_empties_it) {
        NEED_XATTRS();
        walk();
        cgroup_selection_done(&walked);
        CHECK(walked.entries == NULL && walked.n_entries == 0 && walked.invalid == NULL);
}

/* The walk root is the root whoever owns it; a config rule on "/" applies. */
TEST(walk_config_rule_on_the_root) {
        NEED_XATTRS();
        struct cgroup_rule r1[] = { { (char *) "/", CG_MODE_ADVISE, false, false, 0 } };
        struct cgroup_selection s = {};

        CHECK_INT(cgroup_select(root, r1, 1, &s), 0);
        EXPECT(&s, "/", CG_MODE_ADVISE, CG_FROM_CONFIG, "/");
        EXPECT(&s, "/b/b2", CG_MODE_ADVISE, CG_FROM_CONFIG, "/");
        EXPECT(&s, "/a", CG_MODE_BALANCE, CG_FROM_USER, "/a");
        cgroup_selection_done(&s);
}

/* A walk below the top starts there. */
TEST(walk_from_a_subdirectory) {
        NEED_XATTRS();
        struct cgroup_selection s = {};
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
TEST(walk_unopenable_root_fails_untouched) {
        NEED_XATTRS();
        struct cgroup_selection s0 = { .n_entries = 12345 };
        char missing[8192];

        snprintf(missing, sizeof(missing), "%s/nonexistent", root);
        CHECK_INT(cgroup_select(missing, NULL, 0, &s0), -ENOENT);
        snprintf(missing, sizeof(missing), "%s/cgroup.procs", root);
        CHECK_INT(cgroup_select(missing, NULL, 0, &s0), -ENOTDIR);
        CHECK_INT(s0.n_entries, 12345);
}

/* ------------------------------------------------------------------ cgroup.procs */

/* Only valid PIDs, sorted, each once. */
/* The count bound is shared out: a subtree with more cgroups than the whole bound
 * (one user's) gets its share, and the cgroups after it in name order are still
 * walked. Depth first with one global count, /a.slice took all 100 here and
 * /workload.slice/app was never seen. */
TEST(walk_count_bound_shared_fairly) {
        static const struct cgroup_rule rules[] = {
                { (char *) "/a.slice", CG_MODE_ADVISE, false, false, 0 },
                { (char *) "/b.slice/x", CG_MODE_ADVISE, false, false, 0 },
                { (char *) "/workload.slice/app", CG_MODE_BALANCE, false, false, 0 },
        };
        const char *tmp = getenv("TMPDIR");
        char froot[4096], p[8192];
        struct cgroup_selection sel = {};
        size_t n_a = 0;

        snprintf(froot, sizeof(froot), "%s/test-cgroup-fair.XXXXXX", tmp && *tmp ? tmp : "/tmp");
        if (!mkdtemp(froot))
                TEST_FAIL("mkdtemp: %m");
        static const char *const dirs[] = { "/a.slice", "/b.slice", "/b.slice/x", "/workload.slice",
                                            "/workload.slice/app" };
        for (size_t i = 0; i < ELEMENTSOF(dirs); i++) {
                snprintf(p, sizeof(p), "%s%s", froot, dirs[i]);
                CHECK(mkdir(p, 0755) == 0);
        }
        for (int i = 0; i < 300; i++) {
                snprintf(p, sizeof(p), "%s/a.slice/c%03d", froot, i);
                CHECK(mkdir(p, 0755) == 0);
        }

        CHECK_INT(cgroup_select_max(froot, rules, ELEMENTSOF(rules), 100, &sel), 0);
        for (size_t i = 0; i < sel.n_entries; i++)
                n_a += strncmp(sel.entries[i].path, "/a.slice", 8) == 0;
        CHECK(entry(&sel, "/workload.slice/app") != NULL);
        CHECK(entry(&sel, "/b.slice/x") != NULL);
        CHECK(sel.truncated);
        /* The root's three subtrees share 99: /a.slice gets a third, 33 (itself and
         * 32 of its cgroups), the others need 2 each; nothing beyond the bound. */
        CHECK_INT(n_a, 33);
        CHECK(sel.n_entries <= 100);
        cgroup_selection_done(&sel);

        /* Without the flood, everything. */
        CHECK_INT(cgroup_select_max(froot, rules, ELEMENTSOF(rules), 1000, &sel), 0);
        CHECK_INT(sel.n_entries, 301 + 2);
        CHECK(!sel.truncated);
        cgroup_selection_done(&sel);
        tmptree_remove(froot);
}

/* The rule of one directory itself, as the walk and explain CGROUP take it: its path's
 * rule over any name's; of names, the one read last; the root has no name. */
TEST(config_rule_of_one_directory) {
        static const struct cgroup_rule rules[] = {
                { (char *) "db*.service", CG_MODE_BALANCE, true, false, 0 },
                { (char *) "/s.slice/db1.service", CG_MODE_ADVISE, false, false, 0 },
                { (char *) "db2.service", CG_MODE_OFF, true, false, 0 },
                { (char *) "*", CG_MODE_ADVISE, true, false, 0 },
                { (char *) "/", CG_MODE_BALANCE, false, false, 0 },
        };

        CHECK_INT(cgroup_config_rule(rules, ELEMENTSOF(rules), "/s.slice/db1.service"), 1);
        CHECK_INT(cgroup_config_rule(rules, ELEMENTSOF(rules), "/s.slice/db2.service"), 3);
        CHECK_INT(cgroup_config_rule(rules, 3, "/s.slice/db2.service"), 2);
        CHECK_INT(cgroup_config_rule(rules, 1, "/x/db3.service"), 0);
        CHECK_INT(cgroup_config_rule(rules, 3, "/x/web.service"), -1);
        CHECK_INT(cgroup_config_rule(rules, 4, "/"), -1);
        CHECK_INT(cgroup_config_rule(rules, ELEMENTSOF(rules), "/"), 4);
}

/* [select] units: a rule on a directory's own name, wherever it is (a systemd unit in
 * its slice, a Kubernetes pod); a rule on the path wins; of names, the one read last.
 * A rule that decided no directory is reported as matching nothing. */
TEST(walk_units_rules_match_names_anywhere) {
        static const struct cgroup_rule rules[] = {
                { (char *) "postgresql@*.service", CG_MODE_BALANCE, true, false, 0 },
                { (char *) "kubepods-burstable-pod*.slice", CG_MODE_PLACE, true, false, 0 },
                { (char *) "redis.service", CG_MODE_OFF, true, false, 0 },
                { (char *) "/system.slice/redis.service", CG_MODE_ADVISE, false, false, 0 },
                { (char *) "nothing-*.service", CG_MODE_BALANCE, true, false, 0 },
                { (char *) "/gone.slice", CG_MODE_BALANCE, false, false, 0 },
                { (char *) "postgresql@15-main.service", CG_MODE_ADVISE, true, false, 0 },
        };
        static const char *const dirs[] = {
                "/system.slice", "/system.slice/system-postgresql.slice",
                "/system.slice/system-postgresql.slice/postgresql@15-main.service",
                "/system.slice/system-postgresql.slice/postgresql@16-b.service", "/system.slice/redis.service",
                "/kubepods.slice", "/kubepods.slice/kubepods-burstable.slice",
                "/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod1f2e.slice",
                "/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod1f2e.slice/cri-containerd-ab12.scope",
        };
        const char *tmp = getenv("TMPDIR");
        char froot[4096], p[8192];
        struct cgroup_selection sel = {};
        const char *pg = "/system.slice/system-postgresql.slice/";
        const char *pod = "/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod1f2e.slice";

        snprintf(froot, sizeof(froot), "%s/test-cgroup-units.XXXXXX", tmp && *tmp ? tmp : "/tmp");
        if (!mkdtemp(froot))
                TEST_FAIL("mkdtemp: %m");
        for (size_t i = 0; i < ELEMENTSOF(dirs); i++) {
                snprintf(p, sizeof(p), "%s%s", froot, dirs[i]);
                CHECK(mkdir(p, 0755) == 0);
        }
        CHECK_INT(cgroup_select(froot, rules, ELEMENTSOF(rules), &sel), 0);
        snprintf(p, sizeof(p), "%spostgresql@15-main.service", pg);
        EXPECT(&sel, p, CG_MODE_ADVISE, CG_FROM_CONFIG, p);       /* the name read last */
        snprintf(p, sizeof(p), "%spostgresql@16-b.service", pg);
        EXPECT(&sel, p, CG_MODE_BALANCE, CG_FROM_CONFIG, p);
        EXPECT(&sel, "/system.slice/redis.service", CG_MODE_ADVISE, CG_FROM_CONFIG, "/system.slice/redis.service");
        EXPECT(&sel, pod, CG_MODE_PLACE, CG_FROM_CONFIG, pod);
        snprintf(p, sizeof(p), "%s/cri-containerd-ab12.scope", pod);
        EXPECT(&sel, p, CG_MODE_PLACE, CG_FROM_CONFIG, pod);      /* inherited */
        EXPECT_NONE(&sel, "/system.slice");
        CHECK_INT(sel.n_rules, ELEMENTSOF(rules));
        if (sel.rule_matched && sel.n_rules == ELEMENTSOF(rules)) {
                static const bool want[] = { true, true, false, true, false, false, true };

                /* redis.service's name rule lost to the path rule: it decided nothing. */
                for (size_t i = 0; i < ELEMENTSOF(want); i++)
                        CHECK_MSG(sel.rule_matched[i] == want[i], "rule %zu (%s): matched %d", i, rules[i].path,
                                  sel.rule_matched[i]);
        }
        cgroup_selection_done(&sel);
        tmptree_remove(froot);
}

TEST(procs_valid_sorted_unique) {
        pid_t *pids = NULL;
        size_t n = 77;

        mk("/procs");
        tmptree_write_at(root, "/procs/cgroup.procs", "12\n5\nabc\n12\n-3\n\n 7\n7 \n0\n99999999999\n2147483647\n3\n0x10\n+4\n5");
        CHECK_INT(cgroup_read_procs(root, "/procs", &pids, &n), 0);
        CHECK_INT(n, 4);
        if (n == 4) {
                CHECK_INT(pids[0], 3);
                CHECK_INT(pids[1], 5);
                CHECK_INT(pids[2], 12);
                CHECK_INT(pids[3], 2147483647);
        }
        free(pids);
}

TEST(procs_of_the_root_cgroup) {
        pid_t *pids = NULL;
        size_t n = 77;

        tmptree_write_at(root, "/cgroup.procs", "1\n");
        CHECK_INT(cgroup_read_procs(root, "/", &pids, &n), 0);
        CHECK_INT(n, 1);
        if (n == 1)
                CHECK_INT(pids[0], 1);
        free(pids);
}

TEST(procs_empty_or_junk_none) {
        pid_t *pids = NULL;
        size_t n = 77;

        mk("/procs-empty");
        tmptree_write_at(root, "/procs-empty/cgroup.procs", "");
        CHECK_INT(cgroup_read_procs(root, "/procs-empty", &pids, &n), 0);
        CHECK_INT(n, 0);
        CHECK(pids == NULL);

        tmptree_write_at(root, "/procs-empty/cgroup.procs", "junk\nmore junk\n");
        CHECK_INT(cgroup_read_procs(root, "/procs-empty", &pids, &n), 0);
        CHECK_INT(n, 0);
}

/* A cgroup that is gone: -ENOENT and the outputs untouched; a relative path: -EINVAL. */
TEST(procs_gone_or_relative_fails_untouched) {
        pid_t *untouched = (pid_t *) &root, *pids = untouched;
        size_t n = 77;

        CHECK_INT(cgroup_read_procs(root, "/procs-gone", &pids, &n), -ENOENT);
        CHECK(pids == untouched);
        CHECK_INT(n, 77);
        CHECK_INT(cgroup_read_procs(root, "relative", &pids, &n), -EINVAL);
}

static void outro(void) {
        cgroup_selection_done(&walked);
        tmptree_remove(root);
}

/* The walk's CPU time, all of it charged: each opted-in cgroup its own, the others to
 * the top-level cgroup they lie in ("/a" is opted in, its child /a/a2 opted out: "/a"
 * is also an other; "/b" is not opted in, its child /b/b1 is). */
TEST(walk_cpu_time_charged) {
        static const struct cgroup_rule rules[] = { { (char *) "/b/b1", CG_MODE_BALANCE, false, false, 0 } };
        struct cgroup_selection s = {};
        uint64_t t0, took, sum = 0;
        struct timespec ts;
        size_t zero = 0;
        bool root_other = false, a_other = false, b_other = false, a2_other = false;

        NEED_XATTRS();
        clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
        t0 = (uint64_t) ts.tv_sec * 1000000000u + (uint64_t) ts.tv_nsec;
        CHECK_INT(cgroup_select(root, rules, ELEMENTSOF(rules), &s), 0);
        clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
        took = (uint64_t) ts.tv_sec * 1000000000u + (uint64_t) ts.tv_nsec - t0;
        for (size_t i = 0; i < s.n_entries; i++) {
                sum += s.entries[i].walk_ns;
                zero += s.entries[i].walk_ns == 0;
        }
        for (size_t i = 0; i < s.n_others; i++) {
                sum += s.others[i].walk_ns;
                root_other |= strcmp(s.others[i].path, "/") == 0;
                a_other |= strcmp(s.others[i].path, "/a") == 0;
                b_other |= strcmp(s.others[i].path, "/b") == 0;
                a2_other |= strcmp(s.others[i].path, "/a/a2") == 0;
        }
        CHECK_MSG(zero == 0, "%zu of %zu opted-in cgroups were charged nothing", zero, s.n_entries);
        /* All but the walk's first and last steps (opening the root, returning). */
        CHECK_MSG(sum <= took && sum * 10 >= took * 9, "charged %" PRIu64 " ns of %" PRIu64, sum, took);
        CHECK(root_other && a_other && b_other && !a2_other);
        CHECK(!entry(&s, "/b") && entry(&s, "/b/b1") && entry(&s, "/a") && !entry(&s, "/a/a2"));
        cgroup_selection_done(&s);
}

DEFINE_TEST_MAIN_FULL(intro, outro)
