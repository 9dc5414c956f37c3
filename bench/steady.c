/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The steady workload (docs/BENCHMARKS.md, scenario steady): memory already local, and
 * reader threads on every node doing pmbench-like random reads over their own part of
 * one large mapping, every batch of BATCH reads timed into a histogram. What a balancer
 * costs a workload that needs nothing from it.
 *
 *   steady MB_PER_THREAD THREADS_PER_NODE READY_FILE STATS_FILE [CHURN_KB]
 *
 * Each thread runs on its node and first-touches its own slice there, so every page is
 * local from the start. With CHURN_KB, each thread also maps, touches and unmaps
 * CHURN_KB of fresh memory every 64 batches (an allocator handing memory back): those
 * need the process's mmap lock for writing and take page faults, so a reader of
 * /proc/PID/numa_maps that holds the lock across a long walk shows up in their times.
 *
 * READY_FILE gets "<pid> <start-hex> <bytes>" once every slice is touched. STATS_FILE is
 * rewritten (atomically) every second and at SIGTERM, one JSON object:
 *   batches, over_1ms, over_4ms, over_16ms, worst_us, p50_us, p99_us, p999_us, p9999_us,
 *   per_thread (batches of each), churn_ops, churn_over_1ms, churn_over_4ms,
 *   churn_over_16ms, churn_worst_us, churn_p9999_us, hist, churn_hist
 * Percentiles come from the histogram (latency-hist.h: within 6%), the over_* counts and
 * worst are exact. */
#include <numa.h>
#include <pthread.h>
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
#define CHURN_EVERY 64
#define MAX_THREADS 256

struct reader {
        pthread_t thread;
        int node;
        uint64_t *mem;
        size_t words;
        struct hist reads, churn;
};

static volatile sig_atomic_t stop;
static size_t churn_bytes;
static pthread_barrier_t touched;

static void on_term(int sig) { (void) sig; stop = 1; }

static uint64_t now_ns(void) {
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        return (uint64_t) ts.tv_sec * 1000000000u + (uint64_t) ts.tv_nsec;
}

