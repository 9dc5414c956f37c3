/* SPDX-License-Identifier: GPL-2.0-or-later */
/* numabalancectl status, list, explain: one request to the daemon's control socket,
 * one JSON reply, printed as is or as tables. */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <sys/un.h>
#include <unistd.h>
#include "cleanup.h"
#include "json.h"
#include "ctl-daemon.h"
#include "term-text.h"
#include "jv.h"
#include "pagesize.h"

/* The daemon answers from its event loop between ticks; a tick that migrates can take
 * a while, so wait generously. */
#define REPLY_TIMEOUT_SEC 30
#define REPLY_MAX (64u << 20)

static int fail_reach(const struct daemon_args *a, int r) {
        fprintf(stderr, "numabalancectl: cannot reach numabalanced at %s: %s (is the daemon running?)\n", a->socket,
                strerror(-r));
        return CTL_ERR_UNREACHABLE;
}

/* The exit status of a failed ask (ask_parsed(), ctl_daemon_list_all()). */
static int exit_of(int r) {
        return r == CTL_ERR_UNREACHABLE ? CTL_EXIT_UNREACHABLE : r == CTL_ERR_REFUSED || r > 0 ? CTL_EXIT_REFUSED
                                                                                               : CTL_EXIT_FAILURE;
}

int ctl_daemon_ask(const struct daemon_args *a, const char *request, char **ret, size_t *ret_len, bool *ret_connected) {
        struct sockaddr_un sa = { .sun_family = AF_UNIX };
        struct timeval tv = { .tv_sec = REPLY_TIMEOUT_SEC };
        _cleanup_close_ int fd = -1;
        _cleanup_free_ char *buf = NULL;
        size_t len = 0, cap = 0, rl = strlen(request);

        *ret_connected = false;
        if (strlen(a->socket) >= sizeof(sa.sun_path))
                return -ENAMETOOLONG;
        memcpy(sa.sun_path, a->socket, strlen(a->socket) + 1);
        fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
        if (fd < 0)
                return -errno;
        (void) setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
        (void) setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
        if (connect(fd, (struct sockaddr *) &sa, sizeof(sa)) < 0)
                return -errno;
        *ret_connected = true;
        for (size_t off = 0; off < rl;) {
                ssize_t n = send(fd, request + off, rl - off, MSG_NOSIGNAL);
                if (n < 0) {
                        if (errno == EINTR)
                                continue;
                        return -errno;
                }
                off += (size_t) n;
        }
        for (;;) {
                ssize_t n;
                if (cap - len < 65536) {
                        char *nb;
                        if (cap >= REPLY_MAX)
                                return -EFBIG;
                        cap = cap ? cap * 2 : 65536;
                        nb = realloc(buf, cap + 1);
                        if (!nb)
                                return -ENOMEM;
                        buf = nb;
                }
                n = recv(fd, buf + len, cap - len, 0);
                if (n < 0) {
                        if (errno == EINTR)
                                continue;
                        return errno == EAGAIN ? -ETIMEDOUT : -errno;
                }
                if (n == 0)
                        break;
                len += (size_t) n;
        }
        if (!buf)
                return -ENODATA;
        buf[len] = 0;
        *ret = TAKE_PTR(buf);
        *ret_len = len;
        return 0;
}

/* ---- human output --------------------------------------------------------------- */

/* Untrusted text (comm, cgroup paths) for a terminal: every control character (C1
 * too) and every byte that is not valid UTF-8 becomes '?' (lib/term-text.h). */
const char *ctl_daemon_safe(const char *s, char *buf, size_t size) {
        return term_text_safe(s, buf, size);
}

const char *ctl_daemon_bytes(uint64_t b, char *buf, size_t size) {
        static const char units[] = "KMGTP";
        double v = (double) b;
        int u = -1;
        if (b < 1024) {
                snprintf(buf, size, "%" PRIu64 "B", b);
                return buf;
        }
        while (v >= 1024 && u < 4) {
                v /= 1024;
                u++;
        }
        snprintf(buf, size, "%.1f%ci", v, units[u]);
        return buf;
}

static const char *dur_ns(uint64_t ns, char *buf, size_t size) {
        if (ns == 0)
                snprintf(buf, size, "0");
        else if (ns < 1000000)
                snprintf(buf, size, "%.1fus", (double) ns / 1e3);
        else if (ns < 1000000000)
                snprintf(buf, size, "%.1fms", (double) ns / 1e6);
        else
                snprintf(buf, size, "%.2fs", (double) ns / 1e9);
        return buf;
}

