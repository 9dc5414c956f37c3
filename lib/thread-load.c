/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "cleanup.h"
#include "clock.h"
#include "parse.h"
#include "node-time.h"
#include "proc.h"
#include "thread-load.h"

/* ---- threads --------------------------------------------------------------- */

static int read_runtime(const char *proc_root, pid_t pid, pid_t tid, uint64_t *ret) {
        char path[PATH_MAX], buf[128];
        ssize_t n;
        int fd;

        if ((size_t) snprintf(path, sizeof(path), "%s/%d/task/%d/schedstat", proc_root, (int) pid, (int) tid) >=
            sizeof(path))
                return -ENAMETOOLONG;
        fd = open(path, O_RDONLY | O_CLOEXEC);
        if (fd < 0)
                return errno == ENOENT ? -ESRCH : -errno;
        n = read(fd, buf, sizeof(buf) - 1);
        close(fd);
        if (n < 0)
                return errno == ENOENT ? -ESRCH : -errno;
        if (n == 0)
                return -ESRCH; /* exited between open() and read() */
        return node_time_schedstat_parse(buf, (size_t) n, ret);
}

/* tid's affinity from the kernel: half the cost of reading it from status (0.2 us
 * against 11 us a thread, docs/RULES.md). The kernel's mask is an array of unsigned
 * long, CPU n at bit n % bits of word n / bits, whatever the width of a long. */
static int read_affinity(pid_t tid, nb_cpumask *ret) {
        unsigned long words[NB_CPUS_MAX / (8 * sizeof(unsigned long))] = {};
        const unsigned per = 8 * sizeof(unsigned long);

        if (sched_getaffinity(tid, sizeof(words), (cpu_set_t *) (void *) words) < 0)
                return -errno;
        *ret = (nb_cpumask) {};
        for (unsigned i = 0; i < ELEMENTSOF(words); i++)
                ret->w[i * per / 64] |= (uint64_t) words[i] << (i * per % 64);
        return 0;
}

/* A thread read now, before its window is known. */
struct reading {
        struct thread_load_thread th;
        nb_cpumask cpus;
};

/* Reads one thread. -ESRCH: it exited (left out); other -errno: the read fails. */
static int read_thread(const char *proc_root, pid_t pid, pid_t tid, const struct topology *t, struct reading *ret) {
        struct proc_stat ps;
        struct proc_status st;
        int r, node;

        /* stat first: its start time names the thread whose run time and affinity follow
         * (a thread id is reused only after the thread is gone and the ids wrapped). */
        r = proc_read_task_stat(proc_root, pid, tid, &ps);
        if (r < 0)
                return r;
        ret->th = (struct thread_load_thread) { .tid = tid, .cpu = ps.processor, .node = -1,
                                                .starttime = ps.starttime };
        r = read_runtime(proc_root, pid, tid, &ret->th.runtime_ns);
        if (r < 0)
                return r;
        if (strcmp(proc_root, "/proc") == 0) {
                r = read_affinity(tid, &ret->cpus);
                if (r < 0)
                        return r;
                ret->th.has_affinity = true;
        } else {
                /* A stored /proc: the same mask, as Cpus_allowed_list shows it. */
                r = proc_read_task_status(proc_root, pid, tid, &st);
                if (r < 0)
                        return r;
                ret->th.has_affinity = st.has_cpus_allowed;
                ret->cpus = st.cpus_allowed;
        }
        node = ps.processor >= 0 ? topology_cpu_node(t, (unsigned) ps.processor) : -1;
        ret->th.node = node >= 0 ? topology_node_index(t, (unsigned) node) : -1;
        return 0;
}

const struct thread_load_thread *thread_load_find(const struct thread_load *tl, pid_t tid) {
        size_t lo = 0, hi = tl->n_threads;

        while (lo < hi) {
                size_t mid = lo + (hi - lo) / 2;

                if (tl->threads[mid].tid == tid)
                        return &tl->threads[mid];
                if (tl->threads[mid].tid < tid)
                        lo = mid + 1;
                else
                        hi = mid;
        }
        return NULL;
}

/* The busy fraction of th since prev, over window_ns: none (measured false) for a thread
 * not seen before, a new thread under a reused id (another start time) or a run time
 * that went back. */
static void window_of(struct thread_load_thread *th, const struct thread_load_thread *prev, uint64_t window_ns) {
        if (!prev || window_ns == 0 || prev->starttime != th->starttime || th->runtime_ns < prev->runtime_ns)
                return;
        th->measured = true;
        th->busy = (double) (th->runtime_ns - prev->runtime_ns) / (double) window_ns;
}

