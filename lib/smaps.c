/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include "cleanup.h"
#include "log.h"
#include "parse.h"
#include "smaps.h"

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

struct smaps_sink {
        uint64_t *starts;
        size_t n, alloc, vmas, vmas_max;
        uint64_t cur;
        bool in_vma;
};

/* One line: a VMA's header "start-end perms ..." (cut or not: the range comes before
 * the file name), one of its "Key: value" lines, or its "VmFlags:" line. */
static int smaps_line(void *ctx, const char *line, size_t ll, bool cut) {
        struct smaps_sink *k = ctx;

        if (!cut && ll > 8 && memcmp(line, "VmFlags:", 8) == 0) {
                bool locked = k->in_vma && flags_locked(line + 8, ll - 8);

                k->in_vma = false; /* one VmFlags line per VMA */
                return locked ? push(&k->starts, &k->n, &k->alloc, k->cur) : 0;
        }
        if (header_start(line, ll, &k->cur)) {
                if (++k->vmas > k->vmas_max)
                        return -E2BIG;
                k->in_vma = true;
        }
        return 0;
}

static int smaps_done(struct smaps_sink *k, int r, uint64_t **ret, size_t *ret_n) {
        if (r < 0) {
                free(k->starts);
                return r;
        }
        if (k->n > 1)
                qsort(k->starts, k->n, sizeof(*k->starts), cmp_u64);
        *ret = k->starts;
        *ret_n = k->n;
        return 0;
}

int smaps_locked_parse(const char *buf, size_t len, uint64_t **ret, size_t *ret_n) {
        struct smaps_sink k = { .vmas_max = SIZE_MAX };

        return smaps_done(&k, proc_lines_buf(buf, len, &proc_lines_default, smaps_line, &k, NULL), ret, ret_n);
}

int smaps_read_locked_path(const char *path, const struct proc_lines_opts *o, uint64_t **ret, size_t *ret_n) {
        struct smaps_sink k = { .vmas_max = o->vmas_max };
        int r = proc_lines_path(path, o, smaps_line, &k, NULL);

        if (r < 0)
                log_debug_errno(r, "Failed to read %s: %m", path);
        return smaps_done(&k, r, ret, ret_n);
}

int smaps_read_locked(const char *proc_root, pid_t pid, uint64_t **ret, size_t *ret_n) {
        _cleanup_free_ char *path = NULL;

        if (!proc_root || pid <= 0)
                return -EINVAL;
        path = proc_lines_pid_path(proc_root, pid, "smaps");
        if (!path)
                return -ENOMEM;
        return smaps_read_locked_path(path, &proc_lines_default, ret, ret_n);
}

bool smaps_locked_has(const uint64_t *starts, size_t n, uint64_t start) {
        return starts && bsearch(&start, starts, n, sizeof(*starts), cmp_u64);
}
