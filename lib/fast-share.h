/* SPDX-License-Identifier: GPL-2.0-or-later */
/* A cgroup's share of the fast tier (plan.h, rule 8: the exchange across processes).
 *
 * The exchange makes room on a full fast node for one process's hot pages by demoting
 * another's cold ones. A share is how much of each fast node a cgroup keeps for its
 * own memory when opted-in cgroups compete for it: its cold pages there are taken for
 * another's promotions only while the cgroup holds more than its share of the node.
 * A share is a percentage of the node's memory ("40%"), set on the directory that
 * opts the cgroup in and covering its subtree; what it holds is the kernel's own
 * count for the subtree, memory.numa_stat's anon and file lines. Unset: no share,
 * its cold memory may all go. A share never moves a hot page, nor keeps a cgroup from
 * its own promotions: it only says whose cold memory goes first. Pure functions. */
#pragma once
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "topology.h"

/* Unset: no share (fast_share_parse() never returns it). */
#define FAST_SHARE_UNSET (-1)

/* "N%" with N in 0..100, nothing else (no sign, space or fraction): *ret_pct.
 * Returns 0, or -EINVAL. */
int fast_share_parse(const char *v, size_t len, int *ret_pct);

/* memory.numa_stat's text (buf, len bytes: a cgroup file, which the kernel writes):
 * the bytes of its anon and file lines summed per node, into ret[topology index]
 * (t->n_nodes entries, zeroed first). Counts of nodes the topology does not have are
 * ignored; a line that is not "NAME N<id>=<bytes> ..." is skipped. Returns 0, or
 * -EINVAL when neither line was found. */
int fast_share_usage_parse(const char *buf, size_t len, const struct topology *t, uint64_t *ret);

/* The bytes a share of pct keeps of a node of total_kb (rounded down; 0 unset). */
uint64_t fast_share_bytes(uint64_t total_kb, int pct);

/* What a cgroup holding used bytes of a node of total_kb, with share pct, may give
 * up there: the bytes above its share (0 at or below it); UINT64_MAX with no share. */
uint64_t fast_share_excess(uint64_t used, uint64_t total_kb, int pct);
