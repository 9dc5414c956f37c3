/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Software page-level sampling on this machine's real CPU (lib/insn-decoder, lib/task-sampler):
 * decoded instructions with known addresses, and live, the split workload of a process
 * whose threads each work their own half of one buffer: each thread's timer samples,
 * decoded, must fall in its own half. Needs x86-64 and Capstone (skipped otherwise), and
 * perf_event_open on this process's threads (root, or perf_event_paranoid <= 2: a
 * failure as root is a failure, otherwise the live case is skipped). */
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>
#include "insn-decoder.h"
#include "sample-check.h"
#include "task-sampler.h"
#include "test.h"

static struct insn_decoder *dec;

/* The address of the instruction in bytes (placed to end at ip) with regs. */
static int addr_of(const uint8_t *bytes, size_t n, uint64_t ip, const uint64_t *regs, uint64_t *ret) {
        uint8_t code[INSN_CODE_LEN];

        /* Padded in front with one-byte NOPs, as the code before an instruction. */
        memset(code, 0x90, sizeof(code));
        memcpy(code + sizeof(code) - n, bytes, n);
        return insn_decoder_addr(dec, 0, ip, code, sizeof(code), regs, ret);
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
        CHECK_INT(insn_decoder_addr(dec, 0, 0x401600, (const uint8_t[]) { 0x90 }, 0, regs, &a), -EINVAL);
}

/* The split workload's inner loop as gcc -O2 builds it: the bytes before the load's end
 * also decode as one longer instruction (an address from %rbx). Under a timer the IP
 * after the load is sampled nearly always and the one after the div seldom, so no
 * boundary is known: the decoder must find the load from the context alone. With the
 * longest candidate taken instead, a self-check thread once had 0 of 117 samples in
 * its own half on this host's real CPU, and the daemon refused software sampling. */
TEST(ambiguous_tail_decoded_from_context) {
        static const uint8_t loop[] = {
                0x66, 0x0f, 0x1f, 0x44, 0x00, 0x00,        /* nopw 0x0(%rax,%rax,1) */
                0x48, 0x89, 0xda,                          /* mov %rbx,%rdx */
                0x48, 0xc1, 0xe2, 0x0d,                    /* shl $0xd,%rdx */
                0x48, 0x31, 0xda,                          /* xor %rbx,%rdx */
                0x48, 0x89, 0xd0,                          /* mov %rdx,%rax */
                0x48, 0xc1, 0xe8, 0x07,                    /* shr $0x7,%rax */
                0x48, 0x31, 0xd0,                          /* xor %rdx,%rax */
                0x31, 0xd2,                                /* xor %edx,%edx */
                0x48, 0x89, 0xc3,                          /* mov %rax,%rbx */
                0x48, 0xc1, 0xe3, 0x11,                    /* shl $0x11,%rbx */
                0x48, 0x31, 0xc3,                          /* xor %rax,%rbx */
                0x48, 0x89, 0xd8,                          /* mov %rbx,%rax */
                0x48, 0xf7, 0xf6,                          /* div %rsi */
                0x4c, 0x03, 0x24, 0xd7,                    /* add (%rdi,%rdx,8),%r12 */
        };
        uint64_t regs[INSN_REGS] = {}, a = 0;

        if (!dec)
                TEST_SKIP("no decoder in this build (x86-64 with Capstone)");
        _Static_assert(sizeof(loop) == INSN_CODE_LEN, "the loop is the whole context");
        regs[0] = UINT64_C(0x1b54a52bd677);             /* rax: the random word */
        regs[1] = UINT64_C(0x6d5294af59dd6696);         /* rbx */
        regs[3] = 0x16696;                              /* rdx: its remainder */
        regs[4] = 0x40000;                              /* rsi: the words */
        regs[5] = UINT64_C(0x7fa7a9c00000);             /* rdi: the buffer */
        CHECK_INT(insn_decoder_addr(dec, 0, 0x403000, loop, sizeof(loop), regs, &a), 0);
        CHECK_INT(a, UINT64_C(0x7fa7a9c00000) + 0x16696 * 8);
        /* With only the last 15 bytes, as before: the context still decides. */
        CHECK_INT(insn_decoder_addr(dec, 0, 0x404000, loop + sizeof(loop) - INSN_MAX_LEN, INSN_MAX_LEN, regs, &a), 0);
        CHECK_INT(a, UINT64_C(0x7fa7a9c00000) + 0x16696 * 8);
}

