/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>
#include "config.h"
#include "node-time.h"
#include "sample-quota.h"
#include "topology.h"

/* Page-level sampling: memory-access samples (the PMU's precise sampling, or the
 * page-fault software event with [sample] pmu = page-faults) counted per (process,
 * node, page) in the kernel by memsample.bpf.c, drained by the manager once per tick.
 * The manager does not know about BPF or perf: this is its whole interface. */
struct page_sampler;

/* Chooses per cfg->pmu and what the machine offers under sys_root, and logs the
 * sampling chain once: "PMU (intel-pebs) + BPF scheduler", "BPF scheduler only
 * (why)", "/proc only (why)". placement: the source source_choose() gave.
 * Returns 0 with *ret NULL when page-level sampling is off (not an error: the chain
 * says why), or a sampler (page_sampler_free()). */
int page_sampler_choose(const struct nb_config *cfg, const char *proc_root, const char *sys_root,
                        const struct topology *t, const struct node_time_source *placement,
                        struct page_sampler **ret);
/* "intel-pebs", "amd-ibs", "page-faults", "software". */
const char *page_sampler_name(const struct page_sampler *s);
/* Opens (on) or closes (off) the perf events and attaches or detaches the program:
 * the manager turns it on with its first watched process and off after its last. The
 * software source opens its events per thread anyway (sw-sampler.h): nothing to do. */
int page_sampler_arm(struct page_sampler *s, bool on);
/* pid, whose cgroup's turn is owner's (cg_rec.turn_uid), is to be sampled. The BPF
 * program watches MEMSAMPLE_MAX_WATCHED processes at most, shared among owners
 * (lib/sample-quota.h): a process beyond its owner's share waits, and asks again at
 * each scan (page_sampler_span), where it may be given a turn. */
int page_sampler_watch(struct page_sampler *s, pid_t pid, uid_t owner);
/* After each scan of pid: whether its threads spanned nodes in the window. The software
 * source samples only those (sw-sampler.h), within owner's share of its thread slots;
 * the PMU's samples every watched process. */
void page_sampler_span(struct page_sampler *s, pid_t pid, uid_t owner, bool spans);
void page_sampler_unwatch(struct page_sampler *s, pid_t pid);
/* CPU time spent for the drains on threads of the sampler's own (the software source's
 * decoding threads) since the last call: the calling thread's own is not in it. */
uint64_t page_sampler_take_cpu_ns(struct page_sampler *s);
/* The slots (threads or watched processes) shared among owners, with what each was
 * refused; NULL when none are (no sampler, replay). */
const struct sample_quota *page_sampler_quota(const struct page_sampler *s);
typedef void (*page_sample_fn)(void *userdata, pid_t tgid, uint64_t addr, unsigned node, uint64_t count);
/* Hands every count gathered since the last call to fn and forgets it. Returns the
 * number of (process, node, page) entries, or -errno. */
int page_sampler_drain(struct page_sampler *s, page_sample_fn fn, void *userdata);
void page_sampler_free(struct page_sampler *s);
struct tenant_reader;
/* The reader the software source reads code bytes through (tenant-reader.h); NULL (the
 * default): on the calling thread. */
void page_sampler_set_reader(struct page_sampler *s, struct tenant_reader *reader);

/* The chain as status shows it: "pmu+bpf", "pmu+proc", "software+bpf", "software+proc",
 * "bpf" or "proc". */
const char *page_sampler_chain(const struct node_time_source *placement, const struct page_sampler *s);
