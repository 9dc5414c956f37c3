/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Turns between owners (interleave.h). */
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

void interleave_turns_done(struct turns *t) {
        free(t->order);
        free(t->group);
        free(t->group_owner);
        free(t->group_size);
        *t = (struct turns) {};
}

static size_t cursor_of(const struct owner_cursor *cursors, size_t n_cursors, uid_t owner) {
        for (size_t i = 0; cursors && i < n_cursors; i++)
                if (cursors[i].owner == owner)
                        return cursors[i].next;
        return 0;
}

/* it[] grouped by owner, the groups in order of their owners' first index; their
 * starts into start[] (n_groups + 1 of them). */
static size_t group_items(struct item *it, size_t n, const uid_t *owners, size_t *start) {
        size_t n_groups = 0;

        for (size_t i = 0; i < n; i++)
                it[i] = (struct item) { .owner = owners[i], .index = i };
        qsort(it, n, sizeof(*it), cmp_owner);
        for (size_t i = 0, g = 0; i < n; i = g)
                for (g = i; g < n && it[g].owner == it[i].owner; g++)
                        it[g].first = it[i].index;
        qsort(it, n, sizeof(*it), cmp_item);
        for (size_t i = 0; i < n; i++)
                if (i == 0 || it[i].first != it[i - 1].first)
                        start[n_groups++] = i;
        start[n_groups] = n;
        return n_groups;
}

int interleave_by_owner(const uid_t *owners, size_t n, const struct owner_cursor *cursors, size_t n_cursors,
                        struct turns *ret) {
        struct turns t = { .n = n };
        struct item *it = calloc(n + 1, sizeof(*it));
        size_t *start = calloc(n + 1, sizeof(*start)), *taken = calloc(n + 1, sizeof(*taken));
        size_t *live = calloc(n + 1, sizeof(*live)), n_live, out = 0;
        int r = -ENOMEM;

        t.order = calloc(n + 1, sizeof(*t.order));
        t.group = calloc(n + 1, sizeof(*t.group));
        t.group_owner = calloc(n + 1, sizeof(*t.group_owner));
        t.group_size = calloc(n + 1, sizeof(*t.group_size));
        if (!it || !start || !taken || !live || !t.order || !t.group || !t.group_owner || !t.group_size)
                goto finish;
        t.n_groups = group_items(it, n, owners, start);
        for (size_t g = 0; g < t.n_groups; g++) {
                t.group_owner[g] = it[start[g]].owner;
                t.group_size[g] = start[g + 1] - start[g];
                live[g] = g;
        }
        /* Round after round, the next of each group still live, from its cursor on. */
        for (n_live = t.n_groups; n_live > 0;) {
                size_t still = 0;
                for (size_t k = 0; k < n_live; k++) {
                        size_t g = live[k], size = t.group_size[g];
                        size_t at = (cursor_of(cursors, n_cursors, t.group_owner[g]) + taken[g]++) % size;

                        t.order[out] = it[start[g] + at].index;
                        t.group[out++] = g;
                        if (taken[g] < size)
                                live[still++] = g;
                }
                n_live = still;
        }
        *ret = t;
        t = (struct turns) {};
        r = 0;
finish:
        interleave_turns_done(&t);
        free(it);
        free(start);
        free(taken);
        free(live);
        return r;
}
