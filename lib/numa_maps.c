/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include "cleanup.h"
#include "log.h"
#include "numa_maps.h"
#include "pagesize.h"
#include "parse.h"

/* mpol_to_str() prints into a 64-byte buffer: a policy string of this length may
 * have been cut. */
#define MPOL_STR_MAX 63

static const char *const mode_names[_MODE_MAX] = {
        [MODE_DEFAULT] = "default",
        [MODE_LOCAL] = "local",
        [MODE_PREFERRED] = "prefer",
        [MODE_PREFERRED_MANY] = "prefer (many)",
        [MODE_BIND] = "bind",
        [MODE_INTERLEAVE] = "interleave",
        [MODE_WEIGHTED_INTERLEAVE] = "weighted interleave",
};

static const char *const kind_names[_VMA_KIND_MAX] = {
        [VMA_ANON] = "anon",
        [VMA_FILE] = "file",
        [VMA_HEAP] = "heap",
        [VMA_STACK] = "stack",
};

const char *numa_maps_mpol_mode_name(enum mpol_mode m) {
        if ((unsigned) m >= _MODE_MAX)
                return "unknown";
        return mode_names[m];
}

const char *numa_maps_vma_kind_name(enum vma_kind k) {
        if ((unsigned) k >= _VMA_KIND_MAX)
                return "unknown";
        return kind_names[k];
}

static bool has_prefix(const char *s, size_t len, const char *p, size_t plen) {
        return len >= plen && memcmp(s, p, plen) == 0;
}

static bool is_word(const char *s, size_t len, const char *w) {
        size_t wl = strlen(w);
        return len == wl && memcmp(s, w, wl) == 0;
}

/* The flags between '=' and ':' (or the end), as mpol_to_str prints them:
 * "static", "relative", "balancing", "static|balancing", "relative|balancing". */
static int parse_flags(const char *s, size_t len, unsigned *ret) {
        unsigned flags = 0;
        size_t i = 0;

        if (len == 0)
                return -EINVAL;
        while (i <= len) {
                const char *e = memchr(s + i, '|', len - i);
                size_t wl = e ? (size_t) (e - (s + i)) : len - i;
                unsigned f;

                if (is_word(s + i, wl, "static"))
                        f = MPOL_FLAG_STATIC;
                else if (is_word(s + i, wl, "relative"))
                        f = MPOL_FLAG_RELATIVE;
                else if (is_word(s + i, wl, "balancing"))
                        f = MPOL_FLAG_BALANCING;
                else
                        return -EINVAL;
                if (flags & f)
                        return -EINVAL;
                flags |= f;
                i += wl + 1;
        }
        /* The kernel refuses static together with relative (sanitize_mpol_flags). */
        if ((flags & MPOL_FLAG_STATIC) && (flags & MPOL_FLAG_RELATIVE))
                return -EINVAL;
        *ret = flags;
        return 0;
}

/* A node list that the 63-character cut may have shortened. Everything up to the
 * last comma is whole. Of the last element, a range start followed by '-' is
 * whole (the range went on from there); a bare number may have lost digits, so it
 * is dropped. The result is a subset of the real set, and the caller says so. */
static int parse_cut_list(const char *s, size_t len, nb_nodemask *ret) {
        nb_nodemask m = {};
        size_t tail = len;
        int r;

        while (tail > 0 && s[tail - 1] != ',')
                tail--;
        if (tail > 0) {
                r = nodemask_parse_n(s, tail - 1, &m);
                if (r < 0)
                        return r;
        }
        {
                const char *dash = memchr(s + tail, '-', len - tail);
                if (dash) {
                        uint64_t a;
                        r = parse_u64_n(s + tail, (size_t) (dash - (s + tail)), 0, NB_NODES_MAX - 1, &a);
                        if (r < 0)
                                return r;
                        /* What is left of the range end must still be digits. */
                        for (const char *c = dash + 1; c < s + len; c++)
                                if (*c < '0' || *c > '9')
                                        return -EINVAL;
                        nodemask_set(&m, (unsigned) a);
                } else if (len > tail) {
                        /* Still check it is a number: a cut list is digits, commas, dashes. */
                        uint64_t a;
                        r = parse_u64_n(s + tail, len - tail, 0, UINT64_MAX, &a);
                        if (r < 0)
                                return r;
                }
        }
        *ret = m;
        return 0;
}

