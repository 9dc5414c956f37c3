/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Cold memory without DAMON (lib/sampled-cold.h): pages never sampled over the cold
 * age, only when the samples cover the process's accesses. */
#include <stdlib.h>
#include "cleanup.h"
#include "sampled-cold.h"
#include "test.h"

#define BLOCK SAMPLED_COLD_BLOCK
#define AGE UINT64_C(10000)
#define BASE UINT64_C(0x10000000)

DEFINE_TRIVIAL_CLEANUP_FUNC(struct sampled_cold *, sampled_cold_free);

static struct sampled_cold_pool pool;

/* Every second from t0 for secs seconds: blocks [first, first + n) once each, times
 * times (a dense hot set: each block sampled again and again). */
static void feed(struct sampled_cold *c, uint64_t t0, unsigned secs, uint64_t first, size_t n, uint64_t times) {
        for (unsigned s = 0; s < secs; s++)
                for (size_t i = 0; i < n; i++)
                        sampled_cold_add(c, BASE + (first + i) * BLOCK, times, t0 + s * 1000, AGE);
}

static enum sampled_cold_why why(const struct sampled_cold *c, uint64_t now) {
        struct sampled_cold_state st;

        (void) sampled_cold_known(c, now, &st);
        return st.why;
}

/* A hot set of 100 blocks sampled densely for two windows: the rest of the mapping is
 * cold, cut around each sampled block; none of it before a window has closed. */
TEST(dense_samples_name_the_cold) {
        _cleanup_(sampled_cold_freep) struct sampled_cold *c = NULL;
        struct damon_range mapped[] = { { BASE, BASE + 1000 * BLOCK }, { BASE + 2000 * BLOCK, BASE + 2100 * BLOCK } };
        _cleanup_free_ struct damon_range *cold = NULL;
        struct sampled_cold_state st;
        size_t n = 7;

        CHECK_INT(sampled_cold_new(&pool, &c), 0);
        CHECK_INT(why(c, 500), SAMPLED_COLD_STALE);       /* nothing sampled yet */
        CHECK(!sampled_cold_names_hot(c, 500));
        feed(c, 1000, 10, 200, 100, 3);
        CHECK_INT(why(c, 10500), SAMPLED_COLD_YOUNG);
        CHECK(sampled_cold_names_hot(c, 10500));          /* coming, not yet judged */
        CHECK_INT(sampled_cold_ranges(c, 10500, mapped, 2, &cold, &n), 0);
        CHECK(!cold && n == 0);
        feed(c, 11000, 3, 200, 100, 3);
        CHECK(sampled_cold_known(c, 13500, &st));
        CHECK_INT(st.samples, 3000);
        CHECK_INT(st.blocks, 100);
        CHECK_INT(st.missed_permille, 0);
        CHECK_INT(sampled_cold_ranges(c, 13500, mapped, 2, &cold, &n), 0);
        CHECK_INT(n, 3);
        CHECK(cold[0].start == BASE && cold[0].end == BASE + 200 * BLOCK);
        CHECK(cold[1].start == BASE + 300 * BLOCK && cold[1].end == BASE + 1000 * BLOCK);
        CHECK(cold[2].start == mapped[1].start && cold[2].end == mapped[1].end);
}

/* A block sampled only in the current window is not cold either; blocks at a
 * mapping's edges leave no empty range. A sample names its whole block, which may cut
 * two mappings. */
TEST(both_windows_count) {
        _cleanup_(sampled_cold_freep) struct sampled_cold *c = NULL;
        struct damon_range mapped[] = { { BASE, BASE + 10 * BLOCK } };
        _cleanup_free_ struct damon_range *cold = NULL;
        size_t n;

        CHECK_INT(sampled_cold_new(&pool, &c), 0);
        feed(c, 1000, 11, 0, 1, 200);       /* page 0 through the first window */
        sampled_cold_add(c, BASE + 9 * BLOCK, 2, 11500, AGE);
        sampled_cold_add(c, BASE + 4 * BLOCK, 2, 11600, AGE);
        CHECK_INT(sampled_cold_ranges(c, 12000, mapped, 1, &cold, &n), 0);
        CHECK_INT(n, 2);
        CHECK(cold[0].start == BASE + BLOCK && cold[0].end == BASE + 4 * BLOCK);
        CHECK(cold[1].start == BASE + 5 * BLOCK && cold[1].end == BASE + 9 * BLOCK);
        free(cold);
        cold = NULL;
        {
                struct damon_range two[] = { { BASE, BASE + BLOCK / 2 }, { BASE + BLOCK / 2 + 4096, BASE + 3 * BLOCK / 2 } };

                sampled_cold_add(c, BASE + BLOCK / 4, 2, 11700, AGE);  /* block 0: already held */
                CHECK_INT(sampled_cold_ranges(c, 12000, two, 2, &cold, &n), 0);
                CHECK_INT(n, 1);
                CHECK(cold[0].start == BASE + BLOCK && cold[0].end == BASE + 3 * BLOCK / 2);
        }
}

/* Sparse samples (most blocks named once: the accesses go mostly where no sample
 * looked) name nothing cold; nor too few samples. */
