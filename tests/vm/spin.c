/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Threads pinned to known nodes, for the placement sources' accuracy test: one thread
 * per NODE argument, pinned to that node's CPUs, each working 5 ms and sleeping 1 ms
 * in a loop (a context switch every few ms, as a real worker has; a thread that never
 * leaves its CPU is only counted by the BPF source when it does). Writes its pid to
 * READY_FILE once every thread is pinned, and runs until killed.
 *
 *   spin READY_FILE NODE... */
#include <errno.h>
#include <numa.h>
#include <pthread.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static pthread_barrier_t pinned;

static uint64_t clock_now_ns(void) {
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        return (uint64_t) ts.tv_sec * 1000000000ull + (uint64_t) ts.tv_nsec;
}

static void *spinner(void *arg) {
        int node = (int) (intptr_t) arg;
        volatile uint64_t x = 0;

        if (numa_run_on_node(node) < 0) {
                perror("numa_run_on_node");
                exit(1);
        }
        pthread_barrier_wait(&pinned);
        for (;;) {
                uint64_t until = clock_now_ns() + 5000000;
                while (clock_now_ns() < until)
                        x++;
                usleep(1000);
        }
        return NULL;
}

int main(int argc, char **argv) {
        int n = argc - 2;
        FILE *f;
        char tmp[4096];

        if (argc < 3 || numa_available() < 0) {
                fprintf(stderr, "usage: spin READY_FILE NODE... (needs NUMA)\n");
                return 2;
        }
        pthread_barrier_init(&pinned, NULL, (unsigned) n + 1);
        for (int i = 0; i < n; i++) {
                pthread_t t;
                char *end;
                long node = strtol(argv[i + 2], &end, 10);
                if (*end || node < 0 || node > numa_max_node()) {
                        fprintf(stderr, "spin: bad node %s\n", argv[i + 2]);
                        return 2;
                }
                if (pthread_create(&t, NULL, spinner, (void *) (intptr_t) node) != 0) {
                        perror("pthread_create");
                        return 1;
                }
        }
        pthread_barrier_wait(&pinned);
        snprintf(tmp, sizeof(tmp), "%s.tmp", argv[1]);
        f = fopen(tmp, "w");
        if (!f || fprintf(f, "%d\n", (int) getpid()) < 0 || fclose(f) != 0 || rename(tmp, argv[1]) < 0) {
                perror(argv[1]);
                return 1;
        }
        for (;;)
                pause();
}
