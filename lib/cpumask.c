/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Sets of CPU ids (cpumask.h). */
#include <errno.h>
#include <string.h>
#include "cpumask.h"
#include "cleanup.h"

int cpumask_parse(const char *s, nb_cpumask *ret) {
        if (!s)
                return -EINVAL;
        return idlist_parse_n(s, strlen(s), ret->w, NB_CPUS_MAX);
}

size_t cpumask_format(const nb_cpumask *m, char *buf, size_t size) {
        return idlist_format(m->w, NB_CPUS_MAX, buf, size);
}

unsigned cpumask_weight(const nb_cpumask *m) { return idlist_weight(m->w, ELEMENTSOF(m->w)); }
int cpumask_next(const nb_cpumask *m, unsigned c) { return idlist_next(m->w, NB_CPUS_MAX, c); }

void cpumask_and(nb_cpumask *ret, const nb_cpumask *a, const nb_cpumask *b) {
        for (size_t i = 0; i < ELEMENTSOF(ret->w); i++)
                ret->w[i] = a->w[i] & b->w[i];
}

bool cpumask_equal(const nb_cpumask *a, const nb_cpumask *b) {
        return memcmp(a->w, b->w, sizeof(a->w)) == 0;
}
