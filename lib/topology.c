/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The NUMA topology from sysfs (drivers/base/node.c and drivers/base/cpu.c):
 *
 *   devices/system/node/online, has_memory, has_cpu    node lists ("0,2")
 *   devices/system/node/nodeN/cpulist                   CPU list, may be empty
 *   devices/system/node/nodeN/distance                  one number per online node,
 *                                                       in increasing node id order
 *   devices/system/node/nodeN/meminfo                   "Node N MemTotal:  X kB" ...
 *   devices/system/node/nodeN/hugepages/hugepages-<kB>kB/free_hugepages
 *                                                       free huge pages of that size
 *                                                       (absent: no hugetlb, or a node
 *                                                       without memory)
 *   devices/system/cpu/online                           CPU list
 *   devices/virtual/memory_tiering/memory_tierN/nodelist
 *                                                       the nodes in memory tier N
 *                                                       (mm/memory-tiers.c, 6.1+;
 *                                                       absent before, or without
 *                                                       CONFIG_NUMA)
 *
 * A memory tier's id is the abstract distance at its start divided by the chunk size
 * (MEMTIER_CHUNK_SIZE, include/linux/memory-tiers.h): smaller is faster. Ordinary
 * DRAM has abstract distance MEMTIER_ADISTANCE_DRAM, 4.5 chunks: memory_tier4. The
 * PMEM (dax kmem) and CXL drivers, and from 6.10 the firmware's HMAT for a CPU-less
 * node, give larger ones; nothing here depends on the chunk size.
 *
 * Everything is read relative to a sys_root so that tests run on snapshots. A file
 * whose contents do not parse, or that contradicts another (a distance row of the
 * wrong length, a CPU in two nodes, a meminfo naming another node), is -EINVAL:
 * placement decisions made on a half-understood topology would be wrong silently. */
#include <errno.h>
#include <dirent.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "cleanup.h"
#include "log.h"
#include "parse.h"
#include "topology.h"

/* sysfs files here are small; cpulist of 8192 CPUs is at most ~40 KiB. Anything
 * larger is not a sysfs file we understand. */
#define TOPO_FILE_MAX (1024 * 1024)

/* A node's distance to itself is LOCAL_DISTANCE (10) and others are larger, but
 * firmware tables are not to be trusted beyond "a small non-negative number": the
 * ACPI SLIT stores a byte, and 255 means unreachable. */
#define TOPO_DISTANCE_MAX 255

static int read_at(int dirfd, const char *path, char **ret, size_t *ret_len) {
        int r = parse_read_file_at(dirfd, path, TOPO_FILE_MAX, ret, ret_len);
        if (r < 0)
                log_debug_errno(r, "topology: cannot read %s: %m", path);
        return r;
}

static int read_nodemask_at(int dirfd, const char *path, nb_nodemask *ret) {
        _cleanup_free_ char *buf = NULL;
        size_t len;
        int r;

        r = read_at(dirfd, path, &buf, &len);
        if (r < 0)
                return r;
        r = nodemask_parse_n(buf, len, ret);
        if (r < 0)
                return log_debug_errno(-EINVAL, "topology: %s: not a node list", path);
        return 0;
}

static int read_cpumask_at(int dirfd, const char *path, nb_cpumask *ret) {
        _cleanup_free_ char *buf = NULL;
        size_t len;
        int r;

        r = read_at(dirfd, path, &buf, &len);
        if (r < 0)
                return r;
        r = idlist_parse_n(buf, len, ret->w, NB_CPUS_MAX);
        if (r < 0)
                return log_debug_errno(-EINVAL, "topology: %s: not a CPU list", path);
        return 0;
}

static bool is_blank(char c) { return c == ' ' || c == '\t'; }

/* Parses one nodeN/meminfo buffer for node `node`: the MemTotal and MemFree lines,
 * "Node <node> <Key>: <spaces><value> kB". Other lines are not looked at (their set
 * changes between kernel versions). Either output may be NULL. */
