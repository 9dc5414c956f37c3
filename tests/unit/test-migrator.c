/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The worker pool (daemon/migrator.h): pinned workers running jobs on this very process
 * (node 0, where everything already is), cancellation, the should_stop callback and
 * repinning after hotplug. Not run under valgrind (it does not know pidfd_open). */
#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>
#include "cleanup.h"
#include "clock.h"
#include "log.h"
#include "self-job.h"
#include "test.h"
#include "migrator.h"

TEST(no_service_cpus) {
        nb_cpumask none = {};
        struct migrator *m = NULL;

        CHECK_INT(migrator_new(&none, 0, 0, &m), -EINVAL);
        CHECK(m == NULL);
        migrator_free(NULL);
        CHECK_INT(migrator_n_workers(NULL), 0);
}

/* One worker on CPU 0, which exists everywhere; NB_CPUS_MAX - 1 exists nowhere: it is
 * skipped with a warning. */
static struct migrator *one_worker(void) {
        nb_cpumask cpus = {};
        struct migrator *m = NULL;
        int r;

        cpumask_set(&cpus, 0);
        cpumask_set(&cpus, NB_CPUS_MAX - 1);
        r = migrator_new(&cpus, 100, 4096, &m);
        CHECK_INT(r, 0);
        if (r < 0)
                return NULL;
        CHECK_INT(migrator_n_workers(m), 1);
        return m;
}

TEST(run_jobs) {
        struct migrator *m = one_worker();
        struct migrate_job jobs[4];
        struct migrate_range rg[4][2];
        char *area = self_area();

        if (!m || !area)
                return migrator_free(m);
        for (int i = 0; i < 4; i++)
                setup_self_job(&jobs[i], rg[i], area);
        jobs[3].pid = dead_pid();
        CHECK_INT(migrator_run(m, jobs, 4), 0);
        for (int i = 0; i < 3; i++) {
                CHECK_INT(jobs[i].error, 0);
                CHECK_INT(jobs[i].pages[MIG_ALREADY], TOUCHED / page_size());
        }
        CHECK_INT(jobs[3].error, -ESRCH);
        CHECK_INT(migrator_run(m, jobs, 0), 0);
        CHECK_INT(migrator_run(m, NULL, 1), -EINVAL);
        migrator_free(m);
}

TEST(cancel_is_sticky) {
        struct migrator *m = one_worker();
        struct migrate_job jobs[2];
        struct migrate_range rg[2][2];
        char *area = self_area();

        if (!m || !area)
                return migrator_free(m);
        migrator_set_limits(m, 0, 0);
        migrator_cancel(m);
        for (int run = 0; run < 2; run++) {
                setup_self_job(&jobs[run], rg[run], area);
                CHECK_INT(migrator_run(m, &jobs[run], 1), 0);
                CHECK_INT(jobs[run].error, -ECANCELED);
        }
        migrator_free(m);
}

static unsigned stop_calls;

static bool stop_now(void *ctx) {
        stop_calls++;
        return *(bool *) ctx;
}

TEST(should_stop_cancels) {
        struct migrator *m = one_worker();
        struct migrate_job job;
        struct migrate_range rg[2];
        bool stop = false;
        char *area = self_area();

        if (!m || !area)
                return migrator_free(m);
        /* Asked at least once per run, on this thread; false lets the jobs run. */
        migrator_set_should_stop(m, stop_now, &stop);
        stop_calls = 0;
        setup_self_job(&job, rg, area);
        CHECK_INT(migrator_run(m, &job, 1), 0);
        CHECK(stop_calls >= 1);
        CHECK_INT(job.error, 0);
        /* true cancels, like migrator_cancel(): the next jobs stop at once. */
        stop = true;
        setup_self_job(&job, rg, area);
        CHECK_INT(migrator_run(m, &job, 1), 0);
        setup_self_job(&job, rg, area);
        CHECK_INT(migrator_run(m, &job, 1), 0);
        CHECK_INT(job.error, -ECANCELED);
        migrator_free(m);
}

