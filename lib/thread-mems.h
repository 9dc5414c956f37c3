/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The nodes every thread of a process may allocate on, when its threads may sit in
 * different cpusets. cgroup v2 keeps all threads of a process in one cgroup unless it
 * lies in a threaded subtree (cgroup.type "threaded", or "domain threaded" at its
 * root), where each thread may be in a cgroup of its own, with a cpuset of its own.
 * /proc/PID/status shows the main thread's Mems_allowed only.
 *
 * move_pages(2) checks the target node against the cpuset of the task its pid names
 * (mm/migrate.c, kernel_move_pages: find_mm_struct() takes cpuset_mems_allowed() of
 * that one task), so memory could be moved to a node that another thread's cpuset
 * forbids, and that thread, whose own allocations the kernel keeps inside its cpuset,
 * would then work on memory the operator confined it away from. The safe rule used
 * here: memory goes only to a node in the cpuset of every thread of the process
 * (which of them uses a page is not known), the intersection of their Mems_allowed.
 * Threads that end meanwhile are left out; a process of more than THREAD_MEMS_MAX
 * threads in a threaded subtree gets no node at all (nothing of it moves). */
#pragma once
#include <stdbool.h>
#include <sys/types.h>
#include "nodemask.h"
#include "proc.h"

#define THREAD_MEMS_MAX 4096

/* Whether the threads of a process whose main thread is in cgroup path (under
 * cgroup_root) may be in other cgroups: its cgroup.type is not "domain". 1, 0 (a
 * domain, or no cgroup.type: the root cgroup), or -errno. */
int thread_mems_split(const char *cgroup_root, const char *path);

/* The intersection of the Mems_allowed of pid's threads (a thread without the field
 * leaves it as it is) into *mems, which holds the start (the main thread's).
 * -E2BIG: more than THREAD_MEMS_MAX threads; -ESRCH: pid is gone. */
int thread_mems_allowed(const char *proc_root, pid_t pid, nb_nodemask *mems);

/* status->mems_allowed narrowed to every thread's when pid's cgroup (path) is in a
 * threaded subtree: 1 when it was (-E2BIG: emptied), 0 when not needed, -errno. */
int thread_mems_narrow(const char *proc_root, const char *cgroup_root, const char *path, pid_t pid,
                       struct proc_status *status);
