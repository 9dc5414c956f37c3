/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <math.h>
#include "thread-place.h"

#define MIB (UINT64_C(1) << 20)
#define TP_END SIZE_MAX

void thread_place_params_default(struct tp_params *p) {
        *p = (struct tp_params) {
                /* A placement holds a minute: twice the plan's cooldown_ms and
                 * scan_max_ms (30 s each by default), so that it is judged on at least
                 * two scans of where its memory went, and the memory that followed it
                 * is not due to move again before the placement may. */
                .hold_ms = 60 * 1000,
                /* Moving a thread costs it its warm caches on the old node, refilled
                 * from memory after the move: a server socket's last-level cache holds
                 * 16 to 64 MiB. So one thread weighs the smallest of those, 16 MiB
                 * copied: a process with more memory than that off the node gathers
                 * its threads rather than copying; one with a few MiB has them copied.
                 * A chosen weight, not a measured one. */
                .thread_cost_bytes = 16 * MIB,
                /* A thread using under a third of a CPU shares its CPU with others
                 * anyway; placing it would claim a CPU it does not use. */
                .busy_min = 0.3,
                /* A remote access costs about 1.5 to 2 times a local one (the distance
                 * table's 20-21 against 10), and it is paid on every access for as long
                 * as the memory stays: weighed as 4 bytes copied once. */
                .remote_weight = 4,
                /* A placed process moves only to a node at least twice as cheap: a
                 * move costs what the score counts and more (the memory copied back). */
                .switch_margin = 0.5,
        };
}

/* ---- one process's view -------------------------------------------------------- */

struct view {
        unsigned nb;                       /* busy threads */
        unsigned pinned_busy;              /* busy app-pinned threads */
        unsigned on[TP_MAX_NODES];         /* busy threads that ran on each node */
        double busy_on[TP_MAX_NODES];      /* their CPU, per node */
        double busy_all;                   /* their CPU, unknown nodes included */
        uint64_t allowed;                  /* nodes every busy thread may run on */
        unsigned cpus_min[TP_MAX_NODES];   /* the fewest CPUs a busy thread may use there */
        unsigned confined[TP_MAX_NODES];   /* busy threads that may run on that node only */
        uint64_t total;                    /* resident bytes */
};

static uint64_t nodes_mask(size_t n_nodes) {
        return n_nodes >= 64 ? UINT64_MAX : (UINT64_C(1) << n_nodes) - 1;
}

static bool is_busy(const struct tp_thread *th, const struct tp_params *p) {
        return isfinite(th->busy) && th->busy >= p->busy_min;
}

static int only_node(uint64_t mask) {
        return mask && !(mask & (mask - 1)) ? __builtin_ctzll(mask) : -1;
}

static uint64_t total_bytes(const struct tp_proc *pr, size_t n_nodes) {
        uint64_t s = 0;

        for (size_t n = 0; n < n_nodes; n++) {
                if (pr->bytes_on[n] > UINT64_MAX - s)
                        return UINT64_MAX;
                s += pr->bytes_on[n];
        }
        return s;
}

static void view_of(const struct tp_proc *pr, size_t n_nodes, const struct tp_params *p, struct view *v) {
        *v = (struct view) { .allowed = nodes_mask(n_nodes), .total = total_bytes(pr, n_nodes) };
        for (size_t n = 0; n < n_nodes; n++)
                v->cpus_min[n] = UINT32_MAX;
        for (size_t i = 0; i < pr->n_threads; i++) {
                const struct tp_thread *th = &pr->threads[i];
                bool known = th->node >= 0 && (size_t) th->node < n_nodes;
                int only;

                if (!is_busy(th, p))
                        continue;
                if (th->app_pinned) {
                        v->pinned_busy++;
                        continue;
                }
                v->nb++;
                v->busy_all += th->busy;
                if (known) {
                        v->on[th->node]++;
                        v->busy_on[th->node] += th->busy;
                }
                v->allowed &= th->allowed_nodes;
                for (size_t n = 0; n < n_nodes; n++)
                        if (th->cpus_on[n] < v->cpus_min[n])
                                v->cpus_min[n] = th->cpus_on[n];
                only = only_node(th->allowed_nodes & nodes_mask(n_nodes));
                if (only >= 0)
                        v->confined[only]++;
        }
}

