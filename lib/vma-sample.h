/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Where a large VMA's pages are, estimated from a sample of them.
 *
 * numa_maps produces each VMA's line with one page-table walk of the whole VMA under
 * the target's mmap lock: for a VMA of tens of GiB that is milliseconds on a real CPU,
 * and an mmap() or munmap() of the workload waiting for the lock holds up its page
 * faults behind it. move_pages(2) with no target nodes only reports the node of each
 * page it is given, taking the lock for 16 pages at a time; a few thousand evenly
 * spaced pages tell whether the VMA's placement changed since a full read.
 * The estimate only ever decides whether to read numa_maps again: nothing is moved on
 * it (the scan and the check before moving read the policies afresh). */
#pragma once
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/* Pages queried per VMA: a change of 1/32 of the VMA (the tolerance the scan uses)
 * is 128 of them, far above what an even spacing misses at a contiguous run's edge. */
#define VMA_SAMPLE_PAGES 4096

/* The distance between sampled base pages of [start, end): at least one page, so
 * that a VMA of fewer than VMA_SAMPLE_PAGES pages is queried whole. */
uint64_t vma_sample_stride(uint64_t start, uint64_t end);

/* Queries the pages of pid at start + (phase % stride + i * stride) base pages, below
 * end, and estimates its pages per node id: each present sampled page counts stride
 * pages into ret_pages[node] (n_ids entries, zeroed first; a node id beyond them is
 * ignored). Returns the number of pages queried, or -errno (-ESRCH: the process is
 * gone; -EPERM, -EACCES: not allowed). */
int vma_sample_query(pid_t pid, uint64_t start, uint64_t end, uint64_t phase, uint64_t *ret_pages, size_t n_ids);

/* Whether the estimate est differs from the full read base by more than tol pages on
 * any of the n_ids nodes. */
bool vma_sample_moved(const uint64_t *base, const uint64_t *est, size_t n_ids, uint64_t tol);
