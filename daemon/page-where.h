/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Where a process's sampled pages are now, before a scan plans on them.
 *
 * Page evidence (page-agg.h) says where a page should live, not where it is: a page
 * promoted at an earlier tick and sampled again looks like one still to promote, and
 * at a full fast node like one waiting at its floor, for which the exchange would
 * demote cold memory a second time (plan.h, rule 8). So a scan asks the kernel
 * (move_pages(2) with no target nodes: a query, nothing moves) and drops the pages
 * already on the node their evidence names. The query reads the process's page
 * tables under its mmap lock, as a read of numa_maps does, in chunks of
 * PAGE_WHERE_CHUNK pages; a failed query (the process gone, or refused) keeps every
 * page, as before this check. Nothing is moved on its answer: the executor checks
 * again right before each move. */
#pragma once
#include <stddef.h>
#include <sys/types.h>
#include "page-agg.h"

#define PAGE_WHERE_CHUNK 4096

/* move_pages(2) as a query: status[i] the node of pages[i], or -errno. Returns 0, or
 * -errno for the call. */
typedef int (*page_where_query_fn)(pid_t pid, size_t n, void **pages, int *status);

/* The kernel's answer (move_pages with nodes NULL). */
int page_where_query(pid_t pid, size_t n, void **pages, int *status);

/* Drops from d the pages already on their node, by query(pid, ...); keeps d's order.
 * Returns how many it dropped, or -errno when a chunk's query failed: that chunk's
 * pages and those after it are kept, what the chunks before found is dropped. */
ssize_t page_where_drop_placed(page_where_query_fn query, pid_t pid, struct page_decision *d);

/* The exchange's demotions (plan_params.bytes_on): the base pages of a scan's cold
 * ranges asked, at most, before the rest count as not known (nothing planned there). */
#define PAGE_WHERE_EXCHANGE_PAGES 65536

/* The bytes of [start, end) on node, by query(pid, ...) in chunks of base pages, each
 * page asked taken off *budget: a range longer than what is left is asked in part,
 * one asked after it is spent gets 0 (not known). A failed call ends the count. */
uint64_t page_where_bytes_on(page_where_query_fn query, pid_t pid, uint64_t start, uint64_t end, unsigned node,
                             uint64_t *budget);
