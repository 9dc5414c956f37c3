/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The placer (daemon/placer.h) end to end on this process's own threads: two threads
 * of the test, described by a fake /proc (their run time and last CPU made up, their
 * pid, tids and start times real) on a fake topology of two nodes of one CPU each
 * (CPU 0 on node 0, CPU 1 on node 1), one thread busy on node 1, one idle, a process
 * whose memory is all on node 0 and cannot move to node 1. The round places the
 * process on node 0, both threads narrowed (their real affinity
 * becomes CPU 0, the originals saved first), an opt-out gives them back, a "crash"
 * (the placer freed without stopping) is recovered by the next placer, a clean stop
 * gives them back, and advise places nothing; a kernel that refuses the change (EPERM,
 * as for another user's threads without CAP_SYS_NICE) gets a back-off, not a retry
 * and a log line a thread each round. Processes forked by the placed threads (real
 * ones, described by the fake /proc and the fake cgroup.procs) are followed and given
 * back with the placement, their parent alive or not; one in another cgroup, one
 * started before the placement, are not. Needs CPUs 0 and 1 online. Each case starts
 * from the same state (case_start()), whatever ran before it. */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <signal.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <stddef.h>
#include <unistd.h>
#include "cg-records.h"
#include "log.h"
#include "placer.h"
#include "proc.h"
#include "proc-records.h"
#include "test.h"
#include "tmptree.h"

static char tmpdir[PATH_MAX - 64];
static char proc_root[PATH_MAX], sys_root[PATH_MAX], cg_root[PATH_MAX], run_dir[PATH_MAX], state[PATH_MAX];
static struct topology *topo;
static pthread_t threads[2];
static pid_t tids[2];
static atomic_int started, stop;
static uint64_t runtime_ns;   /* each thread's made-up run time, raised between rounds */
static uint64_t stat_ticks;   /* /proc/stat's, raised between rounds */
static bool cpu0_busy;        /* /proc/stat: CPU 0 busy all the time (else idle) */
static pid_t fake_daemon;     /* a process whose one thread runs on CPU 0 all the time, 0: none */
static pid_t self_pid;        /* placer_env's: the daemon (0: this process) */
static uint64_t daemon_runtime_ns, daemon_step_ns; /* fake_daemon's thread's run time, raised by the step */
static atomic_int fork_req[2];   /* thread i forks a process that waits, then clears it */
static atomic_int forked[2];     /* the pid it forked */

/* Processes forked by the test's threads, in the fake /proc (their one thread busy,
 * last on CPU 0) and in /x's cgroup.procs, whatever their /proc/PID/cgroup says. */
struct kid {
        pid_t pid;
        const char *cgroup_line;
};
static struct kid kids[4];
static size_t n_kids;

static void fake_sys(void) {
        tmptree_write_at(sys_root, "devices/system/cpu/online", "0-1\n");
        tmptree_write_at(sys_root, "devices/system/node/online", "0-1\n");
        tmptree_write_at(sys_root, "devices/system/node/has_memory", "0-1\n");
        tmptree_write_at(sys_root, "devices/system/node/has_cpu", "0-1\n");
        for (int n = 0; n < 2; n++) {
                char rel[128], text[256];

                snprintf(rel, sizeof(rel), "devices/system/node/node%d/cpulist", n);
                snprintf(text, sizeof(text), "%d\n", n);
                tmptree_write_at(sys_root, rel, text);
                snprintf(rel, sizeof(rel), "devices/system/node/node%d/distance", n);
                tmptree_write_at(sys_root, rel, n == 0 ? "10 20\n" : "20 10\n");
                snprintf(rel, sizeof(rel), "devices/system/node/node%d/meminfo", n);
                snprintf(text, sizeof(text), "Node %d MemTotal: 1048576 kB\nNode %d MemFree: 917504 kB\n", n, n);
                tmptree_write_at(sys_root, rel, text);
        }
}

/* The real stat of pid (or of its thread tid) with field 39 (the last CPU) set to cpu. */
static void fake_stat(const char *rel, pid_t pid, pid_t tid, int cpu) {
        struct proc_stat st;
        char text[512];

        if ((tid ? proc_read_task_stat("/proc", pid, tid, &st) : proc_read_stat("/proc", pid, &st)) < 0)
                abort();
        snprintf(text, sizeof(text),
                 "%d (t) S 1 1 1 0 -1 0 0 0 0 0 0 0 0 0 20 0 1 0 %" PRIu64
                 " 1000 10 18446744073709551615 1 2 3 0 0 0 0 0 0 0 0 0 17 %d 0 0 0 0 0 4 5 6 7 8 9 10 0\n",
                 tid ? tid : pid, st.starttime, cpu);
        tmptree_write_at(proc_root, rel, text);
}

/* Writes the fake /proc: the process, its two threads (thread 0 busy, last on CPU 1,
 * node 1; thread 1 idle), their run times, /proc/stat. */
static const char *cgroup_line = "0::/x\n";  /* its /proc/PID/cgroup */

/* pid (a real one, for its start time) with one thread, pid itself, busy on CPU 0. */
static void fake_busy_process(pid_t pid) {
        char rel[256], text[256];

        snprintf(rel, sizeof(rel), "%d/task/%d", pid, pid);
        tmptree_mkdirs_at(proc_root, rel);
        snprintf(rel, sizeof(rel), "%d/stat", pid);
        fake_stat(rel, pid, 0, 0);
        snprintf(rel, sizeof(rel), "%d/task/%d/stat", pid, pid);
        fake_stat(rel, pid, pid, 0);
        snprintf(rel, sizeof(rel), "%d/task/%d/schedstat", pid, pid);
        snprintf(text, sizeof(text), "%" PRIu64 " 0 1\n", daemon_runtime_ns);
        tmptree_write_at(proc_root, rel, text);
        snprintf(rel, sizeof(rel), "%d/task/%d/status", pid, pid);
        snprintf(text, sizeof(text), "Name:\tt\nTgid:\t%d\nPid:\t%d\nCpus_allowed_list:\t0\n", pid, pid);
        tmptree_write_at(proc_root, rel, text);
}

static int cpus_of(pid_t tid);

static void fake_kid(const struct kid *kd) {
        pid_t pid = kd->pid;
        int m = cpus_of(pid);
        char rel[256], text[256];

        snprintf(rel, sizeof(rel), "%d/task/%d", pid, pid);
        tmptree_mkdirs_at(proc_root, rel);
        snprintf(rel, sizeof(rel), "%d/stat", pid);
        fake_stat(rel, pid, 0, 0);
        snprintf(rel, sizeof(rel), "%d/cgroup", pid);
        tmptree_write_at(proc_root, rel, kd->cgroup_line);
        snprintf(rel, sizeof(rel), "%d/task/%d/stat", pid, pid);
        fake_stat(rel, pid, pid, 0);
        snprintf(rel, sizeof(rel), "%d/task/%d/schedstat", pid, pid);
        snprintf(text, sizeof(text), "%" PRIu64 " 0 1\n", runtime_ns);
        tmptree_write_at(proc_root, rel, text);
        snprintf(rel, sizeof(rel), "%d/task/%d/status", pid, pid);
        snprintf(text, sizeof(text), "Name:\tt\nTgid:\t%d\nPid:\t%d\nCpus_allowed_list:\t%s\n", pid, pid,
                 m == 1 ? "0" : m == 2 ? "1" : "0-1");
        tmptree_write_at(proc_root, rel, text);
}

static void fake_proc(void) {
        pid_t pid = getpid();
        char rel[256], text[512];
        size_t o;

        snprintf(rel, sizeof(rel), "%d/task", pid);
        tmptree_mkdirs_at(proc_root, rel);
        snprintf(rel, sizeof(rel), "%d/stat", pid);
        fake_stat(rel, pid, 0, 0);
        snprintf(rel, sizeof(rel), "%d/cgroup", pid);
        tmptree_write_at(proc_root, rel, cgroup_line);
        for (int i = 0; i < 2; i++) {
                snprintf(rel, sizeof(rel), "%d/task/%d", pid, tids[i]);
                tmptree_mkdirs_at(proc_root, rel);
                snprintf(rel, sizeof(rel), "%d/task/%d/stat", pid, tids[i]);
                fake_stat(rel, pid, tids[i], 1 - i);
                snprintf(rel, sizeof(rel), "%d/task/%d/schedstat", pid, tids[i]);
                snprintf(text, sizeof(text), "%" PRIu64 " 0 1\n", i == 0 ? runtime_ns : 0);
                tmptree_write_at(proc_root, rel, text);
                snprintf(rel, sizeof(rel), "%d/task/%d/status", pid, tids[i]);
                snprintf(text, sizeof(text), "Name:\tt\nTgid:\t%d\nPid:\t%d\nCpus_allowed_list:\t0-1\n", pid, tids[i]);
                tmptree_write_at(proc_root, rel, text);
        }
        /* Both CPUs idle (all of their ticks idle), or CPU 0 busy. */
        snprintf(text, sizeof(text), "cpu  0 0 0 %" PRIu64 " 0 0 0 0 0 0\ncpu0 %" PRIu64 " 0 0 %" PRIu64
                 " 0 0 0 0 0 0\ncpu1 0 0 0 %" PRIu64 " 0 0 0 0 0 0\n", 2 * stat_ticks, cpu0_busy ? stat_ticks : 0,
                 cpu0_busy ? 0 : stat_ticks, stat_ticks);
        tmptree_write_at(proc_root, "stat", text);
        if (fake_daemon)
                fake_busy_process(fake_daemon);
        o = (size_t) snprintf(text, sizeof(text), "%d\n", (int) pid);
        for (size_t k = 0; k < n_kids; k++) {
                fake_kid(&kids[k]);
                o += (size_t) snprintf(text + o, sizeof(text) - o, "%d\n", (int) kids[k].pid);
        }
        tmptree_write_at(cg_root, "x/cgroup.procs", text);
}

/* A window: thread 0 busy (far more run time than wall time passes), no other
 * load. */
static void next_window(void) {
        runtime_ns += UINT64_C(100) * 1000000000;
        daemon_runtime_ns += daemon_step_ns;
        stat_ticks += 1000;
        fake_proc();
        usleep(20000);
}

static void *idle_thread(void *arg) {
        int i = (int) (intptr_t) arg;
        cpu_set_t both;

        CPU_ZERO(&both);
        CPU_SET(0, &both);
        CPU_SET(1, &both);
        if (sched_setaffinity(0, sizeof(both), &both) < 0)
                abort();
        tids[i] = (pid_t) syscall(SYS_gettid);
        atomic_fetch_add(&started, 1);
        while (!atomic_load(&stop)) {
                if (atomic_load(&fork_req[i])) {
                        pid_t c = fork();
                        if (c == 0)
                                for (;;)
                                        pause();
                        atomic_store(&forked[i], c);
                        atomic_store(&fork_req[i], 0);
                }
                usleep(1000);
        }
        return NULL;
}

/* A process forked by thread i (inheriting its affinity), in the fake /proc with the
 * cgroup line given. */
static pid_t fork_kid(int i, const char *kid_cgroup) {
        atomic_store(&fork_req[i], 1);
        while (atomic_load(&fork_req[i]))
                usleep(1000);
        kids[n_kids++] = (struct kid) { .pid = atomic_load(&forked[i]), .cgroup_line = kid_cgroup };
        fake_proc();
        return kids[n_kids - 1].pid;
}

static void kill_kids(void) {
        for (size_t k = 0; k < n_kids; k++) {
                kill(kids[k].pid, SIGKILL);
                waitpid(kids[k].pid, NULL, 0);
        }
        n_kids = 0;
        fake_proc();
}

static int cpus_of(pid_t tid) {
        cpu_set_t s;
        int mask = 0;

        if (sched_getaffinity(tid, sizeof(s), &s) < 0)
                return -1;
        for (int c = 0; c < 8; c++)
                if (CPU_ISSET(c, &s))
                        mask |= 1 << c;
        return mask;
}

static struct cg_rec cg = { .path = (char *) "/x", .mode = CG_MODE_PLACE };
static struct proc_rec rec;
static struct proc_rec *recs[1] = { &rec };
static struct proc_records procs = { .v = recs, .n = 1 };
static uint64_t node_bytes[2] = { 128 << 20, 0 }, stuck_away[2] = { 0, 128 << 20 };
static uint64_t tick;
static struct cgroup_rule rules[] = { { .path = (char *) "/x", .mode = CG_MODE_PLACE } };
static struct nb_config cfg = { .cgroups = rules, .n_cgroups = 1 };

static void round_(struct placer *pl) {
        struct placer_env env = { .cfg = &cfg, .topo = topo, .proc_root = proc_root, .cgroup_root = cg_root,
                                  .self_pid = self_pid };

        tick++;
        rec.seen_tick = tick;
        next_window();
        placer_round(pl, &env, &procs, tick, tick * 1000);
}

static bool both(int mask) {
        return cpus_of(tids[0]) == mask && cpus_of(tids[1]) == mask;
}

TEST(placed_on_the_node_of_stuck_memory) {
        struct placer *pl;

        CHECK_INT(placer_new(state, proc_root, &pl), 0);
        for (int i = 0; i < 3 && !both(1); i++)
                round_(pl);
        CHECK_MSG(both(1), "threads not narrowed to CPU 0: %#x %#x", cpus_of(tids[0]), cpus_of(tids[1]));
        CHECK_INT(rec.place->placed, 0);
        CHECK_INT(rec.place->reason, TP_R_MEMORY_STUCK);
        CHECK_INT(placer_threads_held(pl), 2);
        CHECK(placer_thread_held(pl, getpid(), tids[0]));
        CHECK_INT(placer_counters(pl)->placements, 1);
        /* A later round keeps it: nothing changes, nothing counted again. */
        round_(pl);
        CHECK(both(1));
        CHECK_INT(placer_counters(pl)->placements, 1);

        /* Opt-out (the cgroup now balance): given back at the next round. */
        cg.mode = CG_MODE_BALANCE;
        round_(pl);
        CHECK_MSG(both(3), "not given back on opt-out: %#x %#x", cpus_of(tids[0]), cpus_of(tids[1]));
        CHECK_INT(placer_counters(pl)->undone[PLACER_UNDO_OPT_OUT], 2);
        CHECK_INT(placer_counters(pl)->placements_undone, 1);
        CHECK_INT(placer_threads_held(pl), 0);
        placer_free(pl);
}

/* Checked again right before the change: a process that left its cgroup since it was
 * read, or whose cgroup's setting is no longer place, is not placed. */
TEST(not_placed_after_leaving_the_cgroup) {
        struct placer *pl;

        CHECK_INT(placer_new(state, proc_root, &pl), 0);
        cgroup_line = "0::/y\n";
        for (int i = 0; i < 3; i++)
                round_(pl);
        CHECK(both(3));
        CHECK_INT(placer_counters(pl)->placements, 0);
        cgroup_line = "0::/x\n";
        rules[0].mode = CG_MODE_BALANCE;
        for (int i = 0; i < 3; i++)
                round_(pl);
        CHECK(both(3));
        CHECK_INT(placer_counters(pl)->placements, 0);
        rules[0].mode = CG_MODE_PLACE;
        round_(pl);
        CHECK(both(1));
        placer_stop(pl);
        placer_free(pl);
}

TEST(crash_recovered_by_the_next_start) {
        struct placer *pl, *next;

        CHECK_INT(placer_new(state, proc_root, &pl), 0);
        for (int i = 0; i < 3 && !both(1); i++)
                round_(pl);
        CHECK(both(1));
        placer_free(pl);  /* as a kill -9 leaves it: nothing given back */
        CHECK(both(1));
        CHECK_INT(placer_new(state, proc_root, &next), 0);
        CHECK_MSG(both(3), "not recovered at start: %#x %#x", cpus_of(tids[0]), cpus_of(tids[1]));
        CHECK_INT(placer_counters(next)->undone[PLACER_UNDO_RECOVERED], 2);
        placer_free(next);
}

TEST(clean_stop_gives_back) {
        struct placer *pl;

        CHECK_INT(placer_new(state, proc_root, &pl), 0);
        for (int i = 0; i < 3 && !both(1); i++)
                round_(pl);
        CHECK(both(1));
        placer_stop(pl);
        CHECK_MSG(both(3), "not given back at stop: %#x %#x", cpus_of(tids[0]), cpus_of(tids[1]));
        CHECK_INT(placer_counters(pl)->undone[PLACER_UNDO_STOP], 2);
        /* SIGTERM stops the placer in the middle of a tick (before the workers are
         * waited for): the rest of the tick, its round included, narrows nothing. */
        for (int i = 0; i < 3; i++)
                round_(pl);
        CHECK_MSG(both(3), "narrowed again after the stop: %#x %#x", cpus_of(tids[0]), cpus_of(tids[1]));
        CHECK_INT(placer_counters(pl)->placements, 1);
        placer_free(pl);
}

TEST(advise_places_nothing) {
        struct placer *pl;

        cg.mode = CG_MODE_ADVISE;
        CHECK_INT(placer_new(state, proc_root, &pl), 0);
        for (int i = 0; i < 3; i++)
                round_(pl);
        CHECK(both(3));
        CHECK_INT(rec.place->action, TP_PLACE);   /* decided, not acted on */
        CHECK_INT(placer_counters(pl)->would_place, 1);
        CHECK_INT(placer_counters(pl)->placements, 0);
        placer_free(pl);
}

static void set_cpus(pid_t tid, int mask) {
        cpu_set_t s;

        CPU_ZERO(&s);
        for (int c = 0; c < 2; c++)
                if (mask & (1 << c))
                        CPU_SET(c, &s);
        if (sched_setaffinity(tid, sizeof(s), &s) < 0)
                abort();
}

/* A process forked by a placed thread, in the cgroup, is followed at the next round
 * and given back at opt-out with its parent's threads. One forked before the placement
 * and pinned to the placed CPU itself, and one that moved to another cgroup (still
 * listed in /x's cgroup.procs when it was read), are not. */
TEST(children_followed_and_given_back_at_opt_out) {
        struct placer *pl;
        pid_t before, child, moved;

        before = fork_kid(0, "0::/x\n");
        set_cpus(before, 1);            /* its own choice: exactly the CPU we will set */
        usleep(30000);                  /* 3 clock ticks: it started before the placement */
        CHECK_INT(placer_new(state, proc_root, &pl), 0);
        for (int i = 0; i < 3 && !both(1); i++)
                round_(pl);
        CHECK(both(1));
        child = fork_kid(0, "0::/x\n");
        moved = fork_kid(1, "0::/y\n");
        CHECK_INT(cpus_of(child), 1);   /* inherited */
        CHECK_INT(cpus_of(moved), 1);
        round_(pl);
        CHECK(placer_thread_held(pl, child, child));
        CHECK(!placer_thread_held(pl, moved, moved));
        CHECK(!placer_thread_held(pl, before, before));
        CHECK_INT(placer_threads_held(pl), 3);

        cg.mode = CG_MODE_BALANCE;
        round_(pl);
        CHECK_MSG(both(3), "not given back on opt-out: %#x %#x", cpus_of(tids[0]), cpus_of(tids[1]));
        CHECK_MSG(cpus_of(child) == 3, "the child not given back on opt-out: %#x", cpus_of(child));
        CHECK_INT(cpus_of(moved), 1);   /* not ours */
        CHECK_INT(cpus_of(before), 1);
        CHECK_INT(placer_counters(pl)->undone[PLACER_UNDO_OPT_OUT], 3);
        CHECK_INT(placer_threads_held(pl), 0);
        placer_free(pl);
}

/* The child is a process of the round itself (its own record, busy): its inherited
 * mask is not the application's choice (not pinned). Its parent exits (forgotten), and
 * the child is still given back when its cgroup opts out. */
TEST(child_of_an_exited_parent_given_back) {
        struct placer *pl;
        struct proc_rec crec, *two[2];
        struct proc_records both_procs = { .v = two, .n = 2 };
        struct proc_stat st;
        pid_t child;

        CHECK_INT(placer_new(state, proc_root, &pl), 0);
        for (int i = 0; i < 3 && !both(1); i++)
                round_(pl);
        CHECK(both(1));
        child = fork_kid(0, "0::/x\n");
        if (proc_read_stat("/proc", child, &st) < 0)
                abort();
        crec = (struct proc_rec) {
                .pid = child, .starttime = st.starttime, .pidfd = -1, .cg = &cg, .scans = 1,
                .node_bytes = node_bytes, .stuck_away = stuck_away, .hot_node = -1, .target_node = -1,
        };
        strcpy(crec.comm, "child");
        two[child > rec.pid] = &crec;
        two[child < rec.pid] = &rec;
        for (int i = 0; i < 2; i++) {
                struct placer_env env = { .cfg = &cfg, .topo = topo, .proc_root = proc_root, .cgroup_root = cg_root };

                tick++;
                rec.seen_tick = crec.seen_tick = tick;
                next_window();
                placer_round(pl, &env, &both_procs, tick, tick * 1000);
        }
        CHECK(placer_thread_held(pl, child, child));
        CHECK(crec.place && crec.place->skip == PLACER_DECIDED);
        CHECK_MSG(crec.place && crec.place->reason != TP_R_PINNED, "the child's inherited mask taken for its own");

        /* the parent exits: forgotten; its threads' masks are the test's to put back */
        rec.exited = true;
        placer_departed(pl, proc_root, &rec);
        CHECK(placer_thread_held(pl, child, child));
        cg.mode = CG_MODE_BALANCE;
        {
                struct placer_env env = { .cfg = &cfg, .topo = topo, .proc_root = proc_root, .cgroup_root = cg_root };

                tick++;
                crec.seen_tick = tick;
                next_window();
                placer_round(pl, &env, &both_procs, tick, tick * 1000);
        }
        CHECK_MSG(cpus_of(child) == 3, "the child not given back on opt-out: %#x", cpus_of(child));
        CHECK_INT(placer_threads_held(pl), 0);
        placer_free(pl);
        placer_proc_free(crec.place);
}

/* A followed child gets its original back at a clean stop, and at the next start after
 * a crash. */
TEST(children_given_back_at_stop_and_after_a_crash) {
        struct placer *pl, *next;
        pid_t child;

        CHECK_INT(placer_new(state, proc_root, &pl), 0);
        for (int i = 0; i < 3 && !both(1); i++)
                round_(pl);
        CHECK(both(1));
        child = fork_kid(1, "0::/x\n");
        round_(pl);
        CHECK(placer_thread_held(pl, child, child));
        placer_free(pl);                /* as a kill -9 leaves it */
        CHECK_INT(cpus_of(child), 1);
        CHECK_INT(placer_new(state, proc_root, &next), 0);
        CHECK_MSG(cpus_of(child) == 3, "the child not recovered at start: %#x", cpus_of(child));
        CHECK(both(3));
        CHECK_INT(placer_counters(next)->undone[PLACER_UNDO_RECOVERED], 3);
        placer_proc_free(rec.place);
        rec.place = NULL;

        for (int i = 0; i < 3 && !both(1); i++)
                round_(next);
        CHECK(both(1));
        child = fork_kid(1, "0::/x\n");
        round_(next);
        CHECK(placer_thread_held(next, child, child));
        placer_stop(next);
        CHECK_MSG(cpus_of(child) == 3, "the child not given back at stop: %#x", cpus_of(child));
        CHECK(both(3));
        placer_free(next);
}

/* CPU 0 (node 0, where the memory is stuck) is busy all the time. When all of that is
 * the daemon's own thread, it is no load and the threads are placed there. When the
 * daemon is not what runs there, or runs there beside another (15 ms of its thread in
 * a window of at least 20 ms: the rest of the busy CPU is someone else's, who may
 * have wanted the daemon's share), node 0 has no room. */
TEST(own_load_not_counted) {
        struct placer *pl;

        cpu0_busy = true;
        self_pid = getppid();  /* not in the fake /proc yet: nothing of the daemon's known */
        CHECK_INT(placer_new(state, proc_root, &pl), 0);
        for (int i = 0; i < 3; i++)
                round_(pl);
        CHECK(both(3));
        CHECK_INT(placer_counters(pl)->placements, 0);
        CHECK_INT(rec.place->reason, TP_R_NO_ROOM);
        fake_daemon = self_pid;
        daemon_step_ns = UINT64_C(15) * 1000000;
        for (int i = 0; i < 4; i++)
                round_(pl);
        CHECK_MSG(both(3), "placed on a CPU the daemon shares: %#x %#x", cpus_of(tids[0]), cpus_of(tids[1]));
        CHECK_INT(rec.place->reason, TP_R_NO_ROOM);
        daemon_step_ns = UINT64_C(100) * 1000000000;
        for (int i = 0; i < 4 && !both(1); i++)
                round_(pl);
        CHECK_MSG(both(1), "not placed beside the daemon's own load: %#x %#x", cpus_of(tids[0]), cpus_of(tids[1]));
        CHECK_INT(rec.place->placed, 0);
        placer_stop(pl);
        placer_free(pl);
}

/* This thread's sched_setaffinity() fails with EPERM from now on (seccomp), as the
 * kernel's does for another user's thread without CAP_SYS_NICE. */
static int refuse_setaffinity(void) {
#ifdef __x86_64__
        struct sock_filter f[] = {
                BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, arch)),
                BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, AUDIT_ARCH_X86_64, 0, 3),
                BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
                BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_sched_setaffinity, 0, 1),
                BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | EPERM),
                BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
        };
        struct sock_fprog prog = { .len = sizeof(f) / sizeof(f[0]), .filter = f };

        if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0 || prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog) < 0)
                return -errno;
        return 0;
