/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The metrics file: what the manager knows, in the Prometheus text exposition format
 * (version 0.0.4), for node_exporter's textfile collector, written after every tick.
 *
 * The file must always parse: node_exporter drops a file that does not, and with it
 * every metric of the daemon. Cgroup paths are chosen by whoever may create cgroups
 * (any user with a delegated subtree), so label values are escaped as the format
 * says (backslash, double quote, newline) and made valid UTF-8 (each byte of an
 * invalid sequence becomes U+FFFD, as node_exporter refuses invalid UTF-8). Two
 * paths that differ only in their invalid bytes would then be one series twice,
 * which also fails the file: the path that was valid UTF-8 already is kept, the
 * others are left out of the file and counted (numabalanced_metrics_cgroups_hidden).
 * A path left out is always in the subtree of the one kept (the same parent), so a
 * user can hide only their own cgroups.
 *
 * The file names every opted-in cgroup: it is written with mode 0640, and given the
 * configured group (metrics_group: node_exporter's), which the daemon, without
 * CAP_CHOWN, may do only for a group it is a member of (SupplementaryGroups=). */
#pragma once
#include <stdio.h>
#include <sys/types.h>
#include "cg-records.h"
#include "cost.h"
#include "counters.h"
#include "manager.h"
#include "proc-records.h"
#include "service-cpus.h"

/* The mode of the metrics file: readable by all, since node_exporter publishes it on
 * its port to anyone who can reach that (and the cgroup paths it names are in the
 * world-readable /sys/fs/cgroup), so that metrics_path alone makes it work; with
 * metrics_group, readable by that group alone. */
#define METRICS_FILE_MODE 0644
#define METRICS_FILE_MODE_GROUP 0640

/* Cgroups in the file at most, the largest by resident memory (the rest counted in
 * numabalanced_metrics_cgroups_hidden): a bound on a host's series. */
#define METRICS_CGROUPS_MAX 1000

/* Writes the metrics to f. Returns 0, -ENOMEM, or -EIO if writing to f failed. */
int metrics_write(const struct manager_view *v, FILE *f);

/* Writes metrics_write() to path atomically: a temporary file in the same directory
 * (named ".<name>.XXXXXX", which the textfile collector ignores), mode
 * METRICS_FILE_MODE, or METRICS_FILE_MODE_GROUP with group gid ((gid_t) -1: as
 * created, METRICS_FILE_MODE), renamed over path. Returns
 * 0 or -errno; nothing is logged. A group that cannot be set does not stop the file:
 * the error goes to *ret_group_error (0 when it was set or not asked for). */
int metrics_write_file(const struct manager_view *v, const char *path, gid_t gid, int *ret_group_error);

/* What metrics_update_file() carries from one tick to the next. Zero it at first. */
struct metrics_state {
        int error;                 /* the last failure to write the file, 0: none */
        int group_error;           /* the last failure to resolve or set the group, 0: none */
        char *group;               /* the group name last resolved, and its gid */
        gid_t gid;
};

/* The metrics file after a tick: metrics_write_file() when path is set (not NULL or
 * ""), with group (a name or a number; NULL or "": as created). Failures are logged
 * (warning) when they first happen and when they change, not at every tick, and so
 * are recoveries (info). */
void metrics_update_file(const struct manager_view *v, const char *path, const char *group, struct metrics_state *s);
void metrics_state_done(struct metrics_state *s);

/* A label value as the exposition format takes it: invalid UTF-8 made U+FFFD, every
 * control character but the newline (C0, DEL, C1) made the text \xNN per byte, then
 * backslash, double quote and newline as \\, \" and \n. Written to f. */
void metrics_put_label_value(FILE *f, const char *s);
