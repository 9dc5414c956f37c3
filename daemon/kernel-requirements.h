/* SPDX-License-Identifier: GPL-2.0-or-later */
/* What the running kernel must have for numabalanced to keep its promises, checked
 * once at start (and the cgroup root again at each reload): a missing piece refuses the
 * start with a message that names it, instead of a daemon that runs and does nothing.
 *
 *   pidfd_open(2) (Linux 5.3): every move is checked against the process it was
 *       planned for through a pidfd, so that a recycled pid is never moved;
 *   a cgroup2 hierarchy at [select] cgroup_root: on a host in the cgroup v1 or hybrid
 *       layout, /sys/fs/cgroup is a tmpfs of v1 controllers and the unified hierarchy,
 *       where there is one, sits at /sys/fs/cgroup/unified: that one is used (said
 *       once) when cgroup_root is the default, and without one the start is refused;
 *       a cgroup_root the operator named that is not cgroup2 is warned about only
 *       (the unit tests' trees of plain directories are such roots);
 *   user.* extended attributes on cgroupfs (Linux 5.7): how a delegated user opts in.
 * The sys_root/proc_root test roots of the other modules do not apply: these are
 * questions to the running kernel itself (root is "" outside tests). */
#pragma once
#include "config.h"

/* 0, or -errno after logging what is missing. */
int kernel_requirements_check(void);

/* Checks cfg->cgroup_root and, on a hybrid host with the default root, points it at
 * the unified hierarchy. say_once: log the notice and warnings (at start; a reload
 * that changes nothing stays quiet). 0 or -errno, logged. */
int kernel_requirements_cgroup_root(struct nb_config *cfg, bool say_once);
