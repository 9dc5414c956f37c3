/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Processes that share memory decided as one (lib/group-place.h) on built inputs: a
 * group goes beside its shared memory together; scores that would split its members
 * over two nodes do not; without room for all it goes member by member; an idle member
 * is left alone; a placed group keeps its node; processes in no group are decided
 * exactly as thread_place_round() decides them. */
#include <stdlib.h>
#include <string.h>
#include "cleanup.h"
#include "group-place.h"
#include "test.h"

#define MIB (UINT64_C(1) << 20)
#define MAXP 8

static struct tp_params params;

/* Processes of one busy thread each (or none), on 2 nodes of cpus CPUs. */
struct world {
        struct tp_node nodes[2];
        struct tp_thread th[MAXP];
        struct tp_proc p[MAXP];
        size_t group[MAXP];
        unsigned together[MAXP];
        size_t n;
};

static void world_of(struct world *w, unsigned cpus, double load0, double load1) {
        *w = (struct world) {};
        w->nodes[0] = (struct tp_node) { .id = 0, .n_cpus = cpus, .load_others = load0 };
        w->nodes[1] = (struct tp_node) { .id = 1, .n_cpus = cpus, .load_others = load1 };
}

/* A process whose one thread ran on node (busy: 1 CPU, or idle), in group g, with
 * shared bytes on node 0 that cannot move (place: a group's shared memory stays) and
 * private bytes on node priv_node. */
static struct tp_proc *add(struct world *w, int node, bool busy, size_t g, uint64_t shared, uint64_t priv,
                           int priv_node) {
        size_t i = w->n++;
        struct tp_proc *p = &w->p[i];

        w->th[i] = (struct tp_thread) { .tid = 100 + (pid_t) i * 10, .node = node, .busy = busy ? 1.0 : 0.01,
                                        .allowed_nodes = 3, .cpus_on = { w->nodes[0].n_cpus, w->nodes[1].n_cpus } };
        *p = (struct tp_proc) { .pid = 100 + (pid_t) i * 10, .threads = &w->th[i], .n_threads = 1, .placed = -1 };
        p->bytes_on[0] = shared;
        p->stuck_away[1] = shared;
        p->bytes_on[priv_node] += priv;
        w->group[i] = g;
        return p;
}

static void decide(struct world *w, uint64_t now_ms) {
        CHECK_INT(group_place_round(w->nodes, 2, w->p, w->group, w->together, w->n, &params, now_ms), 0);
}

#define CHECK_DECISION(pr, a, nd, r) do {                                                       \
        CHECK_MSG((pr).action == (a) && (pr).node == (nd) && (pr).reason == (r),                \
                  "pid %d: %s on %d (%s), expected %s on %d (%s)", (int) (pr).pid,              \
                  thread_place_action_name((pr).action), (pr).node, thread_place_reason_name((pr).reason), \
                  thread_place_action_name(a), (nd), thread_place_reason_name(r));              \
        } while (0)

/* PostgreSQL's case under place: three busy backends, two of them on node 1, all
 * mapping 64 MiB of shared buffers on node 0. The group goes to node 0, each member
 * with its own threads to move. */
TEST(group_goes_beside_its_shared_memory) {
        struct world w;

        world_of(&w, 4, 0, 0);
        add(&w, 1, true, 7, 64 * MIB, MIB, 1);
        add(&w, 1, true, 7, 64 * MIB, MIB, 1);
        add(&w, 0, true, 7, 64 * MIB, MIB, 0);
        decide(&w, 1000);
        for (size_t i = 0; i < 3; i++) {
                CHECK_DECISION(w.p[i], TP_PLACE, 0, TP_R_MEMORY_STUCK);
                CHECK_INT(w.together[i], 3);
                CHECK_INT(w.p[i].n_busy, 1);
        }
        CHECK_INT(w.p[0].threads_to_move, 1);
        CHECK_INT(w.p[0].bytes_to_copy, MIB);
        CHECK_INT(w.p[2].threads_to_move, 0);
        CHECK_INT(w.p[2].bytes_to_copy, 0);
}

/* Decided alone, a member with much private memory on node 1 stays there (copying it
 * costs more than 16 MiB of shared memory remote) while the other stays on node 0
 * beside the shared memory: the group split over two nodes. As one, both go to one
 * node. */
TEST(scores_do_not_split_a_group) {
        struct world w;
        struct tp_proc alone[2];

        world_of(&w, 2, 0, 0);
        add(&w, 1, true, 3, 16 * MIB, 200 * MIB, 1);
        add(&w, 0, true, 3, 16 * MIB, 0, 0);
        memcpy(alone, w.p, sizeof(alone));
        thread_place_round(w.nodes, 2, alone, 2, &params, 1000);
        CHECK_MSG(alone[0].action == TP_NONE && alone[1].action == TP_NONE,
                  "alone: %s, %s", thread_place_reason_name(alone[0].reason), thread_place_reason_name(alone[1].reason));
        decide(&w, 1000);
        CHECK_INT(w.p[0].action, TP_PLACE);
        CHECK_INT(w.p[1].action, TP_PLACE);
        CHECK_INT(w.p[0].node, w.p[1].node);
        CHECK_INT(w.together[0], 2);
}