/* Bytes not on n that may come to n. */
static uint64_t movable_not_on(const struct tp_proc *pr, const struct view *v, int n) {
        uint64_t away, stuck;

        if (n < 0)
                return 0;
        away = v->total - (pr->bytes_on[n] < v->total ? pr->bytes_on[n] : v->total);
        stuck = pr->stuck_away[n] < away ? pr->stuck_away[n] : away;
        return away - stuck;
}

static uint64_t stuck_at(const struct tp_proc *pr, const struct view *v, int n) {
        uint64_t away;

        if (n < 0)
                return 0;
        away = v->total - (pr->bytes_on[n] < v->total ? pr->bytes_on[n] : v->total);
        return pr->stuck_away[n] < away ? pr->stuck_away[n] : away;
}

/* Gathering the busy threads on n: the memory copied to n, the threads moved there,
 * and the memory that stays remote from n for good. */
static double score_on(const struct tp_proc *pr, const struct view *v, int n, const struct tp_params *p) {
        return (double) movable_not_on(pr, v, n) + (double) p->thread_cost_bytes * (double) (v->nb - v->on[n]) +
               p->remote_weight * (double) stuck_at(pr, v, n);
}

/* The node with most of the busy threads' CPU (ties: more bytes, then the lower index),
 * -1 when none ran on a known node. */
static int hot_node(const struct tp_proc *pr, const struct view *v, size_t n_nodes) {
        int h = -1;

        for (size_t n = 0; n < n_nodes; n++) {
                if (v->busy_on[n] <= 0)
                        continue;
                if (h < 0 || v->busy_on[n] > v->busy_on[h] ||
                    (v->busy_on[n] == v->busy_on[h] && pr->bytes_on[n] > pr->bytes_on[h]))
                        h = (int) n;
        }
        return h;
}

/* Leaving the threads where they are, the memory following them to h (what the plan
 * does): the bytes copied to h, and as remote for good what cannot come to h and, with
 * the threads split, the share of the memory the threads off h use. */
static double score_baseline(const struct tp_proc *pr, const struct view *v, int h, const struct tp_params *p,
                             bool *ret_stuck_dominates) {
        double off = v->busy_all > 0 ? (v->busy_all - (h >= 0 ? v->busy_on[h] : 0)) / v->busy_all : 1;
        double stuck = p->remote_weight * (double) stuck_at(pr, v, h);
        double s = (double) movable_not_on(pr, v, h) + stuck + p->remote_weight * (double) v->total * off;

        *ret_stuck_dominates = stuck > 0 && stuck * 2 >= s;
        return s;
}

/* ---- the round ------------------------------------------------------------------ */

struct round {
        const struct tp_node *nodes;
        size_t n_nodes;
        const struct tp_params *p;
        uint64_t now_ms;
        double fixed[TP_MAX_NODES];        /* load_others + the round's threads not placed */
        unsigned claimed[TP_MAX_NODES];    /* busy threads placed (or kept) there this round */
        unsigned confined[TP_MAX_NODES];   /* busy threads that may run there only, unclaimed */
};

/* How much more of others' load a placed process bears before it gives its node up:
 * the load is measured over one window and wanders (the daemon's own time, a short
 * job); without this margin a placement taken at 0.45 of a CPU is dropped at 0.55 and
 * taken again at 0.45, every round narrowing and widening affinities. */
#define TP_KEEP_SLACK 0.5

/* The CPUs of n left for v's busy threads; slack: others' load forgiven. */
static long room_slack(const struct round *rd, const struct view *v, size_t n, double slack) {
        double load = rd->fixed[n] > slack ? rd->fixed[n] - slack : 0;

        return (long) rd->nodes[n].n_cpus - lround(load) - (long) rd->claimed[n] -
               (long) (rd->confined[n] - v->confined[n]);
}

static long room(const struct round *rd, const struct view *v, size_t n) {
        return room_slack(rd, v, n, 0);
}

/* Whether n could ever take v's busy threads: a node with CPUs, not slow, where each
 * may run and may use a CPU each. */
static bool could_take(const struct round *rd, const struct view *v, size_t n) {
        const struct tp_node *nd = &rd->nodes[n];

        return !nd->slow && nd->n_cpus >= v->nb && (v->allowed >> n & 1) && v->cpus_min[n] >= v->nb;
}

static bool feasible(const struct round *rd, const struct view *v, size_t n) {
        return could_take(rd, v, n) && room(rd, v, n) >= (long) v->nb;
}

