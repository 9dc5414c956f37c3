/* SPDX-License-Identifier: GPL-2.0-or-later */
/* memsample.bpf.c's loader: the program attached to sampling perf events on the
 * watched processes' cgroups only (one per CPU of each cgroup's cpuset, at most
 * MEMSAMPLE_MAX_GROUPS cgroups), per-process watch, and draining the per-(tgid, node, page) counts into a
 * lib/page-agg aggregation. The daemon opens it through daemon/source.c
 * (page_sampler); tests/vm/memsample-probe drives it with the page-faults event. */
#pragma once
#include <linux/perf_event.h>
#include <stdbool.h>
#include <sys/types.h>
#include "page-agg.h"
#include "topology.h"

struct memsample;

/* attr: the sampling event, with a fixed sample_period (frequency mode would keep a
 * nohz_full CPU's tick running). Loads the program; opens no event (memsample_loader_arm). Returns 0, or -errno with *ret_why naming the step. */
int memsample_loader_new(const struct topology *t, const struct perf_event_attr *attr,
                       struct memsample **ret, const char **ret_why);
void memsample_loader_free(struct memsample *p);
/* Where /proc/PID/cgroup and the cgroup directories are ("/proc", "/sys/fs/cgroup" by
 * default). */
void memsample_loader_set_roots(struct memsample *p, const char *proc_root, const char *cgroup_root);
/* on: opens the events of every watched process's cgroup, and of each watched from
 * now on; off: closes them all. Nothing is open before the first arm(true). */
int memsample_loader_arm(struct memsample *p, bool on);
/* The perf events open now (tests). */
unsigned memsample_loader_n_events(const struct memsample *p);
int memsample_loader_watch(struct memsample *p, pid_t pid);
int memsample_loader_unwatch(struct memsample *p, pid_t pid);
/* Moves pid's counts into agg (deleting them from the map). Returns the number of
 * (node, page) entries moved, or -errno. Walks the whole map: drain rarely. */
int memsample_loader_drain(struct memsample *p, pid_t pid, struct page_agg *agg);
/* Moves every watched process's counts out of the map: fn(userdata, tgid, page
 * address, node id, count) for each. Returns the number of entries, or -errno. One
 * walk for all processes: the daemon drains once per tick. */
int memsample_loader_drain_all(struct memsample *p,
                               void (*fn)(void *userdata, pid_t tgid, uint64_t addr, unsigned node, uint64_t count),
                               void *userdata);
/* The page-faults software event with the data address, every period-th fault. */
void memsample_loader_attr_page_faults(struct perf_event_attr *attr, uint64_t period);
