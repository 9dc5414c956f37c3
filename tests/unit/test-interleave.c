/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Taking turns between owners (lib/interleave.h). */
#include <stdlib.h>
#include "cleanup.h"
#include "interleave.h"
#include "test.h"

static void check_order(const uid_t *owners, size_t n, const size_t *want) {
        size_t got[16];

        CHECK_INT(interleave_by_owner(owners, n, got), 0);
        for (size_t i = 0; i < n; i++)
                CHECK_INT(got[i], want[i]);
}

TEST(turns_between_owners) {
        /* A tenant (1000) first by name with five cgroups, root's two after them, and
         * another user's one: root's first cgroup comes second, not sixth. */
        static const uid_t owners[] = { 1000, 1000, 1000, 1000, 1000, 0, 0, 2000 };
        static const size_t want[] = { 0, 5, 7, 1, 6, 2, 3, 4 };

        check_order(owners, ELEMENTSOF(owners), want);
}

TEST(one_owner_and_none) {
        static const uid_t one[] = { 7, 7, 7 };
        static const size_t want[] = { 0, 1, 2 };
        size_t none[1];

        check_order(one, ELEMENTSOF(one), want);
        CHECK_INT(interleave_by_owner(one, 0, none), 0);
}

/* Every index exactly once, whatever the owners, and each owner's in its own order. */
TEST(a_permutation_keeping_each_owners_order) {
        enum { N = 5000 };
        static uid_t owners[N];
        static size_t order[N], seen[N], last[8];

        srand(14);
        for (size_t i = 0; i < N; i++)
                owners[i] = (uid_t) (rand() % 8);
        CHECK_INT(interleave_by_owner(owners, N, order), 0);
        for (size_t i = 0; i < 8; i++)
                last[i] = SIZE_MAX;
        for (size_t i = 0; i < N; i++) {
                size_t k = order[i];
                CHECK(k < N && !seen[k]);
                if (k >= N)
                        break;
                seen[k] = 1;
                CHECK(last[owners[k]] == SIZE_MAX || last[owners[k]] < k);
                last[owners[k]] = k;
        }
}

DEFINE_TEST_MAIN()
