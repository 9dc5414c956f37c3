/* SPDX-License-Identifier: GPL-2.0-or-later */
/* config_load() on arbitrary bytes as /etc/numabalanced.conf (through a memfd: the
 * loader, like iniparser, takes a path). Either the file is valid and nothing was
 * reported, or it is refused (-EINVAL) with at least one error, each in the
 * "FILE:LINE: ..." or "FILE: ..." form that --check-config prints; never a crash or a
 * leak (ASan's leak checker runs at exit), and a valid config obeys the cross-key
 * rules. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>
#include "config.h"
#include "fuzz.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        struct nb_config cfg = {};
        struct config_errors errs = {};
        char path[64];
        int fd, r;

        fd = memfd_create("fuzz-config", MFD_CLOEXEC);
        if (fd < 0)
                return 0;
        if (size && write(fd, data, size) != (ssize_t) size) {
                close(fd);
                return 0;
        }
        snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
        r = config_load(path, &cfg, &errs);
        close(fd);
        if (r == 0) {
                FUZZ_ASSERT(errs.n == 0);
                FUZZ_ASSERT(cfg.scan_min_ms <= cfg.scan_max_ms);
                FUZZ_ASSERT(cfg.tick_ms >= 100 && cfg.tick_ms <= 60000);
                FUZZ_ASSERT(cfg.cgroup_root && cfg.cgroup_root[0] == '/');
                for (size_t i = 0; i < cfg.n_cgroups; i++)
                        FUZZ_ASSERT(cfg.cgroups[i].path && cfg.cgroups[i].path[0] == '/');
                config_done(&cfg);
        } else {
                FUZZ_ASSERT(r == -EINVAL || r == -ENOMEM || r == -EFBIG || r == -E2BIG);
                if (r == -EINVAL) {
                        FUZZ_ASSERT(errs.n > 0);
                        for (size_t i = 0; i < errs.n; i++)
                                FUZZ_ASSERT(strncmp(errs.msgs[i], path, strlen(path)) == 0 &&
                                            errs.msgs[i][strlen(path)] == ':');
                }
        }
        config_errors_done(&errs);
        return 0;
}
