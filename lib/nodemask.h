/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Sets of node ids and CPU ids, with the kernel's list syntax ("0-3,8").
 *
 * Parsed and printed by our own checked code: these strings come from /proc,
 * sysfs, xattrs and config files, and libnuma's numa_parse_nodestring() is "not
 * intended to be used with untrusted input data". Bad input is an error:
 * junk, empty elements, reversed ranges, ids at or beyond the limit, overflow.
 * The empty string is the empty set (Mems_allowed_list of nothing, sysfs files
 * that list nothing). */
#pragma once
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* The kernel's MAX_NUMNODES is at most 1 << CONFIG_NODES_SHIFT (10); NR_CPUS at most 8192. */
#define NB_NODES_MAX 1024
#define NB_CPUS_MAX 8192

typedef struct nb_nodemask { uint64_t w[NB_NODES_MAX / 64]; } nb_nodemask;
typedef struct nb_cpumask { uint64_t w[NB_CPUS_MAX / 64]; } nb_cpumask;

/* Generic forms on a word array of nbits bits. */
int idlist_parse_n(const char *s, size_t len, uint64_t *words, unsigned nbits);
/* Prints the list into buf (always NUL-terminated); returns the length it needed
 * (like snprintf), so a caller can tell truncation. */
size_t idlist_format(const uint64_t *words, unsigned nbits, char *buf, size_t size);

/* nodemask_parse: s is the whole list (leading/trailing whitespace, including a
 * final newline, is allowed). Returns 0, -EINVAL (syntax) or -ERANGE (id too big). */
int nodemask_parse(const char *s, nb_nodemask *ret);
int nodemask_parse_n(const char *s, size_t len, nb_nodemask *ret);
size_t nodemask_format(const nb_nodemask *m, char *buf, size_t size);
#define NODEMASK_STRMAX 4096

int cpumask_parse(const char *s, nb_cpumask *ret);
size_t cpumask_format(const nb_cpumask *m, char *buf, size_t size);
#define CPUMASK_STRMAX 32768

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
