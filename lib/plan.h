/* SPDX-License-Identifier: GPL-2.0-or-later */
/* decide: memory follows CPU. A pure function from (topology, one process's view,
 * where its threads ran, parameters, history, now) to a plan: which VMAs' pages go
 * to which node. No I/O, no clock: tested with stored inputs and expected plans.
 *
 * The rule, per process:
 *   1. The hot node H is the node with the largest share of the window's CPU time; it
 *      must have at least min_cpu_share_pct of it (hysteresis), or nothing moves.
 *   2. Per VMA, the allowed set (policy.h; for memory without a VMA policy, that of
 *      every thread's policy: thread-policy.h). The target T is H if allowed, else the
 *      allowed node nearest to H (distance table; ties: lower id).
 *   3. Pages on a node farther from H than T is are misplaced, except on a node where
 *      the process spends at least keep_node_share_pct of its CPU time (its threads
 *      there may be the ones using them: one process's CPU time cannot say which
 *      thread uses which page), or did in the window before and still has a thread
 *      confined to (keep_before: a pinned thread that paused for a window has not
 *      left its memory); pages outside the allowed set are always misplaced.
 *      Gain = pages x (distance saved).
 *   4. Left alone: interleaved and (unless configured) preferred VMAs, VMAs with
 *      shared pages (mapmax > 1) but a group's shared object (plan_input.share, with
 *      move_shared: it goes to the group's target), locked VMAs (mlock, unless
 *      configured), VMAs moved to another node less
 *      than cooldown_ms ago (ping-pong; not when it follows threads the daemon placed
 *      on the target after that move), a process with less misplaced memory than
 *      min_misplaced_kb, and anything that would take a target node below its
 *      free-memory floor (hugetlb pages: more than its free huge pages of their size).
 *   5. Moves are ordered by gain, largest first, and capped by max_bytes.
 *   6. Memory tiers (topology.h: t->slow): a slow node is never a target, and pages on
 *      one within the VMA's own allowed set are not misplaced (REASON_LOWER_TIER): the
 *      kernel demotes cold pages there, and pulling them back by where the threads run
 *      would undo that and fill the fast nodes. Pages outside the allowed set still
 *      move.
 *   7. Promotion: hot pages on a slow node, seen in page samples, move up within a
 *      rate and above a floor on the fast node (plan_pages(), below).
 *   8. The exchange: promotions held at a fast node's floor have as many bytes of the
 *      process's cold memory there demoted (plan_exchange(), below); the room it made
 *      takes them at the next tick. */
#pragma once
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "damon-pages.h"
#include "numa_maps.h"
#include "thread-policy.h"
#include "topology.h"

/* Why a process (or a VMA) is not being moved: what `explain` reports. */
enum plan_reason {
        REASON_NONE,              /* moves planned, or nothing misplaced */
        REASON_NO_CPU_TIME,       /* the threads did not run in the window */
        REASON_CPU_SPREAD,        /* no node has min_cpu_share_pct of the CPU time */
        REASON_LOCAL,             /* everything is already on the best allowed node */
        REASON_BELOW_THRESHOLD,   /* misplaced memory below min_misplaced_kb */
        REASON_POLICY,            /* interleave/prefer/truncated policy: left alone */
        REASON_NO_ALLOWED_NODE,   /* the allowed set has no node with memory */
        REASON_SHARED,            /* shared pages (mapmax > 1) */
        REASON_COOLDOWN,          /* moved to another node recently */
        REASON_TARGET_FULL,       /* the target node is at its free-memory floor */
        REASON_TOO_SMALL,         /* resident memory below min_rss (set by the manager) */
        REASON_SPARSE,            /* a huge mapping with little in it (PLAN_SPARSE_*) */
        REASON_THREAD_POLICY,     /* a thread's own policy (interleave, prefer, unknown): left alone */
        REASON_MLOCKED,           /* locked VMA (mlock), unless move_mlocked */
        REASON_HUGE_POOL,         /* hugetlb: no free huge page of that size on the target */
        REASON_SHARED_UNVERIFIED, /* shared pages with move_shared: their other mappers unknown */
        REASON_KERNEL_BALANCED,   /* "balancing" policy, kernel.numa_balancing on: the kernel's */
        REASON_SOURCE_IN_USE,     /* on a node with keep_node_share_pct of the CPU time */
        REASON_QUARANTINED,       /* a read of its files or memory overran its deadline (set by the manager) */
        REASON_READ_DEFERRED,     /* not read: its owner has a read that overran, or no reader free */
        REASON_LOWER_TIER,        /* on a slow node (a lower memory tier): not misplaced for being there */
        REASON_PROMOTE_RATE,      /* hot pages in a lower tier: the promotion budget is spent (rule 7) */
        REASON_PROMOTE_FLOOR,     /* hot pages in a lower tier: the fast node is at its promotion floor */
        _REASON_MAX,
};