static unsigned affinity_words_for(const struct topology *t) {
        unsigned w = (t->n_cpus + 63) / 64;

        if (w > NB_CPUS_MAX / 64)
                w = NB_CPUS_MAX / 64;
        return w ? w : 1;
}

int thread_load_read_at(const char *proc_root, pid_t pid, const struct topology *t, struct thread_load *tl,
                        size_t max_threads, uint64_t now_ns) {
        _cleanup_free_ pid_t *tids = NULL;
        _cleanup_free_ struct thread_load_thread *now = NULL;
        _cleanup_free_ uint64_t *aff = NULL;
        size_t n_tids = 0, n = 0;
        unsigned words = affinity_words_for(t);
        uint64_t window_ns;
        int r;

        if (!proc_root || pid <= 0 || !t || !tl)
                return -EINVAL;
        r = proc_list_tasks_max(proc_root, pid, max_threads, &tids, &n_tids);
        if (r == -E2BIG) {
                thread_load_done(tl);
                return r;
        }
        if (r < 0)
                return r;
        now = calloc(n_tids ? n_tids : 1, sizeof(*now));
        aff = calloc((n_tids ? n_tids : 1) * words, sizeof(*aff));
        if (!now || !aff)
                return -ENOMEM;
        window_ns = tl->read_ns && now_ns > tl->read_ns ? now_ns - tl->read_ns : 0;

        for (size_t i = 0; i < n_tids; i++) {
                struct reading rd;

                r = read_thread(proc_root, pid, tids[i], t, &rd);
                if (r == -ESRCH)
                        continue;
                if (r < 0)
                        return r;
                window_of(&rd.th, thread_load_find(tl, tids[i]), window_ns);
                memcpy(aff + n * words, rd.cpus.w, words * sizeof(*aff));
                now[n++] = rd.th;
        }
        if (n == 0)
                return -ESRCH; /* listed, but every thread is gone: so is the process */

        free(tl->threads);
        free(tl->affinity);
        tl->threads = TAKE_PTR(now);
        tl->affinity = TAKE_PTR(aff);
        tl->n_threads = n;
        tl->affinity_words = words;
        tl->window_ns = window_ns;
        tl->read_ns = now_ns;
        return 0;
}

int thread_load_read(const char *proc_root, pid_t pid, const struct topology *t, struct thread_load *tl,
                     size_t max_threads) {
        return thread_load_read_at(proc_root, pid, t, tl, max_threads, clock_now_ns(CLOCK_MONOTONIC));
}

bool thread_load_affinity(const struct thread_load *tl, size_t i, nb_cpumask *ret) {
        *ret = (nb_cpumask) {};
        if (!tl || i >= tl->n_threads || !tl->threads[i].has_affinity)
                return false;
        memcpy(ret->w, tl->affinity + i * tl->affinity_words, tl->affinity_words * sizeof(*tl->affinity));
        return true;
}

void thread_load_done(struct thread_load *tl) {
        if (!tl)
                return;
        free(tl->threads);
        free(tl->affinity);
        *tl = (struct thread_load) {};
}

/* ---- CPUs -------------------------------------------------------------------- */

/* A cpu line of /proc/stat is eleven numbers at most: far below this. */
#define STAT_LINE_MAX 1024

struct cpu_ticks {
        uint64_t busy, total;
};

/* "cpuN user nice system idle iowait irq softirq steal guest guest_nice". guest and
 * guest_nice are inside user and nice already; fields a kernel lacks count 0.
 * Returns the CPU (>= 0), -ENOENT for the "cpu " line of all CPUs, -EINVAL. */
static int cpu_line_parse(const char *s, size_t len, struct cpu_ticks *ret) {
        uint64_t v[8] = {};
        uint64_t cpu;
        const char *end = s + len, *p;
        unsigned k = 0;

        if (len < 4 || memcmp(s, "cpu", 3) != 0)
                return -EINVAL;
        if (s[3] == ' ')
                return -ENOENT;
        p = memchr(s, ' ', len);
        if (!p || parse_u64_n(s + 3, (size_t) (p - s - 3), 0, NB_CPUS_MAX - 1, &cpu) < 0)
                return -EINVAL;
        while (p < end && k < 10) {
                const char *f;

                while (p < end && *p == ' ')
                        p++;
                if (p == end)
                        break;
                f = p;
                while (p < end && *p != ' ')
                        p++;
                if (k < 8 && parse_u64_n(f, (size_t) (p - f), 0, UINT64_MAX / 16, &v[k]) < 0)
                        return -EINVAL;
                k++;
        }
        if (k < 4)
                return -EINVAL;
        /* user nice system irq softirq steal busy; idle iowait idle. Each under 2^60: no
         * overflow in the sums. */
        ret->busy = v[0] + v[1] + v[2] + v[5] + v[6] + v[7];
        ret->total = ret->busy + v[3] + v[4];
        return (int) cpu;
}

