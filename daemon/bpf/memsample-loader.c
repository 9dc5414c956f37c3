// SPDX-License-Identifier: GPL-2.0-or-later
/* The libbpf-tools lifecycle for memsample.bpf.c, then one perf event per online CPU
 * with the program attached to each. */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>
#include <linux/types.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include "cleanup.h"
#include "memsample.h"
#include "memsample-loader.h"
#include "memsample.skel.h"
#include "pagesize.h"

/* The BPF program counts samples per base page: address >> this. */
static unsigned page_shift(void) {
        return (unsigned) __builtin_ctzl(page_size());
}

struct memsample {
        struct memsample_bpf *skel;
        struct bpf_link **links;
        int *fds;
        unsigned n_events;
};

DEFINE_TRIVIAL_CLEANUP_FUNC(struct memsample_bpf *, memsample_bpf__destroy);

void memsample_attr_page_faults(struct perf_event_attr *attr, uint64_t period) {
        *attr = (struct perf_event_attr) {
                .type = PERF_TYPE_SOFTWARE,
                .size = sizeof(*attr),
                .config = PERF_COUNT_SW_PAGE_FAULTS,
                .sample_period = period ? period : 1,
                .sample_type = PERF_SAMPLE_ADDR,
        };
}

void memsample_free(struct memsample *p) {
        if (!p)
                return;
        for (unsigned i = 0; i < p->n_events; i++) {
                bpf_link__destroy(p->links[i]);
                if (p->fds[i] >= 0)
                        close(p->fds[i]);
        }
        free(p->links);
        free(p->fds);
        memsample_bpf__destroy(p->skel);
        free(p);
}

int memsample_new(const struct topology *t, const struct perf_event_attr *attr,
                      struct memsample **ret, const char **ret_why) {
        _cleanup_(memsample_bpf__destroyp) struct memsample_bpf *skel = NULL;
        struct memsample *p;
        int n_cpus, r;

        n_cpus = libbpf_num_possible_cpus();
        if (n_cpus <= 0) {
                *ret_why = "cannot read the possible CPUs";
                return n_cpus < 0 ? n_cpus : -EINVAL;
        }
        skel = memsample_bpf__open();
        if (!skel) {
                *ret_why = "cannot open the BPF object";
                return -errno;
        }
        if (bpf_map__set_max_entries(skel->maps.cpu_node, (__u32) n_cpus) < 0) {
                *ret_why = "cannot size the BPF maps";
                return -EINVAL;
        }
        skel->rodata->nr_cpus = (__u32) n_cpus;
        skel->rodata->page_shift = page_shift();
        r = memsample_bpf__load(skel);
        if (r < 0) {
                *ret_why = "cannot load the BPF program (libbpf says why at debug level)";
                return r;
        }
        for (unsigned c = 0; c < t->n_cpus && c < (unsigned) n_cpus; c++) {
                int node = topology_cpu_node(t, c);
                __u32 key = c, val = (__u32) node;
                if (node >= 0 && bpf_map_update_elem(bpf_map__fd(skel->maps.cpu_node), &key, &val, BPF_ANY) < 0) {
                        *ret_why = "cannot fill the CPU to node map";
                        return -errno;
                }
        }

        p = calloc(1, sizeof(*p));
        if (!p || !(p->links = calloc(t->n_cpus ? t->n_cpus : 1, sizeof(*p->links))) ||
            !(p->fds = calloc(t->n_cpus ? t->n_cpus : 1, sizeof(*p->fds)))) {
                if (p)
                        free(p->links);
                free(p);
                *ret_why = "out of memory";
                return -ENOMEM;
        }
        p->skel = TAKE_PTR(skel);
        for (unsigned c = 0; c < t->n_cpus; c++) {
                struct perf_event_attr a = *attr;
                int fd;

                if (!cpumask_test(&t->online_cpus, c))
                        continue;
                fd = (int) syscall(SYS_perf_event_open, &a, -1, (int) c, -1, PERF_FLAG_FD_CLOEXEC);
                if (fd < 0) {
                        r = -errno;
                        *ret_why = "cannot open the sampling perf event";
                        goto fail;
                }
                p->fds[p->n_events] = fd;
                p->links[p->n_events] = bpf_program__attach_perf_event(p->skel->progs.on_sample, fd);
                p->n_events++;
                if (!p->links[p->n_events - 1]) {
                        r = -errno;
                        *ret_why = "cannot attach the program to the perf event";
                        goto fail;
                }
        }
        *ret = p;
        return 0;
fail:
        memsample_free(p);
        return r;
}

int memsample_watch(struct memsample *p, pid_t pid) {
        __u32 tgid = (__u32) pid;
        __u8 one = 1;
        return bpf_map_update_elem(bpf_map__fd(p->skel->maps.watched), &tgid, &one, BPF_ANY) < 0 ? -errno : 0;
}

int memsample_unwatch(struct memsample *p, pid_t pid) {
        __u32 tgid = (__u32) pid;
        return bpf_map_delete_elem(bpf_map__fd(p->skel->maps.watched), &tgid) < 0 ? -errno : 0;
}


/* Moves the counts of pid (or of every process, pid 0) out of the map to fn. */
static int drain(struct memsample *p, pid_t pid,
                 void (*fn)(void *userdata, pid_t tgid, uint64_t addr, unsigned node, uint64_t count), void *userdata) {
        _cleanup_free_ struct memsample_key *keys = NULL;
        int fd = bpf_map__fd(p->skel->maps.pages), n = 0;
        struct memsample_key k, next, *prev = NULL;
        size_t cap = 0;

        /* Collect first: deleting while walking with get_next_key restarts the walk.
         * The map is bounded (MEMSAMPLE_MAX_ENTRIES), so is this. */
        while (bpf_map_get_next_key(fd, prev, &next) == 0 && (size_t) n < MEMSAMPLE_MAX_ENTRIES) {
                k = next;
                prev = &k;
                if (pid && k.tgid != (__u32) pid)
                        continue;
                if ((size_t) n == cap) {
                        size_t nc = cap ? cap * 2 : 1024;
                        struct memsample_key *nk = realloc(keys, nc * sizeof(*nk));
                        if (!nk)
                                return -ENOMEM;
                        keys = nk;
                        cap = nc;
                }
                keys[n++] = k;
        }
        for (int i = 0; i < n; i++) {
                __u64 count;
                if (bpf_map_lookup_elem(fd, &keys[i], &count) < 0)
                        continue; /* evicted meanwhile */
                (void) bpf_map_delete_elem(fd, &keys[i]);
                fn(userdata, (pid_t) keys[i].tgid, keys[i].page << page_shift(), keys[i].node, count);
        }
        return n;
}

int memsample_drain_all(struct memsample *p,
                        void (*fn)(void *userdata, pid_t tgid, uint64_t addr, unsigned node, uint64_t count),
                        void *userdata) {
        return drain(p, 0, fn, userdata);
}

static void to_agg(void *userdata, pid_t tgid, uint64_t addr, unsigned node, uint64_t count) {
        (void) tgid;
        (void) page_agg_add_counts(userdata, addr, node, count);
}

int memsample_drain(struct memsample *p, pid_t pid, struct page_agg *agg) {
        return pid > 0 ? drain(p, pid, to_agg, agg) : -EINVAL;
}
