/* SPDX-License-Identifier: GPL-2.0-or-later */
/* CPU follows memory (lib/thread-place.h) on built inputs: each rule of the round, the
 * cases the feature exists for (two processes split over two nodes gather one on each;
 * memory bound away from the threads brings them to it; a full node takes none), and
 * the property that replaying a round's inputs never moves a process back and forth. */
#include <math.h>
#include "cleanup.h"
#include "test.h"
#include "thread-place.h"
#include "topology.h"

#define MIB (UINT64_C(1) << 20)
#define MAXT 8

static struct tp_params params;

/* A process with its own threads (at most MAXT), memory and placement. */
struct proc {
        struct tp_thread th[MAXT];
        struct tp_proc p;
};

/* n nodes of cpus CPUs each, others' load given per node. */
static void nodes_of(struct tp_node *nodes, size_t n, unsigned cpus, const double *load) {
        for (size_t i = 0; i < n; i++)
                nodes[i] = (struct tp_node) { .id = (int) i, .n_cpus = cpus, .load_others = load ? load[i] : 0 };
}

/* A thread that may run on every one of n_nodes nodes, cpus CPUs on each. */
static struct tp_thread thread(pid_t tid, int node, double busy, size_t n_nodes, unsigned cpus) {
        struct tp_thread t = { .tid = tid, .node = node, .busy = busy };

        for (size_t n = 0; n < n_nodes; n++) {
                t.allowed_nodes |= UINT64_C(1) << n;
                t.cpus_on[n] = cpus;
        }
        return t;
}

/* Process pid with busy threads on the given nodes (n_threads of them), all of its
 * memory (bytes) on node mem_node, not placed. */
static void proc_of(struct proc *pr, pid_t pid, const int *thread_nodes, size_t n_threads, uint64_t bytes,
                    int mem_node, size_t n_nodes, unsigned cpus) {
        *pr = (struct proc) {};
        for (size_t i = 0; i < n_threads; i++)
                pr->th[i] = thread(pid * 10 + (pid_t) i, thread_nodes[i], 1.0, n_nodes, cpus);
        pr->p.pid = pid;
        pr->p.threads = pr->th;
        pr->p.n_threads = n_threads;
        pr->p.bytes_on[mem_node] = bytes;
        pr->p.placed = -1;
}

static void round_of(const struct tp_node *nodes, size_t n_nodes, struct proc *procs, size_t n_procs,
                     uint64_t now_ms) {
        struct tp_proc v[16];

        for (size_t i = 0; i < n_procs; i++)
                v[i] = procs[i].p;
        thread_place_round(nodes, n_nodes, v, n_procs, &params, now_ms);
        for (size_t i = 0; i < n_procs; i++)
                procs[i].p = v[i];
}

/* What the daemon does with a decision: the placement recorded for the next round. */
static void apply(struct tp_proc *p, uint64_t now_ms) {
        if (p->action == TP_PLACE) {
                p->placed = p->node;
                p->placed_at_ms = now_ms;
        } else if (p->action == TP_RELEASE)
                p->placed = -1;
}

#define CHECK_DECISION(pr, a, n, r) do {                                                        \
        CHECK_MSG((pr).action == (a) && (pr).node == (n) && (pr).reason == (r),                 \
                  "pid %d: %s on %d (%s), expected %s on %d (%s)", (int) (pr).pid,              \
                  thread_place_action_name((pr).action), (pr).node, thread_place_reason_name((pr).reason), \
                  thread_place_action_name(a), (n), thread_place_reason_name(r));               \
        } while (0)

/* The case the feature is for (perf bench numa mem -0 -p 2 -t 2): two processes of two
 * busy threads, each with one thread on each node of a 2n2c machine and all of its
 * memory on node 0, the daemon's own load on node 0. One gathers on node 0 where its
 * memory is; the other cannot fit there too and gathers on node 1, its memory to
 * follow. */
TEST(two_split_processes_swap) {
        double load[2] = { 0.05, 0 };
        struct tp_node nodes[2];
        struct proc pr[2];
        const int split[2] = { 0, 1 };

        nodes_of(nodes, 2, 2, load);
        proc_of(&pr[0], 100, split, 2, 128 * MIB, 0, 2, 2);
        proc_of(&pr[1], 200, split, 2, 128 * MIB, 0, 2, 2);
        round_of(nodes, 2, pr, 2, 1000);
        CHECK_DECISION(pr[0].p, TP_PLACE, 0, TP_R_GATHER);
        CHECK_INT(pr[0].p.bytes_to_copy, 0);
        CHECK_INT(pr[0].p.threads_to_move, 1);
        CHECK_DECISION(pr[1].p, TP_PLACE, 1, TP_R_GATHER);
        CHECK_INT(pr[1].p.bytes_to_copy, 128 * MIB);
        CHECK_INT(pr[1].p.threads_to_move, 1);
        CHECK(pr[0].p.node != pr[1].p.node);
}

/* perf bench numa mem -0 -p 2 -t 2 -P 128 played out: 2n2c, both processes' memory on
 * node 0, their threads wherever the scheduler put them (every start tried). Between
 * rounds the scheduler moves threads it may move off a node with more busy threads
 * than CPUs, to the other; a process's memory comes to its node 64 MiB a round
 * (placed, or together and left to the plan). From the second round on each process
 * has its busy threads on a node of its own and keeps it for 100 rounds; one
 * process's memory is copied, once. */
