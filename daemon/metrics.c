/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The metrics file (metrics.h). */
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <inttypes.h>
#include <libgen.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "damon.h"
#include "build-config.h"
#include "cleanup.h"
#include "histogram.h"
#include "log.h"
#include "fast-share.h"
#include "metrics.h"
#include "placer.h"
#include "pagesize.h"
#include "migrate.h"
#include "parse.h"
#include "report.h"
#include "page-sampler.h"
#include "source.h"
#include "utf8.h"

/* U+FFFD, the replacement character, in UTF-8. */
#define REPLACEMENT "\xef\xbf\xbd"

/* ---- label values ------------------------------------------------------------- */

/* What a label value shows of the character (n bytes, utf8_seq()) at c, into out (at
 * most 8 bytes): valid UTF-8 as it is; each byte that starts no valid sequence as
 * U+FFFD; a control character but the newline (C0, DEL, C1: a reader of the file may
 * print it on a terminal) as the text \xNN per byte, as the log does. Returns the
 * bytes written; *ret_exact false unless the character was copied as it is. */
static size_t label_char(const unsigned char *c, size_t n, char *out, bool *ret_exact) {
        static const char hex[] = "0123456789abcdef";
        size_t o = 0;

        if (n == 0) {
                memcpy(out, REPLACEMENT, 3);
                *ret_exact = false;
                return 3;
        }
        if (*c == '\n' || !utf8_is_control(utf8_code_point(c, n))) {
                memcpy(out, c, n);
                return n;
        }
        for (size_t i = 0; i < n; i++) {
                out[o++] = '\\';
                out[o++] = 'x';
                out[o++] = hex[c[i] >> 4];
                out[o++] = hex[c[i] & 15];
        }
        *ret_exact = false;
        return o;
}

void metrics_put_label_value(FILE *f, const char *s) {
        const unsigned char *c = (const unsigned char *) (s ? s : "");
        bool exact;

        while (*c) {
                size_t n = utf8_seq(c);
                char t[8];
                size_t len = label_char(c, n, t, &exact);

                for (size_t i = 0; i < len; i++)
                        if (t[i] == '\\')
                                fputs("\\\\", f);
                        else if (t[i] == '"')
                                fputs("\\\"", f);
                        else if (t[i] == '\n')
                                fputs("\\n", f);
                        else
                                fputc(t[i], f);
                c += n ? n : 1;
        }
}

/* s as a label value shows it (label_char()), not escaped for the format: the value
 * the reader of the file sees. malloc'd, or NULL; *ret_exact: nothing was replaced. */
static char *label_text(const char *s, bool *ret_exact) {
        const unsigned char *c = (const unsigned char *) s;
        char *out = malloc(4 * strlen(s) + 1), *o = out;   /* 4 bytes a byte at most */

        *ret_exact = true;
        if (!out)
                return NULL;
        while (*c) {
                size_t n = utf8_seq(c);

                o += label_char(c, n, o, ret_exact);
                c += n ? n : 1;
        }
        *o = 0;
        return out;
}

/* ---- the cgroups of the file ------------------------------------------------------ */

/* One cgroup record as the file shows it, with its processes' sums. */
struct mcg {
        const struct cg_rec *c;
        char *label;               /* label_text() of its path */
        bool exact;                /* its path was valid UTF-8 */
        bool hidden;               /* its label is another's: left out */
        uint64_t *node_bytes;      /* per topology node, its processes at their last scan */
        uint64_t local_bytes;      /* of them, on the nodes each process's threads ran on */
        uint64_t skipped[_REASON_MAX];
};

struct mtable {
        struct mcg *v;             /* in the order of the cgroup records */
        size_t n, n_hidden;        /* hidden: a duplicate label, or past METRICS_CGROUPS_MAX */
        size_t n_nodes;
        uint64_t *node_bytes;      /* n * n_nodes, behind v[i].node_bytes */
};

static void mtable_done(struct mtable *t) {
        for (size_t i = 0; i < t->n; i++)
                free(t->v[i].label);
        free(t->v);
        free(t->node_bytes);
}

/* By label, the exact one first, then in record order. */
static int cmp_label(const void *a, const void *b) {
        const struct mcg *x = *(const struct mcg *const *) a, *y = *(const struct mcg *const *) b;
        int r = strcmp(x->label, y->label);

        if (r != 0)
                return r;
        if (x->exact != y->exact)
                return x->exact ? -1 : 1;
        return (x > y) - (x < y);
}

static int cmp_rec(const void *a, const void *b) {
        const struct mcg *x = *(const struct mcg *const *) a, *y = *(const struct mcg *const *) b;
        return (x->c > y->c) - (x->c < y->c);
}

/* Of the cgroups whose labels are the same, all but the first in cmp_label() order
 * are hidden: one series must not appear twice. by: scratch for n pointers. */
static void hide_duplicates(struct mtable *t, struct mcg **by) {
        for (size_t i = 0; i < t->n; i++)
                by[i] = &t->v[i];
        qsort(by, t->n, sizeof(*by), cmp_label);
        for (size_t i = 1; i < t->n; i++)
                if (strcmp(by[i]->label, by[i - 1]->label) == 0) {
                        by[i]->hidden = true;
                        t->n_hidden++;
                }
}

