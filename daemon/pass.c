/* SPDX-License-Identifier: GPL-2.0-or-later */
/* A tick's or a react pass's work in progress (pass.h). */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include "cg-mode.h"
#include "clock.h"
#include "pass.h"
#include "placer.h"
#include "plan.h"

void pass_logs_init(struct pass_logs *l) {
        *l = (struct pass_logs) { .oom = LOG_RATELIMIT(60000, 1), .quarantine = LOG_RATELIMIT(60000, 10) };
}

int pass_start(struct pass *ps, const struct pass_env *env, uint64_t now, uint64_t started_ns) {
        *ps = (struct pass) { .env = *env, .now = now, .started_ns = started_ns, .jobs_ran_ns = started_ns };
        ps->reserved = calloc(plan_reserved_len(env->topo) + 1, sizeof(*ps->reserved));
        return ps->reserved ? 0 : -ENOMEM;
}

static void scans_done(struct pass_scans *scans) {
        for (size_t i = 0; i < scans->n; i++)
                scan_done(&scans->v[i]);
        scans->n = 0;
        scans->moves = false;
}

void pass_done(struct pass *ps) {
        scans_done(&ps->scans);
        free(ps->scans.v);
        free(ps->reserved);
}

/* Room for one more scan in the list. Out of memory, p stays due (its next scan
 * time unchanged): it is scanned at the next tick, and that is said. */
static bool scans_grow(struct pass *ps, const struct proc_rec *p) {
        struct pass_scans *scans = &ps->scans;
        size_t nc = scans->cap ? scans->cap * 2 : 64;
        struct scan *ns;

        if (scans->n < scans->cap)
                return true;
        ns = realloc(scans->v, nc * sizeof(*ns));
        if (!ns) {
                if (log_ratelimit_ok(&ps->env.logs->oom, clock_now_ms(), NULL))
                        log_warning("cgroup=%s pid=%d: out of memory for its scan, scanning it at the next tick",
                                    p->cg->path, (int) p->pid);
                return false;
        }
        scans->v = ns;
        scans->cap = nc;
        return true;
}

/* A read of p's files or memory overran its deadline: its owner is keeping it
 * waiting (a FUSE page, a busy mmap lock) or it is much bigger than it looks. Either
 * way it is not read again for SCAN_QUARANTINE_MS (scan_quarantine()), and explain
 * says why. The reader refuses its owner's other reads until that one returns. */
static void quarantine(struct pass *ps, struct proc_rec *p) {
        scan_quarantine(p, ps->now);
        ps->env.counters->quarantines++;
        if (log_ratelimit_ok(&ps->env.logs->quarantine, ps->now, NULL))
                log_warning("cgroup=%s pid=%d comm=%s uid=%u: a read of its /proc files or memory did not finish "
                            "in time: quarantined for %" PRIu64 " min (none of its owner's processes is read "
                            "until that read returns)", p->cg->path, (int) p->pid, p->comm, (unsigned) p->cg->turn_uid,
                            SCAN_QUARANTINE_MS / 60000);
}

/* What follows a scan that planned nothing (r <= 0: idle or small, or failed). */
static void not_planned(struct pass *ps, const struct scan_env *env, struct proc_rec *p, int r) {
        if (r == 0)
                return;
        if (r == -ETIMEDOUT) {
                quarantine(ps, p);
                return;
        }
        if (r == -EBUSY) {
                /* Due still: refused at once while its owner's read lasts. */
                p->reason = REASON_READ_DEFERRED;
                ps->env.counters->reads_deferred++;
                return;
        }
        /* Backed off like a settled process: a process that cannot be read (one of a
         * tenant's, unreadable or gone) is not read again at every tick. */
        scan_backoff(env, p, ps->now);
        if (r != -ESRCH && r != -ENOENT)
                log_debug_errno(r, "cgroup=%s pid=%d: cannot read, ignoring: %m", p->cg->path, (int) p->pid);
}

uint64_t pass_scan(struct pass *ps, const struct scan_env *env, struct proc_rec *p) {
        struct pass_scans *scans = &ps->scans;
        uint64_t charged = 0;
        struct scan *sc;
        int r;

        if (p->sched.quarantined_until_ms > ps->now)
                return 0;
        env->need_free_memory(env->need_free_memory_userdata);
        if (!scans_grow(ps, p))
                return 0;
        sc = &scans->v[scans->n];
        *sc = (struct scan) { .rec = p };
        r = scan_process(env, p, ps->now, ps->reserved, sc);
        for (int st = 0; st < _STAGE_MAX; st++) {
                cost_charge_proc(ps->env.cost, p, (enum stage) st, sc->cost_ns[st]);
                charged += sc->cost_ns[st];
        }
        ps->env.counters->sampled_scans += sc->sampled;
        if (r > 0) {
                scans->moves |= sc->plan.n_moves || sc->pages.n_moves;
                scans->n++;
                return charged;
        }
        scan_done(sc);   /* a plan made before a later step failed */
        not_planned(ps, env, p, r);
        return charged;
}

bool pass_jobs_due(const struct pass *ps, uint64_t now_ns) {
        return ps->scans.moves && now_ns >= ps->jobs_ran_ns + PASS_JOBS_EARLY_NS;
}

/* Runs the jobs of the first k scans, forgets them and keeps the rest in order. */
static int run_first(struct pass *ps, const struct jobs_env *env, size_t k) {
        struct pass_scans *s = &ps->scans;
        uint64_t main_ns = 0;
        int r;

        if (k == 0)
                return 0;       /* nothing planned: no run */
        jobs_keep_placed_targets(ps->env.topo, s->v, k);
        r = jobs_run(env, s->v, k, ps->now, &main_ns);
        ps->charged += main_ns;
        for (size_t i = 0; i < k; i++)
                scan_done(&s->v[i]);
        memmove(s->v, s->v + k, (s->n - k) * sizeof(*s->v));
        s->n -= k;
        s->moves = false;
        for (size_t i = 0; i < s->n; i++)
                s->moves |= s->v[i].plan.n_moves || s->v[i].pages.n_moves;
        ps->jobs_ran_ns = clock_now_ns(CLOCK_MONOTONIC);
        return r;
}

int pass_run_jobs(struct pass *ps, const struct jobs_env *env) {
        return run_first(ps, env, ps->scans.n);
}

/* Whether sc's moves wait for the tick's placer round (pass.h): its cgroup places
 * threads and it is not placed yet. A placed process's moves are kept to its node
 * (jobs_keep_placed_targets) and may run now. */
static bool waits_for_placer(const struct scan *sc) {
        const struct proc_place *pp = sc->rec->place;

        return sc->rec->cg && cg_mode_places(sc->rec->cg->mode) && (!pp || pp->placed < 0);
}

int pass_run_jobs_early(struct pass *ps, const struct jobs_env *env) {
        struct pass_scans *s = &ps->scans;
        size_t k = 0;

        /* Those that may run now first, each group in its order. */
        for (size_t i = 0; i < s->n; i++)
                if (!waits_for_placer(&s->v[i])) {
                        struct scan t = s->v[i];

                        memmove(s->v + k + 1, s->v + k, (i - k) * sizeof(*s->v));
                        s->v[k++] = t;
                }
        return run_first(ps, env, k);
}