static const char *cost(const struct jv *c, char *buf, size_t size) {
        char r[24], d[24], m[24];
        snprintf(buf, size, "%s/%s/%s", dur_ns(jv_u64(jv_get(c, "read"), 0), r, sizeof(r)),
                 dur_ns(jv_u64(jv_get(c, "decide"), 0), d, sizeof(d)),
                 dur_ns(jv_u64(jv_get(c, "migrate"), 0), m, sizeof(m)));
        return buf;
}

static const char *nodes(const struct jv *arr, char *buf, size_t size) {
        size_t w = 0;
        buf[0] = 0;
        for (size_t i = 0; arr && arr->type == JV_ARRAY && i < arr->n && w + 1 < size; i++) {
                char b[24];
                int n = snprintf(buf + w, size - w, "%s%" PRIu64 ":%s", i ? " " : "",
                                 jv_u64(jv_get(&arr->items[i], "node"), 0),
                                 ctl_daemon_bytes(jv_u64(jv_get(&arr->items[i], "bytes"), 0), b, sizeof(b)));
                if (n < 0 || (size_t) n >= size - w)
                        break;
                w += (size_t) n;
        }
        if (!buf[0])
                snprintf(buf, size, "-");
        return buf;
}

/* What the cgroups were charged, by stage; of the walk, the subtrees not opted in. */
static void print_stages(const struct jv *by, uint64_t not_opted_in) {
        static const char *const stages[] = { "walk", "bookkeeping", "read", "decide", "migrate", "report" };
        char b[32], n[32];

        printf("  %-18s", "On cgroups:");
        for (size_t i = 0; i < ELEMENTSOF(stages); i++)
                printf("%s %s %s", i ? "," : "", stages[i], dur_ns(jv_u64(jv_get(by, stages[i]), 0), b, sizeof(b)));
        printf(" (walking cgroups not opted in: %s)\n", dur_ns(not_opted_in, n, sizeof(n)));
}

/* The nodes with memory and their tiers: "0 (tier 4), 2 (tier 8, slow)". */
static void print_memory_nodes(const struct jv *nodes) {
        printf("  Memory nodes:     ");
        for (size_t i = 0; nodes && i < nodes->n; i++) {
                const struct jv *n = &nodes->items[i], *tier = jv_get(n, "tier");
                bool slow = jv_bool(jv_get(n, "slow"), false);

                printf("%s %" PRIu64, i ? "," : "", jv_u64(jv_get(n, "node"), 0));
                if (tier && !jv_is_null(tier))
                        printf(" (tier %" PRIu64 "%s)", jv_u64(tier, 0), slow ? ", slow" : "");
                else if (slow)
                        printf(" (slow)");
        }
        printf("%s\n", nodes && nodes->n ? "" : " ?");
}

/* The config's rules that match no cgroup, and what the last reload did not apply. */
static void print_config_report(const struct jv *d) {
        const struct jv *un = jv_get(d, "rules_unmatched"), *na = jv_get(d, "reload_not_applied");
        char b1[4200], b2[256];

        for (size_t i = 0; un && un->type == JV_ARRAY && i < un->n; i++)
                printf("  %-18s %s: matches no cgroup now\n", i ? "" : "Rules unmatched:",
                       ctl_daemon_safe(jv_str(&un->items[i], "?"), b1, sizeof(b1)));
        for (size_t i = 0; na && na->type == JV_ARRAY && i < na->n; i++)
                printf("  %-18s %s: %s\n", i ? "" : "Not reloaded:",
                       ctl_daemon_safe(jv_str(jv_get(&na->items[i], "key"), "?"), b2, sizeof(b2)),
                       ctl_daemon_safe(jv_str(jv_get(&na->items[i], "why"), "?"), b1, sizeof(b1)));
}

