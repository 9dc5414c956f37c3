/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Types shared by memsample.bpf.c and its loader (memsample-loader.c). */
#pragma once

/* Distinct (tgid, node, page) entries kept at once: an LRU map, so a burst of samples
 * over more pages evicts the least recently sampled ones instead of failing. 32 bytes
 * a key and value, plus the map's overhead: about 6 MB. */
#define MEMSAMPLE_MAX_ENTRIES 65536
/* Processes watched at once: which ones, the daemon chooses per owner
 * (daemon/page-sampler.c). */
#define MEMSAMPLE_MAX_WATCHED 1024

/* Cgroups whose tasks carry sampling events at once: the events number at most this
 * many times the CPUs (each cgroup's cpuset). A process of a cgroup past it is not
 * sampled page by page (its placement still is). */
#define MEMSAMPLE_MAX_GROUPS 64

/* Per-thread events of one process, where its cgroup can have none (memsample-loader.c):
 * its lowest-numbered threads; the threads they create inherit them. */
#define MEMSAMPLE_MAX_THREADS 256
/* ... and of all processes together: each is a descriptor of the daemon's. */
#define MEMSAMPLE_MAX_THREAD_EVENTS 4096

struct memsample_key {
        __u32 tgid;
        __u32 node;
        __u64 page;                /* data address >> page_shift */
};
