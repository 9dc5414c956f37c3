/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The executor (daemon/executor.h) without root and without a second node: jobs on
 * this very process targeting node 0 (where everything already is), the pid-reuse
 * guard, and the per-page classification. Moving pages between nodes is tested in
 * tests/vm/test-migrate.py. Not run under valgrind (it does not know pidfd_open). */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <sys/syscall.h>
#include <numaif.h>
#include <unistd.h>
#include "cleanup.h"
#include "executor.h"
#include "log.h"
#include "self-job.h"
#include "test.h"

/* Every log line at debug level too: their formatting runs. */
__attribute__((constructor)) static void debug_logs(void) {
        log_set_max_level(LOG_LVL_DEBUG);
}

TEST(classify) {
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
                enum migrate_class c = executor_classify(table[i].status, 1, table[i].was_on_target);
                if (c != table[i].c)
                        fprintf(stderr, "classify(%d): %s, expected %s\n", table[i].status,
                                executor_class_name(c), executor_class_name(table[i].c));
                CHECK_INT(c, table[i].c);
        }
}

TEST(class_names) {
        CHECK_STR(executor_class_name(MIG_MOVED), "moved");
        CHECK_STR(executor_class_name(MIG_ALREADY), "already");
        CHECK_STR(executor_class_name(MIG_BUSY), "busy");
        CHECK_STR(executor_class_name(MIG_GONE), "gone");
        CHECK_STR(executor_class_name(MIG_REFUSED), "refused");
        CHECK(executor_class_name(_MIG_CLASS_MAX) == NULL);
}

TEST(pmd_size) {
        /* 2 MiB with 4 KiB base pages (x86-64), 512 MiB with 64 KiB (arm64). */
        if (page_size() == 4096)
                CHECK_INT(executor_pmd_size(), 2 * MB);
        CHECK_INT(executor_pmd_size() % page_size(), 0);
}

/* How many base pages the kernel gets between two breaks, at most. */
static uint64_t longest_run(void *const *out, size_t m, const uint32_t *weight_of_next) {
        uint64_t run = 0, longest = 0;
        size_t i = 0;

        for (size_t k = 0; k < m; k++) {
                if (out[k] == executor_batch_break()) {
                        CHECK(k > 0 && k + 1 < m && out[k - 1] != out[k] && out[k + 1] != out[k]);
                        run = 0;
                        continue;
                }
                run += weight_of_next[i++];
                if (run > longest)
                        longest = run;
        }
        return longest;
}

TEST(kernel_batches_take_20_ms_and_2_MiB_at_most) {
        /* Not measured yet, or pages as fast as an idle TCG guest moves them (18 us a
         * base page, tests/vm): the kernel's own batch, 2 MiB of 4 KiB pages. */
        CHECK_INT(executor_kernel_batch_pages(0, 4096), 512);
        CHECK_INT(executor_kernel_batch_pages(18000, 4096), 512);
        /* Slower pages: 20 ms of them. */
        CHECK_INT(executor_kernel_batch_pages(100000, 4096), 200);
        /* The 6.12 guests' stalls: 149 pages in 70 s, 0.47 s a page: one at a time. */
        CHECK_INT(executor_kernel_batch_pages(470000000, 4096), 1);
        /* 2 MiB whatever the page size (the kernel's batch of 64 KiB pages is 512 MiB). */
        CHECK_INT(executor_kernel_batch_pages(0, 65536), 32);
        CHECK_INT(executor_kernel_batch_pages(1, 16384), 128);
}

TEST(a_call_reaches_the_kernel_in_runs_of_32_base_pages) {
        enum { N = 100 };
        void *addrs[N], *out[2 * N];
        uint32_t ones[N];
        size_t m, i = 0;

        for (size_t k = 0; k < N; k++) {
                addrs[k] = (void *) (uintptr_t) (0x10000000 + k * 4096);
                ones[k] = 1;
        }
        m = executor_lay_out_call(addrs, ones, N, 32, out);
        /* 100 pages: runs of 32, 32, 32 and 4, three breaks, every address once, in order. */
        CHECK_INT(m, N + 3);
        CHECK_INT(longest_run(out, m, ones), 32);
        for (size_t k = 0; k < m; k++)
                if (out[k] != executor_batch_break())
                        CHECK(out[k] == addrs[i++]);
        CHECK_INT(i, N);
        CHECK(out[32] == executor_batch_break() && out[65] == executor_batch_break() &&
              out[98] == executor_batch_break());

        /* One address is never split off by a break: a call of one has none. */
        CHECK_INT(executor_lay_out_call(addrs, ones, 1, 32, out), 1);
}

