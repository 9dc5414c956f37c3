/* SPDX-License-Identifier: GPL-2.0-or-later */
/* topology_read on sysfs snapshots: three captured from test-bed guests (2n2c, 4n1c,
 * 2n1m: see tests/vm/capture-sys.sh), 2n1m with memory tiers added by hand (the
 * kernel's devices/virtual/memory_tiering: 2n1m-tiered, node 2 in a lower tier;
 * 2n1m-dram-tier, node 2 beside DRAM as before 6.10; 2n1m-hbm, node 2 in a faster
 * tier), a hand-made sparse one (nodes 0 and 2, node 2
 * with CPUs but no memory), and broken trees, stored or made here in a temporary
 * directory from the sparse one with one file changed. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdlib.h>
#include <sys/stat.h>
#include "test.h"
#include "tmptree.h"
#include "topology.h"

static struct topology *load(const char *name) {
        char root[PATH_MAX];
        struct topology *t = NULL;
        int r;

        snprintf(root, sizeof(root), "%s/sys/%s", TEST_DATA_DIR, name);
        r = topology_read(root, &t);
        if (r < 0)
                fprintf(stderr, "topology_read(%s): %s\n", root, strerror(-r));
        CHECK_INT(r, 0);
        return t;
}

static void check_cpus(const struct topology *t, unsigned node, const char *expect) {
        const struct topo_node *n = topology_node(t, node);
        char buf[CPUMASK_STRMAX];

        CHECK(n != NULL);
        if (!n)
                return;
        cpumask_format(&n->cpus, buf, sizeof(buf));
        CHECK_STR(buf, expect);
}

static void check_mask(const nb_nodemask *m, const char *expect) {
        char buf[NODEMASK_STRMAX];

        nodemask_format(m, buf, sizeof(buf));
        CHECK_STR(buf, expect);
}

/* 2 nodes of 2 CPUs and 1 GiB each. */
TEST(captured_2n2c) {
        _cleanup_(topology_freep) struct topology *t = load("2n2c");
        if (!t)
                return;
        CHECK_INT(t->n_nodes, 2);
        check_mask(&t->online, "0-1");
        check_mask(&t->with_memory, "0-1");
        check_mask(&t->with_cpus, "0-1");
        check_cpus(t, 0, "0-1");
        check_cpus(t, 1, "2-3");
        CHECK_INT(t->n_cpus, 4);
        CHECK_INT(topology_cpu_node(t, 0), 0);
        CHECK_INT(topology_cpu_node(t, 1), 0);
        CHECK_INT(topology_cpu_node(t, 2), 1);
        CHECK_INT(topology_cpu_node(t, 3), 1);
        CHECK_INT(topology_cpu_node(t, 4), -1);
        CHECK_INT(topology_distance(t, 0, 0), 10);
        CHECK_INT(topology_distance(t, 0, 1), 20);
        CHECK_INT(topology_distance(t, 1, 0), 20);
        CHECK_INT(topology_distance(t, 0, 2), -1);
        /* Captured values (guest with 1G per node). */
        CHECK_INT(t->nodes[0].mem_total_kb, 1030480);
        CHECK_INT(t->nodes[0].mem_free_kb, 989148);
        CHECK(t->nodes[1].mem_total_kb > 900 * 1024);
        CHECK(t->nodes[0].has_memory && t->nodes[0].has_cpus);
}

TEST(captured_4n1c_ring) {
        /* A ring: neighbours at 16, the opposite node at 22. */
        static const int expect[4][4] = {
                { 10, 16, 22, 16 },
                { 16, 10, 16, 22 },
                { 22, 16, 10, 16 },
                { 16, 22, 16, 10 },
        };
        _cleanup_(topology_freep) struct topology *t = load("4n1c");
        if (!t)
                return;
        CHECK_INT(t->n_nodes, 4);
        check_mask(&t->online, "0-3");
        for (unsigned a = 0; a < 4; a++) {
                char cpu[8];
                snprintf(cpu, sizeof(cpu), "%u", a);
                check_cpus(t, a, cpu);
                CHECK_INT(topology_cpu_node(t, a), a);
                CHECK(t->nodes[a].has_memory);
                for (unsigned b = 0; b < 4; b++)
                        CHECK_INT(topology_distance(t, a, b), expect[a][b]);
        }
}

