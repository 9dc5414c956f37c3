/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Threads' CPU affinity narrowed to a node and given back (affinity.h). */
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <poll.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "affinity.h"
#include "cleanup.h"
#include "clock.h"
#include "log.h"
#include "proc.h"

#define MIN(a, b) ((a) < (b) ? (a) : (b))
#define MAX(a, b) ((a) > (b) ? (a) : (b))

struct affinity_keeper {
        struct affinity_store store;  /* the records and their file (affinity-store.h) */
        char *proc_root;
        unsigned beyond;           /* threads of this affinity_place() call beyond the bounds */
        unsigned call;             /* affinity_place() calls so far: a tid given twice is planned once */
        bool resave;               /* a placed mask the kernel adjusted: the file says another */
        cpu_set_t *set;            /* scratch for the affinity calls */
        size_t set_size;
        affinity_before_set_fn hook;
        void *hook_userdata;
        bool batched;              /* changes made, and the file written, by affinity_commit() alone */
        struct group *groups;      /* affinity_place() calls waiting for affinity_commit() */
        size_t n_groups, cap_groups;
        struct log_ratelimit save_log;
};

static struct affinity_counts no_counts;

/* --- the kernel: affinity, identity ------------------------------------------ */

static int get_affinity(struct affinity_keeper *k, pid_t tid, nb_cpumask *ret) {
        CPU_ZERO_S(k->set_size, k->set);
        if (sched_getaffinity(tid, k->set_size, k->set) < 0)
                return -errno;
        *ret = (nb_cpumask) {};
        /* Word by word, a zero word skipped: 8,192 CPU_ISSET_S() a call cost more than
         * the system call. */
        for (size_t i = 0; i < k->set_size / sizeof(__cpu_mask); i++) {
                __cpu_mask word = k->set->__bits[i];
                for (unsigned b = 0; word; b++, word >>= 1)
                        if (word & 1)
                                cpumask_set(ret, (unsigned) (i * 8 * sizeof(__cpu_mask) + b));
        }
        return 0;
}

static int set_affinity(struct affinity_keeper *k, pid_t tid, const nb_cpumask *m) {
        if (k->hook)
                k->hook(k->hook_userdata, tid, m);
        CPU_ZERO_S(k->set_size, k->set);
        CPUMASK_FOREACH(c, m)
                CPU_SET_S((size_t) c, k->set_size, k->set);
        if (sched_setaffinity(tid, k->set_size, k->set) < 0)
                return -errno;
        return 0;
}

/* Whether pid is still the process that started at start_time: its pidfd not readable
 * (it has not exited, so the pid is not reused), or without one its start time. */
static bool proc_same(const struct affinity_keeper *k, pid_t pid, uint64_t start_time, int pidfd) {
        struct proc_stat st;

        if (pidfd >= 0) {
                struct pollfd p = { .fd = pidfd, .events = POLLIN };
                return poll(&p, 1, 0) == 0;
        }
        return proc_read_stat(k->proc_root, pid, &st) == 0 && st.starttime == start_time;
}

/* Whether tid is still a thread of pid that started at tid_start. */
static bool thread_same(const struct affinity_keeper *k, pid_t pid, pid_t tid, uint64_t tid_start) {
        struct proc_stat st;
        return proc_read_task_stat(k->proc_root, pid, tid, &st) == 0 && st.starttime == tid_start;
}

static int thread_start(const struct affinity_keeper *k, pid_t pid, pid_t tid, uint64_t *ret) {
        struct proc_stat st;
        int r = proc_read_task_stat(k->proc_root, pid, tid, &st);
        if (r < 0)
                return r;
        *ret = st.starttime;
        return 0;
}

/* --- the state file ------------------------------------------------------------ */

/* After a change that needs no write before it (a record dropped, a thread given back,
 * a new thread recorded): written now, or by the next affinity_commit() when batched.
 * A daemon killed meanwhile leaves lines that a recovery skips or leaves alone (their
 * thread gone, or no longer carrying the placed mask), or that a recovery still gets
 * right (a new thread is adopted from its creator's line). */
static int save_later(struct affinity_keeper *k) {
        return k->batched ? 0 : affinity_store_save_if_dirty(&k->store);
}

/* --- new threads --------------------------------------------------------------- */

/* The record whose original a new thread carrying `cur` gets: the main thread's if it
 * carries that placed mask, else the first such thread by tid. A thread inherits its
 * creator's mask at clone, and which thread created it is not known: in a process
 * whose threads had one original (the usual case) any of them is right. A record's
 * previous mask counts too (a recovery from a file written while a thread was placed
 * again: a thread it created before carries the previous one). */
static const struct aff_thread *donor(const struct aff_proc *p, const nb_cpumask *cur) {
        const struct aff_thread *main_thread = affinity_store_thread(p, p->pid);

        if (main_thread && main_thread->flags == 0 && affinity_store_is_ours(main_thread, cur))
                return main_thread;
        for (size_t i = 0; i < p->n; i++)
                if (p->threads[i].flags == 0 && affinity_store_is_ours(&p->threads[i], cur))
                        return &p->threads[i];
        return NULL;
}

