/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The CPU-time ledger (daemon/cost.h) on records built by hand: every charge reaches
 * the record it names and the totals, shares add up to what was shared, and the
 * totals are always the sum of the charges. */
#include <stdlib.h>
#include "cg-records.h"
#include "cost.h"
#include "migrate.h"
#include "proc-records.h"
#include "test.h"

static uint64_t sum_stage(const struct cg_records *cgs, enum stage s) {
        uint64_t t = 0;

        for (size_t i = 0; i < cgs->n; i++)
                t += cgs->v[i]->cost_ns[s];
        return t;
}

TEST(charge_reaches_record_and_totals) {
        struct cost_ledger l = {};
        struct cg_rec cg = { .path = "/a" };
        struct proc_rec p = { .pid = 1, .cg = &cg }, orphan = { .pid = 2 };

        cost_charge(&l, &cg, STAGE_WALK, 100);
        cost_charge(&l, NULL, STAGE_WALK, 50);       /* nobody's: not in the totals */
        cost_charge_proc(&l, &p, STAGE_READ, 30);
        cost_charge_proc(&l, &orphan, STAGE_READ, 7); /* no cgroup this tick: nothing */
        CHECK_INT(cg.cost_ns[STAGE_WALK], 100);
        CHECK_INT(cg.cost_ns[STAGE_READ], 30);
        CHECK_INT(p.cost_ns[STAGE_READ], 30);
        CHECK_INT(orphan.cost_ns[STAGE_READ], 0);
        CHECK_INT(l.total_ns[STAGE_WALK], 100);
        CHECK_INT(l.total_ns[STAGE_READ], 30);
}

TEST(share_by_procs_in_proportion_and_whole) {
        struct cost_ledger l = {};
        struct cg_rec a = { .path = "/a", .seen = true, .n_procs = 1 }, b = { .path = "/b", .seen = true, .n_procs = 2 },
                      gone = { .path = "/gone", .seen = false, .n_procs = 5 };
        struct cg_rec *v[] = { &a, &b, &gone };
        struct cg_records cgs = { .v = v, .n = 3 };

        CHECK_INT(cost_share_by_procs(&l, &cgs, STAGE_BOOKKEEPING, 1000), 0);
        CHECK_INT(a.cost_ns[STAGE_BOOKKEEPING], 333);
        CHECK_INT(b.cost_ns[STAGE_BOOKKEEPING], 667);   /* the remainder to the last */
        CHECK_INT(gone.cost_ns[STAGE_BOOKKEEPING], 0);
        CHECK_INT(l.total_ns[STAGE_BOOKKEEPING], 1000);
        /* No process anywhere: nothing given, all returned. */
        a.n_procs = b.n_procs = 0;
        CHECK_INT(cost_share_by_procs(&l, &cgs, STAGE_BOOKKEEPING, 500), 500);
        CHECK_INT(l.total_ns[STAGE_BOOKKEEPING], 1000);
}

TEST(share_even_over_every_record) {
        struct cost_ledger l = {};
        struct cg_rec a = { .path = "/a" }, b = { .path = "/b" }, c = { .path = "/c" };
        struct cg_rec *v[] = { &a, &b, &c };
        struct cg_records cgs = { .v = v, .n = 3 }, none = {};

        CHECK_INT(cost_share_even(&l, &cgs, STAGE_REPORT, 10), 0);
        CHECK_INT(a.cost_ns[STAGE_REPORT], 4);
        CHECK_INT(b.cost_ns[STAGE_REPORT], 3);
        CHECK_INT(c.cost_ns[STAGE_REPORT], 3);
        CHECK_INT(l.total_ns[STAGE_REPORT], 10);
        CHECK_INT(cost_share_even(&l, &none, STAGE_REPORT, 10), 10);
}

/* The walk outside opted-in directories: to the record of an opted-in top-level
 * cgroup, else to a subtree record, which lives while walks find it. */