TEST(perf_bench_two_processes_converge) {
        for (unsigned start = 0; start < 16; start++) {
                double load[2] = { 0.05, 0 };
                struct tp_node nodes[2];
                struct proc pr[2];
                int settled_on[2] = { -1, -1 };
                uint64_t copied = 0, now = 1000;
                bool stayed = true;

                nodes_of(nodes, 2, 2, load);
                for (int i = 0; i < 2; i++) {
                        const int where[2] = { (int) (start >> (2 * i) & 1), (int) (start >> (2 * i + 1) & 1) };

                        proc_of(&pr[i], 100 + i, where, 2, 128 * MIB, 0, 2, 2);
                }
                for (unsigned r = 0; r < 100; r++, now += params.hold_ms / 10) {
                        int to[2];

                        round_of(nodes, 2, pr, 2, now);
                        for (int i = 0; i < 2; i++) {
                                struct tp_proc *p = &pr[i].p;

                                apply(p, now);
                                to[i] = p->placed >= 0 ? p->placed
                                        : p->reason == TP_R_ALREADY_TOGETHER ? p->node : -1;
                                if (p->placed >= 0)
                                        for (size_t k = 0; k < 2; k++)
                                                pr[i].th[k].node = p->placed;
                        }
                        /* The scheduler: threads not narrowed leave a node with more busy
                         * threads than CPUs. */
                        for (int n = 0; n < 2; n++) {
                                unsigned busy = 0;

                                for (int i = 0; i < 2; i++)
                                        for (size_t k = 0; k < 2; k++)
                                                busy += pr[i].th[k].node == n;
                                for (int i = 1; i >= 0 && busy > 2; i--)
                                        for (size_t k = 0; k < 2 && busy > 2; k++)
                                                if (pr[i].p.placed < 0 && pr[i].th[k].node == n) {
                                                        pr[i].th[k].node = !n;
                                                        busy--;
                                                        to[i] = -1;
                                                }
                        }
                        for (int i = 0; i < 2; i++) {
                                struct tp_proc *p = &pr[i].p;
                                uint64_t q;

                                if (r >= 1) {
                                        if (settled_on[i] < 0)
                                                settled_on[i] = to[i];
                                        stayed = stayed && to[i] >= 0 && to[i] == settled_on[i];
                                }
                                if (to[i] < 0)
                                        continue;
                                q = p->bytes_on[!to[i]] < 64 * MIB ? p->bytes_on[!to[i]] : 64 * MIB;
                                p->bytes_on[!to[i]] -= q;
                                p->bytes_on[to[i]] += q;
                                copied += q;
                        }
                }
                CHECK_MSG(settled_on[0] >= 0 && settled_on[1] >= 0 && settled_on[0] != settled_on[1] && stayed,
                          "start %u: nodes %d and %d from the second round, stayed: %d", start, settled_on[0],
                          settled_on[1], stayed);
                CHECK_MSG(copied == 128 * MIB, "start %u: %" PRIu64 " MiB copied", start, copied / MIB);
                for (int i = 0; i < 2; i++)
                        CHECK(settled_on[i] < 0 || pr[i].p.bytes_on[settled_on[i]] == 128 * MIB);
        }
}

/* Memory bound to node 0 (none of it may come to node 1), its threads on node 1, node 0
 * idle: the threads go to the memory, and no byte is copied. */
TEST(memory_bound_brings_threads) {
        struct tp_node nodes[2];
        struct proc pr;
        const int on1[2] = { 1, 1 };

        nodes_of(nodes, 2, 2, NULL);
        proc_of(&pr, 100, on1, 2, 128 * MIB, 0, 2, 2);
        pr.p.stuck_away[1] = 128 * MIB;
        round_of(nodes, 2, &pr, 1, 1000);
        CHECK_DECISION(pr.p, TP_PLACE, 0, TP_R_MEMORY_STUCK);
        CHECK_INT(pr.p.bytes_to_copy, 0);
        CHECK_INT(pr.p.threads_to_move, 2);
        /* Movable, 128 MiB cost more than two threads (32 MiB): the threads still go,
         * gathered by the bytes, not by memory that cannot move. */
        pr.p.stuck_away[1] = 0;
        round_of(nodes, 2, &pr, 1, 1000);
        CHECK_DECISION(pr.p, TP_PLACE, 0, TP_R_GATHER);
        /* 16 MiB cost less than two threads: the memory follows them instead. */
        pr.p.bytes_on[0] = 16 * MIB;
        round_of(nodes, 2, &pr, 1, 1000);
        CHECK_DECISION(pr.p, TP_NONE, 1, TP_R_ALREADY_TOGETHER);
}

/* Two processes whose memory is all bound to node 0, their threads split: node 0 takes
 * one of them; the other is not gathered on node 1, where none of its memory could
 * ever be (perf bench numa under numactl --membind=0 placed it there). */
TEST(never_gathered_away_from_stuck_memory) {
        struct tp_node nodes[2];
        struct proc pr[2];
        const int split[2] = { 0, 1 };

        nodes_of(nodes, 2, 2, NULL);
        for (int i = 0; i < 2; i++) {
                proc_of(&pr[i], 100 + i, split, 2, 128 * MIB, 0, 2, 2);
                pr[i].p.stuck_away[1] = 128 * MIB;
                pr[i].th[0].busy = 0.9;    /* more of their CPU on node 1, where none of it can be */
        }
        round_of(nodes, 2, pr, 2, 1000);
        CHECK(pr[0].p.action == TP_PLACE && pr[0].p.node == 0);
        CHECK_DECISION(pr[1].p, TP_NONE, -1, TP_R_NO_ROOM);
        /* All of it movable: node 1 takes it, its memory to follow (the swap). */
        pr[1].p.stuck_away[1] = 0;
        round_of(nodes, 2, pr, 2, 1000);
        CHECK(pr[1].p.action == TP_PLACE && pr[1].p.node == 1);
}

