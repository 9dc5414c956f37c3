/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The cost of software page-level sampling ([sample] pmu = software) on a real CPU: the
 * workload's, as its read throughput with and without its threads sampled, and the
 * daemon's, as the CPU time of draining and decoding per 1,000 samples.
 *
 *   sw-cost [RATE [SECONDS [ROUNDS [READERS]]]]  defaults: 100 samples/s, 5 s, 3 rounds, 2
 *
 * READERS (1 or 2) reader threads pinned to the last CPU, each doing random 8-byte
 * reads over its own part of 256 MiB, counting batches of 4,096 and timing each (the
 * batches of 1 ms or more, and 4 ms or more: the steady scenario's outliers; with one
 * reader alone on its CPU nothing else slices its time); the drainer
 * (daemon/sw-sampler, as the daemon runs it) on CPU 0, draining every 100 ms as a tick
 * would. Rounds alternate off and sampled (off, on, on, off, ...), each SECONDS long.
 * Prints one JSON line. Run it on an idle host: TCG guests refuse the source (its
 * self-check). */
#include <inttypes.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>
#include "split-workload.h"
#include "sw-sampler.h"
#include "topology.h"

#define BUF_MB 256

static void pin(int cpu) {
        cpu_set_t set;

        CPU_ZERO(&set);
        CPU_SET(cpu, &set);
        pthread_setaffinity_np(pthread_self(), sizeof(set), &set);
}

static uint64_t now_ns(clockid_t c) {
        struct timespec ts;
        clock_gettime(c, &ts);
        return (uint64_t) ts.tv_sec * 1000000000ull + (uint64_t) ts.tv_nsec;
}

static uint64_t n_samples;

static void count(void *userdata, pid_t tgid, uint64_t addr, unsigned node, uint64_t c) {
        (void) userdata, (void) tgid, (void) addr, (void) node;
        n_samples += c;
}

/* A one-node topology of this machine's CPUs, enough for the sampler's node lookup. */
static struct topology *host_topology(void) {
        struct topology *t;
        return topology_read("/sys", &t) == 0 ? t : NULL;
}

int main(int argc, char **argv) {
        const uint64_t rate = argc > 1 ? strtoull(argv[1], NULL, 10) : 100;
        const unsigned secs = argc > 2 ? (unsigned) atoi(argv[2]) : 5, rounds = argc > 3 ? (unsigned) atoi(argv[3]) : 3,
                       readers = argc > 4 && atoi(argv[4]) == 1 ? 1 : 2;
        const size_t bytes = (size_t) BUF_MB << 20;
        const int last = (int) sysconf(_SC_NPROCESSORS_ONLN) - 1;
        struct topology *t = host_topology();
        const int cpus[2] = { last, last };
        struct split_workload *w = NULL;
        struct sw_sampler *s = NULL;
        double off = 0, on = 0, secs_off = 0, secs_on = 0;
        uint64_t slow_off[2] = {}, slow_on[2] = {};
        uint64_t drain_ns = 0, samples = 0, rounds_on = 0, rounds_off = 0;
        struct sample_check c;
        uint64_t *buf;

        if (!t || last < 1) {
                fprintf(stderr, "sw-cost: needs /sys/devices/system/node and two CPUs\n");
                return 2;
        }
        pin(0);
        buf = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (buf == MAP_FAILED)
                return 2;
        memset(buf, 1, bytes);
        if (split_workload_start(buf, bytes, readers, cpus, &w) < 0)
                return 2;
        /* One sampler (its self-check runs once, here, before anything is counted);
         * each round starts or stops the sampling of this process's threads. */
        {
                int r = sw_sampler_new("/proc", t, rate, &s, &c);
                if (r < 0) {
                        fprintf(stderr, "sw-cost: the software source is refused here: %s\n", strerror(-r));
                        return 1;
                }
        }
        for (unsigned i = 0; i < 2 * rounds; i++) {
                bool sampled = (i % 4 == 1) || (i % 4 == 2);
                uint64_t b0, t0, b1, s0[2], s1[2];

                sw_sampler_span(s, getpid(), getuid(), sampled);
                b0 = split_workload_batches(w);
                t0 = now_ns(CLOCK_MONOTONIC);
                split_workload_slow(w, &s0[0], &s0[1]);
                while (now_ns(CLOCK_MONOTONIC) - t0 < secs * 1000000000ull) {
                        usleep(100 * 1000);
                        if (sampled) {
                                uint64_t c0 = now_ns(CLOCK_THREAD_CPUTIME_ID), n0 = n_samples;
                                int n = sw_sampler_drain(s, count, NULL);
                                drain_ns += now_ns(CLOCK_THREAD_CPUTIME_ID) - c0;
                                samples += n > 0 ? (uint64_t) n : 0;
                                (void) n0;
                        }
                }
                b1 = split_workload_batches(w);
                split_workload_slow(w, &s1[0], &s1[1]);
                {
                        double took = (double) (now_ns(CLOCK_MONOTONIC) - t0) / 1e9,
                               per_s = (double) (b1 - b0) * 4096 / readers / took;
                        uint64_t *slow = sampled ? slow_on : slow_off;

                        slow[0] += s1[0] - s0[0];
                        slow[1] += s1[1] - s0[1];
                        if (sampled) {
                                on += per_s;
                                secs_on += took;
                                rounds_on++;
                        } else {
                                off += per_s;
                                secs_off += took;
                                rounds_off++;
                        }
                        fprintf(stderr, "round %u %s: %.0f reads/s per thread\n", i + 1, sampled ? "sampled" : "off",
                                per_s);
                }
        }
        sw_sampler_free(s);
        split_workload_stop(w);
        printf("{\"rate\": %" PRIu64 ", \"readers\": %u, \"seconds\": %u, \"rounds\": %u, \"off_reads_per_s\": %.0f, "
               "\"sampled_reads_per_s\": %.0f, \"ratio\": %.4f, \"samples\": %" PRIu64 ", \"addresses\": %" PRIu64
               ", \"drain_us_per_1000_samples\": %.1f, \"off_over_1ms_per_hour\": %.0f, "
               "\"sampled_over_1ms_per_hour\": %.0f, \"off_over_4ms_per_hour\": %.0f, "
               "\"sampled_over_4ms_per_hour\": %.0f}\n",
               rate, readers, secs, rounds, off / (double) rounds_off, on / (double) rounds_on,
               (on / (double) rounds_on) / (off / (double) rounds_off), samples, n_samples,
               samples ? (double) drain_ns / 1000.0 / ((double) samples / 1000.0) : 0.0,
               (double) slow_off[0] * 3600 / secs_off, (double) slow_on[0] * 3600 / secs_on,
               (double) slow_off[1] * 3600 / secs_off, (double) slow_on[1] * 3600 / secs_on);
        topology_free(t);
        return 0;
}
