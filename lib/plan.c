/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include "locality.h"
#include "page-agg.h"
#include "pagesize.h"
#include "plan.h"
#include "policy.h"

static const char *const reason_names[_REASON_MAX] = {
        [REASON_NONE] = "none",
        [REASON_NO_CPU_TIME] = "no-cpu-time",
        [REASON_CPU_SPREAD] = "cpu-spread",
        [REASON_LOCAL] = "local",
        [REASON_BELOW_THRESHOLD] = "below-threshold",
        [REASON_POLICY] = "policy",
        [REASON_NO_ALLOWED_NODE] = "no-allowed-node",
        [REASON_SHARED] = "shared",
        [REASON_COOLDOWN] = "cooldown",
        [REASON_TARGET_FULL] = "target-full",
        [REASON_TOO_SMALL] = "too-small",
        [REASON_SPARSE] = "sparse",
        [REASON_THREAD_POLICY] = "thread-policy",
        [REASON_MLOCKED] = "mlocked",
        [REASON_HUGE_POOL] = "hugetlb-pool",
        [REASON_SHARED_UNVERIFIED] = "shared-unverified",
        [REASON_KERNEL_BALANCED] = "kernel-balanced",
        [REASON_SOURCE_IN_USE] = "source-in-use",
        [REASON_QUARANTINED] = "quarantined",
        [REASON_READ_DEFERRED] = "read-deferred",
        [REASON_LOWER_TIER] = "lower-tier",
        [REASON_PROMOTE_RATE] = "promote-rate",
        [REASON_PROMOTE_FLOOR] = "promote-floor",
};

static const char *const reason_texts[_REASON_MAX] = {
        [REASON_NONE] = "moves planned",
        [REASON_NO_CPU_TIME] = "its threads did not run in the last window",
        [REASON_CPU_SPREAD] = "no node has enough of its CPU time (min_cpu_share_pct)",
        [REASON_LOCAL] = "its memory is already on the best allowed node",
        [REASON_BELOW_THRESHOLD] = "less misplaced memory than min_misplaced",
        [REASON_POLICY] = "its memory policy asks to be left alone (interleave, prefer, or a cut node list)",
        [REASON_NO_ALLOWED_NODE] = "its allowed nodes have no memory",
        [REASON_SHARED] = "the misplaced pages are shared with other processes (move_shared=no)",
        [REASON_COOLDOWN] = "it was moved to another node recently (cooldown_ms)",
        [REASON_TARGET_FULL] = "the target node is at its free-memory floor (free_floor_pct)",
        [REASON_TOO_SMALL] = "its resident memory is below min_rss",
        [REASON_SPARSE] = "the misplaced pages sit in huge mappings that are mostly empty (at least 64 GiB, under 1/64 resident)",
        [REASON_THREAD_POLICY] = "a thread's own memory policy (set_mempolicy: interleave, prefer, none in common with the "
                                 "others, or not readable) covers memory without a VMA policy",
        [REASON_MLOCKED] = "the misplaced pages are locked in memory (mlock) (move_mlocked=no)",
        [REASON_HUGE_POOL] = "the target node has no free huge page of their size (hugetlb pool)",
        [REASON_SHARED_UNVERIFIED] = "the misplaced pages are shared with other processes, and no group of "
                                     "opted-in processes of one owner that all allow the target maps them "
                                     "(docs/RULES.md, \"Shared pages\")",
        [REASON_KERNEL_BALANCED] = "its memory policy asks the kernel's NUMA balancing to balance it "
                                   "(MPOL_F_NUMA_BALANCING), and kernel.numa_balancing is on",
        [REASON_SOURCE_IN_USE] = "the pages are on a node where its threads also run (keep_node_share_pct): "
                                 "they may be the ones using them",
        [REASON_QUARANTINED] = "a read of its /proc files or of its memory did not finish within its deadline: "
                               "not read again for 10 minutes, nor any process of its owner while that read lasts",
        [REASON_READ_DEFERRED] = "not read this time: a read of another process of its owner has not returned, "
                                 "or every reader thread is busy",
        [REASON_LOWER_TIER] = "the pages are on a slower memory tier (slow_nodes: memory without CPUs, CXL, "
                              "persistent memory), where the kernel may have demoted them: not misplaced for being "
                              "there, and never a target",
        [REASON_PROMOTE_RATE] = "hot pages on a slower memory tier wait for the promotion budget "
                                "(promote_rate_limit_mb_s)",
        [REASON_PROMOTE_FLOOR] = "hot pages on a slower memory tier stay: the fast node they would go to is at its "
                                 "promotion floor (promote_free_floor_pct), where the kernel would soon demote them "
                                 "again",
};

const char *plan_reason_name(enum plan_reason r) {
        return r < _REASON_MAX ? reason_names[r] : "unknown";
}

const char *plan_reason_text(enum plan_reason r) {
        return r < _REASON_MAX ? reason_texts[r] : "unknown";
}

unsigned plan_policy_rules(const struct plan_params *p) {
        return (p->move_preferred ? POLICY_MOVE_PREFERRED : 0) | (p->kernel_balances ? POLICY_KERNEL_BALANCES : 0);
}

static uint64_t sat_add(uint64_t a, uint64_t b) { return a > UINT64_MAX - b ? UINT64_MAX : a + b; }
static uint64_t sat_mul(uint64_t a, uint64_t b) { return b && a > UINT64_MAX / b ? UINT64_MAX : a * b; }

/* The allowed node nearest to hot (ties: lower id), or -1; with fast_only, not a slow
 * one (rule 6). */
static int nearest_allowed(const struct topology *t, int hot, const nb_nodemask *allowed, bool fast_only) {
        int best = -1, best_d = 0;

        if (nodemask_test(allowed, (unsigned) hot) && !(fast_only && topology_node_slow(t, (unsigned) hot)))
                return hot;
        NODEMASK_FOREACH(n, allowed) {
                int d = topology_distance(t, (unsigned) hot, (unsigned) n);
                if (d < 0 || (fast_only && topology_node_slow(t, (unsigned) n)))
                        continue;
                if (best < 0 || d < best_d) {
                        best = n;
                        best_d = d;
                }
        }
        return best;
}

static const struct plan_history *find_history(const struct plan_input *in, uint64_t start) {
        for (size_t i = 0; i < in->n_history; i++)
                if (in->history[i].start == start)
                        return &in->history[i];
        return NULL;
}

