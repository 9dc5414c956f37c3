/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Groups of processes that share memory (daemon/share-groups.h), on records built by
 * hand from numa_maps and maps text as a scan reads them: who is a member (one owner,
 * joined by objects), each object's target (the group's busiest node, within every
 * member's cpuset and policies), what a scan is told per VMA and what a job's check
 * is handed. */
#include <stdlib.h>
#include <string.h>
#include "cg-records.h"
#include "maps.h"
#include "numa_maps.h"
#include "plan.h"
#include "proc-records.h"
#include "share-groups.h"
#include "test.h"
#include "topology.h"

/* Two nodes at distance 20, each with a CPU and memory. */
static struct topology *topo2(void) {
        struct topology *t = calloc(1, sizeof(*t));

        t->n_nodes = 2;
        t->nodes = calloc(2, sizeof(*t->nodes));
        t->distance = calloc(4, sizeof(int));
        t->n_cpus = 2;
        t->cpu_node = calloc(2, sizeof(int));
        for (unsigned i = 0; i < 2; i++) {
                t->nodes[i].id = i;
                t->nodes[i].has_cpus = t->nodes[i].has_memory = true;
                t->nodes[i].mem_total_kb = 1024 * 1024;
                t->nodes[i].mem_free_kb = 900 * 1024;
                cpumask_set(&t->nodes[i].cpus, i);
                cpumask_set(&t->online_cpus, i);
                t->cpu_node[i] = (int) i;
                nodemask_set(&t->online, i);
                nodemask_set(&t->with_cpus, i);
                nodemask_set(&t->with_memory, i);
                for (unsigned j = 0; j < 2; j++)
                        t->distance[i * 2 + j] = i == j ? 10 : 20;
        }
        return t;
}

static const struct plan_params params = { .min_cpu_share_pct = 60, .move_shared = true };

#define N_PROCS 8

static struct fixture {
        struct topology *t;
        struct cg_rec cg[3];       /* uid 1000 balance, uid 2000 balance, uid 1000 not watched */
        struct proc_rec rec[N_PROCS];
        struct proc_rec *v[N_PROCS];
        struct proc_records records;
        struct share_groups g;
} fx;

/* Notes a process as its scan would: numa_maps and maps text, its cpuset, where it ran. */
static void note(size_t i, pid_t pid, struct cg_rec *cg, const char *numa_maps, const char *maps, const char *mems,
                 uint64_t cpu0, uint64_t cpu1) {
        struct proc_rec *p = &fx.rec[i];
        struct numa_maps *m = NULL;
        struct vma_range *r = NULL;
        size_t n = 0;
        uint64_t cpu[2] = { cpu0, cpu1 }, ends[8] = {};
        struct thread_policies none = {};
        struct plan_input in = { .cpu_ns = cpu };

        struct proc_shares *old = p->shares;

        *p = (struct proc_rec) { .pid = pid, .starttime = 1000 + (uint64_t) pid, .cg = cg, .pidfd = -1,
                                 .shares = old };
        CHECK_INT(numa_maps_parse(numa_maps, strlen(numa_maps), &m), 0);
        CHECK_INT(maps_parse(maps, strlen(maps), &r, &n, NULL), 0);
        for (size_t k = 0; k < m->n_vmas && k < 8; k++)
                ends[k] = maps_end_of(r, n, m->vmas[k].start);
        in.maps = m;
        in.vma_end = ends;
        in.threads = &none;
        nodemask_parse(mems, &in.mems_allowed);
        share_groups_note(fx.t, p, m, r, n, &in, &params);
        numa_maps_free(m);
        free(r);
}

/* The shared mapping of ino at 0x7f0000000000 + slot GiB, 1 MiB (256 pages) of it,
 * and a private heap; pages per node given. */
