/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The tick's counters, for the reports (status, metrics): written by the tick and the
 * jobs, read by report.c and metrics.c between ticks. */
#pragma once
#include <stdbool.h>
#include <stdint.h>
#include "histogram.h"
#include "migrate.h"

#define COUNTERS_MOVED_SLOTS 60

struct counters {
        uint64_t tick;
        uint64_t last_tick_ns;       /* how long the last tick took (CLOCK_MONOTONIC) */
        uint64_t started_ms;         /* CLOCK_MONOTONIC, for the uptime */
        uint64_t node_events;        /* node-change events received */
        uint64_t react_scans;        /* processes scanned on their own after a node change */
        uint64_t growth_scans;       /* scans brought forward by growth */
        uint64_t sampled_scans;      /* scans of settled processes that sampled instead of reading numa_maps */
        uint64_t quarantines;        /* processes quarantined: a read of theirs overran its deadline */
        uint64_t reads_deferred;     /* scans not started: the owner's read overran, or no reader free */
        uint64_t page_samples;       /* page-level sample counts drained */
        uint64_t page_samples_unmapped;  /* of them, outside their process's mappings: dropped */
        /* DAMON's hot regions (damon.h): base pages counted as evidence, and past
         * the per-read cap; reads not counted for want of a fast node to credit
         * (threads spread or on a slow node) or with the evidence table full. */
        uint64_t damon_pages, damon_capped, damon_no_node, damon_full;
        uint64_t sampling_refused;   /* threads or processes not sampled: their owner's share was
                                      * taken (page_sampler_quota) */
        uint64_t sampler_arms;       /* times the samplers were attached (samplers_sync) */
        uint64_t total_pages[_MIG_CLASS_MAX];
        uint64_t promoted_bytes;     /* moved by promotions off slow nodes (plan.h, rule 7) */
        uint64_t demoted_bytes;      /* moved by the exchange's demotions (plan.h, rule 8) */
        uint64_t shared_moved_bytes; /* a group's shared pages moved (share-groups.h) */
        uint64_t shared_held_bytes[_SHARE_FAIL_MAX];  /* and held back by the check, by why */
        uint64_t share_groups;       /* groups at the last tick */
        struct histogram ticks;      /* each tick's wall time (histogram_tick_bounds) */
        struct histogram move_calls; /* each move_pages(2) call's, summed from the jobs' */
        bool kernel_balances;        /* kernel.numa_balancing on at the last tick (policy.h) */
        int64_t kernel_numa_balancing;  /* its value then, -1: unreadable */
        bool last_reload_failed;     /* the last reload was refused (the running config stays) */
        uint64_t last_reload_ms;     /* CLOCK_MONOTONIC of the last reload asked for, 0: none */
        uint64_t reloads_failed;
        uint64_t moved_ring[COUNTERS_MOVED_SLOTS];  /* bytes moved per second slot, for "last minute" */
        uint64_t ring_sec[COUNTERS_MOVED_SLOTS];
        /* The migration summary (counters_log_summary()): where the last one left off. */
        uint64_t summary_ms;
        uint64_t summary_pages[_MIG_CLASS_MAX];
        uint64_t summary_calls;
};

/* Every move_pages(2) batch is logged at debug (up to ~100 lines a second on a busy
 * host); at info, once a minute while anything was asked to move, what the minute's
 * batches did: pages by outcome and calls. now_ms: CLOCK_MONOTONIC. */
#define COUNTERS_SUMMARY_MS 60000
void counters_log_summary(struct counters *c, uint64_t now_ms);

/* bytes moved now (CLOCK_MONOTONIC). */
void counters_moved(struct counters *c, uint64_t bytes);
/* Bytes moved in the last 60 s. */
uint64_t counters_moved_last_minute(const struct counters *c);