/* A thread that inherited a mask we set and is not recorded: its original now. */
static void give_back_now(struct affinity_keeper *k, pid_t pid, pid_t tid, const nb_cpumask *original,
                          struct affinity_counts *c) {
        int r = set_affinity(k, tid, original);

        if (r >= 0)
                c->restored++;
        else if (r == -ESRCH)
                c->gone++;
        else {
                c->failed++;
                log_warning_errno(r, "Failed to give thread %d of process %d its original affinity back: %m",
                                  (int) tid, (int) pid);
        }
}

/* A thread not recorded whose mask is one we set: recorded with its donor's original,
 * or given that original at once (restore_now, or beyond the bounds). */
static void adopt_one(struct affinity_keeper *k, struct aff_proc *p, pid_t tid, bool restore_now,
                      struct affinity_counts *c) {
        const struct aff_thread *d;
        nb_cpumask cur, original;
        uint64_t start;
        int r;

        if (get_affinity(k, tid, &cur) < 0 || thread_start(k, p->pid, tid, &start) < 0)
                return;    /* gone meanwhile */
        d = donor(p, &cur);
        if (!d) {
                /* Born with a mask of its own: known, so that a mask its application
                 * sets later equal to ours is never taken for one inherited. */
                if (!restore_now)
                        (void) affinity_store_add_thread(&k->store, p, tid, start, AT_KNOWN, &cur, &cur, NULL);
                return;
        }
        affinity_store_original(d, &original);
        if (!restore_now) {
                r = affinity_store_add_thread(&k->store, p, tid, start, 0, &original, &cur, NULL);
                if (r >= 0) {
                        c->placed++;
                        return;
                }
                log_warning_errno(r, "Thread %d of process %d inherited the affinity we set, and cannot be recorded "
                                  "(%s): giving it its original back now", (int) tid, (int) p->pid,
                                  r == -E2BIG ? "too many threads" : "out of memory");
        }
        give_back_now(k, p->pid, tid, &original, c);
}

/* Threads of p created since it was placed that inherited a mask we set. */
static void adopt_new(struct affinity_keeper *k, struct aff_proc *p, bool restore_now, struct affinity_counts *c) {
        _cleanup_free_ pid_t *tids = NULL;
        size_t n = 0;

        if (proc_list_tasks(k->proc_root, p->pid, &tids, &n) < 0)
                return;
        for (size_t i = 0; i < n; i++)
                if (!affinity_store_thread(p, tids[i]))
                        adopt_one(k, p, tids[i], restore_now, c);
}

/* Every thread of p not recorded yet, as known (not ours): so that a thread that
 * existed when the process was placed is never taken for one that inherited our mask. */
static void record_known(struct affinity_keeper *k, struct aff_proc *p) {
        _cleanup_free_ pid_t *tids = NULL;
        size_t n = 0;

        if (proc_list_tasks(k->proc_root, p->pid, &tids, &n) < 0)
                return;
        for (size_t i = 0; i < n; i++) {
                nb_cpumask cur;
                uint64_t start;

                if (affinity_store_thread(p, tids[i]) || get_affinity(k, tids[i], &cur) < 0 ||
                    thread_start(k, p->pid, tids[i], &start) < 0)
                        continue;
                if (affinity_store_add_thread(&k->store, p, tids[i], start, AT_KNOWN, &cur, &cur, NULL) < 0)
                        return;    /* the bound: placing says so for the threads it is given */
        }
}

/* --- processes created by placed threads ---------------------------------------- */

/* Now, in the clock and unit of a process's start time (field 22 of /proc/PID/stat):
 * clock ticks since boot (CLOCK_BOOTTIME), rounded down as the kernel rounds it. 0 if
 * it cannot be read (then nothing is adopted). */
static uint64_t start_clock_now(void) {
        long hz = sysconf(_SC_CLK_TCK);
        uint64_t ns = clock_now_ns(CLOCK_BOOTTIME);

        if (hz <= 0 || (uint64_t) hz > NSEC_PER_SEC)
                return 0;
        return ns / (NSEC_PER_SEC / (uint64_t) hz);
}

/* The placed process (pid, start) whose undo gives p back: its root, or itself. */
static void root_of(const struct aff_proc *p, pid_t *pid, uint64_t *start) {
        *pid = p->root_pid ? p->root_pid : p->pid;
        *start = p->root_pid ? p->root_start : p->start_time;
}

/* Processes adopted from the placed process (pid, start), at any depth. */
static size_t adopted_from(const struct affinity_keeper *k, pid_t pid, uint64_t start) {
        size_t n = 0;
        for (size_t i = 0; i < k->store.n_procs; i++)
                n += k->store.procs[i].root_pid == pid && k->store.procs[i].root_start == start;
        return n;
}

/* The record of pid if it is the process that started at start and holds threads
 * narrowed since a placement (the donors of affinity_adopt). */
