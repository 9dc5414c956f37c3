/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <errno.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <systemd/sd-daemon.h>
#include "clock.h"
#include "lifecycle.h"
#include "log.h"

/* How often STATUS= is refreshed from manager_status(). */
#define STATUS_INTERVAL_USEC (5 * UINT64_C(1000000))
/* The least time between two WATCHDOG=1 from lifecycle_keepalive(): far below any
 * useful WatchdogSec=, and a datagram to PID 1 per second at most. */
#define KEEPALIVE_INTERVAL_USEC UINT64_C(1000000)


static void notify_status(struct lifecycle *l, bool ready) {
        char status[512];

        manager_status(l->manager, status, sizeof(status));
        sd_notifyf(false, "%sSTATUS=%s", ready ? "READY=1\n" : "", status);
}

static int on_status_timer(sd_event_source *s, uint64_t usec, void *userdata) {
        notify_status(userdata, false);
        /* A time source fires once; re-arm it. */
        (void) sd_event_source_set_time(s, usec + STATUS_INTERVAL_USEC);
        return sd_event_source_set_enabled(s, SD_EVENT_ONESHOT);
}

static int on_terminate(sd_event_source *s, const struct signalfd_siginfo *si, void *userdata) {
        struct lifecycle *l = userdata;

        log_info("Received SIG%s, stopping", sigabbrev_np((int) si->ssi_signo));
        manager_stop(l->manager);
        sd_notify(false, "STOPPING=1");
        return sd_event_exit(l->event, 0);
}

/* The RELOADING=1 ... READY=1 pair is sent whether or not the new file is accepted:
 * systemd waits for READY=1 to end the reload, and a refused reload leaves a daemon
 * that runs fine on its previous configuration; the refusal is in the journal and in
 * STATUS=. */
static int on_reload(sd_event_source *s, const struct signalfd_siginfo *si, void *userdata) {
        struct lifecycle *l = userdata;
        char status[512];
        int r;

        sd_notifyf(false, "RELOADING=1\nMONOTONIC_USEC=%" PRIu64, clock_now_usec());
        log_info("Received SIGHUP, reloading %s", l->config);
        r = l->reload(l->userdata);
        if (r < 0) {
                log_error("Reload refused, keeping the running configuration");
                snprintf(status, sizeof(status), "Reload refused: %s has errors, running on the previous configuration",
                         l->config);
                sd_notifyf(false, "READY=1\nSTATUS=%s", status);
                return 0;
        }
        notify_status(l, true);
        return 0;
}

int lifecycle_init(struct lifecycle *l) {
        sigset_t ss;
        int r;

        sigemptyset(&ss);
        sigaddset(&ss, SIGTERM);
        sigaddset(&ss, SIGINT);
        sigaddset(&ss, SIGHUP);
        if (sigprocmask(SIG_BLOCK, &ss, NULL) < 0)
                return log_error_errno(-errno, "Failed to block signals: %m");
        r = sd_event_add_signal(l->event, NULL, SIGTERM, on_terminate, l);
        if (r >= 0)
                r = sd_event_add_signal(l->event, NULL, SIGINT, on_terminate, l);
        if (r >= 0)
                r = sd_event_add_signal(l->event, NULL, SIGHUP, on_reload, l);
        if (r < 0)
                return log_error_errno(r, "Failed to add the signal handlers: %m");
        return 0;
}

int lifecycle_ready(struct lifecycle *l, struct manager *m) {
        int r;

        l->manager = m;
        r = sd_event_add_time_relative(l->event, NULL, CLOCK_MONOTONIC, STATUS_INTERVAL_USEC, 0,
                                       on_status_timer, l);
        if (r < 0)
                return log_error_errno(r, "Failed to add the status timer: %m");

        notify_status(l, true);

        /* WATCHDOG=1 at half of WATCHDOG_USEC, when the unit sets WatchdogSec=; it is
         * sent from the loop, so a stuck tick stops it. */
        r = sd_event_set_watchdog(l->event, true);
        if (r < 0)
                log_warning_errno(r, "Failed to enable the watchdog, ignoring: %m");
        else if (r > 0) {
                if (sd_watchdog_enabled(false, &l->watchdog_usec) <= 0)
                        l->watchdog_usec = 0;
                log_debug("Watchdog enabled: WATCHDOG=1 every %" PRIu64 " ms", l->watchdog_usec / 2000);
        }
        return 0;
}

void lifecycle_keepalive(void *userdata) {
        struct lifecycle *l = userdata;
        uint64_t now;

        if (!l->watchdog_usec)
                return;
        now = clock_now_usec();
        if (l->keepalive_usec && now - l->keepalive_usec < KEEPALIVE_INTERVAL_USEC)
                return;
        l->keepalive_usec = now;
        sd_notify(false, "WATCHDOG=1");
}

void lifecycle_failed(int error) {
        sd_notifyf(false, "ERRNO=%i", error < 0 ? -error : error);
}
