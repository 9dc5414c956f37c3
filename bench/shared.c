/* SPDX-License-Identifier: GPL-2.0-or-later */
/* scripts/bench's numa01-like workload: two processes, one on each of nodes 0 and 1,
 * each reading random words of its own private memory and of memory the two share.
 *
 *   shared PRIVATE_MB SHARED_MB READY_FILE STATUS_FILE [bind]
 *
 * The parent maps SHARED_MB shared and anonymous and touches it from node 0, then
 * forks process k = 0, 1, which touches its PRIVATE_MB from node 0 too (so process 1's
 * is all misplaced), moves to the first CPU of node k and reads: one random word of
 * its private memory, one of the shared, in turn. With "bind", each private part is
 * bound to its process's node and the shared memory interleaved over both before the
 * touch (the ideal). READY_FILE gets "<pid0> <pid1>" once both read. Every 100 ms each
 * process asks where its pages are (move_pages queries) and the parent replaces
 * STATUS_FILE with
 *   "P0_OWN P1_OWN PRIVATE_PAGES SHARED_ON0 SHARED_ON1 READS UNKNOWN\n"
 * (private pages on their process's node, the pages of one private part, shared pages
 * per node, the two processes' reads in units of 2^20, and pages their last queries
 * could not place, as in split.c). Runs until SIGTERM. */
#include <numa.h>
#include <numaif.h>
#include <sched.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include "node-cpu.h"

/* What each process reports, in memory shared with the parent. */
struct report {
        volatile uint64_t own, shared_on[2], reads, unknown;
};

static void *map(size_t bytes, int flags) {
        void *p = mmap(NULL, bytes, PROT_READ | PROT_WRITE, flags | MAP_ANONYMOUS, -1, 0);

        if (p == MAP_FAILED) {
                perror("shared: mmap");
                exit(2);
        }
        madvise(p, bytes, MADV_NOHUGEPAGE);     /* base pages, as in numa02 */
        return p;
}

static void set_policy(void *p, size_t bytes, int mode, unsigned long mask) {
        if (mbind(p, bytes, mode, &mask, sizeof(mask) * 8, 0) < 0) {
                perror("shared: mbind");
                exit(2);
        }
}

/* Pages of [p, p + bytes) on each node (at most two counted), into on[]; returns the
 * pages the query could not place (see split.c). */
static uint64_t where(const char *p, size_t bytes, void **addrs, int *status, uint64_t on[2]) {
        size_t psz = (size_t) sysconf(_SC_PAGESIZE), n = bytes / psz;
        uint64_t unknown = 0;

        on[0] = on[1] = 0;
        for (size_t i = 0; i < n; i++)
                addrs[i] = (void *) (p + i * psz);
        if (move_pages(0, n, addrs, NULL, status, 0) < 0)
                return n;
        for (size_t i = 0; i < n; i++) {
                if (status[i] == 0 || status[i] == 1)
                        on[status[i]]++;
                else if (status[i] < 0)
                        unknown++;
        }
        return unknown;
}

static uint64_t now_ms(void) {
        struct timespec ts;

        clock_gettime(CLOCK_MONOTONIC_COARSE, &ts);
        return (uint64_t) ts.tv_sec * 1000 + (uint64_t) ts.tv_nsec / 1000000;
}

static void child(int k, size_t priv_bytes, const uint64_t *shared, size_t shared_bytes, bool bind,
                  struct report *rep) {
        size_t pn = priv_bytes / 8, sn = shared_bytes / 8, psz = (size_t) sysconf(_SC_PAGESIZE);
        size_t most = (priv_bytes > shared_bytes ? priv_bytes : shared_bytes) / psz;
        void **addrs = calloc(most, sizeof(*addrs));
        int *status = calloc(most, sizeof(*status));
        uint64_t *priv = map(priv_bytes, MAP_PRIVATE), x = 88172645463325252ull + (uint64_t) k, sum = 0;
        uint64_t on[2];

        if (!addrs || !status)
                exit(2);
        prctl(PR_SET_PDEATHSIG, SIGTERM);       /* never outlives the parent */
        if (bind)
                set_policy(priv, priv_bytes, MPOL_BIND, 1ul << k);
        memset(priv, 1, priv_bytes);            /* from node 0's CPU: the parent's */
        pin(first_cpu(k));
        for (uint64_t n = 1, last = 0; !stop; n++) {
                /* xorshift: random words, one private and one shared per round. */
                x ^= x << 13, x ^= x >> 7, x ^= x << 17;
                sum += priv[x % pn] + shared[(x >> 20) % sn];
                if ((n & 4095) == 0 && now_ms() - last >= 100) {
                        last = now_ms();
                        rep->unknown = where((const char *) priv, priv_bytes, addrs, status, on);
                        rep->own = on[k];
                        rep->unknown += where((const char *) shared, shared_bytes, addrs, status, on);
                        rep->shared_on[0] = on[0];
                        rep->shared_on[1] = on[1];
                        rep->reads = n;
                }
        }
        exit(sum == 42);                        /* keeps the reads */
}

int main(int argc, char **argv) {
        size_t priv_bytes, shared_bytes;
        struct report *rep;
        uint64_t *shared;
        pid_t pid[2];
        bool bind;

        if (argc < 5 || numa_available() < 0 || numa_max_node() < 1) {
                fprintf(stderr, "usage: shared PRIVATE_MB SHARED_MB READY_FILE STATUS_FILE [bind] "
                        "(needs two NUMA nodes)\n");
                return 2;
        }
        priv_bytes = (size_t) strtoul(argv[1], NULL, 10) << 20;
        shared_bytes = (size_t) strtoul(argv[2], NULL, 10) << 20;
        bind = argc > 5 && strcmp(argv[5], "bind") == 0;
        if (!priv_bytes || !shared_bytes || first_cpu(0) < 0 || first_cpu(1) < 0)
                return 2;
        signal(SIGTERM, on_term);
        pin(first_cpu(0));
        rep = map(2 * sizeof(*rep), MAP_SHARED);
        memset(rep, 0, 2 * sizeof(*rep));
        shared = map(shared_bytes, MAP_SHARED);
        if (bind)
                set_policy(shared, shared_bytes, MPOL_INTERLEAVE, 3);
        memset(shared, 1, shared_bytes);
        for (int k = 0; k < 2; k++) {
                pid[k] = fork();
                if (pid[k] == 0)
                        child(k, priv_bytes, shared, shared_bytes, bind, &rep[k]);
                if (pid[k] < 0)
                        return 2;
        }
        while (!stop && !(rep[0].reads && rep[1].reads))
                usleep(10 * 1000);
        if (write_atomically(argv[3], "%d %d\n", (int) pid[0], (int) pid[1]) < 0)
                return 2;
        while (!stop) {
                write_atomically(argv[4], "%llu %llu %zu %llu %llu %llu %llu\n", (unsigned long long) rep[0].own,
                                 (unsigned long long) rep[1].own, priv_bytes / (size_t) sysconf(_SC_PAGESIZE),
                                 (unsigned long long) rep[1].shared_on[0], (unsigned long long) rep[1].shared_on[1],
                                 (unsigned long long) ((rep[0].reads + rep[1].reads) >> 20),
                                 (unsigned long long) (rep[0].unknown + rep[1].unknown));
                usleep(100 * 1000);
        }
        for (int k = 0; k < 2; k++) {
                kill(pid[k], SIGTERM);
                waitpid(pid[k], NULL, 0);
        }
        return 0;
}
