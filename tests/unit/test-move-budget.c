/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The budgets of moving (daemon/move-budget.h) on a clock the test moves by hand: no
 * sleeping, exact numbers. The bucket's own arithmetic is test-token-bucket's. */
#include <stdint.h>
#include "cleanup.h"
#include "move-budget.h"
#include "pagesize.h"
#include "test.h"

#define MB (UINT64_C(1) << 20)
#define NS UINT64_C(1000000000)
#define MS UINT64_C(1000000)
#define THP (2 * MB)

static const uint64_t t0 = 1000 * NS;

/* The config's MB/s are MiB/s: 10 of them are a burst of 1 MiB (100 ms), free; what
 * goes beyond is paid in time, by whichever worker books next. */
TEST(bytes_a_second) {
        struct move_budget b;

        move_budget_init(&b, 10, 0, t0);
        CHECK_INT(move_budget_take_bytes(&b, MB, t0, t0), 0);
        CHECK_INT(move_budget_take_bytes(&b, MB, t0, t0), NS / 10);
        CHECK_INT(move_budget_take_bytes(&b, 0, t0, t0), NS / 10);
        /* Time spent moving is credited whole: 3 MiB moved over 200 ms (the burst and
         * 200 ms of the rate) leave no debt. */
        move_budget_init(&b, 10, 0, t0);
        CHECK_INT(move_budget_take_bytes(&b, 3 * MB, t0, t0 + 200 * MS), 0);
        /* 0: unlimited, and so is a budget whose rate is set to 0. */
        move_budget_init(&b, 0, 0, t0);
        CHECK_INT(move_budget_take_bytes(&b, UINT64_C(1) << 40, t0, t0), 0);
        move_budget_init(&b, 10, 0, t0);
        move_budget_set_rate(&b, 0, t0);
        CHECK_INT(move_budget_take_bytes(&b, UINT64_C(1) << 40, t0, t0), 0);
}

/* 50 calls a second: 5 at once (100 ms of the rate), then one every 20 ms. The byte
 * rate does not limit the calls, nor the calls the bytes. */
TEST(calls_a_second) {
        struct move_budget b;

        move_budget_init(&b, 0, 0, t0);
        for (unsigned i = 0; i < 100; i++)
                CHECK_INT(move_budget_take_call(&b, t0), 0);
        move_budget_set_call_rate(&b, 50, t0);
        for (unsigned i = 0; i < 5; i++)
                CHECK_INT(move_budget_take_call(&b, t0), 0);
        CHECK_INT(move_budget_take_call(&b, t0), 20 * MS);
        CHECK_INT(move_budget_take_bytes(&b, UINT64_C(1) << 40, t0, t0), 0);
        move_budget_init(&b, 10, 50, t0);
        CHECK_INT(move_budget_take_bytes(&b, 2 * MB, t0, t0), NS / 10);
        CHECK_INT(move_budget_take_call(&b, t0), 0);
}

/* Pages a call: batch_pages (0: the default), at most the maximum; under a byte rate
 * no more than 100 ms of it in whole huge pages, one at least. */
TEST(pages_a_call) {
        const uint64_t per_thp = THP / page_size();
        struct move_budget b;

        CHECK_INT(move_budget_batch_pages(0), MOVE_BUDGET_CALL_PAGES_DEFAULT);
        CHECK_INT(move_budget_batch_pages(1), 1);
        CHECK_INT(move_budget_batch_pages(MOVE_BUDGET_CALL_PAGES_MAX + 1), MOVE_BUDGET_CALL_PAGES_MAX);

        move_budget_init(&b, 0, 0, t0);
        CHECK_INT(move_budget_call_pages(&b, 0, THP), MOVE_BUDGET_CALL_PAGES_DEFAULT);
        CHECK_INT(move_budget_call_pages(&b, 100, THP), 100);
        CHECK_INT(move_budget_call_pages(&b, UINT64_MAX, THP), MOVE_BUDGET_CALL_PAGES_MAX);
        /* 4 MB/s: a burst of 409 KiB, less than a huge page: one huge page a call. */
        move_budget_set_rate(&b, 4, t0);
        CHECK_INT(move_budget_call_pages(&b, 65536, THP), per_thp);
        CHECK_INT(move_budget_call_pages(&b, 0, THP), per_thp);
        CHECK_INT(move_budget_call_pages(&b, 100, THP), 100);
        /* The default 1024 MB/s: 51 huge pages a call, so 256 MiB take three calls. */
        move_budget_set_rate(&b, 1024, t0);
        CHECK_INT(move_budget_call_pages(&b, 65536, THP), 51 * per_thp);
        CHECK_INT((65536 + 51 * per_thp - 1) / (51 * per_thp), 3);
        /* A rate too high to bind: the maximum still holds. */
        move_budget_set_rate(&b, 1048576, t0);
        CHECK_INT(move_budget_call_pages(&b, 0, THP), MOVE_BUDGET_CALL_PAGES_MAX);
}

