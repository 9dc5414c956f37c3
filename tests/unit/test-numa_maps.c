/* SPDX-License-Identifier: GPL-2.0-or-later */
/* numa_maps: the captured files from real 6.1 guests and the hand-made hostile ones
 * in tests/data/numa_maps/ (see tests/data/README.md), each with the values a
 * reader must get out of it, VMA by VMA. */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include "numa_maps.h"
#include "parse.h"
#include "test.h"

/* One expected VMA. np: the per-node counts as "node=pages ..." in file order. */
struct exp {
        uint64_t start;
        enum vma_kind kind;
        bool huge;
        enum mpol_mode mode;
        unsigned flags;
        const char *nodes;
        bool truncated;
        const char *path;
        uint64_t page_size_kb;
        uint64_t anon, dirty, mapped, mapmax, active;
        const char *np;
};

static char *load(const char *name, size_t *len) {
        char path[1024];
        char *buf = NULL;
        int r;

        snprintf(path, sizeof(path), "%s/numa_maps/%s", TEST_DATA_DIR, name);
        r = parse_read_file_at(AT_FDCWD, path, 64 << 20, &buf, len);
        if (r < 0) {
                TEST_FAIL("cannot read %s: %s", path, strerror(-r));
                return NULL;
        }
        return buf;
}

/* The parsed file; NULL (and a failure) when it cannot be read or parsed. */
static struct numa_maps *parse_file(const char *name) {
        size_t len;
        char *buf = load(name, &len);
        struct numa_maps *m = NULL;
        int r;

        if (!buf)
                return NULL;
        r = numa_maps_parse(buf, len, &m);
        free(buf);
        CHECK_INT(r, 0);
        return r < 0 ? NULL : m;
}

static void check_vma(const char *file, const struct numa_maps *m, const struct vma *v, const struct exp *e) {
        char nodes[NODEMASK_STRMAX], np[4096] = "";
        size_t n = 0;
        uint64_t sum = 0;
        const struct node_pages *p = vma_node_pages(m, v);
        int fails = test_failures;

        CHECK_INT(v->start, e->start);
        CHECK_INT(v->kind, e->kind);
        CHECK_INT(v->hugetlb, e->huge);
        CHECK_INT(v->policy.mode, e->mode);
        CHECK_INT(v->policy.flags, e->flags);
        nodemask_format(&v->policy.nodes, nodes, sizeof(nodes));
        CHECK_STR(nodes, e->nodes);
        CHECK_INT(v->policy.nodes_truncated, e->truncated);
        if (e->path)
                CHECK_STR(v->path, e->path);
        else
                CHECK(v->path == NULL);
        CHECK_INT(v->page_size_kb, e->page_size_kb);
        CHECK_INT(v->anon, e->anon);
        CHECK_INT(v->dirty, e->dirty);
        CHECK_INT(v->mapped, e->mapped);
        CHECK_INT(v->mapmax, e->mapmax);
        CHECK_INT(v->active, e->active);
        for (size_t i = 0; i < v->np_count; i++) {
                n += (size_t) snprintf(np + n, sizeof(np) - n, "%s%u=%" PRIu64, i ? " " : "", p[i].node, p[i].pages);
                sum += p[i].pages;
                CHECK_INT(numa_maps_vma_pages_on(m, v, p[i].node), p[i].pages);
        }
        CHECK_STR(np, e->np);
        CHECK_INT(v->pages, sum);
        if (test_failures != fails)
                fprintf(stderr, "  ^ in %s, line %u\n", file, v->line);
}

static void check_file(const char *file, const struct exp *e, size_t n_exp,
                       const unsigned *bad, unsigned n_bad) {
        struct numa_maps *m = parse_file(file);

        if (!m)
                return;
        CHECK_INT(m->n_vmas, n_exp);
        for (size_t i = 0; i < m->n_vmas && i < n_exp; i++)
                check_vma(file, m, &m->vmas[i], &e[i]);
        CHECK_INT(m->n_bad_lines, n_bad);
        for (unsigned i = 0; i < n_bad && i < NUMA_MAPS_BAD_LINES_KEPT; i++)
                CHECK_INT(m->bad_lines[i], bad[i]);
        if (test_failures)
                fprintf(stderr, "  (after %s)\n", file);
        numa_maps_free(m);
}

#define A VMA_ANON
#define F VMA_FILE
#define H VMA_HEAP
#define S VMA_STACK
#define STATIC MPOL_FLAG_STATIC
#define RELATIVE MPOL_FLAG_RELATIVE
#define BALANCING MPOL_FLAG_BALANCING

/* qemu-6.1-2node.txt: Debian 6.1.0-56 guest, 2 nodes of 1 GiB, the capture program
 * running on CPU 1 (node 1); see qemu-6.1-2node.legend for what each VMA is. */