/* Each process's last scan added to its cgroup's sums: one pass over the processes,
 * not one per cgroup (20,000 cgroups and 2,000 processes are 40 million steps a tick
 * otherwise). by: scratch for n pointers. */
static void sum_processes(const struct manager_view *v, struct mtable *t, struct mcg **by) {
        for (size_t i = 0; i < t->n; i++)
                by[i] = &t->v[i];
        qsort(by, t->n, sizeof(*by), cmp_rec);
        for (size_t k = 0; k < v->procs->n; k++) {
                const struct proc_rec *p = v->procs->v[k];
                struct mcg key = { .c = p->cg }, *kp = &key, **hit;

                if (!p->cg)
                        continue;
                hit = bsearch(&kp, by, t->n, sizeof(*by), cmp_rec);
                if (!hit)
                        continue;
                for (unsigned n = 0; p->node_bytes && n < v->topo->n_nodes; n++)
                        (*hit)->node_bytes[n] += p->node_bytes[n];
                (*hit)->local_bytes += p->local_bytes;
                for (int r = 0; r < _REASON_MAX; r++)
                        (*hit)->skipped[r] += p->skipped_bytes[r];
        }
}

static uint64_t resident(const struct mtable *t, const struct mcg *c) {
        uint64_t sum = 0;

        for (size_t n = 0; n < t->n_nodes; n++)
                sum += c->node_bytes[n];
        return sum;
}

#define METRICS_STR_(x) #x
#define METRICS_STR(x) METRICS_STR_(x)

static const struct mtable *sort_table;

/* The largest first (then in record order). */
static int cmp_resident(const void *a, const void *b) {
        const struct mcg *x = *(const struct mcg *const *) a, *y = *(const struct mcg *const *) b;
        uint64_t rx = resident(sort_table, x), ry = resident(sort_table, y);

        if (rx != ry)
                return rx > ry ? -1 : 1;
        return (x > y) - (x < y);
}

/* At most METRICS_CGROUPS_MAX cgroups in the file, the largest by resident memory:
 * the series of a host stay bounded whatever its tenants create (each cgroup is
 * about 10 series). by: scratch for n pointers. */
static void cap_cgroups(struct mtable *t, struct mcg **by) {
        size_t n = 0;

        for (size_t i = 0; i < t->n; i++)
                if (!t->v[i].hidden && t->v[i].c->seen)
                        by[n++] = &t->v[i];
        if (n <= METRICS_CGROUPS_MAX)
                return;
        /* qsort() takes no context; metrics are written on the event loop alone. */
        sort_table = t;
        qsort(by, n, sizeof(*by), cmp_resident);
        sort_table = NULL;
        for (size_t i = METRICS_CGROUPS_MAX; i < n; i++) {
                by[i]->hidden = true;
                t->n_hidden++;
        }
}

static int mtable_build(const struct manager_view *v, struct mtable *t) {
        _cleanup_free_ struct mcg **by = NULL;
        size_t n_nodes = v->topo->n_nodes ? v->topo->n_nodes : 1;

        *t = (struct mtable) { .n = v->cgs->n, .n_nodes = n_nodes };
        t->v = calloc(t->n ? t->n : 1, sizeof(*t->v));
        t->node_bytes = calloc((t->n ? t->n : 1) * n_nodes, sizeof(*t->node_bytes));
        by = calloc(t->n ? t->n : 1, sizeof(*by));
        if (!t->v || !t->node_bytes || !by)
                goto oom;
        for (size_t i = 0; i < t->n; i++) {
                t->v[i].c = v->cgs->v[i];
                t->v[i].node_bytes = t->node_bytes + i * n_nodes;
                t->v[i].label = label_text(v->cgs->v[i]->path, &t->v[i].exact);
                if (!t->v[i].label)
                        goto oom;
        }
        hide_duplicates(t, by);
        sum_processes(v, t, by);
        cap_cgroups(t, by);
        return 0;
oom:
        mtable_done(t);
        *t = (struct mtable) {};
        return -ENOMEM;
}

/* ---- the families --------------------------------------------------------------- */

static void metric_head(FILE *f, const char *name, const char *type, const char *help) {
        fprintf(f, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, type);
}

/* name{cgroup="..." with the line still open for more labels. */
static void metric_cg(FILE *f, const char *name, const struct mcg *c) {
        fprintf(f, "%s{cgroup=\"", name);
        metrics_put_label_value(f, c->label);
        fputc('"', f);
}

static void put_seconds(FILE *f, uint64_t ns) {
        fprintf(f, "%" PRIu64 ".%09" PRIu64 "\n", ns / 1000000000u, ns % 1000000000u);
}

/* The families renamed in 0.2 (issue 46: a name that says what is counted), each
 * written under its old name too for one release, with "Deprecated" in its HELP. */
#define DEPRECATED(new) "Deprecated, to be removed in the next release: the same as " new "."

