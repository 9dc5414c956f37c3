/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The per-process scan (scan.h): sample, read, decide, locality, next scan. */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "cgroup.h"
#include "cleanup.h"
#include "fast-use.h"
#include "locality.h"
#include "log.h"
#include "maps.h"
#include "move-budget.h"
#include "pagesize.h"
#include "proc.h"
#include "sampled-scan.h"
#include "scan.h"
#include "share-groups.h"
#include "tenant-files.h"
#include "page-sampler.h"
#include "page-where.h"
#include "placer.h"
#include "thread-mems.h"
#include "source.h"
#include "smaps.h"

/* The two-sample rule (docs/RULES.md): a page seen fewer times from its one node is
 * not evidence yet. */
#define PAGE_MIN_SAMPLES 2
/* How long, and how many pages, a page seen once waits for its second sample. */
#define EVIDENCE_KEEP_S 120
#define EVIDENCE_KEEP_PAGES 16384     /* about 0.9 MiB with two nodes */
/* A node with less of a process's CPU time than this does not make it span nodes. */
#define SPAN_SHARE_PCT 10
/* Threads whose affinity keep_before() reads, at most (a status file each): a process
 * with more keeps what its first ones are confined to. */
#define CONFINED_THREADS_MAX 1024

static bool changed(uint64_t a, uint64_t b) {
        uint64_t d = a > b ? a - b : b - a, base = a > b ? a : b;
        return base && d * 100 > base * SCAN_CHANGE_PCT;
}

/* The back-off: scan often while misplaced or changing (active), half as often each
 * time once settled, down to scan_max_ms. */
static void schedule_next(const struct scan_env *env, struct proc_rec *p, uint64_t now, bool active) {
        struct scan_schedule *s = &p->sched;

        if (active || s->interval_ms == 0)
                s->interval_ms = env->cfg->scan_min_ms;
        else
                s->interval_ms *= SCAN_BACKOFF_FACTOR;
        if (s->interval_ms > env->cfg->scan_max_ms)
                s->interval_ms = env->cfg->scan_max_ms;
        s->next_scan_ms = now + s->interval_ms;
}

/* CPU time of p's threads per node since its last scan, into cpu. Returns 1, or 0 at
 * first sight (the source has a baseline only: cpu then says where the threads are
 * now, node-time.h, rather than wait a whole tick), or -errno. */
static int sample_cpu(const struct scan_env *env, struct proc_rec *p, uint64_t *cpu) {
        int primed = env->source->sample(env->source, env->proc_root, p->pid, env->topo, &p->pl, cpu);
        int r;

        if (primed == 0) {
                r = node_time_first_estimate(env->proc_root, p->pid, env->topo, cpu);
                if (r < 0)
                        return r;
        }
        return primed;
}

/* Its threads ran on more than one node in the window, each with a share worth a
 * page-level signal (SPAN_SHARE_PCT of its CPU time). */
static bool spans_nodes(const struct scan_env *env, const uint64_t *cpu) {
        uint64_t total = 0;
        unsigned n = 0;

        for (unsigned i = 0; i < env->topo->n_nodes; i++)
                total += cpu[i];
        for (unsigned i = 0; total && i < env->topo->n_nodes; i++)
                n += cpu[i] * 100 >= total * SPAN_SHARE_PCT;
        return n >= 2;
}

/* Its threads did not run since the last scan: the decision is "no CPU time" whatever
 * its maps say (plan_decide needs CPU time to choose a node), so they are not read
 * again. Idle processes (most of a server's) cost one sample per scan; the locality
 * shown is that of the last full read. Returns true when p was idle (and is done). */
static bool scan_idle(const struct scan_env *env, struct proc_rec *p, int primed, const uint64_t *cpu, uint64_t now) {
        uint64_t total = 0;

        /* Sampled pages are evidence even without CPU time (new ones: what was carried
         * over waits for more). */
        if (primed == 0 || page_agg_fresh(p->seen) || p->scans == 0)
                return false;
        for (unsigned i = 0; i < env->topo->n_nodes; i++)
                total += cpu[i];
        if (total)
                return false;
        p->reason = REASON_NO_CPU_TIME;
        p->planned_bytes = 0;
        p->full_target = -1;     /* nothing planned: room on a node is no reason to look again */
        p->last_scan_ms = now;
        p->scans++;
        schedule_next(env, p, now, false);
        return true;
}

static int read_status(const struct scan_env *env, struct proc_rec *p, struct proc_status *status) {
        struct proc_stat st;
        int r = proc_read_status(env->proc_root, p->pid, status);

        if (r < 0)
                return r;
        /* In a threaded subtree its threads may have cpusets of their own: the nodes
         * its memory may go to are those every thread's allows (lib/thread-mems.h). */
        r = thread_mems_narrow(env->proc_root, env->cfg->cgroup_root, p->cg ? p->cg->path : NULL, p->pid, status);
        if (r < 0)
                return r;
        p->uid = status->uid_real;
        /* The tick does not re-read stat for a live known process; its name may have
         * changed (exec, prctl) since: refresh it here. */
        if (proc_read_stat(env->proc_root, p->pid, &st) == 0 && st.starttime == p->starttime) {
                snprintf(p->comm, sizeof(p->comm), "%s", st.comm);
                /* Before numa_maps: an exec after this shows at the check before moving. */
                p->layout = st.layout;
        }
        return 0;
}