#else
        return -EOPNOTSUPP;
#endif
}

static unsigned refusal_lines;

static void count_refusals(int level, int error, const struct log_fields *fields, const char *msg) {
        if (strstr(msg, "refused to change the affinity"))
                refusal_lines++;
}

/* In a child (the seccomp filter stays with it), with two threads of its own: */
static int refused_child(void) {
        struct proc_stat st;
        struct placer *pl;
        uint64_t first_until;

        atomic_store(&started, 0);
        for (int i = 0; i < 2; i++)
                pthread_create(&threads[i], NULL, idle_thread, (void *) (intptr_t) i);
        while (atomic_load(&started) < 2)
                usleep(1000);
        if (proc_read_stat("/proc", getpid(), &st) < 0)
                return 10;
        rec.pid = getpid();
        rec.starttime = st.starttime;
        rec.place = NULL;
        fake_proc();
        log_set_sink(count_refusals);
        if (refuse_setaffinity() < 0)
                return 77;
        if (placer_new(state, proc_root, &pl) < 0)
                return 11;
        for (int i = 0; i < 3 && placer_counters(pl)->not_permitted == 0; i++)
                round_(pl);
        /* Refused: nothing narrowed, counted by thread, one line for the process. */
        if (placer_counters(pl)->not_permitted != 2 || !both(3) || placer_counters(pl)->failed != 0)
                return 12;
        if (refusal_lines != 1 || placer_threads_held(pl) != 0)
                return 13;
        first_until = rec.place->denied_until_ms;
        if (first_until != rec.place->decided_ms + PLACER_DENIED_MIN_MS)
                return 14;
        /* Within the back-off: not decided, not tried, nothing logged. */
        for (int i = 0; i < 5; i++)
                round_(pl);
        if (rec.place->skip != PLACER_NOT_PERMITTED || placer_counters(pl)->not_permitted != 2 || refusal_lines != 1)
                return 15;
        /* After it: tried once more, refused, the back-off doubled. */
        tick = first_until / 1000;
        for (int i = 0; i < 3 && placer_counters(pl)->not_permitted == 2; i++)
                round_(pl);
        if (placer_counters(pl)->not_permitted != 4 || refusal_lines != 2)
                return 16;
        if (rec.place->denied_until_ms != rec.place->decided_ms + 2 * PLACER_DENIED_MIN_MS)
                return 17;
        placer_free(pl);
        return 0;
}

