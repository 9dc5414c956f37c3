/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Cold memory without DAMON (docs/RULES.md, the exchange), pure: a process's memory no
 * sample named over cold_age_ms, when its samples are known to cover its accesses.
 *
 * A sample names the SAMPLED_COLD_BLOCK (2 MiB) block its address lies in: coarser than
 * a page, so that a sampler's thousands of samples a second cover a hot set of
 * gigabytes (at page size nearly every sample would name a new page, and the
 * estimate below would call every sampling sparse), and what is cold is whole
 * blocks, as a huge page is. Samples are counted per block in windows of at least the
 * cold age: the current one, and the one closed before it. A block is cold when
 * neither holds it, and only when:
 *   - the closed window took at least SAMPLED_COLD_MIN_SAMPLES samples and neither
 *     window holds more than SAMPLED_COLD_BLOCKS blocks;
 *   - no SAMPLED_COLD_FRESH_MS passed without a sample since the closed window began,
 *     nor since the last sample: the sampler reached the process all along (the two
 *     windows cover every moment from the closed one's start to now, at least the age);
 *   - the closed window's blocks sampled exactly once are at most
 *     SAMPLED_COLD_MISSED_PERMILLE of its samples. That is Good and Turing's estimate
 *     of the share of accesses that went to blocks no sample named: small, the samples
 *     have seen where the process works, and the blocks they never named are cold;
 *     large (sparse sampling, or a long tail of accesses), an unnamed block may be hot,
 *     and nothing counts as cold.
 * Without that, nothing is cold, and the exchange demotes nothing of the process. */
#pragma once
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "damon-pages.h"

#define SAMPLED_COLD_BLOCK (UINT64_C(2) << 20)
/* Distinct blocks a window holds (32 GiB named): beyond it the window does not count
 * (512 KiB of table a window at most). */
#define SAMPLED_COLD_BLOCKS 16384
#define SAMPLED_COLD_MIN_SAMPLES 1000
#define SAMPLED_COLD_MISSED_PERMILLE 50
#define SAMPLED_COLD_FRESH_MS 5000
/* The blocks all tables of one pool hold together (8-16 MiB of tables): many processes
 * sampled over a long cold age stay within it. A block that would go beyond it fills
 * its window, which then names nothing cold (the safe side). */
#define SAMPLED_COLD_TOTAL_BLOCKS 262144

struct sampled_cold_pool {
        size_t used;                 /* blocks held by its tables */
};

struct sampled_cold;

/* A table drawing on pool (which outlives it). */
int sampled_cold_new(struct sampled_cold_pool *pool, struct sampled_cold **ret);
void sampled_cold_free(struct sampled_cold *c);

/* count samples of addr at now_ms (not before the last call's). The current window is closed first when it is age_ms old; another
 * age_ms than the last call's (a reload) starts both windows over. */
void sampled_cold_add(struct sampled_cold *c, uint64_t addr, uint64_t count, uint64_t now_ms, uint64_t age_ms);

enum sampled_cold_why {
        SAMPLED_COLD_KNOWN,
        SAMPLED_COLD_YOUNG,          /* samples coming, no window closed yet */
        SAMPLED_COLD_FEW,            /* the closed window took too few samples */
        SAMPLED_COLD_FULL,           /* a window held SAMPLED_COLD_BLOCKS blocks, or the pool was used up */
        SAMPLED_COLD_SPARSE,         /* too many blocks sampled once */
        SAMPLED_COLD_STALE,          /* no sample within SAMPLED_COLD_FRESH_MS (or none yet) */
        SAMPLED_COLD_GAP,            /* no sample for that long, since the closed window began */
};

struct sampled_cold_state {
        enum sampled_cold_why why;
        uint64_t samples;            /* the closed window's */
        size_t blocks;               /* distinct blocks in it */
        unsigned missed_permille;    /* its blocks sampled once, per thousand samples */
};

/* Whether c's unsampled blocks are cold now (st: why, and the closed window's figures;
 * may be NULL; c may be NULL: nothing sampled). */
bool sampled_cold_known(const struct sampled_cold *c, uint64_t now_ms, struct sampled_cold_state *st);
const char *sampled_cold_why_name(enum sampled_cold_why why);
/* Whether c took no sample within SAMPLED_COLD_FRESH_MS of now_ms (nothing it holds
 * can name anything cold until new windows replace it). */
bool sampled_cold_stale(const struct sampled_cold *c, uint64_t now_ms);
/* Whether c's samples are taken to name the process's hot pages: known to cover its
 * accesses, or coming and not yet judged (before their first window closes). Then
 * DAMON's hot regions add only their edges (daemon/damon.c). */
bool sampled_cold_names_hot(const struct sampled_cold *c, uint64_t now_ms);

/* mapped (n_mapped sorted, disjoint ranges) without the blocks either window holds:
 * sorted, disjoint ranges in *ret (*ret_n of them; NULL and 0 when nothing is known
 * cold). Returns 0 or -ENOMEM. */
int sampled_cold_ranges(const struct sampled_cold *c, uint64_t now_ms, const struct damon_range *mapped,
                        size_t n_mapped, struct damon_range **ret, size_t *ret_n);
