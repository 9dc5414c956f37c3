/* SPDX-License-Identifier: GPL-2.0-or-later */
/* report: what the manager knows, as JSON for the control socket (status, list,
 * explain) and as Prometheus text for node_exporter's textfile collector.
 *
 * Everything here reads struct manager (manager-internal.h) on the event-loop thread,
 * between ticks, and changes nothing. Strings that come from processes or the file
 * system (comm, cgroup paths) are escaped by lib/json or by the metrics writer.
 *
 * Visibility (the control socket passes the peer's uid): uid 0 sees everything;
 * another uid sees the processes it may ptrace (lib/creds.h: all its ids are the uid's
 * and it is dumpable, read when asked), and only the cgroups whose directory it owns.
 * status counts for it only those; explain of a process it may not see answers as for
 * a pid that does not exist. */
#pragma once
#include <stdio.h>
#include <sys/types.h>
#include "manager-internal.h"

/* The JSON documents (docs/ctl-json.md). Each writes one document ending with a
 * newline to f and returns 0, or -errno (only -ENOMEM). */
int report_status(struct manager *m, uid_t uid, FILE *f);
int report_list(struct manager *m, uid_t uid, FILE *f);
int report_explain(struct manager *m, uid_t uid, pid_t pid, FILE *f);
/* {"error": msg} */
void report_error(FILE *f, const char *msg);

/* The Prometheus text exposition format (version 0.0.4), every metric with HELP and
 * TYPE. Returns 0 or -EIO if writing to f failed. */
int report_metrics(struct manager *m, FILE *f);
/* Writes report_metrics() to path atomically: a temporary file in the same directory
 * (named ".<name>.XXXXXX", which the textfile collector ignores), mode 0644, renamed
 * over path. Returns 0 or -errno; nothing is logged. */
int report_write_metrics(struct manager *m, const char *path);
/* The metrics file after a tick: report_write_metrics() when path is set (not NULL or
 * ""). A failure is logged (warning) when it first happens and when it changes, not at
 * every tick, and so is the recovery (info); *last_error carries the last outcome
 * from one call to the next (0 at first). */
void report_update_metrics_file(struct manager *m, const char *path, int *last_error);

/* Label value escaping of the exposition format: backslash, double quote and newline
 * become \\, \" and \n. Written to f. */
void metrics_put_label_value(FILE *f, const char *s);

/* Visibility rules, for the tests. */
bool report_cg_visible(const struct cg_rec *c, uid_t uid);
bool report_proc_visible(const struct manager *m, const struct proc_rec *p, uid_t uid);
