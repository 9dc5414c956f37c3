/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The stalls workload (docs/BENCHMARKS.md): one thread doing random reads over SIZE MiB
 * first-touched on node TOUCH, from a CPU of node RUN, timing every batch of BATCH reads
 * (as pmbench does), while a balancer fixes (or does not fix) its placement.
 *
 *   stalls SIZE_MB TOUCH_NODE RUN_NODE READY_FILE STATS_FILE
 *
 * READY_FILE gets "<pid> <start-hex> <bytes>" once the memory is placed and the thread
 * runs on RUN. STATS_FILE is rewritten (atomically) every 0.5 s and at SIGTERM with
 *   {"batches": N, "over_1ms": N, "over_4ms": N, "over_16ms": N, "worst_us": N,
 *    "median_us": N}
 * where median_us is the median batch time of the first 0.5 s window (before any
 * balancer has moved a page: the baseline a stall compares to). */
#include <numa.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#define BATCH 256
#define WINDOW 4096

static volatile sig_atomic_t stop;
static void on_term(int sig) { (void) sig; stop = 1; }

static uint64_t now_ns(void) {
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        return (uint64_t) ts.tv_sec * 1000000000u + (uint64_t) ts.tv_nsec;
}

static void pin(int node) {
        if (numa_run_on_node(node) < 0) {
                perror("numa_run_on_node");
                exit(1);
        }
}

static int cmp_u32(const void *a, const void *b) {
        uint32_t x = *(const uint32_t *) a, y = *(const uint32_t *) b;
        return (x > y) - (x < y);
}

int main(int argc, char **argv) {
        uint64_t batches = 0, over1 = 0, over4 = 0, over16 = 0, worst = 0, x = 88172645463325252ull;
        uint64_t last_write, n_words;
        uint32_t first_median = 0;
        static uint32_t win[WINDOW];
        size_t n_win = 0, len;
        uint64_t *mem;
        char tmp[4096];
        FILE *f;

        if (argc != 6 || numa_available() < 0) {
                fprintf(stderr, "usage: stalls SIZE_MB TOUCH_NODE RUN_NODE READY_FILE STATS_FILE\n");
                return 2;
        }
        len = (size_t) atol(argv[1]) << 20;
        signal(SIGTERM, on_term);
        pin(atoi(argv[2]));
        mem = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (mem == MAP_FAILED) {
                perror("mmap");
                return 1;
        }
        memset(mem, 1, len);
        pin(atoi(argv[3]));
        n_words = len / sizeof(uint64_t);
        f = fopen(argv[4], "w");
        if (!f)
                return 1;
        fprintf(f, "%d %lx %zu\n", getpid(), (unsigned long) (uintptr_t) mem, len);
        fclose(f);

        last_write = now_ns();
        while (!stop) {
                volatile uint64_t sum = 0;
                uint64_t t0 = now_ns(), dt;
                for (int i = 0; i < BATCH; i++) {
                        x ^= x << 13;
                        x ^= x >> 7;
                        x ^= x << 17;
                        sum += mem[x % n_words];
                }
                dt = now_ns() - t0;
                batches++;
                over1 += dt > 1000000;
                over4 += dt > 4000000;
                over16 += dt > 16000000;
                if (dt > worst)
                        worst = dt;
                if (n_win < WINDOW)
                        win[n_win++] = (uint32_t) (dt / 1000 > UINT32_MAX ? UINT32_MAX : dt / 1000);
                if (t0 - last_write > 500000000 || stop) {
                        qsort(win, n_win, sizeof(*win), cmp_u32);
                        if (!first_median && n_win)
                                first_median = win[n_win / 2];
                        snprintf(tmp, sizeof(tmp), "%s.tmp", argv[5]);
                        f = fopen(tmp, "w");
                        if (f) {
                                fprintf(f, "{\"batches\": %llu, \"over_1ms\": %llu, \"over_4ms\": %llu, "
                                        "\"over_16ms\": %llu, \"worst_us\": %llu, \"median_us\": %u}\n",
                                        (unsigned long long) batches, (unsigned long long) over1,
                                        (unsigned long long) over4, (unsigned long long) over16,
                                        (unsigned long long) (worst / 1000), first_median);
                                fclose(f);
                                rename(tmp, argv[5]);
                        }
                        n_win = 0;
                        last_write = now_ns();
                }
        }
        /* The last numbers, complete. */
        snprintf(tmp, sizeof(tmp), "%s.tmp", argv[5]);
        f = fopen(tmp, "w");
        if (f) {
                fprintf(f, "{\"batches\": %llu, \"over_1ms\": %llu, \"over_4ms\": %llu, \"over_16ms\": %llu, "
                        "\"worst_us\": %llu, \"median_us\": %u}\n", (unsigned long long) batches,
                        (unsigned long long) over1, (unsigned long long) over4, (unsigned long long) over16,
                        (unsigned long long) (worst / 1000), first_median);
                fclose(f);
                rename(tmp, argv[5]);
        }
        return 0;
}
