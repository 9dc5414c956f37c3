/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The daemon's life as systemd sees it (Type=notify-reload): SIGTERM and SIGINT stop
 * it, SIGHUP reloads it, and the sd_notify messages that go with them: READY=1,
 * RELOADING=1 ... READY=1, STOPPING=1, STATUS= (refreshed every 5 s from
 * manager_status()) and WATCHDOG=1 when the unit sets WatchdogSec=: from the event
 * loop, and from lifecycle_keepalive() while a tick's migration run holds the loop.
 *
 * The signals are blocked before any thread exists and seen only through the loop's
 * signalfd; the timer and signal sources are floating (owned by the loop, freed with
 * it). Everything runs on the event-loop thread. */
#pragma once
#include <systemd/sd-event.h>
#include "manager.h"

/* Loads and applies a new configuration; returns 0, or -errno with the refusal
 * already logged (the running configuration is then kept). */
typedef int (*lifecycle_reload_fn)(void *userdata);

struct lifecycle {
        sd_event *event;
        struct manager *manager;     /* set by lifecycle_ready() */
        const char *config;          /* the file reloaded, named in a refusal's STATUS= */
        lifecycle_reload_fn reload;
        void *userdata;              /* passed to reload */
        uint64_t watchdog_usec;      /* WatchdogSec= as systemd passed it, 0: none (set by lifecycle_ready()) */
        uint64_t keepalive_usec;     /* CLOCK_MONOTONIC of the last WATCHDOG=1 from lifecycle_keepalive() */
};

/* Blocks SIGTERM, SIGINT and SIGHUP and handles them on l->event (filled in by the
 * caller, l->manager excepted). Called before any thread exists, so that every thread
 * inherits the mask. Returns 0 or -errno (logged). */
int lifecycle_init(struct lifecycle *l);

/* The manager has started: READY=1 with its STATUS=, the status timer, and the
 * watchdog (enabled after READY=1, because enabling sends the first ping at once).
 * Returns 0 or -errno (logged). */
int lifecycle_ready(struct lifecycle *l, struct manager *m);

/* WATCHDOG=1 from outside the event loop: the manager calls it (manager_set_keepalive)
 * while a tick waits for its migration run, during which the loop cannot send its
 * own. At most once a second; nothing before lifecycle_ready() or without WatchdogSec=. */
void lifecycle_keepalive(void *userdata);

/* Tells systemd why the daemon is exiting with a failure (ERRNO=). */
void lifecycle_failed(int error);