/* Whether a placed process keeps n: as feasible, TP_KEEP_SLACK of load forgiven. */
static bool keepable(const struct round *rd, const struct view *v, size_t n) {
        return could_take(rd, v, n) && room_slack(rd, v, n, TP_KEEP_SLACK) >= (long) v->nb;
}

static void claim(struct round *rd, const struct view *v, int n) {
        rd->claimed[n] += v->nb;
        rd->confined[n] -= v->confined[n];
}

static void unclaim(struct round *rd, const struct view *v, int n) {
        rd->claimed[n] -= v->nb;
        rd->confined[n] += v->confined[n];
}

/* Whether gathering on n can make at least half of the memory local: a node where
 * most of it could never be is no place to gather threads (perf bench numa with all
 * memory bound to node 0 and no room there for the second process: it was gathered on
 * node 1, all its memory remote, reason memory-stuck). */
static bool reachable(const struct tp_proc *pr, const struct view *v, int n) {
        return stuck_at(pr, v, n) <= v->total / 2;
}

/* The cheapest feasible node, except skip (-1: none); ties: more of the busy threads
 * there already, then more bytes, then the lower index. -1 when none is feasible. */
static int best_node(const struct round *rd, const struct tp_proc *pr, const struct view *v, int skip,
                     double *ret_score) {
        int best = -1;
        double bs = 0;

        for (size_t n = 0; n < rd->n_nodes; n++) {
                double s;

                if ((int) n == skip || !feasible(rd, v, n) || !reachable(pr, v, (int) n))
                        continue;
                s = score_on(pr, v, (int) n, rd->p);
                if (best < 0 || s < bs || (s == bs && v->on[n] > v->on[best]) ||
                    (s == bs && v->on[n] == v->on[best] && pr->bytes_on[n] > pr->bytes_on[best])) {
                        best = (int) n;
                        bs = s;
                }
        }
        *ret_score = bs;
        return best;
}

static void decide(struct tp_proc *pr, const struct view *v, enum tp_action a, int node, enum tp_reason r) {
        pr->action = a;
        pr->node = node;
        pr->reason = r;
        if (node >= 0) {
                pr->threads_to_move = v->nb - v->on[node];
                pr->bytes_to_copy = movable_not_on(pr, v, node);
        }
}

/* A process placed before, first pass (called in pid order): keeps its node while the
 * node can still take its busy threads, claimed there before anything moves. */
static void keep_placed(struct round *rd, struct tp_proc *pr, const struct view *v) {
        int cur = pr->placed;

        if ((size_t) cur >= rd->n_nodes || (v->nb > 0 && !keepable(rd, v, (size_t) cur))) {
                decide(pr, v, TP_RELEASE, -1, TP_R_LOST_ROOM);
                pr->node = cur;
                return;
        }
        if (v->nb == 0) {
                decide(pr, v, TP_KEEP, cur, v->pinned_busy ? TP_R_PINNED : TP_R_IDLE);
                return;
        }
        pr->score = score_on(pr, v, cur, rd->p);
        decide(pr, v, TP_KEEP, cur, TP_R_HOLDING);
        claim(rd, v, cur);
}

/* Second pass, every placed process having claimed its node: after hold_ms, one moves
 * only to a node scoring below switch_margin times its own. Another's claim is never
 * taken: what it may move to is what is left. */
static void move_placed(struct round *rd, struct tp_proc *pr, const struct view *v) {
        int cur = pr->placed, best;
        double bs;

        if (pr->action != TP_KEEP || pr->reason != TP_R_HOLDING)
                return;
        if (rd->now_ms < pr->placed_at_ms || rd->now_ms - pr->placed_at_ms < rd->p->hold_ms)
                return;
        unclaim(rd, v, cur);
        best = best_node(rd, pr, v, cur, &bs);
        if (best >= 0 && bs < rd->p->switch_margin * pr->score) {
                pr->score = bs;
                decide(pr, v, TP_PLACE, best, TP_R_GATHER);
                claim(rd, v, best);
                return;
        }
        pr->reason = TP_R_STILL_BEST;
        claim(rd, v, cur);
}

/* The node all busy threads ran on, or -1. */
static int together_on(const struct view *v, size_t n_nodes) {
        for (size_t n = 0; n < n_nodes; n++)
                if (v->nb > 0 && v->on[n] == v->nb)
                        return (int) n;
        return -1;
}

