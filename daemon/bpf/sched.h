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

/* The counter key: CPU time of process tgid on node. */
struct sched_key {
        __u32 tgid;
        __u32 node;
};

/* Per CPU: when the current task was switched in (ns, bpf_ktime_get_ns). */
struct sched_start {
        __u64 ts;
};

/* Per CPU event counts, for the loader's debug line and the benchmark. */
enum sched_stat {
        SCHED_STAT_SWITCHES,       /* sched_switch calls */
        SCHED_STAT_COUNTED,        /* switch-outs of a watched task that were counted */
        SCHED_STAT_NO_NODE,        /* CPU missing from cpu_node (hotplugged later) */
        SCHED_STAT_FULL,           /* counter map full: time lost */
        _SCHED_STAT_MAX,
};
