/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The samplers: where threads ran (the placement source, source.h) and which pages
 * they touched (the page sampler, page-sampler.h). Chosen for the topology at start,
 * and again when a host with one memory node gains a second; attached in the kernel
 * only while some process is watched, and never on a host with one memory node (idle
 * means idle); their page samples drained into the process records once a tick. The
 * manager keeps struct samplers and calls these on the event-loop thread; nothing else
 * writes it. */
#pragma once
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>
#include "config.h"
#include "counters.h"
#include "log.h"
#include "page-sampler.h"
#include "proc-records.h"
#include "source.h"
#include "topology.h"

struct samplers {
        const struct node_time_source *source;  /* never NULL once started */
        struct page_sampler *pages;  /* page-level sampling, NULL: off */
        bool armed;                  /* attached in the kernel now (samplers_sync) */
        bool one_node;               /* fewer than two nodes with memory: nothing to balance */
        struct log_ratelimit arm_log;  /* attaching failed */
};

void samplers_init(struct samplers *s);
/* Chooses the samplers for t (cfg's [sample] source and pmu), detached, and says once
 * when t has one memory node. Returns 0, or -errno (logged) when the configured source
 * cannot be had. */
int samplers_start(struct samplers *s, const struct nb_config *cfg, const char *proc_root, const char *sys_root,
                   const struct topology *t);
/* Attaches the samplers when some process is recorded (procs) and the host has two
 * memory nodes or more, detaches them otherwise; an attach that fails is tried again
 * at the next call. Called when a process is admitted and after each tick's sweep. */
void samplers_sync(struct samplers *s, const struct proc_records *procs, struct counters *c);
/* pid, whose cgroup's turn is owner's, was admitted now (already in procs): the
 * samplers attached for it, its page samples gathered from now on. */
void samplers_watch(struct samplers *s, const struct proc_records *procs, struct counters *c, pid_t pid,
                    uid_t owner);
/* The record of pid is forgotten at the end of tick: neither sampler watches it any
 * more, unless a record seen in tick holds the same pid (reused: the page sampler
 * goes on, for the new process). */
void samplers_unwatch(struct samplers *s, const struct proc_records *procs, pid_t pid, uint64_t tick);
/* Hands the page samples since the last drain to the records' evidence (page-agg.h),
 * counted, those of no record or outside its mappings dropped, and to the pages each
 * process had sampled over cfg's cold age while the exchange may need them (a slow
 * node, exchange on: proc_rec.sampled). Returns the CPU time of
 * the page sampler's own threads since the last drain. */
uint64_t samplers_drain(struct samplers *s, struct proc_records *procs, const struct topology *t,
                        const struct nb_config *cfg, struct counters *c);
/* On a host with one memory node, the topology read again: returns 1 with *ret (the
 * caller's to keep) when a second node has memory now (said at notice), else 0. */
int samplers_second_node(struct samplers *s, const char *sys_root, struct topology **ret);
/* The samplers again, detached, for the new topology t (samplers_second_node()),
 * reading through reader. Nothing may use the old ones any more (their events
 * unwatched first). On failure (a source = bpf whose BPF went away) the source is the
 * /proc one and the host counts as one node: nothing is attached; returns -errno. */
int samplers_rechoose(struct samplers *s, const struct nb_config *cfg, const char *proc_root, const char *sys_root,
                      const struct topology *t, struct tenant_reader *reader);
void samplers_done(struct samplers *s);