TEST(two_workers) {
        nb_cpumask two = {};
        struct migrator *m = NULL;
        struct migrate_job jobs[4];
        struct migrate_range rg[4][2];
        char *area = self_area();

        if (sysconf(_SC_NPROCESSORS_ONLN) < 2)
                TEST_SKIP("one CPU online");
        cpumask_set(&two, 0);
        cpumask_set(&two, 1);
        if (!area || migrator_new(&two, 0, 0, &m) < 0)
                TEST_SKIP("no worker on CPUs 0 and 1 (affinity)");
        CHECK_INT(migrator_n_workers(m), 2);
        /* Jobs of one process side by side on both workers. */
        for (int i = 0; i < 4; i++)
                setup_self_job(&jobs[i], rg[i], area);
        CHECK_INT(migrator_run(m, jobs, 4), 0);
        for (int i = 0; i < 4; i++)
                CHECK_INT(jobs[i].pages[MIG_ALREADY], TOUCHED / page_size());
        migrator_free(m);
}

/* The CPUs the one thread of this process other than the main thread may run on, as
 * /proc shows them ("Cpus_allowed_list"), into buf; false if there is not exactly one. */
static bool worker_cpus(char *buf, size_t size) {
        _cleanup_closedir_ DIR *d = opendir("/proc/self/task");
        char path[PATH_MAX], line[256];
        unsigned others = 0;
        struct dirent *de;

        if (!d)
                return false;
        while ((de = readdir(d))) {
                _cleanup_fclose_ FILE *f = NULL;

                if (de->d_name[0] == '.' || atoi(de->d_name) == getpid())
                        continue;
                others++;
                snprintf(path, sizeof(path), "/proc/self/task/%s/status", de->d_name);
                f = fopen(path, "re");
                while (f && fgets(line, sizeof(line), f))
                        if (sscanf(line, "Cpus_allowed_list: %255s", buf) == 1 && strlen(buf) < size)
                                break;
        }
        return others == 1;
}

TEST(repin_after_hotplug) {
        nb_cpumask cpu0 = {}, cpu1 = {}, both = {};
        struct migrator *m = NULL;
        char cpus[256] = "";

        if (sysconf(_SC_NPROCESSORS_ONLN) < 2)
                TEST_SKIP("one CPU online");
        cpumask_set(&cpu0, 0);
        cpumask_set(&cpu1, 1);
        cpumask_set(&both, 0);
        cpumask_set(&both, 1);
        if (migrator_new(&cpu0, 0, 0, &m) < 0)
                TEST_SKIP("no worker on CPU 0 (affinity)");
        CHECK(worker_cpus(cpus, sizeof(cpus)));
        CHECK_STR(cpus, "0");
        /* CPU 0 "went offline": the worker runs on the online service CPUs. */
        CHECK_INT(migrator_repin(m, &cpu1), 1);
        CHECK(worker_cpus(cpus, sizeof(cpus)));
        CHECK_STR(cpus, "1");
        /* Back: on its own CPU again. */
        CHECK_INT(migrator_repin(m, &both), 0);
        CHECK(worker_cpus(cpus, sizeof(cpus)));
        CHECK_STR(cpus, "0");
        migrator_free(m);
}

/* --- a fake move_pages(2) ---------------------------------------------------------
 * This machine may have one node: nothing can move. With fake_kernel set, every
 * move_pages(2) query says the page is on node 1, and a move call (with nodes) moves
 * every page to its target, its time and the base pages it moved recorded. With
 * fake_thp set too, the addresses from FAKE_BASE on are backed by huge pages of
 * executor_pmd_size() (transparent or hugetlb alike): moving any address of one moves
 * it whole, and from then on a query of any of its addresses says the target. The
 * executor's kernel-batch breaks get -EFAULT and move nothing. Every
 * other syscall(2) is the real one (linked with -Wl,--wrap=syscall). */
#define FAKE_BASE UINT64_C(0x100000000000)
#define FAKE_HUGE_MAX 1024
static bool fake_kernel, fake_thp;
static uint64_t move_call_ns[512], move_call_pages[512];
static unsigned n_move_calls;
static uint8_t fake_huge_moved[FAKE_HUGE_MAX];

/* The huge page of addr (an index into fake_huge_moved), or -1 outside them. */
static long fake_huge(uint64_t addr) {
        uint64_t i = (addr - FAKE_BASE) / executor_pmd_size();
        return fake_thp && addr >= FAKE_BASE && i < FAKE_HUGE_MAX ? (long) i : -1;
}

