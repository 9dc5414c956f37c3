/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Sampled scans (daemon/sampled-scan.h) on their own, without a tick: which nodes count
 * as where a process works, when a full read records its huge VMAs (settled only,
 * nothing planned or held back), and what makes a later scan read numa_maps again (its
 * nodes, its size, its huge VMAs' bounds or their sampled placement changed: the
 * records are forgotten). The unchanged case needs move_pages(2) queries of a live
 * process: this one, on a huge VMA of its own (every page on this machine's node 0),
 * through proc_root "/proc". The sampled placement itself is test-vma-sample's. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>
#include "config.h"
#include "maps.h"
#include "numa_maps.h"
#include "pagesize.h"
#include "page-agg.h"
#include "proc.h"
#include "proc-records.h"
#include "sampled-scan.h"
#include "test.h"
#include "topology.h"
#include "vma-sample.h"

#define MIB (UINT64_C(1) << 20)

static struct topology *topo;   /* tests/data/sys/2n2c: node ids 0 and 1 */

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
        page_agg_free(f->p.seen);
        free(f->p.mapped);
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
        /* Exactly the share counts; just below it does not. */
        m = sampled_scan_cpu_nodes(&f.env, (const uint64_t[]) { 40, 60 });
        CHECK(!nodemask_test(&m, topo->nodes[0].id) && nodemask_test(&m, topo->nodes[1].id));
        m = sampled_scan_cpu_nodes(&f.env, (const uint64_t[]) { 41, 59 });
        CHECK(nodemask_empty(&m));
        f.cfg.min_cpu_share_pct = 10;
        m = sampled_scan_cpu_nodes(&f.env, (const uint64_t[]) { 900, 100 });
        CHECK(nodemask_test(&m, topo->nodes[0].id) && nodemask_test(&m, topo->nodes[1].id));
        m = sampled_scan_cpu_nodes(&f.env, (const uint64_t[]) { 0, 0 });
        CHECK(nodemask_empty(&m));
        done(&f);
}

/* Settled, nothing planned: its one huge VMA recorded with its pages per node, the
 * nodes its threads ran on and its size. */
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
        CHECK(nodemask_test(&f.p.huge_cpu_nodes, topo->nodes[0].id) &&
              !nodemask_test(&f.p.huge_cpu_nodes, topo->nodes[1].id));
        /* Below huge_vma: nothing to record. */
        f.cfg.huge_vma_kb = 4 * 1024 * 1024;
        sampled_scan_note(&f.env, &f.p, f.maps, ends, &plan, true, node0());
        CHECK_INT(f.p.n_huge, 0);
        CHECK(f.p.huge == NULL);
        done(&f);
}

/* A hugetlb VMA's baseline counts base pages: 4 huge pages of 2 MiB on node 1 are 2048
 * pages of 4 KiB (or what the base page is here). */
TEST(hugetlb_baseline_in_base_pages) {
        static const char text[] =
                "7f2000000000 default file=/anon_hugepage\\040(deleted) huge anon=4 dirty=4 N1=4 "
                "kernelpagesize_kB=2048\n";
        const uint64_t e[] = { 0x7f2000000000 + 2048 * MIB };
        struct fixture f;
        struct numa_maps *m = NULL;
        struct plan plan = { .reason = REASON_LOCAL, .full_target = -1 };

        start(&f);
        CHECK_INT(numa_maps_parse(text, sizeof(text) - 1, &m), 0);
        if (!m) {
                done(&f);
                return;
        }
        sampled_scan_note(&f.env, &f.p, m, e, &plan, true, node0());
        CHECK_INT(f.p.n_huge, 1);
        if (f.p.n_huge == 1) {
                CHECK_INT(f.p.huge[0].pages[topo->nodes[1].id], 4 * (2 * MIB / page_size()));
                CHECK_INT(f.p.huge[0].pages[topo->nodes[0].id], 0);
        }
        numa_maps_free(m);
        done(&f);
}

/* At most SAMPLED_SCAN_VMAS_MAX huge VMAs are tracked: one more and the process is read
 * in full. */