/* Node 0 full of other load: the threads stay split, nothing placed there. */
TEST(full_node_takes_none) {
        double load[2] = { 1.9, 1.2 };
        struct tp_node nodes[2];
        struct proc pr;
        const int split[2] = { 0, 1 };

        nodes_of(nodes, 2, 2, load);
        proc_of(&pr, 100, split, 2, 128 * MIB, 0, 2, 2);
        round_of(nodes, 2, &pr, 1, 1000);
        CHECK_DECISION(pr.p, TP_NONE, -1, TP_R_NO_ROOM);
        /* The rounding of others' load: 0.4 of a CPU leaves the CPU free. */
        load[0] = 0.4;
        nodes_of(nodes, 2, 2, load);
        round_of(nodes, 2, &pr, 1, 1000);
        CHECK_DECISION(pr.p, TP_PLACE, 0, TP_R_GATHER);
}

/* 4n1c (the other VM shape): four one-thread processes, all memory on node 0, one
 * thread on each node. The one on node 0 is settled there: a larger one does not
 * displace it, and the others are held where they run, their memory to follow
 * (memory-follows: 128 MiB or more weigh more than a thread). A two-thread process
 * fits no node. */
TEST(one_cpu_nodes) {
        struct tp_node nodes[4];
        struct proc pr[4];
        const int two[2] = { 0, 1 };

        nodes_of(nodes, 4, 1, NULL);
        for (int i = 0; i < 4; i++) {
                const int where[1] = { i };

                proc_of(&pr[i], 100 + i, where, 1, (uint64_t) (128 + i) * MIB, 0, 4, 1);
        }
        round_of(nodes, 4, pr, 4, 1000);
        CHECK_DECISION(pr[0].p, TP_NONE, 0, TP_R_ALREADY_TOGETHER);
        for (int i = 1; i < 4; i++) {
                CHECK_DECISION(pr[i].p, TP_PLACE, i, TP_R_MEMORY_FOLLOWS);
                CHECK_INT(pr[i].p.threads_to_move, 0);
                CHECK_INT(pr[i].p.bytes_to_copy, (uint64_t) (128 + i) * MIB);
        }
        /* Node 0's process idle: the largest comes to its memory there (a thread,
         * 16 MiB, against 131 MiB to copy); the others find no room left there. */
        pr[0].th[0].busy = 0;
        /* pid 101's memory on node 2: it would come to node 2, but the process there,
         * left without room on node 0, stays where it is and keeps node 2. */
        pr[1].p.bytes_on[0] = 0;
        pr[1].p.bytes_on[2] = 129 * MIB;
        round_of(nodes, 4, pr, 4, 1000);
        CHECK_DECISION(pr[3].p, TP_PLACE, 0, TP_R_GATHER);
        CHECK_INT(pr[3].p.bytes_to_copy, 0);
        CHECK_DECISION(pr[2].p, TP_PLACE, 2, TP_R_MEMORY_FOLLOWS);
        CHECK_DECISION(pr[1].p, TP_PLACE, 1, TP_R_MEMORY_FOLLOWS);
        proc_of(&pr[0], 100, two, 2, 128 * MIB, 0, 4, 1);
        round_of(nodes, 4, pr, 1, 1000);
        CHECK_DECISION(pr[0].p, TP_NONE, -1, TP_R_TOO_MANY);
}

/* A process already together on its best node keeps it from a larger (or lower-pid)
 * one decided after: perf bench's two processes when the scheduler has put one's two
 * threads beside its memory by chance. The split one gathers on the other node. */
TEST(settled_not_displaced) {
        struct tp_node nodes[2];
        struct proc pr[2];
        const int split[2] = { 0, 1 }, on0[2] = { 0, 0 };

        nodes_of(nodes, 2, 2, NULL);
        proc_of(&pr[0], 100, split, 2, 256 * MIB, 0, 2, 2);
        proc_of(&pr[1], 200, on0, 2, 128 * MIB, 0, 2, 2);
        round_of(nodes, 2, pr, 2, 1000);
        CHECK_DECISION(pr[1].p, TP_NONE, 0, TP_R_ALREADY_TOGETHER);
        CHECK_DECISION(pr[0].p, TP_PLACE, 1, TP_R_GATHER);
        CHECK_INT(pr[0].p.bytes_to_copy, 256 * MIB);
}

/* The failure of a shipped run: perf bench's two processes, both with their memory on
 * node 1 (one's followed its threads there before the scheduler moved them), one
 * together on node 1 and the other on node 0, no room for it on node 1. The one on
 * node 0 is held there (memory-follows), so that its memory may follow past the
 * cooldown of its earlier move; left unplaced it stayed 0.9% local to the end. */
TEST(together_away_from_memory_is_held) {
        struct tp_node nodes[2];
        struct proc pr[2];
        const int on0[2] = { 0, 0 }, on1[2] = { 1, 1 };

        nodes_of(nodes, 2, 2, NULL);
        proc_of(&pr[0], 213, on0, 2, 128 * MIB, 1, 2, 2);
        proc_of(&pr[1], 214, on1, 2, 128 * MIB, 1, 2, 2);
        round_of(nodes, 2, pr, 2, 1000);
        CHECK_DECISION(pr[1].p, TP_NONE, 1, TP_R_ALREADY_TOGETHER);
        CHECK_DECISION(pr[0].p, TP_PLACE, 0, TP_R_MEMORY_FOLLOWS);
        CHECK_INT(pr[0].p.threads_to_move, 0);
        CHECK_INT(pr[0].p.bytes_to_copy, 128 * MIB);
        /* Held, it keeps node 0 on the next round. */
        apply(&pr[0].p, 1000);
        round_of(nodes, 2, pr, 2, 2000);
        CHECK_DECISION(pr[0].p, TP_KEEP, 0, TP_R_HOLDING);
        /* Memory that cannot come to node 0 never holds the threads there: no room on
         * node 1, nothing placed. */
        pr[0].p.placed = -1;
        pr[0].p.stuck_away[0] = 128 * MIB;
        round_of(nodes, 2, pr, 2, 3000);
        CHECK(pr[0].p.action == TP_NONE);
}

