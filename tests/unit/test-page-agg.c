/* SPDX-License-Identifier: GPL-2.0-or-later */
/* lib/page-agg on stored sample streams (tests/data/pmu, see make-streams.py) and
 * lib/pmu on stored /sys trees (tests/data/sys-pmu). */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include "cleanup.h"
#include "numa_maps.h"
#include "page-agg.h"
#include "plan.h"
#include "policy.h"
#include "parse.h"
#include "pmu.h"
#include "test.h"
#include "topology.h"

static struct topology *topo;  /* tests/data/sys/2n2c, read by intro() */

static int replay(const char *name, uint64_t page_size, unsigned min_samples, struct page_decision *ret) {
        _cleanup_free_ char *buf = NULL;
        _cleanup_free_ struct page_sample *s = NULL;
        _cleanup_(page_agg_freep) struct page_agg *a = NULL;
        char path[4096];
        size_t len, n;
        unsigned bad = 0;
        int r;

        snprintf(path, sizeof(path), "%s/pmu/%s", TEST_DATA_DIR, name);
        r = parse_read_file_at(AT_FDCWD, path, 1 << 24, &buf, &len);
        CHECK_INT(r, 0);
        if (r < 0)
                return r;
        r = page_agg_parse_samples(buf, len, &s, &n, &bad);
        CHECK_INT(r, 0);
        CHECK_INT(bad, 0);
        if (r < 0)
                return r;
        r = page_agg_new(topo, page_size, &a);
        CHECK_INT(r, 0);
        if (r < 0)
                return r;
        for (size_t i = 0; i < n; i++)
                (void) page_agg_add(a, &s[i]);
        return page_agg_decide(a, min_samples, ret);
}

/* The samples are for the stored 2n2c machine: CPU 3 is on node 1. */
TEST(topology_of_the_samples) {
        CHECK_INT(topology_cpu_node(topo, 3), 1);
}

/* private.samples: thread 101 touches 64 pages from node 0, thread 202 64 others
 * from node 1, each page 2 to 5 times. */
TEST(private_pages_to_their_threads_node) {
        struct page_decision d;
        unsigned to0 = 0, to1 = 0;

        CHECK_INT(replay("private.samples", 4096, 2, &d), 0);
        CHECK_INT(d.pages, 128);
        CHECK_INT(d.n_moves, 128);
        CHECK_INT(d.shared, 0);
        CHECK_INT(d.too_few, 0);
        CHECK_INT(d.samples, 438); /* 440 lines minus 2 comments */
        for (size_t i = 0; i < d.n_moves; i++) {
                const struct page_move *m = &d.moves[i];
                CHECK_INT(m->page & 4095, 0);
                CHECK(m->samples >= 2 && m->samples <= 5);
                /* Thread 101's pages (0x7f00...) on node 0, thread 202's on node 1. */
                if (m->page >> 36 == 0x7f0) {
                        CHECK_INT(m->node, 0);
                        to0++;
                } else {
                        CHECK_INT(m->page >> 36, 0x7f1);
                        CHECK_INT(m->node, 1);
                        to1++;
                }
                if (i)
                        CHECK(d.moves[i - 1].page < m->page);
        }
        CHECK_INT(to0, 64);
        CHECK_INT(to1, 64);
        page_agg_decision_done(&d);
}

/* One sample is not evidence: with min_samples 6 nothing moves. */
TEST(private_too_few_samples_no_move) {
        struct page_decision d;

        CHECK_INT(replay("private.samples", 4096, 6, &d), 0);
        CHECK_INT(d.n_moves, 0);
        CHECK_INT(d.too_few, 128);
        page_agg_decision_done(&d);
}

