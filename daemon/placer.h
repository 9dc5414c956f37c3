/* SPDX-License-Identifier: GPL-2.0-or-later */
/* CPU follows memory, the daemon's side: once a tick, the processes of `place` and
 * `advise` cgroups are decided together (lib/thread-place.h) from where their threads
 * run (lib/thread-load.h), how busy each node is, and where their memory is and may go
 * (the scan's node_bytes and stuck_away). In `place`, a placement narrows the CPU
 * affinity of the process's threads to the chosen node's CPUs (affinity.h, which keeps
 * the originals under /run and gives them back); `advise` only reports it. A placement
 * is undone when it is released, when its process leaves a `place` cgroup (opt-out,
 * mode changed, cgroup gone), and at a clean stop; after a crash, at the next start.
 * On the event-loop thread. */
#pragma once
#include <stdbool.h>
#include <stdint.h>
#include "config.h"
#include "thread-load.h"
#include "thread-place.h"
#include "topology.h"

struct proc_rec;
struct proc_records;
struct share_groups;

/* Threads of one process that the placer reads and places, at most: a process with
 * more is not placed (reason too-many-threads). */
#define PLACER_THREADS_MAX 256
/* Processes decided in one round, at most; the others wait for a later round (the
 * next round starts where this one stopped). */
#define PLACER_PROCS_MAX 512
/* A process whose threads the kernel refused to narrow (EPERM) is not decided again
 * for this long, doubled at each refusal in a row up to the max: without CAP_SYS_NICE
 * each round would try (and log) every thread of every other user's process again. */
#define PLACER_DENIED_MIN_MS 60000
#define PLACER_DENIED_MAX_MS 960000

/* Why a process is not in the round's decision (before thread-place.h's reasons). */
enum placer_skip {
        PLACER_DECIDED = 0,        /* decided: see the round's reason */
        PLACER_NOT_SCANNED,        /* no full scan yet: where its memory is is not known */
        PLACER_TOO_MANY_THREADS,   /* more than PLACER_THREADS_MAX threads */
        PLACER_FIRST_WINDOW,       /* its threads read once: no window yet */
        PLACER_UNREADABLE,         /* its threads could not be read */
        PLACER_WAITING,            /* the round was full */
        PLACER_NOT_PERMITTED,      /* the kernel refused to change its threads' affinity
                                    * (EPERM): backing off until denied_until_ms */
        _PLACER_SKIP_MAX,
};

/* The placer's state of one process (proc_rec.place). */
struct proc_place {
        struct thread_load tl;
        int placed;                /* topology index its threads are placed on, -1: none */
        uint64_t placed_at_ms;
        enum tp_reason placed_reason;  /* why it was placed there */
        enum placer_skip skip;
        enum tp_action action;     /* of the last round that decided it */
        enum tp_reason reason;
        int node;                  /* that round's node (advise: where it would place), -1 */
        unsigned n_busy, threads_to_move;
        uint64_t bytes_to_copy;
        uint64_t decided_ms;       /* when, 0: never */
        unsigned threads_held;     /* its threads whose affinity the daemon narrowed */
        unsigned threads_left_alone; /* changed by the application since: never touched again */
        uint64_t denied_until_ms;  /* not-permitted: not decided before this (0: never refused) */
        uint64_t denied_backoff_ms; /* the last back-off, doubled at each refusal in a row */
        unsigned together;         /* processes of its share group decided with it, itself
                                    * included (group-place.h); 1: alone, 0: not decided */
};
void placer_proc_free(struct proc_place *pp);

/* Why a placement was undone (numabalanced_placements_undone_total{why}). */
enum placer_undo {
        PLACER_UNDO_RELEASED,      /* the round released it (its node lost room) */
        PLACER_UNDO_OPT_OUT,       /* its process left `place` (mode, cgroup, opt-out) */
        PLACER_UNDO_STOP,          /* a clean stop */
        PLACER_UNDO_RECOVERED,     /* at start, after a crash or kill */
        _PLACER_UNDO_MAX,
};
const char *placer_undo_name(enum placer_undo u);

struct placer_counters {
        uint64_t rounds;
        uint64_t placements;       /* processes placed (their threads narrowed) */
        uint64_t placements_undone; /* placements undone: released, opt-out, stop (a crash's
                                     * are counted by thread, undone[PLACER_UNDO_RECOVERED]) */
        uint64_t threads_placed;   /* threads narrowed, in all */
        uint64_t undone[_PLACER_UNDO_MAX];   /* placements undone, by why */
        uint64_t threads_restored; /* threads given their affinity back */
        uint64_t threads_left_alone; /* threads the application changed after the daemon did */
        uint64_t failed;           /* a change that failed (logged) */
        uint64_t not_permitted;    /* threads the kernel refused to narrow (EPERM; backed off) */
        uint64_t would_place;      /* advise: placements it would have made */
};

struct placer;

struct placer_env {
        const struct nb_config *cfg;
        const struct topology *topo;
        const char *proc_root;
        const char *cgroup_root;
        bool dry_run;
        pid_t self_pid;            /* the daemon's own, whose CPU is not load (0: getpid()) */
        /* Brings p's next scan forward to at_ms at the latest (scan_bring_forward(): the
         * scan owns the schedule), so that the memory of a process just placed follows
         * its threads soon; NULL: left as it is (tests). */
        void (*bring_forward)(struct proc_rec *p, uint64_t at_ms);
        /* The tick's share groups (share-groups.h): members of one in the round are
         * decided as one (group-place.h). NULL: each process alone. */
        const struct share_groups *shares;
};

/* state_path: the file of the originals (affinity.h). Recovers what a previous run
 * left narrowed (counted as undone, recovered) before returning. */
int placer_new(const char *state_path, const char *proc_root, struct placer **ret);
void placer_free(struct placer *pl);
/* Called while a round writes a long state file or narrows many processes (the daemon
 * serves its control socket and the watchdog there); see affinity_keeper_set_serve(). */
void placer_set_serve(struct placer *pl, void (*serve)(void *userdata), void *userdata);

/* The tick's round over the records seen at tick. The state file is written once, by
 * its end (before its first change when it narrows threads); what the undos since the
 * last round changed is written with it. */
void placer_round(struct placer *pl, const struct placer_env *env, struct proc_records *procs, uint64_t tick,
                  uint64_t now_ms);
/* p is being forgotten (not seen this tick): its placement undone if it still runs
 * (it left the cgroup, or the cgroup its opt-in), dropped if it exited. */
void placer_departed(struct placer *pl, const char *proc_root, struct proc_rec *p);
/* A clean stop: every placement undone, and no round places anything any more (the
 * daemon calls it as soon as it sees SIGTERM, before the rest of the tick). */
void placer_stop(struct placer *pl);

const struct placer_counters *placer_counters(const struct placer *pl);
/* Threads narrowed by the daemon now. */
size_t placer_threads_held(const struct placer *pl);
/* Whether the daemon narrowed tid of pid now (for explain). */
bool placer_thread_held(const struct placer *pl, pid_t pid, pid_t tid);
/* Whether its application changed tid's affinity after the daemon narrowed it. */
bool placer_thread_left_alone(const struct placer *pl, pid_t pid, pid_t tid);
const char *placer_skip_name(enum placer_skip s);
