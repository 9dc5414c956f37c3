/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The daemon's life as systemd sees it (daemon/lifecycle.h), on the module itself: the
 * test binds the NOTIFY_SOCKET and reads the datagrams lifecycle.c sends. The signals
 * are blocked and seen through the loop (SIGHUP: RELOADING=1 with MONOTONIC_USEC, the
 * reload, READY=1; a refused reload says so in STATUS=; SIGTERM and SIGINT: STOPPING=1
 * and the loop ends), WATCHDOG=1 from lifecycle_keepalive() only with a watchdog and
 * at most once a second, and ERRNO= on a failure. lifecycle_ready() and an accepted
 * reload need a running manager (their STATUS= is manager_status()): test-lifecycle.py
 * covers them through the daemon. */
#include <signal.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>
#include "clock.h"
#include "lifecycle.h"
#include "log.h"
#include "test.h"

static char tmpdir[] = "/tmp/test-lifecycle-XXXXXX";
static char sock_path[sizeof(tmpdir) + 16];
static int sock = -1;

/* The next datagram, waiting up to 5 s (wait) or not at all: its text, or "" when none. */
static const char *next_message(bool wait) {
        static char buf[4096];
        ssize_t n = recv(sock, buf, sizeof(buf) - 1, wait ? 0 : MSG_DONTWAIT);

        buf[n > 0 ? n : 0] = 0;
        return buf;
}

/* The log lines at warning level or above, for the checks (and not on the test's stderr). */
static char logged[2048];

static void capture(int level, int error, const struct log_fields *fields, const char *msg) {
        size_t n = strlen(logged);

        snprintf(logged + n, sizeof(logged) - n, "<%d>%s\n", level, msg);
}

static void drain(void) {
        while (*next_message(false))
                ;
}

struct reload_seen {
        unsigned calls;
        int answer;
};

static int reload(void *userdata) {
        struct reload_seen *r = userdata;

        r->calls++;
        return r->answer;
}

/* Runs the loop until it has handled what is pending (at most 5 s). */
static int run_once(sd_event *e) {
        return sd_event_run(e, 5 * UINT64_C(1000000));
}

TEST(init_blocks_the_signals) {
        struct lifecycle l = { .config = "/etc/numabalanced/numabalanced.conf" };
        sigset_t now;

        CHECK_INT(sd_event_new(&l.event), 0);
        CHECK_INT(lifecycle_init(&l), 0);
        CHECK_INT(sigprocmask(SIG_BLOCK, NULL, &now), 0);
        CHECK(sigismember(&now, SIGTERM) == 1);
        CHECK(sigismember(&now, SIGINT) == 1);
        CHECK(sigismember(&now, SIGHUP) == 1);
        /* Nothing said yet: READY=1 is lifecycle_ready()'s. */
        CHECK_STR(next_message(false), "");
        sd_event_unref(l.event);
}

/* SIGHUP with a configuration the reload refuses: RELOADING=1 stamped with the time
 * of the reload, then READY=1 all the same (systemd waits for it to end the reload)
 * with the refusal and the file in STATUS=; the loop goes on. */
TEST(sighup_refused_reload) {
        struct reload_seen seen = { .answer = -EINVAL };
        struct lifecycle l = { .config = "/etc/numabalanced/numabalanced.conf", .reload = reload, .userdata = &seen };
        uint64_t before, stamp = 0;
        const char *m;

        drain();
        logged[0] = 0;
        CHECK_INT(sd_event_new(&l.event), 0);
        CHECK_INT(lifecycle_init(&l), 0);
        before = clock_now_usec();
        CHECK_INT(raise(SIGHUP), 0);
        CHECK(run_once(l.event) > 0);
        CHECK_INT(seen.calls, 1);
        m = next_message(true);
        CHECK_MSG(sscanf(m, "RELOADING=1\nMONOTONIC_USEC=%" SCNu64, &stamp) == 1, "first message: \"%s\"", m);
        CHECK_MSG(stamp >= before && stamp <= clock_now_usec(), "MONOTONIC_USEC=%" PRIu64 ", signal raised at %" PRIu64,
                  stamp, before);
        CHECK_STR(next_message(true), "READY=1\nSTATUS=Reload refused: /etc/numabalanced/numabalanced.conf has errors, "
                                      "running on the previous configuration");
        CHECK_STR(next_message(false), "");
        CHECK_MSG(strstr(logged, "<3>Reload refused, keeping the running configuration\n"), "logged: %s", logged);
        /* Still running: the loop has not been asked to exit. */
        CHECK_INT(sd_event_get_state(l.event), SD_EVENT_INITIAL);
        /* A second SIGHUP: a second reload, the same pair. */
        CHECK_INT(raise(SIGHUP), 0);
        CHECK(run_once(l.event) > 0);
        CHECK_INT(seen.calls, 2);
        CHECK(strncmp(next_message(true), "RELOADING=1\nMONOTONIC_USEC=", 27) == 0);
        CHECK(strncmp(next_message(true), "READY=1\nSTATUS=Reload refused", 29) == 0);
        sd_event_unref(l.event);
}