TEST(idle_and_pinned) {
        struct tp_node nodes[2];
        struct proc pr;
        const int split[2] = { 0, 1 };

        nodes_of(nodes, 2, 2, NULL);
        proc_of(&pr, 100, split, 2, 128 * MIB, 0, 2, 2);
        pr.th[0].busy = pr.th[1].busy = 0.29;           /* below busy_min */
        round_of(nodes, 2, &pr, 1, 1000);
        CHECK_DECISION(pr.p, TP_NONE, -1, TP_R_IDLE);
        CHECK_INT(pr.p.n_busy, 0);
        /* Placed, it stays placed while idle. */
        pr.p.placed = 1;
        round_of(nodes, 2, &pr, 1, 1000);
        CHECK_DECISION(pr.p, TP_KEEP, 1, TP_R_IDLE);
        /* Busy, but the application chose both threads' CPUs. */
        pr.p.placed = -1;
        pr.th[0].busy = pr.th[1].busy = 1.0;
        pr.th[0].app_pinned = pr.th[1].app_pinned = true;
        round_of(nodes, 2, &pr, 1, 1000);
        CHECK_DECISION(pr.p, TP_NONE, -1, TP_R_PINNED);
        /* One pinned: the other alone is busy and ours, and is together already. */
        pr.th[1].app_pinned = false;
        round_of(nodes, 2, &pr, 1, 1000);
        CHECK_INT(pr.p.n_busy, 1);
        CHECK(pr.p.action == TP_PLACE ? pr.p.node == 0 : pr.p.reason == TP_R_ALREADY_TOGETHER);
}

/* An app-pinned thread is never ours, but its load stays where it runs: the round
 * counts it (load_others does not hold the round's threads). */
TEST(pinned_load_counts_where_it_runs) {
        struct tp_node nodes[2];
        struct proc pr[2];
        const int on0[1] = { 0 }, split[2] = { 0, 1 };

        nodes_of(nodes, 2, 2, NULL);
        proc_of(&pr[0], 100, on0, 1, 1 * MIB, 0, 2, 2);
        pr[0].th[0].app_pinned = true;
        proc_of(&pr[1], 200, split, 2, 128 * MIB, 0, 2, 2);
        round_of(nodes, 2, pr, 2, 1000);
        CHECK_DECISION(pr[0].p, TP_NONE, -1, TP_R_PINNED);
        CHECK_DECISION(pr[1].p, TP_PLACE, 1, TP_R_GATHER);
        /* Light threads count where they run too: two at 0.25 take node 0's last CPU. */
        proc_of(&pr[0], 100, split, 2, 1 * MIB, 0, 2, 2);
        pr[0].th[0].busy = pr[0].th[1].busy = 0.25;
        pr[0].th[1].node = 0;
        round_of(nodes, 2, pr, 2, 1000);
        CHECK_DECISION(pr[0].p, TP_NONE, -1, TP_R_IDLE);
        CHECK_DECISION(pr[1].p, TP_PLACE, 1, TP_R_GATHER);
}

/* Never more busy threads on a node than CPUs the process may use there, and never
 * on a node a thread may not run on. */
TEST(affinity_limits_the_node) {
        struct tp_node nodes[2];
        struct proc pr;
        const int split[2] = { 0, 1 };

        nodes_of(nodes, 2, 2, NULL);
        proc_of(&pr, 100, split, 2, 128 * MIB, 0, 2, 2);
        pr.th[0].cpus_on[0] = 1;        /* its cpuset gives one CPU of node 0 */
        round_of(nodes, 2, &pr, 1, 1000);
        CHECK_DECISION(pr.p, TP_PLACE, 1, TP_R_GATHER);
        CHECK_INT(pr.p.bytes_to_copy, 128 * MIB);
        proc_of(&pr, 100, split, 2, 128 * MIB, 0, 2, 2);
        pr.th[1].allowed_nodes = 2;     /* node 1 only (allowed_nodes decides alone) */
        round_of(nodes, 2, &pr, 1, 1000);
        CHECK_DECISION(pr.p, TP_PLACE, 1, TP_R_GATHER);
        /* One thread may run on node 0 only, the other on node 1 only. */
        pr.th[0].allowed_nodes = 1;
        round_of(nodes, 2, &pr, 1, 1000);
        CHECK_DECISION(pr.p, TP_NONE, -1, TP_R_NOWHERE_TOGETHER);
}

/* A busy thread that may run on one node only is there whatever the round decides:
 * another process's room there counts it. */
TEST(confined_threads_take_room) {
        struct tp_node nodes[2];
        struct proc pr[2];
        const int split[2] = { 0, 1 };

        nodes_of(nodes, 2, 2, NULL);
        /* Small, decided after the other and never placed (its threads may not meet),
         * but one thread is on node 0 for good and the other on node 1. */
        proc_of(&pr[0], 100, split, 2, 1 * MIB, 1, 2, 2);
        pr[0].th[0].allowed_nodes = 1;
        pr[0].th[1].allowed_nodes = 2;
        proc_of(&pr[1], 200, split, 2, 128 * MIB, 0, 2, 2);
        round_of(nodes, 2, pr, 2, 1000);
        CHECK_DECISION(pr[0].p, TP_NONE, -1, TP_R_NOWHERE_TOGETHER);
        CHECK_DECISION(pr[1].p, TP_NONE, -1, TP_R_NO_ROOM);
        /* Three CPUs a node: room for the two beside the one confined there. */
        nodes_of(nodes, 2, 3, NULL);
        for (size_t k = 0; k < 2; k++)
                pr[1].th[k].cpus_on[0] = pr[1].th[k].cpus_on[1] = 3;
        round_of(nodes, 2, pr, 2, 1000);
        CHECK_DECISION(pr[1].p, TP_PLACE, 0, TP_R_GATHER);
}

