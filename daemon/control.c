/* SPDX-License-Identifier: GPL-2.0-or-later */
/* control: the Unix socket, its connections, one request and one reply each. */
#include <errno.h>
#include <inttypes.h>
#include <stdbool.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>
#include "clock.h"
#include "cleanup.h"
#include "control.h"
#include "log.h"
#include "parse.h"
#include "report.h"

/* Connections accepted per wake-up of the listening socket, so that a flood of
 * connections cannot hold the loop. */
#define ACCEPT_PER_WAKEUP 32
/* After the reply, at most this much more input is read and dropped before closing. */
#define CONTROL_DRAIN_MAX (1024 * 1024)
/* The kernel's send buffer of a connection (it doubles it): what a peer that does not
 * read holds there, beside its reply in our memory. */
#define CONTROL_SNDBUF (32 * 1024)
/* Unsent reply bytes of users other than root, in all: a request that could take it
 * over (a reply is at most CONTROL_REPLY_MAX) is answered busy. Root's are bounded by
 * its CONTROL_CONNECTIONS_PER_UID connections. */
#define CONTROL_QUEUED_MAX (16 * CONTROL_REPLY_MAX)
/* How long the listening socket is left alone after accept(2) ran out of descriptors
 * or memory: epoll reports it readable while a connection waits, so watching it
 * meanwhile would spin the event loop at 100% of the service CPU. */
#define CONTROL_ACCEPT_PAUSE_USEC (1 * UINT64_C(1000000))

struct conn {
        struct control *ctl;
        struct conn *prev, *next;
        int fd;
        uid_t uid;
        pid_t peer_pid;
        sd_event_source *io, *timer;
        char in[CONTROL_REQUEST_MAX];
        size_t in_len;
        char *out;                 /* the reply, once there is one */
        size_t out_len, out_off;
        bool draining;             /* reply sent: reading what is left until EOF */
        size_t drained;
};

/* One user's request budget (CONTROL_REQUESTS_PER_UID_S), or all users' together
 * (CONTROL_REQUESTS_USERS_S): tokens, and when they were counted. */
struct budget {
        uid_t uid;
        uint64_t at_ms;
        uint64_t tokens_milli;     /* thousandths of a request */
};

struct control {
        sd_event *event;
        struct manager *manager;
        char *path;
        int fd;
        dev_t dev;
        ino_t ino;
        sd_event_source *listen_src;
        sd_event_source *resume_src;  /* re-enables listen_src after a pause */
        bool paused;
        struct log_ratelimit pause_log, busy_log;
        struct conn *conns;
        unsigned n_conns;
        struct budget budgets[CONTROL_BUDGETS_MAX];
        unsigned n_budgets;
        struct budget users;       /* every user but root, together */
        struct report_seen *seen;  /* who may see which process, this tick */
};

/* ---- connections ------------------------------------------------------------------ */

static void source_free(sd_event_source **s) {
        if (*s) {
                sd_event_source_set_enabled(*s, SD_EVENT_OFF);
                *s = sd_event_source_unref(*s);
        }
}

static void conn_free(struct conn *k) {
        struct control *c = k->ctl;

        source_free(&k->io);
        source_free(&k->timer);
        if (k->fd >= 0)
                close(k->fd);
        free(k->out);
        if (k->prev)
                k->prev->next = k->next;
        else
                c->conns = k->next;
        if (k->next)
                k->next->prev = k->prev;
        c->n_conns--;
        free(k);
}

/* Writes what the peer takes now. Returns 1 when done (or when the peer is gone:
 * either way the connection is finished), 0 to wait for EPOLLOUT. */
static int conn_send(struct conn *k) {
        while (k->out_off < k->out_len) {
                ssize_t n = send(k->fd, k->out + k->out_off, k->out_len - k->out_off, MSG_NOSIGNAL | MSG_DONTWAIT);
                if (n < 0) {
                        if (errno == EINTR)
                                continue;
                        if (errno == EAGAIN)
                                return 0;
                        log_debug_errno(-errno, "control: pid %d went away before reading its reply, ignoring: %m",
                                        (int) k->peer_pid);
                        return 1;
                }
                k->out_off += (size_t) n;
        }
        return 1;
}

