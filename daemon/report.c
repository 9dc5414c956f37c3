/* SPDX-License-Identifier: GPL-2.0-or-later */
/* report: JSON views of the manager's state and the Prometheus metrics file. */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <libgen.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include "damon.h"
#include "clock.h"
#include "build-config.h"
#include "json.h"
#include "kernel-balancing.h"
#include "log.h"
#include "migrate.h"
#include "move-budget.h"
#include "nodemask.h"
#include "parse.h"
#include "proc.h"
#include "fast-share.h"
#include "report.h"
#include "share-groups.h"
#include "caps.h"
#include "control-protocol.h"
#include "control-request.h"
#include "creds.h"
#include "page-sampler.h"
#include "placer.h"
#include "source.h"

static const char *const stage_names[_STAGE_MAX] = {
        [STAGE_READ] = "read",
        [STAGE_DECIDE] = "decide",
        [STAGE_MIGRATE] = "migrate",
        [STAGE_WALK] = "walk",
        [STAGE_BOOKKEEPING] = "bookkeeping",
        [STAGE_REPORT] = "report",
};

static const char *const source_names[] = {
        [CG_FROM_NONE] = "none",
        [CG_FROM_CONFIG] = "config",
        [CG_FROM_TRUSTED] = "trusted.numabalanced",
        [CG_FROM_USER] = "user.numabalanced",
};


const char *report_stage_name(enum stage s) {
        return (unsigned) s < ELEMENTSOF(stage_names) ? stage_names[s] : "?";
}

static const char *source_name(enum cg_source s) {
        return (unsigned) s < ELEMENTSOF(source_names) ? source_names[s] : "?";
}

bool report_cg_visible(const struct cg_rec *c, uid_t uid) {
        return uid == 0 || (c && c->owner == uid);
}

/* ---- who may see which process ------------------------------------------------- */

/* The one user other than root who may see p now (creds_ptrace_user()), or
 * CREDS_NOBODY: read now, not taken from the last scan, since a process can become
 * another user's since (a setuid exec) or stop being dumpable. */
static uid_t may_see_now(const struct manager_view *v, const struct proc_rec *p) {
        struct proc_creds c;

        if (creds_read(v->proc_root, p->pid, &c) < 0 || c.stat.starttime != p->starttime)
                return CREDS_NOBODY;
        return creds_ptrace_user(&c);
}

struct seen_entry {
        pid_t pid;
        bool known;                /* uid read this tick */
        uid_t uid;                 /* may_see_now() */
        uint64_t starttime;
};

struct report_seen {
        uint64_t tick;             /* counters.tick the entries are of */
        bool built;
        struct seen_entry *v;      /* sorted by pid, as the records */
        size_t n;
};

struct report_seen *report_seen_new(void) {
        return calloc(1, sizeof(struct report_seen));
}

void report_seen_free(struct report_seen *s) {
        if (!s)
                return;
        free(s->v);
        free(s);
}

static struct seen_entry *seen_find(const struct report_seen *s, pid_t pid) {
        size_t lo = 0, hi = s->n;

        while (lo < hi) {
                size_t mid = lo + (hi - lo) / 2;
                if (s->v[mid].pid == pid)
                        return &s->v[mid];
                if (s->v[mid].pid < pid)
                        lo = mid + 1;
                else
                        hi = mid;
        }
        return NULL;
}

/* The entries again from the records (both sorted by pid), of the processes a user
 * other than root may be asking about (a user sees only those of its own real uid at
 * the last scan); keep: what is known of the same processes stays. Records made since
 * the last build (admitted while a long tick served the socket) are why a build
 * happens within a tick: at most once a request. Returns false out of memory. */
static bool seen_build(struct report_seen *s, const struct manager_view *v, bool keep) {
        const struct proc_records *r = v->procs;
        struct seen_entry *n = NULL;
        size_t k = 0, j = 0;

        if (r->n && !(n = calloc(r->n, sizeof(*n))))
                return false;
        for (size_t i = 0; i < r->n; i++) {
                const struct proc_rec *p = r->v[i];

                if (p->uid == 0)
                        continue;
                n[k] = (struct seen_entry) { .pid = p->pid, .starttime = p->starttime };
                while (keep && j < s->n && s->v[j].pid < p->pid)
                        j++;
                if (keep && j < s->n && s->v[j].pid == p->pid && s->v[j].starttime == p->starttime) {
                        n[k].known = s->v[j].known;
                        n[k].uid = s->v[j].uid;
                }
                k++;
        }
        free(s->v);
        s->v = n;
        s->n = k;
        s->tick = v->counters->tick;
        s->built = true;
        return true;
}

/* may_see_now() of p, read once a tick. */
static uid_t seen_uid(struct report_seen *s, const struct manager_view *v, const struct proc_rec *p) {
        struct seen_entry *e = NULL;

        if ((s->built && s->tick == v->counters->tick) || seen_build(s, v, false))
                e = seen_find(s, p->pid);
        if ((!e || e->starttime != p->starttime) && seen_build(s, v, true))
                e = seen_find(s, p->pid);
        if (!e || e->starttime != p->starttime)
                return may_see_now(v, p);      /* out of memory */
        if (!e->known) {
                e->uid = may_see_now(v, p);
                e->known = true;
        }
        return e->uid;
}

/* Only the candidates (real uid uid at the last scan: the rule needs it) are read, and
 * only for a request by a user, not root. */
bool report_proc_visible(const struct manager_view *v, const struct proc_rec *p, uid_t uid) {
        if (uid == 0)
                return true;
        if (uid == CREDS_NOBODY || p->uid != uid)
                return false;
        return (v->seen ? seen_uid(v->seen, v, p) : may_see_now(v, p)) == uid;
}

/* The cgroup records the tick of now refers to (opted in at the last tick) that uid
 * may see. */
static size_t n_active_cgs(const struct manager_view *v, uid_t uid) {
        size_t n = 0;
        for (size_t i = 0; i < v->cgs->n; i++)
                n += v->cgs->v[i]->seen && report_cg_visible(v->cgs->v[i], uid);
        return n;
}

/* ---- JSON pieces ---------------------------------------------------------------- */

static void put_pages(struct json *j, const uint64_t pages[_MIG_CLASS_MAX]) {
        json_object_begin(j);
        for (int c = 0; c < _MIG_CLASS_MAX; c++) {
                json_key(j, executor_class_name(c));
                json_u64(j, pages[c]);
        }
        json_object_end(j);
}

static void put_cost(struct json *j, const uint64_t cost[_STAGE_MAX]) {
        uint64_t total = 0;
        json_object_begin(j);
        for (int s = 0; s < _STAGE_MAX; s++) {
                json_key(j, stage_names[s]);
                json_u64(j, cost[s]);
                total += cost[s];
        }
        json_key(j, "total");
        json_u64(j, total);
        json_object_end(j);
}

static void put_node_or_null(struct json *j, int node) {
        if (node >= 0)
                json_i64(j, node);
        else
                json_null(j);
}

static double share(uint64_t part, uint64_t total) {
        return total ? (double) part / (double) total : 0.0;
}

/* The document goes to a memory stream first, so that an allocation failure cannot
 * leave half a document in f. */
static int finish(struct json *j, FILE *mem, char **buf, size_t *len, FILE *f) {
        json_finish(j);
        if (ferror(mem)) {
                fclose(mem);
                free(*buf);
                return -ENOMEM;
        }
        fclose(mem);
        fwrite(*buf, 1, *len, f);
        free(*buf);
        return ferror(f) ? -EIO : 0;
}

#define BEGIN_DOC(j, mem, buf, len)                                     \
        char *buf = NULL;                                               \
        size_t len = 0;                                                 \
        FILE *mem = open_memstream(&buf, &len);                         \
        struct json j;                                                  \
        if (!mem)                                                       \
                return -ENOMEM;                                         \
        json_init(&j, mem, false)

/* Every reply's first key: the version of its layout (docs/ctl-json.md, "schema"), so
 * that a consumer can tell a layout it knows from one it does not. */
static void begin_reply(struct json *j) {
        json_object_begin(j);
        json_key(j, "schema"); json_u64(j, REPORT_SCHEMA);
}

