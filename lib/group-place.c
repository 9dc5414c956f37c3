/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include "cleanup.h"
#include "group-place.h"

/* The round's units: a process alone, or a group's members as one. */
struct units {
        struct tp_proc *v;
        size_t n;
        size_t *first;             /* per unit: its first member (index in procs) */
        size_t *unit_of;           /* per process: its unit */
        struct tp_thread **threads;  /* per unit: a group's threads together (NULL: alone) */
};

static void units_free(struct units *u) {
        for (size_t i = 0; u->threads && i < u->n; i++)
                free(u->threads[i]);
        free(u->v);
        free(u->first);
        free(u->unit_of);
        free(u->threads);
        *u = (struct units) {};
}

/* The process before i of i's group that leads it, or i. */
static size_t leader(const size_t *group, const bool *alone, size_t i) {
        if (group[i] == GROUP_PLACE_NONE || alone[i])
                return i;
        for (size_t j = 0; j < i; j++)
                if (group[j] == group[i] && !alone[j])
                        return j;
        return i;
}

/* Whether the group led by l (members: leader_of[k] == l) can be one unit: two members
 * or more, none placed or all on one node, not too many threads. */
static bool one_unit(const struct tp_proc *procs, const size_t *leader_of, size_t n_procs, size_t l) {
        size_t members = 0, threads = 0;

        for (size_t k = l; k < n_procs; k++) {
                if (leader_of[k] != l)
                        continue;
                members++;
                threads += procs[k].n_threads;
                if (procs[k].placed != procs[l].placed)
                        return false;
        }
        return members >= 2 && threads <= GROUP_PLACE_THREADS_MAX;
}

/* The unit of the group led by l: its members' threads and bytes together; placed
 * where they all are, since the latest of their placements. */
static int merge(const struct tp_proc *procs, const size_t *leader_of, size_t n_procs, size_t l, struct tp_proc *u,
                 struct tp_thread **ret_threads) {
        size_t n = 0;
        struct tp_thread *th;

        for (size_t k = l; k < n_procs; k++)
                if (leader_of[k] == l)
                        n += procs[k].n_threads;
        th = calloc(n ? n : 1, sizeof(*th));
        if (!th)
                return -ENOMEM;
        *u = (struct tp_proc) { .pid = procs[l].pid, .threads = th, .placed = procs[l].placed };
        for (size_t k = l; k < n_procs; k++) {
                if (leader_of[k] != l)
                        continue;
                memcpy(th + u->n_threads, procs[k].threads, procs[k].n_threads * sizeof(*th));
                u->n_threads += procs[k].n_threads;
                for (size_t node = 0; node < TP_MAX_NODES; node++) {
                        u->bytes_on[node] += procs[k].bytes_on[node];
                        u->stuck_away[node] += procs[k].stuck_away[node];
                }
                if (procs[k].placed_at_ms > u->placed_at_ms)
                        u->placed_at_ms = procs[k].placed_at_ms;
        }
        *ret_threads = th;
        return 0;
}

static int units_build(const struct tp_proc *procs, const size_t *group, const bool *alone, size_t n_procs,
                       struct units *u) {
        _cleanup_free_ size_t *leader_of = calloc(n_procs ? n_procs : 1, sizeof(*leader_of));

        u->v = calloc(n_procs ? n_procs : 1, sizeof(*u->v));
        u->first = calloc(n_procs ? n_procs : 1, sizeof(*u->first));
        u->unit_of = calloc(n_procs ? n_procs : 1, sizeof(*u->unit_of));
        u->threads = calloc(n_procs ? n_procs : 1, sizeof(*u->threads));
        if (!leader_of || !u->v || !u->first || !u->unit_of || !u->threads)
                return -ENOMEM;
        for (size_t i = 0; i < n_procs; i++)
                leader_of[i] = leader(group, alone, i);
        for (size_t i = 0; i < n_procs; i++) {
                size_t l = leader_of[i];

                if (l != i) {
                        u->unit_of[i] = u->unit_of[l];
                        continue;
                }
                u->unit_of[i] = u->n;
                u->first[u->n] = i;
                if (group[i] != GROUP_PLACE_NONE && one_unit(procs, leader_of, n_procs, i)) {
                        if (merge(procs, leader_of, n_procs, i, &u->v[u->n], &u->threads[u->n]) < 0)
                                return -ENOMEM;
                } else {
                        u->v[u->n] = procs[i];
                        /* A group that cannot be one unit: its members alone. */
                        for (size_t k = i + 1; k < n_procs; k++)
                                if (leader_of[k] == i)
                                        leader_of[k] = k;
                }
                u->n++;
        }
        return 0;
}