TEST(too_many_huge_vmas_are_not_tracked) {
        for (size_t n = SAMPLED_SCAN_VMAS_MAX; n <= SAMPLED_SCAN_VMAS_MAX + 1; n++) {
                char text[8192];
                uint64_t e[SAMPLED_SCAN_VMAS_MAX + 1];
                size_t o = 0;
                struct fixture f;
                struct numa_maps *m = NULL;
                struct plan plan = { .reason = REASON_LOCAL, .full_target = -1 };

                start(&f);
                f.cfg.huge_vma_kb = 1024;
                for (size_t i = 0; i < n; i++) {
                        uint64_t s = UINT64_C(0x7f0000000000) + i * 16 * MIB;

                        o += (size_t) snprintf(text + o, sizeof(text) - o,
                                               "%" PRIx64 " default anon=256 dirty=256 N0=256 kernelpagesize_kB=4\n", s);
                        e[i] = s + 8 * MIB;
                }
                CHECK_INT(numa_maps_parse(text, o, &m), 0);
                if (m)
                        sampled_scan_note(&f.env, &f.p, m, e, &plan, true, node0());
                CHECK_INT(f.p.n_huge, n <= SAMPLED_SCAN_VMAS_MAX ? n : 0);
                numa_maps_free(m);
                done(&f);
        }
}

/* Not settled, moves planned, or held back for a while (cooldown, a full target, a
 * hugetlb pool): nothing recorded, and what was is forgotten. */
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
        plan.reason = REASON_HUGE_POOL;
        sampled_scan_note(&f.env, &f.p, f.maps, ends, &plan, true, node0());
        CHECK_INT(f.p.n_huge, 0);
        plan.reason = REASON_LOCAL;
        plan.skipped_bytes[REASON_TARGET_FULL] = 4096;
        sampled_scan_note(&f.env, &f.p, f.maps, ends, &plan, true, node0());
        CHECK_INT(f.p.n_huge, 0);
        plan.skipped_bytes[REASON_TARGET_FULL] = 0;
        plan.skipped_bytes[REASON_COOLDOWN] = 4096;
        sampled_scan_note(&f.env, &f.p, f.maps, ends, &plan, true, node0());
        CHECK_INT(f.p.n_huge, 0);
        /* Left alone for good (shared, a policy): settled all the same. */
        plan.skipped_bytes[REASON_COOLDOWN] = 0;
        plan.skipped_bytes[REASON_SHARED] = 4096;
        sampled_scan_note(&f.env, &f.p, f.maps, ends, &plan, true, node0());
        CHECK_INT(f.p.n_huge, 1);
        /* huge_vma = 0 turns sampled scans off. */
        f.cfg.huge_vma_kb = 0;
        sampled_scan_note(&f.env, &f.p, f.maps, ends, &plan, true, node0());
        CHECK_INT(f.p.n_huge, 0);
        done(&f);
}

TEST(forget_drops_the_records) {
        struct fixture f;
        struct plan plan = { .reason = REASON_LOCAL, .full_target = -1 };

        start(&f);
        sampled_scan_note(&f.env, &f.p, f.maps, ends, &plan, true, node0());
        CHECK_INT(f.p.n_huge, 1);
        sampled_scan_forget(&f.p);
        CHECK_INT(f.p.n_huge, 0);
        CHECK(f.p.huge == NULL);
        CHECK(!sampled_scan_unchanged(&f.env, &f.p, node0(), f.p.rss_kb));
        sampled_scan_forget(&f.p);      /* twice: nothing to do */
        CHECK_INT(f.p.n_huge, 0);
        done(&f);
}

/* Its threads on other nodes, or its size changed past the tolerance: read in full
 * (false), the records forgotten. Decided before any page is sampled (the process,
 * 4242, is not queried). */
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
        /* Shrunk by as much: changed too. */
        sampled_scan_note(&f.env, &f.p, f.maps, ends, &plan, true, node0());
        CHECK(!sampled_scan_unchanged(&f.env, &f.p, node0(), f.p.rss_kb - f.p.rss_kb / 16));
        CHECK_INT(f.p.n_huge, 0);
        /* Nothing recorded: nothing to sample. */
        CHECK(!sampled_scan_unchanged(&f.env, &f.p, node0(), f.p.rss_kb));
        done(&f);
}

/* Page samples taken since the last scan are evidence to decide on: read in full. */
TEST(fresh_page_samples_mean_a_full_read) {
        struct fixture f;
        struct plan plan = { .reason = REASON_LOCAL, .full_target = -1 };

        start(&f);
        sampled_scan_note(&f.env, &f.p, f.maps, ends, &plan, true, node0());
        CHECK_INT(f.p.n_huge, 1);
        CHECK_INT(page_agg_new(topo, page_size(), &f.p.seen), 0);
        CHECK_INT(page_agg_add_counts(f.p.seen, 0x7f0000001000, topo->nodes[1].id, 2) >= 0, 1);
        CHECK(page_agg_fresh(f.p.seen) > 0);
        CHECK(!sampled_scan_unchanged(&f.env, &f.p, node0(), f.p.rss_kb));
        done(&f);
}

/* --- on this process's own huge VMA (move_pages queries) ---------------------------- */

#define AREA (16 * MIB)