int numa_maps_mempolicy_parse(const char *s, size_t len, struct mempolicy *ret) {
        struct mempolicy p = {};
        size_t i = 0;
        int r;

        if (!s)
                return -EINVAL;

        /* Longest name first would not help ("prefer" vs "prefer (many)"): a name
         * matches only when followed by the end, '=' or ':'. */
        for (enum mpol_mode m = 0; m < _MODE_MAX; m++) {
                size_t nl = strlen(mode_names[m]);
                if (has_prefix(s, len, mode_names[m], nl) &&
                    (len == nl || s[nl] == '=' || s[nl] == ':')) {
                        p.mode = m;
                        i = nl;
                        break;
                }
        }
        if (i == 0)
                return -EINVAL;

        if (i < len && s[i] == '=') {
                const char *colon = memchr(s + i, ':', len - i);
                size_t fe = colon ? (size_t) (colon - s) : len;
                r = parse_flags(s + i + 1, fe - i - 1, &p.flags);
                if (r < 0)
                        return r;
                i = fe;
        }

        if (i < len) {
                /* s[i] is ':' here: anything else ended the mode name search. */
                if (p.mode == MODE_DEFAULT || p.mode == MODE_LOCAL)
                        return -EINVAL; /* the kernel prints no nodes for these */
                i++;
                /* The list helpers allow blanks around a list; a policy has none. */
                for (size_t j = i; j < len; j++)
                        if (!((s[j] >= '0' && s[j] <= '9') || s[j] == ',' || s[j] == '-'))
                                return -EINVAL;
                if (len == MPOL_STR_MAX) {
                        p.nodes_truncated = true;
                        r = parse_cut_list(s + i, len - i, &p.nodes);
                } else {
                        /* ':' is printed only before a non-empty list. */
                        if (i == len)
                                return -EINVAL;
                        r = nodemask_parse_n(s + i, len - i, &p.nodes);
                }
                if (r < 0)
                        return r;
        }
        *ret = p;
        return 0;
}

bool numa_maps_mempolicy_equal(const struct mempolicy *a, const struct mempolicy *b) {
        return a->mode == b->mode && a->flags == b->flags && a->nodes_truncated == b->nodes_truncated &&
               nodemask_equal(&a->nodes, &b->nodes);
}

uint64_t numa_maps_vma_pages_on(const struct numa_maps *m, const struct vma *v, unsigned node) {
        const struct node_pages *np = vma_node_pages(m, v);

        for (size_t i = 0; i < v->np_count; i++)
                if (np[i].node == node)
                        return np[i].pages;
        return 0;
}

void numa_maps_free(struct numa_maps *m) {
        if (!m)
                return;
        for (size_t i = 0; i < m->n_vmas; i++)
                free(m->vmas[i].path);
        free(m->vmas);
        free(m->np);
        free(m);
}

/* Room for one more element in a doubling array. */
static int grow(void **array, size_t *alloc, size_t n, size_t elsize) {
        size_t na;
        void *p;

        if (n < *alloc)
                return 0;
        na = *alloc ? *alloc * 2 : 64;
        if (na < *alloc || na > SIZE_MAX / elsize)
                return -ENOMEM;
        p = realloc(*array, na * elsize);
        if (!p)
                return -ENOMEM;
        *array = p;
        *alloc = na;
        return 0;
}

struct parser {
        struct numa_maps *m;
        size_t vmas_alloc, np_alloc;
        size_t vmas_max;        /* lines (one per mapping) read at most */
        bool keep_paths;        /* file names copied (numabalancectl shows them; the daemon does not) */
        unsigned lineno;
        unsigned empty_run;     /* empty lines not yet known to be in the middle */
};

/* Keys a future kernel might add: ignored, but only if they look like keys, so that
 * junk still marks the line bad. */
static bool is_ident(const char *s, size_t len) {
        if (len == 0)
                return false;
        for (size_t i = 0; i < len; i++) {
                char c = s[i];
                bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' ||
                          (i > 0 && c >= '0' && c <= '9');
                if (!ok)
                        return false;
        }
        return true;
}

/* The counters the kernel prints before the per-node counts, and where they go. */
enum { C_ANON, C_DIRTY, C_MAPPED, C_MAPMAX, C_SWAPCACHE, C_ACTIVE, C_WRITEBACK, C_PAGESIZE, _C_MAX };
static const char *const counter_names[_C_MAX] = {
        "anon", "dirty", "mapped", "mapmax", "swapcache", "active", "writeback", "kernelpagesize_kB",
};