TEST(slow_node_never_a_target) {
        struct tp_node nodes[2];
        struct proc pr;
        const int split[2] = { 0, 1 };

        nodes_of(nodes, 2, 2, NULL);
        nodes[0].slow = true;
        proc_of(&pr, 100, split, 2, 128 * MIB, 0, 2, 2);
        round_of(nodes, 2, &pr, 1, 1000);
        CHECK_DECISION(pr.p, TP_PLACE, 1, TP_R_GATHER);
        nodes[1].slow = true;
        round_of(nodes, 2, &pr, 1, 1000);
        CHECK_DECISION(pr.p, TP_NONE, -1, TP_R_NOWHERE_TOGETHER);
}

TEST(too_many_threads) {
        struct tp_node nodes[2];
        struct proc pr;
        const int spread[3] = { 0, 1, 0 };

        nodes_of(nodes, 2, 2, NULL);
        proc_of(&pr, 100, spread, 3, 128 * MIB, 0, 2, 2);
        round_of(nodes, 2, &pr, 1, 1000);
        CHECK_DECISION(pr.p, TP_NONE, -1, TP_R_TOO_MANY);
        /* With three CPUs a node they fit, and gather where the memory is. */
        nodes_of(nodes, 2, 3, NULL);
        for (size_t i = 0; i < 3; i++)
                pr.th[i].cpus_on[0] = pr.th[i].cpus_on[1] = 3;
        round_of(nodes, 2, &pr, 1, 1000);
        CHECK_DECISION(pr.p, TP_PLACE, 0, TP_R_GATHER);
}

/* A little memory: copying it costs less than moving a thread. */
TEST(small_memory_moves_instead) {
        struct tp_node nodes[2];
        struct proc pr;
        const int split[2] = { 0, 1 };

        nodes_of(nodes, 2, 2, NULL);
        proc_of(&pr, 100, split, 2, 1 * MIB, 0, 2, 2);
        round_of(nodes, 2, &pr, 1, 1000);
        CHECK_DECISION(pr.p, TP_NONE, -1, TP_R_CHEAPER_TO_MOVE_MEMORY);
        /* The break-even: split half and half, gathering on the memory's node costs one
         * thread; leaving them costs remote_weight x half the memory. */
        proc_of(&pr, 100, split, 2, 8 * MIB + 1, 0, 2, 2);
        round_of(nodes, 2, &pr, 1, 1000);
        CHECK_DECISION(pr.p, TP_PLACE, 0, TP_R_GATHER);
        proc_of(&pr, 100, split, 2, 8 * MIB, 0, 2, 2);
        round_of(nodes, 2, &pr, 1, 1000);
        CHECK_DECISION(pr.p, TP_NONE, -1, TP_R_CHEAPER_TO_MOVE_MEMORY);
}

/* Together already on the best node: nothing to narrow, but its CPUs are taken. */
TEST(already_together_claims_room) {
        struct tp_node nodes[2];
        struct proc pr[2];
        const int on1[2] = { 1, 1 }, split[2] = { 0, 1 };

        nodes_of(nodes, 2, 2, NULL);
        proc_of(&pr[0], 200, split, 2, 128 * MIB, 1, 2, 2);
        proc_of(&pr[1], 100, on1, 2, 256 * MIB, 1, 2, 2);
        round_of(nodes, 2, pr, 2, 1000);
        CHECK_DECISION(pr[1].p, TP_NONE, 1, TP_R_ALREADY_TOGETHER);
        CHECK_DECISION(pr[0].p, TP_PLACE, 0, TP_R_GATHER);
        CHECK_INT(pr[0].p.bytes_to_copy, 128 * MIB);
}

/* Placed processes claim first, in pid order; then the others, largest first. */
TEST(order_of_the_round) {
        struct tp_node nodes[2];
        struct proc pr[3];
        const int split[2] = { 0, 1 };

        nodes_of(nodes, 2, 2, NULL);
        /* pid 300 placed on 0: it keeps node 0 from the larger, unplaced 100. */
        proc_of(&pr[0], 100, split, 2, 512 * MIB, 0, 2, 2);
        proc_of(&pr[1], 300, split, 2, 128 * MIB, 0, 2, 2);
        pr[1].p.placed = 0;
        pr[1].p.placed_at_ms = 900;
        round_of(nodes, 2, pr, 2, 1000);
        CHECK_DECISION(pr[1].p, TP_KEEP, 0, TP_R_HOLDING);
        CHECK_DECISION(pr[0].p, TP_PLACE, 1, TP_R_GATHER);
        /* Two placed on node 0, room for one: the lower pid keeps it. */
        pr[0].p.placed = 0;
        pr[0].p.placed_at_ms = 900;
        round_of(nodes, 2, pr, 2, 1000);
        CHECK_DECISION(pr[0].p, TP_KEEP, 0, TP_R_HOLDING);
        CHECK_DECISION(pr[1].p, TP_RELEASE, 0, TP_R_LOST_ROOM);
        /* None placed: the largest first, whatever the pids and the array's order. */
        proc_of(&pr[0], 100, split, 2, 64 * MIB, 0, 2, 2);
        proc_of(&pr[1], 300, split, 2, 256 * MIB, 0, 2, 2);
        proc_of(&pr[2], 200, split, 2, 128 * MIB, 0, 2, 2);
        round_of(nodes, 2, pr, 3, 1000);
        CHECK_DECISION(pr[1].p, TP_PLACE, 0, TP_R_GATHER);
        CHECK_DECISION(pr[2].p, TP_PLACE, 1, TP_R_GATHER);
        CHECK_DECISION(pr[0].p, TP_NONE, -1, TP_R_NO_ROOM);
}

