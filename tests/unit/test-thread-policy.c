/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Thread policies (lib/thread-policy): the resolution from first records, the reader
 * and the check before moving on numa_maps captured from threads with their own
 * policies in the 2-node 6.1 guest (tests/data/threads/), and what the plan makes of
 * them: memory without a VMA policy never goes where a thread's policy forbids it. */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include "numa_maps.h"
#include "parse.h"
#include "plan.h"
#include "policy.h"
#include "thread-policy.h"
#include "topology.h"
#include "test.h"

#define CAPTURE TEST_DATA_DIR "/threads/qemu-6.1-2node"
#define PID 100
/* The 8 MiB VMA both the main thread and worker 1 touched 4 MiB of. */
#define SHARED_VMA 0x7f7b991a2000ull

static struct mempolicy pol(const char *s) {
        struct mempolicy p = {};
        if (numa_maps_mempolicy_parse(s, strlen(s), &p) < 0)
                TEST_FAIL("bad policy %s", s);
        return p;
}

static struct policy_head head(uint64_t start, const char *policy) {
        return (struct policy_head) { .start = start, .policy = pol(policy) };
}

static bool has_policy(const struct thread_policies *tp, const char *s) {
        struct mempolicy p = pol(s);
        for (size_t i = 0; i < tp->n_policies; i++)
                if (numa_maps_mempolicy_equal(&tp->policies[i], &p))
                        return true;
        return false;
}

static struct numa_maps *maps_of(const char *text) {
        struct numa_maps *m = NULL;
        if (numa_maps_parse(text, strlen(text), &m) < 0)
                TEST_FAIL("numa_maps_parse");
        return m;
}

static struct numa_maps *read_maps(const char *kase) {
        char path[512];
        _cleanup_free_ char *buf = NULL;
        size_t len = 0;
        struct numa_maps *m = NULL;

        snprintf(path, sizeof(path), CAPTURE "/%s/%d/numa_maps", kase, PID);
        if (parse_read_file_at(AT_FDCWD, path, 1 << 20, &buf, &len) < 0 || numa_maps_parse(buf, len, &m) < 0)
                TEST_FAIL("cannot read %s", path);
        return m;
}

static int read_case(const char *kase, bool with_maps, struct thread_policies *ret) {
        char root[512];
        _cleanup_(numa_maps_freep) struct numa_maps *m = with_maps ? read_maps(kase) : NULL;

        snprintf(root, sizeof(root), CAPTURE "/%s", kase);
        return thread_policy_read(root, PID, m, ret);
}

/* ---- resolution from first records ---------------------------------------- */

TEST(resolve_main_default_worker_bound) {
        struct policy_head h[] = { head(0x1000, "default"), head(0x1000, "bind:1"), head(0x1000, "default") };
        _cleanup_(thread_policy_done) struct thread_policies tp = {};

        CHECK_INT(thread_policy_resolve(h, 3, 0, NULL, &tp), 0);
        CHECK(!tp.unknown);
        CHECK_INT(tp.n_threads, 3);
        CHECK_INT(tp.n_policies, 2);
        CHECK(has_policy(&tp, "default"));
        CHECK(has_policy(&tp, "bind:1"));
        CHECK(thread_policy_govern(&tp, &(struct mempolicy) { .mode = MODE_DEFAULT }));
        CHECK(!thread_policy_govern(&tp, &h[1].policy));
}

/* A worker that differs proves the first VMA has no policy of its own, whatever the
 * main thread shows. */
TEST(resolve_main_bound_worker_differs) {
        struct policy_head h[] = { head(0x1000, "bind:0-1"), head(0x1000, "bind:0-1"), head(0x1000, "interleave:0-1") };
        _cleanup_(numa_maps_freep) struct numa_maps *m = maps_of("1000 bind:0-1 N0=1\n2000 default N1=1\n");
        _cleanup_(thread_policy_done) struct thread_policies tp = {};

        CHECK_INT(thread_policy_resolve(h, 3, 0, m, &tp), 0);
        CHECK(!tp.unknown);
        CHECK(numa_maps_mempolicy_equal(&tp.main, &h[0].policy));
        CHECK_INT(tp.n_policies, 2);
        CHECK(has_policy(&tp, "interleave:0-1"));
}

/* numactl --membind=0 at launch: every thread shows bind:0 everywhere. */
TEST(resolve_all_same_is_the_launch_policy) {
        struct policy_head h[] = { head(0x1000, "bind:0"), head(0x1000, "bind:0") };
        _cleanup_(numa_maps_freep) struct numa_maps *m = maps_of("1000 bind:0 N0=1\n2000 bind:0 N0=5\n");
        _cleanup_(thread_policy_done) struct thread_policies tp = {};

        CHECK_INT(thread_policy_resolve(h, 2, 0, m, &tp), 0);
        CHECK(!tp.unknown);
        CHECK(numa_maps_mempolicy_equal(&tp.main, &h[0].policy));
        CHECK_INT(tp.n_policies, 1);
}

