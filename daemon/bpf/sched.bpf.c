// SPDX-License-Identifier: GPL-2.0-or-later
/* Where the watched processes' threads run: on every context switch, the run time of
 * the task switched out is added to a per-(tgid, node) counter, if its tgid is in the
 * watched map. The daemon reads the counters each scan and takes the delta. A watched
 * thread that is switched in on a node other than its last one also sends an event
 * through a ring buffer, so that the daemon reacts to the move at once.
 *
 * Cost of a switch between two unwatched tasks: one per-CPU array access (the start
 * stamp, which says the ending slice was not watched) and one hash lookup on next's
 * tgid; no clock read, no write. And with no process watched at all the program is not
 * attached (sched-loader.c). Counters are per CPU, so CPUs never contend for a cache
 * line (no atomics). */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include <bpf/bpf_core_read.h>
#include "sched.h"

char LICENSE[] SEC("license") = "GPL";

/* Set by the loader before load (rodata). */
const volatile __u32 nr_cpus = 1;          /* possible CPUs: cpu_node's size */
const volatile bool count_stats = false;   /* fill the stats map (debug, benchmark) */

/* CPU -> node, filled from the topology by the loader after load. */
struct {
        __uint(type, BPF_MAP_TYPE_ARRAY);
        __uint(max_entries, 1);             /* resized to nr_cpus by the loader */
        __type(key, __u32);
        __type(value, __u32);
} cpu_node SEC(".maps");

/* The processes being watched: tgid -> struct sched_watch. Entries are added and
 * removed by the daemon; the program only updates last_event_ns. */
struct {
        __uint(type, BPF_MAP_TYPE_HASH);
        __uint(max_entries, SCHED_MAX_WATCHED);
        __type(key, __u32);
        __type(value, struct sched_watch);
} watched SEC(".maps");

/* tid -> the node a watched thread last ran on. */
struct {
        __uint(type, BPF_MAP_TYPE_LRU_HASH);
        __uint(max_entries, SCHED_MAX_THREADS);
        __type(key, __u32);
        __type(value, __u32);
} last_node SEC(".maps");

/* Node-change events (struct sched_event) to the daemon: it decides for the process
 * again soon, instead of at its next scan, which for a settled process may be tens
 * of seconds away. */
struct {
        __uint(type, BPF_MAP_TYPE_RINGBUF);
        __uint(max_entries, 64 * 1024);
} events SEC(".maps");

/* Run time (ns) per (tgid, node), one value per CPU. */
struct {
        __uint(type, BPF_MAP_TYPE_PERCPU_HASH);
        __uint(max_entries, SCHED_MAX_WATCHED); /* x nodes, set by the loader */
        __type(key, struct sched_key);
        __type(value, __u64);
} runtime SEC(".maps");

/* When the current task of this CPU was switched in, and its tgid if watched. */
struct {
        __uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
        __uint(max_entries, 1);
        __type(key, __u32);
        __type(value, struct sched_start);
} start SEC(".maps");

struct {
        __uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
        __uint(max_entries, _SCHED_STAT_MAX);
        __type(key, __u32);
        __type(value, __u64);
} stats SEC(".maps");

static __always_inline void stat_inc(__u32 which) {
        __u64 *v;

        if (!count_stats)
                return;
        v = bpf_map_lookup_elem(&stats, &which);
        if (v)
                *v += 1;
}

/* A watched thread is switched in on node: if it last ran on another one, tell the
 * daemon (at most once per SCHED_EVENT_GAP_NS per process). */
static __always_inline void note_node(struct sched_watch *w, __u32 tgid, __u32 tid, __u32 node, __u64 now) {
        struct sched_event ev;
        __u32 *last = bpf_map_lookup_elem(&last_node, &tid);

        if (!last) {
                /* First sight of this thread: nothing to compare with yet. */
                bpf_map_update_elem(&last_node, &tid, &node, BPF_ANY);
                return;
        }
        if (*last == node)
                return;
        ev.from = *last;
        *last = node;
        /* Racy between CPUs, harmlessly: at worst two events in one gap. */
        if (now - w->last_event_ns < SCHED_EVENT_GAP_NS)
                return;
        w->last_event_ns = now;
        ev.tgid = tgid;
        ev.tid = tid;
        ev.node = node;
        if (bpf_ringbuf_output(&events, &ev, sizeof(ev), 0) == 0)
                stat_inc(SCHED_STAT_EVENTS);
        else
                stat_inc(SCHED_STAT_EVENTS_LOST);
}

