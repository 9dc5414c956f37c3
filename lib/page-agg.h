/* SPDX-License-Identifier: GPL-2.0-or-later */
/* sample, part 3: which node touches which page. Memory-access samples (from the PMU:
 * Intel PEBS mem-loads, AMD IBS op, Arm SPE; or page faults with PERF_SAMPLE_ADDR) are
 * (tid, cpu, data address) triples. They are aggregated per page into counts per node
 * (the node of the sampling CPU), then the two-sample rule of docs/RULES.md decides:
 *   - a page seen from exactly one node, at least min_samples (2) times, goes to that
 *     node (a thread's private data follows the thread);
 *   - a page seen from several nodes is shared: left where it is, whatever the counts
 *     (moving it would only move the remote accesses to the other node: ping-pong);
 *   - a page seen fewer times is not evidence yet.
 * Pure: no I/O, no clock. Replayed from stored sample streams in the unit tests. */
#pragma once
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include "topology.h"

struct page_sample {
        pid_t tid;
        unsigned cpu;
        uint64_t addr;
};

struct page_agg;

/* unit: the size samples are counted per, a power of two, at least the base page
 * size (page_size()); a huge page size counts per huge page. */
int page_agg_new(const struct topology *t, uint64_t unit, struct page_agg **ret);
void page_agg_free(struct page_agg *a);
DEFINE_TRIVIAL_CLEANUP_FUNC(struct page_agg *, page_agg_free);

/* Counts one sample. -EINVAL for a CPU the topology does not place on a node (the
 * sample is dropped and counted in stats.no_node). */
int page_agg_add(struct page_agg *a, const struct page_sample *s);
/* Adds count samples of page (address aligned down) from node id: what the BPF map
 * of (tgid, page) -> per-node counts hands over. */
int page_agg_add_counts(struct page_agg *a, uint64_t addr, unsigned node, uint64_t count);

struct page_move {
        uint64_t page;                /* aligned address */
        unsigned node;                /* node id it should live on */
        uint64_t samples;
};

struct page_decision {
        struct page_move *moves;      /* sorted by page address */
        size_t n_moves;
        size_t pages;                 /* distinct pages seen */
        size_t shared;                /* seen from several nodes: left alone */
        size_t too_few;               /* seen from one node, fewer than min_samples times */
        uint64_t samples, no_node;    /* samples counted; dropped (CPU without a node) */
};

/* Applies the two-sample rule. min_samples >= 1 (2 is the rule). */
int page_agg_decide(const struct page_agg *a, unsigned min_samples, struct page_decision *ret);

/* The clock (any unit, the caller's: seconds in the daemon) that stamps each page with
 * the time of its latest sample, from the next sample on. */
void page_agg_set_clock(struct page_agg *a, uint32_t now);
/* The evidence worth keeping after a decision: the pages seen from one node only,
 * fewer than min_samples times, last seen at or after `oldest`, at most max_pages of
 * them (over that, a different part of them each time the clock moves), with their
 * counts and stamps, in a new aggregate (*ret; NULL when there are none). Pages that were decided (moved or not: plan_pages' rules) and pages seen from
 * several nodes are not kept: new samples decide them again. Returns 0 or -ENOMEM. */
int page_agg_carry(const struct page_agg *a, unsigned min_samples, uint32_t oldest, size_t max_pages,
                   struct page_agg **ret);
/* Distinct pages held. */
size_t page_agg_pages(const struct page_agg *a);
/* The longest run of slots a lookup has walked (the table's health, for the tests). */
size_t page_agg_longest_probe(const struct page_agg *a);
/* Samples added since the aggregate was made: 0 for one that holds only carried
 * evidence (nothing new to decide on). */
uint64_t page_agg_fresh(const struct page_agg *a);
void page_agg_decision_done(struct page_decision *d);

/* A stored sample stream: one "TID CPU ADDR" per line (ADDR in hex with 0x), '#'
 * comments and blank lines ignored. Returns -EINVAL with *ret_bad_line on the first
 * line that does not parse. */
/* One line of such a stream (without its newline) into *ret: 1, or 0 for a comment or
 * blank line, or -EINVAL. Allocates nothing (the replay calls it per line). */
int page_agg_parse_line(const char *s, size_t len, struct page_sample *ret);
int page_agg_parse_samples(const char *buf, size_t len, struct page_sample **ret, size_t *ret_n,
                       unsigned *ret_bad_line);
