/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The cost of software page-level sampling ([sample] pmu = software) on a real CPU: the
 * workload's, as its read throughput with and without its threads sampled, and the
 * daemon's, as the CPU time of draining and decoding per 1,000 samples.
 *
 *   sw-cost [RATE [SECONDS [ROUNDS]]]      defaults: 100 samples/s, 5 s, 3 rounds
 *
 * Two reader threads pinned to the last CPU, each doing random 8-byte reads over its
 * own half of 256 MiB, counting batches of 4,096; the drainer (daemon/sw-sampler, as
 * the daemon runs it) on CPU 0, draining every 100 ms as a tick would. Rounds
 * alternate off and sampled (off, on, on, off, ...), each SECONDS long. Prints one JSON
 * line. Run it on an idle host: TCG guests refuse the source (its self-check). */
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
        const unsigned secs = argc > 2 ? (unsigned) atoi(argv[2]) : 5, rounds = argc > 3 ? (unsigned) atoi(argv[3]) : 3;
        const size_t bytes = (size_t) BUF_MB << 20;
        const int last = (int) sysconf(_SC_NPROCESSORS_ONLN) - 1;
        struct topology *t = host_topology();
        const int cpus[2] = { last, last };
        struct split_workload *w = NULL;
        double off = 0, on = 0;
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
        if (split_workload_start(buf, bytes, 2, cpus, &w) < 0)
                return 2;
        for (unsigned i = 0; i < 2 * rounds; i++) {
                bool sampled = (i % 4 == 1) || (i % 4 == 2);
                struct sw_sampler *s = NULL;
                uint64_t b0 = split_workload_batches(w), t0 = now_ns(CLOCK_MONOTONIC), b1;

                if (sampled) {
                        int r = sw_sampler_new("/proc", t, rate, &s, &c);
                        if (r < 0) {
                                fprintf(stderr, "sw-cost: the software source is refused here: %s\n", strerror(-r));
                                return 1;
                        }
                        sw_sampler_span(s, getpid(), true);
                        b0 = split_workload_batches(w);
                        t0 = now_ns(CLOCK_MONOTONIC);
                }
                while (now_ns(CLOCK_MONOTONIC) - t0 < secs * 1000000000ull) {
                        usleep(100 * 1000);
                        if (s) {
                                uint64_t c0 = now_ns(CLOCK_THREAD_CPUTIME_ID), n0 = n_samples;
                                int n = sw_sampler_drain(s, count, NULL);
                                drain_ns += now_ns(CLOCK_THREAD_CPUTIME_ID) - c0;
                                samples += n > 0 ? (uint64_t) n : 0;
                                (void) n0;
                        }
                }
                b1 = split_workload_batches(w);
                {
                        double per_s = (double) (b1 - b0) * 4096 / 2 / ((double) (now_ns(CLOCK_MONOTONIC) - t0) / 1e9);
                        if (sampled) {
                                on += per_s;
                                rounds_on++;
                        } else {
                                off += per_s;
                                rounds_off++;
                        }
                        fprintf(stderr, "round %u %s: %.0f reads/s per thread\n", i + 1, sampled ? "sampled" : "off",
                                per_s);
                }
                sw_sampler_free(s);
        }
        split_workload_stop(w);
        printf("{\"rate\": %" PRIu64 ", \"seconds\": %u, \"rounds\": %u, \"off_reads_per_s\": %.0f, "
               "\"sampled_reads_per_s\": %.0f, \"ratio\": %.4f, \"samples\": %" PRIu64 ", \"addresses\": %" PRIu64
               ", \"drain_us_per_1000_samples\": %.1f}\n",
               rate, secs, rounds, off / (double) rounds_off, on / (double) rounds_on,
               (on / (double) rounds_on) / (off / (double) rounds_off), samples, n_samples,
               samples ? (double) drain_ns / 1000.0 / ((double) samples / 1000.0) : 0.0);
        topology_free(t);
        return 0;
}
