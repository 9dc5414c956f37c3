// SPDX-License-Identifier: GPL-2.0-or-later
/* The libbpf-tools lifecycle for sched.bpf.c: open the skeleton, size the maps and set
 * rodata, load (the verifier, and CO-RE relocation against the running kernel's BTF),
 * fill cpu_node. Attached only while the manager watches a process (bpf_arm): loaded
 * at start, so that the daemon says then whether BPF works, but attached to nothing
 * until then. Then, as a placement source, read the counters per scan. */
#include <errno.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <linux/types.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include "clock.h"
#include "cleanup.h"
#include "log.h"
#include "sched.h"
#include "proc.h"
#include "sched-loader.h"
#include "sched.skel.h"

struct bpf_source {
        struct node_time_source src;   /* first: the caller holds &src */
        struct sched_bpf *skel;
        const char *attach_point;
        unsigned n_cpus;               /* possible CPUs: values per percpu map entry */
        uint64_t *values;              /* n_cpus scratch values for one percpu lookup */
        unsigned *node_ids;            /* the topology's node ids, by index */
        unsigned n_nodes;
        int fd_watched, fd_runtime, fd_start;
        struct sched_start *starts;    /* n_cpus scratch values for the start map */
        struct ring_buffer *events;    /* node-change events */
        void (*event_cb)(void *userdata, pid_t tgid, int node);
        void *event_userdata;          /* both set for the length of one consume call */
};

DEFINE_TRIVIAL_CLEANUP_FUNC(struct sched_bpf *, sched_bpf__destroy);

static struct bpf_source *of(const struct node_time_source *s) {
        /* Allocated by sched_loader_new(), so not really const; the interface is const
         * because the /proc source is a static constant. */
        return (struct bpf_source *) (uintptr_t) s;
}

/* libbpf's messages (verifier logs, CO-RE misses) go to debug only: the caller logs
 * the one line an operator needs. */
static int libbpf_print(enum libbpf_print_level level, const char *fmt, va_list ap) {
        char buf[1024];
        size_t n;

        if (level == LIBBPF_DEBUG || log_get_max_level() < LOG_LVL_DEBUG)
                return 0;
        vsnprintf(buf, sizeof(buf), fmt, ap);
        n = strlen(buf);
        while (n && buf[n - 1] == '\n')
                buf[--n] = 0;
        log_debug("libbpf: %s", buf);
        return 0;
}

/* Sums the per-CPU values of tgid's counter on node; 0 when there is none yet. */
static int read_counter(struct bpf_source *b, __u32 tgid, unsigned node, uint64_t *ret) {
        struct sched_key key = { .tgid = tgid, .node = node };
        uint64_t sum = 0;

        if (bpf_map_lookup_elem(b->fd_runtime, &key, b->values) < 0) {
                if (errno != ENOENT)
                        return -errno;
                *ret = 0;
                return 0;
        }
        for (unsigned c = 0; c < b->n_cpus; c++)
                sum += b->values[c];
        *ret = sum;
        return 0;
}

/* The counters (slices that ended) plus the slices of tgid's threads running right
 * now, by node index. Their sum only grows: when a running slice ends, the program
 * adds all of it to the counter, which the running part had already shown. Without
 * the running part, a thread alone on its CPU (pinned, never preempted) would show no
 * CPU time at all until it blocked. */
static int read_counters(struct bpf_source *b, __u32 tgid, uint64_t *ret_by_index) {
        uint64_t now;
        __u32 zero = 0;

        for (unsigned i = 0; i < b->n_nodes; i++) {
                int r = read_counter(b, tgid, b->node_ids[i], &ret_by_index[i]);
                if (r < 0)
                        return r;
        }
        /* bpf_ktime_get_ns() is CLOCK_MONOTONIC. */
        now = clock_now_ns(CLOCK_MONOTONIC);
        if (bpf_map_lookup_elem(b->fd_start, &zero, b->starts) < 0)
                return 0; /* the running slices are a refinement: count them next time */
        for (unsigned c = 0; c < b->n_cpus; c++) {
                const struct sched_start *s = &b->starts[c];
                if (s->tgid != tgid || s->ts == 0 || s->ts > now)
                        continue;
                for (unsigned i = 0; i < b->n_nodes; i++)
                        if (b->node_ids[i] == s->node) {
                                ret_by_index[i] += now - s->ts;
                                break;
                        }
        }
        return 0;
}