/* All threads show bind:0 on the first VMA, but the main thread shows default on
 * another: its policy is default, so bind:0 is the first VMA's own, and the threads'
 * are not known. */
TEST(resolve_first_vma_with_own_policy_is_unknown) {
        struct policy_head h[] = { head(0x1000, "bind:0"), head(0x1000, "bind:0") };
        _cleanup_(numa_maps_freep) struct numa_maps *m = maps_of("1000 bind:0 N0=1\n2000 default N1=5\n");
        _cleanup_(thread_policy_done) struct thread_policies tp = {};

        CHECK_INT(thread_policy_resolve(h, 2, 0, m, &tp), 0);
        CHECK(tp.unknown);
        CHECK_INT(tp.main.mode, MODE_DEFAULT);
        CHECK(thread_policy_govern(&tp, &m->vmas[1].policy));
        CHECK(!thread_policy_govern(&tp, &m->vmas[0].policy));
}

/* Single-threaded, the same: nothing else to know. */
TEST(resolve_single_thread) {
        _cleanup_(numa_maps_freep) struct numa_maps *m = maps_of("1000 bind:0 N0=1\n2000 default N1=5\n");
        _cleanup_(thread_policy_done) struct thread_policies tp = {};

        CHECK_INT(thread_policy_single(m, &tp), 0);
        CHECK(!tp.unknown);
        CHECK_INT(tp.main.mode, MODE_DEFAULT);
        CHECK_INT(tp.n_policies, 1);
}

TEST(resolve_unknown_when_first_vma_moved_or_a_read_failed) {
        struct policy_head h[] = { head(0x1000, "default"), head(0x2000, "bind:1") };
        _cleanup_(thread_policy_done) struct thread_policies a = {}, b = {};

        CHECK_INT(thread_policy_resolve(h, 2, 0, NULL, &a), 0);
        CHECK(a.unknown);
        CHECK_INT(thread_policy_resolve(h, 1, 1, NULL, &b), 0);
        CHECK(b.unknown);
}

/* ---- the reader on captured threads ---------------------------------------- */

TEST(read_worker_bind) {
        _cleanup_(thread_policy_done) struct thread_policies tp = {}, again = {};

        CHECK_INT(read_case("worker-bind", true, &tp), 0);
        CHECK(!tp.unknown);
        CHECK_INT(tp.n_threads, 3);
        CHECK_INT(tp.main.mode, MODE_DEFAULT);
        CHECK_INT(tp.n_policies, 2);
        CHECK(has_policy(&tp, "bind:1"));
        /* The check before moving reads the main thread's record itself. */
        CHECK_INT(read_case("worker-bind", false, &again), 0);
        CHECK_INT(again.n_policies, 2);
        CHECK(has_policy(&again, "bind:1"));
}

TEST(read_worker_interleave) {
        _cleanup_(thread_policy_done) struct thread_policies tp = {};

        CHECK_INT(read_case("worker-interleave", true, &tp), 0);
        CHECK(!tp.unknown);
        CHECK(has_policy(&tp, "interleave:0-1"));
}

TEST(read_launch_bind) {
        _cleanup_(thread_policy_done) struct thread_policies tp = {};

        CHECK_INT(read_case("launch-bind", true, &tp), 0);
        CHECK(!tp.unknown);
        CHECK_INT(tp.n_policies, 1);
        CHECK(has_policy(&tp, "bind:0"));
}

TEST(read_first_vma_policy) {
        _cleanup_(thread_policy_done) struct thread_policies tp = {};

        CHECK_INT(read_case("first-vma-policy", true, &tp), 0);
        CHECK(tp.unknown);
        CHECK_INT(tp.main.mode, MODE_DEFAULT);
}

TEST(read_gone) {
        _cleanup_(thread_policy_done) struct thread_policies tp = {};

        CHECK_INT(thread_policy_read(CAPTURE "/worker-bind", 99, NULL, &tp), -ESRCH);
}

/* ---- the check before moving ------------------------------------------------ */

static int allow(const char *kase, unsigned node) {
        char root[512];
        nb_nodemask all;

        nodemask_parse("0-1", &all);
        snprintf(root, sizeof(root), CAPTURE "/%s", kase);
        return thread_policy_allow(root, PID, &all, &all, false, node);
}

TEST(allow_by_every_thread) {
        CHECK_INT(allow("worker-bind", 1), 1);
        CHECK_INT(allow("worker-bind", 0), 0);   /* worker 1 is bound to 1 */
        CHECK_INT(allow("worker-interleave", 0), 0);
        CHECK_INT(allow("worker-interleave", 1), 0);
        CHECK_INT(allow("launch-bind", 0), 1);
        CHECK_INT(allow("launch-bind", 1), 0);
}

/* ---- the plan ----------------------------------------------------------------- */

struct decided {
        struct numa_maps *maps;
        struct thread_policies tp;
        struct plan plan;
        uint64_t ends[64];
};

static void decided_done(struct decided *d) {
        plan_done(&d->plan);
        thread_policy_done(&d->tp);
        numa_maps_free(d->maps);
}

