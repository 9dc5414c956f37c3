/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The software page-level source ([sample] pmu = software): the threads of processes
 * whose threads span nodes, sampled by lib/task-sampler, each sample's data address
 * decoded by lib/insn-decoder, counted for the node of the CPU the sample was taken on.
 * daemon/page-sampler.c wraps it as a page_sampler; this is its whole interface.
 *
 * Only processes whose threads ran on more than one node in their last scan window are
 * sampled (sw_sampler_span): a process on one node needs no page-level signal. At most
 * TASK_SAMPLE_MAX_THREADS threads are sampled at once, shared among the owners (the
 * uid whose turn reads the process's cgroup) that have spanning processes
 * (lib/sample-quota.h: max-min fair); an owner with more threads than its share has
 * them sampled in turns, from where its process's last scan left off, a thread
 * sampled SAMPLE_TURN_MS giving its slot to a waiting one of the same owner. Threads
 * refused are counted per owner (sw_sampler_quota). A thread that ended gives its
 * slot back at its process's next scan, and a process that stops spanning nodes or
 * exits gives all. Addresses within SW_STACK_BYTES of the sampled
 * stack pointer are dropped: a thread's stack and its locals are its own.
 *
 * The code bytes are read at the drain, by pid, and kept only when the sampled process
 * had not exited by the end of the read (task_sampler_code_of). They are decoded on a
 * thread that holds no capability (daemon/caps.h, caps_drop_thread), started for each
 * batch of DECODE_BATCH samples: Capstone parses bytes tenants wrote. */
#pragma once
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>
#include "sample-check.h"
#include "sample-quota.h"
#include "topology.h"

#define SW_STACK_BYTES (UINT64_C(1) << 20)

struct sw_sampler;

/* rate: samples per second of each sampled thread's run time. Runs the self-check
 * (sample-check.h, a fifth of a second) and refuses (-ENOTRECOVERABLE, with *ret_check
 * filled) when the samples do not follow the accesses on this CPU: an emulated one.
 * -EOPNOTSUPP: no decoder in this build or on this architecture. */
int sw_sampler_new(const char *proc_root, const struct topology *t, uint64_t rate, struct sw_sampler **ret,
                   struct sample_check *ret_check);
void sw_sampler_free(struct sw_sampler *s);

/* pid's threads spanned nodes at its last scan (spans), or did not: sampling starts
 * (or its new threads are added) or stops. */
void sw_sampler_span(struct sw_sampler *s, pid_t pid, uid_t owner, bool spans);
void sw_sampler_forget(struct sw_sampler *s, pid_t pid);

typedef void (*sw_sample_fn)(void *userdata, pid_t tgid, uint64_t addr, unsigned node, uint64_t count);
/* Every sample since the last drain, decoded: fn(tgid, page-aligned address, node, 1)
 * for each that gave an address. Returns the number of samples read. */
int sw_sampler_drain(struct sw_sampler *s, sw_sample_fn fn, void *userdata);
/* The thread slots: each owner's share, what it holds and was refused. */
const struct sample_quota *sw_sampler_quota(const struct sw_sampler *s);
/* CPU time the decoding threads spent since the last call (the caller's thread
 * measures only its own). */
uint64_t sw_sampler_take_cpu_ns(struct sw_sampler *s);
/* Whether thread tid is sampled now. */
bool sw_sampler_sampling(const struct sw_sampler *s, pid_t tid);
/* For the tests: fewer slots than TASK_SAMPLE_MAX_THREADS, and a shorter turn. */
void sw_sampler_set_slots(struct sw_sampler *s, size_t slots, uint64_t turn_ms);
/* For the tests: hook(userdata) runs on each decoding thread, after it dropped its
 * capabilities and before it decodes. */
struct tenant_reader;
/* Code bytes are read through reader (tenant-files.h: with a deadline, their owner's
 * reads refused while one overran); NULL: on the draining thread. */
void sw_sampler_set_reader(struct sw_sampler *s, struct tenant_reader *reader);
void sw_sampler_set_decode_hook(struct sw_sampler *s, void (*hook)(void *userdata), void *userdata);
