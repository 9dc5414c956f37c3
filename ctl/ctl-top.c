/* SPDX-License-Identifier: GPL-2.0-or-later */
/* numabalancectl top: the daemon's status and list, asked again every interval, as a
 * live view (ctl-top.h). */
#include <errno.h>
#include <inttypes.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <termios.h>
#include <time.h>
#include <unistd.h>
#include "clock.h"
#include "cleanup.h"
#include "ctl-top.h"
#include "jv.h"
#include "pagesize.h"

/* A terminal whose size cannot be read is taken as this. */
#define DEFAULT_ROWS 24
#define DEFAULT_COLS 80
/* Lines above the rows: the daemon's line, the keys, a blank line, the column names. */
#define HEADER_LINES 4

struct row {
        int64_t pid;               /* 0: a cgroup's row */
        char *cgroup;              /* the cgroup's path, as the daemon sent it */
        char name[96];             /* comm, or the cgroup path, safe for a terminal */
        uint64_t total, local;     /* bytes; local: on the node its threads run on */
        char nodes[96];
        uint64_t moved, refused;
        double moved_mib_s;        /* since the last frame */
        char reason[32];
        const struct row *group;   /* a process's cgroup row (NULL: none listed) */
};

struct frame {
        struct jv *status;
        struct row *rows;          /* sorted by identity (row_cmp_id) */
        size_t n;
        double t;                  /* CLOCK_MONOTONIC, s */
};

static const char *const sort_names[_TOP_SORT_MAX] = {
        [TOP_SORT_MOVED] = "moved", [TOP_SORT_MISPLACED] = "misplaced", [TOP_SORT_LOCAL] = "local",
        [TOP_SORT_REFUSED] = "refused", [TOP_SORT_PID] = "pid",
};

const char *ctl_top_sort_name(enum top_sort s) {
        return (unsigned) s < _TOP_SORT_MAX ? sort_names[s] : "?";
}

static void frame_done(struct frame *f) {
        jv_free(f->status);
        for (size_t i = 0; i < f->n; i++)
                free(f->rows[i].cgroup);
        free(f->rows);
        *f = (struct frame) {};
}

/* One request; a JSON object, or NULL after one line on stderr. */
static struct jv *request(const struct daemon_args *a, const char *line) {
        _cleanup_free_ char *reply = NULL;
        struct jv *d = NULL;
        size_t len = 0;
        bool connected;
        int r = ctl_daemon_ask(a, line, &reply, &len, &connected);

        if (r < 0) {
                fprintf(stderr, "numabalancectl top: %s numabalanced at %s: %s\n",
                        connected ? "no reply from" : "cannot reach", a->socket, strerror(-r));
                return NULL;
        }
        if (jv_parse(reply, len, &d, NULL) < 0 || d->type != JV_OBJECT || jv_get(d, "error")) {
                fprintf(stderr, "numabalancectl top: numabalanced at %s gave no usable reply\n", a->socket);
                jv_free(d);
                return NULL;
        }
        return d;
}

/* Identity: cgroup path, the cgroup's own row first, then pid. */
static int row_cmp_id(const void *a, const void *b) {
        const struct row *x = a, *y = b;
        int c = strcmp(x->cgroup, y->cgroup);

        if (c)
                return c;
        return (x->pid > y->pid) - (x->pid < y->pid);
}

static void node_text(const struct jv *nodes, uint64_t total, char *buf, size_t size) {
        size_t o = 0;

        buf[0] = 0;
        for (size_t i = 0; nodes && i < nodes->n && o + 16 < size; i++) {
                uint64_t b = jv_u64(jv_get(&nodes->items[i], "bytes"), 0);
                o += (size_t) snprintf(buf + o, size - o, "%sN%" PRIu64 " %.0f%%", i ? " " : "",
                                       jv_u64(jv_get(&nodes->items[i], "node"), 0),
                                       total ? 100.0 * (double) b / (double) total : 0.0);
        }
}