/* Per 2 MiB huge page: the 64 pages of each thread fall in one huge page. */
TEST(private_per_huge_page) {
        struct page_decision d;

        CHECK_INT(replay("private.samples", 2u << 20, 2, &d), 0);
        CHECK_INT(d.pages, 2);
        CHECK_INT(d.n_moves, 2);
        CHECK_INT(d.moves[0].page, 0x7f0000000000);
        CHECK_INT(d.moves[0].node, 0);
        CHECK_INT(d.moves[1].node, 1);
        page_agg_decision_done(&d);
}

/* Pages touched from both nodes are shared; seen once, too few; from no known CPU, no node. */
TEST(mixed_samples_classified) {
        struct page_decision d;

        CHECK_INT(replay("mixed.samples", 4096, 2, &d), 0);
        CHECK_INT(d.n_moves, 32);
        CHECK_INT(d.shared, 8);
        CHECK_INT(d.too_few, 8);
        CHECK_INT(d.no_node, 2);
        CHECK_INT(d.pages, 48);
        for (size_t i = 0; i < d.n_moves; i++)
                CHECK(d.moves[i].page >> 36 == 0x7f0 || d.moves[i].page >> 36 == 0x7f1);
        page_agg_decision_done(&d);
}

/* One page touched from each node in turn: shared, never moved. */
TEST(pingpong_page_shared) {
        struct page_decision d;

        CHECK_INT(replay("pingpong.samples", 4096, 2, &d), 0);
        CHECK_INT(d.pages, 1);
        CHECK_INT(d.n_moves, 0);
        CHECK_INT(d.shared, 1);
        page_agg_decision_done(&d);
}

/* What the BPF map hands over: (page, node, count). */
TEST(counts_from_the_bpf_map) {
        _cleanup_(page_agg_freep) struct page_agg *a = NULL;
        struct page_decision d;

        CHECK_INT(page_agg_new(topo, 4096, &a), 0);
        CHECK_INT(page_agg_add_counts(a, 0x1000, 1, 3), 0);
        CHECK_INT(page_agg_add_counts(a, 0x2000, 0, 1), 0);
        CHECK_INT(page_agg_add_counts(a, 0x2fff, 0, 1), 0);
        CHECK_INT(page_agg_add_counts(a, 0x3000, 7, 5), -EINVAL);
        /* Enough pages to make the table grow a few times. */
        for (uint64_t p = 0; p < 5000; p++)
                CHECK_INT(page_agg_add_counts(a, 0x100000000 + p * 4096, (unsigned) (p & 1), 2), 0);
        CHECK_INT(page_agg_decide(a, 2, &d), 0);
        CHECK_INT(d.pages, 5002);
        CHECK_INT(d.n_moves, 5002);
        CHECK_INT(d.no_node, 5);
        CHECK_INT(d.moves[0].page, 0x1000);
        CHECK_INT(d.moves[0].node, 1);
        CHECK_INT(d.moves[1].page, 0x2000);
        CHECK_INT(d.moves[1].samples, 2);
        CHECK_INT(d.moves[5001].node, 1);
        page_agg_decision_done(&d);
        CHECK_INT(page_agg_decide(a, 0, &d), -EINVAL);
}

/* "TID CPU 0xADDR", comments and blank lines allowed. */
/* Evidence kept across scans (page_agg_carry): a page seen once from one node waits for
 * its second sample; decided, shared, stale and over-the-cap pages are not kept. */
