// SPDX-License-Identifier: GPL-2.0-or-later
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include "cleanup.h"
#include "parse.h"
#include "pmu.h"

static int read_small(int dirfd, const char *path, char *buf, size_t size) {
        _cleanup_close_ int fd = openat(dirfd, path, O_RDONLY | O_CLOEXEC);
        ssize_t n;

        if (fd < 0)
                return -errno;
        n = read(fd, buf, size - 1);
        if (n < 0)
                return -errno;
        while (n > 0 && (buf[n - 1] == '\n' || buf[n - 1] == ' '))
                n--;
        buf[n] = 0;
        return 0;
}

static int read_type(int dirfd, const char *dev) {
        char path[128], buf[32];
        int type;

        snprintf(path, sizeof(path), "%s/type", dev);
        if (read_small(dirfd, path, buf, sizeof(buf)) < 0 || parse_int(buf, 0, INT32_MAX, &type) < 0)
                return -1;
        return type;
}

const char *pmu_kind_name(enum pmu_kind k) {
        switch (k) {
        case PMU_INTEL_PEBS: return "intel-pebs";
        case PMU_AMD_IBS:    return "amd-ibs";
        case PMU_ARM_SPE:    return "arm-spe";
        default:             return "none";
        }
}

int pmu_detect(const char *sys_root, struct pmu_info *ret) {
        _cleanup_close_ int dirfd = -1;
        _cleanup_closedir_ DIR *d = NULL;
        struct pmu_info info = { .kind = PMU_NONE, .type = -1 };
        char path[4096];
        struct dirent *de;
        int fd;

        snprintf(path, sizeof(path), "%s/bus/event_source/devices", sys_root);
        dirfd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (dirfd < 0)
                return -errno;

        /* Intel first: PEBS on "cpu", or on "cpu_core" (hybrid: the big cores). */
        static const char *const intel[] = { "cpu", "cpu_core" };
        for (size_t i = 0; i < ELEMENTSOF(intel); i++) {
                snprintf(path, sizeof(path), "%s/events/mem-loads", intel[i]);
                if (read_small(dirfd, path, info.event, sizeof(info.event)) == 0) {
                        info.kind = PMU_INTEL_PEBS;
                        snprintf(info.device, sizeof(info.device), "%s", intel[i]);
                        info.type = read_type(dirfd, intel[i]);
                        *ret = info;
                        return 0;
                }
        }
        if (faccessat(dirfd, "ibs_op", F_OK, 0) == 0) {
                info.kind = PMU_AMD_IBS;
                snprintf(info.device, sizeof(info.device), "ibs_op");
                info.type = read_type(dirfd, "ibs_op");
                *ret = info;
                return 0;
        }
        fd = dup(dirfd);
        if (fd < 0)
                return -errno;
        d = fdopendir(fd);
        if (!d) {
                close(fd);
                return -errno;
        }
        while ((de = readdir(d)))
                if (strncmp(de->d_name, "arm_spe_", 8) == 0) {
                        info.kind = PMU_ARM_SPE;
                        snprintf(info.device, sizeof(info.device), "%.63s", de->d_name);
                        info.type = read_type(dirfd, de->d_name);
                        break;
                }
        *ret = info;
        return 0;
}
