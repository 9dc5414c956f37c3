/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The control protocol: what numabalanced (daemon/control.c) and numabalancectl (ctl/)
 * must agree on, and nothing else. No library and no event loop, so that the client
 * includes it without the daemon (chrony's candm.h plays this part there).
 *
 * Transport: a Unix stream socket, CONTROL_SOCKET_DEFAULT unless given
 * (numabalanced --control-socket, numabalancectl --socket). Mode 0666: anyone may
 * connect; the daemon filters each answer by the peer's uid (SO_PEERCRED).
 *
 * Request: one per connection, a single line of printable ASCII of at most
 * CONTROL_REQUEST_MAX bytes including its newline (a '\r' before it is accepted),
 * complete within CONTROL_REQUEST_TIMEOUT_USEC of connecting, words separated by one
 * space:
 *     status
 *     list [after=<cursor>] [<cgroup>|<pid>]...
 *     explain <pid> | explain <cgroup>
 * where <pid> is a decimal number from 1 to INT32_MAX and <cgroup> a cgroup path as
 * /proc/PID/cgroup names it ("/" first), percent-encoded (control_path_encode()) so
 * that a path with spaces, control or non-ASCII bytes is still one printable word.
 * list takes at most CONTROL_FILTERS_MAX filters: a cgroup selects it and the cgroups
 * below it, with their processes; a pid, that process and its cgroup.
 *
 * Reply: one JSON object (docs/ctl-json.md) of at most CONTROL_REPLY_MAX bytes, then
 * the daemon ends its side of the connection; the client must have read it all within
 * CONTROL_REPLY_READ_TIMEOUT_USEC of sending the request's end, or the daemon drops the
 * connection. A list that does not fit is a page: it says "truncated": true and
 * "next": a cursor, and the client asks again with after=<cursor> (the same filters)
 * for the rest; a page holds whole items, in the order of the whole (cgroups by path,
 * processes by pid). A
 * request the daemon refuses (unknown command, bad pid, a line too long, nothing in
 * time, too many connections) gets {CONTROL_KEY_ERROR: "why"} instead, which the
 * client can still read. An explain of a process the requester may not see, or that
 * does not exist, is a reply (not an error) whose CONTROL_KEY_WHY says which. */
#pragma once
#include <stddef.h>
#include <stdint.h>

#define CONTROL_SOCKET_DEFAULT "/run/numabalanced/control"

enum control_cmd { CONTROL_STATUS, CONTROL_LIST, CONTROL_EXPLAIN };

/* The request line's first word for each command. */
static inline const char *control_cmd_name(enum control_cmd c) {
        switch (c) {
        case CONTROL_STATUS:
                return "status";
        case CONTROL_LIST:
                return "list";
        case CONTROL_EXPLAIN:
                return "explain";
        }
        return "?";
}

/* Two steps, so that the limits can be spelled inside messages. */
#define CONTROL_STRINGIFY_(x) #x
#define CONTROL_STRINGIFY(x) CONTROL_STRINGIFY_(x)

/* The request line's limit, its newline included: a literal, for CONTROL_STRINGIFY. */
#define CONTROL_REQUEST_MAX 4096
#define CONTROL_REQUEST_TIMEOUT_SEC 2
#define CONTROL_REQUEST_TIMEOUT_USEC (CONTROL_REQUEST_TIMEOUT_SEC * UINT64_C(1000000))
/* A reply the peer does not read within this is dropped: each waiting reply holds
 * memory and one of the connections its user may have. */
#define CONTROL_REPLY_READ_TIMEOUT_SEC 3
#define CONTROL_REPLY_READ_TIMEOUT_USEC (CONTROL_REPLY_READ_TIMEOUT_SEC * UINT64_C(1000000))
/* The largest reply, in bytes; list pages to stay within it. */
#define CONTROL_REPLY_MAX (256 * 1024)
/* Filters one list request takes. */
#define CONTROL_FILTERS_MAX 16

/* Keys of the reply the client acts on. */
#define CONTROL_KEY_ERROR "error"
#define CONTROL_KEY_WHY "why"
/* list: a page that is not the last says so, and where the next one starts. */
#define CONTROL_KEY_TRUNCATED "truncated"
#define CONTROL_KEY_NEXT "next"
/* explain: values of CONTROL_KEY_WHY that make the request fail for the client. */
#define CONTROL_WHY_NOT_VISIBLE "not-visible"
#define CONTROL_WHY_NO_SUCH_PROCESS "no-such-process"
#define CONTROL_WHY_NO_SUCH_CGROUP "no-such-cgroup"

/* Whether byte b stands for itself in an encoded path: printable ASCII but for the
 * space, '%' (the escape), '"' and '\\' (so that a cursor needs no JSON escaping). */
static inline int control_path_byte_plain(unsigned char b) {
        return b > 0x20 && b < 0x7f && b != '%' && b != '"' && b != '\\';
}

/* path percent-encoded into buf (size bytes, NUL-terminated): every byte that is not
 * plain becomes %XX. Returns the length, or -1 when it does not fit. */
static inline int control_path_encode(const char *path, char *buf, size_t size) {
        static const char hex[] = "0123456789ABCDEF";
        size_t o = 0;

        for (const unsigned char *p = (const unsigned char *) path; *p; p++) {
                if (control_path_byte_plain(*p)) {
                        if (o + 1 >= size)
                                return -1;
                        buf[o++] = (char) *p;
                        continue;
                }
                if (o + 3 >= size)
                        return -1;
                buf[o++] = '%';
                buf[o++] = hex[*p >> 4];
                buf[o++] = hex[*p & 15];
        }
        if (o >= size)
                return -1;
        buf[o] = 0;
        return (int) o;
}
