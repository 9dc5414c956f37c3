/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The control protocol's request line: one of
 *     status | list | explain <pid>
 * at most CONTROL_REQUEST_MAX bytes with its newline. Pure (no socket, no manager):
 * fuzzed on its own (tests/fuzz/fuzz-control.c). */
#pragma once
#include <stddef.h>
#include <sys/types.h>

#define CONTROL_REQUEST_MAX 256

enum control_cmd { CONTROL_STATUS, CONTROL_LIST, CONTROL_EXPLAIN };

struct control_request {
        enum control_cmd cmd;
        pid_t pid;                 /* explain */
};

/* Parses one request line (buf[0..len), the newline excluded; a trailing '\r' is
 * accepted). Returns 0, or -EINVAL with *ret_error set to a static message; *ret is
 * written only on success. */
int control_parse_request(const char *buf, size_t len, struct control_request *ret, const char **ret_error);
