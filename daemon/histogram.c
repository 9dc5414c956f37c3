/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Latency histograms (histogram.h). */
#include "histogram.h"
#include "cleanup.h"

#define MS 1000000ull
#define S 1000000000ull

static const uint64_t tick_ns[] = {
        5 * MS, 10 * MS, 25 * MS, 50 * MS, 100 * MS, 250 * MS, 500 * MS,
        1 * S, 2500 * MS, 5 * S, 10 * S, 30 * S,
};
static const uint64_t move_call_ns[] = {
        100000, 250000, 500000, 1 * MS, 2500000, 5 * MS, 10 * MS, 25 * MS, 50 * MS,
        100 * MS, 250 * MS, 500 * MS, 1 * S, 2500 * MS,
};
_Static_assert(ELEMENTSOF(tick_ns) <= HISTOGRAM_MAX_BOUNDS, "too many tick buckets");
_Static_assert(ELEMENTSOF(move_call_ns) <= HISTOGRAM_MAX_BOUNDS, "too many move-call buckets");

const struct histogram_bounds histogram_tick_bounds = { tick_ns, ELEMENTSOF(tick_ns) };
const struct histogram_bounds histogram_move_call_bounds = { move_call_ns, ELEMENTSOF(move_call_ns) };

size_t histogram_bucket(const struct histogram_bounds *b, uint64_t ns) {
        size_t lo = 0, hi = b->n;

        /* The first bound >= ns: Prometheus's le is "less than or equal". */
        while (lo < hi) {
                size_t mid = lo + (hi - lo) / 2;

                if (b->ns[mid] < ns)
                        lo = mid + 1;
                else
                        hi = mid;
        }
        return lo;
}

void histogram_observe(struct histogram *h, const struct histogram_bounds *b, uint64_t ns) {
        h->bucket[histogram_bucket(b, ns)]++;
        h->count++;
        h->sum_ns += ns;
}

void histogram_add(struct histogram *dst, const struct histogram *src) {
        for (size_t i = 0; i < ELEMENTSOF(dst->bucket); i++)
                dst->bucket[i] += src->bucket[i];
        dst->count += src->count;
        dst->sum_ns += src->sum_ns;
}