static enum tp_reason why_not(const struct round *rd, const struct view *v) {
        bool anywhere = false, enough = false;

        for (size_t n = 0; n < rd->n_nodes; n++) {
                const struct tp_node *nd = &rd->nodes[n];

                if (nd->slow || nd->n_cpus == 0 || !(v->allowed >> n & 1))
                        continue;
                anywhere = true;
                if (could_take(rd, v, n))
                        enough = true;
        }
        if (!anywhere)
                return TP_R_NOWHERE_TOGETHER;
        return enough ? TP_R_NO_ROOM : TP_R_TOO_MANY;
}

/* Busy threads together on n, their best node: nothing to narrow, unless most of the
 * memory is elsewhere, weighing more than the threads (thread_cost_bytes each), and
 * has to follow. Then they are placed on n: the placement holds them there while the
 * memory is copied, and memory following a placement is not held by a cooldown from
 * an earlier move (perf bench numa under a tenant: one process's memory followed its
 * threads to node 1, the scheduler then ran them on node 0, node 1 full with the
 * other: 0.9% local for 20 s, its memory waiting on the cooldown). */
static void keep_together(struct round *rd, struct tp_proc *pr, const struct view *v, int n) {
        uint64_t away = movable_not_on(pr, v, n);
        bool follow = away > v->total / 2 && (double) away > (double) rd->p->thread_cost_bytes * v->nb;

        decide(pr, v, follow ? TP_PLACE : TP_NONE, n, follow ? TP_R_MEMORY_FOLLOWS : TP_R_ALREADY_TOGETHER);
        claim(rd, v, n);
}

/* A process whose busy threads are together on the node that is their best already
 * keeps it before any other is decided: a larger process taking it would displace
 * them, a cost no score counts (their memory copied after them, or left remote). */
static void settled(struct round *rd, struct tp_proc *pr, const struct view *v) {
        int together = together_on(v, rd->n_nodes), best;
        double bs;

        if (together < 0 || !feasible(rd, v, (size_t) together))
                return;
        best = best_node(rd, pr, v, -1, &bs);
        if (best != together)
                return;
        pr->score = pr->score_baseline = bs;
        keep_together(rd, pr, v, best);
}

static void decide_unplaced(struct round *rd, struct tp_proc *pr, const struct view *v) {
        int h, best, together;
        double bs;
        bool stuck;

        if (v->nb == 0) {
                decide(pr, v, TP_NONE, -1, v->pinned_busy ? TP_R_PINNED : TP_R_IDLE);
                return;
        }
        h = hot_node(pr, v, rd->n_nodes);
        pr->score_baseline = score_baseline(pr, v, h, rd->p, &stuck);
        best = best_node(rd, pr, v, -1, &bs);
        if (best < 0) {
                decide(pr, v, TP_NONE, -1, why_not(rd, v));
                return;
        }
        pr->score = bs;
        together = together_on(v, rd->n_nodes);
        if (together == best) {
                keep_together(rd, pr, v, best);
                return;
        }
        if (bs < pr->score_baseline) {
                decide(pr, v, TP_PLACE, best, stuck ? TP_R_MEMORY_STUCK : TP_R_GATHER);
                claim(rd, v, best);
                return;
        }
        decide(pr, v, TP_NONE, -1, TP_R_CHEAPER_TO_MOVE_MEMORY);
}

/* ---- order, without allocating: a merge sort of a list threaded through procs ---- */

typedef bool (*before_fn)(const struct tp_proc *a, const struct tp_proc *b, size_t n_nodes);

static bool by_pid(const struct tp_proc *a, const struct tp_proc *b, size_t n_nodes) {
        (void) n_nodes;
        return a->pid < b->pid;
}

static bool by_size(const struct tp_proc *a, const struct tp_proc *b, size_t n_nodes) {
        uint64_t ta = total_bytes(a, n_nodes), tb = total_bytes(b, n_nodes);

        return ta > tb || (ta == tb && a->pid < b->pid);
}

static size_t merge(struct tp_proc *v, size_t a, size_t b, before_fn before, size_t n_nodes) {
        size_t head = TP_END, *tail = &head;

        while (a != TP_END && b != TP_END) {
                size_t *take = before(&v[b], &v[a], n_nodes) ? &b : &a;
                size_t i = *take;

                *tail = i;
                tail = &v[i].order_next_;
                *take = v[i].order_next_;
        }
        *tail = a != TP_END ? a : b;
        return head;
}