/* A process watched from now on: each thread's last node, from the CPU /proc says it
 * last ran on, so that its first switch-in on another node already counts as a move.
 * Without it, a thread busy on one CPU since before the watch began (no switch-in
 * seen) would move to another node without an event. Best effort: NOEXIST keeps
 * what the program has seen itself. */
static void seed_last_nodes(struct bpf_source *b, const char *proc_root, pid_t pid, const struct topology *t) {
        _cleanup_free_ pid_t *tids = NULL;
        size_t n = 0;
        int fd = bpf_map__fd(b->skel->maps.last_node);

        if (proc_list_tasks(proc_root, pid, &tids, &n) < 0)
                return;
        for (size_t i = 0; i < n; i++) {
                struct proc_stat st;
                int node;
                __u32 tid = (__u32) tids[i], val;

                if (proc_read_task_stat(proc_root, pid, tids[i], &st) < 0 || st.processor < 0)
                        continue;
                node = topology_cpu_node(t, (unsigned) st.processor);
                if (node < 0)
                        continue;
                val = (__u32) node;
                (void) bpf_map_update_elem(fd, &tid, &val, BPF_NOEXIST);
        }
}

static int bpf_sample(const struct node_time_source *s, const char *proc_root, pid_t pid,
                      const struct topology *t, struct node_time_state *st, uint64_t *ns_by_node) {
        struct bpf_source *b = of(s);
        _cleanup_free_ uint64_t *now = NULL;
        __u32 tgid = (__u32) pid;
        struct sched_watch one = {};
        bool baseline;
        int r;

        if (t->n_nodes != b->n_nodes)
                return -EINVAL; /* not the topology we were loaded with */

        /* Watch from the first call on. NOEXIST tells us whether it was watched: a
         * tgid that was not (first sight, or dropped by unwatch() for a previous
         * process with this pid) has no trustworthy baseline yet. */
        if (bpf_map_update_elem(b->fd_watched, &tgid, &one, BPF_NOEXIST) == 0) {
                baseline = true;
                seed_last_nodes(b, proc_root, pid, t);
        }
        else if (errno == EEXIST)
                baseline = !st->node_ns;
        else if (errno == E2BIG || errno == ENOSPC) {
                /* SCHED_MAX_WATCHED processes are watched already: this one is sampled
                 * from /proc, with its own baseline. */
                if (st->node_ns) {
                        free(st->node_ns);
                        st->node_ns = NULL;
                        st->n_node_ns = 0;
                        st->primed = false;
                }
                return node_time_source_proc.sample(&node_time_source_proc, proc_root, pid, t, st, ns_by_node);
        } else
                return -errno;

        now = calloc(b->n_nodes ? b->n_nodes : 1, sizeof(*now));
        if (!now)
                return -ENOMEM;
        r = read_counters(b, tgid, now);
        if (r < 0)
                return r;
        if (!baseline && st->n_node_ns == b->n_nodes)
                for (unsigned i = 0; i < b->n_nodes; i++)
                        /* A counter below its baseline was deleted and recreated: all of
                         * it is new. */
                        ns_by_node[i] += now[i] >= st->node_ns[i] ? now[i] - st->node_ns[i] : now[i];
        else
                baseline = true;
        free(st->node_ns);
        st->node_ns = TAKE_PTR(now);
        st->n_node_ns = b->n_nodes;
        st->primed = true;
        return baseline ? 0 : 1;
}

static int on_ring_event(void *ctx, void *data, size_t size) {
        struct bpf_source *b = ctx;
        const struct sched_event *ev = data;

        if (size < sizeof(*ev) || !b->event_cb)
                return 0;
        b->event_cb(b->event_userdata, (pid_t) ev->tgid, (int) ev->node);
        return 0;
}

