/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Sampled scans (daemon/sampled-scan.h) on their own: which nodes count as where a
 * process works, when a full read records its huge VMAs (settled only, nothing planned
 * or held back), and what makes a later scan read numa_maps again (its nodes or its
 * size changed: the records are forgotten). The sampled placement itself is
 * test-vma-sample's. */
#include <stdlib.h>
#include "config.h"
#include "numa_maps.h"
#include "proc-records.h"
#include "sampled-scan.h"
#include "test.h"
#include "topology.h"

static struct topology *topo;   /* tests/data/sys/2n2c */

/* A 2 GiB VMA (huge at the default huge_vma = 1G), 1.5 GiB of it on node 0 and 0.5 on
 * node 1, and a small one. */
static const char maps_text[] =
        "7f0000000000 default anon=524288 dirty=524288 N0=393216 N1=131072 kernelpagesize_kB=4\n"
        "7f0100000000 default anon=16 dirty=16 N0=16 kernelpagesize_kB=4\n";
static const uint64_t ends[] = { 0x7f0080000000, 0x7f0100010000 };

struct fixture {
        struct nb_config cfg;
        struct scan_env env;
        struct proc_rec p;
        struct numa_maps *maps;
};

static void start(struct fixture *f) {
        config_defaults(&f->cfg);
        f->env = (struct scan_env) { .cfg = &f->cfg, .topo = topo, .proc_root = "/nonexistent" };
        f->p = (struct proc_rec) { .pid = 4242, .rss_kb = 2 * 1024 * 1024, .scans = 3 };
        f->maps = NULL;
        if (numa_maps_parse(maps_text, sizeof(maps_text) - 1, &f->maps) < 0)
                abort();
}

static void done(struct fixture *f) {
        proc_records_drop_huge(&f->p);
        numa_maps_free(f->maps);
        config_done(&f->cfg);
}

static nb_nodemask node0(void) {
        nb_nodemask m;

        nodemask_zero(&m);
        nodemask_set(&m, topo->nodes[0].id);
        return m;
}

TEST(cpu_nodes_above_the_share) {
        struct fixture f;
        nb_nodemask m;

        start(&f);
        /* At the default min_cpu_share_pct (60): the node with 90% only. */
        m = sampled_scan_cpu_nodes(&f.env, (const uint64_t[]) { 900, 100 });
        CHECK(nodemask_test(&m, topo->nodes[0].id) && !nodemask_test(&m, topo->nodes[1].id));
        f.cfg.min_cpu_share_pct = 10;
        m = sampled_scan_cpu_nodes(&f.env, (const uint64_t[]) { 900, 100 });
        CHECK(nodemask_test(&m, topo->nodes[0].id) && nodemask_test(&m, topo->nodes[1].id));
        m = sampled_scan_cpu_nodes(&f.env, (const uint64_t[]) { 0, 0 });
        CHECK(nodemask_empty(&m));
        done(&f);
}

/* Settled, nothing planned: its one huge VMA recorded with its pages per node. */
TEST(a_settled_read_records_its_huge_vmas) {
        struct fixture f;
        struct plan plan = { .reason = REASON_LOCAL, .full_target = -1 };

        start(&f);
        sampled_scan_note(&f.env, &f.p, f.maps, ends, &plan, true, node0());
        CHECK_INT(f.p.n_huge, 1);
        CHECK(f.p.n_huge == 1 && f.p.huge[0].start == 0x7f0000000000 && f.p.huge[0].end == 0x7f0080000000);
        CHECK(f.p.n_huge == 1 && f.p.huge[0].pages[topo->nodes[0].id] == 393216 &&
              f.p.huge[0].pages[topo->nodes[1].id] == 131072);
        CHECK_INT(f.p.huge_rss_kb, 2 * 1024 * 1024);
        done(&f);
}

/* Not settled, moves planned, or held back for a while (cooldown, a full target):
 * nothing recorded, and what was is forgotten. */
TEST(nothing_recorded_unless_settled) {
        struct fixture f;
        struct plan plan = { .reason = REASON_LOCAL, .full_target = -1 };
        struct plan_move mv = { .start = 0x7f0000000000, .end = 0x7f0000100000, .target = 0 };

        start(&f);
        sampled_scan_note(&f.env, &f.p, f.maps, ends, &plan, false, node0());
        CHECK_INT(f.p.n_huge, 0);
        sampled_scan_note(&f.env, &f.p, f.maps, ends, &plan, true, node0());
        CHECK_INT(f.p.n_huge, 1);
        plan.moves = &mv;
        plan.n_moves = 1;
        sampled_scan_note(&f.env, &f.p, f.maps, ends, &plan, true, node0());
        CHECK_INT(f.p.n_huge, 0);
        plan.moves = NULL;
        plan.n_moves = 0;
        plan.reason = REASON_COOLDOWN;
        sampled_scan_note(&f.env, &f.p, f.maps, ends, &plan, true, node0());
        CHECK_INT(f.p.n_huge, 0);
        plan.reason = REASON_LOCAL;
        plan.skipped_bytes[REASON_TARGET_FULL] = 4096;
        sampled_scan_note(&f.env, &f.p, f.maps, ends, &plan, true, node0());
        CHECK_INT(f.p.n_huge, 0);
        /* huge_vma = 0 turns sampled scans off. */
        plan.skipped_bytes[REASON_TARGET_FULL] = 0;
        f.cfg.huge_vma_kb = 0;
        sampled_scan_note(&f.env, &f.p, f.maps, ends, &plan, true, node0());
        CHECK_INT(f.p.n_huge, 0);
        done(&f);
}

/* Its threads on other nodes, or its size changed past the tolerance: read in full
 * (false), the records forgotten. */
TEST(a_change_means_a_full_read) {
        struct fixture f;
        struct plan plan = { .reason = REASON_LOCAL, .full_target = -1 };
        nb_nodemask both = node0();

        start(&f);
        nodemask_set(&both, topo->nodes[1].id);
        sampled_scan_note(&f.env, &f.p, f.maps, ends, &plan, true, node0());
        CHECK_INT(f.p.n_huge, 1);
        CHECK(!sampled_scan_unchanged(&f.env, &f.p, both, f.p.rss_kb));
        CHECK_INT(f.p.n_huge, 0);
        sampled_scan_note(&f.env, &f.p, f.maps, ends, &plan, true, node0());
        /* Grown by 1/16 (the tolerance is 1/32): changed. */
        CHECK(!sampled_scan_unchanged(&f.env, &f.p, node0(), f.p.rss_kb + f.p.rss_kb / 16));
        CHECK_INT(f.p.n_huge, 0);
        /* Nothing recorded: nothing to sample. */
        CHECK(!sampled_scan_unchanged(&f.env, &f.p, node0(), f.p.rss_kb));
        done(&f);
}

static int intro(void) {
        return topology_read(TEST_DATA_DIR "/sys/2n2c", &topo) < 0;
}

static void outro(void) {
        topology_free(topo);
}

DEFINE_TEST_MAIN_FULL(intro, outro)
