/* SPDX-License-Identifier: GPL-2.0-or-later */
/* A process whose threads run on two nodes, each with its own private pages, for the
 * page-level path ([sample] pmu = page-faults): no node has most of its CPU time, so
 * only page-level evidence can place its memory.
 *
 *   pagesplit PAGES READY_FILE STATUS_FILE [--mapped]
 *
 * The memory is a memfd of PAGES pages filled from node 0 (page cache on node 0),
 * mapped shared once. Thread A (on node 0) uses the first half, thread B (on node 1)
 * the second half. (Pages touched from both nodes are the unit tests' business, on
 * replayed streams: here the order of two threads' faults is not deterministic.)
 * Every 300 ms each thread drops its page table entries (MADV_DONTNEED on a
 * shared mapping drops the mapping, not the pages), then writes to its pages again:
 * each write is a page fault with its address, which the page-faults event samples, so
 * every page is seen again each round. (Writes, not reads: a read fault on a file
 * mapping maps its neighbours too (fault-around, 16 pages), which then never fault.) Right after reading, each thread asks the kernel
 * where its pages are (move_pages query) and STATUS_FILE gets, each round,
 *   "A_ON0 A_ON1 B_ON0 B_ON1\n"
 * (pages of each part on node 0 and node 1). READY_FILE gets "<pid> <start-hex> <bytes>".
 * --mapped: the page table entries stay (no faults), for a source that is not the
 * page-faults event (replayed samples): a dropped page is absent to move_pages until
 * its thread writes it again, so the daemon's query could find part of a half unmapped
 * and skip it, and a one-shot replay would never name those pages again. */
#include <errno.h>
#include <numa.h>
#include <numaif.h>
#include <pthread.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>
#include "pin.h"

#define PAGE 4096

static char *mem;
static size_t n_pages, half;
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static unsigned counts[4];   /* A on 0, A on 1, B on 0, B on 1 */
static int drop_mappings = 1;

/* Pages [from, to) on node 0 and node 1, per the kernel. */
static void where(size_t from, size_t to, unsigned *on0, unsigned *on1) {
        size_t n = to - from;
        void **pages = calloc(n, sizeof(*pages));
        int *status = calloc(n, sizeof(*status));

        *on0 = *on1 = 0;
        if (!pages || !status)
                exit(1);
        for (size_t i = 0; i < n; i++)
                pages[i] = mem + (from + i) * PAGE;
        if (move_pages(0, n, pages, NULL, status, 0) == 0)
                for (size_t i = 0; i < n; i++) {
                        *on0 += status[i] == 0;
                        *on1 += status[i] == 1;
                }
        free(pages);
        free(status);
}

struct part {
        int node;
        size_t from, to;   /* private pages */
        int slot;          /* in counts[] */
};

static void *toucher(void *arg) {
        struct part *p = arg;
        volatile char *m = mem;

        pin_to_node(p->node);
        for (;;) {
                unsigned a0, a1;
                if (drop_mappings)
                        (void) madvise(mem + p->from * PAGE, (p->to - p->from) * PAGE, MADV_DONTNEED);
                for (size_t i = p->from; i < p->to; i++)
                        m[i * PAGE] = 2;
                where(p->from, p->to, &a0, &a1);
                pthread_mutex_lock(&lock);
                counts[p->slot] = a0;
                counts[p->slot + 1] = a1;
                pthread_mutex_unlock(&lock);
                usleep(300000);
        }
        return NULL;
}

int main(int argc, char **argv) {
        static struct part a, b;
        pthread_t ta, tb;
        char page[PAGE];
        FILE *f;
        int fd;

        if (argc < 4 || argc > 5 || (argc == 5 && strcmp(argv[4], "--mapped")) ||
            (n_pages = strtoul(argv[1], NULL, 10)) < 64) {
                fprintf(stderr, "usage: pagesplit PAGES(>=64) READY_FILE STATUS_FILE [--mapped]\n");
                return 2;
        }
        drop_mappings = argc == 4;
        if (numa_available() < 0 || numa_max_node() < 1) {
                fprintf(stderr, "needs two NUMA nodes\n");
                return 1;
        }
        pin_to_node(0);
        fd = memfd_create("nb-pagesplit", MFD_CLOEXEC);
        if (fd < 0) {
                perror("memfd_create");
                return 1;
        }
        memset(page, 1, sizeof(page));
        for (size_t i = 0; i < n_pages; i++)
                if (write(fd, page, PAGE) != PAGE) {
                        perror("write");
                        return 1;
                }
        mem = mmap(NULL, n_pages * PAGE, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
        if (mem == MAP_FAILED) {
                perror("mmap");
                return 1;
        }
        half = n_pages / 2;
        a = (struct part) { .node = 0, .from = 0, .to = half, .slot = 0 };
        b = (struct part) { .node = 1, .from = half, .to = n_pages, .slot = 2 };
        if (pthread_create(&ta, NULL, toucher, &a) || pthread_create(&tb, NULL, toucher, &b))
                return 1;
        f = fopen(argv[2], "w");
        if (!f)
                return 1;
        fprintf(f, "%d %lx %zu\n", getpid(), (unsigned long) (uintptr_t) mem, n_pages * PAGE);
        fclose(f);
        for (;;) {
                char tmp[4096];
                usleep(300000);
                snprintf(tmp, sizeof(tmp), "%s.tmp", argv[3]);
                f = fopen(tmp, "w");
                if (!f)
                        continue;
                pthread_mutex_lock(&lock);
                fprintf(f, "%u %u %u %u\n", counts[0], counts[1], counts[2], counts[3]);
                pthread_mutex_unlock(&lock);
                fclose(f);
                rename(tmp, argv[3]);
        }
}
