/* SPDX-License-Identifier: GPL-2.0-or-later */
/* What CPU follows memory decides from (lib/thread-load.h), on a fake /proc and a
 * stored 2n2c topology (CPUs 0-1 on node 0, 2-3 on node 1): each thread's busy
 * fraction over the window between two reads, its node and affinity, a reused thread
 * id, the thread cap, a process gone; each node's busy CPUs from /proc/stat. Then
 * both on this machine's own /proc. */
#include <fcntl.h>
#include <math.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include "clock.h"
#include "proc.h"
#include "test.h"
#include "tmptree.h"
#include "thread-load.h"
#include "topology.h"

static char tmpdir[] = "/tmp/test-thread-load-XXXXXX";
static char proc_root[256];
static struct topology *topo;

#define MS (UINT64_C(1000000))

/* Thread tid of pid: comm, start time, last CPU, run time (ns), Cpus_allowed_list. */
static void fake_thread(int pid, int tid, const char *comm, uint64_t starttime, int cpu, uint64_t runtime_ns,
                        const char *cpus) {
        char path[512], text[1024];

        snprintf(path, sizeof(path), "%s/%d", proc_root, pid);
        mkdir(path, 0755);
        snprintf(path, sizeof(path), "%s/%d/task", proc_root, pid);
        mkdir(path, 0755);
        snprintf(path, sizeof(path), "%s/%d/task/%d", proc_root, pid, tid);
        mkdir(path, 0755);
        snprintf(path, sizeof(path), "%s/%d/task/%d/stat", proc_root, pid, tid);
        snprintf(text, sizeof(text),
                 "%d (%s) S 1 1 1 0 -1 0 0 0 0 0 0 0 0 0 20 0 1 0 %" PRIu64
                 " 1000 10 18446744073709551615 1 2 3 0 0 0 0 0 0 0 0 0 17 %d 0 0 0 0 0 4 5 6 7 8 9 10 0\n",
                 tid, comm, starttime, cpu);
        tmptree_write(path, text);
        snprintf(path, sizeof(path), "%s/%d/task/%d/schedstat", proc_root, pid, tid);
        snprintf(text, sizeof(text), "%" PRIu64 " 5000 12\n", runtime_ns);
        tmptree_write(path, text);
        snprintf(path, sizeof(path), "%s/%d/task/%d/status", proc_root, pid, tid);
        snprintf(text, sizeof(text),
                 "Name:\t%s\nState:\tS (sleeping)\nTgid:\t%d\nPid:\t%d\nPPid:\t1\n"
                 "Uid:\t0\t0\t0\t0\nGid:\t0\t0\t0\t0\nThreads:\t2\nCpus_allowed_list:\t%s\n"
                 "Mems_allowed_list:\t0-1\n",
                 comm, pid, tid, cpus);
        tmptree_write(path, text);
}

static void remove_thread(int pid, int tid) {
        char path[512];
        const char *files[] = { "stat", "schedstat", "status" };

        for (size_t i = 0; i < ELEMENTSOF(files); i++) {
                snprintf(path, sizeof(path), "%s/%d/task/%d/%s", proc_root, pid, tid, files[i]);
                unlink(path);
        }
        snprintf(path, sizeof(path), "%s/%d/task/%d", proc_root, pid, tid);
        rmdir(path);
}