/* A VMA of at least PLAN_SPARSE_MIN_MAPPED bytes with less than 1/PLAN_SPARSE_RATIO of
 * it resident is not planned (REASON_SPARSE). move_pages(2) takes an address per page and
 * the kernel does not say where a VMA's pages are (on 6.1 nothing short of walking it
 * does), so the executor walks the whole range, one query per 2 MiB: a 16 TiB
 * reservation holding a few MiB (an ASan shadow, a JVM or Go heap reservation) would
 * keep a service CPU busy for minutes to move almost nothing. 64 GiB is 32,768 queries. */
#define PLAN_SPARSE_MIN_MAPPED (64ULL << 30)
#define PLAN_SPARSE_RATIO 64

struct plan_params {
        unsigned min_cpu_share_pct;
        unsigned keep_node_share_pct; /* 0 or 100: only the hot node keeps its pages */
        uint64_t cooldown_ms;
        unsigned free_floor_pct;
        bool move_shared;             /* plan a group's shared objects (plan_input.share) */
        bool move_preferred;
        bool kernel_balances;         /* kernel.numa_balancing is on now (policy.h) */
        bool move_mlocked;
        uint64_t min_misplaced_kb;
        uint64_t max_bytes;           /* per process per tick, 0 = no cap */
        unsigned promote_floor_pct;   /* a promotion leaves this share of the fast node free
                                       * (free_floor_pct when higher) */
        uint64_t *promote_left;       /* bytes promotions may still take, shared by the scans
                                       * of a tick, refilled by the daemon (move-budget.h);
                                       * NULL: no bound */
        uint64_t *exchange_credit;    /* per topology index: bytes the exchange demoted off
                                       * that node, which promotions there may take below
                                       * its floors (rule 8; move-budget.h); NULL: none */
        uint64_t *exchange_demand;    /* per topology index: bytes other processes'
                                       * promotions wait for at that fast node's floor
                                       * (their exchange_unserved, posted the tick before),
                                       * which this process's cold memory there may serve;
                                       * lowered by what plan_exchange() demotes. NULL: none */
        uint64_t *exchange_give;      /* per topology index: at most this much of the process's
                                       * cold memory goes for exchange_demand (its cgroup's
                                       * bytes above its share of the node: fast-share.h),
                                       * lowered likewise. NULL: no share, no limit */
        /* The bytes of [start, end) on node now, for the exchange's demotions: a cold
         * region's pages may be on a slow node already, and planned as if they were not
         * they would count as served (daemon/page-where.h: a bounded move_pages query;
         * 0 once its bound is spent). NULL: every byte of the range is taken to be. */
        uint64_t (*bytes_on)(void *userdata, uint64_t start, uint64_t end, unsigned node);
        void *bytes_on_userdata;
};

/* A range the daemon moved across tiers, and when (rule 8): within cooldown_ms the
 * exchange demotes nothing of it either way, and promotion takes nothing of a demoted
 * one back. A promotion job's ranges name its spares too (pages not moved): they may
 * not keep its other hot pages from being promoted, so only down ranges do. */
struct tier_move {
        uint64_t start, end;
        uint64_t at_ms;
        bool down;                    /* demoted: not promoted back within cooldown_ms */
};


/* A VMA with shared pages that a group of processes decides as one (daemon/share-groups.h):
 * the node its pages go to, which every member's cpuset and policies allow (-1: no
 * group moves it). The executor moves a page of it only when every process that maps
 * the page is a member (daemon/share-check.h). */
struct plan_share {
        int target;
};

/* The last move of a VMA, kept by the caller between ticks. */
struct plan_history {
        uint64_t start;
        int target;
        uint64_t when_ms;
};

struct plan_input {
        const struct numa_maps *maps;
        const uint64_t *vma_end;      /* end of each VMA (from /proc/PID/maps), 0 = unknown */
        nb_nodemask mems_allowed;     /* the cpuset's nodes */
        const uint64_t *cpu_ns;       /* CPU time in the window, by topology node index */
        const struct plan_history *history;
        size_t n_history;
        uint64_t now_ms;
        const struct thread_policies *threads; /* its threads' policies, NULL = not read */
        const bool *vma_mlocked;      /* per VMA of maps: locked (smaps.h), NULL = none */
        const struct plan_share *share; /* per VMA of maps: its group's decision, NULL = none
                                       * (used with move_shared only) */
        nb_nodemask keep_before;      /* nodes whose pages stay though the window's CPU time
                                       * does not say so (rule 3; the caller's: busy in the
                                       * window before, a thread still confined there) */
        /* Where the daemon placed its threads (mode place), and when: memory following
         * them there is not held by a cooldown from a move before the placement. */
        bool placed;
        int placed_node;              /* node id */
        uint64_t placed_at_ms;
        /* Rule 8, the exchange: its memory not accessed for cold_age_ms (DAMON's regions,
         * sorted, disjoint), and its recent moves across tiers (any order). */
        const struct damon_range *cold;
        size_t n_cold;
        const struct tier_move *tier_recent;
        size_t n_tier_recent;
};

