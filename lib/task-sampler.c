/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Timer samples of threads with their user registers (task-sampler.h). */
#include <errno.h>
#include <poll.h>
#include <stdbool.h>
#include <stdio.h>
#include <linux/perf_event.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <unistd.h>
#include "clock.h"
#include "pagesize.h"
#include "task-sampler.h"

#ifndef SYS_pidfd_open
#define SYS_pidfd_open 434
#endif

struct ring {
        pid_t pid, tid;
        int fd;                    /* -1: a free slot */
        int pidfd;                 /* names pid's process as it was when the thread was added */
        struct perf_event_mmap_page *meta;   /* then the data pages */
        size_t map_len;
        uint64_t seq;              /* the order it was added in */
        uint64_t since_ms;         /* and when (CLOCK_MONOTONIC) */
};

struct task_sampler {
        uint64_t period_ns;
        struct ring rings[TASK_SAMPLE_MAX_THREADS];
        size_t n;                  /* slots used so far (some may be free again) */
        uint64_t seq;              /* of the last thread added */
};

int task_sampler_new(uint64_t period_ns, struct task_sampler **ret) {
        struct task_sampler *s;

        if (period_ns == 0 || !ret)
                return -EINVAL;
        s = calloc(1, sizeof(*s));
        if (!s)
                return -ENOMEM;
        s->period_ns = period_ns;
        *ret = s;
        return 0;
}

void task_sampler_free(struct task_sampler *s) {
        if (!s)
                return;
        for (size_t i = 0; i < s->n; i++)
                if (s->rings[i].fd >= 0) {
                        munmap(s->rings[i].meta, s->rings[i].map_len);
                        close(s->rings[i].fd);
                        close(s->rings[i].pidfd);
                }
        free(s);
}

static struct ring *free_slot(struct task_sampler *s) {
        for (size_t i = 0; i < s->n; i++)
                if (s->rings[i].fd < 0)
                        return &s->rings[i];
        return s->n < TASK_SAMPLE_MAX_THREADS ? &s->rings[s->n++] : NULL;
}

void task_sampler_prune(struct task_sampler *s, pid_t pid, const pid_t *alive, size_t n_alive) {
        for (size_t i = 0; i < s->n; i++) {
                struct ring *r = &s->rings[i];
                bool found = false;

                if (r->fd < 0 || r->pid != pid)
                        continue;
                for (size_t k = 0; k < n_alive && !found; k++)
                        found = alive[k] == r->tid;
                if (!found)
                        task_sampler_remove(s, pid, r->tid);
        }
}

bool task_sampler_has(const struct task_sampler *s, pid_t tid) {
        for (size_t i = 0; i < s->n; i++)
                if (s->rings[i].fd >= 0 && s->rings[i].tid == tid)
                        return true;
        return false;
}

size_t task_sampler_count_of(const struct task_sampler *s, pid_t pid) {
        size_t n = 0;

        for (size_t i = 0; i < s->n; i++)
                n += s->rings[i].fd >= 0 && s->rings[i].pid == pid;
        return n;
}

bool task_sampler_oldest(const struct task_sampler *s, bool (*match)(void *userdata, pid_t pid), void *userdata,
                         pid_t *ret_pid, pid_t *ret_tid, uint64_t *ret_since_ms) {
        const struct ring *best = NULL;

        for (size_t i = 0; i < s->n; i++) {
                const struct ring *r = &s->rings[i];
                if (r->fd >= 0 && (!best || r->seq < best->seq) && match(userdata, r->pid))
                        best = r;
        }
        if (!best)
                return false;
        *ret_pid = best->pid;
        *ret_tid = best->tid;
        *ret_since_ms = best->since_ms;
        return true;
}

size_t task_sampler_count(const struct task_sampler *s) {
        size_t n = 0;

        for (size_t i = 0; i < s->n; i++)
                n += s->rings[i].fd >= 0;
        return n;
}

void task_sampler_remove(struct task_sampler *s, pid_t pid, pid_t tid) {
        for (size_t i = 0; i < s->n; i++) {
                struct ring *r = &s->rings[i];
                if (r->fd < 0 || r->pid != pid || (tid > 0 && r->tid != tid))
                        continue;
                munmap(r->meta, r->map_len);
                close(r->fd);
                close(r->pidfd);
                r->fd = -1;
        }
}