/* Prefetches and cache-line flushes take any address without touching it: no sample
 * address from them (a process could name pages it never uses). */
TEST(prefetch_and_flush_give_no_address) {
        static const struct { const char *what; uint8_t code[4]; size_t len; } insns[] = {
                { "prefetcht0 (%rax)", { 0x0f, 0x18, 0x08 }, 3 },
                { "prefetchnta (%rax)", { 0x0f, 0x18, 0x00 }, 3 },
                { "prefetchw (%rax)", { 0x0f, 0x0d, 0x08 }, 3 },
                { "clflush (%rax)", { 0x0f, 0xae, 0x38 }, 3 },
        };
        uint64_t regs[INSN_REGS] = {}, a = 0;

        if (!dec)
                TEST_SKIP("no decoder in this build (x86-64 with Capstone)");
        regs[0] = 0x5000;
        for (size_t i = 0; i < sizeof(insns) / sizeof(insns[0]); i++)
                CHECK_MSG(addr_of(insns[i].code, insns[i].len, 0x406000 + i * 0x100, regs, &a) == -ENOENT,
                          "%s gave an address", insns[i].what);
        /* A load from the same register still does. */
        CHECK_INT(addr_of((const uint8_t[]) { 0x48, 0x8b, 0x10 }, 3, 0x407000, regs, &a), 0);
        CHECK_INT(a, 0x5000);
}

/* A boundary learnt in one address space (a sample of one process) does not steer the
 * decoding of another process's sample at the same address: a tenant's samples could
 * otherwise make the decoder read another process's loads as from another register. */