static void print_status(const struct jv *d) {
        char b1[64], b2[64], b3[64], b4[64];
        const struct jv *pages = jv_get(d, "pages"), *cpu = jv_get(d, "cpu_ns"), *by = jv_get(cpu, "by_stage");
        uint64_t up = jv_u64(jv_get(d, "uptime_ms"), 0) / 1000;
        const struct jv *knb = jv_get(d, "kernel_numa_balancing");

        printf("numabalanced %s, pid %" PRId64 ", up %" PRIu64 "d %02" PRIu64 ":%02" PRIu64 ":%02" PRIu64 "%s\n",
               ctl_daemon_safe(jv_str(jv_get(d, "version"), "?"), b1, sizeof(b1)), jv_i64(jv_get(d, "pid"), 0), up / 86400,
               up / 3600 % 24, up / 60 % 60, up % 60, jv_bool(jv_get(d, "dry_run"), false) ? " (dry run)" : "");
        {
                const char *chain = jv_str(jv_get(d, "sampling_chain"), "?"), *pg = jv_str(jv_get(d, "page_sampling"), NULL);
                const char *sched = strstr(chain, "bpf") ? "BPF scheduler" : "/proc";
                uint64_t n = jv_u64(jv_get(d, "page_samples"), 0);

                /* A PMU is named by its kind (intel-pebs...); the other page samplers are the kind. */
                if (pg && (strcmp(pg, "software") == 0 || strcmp(pg, "replay") == 0))
                        printf("  Sampling chain:    %s (%" PRIu64 " samples) + %s\n",
                               strcmp(pg, "software") == 0 ? "software" : "replayed samples", n, sched);
                else if (pg)
                        printf("  Sampling chain:    %s (%s, %" PRIu64 " samples) + %s\n",
                               strcmp(pg, "page-faults") == 0 ? "page faults" : "PMU", ctl_daemon_safe(pg, b1, sizeof(b1)),
                               n, sched);
                else
                        printf("  Sampling chain:    %s only (no page-level sampling)\n", sched);
        }
        if (jv_str(jv_get(d, "damon"), NULL)) {
                const char *why = jv_str(jv_get(d, "damon"), "?");
                char bw[1024];     /* the reason may name a path and what to do */

                if (strcmp(why, "in use") == 0)
                        printf("  DAMON evidence:    in use (%" PRIu64 " kdamond%s running)\n",
                               jv_u64(jv_get(d, "damon_kdamonds"), 0),
                               jv_u64(jv_get(d, "damon_kdamonds"), 0) == 1 ? "" : "s");
                else
                        printf("  DAMON evidence:    not used: %s\n", ctl_daemon_safe(why, bw, sizeof(bw)));
        }
        printf("  Service CPUs:      %s (%" PRIu64 " migration worker%s)\n",
               ctl_daemon_safe(jv_str(jv_get(d, "service_cpus"), "?"), b1, sizeof(b1)), jv_u64(jv_get(d, "workers"), 0),
               jv_u64(jv_get(d, "workers"), 0) == 1 ? "" : "s");
        if (jv_is_null(knb))
                printf("  Kernel balancing:  not present in this kernel\n");
        else
                printf("  Kernel balancing:  %s (kernel.numa_balancing=%" PRIu64 ")\n",
                       jv_u64(knb, 0) ? "ON: it can undo numabalanced's placement" : "off", jv_u64(knb, 0));
        print_memory_nodes(jv_get(d, "memory_nodes"));
        printf("  Ticks:             %" PRIu64 " every %" PRIu64 " ms, the last took %s\n",
               jv_u64(jv_get(d, "ticks"), 0), jv_u64(jv_get(d, "tick_interval_ms"), 0),
               dur_ns(jv_u64(jv_get(d, "last_tick_ns"), 0), b1, sizeof(b1)));
        printf("  Watching:          %" PRIu64 " cgroup%s, %" PRIu64 " process%s\n",
               jv_u64(jv_get(d, "cgroups_watched"), 0), jv_u64(jv_get(d, "cgroups_watched"), 0) == 1 ? "" : "s",
               jv_u64(jv_get(d, "processes_watched"), 0), jv_u64(jv_get(d, "processes_watched"), 0) == 1 ? "" : "es");
        /* The daemon counts base pages, and runs on this machine. */
        snprintf(b1, sizeof(b1), "Pages (%zu KiB):", page_size() / 1024);
        printf("  %-18s moved %" PRIu64 ", busy %" PRIu64 ", gone %" PRIu64 ", refused %" PRIu64
               ", already in place %" PRIu64 "\n", b1,
               jv_u64(jv_get(pages, "moved"), 0), jv_u64(jv_get(pages, "busy"), 0), jv_u64(jv_get(pages, "gone"), 0),
               jv_u64(jv_get(pages, "refused"), 0), jv_u64(jv_get(pages, "already"), 0));
        printf("  Moved, last min:   %s\n", ctl_daemon_bytes(jv_u64(jv_get(d, "moved_bytes_last_minute"), 0), b1, sizeof(b1)));
        printf("  Daemon CPU time:   %s in all: %s on cgroups, %s at start, %s unattributed\n",
               dur_ns(jv_u64(jv_get(cpu, "process"), 0), b1, sizeof(b1)),
               dur_ns(jv_u64(jv_get(by, "total"), 0), b2, sizeof(b2)),
               dur_ns(jv_u64(jv_get(cpu, "startup"), 0), b3, sizeof(b3)),
               dur_ns(jv_u64(jv_get(cpu, "unattributed"), 0), b4, sizeof(b4)));
        print_stages(by, jv_u64(jv_get(cpu, "walk_not_opted_in"), 0));
        print_config_report(d);
}