/* Pages other processes map too (page cache, shmem, copy-on-write after fork, KSM)
 * could be pulled out of *their* cpuset or policy: the kernel would move them with
 * MPOL_MF_MOVE_ALL without asking. Only a group's shared object is planned (in->share,
 * daemon/share-groups.h), and the executor moves a page of it only when every process
 * that maps it is a member (daemon/share-check.h); any other shared VMA stays
 * (docs/RULES.md, "Shared pages"). */
static enum plan_reason shared_reason(const struct plan_params *p) {
        return p->move_shared ? REASON_SHARED_UNVERIFIED : REASON_SHARED;
}

/* VMA i maps an object its group decides (plan_input.share): planned towards the
 * group's target, not this process's hot node. */
static bool group_shared(const struct plan_input *in, const struct plan_params *p, size_t i) {
        return p->move_shared && in->share && in->share[i].target >= 0 && !in->maps->vmas[i].hugetlb;
}

/* Locked memory (mlock) is left where it is: real-time workloads lock it so that
 * nothing touches it, and a migration takes its pages away for the copy. */
static bool vma_locked(const struct plan_input *in, const struct plan_params *p, size_t i) {
        return in->vma_mlocked && in->vma_mlocked[i] && !p->move_mlocked;
}

/* See PLAN_SPARSE_MIN_MAPPED. */
static bool vma_sparse(const struct plan_input *in, size_t i, const struct vma *v) {
        uint64_t mapped;

        if (!in->vma_end || in->vma_end[i] <= v->start)
                return false;
        mapped = in->vma_end[i] - v->start;
        return mapped >= PLAN_SPARSE_MIN_MAPPED && locality_vma_bytes(v, v->pages) < mapped / PLAN_SPARSE_RATIO;
}

static int cmp_gain(const void *a, const void *b) {
        const struct plan_move *x = a, *y = b;
        if (x->gain != y->gain)
                return x->gain > y->gain ? -1 : 1;
        return x->start < y->start ? -1 : x->start > y->start;
}

size_t plan_reserved_len(const struct topology *t) {
        return (size_t) t->n_nodes + t->n_huge_slots;
}

/* Where the bytes planned to node this tick are counted: its index, or for hugetlb
 * pages of huge_kb (non-zero) its pool's slot after the nodes; -1 if it has none. */
static int reserved_slot(const struct topology *t, unsigned node, uint64_t huge_kb) {
        unsigned slot;

        if (!huge_kb)
                return topology_node_index(t, node);
        if (!topology_hugepages(t, node, huge_kb, &slot))
                return -1;
        return (int) (t->n_nodes + slot);
}

/* Bytes of MemFree above node n's floor (free_floor_pct of its memory). */
static uint64_t above_floor(const struct topo_node *n, const struct plan_params *p) {
        uint64_t free_b = sat_mul(n->mem_free_kb, 1024);
        uint64_t floor_b = sat_mul(n->mem_total_kb, 1024) / 100 * p->free_floor_pct;

        return free_b > floor_b ? free_b - floor_b : 0;
}

/* Bytes the target node can still take this tick: above its MemFree floor, or for
 * hugetlb pages of huge_kb (non-zero) in its free huge pages of that size (a hugetlb
 * move takes one from the target's pool; MemFree says nothing about it). */
static uint64_t room_on(const struct topology *t, int node, uint64_t huge_kb, const struct plan_params *p,
                        const uint64_t *reserved) {
        int idx = topology_node_index(t, (unsigned) node), slot = reserved_slot(t, (unsigned) node, huge_kb);
        uint64_t free_b;

        if (idx < 0 || slot < 0)
                return 0;
        if (huge_kb) {
                free_b = sat_mul(topology_hugepages(t, (unsigned) node, huge_kb, NULL)->free, huge_kb * 1024);
                return free_b > reserved[slot] ? free_b - reserved[slot] : 0;
        }
        free_b = above_floor(&t->nodes[idx], p);
        return free_b > reserved[idx] ? free_b - reserved[idx] : 0;
}

/* The reason a plan gives: none when it moves something; else the largest class of
 * what was left alone, "local" if nothing was. */
static enum plan_reason main_reason(const struct plan *pl) {
        enum plan_reason reason = REASON_LOCAL;
        uint64_t best = 0;

        if (pl->n_moves)
                return REASON_NONE;
        for (int r = 0; r < _REASON_MAX; r++)
                if (pl->skipped_bytes[r] > best) {
                        best = pl->skipped_bytes[r];
                        reason = (enum plan_reason) r;
                }
        return reason;
}

/* Adds bytes to what is left alone for reason r. */
static void skip(struct plan *pl, enum plan_reason r, uint64_t bytes) {
        pl->skipped_bytes[r] = sat_add(pl->skipped_bytes[r], bytes);
}

/* Counts bytes as planned to node this tick (room_on()): its room shrinks. */
static void reserve(const struct topology *t, uint64_t *reserved_bytes, unsigned node, uint64_t huge_kb,
                    uint64_t bytes) {
        int slot = reserved_slot(t, node, huge_kb);

        if (slot >= 0)
                reserved_bytes[slot] = sat_add(reserved_bytes[slot], bytes);
}

/* Why a move does not fit on its target. */
static enum plan_reason full_reason(uint64_t huge_kb) {
        return huge_kb ? REASON_HUGE_POOL : REASON_TARGET_FULL;
}

/* The reason for a policy that is neither movable nor interleaved. */
static enum plan_reason policy_reason(enum policy_verdict verdict) {
        switch (verdict) {
        case POLICY_NO_NODES: return REASON_NO_ALLOWED_NODE;
        case POLICY_THREAD: return REASON_THREAD_POLICY;
        case POLICY_KERNEL_BALANCED: return REASON_KERNEL_BALANCED;
        default: return REASON_POLICY;
        }
}

/* Where v's pages may go (policy.h): *ret_allowed, its policy's allowed set, within
 * every thread's when v shows the main thread's policy (thread-policy.h). *ret_own
 * (may be NULL): the set of the policy v shows; pages outside it are misplaced whatever
 * the distance, while pages outside only a thread's set may have been placed there by
 * another thread's policy: they are not, but nothing moves there either. */