/* "cannot read" with its reason: a process past the mapping cap (lib/proc-lines.h)
 * is told apart from one that is gone or not ours, since only an operator's sysctl
 * lets a process get there, and this one is then never balanced. */
static int unreadable(const struct proc_rec *p, const char *file, int r) {
        if (r == -E2BIG)
                log_info("cgroup=%s pid=%d: %s lists more than %d mappings, the most the daemon reads of a "
                         "process: not balanced", p->cg->path, (int) p->pid, file, PROC_VMAS_MAX);
        return r;
}

/* What p maps where: its numa_maps, and each VMA's end from its maps. Both read a
 * chunk at a time (lib/proc-lines.h: the files are the tenant's to make large),
 * through the reader (tenant-files.h: p's owner can make them wait). */
static int read_layout(const struct scan_env *env, const struct proc_rec *p, const struct tenant_proc *tp,
                       struct numa_maps **ret_maps, uint64_t **ret_ends, struct vma_range **ret_ranges,
                       size_t *ret_n_ranges) {
        _cleanup_free_ struct vma_range *ranges = NULL;
        _cleanup_(numa_maps_freep) struct numa_maps *maps = NULL;
        uint64_t *ends;
        size_t n_ranges = 0;
        int r;

        r = tenant_files_numa_maps(env->reader, tp, &maps);
        if (r < 0)
                return unreadable(p, "numa_maps", r);
        if (maps->n_bad_lines)
                log_debug("pid=%d: %u numa_maps line(s) did not parse (first: %u), ignoring", (int) tp->pid,
                          maps->n_bad_lines, maps->bad_lines[0]);
        r = tenant_files_maps(env->reader, tp, &ranges, &n_ranges);
        if (r < 0)
                return unreadable(p, "maps", r);
        ends = calloc(maps->n_vmas ? maps->n_vmas : 1, sizeof(*ends));
        if (!ends)
                return -ENOMEM;
        for (size_t i = 0; i < maps->n_vmas; i++)
                ends[i] = maps_end_of(ranges, n_ranges, maps->vmas[i].start);
        *ret_maps = TAKE_PTR(maps);
        *ret_ends = ends;
        *ret_ranges = TAKE_PTR(ranges);
        *ret_n_ranges = n_ranges;
        return 0;
}

/* The policies of p's threads (thread-policy.h): read again at every scan, since threads
 * come and go and set their own. A single-threaded process costs nothing more. */
static int read_thread_policies(const struct scan_env *env, struct proc_rec *p, const struct proc_status *status,
                                const struct numa_maps *maps, struct thread_policies *ret) {
        int r;

        if (status->threads <= 1)
                return thread_policy_single(maps, ret);
        r = thread_policy_read(env->proc_root, p->pid, maps, ret);
        if (r < 0)
                return r;
        if (ret->unknown)
                log_debug("pid=%d: the policy of some of its %zu threads is not known: memory without a VMA "
                          "policy stays", (int) p->pid, ret->n_threads);
        return 0;
}

/* Which of maps' VMAs are locked (mlock): smaps is read only when status shows locked
 * memory and it matters (move_mlocked = no). *ret stays NULL when none is. */
static int read_locked(const struct scan_env *env, const struct proc_rec *p, const struct tenant_proc *tp,
                       const struct proc_status *status, const struct numa_maps *maps, bool **ret) {
        _cleanup_free_ uint64_t *starts = NULL;
        size_t n = 0;
        bool *locked;
        int r;

        *ret = NULL;
        if (status->vm_lck_kb == 0 || env->cfg->move_mlocked)
                return 0;
        r = tenant_files_smaps_locked(env->reader, tp, &starts, &n);
        if (r < 0)
                return unreadable(p, "smaps", r);
        locked = calloc(maps->n_vmas ? maps->n_vmas : 1, sizeof(*locked));
        if (!locked)
                return -ENOMEM;
        for (size_t i = 0; i < maps->n_vmas; i++)
                locked[i] = smaps_locked_has(starts, n, maps->vmas[i].start);
        *ret = locked;
        return 0;
}

/* Settled still, by its samples (sampled-scan.h): the decision, locality and
 * baseline of its last full read stand. */
static void scan_sampled(const struct scan_env *env, struct proc_rec *p, uint64_t now, struct scan *s) {
        s->sampled = true;
        p->last_scan_ms = now;
        p->scans++;
        p->sampled_scans++;
        schedule_next(env, p, now, false);
}

/* What a scan reads of a process besides its status: its layout, the policies of its
 * threads and which VMAs are locked. */
struct reading {
        struct numa_maps *maps;
        uint64_t *ends;
        struct vma_range *ranges;    /* maps, with the objects of shared mappings */
        size_t n_ranges;
        struct plan_share *share;    /* its group's decisions (share-groups.h), NULL: none */
        struct thread_policies threads;
        bool *locked;
        struct damon_range *unsampled;  /* its cold ranges from its samples (set_tiers) */
};

static void reading_done(struct reading *rd) {
        numa_maps_free(rd->maps);
        free(rd->ends);
        free(rd->ranges);
        free(rd->share);
        thread_policy_done(&rd->threads);
        free(rd->locked);
        free(rd->unsampled);
}

