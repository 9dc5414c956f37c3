/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The second round's hostile tenant process (scenarios/251-hostile-second.py), run as
 * an unprivileged user in its own opted-in cgroup. One process does everything the
 * daemon must survive at once:
 *   - MAPS file mappings (16,384 in the scenario) of one page each, of files whose
 *     names are mostly newlines (each escaped to four bytes in maps and numa_maps),
 *     created in DIR: numa_maps and maps of a few MB for the daemon to read;
 *   - THREADS threads (256) across both nodes, each hopping to the other node every
 *     50 ms (a node-change event each time) and touching its part of 32 MiB;
 *   - one thread that keeps the mmap lock busy: mmap, mprotect and munmap of 64 MiB
 *     in a loop, half the time (every numa_maps read of the daemon queues behind it).
 * All on the CPUs it was started on (taskset: the scenario keeps it off the service CPU).
 * Prints "ready" once all of it is in place, then runs until killed.
 *
 *   hostile2 DIR MAPS THREADS */
#include <errno.h>
#include <fcntl.h>
#include <numa.h>
#include <pthread.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#define MEM_MB 32

static char *mem;
static size_t mem_len;
static int n_threads;
static cpu_set_t node_cpus[2];

/* Node node's CPUs among those it was started on (the scenario keeps it off the
 * service CPU). */
static void node_set(int node, const cpu_set_t *allowed, cpu_set_t *set) {
        struct bitmask *cpus = numa_allocate_cpumask();

        CPU_ZERO(set);
        if (numa_node_to_cpus(node, cpus) == 0)
                for (unsigned c = 0; c < cpus->size && c < CPU_SETSIZE; c++)
                        if (numa_bitmask_isbitset(cpus, c) && CPU_ISSET(c, allowed))
                                CPU_SET(c, set);
        numa_free_cpumask(cpus);
}

/* One hopping thread: its part of mem touched on one node, 50 ms, then the other. */
static void *hopper(void *arg) {
        long i = (long) arg;
        size_t part = mem_len / (size_t) n_threads, from = part * (size_t) i;
        struct timespec nap = { 0, 50 * 1000 * 1000 };

        for (unsigned round = 0;; round++) {
                cpu_set_t *set = &node_cpus[(i + round) % 2];

                sched_setaffinity(0, sizeof(*set), set);
                for (size_t off = from; off < from + part; off += 4096)
                        mem[off]++;
                nanosleep(&nap, NULL);
        }
        return NULL;
}

/* Keeps the mmap lock busy: every call takes it for writing, for 5 ms out of 10 (in
 * a guest whose vCPUs share two host cores, a CPU spinning for good slows every other
 * vCPU, the daemon's too, and the test would measure that). */
static void *lock_churn(void *arg) {
        struct timespec nap = { 0, 5 * 1000 * 1000 }, t0, t;

        (void) arg;
        for (;;) {
                clock_gettime(CLOCK_MONOTONIC, &t0);
                do {
                        void *p = mmap(NULL, 64 << 20, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

                        if (p != MAP_FAILED) {
                                mprotect(p, 64 << 20, PROT_READ);
                                munmap(p, 64 << 20);
                        }
                        clock_gettime(CLOCK_MONOTONIC, &t);
                } while ((t.tv_sec - t0.tv_sec) * 1000000000L + (t.tv_nsec - t0.tv_nsec) < 5000000L);
                nanosleep(&nap, NULL);
        }
        return NULL;
}

/* MAPS one-page mappings of files named with newlines. */
static int map_files(const char *dir, int n) {
        char name[4096], nl[201];

        memset(nl, '\n', 200);
        nl[200] = 0;
        for (int i = 0; i < n; i++) {
                int fd;
                void *p;

                snprintf(name, sizeof(name), "%s/%s%d", dir, nl, i);
                fd = open(name, O_RDWR | O_CREAT | O_TRUNC, 0600);
                if (fd < 0 || ftruncate(fd, 4096) < 0) {
                        fprintf(stderr, "hostile2: %s: %s\n", dir, strerror(errno));
                        return -1;
                }
                p = mmap(NULL, 4096, PROT_READ, MAP_SHARED, fd, 0);
                close(fd);
                if (p == MAP_FAILED) {
                        fprintf(stderr, "hostile2: mmap %d: %s\n", i, strerror(errno));
                        return -1;
                }
                (void) *(volatile char *) p;
        }
        return 0;
}

int main(int argc, char **argv) {
        cpu_set_t allowed;
        pthread_t t;

        if (argc != 4 || numa_available() < 0) {
                fprintf(stderr, "usage: hostile2 DIR MAPS THREADS (on a NUMA machine)\n");
                return 2;
        }
        n_threads = atoi(argv[3]);
        if (sched_getaffinity(0, sizeof(allowed), &allowed) < 0)
                return 1;
        node_set(0, &allowed, &node_cpus[0]);
        node_set(1, &allowed, &node_cpus[1]);
        if (CPU_COUNT(&node_cpus[0]) == 0 || CPU_COUNT(&node_cpus[1]) == 0) {
                fprintf(stderr, "hostile2: needs CPUs of both nodes\n");
                return 1;
        }
        mem_len = (size_t) MEM_MB << 20;
        mem = mmap(NULL, mem_len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (mem == MAP_FAILED || map_files(argv[1], atoi(argv[2])) < 0)
                return 1;
        memset(mem, 1, mem_len);
        for (long i = 0; i < n_threads; i++)
                if (pthread_create(&t, NULL, hopper, (void *) i) != 0) {
                        fprintf(stderr, "hostile2: thread %ld: %s\n", i, strerror(errno));
                        return 1;
                }
        if (pthread_create(&t, NULL, lock_churn, NULL) != 0)
                return 1;
        printf("ready\n");
        fflush(stdout);
        for (;;)
                pause();
}