/* Per cgroup and node: the resident bytes of its processes at their last scan. */
static void metrics_resident(const struct manager_view *v, const struct mtable *t, const char *name,
                             const char *help, FILE *f) {
        metric_head(f, name, "gauge", help);
        for (size_t i = 0; i < t->n; i++) {
                if (t->v[i].hidden || !t->v[i].c->seen)
                        continue;
                for (unsigned n = 0; n < v->topo->n_nodes; n++) {
                        metric_cg(f, name, &t->v[i]);
                        fprintf(f, ",node=\"%u\"} %" PRIu64 "\n", v->topo->nodes[n].id, t->v[i].node_bytes[n]);
                }
        }
}

static void metrics_locality(const struct manager_view *v, const struct mtable *t, FILE *f) {
        metrics_resident(v, t, "numabalanced_resident_bytes",
                         "Resident bytes of the watched processes of a cgroup on each NUMA node, at their last scan.",
                         f);
        metrics_resident(v, t, "numabalanced_locality_bytes", DEPRECATED("numabalanced_resident_bytes"), f);
        metric_head(f, "numabalanced_local_bytes", "gauge",
                    "Of numabalanced_resident_bytes, the bytes on the nodes each process's threads ran on in its "
                    "last window: divided by their sum, the cgroup's local share.");
        for (size_t i = 0; i < t->n; i++) {
                if (t->v[i].hidden || !t->v[i].c->seen)
                        continue;
                metric_cg(f, "numabalanced_local_bytes", &t->v[i]);
                fprintf(f, "} %" PRIu64 "\n", t->v[i].local_bytes);
        }
}

/* Per cgroup and result: what the daemon passed to move_pages(2), in bytes (the
 * executor counts base pages whatever their mapping, so bytes = pages x the base page
 * size), and, deprecated for one release, in pages as before. */
static const int page_results[] = { MIG_MOVED, MIG_BUSY, MIG_GONE, MIG_REFUSED };

static void metrics_bytes(const struct mtable *t, const char *name, const char *help, FILE *f) {
        metric_head(f, name, "counter", help);
        for (size_t i = 0; i < t->n; i++)
                for (size_t r = 0; r < ELEMENTSOF(page_results) && !t->v[i].hidden; r++) {
                        metric_cg(f, name, &t->v[i]);
                        fprintf(f, ",result=\"%s\"} %" PRIu64 "\n", executor_class_name(page_results[r]),
                                t->v[i].c->pages[page_results[r]] * (uint64_t) page_size());
                }
}

static void metrics_pages(const struct mtable *t, FILE *f) {
        metrics_bytes(t, "numabalanced_migration_bytes_total",
                      "Bytes the daemon passed to move_pages(2), per cgroup and result (moved, busy, gone, "
                      "refused: only moved ones moved).", f);
        metrics_bytes(t, "numabalanced_moved_bytes_total", DEPRECATED("numabalanced_migration_bytes_total"), f);
        metric_head(f, "numabalanced_pages_total", "counter",
                    "Deprecated, to be removed in the next release: numabalanced_migration_bytes_total in base "
                    "pages (numabalanced_page_size_bytes each).");
        for (size_t i = 0; i < t->n; i++)
                for (size_t r = 0; r < ELEMENTSOF(page_results) && !t->v[i].hidden; r++) {
                        metric_cg(f, "numabalanced_pages_total", &t->v[i]);
                        fprintf(f, ",result=\"%s\"} %" PRIu64 "\n", executor_class_name(page_results[r]),
                                t->v[i].c->pages[page_results[r]]);
                }
}

/* Only the reasons with bytes, not 22 series a cgroup whatever they hold.
 * A gauge may leave its zeros out (absent reads as 0 in sum without (reason)); the
 * counters may not: rate() and increase() take a series' first sample as its start,
 * so a counter that appeared at N would never show those N. */
static void metrics_skipped(const struct mtable *t, FILE *f) {
        metric_head(f, "numabalanced_skipped_bytes", "gauge",
                    "Misplaced bytes left alone at the last scan of each process, per cgroup and reason "
                    "(reasons with 0 bytes not written).");
        for (size_t i = 0; i < t->n; i++) {
                if (t->v[i].hidden || !t->v[i].c->seen)
                        continue;
                for (int r = 0; r < _REASON_MAX; r++) {
                        if (r == REASON_NONE || t->v[i].skipped[r] == 0)
                                continue;
                        metric_cg(f, "numabalanced_skipped_bytes", &t->v[i]);
                        fprintf(f, ",reason=\"%s\"} %" PRIu64 "\n", plan_reason_name(r), t->v[i].skipped[r]);
                }
        }
}

/* Per selected cgroup: its mode, as a label of an always-1 gauge (a mode change
 * replaces one series, not every series of the cgroup), so that rules can keep to the
 * cgroups in balance mode: an advise cgroup is not moved, its memory not local on
 * purpose. */
static void metrics_cgroup_info(const struct mtable *t, FILE *f) {
        metric_head(f, "numabalanced_cgroup_info", "gauge",
                    "An opted-in cgroup selected at the last tick, with its mode (balance or advise); always 1.");
        for (size_t i = 0; i < t->n; i++) {
                if (t->v[i].hidden || !t->v[i].c->seen)
                        continue;
                metric_cg(f, "numabalanced_cgroup_info", &t->v[i]);
                fprintf(f, ",mode=\"%s\"} 1\n", config_cg_mode_name(t->v[i].c->mode));
        }
}

