/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "affinity.h"
#include "cgroup.h"
#include "creds.h"
#include "cleanup.h"
#include "clock.h"
#include "log.h"
#include "parse.h"
#include "group-place.h"
#include "placer.h"
#include "proc.h"
#include "proc-records.h"
#include "share-groups.h"

/* Threads decided in one round, at most, all processes together: bounds the round's
 * arrays (a few hundred bytes a thread). */
#define PLACER_ROUND_THREADS_MAX 8192
/* Refusals logged a minute, all processes together. */
#define PLACER_FAIL_LOG_BURST 10

struct placer {
        struct affinity_keeper *keeper;
        struct cpu_load cl;
        struct thread_load own;    /* the daemon's own threads (forgive_own_load()) */
        struct placer_counters counters;
        size_t n_placed;           /* processes placed now */
        pid_t cursor;              /* a full round stopped before this pid: the next starts here */
        struct log_ratelimit fail_log;
        bool stopped;              /* placer_stop(): every placement undone, none made again */
};

static const char *const skip_names[_PLACER_SKIP_MAX] = {
        [PLACER_DECIDED] = "decided",
        [PLACER_NOT_SCANNED] = "not-scanned",
        [PLACER_TOO_MANY_THREADS] = "too-many-threads",
        [PLACER_FIRST_WINDOW] = "first-window",
        [PLACER_UNREADABLE] = "unreadable",
        [PLACER_WAITING] = "waiting",
        [PLACER_NOT_PERMITTED] = "not-permitted",
};

const char *placer_skip_name(enum placer_skip s) {
        return (unsigned) s < _PLACER_SKIP_MAX ? skip_names[s] : "?";
}

static const char *const undo_names[_PLACER_UNDO_MAX] = {
        [PLACER_UNDO_RELEASED] = "released",
        [PLACER_UNDO_OPT_OUT] = "opt-out",
        [PLACER_UNDO_STOP] = "stop",
        [PLACER_UNDO_RECOVERED] = "recovered",
};

const char *placer_undo_name(enum placer_undo u) {
        return (unsigned) u < _PLACER_UNDO_MAX ? undo_names[u] : "?";
}

void placer_proc_free(struct proc_place *pp) {
        if (!pp)
                return;
        thread_load_done(&pp->tl);
        free(pp);
}

int placer_new(const char *state_path, const char *proc_root, struct placer **ret) {
        struct affinity_counts c = {};
        struct placer *pl = calloc(1, sizeof(*pl));

        if (!pl)
                return log_error_errno(-ENOMEM, "Out of memory");
        pl->fail_log = LOG_RATELIMIT(60000, PLACER_FAIL_LOG_BURST);
        pl->keeper = affinity_keeper_new(state_path, proc_root);
        if (!pl->keeper) {
                free(pl);
                return log_error_errno(-ENOMEM, "Failed to set up the thread affinity keeper (%s)", state_path);
        }
        /* What a previous run narrowed and could not give back (crash, kill -9, the
         * watchdog): given back now, before anything is placed again. */
        (void) affinity_recover(pl->keeper, &c);
        /* From now on the state file is written once a round (placer_round()). */
        affinity_keeper_set_batched(pl->keeper, true);
        pl->counters.undone[PLACER_UNDO_RECOVERED] += c.restored;
        pl->counters.threads_restored += c.restored;
        pl->counters.threads_left_alone += c.left_alone;
        *ret = pl;
        return 0;
}

void placer_set_serve(struct placer *pl, void (*serve)(void *userdata), void *userdata) {
        if (pl)
                affinity_keeper_set_serve(pl->keeper, serve, userdata);
}

void placer_free(struct placer *pl) {
        if (!pl)
                return;
        affinity_keeper_free(pl->keeper);
        thread_load_cpu_done(&pl->cl);
        thread_load_done(&pl->own);
        free(pl);
}

const struct placer_counters *placer_counters(const struct placer *pl) {
        return &pl->counters;
}

size_t placer_threads_held(const struct placer *pl) {
        return pl ? affinity_held(pl->keeper) : 0;
}

bool placer_thread_held(const struct placer *pl, pid_t pid, pid_t tid) {
        return pl && affinity_thread_held(pl->keeper, pid, tid);
}

bool placer_thread_left_alone(const struct placer *pl, pid_t pid, pid_t tid) {
        return pl && affinity_thread_left_alone(pl->keeper, pid, tid);
}

/* The CPUs the cgroup at path lets its processes use: the nearest cpuset.cpus.effective
 * up the tree (a cgroup without the cpuset controller has none), else every online
 * CPU. */