void report_error(FILE *f, const char *msg) {
        struct json j;
        json_init(&j, f, false);
        begin_reply(&j);
        json_key(&j, CONTROL_KEY_ERROR);
        json_string(&j, msg);
        json_object_end(&j);
        json_finish(&j);
}

/* ---- status ------------------------------------------------------------------- */

/* What status counts for uid: for root the daemon's totals, for another uid the sums
 * over the cgroups and processes it may see, so that nothing tells it about another
 * user's (how many there are, what moved there). */
struct status_counts {
        uint64_t cost[_STAGE_MAX];
        uint64_t pages[_MIG_CLASS_MAX];
        size_t n_cgs, n_procs;
};

static void status_counts(const struct manager_view *v, uid_t uid, struct status_counts *c) {
        *c = (struct status_counts) { .n_cgs = n_active_cgs(v, uid) };
        for (size_t i = 0; i < v->cgs->n; i++) {
                if (!report_cg_visible(v->cgs->v[i], uid))
                        continue;
                for (int s = 0; s < _STAGE_MAX; s++)
                        c->cost[s] += v->cgs->v[i]->cost_ns[s];
                for (int k = 0; uid != 0 && k < _MIG_CLASS_MAX; k++)
                        c->pages[k] += v->cgs->v[i]->pages[k];
        }
        if (uid == 0) {
                /* And the cgroups that went (their records are freed). */
                for (int s = 0; s < _STAGE_MAX; s++)
                        c->cost[s] += v->cost->departed_ns[s];
                memcpy(c->pages, v->counters->total_pages, sizeof(c->pages));
                c->n_procs = v->procs->n;
        } else
                for (size_t k = 0; k < v->procs->n; k++)
                        c->n_procs += report_proc_visible(v, v->procs->v[k], uid);
}

/* The daemon's CPU time: in all, at its start, what was charged to cgroups (by
 * stage; of the walk, the part on subtrees not opted in), and the rest. Another uid
 * gets the whole only, and by stage what was charged to the cgroups it may see
 * (cost: status_counts). */
static void put_cpu(struct json *j, const struct manager_view *v, uid_t uid, const uint64_t *cost) {
        uint64_t process = clock_now_ns(CLOCK_PROCESS_CPUTIME_ID);

        if (uid != 0) {
                json_object_begin(j);
                json_key(j, "process"); json_u64(j, process);
                json_key(j, "by_stage"); put_cost(j, cost);
                json_object_end(j);
                return;
        }
        json_object_begin(j);
        json_key(j, "process"); json_u64(j, process);
        json_key(j, "startup"); json_u64(j, v->cost->startup_cpu_ns);
        json_key(j, "by_stage"); put_cost(j, v->cost->total_ns);
        json_key(j, "walk_not_opted_in"); json_u64(j, v->cost->subtree_walk_ns);
        json_key(j, "unattributed"); json_u64(j, cost_unattributed_now(v->cost));
        json_object_end(j);
}

/* The nodes with memory, their kernel memory tier (null: the kernel has none) and
 * whether the daemon takes them as slow (topology.h: configured or by its rule). */
static void put_memory_nodes(struct json *j, const struct topology *t) {
        json_array_begin(j);
        for (unsigned i = 0; t && i < t->n_nodes; i++) {
                const struct topo_node *n = &t->nodes[i];
                if (!n->has_memory)
                        continue;
                json_object_begin(j);
                json_key(j, "node"); json_u64(j, n->id);
                json_key(j, "has_cpus"); json_bool(j, n->has_cpus);
                json_key(j, "tier");
                if (n->tier >= 0)
                        json_u64(j, (uint64_t) n->tier);
                else
                        json_null(j);
                json_key(j, "slow"); json_bool(j, n->slow);
                json_object_end(j);
        }
        json_array_end(j);
}

/* Thread placement (placer.h): whether it runs, and its counts since start. */
static void put_placement_status(struct json *j, const struct manager_view *v) {
        const struct placer_counters *pc = v->placer ? placer_counters(v->placer) : NULL;

        json_object_begin(j);
        json_key(j, "enabled"); json_bool(j, v->placer != NULL);
        json_key(j, "threads_placed_now"); json_u64(j, placer_threads_held(v->placer));
        json_key(j, "placements"); json_u64(j, pc ? pc->placements : 0);
        json_key(j, "threads_placed"); json_u64(j, pc ? pc->threads_placed : 0);
        json_key(j, "placements_undone"); json_u64(j, pc ? pc->placements_undone : 0);
        json_key(j, "threads_restored"); json_u64(j, pc ? pc->threads_restored : 0);
        json_key(j, "threads_restored_by"); json_object_begin(j);
        for (int u = 0; u < _PLACER_UNDO_MAX; u++) {
                json_key(j, placer_undo_name((enum placer_undo) u));
                json_u64(j, pc ? pc->undone[u] : 0);
        }
        json_object_end(j);
        json_key(j, "threads_left_alone"); json_u64(j, pc ? pc->threads_left_alone : 0);
        json_key(j, "would_place"); json_u64(j, pc ? pc->would_place : 0);
        json_key(j, "failed"); json_u64(j, pc ? pc->failed : 0);
        json_key(j, "not_permitted"); json_u64(j, pc ? pc->not_permitted : 0);
        json_object_end(j);
}

/* The config's rules that match no cgroup now, and the keys the last reload did not
 * apply (config-report.h). */
static void put_config_report(struct json *j, const struct config_report *r) {
        json_key(j, "rules_unmatched");
        json_array_begin(j);
        for (size_t i = 0; r && i < r->n_unmatched; i++)
                json_string(j, r->unmatched[i]);
        json_array_end(j);
        json_key(j, "reload_not_applied");
        json_array_begin(j);
        for (size_t i = 0; r && i < r->n_not_applied; i++) {
                json_object_begin(j);
                json_key(j, "key"); json_string(j, r->not_applied[i].key);
                json_key(j, "why"); json_string(j, r->not_applied[i].why);
                json_object_end(j);
        }
        json_array_end(j);
}

int report_status(const struct manager_view *v, uid_t uid, FILE *f) {
        uint64_t knb, now = clock_now_ms();
        struct status_counts sc;
        char cpus[CPUMASK_STRMAX];
        int r;
        BEGIN_DOC(j, mem, buf, len);

        status_counts(v, uid, &sc);

        begin_reply(&j);
        json_key(&j, "version"); json_string(&j, PACKAGE_VERSION);
        json_key(&j, "pid"); json_i64(&j, getpid());
        json_key(&j, "uptime_ms"); json_u64(&j, now > v->counters->started_ms ? now - v->counters->started_ms : 0);
        json_key(&j, "requester_uid"); json_u64(&j, uid);
        json_key(&j, "sampling_source"); json_string(&j, v->source ? v->source->name : NULL);
        json_key(&j, "sampling_chain"); json_string(&j, v->source ? page_sampler_chain(v->source, v->pages) : NULL);
        json_key(&j, "page_sampling"); json_string(&j, page_sampler_name(v->pages));
        {
                struct damon_stats ds;

                damon_get_stats(v->damon, &ds);
                json_key(&j, "damon"); json_string(&j, damon_why(v->damon));
                json_key(&j, "damon_kdamonds"); json_u64(&j, ds.running);
        }
        json_key(&j, "page_samples"); json_u64(&j, v->counters->page_samples);
        json_key(&j, "capabilities_missing"); json_string(&j, caps_missing());
        cpumask_format(&v->cfg->service_cpus, cpus, sizeof(cpus));
        json_key(&j, "service_cpus"); json_string(&j, cpus);
        cpumask_format(&v->service->online, cpus, sizeof(cpus));
        json_key(&j, "service_cpus_online"); json_string(&j, cpus);
        json_key(&j, "service_repins"); json_u64(&j, v->service->repins);
        json_key(&j, "workers"); json_u64(&j, v->migrator ? migrator_n_workers(v->migrator) : 0);
        json_key(&j, "dry_run"); json_bool(&j, v->opts->dry_run);
        r = kernel_balancing_read(v->proc_root, &knb);
        json_key(&j, "kernel_numa_balancing");
        if (r >= 0)
                json_u64(&j, knb);
        else
                json_null(&j);
        json_key(&j, "ticks"); json_u64(&j, v->counters->tick);
        json_key(&j, "tick_interval_ms"); json_u64(&j, v->cfg->tick_ms);
        json_key(&j, "last_tick_ns"); json_u64(&j, v->counters->last_tick_ns);
        json_key(&j, "migration_run_budget_ms"); json_u64(&j, MOVE_BUDGET_RUN_MS);
        json_key(&j, "migration_runs_cut"); json_u64(&j, migrator_runs_cut(v->migrator));
        json_key(&j, "scope"); json_string(&j, uid == 0 ? "all" : "own");
        json_key(&j, "cgroups_watched"); json_u64(&j, sc.n_cgs);
        json_key(&j, "processes_watched"); json_u64(&j, sc.n_procs);
        json_key(&j, "pages"); put_pages(&j, sc.pages);
        json_key(&j, "moved_bytes_last_minute"); json_u64(&j, counters_moved_last_minute(v->counters));
        json_key(&j, "share_groups"); json_u64(&j, v->shares ? v->shares->n_groups : 0);
        json_key(&j, "shared_moved_bytes"); json_u64(&j, v->counters->shared_moved_bytes);
        json_key(&j, "cpu_ns"); put_cpu(&j, v, uid, sc.cost);
        json_key(&j, "memory_nodes"); put_memory_nodes(&j, v->topo);
        json_key(&j, "placement"); put_placement_status(&j, v);
        put_config_report(&j, v->config_report);
        json_object_end(&j);
        return finish(&j, mem, &buf, &len, f);
}