static void print_list(const struct jv *d) {
        const struct jv *cgs = jv_get(d, "cgroups"), *procs = jv_get(d, "processes");
        char b1[4096], b2[256], b3[64], b4[96], b5[256];

        if (!cgs || cgs->n == 0)
                printf("No cgroup is watched%s.\n", jv_u64(jv_get(d, "requester_uid"), 0) ? " that you own" : "");
        else {
                printf("%-32s %-8s %-20s %5s %9s %-24s %8s %6s %6s %7s %9s  %s\n", "CGROUP", "MODE", "SOURCE", "PROCS",
                       "RSS", "NODES", "MOVED", "BUSY", "GONE", "REFUSED", "CPU", "READ/DECIDE/MIGRATE");
                for (size_t i = 0; i < cgs->n; i++) {
                        const struct jv *c = &cgs->items[i], *pg = jv_get(c, "pages");
                        char all[32];
                        printf("%-32s %-8s %-20s %5" PRIu64 " %9s %-24s %8" PRIu64 " %6" PRIu64 " %6" PRIu64 " %7" PRIu64
                               " %9s  %s%s\n",
                               ctl_daemon_safe(jv_str(jv_get(c, "path"), NULL), b1, sizeof(b1)),
                               ctl_daemon_safe(jv_str(jv_get(c, "mode"), NULL), b2, 16),
                               ctl_daemon_safe(jv_str(jv_get(c, "source"), NULL), b2 + 16, 32),
                               jv_u64(jv_get(c, "processes"), 0), ctl_daemon_bytes(jv_u64(jv_get(c, "total_bytes"), 0), b3, sizeof(b3)),
                               nodes(jv_get(c, "nodes"), b5, sizeof(b5)), jv_u64(jv_get(pg, "moved"), 0),
                               jv_u64(jv_get(pg, "busy"), 0), jv_u64(jv_get(pg, "gone"), 0),
                               jv_u64(jv_get(pg, "refused"), 0),
                               dur_ns(jv_u64(jv_get(jv_get(c, "cpu_ns"), "total"), 0), all, sizeof(all)),
                               cost(jv_get(c, "cpu_ns"), b4, sizeof(b4)),
                               jv_bool(jv_get(c, "active"), true) ? "" : "  (no longer opted in)");
                }
        }
        printf("\n");
        if (!procs || procs->n == 0) {
                printf("No process is watched%s.\n", jv_u64(jv_get(d, "requester_uid"), 0) ? " that you may see" : "");
                return;
        }
        printf("%-8s %-16s %-24s %-8s %6s %-24s %8s %-16s %s\n", "PID", "COMM", "CGROUP", "MODE", "LOCAL", "NODES", "MOVED",
               "REASON", "CPU READ/DECIDE/MIGRATE");
        for (size_t i = 0; i < procs->n; i++) {
                const struct jv *p = &procs->items[i];
                char comm[64], mode[16], reason[32], share[16];
                if (jv_get(p, "total_bytes") && jv_u64(jv_get(p, "total_bytes"), 0))
                        snprintf(share, sizeof(share), "%.0f%%", 100.0 * jv_num(jv_get(p, "local_share"), 0));
                else
                        snprintf(share, sizeof(share), "-");
                printf("%-8" PRId64 " %-16s %-24s %-8s %6s %-24s %8" PRIu64 " %-16s %s\n", jv_i64(jv_get(p, "pid"), 0),
                       ctl_daemon_safe(jv_str(jv_get(p, "comm"), NULL), comm, sizeof(comm)),
                       ctl_daemon_safe(jv_str(jv_get(p, "cgroup"), NULL), b1, sizeof(b1)),
                       ctl_daemon_safe(jv_str(jv_get(p, "mode"), NULL), mode, sizeof(mode)), share,
                       nodes(jv_get(p, "nodes"), b5, sizeof(b5)), jv_u64(jv_get(p, "pages_moved"), 0),
                       ctl_daemon_safe(jv_str(jv_get(p, "reason"), "not scanned"), reason, sizeof(reason)),
                       cost(jv_get(p, "cpu_ns"), b4, sizeof(b4)));
        }
}