static void cgroup_cpus(const char *root, const char *path, const struct topology *t, nb_cpumask *ret) {
        _cleanup_free_ char *dir = NULL;

        *ret = t->online_cpus;
        if (asprintf(&dir, "%s%s", root, path) < 0)
                return;
        for (;;) {
                _cleanup_free_ char *file = NULL, *buf = NULL;
                nb_cpumask m;
                size_t len;
                char *slash;

                if (asprintf(&file, "%s/cpuset.cpus.effective", dir) < 0)
                        return;
                if (parse_read_file_at(AT_FDCWD, file, 65536, &buf, &len) == 0) {
                        buf[strcspn(buf, "\n")] = '\0';
                        if (cpumask_parse(buf, &m) == 0 && cpumask_weight(&m) > 0) {
                                cpumask_and(ret, &m, &t->online_cpus);
                                return;
                        }
                }
                slash = strrchr(dir, '/');
                if (!slash || (size_t) (slash - dir) < strlen(root))
                        return;
                *slash = '\0';
        }
}

static bool covers(const nb_cpumask *have, const nb_cpumask *need) {
        nb_cpumask both;

        cpumask_and(&both, have, need);
        return cpumask_equal(&both, need);
}

/* One process in the round: its record, and where its threads are in the round's
 * thread array. */
struct round_proc {
        struct proc_rec *rec;
        size_t first, n;           /* its threads: threads[first .. first + n) */
        bool *ours;                /* per thread of its tl: not the application's choice */
        int place_node;            /* planned on this node index by place(), -1: not */
        bool was_placed;
        struct affinity_counts placed; /* what the round's commit did to its threads */
};

struct round {
        struct round_proc *procs;
        struct tp_proc *tp;
        struct tp_thread *threads;
        bool *ours;
        size_t n_procs, n_threads;
};

static void round_done(struct round *rd) {
        free(rd->procs);
        free(rd->tp);
        free(rd->threads);
        free(rd->ours);
}

static struct proc_place *place_of(struct proc_rec *p) {
        if (!p->place) {
                p->place = calloc(1, sizeof(*p->place));
                if (p->place)
                        p->place->placed = p->place->node = -1;
        }
        return p->place;
}

/* The threads of p that the round may place, described for thread-place.h. A thread is
 * the application's choice (app_pinned) when the CPUs it was free to use (its affinity,
 * or the one the daemon narrowed it from) do not cover its cgroup's. */
static void describe_threads(struct placer *pl, const struct placer_env *env, struct proc_rec *p,
                             struct round *rd, size_t first) {
        struct thread_load *tl = &p->place->tl;
        nb_cpumask cg_cpus;

        cgroup_cpus(env->cgroup_root, p->cg->path, env->topo, &cg_cpus);
        for (size_t i = 0; i < tl->n_threads; i++) {
                const struct thread_load_thread *th = &tl->threads[i];
                struct tp_thread *tp = &rd->threads[first + i];
                nb_cpumask free_cpus, may;

                *tp = (struct tp_thread) { .tid = th->tid, .node = th->node, .busy = th->busy };
                if (!affinity_original(pl->keeper, p->pid, th->tid, &free_cpus) &&
                    !thread_load_affinity(tl, i, &free_cpus))
                        free_cpus = (nb_cpumask) {};
                tp->app_pinned = !covers(&free_cpus, &cg_cpus) || affinity_thread_left_alone(pl->keeper, p->pid, th->tid);
                rd->ours[first + i] = !tp->app_pinned;
                cpumask_and(&may, &free_cpus, &cg_cpus);
                thread_place_thread_cpus(tp, env->topo, &may);
        }
}

/* Reads p's threads; false when it is not decided this round (p->place->skip says
 * why). */
static bool read_threads(const struct placer_env *env, struct proc_rec *p, uint64_t now_ms) {
        struct proc_place *pp = p->place;
        int r;

        if (!p->node_bytes || !p->stuck_away || !p->scans) {
                pp->skip = PLACER_NOT_SCANNED;
                return false;
        }
        r = thread_load_read(env->proc_root, p->pid, env->topo, &pp->tl, PLACER_THREADS_MAX);
        if (r == -E2BIG) {
                pp->skip = PLACER_TOO_MANY_THREADS;
                return false;
        }
        if (r < 0) {
                pp->skip = PLACER_UNREADABLE;
                return false;
        }
        if (pp->tl.window_ns == 0) {
                pp->skip = PLACER_FIRST_WINDOW;
                return false;
        }
        pp->skip = PLACER_DECIDED;
        return true;
}

