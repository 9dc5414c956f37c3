// SPDX-License-Identifier: GPL-2.0-or-later
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include "cleanup.h"
#include "sampled-cold.h"
#include "siphash.h"

/* One window: its blocks' sample counts by open addressing (count 0: an empty slot),
 * keyed, as the addresses are the sampled process's to choose (page-agg.c). */
struct window {
        uint64_t *blocks;
        uint64_t *counts;
        size_t slots, used;
        uint64_t start_ms, samples, once;
        bool full;
        bool gap;                     /* SAMPLED_COLD_FRESH_MS without a sample, within or before it */
};

struct sampled_cold {
        struct sampled_cold_pool *pool;
        struct window cur, closed;
        bool have_closed;
        uint64_t age_ms;              /* the windows' length: another starts them over */
        uint64_t last_ms;             /* the latest sample */
        uint8_t key[SIPHASH_KEY_SIZE];
};

static void window_clear(struct sampled_cold *c, struct window *w) {
        c->pool->used -= w->used;
        free(w->blocks);
        free(w->counts);
        *w = (struct window) {};
}

int sampled_cold_new(struct sampled_cold_pool *pool, struct sampled_cold **ret) {
        struct sampled_cold *c = calloc(1, sizeof(*c));

        if (!c)
                return -ENOMEM;
        c->pool = pool;
        siphash_random_key(c->key);
        *ret = c;
        return 0;
}

void sampled_cold_free(struct sampled_cold *c) {
        if (!c)
                return;
        window_clear(c, &c->cur);
        window_clear(c, &c->closed);
        free(c);
}

static size_t slot_of(const struct sampled_cold *c, const struct window *w, uint64_t block) {
        size_t i = siphash24(&block, sizeof(block), c->key) & (w->slots - 1);

        while (w->counts[i] && w->blocks[i] != block)
                i = (i + 1) & (w->slots - 1);
        return i;
}

/* Twice the slots (at most half of them used). A window that cannot grow is full. */
static int window_grow(const struct sampled_cold *c, struct window *w) {
        struct window n = *w;

        n.slots = w->slots ? 2 * w->slots : 1024;
        n.blocks = calloc(n.slots, sizeof(*n.blocks));
        n.counts = calloc(n.slots, sizeof(*n.counts));
        if (!n.blocks || !n.counts) {
                free(n.blocks);
                free(n.counts);
                return -ENOMEM;
        }
        for (size_t i = 0; i < w->slots; i++)
                if (w->counts[i]) {
                        size_t j = slot_of(c, &n, w->blocks[i]);

                        n.blocks[j] = w->blocks[i];
                        n.counts[j] = w->counts[i];
                }
        free(w->blocks);
        free(w->counts);
        *w = n;
        return 0;
}

static void window_add(struct sampled_cold *c, struct window *w, uint64_t block, uint64_t count) {
        size_t i;

        w->samples += count;
        if (w->full)
                return;
        if (w->slots && w->counts[i = slot_of(c, w, block)]) {
                w->once -= (w->counts[i] == 1);
                w->counts[i] += count;
                return;
        }
        if (c->pool->used >= SAMPLED_COLD_TOTAL_BLOCKS ||
            (2 * (w->used + 1) > w->slots && (w->used >= SAMPLED_COLD_BLOCKS || window_grow(c, w) < 0))) {
                w->full = true;
                return;
        }
        i = slot_of(c, w, block);
        w->blocks[i] = block;
        w->counts[i] = count;
        w->used++;
        c->pool->used++;
        w->once += (count == 1);
}

void sampled_cold_add(struct sampled_cold *c, uint64_t addr, uint64_t count, uint64_t now_ms, uint64_t age_ms) {
        /* No sample for SAMPLED_COLD_FRESH_MS: the sampler may not have reached the
         * process (quota, a restart), and what it touched then is not known. */
        bool gap = c->last_ms && now_ms - c->last_ms >= SAMPLED_COLD_FRESH_MS;

        if (!count)
                return;
        if (age_ms != c->age_ms) {
                window_clear(c, &c->cur);
                window_clear(c, &c->closed);
                c->have_closed = false;
                c->age_ms = age_ms;
                c->last_ms = 0;
                gap = false;
        }
        if (!c->last_ms)
                c->cur.start_ms = now_ms;
        if (now_ms - c->cur.start_ms >= age_ms) {
                window_clear(c, &c->closed);
                c->closed = c->cur;
                c->have_closed = true;
                c->cur = (struct window) { .start_ms = now_ms };
        }
        c->cur.gap |= gap;
        c->last_ms = now_ms;
        window_add(c, &c->cur, addr & ~(SAMPLED_COLD_BLOCK - 1), count);
}

bool sampled_cold_stale(const struct sampled_cold *c, uint64_t now_ms) {
        return !c->last_ms || now_ms - c->last_ms >= SAMPLED_COLD_FRESH_MS;
}

static enum sampled_cold_why why_of(const struct sampled_cold *c, uint64_t now_ms) {
        const struct window *w = &c->closed;

