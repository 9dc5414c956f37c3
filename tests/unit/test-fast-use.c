/* SPDX-License-Identifier: GPL-2.0-or-later */
/* What a cgroup with a share of the fast tier may give up (daemon/fast-use.h), on a
 * cgroup tree of plain files: its holder, memory.numa_stat read once a tick, the limit
 * shared by the processes of one share, none without a share. */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "cg-records.h"
#include "cleanup.h"
#include "fast-share.h"
#include "fast-use.h"
#include "test.h"
#include "tiered.h"
#include "tmptree.h"

#define MB (UINT64_C(1) << 20)

/* numa_stat's text with a bytes on node 0 (anon and file halves). */
static void write_stat(const char *root, const char *dir, uint64_t a) {
        char rel[256], text[256];

        snprintf(rel, sizeof(rel), "%s/memory.numa_stat", dir);
        snprintf(text, sizeof(text), "anon N0=%llu N1=0 N2=%llu\nfile N0=%llu N1=0 N2=0\nshmem N0=1 N1=0 N2=0\n",
                 (unsigned long long) (a / 2), (unsigned long long) MB, (unsigned long long) (a - a / 2));
        CHECK_INT(tmptree_write_at(root, rel, text), 0);
}

TEST(limit_is_above_the_share_and_shared_by_its_cgroup) {
        _cleanup_(topology_freep) struct topology *t = tiered_topology();
        struct cgroup_entry db = { .path = "/db", .fast_share_pct = 50, .share_by = "/db" },
                            w1 = { .path = "/db/w1", .fast_share_pct = 50, .share_by = "/db" },
                            free_ = { .path = "/batch", .fast_share_pct = FAST_SHARE_UNSET };
        uint64_t give[3], from[3], left[3];
        struct cg_records r;
        struct cg_rec *h, *c, *b;
        char root[PATH_MAX];
        int i0;

        if (!t)
                return;
        i0 = topology_node_index(t, 0);
        CHECK_INT(tmptree_new(root, sizeof(root), "test-fast-use"), 0);
        /* Node 0 of the test topology: its MemTotal, half of it the share. */
        write_stat(root, "/db", t->nodes[i0].mem_total_kb * 1024 / 2 + 64 * MB);
        cg_records_init(&r);
        h = cg_records_get(&r, root, &db);
        c = cg_records_get(&r, root, &w1);
        b = cg_records_get(&r, root, &free_);
        CHECK(h && c && b);
        if (!h || !c || !b)
                goto out;
        CHECK(fast_use_holder(&r, c) == h);
        CHECK(fast_use_holder(&r, b) == NULL);
        /* No share: no limit, give untouched. */
        give[0] = 7;
        CHECK_INT(fast_use_limit(&r, root, t, 1, b, give), 0);
        CHECK_INT(give[0], 7);
        /* 64 MiB above the share on node 0, none on the others (node 2: 1 MiB, no share
         * of a node is given beyond what is held above it). */
        CHECK_INT(fast_use_limit(&r, root, t, 1, c, give), 1);
        CHECK_INT(give[i0], 64 * MB);
        CHECK_INT(give[topology_node_index(t, 1)], 0);
        /* w1 gave 40 MiB: the holder (and so /db itself) has 24 MiB left this tick. */
        memcpy(from, give, sizeof(give));
        memcpy(left, give, sizeof(give));
        left[i0] -= 40 * MB;
        fast_use_gave(&r, c, t, from, left);
        CHECK_INT(fast_use_limit(&r, root, t, 1, h, give), 1);
        CHECK_INT(give[i0], 24 * MB);
        /* Read once a tick: a change of the file shows at the next, with nothing given. */
        write_stat(root, "/db", t->nodes[i0].mem_total_kb * 1024 / 2 + 8 * MB);
        CHECK_INT(fast_use_limit(&r, root, t, 1, c, give), 1);
        CHECK_INT(give[i0], 24 * MB);
        CHECK_INT(fast_use_limit(&r, root, t, 2, c, give), 1);
        CHECK_INT(give[i0], 8 * MB);
        /* Below its share: nothing. */
        write_stat(root, "/db", 100 * MB);
        CHECK_INT(fast_use_limit(&r, root, t, 3, c, give), 1);
        CHECK_INT(give[i0], 0);
        /* The file gone (the cgroup removed, a kernel without it): nothing either. */
        {
                char p[PATH_MAX + 32];
                snprintf(p, sizeof(p), "%s/db/memory.numa_stat", root);
                CHECK_INT(unlink(p), 0);
        }
        CHECK_INT(fast_use_limit(&r, root, t, 4, c, give), 1);
        CHECK_INT(give[i0], 0);
        /* A share whose directory is no record this tick: nothing, rather than counted wrong. */
        {
                struct cgroup_entry orphan = { .path = "/x/y", .fast_share_pct = 10, .share_by = "/x" };
                struct cg_rec *o = cg_records_get(&r, root, &orphan);

                CHECK(o && fast_use_holder(&r, o) == NULL);
                give[i0] = 7;
                CHECK_INT(fast_use_limit(&r, root, t, 4, o, give), 1);
                CHECK_INT(give[i0], 0);
        }
        /* The share removed: the record says so at the next get. */
        w1.fast_share_pct = FAST_SHARE_UNSET;
        w1.share_by = NULL;
        c = cg_records_get(&r, root, &w1);
        CHECK(c && c->share_by == NULL && c->fast_share_pct == FAST_SHARE_UNSET);
out:
        cg_records_done(&r);
        tmptree_remove(root);
}

DEFINE_TEST_MAIN()
