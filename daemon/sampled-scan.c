/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Sampled scans of settled processes with huge VMAs (sampled-scan.h). */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include "cleanup.h"
#include "log.h"
#include "maps.h"
#include "pagesize.h"
#include "sampled-scan.h"
#include "tenant-files.h"
#include "vma-sample.h"

/* Entries of a per-node-id array: the highest node id + 1 (ids are sorted). */
static size_t n_ids(const struct scan_env *env) {
        return env->topo->n_nodes ? env->topo->nodes[env->topo->n_nodes - 1].id + 1 : 0;
}

nb_nodemask sampled_scan_cpu_nodes(const struct scan_env *env, const uint64_t *cpu) {
        nb_nodemask out = {};
        uint64_t total = 0;

        for (unsigned i = 0; i < env->topo->n_nodes; i++)
                total += cpu[i];
        for (unsigned i = 0; total && i < env->topo->n_nodes; i++)
                if (cpu[i] * 100 >= total * env->cfg->min_cpu_share_pct)
                        nodemask_set(&out, env->topo->nodes[i].id);
        return out;
}

void sampled_scan_forget(struct proc_rec *p) {
        proc_records_drop_huge(p);
}

/* Held back for a while rather than for good: the next scans must look again, which
 * a sample that sees no change would not do. */
static bool held_back(const struct plan *plan) {
        static const enum plan_reason transient[] = { REASON_COOLDOWN, REASON_TARGET_FULL, REASON_HUGE_POOL };

        for (size_t i = 0; i < sizeof(transient) / sizeof(transient[0]); i++)
                if (plan->reason == transient[i] || plan->skipped_bytes[transient[i]])
                        return true;
        return false;
}

static bool is_huge(const struct scan_env *env, const struct vma *v, uint64_t end) {
        return end > v->start && (end - v->start) / 1024 >= env->cfg->huge_vma_kb;
}

/* v's pages per node id, in base pages (a hugetlb VMA counts huge pages). */
static int baseline(const struct scan_env *env, const struct numa_maps *maps, const struct vma *v, uint64_t **ret) {
        const struct node_pages *np = vma_node_pages(maps, v);
        const uint64_t per = v->page_size_kb * 1024 / page_size();
        uint64_t *pages = calloc(n_ids(env) ? n_ids(env) : 1, sizeof(*pages));

        if (!pages)
                return -ENOMEM;
        for (size_t k = 0; k < v->np_count; k++)
                if (np[k].node < n_ids(env))
                        pages[np[k].node] += np[k].pages * (per ? per : 1);
        *ret = pages;
        return 0;
}

void sampled_scan_note(const struct scan_env *env, struct proc_rec *p, const struct numa_maps *maps,
                       const uint64_t *ends, const struct plan *plan, bool settled, nb_nodemask cpu_nodes) {
        size_t n = 0;

        sampled_scan_forget(p);
        if (!env->cfg->huge_vma_kb || !settled || plan->n_moves || held_back(plan))
                return;
        for (size_t i = 0; i < maps->n_vmas; i++)
                n += is_huge(env, &maps->vmas[i], ends[i]);
        if (n == 0 || n > SAMPLED_SCAN_VMAS_MAX)
                return;
        p->huge = calloc(n, sizeof(*p->huge));
        if (!p->huge)
                return;
        for (size_t i = 0; i < maps->n_vmas; i++) {
                const struct vma *v = &maps->vmas[i];
                struct huge_vma *h = &p->huge[p->n_huge];

                if (!is_huge(env, v, ends[i]))
                        continue;
                *h = (struct huge_vma) { .start = v->start, .end = ends[i] };
                if (baseline(env, maps, v, &h->pages) < 0) {
                        sampled_scan_forget(p);
                        return;
                }
                p->n_huge++;
        }
        p->huge_cpu_nodes = cpu_nodes;
        /* Its own baseline: p->rss_kb moves with grew() and shrinking. */
        p->huge_rss_kb = p->rss_kb;
}

static bool differs(uint64_t a, uint64_t b, uint64_t tol) {
        return (a > b ? a - b : b - a) > tol;
}

/* min_misplaced, and 1/SCAN_GROW_SHARE of the whole (in the unit of whole). */
static uint64_t tolerance(const struct scan_env *env, uint64_t whole, uint64_t unit_kb) {
        uint64_t floor = env->cfg->min_misplaced_kb / unit_kb;
        return whole / SCAN_GROW_SHARE > floor ? whole / SCAN_GROW_SHARE : floor;
}

/* Each huge VMA still there with the same bounds, and its sampled placement within
 * tolerance of the baseline. */
static bool placement_unchanged(const struct scan_env *env, struct proc_rec *p) {
        _cleanup_free_ struct vma_range *ranges = NULL;
        _cleanup_free_ uint64_t *est = calloc(n_ids(env) ? n_ids(env) : 1, sizeof(*est));
        const struct tenant_proc tp = {
                .proc_root = env->proc_root,
                .pid = p->pid,
                .owner = p->cg ? p->cg->turn_uid : 0,
                .deadline_ms = tenant_reader_deadline_ms(p->rss_kb * UINT64_C(1024)),
        };
        size_t n_ranges = 0;

        /* Whatever kept maps from being read, numa_maps is read (and met the same way). */
        if (!est || tenant_files_maps(env->reader, &tp, &ranges, &n_ranges) < 0)
                return false;
        for (size_t i = 0; i < p->n_huge; i++) {
                const struct huge_vma *h = &p->huge[i];
                uint64_t pages = (h->end - h->start) / page_size();
                /* A different phase at each scan: over several scans, other pages. */
                int r = maps_end_of(ranges, n_ranges, h->start) != h->end ? -ESTALE :
                        vma_sample_query(p->pid, h->start, h->end, p->scans * UINT64_C(2654435761), est, n_ids(env));

                if (r < 0) {
                        log_debug("pid=%d: VMA %" PRIx64 ": %s: reading numa_maps", (int) p->pid, h->start,
                                  r == -ESTALE ? "its bounds changed" : "cannot sample it");
                        return false;
                }
                if (vma_sample_moved(h->pages, est, n_ids(env), tolerance(env, pages, page_size() / 1024))) {
                        log_debug("pid=%d: VMA %" PRIx64 ": its sampled placement changed: reading numa_maps",
                                  (int) p->pid, h->start);
                        return false;
                }
        }
        return true;
}

bool sampled_scan_unchanged(const struct scan_env *env, struct proc_rec *p, nb_nodemask cpu_nodes, uint64_t rss_kb) {
        bool same;

        if (!p->n_huge)
                return false;
        same = env->cfg->huge_vma_kb && !page_agg_fresh(p->seen) && nodemask_equal(&cpu_nodes, &p->huge_cpu_nodes) &&
               !differs(rss_kb, p->huge_rss_kb, tolerance(env, p->huge_rss_kb, 1)) && placement_unchanged(env, p);
        if (!same)
                sampled_scan_forget(p);
        return same;
}
