/* SPDX-License-Identifier: GPL-2.0-or-later */
/* sample, part 2: where a process's threads ran. A source gives, per process, the CPU
 * time its threads spent on each node since the previous call. The /proc source
 * (here) reads each thread's schedstat (run time, ns) and the CPU it last ran on
 * (stat field 39), and charges the run-time delta to that CPU's node: exact for
 * pinned threads, an approximation for threads that wander within a window. The BPF
 * scheduler source plugs in behind the same interface. */
#pragma once
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>
#include "topology.h"

struct thread_runtime {
        pid_t tid;
        uint64_t runtime_ns;
};

/* Per-process state a source keeps between calls (owned by the caller's record). */
struct node_time_state {
        struct thread_runtime *threads;
        size_t n_threads;
        bool primed;                  /* a baseline exists */
        uint64_t *node_ns;            /* BPF source: counter totals at the last call, */
        unsigned n_node_ns;           /* by topology node index */
};

struct node_time_source {
        const char *name;             /* "proc", "bpf" */
        /* Adds the CPU time (ns) of pid's threads since the last call to ns_by_node
         * (by topology index). Returns 1 if a delta was produced, 0 on the first call
         * (baseline only), -ESRCH if the process is gone, or another -errno. */
        int (*sample)(const struct node_time_source *s, const char *proc_root, pid_t pid,
                      const struct topology *t, struct node_time_state *st, uint64_t *ns_by_node);
        /* Optional (NULL: nothing kept per process). A source that keeps per-process
         * state outside node_time_state (the BPF source watches a tgid from its first
         * sample() on) drops it: the caller has forgotten pid. */
        void (*unwatch)(const struct node_time_source *s, pid_t pid);
        /* Optional (NULL: the source cannot tell when threads change node, like the
         * /proc source). A descriptor that becomes readable when a thread of a watched
         * process has started running on another node; events_consume() then calls cb
         * once per such event (tgid, the node it moved to) and returns how many, or
         * -errno. */
        int (*events_fd)(const struct node_time_source *s);
        int (*events_consume)(const struct node_time_source *s, void (*cb)(void *userdata, pid_t tgid, int node),
                              void *userdata);
        /* Optional (NULL: nothing runs in the kernel, like the /proc source). Attaches
         * (on) or detaches (off) what the source runs in the kernel: the manager turns
         * it on when it watches its first process and off when it forgets its last, so
         * that a daemon with nothing to watch costs no CPU anything. Returns 0 or -errno. */
        int (*arm)(const struct node_time_source *s, bool on);
        /* Optional (NULL: static, like the /proc source): releases the source. */
        void (*free)(const struct node_time_source *s);
};

/* The nodes (ids) some thread of pid is confined to: every CPU its affinity allows
 * (Cpus_allowed_list of /proc/PID/task/TID/status) on that one node. Such a thread
 * runs nowhere else, so the memory it worked on there is likely its own even while it
 * pauses. Reads at most max_threads threads (the lowest ids): a process with more
 * may show fewer nodes than it has, which keeps less, never more. -ESRCH: gone. */
int node_time_confined_nodes(const char *proc_root, pid_t pid, const struct topology *t, size_t max_threads,
                             nb_nodemask *ret);

static inline void node_time_source_unwatch(const struct node_time_source *s, pid_t pid) {
        if (s && s->unwatch)
                s->unwatch(s, pid);
}

static inline int node_time_source_arm(const struct node_time_source *s, bool on) {
        return s && s->arm ? s->arm(s, on) : 0;
}

static inline void node_time_source_free(const struct node_time_source *s) {
        if (s && s->free)
                s->free(s);
}

extern const struct node_time_source node_time_source_proc;

/* A first estimate for a process seen for the first time, when a source has only a
 * baseline: each thread's whole run time so far, charged to the node of the CPU it is
 * on now ("memory follows where the threads are now"). Saves a whole tick before the
 * first decision; the hysteresis still applies. Returns 0 or -errno. */
int node_time_first_estimate(const char *proc_root, pid_t pid, const struct topology *t, uint64_t *ns_by_node);

void node_time_state_done(struct node_time_state *st);

/* schedstat: "<run ns> <wait ns> <timeslices>\n"; returns the run time. */
int node_time_schedstat_parse(const char *buf, size_t len, uint64_t *ret_runtime_ns);