static int read_process(const struct scan_env *env, struct proc_rec *p, const struct proc_status *status,
                        struct reading *rd) {
        const struct tenant_proc tp = {
                .proc_root = env->proc_root,
                .pid = p->pid,
                .owner = p->cg ? p->cg->turn_uid : 0,
                .deadline_ms = tenant_reader_deadline_ms(status->vm_rss_kb * UINT64_C(1024)),
        };
        int r;

        r = read_layout(env, p, &tp, &rd->maps, &rd->ends, &rd->ranges, &rd->n_ranges);
        if (r < 0)
                return r;
        r = read_thread_policies(env, p, status, rd->maps, &rd->threads);
        if (r < 0)
                return r;
        return read_locked(env, p, &tp, status, rd->maps, &rd->locked);
}

/* What its groups decided for the shared objects it maps (share-groups.h), NULL: none.
 * They move in balance mode only: place puts the threads beside them (cg-mode.h). */
static struct plan_share *group_decisions(const struct scan_env *env, const struct proc_rec *p,
                                          const struct reading *rd, uint64_t now) {
        if (!env->shares || !cg_mode_moves_shared(p->cg->mode))
                return NULL;
        /* Held back at its last job: not again for a cooldown, unless its group changed. */
        if (now < p->moved.shared_held_until_ms &&
            share_groups_signature(env->shares, p->cg->turn_uid, p->pid) == p->moved.shared_held_group)
                return NULL;
        return share_groups_plan_input(env->shares, p->cg->turn_uid, p->pid, rd->maps, rd->ranges, rd->n_ranges);
}

struct plan_params scan_plan_params(const struct scan_env *env) {
        const struct nb_config *c = env->cfg;

        return (struct plan_params) {
                .min_cpu_share_pct = c->min_cpu_share_pct,
                .keep_node_share_pct = c->keep_node_share_pct,
                .cooldown_ms = c->cooldown_ms,
                .free_floor_pct = c->free_floor_pct,
                .move_shared = c->move_shared,
                .move_preferred = c->move_preferred,
                .kernel_balances = env->kernel_balances,
                .move_mlocked = c->move_mlocked,
                .min_misplaced_kb = c->min_misplaced_kb,
                .max_bytes = move_budget_scan_bytes(c->batch_pages),
                .promote_floor_pct = c->promote_free_floor_pct,
                .promote_left = env->promote_left,
                .exchange_credit = env->exchange_credit,
                .exchange_demand = env->exchange_demand,
        };
}

static int cmp_start(const void *a, const void *b) {
        const struct damon_range *x = a, *y = b;

        return (x->start > y->start) - (x->start < y->start);
}

/* Its anonymous mappings (heap, stacks, anonymous memory) in this scan's maps, sorted
 * and merged (a numa_maps read in chunks can list a VMA that grew meanwhile twice):
 * where a data-address sample sees every access. A file mapping's pages are also read
 * as instructions (its text), which no such sample names. NULL when out of memory. */
static struct damon_range *anon_ranges(const struct plan_input *in, size_t *ret_n) {
        struct damon_range *v = calloc(in->maps->n_vmas ? in->maps->n_vmas : 1, sizeof(*v));
        size_t n = 0, k = 0;

        for (size_t i = 0; v && i < in->maps->n_vmas; i++)
                if (in->maps->vmas[i].kind != VMA_FILE && in->vma_end[i] > in->maps->vmas[i].start)
                        v[n++] = (struct damon_range) { in->maps->vmas[i].start, in->vma_end[i] };
        if (v)
                qsort(v, n, sizeof(*v), cmp_start);
        for (size_t i = 0; i < n; i++) {
                if (k && v[i].start <= v[k - 1].end) {
                        if (v[i].end > v[k - 1].end)
                                v[k - 1].end = v[i].end;
                } else
                        v[k++] = v[i];
        }
        *ret_n = k;
        return v;
}

/* The exchange's inputs (plan.h, rule 8): its ranges moved across tiers, and its cold
 * memory: DAMON's last cold regions if it has recent ones (a process no longer
 * monitored has none), else its anonymous memory without the pages its samples named
 * over the cold age, when they cover its accesses (lib/sampled-cold.h; *unsampled, the
 * caller's to free). */
static void set_tiers(const struct scan_env *env, const struct proc_rec *p, uint64_t now, struct plan_input *in,
                      struct damon_range **unsampled) {
        _cleanup_free_ struct damon_range *anon = NULL;
        size_t n = 0, n_anon = 0;

        in->tier_recent = p->moved.tier;
        in->n_tier_recent = p->moved.n_tier;
        in->cold = p->cold;
        in->n_cold = now < p->cold_ms + COLD_FRESH_MS ? p->n_cold : 0;
        if (in->n_cold || !env->cfg->exchange || !sampled_cold_known(p->sampled, now, NULL))
                return;
        anon = anon_ranges(in, &n_anon);
        if (anon && sampled_cold_ranges(p->sampled, now, anon, n_anon, unsampled, &n) >= 0) {
                in->cold = *unsampled;
                in->n_cold = n;
        }
}

