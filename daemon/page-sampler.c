/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Page-level sampling: which sampler, and its life (page-sampler.h). */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "build-config.h"
#include "log.h"
#include "clock.h"
#include "page-sampler.h"
#include "pmu.h"
#include "sample-replay.h"
#include "sw-sampler.h"
#if HAVE_BPF
#include <linux/types.h>
#include "bpf/memsample.h"
#include "bpf/memsample-loader.h"
#endif

struct page_sampler {
        char name[32];
        struct sw_sampler *sw;     /* pmu = software */
        struct sample_replay *replay;  /* pmu = replay; neither: the BPF program's */
#if HAVE_BPF
        struct memsample *ms;
        struct sample_quota_slots watch; /* the processes in its watch map, shared among owners */
#endif
};

#if HAVE_BPF
/* The watch map is the BPF program's; which processes are in it is the daemon's
 * choice, made per owner (sample_quota_slots). */
static int hold_watch(void *userdata, uint32_t id, bool on) {
        struct page_sampler *s = userdata;

        return on ? memsample_loader_watch(s->ms, (pid_t) id) : memsample_loader_unwatch(s->ms, (pid_t) id);
}
#endif

const char *page_sampler_name(const struct page_sampler *s) { return s ? s->name : NULL; }

const char *page_sampler_chain(const struct node_time_source *placement, const struct page_sampler *s) {
        bool bpf = placement && strcmp(placement->name, "bpf") == 0;
        if (s && s->sw)
                return bpf ? "software+bpf" : "software+proc";
        if (s && s->replay)
                return bpf ? "replay+bpf" : "replay+proc";
        if (s)
                return bpf ? "pmu+bpf" : "pmu+proc";
        return bpf ? "bpf" : "proc";
}

static const char *scheduler_part(const struct node_time_source *placement) {
        return strcmp(placement->name, "bpf") == 0 ? "BPF scheduler" : "/proc";
}

/* The chain without page-level sampling, and why. */
static void log_chain_without(const struct node_time_source *placement, const char *why, int r) {
        if (r < 0)
                log_full_errno(LOG_LVL_INFO, r, "Sampling chain: %s only: page-level sampling off: %s: %m%s",
                               scheduler_part(placement), why, r == -EPERM || r == -EACCES ?
                               " (needs CAP_PERFMON and CAP_BPF, or CAP_SYS_ADMIN)" : "");
        else
                log_info("Sampling chain: %s only: page-level sampling off: %s", scheduler_part(placement), why);
}

/* pmu = replay (sample-replay.h): a test feature; a file that cannot be opened is an error. */
static int replay_choose(const struct nb_config *cfg, const struct topology *t,
                         const struct node_time_source *placement, struct page_sampler **ret) {
        struct page_sampler *s = calloc(1, sizeof(*s));
        int r;

        if (!s)
                return -ENOMEM;
        r = sample_replay_open(cfg->replay_path, t, &s->replay);
        if (r < 0) {
                free(s);
                return log_error_errno(r, "[sample] pmu = replay: cannot open replay_path \"%s\": %m",
                                       cfg->replay_path ? cfg->replay_path : "");
        }
        snprintf(s->name, sizeof(s->name), "replay");
        log_info("Sampling chain: replayed page samples (%s, [sample] pmu = replay: for tests) + %s",
                 cfg->replay_path, scheduler_part(placement));
        *ret = s;
        return 0;
}

/* pmu = software, or pmu = auto without a usable PMU (no_pmu says why, else NULL): the
 * self-check first (sw-sampler.h); refused with the reason said. Under an emulator the
 * refusal is expected in auto mode: said as information, not as a warning. */