/* The reply is out. Closing now with unread input (the rest of an oversized
 * request) would make the kernel reset the connection, and the peer could lose the
 * reply: end our side, and read and drop what comes until the peer closes too. */
static void conn_drain(struct conn *k) {
        k->draining = true;
        if (shutdown(k->fd, SHUT_WR) < 0 ||
            sd_event_source_set_io_events(k->io, EPOLLIN) < 0 ||
            sd_event_source_set_time_relative(k->timer, CONTROL_REQUEST_TIMEOUT_USEC) < 0 ||
            sd_event_source_set_enabled(k->timer, SD_EVENT_ONESHOT) < 0)
                conn_free(k);
}

static void conn_drain_read(struct conn *k) {
        char buf[4096];
        for (;;) {
                ssize_t n = recv(k->fd, buf, sizeof(buf), MSG_DONTWAIT);
                if (n < 0 && errno == EINTR)
                        continue;
                if (n < 0 && errno == EAGAIN && k->drained < CONTROL_DRAIN_MAX)
                        return;
                if (n <= 0 || (k->drained += (size_t) n) >= CONTROL_DRAIN_MAX) {
                        conn_free(k);
                        return;
                }
        }
}

/* The reply is complete in k->out: switch to writing it. Finishes the connection
 * if it can be written at once. */
static void conn_reply(struct conn *k) {
        if (conn_send(k)) {
                conn_drain(k);
                return;
        }
        if (sd_event_source_set_io_events(k->io, EPOLLOUT) < 0 ||
            sd_event_source_set_time_relative(k->timer, CONTROL_REPLY_READ_TIMEOUT_USEC) < 0 ||
            sd_event_source_set_enabled(k->timer, SD_EVENT_ONESHOT) < 0)
                conn_free(k);
}

static void conn_reply_error(struct conn *k, const char *msg) {
        FILE *f = open_memstream(&k->out, &k->out_len);
        if (!f) {
                conn_free(k);
                return;
        }
        report_error(f, msg);
        if (fclose(f) != 0) {
                conn_free(k);
                return;
        }
        conn_reply(k);
}

/* Adds to b what rate a second gave since it was counted, up to a second's worth. */
static void budget_refill(struct budget *b, unsigned rate, uint64_t now_ms) {
        const uint64_t full = rate * UINT64_C(1000);

        b->tokens_milli += (now_ms - b->at_ms) * rate;
        if (b->tokens_milli > full)
                b->tokens_milli = full;
        b->at_ms = now_ms;
}

enum budget_verdict { BUDGET_OK, BUDGET_OVER_UID, BUDGET_OVER_USERS };

/* Whether uid may make one more request now (and takes it from its budget and from
 * all users'). A user not remembered takes the slot of the one whose budget was
 * counted longest ago: it was full by then, or nearly; the budget of all users
 * together is what bounds uids that come and go. */
static enum budget_verdict budget_take(struct control *c, uid_t uid, uint64_t now_ms) {
        struct budget *b = NULL;

        if (uid == 0)
                return BUDGET_OK;
        for (unsigned i = 0; i < c->n_budgets && !b; i++)
                if (c->budgets[i].uid == uid)
                        b = &c->budgets[i];
        if (!b) {
                if (c->n_budgets < CONTROL_BUDGETS_MAX)
                        b = &c->budgets[c->n_budgets++];
                else {
                        b = &c->budgets[0];
                        for (unsigned i = 1; i < c->n_budgets; i++)
                                if (c->budgets[i].at_ms < b->at_ms)
                                        b = &c->budgets[i];
                }
                *b = (struct budget) { .uid = uid, .at_ms = now_ms,
                                       .tokens_milli = CONTROL_REQUESTS_PER_UID_S * UINT64_C(1000) };
        }
        /* A token per 1000/rate ms, up to a second's worth. */
        budget_refill(b, CONTROL_REQUESTS_PER_UID_S, now_ms);
        budget_refill(&c->users, CONTROL_REQUESTS_USERS_S, now_ms);
        if (b->tokens_milli < 1000)
                return BUDGET_OVER_UID;
        if (c->users.tokens_milli < 1000)
                return BUDGET_OVER_USERS;
        b->tokens_milli -= 1000;
        c->users.tokens_milli -= 1000;
        return BUDGET_OK;
}

