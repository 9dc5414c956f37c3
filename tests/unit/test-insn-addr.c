/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Software page-level sampling on this machine's real CPU (lib/insn-addr, lib/task-sample):
 * decoded instructions with known addresses, and live, the split workload of a process
 * whose threads each work their own half of one buffer: each thread's timer samples,
 * decoded, must fall in its own half. Needs x86-64 and Capstone (skipped otherwise), and
 * perf_event_open on this process's threads (root, or perf_event_paranoid <= 2: a
 * failure as root is a failure, otherwise the live case is skipped). */
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>
#include "insn-addr.h"
#include "task-sample.h"
#include "test.h"

static struct insn_decoder *dec;

/* The address of the instruction in bytes (placed to end at ip) with regs. */
static int addr_of(const uint8_t *bytes, size_t n, uint64_t ip, const uint64_t *regs, uint64_t *ret) {
        uint8_t code[INSN_MAX_LEN];

        /* Padded in front with one-byte NOPs, as the code before an instruction. */
        memset(code, 0x90, sizeof(code));
        memcpy(code + sizeof(code) - n, bytes, n);
        return insn_decoder_addr(dec, ip, code, sizeof(code), regs, ret);
}

TEST(decoded_addresses) {
        uint64_t regs[INSN_REGS] = {}, a = 0;

        if (!dec)
                TEST_SKIP("no decoder in this build (x86-64 with Capstone)");
        regs[1] = 0x10000;        /* rbx */
        regs[2] = 2;              /* rcx */
        /* mov rax, [rbx + rcx*8 + 0x10] */
        CHECK_INT(addr_of((const uint8_t[]) { 0x48, 0x8b, 0x44, 0xcb, 0x10 }, 5, 0x401000, regs, &a), 0);
        CHECK_INT(a, 0x10020);
        /* mov rcx, [rbx + rcx*8]: its own index register overwritten */
        CHECK_INT(addr_of((const uint8_t[]) { 0x48, 0x8b, 0x0c, 0xcb }, 4, 0x401100, regs, &a), -ENOENT);
        /* mov eax, [rip + 0x100]: the IP after it, plus the displacement */
        CHECK_INT(addr_of((const uint8_t[]) { 0x8b, 0x05, 0x00, 0x01, 0x00, 0x00 }, 6, 0x401200, regs, &a), 0);
        CHECK_INT(a, 0x401300);
        /* add eax, ebx: no memory operand */
        CHECK_INT(addr_of((const uint8_t[]) { 0x01, 0xd8 }, 2, 0x401300, regs, &a), -ENOENT);
        /* mov rax, fs:[0x28]: TLS, a segment base the sample does not carry */
        CHECK_INT(addr_of((const uint8_t[]) { 0x64, 0x48, 0x8b, 0x04, 0x25, 0x28, 0, 0, 0 }, 9, 0x401400, regs, &a),
                  -ENOENT);
        /* lea rax, [rbx + 8]: computes an address, touches none */
        CHECK_INT(addr_of((const uint8_t[]) { 0x48, 0x8d, 0x43, 0x08 }, 4, 0x401500, regs, &a), -ENOENT);
        /* mov eax, [ebx]: a 32-bit address */
        regs[1] = UINT64_C(0xffffffff00001000);
        CHECK_INT(addr_of((const uint8_t[]) { 0x67, 0x8b, 0x03 }, 3, 0x401600, regs, &a), 0);
        CHECK_INT(a, 0x1000);
        CHECK_INT(insn_decoder_addr(dec, 0x401600, (const uint8_t[]) { 0x90 }, 0, regs, &a), -EINVAL);
}

/* Code that changed under the same IP (a JIT) is decoded again. */
TEST(changed_code_decoded_again) {
        uint64_t regs[INSN_REGS] = {}, a = 0;
        struct insn_decoder_stats s0, s1;

        if (!dec)
                TEST_SKIP("no decoder in this build (x86-64 with Capstone)");
        regs[0] = 0x5000;         /* rax */
        regs[1] = 0x9000;         /* rbx */
        /* mov rdx, [rax] */
        CHECK_INT(addr_of((const uint8_t[]) { 0x48, 0x8b, 0x10 }, 3, 0x402000, regs, &a), 0);
        CHECK_INT(a, 0x5000);
        insn_decoder_stats(dec, &s0);
        CHECK_INT(addr_of((const uint8_t[]) { 0x48, 0x8b, 0x10 }, 3, 0x402000, regs, &a), 0);
        insn_decoder_stats(dec, &s1);
        CHECK_INT(s1.hits, s0.hits + 1);
        /* now mov rdx, [rbx] at the same IP */
        CHECK_INT(addr_of((const uint8_t[]) { 0x48, 0x8b, 0x13 }, 3, 0x402000, regs, &a), 0);
        CHECK_INT(a, 0x9000);
        insn_decoder_stats(dec, &s0);
        CHECK_INT(s0.decoded, s1.decoded + 1);
}

