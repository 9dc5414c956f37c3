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

/* Puts value into the bits that a format file ("config:0-7", "config1:0-15",
 * "config:0-7,32-35", "config:23") names, low bits first. */
static int place_term(int dirfd, const char *dev, const char *term, uint64_t value, struct perf_event_attr *a) {
        char path[256], fmt[128];
        __u64 *field;
        char *ranges, *save = NULL;
        unsigned used = 0;

        if (snprintf(path, sizeof(path), "%s/format/%s", dev, term) >= (int) sizeof(path))
                return -EINVAL;
        if (read_small(dirfd, path, fmt, sizeof(fmt)) < 0)
                return -EINVAL;
        ranges = strchr(fmt, ':');
        if (!ranges)
                return -EINVAL;
        *ranges++ = 0;
        if (strcmp(fmt, "config") == 0)
                field = &a->config;
        else if (strcmp(fmt, "config1") == 0)
                field = &a->config1;
        else if (strcmp(fmt, "config2") == 0)
                field = &a->config2;
        else
                return -EINVAL;
        for (char *r = strtok_r(ranges, ",", &save); r; r = strtok_r(NULL, ",", &save)) {
                char *dash = strchr(r, '-');
                int lo, hi;

                if (dash)
                        *dash = 0;
                if (parse_int(r, 0, 63, &lo) < 0 || parse_int(dash ? dash + 1 : r, lo, 63, &hi) < 0)
                        return -EINVAL;
                for (int b = lo; b <= hi; b++, used++)
                        if (used < 64 && (value >> used & 1))
                                *field |= UINT64_C(1) << b;
        }
        /* A value wider than its bits is not silently cut. */
        if (used == 0 || (used < 64 && value >> used))
                return -EINVAL;
        return 0;
}

/* A fixed period, not frequency mode: the kernel adjusts a frequency-mode period from
 * the tick, which then keeps running on a nohz_full CPU. The period turns the rate
 * budget (samples per second per CPU) into events per sample for a CPU busy with the
 * event at a reference rate: IBS op counts cycles (a 2 GHz core: 2e9 a second), PEBS
 * loads over the latency threshold (taken as 1e7 a second, a memory-bound core). Both
 * references are choices, not measurements: a CPU with fewer events takes fewer
 * samples, one with more takes more, in proportion. */
#define PMU_REF_IBS_OPS_S UINT64_C(2000000000)
#define PMU_REF_PEBS_LOADS_S UINT64_C(10000000)

uint64_t pmu_period(enum pmu_kind kind, uint64_t rate) {
        uint64_t ref = kind == PMU_AMD_IBS ? PMU_REF_IBS_OPS_S : PMU_REF_PEBS_LOADS_S;
        uint64_t period = ref / (rate ? rate : 1);

        if (kind == PMU_AMD_IBS)
                period &= ~UINT64_C(0xf);   /* IBS takes the period's low nibble as zero */
        return period ? period : 16;
}

int pmu_attr(const char *sys_root, const struct pmu_info *p, uint64_t rate, struct perf_event_attr *attr,
             const char **ret_why) {
        struct perf_event_attr a = {
                .size = sizeof(a),
                .type = (uint32_t) p->type,
                .sample_period = pmu_period(p->kind, rate),
                .sample_type = PERF_SAMPLE_ADDR,
                .exclude_kernel = 1,   /* user pages are what the daemon moves */
                .exclude_hv = 1,
        };
        char path[4096], terms[sizeof(p->event)], *save = NULL;
        _cleanup_close_ int dirfd = -1;

        if (p->kind != PMU_NONE && p->kind != PMU_ARM_SPE && p->type < 0) {
                *ret_why = "the PMU's perf type is unknown";
                return -EINVAL;
        }
        switch (p->kind) {
        case PMU_AMD_IBS:
                break;
        case PMU_INTEL_PEBS:
                snprintf(path, sizeof(path), "%s/bus/event_source/devices", sys_root);
                dirfd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
                if (dirfd < 0) {
                        *ret_why = "cannot open the event source devices";
                        return -errno;
                }
                snprintf(terms, sizeof(terms), "%s", p->event);
                for (char *t = strtok_r(terms, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
                        char *eq = strchr(t, '=');
                        uint64_t v = 1;         /* a bare term is a flag */

                        if (eq) {
                                *eq = 0;
                                const char *val = eq + 1;
                                if (parse_u64(val, 0, UINT64_MAX, &v) < 0 &&
                                    !(strncmp(val, "0x", 2) == 0 && parse_hex_u64_n(val + 2, strlen(val + 2), &v) == 0)) {
                                        *ret_why = "a term of the mem-loads event string does not parse";
                                        return -EINVAL;
                                }
                        }
                        if (place_term(dirfd, p->device, t, v, &a) < 0) {
                                *ret_why = "a term of the mem-loads event has no usable format file";
                                return -EINVAL;
                        }
                }
                a.precise_ip = 2;      /* PEBS: the address of the sampled load itself */
                break;
        case PMU_ARM_SPE:
                *ret_why = "Arm SPE records come through a perf AUX buffer, which numabalanced does not read";
                return -EOPNOTSUPP;
        default:
                *ret_why = "no PMU with precise memory sampling";
                return -EOPNOTSUPP;
        }
        *attr = a;
        return 0;
}
