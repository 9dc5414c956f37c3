/* SPDX-License-Identifier: GPL-2.0-or-later */
/* lib/pagesample on stored sample streams (tests/data/pmu, see make-streams.py) and
 * lib/pmu on stored /sys trees (tests/data/sys-pmu). */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include "cleanup.h"
#include "pagesample.h"
#include "parse.h"
#include "pmu.h"
#include "test.h"
#include "topology.h"

static struct topology *topo;

static int replay(const char *name, uint64_t page_size, unsigned min_samples, struct page_decision *ret) {
        _cleanup_free_ char *buf = NULL;
        _cleanup_free_ struct page_sample *s = NULL;
        _cleanup_(page_agg_freep) struct page_agg *a = NULL;
        char path[4096];
        size_t len, n;
        unsigned bad = 0;
        int r;

        snprintf(path, sizeof(path), "%s/pmu/%s", TEST_DATA_DIR, name);
        r = read_file_at(AT_FDCWD, path, 1 << 24, &buf, &len);
        CHECK_INT(r, 0);
        if (r < 0)
                return r;
        r = page_samples_parse(buf, len, &s, &n, &bad);
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

static void test_private(void) {
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
        page_decision_done(&d);

        /* One sample is not evidence: with min_samples 6 nothing moves. */
        CHECK_INT(replay("private.samples", 4096, 6, &d), 0);
        CHECK_INT(d.n_moves, 0);
        CHECK_INT(d.too_few, 128);
        page_decision_done(&d);

        /* Per 2 MiB huge page: the 64 pages of each thread fall in one huge page. */
        CHECK_INT(replay("private.samples", 2u << 20, 2, &d), 0);
        CHECK_INT(d.pages, 2);
        CHECK_INT(d.n_moves, 2);
        CHECK_INT(d.moves[0].page, 0x7f0000000000);
        CHECK_INT(d.moves[0].node, 0);
        CHECK_INT(d.moves[1].node, 1);
        page_decision_done(&d);
}

static void test_mixed(void) {
        struct page_decision d;

        CHECK_INT(replay("mixed.samples", 4096, 2, &d), 0);
        CHECK_INT(d.n_moves, 32);
        CHECK_INT(d.shared, 8);
        CHECK_INT(d.too_few, 8);
        CHECK_INT(d.no_node, 2);
        CHECK_INT(d.pages, 48);
        for (size_t i = 0; i < d.n_moves; i++)
                CHECK(d.moves[i].page >> 36 == 0x7f0 || d.moves[i].page >> 36 == 0x7f1);
        page_decision_done(&d);

        CHECK_INT(replay("pingpong.samples", 4096, 2, &d), 0);
        CHECK_INT(d.pages, 1);
        CHECK_INT(d.n_moves, 0);
        CHECK_INT(d.shared, 1);
        page_decision_done(&d);
}

static void test_counts(void) {
        _cleanup_(page_agg_freep) struct page_agg *a = NULL;
        struct page_decision d;

        /* What the BPF map hands over: (page, node, count). */
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
        page_decision_done(&d);
        CHECK_INT(page_agg_decide(a, 0, &d), -EINVAL);
}

static void test_parse(void) {
        static const char *const bad[] = {
                "1 0\n", "1 0 0x10 4\n", "x 0 0x10\n", "1 0 16\n", "1 9000 0x10\n", "0 0 0x10\n", "1 0 0x\n",
                "1 -1 0x10\n", "1 0 0xg\n",
        };
        struct page_sample *s = NULL;
        size_t n = 0;
        unsigned line = 0;

        static const char good[] = "# c\n\n 5\t1 0xABC # tail\n";
        CHECK_INT(page_samples_parse(good, strlen(good), &s, &n, &line), 0);
        CHECK_INT(n, 1);
        if (n == 1) {
                CHECK_INT(s[0].tid, 5);
                CHECK_INT(s[0].cpu, 1);
                CHECK_INT(s[0].addr, 0xabc);
        }
        free(s);
        for (size_t i = 0; i < ELEMENTSOF(bad); i++) {
                s = NULL;
                line = 0;
                CHECK_INT(page_samples_parse(bad[i], strlen(bad[i]), &s, &n, &line), -EINVAL);
                CHECK_INT(line, 1);
                CHECK(s == NULL);
        }
        CHECK_INT(page_samples_parse("", 0, &s, &n, &line), 0);
        CHECK_INT(n, 0);
        free(s);
}

static void test_pmu(void) {
        struct pmu_info p;
        char root[4096];

        snprintf(root, sizeof(root), "%s/sys-pmu/intel", TEST_DATA_DIR);
        CHECK_INT(pmu_detect(root, &p), 0);
        CHECK_STR(pmu_kind_name(p.kind), "intel-pebs");
        CHECK_STR(p.device, "cpu");
        CHECK_INT(p.type, 4);
        CHECK_STR(p.event, "event=0xcd,umask=0x1,ldlat=3");

        snprintf(root, sizeof(root), "%s/sys-pmu/amd", TEST_DATA_DIR);
        CHECK_INT(pmu_detect(root, &p), 0);
        CHECK_STR(pmu_kind_name(p.kind), "amd-ibs");
        CHECK_INT(p.type, 11);

        snprintf(root, sizeof(root), "%s/sys-pmu/spe", TEST_DATA_DIR);
        CHECK_INT(pmu_detect(root, &p), 0);
        CHECK_STR(pmu_kind_name(p.kind), "arm-spe");
        CHECK_STR(p.device, "arm_spe_0");
        CHECK_INT(p.type, 9);

        /* The test bed's guests: software and tracepoint events only. */
        snprintf(root, sizeof(root), "%s/sys-pmu/none", TEST_DATA_DIR);
        CHECK_INT(pmu_detect(root, &p), 0);
        CHECK_INT(p.kind, PMU_NONE);
        CHECK_STR(pmu_kind_name(p.kind), "none");

        snprintf(root, sizeof(root), "%s/sys-pmu/missing", TEST_DATA_DIR);
        CHECK_INT(pmu_detect(root, &p), -ENOENT);
}

int main(void) {
        char root[4096];

        snprintf(root, sizeof(root), "%s/sys/2n2c", TEST_DATA_DIR);
        if (topology_read(root, &topo) < 0) {
                fprintf(stderr, "cannot read %s\n", root);
                return 1;
        }
        CHECK_INT(topology_cpu_node(topo, 3), 1);
        test_private();
        test_mixed();
        test_counts();
        test_parse();
        test_pmu();
        topology_free(topo);
        return test_failures;
}