TEST(walk_others_to_records_and_subtrees) {
        struct cost_ledger l = {};
        struct cg_records cgs;
        struct cgroup_entry e = { .path = "/app.slice", .mode = CG_MODE_BALANCE };
        struct cgroup_walk_cost others[] = { { .path = "/app.slice", .walk_ns = 40 },
                                             { .path = "/user.slice", .walk_ns = 100 },
                                             { .path = "/system.slice", .walk_ns = 60 } };
        struct cgroup_selection sel = { .others = others, .n_others = 3 };
        struct cg_rec *app;

        cg_records_init(&cgs);
        app = cg_records_get(&cgs, "/nonexistent", &e);
        CHECK(app != NULL);
        CHECK_INT(cost_walk_others(&l, &cgs, &sel, 1), 200);
        CHECK(app && app->cost_ns[STAGE_WALK] == 40);
        CHECK_INT(l.n_subtrees, 2);
        CHECK(l.n_subtrees == 2 && strcmp(l.subtrees[0]->path, "/system.slice") == 0);   /* sorted */
        CHECK(l.n_subtrees == 2 && l.subtrees[1]->walk_ns == 100);
        CHECK_INT(l.subtree_walk_ns, 160);
        CHECK_INT(l.total_ns[STAGE_WALK], 200);
        /* The next walk finds only /user.slice: /system.slice is forgotten, its time
         * stays in the totals. */
        sel.others = &others[1];
        sel.n_others = 1;
        CHECK_INT(cost_walk_others(&l, &cgs, &sel, 2), 100);
        CHECK_INT(l.n_subtrees, 1);
        CHECK(l.n_subtrees == 1 && l.subtrees[0]->walk_ns == 200);
        CHECK_INT(l.total_ns[STAGE_WALK], 300);
        cost_ledger_done(&l);
        cg_records_done(&cgs);
}

/* A run: each job's worker time to its process, the event loop's part shared by it. */
TEST(run_charged_per_job_in_proportion) {
        struct cost_ledger l = {};
        struct cg_rec a = { .path = "/a" }, b = { .path = "/b" };
        struct proc_rec p = { .pid = 10, .cg = &a }, q = { .pid = 11, .cg = &b };
        struct migrate_job jobs[] = { { .userdata = &p, .cpu_ns = 300 }, { .userdata = &q, .cpu_ns = 100 },
                                      { .userdata = &p, .cpu_ns = 0 } };

        CHECK_INT(cost_charge_run(&l, jobs, 3, 40), 0);
        CHECK_INT(p.cost_ns[STAGE_MIGRATE], 300 + 30);
        CHECK_INT(q.cost_ns[STAGE_MIGRATE], 100 + 10);
        CHECK_INT(a.cost_ns[STAGE_MIGRATE], 330);
        CHECK_INT(l.total_ns[STAGE_MIGRATE], 440);
        /* Nothing ran on a worker: the event loop's part is not given. */
        jobs[0].cpu_ns = jobs[1].cpu_ns = 0;
        CHECK_INT(cost_charge_run(&l, jobs, 3, 40), 40);
        CHECK_INT(l.total_ns[STAGE_MIGRATE], 440);
}

static void depart(void *userdata, const struct cg_rec *c) {
        cost_depart(userdata, c);
}

/* A record freed: its time stays in the totals, as departed; the totals stay the sum
 * of what the records and departed hold. */
TEST(departed_keeps_totals_whole) {
        struct cost_ledger l = {};
        struct cg_records cgs;
        struct cgroup_entry e1 = { .path = "/one" }, e2 = { .path = "/two" };
        struct cg_rec *one, *two;

        cg_records_init(&cgs);
        one = cg_records_get(&cgs, "/nonexistent", &e1);
        two = cg_records_get(&cgs, "/nonexistent", &e2);
        CHECK(one && two);
        if (!one || !two)
                return;
        cost_charge(&l, one, STAGE_READ, 5);
        cost_charge(&l, two, STAGE_READ, 7);
        one->seen = true;
        cg_records_set_depart(&cgs, depart, &l);
        cg_records_sweep(&cgs);
        CHECK_INT(cgs.n, 1);
        CHECK_INT(l.departed_ns[STAGE_READ], 7);
        CHECK_INT(sum_stage(&cgs, STAGE_READ) + l.departed_ns[STAGE_READ], l.total_ns[STAGE_READ]);
        cg_records_done(&cgs);
}

TEST(unattributed_never_goes_down) {
        struct cost_ledger l = { .unattributed_ns = UINT64_C(1) << 62 };

        cost_update_unattributed(&l);
        CHECK_INT(l.unattributed_ns, UINT64_C(1) << 62);
        l.unattributed_ns = 0;
        cost_update_unattributed(&l);
        CHECK(l.unattributed_ns > 0);       /* this process has run */
        CHECK(cost_unattributed_now(&l) >= l.unattributed_ns);
}

DEFINE_TEST_MAIN()