static void print_node_field(const char *label, const struct jv *v) {
        if (jv_is_null(v))
                printf("  %-18s -\n", label);
        else
                printf("  %-18s %" PRId64 "\n", label, jv_i64(v, -1));
}

/* Mode place and advise: where the threads were placed and why, thread by thread. */
static void print_placement(const struct jv *pl) {
        const struct jv *threads = jv_get(pl, "threads");
        char b[1024];

        if (!pl || jv_is_null(pl))
                return;
        printf("  %-18s %s\n", "Threads:", ctl_daemon_safe(jv_str(jv_get(pl, "explanation"), "?"), b, sizeof(b)));
        for (size_t i = 0; threads && threads->type == JV_ARRAY && i < threads->n; i++) {
                const struct jv *t = &threads->items[i];
                const struct jv *node = jv_get(t, "node");

                printf("  %-18s tid %" PRId64 " on node ", "", jv_i64(jv_get(t, "tid"), 0));
                if (jv_is_null(node))
                        printf("-");
                else
                        printf("%" PRId64, jv_i64(node, -1));
                printf(", %.0f%% busy: %s\n", 100.0 * jv_num(jv_get(t, "busy"), 0),
                       ctl_daemon_safe(jv_str(jv_get(t, "why"), "?"), b, sizeof(b)));
        }
}

static void print_explain(const struct jv *d) {
        char b1[4096], b2[256], b3[64];
        const struct jv *skipped = jv_get(d, "skipped_bytes"), *cd = jv_get(d, "cooldown");

        printf("pid %" PRId64 "%s%s%s: %s\n", jv_i64(jv_get(d, "pid"), 0), jv_get(d, "comm") ? " (" : "",
               jv_get(d, "comm") ? ctl_daemon_safe(jv_str(jv_get(d, "comm"), NULL), b2, sizeof(b2)) : "", jv_get(d, "comm") ? ")" : "",
               ctl_daemon_safe(jv_str(jv_get(d, "explanation"), "?"), b1, sizeof(b1)));
        if (!jv_bool(jv_get(d, "watched"), false)) {
                if (jv_get(d, "cgroup"))
                        printf("  %-18s %s\n", "Cgroup:", ctl_daemon_safe(jv_str(jv_get(d, "cgroup"), NULL), b1, sizeof(b1)));
                return;
        }
        printf("  %-18s %s\n", "Cgroup:", ctl_daemon_safe(jv_str(jv_get(d, "cgroup"), NULL), b1, sizeof(b1)));
        printf("  %-18s %s (from %s)\n", "Mode:", ctl_daemon_safe(jv_str(jv_get(d, "mode"), NULL), b2, 32),
               ctl_daemon_safe(jv_str(jv_get(d, "mode_source"), NULL), b2 + 32, 64));
        printf("  %-18s %s\n", "Allowed nodes:", ctl_daemon_safe(jv_str(jv_get(d, "mems_allowed"), NULL), b2, sizeof(b2)));
        print_node_field("Hot node:", jv_get(d, "hot_node"));
        print_node_field("Target node:", jv_get(d, "target_node"));
        printf("  %-18s %s\n", "Memory per node:", nodes(jv_get(d, "nodes"), b2, sizeof(b2)));
        if (jv_u64(jv_get(d, "total_bytes"), 0))
                printf("  %-18s %.0f%%\n", "Local:", 100.0 * jv_num(jv_get(d, "local_share"), 0));
        printf("  %-18s %s\n", "Last reason:", ctl_daemon_safe(jv_str(jv_get(d, "reason"), "not scanned yet"), b2, sizeof(b2)));
        for (size_t i = 0; skipped && skipped->type == JV_OBJECT && i < skipped->n; i++)
                printf("  %-18s %s left alone: %s\n", i ? "" : "Skipped:",
                       ctl_daemon_bytes(jv_u64(&skipped->items[i], 0), b3, sizeof(b3)), ctl_daemon_safe(skipped->keys[i], b2, sizeof(b2)));
        if (jv_u64(jv_get(cd, "ranges"), 0))
                printf("  %-18s %" PRIu64 " range(s) moved recently, %" PRIu64 " ms left\n", "Cooldown:",
                       jv_u64(jv_get(cd, "ranges"), 0), jv_u64(jv_get(cd, "remaining_ms"), 0));
        else
                printf("  %-18s none\n", "Cooldown:");
        printf("  %-18s in %" PRIu64 " ms (every %" PRIu64 " ms now)\n", "Next scan:",
               jv_u64(jv_get(d, "next_scan_in_ms"), 0), jv_u64(jv_get(d, "scan_interval_ms"), 0));
        printf("  %-18s %" PRIu64 "\n", "Pages moved:", jv_u64(jv_get(jv_get(d, "pages"), "moved"), 0));
        print_placement(jv_get(d, "placement"));
        printf("  %-18s %s\n", "Daemon CPU time:", cost(jv_get(d, "cpu_ns"), b3, sizeof(b3)));
}

