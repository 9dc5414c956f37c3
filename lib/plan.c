/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include "locality.h"
#include "pagesample.h"
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
};

const char *plan_reason_name(enum plan_reason r) {
        return r < _REASON_MAX ? reason_names[r] : "unknown";
}

const char *plan_reason_text(enum plan_reason r) {
        return r < _REASON_MAX ? reason_texts[r] : "unknown";
}

static uint64_t sat_add(uint64_t a, uint64_t b) { return a > UINT64_MAX - b ? UINT64_MAX : a + b; }
static uint64_t sat_mul(uint64_t a, uint64_t b) { return b && a > UINT64_MAX / b ? UINT64_MAX : a * b; }

/* The allowed node nearest to hot (ties: lower id), or -1. */
static int nearest_allowed(const struct topology *t, int hot, const nb_nodemask *allowed) {
        int best = -1, best_d = 0;

        if (nodemask_test(allowed, (unsigned) hot))
                return hot;
        NODEMASK_FOREACH(n, allowed) {
                int d = topology_distance(t, (unsigned) hot, (unsigned) n);
                if (d < 0)
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

/* See PLAN_SPARSE_MIN_MAPPED. */
static bool vma_sparse(const struct plan_input *in, size_t i, const struct vma *v) {
        uint64_t mapped;

        if (!in->vma_end || in->vma_end[i] <= v->start)
                return false;
        mapped = in->vma_end[i] - v->start;
        return mapped >= PLAN_SPARSE_MIN_MAPPED && vma_bytes(v, v->pages) < mapped / PLAN_SPARSE_RATIO;
}

static int cmp_gain(const void *a, const void *b) {
        const struct plan_move *x = a, *y = b;
        if (x->gain != y->gain)
                return x->gain > y->gain ? -1 : 1;
        return x->start < y->start ? -1 : x->start > y->start;
}

/* Bytes the target node can still take this tick above its floor. */
static uint64_t room_on(const struct topology *t, int node, const struct plan_params *p, const uint64_t *reserved) {
        int idx = topology_node_index(t, (unsigned) node);
        const struct topo_node *n;
        uint64_t free_b, floor_b;

        if (idx < 0)
                return 0;
        n = &t->nodes[idx];
        free_b = sat_mul(n->mem_free_kb, 1024);
        floor_b = sat_mul(n->mem_total_kb, 1024) / 100 * p->free_floor_pct;
        if (free_b <= floor_b || free_b - floor_b <= reserved[idx])
                return 0;
        return free_b - floor_b - reserved[idx];
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

int plan_decide(const struct topology *t, const struct plan_input *in, const struct plan_params *p,
                uint64_t *reserved_bytes, struct plan *ret) {
        struct plan pl = { .hot_node = -1 };
        _cleanup_free_ struct plan_move *cand = NULL;
        size_t n_cand = 0;
        uint64_t total_cpu = 0, best_cpu = 0, misplaced_total = 0, cap;
        int hot = -1;

        for (unsigned i = 0; i < t->n_nodes; i++) {
                total_cpu = sat_add(total_cpu, in->cpu_ns[i]);
                if (in->cpu_ns[i] > best_cpu) {
                        best_cpu = in->cpu_ns[i];
                        hot = (int) t->nodes[i].id;
                }
        }
        if (total_cpu == 0) {
                pl.reason = REASON_NO_CPU_TIME;
                goto out;
        }
        /* Hysteresis: a node must clearly dominate, or the pages would chase threads. */
        if ((double) best_cpu * 100.0 < (double) total_cpu * p->min_cpu_share_pct) {
                pl.reason = REASON_CPU_SPREAD;
                goto out;
        }
        pl.hot_node = hot;

        cand = calloc(in->maps->n_vmas ? in->maps->n_vmas : 1, sizeof(*cand));
        if (!cand)
                return -ENOMEM;

        for (size_t i = 0; i < in->maps->n_vmas; i++) {
                const struct vma *v = &in->maps->vmas[i];
                const struct node_pages *np = vma_node_pages(in->maps, v);
                const struct plan_history *h;
                enum policy_verdict verdict;
                nb_nodemask allowed;
                uint64_t misplaced = 0, gain = 0;
                int target, dt;

                if (v->pages == 0)
                        continue;
                verdict = policy_allowed_nodes(&v->policy, &in->mems_allowed, &t->with_memory, p->move_preferred,
                                               &allowed);
                if (verdict == POLICY_INTERLEAVED)
                        continue; /* spread on purpose: not misplaced */
                if (verdict != POLICY_MOVABLE) {
                        /* Report what sits away from the hot node, but never plan it. */
                        uint64_t away = vma_bytes(v, v->pages - vma_pages_on(in->maps, v, (unsigned) hot));
                        enum plan_reason r = verdict == POLICY_NO_NODES ? REASON_NO_ALLOWED_NODE : REASON_POLICY;
                        pl.skipped_bytes[r] = sat_add(pl.skipped_bytes[r], away);
                        continue;
                }
                target = nearest_allowed(t, hot, &allowed);
                if (target < 0) {
                        pl.skipped_bytes[REASON_NO_ALLOWED_NODE] =
                                sat_add(pl.skipped_bytes[REASON_NO_ALLOWED_NODE], vma_bytes(v, v->pages));
                        continue;
                }
                dt = topology_distance(t, (unsigned) hot, (unsigned) target);

                for (size_t k = 0; k < v->np_count; k++) {
                        int d = topology_distance(t, (unsigned) hot, np[k].node);
                        uint64_t b = vma_bytes(v, np[k].pages);
                        bool outside = !nodemask_test(&allowed, np[k].node);

                        if ((int) np[k].node == target)
                                continue;
                        if (!outside && (d < 0 || dt < 0 || d <= dt))
                                continue; /* as close as the target: nothing to gain */
                        misplaced = sat_add(misplaced, b);
                        /* Pages outside the allowed set move even without a distance gain. */
                        gain = sat_add(gain, sat_mul(b, (d > dt && dt >= 0) ? (uint64_t) (d - dt) : 1));
                }
                if (misplaced == 0)
                        continue;
                if (v->mapmax > 1 && !p->move_shared) {
                        pl.skipped_bytes[REASON_SHARED] = sat_add(pl.skipped_bytes[REASON_SHARED], misplaced);
                        continue;
                }
                if (vma_sparse(in, i, v)) {
                        pl.skipped_bytes[REASON_SPARSE] = sat_add(pl.skipped_bytes[REASON_SPARSE], misplaced);
                        continue;
                }
                h = find_history(in, v->start);
                if (h && h->target != target && in->now_ms - h->when_ms < p->cooldown_ms) {
                        pl.skipped_bytes[REASON_COOLDOWN] = sat_add(pl.skipped_bytes[REASON_COOLDOWN], misplaced);
                        continue;
                }
                cand[n_cand++] = (struct plan_move) {
                        .vma = i,
                        .start = v->start,
                        .end = in->vma_end ? in->vma_end[i] : 0,
                        .page_size = v->page_size_kb * 1024,
                        .target = target,
                        .bytes = misplaced,
                        .gain = gain,
                };
                misplaced_total = sat_add(misplaced_total, misplaced);
        }

        if (n_cand > 0 && misplaced_total < sat_mul(p->min_misplaced_kb, 1024)) {
                pl.skipped_bytes[REASON_BELOW_THRESHOLD] = misplaced_total;
                n_cand = 0;
        }

        qsort(cand, n_cand, sizeof(*cand), cmp_gain);
        cap = p->max_bytes ? p->max_bytes : UINT64_MAX;
        pl.moves = calloc(n_cand ? n_cand : 1, sizeof(*pl.moves));
        if (!pl.moves)
                return -ENOMEM;
        for (size_t i = 0; i < n_cand && pl.bytes < cap; i++) {
                struct plan_move m = cand[i];
                uint64_t room = room_on(t, m.target, p, reserved_bytes);
                int idx = topology_node_index(t, (unsigned) m.target);

                if (m.end <= m.start) {
                        /* The VMA changed between numa_maps and maps: next tick. */
                        continue;
                }
                if (room < m.page_size) {
                        pl.skipped_bytes[REASON_TARGET_FULL] = sat_add(pl.skipped_bytes[REASON_TARGET_FULL], m.bytes);
                        continue;
                }
                /* A move may be partial (room, cap): the executor stops after that many
                 * pages and the next tick goes on. */
                if (m.bytes > room) {
                        pl.skipped_bytes[REASON_TARGET_FULL] =
                                sat_add(pl.skipped_bytes[REASON_TARGET_FULL], m.bytes - room);
                        m.bytes = room;
                }
                if (m.bytes > cap - pl.bytes)
                        m.bytes = cap - pl.bytes;
                reserved_bytes[idx] = sat_add(reserved_bytes[idx], m.bytes);
                pl.bytes = sat_add(pl.bytes, m.bytes);
                pl.moves[pl.n_moves++] = m;
        }

        pl.reason = main_reason(&pl);
out:
        *ret = pl;
        return 0;
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

int plan_pages(const struct topology *t, const struct plan_input *in, const struct plan_params *p,
               const struct page_decision *d, const struct plan *vma_plan, uint64_t *reserved_bytes,
               struct plan *ret) {
        struct plan pl = { .hot_node = -1 };
        uint64_t cap = p->max_bytes ? p->max_bytes : UINT64_MAX;

        cap = vma_plan && vma_plan->bytes < cap ? cap - vma_plan->bytes : vma_plan ? 0 : cap;
        pl.moves = calloc(d->n_moves ? d->n_moves : 1, sizeof(*pl.moves));
        if (!pl.moves)
                return -ENOMEM;

        for (size_t i = 0; i < d->n_moves; i++) {
                const struct page_move *pm = &d->moves[i];
                ssize_t vi = vma_of(in, pm->page);
                const struct vma *v;
                enum policy_verdict verdict;
                nb_nodemask allowed;
                uint64_t size, page, room;
                bool whole = false;
                int idx;

                if (vi < 0)
                        continue; /* unmapped since it was sampled */
                v = &in->maps->vmas[vi];
                /* The unit numa_maps counts this VMA's pages in: the base page size,
                 * or the huge page size of a hugetlb VMA. */
                size = v->page_size_kb ? v->page_size_kb * 1024 : page_size();
                page = pm->page & ~(size - 1);
                verdict = policy_allowed_nodes(&v->policy, &in->mems_allowed, &t->with_memory, p->move_preferred,
                                               &allowed);
                if (verdict == POLICY_INTERLEAVED)
                        continue; /* spread on purpose */
                if (verdict != POLICY_MOVABLE) {
                        enum plan_reason r = verdict == POLICY_NO_NODES ? REASON_NO_ALLOWED_NODE : REASON_POLICY;
                        pl.skipped_bytes[r] = sat_add(pl.skipped_bytes[r], size);
                        continue;
                }
                if (!nodemask_test(&allowed, pm->node)) {
                        /* Touched from a node it may not live on: it stays in the set. */
                        pl.skipped_bytes[REASON_NO_ALLOWED_NODE] = sat_add(pl.skipped_bytes[REASON_NO_ALLOWED_NODE], size);
                        continue;
                }
                if (v->mapmax > 1 && !p->move_shared) {
                        pl.skipped_bytes[REASON_SHARED] = sat_add(pl.skipped_bytes[REASON_SHARED], size);
                        continue;
                }
                for (size_t k = 0; vma_plan && k < vma_plan->n_moves; k++)
                        whole |= vma_plan->moves[k].vma == (size_t) vi;
                if (whole)
                        continue;
                if (pl.n_moves) {
                        struct plan_move *last = &pl.moves[pl.n_moves - 1];
                        if (page < last->end && last->vma == (size_t) vi)
                                continue; /* the same huge page again */
                }
                room = room_on(t, (int) pm->node, p, reserved_bytes);
                if (room < size) {
                        pl.skipped_bytes[REASON_TARGET_FULL] = sat_add(pl.skipped_bytes[REASON_TARGET_FULL], size);
                        continue;
                }
                if (size > cap - pl.bytes)
                        break;
                idx = topology_node_index(t, pm->node);
                reserved_bytes[idx] = sat_add(reserved_bytes[idx], size);
                pl.bytes = sat_add(pl.bytes, size);
                if (pl.n_moves) {
                        struct plan_move *last = &pl.moves[pl.n_moves - 1];
                        if (last->end == page && last->target == (int) pm->node && last->vma == (size_t) vi) {
                                last->end += size;
                                last->bytes += size;
                                last->gain += size;
                                continue;
                        }
                }
                pl.moves[pl.n_moves++] = (struct plan_move) {
                        .vma = (size_t) vi,
                        .start = page,
                        .end = page + size,
                        .page_size = size,
                        .target = (int) pm->node,
                        .bytes = size,
                        .gain = size,
                };
        }
        pl.reason = main_reason(&pl);
        *ret = pl;
        return 0;
}