TEST(busy_over_the_window) {
        struct thread_load tl = {};
        const struct thread_load_thread *a, *b;
        nb_cpumask cpus;

        /* A comm that looks like more fields: only the last ')' ends it. */
        fake_thread(100, 100, "a) R 9 (b", 500, 1, 1000 * MS, "0-3");
        fake_thread(100, 101, "worker", 600, 2, 50 * MS, "2");
        CHECK_INT(thread_load_read_at(proc_root, 100, topo, &tl, 16, 10000 * MS), 0);
        CHECK_INT(tl.n_threads, 2);
        CHECK_INT(tl.window_ns, 0);
        CHECK(!tl.threads[0].measured && tl.threads[0].busy == 0);

        /* 1 s later: thread 100 ran 0.75 s on CPU 3 (node 1), 101 0.2 s on CPU 2. */
        fake_thread(100, 100, "a) R 9 (b", 500, 3, 1750 * MS, "0-3");
        fake_thread(100, 101, "worker", 600, 2, 250 * MS, "2");
        CHECK_INT(thread_load_read_at(proc_root, 100, topo, &tl, 16, 11000 * MS), 0);
        CHECK_INT(tl.window_ns, 1000 * MS);
        a = thread_load_find(&tl, 100);
        b = thread_load_find(&tl, 101);
        CHECK(a && a->measured && fabs(a->busy - 0.75) < 1e-9);
        CHECK(a && a->cpu == 3 && a->node == 1 && a->starttime == 500);
        CHECK(b && b->measured && fabs(b->busy - 0.2) < 1e-9);
        CHECK(b && b->node == 1);
        CHECK(thread_load_find(&tl, 102) == NULL);
        CHECK(thread_load_affinity(&tl, 0, &cpus) && cpumask_weight(&cpus) == 4);
        CHECK(thread_load_affinity(&tl, 1, &cpus) && cpumask_weight(&cpus) == 1 && cpumask_test(&cpus, 2));
        CHECK(!thread_load_affinity(&tl, 2, &cpus));
        thread_load_done(&tl);
        remove_thread(100, 100);
        remove_thread(100, 101);
}

/* A thread id reused by a new thread (another start time), a thread born in the window,
 * a thread gone: only the thread seen twice has a window. */
TEST(new_threads_have_no_window) {
        struct thread_load tl = {};
        const struct thread_load_thread *th;
        char path[512];

        fake_thread(200, 200, "main", 10, 0, 100 * MS, "0-3");
        fake_thread(200, 201, "old", 20, 0, 900 * MS, "0-3");
        fake_thread(200, 202, "leaves", 30, 0, 900 * MS, "0-3");
        CHECK_INT(thread_load_read_at(proc_root, 200, topo, &tl, 16, 1000 * MS), 0);
        fake_thread(200, 200, "main", 10, 0, 600 * MS, "0-3");
        fake_thread(200, 201, "new", 99, 0, 950 * MS, "0-3");   /* 201 again, started later */
        fake_thread(200, 203, "born", 98, 2, 300 * MS, "0-3");
        remove_thread(200, 202);
        /* Listed, gone by the time its files are read. */
        snprintf(path, sizeof(path), "%s/200/task/204", proc_root);
        mkdir(path, 0755);
        CHECK_INT(thread_load_read_at(proc_root, 200, topo, &tl, 16, 2000 * MS), 0);
        CHECK_INT(tl.n_threads, 3);
        th = thread_load_find(&tl, 200);
        CHECK(th && th->measured && fabs(th->busy - 0.5) < 1e-9);
        th = thread_load_find(&tl, 201);
        CHECK(th && !th->measured && th->busy == 0 && th->starttime == 99);
        th = thread_load_find(&tl, 203);
        CHECK(th && !th->measured && th->node == 1);
        CHECK(thread_load_find(&tl, 202) == NULL);
        thread_load_done(&tl);
        for (int tid = 200; tid <= 204; tid++)
                remove_thread(200, tid);
}

