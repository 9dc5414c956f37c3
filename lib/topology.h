/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The machine's NUMA topology, from <sys_root>/devices/system/node and
 * <sys_root>/devices/system/cpu: nodes (ids may be sparse), which have memory and
 * which have CPUs (either may be missing: memory-only nodes exist), the CPUs of
 * each node, the distance table, free memory per node and its free huge pages per
 * size (hugetlb moves take those, not MemFree); and the memory tier of each node,
 * from <sys_root>/devices/virtual/memory_tiering (Linux 6.1+), with which nodes are
 * slow: a lower tier, whose memory is not misplaced for being there. */
#pragma once
#include <stdbool.h>
#include <stdint.h>
#include "cleanup.h"
#include "nodemask.h"

/* One huge page size of a node's hugetlb pool (nodeN/hugepages/hugepages-<kB>kB). */
struct topo_hugepages {
        uint64_t size_kb;
        uint64_t free;             /* free_hugepages: what a hugetlb move to the node can take */
};

struct topo_node {
        unsigned id;
        bool has_memory;
        bool has_cpus;
        nb_cpumask cpus;
        uint64_t mem_total_kb;
        uint64_t mem_free_kb;
        struct topo_hugepages *huge;   /* by size, ascending; NULL when the node has none */
        unsigned n_huge;
        unsigned huge_slot;            /* the index of huge[0] among all nodes' sizes */
        int tier;                      /* the kernel's memory_tierN (higher: slower), -1: none */
        bool slow;                     /* a lower tier (topology_set_slow()) */
};

struct topology {
        struct topo_node *nodes;   /* online nodes, sorted by id */
        unsigned n_nodes;
        nb_nodemask online;        /* node/online */
        nb_nodemask with_memory;   /* node/has_memory */
        nb_nodemask with_cpus;     /* node/has_cpu */
        nb_cpumask online_cpus;    /* cpu/online */
        int *distance;             /* n_nodes x n_nodes, by index in nodes[] */
        int *cpu_node;             /* node id of each CPU, -1 if none; n_cpus entries */
        unsigned n_cpus;           /* highest CPU id + 1 */
        unsigned n_huge_slots;     /* sum of the nodes' n_huge */
        nb_nodemask slow;          /* nodes with memory in a lower tier (topology_set_slow()) */
        nb_nodemask slow_default;  /* what the default rule says they are */
        int fast_tier;             /* the fastest tier of a node with CPUs (DRAM), -1: none known */
};

/* sys_root is the directory that holds devices/ ("/sys" normally, or a snapshot).
 * Returns 0, -ENOENT if the node directory is missing (no CONFIG_NUMA), -EINVAL
 * for contents that do not parse, or another -errno. */
int topology_read(const char *sys_root, struct topology **ret);
/* The slow nodes: slow ∩ with_memory, or with slow empty the default rule, which
 * topology_read() applies: a node with memory is slow when the kernel puts it in a
 * tier above fast_tier, or when it has no CPUs and the kernel does not put it in a
 * faster tier than fast_tier (kernels before 6.1 have no tiers, and before 6.10 a
 * CPU-less node of ordinary RAM is put in the DRAM tier whatever it is). */
void topology_set_slow(struct topology *t, const nb_nodemask *slow);
/* Whether node is slow (false for an unknown node). */
bool topology_node_slow(const struct topology *t, unsigned node);
/* Re-reads only the free memory of each node and its free huge pages (cheap; done
 * every tick). */
int topology_refresh_free(struct topology *t, const char *sys_root);
/* Reads node's MemTotal and MemFree (kB) now: the check before each move call
 * (daemon/move-check), on a worker's thread; touches no struct topology. */
int topology_read_node_mem(const char *sys_root, unsigned node, uint64_t *ret_total_kb, uint64_t *ret_free_kb);
/* Reads <sys_root>/devices/system/cpu/online now (CPUs come and go: hotplug). */
int topology_read_online_cpus(const char *sys_root, nb_cpumask *ret);
void topology_free(struct topology *t);
DEFINE_TRIVIAL_CLEANUP_FUNC(struct topology *, topology_free);

/* Index of node id in t->nodes, or -1. */
int topology_node_index(const struct topology *t, unsigned node);
const struct topo_node *topology_node(const struct topology *t, unsigned node);
/* Distance from node a to node b, or -1 if either is unknown. */
int topology_distance(const struct topology *t, unsigned a, unsigned b);
/* The pool of huge pages of size_kb on node, or NULL (none of that size there). With
 * *ret_slot (may be NULL): its index among all nodes' pools, 0..n_huge_slots. */
const struct topo_hugepages *topology_hugepages(const struct topology *t, unsigned node, uint64_t size_kb,
                                                unsigned *ret_slot);
/* The node of CPU c, or -1. */
int topology_cpu_node(const struct topology *t, unsigned cpu);
