/* SPDX-License-Identifier: GPL-2.0-or-later */
/* decide, on stored inputs with expected plans. Every plan is also checked against
 * the invariant that matters most: no move targets a node outside its VMA's
 * allowed set. */
#include <errno.h>
#include <stdlib.h>
#include "numa_maps.h"
#include "page-agg.h"
#include "plan.h"
#include "policy.h"
#include "topology.h"
#include "test.h"

/* A topology built by hand: n nodes, node i has CPU i, memory per has_mem[i],
 * distances 10 local and dist[i][j] otherwise. */
static struct topology *make_topo(unsigned n, const bool *has_mem, const int dist[][4], uint64_t free_kb) {
        struct topology *t = calloc(1, sizeof(*t));
        t->n_nodes = n;
        t->nodes = calloc(n, sizeof(*t->nodes));
        t->distance = calloc(n * n, sizeof(int));
        t->n_cpus = n;
        t->cpu_node = calloc(n, sizeof(int));
        for (unsigned i = 0; i < n; i++) {
                t->nodes[i].id = i;
                t->nodes[i].has_cpus = true;
                t->nodes[i].has_memory = has_mem[i];
                t->nodes[i].mem_total_kb = has_mem[i] ? 1024 * 1024 : 0;
                t->nodes[i].mem_free_kb = has_mem[i] ? free_kb : 0;
                cpumask_set(&t->nodes[i].cpus, i);
                cpumask_set(&t->online_cpus, i);
                t->cpu_node[i] = (int) i;
                nodemask_set(&t->online, i);
                nodemask_set(&t->with_cpus, i);
                if (has_mem[i])
                        nodemask_set(&t->with_memory, i);
                for (unsigned j = 0; j < n; j++)
                        t->distance[i * n + j] = dist[i][j];
        }
        return t;
}

static const int dist2[4][4] = { { 10, 20 }, { 20, 10 } };
static const int dist4[4][4] = {
        { 10, 16, 22, 16 }, { 16, 10, 16, 22 }, { 22, 16, 10, 16 }, { 16, 22, 16, 10 } };

static const struct plan_params defaults = {
        .min_cpu_share_pct = 60, .cooldown_ms = 30000, .free_floor_pct = 5,
        .min_misplaced_kb = 2048, .max_bytes = 0,
};

struct run {
        struct numa_maps *maps;
        struct plan plan;
        uint64_t ends[64];
        uint64_t vma_span;      /* the size of every VMA; 0: 1 GiB */
        nb_nodemask keep_before; /* plan_input's: none unless a test sets it */
        bool placed;             /* plan_input's placement: none unless a test sets it */
        int placed_node;
        uint64_t placed_at_ms;
        const struct plan_share *share; /* plan_input's groups' decisions: none unless set */
};

/* Parses numa_maps text, gives every VMA a range of rn->vma_span bytes, and decides. */
static int decide(struct run *rn, const struct topology *t, const char *text, const char *mems,
                  const uint64_t *cpu, const struct plan_params *p, const struct plan_history *h, size_t nh,
                  uint64_t now, uint64_t *reserved) {
        struct plan_input in = { .cpu_ns = cpu, .history = h, .n_history = nh, .now_ms = now,
                                 .keep_before = rn->keep_before, .placed = rn->placed,
                                 .placed_node = rn->placed_node, .placed_at_ms = rn->placed_at_ms,
                                 .share = rn->share };
        uint64_t zero[4] = {};
        int r = numa_maps_parse(text, strlen(text), &rn->maps);
        if (r < 0)
                return r;
        for (size_t i = 0; i < rn->maps->n_vmas && i < 64; i++)
                rn->ends[i] = rn->maps->vmas[i].start + (rn->vma_span ?: 1ull << 30);
        in.maps = rn->maps;
        in.vma_end = rn->ends;
        nodemask_parse(mems, &in.mems_allowed);
        r = plan_decide(t, &in, p, reserved ? reserved : zero, &rn->plan);
        if (r < 0)
                return r;
        /* The invariant: never outside the allowed set. */
        for (size_t i = 0; i < rn->plan.n_moves; i++) {
                const struct vma *v = &rn->maps->vmas[rn->plan.moves[i].vma];
                nb_nodemask allowed;
                policy_allowed_nodes(&v->policy, &in.mems_allowed, &t->with_memory, plan_policy_rules(p), &allowed);
                CHECK(nodemask_test(&allowed, (unsigned) rn->plan.moves[i].target));
        }
        return 0;
}

/* decide() with the default parameters, no history, nothing reserved. */
static int decide_default(struct run *rn, const struct topology *t, const char *text, const char *mems,
                          const uint64_t *cpu) {
        return decide(rn, t, text, mems, cpu, &defaults, NULL, 0, 0, NULL);
}

static void done(struct run *rn) {
        plan_done(&rn->plan);
        numa_maps_free(rn->maps);
        *rn = (struct run) {};
}

static const bool mem2[] = { true, true }, mem4[] = { true, true, true, true };

/* The two machines: 2 nodes at distance 20, and a ring of 4 (16 to the neighbours,
 * 22 across); every node with 1 GiB of memory, 900 MiB of it free. */
static struct topology *topo2(void) {
        return make_topo(2, mem2, dist2, 900 * 1024);
}

static struct topology *topo4(void) {
        return make_topo(4, mem4, dist4, 900 * 1024);
}

/* (a) default policy, 512 MiB on node 0, threads on node 1: all to node 1. */
TEST(default_policy_moves_to_the_threads_node) {
        _cleanup_(topology_freep) struct topology *t = topo2();
        const uint64_t cpu[] = { 0, 1000000 };
        struct run rn = {};

        CHECK_INT(decide_default(&rn, t, "7f0000000000 default anon=131072 dirty=131072 N0=131072 kernelpagesize_kB=4\n",
                                 "0-1", cpu), 0);
        CHECK_INT(rn.plan.n_moves, 1);
        CHECK_INT(rn.plan.hot_node, 1);
        CHECK_INT(rn.plan.moves[0].target, 1);
        CHECK_INT(rn.plan.moves[0].bytes, 512ull << 20);
        CHECK_INT(rn.plan.moves[0].start, 0x7f0000000000ull);
        CHECK_INT(rn.plan.reason, REASON_NONE);
        done(&rn);
}

/* Sparse mappings (an ASan shadow, a heap reservation): a 16 TiB VMA with 4 MiB in
 * it is left alone (the executor would walk 16 TiB), with its bytes counted. */
/* A process whose threads were just placed keeps only the moves to their node. */
TEST(keep_target_drops_the_other_moves) {
        struct plan_move moves[3] = {
                { .target = 1, .bytes = 100 }, { .target = 0, .bytes = 30 }, { .target = 1, .bytes = 5 },
        };
        struct plan pl = { .moves = moves, .n_moves = 3, .bytes = 135 };

        CHECK_INT(plan_keep_target(&pl, 1), 30);
        CHECK_INT(pl.n_moves, 2);
        CHECK_INT(pl.bytes, 105);
        CHECK(pl.moves[0].target == 1 && pl.moves[1].target == 1 && pl.moves[1].bytes == 5);
        CHECK_INT(plan_keep_target(&pl, 0), 105);
        CHECK_INT(pl.n_moves, 0);
        CHECK_INT(pl.bytes, 0);
}

/* What placing the threads on a node would leave remote: a VMA bound to node 0 cannot
 * come to node 1; a default one can; an interleaved one moves nowhere. */
TEST(stuck_away_by_policy) {
        struct topology *t = topo2();
        struct numa_maps *maps = NULL;
        const char *text = "7f0000000000 bind:0 anon=256 N0=256 kernelpagesize_kB=4\n"
                           "7f1000000000 default anon=512 N0=256 N1=256 kernelpagesize_kB=4\n"
                           "7f2000000000 interleave:0-1 anon=128 N0=64 N1=64 kernelpagesize_kB=4\n";
        uint64_t cpu[2] = { 0, 1000000 }, stuck[2];
        struct plan_input in = { .cpu_ns = cpu };

        CHECK_INT(numa_maps_parse(text, strlen(text), &maps), 0);
        in.maps = maps;
        nodemask_parse("0-1", &in.mems_allowed);
        plan_stuck_away(t, &in, &defaults, stuck);
        /* On node 0: only the interleaved VMA's 64 pages on node 1 stay away. */
        CHECK_INT(stuck[0], 64 * 4096);
        /* On node 1: the bound VMA's 256 pages and the interleaved 64 on node 0. */
        CHECK_INT(stuck[1], (256 + 64) * 4096);
        numa_maps_free(maps);
        topology_free(t);
}

TEST(sparse_16tib_vma_left_alone) {
        _cleanup_(topology_freep) struct topology *t = topo2();
        const uint64_t cpu[] = { 0, 1000000 };
        struct run rn = { .vma_span = 16ull << 40 };

        CHECK_INT(decide_default(&rn, t, "100000000000 default anon=1024 dirty=1024 N0=1024 kernelpagesize_kB=4\n",
                                 "0-1", cpu), 0);
        CHECK_INT(rn.plan.n_moves, 0);
        CHECK_INT(rn.plan.reason, REASON_SPARSE);
        CHECK_INT(rn.plan.skipped_bytes[REASON_SPARSE], 4ull << 20);
        CHECK_STR(plan_reason_name(rn.plan.reason), "sparse");
        done(&rn);
}