static void churn_once(struct reader *r) {
        uint64_t t0 = now_ns();
        char *p = mmap(NULL, churn_bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

        if (p == MAP_FAILED)
                return;
        for (size_t off = 0; off < churn_bytes; off += 4096)
                p[off] = 1;
        munmap(p, churn_bytes);
        hist_add(&r->churn, now_ns() - t0);
}

static void *reader_main(void *arg) {
        struct reader *r = arg;
        uint64_t x = 88172645463325252ull ^ (uint64_t) (uintptr_t) r;

        if (numa_run_on_node(r->node) < 0) {
                perror("numa_run_on_node");
                exit(1);
        }
        memset(r->mem, 1, r->words * sizeof(uint64_t));
        pthread_barrier_wait(&touched);
        for (uint64_t k = 1; !stop; k++) {
                uint64_t t0 = now_ns();

                random_reads(r->mem, r->words, &x, BATCH);
                hist_add(&r->reads, now_ns() - t0);
                if (churn_bytes && k % CHURN_EVERY == 0)
                        churn_once(r);
        }
        return NULL;
}

static void write_stats(const char *path, struct reader *rs, int n) {
        static struct hist reads, churn;
        char tmp[4096];
        FILE *f;

        memset(&reads, 0, sizeof(reads));
        memset(&churn, 0, sizeof(churn));
        for (int i = 0; i < n; i++) {
                hist_merge(&reads, &rs[i].reads);
                hist_merge(&churn, &rs[i].churn);
        }
        f = stats_open(path, tmp, sizeof(tmp));
        if (!f)
                return;
        fputc('{', f);
        hist_print_summary(f, &reads);
        fputs(", \"per_thread\": [", f);
        for (int i = 0; i < n; i++)
                fprintf(f, "%s%llu", i ? ", " : "",
                        (unsigned long long) hist_load(&rs[i].reads.n));
        fprintf(f, "], \"churn_ops\": %llu, \"churn_over_1ms\": %llu, \"churn_over_4ms\": %llu, "
                "\"churn_over_16ms\": %llu, \"churn_worst_us\": %llu, \"churn_p9999_us\": %.1f, \"hist\": ",
                (unsigned long long) churn.n, (unsigned long long) churn.over1,
                (unsigned long long) churn.over4, (unsigned long long) churn.over16,
                (unsigned long long) (churn.worst / 1000), hist_percentile_us(&churn, 0.9999));
        hist_print(f, &reads);
        fputs(", \"churn_hist\": ", f);
        hist_print(f, &churn);
        fputs("}\n", f);
        stats_commit(f, tmp, path);
}

/* The nodes that have CPUs (a memory-only node gets no reader). */
static int cpu_nodes(int *nodes) {
        struct bitmask *cpus = numa_allocate_cpumask();
        int n = 0;

        for (int node = 0; node <= numa_max_node(); node++)
                if (numa_node_to_cpus(node, cpus) == 0 && numa_bitmask_weight(cpus) > 0)
                        nodes[n++] = node;
        numa_free_cpumask(cpus);
        return n;
}

int main(int argc, char **argv) {
        static struct reader rs[MAX_THREADS];
        int nodes[MAX_THREADS], n_nodes, per_node, n;
        size_t slice;
        uint64_t *mem;
        FILE *f;

        if ((argc != 5 && argc != 6) || numa_available() < 0) {
                fprintf(stderr, "usage: steady MB_PER_THREAD THREADS_PER_NODE READY_FILE STATS_FILE [CHURN_KB]\n");
                return 2;
        }
        slice = (size_t) atol(argv[1]) << 20;
        per_node = atoi(argv[2]);
        churn_bytes = argc == 6 ? (size_t) atol(argv[5]) << 10 : 0;
        n_nodes = cpu_nodes(nodes);
        n = n_nodes * per_node;
        if (!slice || per_node <= 0 || n > MAX_THREADS) {
                fprintf(stderr, "steady: bad size or thread count\n");
                return 2;
        }
        signal(SIGTERM, on_term);
        /* One mapping for all the readers: one VMA, as a big heap or buffer pool is. */
        /* Between two PROT_NONE pages, so that the kernel never merges the threads'
         * stacks into it: its numa_maps line stays the one at READY_FILE's start. */
        mem = mmap(NULL, slice * (size_t) n + 2 * 4096, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (mem == MAP_FAILED) {
                perror("mmap");
                return 1;
        }
        mem = (uint64_t *) ((char *) mem + 4096);
        if (mprotect(mem, slice * (size_t) n, PROT_READ | PROT_WRITE)) {
                perror("mprotect");
                return 1;
        }
        /* STEADY_4K=1: base pages only (THP off for the mapping, as many databases run):
         * a page-table walk of it (numa_maps) then visits every PTE, not one per 2 MiB. */
        if (getenv("STEADY_4K") && madvise(mem, slice * (size_t) n, MADV_NOHUGEPAGE)) {
                perror("madvise");
                return 1;
        }
        pthread_barrier_init(&touched, NULL, (unsigned) n + 1);
        for (int i = 0; i < n; i++) {
                rs[i].node = nodes[i / per_node];
                rs[i].mem = (uint64_t *) ((char *) mem + slice * (size_t) i);
                rs[i].words = slice / sizeof(uint64_t);
                if (pthread_create(&rs[i].thread, NULL, reader_main, &rs[i])) {
                        fprintf(stderr, "steady: pthread_create failed\n");
                        return 1;
                }
        }
        pthread_barrier_wait(&touched);
        f = fopen(argv[3], "w");
        if (!f)
                return 1;
        fprintf(f, "%d %lx %zu\n", getpid(), (unsigned long) (uintptr_t) mem, slice * (size_t) n);
        fclose(f);
        while (!stop) {
                sleep(1);
                write_stats(argv[4], rs, n);
        }
        for (int i = 0; i < n; i++)
                pthread_join(rs[i].thread, NULL);
        write_stats(argv[4], rs, n);
        return 0;
}