/* ---- list --------------------------------------------------------------------- */

static void put_locality(struct json *j, const struct manager_view *v, const uint64_t *node_bytes) {
        json_array_begin(j);
        for (unsigned i = 0; node_bytes && i < v->topo->n_nodes; i++) {
                json_object_begin(j);
                json_key(j, "node"); json_u64(j, v->topo->nodes[i].id);
                json_key(j, "bytes"); json_u64(j, node_bytes[i]);
                json_object_end(j);
        }
        json_array_end(j);
}

static const char *proc_mode(const struct manager_view *v, const struct proc_rec *p) {
        if (!p->cg)
                return NULL;
        return config_cg_mode_name(cg_mode_shown(p->cg->mode, v->opts->dry_run));
}

/* The processes of list, grouped by cgroup record (and by pid within one), so that a
 * cgroup's sum is one binary search and a walk over its own processes: summing every
 * process for every cgroup was quadratic (20,000 cgroups times 2,000 processes). */
static int cmp_by_cg(const void *a, const void *b) {
        const struct proc_rec *x = *(struct proc_rec *const *) a, *y = *(struct proc_rec *const *) b;
        uintptr_t cx = (uintptr_t) x->cg, cy = (uintptr_t) y->cg;

        if (cx != cy)
                return cx < cy ? -1 : 1;
        return (x->pid > y->pid) - (x->pid < y->pid);
}

/* The first of by_cg (n, sorted by cmp_by_cg) whose cgroup is c, or n. */
static size_t first_of(struct proc_rec *const *by_cg, size_t n, const struct cg_rec *c) {
        size_t lo = 0, hi = n;

        while (lo < hi) {
                size_t mid = lo + (hi - lo) / 2;
                if ((uintptr_t) by_cg[mid]->cg < (uintptr_t) c)
                        lo = mid + 1;
                else
                        hi = mid;
        }
        return lo;
}

/* One cgroup of list; sum: room for one count per node; by_cg: every process, sorted
 * by cmp_by_cg. */
static void put_list_cgroup(struct json *j, const struct manager_view *v, const struct cg_rec *c, uint64_t *sum,
                            struct proc_rec *const *by_cg) {
        uint64_t total = 0, placed = 0;

        memset(sum, 0, v->topo->n_nodes * sizeof(*sum));
        for (size_t k = first_of(by_cg, v->procs->n, c); k < v->procs->n && by_cg[k]->cg == c; k++) {
                if (by_cg[k]->node_bytes)
                        for (unsigned n = 0; n < v->topo->n_nodes; n++)
                                sum[n] += by_cg[k]->node_bytes[n];
                placed += by_cg[k]->place && by_cg[k]->place->placed >= 0;
        }
        for (unsigned n = 0; n < v->topo->n_nodes; n++)
                total += sum[n];
        json_object_begin(j);
        json_key(j, "path"); json_string(j, c->path);
        json_key(j, "active"); json_bool(j, c->seen);
        json_key(j, "mode"); json_string(j, config_cg_mode_name(c->mode));
        json_key(j, "source"); json_string(j, source_name(c->source));
        json_key(j, "owner_uid"); json_u64(j, c->owner);
        json_key(j, "processes"); json_u64(j, c->seen ? c->n_procs : 0);
        json_key(j, "processes_placed"); json_u64(j, placed);
        json_key(j, "total_bytes"); json_u64(j, total);
        json_key(j, "nodes"); put_locality(j, v, sum);
        json_key(j, "pages"); put_pages(j, c->pages);
        json_key(j, "shared_moved_bytes"); json_u64(j, c->shared_moved_bytes);
        json_key(j, "cpu_ns"); put_cost(j, c->cost_ns);
        json_object_end(j);
}

/* A topology index as its node id, or null. */
static void put_node_index(struct json *j, const struct manager_view *v, int idx) {
        put_node_or_null(j, idx >= 0 && (unsigned) idx < v->topo->n_nodes ? (int) v->topo->nodes[idx].id : -1);
}

/* The placement's one word: the reason of the round that decided it last, or why it
 * was not decided; null outside place and advise. */
static const char *placement_word(const struct proc_rec *p) {
        if (!p->place)
                return NULL;
        if (p->place->skip != PLACER_DECIDED)
                return placer_skip_name(p->place->skip);
        return p->place->decided_ms ? thread_place_reason_name(p->place->reason) : NULL;
}

static void put_list_process(struct json *j, const struct manager_view *v, const struct proc_rec *p) {
        json_object_begin(j);
        json_key(j, "pid"); json_i64(j, p->pid);
        json_key(j, "comm"); json_string(j, p->comm);
        json_key(j, "uid"); json_u64(j, p->uid);
        json_key(j, "cgroup"); json_string(j, p->cg ? p->cg->path : NULL);
        json_key(j, "mode"); json_string(j, proc_mode(v, p));
        json_key(j, "scans"); json_u64(j, p->scans);
        json_key(j, "sampled_scans"); json_u64(j, p->sampled_scans);
        json_key(j, "total_bytes"); json_u64(j, p->total_bytes);
        json_key(j, "local_bytes"); json_u64(j, p->local_bytes);
        json_key(j, "local_share"); json_double(j, share(p->local_bytes, p->total_bytes));
        json_key(j, "nodes"); put_locality(j, v, p->node_bytes);
        json_key(j, "hot_node"); put_node_or_null(j, p->hot_node);
        json_key(j, "pages_moved"); json_u64(j, p->moved.pages[MIG_MOVED]);
        json_key(j, "pages"); put_pages(j, p->moved.pages);
        json_key(j, "reason");
        json_string(j, p->reason < _REASON_MAX ? plan_reason_name(p->reason) : NULL);
        json_key(j, "placed_node"); put_node_index(j, v, p->place ? p->place->placed : -1);
        json_key(j, "threads_placed"); json_u64(j, p->place && p->place->placed >= 0 ? p->place->threads_held : 0);
        json_key(j, "placement"); json_string(j, placement_word(p));
        json_key(j, "cpu_ns"); put_cost(j, p->cost_ns);
        json_object_end(j);
}

/* ---- list pages ---- */

/* What one item of list can take at most, so that a page is cut before the item
 * that would take it past CONTROL_REPLY_MAX: JSON escapes a byte to 6 at most
 * (\u00XX), a node's entry is under 64 bytes, and the rest of an item (keys, numbers,
 * the page and cost objects) is well under LIST_ITEM_FIXED. */