/* Decides on the captured process with its threads on hot_node; with_threads = false
 * is the daemon before thread policies: what it did is what the cases must not do. */
static void decide_case(const char *kase, unsigned hot_node, bool with_threads, struct decided *d) {
        _cleanup_(topology_freep) struct topology *t = NULL;
        uint64_t cpu[2] = {}, reserved[2] = {};
        struct plan_params pp = { .min_cpu_share_pct = 60, .free_floor_pct = 5, .min_misplaced_kb = 2048 };
        struct plan_input in = {};

        if (topology_read(TEST_DATA_DIR "/sys/2n2c", &t) < 0) {
                TEST_FAIL("topology");
                return;
        }
        d->maps = read_maps(kase);
        if (!d->maps)
                return;
        CHECK_INT(read_case(kase, true, &d->tp), 0);
        for (size_t i = 0; i < d->maps->n_vmas && i < 64; i++)
                d->ends[i] = d->maps->vmas[i].start + (8u << 20);
        cpu[hot_node] = 1000000;
        nodemask_parse("0-1", &in.mems_allowed);
        in.maps = d->maps;
        in.vma_end = d->ends;
        in.cpu_ns = cpu;
        in.threads = with_threads ? &d->tp : NULL;
        CHECK_INT(plan_decide(t, &in, &pp, reserved, &d->plan), 0);
        /* The invariant: never where a thread's policy forbids, for VMAs they govern. */
        for (size_t i = 0; with_threads && i < d->plan.n_moves; i++) {
                const struct plan_move *mv = &d->plan.moves[i];
                nb_nodemask allowed;

                if (!mv->thread_policy)
                        continue;
                CHECK(!d->tp.unknown);
                CHECK_INT(policy_allowed_nodes_threads(d->tp.policies, d->tp.n_policies, &in.mems_allowed,
                                                       &t->with_memory, false, &allowed), POLICY_MOVABLE);
                CHECK(nodemask_test(&allowed, (unsigned) mv->target));
        }
}

static const struct plan_move *move_of(const struct plan *p, uint64_t start) {
        for (size_t i = 0; i < p->n_moves; i++)
                if (p->moves[i].start == start)
                        return &p->moves[i];
        return NULL;
}

/* The case: a worker bound itself to node 1 and touched its 4 MiB there, the
 * threads now run on node 0. Before: its pages were moved to node 0. Now: untouched
 * (and the main thread's pages on node 0 stay too: node 1 is the only node all allow,
 * and it is farther from where the threads run). */
TEST(plan_worker_bind_untouched) {
        _cleanup_(decided_done) struct decided before = {}, now = {};
        const struct plan_move *mv;

        decide_case("worker-bind", 0, false, &before);
        mv = move_of(&before.plan, SHARED_VMA);
        CHECK(mv && mv->target == 0);          /* what the daemon did */

        decide_case("worker-bind", 0, true, &now);
        CHECK(!move_of(&now.plan, SHARED_VMA));
}

/* Threads on node 1: the main thread's pages may go to node 1, which every thread's
 * policy allows. */
TEST(plan_worker_bind_common_node) {
        _cleanup_(decided_done) struct decided d = {};
        const struct plan_move *mv;

        decide_case("worker-bind", 1, true, &d);
        mv = move_of(&d.plan, SHARED_VMA);
        CHECK(mv && mv->target == 1 && mv->thread_policy);
}

/* A worker that interleaves: memory without a VMA policy stays, and explain says why. */
TEST(plan_worker_interleave_left_alone) {
        _cleanup_(decided_done) struct decided before = {}, now = {};

        decide_case("worker-interleave", 0, false, &before);
        CHECK(move_of(&before.plan, SHARED_VMA));
        decide_case("worker-interleave", 0, true, &now);
        CHECK(!move_of(&now.plan, SHARED_VMA));
        CHECK(now.plan.skipped_bytes[REASON_THREAD_POLICY] >= 512 * 4096); /* and other VMAs on node 1 */
        CHECK_STR(plan_reason_name(REASON_THREAD_POLICY), "thread-policy");
}

/* The first VMA has its own policy: the threads' are unknown, memory without a VMA
 * policy stays. */
TEST(plan_unknown_threads_left_alone) {
        _cleanup_(decided_done) struct decided before = {}, now = {};

        decide_case("first-vma-policy", 0, false, &before);
        CHECK(move_of(&before.plan, SHARED_VMA));
        decide_case("first-vma-policy", 0, true, &now);
        CHECK(!move_of(&now.plan, SHARED_VMA));
        CHECK(now.plan.skipped_bytes[REASON_THREAD_POLICY] > 0);
}

/* numactl --membind=0 at launch, threads on node 1: nothing leaves node 0. */
TEST(plan_launch_bind_untouched) {
        _cleanup_(decided_done) struct decided d = {};

        decide_case("launch-bind", 1, true, &d);
        for (size_t i = 0; i < d.plan.n_moves; i++)
                CHECK_INT(d.plan.moves[i].target, 0);
        CHECK(!move_of(&d.plan, SHARED_VMA));
}

DEFINE_TEST_MAIN()
