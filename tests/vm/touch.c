/* SPDX-License-Identifier: GPL-2.0-or-later */
/* A test program for the VM tests: first-touches memory regions with known policies
 * on known nodes, asks the kernel where every page landed (move_pages(2) in query
 * mode), writes a JSON description of the regions, then waits until stdin reaches
 * EOF or SIGTERM/SIGINT arrives, so that another program (numabalancectl, the
 * daemon) can inspect or move its memory meanwhile.
 *
 *   touch --out FILE [--size-kb N] [--run-on NODE] [--hold] REGION...
 *
 * REGION is one of
 *   local:N         default policy, touched by this thread pinned to a CPU of node N
 *   bind:LIST       mbind(MPOL_BIND, LIST) on the region
 *   interleave:LIST mbind(MPOL_INTERLEAVE, LIST)
 *   preferred:N     mbind(MPOL_PREFERRED, N)
 *   task:LIST       set_mempolicy(MPOL_BIND, LIST) for the whole task while touching,
 *                   reset to default afterwards: the VMA has no policy of its own
 *                   (numa_maps says "default") but its pages sit on LIST
 * Each region is its own VMA: PROT_NONE guard pages on both sides stop the kernel
 * from merging neighbouring regions that have the same flags and policy.
 * THP is turned off on the regions (MADV_NOHUGEPAGE) so that an interleaved region
 * is spread page by page, as the expectations assume.
 *
 * --run-on NODE pins the process to the CPUs of NODE after touching (the demo: memory
 * on one node, threads on another). --hold re-reads the regions every 100 ms while
 * waiting, so that the process is a workload that keeps touching its memory.
 *
 * The JSON ("version": 1):
 *   { "pid", "page_size", "regions": [ { "name", "start" ("0x..."), "length",
 *     "pages", "policy" (numa_maps mode name), "policy_nodes" (list, "" if none),
 *     "node_pages" { "<node>": pages, as move_pages reported them } } ] }
 * It is written to FILE.tmp and renamed, so a reader never sees half of it.
 *
 * Exit status: 0; 1 when a page is not where its policy says it must be (the
 * kernel's placement is then not what the test assumes: the details are printed);
 * 2 for bad arguments. */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <numaif.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>
#include "json.h"
#include "nodemask.h"
#include "parse.h"
#include "topology.h"

enum kind { K_LOCAL, K_BIND, K_INTERLEAVE, K_PREFERRED, K_TASK };

struct region {
        const char *name;
        enum kind kind;
        nb_nodemask nodes;
        char *base;                 /* mapping including the guard pages */
        char *start;
        size_t length;
        size_t n_pages;
        uint64_t node_pages[NB_NODES_MAX];
};

static volatile sig_atomic_t stop;
static void on_signal(int sig) { stop = 1; }

static int parse_region(const char *arg, struct region *r) {
        static const struct { const char *prefix; enum kind kind; } kinds[] = {
                { "local:", K_LOCAL }, { "bind:", K_BIND }, { "interleave:", K_INTERLEAVE },
                { "preferred:", K_PREFERRED }, { "task:", K_TASK },
        };

        for (size_t i = 0; i < ELEMENTSOF(kinds); i++) {
                size_t l = strlen(kinds[i].prefix);
                if (strncmp(arg, kinds[i].prefix, l) != 0)
                        continue;
                if (nodemask_parse(arg + l, &r->nodes) < 0 || nodemask_empty(&r->nodes))
                        return -EINVAL;
                if ((kinds[i].kind == K_LOCAL || kinds[i].kind == K_PREFERRED) &&
                    nodemask_weight(&r->nodes) != 1)
                        return -EINVAL;
                r->name = arg;
                r->kind = kinds[i].kind;
                return 0;
        }
        return -EINVAL;
}

/* The numa_maps name of the policy the VMA will carry. */
static const char *kind_policy(enum kind k) {
        switch (k) {
        case K_BIND: return "bind";
        case K_INTERLEAVE: return "interleave";
        case K_PREFERRED: return "prefer";
        default: return "default";
        }
}

static int pin_to_node(const struct topology *t, unsigned node) {
        const struct topo_node *n = topology_node(t, node);
        cpu_set_t set;

        if (!n || !n->has_cpus) {
                fprintf(stderr, "touch: node %u has no CPU to run on\n", node);
                return -EINVAL;
        }
        CPU_ZERO(&set);
        CPUMASK_FOREACH(c, &n->cpus)
                if (c < CPU_SETSIZE)
                        CPU_SET(c, &set);
        if (sched_setaffinity(0, sizeof(set), &set) < 0)
                return -errno;
        /* Make sure we are running there before the first touch. */
        sched_yield();
        return 0;
}

static int unpin(const struct topology *t) {
        cpu_set_t set;

        CPU_ZERO(&set);
        CPUMASK_FOREACH(c, &t->online_cpus)
                if (c < CPU_SETSIZE)
                        CPU_SET(c, &set);
        return sched_setaffinity(0, sizeof(set), &set) < 0 ? -errno : 0;
}