#define LIST_ITEM_FIXED 2048
static size_t item_bound(const struct manager_view *v, const char *a, const char *b) {
        return LIST_ITEM_FIXED + 6 * ((a ? strlen(a) : 0) + (b ? strlen(b) : 0)) + 64 * (size_t) v->topo->n_nodes;
}

/* The end of a truncated page: the arrays closed, truncated, and the cursor (an
 * encoded path is 3 bytes a byte at most). */
static size_t tail_bound(const char *key) {
        return 256 + 3 * (key ? strlen(key) : 0);
}

struct page {
        struct json *j;
        FILE *mem;
        char **buf;
        size_t *len;
        bool full;                 /* an item did not fit: the page ends here */
        char section;              /* of the last item written */
        const char *key_path;      /* its key */
        pid_t key_pid;
};

/* Whether an item of bound bytes, whose cursor key is key, still fits in the page;
 * the first item of a page always does (every item is far under the cap). */
static bool page_fits(struct page *pg, size_t bound, const char *key) {
        if (pg->full)
                return false;
        fflush(pg->mem);
        if (pg->section && *pg->len + bound + tail_bound(key) > CONTROL_REPLY_MAX) {
                pg->full = true;
                return false;
        }
        return true;
}

static void page_wrote(struct page *pg, char section, const char *path, pid_t pid) {
        pg->section = section;
        pg->key_path = path;
        pg->key_pid = pid;
}

/* Whether path is prefix or below it ("/" holds everything). */
static bool path_under(const char *path, const char *prefix) {
        size_t n = strlen(prefix);

        if (strcmp(prefix, "/") == 0)
                return true;
        return strncmp(path, prefix, n) == 0 && (path[n] == 0 || path[n] == '/');
}

/* The filters of a list request, with each pid's record (NULL: not watched, or not
 * visible to the requester). */
struct list_filter {
        const struct control_request *req;
        const struct proc_rec *by_pid[CONTROL_FILTERS_MAX];
};

static void filter_init(struct list_filter *lf, const struct manager_view *v, uid_t uid,
                        const struct control_request *req) {
        *lf = (struct list_filter) { .req = req };
        for (size_t i = 0; req && i < req->n_filters; i++)
                if (req->filters[i].pid) {
                        const struct proc_rec *p = proc_records_find(v->procs, req->filters[i].pid);
                        lf->by_pid[i] = p && report_proc_visible(v, p, uid) ? p : NULL;
                }
}

static bool filter_cg(const struct list_filter *lf, const struct cg_rec *c) {
        if (!lf->req || lf->req->n_filters == 0)
                return true;
        for (size_t i = 0; i < lf->req->n_filters; i++) {
                const char *path = control_request_str(lf->req, lf->req->filters[i].path);
                if (path ? path_under(c->path, path) : lf->by_pid[i] && lf->by_pid[i]->cg == c)
                        return true;
        }
        return false;
}

static bool filter_proc(const struct list_filter *lf, const struct proc_rec *p) {
        if (!lf->req || lf->req->n_filters == 0)
                return true;
        for (size_t i = 0; i < lf->req->n_filters; i++) {
                const char *path = control_request_str(lf->req, lf->req->filters[i].path);
                if (path ? p->cg && path_under(p->cg->path, path) : lf->req->filters[i].pid == p->pid)
                        return true;
        }
        return false;
}

static int cmp_cg_path(const void *a, const void *b) {
        return strcmp((*(struct cg_rec *const *) a)->path, (*(struct cg_rec *const *) b)->path);
}

/* The cgroups of this page: visible, selected by the filters, after the cursor, by
 * path. */
static int list_cgroups(struct page *pg, const struct manager_view *v, uid_t uid, const struct list_filter *lf,
                        uint64_t *sum, struct proc_rec *const *by_cg) {
        const struct control_request *req = lf->req;
        const char *after = req && req->after == 'c' ? control_request_str(req, req->after_path) : NULL;
        _cleanup_free_ struct cg_rec **cgs = NULL;
        size_t n = 0;

        if (req && (req->after == 'p' || req->after == 's'))
                return 0;
        cgs = calloc(v->cgs->n ? v->cgs->n : 1, sizeof(*cgs));
        if (!cgs)
                return -ENOMEM;
        for (size_t i = 0; i < v->cgs->n; i++) {
                struct cg_rec *c = v->cgs->v[i];
                if (report_cg_visible(c, uid) && (!after || strcmp(c->path, after) > 0) && filter_cg(lf, c))
                        cgs[n++] = c;
        }
        qsort(cgs, n, sizeof(*cgs), cmp_cg_path);
        for (size_t i = 0; i < n && page_fits(pg, item_bound(v, cgs[i]->path, NULL), cgs[i]->path); i++) {
                put_list_cgroup(pg->j, v, cgs[i], sum, by_cg);
                page_wrote(pg, 'c', cgs[i]->path, 0);
        }
        return 0;
}

static void list_processes(struct page *pg, const struct manager_view *v, uid_t uid, const struct list_filter *lf) {
        const struct control_request *req = lf->req;
        pid_t after = req && req->after == 'p' ? req->after_pid : 0;

        if (pg->full || (req && req->after == 's'))
                return;
        for (size_t k = 0; k < v->procs->n; k++) {
                const struct proc_rec *p = v->procs->v[k];
                if (p->pid <= after || !filter_proc(lf, p))
                        continue;
                if (!page_fits(pg, item_bound(v, p->comm, p->cg ? p->cg->path : NULL), NULL))
                        return;
                if (!report_proc_visible(v, p, uid))
                        continue;
                put_list_process(pg->j, v, p);
                page_wrote(pg, 'p', NULL, p->pid);
        }
}

/* Walked, not opted in: the top-level cgroups' paths are root's to see, and only in a
 * list that is not filtered. */
static void list_subtrees(struct page *pg, const struct manager_view *v, uid_t uid, const struct list_filter *lf) {
        const struct control_request *req = lf->req;
        const char *after = req && req->after == 's' ? control_request_str(req, req->after_path) : NULL;

        if (pg->full || uid != 0 || (req && req->n_filters))
                return;
        for (size_t i = 0; i < v->cost->n_subtrees; i++) {
                const struct subtree_rec *s = v->cost->subtrees[i];
                if (after && strcmp(s->path, after) <= 0)
                        continue;
                if (!page_fits(pg, item_bound(v, s->path, NULL), s->path))
                        return;
                json_object_begin(pg->j);
                json_key(pg->j, "path"); json_string(pg->j, s->path);
                json_key(pg->j, "walk_cpu_ns"); json_u64(pg->j, s->walk_ns);
                json_object_end(pg->j);
                page_wrote(pg, 's', s->path, 0);
        }
}

static void put_cursor(struct page *pg) {
        char next[CONTROL_REQUEST_MAX];

        json_key(pg->j, CONTROL_KEY_TRUNCATED); json_bool(pg->j, pg->full);
        if (!pg->full)
                return;
        json_key(pg->j, CONTROL_KEY_NEXT);
        if (control_request_cursor_format(pg->section, pg->key_path, pg->key_pid, next, sizeof(next)) < 0)
                json_null(pg->j);
        else
                json_string(pg->j, next);
}

int report_list(const struct manager_view *v, uid_t uid, const struct control_request *req, FILE *f) {
        _cleanup_free_ uint64_t *sum = calloc(v->topo->n_nodes ? v->topo->n_nodes : 1, sizeof(*sum));
        _cleanup_free_ struct proc_rec **by_cg = calloc(v->procs->n ? v->procs->n : 1, sizeof(*by_cg));
        struct list_filter lf;
        struct page pg;
        BEGIN_DOC(j, mem, buf, len);

        if (!sum || !by_cg) {
                fclose(mem);
                free(buf);
                return -ENOMEM;
        }
        pg = (struct page) { .j = &j, .mem = mem, .buf = &buf, .len = &len };
        filter_init(&lf, v, uid, req);
        begin_reply(&j);
        json_key(&j, "requester_uid"); json_u64(&j, uid);
        if (v->procs->n) {
                memcpy(by_cg, v->procs->v, v->procs->n * sizeof(*by_cg));
                qsort(by_cg, v->procs->n, sizeof(*by_cg), cmp_by_cg);
        }
        json_key(&j, "cgroups");
        json_array_begin(&j);
        if (list_cgroups(&pg, v, uid, &lf, sum, by_cg) < 0) {
                fclose(mem);
                free(buf);
                return -ENOMEM;
        }
        json_array_end(&j);

        json_key(&j, "processes");
        json_array_begin(&j);
        list_processes(&pg, v, uid, &lf);
        json_array_end(&j);

        json_key(&j, "subtrees_walked");
        json_array_begin(&j);
        list_subtrees(&pg, v, uid, &lf);
        json_array_end(&j);
        put_cursor(&pg);
        json_object_end(&j);
        return finish(&j, mem, &buf, &len, f);
}