/* 2 nodes with a CPU each, and a third with memory only. */
TEST(captured_2n1m_memory_only_node) {
        _cleanup_(topology_freep) struct topology *t = load("2n1m");
        const struct topo_node *n2;
        if (!t)
                return;
        CHECK_INT(t->n_nodes, 3);
        check_mask(&t->with_memory, "0-2");
        check_mask(&t->with_cpus, "0-1");
        check_cpus(t, 0, "0");
        check_cpus(t, 1, "1");
        check_cpus(t, 2, "");
        n2 = topology_node(t, 2);
        CHECK(n2 != NULL);
        if (n2) {
                /* The memory-only node: memory, no CPU, and no CPU maps to it. */
                CHECK(n2->has_memory);
                CHECK(!n2->has_cpus);
                CHECK(n2->mem_total_kb > 400 * 1024);
        }
        CHECK_INT(t->n_cpus, 2);
        for (unsigned c = 0; c < t->n_cpus; c++)
                CHECK(topology_cpu_node(t, c) != 2);
        CHECK_INT(topology_distance(t, 2, 0), 20);
        CHECK_INT(topology_distance(t, 2, 2), 10);
}

static void check_tiers(const char *tree, int tier0, int tier2, int fast, const char *slow) {
        _cleanup_(topology_freep) struct topology *t = load(tree);
        if (!t)
                return;
        CHECK_INT(t->nodes[0].tier, tier0);
        CHECK_INT(t->nodes[1].tier, tier0);
        CHECK_INT(t->nodes[2].tier, tier2);
        CHECK_INT(t->fast_tier, fast);
        check_mask(&t->slow, slow);
        check_mask(&t->slow_default, slow);
        for (unsigned i = 0; i < t->n_nodes; i++)
                CHECK(t->nodes[i].slow == topology_node_slow(t, t->nodes[i].id));
}

/* The memory-only node is slow whether the kernel has no tiers (before 6.1), puts it
 * beside DRAM (6.1 to 6.9 for ordinary RAM) or below it (HMAT from 6.10, CXL, PMEM);
 * not when the kernel puts it in a faster tier (HBM without CPUs). */
TEST(tiers_default_rule) {
        check_tiers("2n1m", -1, -1, -1, "2");
        check_tiers("2n1m-tiered", 4, 8, 4, "2");
        check_tiers("2n1m-dram-tier", 4, 4, 4, "2");
        check_tiers("2n1m-hbm", 4, 3, 4, "");
}

/* Every node with CPUs and no tiers: nothing is slow. */
TEST(tiers_none_without_memory_only_nodes) {
        _cleanup_(topology_freep) struct topology *t = load("4n1c");
        if (!t)
                return;
        check_mask(&t->slow, "");
        for (unsigned i = 0; i < t->n_nodes; i++)
                CHECK_INT(t->nodes[i].tier, -1);
        CHECK_INT(t->fast_tier, -1);
}

/* slow_nodes: a list replaces the rule (nodes without memory dropped); empty restores it. */
TEST(tiers_override) {
        _cleanup_(topology_freep) struct topology *t = load("2n1m-tiered");
        nb_nodemask m = {}, none = {};
        if (!t)
                return;
        nodemask_set(&m, 1);
        nodemask_set(&m, 7);            /* not a node */
        topology_set_slow(t, &m);
        check_mask(&t->slow, "1");
        CHECK(t->nodes[1].slow && !t->nodes[2].slow && !t->nodes[0].slow);
        CHECK(topology_node_slow(t, 1) && !topology_node_slow(t, 2) && !topology_node_slow(t, 7));
        CHECK(!topology_node_slow(t, 5000));
        topology_set_slow(t, &none);
        check_mask(&t->slow, "2");
        CHECK(t->nodes[2].slow && !t->nodes[1].slow);
        topology_set_slow(t, NULL);
        check_mask(&t->slow, "2");
}