static uint64_t *counter_field(struct vma *v, unsigned c) {
        switch (c) {
        case C_ANON: return &v->anon;
        case C_DIRTY: return &v->dirty;
        case C_MAPPED: return &v->mapped;
        case C_MAPMAX: return &v->mapmax;
        case C_SWAPCACHE: return &v->swapcache;
        case C_ACTIVE: return &v->active;
        case C_WRITEBACK: return &v->writeback;
        default: return &v->page_size_kb;
        }
}

/* What one line has shown so far: a key given twice makes the line bad. */
struct line_state {
        char *path;        /* owned here until the line is known to be good */
        nb_nodemask seen;  /* nodes with a count */
        unsigned have;     /* counters seen, by bit */
        bool have_kind;
        bool keep_path;    /* copy file= (parser.keep_paths) */
};

static void line_state_done(struct line_state *st) {
        free(st->path);
}

/* The start address and the memory policy, "7f0000000000 prefer (many)=static:0-1".
 * On success *ret_end is the offset just after the policy. */
static int parse_start_and_policy(const char *s, size_t len, struct vma *v, size_t *ret_end) {
        const char *sp, *pe;
        size_t i, pl;

        sp = memchr(s, ' ', len);
        if (!sp)
                return -EINVAL;
        if (parse_hex_u64_n(s, (size_t) (sp - s), &v->start) < 0)
                return -EINVAL;

        /* The policy ends at the first space, except inside the two mode names that
         * hold one. */
        i = (size_t) (sp - s) + 1;
        pl = 0;
        if (has_prefix(s + i, len - i, "prefer (many)", 13))
                pl = 13;
        else if (has_prefix(s + i, len - i, "weighted interleave", 19))
                pl = 19;
        pe = memchr(s + i + pl, ' ', len - i - pl);
        pl = pe ? (size_t) (pe - (s + i)) : len - i;
        if (pl > MPOL_STR_MAX)
                return -EINVAL;
        if (numa_maps_mempolicy_parse(s + i, pl, &v->policy) < 0)
                return -EINVAL;
        *ret_end = i + pl;
        return 0;
}

/* "file=PATH", "heap", "stack" and "huge": 1 if the token is one of them, 0 if not,
 * or -EINVAL, -ENOMEM. file= comes first: the path is escaped, so it holds no space,
 * but it may hold '=' look-alikes ("\075") and "N0" text: it is never looked into. */
static int parse_kind(const char *t, size_t tl, struct vma *v, struct line_state *st) {
        if (has_prefix(t, tl, "file=", 5)) {
                if (st->have_kind)
                        return -EINVAL;
                st->have_kind = true;
                v->kind = VMA_FILE;
                if (!st->keep_path)
                        return 1;
                st->path = strndup(t + 5, tl - 5);
                if (!st->path)
                        return -ENOMEM;
                return 1;
        }
        if (is_word(t, tl, "heap") || is_word(t, tl, "stack")) {
                if (st->have_kind)
                        return -EINVAL;
                st->have_kind = true;
                v->kind = t[0] == 'h' ? VMA_HEAP : VMA_STACK;
                return 1;
        }
        if (is_word(t, tl, "huge")) {
                if (v->hugetlb)
                        return -EINVAL;
                v->hugetlb = true;
                return 1;
        }
        return 0;
}

/* "N<node>=<pages>" (kl: the length of the key, eq: the '=' or NULL). The count is
 * appended to p->m->np. */
static int parse_node_count(struct parser *p, const char *t, size_t tl, size_t kl, const char *eq,
                            struct vma *v, struct line_state *st) {
        struct numa_maps *m = p->m;
        uint64_t node, pages;
        int r;

        if (!eq)
                return -EINVAL;
        if (parse_u64_n(t + 1, kl - 1, 0, NB_NODES_MAX - 1, &node) < 0 ||
            parse_u64_n(eq + 1, tl - kl - 1, 0, UINT64_MAX, &pages) < 0)
                return -EINVAL;
        if (nodemask_test(&st->seen, (unsigned) node))
                return -EINVAL;
        nodemask_set(&st->seen, (unsigned) node);
        if (pages > UINT64_MAX - v->pages)
                return -EINVAL;
        v->pages += pages;
        r = grow((void **) &m->np, &p->np_alloc, m->n_np, sizeof(*m->np));
        if (r < 0)
                return r;
        m->np[m->n_np++] = (struct node_pages) { .node = (uint32_t) node, .pages = pages };
        v->np_count++;
        return 0;
}

