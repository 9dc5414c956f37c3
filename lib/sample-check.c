/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The self-check of software page-level sampling (sample-check.h). */
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>
#include "insn-addr.h"
#include "sample-check.h"
#include "task-sample.h"

struct half {
        const uint64_t *base;
        size_t words;
        atomic_bool *stop;
        atomic_int tid;
        uint64_t sum;
};

/* Random reads of its own half, in a loop the compiler cannot drop (the sum is kept). */
static void *reader(void *arg) {
        struct half *h = arg;
        uint64_t x = (uintptr_t) h | 1, sum = 0;

        atomic_store(&h->tid, (int) syscall(SYS_gettid));
        while (!atomic_load_explicit(h->stop, memory_order_relaxed))
                for (int i = 0; i < 4096; i++) {
                        x ^= x << 13;
                        x ^= x >> 7;
                        x ^= x << 17;
                        sum += h->base[x % h->words];
                }
        h->sum = sum;
        return NULL;
}

struct tally {
        struct insn_decoder *dec;
        pid_t tid[2];
        uint64_t lo, mid, hi;      /* the halves: [lo, mid) and [mid, hi) */
        struct sample_check *c;
};

static void count(void *userdata, const struct task_sample *t) {
        struct tally *y = userdata;
        uint8_t code[INSN_MAX_LEN];
        uint64_t a;
        int k = t->tid == y->tid[0] ? 0 : t->tid == y->tid[1] ? 1 : -1, n;

        if (k < 0)
                return;
        y->c->samples[k]++;
        n = task_sample_code(t->pid, t->ip, code);
        if (n <= 0 || insn_decoder_addr(y->dec, t->ip, code, (size_t) n, t->regs, &a) < 0 || a < y->lo || a >= y->hi)
                return;
        y->c->addresses[k]++;
        y->c->own[k] += (a < y->mid) == (k == 0);
}

/* Samples the two readers for ms, draining every 20 ms (before a ring fills). */
static int sample(struct tally *y, uint64_t period_ns, unsigned ms) {
        struct task_sampler *s = NULL;
        int r = task_sampler_new(period_ns, &s);

        for (int k = 0; r >= 0 && k < 2; k++)
                r = task_sampler_add(s, getpid(), y->tid[k]);
        for (unsigned waited = 0; r >= 0 && waited < ms; waited += 20) {
                usleep(20 * 1000);
                task_sampler_drain(s, count, y, &y->c->lost);
        }
        if (r >= 0)
                task_sampler_drain(s, count, y, &y->c->lost);
        task_sampler_free(s);
        return r < 0 ? r : 0;
}

int sample_check_run(unsigned ms, unsigned buffer_mb, uint64_t period_ns, struct sample_check *ret) {
        const size_t bytes = (size_t) buffer_mb << 20;
        atomic_bool stop = false;
        struct half h[2] = {};
        struct tally y = { .c = ret };
        pthread_t th[2];
        uint64_t *buf;
        int r, started = 0;

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
        for (int k = 0; k < 2; k++) {
                h[k] = (struct half) { .base = buf + k * (bytes / 16), .words = bytes / 16, .stop = &stop };
                if (pthread_create(&th[k], NULL, reader, &h[k]) != 0)
                        break;
                started++;
        }
        r = started == 2 ? 0 : -EAGAIN;
        for (int k = 0; r == 0 && k < 2; k++) {
                while (atomic_load(&h[k].tid) == 0)
                        usleep(1000);
                y.tid[k] = atomic_load(&h[k].tid);
        }
        y.lo = (uintptr_t) buf;
        y.mid = y.lo + bytes / 2;
        y.hi = y.lo + bytes;
        if (r == 0)
                r = sample(&y, period_ns, ms);
        atomic_store(&stop, true);
        for (int k = 0; k < started; k++)
                pthread_join(th[k], NULL);
        munmap(buf, bytes);
        insn_decoder_free(y.dec);
        return r;
}