static bool in_round(const struct proc_rec *p, uint64_t tick) {
        return p->seen_tick == tick && !p->exited && p->cg &&
               cg_mode_decides_placement(p->cg->mode);
}

/* Whether the keeper holds threads of p narrowed: placed by a round, or created by a
 * placed thread and followed (follow_children), its parent alive or not. */
static bool holds(const struct placer *pl, const struct proc_rec *p) {
        return (p->place && p->place->placed >= 0) || affinity_is_placed(pl->keeper, p->pid, NULL);
}

/* Undoes p's placement, counted under why. */
static void undo(struct placer *pl, struct proc_rec *p, enum placer_undo why) {
        struct affinity_counts c = {};
        bool placed = p->place && p->place->placed >= 0;

        if (!holds(pl, p))
                return;
        (void) affinity_undo(pl->keeper, p->pid, p->starttime, &c);
        pl->counters.undone[why] += c.restored;
        pl->counters.threads_restored += c.restored;
        pl->counters.threads_left_alone += c.left_alone;
        if (!placed) {
                log_info("cgroup=%s pid=%d comm=%s: created by a placed thread, undone (%s): %u thread(s) given "
                         "their affinity back, %u changed by the application and left alone",
                         p->cg ? p->cg->path : "?", (int) p->pid, p->comm, placer_undo_name(why), c.restored,
                         c.left_alone);
                return;
        }
        pl->counters.placements_undone++;
        log_info("cgroup=%s pid=%d comm=%s: placement on node %d undone (%s): %u thread(s) given their affinity "
                 "back, %u changed by the application and left alone", p->cg ? p->cg->path : "?", (int) p->pid,
                 p->comm, p->place->placed >= 0 ? (int) p->place->placed : -1, placer_undo_name(why), c.restored,
                 c.left_alone);
        p->place->placed = -1;
        p->place->threads_held = 0;
        if (pl->n_placed)
                pl->n_placed--;
}

/* Gathers the round's processes (from the cursor, at most PLACER_PROCS_MAX and
 * PLACER_ROUND_THREADS_MAX threads) with their threads read. */
static int gather(struct placer *pl, const struct placer_env *env, struct proc_records *procs, uint64_t tick,
                  uint64_t now_ms, struct round *rd) {
        size_t start = 0, cap = 0;

        while (start < procs->n && procs->v[start]->pid < pl->cursor)
                start++;
        pl->cursor = 0;
        for (size_t k = 0; k < procs->n; k++) {
                struct proc_rec *p = procs->v[(start + k) % procs->n];
                struct proc_place *pp;

                if (!in_round(p, tick)) {
                        if (p->seen_tick == tick && (!p->cg || !cg_mode_places(p->cg->mode)) && holds(pl, p))
                                undo(pl, p, PLACER_UNDO_OPT_OUT);
                        continue;
                }
                pp = place_of(p);
                if (!pp)
                        return -ENOMEM;
                if (!cg_mode_places(p->cg->mode) && holds(pl, p))
                        undo(pl, p, PLACER_UNDO_OPT_OUT);  /* place -> advise */
                if (rd->n_procs >= PLACER_PROCS_MAX || rd->n_threads + PLACER_THREADS_MAX > PLACER_ROUND_THREADS_MAX) {
                        if (!pl->cursor)
                                pl->cursor = p->pid;
                        pp->skip = PLACER_WAITING;
                        continue;
                }
                if (pp->denied_until_ms > now_ms) {
                        pp->skip = PLACER_NOT_PERMITTED;
                        continue;
                }
                if (!read_threads(env, p, now_ms))
                        continue;
                if (rd->n_procs == cap) {
                        size_t nc = cap ? cap * 2 : 16;
                        struct round_proc *v = realloc(rd->procs, nc * sizeof(*v));
                        if (!v)
                                return -ENOMEM;
                        rd->procs = v;
                        cap = nc;
                }
                rd->procs[rd->n_procs++] = (struct round_proc) {
                        .rec = p, .first = rd->n_threads, .n = pp->tl.n_threads, .place_node = -1,
                };
                rd->n_threads += pp->tl.n_threads;
        }
        return 0;
}