/* ---- requests and pages ---------------------------------------------------------- */

/* The request line for a (list: from the cursor after, or NULL) into buf. Returns 0,
 * or -E2BIG when it is longer than the daemon takes. */
static int request_line(const struct daemon_args *a, const char *after, char *buf, size_t size) {
        size_t o;
        int n;

        if (size > CONTROL_REQUEST_MAX)
                size = CONTROL_REQUEST_MAX;
        n = snprintf(buf, size, "%s", control_cmd_name(a->cmd));
        o = (size_t) n;
        if (a->cmd == CONTROL_EXPLAIN && a->cgroup) {
                buf[o++] = ' ';
                n = control_path_encode(a->cgroup, buf + o, size - o);
        } else if (a->cmd == CONTROL_EXPLAIN)
                n = snprintf(buf + o, size - o, " %d", (int) a->pid);
        else if (a->cmd == CONTROL_LIST && after)
                n = snprintf(buf + o, size - o, " after=%s", after);
        else
                n = 0;
        if (n < 0 || (o += (size_t) n) >= size)
                return -E2BIG;
        for (size_t i = 0; a->cmd == CONTROL_LIST && i < a->n_filters; i++) {
                if (o + 2 >= size)
                        return -E2BIG;
                buf[o++] = ' ';
                n = a->filters[i][0] == '/' ? control_path_encode(a->filters[i], buf + o, size - o)
                                            : snprintf(buf + o, size - o, "%s", a->filters[i]);
                if (n < 0 || (o += (size_t) n) >= size)
                        return -E2BIG;
        }
        if (o + 2 > size)
                return -E2BIG;
        buf[o++] = '\n';
        buf[o] = 0;
        return 0;
}

/* Busy replies are asked again, a second later, this many times. */
#define BUSY_RETRIES 10

/* One request, its reply parsed: 0, 1 (an error reply: *ret holds it) or -errno
 * after one line on stderr. */
static int ask_parsed(const struct daemon_args *a, const char *line, char **ret_raw, size_t *ret_len, struct jv **ret) {
        for (unsigned attempt = 0;; attempt++) {
                _cleanup_free_ char *reply = NULL;
                _cleanup_(jv_freep) struct jv *d = NULL;
                size_t len = 0, off = 0;
                bool connected;
                int r = ctl_daemon_ask(a, line, &reply, &len, &connected);

                if (r < 0 && !connected)
                        return fail_reach(a, r);
                if (r < 0) {
                        fprintf(stderr, "numabalancectl: no reply from numabalanced at %s: %s\n", a->socket,
                                strerror(-r));
                        return r;
                }
                r = jv_parse(reply, len, &d, &off);
                if (r < 0 || d->type != JV_OBJECT) {
                        fprintf(stderr, "numabalancectl: the reply from %s is not a JSON object (at byte %zu)\n",
                                a->socket, off);
                        return -EBADMSG;
                }
                if (attempt < BUSY_RETRIES && strncmp(jv_str(jv_get(d, CONTROL_KEY_ERROR), ""), "busy:", 5) == 0) {
                        sleep(1);
                        continue;
                }
                *ret = TAKE_PTR(d);
                if (ret_raw) {
                        *ret_raw = TAKE_PTR(reply);
                        *ret_len = len;
                }
                return jv_get(*ret, CONTROL_KEY_ERROR) ? 1 : 0;
        }
}

