/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The tick's counters (daemon/counters.h): bytes moved in the last minute. */
#include "counters.h"
#include "test.h"

TEST(moved_last_minute) {
        struct counters c = {};

        CHECK_INT(counters_moved_last_minute(&c), 0);
        counters_moved(&c, 4096);
        counters_moved(&c, 8192);
        CHECK_INT(counters_moved_last_minute(&c), 12288);
        /* A slot from more than a minute ago no longer counts. */
        for (size_t i = 0; i < COUNTERS_MOVED_SLOTS; i++)
                if (c.moved_ring[i])
                        c.ring_sec[i] -= COUNTERS_MOVED_SLOTS;
        CHECK_INT(counters_moved_last_minute(&c), 0);
        counters_moved(&c, 1);
        CHECK_INT(counters_moved_last_minute(&c), 1);
}

DEFINE_TEST_MAIN()
