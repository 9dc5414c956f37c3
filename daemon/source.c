/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Where thread placement comes from (source.h). */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "build-config.h"
#include "log.h"
#include "source.h"
#if HAVE_BPF
#include "bpf/sched-loader.h"

/* What an EPERM from bpf() usually means, for the operator. */
static const char *hint(int r) {
        return r == -EPERM || r == -EACCES ? " (needs CAP_BPF and CAP_PERFMON, or CAP_SYS_ADMIN)" : "";
}
#endif

int source_choose(enum sample_source want, const struct topology *t,
                            const struct node_time_source **ret) {
        if (want == SOURCE_PROC) {
                log_info("Sampling where threads run from /proc (source proc): [sample] source = proc");
                *ret = &node_time_source_proc;
                return 0;
        }
#if HAVE_BPF
        const struct node_time_source *s = NULL;
        const char *why = "unknown";
        int r = sched_loader_new(t, log_get_max_level() >= LOG_LVL_DEBUG, &s, &why);
        if (r >= 0) {
                log_info("Sampling where threads run with BPF on %s (source bpf, program id %d)",
                         sched_loader_attach_point(s), sched_loader_prog_id(s));
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
        *ret = &node_time_source_proc;
        return 0;
}
