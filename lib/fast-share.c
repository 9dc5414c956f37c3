/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <errno.h>
#include <string.h>
#include "fast-share.h"
#include "parse.h"

int fast_share_parse(const char *v, size_t len, int *ret_pct) {
        uint64_t pct;

        if (len < 2 || v[len - 1] != '%' || parse_u64_n(v, len - 1, 0, 100, &pct) < 0)
                return -EINVAL;
        *ret_pct = (int) pct;
        return 0;
}

/* One "N<id>=<bytes>" token at s (n bytes): adds bytes to ret at id's index. */
static void add_token(const char *s, size_t n, const struct topology *t, uint64_t *ret) {
        const char *eq = n > 1 && s[0] == 'N' ? memchr(s, '=', n) : NULL;
        uint64_t id, bytes;
        int idx;

        if (!eq || parse_u64_n(s + 1, (size_t) (eq - s - 1), 0, NB_NODES_MAX - 1, &id) < 0 ||
            parse_u64_n(eq + 1, n - (size_t) (eq - s) - 1, 0, UINT64_MAX, &bytes) < 0)
                return;   /* not a count the kernel writes */
        idx = topology_node_index(t, (unsigned) id);
        if (idx >= 0)
                ret[idx] = ret[idx] > UINT64_MAX - bytes ? UINT64_MAX : ret[idx] + bytes;
}

/* One line (without its newline): its counts when it is the anon or file line. */
static bool add_line(const char *line, size_t n, const struct topology *t, uint64_t *ret) {
        size_t w = 0;

        if (n > 5 && memcmp(line, "anon ", 5) == 0)
                w = 5;
        else if (n > 5 && memcmp(line, "file ", 5) == 0)
                w = 5;
        if (!w)
                return false;
        while (w < n) {
                size_t e = w;

                while (e < n && line[e] != ' ')
                        e++;
                add_token(line + w, e - w, t, ret);
                w = e + 1;
        }
        return true;
}

int fast_share_usage_parse(const char *buf, size_t len, const struct topology *t, uint64_t *ret) {
        bool found = false;
        size_t s = 0;

        memset(ret, 0, t->n_nodes * sizeof(*ret));
        while (s < len) {
                const char *nl = memchr(buf + s, '\n', len - s);
                size_t e = nl ? (size_t) (nl - buf) : len;

                found |= add_line(buf + s, e - s, t, ret);
                s = e + 1;
        }
        return found ? 0 : -EINVAL;
}

uint64_t fast_share_bytes(uint64_t total_kb, int pct) {
        if (pct <= 0)
                return 0;
        return total_kb / 100 * (uint64_t) pct * 1024 + total_kb % 100 * (uint64_t) pct * 1024 / 100;
}

uint64_t fast_share_excess(uint64_t used, uint64_t total_kb, int pct) {
        uint64_t keep = fast_share_bytes(total_kb, pct);

        if (pct < 0)
                return UINT64_MAX;
        return used > keep ? used - keep : 0;
}
