/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The software page-level source (sw-sampler.h). */
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include "caps.h"
#include "insn-addr.h"
#include "cleanup.h"
#include "log.h"
#include "pagesize.h"
#include "proc.h"
#include "sw-sampler.h"
#include "task-sample.h"

/* The self-check at start: long enough for a few hundred decoded addresses per thread
 * on a real CPU (about 2,000 measured on this project's 2-core host), short enough not
 * to delay the start. */
#define CHECK_MS 200
#define CHECK_MB 4
#define CHECK_PERIOD_NS 100000
#define CHECK_MIN_ADDRESSES 50
#define CHECK_MIN_PCT 90
#define CHECK_ENOUGH 400           /* samples per thread that judge it: stop sooner */

/* Samples decoded at once, on a thread of their own (decode_batch). */
#define DECODE_BATCH 1024

/* One sample with its code bytes, read on the event loop, waiting to be decoded. */
struct decode_item {
        pid_t pid;
        int cpu;
        uint64_t ip;
        uint64_t regs[INSN_REGS];
        uint8_t code[INSN_CODE_LEN];
        uint8_t len;
        bool found;                /* the decoder's answer: addr is the operand's address */
        uint64_t addr;
};

struct sw_sampler {
        char *proc_root;
        const struct topology *topo;
        struct task_sampler *ts;
        struct insn_decoder *dec;  /* used on the decoding thread only, one at a time */
        struct decode_item *batch; /* DECODE_BATCH */
        size_t n_batch;
        int decode_error;          /* the last batch's thread could not start or drop its capabilities */
        void (*decode_hook)(void *userdata);
        void *decode_hook_data;
        pid_t *spanning;           /* the processes sampled, sorted */
        size_t n_spanning;
        bool full_logged;          /* the thread bound was hit: said once until it is not */
};

struct drain_ctx {
        struct sw_sampler *s;
        sw_sample_fn fn;
        void *userdata;
};

int sw_sampler_new(const char *proc_root, const struct topology *t, uint64_t rate, struct sw_sampler **ret,
                   struct sample_check *ret_check) {
        struct sw_sampler *s;
        int r;

        if (rate == 0 || !t)
                return -EINVAL;
        r = sample_check_run(CHECK_MS, CHECK_MB, CHECK_PERIOD_NS, CHECK_ENOUGH, ret_check);
        if (r < 0)
                return r;
        if (!sample_check_passed(ret_check, CHECK_MIN_ADDRESSES, CHECK_MIN_PCT))
                return -ENOTRECOVERABLE;
        s = calloc(1, sizeof(*s));
        if (!s)
                return -ENOMEM;
        s->proc_root = strdup(proc_root);
        s->topo = t;
        r = s->proc_root ? task_sampler_new(1000000000 / rate, &s->ts) : -ENOMEM;
        if (r >= 0)
                r = insn_decoder_new(&s->dec);
        if (r >= 0 && !(s->batch = calloc(DECODE_BATCH, sizeof(*s->batch))))
                r = -ENOMEM;
        if (r < 0) {
                sw_sampler_free(s);
                return r;
        }
        *ret = s;
        return 0;
}

void sw_sampler_free(struct sw_sampler *s) {
        if (!s)
                return;
        task_sampler_free(s->ts);
        insn_decoder_free(s->dec);
        free(s->batch);
        free(s->spanning);
        free(s->proc_root);
        free(s);
}

static ssize_t find(const struct sw_sampler *s, pid_t pid) {
        size_t lo = 0, hi = s->n_spanning;

        while (lo < hi) {
                size_t mid = lo + (hi - lo) / 2;
                if (s->spanning[mid] == pid)
                        return (ssize_t) mid;
                if (s->spanning[mid] < pid)
                        lo = mid + 1;
                else
                        hi = mid;
        }
        return -(ssize_t) lo - 1;
}

/* Adds pid's threads not sampled yet, while there is room. */
static void add_threads(struct sw_sampler *s, pid_t pid) {
        _cleanup_free_ pid_t *tids = NULL;
        size_t n = 0;

        if (proc_list_tasks(s->proc_root, pid, &tids, &n) < 0)
                return;
        /* Threads that ended give their slots back first: a process whose threads come
         * and go must not fill the bound with dead ones. */
        task_sampler_prune(s->ts, pid, tids, n);
        for (size_t i = 0; i < n; i++) {
                int r;
                if (task_sampler_has(s->ts, tids[i]))
                        continue;
                r = task_sampler_add(s->ts, pid, tids[i]);
                if (r == -E2BIG) {
                        if (!s->full_logged)
                                log_debug("Software sampling: %d threads sampled already: pid=%d's others wait",
                                          TASK_SAMPLE_MAX_THREADS, (int) pid);
                        s->full_logged = true;
                        return;
                }
                if (r < 0)
                        log_debug_errno(r, "pid=%d tid=%d: cannot sample it: %m", (int) pid, (int) tids[i]);
        }
}