TEST(a_huge_page_is_a_kernel_batch_of_its_own) {
        void *addrs[6], *out[12];
        uint32_t w[6] = { 512, 1, 1, 512, 20, 20 };
        size_t m;

        for (size_t k = 0; k < 6; k++)
                addrs[k] = (void *) (uintptr_t) (0x40000000 + k * 0x200000);
        m = executor_lay_out_call(addrs, w, 6, 32, out);
        /* 512 | 1 1 | 512 | 20 | 20 */
        CHECK_INT(m, 10);
        CHECK(out[0] == addrs[0] && out[1] == executor_batch_break() && out[2] == addrs[1] &&
              out[3] == addrs[2] && out[4] == executor_batch_break() && out[5] == addrs[3] &&
              out[6] == executor_batch_break() && out[7] == addrs[4] &&
              out[8] == executor_batch_break() && out[9] == addrs[5]);
        CHECK_INT(longest_run(out, m, w), 512);
}

/* What the layout relies on: the kernel refuses the break in its own slot and goes on
 * with the call (the pages around it report their node), rather than failing it. */
TEST(the_kernel_refuses_the_break_and_goes_on) {
        char *area = self_area();
        void *addrs[3];
        int nodes[3] = { 0, 0, 0 }, status[3] = { INT32_MIN, INT32_MIN, INT32_MIN };
        long r;

        if (!area)
                return;
        addrs[0] = area;
        addrs[1] = executor_batch_break();
        addrs[2] = area + page_size();
        r = syscall(SYS_move_pages, 0, 3, addrs, nodes, status, MPOL_MF_MOVE);
        CHECK_INT(r, 0);
        CHECK_INT(status[0], 0);
        CHECK_INT(status[1], -EFAULT);
        CHECK_INT(status[2], 0);
}

TEST(all_already_there) {
        struct migrate_job job;
        struct migrate_range rg[2];
        char *area = self_area();

        if (!area)
                return;
        setup_self_job(&job, rg, area);
        CHECK(job.starttime != 0);
        /* Small batches: the query chunks are sized by the batch; make it take many. */
        CHECK_INT(executor_run_job(&job, 1000, NULL, NULL, NULL), 0);
        CHECK_INT(job.error, 0);
        CHECK_INT(job.pages[MIG_ALREADY], TOUCHED / page_size());
        CHECK_INT(job.pages[MIG_MOVED], 0);
        /* The untouched megabyte and the hole are not counted at all. */
        CHECK_INT(job_total(&job), TOUCHED / page_size());
        CHECK(job.wall_ns > 0);
        CHECK(job.cpu_ns > 0);
}

/* Pages on a kept node (keep_node_share_pct: the process's threads run there too) are
 * neither passed nor counted: towards node 1, which this machine may not have, the job
 * passes nothing and fails nothing. Without the keep it would try to move them all. */
TEST(kept_node_pages_stay) {
        struct migrate_job job;
        struct migrate_range rg[2];
        char *area = self_area();

        if (!area)
                return;
        setup_self_job(&job, rg, area);
        job.target_node = 1;
        nodemask_set(&job.keep_nodes, 0);
        CHECK_INT(executor_run_job(&job, 1000, NULL, NULL, NULL), 0);
        CHECK_INT(job.error, 0);
        CHECK_INT(job_total(&job), 0);
        CHECK_INT(job.pages[MIG_MOVED], 0);
}

TEST(own_pidfd_and_max_pages) {
        struct migrate_job job;
        struct migrate_range rg[2];
        char *area = self_area();

        if (!area)
                return;
        /* With the caller's pidfd, and max_pages (it limits pages passed, not seen). */
        setup_self_job(&job, rg, area);
        job.pidfd = (int) syscall(SYS_pidfd_open, getpid(), 0);
        CHECK(job.pidfd >= 0);
        job.max_pages = 1;
        CHECK_INT(executor_run_job(&job, 0, NULL, NULL, NULL), 0);
        CHECK_INT(job.pages[MIG_ALREADY], TOUCHED / page_size());
        /* The caller's pidfd stays open: it is the caller's. */
        CHECK(fcntl(job.pidfd, F_GETFD) >= 0);
        close(job.pidfd);
}

TEST(not_the_sampled_process) {
        struct migrate_job job;
        struct migrate_range rg[2];
        char *area = self_area();

        if (!area)
                return;
        /* The process holding the pid started at another time: nothing is done. */
        setup_self_job(&job, rg, area);
        job.starttime += 1;
        CHECK_INT(executor_run_job(&job, 0, NULL, NULL, NULL), -ESRCH);
        CHECK_INT(job.error, -ESRCH);
        CHECK_INT(job_total(&job), 0);
}

