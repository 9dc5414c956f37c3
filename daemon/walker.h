/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The cgroup walk off the event loop. A thread walks the cgroup tree (cgroup_select)
 * again and again, interval_ms after the end of each walk (or WALKER_DUTY times as long
 * as the walk took, if that is more: a walk of seconds takes a quarter of a service
 * CPU at most), at nice WALKER_NICE so that the tick and the migration workers on the
 * same service CPUs come first, and keeps the newest complete selection for the tick
 * to take. A user can make the tree large
 * (20,000 cgroups of one delegated subtree took 2.5 s to walk in the 2n2c TCG guest):
 * on the event loop, that was 2.5 s of every tick before any process was read or any
 * control request served. The tick works from the last selection it took (its cgroup
 * records) until a newer one is ready, so what a walk finds reaches the tick one walk
 * later at most (the first tick waits for the first walk). It walks again only once
 * the tick has taken the last selection.
 *
 * The walk's CPU time is measured on this thread (cgroup_select() reads the calling
 * thread's clock) and travels in the selection (walk_ns of its entries and others):
 * the tick that takes it charges it to the cgroups (cost.h). Nothing else crosses
 * threads; a walk that is dropped (new rules, or out of descriptors or memory) leaves
 * its time unattributed.
 *
 * A walk that fails for lack of descriptors or memory publishes nothing (the last
 * selection stays, like keep_all()); one that fails otherwise (the root is not there)
 * publishes an empty selection. Either is logged once until a walk succeeds. */
#pragma once
#include <stddef.h>
#include <stdint.h>
#include "cgroup.h"
#include "config.h"
#include "service-cpus.h"
#include "log.h"
#include "siphash.h"

#define WALKER_NICE 10
#define WALKER_DUTY 3

struct walker;

/* Starts the thread (with every signal blocked: signals are the main thread's). */
int walker_new(const char *root, const struct cgroup_rule *rules, size_t n_rules, uint64_t interval_ms,
               struct walker **ret);
/* A new configuration: the next walk uses it, and a walk under way with the old one is
 * not published. Starts that walk now. -ENOMEM leaves the old one. */
int walker_set_config(struct walker *w, const char *root, const struct cgroup_rule *rules, size_t n_rules,
                      uint64_t interval_ms);
/* The newest selection published since the last call: 1 with it in *ret (the caller's
 * to free with cgroup_selection_done), 0 when there is none newer. */
int walker_take(struct walker *w, struct cgroup_selection *ret);
/* Walks published so far (for the tests). */
uint64_t walker_walks(struct walker *w);
/* Pins the walk's thread to cpus (service CPUs after a hotplug: it inherited the
 * affinity the daemon had when it started). 0 or -errno. */
int walker_repin(struct walker *w, const nb_cpumask *cpus);
/* Whether the walk's thread is pinned to exactly cpus (exact), or to some of them. */
bool walker_pinned(const struct walker *w, const nb_cpumask *cpus, bool exact);
/* The walk's thread as a pool for service_cpus_check(). */
struct service_pool walker_service_pool(struct walker *w);

/* Stops the thread (after the walk under way) and frees everything. */
void walker_free(struct walker *w);

/* New invalid cgroup settings logged one by one per minute, at most. */
#define WALKER_INVALID_LOG_BURST 10

/* What is wrong with the tree, logged once, for the walker's selections and the
 * tick's own walks alike (walker_log_selection): the event loop's, not the thread's. */
struct walker_log {
        uint8_t invalid_key[SIPHASH_KEY_SIZE];  /* of invalid_seen */
        uint64_t *invalid_seen;    /* keyed hashes of the last walk's invalid settings, sorted */
        size_t n_invalid_seen;
        struct log_ratelimit invalid_log, invalid_count_log;
        uint64_t invalid_not_logged;  /* new invalid settings not logged one by one, not yet counted in the log */
        bool truncated_logged;     /* the walk's bounds were hit: warned once until they are not */
        bool short_logged;         /* out of descriptors or memory: warned once until it passes */
};

void walker_log_init(struct walker_log *l);
/* What sel (a walk of the tree under root) found wrong: each invalid setting once
 * while it stays, at most WALKER_INVALID_LOG_BURST new ones a minute (the rest counted
 * in one line a minute), and the walk's bounds hit, once until they are not. */
void walker_log_selection(struct walker_log *l, const char *root, const struct cgroup_selection *sel);
/* A read of the tree under root failed for lack of descriptors or memory (r < 0),
 * what is known kept meanwhile: warned once until a read works (r >= 0). */
void walker_log_short(struct walker_log *l, const char *root, int r);
void walker_log_done(struct walker_log *l);