/* No node has room for the group's two busy threads together (node 0 has one CPU
 * free, node 1 none): member by member, one goes beside the shared memory, the other
 * stays where it runs (no-room: its memory could never be on node 1's side either). */
TEST(no_room_for_all_goes_member_by_member) {
        struct world w;
        unsigned placed = 0;

        world_of(&w, 2, 1.0, 2.0);
        add(&w, 1, true, 5, 64 * MIB, 0, 1);
        add(&w, 1, true, 5, 64 * MIB, 0, 1);
        decide(&w, 1000);
        for (size_t i = 0; i < 2; i++) {
                CHECK_INT(w.together[i], 1);
                if (w.p[i].action == TP_PLACE) {
                        CHECK_DECISION(w.p[i], TP_PLACE, 0, TP_R_MEMORY_STUCK);
                        placed++;
                } else
                        CHECK_DECISION(w.p[i], TP_NONE, -1, TP_R_NO_ROOM);
        }
        CHECK_INT(placed, 1);
}

/* The postmaster maps the shared buffers and sleeps: it is decided with its group but
 * its threads are not narrowed for nothing. */
TEST(idle_member_left_alone) {
        struct world w;

        world_of(&w, 4, 0, 0);
        add(&w, 1, false, 9, 64 * MIB, 0, 1);
        add(&w, 1, true, 9, 64 * MIB, 0, 1);
        add(&w, 1, true, 9, 64 * MIB, 0, 1);
        decide(&w, 1000);
        CHECK_DECISION(w.p[0], TP_NONE, -1, TP_R_IDLE);
        CHECK_DECISION(w.p[1], TP_PLACE, 0, TP_R_MEMORY_STUCK);
        CHECK_DECISION(w.p[2], TP_PLACE, 0, TP_R_MEMORY_STUCK);
        CHECK_INT(w.together[0], 3);
}

/* A group placed on node 0 keeps it while it holds; members placed on different nodes
 * (each alone in an earlier round) are decided alone. */
TEST(placed_group_keeps_mixed_goes_alone) {
        struct world w;

        world_of(&w, 4, 0, 0);
        add(&w, 0, true, 2, 64 * MIB, 0, 0)->placed = 0;
        add(&w, 0, true, 2, 64 * MIB, 0, 0)->placed = 0;
        decide(&w, 2000);
        CHECK_DECISION(w.p[0], TP_KEEP, 0, TP_R_HOLDING);
        CHECK_DECISION(w.p[1], TP_KEEP, 0, TP_R_HOLDING);
        CHECK_INT(w.together[1], 2);

        world_of(&w, 4, 0, 0);
        add(&w, 0, true, 2, 64 * MIB, 0, 0)->placed = 0;
        add(&w, 1, true, 2, 64 * MIB, 0, 0)->placed = 1;
        decide(&w, 2000);
        CHECK_INT(w.together[0], 1);
        CHECK_INT(w.together[1], 1);
        CHECK_INT(w.p[0].action, TP_KEEP);
        CHECK_INT(w.p[1].action, TP_KEEP);
}

/* With no group, the decision is thread_place_round()'s, field by field, over inputs
 * of every shape the builders make (threads on either node, busy or not, shared and
 * private memory, loads). */
TEST(no_group_is_thread_place) {
        unsigned seed = 1;

        for (unsigned round = 0; round < 500; round++) {
                struct world w;
                struct tp_proc ref[MAXP];
                size_t n = 1 + (size_t) (rand_r(&seed) % 6);

                world_of(&w, 1 + (unsigned) (rand_r(&seed) % 3), (rand_r(&seed) % 3) * 0.5, (rand_r(&seed) % 3) * 0.5);
                for (size_t i = 0; i < n; i++)
                        add(&w, rand_r(&seed) % 2, rand_r(&seed) % 4 != 0, GROUP_PLACE_NONE,
                            (uint64_t) (rand_r(&seed) % 64) * MIB, (uint64_t) (rand_r(&seed) % 64) * MIB,
                            rand_r(&seed) % 2);
                memcpy(ref, w.p, sizeof(ref));
                thread_place_round(w.nodes, 2, ref, n, &params, 1000);
                decide(&w, 1000);
                for (size_t i = 0; i < n; i++) {
                        CHECK_DECISION(w.p[i], ref[i].action, ref[i].node, ref[i].reason);
                        CHECK_INT(w.p[i].threads_to_move, ref[i].threads_to_move);
                        CHECK_INT(w.p[i].bytes_to_copy, ref[i].bytes_to_copy);
                        CHECK_INT(w.together[i], 1);
                }
        }
}

static int intro(void) {
        thread_place_params_default(&params);
        return 0;
}

DEFINE_TEST_MAIN_FULL(intro, NULL)
