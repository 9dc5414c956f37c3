/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "parse.h"
#include "node-time.h"
#include "proc.h"

int node_time_schedstat_parse(const char *buf, size_t len, uint64_t *ret_runtime_ns) {
        const char *sp = memchr(buf, ' ', len);
        if (!sp)
                return -EINVAL;
        return parse_u64_n(buf, (size_t) (sp - buf), 0, UINT64_MAX, ret_runtime_ns);
}

static const struct thread_runtime *find_thread(const struct node_time_state *st, pid_t tid) {
        /* Threads are listed sorted by tid: binary search. */
        size_t lo = 0, hi = st->n_threads;
        while (lo < hi) {
                size_t mid = lo + (hi - lo) / 2;
                if (st->threads[mid].tid == tid)
                        return &st->threads[mid];
                if (st->threads[mid].tid < tid)
                        lo = mid + 1;
                else
                        hi = mid;
        }
        return NULL;
}

/* charge_all: charge each thread's whole run time (no baseline needed). */
static int proc_sample_charge(const char *proc_root, pid_t pid, const struct topology *t,
                              struct node_time_state *st, uint64_t *ns_by_node, bool charge_all) {
        _cleanup_free_ pid_t *tids = NULL;
        _cleanup_free_ struct thread_runtime *now = NULL;
        size_t n_tids = 0, n_now = 0;
        bool had_baseline = st->primed || charge_all;
        int r;

        r = proc_list_tasks(proc_root, pid, &tids, &n_tids);
        if (r < 0)
                return r == -ENOENT ? -ESRCH : r;
        now = calloc(n_tids ? n_tids : 1, sizeof(*now));
        if (!now)
                return -ENOMEM;

        for (size_t i = 0; i < n_tids; i++) {
                char path[4096], buf[128];
                struct proc_stat ps;
                const struct thread_runtime *prev;
                uint64_t rt;
                ssize_t n;
                int fd, node, idx;

                snprintf(path, sizeof(path), "%s/%d/task/%d/schedstat", proc_root, (int) pid, (int) tids[i]);
                fd = open(path, O_RDONLY | O_CLOEXEC);
                if (fd < 0)
                        continue; /* the thread exited */
                n = read(fd, buf, sizeof(buf) - 1);
                close(fd);
                if (n <= 0 || node_time_schedstat_parse(buf, (size_t) n, &rt) < 0)
                        continue;
                if (proc_read_task_stat(proc_root, pid, tids[i], &ps) < 0)
                        continue;

                now[n_now++] = (struct thread_runtime) { tids[i], rt };
                if (!had_baseline)
                        continue;
                prev = find_thread(st, tids[i]);
                /* A thread born in this window: all of its run time is new. */
                if (prev && prev->runtime_ns > rt)
                        continue; /* tid reused by a new thread: no delta this time */
                node = ps.processor >= 0 ? topology_cpu_node(t, (unsigned) ps.processor) : -1;
                idx = node >= 0 ? topology_node_index(t, (unsigned) node) : -1;
                if (idx >= 0)
                        ns_by_node[idx] += rt - (prev ? prev->runtime_ns : 0);
        }

        free(st->threads);
        st->threads = TAKE_PTR(now);
        st->n_threads = n_now;
        st->primed = true;
        return had_baseline ? 1 : 0;
}

int node_time_first_estimate(const char *proc_root, pid_t pid, const struct topology *t, uint64_t *ns_by_node) {
        struct node_time_state st = {};
        int r;

        /* The /proc source's own baseline read gives every thread's run time so far;
         * charge it to the node each thread is on now. */
        r = proc_sample_charge(proc_root, pid, t, &st, ns_by_node, true);
        node_time_state_done(&st);
        return r < 0 ? r : 0;
}

/* The one node all of cpus lie on (CPUs the topology does not know are ignored), or -1:
 * none, or more than one. */
static int confined_node(const struct topology *t, const nb_cpumask *cpus) {
        int node = -1;

        CPUMASK_FOREACH(c, cpus) {
                int n = topology_cpu_node(t, (unsigned) c);

                if (n < 0)
                        continue;
                if (node >= 0 && n != node)
                        return -1;
                node = n;
        }
        return node;
}

int node_time_confined_nodes(const char *proc_root, pid_t pid, const struct topology *t, size_t max_threads,
                             nb_nodemask *ret) {
        _cleanup_free_ pid_t *tids = NULL;
        size_t n_tids = 0;
        int r;

        nodemask_zero(ret);
        r = proc_list_tasks(proc_root, pid, &tids, &n_tids);
        if (r < 0)
                return r == -ENOENT ? -ESRCH : r;
        for (size_t i = 0; i < n_tids && i < max_threads; i++) {
                struct proc_status st;
                int node;

                if (proc_read_task_status(proc_root, pid, tids[i], &st) < 0 || !st.has_cpus_allowed)
                        continue; /* the thread exited, or the line is missing: nothing said */
                node = confined_node(t, &st.cpus_allowed);
                if (node >= 0)
                        nodemask_set(ret, (unsigned) node);
        }
        return 0;
}

static int proc_sample(const struct node_time_source *s, const char *proc_root, pid_t pid,
                       const struct topology *t, struct node_time_state *st, uint64_t *ns_by_node) {
        return proc_sample_charge(proc_root, pid, t, st, ns_by_node, false);
}

const struct node_time_source node_time_source_proc = {
        .name = "proc",
        .sample = proc_sample,
};

void node_time_state_done(struct node_time_state *st) {
        if (!st)
                return;
        free(st->threads);
        free(st->node_ns);
        *st = (struct node_time_state) {};
}