TEST(refused_backs_off) {
        int status;
        pid_t pid = fork();

        if (pid == 0)
                _exit(refused_child());
        CHECK(waitpid(pid, &status, 0) == pid && WIFEXITED(status));
        if (WEXITSTATUS(status) == 77)
                TEST_SKIP("no seccomp filter here");
        CHECK_INT(WEXITSTATUS(status), 0);
}

/* The record of this process as a scan leaves it: unplaced. */
static uint64_t self_starttime;

static void fresh_rec(void) {
        rec = (struct proc_rec) {
                .pid = getpid(), .starttime = self_starttime, .pidfd = -1, .cg = &cg, .scans = 1,
                .node_bytes = node_bytes, .stuck_away = stuck_away, .hot_node = -1, .target_node = -1,
        };
        strcpy(rec.comm, "test-placer");
}

/* Before each case: the state every case starts from, whatever ran before it. The
 * cgroup, its rule and the process's cgroup line say place; no record placed, no
 * state file, no child, no daemon load, CPU 0 idle, the clocks at 0; both threads on
 * both CPUs; the fake /proc written anew. */
static void case_start(void) {
        tick = runtime_ns = stat_ticks = daemon_runtime_ns = daemon_step_ns = 0;
        cpu0_busy = false;
        fake_daemon = self_pid = 0;
        cgroup_line = "0::/x\n";
        cg.mode = rules[0].mode = CG_MODE_PLACE;
        fresh_rec();
        n_kids = 0;
        set_cpus(tids[0], 3);
        set_cpus(tids[1], 3);
        tmptree_remove(run_dir);
        tmptree_remove(proc_root);
        tmptree_mkdirs(proc_root);
        fake_proc();
}