/* "anon=3" and the other counters of counter_names: 1 if the token is one, 0 if
 * not, or -EINVAL. */
static int parse_counter(const char *t, size_t tl, size_t kl, const char *eq, struct vma *v,
                         struct line_state *st) {
        uint64_t val;
        unsigned c;

        for (c = 0; c < _C_MAX; c++)
                if (is_word(t, kl, counter_names[c]))
                        break;
        if (c == _C_MAX)
                return 0;
        if (!eq || (st->have & (1u << c)))
                return -EINVAL;
        if (parse_u64_n(eq + 1, tl - kl - 1, c == C_PAGESIZE ? 1 : 0, UINT64_MAX, &val) < 0)
                return -EINVAL;
        st->have |= 1u << c;
        *counter_field(v, c) = val;
        return 1;
}

/* One token after the policy. */
static int parse_token(struct parser *p, const char *t, size_t tl, struct vma *v, struct line_state *st) {
        const char *eq;
        size_t kl;
        int r;

        r = parse_kind(t, tl, v, st);
        if (r != 0)
                return r < 0 ? r : 0;

        eq = memchr(t, '=', tl);
        kl = eq ? (size_t) (eq - t) : tl;
        if (t[0] == 'N' && (kl == 1 || (t[1] >= '0' && t[1] <= '9')))
                return parse_node_count(p, t, tl, kl, eq, v, st);

        r = parse_counter(t, tl, kl, eq, v, st);
        if (r != 0)
                return r < 0 ? r : 0;

        /* Something a newer kernel prints: skip it if it looks like a key. */
        return is_ident(t, kl) ? 0 : -EINVAL;
}

/* One line. Returns 0, -EINVAL (a bad line: the caller counts it) or -ENOMEM.
 * Per-node entries are appended to p->m->np as they are read; on -EINVAL the
 * caller drops them again. */
static int parse_line(struct parser *p, const char *s, size_t len, unsigned lineno, struct vma *ret) {
        /* A VMA with no page present prints no counters, kernelpagesize_kB included:
         * its unit is then the base page size. */
        struct vma v = { .line = lineno, .page_size_kb = page_size() / 1024, .np_off = p->m->n_np };
        _cleanup_(line_state_done) struct line_state st = { .keep_path = p->keep_paths };
        size_t i;
        int r;

        /* The kernel writes no NUL bytes: a line with one is not from it. */
        if (len == 0 || memchr(s, 0, len))
                return -EINVAL;

        r = parse_start_and_policy(s, len, &v, &i);
        if (r < 0)
                return r;

        while (i < len) {
                const char *t, *te;
                size_t tl;

                /* Exactly one space between tokens, none at the end. */
                i++;
                t = s + i;
                te = memchr(t, ' ', len - i);
                tl = te ? (size_t) (te - t) : len - i;
                if (tl == 0)
                        return -EINVAL;
                i += tl;

                r = parse_token(p, t, tl, &v, &st);
                if (r < 0)
                        return r;
        }

        v.path = TAKE_PTR(st.path);
        *ret = v;
        return 0;
}

/* Where the policy of a record that starts at s ends: at the first space after the
 * address and the mode name (two names hold one), or at the end when s[0..len) is a
 * whole line (complete). NULL when the record was cut before it. */
static const char *policy_end(const char *s, size_t len, bool complete) {
        const char *sp = memchr(s, ' ', len), *pe;
        size_t i, skip = 0;

        if (!sp)
                return NULL;
        i = (size_t) (sp - s) + 1;
        for (size_t k = 0; k < 2; k++) {
                const char *name = k ? "weighted interleave" : "prefer (many)";
                size_t name_len = strlen(name), have = len - i < name_len ? len - i : name_len;

                if (memcmp(s + i, name, have) != 0)
                        continue;
                if (have < name_len && !complete)
                        return NULL; /* cut inside a name that holds a space */
                skip = have;
        }
        pe = memchr(s + i + skip, ' ', len - i - skip);
        return pe ? pe : complete ? s + len : NULL;
}