/* Whether p has memory known cold now (set_tiers). */
static bool has_cold(const struct scan_env *env, const struct proc_rec *p, uint64_t now) {
        return (p->n_cold && now < p->cold_ms + COLD_FRESH_MS) ||
               (env->cfg->exchange && sampled_cold_known(p->sampled, now, NULL));
}

/* What the process's promotions wait for at a fast node and its own cold memory did
 * not make room for: other processes' may at the next tick (rule 8). */
static void post_unserved(const struct scan_env *env, struct proc_rec *p, const struct plan *pl) {
        int idx = pl->exchange_node >= 0 ? topology_node_index(env->topo, (unsigned) pl->exchange_node) : -1;
        uint64_t *slot;

        p->exchange_wait = idx >= 0 && pl->exchange_want ? (unsigned) idx + 1 : 0;
        if (idx < 0 || !pl->exchange_unserved)
                return;
        slot = &env->exchange_posted[idx];
        *slot = *slot > UINT64_MAX - pl->exchange_unserved ? UINT64_MAX : *slot + pl->exchange_unserved;
}

static bool advise_only(const struct scan_env *env, const struct proc_rec *p) {
        return cg_mode_reports_only(p->cg->mode, env->dry_run);
}

/* In advise mode (or a dry run) nothing moves, so the ranges that would are said, at
 * debug level (at most ADVISE_RANGES_LOGGED a scan): what an operator checks before opting in, and
 * what the host test of the software source (tests/unit/test-advise-host.py) reads. */
#define ADVISE_RANGES_LOGGED 1024
static void log_page_ranges(const struct proc_rec *p, const struct plan *pages) {
        for (size_t i = 0; i < pages->n_moves && i < ADVISE_RANGES_LOGGED; i++)
                log_debug("pid=%d: page-level: would move 0x%" PRIx64 "-0x%" PRIx64 " to node %d", (int) p->pid,
                          pages->moves[i].start, pages->moves[i].end, pages->moves[i].target);
        if (pages->n_moves > ADVISE_RANGES_LOGGED)
                log_debug("pid=%d: page-level: %zu more range(s) not listed", (int) p->pid,
                          pages->n_moves - ADVISE_RANGES_LOGGED);
}

/* What the exchange of p's scan demoted, for itself and for others. */
static void log_exchange(const struct proc_rec *p, const struct plan *pl, bool share) {
        uint64_t own = pl->exchange_node >= 0 ? pl->exchange_want - pl->exchange_unserved : 0;

        if (pl->demote_bytes)
                log_debug("cgroup=%s pid=%d: exchange: demoting %" PRIu64 " KiB of cold memory, %" PRIu64
                          " KiB of it for other processes' promotions%s", p->cg->path, (int) p->pid,
                          pl->demote_bytes / 1024, (pl->demote_bytes - (own < pl->demote_bytes ? own : pl->demote_bytes)) / 1024,
                          share ? " (within its cgroup's share of the fast tier)" : "");
}

/* Where a cold range's pages are (plan_params.bytes_on): p's, asked of the kernel up
 * to PAGE_WHERE_EXCHANGE_PAGES a scan. */
struct where_ctx {
        page_where_query_fn query;
        pid_t pid;
        uint64_t budget;
};

static uint64_t cold_bytes_on(void *userdata, uint64_t start, uint64_t end, unsigned node) {
        struct where_ctx *w = userdata;

        return page_where_bytes_on(w->query, w->pid, start, end, node, &w->budget);
}

/* The exchange (rule 8) of p's scan: another process's wait is served only by
 * demotions that will run, not by advise mode's or a dry run's, and from a cgroup with
 * a share of the fast tier only what it holds above its share (fast-use.h). A
 * demotion counts only the pages of its range on the fast node (page-where.h). */
static int exchange(const struct scan_env *env, const struct proc_rec *p, const struct plan_input *in,
                    const struct plan_params *pp, const struct page_decision *d, struct scan *s) {
        size_t n = env->topo->n_nodes;
        _cleanup_free_ uint64_t *give = NULL;
        struct where_ctx where = { env->page_where, p->pid, PAGE_WHERE_EXCHANGE_PAGES };
        struct plan_params own = *pp;
        int r;

        if (env->page_where) {
                own.bytes_on = cold_bytes_on;
                own.bytes_on_userdata = &where;
        }
        if (advise_only(env, p))
                own.exchange_demand = NULL;
        if (own.exchange_demand && env->cgs && p->cg && p->cg->share_by) {
                give = calloc(2 * (n ? n : 1), sizeof(*give));
                if (!give)
                        return -ENOMEM;
                (void) fast_use_limit(env->cgs, env->cfg->cgroup_root, env->topo, env->tick, p->cg, give);
                memcpy(give + n, give, n * sizeof(*give));
                own.exchange_give = give;
        }
        r = plan_exchange(env->topo, in, &own, d, &s->pages);
        if (give)
                fast_use_gave(env->cgs, p->cg, env->topo, give + n, give);
        log_exchange(p, &s->pages, give != NULL);
        return r;
}

/* Page-level evidence since the last scan: pages touched from one node only go there,
 * within their VMA's allowed set (plan_pages). A decision uses a page's evidence once:
 * what counts is where pages are touched now. A page seen once, from one node, is
 * kept for later scans for EVIDENCE_KEEP_S since its sample (at most
 * EVIDENCE_KEEP_PAGES pages a process): at the software source's 100 samples per
 * second a 16 MiB part of a thread gets 0.6 samples a page in 30 s, so evidence
 * dropped at each scan would almost never show a page twice. */
