/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "cleanup.h"
#include "proc-lines.h"

const struct proc_lines_opts proc_lines_default = {
        .chunk = PROC_LINES_CHUNK,
        .line_max = PROC_LINE_MAX,
        .vmas_max = PROC_VMAS_MAX,
};

/* The reader's state between chunks: buf holds at most line_max bytes of a line not
 * yet ended, then the next chunk. */
struct splitter {
        const struct proc_lines_opts *o;
        proc_line_fn fn;
        void *ctx;
        bool skipping;     /* inside a line already handed over cut: drop up to its '\n' */
        uint64_t cut;
};

/* A line of ll bytes that ended (its '\n' seen, or the end of the input). */
static int line_ended(struct splitter *s, const char *line, size_t ll) {
        if (s->skipping) {
                s->skipping = false;  /* the tail of a cut line: handed over already */
                return 0;
        }
        if (ll > s->o->line_max) {
                s->cut++;
                return s->fn(s->ctx, line, s->o->line_max, true);
        }
        return s->fn(s->ctx, line, ll, false);
}

/* The complete lines of buf[0..len); *ret_used: the bytes they took. */
static int split_lines(struct splitter *s, const char *buf, size_t len, size_t *ret_used) {
        size_t pos = 0;
        int r;

        for (;;) {
                const char *nl = memchr(buf + pos, '\n', len - pos);
                size_t ll;

                if (!nl)
                        break;
                ll = (size_t) (nl - (buf + pos));
                r = line_ended(s, buf + pos, ll);
                if (r < 0)
                        return r;
                pos += ll + 1;
        }
        *ret_used = pos;
        return 0;
}

/* What is left after the complete lines, len bytes of a line that goes on: kept, or
 * handed over cut and dropped once it passes the cap. Returns the bytes kept. */
static int keep_partial(struct splitter *s, const char *rest, size_t len, size_t *ret_kept) {
        int r;

        *ret_kept = 0;
        if (s->skipping)
                return 0;
        if (len <= s->o->line_max) {
                *ret_kept = len;
                return 0;
        }
        s->cut++;
        s->skipping = true;
        r = s->fn(s->ctx, rest, s->o->line_max, true);
        return r < 0 ? r : 0;
}

static ssize_t read_some(int fd, char *buf, size_t n) {
        for (;;) {
                ssize_t k = read(fd, buf, n);
                if (k >= 0 || errno != EINTR)
                        return k;
        }
}

int proc_lines_fd(int fd, const struct proc_lines_opts *o, proc_line_fn fn, void *ctx, uint64_t *ret_cut) {
        struct splitter s = { .o = o, .fn = fn, .ctx = ctx };
        _cleanup_free_ char *buf = NULL;
        size_t len = 0;
        int r;

        if (fd < 0 || !o || !fn || o->chunk == 0 || o->line_max == 0)
                return -EINVAL;
        buf = malloc(o->chunk + o->line_max);
        if (!buf)
                return -ENOMEM;
        for (;;) {
                ssize_t n = read_some(fd, buf + len, o->chunk);
                size_t used, kept;

                if (n < 0)
                        return errno == ENOENT ? -ESRCH : -errno;
                if (n == 0)
                        break;
                len += (size_t) n;
                r = split_lines(&s, buf, len, &used);
                if (r >= 0)
                        r = keep_partial(&s, buf + used, len - used, &kept);
                if (r < 0)
                        return r;
                memmove(buf, buf + used, kept);
                len = kept;
        }
        /* A last line without its '\n'. */
        if (len > 0 || s.skipping) {
                r = line_ended(&s, buf, len);
                if (r < 0)
                        return r;
        }
        if (ret_cut)
                *ret_cut = s.cut;
        return 0;
}

int proc_lines_path(const char *path, const struct proc_lines_opts *o, proc_line_fn fn, void *ctx,
                    uint64_t *ret_cut) {
        _cleanup_close_ int fd = -1;

        if (!path)
                return -EINVAL;
        fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY);
        if (fd < 0)
                return errno == ENOENT ? -ESRCH : -errno;
        return proc_lines_fd(fd, o, fn, ctx, ret_cut);
}

int proc_lines_buf(const char *buf, size_t len, const struct proc_lines_opts *o, proc_line_fn fn, void *ctx,
                   uint64_t *ret_cut) {
        struct splitter s = { .o = o, .fn = fn, .ctx = ctx };
        size_t used = 0;
        int r;

        if ((!buf && len > 0) || !o || !fn || o->line_max == 0)
                return -EINVAL;
        if (len > 0) {
                r = split_lines(&s, buf, len, &used);
                if (r >= 0 && used < len)
                        r = line_ended(&s, buf + used, len - used);
                if (r < 0)
                        return r;
        }
        if (ret_cut)
                *ret_cut = s.cut;
        return 0;
}

char *proc_lines_pid_path(const char *proc_root, pid_t pid, const char *name) {
        char *path;

        if (!proc_root || pid <= 0 || asprintf(&path, "%s/%d/%s", proc_root, (int) pid, name) < 0)
                return NULL;
        return path;
}