static const struct exp two_node[] = {
        { 0x5578f8325000, VMA_FILE, 0, MODE_DEFAULT, 0, "", 0, "/work/main/tests/data/numa_maps/capture/capture", 4, 0, 0, 1, 0, 0, "1=1" },
        { 0x5578f8326000, VMA_FILE, 0, MODE_DEFAULT, 0, "", 0, "/work/main/tests/data/numa_maps/capture/capture", 4, 0, 0, 1, 0, 0, "1=1" },
        { 0x5578f8327000, VMA_FILE, 0, MODE_DEFAULT, 0, "", 0, "/work/main/tests/data/numa_maps/capture/capture", 4, 0, 0, 1, 0, 0, "1=1" },
        { 0x5578f8328000, VMA_FILE, 0, MODE_DEFAULT, 0, "", 0, "/work/main/tests/data/numa_maps/capture/capture", 4, 1, 1, 0, 0, 0, "1=1" },
        { 0x5578f8329000, VMA_FILE, 0, MODE_DEFAULT, 0, "", 0, "/work/main/tests/data/numa_maps/capture/capture", 4, 1, 1, 0, 0, 0, "1=1" },
        { 0x557930cfa000, VMA_HEAP, 0, MODE_DEFAULT, 0, "", 0, NULL, 4, 18, 18, 0, 0, 0, "1=18" },
        { 0x7f1fea400000, VMA_FILE, 1, MODE_BIND, 0, "1", 0, "/anon_hugepage\\040(deleted)", 2048, 2, 2, 0, 0, 0, "1=2" },
        { 0x7f1fea800000, VMA_FILE, 1, MODE_DEFAULT, 0, "", 0, "/anon_hugepage\\040(deleted)", 2048, 2, 2, 0, 0, 0, "1=2" },
        { 0x7f1feac00000, VMA_ANON, 0, MODE_BIND, 0, "1", 0, NULL, 4, 1024, 1024, 0, 0, 0, "1=1024" },
        { 0x7f1feb360000, VMA_FILE, 0, MODE_DEFAULT, 0, "", 0, "/memfd:memfd\\040test\\040(deleted)", 4, 0, 8, 0, 0, 0, "1=8" },
        { 0x7f1feb368000, VMA_FILE, 0, MODE_DEFAULT, 0, "", 0, "/tmp/deleted-file\\040(deleted)", 4, 0, 2, 4, 0, 0, "1=4" },
        { 0x7f1feb36c000, VMA_FILE, 0, MODE_DEFAULT, 0, "", 0, "/tmp/back\\040slash", 4, 0, 1, 2, 0, 0, "1=2" },
        { 0x7f1feb36e000, VMA_FILE, 0, MODE_DEFAULT, 0, "", 0, "/tmp/a\\040file\\011with\\040N0\\075999\\040x", 4, 0, 4, 8, 0, 0, "1=8" },
        { 0x7f1feb376000, VMA_ANON, 0, MODE_BIND, MPOL_FLAG_STATIC|MPOL_FLAG_BALANCING, "0-1", 0, NULL, 4, 16, 16, 0, 0, 0, "1=16" },
        { 0x7f1feb386000, VMA_ANON, 0, MODE_BIND, MPOL_FLAG_BALANCING, "0-1", 0, NULL, 4, 16, 16, 0, 0, 0, "1=16" },
        { 0x7f1feb396000, VMA_ANON, 0, MODE_INTERLEAVE, MPOL_FLAG_RELATIVE, "0-1", 0, NULL, 4, 16, 16, 0, 0, 0, "0=8 1=8" },
        { 0x7f1feb3a6000, VMA_ANON, 0, MODE_BIND, MPOL_FLAG_STATIC, "1", 0, NULL, 4, 16, 16, 0, 0, 0, "1=16" },
        { 0x7f1feb3b6000, VMA_ANON, 0, MODE_LOCAL, 0, "", 0, NULL, 4, 16, 16, 0, 0, 0, "1=16" },
        { 0x7f1feb3c6000, VMA_ANON, 0, MODE_PREFERRED_MANY, 0, "0-1", 0, NULL, 4, 16, 16, 0, 0, 0, "1=16" },
        { 0x7f1feb3d6000, VMA_ANON, 0, MODE_PREFERRED, 0, "1", 0, NULL, 4, 16, 16, 0, 0, 0, "1=16" },
        { 0x7f1feb3e6000, VMA_ANON, 0, MODE_INTERLEAVE, 0, "0-1", 0, NULL, 4, 16, 16, 0, 0, 0, "0=8 1=8" },
        { 0x7f1feb3f6000, VMA_ANON, 0, MODE_BIND, 0, "0-1", 0, NULL, 4, 16, 16, 0, 0, 0, "1=16" },
        { 0x7f1feb406000, VMA_ANON, 0, MODE_BIND, 0, "1", 0, NULL, 4, 16, 16, 0, 0, 0, "1=16" },
        { 0x7f1feb416000, VMA_ANON, 0, MODE_DEFAULT, 0, "", 0, NULL, 4, 18, 18, 0, 0, 0, "1=18" },
        { 0x7f1feb429000, VMA_FILE, 0, MODE_DEFAULT, 0, "", 0, "/usr/lib/x86_64-linux-gnu/libc.so.6", 4, 0, 0, 35, 4, 0, "0=35" },
        { 0x7f1feb44f000, VMA_FILE, 0, MODE_DEFAULT, 0, "", 0, "/usr/lib/x86_64-linux-gnu/libc.so.6", 4, 0, 0, 101, 19, 0, "0=88 1=13" },
        { 0x7f1feb5a5000, VMA_FILE, 0, MODE_DEFAULT, 0, "", 0, "/usr/lib/x86_64-linux-gnu/libc.so.6", 4, 0, 0, 19, 19, 0, "0=18 1=1" },
        { 0x7f1feb5f8000, VMA_FILE, 0, MODE_DEFAULT, 0, "", 0, "/usr/lib/x86_64-linux-gnu/libc.so.6", 4, 4, 4, 0, 0, 0, "1=4" },
        { 0x7f1feb5fc000, VMA_FILE, 0, MODE_DEFAULT, 0, "", 0, "/usr/lib/x86_64-linux-gnu/libc.so.6", 4, 2, 2, 0, 0, 0, "1=2" },
        { 0x7f1feb5fe000, VMA_ANON, 0, MODE_DEFAULT, 0, "", 0, NULL, 4, 5, 5, 0, 0, 0, "1=5" },
        { 0x7f1feb60c000, VMA_FILE, 0, MODE_DEFAULT, 0, "", 0, "/tmp/x\\040N0\\075999", 4, 0, 2, 4, 0, 0, "1=4" },
        { 0x7f1feb610000, VMA_ANON, 0, MODE_INTERLEAVE, 0, "0-1", 0, NULL, 4, 0, 0, 0, 0, 0, "" },
        { 0x7f1feb614000, VMA_ANON, 0, MODE_BIND, 0, "1", 0, NULL, 4, 1, 1, 0, 0, 0, "1=1" },
        { 0x7f1feb615000, VMA_ANON, 0, MODE_DEFAULT, 0, "", 0, NULL, 4, 1, 1, 0, 0, 0, "1=1" },
        { 0x7f1feb617000, VMA_FILE, 0, MODE_DEFAULT, 0, "", 0, "/usr/lib/x86_64-linux-gnu/ld-linux-x86-64.so.2", 4, 0, 0, 1, 3, 0, "0=1" },
        { 0x7f1feb618000, VMA_FILE, 0, MODE_DEFAULT, 0, "", 0, "/usr/lib/x86_64-linux-gnu/ld-linux-x86-64.so.2", 4, 0, 0, 34, 4, 0, "0=34" },
        { 0x7f1feb63e000, VMA_FILE, 0, MODE_DEFAULT, 0, "", 0, "/usr/lib/x86_64-linux-gnu/ld-linux-x86-64.so.2", 4, 0, 0, 5, 3, 0, "0=5" },
        { 0x7f1feb648000, VMA_FILE, 0, MODE_DEFAULT, 0, "", 0, "/usr/lib/x86_64-linux-gnu/ld-linux-x86-64.so.2", 4, 2, 2, 0, 0, 0, "1=2" },
        { 0x7f1feb64a000, VMA_FILE, 0, MODE_DEFAULT, 0, "", 0, "/usr/lib/x86_64-linux-gnu/ld-linux-x86-64.so.2", 4, 2, 2, 0, 0, 0, "1=2" },
        { 0x7ffcf3b70000, VMA_STACK, 0, MODE_DEFAULT, 0, "", 0, NULL, 4, 5, 5, 0, 0, 1, "1=5" },
        { 0x7ffcf3be5000, VMA_ANON, 0, MODE_DEFAULT, 0, "", 0, NULL, 4, 0, 0, 0, 0, 0, "" },
        { 0x7ffcf3be9000, VMA_ANON, 0, MODE_DEFAULT, 0, "", 0, NULL, 4, 0, 0, 0, 0, 0, "" },
};

