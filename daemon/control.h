/* SPDX-License-Identifier: GPL-2.0-or-later */
/* control: the daemon's end of the control socket numabalancectl talks to. The
 * protocol (the request line, the reply, the limits and timeouts both ends keep) is
 * control-protocol.h; the request parser control-request.h; the replies report.h.
 *
 * Everything runs on the event loop without blocking it: the socket and the
 * connections are non-blocking, replies are buffered and written as the peer reads
 * them, and at most CONTROL_CONNECTIONS_PER_UID connections of one user, and
 * CONTROL_CONNECTIONS_MAX of all users but root, are served at a time (more are
 * answered "busy" and closed): one user cannot hold the socket for the others, and
 * root, the operator, always gets through. Requests have budgets the same way, per
 * user and for all users together (CONTROL_REQUESTS_*); who may see which process is
 * read once a tick for all requests (report.h, struct report_seen). A reply is at
 * most CONTROL_REPLY_MAX bytes (list pages), the kernel buffers at most 64 KiB of it,
 * a peer that has not read it CONTROL_REPLY_READ_TIMEOUT_USEC after it was ready is
 * dropped, and the unread replies of users other than root are bounded in all: a user
 * who asks and never reads holds its connections for seconds, not the daemon's memory.
 * When accept(2) fails for lack of descriptors or memory the socket is not watched for
 * a second, rather than wake the loop at once forever. */
#pragma once
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <systemd/sd-event.h>

#include "control-protocol.h"
#include "control-request.h"

#define CONTROL_CONNECTIONS_PER_UID 8
/* Of all users but root together; root's connections are not counted in it. */
#define CONTROL_CONNECTIONS_MAX 64
/* Requests a user other than root may make per second (a token bucket per uid, this
 * many at once): a reply reads every record the user may see, on the event loop, so a
 * user who asks in a loop must not keep it from ticking nor from answering root. Over
 * it, the reply is an error saying so; root is never limited. */
#define CONTROL_REQUESTS_PER_UID_S 10
/* Requests all users but root may make per second together (one more token bucket,
 * this many at once). Uids are not scarce: a rootless container has 65,536 of them
 * (subuid ranges), each with a budget of its own, and a budget not remembered starts
 * full; so the per-uid budget alone let one tenant ask as often as it could connect. A
 * request over it is answered busy like one over the uid's budget; root's requests
 * neither count nor wait, so the operator can always ask. Four users asking at their
 * full rate: the event loop spends at most this many replies a second on users. */
#define CONTROL_REQUESTS_USERS_S 40
/* Users whose budget is remembered: at most one per connection that can be open. */
#define CONTROL_BUDGETS_MAX CONTROL_CONNECTIONS_MAX

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
