/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Turns between owners (lib/interleave.h). */
#include <stdlib.h>
#include "cleanup.h"
#include "interleave.h"
#include "test.h"

static void check_order(const uid_t *owners, size_t n, const struct owner_cursor *cur, size_t n_cur,
                        const size_t *want) {
        struct turns t = {};

        CHECK_INT(interleave_by_owner(owners, n, cur, n_cur, &t), 0);
        CHECK_INT(t.n, n);
        for (size_t i = 0; i < n && i < t.n; i++) {
                CHECK_INT(t.order[i], want[i]);
                CHECK_INT(t.group_owner[t.group[i]], owners[t.order[i]]);
        }
        interleave_turns_done(&t);
}

TEST(turns_between_owners) {
        /* A tenant (1000) first by name with five cgroups, root's two after them, and
         * another user's one: root's first cgroup comes second, not sixth. */
        static const uid_t owners[] = { 1000, 1000, 1000, 1000, 1000, 0, 0, 2000 };
        static const size_t want[] = { 0, 5, 7, 1, 6, 2, 3, 4 };
        struct turns t = {};

        check_order(owners, ELEMENTSOF(owners), NULL, 0, want);
        CHECK_INT(interleave_by_owner(owners, ELEMENTSOF(owners), NULL, 0, &t), 0);
        CHECK_INT(t.n_groups, 3);
        CHECK(t.n_groups == 3 && t.group_owner[0] == 1000 && t.group_owner[1] == 0 && t.group_owner[2] == 2000);
        CHECK(t.n_groups == 3 && t.group_size[0] == 5 && t.group_size[1] == 2 && t.group_size[2] == 1);
        interleave_turns_done(&t);
}

/* An owner's turns start at its cursor (modulo its count), and wrap. */
TEST(turns_start_at_the_cursor) {
        static const uid_t owners[] = { 1000, 1000, 1000, 1000, 1000, 0, 0 };
        static const struct owner_cursor cur[] = { { 1000, 3 }, { 0, 3 }, { 5, 1 } };
        static const size_t want[] = { 3, 6, 4, 5, 0, 1, 2 };

        check_order(owners, ELEMENTSOF(owners), cur, ELEMENTSOF(cur), want);
}

TEST(one_owner_and_none) {
        static const uid_t one[] = { 7, 7, 7 };
        static const size_t want[] = { 0, 1, 2 };
        struct turns t = {};

        check_order(one, ELEMENTSOF(one), NULL, 0, want);
        CHECK_INT(interleave_by_owner(one, 0, NULL, 0, &t), 0);
        CHECK(t.n == 0 && t.n_groups == 0);
        interleave_turns_done(&t);
}

/* Every index exactly once, whatever the owners and cursors. */
TEST(a_permutation) {
        enum { N = 5000 };
        static uid_t owners[N];
        static size_t seen[N];
        struct owner_cursor cur[8];
        struct turns t = {};

        srand(14);
        for (size_t i = 0; i < N; i++)
                owners[i] = (uid_t) (rand() % 8);
        for (size_t i = 0; i < 8; i++)
                cur[i] = (struct owner_cursor) { (uid_t) i, (size_t) rand() };
        CHECK_INT(interleave_by_owner(owners, N, cur, 8, &t), 0);
        for (size_t i = 0; i < t.n; i++) {
                size_t k = t.order[i];
                CHECK(k < N && !seen[k]);
                if (k >= N)
                        break;
                seen[k] = 1;
        }
        interleave_turns_done(&t);
}

DEFINE_TEST_MAIN()