static struct aff_proc *held_proc(const struct affinity_keeper *k, pid_t pid, uint64_t start) {
        struct aff_proc *p = affinity_store_find(&k->store, pid);
        return p && p->start_time == start && p->placed_at > 0 && affinity_store_proc_held(p) > 0 ? p : NULL;
}

/* Whether pid's cgroup (read now) is cgroup. */
static bool in_cgroup(const struct affinity_keeper *k, pid_t pid, const char *cgroup) {
        _cleanup_free_ char *path = NULL;
        return proc_read_cgroup(k->proc_root, pid, &path) >= 0 && strcmp(path, cgroup) == 0;
}

/* Which donor of pids[0..n) q's threads tids[0..nt) got their mask from: the first
 * placed no later than q started (q_start) whose placed mask one of them carries; n
 * when none. */
static size_t donor_of(struct affinity_keeper *k, const pid_t *pids, const uint64_t *starts, size_t n,
                       const pid_t *tids, size_t nt, uint64_t q_start) {
        size_t di = n;

        for (size_t t = 0; t < nt && di == n; t++) {
                nb_cpumask cur;

                if (get_affinity(k, tids[t], &cur) < 0)
                        continue;
                for (size_t i = 0; i < n && di == n; i++) {
                        const struct aff_proc *d = held_proc(k, pids[i], starts[i]);
                        if (d && d->placed_at <= q_start && donor(d, &cur))
                                di = i;
                }
        }
        return di;
}

/* Process q (started at q_start, not recorded) when one of its threads carries exactly
 * a mask we set on a thread of one of the donors placed no later than q started, and
 * q and that donor are in cgroup now: recorded, each thread carrying a mask we set
 * with the original of the donor's thread that has it (donor()), the others as known.
 * Beyond the bounds its threads carrying our mask get that original at once. Returns
 * 1 when adopted, 0 when not, -ENOMEM. */
static int adopt_process(struct affinity_keeper *k, const char *cgroup, const pid_t *pids, const uint64_t *starts,
                         size_t n, pid_t q, uint64_t q_start, struct affinity_counts *c) {
        _cleanup_free_ pid_t *tids = NULL;
        size_t nt = 0, di;
        struct aff_proc *d, *p;
        pid_t root;
        uint64_t root_start, placed_at;
        int node_first;
        bool beyond;

        if (proc_list_tasks(k->proc_root, q, &tids, &nt) < 0)
                return 0;    /* gone */
        di = donor_of(k, pids, starts, n, tids, nt, q_start);
        if (di == n)
                return 0;    /* born with a mask of its own, or set one since: not ours */
        /* The cgroups right before acting: a process moved out since cgroup.procs was
         * read is not followed. */
        if (!in_cgroup(k, q, cgroup) || !in_cgroup(k, pids[di], cgroup))
                return 0;
        d = held_proc(k, pids[di], starts[di]);
        root_of(d, &root, &root_start);
        placed_at = d->placed_at;
        node_first = d->node_first;
        beyond = adopted_from(k, root, root_start) >= k->store.max_proc;
        if (beyond)
                log_warning("Process %d, created by a placed thread of process %d, is not recorded: %zu processes "
                            "followed from process %d already; its threads get their original affinity back now",
                            (int) q, (int) d->pid, k->store.max_proc, (int) root);
        p = NULL;
        if (!beyond) {
                p = affinity_store_add(&k->store, q, q_start);    /* d moves if the array grows: found again below */
                if (!p)
                        return -ENOMEM;
                p->placed_at = placed_at;
                p->root_pid = root;
                p->root_start = root_start;
                p->node_first = node_first;
        }
        for (size_t t = 0; t < nt; t++) {
                const struct aff_thread *from;
                nb_cpumask cur, original;
                uint64_t start;
                int r;

                d = held_proc(k, pids[di], starts[di]);
                if (!d || get_affinity(k, tids[t], &cur) < 0 || thread_start(k, q, tids[t], &start) < 0)
                        continue;    /* gone meanwhile */
                from = donor(d, &cur);
                if (!from) {
                        if (p)
                                (void) affinity_store_add_thread(&k->store, p, tids[t], start, AT_KNOWN, &cur, &cur,
                                                                 NULL);
                        continue;
                }
                affinity_store_original(from, &original);
                if (p) {
                        r = affinity_store_add_thread(&k->store, p, tids[t], start, 0, &original, &cur, NULL);
                        if (r >= 0) {
                                c->placed++;
                                continue;
                        }
                        log_warning_errno(r, "Thread %d of process %d inherited the affinity we set, and cannot be "
                                          "recorded (%s): giving it its original back now", (int) tids[t], (int) q,
                                          r == -E2BIG ? "too many threads" : "out of memory");
                }
                give_back_now(k, q, tids[t], &original, c);
        }
        if (!p)
                return 0;
        if (affinity_store_proc_held(p) == 0) {
                affinity_store_remove(&k->store, p);
                return 0;
        }
        return 1;
}

