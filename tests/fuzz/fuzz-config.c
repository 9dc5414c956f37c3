/* SPDX-License-Identifier: GPL-2.0-or-later */
/* config_load() on arbitrary bytes as /etc/numabalanced.conf (through a memfd: the
 * loader takes a path). Either the file is valid and nothing was reported, or it is
 * refused (-EINVAL) with at least one error, each in the "FILE:LINE: ..." form that
 * --check-config prints, LINE one of the file's; never a crash or a leak (ASan's leak
 * checker runs at exit); a valid config obeys the cross-key rules, and its
 * config_copy() holds the same values and outlives it. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>
#include "config.h"
#include "fuzz.h"

/* "PATH:LINE: ", LINE between 1 and the number of lines of the input. */
static bool has_line(const char *msg, const char *path, size_t n_lines) {
        size_t plen = strlen(path);
        unsigned long line = 0;
        const char *p;

        if (strncmp(msg, path, plen) != 0 || msg[plen] != ':')
                return false;
        for (p = msg + plen + 1; *p >= '0' && *p <= '9' && line <= n_lines; p++)
                line = line * 10 + (unsigned long) (*p - '0');
        return p > msg + plen + 1 && p[0] == ':' && p[1] == ' ' && line >= 1 && line <= n_lines;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        struct nb_config cfg = {}, copy;
        size_t n_lines = 1;
        struct config_errors errs = {};
        char path[64];
        int fd, r;

        fd = memfd_create("fuzz-config", MFD_CLOEXEC);
        if (fd < 0)
                return 0;
        /* A memfd is made with mode 0777: the loader refuses a file others may write. */
        if (fchmod(fd, 0600) < 0 || (size && write(fd, data, size) != (ssize_t) size)) {
                close(fd);
                return 0;
        }
        for (size_t i = 0; i < size; i++)
                n_lines += data[i] == '\n';
        snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
        r = config_load(path, 0, &cfg, &errs, NULL);
        close(fd);
        if (r == 0) {
                FUZZ_ASSERT(errs.n == 0);
                FUZZ_ASSERT(cfg.scan_min_ms <= cfg.scan_max_ms);
                FUZZ_ASSERT(cfg.tick_ms >= 100 && cfg.tick_ms <= 60000);
                FUZZ_ASSERT(cfg.cgroup_root && cfg.cgroup_root[0] == '/');
                for (size_t i = 0; i < cfg.n_cgroups; i++)
                        FUZZ_ASSERT(cfg.cgroups[i].path && cfg.cgroups[i].path[0] == '/');
                r = config_copy(&copy, &cfg);
                FUZZ_ASSERT(r == 0 || r == -ENOMEM);
                if (r == 0) {
                        FUZZ_ASSERT(strcmp(copy.cgroup_root, cfg.cgroup_root) == 0 && copy.cgroup_root != cfg.cgroup_root);
                        FUZZ_ASSERT(strcmp(copy.metrics_path, cfg.metrics_path) == 0 && copy.tick_ms == cfg.tick_ms);
                        FUZZ_ASSERT(copy.n_cgroups == cfg.n_cgroups);
                        for (size_t i = 0; i < copy.n_cgroups; i++)
                                FUZZ_ASSERT(strcmp(copy.cgroups[i].path, cfg.cgroups[i].path) == 0 &&
                                            copy.cgroups[i].mode == cfg.cgroups[i].mode);
                }
                config_done(&cfg);
                if (r == 0) {
                        /* Read after the source is gone: ASan sees anything shared. */
                        FUZZ_ASSERT(copy.cgroup_root[0] == '/');
                        for (size_t i = 0; i < copy.n_cgroups; i++)
                                FUZZ_ASSERT(copy.cgroups[i].path[0] == '/');
                        config_done(&copy);
                }
        } else {
                FUZZ_ASSERT(r == -EINVAL || r == -ENOMEM || r == -EFBIG || r == -E2BIG);
                if (r == -EINVAL) {
                        FUZZ_ASSERT(errs.n > 0);
                        for (size_t i = 0; i < errs.n; i++)
                                FUZZ_ASSERT(has_line(errs.msgs[i], path, n_lines));
                }
        }
        config_errors_done(&errs);
        return 0;
}