static void note_shm(size_t i, pid_t pid, struct cg_rec *cg, unsigned ino, unsigned slot, uint64_t on0, uint64_t on1,
                     const char *policy, const char *mems, uint64_t cpu0, uint64_t cpu1) {
        char nm[512], mp[512];
        uint64_t start = UINT64_C(0x7f0000000000) + ((uint64_t) slot << 30);

        snprintf(nm, sizeof(nm),
                 "55d000000000 default heap anon=10 dirty=10 N0=10 kernelpagesize_kB=4\n"
                 "%llx %s file=/dev/zero\\040(deleted) dirty=%llu mapped=%llu mapmax=3 N0=%llu N1=%llu "
                 "kernelpagesize_kB=4\n",
                 (unsigned long long) start, policy, (unsigned long long) (on0 + on1),
                 (unsigned long long) (on0 + on1), (unsigned long long) on0, (unsigned long long) on1);
        snprintf(mp, sizeof(mp),
                 "55d000000000-55d000100000 rw-p 00000000 00:00 0 [heap]\n"
                 "%llx-%llx rw-s 00000000 00:01 %u /dev/zero (deleted)\n",
                 (unsigned long long) start, (unsigned long long) (start + (1 << 20)), ino);
        note(i, pid, cg, nm, mp, mems, cpu0, cpu1);
}

/* Who was brought forward by the last builds, by record index. */
static bool brought[N_PROCS];

static void bring_forward(struct proc_rec *p, uint64_t at_ms) {
        CHECK_INT(at_ms, 777);
        brought[p - fx.rec] = true;
}

static void build(size_t n) {
        for (size_t i = 0; i < n; i++)
                fx.v[i] = &fx.rec[i];
        fx.records = (struct proc_records) { .v = fx.v, .n = n };
        share_groups_build(&fx.g, fx.t, &fx.records, params.min_cpu_share_pct, bring_forward, 777);
}

static void before(void) {
        fx = (struct fixture) {};
        memset(brought, 0, sizeof(brought));
        fx.t = topo2();
        fx.cg[0] = (struct cg_rec) { .path = (char *) "/a", .mode = CG_MODE_BALANCE, .turn_uid = 1000 };
        fx.cg[1] = (struct cg_rec) { .path = (char *) "/b", .mode = CG_MODE_BALANCE, .turn_uid = 2000 };
        fx.cg[2] = (struct cg_rec) { .path = (char *) "/c", .mode = CG_MODE_UNSET, .turn_uid = 1000 };
}

static void after(void) {
        share_groups_done(&fx.g);
        for (size_t i = 0; i < N_PROCS; i++)
                free(fx.rec[i].shares);
        topology_free(fx.t);
}

/* Two processes of one owner mapping one object, running on node 1: one group, its
 * target node 1; a third of another owner mapping it too is no member; a second pair
 * on another object is a second group. */
TEST(groups_by_object_and_owner) {
        const struct share_group *gr;

        note_shm(0, 10, &fx.cg[0], 100, 0, 200, 0, "default", "0-1", 0, 1000);
        note_shm(1, 11, &fx.cg[0], 100, 1, 100, 0, "default", "0-1", 100, 900);
        note_shm(2, 12, &fx.cg[0], 200, 2, 50, 0, "default", "0-1", 1000, 0);
        note_shm(3, 13, &fx.cg[0], 200, 3, 50, 0, "default", "0-1", 1000, 0);
        note_shm(4, 14, &fx.cg[1], 100, 4, 200, 0, "default", "0-1", 0, 1000);
        build(5);
        CHECK_INT(fx.g.n_groups, 2);
        CHECK_INT(fx.g.n_objs, 2);
        gr = share_groups_of(&fx.g, 1000, 10);
        CHECK(gr && gr == share_groups_of(&fx.g, 1000, 11));
        if (gr) {
                CHECK_INT(gr->n_pids, 2);
                CHECK_INT(gr->pids[0], 10);
                CHECK_INT(gr->pids[1], 11);
                CHECK_INT(gr->hot_node, 1);
                /* The most any member has of it: 200 pages on node 0. */
                CHECK_INT(gr->node_bytes[0], 200 * 4096);
        }
        CHECK(share_groups_of(&fx.g, 2000, 14) == NULL);
        CHECK(share_groups_of(&fx.g, 1000, 14) == NULL);
        gr = share_groups_of(&fx.g, 1000, 12);
        CHECK(gr && gr->hot_node == 0);
        for (size_t o = 0; o < fx.g.n_objs; o++)
                CHECK_INT(fx.g.objs[o].target, fx.g.objs[o].ino == 100 ? 1 : 0);
}

/* What a scan of a member is told per VMA, and what a job's check is handed: every
 * member's mapping, its own offset. A process not in the group is told nothing. */
