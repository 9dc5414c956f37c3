/* SPDX-License-Identifier: GPL-2.0-or-later */
/* numabalancectl status, list, explain: ask the running daemon over its control
 * socket (lib/control-protocol.h) and print its JSON reply as is (--json) or as
 * tables. */
#pragma once
#include <errno.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include "control-protocol.h"

struct daemon_args {
        const char *socket;        /* CONTROL_SOCKET_DEFAULT */
        bool json;
        enum control_cmd cmd;
        pid_t pid;                 /* explain PID */
        const char *cgroup;        /* explain CGROUP */
        char *const *filters;      /* list: cgroup paths ("/...") and pids, as given */
        size_t n_filters;
};

struct jv;

/* The exit statuses (numabalancectl(1)), so that a script can tell a daemon that does
 * not run from a process that does not exist. 2 is the command line's. */
#define CTL_EXIT_FAILURE 1          /* anything else: the reply unreadable, stdout failed */
#define CTL_EXIT_UNREACHABLE 3      /* the daemon does not answer on its socket */
#define CTL_EXIT_NOT_FOUND 4        /* explain: no such process or cgroup, or not yours to see */
#define CTL_EXIT_REFUSED 5          /* the daemon refused the request (busy, a bad request) */
/* The error ctl_daemon_list_all() returns for a daemon that could not be reached,
 * and for a request it refused. */
#define CTL_ERR_UNREACHABLE (-ENOTCONN)
#define CTL_ERR_REFUSED (-EPROTO)

/* Returns the exit status: 0, or a CTL_EXIT_ (one line on stderr says why). */
int ctl_daemon(const struct daemon_args *a);

/* Sends one request line to the daemon and reads its whole reply (NUL-terminated).
 * Returns 0 or -errno; *ret_connected says whether the socket was reached. */
int ctl_daemon_ask(const struct daemon_args *a, const char *request, char **ret, size_t *ret_len, bool *ret_connected);
/* list, every page of it (the daemon pages its replies, CONTROL_REPLY_MAX) merged into
 * one document, without truncated and next. Returns 0, or -errno after one line on
 * stderr (CTL_ERR_UNREACHABLE, CTL_ERR_REFUSED, or another). */
int ctl_daemon_list_all(const struct daemon_args *a, struct jv **ret);
/* Untrusted text (comm, cgroup paths) for a terminal: control bytes become '?'. */
const char *ctl_daemon_safe(const char *s, char *buf, size_t size);
/* "1.5Gi" and the like. */
const char *ctl_daemon_bytes(uint64_t b, char *buf, size_t size);
