/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The tick, and the manager's life around it. Everything the daemon knows lives in
 * struct manager; one thread (the event loop's) reads, decides and hands migration
 * jobs to the workers. A tick: select the cgroups, admit their processes, scan those
 * that are due (scan.c), run the jobs their plans make (jobs.c), forget the processes
 * that left. */
#include <errno.h>
#include <malloc.h>
#include <signal.h>
#include <inttypes.h>
#include <limits.h>
#include <poll.h>
#include <sys/epoll.h>
#include <sys/resource.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include "cg-records.h"
#include "cgroup.h"
#include "cost.h"
#include "histogram.h"
#include "creds.h"
#include "interleave.h"
#include "jobs.h"
#include "log.h"
#include "manager.h"
#include "kernel-balancing.h"
#include "manager-internal.h"
#include "damon.h"
#include "migrate.h"
#include "pagesize.h"
#include "node-time.h"
#include "affinity.h"
#include "placer.h"
#include "plan.h"
#include "proc.h"
#include "proc-records.h"
#include "react.h"
#include "samplers.h"
#include "scan.h"
#include "fast-use.h"
#include "service-cpus.h"
#include "tenant-reader.h"
#include "siphash.h"
#include "page-sampler.h"
#include "pass.h"
#include "source.h"
#include "topology.h"
#include "walker.h"

/* Each node's free memory, read by the first thing in a tick that may need it (a
 * scan, which may plan, or a process held back at a full node) and by no tick that
 * scans nothing: a settled machine's tick then opens none of the per-node files (seven
 * in a 2-node guest, a third of the tick's opens), on the service CPU a workload may
 * share. */
static void need_free_memory(void *userdata) {
        struct manager *m = userdata;
        int r;

        if (m->free_read_tick == m->counters.tick)
                return;
        m->free_read_tick = m->counters.tick;
        r = topology_refresh_free(m->topo, m->sys_root);
        if (r < 0)
                log_warning_errno(r, "Failed to read free memory per node, using the previous values: %m");
}

/* The daemon's thread pools, handed to service_cpus_check() at each check (a test may
 * replace one): service-cpus.c knows none of them. */
static size_t service_pools_of(const struct manager *m, struct service_pool pools[3]) {
        size_t n = 0;

        if (m->walker)
                pools[n++] = walker_service_pool(m->walker);
        if (m->reader)
                pools[n++] = tenant_reader_service_pool(m->reader);
        if (m->migrator)
                pools[n++] = migrator_service_pool(m->migrator);
        return n;
}

/* What the scans of this tick read besides their process. */
static struct scan_env scan_env_of(struct manager *m) {
        return (struct scan_env) {
                .reader = m->reader,
                .cfg = &m->cfg,
                .topo = m->topo,
                .proc_root = m->proc_root,
                .source = m->samplers.source, .pages = m->samplers.pages,
                .shares = &m->shares, .cgs = &m->cgs,
                .kernel_balances = m->counters.kernel_balances,
                .promote_left = &m->promote.left,
                .exchange_credit = m->promote.credit,
                .exchange_demand = m->promote.demand, .exchange_posted = m->promote.demand_next,
                .dry_run = m->opts.dry_run, .page_where = page_where_query,
                .tick = m->counters.tick,
                .need_free_memory = need_free_memory,
                .need_free_memory_userdata = m,
        };
}

/* Where the tick's and the react passes charge, count and say. */
static int begin_pass(struct manager *m, struct pass *ps, uint64_t now, uint64_t started_ns) {
        struct pass_env env = {
                .topo = m->topo, .cost = &m->cost, .counters = &m->counters, .logs = &m->pass_logs,
        };

        return pass_start(ps, &env, now, started_ns);
}

/* A tick with thousands of processes to read (a tenant's) takes seconds: the control
 * socket is served every SERVE_EVERY_NS meanwhile, as during the migration jobs, so that
 * `numabalancectl status` answers within a second whatever the tick does, and the
 * watchdog is pinged: a tick that goes on reading is working (its length is bounded:
 * TICK_READ_BUDGET_NS), one stuck in a call does not come here, and systemd sees it. Between two
 * processes the state the replies read is whole: records sorted, every process's
 * cgroup record alive (records are freed at the end of the tick only). */
static void serve_meanwhile(struct manager *m) {
        uint64_t now = clock_now_ns(CLOCK_MONOTONIC), t;

        if (!m->hooks.while_moving || now < m->last_served_ns + SERVE_EVERY_NS)
                return;
        m->last_served_ns = now;
        t = cost_thread_ns();
        m->hooks.while_moving(m->hooks.while_moving_userdata);
        if (m->hooks.keepalive)
                m->hooks.keepalive(m->hooks.keepalive_userdata);
        cost_pumped(&m->cost, cost_thread_ns() - t);
}

/* A SIGTERM or SIGINT waiting (blocked, seen by the loop only once the tick returns):
 * every thread the daemon narrowed gets its affinity back now, before the daemon waits
 * for anything a tenant can make last (a read, a move_pages(2) call, the workers'
 * join). Not from within the placer (its serve callback does not come here). */
static bool stop_signalled(struct manager *m) {
        sigset_t set;
        bool stop;

        if (sigpending(&set) < 0)
                return false;
        stop = sigismember(&set, SIGTERM) == 1 || sigismember(&set, SIGINT) == 1;
        if (stop)
                placer_stop(m->placer);
        return stop;
}

/* The event loop waiting on a tenant's read (tenant-reader.h) serves meanwhile too. */
static void serve_while_reading(void *userdata) {
        serve_meanwhile(userdata);
        (void) stop_signalled(userdata);
}

/* The placer writing a long state file, or narrowing many processes, serves too. */
static void serve_while_placing(void *userdata) {
        serve_meanwhile(userdata);
}

/* Whether p is being balanced (and so holds a pidfd): its cgroup in balance mode, not
 * a dry run, and its last scan found it at least min_rss (numabalanced(8), LIMITS). */
static bool balanced(const struct manager *m, const struct proc_rec *p) {
        return cg_mode_moves_now(p->cg->mode, m->opts.dry_run) && p->scans > 0 && p->reason != REASON_TOO_SMALL;
}

/* When the tick stops reading cgroups: TICK_READ_BUDGET_NS after it began. */
static uint64_t read_deadline_ns(const struct manager *m, const struct pass *ps) {
        return ps->started_ns + m->read_budget_ns;
}

/* A cgroup whose reading stopped at its owner's deadline: its processes not reached
 * stay as the last read left them (keep_their_processes), and the next read starts
 * where this one stopped, so that a cgroup of 10,000 due processes is read over
 * several ticks, all of them in turn, instead of holding one tick for all. */
static void cut_cgroup(struct manager *m, struct cg_rec *cg, size_t next, size_t n_pids) {
        cg->pid_cursor = next;
        cg->kept_tick = m->counters.tick;
        if (cg->tick_procs < cg->n_procs)
                cg->tick_procs = cg->n_procs;
        log_debug("cgroup=%s: its owner's turn is over after %zu of %zu processes, the rest at the next tick",
                  cg->path, (next + n_pids - cg->pid_cursor_start) % n_pids, n_pids);
}

/* The processes of one selected cgroup, from where its last read stopped: each is
 * marked seen in this tick, and scanned if it is due, until deadline_ns
 * (CLOCK_MONOTONIC; at least one process is read). Adds the scans' CPU time
 * (charged) to *scanned. Returns 0, or -EMFILE, -ENFILE, -ENOMEM when its list could
 * not be read for lack of them. */
static int tick_cgroup(struct manager *m, struct pass *ps, struct cg_rec *cg, uint64_t deadline_ns,
                       uint64_t *scanned) {
        struct scan_env env = scan_env_of(m);
        _cleanup_free_ pid_t *pids = NULL;
        size_t n_pids = 0;
        int r;

        r = cgroup_read_procs(m->cfg.cgroup_root, cg->path, &pids, &n_pids);
        if (r == -EMFILE || r == -ENFILE || r == -ENOMEM)
                return r;   /* not "no process": the caller keeps what it knew */
        if (r < 0) {
                log_debug_errno(r, "cgroup=%s: cannot read cgroup.procs, ignoring: %m", cg->path);
                return 0;
        }
        if (n_pids)
                scan_cg_growth(&env, cg);
        cg->pid_cursor_start = n_pids ? cg->pid_cursor % n_pids : 0;
        for (size_t k = 0; k < n_pids; k++) {
                size_t at = (cg->pid_cursor_start + k) % n_pids;
                struct proc_rec *p;
                enum scan_due due;
                bool is_new;

                if (k > 0 && clock_now_ns(CLOCK_MONOTONIC) >= deadline_ns) {
                        cut_cgroup(m, cg, at, n_pids);
                        break;
                }
                serve_meanwhile(m);
                p = proc_records_admit(&m->procs, m->proc_root, cg, pids[at], ps->now, &is_new);
                if (is_new)
                        samplers_watch(&m->samplers, &m->procs, &m->counters, p->pid, cg->turn_uid);

                if (!p || p->seen_tick == m->counters.tick)
                        continue; /* not ours, or listed twice */
                p->seen_tick = m->counters.tick;
                p->cg = cg;
                cg->tick_procs++;
                due = scan_due_now(&env, p, ps->now);
                m->counters.growth_scans += due == SCAN_DUE_GREW;
                if (due != SCAN_NOT_DUE)
                        *scanned += pass_scan(ps, &env, p);
                proc_records_update_pidfd(&m->procs, m->proc_root, p, balanced(m, p));
        }
        return 0;
}

static bool out_of_resources(int r) {
        return r == -EMFILE || r == -ENFILE || r == -ENOMEM;
}

/* Out of descriptors or memory (a tenant's thousands of processes, before the limits
 * held them): what could not be read is not what has gone. Every record stays, as
 * seen in this tick, for the next tick to look again; warned once until it passes. */
static void keep_all(struct manager *m, int r) {
        walker_log_short(&m->tree_log, m->cfg.cgroup_root, r);
        for (size_t i = 0; i < m->procs.n; i++)
                if (m->procs.v[i]->cg)
                        m->procs.v[i]->seen_tick = m->counters.tick;
        /* Every cgroup record too (their process counts as they were). */
        for (size_t i = 0; i < m->cgs.n; i++)
                m->cgs.v[i]->seen_tick = m->counters.tick;
}

/* The cgroups opted in now (config, xattrs), into *sel, with what is wrong with the
 * tree logged once: the walker's newest selection (none newer: *fresh is false, and
 * the tick works from the records the last one left), or without a walker (the
 * tests, --once) a walk now. An unreadable root selects nothing; an inline walk that
 * runs out of descriptors or memory returns the error (keep_all()). */
static int select_cgroups(struct manager *m, struct cgroup_selection *sel, bool *fresh) {
        int r;

        *fresh = true;
        if (m->walker)
                *fresh = walker_take(m->walker, sel) > 0;
        else {
                r = cgroup_select(m->cfg.cgroup_root, m->cfg.cgroups, m->cfg.n_cgroups, sel);
                if (out_of_resources(r))
                        return r;
                if (r < 0) {
                        /* The cgroup root missing is not fatal: it may be mounted later. */
                        log_full_errno(m->counters.tick == 1 ? LOG_LVL_ERR : LOG_LVL_DEBUG, r,
                                       "Failed to walk the cgroup tree at %s, nothing selected: %m",
                                       m->cfg.cgroup_root);
                        *sel = (struct cgroup_selection) {};
                }
        }
        if (!*fresh)
                return 0;
        walker_log_selection(&m->tree_log, m->cfg.cgroup_root, sel);
        config_report_selection(&m->config_report, &m->cfg, sel);
        return 0;
}

/* A cgroup selected in this tick. Its seen and n_procs, which the replies read (the
 * control socket is served mid-tick), change at the end of the tick only
 * (publish_cgroups), so that a reply never shows a tick half done. */
static void mark_seen(struct manager *m, struct cg_rec *cg) {
        if (cg->seen_tick != m->counters.tick)
                cg->tick_procs = 0;
        cg->seen_tick = m->counters.tick;
}

static void publish_cgroups(struct manager *m) {
        for (size_t i = 0; i < m->cgs.n; i++) {
                m->cgs.v[i]->seen = m->cgs.v[i]->seen_tick == m->counters.tick;
                m->cgs.v[i]->n_procs = m->cgs.v[i]->seen ? m->cgs.v[i]->tick_procs : 0;
        }
}

/* CPU follows memory (placer.h): the processes of place and advise cgroups decided
 * together, after their scans, its CPU time charged as a decision. */
static void place_threads(struct manager *m, uint64_t now) {
        struct placer_env env = {
                .cfg = &m->cfg,
                .topo = m->topo,
                .proc_root = m->proc_root,
                .cgroup_root = m->cfg.cgroup_root,
                .dry_run = m->opts.dry_run,
                .bring_forward = scan_bring_forward,
                .shares = &m->shares,
        };

        if (m->placer && !m->samplers.one_node)
                placer_round(m->placer, &env, &m->procs, m->counters.tick, now);
}

/* The tick's migration run (jobs.h): the workers' time is charged per job, and this
 * thread's part in proportion to it. Adds what it charged on this thread to ps->charged. */
static int run_jobs(struct manager *m, struct pass *ps, bool early) {
        struct jobs_env env = {
                .check = {
                        .cfg = &m->cfg,
                        .topo = m->topo,
                        .proc_root = m->proc_root,
                        .sys_root = m->sys_root,
                        .kernel_balances = m->counters.kernel_balances,
                        .reader = m->reader,
                },
                .dry_run = m->opts.dry_run,
                /* What the rate limit lets a run move in its time budget. */
                .run_bytes_max = move_budget_run_bytes(m->cfg.rate_limit_mb_s),
                .migrator = m->migrator,
                .cost = &m->cost,
                .counters = &m->counters,
                .promote = &m->promote,
                .shares = &m->shares,
                .run_jobs = m->hooks.run_jobs,
                .run_jobs_userdata = m->hooks.run_jobs_userdata,
                .pump_ns = &m->cost.pump_ns,
        };

        return early ? pass_run_jobs_early(ps, &env) : pass_run_jobs(ps, &env);
}

/* The jobs planned so far run as soon as the tick has spent PASS_JOBS_EARLY_NS reading
 * since it began or since the last ones ran, rather than after every cgroup: behind a
 * tenant's 10,000 cgroups, a process planned early waited 1.5 s for its moves in the
 * TCG guest. The free-memory floor holds across runs (reserved is the tick's). The
 * moves of processes in `place` cgroups wait for the placer's round (pass.h). */
static void run_jobs_early(struct manager *m, struct pass *ps) {
        if (pass_jobs_due(ps, clock_now_ns(CLOCK_MONOTONIC)))
                (void) run_jobs(m, ps, true);
}

/* The cgroups of this tick, in path order: those of a fresh selection (their records
 * made or updated), or else the records as the last one left them; each marked seen. */
static int tick_list(struct manager *m, const struct cgroup_selection *sel, bool fresh, struct cg_rec ***ret,
                     size_t *ret_n) {
        size_t n_max = fresh ? sel->n_entries : m->cgs.n, n = 0;
        struct cg_rec **list = calloc(n_max ? n_max : 1, sizeof(*list));

        if (!list)
                return -ENOMEM;
        for (size_t i = 0; i < n_max; i++) {
                struct cg_rec *cg = fresh ? cg_records_get(&m->cgs, m->cfg.cgroup_root, &sel->entries[i]) : m->cgs.v[i];
                if (!cg)
                        continue;
                mark_seen(m, cg);
                list[n++] = cg;
        }
        *ret = list;
        *ret_n = n;
        return 0;
}

/* A cgroup not read in this tick (its owner's turn was over): it and its processes
 * stay as the last read left them. */
static void keep_cgroup(struct manager *m, struct cg_rec *cg) {
        cg->kept_tick = m->counters.tick;
        cg->tick_procs = cg->n_procs;
}

static void keep_their_processes(struct manager *m) {
        for (size_t i = 0; i < m->procs.n; i++)
                if (m->procs.v[i]->cg && m->procs.v[i]->cg->kept_tick == m->counters.tick && m->procs.v[i]->seen_tick != m->counters.tick)
                        m->procs.v[i]->seen_tick = m->counters.tick;
}

/* Where each owner's next turn starts: after what it read now (lib/interleave.h). */
static void remember_cursors(struct manager *m, const struct turns *t, const size_t *read) {
        struct owner_cursor *c = calloc(t->n_groups ? t->n_groups : 1, sizeof(*c));

        if (!c)
                return;
        for (size_t g = 0; g < t->n_groups; g++) {
                size_t next = 0;
                for (size_t i = 0; i < m->n_cursors; i++)
                        if (m->cursors[i].owner == t->group_owner[g])
                                next = m->cursors[i].next;
                c[g] = (struct owner_cursor) { t->group_owner[g], (next + read[g]) % t->group_size[g] };
        }
        free(m->cursors);
        m->cursors = c;
        m->n_cursors = t->n_groups;
}

/* tick_cgroup(), its CPU time charged to cg: the scans are charged read and decide,
 * the rest (cgroup.procs, admitting its processes) is bookkeeping; the control
 * requests served meanwhile are nobody's. */
static int read_cgroup(struct manager *m, struct pass *ps, struct cg_rec *cg, uint64_t deadline_ns) {
        uint64_t t = cost_thread_ns(), pump = m->cost.pump_ns, scanned = 0, spent;
        int r;

        r = tick_cgroup(m, ps, cg, deadline_ns, &scanned);
        spent = cost_thread_ns() - t - (m->cost.pump_ns - pump);
        cost_charge(&m->cost, cg, STAGE_BOOKKEEPING, spent > scanned ? spent - scanned : 0);
        ps->charged += spent > scanned ? spent : scanned;
        return r;
}

/* The selected cgroups and their processes, their owners taking turns, each owner's
 * read for OWNER_TURN_NS at most per tick, and all of them for TICK_READ_BUDGET_NS
 * (the rest kept for the next ticks, which start where this one ended, within a
 * cgroup too), the jobs planned run early (run_jobs_early). Returns 0, or -errno
 * when a cgroup.procs could not be read, or the turns made, for lack of resources. */
static int tick_cgroups(struct manager *m, struct pass *ps, const struct cgroup_selection *sel, bool fresh) {
        _cleanup_free_ struct cg_rec **list = NULL;
        _cleanup_free_ uint64_t *spent = NULL;
        _cleanup_free_ size_t *read = NULL;
        _cleanup_free_ uid_t *owners = NULL;
        struct turns t = {};
        size_t n = 0;
        int r;

        r = tick_list(m, sel, fresh, &list, &n);
        if (r < 0)
                return r;
        owners = calloc(n + 1, sizeof(*owners));
        spent = calloc(n + 1, sizeof(*spent));
        read = calloc(n + 1, sizeof(*read));
        for (size_t i = 0; owners && i < n; i++)
                owners[i] = list[i]->turn_uid;
        if (!owners || !spent || !read || interleave_by_owner(owners, n, m->cursors, m->n_cursors, &t) < 0)
                return -ENOMEM;
        for (size_t i = 0; r >= 0 && i < t.n; i++) {
                struct cg_rec *cg = list[t.order[i]];
                size_t g = t.group[i];
                uint64_t t0 = clock_now_ns(CLOCK_MONOTONIC), deadline;

                if (spent[g] >= m->owner_turn_ns || t0 >= read_deadline_ns(m, ps)) {
                        keep_cgroup(m, cg);
                        continue;
                }
                deadline = t0 + (m->owner_turn_ns - spent[g]);
                if (deadline > read_deadline_ns(m, ps))
                        deadline = read_deadline_ns(m, ps);
                serve_meanwhile(m);
                r = read_cgroup(m, ps, cg, deadline);
                spent[g] += clock_now_ns(CLOCK_MONOTONIC) - t0;
                read[g]++;
                run_jobs_early(m, ps);
        }
        keep_their_processes(m);
        remember_cursors(m, &t, read);
        interleave_turns_done(&t);
        return r;
}

/* Forgets the processes not seen in this tick (exited, or their cgroup opted out). */
static void forget_departed(struct manager *m) {
        uint64_t tick = m->counters.tick;

        /* First stop watching them, while every record is there to ask: a new record
         * may hold the same pid (reused), and its next sample() watches it again from
         * a new baseline. */
        for (size_t i = 0; i < m->procs.n; i++) {
                if (m->procs.v[i]->seen_tick == tick)
                        continue;
                placer_departed(m->placer, m->proc_root, m->procs.v[i]);
                samplers_unwatch(&m->samplers, &m->procs, m->procs.v[i]->pid, tick);
        }
        proc_records_sweep(&m->procs, tick);
        samplers_sync(&m->samplers, &m->procs, &m->counters);
}

/* What the tick's decisions start from: the page-level samples since the last tick,
 * and whether the kernel balances. Returns the CPU time of the page sampler's own
 * threads (sw-sampler.h's decoding threads) since the last tick. */
static uint64_t tick_prepare(struct manager *m) {
        uint64_t sampler_ns = samplers_drain(&m->samplers, &m->procs, m->topo, &m->cfg, &m->counters);

        damon_feed(m->damon, &m->procs, m->topo, &m->counters);
        kernel_balancing_watch(m->proc_root, &m->counters.kernel_numa_balancing, &m->counters.kernel_balances);
        /* The promotion budget (plan.h, rules 7-8): refilled once a tick, shared by its
         * scans and the react scans; donors of cold memory scanned now if room waits. */
        move_budget_promote_refill(&m->promote, m->cfg.promote_rate_limit_mb_s, clock_now_ms());
        fast_use_refresh(&m->cgs, m->cfg.cgroup_root, m->topo, m->counters.tick);
        scan_serve_demand((struct scan_env[]) { scan_env_of(m) }, &m->procs, clock_now_ms());
        /* From the last scans: this tick decides a shared object on the group at its start. */
        share_groups_build(&m->shares, m->topo, &m->procs, m->cfg.min_cpu_share_pct, scan_bring_forward,
                           clock_now_ms());
        m->counters.share_groups = m->shares.n_groups;
        return sampler_ns;
}

/* The walk's CPU time, which a fresh selection carries (lib/cgroup.h): each opted-in
 * cgroup's to its record, the rest to the subtrees (cost_walk_others). Returns the
 * part of it that was this thread's: all when the tick walked, none when the walker
 * did (measured on the walker's own clock, it is not part of the tick's time). */
static uint64_t charge_walk(struct manager *m, const struct cgroup_selection *sel) {
        uint64_t ns = 0;

        for (size_t i = 0; i < sel->n_entries; i++) {
                struct cg_rec *cg = cg_records_find(&m->cgs, sel->entries[i].path);

                if (!cg)
                        continue;       /* no record (out of memory): unattributed */
                cost_charge(&m->cost, cg, STAGE_WALK, sel->entries[i].walk_ns);
                ns += sel->entries[i].walk_ns;
        }
        ns += cost_walk_others(&m->cost, &m->cgs, sel, m->counters.tick);
        return m->walker ? 0 : ns;
}

/* What the tick spent that no cgroup was charged for yet (the poll over every pidfd,
 * page samples, forgetting, the walk outside directories, the heap trim): per-process
 * work, shared among the cgroups in proportion to their processes. Control requests
 * served during the run are not theirs. */
static void tick_charge_rest(struct manager *m, uint64_t start, uint64_t pump, uint64_t charged,
                             uint64_t sampler_ns) {
        /* The decoding threads' time too (sw-sampler.h): it is the tick's samples'. */
        uint64_t spent = cost_thread_ns() - start + sampler_ns, served = m->cost.pump_ns - pump;

        if (spent > charged + served)
                (void) cost_share_by_procs(&m->cost, &m->cgs, STAGE_BOOKKEEPING, spent - charged - served);
}

static void view_update(struct manager *m);

/* A host with one memory node has nothing to balance: its samplers stay detached, and
 * each tick re-reads the topology (one small file per node: memory hotplug can bring a
 * second node). The tick goes on otherwise, so that list and explain still say what
 * the daemon sees (every process local). When a second node has memory, the records
 * sized by the old topology are forgotten (each process's state is sized by it), and
 * the samplers chosen again for the new one: the tick then admits and watches the
 * processes afresh. */
static void one_node_tick(struct manager *m) {
        struct topology *t = NULL;
        int r;

        if (samplers_second_node(&m->samplers, m->sys_root, &t) <= 0)
                return;
        proc_records_sweep(&m->procs, UINT64_MAX);
        topology_free(m->topo);
        m->topo = t;
        topology_set_slow(m->topo, &m->cfg.slow_nodes);
        react_unwatch_events(&m->react);
        r = samplers_rechoose(&m->samplers, &m->cfg, m->proc_root, m->sys_root, m->topo, m->reader);
        view_update(m);
        if (r < 0) {
                /* [sample] source = bpf and BPF went away: as at start, a refusal. */
                log_error_errno(r, "Cannot sample with the new topology, exiting: %m");
                if (m->event)
                        (void) sd_event_exit(m->event, EXIT_FAILURE);
        } else if (m->event && m->timer)
                react_watch_events(&m->react, m->event);
}

/* The tick that began at t_start is over: its wall time, last and in the histogram. */
static void tick_timed(struct manager *m, uint64_t t_start) {
        counters_log_summary(&m->counters, clock_now_ms());
        m->counters.last_tick_ns = clock_now_ns(CLOCK_MONOTONIC) - t_start;
        histogram_observe(&m->counters.ticks, &histogram_tick_bounds, m->counters.last_tick_ns);
}

int manager_tick(struct manager *m) {
        struct cgroup_selection sel = {};
        struct pass ps;
        uint64_t now = clock_now_ms(), t_start = clock_now_ns(CLOCK_MONOTONIC), cpu_start = cost_thread_ns();
        uint64_t pump = m->cost.pump_ns, sampler_ns;
        bool fresh;
        int r;
        struct service_pool pools[3];
        size_t n_pools = service_pools_of(m, pools);

        m->counters.tick++;
        one_node_tick(m);
        if (!service_cpus_check(&m->service, m->sys_root, pools, n_pools)) {
                tick_timed(m, t_start);
                return 0;
        }
        sampler_ns = tick_prepare(m);
        if (begin_pass(m, &ps, now, t_start) < 0) {
                pass_done(&ps);
                return log_error_errno(-ENOMEM, "Out of memory");
        }
        proc_records_poll_exited(&m->procs);
        r = select_cgroups(m, &sel, &fresh);
        if (r >= 0)
                r = tick_cgroups(m, &ps, &sel, fresh);
        if (fresh)
                ps.charged += charge_walk(m, &sel);
        cgroup_selection_done(&sel);
        if (r < 0)
                keep_all(m, r);
        else
                walker_log_short(&m->tree_log, m->cfg.cgroup_root, 0);

        place_threads(m, now);
        r = run_jobs(m, &ps, false);
        pass_done(&ps);
        forget_departed(m);
        damon_set_cold_age(m->damon, m->cfg.exchange ? m->cfg.cold_age_ms : 0);
        damon_sync_procs(m->damon, &m->procs, m->topo, m->counters.tick, &m->service.online, now);
        publish_cgroups(m);
        cg_records_sweep(&m->cgs);
        /* Each scan's buffers (numa_maps text, parsed VMAs) are freed between records
         * that stay: glibc keeps the freed pages in the middle of the heap resident.
         * Give them back now and then (measured: 25 MB of heap for 1,000 processes,
         * most of it free). */
        if (m->counters.tick % TRIM_EVERY_TICKS == 0)
                (void) malloc_trim(0);
        tick_charge_rest(m, cpu_start, pump, ps.charged, sampler_ns);
        tick_timed(m, t_start);
        return r;
}

static int on_timer(sd_event_source *s, uint64_t usec, void *userdata) {
        struct manager *m = userdata;
        uint64_t next, now;

        /* Nothing is selected before the walker's first walk: rather than a whole tick
         * later, the first tick comes as soon as it is done (and the event loop is not
         * held meanwhile, as a walk of its own would hold it). */
        if (m->walker && walker_walks(m->walker) == 0) {
                sd_event_source_set_time(s, (clock_now_ms() + FIRST_WALK_POLL_MS) * 1000);
                sd_event_source_set_enabled(s, SD_EVENT_ONESHOT);
                return 0;
        }
        (void) manager_tick(m);
        if (m->hooks.after_tick) {
                /* The metrics file: each cgroup in it pays its share. */
                uint64_t t = cost_thread_ns();
                m->hooks.after_tick(&m->view, m->hooks.after_tick_userdata);
                (void) cost_share_even(&m->cost, &m->cgs, STAGE_REPORT, cost_thread_ns() - t);
        }
        cost_update_unattributed(&m->cost);
        /* The next tick. A node-change event does not bring it forward: it has the
         * process that moved scanned on its own (react.h). */
        now = clock_now_ms();
        next = now + m->cfg.tick_ms;
        sd_event_source_set_time(s, next * 1000);
        sd_event_source_set_enabled(s, SD_EVENT_ONESHOT);
        return 0;
}

/* A react pass (react.h): the tick's scans and jobs for the processes it finds due. */
static void *on_react_begin(void *userdata) {
        struct manager *m = userdata;
        struct service_pool pools[3];
        size_t n_pools = service_pools_of(m, pools);
        struct pass *ps = malloc(sizeof(*ps));

        if (!ps)
                return NULL;
        if (begin_pass(m, ps, clock_now_ms(), clock_now_ns(CLOCK_MONOTONIC)) < 0 ||
            !service_cpus_check(&m->service, m->sys_root, pools, n_pools)) {
                pass_done(ps);
                free(ps);
                return NULL;
        }
        m->free_read_tick = 0;     /* free memory read again if anything plans */
        return ps;
}

static void on_react_scan(void *userdata, void *pass, struct proc_rec *p, uint64_t now) {
        struct scan_env env = scan_env_of(userdata);
        struct pass *ps = pass;

        ps->now = now;
        (void) pass_scan(ps, &env, p);
}

static void on_react_end(void *userdata, void *pass, uint64_t now) {
        struct pass *ps = pass;

        ps->now = now;
        (void) run_jobs(userdata, ps, false);
        pass_done(ps);
        free(ps);
}

int manager_start(struct manager *m) {
        int r;

        /* What the start cost (the topology, loading BPF, ...): the daemon's own. */
        m->cost.startup_cpu_ns = clock_now_ns(CLOCK_PROCESS_CPUTIME_ID);
        r = sd_event_add_time_relative(m->event, &m->timer, CLOCK_MONOTONIC, 0, 0, on_timer, m);
        if (r < 0)
                return log_error_errno(r, "Failed to add the tick timer: %m");
        /* The cgroup walk runs beside the ticks from now on (walker.h). */
        r = walker_new(m->cfg.cgroup_root, m->cfg.cgroups, m->cfg.n_cgroups, m->cfg.tick_ms, &m->walker);
        if (r < 0)
                log_warning_errno(r, "Failed to start the cgroup walker, walking at every tick instead: %m");
        /* sd-event's default accuracy (250 ms) would blur react_ms and the tick. */
        (void) sd_event_source_set_time_accuracy(m->timer, 1000);
        react_start(&m->react, m->event);
        return 0;
}

void manager_set_while_moving(struct manager *m, void (*fn)(void *userdata), void *userdata) {
        m->hooks.while_moving = fn;
        m->hooks.while_moving_userdata = userdata;
}

void manager_set_keepalive(struct manager *m, void (*fn)(void *userdata), void *userdata) {
        m->hooks.keepalive = fn;
        m->hooks.keepalive_userdata = userdata;
}

void manager_set_after_tick(struct manager *m, void (*fn)(const struct manager_view *v, void *userdata),
                            void *userdata) {
        m->hooks.after_tick = fn;
        m->hooks.after_tick_userdata = userdata;
}

const struct manager_view *manager_view(const struct manager *m) {
        return &m->view;
}

/* Which memory is a lower tier, once at start and at each reload: what it decides. */
static void log_slow_nodes(const struct topology *t) {
        char slow[NODEMASK_STRMAX];

        if (nodemask_empty(&t->slow))
                return;
        nodemask_format(&t->slow, slow, sizeof(slow));
        log_info("Memory on nodes %s is a lower tier: left where it is, never a target", slow);
}

int manager_reload(struct manager *m, const struct nb_config *cfg) {
        struct nb_config copy = {};
        int r = config_copy(&copy, cfg);

        if (r < 0)
                return log_error_errno(r, "Failed to apply the new configuration: %m");
        config_done(&m->cfg);
        m->cfg = copy;
        migrator_set_limits(m->migrator, m->cfg.rate_limit_mb_s, m->cfg.batch_pages);
        migrator_set_call_rate(m->migrator, m->cfg.rate_limit_calls_s);
        topology_set_slow(m->topo, &m->cfg.slow_nodes);
        log_slow_nodes(m->topo);
        config_report_reloaded(&m->config_report);
        if (m->walker && walker_set_config(m->walker, m->cfg.cgroup_root, m->cfg.cgroups, m->cfg.n_cgroups,
                                           m->cfg.tick_ms) < 0)
                log_warning("The cgroup walker keeps the previous cgroup rules: out of memory");
        /* New thresholds apply to everyone at the next scan. */
        for (size_t i = 0; i < m->procs.n; i++)
                scan_restart_interval(m->procs.v[i], m->cfg.scan_min_ms, clock_now_ms());
        log_info("Configuration reloaded");
        return 0;
}

void manager_note_reload(struct manager *m, bool ok, const struct config_not_applied *v, size_t n) {
        if (ok && n <= CONFIG_NOT_APPLIED_MAX) {  /* refused: the running config's stay */
                memcpy(m->config_report.not_applied, v, n * sizeof(*v));
                m->config_report.n_not_applied = n;
        }
        m->counters.reloads_failed += !ok;
        m->counters.last_reload_failed = !ok;
        m->counters.last_reload_ms = clock_now_ms();
}

void manager_stop(struct manager *m) {
        if (!m)
                return;
        /* First: nothing that follows may wait on a tenant before threads are given back. */
        placer_stop(m->placer);
        if (m->migrator)
                migrator_cancel(m->migrator);
        if (m->timer)
                sd_event_source_set_enabled(m->timer, SD_EVENT_OFF);
        react_stop(&m->react);
}

void manager_status(struct manager *m, char *buf, size_t size) {
        size_t n_cg = 0;
        for (size_t i = 0; i < m->cgs.n; i++)
                n_cg += m->cgs.v[i]->seen;
        snprintf(buf, size, "Watching %zu cgroup%s, %zu process%s; moved %" PRIu64 " MiB in the last minute; source %s",
                 n_cg, n_cg == 1 ? "" : "s", m->procs.n, m->procs.n == 1 ? "" : "es",
                 counters_moved_last_minute(&m->counters) >> 20, page_sampler_chain(m->samplers.source, m->samplers.pages));
}

/* SIGTERM and SIGINT are blocked (sd-event takes them from a signalfd), so a pending
 * one shows in sigpending() while the event loop waits for the migration workers.
 * Called every 100 ms on the event-loop thread while the workers copy: also the only
 * chance for the control socket to be served, and the watchdog pinged, during a run. */
static bool stop_pending(void *ctx) {
        struct manager *m = ctx;
        uint64_t t = cost_thread_ns();

        if (m->hooks.while_moving)
                m->hooks.while_moving(m->hooks.while_moving_userdata);
        if (m->hooks.keepalive && migrator_run_elapsed_ns(m->migrator) < MANAGER_RUN_KEEPALIVE_MS * UINT64_C(1000000))
                m->hooks.keepalive(m->hooks.keepalive_userdata);
        cost_pumped(&m->cost, cost_thread_ns() - t);
        /* The workers' move_pages(2) calls have no time bound: the threads are given
         * back before the run is waited for. */
        return stop_signalled(m);
}

/* A cgroup record the sweep frees: its CPU time stays in the ledger (cg-records.c
 * does not see the ledger). */
static void cg_departed(void *userdata, const struct cg_rec *c) {
        cost_depart(userdata, c);
}

static void records_init(struct manager *m) {
        proc_records_init(&m->procs);
        m->procs.free_place = placer_proc_free;
        cg_records_init(&m->cgs);
        cg_records_set_depart(&m->cgs, cg_departed, &m->cost);
}

/* The reports' view: pointers into m, set once (m never moves). */
static void view_init(struct manager *m) {
        m->view = (struct manager_view) {
                .cfg = &m->cfg,
                .opts = &m->opts,
                .service = &m->service,
                .procs = &m->procs,
                .cgs = &m->cgs,
                .cost = &m->cost,
                .counters = &m->counters,
                .config_report = &m->config_report,
        };
}

/* What manager_new() found or started, into the view and the react pass. */
static void view_update(struct manager *m) {
        m->view.proc_root = m->proc_root;
        m->view.placer = m->placer;
        m->view.shares = &m->shares;
        m->view.topo = m->topo;
        m->view.source = m->samplers.source;
        m->view.pages = m->samplers.pages;
        m->view.damon = m->damon;
        m->view.migrator = m->migrator;
        react_set_env(&m->react, &(struct react_env) {
                .cfg = &m->cfg, .proc_root = m->proc_root, .topo = m->topo, .source = m->samplers.source,
                .procs = &m->procs, .cost = &m->cost, .counters = &m->counters,
        });
}

/* The placer, when the daemon has somewhere to keep the originals of what it changes. */
static int placer_start(struct manager *m, const char *state_dir) {
        _cleanup_free_ char *path = NULL;
        int r;

        if (!state_dir)
                return 0;
        if (asprintf(&path, "%s/%s", state_dir, AFFINITY_STATE_FILE) < 0)
                return log_error_errno(-ENOMEM, "Out of memory");
        r = placer_new(path, m->proc_root, &m->placer);
        if (r >= 0)
                placer_set_serve(m->placer, serve_while_placing, m);
        return r;
}

/* DAMON, where the config and the kernel allow it (damon.h); its kdamonds are recorded
 * under the state directory. */
static int damon_start(struct manager *m, const char *state_dir) {
        _cleanup_free_ char *path = NULL;
        int r;

        if (state_dir && asprintf(&path, "%s/damon", state_dir) < 0)
                return log_error_errno(-ENOMEM, "Out of memory");
        r = damon_new(m->sys_root, path, m->cfg.damon == DAMON_MODE_AUTO, true, &m->damon);
        /* Before the first damon_sync(): the thread reads it only for a wanted slot. */
        return r < 0 ? r : damon_set_proc_root(m->damon, m->proc_root);
}

/* The records, the logs' limits and the roots: what needs no reading of the machine. */
static struct manager *manager_alloc(sd_event *e, const struct manager_opts *o) {
        struct manager *m = calloc(1, sizeof(*m));

        if (!m)
                return NULL;
        records_init(m);
        view_init(m);
        react_init(&m->react, &(struct react_hooks) {
                .begin = on_react_begin, .scan = on_react_scan, .end = on_react_end, .userdata = m });
        walker_log_init(&m->tree_log);
        pass_logs_init(&m->pass_logs);
        samplers_init(&m->samplers);
        m->owner_turn_ns = OWNER_TURN_NS;
        m->read_budget_ns = TICK_READ_BUDGET_NS;
        m->event = sd_event_ref(e);
        m->counters.started_ms = clock_now_ms();
        m->opts = *o;
        m->proc_root = strdup(o->proc_root ? o->proc_root : "/proc");
        m->sys_root = strdup(o->sys_root ? o->sys_root : "/sys");
        m->opts.proc_root = m->proc_root;
        m->opts.sys_root = m->sys_root;
        return m;
}

/* The topology, and the samplers chosen for it. */
static int topology_start(struct manager *m) {
        int r = topology_read(m->sys_root, &m->topo);

        if (r < 0)
                return log_error_errno(r, "Failed to read the NUMA topology under %s/devices/system/node: %m",
                                       m->sys_root);
        topology_set_slow(m->topo, &m->cfg.slow_nodes);
        log_slow_nodes(m->topo);
        return samplers_start(&m->samplers, &m->cfg, m->proc_root, m->sys_root, m->topo);
}

/* The migration workers and the reader threads, on the service CPUs (the first online
 * CPU when none is configured). */
static int workers_start(struct manager *m) {
        nb_cpumask service = m->cfg.service_cpus;
        int r;

        if (cpumask_weight(&service) == 0) {
                int c = cpumask_next(&m->topo->online_cpus, 0);
                if (c >= 0)
                        cpumask_set(&service, (unsigned) c);
        }
        m->service.service = m->service.online = service;
        r = migrator_new(&service, m->cfg.rate_limit_mb_s, m->cfg.batch_pages, &m->migrator);
        if (r < 0)
                return log_error_errno(r, "Failed to start the migration workers: %m");
        migrator_set_call_rate(m->migrator, m->cfg.rate_limit_calls_s);
        migrator_set_should_stop(m->migrator, stop_pending, m);
        migrator_set_run_budget(m->migrator, MOVE_BUDGET_RUN_MS * UINT64_C(1000000));
        r = tenant_reader_new(&service, 0, &m->reader);
        if (r < 0)
                return log_error_errno(r, "Failed to set up the reader threads: %m");
        tenant_reader_set_serve(m->reader, serve_while_reading, m);
        page_sampler_set_reader(m->samplers.pages, m->reader);
        return 0;
}

int manager_new(sd_event *e, const struct nb_config *cfg, const struct manager_opts *o, struct manager **ret) {
        struct manager *m = manager_alloc(e, o);
        int r;

        if (!m)
                return -ENOMEM;
        r = m->proc_root && m->sys_root ? config_copy(&m->cfg, cfg) : -ENOMEM;
        if (r >= 0)
                r = topology_start(m);
        if (r >= 0)
                r = workers_start(m);
        if (r >= 0)
                r = placer_start(m, o->state_dir);
        if (r >= 0)
                r = damon_start(m, o->state_dir);
        if (r < 0) {
                manager_free(m);
                return r;
        }
        view_update(m);
        *ret = m;
        return 0;
}

void manager_free(struct manager *m) {
        if (!m)
                return;
        /* A clean stop gives every thread placed its affinity back (a crash leaves it to
         * the next start: placer_new(), or to ExecStopPost=numabalanced
         * --restore-affinity). SIGTERM did it already (manager_stop(), stop_signalled()):
         * this is for a stop without one. */
        placer_stop(m->placer);
        placer_free(m->placer);
        damon_free(m->damon);
        walker_free(m->walker);
        free(m->cursors);
        sd_event_source_unref(m->timer);
        react_done(&m->react);
        migrator_free(m->migrator);
        tenant_reader_free(m->reader);
        share_groups_done(&m->shares);
        proc_records_done(&m->procs);
        cg_records_done(&m->cgs);
        walker_log_done(&m->tree_log);
        config_report_done(&m->config_report);
        cost_ledger_done(&m->cost);
        samplers_done(&m->samplers);
        topology_free(m->topo);
        config_done(&m->cfg);
        free(m->proc_root);
        free(m->sys_root);
        sd_event_unref(m->event);
        free(m);
}
