/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Whose process it is (creds.h). */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <sys/stat.h>
#include <unistd.h>
#include "cleanup.h"
#include "creds.h"
#include "parse.h"

/* stat and status are a few KiB; a file near this is not the kernel's. */
#define CREDS_FILE_MAX (1024 * 1024)

static int gone(int r) {
        return r == -ENOENT ? -ESRCH : r;
}

int creds_read(const char *proc_root, pid_t pid, struct proc_creds *ret) {
        _cleanup_free_ char *stat_buf = NULL, *status_buf = NULL;
        _cleanup_close_ int dfd = -1;
        char dir[PATH_MAX];
        size_t stat_len, status_len;
        struct stat st;
        int r;

        if (!proc_root || pid <= 0 || !ret)
                return -EINVAL;
        snprintf(dir, sizeof(dir), "%s/%d", proc_root, (int) pid);
        /* Everything below through this directory: if the process goes and its pid is
         * reused meanwhile, the reads fail rather than describe the new one. */
        dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (dfd < 0)
                return gone(-errno);
        if (fstatat(dfd, "stat", &st, 0) < 0)
                return gone(-errno);
        r = parse_read_file_at(dfd, "stat", CREDS_FILE_MAX, &stat_buf, &stat_len);
        if (r >= 0)
                r = parse_read_file_at(dfd, "status", CREDS_FILE_MAX, &status_buf, &status_len);
        if (r < 0)
                return gone(r);
        /* A process that exits between open() and read() can leave nothing to read. */
        if (stat_len == 0 || status_len == 0)
                return -ESRCH;
        r = proc_stat_parse(stat_buf, stat_len, &ret->stat);
        if (r >= 0)
                r = proc_status_parse(status_buf, status_len, &ret->status);
        if (r < 0)
                return r;
        ret->stat_owner = st.st_uid;
        return 0;
}

uid_t creds_ptrace_user(const struct proc_creds *c) {
        const struct proc_status *s = &c->status;
        uid_t u = s->uid_real;

        if (u == CREDS_NOBODY || u == 0)
                return CREDS_NOBODY;
        if (s->uid_effective != u || s->uid_saved != u || s->uid_fs != u)
                return CREDS_NOBODY;
        if (s->gid_real == (gid_t) -1 || s->gid_effective != s->gid_real || s->gid_saved != s->gid_real)
                return CREDS_NOBODY;
        /* Not dumpable: its /proc files belong to root. */
        if (c->stat_owner != u)
                return CREDS_NOBODY;
        return u;
}