/* What the connections of users other than root have yet to send. */
static size_t queued_by_users(const struct control *c) {
        size_t n = 0;

        for (const struct conn *k = c->conns; k; k = k->next)
                if (k->uid != 0 && k->out && !k->draining)
                        n += k->out_len - k->out_off;
        return n;
}

static void conn_handle(struct conn *k, const char *line, size_t len) {
        struct control_request req;
        struct manager_view view;
        const char *error = NULL;
        FILE *f;
        int r;

        r = control_request_parse(line, len, &req, &error);
        if (r < 0) {
                log_debug("control: pid %d uid %u: %s", (int) k->peer_pid, (unsigned) k->uid, error);
                conn_reply_error(k, error);
                return;
        }
        switch (budget_take(k->ctl, k->uid, clock_now_ms())) {
        case BUDGET_OVER_UID:
                log_debug("control: pid %d uid %u: over %u requests a second, refused", (int) k->peer_pid,
                          (unsigned) k->uid, CONTROL_REQUESTS_PER_UID_S);
                conn_reply_error(k, "busy: at most " CONTROL_STRINGIFY(CONTROL_REQUESTS_PER_UID_S)
                                    " requests a second per user; try again in a second");
                return;
        case BUDGET_OVER_USERS:
                log_debug("control: pid %d uid %u: all users over %u requests a second, refused",
                          (int) k->peer_pid, (unsigned) k->uid, CONTROL_REQUESTS_USERS_S);
                conn_reply_error(k, "busy: at most " CONTROL_STRINGIFY(CONTROL_REQUESTS_USERS_S)
                                    " requests a second from all users together; try again in a second");
                return;
        case BUDGET_OK:
                break;
        }
        if (k->uid != 0 && queued_by_users(k->ctl) + CONTROL_REPLY_MAX > CONTROL_QUEUED_MAX) {
                log_debug("control: pid %d uid %u: replies waiting to be read fill the queue, refused",
                          (int) k->peer_pid, (unsigned) k->uid);
                conn_reply_error(k, "busy: too many replies waiting to be read; try again in a second");
                return;
        }
        f = open_memstream(&k->out, &k->out_len);
        if (!f) {
                conn_free(k);
                return;
        }
        view = *manager_view(k->ctl->manager);
        view.seen = k->ctl->seen;
        switch (req.cmd) {
        case CONTROL_STATUS:
                r = report_status(&view, k->uid, f);
                break;
        case CONTROL_LIST:
                r = report_list(&view, k->uid, &req, f);
                break;
        case CONTROL_EXPLAIN:
                if (req.path >= 0)
                        r = report_explain_cgroup(&view, k->uid, control_request_str(&req, req.path), f);
                else
                        r = report_explain(&view, k->uid, req.pid, f);
                break;
        default:
                r = -EINVAL;
        }
        if (fclose(f) != 0 && r >= 0)
                r = -ENOMEM;
        if (r < 0) {
                free(k->out);
                k->out = NULL;
                k->out_len = 0;
                log_warning_errno(r, "control: cannot build the reply for pid %d, ignoring: %m", (int) k->peer_pid);
                conn_reply_error(k, "internal error: cannot build the reply");
                return;
        }
        conn_reply(k);
}

static void conn_read(struct conn *k) {
        char *nl;
        ssize_t n;

        n = recv(k->fd, k->in + k->in_len, sizeof(k->in) - k->in_len, MSG_DONTWAIT);
        if (n < 0) {
                if (errno == EAGAIN || errno == EINTR)
                        return;
                log_debug_errno(-errno, "control: reading from pid %d failed, closing: %m", (int) k->peer_pid);
                conn_free(k);
                return;
        }
        if (n == 0) {
                /* The peer closed its side: what came is the request (or nothing). */
                if (k->in_len == 0) {
                        conn_reply_error(k, CONTROL_ERROR_EMPTY);
                        return;
                }
                conn_handle(k, k->in, k->in_len);
                return;
        }
        k->in_len += (size_t) n;
        nl = memchr(k->in, '\n', k->in_len);
        if (nl) {
                conn_handle(k, k->in, (size_t) (nl - k->in));
                return;
        }
        if (k->in_len == sizeof(k->in))
                conn_reply_error(k, CONTROL_ERROR_TOO_LONG);
}

