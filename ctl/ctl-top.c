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
#include "json-parse.h"
#include "pagesize.h"

/* Rows kept from one frame to the next, for the rates. */
#define ROWS_MAX 4096

struct row {
        int64_t pid;               /* 0: a cgroup's row */
        char name[96];             /* comm, or the cgroup path */
        char cgroup[256];
        double local;              /* share, -1 when unknown */
        char nodes[96];
        uint64_t moved, refused;
        double moved_mib_s;        /* since the last frame */
        char reason[32];
};

struct frame {
        struct jv *status, *list;
        double t;                  /* CLOCK_MONOTONIC, s */
};


static void frame_done(struct frame *f) {
        jv_free(f->status);
        jv_free(f->list);
        *f = (struct frame) {};
}

/* One request; a JSON object, or NULL after one line on stderr. */
static struct jv *request(const struct daemon_args *a, const char *line) {
        _cleanup_free_ char *reply = NULL;
        struct jv *d = NULL;
        size_t len = 0;
        bool connected;
        int r = ctl_ask(a, line, &reply, &len, &connected);

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

static int fetch(const struct daemon_args *a, struct frame *f) {
        f->status = request(a, "status\n");
        f->list = f->status ? request(a, "list\n") : NULL;
        f->t = clock_now_s();
        return f->list ? 0 : -ENOTCONN;
}

/* The pages moved of the row with this pid (cgroup rows: path) in the previous frame. */
static uint64_t moved_before(const struct jv *list, int64_t pid, const char *path) {
        const struct jv *arr = jv_get(list, pid ? "processes" : "cgroups");

        for (size_t i = 0; arr && i < arr->n; i++) {
                const struct jv *x = &arr->items[i];
                if (pid ? jv_i64(jv_get(x, "pid"), 0) == pid : strcmp(jv_str(jv_get(x, "path"), ""), path) == 0)
                        return jv_u64(jv_get(pid ? x : jv_get(x, "pages"), pid ? "pages_moved" : "moved"), 0);
        }
        return UINT64_MAX;
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

/* The rows of a frame: each cgroup, then its processes. */
static size_t rows_of(const struct frame *cur, const struct frame *prev, struct row *rows) {
        const struct jv *cgs = jv_get(cur->list, "cgroups"), *procs = jv_get(cur->list, "processes");
        double dt = prev && prev->list ? cur->t - prev->t : 0;
        size_t n = 0;

        for (size_t i = 0; cgs && i < cgs->n && n < ROWS_MAX; i++) {
                const struct jv *c = &cgs->items[i];
                struct row *r = &rows[n++];
                uint64_t total = jv_u64(jv_get(c, "total_bytes"), 0), local = 0, was;
                const char *path = jv_str(jv_get(c, "path"), "");

                *r = (struct row) { .local = -1 };
                ctl_safe(path, r->name, sizeof(r->name));
                ctl_safe(path, r->cgroup, sizeof(r->cgroup));
                for (size_t k = 0; procs && k < procs->n; k++)
                        if (strcmp(jv_str(jv_get(&procs->items[k], "cgroup"), ""), path) == 0)
                                local += jv_u64(jv_get(&procs->items[k], "local_bytes"), 0);
                if (total)
                        r->local = (double) local / (double) total;
                node_text(jv_get(c, "nodes"), total, r->nodes, sizeof(r->nodes));
                r->moved = jv_u64(jv_get(jv_get(c, "pages"), "moved"), 0);
                r->refused = jv_u64(jv_get(jv_get(c, "pages"), "refused"), 0);
                was = dt > 0 ? moved_before(prev->list, 0, path) : UINT64_MAX;
                if (was != UINT64_MAX && r->moved >= was)
                        r->moved_mib_s = (double) (r->moved - was) * (double) page_size() / 1048576.0 / dt;
        }
        for (size_t i = 0; procs && i < procs->n && n < ROWS_MAX; i++) {
                const struct jv *p = &procs->items[i];
                struct row *r = &rows[n++];
                uint64_t total = jv_u64(jv_get(p, "total_bytes"), 0), was;

                *r = (struct row) { .pid = jv_i64(jv_get(p, "pid"), 0), .local = -1 };
                ctl_safe(jv_str(jv_get(p, "comm"), NULL), r->name, sizeof(r->name));
                ctl_safe(jv_str(jv_get(p, "cgroup"), NULL), r->cgroup, sizeof(r->cgroup));
                if (total)
                        r->local = jv_num(jv_get(p, "local_share"), 0);
                node_text(jv_get(p, "nodes"), total, r->nodes, sizeof(r->nodes));
                r->moved = jv_u64(jv_get(p, "pages_moved"), 0);
                r->refused = jv_u64(jv_get(jv_get(p, "pages"), "refused"), 0);
                ctl_safe(jv_str(jv_get(p, "reason"), "-"), r->reason, sizeof(r->reason));
                was = dt > 0 ? moved_before(prev->list, r->pid, NULL) : UINT64_MAX;
                if (was != UINT64_MAX && r->moved >= was)
                        r->moved_mib_s = (double) (r->moved - was) * (double) page_size() / 1048576.0 / dt;
        }
        return n;
}

static enum top_sort sort_key;

/* Within a cgroup's group: processes by the key; the cgroups themselves likewise. */
static int cmp_key(const struct row *x, const struct row *y) {
        switch (sort_key) {
        case TOP_SORT_MOVED:
                return x->moved_mib_s < y->moved_mib_s ? 1 : x->moved_mib_s > y->moved_mib_s ? -1 : 0;
        case TOP_SORT_LOCAL:
                return x->local < y->local ? -1 : x->local > y->local ? 1 : 0;
        case TOP_SORT_REFUSED:
                return x->refused < y->refused ? 1 : x->refused > y->refused ? -1 : 0;
        case TOP_SORT_PID:
        default:
                return x->pid < y->pid ? -1 : x->pid > y->pid;
        }
}

static int cmp_rows(const void *a, const void *b) {
        const struct row *x = a, *y = b;
        int c = strcmp(x->cgroup, y->cgroup);

        if (c != 0)
                return c;
        if ((x->pid == 0) != (y->pid == 0))
                return x->pid == 0 ? -1 : 1;         /* the cgroup's row first */
        c = cmp_key(x, y);
        return c ? c : (x->pid < y->pid ? -1 : x->pid > y->pid);
}

static const char *sort_name(enum top_sort s) {
        static const char *const names[] = { "moved", "local", "refused", "pid" };
        return names[s];
}

static void render(FILE *out, const struct frame *cur, const struct frame *prev, struct row *rows, int width,
                   bool tty) {
        const struct jv *st = cur->status;
        double cpu = -1;
        char line[1024], b[64];
        size_t n = rows_of(cur, prev, rows);

        if (prev && prev->status) {
                uint64_t p0 = jv_u64(jv_get(jv_get(prev->status, "cpu_ns"), "process"), 0);
                uint64_t p1 = jv_u64(jv_get(jv_get(st, "cpu_ns"), "process"), 0);
                if (cur->t > prev->t && p1 >= p0)
                        cpu = (double) (p1 - p0) / 1e9 / (cur->t - prev->t);
        }
        qsort(rows, n, sizeof(*rows), cmp_rows);
        if (tty)
                fputs("\033[H\033[2J", out);
        snprintf(line, sizeof(line), "numabalanced pid %" PRId64 ", up %.0f s: chain %s, daemon CPU %s, moved last "
                 "minute %s", jv_i64(jv_get(st, "pid"), 0), (double) jv_u64(jv_get(st, "uptime_ms"), 0) / 1000.0,
                 jv_str(jv_get(st, "sampling_chain"), "-"), cpu < 0 ? "-" : (snprintf(b, sizeof(b), "%.1f%%", 100 * cpu), b),
                 ctl_bytes(jv_u64(jv_get(st, "moved_bytes_last_minute"), 0), b + 32, 32));
        fprintf(out, "%.*s\n", width, line);
        snprintf(line, sizeof(line), "sorted by %s (m moved, l local, r refused, p pid; q quits)", sort_name(sort_key));
        if (tty)
                fprintf(out, "%.*s\n", width, line);
        fputc('\n', out);
        snprintf(line, sizeof(line), "%-8s %-28s %6s %-24s %9s %9s  %s", "PID", "CGROUP / COMM", "LOCAL", "NODES",
                 "MOVED/s", "REFUSED", "REASON");
        fprintf(out, "%.*s\n", width, line);
        for (size_t i = 0; i < n; i++) {
                const struct row *r = &rows[i];
                char local[16], pid[16], rate[24];
                if (r->local < 0)
                        snprintf(local, sizeof(local), "-");
                else
                        snprintf(local, sizeof(local), "%.0f%%", 100 * r->local);
                snprintf(pid, sizeof(pid), r->pid ? "%" PRId64 : "", r->pid);
                snprintf(rate, sizeof(rate), "%.1fMi", r->moved_mib_s);
                snprintf(line, sizeof(line), "%-8s %s%-*.*s %6s %-24s %9s %9" PRIu64 "  %s", pid, r->pid ? "  " : "",
                         r->pid ? 26 : 28, r->pid ? 26 : 28, r->name, local, r->nodes, rate, r->refused,
                         r->pid ? r->reason : "");
                fprintf(out, "%.*s\n", width, line);
        }
        if (n == 0)
                fprintf(out, "No cgroup is watched.\n");
        fflush(out);
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
                fputs("\033[?25l", stdout);
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

static int width_of_terminal(void) {
        struct winsize ws;
        return ioctl(STDOUT_FILENO, TIOCGWINSZ, &ws) == 0 && ws.ws_col > 20 ? ws.ws_col : 1000;
}

int ctl_top(const struct daemon_args *a, unsigned interval_ms, enum top_sort sort) {
        _cleanup_free_ struct row *rows = calloc(ROWS_MAX, sizeof(*rows));
        struct frame prev = {}, cur = {};
        bool tty = isatty(STDOUT_FILENO);
        int r = 0;

        if (!rows)
                return 1;
        sort_key = sort;
        if (fetch(a, &prev) < 0) {
                frame_done(&prev);
                return 1;
        }
        if (!tty) {
                /* One snapshot: the rates over one interval. */
                usleep(interval_ms * 1000);
                if (fetch(a, &cur) < 0)
                        r = 1;
                else
                        render(stdout, &cur, &prev, rows, 1000, false);
                frame_done(&prev);
                frame_done(&cur);
                return r;
        }
        signal(SIGINT, on_signal);
        signal(SIGTERM, on_signal);
        raw_mode();
        render(stdout, &prev, NULL, rows, width_of_terminal(), true);
        for (;;) {
                double next = clock_now_s() + interval_ms / 1000.0, left;
                int k = 0;
                /* (left computed once: a negative poll timeout would wait for ever) */
                while (!stop_signal && k == 0 && (left = next - clock_now_s()) > 0)
                        k = key((int) (left * 1000) + 1);
                if (stop_signal || k == 'q' || k == 'Q' || k < 0)
                        break;
                if (k == 'm' || k == 'l' || k == 'r' || k == 'p')
                        sort_key = k == 'm' ? TOP_SORT_MOVED : k == 'l' ? TOP_SORT_LOCAL
                                   : k == 'r' ? TOP_SORT_REFUSED : TOP_SORT_PID;
                if (fetch(a, &cur) < 0) {
                        raw_off();
                        fprintf(stderr, "numabalancectl top: the daemon went away\n");
                        r = 1;
                        break;
                }
                render(stdout, &cur, &prev, rows, width_of_terminal(), true);
                frame_done(&prev);
                prev = cur;
                cur = (struct frame) {};
        }
        raw_off();
        frame_done(&prev);
        frame_done(&cur);
        return r;
}
