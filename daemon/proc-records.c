/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The process records (proc-records.h). */
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>
#include "cleanup.h"
#include "creds.h"
#include "log.h"
#include "proc-records.h"

void proc_records_init(struct proc_records *r) {
        struct rlimit rl;

        *r = (struct proc_records) {
                .fd_limit = getrlimit(RLIMIT_NOFILE, &rl) == 0 ? (uint64_t) rl.rlim_cur : 1024,
        };
}

void proc_records_drop_huge(struct proc_rec *p) {
        for (size_t i = 0; i < p->n_huge; i++)
                free(p->huge[i].pages);
        free(p->huge);
        p->huge = NULL;
        p->n_huge = 0;
}

static int cmp_range(const void *a, const void *b) {
        const struct damon_range *x = a, *y = b;
        return (x->start > y->start) - (x->start < y->start);
}

int proc_records_set_mapped(struct proc_rec *p, const struct numa_maps *maps, const uint64_t *ends) {
        size_t n = maps->n_vmas < PROC_MAPPED_MAX ? maps->n_vmas : PROC_MAPPED_MAX, k = 0;
        struct damon_range *v = calloc(n ? n : 1, sizeof(*v));

        if (!v)
                return -ENOMEM;
        for (size_t i = 0; i < n; i++)
                if (ends[i] > maps->vmas[i].start)
                        v[k++] = (struct damon_range) { maps->vmas[i].start, ends[i] };
        qsort(v, k, sizeof(*v), cmp_range);
        n = k;
        k = 0;
        for (size_t i = 0; i < n; i++) {
                if (k && v[i].start <= v[k - 1].end) {
                        if (v[i].end > v[k - 1].end)
                                v[k - 1].end = v[i].end;
                } else
                        v[k++] = v[i];
        }
        free(p->mapped);
        p->mapped = v;
        p->n_mapped = k;
        return 0;
}

static bool vma_on_slow(const struct numa_maps *maps, const struct vma *v, const struct topology *t) {
        const struct node_pages *np = vma_node_pages(maps, v);

        for (size_t j = 0; j < v->np_count; j++)
                if (np[j].pages && topology_node_slow(t, np[j].node))
                        return true;
        return false;
}

int proc_records_set_slow(struct proc_rec *p, const struct numa_maps *maps, const uint64_t *ends,
                          const struct topology *t) {
        struct damon_range *v = NULL;
        size_t k = 0;

        if (nodemask_weight(&t->slow) == 0)
                goto done;      /* the common case: no slow node, nothing to keep */
        for (size_t i = 0; i < maps->n_vmas && k < PROC_SLOW_MAX; i++) {
                const struct vma *m = &maps->vmas[i];

                if (ends[i] <= m->start || !vma_on_slow(maps, m, t))
                        continue;
                if (!v) {
                        v = calloc(PROC_SLOW_MAX, sizeof(*v));
                        if (!v)
                                return -ENOMEM;
                }
                /* numa_maps lists VMAs in address order: merge touching ones. */
                if (k && m->start <= v[k - 1].end) {
                        if (ends[i] > v[k - 1].end)
                                v[k - 1].end = ends[i];
                } else if (!k || m->start > v[k - 1].end)
                        v[k++] = (struct damon_range) { m->start, ends[i] };
        }
done:
        free(p->slow);
        p->slow = v;
        p->n_slow = k;
        return 0;
}

bool proc_records_mapped(const struct proc_rec *p, uint64_t addr) {
        size_t lo = 0, hi = p->n_mapped;

        while (lo < hi) {
                size_t mid = lo + (hi - lo) / 2;
                if (addr < p->mapped[mid].start)
                        hi = mid;
                else if (addr >= p->mapped[mid].end)
                        lo = mid + 1;
                else
                        return true;
        }
        return false;
}

static void rec_free(struct proc_records *r, struct proc_rec *p) {
        if (!p)
                return;
        if (p->pidfd >= 0) {
                close(p->pidfd);
                r->n_pidfds--;
        }
        node_time_state_done(&p->pl);
        page_agg_free(p->seen);
        sampled_cold_free(p->sampled);
        free(p->mapped);
        free(p->slow);
        free(p->cold);
        free(p->moved.hist);
        free(p->moved.tier);
        free(p->node_bytes);
        free(p->stuck_away);
        free(p->shares);
        if (r->free_place)
                r->free_place(p->place);
        proc_records_drop_huge(p);
        free(p);
}

