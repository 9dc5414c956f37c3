/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The daemon's CPU time, charged to whoever causes it (cost.h). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include "cg-records.h"
#include "cost.h"
#include "log.h"
#include "migrate.h"
#include "proc-records.h"

void cost_charge(struct cost_ledger *l, struct cg_rec *cg, enum stage s, uint64_t ns) {
        if (!cg || ns == 0)
                return;
        cg->cost_ns[s] += ns;
        l->total_ns[s] += ns;
}

void cost_charge_proc(struct cost_ledger *l, struct proc_rec *p, enum stage s, uint64_t ns) {
        if (!p->cg || ns == 0)
                return;
        p->cost_ns[s] += ns;
        cost_charge(l, p->cg, s, ns);
}

void cost_pumped(struct cost_ledger *l, uint64_t ns) {
        l->pump_ns += ns;
}

/* ns * part / whole without overflow. */
static uint64_t scale(uint64_t ns, uint64_t part, uint64_t whole) {
        return (uint64_t) ((unsigned __int128) ns * part / whole);
}

uint64_t cost_share_by_procs(struct cost_ledger *l, const struct cg_records *cgs, enum stage s, uint64_t ns) {
        uint64_t procs = 0, given = 0;
        struct cg_rec *last = NULL;

        for (size_t i = 0; i < cgs->n; i++)
                if (cgs->v[i]->seen)
                        procs += cgs->v[i]->n_procs;
        if (procs == 0 || ns == 0)
                return ns;
        for (size_t i = 0; i < cgs->n; i++) {
                struct cg_rec *c = cgs->v[i];
                uint64_t part;

                if (!c->seen || c->n_procs == 0)
                        continue;
                part = scale(ns, c->n_procs, procs);
                cost_charge(l, c, s, part);
                given += part;
                last = c;
        }
        /* What the division left (less than a ns per cgroup). */
        cost_charge(l, last, s, ns - given);
        return 0;
}

uint64_t cost_share_even(struct cost_ledger *l, const struct cg_records *cgs, enum stage s, uint64_t ns) {
        uint64_t part;

        if (cgs->n == 0 || ns == 0)
                return ns;
        part = ns / cgs->n;
        for (size_t i = 0; i < cgs->n; i++)
                cost_charge(l, cgs->v[i], s, part + (i == 0 ? ns % cgs->n : 0));
        return 0;
}

void cost_depart(struct cost_ledger *l, const struct cg_rec *cg) {
        for (int s = 0; s < _STAGE_MAX; s++)
                l->departed_ns[s] += cg->cost_ns[s];
}

/* ---- subtrees -------------------------------------------------------------------- */

static int cmp_subtree(const void *key, const void *elem) {
        return strcmp(key, (*(struct subtree_rec *const *) elem)->path);
}

/* The subtree record of path, made if there is none (sorted in). NULL: out of memory. */
static struct subtree_rec *get_subtree(struct cost_ledger *l, const char *path) {
        struct subtree_rec **hit, *t, **n;
        size_t at = 0;

        /* bsearch() must not be given a NULL array, even of no elements. */
        hit = l->n_subtrees ? bsearch(path, l->subtrees, l->n_subtrees, sizeof(*l->subtrees), cmp_subtree) : NULL;
        if (hit)
                return *hit;
        while (at < l->n_subtrees && strcmp(l->subtrees[at]->path, path) < 0)
                at++;
        t = calloc(1, sizeof(*t));
        n = realloc(l->subtrees, (l->n_subtrees + 1) * sizeof(*n));
        if (n)
                l->subtrees = n;
        if (!t || !n || !(t->path = strdup(path))) {
                free(t);
                return NULL;
        }
        memmove(l->subtrees + at + 1, l->subtrees + at, (l->n_subtrees - at) * sizeof(*n));
        l->subtrees[at] = t;
        l->n_subtrees++;
        return t;
}

static void forget_subtrees(struct cost_ledger *l, uint64_t tick) {
        size_t w = 0;

        for (size_t i = 0; i < l->n_subtrees; i++)
                if (l->subtrees[i]->seen_tick == tick)
                        l->subtrees[w++] = l->subtrees[i];
                else {
                        free(l->subtrees[i]->path);
                        free(l->subtrees[i]);
                }
        l->n_subtrees = w;
}

uint64_t cost_walk_others(struct cost_ledger *l, const struct cg_records *cgs, const struct cgroup_selection *sel,
                          uint64_t tick) {
        uint64_t charged = 0;

        for (size_t i = 0; i < sel->n_others; i++) {
                const struct cgroup_walk_cost *o = &sel->others[i];
                struct cg_rec *c = cg_records_find(cgs, o->path);
                struct subtree_rec *t;

                /* An opted-in top-level cgroup with a child that opted out. */
                if (c) {
                        cost_charge(l, c, STAGE_WALK, o->walk_ns);
                        charged += o->walk_ns;
                        continue;
                }
                t = get_subtree(l, o->path);
                if (!t)
                        continue;       /* out of memory: left unattributed */
                t->walk_ns += o->walk_ns;
                t->seen_tick = tick;
                l->total_ns[STAGE_WALK] += o->walk_ns;
                l->subtree_walk_ns += o->walk_ns;
                charged += o->walk_ns;
        }
        forget_subtrees(l, tick);
        return charged;
}

/* ---- migration runs ------------------------------------------------------------------ */

uint64_t cost_charge_run(struct cost_ledger *l, const struct migrate_job *jobs, size_t n_jobs, uint64_t main_ns) {
        uint64_t workers = 0, given = 0;
        struct proc_rec *last = NULL;

        for (size_t q = 0; q < n_jobs; q++) {
                struct proc_rec *p = jobs[q].userdata;

                if (p && p->cg) {
                        cost_charge_proc(l, p, STAGE_MIGRATE, jobs[q].cpu_ns);
                        workers += jobs[q].cpu_ns;
                }
        }
        if (workers == 0)
                return main_ns;
        for (size_t q = 0; q < n_jobs; q++) {
                struct proc_rec *p = jobs[q].userdata;
                uint64_t part;

                if (!p || !p->cg || jobs[q].cpu_ns == 0)
                        continue;
                part = scale(main_ns, jobs[q].cpu_ns, workers);
                cost_charge_proc(l, p, STAGE_MIGRATE, part);
                given += part;
                last = p;
        }
        cost_charge_proc(l, last, STAGE_MIGRATE, main_ns - given);
        return 0;
}

/* ---- the rest ------------------------------------------------------------------------- */

uint64_t cost_unattributed_now(const struct cost_ledger *l) {
        uint64_t process = clock_now_ns(CLOCK_PROCESS_CPUTIME_ID), charged = l->startup_cpu_ns, u;

        for (int s = 0; s < _STAGE_MAX; s++)
                charged += l->total_ns[s];
        u = process > charged ? process - charged : 0;
        return u > l->unattributed_ns ? u : l->unattributed_ns;
}

void cost_update_unattributed(struct cost_ledger *l) {
        l->unattributed_ns = cost_unattributed_now(l);
}

void cost_ledger_done(struct cost_ledger *l) {
        for (size_t i = 0; i < l->n_subtrees; i++) {
                free(l->subtrees[i]->path);
                free(l->subtrees[i]);
        }
        free(l->subtrees);
        l->subtrees = NULL;
        l->n_subtrees = 0;
}