static int row_of_cgroup(const struct jv *c, struct row *r) {
        const char *path = jv_str(jv_get(c, "path"), "");

        *r = (struct row) { .cgroup = strdup(path), .total = jv_u64(jv_get(c, "total_bytes"), 0) };
        if (!r->cgroup)
                return -ENOMEM;
        ctl_daemon_safe(path, r->name, sizeof(r->name));
        node_text(jv_get(c, "nodes"), r->total, r->nodes, sizeof(r->nodes));
        r->moved = jv_u64(jv_get(jv_get(c, "pages"), "moved"), 0);
        r->refused = jv_u64(jv_get(jv_get(c, "pages"), "refused"), 0);
        return 0;
}

static int row_of_process(const struct jv *p, struct row *r) {
        *r = (struct row) { .pid = jv_i64(jv_get(p, "pid"), 0), .cgroup = strdup(jv_str(jv_get(p, "cgroup"), "")),
                            .total = jv_u64(jv_get(p, "total_bytes"), 0),
                            .local = jv_u64(jv_get(p, "local_bytes"), 0) };
        if (!r->cgroup)
                return -ENOMEM;
        ctl_daemon_safe(jv_str(jv_get(p, "comm"), NULL), r->name, sizeof(r->name));
        node_text(jv_get(p, "nodes"), r->total, r->nodes, sizeof(r->nodes));
        r->moved = jv_u64(jv_get(p, "pages_moved"), 0);
        r->refused = jv_u64(jv_get(jv_get(p, "pages"), "refused"), 0);
        ctl_daemon_safe(jv_str(jv_get(p, "reason"), "-"), r->reason, sizeof(r->reason));
        return 0;
}

/* The rows of a list, sorted by identity; a cgroup's local bytes are its processes'. */
static int rows_of(const struct jv *list, struct frame *f) {
        const struct jv *cgs = jv_get(list, "cgroups"), *procs = jv_get(list, "processes");
        size_t n = (cgs ? cgs->n : 0) + (procs ? procs->n : 0);
        struct row *group = NULL;

        f->rows = calloc(n ? n : 1, sizeof(*f->rows));
        if (!f->rows)
                return -ENOMEM;
        for (size_t i = 0; cgs && i < cgs->n; i++, f->n++)
                if (row_of_cgroup(&cgs->items[i], &f->rows[f->n]) < 0)
                        return -ENOMEM;
        for (size_t i = 0; procs && i < procs->n; i++, f->n++)
                if (row_of_process(&procs->items[i], &f->rows[f->n]) < 0)
                        return -ENOMEM;
        qsort(f->rows, f->n, sizeof(*f->rows), row_cmp_id);
        for (size_t i = 0; i < f->n; i++) {
                struct row *r = &f->rows[i];
                if (r->pid == 0) {
                        group = r;
                        continue;
                }
                if (group && strcmp(group->cgroup, r->cgroup) == 0) {
                        r->group = group;
                        group->local += r->local;
                }
        }
        return 0;
}

/* Each row's rate, from the same row of the frame before (found by identity). */
static void rates(struct frame *cur, const struct frame *prev) {
        double dt = prev && prev->status ? cur->t - prev->t : 0;

        for (size_t i = 0; dt > 0 && i < cur->n; i++) {
                struct row *r = &cur->rows[i];
                const struct row *was = bsearch(r, prev->rows, prev->n, sizeof(*r), row_cmp_id);
                if (was && r->moved >= was->moved)
                        r->moved_mib_s = (double) (r->moved - was->moved) * (double) page_size() / 1048576.0 / dt;
        }
}

