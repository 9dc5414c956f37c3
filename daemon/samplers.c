/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The samplers, chosen, attached while needed, drained (samplers.h). */
#include "cg-mode.h"
#include "clock.h"
#include "log.h"
#include "page-agg.h"
#include "pagesize.h"
#include "samplers.h"

void samplers_init(struct samplers *s) {
        *s = (struct samplers) { .arm_log = LOG_RATELIMIT(60000, 1) };
}

/* Both, for t: the page sampler builds on the placement source. */
static int choose(struct samplers *s, const struct nb_config *cfg, const char *proc_root, const char *sys_root,
                  const struct topology *t) {
        int r = source_choose(cfg->source, t, &s->source);

        if (r < 0)
                return r;
        return page_sampler_choose(cfg, proc_root, sys_root, t, s->source, &s->pages);
}

int samplers_start(struct samplers *s, const struct nb_config *cfg, const char *proc_root, const char *sys_root,
                   const struct topology *t) {
        s->one_node = nodemask_weight(&t->with_memory) < 2;
        if (s->one_node)
                log_notice("One node has memory: nothing to balance. numabalanced attaches no sampler and "
                           "re-reads the topology at each tick until a second node has memory");
        return choose(s, cfg, proc_root, sys_root, t);
}

void samplers_sync(struct samplers *s, const struct proc_records *procs, struct counters *c) {
        bool want = procs->n > 0 && !s->one_node;
        int r, r2 = 0;

        if (want == s->armed)
                return;
        r = node_time_source_arm(s->source, want);
        if (s->pages)
                r2 = page_sampler_arm(s->pages, want);
        if (want && (r < 0 || r2 < 0)) {
                /* Tried again at the next admission or tick: what failed (out of
                 * memory, a perf event the PMU had no counter for) may pass. */
                if (log_ratelimit_ok(&s->arm_log, clock_now_ms(), NULL))
                        log_warning_errno(r < 0 ? r : r2, "Failed to attach the %s sampler: %m",
                                          r < 0 ? s->source->name : page_sampler_name(s->pages));
                (void) node_time_source_arm(s->source, false);
                if (s->pages)
                        (void) page_sampler_arm(s->pages, false);
                return;
        }
        s->armed = want;
        c->sampler_arms += want;
        log_debug("%s the samplers: %zu processes watched", want ? "Attached" : "Detached", procs->n);
}

void samplers_watch(struct samplers *s, const struct proc_records *procs, struct counters *c, pid_t pid,
                    uid_t owner) {
        int r;

        samplers_sync(s, procs, c);
        if (!s->pages)
                return;
        r = page_sampler_watch(s->pages, pid, owner);
        if (r < 0)
                log_debug_errno(r, "pid=%d: not sampled page by page: %m", (int) pid);
}

void samplers_unwatch(struct samplers *s, const struct proc_records *procs, pid_t pid, uint64_t tick) {
        node_time_source_unwatch(s->source, pid);
        if (s->pages && !proc_records_current(procs, pid, tick))
                page_sampler_unwatch(s->pages, pid);
}

/* What a drain hands its samples to. */
struct drain {
        struct proc_records *procs;
        const struct topology *topo;
        struct counters *counters;
        uint32_t now_s;               /* read once a drain: see on_page_sample() */
        uint64_t now_ms;
        uint64_t cold_age_ms;         /* pages sampled over it kept for the exchange; 0: not */
};

/* The pages sampled over the cold age (lib/sampled-cold.h), of a process whose memory
 * may move: where the exchange finds cold memory without DAMON. */
static void note_sampled(const struct drain *d, struct proc_rec *p, uint64_t addr, uint64_t count) {
        if (!d->cold_age_ms || !p->cg || !cg_mode_moves(p->cg->mode))
                return;
        if (!p->sampled && sampled_cold_new(&d->procs->sampled_pool, &p->sampled) < 0)
                return;
        sampled_cold_add(p->sampled, addr, count, d->now_ms, d->cold_age_ms);
}

