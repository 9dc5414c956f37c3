/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The PMU aggregation program for real, on the one sampling event with data addresses
 * every machine has: page faults. Loads memsample.bpf.c on the page-faults software
 * event (every fault sampled) on all CPUs, watches itself, and has a thread pinned to
 * NODE fault PAGES pages in twice (touch, MADV_DONTNEED, touch). Drained into
 * lib/page-agg, the two-sample rule must send every one of those pages to NODE.
 * Prints one JSON line; exit status 0 when that holds.
 *
 *   memsample-probe NODE [PAGES] */
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>
#include "bpf/memsample-loader.h"
#include "log.h"
#include "page-agg.h"
#include "parse.h"

static int node, n_pages;
static char *mem;
static struct topology *topo;

static void *toucher(void *arg) {
        const struct topo_node *n = topology_node(topo, (unsigned) node);
        cpu_set_t set;

        CPU_ZERO(&set);
        for (unsigned c = 0; n && c < CPU_SETSIZE; c++)
                if (cpumask_test(&n->cpus, c))
                        CPU_SET(c, &set);
        if (CPU_COUNT(&set) == 0 || sched_setaffinity(0, sizeof(set), &set) < 0) {
                fprintf(stderr, "cannot run on node %d\n", node);
                exit(1);
        }
        for (int round = 0; round < 2; round++) {
                for (int i = 0; i < n_pages; i++)
                        mem[(size_t) i * 4096] = (char) round;
                if (round == 0)
                        madvise(mem, (size_t) n_pages * 4096, MADV_DONTNEED);
        }
        return NULL;
}

int main(int argc, char **argv) {
        _cleanup_(topology_freep) struct topology *t = NULL;
        _cleanup_(page_agg_freep) struct page_agg *agg = NULL;
        struct memsample *ms = NULL;
        struct perf_event_attr attr;
        struct page_decision d;
        const char *why = "";
        unsigned in_range = 0, on_node = 0;
        pthread_t th;
        int r, drained;

        n_pages = 256;
        if (argc < 2 || argc > 3 || parse_int(argv[1], 0, 1023, &node) < 0 ||
            (argc == 3 && parse_int(argv[2], 1, 1 << 20, &n_pages) < 0)) {
                fprintf(stderr, "usage: memsample-probe NODE [PAGES]\n");
                return 2;
        }
        r = topology_read("/sys", &t);
        if (r < 0)
                return log_error_errno(r, "Failed to read the topology: %m"), 1;
        topo = t;
        memsample_loader_attr_page_faults(&attr, 1);
        r = memsample_loader_new(t, &attr, &ms, &why);
        if (r < 0)
                return log_error_errno(r, "memsample unavailable: %s: %m", why), 77;
        r = memsample_loader_watch(ms, getpid());
        if (r >= 0)
                r = memsample_loader_arm(ms, true);
        if (r < 0)
                return log_error_errno(r, "Failed to watch: %m"), 1;
        mem = mmap(NULL, (size_t) n_pages * 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (mem == MAP_FAILED)
                return log_error_errno(-errno, "mmap: %m"), 1;
        madvise(mem, (size_t) n_pages * 4096, MADV_NOHUGEPAGE);
        if (pthread_create(&th, NULL, toucher, NULL) != 0)
                return 1;
        pthread_join(th, NULL);

        r = page_agg_new(t, 4096, &agg);
        if (r < 0)
                return 1;
        drained = memsample_loader_drain(ms, getpid(), agg);
        if (drained < 0)
                return log_error_errno(drained, "Failed to drain: %m"), 1;
        r = page_agg_decide(agg, 2, &d);
        if (r < 0)
                return 1;
        for (size_t i = 0; i < d.n_moves; i++)
                if (d.moves[i].page >= (uintptr_t) mem && d.moves[i].page < (uintptr_t) mem + (size_t) n_pages * 4096) {
                        in_range++;
                        on_node += d.moves[i].node == (unsigned) node;
                }
        printf("{\"node\": %d, \"pages\": %d, \"drained_entries\": %d, \"samples\": %" PRIu64
               ", \"distinct_pages\": %zu, \"moves\": %zu, \"moves_in_range\": %u, \"moves_in_range_to_node\": %u,"
               " \"shared\": %zu, \"too_few\": %zu}\n",
               node, n_pages, drained, d.samples, d.pages, d.n_moves, in_range, on_node, d.shared, d.too_few);
        page_agg_decision_done(&d);
        memsample_loader_free(ms);
        return in_range == (unsigned) n_pages && on_node == (unsigned) n_pages ? 0 : 1;
}
