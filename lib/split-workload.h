/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The split workload: threads of the caller's process, thread k reading random 8-byte
 * words of the k-th of n equal parts of one buffer, until stopped. The shape of a big
 * database or JVM whose threads span nodes, each with its own data; the software
 * page-level source is proven on it (lib/sample-check, tests/unit/test-sw-sampler.c,
 * tests/unit/sw-record.c, bench/sw-cost.c). */
#pragma once
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#define SPLIT_THREADS_MAX 8

struct split_workload;

/* Starts n threads over the bytes of buf; thread k pinned to cpus[k] when cpus is not
 * NULL. Returns 0 once every thread runs (its tid known), or -errno. */
int split_workload_start(const uint64_t *buf, size_t bytes, unsigned n, const int *cpus, struct split_workload **ret);
pid_t split_workload_tid(const struct split_workload *w, unsigned k);
/* Batches of 4,096 reads done so far by all threads together. */
uint64_t split_workload_batches(const struct split_workload *w);
/* Batches (of all threads) that took 1 ms or more, and 4 ms or more: each is timed, and
 * takes a fraction of a millisecond when nothing stalls it (the steady scenario's
 * outliers). */
void split_workload_slow(const struct split_workload *w, uint64_t *over_1ms, uint64_t *over_4ms);
/* Stops and joins the threads, and frees w. */
void split_workload_stop(struct split_workload *w);