static int software_choose(const struct nb_config *cfg, const char *proc_root, const struct topology *t,
                           const struct node_time_source *placement, const char *no_pmu,
                           struct page_sampler **ret) {
        struct sample_check c = {};
        struct page_sampler *s = calloc(1, sizeof(*s));
        char why[256], buf[768];
        int r;

        if (!s)
                return -ENOMEM;
        r = sw_sampler_new(proc_root, t, cfg->software_sample_rate, &s->sw, &c);
        if (r == -ENOTRECOVERABLE)
                snprintf(why, sizeof(why), "its self-check's timer samples did not follow the accesses on this CPU "
                         "(%" PRIu64 " and %" PRIu64 " of %" PRIu64 " and %" PRIu64 " samples decoded to an address "
                         "in the right place): an emulated CPU (QEMU TCG?)", c.own[0], c.own[1], c.samples[0],
                         c.samples[1]);
        else if (r == -EOPNOTSUPP)
                snprintf(why, sizeof(why), "no instruction decoder in this build (x86-64 with Capstone only)");
        else if (r < 0)
                snprintf(why, sizeof(why), "its self-check could not sample: %s%s", strerror(-r),
                         r == -EACCES || r == -EPERM ? " (needs CAP_PERFMON or CAP_SYS_ADMIN)" : "");
        if (r < 0) {
                free(s);
                if (no_pmu)
                        snprintf(buf, sizeof(buf), "%s; software sampling refused: %s", no_pmu, why);
                else {
                        snprintf(buf, sizeof(buf), "[sample] pmu = software refused: %s", why);
                        log_warning("%s", buf);
                }
                log_chain_without(placement, buf, 0);
                return r == -ENOMEM ? r : 0;
        }
        snprintf(s->name, sizeof(s->name), "software");
        log_info("Sampling chain: software (task-clock, %" PRIu64 " samples/s of each thread spanning nodes; "
                 "self-check: %" PRIu64 " and %" PRIu64 " of %" PRIu64 " and %" PRIu64 " decoded addresses "
                 "in place%s%s) + %s", cfg->software_sample_rate, c.own[0], c.own[1], c.addresses[0], c.addresses[1],
                 no_pmu ? "; [sample] pmu = auto, and " : "", no_pmu ? no_pmu : "", scheduler_part(placement));
        *ret = s;
        return 0;
}

/* pmu = auto found no PMU it can use (why): software sampling, else none. */
static int no_pmu(const struct nb_config *cfg, const char *proc_root, const struct topology *t,
                  const struct node_time_source *placement, const char *why, struct page_sampler **ret) {
        if (cfg->pmu == PMU_MODE_AUTO)
                return software_choose(cfg, proc_root, t, placement, why, ret);
        log_chain_without(placement, why, 0);
        return 0;
}

void page_sampler_set_reader(struct page_sampler *s, struct tenant_reader *reader) {
        if (s && s->sw)
                sw_sampler_set_reader(s->sw, reader);
}

int page_sampler_choose(const struct nb_config *cfg, const char *proc_root, const char *sys_root,
                        const struct topology *t, const struct node_time_source *placement,
                        struct page_sampler **ret) {
        struct perf_event_attr attr;
        struct pmu_info p = { .kind = PMU_NONE, .type = -1 };
        const char *why = NULL, *name;
        char buf[512];
        int r;

        *ret = NULL;
        if (cfg->pmu == PMU_MODE_OFF) {
                log_chain_without(placement, "[sample] pmu = off", 0);
                return 0;
        }
        if (cfg->pmu == PMU_MODE_SOFTWARE)
                return software_choose(cfg, proc_root, t, placement, NULL, ret);
        if (cfg->pmu == PMU_MODE_REPLAY)
                return replay_choose(cfg, t, placement, ret);
        if (cfg->pmu == PMU_MODE_PAGE_FAULTS) {
#if HAVE_BPF
                memsample_loader_attr_page_faults(&attr, 1);
#endif
                name = "page-faults";
        } else {
                r = pmu_detect(sys_root, &p);
                if (r < 0) {
                        snprintf(buf, sizeof(buf), "cannot read %s/bus/event_source/devices", sys_root);
                        log_chain_without(placement, buf, r);
                        return 0;
                }
                if (p.kind == PMU_NONE)
                        return no_pmu(cfg, proc_root, t, placement, "no PMU with precise memory sampling "
                                      "(cpu/events/mem-loads, ibs_op, arm_spe_*)", ret);
                r = pmu_attr(sys_root, &p, cfg->pmu_sample_rate, &attr, &why);
                if (r < 0) {
                        snprintf(buf, sizeof(buf), "%s (%s) found, but %s", pmu_kind_name(p.kind), p.device, why);
                        return no_pmu(cfg, proc_root, t, placement, buf, ret);
                }
                name = pmu_kind_name(p.kind);
        }
#if HAVE_BPF
        {
                struct page_sampler *s = calloc(1, sizeof(*s));
                if (!s)
                        return -ENOMEM;
                snprintf(s->name, sizeof(s->name), "%s", name);
                r = memsample_loader_new(t, &attr, &s->ms, &why);
                /* Not software instead: what keeps the PMU's events from opening (the
                 * capabilities) keeps the software source's on other processes too. */
                if (r < 0) {
                        free(s);
                        snprintf(buf, sizeof(buf), "%s: %s", name, why);
                        log_chain_without(placement, buf, r);
                        return 0;
                }
                sample_quota_slots_init(&s->watch, MEMSAMPLE_MAX_WATCHED, hold_watch, s);
                memsample_loader_set_roots(s->ms, proc_root, cfg->cgroup_root);
                if (cfg->pmu == PMU_MODE_PAGE_FAULTS)
                        log_info("Sampling chain: page faults (every fault, [sample] pmu = page-faults: first "
                                 "touches only, for tests) + %s", scheduler_part(placement));
                else
                        log_info("Sampling chain: PMU (%s on %s, %" PRIu64 " samples/s per CPU) + %s", name,
                                 p.device, cfg->pmu_sample_rate, scheduler_part(placement));
                *ret = s;
                return 0;
        }
#else
        (void) t;
        (void) attr;
        (void) why;
        snprintf(buf, sizeof(buf), "%s found, but numabalanced was built without BPF (-Dbpf)", name);
        return no_pmu(cfg, proc_root, t, placement, buf, ret);    /* software needs no BPF */
#endif
}

