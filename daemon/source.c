// SPDX-License-Identifier: GPL-2.0-or-later
#include <errno.h>
#include "build-config.h"
#include "log.h"
#include "pmu.h"
#include "source.h"
#if HAVE_BPF
#include "bpf/sched-loader.h"

/* What an EPERM from bpf() usually means, for the operator. */
static const char *hint(int r) {
        return r == -EPERM || r == -EACCES ? " (needs CAP_BPF and CAP_PERFMON, or CAP_SYS_ADMIN)" : "";
}
#endif

int placement_source_choose(enum sample_source want, const struct topology *t,
                            const struct placement_source **ret) {
        if (want == SOURCE_PROC) {
                log_info("Sampling where threads run from /proc (source proc): [sample] source = proc");
                *ret = &placement_source_proc;
                return 0;
        }
#if HAVE_BPF
        const struct placement_source *s = NULL;
        const char *why = "unknown";
        int r = placement_bpf_new(t, log_get_max_level() >= LOG_LVL_DEBUG, &s, &why);
        if (r >= 0) {
                log_info("Sampling where threads run with BPF on %s (source bpf, program id %d)",
                         placement_bpf_attach_point(s), placement_bpf_prog_id(s));
                *ret = s;
                return 0;
        }
        if (want == SOURCE_BPF)
                return log_error_errno(r, "[sample] source = bpf, but BPF is unavailable: %s: %m%s", why, hint(r));
        log_full_errno(LOG_LVL_NOTICE, r, "Sampling where threads run from /proc (source proc): BPF unavailable: %s: %m%s", why, hint(r));
#else
        if (want == SOURCE_BPF)
                return log_error_errno(-EOPNOTSUPP, "[sample] source = bpf, but numabalanced was built without BPF (-Dbpf)");
        log_notice("Sampling where threads run from /proc (source proc): built without BPF (-Dbpf)");
#endif
        *ret = &placement_source_proc;
        return 0;
}

void pmu_log_detection(const char *sys_root) {
        struct pmu_info p;
        int r = pmu_detect(sys_root, &p);

        if (r < 0)
                log_info_errno(r, "PMU memory sampling: cannot read %s/bus/event_source/devices (%m): "
                               "page-level placement off", sys_root);
        else if (p.kind == PMU_NONE)
                log_info("PMU memory sampling: none (no cpu/events/mem-loads, ibs_op or arm_spe_* under "
                         "%s/bus/event_source/devices): page-level placement off", sys_root);
        else
                log_info("PMU memory sampling: %s (%s, perf type %d%s%s) found, not used yet: page-level "
                         "placement off", pmu_kind_name(p.kind), p.device, p.type, p.event[0] ? ", " : "", p.event);
}
