/* SPDX-License-Identifier: GPL-2.0-or-later */
/* numabalancectl show: reads /proc/PID and the topology directly, needs no daemon. */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "ctl-show.h"
#include "term-text.h"
#include "json.h"
#include "locality.h"
#include "numa_maps.h"
#include "pagesize.h"
#include "policy.h"
#include "proc.h"
#include "topology.h"

struct thread_seen {
        pid_t tid;
        char comm[64];
        int cpu;
};

struct snapshot {
        struct proc_status status;
        struct proc_stat stat;
        struct numa_maps *maps;
        struct topology *topo;
        struct thread_seen *threads;
        size_t n_threads;
        struct locality loc;
};

static void snapshot_done(struct snapshot *s) {
        numa_maps_free(s->maps);
        topology_free(s->topo);
        free(s->threads);
        locality_done(&s->loc);
}

static const char *reason(int r) {
        switch (-r) {
        case ENOENT:
        case ESRCH:
                return "no such process";
        case EACCES:
        case EPERM:
                return "permission denied (another user's process needs root or CAP_SYS_PTRACE)";
        default:
                return strerror(-r);
        }
}

static int fail(const struct show_args *a, const char *what, int r) {
        fprintf(stderr, "numabalancectl: pid %d: %s%s%s\n", (int) a->pid, what ? what : "", what ? ": " : "",
                reason(r));
        return r;
}

static int read_threads(const struct show_args *a, struct snapshot *s) {
        _cleanup_free_ pid_t *tids = NULL;
        size_t n = 0;
        int r;

        r = proc_list_tasks(a->proc_root, s->status.tgid, &tids, &n);
        if (r < 0)
                return r;
        s->threads = calloc(n ? n : 1, sizeof(*s->threads));
        if (!s->threads)
                return -ENOMEM;
        for (size_t i = 0; i < n; i++) {
                struct proc_stat st;
                /* A thread may exit between the listing and the read: skip it. */
                if (proc_read_task_stat(a->proc_root, s->status.tgid, tids[i], &st) < 0)
                        continue;
                s->threads[s->n_threads].tid = tids[i];
                snprintf(s->threads[s->n_threads].comm, sizeof(s->threads[0].comm), "%s", st.comm);
                s->threads[s->n_threads].cpu = st.processor;
                s->n_threads++;
        }
        return 0;
}

static int take_snapshot(const struct show_args *a, struct snapshot *s) {
        _cleanup_free_ char *buf = NULL;
        _cleanup_free_ int *cpus = NULL;
        struct proc_stat again;
        size_t len = 0;
        int r;

        r = topology_read(a->sys_root, &s->topo);
        if (r < 0) {
                fprintf(stderr, "numabalancectl: cannot read the NUMA topology under %s/devices/system/node: %s\n",
                        a->sys_root, strerror(-r));
                return r;
        }
        r = proc_read_stat(a->proc_root, a->pid, &s->stat);
        if (r < 0)
                return fail(a, NULL, r);
        r = proc_read_status(a->proc_root, a->pid, &s->status);
        if (r < 0)
                return fail(a, "reading status", r);
        r = proc_read_numa_maps(a->proc_root, s->status.tgid, &buf, &len);
        if (r < 0)
                return fail(a, "reading numa_maps", r);
        r = numa_maps_parse(buf, len, &s->maps);
        if (r < 0)
                return fail(a, "parsing numa_maps", r);
        r = read_threads(a, s);
        if (r < 0)
                return fail(a, "listing threads", r);

        /* The pid may have been reused while we read: the start time tells. */
        r = proc_read_stat(a->proc_root, a->pid, &again);
        if (r < 0 || again.starttime != s->stat.starttime)
                return fail(a, "the process exited while being read", r < 0 ? r : -ESRCH);

        cpus = calloc(s->n_threads ? s->n_threads : 1, sizeof(int));
        if (!cpus)
                return -ENOMEM;
        for (size_t i = 0; i < s->n_threads; i++)
                cpus[i] = s->threads[i].cpu;
        r = locality_compute(s->topo, s->maps, cpus, s->n_threads, &s->loc);
        if (r < 0)
                return fail(a, "computing locality", r);
        return 0;
}

static void vma_allowed(const struct snapshot *s, const struct vma *v, nb_nodemask *allowed,
                        enum policy_verdict *verdict) {
        nb_nodemask mems = s->status.mems_allowed;
        if (!s->status.has_mems_allowed)
                mems = s->topo->with_memory;
        *verdict = policy_allowed_nodes(&v->policy, &mems, &s->topo->with_memory, false, allowed);
}

