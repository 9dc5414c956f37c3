/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The cgroup records (daemon/cg-records.h): made once per path, found by path among
 * many, their owner read from the directory, swept when not seen. */
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>
#include "cg-records.h"
#include "cost.h"
#include "test.h"
#include "tmptree.h"

TEST(get_makes_once_and_updates) {
        struct cg_records r;
        struct cgroup_entry e = { .path = "/db.slice", .mode = CG_MODE_ADVISE, .source = CG_FROM_CONFIG,
                                  .covers_uid = CGROUP_COVERS_ALL };
        struct cg_rec *a, *b;

        cg_records_init(&r);
        a = cg_records_get(&r, "/nonexistent", &e);
        e.mode = CG_MODE_BALANCE;
        b = cg_records_get(&r, "/nonexistent", &e);
        CHECK(a && a == b);
        CHECK_INT(r.n, 1);
        CHECK(a && a->mode == CG_MODE_BALANCE);
        CHECK(a && a->owner == 0);          /* no such directory: root */
        CHECK(cg_records_find(&r, "/db.slice") == a);
        CHECK(cg_records_find(&r, "/db") == NULL);
        cg_records_done(&r);
        CHECK_INT(r.n, 0);
}

/* 60,000 records (a tenant's): each found again by path, through the rehashes. */
TEST(many_found_by_path) {
        struct cg_records r;
        char path[64];
        bool all = true;

        cg_records_init(&r);
        for (unsigned i = 0; i < 60000; i++) {
                struct cgroup_entry e = { .path = path };
                snprintf(path, sizeof(path), "/user.slice/c%u", i);
                all &= cg_records_get(&r, "/nonexistent", &e) != NULL;
        }
        CHECK(all);
        CHECK_INT(r.n, 60000);
        CHECK(r.n_buckets >= r.n && (r.n_buckets & (r.n_buckets - 1)) == 0);
        for (unsigned i = 0; all && i < 60000; i += 7) {
                struct cg_rec *c;
                snprintf(path, sizeof(path), "/user.slice/c%u", i);
                c = cg_records_find(&r, path);
                all &= c && strcmp(c->path, path) == 0;
        }
        CHECK(all);
        cg_records_done(&r);
}

/* The owner is the directory's. */
TEST(owner_from_directory) {
        char root[] = "/tmp/test-cg-records-XXXXXX", dir[256];
        struct cgroup_entry e = { .path = "/tenant" };
        struct cg_records r;
        struct cg_rec *c;

        if (!mkdtemp(root)) {
                TEST_FAIL("mkdtemp: %m");
                return;
        }
        snprintf(dir, sizeof(dir), "%s/tenant", root);
        CHECK_INT(mkdir(dir, 0755), 0);
        if (geteuid() == 0)
                CHECK_INT(chown(dir, 4242, 4242), 0);
        cg_records_init(&r);
        c = cg_records_get(&r, root, &e);
        CHECK(c && c->owner == (geteuid() == 0 ? 4242 : geteuid()));
        cg_records_done(&r);
        rmdir(dir);
        rmdir(root);
}

/* Turns go by whom the opt-in belongs to, never by a subdirectory's own owner: a
 * tenant who chowns its cgroups to sub-uids (a user namespace) gets no more turns. */