static int decide_pages(const struct scan_env *env, struct proc_rec *p, const struct plan_input *in,
                        const struct plan_params *pp, uint64_t *reserved, struct scan *s) {
        struct page_decision d = {};
        int r;

        /* No samples: nothing to promote, but a donor (damon.h) may still give its cold
         * memory for other processes' promotions. */
        if (!p->seen && !(env->cfg->exchange && in->n_cold)) {
                p->page_planned_bytes = p->promote_planned_bytes = p->demote_planned_bytes = 0;
                return 0;
        }
        if (p->seen && (r = page_agg_decide(p->seen, PAGE_MIN_SAMPLES, &d)) < 0)
                return r;
        /* Promoted already: neither promoted nor waited for again (rule 8). */
        if (env->page_where && p->n_slow)
                (void) page_where_drop_placed(env->page_where, p->pid, &d);
        r = plan_pages(env->topo, in, pp, &d, &s->plan, reserved, &s->pages);
        if (r >= 0 && env->cfg->exchange)
                r = exchange(env, p, in, pp, &d, s);
        if (r >= 0 && env->exchange_posted)
                post_unserved(env, p, &s->pages);
        p->pages_seen = d.pages;
        p->pages_shared = d.shared;
        page_agg_decision_done(&d);
        if (r < 0)
                return r;
        if (p->seen) {
                uint32_t now_s = (uint32_t) (clock_now_ms() / 1000);
                struct page_agg *kept = NULL;

                /* Out of memory loses only the kept evidence. */
                (void) page_agg_carry(p->seen, PAGE_MIN_SAMPLES, now_s - EVIDENCE_KEEP_S, EVIDENCE_KEEP_PAGES,
                                      &kept);
                page_agg_free(p->seen);
                p->seen = kept;
        }
        p->page_planned_bytes = s->pages.bytes;
        p->promote_planned_bytes = s->pages.promote_bytes;
        p->demote_planned_bytes = s->pages.demote_bytes;
        if (s->pages.n_moves)
                log_debug("cgroup=%s pid=%d: page-level: %zu page(s) sampled, %zu shared, %s %" PRIu64
                          " KiB in %zu range(s), %" PRIu64 " KiB of them promotions", p->cg->path, (int) p->pid,
                          p->pages_seen, p->pages_shared, advise_only(env, p) ? "would move" : "moving",
                          s->pages.bytes / 1024, s->pages.n_moves, s->pages.promote_bytes / 1024);
        if (advise_only(env, p))
                log_page_ranges(p, &s->pages);
        return 0;
}

/* For the reports: p's locality against the nodes its threads ran on in the window.
 * Returns whether its size or its local share changed notably (SCAN_CHANGE_PCT). */
static bool update_locality(const struct scan_env *env, struct proc_rec *p, const struct numa_maps *maps,
                            const uint64_t *cpu) {
        struct locality loc;
        uint64_t local = 0;
        bool changing;

        if (locality_compute(env->topo, maps, NULL, 0, &loc) < 0)
                return false;
        for (unsigned i = 0; i < env->topo->n_nodes; i++)
                if (cpu[i])
                        local += loc.bytes[i];
        changing = changed(p->total_bytes, loc.total_bytes) || changed(p->local_bytes, local);
        p->total_bytes = loc.total_bytes;
        p->local_bytes = local;
        if (!p->node_bytes)
                p->node_bytes = calloc(env->topo->n_nodes ? env->topo->n_nodes : 1, sizeof(*p->node_bytes));
        if (p->node_bytes)
                memcpy(p->node_bytes, loc.bytes, env->topo->n_nodes * sizeof(*p->node_bytes));
        locality_done(&loc);
        return changing;
}

/* Where the placer put its threads, for the plan (its memory follows them there). */
static void set_placed(const struct scan_env *env, const struct proc_rec *p, struct plan_input *in) {
        if (!p->place || p->place->placed < 0 || (size_t) p->place->placed >= env->topo->n_nodes)
                return;
        in->placed = true;
        in->placed_node = (int) env->topo->nodes[p->place->placed].id;
        in->placed_at_ms = p->place->placed_at_ms;
}

/* For the thread placement (placer.h): what placing its threads on each node would
 * leave remote. Out of memory: none known, and the placer leaves it alone. */
static void note_stuck_away(const struct scan_env *env, struct proc_rec *p, const struct plan_input *in,
                            const struct plan_params *pp) {
        if (!p->stuck_away)
                p->stuck_away = calloc(env->topo->n_nodes ? env->topo->n_nodes : 1, sizeof(*p->stuck_away));
        if (p->stuck_away)
                plan_stuck_away(env->topo, in, pp, p->stuck_away);
}