static int on_conn_io(sd_event_source *s, int fd, uint32_t revents, void *userdata) {
        struct conn *k = userdata;

        if (k->draining) {
                conn_drain_read(k);
                return 0;
        }
        if (k->out) {
                if (conn_send(k))
                        conn_drain(k);
                return 0;
        }
        if (revents & (EPOLLIN | EPOLLHUP | EPOLLERR))
                conn_read(k);
        return 0;
}

static int on_conn_timeout(sd_event_source *s, uint64_t usec, void *userdata) {
        struct conn *k = userdata;

        if (k->draining) {
                conn_free(k);
                return 0;
        }
        if (k->out) {
                log_debug("control: pid %d did not read its reply in time, closing", (int) k->peer_pid);
                conn_free(k);
                return 0;
        }
        log_debug("control: pid %d sent no complete request in time", (int) k->peer_pid);
        conn_reply_error(k, "timeout: no complete request within " CONTROL_STRINGIFY(CONTROL_REQUEST_TIMEOUT_SEC) " s");
        return 0;
}

static void refuse_busy(int fd, const char *why) {
        char msg[256];
        int n = snprintf(msg, sizeof(msg), "{\"" CONTROL_KEY_ERROR "\":\"busy: %s, try again\"}\n", why);

        if (n > 0 && (size_t) n < sizeof(msg))
                (void) send(fd, msg, (size_t) n, MSG_NOSIGNAL | MSG_DONTWAIT);
        close(fd);
}


/* accept(2) ran out of descriptors or memory: stop watching the socket for
 * CONTROL_ACCEPT_PAUSE_USEC (on_resume ends the pause). The connections waiting in
 * the backlog wait; they are accepted once descriptors are back. */
static void pause_accepting(struct control *c, int error) {
        uint64_t suppressed = 0;

        if (c->paused)
                return;
        if (sd_event_source_set_time_relative(c->resume_src, CONTROL_ACCEPT_PAUSE_USEC) < 0 ||
            sd_event_source_set_enabled(c->resume_src, SD_EVENT_ONESHOT) < 0 ||
            sd_event_source_set_enabled(c->listen_src, SD_EVENT_OFF) < 0)
                return;
        c->paused = true;
        if (log_ratelimit_ok(&c->pause_log, clock_now_ms(), &suppressed))
                log_warning_errno(error, "control: cannot accept connections: %m; trying again in 1 s "
                                  "(%" PRIu64 " such pause(s) not logged)", suppressed);
}

static int on_resume(sd_event_source *s, uint64_t usec, void *userdata) {
        struct control *c = userdata;

        c->paused = false;
        if (sd_event_source_set_enabled(c->listen_src, SD_EVENT_ON) < 0)
                pause_accepting(c, -ENOMEM);
        return 0;
}

/* Why a peer is over its share, NULL if it is not: CONTROL_CONNECTIONS_PER_UID for its
 * uid, and CONTROL_CONNECTIONS_MAX for everyone but root together (root's own not
 * counted there: they take no user's room, and users none of root's). */
static const char *over_limit(const struct control *c, uid_t uid) {
        unsigned same = 0, users = 0;

        for (const struct conn *k = c->conns; k; k = k->next) {
                same += k->uid == uid;
                users += k->uid != 0;
        }
        if (same >= CONTROL_CONNECTIONS_PER_UID)
                return "at most " CONTROL_STRINGIFY(CONTROL_CONNECTIONS_PER_UID) " connections per user";
        if (uid != 0 && users >= CONTROL_CONNECTIONS_MAX)
                return "at most " CONTROL_STRINGIFY(CONTROL_CONNECTIONS_MAX) " connections of all users together";
        return NULL;
}

