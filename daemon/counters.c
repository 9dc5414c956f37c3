/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The tick's counters (counters.h). */
#include <inttypes.h>
#include "clock.h"
#include "counters.h"
#include "log.h"
#include "pagesize.h"

void counters_moved(struct counters *c, uint64_t bytes) {
        uint64_t sec = clock_now_ms() / 1000;
        size_t slot = sec % COUNTERS_MOVED_SLOTS;

        if (c->ring_sec[slot] != sec) {
                c->ring_sec[slot] = sec;
                c->moved_ring[slot] = 0;
        }
        c->moved_ring[slot] += bytes;
}

uint64_t counters_moved_last_minute(const struct counters *c) {
        uint64_t sec = clock_now_ms() / 1000, sum = 0;

        for (size_t i = 0; i < COUNTERS_MOVED_SLOTS; i++)
                if (c->ring_sec[i] + COUNTERS_MOVED_SLOTS > sec)
                        sum += c->moved_ring[i];
        return sum;
}

void counters_log_summary(struct counters *c, uint64_t now_ms) {
        uint64_t d[_MIG_CLASS_MAX], asked = 0, calls = c->move_calls.count - c->summary_calls;

        if (!c->summary_ms) {
                c->summary_ms = now_ms;   /* the first minute starts now */
                return;
        }
        if (now_ms < c->summary_ms + COUNTERS_SUMMARY_MS)
                return;
        for (int k = 0; k < _MIG_CLASS_MAX; k++) {
                d[k] = c->total_pages[k] - c->summary_pages[k];
                asked += d[k];
                c->summary_pages[k] = c->total_pages[k];
        }
        if (asked)
                log_info("Migrations in the last %" PRIu64 " s: %" PRIu64 " MiB moved (%" PRIu64 " pages), %" PRIu64
                         " busy, %" PRIu64 " gone, %" PRIu64 " refused, %" PRIu64 " already in place, in %" PRIu64
                         " move_pages call(s) (each call's line is at debug level)",
                         (now_ms - c->summary_ms) / 1000, d[MIG_MOVED] * page_size() >> 20, d[MIG_MOVED], d[MIG_BUSY],
                         d[MIG_GONE], d[MIG_REFUSED], d[MIG_ALREADY], calls);
        c->summary_calls = c->move_calls.count;
        c->summary_ms = now_ms;
}