static enum policy_verdict vma_allowed(const struct topology *t, const struct plan_input *in,
                                       const struct plan_params *p, const struct vma *v, nb_nodemask *ret_allowed,
                                       nb_nodemask *ret_own) {
        enum policy_verdict verdict;
        nb_nodemask threads;

        verdict = policy_allowed_nodes(&v->policy, &in->mems_allowed, &t->with_memory, plan_policy_rules(p),
                                       ret_allowed);
        if (ret_own)
                *ret_own = *ret_allowed;
        if (verdict != POLICY_MOVABLE || !thread_policy_govern(in->threads, &v->policy))
                return verdict;
        if (in->threads->unknown)
                return POLICY_THREAD;
        verdict = policy_allowed_nodes_threads(in->threads->policies, in->threads->n_policies, &in->mems_allowed,
                                               &t->with_memory, plan_policy_rules(p), &threads);
        if (verdict != POLICY_MOVABLE)
                return verdict;
        nodemask_and(ret_allowed, ret_allowed, &threads);
        return nodemask_empty(ret_allowed) ? POLICY_THREAD : POLICY_MOVABLE;
}

/* Whether moves of v must be checked against the threads' policies before they run:
 * v may have no VMA policy (it shows the main thread's, or they were not read). */
static bool vma_thread_policy(const struct plan_input *in, const struct vma *v) {
        return !in->threads || thread_policy_govern(in->threads, &v->policy);
}

/* The hot node: the one with the largest share of the window's CPU time (ties: the
 * first in topology order). Returns its id, or -1 and *ret_reason when there is none. */
static int hot_node(const struct topology *t, const struct plan_input *in, const struct plan_params *p,
                    enum plan_reason *ret_reason) {
        uint64_t total_cpu = 0, best_cpu = 0;
        int hot = -1;

        for (unsigned i = 0; i < t->n_nodes; i++) {
                total_cpu = sat_add(total_cpu, in->cpu_ns[i]);
                if (in->cpu_ns[i] > best_cpu) {
                        best_cpu = in->cpu_ns[i];
                        hot = (int) t->nodes[i].id;
                }
        }
        if (total_cpu == 0) {
                *ret_reason = REASON_NO_CPU_TIME;
                return -1;
        }
        /* Hysteresis: a node must clearly dominate, or the pages would chase threads. */
        if ((double) best_cpu * 100.0 < (double) total_cpu * p->min_cpu_share_pct) {
                *ret_reason = REASON_CPU_SPREAD;
                return -1;
        }
        return hot;
}

nb_nodemask plan_busy_nodes(const struct topology *t, const uint64_t *cpu_ns, unsigned pct) {
        uint64_t total_cpu = 0;
        nb_nodemask busy;

        nodemask_zero(&busy);
        if (pct == 0 || pct >= 100)
                return busy;
        for (unsigned i = 0; i < t->n_nodes; i++)
                total_cpu = sat_add(total_cpu, cpu_ns[i]);
        for (unsigned i = 0; total_cpu && i < t->n_nodes; i++)
                if ((double) cpu_ns[i] * 100.0 >= (double) total_cpu * pct)
                        nodemask_set(&busy, t->nodes[i].id);
        return busy;
}

/* The nodes other than hot where the process spent at least keep_node_share_pct of the
 * window's CPU time, and those the caller keeps from the window before: their pages
 * stay (plan.h, rule 3). */
static nb_nodemask keep_nodes(const struct topology *t, const struct plan_input *in, const struct plan_params *p,
                              int hot) {
        nb_nodemask keep = plan_busy_nodes(t, in->cpu_ns, p->keep_node_share_pct);

        if (p->keep_node_share_pct == 0 || p->keep_node_share_pct >= 100)
                return keep;
        nodemask_or(&keep, &keep, &in->keep_before);
        if (hot >= 0)
                nodemask_clear(&keep, (unsigned) hot);
        return keep;
}

/* Whether every node of allowed with a distance is slow: its memory can only be where
 * it is. */
static bool only_slow_allowed(const struct topology *t, const nb_nodemask *allowed) {
        nb_nodemask fast = *allowed;

        NODEMASK_FOREACH(n, allowed)
                if (topology_node_slow(t, (unsigned) n))
                        nodemask_clear(&fast, (unsigned) n);
        return !nodemask_empty(allowed) && nodemask_empty(&fast);
}

/* The node v's pages belong on: the hot node if v's allowed set (*ret_allowed; *ret_own:
 * vma_allowed()) holds it, else the allowed node nearest to it. -1 when v stays where it is: interleaved
 * (spread on purpose: not misplaced, not counted); a policy that asks to be left
 * alone or allows no node (what sits away from the hot node is counted as skipped);
 * no allowed node at a known distance (all of v is counted). */
static int vma_target(const struct topology *t, const struct plan_input *in, const struct plan_params *p,
                      const struct vma *v, struct plan *pl, nb_nodemask *ret_allowed, nb_nodemask *ret_own) {
        unsigned hot = (unsigned) pl->hot_node;
        enum policy_verdict verdict;
        int target;

        verdict = vma_allowed(t, in, p, v, ret_allowed, ret_own);
        if (verdict == POLICY_INTERLEAVED)
                return -1;
        if (verdict != POLICY_MOVABLE) {
                /* Report what sits away from the hot node, but never plan it. */
                skip(pl, policy_reason(verdict), locality_vma_bytes(v, v->pages - numa_maps_vma_pages_on(in->maps, v, hot)));
                return -1;
        }
        target = nearest_allowed(t, pl->hot_node, ret_allowed, true);
        /* A policy that allows only slow nodes: its pages outside them go to the nearest
         * (the policy's, not memory following the CPU); those on them stay. */
        if (target < 0 && only_slow_allowed(t, ret_allowed))
                target = nearest_allowed(t, pl->hot_node, ret_allowed, false);
        if (target < 0)
                skip(pl, REASON_NO_ALLOWED_NODE, locality_vma_bytes(v, v->pages));
        return target;
}

/* v's misplaced bytes: those on a node farther from hot than target is, but for those
 * on keep nodes (*ret_kept) and slow nodes (*ret_slow), and those outside the set of v's
 * policy (own). *ret_gain: their bytes x distance saved. */