static size_t sort_list(struct tp_proc *v, size_t head, before_fn before, size_t n_nodes) {
        size_t slow = head, fast, second;

        if (head == TP_END || v[head].order_next_ == TP_END)
                return head;
        fast = v[head].order_next_;
        while (fast != TP_END && v[fast].order_next_ != TP_END) {
                slow = v[slow].order_next_;
                fast = v[v[fast].order_next_].order_next_;
        }
        second = v[slow].order_next_;
        v[slow].order_next_ = TP_END;
        return merge(v, sort_list(v, head, before, n_nodes), sort_list(v, second, before, n_nodes), before,
                     n_nodes);
}

/* The processes placed (or not) before, linked in the given order. */
static size_t list_of(struct tp_proc *procs, size_t n_procs, bool placed, before_fn before, size_t n_nodes) {
        size_t head = TP_END;

        for (size_t i = n_procs; i-- > 0;)
                if ((procs[i].placed >= 0) == placed) {
                        procs[i].order_next_ = head;
                        head = i;
                }
        return sort_list(procs, head, before, n_nodes);
}

/* What the round does not place stays where it runs: the load of app-pinned and idle
 * threads, and the busy threads that may run on one node only. */
static void round_init(struct round *rd, const struct tp_proc *procs, size_t n_procs) {
        for (size_t n = 0; n < rd->n_nodes; n++)
                rd->fixed[n] = rd->nodes[n].load_others > 0 ? rd->nodes[n].load_others : 0;
        for (size_t i = 0; i < n_procs; i++)
                for (size_t k = 0; k < procs[i].n_threads; k++) {
                        const struct tp_thread *th = &procs[i].threads[k];
                        bool known = th->node >= 0 && (size_t) th->node < rd->n_nodes;
                        int only;

                        if (th->app_pinned || !is_busy(th, rd->p)) {
                                if (known && isfinite(th->busy) && th->busy > 0)
                                        rd->fixed[th->node] += th->busy;
                                continue;
                        }
                        only = only_node(th->allowed_nodes & nodes_mask(rd->n_nodes));
                        if (only >= 0)
                                rd->confined[only]++;
                }
}

void thread_place_round(const struct tp_node *nodes, size_t n_nodes, struct tp_proc *procs, size_t n_procs,
                        const struct tp_params *p, uint64_t now_ms) {
        struct round rd = { .nodes = nodes, .n_nodes = n_nodes < TP_MAX_NODES ? n_nodes : TP_MAX_NODES,
                            .p = p, .now_ms = now_ms };
        struct view v;
        size_t placed, unplaced;

        for (size_t i = 0; i < n_procs; i++) {
                struct tp_proc *pr = &procs[i];

                pr->action = TP_NONE;
                pr->node = -1;
                pr->reason = TP_R_IDLE;
                pr->threads_to_move = 0;
                pr->bytes_to_copy = 0;
                pr->score = pr->score_baseline = 0;
                view_of(pr, rd.n_nodes, p, &v);
                pr->n_busy = v.nb;
        }
        round_init(&rd, procs, n_procs);
        placed = list_of(procs, n_procs, true, by_pid, rd.n_nodes);
        for (size_t i = placed; i != TP_END; i = procs[i].order_next_) {
                view_of(&procs[i], rd.n_nodes, p, &v);
                keep_placed(&rd, &procs[i], &v);
        }
        for (size_t i = placed; i != TP_END; i = procs[i].order_next_) {
                view_of(&procs[i], rd.n_nodes, p, &v);
                move_placed(&rd, &procs[i], &v);
        }
        unplaced = list_of(procs, n_procs, false, by_size, rd.n_nodes);
        for (size_t i = unplaced; i != TP_END; i = procs[i].order_next_) {
                view_of(&procs[i], rd.n_nodes, p, &v);
                settled(&rd, &procs[i], &v);
        }
        for (size_t i = unplaced; i != TP_END; i = procs[i].order_next_) {
                if (procs[i].reason == TP_R_ALREADY_TOGETHER || procs[i].reason == TP_R_MEMORY_FOLLOWS)
                        continue;     /* settled() decided it */
                view_of(&procs[i], rd.n_nodes, p, &v);
                decide_unplaced(&rd, &procs[i], &v);
        }
}