/* Whether the process pidfd names has exited (its pid may name another one since). */
static bool exited(int pidfd) {
        struct pollfd p = { .fd = pidfd, .events = POLLIN };

        return poll(&p, 1, 0) != 0;   /* readable, or an error: not to be trusted */
}

/* The live /proc, not a root passed in as lib's readers take: the events and the
 * code bytes are the running kernel's and processes' own. */
static bool thread_of(pid_t pid, pid_t tid) {
        char path[64];

        snprintf(path, sizeof(path), "/proc/%d/task/%d", (int) pid, (int) tid);
        return access(path, F_OK) == 0;
}

int task_sampler_add(struct task_sampler *s, pid_t pid, pid_t tid) {
        struct perf_event_attr a = {
                .type = PERF_TYPE_SOFTWARE,
                .size = sizeof(a),
                .config = PERF_COUNT_SW_TASK_CLOCK,
                .sample_period = s->period_ns,
                .sample_type = PERF_SAMPLE_TID | PERF_SAMPLE_CPU | PERF_SAMPLE_REGS_USER,
                .sample_regs_user = INSN_REGS_MASK,
                /* Only samples that interrupted user code: their IP is the access's. */
                .exclude_kernel = 1,
                .exclude_hv = 1,
        };
        struct ring *r;
        int fd, pidfd;
        void *meta;
        size_t len = (1 + TASK_SAMPLE_RING_PAGES) * page_size();

        r = free_slot(s);
        if (!r)
                return -E2BIG;
        fd = (int) syscall(SYS_perf_event_open, &a, tid, -1, -1, PERF_FLAG_FD_CLOEXEC);
        if (fd < 0) {
                int e = -errno;
                r->fd = -1;
                return e;
        }
        /* The process that pid names now, for the code bytes read by pid at each drain
         * (task_sampler_code_of): opened before the check below, so that the check
         * covers it too. */
        pidfd = (int) syscall(SYS_pidfd_open, pid, 0);
        if (pidfd < 0) {
                int e = -errno;
                close(fd);
                r->fd = -1;
                return e;
        }
        /* The tid came from a listing of pid's threads: by now that thread may have
         * ended and its id gone to a thread of another process, which the event would
         * sample (its registers, then its code bytes). Checked after the open: the
         * event holds the task it opened, and the task is pid's thread exactly when
         * /proc finds it among pid's threads now. The pidfd's process is the one
         * checked unless it exited in between, which its pidfd then says. */
        if (!thread_of(pid, tid) || exited(pidfd)) {
                close(pidfd);
                close(fd);
                r->fd = -1;
                return -ESRCH;
        }
        meta = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
        if (meta == MAP_FAILED) {
                int e = -errno;
                close(pidfd);
                close(fd);
                r->fd = -1;
                return e;
        }
        *r = (struct ring) { .pid = pid, .tid = tid, .fd = fd, .pidfd = pidfd, .meta = meta, .map_len = len,
                             .seq = ++s->seq, .since_ms = clock_now_ms() };
        return 0;
}

/* Copies len bytes at offset off of the ring's data area (it wraps). */
static void ring_copy(const struct ring *r, uint64_t off, void *dst, size_t len) {
        const uint8_t *data = (const uint8_t *) r->meta + page_size();
        const size_t size = TASK_SAMPLE_RING_PAGES * page_size();
        size_t at = off % size, first = len < size - at ? len : size - at;

        memcpy(dst, data + at, first);
        memcpy((uint8_t *) dst + first, data, len - first);
}

/* One PERF_RECORD_SAMPLE's body: pid, tid, cpu (and 4 reserved bytes), abi, then the
 * registers of the mask in ascending order. Returns whether it carried 64-bit user
 * registers. */
