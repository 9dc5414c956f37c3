/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The cgroup records: an array for the reports, a chained hash for the tick
 * (cg-records.h). */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include "cg-records.h"
#include "siphash.h"

/* Buckets at first; doubled whenever there are more records than buckets. */
#define BUCKETS_MIN 64

static uint64_t hash_path(const struct manager *m, const char *path) {
        return siphash24(path, strlen(path), m->cg_key);
}

static struct cg_rec **bucket(const struct manager *m, uint64_t h) {
        return &m->cg_buckets[h & (m->n_cg_buckets - 1)];
}

/* Doubles the buckets (or makes the first ones). Out of memory, the chains just get
 * longer: still correct. */
static void rehash(struct manager *m) {
        size_t n = m->n_cg_buckets ? m->n_cg_buckets * 2 : BUCKETS_MIN;
        struct cg_rec **b = calloc(n, sizeof(*b));

        if (!b)
                return;
        free(m->cg_buckets);
        m->cg_buckets = b;
        m->n_cg_buckets = n;
        for (size_t i = 0; i < m->n_cgs; i++) {
                struct cg_rec *c = m->cgs[i], **head = bucket(m, c->hash);
                c->hnext = *head;
                *head = c;
        }
}

struct cg_rec *cg_records_find(const struct manager *m, const char *path) {
        uint64_t h;

        if (m->n_cg_buckets == 0)
                return NULL;
        h = hash_path(m, path);
        for (struct cg_rec *c = *bucket(m, h); c; c = c->hnext)
                if (c->hash == h && strcmp(c->path, path) == 0)
                        return c;
        return NULL;
}

/* The owner of the cgroup's directory (root if it cannot be read). */
static uid_t owner_of(const struct manager *m, const char *path) {
        char full[PATH_MAX];
        struct stat st;

        snprintf(full, sizeof(full), "%s%s", m->cfg.cgroup_root, strcmp(path, "/") == 0 ? "" : path);
        return stat(full, &st) == 0 ? st.st_uid : 0;
}

static struct cg_rec *add(struct manager *m, const char *path) {
        struct cg_rec *c, **head;

        if (m->n_cgs == m->cap_cgs) {
                size_t nc = m->cap_cgs ? m->cap_cgs * 2 : 16;
                struct cg_rec **n = reallocarray(m->cgs, nc, sizeof(*n));
                if (!n)
                        return NULL;
                m->cgs = n;
                m->cap_cgs = nc;
        }
        if (m->n_cgs >= m->n_cg_buckets)
                rehash(m);
        if (m->n_cg_buckets == 0)
                return NULL;
        c = calloc(1, sizeof(*c));
        if (!c || !(c->path = strdup(path))) {
                free(c);
                return NULL;
        }
        c->hash = hash_path(m, path);
        c->owner = owner_of(m, path);
        head = bucket(m, c->hash);
        c->hnext = *head;
        *head = c;
        m->cgs[m->n_cgs++] = c;
        return c;
}

struct cg_rec *cg_records_get(struct manager *m, const struct cgroup_entry *e) {
        struct cg_rec *c = cg_records_find(m, e->path);

        if (!c)
                c = add(m, e->path);
        if (c) {
                c->mode = e->mode;
                c->source = e->source;
                c->covers_uid = e->covers_uid;
        }
        return c;
}

static void unlink_hash(struct manager *m, struct cg_rec *c) {
        for (struct cg_rec **pp = bucket(m, c->hash); *pp; pp = &(*pp)->hnext)
                if (*pp == c) {
                        *pp = c->hnext;
                        return;
                }
}

void cg_records_sweep(struct manager *m) {
        size_t w = 0;

        for (size_t i = 0; i < m->n_cgs; i++) {
                struct cg_rec *c = m->cgs[i];

                if (c->seen) {
                        m->cgs[w++] = c;
                        continue;
                }
                for (int s = 0; s < _STAGE_MAX; s++)
                        m->departed_cost_ns[s] += c->cost_ns[s];
                unlink_hash(m, c);
                free(c->path);
                free(c);
        }
        m->n_cgs = w;
}

void cg_records_free(struct manager *m) {
        for (size_t i = 0; i < m->n_cgs; i++) {
                free(m->cgs[i]->path);
                free(m->cgs[i]);
        }
        free(m->cgs);
        free(m->cg_buckets);
        m->cgs = m->cg_buckets = NULL;
        m->n_cgs = m->cap_cgs = m->n_cg_buckets = 0;
}
