/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The stalls workload (docs/BENCHMARKS.md): one thread doing random reads over SIZE MiB
 * first-touched on node TOUCH, from a CPU of node RUN, timing every batch of BATCH reads
 * (as pmbench does), while a balancer fixes (or does not fix) its placement.
 *
 *   stalls SIZE_MB TOUCH_NODE RUN_NODE READY_FILE STATS_FILE
 *
 * With STALLS_4K=1 in the environment the memory is base pages (MADV_NOHUGEPAGE).
 * READY_FILE gets "<pid> <start-hex> <bytes>" once the memory is placed and the thread
 * runs on RUN. STATS_FILE is rewritten (atomically) every 0.5 s and at SIGTERM with
 *   {"batches": N, "over_1ms": N, "over_4ms": N, "over_16ms": N, "worst_us": N,
 *    "median_us": N, "p99_us": N, "p999_us": N, "p9999_us": N, "hist": {...}}
 * over the whole run (latency-hist.h; percentiles within 6%). scripts/bench computes
 * the total stall time from hist: the time of every batch beyond the median batch of
 * the `none` mode's run (the same reads with nothing moving). */
#include <numa.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>
#include "latency-hist.h"

#define BATCH 256

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

static void write_stats(const char *path, const struct hist *h) {
        char tmp[4096];
        FILE *f = stats_open(path, tmp, sizeof(tmp));

        if (!f)
                return;
        fputc('{', f);
        hist_print_summary(f, h);
        fprintf(f, ", \"median_us\": %.1f, \"hist\": ", hist_percentile_us(h, 0.5));
        hist_print(f, h);
        fputs("}\n", f);
        stats_commit(f, tmp, path);
}

int main(int argc, char **argv) {
        static struct hist h;
        uint64_t x = 88172645463325252ull, last_write, n_words;
        size_t len;
        uint64_t *mem;
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
        /* STALLS_4K=1: base pages, each moved in the kernel's batches of base pages
         * rather than whole (docs/BENCHMARKS.md, "stalls"). */
        if (getenv("STALLS_4K") && madvise(mem, len, MADV_NOHUGEPAGE) < 0) {
                perror("madvise");
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
                uint64_t t0 = now_ns();

                random_reads(mem, n_words, &x, BATCH);
                hist_add(&h, now_ns() - t0);
                if (t0 - last_write > 500000000) {
                        write_stats(argv[5], &h);
                        last_write = now_ns();
                }
        }
        /* The last numbers, complete. */
        write_stats(argv[5], &h);
        return 0;
}
