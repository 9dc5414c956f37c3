/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The process records: one per process of an opted-in cgroup that the daemon watches,
 * sorted by pid, with the pidfds of those being balanced. Admission (who is ours to
 * watch: lib/creds.h, docs/OPT-IN.md), re-identification (a pid reused is a new
 * process) and forgetting live here; what a scan learns of a process is written into
 * its record by the scan (scan.h), and what its moves did by the jobs (jobs.h). On
 * the event-loop thread. */
#pragma once
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include "cg-records.h"
#include "stage.h"
#include "migrate.h"
#include "proc.h"
#include "nodemask.h"
#include "numa_maps.h"
#include "damon-pages.h"
#include "page-agg.h"
#include "sampled-cold.h"
#include "topology.h"
#include "node-time.h"
#include "plan.h"

/* Address ranges kept per process for its page samples (proc_records_set_mapped), at
 * most: ranges of adjacent mappings are merged, so this is far above what processes
 * need (a few hundred); a process with more keeps its first ones. */
#define PROC_MAPPED_MAX 65536
/* Ranges kept per process of its VMAs with pages on a slow node (DAMON's evidence is
 * taken only there, daemon/damon.h), at most: a process with more keeps its first. */
#define PROC_SLOW_MAX 256

/* Cooldown history kept per process (plan.h), at most. */
#define PROC_HISTORY_MAX 256
/* Descriptors a process's pidfd may not take: the cgroup walk (one per level, 64),
 * the control connections (at most 64), the BPF maps and the rest of the daemon. */
#define PIDFD_RESERVE 256

/* A VMA of huge_vma or more as the full read that left its process settled found it:
 * the baseline its samples are compared with (sampled-scan.h). */
struct huge_vma {
        uint64_t start, end;
        uint64_t *pages;           /* base pages per node id (huge_n_ids entries) */
};

/* When a process is scanned: written by scan.c only (scan.h: the back-off, bringing a
 * scan forward, a react scan, quarantine); the others read it. A new record's is zero:
 * due at once. */
struct scan_schedule {
        uint64_t next_scan_ms, interval_ms;
        uint64_t react_due_ms;     /* a scan brought forward by a node-change event, 0: none */
        uint64_t quarantined_until_ms;  /* a read overran (tenant-reader.h): not read before; 0: never */
};

/* What its moves did: written by jobs.c only (jobs.h), as its jobs' results come
 * back; read by the scan (the cooldown history) and the reports. */
struct proc_moves {
        struct plan_history *hist; /* grown on demand (most processes never move), at most PROC_HISTORY_MAX */
        size_t n_hist, cap_hist;
        uint64_t pages[_MIG_CLASS_MAX];  /* its jobs' pages, by result class */
        const struct migrate_stop *stop;  /* why its last stopped job stopped, NULL: none */
        uint64_t stop_ms;          /* when */
        /* Its last shared job moved nothing and the check held pages back (mapped
         * outside the group, ...): its shared memory is not planned again before this
         * (CLOCK_MONOTONIC ms; the cooldown), so that it is not checked at every scan,
         * unless its group changed (share_groups_signature(): a new member, as a new
         * PostgreSQL backend, may be what mapped them). */
        uint64_t shared_held_until_ms;
        uint64_t shared_held_group;
        /* Its ranges promoted or demoted within cooldown_ms (plan.h, rule 8: neither way
         * again before), sorted by start, at most PROC_TIER_MAX (more: the two closest
         * merged, which only widens what is left alone); grown on demand. */
        struct tier_move *tier;
        size_t n_tier;
};
#define PROC_TIER_MAX 128

#define COLD_FRESH_MS 5000

