/* SPDX-License-Identifier: GPL-2.0-or-later */
/* For bench/split.c and bench/shared.c: the first CPU of a node, pinning the caller,
 * and a SIGTERM that asks the main loop to stop. */
#pragma once
#include <numa.h>
#include <sched.h>
#include <signal.h>

static volatile sig_atomic_t stop;

static inline void on_term(int sig) {
        (void) sig;
        stop = 1;
}

/* The lowest-numbered CPU of node, or -1. */
static inline int first_cpu(int node) {
        struct bitmask *cpus = numa_allocate_cpumask();
        int c = -1;

        if (numa_node_to_cpus(node, cpus) == 0)
                for (unsigned i = 0; i < cpus->size && c < 0; i++)
                        if (numa_bitmask_isbitset(cpus, i))
                                c = (int) i;
        numa_free_cpumask(cpus);
        return c;
}

static inline void pin(int cpu) {
        cpu_set_t set;

        CPU_ZERO(&set);
        CPU_SET(cpu, &set);
        sched_setaffinity(0, sizeof(set), &set);
}