static void policy_string(const struct mempolicy *p, char *buf, size_t size) {
        char nodes[NODEMASK_STRMAX];
        nodemask_format(&p->nodes, nodes, sizeof(nodes));
        snprintf(buf, size, "%s%s%s%s%s%s%s", numa_maps_mpol_mode_name(p->mode),
                 p->flags & (MPOL_FLAG_STATIC | MPOL_FLAG_RELATIVE | MPOL_FLAG_BALANCING) ? "=" : "",
                 p->flags & MPOL_FLAG_STATIC ? "static" : p->flags & MPOL_FLAG_RELATIVE ? "relative" : "",
                 (p->flags & MPOL_FLAG_BALANCING) && (p->flags & (MPOL_FLAG_STATIC | MPOL_FLAG_RELATIVE)) ? "|" : "",
                 p->flags & MPOL_FLAG_BALANCING ? "balancing" : "",
                 nodes[0] ? ":" : "", nodes);
        if (p->nodes_truncated && strlen(buf) + 4 < size)
                strcat(buf, "...");
}

/* Nodes that hold some of the memory, run some of the threads, or have memory. */
static void json_nodes(struct json *j, const struct snapshot *s) {
        const struct locality *l = &s->loc;

        json_array_begin(j);
        for (unsigned i = 0; i < s->topo->n_nodes; i++) {
                if (!l->bytes[i] && !l->threads[i] && !s->topo->nodes[i].has_memory)
                        continue;
                json_object_begin(j);
                json_key(j, "node"); json_u64(j, s->topo->nodes[i].id);
                json_key(j, "pages"); json_u64(j, l->bytes[i] / page_size());
                json_key(j, "bytes"); json_u64(j, l->bytes[i]);
                json_key(j, "share");
                json_double(j, l->total_bytes ? (double) l->bytes[i] / (double) l->total_bytes : 0.0);
                json_key(j, "threads"); json_u64(j, l->threads[i]);
                json_key(j, "tier");
                if (s->topo->nodes[i].tier >= 0)
                        json_u64(j, (uint64_t) s->topo->nodes[i].tier);
                else
                        json_null(j);
                json_key(j, "slow"); json_bool(j, s->topo->nodes[i].slow);
                json_object_end(j);
        }
        json_array_end(j);
}

static void json_threads(struct json *j, const struct snapshot *s) {
        json_array_begin(j);
        for (size_t i = 0; i < s->n_threads; i++) {
                int node = topology_cpu_node(s->topo, (unsigned) s->threads[i].cpu);
                json_object_begin(j);
                json_key(j, "tid"); json_i64(j, s->threads[i].tid);
                json_key(j, "comm"); json_string(j, s->threads[i].comm);
                json_key(j, "cpu"); json_i64(j, s->threads[i].cpu);
                json_key(j, "node");
                if (node >= 0)
                        json_i64(j, node);
                else
                        json_null(j);
                json_object_end(j);
        }
        json_array_end(j);
}

/* The VMA's memory policy, as numa_maps states it. */
static void json_vma_policy(struct json *j, const struct vma *v) {
        char list[NODEMASK_STRMAX];

        json_key(j, "policy"); json_string(j, numa_maps_mpol_mode_name(v->policy.mode));
        json_key(j, "policy_flags");
        json_array_begin(j);
        if (v->policy.flags & MPOL_FLAG_STATIC) json_string(j, "static");
        if (v->policy.flags & MPOL_FLAG_RELATIVE) json_string(j, "relative");
        if (v->policy.flags & MPOL_FLAG_BALANCING) json_string(j, "balancing");
        json_array_end(j);
        nodemask_format(&v->policy.nodes, list, sizeof(list));
        json_key(j, "policy_nodes"); json_string(j, list);
        json_key(j, "policy_truncated"); json_bool(j, v->policy.nodes_truncated);
}