static int fetch(const struct daemon_args *a, struct frame *f, const struct frame *prev) {
        struct daemon_args la = *a;
        _cleanup_(jv_freep) struct jv *list = NULL;

        la.cmd = CONTROL_LIST;
        la.n_filters = 0;
        f->status = request(a, "status\n");
        if (!f->status || ctl_daemon_list_all(&la, &list) < 0 || rows_of(list, f) < 0)
                return -ENOTCONN;
        f->t = clock_now_s();
        rates(f, prev);
        return 0;
}

static enum top_sort sort_key;

static uint64_t misplaced(const struct row *r) {
        return r->total > r->local ? r->total - r->local : 0;
}

/* The chosen key, the largest first (local: the worst first; pid: the smallest). */
static int cmp_key(const struct row *x, const struct row *y) {
        double lx, ly;

        switch (sort_key) {
        case TOP_SORT_MOVED:
                return (x->moved_mib_s < y->moved_mib_s) - (x->moved_mib_s > y->moved_mib_s);
        case TOP_SORT_MISPLACED:
                return (misplaced(x) < misplaced(y)) - (misplaced(x) > misplaced(y));
        case TOP_SORT_LOCAL:
                lx = x->total ? (double) x->local / (double) x->total : 2;
                ly = y->total ? (double) y->local / (double) y->total : 2;
                return (lx > ly) - (lx < ly);
        case TOP_SORT_REFUSED:
                return (x->refused < y->refused) - (x->refused > y->refused);
        case TOP_SORT_PID:
        default:
                return 0;
        }
}

/* Display order: the cgroups by the key across all of them (then by path), each
 * followed by its processes by the key (then by pid); processes whose cgroup is not
 * listed form a group of their own, by their cgroup path. */
static int cmp_display(const void *a, const void *b) {
        const struct row *x = *(const struct row *const *) a, *y = *(const struct row *const *) b;
        const struct row *gx = x->pid ? x->group : x, *gy = y->pid ? y->group : y;
        int c;

        if (gx != gy) {
                c = gx && gy ? cmp_key(gx, gy) : 0;
                return c ? c : strcmp(gx ? gx->cgroup : x->cgroup, gy ? gy->cgroup : y->cgroup);
        }
        if ((x->pid == 0) != (y->pid == 0))
                return x->pid == 0 ? -1 : 1;
        c = cmp_key(x, y);
        return c ? c : (x->pid > y->pid) - (x->pid < y->pid);
}

/* The screen's size: rows and columns; 0 rows when stdout is not a terminal (no
 * bound). */
static void screen_size(bool tty, int *rows, int *cols) {
        struct winsize ws;

        *rows = 0;
        *cols = 1000;
        if (!tty)
                return;
        if (ioctl(STDOUT_FILENO, TIOCGWINSZ, &ws) == 0 && ws.ws_row > 0 && ws.ws_col > 0) {
                *rows = ws.ws_row;
                *cols = ws.ws_col;
        } else {
                *rows = DEFAULT_ROWS;
                *cols = DEFAULT_COLS;
        }
}

/* One line of the frame: cut to the width; on a terminal the rest of the line erased
 * (the frame overwrites the last one instead of clearing the screen first). */
static void put_line(FILE *out, const char *line, int width, bool tty) {
        fprintf(out, "%.*s%s\n", width, line, tty ? "\033[K" : "");
}