TEST(carry_keeps_single_samples) {
        _cleanup_(page_agg_freep) struct page_agg *a = NULL, *kept = NULL;
        struct page_decision d;
        const uint64_t p1 = 0x7f0000001000, p2 = 0x7f0000002000, p3 = 0x7f0000003000, p4 = 0x7f0000004000;

        CHECK_INT(page_agg_new(topo, 4096, &a), 0);
        if (!a)
                return;
        page_agg_set_clock(a, 1);
        CHECK_INT(page_agg_add_counts(a, p4, 0, 1), 0);          /* stale by the carry */
        page_agg_set_clock(a, 10);
        CHECK_INT(page_agg_add_counts(a, p1, 0, 1), 0);          /* once: kept */
        CHECK_INT(page_agg_add_counts(a, p2 + 8, 1, 2), 0);      /* twice: decided */
        CHECK_INT(page_agg_add_counts(a, p3, 0, 1), 0);          /* from both nodes: shared */
        CHECK_INT(page_agg_add_counts(a, p3, 1, 1), 0);
        CHECK_INT(page_agg_carry(a, 2, 5, 100, &kept), 0);
        CHECK(kept != NULL);
        if (!kept)
                return;
        CHECK_INT(page_agg_pages(kept), 1);
        /* Carried evidence is not news (the scan's cheap paths stay open)... */
        CHECK_INT(page_agg_fresh(a), 6);
        CHECK_INT(page_agg_fresh(kept), 0);
        /* ...until its second sample, in the next window: now it moves, to node 0. */
        page_agg_set_clock(kept, 20);
        CHECK_INT(page_agg_add_counts(kept, p1 + 100, 0, 1), 0);
        CHECK_INT(page_agg_fresh(kept), 1);
        CHECK_INT(page_agg_decide(kept, 2, &d), 0);
        CHECK_INT(d.n_moves, 1);
        if (d.n_moves) {
                CHECK(d.moves[0].page == p1);
                CHECK_INT(d.moves[0].node, 0);
                CHECK_INT(d.moves[0].samples, 2);
        }
        page_agg_decision_done(&d);
}

/* The carry is bounded: at most max_pages pages; nothing left is NULL. */
TEST(carry_bounded) {
        _cleanup_(page_agg_freep) struct page_agg *a = NULL, *kept = NULL, *none = NULL;

        CHECK_INT(page_agg_new(topo, 4096, &a), 0);
        if (!a)
                return;
        page_agg_set_clock(a, 100);
        for (uint64_t i = 0; i < 5000; i++)
                CHECK_INT(page_agg_add_counts(a, 0x7f0000000000 + i * 4096, 1, 1), 0);
        CHECK_INT(page_agg_carry(a, 2, 0, 300, &kept), 0);
        CHECK_INT(page_agg_pages(kept), 300);
        /* All stale (the clock wrapped past them is a difference, not an order). */
        CHECK_INT(page_agg_carry(a, 2, 101, 300, &none), 0);
        CHECK(none == NULL);
}

TEST(parse_samples) {
        static const char good[] = "# c\n\n 5\t1 0xABC # tail\n";
        struct page_sample *s = NULL;
        size_t n = 0;
        unsigned line = 0;

        CHECK_INT(page_agg_parse_samples(good, strlen(good), &s, &n, &line), 0);
        CHECK_INT(n, 1);
        if (n == 1) {
                CHECK_INT(s[0].tid, 5);
                CHECK_INT(s[0].cpu, 1);
                CHECK_INT(s[0].addr, 0xabc);
        }
        free(s);
        CHECK_INT(page_agg_parse_samples("", 0, &s, &n, &line), 0);
        CHECK_INT(n, 0);
        free(s);
}

/* Refused, with the line number, and nothing returned. */
TEST(parse_samples_malformed) {
        static const char *const bad[] = {
                "1 0\n", "1 0 0x10 4\n", "x 0 0x10\n", "1 0 16\n", "1 9000 0x10\n", "0 0 0x10\n", "1 0 0x\n",
                "1 -1 0x10\n", "1 0 0xg\n",
        };
        struct page_sample *s = NULL;
        size_t n = 0;
        unsigned line = 0;

        for (size_t i = 0; i < ELEMENTSOF(bad); i++) {
                s = NULL;
                line = 0;
                CHECK_INT(page_agg_parse_samples(bad[i], strlen(bad[i]), &s, &n, &line), -EINVAL);
                CHECK_INT(line, 1);
                CHECK(s == NULL);
        }
}

