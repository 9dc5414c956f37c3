/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The daemon's parser of the control protocol's request line (control-protocol.h):
 *     status | list [after=CURSOR] [CGROUP|PID]... | explain PID | explain CGROUP
 * Pure (no socket, no manager): fuzzed on its own (tests/fuzz/fuzz-control.c). */
#pragma once
#include <stddef.h>
#include <sys/types.h>

#include "control-protocol.h"

/* One filter of list: a pid, or a cgroup path (an offset into text). */
struct control_filter {
        pid_t pid;                 /* 0: a path */
        int path;                  /* offset into control_request.text, or -1 */
};

/* Paths are kept as offsets into text, so that the request can be copied. */
struct control_request {
        enum control_cmd cmd;
        pid_t pid;                 /* explain PID */
        int path;                  /* explain CGROUP: offset into text, or -1 */
        size_t n_filters;          /* list */
        struct control_filter filters[CONTROL_FILTERS_MAX];
        char after;                /* list: 0 from the start, else the section of the cursor:
                                    * 'c' cgroups, 'p' processes, 's' subtrees walked */
        pid_t after_pid;           /* 'p' */
        int after_path;            /* 'c', 's': offset into text, or -1 */
        char text[CONTROL_REQUEST_MAX];  /* the decoded paths, each NUL-terminated */
};

/* The string at offset off of r's text, or NULL for -1. */
static inline const char *control_request_str(const struct control_request *r, int off) {
        return off >= 0 ? r->text + off : NULL;
}

/* The replies to a request that is not one: also sent by control.c, which sees an
 * empty or overlong line before any parsing. */
#define CONTROL_ERROR_EMPTY "empty request (accepted: status, list, explain PID|CGROUP)"
#define CONTROL_ERROR_TOO_LONG \
        "request too long (at most " CONTROL_STRINGIFY(CONTROL_REQUEST_MAX) " bytes with its newline)"

/* Parses one request line (buf[0..len), the newline excluded; a trailing '\r' is
 * accepted). Returns 0, or -EINVAL with *ret_error set to a static message; *ret is
 * written only on success. */
int control_request_parse(const char *buf, size_t len, struct control_request *ret, const char **ret_error);

/* For the cursor of a list page: "c" or "s" and the encoded path, or "p" and the pid,
 * into buf. Returns its length, or -1 when it does not fit. */
int control_request_cursor_format(char section, const char *path, pid_t pid, char *buf, size_t size);