static int describe(struct placer *pl, const struct placer_env *env, struct round *rd) {
        unsigned n_nodes = env->topo->n_nodes;

        rd->tp = calloc(rd->n_procs ? rd->n_procs : 1, sizeof(*rd->tp));
        rd->threads = calloc(rd->n_threads ? rd->n_threads : 1, sizeof(*rd->threads));
        rd->ours = calloc(rd->n_threads ? rd->n_threads : 1, sizeof(*rd->ours));
        if (!rd->tp || !rd->threads || !rd->ours)
                return -ENOMEM;
        for (size_t i = 0; i < rd->n_procs; i++) {
                struct proc_rec *p = rd->procs[i].rec;
                struct tp_proc *tp = &rd->tp[i];

                describe_threads(pl, env, p, rd, rd->procs[i].first);
                tp->pid = p->pid;
                tp->threads = &rd->threads[rd->procs[i].first];
                tp->n_threads = rd->procs[i].n;
                for (unsigned n = 0; n < n_nodes; n++) {
                        tp->bytes_on[n] = p->node_bytes[n];
                        tp->stuck_away[n] = p->stuck_away[n];
                }
                tp->placed = p->place->placed;
                tp->placed_at_ms = p->place->placed_at_ms;
        }
        return 0;
}

static void log_would(const struct proc_rec *p, const struct tp_proc *tp) {
        log_info("cgroup=%s pid=%d comm=%s: advise: would place %u busy thread(s) on node %d (%s; %u to move, "
                 "%" PRIu64 " KiB of memory to follow)", p->cg->path, (int) p->pid, p->comm, tp->n_busy, tp->node,
                 thread_place_reason_name(tp->reason), tp->threads_to_move, tp->bytes_to_copy / 1024);
}

/* Right before narrowing: the process is still in the cgroup it was read in, the
 * setting on that path still says place, and the opt-in still covers it (its owner
 * may have changed by exec). The identity of the process and of each thread is the
 * keeper's to check, right before each change. */
static bool still_ours(const struct placer_env *env, const struct proc_rec *p) {
        _cleanup_free_ char *path = NULL;
        struct cgroup_setting cs;
        struct proc_creds creds;

        if (proc_read_cgroup(env->proc_root, p->pid, &path) < 0 || strcmp(path, p->cg->path) != 0 ||
            cgroup_setting_of(env->cgroup_root, env->cfg->cgroups, env->cfg->n_cgroups, path, &cs) < 0 ||
            !cg_mode_places(cs.mode))
                return false;
        if (cs.covers_uid == CGROUP_COVERS_ALL)
                return true;
        return creds_read(env->proc_root, p->pid, &creds) >= 0 && creds.stat.starttime == p->starttime &&
               creds_belong_to(&creds, cs.covers_uid);
}

/* The kernel refused to narrow n of p's threads (EPERM: another user's process and
 * no CAP_SYS_NICE, or an LSM): p is not decided again before a back-off, and the
 * refusals are logged at most PLACER_FAIL_LOG_BURST times a minute in all, so that no
 * tenant can flood the journal. */
static void back_off(struct placer *pl, struct proc_rec *p, unsigned n) {
        struct proc_place *pp = p->place;
        uint64_t suppressed = 0;

        pp->denied_backoff_ms = pp->denied_backoff_ms ? (pp->denied_backoff_ms * 2 < PLACER_DENIED_MAX_MS ? pp->denied_backoff_ms * 2 : PLACER_DENIED_MAX_MS)
                                                      : PLACER_DENIED_MIN_MS;
        pp->denied_until_ms = pp->decided_ms + pp->denied_backoff_ms;
        if (log_ratelimit_ok(&pl->fail_log, pp->decided_ms, &suppressed))
                log_warning("cgroup=%s pid=%d comm=%s: not placed: the kernel refused to change the affinity of "
                            "%u thread(s) (%s; another user's threads need CAP_SYS_NICE): tried again in %" PRIu64
                            " s%s", p->cg->path, (int) p->pid, p->comm, n, strerror(EPERM),
                            pp->denied_backoff_ms / 1000, suppressed ? " (more such lines were suppressed)" : "");
}

/* Plans to narrow p's threads (those the round may place) to node index node: made,
 * with every other placement of the round, by the round's affinity_commit(), then
 * accounted by placed(). */
