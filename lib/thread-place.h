/* SPDX-License-Identifier: GPL-2.0-or-later */
/* decide: CPU follows memory. A pure function from (the nodes' free CPU capacity, every
 * process of the `place` and `advise` cgroups with its threads and where its memory
 * is, parameters, now) to a placement per process: gather its busy threads on one
 * node, leave them, keep or release an earlier placement. No I/O, no clock, no
 * allocation: it cannot fail. Tested with built inputs in tests/unit/test-thread-place.c.
 *
 * One round decides every process together, so that two processes whose threads are
 * split over two nodes can each gather on one (a decision of one process at a time
 * deadlocks when each node has room for one more thread only).
 *
 * The rule (docs/RULES.md, "CPU follows memory"):
 *   1. A process's busy threads (not app_pinned, busy >= busy_min) are kept together
 *      on one node: the process is the group that shares memory (processes that
 *      share memory are handed in as one by group-place.h).
 *   2. A node is feasible for them when each may run there (allowed_nodes), each may
 *      use at least as many CPUs there as there are busy threads (cpus_on), the node
 *      is not slow, and its room (n_cpus - lround(load) - threads claimed there this
 *      round) holds them all.
 *   3. Gathering on n costs the movable bytes not on n, thread_cost_bytes per busy
 *      thread not on n, and remote_weight per byte that cannot come to n. Leaving the
 *      threads (the baseline: memory follows CPU to h, the node with most of their
 *      CPU) costs the movable bytes not on h and remote_weight per byte that stays
 *      remote: what cannot come to h, and, with the threads split, the share of the
 *      memory the threads off h use. The cheapest feasible node wins if it is
 *      cheaper than the baseline.
 *   4. Placed processes claim their node first (pid order; one keeps its node with
 *      half a CPU of others' load forgiven, else it is released), then those whose busy
 *      threads are together on their best node already (by size: a larger one
 *      would displace them), then the others by size, largest first. A placement
 *      holds hold_ms; after that it moves only to a node scoring below switch_margin
 *      times its own. */
#pragma once
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include "nodemask.h"
#include "topology.h"

/* Node indexes are the topology's (t->nodes[]); on a larger topology the round sees
 * the first TP_MAX_NODES only (thread_place_nodes() hands in no more). */
#define TP_MAX_NODES 64

struct tp_node {
        int id;                    /* the node id, for reports */
        unsigned n_cpus;           /* online CPUs */
        double load_others;        /* CPUs' worth busy by everything NOT handed to this round:
                                    * the node's busy (thread_load_cpu_read()) minus the busy of every
                                    * thread of every process in the round measured there, idle
                                    * and app-pinned ones too (the round adds back, where they
                                    * run, the threads it does not place itself);
                                    * thread_place_load_others() computes it */
        bool slow;                 /* a lower memory tier, or no CPUs: never a target */
};

struct tp_thread {
        pid_t tid;
        int node;                  /* topology index where it ran last, -1 unknown */
        double busy;               /* CPU fraction over the window, 0..1 (a little more: clocks) */
        bool app_pinned;           /* the application chose its affinity: never moved, never
                                    * counted as ours (its load stays where it runs) */
        uint64_t allowed_nodes;    /* bit per topology index: nodes where its affinity and the
                                    * cpuset allow a CPU (thread_place_thread_cpus()); for a
                                    * thread the daemon narrowed, from the affinity it had
                                    * before (else it could never move again) */
        unsigned cpus_on[TP_MAX_NODES];  /* CPUs it may use, per node index */
};

enum tp_action {
        TP_NONE,                   /* not placed, nothing to do */
        TP_KEEP,                   /* placed on node, stays */
        TP_PLACE,                  /* place on node (narrow its threads' affinity there) */
        TP_RELEASE,                /* undo the placement on node (give the affinity back) */
        _TP_ACTION_MAX,
};

