/* SPDX-License-Identifier: GPL-2.0-or-later */
/* numa_maps_parse, numa_maps_parse_head and numa_maps_mempolicy_parse on arbitrary bytes. Besides memory errors
 * (the sanitizers), it checks what callers rely on: counts add up, entries belong
 * to their VMA, no node twice, no impossible mode or flag, a policy printed back
 * in the kernel's syntax parses to the same thing, and the same bytes read from a
 * file in small chunks (numa_maps_read_path) parse to the same VMAs. */
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>
#include "fuzz.h"
#include "numa_maps.h"

/* The bytes through a memfd, in chunks of 1 to 61 bytes (by the input's size, so
 * that every boundary gets its turn across inputs): the same VMAs as held whole. */
static void check_stream(const char *s, size_t size, const struct numa_maps *whole) {
        struct proc_lines_opts o = proc_lines_default;
        struct numa_maps *m = NULL;
        char path[64];
        int fd = memfd_create("numa_maps", MFD_CLOEXEC);

        if (fd < 0)
                return;
        if (write(fd, s, size) != (ssize_t) size) {
                close(fd);
                return;
        }
        snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
        o.chunk = 1 + size % 61;
        o.vmas_max = SIZE_MAX;
        if (numa_maps_read_path(path, &o, true, &m) == 0) {
                FUZZ_ASSERT(m->n_vmas == whole->n_vmas && m->n_bad_lines == whole->n_bad_lines &&
                            m->n_np == whole->n_np);
                for (size_t i = 0; i < m->n_vmas; i++) {
                        const struct vma *a = &m->vmas[i], *b = &whole->vmas[i];

                        FUZZ_ASSERT(a->start == b->start && a->line == b->line && a->pages == b->pages &&
                                    a->kind == b->kind && numa_maps_mempolicy_equal(&a->policy, &b->policy));
                        FUZZ_ASSERT((a->path == NULL) == (b->path == NULL) && (!a->path || !strcmp(a->path, b->path)));
                }
                numa_maps_free(m);
        }
        close(fd);
}

static size_t count_lines(const char *s, size_t len) {
        size_t n = 0;
        while (len > 0 && s[len - 1] == '\n')
                len--;
        if (len == 0)
                return 0;
        for (size_t i = 0; i < len; i++)
                n += s[i] == '\n';
        return n + 1;
}

static void check_policy(const struct mempolicy *p) {
        FUZZ_ASSERT((unsigned) p->mode < _MODE_MAX);
        FUZZ_ASSERT((p->flags & ~7u) == 0);
        FUZZ_ASSERT(!((p->flags & MPOL_FLAG_STATIC) && (p->flags & MPOL_FLAG_RELATIVE)));
        if (p->mode == MODE_DEFAULT || p->mode == MODE_LOCAL)
                FUZZ_ASSERT(nodemask_empty(&p->nodes));
}

/* Prints p as mpol_to_str would and parses it again. */
static void roundtrip_policy(const struct mempolicy *p) {
        char buf[NODEMASK_STRMAX + 64];
        size_t n;
        struct mempolicy q;

        n = (size_t) snprintf(buf, sizeof(buf), "%s", numa_maps_mpol_mode_name(p->mode));
        if (p->flags) {
                const char *sr = p->flags & MPOL_FLAG_STATIC ? "static" :
                                 p->flags & MPOL_FLAG_RELATIVE ? "relative" : "";
                bool bal = p->flags & MPOL_FLAG_BALANCING;
                n += (size_t) snprintf(buf + n, sizeof(buf) - n, "=%s%s%s", sr,
                                       bal && *sr ? "|" : "", bal ? "balancing" : "");
        }
        if (!nodemask_empty(&p->nodes)) {
                buf[n++] = ':';
                n += nodemask_format(&p->nodes, buf + n, sizeof(buf) - n);
        }
        FUZZ_ASSERT(n < sizeof(buf));
        FUZZ_ASSERT(numa_maps_mempolicy_parse(buf, n, &q) == 0);
        FUZZ_ASSERT(q.mode == p->mode);
        FUZZ_ASSERT(q.flags == p->flags);
        /* At 63 characters the reparse takes the cut path and keeps a subset. */
        if (n == 63)
                FUZZ_ASSERT(q.nodes_truncated && nodemask_subset(&q.nodes, &p->nodes));
        else
                FUZZ_ASSERT(!q.nodes_truncated && nodemask_equal(&q.nodes, &p->nodes));
}