TEST(turn_by_opt_in_not_subdirectory_owner) {
        char root[] = "/tmp/test-cg-records-XXXXXX", dir[256];
        struct cgroup_entry below_rule = { .path = "/tenant/c1", .decided_by = "/tenant",
                                           .covers_uid = CGROUP_COVERS_ALL, .subtree_uid = 1000 },
                            by_user = { .path = "/tenant/c2", .decided_by = "/tenant/c2", .covers_uid = 1000,
                                        .source = CG_FROM_USER, .subtree_uid = 1000 },
                            own_rule = { .path = "/tenant/c3", .decided_by = "/tenant/c3",
                                         .covers_uid = CGROUP_COVERS_ALL, .subtree_uid = 1000 };
        struct cg_records r;
        struct cg_rec *c1, *c2, *c3;

        if (geteuid() != 0) {
                TEST_SKIP("not root: cannot give directories to other uids");
                return;
        }
        if (!mkdtemp(root)) {
                TEST_FAIL("mkdtemp: %m");
                return;
        }
        snprintf(dir, sizeof(dir), "%s/tenant", root);
        CHECK_INT(mkdir(dir, 0755), 0);
        CHECK_INT(chown(dir, 1000, 1000), 0);
        for (int i = 1; i <= 3; i++) {
                snprintf(dir, sizeof(dir), "%s/tenant/c%d", root, i);
                CHECK_INT(mkdir(dir, 0755), 0);
                CHECK_INT(chown(dir, 100000 + (uid_t) i, 100000), 0);     /* sub-uids */
        }
        cg_records_init(&r);
        c1 = cg_records_get(&r, root, &below_rule);
        c2 = cg_records_get(&r, root, &by_user);
        c3 = cg_records_get(&r, root, &own_rule);
        CHECK(c1 && c1->owner == 100001 && c1->turn_uid == 1000);  /* the delegated subtree's */
        CHECK(c2 && c2->owner == 100002 && c2->turn_uid == 1000);  /* the user its opt-in covers */
        CHECK(c3 && c3->owner == 100003 && c3->turn_uid == 1000);  /* its own rule: still the subtree's */
        /* The opt-in changes hands: the turn follows. */
        by_user.covers_uid = 2000;
        c2 = cg_records_get(&r, root, &by_user);
        CHECK(c2 && c2->turn_uid == 2000);
        cg_records_done(&r);
        for (int i = 1; i <= 3; i++) {
                snprintf(dir, sizeof(dir), "%s/tenant/c%d", root, i);
                rmdir(dir);
        }
        snprintf(dir, sizeof(dir), "%s/tenant", root);
        rmdir(dir);
        rmdir(root);
}

/* ---- owners under a root-wide opt-in, on a walked tree -------------------------- */

static char tree[] = "/tmp/test-cg-records-tree-XXXXXX";

static bool mk_owned(const char *rel, uid_t uid) {
        char p[1024];

        snprintf(p, sizeof(p), "%s%s", tree, rel);
        if (mkdir(p, 0755) < 0 || (uid && chown(p, uid, uid) < 0)) {
                TEST_FAIL("mkdir/chown %s: %m", p);
                return false;
        }
        return true;
}

/* The depth of the tenant's own tree below its app.slice, and of its chowned one. */
#define TENANT_DEPTH 40

/* A systemd host in small: /user.slice and its user-UID.slice are root's, each
 * user@UID.service the user's (the delegation point); user 1000 makes TENANT_DEPTH
 * levels of its own below its app.slice, and a chain of directories given to sub-uids
 * (as the root of a user namespace can), one uid per level. */
static bool make_users_tree(void) {
        char rel[1024] = "/user.slice/user-1000.slice/user@1000.service/app.slice";

        if (!mkdtemp(tree))
                return false;
        if (!mk_owned("/user.slice", 0) || !mk_owned("/user.slice/user-1000.slice", 0) ||
            !mk_owned("/user.slice/user-1000.slice/user@1000.service", 1000) ||
            !mk_owned("/user.slice/user-1000.slice/user@1000.service/app.slice", 1000) ||
            !mk_owned("/user.slice/user-2000.slice", 0) ||
            !mk_owned("/user.slice/user-2000.slice/user@2000.service", 2000) ||
            !mk_owned("/user.slice/user-2000.slice/user@2000.service/app.slice", 2000) ||
            !mk_owned("/user.slice/user-2000.slice/user@2000.service/app.slice/job.service", 2000) ||
            !mk_owned("/system.slice", 0) || !mk_owned("/system.slice/db.service", 0))
                return false;
        for (int i = 0; i < TENANT_DEPTH; i++) {
                strcat(rel, "/d");
                if (!mk_owned(rel, 1000))
                        return false;
        }
        strcpy(rel, "/user.slice/user-1000.slice/user@1000.service/ns");
        for (int i = 0; i < 8; i++) {
                if (!mk_owned(rel, 100000 + (uid_t) i))
                        return false;
                strcat(rel, "/n");
        }
        return true;
}