static int meminfo_parse(const char *buf, size_t len, unsigned node, uint64_t *ret_total,
                         uint64_t *ret_free) {
        uint64_t total = 0, free_kb = 0;
        bool have_total = false, have_free = false;
        size_t i = 0;

        while (i < len) {
                size_t eol = i, p, q;
                uint64_t id, v;
                const char *key;
                size_t key_len;

                while (eol < len && buf[eol] != '\n')
                        eol++;
                p = i;
                i = eol + 1;

                if (eol - p < 5 || memcmp(buf + p, "Node ", 5) != 0)
                        continue;
                p += 5;
                for (q = p; q < eol && buf[q] >= '0' && buf[q] <= '9'; q++)
                        ;
                if (parse_u64_n(buf + p, q - p, 0, NB_NODES_MAX - 1, &id) < 0)
                        return -EINVAL;
                p = q;
                while (p < eol && is_blank(buf[p]))
                        p++;
                key = buf + p;
                while (p < eol && buf[p] != ':' && !is_blank(buf[p]))
                        p++;
                key_len = (size_t) (buf + p - key);
                if (p >= eol || buf[p] != ':')
                        return -EINVAL;
                p++;

                bool is_total = key_len == 8 && memcmp(key, "MemTotal", 8) == 0;
                bool is_free = key_len == 7 && memcmp(key, "MemFree", 7) == 0;
                if (!is_total && !is_free)
                        continue;
                /* The file is this node's: a line about another node means we are
                 * not reading what we think we are. */
                if (id != node)
                        return -EINVAL;
                if ((is_total && have_total) || (is_free && have_free))
                        return -EINVAL;

                while (p < eol && is_blank(buf[p]))
                        p++;
                for (q = p; q < eol && buf[q] >= '0' && buf[q] <= '9'; q++)
                        ;
                if (parse_u64_n(buf + p, q - p, 0, UINT64_MAX / 1024, &v) < 0)
                        return -EINVAL;
                p = q;
                if (eol - p != 3 || memcmp(buf + p, " kB", 3) != 0)
                        return -EINVAL;

                if (is_total) {
                        total = v;
                        have_total = true;
                } else {
                        free_kb = v;
                        have_free = true;
                }
        }

        if (!have_total || !have_free || free_kb > total)
                return -EINVAL;
        if (ret_total)
                *ret_total = total;
        if (ret_free)
                *ret_free = free_kb;
        return 0;
}

static int read_meminfo_at(int dirfd, unsigned node, uint64_t *ret_total, uint64_t *ret_free) {
        _cleanup_free_ char *buf = NULL;
        char path[64];
        size_t len;
        int r;

        snprintf(path, sizeof(path), "node/node%u/meminfo", node);
        r = read_at(dirfd, path, &buf, &len);
        if (r < 0)
                return r;
        r = meminfo_parse(buf, len, node, ret_total, ret_free);
        if (r < 0)
                return log_debug_errno(r, "topology: %s: no valid MemTotal/MemFree for node %u", path, node);
        return 0;
}

/* One row of the distance table: exactly n numbers separated by blanks. */
static int distance_parse(const char *buf, size_t len, unsigned n, int *row) {
        size_t i = 0;
        unsigned k = 0;

        while (len > 0 && (buf[len - 1] == '\n' || is_blank(buf[len - 1])))
                len--;
        for (;;) {
                size_t e;
                uint64_t v;

                while (i < len && is_blank(buf[i]))
                        i++;
                if (i >= len)
                        break;
                for (e = i; e < len && !is_blank(buf[e]); e++)
                        ;
                if (k >= n)
                        return -EINVAL;
                if (parse_u64_n(buf + i, e - i, 0, TOPO_DISTANCE_MAX, &v) < 0)
                        return -EINVAL;
                row[k++] = (int) v;
                i = e;
        }
        return k == n ? 0 : -EINVAL;
}

static int read_distance_at(int dirfd, unsigned node, unsigned n, int *row) {
        _cleanup_free_ char *buf = NULL;
        char path[64];
        size_t len;
        int r;

        snprintf(path, sizeof(path), "node/node%u/distance", node);
        r = read_at(dirfd, path, &buf, &len);
        if (r < 0)
                return r;
        r = distance_parse(buf, len, n, row);
        if (r < 0)
                return log_debug_errno(r, "topology: %s: expected %u distances", path, n);
        return 0;
}