static void place(struct placer *pl, const struct placer_env *env, struct round *rd, size_t i, int node) {
        struct proc_rec *p = rd->procs[i].rec;
        struct proc_place *pp = p->place;
        const struct thread_load *tl = &pp->tl;
        _cleanup_free_ pid_t *tids = calloc(tl->n_threads ? tl->n_threads : 1, sizeof(*tids));
        _cleanup_free_ uint64_t *starts = calloc(tl->n_threads ? tl->n_threads : 1, sizeof(*starts));
        _cleanup_free_ nb_cpumask *expect = calloc(tl->n_threads ? tl->n_threads : 1, sizeof(*expect));
        size_t n = 0;

        if (!tids || !starts || !expect)
                return;
        if (!still_ours(env, p)) {
                log_info("cgroup=%s pid=%d comm=%s: not placed: it left the cgroup, or the cgroup's setting is no "
                         "longer place, since it was read", p->cg->path, (int) p->pid, p->comm);
                return;
        }
        /* The threads the round counted as ours, each expected to have the affinity it
         * was read with: one the application changed since is left alone. */
        for (size_t k = 0; k < tl->n_threads; k++)
                if (rd->ours[rd->procs[i].first + k] && thread_load_affinity(tl, k, &expect[n])) {
                        tids[n] = tl->threads[k].tid;
                        starts[n++] = tl->threads[k].starttime;
                }
        rd->procs[i].place_node = node;
        rd->procs[i].was_placed = pp->placed >= 0;
        (void) affinity_place(pl->keeper, p->pid, p->starttime, p->pidfd, tids, starts, expect, n,
                              &env->topo->nodes[node].cpus, &rd->procs[i].placed);
}

/* After the round's commit: what place() planned for p, accounted. */
static void placed(struct placer *pl, const struct placer_env *env, struct round *rd, size_t i) {
        struct proc_rec *p = rd->procs[i].rec;
        struct proc_place *pp = p->place;
        struct affinity_counts c = rd->procs[i].placed;
        int node = rd->procs[i].place_node;
        bool was_placed = rd->procs[i].was_placed;

        pl->counters.threads_placed += c.placed;
        pl->counters.threads_left_alone += c.left_alone;
        pl->counters.failed += c.failed;
        pl->counters.not_permitted += c.not_permitted;
        if (c.not_permitted)
                back_off(pl, p, c.not_permitted);
        else
                pp->denied_backoff_ms = 0;
        if (c.placed == 0) {
                log_info("cgroup=%s pid=%d comm=%s: not placed on node %d: no thread could be narrowed "
                         "(%u gone, %u changed by the application, %u failed)", p->cg->path, (int) p->pid, p->comm,
                         env->topo->nodes[node].id, c.gone, c.left_alone, c.failed);
                return;
        }
        pl->counters.placements++;
        if (!was_placed)
                pl->n_placed++;
        pp->placed = node;
        pp->placed_at_ms = pp->decided_ms;
        pp->placed_reason = rd->tp[i].reason;
        pp->threads_held = c.placed;
        /* Its memory follows its threads at its next scan: soon, not at a settled
         * process's scan_max_ms. */
        if (env->bring_forward)
                env->bring_forward(p, pp->decided_ms + env->cfg->scan_min_ms);
        log_info("cgroup=%s pid=%d comm=%s: placed %u thread(s) on node %d (%s): %u busy, %u moved there, "
                 "%" PRIu64 " KiB of memory to follow", p->cg->path, (int) p->pid, p->comm, c.placed,
                 env->topo->nodes[node].id, thread_place_reason_name(rd->tp[i].reason), rd->tp[i].n_busy,
                 rd->tp[i].threads_to_move, rd->tp[i].bytes_to_copy / 1024);
}

/* A placed process that stays: threads its application changed since are left alone
 * from now on, new threads that inherited the placement are recorded. */
static void keep(struct placer *pl, struct proc_rec *p) {
        struct affinity_counts c = {};
        int r = affinity_check(pl->keeper, p->pid, p->starttime, &c);

        pl->counters.threads_left_alone += c.left_alone;
        if (c.left_alone)
                log_info("cgroup=%s pid=%d comm=%s: %u thread(s) had their affinity changed by the application "
                         "after the daemon placed them: left alone from now on", p->cg->path, (int) p->pid,
                         p->comm, c.left_alone);
        if (r > 0)
                p->place->threads_held = (unsigned) r;
        else if (r == 0) {
                /* Every thread changed by the application or gone: nothing of ours is left. */
                p->place->placed = -1;
                p->place->threads_held = 0;
                if (pl->n_placed)
                        pl->n_placed--;
        }
}

/* At debug level, what the round saw and decided, when it changed: the evidence for
 * a placement that did or did not happen. */
