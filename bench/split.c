/* SPDX-License-Identifier: GPL-2.0-or-later */
/* scripts/bench's numa02-like workload: one process whose two threads run on two
 * nodes, each reading random words of its own half of one buffer (lib/split-workload,
 * the shape the software page-level source is proven on).
 *
 *   split MB READY_FILE STATUS_FILE [bind]
 *
 * The buffer is anonymous memory in base pages, first touched from node 0 (all of it
 * misplaced for thread B, on node 1); with "bind", each half is bound to its thread's
 * node before the touch (the ideal: hard binding). Thread A runs on the first CPU of
 * node 0, thread B on the first CPU of node 1. READY_FILE gets
 * "<pid> <start-hex> <bytes>" once both threads run. Every 100 ms the main thread (on
 * node 0's CPU, asleep in between) asks the kernel where every page is (one
 * move_pages query) and replaces STATUS_FILE with
 *   "A_OWN B_OWN HALF_PAGES BATCHES UNKNOWN\n"
 * (pages of each half on its thread's node, the pages in a half, the 4,096-read
 * batches both threads have done: their throughput, and pages the query could not
 * place: under the kernel's balancing a page whose PTE its scan just made PROT_NONE
 * reads as -ENOENT until the next access). Runs until SIGTERM. */
#include <errno.h>
#include <numa.h>
#include <numaif.h>
#include <sched.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>
#include "node-cpu.h"
#include "split-workload.h"

static int bind_half(void *start, size_t len, int node) {
        unsigned long mask = 1ul << node;

        return mbind(start, len, MPOL_BIND, &mask, sizeof(mask) * 8, 0);
}

int main(int argc, char **argv) {
        size_t bytes, pages, half, psz = (size_t) sysconf(_SC_PAGESIZE);
        struct split_workload *w = NULL;
        int cpus[2], *status;
        void **addrs;
        char *buf;

        if (argc < 4 || numa_available() < 0 || numa_max_node() < 1) {
                fprintf(stderr, "usage: split MB READY_FILE STATUS_FILE [bind] (needs two NUMA nodes)\n");
                return 2;
        }
        bytes = (size_t) strtoul(argv[1], NULL, 10) << 20;
        pages = bytes / psz;
        half = pages / 2;
        cpus[0] = first_cpu(0);
        cpus[1] = first_cpu(1);
        if (cpus[0] < 0 || cpus[1] < 0 || !bytes)
                return 2;
        signal(SIGTERM, on_term);
        pin(cpus[0]);
        buf = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (buf == MAP_FAILED)
                return 2;
        madvise(buf, bytes, MADV_NOHUGEPAGE);   /* base pages: what the samples count */
        if (argc > 4 && strcmp(argv[4], "bind") == 0 &&
            (bind_half(buf, bytes / 2, 0) < 0 || bind_half(buf + bytes / 2, bytes / 2, 1) < 0)) {
                perror("split: mbind");
                return 2;
        }
        memset(buf, 1, bytes);
        addrs = calloc(pages, sizeof(*addrs));
        status = calloc(pages, sizeof(*status));
        if (!addrs || !status)
                return 2;
        for (size_t i = 0; i < pages; i++)
                addrs[i] = buf + i * psz;
        if (split_workload_start((const uint64_t *) buf, bytes, 2, cpus, &w) < 0)
                return 2;
        if (write_atomically(argv[2], "%d %p %zu\n", (int) getpid(), (void *) buf, bytes) < 0)
                return 2;
        while (!stop) {
                size_t a = 0, b = 0, unknown = 0;

                if (move_pages(0, pages, addrs, NULL, status, 0) == 0) {
                        for (size_t i = 0; i < pages; i++)
                                if (status[i] < 0)
                                        unknown++;
                                else if (status[i] == (i < half ? 0 : 1))
                                        *(i < half ? &a : &b) += 1;
                        write_atomically(argv[3], "%zu %zu %zu %llu %zu\n", a, b, half,
                                         (unsigned long long) split_workload_batches(w), unknown);
                }
                usleep(100 * 1000);
        }
        split_workload_stop(w);
        return 0;
}
