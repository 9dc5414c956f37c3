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
