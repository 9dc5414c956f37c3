/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Sampled scans: a settled process with a VMA of huge_vma or more is checked without
 * reading numa_maps (lib/vma-sample.h says why: that read walks each VMA whole under
 * the process's mmap lock). The full read that leaves it settled records its huge
 * VMAs' placement (sampled_scan_note); each later scan asks whether anything changed
 * (sampled_scan_unchanged): its resident size, the nodes its threads run on, its huge
 * VMAs' bounds and their sampled placement. Anything changed, or any doubt, and the
 * scan reads numa_maps as every other scan does; so does a scan that growth brought
 * forward (grew() forgets the records). Nothing is ever moved on a sample. */
#pragma once
#include <stdbool.h>
#include <stdint.h>
#include "numa_maps.h"
#include "plan.h"
#include "proc.h"
#include "proc-records.h"
#include "scan-env.h"

/* At most this many VMAs of huge_vma or more are tracked per process; a process with
 * more is read in full. */
#define SAMPLED_SCAN_VMAS_MAX 16

/* The nodes with min_cpu_share_pct of cpu (per topology node index). */
nb_nodemask sampled_scan_cpu_nodes(const struct scan_env *env, const uint64_t *cpu);

/* After a full read: records p's huge VMAs when the scan left it settled (nothing
 * planned, nothing held back for a while: cooldown, a full target, a hugetlb pool),
 * forgets them otherwise. ends: each VMA's end (maps). */
void sampled_scan_note(const struct scan_env *env, struct proc_rec *p, const struct numa_maps *maps,
                       const uint64_t *ends, const struct plan *plan, bool settled, nb_nodemask cpu_nodes);

/* Whether p, settled at its last full read, is unchanged now (and its scan may end
 * without reading numa_maps). rss_kb: its resident size now. On false its records
 * are forgotten, so that the full read decides afresh. */
bool sampled_scan_unchanged(const struct scan_env *env, struct proc_rec *p, nb_nodemask cpu_nodes, uint64_t rss_kb);

void sampled_scan_forget(struct proc_rec *p);
