/* SPDX-License-Identifier: GPL-2.0-or-later */
/* A latency histogram for the benchmark workloads (steady.c, stalls.c): log-linear,
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
