/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Sets of CPU ids, with the kernel's list syntax ("0-3,8", idlist.h). */
#pragma once
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "idlist.h"

/* The kernel's NR_CPUS is at most 8192. */
#define NB_CPUS_MAX 8192
_Static_assert(NB_CPUS_MAX <= IDLIST_BITS_MAX, "a CPU list is an id list");

typedef struct nb_cpumask { uint64_t w[NB_CPUS_MAX / 64]; } nb_cpumask;

/* As nodemask_parse() and nodemask_format() (nodemask.h). */
int cpumask_parse(const char *s, nb_cpumask *ret);
size_t cpumask_format(const nb_cpumask *m, char *buf, size_t size);
#define CPUMASK_STRMAX 32768

static inline bool cpumask_test(const nb_cpumask *m, unsigned c) {
        return c < NB_CPUS_MAX && (m->w[c / 64] >> (c % 64)) & 1;
}
static inline void cpumask_set(nb_cpumask *m, unsigned c) {
        if (c < NB_CPUS_MAX) m->w[c / 64] |= UINT64_C(1) << (c % 64);
}
unsigned cpumask_weight(const nb_cpumask *m);
int cpumask_next(const nb_cpumask *m, unsigned c);
void cpumask_and(nb_cpumask *ret, const nb_cpumask *a, const nb_cpumask *b);
bool cpumask_equal(const nb_cpumask *a, const nb_cpumask *b);
#define CPUMASK_FOREACH(c, m) for (int c = cpumask_next((m), 0); c >= 0; c = cpumask_next((m), (unsigned) c + 1))
