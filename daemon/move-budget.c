/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The budgets of moving (move-budget.h). */
#include "move-budget.h"
#include "pagesize.h"

/* 1 MB of a budget, in bytes (the config's MB/s are MiB/s, like the page sizes). */
#define BYTES_PER_MB (UINT64_C(1) << 20)

static uint64_t sat_add(uint64_t a, uint64_t b) {
        return a > UINT64_MAX - b ? UINT64_MAX : a + b;
}

static uint64_t rate_bytes(uint64_t rate_mb_s) {
        return rate_mb_s > UINT64_MAX / BYTES_PER_MB ? UINT64_MAX : rate_mb_s * BYTES_PER_MB;
}

void move_budget_init(struct move_budget *b, uint64_t rate_limit_mb_s, uint64_t calls_per_s, uint64_t now_ns) {
        token_bucket_init(&b->bytes, rate_bytes(rate_limit_mb_s), now_ns);
        token_bucket_init(&b->calls, calls_per_s, now_ns);
}

void move_budget_set_rate(struct move_budget *b, uint64_t rate_limit_mb_s, uint64_t now_ns) {
        token_bucket_set_rate(&b->bytes, rate_bytes(rate_limit_mb_s), now_ns);
}

void move_budget_set_call_rate(struct move_budget *b, uint64_t calls_per_s, uint64_t now_ns) {
        token_bucket_set_rate(&b->calls, calls_per_s, now_ns);
}

uint64_t move_budget_take_bytes(struct move_budget *b, uint64_t bytes, uint64_t busy_since_ns, uint64_t now_ns) {
        return token_bucket_take_busy(&b->bytes, bytes, busy_since_ns, now_ns);
}

uint64_t move_budget_take_call(struct move_budget *b, uint64_t now_ns) {
        return token_bucket_take(&b->calls, 1, now_ns);
}

uint64_t move_budget_batch_pages(uint64_t batch_pages) {
        if (batch_pages == 0)
                return MOVE_BUDGET_CALL_PAGES_DEFAULT;
        return batch_pages > MOVE_BUDGET_CALL_PAGES_MAX ? MOVE_BUDGET_CALL_PAGES_MAX : batch_pages;
}

uint64_t move_budget_call_pages(const struct move_budget *b, uint64_t batch_pages, uint64_t huge_page_bytes) {
        uint64_t burst = b->bytes.burst_bytes, cap;

        if (burst == 0)
                return move_budget_batch_pages(batch_pages);     /* no rate limit */
        cap = (burst / huge_page_bytes > 0 ? burst / huge_page_bytes : 1) * (huge_page_bytes / page_size());
        return move_budget_batch_pages(batch_pages == 0 || batch_pages > cap ? cap : batch_pages);
}

uint64_t move_budget_scan_bytes(uint64_t batch_pages) {
        return batch_pages * page_size() * MOVE_BUDGET_SCAN_CALLS;
}

uint64_t move_budget_run_bytes(uint64_t rate_limit_mb_s) {
        return rate_limit_mb_s * (MOVE_BUDGET_RUN_MS / 1000) << 20;
}

bool move_budget_run_spent(uint64_t budget_ns, uint64_t elapsed_ns) {
        return budget_ns != 0 && elapsed_ns >= budget_ns;
}

bool move_budget_share_spent(uint64_t run_bytes, size_t n_owners, uint64_t taken, uint64_t bytes) {
        return run_bytes && taken && taken + bytes > run_bytes / n_owners;
}

/* --- promotion (lib/plan.h, rule 7) ----------------------------------------------- */

uint64_t move_budget_promote_refill(struct move_budget_promote *b, uint64_t rate_mb_s, uint64_t now_ms) {
        uint64_t rate_bytes_s = rate_bytes(rate_mb_s);
        uint64_t burst = rate_bytes_s; /* one second's worth */
        uint64_t ms, byte_ms, add, paid;

        if (!b->started || now_ms < b->last_ms) {
                /* The first tick may promote a second's worth at once. */
                *b = (struct move_budget_promote) { .left = burst, .last_ms = now_ms, .started = true };
                return b->left;
        }
        /* A second or more fills it (and the product cannot overflow: rate < 2^41). */
        ms = now_ms - b->last_ms < 1000 ? now_ms - b->last_ms : 1000;
        byte_ms = rate_bytes_s * ms + b->frac;
        add = byte_ms / 1000;
        b->frac = byte_ms % 1000;
        /* What promotions moved beyond their plan is paid first. */
        paid = add < b->debt ? add : b->debt;
        b->debt -= paid;
        b->left = sat_add(b->left, add - paid);
        if (b->left >= burst) {
                b->left = burst; /* also after the rate was lowered */
                b->frac = 0;
        }
        b->last_ms = now_ms;
        for (size_t i = 0; i < NB_NODES_MAX; i++) {
                /* Promotions took from it, or still wait for room there. */
                if (b->credit[i] < b->credit_was[i] || b->demand_next[i])
                        b->credit_ms[i] = now_ms;
                if (b->credit[i] && now_ms >= b->credit_ms[i] + MOVE_BUDGET_CREDIT_MS)
                        b->credit[i] = 0;
                b->credit_was[i] = b->credit[i];
                if (b->demand_next[i]) {
                        b->demand[i] = b->demand_next[i] > b->credit[i] ? b->demand_next[i] - b->credit[i] : 0;
                        b->demand_ms[i] = now_ms;
                } else if (now_ms >= b->demand_ms[i] + MOVE_BUDGET_DEMAND_MS)
                        b->demand[i] = 0;
                b->demand_next[i] = 0;
        }
        return b->left;
}

void move_budget_promote_credit(struct move_budget_promote *b, int idx, uint64_t bytes, uint64_t now_ms) {
        if (idx < 0 || idx >= NB_NODES_MAX || bytes == 0)
                return;
        b->credit[idx] = sat_add(b->credit[idx], bytes);
        b->credit_ms[idx] = now_ms;
}

void move_budget_promote_post(struct move_budget_promote *b, int idx, uint64_t bytes) {
        if (idx >= 0 && idx < NB_NODES_MAX)
                b->demand_next[idx] = sat_add(b->demand_next[idx], bytes);
}

void move_budget_promote_settle(struct move_budget_promote *b, uint64_t planned, uint64_t moved) {
        uint64_t beyond, from_left;

        if (moved <= planned) {
                b->left = sat_add(b->left, planned - moved);
                return;
        }
        beyond = moved - planned;
        from_left = beyond < b->left ? beyond : b->left;
        b->left -= from_left;
        b->debt = sat_add(b->debt, beyond - from_left);
}
