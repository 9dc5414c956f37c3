/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Where a process's memory sits relative to where its threads run: bytes per node,
 * threads per node, and the local share. Pure: computed from parsed inputs. Used by
 * numabalancectl show and by the daemon's reports, so both count the same way. */
#pragma once
#include <stdint.h>
#include "numa_maps.h"
#include "topology.h"

struct locality {
        unsigned n_nodes;          /* == topology n_nodes; arrays are by topology index */
        uint64_t *bytes;           /* bytes on each node */
        unsigned *threads;         /* threads whose last CPU is on each node */
        uint64_t other_bytes;      /* bytes on nodes the topology does not know (offline) */
        uint64_t total_bytes;
        nb_nodemask thread_nodes;  /* nodes the threads last ran on */
        uint64_t local_bytes;      /* bytes on thread_nodes */
};

/* thread_cpus: the CPU each thread last ran on (n_threads entries; negative: unknown). */
int locality_compute(const struct topology *t, const struct numa_maps *m, const int *thread_cpus,
                     size_t n_threads, struct locality *ret);
void locality_done(struct locality *l);
/* local_bytes / total_bytes, 0 when there is nothing. */
double locality_share(const struct locality *l);
/* Bytes of a VMA on one node / in total, from its page size. */
uint64_t locality_vma_bytes(const struct vma *v, uint64_t pages);
