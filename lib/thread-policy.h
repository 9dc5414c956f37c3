/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The memory policies of a process's threads (set_mempolicy(2) is per thread).
 *
 * numa_maps shows, on each VMA, the VMA's own policy if it has one, else the policy
 * of the thread the file belongs to (fs/proc/task_mmu.c show_numa_map: the task's
 * policy is taken once per read). /proc/PID/numa_maps is the main thread's, so a
 * worker that bound itself elsewhere and allocated there is not seen in it; its own
 * /proc/PID/task/TID/numa_maps shows its policy on the same VMAs.
 *
 * One record is enough: seq_file (fs/seq_file.c seq_read_iter) generates records only
 * until the reader's buffer is full, so a 64-byte read costs the first VMA's record
 * (the executable's first mapping: a few pages walked), about 2.5 us with open and
 * close, where the whole file of a 512 MiB process costs 1.6 ms (docs/KERNEL.md).
 *
 * Which policy a first record shows: a VMA with its own policy shows it in every
 * thread. So, with M the main thread's first record and T another thread's:
 *   - M is "default", or some T differs from M: the first VMA has no VMA policy (the
 *     kernel never stores a VMA policy "default": mbind(MPOL_DEFAULT) removes it), and
 *     every thread's record is its own policy;
 *   - every thread shows the same non-default M: either all threads have M (a policy
 *     given at launch, numactl --membind, is inherited) or the first VMA has the VMA
 *     policy M. If another VMA of the main thread shows "default", the main thread's
 *     policy is default, so the first VMA has one: the threads' policies are not
 *     known (unknown). Otherwise all threads are taken to have M; the one case this
 *     misses is a first VMA whose own policy equals the main thread's non-default
 *     policy while another thread has another one.
 *
 * A VMA that shows the main thread's policy is taken to have no VMA policy (one whose
 * own policy happens to be equal gets the intersection too: less moves, never more). */
#pragma once
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include "numa_maps.h"

/* The first record of one thread's numa_maps: its first VMA and the policy shown. */
struct policy_head {
        uint64_t start;
        struct mempolicy policy;
};

struct thread_policies {
        struct mempolicy main;        /* the main thread's own policy: what numa_maps shows on
                                       * memory without a VMA policy */
        struct mempolicy *policies;   /* the distinct policies of the threads, main's included */
        size_t n_policies;
        size_t n_threads;             /* threads read, the main thread included */
        bool unknown;                 /* some thread's policy could not be established */
};

/* From the first records of the threads, heads[0] being the main thread's (pure). main_maps
 * (may be NULL) is the main thread's whole numa_maps: a VMA there that shows "default"
 * proves the first VMA's policy is its own. n_failed threads could not be read (not
 * counting those that exited): their policy is unknown. */
int thread_policy_resolve(const struct policy_head *heads, size_t n, size_t n_failed,
                          const struct numa_maps *main_maps, struct thread_policies *ret);

/* Reads the first record of every thread of pid under proc_root and resolves them.
 * With main_maps (the main thread's numa_maps, just read), its first VMA stands for the
 * main thread's first record. Returns 0, or -errno (-ESRCH: the process is gone). */
int thread_policy_read(const char *proc_root, pid_t pid, const struct numa_maps *main_maps,
                       struct thread_policies *ret);

/* For a single-threaded process: its one policy, from its numa_maps (pure). */
int thread_policy_single(const struct numa_maps *main_maps, struct thread_policies *ret);

/* Whether a VMA showing policy p in the main thread's numa_maps is taken to have no VMA
 * policy, so that the threads' policies govern it. tp may be NULL (not read): false. */
bool thread_policy_govern(const struct thread_policies *tp, const struct mempolicy *p);

/* For the check before moving: whether memory without a VMA policy of process pid may
 * go to node now, by its threads' policies read again (one small read per thread, the
 * main thread's included; policy_allowed_nodes_threads()). mems_allowed, with_memory
 * and rules as for policy_allowed_nodes(). Returns 1 (yes), 0 (no: a thread's
 * policy does not allow it, or could not be established), or -errno (-ESRCH: gone). */
int thread_policy_allow(const char *proc_root, pid_t pid, const nb_nodemask *mems_allowed,
                        const nb_nodemask *with_memory, unsigned rules, unsigned node);

void thread_policy_done(struct thread_policies *tp);
