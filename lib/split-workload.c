/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The split workload (split-workload.h). */
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>
#include "clock.h"
#include "split-workload.h"

struct part {
        const uint64_t *base;
        size_t words;
        int cpu;                   /* -1: not pinned */
        atomic_bool *stop;
        atomic_int tid;
        atomic_uint_fast64_t batches;
        atomic_uint_fast64_t slow[2];  /* batches that took 1 ms or more, 4 ms or more */
        pthread_t thread;
};

struct split_workload {
        atomic_bool stop;
        unsigned n;
        struct part parts[SPLIT_THREADS_MAX];
};


static void *reader(void *arg) {
        struct part *p = arg;
        uint64_t x = (uintptr_t) p | 1, sum = 0;

        if (p->cpu >= 0) {
                cpu_set_t set;
                CPU_ZERO(&set);
                CPU_SET(p->cpu, &set);
                pthread_setaffinity_np(pthread_self(), sizeof(set), &set);
        }
        atomic_store(&p->tid, (int) syscall(SYS_gettid));
        while (!atomic_load_explicit(p->stop, memory_order_relaxed)) {
                uint64_t t0 = clock_now_ns(CLOCK_MONOTONIC), dt;

                for (int i = 0; i < 4096; i++) {
                        x ^= x << 13;
                        x ^= x >> 7;
                        x ^= x << 17;
                        sum += p->base[x % p->words];
                }
                /* A batch takes a fraction of a millisecond: longer, something stalled it. */
                dt = clock_now_ns(CLOCK_MONOTONIC) - t0;
                if (dt >= 1000000)
                        atomic_fetch_add_explicit(&p->slow[0], 1, memory_order_relaxed);
                if (dt >= 4000000)
                        atomic_fetch_add_explicit(&p->slow[1], 1, memory_order_relaxed);
                atomic_fetch_add_explicit(&p->batches, 1, memory_order_relaxed);
        }
        return (void *) (uintptr_t) sum;   /* keeps the reads */
}

int split_workload_start(const uint64_t *buf, size_t bytes, unsigned n, const int *cpus, struct split_workload **ret) {
        struct split_workload *w;
        size_t words = bytes / 8 / (n ? n : 1);

        if (!buf || n == 0 || n > SPLIT_THREADS_MAX || words == 0)
                return -EINVAL;
        w = calloc(1, sizeof(*w));
        if (!w)
                return -ENOMEM;
        for (unsigned k = 0; k < n; k++) {
                struct part *p = &w->parts[k];
                p->base = buf + k * words;
                p->words = words;
                p->cpu = cpus ? cpus[k] : -1;
                p->stop = &w->stop;
                if (pthread_create(&p->thread, NULL, reader, p) != 0) {
                        split_workload_stop(w);
                        return -EAGAIN;
                }
                w->n++;
        }
        for (unsigned k = 0; k < n; k++)
                while (atomic_load(&w->parts[k].tid) == 0)
                        usleep(1000);
        *ret = w;
        return 0;
}

pid_t split_workload_tid(const struct split_workload *w, unsigned k) {
        return k < w->n ? (pid_t) atomic_load(&w->parts[k].tid) : 0;
}

uint64_t split_workload_batches(const struct split_workload *w) {
        uint64_t b = 0;

        for (unsigned k = 0; k < w->n; k++)
                b += atomic_load(&w->parts[k].batches);
        return b;
}

void split_workload_slow(const struct split_workload *w, uint64_t *over_1ms, uint64_t *over_4ms) {
        *over_1ms = *over_4ms = 0;
        for (unsigned k = 0; k < w->n; k++) {
                *over_1ms += atomic_load(&w->parts[k].slow[0]);
                *over_4ms += atomic_load(&w->parts[k].slow[1]);
        }
}

void split_workload_stop(struct split_workload *w) {
        if (!w)
                return;
        atomic_store(&w->stop, true);
        for (unsigned k = 0; k < w->n; k++)
                pthread_join(w->parts[k].thread, NULL);
        free(w);
}