/* Nodes 0 and 2: the node index is not the node id. */
TEST(sparse_node_ids) {
        _cleanup_(topology_freep) struct topology *t = load("sparse");
        if (!t)
                return;
        CHECK_INT(t->n_nodes, 2);
        check_mask(&t->online, "0,2");
        CHECK_INT(t->nodes[0].id, 0);
        CHECK_INT(t->nodes[1].id, 2);
        CHECK_INT(topology_node_index(t, 0), 0);
        CHECK_INT(topology_node_index(t, 1), -1);
        CHECK_INT(topology_node_index(t, 2), 1);
        CHECK(topology_node(t, 1) == NULL);
        CHECK_INT(topology_distance(t, 0, 2), 20);
        CHECK_INT(topology_distance(t, 2, 2), 10);
        CHECK_INT(topology_distance(t, 0, 1), -1);
        CHECK_INT(topology_cpu_node(t, 1), 0);
        CHECK_INT(topology_cpu_node(t, 2), 2);
        CHECK_INT(topology_cpu_node(t, 3), 2);
        /* Node 2 has CPUs but no memory. */
        CHECK(!t->nodes[1].has_memory);
        CHECK(t->nodes[1].has_cpus);
        CHECK_INT(t->nodes[1].mem_total_kb, 0);
        check_mask(&t->with_memory, "0");
}

/* 2n2c with hugetlb pools of 2 MiB pages, 2 on node 0 and 8 on node 1 (1 GiB pages:
 * none), read by size; the trees without hugepages/ have no pools. */
TEST(captured_2n2c_hugepages) {
        _cleanup_(topology_freep) struct topology *t = load("2n2c-huge");
        _cleanup_(topology_freep) struct topology *plain = load("2n2c");
        const struct topo_hugepages *h;
        unsigned slot = 99;

        if (!t || !plain)
                return;
        CHECK_INT(t->nodes[0].n_huge, 2);
        CHECK_INT(t->nodes[0].huge[0].size_kb, 2048);
        CHECK_INT(t->nodes[0].huge[1].size_kb, 1048576);
        CHECK_INT(t->n_huge_slots, 4);
        h = topology_hugepages(t, 1, 2048, &slot);
        CHECK(h && h->free == 8);
        CHECK_INT(slot, 2);
        h = topology_hugepages(t, 0, 2048, &slot);
        CHECK(h && h->free == 2);
        CHECK_INT(slot, 0);
        h = topology_hugepages(t, 1, 1048576, NULL);
        CHECK(h && h->free == 0);
        CHECK(!topology_hugepages(t, 1, 4, NULL));
        CHECK(!topology_hugepages(t, 5, 2048, NULL));
        CHECK_INT(plain->n_huge_slots, 0);
        CHECK(!topology_hugepages(plain, 1, 2048, NULL));
}

/* ---- broken trees: the sparse tree with one file replaced or removed ---- */

struct file { const char *path, *content; };

static const struct file sparse_files[] = {
        { "devices/system/node/online", "0,2\n" },
        { "devices/system/node/has_memory", "0\n" },
        { "devices/system/node/has_cpu", "0,2\n" },
        { "devices/system/cpu/online", "0-3\n" },
        { "devices/system/node/node0/cpulist", "0-1\n" },
        { "devices/system/node/node2/cpulist", "2-3\n" },
        { "devices/system/node/node0/distance", "10 20\n" },
        { "devices/system/node/node2/distance", "20 10\n" },
        { "devices/system/node/node0/meminfo",
          "Node 0 MemTotal:        1030480 kB\nNode 0 MemFree:          989148 kB\n" },
        { "devices/system/node/node2/meminfo",
          "Node 2 MemTotal:              0 kB\nNode 2 MemFree:               0 kB\n" },
};

/* Builds the sparse tree with `path` replaced by `content` (NULL: left out) and
 * returns topology_read's result on it. */
static int read_variant(const char *path, const char *content, struct topology **ret) {
        char root[] = "/tmp/test-topology-XXXXXX";
        int r;

        if (!mkdtemp(root))
                return -errno;
        for (size_t i = 0; i < ELEMENTSOF(sparse_files); i++) {
                const char *c = sparse_files[i].content;
                if (strcmp(sparse_files[i].path, path) == 0)
                        c = content;
                if (c)
                        tmptree_write_at(root, sparse_files[i].path, c);
        }
        r = topology_read(root, ret);
        tmptree_remove(root);
        return r;
}