struct plan_move {
        size_t vma;                   /* index in maps->vmas */
        uint64_t start, end, page_size;
        int target;
        uint64_t bytes;               /* misplaced bytes expected to move */
        uint64_t gain;                /* bytes x distance saved, for ordering */
        bool thread_policy;           /* the VMA shows the main thread's policy: taken to have
                                       * no VMA policy, so its allowed set is that of the
                                       * threads' policies (thread_policy_allow() says
                                       * whether it still is, before moving) */
        bool demote;                  /* the exchange (rule 8): cold pages off the fast node
                                       * from to a slow node, at most bytes of them; keep
                                       * holds every other node */
        int from;                     /* a demotion's fast node: the process's own
                                       * exchange_node, or another's demand (credited to
                                       * that node's promotions when it moves) */
        bool exchanged;               /* a promotion into the room the exchange made below the
                                       * floors (rule 8, exchange_credit): the executor's
                                       * free-memory floor does not hold it back, the room
                                       * being there does */
        bool promote;                 /* page-level, in a VMA with pages on a slow node: a
                                       * promotion (rule 7), charged to promote_left; bytes
                                       * may be less than end - start (spares: pages over
                                       * the budget, moved in place of counted ones found
                                       * on the target already) */
        bool hugetlb;                 /* hugetlb pages of page_size: they take the target's
                                       * free huge pages, not its MemFree */
        bool shared;                  /* a group's shared object (plan_input.share): to the
                                       * group's target, moved page by page after the check
                                       * that only members map each page */
        nb_nodemask keep;             /* pages on these nodes stay: keep_nodes and the slow
                                       * nodes within the VMA's allowed set (outside it,
                                       * pages always move) */
};

struct plan {
        struct plan_move *moves;      /* ordered by gain, largest first */
        size_t n_moves;
        uint64_t bytes;               /* total planned */
        uint64_t promote_bytes;       /* of which promotions (plan_move.promote) */
        int hot_node;                 /* -1 if none */
        uint64_t exchange_want;       /* promotions held at the floor of exchange_node (bytes):
                                       * what the exchange may demote to make room */
        int exchange_node;            /* node id, -1: none */
        uint64_t exchange_unserved;   /* of exchange_want, what plan_exchange() found no cold
                                       * memory of this process for: other processes' may
                                       * serve it next tick (plan_params.exchange_demand) */
        uint64_t demote_bytes;        /* of bytes, demotions (plan_move.demote) */
        int full_target;              /* the first target whose base-page moves were held back
                                       * at its free-memory floor, -1: none (the manager
                                       * scans the process again as soon as it has room) */
        nb_nodemask keep_nodes;       /* nodes whose pages stay (keep_node_share_pct): the
                                       * moves take pages only from the other nodes */
        enum plan_reason reason;      /* why nothing (or not everything) is planned */
        uint64_t skipped_bytes[_REASON_MAX]; /* misplaced bytes left alone, by reason */
};

/* reserved_bytes (plan_reserved_len() entries): per topology node index, bytes
 * already planned to that node by earlier processes in this tick (the floor is
 * shared), then per hugetlb pool (topology_hugepages()'s slot) the bytes already
 * planned into it; updated with this plan. */
size_t plan_reserved_len(const struct topology *t);
int plan_decide(const struct topology *t, const struct plan_input *in, const struct plan_params *p,
                uint64_t *reserved_bytes, struct plan *ret);
void plan_done(struct plan *p);
/* Drops the moves of pl whose target is not target (a node id): a process whose threads
 * were just placed on target has its memory follow them there, never elsewhere (the
 * plan was made from where they ran before). Returns the bytes dropped. */
uint64_t plan_keep_target(struct plan *pl, int target);

/* Bytes of base pages node may take before it reaches its free-memory floor (0 at or
 * below it), from the topology's last free-memory reading. */
/* Per topology index n, the bytes not on n that no move could bring to n (policy,
 * interleave, sharing, locking, a slow node): what placing the threads on n leaves
 * remote. ret has t->n_nodes entries. */
