/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Prints what topology_read() sees, as JSON, for the VM tests to compare with
 * numactl -H and sysfs:  topo-dump [SYS_ROOT]  (default /sys)
 *   { "nodes": [ { "id", "has_memory", "has_cpus", "cpus" (list), "mem_total_kb",
 *                  "mem_free_kb", "distances": [ ... by node order ] } ],
 *     "online", "with_memory", "with_cpus", "online_cpus" (lists) } */
#include <stdio.h>
#include <string.h>
#include "json.h"
#include "topology.h"

static void list(struct json *j, const char *key, const uint64_t *w, unsigned nbits) {
        static char buf[CPUMASK_STRMAX];
        idlist_format(w, nbits, buf, sizeof(buf));
        json_key(j, key);
        json_string(j, buf);
}

int main(int argc, char **argv) {
        _cleanup_(topology_freep) struct topology *t = NULL;
        const char *root = argc > 1 ? argv[1] : "/sys";
        struct json j;
        int r;

        r = topology_read(root, &t);
        if (r < 0) {
                fprintf(stderr, "topo-dump: topology_read(%s): %s\n", root, strerror(-r));
                return 1;
        }
        json_init(&j, stdout, true);
        json_object_begin(&j);
        list(&j, "online", t->online.w, NB_NODES_MAX);
        list(&j, "with_memory", t->with_memory.w, NB_NODES_MAX);
        list(&j, "with_cpus", t->with_cpus.w, NB_NODES_MAX);
        list(&j, "online_cpus", t->online_cpus.w, NB_CPUS_MAX);
        json_key(&j, "nodes");
        json_array_begin(&j);
        for (unsigned i = 0; i < t->n_nodes; i++) {
                const struct topo_node *n = &t->nodes[i];
                json_object_begin(&j);
                json_key(&j, "id"); json_u64(&j, n->id);
                json_key(&j, "has_memory"); json_bool(&j, n->has_memory);
                json_key(&j, "has_cpus"); json_bool(&j, n->has_cpus);
                list(&j, "cpus", n->cpus.w, NB_CPUS_MAX);
                json_key(&j, "mem_total_kb"); json_u64(&j, n->mem_total_kb);
                json_key(&j, "mem_free_kb"); json_u64(&j, n->mem_free_kb);
                json_key(&j, "distances");
                json_array_begin(&j);
                for (unsigned k = 0; k < t->n_nodes; k++)
                        json_i64(&j, topology_distance(t, n->id, t->nodes[k].id));
                json_array_end(&j);
                json_object_end(&j);
        }
        json_array_end(&j);
        json_object_end(&j);
        json_finish(&j);
        return 0;
}