/* An anonymous area of AREA bytes, touched, that is one VMA of its own (inaccessible
 * guard pages on both sides keep it from merging with its neighbours); *ret_base is
 * the whole mapping for munmap (AREA + 2 pages). */
static char *own_area(char **ret_base) {
        const size_t ps = page_size();
        char *base = mmap(NULL, AREA + 2 * ps, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0), *a;

        if (base == MAP_FAILED)
                return NULL;
        a = base + ps;
        if (mprotect(a, AREA, PROT_READ | PROT_WRITE) < 0) {
                munmap(base, AREA + 2 * ps);
                return NULL;
        }
        madvise(a, AREA, MADV_NOHUGEPAGE);
        memset(a, 1, AREA);
        *ret_base = base;
        return a;
}

/* The full read of the area, as the scan makes it: its line of this process's
 * numa_maps, and its end from maps. */
static int read_area(const char *a, struct numa_maps **ret_maps, uint64_t *ret_end) {
        char *buf = NULL, key[32], *line, *nl;
        size_t len = 0, n_ranges = 0;
        struct vma_range *ranges = NULL;
        int r;

        r = proc_read_numa_maps("/proc", getpid(), &buf, &len);
        if (r < 0)
                return r;
        /* The kernel prints each start as %08lx (show_numa_map). */
        snprintf(key, sizeof(key), "\n%08" PRIx64 " ", (uint64_t) (uintptr_t) a);
        if (strncmp(buf, key + 1, strlen(key + 1)) == 0)
                line = buf;
        else if ((line = strstr(buf, key)))
                line++;
        else {
                free(buf);
                return -ENOENT;
        }
        nl = strchr(line, '\n');
        r = numa_maps_parse(line, nl ? (size_t) (nl - line + 1) : strlen(line), ret_maps);
        free(buf);
        if (r < 0)
                return r;
        r = maps_read("/proc", getpid(), &ranges, &n_ranges);
        if (r < 0)
                return r;
        *ret_end = maps_end_of(ranges, n_ranges, (uintptr_t) a);
        free(ranges);
        return 0;
}

struct live {
        struct fixture f;
        char *base, *area;
        struct numa_maps *maps;
        uint64_t end;
        int node;           /* the node of the area's pages, as numa_maps says */
};

/* Whether this process, settled at a full read of its area (huge at huge_vma = AREA),
 * is set up; false: the case is to be skipped (*why) or has failed (a check). */
static bool live_start(struct live *l, const char **why) {
        const struct plan plan = { .reason = REASON_LOCAL, .full_target = -1 };
        const struct vma *v;
        uint64_t est[2];
        int r;

        *l = (struct live) { .node = -1 };
        *why = NULL;
        start(&l->f);
        l->f.cfg.huge_vma_kb = AREA / 1024;
        l->f.env.proc_root = "/proc";
        l->f.p.pid = getpid();
        l->f.p.rss_kb = 1024 * 1024;      /* 1 GiB said: the tolerance is 32 MiB */
        l->area = own_area(&l->base);
        CHECK(l->area != NULL);
        if (!l->area)
                return false;
        CHECK_INT(read_area(l->area, &l->maps, &l->end), 0);
        CHECK_INT(l->end, (uintptr_t) l->area + AREA);
        if (!l->maps || l->maps->n_vmas != 1 || l->end != (uintptr_t) l->area + AREA)
                return false;
        v = &l->maps->vmas[0];
        CHECK_INT(v->np_count, 1);      /* touched here: every page on one node */
        if (v->np_count != 1)
                return false;
        l->node = (int) vma_node_pages(l->maps, v)[0].node;
        if (l->node > 1) {
                *why = "this process's memory is on a node above 1 (the stored topology has 0 and 1)";
                return false;
        }
        r = vma_sample_query(getpid(), (uintptr_t) l->area, l->end, 0, est, 2);
        if (r == -ENOSYS || r == -EPERM || r == -EACCES) {
                *why = "move_pages(2) is not allowed here";
                return false;
        }
        CHECK(r > 0);
        sampled_scan_note(&l->f.env, &l->f.p, l->maps, &l->end, &plan, true, node0());
        CHECK_INT(l->f.p.n_huge, 1);
        return r > 0 && l->f.p.n_huge == 1;
}

static void live_done(struct live *l) {
        if (l->base)
                munmap(l->base, AREA + 2 * page_size());
        numa_maps_free(l->maps);
        done(&l->f);
}

#define LIVE_START(l) do {                                                      \
        const char *_why;                                                       \
        if (!live_start(l, &_why)) {                                            \
                live_done(l);                                                   \
                if (_why)                                                       \
                        TEST_SKIP("%s", _why);                                  \
                return;                                                         \
        } } while (0)