        if (sampled_cold_stale(c, now_ms))
                return SAMPLED_COLD_STALE;
        if (!c->have_closed)
                return SAMPLED_COLD_YOUNG;
        if (w->gap || c->cur.gap)
                return SAMPLED_COLD_GAP;
        if (w->full || c->cur.full)
                return SAMPLED_COLD_FULL;
        if (w->samples < SAMPLED_COLD_MIN_SAMPLES)
                return SAMPLED_COLD_FEW;
        if (w->once * 1000 > w->samples * SAMPLED_COLD_MISSED_PERMILLE)
                return SAMPLED_COLD_SPARSE;
        return SAMPLED_COLD_KNOWN;
}

bool sampled_cold_known(const struct sampled_cold *c, uint64_t now_ms, struct sampled_cold_state *st) {
        enum sampled_cold_why why = c ? why_of(c, now_ms) : SAMPLED_COLD_YOUNG;

        if (st) {
                *st = (struct sampled_cold_state) { .why = why };
                if (c && c->have_closed) {
                        st->samples = c->closed.samples;
                        st->blocks = c->closed.used;
                        st->missed_permille = c->closed.samples ? (unsigned) (c->closed.once * 1000 / c->closed.samples)
                                                                : 0;
                }
        }
        return why == SAMPLED_COLD_KNOWN;
}

bool sampled_cold_names_hot(const struct sampled_cold *c, uint64_t now_ms) {
        enum sampled_cold_why why = c ? why_of(c, now_ms) : SAMPLED_COLD_STALE;

        return why == SAMPLED_COLD_KNOWN || why == SAMPLED_COLD_YOUNG;
}

const char *sampled_cold_why_name(enum sampled_cold_why why) {
        static const char *const names[] = {
                [SAMPLED_COLD_KNOWN] = "known", [SAMPLED_COLD_YOUNG] = "young", [SAMPLED_COLD_FEW] = "few-samples",
                [SAMPLED_COLD_FULL] = "too-many-blocks", [SAMPLED_COLD_SPARSE] = "sparse", [SAMPLED_COLD_STALE] = "stale",
                [SAMPLED_COLD_GAP] = "gap",
        };

        return why < sizeof(names) / sizeof(*names) ? names[why] : "unknown";
}

static int cmp_u64(const void *a, const void *b) {
        uint64_t x = *(const uint64_t *) a, y = *(const uint64_t *) b;

        return x < y ? -1 : x > y;
}

/* Both windows' blocks, sorted (duplicates kept). */
static uint64_t *sampled_blocks(const struct sampled_cold *c, size_t *ret_n) {
        const struct window *w[] = { &c->closed, &c->cur };
        uint64_t *v = malloc((c->closed.used + c->cur.used + 1) * sizeof(*v));
        size_t n = 0;

        if (!v)
                return NULL;
        for (size_t k = 0; k < 2; k++)
                for (size_t i = 0; i < w[k]->slots; i++)
                        if (w[k]->counts[i])
                                v[n++] = w[k]->blocks[i];
        qsort(v, n, sizeof(*v), cmp_u64);
        *ret_n = n;
        return v;
}

/* [start, end) appended to out unless empty. */
static void put(struct damon_range *out, size_t *n, uint64_t start, uint64_t end) {
        if (start < end)
                out[(*n)++] = (struct damon_range) { start, end };
}

int sampled_cold_ranges(const struct sampled_cold *c, uint64_t now_ms, const struct damon_range *mapped,
                        size_t n_mapped, struct damon_range **ret, size_t *ret_n) {
        _cleanup_free_ uint64_t *hot = NULL;
        struct damon_range *out;
        size_t n_hot = 0, n = 0, h = 0;

        *ret = NULL;
        *ret_n = 0;
        if (!sampled_cold_known(c, now_ms, NULL) || !n_mapped)
                return 0;
        if (!(hot = sampled_blocks(c, &n_hot)) || !(out = calloc(n_mapped + n_hot, sizeof(*out))))
                return -ENOMEM;
        /* Each sampled block cuts the mapped range it meets: at most one more range. A
         * block begins before the range it reaches into at most (blocks are aligned). */
        for (size_t m = 0; m < n_mapped; m++) {
                uint64_t from = mapped[m].start;

                while (h < n_hot && hot[h] + SAMPLED_COLD_BLOCK <= mapped[m].start)
                        h++;
                for (; h < n_hot && hot[h] < mapped[m].end; h++) {
                        put(out, &n, from, hot[h]);
                        if (hot[h] + SAMPLED_COLD_BLOCK > from)
                                from = hot[h] + SAMPLED_COLD_BLOCK;
                }
                /* The block that reached past this range may reach into the next. */
                if (h && hot[h - 1] + SAMPLED_COLD_BLOCK > mapped[m].end)
                        h--;
                put(out, &n, from, mapped[m].end);
        }
        *ret = out;
        *ret_n = n;
        return 0;
}
