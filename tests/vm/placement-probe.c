/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Both placement sources side by side on the same processes and window, for the VM
 * test of the BPF source (test-bpf.py): loads the BPF source as the daemon does,
 * takes a baseline from each source, sleeps, samples again and prints one JSON line
 * per pid with the CPU time (ns) per node from each.
 *
 *   placement-probe SECONDS PID... */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include "log.h"
#include "parse.h"
#include "node-time.h"
#include "bpf/sched-loader.h"
#include "topology.h"

int main(int argc, char **argv) {
        _cleanup_(topology_freep) struct topology *t = NULL;
        const struct node_time_source *bpf = NULL;
        const char *why = NULL;
        int secs;
        int n, r;

        if (argc < 3 || parse_int(argv[1], 1, 3600, &secs) < 0) {
                fprintf(stderr, "usage: placement-probe SECONDS PID...\n");
                return 2;
        }
        n = argc - 2;
        r = topology_read("/sys", &t);
        if (r < 0)
                return log_error_errno(r, "Failed to read the topology: %m"), 1;
        r = sched_loader_new(t, true, &bpf, &why);
        if (r < 0)
                return log_error_errno(r, "BPF source unavailable: %s: %m", why), 1;
        /* Loaded, not attached: the daemon attaches with its first watched process. */
        r = node_time_source_arm(bpf, true);
        if (r < 0)
                return log_error_errno(r, "Failed to attach the BPF program: %m"), 1;

        struct node_time_state *st_bpf = calloc((size_t) n, sizeof(*st_bpf));
        struct node_time_state *st_proc = calloc((size_t) n, sizeof(*st_proc));
        uint64_t *ns = calloc((size_t) n * 2 * t->n_nodes, sizeof(*ns));
        pid_t *pids = calloc((size_t) n, sizeof(*pids));
        if (!st_bpf || !st_proc || !ns || !pids)
                return log_error_errno(-ENOMEM, "Out of memory"), 1;
        for (int i = 0; i < n; i++) {
                int pid;
                if (parse_int(argv[i + 2], 1, INT32_MAX, &pid) < 0)
                        return log_error("bad pid %s", argv[i + 2]), 1;
                pids[i] = pid;
        }

        for (int round = 0; round < 2; round++) {
                if (round)
                        sleep(secs);
                for (int i = 0; i < n; i++) {
                        uint64_t *b = &ns[(size_t) i * 2 * t->n_nodes], *p = b + t->n_nodes;
                        r = bpf->sample(bpf, "/proc", pids[i], t, &st_bpf[i], b);
                        if (r != round)
                                return log_error_errno(r, "pid %d: bpf sample returned %d: %m", (int) pids[i], r), 1;
                        r = node_time_source_proc.sample(&node_time_source_proc, "/proc", pids[i], t, &st_proc[i], p);
                        if (r != round)
                                return log_error_errno(r, "pid %d: proc sample returned %d: %m", (int) pids[i], r), 1;
                }
        }

        for (int i = 0; i < n; i++) {
                const uint64_t *b = &ns[(size_t) i * 2 * t->n_nodes], *p = b + t->n_nodes;
                printf("{\"pid\": %d, \"seconds\": %d, \"attach\": \"%s\", \"nodes\": [", (int) pids[i], secs,
                       sched_loader_attach_point(bpf));
                for (unsigned k = 0; k < t->n_nodes; k++)
                        printf("%s%u", k ? ", " : "", t->nodes[k].id);
                printf("], \"bpf\": [");
                for (unsigned k = 0; k < t->n_nodes; k++)
                        printf("%s%" PRIu64, k ? ", " : "", b[k]);
                printf("], \"proc\": [");
                for (unsigned k = 0; k < t->n_nodes; k++)
                        printf("%s%" PRIu64, k ? ", " : "", p[k]);
                printf("]}\n");
                node_time_source_unwatch(bpf, pids[i]);
                node_time_state_done(&st_bpf[i]);
                node_time_state_done(&st_proc[i]);
        }
        node_time_source_free(bpf);
        free(st_bpf);
        free(st_proc);
        free(ns);
        free(pids);
        return 0;
}
