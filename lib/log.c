/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include "log.h"

static int max_level = LOG_LVL_INFO;
static log_sink_fn sink;

static const char *const level_names[] = {
        [LOG_LVL_ERR] = "err", [LOG_LVL_WARNING] = "warning", [LOG_LVL_NOTICE] = "notice",
        [LOG_LVL_INFO] = "info", [LOG_LVL_DEBUG] = "debug",
};

void log_set_max_level(int level) { max_level = level; }
int log_get_max_level(void) { return max_level; }
void log_set_sink(log_sink_fn s) { sink = s; }

const char *log_level_name(int level) {
        if (level < LOG_LVL_ERR || level > LOG_LVL_DEBUG)
                return "?";
        return level_names[level];
}

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

static int log_va(int level, int error, const struct log_fields *fields, const char *fmt, va_list ap) {
        char msg[2048];
        int e = error < 0 ? -error : error;

        /* %m must print the error we were given, not whatever errno holds now. */
        errno = e;
        vsnprintf(msg, sizeof(msg), fmt, ap);

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
