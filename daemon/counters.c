/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The tick's counters (counters.h). */
#include "clock.h"
#include "counters.h"

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