/* 64 GiB with exactly 1/64 resident is planned; one page less is sparse. */
TEST(sparse_64gib_vma_planned_from_1_64th_resident) {
        _cleanup_(topology_freep) struct topology *t = topo2();
        const uint64_t cpu[] = { 0, 1000000 };
        struct run rn = { .vma_span = 64ull << 30 };

        CHECK_INT(decide_default(&rn, t, "100000000000 default anon=262144 N0=262144 kernelpagesize_kB=4\n",
                                 "0-1", cpu), 0);
        CHECK_INT(rn.plan.n_moves, 1);
        CHECK_INT(rn.plan.moves[0].target, 1); /* (bytes: what node 1 has room for) */
        done(&rn);
        rn.vma_span = 64ull << 30;
        CHECK_INT(decide_default(&rn, t, "100000000000 default anon=262143 N0=262143 kernelpagesize_kB=4\n",
                                 "0-1", cpu), 0);
        CHECK_INT(rn.plan.n_moves, 0);
        CHECK_INT(rn.plan.reason, REASON_SPARSE);
        done(&rn);
}

/* Below 64 GiB a VMA is never sparse: 63 GiB with almost nothing is planned. */
TEST(sparse_rule_not_below_64gib) {
        _cleanup_(topology_freep) struct topology *t = topo2();
        const uint64_t cpu[] = { 0, 1000000 };
        struct run rn = { .vma_span = 63ull << 30 };

        CHECK_INT(decide_default(&rn, t, "100000000000 default anon=1024 N0=1024 kernelpagesize_kB=4\n",
                                 "0-1", cpu), 0);
        CHECK_INT(rn.plan.n_moves, 1);
        done(&rn);
}

TEST(already_local_nothing_to_do) {
        _cleanup_(topology_freep) struct topology *t = topo2();
        const uint64_t cpu[] = { 5, 0 };
        struct run rn = {};

        CHECK_INT(decide_default(&rn, t, "7f0000000000 default anon=100 N0=100 kernelpagesize_kB=4\n", "0-1", cpu), 0);
        CHECK_INT(rn.plan.n_moves, 0);
        CHECK_INT(rn.plan.reason, REASON_LOCAL);
        done(&rn);
}

/* Hysteresis: 55% on node 1 is not enough at 60%. */
TEST(cpu_share_below_threshold_no_move) {
        _cleanup_(topology_freep) struct topology *t = topo2();
        const uint64_t cpu[] = { 45, 55 };
        struct run rn = {};

        CHECK_INT(decide_default(&rn, t, "7f0000000000 default anon=131072 N0=131072 kernelpagesize_kB=4\n", "0-1",
                                 cpu), 0);
        CHECK_INT(rn.plan.n_moves, 0);
        CHECK_INT(rn.plan.reason, REASON_CPU_SPREAD);
        done(&rn);
}

/* decide() with the shipped keep_node_share_pct (20). */
static int decide_keep(struct run *rn, const struct topology *t, const char *text, const char *mems,
                       const uint64_t *cpu) {
        struct plan_params p = defaults;

        p.keep_node_share_pct = 20;
        return decide(rn, t, text, mems, cpu, &p, NULL, 0, 0, NULL);
}

/* keep_node_share_pct: a process whose threads span both nodes, each half of its
 * memory on one (the steady benchmark): 38% of its CPU time on node 0 keeps node 0's
 * pages there, although node 1 is hot. */
TEST(spanning_process_keeps_pages_where_its_threads_run) {
        _cleanup_(topology_freep) struct topology *t = topo2();
        const uint64_t cpu[] = { 38, 62 };
        struct run rn = {};

        CHECK_INT(decide_keep(&rn, t, "7f0000000000 default anon=131072 N0=65536 N1=65536 kernelpagesize_kB=4\n",
                              "0-1", cpu), 0);
        CHECK_INT(rn.plan.hot_node, 1);
        CHECK_INT(rn.plan.n_moves, 0);
        CHECK_INT(rn.plan.reason, REASON_SOURCE_IN_USE);
        CHECK_STR(plan_reason_name(rn.plan.reason), "source-in-use");
        CHECK_INT(rn.plan.skipped_bytes[REASON_SOURCE_IN_USE], 256ull << 20);
        CHECK(nodemask_test(&rn.plan.keep_nodes, 0));
        done(&rn);
}

/* Below the share (10%), node 0's pages move to the hot node, and the move keeps nothing. */
TEST(node_below_keep_share_gives_its_pages_up) {
        _cleanup_(topology_freep) struct topology *t = topo2();
        const uint64_t cpu[] = { 10, 90 };
        struct run rn = {};

        CHECK_INT(decide_keep(&rn, t, "7f0000000000 default anon=131072 N0=65536 N1=65536 kernelpagesize_kB=4\n",
                              "0-1", cpu), 0);
        CHECK_INT(rn.plan.n_moves, 1);
        CHECK_INT(rn.plan.moves[0].target, 1);
        CHECK_INT(rn.plan.moves[0].bytes, 256ull << 20);
        CHECK(!nodemask_test(&rn.plan.moves[0].keep, 0));
        CHECK_INT(rn.plan.skipped_bytes[REASON_SOURCE_IN_USE], 0);
        done(&rn);
}

/* Four nodes: node 0 (25%) keeps its pages, nodes 2 (15%) and 3 (0%) give theirs to the
 * hot node 1, and the move carries node 0 as kept so that the executor leaves it. */
TEST(keep_share_per_node) {
        _cleanup_(topology_freep) struct topology *t = topo4();
        const uint64_t cpu[] = { 25, 60, 15, 0 };
        struct run rn = {};

        CHECK_INT(decide_keep(&rn, t, "7f0000000000 default anon=3072 N0=1024 N2=1024 N3=1024 kernelpagesize_kB=4\n",
                              "0-3", cpu), 0);
        CHECK_INT(rn.plan.hot_node, 1);
        CHECK_INT(rn.plan.n_moves, 1);
        CHECK_INT(rn.plan.moves[0].bytes, 8ull << 20);
        CHECK(nodemask_test(&rn.plan.moves[0].keep, 0));
        CHECK(!nodemask_test(&rn.plan.moves[0].keep, 2));
        CHECK_INT(rn.plan.skipped_bytes[REASON_SOURCE_IN_USE], 4ull << 20);
        done(&rn);
}

/* keep_before: node 0's threads paused for a window (the steady-churn benchmark: a
 * reader pinned to node 1 waiting at a barrier while the other still touched its half,
 * so node 1 had 8% of the window), but node 1 was busy in the window before and still
 * has a thread confined to it: its pages stay, with the reason the operator sees for
 * kept pages. Without keep_before the same window moves them to node 0. */
TEST(paused_confined_thread_keeps_its_node_for_a_window) {
        _cleanup_(topology_freep) struct topology *t = topo2();
        const uint64_t cpu[] = { 92, 8 };
        const char *maps = "7f0000000000 default anon=131072 N0=65536 N1=65536 kernelpagesize_kB=4\n";
        struct run rn = {};

        nodemask_set(&rn.keep_before, 1);
        CHECK_INT(decide_keep(&rn, t, maps, "0-1", cpu), 0);
        CHECK_INT(rn.plan.hot_node, 0);
        CHECK_INT(rn.plan.n_moves, 0);
        CHECK_INT(rn.plan.reason, REASON_SOURCE_IN_USE);
        CHECK_INT(rn.plan.skipped_bytes[REASON_SOURCE_IN_USE], 256ull << 20);
        CHECK(nodemask_test(&rn.plan.keep_nodes, 1));
        done(&rn);

        rn = (struct run) {};
        CHECK_INT(decide_keep(&rn, t, maps, "0-1", cpu), 0);
        CHECK_INT(rn.plan.n_moves, 1);
        CHECK_INT(rn.plan.moves[0].target, 0);
        CHECK_INT(rn.plan.moves[0].bytes, 256ull << 20);
        done(&rn);
}

/* keep_before never keeps the hot node (its pages are where they belong) and, like the
 * share, is off with keep_node_share_pct 100 (only the hot node keeps its pages). */
TEST(keep_before_off_at_share_100) {
        _cleanup_(topology_freep) struct topology *t = topo2();
        const uint64_t cpu[] = { 92, 8 };
        struct run rn = {};
        struct plan_params p = defaults;

        p.keep_node_share_pct = 100;
        nodemask_set(&rn.keep_before, 0);
        nodemask_set(&rn.keep_before, 1);
        CHECK_INT(decide(&rn, t, "7f0000000000 default anon=131072 N0=65536 N1=65536 kernelpagesize_kB=4\n",
                         "0-1", cpu, &p, NULL, 0, 0, NULL), 0);
        CHECK_INT(rn.plan.n_moves, 1);
        CHECK(!nodemask_test(&rn.plan.keep_nodes, 0));
        CHECK(!nodemask_test(&rn.plan.keep_nodes, 1));
        done(&rn);
}

