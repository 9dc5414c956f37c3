/* SPDX-License-Identifier: GPL-2.0-or-later */
/* kernel.numa_balancing: the kernel's own NUMA balancing, which moves pages toward
 * the CPUs that fault on them and can undo numabalanced's placement (docs/KERNEL.md).
 * This module is the only one that reads or writes the sysctl: the daemon's start,
 * reload and exit go through struct kernel_balancing, status through
 * kernel_balancing_read().
 *
 * With kernel_numa_balancing=disable the daemon sets it to 0 at start and puts the
 * operator's value back at exit, unless someone set it to something else than 0 in
 * the meantime. With leave it changes nothing and warns when the kernel's balancing
 * is on. Nothing is written in a dry run.
 *
 * The operator's value must survive a daemon that never reaches its exit (SIGKILL,
 * the watchdog, a crash, a stop that times out): before writing 0 it is saved to a
 * file in the state directory (/run/numabalanced, the unit's RuntimeDirectory=, kept
 * by RuntimeDirectoryPreserve=yes), written atomically (state-dir.h).
 * At start, a saved value with the sysctl still at 0 means the previous daemon did
 * not restore it: that saved value is the operator's, not the 0 found. The file is
 * removed once the value is restored (or when someone changed the sysctl since).
 * /run is right for it because the sysctl itself starts afresh at each boot. The
 * state directory is locked (state_dir_lock()) while a daemon holds the sysctl: a
 * second daemon leaves the sysctl and the saved value alone. */
#pragma once
#include <stdbool.h>
#include <stdint.h>
#include "config.h"
#include "state-dir.h"

/* Where the operator's value is kept while the daemon holds the sysctl at 0, when
 * systemd does not say ($RUNTIME_DIRECTORY). */
#define KERNEL_BALANCING_STATE_DIR STATE_DIR_DEFAULT
/* Its name in that directory. */
#define KERNEL_BALANCING_STATE_FILE "kernel.numa_balancing"

/* kernel.numa_balancing as we found it, and whether we changed it. */
struct kernel_balancing {
        char *path;                  /* <proc_root>/sys/kernel/numa_balancing */
        char *state_dir;             /* where the saved value lives */
        char *state_path;            /* <state_dir>/KERNEL_BALANCING_STATE_FILE */
        int lock_fd;                 /* the state directory, locked: we are the one daemon that holds it */
        bool present;                /* the kernel has it, we could read it, and no other daemon holds it */
        uint64_t found;              /* the operator's value: at start, or saved by a daemon that died */
        bool changed;                /* it is 0 because of us: found must be restored */
};

/* The value of kernel.numa_balancing under proc_root: 0, -ENOENT if this kernel has
 * none, or another -errno (-EINVAL: not a number). Nothing is logged. */
int kernel_balancing_read(const char *proc_root, uint64_t *ret);
/* Whether the kernel's NUMA balancing is on now, read at every tick (the operator may
 * switch it at any time): *value its value (-1: none or unreadable), *on whether bit 0
 * (NUMA_BALANCING_NORMAL; bit 1 is memory tiering only) is set. Memory whose policy
 * asks for it ("balancing") is then the kernel's (policy.h). A change of *on from what
 * it held is logged at info. */
void kernel_balancing_watch(const char *proc_root, int64_t *value, bool *on);

/* Reads the value at start into k, and the value a previous daemon saved in
 * state_dir (NULL: the first directory of $RUNTIME_DIRECTORY, which systemd sets
 * from RuntimeDirectory=, else KERNEL_BALANCING_STATE_DIR): if the sysctl is still 0 that
 * value is the operator's and is restored at exit (logged at notice). A kernel
 * without the sysctl (logged at info) or an unreadable one (a warning) leaves k not
 * present: the other calls then do nothing. Returns 0, or -ENOMEM (logged). */
int kernel_balancing_init(struct kernel_balancing *k, const char *proc_root, const char *state_dir);

/* Whether this daemon holds the state directory's lock (taken now if it was not: a
 * kernel without the sysctl does not take it at init). The other state kept there
 * (the threads' original affinity, placer.h) is only this daemon's to write and
 * restore when it does. */
bool kernel_balancing_owns_state(struct kernel_balancing *k);

/* Brings the sysctl in line with the configured action, at start and at each reload:
 * disable saves the value and sets 0 (logged at notice; a failure is a warning and
 * is not fatal; a value that cannot be saved is not changed), leave restores what
 * disable changed and warns if the kernel's balancing is on. */
void kernel_balancing_apply(struct kernel_balancing *k, enum knb_action action, bool dry_run);

/* At exit: restores what we changed, unless it was set to a value other than 0 while
 * we ran (then it is left, with a notice), and frees k's memory. */
void kernel_balancing_done(struct kernel_balancing *k);
