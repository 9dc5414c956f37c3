/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The placement of a huge VMA estimated from samples (lib/vma-sample): queried on this
 * process's own memory (every page is on this machine's first node with memory or
 * not present), and the comparison the sampled scans make. */
#include <numa.h>
#include <stdint.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>
#include "pagesize.h"
#include "vma-sample.h"
#include "test.h"

#define IDS 64

/* The node this process's touched memory is on: the one move_pages reports. */
static int node_of(void *addr) {
        int status = -1;
        void *a = addr;

        return numa_move_pages(0, 1, &a, NULL, &status, 0) == 0 ? status : -1;
}

TEST(stride_covers_the_vma) {
        const uint64_t ps = page_size();

        CHECK_INT(vma_sample_stride(0, 100 * ps), 1);
        CHECK_INT(vma_sample_stride(0, VMA_SAMPLE_PAGES * ps), 1);
        CHECK_INT(vma_sample_stride(0, 4 * VMA_SAMPLE_PAGES * ps), 4);
        CHECK_INT(vma_sample_stride(0, (4 * VMA_SAMPLE_PAGES + 3) * ps), 4);
        CHECK_INT(vma_sample_stride(5 * ps, 5 * ps), 1);
}

/* A small VMA is queried whole: the counts are exact. Half of it touched. */
TEST(small_vma_exact) {
        const size_t ps = page_size(), n = 1024;
        uint64_t pages[IDS];
        char *a = mmap(NULL, n * ps, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        int node;

        CHECK(a != MAP_FAILED);
        if (a == MAP_FAILED)
                return;
        for (size_t i = 0; i < n / 2; i++)
                a[i * ps] = 1;
        node = node_of(a);
        CHECK(node >= 0 && node < IDS);
        CHECK_INT(vma_sample_query(getpid(), (uintptr_t) a, (uintptr_t) a + n * ps, 0, pages, IDS), (int) n);
        for (int i = 0; node >= 0 && i < IDS; i++)
                CHECK_INT(pages[i], i == node ? n / 2 : 0);
        munmap(a, n * ps);
}

/* A VMA of 16 times the sample: every 16th page asked, whatever the phase, and the
 * estimate within a stride of the truth at the edge of the touched run. */
TEST(large_vma_estimated) {
        const size_t ps = page_size(), n = 16 * VMA_SAMPLE_PAGES, touched = n / 4;
        uint64_t pages[IDS], want[IDS] = {};
        char *a = mmap(NULL, n * ps, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
        int node;

        CHECK(a != MAP_FAILED);
        if (a == MAP_FAILED)
                return;
        madvise(a, n * ps, MADV_NOHUGEPAGE);
        for (size_t i = 0; i < touched; i++)
                a[i * ps] = 1;
        node = node_of(a);
        CHECK(node >= 0 && node < IDS);
        if (node < 0 || node >= IDS)
                return;
        want[node] = touched;
        for (uint64_t phase = 0; phase < 40; phase += 13) {
                CHECK_INT(vma_sample_query(getpid(), (uintptr_t) a, (uintptr_t) a + n * ps, phase, pages, IDS),
                          VMA_SAMPLE_PAGES);
                CHECK(!vma_sample_moved(want, pages, IDS, 16));
                CHECK(vma_sample_moved(want, pages, IDS, 0) == (pages[node] != touched));
        }
        /* Another quarter touched since: the estimate says so. */
        for (size_t i = touched; i < 2 * touched; i++)
                a[i * ps] = 1;
        CHECK_INT(vma_sample_query(getpid(), (uintptr_t) a, (uintptr_t) a + n * ps, 7, pages, IDS), VMA_SAMPLE_PAGES);
        CHECK(vma_sample_moved(want, pages, IDS, n / 32));
        munmap(a, n * ps);
}

TEST(gone_process) {
        uint64_t pages[IDS];

        /* pid_max is at most 2^22: no such process. */
        CHECK_INT(vma_sample_query((1 << 22) + 1, 0x10000, 0x20000, 0, pages, IDS), -ESRCH);
        CHECK_INT(vma_sample_query(getpid(), 0x20000, 0x10000, 0, pages, IDS), -EINVAL);
}

TEST(moved_compares_every_node) {
        uint64_t base[4] = { 1000, 0, 500, 0 }, est[4] = { 1000, 0, 500, 0 };

        CHECK(!vma_sample_moved(base, est, 4, 0));
        est[3] = 11;
        CHECK(vma_sample_moved(base, est, 4, 10));
        CHECK(!vma_sample_moved(base, est, 4, 11));
        est[3] = 0;
        est[0] = 980;
        CHECK(vma_sample_moved(base, est, 4, 10));
        CHECK(!vma_sample_moved(base, est, 4, 20));
}

DEFINE_TEST_MAIN()
