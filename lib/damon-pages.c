/* SPDX-License-Identifier: GPL-2.0-or-later */
#include "damon-pages.h"

size_t damon_pages_targets(const struct damon_range *in, size_t n, struct damon_range *out, size_t max) {
        size_t k = 0;

        for (size_t i = 0; i < n; i++) {
                if (in[i].end <= in[i].start)
                        continue;
                if (k < max) {
                        out[k++] = in[i];
                        continue;
                }
                /* Full: merge the pair of neighbours with the smallest gap, the new
                 * range included as the last one. */
                size_t best = 0;
                uint64_t gap = UINT64_MAX;

                for (size_t j = 0; j + 1 < k; j++)
                        if (out[j + 1].start - out[j].end < gap) {
                                gap = out[j + 1].start - out[j].end;
                                best = j;
                        }
                if (k == 1 || in[i].start - out[k - 1].end <= gap) {
                        out[k - 1].end = in[i].end;
                        continue;
                }
                out[best].end = out[best + 1].end;
                for (size_t j = best + 1; j + 1 < k; j++)
                        out[j] = out[j + 1];
                out[k - 1] = in[i];
        }
        return k;
}

uint64_t damon_pages_feed(const struct damon_range *hot, size_t n_hot, const struct damon_range *ranges,
                          size_t n_ranges, uint64_t page, uint64_t cap,
                          void (*fn)(void *userdata, uint64_t addr), void *userdata, uint64_t *ret_capped) {
        uint64_t fed = 0, capped = 0;

        for (size_t h = 0; h < n_hot; h++) {
                if (hot[h].end <= hot[h].start)
                        continue;
                for (size_t r = 0; r < n_ranges; r++) {
                        uint64_t s = hot[h].start > ranges[r].start ? hot[h].start : ranges[r].start;
                        uint64_t e = hot[h].end < ranges[r].end ? hot[h].end : ranges[r].end;

                        if (s >= e)
                                continue;
                        s &= ~(page - 1);
                        for (uint64_t a = s; a < e && a >= s; a += page) {
                                if (fed >= cap) {
                                        capped += (e - a + page - 1) / page;
                                        break;
                                }
                                fn(userdata, a);
                                fed++;
                        }
                }
        }
        if (ret_capped)
                *ret_capped = capped;
        return fed;
}