/* --- live: the split workload ------------------------------------------------------ */

#define SPLIT_MB 64
#define RUN_MS 1500
#define PERIOD_NS 100000          /* 10,000 samples per second of a thread's run time */

struct half {
        uint64_t *base;
        size_t words;
        pid_t tid;
        atomic_bool ready;
        uint64_t sum;
};

static atomic_bool stop;

static void *reader(void *arg) {
        struct half *h = arg;
        uint64_t x = (uintptr_t) h | 1, sum = 0;

        h->tid = (pid_t) syscall(SYS_gettid);
        atomic_store(&h->ready, true);
        while (!atomic_load_explicit(&stop, memory_order_relaxed))
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
        pid_t tid[2];
        uint64_t lo, mid, hi;     /* the buffer's halves: [lo, mid) and [mid, hi) */
        uint64_t own[2], other[2], outside[2], samples[2];
};

static void count(void *userdata, const struct task_sample *t) {
        struct tally *y = userdata;
        uint8_t code[INSN_MAX_LEN];
        uint64_t a;
        int k = t->tid == y->tid[0] ? 0 : t->tid == y->tid[1] ? 1 : -1;
        int n;

        if (k < 0)
                return;
        y->samples[k]++;
        n = task_sample_code(t->pid, t->ip, code);
        if (n <= 0 || insn_decoder_addr(dec, t->ip, code, (size_t) n, t->regs, &a) < 0)
                return;
        if (a < y->lo || a >= y->hi)
                y->outside[k]++;
        else if ((a < y->mid) == (k == 0))
                y->own[k]++;
        else
                y->other[k]++;
}

TEST(split_workload_attributed_live) {
        const size_t bytes = (size_t) SPLIT_MB << 20;
        struct task_sampler *s = NULL;
        struct half h[2] = {};
        pthread_t th[2];
        struct tally y = {};
        uint64_t lost = 0;
        uint64_t *buf;
        int r;

        if (!dec)
                TEST_SKIP("no decoder in this build (x86-64 with Capstone)");
        buf = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        CHECK(buf != MAP_FAILED);
        if (buf == MAP_FAILED)
                return;
        memset(buf, 1, bytes);
        for (int k = 0; k < 2; k++) {
                h[k].base = buf + k * (bytes / 16);
                h[k].words = bytes / 16;
                pthread_create(&th[k], NULL, reader, &h[k]);
        }
        for (int k = 0; k < 2; k++)
                while (!atomic_load(&h[k].ready))
                        usleep(1000);
        CHECK_INT(task_sampler_new(PERIOD_NS, &s), 0);
        for (int k = 0; k < 2 && s; k++) {
                r = task_sampler_add(s, getpid(), h[k].tid);
                if (r < 0 && geteuid() != 0) {
                        atomic_store(&stop, true);
                        for (int j = 0; j < 2; j++)
                                pthread_join(th[j], NULL);
                        task_sampler_free(s);
                        munmap(buf, bytes);
                        TEST_SKIP("perf_event_open: %s (not root: perf_event_paranoid)", strerror(-r));
                }
                CHECK_INT(r, 0);
                y.tid[k] = h[k].tid;
        }
        y.lo = (uintptr_t) buf;
        y.mid = y.lo + bytes / 2;
        y.hi = y.lo + bytes;
        for (int waited = 0; waited < RUN_MS; waited += 20) {
                usleep(20 * 1000);
                task_sampler_drain(s, count, &y, &lost);   /* before a ring fills */
        }
        atomic_store(&stop, true);
        for (int k = 0; k < 2; k++)
                pthread_join(th[k], NULL);
        task_sampler_drain(s, count, &y, &lost);
        for (int k = 0; k < 2; k++) {
                uint64_t in = y.own[k] + y.other[k];
                printf("thread %c: %" PRIu64 " samples, %" PRIu64 " addresses in the buffer: %" PRIu64
                       " in its own half (%.1f%%), %" PRIu64 " outside it\n", 'A' + k, y.samples[k], in, y.own[k],
                       in ? 100.0 * (double) y.own[k] / (double) in : 0.0, y.outside[k]);
                CHECK(in >= 100);
                CHECK(y.own[k] * 100 >= in * 95);
        }
        printf("lost %" PRIu64 "\n", lost);
        task_sampler_free(s);
        munmap(buf, bytes);
}

static int intro(void) {
        int r = insn_decoder_new(&dec);

        if (r < 0 && r != -EOPNOTSUPP) {
                fprintf(stderr, "insn_decoder_new: %s\n", strerror(-r));
                return 1;
        }
        return 0;
}

static void outro(void) {
        insn_decoder_free(dec);
}

DEFINE_TEST_MAIN_FULL(intro, outro)