/* One line at a time, as the replay reads them: a sample, nothing, or refused. */
TEST(parse_line) {
        struct page_sample s = { .tid = 77 };

        CHECK_INT(page_agg_parse_line(" 5\t1 0xABC # tail", 18, &s), 1);
        CHECK_INT(s.tid, 5);
        CHECK_INT(s.cpu, 1);
        CHECK_INT(s.addr, 0xabc);
        s.tid = 77;
        CHECK_INT(page_agg_parse_line("# c", 3, &s), 0);
        CHECK_INT(page_agg_parse_line("  ", 2, &s), 0);
        CHECK_INT(page_agg_parse_line("", 0, &s), 0);
        CHECK_INT(page_agg_parse_line("1 0 0x10 4", 10, &s), -EINVAL);
        CHECK_INT(page_agg_parse_line("1 0 0x10", 5, &s), -EINVAL);     /* cut: "1 0 0" */
        CHECK_INT(s.tid, 77);   /* nothing written unless a sample */
}

/* The /sys tree of a PMU model, tests/data/sys-pmu/NAME. */
static const char *pmu_root(const char *name) {
        static char root[4096];

        snprintf(root, sizeof(root), "%s/sys-pmu/%s", TEST_DATA_DIR, name);
        return root;
}

TEST(pmu_detect_intel_pebs) {
        struct pmu_info p;
        const char *root = pmu_root("intel");

        CHECK_INT(pmu_detect(root, &p), 0);
        CHECK_STR(pmu_kind_name(p.kind), "intel-pebs");
        CHECK_STR(p.device, "cpu");
        CHECK_INT(p.type, 4);
        CHECK_STR(p.event, "event=0xcd,umask=0x1,ldlat=3");
}

TEST(pmu_detect_amd_ibs) {
        struct pmu_info p;

        CHECK_INT(pmu_detect(pmu_root("amd"), &p), 0);
        CHECK_STR(pmu_kind_name(p.kind), "amd-ibs");
        CHECK_INT(p.type, 11);
}

TEST(pmu_detect_arm_spe) {
        struct pmu_info p;

        CHECK_INT(pmu_detect(pmu_root("spe"), &p), 0);
        CHECK_STR(pmu_kind_name(p.kind), "arm-spe");
        CHECK_STR(p.device, "arm_spe_0");
        CHECK_INT(p.type, 9);
}

/* The test bed's guests: software and tracepoint events only. */
TEST(pmu_detect_none) {
        struct pmu_info p;

        CHECK_INT(pmu_detect(pmu_root("none"), &p), 0);
        CHECK_INT(p.kind, PMU_NONE);
        CHECK_STR(pmu_kind_name(p.kind), "none");
}

TEST(pmu_detect_missing_tree) {
        struct pmu_info p;

        CHECK_INT(pmu_detect(pmu_root("missing"), &p), -ENOENT);
}

/* mixed.samples through plan_pages() against a process's numa_maps: page-level moves
 * stay within each VMA's allowed set, leave interleaved, shared and wholly-moved VMAs
 * alone, respect the floor and the cap, and merge consecutive pages. A is
 * 0x7f0000000000 (16 pages sampled from node 0), B 0x7f1000000000 (16 from node 1). */
static void page_plan(const char *maps_text, const char *mems, const struct plan_params *pp,
                      const struct plan *vma_plan, struct plan *ret) {
        _cleanup_(numa_maps_freep) struct numa_maps *maps = NULL;
        struct page_decision d;
        uint64_t ends[8] = {}, reserved[4] = {};
        struct plan_input in = {};

        CHECK_INT(replay("mixed.samples", 4096, 2, &d), 0);
        CHECK_INT(numa_maps_parse(maps_text, strlen(maps_text), &maps), 0);
        for (size_t i = 0; i < maps->n_vmas && i < 8; i++)
                ends[i] = maps->vmas[i].start + (1ull << 28);
        in.maps = maps;
        in.vma_end = ends;
        CHECK_INT(nodemask_parse(mems, &in.mems_allowed), 0);
        CHECK_INT(plan_pages(topo, &in, pp, &d, vma_plan, reserved, ret), 0);
        /* The invariant: never outside the allowed set. */
        for (size_t i = 0; i < ret->n_moves; i++) {
                const struct vma *v = &maps->vmas[ret->moves[i].vma];
                nb_nodemask allowed;
                policy_allowed_nodes(&v->policy, &in.mems_allowed, &topo->with_memory, plan_policy_rules(pp), &allowed);
                CHECK(nodemask_test(&allowed, (unsigned) ret->moves[i].target));
                CHECK(ret->moves[i].start >= v->start && ret->moves[i].end <= ends[ret->moves[i].vma]);
        }
        page_agg_decision_done(&d);
}