int numa_maps_parse_head(const char *buf, size_t len, uint64_t *ret_start, struct mempolicy *ret_policy) {
        const char *nl, *pe;
        struct vma v = {};
        size_t end;

        if (!buf || len == 0)
                return -EINVAL;
        nl = memchr(buf, '\n', len);
        if (nl)
                len = (size_t) (nl - buf);
        pe = policy_end(buf, len, nl != NULL);
        if (!pe)
                /* Address and policy fit in 16 + 1 + 63 bytes: past that, it is not the
                 * kernel's. */
                return nl || len > 16 + 1 + MPOL_STR_MAX ? -EINVAL : -EAGAIN;
        if (memchr(buf, 0, (size_t) (pe - buf)))
                return -EINVAL;
        if (parse_start_and_policy(buf, (size_t) (pe - buf), &v, &end) < 0)
                return -EINVAL;
        *ret_start = v.start;
        *ret_policy = v.policy;
        return 0;
}

static void bad_line(struct numa_maps *m, unsigned lineno) {
        if (m->n_bad_lines < NUMA_MAPS_BAD_LINES_KEPT)
                m->bad_lines[m->n_bad_lines] = lineno;
        if (m->n_bad_lines < UINT32_MAX)
                m->n_bad_lines++;
}

/* One line from proc_lines_*(): a VMA, or a bad line counted with its number. */
static int numa_maps_line(void *ctx, const char *s, size_t len, bool cut) {
        struct parser *p = ctx;
        struct numa_maps *m = p->m;
        size_t np_mark = m->n_np;
        struct vma v;
        int r;

        p->lineno++;
        /* Empty lines at the end (and a missing final newline) are fine; an empty
         * line in the middle is not something the kernel writes. */
        if (len == 0 && !cut) {
                p->empty_run++;
                return 0;
        }
        for (; p->empty_run; p->empty_run--)
                bad_line(m, p->lineno - p->empty_run);
        if (p->lineno > p->vmas_max)
                return -E2BIG;
        /* A cut line lost its counters: it cannot be read. */
        r = cut ? -EINVAL : parse_line(p, s, len, p->lineno, &v);
        if (r == -ENOMEM)
                return r;
        if (r < 0) {
                m->n_np = np_mark;
                bad_line(m, p->lineno);
                return 0;
        }
        r = grow((void **) &m->vmas, &p->vmas_alloc, m->n_vmas, sizeof(*m->vmas));
        if (r < 0) {
                free(v.path);
                return r;
        }
        m->vmas[m->n_vmas++] = v;
        return 0;
}

static int parser_init(struct parser *p, bool keep_paths, size_t vmas_max) {
        int r;

        *p = (struct parser) { .keep_paths = keep_paths, .vmas_max = vmas_max };
        p->m = calloc(1, sizeof(*p->m));
        if (!p->m)
                return -ENOMEM;
        /* np is never NULL, so that vma_node_pages() of a VMA without counts is
         * m->np + 0 on a real array (NULL + 0 is undefined behaviour in C). */
        r = grow((void **) &p->m->np, &p->np_alloc, 0, sizeof(*p->m->np));
        if (r < 0)
                numa_maps_free(TAKE_PTR(p->m));
        return r;
}

static int parser_done(struct parser *p, int r, struct numa_maps **ret) {
        if (r < 0) {
                numa_maps_free(p->m);
                return r;
        }
        if (p->m->n_bad_lines > 0)
                log_debug("numa_maps: %u malformed line(s) skipped, first at line %u", p->m->n_bad_lines,
                          p->m->bad_lines[0]);
        *ret = p->m;
        return 0;
}

int numa_maps_parse(const char *buf, size_t len, struct numa_maps **ret) {
        struct parser p;
        int r;

        if (!buf && len > 0)
                return -EINVAL;
        r = parser_init(&p, true, SIZE_MAX);
        if (r < 0)
                return r;
        return parser_done(&p, proc_lines_buf(buf, len, &proc_lines_default, numa_maps_line, &p, NULL), ret);
}

int numa_maps_read_path(const char *path, const struct proc_lines_opts *o, bool keep_paths,
                        struct numa_maps **ret) {
        struct parser p;
        int r;

        r = parser_init(&p, keep_paths, o->vmas_max);
        if (r < 0)
                return r;
        r = proc_lines_path(path, o, numa_maps_line, &p, NULL);
        if (r < 0)
                log_debug_errno(r, "Failed to read %s: %m", path);
        return parser_done(&p, r, ret);
}

int numa_maps_read(const char *proc_root, pid_t pid, struct numa_maps **ret) {
        _cleanup_free_ char *path = NULL;

        if (!proc_root || pid <= 0 || !ret)
                return -EINVAL;
        path = proc_lines_pid_path(proc_root, pid, "numa_maps");
        if (!path)
                return -ENOMEM;
        return numa_maps_read_path(path, &proc_lines_default, false, ret);
}