static uint64_t misplaced_bytes(const struct topology *t, const struct numa_maps *maps, const struct vma *v,
                                unsigned hot, int target, const nb_nodemask *own, const nb_nodemask *keep,
                                uint64_t *ret_gain, uint64_t *ret_kept, uint64_t *ret_slow) {
        const struct node_pages *np = vma_node_pages(maps, v);
        int dt = topology_distance(t, hot, (unsigned) target);
        uint64_t misplaced = 0, gain = 0, kept = 0, slow = 0;

        for (size_t k = 0; k < v->np_count; k++) {
                int d = topology_distance(t, hot, np[k].node);
                uint64_t b = locality_vma_bytes(v, np[k].pages);
                bool outside = !nodemask_test(own, np[k].node);

                if ((int) np[k].node == target)
                        continue;
                if (!outside && (d < 0 || dt < 0 || d <= dt))
                        continue; /* as close as the target: nothing to gain */
                if (!outside && (topology_node_slow(t, np[k].node) || topology_node_slow(t, (unsigned) target))) {
                        /* A lower tier: not misplaced for being there (rule 6); and only
                         * pages outside the policy go to one. */
                        slow = sat_add(slow, b);
                        continue;
                }
                if (!outside && nodemask_test(keep, np[k].node)) {
                        kept = sat_add(kept, b);
                        continue;
                }
                misplaced = sat_add(misplaced, b);
                /* Pages outside the allowed set move even without a distance gain. */
                gain = sat_add(gain, sat_mul(b, (d > dt && dt >= 0) ? (uint64_t) (d - dt) : 1));
        }
        *ret_gain = gain;
        *ret_kept = kept;
        *ret_slow = slow;
        return misplaced;
}

/* Whether a move to target follows threads the daemon placed there after h's move. */
static bool following_placement(const struct plan_input *in, const struct plan_history *h, int target) {
        return in->placed && in->placed_node == target && h->when_ms <= in->placed_at_ms;
}

/* Why VMA i's misplaced pages stay this tick although they have a target, or
 * REASON_NONE when they may move. */
static enum plan_reason vma_held_back(const struct plan_input *in, const struct plan_params *p, size_t i,
                                      int target) {
        const struct vma *v = &in->maps->vmas[i];
        const struct plan_history *h;

        if (v->mapmax > 1 && !group_shared(in, p, i))
                return shared_reason(p);
        if (vma_locked(in, p, i))
                return REASON_MLOCKED;
        if (vma_sparse(in, i, v))
                return REASON_SPARSE;
        /* Moved to another node moments ago: do not ping-pong. Memory following
         * threads placed after that move is no ping-pong: a placement holds at least
         * place_hold_ms, and without this the memory of a process placed away from
         * where it had just followed its threads stayed remote for a cooldown (perf
         * bench numa's two processes, both moved to node 1 before one was placed on
         * node 0: 1.4% local to the end of the run). */
        h = find_history(in, v->start);
        if (h && h->target != target && in->now_ms - h->when_ms < p->cooldown_ms &&
            !following_placement(in, h, target))
                return REASON_COOLDOWN;
        return REASON_NONE;
}

/* The target of VMA i, an object its group decides: the group's (every member allows
 * it: share-groups.h), if this process's own policy for it allows it too. *ret_own:
 * vma_allowed()'s. -1 (counted as skipped) otherwise. */
static int group_target(const struct topology *t, const struct plan_input *in, const struct plan_params *p,
                        size_t i, struct plan *pl, nb_nodemask *ret_own) {
        const struct vma *v = &in->maps->vmas[i];
        int target = in->share[i].target;
        nb_nodemask allowed;

        if (vma_allowed(t, in, p, v, &allowed, ret_own) == POLICY_MOVABLE && nodemask_test(&allowed, (unsigned) target) &&
            !topology_node_slow(t, (unsigned) target))
                return target;
        skip(pl, shared_reason(p),
             locality_vma_bytes(v, v->pages - numa_maps_vma_pages_on(in->maps, v, (unsigned) target)));
        return -1;
}

/* VMA i's move towards pl->hot_node (a group's object: towards the group's target), if
 * it has misplaced pages that may move now. Returns true with *ret set; what may not
 * move is counted in pl->skipped_bytes. */
static bool vma_candidate(const struct topology *t, const struct plan_input *in, const struct plan_params *p,
                          size_t i, struct plan *pl, struct plan_move *ret) {
        const struct vma *v = &in->maps->vmas[i];
        uint64_t misplaced, gain, kept, slow;
        enum plan_reason held;
        nb_nodemask allowed, own, keep, none = {};
        bool shared = v->mapmax > 1 && group_shared(in, p, i);
        int target;

        if (v->pages == 0)
                return false;
        target = shared ? group_target(t, in, p, i, pl, &own) : vma_target(t, in, p, v, pl, &allowed, &own);
        if (target < 0)
                return false;
        /* A group's object: measured from its target, no node kept (the group's threads
         * are elsewhere than this process's). */
        misplaced = misplaced_bytes(t, in->maps, v, shared ? (unsigned) target : (unsigned) pl->hot_node, target,
                                    &own, shared ? &none : &pl->keep_nodes, &gain, &kept, &slow);
        if (kept)
                skip(pl, REASON_SOURCE_IN_USE, kept);
        if (slow)
                skip(pl, REASON_LOWER_TIER, slow);
        if (misplaced == 0)
                return false;
        held = vma_held_back(in, p, i, target);
        if (held != REASON_NONE) {
                skip(pl, held, misplaced);
                return false;
        }
        *ret = (struct plan_move) {
                .vma = i,
                .start = v->start,
                .end = in->vma_end ? in->vma_end[i] : 0,
                .page_size = v->page_size_kb * 1024,
                .target = target,
                .bytes = misplaced,
                .gain = gain,
                .thread_policy = vma_thread_policy(in, v),
                .hugetlb = v->hugetlb,
                .shared = shared,
        };
        /* Within v's own allowed set only: pages outside it move from any node. Pages
         * on slow nodes stay too (rule 6): the executor moves what is elsewhere. */
        nodemask_or(&keep, shared ? &none : &pl->keep_nodes, &t->slow);
        nodemask_and(&keep, &keep, &own);
        ret->keep = keep;
        return true;
}

/* bytes bound for target stay where they are: the target is at its floor (or, for
 * hugetlb pages, out of free huge pages). */
static void held_at_floor(struct plan *pl, int target, uint64_t huge_kb, uint64_t bytes) {
        skip(pl, full_reason(huge_kb), bytes);
        if (!huge_kb && pl->full_target < 0)
                pl->full_target = target;
}