int affinity_adopt(struct affinity_keeper *k, const char *cgroup, const pid_t *pids, const uint64_t *starts, size_t n,
                   const pid_t *cands, size_t n_cands, struct affinity_counts *c) {
        uint64_t since = UINT64_MAX;
        pid_t self = getpid();
        int adopted = 0, r;

        c = c ?: &no_counts;
        for (size_t i = 0; i < n; i++) {
                const struct aff_proc *d = held_proc(k, pids[i], starts[i]);
                if (d)
                        since = MIN(since, d->placed_at);
        }
        if (since == UINT64_MAX)
                return 0;
        for (size_t i = 0; i < n_cands; i++) {
                struct proc_stat st;

                /* Recorded already (placed, adopted, a donor), or started before every
                 * placement: one read of its stat, no more. */
                if (cands[i] == self || affinity_store_find(&k->store, cands[i]) ||
                    proc_read_stat(k->proc_root, cands[i], &st) < 0 || st.starttime < since || st.state == 'Z' ||
                    st.state == 'X' || (st.flags & PF_KTHREAD_FLAG))
                        continue;
                r = adopt_process(k, cgroup, pids, starts, n, cands[i], st.starttime, c);
                if (r < 0) {
                        (void) save_later(k);
                        return log_warning_errno(r, "Out of memory");
                }
                adopted += r;
        }
        (void) save_later(k);
        return adopted;
}

/* --- placing ------------------------------------------------------------------- */

/* One thread to narrow: what it had before (to go back to if the change is not made). */
struct step {
        pid_t tid;
        uint64_t tid_start;
        unsigned prior_flags;
        nb_cpumask prior_original, cur, target;
};

/* Decides one thread's new mask and records it (not yet in the file). Returns 1 when
 * there is something to change (*s filled), 0 when not (counted). */
static int plan_thread(struct affinity_keeper *k, struct aff_proc *p, pid_t tid, uint64_t tid_start,
                       const nb_cpumask *expect, const nb_cpumask *node_cpus, struct step *s,
                       struct affinity_counts *c) {
        struct aff_thread *t = affinity_store_thread(p, tid);
        nb_cpumask original;
        int r;

        if (!thread_same(k, p->pid, tid, tid_start) || get_affinity(k, tid, &s->cur) < 0) {
                c->gone++;
                return 0;
        }
        if (t && t->tid_start != tid_start) {    /* a tid reused: the record was of an exited thread */
                affinity_store_remove_thread(&k->store, p, t);
                t = NULL;
        }
        if (t && t->call == k->call)
                return 0;    /* given twice: the first is planned already */
        if (t && t->flags & AT_LEFT_ALONE) {
                c->left_alone++;
                return 0;
        }
        if (t && t->flags == 0 && !affinity_store_placed_equals(t, &s->cur)) {
                t->flags = AT_LEFT_ALONE;    /* the application set its own mask since we placed it */
                k->store.dirty = true;
                c->left_alone++;
                return 0;
        }
        if (expect && !cpumask_equal(expect, &s->cur)) {
                c->left_alone++;    /* changed since the decision: decided again next time */
                return 0;
        }
        if (t && t->flags == 0)
                affinity_store_original(t, &original);
        else
                original = s->cur;
        cpumask_and(&s->target, node_cpus, &original);
        if (cpumask_weight(&s->target) == 0 || cpumask_equal(&s->target, &s->cur)) {
                c->left_alone++;    /* no CPU of the node allowed, or there already */
                return 0;
        }
        s->tid = tid;
        s->tid_start = tid_start;
        s->prior_flags = t ? t->flags : AT_KNOWN;
        s->prior_original = t && t->flags == 0 ? original : s->cur;
        if (t) {
                /* Placed already (s->cur is the mask we set): the file says both until
                 * the change is made and written, so that a daemon killed between the
                 * round's write and the change, or after a change not made, still gives
                 * the thread back. */
                const nb_cpumask *previous = t->flags == 0 ? &s->cur : NULL;

                t->flags = 0;
                t->tid_start = tid_start;
                t->call = k->call;
                return affinity_store_set_masks(t, &original, &s->target, previous) < 0 ? -ENOMEM : 1;
        }
        r = affinity_store_add_thread(&k->store, p, tid, tid_start, 0, &original, &s->target, &t);
        if (r == -E2BIG) {
                c->failed++;
                k->beyond++;    /* said once for the call */
                return 0;
        }
        if (r < 0)
                return r;
        t->call = k->call;
        return 1;
}

/* Puts a thread's record back as it was before plan_thread (the change not made). */
static void unplan(struct affinity_keeper *k, struct aff_proc *p, const struct step *s) {
        struct aff_thread *t = affinity_store_thread(p, s->tid);

        if (!t)
                return;
        t->flags = s->prior_flags;
        (void) affinity_store_set_masks(t, &s->prior_original, &s->cur, NULL);
        k->store.dirty = true;
}