/* A process a tick: four calls of batch_pages. */
TEST(a_process_a_tick) {
        CHECK_INT(move_budget_scan_bytes(65536), 4 * 65536 * page_size());
        CHECK_INT(move_budget_scan_bytes(1), MOVE_BUDGET_SCAN_CALLS * page_size());
}

/* A run: its time, and the bytes the rate lets through in it, shared among owners. */
TEST(a_run) {
        CHECK_INT(MOVE_BUDGET_RUN_MS, 10000);
        CHECK_INT(move_budget_run_bytes(1024), 10240 * MB);
        CHECK_INT(move_budget_run_bytes(4), 40 * MB);
        CHECK_INT(move_budget_run_bytes(0), 0);

        CHECK(!move_budget_run_spent(0, UINT64_MAX));
        CHECK(!move_budget_run_spent(10 * NS, 10 * NS - 1));
        CHECK(move_budget_run_spent(10 * NS, 10 * NS));

        /* 40 MiB among two owners: 20 each, the first job of each whatever its size. */
        CHECK(!move_budget_share_spent(40 * MB, 2, 0, 100 * MB));
        CHECK(!move_budget_share_spent(40 * MB, 2, 10 * MB, 10 * MB));
        CHECK(move_budget_share_spent(40 * MB, 2, 10 * MB, 10 * MB + 1));
        CHECK(move_budget_share_spent(40 * MB, 1, 100 * MB, 1));
        /* No bound (an unlimited rate): nothing is over. */
        CHECK(!move_budget_share_spent(0, 2, 100 * MB, 100 * MB));
}

/* The promotion refill: over any stretch of ticks the bytes promoted stay within rate x
 * (T + 1 s), and a steady taker gets the rate; rate 0 promotes nothing. */
TEST(promote_refill) {
        const uint64_t rate_mb = 8, rate = rate_mb * MB;
        const uint64_t steps[] = { 1000, 300, 70, 2500 };

        for (size_t s = 0; s < ELEMENTSOF(steps); s++) {
                struct move_budget_promote b = {};
                uint64_t taken = 0, now = 5000;

                for (unsigned i = 0; i <= 100; i++, now += steps[s]) {
                        taken += move_budget_promote_refill(&b, rate_mb, now);
                        b.left = 0; /* everything was promoted */
                }
                /* 100 steps after the first: at most rate x (T + 1) */
                uint64_t span_ms = 100 * steps[s];
                CHECK(taken <= rate * (span_ms + 1000) / 1000);
                if (steps[s] <= 1000)
                        CHECK(taken + rate / 100 >= rate * span_ms / 1000);
        }
        {
                struct move_budget_promote b = {};

                CHECK_INT(move_budget_promote_refill(&b, 0, 1000), 0);
                CHECK_INT(move_budget_promote_refill(&b, 0, 5000), 0);
                /* Unused budget is held up to one second's worth. */
                CHECK_INT(move_budget_promote_refill(&b, rate_mb, 6000), rate);
                CHECK_INT(move_budget_promote_refill(&b, rate_mb, 6500), rate);
                /* A lower rate clamps what is held. */
                CHECK_INT(move_budget_promote_refill(&b, rate_mb / 2, 6600), rate / 2);
                /* Moved beyond the plan: what is left pays, the rest is debt that
                 * the next refills pay before anything is promoted again. */
                move_budget_promote_settle(&b, 0, rate);
                CHECK_INT(b.left, 0);
                CHECK_INT(b.debt, rate / 2);
                CHECK_INT(move_budget_promote_refill(&b, rate_mb / 2, 7100), 0);
                CHECK_INT(move_budget_promote_refill(&b, rate_mb / 2, 7600), 0);
                CHECK_INT(b.debt, 0);
                CHECK_INT(move_budget_promote_refill(&b, rate_mb / 2, 8100), rate / 4);
        }
}

