// SPDX-License-Identifier: GPL-2.0-or-later
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include "cleanup.h"
#include "page-agg.h"
#include "siphash.h"
#include "pagesize.h"
#include "parse.h"

/* Open addressing on the page number; counts[] is slots x n_nodes, by topology index. */
struct page_agg {
        const struct topology *t;
        uint64_t page_mask;
        uint64_t *pages;              /* page address + 1; 0 = empty slot */
        uint64_t *counts;
        uint32_t *stamps;             /* the clock at the page's latest sample */
        uint32_t clock;               /* page_agg_set_clock(): stamps what is added */
        size_t slots, used;
        uint64_t samples, no_node;
        uint64_t fresh;               /* samples added since it was made (carried ones are not) */
        uint8_t key[SIPHASH_KEY_SIZE];  /* of the slots: the addresses are the tenant's to choose */
        size_t longest_probe;         /* the longest run of slots a lookup walked */
};

/* A mixer for the clock (page_agg_carry's starting place), not for addresses. */
static uint64_t hash64(uint64_t x) {
        x ^= x >> 33;
        x *= 0xff51afd7ed558ccdull;
        x ^= x >> 33;
        return x;
}

int page_agg_new(const struct topology *t, uint64_t unit, struct page_agg **ret) {
        struct page_agg *a;

        /* Below the base page size, two halves of one page would count apart. */
        if (!t || !t->n_nodes || unit < page_size() || (unit & (unit - 1)))
                return -EINVAL;
        a = calloc(1, sizeof(*a));
        if (!a)
                return -ENOMEM;
        a->t = t;
        a->page_mask = ~(unit - 1);
        siphash_random_key(a->key);
        a->slots = 1024;
        a->pages = calloc(a->slots, sizeof(*a->pages));
        a->counts = calloc(a->slots * t->n_nodes, sizeof(*a->counts));
        a->stamps = calloc(a->slots, sizeof(*a->stamps));
        if (!a->pages || !a->counts || !a->stamps) {
                page_agg_free(a);
                return -ENOMEM;
        }
        *ret = a;
        return 0;
}

void page_agg_free(struct page_agg *a) {
        if (!a)
                return;
        free(a->pages);
        free(a->counts);
        free(a->stamps);
        free(a);
}

void page_agg_set_clock(struct page_agg *a, uint32_t now) {
        a->clock = now;
}

/* The slot of key (a page address + 1), or the empty one where it goes: linear
 * probing from a keyed hash. The page addresses are the sampled process's to choose,
 * and an invertible hash let it put every page in one run of slots, each lookup then
 * walking all of them (quadratic); with SipHash under a key drawn per aggregate it
 * cannot aim. */
static size_t find_slot(struct page_agg *a, const uint64_t *pages, size_t slots, uint64_t key) {
        size_t i = siphash24(&key, sizeof(key), a->key) & (slots - 1), probe = 0;

        while (pages[i] && pages[i] != key) {
                i = (i + 1) & (slots - 1);
                probe++;
        }
        if (probe > a->longest_probe)
                a->longest_probe = probe;
        return i;
}

size_t page_agg_longest_probe(const struct page_agg *a) {
        return a ? a->longest_probe : 0;
}

static int grow(struct page_agg *a) {
        size_t n = a->slots * 2, nn = a->t->n_nodes;
        uint64_t *pages = calloc(n, sizeof(*pages)), *counts = calloc(n * nn, sizeof(*counts));
        uint32_t *stamps = calloc(n, sizeof(*stamps));

        if (!pages || !counts || !stamps) {
                free(pages);
                free(counts);
                free(stamps);
                return -ENOMEM;
        }
        for (size_t i = 0; i < a->slots; i++) {
                size_t j;
                if (!a->pages[i])
                        continue;
                j = find_slot(a, pages, n, a->pages[i]);
                pages[j] = a->pages[i];
                stamps[j] = a->stamps[i];
                memcpy(&counts[j * nn], &a->counts[i * nn], nn * sizeof(*counts));
        }
        free(a->pages);
        free(a->counts);
        free(a->stamps);
        a->pages = pages;
        a->counts = counts;
        a->stamps = stamps;
        a->slots = n;
        return 0;
}

static int add(struct page_agg *a, uint64_t addr, int idx, uint64_t count) {
        uint64_t key = (addr & a->page_mask) + 1;
        size_t i;

        /* Keep the load under 1/2: probes stay short. */
        if ((a->used + 1) * 2 > a->slots) {
                int r = grow(a);
                if (r < 0)
                        return r;
        }
        i = find_slot(a, a->pages, a->slots, key);
        if (!a->pages[i]) {
                a->pages[i] = key;
                a->used++;
        }
        a->counts[i * a->t->n_nodes + (size_t) idx] += count;
        a->stamps[i] = a->clock;
        a->samples += count;
        return 0;
}

int page_agg_add(struct page_agg *a, const struct page_sample *s) {
        int node = topology_cpu_node(a->t, s->cpu);
        int idx = node >= 0 ? topology_node_index(a->t, (unsigned) node) : -1;

        if (idx < 0) {
                a->no_node++;
                return -EINVAL;
        }
        a->fresh++;
        return add(a, s->addr, idx, 1);
}

int page_agg_add_counts(struct page_agg *a, uint64_t addr, unsigned node, uint64_t count) {
        int idx = topology_node_index(a->t, node);

        if (idx < 0) {
                a->no_node += count;
                return -EINVAL;
        }
        a->fresh += count;
        return count ? add(a, addr, idx, count) : 0;
}

static int cmp_move(const void *x, const void *y) {
        const struct page_move *a = x, *b = y;
        return (a->page > b->page) - (a->page < b->page);
}