static void log_round(const struct placer_env *env, const struct tp_node *nodes, const struct round *rd) {
        char loads[256];
        size_t o = 0;

        for (unsigned n = 0; n < env->topo->n_nodes && o < sizeof(loads); n++)
                o += (size_t) snprintf(loads + o, sizeof(loads) - o, "%snode %d: %u CPUs, %.2f busy by others",
                                       n ? "; " : "", nodes[n].id, nodes[n].n_cpus, nodes[n].load_others);
        for (size_t i = 0; i < rd->n_procs; i++) {
                const struct proc_rec *p = rd->procs[i].rec;
                const struct tp_proc *tp = &rd->tp[i];

                if (tp->action == p->place->action && tp->node == p->place->node && tp->reason == p->place->reason)
                        continue;
                log_debug("pid=%d: placement round: %s node %d (%s), %u busy, %u to move, score %.0f MiB against "
                          "%.0f MiB left as it is; %s", (int) p->pid, thread_place_action_name(tp->action), tp->node >= 0 ? nodes[tp->node].id : -1,
                          thread_place_reason_name(tp->reason), tp->n_busy, tp->threads_to_move,
                          tp->score / 1048576.0, tp->score_baseline / 1048576.0, loads);
        }
}

static void act(struct placer *pl, const struct placer_env *env, struct round *rd, uint64_t now_ms) {
        for (size_t i = 0; i < rd->n_procs; i++) {
                struct proc_rec *p = rd->procs[i].rec;
                struct proc_place *pp = p->place;
                const struct tp_proc *tp = &rd->tp[i];
                bool acts = cg_mode_places_now(p->cg->mode, env->dry_run);
                bool changed = tp->action != pp->action || tp->node != pp->node || tp->reason != pp->reason;

                pp->action = tp->action;
                pp->reason = tp->reason;
                pp->node = tp->node;
                pp->n_busy = tp->n_busy;
                pp->threads_to_move = tp->threads_to_move;
                pp->bytes_to_copy = tp->bytes_to_copy;
                pp->decided_ms = now_ms;
                if (!acts) {
                        if (tp->action == TP_PLACE && changed) {
                                pl->counters.would_place++;
                                log_would(p, tp);
                        }
                        continue;
                }
                if (tp->action == TP_PLACE)
                        place(pl, env, rd, i, tp->node);
                else if (tp->action == TP_RELEASE)
                        undo(pl, p, PLACER_UNDO_RELEASED);
                else if (pp->placed >= 0)
                        keep(pl, p);
        }
        /* The state file written once for the round, before its first change; then the
         * changes. */
        (void) affinity_commit(pl->keeper);
        for (size_t i = 0; i < rd->n_procs; i++)
                if (rd->procs[i].place_node >= 0)
                        placed(pl, env, rd, i);
}

/* A CPU counts as contended when it was idle less than this share of the window and
 * more than OWN_THIRD_MIN of it went to neither the daemon nor the round's threads. */
#define OWN_IDLE_MIN 0.1
#define OWN_THIRD_MIN 0.05

/* Adds each measured thread's busy fraction of tl to by_cpu[the CPU it last ran on]. */
static void add_by_cpu(const struct thread_load *tl, double *by_cpu, unsigned n_cpus) {
        for (size_t i = 0; i < tl->n_threads; i++) {
                const struct thread_load_thread *th = &tl->threads[i];

                if (th->measured && th->cpu >= 0 && (unsigned) th->cpu < n_cpus && th->busy > 0)
                        by_cpu[th->cpu] += th->busy;
        }
}

/* Takes the daemon's own threads' CPU off the nodes' load. It is spent on the tenants
 * (copying their memory, mostly), it ends when that does, and placing their threads is
 * what ends it; counted, it made the service CPU's node look full exactly while the
 * daemon copied the memory a placement would have left still (perf bench numa's two
 * processes: 0.7 of node 0's two CPUs taken by the daemon, the placement waiting up to
 * 16 s). Not on a contended CPU: there a third party got less than it wanted, and the
 * daemon's share is what it waits for (place-no-room: another cgroup's busy threads
 * beside the daemon on CPU 0, node 0 seen with 0.19 of load instead of 1.00). Not when
 * the daemon is itself in the round (the unit tests place their own threads): its
 * threads are the round's already. */
