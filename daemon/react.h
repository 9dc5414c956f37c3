/* SPDX-License-Identifier: GPL-2.0-or-later */
/* React scans: a thread of a watched process starts running on another node (the BPF
 * source's ring-buffer event) and that process alone is scanned react_ms later, no
 * sooner than scan_min_ms after its last scan, charged to it: not a whole tick, which
 * a tenant whose threads keep hopping could otherwise bring every react_ms. A node
 * change does not bring the tick forward.
 *
 * This module keeps the event source and the react timer, decides which processes
 * are due (their record's react time, written through scan.h: the schedule is the
 * scan's) and whether they are still watched; the scans and their jobs are the tick's
 * machinery, reached through struct react_hooks (the manager's), so that nothing here
 * sees struct manager. On the event-loop thread. */
#pragma once
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>
#include <systemd/sd-event.h>
#include "config.h"
#include "cost.h"
#include "counters.h"
#include "proc-records.h"
#include "source.h"
#include "topology.h"

/* What the react pass reads and writes besides the hooks; pointers into the manager,
 * set again whenever the topology or the source change (react_set_env). */
struct react_env {
        const struct nb_config *cfg;     /* react_ms, scan_min_ms */
        const char *proc_root;
        const struct topology *topo;
        const struct node_time_source *source;
        struct proc_records *procs;
        struct cost_ledger *cost;        /* a restarted window's read, charged to its process */
        struct counters *counters;       /* node_events, react_scans; tick: the last tick's */
};

/* The tick's machinery, for one pass. */
struct react_hooks {
        /* Before a pass: its state (a scan list, the free-memory floor's reservations),
         * or NULL when no scan may run now (the service CPUs): then nothing is touched
         * and the processes stay due. */
        void *(*begin)(void *userdata);
        /* p is due and still watched: scanned now, into the pass, as a tick scans. */
        void (*scan)(void *userdata, void *pass, struct proc_rec *p, uint64_t now);
        /* After the pass: its scans' jobs run, its state freed. */
        void (*end)(void *userdata, void *pass, uint64_t now);
        void *userdata;
};

struct react {
        struct react_env env;
        struct react_hooks hooks;
        sd_event_source *timer;    /* the next react scan, or off; NULL: none (--once, tests) */
        sd_event_source *events;   /* the source's node-change events, if it has them */
};

void react_init(struct react *r, const struct react_hooks *hooks);
void react_set_env(struct react *r, const struct react_env *env);
/* The timer (off until a process is due) and the source's events, in e's loop. A
 * failure is logged: node changes are then seen at the next scan only. */
void react_start(struct react *r, sd_event *e);
/* The source's node-change events into e's loop, if it has them (react_start(), and
 * again for a new source); react_unwatch_events() before its source goes. */
void react_watch_events(struct react *r, sd_event *e);
void react_unwatch_events(struct react *r);

/* A thread of pid now runs on node (userdata: the struct react): pid's process, if
 * watched, is scanned on its own react_ms later, no sooner than scan_min_ms after its
 * last scan, its CPU-time window restarted now. The source's event callback; the tests
 * call it directly. */
void react_node_changed(void *userdata, pid_t pid, int node);
/* Scans the processes whose react scan is due, and runs their jobs: no walk, no
 * cgroup read, no report. A process no longer seen in an opted-in cgroup by the last
 * tick, or gone, is dropped. */
void react_pass(struct react *r);

/* No more react scans (SIGTERM). */
void react_stop(struct react *r);
void react_done(struct react *r);