/* Takes the candidates, in their order, into pl->moves as far as the cap and each
 * target's room above its floor (reserved_bytes, updated) allow. */
static int take_moves(const struct topology *t, const struct plan_params *p, const struct plan_move *cand,
                      size_t n_cand, uint64_t *reserved_bytes, struct plan *pl) {
        uint64_t cap = p->max_bytes ? p->max_bytes : UINT64_MAX;

        pl->moves = calloc(n_cand ? n_cand : 1, sizeof(*pl->moves));
        if (!pl->moves)
                return -ENOMEM;
        for (size_t i = 0; i < n_cand && pl->bytes < cap; i++) {
                struct plan_move m = cand[i];
                uint64_t huge_kb = m.hugetlb ? m.page_size / 1024 : 0;
                uint64_t room = room_on(t, m.target, huge_kb, p, reserved_bytes);

                if (m.end <= m.start)
                        continue; /* the VMA changed between numa_maps and maps: next tick */
                if (room < m.page_size) {
                        held_at_floor(pl, m.target, huge_kb, m.bytes);
                        continue;
                }
                /* A move may be partial (room, cap): the executor stops after that many
                 * pages and the next tick goes on. */
                if (m.bytes > room) {
                        held_at_floor(pl, m.target, huge_kb, m.bytes - room);
                        m.bytes = room;
                }
                if (m.bytes > cap - pl->bytes)
                        m.bytes = cap - pl->bytes;
                reserve(t, reserved_bytes, (unsigned) m.target, huge_kb, m.bytes);
                pl->bytes = sat_add(pl->bytes, m.bytes);
                pl->moves[pl->n_moves++] = m;
        }
        return 0;
}

int plan_decide(const struct topology *t, const struct plan_input *in, const struct plan_params *p,
                uint64_t *reserved_bytes, struct plan *ret) {
        struct plan pl = { .hot_node = -1, .full_target = -1, .exchange_node = -1 };
        _cleanup_free_ struct plan_move *cand = NULL;
        uint64_t misplaced_total = 0;
        size_t n_cand = 0;
        int r;

        pl.hot_node = hot_node(t, in, p, &pl.reason);
        if (pl.hot_node < 0) {
                *ret = pl;
                return 0;
        }
        pl.keep_nodes = keep_nodes(t, in, p, pl.hot_node);

        cand = calloc(in->maps->n_vmas ? in->maps->n_vmas : 1, sizeof(*cand));
        if (!cand)
                return -ENOMEM;
        for (size_t i = 0; i < in->maps->n_vmas; i++)
                if (vma_candidate(t, in, p, i, &pl, &cand[n_cand])) {
                        misplaced_total = sat_add(misplaced_total, cand[n_cand].bytes);
                        n_cand++;
                }
        if (n_cand > 0 && misplaced_total < sat_mul(p->min_misplaced_kb, 1024)) {
                pl.skipped_bytes[REASON_BELOW_THRESHOLD] = misplaced_total;
                n_cand = 0;
        }

        qsort(cand, n_cand, sizeof(*cand), cmp_gain);
        r = take_moves(t, p, cand, n_cand, reserved_bytes, &pl);
        if (r < 0)
                return r;
        pl.reason = main_reason(&pl);
        *ret = pl;
        return 0;
}

/* For the thread placement (lib/thread-place.h): per topology index n, the bytes of
 * the process NOT on node n that could not be brought to n: their VMA's policy does
 * not allow n (a bind, the cpuset, a thread's policy), or the VMA does not move at all
 * (interleaved, shared by several processes, locked, a slow node's pages, which only a
 * promotion moves). Placing the threads on n leaves exactly these bytes remote. */
void plan_stuck_away(const struct topology *t, const struct plan_input *in, const struct plan_params *p,
                     uint64_t *ret) {
        for (unsigned n = 0; n < t->n_nodes; n++)
                ret[n] = 0;
        for (size_t i = 0; i < in->maps->n_vmas; i++) {
                const struct vma *v = &in->maps->vmas[i];
                const struct node_pages *np = vma_node_pages(in->maps, v);
                nb_nodemask allowed;
                bool fixed = vma_allowed(t, in, p, v, &allowed, NULL) != POLICY_MOVABLE ||
                             v->mapmax > 1 || vma_locked(in, p, i);

                for (unsigned n = 0; n < t->n_nodes; n++) {
                        unsigned id = t->nodes[n].id;
                        bool may_come = !fixed && nodemask_test(&allowed, id);

                        for (size_t k = 0; k < v->np_count; k++)
                                if (np[k].node != id && (!may_come || topology_node_slow(t, np[k].node)))
                                        ret[n] = sat_add(ret[n], locality_vma_bytes(v, np[k].pages));
                }
        }
}

bool plan_share_allowed(const struct topology *t, const struct plan_input *in, const struct plan_params *p, size_t i,
                        nb_nodemask *ret) {
        return vma_allowed(t, in, p, &in->maps->vmas[i], ret, NULL) == POLICY_MOVABLE;
}

uint64_t plan_node_room(const struct topology *t, int node, const struct plan_params *p) {
        int idx = node >= 0 ? topology_node_index(t, (unsigned) node) : -1;

        return idx < 0 ? 0 : above_floor(&t->nodes[idx], p);
}

uint64_t plan_keep_target(struct plan *pl, int target) {
        uint64_t dropped = 0;
        size_t k = 0;

        for (size_t i = 0; i < pl->n_moves; i++) {
                if (pl->moves[i].target == target) {
                        pl->moves[k++] = pl->moves[i];
                        continue;
                }
                dropped += pl->moves[i].bytes;
                if (pl->moves[i].promote)
                        pl->promote_bytes -= pl->moves[i].bytes < pl->promote_bytes ? pl->moves[i].bytes :
                                                                                    pl->promote_bytes;
        }
        pl->n_moves = k;
        pl->bytes = dropped < pl->bytes ? pl->bytes - dropped : 0;
        return dropped;
}

void plan_done(struct plan *p) {
        if (!p)
                return;
        free(p->moves);
        p->moves = NULL;
        p->n_moves = 0;
}