/* plan_busy_nodes: the nodes at or above the share; none without CPU time. */
TEST(busy_nodes_by_share) {
        _cleanup_(topology_freep) struct topology *t = topo4();
        const uint64_t cpu[] = { 25, 60, 15, 0 }, none[] = { 0, 0, 0, 0 };
        nb_nodemask b = plan_busy_nodes(t, cpu, 20);

        CHECK(nodemask_test(&b, 0) && nodemask_test(&b, 1));
        CHECK(!nodemask_test(&b, 2) && !nodemask_test(&b, 3));
        b = plan_busy_nodes(t, none, 20);
        CHECK(nodemask_empty(&b));
        b = plan_busy_nodes(t, cpu, 0);
        CHECK(nodemask_empty(&b));
}

/* Policy first: pages outside the VMA's allowed set move even from a kept node. */
TEST(keep_share_never_keeps_pages_outside_the_policy) {
        _cleanup_(topology_freep) struct topology *t = topo2();
        const uint64_t cpu[] = { 38, 62 };
        struct run rn = {};

        CHECK_INT(decide_keep(&rn, t, "7f0000000000 bind:1 anon=131072 N0=131072 kernelpagesize_kB=4\n",
                              "0-1", cpu), 0);
        CHECK_INT(rn.plan.n_moves, 1);
        CHECK_INT(rn.plan.moves[0].target, 1);
        CHECK_INT(rn.plan.moves[0].bytes, 512ull << 20);
        CHECK(!nodemask_test(&rn.plan.moves[0].keep, 0));
        done(&rn);
}

TEST(no_cpu_time_no_move) {
        _cleanup_(topology_freep) struct topology *t = topo2();
        const uint64_t cpu[] = { 0, 0 };
        struct run rn = {};

        CHECK_INT(decide_default(&rn, t, "7f0000000000 default anon=131072 N0=131072 kernelpagesize_kB=4\n", "0-1",
                                 cpu), 0);
        CHECK_INT(rn.plan.reason, REASON_NO_CPU_TIME);
        done(&rn);
}

/* (b) bind to {0,1}: balanced to node 1. */
TEST(bind_to_both_nodes_moves_to_the_hot_one) {
        _cleanup_(topology_freep) struct topology *t = topo2();
        const uint64_t cpu[] = { 0, 9 };
        struct run rn = {};

        CHECK_INT(decide_default(&rn, t, "7f0000000000 bind:0-1 anon=131072 N0=131072 kernelpagesize_kB=4\n", "0-1",
                                 cpu), 0);
        CHECK_INT(rn.plan.n_moves, 1);
        CHECK_INT(rn.plan.moves[0].target, 1);
        done(&rn);
}

/* (c) 4 nodes, bind {1,3}, memory on 1, threads on 3: to 3, never 0 or 2. */
TEST(bind_subset_moves_within_it) {
        _cleanup_(topology_freep) struct topology *t = topo4();
        const uint64_t cpu[] = { 0, 0, 0, 9 };
        struct run rn = {};

        CHECK_INT(decide_default(&rn, t, "7f0000000000 bind:1,3 anon=131072 N1=131072 kernelpagesize_kB=4\n", "0-3",
                                 cpu), 0);
        CHECK_INT(rn.plan.n_moves, 1);
        CHECK_INT(rn.plan.moves[0].target, 3);
        done(&rn);
}

/* bind {0,2}, threads on 1: both allowed nodes are as far as each other from 1
 * (16 vs 16): memory on 0 stays. */
TEST(bind_equidistant_nodes_memory_stays) {
        _cleanup_(topology_freep) struct topology *t = topo4();
        const uint64_t cpu[] = { 0, 9, 0, 0 };
        struct run rn = {};

        CHECK_INT(decide_default(&rn, t, "7f0000000000 bind:0,2 anon=131072 N0=131072 kernelpagesize_kB=4\n", "0-3",
                                 cpu), 0);
        CHECK_INT(rn.plan.n_moves, 0);
        CHECK_INT(rn.plan.reason, REASON_LOCAL);
        done(&rn);
}

/* bind {0,1}, threads on 2: nearest allowed to 2 is 1 (16) over 0 (22): to 1. */
TEST(bind_moves_to_the_nearest_allowed_node) {
        _cleanup_(topology_freep) struct topology *t = topo4();
        const uint64_t cpu[] = { 0, 0, 9, 0 };
        struct run rn = {};

        CHECK_INT(decide_default(&rn, t, "7f0000000000 bind:0-1 anon=131072 N0=131072 kernelpagesize_kB=4\n", "0-3",
                                 cpu), 0);
        CHECK_INT(rn.plan.n_moves, 1);
        CHECK_INT(rn.plan.moves[0].target, 1);
        done(&rn);
}

/* (d) cpuset allows node 0 only, threads on node 1: nothing. */
TEST(cpuset_without_the_hot_node_no_move) {
        _cleanup_(topology_freep) struct topology *t = topo2();
        const uint64_t cpu[] = { 0, 9 };
        struct run rn = {};

        CHECK_INT(decide_default(&rn, t, "7f0000000000 default anon=131072 N0=131072 kernelpagesize_kB=4\n", "0", cpu),
                  0);
        CHECK_INT(rn.plan.n_moves, 0);
        done(&rn);
}

/* Pages outside the allowed set (cpuset shrank to {1}) move into it. */
TEST(pages_outside_the_cpuset_move_into_it) {
        _cleanup_(topology_freep) struct topology *t = topo2();
        const uint64_t cpu[] = { 9, 0 };
        struct run rn = {};

        CHECK_INT(decide_default(&rn, t, "7f0000000000 default anon=131072 N0=131072 kernelpagesize_kB=4\n", "1", cpu),
                  0);
        CHECK_INT(rn.plan.n_moves, 1);
        CHECK_INT(rn.plan.moves[0].target, 1);
        done(&rn);
}

/* (e) interleave: untouched, and not even counted as misplaced. */
TEST(interleave_untouched) {
        _cleanup_(topology_freep) struct topology *t = topo2();
        const uint64_t cpu[] = { 0, 9 };
        struct run rn = {};

        CHECK_INT(decide_default(&rn, t,
                                 "7f0000000000 interleave:0-1 anon=131072 N0=65536 N1=65536 kernelpagesize_kB=4\n",
                                 "0-1", cpu), 0);
        CHECK_INT(rn.plan.n_moves, 0);
        CHECK_INT(rn.plan.reason, REASON_LOCAL);
        done(&rn);
}

TEST(preferred_left_alone_by_default) {
        _cleanup_(topology_freep) struct topology *t = topo2();
        const uint64_t cpu[] = { 0, 9 };
        struct run rn = {};

        CHECK_INT(decide_default(&rn, t, "7f0000000000 prefer:0 anon=131072 N0=131072 kernelpagesize_kB=4\n", "0-1",
                                 cpu), 0);
        CHECK_INT(rn.plan.n_moves, 0);
        CHECK_INT(rn.plan.reason, REASON_POLICY);
        done(&rn);
}

/* move_preferred: prefer:0 allows only node 0, nothing to gain; prefer (many) over
 * both nodes moves. */
TEST(preferred_moved_when_configured) {
        _cleanup_(topology_freep) struct topology *t = topo2();
        const uint64_t cpu[] = { 0, 9 };
        struct plan_params p = defaults;
        struct run rn = {};

        p.move_preferred = true;
        CHECK_INT(decide(&rn, t, "7f0000000000 prefer:0 anon=131072 N0=131072 kernelpagesize_kB=4\n", "0-1", cpu, &p,
                         NULL, 0, 0, NULL), 0);
        CHECK_INT(rn.plan.n_moves, 0);
        done(&rn);
        CHECK_INT(decide(&rn, t, "7f0000000000 prefer (many):0-1 anon=131072 N0=131072 kernelpagesize_kB=4\n", "0-1",
                         cpu, &p, NULL, 0, 0, NULL), 0);
        CHECK_INT(rn.plan.n_moves, 1);
        done(&rn);
}

/* A policy with the balancing flag (MPOL_F_NUMA_BALANCING) asks the kernel's NUMA
 * balancing for it: left to the kernel while kernel.numa_balancing is on, balanced
 * within the bind set like any other when it is off. */
TEST(balancing_flag_left_to_the_kernel_when_it_balances) {
        _cleanup_(topology_freep) struct topology *t = topo2();
        const char *text = "7f0000000000 bind=balancing:0-1 anon=131072 N0=131072 kernelpagesize_kB=4\n";
        const uint64_t cpu[] = { 0, 9 };
        struct plan_params p = defaults;
        struct run rn = {};

        p.kernel_balances = true;
        CHECK_INT(decide(&rn, t, text, "0-1", cpu, &p, NULL, 0, 0, NULL), 0);
        CHECK_INT(rn.plan.n_moves, 0);
        CHECK_INT(rn.plan.reason, REASON_KERNEL_BALANCED);
        CHECK_STR(plan_reason_name(rn.plan.reason), "kernel-balanced");
        done(&rn);
        p.kernel_balances = false;
        CHECK_INT(decide(&rn, t, text, "0-1", cpu, &p, NULL, 0, 0, NULL), 0);
        CHECK_INT(rn.plan.n_moves, 1);
        CHECK_INT(rn.plan.moves[0].target, 1);
        done(&rn);
        /* Without the flag, the kernel's balancing never touches a bind policy. */
        p.kernel_balances = true;
        CHECK_INT(decide(&rn, t, "7f0000000000 bind:0-1 anon=131072 N0=131072 kernelpagesize_kB=4\n", "0-1", cpu, &p,
                         NULL, 0, 0, NULL), 0);
        CHECK_INT(rn.plan.n_moves, 1);
        done(&rn);
}