/* Per cgroup where a share of the fast tier is set (fast-use.h): what it holds on each
 * fast node at the tick's read, against its share there. */
static void metrics_fast_share(const struct manager_view *v, const struct mtable *t, FILE *f) {
        static const char *const names[] = { "numabalanced_fast_share_bytes", "numabalanced_fast_held_bytes" };

        metric_head(f, names[0], "gauge", "The share of each fast node a cgroup keeps from other cgroups' "
                                          "promotions (set where it is set), in bytes.");
        metric_head(f, names[1], "gauge", "What a cgroup with a share holds on each fast node (memory.numa_stat: "
                                          "anon and file), in bytes.");
        for (size_t i = 0; i < t->n; i++) {
                const struct cg_rec *c = t->v[i].c;

                if (t->v[i].hidden || !c->seen || !c->share_by || strcmp(c->share_by, c->path) != 0 ||
                    !c->fast_used || c->fast_n != v->topo->n_nodes || c->fast_read < 0)
                        continue;
                for (unsigned n = 0; n < v->topo->n_nodes; n++) {
                        if (v->topo->nodes[n].slow)
                                continue;
                        metric_cg(f, names[0], &t->v[i]);
                        fprintf(f, ",node=\"%u\"} %" PRIu64 "\n", v->topo->nodes[n].id,
                                fast_share_bytes(v->topo->nodes[n].mem_total_kb, c->fast_share_pct));
                        metric_cg(f, names[1], &t->v[i]);
                        fprintf(f, ",node=\"%u\"} %" PRIu64 "\n", v->topo->nodes[n].id, c->fast_used[n]);
                }
        }
}

/* Per cgroup: CPU time by stage, and the processes watched. */
static void metrics_cgroup_costs(const struct mtable *t, FILE *f) {
        metric_head(f, "numabalanced_cpu_seconds_total", "counter",
                    "CPU time the daemon spent on each cgroup, by stage (read, decide, migrate, walk, bookkeeping, "
                    "report).");
        for (size_t i = 0; i < t->n; i++)
                for (int s = 0; s < _STAGE_MAX && !t->v[i].hidden; s++) {
                        metric_cg(f, "numabalanced_cpu_seconds_total", &t->v[i]);
                        fprintf(f, ",stage=\"%s\"} ", report_stage_name(s));
                        put_seconds(f, t->v[i].c->cost_ns[s]);
                }

        metric_head(f, "numabalanced_processes", "gauge", "Processes watched in each opted-in cgroup.");
        for (size_t i = 0; i < t->n; i++) {
                if (t->v[i].hidden || !t->v[i].c->seen)
                        continue;
                metric_cg(f, "numabalanced_processes", &t->v[i]);
                fprintf(f, "} %u\n", t->v[i].c->n_procs);
        }
}

/* The daemon's CPU time that no opted-in cgroup carries: the walk of subtrees that
 * did not opt in (by top-level cgroup; one whose path is not valid UTF-8 is left out
 * and counted as hidden: only root makes top-level cgroups), its start, the rest. */
static size_t metrics_daemon_costs(const struct manager_view *v, FILE *f) {
        uint64_t process = clock_now_ns(CLOCK_PROCESS_CPUTIME_ID);
        size_t hidden = 0;

        metric_head(f, "numabalanced_walk_cpu_seconds_total", "counter",
                    "CPU time of the cgroup tree walk on cgroups that did not opt in, by the top-level cgroup "
                    "they lie in.");
        for (size_t i = 0; i < v->cost->n_subtrees; i++) {
                bool exact;
                _cleanup_free_ char *text = label_text(v->cost->subtrees[i]->path, &exact);

                if (!text || !exact) {
                        hidden++;
                        continue;
                }
                fputs("numabalanced_walk_cpu_seconds_total{subtree=\"", f);
                metrics_put_label_value(f, text);
                fputs("\"} ", f);
                put_seconds(f, v->cost->subtrees[i]->walk_ns);
        }
        metric_head(f, "numabalanced_daemon_cpu_seconds_total", "counter", "CPU time of the daemon in all.");
        fputs("numabalanced_daemon_cpu_seconds_total ", f);
        put_seconds(f, process);
        metric_head(f, "numabalanced_startup_cpu_seconds", "gauge", "CPU time of the daemon's start.");
        fputs("numabalanced_startup_cpu_seconds ", f);
        put_seconds(f, v->cost->startup_cpu_ns);
        metric_head(f, "numabalanced_unattributed_cpu_seconds_total", "counter",
                    "CPU time of the daemon charged to no cgroup since its start (the control socket, ticks with "
                    "nothing opted in).");
        fputs("numabalanced_unattributed_cpu_seconds_total ", f);
        put_seconds(f, v->cost->unattributed_ns);
        return hidden;
}

/* A histogram in the text format: cumulative _bucket{le} lines ending at +Inf (the
 * count), then _sum in seconds and _count. */
