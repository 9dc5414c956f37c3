/* SPDX-License-Identifier: GPL-2.0-or-later */
/* control: the Unix stream socket numabalancectl talks to.
 *
 * Protocol: one request per connection, a single line of at most CONTROL_REQUEST_MAX
 * bytes including its newline:
 *     status | list | explain <pid>
 * The reply is one JSON document (report.h), then the daemon closes the connection.
 * Anything else (unknown command, bad pid, a line too long, nothing within
 * CONTROL_TIMEOUT_USEC) gets {"error": "..."} where the client can still read it.
 *
 * The socket is mode 0666: anyone may ask, and the answer is filtered by the peer's
 * uid (SO_PEERCRED) as report.h describes. Everything runs on the event loop without
 * blocking it: the socket and the connections are non-blocking, replies are buffered
 * and written as the peer reads them, and at most CONTROL_CONNECTIONS_MAX connections
 * are served at a time (more are answered "busy" and closed). */
#pragma once
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <systemd/sd-event.h>

#include "control-request.h"

#define CONTROL_SOCKET_DEFAULT "/run/numabalanced/control"

#define CONTROL_CONNECTIONS_MAX 16
/* A client must send its request within this, and read the reply within
 * CONTROL_WRITE_TIMEOUT_USEC. */
#define CONTROL_TIMEOUT_USEC (2 * UINT64_C(1000000))
#define CONTROL_WRITE_TIMEOUT_USEC (10 * UINT64_C(1000000))

struct manager;
struct control;

/* Creates the socket at path (and its directory, mode 0755, if missing; a stale
 * socket left by a previous run is replaced, a live one is -EADDRINUSE) and adds it to
 * the event loop. Logs its errors. */
int control_new(sd_event *e, const char *path, struct manager *m, struct control **ret);
/* Serves the socket outside the event loop: accepts what waits and gives every open
 * connection a read or a send attempt (non-blocking). For the manager to call while a
 * tick's migration jobs run, which can take seconds under rate_limit_mb_s; the
 * connections' timeouts stay with the event loop. c may be NULL; its argument is a
 * struct control * (the manager's callback type). */
void control_pump(void *c);
/* Closes every connection and the socket, and removes the socket file. */
void control_free(struct control *c);
