/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Taking turns between owners (interleave.h). */
#include <errno.h>
#include <stdlib.h>
#include "interleave.h"

struct item {
        uid_t owner;
        size_t first;              /* the owner's first index: the owners' order */
        size_t index;
};

static int cmp_item(const void *a, const void *b) {
        const struct item *x = a, *y = b;

        if (x->first != y->first)
                return x->first < y->first ? -1 : 1;
        return (x->index > y->index) - (x->index < y->index);
}

static int cmp_owner(const void *a, const void *b) {
        const struct item *x = a, *y = b;

        if (x->owner != y->owner)
                return x->owner < y->owner ? -1 : 1;
        return (x->index > y->index) - (x->index < y->index);
}

int interleave_by_owner(const uid_t *owners, size_t n, size_t *order) {
        struct item *it = calloc(n ? n : 1, sizeof(*it));
        size_t *cur = calloc(n ? n : 1, sizeof(*cur)), *end = calloc(n ? n : 1, sizeof(*end));
        size_t n_groups = 0, out = 0;

        for (size_t i = 0; i < n; i++)
                order[i] = i;
        if (!it || !cur || !end) {
                free(it);
                free(cur);
                free(end);
                return -ENOMEM;
        }
        /* Group by owner (each owner's first index noted), then order the groups by
         * that first index: one run per owner, owners as they first came. */
        for (size_t i = 0; i < n; i++)
                it[i] = (struct item) { .owner = owners[i], .index = i };
        qsort(it, n, sizeof(*it), cmp_owner);
        for (size_t i = 0, g = 0; i < n; i = g)
                for (g = i; g < n && it[g].owner == it[i].owner; g++)
                        it[g].first = it[i].index;
        qsort(it, n, sizeof(*it), cmp_item);
        for (size_t i = 0; i < n; i++)
                if (i == 0 || it[i].first != it[i - 1].first) {
                        if (n_groups > 0)
                                end[n_groups - 1] = i;
                        cur[n_groups++] = i;
                }
        if (n_groups > 0)
                end[n_groups - 1] = n;
        /* Round after round, one of each group; a group that runs out leaves the
         * rounds (the live ones are moved down: live <= g, nothing unread is lost). */
        while (out < n) {
                size_t live = 0;
                for (size_t g = 0; g < n_groups; g++) {
                        order[out++] = it[cur[g]++].index;
                        if (cur[g] < end[g]) {
                                cur[live] = cur[g];
                                end[live] = end[g];
                                live++;
                        }
                }
                n_groups = live;
        }
        free(it);
        free(cur);
        free(end);
        return 0;
}
