/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include "nodemask.h"
#include "cleanup.h"
#include "parse.h"

static bool is_space(char c) { return c == ' ' || c == '\t' || c == '\n'; }

/* Parses one id: decimal digits only, below nbits. */
static int parse_id(const char *s, size_t len, unsigned nbits, unsigned *ret) {
        uint64_t v;
        int r;

        if (len == 0)
                return -EINVAL;
        r = parse_u64_n(s, len, 0, UINT64_MAX, &v);
        if (r < 0)
                return r;
        if (v >= nbits)
                return -ERANGE;
        *ret = (unsigned) v;
        return 0;
}

int idlist_parse_n(const char *s, size_t len, uint64_t *words, unsigned nbits) {
        uint64_t tmp[NB_CPUS_MAX / 64] = {};
        size_t i = 0, end = len;

        if (nbits > NB_CPUS_MAX || nbits % 64)
                return -EINVAL;
        while (i < end && is_space(s[i]))
                i++;
        while (end > i && is_space(s[end - 1]))
                end--;

        while (i < end) {
                size_t e = i, dash = 0;
                unsigned a, b;
                int r;

                while (e < end && s[e] != ',') {
                        if (s[e] == '-' && !dash)
                                dash = e;
                        e++;
                }
                if (dash) {
                        r = parse_id(s + i, dash - i, nbits, &a);
                        if (r < 0)
                                return r;
                        r = parse_id(s + dash + 1, e - dash - 1, nbits, &b);
                        if (r < 0)
                                return r;
                        if (b < a)
                                return -EINVAL;
                } else {
                        r = parse_id(s + i, e - i, nbits, &a);
                        if (r < 0)
                                return r;
                        b = a;
                }
                for (unsigned x = a; x <= b; x++)
                        tmp[x / 64] |= UINT64_C(1) << (x % 64);

                if (e < end) {
                        e++; /* the comma */
                        if (e == end)
                                return -EINVAL; /* trailing comma */
                }
                i = e;
        }
        memcpy(words, tmp, nbits / 8);
        return 0;
}

static bool bit(const uint64_t *w, unsigned i) { return (w[i / 64] >> (i % 64)) & 1; }

size_t idlist_format(const uint64_t *words, unsigned nbits, char *buf, size_t size) {
        size_t n = 0;
        bool first = true;

        if (size > 0)
                buf[0] = 0;
        for (unsigned i = 0; i < nbits; i++) {
                unsigned j;
                char tmp[32];
                int l;

                if (!bit(words, i))
                        continue;
                for (j = i; j + 1 < nbits && bit(words, j + 1); j++)
                        ;
                if (i == j)
                        l = snprintf(tmp, sizeof(tmp), "%s%u", first ? "" : ",", i);
                else
                        l = snprintf(tmp, sizeof(tmp), "%s%u-%u", first ? "" : ",", i, j);
                if (n + (size_t) l < size)
                        memcpy(buf + n, tmp, (size_t) l + 1);
                else if (size > 0)
                        buf[n < size ? n : size - 1] = 0;
                n += (size_t) l;
                first = false;
                i = j;
        }
        return n;
}

int nodemask_parse_n(const char *s, size_t len, nb_nodemask *ret) {
        return idlist_parse_n(s, len, ret->w, NB_NODES_MAX);
}

int nodemask_parse(const char *s, nb_nodemask *ret) {
        if (!s)
                return -EINVAL;
        return nodemask_parse_n(s, strlen(s), ret);
}

size_t nodemask_format(const nb_nodemask *m, char *buf, size_t size) {
        return idlist_format(m->w, NB_NODES_MAX, buf, size);
}

int cpumask_parse(const char *s, nb_cpumask *ret) {
        if (!s)
                return -EINVAL;
        return idlist_parse_n(s, strlen(s), ret->w, NB_CPUS_MAX);
}

size_t cpumask_format(const nb_cpumask *m, char *buf, size_t size) {
        return idlist_format(m->w, NB_CPUS_MAX, buf, size);
}

void nodemask_and(nb_nodemask *ret, const nb_nodemask *a, const nb_nodemask *b) {
        for (size_t i = 0; i < ELEMENTSOF(ret->w); i++)
                ret->w[i] = a->w[i] & b->w[i];
}

void nodemask_or(nb_nodemask *ret, const nb_nodemask *a, const nb_nodemask *b) {
        for (size_t i = 0; i < ELEMENTSOF(ret->w); i++)
                ret->w[i] = a->w[i] | b->w[i];
}

bool nodemask_empty(const nb_nodemask *m) {
        for (size_t i = 0; i < ELEMENTSOF(m->w); i++)
                if (m->w[i])
                        return false;
        return true;
}

bool nodemask_equal(const nb_nodemask *a, const nb_nodemask *b) {
        return memcmp(a->w, b->w, sizeof(a->w)) == 0;
}

bool nodemask_subset(const nb_nodemask *sub, const nb_nodemask *super) {
        for (size_t i = 0; i < ELEMENTSOF(sub->w); i++)
                if (sub->w[i] & ~super->w[i])
                        return false;
        return true;
}

static unsigned weight(const uint64_t *w, size_t n) {
        unsigned c = 0;
        for (size_t i = 0; i < n; i++)
                c += (unsigned) __builtin_popcountll(w[i]);
        return c;
}

static int next(const uint64_t *w, unsigned nbits, unsigned from) {
        for (unsigned i = from; i < nbits;) {
                uint64_t word = w[i / 64] >> (i % 64);
                if (word)
                        return (int) (i + (unsigned) __builtin_ctzll(word));
                i = (i / 64 + 1) * 64;
        }
        return -1;
}

unsigned nodemask_weight(const nb_nodemask *m) { return weight(m->w, ELEMENTSOF(m->w)); }
int nodemask_next(const nb_nodemask *m, unsigned n) { return next(m->w, NB_NODES_MAX, n); }
unsigned cpumask_weight(const nb_cpumask *m) { return weight(m->w, ELEMENTSOF(m->w)); }
int cpumask_next(const nb_cpumask *m, unsigned c) { return next(m->w, NB_CPUS_MAX, c); }

void cpumask_and(nb_cpumask *ret, const nb_cpumask *a, const nb_cpumask *b) {
        for (size_t i = 0; i < ELEMENTSOF(ret->w); i++)
                ret->w[i] = a->w[i] & b->w[i];
}

bool cpumask_equal(const nb_cpumask *a, const nb_cpumask *b) {
        return memcmp(a->w, b->w, sizeof(a->w)) == 0;
}
