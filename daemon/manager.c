/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The tick. Everything the daemon knows lives in struct manager; one thread (the
 * event loop's) reads, decides and hands migration jobs to the workers. */
#include <errno.h>
#include <sched.h>
#include <malloc.h>
#include <signal.h>
#include <inttypes.h>
#include <poll.h>
#include <sys/epoll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>
#include "cgroup.h"
#include "locality.h"
#include "log.h"
#include "manager.h"
#include "manager-internal.h"
#include "maps.h"
#include "migrate.h"
#include "numa_maps.h"
#include "placement.h"
#include "plan.h"
#include "proc.h"
#include "service-cpus.h"
#include "source.h"
#include "topology.h"

/* The two-sample rule (DESIGN.md): a page seen fewer times from its one node is not
 * evidence yet. */
#define PAGE_MIN_SAMPLES 2

static uint64_t now_ns(clockid_t c) {
        struct timespec ts;
        clock_gettime(c, &ts);
        return (uint64_t) ts.tv_sec * 1000000000ull + (uint64_t) ts.tv_nsec;
}

static uint64_t now_ms(void) { return now_ns(CLOCK_MONOTONIC) / 1000000; }

/* --- config copy ------------------------------------------------------------- */

static void cfg_release(struct nb_config *c) {
        free(c->cgroup_root);
        for (size_t i = 0; i < c->n_cgroups; i++)
                free(c->cgroups[i].path);
        free(c->cgroups);
        free(c->metrics_path);
        c->cgroup_root = c->metrics_path = NULL;
        c->cgroups = NULL;
        c->n_cgroups = 0;
}

static int cfg_copy(struct nb_config *dst, const struct nb_config *src) {
        struct nb_config c = *src;

        c.cgroup_root = strdup(src->cgroup_root ? src->cgroup_root : "/sys/fs/cgroup");
        c.metrics_path = src->metrics_path ? strdup(src->metrics_path) : NULL;
        c.cgroups = src->n_cgroups ? calloc(src->n_cgroups, sizeof(*c.cgroups)) : NULL;
        c.n_cgroups = 0;
        if (!c.cgroup_root || (src->metrics_path && !c.metrics_path) || (src->n_cgroups && !c.cgroups))
                goto oom;
        for (size_t i = 0; i < src->n_cgroups; i++) {
                c.cgroups[i].mode = src->cgroups[i].mode;
                c.cgroups[i].path = strdup(src->cgroups[i].path);
                if (!c.cgroups[i].path)
                        goto oom;
                c.n_cgroups++;
        }
        cfg_release(dst);
        *dst = c;
        return 0;
oom:
        cfg_release(&c);
        return -ENOMEM;
}

/* --- records ------------------------------------------------------------------ */

static void proc_rec_free(struct proc_rec *p) {
        if (!p)
                return;
        if (p->pidfd >= 0)
                close(p->pidfd);
        placement_state_done(&p->pl);
        page_agg_free(p->seen);
        free(p->hist);
        free(p->node_bytes);
        free(p);
}

static int cmp_proc(const void *a, const void *b) {
        const struct proc_rec *x = *(struct proc_rec *const *) a, *y = *(struct proc_rec *const *) b;
        return (x->pid > y->pid) - (x->pid < y->pid);
}

static struct proc_rec *find_proc(struct manager *m, pid_t pid) {
        size_t lo = 0, hi = m->n_procs;
        while (lo < hi) {
                size_t mid = lo + (hi - lo) / 2;
                if (m->procs[mid]->pid == pid)
                        return m->procs[mid];
                if (m->procs[mid]->pid < pid)
                        lo = mid + 1;
                else
                        hi = mid;
        }
        return NULL;
}

static struct cg_rec *get_cg(struct manager *m, const struct cgroup_entry *e) {
        const char *path = e->path;
        enum cg_mode mode = e->mode;
        struct cg_rec *c, **n;
        struct stat st;
        char full[4096];

        for (size_t i = 0; i < m->n_cgs; i++)
                if (strcmp(m->cgs[i]->path, path) == 0) {
                        m->cgs[i]->mode = mode;
                        m->cgs[i]->source = e->source;
                        return m->cgs[i];
                }
        c = calloc(1, sizeof(*c));
        if (!c)
                return NULL;
        c->path = strdup(path);
        n = realloc(m->cgs, (m->n_cgs + 1) * sizeof(*n));
        if (!c->path || !n) {
                free(c->path);
                free(c);
                if (n)
                        m->cgs = n;
                return NULL;
        }
        m->cgs = n;
        c->mode = mode;
        c->source = e->source;
        snprintf(full, sizeof(full), "%s%s", m->cfg.cgroup_root, strcmp(path, "/") == 0 ? "" : path);
        c->owner = stat(full, &st) == 0 ? st.st_uid : 0;
        m->cgs[m->n_cgs++] = c;
        return c;
}

/* One poll(2) over every known process's pidfd at the start of a tick (rather than
 * one call per process: with a thousand processes that was a thousand syscalls a
 * tick). A process whose pidfd cannot be polled counts as exited: re-checked. */
static void mark_exited(struct manager *m) {
        _cleanup_free_ struct pollfd *pfd = calloc(m->n_procs ? m->n_procs : 1, sizeof(*pfd));
        int r;

        for (size_t i = 0; pfd && i < m->n_procs; i++)
                pfd[i] = (struct pollfd) { .fd = m->procs[i]->pidfd, .events = POLLIN };
        do
                r = pfd ? poll(pfd, m->n_procs, 0) : -1;
        while (r < 0 && errno == EINTR);
        for (size_t i = 0; i < m->n_procs; i++)
                m->procs[i]->exited = r < 0 || pfd[i].revents != 0;
}

/* Opens a pidfd and checks that it names the process we read (same start time):
 * from then on the pidfd tells us if that process exits, whatever its pid becomes. */
static int open_checked_pidfd(struct manager *m, pid_t pid, uint64_t starttime) {
        struct proc_stat st;
        int fd = (int) syscall(SYS_pidfd_open, pid, 0);
        if (fd < 0)
                return -errno;
        if (proc_read_stat(m->proc_root, pid, &st) < 0 || st.starttime != starttime) {
                close(fd);
                return -ESRCH;
        }
        return fd;
}

/* --- logging once ------------------------------------------------------------- */

static void log_invalid_once(struct manager *m, const struct cgroup_invalid *inv) {
        char key[1024];
        snprintf(key, sizeof(key), "%s|%s|%s|%s", inv->path, inv->xattr, inv->value, inv->why);
        for (size_t i = 0; i < m->n_invalid_seen; i++)
                if (strcmp(m->invalid_seen[i], key) == 0)
                        return;
        log_warning("cgroup=%s: %s=\"%s\": %s, treating as unset", inv->path, inv->xattr, inv->value, inv->why);
        if (m->n_invalid_seen < INVALID_SEEN_MAX) {
                char **n = realloc(m->invalid_seen, (m->n_invalid_seen + 1) * sizeof(*n));
                if (n) {
                        m->invalid_seen = n;
                        if ((m->invalid_seen[m->n_invalid_seen] = strdup(key)))
                                m->n_invalid_seen++;
                }
        }
}

/* --- the tick ----------------------------------------------------------------- */

struct scan {
        struct proc_rec *rec;
        struct plan plan;          /* VMA-level: memory follows CPU */
        struct plan pages;         /* page-level: sampled pages to the node that touches them */
        struct numa_maps *maps;
};

static void history_note(struct proc_rec *p, uint64_t start, int target, uint64_t when) {
        for (size_t i = 0; i < p->n_hist; i++)
                if (p->hist[i].start == start) {
                        p->hist[i].target = target;
                        p->hist[i].when_ms = when;
                        return;
                }
        if (p->n_hist == p->cap_hist && p->cap_hist < HISTORY_MAX) {
                size_t nc = p->cap_hist ? p->cap_hist * 2 : 4;
                struct plan_history *n = realloc(p->hist, (nc < HISTORY_MAX ? nc : HISTORY_MAX) * sizeof(*n));
                if (n) {
                        p->hist = n;
                        p->cap_hist = nc < HISTORY_MAX ? nc : HISTORY_MAX;
                }
        }
        if (p->n_hist == p->cap_hist) {
                if (p->n_hist == 0)
                        return; /* out of memory: no cooldown for this range */
                /* Drop the oldest. */
                size_t old = 0;
                for (size_t i = 1; i < p->n_hist; i++)
                        if (p->hist[i].when_ms < p->hist[old].when_ms)
                                old = i;
                p->hist[old] = p->hist[--p->n_hist];
        }
        p->hist[p->n_hist++] = (struct plan_history) { start, target, when };
}

static bool changed(uint64_t a, uint64_t b) {
        uint64_t d = a > b ? a - b : b - a, base = a > b ? a : b;
        return base && d * 100 > base * CHANGE_PCT;
}

/* Reads and decides for one process. Returns 1 with a plan in *s, 0 when it was
 * not scanned, -errno when it is gone. */
static int scan_process(struct manager *m, struct proc_rec *p, uint64_t now, uint64_t *reserved, struct scan *s) {
        _cleanup_free_ char *buf = NULL;
        _cleanup_free_ struct vma_range *ranges = NULL;
        _cleanup_free_ uint64_t *ends = NULL;
        _cleanup_free_ uint64_t *cpu = NULL;
        _cleanup_(numa_maps_freep) struct numa_maps *maps = NULL;
        struct proc_status status;
        struct locality loc;
        struct plan_input in;
        struct plan_params pp;
        size_t len = 0, n_ranges = 0;
        uint64_t t0, t1, t2;
        bool changing = false;
        int r, primed;

        t0 = now_ns(CLOCK_THREAD_CPUTIME_ID);
        p->react_due_ms = 0;
        cpu = calloc(m->topo->n_nodes ? m->topo->n_nodes : 1, sizeof(*cpu));
        if (!cpu)
                return -ENOMEM;
        primed = m->source->sample(m->source, m->proc_root, p->pid, m->topo, &p->pl, cpu);
        if (primed < 0)
                return primed;
        if (primed == 0) {
                /* First sight: the source has a baseline only. Rather than wait a whole
                 * tick, decide on where the threads are now (placement.h). */
                r = placement_first_estimate(m->proc_root, p->pid, m->topo, cpu);
                if (r < 0)
                        return r;
        }
        if (primed > 0 && !p->seen && p->scans > 0) {
                uint64_t total = 0;
                for (unsigned i = 0; i < m->topo->n_nodes; i++)
                        total += cpu[i];
                if (total == 0) {
                        /* Its threads did not run since the last scan: the decision is
                         * "no CPU time" whatever its maps say (plan_decide needs CPU time
                         * to choose a node), so they are not read again. Idle processes
                         * (most of a server's) cost one sample per scan; the locality
                         * shown is that of the last full read. */
                        p->reason = REASON_NO_CPU_TIME;
                        p->planned_bytes = 0;
                        p->last_scan_ms = now;
                        p->scans++;
                        p->interval_ms = p->interval_ms ? p->interval_ms * BACKOFF_FACTOR : m->cfg.scan_min_ms;
                        if (p->interval_ms > m->cfg.scan_max_ms)
                                p->interval_ms = m->cfg.scan_max_ms;
                        p->next_scan_ms = now + p->interval_ms;
                        t1 = now_ns(CLOCK_THREAD_CPUTIME_ID);
                        p->cost_ns[STAGE_READ] += t1 - t0;
                        p->cg->cost_ns[STAGE_READ] += t1 - t0;
                        return 0;
                }
        }
        r = proc_read_status(m->proc_root, p->pid, &status);
        if (r < 0)
                return r;
        p->uid = status.uid_real;
        {
                /* The tick does not re-read stat for a live known process; its name may
                 * have changed (exec, prctl) since: refresh it here. */
                struct proc_stat st;
                if (proc_read_stat(m->proc_root, p->pid, &st) == 0 && st.starttime == p->starttime)
                        snprintf(p->comm, sizeof(p->comm), "%s", st.comm);
        }
        if (status.vm_rss_kb < m->cfg.min_rss_kb) {
                p->reason = REASON_TOO_SMALL;
                p->interval_ms = m->cfg.scan_max_ms;
                p->next_scan_ms = now + p->interval_ms;
                return 0;
        }
        r = proc_read_numa_maps(m->proc_root, p->pid, &buf, &len);
        if (r < 0)
                return r;
        r = numa_maps_parse(buf, len, &maps);
        if (r < 0)
                return r;
        if (maps->n_bad_lines)
                log_debug("pid=%d: %u numa_maps line(s) did not parse (first: %u), ignoring", (int) p->pid,
                          maps->n_bad_lines, maps->bad_lines[0]);
        r = proc_read_maps(m->proc_root, p->pid, &ranges, &n_ranges);
        if (r < 0)
                return r;
        ends = calloc(maps->n_vmas ? maps->n_vmas : 1, sizeof(*ends));
        if (!ends)
                return -ENOMEM;
        for (size_t i = 0; i < maps->n_vmas; i++)
                ends[i] = maps_end_of(ranges, n_ranges, maps->vmas[i].start);
        t1 = now_ns(CLOCK_THREAD_CPUTIME_ID);

        in = (struct plan_input) {
                .maps = maps,
                .vma_end = ends,
                .mems_allowed = status.has_mems_allowed ? status.mems_allowed : m->topo->with_memory,
                .cpu_ns = cpu,
                .history = p->hist,
                .n_history = p->n_hist,
                .now_ms = now,
        };
        pp = (struct plan_params) {
                .min_cpu_share_pct = m->cfg.min_cpu_share_pct,
                .cooldown_ms = m->cfg.cooldown_ms,
                .free_floor_pct = m->cfg.free_floor_pct,
                .move_shared = m->cfg.move_shared,
                .move_preferred = m->cfg.move_preferred,
                .min_misplaced_kb = m->cfg.min_misplaced_kb,
                .max_bytes = m->cfg.batch_pages * 4096 * BATCHES_PER_PROCESS_PER_TICK,
        };
        r = plan_decide(m->topo, &in, &pp, reserved, &s->plan);
        if (r < 0)
                return r;
        if (p->seen) {
                /* Page-level evidence since the last scan: pages touched from one node
                 * only go there, within their VMA's allowed set (plan_pages). The
                 * evidence is used once: what counts is where pages are touched now. */
                struct page_decision d;
                r = page_agg_decide(p->seen, PAGE_MIN_SAMPLES, &d);
                if (r < 0)
                        return r;
                r = plan_pages(m->topo, &in, &pp, &d, &s->plan, reserved, &s->pages);
                p->pages_seen = d.pages;
                p->pages_shared = d.shared;
                page_decision_done(&d);
                if (r < 0)
                        return r;
                page_agg_free(p->seen);
                p->seen = NULL;
                p->page_planned_bytes = s->pages.bytes;
                if (s->pages.n_moves)
                        log_debug("cgroup=%s pid=%d: page-level: %zu page(s) sampled, %zu shared, %s %" PRIu64
                                  " KiB in %zu range(s)", p->cg->path, (int) p->pid, p->pages_seen, p->pages_shared,
                                  p->cg->mode == CG_MODE_ADVISE || m->opts.dry_run ? "would move" : "moving",
                                  s->pages.bytes / 1024, s->pages.n_moves);
        } else
                p->page_planned_bytes = 0;

        /* Report: locality against the nodes the threads ran on in the window. */
        r = locality_compute(m->topo, maps, NULL, 0, &loc);
        if (r >= 0) {
                uint64_t local = 0;
                for (unsigned i = 0; i < m->topo->n_nodes; i++)
                        if (cpu[i])
                                local += loc.bytes[i];
                changing = changed(p->total_bytes, loc.total_bytes) || changed(p->local_bytes, local);
                p->total_bytes = loc.total_bytes;
                p->local_bytes = local;
                if (!p->node_bytes)
                        p->node_bytes = calloc(m->topo->n_nodes ? m->topo->n_nodes : 1, sizeof(*p->node_bytes));
                if (p->node_bytes)
                        memcpy(p->node_bytes, loc.bytes, m->topo->n_nodes * sizeof(*p->node_bytes));
                locality_done(&loc);
        }
        t2 = now_ns(CLOCK_THREAD_CPUTIME_ID);
        p->cost_ns[STAGE_READ] += t1 - t0;
        p->cost_ns[STAGE_DECIDE] += t2 - t1;
        p->cg->cost_ns[STAGE_READ] += t1 - t0;
        p->cg->cost_ns[STAGE_DECIDE] += t2 - t1;

        if (s->plan.reason != p->reason || (s->plan.n_moves && p->cg->mode == CG_MODE_ADVISE &&
                                              changed(p->planned_bytes, s->plan.bytes))) {
                struct log_fields lf = {};
                log_fields_str(&lf, "NUMABALANCED_CGROUP", p->cg->path);
                log_fields_i64(&lf, "NUMABALANCED_PID", p->pid);
                log_fields_str(&lf, "NUMABALANCED_REASON", plan_reason_name(s->plan.reason));
                if (s->plan.n_moves) {
                        log_fields_u64(&lf, "NUMABALANCED_PAGES", s->plan.bytes / 4096);
                        log_fields_i64(&lf, "NUMABALANCED_TO", s->plan.moves[0].target);
                        log_full_errno_fields(LOG_LVL_INFO, 0, &lf,
                                 "cgroup=%s pid=%d comm=%s: %s %" PRIu64 " KiB in %zu VMA(s) to node %d",
                                 p->cg->path, (int) p->pid, p->comm,
                                 p->cg->mode == CG_MODE_ADVISE || m->opts.dry_run ? "advise: would move" : "moving",
                                 s->plan.bytes / 1024, s->plan.n_moves, s->plan.moves[0].target);
                } else
                        log_full_errno_fields(LOG_LVL_INFO, 0, &lf, "cgroup=%s pid=%d comm=%s: not moving: %s (reason=%s)",
                                 p->cg->path, (int) p->pid, p->comm, plan_reason_text(s->plan.reason),
                                 plan_reason_name(s->plan.reason));
        }
        p->reason = s->plan.reason;
        p->planned_bytes = s->plan.bytes;
        p->hot_node = s->plan.hot_node;
        p->target_node = s->plan.n_moves ? s->plan.moves[0].target : -1;
        memcpy(p->skipped_bytes, s->plan.skipped_bytes, sizeof(p->skipped_bytes));
        p->last_scan_ms = now;
        p->scans++;
        p->mems_allowed = in.mems_allowed;
        p->uid = status.uid_real;

        /* Backoff: scan often while misplaced or changing, rarely once settled. */
        if (s->plan.n_moves || s->pages.n_moves || primed == 0 || changing || p->interval_ms == 0)
                p->interval_ms = m->cfg.scan_min_ms;
        else {
                p->interval_ms *= BACKOFF_FACTOR;
                if (p->interval_ms > m->cfg.scan_max_ms)
                        p->interval_ms = m->cfg.scan_max_ms;
        }
        p->next_scan_ms = now + p->interval_ms;
        s->maps = TAKE_PTR(maps);
        return 1;
}

static void count_moved(struct manager *m, uint64_t bytes) {
        uint64_t sec = now_ms() / 1000;
        size_t slot = sec % ELEMENTSOF(m->moved_ring);
        if (m->ring_sec[slot] != sec) {
                m->ring_sec[slot] = sec;
                m->moved_ring[slot] = 0;
        }
        m->moved_ring[slot] += bytes;
}

uint64_t manager_moved_last_minute(struct manager *m) {
        uint64_t sec = now_ms() / 1000, sum = 0;
        for (size_t i = 0; i < ELEMENTSOF(m->moved_ring); i++)
                if (m->ring_sec[i] + ELEMENTSOF(m->moved_ring) > sec)
                        sum += m->moved_ring[i];
        return sum;
}

/* More pages to move first; then by pid and target, so that the order is fixed. */
static int cmp_job_size(const void *a, const void *b) {
        const struct migrate_job *x = a, *y = b;

        if (x->max_pages != y->max_pages)
                return x->max_pages > y->max_pages ? -1 : 1;
        if (x->pid != y->pid)
                return x->pid < y->pid ? -1 : 1;
        return (x->target_node > y->target_node) - (x->target_node < y->target_node);
}

/* Adds pl's moves of scan i to the jobs, one job per (scan, target node). */
static int add_moves(struct migrate_job *jobs, size_t *job_scan, size_t *n_jobs, size_t i, struct scan *sc,
                     const struct plan *pl, bool move_all, size_t ranges_cap) {
        struct proc_rec *p = sc->rec;

        for (size_t k = 0; k < pl->n_moves; k++) {
                struct migrate_job *j = NULL;
                for (size_t q = 0; q < *n_jobs; q++)
                        if (job_scan[q] == i && jobs[q].target_node == pl->moves[k].target)
                                j = &jobs[q];
                if (!j) {
                        j = &jobs[*n_jobs];
                        job_scan[(*n_jobs)++] = i;
                        *j = (struct migrate_job) {
                                .pid = p->pid,
                                .pidfd = p->pidfd,
                                .starttime = p->starttime,
                                .target_node = pl->moves[k].target,
                                .move_all = move_all,
                                .cgroup = p->cg->path,
                                .userdata = p,
                        };
                        j->ranges = calloc(ranges_cap, sizeof(*j->ranges));
                        if (!j->ranges)
                                return -ENOMEM;
                }
                j->ranges[j->n_ranges++] = (struct migrate_range) {
                        .start = pl->moves[k].start,
                        .end = pl->moves[k].end,
                        .page_size = pl->moves[k].page_size ? pl->moves[k].page_size : 4096,
                };
                j->max_pages += pl->moves[k].bytes / 4096;
        }
        return 0;
}

/* A range moved whole is remembered for the cooldown; single pages are not (their
 * evidence is fresh samples, and they would crowd the VMAs out of the history). */
static bool is_page_range(const struct scan *scans, size_t n_scans, const struct proc_rec *p,
                          const struct migrate_range *r) {
        for (size_t i = 0; i < n_scans; i++)
                if (scans[i].rec == p)
                        for (size_t k = 0; k < scans[i].pages.n_moves; k++)
                                if (r->start >= scans[i].pages.moves[k].start && r->start < scans[i].pages.moves[k].end)
                                        return true;
        return false;
}

/* Builds one job per (process, target node) from the scans' plans and runs them. */
static int run_jobs(struct manager *m, struct scan *scans, size_t n_scans, uint64_t now) {
        _cleanup_free_ struct migrate_job *jobs = NULL;
        _cleanup_free_ size_t *job_scan = NULL;
        size_t n_jobs = 0, cap = 0;
        int r;

        for (size_t i = 0; i < n_scans; i++)
                cap += scans[i].plan.n_moves + scans[i].pages.n_moves;
        if (cap == 0)
                return 0;
        jobs = calloc(cap, sizeof(*jobs));
        job_scan = calloc(cap, sizeof(*job_scan));
        if (!jobs || !job_scan)
                return -ENOMEM;

        for (size_t i = 0; i < n_scans; i++) {
                struct proc_rec *p = scans[i].rec;
                size_t n = scans[i].plan.n_moves + scans[i].pages.n_moves;

                if (!n || p->cg->mode != CG_MODE_BALANCE || m->opts.dry_run)
                        continue;
                r = add_moves(jobs, job_scan, &n_jobs, i, &scans[i], &scans[i].plan, m->cfg.move_shared, n);
                if (r >= 0)
                        r = add_moves(jobs, job_scan, &n_jobs, i, &scans[i], &scans[i].pages, m->cfg.move_shared, n);
                if (r < 0)
                        goto finish;
        }
        if (n_jobs == 0)
                return 0;
        /* Largest gain first across processes too: the workers take jobs in order and
         * the tick waits for all, so a long-lived process with much to move must not
         * queue behind small, often short-lived ones (bench churn). */
        qsort(jobs, n_jobs, sizeof(*jobs), cmp_job_size);

        /* One large job would keep one service CPU busy while the others wait: split
         * it among the workers (parts of at least SPLIT_MIN_BYTES), so that several
         * service CPUs copy one process's memory in parallel. */
        if (migrator_n_workers(m->migrator) > 1) {
                unsigned workers = migrator_n_workers(m->migrator);
                struct migrate_job *all = NULL;
                size_t n_all = 0;

                for (size_t q = 0; q < n_jobs; q++) {
                        _cleanup_free_ struct migrate_job *parts = NULL;
                        struct migrate_job *na;
                        size_t n_parts = 0;

                        r = migrate_job_split(&jobs[q], workers, SPLIT_MIN_BYTES, &parts, &n_parts);
                        if (r < 0)
                                break;
                        na = realloc(all, (n_all + n_parts) * sizeof(*na));
                        if (!na) {
                                for (size_t k = 0; k < n_parts; k++)
                                        free(parts[k].ranges);
                                r = -ENOMEM;
                                break;
                        }
                        all = na;
                        memcpy(all + n_all, parts, n_parts * sizeof(*parts));
                        n_all += n_parts;
                }
                if (r < 0) {
                        /* Not split: run the jobs whole. */
                        for (size_t k = 0; k < n_all; k++)
                                free(all[k].ranges);
                        free(all);
                } else {
                        for (size_t q = 0; q < n_jobs; q++)
                                free(jobs[q].ranges);
                        free(jobs);
                        jobs = all;
                        n_jobs = n_all;
                }
        }

        r = migrator_run(m->migrator, jobs, n_jobs);
        if (r < 0)
                log_error_errno(r, "Failed to run migration jobs: %m");

        for (size_t q = 0; q < n_jobs; q++) {
                struct migrate_job *j = &jobs[q];
                struct proc_rec *p = j->userdata;

                for (int c = 0; c < _MIG_CLASS_MAX; c++) {
                        p->pages[c] += j->pages[c];
                        p->cg->pages[c] += j->pages[c];
                        m->total_pages[c] += j->pages[c];
                }
                p->cost_ns[STAGE_MIGRATE] += j->cpu_ns;
                p->cg->cost_ns[STAGE_MIGRATE] += j->cpu_ns;
                count_moved(m, j->pages[MIG_MOVED] * 4096);
                if (j->error)
                        log_info_errno(j->error, "cgroup=%s pid=%d: migration stopped: %m", j->cgroup, (int) j->pid);
                if (j->pages[MIG_MOVED])
                        for (size_t k = 0; k < j->n_ranges; k++)
                                if (!is_page_range(scans, n_scans, p, &j->ranges[k]))
                                        history_note(p, j->ranges[k].start, j->target_node, now);
        }
        r = 0;
finish:
        for (size_t q = 0; q < n_jobs; q++)
                free(jobs[q].ranges);
        return r;
}

/* Service CPUs can go offline (hotplug): the kernel then lets the threads pinned to
 * them run anywhere, which would put the daemon's work on the workload's CPUs. Each
 * tick, the online service CPUs are compared with the last tick's: on a change, the
 * event-loop thread and the workers are pinned again to those still online (a
 * worker back to its own CPU when it returns), and it is logged. With none online
 * the tick does nothing: returns false. */
static bool service_cpus_check(struct manager *m) {
        nb_cpumask online, now = {};
        char all[256], cur[256];
        int r;

        if (topology_read_online_cpus(m->sys_root, &online) < 0)
                return cpumask_weight(&m->service_online) > 0;   /* cannot tell: as before */
        for (size_t i = 0; i < ELEMENTSOF(now.w); i++)
                now.w[i] = m->service.w[i] & online.w[i];
        if (memcmp(&now, &m->service_online, sizeof(now)) == 0)
                return cpumask_weight(&now) > 0;
        m->service_online = now;
        cpumask_format(&m->service, all, sizeof(all));
        cpumask_format(&now, cur, sizeof(cur));
        if (cpumask_weight(&now) == 0) {
                log_error("All service CPUs (%s) are offline: not scanning or moving anything until one is back "
                          "(the daemon's work must not run on the workload's CPUs)", all);
                return false;
        }
        r = cpus_pin_thread(pthread_self(), &now);
        if (r < 0)
                log_warning_errno(r, "Failed to pin the daemon to service CPUs %s: %m", cur);
        r = migrator_repin(m->migrator, &now);
        if (r < 0)
                log_warning_errno(r, "Failed to pin the migration workers to service CPUs %s: %m", cur);
        if (cpumask_weight(&now) < cpumask_weight(&m->service))
                log_warning("Service CPUs %s: only %s online, working on %s (%d worker(s) away from their own CPU)",
                            all, cur, cur, r > 0 ? r : 0);
        else
                log_notice("Service CPUs %s all online again: each worker back on its own CPU", all);
        return true;
}

/* A count of page-level samples (page_sampler_drain): kept for the process's next scan. */
static void on_page_sample(void *userdata, pid_t tgid, uint64_t addr, unsigned node, uint64_t count) {
        struct manager *m = userdata;
        struct proc_rec *p = find_proc(m, tgid);

        m->page_samples += count;
        if (!p)
                return; /* exited, or not (yet) ours */
        if (!p->seen && page_agg_new(m->topo, 4096, &p->seen) < 0)
                return;
        (void) page_agg_add_counts(p->seen, addr, node, count);
}

/* A record seen this tick holds pid (a reused pid gets a new record before the old
 * one is forgotten: the new one's watch must stay). */
static bool pid_current(struct manager *m, pid_t pid) {
        for (size_t i = 0; i < m->n_procs; i++)
                if (m->procs[i]->pid == pid && m->procs[i]->seen_tick == m->tick)
                        return true;
        return false;
}

int manager_tick(struct manager *m) {
        struct cgroup_selection sel = {};
        _cleanup_free_ struct scan *scans = NULL;
        _cleanup_free_ uint64_t *reserved = NULL;
        size_t n_scans = 0, cap_scans = 0;
        uint64_t now = now_ms(), t_start = now_ns(CLOCK_MONOTONIC);
        int r;

        m->tick++;
        if (!service_cpus_check(m)) {
                m->last_tick_ns = now_ns(CLOCK_MONOTONIC) - t_start;
                return 0;
        }
        if (m->pages) {
                r = page_sampler_drain(m->pages, on_page_sample, m);
                if (r < 0)
                        log_debug_errno(r, "Failed to read the page-level samples: %m");
        }
        r = topology_refresh_free(m->topo, m->sys_root);
        if (r < 0)
                log_warning_errno(r, "Failed to read free memory per node, using the previous values: %m");
        reserved = calloc(m->topo->n_nodes ? m->topo->n_nodes : 1, sizeof(*reserved));
        if (!reserved)
                return log_error_errno(-ENOMEM, "Out of memory");

        mark_exited(m);
        r = cgroup_select(m->cfg.cgroup_root, m->cfg.cgroups, m->cfg.n_cgroups, &sel);
        if (r < 0) {
                /* The cgroup root missing is not fatal: it may be mounted later. */
                log_full_errno(m->tick == 1 ? LOG_LVL_ERR : LOG_LVL_DEBUG, r,
                               "Failed to walk the cgroup tree at %s, nothing selected: %m", m->cfg.cgroup_root);
                sel = (struct cgroup_selection) {};
        }
        for (size_t i = 0; i < sel.n_invalid; i++)
                log_invalid_once(m, &sel.invalid[i]);
        if (sel.truncated && !m->walk_truncated_logged)
                log_warning("The cgroup tree under %s is deeper than %d levels or has more than %d cgroups: "
                            "the rest was not looked at, ignoring it", m->cfg.cgroup_root, CGROUP_WALK_MAX_DEPTH,
                            CGROUP_WALK_MAX_CGROUPS);
        m->walk_truncated_logged = sel.truncated;
        for (size_t i = 0; i < m->n_cgs; i++) {
                m->cgs[i]->seen = false;
                m->cgs[i]->n_procs = 0;
        }

        for (size_t e = 0; e < sel.n_entries; e++) {
                _cleanup_free_ pid_t *pids = NULL;
                size_t n_pids = 0;
                struct cg_rec *cg = get_cg(m, &sel.entries[e]);

                if (!cg)
                        continue;
                cg->seen = true;
                r = cgroup_read_procs(m->cfg.cgroup_root, sel.entries[e].path, &pids, &n_pids);
                if (r < 0) {
                        log_debug_errno(r, "cgroup=%s: cannot read cgroup.procs, ignoring: %m", cg->path);
                        continue;
                }
                for (size_t k = 0; k < n_pids; k++) {
                        struct proc_rec *p = find_proc(m, pids[k]);
                        struct proc_stat st;

                        if (pids[k] == getpid())
                                continue;
                        /* Known and alive (its pidfd not readable): the pid still names
                         * the process we opened, so its stat need not be read again:
                         * with a thousand settled processes, this read was most of
                         * the tick. */
                        if (p && !p->exited)
                                goto known;
                        if (proc_read_stat(m->proc_root, pids[k], &st) < 0)
                                continue; /* gone already */
                        if (p && p->starttime != st.starttime) {
                                /* The pid was reused: a different process. Forget the old one. */
                                p->seen_tick = 0;
                                p = NULL;
                        }
                        if (st.state == 'Z' || st.state == 'X' || (st.flags & PF_KTHREAD_FLAG))
                                continue;
                        if (!p) {
                                struct proc_rec **n;
                                int fd = open_checked_pidfd(m, pids[k], st.starttime);
                                if (fd < 0)
                                        continue;
                                p = calloc(1, sizeof(*p));
                                n = realloc(m->procs, (m->n_procs + 1) * sizeof(*n));
                                if (!p || !n) {
                                        free(p);
                                        close(fd);
                                        if (n)
                                                m->procs = n;
                                        continue;
                                }
                                m->procs = n;
                                p->pid = pids[k];
                                p->starttime = st.starttime;
                                p->pidfd = fd;
                                p->reason = _REASON_MAX;
                                p->hot_node = p->target_node = -1;
                                p->next_scan_ms = now;
                                m->procs[m->n_procs++] = p;
                                if (m->pages) {
                                        r = page_sampler_watch(m->pages, p->pid);
                                        if (r < 0)
                                                log_debug_errno(r, "pid=%d: not sampled page by page: %m", (int) p->pid);
                                }
                                /* Kept sorted for find_proc(); appended at the end, so
                                 * re-sort (rare: only when processes arrive). */
                                qsort(m->procs, m->n_procs, sizeof(*m->procs), cmp_proc);
                        }
                        snprintf(p->comm, sizeof(p->comm), "%s", st.comm);
                known:
                        if (p->seen_tick == m->tick)
                                continue; /* listed twice */
                        p->seen_tick = m->tick;
                        p->cg = cg;
                        cg->n_procs++;
                        if (now < p->next_scan_ms)
                                continue;

                        if (n_scans == cap_scans) {
                                size_t nc = cap_scans ? cap_scans * 2 : 64;
                                struct scan *ns = realloc(scans, nc * sizeof(*ns));
                                if (!ns)
                                        continue;
                                scans = ns;
                                cap_scans = nc;
                        }
                        scans[n_scans] = (struct scan) { .rec = p };
                        r = scan_process(m, p, now, reserved, &scans[n_scans]);
                        if (r > 0)
                                n_scans++;
                        else if (r < 0 && r != -ESRCH && r != -ENOENT)
                                log_debug_errno(r, "cgroup=%s pid=%d: cannot read, ignoring: %m", cg->path, (int) p->pid);
                }
        }
        cgroup_selection_done(&sel);

        r = run_jobs(m, scans, n_scans, now);

        for (size_t i = 0; i < n_scans; i++) {
                plan_done(&scans[i].plan);
                plan_done(&scans[i].pages);
                numa_maps_free(scans[i].maps);
        }

        /* Forget processes that left (exited, or their cgroup opted out). */
        {
                size_t w = 0;
                for (size_t i = 0; i < m->n_procs; i++) {
                        if (m->procs[i]->seen_tick == m->tick)
                                m->procs[w++] = m->procs[i];
                        else {
                                /* If a new record holds the pid (reused), its next
                                 * sample() watches it again from a new baseline. */
                                placement_source_unwatch(m->source, m->procs[i]->pid);
                                if (m->pages && !pid_current(m, m->procs[i]->pid))
                                        page_sampler_unwatch(m->pages, m->procs[i]->pid);
                                proc_rec_free(m->procs[i]);
                        }
                }
                m->n_procs = w;
        }
        /* Each scan's buffers (numa_maps text, parsed VMAs) are freed between records
         * that stay: glibc keeps the freed pages in the middle of the heap resident.
         * Give them back now and then (measured: 25 MB of heap for 1,000 processes,
         * most of it free). */
        if (m->tick % TRIM_EVERY_TICKS == 0)
                (void) malloc_trim(0);
        m->last_tick_ns = now_ns(CLOCK_MONOTONIC) - t_start;
        return r;
}

static int on_timer(sd_event_source *s, uint64_t usec, void *userdata) {
        struct manager *m = userdata;
        uint64_t next, now;

        (void) manager_tick(m);
        if (m->after_tick)
                m->after_tick(m, m->after_tick_userdata);
        /* The next tick, or earlier if a node-change event asked for a scan sooner. */
        now = now_ms();
        next = now + m->cfg.tick_ms;
        /* A due time already past (its process was not listed this tick) is not
         * waited for: that would spin. */
        for (size_t i = 0; i < m->n_procs; i++)
                if (m->procs[i]->react_due_ms > now && m->procs[i]->react_due_ms < next)
                        next = m->procs[i]->react_due_ms;
        sd_event_source_set_time(s, next * 1000);
        sd_event_source_set_enabled(s, SD_EVENT_ONESHOT);
        return 0;
}

/* A thread of pid started running on another node (BPF source). Restart the
 * process's window now (the CPU time before the move says nothing about where it runs
 * next) and decide again react_ms later, whatever its backoff: a process settled for
 * minutes is otherwise rescanned only every scan_max_ms. */
static void on_node_change(void *userdata, pid_t pid, int node) {
        struct manager *m = userdata;
        struct proc_rec *p = find_proc(m, pid);
        uint64_t due, when_usec;
        _cleanup_free_ uint64_t *scratch = NULL;

        m->node_events++;
        if (!p || !p->cg || p->cg->mode == CG_MODE_OFF || m->cfg.react_ms == 0)
                return;
        due = now_ms() + m->cfg.react_ms;
        /* A react scan already pending has this move in its window. Otherwise the
         * window restarts even if a scan is due sooner: that scan would decide on
         * CPU time mostly from before the move, find no node above the hysteresis,
         * and the process would wait for the one after. Pending at most once, so a
         * process whose threads keep moving cannot postpone its scans forever. */
        if (p->react_due_ms > now_ms())
                return;
        p->react_due_ms = due;
        log_debug("cgroup=%s pid=%d: a thread now runs on node %d, deciding again in %" PRIu64 " ms", p->cg->path,
                  (int) pid, node, m->cfg.react_ms);
        scratch = calloc(m->topo->n_nodes ? m->topo->n_nodes : 1, sizeof(*scratch));
        if (scratch && p->pl.primed)
                (void) m->source->sample(m->source, m->proc_root, p->pid, m->topo, &p->pl, scratch);
        p->interval_ms = 0; /* scan_min_ms after this scan */
        p->next_scan_ms = due;
        /* Bring the tick forward if it would come later. */
        if (sd_event_source_get_time(m->timer, &when_usec) >= 0 && when_usec > due * 1000) {
                sd_event_source_set_time(m->timer, due * 1000);
                sd_event_source_set_enabled(m->timer, SD_EVENT_ONESHOT);
        }
}

static int on_events(sd_event_source *s, int fd, uint32_t revents, void *userdata) {
        struct manager *m = userdata;
        int r = m->source->events_consume(m->source, on_node_change, m);
        if (r < 0)
                log_debug_errno(r, "Failed to read node-change events: %m");
        return 0;
}

int manager_start(struct manager *m) {
        int r = sd_event_add_time_relative(m->event, &m->timer, CLOCK_MONOTONIC, 0, 0, on_timer, m);
        if (r < 0)
                return log_error_errno(r, "Failed to add the tick timer: %m");
        /* sd-event's default accuracy (250 ms) would blur react_ms and the tick. */
        (void) sd_event_source_set_time_accuracy(m->timer, 1000);
        if (m->source->events_fd && m->source->events_consume) {
                int fd = m->source->events_fd(m->source);
                if (fd >= 0)
                        r = sd_event_add_io(m->event, &m->events, fd, EPOLLIN, on_events, m);
                if (fd < 0 || r < 0)
                        log_warning_errno(fd < 0 ? fd : r, "Node changes of threads will be seen at the next scan only: "
                                          "cannot watch the BPF ring buffer: %m");
        }
        return 0;
}

void manager_set_while_moving(struct manager *m, void (*fn)(void *userdata), void *userdata) {
        m->while_moving = fn;
        m->while_moving_userdata = userdata;
}

void manager_set_after_tick(struct manager *m, void (*fn)(struct manager *m, void *userdata), void *userdata) {
        m->after_tick = fn;
        m->after_tick_userdata = userdata;
}

int manager_reload(struct manager *m, const struct nb_config *cfg) {
        int r = cfg_copy(&m->cfg, cfg);
        if (r < 0)
                return log_error_errno(r, "Failed to apply the new configuration: %m");
        migrator_set_limits(m->migrator, m->cfg.rate_limit_mb_s, m->cfg.batch_pages);
        /* New thresholds apply to everyone at the next scan. */
        for (size_t i = 0; i < m->n_procs; i++) {
                m->procs[i]->interval_ms = m->cfg.scan_min_ms;
                if (m->procs[i]->next_scan_ms > now_ms() + m->cfg.scan_min_ms)
                        m->procs[i]->next_scan_ms = now_ms() + m->cfg.scan_min_ms;
        }
        log_info("Configuration reloaded");
        return 0;
}

void manager_stop(struct manager *m) {
        if (!m)
                return;
        m->cancel = 1;
        if (m->migrator)
                migrator_cancel(m->migrator);
        if (m->timer)
                sd_event_source_set_enabled(m->timer, SD_EVENT_OFF);
        if (m->events)
                sd_event_source_set_enabled(m->events, SD_EVENT_OFF);
}

void manager_status(struct manager *m, char *buf, size_t size) {
        size_t n_cg = 0;
        for (size_t i = 0; i < m->n_cgs; i++)
                n_cg += m->cgs[i]->seen;
        snprintf(buf, size, "Watching %zu cgroup%s, %zu process%s; moved %" PRIu64 " MiB in the last minute; source %s",
                 n_cg, n_cg == 1 ? "" : "s", m->n_procs, m->n_procs == 1 ? "" : "es",
                 manager_moved_last_minute(m) >> 20, sampling_chain(m->source, m->pages));
}

/* SIGTERM and SIGINT are blocked (sd-event takes them from a signalfd), so a pending
 * one shows in sigpending() while the event loop waits for the migration workers. */
/* Called every 100 ms on the event-loop thread while the workers copy: also the only
 * chance for the control socket to be served during a long run. */
static bool stop_pending(void *ctx) {
        struct manager *m = ctx;
        sigset_t set;

        if (m->while_moving)
                m->while_moving(m->while_moving_userdata);
        if (sigpending(&set) < 0)
                return false;
        return sigismember(&set, SIGTERM) == 1 || sigismember(&set, SIGINT) == 1;
}

int manager_new(sd_event *e, const struct nb_config *cfg, const struct manager_opts *o, struct manager **ret) {
        struct manager *m;
        nb_cpumask service;
        int r;

        m = calloc(1, sizeof(*m));
        if (!m)
                return -ENOMEM;
        m->event = sd_event_ref(e);
        m->started_ms = now_ms();
        m->opts = *o;
        m->proc_root = strdup(o->proc_root ? o->proc_root : "/proc");
        m->sys_root = strdup(o->sys_root ? o->sys_root : "/sys");
        m->opts.proc_root = m->proc_root;
        m->opts.sys_root = m->sys_root;
        if (!m->proc_root || !m->sys_root) {
                r = -ENOMEM;
                goto fail;
        }
        r = cfg_copy(&m->cfg, cfg);
        if (r < 0)
                goto fail;
        r = topology_read(m->sys_root, &m->topo);
        if (r < 0) {
                log_error_errno(r, "Failed to read the NUMA topology under %s/devices/system/node: %m", m->sys_root);
                goto fail;
        }
        r = placement_source_choose(m->cfg.source, m->topo, &m->source);
        if (r < 0)
                goto fail;
        r = page_sampler_choose(&m->cfg, m->sys_root, m->topo, m->source, &m->pages);
        if (r < 0)
                goto fail;

        service = m->cfg.service_cpus;
        if (cpumask_weight(&service) == 0) {
                int c = cpumask_next(&m->topo->online_cpus, 0);
                if (c >= 0)
                        cpumask_set(&service, (unsigned) c);
        }
        m->service = m->service_online = service;
        r = migrator_new(&service, m->cfg.rate_limit_mb_s, m->cfg.batch_pages, &m->migrator);
        if (r < 0) {
                log_error_errno(r, "Failed to start the migration workers: %m");
                goto fail;
        }
        migrator_set_should_stop(m->migrator, stop_pending, m);
        *ret = m;
        return 0;
fail:
        manager_free(m);
        return r;
}

void manager_free(struct manager *m) {
        if (!m)
                return;
        sd_event_source_unref(m->timer);
        sd_event_source_unref(m->events);
        migrator_free(m->migrator);
        for (size_t i = 0; i < m->n_procs; i++)
                proc_rec_free(m->procs[i]);
        free(m->procs);
        for (size_t i = 0; i < m->n_cgs; i++) {
                free(m->cgs[i]->path);
                free(m->cgs[i]);
        }
        free(m->cgs);
        for (size_t i = 0; i < m->n_invalid_seen; i++)
                free(m->invalid_seen[i]);
        free(m->invalid_seen);
        page_sampler_free(m->pages);
        placement_source_free(m->source);
        topology_free(m->topo);
        cfg_release(&m->cfg);
        free(m->proc_root);
        free(m->sys_root);
        sd_event_unref(m->event);
        free(m);
}
