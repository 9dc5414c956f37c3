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
