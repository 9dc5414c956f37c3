/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The migration executor without root and without a second node: jobs on this very
 * process targeting node 0 (where everything already is), the pid-reuse guard and the
 * per-page classification. Moving pages between nodes is tested in
 * tests/vm/test-migrate.sh. */
#include <errno.h>
#include <signal.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>
#include "log.h"
#include "migrate-internal.h"
#include "migrate.h"
#include "parse.h"
#include "proc.h"
#include "test.h"

#define MB (UINT64_C(1) << 20)

static uint64_t self_starttime(void) {
        struct proc_stat st;
        return proc_read_stat("/proc", getpid(), &st) < 0 ? 0 : st.starttime;
}

static uint64_t total(const struct migrate_job *j) {
        uint64_t t = 0;
        for (unsigned c = 0; c < _MIG_CLASS_MAX; c++)
                t += j->pages[c];
        return t;
}

static void test_classify(void) {
        static const struct { int status; bool was_on_target; enum migrate_class c; } table[] = {
                { 1, false, MIG_MOVED },
                { 1, true, MIG_ALREADY },
                { 0, false, MIG_BUSY },          /* on another node after the call */
                { -EBUSY, false, MIG_BUSY },
                { -EAGAIN, false, MIG_BUSY },
                { -ENOMEM, false, MIG_BUSY },
                { INT32_MIN, false, MIG_BUSY },  /* slot never written */
                { -ENOENT, false, MIG_GONE },
                { -EFAULT, false, MIG_GONE },
                { -EACCES, false, MIG_REFUSED },
                { -EPERM, false, MIG_REFUSED },
                { -EINVAL, false, MIG_REFUSED },
                { -ENODEV, false, MIG_REFUSED },
                { -EIO, false, MIG_REFUSED },    /* anything unknown: do not retry blindly */
        };
        for (size_t i = 0; i < ELEMENTSOF(table); i++) {
                enum migrate_class c = migrate_classify(table[i].status, 1, table[i].was_on_target);
                if (c != table[i].c)
                        fprintf(stderr, "classify(%d): %s, expected %s\n", table[i].status,
                                migrate_class_name(c), migrate_class_name(table[i].c));
                CHECK_INT(c, table[i].c);
        }
        CHECK_STR(migrate_class_name(MIG_MOVED), "moved");
        CHECK_STR(migrate_class_name(MIG_REFUSED), "refused");
        CHECK(migrate_class_name(_MIG_CLASS_MAX) == NULL);
}

/* Splitting a job among workers: the parts cover exactly the job's ranges, in order,
 * cut only on 2 MiB boundaries, roughly equal, never below the minimum. */
static void check_cover(const struct migrate_job *job, const struct migrate_job *parts, size_t n) {
        size_t ri = 0;
        uint64_t pos = job->ranges[0].start;

        for (size_t p = 0; p < n; p++) {
                CHECK_INT(parts[p].pid, job->pid);
                CHECK_INT(parts[p].target_node, job->target_node);
                CHECK(parts[p].userdata == job->userdata);
                for (size_t k = 0; k < parts[p].n_ranges; k++) {
                        const struct migrate_range *r = &parts[p].ranges[k];
                        CHECK(ri < job->n_ranges);
                        if (ri >= job->n_ranges)
                                return;
                        CHECK_INT(r->start, pos);
                        CHECK_INT(r->page_size, job->ranges[ri].page_size);
                        CHECK(r->end > r->start && r->end <= job->ranges[ri].end);
                        CHECK(r->end == job->ranges[ri].end || r->end % (2 * MB) == 0);
                        pos = r->end;
                        if (pos == job->ranges[ri].end && ++ri < job->n_ranges)
                                pos = job->ranges[ri].start;
                }
        }
        CHECK_INT(ri, job->n_ranges);
}