/* Moves the items of from's array key to the end of into's. */
static int append_items(struct jv *into, struct jv *from, const char *key) {
        struct jv *dst = (struct jv *) jv_get(into, key), *src = (struct jv *) jv_get(from, key), *items;

        if (!dst || !src || dst->type != JV_ARRAY || src->type != JV_ARRAY || src->n == 0)
                return 0;
        items = realloc(dst->items, (dst->n + src->n) * sizeof(*items));
        if (!items)
                return -ENOMEM;
        memcpy(items + dst->n, src->items, src->n * sizeof(*items));
        dst->items = items;
        dst->n += src->n;
        src->n = 0;                /* moved: freeing src frees none of them */
        return 0;
}

/* Pages asked for at most: a cursor always moves on, this only stops a daemon that
 * does not. */
#define LIST_PAGES_MAX 100000

int ctl_daemon_list_all(const struct daemon_args *a, struct jv **ret) {
        _cleanup_(jv_freep) struct jv *all = NULL;
        _cleanup_free_ char *after = NULL;
        char line[CONTROL_REQUEST_MAX];
        int r;

        for (unsigned page = 0; page < LIST_PAGES_MAX; page++) {
                _cleanup_(jv_freep) struct jv *d = NULL;
                const char *next;

                if (request_line(a, after, line, sizeof(line)) < 0) {
                        fprintf(stderr, "numabalancectl: the request is longer than %d bytes: fewer or shorter "
                                "cgroups\n", CONTROL_REQUEST_MAX);
                        return -E2BIG;
                }
                r = ask_parsed(a, line, NULL, NULL, &d);
                if (r < 0)
                        return r;
                if (r > 0) {
                        char b[512];
                        fprintf(stderr, "numabalancectl: numabalanced refused the request: %s\n",
                                ctl_daemon_safe(jv_str(jv_get(d, CONTROL_KEY_ERROR), "?"), b, sizeof(b)));
                        return CTL_ERR_REFUSED;
                }
                next = jv_bool(jv_get(d, CONTROL_KEY_TRUNCATED), false) ? jv_str(jv_get(d, CONTROL_KEY_NEXT), NULL)
                                                                         : NULL;
                if (next && after && strcmp(next, after) == 0)
                        next = NULL;       /* no progress: stop rather than ask for ever */
                free(after);
                after = next ? strdup(next) : NULL;
                if (next && !after)
                        return -ENOMEM;
                if (!all)
                        all = TAKE_PTR(d);
                else if (append_items(all, d, "cgroups") < 0 || append_items(all, d, "processes") < 0 ||
                         append_items(all, d, "subtrees_walked") < 0)
                        return -ENOMEM;
                if (!after)
                        break;
        }
        *ret = TAKE_PTR(all);
        return 0;
}

/* A parsed document written back as JSON (list, merged), without the keys of paging. */
static void jv_write(struct json *j, const struct jv *v, bool top) {
        switch (v->type) {
        case JV_NULL: json_null(j); break;
        case JV_BOOL: json_bool(j, v->b); break;
        case JV_STRING: json_string(j, v->text); break;
        case JV_NUMBER:
                if (strpbrk(v->text, ".eE"))
                        json_double(j, v->num);
                else if (v->text[0] == '-')
                        json_i64(j, strtoll(v->text, NULL, 10));
                else
                        json_u64(j, strtoull(v->text, NULL, 10));
                break;
        case JV_ARRAY:
                json_array_begin(j);
                for (size_t i = 0; i < v->n; i++)
                        jv_write(j, &v->items[i], false);
                json_array_end(j);
                break;
        case JV_OBJECT:
                json_object_begin(j);
                for (size_t i = 0; i < v->n; i++) {
                        if (top && (strcmp(v->keys[i], CONTROL_KEY_TRUNCATED) == 0 ||
                                    strcmp(v->keys[i], CONTROL_KEY_NEXT) == 0))
                                continue;
                        json_key(j, v->keys[i]);
                        jv_write(j, &v->items[i], false);
                }
                json_object_end(j);
                break;
        }
}

static int ctl_daemon_list(const struct daemon_args *a) {
        _cleanup_(jv_freep) struct jv *d = NULL;
        struct json j;
        int r = ctl_daemon_list_all(a, &d);

        if (r < 0)
                return exit_of(r);
        if (a->json) {
                json_init(&j, stdout, false);
                jv_write(&j, d, true);
                json_finish(&j);
        } else
                print_list(d);
        return fflush(stdout) != 0 ? 1 : 0;
}