TEST(sparse_or_few_samples_name_nothing) {
        _cleanup_(sampled_cold_freep) struct sampled_cold *c = NULL, *few = NULL;
        struct damon_range mapped[] = { { BASE, BASE + 100000 * BLOCK } };
        _cleanup_free_ struct damon_range *cold = NULL;
        struct sampled_cold_state st;
        size_t n;

        CHECK_INT(sampled_cold_new(&pool, &c), 0);
        for (unsigned s = 0; s < 12; s++)
                for (size_t i = 0; i < 300; i++)
                        sampled_cold_add(c, BASE + (s * 300 + i) * BLOCK, 1, 1000 + s * 1000, AGE);
        CHECK(!sampled_cold_known(c, 12500, &st));
        CHECK_INT(st.why, SAMPLED_COLD_SPARSE);
        CHECK_INT(st.missed_permille, 1000);
        CHECK_INT(sampled_cold_ranges(c, 12500, mapped, 1, &cold, &n), 0);
        CHECK(!cold && n == 0);

        CHECK_INT(sampled_cold_new(&pool, &few), 0);
        feed(few, 1000, 12, 0, 10, 2);      /* 200 samples a window */
        CHECK_INT(why(few, 12500), SAMPLED_COLD_FEW);
        CHECK(!sampled_cold_names_hot(few, 12500) && !sampled_cold_names_hot(NULL, 12500));
}

/* A sampler that stopped reaching the process: stale now, and a gap within the windows
 * keeps them unknown until a whole window without one has closed. */
TEST(gaps_and_silence) {
        _cleanup_(sampled_cold_freep) struct sampled_cold *c = NULL;

        CHECK_INT(sampled_cold_new(&pool, &c), 0);
        feed(c, 1000, 12, 0, 100, 3);
        CHECK_INT(why(c, 12500), SAMPLED_COLD_KNOWN);
        CHECK_INT(why(c, 17000), SAMPLED_COLD_STALE);
        feed(c, 20000, 2, 0, 100, 3);       /* 8 s without a sample before; the window
                                             * with the gap closes at 21 s */
        CHECK_INT(why(c, 21500), SAMPLED_COLD_GAP);
        feed(c, 22000, 9, 0, 100, 3);
        CHECK_INT(why(c, 30500), SAMPLED_COLD_GAP);
        feed(c, 31000, 1, 0, 100, 3);       /* a whole window after it has closed */
        CHECK_INT(why(c, 31500), SAMPLED_COLD_KNOWN);
}

/* A tenant naming more blocks than a window holds: bounded, and nothing known cold. */
TEST(too_many_blocks) {
        _cleanup_(sampled_cold_freep) struct sampled_cold *c = NULL;

        CHECK_INT(sampled_cold_new(&pool, &c), 0);
        for (unsigned s = 0; s < 12; s++)
                for (size_t i = 0; i < SAMPLED_COLD_BLOCKS + 10; i++)
                        sampled_cold_add(c, BASE + i * BLOCK, 2, 1000 + s * 1000, AGE);
        CHECK_INT(why(c, 12500), SAMPLED_COLD_FULL);
        CHECK(!sampled_cold_names_hot(c, 12500));
        CHECK_STR(sampled_cold_why_name(SAMPLED_COLD_FULL), "too-many-blocks");
}

/* Tables share their pool's bound: once it is used up a window is full (nothing named
 * cold), and what a table held goes back to the pool when it is freed. */
TEST(the_pool_bounds_all_tables) {
        struct sampled_cold_pool small = { .used = SAMPLED_COLD_TOTAL_BLOCKS - 50 };
        _cleanup_(sampled_cold_freep) struct sampled_cold *a = NULL;
        struct sampled_cold *b = NULL;

        CHECK_INT(sampled_cold_new(&small, &a), 0);
        CHECK_INT(sampled_cold_new(&small, &b), 0);
        feed(b, 1000, 12, 0, 20, 6);        /* 20 pages in each window */
        CHECK_INT(small.used, SAMPLED_COLD_TOTAL_BLOCKS - 10);
        CHECK_INT(why(b, 12500), SAMPLED_COLD_KNOWN);
        feed(a, 1000, 12, 0, 20, 3);
        CHECK_INT(small.used, SAMPLED_COLD_TOTAL_BLOCKS);
        CHECK_INT(why(a, 12500), SAMPLED_COLD_FULL);
        sampled_cold_free(b);
        CHECK_INT(small.used, SAMPLED_COLD_TOTAL_BLOCKS - 40);
}

/* A longer cold age (a reload) starts over: the closed window was shorter than it. */
TEST(new_age_starts_over) {
        _cleanup_(sampled_cold_freep) struct sampled_cold *c = NULL;

        CHECK_INT(sampled_cold_new(&pool, &c), 0);
        feed(c, 1000, 12, 0, 100, 3);
        CHECK_INT(why(c, 12500), SAMPLED_COLD_KNOWN);
        sampled_cold_add(c, BASE, 3, 13000, 2 * AGE);
        CHECK_INT(why(c, 13500), SAMPLED_COLD_YOUNG);
}

DEFINE_TEST_MAIN()