/* A count of page-level samples (page_sampler_drain): kept for the process's next scan. */
static void on_page_sample(void *userdata, pid_t tgid, uint64_t addr, unsigned node, uint64_t count) {
        struct drain *d = userdata;
        struct proc_rec *p = proc_records_find(d->procs, tgid);

        d->counters->page_samples += count;
        if (!p)
                return; /* exited, or not (yet) ours */
        /* Every sample counts for what is not cold, mapped at the last full read or
         * not: a mapping made or grown since is in use, and a new scan's cold ranges
         * come from its own maps. An address made up only keeps more memory warm. */
        note_sampled(d, p, addr, count);
        /* An address outside every mapping its last full read found is not its memory
         * (a decoded address gone wrong, or chosen): dropped before it takes room in
         * the table (page-agg.h). Before its first full read, all are. */
        if (!proc_records_mapped(p, addr)) {
                d->counters->page_samples_unmapped += count;
                return;
        }
        if (!p->seen && page_agg_new(d->topo, page_size(), &p->seen) < 0)
                return;
        /* The drain's clock, not one read a sample: tens of thousands of samples a
         * second each paying clock_gettime(2) (a system call where the clocksource
         * has no vDSO, as with HPET) made a tick of a 2-node guest take 2-8 s. */
        page_agg_set_clock(p->seen, d->now_s);
        (void) page_agg_add_counts(p->seen, addr, node, count);
}

/* Sampled pages no longer kept: the exchange off, no slow node, a mode that does not
 * move, or no sample for SAMPLED_COLD_FRESH_MS (they would have to be replaced by
 * whole new windows before they named anything cold again). Their room goes back to
 * the pool, which an idle tenant would otherwise hold. */
static void drop_idle_sampled(const struct drain *d) {
        for (size_t i = 0; i < d->procs->n; i++) {
                struct proc_rec *p = d->procs->v[i];

                if (p->sampled && (!d->cold_age_ms || !p->cg || !cg_mode_moves(p->cg->mode) ||
                                   sampled_cold_stale(p->sampled, d->now_ms))) {
                        sampled_cold_free(p->sampled);
                        p->sampled = NULL;
                }
        }
}

uint64_t samplers_drain(struct samplers *s, struct proc_records *procs, const struct topology *t,
                        const struct nb_config *cfg, struct counters *c) {
        uint64_t now = clock_now_ms();
        struct drain d = {
                .procs = procs, .topo = t, .counters = c, .now_s = (uint32_t) (now / 1000), .now_ms = now,
                .cold_age_ms = cfg->exchange && !nodemask_empty(&t->slow) ? cfg->cold_age_ms : 0,
        };
        const struct sample_quota *q;
        int r;

        if (!s->pages)
                return 0;
        q = page_sampler_quota(s->pages);
        r = page_sampler_drain(s->pages, on_page_sample, &d);
        if (r < 0)
                log_debug_errno(r, "Failed to read the page-level samples: %m");
        drop_idle_sampled(&d);
        c->sampling_refused = q ? q->refused : 0;
        return page_sampler_take_cpu_ns(s->pages);
}

int samplers_second_node(struct samplers *s, const char *sys_root, struct topology **ret) {
        _cleanup_(topology_freep) struct topology *t = NULL;

        if (!s->one_node || topology_read(sys_root, &t) < 0 || nodemask_weight(&t->with_memory) < 2)
                return 0;
        log_notice("%u nodes have memory now: balancing the opted-in cgroups from now on",
                   nodemask_weight(&t->with_memory));
        *ret = TAKE_PTR(t);
        return 1;
}

int samplers_rechoose(struct samplers *s, const struct nb_config *cfg, const char *proc_root, const char *sys_root,
                      const struct topology *t, struct tenant_reader *reader) {
        int r;

        samplers_done(s);
        s->armed = false;
        s->one_node = false;
        r = choose(s, cfg, proc_root, sys_root, t);
        if (r < 0) {
                s->source = &node_time_source_proc;   /* never NULL for the views */
                s->one_node = true;
                return r;
        }
        page_sampler_set_reader(s->pages, reader);
        return 0;
}

void samplers_done(struct samplers *s) {
        page_sampler_free(s->pages);
        s->pages = NULL;
        node_time_source_free(s->source);
        s->source = NULL;
}