/* nb_nodemask's words are the kernel's unsigned long bitmap on 64-bit; maxnode is
 * the number of bits plus one (the kernel decrements it). */
#define MAXNODE (NB_NODES_MAX + 1)

static int make_region(struct region *r, size_t size, const struct topology *t) {
        long page = sysconf(_SC_PAGESIZE);
        size_t total = size + 2 * (size_t) page;
        int e;

        r->base = mmap(NULL, total, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (r->base == MAP_FAILED)
                return -errno;
        r->start = r->base + page;
        r->length = size;
        r->n_pages = size / (size_t) page;
        if (mprotect(r->base, (size_t) page, PROT_NONE) < 0 ||
            mprotect(r->start + size, (size_t) page, PROT_NONE) < 0)
                return -errno;
        if (madvise(r->start, size, MADV_NOHUGEPAGE) < 0)
                return -errno;

        switch (r->kind) {
        case K_LOCAL:
                e = pin_to_node(t, (unsigned) nodemask_next(&r->nodes, 0));
                if (e < 0)
                        return e;
                break;
        case K_BIND:
        case K_INTERLEAVE:
        case K_PREFERRED: {
                int mode = r->kind == K_BIND ? MPOL_BIND : r->kind == K_INTERLEAVE ? MPOL_INTERLEAVE : MPOL_PREFERRED;
                if (mbind(r->start, size, mode, (unsigned long *) r->nodes.w, MAXNODE, 0) < 0)
                        return -errno;
                break;
        }
        case K_TASK:
                if (set_mempolicy(MPOL_BIND, (unsigned long *) r->nodes.w, MAXNODE) < 0)
                        return -errno;
                break;
        }

        /* The first touch: this is where the policy is applied. */
        for (size_t off = 0; off < size; off += (size_t) page)
                r->start[off] = (char) (off / (size_t) page) | 1;

        if (r->kind == K_TASK && set_mempolicy(MPOL_DEFAULT, NULL, 0) < 0)
                return -errno;
        if (r->kind == K_LOCAL)
                return unpin(t);
        return 0;
}

/* Asks the kernel which node each page is on (nodes == NULL: query only). */
static int query_region(struct region *r) {
        long page = sysconf(_SC_PAGESIZE);
        _cleanup_free_ void **pages = calloc(r->n_pages, sizeof(void *));
        _cleanup_free_ int *status = calloc(r->n_pages, sizeof(int));

        if (!pages || !status)
                return -ENOMEM;
        for (size_t i = 0; i < r->n_pages; i++) {
                pages[i] = r->start + i * (size_t) page;
                status[i] = -1000;
        }
        if (move_pages(0, r->n_pages, pages, NULL, status, 0) < 0)
                return -errno;
        memset(r->node_pages, 0, sizeof(r->node_pages));
        for (size_t i = 0; i < r->n_pages; i++) {
                if (status[i] < 0 || status[i] >= NB_NODES_MAX) {
                        fprintf(stderr, "touch: %s: page %zu has status %d\n", r->name, i, status[i]);
                        return -EIO;
                }
                r->node_pages[status[i]]++;
        }
        return 0;
}

/* Is the placement what the policy promises, given enough free memory? */
static bool placement_ok(const struct region *r) {
        bool ok = true;

        for (unsigned n = 0; n < NB_NODES_MAX; n++) {
                bool in = nodemask_test(&r->nodes, n);
                if (r->node_pages[n] && !in) {
                        fprintf(stderr, "touch: %s: %" PRIu64 " pages on node %u, outside the policy's nodes\n",
                                r->name, r->node_pages[n], n);
                        ok = false;
                }
                /* Interleave puts pages on every node of the list; local and
                 * preferred put all of them on their one node. */
                if (in && !r->node_pages[n] && r->kind != K_BIND && r->kind != K_TASK) {
                        fprintf(stderr, "touch: %s: no page on node %u\n", r->name, n);
                        ok = false;
                }
        }
        return ok;
}

static int write_json(const char *path, struct region *rs, size_t n) {
        _cleanup_free_ char *tmp = NULL;
        struct json j;
        FILE *f;

        if (asprintf(&tmp, "%s.tmp", path) < 0)
                return -ENOMEM;
        f = fopen(tmp, "we");
        if (!f)
                return -errno;
        json_init(&j, f, true);
        json_object_begin(&j);
        json_key(&j, "version"); json_u64(&j, 1);
        json_key(&j, "pid"); json_i64(&j, getpid());
        json_key(&j, "page_size"); json_u64(&j, (uint64_t) sysconf(_SC_PAGESIZE));
        json_key(&j, "regions");
        json_array_begin(&j);
        for (size_t i = 0; i < n; i++) {
                char buf[64];
                json_object_begin(&j);
                json_key(&j, "name"); json_string(&j, rs[i].name);
                snprintf(buf, sizeof(buf), "0x%lx", (unsigned long) rs[i].start);
                json_key(&j, "start"); json_string(&j, buf);
                json_key(&j, "length"); json_u64(&j, rs[i].length);
                json_key(&j, "pages"); json_u64(&j, rs[i].n_pages);
                json_key(&j, "policy"); json_string(&j, kind_policy(rs[i].kind));
                if (rs[i].kind == K_LOCAL || rs[i].kind == K_TASK)
                        buf[0] = 0;
                else
                        nodemask_format(&rs[i].nodes, buf, sizeof(buf));
                json_key(&j, "policy_nodes"); json_string(&j, buf);
                json_key(&j, "node_pages");
                json_object_begin(&j);
                for (unsigned nd = 0; nd < NB_NODES_MAX; nd++)
                        if (rs[i].node_pages[nd]) {
                                snprintf(buf, sizeof(buf), "%u", nd);
                                json_key(&j, buf);
                                json_u64(&j, rs[i].node_pages[nd]);
                        }
                json_object_end(&j);
                json_object_end(&j);
        }
        json_array_end(&j);
        json_object_end(&j);
        json_finish(&j);
        if (fclose(f) != 0)
                return -errno;
        if (rename(tmp, path) < 0)
                return -errno;
        return 0;
}

static void usage(void) {
        fprintf(stderr, "usage: touch --out FILE [--size-kb N] [--run-on NODE] [--hold] "
                        "{local:N|bind:LIST|interleave:LIST|preferred:N|task:LIST}...\n");
}

int main(int argc, char **argv) {
        static const struct option opts[] = {
                { "out", required_argument, NULL, 'o' },
                { "size-kb", required_argument, NULL, 's' },
                { "run-on", required_argument, NULL, 'r' },
                { "hold", no_argument, NULL, 'H' },
                {}
        };
        _cleanup_(topology_freep) struct topology *t = NULL;
        _cleanup_free_ struct region *rs = NULL;
        const char *out = NULL;
        uint64_t size_kb = 4096;
        int run_on = -1, c, r;
        bool hold = false, ok = true;
        size_t n;

        while ((c = getopt_long(argc, argv, "", opts, NULL)) >= 0) {
                switch (c) {
                case 'o': out = optarg; break;
                case 's':
                        if (parse_u64(optarg, 4, UINT64_C(1) << 30, &size_kb) < 0 || size_kb % 4) {
                                fprintf(stderr, "touch: bad --size-kb %s\n", optarg);
                                return 2;
                        }
                        break;
                case 'r':
                        if (parse_int(optarg, 0, NB_NODES_MAX - 1, &run_on) < 0) {
                                fprintf(stderr, "touch: bad --run-on %s\n", optarg);
                                return 2;
                        }
                        break;
                case 'H': hold = true; break;
                default: usage(); return 2;
                }
        }
        n = (size_t) (argc - optind);
        if (!out || n == 0) {
                usage();
                return 2;
        }
        rs = calloc(n, sizeof(*rs));
        if (!rs)
                return 1;
        for (size_t i = 0; i < n; i++)
                if (parse_region(argv[optind + (int) i], &rs[i]) < 0) {
                        fprintf(stderr, "touch: bad region %s\n", argv[optind + (int) i]);
                        usage();
                        return 2;
                }

        r = topology_read("/sys", &t);
        if (r < 0) {
                fprintf(stderr, "touch: cannot read the topology: %s\n", strerror(-r));
                return 1;
        }

        for (size_t i = 0; i < n; i++) {
                r = make_region(&rs[i], (size_t) size_kb * 1024, t);
                if (r < 0) {
                        fprintf(stderr, "touch: %s: %s\n", rs[i].name, strerror(-r));
                        return 1;
                }
        }
        for (size_t i = 0; i < n; i++) {
                r = query_region(&rs[i]);
                if (r < 0) {
                        fprintf(stderr, "touch: move_pages query on %s: %s\n", rs[i].name, strerror(-r));
                        return 1;
                }
                if (!placement_ok(&rs[i]))
                        ok = false;
        }
        if (!ok)
                return 1;

        if (run_on >= 0) {
                r = pin_to_node(t, (unsigned) run_on);
                if (r < 0) {
                        fprintf(stderr, "touch: cannot run on node %d: %s\n", run_on, strerror(-r));
                        return 1;
                }
        }

        r = write_json(out, rs, n);
        if (r < 0) {
                fprintf(stderr, "touch: cannot write %s: %s\n", out, strerror(-r));
                return 1;
        }

        signal(SIGTERM, on_signal);
        signal(SIGINT, on_signal);
        while (!stop) {
                struct pollfd p = { .fd = STDIN_FILENO, .events = POLLIN };
                r = poll(&p, 1, hold ? 100 : -1);
                if (r > 0) {
                        char buf[256];
                        ssize_t l = read(STDIN_FILENO, buf, sizeof(buf));
                        if (l <= 0)
                                break;  /* EOF (or stdin gone): done */
                }
                if (hold) {
                        long page = sysconf(_SC_PAGESIZE);
                        volatile char sink = 0;
                        for (size_t i = 0; i < n; i++)
                                for (size_t off = 0; off < rs[i].length; off += (size_t) page)
                                        sink += rs[i].start[off];
                        (void) sink;
                }
        }
        return 0;
}
