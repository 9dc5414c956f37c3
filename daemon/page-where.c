/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <unistd.h>
#include "cleanup.h"
#include "pagesize.h"
#include "page-where.h"

int page_where_query(pid_t pid, size_t n, void **pages, int *status) {
        if (syscall(SYS_move_pages, pid, (unsigned long) n, pages, NULL, status, 0) < 0)
                return -errno;
        return 0;
}

/* Marks in placed[] the pages of d->moves[from, from + n) on their node already. */
static int query_chunk(page_where_query_fn query, pid_t pid, const struct page_decision *d, size_t from, size_t n,
                       void **addrs, int *status, bool *placed) {
        int r;

        for (size_t i = 0; i < n; i++)
                addrs[i] = (void *) (uintptr_t) d->moves[from + i].page;
        r = query(pid, n, addrs, status);
        if (r < 0)
                return r;
        for (size_t i = 0; i < n; i++)
                placed[from + i] = status[i] >= 0 && (unsigned) status[i] == d->moves[from + i].node;
        return 0;
}

ssize_t page_where_drop_placed(page_where_query_fn query, pid_t pid, struct page_decision *d) {
        _cleanup_free_ void **addrs = NULL;
        _cleanup_free_ int *status = NULL;
        _cleanup_free_ bool *placed = NULL;
        size_t chunk = d->n_moves < PAGE_WHERE_CHUNK ? d->n_moves : PAGE_WHERE_CHUNK, k = 0, dropped;
        int r = 0;

        if (!d->n_moves)
                return 0;
        addrs = calloc(chunk, sizeof(*addrs));
        status = calloc(chunk, sizeof(*status));
        placed = calloc(d->n_moves, sizeof(*placed));
        if (!addrs || !status || !placed)
                return -ENOMEM;
        for (size_t from = 0; from < d->n_moves && r >= 0; from += chunk) {
                size_t n = d->n_moves - from < chunk ? d->n_moves - from : chunk;

                r = query_chunk(query, pid, d, from, n, addrs, status, placed);
        }
        for (size_t i = 0; i < d->n_moves; i++)
                if (!placed[i])
                        d->moves[k++] = d->moves[i];
        dropped = d->n_moves - k;
        d->n_moves = k;
        return r < 0 ? r : (ssize_t) dropped;
}

/* Pages a call of page_where_bytes_on() asks at once (on its stack). */
#define PAGE_WHERE_ASK 1024

uint64_t page_where_bytes_on(page_where_query_fn query, pid_t pid, uint64_t start, uint64_t end, unsigned node,
                             uint64_t *budget) {
        void *addrs[PAGE_WHERE_ASK];
        int status[PAGE_WHERE_ASK];
        uint64_t ps = page_size(), a = start, found = 0;

        while (a < end && *budget) {
                size_t n = 0;

                for (; n < PAGE_WHERE_ASK && a < end && *budget; n++, a += ps, (*budget)--)
                        addrs[n] = (void *) (uintptr_t) a;
                if (query(pid, n, addrs, status) < 0)
                        return found;   /* what the calls before found */
                for (size_t i = 0; i < n; i++)
                        found += status[i] >= 0 && (unsigned) status[i] == node ? ps : 0;
        }
        return found;
}