/* The change itself, after checking again that it still applies. */
static void apply_step(struct affinity_keeper *k, struct aff_proc *p, int pidfd, const struct step *s,
                       struct affinity_counts *c) {
        struct aff_thread *t;
        nb_cpumask now;
        int r;

        if (!proc_same(k, p->pid, p->start_time, pidfd) || !thread_same(k, p->pid, s->tid, s->tid_start) ||
            get_affinity(k, s->tid, &now) < 0) {
                c->gone++;
                t = affinity_store_thread(p, s->tid);
                if (t)
                        affinity_store_remove_thread(&k->store, p, t);
                return;
        }
        if (!cpumask_equal(&now, &s->cur)) {
                c->left_alone++;    /* the application changed it a moment ago */
                unplan(k, p, s);
                return;
        }
        r = set_affinity(k, s->tid, &s->target);
        if (r < 0) {
                if (r == -ESRCH)
                        c->gone++;
                else if (r == -EPERM)
                        c->not_permitted++;    /* the placer logs it, rate-limited, and backs off */
                else {
                        c->failed++;
                        log_warning_errno(r, "Failed to set the affinity of thread %d of process %d: %m",
                                          (int) s->tid, (int) p->pid);
                }
                unplan(k, p, s);
                return;
        }
        c->placed++;
        /* The change made: the mask it had goes from the file at the next write; until
         * then a thread it created before the change, carrying that mask, is followed. */
        t = affinity_store_thread(p, s->tid);
        if (t)
                affinity_store_drop_previous(&k->store, t);
        /* The kernel keeps a thread within its cpuset: record what it really got. */
        if (t && get_affinity(k, s->tid, &now) >= 0 && !cpumask_equal(&now, &s->target)) {
                nb_cpumask original;
                affinity_store_original(t, &original);
                (void) affinity_store_set_masks(t, &original, &now, NULL);
                k->store.dirty = true;
                k->resave = true;
        }
}

/* One affinity_place() call's planned changes, made by affinity_commit(). */
struct group {
        pid_t pid;
        uint64_t start_time;
        int pidfd;
        int node_first;
        struct affinity_counts *c;
        struct step *steps;
        size_t n;
};

static void groups_clear(struct affinity_keeper *k) {
        for (size_t i = 0; i < k->n_groups; i++)
                free(k->groups[i].steps);
        k->n_groups = 0;
}

/* The group's changes not made: its records as before the plan. */
static void unplan_group(struct affinity_keeper *k, struct group *g) {
        struct aff_proc *p = affinity_store_find(&k->store, g->pid);

        g->c->failed += (unsigned) g->n;
        if (!p || p->start_time != g->start_time)
                return;
        for (size_t i = 0; i < g->n; i++)
                unplan(k, p, &g->steps[i]);
        if (affinity_store_proc_held(p) == 0)
                affinity_store_remove(&k->store, p);
}

int affinity_place(struct affinity_keeper *k, pid_t pid, uint64_t start_time, int pidfd, const pid_t *tids,
                   const uint64_t *tid_start, const nb_cpumask *expect, size_t n, const nb_cpumask *node_cpus,
                   struct affinity_counts *c) {
        _cleanup_free_ struct step *steps = NULL;
        struct aff_proc *p;
        size_t m = 0;
        int r;

        c = c ?: &no_counts;
        if (n == 0)
                return 0;
        p = affinity_store_find(&k->store, pid);
        if (p && p->start_time != start_time) {
                affinity_store_remove(&k->store, p);    /* the pid was reused: that process exited */
                p = NULL;
        }
        if (!p && !(p = affinity_store_add(&k->store, pid, start_time)))
                return log_warning_errno(-ENOMEM, "Out of memory");
        /* Placed before: a thread born since the last check carries our mask. It is
         * adopted now, before record_known() below would take it for the
         * application's own and keep our mask as its original for good. */
        if (affinity_store_proc_held(p) > 0)
                adopt_new(k, p, false, c);
        /* Each step is a thread of a record of p, planned once: no more than p has or
         * may have, and one more for the one plan_thread fills before it knows. */
        steps = calloc(MIN(n, MAX(k->store.max_proc, p->n)) + 1, sizeof(*steps));
        if (!steps)
                return log_warning_errno(-ENOMEM, "Out of memory");
        if (k->n_groups == k->cap_groups) {
                size_t cap = k->cap_groups ? 2 * k->cap_groups : 16;
                struct group *g = reallocarray(k->groups, cap, sizeof(*g));

                if (!g)
                        return log_warning_errno(-ENOMEM, "Out of memory");
                k->groups = g;
                k->cap_groups = cap;
        }
        k->beyond = 0;
        if (++k->call == 0)
                k->call = 1;    /* 0: never planned */
        for (size_t i = 0; i < n; i++) {
                r = plan_thread(k, p, tids[i], tid_start[i], expect ? &expect[i] : NULL, node_cpus, &steps[m], c);
                if (r < 0) {
                        for (size_t j = 0; j < m; j++)
                                unplan(k, p, &steps[j]);
                        return log_warning_errno(r, "Out of memory");
                }
                m += (size_t) r;
        }
        if (k->beyond > 0)
                log_warning("Process %d: %u threads not placed, beyond the threads we may record (%zu a process, "
                            "%zu in all)", (int) pid, k->beyond, k->store.max_proc, k->store.max_all);
        if (m == 0) {
                if (affinity_store_proc_held(p) == 0)
                        affinity_store_remove(&k->store, p);    /* nothing of it ours */
                (void) save_later(k);
                return 0;
        }
        record_known(k, p);
        k->groups[k->n_groups++] = (struct group) {
                .pid = pid, .start_time = start_time, .pidfd = pidfd, .node_first = cpumask_next(node_cpus, 0),
                .c = c, .steps = TAKE_PTR(steps), .n = m,
        };
        return k->batched ? 0 : affinity_commit(k);
}

