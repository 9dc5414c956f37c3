/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Logging. lib/ logs at debug level only; the daemon and numabalancectl decide
 * where messages go (stderr, or the journal under systemd) and which level shows.
 * log_*_errno() return -abs(error) so that "return log_error_errno(r, ...)" logs
 * once, where the error is handled, and passes the error on. %m is the error's text. */
#pragma once
#include <errno.h>
#include <stdarg.h>
#include "cleanup.h"

enum log_level { LOG_LVL_ERR = 3, LOG_LVL_WARNING = 4, LOG_LVL_NOTICE = 5, LOG_LVL_INFO = 6, LOG_LVL_DEBUG = 7 };

/* A sink receives the level, the error (0 if none) and the formatted message. */
typedef void (*log_sink_fn)(int level, int error, const char *msg);

void log_set_max_level(int level);
int log_get_max_level(void);
void log_set_sink(log_sink_fn sink);       /* NULL: stderr */
int log_parse_level(const char *s);        /* "err", "warning", "notice", "info", "debug"; -EINVAL */
const char *log_level_name(int level);

int log_internal(int level, int error, const char *fmt, ...) _printf_(3, 4);

#define log_full_errno(level, error, ...)                                       \
        ({ int _l = (level), _e = (error);                                      \
           (_l <= log_get_max_level()) ? log_internal(_l, _e, __VA_ARGS__)      \
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
