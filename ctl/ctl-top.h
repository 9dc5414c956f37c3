/* SPDX-License-Identifier: GPL-2.0-or-later */
/* numabalancectl top: a live view of the daemon, like top(1) or numatop: per cgroup and
 * process, the local share and memory per node, MiB/s moved since the last refresh,
 * pages refused and the last scan's reason; the daemon's CPU share and its sampling
 * chain. Keys: m, l, r, p sort by moved rate, local share (worst first), refused,
 * pid; q quits. It exits (status 1, one line on stderr) when the daemon goes away.
 * When stdout is not a terminal it prints one snapshot, its rates over one interval,
 * and exits. */
#pragma once
#include "ctl-daemon.h"

enum top_sort { TOP_SORT_MOVED, TOP_SORT_LOCAL, TOP_SORT_REFUSED, TOP_SORT_PID };

/* Returns the exit status. */
int ctl_top(const struct daemon_args *a, unsigned interval_ms, enum top_sort sort);
