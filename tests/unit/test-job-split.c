/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Splitting a job among workers (daemon/job-split.h): the parts cover exactly the
 * job's ranges, in order, cut only on huge page boundaries, roughly equal, never below
 * the minimum, with the page budget shared in proportion. */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include "job-split.h"
#include "pagesize.h"
#include "test.h"

#define MB (UINT64_C(1) << 20)
#define GB (UINT64_C(1) << 30)

/* The parts cover the job's ranges exactly, in order, and cut a range only on a
 * multiple of align. */
static void check_cover(const struct migrate_job *job, const struct migrate_job *parts, size_t n,
                        uint64_t align) {
        size_t ri = 0;
        uint64_t pos = job->ranges[0].start;

        for (size_t p = 0; p < n; p++) {
                CHECK_INT(parts[p].pid, job->pid);
                CHECK_INT(parts[p].pidfd, job->pidfd);
                CHECK_INT(parts[p].starttime, job->starttime);
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
                        CHECK(r->end == job->ranges[ri].end || r->end % align == 0);
                        pos = r->end;
                        if (pos == job->ranges[ri].end && ++ri < job->n_ranges)
                                pos = job->ranges[ri].start;
                }
        }
        CHECK_INT(ri, job->n_ranges);
}

static uint64_t part_bytes(const struct migrate_job *part) {
        uint64_t bytes = 0;

        for (size_t k = 0; k < part->n_ranges; k++)
                bytes += part->ranges[k].end - part->ranges[k].start;
        return bytes;
}

static void free_parts(struct migrate_job *parts, size_t n) {
        for (size_t p = 0; p < n; p++)
                free(parts[p].ranges);
        free(parts);
}

/* 584 MiB of base pages in three ranges, the second not aligned to a huge page. */
static struct migrate_range ranges[3];

static struct migrate_job base_job(void) {
        uint64_t ps = page_size();

        ranges[0] = (struct migrate_range) { 0x7f0000000000, 0x7f0000000000 + 512 * MB, ps };
        ranges[1] = (struct migrate_range) { 0x7f1000000000 + ps, 0x7f1000000000 + ps + 64 * MB, ps };
        ranges[2] = (struct migrate_range) { 0x7f2000000000, 0x7f2000000000 + 8 * MB, ps };
        return (struct migrate_job) { .pid = 42, .pidfd = 5, .starttime = 7, .target_node = 1,
                                      .ranges = ranges, .n_ranges = 3, .max_pages = 1000,
                                      .userdata = ranges };
}

TEST(four_equal_parts) {
        struct migrate_job job = base_job(), *parts = NULL;
        uint64_t sum_max = 0;
        size_t n = 0;

        CHECK_INT(job_split(&job, 4, 64 * MB, &parts, &n), 4);
        CHECK_INT(n, 4);
        check_cover(&job, parts, n, executor_pmd_size());
        for (size_t p = 0; p < n; p++) {
                /* 584 MiB in four: 146 MiB rounded up to 2 MiB, the last takes the rest. */
                CHECK(part_bytes(&parts[p]) >= 140 * MB && part_bytes(&parts[p]) <= 150 * MB);
                sum_max += parts[p].max_pages;
        }
        /* The page budget shared in proportion, rounded down. */
        CHECK(sum_max >= 997 && sum_max <= 1000);
        free_parts(parts, n);
}

TEST(minimum_part_size) {
        struct migrate_job job = base_job(), *parts = NULL;
        size_t n = 0;

        /* Too small to split into 4 with a 256 MiB minimum: 2 parts. */
        CHECK_INT(job_split(&job, 4, 256 * MB, &parts, &n), 2);
        check_cover(&job, parts, n, executor_pmd_size());
        free_parts(parts, n);
}

TEST(one_part_is_a_copy) {
        struct migrate_job job = base_job(), *parts = NULL;
        size_t n = 0;

        job.n_ranges = 1;
        CHECK_INT(job_split(&job, 1, 0, &parts, &n), 1);
        CHECK_INT(parts[0].n_ranges, 1);
        CHECK_INT(parts[0].ranges[0].start, ranges[0].start);
        CHECK_INT(parts[0].ranges[0].end, ranges[0].end);
        CHECK_INT(parts[0].max_pages, 1000);
        free_parts(parts, n);
}

TEST(results_not_copied) {
        struct migrate_job job = base_job(), *parts = NULL;
        size_t n = 0;

        job.pages[MIG_MOVED] = 5;
        job.error = -EIO;
        job.wall_ns = 9;
        CHECK_INT(job_split(&job, 2, 0, &parts, &n), 2);
        for (size_t p = 0; p < n; p++) {
                CHECK_INT(parts[p].pages[MIG_MOVED], 0);
                CHECK_INT(parts[p].error, 0);
                CHECK_INT(parts[p].wall_ns, 0);
        }
        free_parts(parts, n);
}

TEST(hugetlb_pages_never_cut) {
        struct migrate_range giant = { 0x7f0000000000 - 0x7f0000000000 % GB, 0, GB };
        struct migrate_job job = { .pid = 42, .target_node = 0, .ranges = &giant, .n_ranges = 1 }, *parts = NULL;
        size_t n = 0;

        /* 4 GiB of 1 GiB pages in three: shares of 2 GiB (4/3 rounded up to a page). */
        giant.end = giant.start + 4 * GB;
        CHECK_INT(job_split(&job, 3, 0, &parts, &n), 2);
        check_cover(&job, parts, n, GB);
        CHECK_INT(part_bytes(&parts[0]), 2 * GB);
        CHECK_INT(part_bytes(&parts[1]), 2 * GB);
        /* No page budget: none in the parts either. */
        CHECK_INT(parts[0].max_pages, 0);
        free_parts(parts, n);
}

DEFINE_TEST_MAIN()