static const struct plan_params pp_default = { .free_floor_pct = 5 };

/* Both default: A's 16 pages to node 0, B's to node 1, each as one merged move. */
TEST(plan_pages_merged_per_vma) {
        struct plan pl;

        page_plan("7f0000000000 default anon=16 N1=16 kernelpagesize_kB=4\n"
                  "7f1000000000 default anon=16 N0=16 kernelpagesize_kB=4\n", "0-1", &pp_default, NULL, &pl);
        CHECK_INT(pl.n_moves, 2);
        if (pl.n_moves == 2) {
                CHECK_INT(pl.moves[0].start, 0x7f0000000000ull);
                CHECK_INT(pl.moves[0].end, 0x7f0000000000ull + 16 * 4096);
                CHECK_INT(pl.moves[0].target, 0);
                CHECK_INT(pl.moves[1].start, 0x7f1000000000ull);
                CHECK_INT(pl.moves[1].target, 1);
                CHECK_INT(pl.moves[1].page_size, 4096);
        }
        CHECK_INT(pl.bytes, 32 * 4096);
        plan_done(&pl);
}

/* A bound to node 1: its pages are touched from node 0, which it may not use. */
TEST(plan_pages_never_outside_the_policy) {
        struct plan pl;

        page_plan("7f0000000000 bind:1 anon=16 N1=16 kernelpagesize_kB=4\n"
                  "7f1000000000 default anon=16 N0=16 kernelpagesize_kB=4\n", "0-1", &pp_default, NULL, &pl);
        CHECK_INT(pl.n_moves, 1);
        CHECK_INT(pl.moves[0].target, 1);
        CHECK_INT(pl.skipped_bytes[REASON_NO_ALLOWED_NODE], 16 * 4096);
        plan_done(&pl);
}

/* The cpuset allows node 1 only: A's evidence for node 0 is not acted on. */
TEST(plan_pages_never_outside_the_cpuset) {
        struct plan pl;

        page_plan("7f0000000000 default anon=16 N1=16 kernelpagesize_kB=4\n"
                  "7f1000000000 default anon=16 N0=16 kernelpagesize_kB=4\n", "1", &pp_default, NULL, &pl);
        CHECK_INT(pl.n_moves, 1);
        CHECK_INT(pl.moves[0].target, 1);
        plan_done(&pl);
}

/* Interleaved: never; preferred: not unless move_preferred. */
TEST(plan_pages_interleave_and_preferred_left_alone) {
        struct plan pl;

        page_plan("7f0000000000 interleave:0-1 anon=16 N1=16 kernelpagesize_kB=4\n"
                  "7f1000000000 prefer:0 anon=16 N0=16 kernelpagesize_kB=4\n", "0-1", &pp_default, NULL, &pl);
        CHECK_INT(pl.n_moves, 0);
        CHECK_INT(pl.skipped_bytes[REASON_POLICY], 16 * 4096);
        plan_done(&pl);
}

