/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include "cleanup.h"
#include "log.h"
#include "maps.h"
#include "parse.h"

static int cmp_range(const void *a, const void *b) {
        const struct vma_range *x = a, *y = b;
        return x->start < y->start ? -1 : x->start > y->start;
}

struct maps_sink {
        struct vma_range *r;
        size_t n, alloc, lines, vmas_max;
        unsigned bad;
};

/* The fields after "start-end ": "rw-s 00001000 00:01 1234 ". The kernel prints them
 * before the path, so a cut line has them too. A shared ('s') mapping of an inode is
 * an object others may map; a private one of no inode ("00:00 0") is anonymous
 * (maps.h). A line whose fields do not parse keeps its range and names neither. */
static void parse_object(const char *f, size_t len, struct vma_range *v) {
        const char *end = f + len, *colon, *sp;
        uint64_t off, maj, min, ino;
        bool shared;

        if (len < 5 || f[4] != ' ' || (f[3] != 's' && f[3] != 'p'))
                return;
        shared = f[3] == 's';
        f += 5;
        sp = memchr(f, ' ', (size_t) (end - f));
        if (!sp || parse_hex_u64_n(f, (size_t) (sp - f), &off) < 0)
                return;
        f = sp + 1;
        sp = memchr(f, ' ', (size_t) (end - f));
        colon = sp ? memchr(f, ':', (size_t) (sp - f)) : NULL;
        if (!colon || parse_hex_u64_n(f, (size_t) (colon - f), &maj) < 0 ||
            parse_hex_u64_n(colon + 1, (size_t) (sp - colon - 1), &min) < 0 || maj > UINT32_MAX || min > UINT32_MAX)
                return;
        f = sp + 1;
        sp = memchr(f, ' ', (size_t) (end - f));
        if (parse_u64_n(f, sp ? (size_t) (sp - f) : (size_t) (end - f), 0, UINT64_MAX, &ino) < 0)
                return;
        if (!shared) {
                v->anon = maj == 0 && min == 0 && ino == 0;
                return;
        }
        if (ino == 0)
                return;
        v->shared = true;
        v->dev = maj << 32 | min;
        v->ino = ino;
        v->pgoff = off;
}

/* "start-end " at the start of a line: the kernel prints it before anything a
 * process names, so a cut line (a long file name) still gives it. */
static int maps_line(void *ctx, const char *line, size_t ll, bool cut) {
        struct maps_sink *k = ctx;
        const char *dash = memchr(line, '-', ll), *sp = memchr(line, ' ', ll);
        uint64_t s, e;

        (void) cut;
        if (ll == 0)
                return 0;
        if (++k->lines > k->vmas_max)
                return -E2BIG;
        if (!dash || !sp || sp < dash || parse_hex_u64_n(line, (size_t) (dash - line), &s) < 0 ||
            parse_hex_u64_n(dash + 1, (size_t) (sp - dash - 1), &e) < 0 || e <= s) {
                k->bad++;
                return 0;
        }
        if (k->n == k->alloc) {
                size_t na = k->alloc ? k->alloc * 2 : 256;
                struct vma_range *nr = realloc(k->r, na * sizeof(*k->r));
                if (!nr)
                        return -ENOMEM;
                k->r = nr;
                k->alloc = na;
        }
        k->r[k->n] = (struct vma_range) { .start = s, .end = e };
        parse_object(sp + 1, ll - (size_t) (sp + 1 - line), &k->r[k->n]);
        k->n++;
        return 0;
}

static int maps_done(struct maps_sink *k, int r, struct vma_range **ret, size_t *ret_n, unsigned *ret_bad) {
        if (r < 0) {
                free(k->r);
                return r;
        }
        if (k->n)
                qsort(k->r, k->n, sizeof(*k->r), cmp_range);
        *ret = k->r;
        *ret_n = k->n;
        if (ret_bad)
                *ret_bad = k->bad;
        return 0;
}

int maps_parse(const char *buf, size_t len, struct vma_range **ret, size_t *ret_n, unsigned *ret_bad) {
        struct maps_sink k = { .vmas_max = SIZE_MAX };

        return maps_done(&k, proc_lines_buf(buf, len, &proc_lines_default, maps_line, &k, NULL), ret, ret_n,
                         ret_bad);
}

const struct vma_range *maps_find(const struct vma_range *r, size_t n, uint64_t start) {
        size_t lo = 0, hi = n;

        while (lo < hi) {
                size_t mid = lo + (hi - lo) / 2;
                if (r[mid].start == start)
                        return &r[mid];
                if (r[mid].start < start)
                        lo = mid + 1;
                else
                        hi = mid;
        }
        return NULL;
}

uint64_t maps_end_of(const struct vma_range *r, size_t n, uint64_t start) {
        const struct vma_range *v = maps_find(r, n, start);

        return v ? v->end : 0;
}

int maps_read_path(const char *path, const struct proc_lines_opts *o, struct vma_range **ret, size_t *ret_n,
                   unsigned *ret_bad) {
        struct maps_sink k = { .vmas_max = o->vmas_max };
        int r = proc_lines_path(path, o, maps_line, &k, NULL);

        if (r < 0)
                log_debug_errno(r, "Failed to read %s: %m", path);
        return maps_done(&k, r, ret, ret_n, ret_bad);
}

int maps_read(const char *proc_root, pid_t pid, struct vma_range **ret, size_t *ret_n) {
        _cleanup_free_ char *path = NULL;

        if (!proc_root || pid <= 0)
                return -EINVAL;
        path = proc_lines_pid_path(proc_root, pid, "maps");
        if (!path)
                return -ENOMEM;
        return maps_read_path(path, &proc_lines_default, ret, ret_n, NULL);
}