static int cmp_proc(const void *a, const void *b) {
        const struct proc_rec *x = *(struct proc_rec *const *) a, *y = *(struct proc_rec *const *) b;
        return (x->pid > y->pid) - (x->pid < y->pid);
}

struct proc_rec *proc_records_find(const struct proc_records *r, pid_t pid) {
        size_t lo = 0, hi = r->n;

        while (lo < hi) {
                size_t mid = lo + (hi - lo) / 2;
                if (r->v[mid]->pid == pid)
                        return r->v[mid];
                if (r->v[mid]->pid < pid)
                        lo = mid + 1;
                else
                        hi = mid;
        }
        return NULL;
}

/* One poll(2) over every known process's pidfd (rather than one call per process:
 * with a thousand processes that was a thousand syscalls a tick). A process whose
 * pidfd cannot be polled counts as exited: re-checked. */
void proc_records_poll_exited(struct proc_records *r) {
        _cleanup_free_ struct pollfd *pfd = calloc(r->n ? r->n : 1, sizeof(*pfd));
        int k;

        for (size_t i = 0; pfd && i < r->n; i++)
                pfd[i] = (struct pollfd) { .fd = r->v[i]->pidfd, .events = POLLIN };
        do
                k = pfd ? poll(pfd, r->n, 0) : -1;
        while (k < 0 && errno == EINTR);
        /* Without a pidfd (poll ignores -1), a record is re-identified when it is
         * due for a scan instead (admit). */
        for (size_t i = 0; i < r->n; i++)
                r->v[i]->exited = r->v[i]->pidfd >= 0 && (k < 0 || pfd[i].revents != 0);
}

static int pidfd_open_sys(pid_t pid) {
        int fd = (int) syscall(SYS_pidfd_open, pid, 0);
        return fd < 0 ? -errno : fd;
}

/* Opens a pidfd and checks that it names the process we read (same start time):
 * from then on the pidfd tells us if that process exits, whatever its pid becomes. */
static int open_checked_pidfd(const struct proc_records *r, const char *proc_root, pid_t pid,
                              uint64_t starttime) {
        struct proc_stat st;
        int fd = r->open_pidfd ? r->open_pidfd(pid) : pidfd_open_sys(pid);

        if (fd < 0)
                return fd;
        if (proc_read_stat(proc_root, pid, &st) < 0 || st.starttime != starttime) {
                close(fd);
                return -ESRCH;
        }
        return fd;
}

/* A process holds a pidfd only while it is being balanced: its cgroup in balance mode,
 * not a dry run, and its last scan found it at least min_rss (numabalanced(8),
 * LIMITS). The pidfd spares it a stat read per tick and names it to its migration
 * jobs; a process without one is re-identified when due (admit), and its jobs open
 * their own. Descriptors are held back for the rest of the daemon (PIDFD_RESERVE):
 * past them a balanced process goes without. */
void proc_records_update_pidfd(struct proc_records *r, const char *proc_root, struct proc_rec *p, bool want) {
        int fd;

        if (!want && p->pidfd >= 0) {
                close(p->pidfd);
                p->pidfd = -1;
                r->n_pidfds--;
        }
        if (!want || p->pidfd >= 0 || r->n_pidfds + PIDFD_RESERVE >= r->fd_limit)
                return;
        fd = open_checked_pidfd(r, proc_root, p->pid, p->starttime);
        if (fd < 0) {
                log_debug_errno(fd, "pid=%d: no pidfd, its jobs open their own: %m", (int) p->pid);
                return;
        }
        p->pidfd = fd;
        r->n_pidfds++;
}

/* A record for a process seen for the first time. NULL when out of memory: it is
 * looked at again next tick. */
static struct proc_rec *rec_new(struct proc_records *r, pid_t pid, const struct proc_stat *st) {
        struct proc_rec *p, **n;

        p = calloc(1, sizeof(*p));
        n = realloc(r->v, (r->n + 1) * sizeof(*n));
        if (n)
                r->v = n;
        if (!p || !n) {
                free(p);
                return NULL;
        }
        p->pid = pid;
        p->starttime = st->starttime;
        p->pidfd = -1;             /* proc_records_update_pidfd(), once it is being balanced */
        p->reason = _REASON_MAX;
        p->hot_node = p->target_node = p->full_target = -1;
        /* Its schedule (scan.c's) is zero: due at once. */
        r->v[r->n++] = p;
        /* Kept sorted for proc_records_find(); appended at the end, so re-sort (rare:
         * only when processes arrive). */
        qsort(r->v, r->n, sizeof(*r->v), cmp_proc);
        return p;
}

