/* SPDX-License-Identifier: GPL-2.0-or-later */
/* SipHash-2-4 (Aumasson and Bernstein, 2012): a keyed 64-bit hash for tables whose
 * keys users choose (cgroup paths, xattr values). With a key drawn at random at
 * start, nobody can pick names that all land in one bucket and turn a lookup back
 * into a linear scan; an unkeyed hash such as FNV would let them. */
#pragma once
#include <stddef.h>
#include <stdint.h>

#define SIPHASH_KEY_SIZE 16

uint64_t siphash24(const void *data, size_t len, const uint8_t key[static SIPHASH_KEY_SIZE]);
/* A key from getrandom(2) (without blocking; failing that, from the clocks and the
 * pid: still unknown to a local user in advance, if weaker). */
void siphash_random_key(uint8_t key[static SIPHASH_KEY_SIZE]);