/* ---- explain ------------------------------------------------------------------ */

static struct proc_rec *lookup(const struct manager_view *v, pid_t pid) {
        for (size_t i = 0; i < v->procs->n; i++)
                if (v->procs->v[i]->pid == pid)
                        return v->procs->v[i];
        return NULL;
}

static struct cg_rec *lookup_cg(const struct manager_view *v, const char *path) {
        for (size_t i = 0; i < v->cgs->n; i++)
                if (v->cgs->v[i]->seen && strcmp(v->cgs->v[i]->path, path) == 0)
                        return v->cgs->v[i];
        return NULL;
}

/* What a user who may not see the process is told: the same as for a pid that does
 * not exist, so that the answer says nothing about other users' processes. */
static void put_hidden(struct json *j) {
        json_key(j, "visible"); json_bool(j, false);
        json_key(j, CONTROL_KEY_WHY); json_string(j, CONTROL_WHY_NOT_VISIBLE);
        json_key(j, "explanation");
        json_string(j, "no such process, or not yours: a user sees only the processes it may ptrace "
                       "(only root may ask about others)");
}

/* Why a process that is not watched is not: *ret_why and a malloc'd sentence. */
static int unwatched_why(const struct manager_view *v, const struct proc_creds *c, const char *cg, const char **ret_why,
                         char **ret_text) {
        const struct cg_rec *rec = cg ? lookup_cg(v, cg) : NULL;
        int r;

        if (c->stat.flags & PF_KTHREAD_FLAG) {
                *ret_why = "kernel-thread";
                r = asprintf(ret_text, "a kernel thread: it has no memory of its own to move");
        } else if (c->stat.state == 'Z' || c->stat.state == 'X') {
                *ret_why = "zombie";
                r = asprintf(ret_text, "a zombie: it has exited and holds no memory");
        } else if (!cg) {
                *ret_why = "no-cgroup";
                r = asprintf(ret_text, "it is in no cgroup v2 cgroup (no single \"0::\" line in /proc/PID/cgroup)");
        } else if (rec && rec->covers_uid != CGROUP_COVERS_ALL && !creds_belong_to(c, rec->covers_uid)) {
                *ret_why = "not-covered";
                r = asprintf(ret_text, "its cgroup %s is opted in by uid %u's user.numabalanced, which covers only "
                             "the processes uid %u may ptrace; this one is not one of them (its uids, gids, or "
                             "dumpable state say so)", cg, (unsigned) rec->covers_uid, (unsigned) rec->covers_uid);
        } else if (rec) {
                *ret_why = "not-yet-seen";
                r = asprintf(ret_text, "its cgroup %s is opted in, but the process was not there at the last tick; "
                             "it is picked up at the next one", cg);
        } else {
                *ret_why = "not-opted-in";
                r = asprintf(ret_text, "its cgroup %s is not opted in: no trusted.numabalanced or user.numabalanced "
                             "of balance or advise on it or a parent (or the nearest says off), and the "
                             "configuration does not name it", cg);
        }
        if (r < 0) {
                *ret_text = NULL;
                return -ENOMEM;
        }
        return 0;
}

static int explain_unwatched(const struct manager_view *v, uid_t uid, pid_t pid, struct json *j) {
        _cleanup_free_ char *cg = NULL, *text = NULL;
        struct proc_creds c;
        const char *why;
        int r;

        json_key(j, "watched"); json_bool(j, false);
        if (pid == getpid()) {
                json_key(j, CONTROL_KEY_WHY); json_string(j, "self");
                json_key(j, "explanation"); json_string(j, "this is numabalanced itself: it does not balance itself");
                return 0;
        }
        r = creds_read(v->proc_root, pid, &c);
        if (uid != 0 && (r < 0 || !creds_belong_to(&c, uid))) {
                put_hidden(j);
                return 0;
        }
        if (r == -ENOENT || r == -ESRCH) {
                json_key(j, CONTROL_KEY_WHY); json_string(j, CONTROL_WHY_NO_SUCH_PROCESS);
                json_key(j, "explanation"); json_string(j, "no such process");
                return 0;
        }
        if (r < 0) {
                json_key(j, CONTROL_KEY_WHY); json_string(j, "unreadable");
                json_key(j, "explanation"); json_string(j, "numabalanced cannot read this process");
                return 0;
        }
        r = proc_read_cgroup(v->proc_root, pid, &cg);
        if (r == -ENOMEM)
                return r;
        json_key(j, "visible"); json_bool(j, true);
        json_key(j, "comm"); json_string(j, c.stat.comm);
        json_key(j, "uid"); json_u64(j, c.status.uid_real);
        json_key(j, "cgroup"); json_string(j, cg);
        r = unwatched_why(v, &c, cg, &why, &text);
        if (r < 0)
                return r;
        json_key(j, CONTROL_KEY_WHY); json_string(j, why);
        json_key(j, "explanation"); json_string(j, text);
        return 0;
}

/* The one sentence of explain: what the last scan decided for p. malloc'd, or NULL. */
static char *watched_explanation(const struct manager_view *v, const struct proc_rec *p) {
        char *text;
        int r;

        if (p->reason >= _REASON_MAX)
                r = asprintf(&text, "watched, not scanned yet");
        else if (p->reason == REASON_NONE && p->target_node >= 0)
                r = asprintf(&text, "%s to node %d, where its threads run (hot node %d)",
                             cg_mode_moves_now(p->cg->mode, v->opts->dry_run) ? "moving its misplaced memory" :
                             v->opts->dry_run ? "dry run: would move its misplaced memory" :
                             "advise mode: would move its misplaced memory",
                             p->target_node, p->hot_node);
        else if (p->reason == REASON_NONE)
                r = asprintf(&text, "nothing to move");
        else
                r = asprintf(&text, "not moving: %s", plan_reason_text(p->reason));
        /* Its moves since the last scan were stopped by the check before moving. */
        if (r >= 0 && p->moved.stop && p->scans && p->moved.stop_ms >= p->last_scan_ms) {
                char *more;
                r = asprintf(&more, "%s; stopped before moving it all: %s", text, p->moved.stop->text);
                free(text);
                text = r < 0 ? NULL : more;
        }
        return r < 0 ? NULL : text;
}

/* move_stopped: why the check before moving last stopped its moves (move-check.h). */
static void put_move_stop(struct json *j, const struct proc_rec *p, uint64_t now) {
        json_key(j, "move_stopped");
        if (!p->moved.stop) {
                json_null(j);
                return;
        }
        json_object_begin(j);
        json_key(j, "reason"); json_string(j, p->moved.stop->name);
        json_key(j, "explanation"); json_string(j, p->moved.stop->text);
        json_key(j, "ago_ms"); json_u64(j, now > p->moved.stop_ms ? now - p->moved.stop_ms : 0);
        json_object_end(j);
}

/* Where the exchange finds its cold memory now (scan.c, set_tiers): DAMON's recent
 * cold regions, else its pages never sampled over the cold age when the samples cover
 * its accesses; and how its samples stand (lib/sampled-cold.h), null while none are kept. */