/* One line when the decision changed (its reason, or in advise mode the amount). */
static void log_decision(const struct scan_env *env, const struct proc_rec *p, const struct plan *plan) {
        struct log_fields lf = {};

        if (plan->reason == p->reason &&
            !(plan->n_moves && cg_mode_advises(p->cg->mode) && changed(p->planned_bytes, plan->bytes)))
                return;
        log_fields_str(&lf, "NUMABALANCED_CGROUP", p->cg->path);
        log_fields_i64(&lf, "NUMABALANCED_PID", p->pid);
        log_fields_str(&lf, "NUMABALANCED_REASON", plan_reason_name(plan->reason));
        if (plan->n_moves) {
                log_fields_u64(&lf, "NUMABALANCED_PAGES", plan->bytes / page_size());
                log_fields_i64(&lf, "NUMABALANCED_TO", plan->moves[0].target);
                log_full_errno_fields(LOG_LVL_INFO, 0, &lf,
                                      "cgroup=%s pid=%d comm=%s: %s %" PRIu64 " KiB in %zu VMA(s) to node %d",
                                      p->cg->path, (int) p->pid, p->comm,
                                      advise_only(env, p) ? "advise: would move" : "moving",
                                      plan->bytes / 1024, plan->n_moves, plan->moves[0].target);
        } else
                log_full_errno_fields(LOG_LVL_INFO, 0, &lf, "cgroup=%s pid=%d comm=%s: not moving: %s (reason=%s)",
                                      p->cg->path, (int) p->pid, p->comm, plan_reason_text(plan->reason),
                                      plan_reason_name(plan->reason));
}

/* What the reports show of this scan. */
static void remember(struct proc_rec *p, const struct plan *plan, const struct plan *pages,
                     const struct plan_input *in, const struct proc_status *status, uint64_t now) {
        p->reason = plan->reason;
        p->planned_bytes = plan->bytes;
        p->hot_node = plan->hot_node;
        p->target_node = plan->n_moves ? plan->moves[0].target : -1;
        p->full_target = plan->full_target;
        memcpy(p->skipped_bytes, plan->skipped_bytes, sizeof(p->skipped_bytes));
        p->last_scan_ms = now;
        p->rss_kb = status->vm_rss_kb;
        p->scans++;
        p->mems_allowed = in->mems_allowed;
        p->uid = status->uid_real;
        /* Hot pages on a slow node waiting for promotion: only the page-level plan
         * knows them, and explain shows them beside the VMA plan's. */
        p->skipped_bytes[REASON_PROMOTE_RATE] = pages->skipped_bytes[REASON_PROMOTE_RATE];
        p->skipped_bytes[REASON_PROMOTE_FLOOR] = pages->skipped_bytes[REASON_PROMOTE_FLOOR];
}

/* Below min_rss: not decided on, and scanned again at scan_max_ms. */
static bool too_small(const struct scan_env *env, struct proc_rec *p, const struct proc_status *status,
                      uint64_t now) {
        if (status->vm_rss_kb >= env->cfg->min_rss_kb)
                return false;
        p->reason = REASON_TOO_SMALL;
        p->rss_kb = status->vm_rss_kb;
        p->sched.interval_ms = env->cfg->scan_max_ms;
        p->sched.next_scan_ms = now + p->sched.interval_ms;
        return true;
}

/* Rule 3's keep_before (plan.h): the nodes busy in the window before (before) but not
 * in this one (now) that still hold a thread confined to them. A thread pinned to a
 * node that paused for a window (waiting for its siblings, a lull) has not left its
 * memory there: without this the other node's threads alone make a hot node and its
 * pages are taken away. One window's grace only: a confined thread that stays idle
 * stops keeping its node's pages at the next scan. The threads are read only when a
 * busy node went quiet, which few scans see. */
static nb_nodemask keep_before(const struct scan_env *env, struct proc_rec *p, const nb_nodemask *before,
                               const nb_nodemask *now) {
        nb_nodemask quiet, confined;

        nodemask_zero(&quiet);
        if (nodemask_empty(now))
                return quiet; /* no CPU time: nothing moves (plan.h, rule 1) */
        NODEMASK_FOREACH(n, before)
                if (!nodemask_test(now, (unsigned) n))
                        nodemask_set(&quiet, (unsigned) n);
        if (nodemask_empty(&quiet) ||
            node_time_confined_nodes(env->proc_root, p->pid, env->topo, CONFINED_THREADS_MAX, &confined) < 0)
                return (nb_nodemask) {};
        nodemask_and(&quiet, &quiet, &confined);
        NODEMASK_FOREACH(n, &quiet)
                log_debug("pid=%d: node %d's pages stay this scan: its threads there were busy in the window "
                          "before, and one is confined to it", (int) p->pid, n);
        return quiet;
}

