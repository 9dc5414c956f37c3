/* SPDX-License-Identifier: GPL-2.0-or-later */
/* numabalancectl status, list, explain: ask the running daemon over its control
 * socket (lib/control-protocol.h) and print its JSON reply as is (--json) or as
 * tables. */
#pragma once
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

/* Returns the exit status: 0, or 1 (one line on stderr says why). */
int ctl_daemon(const struct daemon_args *a);

/* Sends one request line to the daemon and reads its whole reply (NUL-terminated).
 * Returns 0 or -errno; *ret_connected says whether the socket was reached. */
int ctl_daemon_ask(const struct daemon_args *a, const char *request, char **ret, size_t *ret_len, bool *ret_connected);
/* list, every page of it (the daemon pages its replies, CONTROL_REPLY_MAX) merged into
 * one document, without truncated and next. Returns 0, or -errno after one line on
 * stderr. */
int ctl_daemon_list_all(const struct daemon_args *a, struct jv **ret);
/* Untrusted text (comm, cgroup paths) for a terminal: control bytes become '?'. */
const char *ctl_daemon_safe(const char *s, char *buf, size_t size);
/* "1.5Gi" and the like. */
const char *ctl_daemon_bytes(uint64_t b, char *buf, size_t size);