/* The planned groups that would make the file bigger than its reader accepts are not
 * placed, the last planned first. */
static void fit(struct affinity_keeper *k) {
        size_t size = affinity_store_size(&k->store);

        while (k->n_groups > 0 && size > k->store.file_max) {
                struct group *g = &k->groups[--k->n_groups];

                unplan_group(k, g);
                log_warning("Process %d: %zu thread(s) not placed: their records would make %s bigger than the "
                            "%zu MiB its reader accepts", (int) g->pid, g->n, k->store.state_path,
                            k->store.file_max >> 20);
                free(g->steps);
                size = affinity_store_size(&k->store);
        }
}

int affinity_commit(struct affinity_keeper *k) {
        size_t threads = 0;
        int r;

        if (k->n_groups == 0)
                return affinity_store_save_if_dirty(&k->store);
        fit(k);
        /* The originals on disk before the first change: a daemon killed from here on
         * leaves what the next start needs to give them back. One write for every
         * change of the round. */
        r = affinity_store_save(&k->store);
        if (r < 0) {
                for (size_t i = 0; i < k->n_groups; i++) {
                        threads += k->groups[i].n;
                        unplan_group(k, &k->groups[i]);
                }
                if (log_ratelimit_ok(&k->save_log, clock_now_ms(), NULL))
                        log_warning("%zu thread(s) of %zu process(es) not placed, since their original affinity "
                                    "could not be saved", threads, k->n_groups);
                groups_clear(k);
                return r;
        }
        for (size_t i = 0; i < k->n_groups; i++) {
                struct group *g = &k->groups[i];
                struct aff_proc *p = affinity_store_find(&k->store, g->pid);
                unsigned before;

                if (!p || p->start_time != g->start_time) {
                        g->c->gone += (unsigned) g->n;    /* forgotten since it was planned */
                        continue;
                }
                /* Before the first change: a process its threads create from now on
                 * starts in this clock tick or later (affinity_adopt). */
                if (p->placed_at == 0)
                        p->placed_at = start_clock_now();
                before = g->c->placed;
                for (size_t j = 0; j < g->n; j++)
                        apply_step(k, p, g->pidfd, &g->steps[j], g->c);
                p->node_first = g->node_first;
                if (g->c->placed > before)
                        p->root_pid = 0;    /* an adopted process placed by the round: its own placement now */
                if (affinity_store_proc_held(p) == 0)
                        affinity_store_remove(&k->store, p);
                if (k->store.serve)
                        k->store.serve(k->store.serve_userdata);
        }
        groups_clear(k);
        /* A thread the kernel kept within its cpuset carries another mask than the file
         * says: written now, or a kill -9 before the next commit would leave it narrowed
         * for good (recovery restores only a thread carrying the placed mask). What else
         * the changes left (a thread gone meanwhile) waits for the next commit. */
        if (k->resave) {
                k->resave = false;
                return affinity_store_save_if_dirty(&k->store);
        }
        return save_later(k);
}

/* --- checking and undoing ------------------------------------------------------ */

/* The records of p whose thread exited are dropped; a thread of ours carrying another
 * mask than the one we set is left alone from now on. */
static void check_records(struct affinity_keeper *k, struct aff_proc *p, struct affinity_counts *c) {
        for (size_t i = 0; i < p->n;) {
                struct aff_thread *t = &p->threads[i];
                nb_cpumask cur;

                if (!thread_same(k, p->pid, t->tid, t->tid_start) || get_affinity(k, t->tid, &cur) < 0) {
                        if (t->flags == 0)
                                c->gone++;
                        affinity_store_remove_thread(&k->store, p, t);
                        continue;
                }
                if (t->flags == 0 && !affinity_store_placed_equals(t, &cur)) {
                        t->flags = AT_LEFT_ALONE;
                        k->store.dirty = true;
                        c->left_alone++;
                        log_info("Thread %d of process %d changed the affinity we set: left alone from now on",
                                 (int) t->tid, (int) p->pid);
                }
                i++;
        }
}

/* The process of our records for pid, if it is the one that started at start_time and
 * has not exited; records of another one are dropped. */
static struct aff_proc *live_proc(struct affinity_keeper *k, pid_t pid, uint64_t start_time,
                                  struct affinity_counts *c) {
        struct aff_proc *p = affinity_store_find(&k->store, pid);

        if (!p)
                return NULL;
        if (p->start_time != start_time || !proc_same(k, pid, start_time, -1)) {
                c->gone += (unsigned) affinity_store_proc_held(p);
                affinity_store_remove(&k->store, p);
                return NULL;
        }
        return p;
}

