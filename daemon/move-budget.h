/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The budgets of moving: every bound on how much, how fast and how often the daemon
 * moves memory, each stated here once (docs/RULES.md, "Bounded cost" and "Promotion of
 * hot memory only", says why). Pure: the time is a parameter, and nothing here reads
 * a clock, sleeps or locks, so the arithmetic is tested without waiting
 * (tests/unit/test-move-budget.c). A rate's mechanism is token-bucket.h; the worker
 * pool (migrator.c) holds the migration budget under its lock and sleeps what it says.
 * The config's MB are MiB, like the page sizes.
 *
 * - Bytes a second, [migrate] rate_limit_mb_s (0: unlimited): one token bucket for all
 *   workers together, with a burst of 100 ms of the rate, charged after each move call
 *   with what really moved (move_budget_take_bytes()).
 * - Move calls a second, [migrate] rate_limit_calls_s (0: unlimited): the move_pages(2)
 *   calls that move, one token each, with a burst of 100 ms of the rate
 *   (move_budget_take_call()).
 * - Pages a call, [migrate] batch_pages (0: MOVE_BUDGET_CALL_PAGES_DEFAULT), at most
 *   MOVE_BUDGET_CALL_PAGES_MAX, and under a byte rate no more than the bucket's burst
 *   in whole huge pages, one at least (move_budget_call_pages()).
 * - A process a tick: MOVE_BUDGET_SCAN_CALLS calls of batch_pages, what one scan may
 *   plan (move_budget_scan_bytes()); the next tick goes on.
 * - A run of jobs: MOVE_BUDGET_RUN_MS, then its jobs stop at the next batch boundary
 *   (move_budget_run_spent()); and the bytes the byte rate lets through in that time
 *   (move_budget_run_bytes()), shared equally among the owners of its jobs, one job
 *   each at least (move_budget_share_spent()).
 * - Promotion, [migrate] promote_rate_limit_mb_s (0: none): lib/plan.h's rule 7,
 *   bytes taken as planned from a budget refilled once a tick and settled after the
 *   run with what moved (struct move_budget_promote). */
#pragma once
#include "nodemask.h"
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "token-bucket.h"

/* Base pages a move call passes when batch_pages is 0 (the config's default too).
 * Every call pays lru_cache_disable() (an expedited RCU sync and an LRU drain on every
 * CPU), so calls must be large: in the 2-node TCG guest, 256 MiB took 2.2 s in one call
 * of 65536 pages, 3.4 s in 4 calls of 16384 and 17 s in 64 calls of 4096. */
#define MOVE_BUDGET_CALL_PAGES_DEFAULT UINT64_C(65536)
/* Upper bound so that a configuration typo cannot make a job allocate gigabytes of
 * address and status arrays (1M addresses: about 72 MiB of arrays a worker, the call's
 * copy with its kernel-batch breaks included; 65,536: 4.5 MiB). */
#define MOVE_BUDGET_CALL_PAGES_MAX (UINT64_C(1) << 20)
/* Each process moves at most this many calls' worth per tick, so that a tick (and
 * a SIGTERM waiting for it) stays bounded; the next tick continues. */
#define MOVE_BUDGET_SCAN_CALLS 4
/* A run of jobs ends after this long (the batches in flight finish, their counts
 * exact) and the next tick continues: the bytes per process are bounded, not the
 * processes (30 misplaced 1 GiB processes after a failover), nor the time (one at
 * rate_limit_mb_s = 10 takes 100 s). Below half of the unit's WatchdogSec=30s, so the
 * event loop's own pings come in time even without the ones sent during the run.
 * Shown in status (migration_run_budget_ms). */
#define MOVE_BUDGET_RUN_MS 10000

/* The migration budget: bytes and move calls a second, for all workers together. */
struct move_budget {
        struct token_bucket bytes;     /* rate_limit_mb_s, in bytes */
        struct token_bucket calls;     /* rate_limit_calls_s */
};

/* Both rates at now_ns (any monotonic clock); 0: unlimited. */
void move_budget_init(struct move_budget *b, uint64_t rate_limit_mb_s, uint64_t calls_per_s, uint64_t now_ns);
/* Changes a rate, keeping the balance (token_bucket_set_rate()). */
void move_budget_set_rate(struct move_budget *b, uint64_t rate_limit_mb_s, uint64_t now_ns);
void move_budget_set_call_rate(struct move_budget *b, uint64_t calls_per_s, uint64_t now_ns);
/* Books bytes moved by work that ran from busy_since_ns to now_ns; returns how long
 * (ns) to sleep before moving more (token_bucket_take_busy()). */
uint64_t move_budget_take_bytes(struct move_budget *b, uint64_t bytes, uint64_t busy_since_ns, uint64_t now_ns);
/* Books one move call at now_ns; returns how long (ns) to sleep before making it. */
uint64_t move_budget_take_call(struct move_budget *b, uint64_t now_ns);
/* Base pages one move call may pass under b: batch_pages (0: the default, at most the
 * maximum), and under a byte rate no more than the burst in whole huge pages of
 * huge_page_bytes, one at least (a transparent huge page moves whole). The bucket is
 * charged after each call with what it moved: a call of 65,536 pages (256 MiB) went
 * through at full speed at rate_limit_mb_s = 4, and only the minute of sleep after it
 * held the limit. At the default 1024 MB/s, 256 MiB take three calls, not one. */
uint64_t move_budget_call_pages(const struct move_budget *b, uint64_t batch_pages, uint64_t huge_page_bytes);
/* batch_pages as a call takes it: 0 is the default, and no more than the maximum. */
uint64_t move_budget_batch_pages(uint64_t batch_pages);

/* The bytes one scan of a process may plan to move, from the config's batch_pages. */
uint64_t move_budget_scan_bytes(uint64_t batch_pages);
/* The bytes a run may move in all: what rate_limit_mb_s lets through in
 * MOVE_BUDGET_RUN_MS; 0 (unlimited rate): no bound. */
uint64_t move_budget_run_bytes(uint64_t rate_limit_mb_s);
/* Whether a run that has lasted elapsed_ns has spent its time budget_ns (0: never). */
bool move_budget_run_spent(uint64_t budget_ns, uint64_t elapsed_ns);
/* Whether a job of bytes is over its owner's share of run_bytes (split among n_owners),
 * the owner having taken taken bytes of it so far: an owner's first job always fits,
 * and run_bytes 0 shares nothing out. */
bool move_budget_share_spent(uint64_t run_bytes, size_t n_owners, uint64_t taken, uint64_t bytes);

/* The promotion budget, refilled once a tick (move_budget_promote_refill()): the rate
 * for the time since the last refill, at most one second's worth held (the burst), so
 * that the bytes promoted over any T seconds stay below rate x (T + 1). The scans of a
 * tick take from left as they plan (plan_params.promote_left). */
struct move_budget_promote {
        uint64_t left;                /* bytes */
        uint64_t last_ms;             /* the last refill */
        uint64_t frac;                /* byte-ms not yet a byte */
        uint64_t debt;                /* bytes moved beyond those planned, paid by refills */
        bool started;
        /* The exchange's credit (plan.h, rule 8), per topology index: bytes demoted off
         * the node that promotions there may take below its floors
         * (plan_params.exchange_credit). It lapses MOVE_BUDGET_CREDIT_MS after the last
         * demotion that added to it or the last tick promotions took from it or
         * waited at the node's floor (demand_next): room freed and not promoted into
         * by then is the workload's own again, not a standing licence to fill the
         * node; while promotions slower than that still wait for it, it holds (lapsed,
         * their wait would be demand again and demote the room a second time). */
        uint64_t credit[NB_NODES_MAX];
        uint64_t credit_ms[NB_NODES_MAX];
        uint64_t credit_was[NB_NODES_MAX]; /* at the last refill */
        /* The exchange across processes, per topology index: bytes of promotions held at
         * the node's floor that their own process had no cold memory for, posted this
         * tick (demand_next), and served at the next from other processes' cold memory
         * there (demand, plan_params.exchange_demand, lowered as served). A refill
         * replaces demand with demand_next, less the node's credit (room already
         * made), when something was posted; otherwise what is left unserved stays
         * until MOVE_BUDGET_DEMAND_MS after the last post: a waiting process posts
         * at its own scans, which may be seconds apart, and the processes that may
         * serve it are scanned within scan_min_ms (scan_serve_demand()), often not
         * at the next tick. */
        uint64_t demand[NB_NODES_MAX];
        uint64_t demand_next[NB_NODES_MAX];
        uint64_t demand_ms[NB_NODES_MAX];
};
#define MOVE_BUDGET_DEMAND_MS 5000
#define MOVE_BUDGET_CREDIT_MS 10000
/* Refills at now_ms for rate_mb_s (0: nothing is promoted); returns the bytes
 * promotions may take now (b->left). */
uint64_t move_budget_promote_refill(struct move_budget_promote *b, uint64_t rate_mb_s, uint64_t now_ms);
/* A promotion job planned planned bytes and moved moved: what it did not move (on the
 * target already, gone, busy) is given back; what it moved beyond (a sampled base
 * page of a transparent huge page moves the whole huge page) is taken from what is
 * left, the rest from the next refills, so that the rate holds for what moved. */
void move_budget_promote_settle(struct move_budget_promote *b, uint64_t planned, uint64_t moved);
/* A demotion of the exchange moved bytes off the node of topology index idx at now_ms. */
void move_budget_promote_credit(struct move_budget_promote *b, int idx, uint64_t bytes, uint64_t now_ms);
/* A process's promotions wait for bytes of room on the node of topology index idx
 * that its own cold memory did not make (plan.exchange_unserved). */
void move_budget_promote_post(struct move_budget_promote *b, int idx, uint64_t bytes);