TEST(plan_input_and_check) {
        struct numa_maps *m = NULL;
        struct vma_range *r = NULL;
        struct plan_share *share;
        struct share_check chk;
        size_t n = 0;
        const char *nm = "7f0040000000 default file=/dev/zero\\040(deleted) dirty=100 mapped=100 mapmax=3 N0=100 "
                         "kernelpagesize_kB=4\n"
                         "55d000000000 default heap anon=10 dirty=10 N0=10 kernelpagesize_kB=4\n";
        const char *mp = "55d000000000-55d000100000 rw-p 00000000 00:00 0 [heap]\n"
                         "7f0040000000-7f0040100000 rw-s 00000000 00:01 100 /dev/zero (deleted)\n";

        note_shm(0, 10, &fx.cg[0], 100, 0, 200, 0, "default", "0-1", 0, 1000);
        note_shm(1, 11, &fx.cg[0], 100, 1, 100, 0, "default", "0-1", 0, 1000);
        build(2);
        CHECK_INT(numa_maps_parse(nm, strlen(nm), &m), 0);
        CHECK_INT(maps_parse(mp, strlen(mp), &r, &n, NULL), 0);
        share = share_groups_plan_input(&fx.g, 1000, 11, m, r, n);
        CHECK(share != NULL);
        if (share) {
                CHECK_INT(share[0].target, 1);
                CHECK_INT(share[1].target, -1);
        }
        free(share);
        CHECK(share_groups_plan_input(&fx.g, 1000, 99, m, r, n) == NULL);
        CHECK(share_groups_plan_input(&fx.g, 2000, 11, m, r, n) == NULL);
        CHECK(share_groups_check(&fx.g, 1000, 11, UINT64_C(0x7f0040000000), &chk));
        CHECK_INT(chk.n_peers, 2);
        CHECK_INT(chk.own_start, UINT64_C(0x7f0040000000));
        CHECK_INT(chk.own_pgoff, 0);
        CHECK_INT(chk.peers[0].pid, 10);
        CHECK_INT(chk.peers[0].starttime, 1010);
        CHECK(!share_groups_check(&fx.g, 1000, 11, UINT64_C(0x55d000000000), &chk));
        numa_maps_free(m);
        free(r);
}

/* The target is the nearest node every member allows: a member confined to node 0
 * keeps the object on node 0 though the group runs on node 1; a member whose policy
 * asks to be left alone (interleave) keeps it where it is. */
TEST(target_within_every_member) {
        note_shm(0, 10, &fx.cg[0], 100, 0, 200, 0, "default", "0-1", 0, 1000);
        note_shm(1, 11, &fx.cg[0], 100, 1, 100, 0, "default", "0", 0, 1000);
        build(2);
        CHECK_INT(fx.g.n_objs, 1);
        CHECK_INT(fx.g.objs[0].target, 0);
        share_groups_done(&fx.g);

        note_shm(1, 11, &fx.cg[0], 100, 1, 100, 0, "interleave:0-1", "0-1", 0, 1000);
        build(2);
        CHECK_INT(fx.g.objs[0].target, -1);
        CHECK(fx.g.objs[0].why != NULL);
}

/* A member whose object gets a new target is scanned now, once: its plan follows the
 * group at once; the next build with the same target brings nobody forward. */
TEST(new_target_brings_members_forward) {
        note_shm(0, 10, &fx.cg[0], 100, 0, 200, 0, "default", "0-1", 1000, 0);
        note_shm(1, 11, &fx.cg[0], 100, 1, 100, 0, "default", "0-1", 1000, 0);
        build(2);
        CHECK(brought[0] && brought[1]);
        share_groups_done(&fx.g);
        memset(brought, 0, sizeof(brought));
        build(2);
        CHECK(!brought[0] && !brought[1]);
        share_groups_done(&fx.g);
        /* The group's threads moved to node 1: its members' notes say so at their scans. */
        fx.rec[1].shares->cpu_ns[0] = 0;
        fx.rec[1].shares->cpu_ns[1] = 5000;
        build(2);
        CHECK_INT(fx.g.objs[0].target, 1);
        CHECK(brought[0] && brought[1]);
}