/* The VMA holding addr: the last one starting at or below it, if addr is below its end. */
static ssize_t vma_of(const struct plan_input *in, uint64_t addr) {
        size_t lo = 0, hi = in->maps->n_vmas;

        while (lo < hi) {
                size_t mid = lo + (hi - lo) / 2;
                if (in->maps->vmas[mid].start <= addr)
                        lo = mid + 1;
                else
                        hi = mid;
        }
        if (lo == 0 || !in->vma_end || addr >= in->vma_end[lo - 1])
                return -1;
        return (ssize_t) (lo - 1);
}

/* What the page moves may take: max_bytes less what the VMA plan takes. */
static uint64_t pages_cap(const struct plan_params *p, const struct plan *vma_plan) {
        uint64_t cap = p->max_bytes ? p->max_bytes : UINT64_MAX;

        if (!vma_plan)
                return cap;
        return vma_plan->bytes < cap ? cap - vma_plan->bytes : 0;
}

static bool vma_planned_whole(const struct plan *vma_plan, size_t vma) {
        for (size_t k = 0; vma_plan && k < vma_plan->n_moves; k++)
                if (vma_plan->moves[k].vma == vma)
                        return true;
        return false;
}

/* Whether a page of VMA vma (size bytes) may go to node under the VMA's policy and
 * sharing; never outside its allowed set, and not when the VMA plan moves the whole
 * VMA (its target wins). What may not is counted in pl->skipped_bytes. */
static bool page_may_move(const struct topology *t, const struct plan_input *in, const struct plan_params *p,
                          const struct plan *vma_plan, size_t vma, unsigned node, uint64_t size,
                          struct plan *pl) {
        const struct vma *v = &in->maps->vmas[vma];
        enum policy_verdict verdict;
        nb_nodemask allowed;

        /* Every page of its VMA is on that node already, or none is anywhere (only
         * read, so mapped to the shared zero page, or freed since it was sampled):
         * nothing to move. numa_maps says where a VMA's pages are per node, not per
         * page; with pages on several nodes the move is planned, and move_pages
         * leaves those already there. */
        if (numa_maps_vma_pages_on(in->maps, v, node) == v->pages)
                return false;
        if (topology_node_slow(t, node)) {
                skip(pl, REASON_LOWER_TIER, size);
                return false;
        }
        verdict = vma_allowed(t, in, p, v, &allowed, NULL);
        if (verdict == POLICY_INTERLEAVED)
                return false; /* spread on purpose */
        if (verdict != POLICY_MOVABLE) {
                skip(pl, policy_reason(verdict), size);
                return false;
        }
        if (!nodemask_test(&allowed, node)) {
                /* Touched from a node it may not live on: it stays in the set. */
                skip(pl, REASON_NO_ALLOWED_NODE, size);
                return false;
        }
        if (v->mapmax > 1) {
                skip(pl, shared_reason(p), size);
                return false;
        }
        if (vma_locked(in, p, vma)) {
                skip(pl, REASON_MLOCKED, size);
                return false;
        }
        return !vma_planned_whole(vma_plan, vma);
}

/* --- promotion (rule 7) ------------------------------------------------------------ */

/* Whether v has pages on a slow node: a page-level move in it may be a promotion. */
static bool vma_on_slow(const struct topology *t, const struct numa_maps *maps, const struct vma *v) {
        const struct node_pages *np = vma_node_pages(maps, v);

        for (size_t k = 0; k < v->np_count; k++)
                if (np[k].pages && topology_node_slow(t, np[k].node))
                        return true;
        return false;
}

/* Bytes of base pages a promotion may still bring to node: above its promotion floor
 * (promote_floor_pct, or free_floor_pct when higher), less what this tick planned there. */
static uint64_t promote_room(const struct topology *t, int node, const struct plan_params *p,
                             const uint64_t *reserved) {
        int idx = topology_node_index(t, (unsigned) node);
        struct plan_params floor = *p;
        uint64_t room;

        if (idx < 0)
                return 0;
        if (p->promote_floor_pct > floor.free_floor_pct)
                floor.free_floor_pct = p->promote_floor_pct;
        room = above_floor(&t->nodes[idx], &floor);
        return room > reserved[idx] ? room - reserved[idx] : 0;
}

/* How a promotion of a page is planned. */
enum promotion {
        PROMOTION_HELD,       /* not at all: the fast node is at its promotion floor */
        PROMOTION_COUNTED,    /* its bytes planned, taken from the budget */
        PROMOTION_SPARE,      /* over the budget: named, with no bytes of its own */
        PROMOTION_EXCHANGED,  /* counted, below the floors: room the exchange made */
};

/* The exchange credit of node (rule 8): bytes demoted off it for promotions. */
static uint64_t *credit_of(const struct topology *t, const struct plan_params *p, int node) {
        int idx = topology_node_index(t, (unsigned) node);

        return p->exchange_credit && idx >= 0 ? &p->exchange_credit[idx] : NULL;
}

/* A promotion held at node's floor: the exchange may demote as much (rule 8). */
static void want_exchange(struct plan *pl, int node, uint64_t size) {
        if (pl->exchange_node >= 0 && pl->exchange_node != node)
                return;
        pl->exchange_node = node;
        pl->exchange_want = sat_add(pl->exchange_want, size);
}

/* A promotion of size bytes to node, against the promotion floor and the budget; what
 * may not move now is counted in pl->skipped_bytes. A hugetlb page takes a free huge
 * page from the target's pool, not MemFree: its floor is the pool's (room_on()).
 *
 * Over the budget, a page is still named (a spare) when pages counted before it go to
 * the same node (counted): the executor moves at most the job's bytes of pages that
 * are elsewhere, not of those already there, so a page promoted at an earlier tick and
 * sampled again does not spend the budget, which goes to the spares instead. Without
 * a counted page a spare would make a job with no bound. */
static enum promotion promotion_of(const struct topology *t, const struct plan_params *p, int node,
                                   uint64_t huge_kb, uint64_t size, const uint64_t *reserved,
                                   const nb_nodemask *counted, struct plan *pl) {
        uint64_t *credit = credit_of(t, p, node);
        bool exchanged = false;

        if (!huge_kb && promote_room(t, node, p, reserved) < size) {
                if (!credit || *credit < size) {
                        skip(pl, REASON_PROMOTE_FLOOR, size);
                        want_exchange(pl, node, size);
                        return PROMOTION_HELD;
                }
                exchanged = true;
        }
        if (!p->promote_left || *p->promote_left >= size)
                return exchanged ? PROMOTION_EXCHANGED : PROMOTION_COUNTED;
        if (exchanged) {
                skip(pl, REASON_PROMOTE_RATE, size);
                return PROMOTION_HELD;
        }
        skip(pl, REASON_PROMOTE_RATE, size);
        return nodemask_test(counted, (unsigned) node) ? PROMOTION_SPARE : PROMOTION_HELD;
}