/* The sparse tree with extra files (memory tiers) added: topology_read's result. */
static int read_with(const struct file *extra, size_t n, struct topology **ret) {
        char root[] = "/tmp/test-topology-XXXXXX";
        int r;

        if (!mkdtemp(root))
                return -errno;
        for (size_t i = 0; i < ELEMENTSOF(sparse_files); i++)
                tmptree_write_at(root, sparse_files[i].path, sparse_files[i].content);
        for (size_t i = 0; i < n; i++)
                tmptree_write_at(root, extra[i].path, extra[i].content);
        r = topology_read(root, ret);
        tmptree_remove(root);
        return r;
}

static void expect_error(const char *path, const char *content, int error) {
        struct topology *t = (struct topology *) 0x1;  /* must stay untouched */
        int r = read_variant(path, content, &t);

        if (r != error)
                fprintf(stderr, "variant %s = \"%s\": got %d\n", path, content ? content : "(missing)", r);
        CHECK_INT(r, error);
        CHECK(t == (struct topology *) 0x1);
}

/* The stored one: node 2's distance row has one number for two nodes. */
TEST(broken_stored_tree) {
        struct topology *t = NULL;
        char root[PATH_MAX];

        snprintf(root, sizeof(root), "%s/sys/broken", TEST_DATA_DIR);
        CHECK_INT(topology_read(root, &t), -EINVAL);
        CHECK(t == NULL);
}

/* The unchanged variant reads: the broken_* cases below test what they change. */
TEST(broken_variant_unchanged_reads) {
        struct topology *t = NULL;

        CHECK_INT(read_variant("", NULL, &t), 0);
        topology_free(t);
}

TEST(broken_node_and_cpu_lists) {
        expect_error("devices/system/node/online", "0,x\n", -EINVAL);
        expect_error("devices/system/node/online", "\n", -EINVAL);            /* no node */
        expect_error("devices/system/node/has_memory", "0-1\n", -EINVAL);     /* 1 is not online */
        expect_error("devices/system/node/has_cpu", "0,,2\n", -EINVAL);
        expect_error("devices/system/cpu/online", "3-1\n", -EINVAL);
        expect_error("devices/system/node/node2/cpulist", "1-2\n", -EINVAL);  /* CPU 1 in two nodes */
}

TEST(broken_distances) {
        expect_error("devices/system/node/node0/distance", "10 20 30\n", -EINVAL);
        expect_error("devices/system/node/node0/distance", "10 -20\n", -EINVAL);
        expect_error("devices/system/node/node0/distance", "10 999\n", -EINVAL);
        expect_error("devices/system/node/node0/distance", "", -EINVAL);
}

TEST(broken_meminfo) {
        expect_error("devices/system/node/node0/meminfo",
                     "Node 0 MemTotal:        1030480 kB\n", -EINVAL);           /* no MemFree */
        expect_error("devices/system/node/node0/meminfo",
                     "Node 2 MemTotal:  10 kB\nNode 2 MemFree:  5 kB\n", -EINVAL); /* another node's */
        expect_error("devices/system/node/node0/meminfo",
                     "Node 0 MemTotal:  10 kB\nNode 0 MemFree:  5x kB\n", -EINVAL);
        expect_error("devices/system/node/node0/meminfo",
                     "Node 0 MemTotal:  10 kB\nNode 0 MemFree:  50 kB\n", -EINVAL);  /* free > total */
        expect_error("devices/system/node/node0/meminfo",
                     "Node 0 MemTotal:  10 kB\nNode 0 MemFree:  5 kB\nNode 0 MemFree:  5 kB\n", -EINVAL);
        expect_error("devices/system/node/node0/meminfo",
                     "Node 0 MemTotal:  99999999999999999999999 kB\nNode 0 MemFree:  5 kB\n", -EINVAL);
}

#define TIERS "devices/virtual/memory_tiering/"

/* A node in two tiers, or a node list that does not parse, is -EINVAL; directories
 * that are not tiers, and nodes that are not online, are ignored. */
