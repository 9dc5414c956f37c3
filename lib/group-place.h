/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Processes that share memory, decided as one (docs/RULES.md, "CPU follows memory",
 * "Groups that share memory"). A pure function over thread-place.h: the processes of a
 * round that the caller says share memory (group[i], daemon/share-groups.h) are handed
 * to thread_place_round() as one process, their threads and bytes together, so that
 * their busy threads go to one node or stay, never some here and some there by the
 * order of the round. A group whose busy threads no node can hold together (no-room,
 * too-many, nowhere-together) or whose placement lost its room is decided again, in
 * the same call, member by member: each then goes beside its memory as far as there is
 * room, which for members whose memory is mostly the shared object is that object's
 * node. No I/O, no clock; tests/unit/test-group-place.c. */
#pragma once
#include <stddef.h>
#include <stdint.h>
#include "thread-place.h"

/* group[i] for a process in no group. */
#define GROUP_PLACE_NONE SIZE_MAX
/* A group's threads handed to the round as one process, at most: a larger group is
 * decided member by member. */
#define GROUP_PLACE_THREADS_MAX 4096

/* Like thread_place_round(), with the processes whose group[] is equal (not
 * GROUP_PLACE_NONE) decided as one when no member is placed or all are placed on one
 * node. Each member's outputs are its own (its busy threads, those to move, its bytes
 * to follow), its action and reason the group's; a member with no busy thread is left
 * as it is (idle). together[i] (may be NULL) is how many processes were decided with
 * it, itself included: 1 when alone. -ENOMEM: nothing decided. */
int group_place_round(const struct tp_node *nodes, size_t n_nodes, struct tp_proc *procs, const size_t *group,
                      unsigned *together, size_t n_procs, const struct tp_params *p, uint64_t now_ms);
