/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Sets of node ids, with the kernel's list syntax ("0-3,8", idlist.h). CPU sets are
 * cpumask.h's, included here: most users of node sets need both. */
#pragma once
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "cpumask.h"
#include "idlist.h"

/* The kernel's MAX_NUMNODES is at most 1 << CONFIG_NODES_SHIFT (10). */
#define NB_NODES_MAX 1024

typedef struct nb_nodemask { uint64_t w[NB_NODES_MAX / 64]; } nb_nodemask;

/* nodemask_parse: s is the whole list (leading/trailing whitespace, including a
 * final newline, is allowed). Returns 0, -EINVAL (syntax) or -ERANGE (id too big). */
int nodemask_parse(const char *s, nb_nodemask *ret);
int nodemask_parse_n(const char *s, size_t len, nb_nodemask *ret);
size_t nodemask_format(const nb_nodemask *m, char *buf, size_t size);
#define NODEMASK_STRMAX 4096

static inline void nodemask_zero(nb_nodemask *m) { *m = (nb_nodemask) {}; }
static inline bool nodemask_test(const nb_nodemask *m, unsigned n) {
        return n < NB_NODES_MAX && (m->w[n / 64] >> (n % 64)) & 1;
}
static inline void nodemask_set(nb_nodemask *m, unsigned n) {
        if (n < NB_NODES_MAX) m->w[n / 64] |= UINT64_C(1) << (n % 64);
}
static inline void nodemask_clear(nb_nodemask *m, unsigned n) {
        if (n < NB_NODES_MAX) m->w[n / 64] &= ~(UINT64_C(1) << (n % 64));
}
void nodemask_and(nb_nodemask *ret, const nb_nodemask *a, const nb_nodemask *b);
void nodemask_or(nb_nodemask *ret, const nb_nodemask *a, const nb_nodemask *b);
bool nodemask_empty(const nb_nodemask *m);
bool nodemask_equal(const nb_nodemask *a, const nb_nodemask *b);
bool nodemask_subset(const nb_nodemask *sub, const nb_nodemask *super);
unsigned nodemask_weight(const nb_nodemask *m);
/* The next set id at or after n, or -1. Iterate: for (n = nodemask_next(m, 0); n >= 0; n = nodemask_next(m, n + 1)) */
int nodemask_next(const nb_nodemask *m, unsigned n);
#define NODEMASK_FOREACH(n, m) for (int n = nodemask_next((m), 0); n >= 0; n = nodemask_next((m), (unsigned) n + 1))