static void metric_histogram(FILE *f, const char *name, const char *help, const struct histogram *h,
                             const struct histogram_bounds *b) {
        uint64_t cumulative = 0;

        metric_head(f, name, "histogram", help);
        for (size_t i = 0; i < b->n; i++) {
                cumulative += h->bucket[i];
                /* Bounds are whole ns: %.9g gives 0.0001, 0.005, 2.5, 30. */
                fprintf(f, "%s_bucket{le=\"%.9g\"} %" PRIu64 "\n", name, (double) b->ns[i] / 1e9, cumulative);
        }
        fprintf(f, "%s_bucket{le=\"+Inf\"} %" PRIu64 "\n", name, h->count);
        fprintf(f, "%s_sum ", name);
        put_seconds(f, h->sum_ns);
        fprintf(f, "%s_count %" PRIu64 "\n", name, h->count);
}

/* The daemon as a whole: ticks, the sampling source and chain, page samples, the
 * cgroups left out of the file. */
/* Thread placement (placer.h): counts since start; all 0 when it is not enabled. */
static void metrics_placement(const struct manager_view *v, FILE *f) {
        const struct placer_counters *pc = v->placer ? placer_counters(v->placer) : NULL;

        metric_head(f, "numabalanced_placements_total", "counter",
                    "Processes of place cgroups whose busy threads were placed on a node (their CPU affinity "
                    "narrowed to its CPUs).");
        fprintf(f, "numabalanced_placements_total %" PRIu64 "\n", pc ? pc->placements : 0);
        metric_head(f, "numabalanced_placements_undone_total", "counter",
                    "Placements undone: released (the node lost room), the process left place (opt-out), a "
                    "clean stop. Those a crash left are counted by thread at the next start "
                    "(numabalanced_threads_given_back_total{reason=\"recovered\"}).");
        fprintf(f, "numabalanced_placements_undone_total %" PRIu64 "\n", pc ? pc->placements_undone : 0);
        metric_head(f, "numabalanced_threads_placed", "gauge", "Threads whose CPU affinity the daemon narrows now.");
        fprintf(f, "numabalanced_threads_placed %zu\n", placer_threads_held(v->placer));
        metric_head(f, "numabalanced_threads_given_back_total", "counter",
                    "Threads given back the affinity they had before the daemon placed them, by reason: released "
                    "(the node lost room), opt-out, stop, recovered (at start, after a crash).");
        for (int u = 0; u < _PLACER_UNDO_MAX; u++)
                fprintf(f, "numabalanced_threads_given_back_total{reason=\"%s\"} %" PRIu64 "\n",
                        placer_undo_name((enum placer_undo) u), pc ? pc->undone[u] : 0);
        metric_head(f, "numabalanced_threads_restored_total", "counter",
                    "Deprecated, to be removed in the next release: numabalanced_threads_given_back_total, its "
                    "label why.");
        for (int u = 0; u < _PLACER_UNDO_MAX; u++)
                fprintf(f, "numabalanced_threads_restored_total{why=\"%s\"} %" PRIu64 "\n",
                        placer_undo_name((enum placer_undo) u), pc ? pc->undone[u] : 0);
        metric_head(f, "numabalanced_threads_left_alone_total", "counter",
                    "Placed threads whose application changed their affinity since: never touched again.");
        fprintf(f, "numabalanced_threads_left_alone_total %" PRIu64 "\n", pc ? pc->threads_left_alone : 0);
        metric_head(f, "numabalanced_threads_not_permitted_total", "counter",
                    "Threads the kernel refused to narrow (EPERM: another user's threads without CAP_SYS_NICE); "
                    "their process is tried again after a back-off.");
        fprintf(f, "numabalanced_threads_not_permitted_total %" PRIu64 "\n", pc ? pc->not_permitted : 0);
        metric_head(f, "numabalanced_placements_advised_total", "counter",
                    "Placements the daemon would have made in advise cgroups (or a dry run).");
        fprintf(f, "numabalanced_placements_advised_total %" PRIu64 "\n", pc ? pc->would_place : 0);
}

/* Processes that share memory (share-groups.h): the groups now, the shared bytes moved
 * and those the check held back, by why (share-check.h). */
static void metrics_shared(const struct manager_view *v, FILE *f) {
        metric_head(f, "numabalanced_share_groups", "gauge",
                    "Groups of watched processes of one owner that map the same shared memory, at the last tick.");
        fprintf(f, "numabalanced_share_groups %" PRIu64 "\n", v->counters->share_groups);
        metric_head(f, "numabalanced_shared_moved_bytes_total", "counter",
                    "Bytes of a group's shared memory moved (MPOL_MF_MOVE_ALL, every mapper a member).");
        fprintf(f, "numabalanced_shared_moved_bytes_total %" PRIu64 "\n", v->counters->shared_moved_bytes);
        metric_head(f, "numabalanced_shared_held_bytes_total", "counter",
                    "Bytes of a group's shared memory the check before moving held back, by reason.");
        for (unsigned r = 0; r < _SHARE_FAIL_MAX; r++)
                fprintf(f, "numabalanced_shared_held_bytes_total{reason=\"%s\"} %" PRIu64 "\n",
                        share_check_fail_name(r), v->counters->shared_held_bytes[r]);
}

