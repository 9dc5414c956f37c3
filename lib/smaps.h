/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Locked VMAs from /proc/<pid>/smaps: those whose "VmFlags:" line holds "lo"
 * (VM_LOCKED: mlock(2), mlock2(2), mlockall(2), MCL_ONFAULT included).
 *
 * smaps walks every VMA's page tables and costs more than numa_maps: it is read only
 * for a process whose status shows VmLck above 0 (proc.h), where real-time workloads
 * have locked memory so that nothing touches it. Each VMA is a header line
 * "start-end perms offset dev inode [path]" (the path escapes '\n' as \012, so a line
 * is a line) followed by "Key: value" lines, "VmFlags:" last (fs/proc/task_mmu.c
 * show_smap, show_smap_vma_flags: two-letter mnemonics, one space after each). */
#pragma once
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include "proc-lines.h"

/* The starts of the locked VMAs of buf, sorted (*ret malloc'd, NULL when none).
 * Lines that are neither a header nor "Key: value" are skipped; a VmFlags line before
 * any header is ignored. Returns 0 or -ENOMEM. */
int smaps_locked_parse(const char *buf, size_t len, uint64_t **ret, size_t *ret_n);
/* Reads <proc_root>/<pid>/smaps a chunk at a time (proc-lines.h) and parses it with
 * smaps_locked_parse's line parser. -ESRCH: gone; -E2BIG: more than PROC_VMAS_MAX
 * VMAs. A header cut at the line cap (a long file name) still starts its VMA. */
int smaps_read_locked(const char *proc_root, pid_t pid, uint64_t **ret, size_t *ret_n);
/* The same on a file, with the chunk size and caps as parameters (the tests'). */
int smaps_read_locked_path(const char *path, const struct proc_lines_opts *o, uint64_t **ret, size_t *ret_n);
/* Whether start is among the sorted starts. */
bool smaps_locked_has(const uint64_t *starts, size_t n, uint64_t start);
