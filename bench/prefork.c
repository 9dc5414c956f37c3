/* SPDX-License-Identifier: GPL-2.0-or-later */
/* bench/prefork.py's workload: a pre-fork server. The parent builds a read-mostly table
 * in its own anonymous memory (first touched where it runs), then forks WORKERS
 * workers, which share the table copy-on-write and look up random entries of it
 * forever; the parent waits, as a pre-fork server's master does.
 *
 *   prefork TABLE_MB WORKERS READY_FILE STATUS_FILE [nohuge]
 *
 * nohuge: the table without transparent huge pages (MADV_NOHUGEPAGE). With them, a
 * table shared since fork() is mapped by huge pages the daemon never moves as a
 * group's (docs/RULES.md, "Shared pages").
 *
 * READY_FILE gets "<parent pid> <table-start-hex> <worker pid>..." once every worker
 * reads. Every 200 ms the parent replaces STATUS_FILE with "<lookups>\n": every
 * worker's lookups since the start (they count in a page they share with the parent, a
 * cache line each).
 * Runs until killed (the benchmark kills the cgroup). */
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#define MB (UINT64_C(1) << 20)
/* One 64-byte line of the count page each: no line shared by two workers' counts. */
#define SLOT 8
#define WORKERS_MAX (4096 / 8 / SLOT)

static void write_file(const char *path, const char *text) {
        char tmp[4096];
        FILE *f;

        snprintf(tmp, sizeof(tmp), "%s.tmp", path);
        f = fopen(tmp, "w");
        if (!f || fputs(text, f) < 0 || fclose(f) != 0 || rename(tmp, path) < 0) {
                perror(path);
                exit(1);
        }
}

/* A worker: random lookups (a multiply-xorshift generator, no locks), counted in
 * batches of 4,096 in its slot. */
static void worker(const volatile uint64_t *table, uint64_t n, volatile uint64_t *count, unsigned seed) {
        uint64_t x = 0x9e3779b97f4a7c15ull * (seed + 1), sum = 0;

        for (;;) {
                for (int i = 0; i < 4096; i++) {
                        x ^= x << 13;
                        x ^= x >> 7;
                        x ^= x << 17;
                        sum += table[x % n];
                }
                *count += 4096;
                if (sum == 1)   /* never, but the reads stay */
                        *count += 1;
        }
}

int main(int argc, char **argv) {
        uint64_t len, n, *table;
        unsigned workers;
        volatile uint64_t *counts;
        char text[4096];
        int at;

        if (argc < 5 || argc > 6 || (workers = (unsigned) atoi(argv[2])) == 0 || workers > WORKERS_MAX) {
                fprintf(stderr, "usage: prefork TABLE_MB WORKERS(1-%d) READY_FILE STATUS_FILE [nohuge]\n", WORKERS_MAX);
                return 2;
        }
        len = strtoull(argv[1], NULL, 10) * MB;
        n = len / sizeof(uint64_t);
        table = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        counts = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
        if (table == MAP_FAILED || counts == MAP_FAILED) {
                perror("mmap");
                return 1;
        }
        if (argc == 6 && strcmp(argv[5], "nohuge") == 0)
                (void) madvise(table, len, MADV_NOHUGEPAGE);
        for (uint64_t i = 0; i < n; i++)
                table[i] = i * 2654435761u;
        at = snprintf(text, sizeof(text), "%d %lx", (int) getpid(), (unsigned long) (uintptr_t) table);
        for (unsigned w = 0; w < workers; w++) {
                pid_t pid = fork();

                if (pid < 0) {
                        perror("fork");
                        return 1;
                }
                if (pid == 0)
                        worker(table, n, &counts[w * SLOT], w);
                at += snprintf(text + at, sizeof(text) - (size_t) at, " %d", (int) pid);
        }
        snprintf(text + at, sizeof(text) - (size_t) at, "\n");
        write_file(argv[3], text);
        for (;;) {
                struct timespec ts = { 0, 200 * 1000 * 1000 };
                uint64_t total = 0;

                nanosleep(&ts, NULL);
                for (unsigned w = 0; w < workers; w++)
                        total += counts[w * SLOT];
                snprintf(text, sizeof(text), "%llu\n", (unsigned long long) total);
                write_file(argv[4], text);
        }
}
