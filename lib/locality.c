/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <errno.h>
#include <stdlib.h>
#include "locality.h"

uint64_t locality_vma_bytes(const struct vma *v, uint64_t pages) {
        uint64_t ps = v->page_size_kb * 1024;
        /* Counts are bounded by the parser, but a hostile file must not wrap. */
        if (ps && pages > UINT64_MAX / ps)
                return UINT64_MAX;
        return pages * ps;
}

static void add_sat(uint64_t *a, uint64_t b) {
        *a = (*a > UINT64_MAX - b) ? UINT64_MAX : *a + b;
}

int locality_compute(const struct topology *t, const struct numa_maps *m, const int *thread_cpus,
                     size_t n_threads, struct locality *ret) {
        struct locality l = { .n_nodes = t->n_nodes };

        l.bytes = calloc(t->n_nodes ? t->n_nodes : 1, sizeof(*l.bytes));
        l.threads = calloc(t->n_nodes ? t->n_nodes : 1, sizeof(*l.threads));
        if (!l.bytes || !l.threads) {
                locality_done(&l);
                return -ENOMEM;
        }

        for (size_t i = 0; i < n_threads; i++) {
                int node, idx;
                if (thread_cpus[i] < 0)
                        continue;
                node = topology_cpu_node(t, (unsigned) thread_cpus[i]);
                if (node < 0)
                        continue;
                idx = topology_node_index(t, (unsigned) node);
                if (idx < 0)
                        continue;
                l.threads[idx]++;
                nodemask_set(&l.thread_nodes, (unsigned) node);
        }

        for (size_t i = 0; m && i < m->n_vmas; i++) {
                const struct vma *v = &m->vmas[i];
                const struct node_pages *np = vma_node_pages(m, v);
                for (size_t k = 0; k < v->np_count; k++) {
                        uint64_t b = locality_vma_bytes(v, np[k].pages);
                        int idx = topology_node_index(t, np[k].node);
                        if (idx >= 0)
                                add_sat(&l.bytes[idx], b);
                        else
                                add_sat(&l.other_bytes, b);
                        add_sat(&l.total_bytes, b);
                        if (nodemask_test(&l.thread_nodes, np[k].node))
                                add_sat(&l.local_bytes, b);
                }
        }
        *ret = l;
        return 0;
}

void locality_done(struct locality *l) {
        if (!l)
                return;
        free(l->bytes);
        free(l->threads);
        l->bytes = NULL;
        l->threads = NULL;
}

double locality_share(const struct locality *l) {
        return l->total_bytes ? (double) l->local_bytes / (double) l->total_bytes : 0.0;
}