/* A group the round could not keep together: its members go alone next time. */
static bool split_failed(const struct units *u, size_t n_procs, bool *alone) {
        bool any = false;

        for (size_t i = 0; i < u->n; i++) {
                const struct tp_proc *r = &u->v[i];

                if (!u->threads[i])
                        continue;
                if (r->action != TP_RELEASE && r->reason != TP_R_NO_ROOM && r->reason != TP_R_TOO_MANY &&
                    r->reason != TP_R_NOWHERE_TOGETHER)
                        continue;
                for (size_t k = 0; k < n_procs; k++)
                        if (u->unit_of[k] == i)
                                alone[k] = any = true;
        }
        return any;
}

/* A member's outcome from its group's: the group's node and reason; placing a member
 * with no busy thread of its own would narrow threads for nothing. */
static void member_outcome(struct tp_proc *pr, const struct tp_proc *unit, size_t n_nodes, const struct tp_params *p) {
        enum tp_action a = unit->action;

        thread_place_set(pr, n_nodes, p, TP_NONE, -1, TP_R_IDLE);
        if (pr->n_busy == 0 && pr->placed < 0)
                return;
        if (a == TP_PLACE && pr->placed == unit->node)
                a = TP_KEEP;
        thread_place_set(pr, n_nodes, p, a, unit->node, unit->reason);
        pr->score = unit->score;
        pr->score_baseline = unit->score_baseline;
}

static int write_back(const struct units *u, struct tp_proc *procs, unsigned *together, size_t n_procs,
                      size_t n_nodes, const struct tp_params *p) {
        _cleanup_free_ unsigned *members = calloc(u->n ? u->n : 1, sizeof(*members));

        if (!members)
                return -ENOMEM;
        for (size_t i = 0; i < n_procs; i++)
                members[u->unit_of[i]]++;
        for (size_t i = 0; i < n_procs; i++) {
                size_t k = u->unit_of[i];

                if (!u->threads[k]) {
                        struct tp_proc in = procs[i];

                        procs[i] = u->v[k];
                        procs[i].threads = in.threads;  /* the same; the caller's pointer */
                } else
                        member_outcome(&procs[i], &u->v[k], n_nodes, p);
                if (together)
                        together[i] = members[k];
        }
        return 0;
}

int group_place_round(const struct tp_node *nodes, size_t n_nodes, struct tp_proc *procs, const size_t *group,
                      unsigned *together, size_t n_procs, const struct tp_params *p, uint64_t now_ms) {
        _cleanup_free_ bool *alone = calloc(n_procs ? n_procs : 1, sizeof(*alone));
        struct units u = {};
        int r;

        if (!alone)
                return -ENOMEM;
        for (int pass = 0; pass < 2; pass++) {
                if (units_build(procs, group, alone, n_procs, &u) < 0) {
                        units_free(&u);
                        return -ENOMEM;
                }
                thread_place_round(nodes, n_nodes, u.v, u.n, p, now_ms);
                if (pass == 1 || !split_failed(&u, n_procs, alone))
                        break;
                units_free(&u);
        }
        r = write_back(&u, procs, together, n_procs, n_nodes, p);
        units_free(&u);
        return r;
}