/* A placement holds hold_ms; after that it moves only to a node scoring below
 * switch_margin times its own. */
TEST(hold_and_margin) {
        struct tp_node nodes[2];
        struct proc pr;
        const int on1[2] = { 1, 1 };

        nodes_of(nodes, 2, 2, NULL);
        /* Placed on 1, its memory all on 0 and not yet moved: node 0 now costs two
         * threads (32 MiB), node 1 the 128 MiB still to copy. */
        proc_of(&pr, 100, on1, 2, 128 * MIB, 0, 2, 2);
        pr.p.placed = 1;
        pr.p.placed_at_ms = 1000;
        round_of(nodes, 2, &pr, 1, 1000 + params.hold_ms - 1);
        CHECK_DECISION(pr.p, TP_KEEP, 1, TP_R_HOLDING);
        CHECK_INT(pr.p.bytes_to_copy, 128 * MIB);
        round_of(nodes, 2, &pr, 1, 1000 + params.hold_ms);
        CHECK_DECISION(pr.p, TP_PLACE, 0, TP_R_GATHER);
        CHECK_INT(pr.p.bytes_to_copy, 0);
        CHECK_INT(pr.p.threads_to_move, 2);
        /* 28 MiB on node 1 already: staying costs the 100 MiB to copy, going to node 0
         * two threads and 28 MiB (60 MiB): cheaper, but not below half: it stays. */
        pr.p.bytes_on[0] = 100 * MIB;
        pr.p.bytes_on[1] = 28 * MIB;
        round_of(nodes, 2, &pr, 1, 1000 + params.hold_ms);
        CHECK_DECISION(pr.p, TP_KEEP, 1, TP_R_STILL_BEST);
        /* Others' load on its node wanders up to 0.9 of a CPU: a new placement would
         * not go there, this one bears it; at a whole CPU it is released. */
        nodes[1].load_others = 0.9;
        round_of(nodes, 2, &pr, 1, 1000);
        CHECK_DECISION(pr.p, TP_KEEP, 1, TP_R_HOLDING);
        pr.p.placed = -1;
        round_of(nodes, 2, &pr, 1, 1000);
        CHECK(pr.p.action != TP_PLACE || pr.p.node != 1);
        pr.p.placed = 1;
        nodes[1].load_others = 1.0;
        round_of(nodes, 2, &pr, 1, 1000);
        CHECK_DECISION(pr.p, TP_RELEASE, 1, TP_R_LOST_ROOM);
}

/* Inputs the daemon should never hand in, handled without reading out of bounds
 * (valgrind runs this too): nodes out of range, NaN and negative busy, sizes that
 * overflow a sum, stuck bytes above the total, more nodes than TP_MAX_NODES. */
TEST(odd_inputs) {
        static struct tp_node nodes[TP_MAX_NODES + 6];
        struct proc pr[3];
        const int split[2] = { 0, 1 };

        nodes_of(nodes, TP_MAX_NODES + 6, 2, NULL);
        proc_of(&pr[0], 100, split, 2, UINT64_MAX - 5, 0, 2, 2);
        pr[0].p.bytes_on[1] = UINT64_MAX / 2;
        pr[0].p.stuck_away[1] = UINT64_MAX;
        pr[0].th[0].node = 99;
        pr[0].th[1].node = -7;
        proc_of(&pr[1], 200, split, 2, MIB, 0, 2, 2);
        pr[1].th[0].busy = NAN;
        pr[1].th[1].busy = -1;
        pr[1].p.placed = 99;
        proc_of(&pr[2], 300, split, 0, MIB, 0, 2, 2);
        round_of(nodes, TP_MAX_NODES + 6, pr, 3, 1000);
        CHECK(pr[0].p.action == TP_PLACE && pr[0].p.node >= 0 && pr[0].p.node < TP_MAX_NODES);
        CHECK_DECISION(pr[1].p, TP_RELEASE, 99, TP_R_LOST_ROOM);
        CHECK_DECISION(pr[2].p, TP_NONE, -1, TP_R_IDLE);
        thread_place_round(nodes, 2, NULL, 0, &params, 1000);
}

/* ---- no ping-pong --------------------------------------------------------------- */

static uint64_t rng_state;
static uint64_t rnd(void) {
        /* xorshift64*: reproducible from the seed, printed on failure. */
        rng_state ^= rng_state >> 12;
        rng_state ^= rng_state << 25;
        rng_state ^= rng_state >> 27;
        return rng_state * UINT64_C(2685821657736338717);
}
static unsigned rnd_below(unsigned n) { return (unsigned) (rnd() % n); }

