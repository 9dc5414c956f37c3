/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "cleanup.h"
#include "log.h"
#include "parse.h"
#include "smaps.h"

/* A process with hundreds of thousands of VMAs has tens of MiB of smaps. */
#define SMAPS_MAX (512 * 1024 * 1024)

/* "start-end " at the beginning of a header line: 1 with *ret_start, 0 if the line is
 * not a header. */
static int header_start(const char *line, size_t ll, uint64_t *ret_start) {
        const char *dash = memchr(line, '-', ll), *sp = memchr(line, ' ', ll);
        uint64_t end;

        if (!dash || !sp || sp < dash)
                return 0;
        if (parse_hex_u64_n(line, (size_t) (dash - line), ret_start) < 0 ||
            parse_hex_u64_n(dash + 1, (size_t) (sp - dash - 1), &end) < 0 || end <= *ret_start)
                return 0;
        return 1;
}

/* Whether a VmFlags value ("rd wr mr mw me lo ac ") holds the mnemonic "lo". */
static bool flags_locked(const char *val, size_t vl) {
        for (size_t i = 0; i + 2 <= vl; i++)
                if (val[i] == 'l' && val[i + 1] == 'o' && (i == 0 || val[i - 1] == ' ') &&
                    (i + 2 == vl || val[i + 2] == ' '))
                        return true;
        return false;
}

static int cmp_u64(const void *a, const void *b) {
        uint64_t x = *(const uint64_t *) a, y = *(const uint64_t *) b;
        return (x > y) - (x < y);
}

static int push(uint64_t **starts, size_t *n, size_t *alloc, uint64_t start) {
        if (*n == *alloc) {
                size_t na = *alloc ? *alloc * 2 : 16;
                uint64_t *p = realloc(*starts, na * sizeof(**starts));
                if (!p)
                        return -ENOMEM;
                *starts = p;
                *alloc = na;
        }
        (*starts)[(*n)++] = start;
        return 0;
}

int smaps_locked_parse(const char *buf, size_t len, uint64_t **ret, size_t *ret_n) {
        _cleanup_free_ uint64_t *starts = NULL;
        size_t n = 0, alloc = 0, pos = 0;
        uint64_t cur = 0;
        bool in_vma = false;
        int r;

        while (buf && pos < len) {
                const char *line = buf + pos, *nl = memchr(line, '\n', len - pos);
                size_t ll = nl ? (size_t) (nl - line) : len - pos;

                pos += ll + 1;
                if (ll > 8 && memcmp(line, "VmFlags:", 8) == 0) {
                        if (in_vma && flags_locked(line + 8, ll - 8)) {
                                r = push(&starts, &n, &alloc, cur);
                                if (r < 0)
                                        return r;
                        }
                        in_vma = false; /* one VmFlags line per VMA */
                        continue;
                }
                if (header_start(line, ll, &cur))
                        in_vma = true;
        }
        if (n > 1)
                qsort(starts, n, sizeof(*starts), cmp_u64);
        *ret = TAKE_PTR(starts);
        *ret_n = n;
        return 0;
}

int smaps_read_locked(const char *proc_root, pid_t pid, uint64_t **ret, size_t *ret_n) {
        _cleanup_free_ char *path = NULL, *buf = NULL;
        size_t len = 0;
        int r;

        if (!proc_root || pid <= 0)
                return -EINVAL;
        if (asprintf(&path, "%s/%d/smaps", proc_root, (int) pid) < 0)
                return -ENOMEM;
        r = read_file_at(AT_FDCWD, path, SMAPS_MAX, &buf, &len);
        if (r < 0)
                return log_debug_errno(r == -ENOENT ? -ESRCH : r, "Failed to read %s: %m", path);
        return smaps_locked_parse(buf, len, ret, ret_n);
}

bool smaps_locked_has(const uint64_t *starts, size_t n, uint64_t start) {
        return starts && bsearch(&start, starts, n, sizeof(*starts), cmp_u64);
}