/* Shared: never, move_shared or not (it changes the reason only). */
TEST(plan_pages_shared_never) {
        struct plan_params shared = pp_default;
        struct plan pl;

        page_plan("7f0000000000 default anon=16 mapmax=2 N1=16 kernelpagesize_kB=4\n", "0-1", &pp_default, NULL, &pl);
        CHECK_INT(pl.n_moves, 0);
        CHECK_INT(pl.reason, REASON_SHARED);
        plan_done(&pl);
        shared.move_shared = true;
        page_plan("7f0000000000 default anon=16 mapmax=2 N1=16 kernelpagesize_kB=4\n", "0-1", &shared, NULL, &pl);
        CHECK_INT(pl.n_moves, 0);
        CHECK_INT(pl.reason, REASON_SHARED_UNVERIFIED);
        plan_done(&pl);
}

/* A VMA the VMA-level plan moves whole is left to it. */
TEST(plan_pages_leave_a_vma_moved_whole) {
        struct plan_move whole = { .vma = 1, .start = 0x7f1000000000ull, .target = 0, .bytes = 1 << 20 };
        struct plan vp = { .moves = &whole, .n_moves = 1, .bytes = 1 << 20 };
        struct plan pl;

        page_plan("7f0000000000 default anon=16 N1=16 kernelpagesize_kB=4\n"
                  "7f1000000000 default anon=16 N0=16 kernelpagesize_kB=4\n", "0-1", &pp_default, &vp, &pl);
        CHECK_INT(pl.n_moves, 1);
        CHECK_INT(pl.moves[0].start, 0x7f0000000000ull);
        plan_done(&pl);
}

/* The floor: a node with no room above it takes nothing. */
TEST(plan_pages_free_floor) {
        struct plan_params full = pp_default;
        struct plan pl;

        full.free_floor_pct = 100;
        page_plan("7f0000000000 default anon=16 N1=16 kernelpagesize_kB=4\n", "0-1", &full, NULL, &pl);
        CHECK_INT(pl.n_moves, 0);
        CHECK_INT(pl.reason, REASON_TARGET_FULL);
        plan_done(&pl);
}

/* The cap: 5 pages per tick; the rest next time. */
TEST(plan_pages_cap) {
        struct plan_params capped = pp_default;
        struct plan pl;

        capped.max_bytes = 5 * 4096;
        page_plan("7f0000000000 default anon=16 N1=16 kernelpagesize_kB=4\n", "0-1", &capped, NULL, &pl);
        CHECK_INT(pl.bytes, 5 * 4096);
        CHECK_INT(pl.n_moves, 1);
        plan_done(&pl);
}

/* A hugetlb VMA: one move of the whole 2 MiB page, not 16 of 4 KiB, into node 0's free
 * huge pages; without any, none (MemFree does not count for hugetlb). */
TEST(plan_pages_hugetlb_page_whole) {
        static const char *const text = "7f0000000000 default file=/dev/hugepages/x huge dirty=1 N1=1 kernelpagesize_kB=2048\n";
        struct topo_hugepages pool = { .size_kb = 2048, .free = 1 };
        struct plan pl;

        page_plan(text, "0-1", &pp_default, NULL, &pl);
        CHECK_INT(pl.n_moves, 0);
        CHECK_INT(pl.skipped_bytes[REASON_HUGE_POOL], 2 << 20);
        plan_done(&pl);

        topo->nodes[0].huge = &pool;
        topo->nodes[0].n_huge = 1;
        topo->n_huge_slots = 1;
        page_plan(text, "0-1", &pp_default, NULL, &pl);
        topo->nodes[0].huge = NULL;
        topo->nodes[0].n_huge = 0;
        topo->n_huge_slots = 0;
        CHECK_INT(pl.n_moves, 1);
        if (pl.n_moves == 1) {
                CHECK_INT(pl.moves[0].start, 0x7f0000000000ull);
                CHECK_INT(pl.moves[0].end - pl.moves[0].start, 2 << 20);
                CHECK_INT(pl.moves[0].page_size, 2 << 20);
        }
        plan_done(&pl);
}

/* A kernel with 64 KiB base pages (arm64): the unit is the VMA's own page size,
 * whatever the machine running the test uses. The 16 sampled 4 KiB addresses are
 * all in the first 64 KiB page: one move of that page. */