/* Whether [start, end) overlaps a range demoted within cooldown_ms. */
static bool tier_demoted(const struct plan_input *in, const struct plan_params *p, uint64_t start, uint64_t end) {
        for (size_t k = 0; k < in->n_tier_recent; k++) {
                const struct tier_move *m = &in->tier_recent[k];

                if (m->down && m->start < end && start < m->end && in->now_ms < sat_add(m->at_ms, p->cooldown_ms))
                        return true;
        }
        return false;
}

/* Whether the last move already holds page (the same huge page sampled again). */
static bool page_taken(const struct plan *pl, size_t vma, uint64_t page) {
        const struct plan_move *last = pl->n_moves ? &pl->moves[pl->n_moves - 1] : NULL;

        return last && page < last->end && last->vma == vma;
}

/* Adds the page as a move, or to the last move when it ends where the page starts, in
 * the same VMA and to the same node. */
static void add_page_move(struct plan *pl, size_t vma, uint64_t page, uint64_t size, uint64_t bytes,
                          unsigned node, bool thread_policy, bool promote, bool exchanged) {
        struct plan_move *last = pl->n_moves ? &pl->moves[pl->n_moves - 1] : NULL;

        if (promote)
                pl->promote_bytes = sat_add(pl->promote_bytes, bytes);
        if (last && last->end == page && last->target == (int) node && last->vma == vma &&
            last->promote == promote && last->exchanged == exchanged) {
                last->end += size;
                last->bytes += bytes;
                last->gain += bytes;
                return;
        }
        pl->moves[pl->n_moves++] = (struct plan_move) {
                .vma = vma,
                .start = page,
                .end = page + size,
                .page_size = size,
                .target = (int) node,
                .bytes = bytes,
                .gain = bytes,
                .thread_policy = thread_policy,
                .promote = promote,
                .exchanged = exchanged,
        };
}

int plan_pages(const struct topology *t, const struct plan_input *in, const struct plan_params *p,
               const struct page_decision *d, const struct plan *vma_plan, uint64_t *reserved_bytes,
               struct plan *ret) {
        struct plan pl = { .hot_node = -1, .full_target = -1, .exchange_node = -1 };
        uint64_t cap = pages_cap(p, vma_plan), last_full = UINT64_MAX;
        nb_nodemask counted = {};

        pl.moves = calloc(d->n_moves ? d->n_moves : 1, sizeof(*pl.moves));
        if (!pl.moves)
                return -ENOMEM;

        for (size_t i = 0; i < d->n_moves; i++) {
                const struct page_move *pm = &d->moves[i];
                ssize_t vi = vma_of(in, pm->page);
                const struct vma *v;
                uint64_t size, page, huge_kb;
                enum promotion promotion = PROMOTION_COUNTED;
                bool promote;

                if (vi < 0)
                        continue; /* unmapped since it was sampled */
                v = &in->maps->vmas[vi];
                /* The unit numa_maps counts this VMA's pages in: the base page size,
                 * or the huge page size of a hugetlb VMA. */
                size = v->page_size_kb ? v->page_size_kb * 1024 : page_size();
                page = pm->page & ~(size - 1);
                if (!page_may_move(t, in, p, vma_plan, (size_t) vi, pm->node, size, &pl))
                        continue;
                if (page_taken(&pl, (size_t) vi, page))
                        continue;
                huge_kb = v->hugetlb ? v->page_size_kb : 0;
                promote = vma_on_slow(t, in->maps, v);
                if (promote && tier_demoted(in, p, page, page + size)) {
                        skip(&pl, REASON_COOLDOWN, size);
                        continue;
                }
                if (promote)
                        promotion = promotion_of(t, p, (int) pm->node, huge_kb, size, reserved_bytes, &counted, &pl);
                if (promotion == PROMOTION_HELD)
                        continue;
                if (promotion == PROMOTION_SPARE) {
                        add_page_move(&pl, (size_t) vi, page, size, 0, pm->node, vma_thread_policy(in, v), true, false);
                        continue;
                }
                if (promotion != PROMOTION_EXCHANGED && room_on(t, (int) pm->node, huge_kb, p, reserved_bytes) < size) {
                        /* A huge page sampled at several addresses is counted once. */
                        if (page != last_full)
                                held_at_floor(&pl, (int) pm->node, huge_kb, size);
                        last_full = page;
                        continue;
                }
                if (size > cap - pl.bytes)
                        break;
                if (promotion == PROMOTION_EXCHANGED)
                        *credit_of(t, p, (int) pm->node) -= size;
                reserve(t, reserved_bytes, pm->node, huge_kb, size);
                if (promote) {
                        if (p->promote_left)
                                *p->promote_left -= size;
                        nodemask_set(&counted, pm->node);
                }
                pl.bytes = sat_add(pl.bytes, size);
                add_page_move(&pl, (size_t) vi, page, size, size, pm->node, vma_thread_policy(in, v), promote,
                              promotion == PROMOTION_EXCHANGED);
        }
        pl.reason = main_reason(&pl);
        *ret = pl;
        return 0;
}

/* --- the exchange (rule 8) -------------------------------------------------------- */

/* The slow node of allowed nearest to node, -1: none. */
static int nearest_slow(const struct topology *t, unsigned node, const nb_nodemask *allowed) {
        int best = -1, best_d = 0;

        NODEMASK_FOREACH(n, allowed) {
                int dist = topology_distance(t, node, (unsigned) n);

                if (!topology_node_slow(t, (unsigned) n) || dist < 0)
                        continue;
                if (best < 0 || dist < best_d) {
                        best = n;
                        best_d = dist;
                }
        }
        return best;
}

/* Where the pages of VMA i may be demoted from node (a slow node its policy allows),
 * -1: they stay. */
