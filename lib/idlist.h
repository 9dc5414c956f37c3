/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Sets of ids as arrays of 64-bit words, with the kernel's list syntax ("0-3,8"):
 * what node sets (nodemask.h) and CPU sets (cpumask.h) are made of.
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

/* The largest set, in bits (a CPU set's). */
#define IDLIST_BITS_MAX 8192

/* The list s (len bytes, whitespace around it allowed) into words (nbits bits, a
 * multiple of 64, at most IDLIST_BITS_MAX). */
int idlist_parse_n(const char *s, size_t len, uint64_t *words, unsigned nbits);
/* Prints the list into buf (always NUL-terminated); returns the length it needed
 * (like snprintf), so a caller can tell truncation. */
size_t idlist_format(const uint64_t *words, unsigned nbits, char *buf, size_t size);
/* The ids set in the n words at w. */
unsigned idlist_weight(const uint64_t *w, size_t n);
/* The next id set at or after from, or -1. */
int idlist_next(const uint64_t *w, unsigned nbits, unsigned from);