TEST(plan_pages_unit_is_the_vma_page_size) {
        struct plan pl;

        page_plan("7f0000000000 default anon=1 N1=1 kernelpagesize_kB=64\n", "0-1", &pp_default, NULL, &pl);
        CHECK_INT(pl.n_moves, 1);
        if (pl.n_moves == 1) {
                CHECK_INT(pl.moves[0].start, 0x7f0000000000ull);
                CHECK_INT(pl.moves[0].end - pl.moves[0].start, 64 << 10);
                CHECK_INT(pl.moves[0].page_size, 64 << 10);
        }
        plan_done(&pl);
}

/* Pages outside every VMA (unmapped since sampled): nothing. */
TEST(plan_pages_unmapped_since_sampled) {
        struct plan pl;

        page_plan("7f5000000000 default anon=16 N1=16 kernelpagesize_kB=4\n", "0-1", &pp_default, NULL, &pl);
        CHECK_INT(pl.n_moves, 0);
        plan_done(&pl);
}

/* A VMA with no page on any node (read only, so on the zero page; or freed since
 * sampled): nothing to move, and nothing said in advise mode. */
TEST(plan_pages_nothing_resident) {
        struct plan pl;

        page_plan("7f0000000000 default anon=16 N1=16 kernelpagesize_kB=4\n"
                  "7f1000000000 default\n", "0-1", &pp_default, NULL, &pl);
        CHECK_INT(pl.n_moves, 1);
        if (pl.n_moves == 1)
                CHECK_INT(pl.moves[0].start, 0x7f0000000000ull);
        CHECK_INT(pl.bytes, 16 * 4096);
        plan_done(&pl);
}

/* The perf_event_attr each PMU is opened with: what perf's own parser would build from
 * the same sysfs files (perf stat -e cpu/mem-loads/ -vv on an Intel machine prints
 * config 0x1cd, config1 0x3). */
TEST(pmu_attr_intel_pebs) {
        struct perf_event_attr a;
        struct pmu_info p;
        const char *why = NULL, *root = pmu_root("intel");

        CHECK_INT(pmu_detect(root, &p), 0);
        CHECK_INT(pmu_attr(root, &p, 500, &a, &why), 0);
        CHECK_INT(a.type, 4);
        CHECK_INT(a.config, 0x1cd);
        CHECK_INT(a.config1, 3);
        /* A fixed period, not frequency mode (which keeps a nohz_full CPU's tick
         * running): 500 samples/s at the reference 1e7 loads/s over the threshold. */
        CHECK_INT(a.freq, 0);
        CHECK_INT(a.sample_period, 20000);
        CHECK_INT(a.sample_type, PERF_SAMPLE_ADDR);
        CHECK_INT(a.precise_ip, 2);
        CHECK_INT(a.exclude_kernel, 1);
}

/* A term without a format file, a value wider than its bits, junk; a bare term is a flag. */
TEST(pmu_attr_event_terms) {
        struct perf_event_attr a;
        struct pmu_info p;
        const char *why = NULL, *root = pmu_root("intel");

        CHECK_INT(pmu_detect(root, &p), 0);
        snprintf(p.event, sizeof(p.event), "event=0xcd,frob=1");
        CHECK_INT(pmu_attr(root, &p, 500, &a, &why), -EINVAL);
        snprintf(p.event, sizeof(p.event), "event=0x1cd");
        CHECK_INT(pmu_attr(root, &p, 500, &a, &why), -EINVAL);
        snprintf(p.event, sizeof(p.event), "event=zz");
        CHECK_INT(pmu_attr(root, &p, 500, &a, &why), -EINVAL);
        /* A bare term is a flag: inv (config:23). */
        snprintf(p.event, sizeof(p.event), "event=0xcd,inv");
        CHECK_INT(pmu_attr(root, &p, 500, &a, &why), 0);
        CHECK_INT(a.config, 0xcd | 1 << 23);
}