static void put_header(FILE *out, const struct frame *cur, const struct frame *prev, int width, bool tty) {
        const struct jv *st = cur->status;
        double cpu = -1;
        char line[1024], b[64];

        if (prev && prev->status) {
                uint64_t p0 = jv_u64(jv_get(jv_get(prev->status, "cpu_ns"), "process"), 0);
                uint64_t p1 = jv_u64(jv_get(jv_get(st, "cpu_ns"), "process"), 0);
                if (cur->t > prev->t && p1 >= p0)
                        cpu = (double) (p1 - p0) / 1e9 / (cur->t - prev->t);
        }
        snprintf(line, sizeof(line), "numabalanced pid %" PRId64 ", up %.0f s, chain %s, CPU %s, moved %s/min",
                 jv_i64(jv_get(st, "pid"), 0), (double) jv_u64(jv_get(st, "uptime_ms"), 0) / 1000.0,
                 jv_str(jv_get(st, "sampling_chain"), "-"), cpu < 0 ? "-" : (snprintf(b, sizeof(b), "%.1f%%", 100 * cpu), b),
                 ctl_daemon_bytes(jv_u64(jv_get(st, "moved_bytes_last_minute"), 0), b + 32, 32));
        put_line(out, line, width, tty);
        snprintf(line, sizeof(line), "sorted by %s (m moved, b misplaced, l local, r refused, p pid; q quits)",
                 ctl_top_sort_name(sort_key));
        if (tty)
                put_line(out, line, width, tty);
        put_line(out, "", width, tty);
        /* The figures a sort key names first, so that 80 columns show them all. */
        snprintf(line, sizeof(line), "%-8s %-24s %5s %8s %9s %7s  %-24s %s", "PID", "CGROUP / COMM", "LOCAL",
                 "MOVED/s", "MISPLACED", "REFUSED", "NODES", "REASON");
        put_line(out, line, width, tty);
}

static void put_row(FILE *out, const struct row *r, int width, bool tty) {
        char line[1024], local[16], pid[16], rate[24], mis[32];

        if (r->total == 0)
                snprintf(local, sizeof(local), "-");
        else
                snprintf(local, sizeof(local), "%.0f%%", 100.0 * (double) r->local / (double) r->total);
        snprintf(pid, sizeof(pid), r->pid ? "%" PRId64 : "", r->pid);
        snprintf(rate, sizeof(rate), "%.1fMi", r->moved_mib_s);
        snprintf(line, sizeof(line), "%-8s %s%-*.*s %5s %8s %9s %7" PRIu64 "  %-24s %s", pid, r->pid ? "  " : "",
                 r->pid ? 22 : 24, r->pid ? 22 : 24, r->name, local, rate, ctl_daemon_bytes(misplaced(r), mis, sizeof(mis)),
                 r->refused, r->nodes, r->pid ? r->reason : "");
        put_line(out, line, width, tty);
}

/* One frame: on a terminal of height rows, the header and as many rows as fit below
 * it with one line left (a newline on the last line would scroll the header away),
 * the last one counting the rows not shown. */
static int render(FILE *out, const struct frame *cur, const struct frame *prev, bool tty) {
        _cleanup_free_ const struct row **order = calloc(cur->n ? cur->n : 1, sizeof(*order));
        int height, width;
        size_t fit;

        if (!order)
                return -ENOMEM;
        screen_size(tty, &height, &width);
        for (size_t i = 0; i < cur->n; i++)
                order[i] = &cur->rows[i];
        qsort(order, cur->n, sizeof(*order), cmp_display);
        if (tty)
                fputs("\033[H", out);
        put_header(out, cur, prev, width, tty);
        fit = cur->n;
        if (height > 0) {
                size_t room = height > HEADER_LINES + 1 ? (size_t) (height - HEADER_LINES - 1) : 1;
                if (fit > room)
                        fit = room - 1;
        }
        for (size_t i = 0; i < fit; i++)
                put_row(out, order[i], width, tty);
        if (fit < cur->n) {
                char line[96];
                snprintf(line, sizeof(line), "... %zu more row%s (a larger window shows them)", cur->n - fit,
                         cur->n - fit == 1 ? "" : "s");
                put_line(out, line, width, tty);
        }
        /* A user sees only the cgroups it owns (docs/ctl-json.md, "Who sees what"): an
         * empty table says so, rather than look like a daemon that balances nothing. */
        if (cur->n == 0)
                put_line(out, geteuid() == 0 ? "No cgroup is watched."
                                             : "No cgroup you own is watched (root, or sudo, sees every cgroup).",
                         width, tty);
        if (tty)
                fputs("\033[J", out);
        fflush(out);
        return 0;
}