static void json_vma(struct json *j, const struct snapshot *s, const struct vma *v) {
        const struct node_pages *np = vma_node_pages(s->maps, v);
        nb_nodemask allowed;
        enum policy_verdict verdict;
        char addr[32], list[NODEMASK_STRMAX];

        vma_allowed(s, v, &allowed, &verdict);
        json_object_begin(j);
        snprintf(addr, sizeof(addr), "0x%" PRIx64, v->start);
        json_key(j, "start"); json_string(j, addr);
        json_key(j, "kind"); json_string(j, numa_maps_vma_kind_name(v->kind));
        json_key(j, "hugetlb"); json_bool(j, v->hugetlb);
        json_key(j, "path"); json_string(j, v->path);
        json_vma_policy(j, v);
        nodemask_format(&allowed, list, sizeof(list));
        json_key(j, "allowed_nodes"); json_string(j, list);
        json_key(j, "verdict"); json_string(j, policy_verdict_name(verdict));
        json_key(j, "page_size_kb"); json_u64(j, v->page_size_kb);
        json_key(j, "pages"); json_u64(j, v->pages);
        json_key(j, "bytes"); json_u64(j, locality_vma_bytes(v, v->pages));
        json_key(j, "anon"); json_u64(j, v->anon);
        json_key(j, "dirty"); json_u64(j, v->dirty);
        json_key(j, "mapmax"); json_u64(j, v->mapmax);
        json_key(j, "node_pages");
        json_object_begin(j);
        for (size_t k = 0; k < v->np_count; k++) {
                char key[16];
                snprintf(key, sizeof(key), "%u", np[k].node);
                json_key(j, key);
                json_u64(j, np[k].pages);
        }
        json_object_end(j);
        json_object_end(j);
}

/* The schema is docs/show-json.md; "pages" outside the VMAs count base pages. */
static void print_json(const struct show_args *a, const struct snapshot *s) {
        const struct locality *l = &s->loc;
        char list[CPUMASK_STRMAX];
        struct json j;

        json_init(&j, stdout, a->pretty);
        json_object_begin(&j);
        json_key(&j, "version"); json_u64(&j, 1);
        json_key(&j, "pid"); json_i64(&j, s->status.tgid);
        json_key(&j, "comm"); json_string(&j, s->stat.comm);
        cpumask_format(&s->status.cpus_allowed, list, sizeof(list));
        json_key(&j, "cpus_allowed"); json_string(&j, list);
        nodemask_format(&s->status.mems_allowed, list, sizeof(list));
        json_key(&j, "mems_allowed"); json_string(&j, list);
        json_key(&j, "total_pages"); json_u64(&j, l->total_bytes / page_size());
        json_key(&j, "total_bytes"); json_u64(&j, l->total_bytes);
        json_key(&j, "nodes"); json_nodes(&j, s);
        json_key(&j, "threads"); json_threads(&j, s);
        nodemask_format(&l->thread_nodes, list, sizeof(list));
        json_key(&j, "thread_nodes"); json_string(&j, list);
        json_key(&j, "local_bytes"); json_u64(&j, l->local_bytes);
        json_key(&j, "local_share"); json_double(&j, locality_share(l));

        json_key(&j, "vmas");
        json_array_begin(&j);
        for (size_t i = 0; i < s->maps->n_vmas; i++) {
                if (!a->all && s->maps->vmas[i].pages == 0)
                        continue;
                json_vma(&j, s, &s->maps->vmas[i]);
        }
        json_array_end(&j);

        json_key(&j, "bad_lines");
        json_array_begin(&j);
        for (unsigned i = 0; i < s->maps->n_bad_lines && i < NUMA_MAPS_BAD_LINES_KEPT; i++)
                json_u64(&j, s->maps->bad_lines[i]);
        json_array_end(&j);
        json_object_end(&j);
        json_finish(&j);
}

static const char *human_bytes(uint64_t b, char *buf, size_t size) {
        static const char *const units[] = { "B", "KiB", "MiB", "GiB", "TiB", "PiB" };
        double v = (double) b;
        unsigned u = 0;
        while (v >= 1024 && u + 1 < ELEMENTSOF(units)) {
                v /= 1024;
                u++;
        }
        if (u == 0)
                snprintf(buf, size, "%" PRIu64 " B", b);
        else
                snprintf(buf, size, "%.1f %s", v, units[u]);
        return buf;
}

/* Prints text that came from the process (comm, paths) with every control character
 * (C1 too), bidi override and invisible format character and every byte that is not
 * valid UTF-8 escaped (every byte of 0x80 or more under a locale that is not UTF-8),
 * so that a hostile name cannot rewrite the operator's terminal (lib/term-text.h). */
static void print_safe(const char *s) {
        term_text_print(stdout, s);
}