/* qemu-6.1-32node.txt: the same program in a guest with 32 nodes of 64 MiB (CPUs on
 * nodes 0 and 1, running on node 0), plus three policies over nodes 0,2,...,30: the
 * "prefer (many)=relative" one is 63 characters and was cut by the kernel after
 * "28,"; the two others are 61 and 59 characters and whole. No hugetlb here. */
static const struct exp wide_node[] = {
        { 0x55ffba643000, VMA_FILE, 0, MODE_DEFAULT, 0, "", 0, "/work/main/tests/data/numa_maps/capture/capture", 4, 0, 0, 1, 0, 0, "0=1" },
        { 0x55ffba644000, VMA_FILE, 0, MODE_DEFAULT, 0, "", 0, "/work/main/tests/data/numa_maps/capture/capture", 4, 0, 0, 1, 0, 0, "0=1" },
        { 0x55ffba645000, VMA_FILE, 0, MODE_DEFAULT, 0, "", 0, "/work/main/tests/data/numa_maps/capture/capture", 4, 0, 0, 1, 0, 0, "0=1" },
        { 0x55ffba646000, VMA_FILE, 0, MODE_DEFAULT, 0, "", 0, "/work/main/tests/data/numa_maps/capture/capture", 4, 1, 1, 0, 0, 0, "0=1" },
        { 0x55ffba647000, VMA_FILE, 0, MODE_DEFAULT, 0, "", 0, "/work/main/tests/data/numa_maps/capture/capture", 4, 1, 1, 0, 0, 0, "0=1" },
        { 0x55ffe76df000, VMA_HEAP, 0, MODE_DEFAULT, 0, "", 0, NULL, 4, 18, 18, 0, 0, 0, "0=18" },
        { 0x7f81fbe00000, VMA_ANON, 0, MODE_BIND, 0, "1", 0, NULL, 4, 1024, 1024, 0, 0, 0, "1=1024" },
        { 0x7f81fc504000, VMA_FILE, 0, MODE_DEFAULT, 0, "", 0, "/memfd:memfd\\040test\\040(deleted)", 4, 0, 8, 0, 0, 0, "0=8" },
        { 0x7f81fc50c000, VMA_FILE, 0, MODE_DEFAULT, 0, "", 0, "/tmp/deleted-file\\040(deleted)", 4, 0, 2, 4, 0, 0, "0=4" },
        { 0x7f81fc510000, VMA_FILE, 0, MODE_DEFAULT, 0, "", 0, "/tmp/back\\040slash", 4, 0, 1, 2, 0, 0, "0=2" },
        { 0x7f81fc512000, VMA_FILE, 0, MODE_DEFAULT, 0, "", 0, "/tmp/x\\040N0\\075999", 4, 0, 2, 4, 0, 0, "0=4" },
        { 0x7f81fc516000, VMA_FILE, 0, MODE_DEFAULT, 0, "", 0, "/tmp/a\\040file\\011with\\040N0\\075999\\040x", 4, 0, 4, 8, 0, 0, "0=8" },
        { 0x7f81fc51e000, VMA_ANON, 0, MODE_INTERLEAVE, 0, "0-1", 0, NULL, 4, 0, 0, 0, 0, 0, "" },
        { 0x7f81fc522000, VMA_ANON, 0, MODE_PREFERRED_MANY, MPOL_FLAG_RELATIVE, "0,2,4,6,8,10,12,14,16,18,20,22,24,26,28", 1, NULL, 4, 4, 4, 0, 0, 0, "0=4" },
        { 0x7f81fc526000, VMA_ANON, 0, MODE_BIND, MPOL_FLAG_STATIC|MPOL_FLAG_BALANCING, "0-1", 0, NULL, 4, 16, 16, 0, 0, 0, "0=16" },
        { 0x7f81fc536000, VMA_ANON, 0, MODE_BIND, MPOL_FLAG_BALANCING, "0-1", 0, NULL, 4, 16, 16, 0, 0, 0, "0=16" },
        { 0x7f81fc546000, VMA_ANON, 0, MODE_INTERLEAVE, MPOL_FLAG_RELATIVE, "0-1", 0, NULL, 4, 16, 16, 0, 0, 0, "0=8 1=8" },
        { 0x7f81fc556000, VMA_ANON, 0, MODE_BIND, MPOL_FLAG_STATIC, "1", 0, NULL, 4, 16, 16, 0, 0, 0, "1=16" },
        { 0x7f81fc566000, VMA_ANON, 0, MODE_LOCAL, 0, "", 0, NULL, 4, 16, 16, 0, 0, 0, "0=16" },
        { 0x7f81fc576000, VMA_ANON, 0, MODE_PREFERRED_MANY, 0, "0-1", 0, NULL, 4, 16, 16, 0, 0, 0, "0=16" },
        { 0x7f81fc586000, VMA_ANON, 0, MODE_PREFERRED, 0, "1", 0, NULL, 4, 16, 16, 0, 0, 0, "1=16" },
        { 0x7f81fc596000, VMA_ANON, 0, MODE_INTERLEAVE, 0, "0-1", 0, NULL, 4, 16, 16, 0, 0, 0, "0=8 1=8" },
        { 0x7f81fc5a6000, VMA_ANON, 0, MODE_BIND, 0, "0-1", 0, NULL, 4, 16, 16, 0, 0, 0, "0=16" },
        { 0x7f81fc5b6000, VMA_ANON, 0, MODE_BIND, 0, "1", 0, NULL, 4, 16, 16, 0, 0, 0, "1=16" },
        { 0x7f81fc5c6000, VMA_ANON, 0, MODE_DEFAULT, 0, "", 0, NULL, 4, 18, 18, 0, 0, 0, "0=18" },
        { 0x7f81fc5d9000, VMA_FILE, 0, MODE_DEFAULT, 0, "", 0, "/usr/lib/x86_64-linux-gnu/libc.so.6", 4, 0, 0, 35, 4, 0, "0=35" },
        { 0x7f81fc5ff000, VMA_FILE, 0, MODE_DEFAULT, 0, "", 0, "/usr/lib/x86_64-linux-gnu/libc.so.6", 4, 0, 0, 101, 19, 0, "0=90 1=11" },
        { 0x7f81fc755000, VMA_FILE, 0, MODE_DEFAULT, 0, "", 0, "/usr/lib/x86_64-linux-gnu/libc.so.6", 4, 0, 0, 19, 19, 0, "0=17 1=2" },
        { 0x7f81fc7a8000, VMA_FILE, 0, MODE_DEFAULT, 0, "", 0, "/usr/lib/x86_64-linux-gnu/libc.so.6", 4, 4, 4, 0, 0, 0, "0=4" },
        { 0x7f81fc7ac000, VMA_FILE, 0, MODE_DEFAULT, 0, "", 0, "/usr/lib/x86_64-linux-gnu/libc.so.6", 4, 2, 2, 0, 0, 0, "0=2" },
        { 0x7f81fc7ae000, VMA_ANON, 0, MODE_DEFAULT, 0, "", 0, NULL, 4, 5, 5, 0, 0, 0, "0=5" },
        { 0x7f81fc7bc000, VMA_ANON, 0, MODE_BIND, MPOL_FLAG_STATIC, "0,2,4,6,8,10,12,14,16,18,20,22,24,26,28,30", 0, NULL, 4, 4, 4, 0, 0, 0, "0=4" },
        { 0x7f81fc7c0000, VMA_ANON, 0, MODE_INTERLEAVE, 0, "0,2,4,6,8,10,12,14,16,18,20,22,24,26,28,30", 0, NULL, 4, 4, 4, 0, 0, 0, "0=1 2=1 4=1 6=1" },
        { 0x7f81fc7c4000, VMA_ANON, 0, MODE_BIND, 0, "1", 0, NULL, 4, 1, 1, 0, 0, 0, "1=1" },
        { 0x7f81fc7c5000, VMA_ANON, 0, MODE_DEFAULT, 0, "", 0, NULL, 4, 1, 1, 0, 0, 0, "0=1" },
        { 0x7f81fc7c7000, VMA_FILE, 0, MODE_DEFAULT, 0, "", 0, "/usr/lib/x86_64-linux-gnu/ld-linux-x86-64.so.2", 4, 0, 0, 1, 3, 0, "0=1" },
        { 0x7f81fc7c8000, VMA_FILE, 0, MODE_DEFAULT, 0, "", 0, "/usr/lib/x86_64-linux-gnu/ld-linux-x86-64.so.2", 4, 0, 0, 34, 4, 0, "0=34" },
        { 0x7f81fc7ee000, VMA_FILE, 0, MODE_DEFAULT, 0, "", 0, "/usr/lib/x86_64-linux-gnu/ld-linux-x86-64.so.2", 4, 0, 0, 5, 3, 0, "0=5" },
        { 0x7f81fc7f8000, VMA_FILE, 0, MODE_DEFAULT, 0, "", 0, "/usr/lib/x86_64-linux-gnu/ld-linux-x86-64.so.2", 4, 2, 2, 0, 0, 0, "0=2" },
        { 0x7f81fc7fa000, VMA_FILE, 0, MODE_DEFAULT, 0, "", 0, "/usr/lib/x86_64-linux-gnu/ld-linux-x86-64.so.2", 4, 2, 2, 0, 0, 0, "0=2" },
        { 0x7ffd75b32000, VMA_STACK, 0, MODE_DEFAULT, 0, "", 0, NULL, 4, 4, 4, 0, 0, 1, "0=4" },
        { 0x7ffd75b9b000, VMA_ANON, 0, MODE_DEFAULT, 0, "", 0, NULL, 4, 0, 0, 0, 0, 0, "" },
        { 0x7ffd75b9f000, VMA_ANON, 0, MODE_DEFAULT, 0, "", 0, NULL, 4, 0, 0, 0, 0, 0, "" },
};