static void put_cold(struct json *j, const struct proc_rec *p, uint64_t now) {
        bool damon = p->n_cold && now < p->cold_ms + COLD_FRESH_MS;
        struct sampled_cold_state st;
        bool sampled = sampled_cold_known(p->sampled, now, &st);

        json_key(j, "cold");
        json_object_begin(j);
        json_key(j, "by"); json_string(j, damon ? "damon" : sampled ? "samples" : NULL);
        json_key(j, "samples");
        if (!p->sampled)
                json_null(j);
        else {
                json_object_begin(j);
                json_key(j, "state"); json_string(j, sampled_cold_why_name(st.why));
                json_key(j, "samples"); json_u64(j, st.samples);
                json_key(j, "blocks"); json_u64(j, st.blocks);
                json_key(j, "missed_permille"); json_u64(j, st.missed_permille);
                json_object_end(j);
        }
        json_object_end(j);
}

/* page_level and skipped_bytes: what page-level sampling saw, what was left alone. */
static void put_page_level(struct json *j, const struct proc_rec *p) {
        json_key(j, "page_level");
        json_object_begin(j);
        json_key(j, "pages_sampled"); json_u64(j, p->pages_seen);
        json_key(j, "pages_shared"); json_u64(j, p->pages_shared);
        json_key(j, "planned_bytes"); json_u64(j, p->page_planned_bytes);
        json_key(j, "promote_planned_bytes"); json_u64(j, p->promote_planned_bytes);
        json_key(j, "demote_planned_bytes"); json_u64(j, p->demote_planned_bytes);
        json_object_end(j);

        json_key(j, "skipped_bytes");
        json_object_begin(j);
        for (int k = 0; k < _REASON_MAX; k++)
                if (p->skipped_bytes[k]) {
                        json_key(j, plan_reason_name(k));
                        json_u64(j, p->skipped_bytes[k]);
                }
        json_object_end(j);
}

/* The ranges moved less than cooldown_ms ago, and when the last of them is free. */
static void put_cooldown(struct json *j, const struct manager_view *v, const struct proc_rec *p, uint64_t now) {
        uint64_t remaining = 0;
        size_t in_cooldown = 0;

        for (size_t i = 0; i < p->moved.n_hist; i++)
                if (p->moved.hist[i].when_ms + v->cfg->cooldown_ms > now) {
                        uint64_t left = p->moved.hist[i].when_ms + v->cfg->cooldown_ms - now;
                        in_cooldown++;
                        if (left > remaining)
                                remaining = left;
                }
        json_key(j, "cooldown");
        json_object_begin(j);
        json_key(j, "cooldown_ms"); json_u64(j, v->cfg->cooldown_ms);
        json_key(j, "ranges"); json_u64(j, in_cooldown);
        json_key(j, "remaining_ms"); json_u64(j, remaining);
        json_object_end(j);
}

/* Threads explain lists with their placement, at most. */
#define EXPLAIN_THREADS_MAX 64

static char *placement_text(const struct manager_view *v, const struct proc_rec *p, uint64_t now) {
        const struct proc_place *pp = p->place;
        char *text = NULL;
        int r;

        if (pp->placed >= 0)
                r = asprintf(&text, "threads placed on node %u (%s): %u thread(s) narrowed to its CPUs",
                             v->topo->nodes[pp->placed].id, thread_place_reason_name(pp->placed_reason),
                             pp->threads_held);
        else if (pp->skip == PLACER_NOT_PERMITTED)
                r = asprintf(&text, "threads not placed: not-permitted: the kernel refused to change their affinity "
                             "(another user's threads need CAP_SYS_NICE, which the unit grants); tried again in %" PRIu64
                             " s", pp->denied_until_ms > now ? (pp->denied_until_ms - now + 999) / 1000 : 0);
        else if (pp->skip != PLACER_DECIDED)
                r = asprintf(&text, "threads not placed: %s", placer_skip_name(pp->skip));
        else if (pp->action == TP_PLACE)
                r = asprintf(&text, "%s its %u busy thread(s) on node %u (%s)",
                             p->cg && cg_mode_places_now(p->cg->mode, v->opts->dry_run) ? "placing" : "would place",
                             pp->n_busy, v->topo->nodes[pp->node].id, thread_place_reason_name(pp->reason));
        else if (pp->decided_ms)
                r = asprintf(&text, "threads not placed: %s", thread_place_reason_name(pp->reason));
        else
                r = asprintf(&text, "threads not decided yet");
        if (r >= 0 && pp->skip == PLACER_DECIDED && pp->together > 1) {
                char *with = NULL;

                r = asprintf(&with, "%s; decided with its share group, %u processes as one", text, pp->together);
                free(text);
                text = with;
        }
        return r < 0 ? NULL : text;
}

/* Where each thread was placed and why (mode place and advise only). */
static void put_placement(struct json *j, const struct manager_view *v, const struct proc_rec *p, uint64_t now) {
        const struct proc_place *pp = p->place;
        _cleanup_free_ char *text = NULL;

        json_key(j, "placement");
        if (!pp || !(text = placement_text(v, p, now))) {
                json_null(j);
                return;
        }
        json_object_begin(j);
        json_key(j, "explanation"); json_string(j, text);
        json_key(j, "placed_node"); put_node_index(j, v, pp->placed);
        json_key(j, "placed_reason");
        json_string(j, pp->placed >= 0 ? thread_place_reason_name(pp->placed_reason) : NULL);
        json_key(j, "placed_for_ms"); json_u64(j, pp->placed >= 0 && now > pp->placed_at_ms ? now - pp->placed_at_ms : 0);
        json_key(j, "decision"); json_string(j, pp->decided_ms ? thread_place_action_name(pp->action) : NULL);
        json_key(j, "decision_node"); put_node_index(j, v, pp->decided_ms ? pp->node : -1);
        json_key(j, "reason"); json_string(j, placement_word(p));
        json_key(j, "decided_with"); json_u64(j, pp->together);
        json_key(j, "busy_threads"); json_u64(j, pp->n_busy);
        json_key(j, "threads_to_move"); json_u64(j, pp->threads_to_move);
        json_key(j, "bytes_to_follow"); json_u64(j, pp->bytes_to_copy);
        json_key(j, "threads_total"); json_u64(j, pp->tl.n_threads);
        json_key(j, "threads"); json_array_begin(j);
        for (size_t i = 0; i < pp->tl.n_threads && i < EXPLAIN_THREADS_MAX; i++) {
                const struct thread_load_thread *th = &pp->tl.threads[i];
                bool held = placer_thread_held(v->placer, p->pid, th->tid);
                bool alone = placer_thread_left_alone(v->placer, p->pid, th->tid);

                json_object_begin(j);
                json_key(j, "tid"); json_i64(j, th->tid);
                json_key(j, "node"); put_node_index(j, v, th->node);
                json_key(j, "busy"); json_double(j, th->busy);
                json_key(j, "placed"); json_bool(j, held);
                json_key(j, "why");
                json_string(j, held ? "narrowed to the placed node's CPUs" :
                               alone ? "its application changed its affinity after the daemon did: left alone" :
                               pp->placed >= 0 ? "not narrowed: its affinity is the application's, or it started later" :
                               "not placed");
                json_object_end(j);
        }
        json_array_end(j);
        json_object_end(j);
}

/* The objects of p's group that p maps: each one's target, or why it stays. */
static void put_group_objects(struct json *j, const struct manager_view *v, const struct proc_rec *p,
                              const struct share_group *g) {
        json_array_begin(j);
        for (size_t o = 0; o < v->shares->n_objs; o++) {
                const struct share_obj *ob = &v->shares->objs[o];
                bool mine = false;

                if (&v->shares->groups[ob->group] != g)
                        continue;
                for (size_t k = 0; k < ob->n_maps && !mine; k++)
                        mine = ob->maps[k].pid == p->pid;
                if (!mine)
                        continue;
                json_object_begin(j);
                json_key(j, "kind"); json_string(j, ob->cow ? "copy-on-write" : "shared");
                json_key(j, "inode");
                if (ob->cow)
                        json_null(j);
                else
                        json_u64(j, ob->ino);
                json_key(j, "address");
                if (ob->cow)
                        json_u64(j, ob->ino);
                else
                        json_null(j);
                json_key(j, "mappings"); json_u64(j, ob->n_maps);
                json_key(j, "target_node"); put_node_or_null(j, ob->target);
                json_key(j, "why"); json_string(j, ob->target < 0 ? ob->why : NULL);
                json_key(j, "nodes"); put_locality(j, v, ob->node_bytes);
                json_object_end(j);
        }
        json_array_end(j);
}

