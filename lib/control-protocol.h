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
 * complete within CONTROL_REQUEST_TIMEOUT_USEC of connecting:
 *     status | list | explain <pid>
 * where <pid> is a decimal number from 1 to INT32_MAX.
 *
 * Reply: one JSON object (docs/ctl-json.md), then the daemon ends its side of the
 * connection; the client must read it within CONTROL_REPLY_READ_TIMEOUT_USEC. A
 * request the daemon refuses (unknown command, bad pid, a line too long, nothing in
 * time, too many connections) gets {CONTROL_KEY_ERROR: "why"} instead, which the
 * client can still read. An explain of a process the requester may not see, or that
 * does not exist, is a reply (not an error) whose CONTROL_KEY_WHY says which. */
#pragma once
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
#define CONTROL_REQUEST_MAX 256
#define CONTROL_REQUEST_TIMEOUT_SEC 2
#define CONTROL_REQUEST_TIMEOUT_USEC (CONTROL_REQUEST_TIMEOUT_SEC * UINT64_C(1000000))
#define CONTROL_REPLY_READ_TIMEOUT_USEC (10 * UINT64_C(1000000))

/* Keys of the reply the client acts on. */
#define CONTROL_KEY_ERROR "error"
#define CONTROL_KEY_WHY "why"
/* explain: values of CONTROL_KEY_WHY that make the request fail for the client. */
#define CONTROL_WHY_NOT_VISIBLE "not-visible"
#define CONTROL_WHY_NO_SUCH_PROCESS "no-such-process"
