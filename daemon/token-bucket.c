/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The token bucket of the migration budget (token-bucket.h). */
#include <stdint.h>
#include "clock.h"
#include "token-bucket.h"

/* Burst of the token bucket: 100 ms worth of the rate, so a budget of N MB/s never sees
 * more than N/10 MB above the line at any instant. */
#define TOKEN_BUCKET_BURST_NS (100 * NSEC_PER_MSEC)
/* The bucket is full long before an idle hour ends; the cap keeps elapsed * rate in range. */
#define TOKEN_BUCKET_IDLE_MAX_NS (3600 * NSEC_PER_SEC)
/* The largest balance and debt: far from the int64_t limits, so that adding a refill
 * or subtracting a batch cannot overflow. */
#define TOKEN_BUCKET_LIMIT (INT64_MAX / 2)

static uint64_t burst_for(uint64_t rate_bytes_s) {
        return (uint64_t) ((unsigned __int128) rate_bytes_s * TOKEN_BUCKET_BURST_NS / NSEC_PER_SEC);
}

void token_bucket_init(struct token_bucket *tb, uint64_t rate_bytes_s, uint64_t now) {
        *tb = (struct token_bucket) {
                .rate_bytes_s = rate_bytes_s,
                .burst_bytes = burst_for(rate_bytes_s),
                .last_ns = now,
        };
        tb->tokens = (int64_t) tb->burst_bytes;
}

/* Adds what the rate earned from the last refill to now, the balance capped at cap.
 * The fraction of a byte (in byte-nanoseconds) is carried to the next refill: no
 * drift from the integer division, however often we are called. */
static void token_bucket_accrue(struct token_bucket *tb, uint64_t now, int64_t cap) {
        unsigned __int128 num;
        uint64_t elapsed;
        __int128 sum;

        if (now <= tb->last_ns)
                return;
        elapsed = now - tb->last_ns;
        if (elapsed > TOKEN_BUCKET_IDLE_MAX_NS)
                elapsed = TOKEN_BUCKET_IDLE_MAX_NS;
        num = (unsigned __int128) elapsed * tb->rate_bytes_s + tb->frac;
        tb->last_ns = now;
        tb->frac = (uint64_t) (num % NSEC_PER_SEC);
        num /= NSEC_PER_SEC;
        sum = (__int128) tb->tokens + (__int128) num;
        tb->tokens = sum > (__int128) cap ? cap : (int64_t) sum;
}

void token_bucket_set_rate(struct token_bucket *tb, uint64_t rate_bytes_s, uint64_t now) {
        if (tb->rate_bytes_s != 0)
                token_bucket_accrue(tb, now, (int64_t) tb->burst_bytes);
        else
                tb->tokens = INT64_MAX;       /* coming from unlimited: start full */
        tb->rate_bytes_s = rate_bytes_s;
        tb->burst_bytes = burst_for(rate_bytes_s);
        tb->last_ns = now;
        tb->frac = 0;
        if (tb->tokens > (int64_t) tb->burst_bytes)
                tb->tokens = (int64_t) tb->burst_bytes;
}

uint64_t token_bucket_take(struct token_bucket *tb, uint64_t bytes, uint64_t now) {
        return token_bucket_take_busy(tb, bytes, now, now);
}

uint64_t token_bucket_take_busy(struct token_bucket *tb, uint64_t bytes, uint64_t busy_since, uint64_t now) {
        if (tb->rate_bytes_s == 0)
                return 0;
        if (busy_since > now)
                busy_since = now;
        /* Idle time up to busy_since: capped at the burst. Busy time: credited whole,
         * then the balance is capped at the burst again below. */
        token_bucket_accrue(tb, busy_since, (int64_t) tb->burst_bytes);
        token_bucket_accrue(tb, now, TOKEN_BUCKET_LIMIT);
        if (bytes > (uint64_t) TOKEN_BUCKET_LIMIT)
                bytes = (uint64_t) TOKEN_BUCKET_LIMIT;
        /* Saturate the debt: a lowered rate must not overflow it. */
        if (tb->tokens < INT64_MIN / 2)
                tb->tokens = INT64_MIN / 2;
        tb->tokens -= (int64_t) bytes;
        if (tb->tokens > (int64_t) tb->burst_bytes)
                tb->tokens = (int64_t) tb->burst_bytes;
        if (tb->tokens >= 0)
                return 0;
        return (uint64_t) ((unsigned __int128) (uint64_t) -tb->tokens * NSEC_PER_SEC / tb->rate_bytes_s);
}