/* One move call: each address to its target; the base pages it moved. */
static uint64_t fake_move(unsigned long n, void *const *addrs, const int *nodes, int *status) {
        uint64_t pages = 0;

        for (unsigned long i = 0; i < n; i++) {
                long h = fake_huge((uint64_t) (uintptr_t) addrs[i]);
                /* A kernel batch's end: no VMA there, as the real kernel says
                 * (test-executor.c). */
                if (addrs[i] == executor_batch_break()) {
                        status[i] = -EFAULT;
                        continue;
                }
                status[i] = nodes[i];
                if (h < 0)
                        pages++;
                else if (!fake_huge_moved[h]) {
                        fake_huge_moved[h] = 1;
                        pages += executor_pmd_size() / page_size();
                }
        }
        return pages;
}

long __real_syscall(long number, ...);
long __wrap_syscall(long number, ...);
long __wrap_syscall(long number, ...) {
        va_list ap;
        long a[6];

        va_start(ap, number);
        for (int i = 0; i < 6; i++)
                a[i] = va_arg(ap, long);
        va_end(ap);
        if (__atomic_load_n(&fake_kernel, __ATOMIC_RELAXED) && number == SYS_move_pages) {
                unsigned long n = (unsigned long) a[1];
                void *const *addrs = (void *const *) a[2];
                const int *nodes = (const int *) a[3];
                int *status = (int *) a[4];
                struct timespec ts;
                uint64_t pages;
                unsigned k;

                if (!nodes) {
                        for (unsigned long i = 0; i < n; i++) {
                                long h = fake_huge((uint64_t) (uintptr_t) addrs[i]);
                                status[i] = h >= 0 && fake_huge_moved[h] ? 0 : 1;
                        }
                        return 0;
                }
                pages = fake_move(n, addrs, nodes, status);
                k = __atomic_fetch_add(&n_move_calls, 1, __ATOMIC_RELAXED);
                clock_gettime(CLOCK_MONOTONIC, &ts);
                if (k < ELEMENTSOF(move_call_ns)) {
                        move_call_ns[k] = (uint64_t) ts.tv_sec * 1000000000u + (uint64_t) ts.tv_nsec;
                        move_call_pages[k] = pages;
                }
                return 0;
        }
        return __real_syscall(number, a[0], a[1], a[2], a[3], a[4], a[5]);
}

/* Runs job alone on a worker on CPU 0 under rate_mb_s and batch_pages, on the fake
 * kernel (huge pages with thp); the move calls in n_move_calls, move_call_*. Returns
 * the largest number of base pages one call moved, 0 when no worker could run. */
static uint64_t fake_run(struct migrate_job *job, uint64_t rate_mb_s, uint64_t batch_pages, bool thp) {
        struct migrator *m = NULL;
        nb_cpumask cpu0 = {};
        uint64_t most = 0;

        cpumask_set(&cpu0, 0);
        if (migrator_new(&cpu0, rate_mb_s, batch_pages, &m) < 0)
                return 0;
        n_move_calls = 0;
        memset(fake_huge_moved, 0, sizeof(fake_huge_moved));
        fake_thp = thp;
        __atomic_store_n(&fake_kernel, true, __ATOMIC_RELAXED);
        CHECK_INT(migrator_run(m, job, 1), 0);
        __atomic_store_n(&fake_kernel, false, __ATOMIC_RELAXED);
        fake_thp = false;
        migrator_free(m);
        CHECK_INT(job->error, 0);
        for (unsigned i = 0; i < n_move_calls && i < ELEMENTSOF(move_call_pages); i++)
                if (move_call_pages[i] > most)
                        most = move_call_pages[i];
        return most;
}

static struct migrate_job fake_job(struct migrate_range *rg, uint64_t bytes, uint64_t page) {
        *rg = (struct migrate_range) { FAKE_BASE, FAKE_BASE + bytes, page };
        return (struct migrate_job) {
                .pid = getpid(), .pidfd = -1, .starttime = self_starttime(), .target_node = 0,
                .ranges = rg, .n_ranges = 1, .cgroup = "/test.slice",
        };
}

/* Under a byte rate limit, one move call moves about the bucket's burst (100 ms of the
 * rate) at most, one huge page at least: the bucket is charged after each call, and a
 * call of the default 65,536 pages (256 MiB) went through at full speed at 4 MB/s, the
 * limit held only by the minute of sleep after it. Base pages at 4 MB/s: 2 MiB a call
 * (the burst, 0.4 MiB, is less than a huge page); huge pages, transparent or hugetlb,
 * at 40 MB/s: two of them (4 MiB). Before, a call moved the whole job. */
