/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>
#include "pagesize.h"
#include "vma-sample.h"

/* Addresses passed per move_pages(2) call: the kernel takes the mmap lock per 16 of
 * them anyway (do_pages_stat), so larger calls only save the syscalls. */
#define QUERY_CHUNK 512

uint64_t vma_sample_stride(uint64_t start, uint64_t end) {
        uint64_t pages = end > start ? (end - start) / page_size() : 0;
        uint64_t stride = pages / VMA_SAMPLE_PAGES;

        return stride ? stride : 1;
}

static int query_chunk(pid_t pid, void **addrs, int *status, size_t n, uint64_t stride, uint64_t *ret_pages,
                       size_t n_ids) {
        long r = syscall(SYS_move_pages, pid, (unsigned long) n, addrs, NULL, status, 0);

        if (r < 0)
                return -errno;
        for (size_t i = 0; i < n; i++)
                /* Negative: not present (-ENOENT) or not mapped any more (-EFAULT):
                 * numa_maps does not count those either. */
                if (status[i] >= 0 && (size_t) status[i] < n_ids)
                        ret_pages[status[i]] += stride;
        return 0;
}

int vma_sample_query(pid_t pid, uint64_t start, uint64_t end, uint64_t phase, uint64_t *ret_pages, size_t n_ids) {
        const uint64_t ps = page_size(), stride = vma_sample_stride(start, end);
        void *addrs[QUERY_CHUNK];
        int status[QUERY_CHUNK];
        uint64_t a = start + (phase % stride) * ps;
        size_t n = 0;
        int queried = 0, r;

        if (pid <= 0 || end <= start || !ret_pages)
                return -EINVAL;
        memset(ret_pages, 0, n_ids * sizeof(*ret_pages));
        for (; a < end; a += stride * ps) {
                addrs[n++] = (void *) (uintptr_t) a;
                queried++;
                if (n == QUERY_CHUNK) {
                        r = query_chunk(pid, addrs, status, n, stride, ret_pages, n_ids);
                        if (r < 0)
                                return r;
                        n = 0;
                }
        }
        if (n) {
                r = query_chunk(pid, addrs, status, n, stride, ret_pages, n_ids);
                if (r < 0)
                        return r;
        }
        return queried;
}

bool vma_sample_moved(const uint64_t *base, const uint64_t *est, size_t n_ids, uint64_t tol) {
        for (size_t i = 0; i < n_ids; i++) {
                uint64_t d = base[i] > est[i] ? base[i] - est[i] : est[i] - base[i];
                if (d > tol)
                        return true;
        }
        return false;
}