static const char NODES_BY4[] = "0,4,8,12,16,20,24,28,32,36,40,44,48,52,56,60,64,68,72,76";

/* hostile-truncated.txt: 63-character policies cut in the middle of a number (the
 * last element is dropped), after a '-' (the range start is kept), inside a range
 * end (the start is kept), after a comma; 62 characters (whole), 64 (impossible). */
static const struct exp truncated[] = {
        { 0x7f0000001000, A, 0, MODE_BIND, 0, NODES_BY4, 1, NULL, 4, 1, 1, 0, 0, 0, "0=1" },
        { 0x7f0000002000, A, 0, MODE_INTERLEAVE, 0, "1-2,5-6,9-10,13-14,17-18,21-22,25-26,29-30,33-34,37", 1, NULL, 4, 2, 0, 0, 0, 0, "1=2" },
        { 0x7f0000003000, A, 0, MODE_PREFERRED_MANY, STATIC, "0,2,4,6,8,10,12,14,16,18,20,22,24,26,28", 1, NULL, 4, 0, 0, 0, 0, 0, "0=3" },
        { 0x7f0000004000, A, 0, MODE_WEIGHTED_INTERLEAVE, RELATIVE, "1,3,5,7,9,11,13,15,17,19,21,23,25", 1, NULL, 4, 0, 0, 0, 0, 0, "3=4" },
        { 0x7f0000005000, A, 0, MODE_BIND, 0, "0,2,4,6,8,10,12,14,16,18,20,22,24,26,28,30,32,34,36,38,40", 0, NULL, 4, 0, 0, 0, 0, 0, "2=5" },
        { 0x7f0000007000, A, 0, MODE_BIND, 0, NODES_BY4, 1, NULL, 4, 0, 0, 0, 0, 0, "" },
};
static const unsigned truncated_bad[] = { 6 };

