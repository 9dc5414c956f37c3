/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The cgroup records: one per selected cgroup, in an array for the reports to
 * iterate and in a hash by path for the tick to find: a tick looks up every selected
 * cgroup, and a linear search over 60,000 of one user's cgroups was billions of
 * compares per tick. The hash is SipHash with a key drawn at start, since users name
 * their cgroups. A record lives while its cgroup is selected: at the end of a tick in
 * which it was not (the cgroup went, or opted out), it is freed and its CPU time kept
 * in the ledger as departed (the departure callback: cost_depart, set by the manager),
 * so that the daemon's totals stay whole. This module does not see the ledger. On the
 * event-loop thread. */
#pragma once
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>
#include "cgroup.h"
#include "migrate.h"
#include "siphash.h"
#include "stage.h"

struct cg_rec {
        char *path;
        uint64_t hash;             /* of path */
        struct cg_rec *hnext;      /* in its hash bucket */
        enum cg_mode mode;
        enum cg_source source;
        uid_t owner;               /* owner of the cgroup directory */
        uid_t turn_uid;            /* its owner for turns, reader threads, sampling and DAMON
                                    * slots (cg_records_get): the user its opt-in covers, or
                                    * the owner of the delegated subtree it lies in
                                    * (cgroup_entry.subtree_uid: the topmost directory on its
                                    * path not owned by root); never a subdirectory's own
                                    * owner, which a tenant can choose (sub-uids in a user
                                    * namespace) */
        uid_t covers_uid;          /* whose processes its opt-in covers (cgroup_entry), this tick */
        unsigned n_procs;          /* at the last tick */
        uint64_t pages[_MIG_CLASS_MAX];
        uint64_t shared_moved_bytes;  /* of them, a group's shared pages (share-groups.h) */
        uint64_t cost_ns[_STAGE_MAX];  /* written by cost.c only */
        bool seen;                 /* selected at the last tick */
        uint64_t kept_tick;        /* a tick that did not read it (its owner's turn was over) */
        uint64_t seen_tick;        /* the tick that selected it last; during a tick: */
        unsigned tick_procs;       /* its processes so far (n_procs at the end) */
        size_t pid_cursor;         /* where in cgroup.procs the next read starts (a read cut
                                    * at its owner's deadline goes on from there) */
        size_t pid_cursor_start;   /* where this tick's read started */
        uint64_t mem_seen;         /* memory.current when growth was last looked for */
        uint64_t cpu_seen_usec;    /* cpu.stat usage_usec at the last look, */
        uint64_t cpu_ran_tick;     /* and the last tick that found it advanced */
        enum { GROWTH_UNKNOWN, GROWTH_NONE, GROWTH_SOME } growth;  /* this tick */
        int fast_share_pct;        /* its share of the fast tier (cgroup_entry), this tick, */
        char *share_by;            /* and where it is set (a record's path); NULL: no share */
        uint64_t *fast_used;       /* a share's holder (fast-use.h): its bytes per topology
                                    * index, then what it gave this tick; NULL until asked */
        size_t fast_n;             /* the nodes fast_used is sized for */
        uint64_t fast_tick;        /* the tick fast_used was read */
        int fast_read;             /* that read: 0, or -errno (it gives nothing) */
};

struct cg_rec;
/* A record about to be freed (cg_records_sweep). */
typedef void (*cg_records_depart_fn)(void *userdata, const struct cg_rec *c);

struct cg_records {
        struct cg_rec **v;         /* in the order they were made */
        size_t n, cap;
        struct cg_rec **buckets;
        size_t n_buckets;          /* a power of two, or 0 */
        uint8_t key[SIPHASH_KEY_SIZE];
        cg_records_depart_fn depart;  /* each record the sweep frees, before it goes */
        void *depart_userdata;
};

/* An empty set with a fresh hash key, no departure callback. */
void cg_records_init(struct cg_records *r);
/* fn(userdata, record) for each record cg_records_sweep() frees, before it goes (the
 * manager keeps its CPU time in the ledger: cost_depart). */
void cg_records_set_depart(struct cg_records *r, cg_records_depart_fn fn, void *userdata);
/* The record of the selected cgroup e, made if new (its owner read from its directory
 * under cgroup_root), with e's mode, source, coverage and turn's owner.
 * NULL when out of memory. */
struct cg_rec *cg_records_get(struct cg_records *r, const char *cgroup_root, const struct cgroup_entry *e);
/* The record of path, or NULL. */
struct cg_rec *cg_records_find(const struct cg_records *r, const char *path);
/* Frees the records not seen at the last tick (cg_rec.seen), each handed to the
 * departure callback first. After the processes that pointed to them were forgotten: a
 * process seen in this tick has a seen cgroup. */
void cg_records_sweep(struct cg_records *r);
/* Frees them all. */
void cg_records_done(struct cg_records *r);
