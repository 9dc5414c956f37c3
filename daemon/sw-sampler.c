/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The software page-level source (sw-sampler.h). */
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include "caps.h"
#include "clock.h"
#include "insn-decoder.h"
#include "tenant-files.h"
#include "cleanup.h"
#include "log.h"
#include "pagesize.h"
#include "proc.h"
#include "sample-quota.h"
#include "sw-sampler.h"
#include "task-sampler.h"

/* The self-check at start: long enough for a few hundred decoded addresses per thread
 * on a real CPU (about 2,000 measured on this project's 2-core host), short enough not
 * to delay the start. */
#define CHECK_MS 200
#define CHECK_MB 4
#define CHECK_PERIOD_NS 100000
#define CHECK_MIN_ADDRESSES 50
#define CHECK_MIN_PCT 90
#define CHECK_ENOUGH 400           /* samples per thread that judge it: stop sooner */

/* A read of 48 bytes of a page the CPU just ran: anything longer is its owner's doing. */
#define CODE_READ_DEADLINE_MS 200u

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

/* A process whose threads spanned nodes at its last scan, and whose turn reads it. */
struct spanning {
        pid_t pid;
        uid_t owner;
        size_t n_threads;          /* at its last scan */
        size_t cursor;             /* where in its thread list the next slots go */
};

struct sw_sampler {
        char *proc_root;
        const struct topology *topo;
        struct task_sampler *ts;
        struct insn_decoder *dec;  /* used on the decoding thread only, one at a time */
        struct decode_item *batch; /* DECODE_BATCH */
        size_t n_batch;
        int decode_error;          /* the last batch's thread could not start or drop its capabilities */
        uint64_t decode_ns;        /* CPU time of the decoding threads, not yet taken */
        uint64_t batch_ns;         /* the last batch's thread's */
        void (*decode_hook)(void *userdata);
        void *decode_hook_data;
        struct spanning *spanning; /* the processes sampled, sorted by pid */
        size_t n_spanning;
        struct sample_quota quota; /* the thread slots, shared among owners */
        uint64_t turn_ms;          /* SAMPLE_TURN_MS; shorter in the tests */
        struct tenant_reader *reader;  /* code bytes read through it; NULL: here */
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
        s->turn_ms = SAMPLE_TURN_MS;
        sample_quota_init(&s->quota, TASK_SAMPLE_MAX_THREADS);
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
        sample_quota_done(&s->quota);
        free(s->proc_root);
        free(s);
}

static ssize_t find(const struct sw_sampler *s, pid_t pid) {
        size_t lo = 0, hi = s->n_spanning;

        while (lo < hi) {
                size_t mid = lo + (hi - lo) / 2;
                if (s->spanning[mid].pid == pid)
                        return (ssize_t) mid;
                if (s->spanning[mid].pid < pid)
                        lo = mid + 1;
                else
                        hi = mid;
        }
        return -(ssize_t) lo - 1;
}

void sw_sampler_set_slots(struct sw_sampler *s, size_t slots, uint64_t turn_ms) {
        s->quota.total = slots < TASK_SAMPLE_MAX_THREADS ? slots : TASK_SAMPLE_MAX_THREADS;
        s->turn_ms = turn_ms;
}

const struct sample_quota *sw_sampler_quota(const struct sw_sampler *s) { return &s->quota; }

bool sw_sampler_sampling(const struct sw_sampler *s, pid_t tid) { return task_sampler_has(s->ts, tid); }

uint64_t sw_sampler_take_cpu_ns(struct sw_sampler *s) {
        uint64_t ns = s->decode_ns;

        s->decode_ns = 0;
        return ns;
}

struct owner_match {
        const struct sw_sampler *s;
        uid_t owner;
};

static bool owned_by(void *userdata, pid_t pid) {
        const struct owner_match *m = userdata;
        ssize_t i = find(m->s, pid);

        return i >= 0 && m->s->spanning[i].owner == m->owner;
}

/* owner's thread sampled longest: false if none, or (turn_ms above 0) none sampled
 * that long. Stopped otherwise. */
static bool stop_oldest(struct sw_sampler *s, uid_t owner, uint64_t turn_ms) {
        struct owner_match m = { s, owner };
        uint64_t since;
        pid_t pid, tid;

        if (!task_sampler_oldest(s->ts, owned_by, &m, &pid, &tid, &since) ||
            (turn_ms && since + turn_ms > clock_now_ms()))
                return false;
        task_sampler_remove(s->ts, pid, tid);
        sample_quota_give(&s->quota, owner, 1);
        return true;
}

/* What owner wants again, from its processes' threads; every owner above its share
 * then gives back its threads sampled longest. */
static void want_again(struct sw_sampler *s, uid_t owner) {
        uint64_t want = 0;

        for (size_t i = 0; i < s->n_spanning; i++)
                if (s->spanning[i].owner == owner)
                        want += s->spanning[i].n_threads;
        (void) sample_quota_want(&s->quota, owner, want);
        for (size_t k = 0; k < s->quota.n; k++)
                for (uint64_t n = sample_quota_excess(&s->quota, s->quota.v[k].uid); n > 0; n--)
                        if (!stop_oldest(s, s->quota.v[k].uid, 0))
                                break;
}

/* Stops sampling pid's threads, or those not among alive[n] (ended), giving their slots
 * back to owner. */
