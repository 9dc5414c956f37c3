/* SPDX-License-Identifier: GPL-2.0-or-later */
/* What each cgroup with a share of the fast tier holds there and may give up this tick
 * (lib/fast-share.h; plan.h, rule 8: the exchange across processes).
 *
 * A share is set on a directory (cg_rec.share_by) and covers its subtree; its record,
 * the holder, keeps the subtree's bytes per node (memory.numa_stat, read at most once
 * a tick, when a scan or a report first asks) and what the exchange took of its cold
 * memory for other processes this tick. A donor's limit is the holder's bytes above
 * its share on each node, less what it gave already this tick: so several processes
 * of one cgroup never give more than it holds above its share between them. The
 * holder is the event loop's, as the records are. */
#pragma once
#include <stdint.h>
#include "cg-records.h"
#include "topology.h"

/* The holder of cg's share: the record of cg->share_by, NULL when cg has no share or
 * that directory is not a record this tick (then cg gives nothing: the share is
 * kept whole rather than counted wrong). */
struct cg_rec *fast_use_holder(const struct cg_records *cgs, const struct cg_rec *cg);

/* Once a tick, where the topology has slow nodes: every holder's bytes read (for the
 * reports, whether or not the exchange asks this tick). */
void fast_use_refresh(struct cg_records *cgs, const char *cgroup_root, const struct topology *t, uint64_t tick);

/* The holder's bytes per topology index on this tick, read if the tick has not yet
 * (cgroup_root/<path>/memory.numa_stat). NULL when it cannot be read (gone, out of
 * memory, a kernel without the file): it then gives nothing. */
const uint64_t *fast_use_bytes(struct cg_rec *holder, const char *cgroup_root, const struct topology *t,
                               uint64_t tick);

/* What a process of cg may give up on each node this tick, into give[topology index]
 * (t->n_nodes): 1 and give filled for a cgroup with a share, 0 for one without (no
 * limit; give untouched). */
int fast_use_limit(const struct cg_records *cgs, const char *cgroup_root, const struct topology *t, uint64_t tick,
                   const struct cg_rec *cg, uint64_t *give);

/* The exchange demoted from[i] - left[i] bytes of cg's cold memory on each node for
 * other processes (the limits fast_use_limit() gave, and what is left of them). */
void fast_use_gave(const struct cg_records *cgs, const struct cg_rec *cg, const struct topology *t,
                   const uint64_t *from, const uint64_t *left);
