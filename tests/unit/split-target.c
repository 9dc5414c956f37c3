/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The split workload as a process of its own, for tests/unit/test-advise-host.py: the
 * daemon watches it like any other process.
 *
 *   split-target THREADS BUFFER_MB READY_FILE
 *
 * THREADS threads (lib/split-workload), thread k pinned to CPU k % 2 and reading random
 * words of the k-th part of a buffer of BUFFER_MB in base pages, touched first by the
 * main thread. READY_FILE gets "<pid> <start-hex> <bytes>" once they all run; then it
 * sleeps until killed. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>
#include "split-workload.h"

int main(int argc, char **argv) {
        unsigned n = argc > 1 ? (unsigned) atoi(argv[1]) : 0, mb = argc > 2 ? (unsigned) atoi(argv[2]) : 0;
        const size_t bytes = (size_t) mb << 20;
        struct split_workload *w = NULL;
        int cpus[SPLIT_THREADS_MAX];
        uint64_t *buf;
        FILE *f;

        if (argc < 4 || n < 1 || n > SPLIT_THREADS_MAX || mb < 1) {
                fprintf(stderr, "usage: split-target THREADS(1-8) BUFFER_MB READY_FILE\n");
                return 2;
        }
        buf = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (buf == MAP_FAILED)
                return 2;
        madvise(buf, bytes, MADV_NOHUGEPAGE);
        memset(buf, 1, bytes);
        for (unsigned k = 0; k < n; k++)
                cpus[k] = (int) (k % 2);
        if (split_workload_start(buf, bytes, n, cpus, &w) < 0)
                return 1;
        f = fopen(argv[3], "w");
        if (!f)
                return 2;
        fprintf(f, "%d %p %zu\n", (int) getpid(), (void *) buf, bytes);
        fclose(f);
        for (;;)
                pause();
}