void plan_stuck_away(const struct topology *t, const struct plan_input *in, const struct plan_params *p,
                     uint64_t *ret);
uint64_t plan_node_room(const struct topology *t, int node, const struct plan_params *p);
/* Whether VMA i's pages may move at all (policy.h, thread-policy.h), with the nodes they
 * may go to in *ret: what a process lets a shared object's pages do (share-groups.h). */
bool plan_share_allowed(const struct topology *t, const struct plan_input *in, const struct plan_params *p, size_t i,
                        nb_nodemask *ret);

/* Rule 7, promotion: memory on a slow node moves up only on evidence that it is in use,
 * which where the threads run is not (rule 6) and page samples are. A page-level move
 * (plan_pages) in a VMA with pages on a slow node is a promotion: numa_maps says where
 * a VMA's pages are per node, not per page, so any sampled page of such a VMA may be
 * the slow one. A promotion is bounded by
 *   - the promotion budget (*p->promote_left, bytes, taken as planned): the rate, so
 *     that the daemon never copies up faster than the operator allows, whatever the
 *     samples say (REASON_PROMOTE_RATE). Pages over it are still named in the moves
 *     (spares, no bytes of their own) after a counted page to the same node: the
 *     executor moves at most a job's bytes of pages found elsewhere, so the budget is
 *     not spent on pages an earlier tick promoted and the samples show again;
 *   - the fast node's promotion floor (promote_floor_pct of its memory free, or
 *     free_floor_pct if higher): filling it would have the kernel reclaim, and so
 *     demote, what was just promoted (REASON_PROMOTE_FLOOR).
 * Cold memory on a slow node (no page seen twice from one node) never moves, and
 * demotion is the kernel's.
 *
 * The budget is refilled once a tick and settled with what moved by the daemon's
 * budgets of moving (daemon/move-budget.h, struct move_budget_promote). */

/* Rule 8, the exchange: promotions held at a fast node's floor (plan_pages() counts
 * them in pl->exchange_want) make room by demoting as many bytes of the same process's
 * cold memory on that node, and what it has not (pl->exchange_unserved) of other
 * opted-in processes' at the next tick (p->exchange_demand, served after its own):
 * pages within in->cold (not accessed for cold_age_ms), not
 * sampled hot (d), not moved across tiers within cooldown_ms (in->tier_recent), in a
 * VMA whose policy lets them go to a slow node (the nearest to the fast node), not
 * shared, locked or hugetlb. Appended to pl as demote moves; the executor moves at most
 * each move's bytes of the pages it finds on the fast node. Those bytes, once moved,
 * become exchange credit (plan_params.exchange_credit): the promotions of the next
 * tick may take them below the floors. Pure. */
struct page_decision;
int plan_exchange(const struct topology *t, const struct plan_input *in, const struct plan_params *p,
                  const struct page_decision *d, struct plan *pl);

/* Page-level moves from sampled memory accesses (lib/page-agg's two-sample rule:
 * d->moves are pages seen only from one node, at least twice). Each such page moves to
 * that node when, under the same rules as plan_decide():
 *   - the node is not slow (REASON_LOWER_TIER);
 *   - it lies in a VMA of in->maps (in->vma_end known) whose policy is movable
 *     (policy.h) and whose allowed set contains the node: never outside it;
 *   - the VMA has no shared pages (mapmax > 1);
 *   - the VMA is not locked, unless move_mlocked;
 *   - the VMA is not moved whole by vma_plan this tick (its target wins);
 *   - the node has room above its free-memory floor (reserved_bytes, updated);
 *   - a promotion (rule 7): within the budget and above the promotion floor.
 * A hugetlb page moves whole (its address aligned to its size). Consecutive pages to
 * one node are merged into one move; moves are in address order, capped by
 * p->max_bytes less what vma_plan takes. skipped_bytes counts what was left, by reason.
 * Pure, like plan_decide(). */
int plan_pages(const struct topology *t, const struct plan_input *in, const struct plan_params *p,
               const struct page_decision *d, const struct plan *vma_plan, uint64_t *reserved_bytes,
               struct plan *ret);
/* policy_allowed_nodes()'s rules for these parameters (policy.h). */
unsigned plan_policy_rules(const struct plan_params *p);
const char *plan_reason_name(enum plan_reason r);
const char *plan_reason_text(enum plan_reason r);

/* The nodes (ids) with at least pct percent of cpu_ns (by topology node index; empty
 * when there is no CPU time, or pct is 0 or at least 100): rule 3's busy nodes. */
nb_nodemask plan_busy_nodes(const struct topology *t, const uint64_t *cpu_ns, unsigned pct);
