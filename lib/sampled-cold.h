/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Cold memory without DAMON (docs/RULES.md, the exchange), pure: a process's pages
 * never sampled over cold_age_ms, when its samples are known to cover its accesses.
 *
 * Samples are counted per page in windows of at least the cold age: the current one,
 * and the one closed before it. A page is cold when neither holds it, and only when:
 *   - the closed window took at least SAMPLED_COLD_MIN_SAMPLES samples and neither
 *     window holds more than SAMPLED_COLD_PAGES pages;
 *   - no SAMPLED_COLD_FRESH_MS passed without a sample since the closed window began,
 *     nor since the last sample: the sampler reached the process all along (the two
 *     windows cover every moment from the closed one's start to now, at least the age);
 *   - the closed window's pages sampled exactly once are at most
 *     SAMPLED_COLD_MISSED_PERMILLE of its samples. That is Good and Turing's estimate
 *     of the share of accesses that went to pages no sample named: small, the samples
 *     have seen where the process works, and the pages they never named are cold; large
 *     (sparse sampling, or a long tail of accesses), an unsampled page may be hot, and
 *     no page counts as cold.
 * Without that, nothing is cold, and the exchange demotes nothing of the process. */
#pragma once
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "damon-pages.h"

/* Distinct pages a window holds: beyond it the window does not count (about 512 KiB
 * of table a window at most). */
#define SAMPLED_COLD_PAGES 16384
#define SAMPLED_COLD_MIN_SAMPLES 1000
#define SAMPLED_COLD_MISSED_PERMILLE 50
#define SAMPLED_COLD_FRESH_MS 5000
/* The pages all tables of one pool hold together (about 8-16 MiB of tables): many
 * processes sampled over a long cold age stay within it. A page that would go beyond
 * it fills its window, which then names nothing cold (the safe side). */
#define SAMPLED_COLD_TOTAL_PAGES 262144

struct sampled_cold_pool {
        size_t used;                 /* pages held by its tables */
};

struct sampled_cold;

/* A table drawing on pool (which outlives it). */
int sampled_cold_new(struct sampled_cold_pool *pool, struct sampled_cold **ret);
void sampled_cold_free(struct sampled_cold *c);

/* count samples of the page at page (aligned by the caller) at now_ms (not before the
 * last call's). The current window is closed first when it is age_ms old; another
 * age_ms than the last call's (a reload) starts both windows over. */
void sampled_cold_add(struct sampled_cold *c, uint64_t page, uint64_t count, uint64_t now_ms, uint64_t age_ms);

enum sampled_cold_why {
        SAMPLED_COLD_KNOWN,
        SAMPLED_COLD_YOUNG,          /* no window closed yet */
        SAMPLED_COLD_FEW,            /* the closed window took too few samples */
        SAMPLED_COLD_FULL,           /* a window held SAMPLED_COLD_PAGES pages */
        SAMPLED_COLD_SPARSE,         /* too many pages sampled once */
        SAMPLED_COLD_STALE,          /* no sample within SAMPLED_COLD_FRESH_MS */
        SAMPLED_COLD_GAP,            /* no sample for that long, since the closed window began */
};

struct sampled_cold_state {
        enum sampled_cold_why why;
        uint64_t samples;            /* the closed window's */
        size_t pages;                /* distinct pages in it */
        unsigned missed_permille;    /* its pages sampled once, per thousand samples */
};

/* Whether c's unsampled pages are cold now (st: why, and the closed window's figures;
 * may be NULL). */
bool sampled_cold_known(const struct sampled_cold *c, uint64_t now_ms, struct sampled_cold_state *st);
const char *sampled_cold_why_name(enum sampled_cold_why why);

/* mapped (n_mapped sorted, disjoint ranges) without the pages (page bytes each) either
 * window holds: sorted, disjoint ranges in *ret (*ret_n of them; NULL and 0 when
 * nothing is known cold). Returns 0 or -ENOMEM. */
int sampled_cold_ranges(const struct sampled_cold *c, uint64_t now_ms, const struct damon_range *mapped,
                        size_t n_mapped, uint64_t page, struct damon_range **ret, size_t *ret_n);