TEST(bad_input) {
        struct migrate_job job;
        struct migrate_range rg[2];
        char *area = self_area();

        if (!area)
                return;
        setup_self_job(&job, rg, area);
        rg[0].start += 1;
        CHECK_INT(executor_run_job(&job, 0, NULL, NULL, NULL), -EINVAL);
        CHECK_INT(job_total(&job), 0);
        setup_self_job(&job, rg, area);
        job.target_node = -1;
        CHECK_INT(executor_run_job(&job, 0, NULL, NULL, NULL), -EINVAL);
        /* A page size that is not a multiple of the base page size (the range itself
         * aligned to it). */
        setup_self_job(&job, rg, area);
        rg[0].page_size = page_size() + page_size() / 2;
        rg[0].start = rg[0].end = 1000 * 3 * page_size();
        CHECK_INT(executor_run_job(&job, 0, NULL, NULL, NULL), -EINVAL);
}

TEST(cancelled_before_start) {
        struct migrate_job job;
        struct migrate_range rg[2];
        volatile int cancel = 1;
        char *area = self_area();

        if (!area)
                return;
        setup_self_job(&job, rg, area);
        CHECK_INT(executor_run_job(&job, 0, &cancel, NULL, NULL), -ECANCELED);
        CHECK_INT(job.pages[MIG_MOVED], 0);
}

static const struct migrate_stop test_stop = { "test", "the test says no" };
static unsigned n_asked;

static int refuse(void *ctx, const struct migrate_job *job, const struct migrate_stop **ret_stop) {
        n_asked++;
        CHECK(ctx == &n_asked && job->pid == getpid());
        *ret_stop = &test_stop;
        return -ESTALE;
}

static int allow(void *ctx, const struct migrate_job *job, const struct migrate_stop **ret_stop) {
        n_asked++;
        return 0;
}

/* The caller's check runs before the job: a no stops it before anything is looked at,
 * with the check's reason; a yes lets it run (here nothing needs a move call: it is
 * asked before each batch's queries only). */
TEST(may_move_asked_before_the_job) {
        struct migrate_job job;
        struct migrate_range rg[2];
        char *area = self_area();

        if (!area)
                return;
        setup_self_job(&job, rg, area);
        job.may_move = refuse;
        job.may_move_ctx = &n_asked;
        n_asked = 0;
        CHECK_INT(executor_run_job(&job, 0, NULL, NULL, NULL), -ESTALE);
        CHECK_INT(n_asked, 1);
        CHECK(job.stop == &test_stop);
        CHECK_INT(job_total(&job), 0);

        setup_self_job(&job, rg, area);
        job.may_move = allow;
        n_asked = 0;
        CHECK_INT(executor_run_job(&job, 0, NULL, NULL, NULL), 0);
        CHECK(n_asked >= 1);
        CHECK(job.stop == NULL);
        CHECK_INT(job.pages[MIG_ALREADY], TOUCHED / page_size());
}

static unsigned n_allowed;

static int allow_then_refuse(void *ctx, const struct migrate_job *job, const struct migrate_stop **ret_stop) {
        if (++n_asked <= n_allowed)
                return 0;
        *ret_stop = &test_stop;
        return -ESTALE;
}

/* A plan that stops holding while the rest of the job has nothing to move (its pages
 * already placed here; after an exec, the new program's region not touched yet) is
 * seen at the next batch all the same, and the job says why: the check runs before
 * each batch's queries, not only before move calls. It was asked once, and the job
 * queried on to its end, stopped by nothing. */
TEST(a_change_is_seen_at_the_next_batch_with_nothing_to_move) {
        struct migrate_job job;
        struct migrate_range rg[2];
        char *area = self_area();

        if (!area)
                return;
        setup_self_job(&job, rg, area);
        job.may_move = allow_then_refuse;
        n_asked = 0;
        n_allowed = 1;
        /* Batches of 1,000 pages: the 2,048 touched pages take three of them at least. */
        CHECK_INT(executor_run_job(&job, 1000, NULL, NULL, NULL), -ESTALE);
        CHECK_INT(n_asked, 2);
        CHECK(job.stop == &test_stop);
        CHECK(job.pages[MIG_ALREADY] > 0 && job.pages[MIG_ALREADY] < TOUCHED / page_size());
}

TEST(process_gone) {
        struct migrate_range rg = { 0x100000, 0x200000, page_size() };
        struct migrate_job job = {
                .pid = dead_pid(), .pidfd = -1, .starttime = 1, .target_node = 0,
                .ranges = &rg, .n_ranges = 1,
        };

        CHECK_INT(executor_run_job(&job, 0, NULL, NULL, NULL), -ESRCH);
        CHECK_INT(job_total(&job), 0);
}

DEFINE_TEST_MAIN()
