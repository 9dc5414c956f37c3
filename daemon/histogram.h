/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Latency histograms for the metrics (metrics.c): counts per bucket of fixed upper
 * bounds, their sum and count. Each histogram has one writer: the tick's on the event
 * loop; a move call's in its job's own results (migrate_job.move_calls), written on the
 * worker's thread and added on the event loop with the job's other results
 * (jobs.c), so that no two threads write one. */
#pragma once
#include <stddef.h>
#include <stdint.h>

#define HISTOGRAM_MAX_BOUNDS 16

/* The upper bounds (inclusive, ns, increasing) of a histogram's buckets; one more
 * bucket, +Inf, takes what is above the last. Static. */
struct histogram_bounds {
        const uint64_t *ns;
        size_t n;
};

/* A tick's wall time: 5 ms (nothing opted in) to 30 s (a tick that ran into the
 * time budgets of its reads and moves). */
extern const struct histogram_bounds histogram_tick_bounds;
/* One move_pages(2) call's wall time: 100 us (a few pages) to 2.5 s (a batch of
 * 65,536 base pages under memory pressure). */
extern const struct histogram_bounds histogram_move_call_bounds;

struct histogram {
        uint64_t bucket[HISTOGRAM_MAX_BOUNDS + 1];  /* per bucket, not cumulative; the last is +Inf */
        uint64_t count;
        uint64_t sum_ns;
};

/* The bucket index of ns: the first bound it does not exceed, or b->n (+Inf). */
size_t histogram_bucket(const struct histogram_bounds *b, uint64_t ns);
void histogram_observe(struct histogram *h, const struct histogram_bounds *b, uint64_t ns);
/* Adds src's observations to dst (the same bounds). */
void histogram_add(struct histogram *dst, const struct histogram *src);