/* DAMON's part: its kdamonds and what their hot regions added to the evidence. */
static void metrics_damon(const struct manager_view *v, FILE *f) {
        struct damon_stats ds;

        damon_get_stats(v->damon, &ds);
        metric_head(f, "numabalanced_damon_kdamonds", "gauge",
                    "Kdamonds the daemon runs now (DAMON evidence for promotion; 0 when not in use).");
        fprintf(f, "numabalanced_damon_kdamonds %u\n", ds.running);
        metric_head(f, "numabalanced_damon_slots_freed_total", "counter",
                    "Kdamond slots given up because the kdamond failed to start or stopped by itself "
                    "(its process asks again later).");
        fprintf(f, "numabalanced_damon_slots_freed_total %" PRIu64 "\n", ds.slots_freed);
        metric_head(f, "numabalanced_damon_regions_total", "counter",
                    "Hot regions read from DAMON (tried regions of a stat scheme, nr_accesses >= 1).");
        fprintf(f, "numabalanced_damon_regions_total %" PRIu64 "\n", ds.regions);
        metric_head(f, "numabalanced_damon_pages_total", "counter",
                    "Base pages of slow VMAs in DAMON's hot regions: counted as evidence, or past the "
                    "per-read cap (capped).");
        fprintf(f, "numabalanced_damon_pages_total{result=\"counted\"} %" PRIu64 "\n",
                v->counters->damon_pages);
        fprintf(f, "numabalanced_damon_pages_total{result=\"capped\"} %" PRIu64 "\n",
                v->counters->damon_capped);
        metric_head(f, "numabalanced_damon_reads_dropped_total", "counter",
                    "DAMON reads not counted, by reason: no-node (no fast node to credit: the threads' CPU time "
                    "spread or on a slow node), evidence-full (the process's evidence already full).");
        fprintf(f, "numabalanced_damon_reads_dropped_total{reason=\"no-node\"} %" PRIu64 "\n",
                v->counters->damon_no_node);
        fprintf(f, "numabalanced_damon_reads_dropped_total{reason=\"evidence-full\"} %" PRIu64 "\n",
                v->counters->damon_full);
        metric_head(f, "numabalanced_damon_reads_skipped_total", "counter",
                    "Deprecated, to be removed in the next release: numabalanced_damon_reads_dropped_total, its "
                    "reasons spelled no_node and evidence_full.");
        fprintf(f, "numabalanced_damon_reads_skipped_total{reason=\"no_node\"} %" PRIu64 "\n",
                v->counters->damon_no_node);
        fprintf(f, "numabalanced_damon_reads_skipped_total{reason=\"evidence_full\"} %" PRIu64 "\n",
                v->counters->damon_full);
}

/* Page-level sampling: where samples come from, how many were counted, dropped or
 * refused, and what they promoted (DAMON's part between). */
static void metrics_sampling(const struct manager_view *v, FILE *f) {
        metric_head(f, "numabalanced_sampling_source_info", "gauge",
                    "Where the daemon learns which node each thread runs on, as a label; always 1.");
        fputs("numabalanced_sampling_source_info{source=\"", f);
        metrics_put_label_value(f, v->source ? v->source->name : "none");
        fputs("\"} 1\n", f);
        metric_head(f, "numabalanced_sampling_chain_info", "gauge",
                    "The whole sampling chain in use (pmu+bpf, pmu+proc, bpf, proc), as a label; always 1.");
        fputs("numabalanced_sampling_chain_info{chain=\"", f);
        metrics_put_label_value(f, v->source ? page_sampler_chain(v->source, v->pages) : "none");
        fputs("\"} 1\n", f);
        metric_head(f, "numabalanced_page_samples_total", "counter",
                    "Memory-access samples counted by page-level sampling (0 when it is off).");
        fprintf(f, "numabalanced_page_samples_total %" PRIu64 "\n", v->counters->page_samples);
        metric_head(f, "numabalanced_promoted_bytes_total", "counter",
                    "Bytes moved by promotions: hot pages of mappings with pages on a slow node (a lower memory "
                    "tier), moved to the node whose CPUs touched them.");
        fprintf(f, "numabalanced_promoted_bytes_total %" PRIu64 "\n", v->counters->promoted_bytes);
        metric_head(f, "numabalanced_demoted_bytes_total", "counter",
                    "Bytes moved by the exchange: cold pages of opted-in processes moved off a full fast node "
                    "to a slow one, as many as promotions held at its floor wanted.");
        fprintf(f, "numabalanced_demoted_bytes_total %" PRIu64 "\n", v->counters->demoted_bytes);
        metrics_shared(v, f);
        metrics_damon(v, f);
        metric_head(f, "numabalanced_page_samples_dropped_total", "counter",
                    "Page-level samples dropped before they were counted: unmapped, at an address outside every "
                    "mapping of the process its last full read found.");
        fprintf(f, "numabalanced_page_samples_dropped_total{reason=\"unmapped\"} %" PRIu64 "\n",
                v->counters->page_samples_unmapped);
        metric_head(f, "numabalanced_sampling_refused_total", "counter",
                    "Threads (software sampling) or processes (PMU sampling) not sampled when they asked: their "
                    "owner held its share of the slots (TASK_SAMPLE_MAX_THREADS threads, 1,024 processes).");
        fprintf(f, "numabalanced_sampling_refused_total{reason=\"quota\"} %" PRIu64 "\n",
                v->counters->sampling_refused);
}

