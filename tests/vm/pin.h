/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The VM test workloads' one way to run on a node: every CPU of it, or exit. */
#pragma once
#include <numa.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>

static inline void pin_to_node(int node) {
        struct bitmask *cpus = numa_allocate_cpumask();
        cpu_set_t set;

        CPU_ZERO(&set);
        if (numa_node_to_cpus(node, cpus) < 0) {
                perror("numa_node_to_cpus");
                exit(1);
        }
        for (unsigned c = 0; c < cpus->size && c < CPU_SETSIZE; c++)
                if (numa_bitmask_isbitset(cpus, c))
                        CPU_SET(c, &set);
        numa_free_cpumask(cpus);
        if (CPU_COUNT(&set) == 0) {
                fprintf(stderr, "node %d has no CPUs\n", node);
                exit(1);
        }
        if (sched_setaffinity(0, sizeof(set), &set) < 0) {
                perror("sched_setaffinity");
                exit(1);
        }
}