/* After each case, a failed one too: its children gone, its placement freed. */
static void case_end(void) {
        kill_kids();
        placer_proc_free(rec.place);
        rec.place = NULL;
}

static int intro(void) {
        cpu_set_t s;
        struct proc_stat st;

        if (sched_getaffinity(0, sizeof(s), &s) < 0 || !CPU_ISSET(0, &s) || !CPU_ISSET(1, &s)) {
                printf("SKIP: needs CPUs 0 and 1\n");
                return 77;
        }
        if (tmptree_new(tmpdir, sizeof(tmpdir), "test-placer") < 0)
                return 1;
        snprintf(proc_root, sizeof(proc_root), "%s/proc", tmpdir);
        snprintf(sys_root, sizeof(sys_root), "%s/sys", tmpdir);
        snprintf(cg_root, sizeof(cg_root), "%s/cg", tmpdir);
        snprintf(run_dir, sizeof(run_dir), "%s/run", tmpdir);
        snprintf(state, sizeof(state), "%s/run/affinity", tmpdir);
        tmptree_write_at(cg_root, "x/cpuset.cpus.effective", "0-1\n");
        fake_sys();
        if (topology_read(sys_root, &topo) < 0)
                abort();
        for (int i = 0; i < 2; i++)
                pthread_create(&threads[i], NULL, idle_thread, (void *) (intptr_t) i);
        while (atomic_load(&started) < 2)
                usleep(1000);
        if (proc_read_stat("/proc", getpid(), &st) < 0)
                abort();
        self_starttime = st.starttime;
        cfg.place_hold_ms = 60000;
        cfg.place_thread_cost_kb = 16384;
        cfg.scan_min_ms = 1000;
        return 0;
}

static void outro(void) {
        atomic_store(&stop, 1);
        for (int i = 0; i < 2; i++)
                pthread_join(threads[i], NULL);
        topology_free(topo);
        tmptree_remove(tmpdir);
}

DEFINE_TEST_MAIN_EACH(intro, outro, case_start, case_end)
