/* SPDX-License-Identifier: GPL-2.0-or-later */
/* DAMON as evidence for promotion (docs/RULES.md, "Memory tiers"): a kdamond per
 * watched process with pages on a slow node, monitoring those VMAs (fvaddr; all its
 * mapped ranges when it may give cold memory up: damon_sync_procs()), with a
 * DAMOS `stat` scheme whose tried regions (nr_accesses >= 1) are its hot regions. The
 * sysfs work runs on a thread of this module's own: on 6.12 writing
 * update_schemes_tried_regions to a kdamond's state waits for the kdamond (about one
 * aggregation interval, 100 ms here, measured), and a kdamond stuck on a tenant's mmap
 * lock would hold the writer. The event loop only hands over what it wants monitored
 * (damon_sync) and takes whole reads (damon_take), under the module's lock.
 *
 * Nothing of DAMON is touched when another tool owns it (nr_kdamonds above 0 at
 * start); no kdamond runs while no process wants one; what the daemon created is
 * recorded in a state file so that the next start turns off what a crash left. */
#pragma once
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include "damon-pages.h"
#include "nodemask.h"

/* Processes monitored at once, at most: one kdamond each (a kthread, and a sysfs
 * round trip of about 100 ms per read on the one DAMON thread, so four take about
 * 0.4 s a round), shared max-min fair among owners (lib/sample-quota.h). */
#define DAMON_PROCS_MAX 4
/* Monitoring regions a kdamond keeps (its max_nr_regions), and so hot regions a read
 * can return: what is read a round is bounded by this. */
#define DAMON_REGIONS_MAX 200

struct damon_want {
        pid_t pid;
        uint64_t starttime;        /* /proc/PID/stat field 22: which process pid is */
        uid_t owner;               /* the uid its opt-in covers: the fair share's owner */
        struct damon_range r[DAMON_TARGET_REGIONS_MAX];
        size_t n;
};

/* One read of one process's kdamond: its hot regions (accessed in the last
 * aggregation) and its cold ones (not accessed for the cold age, damon_set_cold_age()). */
struct damon_result {
        pid_t pid;
        uint64_t starttime;        /* as wanted: a reused pid's is another */
        struct damon_range *hot;
        size_t n_hot;
        struct damon_range *cold;
        size_t n_cold;
};

struct damon_stats {
        uint64_t rounds;           /* of the DAMON thread */
        uint64_t reads;            /* tried-regions reads that succeeded */
        uint64_t regions;          /* hot regions read */
        uint64_t regions_bad;      /* entries skipped: unparsable, start >= end */
        uint64_t errors;           /* sysfs writes or reads that failed */
        uint64_t results_dropped;  /* reads the event loop did not take in time */
        uint64_t affinity_refused; /* kdamonds that could not be pinned */
        uint64_t commits;          /* new regions given to a running kdamond */
        uint64_t slots_freed;      /* by kdamonds that failed to start or stopped by themselves */
        uint64_t pid_reused;       /* kdamonds not started or turned off: the pid is another process */
        uint64_t last_read_us;     /* how long the last update_schemes_tried_regions took */
        unsigned running;          /* kdamonds on now */
};

struct damon;

/* What DAMON offers here, chosen once and logged: enabled false ([sample] damon = off)
 * or no state file path gives an unused module. Kdamonds a previous run recorded in
 * state_path are turned off first (damon_recover). thread: run the sysfs work on a
 * thread of its own (false: the tests call damon_round()). -ENOMEM only. */
int damon_new(const char *sys_root, const char *state_path, bool enabled, bool thread, struct damon **ret);
bool damon_in_use(const struct damon *d);
/* "in use", or why not: for status. */
const char *damon_why(const struct damon *d);
/* Where /proc is (the default "/proc"), set before the first damon_sync(): a
 * process's start time is checked there before its pid is given to a kdamond and
 * after "on", against a reused pid. */