TEST(what_one_space_learns_stays_there) {
        static const uint8_t loop[] = {
                0x66, 0x0f, 0x1f, 0x44, 0x00, 0x00, 0x48, 0x89, 0xda, 0x48, 0xc1, 0xe2, 0x0d, 0x48, 0x31, 0xda,
                0x48, 0x89, 0xd0, 0x48, 0xc1, 0xe8, 0x07, 0x48, 0x31, 0xd0, 0x31, 0xd2, 0x48, 0x89, 0xc3, 0x48,
                0xc1, 0xe3, 0x11, 0x48, 0x31, 0xc3, 0x48, 0x89, 0xd8, 0x48, 0xf7, 0xf6, 0x4c, 0x03, 0x24, 0xd7,
        };
        const uint64_t ip = 0x405000, right = UINT64_C(0x7fa7a9c00000) + 0x16696 * 8;
        uint64_t regs[INSN_REGS] = {}, a = 0, steered = 0;
        size_t k;

        if (!dec)
                TEST_SKIP("no decoder in this build (x86-64 with Capstone)");
        regs[0] = UINT64_C(0x1b54a52bd677);
        regs[1] = UINT64_C(0x6d5294af59dd6696);
        regs[3] = 0x16696;
        regs[4] = 0x40000;
        regs[5] = UINT64_C(0x7fa7a9c00000);
        /* A start that, known as a boundary, makes the decoder take another instruction
         * (the longer one the context overrules): each tried in a space of its own. */
        for (k = 5; k <= INSN_MAX_LEN && !steered; k++) {
                uint64_t space = 1000 + k;

                (void) insn_decoder_addr(dec, space, ip - k, loop, sizeof(loop) - k, regs, &a);
                if (insn_decoder_addr(dec, space, ip, loop, sizeof(loop), regs, &a) != 0 || a != right)
                        steered = k;
        }
        CHECK_MSG(steered, "no boundary steers the decoding: the case tests nothing");
        /* The same IP and bytes in another space: the context decides, as if nothing
         * had been learnt anywhere. */
        CHECK_INT(insn_decoder_addr(dec, 2000, ip, loop, sizeof(loop), regs, &a), 0);
        CHECK_INT(a, right);
        /* And the steered space's cached entry is not the other's either. */
        CHECK(insn_decoder_addr(dec, 1000 + steered, ip, loop, sizeof(loop), regs, &a) != 0 || a != right);
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

/* --- live: the split workload (lib/sample-check) ------------------------------------ */

TEST(split_workload_attributed_live) {
        struct sample_check c;
        int r;

        if (!dec)
                TEST_SKIP("no decoder in this build (x86-64 with Capstone)");
        /* 64 MiB, 1.5 s, 10,000 samples per second of each thread's run time. */
        r = sample_check_run(1500, 64, 100000, 0, &c);
        if (r < 0 && geteuid() != 0)
                TEST_SKIP("perf_event_open: %s (not root: perf_event_paranoid)", strerror(-r));
        CHECK_INT(r, 0);
        for (int k = 0; k < 2; k++)
                printf("thread %c: %" PRIu64 " samples, %" PRIu64 " addresses in the buffer, %" PRIu64
                       " in its own half (%.1f%%)\n", 'A' + k, c.samples[k], c.addresses[k], c.own[k],
                       c.addresses[k] ? 100.0 * (double) c.own[k] / (double) c.addresses[k] : 0.0);
        printf("lost %" PRIu64 "\n", c.lost);
        /* 1.5 s of a loaded host may give a thread too little CPU for 100 addresses:
         * then only where those it had landed is judged. */
        if (c.addresses[0] < 100 || c.addresses[1] < 100) {
                CHECK(sample_check_passed(&c, 1, 95));
                printf("not asserted: 100 addresses of each thread, since the host gave them too little CPU\n");
                return;
        }
        CHECK(sample_check_passed(&c, 100, 95));
}

/* The daemon's own start-up check (sw-sampler.c) stops once each thread has 400
 * samples, and passes here. The budget is 2 s, not the daemon's 200 ms: on a loaded
 * machine (a test-bed guest beside the unit tests) the readers got under 400 samples
 * in 200 ms once, and the point here is that the check ends at 400, long before. How
 * long it took is printed, not asserted: the 2 s are 100 drains of 20 ms, which a
 * loaded host stretches (4 s and more measured at nice 19 beside three busy loops),
 * and such a host may not give the readers their 400 samples within them at all:
 * then the case skips. */
TEST(short_check_stops_soon_and_passes) {
        struct sample_check c;
        struct timespec a, b;
        double ms;
        int r;

        if (!dec)
                TEST_SKIP("no decoder in this build (x86-64 with Capstone)");
        clock_gettime(CLOCK_MONOTONIC, &a);
        r = sample_check_run(2000, 4, 100000, 400, &c);
        clock_gettime(CLOCK_MONOTONIC, &b);
        if (r < 0 && geteuid() != 0)
                TEST_SKIP("perf_event_open: %s (not root: perf_event_paranoid)", strerror(-r));
        CHECK_INT(r, 0);
        ms = (double) (b.tv_sec - a.tv_sec) * 1e3 + (double) (b.tv_nsec - a.tv_nsec) / 1e6;
        printf("short check: %" PRIu64 " and %" PRIu64 " samples, %" PRIu64 " and %" PRIu64 " of %" PRIu64
               " and %" PRIu64 " addresses in place, %.0f ms\n", c.samples[0], c.samples[1], c.own[0], c.own[1],
               c.addresses[0], c.addresses[1], ms);
        if (c.samples[0] < 400 || c.samples[1] < 400) {
                CHECK(sample_check_passed(&c, 1, 90));  /* where those it had landed */
                TEST_SKIP("the host is too busy: the readers had %" PRIu64 " and %" PRIu64 " samples when the "
                          "check's 2 s ran out", c.samples[0], c.samples[1]);
        }
        CHECK(sample_check_passed(&c, 50, 90));
}

static void *exit_at_once(void *arg) {
        *(pid_t *) arg = (pid_t) syscall(SYS_gettid);
        return NULL;
}

/* A thread that ended gives its slot back (task_sampler_prune); the others keep theirs. */
TEST(ended_threads_pruned) {
        struct task_sampler *s = NULL;
        pthread_t th;
        pid_t tid = 0, me = (pid_t) syscall(SYS_gettid);
        int r;

        CHECK_INT(task_sampler_new(1000000, &s), 0);
        if (!s)
                return;
        r = task_sampler_add(s, getpid(), me);
        if (r < 0 && geteuid() != 0) {
                task_sampler_free(s);
                TEST_SKIP("perf_event_open: %s (not root: perf_event_paranoid)", strerror(-r));
        }
        CHECK_INT(r, 0);
        pthread_create(&th, NULL, exit_at_once, &tid);
        pthread_join(th, NULL);
        /* Ended already: its event can still be opened on some kernels, or not. */
        if (task_sampler_add(s, getpid(), tid) == 0)
                CHECK_INT(task_sampler_count(s), 2);
        task_sampler_prune(s, getpid(), &me, 1);
        CHECK_INT(task_sampler_count(s), 1);
        CHECK(task_sampler_has(s, me));
        CHECK(!task_sampler_has(s, tid));
        task_sampler_prune(s, getpid(), NULL, 0);
        CHECK_INT(task_sampler_count(s), 0);
        task_sampler_free(s);
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