/* More threads than max_threads: -E2BIG, nothing kept; a process gone: -ESRCH. */
TEST(cap_and_gone) {
        struct thread_load tl = {};
        char path[512];

        for (int tid = 300; tid < 305; tid++)
                fake_thread(300, tid, "t", 1, 0, MS, "0-3");
        CHECK_INT(thread_load_read_at(proc_root, 300, topo, &tl, 5, 1000 * MS), 0);
        CHECK_INT(tl.n_threads, 5);
        fake_thread(300, 305, "t", 1, 0, MS, "0-3");
        CHECK_INT(thread_load_read_at(proc_root, 300, topo, &tl, 5, 2000 * MS), -E2BIG);
        CHECK(tl.n_threads == 0 && tl.threads == NULL && tl.read_ns == 0);
        /* Back under the cap: a new baseline, no window. */
        remove_thread(300, 305);
        CHECK_INT(thread_load_read_at(proc_root, 300, topo, &tl, 5, 3000 * MS), 0);
        CHECK_INT(tl.window_ns, 0);
        /* Every thread listed is gone when read: so is the process. */
        for (int tid = 300; tid < 305; tid++) {
                remove_thread(300, tid);
                snprintf(path, sizeof(path), "%s/300/task/%d", proc_root, tid);
                mkdir(path, 0755);
        }
        CHECK_INT(thread_load_read_at(proc_root, 300, topo, &tl, 5, 4000 * MS), -ESRCH);
        for (int tid = 300; tid < 305; tid++)
                remove_thread(300, tid);
        snprintf(path, sizeof(path), "%s/300/task", proc_root);
        rmdir(path);
        snprintf(path, sizeof(path), "%s/300", proc_root);
        rmdir(path);
        CHECK_INT(thread_load_read_at(proc_root, 300, topo, &tl, 5, 5000 * MS), -ESRCH);
        CHECK_INT(thread_load_read_at(proc_root, 999, topo, &tl, 5, 5000 * MS), -ESRCH);
        thread_load_done(&tl);
}

/* A stat file that does not parse fails the read, and the state kept stays. */
TEST(bad_stat_fails) {
        struct thread_load tl = {};
        char path[512];

        fake_thread(400, 400, "t", 1, 0, MS, "0-3");
        CHECK_INT(thread_load_read_at(proc_root, 400, topo, &tl, 4, 1000 * MS), 0);
        snprintf(path, sizeof(path), "%s/400/task/400/stat", proc_root);
        tmptree_write(path, "400 no parenthesis\n");
        CHECK_INT(thread_load_read_at(proc_root, 400, topo, &tl, 4, 2000 * MS), -EINVAL);
        CHECK(tl.n_threads == 1 && tl.read_ns == 1000 * MS);
        thread_load_done(&tl);
        remove_thread(400, 400);
}

/* /proc/stat: "cpuN user nice system idle iowait irq softirq steal guest guest_nice". */
static void fake_stat(const char *cpu_lines) {
        char path[512], text[4096];

        snprintf(path, sizeof(path), "%s/stat", proc_root);
        snprintf(text, sizeof(text), "cpu  1 2 3 4 5 6 7 8 0 0\n%sintr 12345 0 0 1\nctxt 999\nbtime 1\n", cpu_lines);
        tmptree_write(path, text);
}