TEST(rate_limit_bounds_each_move_call) {
        uint64_t ps = page_size(), pmd = executor_pmd_size(), most;
        struct migrate_range rg;
        struct migrate_job job;

        if (pmd != 512 * ps)
                TEST_SKIP("the case is written for 4 KiB pages and 2 MiB huge pages");
        job = fake_job(&rg, 4 * MB, ps);
        most = fake_run(&job, 4, 0, false);
        if (n_move_calls == 0)
                TEST_SKIP("no worker on CPU 0 (affinity)");
        printf("4 KiB pages at 4 MB/s: %u move calls, at most %" PRIu64 " pages\n", n_move_calls, most);
        CHECK_INT(job.pages[MIG_MOVED], 4 * MB / ps);
        CHECK_MSG(most <= pmd / ps, "%" PRIu64 " pages in one call at 4 MB/s", most);

        job = fake_job(&rg, 32 * MB, ps);
        most = fake_run(&job, 40, 0, true);
        printf("THP at 40 MB/s: %u move calls, at most %" PRIu64 " pages\n", n_move_calls, most);
        CHECK_INT(job.pages[MIG_MOVED], 32 * MB / ps);
        CHECK_MSG(most <= 2 * pmd / ps, "%" PRIu64 " pages of THP in one call at 40 MB/s", most);

        job = fake_job(&rg, 32 * MB, pmd);
        most = fake_run(&job, 40, 0, true);
        printf("2 MiB hugetlb pages at 40 MB/s: %u move calls, at most %" PRIu64 " pages\n", n_move_calls, most);
        CHECK_INT(job.pages[MIG_MOVED], 32 * MB / ps);
        CHECK_MSG(most <= 2 * pmd / ps, "%" PRIu64 " pages of hugetlb in one call at 40 MB/s", most);
}

/* batch_pages counts base pages, huge pages by their weight: at batch_pages = 1024
 * (4 MiB) a call moves two 2 MiB pages at most, THP or hugetlb, without a rate limit.
 * A huge-page round took a third of the batch in huge pages (341 of them, 682 MiB),
 * and hugetlb pages counted one each. */
TEST(batch_pages_counts_base_pages) {
        uint64_t ps = page_size(), pmd = executor_pmd_size(), most;
        struct migrate_range rg;
        struct migrate_job job;

        if (pmd != 512 * ps)
                TEST_SKIP("the case is written for 4 KiB pages and 2 MiB huge pages");
        job = fake_job(&rg, 32 * MB, ps);
        most = fake_run(&job, 0, 1024, true);
        if (n_move_calls == 0)
                TEST_SKIP("no worker on CPU 0 (affinity)");
        CHECK_INT(job.pages[MIG_MOVED], 32 * MB / ps);
        CHECK_MSG(most <= 1024, "%" PRIu64 " pages of THP in one call at batch_pages = 1024", most);
        job = fake_job(&rg, 32 * MB, pmd);
        most = fake_run(&job, 0, 1024, true);
        CHECK_INT(job.pages[MIG_MOVED], 32 * MB / ps);
        CHECK_MSG(most <= 1024, "%" PRIu64 " pages of hugetlb in one call at batch_pages = 1024", most);
}

/* Each move call's wall time lands in the job's own histogram (summed on the event
 * loop, jobs.c), one observation per call that moves, none for the queries; a later
 * run starts it afresh. */
TEST(move_call_times_in_the_job) {
        uint64_t ps = page_size(), bucketed = 0;
        struct migrate_range rg;
        struct migrate_job job = fake_job(&rg, 8 * MB, ps);

        job.move_calls.count = 99;   /* what a run must not keep */
        (void) fake_run(&job, 0, 256, false);
        if (n_move_calls == 0)
                TEST_SKIP("no worker on CPU 0 (affinity)");
        CHECK_INT(job.pages[MIG_MOVED], 8 * MB / ps);
        CHECK_INT(job.move_calls.count, n_move_calls);
        CHECK(n_move_calls >= 8 * MB / ps / 256);
        for (size_t i = 0; i <= histogram_move_call_bounds.n; i++)
                bucketed += job.move_calls.bucket[i];
        CHECK_INT(bucketed, n_move_calls);
        CHECK(job.move_calls.sum_ns > 0 && job.move_calls.sum_ns <= job.wall_ns);
}

/* The defaults stay fast: 256 MiB of THP in one move call without a rate limit, and in
 * three at the default 1024 MB/s (100 ms of it is 102 MiB: 51 huge pages a call); of
 * base pages, in six (three rounds of heads, then the rest of their chunks). */