/* Why: what `explain` and `list` say (thread_place_reason_name()). */
enum tp_reason {
        TP_R_IDLE,                       /* no busy thread */
        TP_R_PINNED,                     /* every busy thread's affinity is the application's */
        TP_R_TOO_MANY,                   /* more busy threads than any node has CPUs it may use */
        TP_R_NO_ROOM,                    /* no node has room for them all now */
        TP_R_HOLDING,                    /* placed less than hold_ms ago */
        TP_R_CHEAPER_TO_MOVE_MEMORY,     /* leaving the threads costs less than gathering them */
        TP_R_MEMORY_STUCK,               /* gathered by memory that cannot come to the threads */
        TP_R_GATHER,                     /* gathered: cheaper than moving the memory */
        TP_R_ALREADY_TOGETHER,           /* its busy threads share the best node already */
        TP_R_MEMORY_FOLLOWS,             /* together on the best node, most memory elsewhere:
                                          * held there while it follows */
        TP_R_LOST_ROOM,                  /* its node can no longer take them (load, affinity) */
        TP_R_STILL_BEST,                 /* placed, and no node is enough better to move to */
        TP_R_NOWHERE_TOGETHER,           /* no node allows all its busy threads */
        _TP_REASON_MAX,
};

struct tp_proc {
        /* in */
        pid_t pid;
        const struct tp_thread *threads;
        size_t n_threads;
        uint64_t bytes_on[TP_MAX_NODES];      /* resident bytes per node index */
        uint64_t stuck_away[TP_MAX_NODES];    /* bytes NOT on node n that cannot move to n
                                               * (policy excludes n, locked, interleaved,
                                               * shared) */
        int placed;                           /* node index it is placed on now, -1 none */
        uint64_t placed_at_ms;                /* when it was placed there */
        /* out */
        enum tp_action action;
        int node;                  /* PLACE, KEEP: the node; RELEASE: the node released;
                                    * NONE with ALREADY_TOGETHER: where the threads are; else -1 */
        enum tp_reason reason;
        unsigned threads_to_move;  /* busy threads not on node */
        uint64_t bytes_to_copy;    /* movable bytes not on node (memory follows to it) */
        unsigned n_busy;           /* busy threads (not app-pinned, busy >= busy_min) */
        double score;              /* the chosen node's cost, bytes-copied equivalent */
        double score_baseline;     /* leaving the threads where they are */
        /* the round's own (scratch): never read by the caller */
        size_t order_next_;
};

struct tp_params {
        uint64_t hold_ms;          /* a placement holds at least this long */
        uint64_t thread_cost_bytes;/* moving one thread, in bytes-copied equivalent */
        double busy_min;           /* a thread below this CPU fraction is not busy */
        double remote_weight;      /* a remote byte left for good weighs this many copied bytes */
        double switch_margin;      /* a placed process moves only to a node scoring below
                                    * switch_margin times its own */
};

/* hold_ms 60 s, thread_cost_bytes 16 MiB, busy_min 0.3, remote_weight 4,
 * switch_margin 0.5 (why: thread-place.c, docs/RULES.md). */
void thread_place_params_default(struct tp_params *p);

/* Decides every process of procs (outputs written in each), against nodes (by topology
 * index, n_nodes <= TP_MAX_NODES) at now_ms. */
void thread_place_round(const struct tp_node *nodes, size_t n_nodes, struct tp_proc *procs, size_t n_procs,
                        const struct tp_params *p, uint64_t now_ms);

/* Writes into pr an outcome decided for a larger whole that pr is part of
 * (group-place.h): action, node and reason as given; its own n_busy, and on node its
 * threads_to_move and bytes_to_copy. */
void thread_place_set(struct tp_proc *pr, size_t n_nodes, const struct tp_params *p, enum tp_action a, int node,
                      enum tp_reason r);

/* The nodes of t (at most TP_MAX_NODES) into nodes, by topology index: id, online CPUs,
 * slow (a lower tier, or no online CPU); load_others 0. Returns how many. */
size_t thread_place_nodes(const struct topology *t, struct tp_node *nodes);

/* load_others of each node: busy_by_node[i] (thread_load_cpu_read(), CPUs' worth) minus the busy
 * of every thread of procs measured on node i, at least 0. Both over the same window:
 * read the threads and /proc/stat in the same tick. */
void thread_place_load_others(struct tp_node *nodes, size_t n_nodes, const double *busy_by_node,
                              const struct tp_proc *procs, size_t n_procs);

/* allowed_nodes and cpus_on of th from the CPUs it may run on (its affinity, within its
 * cpuset): the online CPUs of cpus on each node of t with CPUs. */
void thread_place_thread_cpus(struct tp_thread *th, const struct topology *t, const nb_cpumask *cpus);

/* Short kebab-case names ("gather", "no-room"), for explain and list; "?" out of range. */
const char *thread_place_reason_name(enum tp_reason r);
const char *thread_place_action_name(enum tp_action a);