static void test_split(void) {
        struct migrate_range rg[] = {
                { 0x7f0000000000, 0x7f0000000000 + 512 * MB, 4096 },       /* 512 MiB */
                { 0x7f1000001000, 0x7f1000001000 + 64 * MB, 4096 },        /* unaligned start */
                { 0x7f2000000000, 0x7f2000000000 + 8 * MB, 4096 },
        };
        struct migrate_job job = { .pid = 42, .pidfd = -1, .starttime = 7, .target_node = 1, .ranges = rg,
                                   .n_ranges = 3, .max_pages = 1000, .userdata = &job };
        struct migrate_job *parts = NULL;
        size_t n = 0;
        uint64_t sum_max = 0;

        CHECK_INT(migrate_job_split(&job, 4, 64 * MB, &parts, &n), 4);
        CHECK_INT(n, 4);
        check_cover(&job, parts, n);
        for (size_t p = 0; p < n; p++) {
                uint64_t bytes = 0;
                for (size_t k = 0; k < parts[p].n_ranges; k++)
                        bytes += parts[p].ranges[k].end - parts[p].ranges[k].start;
                /* 584 MiB in four: 146 MiB rounded up to 2 MiB, the last takes the rest. */
                CHECK(bytes >= 140 * MB && bytes <= 150 * MB);
                sum_max += parts[p].max_pages;
                free(parts[p].ranges);
        }
        CHECK(sum_max >= 997 && sum_max <= 1000);
        free(parts);

        /* Too small to split into 4 with 256 MiB minimum: 2 parts. */
        CHECK_INT(migrate_job_split(&job, 4, 256 * MB, &parts, &n), 2);
        check_cover(&job, parts, n);
        for (size_t p = 0; p < n; p++)
                free(parts[p].ranges);
        free(parts);

        /* One part: a copy. */
        job.n_ranges = 1;
        CHECK_INT(migrate_job_split(&job, 1, 0, &parts, &n), 1);
        CHECK_INT(parts[0].n_ranges, 1);
        CHECK_INT(parts[0].ranges[0].start, rg[0].start);
        CHECK_INT(parts[0].ranges[0].end, rg[0].end);
        CHECK_INT(parts[0].max_pages, 1000);
        free(parts[0].ranges);
        free(parts);
}

/* 8 MiB touched, then 1 MiB reserved but never touched. */
#define TOUCHED (8 * MB)
#define UNTOUCHED MB

static void setup_self_job(struct migrate_job *job, struct migrate_range *rg, char *area) {
        *job = (struct migrate_job) {
                .pid = getpid(),
                .pidfd = -1,
                .starttime = self_starttime(),
                .target_node = 0,
                .ranges = rg,
                .n_ranges = 2,
                .cgroup = "/test.slice",
        };
        rg[0] = (struct migrate_range) { (uintptr_t) area, (uintptr_t) area + TOUCHED + UNTOUCHED, 4096 };
        /* A hole (below mmap_min_addr: never mapped): -EFAULT in the query, not counted. */
        rg[1] = (struct migrate_range) { 0x1000, 0x1000 + MB, 4096 };
}

static void test_self(char *area) {
        struct migrate_job job;
        struct migrate_range rg[2];
        int r;

        setup_self_job(&job, rg, area);
        CHECK(job.starttime != 0);
        /* Small batches: the query chunks are sized by the batch; make it take many. */
        r = migrate_job_execute(&job, 1000, NULL, NULL, NULL);
        CHECK_INT(r, 0);
        CHECK_INT(job.error, 0);
        CHECK_INT(job.pages[MIG_ALREADY], TOUCHED / 4096);
        CHECK_INT(job.pages[MIG_MOVED], 0);
        CHECK_INT(total(&job), TOUCHED / 4096);
        CHECK(job.wall_ns > 0);
        CHECK(job.cpu_ns > 0);

        /* With a pidfd of our own, and max_pages (it limits pages passed, not seen). */
        setup_self_job(&job, rg, area);
        job.pidfd = (int) syscall(SYS_pidfd_open, getpid(), 0);
        CHECK(job.pidfd >= 0);
        job.max_pages = 1;
        CHECK_INT(migrate_job_execute(&job, 0, NULL, NULL, NULL), 0);
        CHECK_INT(job.pages[MIG_ALREADY], TOUCHED / 4096);
        close(job.pidfd);

        /* The sampled process is not the one holding the pid: nothing is done. */
        setup_self_job(&job, rg, area);
        job.starttime += 1;
        CHECK_INT(migrate_job_execute(&job, 0, NULL, NULL, NULL), -ESRCH);
        CHECK_INT(job.error, -ESRCH);
        CHECK_INT(total(&job), 0);

        /* Bad input. */
        setup_self_job(&job, rg, area);
        rg[0].start += 1;
        CHECK_INT(migrate_job_execute(&job, 0, NULL, NULL, NULL), -EINVAL);
        CHECK_INT(total(&job), 0);
        setup_self_job(&job, rg, area);
        job.target_node = -1;
        CHECK_INT(migrate_job_execute(&job, 0, NULL, NULL, NULL), -EINVAL);

        /* Cancelled before it starts: stops with -ECANCELED. */
        {
                volatile int cancel = 1;
                setup_self_job(&job, rg, area);
                CHECK_INT(migrate_job_execute(&job, 0, &cancel, NULL, NULL), -ECANCELED);
                CHECK_INT(job.pages[MIG_MOVED], 0);
        }
}