static void forgive_own_load(struct placer *pl, const struct placer_env *env, const struct round *rd,
                             double *busy) {
        unsigned n_cpus = env->topo->n_cpus;
        pid_t self = env->self_pid ? env->self_pid : getpid();
        _cleanup_free_ double *own = NULL, *ours = NULL;

        for (size_t i = 0; i < rd->n_procs; i++)
                if (rd->procs[i].rec->pid == self)
                        return;
        if (!pl->cl.frac || pl->cl.n_cpus != n_cpus ||
            thread_load_read(env->proc_root, self, env->topo, &pl->own, PLACER_THREADS_MAX) < 0 ||
            pl->own.window_ns == 0)
                return;
        own = calloc(n_cpus ? n_cpus : 1, sizeof(*own));
        ours = calloc(n_cpus ? n_cpus : 1, sizeof(*ours));
        if (!own || !ours)
                return;
        add_by_cpu(&pl->own, own, n_cpus);
        for (size_t i = 0; i < rd->n_procs; i++)
                add_by_cpu(&rd->procs[i].rec->place->tl, ours, n_cpus);
        for (unsigned c = 0; c < n_cpus; c++) {
                double f = pl->cl.frac[c], take;
                int node = topology_cpu_node(env->topo, c);
                int idx = node >= 0 ? topology_node_index(env->topo, (unsigned) node) : -1;

                if (own[c] <= 0 || f < 0 || idx < 0 || (unsigned) idx >= env->topo->n_nodes)
                        continue;
                if (f > 1 - OWN_IDLE_MIN && f - own[c] - ours[c] > OWN_THIRD_MIN)
                        continue;
                take = own[c] < f ? own[c] : f;
                busy[idx] = busy[idx] > take ? busy[idx] - take : 0;
        }
}

static int by_cgroup(const void *a, const void *b) {
        const struct proc_rec *x = *(const struct proc_rec *const *) a, *y = *(const struct proc_rec *const *) b;

        if (x->cg != y->cg)
                return (uintptr_t) x->cg < (uintptr_t) y->cg ? -1 : 1;
        return (x->pid > y->pid) - (x->pid < y->pid);
}

/* A process created by a placed thread inherits the narrowed mask, across exec: each
 * tick, each cgroup in place with a process whose threads the keeper holds has its
 * cgroup.procs read once, and its processes created since a placement, carrying
 * exactly a mask we set, are recorded with their donor's original (affinity_adopt), so
 * that they are given back with everything else; before the round describes them,
 * whose threads are then ours, not the application's choice. Then every process
 * followed so is checked (affinity_check_adopted), its parent alive or not. */
static void follow_children(struct placer *pl, const struct placer_env *env, struct proc_records *procs,
                            uint64_t tick) {
        _cleanup_free_ struct proc_rec **held = NULL;
        struct affinity_counts c = {};
        size_t n = 0;

        if (env->dry_run)
                return;
        held = calloc(procs->n ? procs->n : 1, sizeof(*held));
        if (!held)
                return;
        for (size_t i = 0; i < procs->n; i++) {
                struct proc_rec *p = procs->v[i];

                if (p->seen_tick == tick && !p->exited && p->cg && cg_mode_places(p->cg->mode) && holds(pl, p))
                        held[n++] = p;
        }
        qsort(held, n, sizeof(*held), by_cgroup);
        for (size_t i = 0, j; i < n; i = j) {
                _cleanup_free_ pid_t *pids = NULL, *cands = NULL;
                _cleanup_free_ uint64_t *starts = NULL;
                size_t n_cands = 0;
                int r;

                for (j = i; j < n && held[j]->cg == held[i]->cg; j++)
                        ;
                if (cgroup_read_procs(env->cgroup_root, held[i]->cg->path, &cands, &n_cands) < 0)
                        continue;
                pids = calloc(j - i, sizeof(*pids));
                starts = calloc(j - i, sizeof(*starts));
                if (!pids || !starts)
                        return;
                for (size_t k = i; k < j; k++) {
                        pids[k - i] = held[k]->pid;
                        starts[k - i] = held[k]->starttime;
                }
                r = affinity_adopt(pl->keeper, held[i]->cg->path, pids, starts, j - i, cands, n_cands, &c);
                if (r > 0)
                        log_info("cgroup=%s: %d process(es) created by placed threads carry the affinity the daemon "
                                 "set: followed, given back with the placement", held[i]->cg->path, r);
        }
        (void) affinity_check_adopted(pl->keeper, &c);
        pl->counters.threads_restored += c.restored;
        pl->counters.threads_left_alone += c.left_alone;
        pl->counters.failed += c.failed;
}

/* The round's decision: the members of a share group in it as one (group-place.h);
 * out of memory, each process alone. */
