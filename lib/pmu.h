/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Which precise memory-access sampling this machine's PMU offers, from
 * <sys_root>/bus/event_source/devices:
 *   Intel PEBS load latency: cpu/events/mem-loads (cpu_core/ on hybrid parts);
 *   AMD IBS op: ibs_op/ (its type file gives the perf type);
 *   Arm SPE: arm_spe_<n>/.
 * Virtual machines usually have none (no PMU passed through, or no precise events):
 * then page-level sampling is off and the scheduler sources are all there is. */
#pragma once
#include <stdint.h>
#include <linux/perf_event.h>

enum pmu_kind { PMU_NONE, PMU_INTEL_PEBS, PMU_AMD_IBS, PMU_ARM_SPE };

struct pmu_info {
        enum pmu_kind kind;
        char device[64];              /* the event_source device ("cpu", "ibs_op", "arm_spe_0") */
        int type;                     /* its perf type (the device's type file), -1 if unread */
        char event[128];              /* Intel: the mem-loads event string, e.g. "event=0xcd,umask=0x1,ldlat=3" */
};

/* Returns 0 with *ret filled (kind PMU_NONE when nothing was found, which is not an
 * error), or -errno when the directory cannot be read at all (-ENOENT: no perf in
 * this kernel, or sysfs not mounted). */
int pmu_detect(const char *sys_root, struct pmu_info *ret);
const char *pmu_kind_name(enum pmu_kind k);

/* Fills *attr to sample memory accesses with p's PMU: rate samples per second per CPU
 * (perf's frequency mode), each with its data address (PERF_SAMPLE_ADDR).
 *   Intel PEBS: the mem-loads event string's terms (event=0xcd,umask=0x1,ldlat=3)
 *     placed by the device's format/ files (config:0-7, config1:0-15, ...), precise;
 *   AMD IBS op: the device's type, config 0.
 * Arm SPE gives -EOPNOTSUPP: its records come through a perf AUX buffer, not as
 * samples a BPF program sees. -EINVAL when the event string or a format file does not
 * parse; *ret_why names what. */
/* The fixed sample_period for a budget of rate samples per second per busy CPU. */
uint64_t pmu_period(enum pmu_kind kind, uint64_t rate);
int pmu_attr(const char *sys_root, const struct pmu_info *p, uint64_t rate, struct perf_event_attr *attr,
             const char **ret_why);