/* Shared pages that no group decides are never planned: the other processes that map
 * them may not allow the target. move_shared = yes says so ("shared-unverified"). */
TEST(shared_left_alone_even_when_configured) {
        _cleanup_(topology_freep) struct topology *t = topo2();
        const uint64_t cpu[] = { 0, 9 };
        const char *text = "7f0000000000 default anon=131072 mapmax=2 N0=131072 kernelpagesize_kB=4\n";
        struct plan_params p = defaults;
        struct run rn = {};

        CHECK_INT(decide(&rn, t, text, "0-1", cpu, &p, NULL, 0, 0, NULL), 0);
        CHECK_INT(rn.plan.n_moves, 0);
        CHECK_INT(rn.plan.reason, REASON_SHARED);
        done(&rn);
        p.move_shared = true;
        CHECK_INT(decide(&rn, t, text, "0-1", cpu, &p, NULL, 0, 0, NULL), 0);
        CHECK_INT(rn.plan.n_moves, 0);
        CHECK_INT(rn.plan.reason, REASON_SHARED_UNVERIFIED);
        CHECK_INT(rn.plan.skipped_bytes[REASON_SHARED_UNVERIFIED], 512ull << 20);
        CHECK_STR(plan_reason_name(rn.plan.reason), "shared-unverified");
        done(&rn);
}

/* A group's shared object goes to the group's target, not this process's hot node, and
 * only with move_shared; not when this process's own cpuset leaves the target out
 * (counted as shared-unverified). */
TEST(group_shared_to_the_groups_target) {
        _cleanup_(topology_freep) struct topology *t = topo2();
        const uint64_t cpu[] = { 9, 0 };
        const char *text = "7f0000000000 default file=/dev/zero\\040(deleted) dirty=131072 mapped=131072 mapmax=4 "
                           "N0=131072 kernelpagesize_kB=4\n"
                           "7f1000000000 default anon=131072 dirty=131072 N1=131072 kernelpagesize_kB=4\n";
        const struct plan_share share[] = { { .target = 1 }, { .target = -1 } };
        struct plan_params p = defaults;
        struct run rn = { .share = share };

        p.move_shared = true;
        CHECK_INT(decide(&rn, t, text, "0-1", cpu, &p, NULL, 0, 0, NULL), 0);
        CHECK_INT(rn.plan.hot_node, 0);
        CHECK_INT(rn.plan.n_moves, 2);
        for (size_t i = 0; i < rn.plan.n_moves; i++) {
                CHECK_INT(rn.plan.moves[i].shared, rn.plan.moves[i].start == 0x7f0000000000ull);
                CHECK_INT(rn.plan.moves[i].target, rn.plan.moves[i].shared ? 1 : 0);
        }
        done(&rn);
        rn.share = share;
        p.move_shared = false;
        CHECK_INT(decide(&rn, t, text, "0-1", cpu, &p, NULL, 0, 0, NULL), 0);
        CHECK_INT(rn.plan.n_moves, 1);
        CHECK(!rn.plan.moves[0].shared);
        CHECK_INT(rn.plan.moves[0].start, 0x7f1000000000ull); /* the shared one is local to its own threads */
        done(&rn);
        rn.share = share;
        p.move_shared = true;
        CHECK_INT(decide(&rn, t, text, "0", cpu, &p, NULL, 0, 0, NULL), 0);
        for (size_t i = 0; i < rn.plan.n_moves; i++)
                CHECK(!rn.plan.moves[i].shared);
        CHECK_INT(rn.plan.skipped_bytes[REASON_SHARED_UNVERIFIED], 512ull << 20);
        done(&rn);
}

/* 1 MiB misplaced < 2 MiB. */
TEST(below_min_misplaced_no_move) {
        _cleanup_(topology_freep) struct topology *t = topo2();
        const uint64_t cpu[] = { 0, 9 };
        struct run rn = {};

        CHECK_INT(decide_default(&rn, t, "7f0000000000 default anon=256 N0=256 kernelpagesize_kB=4\n", "0-1", cpu), 0);
        CHECK_INT(rn.plan.n_moves, 0);
        CHECK_INT(rn.plan.reason, REASON_BELOW_THRESHOLD);
        done(&rn);
}

/* Moved to node 0 10 s ago; now node 1 is hot: wait. After the 30 s: go. Moved to
 * the same target: go on at once. */
TEST(cooldown_holds_a_change_of_target) {
        _cleanup_(topology_freep) struct topology *t = topo2();
        const uint64_t cpu[] = { 0, 9 };
        const char *text = "7f0000000000 default anon=131072 N0=131072 kernelpagesize_kB=4\n";
        struct plan_history h = { .start = 0x7f0000000000ull, .target = 0, .when_ms = 100000 };
        struct run rn = {};

        CHECK_INT(decide(&rn, t, text, "0-1", cpu, &defaults, &h, 1, 110000, NULL), 0);
        CHECK_INT(rn.plan.n_moves, 0);
        CHECK_INT(rn.plan.reason, REASON_COOLDOWN);
        done(&rn);
        CHECK_INT(decide(&rn, t, text, "0-1", cpu, &defaults, &h, 1, 140000, NULL), 0);
        CHECK_INT(rn.plan.n_moves, 1);
        done(&rn);
        h.target = 1;
        CHECK_INT(decide(&rn, t, text, "0-1", cpu, &defaults, &h, 1, 110000, NULL), 0);
        CHECK_INT(rn.plan.n_moves, 1);
        done(&rn);
}

/* Moved to node 0 10 s ago, its threads then placed on node 1 by the daemon: the
 * memory follows them at once. Placed before that move, or on another node: the
 * cooldown holds. */
TEST(cooldown_yields_to_a_later_placement) {
        _cleanup_(topology_freep) struct topology *t = topo2();
        const uint64_t cpu[] = { 0, 9 };
        const char *text = "7f0000000000 default anon=131072 N0=131072 kernelpagesize_kB=4\n";
        struct plan_history h = { .start = 0x7f0000000000ull, .target = 0, .when_ms = 100000 };
        struct run rn = { .placed = true, .placed_node = 1, .placed_at_ms = 105000 };

        CHECK_INT(decide(&rn, t, text, "0-1", cpu, &defaults, &h, 1, 110000, NULL), 0);
        CHECK_INT(rn.plan.n_moves, 1);
        CHECK_INT(rn.plan.moves[0].target, 1);
        done(&rn);
        rn.placed_at_ms = 99000;
        CHECK_INT(decide(&rn, t, text, "0-1", cpu, &defaults, &h, 1, 110000, NULL), 0);
        CHECK_INT(rn.plan.n_moves, 0);
        CHECK_INT(rn.plan.reason, REASON_COOLDOWN);
        done(&rn);
        rn.placed_at_ms = 105000;
        rn.placed_node = 0;
        CHECK_INT(decide(&rn, t, text, "0-1", cpu, &defaults, &h, 1, 110000, NULL), 0);
        CHECK_INT(rn.plan.n_moves, 0);
        CHECK_INT(rn.plan.reason, REASON_COOLDOWN);
        done(&rn);
}

/* (i) free-memory floor: node 1 has 40 MiB free of 1 GiB, floor 5% = 51.2 MiB. */
TEST(free_floor_target_full) {
        _cleanup_(topology_freep) struct topology *t = topo2();
        const uint64_t cpu[] = { 0, 9 };
        struct run rn = {};

        t->nodes[1].mem_free_kb = 40 * 1024;
        CHECK_INT(decide_default(&rn, t, "7f0000000000 default anon=131072 N0=131072 kernelpagesize_kB=4\n", "0-1",
                                 cpu), 0);
        CHECK_INT(rn.plan.n_moves, 0);
        CHECK_INT(rn.plan.reason, REASON_TARGET_FULL);
        done(&rn);
}

/* 300 MiB free: room for 300 - 51.2 MiB, the rest waits; the room is reserved, and
 * a second process the same tick finds the node full. */
TEST(free_floor_room_reserved_for_the_tick) {
        _cleanup_(topology_freep) struct topology *t = topo2();
        const uint64_t cpu[] = { 0, 9 };
        uint64_t reserved[2] = {};
        uint64_t room = 300ull * 1024 * 1024 - (1024ull * 1024 * 1024) / 100 * 5;
        struct run rn = {};

        t->nodes[1].mem_free_kb = 300 * 1024;
        CHECK_INT(decide(&rn, t, "7f0000000000 default anon=131072 N0=131072 kernelpagesize_kB=4\n",
                         "0-1", cpu, &defaults, NULL, 0, 0, reserved), 0);
        CHECK_INT(rn.plan.n_moves, 1);
        CHECK_INT(rn.plan.moves[0].bytes, room);
        CHECK_INT(reserved[1], room);
        done(&rn);
        CHECK_INT(decide(&rn, t, "7f0000000000 default anon=131072 N0=131072 kernelpagesize_kB=4\n",
                         "0-1", cpu, &defaults, NULL, 0, 0, reserved), 0);
        CHECK_INT(rn.plan.n_moves, 0);
        CHECK_INT(rn.plan.reason, REASON_TARGET_FULL);
        done(&rn);
}

