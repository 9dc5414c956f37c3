/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <unistd.h>
/* The sink would be named as every message's CODE_FILE/CODE_LINE: leave them out. */
#define SD_JOURNAL_SUPPRESS_LOCATION 1
#include <systemd/sd-journal.h>
#include "journal-log.h"
#include "log.h"
#include "parse.h"

/* systemd sets JOURNAL_STREAM=DEV:INO when stdout/stderr are connected to the
 * journal; it is inherited by children whose stderr may go elsewhere, so it only
 * counts when it names our own stderr. */
static bool stderr_is_journal(void) {
        const char *e = getenv("JOURNAL_STREAM"), *colon;
        uint64_t dev, ino;
        struct stat st;

        if (!e || !(colon = strchr(e, ':')))
                return false;
        if (parse_u64_n(e, (size_t) (colon - e), 0, UINT64_MAX, &dev) < 0 ||
            parse_u64(colon + 1, 0, UINT64_MAX, &ino) < 0)
                return false;
        if (fstat(STDERR_FILENO, &st) < 0)
                return false;
        return (uint64_t) st.st_dev == dev && (uint64_t) st.st_ino == ino;
}

/* Structured fields straight to the journal: the message, its priority, errno, and
 * the fields the message carries (NUMABALANCED_CGROUP=, NUMABALANCED_PID=, ...). */
static void journal_sink(int level, int error, const struct log_fields *fields, const char *msg) {
        char *strs[LOG_FIELDS_MAX + 4] = {};
        struct iovec iov[LOG_FIELDS_MAX + 4];
        size_t n = 0;
        int r = -ENOMEM;

        if (asprintf(&strs[n++], "MESSAGE=%s", msg) < 0 ||
            asprintf(&strs[n++], "PRIORITY=%i", level) < 0 ||
            asprintf(&strs[n++], "SYSLOG_IDENTIFIER=numabalanced") < 0 ||
            (error > 0 && asprintf(&strs[n++], "ERRNO=%i", error) < 0)) {
                strs[n - 1] = NULL;
                goto out;
        }
        for (size_t i = 0; fields && i < fields->n; i++)
                if (asprintf(&strs[n++], "%s=%s", fields->f[i].name, fields->f[i].value) < 0) {
                        strs[n - 1] = NULL;
                        goto out;
                }
        for (size_t i = 0; i < n; i++)
                iov[i] = (struct iovec) { .iov_base = strs[i], .iov_len = strlen(strs[i]) };
        r = sd_journal_sendv(iov, (int) n);
out:
        for (size_t i = 0; i < n; i++)
                free(strs[i]);
        if (r < 0)
                fprintf(stderr, "<%d>%s\n", level, msg);  /* stderr is the journal too */
}

bool journal_log_setup(void) {
        if (!stderr_is_journal())
                return false;
        log_set_sink(journal_sink);
        return true;
}