static const struct exp weighted[] = {
        { 0x7f1000000000, A, 0, MODE_WEIGHTED_INTERLEAVE, 0, "0-3", 0, NULL, 4, 8, 8, 0, 0, 0, "0=2 1=2 2=2 3=2" },
        { 0x7f1000010000, F, 0, MODE_WEIGHTED_INTERLEAVE, STATIC, "0,2", 0, "/dev/shm/w\\040x", 4, 0, 0, 0, 0, 0, "0=1 2=3" },
        { 0x7f1000020000, A, 0, MODE_WEIGHTED_INTERLEAVE, RELATIVE | BALANCING, "1-2", 0, NULL, 4, 0, 0, 0, 0, 0, "" },
        { 0x7f1000040000, A, 0, MODE_WEIGHTED_INTERLEAVE, 0, "0-3", 0, NULL, 4, 0, 0, 0, 0, 0, "" },
        { 0x7f1000050000, A, 0, MODE_PREFERRED_MANY, BALANCING, "2-3", 0, NULL, 4, 0, 0, 0, 0, 0, "3=7" },
        { 0x7f1000060000, A, 0, MODE_PREFERRED_MANY, 0, "", 0, NULL, 4, 0, 0, 0, 0, 0, "0=1" },
};
static const unsigned weighted_bad[] = { 4 };

/* Keys a newer kernel may add are skipped; junk is not. */
static const struct exp unknown[] = {
        { 0x7f2000000000, A, 0, MODE_DEFAULT, 0, "", 0, NULL, 4, 1, 1, 0, 0, 0, "0=1" },
        { 0x7f2000001000, F, 0, MODE_BIND, 0, "0", 0, "/x", 4, 0, 0, 0, 0, 0, "0=2" },
        { 0x7f2000002000, A, 0, MODE_DEFAULT, 0, "", 0, NULL, 4, 0, 0, 0, 0, 0, "0=3" },
        { 0x7f2000004000, A, 0, MODE_DEFAULT, 0, "", 0, NULL, 4, 1, 0, 0, 0, 0, "0=4" },
        { 0x7f2000005000, S, 1, MODE_LOCAL, 0, "", 0, NULL, 2048, 5, 0, 0, 0, 0, "1=5" },
};
static const unsigned unknown_bad[] = { 4 };

static const struct exp bad_tokens[] = {
        { 0x7f3000000000, A, 0, MODE_DEFAULT, 0, "", 0, NULL, 4, 1, 0, 0, 0, 0, "0=1" },
        { 0x7f300001e000, A, 0, MODE_BIND, 0, "0", 0, NULL, 4, 0, 0, 0, 0, 0, "0=7" },
        { 0x7f3000020000, A, 0, MODE_PREFERRED, 0, "1", 0, NULL, 4, 0, 0, 0, 0, 0, "1=9" },
};
/* Lines 2-33 and 35 are bad (33 lines); the first 16 numbers are kept. */
static const unsigned bad_tokens_bad[] = { 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17 };

static const struct exp huge_numbers[] = {
        { UINT64_MAX, A, 0, MODE_BIND, 0, "1023", 0, NULL, UINT64_MAX, UINT64_MAX, 0, 0, 0, 0, "1023=18446744073709551615" },
        { 0, A, 0, MODE_DEFAULT, 0, "", 0, NULL, 1, 0, 0, 0, 0, 0, "0=9223372036854775808 1=9223372036854775807" },
        { 0xffff0000, A, 0, MODE_INTERLEAVE, 0, "0-1023", 0, NULL, 4, 0, 0, 0, 0, 0, "0=0" },
};
static const unsigned huge_numbers_bad[] = { 3 };

static const struct exp no_newline[] = {
        { 0x7f4000000000, A, 0, MODE_DEFAULT, 0, "", 0, NULL, 4, 1, 0, 0, 0, 0, "0=1" },
        { 0x7f4000001000, A, 0, MODE_BIND, 0, "1", 0, NULL, 4, 2, 0, 0, 0, 0, "1=2" },
};

