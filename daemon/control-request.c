// SPDX-License-Identifier: GPL-2.0-or-later
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include "control-request.h"
#include "parse.h"

static int hexval(char c) {
        if (c >= '0' && c <= '9')
                return c - '0';
        if (c >= 'A' && c <= 'F')
                return c - 'A' + 10;
        if (c >= 'a' && c <= 'f')
                return c - 'a' + 10;
        return -1;
}

/* The encoded path w[0..n) decoded into q->text at *used; returns its offset, or -1
 * (not a path: no leading '/', a bad escape, a NUL). */
static int decode_path(const char *w, size_t n, struct control_request *q, size_t *used) {
        size_t o = *used, start = o;

        if (n == 0 || w[0] != '/')
                return -1;
        for (size_t i = 0; i < n; i++) {
                unsigned char b = (unsigned char) w[i];
                if (b == '%') {
                        int h, l;
                        if (i + 2 >= n)
                                return -1;
                        h = hexval(w[i + 1]);
                        l = hexval(w[i + 2]);
                        if (h < 0 || l < 0 || (h == 0 && l == 0))
                                return -1;
                        b = (unsigned char) (h << 4 | l);
                        i += 2;
                } else if (!control_path_byte_plain(b))
                        return -1;
                if (o + 1 >= sizeof(q->text))
                        return -1;
                q->text[o++] = (char) b;
        }
        q->text[o++] = 0;
        *used = o;
        return (int) start;
}

static int parse_pid(const char *w, size_t n, pid_t *ret) {
        char num[16];
        uint64_t v;

        if (n == 0 || n >= sizeof(num))
                return -1;
        memcpy(num, w, n);
        num[n] = 0;
        if (parse_u64(num, 1, INT32_MAX, &v) < 0)
                return -1;
        *ret = (pid_t) v;
        return 0;
}

/* after=CURSOR */
static int parse_cursor(const char *w, size_t n, struct control_request *q, size_t *used) {
        if (n < 2)
                return -1;
        switch (w[0]) {
        case 'p':
                q->after = 'p';
                return parse_pid(w + 1, n - 1, &q->after_pid);
        case 'c':
        case 's':
                q->after = w[0];
                q->after_path = decode_path(w + 1, n - 1, q, used);
                return q->after_path < 0 ? -1 : 0;
        }
        return -1;
}

/* The words after "list". */
static int parse_list(const char *args, size_t len, struct control_request *q, size_t *used, const char **ret_error) {
        size_t i = 0;
        bool first = true;

        if (len == 0) {
                *ret_error = "list: a trailing space";
                return -EINVAL;
        }
        while (i < len) {
                const char *w = args + i, *sp = memchr(w, ' ', len - i);
                size_t n = sp ? (size_t) (sp - w) : len - i;
                struct control_filter *f;

                if (first && n > 6 && memcmp(w, "after=", 6) == 0) {
                        if (parse_cursor(w + 6, n - 6, q, used) < 0) {
                                *ret_error = "list: not a valid cursor after= (give back the reply's \"next\")";
                                return -EINVAL;
                        }
                } else {
                        if (q->n_filters >= CONTROL_FILTERS_MAX) {
                                *ret_error = "list: at most " CONTROL_STRINGIFY(CONTROL_FILTERS_MAX) " cgroups or PIDs";
                                return -EINVAL;
                        }
                        f = &q->filters[q->n_filters++];
                        *f = (struct control_filter) { .path = -1 };
                        if (n && w[0] == '/')
                                f->path = decode_path(w, n, q, used);
                        if (f->path < 0 && parse_pid(w, n, &f->pid) < 0) {
                                *ret_error = "list: not a cgroup path (percent-encoded, from \"/\") nor a PID";
                                return -EINVAL;
                        }
                }
                first = false;
                i += n + 1;
                if (sp && i == len) {
                        *ret_error = "list: a trailing space";
                        return -EINVAL;
                }
        }
        return 0;
}

int control_request_parse(const char *buf, size_t len, struct control_request *ret, const char **ret_error) {
        struct control_request q = { .path = -1, .after_path = -1 };
        char line[CONTROL_REQUEST_MAX + 1];
        size_t used = 0;

        if (len && buf[len - 1] == '\r')
                len--;
        if (len == 0) {
                *ret_error = CONTROL_ERROR_EMPTY;
                return -EINVAL;
        }
        if (len > CONTROL_REQUEST_MAX - 1) {
                *ret_error = CONTROL_ERROR_TOO_LONG;
                return -EINVAL;
        }
        for (size_t i = 0; i < len; i++)
                if ((unsigned char) buf[i] < 0x20 || (unsigned char) buf[i] >= 0x7f) {
                        *ret_error = "request contains a control or non-ASCII byte";
                        return -EINVAL;
                }
        memcpy(line, buf, len);
        line[len] = 0;

        if (strcmp(line, "status") == 0)
                q.cmd = CONTROL_STATUS;
        else if (strcmp(line, "list") == 0)
                q.cmd = CONTROL_LIST;
        else if (strncmp(line, "list ", 5) == 0) {
                q.cmd = CONTROL_LIST;
                if (parse_list(line + 5, len - 5, &q, &used, ret_error) < 0)
                        return -EINVAL;
        } else if (strcmp(line, "explain") == 0) {
                *ret_error = "explain needs a PID or a cgroup";
                return -EINVAL;
        } else if (strncmp(line, "explain ", 8) == 0) {
                q.cmd = CONTROL_EXPLAIN;
                if (line[8] == '/')
                        q.path = decode_path(line + 8, len - 8, &q, &used);
                if (q.path < 0 && parse_pid(line + 8, len - 8, &q.pid) < 0) {
                        *ret_error = "explain: not a valid PID (a decimal number from 1) nor a cgroup path";
                        return -EINVAL;
                }
        } else {
                *ret_error = "unknown command (accepted: status, list, explain PID|CGROUP)";
                return -EINVAL;
        }
        *ret = q;
        return 0;
}

int control_request_cursor_format(char section, const char *path, pid_t pid, char *buf, size_t size) {
        int n;

        if (size < 2)
                return -1;
        if (section == 'p') {
                n = snprintf(buf, size, "p%d", (int) pid);
                return n < 0 || (size_t) n >= size ? -1 : n;
        }
        buf[0] = section;
        n = control_path_encode(path, buf + 1, size - 1);
        return n < 0 ? -1 : n + 1;
}
