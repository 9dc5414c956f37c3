/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The per-process scan: sample where its threads ran, read what it maps where, decide
 * (plan_decide, plan_pages), update its locality and schedule its next scan. One
 * process at a time, on the event-loop thread; it writes that process's record and
 * its cgroup's cost counters, nothing else of the manager. */
#pragma once
#include <stdint.h>
#include "manager-internal.h"
#include "numa_maps.h"
#include "plan.h"

/* One process's scan in this tick, until its jobs have run: its plans (the ranges to
 * move), not its maps, which are freed once it is decided. */
struct scan {
        struct proc_rec *rec;
        struct plan plan;          /* VMA-level: memory follows CPU */
        struct plan pages;         /* page-level: sampled pages to the node that touches them */
};

/* Reads and decides for one due process. reserved: bytes already planned to each node
 * in this tick (the free-memory floor is shared), updated. Returns 1 with the plans in
 * *s, 0 when it was not decided on (idle since its last scan, or below min_rss: its
 * next scan is scheduled), or -errno (-ESRCH, -ENOENT: it is gone). */
int scan_process(struct manager *m, struct proc_rec *p, uint64_t now, uint64_t *reserved, struct scan *s);
void scan_done(struct scan *s);
/* A scan of p failed: its next one is scheduled as for a settled process (half as
 * often each time, down to scan_max_ms), not at the next tick. */
void scan_backoff(struct manager *m, struct proc_rec *p, uint64_t now);