/* A user's opt-in covers only the processes that user may ptrace (lib/creds.h,
 * docs/OPT-IN.md). A known process is checked again when it is due for a scan: its
 * ids change at a setuid exec, and it can stop being dumpable; between scans it is
 * not read (the executor checks again before moving anything). */
static bool still_covered(const char *proc_root, const struct cg_rec *cg, struct proc_rec *p, uint64_t now) {
        struct proc_creds c;

        if (cg->covers_uid == CGROUP_COVERS_ALL || (p->covered_for == cg->covers_uid && now < p->sched.next_scan_ms))
                return true;
        if (creds_read(proc_root, p->pid, &c) < 0 || c.stat.starttime != p->starttime ||
            !creds_belong_to(&c, cg->covers_uid)) {
                log_debug("cgroup=%s pid=%d: not uid %u's process any more, not watched", cg->path, (int) p->pid,
                          (unsigned) cg->covers_uid);
                return false;
        }
        p->covered_for = cg->covers_uid;
        return true;
}

struct proc_rec *proc_records_admit(struct proc_records *r, const char *proc_root, const struct cg_rec *cg,
                                    pid_t pid, uint64_t now, bool *ret_new) {
        struct proc_rec *p = proc_records_find(r, pid);
        bool one_user = cg->covers_uid != CGROUP_COVERS_ALL;
        struct proc_creds c;

        *ret_new = false;
        if (pid == getpid())
                return NULL;
        /* Known and alive (its pidfd not readable): the pid still names the process we
         * opened, so its stat need not be read again: with a thousand settled
         * processes, this read was most of the tick. */
        if (p && p->pidfd >= 0 && !p->exited)
                return still_covered(proc_root, cg, p, now) ? p : NULL;
        /* Known, without a pidfd (not being balanced): its start time is checked only
         * when it is due for a scan. One that exited has left cgroup.procs by then;
         * a pid reused in the same cgroup shows the old numbers until that scan. */
        if (p && p->pidfd < 0 && now < p->sched.next_scan_ms)
                return still_covered(proc_root, cg, p, now) ? p : NULL;
        if ((one_user ? creds_read(proc_root, pid, &c) : proc_read_stat(proc_root, pid, &c.stat)) < 0)
                return NULL; /* gone already */
        if (p && p->starttime != c.stat.starttime) {
                /* The pid was reused: a different process. Forget the old one. */
                p->seen_tick = 0;
                p = NULL;
        }
        if (c.stat.state == 'Z' || c.stat.state == 'X' || (c.stat.flags & PF_KTHREAD_FLAG))
                return NULL;
        if (one_user && !creds_belong_to(&c, cg->covers_uid)) {
                log_debug("cgroup=%s pid=%d: not uid %u's process (uids, gids or dumpable), not watched", cg->path,
                          (int) pid, (unsigned) cg->covers_uid);
                return NULL;
        }
        if (!p) {
                p = rec_new(r, pid, &c.stat);
                *ret_new = p != NULL;
        }
        if (p) {
                snprintf(p->comm, sizeof(p->comm), "%s", c.stat.comm);
                p->covered_for = cg->covers_uid;
        }
        return p;
}

bool proc_records_current(const struct proc_records *r, pid_t pid, uint64_t tick) {
        for (size_t i = 0; i < r->n; i++)
                if (r->v[i]->pid == pid && r->v[i]->seen_tick == tick)
                        return true;
        return false;
}

void proc_records_sweep(struct proc_records *r, uint64_t tick) {
        size_t w = 0;

        for (size_t i = 0; i < r->n; i++)
                if (r->v[i]->seen_tick == tick)
                        r->v[w++] = r->v[i];
                else
                        rec_free(r, r->v[i]);
        r->n = w;
}

void proc_records_done(struct proc_records *r) {
        for (size_t i = 0; i < r->n; i++)
                rec_free(r, r->v[i]);
        free(r->v);
        r->v = NULL;
        r->n = 0;
}
