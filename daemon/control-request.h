/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The daemon's parser of the control protocol's request line (control-protocol.h):
 *     status | list | explain <pid>
 * Pure (no socket, no manager): fuzzed on its own (tests/fuzz/fuzz-control.c). */
#pragma once
#include <stddef.h>
#include <sys/types.h>

#include "control-protocol.h"

struct control_request {
        enum control_cmd cmd;
        pid_t pid;                 /* explain */
};

/* The replies to a request that is not one: also sent by control.c, which sees an
 * empty or overlong line before any parsing. */
#define CONTROL_ERROR_EMPTY "empty request (accepted: status, list, explain PID)"
#define CONTROL_ERROR_TOO_LONG \
        "request too long (at most " CONTROL_STRINGIFY(CONTROL_REQUEST_MAX) " bytes with its newline)"

/* Parses one request line (buf[0..len), the newline excluded; a trailing '\r' is
 * accepted). Returns 0, or -EINVAL with *ret_error set to a static message; *ret is
 * written only on success. */
int control_parse_request(const char *buf, size_t len, struct control_request *ret, const char **ret_error);