TEST(default_batches_stay_large) {
        uint64_t ps = page_size(), pmd = executor_pmd_size();
        struct migrate_range rg;
        struct migrate_job job;

        if (pmd != 512 * ps)
                TEST_SKIP("the case is written for 4 KiB pages and 2 MiB huge pages");
        job = fake_job(&rg, 256 * MB, ps);
        (void) fake_run(&job, 0, 0, true);
        if (n_move_calls == 0)
                TEST_SKIP("no worker on CPU 0 (affinity)");
        printf("256 MiB of THP, unlimited: %u move call(s)\n", n_move_calls);
        CHECK_INT(job.pages[MIG_MOVED], 256 * MB / ps);
        CHECK_INT(n_move_calls, 1);
        job = fake_job(&rg, 256 * MB, ps);
        (void) fake_run(&job, 1024, 0, true);
        printf("256 MiB of THP at 1024 MB/s: %u move call(s)\n", n_move_calls);
        CHECK_INT(job.pages[MIG_MOVED], 256 * MB / ps);
        CHECK(n_move_calls <= 3);
        /* Base pages: each round's heads are a call of their own. */
        job = fake_job(&rg, 256 * MB, ps);
        (void) fake_run(&job, 1024, 0, false);
        printf("256 MiB of 4 KiB pages at 1024 MB/s: %u move call(s)\n", n_move_calls);
        CHECK_INT(job.pages[MIG_MOVED], 256 * MB / ps);
        CHECK(n_move_calls <= 6);
}

/* 60 pages in 60 ranges, one page per call (batch_pages = 1): 60 move calls, each of
 * which would interrupt every CPU. At 50 calls a second (a burst of 5) they take 1.1 s
 * at least, and no second holds more than 55; unbounded, they took a millisecond. */
TEST(move_calls_per_second_bounded) {
        struct migrator *m = NULL;
        struct migrate_range rg[60];
        struct migrate_job job;
        nb_cpumask cpu0 = {};
        uint64_t ps = page_size(), pmd = executor_pmd_size(), elapsed;
        unsigned most = 0;

        cpumask_set(&cpu0, 0);
        if (migrator_new(&cpu0, 0, 1, &m) < 0)
                TEST_SKIP("no worker on CPU 0 (affinity)");
        migrator_set_call_rate(m, 50);
        for (size_t i = 0; i < ELEMENTSOF(rg); i++) {
                uint64_t a = UINT64_C(0x100000000000) + i * pmd + ps;   /* no whole huge-page chunk */
                rg[i] = (struct migrate_range) { a, a + ps, ps };
        }
        job = (struct migrate_job) {
                .pid = getpid(), .pidfd = -1, .starttime = self_starttime(), .target_node = 0,
                .ranges = rg, .n_ranges = ELEMENTSOF(rg), .cgroup = "/test.slice",
        };
        n_move_calls = 0;
        __atomic_store_n(&fake_kernel, true, __ATOMIC_RELAXED);
        CHECK_INT(migrator_run(m, &job, 1), 0);
        __atomic_store_n(&fake_kernel, false, __ATOMIC_RELAXED);
        migrator_free(m);

        CHECK_INT(job.error, 0);
        CHECK_INT(job.pages[MIG_MOVED], ELEMENTSOF(rg));
        CHECK_INT(n_move_calls, ELEMENTSOF(rg));
        if (n_move_calls != ELEMENTSOF(rg))
                return;
        elapsed = move_call_ns[n_move_calls - 1] - move_call_ns[0];
        for (unsigned i = 0; i < n_move_calls; i++) {
                unsigned in_window = 0;
                for (unsigned k = i; k < n_move_calls && move_call_ns[k] < move_call_ns[i] + 1000000000u; k++)
                        in_window++;
                if (in_window > most)
                        most = in_window;
        }
        printf("60 move calls in %.3f s, at most %u in one second\n", elapsed / 1e9, most);
        CHECK(elapsed >= UINT64_C(1050000000));
        CHECK(most <= 56);
}

/* The run's time budget holds while a job waits at the calls-per-second gate: at 1
 * call a second (no burst), the 60 calls of the job would take a minute, each wait a
 * second; the run ends soon after its budget of 300 ms, within the first wait, the job
 * cancelled with pages not moved. */
