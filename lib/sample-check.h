/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Whether software page-level sampling (lib/task-sampler + lib/insn-decoder) can be trusted
 * on this CPU: two threads of the caller each read random words of their own half of
 * one buffer, both sampled; each decoded address must fall in its own thread's half.
 * On a real CPU (bare metal, KVM, cloud instances) all of them do; an emulator such as
 * QEMU's TCG takes timer interrupts only between translated blocks, so the sampled IP is
 * not next to the access and the addresses land anywhere. The daemon runs this once at
 * start before it offers the source; the unit tests run it longer. */
#pragma once
#include <stdbool.h>
#include <stdint.h>

struct sample_check {
        uint64_t samples[2];       /* per thread */
        uint64_t addresses[2];     /* decoded into the buffer */
        uint64_t own[2];           /* of them, in the sampled thread's own half */
        uint64_t lost;             /* dropped by full rings */
};

/* Runs the check for at most ms milliseconds with buffer_mb of memory and a sample
 * every period_ns of each thread's run time, stopping at the first 20 ms drain after
 * which each thread has stop_after samples, or one thread a quarter of that with under
 * 2% of them in its own half (an emulator), 0: the whole ms.
 * Returns 0 with *ret, -EOPNOTSUPP without a decoder, or -errno (perf_event_open's:
 * -EACCES, -ENOENT...). */
int sample_check_run(unsigned ms, unsigned buffer_mb, uint64_t period_ns, uint64_t stop_after,
                     struct sample_check *ret);

/* For each thread: at least min addresses decoded, min_pct percent of them in its own half. */
static inline bool sample_check_passed(const struct sample_check *c, uint64_t min, unsigned min_pct) {
        for (int k = 0; k < 2; k++)
                if (c->addresses[k] < min || c->own[k] * 100 < c->addresses[k] * min_pct)
                        return false;
        return true;
}
