/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Groups of processes that share memory (docs/RULES.md, "Shared pages").
 *
 * A process's scan notes its shared mappings of an inode (maps.h: shmem, SysV, memfd,
 * tmpfs, a file mapped MAP_SHARED), and its anonymous mappings whose pages others map
 * (copy-on-write since a fork()), with the pages it has resident there and the nodes
 * its cpuset and policies let them go to (share_groups_note()). Once a tick,
 * share_groups_build() makes, from every watched process's last notes:
 *   - an object for each (owner, device, inode) that two processes or more of one owner
 *     map, and for each (owner, address) at which two or more have anonymous pages
 *     shared with others (a parent and its children: the address is the one they were
 *     forked with), with every one of their mappings of it;
 *   - a group for each set of processes joined by objects (one owner only, like the
 *     kernel's numa_group, but from where the threads ran and within every member's
 *     cpuset);
 *   - each object's target: the node with the largest share of the group's CPU time
 *     (at least min_cpu_share_pct), or the nearest to it that every member allows; -1
 *     (with why) when there is none.
 * A scan of a member in balance mode then plans the object's pages towards its target
 * (plan_input.share), and the executor moves each page only after share-check.h
 * established that every process mapping it is a member. Everything here is bounded:
 * SHARE_NOTES_MAX notes a process, SHARE_OBJ_MAPS_MAX mappings an object (more: the
 * object stays, with why). */
#pragma once
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>
#include "maps.h"
#include "numa_maps.h"
#include "plan.h"
#include "proc-records.h"
#include "share-check.h"
#include "topology.h"

#define SHARE_NOTES_MAX 64
#define SHARE_OBJ_MAPS_MAX 256

/* One object two or more members map, built once a tick. */
struct share_obj {
        uid_t owner;
        bool cow;                  /* anonymous pages shared copy-on-write since a fork():
                                    * dev 0, ino the address parent and children map it at */
        uint64_t dev, ino;
        struct share_peer *maps;   /* every member's mapping of it, by pid */
        size_t n_maps;
        size_t group;              /* index in share_groups.groups */
        int target;                /* node id, -1: its pages stay (why) */
        const char *why;
        uint64_t *node_bytes;      /* resident, by topology index: the most any member maps */
};

struct share_group {
        uid_t owner;
        pid_t *pids;               /* its members, sorted */
        size_t n_pids;
        int hot_node;              /* where its threads ran most, -1: no node has enough */
        uint64_t *node_bytes;      /* its objects' resident bytes, by topology index */
};

struct share_groups {
        const struct topology *topo;
        struct share_obj *objs;    /* sorted by (owner, dev, ino) */
        size_t n_objs;
        struct share_group *groups;
        size_t n_groups;
        struct share_peer *all_maps;  /* what objs and groups point into */
        uint64_t *all_bytes;
        pid_t *all_pids;
};

/* From p's scan: its shared mappings of an inode (ranges, sorted) with pages resident,
 * whether or not others map them yet (an idle process is not read again), what it has
 * of them on each node, the nodes in may go
 * to (plan_share_allowed()), and its window's CPU time by node. Replaces p's last notes;
 * out of memory, p has none (it is left out of every group until its next scan). */
void share_groups_note(const struct topology *t, struct proc_rec *p, const struct numa_maps *maps,
                const struct vma_range *ranges, size_t n_ranges, const struct plan_input *in,
                const struct plan_params *pp);

/* Rebuilds g from the records' notes (those in a watched cgroup). min_cpu_share_pct is
 * the group's hot-node threshold. A member mapping an object whose target changed since
 * its note last saw one is handed to bring_forward (scan.h's scan_bring_forward(), may
 * be NULL) with now: its plan follows the group at once. Out of memory, g has no group. */
void share_groups_build(struct share_groups *g, const struct topology *t, struct proc_records *records,
                        unsigned min_cpu_share_pct, void (*bring_forward)(struct proc_rec *p, uint64_t at_ms),
                        uint64_t now);
void share_groups_done(struct share_groups *g);

/* Per VMA of maps, for pid (owner uid): the target of the object it maps if it is a
 * member of the object's group, else -1. NULL when no VMA of it has a target, or out of
 * memory. */
struct plan_share *share_groups_plan_input(const struct share_groups *g, uid_t owner, pid_t pid,
                                           const struct numa_maps *maps, const struct vma_range *ranges,
                                           size_t n_ranges);

/* The check a job of pid (owner uid) on its mapping at start needs; false when no
 * object of g has that mapping (g was rebuilt since: the move waits for the next scan). */
bool share_groups_check(const struct share_groups *g, uid_t owner, pid_t pid, uint64_t start,
                        struct share_check *ret);

/* Who is in the group of pid (owner uid), as one number: changes when a member comes
 * or goes. 0: none. */
uint64_t share_groups_signature(const struct share_groups *g, uid_t owner, pid_t pid);

/* The group p is a member of, or NULL. */
const struct share_group *share_groups_of(const struct share_groups *g, uid_t owner, pid_t pid);