static const struct exp binary[] = {
        { 0x7f5000000000, A, 0, MODE_DEFAULT, 0, "", 0, NULL, 4, 0, 0, 0, 0, 0, "0=1" },
        { 0x7f5000001000, F, 0, MODE_DEFAULT, 0, "", 0, "/\xff\xfe\x80", 4, 0, 0, 0, 0, 0, "1=2" },
        { 0x7f5000004000, A, 0, MODE_INTERLEAVE, 0, "0-1", 0, NULL, 4, 0, 0, 0, 0, 0, "0=2 1=2" },
};
/* A line of all 255 other byte values, and lines with NUL bytes. */
static const unsigned binary_bad[] = { 2, 4, 5, 6 };

/* A file named "x N0=999" shows as one token; "file=N0=999" is a path, not a count. */
static const struct exp path_traps[] = {
        { 0x7f7000000000, F, 0, MODE_DEFAULT, 0, "", 0, "/tmp/x\\040N0\\075999", 4, 0, 0, 4, 0, 0, "1=4" },
        { 0x7f7000001000, F, 0, MODE_DEFAULT, 0, "", 0, "N0=999", 4, 0, 0, 1, 0, 0, "0=1" },
        { 0x7f7000002000, F, 1, MODE_DEFAULT, 0, "", 0, "/a\\b\\\\c", 2048, 0, 0, 0, 0, 0, "0=2" },
        { 0x7f7000003000, F, 0, MODE_DEFAULT, 0, "", 0, "", 4, 0, 0, 0, 0, 0, "0=3" },
};
static const unsigned path_traps_bad[] = { 5 };

#define CHECK_FILE(name, exp, bad) check_file(name, exp, ELEMENTSOF(exp), bad, ELEMENTSOF(bad))
#define CHECK_FILE_NOBAD(name, exp) check_file(name, exp, ELEMENTSOF(exp), NULL, 0)

TEST(file_captured_2_nodes) {
        check_file("qemu-6.1-2node.txt", two_node, ELEMENTSOF(two_node), NULL, 0);
}

TEST(file_captured_32_nodes) {
        check_file("qemu-6.1-32node.txt", wide_node, ELEMENTSOF(wide_node), NULL, 0);
}

TEST(file_hostile_truncated_policies) {
        CHECK_FILE("hostile-truncated.txt", truncated, truncated_bad);
}

TEST(file_hostile_weighted_interleave) {
        CHECK_FILE("hostile-weighted.txt", weighted, weighted_bad);
}

TEST(file_hostile_unknown_tokens) {
        CHECK_FILE("hostile-unknown-tokens.txt", unknown, unknown_bad);
}

TEST(file_hostile_bad_tokens) {
        check_file("hostile-bad-tokens.txt", bad_tokens, ELEMENTSOF(bad_tokens), bad_tokens_bad, 33);
}

TEST(file_hostile_huge_numbers) {
        CHECK_FILE("hostile-huge-numbers.txt", huge_numbers, huge_numbers_bad);
}

TEST(file_hostile_no_final_newline) {
        CHECK_FILE_NOBAD("hostile-no-newline.txt", no_newline);
}

TEST(file_hostile_binary) {
        CHECK_FILE("hostile-binary.txt", binary, binary_bad);
}

TEST(file_hostile_path_traps) {
        CHECK_FILE("hostile-path-traps.txt", path_traps, path_traps_bad);
}

TEST(file_empty) {
        check_file("hostile-empty.txt", NULL, 0, NULL, 0);
}

/* The trap file name of the capture never adds a count on node 0. */
TEST(file_name_with_n0_adds_no_count) {
        struct numa_maps *m = parse_file("qemu-6.1-2node.txt");

        if (!m)
                return;
        for (size_t i = 0; i < m->n_vmas; i++)
                if (m->vmas[i].path && strstr(m->vmas[i].path, "N0\\075999"))
                        CHECK_INT(numa_maps_vma_pages_on(m, &m->vmas[i], 0), 0);
        numa_maps_free(m);
}

/* A 4,000-byte path, a line with all 1,024 nodes, and a line too long to keep. */
TEST(file_hostile_long_lines) {
        struct numa_maps *m = parse_file("hostile-long-lines.txt");
        const struct vma *v;

        if (!m)
                return;
        CHECK_INT(m->n_vmas, 3);
        CHECK_INT(m->n_bad_lines, 1);
        CHECK_INT(m->bad_lines[0], 2);
        if (m->n_vmas == 3) {
                v = &m->vmas[0];
                CHECK_INT(v->start, 0x7f6000000000);
                CHECK_INT(v->kind, VMA_FILE);
                CHECK_INT(strlen(v->path), 1 + 4000 + 4 + 90);
                CHECK(strncmp(v->path + 4001, "\\040bbb", 7) == 0);
                CHECK_INT(v->pages, 1);

                v = &m->vmas[1];
                CHECK_INT(v->start, 0x7f6000002000);
                CHECK_INT(v->np_count, 1024);
                CHECK_INT(v->pages, 1024);
                CHECK_INT(v->anon, 1024);
                CHECK_INT(nodemask_weight(&v->policy.nodes), 1024);
                CHECK_INT(numa_maps_vma_pages_on(m, v, 1023), 1);
                CHECK_INT(vma_node_pages(m, v)[1023].node, 1023);

                v = &m->vmas[2];
                CHECK_INT(v->start, 0x7f6000003000);
                CHECK_INT(v->pages, 5);
                CHECK_INT(v->np_count, 1);
        }
        numa_maps_free(m);
}

static void policy_ok(const char *s, enum mpol_mode mode, unsigned flags, const char *nodes, bool trunc) {
        struct mempolicy p;
        char buf[NODEMASK_STRMAX];
        int r = numa_maps_mempolicy_parse(s, strlen(s), &p);

        CHECK_INT(r, 0);
        if (r < 0) {
                fprintf(stderr, "  ^ policy \"%s\"\n", s);
                return;
        }
        CHECK_INT(p.mode, mode);
        CHECK_INT(p.flags, flags);
        nodemask_format(&p.nodes, buf, sizeof(buf));
        CHECK_STR(buf, nodes);
        CHECK_INT(p.nodes_truncated, trunc);
}