/* The group's signature changes when a member comes or goes, and is 0 outside one. */
TEST(signature_follows_membership) {
        uint64_t two, three;

        note_shm(0, 10, &fx.cg[0], 100, 0, 200, 0, "default", "0-1", 0, 1000);
        note_shm(1, 11, &fx.cg[0], 100, 1, 100, 0, "default", "0-1", 0, 1000);
        note_shm(2, 12, &fx.cg[0], 100, 2, 100, 0, "default", "0-1", 0, 1000);
        build(2);
        two = share_groups_signature(&fx.g, 1000, 10);
        CHECK(two != 0);
        CHECK_INT(share_groups_signature(&fx.g, 1000, 11), two);
        CHECK_INT(share_groups_signature(&fx.g, 1000, 12), 0);
        CHECK_INT(share_groups_signature(&fx.g, 2000, 10), 0);
        share_groups_done(&fx.g);
        build(3);
        three = share_groups_signature(&fx.g, 1000, 10);
        CHECK(three != 0 && three != two);
}

/* No group without CPU time to say where it works, without a second watched member,
 * or for a process noted in an earlier life (another start time). */
TEST(no_group) {
        note_shm(0, 10, &fx.cg[0], 100, 0, 200, 0, "default", "0-1", 0, 0);
        note_shm(1, 11, &fx.cg[0], 100, 1, 100, 0, "default", "0-1", 0, 0);
        build(2);
        CHECK_INT(fx.g.n_groups, 1);
        CHECK_INT(fx.g.objs[0].target, -1);
        share_groups_done(&fx.g);

        note_shm(1, 11, &fx.cg[2], 100, 1, 100, 0, "default", "0-1", 0, 1000);
        build(2);
        CHECK_INT(fx.g.n_groups, 0);
        share_groups_done(&fx.g);

        note_shm(1, 11, &fx.cg[0], 100, 1, 100, 0, "default", "0-1", 0, 1000);
        fx.rec[1].starttime++;
        build(2);
        CHECK_INT(fx.g.n_groups, 0);
}

/* A note is only of shared mappings of an inode with pages resident, whether or not
 * others map them yet: a private heap is not noted. */
TEST(note_only_shared) {
        note(0, 10, &fx.cg[0], "55d000000000 default heap anon=10 dirty=10 N0=10 kernelpagesize_kB=4\n",
             "55d000000000-55d000100000 rw-p 00000000 00:00 0 [heap]\n", "0-1", 0, 1000);
        CHECK(fx.rec[0].shares == NULL);
        note(0, 10, &fx.cg[0],
             "7f0000000000 default file=/dev/zero\\040(deleted) dirty=1 mapped=1 mapmax=1 N0=1 kernelpagesize_kB=4\n",
             "7f0000000000-7f0000100000 rw-p 00000000 00:01 5 /dev/zero (deleted)\n", "0-1", 0, 1000);
        CHECK(fx.rec[0].shares == NULL);
        note(0, 10, &fx.cg[0],
             "7f0000000000 default file=/dev/zero\\040(deleted) dirty=1 mapped=1 mapmax=2 N0=1 kernelpagesize_kB=4\n",
             "7f0000000000-7f0000100000 rw-s 00002000 00:01 5 /dev/zero (deleted)\n", "0-1", 0, 1000);
        CHECK(fx.rec[0].shares && fx.rec[0].shares->n == 1);
        if (fx.rec[0].shares) {
                CHECK_INT(fx.rec[0].shares->notes[0].ino, 5);
                CHECK_INT(fx.rec[0].shares->notes[0].dev, 1);
                CHECK_INT(fx.rec[0].shares->notes[0].pgoff, 0x2000);
                CHECK_INT(fx.rec[0].shares->cpu_ns[1], 1000);
        }
}

/* What maps.c says of each kind of line: a shared mapping of an inode is an object; a
 * private one of no device and inode (anonymous, the heap, a stack) is anonymous; a
 * private file mapping, a shared one with no inode and a line whose fields do not parse
 * are neither. */
