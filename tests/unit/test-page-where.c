/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Where sampled pages are now (daemon/page-where.h): the kernel's answer on this
 * process's own memory (its touched pages on one node, an untouched one nowhere), and
 * a query that fails part way, on a fake. */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>
#include "page-where.h"
#include "pagesize.h"
#include "test.h"

/* The node this process's touched page at addr is on, by the query under test. */
static int node_of(void *addr) {
        int status = -1;

        return page_where_query(getpid(), 1, &addr, &status) == 0 ? status : -1;
}

/* A touched page on its node is dropped; one whose evidence names another node, and
 * one not present (no node), are kept, in order. */
TEST(drops_pages_on_their_node) {
        const uint64_t ps = page_size();
        char *m = mmap(NULL, 3 * ps, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        struct page_move moves[3];
        struct page_decision d = { .moves = moves, .n_moves = 3 };
        int node;

        CHECK(m != MAP_FAILED);
        m[0] = m[ps] = 1;                   /* the third page never touched */
        node = node_of(m);
        CHECK(node >= 0);
        moves[0] = (struct page_move) { .page = (uintptr_t) m, .node = (unsigned) node, .samples = 2 };
        moves[1] = (struct page_move) { .page = (uintptr_t) m + ps, .node = (unsigned) node + 1, .samples = 2 };
        moves[2] = (struct page_move) { .page = (uintptr_t) m + 2 * ps, .node = (unsigned) node, .samples = 2 };
        CHECK_INT(page_where_drop_placed(page_where_query, getpid(), &d), 1);
        CHECK_INT(d.n_moves, 2);
        CHECK(d.moves[0].page == (uintptr_t) m + ps);
        CHECK(d.moves[1].page == (uintptr_t) m + 2 * ps);
        munmap(m, 3 * ps);
}

/* The bytes of a range on a node: this process's touched pages on theirs, the
 * untouched one on none, each page asked taken off the budget, nothing once spent. */
TEST(bytes_on_a_node_within_a_budget) {
        const uint64_t ps = page_size();
        char *m = mmap(NULL, 3 * ps, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        uint64_t budget = 3, start = (uintptr_t) m;
        int node;

        CHECK(m != MAP_FAILED);
        m[0] = m[ps] = 1;
        node = node_of(m);
        CHECK(node >= 0);
        CHECK_INT(page_where_bytes_on(page_where_query, getpid(), start, start + 3 * ps, (unsigned) node, &budget),
                  2 * ps);
        CHECK_INT(budget, 0);
        CHECK_INT(page_where_bytes_on(page_where_query, getpid(), start, start + 3 * ps, (unsigned) node, &budget),
                  0);
        budget = 1;
        CHECK_INT(page_where_bytes_on(page_where_query, getpid(), start, start + 3 * ps, (unsigned) node, &budget),
                  ps);
        budget = 10;
        CHECK_INT(page_where_bytes_on(page_where_query, getpid(), start, start + 3 * ps, (unsigned) node + 1,
                                      &budget), 0);
        CHECK_INT(budget, 7);
        munmap(m, 3 * ps);
}

/* A process gone: the query fails, every page kept. */
TEST(gone_keeps_every_page) {
        struct page_move moves[1] = { { .page = 0x10000, .node = 0, .samples = 2 } };
        struct page_decision d = { .moves = moves, .n_moves = 1 };
        pid_t child = fork();

        CHECK(child >= 0);
        if (child == 0)
                _exit(0);
        CHECK(waitpid(child, NULL, 0) == child);
        CHECK(page_where_drop_placed(page_where_query, child, &d) < 0);
        CHECK_INT(d.n_moves, 1);
}

/* A fake: every page on node 0; the call for a chunk starting at fail_at fails. */
static uint64_t fail_at;
static size_t calls;
static int fake_query(pid_t pid, size_t n, void **pages, int *status) {
        calls++;
        CHECK(n <= PAGE_WHERE_CHUNK);
        if ((uintptr_t) pages[0] == fail_at)
                return -ESRCH;
        for (size_t i = 0; i < n; i++)
                status[i] = 0;
        return 0;
}

/* In chunks of PAGE_WHERE_CHUNK; a chunk that fails keeps its pages and those after
 * it, while the chunks before are dropped. */
TEST(chunks_and_a_failed_one) {
        size_t n = 2 * PAGE_WHERE_CHUNK + 10;
        struct page_move *moves = calloc(n, sizeof(*moves));
        struct page_decision d = { .moves = moves, .n_moves = n };

        CHECK(moves != NULL);
        for (size_t i = 0; i < n; i++)
                moves[i] = (struct page_move) { .page = 0x100000 + i * 4096, .node = i % 2 ? 1 : 0, .samples = 2 };
        fail_at = 0x100000 + PAGE_WHERE_CHUNK * 4096ull;
        calls = 0;
        CHECK_INT(page_where_drop_placed(fake_query, 1, &d), -ESRCH);
        CHECK_INT(calls, 2);
        CHECK_INT(d.n_moves, n - PAGE_WHERE_CHUNK / 2);
        CHECK(d.moves[0].page == 0x100000 + 4096);
        d = (struct page_decision) { .moves = moves, .n_moves = n };
        for (size_t i = 0; i < n; i++)
                moves[i] = (struct page_move) { .page = 0x100000 + i * 4096, .node = i % 2 ? 1 : 0, .samples = 2 };
        fail_at = 0;
        calls = 0;
        CHECK_INT(page_where_drop_placed(fake_query, 1, &d), (int) (n / 2));
        CHECK_INT(calls, 3);
        CHECK_INT(d.n_moves, n / 2);
        free(moves);
}

DEFINE_TEST_MAIN()