TEST(cpu_load_per_node) {
        struct cpu_load cl = {};
        double busy[2] = { -1, -1 };

        fake_stat("cpu0 100 0 0 100 0 0 0 0 0 0\n"
                  "cpu1 100 0 0 100 0 0 0 0 0 0\n"
                  "cpu2 100 0 0 100 0 0 0 0 0 0\n"
                  "cpu3 100 0 0 100 0 0 0 0 0 0\n");
        CHECK_INT(thread_load_cpu_read(proc_root, topo, &cl, 1000 * MS, busy), 0);
        CHECK(busy[0] == 0 && busy[1] == 0);
        /* 100 ticks later: cpu0 all user; cpu1 half system, half iowait (idle); cpu2
         * 0.6 busy: nice, irq, softirq 10 each, steal 30 (the hypervisor's: not ours to
         * use), idle 40; guest is inside user already, not counted twice; cpu3 offline
         * (its line gone). */
        fake_stat("cpu0 200 0 0 100 0 0 0 0 0 0\n"
                  "cpu1 100 0 50 100 50 0 0 0 0 0\n"
                  "cpu2 100 10 0 140 0 10 10 30 40 0\n");
        CHECK_INT(thread_load_cpu_read(proc_root, topo, &cl, 2000 * MS, busy), 1);
        CHECK(fabs(busy[0] - 1.5) < 1e-9);
        CHECK(fabs(busy[1] - 0.6) < 1e-9);
        CHECK_INT(cl.window_ns, 1000 * MS);
        /* Each CPU's own fraction too; -1 for the one without a window. */
        CHECK(fabs(cl.frac[0] - 1.0) < 1e-9 && fabs(cl.frac[1] - 0.5) < 1e-9 && fabs(cl.frac[2] - 0.6) < 1e-9);
        CHECK(cl.frac[3] == -1);
        /* cpu3 back: seen in one read only, it counts nothing yet. */
        fake_stat("cpu0 200 0 0 200 0 0 0 0 0 0\n"
                  "cpu1 100 0 50 200 50 0 0 0 0 0\n"
                  "cpu2 200 10 0 140 0 10 10 30 40 0\n"
                  "cpu3 500 0 0 100 0 0 0 0 0 0\n");
        CHECK_INT(thread_load_cpu_read(proc_root, topo, &cl, 3000 * MS, busy), 1);
        CHECK(fabs(busy[0] - 0.0) < 1e-9);
        CHECK(fabs(busy[1] - 1.0) < 1e-9);
        /* A line that does not parse. */
        fake_stat("cpu0 2x0 0 0 200 0 0 0 0 0 0\n");
        CHECK_INT(thread_load_cpu_read(proc_root, topo, &cl, 4000 * MS, busy), -EINVAL);
        thread_load_cpu_done(&cl);
}

/* ---- this machine ---------------------------------------------------------------- */

static atomic_bool stop;

static atomic_int spin_tid;

static void *spin(void *arg) {
        (void) arg;
        atomic_store(&spin_tid, (int) gettid());
        while (!atomic_load(&stop))
                ;
        return NULL;
}

static void *sleeper(void *arg) {
        (void) arg;
        while (!atomic_load(&stop))
                usleep(10000);
        return NULL;
}

/* This process: a spinning thread is busy, a sleeping one is not (loose bounds: the
 * machine is shared). */
