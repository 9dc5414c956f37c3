/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The self-check of software page-level sampling (sample-check.h). */
#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>
#include "insn-decoder.h"
#include "sample-check.h"
#include "split-workload.h"
#include "task-sampler.h"

struct tally {
        struct insn_decoder *dec;
        pid_t tid[2];
        uint64_t lo, mid, hi;      /* the halves: [lo, mid) and [mid, hi) */
        struct sample_check *c;
};

static void count(void *userdata, const struct task_sample *t) {
        struct tally *y = userdata;
        uint8_t code[INSN_CODE_LEN];
        uint64_t a;
        int k = t->tid == y->tid[0] ? 0 : t->tid == y->tid[1] ? 1 : -1, n;

        if (k < 0)
                return;
        y->c->samples[k]++;
        n = task_sampler_code(t->pid, t->ip, code);
        if (n <= 0 || insn_decoder_addr(y->dec, (uint64_t) t->pid, t->ip, code, (size_t) n, t->regs, &a) < 0 || a < y->lo || a >= y->hi)
                return;
        y->c->addresses[k]++;
        y->c->own[k] += (a < y->mid) == (k == 0);
}

/* Whether the samples so far judge the check: each thread has n of them, or one has a
 * quarter of n and under 2% of those are addresses in its own half. Under an emulator
 * none are (0 of 190 and 0 of 192 in a TCG guest), and waiting for n would only delay
 * the daemon's start. On a real CPU 96% are on an idle machine, down to 13% (15 of
 * 119) with six busy loops on its two cores: it is not judged early. */
static bool settled(const struct sample_check *c, uint64_t n) {
        if (!n)
                return false;
        if (c->samples[0] >= n && c->samples[1] >= n)
                return true;
        for (int k = 0; k < 2; k++)
                if (c->samples[k] >= n / 4 && c->own[k] * 50 < c->samples[k])
                        return true;
        return false;
}

/* Samples the two readers for ms, draining every 20 ms (before a ring fills); stops
 * sooner once the samples settle it (`stop_after`, 0: never). */
static int sample(struct tally *y, uint64_t period_ns, unsigned ms, uint64_t stop_after) {
        struct task_sampler *s = NULL;
        int r = task_sampler_new(period_ns, &s);

        for (int k = 0; r >= 0 && k < 2; k++)
                r = task_sampler_add(s, getpid(), y->tid[k]);
        for (unsigned waited = 0; r >= 0 && waited < ms && !settled(y->c, stop_after); waited += 20) {
                usleep(20 * 1000);
                task_sampler_drain(s, count, y, &y->c->lost);
        }
        if (r >= 0)
                task_sampler_drain(s, count, y, &y->c->lost);
        task_sampler_free(s);
        return r < 0 ? r : 0;
}

int sample_check_run(unsigned ms, unsigned buffer_mb, uint64_t period_ns, uint64_t stop_after,
                     struct sample_check *ret) {
        const size_t bytes = (size_t) buffer_mb << 20;
        struct split_workload *w = NULL;
        struct tally y = { .c = ret };
        uint64_t *buf;
        int r;

        memset(ret, 0, sizeof(*ret));
        r = insn_decoder_new(&y.dec);
        if (r < 0)
                return r;
        buf = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (buf == MAP_FAILED) {
                insn_decoder_free(y.dec);
                return -errno;
        }
        memset(buf, 1, bytes);
        r = split_workload_start(buf, bytes, 2, NULL, &w);
        if (r == 0) {
                y.tid[0] = split_workload_tid(w, 0);
                y.tid[1] = split_workload_tid(w, 1);
                y.lo = (uintptr_t) buf;
                y.mid = y.lo + bytes / 2;
                y.hi = y.lo + bytes;
                r = sample(&y, period_ns, ms, stop_after);
        }
        split_workload_stop(w);
        munmap(buf, bytes);
        insn_decoder_free(y.dec);
        return r;
}
