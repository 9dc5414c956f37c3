/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The tiering workload (docs/BENCHMARKS.md, "tiering"): SIZE MiB of base pages
 * (MADV_NOHUGEPAGE) first-touched from node 0, of which one thread then reads random
 * words of the first HOT MiB only, from node 0, until SIGTERM; the rest is never read
 * again (cold). scripts/bench moves it all to the slow node with migratepages(8) once
 * it is ready, and measures where the hot and the cold parts go.
 *
 *   hot SIZE_MB HOT_MB READY_FILE
 *
 * READY_FILE gets "<pid> <start-hex> <bytes>" once the memory is touched. On SIGTERM
 * it prints the reads done per second of its run to stdout. */
#include <numa.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

static volatile sig_atomic_t stop;
static void on_term(int sig) { (void) sig; stop = 1; }

static double now_s(void) {
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        return (double) ts.tv_sec + (double) ts.tv_nsec / 1e9;
}

int main(int argc, char **argv) {
        size_t size, hot;
        uint64_t x = 88172645463325252ull, reads = 0, sum = 0;
        volatile uint64_t *words;
        char *mem, tmp[4096];
        double t0;
        FILE *f;

        if (argc != 4) {
                fprintf(stderr, "usage: hot SIZE_MB HOT_MB READY_FILE\n");
                return 2;
        }
        size = strtoull(argv[1], NULL, 10) << 20;
        hot = strtoull(argv[2], NULL, 10) << 20;
        if (!size || !hot || hot > size || numa_available() < 0 || numa_run_on_node(0) < 0) {
                fprintf(stderr, "hot: bad sizes, or no node 0 to run on\n");
                return 2;
        }
        mem = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (mem == MAP_FAILED) {
                perror("mmap");
                return 1;
        }
        madvise(mem, size, MADV_NOHUGEPAGE);
        memset(mem, 1, size);
        signal(SIGTERM, on_term);
        /* Written whole, then renamed: bench.py takes the file's existence as ready. */
        snprintf(tmp, sizeof(tmp), "%s.tmp", argv[3]);
        f = fopen(tmp, "w");
        if (!f || fprintf(f, "%d %lx %zu\n", (int) getpid(), (unsigned long) (uintptr_t) mem, size) < 0 ||
            fclose(f) != 0 || rename(tmp, argv[3]) < 0)
                return 1;
        words = (volatile uint64_t *) mem;
        t0 = now_s();
        while (!stop) {
                for (int i = 0; i < 4096; i++) {
                        /* xorshift64: a random word of the hot part */
                        x ^= x << 13;
                        x ^= x >> 7;
                        x ^= x << 17;
                        sum += words[x % (hot / sizeof(uint64_t))];
                }
                reads += 4096;
        }
        printf("{\"reads_per_s\": %.0f, \"sum\": %llu}\n", (double) reads / (now_s() - t0),
               (unsigned long long) (sum & 1));
        return 0;
}