/* The records of a walk of the tree under rules, as the tick makes them. */
static void walk_records(const struct cgroup_rule *rules, size_t n_rules, struct cg_records *r,
                         struct cgroup_selection *sel) {
        cg_records_init(r);
        CHECK_INT(cgroup_select(tree, rules, n_rules, sel), 0);
        for (size_t i = 0; i < sel->n_entries; i++)
                CHECK(cg_records_get(r, tree, &sel->entries[i]) != NULL);
}

/* Under a `cgroups =` rule on /user.slice (root's), each user's cgroups are that
 * user's for turns, whatever their depth or their own owner; the slices root owns
 * are root's. (They were all root's: the owner of the directory whose setting
 * applied.) */
TEST(root_wide_opt_in_owner_is_the_delegated_subtrees) {
        static const struct cgroup_rule rules[] = { { "/user.slice", CG_MODE_BALANCE, false, false, 0 },
                                                    { "/system.slice", CG_MODE_BALANCE, false, false, 0 } };
        struct cgroup_selection sel = {};
        struct cg_records r;
        unsigned n_1000 = 0, n_2000 = 0, n_root = 0, other = 0;

        if (geteuid() != 0)
                TEST_SKIP("not root: cannot give directories to other uids");
        if (!make_users_tree()) {
                tmptree_remove(tree);
                return;
        }
        walk_records(rules, ELEMENTSOF(rules), &r, &sel);
        for (size_t i = 0; i < r.n; i++) {
                const struct cg_rec *c = r.v[i];
                bool u1000 = strncmp(c->path, "/user.slice/user-1000.slice/", 28) == 0,
                     u2000 = strncmp(c->path, "/user.slice/user-2000.slice/", 28) == 0;

                if (u1000 && c->turn_uid == 1000)
                        n_1000++;
                else if (u2000 && c->turn_uid == 2000)
                        n_2000++;
                else if (!u1000 && !u2000 && c->turn_uid == 0)
                        n_root++;
                else {
                        other++;
                        fprintf(stderr, "  %s: turn_uid %u, owner %u\n", c->path, (unsigned) c->turn_uid,
                                (unsigned) c->owner);
                }
        }
        /* user@1000.service, app.slice, its TENANT_DEPTH levels, ns and its 7 below. */
        CHECK_INT(n_1000, 2 + TENANT_DEPTH + 8);
        CHECK_INT(n_2000, 3);
        /* /user.slice, the two user-UID.slice, /system.slice, db.service. */
        CHECK_INT(n_root, 5);
        CHECK_INT(other, 0);
        /* The sub-uids' directories are theirs (report visibility), their turn 1000's. */
        {
                const struct cg_rec *c = cg_records_find(&r, "/user.slice/user-1000.slice/user@1000.service/ns/n/n");
                CHECK(c && c->owner == 100002 && c->turn_uid == 1000);
        }
        cg_records_done(&r);
        cgroup_selection_done(&sel);

        /* The same tree opted in by a rule on the root of the tree, and by rules on a
         * sub-uid's directory and deep in the tenant's tree: the same owners. */
        {
                static const struct cgroup_rule at_root[] = { { "/", CG_MODE_ADVISE, false, false, 0 } };
                static const struct cgroup_rule deep[] = {
                        { "/user.slice/user-1000.slice/user@1000.service/ns/n/n/n", CG_MODE_BALANCE, false, false, 0 },
                        { "/user.slice/user-1000.slice/user@1000.service/app.slice/d/d/d", CG_MODE_BALANCE, false, false, 0 },
                };
                const struct cg_rec *c;

                walk_records(at_root, ELEMENTSOF(at_root), &r, &sel);
                c = cg_records_find(&r, "/");
                CHECK(c && c->turn_uid == 0);
                c = cg_records_find(&r, "/user.slice/user-2000.slice/user@2000.service/app.slice/job.service");
                CHECK(c && c->turn_uid == 2000);
                c = cg_records_find(&r, "/user.slice/user-1000.slice/user@1000.service/ns/n");
                CHECK(c && c->turn_uid == 1000);
                cg_records_done(&r);
                cgroup_selection_done(&sel);

                walk_records(deep, ELEMENTSOF(deep), &r, &sel);
                c = cg_records_find(&r, "/user.slice/user-1000.slice/user@1000.service/ns/n/n/n/n");
                CHECK(c && c->owner == 100004 && c->turn_uid == 1000);
                c = cg_records_find(&r, "/user.slice/user-1000.slice/user@1000.service/app.slice/d/d/d/d/d");
                CHECK(c && c->turn_uid == 1000);
                cg_records_done(&r);
                cgroup_selection_done(&sel);
        }

        /* The tenant gives a directory of its own to a sub-uid after the first walk:
         * the next walk keeps its turn where it was. */
        {
                static const struct cgroup_rule again[] = { { "/user.slice", CG_MODE_BALANCE, false, false, 0 } };
                char p[1024];
                const struct cg_rec *c;

                cg_records_init(&r);
                CHECK_INT(cgroup_select(tree, again, 1, &sel), 0);
                for (size_t i = 0; i < sel.n_entries; i++)
                        (void) cg_records_get(&r, tree, &sel.entries[i]);
                cgroup_selection_done(&sel);
                snprintf(p, sizeof(p), "%s/user.slice/user-1000.slice/user@1000.service/app.slice", tree);
                CHECK_INT(chown(p, 100099, 100099), 0);
                CHECK_INT(cgroup_select(tree, again, 1, &sel), 0);
                for (size_t i = 0; i < sel.n_entries; i++)
                        (void) cg_records_get(&r, tree, &sel.entries[i]);
                c = cg_records_find(&r, "/user.slice/user-1000.slice/user@1000.service/app.slice/d");
                CHECK(c && c->turn_uid == 1000);
                cg_records_done(&r);
                cgroup_selection_done(&sel);
        }
        tmptree_remove(tree);
}