struct proc_rec {
        pid_t pid;
        uint64_t starttime;
        int pidfd;                 /* -1 unless it is being balanced (proc_records_update_pidfd) */
        char comm[64];
        struct cg_rec *cg;         /* valid for the current tick */
        struct node_time_state pl;
        struct scan_schedule sched;  /* written by scan.c only */
        struct proc_moves moved;     /* written by jobs.c only */
        bool exited;               /* its pidfd said so at the start of this tick */
        uint64_t cost_ns[_STAGE_MAX];  /* written by cost.c only */
        enum plan_reason reason;   /* of the last scan; _REASON_MAX before the first */
        uint64_t planned_bytes;
        int hot_node;              /* of the last scan, -1 if none */
        int target_node;           /* of the last plan's first move, -1 if none */
        int full_target;           /* the last plan's first move held back at that node's
                                    * free-memory floor, -1 if none: scanned again as soon
                                    * as the node has room (room_again) */
        uint64_t skipped_bytes[_REASON_MAX]; /* misplaced bytes left alone, last scan */
        uint64_t last_scan_ms;
        uint64_t rss_kb;           /* resident at its last scan (or growth seen since), 0: unknown */
        uint64_t scans;
        nb_nodemask mems_allowed;
        uid_t uid;                 /* real uid, for the control socket's filter */
        uid_t covered_for;         /* the cgroup's covers_uid its ids were last checked against */
        struct proc_mm_layout layout;  /* its exec layout at its last scan (move-check.h) */
        uint64_t total_bytes, local_bytes;
        uint64_t *node_bytes;      /* bytes per topology node index, last scan; NULL before */
        uint64_t seen_tick;
        nb_nodemask busy_nodes;    /* nodes with keep_node_share_pct of its CPU time in the last
                                    * window that had any (scan.c, keep_before) */
        /* Page-level sampling: counts gathered since the last scan, of addresses in
         * the ranges its last full read found mapped (merged, sorted). */
        struct page_agg *seen;
        struct damon_range *mapped;
        size_t n_mapped;
        /* Its VMAs with pages on a slow node at its last full read (merged, sorted):
         * where DAMON monitors it and where DAMON's hot regions count. */
        struct damon_range *slow;
        size_t n_slow;
        /* Its ranges DAMON found not accessed for cold_age_ms at its last read (sorted;
         * written by damon.c only): what the exchange may demote (plan.h, rule 8). */
        struct damon_range *cold;
        size_t n_cold;
        uint64_t cold_ms;          /* when they were read (CLOCK_MONOTONIC ms): older than
                                    * COLD_FRESH_MS, not used (reads come every second
                                    * while a process is monitored) */
        /* Its pages sampled over the cold age, where the exchange finds cold memory
         * without DAMON (lib/sampled-cold.h; written by samplers.c only); NULL while
         * the machine has no slow node or the exchange is off. */
        struct sampled_cold *sampled;
        size_t pages_seen, pages_shared;   /* distinct pages sampled, and of them from several nodes: last scan */
        uint64_t page_planned_bytes;       /* page-level moves planned, last scan */
        uint64_t promote_planned_bytes;    /* of which promotions off slow nodes (plan.h, rule 7) */
        uint64_t demote_planned_bytes;     /* the exchange's demotions (plan.h, rule 8) */
        unsigned exchange_wait;            /* 1 + the topology index of the fast node its
                                            * promotions waited at the floor for, last
                                            * scan (0: none): scanned again soon when
                                            * the exchange made room there (scan.c) */
        /* Sampled scans (sampled-scan.h): its huge VMAs, and the nodes with
         * min_cpu_share_pct of its CPU time, at the full read that left it settled;
         * none: read in full. */
        struct huge_vma *huge;
        size_t n_huge;
        nb_nodemask huge_cpu_nodes;
        uint64_t huge_rss_kb;              /* its resident size at that read */
        uint64_t sampled_scans;            /* scans that did not read numa_maps */
        /* Mode place and advise (placer.h): per topology index, the bytes no move could
         * bring to that node (plan_stuck_away), last full scan; NULL before. */
        uint64_t *stuck_away;
        struct proc_place *place;          /* the placer's, NULL until its first round */
        /* Its shared mappings at its last full read (share-groups.h), written by
         * share-groups.c only; one allocation, NULL: none. */
        struct proc_shares *shares;
};