/* scan_process() but for the time it took, of which it measures the decision's. */
static int scan(const struct scan_env *env, struct proc_rec *p, uint64_t now, uint64_t *reserved, struct scan *s) {
        _cleanup_free_ uint64_t *cpu = NULL;
        _cleanup_(reading_done) struct reading rd = {};
        struct proc_status status;
        struct plan_input in;
        struct plan_params pp = scan_plan_params(env);
        uint64_t t1;
        bool changing, active;
        nb_nodemask cpu_nodes, busy_before = p->busy_nodes, busy;
        int r, primed;

        p->sched.react_due_ms = 0;
        cpu = calloc(env->topo->n_nodes ? env->topo->n_nodes : 1, sizeof(*cpu));
        if (!cpu)
                return -ENOMEM;
        primed = sample_cpu(env, p, cpu);
        if (primed < 0)
                return primed;
        busy = plan_busy_nodes(env->topo, cpu, pp.keep_node_share_pct);
        if (!nodemask_empty(&busy))
                p->busy_nodes = busy; /* a window without CPU time says nothing of where it works */
        if (env->pages)
                page_sampler_span(env->pages, p->pid, p->cg->turn_uid, spans_nodes(env, cpu));
        if (scan_idle(env, p, primed, cpu, now))
                return 0;
        r = read_status(env, p, &status);
        if (r < 0)
                return r;
        if (too_small(env, p, &status, now))
                return 0;
        cpu_nodes = sampled_scan_cpu_nodes(env, cpu);
        if (sampled_scan_unchanged(env, p, cpu_nodes, status.vm_rss_kb)) {
                scan_sampled(env, p, now, s);
                return 0;
        }
        r = read_process(env, p, &status, &rd);
        if (r < 0)
                return r;
        t1 = cost_thread_ns();

        in = (struct plan_input) {
                .maps = rd.maps,
                .vma_end = rd.ends,
                .mems_allowed = status.has_mems_allowed ? status.mems_allowed : env->topo->with_memory,
                .cpu_ns = cpu,
                .history = p->moved.hist,
                .n_history = p->moved.n_hist,
                .now_ms = now,
                .threads = &rd.threads,
                .vma_mlocked = rd.locked,
                .keep_before = keep_before(env, p, &busy_before, &busy),
        };
        set_placed(env, p, &in);
        set_tiers(env, p, now, &in, &rd.unsampled);
        in.share = rd.share = group_decisions(env, p, &rd, now);
        r = plan_decide(env->topo, &in, &pp, reserved, &s->plan);
        if (r < 0)
                return r;
        r = decide_pages(env, p, &in, &pp, reserved, s);
        if (r < 0)
                return r;
        changing = update_locality(env, p, rd.maps, cpu);
        share_groups_note(env->topo, p, rd.maps, rd.ranges, rd.n_ranges, &in, &pp);
        if (cg_mode_decides_placement(p->cg->mode))
                note_stuck_away(env, p, &in, &pp);
        s->cost_ns[STAGE_DECIDE] = cost_thread_ns() - t1;

        log_decision(env, p, &s->plan);
        remember(p, &s->plan, &s->pages, &in, &status, now);
        /* Where its next page samples may lie (out of memory: the old ranges). */
        (void) proc_records_set_mapped(p, rd.maps, rd.ends);
        (void) proc_records_set_slow(p, rd.maps, rd.ends, env->topo);
        active = s->plan.n_moves || s->pages.n_moves || primed == 0 || changing;
        schedule_next(env, p, now, active);
        sampled_scan_note(env, p, rd.maps, rd.ends, &s->plan, !active, cpu_nodes);
        /* The parsed maps go now (cleanup): the plans name their ranges, which is all
         * the jobs need, and every scan of a tick holding its process's maps until
         * the jobs ran was the tick's peak memory. */
        return 1;
}

int scan_process(const struct scan_env *env, struct proc_rec *p, uint64_t now, uint64_t *reserved, struct scan *s) {
        uint64_t t0 = cost_thread_ns(), spent;
        int r = scan(env, p, now, reserved, s);

        spent = cost_thread_ns() - t0;
        s->cost_ns[STAGE_READ] = spent > s->cost_ns[STAGE_DECIDE] ? spent - s->cost_ns[STAGE_DECIDE] : 0;
        return r;
}

void scan_backoff(const struct scan_env *env, struct proc_rec *p, uint64_t now) {
        schedule_next(env, p, now, false);
}

void scan_bring_forward(struct proc_rec *p, uint64_t at_ms) {
        if (p->sched.next_scan_ms > at_ms)
                p->sched.next_scan_ms = at_ms;
}

void scan_react_at(struct proc_rec *p, uint64_t due_ms) {
        p->sched.react_due_ms = due_ms;
        p->sched.interval_ms = 0;  /* scan_min_ms after this scan */
        scan_bring_forward(p, due_ms);
}

void scan_react_drop(struct proc_rec *p) {
        p->sched.react_due_ms = 0;
}

/* Whether p's cgroup may give some of its cold memory up where demand waits. */
static bool may_give(const struct scan_env *env, const struct proc_rec *p, uint64_t *give) {
        if (!env->cgs || !fast_use_limit(env->cgs, env->cfg->cgroup_root, env->topo, env->tick, p->cg, give))
                return true;
        for (size_t k = 0; k < env->topo->n_nodes; k++)
                if (env->exchange_demand[k] && give[k])
                        return true;
        return false;
}

/* p scanned as soon as scan_min_ms allows. */
static void scan_soon(const struct scan_env *env, struct proc_rec *p, uint64_t now) {
        scan_bring_forward(p, p->last_scan_ms + env->cfg->scan_min_ms > now ? p->last_scan_ms + env->cfg->scan_min_ms
                                                                            : now);
}

/* Whether the exchange made room at the fast node p's promotions last waited for. */
static bool room_made(const struct scan_env *env, const struct proc_rec *p) {
        return p->exchange_wait && env->exchange_credit && p->exchange_wait <= env->topo->n_nodes &&
               env->exchange_credit[p->exchange_wait - 1];
}

