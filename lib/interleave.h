/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Turns between owners: the tick reads its cgroups in an order where each owner (the
 * uid the caller gives: the tick gives cg_rec.turn_uid, whom the opt-in covers or the
 * owner of the delegated subtree) has one, then the next owner one, and so on,
 * rather than in path order, and reads each owner's for a bounded time per tick,
 * starting where that owner's last turn ended. One user's 10,000 cgroups then delay
 * another's first cgroup by one cgroup, not by 10,000 (a tenant under /user.slice
 * comes before /workload.slice by name), and cost each tick their own share, not the
 * tick. Pure. */
#pragma once
#include <stddef.h>
#include <sys/types.h>

/* Where an owner's turns start: its next cgroup, an index into its own (modulo their
 * count). The caller keeps these from tick to tick. */
struct owner_cursor {
        uid_t owner;
        size_t next;
};

struct turns {
        size_t *order;             /* n indices into owners[], in the order of the turns */
        size_t *group;             /* n: the owner group of each of them */
        uid_t *group_owner;        /* n_groups, in order of each owner's first index */
        size_t *group_size;        /* n_groups: that owner's count */
        size_t n, n_groups;
};

/* The turns of owners[0..n): round after round, the next index of each owner, owners in
 * order of their first index, each owner's indices in their own order starting at its
 * cursor (cursors[] may be NULL; an owner not in it starts at its first). -ENOMEM. */
int interleave_by_owner(const uid_t *owners, size_t n, const struct owner_cursor *cursors, size_t n_cursors,
                        struct turns *ret);
void interleave_turns_done(struct turns *t);
