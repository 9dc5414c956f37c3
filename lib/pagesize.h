/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The kernel's base page size: 4 KiB on x86-64, 4, 16 or 64 KiB on arm64. Never a
 * bare 4096: numa_maps counts, move_pages() addresses and page counts are all in
 * this unit (huge pages carry their own size, kernelpagesize_kB). */
#pragma once
#include <stddef.h>
#include <unistd.h>

static inline size_t page_size(void) {
        static size_t ps;

        if (!ps) {
                long v = sysconf(_SC_PAGESIZE);
                ps = v > 0 ? (size_t) v : 4096;  /* sysconf cannot fail for this name */
        }
        return ps;
}