int page_sampler_arm(struct page_sampler *s, bool on) {
#if HAVE_BPF
        if (s->ms)
                return memsample_loader_arm(s->ms, on);
#endif
        (void) s;
        (void) on;
        return 0;
}

int page_sampler_watch(struct page_sampler *s, pid_t pid, uid_t owner) {
        if (s->sw || s->replay)
                return 0;          /* sampled once it spans nodes (page_sampler_span) */
#if HAVE_BPF
        {
                int r = sample_quota_slots_ask(&s->watch, (uint32_t) pid, owner, clock_now_ms());
                if (r == 0)
                        log_debug("pid=%d: not watched for now: uid %u holds its share of %" PRIu64 " of the %d "
                                  "processes watched", (int) pid, (unsigned) owner,
                                  sample_quota_share(&s->watch.quota, owner), MEMSAMPLE_MAX_WATCHED);
                return r < 0 ? r : 0;   /* 0: it waits for its owner's share */
        }
#else
        (void) s;
        (void) pid;
        (void) owner;
        return -EOPNOTSUPP;
#endif
}

void page_sampler_span(struct page_sampler *s, pid_t pid, uid_t owner, bool spans) {
        if (s && s->sw)
                sw_sampler_span(s->sw, pid, owner, spans);
#if HAVE_BPF
        /* At each scan: a process waiting for its owner's share asks again, and may be
         * given a turn (sample-quota.h). */
        else if (s && s->ms)
                (void) page_sampler_watch(s, pid, owner);
#endif
}

void page_sampler_unwatch(struct page_sampler *s, pid_t pid) {
        if (s->replay)
                return;
        if (s->sw) {
                sw_sampler_forget(s->sw, pid);
                return;
        }
#if HAVE_BPF
        sample_quota_slots_forget(&s->watch, (uint32_t) pid, clock_now_ms());
#else
        (void) s;
        (void) pid;
#endif
}

uint64_t page_sampler_take_cpu_ns(struct page_sampler *s) {
        return s && s->sw ? sw_sampler_take_cpu_ns(s->sw) : 0;
}

const struct sample_quota *page_sampler_quota(const struct page_sampler *s) {
        if (!s || s->replay)
                return NULL;
        if (s->sw)
                return sw_sampler_quota(s->sw);
#if HAVE_BPF
        return &s->watch.quota;
#else
        return NULL;
#endif
}

int page_sampler_drain(struct page_sampler *s, page_sample_fn fn, void *userdata) {
        if (s->sw)
                return sw_sampler_drain(s->sw, fn, userdata);
        if (s->replay)
                return sample_replay_drain(s->replay, fn, userdata);
#if HAVE_BPF
        return memsample_loader_drain_all(s->ms, fn, userdata);
#else
        (void) s;
        (void) fn;
        (void) userdata;
        return 0;
#endif
}

void page_sampler_free(struct page_sampler *s) {
        if (!s)
                return;
        sw_sampler_free(s->sw);
        sample_replay_free(s->replay);
#if HAVE_BPF
        if (s->ms)
                sample_quota_slots_done(&s->watch);
        memsample_loader_free(s->ms);
#endif
        free(s);
}
