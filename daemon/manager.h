/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The manager runs the tick:
 *   topology -> select -> sample -> decide -> migrate -> report
 * main.c owns the process (arguments, signals, sd_notify); the manager holds the
 * pieces of the daemon's state, each written by its owner module (manager-internal.h),
 * and starts and stops the threads. */
#pragma once
#include <stdbool.h>
#include <stddef.h>
#include <systemd/sd-event.h>
#include "config.h"
#include "config-report.h"

struct topology;
struct node_time_source;
struct page_sampler;
struct migrator;
struct service_pins;
struct proc_records;
struct cg_records;
struct cost_ledger;
struct counters;
struct report_seen;
struct share_groups;

struct manager_opts {
        bool dry_run;              /* plan and log, move nothing (like advise everywhere) */
        const char *proc_root;     /* "/proc" */
        const char *sys_root;      /* "/sys" */
        const char *state_dir;     /* where the placer keeps the threads' original affinity
                                    * (placer.h); NULL: no thread is placed (mode place
                                    * then moves memory only: --once, most tests) */
};

struct manager;

/* What the reports (report.c, metrics.c) read of the manager, between ticks or while
 * a long tick serves the control socket: each piece as its owner module keeps it. */
struct manager_view {
        const struct nb_config *cfg;
        const struct manager_opts *opts;
        const char *proc_root;
        const struct topology *topo;
        const struct node_time_source *source;
        const struct page_sampler *pages;        /* NULL: no page-level sampling */
        const struct damon *damon;               /* damon_in_use() says whether it is used */
        const struct migrator *migrator;
        const struct service_pins *service;
        const struct proc_records *procs;
        const struct cg_records *cgs;
        const struct cost_ledger *cost;
        const struct counters *counters;
        const struct placer *placer;             /* NULL: no thread placement */
        const struct share_groups *shares;       /* processes that share memory (share-groups.h) */
        const struct config_report *config_report;  /* rules matching nothing, keys not reloaded */
        struct report_seen *seen;                /* who may see which process, this tick
                                                  * (report.h; the control socket's): NULL,
                                                  * read at each question */
};

/* Copies what it needs of cfg. Starts the migration workers on the service CPUs. */
int manager_new(sd_event *e, const struct nb_config *cfg, const struct manager_opts *o, struct manager **ret);
/* Adds its tick timer to the event loop. */
int manager_start(struct manager *m);
/* One tick now (for --once). */
int manager_tick(struct manager *m);
/* Applies a new, already validated config. */
int manager_reload(struct manager *m, const struct nb_config *cfg);
/* A reload was asked for and worked (ok) or was refused: for the metrics; and the
 * keys a reload that worked did not apply (status, config-report.h). */
void manager_note_reload(struct manager *m, bool ok, const struct config_not_applied *v, size_t n);
/* SIGTERM: first gives every thread the placer narrowed its affinity back (placer_stop()),
 * then cancels migrations in flight at a batch boundary. */
void manager_stop(struct manager *m);
/* fn(userdata) is called every 100 ms while a tick waits for its migration jobs, and
 * while it reads thousands of processes, when the event loop cannot dispatch anything
 * (see control_pump). */
void manager_set_while_moving(struct manager *m, void (*fn)(void *userdata), void *userdata);
/* fn(userdata) is called every 100 ms while a tick waits for its migration jobs, as
 * long as the run may legitimately last (MANAGER_RUN_KEEPALIVE_MS: its time budget,
 * then as long again for the batches in flight): lifecycle sends WATCHDOG=1 there. A
 * run stuck past it stops the calls, so that the watchdog still sees a stuck daemon. */
void manager_set_keepalive(struct manager *m, void (*fn)(void *userdata), void *userdata);
/* Called after every tick of the timer (not for manager_tick() called directly). */
void manager_set_after_tick(struct manager *m, void (*fn)(const struct manager_view *v, void *userdata),
                            void *userdata);
/* The reports' view of m. */
const struct manager_view *manager_view(const struct manager *m);
/* One-line STATUS= summary. */
void manager_status(struct manager *m, char *buf, size_t size);
void manager_free(struct manager *m);