/* 4 nodes, threads on 0: memory on 2 (22) before 1 (16). */
static const char *const three_vmas =
        "7f0000000000 default anon=1024 N1=1024 kernelpagesize_kB=4\n"
        "7f1000000000 default anon=1024 N2=1024 kernelpagesize_kB=4\n"
        "7f2000000000 default anon=1024 N0=1024 kernelpagesize_kB=4\n";

TEST(largest_gain_first) {
        _cleanup_(topology_freep) struct topology *t = topo4();
        const uint64_t cpu[] = { 9, 0, 0, 0 };
        struct run rn = {};

        CHECK_INT(decide_default(&rn, t, three_vmas, "0-3", cpu), 0);
        CHECK_INT(rn.plan.n_moves, 2);
        CHECK_INT(rn.plan.moves[0].start, 0x7f1000000000ull);
        CHECK_INT(rn.plan.moves[1].start, 0x7f0000000000ull);
        CHECK_INT(rn.plan.bytes, 8ull << 20);
        done(&rn);
}

TEST(max_bytes_caps_the_plan) {
        _cleanup_(topology_freep) struct topology *t = topo4();
        const uint64_t cpu[] = { 9, 0, 0, 0 };
        struct plan_params p = defaults;
        struct run rn = {};

        p.max_bytes = 6ull << 20;
        CHECK_INT(decide(&rn, t, three_vmas, "0-3", cpu, &p, NULL, 0, 0, NULL), 0);
        CHECK_INT(rn.plan.bytes, 6ull << 20);
        CHECK_INT(rn.plan.moves[1].bytes, 2ull << 20);
        done(&rn);
}

/* Gives node index i a hugetlb pool of free pages of size_kb (as topology_read() does
 * from nodeN/hugepages/hugepages-<kB>kB/free_hugepages). */
static void add_pool(struct topology *t, unsigned i, uint64_t size_kb, uint64_t free_pages) {
        struct topo_node *n = &t->nodes[i];

        n->huge = realloc(n->huge, (n->n_huge + 1) * sizeof(*n->huge));
        n->huge[n->n_huge++] = (struct topo_hugepages) { .size_kb = size_kb, .free = free_pages };
        t->n_huge_slots = 0;
        for (unsigned k = 0; k < t->n_nodes; k++) {
                t->nodes[k].huge_slot = t->n_huge_slots;
                t->n_huge_slots += t->nodes[k].n_huge;
        }
}

static const char *const huge8 = "7f0000000000 default huge anon=8 dirty=8 N0=8 kernelpagesize_kB=2048\n";

/* hugetlb: page size carried to the move; the room is the target's free huge pages. */
TEST(hugetlb_page_size_carried_to_the_move) {
        _cleanup_(topology_freep) struct topology *t = topo2();
        const uint64_t cpu[] = { 0, 9 };
        struct run rn = {};

        add_pool(t, 1, 2048, 8);
        CHECK_INT(plan_reserved_len(t), 3);
        CHECK_INT(decide_default(&rn, t, huge8, "0-1", cpu), 0);
        CHECK_INT(rn.plan.n_moves, 1);
        CHECK_INT(rn.plan.moves[0].page_size, 2048 * 1024);
        CHECK_INT(rn.plan.moves[0].bytes, 16ull << 20);
        CHECK(rn.plan.moves[0].hugetlb);
        done(&rn);
}

/* Checked against the pool, not MemFree: plenty of free memory but 3 free huge pages
 * of 2 MiB (and 1 GiB ones, which do not count) moves 3 pages; the rest waits, as
 * "hugetlb-pool". With the floor reached, the pool still takes them. */
TEST(hugetlb_checked_against_the_pool) {
        _cleanup_(topology_freep) struct topology *t = topo2();
        const uint64_t cpu[] = { 0, 9 };
        uint64_t reserved[4] = {};
        struct run rn = {};

        add_pool(t, 1, 2048, 3);
        add_pool(t, 1, 1048576, 4);
        CHECK_INT(decide(&rn, t, huge8, "0-1", cpu, &defaults, NULL, 0, 0, reserved), 0);
        CHECK_INT(rn.plan.n_moves, 1);
        CHECK_INT(rn.plan.moves[0].bytes, 6ull << 20);
        CHECK_INT(rn.plan.skipped_bytes[REASON_HUGE_POOL], 10ull << 20);
        CHECK_INT(reserved[1], 0);              /* MemFree's room untouched */
        CHECK_INT(reserved[2], 6ull << 20);     /* node 1's 2 MiB pool */
        done(&rn);
        /* The same tick, another process: the pool is taken. */
        CHECK_INT(decide(&rn, t, huge8, "0-1", cpu, &defaults, NULL, 0, 0, reserved), 0);
        CHECK_INT(rn.plan.n_moves, 0);
        CHECK_INT(rn.plan.reason, REASON_HUGE_POOL);
        CHECK_STR(plan_reason_name(rn.plan.reason), "hugetlb-pool");
        done(&rn);

        t->nodes[1].mem_free_kb = 1024;         /* below the floor */
        CHECK_INT(decide_default(&rn, t, huge8, "0-1", cpu), 0);
        CHECK_INT(rn.plan.n_moves, 1);
        CHECK_INT(rn.plan.moves[0].bytes, 6ull << 20);
        done(&rn);
}

/* No pool on the target (900 MiB of MemFree): nothing moves. */
TEST(hugetlb_no_pool_no_move) {
        _cleanup_(topology_freep) struct topology *t = topo2();
        const uint64_t cpu[] = { 0, 9 };
        struct run rn = {};

        add_pool(t, 0, 2048, 100);              /* the source's pool does not count */
        CHECK_INT(decide_default(&rn, t, huge8, "0-1", cpu), 0);
        CHECK_INT(rn.plan.n_moves, 0);
        CHECK_INT(rn.plan.reason, REASON_HUGE_POOL);
        done(&rn);
}

TEST(truncated_bind_list_not_trusted) {
        _cleanup_(topology_freep) struct topology *t = topo2();
        const uint64_t cpu[] = { 0, 9 };
        struct run rn = {};

        CHECK_INT(decide_default(&rn, t,
                                 "7f0000000000 bind=static|balancing:0,2,4,6,8,10,12,14,16,18,20,22,24,26,28,3 "
                                 "anon=131072 N0=131072 kernelpagesize_kB=4\n",
                                 "0-1", cpu), 0);
        CHECK_INT(rn.plan.n_moves, 0);
        done(&rn);
}

DEFINE_TEST_MAIN()

/* ---- memory tiers (rule 6), on the stored 2n1m trees: nodes 0 and 1 with a CPU each,
 * node 2 with memory only, 20 from both ---- */

static struct topology *tiered(const char *name) {
        char root[PATH_MAX];
        struct topology *t = NULL;

        snprintf(root, sizeof(root), "%s/sys/%s", TEST_DATA_DIR, name);
        CHECK_INT(topology_read(root, &t), 0);
        return t;
}

/* 64 MiB on the slow node, threads on node 0: nothing planned, and explain says why;
 * whether the kernel put node 2 in a lower tier (2n1m-tiered) or has no tiers (2n1m:
 * the default rule). */
static void slow_memory_stays(const char *tree) {
        _cleanup_(topology_freep) struct topology *t = tiered(tree);
        const uint64_t cpu[] = { 1000000, 0, 0 };
        struct run rn = {};

        if (!t)
                return;
        CHECK_INT(decide_default(&rn, t, "7f0000000000 default anon=16384 N2=16384 kernelpagesize_kB=4\n", "0-2",
                                 cpu), 0);
        CHECK_INT(rn.plan.hot_node, 0);
        CHECK_INT(rn.plan.n_moves, 0);
        CHECK_INT(rn.plan.reason, REASON_LOWER_TIER);
        CHECK_STR(plan_reason_name(rn.plan.reason), "lower-tier");
        CHECK_INT(rn.plan.skipped_bytes[REASON_LOWER_TIER], 64ull << 20);
        done(&rn);
}

TEST(tier_slow_memory_not_misplaced) {
        slow_memory_stays("2n1m-tiered");
        slow_memory_stays("2n1m-dram-tier");
        slow_memory_stays("2n1m");
}

/* slow_nodes names another node: node 2's memory is ordinary again and follows the
 * threads to node 0. */
TEST(tier_override_makes_node2_fast) {
        _cleanup_(topology_freep) struct topology *t = tiered("2n1m-tiered");
        const uint64_t cpu[] = { 1000000, 0, 0 };
        nb_nodemask slow = {};
        struct run rn = {};

        if (!t)
                return;
        nodemask_set(&slow, 1);
        topology_set_slow(t, &slow);
        CHECK_INT(decide_default(&rn, t, "7f0000000000 default anon=16384 N2=16384 kernelpagesize_kB=4\n", "0-2",
                                 cpu), 0);
        CHECK_INT(rn.plan.n_moves, 1);
        if (rn.plan.n_moves)
                CHECK_INT(rn.plan.moves[0].target, 0);
        done(&rn);
}

/* Memory on node 1, threads on node 0: to node 0; with node 0 outside the cpuset, the
 * nearest allowed node is node 2 or 1 (both 20 away) but node 2 is never a target:
 * nothing moves. */