TEST(run_budget_ends_a_wait_at_the_call_gate) {
        struct migrator *m = NULL;
        struct migrate_range rg[60];
        struct migrate_job job;
        nb_cpumask cpu0 = {};
        uint64_t ps = page_size(), pmd = executor_pmd_size(), t0, took;

        cpumask_set(&cpu0, 0);
        if (migrator_new(&cpu0, 0, 1, &m) < 0)
                TEST_SKIP("no worker on CPU 0 (affinity)");
        migrator_set_call_rate(m, 1);
        migrator_set_run_budget(m, 300 * NSEC_PER_MSEC);
        for (size_t i = 0; i < ELEMENTSOF(rg); i++) {
                uint64_t a = UINT64_C(0x100000000000) + i * pmd + ps;
                rg[i] = (struct migrate_range) { a, a + ps, ps };
        }
        job = (struct migrate_job) {
                .pid = getpid(), .pidfd = -1, .starttime = self_starttime(), .target_node = 0,
                .ranges = rg, .n_ranges = ELEMENTSOF(rg), .cgroup = "/test.slice",
        };
        n_move_calls = 0;
        __atomic_store_n(&fake_kernel, true, __ATOMIC_RELAXED);
        t0 = clock_now_ns(CLOCK_MONOTONIC);
        CHECK_INT(migrator_run(m, &job, 1), 0);
        took = clock_now_ns(CLOCK_MONOTONIC) - t0;
        __atomic_store_n(&fake_kernel, false, __ATOMIC_RELAXED);
        CHECK_INT(migrator_runs_cut(m), 1);
        migrator_free(m);

        CHECK_INT(job.error, -ECANCELED);
        CHECK(job.pages[MIG_MOVED] < ELEMENTSOF(rg));
        /* Polled every 100 ms, the gate's wait in slices of 50 ms. */
        CHECK_MSG(took < 800 * NSEC_PER_MSEC, "the run took %" PRIu64 " ms with a budget of 300 ms",
                  took / NSEC_PER_MSEC);
}

/* The run's time budget: a run of many slow jobs (one page per move_pages call) ends
 * soon after its budget, the jobs not started yet cancelled, and the next run is not:
 * the budget is per run, unlike migrator_cancel(). */
TEST(run_budget_cuts_a_run_and_only_that_run) {
        enum { N = 2000 };
        struct migrator *m = one_worker();
        _cleanup_free_ struct migrate_job *jobs = calloc(N, sizeof(*jobs));
        _cleanup_free_ struct migrate_range (*rg)[2] = calloc(N, sizeof(*rg));
        char *area = self_area();
        unsigned done = 0, cancelled = 0;
        uint64_t t0, took;

        if (!m || !area || !jobs || !rg)
                return migrator_free(m);
        /* One address per call: each job is some 2,500 move_pages(2) calls, the run
         * five million (1.6 s here without a budget). */
        migrator_set_limits(m, 0, 1);
        migrator_set_run_budget(m, 50 * NSEC_PER_MSEC);
        CHECK_INT(migrator_runs_cut(m), 0);
        for (int i = 0; i < N; i++)
                setup_self_job(&jobs[i], rg[i], area);
        t0 = clock_now_ns(CLOCK_MONOTONIC);
        CHECK_INT(migrator_run(m, jobs, N), 0);
        took = clock_now_ns(CLOCK_MONOTONIC) - t0;
        for (int i = 0; i < N; i++) {
                done += jobs[i].error == 0;
                cancelled += jobs[i].error == -ECANCELED;
        }
        CHECK_INT(migrator_runs_cut(m), 1);
        CHECK_MSG(cancelled > 0 && done + cancelled == N, "%u job(s) done, %u cancelled of %d", done, cancelled, N);
        /* Polled every 100 ms, and the job in flight stops at its next call. */
        CHECK_MSG(took < 2 * NSEC_PER_SEC, "the run took %" PRIu64 " ms with a budget of 50 ms", took / NSEC_PER_MSEC);
        CHECK_INT(migrator_run_elapsed_ns(m), 0);

        /* The next run is whole again. */
        migrator_set_limits(m, 0, 0);
        setup_self_job(&jobs[0], rg[0], area);
        CHECK_INT(migrator_run(m, jobs, 1), 0);
        CHECK_INT(jobs[0].error, 0);
        CHECK_INT(jobs[0].pages[MIG_ALREADY], TOUCHED / page_size());
        CHECK_INT(migrator_runs_cut(m), 1);
        migrator_free(m);
}

DEFINE_TEST_MAIN()