/* The share of the fast tier p's cgroup keeps (fast-use.h), or null: where it is set,
 * the percentage, and on each fast node the bytes it keeps against what the cgroup
 * there held at the last read (null when unread: no slow node, or the file gone). */
static void put_fast_share(struct json *j, const struct manager_view *v, const struct proc_rec *p) {
        const struct cg_rec *h = p->cg && p->cg->share_by ? cg_records_find(v->cgs, p->cg->share_by) : NULL;
        bool read = h && h->fast_used && h->fast_n == v->topo->n_nodes && h->fast_read == 0;

        json_key(j, "fast_share");
        if (!p->cg || !p->cg->share_by) {
                json_null(j);
                return;
        }
        json_object_begin(j);
        json_key(j, "cgroup"); json_string(j, p->cg->share_by);
        json_key(j, "share_pct"); json_u64(j, (uint64_t) p->cg->fast_share_pct);
        json_key(j, "nodes");
        json_array_begin(j);
        for (unsigned n = 0; n < v->topo->n_nodes; n++) {
                if (v->topo->nodes[n].slow)
                        continue;
                json_object_begin(j);
                json_key(j, "node"); json_u64(j, v->topo->nodes[n].id);
                json_key(j, "share_bytes");
                json_u64(j, fast_share_bytes(v->topo->nodes[n].mem_total_kb, p->cg->fast_share_pct));
                json_key(j, "held_bytes");
                if (read)
                        json_u64(j, h->fast_used[n]);
                else
                        json_null(j);
                json_object_end(j);
        }
        json_array_end(j);
        json_object_end(j);
}

/* The group of processes sharing memory p is a member of (share-groups.h), or null. */
static void put_share_group(struct json *j, const struct manager_view *v, const struct proc_rec *p) {
        const struct share_group *g = v->shares && p->cg ? share_groups_of(v->shares, p->cg->turn_uid, p->pid) : NULL;

        json_key(j, "share_group");
        if (!g) {
                json_null(j);
                return;
        }
        json_object_begin(j);
        json_key(j, "members");
        json_array_begin(j);
        for (size_t k = 0; k < g->n_pids; k++)
                json_i64(j, g->pids[k]);
        json_array_end(j);
        json_key(j, "hot_node"); put_node_or_null(j, g->hot_node);
        json_key(j, "moves_shared"); json_bool(j, v->cfg->move_shared && cg_mode_moves_shared(p->cg->mode));
        json_key(j, "shared_nodes"); put_locality(j, v, g->node_bytes);
        json_key(j, "objects"); put_group_objects(j, v, p, g);
        json_object_end(j);
}

static int explain_watched(const struct manager_view *v, const struct proc_rec *p, struct json *j) {
        _cleanup_free_ char *text = NULL;
        char mems[NODEMASK_STRMAX];
        uint64_t now = clock_now_ms();
        const char *mode = proc_mode(v, p);

        json_key(j, "watched"); json_bool(j, true);
        json_key(j, "visible"); json_bool(j, true);
        json_key(j, "comm"); json_string(j, p->comm);
        json_key(j, "uid"); json_u64(j, p->uid);
        json_key(j, "cgroup"); json_string(j, p->cg ? p->cg->path : NULL);
        json_key(j, "mode"); json_string(j, mode);
        json_key(j, "mode_source"); json_string(j, p->cg ? source_name(p->cg->source) : NULL);
        json_key(j, "dry_run"); json_bool(j, v->opts->dry_run);
        json_key(j, "scans"); json_u64(j, p->scans);
        json_key(j, "sampled_scans"); json_u64(j, p->sampled_scans);
        json_key(j, "hot_node"); put_node_or_null(j, p->scans ? p->hot_node : -1);
        json_key(j, "target_node"); put_node_or_null(j, p->scans ? p->target_node : -1);
        nodemask_format(&p->mems_allowed, mems, sizeof(mems));
        json_key(j, "mems_allowed"); json_string(j, p->scans ? mems : NULL);
        json_key(j, "reason");
        json_string(j, p->reason < _REASON_MAX ? plan_reason_name(p->reason) : NULL);
        json_key(j, "reason_text");
        json_string(j, p->reason < _REASON_MAX ? plan_reason_text(p->reason) : NULL);
        text = watched_explanation(v, p);
        if (!text)
                return -ENOMEM;
        json_key(j, "explanation"); json_string(j, text);
        put_move_stop(j, p, now);
        put_page_level(j, p);
        /* Whether a kdamond watches its slow VMAs now (damon.h). */
        json_key(j, "damon_monitored"); json_bool(j, damon_monitored(v->damon, p->pid));
        put_cold(j, p, now);
        put_cooldown(j, v, p, now);
        put_placement(j, v, p, now);
        put_share_group(j, v, p);
        put_fast_share(j, v, p);

        json_key(j, "scan_interval_ms"); json_u64(j, p->sched.interval_ms);
        json_key(j, "next_scan_in_ms"); json_u64(j, p->sched.next_scan_ms > now ? p->sched.next_scan_ms - now : 0);
        json_key(j, "last_scan_ago_ms");
        if (p->scans)
                json_u64(j, now > p->last_scan_ms ? now - p->last_scan_ms : 0);
        else
                json_null(j);
        json_key(j, "total_bytes"); json_u64(j, p->total_bytes);
        json_key(j, "local_bytes"); json_u64(j, p->local_bytes);
        json_key(j, "local_share"); json_double(j, share(p->local_bytes, p->total_bytes));
        json_key(j, "nodes"); put_locality(j, v, p->node_bytes);
        json_key(j, "pages"); put_pages(j, p->moved.pages);
        json_key(j, "cpu_ns"); put_cost(j, p->cost_ns);
        return 0;
}

int report_explain(const struct manager_view *v, uid_t uid, pid_t pid, FILE *f) {
        struct proc_rec *p = lookup(v, pid);
        int r;
        BEGIN_DOC(j, mem, buf, len);

        begin_reply(&j);
        json_key(&j, "pid"); json_i64(&j, pid);
        json_key(&j, "requester_uid"); json_u64(&j, uid);
        if (p && !report_proc_visible(v, p, uid)) {
                /* Word for word what a pid that does not exist gets. */
                json_key(&j, "watched"); json_bool(&j, false);
                put_hidden(&j);
                r = 0;
        } else if (p)
                r = explain_watched(v, p, &j);
        else
                r = explain_unwatched(v, uid, pid, &j);
        if (r < 0) {
                fclose(mem);
                free(buf);
                return r;
        }
        json_object_end(&j);
        return finish(&j, mem, &buf, &len, f);
}

/* ---- explain CGROUP ----------------------------------------------------------- */

/* Processes of a cgroup's cgroup.procs looked at one by one (each costs a read of its
 * stat and status): the rest are counted, not classified. */
#define EXPLAIN_CG_PROCS_MAX 256

/* Why the processes of a cgroup that are not watched are not, counted by reason. */
struct unwatched_counts {
        size_t watched, kernel, zombie, not_covered, not_yet, gone, unread, examined, total;
};

static void count_unwatched(const struct manager_view *v, const struct cg_rec *rec, const char *path,
                            struct unwatched_counts *u) {
        _cleanup_free_ pid_t *pids = NULL;
        size_t n = 0;

        *u = (struct unwatched_counts) {};
        if (cgroup_read_procs(v->cfg->cgroup_root, path, &pids, &n) < 0)
                return;
        u->total = n;
        for (size_t i = 0; i < n && u->examined < EXPLAIN_CG_PROCS_MAX; i++) {
                const struct proc_rec *p = proc_records_find(v->procs, pids[i]);
                struct proc_creds c;

                u->examined++;
                if (p && rec && p->cg == rec) {
                        u->watched++;
                        continue;
                }
                if (creds_read(v->proc_root, pids[i], &c) < 0)
                        u->gone++;
                else if (c.stat.flags & PF_KTHREAD_FLAG)
                        u->kernel++;
                else if (c.stat.state == 'Z' || c.stat.state == 'X')
                        u->zombie++;
                else if (rec && rec->covers_uid != CGROUP_COVERS_ALL && !creds_belong_to(&c, rec->covers_uid))
                        u->not_covered++;
                else if (rec)
                        u->not_yet++;
                else
                        u->unread++;
        }
}

