/* SPDX-License-Identifier: GPL-2.0-or-later */
/* A cgroup's share of the fast tier (lib/fast-share.h): the value, memory.numa_stat
 * per node, and what a cgroup above its share may give up. */
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include "cleanup.h"
#include "fast-share.h"
#include "test.h"
#include "tiered.h"

#define MB (UINT64_C(1) << 20)

/* "N%" with N 0..100, nothing else. */
TEST(value) {
        static const char *bad[] = { "", "%", "40", "101%", "-1%", "+4%", " 4%", "4 %", "4.5%", "1000%",
                                     "0x1%", "40%%", "4%0" };
        int pct = -7;

        CHECK_INT(fast_share_parse("40%", 3, &pct), 0);
        CHECK_INT(pct, 40);
        CHECK_INT(fast_share_parse("0%", 2, &pct), 0);
        CHECK_INT(pct, 0);
        CHECK_INT(fast_share_parse("100%", 4, &pct), 0);
        CHECK_INT(pct, 100);
        CHECK_INT(fast_share_parse("040%", 4, &pct), 0);
        CHECK_INT(pct, 40);
        pct = -7;
        for (size_t i = 0; i < sizeof(bad) / sizeof(*bad); i++)
                CHECK_INT(fast_share_parse(bad[i], strlen(bad[i]), &pct), -EINVAL);
        CHECK_INT(pct, -7);
}

/* anon and file, summed per node; other lines, unknown nodes and broken tokens not. */
TEST(usage_from_numa_stat) {
        _cleanup_(topology_freep) struct topology *t = tiered_topology();
        const char text[] = "anon N0=1048576 N1=0 N2=2097152\n"
                            "file N0=4096 N1=8192 N2=0 N7=999\n"
                            "kernel_stack N0=65536 N1=0 N2=0\n"
                            "shmem N0=4096 N1=0 N2=0\n"
                            "anon_thp N0=2097152 N1=0 N2=0\n";
        uint64_t got[3] = { 1, 1, 1 };

        if (!t)
                return;
        CHECK_INT(t->n_nodes, 3);
        CHECK_INT(fast_share_usage_parse(text, strlen(text), t, got), 0);
        CHECK_INT(got[topology_node_index(t, 0)], MB + 4096);
        CHECK_INT(got[topology_node_index(t, 1)], 8192);
        CHECK_INT(got[topology_node_index(t, 2)], 2 * MB);
        /* Hostile or broken tokens are skipped, the rest counted. */
        {
                const char odd[] = "anon N=5 N0= N0=12x N99999999999=1 N1=99999999999999999999999 N0=7\nfile";
                CHECK_INT(fast_share_usage_parse(odd, strlen(odd), t, got), 0);
                CHECK_INT(got[topology_node_index(t, 0)], 7);
                CHECK_INT(got[topology_node_index(t, 1)], 0);
        }
        CHECK_INT(fast_share_usage_parse("shmem N0=1\n", 11, t, got), -EINVAL);
        CHECK_INT(fast_share_usage_parse("", 0, t, got), -EINVAL);
}

/* Only what is above the share goes; no share: all of it. */
TEST(excess) {
        const uint64_t total_kb = 768 * 1024;   /* a 768 MiB node */

        CHECK(fast_share_excess(500 * MB, total_kb, FAST_SHARE_UNSET) == UINT64_MAX);
        CHECK_INT(fast_share_excess(500 * MB, total_kb, 0), 500 * MB);
        CHECK_INT(fast_share_excess(500 * MB, total_kb, 50), 500 * MB - 384 * MB);
        CHECK_INT(fast_share_excess(384 * MB, total_kb, 50), 0);
        CHECK_INT(fast_share_excess(100 * MB, total_kb, 50), 0);
        CHECK_INT(fast_share_excess(UINT64_MAX, total_kb, 100), UINT64_MAX - 768 * MB);
        /* A node whose size is not a multiple of 100 KiB: no rounding up of the share. */
        CHECK_INT(fast_share_excess(1024 * 1024, 1001, 10), 1024 * 1024 - 100 * 1024 - 102);
        CHECK_INT(fast_share_bytes(1001, 10), 100 * 1024 + 102);
        CHECK_INT(fast_share_bytes(total_kb, 100), 768 * MB);
        CHECK_INT(fast_share_bytes(total_kb, FAST_SHARE_UNSET), 0);
}

DEFINE_TEST_MAIN()
