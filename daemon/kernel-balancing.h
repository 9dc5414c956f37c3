/* SPDX-License-Identifier: GPL-2.0-or-later */
/* kernel.numa_balancing: the kernel's own NUMA balancing, which moves pages toward
 * the CPUs that fault on them and can undo numabalanced's placement (docs/KERNEL.md).
 * This module is the only one that reads or writes the sysctl: the daemon's start,
 * reload and exit go through struct kernel_balancing, status through
 * kernel_balancing_read().
 *
 * With kernel_numa_balancing=disable the daemon sets it to 0 at start, remembering
 * the value it found, and puts that value back at exit, unless someone set it to
 * something else than 0 in the meantime. With leave it changes nothing and warns when
 * the kernel's balancing is on. Nothing is written in a dry run. */
#pragma once
#include <stdbool.h>
#include <stdint.h>
#include "config.h"

/* kernel.numa_balancing as we found it, and whether we changed it. */
struct kernel_balancing {
        char *path;                  /* <proc_root>/sys/kernel/numa_balancing */
        bool present;                /* the kernel has it and we could read it */
        uint64_t found;              /* the value at start */
        bool changed;                /* we wrote 0 and must restore found */
};

/* The value of kernel.numa_balancing under proc_root: 0, -ENOENT if this kernel has
 * none, or another -errno (-EINVAL: not a number). Nothing is logged. */
int kernel_balancing_read(const char *proc_root, uint64_t *ret);

/* Reads the value at start into k. A kernel without the sysctl (logged at info) or
 * an unreadable one (a warning) leaves k not present: the other calls then do
 * nothing. Returns 0, or -ENOMEM (logged). */
int kernel_balancing_init(struct kernel_balancing *k, const char *proc_root);

/* Brings the sysctl in line with the configured action, at start and at each reload:
 * disable sets 0 (logged at notice; a failure is a warning and is not fatal), leave
 * restores what disable changed and warns if the kernel's balancing is on. */
void kernel_balancing_apply(struct kernel_balancing *k, enum knb_action action, bool dry_run);

/* At exit: restores what we changed, unless it was set to a value other than 0 while
 * we ran (then it is left, with a notice), and frees k's memory. */
void kernel_balancing_done(struct kernel_balancing *k);
