/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The manager's cgroup records (struct cg_rec, manager-internal.h), in m->cgs for the
 * reports to iterate and in a hash by path for the tick to find: a tick looks up
 * every selected cgroup, and a linear search over 60,000 of one user's cgroups was
 * billions of compares per tick. The hash is SipHash with a key drawn at start, since
 * users name their cgroups. A record lives while its cgroup is selected: at the end of
 * a tick in which it was not (the cgroup went, or opted out), it is freed and its CPU
 * time kept in the manager's departed_cost_ns, so that the daemon's totals stay whole.
 * On the event-loop thread, like the rest of the manager's state. */
#pragma once
#include "cgroup.h"
#include "manager-internal.h"

/* The record of the selected cgroup e, made if new (its owner read from the
 * directory), with e's mode and source. NULL when out of memory. */
struct cg_rec *cg_records_get(struct manager *m, const struct cgroup_entry *e);
/* The record of path, or NULL. */
struct cg_rec *cg_records_find(const struct manager *m, const char *path);
/* Frees the records not seen in this tick (cg_rec.seen). After the processes that
 * pointed to them were forgotten: a process seen in this tick has a seen cgroup. */
void cg_records_sweep(struct manager *m);
/* Frees them all (manager_free). */
void cg_records_free(struct manager *m);