/* The tolerance of a sampled scan (sampled-scan.c): min_misplaced, and 1/SCAN_GROW_SHARE
 * of the whole. */
static uint64_t tolerance(const struct nb_config *cfg, uint64_t whole, uint64_t unit_kb) {
        uint64_t floor = cfg->min_misplaced_kb / unit_kb;

        return whole / SCAN_GROW_SHARE > floor ? whole / SCAN_GROW_SHARE : floor;
}

/* Nothing changed since the full read: unchanged, scan after scan (another phase of
 * the sample each time), the records kept. Its size within the tolerance either way
 * is no change; one kB past it is. */
TEST(unchanged_on_a_live_process) {
        struct live l;
        uint64_t rss, tol;

        LIVE_START(&l);
        rss = l.f.p.rss_kb;
        tol = tolerance(&l.f.cfg, rss, 1);
        CHECK_INT(l.f.p.huge[0].start, (uintptr_t) l.area);
        CHECK_INT(l.f.p.huge[0].pages[l.node], AREA / page_size());
        for (int i = 0; i < 3; i++) {
                l.f.p.scans++;
                CHECK(sampled_scan_unchanged(&l.f.env, &l.f.p, node0(), rss));
                CHECK_INT(l.f.p.n_huge, 1);
        }
        CHECK(sampled_scan_unchanged(&l.f.env, &l.f.p, node0(), rss + tol));
        CHECK(sampled_scan_unchanged(&l.f.env, &l.f.p, node0(), rss - tol));
        CHECK_INT(l.f.p.n_huge, 1);
        CHECK(!sampled_scan_unchanged(&l.f.env, &l.f.p, node0(), rss + tol + 1));
        CHECK_INT(l.f.p.n_huge, 0);
        live_done(&l);
}

/* The sampled placement against the full read's: within the tolerance it stands, one
 * page past it is a change (the area has VMA_SAMPLE_PAGES pages or fewer: every page
 * is queried, the estimate is exact). */
TEST(placement_changed_means_a_full_read) {
        struct live l;
        uint64_t pages = AREA / page_size(), tol;

        LIVE_START(&l);
        CHECK(pages <= VMA_SAMPLE_PAGES);
        tol = tolerance(&l.f.cfg, pages, page_size() / 1024);
        l.f.p.huge[0].pages[l.node] = pages - tol;
        CHECK(sampled_scan_unchanged(&l.f.env, &l.f.p, node0(), l.f.p.rss_kb));
        CHECK_INT(l.f.p.n_huge, 1);
        l.f.p.huge[0].pages[l.node] = pages - tol - 1;
        CHECK(!sampled_scan_unchanged(&l.f.env, &l.f.p, node0(), l.f.p.rss_kb));
        CHECK_INT(l.f.p.n_huge, 0);
        live_done(&l);
}

/* As if the full read had found the area on the other node: the sample says it is
 * not there. */
TEST(moved_to_another_node_means_a_full_read) {
        struct live l;

        LIVE_START(&l);
        l.f.p.huge[0].pages[1 - l.node] = l.f.p.huge[0].pages[l.node];
        l.f.p.huge[0].pages[l.node] = 0;
        CHECK(!sampled_scan_unchanged(&l.f.env, &l.f.p, node0(), l.f.p.rss_kb));
        CHECK_INT(l.f.p.n_huge, 0);
        live_done(&l);
}

/* The huge VMA's bounds changed (its last page unmapped): a full read. */
TEST(bounds_changed_means_a_full_read) {
        struct live l;

        LIVE_START(&l);
        CHECK(sampled_scan_unchanged(&l.f.env, &l.f.p, node0(), l.f.p.rss_kb));
        CHECK_INT(munmap(l.area + AREA - page_size(), page_size()), 0);
        CHECK(!sampled_scan_unchanged(&l.f.env, &l.f.p, node0(), l.f.p.rss_kb));
        CHECK_INT(l.f.p.n_huge, 0);
        live_done(&l);
}

/* The process is gone (its maps cannot be read): a full read, which will say so. */
TEST(gone_means_a_full_read) {
        struct live l;

        LIVE_START(&l);
        l.f.p.pid = (1 << 22) + 1;      /* above any pid_max */
        CHECK(!sampled_scan_unchanged(&l.f.env, &l.f.p, node0(), l.f.p.rss_kb));
        CHECK_INT(l.f.p.n_huge, 0);
        live_done(&l);
}

static int intro(void) {
        return topology_read(TEST_DATA_DIR "/sys/2n2c", &topo) < 0;
}

static void outro(void) {
        topology_free(topo);
}

DEFINE_TEST_MAIN_FULL(intro, outro)
