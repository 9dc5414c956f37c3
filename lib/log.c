/* SPDX-License-Identifier: GPL-2.0-or-later */
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

int log_internal(int level, int error, const char *fmt, ...) {
        char msg[2048];
        va_list ap;
        int e = error < 0 ? -error : error;

        /* %m must print the error we were given, not whatever errno holds now. */
        errno = e;
        va_start(ap, fmt);
        vsnprintf(msg, sizeof(msg), fmt, ap);
        va_end(ap);

        if (sink)
                sink(level, e, msg);
        else
                fprintf(stderr, "%s\n", msg);
        return -e;
}
