/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Which nodes a VMA's pages may live on: the single place that rule is written.
 *
 *   default, local:          the cpuset's Mems_allowed that have memory
 *   bind:LIST:               LIST within those
 *   prefer, prefer (many):   LIST within those, but left where they are unless the
 *                            config allows moving them (policy_movable)
 *   interleave, weighted:    never moved (the application asked for the spread)
 * A bind list cut by the kernel's 64-byte limit is not trusted: not movable. */
#pragma once
#include <stdbool.h>
#include "numa_maps.h"

enum policy_verdict {
        POLICY_MOVABLE,
        POLICY_INTERLEAVED,       /* interleave / weighted interleave */
        POLICY_PREFERRED,         /* prefer: only when the config allows */
        POLICY_TRUNCATED,         /* node list cut by the kernel: unknown */
        POLICY_NO_NODES,          /* allowed set is empty */
};

/* Computes the allowed nodes of a VMA with policy p, for a process whose cpuset
 * allows mems_allowed, on a machine whose memory nodes are with_memory.
 * Returns the verdict; *ret_allowed is always written (empty when none). */
enum policy_verdict policy_allowed_nodes(const struct mempolicy *p, const nb_nodemask *mems_allowed,
                                         const nb_nodemask *with_memory, bool move_preferred,
                                         nb_nodemask *ret_allowed);
const char *policy_verdict_name(enum policy_verdict v);