int damon_set_proc_root(struct damon *d, const char *proc_root);
/* A region DAMON saw no access to for cold_age_ms is cold (0: none is). */
void damon_set_cold_age(struct damon *d, uint64_t cold_age_ms);
/* The CPUs the kdamonds are pinned to (the service CPUs). */
void damon_set_cpus(struct damon *d, const nb_cpumask *cpus);
/* The processes that want a kdamond now (every other one's is turned off). */
void damon_sync(struct damon *d, const struct damon_want *w, size_t n, uint64_t now_ms);
/* Whether pid holds a kdamond slot. */
bool damon_monitored(const struct damon *d, pid_t pid);
/* The regions pid's kdamond is wanted over (at most max into out): how many, 0 when
 * it holds no slot. */
size_t damon_regions_of(const struct damon *d, pid_t pid, struct damon_range *out, size_t max);
/* The reads since the last take (*ret, n returned; free with damon_results_free). */
size_t damon_take(struct damon *d, struct damon_result **ret);
void damon_results_free(struct damon_result *r, size_t n);
void damon_get_stats(const struct damon *d, struct damon_stats *ret);
/* One round of the DAMON thread's work at now_ms (monotonic): kdamonds turned on and
 * off as wanted, each running one read if its last was ROUND_MS (1 s) ago or more. */
void damon_round(struct damon *d, uint64_t now_ms);
/* Stops the thread (waiting 5 s at most: a thread stuck in the kernel is left, and
 * the next start cleans up), turns off the kdamonds and gives DAMON back. */
void damon_free(struct damon *d);
/* The kdamonds state_path names (index and kdamond pid) turned off where they still
 * are those, nr_kdamonds set back to 0 when every kdamond is off; the file removed,
 * unless writing "off" failed (-EBUSY: the next start tries again). */
int damon_recover(const char *sys_root, const char *state_path);

/* --- DAMON's reads as page evidence ---------------------------------------------- */
struct proc_records;
struct topology;
struct counters;
/* Base pages one DAMON read may count for a process, at most: 128 MiB of 4 KiB pages,
 * half of what the promotion budget (256 MB/s by default) moves in a second, so the
 * budget, not this cap, paces promotion; what a read lists beyond is counted
 * (damon_capped), not fed, and is listed again by the next read. It bounds how much
 * one read grows the evidence table. */
#define DAMON_PAGES_PER_READ 32768
/* Pages a process's evidence may hold before DAMON adds more: four reads' worth. The
 * scan decides on them and drops them (page_agg_carry); a tenant whose hot set moves
 * every read between two scans cannot grow the table past this. */
#define DAMON_PAGES_HELD_MAX (4 * DAMON_PAGES_PER_READ)

/* DAMON's reads since the last tick as page evidence: each hot region, within the
 * process's slow VMAs of its last full read (by pid and start time), one count per
 * base page for the node its threads ran on at its last scan, if that node is fast
 * and had min_cpu_share_pct of its CPU time (plan.h: hot_node); otherwise counted as
 * having no node (damon_no_node). One count per read, so a page needs two reads: the
 * two-sample rule of page samples. On the event loop, in each tick's preparation. */
void damon_feed(struct damon *d, struct proc_records *procs, const struct topology *topo, struct counters *c);
/* damon_sync() for the records seen at tick: the processes that want a kdamond are
 * those watched in a mode that moves or advises whose last full read found pages on a
 * slow node of t (over their slow VMAs: evidence for promotion, and cold regions; over
 * all their mapped ranges when they may give cold memory up, in a mode that moves and
 * at least DAMON_DONOR_MIN_KB resident);
 * with kdamonds left over, donors take them, the largest first: processes in a mode
 * that moves with none of their memory on a slow node and at least
 * DAMON_DONOR_MIN_KB resident, over their mapped ranges, for their cold regions only
 * (what the exchange across processes demotes to make room for another's hot pages:
 * the process over its share of a full fast node typically has all its memory there,
 * and its cold regions need cold_age_ms of watching before they count). Every other
 * one's is turned off. Each kdamond pinned to cpus (the service CPUs online). After
 * each tick's forgetting. */
#define DAMON_DONOR_MIN_KB (64 * 1024)
void damon_sync_procs(struct damon *d, const struct proc_records *procs, const struct topology *t, uint64_t tick,
                      const nb_cpumask *cpus, uint64_t now);
/* damon_feed() on reads already taken (res, n: damon_take()'s). */
void damon_feed_results(const struct damon_result *res, size_t n, struct proc_records *procs,
                        const struct topology *topo, struct counters *c);