static unsigned departed;

static void depart(void *userdata, const struct cg_rec *c) {
        departed++;
        cost_depart(userdata, c);
}

/* Records not seen go, each handed to the departure callback; the others stay
 * findable; their time is the ledger's. */
TEST(sweep_frees_unseen) {
        struct cost_ledger l = {};
        struct cg_records r;
        char path[64];

        cg_records_init(&r);
        for (unsigned i = 0; i < 100; i++) {
                struct cgroup_entry e = { .path = path };
                struct cg_rec *c;

                snprintf(path, sizeof(path), "/c%u", i);
                c = cg_records_get(&r, "/nonexistent", &e);
                if (c) {
                        c->seen = i % 2 == 0;
                        cost_charge(&l, c, STAGE_READ, 1);
                }
        }
        cg_records_set_depart(&r, depart, &l);
        cg_records_sweep(&r);
        CHECK_INT(departed, 50);
        CHECK_INT(r.n, 50);
        CHECK(cg_records_find(&r, "/c2") != NULL);
        CHECK(cg_records_find(&r, "/c3") == NULL);
        CHECK_INT(l.departed_ns[STAGE_READ], 50);
        CHECK_INT(l.total_ns[STAGE_READ], 100);
        cg_records_done(&r);
}

DEFINE_TEST_MAIN()