static void policy_bad_err(const char *s, int err) {
        struct mempolicy p = { .mode = MODE_INTERLEAVE, .flags = 77 };
        int r = numa_maps_mempolicy_parse(s, strlen(s), &p);

        CHECK_INT(r, err);
        if (r != err)
                fprintf(stderr, "  ^ policy \"%s\"\n", s);
        /* Left untouched on failure. */
        CHECK_INT(p.mode, MODE_INTERLEAVE);
        CHECK_INT(p.flags, 77);
}

static void policy_bad(const char *s) {
        policy_bad_err(s, -EINVAL);
}

TEST(policy_valid) {
        policy_ok("default", MODE_DEFAULT, 0, "", false);
        policy_ok("local", MODE_LOCAL, 0, "", false);
        policy_ok("prefer:1", MODE_PREFERRED, 0, "1", false);
        policy_ok("prefer=relative:0", MODE_PREFERRED, RELATIVE, "0", false);
        policy_ok("prefer (many):1,3", MODE_PREFERRED_MANY, 0, "1,3", false);
        policy_ok("bind=static:0-3", MODE_BIND, STATIC, "0-3", false);
        policy_ok("bind=balancing:0-1", MODE_BIND, BALANCING, "0-1", false);
        policy_ok("bind=static|balancing:0-1", MODE_BIND, STATIC | BALANCING, "0-1", false);
        policy_ok("bind=relative|balancing:2", MODE_BIND, RELATIVE | BALANCING, "2", false);
        policy_ok("interleave:0-1023", MODE_INTERLEAVE, 0, "0-1023", false);
        policy_ok("weighted interleave:0-3", MODE_WEIGHTED_INTERLEAVE, 0, "0-3", false);
        policy_ok("weighted interleave=static", MODE_WEIGHTED_INTERLEAVE, STATIC, "", false);
        policy_ok("bind", MODE_BIND, 0, "", false);
}

TEST(policy_invalid_untouched) {
        policy_bad("");
        policy_bad("Bind:1");
        policy_bad("bind ");
        policy_bad("bind:1 ");
        policy_bad("bind=");
        policy_bad("bind=:1");
        policy_bad("bind=|balancing:1");
        policy_bad("bind=static|:1");
        policy_bad("bind=static|static:1");
        policy_bad("bind=static|relative:1");
        policy_bad("bind=balancing|balancing");
        policy_bad("bind=Static:1");
        policy_bad("bind:");
        policy_bad("bind:1,");
        policy_bad("bind: 1");
        policy_bad("bind:1\n");
        policy_bad_err("bind:1024", -ERANGE);
        policy_bad("bind:-1");
        policy_bad("bind;1");
        policy_bad("binder:1");
        policy_bad("prefer(many):1");
        policy_bad("prefer (many)x");
        policy_bad("prefer (many");
        policy_bad("weighted");
        policy_bad("default:0");
        policy_bad("local:0");
        policy_bad("unknown");
}

/* 63 characters with a list: the kernel's cut. What may be cut is dropped. */
TEST(policy_cut_at_63_characters_drops_the_uncertain_tail) {
        const char *certain = "1,3,5,7,9,11,13,15,17,19,21,23,25,27,29,31,33,36";
        const char *s = "interleave:1,3,5,7,9,11,13,15,17,19,21,23,25,27,29,31,33,36,391";

        CHECK_INT(strlen(s), 63);
        /* "391" may be the start of "3910": dropped. */
        policy_ok(s, MODE_INTERLEAVE, 0, certain, true);
        /* "36-370": 36 was followed by '-', so it is whole; the end is not. */
        s = "interleave:1,3,5,7,9,11,13,15,17,19,21,23,25,27,29,31,33,36-370";
        CHECK_INT(strlen(s), 63);
        policy_ok(s, MODE_INTERLEAVE, 0, certain, true);
}

/* Cut or not, junk is junk. */
TEST(policy_cut_at_63_characters_junk_still_invalid) {
        const char *s = "interleave:1,3,5,7,9,11,13,15,17,19,21,23,25,27,29,31,33,36-37x";

        CHECK_INT(strlen(s), 63);
        policy_bad(s);
        s = "interleave:1,3,5,7,9,11,13,15,17,19,21,23,25,27,29,31,33,36,3 1";
        CHECK_INT(strlen(s), 63);
        policy_bad(s);
}

/* 62 characters: whole. */
TEST(policy_of_62_characters_whole) {
        const char *s = "interleave:1,3,5,7,9,11,13,15,17,19,21,23,25,27,29,31,33,36-39";

        CHECK_INT(strlen(s), 62);
        policy_ok(s, MODE_INTERLEAVE, 0, "1,3,5,7,9,11,13,15,17,19,21,23,25,27,29,31,33,36-39", false);
}

/* The length given counts, not the NUL: "bind:1" then junk. */
TEST(policy_length_counts) {
        struct mempolicy p;

        CHECK_INT(numa_maps_mempolicy_parse("bind:1xyz", 6, &p), 0);
        CHECK_INT(nodemask_weight(&p.nodes), 1);
        CHECK_INT(numa_maps_mempolicy_parse(NULL, 0, &p), -EINVAL);
}

TEST(mode_and_kind_names) {
        CHECK_STR(numa_maps_mpol_mode_name(MODE_DEFAULT), "default");
        CHECK_STR(numa_maps_mpol_mode_name(MODE_LOCAL), "local");
        CHECK_STR(numa_maps_mpol_mode_name(MODE_PREFERRED), "prefer");
        CHECK_STR(numa_maps_mpol_mode_name(MODE_PREFERRED_MANY), "prefer (many)");
        CHECK_STR(numa_maps_mpol_mode_name(MODE_BIND), "bind");
        CHECK_STR(numa_maps_mpol_mode_name(MODE_INTERLEAVE), "interleave");
        CHECK_STR(numa_maps_mpol_mode_name(MODE_WEIGHTED_INTERLEAVE), "weighted interleave");
        CHECK_STR(numa_maps_mpol_mode_name(_MODE_MAX), "unknown");
        CHECK_STR(numa_maps_mpol_mode_name((enum mpol_mode) -1), "unknown");
        CHECK_STR(numa_maps_vma_kind_name(VMA_ANON), "anon");
        CHECK_STR(numa_maps_vma_kind_name(VMA_FILE), "file");
        CHECK_STR(numa_maps_vma_kind_name(VMA_HEAP), "heap");
        CHECK_STR(numa_maps_vma_kind_name(VMA_STACK), "stack");
        CHECK_STR(numa_maps_vma_kind_name(_VMA_KIND_MAX), "unknown");
}

