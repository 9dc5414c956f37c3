/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Types shared by sched.bpf.c and its loader (sched-loader.c). Kept free of libc and
 * kernel headers so that both sides can include it: the BPF side after vmlinux.h, the
 * user side after <stdint.h>. */
#pragma once

/* Processes watched at once (the filter map's size). The counter map holds one entry
 * per (watched process, node it ran on); its values are per CPU, so its memory is
 * SCHED_MAX_WATCHED x nodes x possible CPUs x 8 bytes (1,024 x 2 x 104 x 8 = 1.7 MB on
 * a 2-socket, 104-CPU machine). Past this the loader falls back to /proc for the
 * extra processes. */
#define SCHED_MAX_WATCHED 1024

/* Threads whose last node is remembered (an LRU map: the least recently switched
 * threads are forgotten first, and a forgotten thread's next switch only records its
 * node again). 16 bytes an entry plus overhead: about 1 MB. */
#define SCHED_MAX_THREADS 32768

/* At most one node-change event per watched process per this many ns: a process
 * whose threads wander between nodes cannot flood the ring buffer. */
#define SCHED_EVENT_GAP_NS 100000000ull

/* The filter map's value: a watched process. */
struct sched_watch {
        __u64 last_event_ns;       /* when its last node-change event was sent */
};

/* Sent through the ring buffer when a thread of a watched process is switched in on
 * a node other than the one it last ran on. */
struct sched_event {
        __u32 tgid;
        __u32 tid;
        __u32 node;                /* the new node */
        __u32 from;                /* the node it ran on before */
};

/* The counter key: CPU time of process tgid on node. */
struct sched_key {
        __u32 tgid;
        __u32 node;
};

/* Per CPU: when the current task was switched in (ns, bpf_ktime_get_ns). */
struct sched_start {
        __u64 ts;
        __u32 tgid;                /* of the task switched in, if watched then; else 0 */
        __u32 node;                /* the CPU's node (valid when tgid != 0) */
};

/* Per CPU event counts, for the loader's debug line and the benchmark. */
enum sched_stat {
        SCHED_STAT_SWITCHES,       /* sched_switch calls */
        SCHED_STAT_COUNTED,        /* switch-outs of a watched task that were counted */
        SCHED_STAT_NO_NODE,        /* CPU missing from cpu_node (hotplugged later) */
        SCHED_STAT_FULL,           /* counter map full: time lost */
        SCHED_STAT_EVENTS,         /* node-change events sent */
        SCHED_STAT_EVENTS_LOST,    /* ... that did not fit in the ring buffer */
        _SCHED_STAT_MAX,
};
