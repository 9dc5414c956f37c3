/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Sets of node ids (nodemask.h). */
#include <errno.h>
#include <string.h>
#include "nodemask.h"
#include "cleanup.h"

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

unsigned nodemask_weight(const nb_nodemask *m) { return idlist_weight(m->w, ELEMENTSOF(m->w)); }
int nodemask_next(const nb_nodemask *m, unsigned n) { return idlist_next(m->w, NB_NODES_MAX, n); }