/* The config rule that decides path, as it is written: the one of the deepest directory
 * on its path that has one (cgroup_config_rule()), as the walk decides; or NULL. */
static const char *config_rule_of(const struct nb_config *cfg, const char *path) {
        _cleanup_free_ char *dir = strdup(path);

        while (dir) {
                ssize_t i = cgroup_config_rule(cfg->cgroups, cfg->n_cgroups, dir);
                char *slash = strrchr(dir, '/');

                if (i >= 0)
                        return cfg->cgroups[i].path;
                if (!slash || strcmp(dir, "/") == 0)
                        break;
                if (slash == dir)
                        slash[1] = '\0'; /* "/a" -> "/" */
                else
                        *slash = '\0';
        }
        return NULL;
}

/* The why of explain CGROUP and its sentence (malloc'd). */
static int cgroup_why(const struct cgroup_setting *s, const struct cg_rec *rec, const struct unwatched_counts *u,
                      const char **ret_why, char **ret_text) {
        int r;

        if (!cg_mode_is_set(s->mode)) {
                *ret_why = "not-opted-in";
                r = asprintf(ret_text, "not opted in: no trusted.numabalanced or user.numabalanced of balance or "
                             "advise on it or a parent that counts, and no cgroups = line of the configuration "
                             "names it or a parent");
        } else if (cg_mode_opted_out(s->mode)) {
                *ret_why = "opted-out";
                r = asprintf(ret_text, "opted out: the nearest setting on its path says off");
        } else if (!rec) {
                *ret_why = "not-selected";
                r = asprintf(ret_text, "opted in, but the last walk of the cgroup tree did not select it: it is "
                             "newer than that walk (the next one picks it up), or the walk's bounds (%u cgroups, "
                             "%u levels deep) cut it off", CGROUP_WALK_MAX_CGROUPS, CGROUP_WALK_MAX_DEPTH);
        } else if (u->watched == 0 && rec->n_procs == 0) {
                *ret_why = "no-processes";
                r = u->total == 0 ? asprintf(ret_text, "opted in and selected, but it has no process of its own "
                                             "(those of the cgroups below it are theirs)")
                                  : asprintf(ret_text, "opted in and selected, but none of its %zu processes is "
                                             "watched (the counts say why)", u->total);
        } else {
                *ret_why = "watched";
                r = asprintf(ret_text, "opted in and selected: %u of its processes watched at the last tick",
                             rec->n_procs);
        }
        if (r < 0) {
                *ret_text = NULL;
                return -ENOMEM;
        }
        return 0;
}

static void put_unwatched(struct json *j, const struct unwatched_counts *u) {
        json_key(j, "cgroup_procs"); json_u64(j, u->total);
        json_key(j, "examined"); json_u64(j, u->examined);
        json_key(j, "not_watched");
        json_object_begin(j);
        json_key(j, "kernel-thread"); json_u64(j, u->kernel);
        json_key(j, "zombie"); json_u64(j, u->zombie);
        json_key(j, "not-covered"); json_u64(j, u->not_covered);
        json_key(j, "not-yet-seen"); json_u64(j, u->not_yet);
        json_key(j, "not-opted-in"); json_u64(j, u->unread);
        json_key(j, "gone"); json_u64(j, u->gone);
        json_object_end(j);
}

/* A cgroup path as /proc/PID/cgroup names it: "/", or "/"-separated names none of
 * which is empty, "." or "..", so that nothing outside the cgroup root is looked at. */
static bool cgroup_path_ok(const char *path) {
        if (path[0] != '/')
                return false;
        if (strcmp(path, "/") == 0)
                return true;
        for (const char *p = path; *p;) {
                const char *c = p + 1, *e = strchrnul(c, '/');
                size_t n = (size_t) (e - c);
                if (n == 0 || (n == 1 && c[0] == '.') || (n == 2 && c[0] == '.' && c[1] == '.'))
                        return false;
                p = e;
        }
        return true;
}

/* Whether uid may ask about the cgroup at path: root, or the owner of its directory
 * (what list shows it). 0, or -ENOENT for a cgroup that does not exist. */
static int cgroup_visible(const struct manager_view *v, const char *path, uid_t uid, bool *ret) {
        _cleanup_free_ char *dir = NULL;
        struct stat st;

        if (!cgroup_path_ok(path))
                return -ENOENT;
        if (asprintf(&dir, "%s%s", v->cfg->cgroup_root, strcmp(path, "/") == 0 ? "" : path) < 0)
                return -ENOMEM;
        if (stat(dir, &st) < 0 || !S_ISDIR(st.st_mode))
                return -ENOENT;
        *ret = uid == 0 || st.st_uid == uid;
        return 0;
}

static int explain_cgroup_body(const struct manager_view *v, uid_t uid, const char *path, struct json *j) {
        const struct cg_rec *rec = lookup_cg(v, path);
        _cleanup_free_ char *text = NULL;
        struct cgroup_setting s = {};
        struct unwatched_counts u;
        const char *why, *rule;
        bool visible = false;
        int r;

        r = cgroup_visible(v, path, uid, &visible);
        if (r == -ENOMEM)
                return r;
        if (uid != 0 && (r < 0 || !visible)) {
                json_key(j, "visible"); json_bool(j, false);
                json_key(j, CONTROL_KEY_WHY); json_string(j, CONTROL_WHY_NOT_VISIBLE);
                json_key(j, "explanation");
                json_string(j, "no such cgroup, or not yours: a user may ask about the cgroups whose directory it "
                               "owns");
                return 0;
        }
        if (r >= 0)
                r = cgroup_setting_of(v->cfg->cgroup_root, v->cfg->cgroups, v->cfg->n_cgroups, path, &s);
        if (r == -ENOMEM)
                return r;
        json_key(j, "visible"); json_bool(j, true);
        if (r < 0) {
                json_key(j, CONTROL_KEY_WHY); json_string(j, CONTROL_WHY_NO_SUCH_CGROUP);
                json_key(j, "explanation");
                json_string(j, "no such cgroup under the cgroup root (give the path as /proc/PID/cgroup names it)");
                return 0;
        }
        count_unwatched(v, rec, path, &u);
        r = cgroup_why(&s, rec, &u, &why, &text);
        if (r < 0)
                return r;
        rule = s.source == CG_FROM_CONFIG ? config_rule_of(v->cfg, path) : NULL;
        json_key(j, CONTROL_KEY_WHY); json_string(j, why);
        json_key(j, "explanation"); json_string(j, text);
        json_key(j, "mode"); json_string(j, cg_mode_is_set(s.mode) ? config_cg_mode_name(s.mode) : NULL);
        json_key(j, "mode_source"); json_string(j, cg_mode_is_set(s.mode) ? source_name(s.source) : NULL);
        json_key(j, "config_rule"); json_string(j, rule);
        json_key(j, "covers_uid");
        if (!cg_mode_is_set(s.mode) || s.covers_uid == CGROUP_COVERS_ALL)
                json_null(j);
        else
                json_u64(j, s.covers_uid);
        json_key(j, "selected"); json_bool(j, rec != NULL);
        json_key(j, "processes_watched"); json_u64(j, rec ? rec->n_procs : 0);
        put_unwatched(j, &u);
        return 0;
}

int report_explain_cgroup(const struct manager_view *v, uid_t uid, const char *path, FILE *f) {
        int r;
        BEGIN_DOC(j, mem, buf, len);

        begin_reply(&j);
        json_key(&j, "cgroup"); json_string(&j, path);
        json_key(&j, "requester_uid"); json_u64(&j, uid);
        r = explain_cgroup_body(v, uid, path, &j);
        if (r < 0) {
                fclose(mem);
                free(buf);
                return r;
        }
        json_object_end(&j);
        return finish(&j, mem, &buf, &len, f);
}