/* SIGTERM and SIGINT: STOPPING=1, and the loop ends with 0 (a clean stop). Without a
 * manager yet (a signal during the start): nothing to stop, no crash. */
static void stops_on(int sig) {
        struct reload_seen seen = { .answer = 0 };
        struct lifecycle l = { .config = "x.conf", .reload = reload, .userdata = &seen };

        drain();
        CHECK_INT(sd_event_new(&l.event), 0);
        CHECK_INT(lifecycle_init(&l), 0);
        CHECK_INT(raise(sig), 0);
        CHECK_INT(sd_event_loop(l.event), 0);
        CHECK_STR(next_message(true), "STOPPING=1");
        CHECK_STR(next_message(false), "");
        CHECK_INT(seen.calls, 0);
        sd_event_unref(l.event);
}

TEST(sigterm_stops) {
        stops_on(SIGTERM);
}

TEST(sigint_stops) {
        stops_on(SIGINT);
}

/* WATCHDOG=1 from outside the loop: nothing without WatchdogSec= (nor before
 * lifecycle_ready(), which sets it), at most one a second otherwise. */
TEST(keepalive_only_with_a_watchdog_and_once_a_second) {
        struct lifecycle l = {};
        uint64_t first;

        drain();
        lifecycle_keepalive(&l);
        CHECK_STR(next_message(false), "");
        CHECK_INT(l.keepalive_usec, 0);

        l.watchdog_usec = 20 * UINT64_C(1000000);
        lifecycle_keepalive(&l);
        CHECK_STR(next_message(true), "WATCHDOG=1");
        first = l.keepalive_usec;
        CHECK(first > 0);
        lifecycle_keepalive(&l);           /* at once: not again */
        CHECK_STR(next_message(false), "");
        CHECK_INT(l.keepalive_usec, first);
        /* A second later (the last one moved back rather than waiting). */
        l.keepalive_usec -= UINT64_C(1000000);
        lifecycle_keepalive(&l);
        CHECK_STR(next_message(true), "WATCHDOG=1");
        CHECK(l.keepalive_usec >= first);
        /* 0.9 s after: not yet. */
        l.keepalive_usec = clock_now_usec() - UINT64_C(900000);
        lifecycle_keepalive(&l);
        CHECK_STR(next_message(false), "");
}

/* Why the daemon exits with a failure: ERRNO= as a positive number, whichever sign. */
TEST(failed_says_errno) {
        drain();
        lifecycle_failed(-ENOENT);
        CHECK_STR(next_message(true), "ERRNO=2");
        lifecycle_failed(EINVAL);
        CHECK_STR(next_message(true), "ERRNO=22");
}

/* Outside systemd (no NOTIFY_SOCKET): nothing is sent, nothing fails. */
TEST(without_systemd_nothing_sent) {
        struct lifecycle l = { .watchdog_usec = 20 * UINT64_C(1000000) };

        drain();
        unsetenv("NOTIFY_SOCKET");
        lifecycle_failed(-EIO);
        lifecycle_keepalive(&l);
        CHECK_STR(next_message(false), "");
        setenv("NOTIFY_SOCKET", sock_path, 1);
}

static int intro(void) {
        struct sockaddr_un sa = { .sun_family = AF_UNIX };
        struct timeval tv = { .tv_sec = 5 };

        if (!mkdtemp(tmpdir)) {
                perror("mkdtemp");
                return 1;
        }
        snprintf(sock_path, sizeof(sock_path), "%s/notify", tmpdir);
        snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", sock_path);
        sock = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
        if (sock < 0 || bind(sock, (struct sockaddr *) &sa, sizeof(sa)) < 0 ||
            setsockopt(sock, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv)) < 0) {
                perror("the notify socket");
                return 1;
        }
        setenv("NOTIFY_SOCKET", sock_path, 1);
        unsetenv("WATCHDOG_USEC");
        unsetenv("WATCHDOG_PID");
        log_set_max_level(LOG_LVL_WARNING);
        log_set_sink(capture);
        return 0;
}

static void outro(void) {
        close(sock);
        unlink(sock_path);
        rmdir(tmpdir);
}

DEFINE_TEST_MAIN_FULL(intro, outro)