/* The first record's start and policy as a small read sees them (thread-policy.h): a
 * good first line gives its VMA's; a prefix that gives anything gives the same. */
static void check_head(const char *s, size_t size, const struct numa_maps *m) {
        struct mempolicy whole, part;
        uint64_t start, pstart;
        int r = numa_maps_parse_head(s, size, &start, &whole);

        if (r == 0)
                check_policy(&whole);
        /* The head parser waits for the record's newline (a small read may end inside
         * it: -EAGAIN; read_head() adds one at end of file), the whole parser does not. */
        if (m->n_vmas > 0 && m->vmas[0].line == 1 && memchr(s, '\n', size)) {
                FUZZ_ASSERT(r == 0);
                FUZZ_ASSERT(start == m->vmas[0].start && numa_maps_mempolicy_equal(&whole, &m->vmas[0].policy));
        }
        for (size_t n = 1; r == 0 && n < size && n <= 96; n++)
                if (numa_maps_parse_head(s, n, &pstart, &part) == 0)
                        FUZZ_ASSERT(pstart == start && numa_maps_mempolicy_equal(&part, &whole));
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        const char *s = (const char *) data;
        struct numa_maps *m = NULL;
        size_t lines = count_lines(s, size), np_next = 0;
        unsigned last_line = 0;

        if (numa_maps_parse(s, size, &m) < 0)
                return 0; /* -ENOMEM only */

        FUZZ_ASSERT(m->n_vmas + m->n_bad_lines == lines);
        for (unsigned i = 0; i < m->n_bad_lines && i < NUMA_MAPS_BAD_LINES_KEPT; i++) {
                FUZZ_ASSERT(m->bad_lines[i] >= 1 && m->bad_lines[i] <= lines);
                if (i > 0)
                        FUZZ_ASSERT(m->bad_lines[i] > m->bad_lines[i - 1]);
        }
        for (size_t i = 0; i < m->n_vmas; i++) {
                const struct vma *v = &m->vmas[i];
                const struct node_pages *np = vma_node_pages(m, v);
                nb_nodemask seen = {};
                uint64_t sum = 0;

                FUZZ_ASSERT(v->line > last_line && v->line <= lines);
                last_line = v->line;
                FUZZ_ASSERT((unsigned) v->kind < _VMA_KIND_MAX);
                FUZZ_ASSERT((v->kind == VMA_FILE) == (v->path != NULL));
                if (v->path)
                        FUZZ_ASSERT(!strchr(v->path, ' ') && !strchr(v->path, '\n'));
                FUZZ_ASSERT(v->page_size_kb >= 1);
                /* Entries are contiguous, VMA after VMA. */
                FUZZ_ASSERT(v->np_off == np_next);
                FUZZ_ASSERT(v->np_off + v->np_count <= m->n_np);
                np_next = v->np_off + v->np_count;
                for (size_t j = 0; j < v->np_count; j++) {
                        FUZZ_ASSERT(np[j].node < NB_NODES_MAX);
                        FUZZ_ASSERT(!nodemask_test(&seen, np[j].node));
                        nodemask_set(&seen, np[j].node);
                        FUZZ_ASSERT(sum + np[j].pages >= sum);
                        sum += np[j].pages;
                        FUZZ_ASSERT(numa_maps_vma_pages_on(m, v, np[j].node) == np[j].pages);
                }
                FUZZ_ASSERT(sum == v->pages);
                check_policy(&v->policy);
                roundtrip_policy(&v->policy);
        }
        FUZZ_ASSERT(np_next == m->n_np);
        check_head(s, size, m);
        check_stream(s, size, m);
        numa_maps_free(m);

        /* The whole input as one policy token. */
        {
                struct mempolicy p, untouched;
                memset(&p, 0xa5, sizeof(p));
                untouched = p;
                if (numa_maps_mempolicy_parse(s, size, &p) == 0) {
                        check_policy(&p);
                        FUZZ_ASSERT(!p.nodes_truncated || size == 63);
                        roundtrip_policy(&p);
                } else
                        FUZZ_ASSERT(memcmp(&p, &untouched, sizeof(p)) == 0);
        }
        return 0;
}
