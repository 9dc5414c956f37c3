// SPDX-License-Identifier: GPL-2.0-or-later
/* Memory-access samples aggregated in the kernel: a perf_event program on sampling
 * events that carry a data address (PEBS mem-loads, IBS op, SPE; or the page-faults
 * software event, whose address is the faulting one), counting samples per (tgid,
 * node of the sampling CPU, page) for the watched tgids, so that no sample is copied
 * to user space one by one. The daemon drains the map per process into lib/page-agg,
 * which applies the two-sample rule. */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include "memsample.h"

char LICENSE[] SEC("license") = "GPL";

const volatile __u32 nr_cpus = 1;
const volatile __u32 page_shift = 12;

struct {
        __uint(type, BPF_MAP_TYPE_ARRAY);
        __uint(max_entries, 1);             /* resized to nr_cpus by the loader */
        __type(key, __u32);
        __type(value, __u32);
} cpu_node SEC(".maps");

struct {
        __uint(type, BPF_MAP_TYPE_HASH);
        __uint(max_entries, MEMSAMPLE_MAX_WATCHED);
        __type(key, __u32);
        __type(value, __u8);
} watched SEC(".maps");

struct {
        __uint(type, BPF_MAP_TYPE_LRU_HASH);
        __uint(max_entries, MEMSAMPLE_MAX_ENTRIES);
        __type(key, struct memsample_key);
        __type(value, __u64);
} pages SEC(".maps");

SEC("perf_event")
int on_sample(struct bpf_perf_event_data *ctx) {
        struct memsample_key key = { .tgid = (__u32) (bpf_get_current_pid_tgid() >> 32) };
        __u32 cpu = bpf_get_smp_processor_id();
        __u64 one = 1, *v, addr;
        __u32 *node;

        if (!bpf_map_lookup_elem(&watched, &key.tgid))
                return 0;
        addr = ctx->addr;
        node = cpu < nr_cpus ? bpf_map_lookup_elem(&cpu_node, &cpu) : NULL;
        if (!addr || !node)
                return 0;
        key.node = *node;
        key.page = addr >> page_shift;
        v = bpf_map_lookup_elem(&pages, &key);
        if (v)
                __sync_fetch_and_add(v, 1);
        else if (bpf_map_update_elem(&pages, &key, &one, BPF_NOEXIST) && (v = bpf_map_lookup_elem(&pages, &key)))
                __sync_fetch_and_add(v, 1);   /* another CPU created it first */
        return 0;
}
