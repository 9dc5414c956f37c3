/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The tick's counters (daemon/counters.h): bytes moved in the last minute. */
#include <string.h>
#include "counters.h"
#include "log.h"
#include "pagesize.h"
#include "test.h"

static unsigned n_lines;
static char line[512];

static void sink(int level, int error, const struct log_fields *fields, const char *msg) {
        n_lines++;
        snprintf(line, sizeof(line), "%s", msg);
}

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

/* The minute's batches in one line at info, and nothing for a minute with none. */
TEST(summary_once_a_minute) {
        struct counters c = {};
        char want[256];

        log_set_sink(sink);
        counters_log_summary(&c, 1000);         /* the first minute starts */
        c.total_pages[MIG_MOVED] = 2 * (UINT64_C(1) << 20) / page_size();
        c.total_pages[MIG_BUSY] = 3;
        c.move_calls.count = 4;
        counters_log_summary(&c, 59000);        /* not a minute yet */
        CHECK_INT(n_lines, 0);
        counters_log_summary(&c, 61000);
        CHECK_INT(n_lines, 1);
        snprintf(want, sizeof(want), "Migrations in the last 60 s: 2 MiB moved (%zu pages), 3 busy, 0 gone, 0 refused, "
                 "0 already in place, in 4 move_pages call(s)", (size_t) (2 * (UINT64_C(1) << 20) / page_size()));
        CHECK_MSG(strncmp(line, want, strlen(want)) == 0, "got \"%s\"", line);
        counters_log_summary(&c, 130000);       /* a minute with nothing asked: quiet */
        CHECK_INT(n_lines, 1);
        c.total_pages[MIG_REFUSED] = 7;
        counters_log_summary(&c, 200000);
        CHECK_INT(n_lines, 2);
        CHECK(strstr(line, "in the last 70 s: 0 MiB moved (0 pages), 0 busy, 0 gone, 7 refused") != NULL);
        log_set_sink(NULL);
}

DEFINE_TEST_MAIN()
