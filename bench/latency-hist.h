/* SPDX-License-Identifier: GPL-2.0-or-later */
/* What the benchmark workloads (steady.c, stalls.c) share: the batch of random reads
 * they time, the stats file they rewrite, and a latency histogram: log-linear,
 * 16 buckets per power of two (each within 6%), with exact counts over 1, 4 and 16 ms
 * and the worst. One thread writes a histogram, another may read it: every field is
 * stored and loaded whole (relaxed atomics). Printed as {"lower bound ns": count}, so
 * that scripts/bench takes the difference of two snapshots over its own window. */
#pragma once
#include <stdint.h>
#include <stdio.h>

#define HIST_SUB 16
#define HIST_BUCKETS (64 * HIST_SUB)

struct hist {
        uint64_t n, over1, over4, over16, worst;
        uint64_t b[HIST_BUCKETS];
};

/* Values below HIST_SUB ns exactly, then HIST_SUB buckets per power of two. */
static inline unsigned hist_bucket(uint64_t v) {
        unsigned e;

        if (v < HIST_SUB)
                return (unsigned) v;
        e = 63 - (unsigned) __builtin_clzll(v);
        return (e - 3) * HIST_SUB + (unsigned) ((v >> (e - 4)) & (HIST_SUB - 1));
}

static inline uint64_t hist_bucket_low(unsigned i) {
        if (i < HIST_SUB)
                return i;
        return ((uint64_t) HIST_SUB + i % HIST_SUB) << (i / HIST_SUB - 1);
}

static inline void hist_store(uint64_t *p, uint64_t v) { __atomic_store_n(p, v, __ATOMIC_RELAXED); }
static inline uint64_t hist_load(const uint64_t *p) { return __atomic_load_n(p, __ATOMIC_RELAXED); }

/* By the histogram's one writer. */
static inline void hist_add(struct hist *h, uint64_t ns) {
        unsigned i = hist_bucket(ns);

        hist_store(&h->n, h->n + 1);
        hist_store(&h->b[i], h->b[i] + 1);
        if (ns > 1000000)
                hist_store(&h->over1, h->over1 + 1);
        if (ns > 4000000)
                hist_store(&h->over4, h->over4 + 1);
        if (ns > 16000000)
                hist_store(&h->over16, h->over16 + 1);
        if (ns > h->worst)
                hist_store(&h->worst, ns);
}

/* By any thread: adds from's counts into to (to is the reader's own). */
static inline void hist_merge(struct hist *to, const struct hist *from) {
        uint64_t w = hist_load(&from->worst);

        to->n += hist_load(&from->n);
        to->over1 += hist_load(&from->over1);
        to->over4 += hist_load(&from->over4);
        to->over16 += hist_load(&from->over16);
        if (w > to->worst)
                to->worst = w;
        for (unsigned i = 0; i < HIST_BUCKETS; i++)
                to->b[i] += hist_load(&from->b[i]);
}

/* The lower bound (µs) of the bucket holding the q-quantile; 0 when empty. */
static inline double hist_percentile_us(const struct hist *h, double q) {
        uint64_t total = 0, want, seen = 0;

        for (unsigned i = 0; i < HIST_BUCKETS; i++)
                total += h->b[i];
        if (!total)
                return 0;
        want = (uint64_t) (q * (double) total);
        for (unsigned i = 0; i < HIST_BUCKETS; i++) {
                seen += h->b[i];
                if (seen > want)
                        return (double) hist_bucket_low(i) / 1000.0;
        }
        return (double) h->worst / 1000.0;
}

static inline void hist_print(FILE *f, const struct hist *h) {
        int first = 1;

        fputc('{', f);
        for (unsigned i = 0; i < HIST_BUCKETS; i++)
                if (h->b[i]) {
                        fprintf(f, "%s\"%llu\": %llu", first ? "" : ", ", (unsigned long long) hist_bucket_low(i),
                                (unsigned long long) h->b[i]);
                        first = 0;
                }
        fputc('}', f);
}

/* n random 8-byte reads over words of mem, as pmbench does (xorshift64, state *x): the
 * unit every workload times. */
static inline void random_reads(const uint64_t *mem, uint64_t words, uint64_t *x, int n) {
        volatile uint64_t sum = 0;
        uint64_t s = *x;

        for (int i = 0; i < n; i++) {
                s ^= s << 13;
                s ^= s >> 7;
                s ^= s << 17;
                sum += mem[s % words];
        }
        *x = s;
}

/* The counters and percentiles of h as JSON members (no braces): batches, over_1ms,
 * over_4ms, over_16ms, worst_us, p50_us, p99_us, p999_us, p9999_us. */
static inline void hist_print_summary(FILE *f, const struct hist *h) {
        fprintf(f, "\"batches\": %llu, \"over_1ms\": %llu, \"over_4ms\": %llu, \"over_16ms\": %llu, "
                "\"worst_us\": %llu, \"p50_us\": %.1f, \"p99_us\": %.1f, \"p999_us\": %.1f, \"p9999_us\": %.1f",
                (unsigned long long) h->n, (unsigned long long) h->over1, (unsigned long long) h->over4,
                (unsigned long long) h->over16, (unsigned long long) (h->worst / 1000), hist_percentile_us(h, 0.5),
                hist_percentile_us(h, 0.99), hist_percentile_us(h, 0.999), hist_percentile_us(h, 0.9999));
}

/* The stats file is rewritten whole, never read half-written: written to PATH.tmp
 * (stats_open, which returns NULL if it cannot) and renamed (stats_commit). */
static inline FILE *stats_open(const char *path, char *tmp, size_t size) {
        snprintf(tmp, size, "%s.tmp", path);
        return fopen(tmp, "w");
}

static inline void stats_commit(FILE *f, const char *tmp, const char *path) {
        fclose(f);
        rename(tmp, path);
}
