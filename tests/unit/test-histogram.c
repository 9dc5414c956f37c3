/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Latency histograms (daemon/histogram.h): which bucket a duration falls in (le is
 * inclusive), +Inf past the last bound, and sums of per-job histograms. */
#include "histogram.h"
#include "test.h"

TEST(bucket_edges) {
        const struct histogram_bounds *b = &histogram_move_call_bounds;

        CHECK_INT(histogram_bucket(b, 0), 0);
        CHECK_INT(histogram_bucket(b, 100000), 0);          /* 100 us: le="0.0001" */
        CHECK_INT(histogram_bucket(b, 100001), 1);
        CHECK_INT(histogram_bucket(b, 1000000), 3);         /* 1 ms: le="0.001" */
        CHECK_INT(histogram_bucket(b, 2500000000ull), b->n - 1);
        CHECK_INT(histogram_bucket(b, 2500000001ull), b->n); /* above the last: +Inf */
        CHECK_INT(histogram_bucket(b, UINT64_MAX), b->n);
        CHECK_INT(histogram_bucket(&histogram_tick_bounds, 30000000000ull), histogram_tick_bounds.n - 1);
        CHECK_INT(histogram_bucket(&histogram_tick_bounds, 30000000001ull), histogram_tick_bounds.n);
}

TEST(bounds_increase) {
        const struct histogram_bounds *all[] = { &histogram_tick_bounds, &histogram_move_call_bounds };

        for (size_t k = 0; k < 2; k++) {
                CHECK(all[k]->n > 0 && all[k]->n <= HISTOGRAM_MAX_BOUNDS);
                for (size_t i = 1; i < all[k]->n; i++)
                        CHECK(all[k]->ns[i] > all[k]->ns[i - 1]);
                /* Every bound falls in its own bucket. */
                for (size_t i = 0; i < all[k]->n; i++)
                        CHECK_INT(histogram_bucket(all[k], all[k]->ns[i]), i);
        }
}

TEST(observe_and_add) {
        const struct histogram_bounds *b = &histogram_tick_bounds;
        struct histogram job1 = {}, job2 = {}, sum = {};

        histogram_observe(&job1, b, 3000000);      /* 3 ms: le="0.005" */
        histogram_observe(&job1, b, 40000000000ull); /* 40 s: +Inf */
        histogram_observe(&job2, b, 7000000);      /* 7 ms: le="0.01" */
        histogram_add(&sum, &job1);
        histogram_add(&sum, &job2);
        CHECK_INT(sum.count, 3);
        CHECK_INT(sum.sum_ns, 3000000 + 40000000000ull + 7000000);
        CHECK_INT(sum.bucket[0], 1);
        CHECK_INT(sum.bucket[1], 1);
        CHECK_INT(sum.bucket[b->n], 1);
        uint64_t total = 0;
        for (size_t i = 0; i <= b->n; i++)
                total += sum.bucket[i];
        CHECK_INT(total, sum.count);
}

DEFINE_TEST_MAIN()