TEST(tier_slow_node_never_a_target) {
        _cleanup_(topology_freep) struct topology *t = tiered("2n1m-tiered");
        const uint64_t cpu[] = { 1000000, 0, 0 };
        struct run rn = {};

        if (!t)
                return;
        CHECK_INT(decide_default(&rn, t, "7f0000000000 default anon=16384 N1=16384 kernelpagesize_kB=4\n", "0-2",
                                 cpu), 0);
        CHECK_INT(rn.plan.n_moves, 1);
        if (rn.plan.n_moves)
                CHECK_INT(rn.plan.moves[0].target, 0);
        done(&rn);

        /* bind:1-2, memory on node 1: node 2 is as near to node 0 as node 1 but lower. */
        CHECK_INT(decide_default(&rn, t, "7f0000000000 bind:1-2 anon=16384 N1=16384 kernelpagesize_kB=4\n", "0-2",
                                 cpu), 0);
        CHECK_INT(rn.plan.n_moves, 0);
        CHECK_INT(rn.plan.reason, REASON_LOCAL);
        done(&rn);
}

/* Half on node 1, half on node 2, threads on node 0: node 1's half moves, node 2's
 * stays, and the move keeps node 2 (the executor leaves its pages). */
TEST(tier_mixed_vma_moves_only_the_fast_part) {
        _cleanup_(topology_freep) struct topology *t = tiered("2n1m-tiered");
        const uint64_t cpu[] = { 1000000, 0, 0 };
        struct run rn = {};

        if (!t)
                return;
        CHECK_INT(decide_default(&rn, t, "7f0000000000 default anon=16384 N1=8192 N2=8192 kernelpagesize_kB=4\n",
                                 "0-2", cpu), 0);
        CHECK_INT(rn.plan.n_moves, 1);
        if (rn.plan.n_moves) {
                CHECK_INT(rn.plan.moves[0].target, 0);
                CHECK_INT(rn.plan.moves[0].bytes, 32ull << 20);
                CHECK(nodemask_test(&rn.plan.moves[0].keep, 2));
                CHECK(!nodemask_test(&rn.plan.moves[0].keep, 1));
        }
        CHECK_INT(rn.plan.skipped_bytes[REASON_LOWER_TIER], 32ull << 20);
        done(&rn);
}

/* A policy that allows only the slow node: pages outside it still go there (the
 * policy's move, not memory following the CPU). */
TEST(tier_bind_to_slow_node_enforced) {
        _cleanup_(topology_freep) struct topology *t = tiered("2n1m-tiered");
        const uint64_t cpu[] = { 1000000, 0, 0 };
        struct run rn = {};

        if (!t)
                return;
        CHECK_INT(decide_default(&rn, t, "7f0000000000 bind:2 anon=16384 N0=8192 N2=8192 kernelpagesize_kB=4\n",
                                 "0-2", cpu), 0);
        CHECK_INT(rn.plan.n_moves, 1);
        if (rn.plan.n_moves) {
                CHECK_INT(rn.plan.moves[0].target, 2);
                CHECK_INT(rn.plan.moves[0].bytes, 32ull << 20);
        }
        done(&rn);
}

/* Page-level moves never go to a slow node: with node 1 named slow (slow_nodes = 1),
 * pages sampled from node 1 stay, counted lower-tier, while those from node 0 move. */
TEST(tier_pages_never_to_a_slow_node) {
        _cleanup_(topology_freep) struct topology *t = tiered("2n1m-tiered");
        struct page_move pm[] = { { .page = 0x7f0000000000, .node = 1, .samples = 2 },
                                  { .page = 0x7f0000001000, .node = 0, .samples = 2 } };
        struct page_decision d = { .moves = pm, .n_moves = 2 };
        const uint64_t cpu[] = { 1, 1, 0 };
        uint64_t reserved[8] = {}, ends[1] = { 0x7f0000000000 + (64 << 20) };
        struct numa_maps *maps = NULL;
        nb_nodemask slow = {};
        struct plan pl = {};
        const char *text = "7f0000000000 default anon=16384 N2=16384 kernelpagesize_kB=4\n";

        if (!t)
                return;
        nodemask_set(&slow, 1);
        topology_set_slow(t, &slow);
        CHECK_INT(numa_maps_parse(text, strlen(text), &maps), 0);
        if (!maps)
                return;
        struct plan_input in = { .maps = maps, .vma_end = ends, .cpu_ns = cpu };
        nodemask_parse("0-2", &in.mems_allowed);
        CHECK(plan_reserved_len(t) <= ELEMENTSOF(reserved));
        CHECK_INT(plan_pages(t, &in, &defaults, &d, NULL, reserved, &pl), 0);
        CHECK_INT(pl.n_moves, 1);
        if (pl.n_moves)
                CHECK_INT(pl.moves[0].target, 0);
        CHECK_INT(pl.skipped_bytes[REASON_LOWER_TIER], 4096);
        plan_done(&pl);
        numa_maps_free(maps);
}

/* ---- promotion (rule 7): hot pages on the slow node, from page samples ---- */

#define SLOW_VMA "7f0000000000 default anon=16384 N2=16384 kernelpagesize_kB=4\n"
#define VMA0 UINT64_C(0x7f0000000000)

/* plan_pages() on one 64 MiB VMA (text) with the samples given as (cpu, page index,
 * count) triples, aggregated and decided by the two-sample rule as the daemon does. */
static int promote_run(const struct topology *t, const char *text, const unsigned (*samples)[3], size_t n,
                       const struct plan_params *p, uint64_t *reserved, struct plan *ret) {
        _cleanup_(page_agg_freep) struct page_agg *a = NULL;
        uint64_t ends[1] = { VMA0 + (64 << 20) };
        const uint64_t cpu[] = { 1, 1, 0 };
        struct numa_maps *maps = NULL;
        struct page_decision d = {};
        int r;

        CHECK_INT(page_agg_new(t, 4096, &a), 0);
        if (!a)
                return -ENOMEM;
        for (size_t i = 0; i < n; i++)
                for (unsigned k = 0; k < samples[i][2]; k++) {
                        struct page_sample s = { .tid = 1, .cpu = samples[i][0],
                                                 .addr = VMA0 + (uint64_t) samples[i][1] * 4096 + 8 };
                        CHECK_INT(page_agg_add(a, &s), 0);
                }
        CHECK_INT(page_agg_decide(a, 2, &d), 0);
        r = numa_maps_parse(text, strlen(text), &maps);
        if (r < 0)
                return r;
        struct plan_input in = { .maps = maps, .vma_end = ends, .cpu_ns = cpu };
        nodemask_parse("0-2", &in.mems_allowed);
        r = plan_pages(t, &in, p, &d, NULL, reserved, ret);
        page_agg_decision_done(&d);
        numa_maps_free(maps);
        return r;
}

/* A page seen once is cold: it stays on the slow node. One seen twice from node 0's
 * CPU goes to node 0, one seen twice from node 1's to node 1: the fast node of the
 * threads that use it, a promotion charged to the budget. */
TEST(tier_promote_hot_only) {
        _cleanup_(topology_freep) struct topology *t = tiered("2n1m-tiered");
        const unsigned samples[][3] = { { 0, 0, 1 }, { 0, 1, 2 }, { 1, 5, 3 } };
        uint64_t reserved[8] = {}, left = 1 << 20;
        struct plan_params p = defaults;
        struct plan pl = {};

        if (!t)
                return;
        p.promote_left = &left;
        CHECK_INT(promote_run(t, SLOW_VMA, samples, ELEMENTSOF(samples), &p, reserved, &pl), 0);
        CHECK_INT(pl.n_moves, 2);
        if (pl.n_moves == 2) {
                CHECK_INT(pl.moves[0].start, VMA0 + 4096);
                CHECK_INT(pl.moves[0].end, VMA0 + 8192);
                CHECK_INT(pl.moves[0].target, 0);
                CHECK(pl.moves[0].promote);
                CHECK_INT(pl.moves[1].start, VMA0 + 5 * 4096);
                CHECK_INT(pl.moves[1].target, 1);
        }
        CHECK_INT(pl.promote_bytes, 8192);
        CHECK_INT(left, (1 << 20) - 8192);
        plan_done(&pl);

        /* Only cold pages: nothing moves, nothing is charged. */
        CHECK_INT(promote_run(t, SLOW_VMA, samples, 1, &p, reserved, &pl), 0);
        CHECK_INT(pl.n_moves, 0);
        CHECK_INT(left, (1 << 20) - 8192);
        plan_done(&pl);
}

/* A VMA with no page on a slow node: its page-level moves are not promotions. */
TEST(tier_pages_off_slow_not_charged) {
        _cleanup_(topology_freep) struct topology *t = tiered("2n1m-tiered");
        const unsigned samples[][3] = { { 0, 1, 2 } };
        uint64_t reserved[8] = {}, left = 0;
        struct plan_params p = defaults;
        struct plan pl = {};

        if (!t)
                return;
        p.promote_left = &left;
        CHECK_INT(promote_run(t, "7f0000000000 default anon=16384 N1=16384 kernelpagesize_kB=4\n", samples, 1, &p,
                              reserved, &pl), 0);
        CHECK_INT(pl.n_moves, 1);
        if (pl.n_moves)
                CHECK(!pl.moves[0].promote);
        CHECK_INT(pl.promote_bytes, 0);
        plan_done(&pl);
}

