/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The cgroup records (daemon/cg-records.h): made once per path, found by path among
 * many, their owner read from the directory, swept when not seen. */
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>
#include "cg-records.h"
#include "test.h"

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
                                           .covers_uid = CGROUP_COVERS_ALL },
                            by_user = { .path = "/tenant/c2", .decided_by = "/tenant/c2", .covers_uid = 1000,
                                        .source = CG_FROM_USER },
                            own_rule = { .path = "/tenant/c3", .decided_by = "/tenant/c3",
                                         .covers_uid = CGROUP_COVERS_ALL };
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
        CHECK(c1 && c1->owner == 100001 && c1->turn_uid == 1000);  /* the rule's directory */
        CHECK(c2 && c2->owner == 100002 && c2->turn_uid == 1000);  /* the user its opt-in covers */
        CHECK(c3 && c3->turn_uid == 100003);                       /* its own rule: its own owner */
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

/* Records not seen go; the others stay findable; their time is the ledger's. */
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
        cg_records_sweep(&r, &l);
        CHECK_INT(r.n, 50);
        CHECK(cg_records_find(&r, "/c2") != NULL);
        CHECK(cg_records_find(&r, "/c3") == NULL);
        CHECK_INT(l.departed_ns[STAGE_READ], 50);
        CHECK_INT(l.total_ns[STAGE_READ], 100);
        cg_records_done(&r);
}

DEFINE_TEST_MAIN()
