/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "cleanup.h"
#include "maps.h"
#include "parse.h"

static int cmp_range(const void *a, const void *b) {
        const struct vma_range *x = a, *y = b;
        return x->start < y->start ? -1 : x->start > y->start;
}

int maps_parse(const char *buf, size_t len, struct vma_range **ret, size_t *ret_n, unsigned *ret_bad) {
        _cleanup_free_ struct vma_range *r = NULL;
        size_t n = 0, alloc = 0, pos = 0;
        unsigned bad = 0;

        while (pos < len) {
                const char *line = buf + pos, *nl = memchr(line, '\n', len - pos);
                size_t ll = nl ? (size_t) (nl - line) : len - pos;
                const char *dash = memchr(line, '-', ll), *sp = memchr(line, ' ', ll);
                uint64_t s, e;

                pos += ll + 1;
                if (ll == 0)
                        continue;
                if (!dash || !sp || sp < dash ||
                    parse_hex_u64_n(line, (size_t) (dash - line), &s) < 0 ||
                    parse_hex_u64_n(dash + 1, (size_t) (sp - dash - 1), &e) < 0 || e <= s) {
                        bad++;
                        continue;
                }
                if (n == alloc) {
                        size_t na = alloc ? alloc * 2 : 256;
                        struct vma_range *nr = realloc(r, na * sizeof(*r));
                        if (!nr)
                                return -ENOMEM;
                        r = nr;
                        alloc = na;
                }
                r[n++] = (struct vma_range) { s, e };
        }
        if (n)
                qsort(r, n, sizeof(*r), cmp_range);
        *ret = TAKE_PTR(r);
        *ret_n = n;
        if (ret_bad)
                *ret_bad = bad;
        return 0;
}

uint64_t maps_end_of(const struct vma_range *r, size_t n, uint64_t start) {
        size_t lo = 0, hi = n;
        while (lo < hi) {
                size_t mid = lo + (hi - lo) / 2;
                if (r[mid].start == start)
                        return r[mid].end;
                if (r[mid].start < start)
                        lo = mid + 1;
                else
                        hi = mid;
        }
        return 0;
}

int maps_read(const char *proc_root, pid_t pid, struct vma_range **ret, size_t *ret_n) {
        _cleanup_free_ char *buf = NULL;
        char path[4096];
        size_t len;
        int r;

        if (pid <= 0)
                return -EINVAL;
        snprintf(path, sizeof(path), "%s/%d/maps", proc_root, (int) pid);
        r = read_file_at(AT_FDCWD, path, 256u << 20, &buf, &len);
        if (r < 0)
                return r;
        return maps_parse(buf, len, ret, ret_n, NULL);
}
