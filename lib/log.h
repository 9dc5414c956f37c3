/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Logging. lib/ logs at debug level only; the daemon and numabalancectl decide
 * where messages go (stderr, or the journal under systemd) and which level shows.
 * log_*_errno() return -abs(error) so that "return log_error_errno(r, ...)" logs
 * once, where the error is handled, and passes the error on. %m is the error's text. */
#pragma once
#include <errno.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "cleanup.h"

enum log_level { LOG_LVL_ERR = 3, LOG_LVL_WARNING = 4, LOG_LVL_NOTICE = 5, LOG_LVL_INFO = 6, LOG_LVL_DEBUG = 7 };

/* Structured fields attached to one message, for a sink that can keep them (the
 * journal): NAME=value pairs, NAME in journal style (A-Z, 0-9, '_'). The stderr sink
 * prints the message only, so a message must read well without its fields. Values
 * are referenced, not copied (strings), or formatted into the field (numbers): a
 * struct log_fields lives on the caller's stack around one log call. */
#define LOG_FIELDS_MAX 8
struct log_field {
        const char *name;
        const char *value;
        char buf[24];
};
struct log_fields {
        size_t n;
        struct log_field f[LOG_FIELDS_MAX];
};
/* Beyond LOG_FIELDS_MAX fields, the extra ones are dropped. A NULL string is "-". */
void log_fields_str(struct log_fields *lf, const char *name, const char *value);
void log_fields_i64(struct log_fields *lf, const char *name, int64_t value);
void log_fields_u64(struct log_fields *lf, const char *name, uint64_t value);

/* A sink receives the level, the error (0 if none), the fields (NULL if none) and the
 * formatted message. It may be called from any thread. */
typedef void (*log_sink_fn)(int level, int error, const struct log_fields *fields, const char *msg);

void log_set_max_level(int level);
int log_get_max_level(void);
void log_set_sink(log_sink_fn sink);       /* NULL: stderr */
int log_parse_level(const char *s);        /* "err", "warning", "notice", "info", "debug"; -EINVAL */

/* Copies in to out (size bytes, always terminated, cut between characters) with
 * every control character written as \xNN, byte by byte: C0 and DEL, C1 (U+0080 to
 * U+009F, 0xc2 0x80-0x9f in UTF-8) and a byte of 0x80-0x9f that is not part of valid
 * UTF-8 (C1 to an 8-bit terminal); returns the length written. Other text, valid
 * UTF-8 or not, passes. Every message goes through it before it reaches a sink: one
 * log line stays one line, and no tenant's name drives the terminal or the syslog
 * reader showing it. Structured field values are not escaped (the journal stores
 * them as they are). */
size_t log_escape(const char *in, char *out, size_t size);

/* A message that users can cause at will (a junk xattr on each of their 20,000
 * cgroups, a flood of connections) is rate limited: at most burst messages per
 * interval_ms. The caller passes the time (ms of a monotonic clock), so the arithmetic
 * is tested without waiting. Not thread-safe: one limiter per message, used on one
 * thread. Initialise with LOG_RATELIMIT(interval_ms, burst). */
struct log_ratelimit {
        uint64_t interval_ms;
        unsigned burst;
        uint64_t begin_ms;         /* of the current interval; 0 before the first message */
        unsigned n;                /* messages allowed in it */
        uint64_t suppressed;       /* refused since the last one allowed */
};
#define LOG_RATELIMIT(interval, b) ((struct log_ratelimit) { .interval_ms = (interval), .burst = (b) })
/* Whether to log this message now. When it is allowed, *ret_suppressed (may be NULL)
 * is how many were refused since the last one allowed: say it in the message. */
bool log_ratelimit_ok(struct log_ratelimit *rl, uint64_t now_ms, uint64_t *ret_suppressed);

int log_internal(int level, int error, const char *fmt, ...) _printf_(3, 4);
int log_internal_fields(int level, int error, const struct log_fields *fields, const char *fmt, ...) _printf_(4, 5);

#define log_full_errno(level, error, ...)                                       \
        ({ int _l = (level), _e = (error);                                      \
           (_l <= log_get_max_level()) ? log_internal(_l, _e, __VA_ARGS__)      \
                                       : -(_e < 0 ? -_e : _e); })

/* The same with structured fields (fields may be NULL). */
#define log_full_errno_fields(level, error, fields, ...)                        \
        ({ int _l = (level), _e = (error);                                      \
           (_l <= log_get_max_level()) ? log_internal_fields(_l, _e, (fields), __VA_ARGS__) \
                                       : -(_e < 0 ? -_e : _e); })

#define log_debug(...)   log_full_errno(LOG_LVL_DEBUG, 0, __VA_ARGS__)
#define log_info(...)    log_full_errno(LOG_LVL_INFO, 0, __VA_ARGS__)
#define log_notice(...)  log_full_errno(LOG_LVL_NOTICE, 0, __VA_ARGS__)
#define log_warning(...) log_full_errno(LOG_LVL_WARNING, 0, __VA_ARGS__)
#define log_error(...)   log_full_errno(LOG_LVL_ERR, 0, __VA_ARGS__)

#define log_debug_errno(e, ...)   log_full_errno(LOG_LVL_DEBUG, e, __VA_ARGS__)
#define log_info_errno(e, ...)    log_full_errno(LOG_LVL_INFO, e, __VA_ARGS__)
#define log_warning_errno(e, ...) log_full_errno(LOG_LVL_WARNING, e, __VA_ARGS__)
#define log_error_errno(e, ...)   log_full_errno(LOG_LVL_ERR, e, __VA_ARGS__)