static bool parse_sample(const uint8_t *body, size_t len, struct task_sample *t) {
        const size_t n_regs = (size_t) __builtin_popcountll(INSN_REGS_MASK);
        uint32_t ids[4];
        uint64_t abi, v[INSN_REGS];
        size_t k = 0;

        if (len < 16 + 8)
                return false;
        memcpy(ids, body, 16);
        memcpy(&abi, body + 16, 8);
        if (abi != PERF_SAMPLE_REGS_ABI_64 || len < 24 + 8 * n_regs)
                return false;
        memcpy(v, body + 24, 8 * n_regs);
        memset(t->regs, 0, sizeof(t->regs));
        for (unsigned bit = 0; bit < INSN_REGS; bit++)
                if (INSN_REGS_MASK & (UINT64_C(1) << bit))
                        t->regs[bit] = v[k++];
        t->pid = (pid_t) ids[0];
        t->tid = (pid_t) ids[1];
        t->cpu = (int) ids[2];
        t->ip = t->regs[8];
        return true;
}

static int drain_ring(struct ring *r, void (*fn)(void *, const struct task_sample *), void *userdata,
                      uint64_t *lost) {
        uint64_t head = __atomic_load_n(&r->meta->data_head, __ATOMIC_ACQUIRE), tail = r->meta->data_tail;
        uint8_t buf[512];
        int n = 0;

        while (tail + sizeof(struct perf_event_header) <= head) {
                struct perf_event_header h;
                ring_copy(r, tail, &h, sizeof(h));
                if (h.size < sizeof(h) || tail + h.size > head)
                        break;
                if (h.size <= sizeof(buf)) {
                        ring_copy(r, tail, buf, h.size);
                        if (h.type == PERF_RECORD_SAMPLE) {
                                struct task_sample t;
                                if (parse_sample(buf + sizeof(h), h.size - sizeof(h), &t) && t.pid == r->pid) {
                                        t.pidfd = r->pidfd;
                                        fn(userdata, &t);
                                        n++;
                                }
                        } else if (h.type == PERF_RECORD_LOST && h.size >= sizeof(h) + 16 && lost) {
                                uint64_t l;
                                memcpy(&l, buf + sizeof(h) + 8, 8);
                                *lost += l;
                        }
                }
                tail += h.size;
        }
        __atomic_store_n(&r->meta->data_tail, tail, __ATOMIC_RELEASE);
        return n;
}

int task_sampler_drain(struct task_sampler *s, void (*fn)(void *userdata, const struct task_sample *t),
                       void *userdata, uint64_t *lost) {
        int total = 0;

        if (!s || !fn)
                return -EINVAL;
        for (size_t i = 0; i < s->n; i++)
                if (s->rings[i].fd >= 0)
                        total += drain_ring(&s->rings[i], fn, userdata, lost);
        return total;
}

/* Only ip's own page is read: the CPU just ran the code there, so it is mapped and in
 * memory, and reading it cannot make the daemon wait on a page its owner controls.
 * The page before it may be anything: a page of a FUSE file that its owner never
 * answers would hold the read for good. An instruction that begins on the page before
 * is not decoded (at most INSN_CODE_LEN bytes of a page: 1.2% of 4 KiB). */
int task_sampler_code(pid_t pid, uint64_t ip, uint8_t code[INSN_CODE_LEN]) {
        const uint64_t ps = page_size(), page = ip / ps * ps;
        uint64_t from = ip - page >= INSN_CODE_LEN ? ip - INSN_CODE_LEN : page;
        struct iovec local = { code, ip - from }, remote = { (void *) (uintptr_t) from, ip - from };
        ssize_t n;

        if (ip == from)
                return -EFAULT;
        n = process_vm_readv(pid, &local, 1, &remote, 1, 0);
        if (n < 0)
                return -errno;
        return n == (ssize_t) (ip - from) ? (int) n : -EFAULT;
}

bool task_sampler_exited(const struct task_sample *t) {
        return exited(t->pidfd);
}

int task_sampler_code_of(const struct task_sample *t, uint8_t code[INSN_CODE_LEN]) {
        int n = task_sampler_code(t->pid, t->ip, code);

        /* Read by pid number: if the sampled process exited before the read, the pid
         * may name another process by now, whose bytes these would be. Asked after
         * the read: a process that had not exited when it ended still held its pid
         * during it, so the bytes are its own. */
        if (n > 0 && task_sampler_exited(t)) {
                memset(code, 0, INSN_CODE_LEN);
                return -ESRCH;
        }
        return n;
}