/* One shared mapping of a process's, as its scan found it (share_groups_note()). */
struct share_note {
        bool cow;                  /* anonymous, copy-on-write since a fork(): dev 0, ino and
                                    * pgoff its address (share-groups.h) */
        uint64_t dev, ino, pgoff, start, end;
        nb_nodemask allowed;       /* the nodes it lets these pages go to; empty: none */
        int target_seen;           /* its object's target when groups were last built, -1: none */
        uint64_t *node_bytes;      /* resident in it, by topology index (into the same block) */
};

struct proc_shares {
        size_t n;
        uint64_t starttime;        /* of the process noted */
        uint64_t *cpu_ns;          /* its window's CPU time, by topology index */
        struct share_note notes[];
};

struct proc_place;

struct proc_records {
        struct proc_rec **v;       /* sorted by pid */
        size_t n;
        size_t n_pidfds;           /* held by the records */
        uint64_t fd_limit;         /* RLIMIT_NOFILE's soft limit at start */
        /* pidfd_open(2), replaced by the tests (a descriptor that polls readable once
         * pid has exited, or -errno); NULL: the real thing. */
        int (*open_pidfd)(pid_t pid);
        /* Frees a record's placer state (proc_rec.place) with the record: set by whoever
         * runs the placer (the manager: placer_proc_free), so that the records do not
         * call the placer that reads them. NULL: none is ever made. */
        void (*free_place)(struct proc_place *pp);
        /* What the records' sampled pages (proc_rec.sampled) hold in all: bounded. */
        struct sampled_cold_pool sampled_pool;
};

/* No records; fd_limit from RLIMIT_NOFILE. */
void proc_records_init(struct proc_records *r);
struct proc_rec *proc_records_find(const struct proc_records *r, pid_t pid);

/* One poll(2) over every record's pidfd: sets each record's exited. */
void proc_records_poll_exited(struct proc_records *r);

/* The record of the process pid names now in cg, made if it is new (*ret_new set).
 * NULL: not ours to watch (the daemon itself, gone, a zombie, a kernel thread, or
 * another user's process under a user's opt-in). now: CLOCK_MONOTONIC ms. */
struct proc_rec *proc_records_admit(struct proc_records *r, const char *proc_root, const struct cg_rec *cg,
                                    pid_t pid, uint64_t now, bool *ret_new);

/* p holds a pidfd while want (it is being balanced), if descriptors allow (past
 * PIDFD_RESERVE below the limit it goes without: its jobs open their own). */
void proc_records_update_pidfd(struct proc_records *r, const char *proc_root, struct proc_rec *p, bool want);

/* Whether a record seen at tick holds pid (a reused pid gets a new record before the
 * old one is forgotten). */
bool proc_records_current(const struct proc_records *r, pid_t pid, uint64_t tick);

/* Frees the records not seen at tick. */
void proc_records_sweep(struct proc_records *r, uint64_t tick);

/* p's mappings as its full read found them: VMA i from maps->vmas[i].start to ends[i]
 * (0: unknown, left out). -ENOMEM (the old ranges kept). */
int proc_records_set_mapped(struct proc_rec *p, const struct numa_maps *maps, const uint64_t *ends);
/* Whether addr lies in p's mappings as its last full read found them (none read yet:
 * false). A page sample anywhere else is not p's memory to count. */
bool proc_records_mapped(const struct proc_rec *p, uint64_t addr);
/* p's VMAs with pages on a slow node of t, as its full read found them (ends as for
 * proc_records_set_mapped), merged, at most PROC_SLOW_MAX. -ENOMEM (the old kept). */
int proc_records_set_slow(struct proc_rec *p, const struct numa_maps *maps, const uint64_t *ends,
                          const struct topology *t);

/* Forgets p's huge VMAs (sampled-scan.h): it is read in full at its next scan. */
void proc_records_drop_huge(struct proc_rec *p);

void proc_records_done(struct proc_records *r);
