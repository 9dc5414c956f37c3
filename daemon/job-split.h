/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Splitting one job among the workers, so that the parts copy side by side: move_pages(2)
 * takes the process's mmap lock for reading only, per address. Pure: ranges in, ranges
 * out (tests/unit/test-job-split.c). */
#pragma once
#include <stddef.h>
#include <stdint.h>
#include "executor.h"

/* Splits job into at most parts jobs over consecutive shares of its ranges, equal in
 * bytes, cut at boundaries aligned to the huge page size (executor_pmd_size(), or the
 * ranges' page size if larger) so that no huge page is cut; a share smaller than
 * min_part_bytes is not made. Each part keeps the job's pid, pidfd, starttime, target,
 * flags, cgroup and userdata, and its own ranges (free each part's ranges); max_pages
 * is divided in proportion to bytes (and kept at least 1 when the job had a limit).
 * Returns the number of parts (1: a copy of job), also in *ret_n, with the parts in
 * *ret; or -errno. */
int job_split(const struct migrate_job *job, unsigned parts, uint64_t min_part_bytes,
              struct migrate_job **ret, size_t *ret_n);
