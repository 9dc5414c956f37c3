/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Sets of ids as word arrays, in the kernel's list syntax (idlist.h). */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include "idlist.h"
#include "parse.h"

static bool is_space(char c) { return c == ' ' || c == '\t' || c == '\n'; }

/* Parses one id: decimal digits only, below nbits. */
static int parse_id(const char *s, size_t len, unsigned nbits, unsigned *ret) {
        uint64_t v;
        int r;

        if (len == 0)
                return -EINVAL;
        r = parse_u64_n(s, len, 0, UINT64_MAX, &v);
        if (r < 0)
                return r;
        if (v >= nbits)
                return -ERANGE;
        *ret = (unsigned) v;
        return 0;
}

int idlist_parse_n(const char *s, size_t len, uint64_t *words, unsigned nbits) {
        uint64_t tmp[IDLIST_BITS_MAX / 64] = {};
        size_t i = 0, end = len;

        if (nbits > IDLIST_BITS_MAX || nbits % 64)
                return -EINVAL;
        while (i < end && is_space(s[i]))
                i++;
        while (end > i && is_space(s[end - 1]))
                end--;

        while (i < end) {
                size_t e = i, dash = 0;
                unsigned a, b;
                int r;

                while (e < end && s[e] != ',') {
                        if (s[e] == '-' && !dash)
                                dash = e;
                        e++;
                }
                if (dash) {
                        r = parse_id(s + i, dash - i, nbits, &a);
                        if (r < 0)
                                return r;
                        r = parse_id(s + dash + 1, e - dash - 1, nbits, &b);
                        if (r < 0)
                                return r;
                        if (b < a)
                                return -EINVAL;
                } else {
                        r = parse_id(s + i, e - i, nbits, &a);
                        if (r < 0)
                                return r;
                        b = a;
                }
                for (unsigned x = a; x <= b; x++)
                        tmp[x / 64] |= UINT64_C(1) << (x % 64);

                if (e < end) {
                        e++; /* the comma */
                        if (e == end)
                                return -EINVAL; /* trailing comma */
                }
                i = e;
        }
        memcpy(words, tmp, nbits / 8);
        return 0;
}

static bool bit(const uint64_t *w, unsigned i) { return (w[i / 64] >> (i % 64)) & 1; }

size_t idlist_format(const uint64_t *words, unsigned nbits, char *buf, size_t size) {
        size_t n = 0;
        bool first = true;

        if (size > 0)
                buf[0] = 0;
        for (unsigned i = 0; i < nbits; i++) {
                unsigned j;
                char tmp[32];
                int l;

                if (!bit(words, i))
                        continue;
                for (j = i; j + 1 < nbits && bit(words, j + 1); j++)
                        ;
                if (i == j)
                        l = snprintf(tmp, sizeof(tmp), "%s%u", first ? "" : ",", i);
                else
                        l = snprintf(tmp, sizeof(tmp), "%s%u-%u", first ? "" : ",", i, j);
                if (n + (size_t) l < size)
                        memcpy(buf + n, tmp, (size_t) l + 1);
                else if (size > 0)
                        buf[n < size ? n : size - 1] = 0;
                n += (size_t) l;
                first = false;
                i = j;
        }
        return n;
}

unsigned idlist_weight(const uint64_t *w, size_t n) {
        unsigned c = 0;
        for (size_t i = 0; i < n; i++)
                c += (unsigned) __builtin_popcountll(w[i]);
        return c;
}

int idlist_next(const uint64_t *w, unsigned nbits, unsigned from) {
        for (unsigned i = from; i < nbits;) {
                uint64_t word = w[i / 64] >> (i % 64);
                if (word)
                        return (int) (i + (unsigned) __builtin_ctzll(word));
                i = (i / 64 + 1) * 64;
        }
        return -1;
}
