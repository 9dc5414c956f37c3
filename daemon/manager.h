/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The manager owns all of the daemon's state and runs the tick:
 *   topology -> select -> sample -> decide -> migrate -> report
 * main.c owns the process (arguments, signals, sd_notify); the manager owns the
 * processes being watched, their history, the migrator and the counters. */
#pragma once
#include <stdbool.h>
#include <stddef.h>
#include <systemd/sd-event.h>
#include "config.h"

struct manager_opts {
        bool dry_run;              /* plan and log, move nothing (like advise everywhere) */
        const char *proc_root;     /* "/proc" */
        const char *sys_root;      /* "/sys" */
};

struct manager;

/* Copies what it needs of cfg. Starts the migration workers on the service CPUs. */
int manager_new(sd_event *e, const struct nb_config *cfg, const struct manager_opts *o, struct manager **ret);
/* Adds its tick timer to the event loop. */
int manager_start(struct manager *m);
/* One tick now (for --once). */
int manager_tick(struct manager *m);
/* Applies a new, already validated config. */
int manager_reload(struct manager *m, const struct nb_config *cfg);
/* Cancels migrations in flight at a batch boundary. */
void manager_stop(struct manager *m);
/* fn(userdata) is called every 100 ms while a tick waits for its migration jobs, and
 * while it reads thousands of processes, when the event loop cannot dispatch anything
 * (see control_pump). */
void manager_set_while_moving(struct manager *m, void (*fn)(void *userdata), void *userdata);
/* fn(userdata) is called every 100 ms while a tick waits for its migration jobs, as
 * long as the run may legitimately last (MIGRATE_RUN_KEEPALIVE_MS: its time budget,
 * then as long again for the batches in flight): lifecycle sends WATCHDOG=1 there. A
 * run stuck past it stops the calls, so that the watchdog still sees a stuck daemon. */
void manager_set_keepalive(struct manager *m, void (*fn)(void *userdata), void *userdata);
/* Called after every tick of the timer (not for manager_tick() called directly). */
void manager_set_after_tick(struct manager *m, void (*fn)(struct manager *m, void *userdata), void *userdata);
/* One-line STATUS= summary. */
void manager_status(struct manager *m, char *buf, size_t size);
void manager_free(struct manager *m);
