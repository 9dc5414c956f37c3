/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include "log.h"
#include "utf8.h"

static int max_level = LOG_LVL_INFO;
static log_sink_fn sink;

static const char *const level_names[] = {
        [LOG_LVL_ERR] = "err", [LOG_LVL_WARNING] = "warning", [LOG_LVL_NOTICE] = "notice",
        [LOG_LVL_INFO] = "info", [LOG_LVL_DEBUG] = "debug",
};

void log_set_max_level(int level) { max_level = level; }
int log_get_max_level(void) { return max_level; }
void log_set_sink(log_sink_fn s) { sink = s; }

int log_parse_level(const char *s) {
        for (int l = LOG_LVL_ERR; l <= LOG_LVL_DEBUG; l++)
                if (strcmp(s, level_names[l]) == 0)
                        return l;
        if (strcmp(s, "error") == 0)
                return LOG_LVL_ERR;
        return -EINVAL;
}

static struct log_field *field_add(struct log_fields *lf, const char *name) {
        struct log_field *f;
        if (!lf || lf->n >= LOG_FIELDS_MAX)
                return NULL;
        f = &lf->f[lf->n++];
        f->name = name;
        f->buf[0] = 0;
        return f;
}

void log_fields_str(struct log_fields *lf, const char *name, const char *value) {
        struct log_field *f = field_add(lf, name);
        if (f)
                f->value = value ? value : "-";
}

void log_fields_i64(struct log_fields *lf, const char *name, int64_t value) {
        struct log_field *f = field_add(lf, name);
        if (f) {
                snprintf(f->buf, sizeof(f->buf), "%" PRId64, value);
                f->value = f->buf;
        }
}

void log_fields_u64(struct log_fields *lf, const char *name, uint64_t value) {
        struct log_field *f = field_add(lf, name);
        if (f) {
                snprintf(f->buf, sizeof(f->buf), "%" PRIu64, value);
                f->value = f->buf;
        }
}

size_t log_escape(const char *in, char *out, size_t size) {
        static const char hex[] = "0123456789abcdef";
        size_t o = 0;

        if (size == 0)
                return 0;
        for (const unsigned char *c = (const unsigned char *) in; *c;) {
                size_t n = utf8_seq(c);
                /* Escaped: C0 and DEL; C1 (U+0080-U+009F: CSI, OSC and the rest, which a
                 * UTF-8 terminal acts on), all of its bytes; and a byte of 0x80-0x9F
                 * that starts no valid sequence, which an 8-bit terminal takes for C1.
                 * Other bytes, valid UTF-8 or not, pass as they are. */
                bool esc = n ? utf8_is_control(utf8_code_point(c, n)) : *c <= 0x9f;

                if (n == 0)
                        n = 1;
                if (o + (esc ? 4 * n : n) >= size)
                        break;
                for (size_t i = 0; i < n; i++, c++) {
                        if (esc) {
                                out[o++] = '\\';
                                out[o++] = 'x';
                                out[o++] = hex[*c >> 4];
                                out[o++] = hex[*c & 15];
                        } else
                                out[o++] = (char) *c;
                }
        }
        out[o] = 0;
        return o;
}

bool log_ratelimit_ok(struct log_ratelimit *rl, uint64_t now_ms, uint64_t *ret_suppressed) {
        if (rl->begin_ms == 0 || now_ms >= rl->begin_ms + rl->interval_ms || now_ms < rl->begin_ms) {
                rl->begin_ms = now_ms ? now_ms : 1;
                rl->n = 0;
        }
        if (rl->n >= rl->burst) {
                rl->suppressed++;
                return false;
        }
        rl->n++;
        if (ret_suppressed)
                *ret_suppressed = rl->suppressed;
        rl->suppressed = 0;
        return true;
}

static int log_va(int level, int error, const struct log_fields *fields, const char *fmt, va_list ap)
        _printf_(4, 0);
static int log_va(int level, int error, const struct log_fields *fields, const char *fmt, va_list ap) {
        char raw[2048], msg[4 * sizeof(raw)];
        int e = error < 0 ? -error : error;

        /* %m must print the error we were given, not whatever errno holds now. */
        errno = e;
        vsnprintf(raw, sizeof(raw), fmt, ap);
        /* Messages carry text that unprivileged users choose (comm names, cgroup and
         * file paths): a newline there must not start a forged line of our log, nor an
         * escape sequence drive the operator's terminal. */
        log_escape(raw, msg, sizeof(msg));

        if (sink)
                sink(level, e, fields && fields->n ? fields : NULL, msg);
        else
                fprintf(stderr, "%s\n", msg);
        return -e;
}

int log_internal(int level, int error, const char *fmt, ...) {
        va_list ap;
        int r;

        va_start(ap, fmt);
        r = log_va(level, error, NULL, fmt, ap);
        va_end(ap);
        return r;
}

int log_internal_fields(int level, int error, const struct log_fields *fields, const char *fmt, ...) {
        va_list ap;
        int r;

        va_start(ap, fmt);
        r = log_va(level, error, fields, fmt, ap);
        va_end(ap);
        return r;
}