/* The length counts, not a NUL: the parse stops at "N0=1". */
TEST(buffer_length_counts) {
        _cleanup_(numa_maps_freep) struct numa_maps *m = NULL;
        static const char buf[] = "7f00 default N0=12345 kernelpagesize_kB=8";

        CHECK_INT(numa_maps_parse(buf, strlen("7f00 default N0=1"), &m), 0);
        CHECK_INT(m->n_vmas, 1);
        CHECK_INT(m->vmas[0].pages, 1);
        CHECK_INT(m->vmas[0].page_size_kb, 4);
        CHECK_INT(m->vmas[0].line, 1);
}

/* Only newlines: no VMA, nothing bad; nothing at all: no VMA. */
TEST(buffer_empty_or_only_newlines) {
        struct numa_maps *m = NULL;

        CHECK_INT(numa_maps_parse("\n\n\n", 3, &m), 0);
        CHECK_INT(m->n_vmas, 0);
        CHECK_INT(m->n_bad_lines, 0);
        numa_maps_free(m);
        m = NULL;

        CHECK_INT(numa_maps_parse(NULL, 0, &m), 0);
        CHECK_INT(m->n_vmas, 0);
        numa_maps_free(m);
        numa_maps_free(NULL);
}

/* An empty line is a bad line; line numbers count it. */
TEST(buffer_bad_line_numbered) {
        _cleanup_(numa_maps_freep) struct numa_maps *c = NULL;

        CHECK_INT(numa_maps_parse("1 default\n\n2 bind:0\n", 20, &c), 0);
        CHECK_INT(c->n_vmas, 2);
        CHECK_INT(c->n_bad_lines, 1);
        CHECK_INT(c->bad_lines[0], 2);
        CHECK_INT(c->vmas[1].line, 3);
}

/* The first record of a small read: the policy is whole once a space or the line's end
 * follows it; before that, read more. */
TEST(head_of_a_cut_record) {
        struct mempolicy p, e;
        uint64_t start = 0;
        const char *full = "55cb565f7000 prefer (many)=static:0-1 file=/usr/bin/x mapped=1 N1=1 kernelpagesize_kB=4\n";

        CHECK_INT(numa_maps_parse_head(full, strlen(full), &start, &p), 0);
        CHECK_INT(start, 0x55cb565f7000ull);
        CHECK_INT(numa_maps_mempolicy_parse("prefer (many)=static:0-1", 24, &e), 0);
        CHECK(numa_maps_mempolicy_equal(&p, &e));
        /* Cut anywhere up to the space after the policy: more is needed. */
        for (size_t n = 1; n <= 37; n++)
                CHECK_INT(numa_maps_parse_head(full, n, &start, &p), -EAGAIN);
        CHECK_INT(numa_maps_parse_head(full, 38, &start, &p), 0);
        CHECK(numa_maps_mempolicy_equal(&p, &e));
        CHECK_INT(numa_maps_parse_head("7f00 weighted interleave:0-1\n", 29, &start, &p), 0);
        CHECK_INT(p.mode, MODE_WEIGHTED_INTERLEAVE);
        CHECK_INT(numa_maps_parse_head("7f00 default\n7f01 bind:1\n", 26, &start, &p), 0);
        CHECK_INT(p.mode, MODE_DEFAULT);
        CHECK_INT(start, 0x7f00);
        CHECK_INT(numa_maps_parse_head("7f00 prefer:1 heap", 18, &start, &p), 0);
        CHECK_INT(p.mode, MODE_PREFERRED);
}

TEST(head_malformed) {
        struct mempolicy p;
        uint64_t start;
        char junk[200];

        CHECK_INT(numa_maps_parse_head("", 0, &start, &p), -EINVAL);
        CHECK_INT(numa_maps_parse_head("xyz default\n", 12, &start, &p), -EINVAL);
        CHECK_INT(numa_maps_parse_head("7f00\n7f01 default\n", 19, &start, &p), -EINVAL);
        CHECK_INT(numa_maps_parse_head("7f00 bogus:1 heap\n", 18, &start, &p), -EINVAL);
        CHECK_INT(numa_maps_parse_head("7f00 def\0ult x\n", 16, &start, &p), -EINVAL);
        memset(junk, 'a', sizeof(junk));
        CHECK_INT(numa_maps_parse_head(junk, sizeof(junk), &start, &p), -EINVAL);
        memcpy(junk, "7f00 ", 5);
        CHECK_INT(numa_maps_parse_head(junk, sizeof(junk), &start, &p), -EINVAL);
}

TEST(mempolicy_equality) {
        struct mempolicy a, b;

        CHECK_INT(numa_maps_mempolicy_parse("bind:0-1", 8, &a), 0);
        CHECK_INT(numa_maps_mempolicy_parse("bind:0,1", 8, &b), 0);
        CHECK(numa_maps_mempolicy_equal(&a, &b));
        CHECK_INT(numa_maps_mempolicy_parse("bind=static:0-1", 15, &b), 0);
        CHECK(!numa_maps_mempolicy_equal(&a, &b));
        CHECK_INT(numa_maps_mempolicy_parse("interleave:0-1", 14, &b), 0);
        CHECK(!numa_maps_mempolicy_equal(&a, &b));
        CHECK_INT(numa_maps_mempolicy_parse("bind:1", 6, &b), 0);
        CHECK(!numa_maps_mempolicy_equal(&a, &b));
}

DEFINE_TEST_MAIN()
