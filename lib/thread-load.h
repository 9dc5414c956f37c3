/* SPDX-License-Identifier: GPL-2.0-or-later */
/* How busy each thread of a process is, and where it runs; how busy each node is. What
 * thread-place.h decides from.
 *
 * thread_load_read(): per thread of a process (/proc/PID/task/TID), its run time
 * (schedstat's first field, ns), the CPU it last ran on (stat field 39), its start time
 * (stat field 22) and its affinity (sched_getaffinity() when proc_root is "/proc";
 * Cpus_allowed_list of its status for a stored /proc: the same mask). Kept between calls, so that each call gives every
 * thread's busy fraction over the window since the previous one: run-time delta over
 * wall-clock delta. A thread whose start time changed is a new thread under an old id:
 * no delta for it yet. Bounded: at most max_threads threads (the listing stops past
 * them), each with its affinity in ceil(t->n_cpus / 64) words; no text of the tenant's
 * (comm) is kept.
 *
 * thread_load_cpu_read(): each CPU's busy time from /proc/stat (user, nice, system, irq,
 * softirq, steal; idle and iowait are idle) over the window between two calls, as a
 * fraction of that CPU's counted time, summed per node: a node with two CPUs fully
 * busy is 2.0. Everything counts, the daemon's own service CPU time too. */
#pragma once
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include "nodemask.h"
#include "topology.h"

struct thread_load_thread {
        pid_t tid;
        int cpu;                   /* stat field 39: the CPU it last ran on, -1 unknown */
        int node;                  /* topology index of that CPU's node, -1 unknown */
        bool measured;             /* busy is over a window: seen at the previous read, same
                                    * start time */
        bool has_affinity;         /* Cpus_allowed_list was read (thread_load_affinity()) */
        double busy;               /* run-time delta / wall delta; 0 when !measured */
        uint64_t starttime;        /* stat field 22, clock ticks since boot */
        uint64_t runtime_ns;       /* schedstat's first field */
};

struct thread_load {
        struct thread_load_thread *threads;   /* sorted by tid */
        size_t n_threads;
        uint64_t *affinity;        /* n_threads x affinity_words: each thread's CPUs */
        unsigned affinity_words;
        uint64_t read_ns;          /* wall clock (CLOCK_MONOTONIC) of the last read, 0: none */
        uint64_t window_ns;        /* wall delta of the last read's window, 0: the first read */
};

/* Reads every thread of pid under proc_root ("/proc" or a stored tree). Returns 0 (a
 * window was measured when tl->window_ns > 0), -E2BIG when pid has more than max_threads
 * threads (tl emptied: the next read starts again), -ESRCH when the process is gone, or
 * another -errno (tl unchanged). A thread that exits while being read is left out. */
int thread_load_read(const char *proc_root, pid_t pid, const struct topology *t, struct thread_load *tl,
                     size_t max_threads);
/* The same with the wall clock of the read given (tests): now_ns, CLOCK_MONOTONIC ns. */
int thread_load_read_at(const char *proc_root, pid_t pid, const struct topology *t, struct thread_load *tl,
                        size_t max_threads, uint64_t now_ns);
/* Thread i's CPUs (its affinity at the last read) into ret; false when not read. */
bool thread_load_affinity(const struct thread_load *tl, size_t i, nb_cpumask *ret);
/* Thread tid's entry, or NULL. */
const struct thread_load_thread *thread_load_find(const struct thread_load *tl, pid_t tid);
void thread_load_done(struct thread_load *tl);

struct cpu_load {
        uint64_t *busy;            /* per CPU id: busy ticks at the last read */
        uint64_t *total;           /* per CPU id: busy + idle ticks at the last read; 0: not seen */
        double *frac;              /* per CPU id: its busy fraction over the last window, -1: none */
        unsigned n_cpus;           /* t->n_cpus the arrays were made for */
        uint64_t read_ns;          /* now_ns of the last read, 0: none */
        uint64_t window_ns;        /* the last window, 0: none */
};

/* Reads <proc_root>/stat at now_ns (CLOCK_MONOTONIC ns). busy_by_node: t->n_nodes
 * entries by topology index, set to each node's busy CPUs' worth over the window since
 * the previous read (a CPU seen in one read only counts 0). Returns 1 with a window, 0
 * on the first read (or after the topology's CPU count changed: a new baseline; all 0),
 * -errno (-EINVAL: a cpu line that does not parse). */
int thread_load_cpu_read(const char *proc_root, const struct topology *t, struct cpu_load *cl, uint64_t now_ns,
                         double *busy_by_node);
void thread_load_cpu_done(struct cpu_load *cl);