/* ---- helpers for the caller ----------------------------------------------------- */

void thread_place_set(struct tp_proc *pr, size_t n_nodes, const struct tp_params *p, enum tp_action a, int node,
                      enum tp_reason r) {
        struct view v;

        n_nodes = n_nodes < TP_MAX_NODES ? n_nodes : TP_MAX_NODES;
        view_of(pr, n_nodes, p, &v);
        pr->n_busy = v.nb;
        pr->threads_to_move = 0;
        pr->bytes_to_copy = 0;
        decide(pr, &v, a, node >= 0 && (size_t) node < n_nodes ? node : -1, r);
}

size_t thread_place_nodes(const struct topology *t, struct tp_node *nodes) {
        size_t n_nodes = t->n_nodes < TP_MAX_NODES ? t->n_nodes : TP_MAX_NODES;

        for (size_t n = 0; n < n_nodes; n++) {
                const struct topo_node *tn = &t->nodes[n];
                nb_cpumask online;

                cpumask_and(&online, &tn->cpus, &t->online_cpus);
                nodes[n] = (struct tp_node) { .id = (int) tn->id, .n_cpus = cpumask_weight(&online) };
                nodes[n].slow = tn->slow || nodes[n].n_cpus == 0;
        }
        return n_nodes;
}

void thread_place_load_others(struct tp_node *nodes, size_t n_nodes, const double *busy_by_node,
                              const struct tp_proc *procs, size_t n_procs) {
        n_nodes = n_nodes < TP_MAX_NODES ? n_nodes : TP_MAX_NODES;
        for (size_t n = 0; n < n_nodes; n++)
                nodes[n].load_others = busy_by_node[n];
        for (size_t i = 0; i < n_procs; i++)
                for (size_t k = 0; k < procs[i].n_threads; k++) {
                        const struct tp_thread *th = &procs[i].threads[k];

                        if (th->node >= 0 && (size_t) th->node < n_nodes && isfinite(th->busy) && th->busy > 0)
                                nodes[th->node].load_others -= th->busy;
                }
        for (size_t n = 0; n < n_nodes; n++)
                if (!(nodes[n].load_others > 0))
                        nodes[n].load_others = 0;
}

void thread_place_thread_cpus(struct tp_thread *th, const struct topology *t, const nb_cpumask *cpus) {
        th->allowed_nodes = 0;
        for (size_t n = 0; n < TP_MAX_NODES; n++)
                th->cpus_on[n] = 0;
        CPUMASK_FOREACH(c, cpus) {
                int node, idx;

                if (!cpumask_test(&t->online_cpus, (unsigned) c))
                        continue;
                node = topology_cpu_node(t, (unsigned) c);
                idx = node >= 0 ? topology_node_index(t, (unsigned) node) : -1;
                if (idx < 0 || idx >= TP_MAX_NODES)
                        continue;
                th->cpus_on[idx]++;
                th->allowed_nodes |= UINT64_C(1) << idx;
        }
}

const char *thread_place_reason_name(enum tp_reason r) {
        static const char *const names[_TP_REASON_MAX] = {
                [TP_R_IDLE] = "idle",
                [TP_R_PINNED] = "pinned",
                [TP_R_TOO_MANY] = "too-many",
                [TP_R_NO_ROOM] = "no-room",
                [TP_R_HOLDING] = "holding",
                [TP_R_CHEAPER_TO_MOVE_MEMORY] = "cheaper-to-move-memory",
                [TP_R_MEMORY_STUCK] = "memory-stuck",
                [TP_R_GATHER] = "gather",
                [TP_R_ALREADY_TOGETHER] = "already-together",
                [TP_R_MEMORY_FOLLOWS] = "memory-follows",
                [TP_R_LOST_ROOM] = "lost-room",
                [TP_R_STILL_BEST] = "still-best",
                [TP_R_NOWHERE_TOGETHER] = "nowhere-together",
        };

        return (unsigned) r < _TP_REASON_MAX && names[r] ? names[r] : "?";
}

const char *thread_place_action_name(enum tp_action a) {
        static const char *const names[_TP_ACTION_MAX] = {
                [TP_NONE] = "none",
                [TP_KEEP] = "keep",
                [TP_PLACE] = "place",
                [TP_RELEASE] = "release",
        };

        return (unsigned) a < _TP_ACTION_MAX && names[a] ? names[a] : "?";
}
