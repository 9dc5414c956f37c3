/* SPDX-License-Identifier: GPL-2.0-or-later */
/* numabalancectl status, list, explain: ask the running daemon over its control
 * socket (lib/control-protocol.h) and print its JSON reply as is (--json) or as
 * tables. */
#pragma once
#include <stdbool.h>
#include <sys/types.h>
#include "control-protocol.h"

struct daemon_args {
        const char *socket;        /* CONTROL_SOCKET_DEFAULT */
        bool json;
        enum control_cmd cmd;
        pid_t pid;                 /* explain */
};

/* Returns the exit status: 0, or 1 (one line on stderr says why). */
int ctl_daemon(const struct daemon_args *a);