TEST(broken_tiers) {
        static const struct file two[] = { { TIERS "memory_tier4/nodelist", "0\n" },
                                           { TIERS "memory_tier9/nodelist", "0\n" } };
        static const struct file junk[] = { { TIERS "memory_tier4/nodelist", "0-x\n" } };
        static const struct file other[] = { { TIERS "memory_tier4/nodelist", "0,2,5\n" },
                                             { TIERS "memory_tierX/nodelist", "junk\n" },
                                             { TIERS "memory_tier99999999999/nodelist", "junk\n" },
                                             { TIERS "power/nodelist", "junk\n" } };
        struct topology *t = NULL;

        CHECK_INT(read_with(two, ELEMENTSOF(two), &t), -EINVAL);
        CHECK(t == NULL);
        CHECK_INT(read_with(junk, ELEMENTSOF(junk), &t), -EINVAL);
        CHECK(t == NULL);
        CHECK_INT(read_with(other, ELEMENTSOF(other), &t), 0);
        if (t) {
                CHECK_INT(t->nodes[0].tier, 4);
                CHECK_INT(t->nodes[1].tier, 4);
                CHECK_INT(t->fast_tier, 4);
                check_mask(&t->slow, "");       /* node 2 has CPUs and no memory */
        }
        topology_free(t);
}

/* A missing file is the error of the read, passed on. */
TEST(missing_file_error_passed_on) {
        expect_error("devices/system/node/node2/distance", NULL, -ENOENT);
        expect_error("devices/system/node/online", NULL, -ENOENT);
}

/* No node directory at all (no CONFIG_NUMA): -ENOENT. */
TEST(no_node_directory) {
        struct topology *t = NULL;

        CHECK_INT(topology_read("/nonexistent-sys-root", &t), -ENOENT);
}

/* Only MemFree and free huge pages are read again; a bad file changes nothing. */
TEST(refresh_free) {
        char root[] = "/tmp/test-topology-XXXXXX";
        struct topology *t = NULL;

        if (!mkdtemp(root)) {
                CHECK(false);
                return;
        }
        for (size_t i = 0; i < ELEMENTSOF(sparse_files); i++)
                tmptree_write_at(root, sparse_files[i].path, sparse_files[i].content);
        CHECK_INT(topology_read(root, &t), 0);
        if (t) {
                CHECK_INT(t->nodes[0].mem_free_kb, 989148);

                /* Only MemFree is taken; a changed distance file is not re-read. */
                tmptree_write_at(root, "devices/system/node/node0/meminfo",
                           "Node 0 MemTotal:        2000000 kB\nNode 0 MemFree:          123456 kB\n");
                tmptree_write_at(root, "devices/system/node/node0/distance", "10 30\n");
                CHECK_INT(topology_refresh_free(t, root), 0);
                CHECK_INT(t->nodes[0].mem_free_kb, 123456);
                CHECK_INT(t->nodes[0].mem_total_kb, 1030480);
                CHECK_INT(topology_distance(t, 0, 2), 20);

                /* Free huge pages are read again too. */
                tmptree_write_at(root, "devices/system/node/node0/hugepages/hugepages-2048kB/free_hugepages", "3\n");
                topology_free(t);
                t = NULL;
                CHECK_INT(topology_read(root, &t), 0);
                CHECK_INT(t->nodes[0].n_huge, 1);
                tmptree_write_at(root, "devices/system/node/node0/hugepages/hugepages-2048kB/free_hugepages", "1\n");
                CHECK_INT(topology_refresh_free(t, root), 0);
                CHECK_INT(t->nodes[0].huge[0].free, 1);

                /* A bad file leaves every node's value as it was. */
                tmptree_write_at(root, "devices/system/node/node0/meminfo",
                           "Node 0 MemTotal:        2000000 kB\nNode 0 MemFree:          777 kB\n");
                tmptree_write_at(root, "devices/system/node/node2/meminfo", "garbage\n");
                CHECK_INT(topology_refresh_free(t, root), -EINVAL);
                CHECK_INT(t->nodes[0].mem_free_kb, 123456);
                tmptree_write_at(root, "devices/system/node/node2/meminfo",
                           "Node 2 MemTotal:              0 kB\nNode 2 MemFree:               0 kB\n");
                tmptree_write_at(root, "devices/system/node/node0/hugepages/hugepages-2048kB/free_hugepages", "x\n");
                CHECK_INT(topology_refresh_free(t, root), -EINVAL);
                CHECK_INT(t->nodes[0].huge[0].free, 1);
                CHECK_INT(t->nodes[0].mem_free_kb, 123456);
                topology_free(t);
        }
        tmptree_remove(root);
}

DEFINE_TEST_MAIN()