static int on_accept(sd_event_source *s, int fd, uint32_t revents, void *userdata) {
        struct control *c = userdata;

        for (int i = 0; i < ACCEPT_PER_WAKEUP && !c->paused; i++) {
                struct ucred cred;
                socklen_t cl = sizeof(cred);
                const char *why;
                struct conn *k;
                int cfd, r;

                cfd = accept4(fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
                if (cfd < 0) {
                        if (errno == EMFILE || errno == ENFILE || errno == ENOBUFS || errno == ENOMEM)
                                pause_accepting(c, -errno);
                        else if (errno != EAGAIN && errno != EINTR && errno != ECONNABORTED)
                                log_debug_errno(-errno, "control: accept failed, ignoring: %m");
                        return 0;
                }
                if (getsockopt(cfd, SOL_SOCKET, SO_PEERCRED, &cred, &cl) < 0) {
                        log_debug_errno(-errno, "control: cannot get the peer's credentials, closing: %m");
                        close(cfd);
                        continue;
                }
                (void) setsockopt(cfd, SOL_SOCKET, SO_SNDBUF, &(int) { CONTROL_SNDBUF }, sizeof(int));
                why = over_limit(c, cred.uid);
                if (why) {
                        uint64_t suppressed = 0;
                        if (log_ratelimit_ok(&c->busy_log, clock_now_ms(), &suppressed))
                                log_debug("control: %u connections open, refusing pid %d uid %u: %s (%" PRIu64
                                          " refusal(s) not logged)", c->n_conns, (int) cred.pid,
                                          (unsigned) cred.uid, why, suppressed);
                        refuse_busy(cfd, why);
                        continue;
                }
                k = calloc(1, sizeof(*k));
                if (!k) {
                        close(cfd);
                        continue;
                }
                *k = (struct conn) { .ctl = c, .fd = cfd, .uid = cred.uid, .peer_pid = cred.pid, .next = c->conns };
                if (c->conns)
                        c->conns->prev = k;
                c->conns = k;
                c->n_conns++;
                r = sd_event_add_io(c->event, &k->io, cfd, EPOLLIN, on_conn_io, k);
                if (r >= 0)
                        r = sd_event_add_time_relative(c->event, &k->timer, CLOCK_MONOTONIC,
                                                       CONTROL_REQUEST_TIMEOUT_USEC, 0, on_conn_timeout, k);
                if (r < 0) {
                        log_debug_errno(r, "control: cannot watch a connection, closing: %m");
                        conn_free(k);
                }
        }
        return 0;
}

void control_pump(void *userdata) {
        struct control *c = userdata;
        struct conn *k, *next;

        if (!c)
                return;
        if (!c->paused)
                on_accept(c->listen_src, c->fd, EPOLLIN, c);
        /* A connection handled here may be freed here: take the next one first. New
         * connections go to the head, so the ones just accepted are seen too. */
        for (k = c->conns; k; k = next) {
                next = k->next;
                on_conn_io(k->io, k->fd, EPOLLIN, k);
        }
}

/* ---- the socket ------------------------------------------------------------------- */

static int mkdir_parents(const char *path) {
        _cleanup_free_ char *p = strdup(path);
        char *slash;

        if (!p)
                return -ENOMEM;
        slash = strrchr(p, '/');
        if (!slash || slash == p)
                return 0;
        *slash = 0;
        for (char *q = p + 1; *q; q++) {
                if (*q != '/')
                        continue;
                *q = 0;
                if (mkdir(p, 0755) < 0 && errno != EEXIST)
                        return -errno;
                *q = '/';
        }
        if (mkdir(p, 0755) < 0 && errno != EEXIST)
                return -errno;
        return 0;
}

/* A socket file left by a previous run that nobody listens on any more is removed;
 * a live one means another daemon. */
static int clear_stale(const struct sockaddr_un *sa, socklen_t sl) {
        _cleanup_close_ int fd = -1;
        struct stat st;

        if (lstat(sa->sun_path, &st) < 0)
                return errno == ENOENT ? 0 : -errno;
        if (!S_ISSOCK(st.st_mode))
                return -EEXIST;
        fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
        if (fd < 0)
                return -errno;
        if (connect(fd, (const struct sockaddr *) sa, sl) == 0)
                return -EADDRINUSE;
        if (unlink(sa->sun_path) < 0 && errno != ENOENT)
                return -errno;
        return 0;
}

/* The listening socket on the event loop, and the timer that ends an accept pause
 * (made now, off: a pause for lack of memory must not need any). */
static int watch_socket(struct control *c) {
        int r = sd_event_add_io(c->event, &c->listen_src, c->fd, EPOLLIN, on_accept, c);

        if (r >= 0)
                r = sd_event_add_time_relative(c->event, &c->resume_src, CLOCK_MONOTONIC, CONTROL_ACCEPT_PAUSE_USEC,
                                               0, on_resume, c);
        if (r >= 0)
                r = sd_event_source_set_enabled(c->resume_src, SD_EVENT_OFF);
        return r;
}

int control_new(sd_event *e, const char *path, struct manager *m, struct control **ret) {
        struct sockaddr_un sa = { .sun_family = AF_UNIX };
        socklen_t sl;
        struct control *c;
        struct stat st;
        int r;

        if (!path || path[0] != '/' || strlen(path) >= sizeof(sa.sun_path))
                return log_error_errno(-EINVAL, "Control socket path \"%s\" must be absolute and shorter than %zu bytes",
                                       path ? path : "", sizeof(sa.sun_path));
        memcpy(sa.sun_path, path, strlen(path) + 1);
        sl = (socklen_t) (offsetof(struct sockaddr_un, sun_path) + strlen(path) + 1);

        c = calloc(1, sizeof(*c));
        if (!c)
                return log_error_errno(-ENOMEM, "Out of memory");
        c->fd = -1;
        c->pause_log = LOG_RATELIMIT(60000, 1);
        c->busy_log = LOG_RATELIMIT(60000, 10);
        c->event = sd_event_ref(e);
        c->manager = m;
        c->users = (struct budget) { .at_ms = clock_now_ms(), .tokens_milli = CONTROL_REQUESTS_USERS_S * UINT64_C(1000) };
        c->path = strdup(path);
        c->seen = report_seen_new();
        if (!c->path || !c->seen) {
                r = log_error_errno(-ENOMEM, "Out of memory");
                goto fail;
        }
        r = mkdir_parents(path);
        if (r < 0) {
                log_error_errno(r, "Failed to create the directory of the control socket %s: %m", path);
                goto fail;
        }
        r = clear_stale(&sa, sl);
        if (r == -EADDRINUSE) {
                log_error_errno(r, "Another process is listening on %s (is numabalanced already running?)", path);
                goto fail;
        }
        if (r < 0) {
                log_error_errno(r, "Cannot replace %s with the control socket: %m", path);
                goto fail;
        }
        c->fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
        if (c->fd < 0) {
                r = log_error_errno(-errno, "Failed to create the control socket: %m");
                goto fail;
        }
        if (bind(c->fd, (struct sockaddr *) &sa, sl) < 0) {
                r = log_error_errno(-errno, "Failed to bind the control socket to %s: %m", path);
                goto fail;
        }
        /* Everyone may ask; what they see depends on who they are. */
        if (chmod(path, 0666) < 0 || stat(path, &st) < 0) {
                r = log_error_errno(-errno, "Failed to make %s accessible: %m", path);
                goto fail;
        }
        c->dev = st.st_dev;
        c->ino = st.st_ino;
        if (listen(c->fd, 64) < 0) {
                r = log_error_errno(-errno, "Failed to listen on %s: %m", path);
                goto fail;
        }
        r = watch_socket(c);
        if (r < 0) {
                log_error_errno(r, "Failed to watch the control socket: %m");
                goto fail;
        }
        log_info("Listening on %s", path);
        *ret = c;
        return 0;
fail:
        control_free(c);
        return r;
}

void control_free(struct control *c) {
        struct stat st;

        if (!c)
                return;
        while (c->conns)
                conn_free(c->conns);
        source_free(&c->listen_src);
        source_free(&c->resume_src);
        if (c->fd >= 0) {
                close(c->fd);
                /* Only the socket this daemon made: a newer daemon may have replaced it. */
                if (c->path && c->ino && stat(c->path, &st) == 0 && st.st_dev == c->dev && st.st_ino == c->ino)
                        (void) unlink(c->path);
        }
        free(c->path);
        report_seen_free(c->seen);
        sd_event_unref(c->event);
        free(c);
}
