/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The daemon's CPU time, charged to whoever causes it (cost.h). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include "cg-records.h"
#include "cost.h"
#include "log.h"

void cost_charge(struct manager *m, struct cg_rec *cg, enum stage s, uint64_t ns) {
        if (!cg || ns == 0)
                return;
        cg->cost_ns[s] += ns;
        m->cost_ns[s] += ns;
}

void cost_charge_proc(struct manager *m, struct proc_rec *p, enum stage s, uint64_t ns) {
        if (!p->cg)
                return;
        p->cost_ns[s] += ns;
        cost_charge(m, p->cg, s, ns);
}

void cost_scanned(struct manager *m, struct proc_rec *p, const uint64_t before[_STAGE_MAX], uint64_t spent_ns) {
        uint64_t charged = 0;

        for (int s = 0; s < _STAGE_MAX; s++) {
                uint64_t d = p->cost_ns[s] - before[s];
                m->cost_ns[s] += d;
                charged += d;
        }
        if (spent_ns > charged)
                cost_charge_proc(m, p, STAGE_READ, spent_ns - charged);
}

/* ns * part / whole without overflow. */
static uint64_t scale(uint64_t ns, uint64_t part, uint64_t whole) {
        return (uint64_t) ((unsigned __int128) ns * part / whole);
}

uint64_t cost_share_by_procs(struct manager *m, enum stage s, uint64_t ns) {
        uint64_t procs = 0, given = 0;
        struct cg_rec *last = NULL;

        for (size_t i = 0; i < m->n_cgs; i++)
                if (m->cgs[i]->seen)
                        procs += m->cgs[i]->n_procs;
        if (procs == 0 || ns == 0)
                return ns;
        for (size_t i = 0; i < m->n_cgs; i++) {
                struct cg_rec *c = m->cgs[i];
                uint64_t part;

                if (!c->seen || c->n_procs == 0)
                        continue;
                part = scale(ns, c->n_procs, procs);
                cost_charge(m, c, s, part);
                given += part;
                last = c;
        }
        /* What the division left (less than a ns per cgroup). */
        cost_charge(m, last, s, ns - given);
        return 0;
}

uint64_t cost_share_even(struct manager *m, enum stage s, uint64_t ns) {
        uint64_t part;

        if (m->n_cgs == 0 || ns == 0)
                return ns;
        part = ns / m->n_cgs;
        for (size_t i = 0; i < m->n_cgs; i++)
                cost_charge(m, m->cgs[i], s, part + (i == 0 ? ns % m->n_cgs : 0));
        return 0;
}

/* ---- subtrees -------------------------------------------------------------------- */

static int cmp_subtree(const void *key, const void *elem) {
        return strcmp(key, (*(struct subtree_rec *const *) elem)->path);
}

/* The subtree record of path, made if there is none (sorted in). NULL: out of memory. */
static struct subtree_rec *get_subtree(struct manager *m, const char *path) {
        struct subtree_rec **hit, *t, **n;
        size_t at = 0;

        /* bsearch() must not be given a NULL array, even of no elements. */
        hit = m->n_subtrees ? bsearch(path, m->subtrees, m->n_subtrees, sizeof(*m->subtrees), cmp_subtree) : NULL;
        if (hit)
                return *hit;
        while (at < m->n_subtrees && strcmp(m->subtrees[at]->path, path) < 0)
                at++;
        t = calloc(1, sizeof(*t));
        n = realloc(m->subtrees, (m->n_subtrees + 1) * sizeof(*n));
        if (n)
                m->subtrees = n;
        if (!t || !n || !(t->path = strdup(path))) {
                free(t);
                return NULL;
        }
        memmove(m->subtrees + at + 1, m->subtrees + at, (m->n_subtrees - at) * sizeof(*n));
        m->subtrees[at] = t;
        m->n_subtrees++;
        return t;
}

static void forget_subtrees(struct manager *m) {
        size_t w = 0;

        for (size_t i = 0; i < m->n_subtrees; i++)
                if (m->subtrees[i]->seen_tick == m->tick)
                        m->subtrees[w++] = m->subtrees[i];
                else {
                        free(m->subtrees[i]->path);
                        free(m->subtrees[i]);
                }
        m->n_subtrees = w;
}

uint64_t cost_walk_others(struct manager *m, const struct cgroup_selection *sel) {
        uint64_t charged = 0;

        for (size_t i = 0; i < sel->n_others; i++) {
                const struct cgroup_walk_cost *o = &sel->others[i];
                struct cg_rec *c = cg_records_find(m, o->path);
                struct subtree_rec *t;

                charged += o->walk_ns;
                /* An opted-in top-level cgroup with a child that opted out. */
                if (c) {
                        cost_charge(m, c, STAGE_WALK, o->walk_ns);
                        continue;
                }
                t = get_subtree(m, o->path);
                if (!t) {
                        charged -= o->walk_ns;  /* out of memory: left unattributed */
                        continue;
                }
                t->walk_ns += o->walk_ns;
                t->seen_tick = m->tick;
                m->cost_ns[STAGE_WALK] += o->walk_ns;
                m->subtree_walk_ns += o->walk_ns;
        }
        forget_subtrees(m);
        return charged;
}

void cost_subtrees_free(struct manager *m) {
        for (size_t i = 0; i < m->n_subtrees; i++) {
                free(m->subtrees[i]->path);
                free(m->subtrees[i]);
        }
        free(m->subtrees);
        m->subtrees = NULL;
        m->n_subtrees = 0;
}

/* ---- migration runs ------------------------------------------------------------------ */

uint64_t *cost_migrate_before(const struct manager *m) {
        uint64_t *before = calloc(m->n_cgs ? m->n_cgs : 1, sizeof(*before));

        for (size_t i = 0; before && i < m->n_cgs; i++)
                before[i] = m->cgs[i]->cost_ns[STAGE_MIGRATE];
        return before;
}

uint64_t cost_migrate_after(struct manager *m, uint64_t *before, uint64_t main_ns) {
        uint64_t workers = 0, given = 0;
        struct cg_rec *last = NULL;

        if (!before)
                return main_ns;
        for (size_t i = 0; i < m->n_cgs; i++)
                workers += m->cgs[i]->cost_ns[STAGE_MIGRATE] - before[i];
        m->cost_ns[STAGE_MIGRATE] += workers;
        if (workers == 0) {
                free(before);
                return main_ns;
        }
        for (size_t i = 0; i < m->n_cgs; i++) {
                uint64_t d = m->cgs[i]->cost_ns[STAGE_MIGRATE] - before[i], part;

                if (d == 0)
                        continue;
                part = scale(main_ns, d, workers);
                cost_charge(m, m->cgs[i], STAGE_MIGRATE, part);
                given += part;
                last = m->cgs[i];
        }
        cost_charge(m, last, STAGE_MIGRATE, main_ns - given);
        free(before);
        return 0;
}

void cost_update_unattributed(struct manager *m) {
        uint64_t process = clock_now_ns(CLOCK_PROCESS_CPUTIME_ID), charged = m->startup_cpu_ns, u;

        for (int s = 0; s < _STAGE_MAX; s++)
                charged += m->cost_ns[s];
        u = process > charged ? process - charged : 0;
        if (u > m->unattributed_ns)
                m->unattributed_ns = u;
}