void scan_serve_demand(const struct scan_env *env, struct proc_records *procs, uint64_t now) {
        _cleanup_free_ uint64_t *give = NULL;
        bool any = false;

        for (size_t i = 0; i < procs->n; i++)
                if (room_made(env, procs->v[i]))
                        scan_soon(env, procs->v[i], now);
        for (size_t k = 0; k < env->topo->n_nodes && !any; k++)
                any = env->exchange_demand[k] != 0;
        if (!any || !(give = calloc(env->topo->n_nodes ? env->topo->n_nodes : 1, sizeof(*give))))
                return;
        for (size_t i = 0; i < procs->n; i++) {
                struct proc_rec *p = procs->v[i];

                if (p->cg && has_cold(env, p, now) && may_give(env, p, give))
                        scan_soon(env, p, now);
        }
}

void scan_restart_interval(struct proc_rec *p, uint64_t scan_min_ms, uint64_t now) {
        p->sched.interval_ms = scan_min_ms;
        scan_bring_forward(p, now + scan_min_ms);
}

void scan_quarantine(struct proc_rec *p, uint64_t now) {
        p->sched.quarantined_until_ms = now + SCAN_QUARANTINE_MS;
        p->sched.next_scan_ms = p->sched.quarantined_until_ms;
        p->reason = REASON_QUARANTINED;
        p->planned_bytes = p->page_planned_bytes = 0;
}

void scan_cg_growth(const struct scan_env *env, struct cg_rec *cg) {
        uint64_t cur, usec = 0;

        if (cgroup_read_memory_current(env->cfg->cgroup_root, cg->path, &cur) < 0) {
                if (cgroup_read_cpu_usage(env->cfg->cgroup_root, cg->path, &usec) < 0 || usec != cg->cpu_seen_usec)
                        cg->cpu_ran_tick = env->tick;
                cg->cpu_seen_usec = usec;
                cg->growth = env->tick - cg->cpu_ran_tick < GROW_CHECK_TICKS ? GROWTH_UNKNOWN : GROWTH_NONE;
                return;
        }
        cg->growth = cur >= cg->mem_seen + env->cfg->min_misplaced_kb * 1024 ? GROWTH_SOME : GROWTH_NONE;
        /* Growth counts from the last look that found some (or a shrink): slow growth
         * adds up across ticks. */
        if (cg->growth == GROWTH_SOME || cur < cg->mem_seen)
                cg->mem_seen = cur;
}

/* Whether p's last plan held moves back at a node's free-memory floor and the node has
 * room again (this tick's reading): p is scanned now rather than at its backed-off
 * time, so that memory kept out of a full node follows as soon as the node empties.
 * At least min_misplaced of room, so that a node hovering at its floor does not
 * have p rescanned every tick for a few pages. */
static bool room_again(const struct scan_env *env, const struct proc_rec *p) {
        struct plan_params pp = { .free_floor_pct = env->cfg->free_floor_pct };
        uint64_t room;

        if (p->full_target < 0)
                return false;
        env->need_free_memory(env->need_free_memory_userdata);
        room = plan_node_room(env->topo, p->full_target, &pp);
        return room > 0 && room / 1024 >= env->cfg->min_misplaced_kb;
}

/* Whether settled p grew enough since its last scan to be scanned now (GROW_CHECK_TICKS):
 * looked at only when its next scan is further than a check away, and its cgroup may
 * have grown (or cannot say, and it is p's turn). */
static bool grew(const struct scan_env *env, struct proc_rec *p, uint64_t now) {
        uint64_t pages, kb, min_kb = env->cfg->min_misplaced_kb;

        if (!p->rss_kb || p->sched.next_scan_ms <= now + GROW_CHECK_TICKS * env->cfg->tick_ms ||
            p->cg->growth == GROWTH_NONE ||
            (p->cg->growth == GROWTH_UNKNOWN && (env->tick + (uint64_t) p->pid) % GROW_CHECK_TICKS))
                return false;
        if (proc_read_statm_resident(env->proc_root, p->pid, &pages) < 0)
                return false;   /* gone or unreadable: its own scan will say */
        kb = pages * (page_size() / 1024);
        if (kb < p->rss_kb) {
                p->rss_kb = kb;   /* shrank: growth counts from here */
                return false;
        }
        if (kb - p->rss_kb < min_kb || kb - p->rss_kb < p->rss_kb / SCAN_GROW_SHARE)
                return false;
        log_debug("cgroup=%s pid=%d: resident %" PRIu64 " KiB, %" PRIu64 " KiB more than at its last scan: "
                  "scanning now", p->cg->path, (int) p->pid, kb, kb - p->rss_kb);
        p->rss_kb = kb;
        /* New memory is read in full, not sampled (sampled-scan.h). */
        proc_records_drop_huge(p);
        return true;
}

enum scan_due scan_due_now(const struct scan_env *env, struct proc_rec *p, uint64_t now) {
        if (now >= p->sched.next_scan_ms)
                return SCAN_DUE;
        if (room_again(env, p))
                return SCAN_DUE_ROOM;
        return grew(env, p, now) ? SCAN_DUE_GREW : SCAN_NOT_DUE;
}

void scan_done(struct scan *s) {
        plan_done(&s->plan);
        plan_done(&s->pages);
}