static void decide_round(const struct placer_env *env, const struct tp_node *nodes, unsigned n_nodes,
                         struct round *rd, const struct tp_params *params, uint64_t now_ms) {
        _cleanup_free_ size_t *group = calloc(rd->n_procs ? rd->n_procs : 1, sizeof(*group));
        _cleanup_free_ unsigned *together = calloc(rd->n_procs ? rd->n_procs : 1, sizeof(*together));

        for (size_t i = 0; group && together && i < rd->n_procs; i++) {
                const struct proc_rec *p = rd->procs[i].rec;
                const struct share_group *g = env->shares ? share_groups_of(env->shares, p->cg->turn_uid, p->pid) : NULL;

                group[i] = g ? (size_t) (g - env->shares->groups) : GROUP_PLACE_NONE;
        }
        if (!group || !together ||
            group_place_round(nodes, n_nodes, rd->tp, group, together, rd->n_procs, params, now_ms) < 0) {
                thread_place_round(nodes, n_nodes, rd->tp, rd->n_procs, params, now_ms);
                for (size_t i = 0; i < rd->n_procs; i++)
                        rd->procs[i].rec->place->together = 1;
                return;
        }
        for (size_t i = 0; i < rd->n_procs; i++)
                rd->procs[i].rec->place->together = together[i];
}

void placer_round(struct placer *pl, const struct placer_env *env, struct proc_records *procs, uint64_t tick,
                  uint64_t now_ms) {
        _cleanup_free_ double *busy = NULL;
        _cleanup_free_ struct tp_node *nodes = NULL;
        struct round rd = {};
        struct tp_params params;
        unsigned n_nodes = env->topo->n_nodes;
        int window;

        if (!pl || pl->stopped || n_nodes == 0 || n_nodes > TP_MAX_NODES)
                return;
        busy = calloc(n_nodes, sizeof(*busy));
        nodes = calloc(n_nodes, sizeof(*nodes));
        if (!busy || !nodes)
                return;
        pl->counters.rounds++;
        window = thread_load_cpu_read(env->proc_root, env->topo, &pl->cl, clock_now_ns(CLOCK_MONOTONIC), busy);
        if (gather(pl, env, procs, tick, now_ms, &rd) < 0) {
                (void) affinity_commit(pl->keeper);    /* what the opt-outs changed */
                round_done(&rd);
                return;
        }
        follow_children(pl, env, procs, tick);
        if (window <= 0 || rd.n_procs == 0 || describe(pl, env, &rd) < 0) {
                (void) affinity_commit(pl->keeper);    /* what the opt-outs and children changed */
                round_done(&rd);
                return;
        }
        for (unsigned n = 0; n < n_nodes; n++) {
                const struct topo_node *tn = &env->topo->nodes[n];
                nb_cpumask online;

                cpumask_and(&online, &tn->cpus, &env->topo->online_cpus);
                nodes[n] = (struct tp_node) {
                        .id = (int) tn->id, .n_cpus = cpumask_weight(&online),
                        .slow = tn->slow || !tn->has_cpus,
                };
        }
        forgive_own_load(pl, env, &rd, busy);
        thread_place_load_others(nodes, n_nodes, busy, rd.tp, rd.n_procs);
        thread_place_params_default(&params);
        params.hold_ms = env->cfg->place_hold_ms;
        params.thread_cost_bytes = env->cfg->place_thread_cost_kb * 1024;
        decide_round(env, nodes, n_nodes, &rd, &params, now_ms);
        log_round(env, nodes, &rd);
        act(pl, env, &rd, now_ms);
        round_done(&rd);
}

/* Whether p's process is gone (or its pid another's). */
static bool exited(const char *proc_root, const struct proc_rec *p) {
        struct proc_stat st;

        return p->exited || proc_read_stat(proc_root, p->pid, &st) < 0 || st.starttime != p->starttime;
}

void placer_departed(struct placer *pl, const char *proc_root, struct proc_rec *p) {
        if (!pl || !holds(pl, p))
                return;
        if (exited(proc_root, p)) {
                /* What it created is its own record: followed and given back still. */
                affinity_forget(pl->keeper, p->pid);
                if (!p->place || p->place->placed < 0)
                        return;
                p->place->placed = -1;
                if (pl->n_placed)
                        pl->n_placed--;
                return;
        }
        undo(pl, p, PLACER_UNDO_OPT_OUT);
}

void placer_stop(struct placer *pl) {
        struct affinity_counts c = {};

        if (!pl)
                return;
        pl->stopped = true;
        (void) affinity_undo_all(pl->keeper, &c);
        pl->counters.undone[PLACER_UNDO_STOP] += c.restored;
        pl->counters.placements_undone += pl->n_placed;
        pl->counters.threads_restored += c.restored;
        pl->counters.threads_left_alone += c.left_alone;
        if (c.restored || c.left_alone)
                log_info("Stopping: %u thread(s) given their affinity back, %u changed by their application and "
                         "left alone", c.restored, c.left_alone);
        pl->n_placed = 0;
}
