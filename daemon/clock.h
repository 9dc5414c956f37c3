/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Reading a clock in nanoseconds: the executor's and the worker pool's time base. */
#pragma once
#include <stdint.h>
#include <time.h>

#define NSEC_PER_SEC UINT64_C(1000000000)
#define NSEC_PER_MSEC UINT64_C(1000000)

static inline uint64_t now_ns(clockid_t clock) {
        struct timespec ts;

        clock_gettime(clock, &ts);
        return (uint64_t) ts.tv_sec * NSEC_PER_SEC + (uint64_t) ts.tv_nsec;
}