static void metrics_daemon(const struct manager_view *v, const struct mtable *t, size_t hidden, FILE *f) {
        metric_head(f, "numabalanced_build_info", "gauge", "The daemon's version, as a label; always 1.");
        fputs("numabalanced_build_info{version=\"", f);
        metrics_put_label_value(f, PACKAGE_VERSION);
        fputs("\"} 1\n", f);
        if (v->counters->kernel_numa_balancing >= 0) {
                metric_head(f, "numabalanced_kernel_numa_balancing", "gauge",
                            "kernel.numa_balancing at the last tick: 0 off, 1 the kernel balances (then memory "
                            "whose policy asks for it is the kernel's), 2 memory tiering, 3 both.");
                fprintf(f, "numabalanced_kernel_numa_balancing %" PRId64 "\n", v->counters->kernel_numa_balancing);
        }
        /* The unit of the deprecated numabalanced_pages_total: 4 KiB on x86-64, up to
         * 64 KiB on arm64. */
        metric_head(f, "numabalanced_page_size_bytes", "gauge", "The kernel's base page size.");
        fprintf(f, "numabalanced_page_size_bytes %zu\n", page_size());
        metric_head(f, "numabalanced_last_tick_seconds", "gauge",
                    "Wall time of the last tick (every tick's: the histogram numabalanced_tick_seconds).");
        fputs("numabalanced_last_tick_seconds ", f);
        put_seconds(f, v->counters->last_tick_ns);
        metric_head(f, "numabalanced_tick_duration_seconds", "gauge", DEPRECATED("numabalanced_last_tick_seconds"));
        fputs("numabalanced_tick_duration_seconds ", f);
        put_seconds(f, v->counters->last_tick_ns);
        metric_histogram(f, "numabalanced_tick_seconds", "Wall time of each tick.", &v->counters->ticks,
                         &histogram_tick_bounds);
        metric_histogram(f, "numabalanced_move_call_seconds",
                         "Wall time of each move_pages(2) call that moved pages (its queries not counted).",
                         &v->counters->move_calls, &histogram_move_call_bounds);
        metrics_placement(v, f);
        metric_head(f, "numabalanced_ticks_total", "counter", "Ticks run since the daemon started.");
        fprintf(f, "numabalanced_ticks_total %" PRIu64 "\n", v->counters->tick);
        metric_head(f, "numabalanced_growth_scans_total", "counter",
                    "Scans of settled processes brought forward because they grew (new memory to place).");
        fprintf(f, "numabalanced_growth_scans_total %" PRIu64 "\n", v->counters->growth_scans);
        metric_head(f, "numabalanced_config_last_reload_successful", "gauge",
                    "1 if the last reload of the configuration was applied (or none was asked for), 0 if it "
                    "was refused: the daemon runs on the configuration it had.");
        fprintf(f, "numabalanced_config_last_reload_successful %d\n", !v->counters->last_reload_failed);
        metric_head(f, "numabalanced_react_scans_total", "counter",
                    "Processes scanned on their own after one of their threads ran on another node.");
        fprintf(f, "numabalanced_react_scans_total %" PRIu64 "\n", v->counters->react_scans);
        metric_head(f, "numabalanced_sampled_scans_total", "counter",
                    "Scans of settled processes with a huge mapping that sampled its pages instead of "
                    "reading numa_maps (huge_vma).");
        fprintf(f, "numabalanced_sampled_scans_total %" PRIu64 "\n", v->counters->sampled_scans);
        metric_head(f, "numabalanced_quarantines_total", "counter",
                    "Processes quarantined for 10 minutes because a read of their /proc files or memory "
                    "overran its deadline (numabalanced(8), LIMITS).");
        fprintf(f, "numabalanced_quarantines_total %" PRIu64 "\n", v->counters->quarantines);
        metric_head(f, "numabalanced_reads_deferred_total", "counter",
                    "Scans not started because the owner has a read that overran, or no reader thread was free.");
        fprintf(f, "numabalanced_reads_deferred_total %" PRIu64 "\n", v->counters->reads_deferred);
        metrics_sampling(v, f);
        metric_head(f, "numabalanced_metrics_cgroups_hidden", "gauge",
                    "Cgroups left out of this file: their path, made valid UTF-8, is another one's, or they are "
                    "past the largest " METRICS_STR(METRICS_CGROUPS_MAX) " by resident memory.");
        fprintf(f, "numabalanced_metrics_cgroups_hidden %zu\n", t->n_hidden + hidden);
}