TEST(pmu_attr_amd_ibs) {
        struct perf_event_attr a;
        struct pmu_info p;
        const char *why = NULL, *root = pmu_root("amd");

        CHECK_INT(pmu_detect(root, &p), 0);
        CHECK_INT(pmu_attr(root, &p, 1000, &a, &why), 0);
        CHECK_INT(a.type, 11);
        CHECK_INT(a.config, 0);
        /* 1,000 samples/s of a 2 GHz core's cycles, a multiple of 16 (IBS). */
        CHECK_INT(a.freq, 0);
        CHECK_INT(a.sample_period, 2000000);
        CHECK_INT(pmu_period(PMU_AMD_IBS, 3) % 16, 0);
        CHECK(pmu_period(PMU_AMD_IBS, UINT64_MAX) > 0 && pmu_period(PMU_INTEL_PEBS, 0) > 0);
}

/* Arm SPE records come through an AUX buffer: not usable, and why; no PMU: not usable. */
TEST(pmu_attr_unsupported) {
        struct perf_event_attr a;
        struct pmu_info p;
        const char *why = NULL, *root = pmu_root("spe");

        CHECK_INT(pmu_detect(root, &p), 0);
        CHECK_INT(pmu_attr(root, &p, 1000, &a, &why), -EOPNOTSUPP);
        CHECK(why && strstr(why, "AUX"));

        root = pmu_root("none");
        CHECK_INT(pmu_detect(root, &p), 0);
        CHECK_INT(pmu_attr(root, &p, 1000, &a, &why), -EOPNOTSUPP);
}

static int intro(void) {
        char root[4096];

        snprintf(root, sizeof(root), "%s/sys/2n2c", TEST_DATA_DIR);
        if (topology_read(root, &topo) < 0) {
                fprintf(stderr, "cannot read %s\n", root);
                return 1;
        }
        return 0;
}

static void outro(void) {
        topology_free(topo);
}

/* The unkeyed hash the table used, and its inverse: what a process that chooses its
 * page addresses can compute. */
static uint64_t old_hash(uint64_t x) {
        x ^= x >> 33;
        x *= 0xff51afd7ed558ccdull;
        x ^= x >> 33;
        return x;
}

static uint64_t old_hash_inverse(uint64_t y) {
        uint64_t inv = 0xff51afd7ed558ccdull;

        for (int i = 0; i < 5; i++)     /* Newton: the inverse of the odd constant mod 2^64 */
                inv *= 2 - 0xff51afd7ed558ccdull * inv;
        y ^= y >> 33;
        y *= inv;
        y ^= y >> 33;
        return y;
}

/* 2,000 page addresses whose keys (address + 1) all hashed to slot 0 of any table up
 * to 65,536 slots: under the unkeyed hash every lookup walked all of them (the
 * longest run here was 1,999); with the keyed hash they spread. */
TEST(chosen_addresses_do_not_collide) {
        struct page_agg *a = NULL;
        size_t n = 0;

        CHECK_INT(old_hash_inverse(old_hash(0x123456789abcdef0ull)), 0x123456789abcdef0ull);
        CHECK_INT(page_agg_new(topo, 4096, &a), 0);
        if (!a)
                return;
        for (uint64_t y = 0; n < 2000 && y < (UINT64_C(1) << 40); y += UINT64_C(1) << 16) {
                uint64_t key = old_hash_inverse(y);

                if ((key & 4095) != 1)
                        continue;       /* not a page address + 1 */
                CHECK_INT(page_agg_add_counts(a, key - 1, topo->nodes[0].id, 1), 0);
                n++;
        }
        CHECK_INT(n, 2000);
        CHECK_INT(page_agg_pages(a), 2000);
        printf("2000 chosen pages: the longest probe %zu slots\n", page_agg_longest_probe(a));
        CHECK(page_agg_longest_probe(a) < 100);
        page_agg_free(a);
}

DEFINE_TEST_MAIN_FULL(intro, outro)