void sw_sampler_forget(struct sw_sampler *s, pid_t pid) {
        ssize_t i = find(s, pid);

        if (i < 0)
                return;
        task_sampler_remove(s->ts, pid, 0);
        memmove(s->spanning + i, s->spanning + i + 1, (s->n_spanning - (size_t) i - 1) * sizeof(pid_t));
        s->n_spanning--;
        if (task_sampler_count(s->ts) < TASK_SAMPLE_MAX_THREADS)
                s->full_logged = false;
}

void sw_sampler_span(struct sw_sampler *s, pid_t pid, bool spans) {
        ssize_t i = find(s, pid);

        if (!spans) {
                sw_sampler_forget(s, pid);
                return;
        }
        if (i < 0) {
                pid_t *n = realloc(s->spanning, (s->n_spanning + 1) * sizeof(pid_t));
                size_t at = (size_t) (-i - 1);
                if (!n)
                        return;
                s->spanning = n;
                memmove(n + at + 1, n + at, (s->n_spanning - at) * sizeof(pid_t));
                n[at] = pid;
                s->n_spanning++;
        }
        /* At every scan that finds it spanning: threads come and go. */
        add_threads(s, pid);
}

void sw_sampler_set_decode_hook(struct sw_sampler *s, void (*hook)(void *userdata), void *userdata) {
        s->decode_hook = hook;
        s->decode_hook_data = userdata;
}

/* The decoding thread: Capstone parses bytes that tenants wrote, so it runs on a
 * thread with no capability at all (caps_drop_thread: capabilities are per thread on
 * Linux), not on the event loop, which holds CAP_SYS_ADMIN and CAP_SYS_PTRACE. A new
 * thread per batch: it inherits the loop's pinning to the service CPUs as it is now,
 * and none stays behind between drains. */
static void *decode_main(void *userdata) {
        struct sw_sampler *s = userdata;
        int r = caps_drop_thread();

        if (r < 0) {
                s->decode_error = r;
                return NULL;
        }
        if (s->decode_hook)
                s->decode_hook(s->decode_hook_data);
        for (size_t i = 0; i < s->n_batch; i++) {
                struct decode_item *it = &s->batch[i];
                it->found = insn_decoder_addr(s->dec, (uint64_t) it->pid, it->ip, it->code, it->len, it->regs,
                                              &it->addr) == 0;
        }
        return NULL;
}

/* Decodes the batch on a thread of its own and hands each address to fn. Nothing is
 * decoded on the calling thread: a thread that cannot start, or keeps a capability,
 * loses the batch (said in the debug log). */
static void decode_batch(struct drain_ctx *c) {
        struct sw_sampler *s = c->s;
        pthread_t th;
        int r;

        if (s->n_batch == 0)
                return;
        s->decode_error = 0;
        for (size_t i = 0; i < s->n_batch; i++)
                s->batch[i].found = false;
        r = -pthread_create(&th, NULL, decode_main, s);
        if (r == 0)
                r = -pthread_join(th, NULL);
        if (r == 0)
                r = s->decode_error;
        if (r < 0) {
                log_debug_errno(r, "Software sampling: %zu sample(s) not decoded: no capability-free thread: %m",
                                s->n_batch);
                s->n_batch = 0;
                return;
        }
        for (size_t i = 0; i < s->n_batch; i++) {
                const struct decode_item *it = &s->batch[i];
                uint64_t a = it->addr, sp = it->regs[7];
                int node;

                if (!it->found || (a > sp ? a - sp : sp - a) < SW_STACK_BYTES)
                        continue;  /* none, or the thread's stack: its own */
                node = topology_cpu_node(s->topo, (unsigned) it->cpu);
                if (node >= 0)
                        c->fn(c->userdata, it->pid, a & ~(uint64_t) (page_size() - 1), (unsigned) node, 1);
        }
        s->n_batch = 0;
}

/* A sample's code bytes, read now (by pid, re-checked after the read: task-sample.h),
 * queued for the decoding thread. */
static void on_sample(void *userdata, const struct task_sample *t) {
        struct drain_ctx *c = userdata;
        struct decode_item *it = &c->s->batch[c->s->n_batch];
        int n = task_sample_code_of(t, it->code);

        if (n <= 0)
                return;
        it->pid = t->pid;
        it->cpu = t->cpu;
        it->ip = t->ip;
        it->len = (uint8_t) n;
        memcpy(it->regs, t->regs, sizeof(it->regs));
        if (++c->s->n_batch == DECODE_BATCH)
                decode_batch(c);
}

int sw_sampler_drain(struct sw_sampler *s, sw_sample_fn fn, void *userdata) {
        struct drain_ctx c = { s, fn, userdata };
        uint64_t lost = 0;
        int r = task_sampler_drain(s->ts, on_sample, &c, &lost);

        decode_batch(&c);
        if (lost)
                log_debug("Software sampling: %" PRIu64 " sample(s) lost (rings full between ticks)", lost);
        return r;
}