/* Settled with what moved: less than planned is given back, more is charged. */
TEST(promote_settle) {
        struct move_budget_promote b = { .left = MB, .started = true };

        move_budget_promote_settle(&b, 4 * MB, 2 * MB);
        CHECK_INT(b.left, 3 * MB);
        CHECK_INT(b.debt, 0);
        move_budget_promote_settle(&b, 4 * MB, 4 * MB);
        CHECK_INT(b.left, 3 * MB);
        move_budget_promote_settle(&b, 4 * MB, 8 * MB);
        CHECK_INT(b.left, 0);
        CHECK_INT(b.debt, MB);
}

/* The exchange across processes: a wait posted this tick is demand at the next refill,
 * less the credit the node holds already; posted again, it replaces the demand; not
 * posted, what is left lapses MOVE_BUDGET_DEMAND_MS after the last post. */
TEST(promote_demand_until_posted_again_or_lapsed) {
        struct move_budget_promote b = {};

        (void) move_budget_promote_refill(&b, 256, 1000);
        move_budget_promote_post(&b, 1, 3 * MB);
        move_budget_promote_post(&b, 1, MB);
        move_budget_promote_post(&b, -1, MB);
        move_budget_promote_post(&b, NB_NODES_MAX, MB);
        CHECK_INT(b.demand[1], 0);
        (void) move_budget_promote_refill(&b, 256, 1250);
        CHECK_INT(b.demand[1], 4 * MB);
        CHECK_INT(b.demand_next[1], 0);
        move_budget_promote_credit(&b, 1, MB, 1250);
        move_budget_promote_post(&b, 1, 4 * MB);
        (void) move_budget_promote_refill(&b, 256, 1500);
        CHECK_INT(b.demand[1], 3 * MB);
        b.demand[1] -= MB;  /* served in part */
        (void) move_budget_promote_refill(&b, 256, 1500 + MOVE_BUDGET_DEMAND_MS - 1);
        CHECK_INT(b.demand[1], 2 * MB);
        (void) move_budget_promote_refill(&b, 256, 1500 + MOVE_BUDGET_DEMAND_MS);
        CHECK_INT(b.demand[1], 0);
}

/* The exchange's credit lapses MOVE_BUDGET_CREDIT_MS after the demotion that made it,
 * unless promotions still take from it or wait for room at the node: slow promotions
 * keep their room (lapsed, their wait would be demand again and demote more than they
 * promote). */
TEST(promote_credit_lapses_unless_used) {
        struct move_budget_promote b = {};
        uint64_t t = 1000;

        (void) move_budget_promote_refill(&b, 256, t);
        move_budget_promote_credit(&b, 1, 8 * MB, t);
        move_budget_promote_credit(&b, 2, 8 * MB, t);
        move_budget_promote_credit(&b, 3, 8 * MB, t);
        for (int k = 1; k <= 3; k++) {
                t += MOVE_BUDGET_CREDIT_MS / 2;
                b.credit[1] -= MB; /* a tick's promotions into node 1's room */
                move_budget_promote_post(&b, 3, MB); /* a wait at node 3 */
                (void) move_budget_promote_refill(&b, 256, t);
                CHECK_INT(b.credit[1], (8 - k) * MB);
                CHECK_INT(b.credit[3], 8 * MB);
        }
        CHECK_INT(b.credit[2], 0); /* untouched: lapsed */
        t += MOVE_BUDGET_CREDIT_MS - 1;
        (void) move_budget_promote_refill(&b, 256, t);
        CHECK_INT(b.credit[1], 5 * MB);
        t += 1;
        (void) move_budget_promote_refill(&b, 256, t);
        CHECK_INT(b.credit[1], 0);
        CHECK_INT(b.credit[3], 0);
}

DEFINE_TEST_MAIN()