int page_agg_decide(const struct page_agg *a, unsigned min_samples, struct page_decision *ret) {
        struct page_decision d = { .samples = a->samples, .no_node = a->no_node };
        size_t nn = a->t->n_nodes;

        if (min_samples < 1)
                return -EINVAL;
        d.moves = calloc(a->used ? a->used : 1, sizeof(*d.moves));
        if (!d.moves)
                return -ENOMEM;
        for (size_t i = 0; i < a->slots; i++) {
                const uint64_t *c = &a->counts[i * nn];
                size_t nodes_seen = 0, last = 0;

                if (!a->pages[i])
                        continue;
                d.pages++;
                for (size_t k = 0; k < nn; k++)
                        if (c[k]) {
                                nodes_seen++;
                                last = k;
                        }
                if (nodes_seen > 1)
                        d.shared++;
                else if (c[last] < min_samples)
                        d.too_few++;
                else
                        d.moves[d.n_moves++] = (struct page_move) {
                                .page = a->pages[i] - 1,
                                .node = a->t->nodes[last].id,
                                .samples = c[last],
                        };
        }
        qsort(d.moves, d.n_moves, sizeof(*d.moves), cmp_move);
        *ret = d;
        return 0;
}

/* The one node slot i was seen from, or -1 when none or several. */
static int only_node(const struct page_agg *a, size_t i) {
        const uint64_t *c = &a->counts[i * a->t->n_nodes];
        int node = -1;

        for (size_t k = 0; k < a->t->n_nodes; k++)
                if (c[k]) {
                        if (node >= 0)
                                return -1;
                        node = (int) k;
                }
        return node;
}

int page_agg_carry(const struct page_agg *a, unsigned min_samples, uint32_t oldest, size_t max_pages,
                   struct page_agg **ret) {
        struct page_agg *n = NULL;
        size_t nn = a->t->n_nodes;
        int r;

        *ret = NULL;
        r = page_agg_new(a->t, ~a->page_mask + 1, &n);
        if (r < 0)
                return r;
        /* From a place that moves with the clock: over the cap, each scan keeps other
         * pages, not always those the hash put first. */
        for (size_t j = 0, i0 = (size_t) hash64(a->clock); j < a->slots && n->used < max_pages; j++) {
                size_t i = (i0 + j) & (a->slots - 1);
                int k;

                /* Older than oldest: stale. Wrapping clocks compare by difference. */
                if (!a->pages[i] || (int32_t) (a->stamps[i] - oldest) < 0 || (k = only_node(a, i)) < 0 ||
                    a->counts[i * nn + (size_t) k] >= min_samples)
                        continue;
                n->clock = a->stamps[i];
                r = add(n, a->pages[i] - 1, k, a->counts[i * nn + (size_t) k]);
                if (r < 0) {
                        page_agg_free(n);
                        return r;
                }
        }
        n->clock = a->clock;
        if (!n->used) {
                page_agg_free(n);
                return 0;
        }
        *ret = n;
        return 0;
}

size_t page_agg_pages(const struct page_agg *a) {
        return a ? a->used : 0;
}

uint64_t page_agg_fresh(const struct page_agg *a) {
        return a ? a->fresh : 0;
}

void page_agg_decision_done(struct page_decision *d) {
        if (!d)
                return;
        free(d->moves);
        *d = (struct page_decision) {};
}

int page_agg_parse_line(const char *s, size_t l, struct page_sample *ret) {
        const char *f[3];
        size_t fl[3], nf = 0, k = 0;
        uint64_t tid, cpu, addr;

        /* Split on spaces and tabs into at most 3 fields. */
        while (k < l) {
                while (k < l && (s[k] == ' ' || s[k] == '\t' || s[k] == '\r'))
                        k++;
                if (k == l || s[k] == '#')
                        break;
                if (nf == 3)
                        return -EINVAL;
                f[nf] = s + k;
                while (k < l && s[k] != ' ' && s[k] != '\t' && s[k] != '\r')
                        k++;
                fl[nf] = (size_t) (s + k - f[nf]);
                nf++;
        }
        if (nf == 0)
                return 0;
        if (nf != 3 || parse_u64_n(f[0], fl[0], 1, INT32_MAX, &tid) < 0 ||
            parse_u64_n(f[1], fl[1], 0, 8191, &cpu) < 0 || fl[2] < 3 || f[2][0] != '0' ||
            (f[2][1] != 'x' && f[2][1] != 'X') || parse_hex_u64_n(f[2] + 2, fl[2] - 2, &addr) < 0)
                return -EINVAL;
        *ret = (struct page_sample) { .tid = (pid_t) tid, .cpu = (unsigned) cpu, .addr = addr };
        return 1;
}

int page_agg_parse_samples(const char *buf, size_t len, struct page_sample **ret, size_t *ret_n,
                       unsigned *ret_bad_line) {
        _cleanup_free_ struct page_sample *v = NULL;
        size_t n = 0, cap = 0;
        unsigned line = 0;

        for (size_t pos = 0; pos < len;) {
                const char *s = buf + pos, *nl = memchr(s, '\n', len - pos);
                size_t l = nl ? (size_t) (nl - s) : len - pos;
                struct page_sample one;
                int r;

                pos += l + (nl ? 1 : 0);
                line++;
                r = page_agg_parse_line(s, l, &one);
                if (r < 0) {
                        if (ret_bad_line)
                                *ret_bad_line = line;
                        return r;
                }
                if (r == 0)
                        continue;
                if (n == cap) {
                        size_t nc = cap ? cap * 2 : 256;
                        struct page_sample *nv = realloc(v, nc * sizeof(*nv));
                        if (!nv)
                                return -ENOMEM;
                        v = nv;
                        cap = nc;
                }
                v[n++] = one;
        }
        *ret = TAKE_PTR(v);
        *ret_n = n;
        return 0;
}