/* Random inputs: nodes, load, processes with threads and memory (some of it stuck). */
static size_t random_world(struct tp_node *nodes, size_t *ret_n_nodes, struct proc *pr) {
        size_t n_nodes = 2 + rnd_below(3), n_procs = 1 + rnd_below(5);
        unsigned cpus = 1 + rnd_below(4);

        for (size_t n = 0; n < n_nodes; n++)
                nodes[n] = (struct tp_node) { .id = (int) n, .n_cpus = cpus,
                                              .load_others = rnd_below(4) ? 0.05 : rnd_below(200) / 100.0 };
        for (size_t i = 0; i < n_procs; i++) {
                size_t n_threads = 1 + rnd_below(MAXT / 2);
                int where[MAXT];

                for (size_t k = 0; k < n_threads; k++)
                        where[k] = (int) rnd_below((unsigned) n_nodes);
                /* Equal sizes half the time: ties in the order and in the scores. */
                proc_of(&pr[i], 100 + (pid_t) i, where, n_threads, (rnd_below(2) ? 128 : 1 + rnd_below(512)) * MIB,
                        (int) rnd_below((unsigned) n_nodes), n_nodes, cpus);
                for (size_t k = 0; k < n_threads; k++)
                        pr[i].th[k].busy = rnd_below(4) ? 1.0 : rnd_below(100) / 100.0;
                if (rnd_below(2)) {
                        size_t b = rnd_below((unsigned) n_nodes);

                        pr[i].p.bytes_on[b] += (uint64_t) rnd_below(256) * MIB;
                }
                if (rnd_below(3) == 0)
                        pr[i].p.stuck_away[rnd_below((unsigned) n_nodes)] = pr[i].p.bytes_on[0] / 2;
                /* Now and then a thread the application pinned, or one its cpuset keeps
                 * off a node or gives fewer CPUs. */
                for (size_t k = 0; k < n_threads; k++)
                        switch (rnd_below(12)) {
                        case 0:
                                pr[i].th[k].app_pinned = true;
                                break;
                        case 1:
                                pr[i].th[k].allowed_nodes &= ~(UINT64_C(1) << rnd_below((unsigned) n_nodes));
                                break;
                        case 2:
                                pr[i].th[k].cpus_on[rnd_below((unsigned) n_nodes)] = rnd_below(cpus + 1);
                                break;
                        }
        }
        if (rnd_below(8) == 0)
                nodes[rnd_below((unsigned) n_nodes)].slow = true;
        *ret_n_nodes = n_nodes;
        return n_procs;
}

/* The nodes a process was placed on, in order, never go back to one it left. */
static bool went_back(const int *seq, size_t n) {
        for (size_t i = 2; i < n; i++)
                for (size_t j = 0; j + 1 < i; j++)
                        if (seq[j] == seq[i] && seq[i - 1] != seq[i])
                                return true;
        return false;
}

/* After a round: no node holds more busy threads placed or settled there (with those
 * kept there) than its CPUs less others' load, nor more kept there than that with
 * half a CPU of load forgiven (TP_KEEP_SLACK); every node given is one each busy
 * thread may run on. */
static bool round_fits(const struct tp_node *nodes, size_t n_nodes, const struct proc *pr, size_t n_procs) {
        unsigned on[4] = {};
        bool fresh[4] = {};

        for (size_t i = 0; i < n_procs; i++) {
                const struct tp_proc *p = &pr[i].p;
                bool kept = p->action == TP_KEEP && p->n_busy > 0;
                bool holds = kept || p->action == TP_PLACE ||
                             (p->action == TP_NONE && p->reason == TP_R_ALREADY_TOGETHER);

                if (!holds)
                        continue;
                if (p->node < 0 || (size_t) p->node >= n_nodes || nodes[p->node].slow)
                        return false;
                on[p->node] += p->n_busy;
                fresh[p->node] = fresh[p->node] || !kept;
                for (size_t k = 0; k < p->n_threads; k++)
                        if (!p->threads[k].app_pinned && p->threads[k].busy >= params.busy_min &&
                            (!(p->threads[k].allowed_nodes >> p->node & 1) ||
                             p->threads[k].cpus_on[p->node] < p->n_busy))
                                return false;
        }
        for (size_t n = 0; n < n_nodes; n++) {
                double load = fresh[n] ? nodes[n].load_others : fmax(0, nodes[n].load_others - 0.5);

                if (on[n] > 0 && (long) on[n] > (long) nodes[n].n_cpus - lround(load))
                        return false;
        }
        return true;
}

TEST(replay_never_ping_pongs) {
        for (uint64_t seed = 1; seed <= 2000; seed++) {
                struct tp_node nodes[4];
                struct proc pr[8];
                int seq[8][64];
                size_t n_seq[8] = {}, n_nodes, n_procs;
                uint64_t now = 1000;
                bool bad = false;

                rng_state = seed * UINT64_C(0x9E3779B97F4A7C15);
                n_procs = random_world(nodes, &n_nodes, pr);
                /* The same inputs, round after round, a tenth of a hold apart. */
                for (unsigned r = 0; r < 200; r++, now += params.hold_ms / 10) {
                        round_of(nodes, n_nodes, pr, n_procs, now);
                        if (!round_fits(nodes, n_nodes, pr, n_procs)) {
                                TEST_FAIL("seed %" PRIu64 " round %u: a node over its room", seed, r);
                                bad = true;
                        }
                        for (size_t i = 0; i < n_procs; i++) {
                                apply(&pr[i].p, now);
                                if (pr[i].p.action == TP_PLACE && n_seq[i] < 64)
                                        seq[i][n_seq[i]++] = pr[i].p.node;
                        }
                }
                for (size_t i = 0; i < n_procs; i++) {
                        bad = bad || went_back(seq[i], n_seq[i]) || n_seq[i] > 2;
                        CHECK_MSG(!went_back(seq[i], n_seq[i]) && n_seq[i] <= 2,
                                  "seed %" PRIu64 ": pid %d placed %zu times", seed, (int) pr[i].p.pid, n_seq[i]);
                }
                if (bad)
                        break;
        }
}

/* The world follows the decisions: a placed process's busy threads run on its node and
 * its memory comes to it a quarter at a time, while others' load on each node wanders
 * by up to 0.6 of a CPU a round. No process goes back to a node it left. */
