/* SPDX-License-Identifier: GPL-2.0-or-later */
/* VMA ends from /proc/<pid>/maps. numa_maps gives each VMA's start only; move_pages
 * needs the range. maps is cheap to read (no page-table walk). "start-end" at the
 * beginning of each line is parsed, and for a shared mapping the object it maps
 * (device, inode, offset); the paths are ignored. */
#pragma once
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include "proc-lines.h"

struct vma_range {
        uint64_t start, end;
        /* A shared mapping ('s') of an inode (shmem, SysV, memfd, tmpfs, a file): the
         * object, which other processes may map too (daemon/share-groups.h). */
        bool shared;
        uint64_t dev;              /* major << 32 | minor */
        uint64_t ino;
        uint64_t pgoff;            /* the object's byte offset at start */
        /* A private anonymous mapping (no file: heap, stack, mmap(MAP_ANONYMOUS |
         * MAP_PRIVATE)): its pages may be shared copy-on-write since a fork(), at the
         * same address in parent and child. */
        bool anon;
};

/* Parses buf into ranges sorted by start; malformed lines are skipped (counted in
 * *ret_bad if not NULL). A line cut at the line cap (proc-lines.h: a long file name)
 * still gives its range. */
int maps_parse(const char *buf, size_t len, struct vma_range **ret, size_t *ret_n, unsigned *ret_bad);
/* The range that starts at start, or NULL. */
const struct vma_range *maps_find(const struct vma_range *r, size_t n, uint64_t start);
/* The end of the VMA that starts at start, or 0. */
uint64_t maps_end_of(const struct vma_range *r, size_t n, uint64_t start);
/* Reads <proc_root>/<pid>/maps a chunk at a time (proc-lines.h) and parses it with
 * maps_parse's line parser. -ESRCH: gone; -E2BIG: more than PROC_VMAS_MAX mappings. */
int maps_read(const char *proc_root, pid_t pid, struct vma_range **ret, size_t *ret_n);
/* The same on a file, with the chunk size and caps as parameters (the tests'). */
int maps_read_path(const char *path, const struct proc_lines_opts *o, struct vma_range **ret, size_t *ret_n,
                   unsigned *ret_bad);
