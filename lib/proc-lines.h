/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The per-mapping /proc files (numa_maps, maps, smaps) a line at a time, in fixed
 * chunks: the file is never held whole. Their size is the tenant's to choose (one
 * line per mapping, file names escaped to four bytes a byte), their parse results
 * are what the daemon keeps, so what a read costs is bounded here:
 *
 *   - one buffer of PROC_LINES_CHUNK + PROC_LINE_MAX bytes (128 KiB), whatever the
 *     file size;
 *   - a line longer than PROC_LINE_MAX is never stored: its first PROC_LINE_MAX
 *     bytes are handed over marked cut (the address range comes first on every
 *     format, so a parser may still use it), the rest is skipped, and it is counted;
 *   - the parsers refuse a process with more than PROC_VMAS_MAX mappings (-E2BIG).
 *
 * A whole buffer (the parsers' pure entry points, the fuzz targets) goes through the
 * same line splitting, so that a file parses the same read or held. */
#pragma once
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/* One read(2) at a time: numa_maps and smaps take the process's mmap lock once per
 * read, so the reads are large, but no larger than the buffer the daemon holds. */
#define PROC_LINES_CHUNK (64 * 1024)
/* The longest line handed over whole. A numa_maps line the kernel writes holds a file
 * name of up to PATH_MAX (4096) bytes, 16 KiB if every byte is escaped (\012), and a
 * count for each node with pages, up to 1,024 nodes of "N1023=<20 digits>" (27 KiB):
 * 64 KiB holds both. Longer lines come from deeper paths full of escaped bytes, made
 * to be long: that mapping is a bad line. */
#define PROC_LINE_MAX (64 * 1024)
/* Mappings read of one process, at most. vm.max_map_count is 65,530 by default
 * (DEFAULT_MAX_MAP_COUNT); mmap() checks it before adding, so a process reaches
 * 65,531, and maps lists the vsyscall page besides: 2^16 holds all of a process on a
 * host with the default. A host that raised the sysctl for one program (databases,
 * search engines) has that program refused with -E2BIG ("cannot read"), not read
 * into memory without end: 65,536 numa_maps VMAs are about 18 MiB parsed. */
#define PROC_VMAS_MAX 65536

/* One line, without its '\n': len <= the line cap. cut: the line went on past the
 * cap (only its start is here). A negative return stops the read, and is returned. */
typedef int (*proc_line_fn)(void *ctx, const char *line, size_t len, bool cut);

struct proc_lines_opts {
        size_t chunk;      /* bytes per read(2) */
        size_t line_max;   /* longest line handed over whole */
        size_t vmas_max;   /* for the parsers: mappings kept at most (SIZE_MAX: no cap) */
};

/* PROC_LINES_CHUNK, PROC_LINE_MAX, PROC_VMAS_MAX. */
extern const struct proc_lines_opts proc_lines_default;

/* Lines of fd until end of file. *ret_cut (if not NULL) counts the lines longer
 * than the cap. Returns 0, the callback's negative return, -ENOMEM or the read's
 * -errno (-ESRCH when the process is gone). */
int proc_lines_fd(int fd, const struct proc_lines_opts *o, proc_line_fn fn, void *ctx, uint64_t *ret_cut);
/* The same on a file by path: -ESRCH when it does not exist (the process is gone). */
int proc_lines_path(const char *path, const struct proc_lines_opts *o, proc_line_fn fn, void *ctx,
                    uint64_t *ret_cut);
/* The same on buf[0..len), held by the caller (need not be NUL-terminated). */
int proc_lines_buf(const char *buf, size_t len, const struct proc_lines_opts *o, proc_line_fn fn, void *ctx,
                   uint64_t *ret_cut);
/* "<proc_root>/<pid>/<name>" into a malloc'd string, or NULL. */
char *proc_lines_pid_path(const char *proc_root, pid_t pid, const char *name);
