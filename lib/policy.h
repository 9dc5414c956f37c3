/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Which nodes a VMA's pages may live on: the single place that rule is written.
 *
 *   default, local:          the cpuset's Mems_allowed that have memory
 *   bind:LIST:               LIST within those
 *   prefer, prefer (many):   LIST within those, but left where they are unless the
 *                            config allows moving them (policy_movable)
 *   interleave, weighted:    never moved (the application asked for the spread)
 * A bind list cut by the kernel's 64-byte limit is not trusted: not movable.
 *
 * Memory without a VMA policy was placed by the policy of the thread that touched it
 * first (set_mempolicy(2) is per thread), and numa_maps shows only the main thread's
 * there (thread-policy.h). It may live only where every thread's policy allows: the
 * intersection of their allowed sets; a thread whose policy is interleave, prefer
 * (unless move_preferred), cut or allows no node at all leaves it where it is. */
#pragma once
#include <stdbool.h>
#include <stddef.h>
#include "numa_maps.h"

enum policy_verdict {
        POLICY_MOVABLE,
        POLICY_INTERLEAVED,       /* interleave / weighted interleave */
        POLICY_PREFERRED,         /* prefer: only when the config allows */
        POLICY_TRUNCATED,         /* node list cut by the kernel: unknown */
        POLICY_NO_NODES,          /* allowed set is empty */
        POLICY_THREAD,            /* a thread's own policy: not movable, or no node in common */
};

/* Computes the allowed nodes of a VMA with policy p, for a process whose cpuset
 * allows mems_allowed, on a machine whose memory nodes are with_memory.
 * Returns the verdict; *ret_allowed is always written (empty when none). */
enum policy_verdict policy_allowed_nodes(const struct mempolicy *p, const nb_nodemask *mems_allowed,
                                         const nb_nodemask *with_memory, bool move_preferred,
                                         nb_nodemask *ret_allowed);
/* The allowed nodes of memory without a VMA policy in a process whose threads have
 * the policies pols[0..n) (the main thread's included): the intersection of each one's
 * policy_allowed_nodes(). POLICY_MOVABLE, or POLICY_THREAD when one of them is not
 * movable or they have no node in common (*ret_allowed is then empty). */
enum policy_verdict policy_allowed_nodes_threads(const struct mempolicy *pols, size_t n,
                                                 const nb_nodemask *mems_allowed, const nb_nodemask *with_memory,
                                                 bool move_preferred, nb_nodemask *ret_allowed);
const char *policy_verdict_name(enum policy_verdict v);
