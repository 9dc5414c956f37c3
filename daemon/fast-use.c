/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "cleanup.h"
#include "fast-share.h"
#include "fast-use.h"
#include "log.h"
#include "parse.h"

/* memory.numa_stat is some 25 lines, each with a count per node of up to 27 bytes
 * ("N1023=<20 digits> "): this holds them all on 1,024 nodes. */
#define NUMA_STAT_READ_MAX (1024 * 1024)

struct cg_rec *fast_use_holder(const struct cg_records *cgs, const struct cg_rec *cg) {
        if (!cg || !cg->share_by)
                return NULL;
        return cg_records_find(cgs, cg->share_by);
}

static int read_numa_stat(const char *cgroup_root, const char *path, const struct topology *t, uint64_t *ret) {
        _cleanup_free_ char *file = NULL, *buf = NULL;
        size_t len;
        int r;

        if (asprintf(&file, "%s%s/memory.numa_stat", cgroup_root, strcmp(path, "/") == 0 ? "" : path) < 0)
                return -ENOMEM;
        r = parse_read_file_at(AT_FDCWD, file, NUMA_STAT_READ_MAX, &buf, &len);
        return r < 0 ? r : fast_share_usage_parse(buf, len, t, ret);
}

const uint64_t *fast_use_bytes(struct cg_rec *holder, const char *cgroup_root, const struct topology *t,
                               uint64_t tick) {
        if (holder->fast_tick == tick && holder->fast_used && holder->fast_n == t->n_nodes)
                return holder->fast_read < 0 ? NULL : holder->fast_used;
        if (!holder->fast_used || holder->fast_n != t->n_nodes) {
                /* used[n_nodes], then given[n_nodes]; sized again if the topology
                 * changed (memory hotplug on a one-node host brings a second node) */
                free(holder->fast_used);
                holder->fast_n = t->n_nodes;
                holder->fast_used = calloc(2 * (t->n_nodes ? t->n_nodes : 1), sizeof(*holder->fast_used));
                if (!holder->fast_used)
                        return NULL;
        }
        holder->fast_tick = tick;
        memset(holder->fast_used + t->n_nodes, 0, t->n_nodes * sizeof(*holder->fast_used));
        holder->fast_read = read_numa_stat(cgroup_root, holder->path, t, holder->fast_used);
        if (holder->fast_read < 0)
                log_debug_errno(holder->fast_read, "cgroup=%s: cannot read memory.numa_stat, its share gives "
                                "nothing this tick: %m", holder->path);
        return holder->fast_read < 0 ? NULL : holder->fast_used;
}

void fast_use_refresh(struct cg_records *cgs, const char *cgroup_root, const struct topology *t, uint64_t tick) {
        if (nodemask_empty(&t->slow))
                return;
        for (size_t i = 0; i < cgs->n; i++)
                if (cgs->v[i]->seen && cgs->v[i]->share_by && strcmp(cgs->v[i]->share_by, cgs->v[i]->path) == 0)
                        (void) fast_use_bytes(cgs->v[i], cgroup_root, t, tick);
}

int fast_use_limit(const struct cg_records *cgs, const char *cgroup_root, const struct topology *t, uint64_t tick,
                   const struct cg_rec *cg, uint64_t *give) {
        struct cg_rec *holder;
        const uint64_t *used;

        if (!cg || !cg->share_by)
                return 0;
        memset(give, 0, t->n_nodes * sizeof(*give));
        holder = fast_use_holder(cgs, cg);
        used = holder ? fast_use_bytes(holder, cgroup_root, t, tick) : NULL;
        for (size_t k = 0; used && k < t->n_nodes; k++) {
                uint64_t over = fast_share_excess(used[k], t->nodes[k].mem_total_kb, cg->fast_share_pct);
                uint64_t gave = used[t->n_nodes + k];

                give[k] = over > gave ? over - gave : 0;
        }
        return 1;
}

void fast_use_gave(const struct cg_records *cgs, const struct cg_rec *cg, const struct topology *t,
                   const uint64_t *from, const uint64_t *left) {
        struct cg_rec *holder = fast_use_holder(cgs, cg);

        if (!holder || !holder->fast_used || holder->fast_n != t->n_nodes)
                return;
        for (size_t k = 0; k < t->n_nodes; k++)
                if (from[k] > left[k])
                        holder->fast_used[t->n_nodes + k] += from[k] - left[k];
}
