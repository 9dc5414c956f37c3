/* SPDX-License-Identifier: GPL-2.0-or-later */
/* report: what the manager knows, as JSON for the control socket (status, list,
 * explain); metrics.h has it as Prometheus text for node_exporter.
 *
 * Everything here reads the manager's view (struct manager_view, manager.h) on the
 * event-loop thread, between ticks or while a long tick serves the socket, and changes
 * nothing. Strings that come from processes or the file
 * system (comm, cgroup paths) are escaped by lib/json or by the metrics writer.
 *
 * Visibility (the control socket passes the peer's uid): uid 0 sees everything;
 * another uid sees the processes it may ptrace (lib/creds.h: all its ids are the uid's
 * and it is dumpable, read at most once a tick: struct report_seen), and only the
 * cgroups whose directory it owns.
 * status counts for it only those; explain of a process it may not see answers as for
 * a pid that does not exist. */
#pragma once
#include <stdio.h>
#include <sys/types.h>
#include "cg-records.h"
#include "control-request.h"
#include "cost.h"
#include "counters.h"
#include "manager.h"
#include "proc-records.h"
#include "service-cpus.h"

/* The layout version every reply carries as "schema": raised when a field changes
 * meaning or goes away (new fields do not raise it). */
#define REPORT_SCHEMA 1

/* The JSON documents (docs/ctl-json.md). Each writes one document ending with a
 * newline to f and returns 0, or -errno (only -ENOMEM). */
int report_status(const struct manager_view *v, uid_t uid, FILE *f);
/* list: one page of at most CONTROL_REPLY_MAX bytes, with the request's filters and
 * from its cursor (req NULL: everything from the start). */
int report_list(const struct manager_view *v, uid_t uid, const struct control_request *req, FILE *f);
int report_explain(const struct manager_view *v, uid_t uid, pid_t pid, FILE *f);
/* explain CGROUP: its opt-in, whether the walk selected it, its processes. */
int report_explain_cgroup(const struct manager_view *v, uid_t uid, const char *path, FILE *f);
/* {"error": msg} */
void report_error(FILE *f, const char *msg);

/* The name of a stage of the daemon's CPU time ("read", ...), as the reports say it. */
const char *report_stage_name(enum stage s);

/* Who may see which watched process, for the requests of one tick: the credentials
 * of a process (its ids, whether it is dumpable) are read by the first request of a
 * tick that asks about it, and that answer serves every request until the tick
 * counter moves. A user's status or list read them for each of its processes at each
 * request, on the event loop: ten requests a second by each of 65,536 sub-uids. A
 * setuid exec or PR_SET_DUMPABLE shows at the next tick. The control socket keeps one
 * (manager_view.seen). */
struct report_seen;
struct report_seen *report_seen_new(void);
void report_seen_free(struct report_seen *s);

/* Visibility rules, for the tests. */
bool report_cg_visible(const struct cg_rec *c, uid_t uid);
bool report_proc_visible(const struct manager_view *v, const struct proc_rec *p, uid_t uid);
