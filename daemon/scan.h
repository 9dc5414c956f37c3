/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The per-process scan: sample where its threads ran, read what it maps where, decide
 * (plan_decide, plan_pages), update its locality and schedule its next scan. One
 * process at a time, on the event-loop thread. It reads the environment (struct
 * scan_env: config, topology, sources), writes that process's record and its plans,
 * and measures its own CPU time into the scan; it writes nothing else: the tick
 * charges the time (cost.h) and counts the scan. It alone writes a record's schedule
 * (struct scan_schedule): the others ask with the functions below. */
#pragma once
#include <stdbool.h>
#include <stdint.h>
#include "config.h"
#include "cost.h"
#include "numa_maps.h"
#include "plan.h"
#include "proc-records.h"
#include "scan-env.h"
#include "page-sampler.h"
#include "source.h"
#include "tenant-reader.h"
#include "topology.h"

/* A process whose layout did not change is scanned half as often each time, down to
 * scan_max_ms; any move or change brings it back to scan_min_ms. */
#define SCAN_BACKOFF_FACTOR 2
/* A change of this many percent of its resident bytes, or of the local share,
 * counts as "changing" for the backoff. */
#define SCAN_CHANGE_PCT 5
/* A settled process's resident size is read (statm) when it may have grown: when its
 * cgroup's memory.current grew by min_misplaced since the cgroup's last look (one read
 * per cgroup per tick, scan_cg_growth()), or, in a cgroup without the memory
 * controller, every GROW_CHECK_TICKS ticks, one process in that many per tick, while
 * anything in the cgroup ran in the last GROW_CHECK_TICKS ticks (cpu.stat: idle
 * processes do not grow). When it grew by min_misplaced and by 1/SCAN_GROW_SHARE of
 * itself since its last scan, it is scanned now, so that new memory placed on the
 * wrong node is not left there for its backed-off interval (scan_max_ms). */
#define GROW_CHECK_TICKS 2
/* A process whose read overran its deadline is not read again for this long
 * (scan_quarantine). */
#define SCAN_QUARANTINE_MS (10 * 60 * UINT64_C(1000))

/* One process's scan in this tick, until its jobs have run: its plans (the ranges to
 * move), not its maps, which are freed once it is decided. */
struct scan {
        struct proc_rec *rec;
        struct plan plan;          /* VMA-level: memory follows CPU */
        struct plan pages;         /* page-level: sampled pages to the node that touches them */
        uint64_t cost_ns[_STAGE_MAX];  /* its CPU time, read and decide (for the tick to charge) */
        bool sampled;              /* settled still by its samples: numa_maps not read */
};

/* Reads and decides for one due process. reserved: bytes already planned to each node
 * in this tick (the free-memory floor is shared), updated. Returns 1 with the plans in
 * *s, 0 when it was not decided on (idle since its last scan, or below min_rss: its
 * next scan is scheduled), or -errno (-ESRCH, -ENOENT: it is gone). s->cost_ns is set
 * whatever it returns. */
int scan_process(const struct scan_env *env, struct proc_rec *p, uint64_t now, uint64_t *reserved, struct scan *s);
void scan_done(struct scan *s);
/* A scan of p failed: its next one is scheduled as for a settled process (half as
 * often each time, down to scan_max_ms), not at the next tick. */
void scan_backoff(const struct scan_env *env, struct proc_rec *p, uint64_t now);

/* The schedule (struct scan_schedule, proc-records.h) is written here only; the tick,
 * the react pass and the placer ask for a change through these. */
/* p's next scan at at_ms at the latest. */
void scan_bring_forward(struct proc_rec *p, uint64_t at_ms);
/* A thread of p moved to another node: p is scanned on its own at due_ms (the react
 * pass, react.h), and at scan_min_ms after that scan. */
void scan_react_at(struct proc_rec *p, uint64_t due_ms);
/* p's react scan is no longer pending (done, or p no longer watched). */
void scan_react_drop(struct proc_rec *p);
/* The exchange across processes (plan.h, rule 8): while some fast node's promotions
 * wait for room (env->exchange_demand), a process with fresh cold regions whose
 * cgroup may give some up there (no share, or above it: fast-use.h) is scanned now, or
 * scan_min_ms after its last scan, as a process that is moving; rather than at a
 * settled process's next scan, up to scan_max_ms away. Likewise a process whose
 * promotions last waited at a fast node where the exchange has made room since
 * (env->exchange_credit): the room is taken by its next scan. */
void scan_serve_demand(const struct scan_env *env, struct proc_records *procs, uint64_t now);
/* New thresholds (a reload): p at scan_min_ms again, its next scan within it. */
void scan_restart_interval(struct proc_rec *p, uint64_t scan_min_ms, uint64_t now);
/* A read of p overran its deadline: p is not read again for SCAN_QUARANTINE_MS, and
 * explain says why (REASON_QUARANTINED). */
void scan_quarantine(struct proc_rec *p, uint64_t now);
/* Whether anything in cg may have grown since its last look (cg->growth, for
 * scan_due_now()), from its memory.current; without the memory controller it cannot
 * say (GROWTH_UNKNOWN), unless nothing in it ran for GROW_CHECK_TICKS ticks (its
 * cpu.stat): then nothing grew. Once per cgroup per tick, before its processes. */
void scan_cg_growth(const struct scan_env *env, struct cg_rec *cg);
/* Why p is scanned in this tick, if it is: */
enum scan_due {
        SCAN_NOT_DUE,
        SCAN_DUE,                  /* its next scan time has come */
        SCAN_DUE_ROOM,             /* the node its last plan was held back from has room again */
        SCAN_DUE_GREW,             /* it grew (GROW_CHECK_TICKS): read in full, not sampled */
};
enum scan_due scan_due_now(const struct scan_env *env, struct proc_rec *p, uint64_t now);
/* The plan parameters of the config (plan.h). */
struct plan_params scan_plan_params(const struct scan_env *env);