int affinity_check(struct affinity_keeper *k, pid_t pid, uint64_t start_time, struct affinity_counts *c) {
        struct aff_proc *p;
        size_t held;

        c = c ?: &no_counts;
        p = live_proc(k, pid, start_time, c);
        if (!p) {
                (void) save_later(k);
                return 0;
        }
        check_records(k, p, c);
        adopt_new(k, p, false, c);
        held = affinity_store_proc_held(p);
        if (held == 0)
                affinity_store_remove(&k->store, p);    /* nothing of it ours any more: nothing to undo */
        (void) save_later(k);
        return (int) held;
}

static void restore_one(struct affinity_keeper *k, const struct aff_proc *p, const struct aff_thread *t,
                        struct affinity_counts *c) {
        nb_cpumask cur, original;

        if (t->flags & AT_KNOWN)
                return;
        if (t->flags & AT_LEFT_ALONE) {
                c->left_alone++;
                return;
        }
        if (!thread_same(k, p->pid, t->tid, t->tid_start) || get_affinity(k, t->tid, &cur) < 0) {
                c->gone++;
                return;
        }
        /* Ours: the placed mask, or the previous one while the file holds it (placed
         * again, and a daemon killed before the write after the change, whether the
         * change was made or not). */
        if (!affinity_store_is_ours(t, &cur)) {
                c->left_alone++;    /* changed by the application (or never changed by us: a kill -9 before) */
                return;
        }
        affinity_store_original(t, &original);
        give_back_now(k, p->pid, t->tid, &original, c);
}

/* Undoes p without saving. */
static void undo_proc(struct affinity_keeper *k, struct aff_proc *p, struct affinity_counts *c) {
        /* Its changes planned in this round, not made yet, first: a planned step has
         * already set the record's placed mask to its target, and restore_one would
         * take the mask the thread still carries for the application's and drop it,
         * narrowed (an adopted process planned, then undone with its donor). */
        for (size_t i = 0; i < k->n_groups; i++) {
                struct group *g = &k->groups[i];

                if (g->pid != p->pid || g->start_time != p->start_time)
                        continue;
                for (size_t j = 0; j < g->n; j++)
                        unplan(k, p, &g->steps[j]);
                g->n = 0;
        }
        adopt_new(k, p, true, c);
        for (size_t i = 0; i < p->n; i++)
                restore_one(k, p, &p->threads[i], c);
        affinity_store_remove(&k->store, p);
}

/* Undoes the processes adopted from the placed process (pid, start): alive or not, it
 * does not matter. */
static void undo_adopted(struct affinity_keeper *k, pid_t pid, uint64_t start, struct affinity_counts *c) {
        for (size_t i = 0; i < k->store.n_procs;) {
                struct aff_proc *p = &k->store.procs[i];

                if (p->root_pid != pid || p->root_start != start) {
                        i++;
                        continue;
                }
                if (proc_same(k, p->pid, p->start_time, -1))
                        undo_proc(k, p, c);
                else {
                        c->gone += (unsigned) affinity_store_proc_held(p);
                        affinity_store_remove(&k->store, p);
                }
        }
}

int affinity_undo(struct affinity_keeper *k, pid_t pid, uint64_t start_time, struct affinity_counts *c) {
        struct aff_proc *p;

        c = c ?: &no_counts;
        p = live_proc(k, pid, start_time, c);
        if (p)
                undo_proc(k, p, c);
        undo_adopted(k, pid, start_time, c);
        return save_later(k);
}

int affinity_check_adopted(struct affinity_keeper *k, struct affinity_counts *c) {
        size_t held = 0;

        c = c ?: &no_counts;
        for (size_t i = 0; i < k->store.n_procs;) {
                struct aff_proc *p = &k->store.procs[i];

                if (!p->root_pid) {
                        i++;
                        continue;
                }
                if (!proc_same(k, p->pid, p->start_time, -1)) {
                        c->gone += (unsigned) affinity_store_proc_held(p);
                        affinity_store_remove(&k->store, p);
                        continue;
                }
                check_records(k, p, c);
                adopt_new(k, p, false, c);
                if (affinity_store_proc_held(p) == 0) {
                        affinity_store_remove(&k->store, p);
                        continue;
                }
                held += affinity_store_proc_held(p);
                i++;
        }
        (void) save_later(k);
        return (int) MIN(held, (size_t) INT_MAX);
}

/* Every process undone, nothing written. */
static void undo_all_records(struct affinity_keeper *k, struct affinity_counts *c) {
        for (size_t i = 0; i < k->n_groups; i++)
                unplan_group(k, &k->groups[i]);    /* planned, never made */
        groups_clear(k);
        while (k->store.n_procs > 0) {
                struct aff_proc *p = &k->store.procs[k->store.n_procs - 1];
                if (proc_same(k, p->pid, p->start_time, -1))
                        undo_proc(k, p, c);
                else {
                        c->gone += (unsigned) affinity_store_proc_held(p);
                        affinity_store_remove(&k->store, p);
                }
        }
}