static int demote_target(const struct topology *t, const struct plan_input *in, const struct plan_params *p,
                         size_t i, unsigned node) {
        const struct vma *v = &in->maps->vmas[i];
        nb_nodemask allowed;

        if (v->hugetlb || v->mapmax > 1 || vma_locked(in, p, i) || !in->vma_end || in->vma_end[i] <= v->start ||
            numa_maps_vma_pages_on(in->maps, v, node) == 0)
                return -1;
        if (vma_allowed(t, in, p, v, &allowed, NULL) != POLICY_MOVABLE)
                return -1;
        return nearest_slow(t, node, &allowed);
}

/* The first address at or after a in [a, end) that no hot page (d) and no recent
 * tier move covers, and the end of the free stretch from there (*ret_end). */
static uint64_t next_free(const struct plan_input *in, const struct plan_params *p, const struct page_decision *d,
                          uint64_t a, uint64_t end, uint64_t *ret_end) {
        uint64_t ps = page_size();
        bool moved;

        do {
                moved = false;
                for (size_t k = 0; k < in->n_tier_recent && a < end; k++) {
                        const struct tier_move *m = &in->tier_recent[k];

                        if (m->start <= a && a < m->end && in->now_ms < sat_add(m->at_ms, p->cooldown_ms)) {
                                a = m->end;
                                moved = true;
                        }
                }
                for (size_t k = 0; d && k < d->n_moves && a < end; k++)
                        if (d->moves[k].page <= a && a < d->moves[k].page + ps) {
                                a = d->moves[k].page + ps;
                                moved = true;
                        }
        } while (moved && a < end);
        *ret_end = end;
        for (size_t k = 0; k < in->n_tier_recent; k++) {
                const struct tier_move *m = &in->tier_recent[k];

                if (m->start > a && m->start < *ret_end && in->now_ms < sat_add(m->at_ms, p->cooldown_ms))
                        *ret_end = m->start;
        }
        for (size_t k = 0; d && k < d->n_moves; k++)
                if (d->moves[k].page > a && d->moves[k].page < *ret_end)
                        *ret_end = d->moves[k].page;
        return a;
}

/* Demote moves are bounded like every plan's: a few ranges each a tick. */
#define EXCHANGE_MOVES_MAX 64

/* The first of the sorted, disjoint cold ranges that ends after addr. */
static size_t first_cold_after(const struct plan_input *in, uint64_t addr) {
        size_t lo = 0, hi = in->n_cold;

        while (lo < hi) {
                size_t mid = lo + (hi - lo) / 2;

                if (in->cold[mid].end <= addr)
                        lo = mid + 1;
                else
                        hi = mid;
        }
        return lo;
}

/* Demote moves of up to want bytes of the process's cold memory on node, appended to
 * pl (room for EXCHANGE_MOVES_MAX - *added more); returns the bytes planned. Each VMA
 * looks only at the cold ranges that meet it (they are sorted): VMAs times ranges,
 * tens of thousands each from samples, would be billions of steps. */
static uint64_t demote_cold(const struct topology *t, const struct plan_input *in, const struct plan_params *p,
                            const struct page_decision *d, struct plan *pl, unsigned node, uint64_t want,
                            size_t *added) {
        struct plan_move *mv = pl->moves;
        uint64_t left = want;

        for (size_t i = 0; i < in->maps->n_vmas && left && *added < EXCHANGE_MOVES_MAX; i++) {
                const struct vma *v = &in->maps->vmas[i];
                int target = demote_target(t, in, p, i, node);

                for (size_t c = target >= 0 ? first_cold_after(in, v->start) : in->n_cold;
                     c < in->n_cold && in->cold[c].start < in->vma_end[i] && left && *added < EXCHANGE_MOVES_MAX; c++) {
                        uint64_t a = in->cold[c].start > v->start ? in->cold[c].start : v->start;
                        uint64_t end = in->cold[c].end < in->vma_end[i] ? in->cold[c].end : in->vma_end[i], stop;

                        while (a < end && left && *added < EXCHANGE_MOVES_MAX) {
                                uint64_t bytes;

                                a = next_free(in, p, d, a, end, &stop);
                                if (a >= stop)
                                        break;
                                bytes = p->bytes_on ? p->bytes_on(p->bytes_on_userdata, a, stop, node) : stop - a;
                                if (bytes == 0) {
                                        a = stop;   /* on a slow node already, or not known */
                                        continue;
                                }
                                bytes = bytes < left ? bytes : left;
                                mv[pl->n_moves] = (struct plan_move) {
                                        .vma = i, .start = a, .end = stop, .page_size = page_size(),
                                        .target = target, .bytes = bytes, .demote = true,
                                        .from = (int) node, .keep = t->with_memory,
                                };
                                nodemask_clear(&mv[pl->n_moves].keep, node);
                                pl->n_moves++;
                                (*added)++;
                                left -= bytes;
                                pl->demote_bytes = sat_add(pl->demote_bytes, bytes);
                                a = stop;
                        }
                }
        }
        return want - left;
}

int plan_exchange(const struct topology *t, const struct plan_input *in, const struct plan_params *p,
                  const struct page_decision *d, struct plan *pl) {
        struct plan_move *mv;
        size_t added = 0;
        uint64_t served = 0;

        pl->exchange_unserved = pl->exchange_node >= 0 ? pl->exchange_want : 0;
        if (in->n_cold == 0)
                return 0;
        mv = realloc(pl->moves, (pl->n_moves + EXCHANGE_MOVES_MAX) * sizeof(*mv));
        if (!mv)
                return -ENOMEM;
        pl->moves = mv;
        /* Its own promotions first, then what other processes' wait for (demand). */
        if (pl->exchange_unserved)
                served = demote_cold(t, in, p, d, pl, (unsigned) pl->exchange_node, pl->exchange_unserved, &added);
        pl->exchange_unserved -= served;
        for (size_t k = 0; p->exchange_demand && k < t->n_nodes && added < EXCHANGE_MOVES_MAX; k++) {
                uint64_t want = p->exchange_demand[k], got;

                if (p->exchange_give && p->exchange_give[k] < want)
                        want = p->exchange_give[k];
                if (!want)
                        continue;
                got = demote_cold(t, in, p, d, pl, t->nodes[k].id, want, &added);
                p->exchange_demand[k] -= got;
                if (p->exchange_give)
                        p->exchange_give[k] -= got;
        }
        if (added)
                pl->reason = REASON_NONE;
        return 0;
}