int metrics_write(const struct manager_view *v, FILE *f) {
        struct mtable t;
        int r;

        r = mtable_build(v, &t);
        if (r < 0)
                return r;
        metrics_locality(v, &t, f);
        metrics_pages(&t, f);
        metrics_skipped(&t, f);
        metrics_cgroup_info(&t, f);
        metrics_fast_share(v, &t, f);
        metrics_cgroup_costs(&t, f);
        metrics_daemon(v, &t, metrics_daemon_costs(v, f), f);
        mtable_done(&t);
        fflush(f);
        return ferror(f) ? -EIO : 0;
}

/* ---- the file ------------------------------------------------------------------- */

/* The temporary file beside path, opened: mode METRICS_FILE_MODE, or with group gid
 * ((gid_t) -1: none asked) METRICS_FILE_MODE_GROUP, the group set if it can (else
 * *ret_group_error). */
static int open_temporary(const char *path, gid_t gid, char **ret_tmp, int *ret_group_error) {
        _cleanup_free_ char *dir_copy = strdup(path), *base_copy = strdup(path), *tmp = NULL;
        _cleanup_close_ int fd = -1;

        if (!dir_copy || !base_copy)
                return -ENOMEM;
        if (asprintf(&tmp, "%s/.%s.XXXXXX", dirname(dir_copy), basename(base_copy)) < 0) {
                tmp = NULL;
                return -ENOMEM;
        }
        fd = mkostemp(tmp, O_CLOEXEC);
        if (fd < 0)
                return -errno;
        /* Without CAP_CHOWN this works for a group the daemon is a member of. */
        *ret_group_error = 0;
        if (gid != (gid_t) -1 && fchown(fd, (uid_t) -1, gid) < 0)
                *ret_group_error = -errno;
        if (fchmod(fd, gid != (gid_t) -1 ? METRICS_FILE_MODE_GROUP : METRICS_FILE_MODE) < 0) {
                int r = -errno;
                (void) unlink(tmp);
                return r;
        }
        *ret_tmp = TAKE_PTR(tmp);
        return TAKE_FD(fd);
}

int metrics_write_file(const struct manager_view *v, const char *path, gid_t gid, int *ret_group_error) {
        _cleanup_free_ char *tmp = NULL;
        int group_error = 0, fd, r;
        FILE *f;

        fd = open_temporary(path, gid, &tmp, &group_error);
        if (fd < 0)
                return fd;
        f = fdopen(fd, "w");
        if (!f) {
                r = -errno;
                close(fd);
                goto fail;
        }
        r = metrics_write(v, f);
        if (fclose(f) != 0 && r >= 0)
                r = -errno;
        if (r >= 0 && rename(tmp, path) < 0)
                r = -errno;
        if (r < 0)
                goto fail;
        if (ret_group_error)
                *ret_group_error = group_error;
        return 0;
fail:
        (void) unlink(tmp);
        return r;
}

/* The gid of group (a name or a number), remembered in s for as long as the name
 * stays the same. -ENOENT: no such group. */
static int resolve_group(struct metrics_state *s, const char *group, gid_t *ret) {
        struct group gr, *res = NULL;
        char buf[16384];
        uint64_t v;
        int r;

        if (s->group && strcmp(s->group, group) == 0) {
                *ret = s->gid;
                return 0;
        }
        if (parse_u64(group, 10, UINT32_MAX - 1, &v) == 0)
                *ret = (gid_t) v;
        else {
                r = getgrnam_r(group, &gr, buf, sizeof(buf), &res);
                if (r != 0 || !res)
                        return r != 0 ? -r : -ENOENT;
                *ret = res->gr_gid;
        }
        free(s->group);
        s->group = strdup(group);
        s->gid = *ret;
        return 0;
}

/* The group's failures, logged when they change. */
static void log_group(const char *path, const char *group, int r, bool resolved, struct metrics_state *s) {
        if (r < 0 && r != s->group_error) {
                if (!resolved)
                        log_warning_errno(r, "metrics_group=%s: no such group (%m); %s keeps the group it is created "
                                          "with, which node_exporter may not read", group, path);
                else
                        log_warning_errno(r, "Failed to give %s the group %s, ignoring: %m. Without CAP_CHOWN the "
                                          "daemon may only give it a group it is a member of: add "
                                          "SupplementaryGroups=%s to the unit in a drop-in", path, group, group);
        } else if (r >= 0 && s->group_error)
                log_info("%s has the group %s again", path, group);
        s->group_error = r < 0 ? r : 0;
}

void metrics_update_file(const struct manager_view *v, const char *path, const char *group, struct metrics_state *s) {
        gid_t gid = (gid_t) -1;
        int r, gr = 0;
        bool resolved = true;

        if (!path || !path[0])
                return;
        if (group && group[0]) {
                gr = resolve_group(s, group, &gid);
                resolved = gr >= 0;
        }
        r = metrics_write_file(v, path, gid, resolved ? &gr : NULL);
        if (r < 0 && r != s->error)
                log_warning_errno(r, "Failed to write the metrics to %s, ignoring: %m", path);
        else if (r >= 0 && s->error)
                log_info("Writing the metrics to %s again", path);
        s->error = r < 0 ? r : 0;
        if (r >= 0 && group && group[0])
                log_group(path, group, gr, resolved, s);
}

void metrics_state_done(struct metrics_state *s) {
        free(s->group);
        s->group = NULL;
}
