/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The migration budget's token bucket (daemon/token-bucket.h) on a clock the test moves
 * by hand: no sleeping, exact numbers. */
#include <stdint.h>
#include "token-bucket.h"
#include "test.h"

#define MB (UINT64_C(1) << 20)
#define NS UINT64_C(1000000000)

/* A start time far from 0, a rate of 10 MiB/s and its burst (100 ms of it). */
static const uint64_t t0 = 1000 * NS, rate = 10 * MB, burst = 10 * MB / 10;

TEST(unlimited) {
        struct token_bucket tb;

        token_bucket_init(&tb, 0, t0);
        CHECK_INT(token_bucket_take(&tb, UINT64_C(1) << 40, t0), 0);
}

TEST(burst_is_free) {
        struct token_bucket tb;

        token_bucket_init(&tb, rate, t0);
        CHECK_INT(tb.burst_bytes, burst);
        CHECK_INT(token_bucket_take(&tb, burst, t0), 0);
        /* 1 MiB more at the same instant: 1/10 s of debt. */
        CHECK_INT(token_bucket_take(&tb, MB, t0), NS / 10);
}

TEST(debt_is_global) {
        struct token_bucket tb;

        token_bucket_init(&tb, rate, t0);
        token_bucket_take(&tb, burst, t0);
        CHECK_INT(token_bucket_take(&tb, MB, t0), NS / 10);
        /* Another worker booking right after pays for both debts. */
        CHECK_INT(token_bucket_take(&tb, MB, t0), 2 * NS / 10);
        /* 200 ms later the debt is paid, nothing accrued beyond it. */
        CHECK_INT(token_bucket_take(&tb, 0, t0 + 2 * NS / 10), 0);
        CHECK_INT(tb.tokens, 0);
}

TEST(idle_refills_to_burst_only) {
        struct token_bucket tb;

        token_bucket_init(&tb, rate, t0);
        token_bucket_take(&tb, burst + MB, t0);
        CHECK_INT(token_bucket_take(&tb, 0, t0 + 100 * NS), 0);
        CHECK_INT(tb.tokens, (int64_t) burst);
}

TEST(steady_rate) {
        struct token_bucket tb;
        uint64_t t = t0;

        /* 10 MiB/s for 5 s in 1 MiB steps, each booked when the previous wait ends:
         * the total time is 5 s minus the burst. */
        token_bucket_init(&tb, rate, t0);
        for (int i = 0; i < 50; i++)
                t += token_bucket_take(&tb, MB, t);
        CHECK(t - t0 >= 5 * NS - NS / 10 - 1000 && t - t0 <= 5 * NS - NS / 10 + 1000);
}

TEST(no_rounding_drift) {
        struct token_bucket tb;

        /* Many tiny refills (1 ns apart) must not lose time to rounding. */
        token_bucket_init(&tb, rate, t0);
        token_bucket_take(&tb, burst, t0);
        for (uint64_t t = t0 + 1; t <= t0 + 100000; t++)
                token_bucket_take(&tb, 0, t);
        /* 100 us at 10 MiB/s = 1048.576 bytes. */
        CHECK(tb.tokens >= 1048 && tb.tokens <= 1049);
}

TEST(lower_rate_keeps_balance_in_burst) {
        struct token_bucket tb;

        token_bucket_init(&tb, rate, t0);
        token_bucket_set_rate(&tb, MB, t0);
        CHECK_INT(tb.tokens, (int64_t) (MB / 10));
        CHECK_INT(token_bucket_take(&tb, MB / 10 + MB, t0), NS);
}

TEST(rate_change_keeps_debt) {
        struct token_bucket tb;

        /* 1 MiB of debt at 10 MiB/s; at twice the rate it is paid in half the time. */
        token_bucket_init(&tb, rate, t0);
        CHECK_INT(token_bucket_take(&tb, burst + MB, t0), NS / 10);
        token_bucket_set_rate(&tb, 2 * rate, t0);
        CHECK_INT(token_bucket_take(&tb, 0, t0), NS / 20);
}

TEST(to_unlimited_and_back) {
        struct token_bucket tb;

        token_bucket_init(&tb, rate, t0);
        token_bucket_set_rate(&tb, 0, t0);
        CHECK_INT(token_bucket_take(&tb, 1000 * MB, t0), 0);
        token_bucket_set_rate(&tb, rate, t0);
        CHECK_INT(tb.tokens, (int64_t) burst);
}

TEST(busy_time_credited) {
        struct token_bucket tb;

        /* Charged after the fact: 50 MiB (5 bursts) moved by work that took 6 s, below
         * the rate, leaves no debt; the same bytes booked as if at one instant do. */
        token_bucket_init(&tb, rate, t0);
        CHECK_INT(token_bucket_take_busy(&tb, 50 * MB, t0 + NS, t0 + 7 * NS), 0);
        CHECK(tb.tokens >= 0 && tb.tokens <= (int64_t) burst);
        token_bucket_init(&tb, rate, t0);
        CHECK(token_bucket_take(&tb, 50 * MB, t0 + 7 * NS) > 3 * NS);
}

TEST(busy_faster_than_rate_pays) {
        struct token_bucket tb;

        /* 50 MiB in 2 s at 10 MiB/s pays the difference (3 s, less the burst saved
         * before the work began). */
        token_bucket_init(&tb, rate, t0);
        CHECK_INT(token_bucket_take_busy(&tb, 50 * MB, t0 + 10 * NS, t0 + 12 * NS), 3 * NS - NS / 10);
}

TEST(overlapping_busy_credited_once) {
        struct token_bucket tb;

        /* Two workers busy over the same 4 s, 30 MiB each: the 4 s is credited once,
         * to the first to book; what it leaves over the burst is not passed on (the
         * budget errs on the slow side), so the second pays for 29 MiB. */
        token_bucket_init(&tb, rate, t0);
        CHECK_INT(token_bucket_take_busy(&tb, 30 * MB, t0, t0 + 4 * NS), 0);
        CHECK_INT(token_bucket_take_busy(&tb, 30 * MB, t0, t0 + 4 * NS), 29 * NS / 10);
}

DEFINE_TEST_MAIN()