TEST(maps_names_objects) {
        const char *mp = "1000-2000 rw-s 00003000 00:01 42 /memfd:x (deleted)\n"
                         "3000-4000 rw-p 00000000 00:00 0 \n"
                         "5000-6000 rw-p 00000000 00:00 0 [heap]\n"
                         "7000-8000 r--p 00001000 08:01 77 /usr/lib/libc.so\n"
                         "9000-a000 rw-s 00000000 00:00 0 \n"
                         "b000-c000 rw-p zz 00:00 0\n";
        struct vma_range *r = NULL;
        size_t n = 0;

        CHECK_INT(maps_parse(mp, strlen(mp), &r, &n, NULL), 0);
        CHECK_INT(n, 6);
        if (n == 6) {
                CHECK(r[0].shared && !r[0].anon && r[0].ino == 42 && r[0].dev == 1 && r[0].pgoff == 0x3000);
                CHECK(!r[1].shared && r[1].anon);
                CHECK(!r[2].shared && r[2].anon);
                CHECK(!r[3].shared && !r[3].anon);
                CHECK(!r[4].shared && !r[4].anon);
                CHECK(!r[5].shared && !r[5].anon);
        }
        free(r);
}

/* A pre-fork server: a parent and two workers with the parent's table at the same
 * address, anonymous pages mapped by others (copy-on-write since fork()): one group
 * and one object named by that address, its offset the address; the same address in
 * a process of another owner is not theirs. An anonymous VMA whose pages nobody else
 * maps, and a private file mapping (its copied pages are anonymous too, but named by
 * the file), are not noted. */
TEST(copy_on_write_group) {
        const char *nm = "7f1000000000 default anon=256 dirty=256 mapmax=3 N0=256 kernelpagesize_kB=4\n"
                         "7f2000000000 default anon=8 dirty=8 N0=8 kernelpagesize_kB=4\n"
                         "7f3000000000 default file=/data anon=4 dirty=4 mapped=4 mapmax=3 N0=4 kernelpagesize_kB=4\n";
        const char *mp = "7f1000000000-7f1000100000 rw-p 00000000 00:00 0 \n"
                         "7f2000000000-7f2000100000 rw-p 00000000 00:00 0 \n"
                         "7f3000000000-7f3000100000 rw-p 00000000 08:01 77 /data\n";
        struct numa_maps *m = NULL;
        struct vma_range *r = NULL;
        struct plan_share *share;
        struct share_check chk;
        size_t n = 0;
        const struct share_group *gr;

        note(0, 20, &fx.cg[0], nm, mp, "0-1", 0, 10);
        note(1, 21, &fx.cg[0], nm, mp, "0-1", 0, 1000);
        note(2, 22, &fx.cg[0], nm, mp, "0-1", 0, 1000);
        note(3, 23, &fx.cg[1], nm, mp, "0-1", 1000, 0);
        CHECK(fx.rec[0].shares && fx.rec[0].shares->n == 1);
        if (fx.rec[0].shares) {
                CHECK(fx.rec[0].shares->notes[0].cow);
                CHECK_INT(fx.rec[0].shares->notes[0].ino, UINT64_C(0x7f1000000000));
                CHECK_INT(fx.rec[0].shares->notes[0].pgoff, UINT64_C(0x7f1000000000));
        }
        build(4);
        CHECK_INT(fx.g.n_objs, 1);
        gr = share_groups_of(&fx.g, 1000, 21);
        CHECK(gr && gr->n_pids == 3 && gr->hot_node == 1);
        CHECK(share_groups_of(&fx.g, 2000, 23) == NULL);
        if (fx.g.n_objs == 1) {
                CHECK(fx.g.objs[0].cow);
                CHECK_INT(fx.g.objs[0].target, 1);
        }
        CHECK_INT(numa_maps_parse(nm, strlen(nm), &m), 0);
        CHECK_INT(maps_parse(mp, strlen(mp), &r, &n, NULL), 0);
        share = share_groups_plan_input(&fx.g, 1000, 22, m, r, n);
        CHECK(share != NULL);
        if (share) {
                CHECK_INT(share[0].target, 1);
                CHECK_INT(share[1].target, -1);
                CHECK_INT(share[2].target, -1);
        }
        free(share);
        CHECK(share_groups_check(&fx.g, 1000, 22, UINT64_C(0x7f1000000000), &chk));
        CHECK_INT(chk.n_peers, 3);
        CHECK_INT(chk.own_pgoff, UINT64_C(0x7f1000000000));
        CHECK_INT(chk.peers[2].start, UINT64_C(0x7f1000000000));
        numa_maps_free(m);
        free(r);
}

DEFINE_TEST_MAIN_EACH(NULL, NULL, before, after)
