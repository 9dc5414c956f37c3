/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The migration budget: a token bucket in bytes. It takes the time as a parameter
 * (nanoseconds of any monotonic clock) and neither reads a clock nor sleeps, so its
 * arithmetic is tested without waiting (tests/unit/test-token-bucket.c); the worker pool
 * (migrator.c) owns the one bucket of a migrator, locks it and does the sleeping.
 *
 * rate_bytes_s == 0: unlimited. The burst is 100 ms worth of the rate. The bucket may
 * go into debt (a batch larger than the burst is allowed, then paid for by sleeping),
 * so that one worker's large batch also delays the others: the budget is global. */
#pragma once
#include <stdint.h>

struct token_bucket {
        uint64_t rate_bytes_s;
        uint64_t burst_bytes;
        int64_t tokens;            /* bytes; negative: debt */
        uint64_t last_ns;          /* time of the last refill */
        uint64_t frac;             /* the part of a byte not yet added, in byte-ns */
};

void token_bucket_init(struct token_bucket *tb, uint64_t rate_bytes_s, uint64_t now_ns);
/* Changes the rate and keeps the current balance (clamped to the new burst). */
void token_bucket_set_rate(struct token_bucket *tb, uint64_t rate_bytes_s, uint64_t now_ns);
/* Takes bytes at now_ns; returns how long (ns) the caller must sleep before using them. */
uint64_t token_bucket_take(struct token_bucket *tb, uint64_t bytes, uint64_t now_ns);
/* The same for bytes that were moved by work which ran from busy_since_ns to now_ns.
 * The refill stops at the burst only for idle time: the time since busy_since_ns is
 * credited whole (once: the bucket's clock moves only forward, so workers overlapping
 * in time are not each credited the same interval). Charged after the fact, a batch
 * larger than the burst that took longer than its bytes at the rate leaves no debt;
 * capping that time too made a 511 MiB batch of THP that had taken 1.7 s at 300 MiB/s
 * sleep another 0.4 s under a 1024 MiB/s budget. */
uint64_t token_bucket_take_busy(struct token_bucket *tb, uint64_t bytes, uint64_t busy_since_ns, uint64_t now_ns);