/* The budget bounds what a tick promotes, for all its scans together: 3 pages' worth
 * takes 3 of 8 hot pages, the rest waits (promote-rate) as spares (named, no bytes:
 * the executor moves them only in place of counted ones already on node 0), and a
 * second process of the same tick gets none, spares included. */
TEST(tier_promote_budget) {
        _cleanup_(topology_freep) struct topology *t = tiered("2n1m-tiered");
        unsigned samples[8][3];
        uint64_t reserved[8] = {}, left = 3 * 4096;
        struct plan_params p = defaults;
        struct plan pl = {};

        if (!t)
                return;
        for (unsigned i = 0; i < 8; i++) {
                samples[i][0] = 0;
                samples[i][1] = i * 2;
                samples[i][2] = 2;
        }
        p.promote_left = &left;
        CHECK_INT(promote_run(t, SLOW_VMA, (const unsigned (*)[3]) samples, 8, &p, reserved, &pl), 0);
        CHECK_INT(pl.bytes, 3 * 4096);
        CHECK_INT(pl.promote_bytes, 3 * 4096);
        CHECK_INT(pl.skipped_bytes[REASON_PROMOTE_RATE], 5 * 4096);
        CHECK_INT(left, 0);
        CHECK_INT(pl.n_moves, 8);
        for (size_t i = 0; i < pl.n_moves; i++) {
                CHECK(pl.moves[i].promote && pl.moves[i].target == 0);
                CHECK_INT(pl.moves[i].bytes, i < 3 ? 4096 : 0);
        }
        plan_done(&pl);

        CHECK_INT(promote_run(t, SLOW_VMA, (const unsigned (*)[3]) samples, 8, &p, reserved, &pl), 0);
        CHECK_INT(pl.n_moves, 0);
        CHECK_INT(pl.reason, REASON_PROMOTE_RATE);
        CHECK_STR(plan_reason_name(pl.reason), "promote-rate");
        plan_done(&pl);
}

/* The promotion floor holds: node 0 with 12% free and a 15% floor takes nothing; with
 * 2 pages above the floor, 2 of 4 hot pages; the ordinary free_floor_pct (5%) would
 * have taken all of them. */
TEST(tier_promote_floor) {
        _cleanup_(topology_freep) struct topology *t = tiered("2n1m-tiered");
        const unsigned samples[][3] = { { 0, 0, 2 }, { 0, 2, 2 }, { 0, 4, 2 }, { 0, 6, 2 } };
        uint64_t reserved[8] = {};
        struct plan_params p = defaults;
        struct plan pl = {};
        int i0;

        if (!t)
                return;
        i0 = topology_node_index(t, 0);
        p.promote_floor_pct = 15;
        t->nodes[i0].mem_free_kb = t->nodes[i0].mem_total_kb * 12 / 100;
        CHECK_INT(promote_run(t, SLOW_VMA, samples, 4, &p, reserved, &pl), 0);
        CHECK_INT(pl.n_moves, 0);
        CHECK_INT(pl.reason, REASON_PROMOTE_FLOOR);
        CHECK_INT(pl.skipped_bytes[REASON_PROMOTE_FLOOR], 4 * 4096);
        plan_done(&pl);

        /* above_floor() takes the floor as total / 100 * pct, in bytes. */
        t->nodes[i0].mem_free_kb = (t->nodes[i0].mem_total_kb * 1024 / 100 * 15) / 1024 + 8 + 1;
        CHECK_INT(promote_run(t, SLOW_VMA, samples, 4, &p, reserved, &pl), 0);
        CHECK_INT(pl.bytes, 2 * 4096);
        CHECK_INT(pl.skipped_bytes[REASON_PROMOTE_FLOOR], 2 * 4096);
        plan_done(&pl);

        memset(reserved, 0, sizeof(reserved));
        p.promote_floor_pct = 0;
        CHECK_INT(promote_run(t, SLOW_VMA, samples, 4, &p, reserved, &pl), 0);
        CHECK_INT(pl.bytes, 4 * 4096);
        plan_done(&pl);
}

/* ---- the exchange (rule 8): cold pages off a full fast node make room ---- */

/* 32 MiB on node 0 (the first half) and 32 MiB on node 2, node 0 below its promotion
 * floor, pages 8192, 8194, 8196 and 8198 (in the slow half) hot from node 0. */
#define MIXED_VMA "7f0000000000 %s anon=16384 N0=8192 N2=8192 kernelpagesize_kB=4\n"

struct xrun {
        struct topology *t;
        struct plan_params p;
        struct plan_input in;
        struct numa_maps *maps;
        uint64_t ends[1], cpu[3], reserved[8], credit[8];
        uint64_t *demand, *give;
        uint64_t (*bytes_on)(void *userdata, uint64_t start, uint64_t end, unsigned node);
        uint64_t on_node;            /* what bytes_on_fake() says is on the node */
        struct page_decision d;
        struct plan pl;
};

static int xrun_plan(struct xrun *x, const char *policy, const struct damon_range *cold, size_t n_cold,
                     const struct tier_move *recent, size_t n_recent) {
        _cleanup_(page_agg_freep) struct page_agg *a = NULL;
        char text[256];
        int i0 = topology_node_index(x->t, 0);

        x->p = defaults;
        x->p.promote_floor_pct = 10;
        x->p.exchange_credit = x->credit;
        x->p.exchange_demand = x->demand;
        x->p.exchange_give = x->give;
        x->p.bytes_on = x->bytes_on;
        x->p.bytes_on_userdata = x;
        x->t->nodes[i0].mem_free_kb = x->t->nodes[i0].mem_total_kb * 5 / 100;
        x->ends[0] = VMA0 + (64 << 20);
        x->cpu[0] = x->cpu[1] = 1;
        CHECK_INT(page_agg_new(x->t, 4096, &a), 0);
        for (unsigned k = 0; a && k < 4; k++)
                for (unsigned s = 0; s < 2; s++) {
                        struct page_sample smp = { .tid = 1, .cpu = 0, .addr = VMA0 + (8192 + 2 * k) * 4096ull + 8 };
                        CHECK_INT(page_agg_add(a, &smp), 0);
                }
        CHECK_INT(page_agg_decide(a, 2, &x->d), 0);
        snprintf(text, sizeof(text), MIXED_VMA, policy);
        CHECK_INT(numa_maps_parse(text, strlen(text), &x->maps), 0);
        x->in = (struct plan_input) { .maps = x->maps, .vma_end = x->ends, .cpu_ns = x->cpu, .now_ms = 100000,
                                      .cold = cold, .n_cold = n_cold, .tier_recent = recent,
                                      .n_tier_recent = n_recent };
        x->p.cooldown_ms = 30000;
        nodemask_parse("0-2", &x->in.mems_allowed);
        CHECK_INT(plan_pages(x->t, &x->in, &x->p, &x->d, NULL, x->reserved, &x->pl), 0);
        return plan_exchange(x->t, &x->in, &x->p, &x->d, &x->pl);
}

/* xrun_plan() with other processes' demand (plan_params.exchange_demand). */
static int xrun_plan_demand(struct xrun *x, const struct damon_range *cold, uint64_t *demand) {
        x->demand = demand;
        return xrun_plan(x, "default", cold, 1, NULL, 0);
}

static void xrun_done(struct xrun *x) {
        plan_done(&x->pl);
        page_agg_decision_done(&x->d);
        numa_maps_free(x->maps);
        x->maps = NULL;
        memset(x->reserved, 0, sizeof(x->reserved));
}

/* Four hot pages wait at node 0's floor: the exchange demotes 16 KiB of the cold range
 * in the fast half to node 2, only pages on node 0 (keep: every other node). */
TEST(exchange_demotes_as_much_as_waits) {
        struct xrun x = { .t = tiered("2n1m-tiered") };
        const struct damon_range cold[] = { { VMA0 + (1 << 20), VMA0 + (2 << 20) } };

        if (!x.t)
                return;
        CHECK_INT(xrun_plan(&x, "default", cold, 1, NULL, 0), 0);
        CHECK_INT(x.pl.skipped_bytes[REASON_PROMOTE_FLOOR], 4 * 4096);
        CHECK_INT(x.pl.exchange_want, 4 * 4096);
        CHECK_INT(x.pl.exchange_node, 0);
        CHECK_INT(x.pl.n_moves, 1);
        CHECK_INT(x.pl.demote_bytes, 4 * 4096);
        if (x.pl.n_moves == 1) {
                const struct plan_move *m = &x.pl.moves[0];

                CHECK(m->demote && !m->promote);
                CHECK_INT(m->target, 2);
                CHECK_INT(m->start, VMA0 + (1 << 20));
                CHECK_INT(m->end, VMA0 + (2 << 20));
                CHECK_INT(m->bytes, 4 * 4096);
                CHECK(!nodemask_test(&m->keep, 0) && nodemask_test(&m->keep, 1) && nodemask_test(&m->keep, 2));
        }
        xrun_done(&x);
        topology_free(x.t);
}

static uint64_t bytes_on_fake(void *userdata, uint64_t start, uint64_t end, unsigned node) {
        const struct xrun *x = userdata;

        CHECK_INT(node, 0);
        return x->on_node < end - start ? x->on_node : end - start;
}