static void print_explain_cgroup(const struct jv *d) {
        char b1[4096], b2[256];
        const struct jv *nw = jv_get(d, "not_watched");

        printf("cgroup %s: %s\n", ctl_daemon_safe(jv_str(jv_get(d, "cgroup"), "?"), b1, sizeof(b1)),
               ctl_daemon_safe(jv_str(jv_get(d, "explanation"), "?"), b2, sizeof(b2)));
        if (!jv_get(d, "selected"))
                return;
        if (jv_str(jv_get(d, "mode"), NULL))
                printf("  %-18s %s (from %s%s%s)\n", "Mode:", ctl_daemon_safe(jv_str(jv_get(d, "mode"), NULL), b2, 32),
                       ctl_daemon_safe(jv_str(jv_get(d, "mode_source"), "?"), b2 + 32, 64),
                       jv_str(jv_get(d, "config_rule"), NULL) ? ", cgroups = " : "",
                       jv_str(jv_get(d, "config_rule"), NULL) ?
                       ctl_daemon_safe(jv_str(jv_get(d, "config_rule"), NULL), b1, sizeof(b1)) : "");
        else
                printf("  %-18s not opted in\n", "Mode:");
        if (!jv_is_null(jv_get(d, "covers_uid")) && jv_get(d, "covers_uid"))
                printf("  %-18s only the processes uid %" PRIu64 " may ptrace\n", "Covers:",
                       jv_u64(jv_get(d, "covers_uid"), 0));
        printf("  %-18s %s\n", "Selected by walk:", jv_bool(jv_get(d, "selected"), false) ? "yes" : "no");
        printf("  %-18s %" PRIu64 " watched of %" PRIu64 " in cgroup.procs\n", "Processes:",
               jv_u64(jv_get(d, "processes_watched"), 0), jv_u64(jv_get(d, "cgroup_procs"), 0));
        for (size_t i = 0, shown = 0; nw && nw->type == JV_OBJECT && i < nw->n; i++)
                if (jv_u64(&nw->items[i], 0))
                        printf("  %-18s %" PRIu64 " %s\n", shown++ ? "" : "Not watched:", jv_u64(&nw->items[i], 0),
                               ctl_daemon_safe(nw->keys[i], b2, sizeof(b2)));
        if (jv_u64(jv_get(d, "examined"), 0) < jv_u64(jv_get(d, "cgroup_procs"), 0))
                printf("  %-18s the first %" PRIu64 " processes only\n", "Looked at:", jv_u64(jv_get(d, "examined"), 0));
}

int ctl_daemon(const struct daemon_args *a) {
        _cleanup_free_ char *reply = NULL;
        _cleanup_(jv_freep) struct jv *d = NULL;
        char request[CONTROL_REQUEST_MAX];
        size_t len = 0;
        const char *why;
        int r;

        if (a->cmd == CONTROL_LIST)
                return ctl_daemon_list(a);
        if (request_line(a, NULL, request, sizeof(request)) < 0) {
                fprintf(stderr, "numabalancectl: the cgroup path is too long to ask about\n");
                return 1;
        }
        r = ask_parsed(a, request, &reply, &len, &d);
        if (r < 0)
                return exit_of(r);
        if (r > 0) {
                char b[512];
                if (a->json)
                        fwrite(reply, 1, len, stdout);
                fprintf(stderr, "numabalancectl: numabalanced refused the request: %s\n",
                        ctl_daemon_safe(jv_str(jv_get(d, CONTROL_KEY_ERROR), "?"), b, sizeof(b)));
                return CTL_EXIT_REFUSED;
        }
        why = jv_str(jv_get(d, CONTROL_KEY_WHY), "");
        if (a->json)
                fwrite(reply, 1, len, stdout);
        else if (a->cmd == CONTROL_STATUS)
                print_status(d);
        else if (a->cgroup)
                print_explain_cgroup(d);
        else
                print_explain(d);
        if (fflush(stdout) != 0)
                return CTL_EXIT_FAILURE;
        /* explain of what one may not see, or that does not exist, fails. */
        return strcmp(why, CONTROL_WHY_NOT_VISIBLE) == 0 || strcmp(why, CONTROL_WHY_NO_SUCH_PROCESS) == 0 ||
               strcmp(why, CONTROL_WHY_NO_SUCH_CGROUP) == 0 ? CTL_EXIT_NOT_FOUND : 0;
}