static struct termios saved_tio;
static bool raw_on;

static void raw_off(void) {
        if (raw_on) {
                tcsetattr(STDIN_FILENO, TCSANOW, &saved_tio);
                fputs("\033[?25h", stdout);
                fflush(stdout);
                raw_on = false;
        }
}

static void raw_mode(void) {
        struct termios t;

        if (!isatty(STDIN_FILENO) || tcgetattr(STDIN_FILENO, &saved_tio) < 0)
                return;
        t = saved_tio;
        t.c_lflag &= (tcflag_t) ~(ICANON | ECHO);
        t.c_cc[VMIN] = 0;
        t.c_cc[VTIME] = 0;
        if (tcsetattr(STDIN_FILENO, TCSANOW, &t) == 0) {
                raw_on = true;
                fputs("\033[?25l\033[2J", stdout);   /* cleared once, at the start */
                atexit(raw_off);
        }
}

static volatile sig_atomic_t stop_signal;

static void on_signal(int sig) {
        stop_signal = sig;
}

/* Waits up to ms for a key; returns it, 0 on none, -1 when stdin ended. */
static int key(int ms) {
        struct pollfd p = { .fd = STDIN_FILENO, .events = POLLIN };
        char c;

        if (poll(&p, 1, ms) <= 0)
                return 0;
        if (read(STDIN_FILENO, &c, 1) != 1)
                return -1;
        return (unsigned char) c;
}

/* The sort key a key press chooses, or -1. */
static int sort_of_key(int k) {
        switch (k) {
        case 'm': return TOP_SORT_MOVED;
        case 'b': return TOP_SORT_MISPLACED;
        case 'l': return TOP_SORT_LOCAL;
        case 'r': return TOP_SORT_REFUSED;
        case 'p': return TOP_SORT_PID;
        }
        return -1;
}

static int snapshot(const struct daemon_args *a, unsigned interval_ms, struct frame *prev) {
        struct frame cur = {};
        int r = 0;

        usleep(interval_ms * 1000);
        if (fetch(a, &cur, prev) < 0 || render(stdout, &cur, prev, false) < 0)
                r = 1;
        frame_done(&cur);
        return r;
}

int ctl_top(const struct daemon_args *a, unsigned interval_ms, enum top_sort sort) {
        struct frame prev = {}, cur = {};
        int r = 0;

        sort_key = sort;
        if (fetch(a, &prev, NULL) < 0) {
                frame_done(&prev);
                return 1;
        }
        if (!isatty(STDOUT_FILENO)) {
                /* One snapshot: the rates over one interval. */
                r = snapshot(a, interval_ms, &prev);
                frame_done(&prev);
                return r;
        }
        signal(SIGINT, on_signal);
        signal(SIGTERM, on_signal);
        raw_mode();
        render(stdout, &prev, NULL, true);
        for (;;) {
                double next = clock_now_s() + interval_ms / 1000.0, left;
                int k = 0, s;
                /* (left computed once: a negative poll timeout would wait for ever) */
                while (!stop_signal && k == 0 && (left = next - clock_now_s()) > 0)
                        k = key((int) (left * 1000) + 1);
                if (stop_signal || k == 'q' || k == 'Q' || k < 0)
                        break;
                s = sort_of_key(k);
                if (s >= 0) {
                        /* Redrawn at once in the new order, with the rates of the last frame. */
                        sort_key = (enum top_sort) s;
                        render(stdout, &prev, NULL, true);
                        continue;
                }
                if (fetch(a, &cur, &prev) < 0) {
                        raw_off();
                        fprintf(stderr, "numabalancectl top: the daemon went away\n");
                        r = 1;
                        break;
                }
                render(stdout, &cur, &prev, true);
                frame_done(&prev);
                prev = cur;
                cur = (struct frame) {};
        }
        raw_off();
        frame_done(&prev);
        frame_done(&cur);
        return r;
}