/* prev's slice ends, next's begins. The slice is charged to the tgid recorded when it
 * began (the task's tgid cannot change while it runs), so an unwatched switch costs one
 * hash lookup, on next's tgid. The daemon adds the slices still running (start's ts and
 * tgid, per CPU) to the counters when it samples, so a thread that never leaves its CPU
 * is counted all the same. */
static __always_inline int on_switch(__u32 next_tgid, __u32 next_tid) {
        struct sched_key key = {};
        struct sched_watch *w;
        struct sched_start *s;
        __u32 zero = 0, cpu, *node;
        __u64 now, then, delta, *v;
        __u32 tgid;

        s = bpf_map_lookup_elem(&start, &zero);
        if (!s)
                return 0;
        /* The fast path, for a CPU that runs nothing watched: the slice that ends was
         * not watched (its tgid was not recorded) and the one that begins is not
         * either. Nothing to charge and nothing to stamp: the stamp is only read with
         * a watched tgid beside it (here and by the loader). */
        w = next_tgid ? bpf_map_lookup_elem(&watched, &next_tgid) : NULL;
        if (!s->tgid && !w)
                return 0;
        now = bpf_ktime_get_ns();
        then = s->ts;
        tgid = s->tgid;
        s->ts = now;
        s->tgid = 0;

        cpu = bpf_get_smp_processor_id();
        node = cpu < nr_cpus ? bpf_map_lookup_elem(&cpu_node, &cpu) : NULL;

        /* The slice that began at then: charge it if its process is still watched
         * (the daemon may have dropped it meanwhile: do not recreate its counter).
         * then == 0: the first switch on this CPU since we attached. Between two
         * watched slices the unwatched ones in the middle left ts alone (fast path):
         * harmless, since a stamp is only used with the tgid recorded beside it,
         * which the first of them cleared. */
        if (then && tgid && node && bpf_map_lookup_elem(&watched, &tgid)) {
                key.tgid = tgid;
                key.node = *node;
                delta = now - then;
                v = bpf_map_lookup_elem(&runtime, &key);
                if (v) {
                        *v += delta;
                        stat_inc(SCHED_STAT_COUNTED);
                } else if (bpf_map_update_elem(&runtime, &key, &delta, BPF_NOEXIST) == 0) {
                        stat_inc(SCHED_STAT_COUNTED);
                } else {
                        /* Another CPU created the entry between our lookup and update
                         * (our own slot in it is zero), or the map is full. */
                        v = bpf_map_lookup_elem(&runtime, &key);
                        if (v) {
                                *v += delta;
                                stat_inc(SCHED_STAT_COUNTED);
                        } else
                                stat_inc(SCHED_STAT_FULL);
                }
        }

        /* The slice that begins (w looked up above; tgid 0 is the idle task). */
        if (!w)
                return 0;
        if (!node) {
                stat_inc(SCHED_STAT_NO_NODE);
                return 0;
        }
        s->tgid = next_tgid;
        s->node = *node;
        note_node(w, next_tgid, next_tid, *node, now);
        return 0;
}

/* The kernel-version differences live here and only here. tp_btf (5.5+) hands us
 * BTF-typed pointers we may dereference directly; raw_tp (4.17+) gives the same
 * arguments untyped, read through bpf_probe_read_kernel. The loader picks one.
 * task_struct's pid and tgid have not moved or changed type in any kernel with BTF,
 * so no bpf_core_field_exists() branch is needed for them; the relocation alone
 * adapts the offset to the running kernel. */
SEC("tp_btf/sched_switch")
int BPF_PROG(sched_switch_btf, bool preempt, struct task_struct *prev, struct task_struct *next) {
        return on_switch((__u32) next->tgid, (__u32) next->pid);
}

SEC("raw_tp/sched_switch")
int BPF_PROG(sched_switch_raw, bool preempt, struct task_struct *prev, struct task_struct *next) {
        return on_switch((__u32) BPF_CORE_READ(next, tgid), (__u32) BPF_CORE_READ(next, pid));
}