void topology_free(struct topology *t) {
        if (!t)
                return;
        for (unsigned i = 0; t->nodes && i < t->n_nodes; i++)
                free(t->nodes[i].huge);
        free(t->nodes);
        free(t->distance);
        free(t->cpu_node);
        free(t);
}

static int open_system_dir(const char *sys_root) {
        _cleanup_free_ char *p = NULL;
        int fd;

        if (!sys_root)
                return -EINVAL;
        if (asprintf(&p, "%s/devices/system", sys_root) < 0)
                return -ENOMEM;
        fd = open(p, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (fd < 0)
                return log_debug_errno(-errno, "topology: cannot open %s: %m", p);
        return fd;
}

/* node/online, has_memory, has_cpu and cpu/online, and that they agree. */
static int read_masks(int dirfd, struct topology *t) {
        int r;

        /* Without CONFIG_NUMA there is no node directory: -ENOENT, the caller's
         * "not a NUMA machine", distinct from contents that do not parse. */
        r = read_nodemask_at(dirfd, "node/online", &t->online);
        if (r < 0)
                return r;
        r = read_nodemask_at(dirfd, "node/has_memory", &t->with_memory);
        if (r < 0)
                return r;
        r = read_nodemask_at(dirfd, "node/has_cpu", &t->with_cpus);
        if (r < 0)
                return r;
        r = read_cpumask_at(dirfd, "cpu/online", &t->online_cpus);
        if (r < 0)
                return r;

        t->n_nodes = nodemask_weight(&t->online);
        if (t->n_nodes == 0)
                return log_debug_errno(-EINVAL, "topology: no online node");
        if (!nodemask_subset(&t->with_memory, &t->online) || !nodemask_subset(&t->with_cpus, &t->online))
                return log_debug_errno(-EINVAL, "topology: has_memory/has_cpu name nodes that are not online");
        if (cpumask_weight(&t->online_cpus) == 0)
                return log_debug_errno(-EINVAL, "topology: no online CPU");
        return 0;
}

/* "hugepages-2048kB": 1 with the size, 0 for another name. */
static int hugepages_dir_size(const char *name, uint64_t *ret_kb) {
        size_t len = strlen(name);

        if (len <= 12 || memcmp(name, "hugepages-", 10) != 0 || memcmp(name + len - 2, "kB", 2) != 0)
                return 0;
        return parse_u64_n(name + 10, len - 12, 1, UINT64_MAX / 1024, ret_kb) < 0 ? 0 : 1;
}

static int read_u64_at(int dirfd, const char *path, uint64_t *ret) {
        _cleanup_free_ char *buf = NULL;
        size_t len;
        int r;

        r = read_at(dirfd, path, &buf, &len);
        if (r < 0)
                return r;
        while (len > 0 && buf[len - 1] == '\n')
                len--;
        if (parse_u64_n(buf, len, 0, UINT64_MAX, ret) < 0)
                return log_debug_errno(-EINVAL, "topology: %s: not a number", path);
        return 0;
}

static int cmp_huge(const void *a, const void *b) {
        const struct topo_hugepages *x = a, *y = b;
        return (x->size_kb > y->size_kb) - (x->size_kb < y->size_kb);
}

/* The free huge pages of node id's pool, by size (tn->huge: ascending). */
static int read_hugepages(int dirfd, struct topo_node *tn) {
        _cleanup_closedir_ DIR *d = NULL;
        char path[128];
        struct dirent *de;
        int fd;

        snprintf(path, sizeof(path), "node/node%u/hugepages", tn->id);
        fd = openat(dirfd, path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (fd < 0)
                return errno == ENOENT ? 0 : log_debug_errno(-errno, "topology: cannot open %s: %m", path);
        d = fdopendir(fd);
        if (!d) {
                close(fd);
                return -errno;
        }
        while ((de = readdir(d))) {
                struct topo_hugepages h = {}, *n;
                char file[192];
                int r;

                if (!hugepages_dir_size(de->d_name, &h.size_kb))
                        continue;
                snprintf(file, sizeof(file), "%s/%.40s/free_hugepages", path, de->d_name);
                r = read_u64_at(dirfd, file, &h.free);
                if (r < 0)
                        return r;
                n = realloc(tn->huge, (tn->n_huge + 1) * sizeof(*n));
                if (!n)
                        return -ENOMEM;
                tn->huge = n;
                tn->huge[tn->n_huge++] = h;
        }
        if (tn->n_huge > 1)
                qsort(tn->huge, tn->n_huge, sizeof(*tn->huge), cmp_huge);
        return 0;
}

/* Node id, at index i of t->nodes: its CPUs, its row of the distance table and its
 * memory. Raises *max_cpu to its highest CPU. */
static int read_node(int dirfd, struct topology *t, unsigned i, unsigned id, int *max_cpu) {
        struct topo_node *tn = &t->nodes[i];
        char path[64];
        int r;

        tn->id = id;
        tn->has_memory = nodemask_test(&t->with_memory, id);
        tn->has_cpus = nodemask_test(&t->with_cpus, id);

        snprintf(path, sizeof(path), "node/node%u/cpulist", id);
        r = read_cpumask_at(dirfd, path, &tn->cpus);
        if (r < 0)
                return r;
        /* has_cpu (N_CPU) and cpulist are not compared: on some architectures
         * cpumask_of_node keeps offline CPUs, so a node whose CPUs are all offline
         * can list them while has_cpu omits it. */
        CPUMASK_FOREACH(c, &tn->cpus)
                if (c > *max_cpu)
                        *max_cpu = c;

        r = read_distance_at(dirfd, id, t->n_nodes, t->distance + (size_t) i * t->n_nodes);
        if (r < 0)
                return r;
        r = read_meminfo_at(dirfd, id, &tn->mem_total_kb, &tn->mem_free_kb);
        if (r < 0)
                return r;
        r = read_hugepages(dirfd, tn);
        if (r < 0)
                return r;
        tn->huge_slot = t->n_huge_slots;
        t->n_huge_slots += tn->n_huge;
        return 0;
}

/* "memory_tier4": 1 with the id, 0 for another name. The id is an int abstract
 * distance shifted right by at least 7 bits. */
static int tier_dir_id(const char *name, int *ret_id) {
        size_t len = strlen(name);
        uint64_t v;

        if (len <= 11 || memcmp(name, "memory_tier", 11) != 0)
                return 0;
        if (parse_u64_n(name + 11, len - 11, 0, INT_MAX >> 7, &v) < 0)
                return 0;
        *ret_id = (int) v;
        return 1;
}

/* The tier of each node, from <sys_root>/devices/virtual/memory_tiering; no such
 * directory is no tiers (all -1). A node in two tiers is -EINVAL; nodes not online
 * (memory hot-removed since node/online was read) are ignored. */
static int read_tiers(const char *sys_root, struct topology *t) {
        _cleanup_free_ char *p = NULL;
        _cleanup_closedir_ DIR *d = NULL;
        struct dirent *de;

        for (unsigned i = 0; i < t->n_nodes; i++)
                t->nodes[i].tier = -1;
        if (asprintf(&p, "%s/devices/virtual/memory_tiering", sys_root) < 0)
                return -ENOMEM;
        d = opendir(p);
        if (!d)
                return errno == ENOENT ? 0 : log_debug_errno(-errno, "topology: cannot open %s: %m", p);
        while ((de = readdir(d))) {
                char path[64];
                nb_nodemask m;
                int id, r;

                if (!tier_dir_id(de->d_name, &id))
                        continue;
                snprintf(path, sizeof(path), "memory_tier%d/nodelist", id);
                r = read_nodemask_at(dirfd(d), path, &m);
                if (r < 0)
                        return r;
                NODEMASK_FOREACH(n, &m) {
                        int i = topology_node_index(t, (unsigned) n);
                        if (i < 0)
                                continue;
                        if (t->nodes[i].tier >= 0)
                                return log_debug_errno(-EINVAL, "topology: node %d is in memory tiers %d and %d",
                                                       n, t->nodes[i].tier, id);
                        t->nodes[i].tier = id;
                }
        }
        return 0;
}

/* topology.h's default rule, against the fastest tier of a node with CPUs and memory
 * (DRAM: the kernel puts a node's memory in a tier only when it has some). */
static void default_slow(struct topology *t) {
        t->fast_tier = -1;
        for (unsigned i = 0; i < t->n_nodes; i++) {
                const struct topo_node *tn = &t->nodes[i];
                if (tn->has_cpus && tn->has_memory && tn->tier >= 0 && (t->fast_tier < 0 || tn->tier < t->fast_tier))
                        t->fast_tier = tn->tier;
        }
        nodemask_zero(&t->slow_default);
        for (unsigned i = 0; i < t->n_nodes; i++) {
                const struct topo_node *tn = &t->nodes[i];
                bool known = tn->tier >= 0 && t->fast_tier >= 0;

                if (!tn->has_memory)
                        continue;
                if ((known && tn->tier > t->fast_tier) || (!tn->has_cpus && !(known && tn->tier < t->fast_tier)))
                        nodemask_set(&t->slow_default, tn->id);
        }
}

void topology_set_slow(struct topology *t, const nb_nodemask *slow) {
        if (!t)
                return;
        if (slow && !nodemask_empty(slow))
                nodemask_and(&t->slow, slow, &t->with_memory);
        else
                t->slow = t->slow_default;
        for (unsigned i = 0; i < t->n_nodes; i++)
                t->nodes[i].slow = nodemask_test(&t->slow, t->nodes[i].id);
}

bool topology_node_slow(const struct topology *t, unsigned node) {
        return t && node < NB_NODES_MAX && nodemask_test(&t->slow, node);
}

/* t->cpu_node for CPUs 0..max_cpu (online or listed by a node); a CPU in two nodes
 * is refused. */
static int map_cpus(struct topology *t, int max_cpu) {
        CPUMASK_FOREACH(c, &t->online_cpus)
                if (c > max_cpu)
                        max_cpu = c;
        t->n_cpus = (unsigned) max_cpu + 1;
        t->cpu_node = malloc(t->n_cpus * sizeof(*t->cpu_node));
        if (!t->cpu_node)
                return -ENOMEM;
        for (unsigned c = 0; c < t->n_cpus; c++)
                t->cpu_node[c] = -1;
        for (unsigned i = 0; i < t->n_nodes; i++)
                CPUMASK_FOREACH(c, &t->nodes[i].cpus) {
                        if (t->cpu_node[c] >= 0)
                                return log_debug_errno(-EINVAL, "topology: CPU %d is in nodes %d and %u",
                                                       c, t->cpu_node[c], t->nodes[i].id);
                        t->cpu_node[c] = (int) t->nodes[i].id;
                }
        return 0;
}

int topology_read(const char *sys_root, struct topology **ret) {
        _cleanup_(topology_freep) struct topology *t = NULL;
        _cleanup_close_ int dirfd = -1;
        unsigned i;
        int r, max_cpu = -1;

        dirfd = open_system_dir(sys_root);
        if (dirfd < 0)
                return dirfd;

        t = calloc(1, sizeof(*t));
        if (!t)
                return -ENOMEM;

        r = read_masks(dirfd, t);
        if (r < 0)
                return r;

        t->nodes = calloc(t->n_nodes, sizeof(*t->nodes));
        t->distance = calloc((size_t) t->n_nodes * t->n_nodes, sizeof(*t->distance));
        if (!t->nodes || !t->distance)
                return -ENOMEM;

        i = 0;
        NODEMASK_FOREACH(n, &t->online) {
                r = read_node(dirfd, t, i, (unsigned) n, &max_cpu);
                if (r < 0)
                        return r;
                i++;
        }

        r = map_cpus(t, max_cpu);
        if (r < 0)
                return r;
        r = read_tiers(sys_root, t);
        if (r < 0)
                return r;
        default_slow(t);
        topology_set_slow(t, NULL);
        *ret = TAKE_PTR(t);
        return 0;
}

/* The free huge pages of every pool, into free_pages (by slot). */
static int read_huge_free(int dirfd, const struct topology *t, uint64_t *free_pages) {
        for (unsigned i = 0; i < t->n_nodes; i++)
                for (unsigned k = 0; k < t->nodes[i].n_huge; k++) {
                        char path[160];
                        int r;

                        snprintf(path, sizeof(path), "node/node%u/hugepages/hugepages-%" PRIu64 "kB/free_hugepages",
                                 t->nodes[i].id, t->nodes[i].huge[k].size_kb);
                        r = read_u64_at(dirfd, path, &free_pages[t->nodes[i].huge_slot + k]);
                        if (r < 0)
                                return r;
                }
        return 0;
}

int topology_read_node_mem(const char *sys_root, unsigned node, uint64_t *ret_total_kb, uint64_t *ret_free_kb) {
        _cleanup_close_ int dirfd = open_system_dir(sys_root);

        if (dirfd < 0)
                return dirfd;
        return read_meminfo_at(dirfd, node, ret_total_kb, ret_free_kb);
}

int topology_refresh_free(struct topology *t, const char *sys_root) {
        _cleanup_free_ uint64_t *free_kb = NULL, *free_huge = NULL;
        _cleanup_close_ int dirfd = -1;
        int r;

        if (!t)
                return -EINVAL;
        dirfd = open_system_dir(sys_root);
        if (dirfd < 0)
                return dirfd;
        free_kb = calloc(t->n_nodes, sizeof(*free_kb));
        free_huge = calloc(t->n_huge_slots + 1, sizeof(*free_huge));
        if (!free_kb || !free_huge)
                return -ENOMEM;

        /* All or nothing: a tick must not see some nodes' new values and others' old. */
        for (unsigned i = 0; i < t->n_nodes; i++) {
                r = read_meminfo_at(dirfd, t->nodes[i].id, NULL, &free_kb[i]);
                if (r < 0)
                        return r;
        }
        r = read_huge_free(dirfd, t, free_huge);
        if (r < 0)
                return r;
        for (unsigned i = 0; i < t->n_nodes; i++) {
                t->nodes[i].mem_free_kb = free_kb[i];
                for (unsigned k = 0; k < t->nodes[i].n_huge; k++)
                        t->nodes[i].huge[k].free = free_huge[t->nodes[i].huge_slot + k];
        }
        return 0;
}

const struct topo_hugepages *topology_hugepages(const struct topology *t, unsigned node, uint64_t size_kb,
                                                unsigned *ret_slot) {
        const struct topo_node *tn = topology_node(t, node);

        for (unsigned k = 0; tn && k < tn->n_huge; k++)
                if (tn->huge[k].size_kb == size_kb) {
                        if (ret_slot)
                                *ret_slot = tn->huge_slot + k;
                        return &tn->huge[k];
                }
        return NULL;
}

int topology_node_index(const struct topology *t, unsigned node) {
        unsigned lo = 0, hi;

        if (!t)
                return -1;
        /* nodes[] is sorted by id: ids are sparse, so search rather than index. */
        hi = t->n_nodes;
        while (lo < hi) {
                unsigned mid = lo + (hi - lo) / 2;
                if (t->nodes[mid].id == node)
                        return (int) mid;
                if (t->nodes[mid].id < node)
                        lo = mid + 1;
                else
                        hi = mid;
        }
        return -1;
}

const struct topo_node *topology_node(const struct topology *t, unsigned node) {
        int i = topology_node_index(t, node);
        return i < 0 ? NULL : &t->nodes[i];
}

int topology_distance(const struct topology *t, unsigned a, unsigned b) {
        int ia = topology_node_index(t, a), ib = topology_node_index(t, b);

        if (ia < 0 || ib < 0)
                return -1;
        return t->distance[(size_t) ia * t->n_nodes + (size_t) ib];
}

int topology_cpu_node(const struct topology *t, unsigned cpu) {
        if (!t || cpu >= t->n_cpus)
                return -1;
        return t->cpu_node[cpu];
}

int topology_read_online_cpus(const char *sys_root, nb_cpumask *ret) {
        char path[4096];
        nb_cpumask m = {};
        int r;

        snprintf(path, sizeof(path), "%s/devices/system/cpu/online", sys_root);
        r = read_cpumask_at(AT_FDCWD, path, &m);
        if (r < 0)
                return r;
        *ret = m;
        return 0;
}
