/* SPDX-License-Identifier: GPL-2.0-or-later */
/* An order that takes turns between owners: the tick reads its cgroups in an order
 * where each owner (the uid owning the cgroup's directory) has one, then the next
 * owner one, and so on, rather than in path order. One user's 10,000 cgroups then
 * delay another's first cgroup by one cgroup, not by 10,000 (a tenant under
 * /user.slice comes before /workload.slice by name). Pure. */
#pragma once
#include <stddef.h>
#include <sys/types.h>

/* Fills order[0..n) with the indices of owners[0..n): round after round, the next
 * index of each owner in turn, owners in order of their first index, each owner's
 * indices in their own order. -ENOMEM leaves order as 0, 1, ..., n-1. */
int interleave_by_owner(const uid_t *owners, size_t n, size_t *order);
