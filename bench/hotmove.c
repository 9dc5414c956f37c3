/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The tiering-big workload (docs/BENCHMARKS.md, "tiering-big on 6.12"): SIZE MiB of
 * base pages (MADV_NOHUGEPAGE) first-touched by one thread, then idle until told
 * which window to read: on SIGUSR1 it reads WINDOW_FILE ("<offset MiB>") and from then
 * reads random words of [offset, offset + HOT MiB) only, until the next SIGUSR1 or
 * SIGTERM. The memory is larger than the fast node its cgroup's cpuset allows, so part
 * of it lands on the slow node; scripts/bench picks windows that did.
 *
 *   hotmove SIZE_MB HOT_MB READY_FILE WINDOW_FILE
 *
 * READY_FILE gets "<pid> <start-hex> <bytes>" once the memory is touched. At each
 * window's end (a SIGUSR1 or SIGTERM) it prints that window's reads per second as a
 * line of JSON to stdout. */
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

static volatile sig_atomic_t stop, next;
static void on_term(int sig) { (void) sig; stop = 1; }
static void on_usr1(int sig) { (void) sig; next = 1; }

static double now_s(void) {
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        return (double) ts.tv_sec + (double) ts.tv_nsec / 1e9;
}

/* The window's offset in bytes, or (size_t) -1 if the file says nothing in range. */
static size_t read_window(const char *path, size_t size, size_t hot) {
        unsigned long long mb;
        FILE *f = fopen(path, "r");
        int ok = f && fscanf(f, "%llu", &mb) == 1;

        if (f)
                fclose(f);
        if (!ok || mb > (size - hot) >> 20)
                return (size_t) -1;
        return (size_t) mb << 20;
}

int main(int argc, char **argv) {
        size_t size, hot, off = (size_t) -1;
        uint64_t x = 88172645463325252ull, reads = 0, sum = 0;
        volatile uint64_t *words = NULL;
        char *mem, tmp[4096];
        double t0 = 0;
        FILE *f;

        if (argc != 5) {
                fprintf(stderr, "usage: hotmove SIZE_MB HOT_MB READY_FILE WINDOW_FILE\n");
                return 2;
        }
        size = strtoull(argv[1], NULL, 10) << 20;
        hot = strtoull(argv[2], NULL, 10) << 20;
        if (!size || !hot || hot > size) {
                fprintf(stderr, "hotmove: bad sizes\n");
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
        signal(SIGUSR1, on_usr1);
        /* Written whole, then renamed: bench.py takes the file's existence as ready
         * (a reader that found it empty failed two runs of tiering-shares). */
        snprintf(tmp, sizeof(tmp), "%s.tmp", argv[3]);
        f = fopen(tmp, "w");
        if (!f || fprintf(f, "%d %lx %zu\n", (int) getpid(), (unsigned long) (uintptr_t) mem, size) < 0 ||
            fclose(f) != 0 || rename(tmp, argv[3]) < 0)
                return 1;
        setvbuf(stdout, NULL, _IOLBF, 0);
        while (!stop) {
                if (next) {
                        next = 0;
                        if (words)
                                printf("{\"offset_mb\": %zu, \"reads_per_s\": %.0f}\n", off >> 20,
                                       (double) reads / (now_s() - t0));
                        off = read_window(argv[4], size, hot);
                        words = off == (size_t) -1 ? NULL : (volatile uint64_t *) (mem + off);
                        reads = 0;
                        t0 = now_s();
                }
                if (!words) {
                        usleep(10000);
                        continue;
                }
                for (int i = 0; i < 4096; i++) {
                        /* xorshift64: a random word of the hot window */
                        x ^= x << 13;
                        x ^= x >> 7;
                        x ^= x << 17;
                        sum += words[x % (hot / sizeof(uint64_t))];
                }
                reads += 4096;
        }
        if (words)
                printf("{\"offset_mb\": %zu, \"reads_per_s\": %.0f}\n", off >> 20, (double) reads / (now_s() - t0));
        printf("{\"sum\": %llu}\n", (unsigned long long) (sum & 1));
        return 0;
}
