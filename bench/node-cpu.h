/* SPDX-License-Identifier: GPL-2.0-or-later */
/* For bench/split.c and bench/shared.c: the first CPU of a node, pinning the caller,
 * a SIGTERM that asks the main loop to stop, and files written whole or not at all
 * (bench.py polls them: it must never read one half-written). */
#pragma once
#include <numa.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>

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

/* Writes the formatted text to path through path.tmp and a rename. 0 or -1. */
static inline int __attribute__((format(printf, 2, 3))) write_atomically(const char *path, const char *fmt, ...) {
        char tmp[4096];
        va_list ap;
        FILE *f;
        int r;

        snprintf(tmp, sizeof(tmp), "%s.tmp", path);
        f = fopen(tmp, "w");
        if (!f)
                return -1;
        va_start(ap, fmt);
        r = vfprintf(f, fmt, ap);
        va_end(ap);
        if (fclose(f) != 0 || r < 0)
                return -1;
        return rename(tmp, path);
}