static void stop_threads(struct sw_sampler *s, pid_t pid, uid_t owner, const pid_t *alive, size_t n, bool all) {
        size_t before = task_sampler_count_of(s->ts, pid);

        if (all)
                task_sampler_remove(s->ts, pid, 0);
        else
                task_sampler_prune(s->ts, pid, alive, n);
        sample_quota_give(&s->quota, owner, before - task_sampler_count_of(s->ts, pid));
}

/* Adds pid's threads not sampled yet within its owner's share, from where the last
 * scan's left off: an owner with more threads than its share has them sampled in
 * turns (a thread sampled turn_ms gives its slot to a waiting one of the same owner
 * at this scan). */
static void add_threads(struct sw_sampler *s, size_t at) {
        _cleanup_free_ pid_t *tids = NULL;
        struct spanning *sp = &s->spanning[at];
        const pid_t pid = sp->pid;
        const uid_t owner = sp->owner;
        size_t n = 0, waiting, last = SIZE_MAX;

        if (proc_list_tasks(s->proc_root, pid, &tids, &n) < 0 || n == 0)
                return;
        /* Threads that ended give their slots back first: a process whose threads come
         * and go must not fill the bound with dead ones. */
        stop_threads(s, pid, owner, tids, n, false);
        sp->n_threads = n;
        want_again(s, owner);
        sp = &s->spanning[at];
        waiting = n - task_sampler_count_of(s->ts, pid);
        if (waiting && sample_quota_room(&s->quota, owner) == 0 && sample_quota_share(&s->quota, owner) > 0) {
                uint64_t turns = sample_quota_share(&s->quota, owner) / 4 + 1;
                while (turns-- > 0 && waiting-- > 0 && stop_oldest(s, owner, s->turn_ms))
                        ;
                waiting = n - task_sampler_count_of(s->ts, pid);
        }
        for (size_t k = 0; k < n && waiting > 0; k++) {
                pid_t tid = tids[(sp->cursor + k) % n];
                int r;

                if (task_sampler_has(s->ts, tid))
                        continue;
                if (!sample_quota_take(&s->quota, owner)) {
                        sample_quota_refuse(&s->quota, owner, waiting - 1);
                        log_debug("Software sampling: uid %u's share of %" PRIu64 " threads is taken: pid=%d's "
                                  "other %zu wait their turn", (unsigned) owner,
                                  sample_quota_share(&s->quota, owner), (int) pid, waiting);
                        break;
                }
                r = task_sampler_add(s->ts, pid, tid);
                if (r < 0) {
                        sample_quota_give(&s->quota, owner, 1);
                        log_debug_errno(r, "pid=%d tid=%d: cannot sample it: %m", (int) pid, (int) tid);
                        if (r == -E2BIG)
                                break;
                        continue;
                }
                waiting--;
                last = k;
        }
        if (last != SIZE_MAX)
                sp->cursor = (sp->cursor + last + 1) % n;
}

void sw_sampler_forget(struct sw_sampler *s, pid_t pid) {
        ssize_t i = find(s, pid);
        uid_t owner;

        if (i < 0)
                return;
        owner = s->spanning[i].owner;
        stop_threads(s, pid, owner, NULL, 0, true);
        memmove(s->spanning + i, s->spanning + i + 1, (s->n_spanning - (size_t) i - 1) * sizeof(*s->spanning));
        s->n_spanning--;
        want_again(s, owner);
}

void sw_sampler_span(struct sw_sampler *s, pid_t pid, uid_t owner, bool spans) {
        ssize_t i = find(s, pid);

        if (!spans || (i >= 0 && s->spanning[i].owner != owner)) {
                sw_sampler_forget(s, pid);
                if (!spans)
                        return;
                i = find(s, pid);
        }
        if (i < 0) {
                struct spanning *n = realloc(s->spanning, (s->n_spanning + 1) * sizeof(*n));
                size_t at = (size_t) (-i - 1);
                if (!n)
                        return;
                s->spanning = n;
                memmove(n + at + 1, n + at, (s->n_spanning - at) * sizeof(*n));
                n[at] = (struct spanning) { .pid = pid, .owner = owner };
                s->n_spanning++;
                i = (ssize_t) at;
        }
        /* At every scan that finds it spanning: threads come and go. */
        add_threads(s, (size_t) i);
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
        s->batch_ns = clock_now_ns(CLOCK_THREAD_CPUTIME_ID);   /* all of this thread's life */
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
        s->batch_ns = 0;
        for (size_t i = 0; i < s->n_batch; i++)
                s->batch[i].found = false;
        r = -pthread_create(&th, NULL, decode_main, s);
        if (r == 0)
                r = -pthread_join(th, NULL);
        if (r == 0) {
                s->decode_ns += s->batch_ns;
                r = s->decode_error;
        }
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

void sw_sampler_set_reader(struct sw_sampler *s, struct tenant_reader *reader) {
        s->reader = reader;
}

/* A sample's code bytes, read now through the reader (by pid, re-checked after the
 * read: task-sampler.h), queued for the decoding thread. A process no longer sampled
 * is not read. */
static void on_sample(void *userdata, const struct task_sample *t) {
        struct drain_ctx *c = userdata;
        struct sw_sampler *s = c->s;
        struct decode_item *it = &s->batch[s->n_batch];
        ssize_t i = find(s, t->pid);
        struct tenant_proc tp = { .proc_root = s->proc_root, .pid = t->pid, .deadline_ms = CODE_READ_DEADLINE_MS };
        int n;

        if (i < 0)
                return;
        tp.owner = s->spanning[i].owner;
        n = tenant_files_code(s->reader, &tp, t->ip, it->code);
        if (n > 0 && task_sampler_exited(t))
                n = -ESRCH;
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
