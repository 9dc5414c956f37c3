/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Threads placed beside their memory: their CPU affinity narrowed to a node's CPUs,
 * and given back, losing nothing (this repository's docs/RULES.md, section "Placing
 * threads: the originals kept and given back").
 *
 * The keeper records, for every thread it narrowed, the affinity the thread had (its
 * original) and the one it set (placed), and for a thread placed again on another
 * node the one it had set before (previous) until the write after the change: the
 * records and their state file under /run are affinity-store.h's. The records are in
 * the file BEFORE any affinity changes, so that a daemon killed at any instant (a
 * kill -9, the watchdog, a crash) leaves a file from which the next start, or
 * `numabalanced --restore-affinity`, gives every thread its original back
 * (affinity_recover): a thread placed again carries one of the two masks the file
 * names, whether its change was made or not. Batched (the placer), the file is
 * written once per round: by affinity_commit(), before the round's first change.
 *
 * A thread whose affinity is no longer the mask we set was changed by its application
 * (or by a cpuset change): it is left alone from then on, never touched again, never
 * restored. A thread is only narrowed, never widened: its new mask is the node's CPUs
 * intersected with the affinity it had (for a thread we already placed on another
 * node, with its recorded original). Right before each change the process and the
 * thread are checked again (the same process, the same thread, the mask the decision
 * was made on).
 *
 * CPU masks are nb_cpumask (NB_CPUS_MAX, 8,192 CPUs: the kernel's largest NR_CPUS); the
 * affinity calls use a glibc set CPU_ALLOC'd to that size. Bounds: 1,024 threads a
 * process and 65,536 in all (AFFINITY_THREADS_PROC_MAX, AFFINITY_THREADS_MAX); a thread
 * beyond them is not placed (counted as failed, logged).
 *
 * A process created by a placed thread inherits its mask, across exec: followed too
 * (affinity_adopt), recorded with the original of the thread it got the mask from.
 *
 * Changing another user's thread needs CAP_SYS_NICE (the unit grants it); a refusal is
 * counted (not_permitted), not logged, so that the caller can back off. Used on the
 * event loop only. */
#pragma once
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include "affinity-store.h"
#include "nodemask.h"

struct affinity_keeper;

/* state_path: the state file (/run/numabalanced/affinity in the daemon; its directory
 * is made if missing); proc_root: "/proc". Nothing is read or written yet. NULL when
 * out of memory (logged). */
struct affinity_keeper *affinity_keeper_new(const char *state_path, const char *proc_root);
/* Frees the records; changes no affinity and leaves the state file as it is (what a
 * daemon killed now would leave). */
void affinity_keeper_free(struct affinity_keeper *k);

/* What one call did, thread by thread (added to, never reset: zero it first). */
struct affinity_counts {
        unsigned placed;      /* narrowed now (or a new thread that inherited our mask, recorded) */
        unsigned restored;    /* given their original back */
        unsigned left_alone;  /* not ours to change: the application changed it, or no CPU of the node allowed */
        unsigned gone;        /* the thread or its process exited (or a pid or tid reused) */
        unsigned failed;      /* a bound reached, a failed call: named in a log line */
        unsigned not_permitted; /* refused by the kernel (EPERM: another user's thread without
                                 * CAP_SYS_NICE, or an LSM): not logged here, the caller backs off */
};

/* At start: every thread a previous run (crash, kill -9, watchdog kill) narrowed gets
 * back its original affinity, if its process is the same (pid + start time) and the
 * thread (tid + its own start time) still has exactly a mask the daemon set (the placed
 * one, or the previous one the file names); threads that inherited such a mask at
 * clone are given the original too. Others are left alone.
 * Lines of the file that do not parse are logged and skipped (the file is then kept
 * aside too). A file refused whole (not a regular file of ours of at most 64 MiB, not
 * our format) or written during another boot is renamed aside, logged with the reason
 * and the name it is kept as, and nothing of it acted on. Then the file holds no
 * thread (no file is made when there was none). Returns 0 (another boot's file too),
 * or -errno: the file could not be read, or not emptied (logged). */
int affinity_recover(struct affinity_keeper *k, struct affinity_counts *c);

/* Whether the last affinity_recover() found a state file (refused or not). */
bool affinity_recover_found_file(const struct affinity_keeper *k);

/* Narrows pid's threads tids[0..n) to node_cpus intersected with each thread's current
 * affinity (its recorded original for a thread we placed already). tid_start[i]: the
 * thread's start time (field 22 of /proc/PID/task/TID/stat) when decided; expect[i]:
 * the affinity the decision was made on (NULL: not checked). A thread whose affinity is
 * no longer expect[i], or whose intersection is empty, is not touched (left_alone).
 * pidfd: pid's pidfd, or -1 (then the start time in /proc/PID/stat is checked). The
 * originals are in the state file before the first change. Returns 0, or -errno when
 * nothing could be placed (the state file could not be written; logged). Batched, it
 * only plans (the records in memory): affinity_commit() makes the changes and fills
 * *c, which must live until then; pidfd too. */
int affinity_place(struct affinity_keeper *k, pid_t pid, uint64_t start_time, int pidfd, const pid_t *tids,
                   const uint64_t *tid_start, const nb_cpumask *expect, size_t n, const nb_cpumask *node_cpus,
                   struct affinity_counts *c);

/* The planned changes made: the processes whose records would make the state file
 * bigger than its reader accepts are not placed (the last planned first, logged,
 * counted failed), every record is written once, then each thread is narrowed (checked
 * again right before). Without planned changes, the file is written if it changed.
 * Returns 0 or -errno (the file could not be written: nothing narrowed, logged). */
int affinity_commit(struct affinity_keeper *k);

/* Each tick for a placed process: a recorded thread whose affinity is no longer the
 * one we set is left alone from then on (its record kept, flagged); one that exited is
 * dropped. A new thread whose affinity equals a recorded thread's placed mask (or its
 * previous one, until the write after its change) inherited it at clone: it is
 * recorded with that thread's original (the main thread's if its mask matches, else
 * the first such thread by tid), so that undo restores it too; beyond the bounds it
 * gets that original back at once. Returns the threads of pid held by us (0: the
 * process is forgotten, as by affinity_forget), or -errno (logged). */
int affinity_check(struct affinity_keeper *k, pid_t pid, uint64_t start_time, struct affinity_counts *c);

/* Each tick, for one cgroup: pids[0..n) (start times starts) are its processes whose
 * threads we hold narrowed (placed by affinity_place, or adopted here), cands[0..
 * n_cands) its cgroup.procs. A process of cands that is not recorded is adopted when
 * it started no earlier than the clock tick of the first placement of one of them
 * (its start time, field 22 of /proc/PID/stat, compared first: one read of its stat),
 * one of its threads carries exactly a mask we set on a recorded thread of that one
 * (it was created by a placed thread, and kept the mask across exec), and right
 * before recording both are in cgroup (/proc/PID/cgroup read again). Its threads
 * carrying such a mask are recorded with the original of the donor thread (as a new
 * thread is, affinity_check), its others as known. An adopted process is a record of
 * its own (pid and start time, tid and thread start time): checked by
 * affinity_check_adopted, given back when the placed process it descends from is
 * undone, at affinity_undo_all and by affinity_recover, its parent alive or not.
 * Bounds: AFFINITY_THREADS_PROC_MAX processes adopted from one placed process (its
 * children and theirs), each of at most AFFINITY_THREADS_PROC_MAX threads, all within
 * AFFINITY_THREADS_MAX; beyond them a process's threads carrying our mask get the
 * original at once. Returns the processes adopted, or -errno (logged). */
int affinity_adopt(struct affinity_keeper *k, const char *cgroup, const pid_t *pids, const uint64_t *starts, size_t n,
                   const pid_t *cands, size_t n_cands, struct affinity_counts *c);
/* Each tick: affinity_check for every adopted process (left alone, exited, new
 * threads), its parent alive or not. Returns the threads of adopted processes held. */
int affinity_check_adopted(struct affinity_keeper *k, struct affinity_counts *c);

/* Undoes one process (opt-out, mode changed away from place, placement released):
 * new threads adopted as in affinity_check, then each thread still carrying our mask
 * gets its original back; the others are left. The process is then forgotten, and
 * the processes adopted from it (affinity_adopt) are undone the same way, whether it
 * still runs or not. Returns 0 or -errno (logged). */
int affinity_undo(struct affinity_keeper *k, pid_t pid, uint64_t start_time, struct affinity_counts *c);
/* affinity_undo for every process: a clean stop. */
int affinity_undo_all(struct affinity_keeper *k, struct affinity_counts *c);
/* pid exited: nothing to restore, its records dropped (not those of the processes
 * adopted from it: they are their own). */
void affinity_forget(struct affinity_keeper *k, pid_t pid);

/* Whether we hold some thread of pid narrowed; *node_cpus_first (may be NULL): the
 * first CPU of the node_cpus of its last placement. */
bool affinity_is_placed(const struct affinity_keeper *k, pid_t pid, int *node_cpus_first);
/* Threads currently narrowed by us (recorded and not left alone), in all. */
size_t affinity_held(const struct affinity_keeper *k);

/* A test's seam: lower bounds than AFFINITY_THREADS_PROC_MAX and AFFINITY_THREADS_MAX. */
void affinity_keeper_set_limits(struct affinity_keeper *k, size_t per_process, size_t in_all);

/* Batched (the placer's mode): affinity_place() only plans, and neither it nor
 * affinity_check(), affinity_undo() and affinity_forget() write the state file: the
 * round's affinity_commit() does, once. What they changed needs no write before it (a
 * daemon killed meanwhile leaves lines a recovery skips or leaves alone). Not batched,
 * each call writes the file as it needs. affinity_undo_all() and affinity_recover()
 * always write it. */
void affinity_keeper_set_batched(struct affinity_keeper *k, bool batched);

/* Called every few thousand records while the state file is written
 * (affinity_serve_fn, affinity-store.h), and after each process narrowed by
 * affinity_commit(): the daemon serves its control socket and the watchdog there. The
 * records are whole and unchanged during the call, which must not call the keeper but
 * for its const queries. */
void affinity_keeper_set_serve(struct affinity_keeper *k, affinity_serve_fn fn, void *userdata);

/* A test's seam: a lower bound than 64 MiB on the state file, read and written. */
void affinity_keeper_set_file_max(struct affinity_keeper *k, size_t bytes);

/* A test's seam: called right before each sched_setaffinity() of a thread, with the
 * mask about to be set (NULL: none, in the daemon). */
typedef void (*affinity_before_set_fn)(void *userdata, pid_t tid, const nb_cpumask *mask);
void affinity_keeper_set_hook(struct affinity_keeper *k, affinity_before_set_fn fn, void *userdata);

/* Thread tid of pid, narrowed by us now: its original into *ret (true); otherwise
 * false (not ours, or left alone). */
bool affinity_original(const struct affinity_keeper *k, pid_t pid, pid_t tid, nb_cpumask *ret);
/* Whether we hold tid of pid narrowed now. */
bool affinity_thread_held(const struct affinity_keeper *k, pid_t pid, pid_t tid);
/* Whether its application changed tid's affinity after we narrowed it (never touched
 * again). */
bool affinity_thread_left_alone(const struct affinity_keeper *k, pid_t pid, pid_t tid);