/* Pages here are base pages; a VMA's own page size shows in its size column. */
static void print_human_nodes(const struct snapshot *s) {
        const struct locality *l = &s->loc;
        char b1[32], head[32];

        snprintf(head, sizeof(head), "pages(%zuK)", page_size() / 1024);
        printf("%5s %12s %12s %7s %8s  %s\n", "node", head, "bytes", "share", "threads", "tier");
        for (unsigned i = 0; i < s->topo->n_nodes; i++) {
                const struct topo_node *n = &s->topo->nodes[i];
                char tier[32];

                if (!l->bytes[i] && !l->threads[i] && !n->has_memory)
                        continue;
                if (n->tier >= 0)
                        snprintf(tier, sizeof(tier), "%d%s", n->tier, n->slow ? " slow" : "");
                else
                        snprintf(tier, sizeof(tier), "%s", n->slow ? "slow" : "-");
                printf("%5u %12" PRIu64 " %12s %6.1f%% %8u  %s\n", n->id, l->bytes[i] / page_size(),
                       human_bytes(l->bytes[i], b1, sizeof(b1)),
                       l->total_bytes ? 100.0 * (double) l->bytes[i] / (double) l->total_bytes : 0.0,
                       l->threads[i], tier);
        }
        if (l->other_bytes)
                printf("%5s %12" PRIu64 " %12s\n", "other", l->other_bytes / page_size(),
                       human_bytes(l->other_bytes, b1, sizeof(b1)));
}

static void print_human_vma(const struct snapshot *s, const struct vma *v) {
        const struct node_pages *np = vma_node_pages(s->maps, v);
        char b1[32], list[NODEMASK_STRMAX], pol[NODEMASK_STRMAX + 64];
        nb_nodemask allowed;
        enum policy_verdict verdict;

        vma_allowed(s, v, &allowed, &verdict);
        policy_string(&v->policy, pol, sizeof(pol));
        nodemask_format(&allowed, list, sizeof(list));
        if (verdict != POLICY_MOVABLE)
                snprintf(list, sizeof(list), "(%s)", policy_verdict_name(verdict));
        printf("%-14" PRIx64 " %-6s %-22s %-8s %10s ", v->start,
               v->hugetlb ? "huge" : numa_maps_vma_kind_name(v->kind), pol, list,
               human_bytes(locality_vma_bytes(v, v->pages), b1, sizeof(b1)));
        for (size_t k = 0; k < v->np_count; k++)
                printf(" N%u=%" PRIu64, np[k].node, np[k].pages);
        if (v->path) {
                printf("  ");
                print_safe(v->path);
        }
        putchar('\n');
}

static void print_human(const struct show_args *a, const struct snapshot *s) {
        const struct locality *l = &s->loc;
        char b1[32], list[CPUMASK_STRMAX];
        size_t shown = 0;

        printf("pid %d (", (int) s->status.tgid);
        print_safe(s->stat.comm);
        cpumask_format(&s->status.cpus_allowed, list, sizeof(list));
        printf("): %zu thread%s, cpus %s, ", s->n_threads, s->n_threads == 1 ? "" : "s", list);
        nodemask_format(&s->status.mems_allowed, list, sizeof(list));
        printf("mems %s\n", list);
        nodemask_format(&l->thread_nodes, list, sizeof(list));
        printf("memory %s, %.1f%% local to the nodes its threads last ran on (%s)\n\n",
               human_bytes(l->total_bytes, b1, sizeof(b1)), 100.0 * locality_share(l), list[0] ? list : "none");
        print_human_nodes(s);

        printf("\n%-14s %-6s %-22s %-8s %10s  %s\n", "start", "kind", "policy", "allowed", "size", "pages per node");
        for (size_t i = 0; i < s->maps->n_vmas; i++) {
                if (!a->all && s->maps->vmas[i].pages == 0)
                        continue;
                print_human_vma(s, &s->maps->vmas[i]);
                shown++;
        }
        if (!shown)
                printf("(no VMA holds pages)\n");
        if (s->maps->n_bad_lines)
                printf("\n%u line%s of numa_maps did not parse and %s skipped (first: line %u)\n",
                       s->maps->n_bad_lines, s->maps->n_bad_lines == 1 ? "" : "s",
                       s->maps->n_bad_lines == 1 ? "was" : "were", s->maps->bad_lines[0]);
}

int ctl_show(const struct show_args *a) {
        struct snapshot s = {};
        int r;

        r = take_snapshot(a, &s);
        if (r >= 0) {
                if (a->json)
                        print_json(a, &s);
                else
                        print_human(a, &s);
        }
        snapshot_done(&s);
        return r;
}
