/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Timer samples of threads with their user registers: perf's task-clock software event,
 * which every kernel and virtual machine has (no PMU counter taken), one event per
 * thread, each sample carrying the thread id and the x86-64 user registers
 * (PERF_SAMPLE_TID | PERF_SAMPLE_CPU | PERF_SAMPLE_REGS_USER; the IP is the registers'
 * own). With
 * lib/insn-decoder they say which data address the thread had just accessed.
 *
 * The cost charged to a sampled thread is one timer interrupt per period of its own
 * run time. Only samples that interrupted user code are kept (exclude_kernel): their
 * IP follows the access. Bounded: at most TASK_SAMPLE_MAX_THREADS events
 * per sampler, each with a ring of TASK_SAMPLE_RING_PAGES pages and a pidfd of its
 * process (two descriptors a thread); a ring that fills between drains loses samples
 * (counted), never blocks the thread. */
#pragma once
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include "insn-decoder.h"

#define TASK_SAMPLE_MAX_THREADS 256
#define TASK_SAMPLE_RING_PAGES 8

struct task_sampler;

/* period_ns: the sampling period in the thread's run time. */
int task_sampler_new(uint64_t period_ns, struct task_sampler **ret);
void task_sampler_free(struct task_sampler *s);

/* Starts sampling thread tid (pid: its process, for the caller's bookkeeping).
 * Returns 0, -E2BIG at TASK_SAMPLE_MAX_THREADS, or perf_event_open's -errno (-EACCES:
 * perf_event_paranoid or a missing CAP_PERFMON; -ESRCH: gone, or tid is not, or no
 * longer, a thread of pid). */
int task_sampler_add(struct task_sampler *s, pid_t pid, pid_t tid);
/* Stops sampling thread tid of pid, or (tid 0) every thread of pid. */
void task_sampler_remove(struct task_sampler *s, pid_t pid, pid_t tid);
/* Stops sampling the threads of pid that are not among alive (ended threads: their
 * events would hold a slot for nothing). */
void task_sampler_prune(struct task_sampler *s, pid_t pid, const pid_t *alive, size_t n_alive);
bool task_sampler_has(const struct task_sampler *s, pid_t tid);
/* Threads sampled now: in all, and of pid. */
size_t task_sampler_count(const struct task_sampler *s);
size_t task_sampler_count_of(const struct task_sampler *s, pid_t pid);
/* The thread sampled longest among those whose process match() accepts, and since
 * when (CLOCK_MONOTONIC ms): false if none. */
bool task_sampler_oldest(const struct task_sampler *s, bool (*match)(void *userdata, pid_t pid), void *userdata,
                         pid_t *ret_pid, pid_t *ret_tid, uint64_t *ret_since_ms);

struct task_sample {
        pid_t pid, tid;
        int pidfd;                 /* the sampler's, naming pid's process: valid until the
                                    * thread is removed */
        int cpu;                   /* where the sample was taken */
        uint64_t ip;
        uint64_t regs[INSN_REGS];
};

/* Hands each sample gathered since the last drain to fn. Returns the number of samples,
 * or -errno. lost: samples the rings dropped, added to it. */
int task_sampler_drain(struct task_sampler *s, void (*fn)(void *userdata, const struct task_sample *t),
                       void *userdata, uint64_t *lost);

/* The up to INSN_CODE_LEN bytes before ip in pid's memory (process_vm_readv: the
 * caller may read pid's memory), into code, never from another page than ip's: fewer
 * when ip is near the start of its page, -EFAULT at its very start. Returns the
 * number of bytes, or -errno. */
int task_sampler_code(pid_t pid, uint64_t ip, uint8_t code[INSN_CODE_LEN]);
/* Whether t's process has exited (its pidfd polls readable): asked right after a read
 * of its code by pid, the bytes are its own only if it had not. */
bool task_sampler_exited(const struct task_sample *t);
/* task_sampler_code() for sample t, the process re-checked right after the read:
 * -ESRCH (and no bytes) when the sampled process exited, whose pid may name another
 * process since. What the drain reads code bytes with. */
int task_sampler_code_of(const struct task_sample *t, uint8_t code[INSN_CODE_LEN]);