static int bpf_events_fd(const struct node_time_source *s) {
        return ring_buffer__epoll_fd(of(s)->events);
}

static int bpf_events_consume(const struct node_time_source *s, void (*cb)(void *userdata, pid_t tgid, int node),
                              void *userdata) {
        struct bpf_source *b = of(s);
        int r;

        b->event_cb = cb;
        b->event_userdata = userdata;
        r = ring_buffer__consume(b->events);
        b->event_cb = NULL;
        b->event_userdata = NULL;
        return r;
}

static void bpf_unwatch(const struct node_time_source *s, pid_t pid) {
        struct bpf_source *b = of(s);
        __u32 tgid = (__u32) pid;

        /* The filter first, so that the program stops adding to the counters. */
        (void) bpf_map_delete_elem(b->fd_watched, &tgid);
        for (unsigned i = 0; i < b->n_nodes; i++) {
                struct sched_key key = { .tgid = tgid, .node = b->node_ids[i] };
                (void) bpf_map_delete_elem(b->fd_runtime, &key);
        }
}

/* Attach (on) or detach (off) the sched_switch program. Before attaching, each CPU's
 * start stamp is cleared: one left from the previous attachment would charge the whole
 * time since to the process that ran then. */
static int bpf_arm(const struct node_time_source *s, bool on) {
        struct bpf_source *b = of(s);
        __u32 zero = 0;

        if (!on) {
                sched_bpf__detach(b->skel);
                return 0;
        }
        memset(b->starts, 0, b->n_cpus * sizeof(*b->starts));
        if (bpf_map_update_elem(b->fd_start, &zero, b->starts, BPF_ANY) < 0)
                return -errno;
        return sched_bpf__attach(b->skel);
}

static void bpf_free(const struct node_time_source *s) {
        struct bpf_source *b = of(s);

        if (!b)
                return;
        ring_buffer__free(b->events);
        sched_bpf__destroy(b->skel);
        free(b->starts);
        free(b->values);
        free(b->node_ids);
        free(b);
}

/* One attempt with one attach point: open, configure and load; not attached (bpf_arm). */
static int load(const struct topology *t, bool count_stats, unsigned n_cpus, bool tp_btf,
                       struct sched_bpf **ret, const char **ret_why) {
        _cleanup_(sched_bpf__destroyp) struct sched_bpf *skel = NULL;
        unsigned n_cpu_nodes = 0;
        int r;

        skel = sched_bpf__open();
        if (!skel) {
                *ret_why = "cannot open the BPF object";
                return -errno;
        }
        /* Exactly one of the two programs is loaded. */
        r = bpf_program__set_autoload(tp_btf ? skel->progs.sched_switch_raw : skel->progs.sched_switch_btf, false);
        if (r < 0) {
                *ret_why = "cannot configure the BPF object";
                return r;
        }
        for (unsigned i = 0; i < t->n_nodes; i++)
                n_cpu_nodes += t->nodes[i].has_cpus;
        if (bpf_map__set_max_entries(skel->maps.cpu_node, n_cpus) < 0 ||
            bpf_map__set_max_entries(skel->maps.runtime, SCHED_MAX_WATCHED * (n_cpu_nodes ? n_cpu_nodes : 1)) < 0) {
                *ret_why = "cannot size the BPF maps";
                return -EINVAL;
        }
        skel->rodata->nr_cpus = n_cpus;
        skel->rodata->count_stats = count_stats;

        r = sched_bpf__load(skel);
        if (r < 0) {
                *ret_why = "cannot load the BPF program (libbpf says why at debug level)";
                return r;
        }
        for (unsigned c = 0; c < t->n_cpus && c < n_cpus; c++) {
                int node = topology_cpu_node(t, c);
                __u32 key = c, val;
                if (node < 0)
                        continue; /* offline at start: its switches are not counted */
                val = (__u32) node;
                if (bpf_map_update_elem(bpf_map__fd(skel->maps.cpu_node), &key, &val, BPF_ANY) < 0) {
                        *ret_why = "cannot fill the CPU to node map";
                        return -errno;
                }
        }
        *ret = TAKE_PTR(skel);
        return 0;
}