static pid_t dead_pid(void) {
        pid_t pid = fork();
        if (pid == 0)
                _exit(0);
        waitpid(pid, NULL, 0);
        return pid;
}

static void test_gone(void) {
        struct migrate_range rg = { 0x100000, 0x200000, 4096 };
        struct migrate_job job = {
                .pid = dead_pid(), .pidfd = -1, .starttime = 1, .target_node = 0,
                .ranges = &rg, .n_ranges = 1,
        };
        CHECK_INT(migrate_job_execute(&job, 0, NULL, NULL, NULL), -ESRCH);
        CHECK_INT(total(&job), 0);
}

static void test_migrator(char *area) {
        nb_cpumask cpus = {}, none = {};
        struct migrator *m = NULL;
        struct migrate_job jobs[4];
        struct migrate_range rg[4][2];
        int r;

        CHECK_INT(migrator_new(&none, 0, 0, &m), -EINVAL);
        CHECK(m == NULL);

        /* CPU 0 exists everywhere; NB_CPUS_MAX - 1 nowhere: skipped with a warning. */
        cpumask_set(&cpus, 0);
        cpumask_set(&cpus, NB_CPUS_MAX - 1);
        r = migrator_new(&cpus, 100, 4096, &m);
        CHECK_INT(r, 0);
        if (r < 0)
                return;
        CHECK_INT(migrator_n_workers(m), 1);

        for (int i = 0; i < 3; i++)
                setup_self_job(&jobs[i], rg[i], area);
        setup_self_job(&jobs[3], rg[3], area);
        jobs[3].pid = dead_pid();
        CHECK_INT(migrator_run(m, jobs, 4), 0);
        for (int i = 0; i < 3; i++) {
                CHECK_INT(jobs[i].error, 0);
                CHECK_INT(jobs[i].pages[MIG_ALREADY], TOUCHED / 4096);
        }
        CHECK_INT(jobs[3].error, -ESRCH);
        CHECK_INT(migrator_run(m, jobs, 0), 0);

        migrator_set_limits(m, 0, 0);
        migrator_cancel(m);
        setup_self_job(&jobs[0], rg[0], area);
        CHECK_INT(migrator_run(m, jobs, 1), 0);
        CHECK_INT(jobs[0].error, -ECANCELED);
        migrator_free(m);
        migrator_free(NULL);

        /* Two service CPUs where the host has them: two workers, same pid jobs serialised. */
        if (sysconf(_SC_NPROCESSORS_ONLN) >= 2) {
                nb_cpumask two = {};
                cpumask_set(&two, 0);
                cpumask_set(&two, 1);
                if (migrator_new(&two, 0, 0, &m) == 0) {
                        CHECK_INT(migrator_n_workers(m), 2);
                        for (int i = 0; i < 4; i++)
                                setup_self_job(&jobs[i], rg[i], area);
                        CHECK_INT(migrator_run(m, jobs, 4), 0);
                        for (int i = 0; i < 4; i++)
                                CHECK_INT(jobs[i].pages[MIG_ALREADY], TOUCHED / 4096);
                        migrator_free(m);
                }
        }
}

int main(void) {
        char *area;

        log_set_max_level(LOG_LVL_DEBUG);
        test_classify();
        test_split();

        area = mmap(NULL, TOUCHED + UNTOUCHED, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        CHECK(area != MAP_FAILED);
        if (area == MAP_FAILED)
                TEST_MAIN_END();
        /* No THP here: every base page is its own page. */
        madvise(area, TOUCHED + UNTOUCHED, MADV_NOHUGEPAGE);
        memset(area, 1, TOUCHED);

        test_self(area);
        test_gone();
        test_migrator(area);
        TEST_MAIN_END();
}
