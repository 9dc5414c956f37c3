/* SPDX-License-Identifier: GPL-2.0-or-later */
/* VMA ends from /proc/<pid>/maps. numa_maps gives each VMA's start only; move_pages
 * needs the range. maps is cheap to read (no page-table walk). Only "start-end" at
 * the beginning of each line is parsed; the rest (paths) is ignored. */
#pragma once
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

struct vma_range {
        uint64_t start, end;
};

/* Parses buf into ranges sorted by start; malformed lines are skipped (counted in
 * *ret_bad if not NULL). */
int maps_parse(const char *buf, size_t len, struct vma_range **ret, size_t *ret_n, unsigned *ret_bad);
/* The end of the VMA that starts at start, or 0. */
uint64_t maps_end_of(const struct vma_range *r, size_t n, uint64_t start);
int maps_read(const char *proc_root, pid_t pid, struct vma_range **ret, size_t *ret_n);
