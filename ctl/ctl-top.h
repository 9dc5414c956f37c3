/* SPDX-License-Identifier: GPL-2.0-or-later */
/* numabalancectl top: a live view of the daemon, like top(1) or numatop: per cgroup and
 * process, the local share and memory per node, the bytes not on the node the threads
 * run on, MiB/s moved since the last refresh, pages refused and the last scan's
 * reason; the daemon's CPU share and its sampling chain. The cgroups are ordered by the
 * chosen key across all of them, each followed by its processes in the same order.
 * Keys: m, b, l, r, p sort by moved rate, misplaced bytes, local share (worst first),
 * refused, pid; q quits. A frame fits the terminal: its header stays, and the rows
 * that do not fit are counted on the last line; the screen is overwritten in place,
 * not cleared. It exits (status 1, one line on stderr) when the daemon goes away.
 * When stdout is not a terminal it prints one snapshot, all its rows, its rates over
 * one interval, and exits. */
#pragma once
#include "ctl-daemon.h"

enum top_sort { TOP_SORT_MOVED, TOP_SORT_MISPLACED, TOP_SORT_LOCAL, TOP_SORT_REFUSED, TOP_SORT_PID, _TOP_SORT_MAX };

/* The name of a sort key, as --sort takes it. */
const char *ctl_top_sort_name(enum top_sort s);
/* Returns the exit status. */
int ctl_top(const struct daemon_args *a, unsigned interval_ms, enum top_sort sort);