int sched_loader_new(const struct topology *t, bool count_stats, const struct node_time_source **ret,
                     const char **ret_why) {
        _cleanup_(sched_bpf__destroyp) struct sched_bpf *skel = NULL;
        struct bpf_source *b;
        const char *why2 = NULL;
        int n_cpus, r, r2;

        libbpf_set_print(libbpf_print);
        /* CO-RE needs the running kernel's BTF: say so rather than let libbpf fail. */
        if (access("/sys/kernel/btf/vmlinux", R_OK) < 0) {
                *ret_why = "the kernel has no BTF (/sys/kernel/btf/vmlinux, CONFIG_DEBUG_INFO_BTF)";
                return -errno;
        }
        n_cpus = libbpf_num_possible_cpus();
        if (n_cpus <= 0) {
                *ret_why = "cannot read the possible CPUs";
                return n_cpus < 0 ? n_cpus : -EINVAL;
        }

        /* tp_btf (5.5+) first: typed arguments, no probe reads. raw_tp for kernels
         * that have BTF but not tp_btf. If both fail, the tp_btf error is the one
         * that matters on any kernel this daemon targets. */
        r = load(t, count_stats, (unsigned) n_cpus, true, &skel, ret_why);
        if (r < 0) {
                r2 = load(t, count_stats, (unsigned) n_cpus, false, &skel, &why2);
                if (r2 < 0)
                        return r;
        }

        b = calloc(1, sizeof(*b));
        if (!b) {
                *ret_why = "out of memory";
                return -ENOMEM;
        }
        b->values = calloc((size_t) n_cpus, sizeof(*b->values));
        b->starts = calloc((size_t) n_cpus, sizeof(*b->starts));
        b->node_ids = calloc(t->n_nodes ? t->n_nodes : 1, sizeof(*b->node_ids));
        if (!b->values || !b->starts || !b->node_ids) {
                free(b->starts);
                free(b->values);
                free(b->node_ids);
                free(b);
                *ret_why = "out of memory";
                return -ENOMEM;
        }
        for (unsigned i = 0; i < t->n_nodes; i++)
                b->node_ids[i] = t->nodes[i].id;
        b->n_nodes = t->n_nodes;
        b->n_cpus = (unsigned) n_cpus;
        b->attach_point = r == 0 ? "tp_btf/sched_switch" : "raw_tp/sched_switch";
        b->fd_watched = bpf_map__fd(skel->maps.watched);
        b->fd_runtime = bpf_map__fd(skel->maps.runtime);
        b->fd_start = bpf_map__fd(skel->maps.start);
        b->events = ring_buffer__new(bpf_map__fd(skel->maps.events), on_ring_event, b, NULL);
        if (!b->events) {
                r = -errno;
                free(b->starts);
                free(b->values);
                free(b->node_ids);
                free(b);
                *ret_why = "cannot set up the node-change ring buffer";
                return r;
        }
        b->skel = TAKE_PTR(skel);
        b->src = (struct node_time_source) {
                .name = "bpf",
                .sample = bpf_sample,
                .unwatch = bpf_unwatch,
                .arm = bpf_arm,
                .events_fd = bpf_events_fd,
                .events_consume = bpf_events_consume,
                .free = bpf_free,
        };
        *ret = &b->src;
        return 0;
}

const char *sched_loader_attach_point(const struct node_time_source *s) {
        return of(s)->attach_point;
}

int sched_loader_prog_id(const struct node_time_source *s) {
        struct bpf_source *b = of(s);
        struct bpf_prog_info info = {};
        __u32 len = sizeof(info);
        struct bpf_program *p = strcmp(b->attach_point, "tp_btf/sched_switch") == 0 ? b->skel->progs.sched_switch_btf
                                                                                    : b->skel->progs.sched_switch_raw;

        if (bpf_obj_get_info_by_fd(bpf_program__fd(p), &info, &len) < 0)
                return -1;
        return (int) info.id;
}