TEST(own_threads) {
        _cleanup_(topology_freep) struct topology *host = NULL;
        struct thread_load tl = {};
        pthread_t a, b;
        clockid_t spin_clock;
        uint64_t c0, c0b, c1a, c1;
        int narrowed = 0;
        struct timespec ts = { 0, 300 * 1000 * 1000 };

        if (topology_read("/sys", &host) < 0)
                TEST_SKIP("no NUMA topology in /sys");
        atomic_store(&stop, false);
        atomic_store(&spin_tid, 0);
        if (pthread_create(&a, NULL, spin, NULL) != 0 || pthread_create(&b, NULL, sleeper, NULL) != 0)
                abort();
        if (cpumask_weight(&host->online_cpus) > 1) {
                cpu_set_t one;

                CPU_ZERO(&one);
                CPU_SET(cpumask_next(&host->online_cpus, 0), &one);
                if (pthread_setaffinity_np(b, sizeof(one), &one) != 0)
                        abort();
        }
        if (pthread_getcpuclockid(a, &spin_clock) != 0)
                abort();
        while (atomic_load(&spin_tid) == 0)
                usleep(1000);
        CHECK_INT(thread_load_read(proc_root, getpid(), host, &tl, 16), -ESRCH);       /* not in the fake */
        CHECK_INT(thread_load_read("/proc", getpid(), host, &tl, 2), -E2BIG);
        /* The spinner's own CPU clock around each read bounds what the reads may see. */
        c0 = clock_now_ns(spin_clock);
        CHECK_INT(thread_load_read("/proc", getpid(), host, &tl, 16), 0);
        c0b = clock_now_ns(spin_clock);
        nanosleep(&ts, NULL);
        c1a = clock_now_ns(spin_clock);
        CHECK_INT(thread_load_read("/proc", getpid(), host, &tl, 16), 0);
        c1 = clock_now_ns(spin_clock);
        /* The affinity from the kernel is the one status shows (the sleeper's narrowed
         * to one CPU). */
        for (size_t i = 0; i < tl.n_threads; i++) {
                struct proc_status st;
                nb_cpumask cpus;

                CHECK(thread_load_affinity(&tl, i, &cpus));
                CHECK_INT(proc_read_task_status("/proc", getpid(), tl.threads[i].tid, &st), 0);
                CHECK(st.has_cpus_allowed && cpumask_equal(&cpus, &st.cpus_allowed));
                if (tl.threads[i].tid != getpid() && cpumask_weight(&cpus) == 1)
                        narrowed++;
        }
        if (cpumask_weight(&host->online_cpus) > 1)
                CHECK_INT(narrowed, 1);
        atomic_store(&stop, true);
        pthread_join(a, NULL);
        pthread_join(b, NULL);
        CHECK_INT(tl.n_threads, 3);
        CHECK(tl.window_ns >= 300 * MS);
        for (size_t i = 0; i < tl.n_threads; i++) {
                const struct thread_load_thread *th = &tl.threads[i];
                double ran_ns = th->busy * (double) tl.window_ns;

                CHECK(th->measured);
                /* The spinner's run time is its CPU clock's, give or take a scheduler
                 * tick (schedstat is updated at ticks): however loaded the machine. */
                if (th->tid == atomic_load(&spin_tid))
                        CHECK_MSG(ran_ns >= (double) (c1a - c0b) - 20e6 && ran_ns <= (double) (c1 - c0) + 20e6,
                                  "spinner ran %.1f ms, its clock %.1f-%.1f ms", ran_ns / 1e6,
                                  (double) (c1a - c0b) / 1e6, (double) (c1 - c0) / 1e6);
                else if (th->tid != getpid())   /* the main thread, which reads, is neither */
                        CHECK_MSG(th->busy < 0.1, "sleeper busy %.3f", th->busy);
        }
        thread_load_done(&tl);
}

TEST(own_cpus) {
        _cleanup_(topology_freep) struct topology *host = NULL;
        struct cpu_load cl = {};
        double *busy;
        double sum = 0;
        struct timespec ts = { 0, 100 * 1000 * 1000 };

        if (topology_read("/sys", &host) < 0)
                TEST_SKIP("no NUMA topology in /sys");
        busy = calloc(host->n_nodes, sizeof(*busy));
        if (!busy)
                abort();
        CHECK_INT(thread_load_cpu_read("/proc", host, &cl, clock_now_ns(CLOCK_MONOTONIC), busy), 0);
        nanosleep(&ts, NULL);
        CHECK_INT(thread_load_cpu_read("/proc", host, &cl, clock_now_ns(CLOCK_MONOTONIC), busy), 1);
        for (unsigned n = 0; n < host->n_nodes; n++) {
                CHECK(busy[n] >= 0 && busy[n] <= (double) cpumask_weight(&host->nodes[n].cpus));
                sum += busy[n];
        }
        CHECK(sum <= (double) cpumask_weight(&host->online_cpus));
        free(busy);
        thread_load_cpu_done(&cl);
}

static int intro(void) {
        if (!mkdtemp(tmpdir)) {
                perror("mkdtemp");
                return 1;
        }
        snprintf(proc_root, sizeof(proc_root), "%s/proc", tmpdir);
        mkdir(proc_root, 0755);
        if (topology_read(TEST_DATA_DIR "/sys/2n2c", &topo) < 0) {
                fprintf(stderr, "cannot read the 2n2c topology\n");
                return 1;
        }
        return 0;
}

static void outro(void) {
        topology_free(topo);
        tmptree_remove(tmpdir);
}

DEFINE_TEST_MAIN_FULL(intro, outro)