int affinity_undo_all(struct affinity_keeper *k, struct affinity_counts *c) {
        undo_all_records(k, c ?: &no_counts);
        return affinity_store_save_if_dirty(&k->store);
}

int affinity_recover(struct affinity_keeper *k, struct affinity_counts *c) {
        struct affinity_counts mine = {};
        int r;

        r = affinity_store_load(&k->store);
        if (!k->store.had_file)
                return r;    /* nothing to recover, and no file made */
        undo_all_records(k, &mine);
        k->store.dirty = true;
        if (affinity_store_save(&k->store) < 0)
                r = r < 0 ? r : -EIO;
        if (mine.restored + mine.failed > 0)
                log_notice("A numabalanced that did not exit cleanly left threads placed: %u given their original "
                           "affinity back, %u left alone (changed since), %u gone, %u failed",
                           mine.restored, mine.left_alone, mine.gone, mine.failed);
        if (c) {
                c->placed += mine.placed;
                c->restored += mine.restored;
                c->left_alone += mine.left_alone;
                c->gone += mine.gone;
                c->failed += mine.failed;
        }
        return r;
}

void affinity_forget(struct affinity_keeper *k, pid_t pid) {
        struct aff_proc *p = affinity_store_find(&k->store, pid);

        /* Not saved now: a stale line names an exited process, which a recovery skips
         * (start time); the next save drops it. */
        if (p)
                affinity_store_remove(&k->store, p);
}

bool affinity_recover_found_file(const struct affinity_keeper *k) {
        return k->store.had_file;
}

bool affinity_is_placed(const struct affinity_keeper *k, pid_t pid, int *node_cpus_first) {
        const struct aff_proc *p = affinity_store_find(&k->store, pid);

        if (!p || affinity_store_proc_held(p) == 0)
                return false;
        if (node_cpus_first)
                *node_cpus_first = p->node_first;
        return true;
}

size_t affinity_held(const struct affinity_keeper *k) {
        size_t n = 0;
        for (size_t i = 0; i < k->store.n_procs; i++)
                n += affinity_store_proc_held(&k->store.procs[i]);
        return n;
}

/* --- the keeper ---------------------------------------------------------------- */

struct affinity_keeper *affinity_keeper_new(const char *state_path, const char *proc_root) {
        struct affinity_keeper *k = calloc(1, sizeof(*k));

        if (k && affinity_store_init(&k->store, state_path) < 0) {
                free(k);
                k = NULL;
        }
        if (k) {
                k->proc_root = strdup(proc_root);
                k->set = CPU_ALLOC(NB_CPUS_MAX);
                k->set_size = CPU_ALLOC_SIZE(NB_CPUS_MAX);
                k->save_log = LOG_RATELIMIT(60000, 1);
        }
        if (!k || !k->proc_root || !k->set) {
                affinity_keeper_free(k);
                log_error_errno(-ENOMEM, "Out of memory");
                return NULL;
        }
        return k;
}

void affinity_keeper_free(struct affinity_keeper *k) {
        if (!k)
                return;
        affinity_store_done(&k->store);
        groups_clear(k);
        free(k->groups);
        if (k->set)
                CPU_FREE(k->set);
        free(k->proc_root);
        free(k);
}

void affinity_keeper_set_limits(struct affinity_keeper *k, size_t per_process, size_t in_all) {
        k->store.max_proc = per_process;
        k->store.max_all = in_all;
}

void affinity_keeper_set_hook(struct affinity_keeper *k, affinity_before_set_fn fn, void *userdata) {
        k->hook = fn;
        k->hook_userdata = userdata;
}

void affinity_keeper_set_batched(struct affinity_keeper *k, bool batched) {
        k->batched = batched;
}

void affinity_keeper_set_serve(struct affinity_keeper *k, affinity_serve_fn fn, void *userdata) {
        k->store.serve = fn;
        k->store.serve_userdata = userdata;
}

void affinity_keeper_set_file_max(struct affinity_keeper *k, size_t bytes) {
        k->store.file_max = bytes;
}

/* ---- what the placer and the reports ask of one thread ------------------------ */

static const struct aff_thread *thread_of(const struct affinity_keeper *k, pid_t pid, pid_t tid) {
        const struct aff_proc *p = k ? affinity_store_find(&k->store, pid) : NULL;
        return p ? affinity_store_thread(p, tid) : NULL;
}

bool affinity_original(const struct affinity_keeper *k, pid_t pid, pid_t tid, nb_cpumask *ret) {
        const struct aff_thread *t = thread_of(k, pid, tid);

        if (!t || t->flags != 0)
                return false;
        affinity_store_original(t, ret);
        return true;
}

bool affinity_thread_held(const struct affinity_keeper *k, pid_t pid, pid_t tid) {
        const struct aff_thread *t = thread_of(k, pid, tid);
        return t && t->flags == 0;
}

bool affinity_thread_left_alone(const struct affinity_keeper *k, pid_t pid, pid_t tid) {
        const struct aff_thread *t = thread_of(k, pid, tid);
        return t && (t->flags & AT_LEFT_ALONE);
}
