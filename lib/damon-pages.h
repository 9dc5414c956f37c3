/* SPDX-License-Identifier: GPL-2.0-or-later */
/* DAMON's hot regions as page evidence (daemon/damon.h), pure: the target regions a
 * process's kdamond monitors (its VMAs with pages on a slow node, merged down to a
 * bound), and a read's hot regions turned into one count per base page within those
 * ranges, capped. */
#pragma once
#include <stddef.h>
#include <stdint.h>

struct damon_range {
        uint64_t start, end;       /* [start, end) */
};

/* A kdamond's target regions, at most: DAMON splits each region into at least one
 * monitoring region, and the regions are written one sysfs file pair each. */
#define DAMON_TARGET_REGIONS_MAX 32

/* Sorted, disjoint ranges (n of them) merged into at most max (>= 1) by closing the
 * smallest gaps first, into out (room for max). Returns how many. */
size_t damon_pages_targets(const struct damon_range *in, size_t n, struct damon_range *out, size_t max);

/* For each base page (page bytes, a power of two) of the hot regions that lies in one
 * of ranges (sorted, disjoint), fn(userdata, page address), at most cap pages in all.
 * A region with end <= start is skipped. Returns the pages fed; *ret_capped: pages
 * left out for the cap. */
uint64_t damon_pages_feed(const struct damon_range *hot, size_t n_hot, const struct damon_range *ranges,
                          size_t n_ranges, uint64_t page, uint64_t cap,
                          void (*fn)(void *userdata, uint64_t addr), void *userdata, uint64_t *ret_capped);
