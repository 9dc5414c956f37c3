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
#include "fast-share.h"
#include "siphash.h"

/* Buckets at first; doubled whenever there are more records than buckets. */
#define BUCKETS_MIN 64

void cg_records_init(struct cg_records *r) {
        *r = (struct cg_records) {};
        siphash_random_key(r->key);
}

void cg_records_set_depart(struct cg_records *r, cg_records_depart_fn fn, void *userdata) {
        r->depart = fn;
        r->depart_userdata = userdata;
}

static uint64_t hash_path(const struct cg_records *r, const char *path) {
        return siphash24(path, strlen(path), r->key);
}

static struct cg_rec **bucket(const struct cg_records *r, uint64_t h) {
        return &r->buckets[h & (r->n_buckets - 1)];
}

/* Doubles the buckets (or makes the first ones). Out of memory, the chains just get
 * longer: still correct. */
static void rehash(struct cg_records *r) {
        size_t n = r->n_buckets ? r->n_buckets * 2 : BUCKETS_MIN;
        struct cg_rec **b = calloc(n, sizeof(*b));

        if (!b)
                return;
        free(r->buckets);
        r->buckets = b;
        r->n_buckets = n;
        for (size_t i = 0; i < r->n; i++) {
                struct cg_rec *c = r->v[i], **head = bucket(r, c->hash);
                c->hnext = *head;
                *head = c;
        }
}

struct cg_rec *cg_records_find(const struct cg_records *r, const char *path) {
        uint64_t h;

        if (r->n_buckets == 0)
                return NULL;
        h = hash_path(r, path);
        for (struct cg_rec *c = *bucket(r, h); c; c = c->hnext)
                if (c->hash == h && strcmp(c->path, path) == 0)
                        return c;
        return NULL;
}

/* The owner of the cgroup's directory (root if it cannot be read). */
static uid_t owner_of(const char *cgroup_root, const char *path) {
        char full[PATH_MAX];
        struct stat st;

        snprintf(full, sizeof(full), "%s%s", cgroup_root, strcmp(path, "/") == 0 ? "" : path);
        return stat(full, &st) == 0 ? st.st_uid : 0;
}

static void rec_free(struct cg_rec *c) {
        free(c->path);
        free(c->share_by);
        free(c->fast_used);
        free(c);
}

static struct cg_rec *add(struct cg_records *r, const char *cgroup_root, const char *path) {
        struct cg_rec *c, **head;

        if (r->n == r->cap) {
                size_t nc = r->cap ? r->cap * 2 : 16;
                struct cg_rec **n = reallocarray(r->v, nc, sizeof(*n));
                if (!n)
                        return NULL;
                r->v = n;
                r->cap = nc;
        }
        if (r->n >= r->n_buckets)
                rehash(r);
        if (r->n_buckets == 0)
                return NULL;
        c = calloc(1, sizeof(*c));
        if (!c || !(c->path = strdup(path))) {
                free(c);
                return NULL;
        }
        c->hash = hash_path(r, path);
        c->owner = owner_of(cgroup_root, path);
        head = bucket(r, c->hash);
        c->hnext = *head;
        *head = c;
        r->v[r->n++] = c;
        return c;
}

/* Whose turn reads the cgroup of e (cg_rec.turn_uid): the user a user.* opt-in
 * covers, else the owner of the delegated subtree the cgroup lies in, as the walk
 * found it. Not the owner of the directory whose setting applies: under a root-wide
 * opt-in (a `cgroups =` rule on /user.slice, trusted.* on a shared parent) that was
 * root, and every user below shared one owner's turns, reader, sampling and DAMON
 * slots; nor the cgroup's own owner, which its tenant may choose (sub-uids). */
static uid_t turn_of(const struct cgroup_entry *e) {
        if (e->covers_uid != CGROUP_COVERS_ALL)
                return e->covers_uid;
        return e->subtree_uid;
}

struct cg_rec *cg_records_get(struct cg_records *r, const char *cgroup_root, const struct cgroup_entry *e) {
        struct cg_rec *c = cg_records_find(r, e->path);

        if (!c)
                c = add(r, cgroup_root, e->path);
        if (!c)
                return NULL;
        /* From the walk, which stat'ed every directory on the path anyway: no read here. */
        c->turn_uid = turn_of(e);
        c->mode = e->mode;
        c->source = e->source;
        c->covers_uid = e->covers_uid;
        c->fast_share_pct = e->fast_share_pct;
        if (!e->share_by || !c->share_by || strcmp(e->share_by, c->share_by) != 0) {
                free(c->share_by);
                c->share_by = e->share_by ? strdup(e->share_by) : NULL;
                if (!c->share_by)
                        c->fast_share_pct = FAST_SHARE_UNSET;  /* none (or out of memory: none known) */
        }
        return c;
}

static void unlink_hash(struct cg_records *r, struct cg_rec *c) {
        for (struct cg_rec **pp = bucket(r, c->hash); *pp; pp = &(*pp)->hnext)
                if (*pp == c) {
                        *pp = c->hnext;
                        return;
                }
}

void cg_records_sweep(struct cg_records *r) {
        size_t w = 0;

        for (size_t i = 0; i < r->n; i++) {
                struct cg_rec *c = r->v[i];

                if (c->seen) {
                        r->v[w++] = c;
                        continue;
                }
                if (r->depart)
                        r->depart(r->depart_userdata, c);
                unlink_hash(r, c);
                rec_free(c);
        }
        r->n = w;
}

void cg_records_done(struct cg_records *r) {
        for (size_t i = 0; i < r->n; i++)
                rec_free(r->v[i]);
        free(r->v);
        free(r->buckets);
        *r = (struct cg_records) {};
}
