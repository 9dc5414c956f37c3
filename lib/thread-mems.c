/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The nodes every thread of a process may allocate on (thread-mems.h). */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "cleanup.h"
#include "log.h"
#include "thread-mems.h"

int thread_mems_split(const char *cgroup_root, const char *path) {
        char p[PATH_MAX], buf[32];
        ssize_t n;
        int fd;

        if (snprintf(p, sizeof(p), "%s/%s/cgroup.type", cgroup_root, path) >= (int) sizeof(p))
                return -ENAMETOOLONG;
        fd = open(p, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
        if (fd < 0)
                return errno == ENOENT ? 0 : -errno;
        n = read(fd, buf, sizeof(buf) - 1);
        close(fd);
        if (n < 0)
                return -errno;
        buf[n] = 0;
        buf[strcspn(buf, "\n")] = 0;
        return strcmp(buf, "domain") != 0;
}

int thread_mems_allowed(const char *proc_root, pid_t pid, nb_nodemask *mems) {
        _cleanup_free_ pid_t *tids = NULL;
        size_t n = 0;
        int r = proc_list_tasks(proc_root, pid, &tids, &n);

        if (r < 0)
                return r;
        if (n > THREAD_MEMS_MAX)
                return -E2BIG;
        for (size_t i = 0; i < n; i++) {
                struct proc_status st;

                r = proc_read_task_status(proc_root, pid, tids[i], &st);
                if (r == -ENOENT || r == -ESRCH)
                        continue;       /* ended since the listing: allocates nothing more */
                if (r < 0)
                        return r;
                if (st.has_mems_allowed)
                        nodemask_and(mems, mems, &st.mems_allowed);
        }
        return 0;
}

int thread_mems_narrow(const char *proc_root, const char *cgroup_root, const char *path, pid_t pid,
                       struct proc_status *status) {
        int r;

        if (!status->has_mems_allowed || !cgroup_root || !path)
                return 0;
        r = thread_mems_split(cgroup_root, path);
        if (r <= 0)
                return r;
        r = thread_mems_allowed(proc_root, pid, &status->mems_allowed);
        if (r == -E2BIG) {
                log_debug("pid=%d: more than %d threads in a threaded cgroup: no node allowed to all of them "
                          "is looked for, nothing of it moves", (int) pid, THREAD_MEMS_MAX);
                nodemask_zero(&status->mems_allowed);
                return 1;
        }
        return r < 0 ? r : 1;
}
