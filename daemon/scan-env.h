/* SPDX-License-Identifier: GPL-2.0-or-later */
/* What a scan reads besides its process, apart from scan.h so that the parts of a
 * scan (sampled-scan.h) take it without including the scan that calls them. */
#pragma once
#include <stdbool.h>
#include <stdint.h>
#include "config.h"
#include "page-where.h"

/* A settled process grown by min_misplaced and by 1/SCAN_GROW_SHARE of itself since
 * its last scan is scanned now (scan_due_now()); the same share of a huge VMA is
 * the tolerance of a sampled scan (sampled-scan.c). At most SCAN_GROW_SHARE scans per
 * doubling of a steadily growing process. */
#define SCAN_GROW_SHARE 32

struct tenant_reader;
struct topology;
struct node_time_source;
struct page_sampler;
struct share_groups;
struct cg_records;

/* What a scan reads besides its process: the same for every scan of a tick. */
struct scan_env {
        struct tenant_reader *reader; /* numa_maps, maps and smaps read through it; NULL: here */
        const struct nb_config *cfg;
        const struct topology *topo;
        const char *proc_root;
        const struct node_time_source *source;
        struct page_sampler *pages;  /* page-level sampling, NULL: off */
        const struct share_groups *shares;  /* the tick's groups of shared memory, NULL: none */
        const struct cg_records *cgs;  /* the cgroup records: shares' holders (fast-use.h); NULL: none */
        bool kernel_balances;        /* kernel.numa_balancing on at this tick (policy.h) */
        uint64_t *promote_left;      /* the tick's promotion budget, bytes (plan.h, rule 7), updated */
        uint64_t *exchange_credit;   /* per topology index (plan.h, rule 8), updated */
        uint64_t *exchange_demand;   /* per topology index: what other processes' promotions
                                      * wait for (plan.h, rule 8), lowered as served */
        uint64_t *exchange_posted;   /* per topology index: this tick's unserved waits, added
                                      * to (move_budget_promote.demand_next) */
        page_where_query_fn page_where;  /* where sampled pages are now (page-where.h), asked
                                          * for a process with pages on a slow node; NULL: not */
        bool dry_run;                /* plan and log, move nothing */
        uint64_t tick;               /* the tick's number (counters.tick) */
        /* Reads each node's free memory into topo, if this tick has not yet: called
         * before anything here looks at a node's room. */
        void (*need_free_memory)(void *userdata);
        void *need_free_memory_userdata;
};