/* A demotion counts only the pages of its range on the fast node (bytes_on): none
 * there (demoted already, or not known), none planned and the wait stays unserved;
 * two pages there, two planned. */
TEST(exchange_counts_only_pages_on_the_node) {
        struct xrun x = { .t = tiered("2n1m-tiered"), .bytes_on = bytes_on_fake };
        const struct damon_range cold[] = { { VMA0 + (1 << 20), VMA0 + (2 << 20) } };

        if (!x.t)
                return;
        CHECK_INT(xrun_plan(&x, "default", cold, 1, NULL, 0), 0);
        CHECK_INT(x.pl.exchange_want, 4 * 4096);
        CHECK_INT(x.pl.demote_bytes, 0);
        CHECK_INT(x.pl.exchange_unserved, 4 * 4096);
        xrun_done(&x);
        x.on_node = 2 * 4096;
        CHECK_INT(xrun_plan(&x, "default", cold, 1, NULL, 0), 0);
        CHECK_INT(x.pl.demote_bytes, 2 * 4096);
        CHECK_INT(x.pl.exchange_unserved, 2 * 4096);
        CHECK(x.pl.n_moves >= 1 && x.pl.moves[x.pl.n_moves - 1].demote &&
              x.pl.moves[x.pl.n_moves - 1].bytes == 2 * 4096);
        xrun_done(&x);
        topology_free(x.t);
}

/* Never a hot page, never one moved across tiers within the cooldown (either way); a
 * move older than the cooldown no longer counts. */
TEST(exchange_skips_hot_and_recent) {
        struct xrun x = { .t = tiered("2n1m-tiered") };
        const struct damon_range cold[] = { { VMA0 + 8190 * 4096ull, VMA0 + 8200 * 4096ull } };
        struct tier_move recent[] = { { VMA0 + 8190 * 4096ull, VMA0 + 8192 * 4096ull, 90000, false } };

        if (!x.t)
                return;
        CHECK_INT(xrun_plan(&x, "default", cold, 1, recent, 1), 0);
        /* Free: 8193, 8195, 8197, 8199 (the hot ones between them stay). */
        CHECK_INT(x.pl.n_moves, 4);
        for (size_t i = 0; i < x.pl.n_moves; i++) {
                CHECK_INT(x.pl.moves[i].start, VMA0 + (8193 + 2 * i) * 4096ull);
                CHECK_INT(x.pl.moves[i].end, VMA0 + (8194 + 2 * i) * 4096ull);
        }
        xrun_done(&x);
        recent[0].at_ms = 60000;        /* 40 s ago: past the 30 s cooldown */
        CHECK_INT(xrun_plan(&x, "default", cold, 1, recent, 1), 0);
        CHECK(x.pl.n_moves >= 1 && x.pl.moves[0].start == VMA0 + 8190 * 4096ull);
        xrun_done(&x);
        topology_free(x.t);
}

/* Cold ranges before the VMA, across its start, within it and past its end: only what
 * lies within it is demoted, in address order (the VMA looks up the first range that
 * meets it). */
TEST(exchange_takes_cold_ranges_within_the_vma) {
        struct xrun x = { .t = tiered("2n1m-tiered") };
        const struct damon_range cold[] = {
                { VMA0 - (2 << 20), VMA0 - (1 << 20) }, { VMA0 - 4096, VMA0 + 4096 },
                { VMA0 + (1 << 20), VMA0 + (1 << 20) + 8192 }, { VMA0 + (64 << 20), VMA0 + (65 << 20) },
        };

        if (!x.t)
                return;
        CHECK_INT(xrun_plan(&x, "default", cold, 4, NULL, 0), 0);
        CHECK_INT(x.pl.n_moves, 2);
        CHECK_INT(x.pl.demote_bytes, 3 * 4096);
        CHECK_INT(x.pl.exchange_unserved, 4096);
        if (x.pl.n_moves == 2) {
                CHECK(x.pl.moves[0].start == VMA0 && x.pl.moves[0].end == VMA0 + 4096);
                CHECK(x.pl.moves[1].start == VMA0 + (1 << 20) && x.pl.moves[1].end == VMA0 + (1 << 20) + 8192);
        }
        xrun_done(&x);
        topology_free(x.t);
}

/* A policy that allows no slow node: nothing is demoted. No cold range: nothing. */
TEST(exchange_within_policy) {
        struct xrun x = { .t = tiered("2n1m-tiered") };
        const struct damon_range cold[] = { { VMA0, VMA0 + (4 << 20) } };

        if (!x.t)
                return;
        CHECK_INT(xrun_plan(&x, "bind:0-1", cold, 1, NULL, 0), 0);
        CHECK_INT(x.pl.demote_bytes, 0);
        xrun_done(&x);
        CHECK_INT(xrun_plan(&x, "default", NULL, 0, NULL, 0), 0);
        CHECK_INT(x.pl.demote_bytes, 0);
        CHECK_INT(x.pl.n_moves, 0);
        xrun_done(&x);
        topology_free(x.t);
}

/* Across processes: a process with nothing waiting of its own serves what another's
 * promotions wait for at node 0 (demand) from its cold memory there, and lowers the
 * demand by as much; what its own cold memory cannot make room for is unserved. */
TEST(exchange_serves_other_processes) {
        struct xrun x = { .t = tiered("2n1m-tiered") };
        const struct damon_range cold[] = { { VMA0 + (1 << 20), VMA0 + (2 << 20) } };
        uint64_t demand[8] = { 0 };
        int i0;

        if (!x.t)
                return;
        i0 = topology_node_index(x.t, 0);
        /* No cold memory: its own 16 KiB wait stays unserved, for others to serve. */
        CHECK_INT(xrun_plan(&x, "default", NULL, 0, NULL, 0), 0);
        CHECK_INT(x.pl.exchange_unserved, 4 * 4096);
        CHECK_INT(x.pl.demote_bytes, 0);
        xrun_done(&x);
        /* Cold memory on node 0: its own wait first, then 64 KiB of another's. */
        demand[i0] = 16 * 4096;
        x.p.exchange_demand = demand;
        CHECK_INT(xrun_plan_demand(&x, cold, demand), 0);
        CHECK_INT(x.pl.exchange_unserved, 0);
        CHECK_INT(x.pl.demote_bytes, 20 * 4096);
        CHECK_INT(demand[i0], 0);
        for (size_t i = 0; i < x.pl.n_moves; i++)
                CHECK(x.pl.moves[i].demote && x.pl.moves[i].target == 2 && x.pl.moves[i].from == 0);
        xrun_done(&x);
        topology_free(x.t);
}

/* A cgroup with a share of the fast tier gives others at most what it holds above it
 * (exchange_give), and what it gave is taken off that; its own wait is not limited. */
TEST(exchange_gives_only_above_the_share) {
        struct xrun x = { .t = tiered("2n1m-tiered") };
        const struct damon_range cold[] = { { VMA0 + (1 << 20), VMA0 + (2 << 20) } };
        uint64_t demand[8] = { 0 }, give[8] = { 0 };
        int i0;

        if (!x.t)
                return;
        i0 = topology_node_index(x.t, 0);
        demand[i0] = 16 * 4096;
        give[i0] = 5 * 4096;
        x.give = give;
        CHECK_INT(xrun_plan_demand(&x, cold, demand), 0);
        /* Its own 4 pages, then 5 of the 16 others wait for. */
        CHECK_INT(x.pl.demote_bytes, 9 * 4096);
        CHECK_INT(demand[i0], 11 * 4096);
        CHECK_INT(give[i0], 0);
        xrun_done(&x);
        /* At its share: nothing for others. */
        CHECK_INT(xrun_plan_demand(&x, cold, demand), 0);
        CHECK_INT(x.pl.demote_bytes, 4 * 4096);
        CHECK_INT(demand[i0], 11 * 4096);
        xrun_done(&x);
        topology_free(x.t);
}

/* The room the exchange made (credit) takes promotions below the floors, as much as
 * it holds; a page demoted within the cooldown is not promoted back, while a range a
 * promotion job named (its spares too) keeps no hot page from being promoted. */
TEST(exchange_credit_promotes) {
        struct xrun x = { .t = tiered("2n1m-tiered") };
        const struct tier_move recent[] = { { VMA0 + 8198 * 4096ull, VMA0 + 8199 * 4096ull, 95000, true },
                                            { VMA0 + 8192 * 4096ull, VMA0 + 8195 * 4096ull, 95000, false } };
        int i0;

        if (!x.t)
                return;
        i0 = topology_node_index(x.t, 0);
        x.credit[i0] = 2 * 4096;
        CHECK_INT(xrun_plan(&x, "default", NULL, 0, recent, 2), 0);
        CHECK_INT(x.pl.promote_bytes, 2 * 4096);
        CHECK_INT(x.credit[i0], 0);
        CHECK_INT(x.pl.skipped_bytes[REASON_PROMOTE_FLOOR], 4096);
        CHECK_INT(x.pl.skipped_bytes[REASON_COOLDOWN], 4096);
        /* Marked for the executor: into the exchange's room, below its free-memory floor. */
        for (size_t i = 0; i < x.pl.n_moves; i++)
                CHECK(!x.pl.moves[i].promote || x.pl.moves[i].exchanged);
        xrun_done(&x);
        topology_free(x.t);
}
