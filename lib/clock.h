/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The one clock reader of the tree: every module reads time through these, so that a
 * clock's unit and its source are said once. CLOCK_MONOTONIC for due times and
 * timeouts; the CPU-time clocks for the cost ledger (daemon/cost.h). */
#pragma once
#include <stdint.h>
#include <time.h>

#define NSEC_PER_SEC UINT64_C(1000000000)
#define NSEC_PER_MSEC UINT64_C(1000000)
#define NSEC_PER_USEC UINT64_C(1000)

/* clock in ns; 0 if it cannot be read (a CPU-time clock of a thread that is gone). */
static inline uint64_t clock_now_ns(clockid_t clock) {
        struct timespec ts;

        if (clock_gettime(clock, &ts) < 0)
                return 0;
        return (uint64_t) ts.tv_sec * NSEC_PER_SEC + (uint64_t) ts.tv_nsec;
}

/* clock as a timespec: a wall-clock stamp (CLOCK_REALTIME) for a file name, or the
 * raw reading; zeroed if it cannot be read. */
static inline struct timespec clock_now_ts(clockid_t clock) {
        struct timespec ts = { 0, 0 };

        (void) clock_gettime(clock, &ts);
        return ts;
}

/* clock's time after_ns from now, as the absolute timespec that
 * pthread_cond_timedwait(3) (CLOCK_REALTIME unless the condition says otherwise) and
 * pthread_timedjoin_np(3) (CLOCK_REALTIME) take. */
static inline struct timespec clock_deadline_ts(clockid_t clock, uint64_t after_ns) {
        struct timespec ts = clock_now_ts(clock);
        uint64_t ns = (uint64_t) ts.tv_nsec + after_ns;

        ts.tv_sec += (time_t) (ns / NSEC_PER_SEC);
        ts.tv_nsec = (long) (ns % NSEC_PER_SEC);
        return ts;
}

/* CLOCK_MONOTONIC in ms and in µs (sd-event's and sd_notify's unit). */
static inline uint64_t clock_now_ms(void) { return clock_now_ns(CLOCK_MONOTONIC) / NSEC_PER_MSEC; }
static inline uint64_t clock_now_usec(void) { return clock_now_ns(CLOCK_MONOTONIC) / NSEC_PER_USEC; }

/* CLOCK_MONOTONIC in seconds, for intervals shown to a person (numabalancectl top). */
static inline double clock_now_s(void) { return (double) clock_now_ns(CLOCK_MONOTONIC) / 1e9; }