TEST(feedback_never_ping_pongs) {
        for (uint64_t seed = 1; seed <= 2000; seed++) {
                struct tp_node nodes[4];
                struct proc pr[8];
                int seq[8][64];
                size_t n_seq[8] = {}, n_nodes, n_procs;
                uint64_t now = 1000;
                bool bad = false;

                rng_state = seed * UINT64_C(0xD1B54A32D192ED03);
                n_procs = random_world(nodes, &n_nodes, pr);
                double base[4];

                for (size_t n = 0; n < n_nodes; n++)
                        base[n] = nodes[n].load_others;
                for (unsigned r = 0; r < 200; r++, now += params.hold_ms / 10) {
                        /* Others' load moves by up to 0.6 of a CPU each round. */
                        for (size_t n = 0; n < n_nodes; n++)
                                nodes[n].load_others = fmax(0, base[n] + ((double) rnd_below(121) - 60) / 100.0);
                        round_of(nodes, n_nodes, pr, n_procs, now);
                        if (!round_fits(nodes, n_nodes, pr, n_procs)) {
                                TEST_FAIL("seed %" PRIu64 " round %u: a node over its room", seed, r);
                                bad = true;
                        }
                        for (size_t i = 0; i < n_procs; i++) {
                                struct tp_proc *p = &pr[i].p;
                                int to;

                                apply(p, now);
                                if (p->action == TP_PLACE && n_seq[i] < 64)
                                        seq[i][n_seq[i]++] = p->node;
                                to = p->placed >= 0 ? p->placed : -1;
                                if (to < 0)
                                        continue;
                                for (size_t k = 0; k < p->n_threads; k++)
                                        if (!pr[i].th[k].app_pinned)
                                                pr[i].th[k].node = to;
                                for (size_t n = 0; n < n_nodes; n++) {
                                        uint64_t movable = p->bytes_on[n], q;

                                        if ((int) n == to || p->stuck_away[to] >= movable)
                                                continue;
                                        q = (movable - p->stuck_away[to]) / 4 + 1;
                                        q = q < movable ? q : movable;
                                        p->bytes_on[n] -= q;
                                        p->bytes_on[to] += q;
                                }
                        }
                }
                for (size_t i = 0; i < n_procs; i++) {
                        bad = bad || went_back(seq[i], n_seq[i]);
                        CHECK_MSG(!went_back(seq[i], n_seq[i]), "seed %" PRIu64 ": pid %d went back (%zu placements)",
                                  seed, (int) pr[i].p.pid, n_seq[i]);
                }
                if (bad)
                        break;
        }
}

/* ---- helpers ----------------------------------------------------------------------- */

TEST(load_others_and_thread_cpus) {
        _cleanup_(topology_freep) struct topology *t = NULL;
        struct tp_node nodes[2];
        struct proc pr;
        struct tp_thread th;
        const int split[2] = { 0, 1 };
        double busy[2] = { 1.3, 0.5 };
        nb_cpumask cpus = {};

        nodes_of(nodes, 2, 2, NULL);
        proc_of(&pr, 100, split, 2, MIB, 0, 2, 2);
        pr.th[0].busy = 0.25;
        thread_place_load_others(nodes, 2, busy, &pr.p, 1);
        CHECK(fabs(nodes[0].load_others - 1.05) < 1e-9);
        CHECK(nodes[1].load_others == 0);       /* never below 0 */

        CHECK_INT(topology_read(TEST_DATA_DIR "/sys/2n2c", &t), 0);
        if (!t)
                return;
        /* 2n2c: CPUs 0-1 on node 0, 2-3 on node 1. */
        cpumask_set(&cpus, 1);
        cpumask_set(&cpus, 2);
        cpumask_set(&cpus, 3);
        cpumask_set(&cpus, 100);        /* not a CPU of the machine */
        thread_place_thread_cpus(&th, t, &cpus);
        CHECK_INT(th.allowed_nodes, 3);
        CHECK_INT(th.cpus_on[0], 1);
        CHECK_INT(th.cpus_on[1], 2);
        cpus = (nb_cpumask) {};
        cpumask_set(&cpus, 3);
        thread_place_thread_cpus(&th, t, &cpus);
        CHECK_INT(th.allowed_nodes, 2);
        CHECK_INT(th.cpus_on[0], 0);
}

/* 2n1m: node 0 CPU 0, node 1 CPU 1, node 2 memory only (slow: never a target). */
TEST(nodes_from_topology) {
        _cleanup_(topology_freep) struct topology *t = NULL;
        struct tp_node nodes[TP_MAX_NODES];

        CHECK_INT(topology_read(TEST_DATA_DIR "/sys/2n1m", &t), 0);
        if (!t)
                return;
        CHECK_INT(thread_place_nodes(t, nodes), 3);
        CHECK(nodes[0].id == 0 && nodes[0].n_cpus == 1 && !nodes[0].slow);
        CHECK(nodes[1].id == 1 && nodes[1].n_cpus == 1 && !nodes[1].slow);
        CHECK(nodes[2].id == 2 && nodes[2].n_cpus == 0 && nodes[2].slow);
        /* A CPU gone offline is no CPU of its node. */
        t->online_cpus.w[0] &= ~UINT64_C(2);
        thread_place_nodes(t, nodes);
        CHECK(nodes[1].n_cpus == 0 && nodes[1].slow);
}

TEST(names) {
        CHECK_STR(thread_place_reason_name(TP_R_CHEAPER_TO_MOVE_MEMORY), "cheaper-to-move-memory");
        CHECK_STR(thread_place_reason_name(TP_R_ALREADY_TOGETHER), "already-together");
        CHECK_STR(thread_place_reason_name(_TP_REASON_MAX), "?");
        for (int r = 0; r < _TP_REASON_MAX; r++)
                CHECK(strcmp(thread_place_reason_name(r), "?") != 0);
        CHECK_STR(thread_place_action_name(TP_RELEASE), "release");
}

static int intro(void) {
        thread_place_params_default(&params);
        return 0;
}

DEFINE_TEST_MAIN_FULL(intro, NULL)
