/* SPDX-License-Identifier: GPL-2.0-or-later */
/* React scans (react.h): node-change events, the react timer, the pass. */
#include <errno.h>
#include <inttypes.h>
#include <poll.h>
#include <stdlib.h>
#include <sys/epoll.h>
#include "cleanup.h"
#include "clock.h"
#include "log.h"
#include "proc.h"
#include "react.h"
#include "scan.h"

void react_init(struct react *r, const struct react_hooks *hooks) {
        *r = (struct react) { .hooks = *hooks };
}

void react_set_env(struct react *r, const struct react_env *env) {
        r->env = *env;
}

/* Whether p still names the process it was made for, right before a scan outside the
 * tick (which admitted it): its pidfd has not said it exited, and its start time is
 * the record's. */
static bool still_there(const struct react *r, const struct proc_rec *p) {
        struct proc_stat st;
        struct pollfd pfd = { .fd = p->pidfd, .events = POLLIN };

        if (p->pidfd >= 0 && poll(&pfd, 1, 0) != 0)
                return false;
        return proc_read_stat(r->env.proc_root, p->pid, &st) == 0 && st.starttime == p->starttime;
}

/* The react timer at the earliest pending react scan, or off. */
static void arm(struct react *r) {
        const struct proc_records *procs = r->env.procs;
        uint64_t next = UINT64_MAX;

        if (!r->timer)
                return;
        for (size_t i = 0; i < procs->n; i++)
                if (procs->v[i]->sched.react_due_ms && procs->v[i]->sched.react_due_ms < next)
                        next = procs->v[i]->sched.react_due_ms;
        if (next == UINT64_MAX) {
                (void) sd_event_source_set_enabled(r->timer, SD_EVENT_OFF);
                return;
        }
        (void) sd_event_source_set_time(r->timer, next * 1000);
        (void) sd_event_source_set_enabled(r->timer, SD_EVENT_ONESHOT);
}

/* Only a process the last tick saw in a cgroup still opted in, and still there. */
static bool still_watched(const struct react *r, const struct proc_rec *p) {
        return p->seen_tick == r->env.counters->tick && p->cg && p->cg->seen && cg_mode_watched(p->cg->mode) &&
               still_there(r, p);
}

void react_pass(struct react *r) {
        struct proc_records *procs = r->env.procs;
        uint64_t now = clock_now_ms();
        void *pass = r->hooks.begin(r->hooks.userdata);

        if (!pass)
                return;
        for (size_t i = 0; i < procs->n; i++) {
                struct proc_rec *p = procs->v[i];

                if (!p->sched.react_due_ms || p->sched.react_due_ms > now)
                        continue;
                if (!still_watched(r, p)) {
                        scan_react_drop(p);
                        continue;
                }
                r->hooks.scan(r->hooks.userdata, pass, p, now);
                scan_react_drop(p);
                r->env.counters->react_scans++;
        }
        r->hooks.end(r->hooks.userdata, pass, now);
}

static int on_timer(sd_event_source *s, uint64_t usec, void *userdata) {
        struct react *r = userdata;

        react_pass(r);
        arm(r);
        return 0;
}

/* The window restarts now: the CPU time before the move says nothing about where the
 * process runs next. Its read is charged to it. */
static void restart_window(struct react *r, struct proc_rec *p) {
        const struct react_env *e = &r->env;
        _cleanup_free_ uint64_t *scratch = calloc(e->topo->n_nodes ? e->topo->n_nodes : 1, sizeof(*scratch));
        uint64_t t;

        if (!scratch || !p->pl.primed)
                return;
        t = cost_thread_ns();
        (void) e->source->sample(e->source, e->proc_root, p->pid, e->topo, &p->pl, scratch);
        cost_charge_proc(e->cost, p, STAGE_READ, cost_thread_ns() - t);
}

/* Decide again react_ms later, whatever its backoff: a process settled for minutes is
 * otherwise rescanned only every scan_max_ms. And no sooner than scan_min_ms after its
 * last scan: however often its threads move, it is scanned at most as often as a
 * process that keeps changing. */
void react_node_changed(void *userdata, pid_t pid, int node) {
        struct react *r = userdata;
        const struct nb_config *cfg = r->env.cfg;
        struct proc_rec *p = proc_records_find(r->env.procs, pid);
        uint64_t now = clock_now_ms(), due;

        r->env.counters->node_events++;
        if (!p || !p->cg || !cg_mode_watched(p->cg->mode) || cfg->react_ms == 0)
                return;
        /* A react scan already pending has this move in its window. Otherwise the
         * window restarts even if a scan is due sooner: that scan would decide on
         * CPU time mostly from before the move, find no node above the hysteresis,
         * and the process would wait for the one after. Pending at most once, so a
         * process whose threads keep moving cannot postpone its scans forever. */
        if (p->sched.react_due_ms > now)
                return;
        due = now + cfg->react_ms;
        if (p->last_scan_ms && p->last_scan_ms + cfg->scan_min_ms > due)
                due = p->last_scan_ms + cfg->scan_min_ms;
        log_debug("cgroup=%s pid=%d: a thread now runs on node %d, deciding again in %" PRIu64 " ms", p->cg->path,
                  (int) pid, node, due - now);
        restart_window(r, p);
        scan_react_at(p, due);
        arm(r);
}

static int on_events(sd_event_source *s, int fd, uint32_t revents, void *userdata) {
        struct react *r = userdata;
        int k = r->env.source->events_consume(r->env.source, react_node_changed, r);

        if (k < 0)
                log_debug_errno(k, "Failed to read node-change events: %m");
        return 0;
}

void react_watch_events(struct react *r, sd_event *e) {
        const struct node_time_source *src = r->env.source;
        int fd, k = 0;

        if (!src->events_fd || !src->events_consume)
                return;
        fd = src->events_fd(src);
        if (fd >= 0)
                k = sd_event_add_io(e, &r->events, fd, EPOLLIN, on_events, r);
        if (fd < 0 || k < 0)
                log_warning_errno(fd < 0 ? fd : k, "Node changes of threads will be seen at the next scan only: "
                                  "cannot watch the BPF ring buffer: %m");
}

void react_unwatch_events(struct react *r) {
        r->events = sd_event_source_unref(r->events);
}

void react_start(struct react *r, sd_event *e) {
        int k = sd_event_add_time(e, &r->timer, CLOCK_MONOTONIC, UINT64_MAX, 1000, on_timer, r);

        if (k < 0)
                log_warning_errno(k, "Node changes of threads will be seen at the next scan only: no timer: %m");
        else
                (void) sd_event_source_set_enabled(r->timer, SD_EVENT_OFF);
        react_watch_events(r, e);
}

void react_stop(struct react *r) {
        if (r->events)
                sd_event_source_set_enabled(r->events, SD_EVENT_OFF);
        if (r->timer)
                sd_event_source_set_enabled(r->timer, SD_EVENT_OFF);
}

void react_done(struct react *r) {
        r->timer = sd_event_source_unref(r->timer);
        r->events = sd_event_source_unref(r->events);
}