/* Reads the cpu lines of <proc_root>/stat into ticks (n_cpus entries; CPUs beyond are
 * left out), a line at a time: they come first, and the file's tail (one number per
 * interrupt) is never read. */
static int read_cpu_ticks(const char *proc_root, struct cpu_ticks *ticks, unsigned n_cpus) {
        _cleanup_free_ char *path = NULL;
        _cleanup_close_ int fd = -EBADF;
        char buf[2 * STAT_LINE_MAX];
        size_t have = 0;
        bool seen_cpu = false;

        if (asprintf(&path, "%s/stat", proc_root) < 0)
                return -ENOMEM;
        fd = open(path, O_RDONLY | O_CLOEXEC);
        if (fd < 0)
                return -errno;
        for (;;) {
                ssize_t n = read(fd, buf + have, sizeof(buf) - have);
                size_t start = 0;
                char *nl;

                if (n < 0)
                        return -errno;
                have += (size_t) n;
                while ((nl = memchr(buf + start, '\n', have - start))) {
                        size_t len = (size_t) (nl - (buf + start));
                        struct cpu_ticks ct;
                        int cpu;

                        if (len < 3 || memcmp(buf + start, "cpu", 3) != 0)
                                return seen_cpu ? 0 : -EINVAL;
                        seen_cpu = true;
                        cpu = cpu_line_parse(buf + start, len, &ct);
                        if (cpu == -EINVAL)
                                return cpu;
                        if (cpu >= 0 && (unsigned) cpu < n_cpus)
                                ticks[cpu] = ct;
                        start += len + 1;
                }
                if (n == 0)
                        return seen_cpu ? 0 : -EINVAL;
                if (have - start >= STAT_LINE_MAX)
                        return -EINVAL; /* no cpu line is this long */
                memmove(buf, buf + start, have - start);
                have -= start;
        }
}

int thread_load_cpu_read(const char *proc_root, const struct topology *t, struct cpu_load *cl, uint64_t now_ns,
                         double *busy_by_node) {
        _cleanup_free_ struct cpu_ticks *ticks = NULL;
        bool window;
        int r;

        if (!proc_root || !t || !cl || !busy_by_node)
                return -EINVAL;
        for (unsigned i = 0; i < t->n_nodes; i++)
                busy_by_node[i] = 0;
        ticks = calloc(t->n_cpus ? t->n_cpus : 1, sizeof(*ticks));
        if (!ticks)
                return -ENOMEM;
        r = read_cpu_ticks(proc_root, ticks, t->n_cpus);
        if (r < 0)
                return r;
        if (cl->n_cpus != t->n_cpus) {
                /* A new topology (hotplug, reload): its CPUs start a new baseline. */
                thread_load_cpu_done(cl);
                cl->busy = calloc(t->n_cpus ? t->n_cpus : 1, sizeof(*cl->busy));
                cl->total = calloc(t->n_cpus ? t->n_cpus : 1, sizeof(*cl->total));
                cl->frac = calloc(t->n_cpus ? t->n_cpus : 1, sizeof(*cl->frac));
                if (!cl->busy || !cl->total || !cl->frac) {
                        thread_load_cpu_done(cl);
                        return -ENOMEM;
                }
                cl->n_cpus = t->n_cpus;
        }
        window = cl->read_ns != 0 && now_ns > cl->read_ns;
        for (unsigned c = 0; c < t->n_cpus; c++) {
                uint64_t db, dt;
                int node, idx;

                /* A CPU seen in one read only (hotplug), or counters that went back
                 * (a CPU brought back): no window for it. */
                cl->frac[c] = -1;
                if (window && cl->total[c] && ticks[c].total > cl->total[c] && ticks[c].busy >= cl->busy[c]) {
                        db = ticks[c].busy - cl->busy[c];
                        dt = ticks[c].total - cl->total[c];
                        cl->frac[c] = db >= dt ? 1.0 : (double) db / (double) dt;
                        node = topology_cpu_node(t, c);
                        idx = node >= 0 ? topology_node_index(t, (unsigned) node) : -1;
                        if (idx >= 0)
                                busy_by_node[idx] += cl->frac[c];
                }
                cl->busy[c] = ticks[c].busy;
                cl->total[c] = ticks[c].total;
        }
        cl->window_ns = window ? now_ns - cl->read_ns : 0;
        cl->read_ns = now_ns;
        return window ? 1 : 0;
}

void thread_load_cpu_done(struct cpu_load *cl) {
        if (!cl)
                return;
        free(cl->busy);
        free(cl->total);
        free(cl->frac);
        *cl = (struct cpu_load) {};
}
